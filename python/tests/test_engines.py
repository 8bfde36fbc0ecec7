"""Independent writers and one commit (`h5tile.begin`/`commit`), and Dask through them: real
processes (a process pool, a `dask.distributed` cluster of worker processes), real files, h5py
reading what was written. No MPI."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5tile

da = pytest.importorskip("dask.array", reason="the dask extra: pip install 'h5tile[dask]'")
import dask  # noqa: E402

SHAPE = (48, 40)


def expected(shape=SHAPE, base=0.0):
    return base + np.arange(np.prod(shape), dtype=np.float64).reshape(shape)


def _write_rows(writer: h5tile.Writer, rows: tuple[int, int], base: float) -> bytes:
    """A worker process's task: rows [r0, r1) of `expected`."""
    r0, r1 = rows
    return writer.write_tile(expected(base=base)[r0:r1], offset=(r0, 0))


def tiles_in(path: Path) -> list[str]:
    return sorted(os.listdir(str(path) + ".tiles"))


def test_tiles_from_worker_processes_commit_once(scratch: Path):
    path = scratch / "x.h5"
    tx = h5tile.begin(path, "/u", SHAPE, np.float64)
    tx.attrs["step"] = 3
    writer = pickle.loads(pickle.dumps(tx))
    assert type(writer) is h5tile.Writer  # the lock stays with the coordinator
    rows = [(0, 16), (16, 32), (32, 48)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        records = pool.starmap(_write_rows, [(writer, r, 1.0) for r in rows])
    assert not path.exists()
    h5tile.commit(tx, records)
    with h5py.File(path, "r") as f:
        assert np.array_equal(f["u"][...], expected(base=1.0))
        assert f.attrs["step"] == 3
    assert len(tiles_in(path)) == 3
    before = path.read_bytes()
    h5tile.commit(tx, records)  # a second commit changes nothing
    assert path.read_bytes() == before
    np.testing.assert_array_equal(h5tile.from_file(path, "/u"), expected(base=1.0))


def test_a_commit_refuses_stale_records_and_holes_leaving_the_old_file(scratch: Path):
    path = scratch / "x.h5"
    h5tile.to_file(expected(base=5.0), path, "/u")
    old = path.read_bytes()
    first = h5tile.begin(path, "/u", SHAPE, "f8")
    stale = first.write_tile(expected()[:16], (0, 0))
    first.abort()
    tx = h5tile.begin(path, "/u", SHAPE, "f8")
    records = [tx.write_tile(expected()[r:r + 16], (r, 0)) for r in (0, 16, 32)]
    with pytest.raises(h5tile.InvalidArgumentError, match="record 0 is of transaction"):
        h5tile.commit(tx, [stale] + records[1:])
    with pytest.raises(h5tile.ShapeError, match="cover 1280 of the 1920 elements"):
        h5tile.commit(tx, records[:2])
    with pytest.raises(h5tile.InvalidArgumentError, match="record 1: the tile record is not"):
        h5tile.commit(tx, [records[0], records[1][:-1], records[2]])
    assert path.read_bytes() == old
    h5tile.commit(tx, records)
    np.testing.assert_array_equal(h5tile.from_file(path, "/u"), expected())


def test_an_aborted_transaction_leaves_the_file_and_no_tiles(scratch: Path):
    path = scratch / "x.h5"
    h5tile.to_file(expected(base=5.0), path, "/u")
    names = tiles_in(path)
    with pytest.raises(RuntimeError, match="a task failed"):
        with h5tile.begin(path, "/u", SHAPE, "f8") as tx:
            tx.write_tile(expected()[:16], (0, 0))
            raise RuntimeError("a task failed")
    assert tiles_in(path) == names
    np.testing.assert_array_equal(h5tile.from_file(path, "/u"), expected(base=5.0))


def test_dask_threads_write_a_chunk_a_tile_and_read_lazily(scratch: Path):
    path = scratch / "x.h5"
    x = da.from_array(expected(), chunks=(16, 20))
    with dask.config.set(scheduler="threads"):
        assert h5tile.to_file(x, path, "/u") is None
        assert len(tiles_in(path)) == x.npartitions
        with h5py.File(path, "r") as f:
            assert np.array_equal(f["u"][...], expected())
        y = h5tile.from_file(path, "/u", chunks="tiles")
        assert y.chunks == x.chunks
        assert float(y.sum().compute()) == float(expected().sum())
        z = h5tile.dask.from_file(path, "/u", chunks=(10, 40))
        np.testing.assert_array_equal(z.compute(), expected())
        later = h5tile.to_file(x + 1, path, "/u", compute=False)
        np.testing.assert_array_equal(h5tile.from_file(path, "/u"), expected())
        later.compute()
    np.testing.assert_array_equal(h5tile.from_file(path, "/u"), expected() + 1)


class ChunkFailed(Exception):
    pass


def _fail_chunk(block, block_info=None):
    if block_info[0]["chunk-location"] == (1, 1):
        raise ChunkFailed("chunk (1, 1) cannot be computed")
    return block


def test_a_chunk_that_raises_fails_the_write_and_leaves_the_file(scratch: Path):
    path = scratch / "x.h5"
    h5tile.to_file(expected(base=5.0), path, "/u")
    names = tiles_in(path)
    x = da.from_array(expected(), chunks=(16, 20)).map_blocks(_fail_chunk, dtype=np.float64)
    with dask.config.set(scheduler="threads"), pytest.raises(ChunkFailed, match=r"chunk \(1, 1\)"):
        h5tile.to_file(x, path, "/u")
    # Chunks the pool was still writing when the failure ended the write are told the
    # transaction ended and remove their files: none is left once they are through.
    deadline = time.monotonic() + 30
    while tiles_in(path) != names and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tiles_in(path) == names
    np.testing.assert_array_equal(h5tile.from_file(path, "/u"), expected(base=5.0))


def test_engines_are_imported_only_when_used():
    code = "import sys, h5tile; print([m for m in ('dask', 'xarray', 'legate') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    code = ("import sys; sys.modules['dask'] = None; import h5tile, h5tile.dask\n"
            "try:\n    h5tile.dask.from_file('x.h5', '/u')\n"
            "except ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'h5tile[dask]'" in out.stdout, out.stdout + out.stderr


# ---- dask.distributed: worker processes ---------------------------------------------------

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_distributed_workers_write_and_read_their_chunks(scratch: Path, client):
    path = scratch / "x.h5"
    x = da.from_array(expected(), chunks=(12, 40))
    h5tile.to_file(x, path, "/u")
    with h5py.File(path, "r") as f:
        assert np.array_equal(f["u"][...], expected())
    y = h5tile.dask.from_file(path, "/u")
    assert y.chunks == x.chunks
    assert float(y.sum().compute()) == float(expected().sum())
    # Written later, by the workers, committed from the token on one of them.
    later = h5tile.to_file(x * 2, path, "/u", compute=False)
    later.compute()
    np.testing.assert_array_equal(h5tile.from_file(path, "/u"), expected() * 2)
    assert len(tiles_in(path)) == x.npartitions


def _write_then_die_once(writer, r0, marker):
    """Writes rows [r0, r0+12) and, the first time, kills its worker before the record gets
    back: Dask runs the task again on a live worker."""
    record = writer.write_tile(expected()[r0:r0 + 12], (r0, 0))
    if r0 == 12 and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return record


def test_a_worker_killed_mid_write_still_ends_in_one_whole_file(scratch: Path, client):
    path = scratch / "x.h5"
    tx = h5tile.begin(path, "/u", SHAPE, "f8")
    writer = pickle.loads(pickle.dumps(tx))
    marker = str(scratch / "killed")
    futures = client.map(_write_then_die_once, [writer] * 4, [0, 12, 24, 36], [marker] * 4,
                         pure=False)
    records = client.gather(futures)
    assert os.path.exists(marker), "a worker was killed"
    # The killed attempt's tile is there too (and, where the dead worker held finished
    # results, Dask computed those again: more attempts still).
    assert len(tiles_in(path)) >= 5
    h5tile.commit(tx, records)
    assert len(tiles_in(path)) == 4, "one file per tile"
    with h5py.File(path, "r") as f:
        assert np.array_equal(f["u"][...], expected())


def test_a_checkpoint_takes_dask_arrays_beside_numpy_ones(scratch: Path):
    path = scratch / "ck.h5"
    u = da.from_array(expected(), chunks=(16, 40))
    with dask.config.set(scheduler="threads"):
        with h5tile.Checkpoint(path) as ck:
            ck.add("/u", u)
            ck.add("/p", np.arange(10.0))
            ck.attrs["step"] = 7
            ck.attrs["/u"]["units"] = "K"
    with h5py.File(path, "r") as f:
        assert np.array_equal(f["u"][...], expected()) and np.array_equal(f["p"][...], np.arange(10.0))
        assert f.attrs["step"] == 7 and f["u"].attrs["units"] == "K"
        assert len(f["u"].virtual_sources()) == 3
    with pytest.raises(h5tile.InvalidArgumentError, match="committed by commit()"):
        ck = h5tile.Checkpoint(scratch / "other.h5")
        ck.add("/u", u)
        ck.commit_async()
    series = h5tile.Series(scratch / "series")
    with pytest.raises(h5tile.InvalidArgumentError, match="not to a series' step"):
        with series.save(1) as step:
            step.add("/u", u)
    assert not [n for n in os.listdir(scratch) if n.startswith("other.h5")]
    assert not (scratch / "series").exists() or not os.listdir(scratch / "series")


def test_dask_chunks_compressed_and_checked(scratch: Path, prefix: Path):
    hdf5plugin = pytest.importorskip("hdf5plugin")  # noqa: F841 (h5py's zstd filter)
    path = scratch / "z.h5"
    x = da.from_array(expected((4096, 64)), chunks=(1024, 64))
    with dask.config.set(scheduler="threads"):
        h5tile.to_file(x, path, "/x", compression="zstd:3", shuffle=True)
    with h5py.File(path, "r") as f:
        assert np.array_equal(f["x"][...], expected((4096, 64)))
    check = subprocess.run([str(prefix / "bin" / "h5tile"), "check", str(path)], capture_output=True,
                           text=True)
    assert check.returncode == 0 and "4 tiles" in check.stdout, check.stdout + check.stderr
