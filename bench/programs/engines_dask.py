"""make bench's dask section, one round: a float64 array of BYTES in CHUNK_MIB chunks written
by a dask.distributed cluster of WORKERS worker processes (one thread each) through h5tile
(each chunk a tile, one commit): computed as it is written, never held whole anywhere (the
workers' peak memory is measured then); then held in the workers' memory first, as
engines_mpi.py's ranks hold theirs, without fsync and with it, and through `da.to_zarr` of the held array (where Zarr is installed: no fsync), then read back
and summed through `xr.open_dataset(engine="h5tile", chunks={})` (`sum(skipna=False)`); prints one JSON object: seconds, the workers' and this client's peak RSS, the
sums, the tile count.

usage: engines_dask.py DIR BYTES CHUNK_MIB WORKERS
"""
import json
import os
import resource
import shutil
import sys
import time

import dask.array as da
import distributed
import numpy as np
import xarray as xr

import h5tile
import h5tile.xarray
from engines_prewarm import prewarm


def peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main():
    folder, nbytes, chunk_mib, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    cols = 8192
    rows = nbytes // (8 * cols)
    chunk_rows = max(1, (chunk_mib << 20) // (8 * cols))
    # A value each element can be checked by, cheap to make on the worker (no gather); made
    # by an operation, so each chunk is memory of its own (da.full's chunks are broadcasts of
    # one number, which hold no memory and would flatter the peaks).
    x = da.ones((rows, cols), chunks=(chunk_rows, cols), dtype=np.float64) * 1.5
    out = {"rows": rows, "cols": cols, "chunk_rows": chunk_rows, "chunks": x.npartitions}
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40, memory_limit=0)
    with distributed.Client(cluster) as client:
        client.run(lambda: None)  # workers up
        path = os.path.join(folder, "dask.h5")
        # Computed as it is written: each worker holds a few chunks at a time.
        prewarm(nbytes)
        begun = time.perf_counter()
        h5tile.to_file(x, path, "/x")
        out["write_lazy_s"] = time.perf_counter() - begun
        out["worker_peak_rss"] = max(client.run(peak_rss).values())
        # Held in the workers' memory first, as the MPI ranks hold their blocks.
        held = x.persist()
        distributed.wait(held)
        for sync, key in ((False, "write_nosync_s"), (True, "write_s")):  # as engines_mpi.py
            prewarm(nbytes)
            begun = time.perf_counter()
            h5tile.to_file(held, path, "/x", sync=sync)
            out[key] = time.perf_counter() - begun
        out["tiles"] = len(os.listdir(path + ".tiles"))
        try:
            import zarr  # noqa: F401  (the bench's contender, installed for it only)
            zpath = os.path.join(folder, "dask.zarr")
            prewarm(nbytes)
            begun = time.perf_counter()
            held.to_zarr(zpath, overwrite=True)
            out["zarr_write_s"] = time.perf_counter() - begun
            shutil.rmtree(zpath, ignore_errors=True)
        except ImportError:
            out["zarr_write_s"] = None
        del held
        begun = time.perf_counter()
        ds = xr.open_dataset(path, engine=h5tile.xarray.H5TileBackendEntrypoint, chunks={})
        # skipna=False: the plain sum the MPI side takes (xarray's default skips NaNs,
        # which costs a mask over every element).
        out["sum"] = float(ds["x"].sum(skipna=False).compute())
        out["read_sum_s"] = time.perf_counter() - begun
        out["read_chunks"] = ds["x"].data.npartitions
    cluster.close()
    out["client_peak_rss"] = peak_rss()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
