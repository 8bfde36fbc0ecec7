"""Writes that complete in the background: `to_file_async`, `Checkpoint.commit_async`, `fence`,
and completion at exit.

Each write started by `h5tile_write_async_f` or `h5tile_checkpoint_commit_async` gets a thread
of ours that waits for it (`h5tile_wait`, which releases the GIL) and then settles its Future,
so the Future completes on its own, as `concurrent.futures` users expect.
A snapshot write (H5TILE_SNAPSHOT, the default) has copied the arrays into the library's
staging memory when its call returns, so nothing of them is held after it; without it, the
Future holds the arrays' memory until the write ends.
The library keeps a request in its list until it completes, even while our thread waits for it,
so a C `h5tile_fence` waits for our writes too. `fence` waits for our threads (to report their
outcomes), then calls `h5tile_fence_f` (for writes started by other code in this process, and
for the agreement over the communicator), and agrees our outcomes over the communicator itself.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Sequence

from ._comm import fortran_handle
from ._errors import InvalidArgumentError
from ._library import failure, last_errno, last_error, last_failure, lib
from ._write import WriteKeywords, prepare_write, staging_budget

if TYPE_CHECKING:
    from typing_extensions import Unpack

_lock = threading.Lock()
_started: list[_Pending] = []  # since the last fence, oldest first


class _Pending:
    def __init__(self, request: ctypes.c_void_p, keep: object, future: Future[None]) -> None:
        self.request = request
        self.keep: object = keep  # the arrays (and C arguments) stay alive until the write ends
        self.future = future
        self.outcome: tuple[int, str, int] = (0, "", 0)  # status, message, errno
        # Not a daemon: the interpreter waits for it at exit, before MPI may be finalized.
        self.thread = threading.Thread(target=self._wait, name="h5tile-wait")

    def _wait(self) -> None:
        status = lib.h5tile_wait(self.request)  # completes and frees the request
        # This thread's message and error number.
        self.outcome = (status, last_error(), last_errno()) if status else (0, "", 0)
        self.keep = None
        if status:
            self.future.set_exception(failure(*self.outcome))
        else:
            self.future.set_result(None)


def _complete_at_exit() -> None:
    with _lock:
        started = list(_started)
    for pending in started:
        pending.thread.join()


def _keep_exit_hook_last() -> None:
    # atexit runs last-registered first: registered again after every start, the hook runs
    # before anything registered earlier (mpi4py's own finalization, where it uses atexit).
    atexit.unregister(_complete_at_exit)
    atexit.register(_complete_at_exit)


def track(request: ctypes.c_void_p, keep: object) -> Future[None]:
    """The Future of a started request, settled by a thread of ours when the request ends;
    `keep` (what the write reads) is held until then. `fence` waits for it."""
    future: Future[None] = Future()
    future.set_running_or_notify_cancel()  # a started write cannot be cancelled
    pending = _Pending(request, keep, future)
    with _lock:
        _started.append(pending)
    pending.thread.start()
    _keep_exit_hook_last()
    return future


def to_file_async(
    array: Any,
    path: str | os.PathLike[str] | bytes,
    dataset_name: str,
    *,
    comm: Any = None,
    global_shape: Sequence[int] | None = None,
    offset: Sequence[int] | None = None,
    snapshot: bool = True,
    staging_bytes: int = 0,
    **write_options: Unpack[WriteKeywords],
) -> Future[None]:
    """`to_file` that returns with a `concurrent.futures.Future`, while the write runs in the
    background (with a communicator, only where MPI runs at MPI_THREAD_MULTIPLE, mpi4py's
    default; below it the write completes before this returns). Its `result()` raises what
    `to_file` would have. Arguments a rank can check alone are checked here. Writes to one
    path run in the order they were started.

    `snapshot=True` (the default): it returns once the library has copied `array` into its
    staging memory, so the array may be changed at once; the file holds it as it was at the
    call. The staging memory is bounded by `staging_bytes` (0: the environment's
    H5TILE_STAGING_BYTES, else the library's default); what does not fit is written before
    this returns. `snapshot=False`: no copy; the Future holds `array`, which must stay
    unchanged until the write ends (a change while it is written fails the write with
    `InvalidArgumentError`, the previous file kept)."""
    call = prepare_write(array, path, dataset_name, comm, global_shape, offset, write_options,
                         lib.h5tile_write_async_f, snapshot=bool(snapshot),
                         staging_bytes=staging_bytes)
    request = ctypes.c_void_p()
    status = lib.h5tile_write_async_f(*call.args(), ctypes.byref(request))
    if status:
        raise last_failure(status)
    # A snapshot no longer reads the array once the call has returned: the Future need not hold it.
    return track(request, call.strings() if snapshot else call)


def fence(comm: Any = None) -> None:
    """Waits for every write this process started with `to_file_async` or
    `Checkpoint.commit_async` since the last fence, and for those C or Fortran code in this
    process started (`h5tile_fence`).
    Collective over `comm` (None: this process alone): once it has returned on every rank,
    every file written is complete and visible to any reader. Raises the first failure among
    the writes of any rank, the same on every rank (each write's Future keeps its own)."""
    handle = fortran_handle(comm)
    with _lock:
        started = list(_started)
        del _started[:]
    for pending in started:
        pending.thread.join()
    failed = next((p.outcome for p in started if p.outcome[0]), None)
    status = lib.h5tile_fence_f(handle)
    if status:
        raise last_failure(status)
    if comm is not None:
        # Each rank's own outcomes, agreed: everyone's is that of the first rank that failed
        # itself (the others' writes failed with its message, "on rank N: ...", and its error
        # number: the library agreed on the write's failure).
        everyone = comm.allgather(failed)
        failing = [r for r, f in enumerate(everyone) if f is not None]
        rank = next((r for r in failing if not everyone[r][1].startswith("on rank ")),
                    failing[0] if failing else None)
        if rank is not None:
            status, message, errno = everyone[rank]
            if rank != comm.Get_rank() and not message.startswith("on rank "):
                message = f"on rank {rank}: {message}"
            failed = (status, message, errno)
    if failed is not None:
        raise failure(*failed)


def reserve_staging(sizes: Sequence[Any], *, staging_bytes: int = 0) -> None:
    """Faults in staging memory ahead of the first snapshot (`to_file_async`,
    `Checkpoint.commit_async`): a buffer for each tile of `sizes` bytes (an int, or an array,
    whose `nbytes` counts), kept for the snapshots that follow, so that the first costs what
    the next ones do. Call it once at start-up with the arrays you will snapshot. This process
    only; `staging_bytes` is the budget they must fit (0: H5TILE_STAGING_BYTES, else the
    library's default). `InvalidArgumentError` over the budget (nothing reserved)."""
    counts = [int(getattr(s, "nbytes", s)) for s in sizes]
    if any(n < 0 or n >= 2**64 for n in counts):
        raise InvalidArgumentError(f"reserve_staging: sizes are byte counts from 0 to 2**64 - 1, not {counts}")
    array = (ctypes.c_uint64 * max(1, len(counts)))(*counts)
    status = lib.h5tile_reserve_staging(array, len(counts), staging_budget(staging_bytes))
    if status:
        raise last_failure(status)
