"""Legate and cuPyNumeric through h5tile, run by `make test-legate` in Legate's own venv
(scripts/legate-env.sh) on the CPUs: a Legate task per partition point writes its tile, one
commit; reads by tasks; files exchanged with `legate.io.hdf5` both ways; the seed's batched
chunks. Where no CUDA driver is installed, the no-device `libcuda.so.1` the bench builds
stands in (Legate links the driver); LEGATE_CONFIG gives it 2 CPUs."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import h5py  # before cupynumeric: Legate's HDF5 and h5py's clash when Legate loads first
import numpy as np
import pytest

cn = pytest.importorskip("cupynumeric", reason="the legate extra: pip install 'h5tile[legate]'")
from legate.core import get_legate_runtime  # noqa: E402
from legate.io import hdf5 as legate_hdf5  # noqa: E402

import h5tile  # noqa: E402
import h5tile.legate as hl  # noqa: E402

ROWS, COLS = 1 << 15, 1 << 10  # 256 MiB of float64: Legate splits it over its 2 CPUs


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_a_task_per_partition_writes_its_tile_and_nothing_is_gathered(scratch: Path):
    path = scratch / "x.h5"
    a = cn.arange(ROWS * COLS, dtype=np.float64).reshape(ROWS, COLS)
    expected_sum = float(a.sum())
    before = peak_rss()
    h5tile.to_file(a, path, "/u")  # through __legate_data_interface__, never __array__
    grown = peak_rss() - before
    assert grown < a.nbytes // 4, f"the control process grew by {grown >> 20} MiB"
    tiles = os.listdir(str(path) + ".tiles")
    assert len(tiles) >= 2, tiles
    assert not [t for t in tiles if t.startswith(".records")]
    with h5py.File(path, "r") as f:
        assert f["u"].shape == (ROWS, COLS) and len(f["u"].virtual_sources()) == len(tiles)
        assert f["u"][ROWS - 1, COLS - 1] == ROWS * COLS - 1
    b = h5tile.from_file(path, "/u")
    assert isinstance(b, cn.ndarray)
    assert float(b.sum()) == expected_sum
    assert bool((b == a).all())


def test_files_cross_between_h5tile_and_legate_io_hdf5(scratch: Path):
    a = cn.arange(4096 * 96, dtype=np.float32).reshape(4096, 96) * 0.5
    ours = scratch / "ours.h5"
    hl.to_file(a, ours, "/u")
    theirs_read = cn.asarray(legate_hdf5.from_file(str(ours), "u"))
    assert bool((theirs_read == a).all())
    theirs = scratch / "theirs.h5"
    legate_hdf5.to_file(a * 2, str(theirs), "u")
    get_legate_runtime().issue_execution_fence(block=True)
    ours_read = hl.from_file(theirs, "/u")
    assert bool((ours_read == a * 2).all())


def test_batched_chunks_are_the_seeds_clipped_ones(scratch: Path):
    path = scratch / "x.h5"
    data = np.arange(5 * 7, dtype=np.int32).reshape(5, 7)
    h5tile.to_file(data, path, "/u")  # numpy: through the C library as ever
    got = [(np.asarray(c), o) for c, o in h5tile.from_file_batched(path, "/u", (2, 3))]
    assert [o for _, o in got] == [(r, c) for r in (0, 2, 4) for c in (0, 3, 6)]
    assert [c.shape for c, _ in got][:3] == [(2, 3), (2, 3), (2, 1)]
    assert got[-1][0].shape == (1, 1)
    for chunk, (r, c) in got:
        np.testing.assert_array_equal(chunk, data[r:r + 2, c:c + 3])
    with pytest.raises(ValueError):
        hl.from_file_batched(path, "/u", (-1, -2))


def test_a_failed_write_leaves_the_previous_file(scratch: Path):
    path = scratch / "x.h5"
    h5tile.to_file(np.ones((64, 8)), path, "/u")
    before = path.read_bytes()
    a = cn.zeros((64, 8), dtype=np.float64)
    with pytest.raises(h5tile.ExistsError):
        hl.to_file(a, path, "/u", overwrite=False)
    assert path.read_bytes() == before
    np.testing.assert_array_equal(np.asarray(h5tile.from_file(path, "/u")), np.ones((64, 8)))
