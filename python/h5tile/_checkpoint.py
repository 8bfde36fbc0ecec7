"""`Checkpoint`: many datasets and attributes written as one file, all at once or not at all
(`h5tile_checkpoint_*`), and a context manager that commits on a clean exit.

Failing together. The commit is collective and the C library agrees its outcome, so when one
rank's part is bad every rank raises. A rank that fails before its commit (a Python check in
`add` or `attrs`, or its `with` block raised) must not leave the others waiting in theirs: it
marks its checkpoint failed (`h5tile_checkpoint_fail`) and commits. Every rank's commit then
fails before anything is written, and the others' exception says which rank failed and why. A
local abort would instead leave them waiting for ever.

Snapshots. The C library takes H5TILE_SNAPSHOT from the options the checkpoint was begun with,
while Python chooses per commit (`commit_async(snapshot=True)`). So a checkpoint is begun
without it, every step made on it (`add`, an attribute, a refusal) is recorded, and a snapshot
commit begins the checkpoint again with the flag and replays the steps on it: they are local
and cheap (the arrays are not copied until the commit).
"""

from __future__ import annotations

import ctypes
import os
from concurrent.futures import Future
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import numpy as np

from ._attributes import Attributes, attribute_name, attribute_value
from ._collective import prepare_together
from ._comm import fortran_handle, size_and_rank
from ._dtypes import code_of
from ._engines import is_dask_array
from ._errors import H5TileError, InvalidArgumentError
from ._library import check, failure, last_errno, last_error, lib
from ._pending import track
from ._write import (
    WriteKeywords, c_write_options, encode_file_path, encode_name, place_tile, snapshot_options,
    staging_budget,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

# How the library words a checkpoint marked failed (`h5tile_checkpoint_fail`).
_FAILED = "the checkpoint failed on this rank before its commit: "

# Begins a C checkpoint into `out` with the options of the checkpoint, made to snapshot when
# given a staging budget; returns the status.
Begin = Callable[[Any, Optional[int]], int]
# One step of assembling a checkpoint, made on a C checkpoint; returns the status.
Step = Callable[[int], int]


def _refuse(ck: int, error: BaseException) -> int:
    """Makes the commit of `ck` fail on every rank, naming `error`; the status."""
    said = str(error)
    text = (type(error).__name__ + (f": {said}" if said else "")).replace("\0", "?")
    return int(lib.h5tile_checkpoint_fail(ck, text.encode("utf-8", "replace")))


def _commit_failure(status: int) -> H5TileError:
    """The exception of this thread's failed commit; a rank's failure (see `_refuse`) told as
    what it was."""
    message = last_error()
    start = message.find(_FAILED)
    if start < 0:
        return failure(status, message, last_errno())
    rank = message[:start]  # "on rank N: " on the other ranks
    what = message[start + len(_FAILED):]
    return failure(status, f"{rank}the checkpoint failed before its commit ({what}); nothing was written")


def _stand_in_commit(handle: int, error: BaseException) -> None:
    """For a rank whose checkpoint could not begin: the commit the others will make, refused."""
    stand_in = ctypes.c_void_p()
    if lib.h5tile_checkpoint_begin_f(handle, b"?", None, ctypes.byref(stand_in)) == 0:
        _refuse(stand_in.value or 0, error)
        lib.h5tile_checkpoint_commit(stand_in)


class Checkpoint:
    """Datasets (`add`) and attributes (`attrs`) of the file `path`, written all at once by
    `commit`, collective over `comm` (None: this process alone): readers and a crash see the
    old file or the new one, never some of its datasets.

        with h5tile.Checkpoint("run/ckpt.h5", comm=world) as ck:
            ck.add("/u", u_tile, global_shape=shape)
            ck.attrs["step"] = 100
            ck.attrs["/u"]["units"] = "K"

    The `with` block commits when it ends cleanly. When it raises: with comm=None or a
    communicator of one rank the checkpoint is aborted; with several ranks this rank's commit
    is made to fail on every rank (nothing is written, and the other ranks raise
    `InvalidArgumentError` naming this rank and its exception), so that no rank waits for
    ever. The exception then goes on. Write options are those of `to_file`; the layout applies
    to every dataset. Beginning is local (not collective); a rank that cannot begin fails every
    rank's commit in the same way.
    """

    path: Any
    """The file the checkpoint writes."""

    def __init__(
        self,
        path: str | os.PathLike[str] | bytes,
        comm: Any = None,
        **write_options: Unpack[WriteKeywords],
    ) -> None:
        handle = fortran_handle(comm)

        def begin(out: Any, staging: int | None) -> int:
            opts = c_write_options(write_options, "Checkpoint")
            if staging is not None:
                opts = snapshot_options(opts, staging)
            return int(lib.h5tile_checkpoint_begin_f(handle, encode_file_path(path), ctypes.byref(opts),
                                                     out))

        self._open(path, comm, handle, begin)
        self._write_options: dict[str, Any] | None = dict(write_options)

    @classmethod
    def _begun(cls, path: Any, comm: Any, handle: int, begin: Begin) -> Checkpoint:
        """A checkpoint that `begin(out, staging)` starts (`Series.save`'s
        `h5tile_series_begin_f`)."""
        ck = cls.__new__(cls)
        ck._open(path, comm, handle, begin)
        ck._write_options = None  # a series' step: no transaction (see `add`)
        return ck

    def _open(self, path: Any, comm: Any, handle: int, begin: Begin) -> None:
        self.path = path
        self._comm = comm
        self._begin = begin
        self._ck: int | None = None
        self._ended = ""  # "committed" or "aborted" once the C checkpoint is freed
        self._refused = False
        # Every step made on the C checkpoint, to make again on one begun to snapshot; they
        # hold what the commit reads (the arrays, their C-order copies) until it no longer does.
        self._steps: list[Step] = []
        self.attrs = Attributes(self._set_attribute)
        # What was added and set, kept for a commit through a transaction (a Dask array was
        # added): (name, array, offset, global shape) and (object, name, value).
        self._fields: list[tuple[str, Any, Any, Any]] = []
        self._attributes: list[tuple[str, Any, Any]] = []
        self._lazy = False
        out = ctypes.c_void_p()
        prepare_together(comm, lambda: check(begin(ctypes.byref(out), None)),
                         lambda error: _stand_in_commit(handle, error))
        self._ck = out.value

    def _step(self, ck: int, step: Step) -> int:
        """Makes `step` on the C checkpoint `ck` and records it; its status."""
        self._steps.append(step)
        return step(ck)

    def _handle(self, doing: str) -> int:
        if self._ck is None:
            raise InvalidArgumentError(
                f"cannot {doing} the checkpoint of {self.path!r}: it was {self._ended}")
        return self._ck

    def _refuse(self, error: BaseException) -> None:
        if not self._refused and self._ck is not None:
            self._refused = True
            self._step(self._ck, lambda ck: _refuse(ck, error))

    def add(self, name: str, array: Any, offset: Sequence[int] | None = None,
            global_shape: Sequence[int] | None = None) -> None:
        """Adds `array` as this rank's tile of the dataset `name`, placed as `to_file` places
        it (comm=None: the whole dataset; with a communicator, `global_shape` is needed when it
        has several ranks and `offset` defaults to this rank's block of `partition`). Adding
        one name again adds another tile of it (same dtype and global shape). The array is read
        at the commit: do not modify it before. Not collective; a failure raises here, and
        makes the commit fail on every rank."""
        ck = self._handle("add to")
        if is_dask_array(array):
            self._add_lazy(name, array, offset, global_shape)
            return
        self._fields.append((name, array, offset, global_shape))
        try:
            tile = place_tile(array, self._comm, global_shape, offset)
            dataset = encode_name(name)
        except Exception as error:
            self._refuse(error)
            raise
        b = tile.buffer

        def add(ck: int) -> int:  # holds `tile` (the array, or its C-order copy) while recorded
            return int(lib.h5tile_checkpoint_add(ck, dataset, b.code, len(b.shape),
                                                 tile.global_shape, tile.offset, tile.shape,
                                                 b.pointer))

        check(self._step(ck, add))

    def _add_lazy(self, name: str, array: Any, offset: Any, global_shape: Any) -> None:
        """A Dask array: the checkpoint is then committed through a transaction, each chunk
        written by the worker computing it (`h5tile.dask`)."""
        if self._comm is not None or self._write_options is None:
            raise InvalidArgumentError(
                "a Dask array is added to a checkpoint of this process alone (comm=None), not "
                "to a series' step or a checkpoint over a communicator: its chunks are written "
                "by Dask's workers")
        if offset is not None or global_shape is not None:
            raise InvalidArgumentError("a Dask array is a whole dataset: no offset or global_shape")
        self._lazy = True
        self._fields.append((name, array, None, None))

    def _set_attribute(self, owner: str, name: Any, value: Any) -> None:
        self._attributes.append((owner, name, value))
        ck = self._handle("set an attribute of")
        try:
            where = f"of '{owner}'"
            name = attribute_name(name, where)
            stored = attribute_value(value, f"attribute '{name}' {where}")
            key, obj = name.encode(), encode_name(owner)
        except Exception as error:
            self._refuse(error)
            raise

        def attr(ck: int) -> int:  # the library copies the value at once
            if isinstance(stored, bytes):
                return int(lib.h5tile_checkpoint_attr_string(ck, obj, key, stored))
            return int(lib.h5tile_checkpoint_attr(ck, obj, key, code_of(stored.dtype), stored.size,
                                                  stored.ctypes.data))

        check(self._step(ck, attr))

    def commit(self) -> None:
        """Writes every dataset and attribute, visible at once; collective. When it returns the
        data is on disk (unless sync=False). Raises an `H5TileError` subclass, the same on every
        rank (nothing written). A checkpoint is committed once."""
        ck = self._end("committed", "commit")
        if self._lazy:
            lib.h5tile_checkpoint_abort(ck)
            self._steps = []
            try:
                self._commit_transaction()
            finally:
                self._fields, self._attributes = [], []
            return
        status = lib.h5tile_checkpoint_commit(ck)
        self._steps = []
        if status:
            self._ended = "committed, and the commit failed"
            raise _commit_failure(status)

    def _commit_transaction(self) -> None:
        """The commit of a checkpoint holding a Dask array: one transaction, the numpy arrays
        written from this process, the Dask arrays chunk by chunk on the workers."""
        from ._transaction import begin  # noqa: PLC0415 (imports this module's neighbours)
        from .dask import commit_arrays  # noqa: PLC0415 (Dask is optional)

        declared: dict[str, tuple[Any, Any]] = {}
        for name, array, _, global_shape in self._fields:
            shape = tuple(global_shape) if global_shape is not None else tuple(array.shape)
            declared.setdefault(name, (shape, np.dtype(array.dtype)))
        tx = begin(self.path, datasets=declared, **(self._write_options or {}))
        try:
            for owner, name, value in self._attributes:
                tx.attrs[owner][name] = value
        except BaseException:
            tx.abort()
            raise
        commit_arrays(tx, [(name, array, offset) for name, array, offset, _ in self._fields])

    def commit_async(self, snapshot: bool = True, *, staging_bytes: int = 0) -> Future[None]:
        """`commit` that returns with a `concurrent.futures.Future` while the write runs in the
        background, as `to_file_async`; `h5tile.fence` waits for it too. Disagreements between
        ranks raise here.

        `snapshot=True` (the default): it returns once the library has copied the added arrays
        into its staging memory (at most `staging_bytes`; 0: the environment's
        H5TILE_STAGING_BYTES, else the library's default; what does not fit is written before
        this returns), so they may be changed at once; the file holds them as they were at
        this call. `snapshot=False`: the Future holds the arrays, which must stay unchanged
        until the write ends. A bad `staging_bytes` raises here (every rank's commit fails,
        nothing is written)."""
        if self._lazy:
            raise InvalidArgumentError(
                "a checkpoint holding a Dask array is committed by commit(): Dask computes "
                "and writes its chunks (use dask's own scheduling to run it in the background)")
        ck = self._end("committed", "commit")
        if snapshot:
            ck = self._begin_snapshot(ck, staging_bytes)
        request = ctypes.c_void_p()
        status = lib.h5tile_checkpoint_commit_async(ck, ctypes.byref(request))
        # A snapshot no longer reads the arrays once the call has returned.
        steps, self._steps = self._steps, []
        if status:
            self._ended = "committed, and the commit failed"
            raise _commit_failure(status)
        return track(request, None if snapshot else steps)

    def _begin_snapshot(self, ck: int, staging_bytes: Any) -> int:
        """The C checkpoint `ck` begun again to snapshot under `staging_bytes`, with the same
        steps made on it; `ck` is freed. Where this fails on this rank, its commit is made to
        fail on every rank (as a failed `add` does) before the error is raised."""
        again = ctypes.c_void_p()
        try:
            check(self._begin(ctypes.byref(again), staging_budget(staging_bytes)))
        except Exception as error:
            self._ended = "committed, and the commit failed"
            self._steps = []
            if size_and_rank(self._comm)[0] == 1:
                lib.h5tile_checkpoint_abort(ck)
            else:
                _refuse(ck, error)
                lib.h5tile_checkpoint_commit_async(ck, None)  # fails, on every rank
            raise
        for step in self._steps:  # a failed step fails again, and so does the commit
            step(again.value or 0)
        lib.h5tile_checkpoint_abort(ck)
        return again.value or 0

    def abort(self) -> None:
        """Drops the checkpoint without writing anything (nothing to do once committed or
        aborted). Not collective: every rank must abort, as a commit waits for all ranks."""
        if self._ck is not None:
            lib.h5tile_checkpoint_abort(self._end("aborted", "abort"))
        self._steps, self._fields, self._attributes = [], [], []

    def _end(self, ended: str, doing: str) -> int:
        ck = self._handle(doing)
        self._ck, self._ended = None, ended
        # The arrays go with the C checkpoint, but where a transaction commits them.
        if not self._lazy:
            self._fields, self._attributes = [], []
        return ck

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._ck is None:  # committed or aborted within the block
            return
        if error is None:
            self.commit()
        elif size_and_rank(self._comm)[0] == 1:
            self.abort()
        else:
            self._refuse(error)
            try:
                self.commit()
            except H5TileError:
                pass  # the refusal: the other ranks raise it, this one its own error

    def __del__(self) -> None:
        # Dropped unfinished (not through `with`): free the C side.
        ck = getattr(self, "_ck", None)
        if ck is not None:
            lib.h5tile_checkpoint_abort(ck)

    def __repr__(self) -> str:
        return f"<h5tile.Checkpoint of {self.path!r}{', ' + self._ended if self._ended else ''}>"
