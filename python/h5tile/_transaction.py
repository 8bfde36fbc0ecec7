"""Independent tile writers and one commit (`h5tile_txn_*`): the write of any runtime whose
workers share no MPI communicator (Dask, Legate, a process pool).

    tx = h5tile.begin("out.h5", "/u", global_shape=(8192, 8192), dtype="f8")   # coordinator
    rec = tx.write_tile(block, offset=(0, 4096))     # any process or thread (tx pickles)
    h5tile.commit(tx, [rec, ...])                    # the only step readers see

The coordinator's `Transaction` holds the write's lock and, once pickled, travels as its token
alone: a `Writer`, which writes tiles and nothing else. Records are plain `bytes`.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, Sequence

import numpy as np

from ._arrays import buffer_of
from ._attributes import Attributes, attribute_name, attribute_value
from ._dtypes import code_of
from ._errors import InvalidArgumentError
from ._library import check, lib
from ._shapes import as_tuple, u64_array
from ._write import c_write_options, encode_file_path, encode_name

Record = bytes


class Writer:
    """A transaction as its writers hold it: its token, from which tiles are written anywhere
    (`write_tile`). What a `Transaction` pickles to."""

    def __init__(self, token: bytes, datasets: Sequence[str]):
        self.token = bytes(token)
        self.datasets = tuple(datasets)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Writer, (self.token, self.datasets))

    def __repr__(self) -> str:
        return f"<h5tile.Writer of {', '.join(self.datasets)}>"

    def write_tile(self, array: Any, offset: Sequence[int], dataset: str | None = None) -> Record:
        """Writes `array` (numpy, buffer protocol, CuPy, DLPack) as the tile at `offset` of
        `dataset` (may be left out where the transaction declares one), to a file of its own,
        synced; returns its record for the commit. Nothing is visible until the commit."""
        if dataset is None:
            if len(self.datasets) != 1:
                raise InvalidArgumentError(
                    f"the transaction declares {len(self.datasets)} datasets "
                    f"({', '.join(self.datasets)}): name the tile's with dataset=")
            dataset = self.datasets[0]
        name = encode_name(dataset)
        b = buffer_of(array)
        offset = as_tuple(offset, "offset")
        if len(offset) != len(b.shape):
            raise InvalidArgumentError(
                f"the array has {len(b.shape)} dimensions and offset {len(offset)}: "
                "they must be the same")
        record = ctypes.c_char_p()
        length = ctypes.c_size_t()
        check(lib.h5tile_txn_write_tile(
            self.token, len(self.token), name, len(b.shape), u64_array(offset),
            u64_array(b.shape), b.pointer, ctypes.byref(record), ctypes.byref(length)))
        try:
            return _bytes_at(record, length.value)
        finally:
            lib.h5tile_txn_record_free(record)


    def commit(self, records: Iterable[Record]) -> None:
        """Commits from the token, in a process other than the coordinator's (whose
        `Transaction` must stay open meanwhile): see `h5tile.commit`. No attributes."""
        handle = ctypes.c_void_p()
        check(lib.h5tile_txn_resume(self.token, len(self.token), ctypes.byref(handle)))
        try:
            _commit(handle.value, records)
        finally:
            lib.h5tile_txn_free(handle.value)


def _bytes_at(pointer: ctypes.c_char_p, length: int) -> bytes:
    """The `length` bytes the library put at `pointer` (NULs included: its `.value` would
    stop at the first)."""
    return ctypes.string_at(ctypes.cast(pointer, ctypes.c_void_p).value, length)


def _commit(handle: int, records: Iterable[Record]) -> None:
    """`h5tile_txn_commit` of `records` on the C transaction `handle`."""
    records = list(records)
    for i, r in enumerate(records):
        if not isinstance(r, (bytes, bytearray)):
            raise InvalidArgumentError(
                f"record {i} is a {type(r).__name__}, not the bytes write_tile returned")
    n = len(records)
    pointers = (ctypes.c_char_p * n)(*[bytes(r) for r in records])
    lengths = (ctypes.c_size_t * n)(*[len(r) for r in records])
    check(lib.h5tile_txn_commit(handle, n, pointers, lengths))


class Transaction(Writer):
    """A transaction as its coordinator holds it (`h5tile.begin` makes it): writes tiles like
    any writer, stores attributes (`attrs`, as a `Checkpoint`'s), commits records (`commit`)
    or aborts (`abort`; also on leaving a `with` block uncommitted, by an exception or not,
    and when collected uncommitted). Pickled, it is a `Writer`: the lock stays here."""

    def __init__(self, handle: int, token: bytes, datasets: Sequence[str], path: Any):
        super().__init__(token, datasets)
        self._handle: int | None = handle
        self.path = path
        self.committed = False
        self.attrs = Attributes(self._set_attribute)

    def __repr__(self) -> str:
        state = "committed" if self.committed else "open" if self._handle else "closed"
        return f"<h5tile.Transaction on {self.path!r}, {state}>"

    def _live(self, what: str) -> int:
        if self._handle is None:
            raise InvalidArgumentError(f"cannot {what}: the transaction was aborted")
        return self._handle

    def _set_attribute(self, owner: str, name: Any, value: Any) -> None:
        tx = self._live("set an attribute")
        where = f"of '{owner}'"
        name = attribute_name(name, where)
        stored = attribute_value(value, f"attribute '{name}' {where}")
        key, obj = name.encode(), encode_name(owner)
        if isinstance(stored, bytes):
            check(lib.h5tile_txn_attr_string(tx, obj, key, stored))
        else:
            check(lib.h5tile_txn_attr(tx, obj, key, code_of(stored.dtype), stored.size,
                                      stored.ctypes.data))

    def commit(self, records: Iterable[Record]) -> None:
        """Commits the tiles `records` name: see `h5tile.commit`."""
        _commit(self._live("commit"), records)
        self.committed = True

    def abort(self) -> None:
        """Removes every tile written for the transaction and releases its lock; the file at
        `path` stays as it was. Writers still running afterwards leave files the next write
        of the path removes."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        try:
            if not self.committed:
                check(lib.h5tile_txn_abort(handle))
        finally:
            lib.h5tile_txn_free(handle)

    def close(self) -> None:
        """Frees the transaction: aborts it unless committed."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            lib.h5tile_txn_free(handle)

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is not None and not self.committed:
            self.abort()
        else:
            self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


def begin(
    path: Any,
    dataset_name: str | None = None,
    global_shape: Sequence[int] | None = None,
    dtype: Any = None,
    *,
    datasets: Mapping[str, tuple[Sequence[int], Any]] | None = None,
    **write_options: Any,
) -> Transaction:
    """Begins a write of `path` by independent writers (a coordinator's call): the dataset
    `dataset_name` of `global_shape` and `dtype`, or several as `datasets={name: (shape,
    dtype)}`. `write_options` are `to_file`'s (layout "auto" or "vds" only: each writer
    writes files of its own). Nothing at `path` changes until `commit`. The transaction
    pickles to a `Writer` to send to the writers."""
    declared: dict[str, tuple[Sequence[int], Any]] = dict(datasets or {})
    if dataset_name is not None:
        if global_shape is None or dtype is None:
            raise InvalidArgumentError(
                f"dataset {dataset_name!r} needs its global_shape and dtype")
        declared[dataset_name] = (global_shape, dtype)
    if not declared:
        raise InvalidArgumentError(
            "begin() declares no dataset: give dataset_name, global_shape and dtype, or datasets=")
    opts = c_write_options(write_options, "begin")
    handle = ctypes.c_void_p()
    check(lib.h5tile_txn_begin(encode_file_path(path), ctypes.byref(opts), ctypes.byref(handle)))
    tx = handle.value
    try:
        for name, (shape, kind) in declared.items():
            shape = as_tuple(shape, "global_shape")
            check(lib.h5tile_txn_declare(tx, encode_name(name), code_of(np.dtype(kind)),
                                         len(shape), u64_array(shape)))
        token = ctypes.c_char_p()
        length = ctypes.c_size_t()
        check(lib.h5tile_txn_token(tx, ctypes.byref(token), ctypes.byref(length)))
        token_bytes = _bytes_at(token, length.value)
    except BaseException:
        lib.h5tile_txn_free(tx)
        raise
    return Transaction(tx, token_bytes, list(declared), path)


def commit(tx: Transaction, records: Iterable[Record]) -> None:
    """Commits the tiles `records` name, with `tx`'s attributes, as one new version of the
    file: the only step readers see, atomic (the old file stays readable until the new one is
    renamed into place). It does not read the tiles: the writers' checksums go into the file,
    and reads verify them. Of several records of one tile (a retried task), one is kept.
    Raises, leaving the old file as it was and `tx` open: `InvalidArgumentError` for a record
    of another transaction or damaged, `ShapeError` for tiles that overlap or leave a hole
    (unless `allow_partial`), `MissingTileError` or `CorruptError` for a tile file missing or
    not as recorded. Committed already: nothing changes.

    In another process than the coordinator's, `tx` is the `Writer` a Transaction pickles to:
    the commit is made from its token (without the attributes), and the coordinator's
    Transaction, which must stay open until then, sees it."""
    if not isinstance(tx, Writer):
        raise InvalidArgumentError(
            f"commit takes the Transaction begin() returned (or, in another process, the "
            f"Writer it pickles to), not a {type(tx).__name__}")
    tx.commit(records)
