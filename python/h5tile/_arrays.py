"""Arrays in and out: what libh5tile gets is a pointer to dense, row-major (C order) elements of
one of its types, in host or CUDA device memory (the C library tells them apart itself).

In: numpy arrays and anything with the buffer protocol (copied to C order, native byte order,
when they are not already), `__cuda_array_interface__` (CuPy, Numba, PyTorch CUDA tensors:
used in place; the producer's stream is waited for), and `__dlpack__` (host tensors through
numpy, CUDA tensors through CuPy).
Out: a new numpy array, a new CuPy array (`like=` a CuPy array), or the caller's `out=`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _cuda
from ._dtypes import code_of, native
from ._errors import ArgumentTypeError, DtypeError, InvalidArgumentError

# DLPack device types (dlpack.h): host memory, CUDA memory, CUDA pinned host, CUDA managed.
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13


@dataclass
class Buffer:
    """Memory libh5tile reads from or writes to; `owner` keeps it alive while in use."""

    pointer: int
    shape: tuple[int, ...]
    dtype: np.dtype
    owner: Any
    on_device: bool

    @property
    def code(self) -> int:
        return code_of(self.dtype)


def _c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...] | None, itemsize: int) -> bool:
    if strides is None or math.prod(shape) == 0:
        return True
    expected = itemsize
    for extent, stride in reversed(list(zip(shape, strides))):
        if extent != 1 and stride != expected:  # an axis of extent 1 may have any stride
            return False
        expected *= extent
    return True


def _cupy() -> Any:
    try:
        import cupy  # lazily: most programs never need it
    except ImportError as e:
        raise ArgumentTypeError(f"device arrays need CuPy here, and it cannot be imported: {e}") from e
    return cupy


def _from_cuda_interface(obj: Any, writable: bool) -> Buffer:
    cai = obj.__cuda_array_interface__
    shape = tuple(int(n) for n in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    code_of(dtype)  # a type h5tile stores, or DtypeError
    if native(dtype) != dtype:
        raise DtypeError(f"device array of non-native byte order ({dtype}): convert it first")
    if cai.get("mask") is not None:
        raise InvalidArgumentError("masked device arrays (__cuda_array_interface__ 'mask') are not supported")
    pointer, readonly = cai["data"]
    if writable and readonly:
        raise InvalidArgumentError("out= is a read-only device array")
    strides = cai.get("strides")
    if not _c_contiguous(shape, None if strides is None else tuple(strides), dtype.itemsize):
        if writable:
            raise InvalidArgumentError("out= must be a C-contiguous array")
        # A dense copy in C order; only CuPy is at hand to make one.
        return _from_cuda_interface(_cupy().ascontiguousarray(obj), writable)
    # Version 3: work queued on `stream` may still be writing the memory (None: nothing to wait
    # for; 0 is not allowed by the interface).
    stream = cai.get("stream")
    if stream is not None:
        _cuda.synchronize(int(stream))
    return Buffer(int(pointer or 0), shape, dtype, obj, True)


def _from_numpy(a: np.ndarray, writable: bool) -> Buffer:
    code_of(a.dtype)
    if writable:
        if not a.flags.c_contiguous or not a.flags.writeable:
            raise InvalidArgumentError("out= must be a writable, C-contiguous array")
        if native(a.dtype) != a.dtype:
            raise DtypeError(f"out= has non-native byte order ({a.dtype})")
    else:
        # np.require, not np.ascontiguousarray, which makes a 0-d array one of shape (1,).
        a = np.require(a, dtype=native(a.dtype), requirements="C")
    return Buffer(a.ctypes.data, tuple(a.shape), a.dtype, a, False)


def _from_dlpack(obj: Any, writable: bool) -> Buffer:
    device_type, _ = obj.__dlpack_device__()
    if device_type in (_DL_CUDA, _DL_CUDA_MANAGED):
        return _from_cuda_interface(_cupy().from_dlpack(obj), writable)
    if device_type not in (_DL_CPU, _DL_CUDA_HOST):
        raise ArgumentTypeError(f"DLPack device type {device_type} is neither host nor CUDA memory")
    return _from_numpy(np.from_dlpack(obj), writable)


def buffer_of(obj: Any, *, writable: bool = False) -> Buffer:
    """The memory of `obj` as libh5tile takes it; `writable` for `out=` (never copied)."""
    if isinstance(obj, np.ndarray):
        return _from_numpy(obj, writable)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cuda_interface(obj, writable)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj, writable)
    try:
        view = memoryview(obj)  # the buffer protocol: its own format, not numpy's guess
    except TypeError:
        if writable:
            raise ArgumentTypeError(
                f"out= must be a numpy array, a device array or a writable buffer, not {type(obj).__name__}"
            ) from None
        try:
            made = np.asarray(obj)
        except ValueError as e:  # ragged nesting
            raise InvalidArgumentError(f"a {type(obj).__name__} that is no array: {e}") from None
        return _from_numpy(made, writable)
    if writable and view.readonly:
        raise InvalidArgumentError("out= is a read-only buffer")
    return _from_numpy(np.asarray(view), writable)


# Reads fill arrays from the page cache fastest when the array starts on a page: numpy's own
# large arrays start 16 bytes past one (malloc's header), and a 1 GiB read into such an array
# took about 20% longer here. Arrays of at least ALIGNED_FROM bytes are cut from a buffer one
# page larger, at its first page boundary.
PAGE = 4096
ALIGNED_FROM = 1 << 20


def _page_aligned_empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < ALIGNED_FROM:
        return np.empty(shape, dtype)
    raw = np.empty(nbytes + PAGE, np.uint8)
    skip = -raw.ctypes.data % PAGE
    return raw[skip:skip + nbytes].view(dtype).reshape(shape)


def new_array(shape: tuple[int, ...], dtype: np.dtype, like: Any) -> Any:
    """An empty array for a read: numpy (page-aligned when large), or CuPy when `like` is a
    CuPy array."""
    if like is None or isinstance(like, np.ndarray):
        return _page_aligned_empty(shape, np.dtype(dtype))
    if type(like).__module__.split(".")[0] == "cupy":
        return _cupy().empty(shape, dtype)
    raise ArgumentTypeError(f"like= takes a numpy or CuPy array, not {type(like).__name__}")
