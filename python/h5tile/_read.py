"""`inspect` and `from_file`: what a dataset holds, and one collective read of a box of it."""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

from . import _constants as C
from ._arrays import buffer_of, new_array
from ._collective import poisoned, prepare_together, refuse_next
from ._comm import fortran_handle
from ._dtypes import code_of, dtype_of
from ._engines import in_legate_program
from ._errors import H5TileError, InvalidArgumentError
from ._library import check, lib
from ._options import ReadOptions
from ._partition import partition
from ._shapes import region_box, u64_array
from ._write import encode_file_path, encode_name

_MAX_NDIM = 32


def inspect(path: str | os.PathLike[str] | bytes, dataset_name: str) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, numpy dtype) of a dataset, without reading its data. Not collective."""
    code, ndim = ctypes.c_int(), ctypes.c_size_t()
    shape = u64_array([0] * _MAX_NDIM)
    check(lib.h5tile_inspect(encode_file_path(path), encode_name(dataset_name), ctypes.byref(code),
                             ctypes.byref(ndim), shape))
    return tuple(shape[: ndim.value]), dtype_of(code.value)


def read_options(verify: bool, narrowing: bool, dtype_code: int = C.H5TILE_AS_STORED) -> ReadOptions:
    opts = ReadOptions()
    check(lib.h5tile_read_options_init(ctypes.byref(opts), ctypes.sizeof(opts)))
    opts.flags = (0 if verify else C.H5TILE_READ_NO_VERIFY) | (C.H5TILE_READ_NARROWING if narrowing else 0)
    opts.dtype = dtype_code
    return opts


def from_file(
    path: str | os.PathLike[str] | bytes,
    dataset_name: str,
    *,
    comm: Any = None,
    region: Any = None,
    dtype: Any = None,
    out: Any = None,
    like: Any = None,
    verify: bool = True,
    narrowing: bool = False,
    chunks: Any = None,
) -> Any:
    """Reads the dataset `dataset_name` of the file `path` (any HDF5 dataset: h5tile's, h5py's,
    Legate's) into a new numpy array, a CuPy array (`like=` a CuPy array), or `out`.
    With `chunks` ("tiles": the file's tiles; or as `dask.array` takes them), returns a lazy
    `dask.array.Array` instead (`h5tile.dask.from_file`). In a Legate program (cuPyNumeric
    imported, or `like=` a cuPyNumeric array), returns a cuPyNumeric array read by Legate
    tasks (`h5tile.legate.from_file`), unless comm, region, out or dtype is given.

    `region`: a tuple of slices (step 1) choosing a box; None reads the whole dataset with
    comm=None. With an mpi4py communicator the call is collective and each rank reads its own
    box: `region`, or by default its block of `h5tile.partition(shape, comm)`.
    `dtype`: the element type to convert to; one that can lose values (float to int, wider to
    narrower, ...) raises TypeError unless `narrowing=True`. `verify=False` skips the checksum
    check of the tiles h5tile wrote. Raises an `H5TileError` subclass, the same on every rank.
    """
    if chunks is not None:
        if comm is not None or region is not None or out is not None or like is not None:
            raise InvalidArgumentError(
                "chunks= makes a lazy Dask array of the whole dataset: comm, region, out and "
                "like do not apply (slice the Dask array instead)")
        from . import dask as _dask  # noqa: PLC0415 (Dask is optional)
        return _dask.from_file(path, dataset_name, chunks, dtype=dtype, verify=verify)
    if in_legate_program(comm, like, region, out, dtype):
        from . import legate as _legate  # noqa: PLC0415 (Legate is optional)
        return _legate.from_file(path, dataset_name, verify=verify)
    handle = fortran_handle(comm)
    bpath, bname = encode_file_path(path), encode_name(dataset_name)
    file_failed = False  # inspect failed: the file let this rank down, not its arguments

    def prepare() -> tuple[Any, Any, Any, Any, ReadOptions]:
        nonlocal file_failed
        if dtype is not None:
            code_of(dtype)  # the caller's mistake, before the file's
        try:
            shape, stored = inspect(path, dataset_name)
        except H5TileError:
            file_failed = True
            raise
        return _plan(shape, stored, comm, region, dtype, out, like, verify, narrowing)

    def join(error: BaseException) -> None:
        if file_failed:
            # The same read fails here too, and the library tells every rank why.
            lib.h5tile_read_f(handle, bpath, bname, 0, 1, u64_array([0]), u64_array([0]),
                              ctypes.create_string_buffer(1), None)
        else:
            code, ndim = poisoned(error)
            refuse_next(error)
            lib.h5tile_read_f(handle, b"?", b"?", code, ndim, None, None, None, None)

    result, buffer, offset, extent, opts = prepare_together(comm, prepare, join)
    check(lib.h5tile_read_f(handle, bpath, bname, buffer.code, len(buffer.shape), offset, extent,
                            buffer.pointer, ctypes.byref(opts)))
    return result


def _plan(shape: tuple[int, ...], stored: np.dtype, comm: Any, region: Any, dtype: Any, out: Any,
          like: Any, verify: bool, narrowing: bool) -> tuple[Any, Any, Any, Any, ReadOptions]:
    if region is None:
        offset, extent = ((0,) * len(shape), shape) if comm is None else partition(shape, comm)
    else:
        offset, extent = region_box(region, shape)
    if out is not None:
        if like is not None:
            raise InvalidArgumentError("give out= or like=, not both")
        result = out
        buffer = buffer_of(out, writable=True)
        if dtype is not None and np.dtype(dtype) != buffer.dtype:
            raise InvalidArgumentError(f"dtype={np.dtype(dtype)} but out= holds {buffer.dtype}")
        if buffer.shape != tuple(extent):
            raise InvalidArgumentError(f"out= has shape {buffer.shape}, the region read has {tuple(extent)}")
    else:
        element = stored if dtype is None else np.dtype(dtype)
        code_of(element)
        result = new_array(tuple(extent), element, like)
        buffer = buffer_of(result, writable=True)
    opts = read_options(verify, narrowing)
    return result, buffer, u64_array(offset), u64_array(extent), opts
