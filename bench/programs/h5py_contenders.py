"""h5py, the baseline of make bench, one measurement a process, as bench_h5tile's modes:
prints one JSON line (seconds, peak_rss_bytes; a read also its sum).

  h5py_contenders.py write      FILE ROWS COLS SYNC   the array bench_h5tile writes, in one
                                                      dataset; then fsync where SYNC is 1 (as
                                                      h5tile_write returns with the data on disk)
  h5py_contenders.py write_zstd FILE ROWS COLS        bench_h5tile's BENCH_DATA=heat field, with
                                                      hdf5plugin's zstd after a shuffle in
                                                      chunks of 1 MiB (whole rows), then fsync
  h5py_contenders.py read       FILE [ROWS COLS]      /data read whole, then its sum (ROWS and
                                                      COLS unused: the suite passes them to
                                                      every mode)

The data is made before the clock starts; hdf5plugin is imported by write_zstd alone, so the
other modes' peak memory is h5py's.
"""
import json
import math
import os
import resource
import sys
import time

import h5py
import numpy as np


def peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def fsync(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def write(path, rows, cols, sync):
    data = (np.arange(rows * cols, dtype=np.int64) % 1000 * 0.5).reshape(rows, cols)
    t0 = time.perf_counter()
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=data)
    if sync:
        fsync(path)
    t = time.perf_counter() - t0
    print(json.dumps({"seconds": t, "peak_rss_bytes": peak_rss()}))


def profile(n):
    """The heat field along one axis: hot over the middle third, smoothed (the field, one such
    profile times another, is the heat demo's hot square, diffused)."""
    x, w = np.arange(n, dtype=np.float64), n / 32.0
    erf = np.vectorize(math.erf)
    return 0.5 * (erf((x - n / 3.0) / w) - erf((x - 2.0 * n / 3.0) / w))


def write_zstd(path, rows, cols):
    import hdf5plugin

    data = (100.0 * profile(rows))[:, None] * profile(cols)[None, :]
    t0 = time.perf_counter()
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=data, chunks=(max(1, (1 << 20) // (cols * 8)), cols), shuffle=True,
                         **hdf5plugin.Zstd(clevel=1))
    fsync(path)
    t = time.perf_counter() - t0
    print(json.dumps({"seconds": t, "peak_rss_bytes": peak_rss()}))


def read(path):
    t0 = time.perf_counter()
    with h5py.File(path, "r") as f:
        data = f["data"][...]
    t = time.perf_counter() - t0
    print(json.dumps({"seconds": t, "sum": float(data.sum()), "peak_rss_bytes": peak_rss()}))


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "read":
        return read(path)
    rows, cols = int(sys.argv[3]), int(sys.argv[4])
    if mode == "write":
        write(path, rows, cols, sys.argv[5] == "1")
    elif mode == "write_zstd":
        write_zstd(path, rows, cols)
    else:
        sys.exit(f"h5py_contenders: unknown mode {mode}")


if __name__ == "__main__":
    main()
