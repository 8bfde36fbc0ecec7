"""Failing together. libh5tile agrees every collective call's outcome over its communicator,
so when one rank cannot even make the call as asked (its array has an unsupported type, its
arguments are malformed, the file cannot be inspected from it), the others would wait in the
call for ever. That rank makes the call anyway, with arguments the C library refuses, so the
refusal is agreed and every rank raises."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from ._errors import DtypeError, H5TileError
from ._library import lib

T = TypeVar("T")

# The status codes a binding's own errors are refused with.
_INVALID_ARGUMENT, _DTYPE = 1, 5

# A type code no version of the C API uses: refused as H5TILE_ERR_DTYPE.
NO_SUCH_DTYPE = 1000


def poisoned(error: BaseException) -> tuple[int, int]:
    """(dtype code, ndim) the C library refuses with the status closest to `error`:
    H5TILE_ERR_DTYPE for a type error, else H5TILE_ERR_INVALID_ARGUMENT (ndim 0)."""
    if isinstance(error, DtypeError):
        return NO_SUCH_DTYPE, 1
    return 0, 0


def refuse_next(error: BaseException) -> None:
    """Makes this thread's next libh5tile call fail with `error`'s status and message
    (`h5tile_refuse_next`), so that the other ranks of the collective call it joins learn this
    rank's real reason, not that of the placeholder arguments it passes."""
    if isinstance(error, H5TileError):
        status = error.status
    else:
        status = _DTYPE if isinstance(error, TypeError) else _INVALID_ARGUMENT
    why = str(error) or type(error).__name__
    lib.h5tile_refuse_next(status, why.replace("\0", "?").encode("utf-8", "replace"))


def prepare_together(comm: Any, prepare: Callable[[], T], join: Callable[[BaseException], Any]) -> T:
    """`prepare()`; if it raises and `comm` is a communicator, `join(error)` makes the
    collective call that the other ranks are making, so that they fail too, then re-raises."""
    try:
        return prepare()
    except Exception as error:
        if comm is not None:
            join(error)
        raise
