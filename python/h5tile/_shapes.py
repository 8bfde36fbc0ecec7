"""Shapes, offsets and regions as the C API takes them (arrays of uint64_t)."""

from __future__ import annotations

import ctypes
import operator
from typing import Any, Sequence

from ._errors import ArgumentTypeError, InvalidArgumentError

# uint64_t holds these; a negative value down to -2**63 wraps to one the library refuses.
_LOWEST, _BEYOND = -(2**63), 2**64


def u64_array(values: Sequence[int]) -> Any:
    """A C array of uint64_t. A negative value wraps, as in C, and the library refuses it
    (collectively) as too large: rank-dependent values are judged by the library. One that
    would wrap into range (from 2**64 on: ctypes keeps the low 64 bits) is refused here."""
    try:
        ints = [operator.index(v) for v in values]
    except TypeError as e:
        raise ArgumentTypeError(f"shapes and offsets take integers, not {values!r}") from e
    for v in ints:
        if not _LOWEST <= v < _BEYOND:
            raise InvalidArgumentError(
                f"{v} in {values!r}: shapes and offsets are integers from 0 to 2**64 - 1")
    return (ctypes.c_uint64 * max(len(ints), 1))(*ints)


def as_tuple(values: Any, what: str) -> tuple[int, ...]:
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError as e:
        raise ArgumentTypeError(f"{what} takes a sequence of integers, not {values!r}") from e


def region_box(region: Any, shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(offset, extent) of a region given as a tuple of slices (step 1; as in numpy, missing
    trailing axes are whole, negative indices count from the end, bounds are clipped)."""
    if isinstance(region, slice):
        region = (region,)
    if not isinstance(region, tuple):
        raise ArgumentTypeError(f"region takes a tuple of slices, not {type(region).__name__}")
    if len(region) > len(shape):
        raise InvalidArgumentError(
            f"region has {len(region)} slices but the dataset has {len(shape)} dimensions"
        )
    region = region + (slice(None),) * (len(shape) - len(region))
    offset, extent = [], []
    for axis, (s, n) in enumerate(zip(region, shape)):
        if not isinstance(s, slice):
            raise ArgumentTypeError(f"region[{axis}] is {s!r}: region takes slices (e.g. 0:10)")
        try:
            start, stop, step = s.indices(n)
        except TypeError as e:
            raise ArgumentTypeError(f"region[{axis}] is {s!r}: {e}") from None
        if step != 1:
            raise InvalidArgumentError(f"region[{axis}] has step {step}: only step 1 is supported")
        offset.append(start)
        extent.append(max(0, stop - start))
    return tuple(offset), tuple(extent)
