"""`Series`: numbered checkpoints in one folder (`ckpt.<step>.h5`), old ones removed as a
retention rule says, and the newest complete one found again for a restart
(`h5tile_series_*`)."""

from __future__ import annotations

import ctypes
import operator
import os
import warnings
from typing import TYPE_CHECKING, Any

from . import _constants as C
from ._checkpoint import Checkpoint
from ._comm import fortran_handle
from ._errors import ArgumentTypeError, InvalidArgumentError, SkippedCheckpointWarning
from ._library import check, lib
from ._options import SeriesOptions
from ._write import WriteKeywords, c_write_options, encode_path, snapshot_options

if TYPE_CHECKING:
    from typing_extensions import Unpack

_PATH_BYTES = 1 << 16  # room for the path `latest` returns


def _integer(value: Any, what: str, also: str = "") -> int:
    """`value` as an int (not a bool, nor a float): `what` takes an integer`also`."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise ArgumentTypeError(f"{what} takes an integer{also}, not {value!r}")


def _count(value: Any, what: str) -> int:
    """A retention count: None (0 to the library) or an integer of at least 1."""
    if value is None:
        return 0
    n = _integer(value, what, " or None")
    if not 1 <= n < 2**64:
        raise InvalidArgumentError(f"{what}={n}: give an integer of at least 1, or None")
    return n


class Series:
    """A folder of checkpoints, one per step (`directory/ckpt.<step, 12 digits>.h5`, created
    with its folder as needed), collective over `comm` (None: this process alone).

        series = h5tile.Series("run/ckpt", comm=world, keep_last=3)
        with series.save(step) as ck:        # a Checkpoint
            ck.add("/u", u, global_shape=shape)
        step, path = series.latest()         # for a restart

    After each commit the series records it as the latest and removes older checkpoints that
    `keep_last` (the newest N stay; None: all stay) and `keep_every` (with keep_last, every
    step that is a multiple of K stays as well) no longer keep, never the latest. Write
    options are those of `to_file`, for every checkpoint of the series; they and the retention
    counts are checked here, on each rank.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | bytes,
        comm: Any = None,
        keep_last: int | None = None,
        keep_every: int | None = None,
        **write_options: Unpack[WriteKeywords],
    ) -> None:
        self.directory = directory
        self.comm = comm
        self.keep_last = keep_last
        self.keep_every = keep_every
        self._retention = SeriesOptions()
        check(lib.h5tile_series_options_init(ctypes.byref(self._retention), ctypes.sizeof(self._retention)))
        self._retention.keep_last = _count(keep_last, "keep_last")
        self._retention.keep_every = _count(keep_every, "keep_every")
        self._options = c_write_options(write_options, "Series")

    def path_of(self, step: int) -> str:
        """The file of the checkpoint of `step` (whether or not it exists)."""
        return os.path.join(os.fsdecode(self.directory), f"ckpt.{_integer(step, 'step'):012d}.h5")

    def save(self, step: int) -> Checkpoint:
        """A `Checkpoint` of `step` (an integer ≥ 0; every rank passes the same). Its commit
        replaces an earlier checkpoint of the same step, records the step as the latest and
        applies the retention rule. Not collective; its commit is. `commit_async()` on it
        snapshots the arrays, as `Checkpoint.commit_async` does."""
        handle = fortran_handle(self.comm)

        def begin(out: Any, staging: int | None) -> int:
            n = _integer(step, "step")
            if not 0 <= n < 2**64:
                raise InvalidArgumentError(f"step {n}: steps are integers from 0 to 2**64 - 1")
            opts = self._options if staging is None else snapshot_options(self._options, staging)
            return int(lib.h5tile_series_begin_f(handle, encode_path(self.directory), n,
                                                 ctypes.byref(self._retention),
                                                 ctypes.byref(opts), out))

        try:
            path = self.path_of(step)
        except TypeError:
            path = repr(step)  # refused in `begin`, where every rank's commit learns of it
        return Checkpoint._begun(path, self.comm, handle, begin)

    def latest(self, verify: bool = False) -> tuple[int, str]:
        """(step, path) of the newest complete checkpoint, passing over any a crash left
        incomplete and, with `verify=True`, any whose tile files or checksums fail (checked in
        parallel over the ranks). Collective over `comm`; every rank gets the same answer.
        Newer checkpoints passed over for failing verification are named, with why, in an
        `h5tile.SkippedCheckpointWarning` (and on standard error, by rank 0).
        Raises `h5tile.NotFoundError` (a FileNotFoundError) when there is none."""
        step = ctypes.c_uint64()
        path = ctypes.create_string_buffer(_PATH_BYTES)
        flags = C.H5TILE_SERIES_VERIFY if verify else 0
        check(lib.h5tile_series_latest_f(fortran_handle(self.comm), encode_path(self.directory),
                                         flags, ctypes.byref(step), path, len(path)))
        said = lib.h5tile_series_skipped()
        if said:
            warnings.warn(SkippedCheckpointWarning(said.decode(errors="replace")), stacklevel=2)
        return int(step.value), os.fsdecode(path.value)

    def __repr__(self) -> str:
        return (f"<h5tile.Series in {self.directory!r}, keep_last={self.keep_last!r}, "
                f"keep_every={self.keep_every!r}>")
