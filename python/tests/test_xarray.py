"""xarray through h5tile: the backend found by its entry point (`engine="h5tile"`, from a
`pip install` of the installed package), dims, attributes and coordinates as h5netcdf shows
them, chunks from the tile grid, reads checked; and the Dataset writer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5tile

xr = pytest.importorskip("xarray", reason="the xarray extra: pip install 'h5tile[xarray]'")
da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import h5tile.xarray as hx  # noqa: E402


def test_engine_h5tile_is_found_by_its_entry_point(scratch: Path, prefix: Path):
    target = scratch / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-build-isolation", "--no-deps", "--no-index", "--target", str(target),
         str(prefix / "share" / "h5tile" / "python")], capture_output=True, text=True, timeout=120)
    assert pip.returncode == 0, pip.stderr
    path = scratch / "x.h5"
    a = np.arange(96 * 40, dtype=np.float32).reshape(96, 40)
    h5tile.to_file(da.from_array(a, chunks=(32, 20)), path, "/x")
    code = (f"import xarray as xr; ds = xr.open_dataset({str(path)!r}, engine='h5tile', chunks={{}})\n"
            "print(ds.x.data.chunks); print(float(ds.x.sum().compute()))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    chunks, total = out.stdout.split("\n")[:2]
    assert chunks == "((32, 32, 32), (20, 20))"
    assert float(total) == float(a.sum(dtype=np.float64))


def test_dims_attributes_and_coordinates_are_h5netcdfs(scratch: Path):
    h5netcdf = pytest.importorskip("h5netcdf")
    path = scratch / "h5py.h5"
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "made by h5py"
        f["lat"] = np.linspace(-90, 90, 7)
        f["lat"].make_scale("lat")
        f["lon"] = np.arange(5.0)
        f["lon"].make_scale("lon")
        f["t"] = np.arange(7 * 5, dtype=np.int32).reshape(7, 5)
        f["t"].dims[0].attach_scale(f["lat"])
        f["t"].dims[1].attach_scale(f["lon"])
        f["t"].attrs["units"] = "K"
        f["square"] = np.eye(5)
        f["line"] = np.arange(5.0)
    ours = xr.open_dataset(path, engine=hx.H5TileBackendEntrypoint)
    theirs = xr.open_dataset(path, engine="h5netcdf", phony_dims="sort")
    xr.testing.assert_identical(ours.load(), theirs.load())
    assert ours.square.dims[0] != ours.square.dims[1]
    assert "lat" in ours.coords and ours.t.dims == ("lat", "lon")


def test_chunks_follow_the_tiles_and_reads_are_checked(scratch: Path):
    path = scratch / "x.h5"
    a = np.random.default_rng(1).random((60, 48))
    with dask.config.set(scheduler="threads"):
        h5tile.to_file(da.from_array(a, chunks=(20, 16)), path, "/x")
    ds = xr.open_dataset(path, engine=hx.H5TileBackendEntrypoint, chunks={})
    assert ds.x.encoding["preferred_chunks"] == {"phony_dim_0": 20, "phony_dim_1": 16}
    assert ds.x.data.chunks == ((20, 20, 20), (16, 16, 16))
    assert float(ds.x.sum().compute()) == pytest.approx(float(a.sum()), rel=1e-12)
    np.testing.assert_array_equal(ds.x[5:17:3, ::-5].values, a[5:17:3, ::-5])
    # A changed byte in one tile: that chunk's read fails, naming the damage.
    with h5py.File(path, "r") as f:
        tile = path.parent / f["x"].virtual_sources()[0].file_name
        offset = int(f["x"].attrs["h5tile_tile_bytes"][0][0])
    data = bytearray(tile.read_bytes())
    data[offset + 11] ^= 0x40
    tile.write_bytes(bytes(data))
    with pytest.raises(h5tile.CorruptError):
        xr.open_dataset(path, engine=hx.H5TileBackendEntrypoint, chunks={}).x.sum().compute()


def test_a_dataset_written_in_one_commit_reads_back_identical(scratch: Path):
    path = scratch / "ds.h5"
    ds = xr.Dataset(
        {"temp": (("time", "lat"), da.from_array(np.arange(40.0).reshape(8, 5), chunks=(2, 5)),
                  {"units": "K"}),
         "flag": (("lat",), np.array([1, 0, 1, 1, 0], dtype=np.int8))},
        coords={"lat": np.linspace(0, 1, 5)}, attrs={"title": "run", "step": 3})
    with dask.config.set(scheduler="threads"):
        hx.to_file(ds, path)
    back = xr.open_dataset(path, engine=hx.H5TileBackendEntrypoint)
    xr.testing.assert_identical(back.load(), ds.compute())
    with h5py.File(path, "r") as f:
        assert sorted(f) == ["flag", "lat", "temp"]
        assert f["temp"].attrs["units"] == "K" and f.attrs["title"] == "run"
        assert np.array_equal(f["temp"][...], np.arange(40.0).reshape(8, 5))
    assert len(os.listdir(str(path) + ".tiles")) == 4 + 1 + 1


def test_a_scalar_variable_is_refused_and_nothing_is_written(scratch: Path):
    path = scratch / "ds.h5"
    ds = xr.Dataset({"x": (("a",), np.arange(3.0)), "s": ((), 1.5)})
    with pytest.raises(h5tile.InvalidArgumentError, match="variable 's' is a scalar"):
        hx.to_file(ds, path)
    assert not path.exists() and not Path(str(path) + ".tiles").exists()
