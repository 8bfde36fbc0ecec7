"""The python section's contenders of make bench (h5tile's Python package, legate.io.hdf5),
one measurement a process, as bench_h5tile's modes: prints one JSON line with the same keys
(seconds, seconds_with_sum, sum, peak_rss_bytes, tile_bytes), from rank 0.

  python_contenders.py h5tile_write FILE ROWS COLS   h5tile.to_file: each rank its row slab
  python_contenders.py h5tile_read  FILE ROWS COLS   h5tile.from_file: each rank its row slab
  python_contenders.py legate_write FILE ROWS COLS   legate.io.hdf5.to_file of the whole array
  python_contenders.py legate_read  FILE ROWS COLS   legate.io.hdf5.from_file, then its sum
  python_contenders.py legate_batched FILE ROWS COLS CHUNK
                                                     legate.io.hdf5.from_file_batched in CHUNK x
                                                     CHUNK chunks, each summed
  python_contenders.py legate_probe                  exits 0 if legate.io.hdf5 can be used,
                                                     else prints why not

The h5tile modes run under mpirun with mpi4py (COMM_WORLD), the same row slabs, the same data
((g % 1000) * 0.5, g the global linear index) and the same barriers around the clock as
bench_h5tile's "write" and "read", so the two measure the same bytes through two languages.
The data is made before the clock starts; reads allocate their array inside the call, as
bench_h5tile's read writes into memory not touched before.
"""
import json
import resource
import sys
import time

import numpy as np


def row_slab(rows, parts, k):
    """Rows [start, start + count) of `rows` split over `parts`, as bench_h5tile's split()."""
    base, extra = divmod(rows, parts)
    return k * base + min(k, extra), base + (1 if k < extra else 0)


def filled(first, shape):
    n = int(np.prod(shape))
    return ((np.arange(first, first + n, dtype=np.int64) % 1000) * 0.5).reshape(shape)


def peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def h5tile_mode(mode, path, rows, cols):
    from mpi4py import MPI

    import h5tile

    comm = MPI.COMM_WORLD
    start, count = row_slab(rows, comm.size, comm.rank)
    total, read_seconds = 0.0, None
    comm.Barrier()
    if mode == "h5tile_write":
        data = filled(start * cols, (count, cols))
        comm.Barrier()  # filling is not writing
        t0 = time.perf_counter()
        h5tile.to_file(data, path, "/data", comm=comm, global_shape=(rows, cols), offset=(start, 0))
    else:
        t0 = time.perf_counter()
        data = h5tile.from_file(path, "/data", comm=comm, region=(slice(start, start + count), slice(None)))
        comm.Barrier()
        read_seconds = time.perf_counter() - t0
        total = float(data.sum())
    comm.Barrier()
    with_sum = time.perf_counter() - t0
    peak = comm.reduce(peak_rss(), op=MPI.MAX)
    tile = comm.reduce(count * cols * 8, op=MPI.MAX)
    total = comm.reduce(total, op=MPI.SUM)
    if comm.rank == 0:
        seconds = with_sum if read_seconds is None else read_seconds
        print(json.dumps({"mode": mode, "ranks": comm.size, "seconds": seconds, "seconds_with_sum": with_sum,
                          "sum": total, "peak_rss_bytes": peak, "tile_bytes": tile}))


def legate_mode(mode, path, rows, cols):
    """legate.io.hdf5 on CPU, one process, as its users call it (the array made from numpy)."""
    from legate.core import LogicalArray, Type, get_legate_runtime
    from legate.io.hdf5 import from_file, from_file_batched, to_file

    runtime = get_legate_runtime()
    total = 0.0
    if mode == "legate_batched":
        # A dataset larger than memory, as Legate streams it: one array a chunk, summed.
        edge = int(sys.argv[5])
        t0 = time.perf_counter()
        for array, _ in from_file_batched(path, "/data", (edge, edge)):
            total += float(np.asarray(array.get_physical_array()).sum())
        seconds = with_sum = time.perf_counter() - t0
    elif mode == "legate_write":
        data = filled(0, (rows, cols))
        store = runtime.create_store_from_buffer(dtype=Type.from_numpy_dtype(data.dtype), shape=data.shape,
                                                 data=data, read_only=False)
        array = LogicalArray.from_store(store)
        runtime.issue_execution_fence(block=True)
        t0 = time.perf_counter()
        to_file(path=path, array=array, dataset_name="/data")
        runtime.issue_execution_fence(block=True)
        seconds = with_sum = time.perf_counter() - t0
    else:
        t0 = time.perf_counter()
        array = from_file(path, dataset_name="/data")
        runtime.issue_execution_fence(block=True)
        seconds = time.perf_counter() - t0
        total = float(np.asarray(array.get_physical_array()).sum())
        with_sum = time.perf_counter() - t0
    print(json.dumps({"mode": mode, "ranks": 1, "seconds": seconds, "seconds_with_sum": with_sum, "sum": total,
                      "peak_rss_bytes": peak_rss(), "tile_bytes": rows * cols * 8}))


def legate_probe():
    try:
        import legate.io.hdf5  # noqa: F401
    except Exception as e:  # an ImportError, or a missing CUDA driver raised as another kind
        print(f"{type(e).__name__}: {e}")
        sys.exit(1)


def main():
    mode = sys.argv[1]
    if mode == "legate_probe":
        return legate_probe()
    path, rows, cols = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if mode.startswith("h5tile_"):
        h5tile_mode(mode, path, rows, cols)
    elif mode.startswith("legate_"):
        legate_mode(mode, path, rows, cols)
    else:
        sys.exit(f"python_contenders: unknown mode {mode}")


if __name__ == "__main__":
    main()
