"""`to_file`: one collective write of this rank's tile (the whole array for comm=None)."""

from __future__ import annotations

import ctypes
import operator
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, TypedDict

from . import _constants as C
from ._arrays import Buffer, buffer_of
from ._collective import poisoned, prepare_together, refuse_next
from ._engines import is_dask_array, is_legate_array
from ._comm import fortran_handle, size_and_rank
from ._errors import ArgumentTypeError, InvalidArgumentError, IsDirectoryError
from ._library import check, lib
from ._options import CODECS, LAYOUTS, WriteOptions
from ._partition import partition
from ._shapes import as_tuple, u64_array


def encode_path(path: Any) -> bytes:
    """`path` as the C library takes it; a NUL in it is refused (C would read only the part
    before it, and write there: "go\\0od.h5" replaced the file "go")."""
    try:
        text = os.fsencode(os.fspath(path))
    except TypeError:
        raise ArgumentTypeError(
            f"a path is a str, bytes or os.PathLike, not {type(path).__name__} ({path!r})"
        ) from None
    return _whole(text, "path", path)


# The endings of a path that name a folder (pathlib drops them; a str or bytes path keeps them).
_FOLDER_ENDINGS = (b"/", b"/.", b"/..")


def encode_file_path(path: Any) -> bytes:
    """`encode_path` for a path that names a file: one ending in '/' (or "/.", "/..") names a
    folder, refused as IsDirectoryError before anything is touched (a write would otherwise
    fail only at its rename, after writing every tile)."""
    text = encode_path(path)
    tail = next((t for t in _FOLDER_ENDINGS if text.endswith(t)), None)
    if tail is not None:
        raise IsDirectoryError(
            f"'{os.fsdecode(text)}' names a folder, not a file: it ends in '{tail.decode()}'")
    return text


def encode_name(name: Any) -> bytes:
    """A dataset or group name as the C library takes it; a NUL in it is refused (C would
    read only the part before it: "/a\\0b" was stored as "/a")."""
    if not isinstance(name, (str, bytes)):  # None was written as the dataset "/None"
        raise ArgumentTypeError(
            f"dataset and group names are str, not {type(name).__name__} ({name!r})")
    return _whole(name if isinstance(name, bytes) else name.encode(), "name", name)


def _whole(text: bytes, what: str, given: Any) -> bytes:
    """`text`, which C must read whole: InvalidArgumentError (a ValueError) where it holds a
    NUL, before anything is touched, as `open()` raises."""
    if b"\0" in text:
        raise InvalidArgumentError(
            f"the {what} {given!r} holds a NUL character: C would read only the part before it"
        )
    return text


def compression_of(compression: Any) -> tuple[int, int, bool]:
    """(codec, level, shuffle) of the options for `compression`: None (uncompressed, unless
    the environment's H5TILE_COMPRESSION names a codec), "zstd", "lz4", "deflate", or one of
    them with a level after a colon ("zstd:9"; 0, or none given: the codec's default), then
    optionally "+shuffle" as `h5tile ls` shows it ("zstd:1+shuffle": as shuffle=True)."""
    if compression is None:
        return C.H5TILE_COMPRESS_NONE, 0, False
    if not isinstance(compression, str):
        raise InvalidArgumentError(
            f"compression={compression!r}: give None, or a codec name such as 'zstd' or 'zstd:5'"
        )
    codec_text, plus, after = compression.rpartition("+")
    shuffle = bool(plus)
    if not plus:
        codec_text = after
    elif after.strip().lower() != "shuffle":
        raise InvalidArgumentError(
            f"compression={compression!r}: only 'shuffle' may follow '+' (as in 'zstd:1+shuffle')"
        )
    name, colon, level = codec_text.partition(":")
    codec = CODECS.get(name.strip().lower())
    if codec is None:
        raise InvalidArgumentError(
            f"compression={compression!r}: unknown codec {name!r}; choose one of "
            f"{', '.join(map(repr, CODECS))} (h5py's 'gzip' is 'deflate'), optionally with "
            "':level'"
        )
    try:
        value = int(level) if colon else 0
    except ValueError:
        raise InvalidArgumentError(
            f"compression={compression!r}: the level after ':' must be a whole number"
        ) from None
    if not -(2**31) <= value < 2**31:
        raise InvalidArgumentError(f"compression={compression!r}: level {value} is out of range")
    return codec, value, shuffle


class WriteKeywords(TypedDict, total=False):
    """The write options, by keyword: those of `to_file`, which `to_file_async`,
    `Checkpoint` and `Series` take as `**write_options`."""

    layout: str
    overwrite: bool
    sync: bool
    keep_others: bool
    allow_partial: bool
    ranks_per_file: int
    compression: Any
    shuffle: bool


# `to_file`'s defaults, for the callers that take the write options as `**write_options`.
_WRITE_DEFAULTS: WriteKeywords = {
    "layout": "auto", "overwrite": True, "sync": True, "keep_others": False,
    "allow_partial": False, "ranks_per_file": 0, "compression": None, "shuffle": False,
}


def c_write_options(given: Mapping[str, Any], caller: str) -> WriteOptions:
    """The C options for the write keywords `given` (`to_file`'s defaults for the others); one
    it does not know is a TypeError naming `caller`, as Python words its own."""
    unknown = sorted(given.keys() - _WRITE_DEFAULTS.keys())
    if unknown:
        raise ArgumentTypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
    o: dict[str, Any] = {**_WRITE_DEFAULTS, **given}
    layout, compression = o["layout"], o["compression"]
    codec, level, shuffled = compression_of(compression)
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise InvalidArgumentError(f"layout={layout!r}: choose one of {', '.join(map(repr, LAYOUTS))}")
    ranks_per_file = o["ranks_per_file"]
    try:
        if isinstance(ranks_per_file, bool):
            raise TypeError
        ranks_per_file = operator.index(ranks_per_file)
    except TypeError:
        raise ArgumentTypeError(
            f"ranks_per_file takes an integer number of ranks, not {ranks_per_file!r}") from None
    if not 0 <= ranks_per_file < 2**64:
        raise InvalidArgumentError(
            f"ranks_per_file={ranks_per_file}: give a number of ranks from 0 (the environment's "
            "H5TILE_RANKS_PER_FILE, else a file per node) to 2**64 - 1")
    opts = WriteOptions()
    check(lib.h5tile_write_options_init(ctypes.byref(opts), ctypes.sizeof(opts)))
    opts.layout = LAYOUTS[layout]
    opts.flags = (
        (0 if o["overwrite"] else C.H5TILE_NO_OVERWRITE)
        | (C.H5TILE_KEEP_OTHERS if o["keep_others"] else 0)
        | (0 if o["sync"] else C.H5TILE_NO_SYNC)
        | (C.H5TILE_ALLOW_PARTIAL if o["allow_partial"] else 0)
        | (C.H5TILE_SHUFFLE if o["shuffle"] or shuffled else 0)
    )
    opts.ranks_per_file = ranks_per_file
    opts.compression = codec
    opts.compression_level = level
    return opts


def staging_budget(staging_bytes: Any) -> int:
    """`staging_bytes` as `h5tile_write_options.staging_bytes` takes it: an integer number of
    bytes, 0 for the environment's H5TILE_STAGING_BYTES (else the library's default)."""
    if isinstance(staging_bytes, bool):
        raise ArgumentTypeError(f"staging_bytes takes an integer number of bytes, not {staging_bytes!r}")
    try:
        n = operator.index(staging_bytes)
    except TypeError:
        raise ArgumentTypeError(
            f"staging_bytes takes an integer number of bytes, not {staging_bytes!r}"
        ) from None
    if not 0 <= n < 2**64:
        raise InvalidArgumentError(
            f"staging_bytes={n}: give a number of bytes from 0 (H5TILE_STAGING_BYTES, else the "
            "library's default) to 2**64 - 1"
        )
    return n


def snapshot_options(opts: WriteOptions, staging_bytes: int) -> WriteOptions:
    """A copy of `opts` that snapshots (H5TILE_SNAPSHOT) under the budget `staging_bytes`: an
    asynchronous write then returns once the library has copied the caller's arrays."""
    copy = WriteOptions.from_buffer_copy(opts)
    copy.flags |= C.H5TILE_SNAPSHOT
    copy.staging_bytes = staging_bytes
    return copy


@dataclass
class WriteCall:
    """The arguments of one `h5tile_write_f`/`h5tile_write_async_f` call, and what keeps their
    memory alive (the placed tile: the array's buffer, the C arrays) for as long as the call
    needs it."""

    handle: int
    path: bytes
    dataset: bytes
    tile: PlacedTile
    options: WriteOptions

    def args(self) -> tuple[Any, ...]:
        tile, b = self.tile, self.tile.buffer
        return (
            self.handle, self.path, self.dataset, b.code, len(b.shape), tile.global_shape,
            tile.offset, tile.shape, b.pointer, ctypes.byref(self.options),
        )

    def strings(self) -> tuple[bytes, bytes]:
        """What the library may still read once a snapshot's call has returned: its path and
        dataset name (the header asks that `path` stay untouched until the request ends)."""
        return self.path, self.dataset


@dataclass
class PlacedTile:
    """An array as this rank's tile of a dataset: its memory, and where the tile lies (C
    arrays of the global shape, offset and shape)."""

    buffer: Buffer
    global_shape: Any
    offset: Any
    shape: Any


def place_tile(
    array: Any, comm: Any, global_shape: Sequence[int] | None, offset: Sequence[int] | None,
) -> PlacedTile:
    """`array` placed as `to_file` places it: the whole dataset for comm=None, else at
    `offset` (default: this rank's block of `partition`) in `global_shape`."""
    buffer = buffer_of(array)
    ndim = len(buffer.shape)
    if ndim == 0:
        raise InvalidArgumentError(
            "a 0-d array (shape ()) is no tile: h5tile writes arrays of 1 to 32 dimensions; "
            "write np.atleast_1d(a) for a dataset of shape (1,), or keep the value as an "
            "attribute (Checkpoint.attrs)"
        )
    if global_shape is None:
        if comm is not None and size_and_rank(comm)[0] > 1:
            raise InvalidArgumentError(
                "global_shape is needed with a communicator of several ranks: each rank's "
                "array is its tile of it"
            )
        global_shape = buffer.shape
    global_shape = as_tuple(global_shape, "global_shape")
    if offset is None:
        offset = (0,) * len(global_shape) if comm is None else partition(global_shape, comm)[0]
    offset = as_tuple(offset, "offset")
    if not len(global_shape) == len(offset) == ndim:
        raise InvalidArgumentError(
            f"the array has {ndim} dimensions, global_shape {len(global_shape)} and offset {len(offset)}: "
            "they must be the same"
        )
    return PlacedTile(buffer, u64_array(global_shape), u64_array(offset), u64_array(buffer.shape))


def _prepare(
    handle: int, array: Any, path: Any, dataset_name: Any, comm: Any,
    global_shape: Sequence[int] | None, offset: Sequence[int] | None, options: Mapping[str, Any],
    caller: str, snapshot: bool, staging_bytes: Any,
) -> WriteCall:
    opts = c_write_options(options, caller)
    budget = staging_budget(staging_bytes)
    if snapshot:
        opts = snapshot_options(opts, budget)
    tile = place_tile(array, comm, global_shape, offset)
    return WriteCall(handle, encode_file_path(path), encode_name(dataset_name), tile, opts)


def prepare_write(
    array: Any, path: Any, dataset_name: Any, comm: Any, global_shape: Sequence[int] | None,
    offset: Sequence[int] | None, options: Mapping[str, Any], entry: Any, *,
    snapshot: bool = False, staging_bytes: Any = 0,
) -> WriteCall:
    """The checked arguments of a write through `entry` (the C function the caller will
    call), with H5TILE_SNAPSHOT where `snapshot`; a rank that cannot make them calls `entry`
    refused, so that every rank fails."""
    handle = fortran_handle(comm)
    is_async = entry is lib.h5tile_write_async_f
    caller = "to_file_async" if is_async else "to_file"

    def join(error: BaseException) -> None:
        code, ndim = poisoned(error)
        refuse_next(error)
        extra = (ctypes.byref(ctypes.c_void_p()),) if is_async else ()
        entry(handle, b"?", b"?", code, ndim, None, None, None, None, None, *extra)

    def prepare() -> WriteCall:
        return _prepare(handle, array, path, dataset_name, comm, global_shape, offset, options,
                        caller, snapshot, staging_bytes)

    return prepare_together(comm, prepare, join)


def to_file(
    array: Any,
    path: str | os.PathLike[str] | bytes,
    dataset_name: str,
    *,
    comm: Any = None,
    global_shape: Sequence[int] | None = None,
    offset: Sequence[int] | None = None,
    layout: str = "auto",
    overwrite: bool = True,
    sync: bool = True,
    keep_others: bool = False,
    allow_partial: bool = False,
    ranks_per_file: int = 0,
    compression: Any = None,
    shuffle: bool = False,
    compute: bool = True,
) -> Any:
    """Writes `array` as the dataset `dataset_name` of the file `path`.

    With `comm=None` (this process alone) the array is the whole dataset. With an mpi4py
    communicator the call is collective: `array` is this rank's tile, placed at `offset` in a
    dataset of `global_shape` (default offset: this rank's block of `h5tile.partition`); tiles
    must cover the shape without overlapping unless `allow_partial`.

    `layout`: "auto" (the default: "vds" where every rank is on one node and holds one tile,
    "subfiles" with a subfile per rank where a rank on one node holds several, and with a
    subfile per node where the ranks span nodes), "vds" (one file per tile and a master), "single" (one file),
    "subfiles" (one file per node or per `ranks_per_file` ranks). An existing file is replaced
    atomically unless `overwrite=False` (then `FileExistsError`); `keep_others` keeps the
    file's other datasets; `sync=False` skips fsync. Missing parent folders are created.
    `compression`: None (uncompressed, unless the environment variable H5TILE_COMPRESSION
    names a codec), "zstd", "lz4" or "deflate", optionally with a level ("zstd:9"); tiles
    are stored in chunks of about 1 MiB, compressed on this rank's threads, under HDF5's
    registered filters (h5py reads them after `import hdf5plugin`; "deflate" needs nothing).
    `shuffle=True` shuffles each chunk's bytes by element first (often a better ratio for
    numbers); "zstd:1+shuffle", as `h5tile ls` shows it, says both in one string. The "vds"
    and "subfiles" layouts compress; "single" refuses a codec.
    When it returns, the data is on disk. Raises an `H5TileError` subclass, the same on every
    rank.

    A `dask.array.Array` is written where its chunks live, each chunk a tile, with one atomic
    commit in this process (`h5tile.dask.to_file`; no comm, global_shape or offset);
    `compute=False` then returns a `dask.delayed` that writes when computed. A cuPyNumeric
    or Legate array is written by Legate tasks, a tile per partition point, with one atomic
    commit (`h5tile.legate.to_file`).
    """
    options = dict(layout=layout, overwrite=overwrite, sync=sync, keep_others=keep_others,
                   allow_partial=allow_partial, ranks_per_file=ranks_per_file,
                   compression=compression, shuffle=shuffle)
    if is_dask_array(array):
        if comm is not None or global_shape is not None or offset is not None:
            raise InvalidArgumentError(
                "a Dask array is written whole, each chunk by the worker computing it: "
                "comm, global_shape and offset do not apply")
        from . import dask as _dask  # noqa: PLC0415 (Dask is optional)
        return _dask.to_file(array, path, dataset_name, compute=compute, **options)
    if is_legate_array(array):
        if comm is not None or global_shape is not None or offset is not None:
            raise InvalidArgumentError(
                "a Legate array is written whole, each partition by the task holding it: "
                "comm, global_shape and offset do not apply")
        from . import legate as _legate  # noqa: PLC0415 (Legate is optional)
        return _legate.to_file(array, path, dataset_name, **options)
    if not compute:
        raise InvalidArgumentError(
            "compute=False is for Dask arrays; to write in the background use to_file_async")
    call = prepare_write(array, path, dataset_name, comm, global_shape, offset, options,
                         lib.h5tile_write_f)
    check(lib.h5tile_write_f(*call.args()))
