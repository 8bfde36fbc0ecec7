"""make bench's dask section, its MPI baseline, one round, under mpirun: the array of
engines_dask.py (float64, BYTES, every element 1.5), each rank holding its block of rows
(filled before the clock starts), written through h5tile over the communicator without fsync
and then with it, and read back and summed the same way; rank 0 prints one JSON object:
seconds (from a barrier to the last rank's return) and the sum.

usage: mpirun -n N engines_mpi.py DIR BYTES
"""
import json
import os
import sys
import time

import numpy as np
from mpi4py import MPI

import h5tile
from engines_prewarm import prewarm


def main():
    folder, nbytes = sys.argv[1], int(sys.argv[2])
    comm = MPI.COMM_WORLD
    cols = 8192
    rows = nbytes // (8 * cols)
    offset, shape = h5tile.partition((rows, cols), comm)
    block = np.full(shape, 1.5)
    path = os.path.join(folder, "mpi.h5")
    seconds = {}
    for sync in (False, True):  # the durable write last: its file is the one read back
        if comm.rank == 0:
            prewarm(nbytes)
        comm.Barrier()
        begun = time.perf_counter()
        h5tile.to_file(block, path, "/x", comm=comm, global_shape=(rows, cols), offset=offset,
                       sync=sync)
        comm.Barrier()
        seconds[sync] = time.perf_counter() - begun
    del block
    comm.Barrier()
    begun = time.perf_counter()
    mine = h5tile.from_file(path, "/x", comm=comm)
    total = comm.allreduce(float(mine.sum()))
    comm.Barrier()
    read_s = time.perf_counter() - begun
    if comm.rank == 0:
        print(json.dumps({"write_s": seconds[True], "write_nosync_s": seconds[False],
                          "read_sum_s": read_s, "sum": total, "ranks": comm.size}))


if __name__ == "__main__":
    main()
