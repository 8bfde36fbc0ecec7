"""make bench's dask section, many chunks: a float64 array of COUNT chunks of 64 x 64 (a square
grid) written through h5tile.to_file by Dask's threads scheduler in this one process: each chunk
an independent writer's tile, so a file of its own (what a reader such as h5py then pays, and
`h5tile pack` undoes, engines.py measures). Prints one JSON object: seconds, the tile files.

usage: engines_many_chunks.py FILE COUNT
"""
import json
import math
import os
import sys
import time

import dask
import dask.array as da
import numpy as np

import h5tile


def main():
    path, count = sys.argv[1], int(sys.argv[2])
    g = math.isqrt(count)
    if g * g != count:
        sys.exit(f"engines_many_chunks.py: {count} is not a square")
    x = da.ones((64 * g, 64 * g), chunks=(64, 64), dtype=np.float64) * 1.5
    with dask.config.set(scheduler="threads"):
        begun = time.perf_counter()
        h5tile.to_file(x, path, "/data", sync=False)
        seconds = time.perf_counter() - begun
    print(json.dumps({"seconds": seconds, "chunks": x.npartitions,
                      "files": len(os.listdir(path + ".tiles")), "bytes": x.nbytes}))


if __name__ == "__main__":
    main()
