"""CuPy arrays in device memory (skipped without CuPy and a GPU; the GPU check runs it):
written straight from the device, read into new CuPy arrays (`like=`) and into `out=`, a
producer's stream waited for, DLPack CUDA tensors, non-contiguous arrays, batches, snapshots
of device arrays changed as soon as `to_file_async` returns."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5tile
from conftest import DLPackOnly

cupy = pytest.importorskip("cupy")
try:
    if cupy.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no GPU", allow_module_level=True)
except cupy.cuda.runtime.CUDARuntimeError as e:  # pragma: no cover - depends on the machine
    pytest.skip(f"no usable GPU: {e}", allow_module_level=True)


def test_device_arrays_round_trip(scratch: Path) -> None:
    a = cupy.arange(6 * 8, dtype=cupy.float32).reshape(6, 8)
    h5tile.to_file(a, scratch / "a.h5", "d")
    with h5py.File(scratch / "a.h5") as f:
        assert np.array_equal(f["d"][...], a.get())
    b = h5tile.from_file(scratch / "a.h5", "d", like=a)
    assert isinstance(b, cupy.ndarray) and bool((a == b).all())
    out = cupy.zeros((2, 8), cupy.float32)
    assert h5tile.from_file(scratch / "a.h5", "d", region=(slice(4, 6),), out=out) is out
    assert bool((out == a[4:]).all())


def test_the_producers_stream_is_waited_for(scratch: Path) -> None:
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        a = cupy.ones((4096, 4096), cupy.float64) * 3  # queued on `stream`, maybe not done
        assert a.__cuda_array_interface__["stream"] == stream.ptr
        h5tile.to_file(a, scratch / "a.h5", "d")
    assert float(h5tile.from_file(scratch / "a.h5", "d").min()) == 3.0


def test_dlpack_and_non_contiguous_device_arrays(scratch: Path) -> None:
    a = cupy.arange(12, dtype=cupy.int64).reshape(3, 4)
    h5tile.to_file(DLPackOnly(a), scratch / "a.h5", "d")
    h5tile.to_file(a.T, scratch / "t.h5", "d")
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "d"), a.get())
    assert np.array_equal(h5tile.from_file(scratch / "t.h5", "d"), a.get().T)


def test_a_snapshot_of_a_device_array_may_change_at_once(scratch: Path) -> None:
    a = cupy.arange(512 * 1024, dtype=cupy.float64).reshape(512, 1024)  # 4 MiB
    expected = a.get()
    futures = [h5tile.to_file_async(a, scratch / "a.h5", "d"),
               h5tile.to_file_async(DLPackOnly(a), scratch / "b.h5", "d")]
    a.fill(-1)  # copied to host staging memory before each call returned
    assert [f.result(timeout=60) for f in futures] == [None, None]
    for name in ("a.h5", "b.h5"):
        assert np.array_equal(h5tile.from_file(scratch / name, "d"), expected)


def test_device_batches(scratch: Path) -> None:
    a = np.arange(5 * 7, dtype=np.float64).reshape(5, 7)
    h5tile.to_file(a, scratch / "a.h5", "d")
    seen = np.zeros_like(a)
    for chunk, (r, c) in h5tile.from_file_batched(scratch / "a.h5", "d", (2, 3), like=cupy.zeros(1)):
        assert isinstance(chunk, cupy.ndarray)
        seen[r:r + chunk.shape[0], c:c + chunk.shape[1]] = chunk.get()
    assert np.array_equal(seen, a)
