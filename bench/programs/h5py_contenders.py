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
  h5py_contenders.py batched    FILE ROWS COLS CHUNK  /data read in CHUNK x CHUNK chunks in
                                                      row-major order, each into a buffer
                                                      written beforehand (read_direct), then
                                                      summed; under mpirun (no MPI is used)
                                                      each process takes its share of the
                                                      chunks as h5tile_batches deals them (a
                                                      contiguous run) and prints its own line

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


def launched_as():
    """This process's rank and the process count of its launch (Open MPI's or MPICH's
    variables; 0 of 1 alone)."""
    for rank, size in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE")):
        if rank in os.environ and size in os.environ:
            return int(os.environ[rank]), int(os.environ[size])
    return 0, 1


def batched(path, rows, cols, edge):
    """What a user without h5tile writes to stream a dataset in chunks: h5py slices, each read
    into one buffer. The sum is numpy's (vectorised), faster than bench_h5tile's loop, so the
    comparison favours h5py."""
    rank, size = launched_as()
    across = -(-cols // edge)
    count = -(-rows // edge) * across
    base, extra = divmod(count, size)
    first = rank * base + min(rank, extra)
    mine = range(first, first + base + (rank < extra))
    buf = np.ones(min(edge, rows) * min(edge, cols))
    total = 0.0
    t0 = time.perf_counter()
    with h5py.File(path, "r") as f:
        dset = f["data"]
        for k in mine:
            r0, c0 = (k // across) * edge, (k % across) * edge
            h, w = min(edge, rows - r0), min(edge, cols - c0)
            out = buf[:h * w].reshape(h, w)
            dset.read_direct(out, np.s_[r0:r0 + h, c0:c0 + w])
            total += float(out.sum())
    t = time.perf_counter() - t0
    print(json.dumps({"seconds": t, "sum": total, "chunks": len(mine), "peak_rss_bytes": peak_rss()}))


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "read":
        return read(path)
    rows, cols = int(sys.argv[3]), int(sys.argv[4])
    if mode == "batched":
        batched(path, rows, cols, int(sys.argv[5]))
    elif mode == "write":
        write(path, rows, cols, sys.argv[5] == "1")
    elif mode == "write_zstd":
        write_zstd(path, rows, cols)
    else:
        sys.exit(f"h5py_contenders: unknown mode {mode}")


if __name__ == "__main__":
    main()
