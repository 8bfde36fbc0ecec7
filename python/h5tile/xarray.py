"""xarray through h5tile (`pip install 'h5tile[xarray]'`).

    ds = xr.open_dataset("out.h5", engine="h5tile", chunks={})   # lazy; chunks = tiles
    h5tile.xarray.to_file(ds, "out.h5")                          # each variable a dataset

Reading (the backend registered under the entry point `xarray.backends` as "h5tile"): the
file's structure and attributes come from h5py, as h5netcdf shows them (dimension scales give
dimension names and coordinates; datasets without them get `phony_dim_<n>`, one per distinct
length, as h5netcdf's `phony_dims="sort"`); each variable's elements are read by h5tile, its
tiles checked, and `encoding["preferred_chunks"]` is the file's tile grid, so `chunks={}` gives
Dask chunks no tile straddles.

Writing: `to_file(ds, path)` writes every data variable and coordinate of a Dataset as a
dataset of one file, in one commit: Dask-backed variables chunk by chunk on the workers
holding them, the others from this process; attributes are kept, and each variable's
dimension names are stored as its attribute `_ARRAY_DIMENSIONS` (the convention xarray's Zarr
backend uses), which this backend reads back.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

import numpy as np

from ._engines import absolute, is_dask_array, require, tile_chunks
from ._errors import InvalidArgumentError
from ._read import from_file as _read_region
from ._transaction import begin

xr = require("xarray", "xarray")
from xarray.backends import BackendArray, BackendEntrypoint  # noqa: E402
from xarray.core import indexing  # noqa: E402

DIMENSIONS_ATTRIBUTE = "_ARRAY_DIMENSIONS"
# HDF5's and netCDF's bookkeeping attributes, which h5netcdf does not show either.
_HIDDEN = {"DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME", "_Netcdf4Dimid",
           "_Netcdf4Coordinates", "_nc3_strict", "_NCProperties", DIMENSIONS_ATTRIBUTE}
_H5TILE_TYPES = set(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128))


class H5TileArray(BackendArray):
    """A dataset read lazily by h5tile: each access reads the box it needs, checked."""

    def __init__(self, path: str, name: str, shape: tuple[int, ...], dtype: np.dtype,
                 verify: bool):
        self.path, self.name, self.verify = path, name, verify
        self.shape, self.dtype = shape, dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._read)

    def _read(self, key: tuple[Any, ...]) -> np.ndarray:
        region, after = [], []
        for k, n in zip(key, self.shape):
            if isinstance(k, (int, np.integer)):
                i = int(k) + (n if k < 0 else 0)
                region.append(slice(i, i + 1))
                after.append(0)
            else:
                start, stop, step = k.indices(n)
                if step < 0:  # read the box ascending, then reverse
                    lo = stop + 1 if stop >= -1 else 0
                    region.append(slice(lo, start + 1))
                    after.append(slice(None, None, step))
                else:
                    region.append(slice(start, max(start, stop)))
                    after.append(slice(None, None, step))
        if any(s.stop <= s.start for s in region):
            shape = tuple(len(range(*s.indices(n)))
                          for s, n in zip(key, self.shape) if isinstance(s, slice))
            return np.empty(shape, self.dtype)
        box = _read_region(self.path, self.name, region=tuple(region), verify=self.verify)
        return box[tuple(after)]


def _dimension_names(datasets: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each dataset's dimension names: `_ARRAY_DIMENSIONS`, else attached dimension scales'
    names, else as h5netcdf's `phony_dims="sort"` names them: datasets in name order, each
    axis taking the first dimension of its length (the scales', then phony ones) it has not
    taken yet, a new `phony_dim_<n>` (n counting every dimension so far) where none is left."""
    named: dict[str, tuple[str, ...]] = {}
    by_length: dict[int, list[str]] = {}
    count = 0
    for key in sorted(datasets):
        d = datasets[key]
        if d.attrs.get("CLASS") == b"DIMENSION_SCALE" and d.ndim == 1:
            by_length.setdefault(d.shape[0], []).append(key)
            count += 1
    for key in sorted(datasets):
        d = datasets[key]
        if DIMENSIONS_ATTRIBUTE in d.attrs:
            stored = d.attrs[DIMENSIONS_ATTRIBUTE]
            stored = stored.decode() if isinstance(stored, bytes) else stored
            named[key] = tuple(json.loads(stored) if isinstance(stored, str) else
                               (str(v) for v in np.atleast_1d(stored)))
            continue
        if d.attrs.get("CLASS") == b"DIMENSION_SCALE" and d.ndim == 1:
            named[key] = (key,)
            continue
        dims: list[str] = []
        taken: dict[int, int] = {}
        for axis, n in enumerate(d.shape):
            scales = list(d.dims[axis].values())
            if scales:
                dims.append(scales[0].name.rsplit("/", 1)[-1])
                continue
            k = taken.get(n, 0)
            taken[n] = k + 1
            names = by_length.setdefault(n, [])
            if k == len(names):
                names.append(f"phony_dim_{count}")
                count += 1
            dims.append(names[k])
        named[key] = tuple(dims)
    return named


def _attrs(attrs: Any) -> dict[str, Any]:
    out = {}
    for k, v in attrs.items():
        if k in _HIDDEN or k.startswith("h5tile_"):
            continue
        out[k] = v.decode() if isinstance(v, bytes) else v
    return out


def _preferred(path: str, name: str, dims: tuple[str, ...], shape: tuple[int, ...]) -> dict:
    """The tile grid as xarray's preferred chunks: one size per dimension where the tiles are
    regular (the last may be smaller), else each tile's extent."""
    grid = tile_chunks(path, name, shape)
    out: dict[str, Any] = {}
    for dim, sizes in zip(dims, grid):
        regular = all(s == sizes[0] for s in sizes[:-1]) and sizes[-1] <= sizes[0]
        out[dim] = sizes[0] if regular else tuple(sizes)
    return out


def open_dataset(path: Any, *, drop_variables: Iterable[str] | None = None,
                 verify: bool = True) -> Any:
    """The file at `path` as an `xarray.Dataset` of lazy variables (the root group's
    datasets), read through h5tile; what `xr.open_dataset(path, engine="h5tile")` calls."""
    h5py = require("h5py", "xarray")
    path = absolute(path)
    drop = set(drop_variables or ())
    with h5py.File(path, "r") as f:
        datasets = {k: v for k, v in f.items() if isinstance(v, h5py.Dataset) and k not in drop}
        dims = _dimension_names(datasets)
        variables, coords = {}, set()
        for key, d in datasets.items():
            shape, dtype = tuple(d.shape), d.dtype
            if dtype in _H5TILE_TYPES and len(shape) > 0:
                data = indexing.LazilyIndexedArray(
                    H5TileArray(path, "/" + key, shape, dtype, verify))
                encoding = {"preferred_chunks": _preferred(path, "/" + key, dims[key], shape),
                            "source": path}
            else:  # text, compound, scalars: small, read by h5py
                data, encoding = d[()], {"source": path}
            var = xr.Variable(dims[key], data, _attrs(d.attrs), encoding)
            variables[key] = var
            if len(dims[key]) == 1 and dims[key][0] == key:
                coords.add(key)
        ds = xr.Dataset(variables, attrs=_attrs(f.attrs))
    return ds.set_coords(sorted(coords & set(ds.variables)))


class H5TileBackendEntrypoint(BackendEntrypoint):
    """`xr.open_dataset(path, engine="h5tile")`: see the module's documentation."""

    description = "HDF5 through h5tile: reads checked, chunks from the file's tiles"
    url = "https://github.com/h5tile/h5tile/blob/main/docs/python.md"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "verify")

    def open_dataset(self, filename_or_obj: Any, *, drop_variables: Any = None,
                     verify: bool = True) -> Any:
        return open_dataset(filename_or_obj, drop_variables=drop_variables, verify=verify)

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        try:
            _, ext = os.path.splitext(os.fspath(filename_or_obj))
        except TypeError:
            return False
        return ext in {".h5", ".hdf5", ".he5"}


def to_file(ds: Any, path: Any, **write_options: Any) -> None:
    """Writes the Dataset `ds` (or a DataArray, as a Dataset of one variable) to `path` in
    one commit: every data variable and coordinate a dataset of the root group, with its
    attributes and its dimension names (`_ARRAY_DIMENSIONS`), and the Dataset's attributes on
    the file. Dask-backed variables are written chunk by chunk where their chunks are
    computed; the others from this process. `write_options` are `h5tile.to_file`'s."""
    if isinstance(ds, xr.DataArray):
        ds = ds.to_dataset(name=ds.name or "data")
    names = list(ds.variables)
    for n in names:
        if ds.variables[n].ndim == 0:
            raise InvalidArgumentError(
                f"variable {n!r} is a scalar: h5tile writes arrays of 1 to 32 dimensions; "
                "keep it as an attribute, or give it a dimension of length 1")
    declared = {"/" + n: (ds[n].shape, ds[n].dtype) for n in names}
    tx = begin(absolute(path), datasets=declared, **write_options)
    try:
        for k, v in ds.attrs.items():
            tx.attrs[k] = v
        for n in names:
            var = ds.variables[n]
            tx.attrs["/" + n][DIMENSIONS_ATTRIBUTE] = json.dumps(list(map(str, var.dims)))
            for k, v in var.attrs.items():
                tx.attrs["/" + n][k] = v
    except BaseException:
        tx.abort()
        raise
    from .dask import commit_arrays  # noqa: PLC0415 (Dask itself only for Dask variables)

    commit_arrays(tx, [("/" + n, _data(ds.variables[n]), None) for n in names])


def _data(var: Any) -> Any:
    """A variable's elements as `write_tile` takes them: its Dask array, or numpy."""
    return var.data if is_dask_array(var.data) else np.asarray(var.values)
