"""`load`: a checkpoint's fields and attributes read back in one collective call
(`h5tile_restart_*`), all from one version of the file: a restart as short as the save."""

from __future__ import annotations

import ctypes
import os
from typing import Any, Mapping

import numpy as np

from ._arrays import buffer_of
from ._collective import refuse_next
from ._comm import fortran_handle
from ._dtypes import code_of
from ._errors import InvalidArgumentError
from ._library import check, lib
from ._read import inspect, read_options
from ._shapes import region_box, u64_array
from ._write import encode_file_path, encode_name


def load(
    path: str | os.PathLike[str] | bytes,
    fields: Mapping[str, Any],
    *,
    attrs: Mapping[str, Any] | None = None,
    comm: Any = None,
    verify: bool = True,
    narrowing: bool = False,
) -> dict[str, Any]:
    """Reads a checkpoint back in one collective call over `comm` (None: this process alone):
    each of `fields`, `{dataset_name: out}` or `{dataset_name: (out, region)}`, into `out` (a
    writable C-contiguous array of this rank's box: `region`, a tuple of slices, or by default
    the whole dataset), and each of `attrs`, `{"step": np.int64, "/u@scale": np.float64}` (an
    attribute of the file, or `object@name`, read as one value of that type), all from one
    version of the file. Returns the attributes' values by their keys. A failure on any rank
    (a dataset, attribute or file missing, a shape or type that does not fit, a checksum)
    raises the same `H5TileError` on every rank, naming the field or attribute."""
    # The handle is made by the C library's begin, not collective; the read agrees.
    rs = ctypes.c_void_p()
    check(lib.h5tile_restart_begin_f(fortran_handle(comm), encode_file_path(path),
                                     ctypes.byref(read_options(verify, narrowing)), ctypes.byref(rs)))
    keep = []  # the buffers, alive until the read
    values: dict[str, np.ndarray] = {}
    for name, target in fields.items():
        try:
            out, region = target if isinstance(target, tuple) else (target, None)
            buffer = buffer_of(out, writable=True)
            shape = inspect(path, name)[0]
            offset, extent = ((0,) * len(shape), shape) if region is None else region_box(region, shape)
            if buffer.shape != tuple(extent):
                raise InvalidArgumentError(f"'{name}': out has shape {buffer.shape}, the region read has "
                                           f"{tuple(extent)}")
        except Exception as error:  # noqa: BLE001 (every rank's read must learn of it)
            refuse_next(error)
            lib.h5tile_restart_field(rs, encode_name(name), 0, 0, None, None, None)
            _read_anyway(rs)
            raise
        keep.append(buffer)
        lib.h5tile_restart_field(rs, encode_name(name), buffer.code, len(buffer.shape),
                                 u64_array(offset), u64_array(extent), buffer.pointer)
    for key, dtype in (attrs or {}).items():
        obj, _, attr = key.rpartition("@")
        values[key] = np.zeros(1, dtype=np.dtype(dtype))
        lib.h5tile_restart_attr(rs, encode_name(obj or "/"), attr.encode("utf-8"),
                                code_of(values[key].dtype), 1, values[key].ctypes.data)
    check(lib.h5tile_restart_read(rs))
    return {key: v[0] for key, v in values.items()}


def _read_anyway(rs: ctypes.c_void_p) -> None:
    """Joins the collective read that this rank's refusal fails on every rank."""
    lib.h5tile_restart_read(rs)
