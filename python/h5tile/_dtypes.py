"""numpy element types and the C API's type codes: the 14 types h5tile stores; any other
is a `DtypeError` (a TypeError)."""

from __future__ import annotations

import numpy as np

from . import _constants as C
from ._errors import DtypeError

_CODES = {
    np.dtype(np.bool_): C.H5TILE_BOOL,
    np.dtype(np.int8): C.H5TILE_INT8,
    np.dtype(np.int16): C.H5TILE_INT16,
    np.dtype(np.int32): C.H5TILE_INT32,
    np.dtype(np.int64): C.H5TILE_INT64,
    np.dtype(np.uint8): C.H5TILE_UINT8,
    np.dtype(np.uint16): C.H5TILE_UINT16,
    np.dtype(np.uint32): C.H5TILE_UINT32,
    np.dtype(np.uint64): C.H5TILE_UINT64,
    np.dtype(np.float16): C.H5TILE_FLOAT16,
    np.dtype(np.float32): C.H5TILE_FLOAT32,
    np.dtype(np.float64): C.H5TILE_FLOAT64,
    np.dtype(np.complex64): C.H5TILE_COMPLEX64,
    np.dtype(np.complex128): C.H5TILE_COMPLEX128,
}
_DTYPES = {code: dtype for dtype, code in _CODES.items()}

SUPPORTED = tuple(_CODES)


def native(dtype: np.dtype) -> np.dtype:
    """`dtype` in this machine's byte order (h5tile's buffers are native)."""
    return dtype.newbyteorder("=") if dtype.byteorder not in ("=", "|") else dtype


def code_of(dtype: object) -> int:
    """The C type code of a numpy dtype (or anything np.dtype accepts)."""
    try:
        d = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError as e:
        raise DtypeError(f"{dtype!r} is not an element type: {e}") from e
    code = _CODES.get(native(d))
    if code is None:
        raise DtypeError(
            f"element type {d} is not one h5tile stores: use bool, int8-64, uint8-64, "
            "float16/32/64 or complex64/128"
        )
    return code


def dtype_of(code: int) -> np.dtype:
    """The numpy dtype of a C type code."""
    return _DTYPES[code]
