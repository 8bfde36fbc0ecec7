"""Failing together. libh5tile agrees every collective call's outcome over its communicator,
so when one rank cannot even make the call as asked (its array has an unsupported type, its
arguments are malformed, the file cannot be inspected from it), the others would wait in the
call for ever. That rank makes the call anyway, with arguments the C library refuses, so the
refusal is agreed and every rank raises."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from ._errors import DtypeError

T = TypeVar("T")

# A type code no version of the C API uses: refused as H5TILE_ERR_DTYPE.
NO_SUCH_DTYPE = 1000


def poisoned(error: BaseException) -> tuple[int, int]:
    """(dtype code, ndim) the C library refuses with the status closest to `error`:
    H5TILE_ERR_DTYPE for a type error, else H5TILE_ERR_INVALID_ARGUMENT (ndim 0)."""
    if isinstance(error, DtypeError):
        return NO_SUCH_DTYPE, 1
    return 0, 0


def prepare_together(comm: Any, prepare: Callable[[], T], join: Callable[[BaseException], Any]) -> T:
    """`prepare()`; if it raises and `comm` is a communicator, `join(error)` makes the
    collective call that the other ranks are making, so that they fail too, then re-raises."""
    try:
        return prepare()
    except Exception as error:
        if comm is not None:
            join(error)
        raise
