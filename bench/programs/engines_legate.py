"""make bench's legate section: in one Legate program, a cuPyNumeric float64 array of BYTES
written by `legate.io.hdf5.to_file` (then a blocking fence: it only queues the write, and it
does not fsync) and by `h5tile.to_file` (a Legate task per partition point, one commit; with
fsync, and with sync=False, Legate's durability), taking turns for ROUNDS rounds; then each
file read back into cuPyNumeric by its own library and summed. Prints one JSON object: the
seconds of each, the sums, the tiles, and how much h5tile's first write grew the process's
peak RSS (before any other write).

usage: engines_legate.py DIR BYTES ROUNDS   (Legate's venv; python_contenders.py's environment)
"""
import json
import os
import resource
import shutil
import sys
import time

import h5py  # noqa: F401  (before cupynumeric: Legate's HDF5 and h5py's clash otherwise)
import cupynumeric as cn
from legate.core import get_legate_runtime
from legate.io import hdf5 as legate_hdf5

import h5tile
import h5tile.legate


def fence():
    get_legate_runtime().issue_execution_fence(block=True)


def timed(fn):
    fence()
    os.sync()  # no earlier write's dirty pages to wait behind
    begun = time.perf_counter()
    fn()
    fence()
    return time.perf_counter() - begun


def main():
    folder, nbytes, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    cols = 8192
    rows = nbytes // (8 * cols)
    a = cn.ones((rows, cols)) * 1.5  # computed, so held in memory (a fill would be made at first use)
    fence()
    ours, theirs = os.path.join(folder, "h5tile.h5"), os.path.join(folder, "legate.h5")
    out = {"rows": rows, "cols": cols, "legate_write_s": [], "h5tile_write_s": [],
           "h5tile_nosync_write_s": [], "legate_read_sum_s": [], "h5tile_read_sum_s": []}
    # What h5tile's write adds to the program's peak, measured before anything else writes.
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    h5tile.to_file(a, ours, "/x")
    fence()
    out["h5tile_rss_growth"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    for _ in range(rounds):
        shutil.rmtree(theirs.replace(".h5", "_legate_vds"), ignore_errors=True)
        out["legate_write_s"].append(timed(lambda: legate_hdf5.to_file(a, theirs, "x")))
        out["h5tile_write_s"].append(timed(lambda: h5tile.to_file(a, ours, "/x")))
        out["h5tile_nosync_write_s"].append(timed(lambda: h5tile.to_file(a, ours, "/x", sync=False)))
    out["tiles"] = len([n for n in os.listdir(ours + ".tiles") if n.endswith(".h5")])
    sums = {}
    for _ in range(rounds):
        def read_theirs():
            sums["legate"] = float(cn.asarray(legate_hdf5.from_file(theirs, "x")).sum())

        def read_ours():
            sums["h5tile"] = float(h5tile.legate.from_file(ours, "/x").sum())

        out["legate_read_sum_s"].append(timed(read_theirs))
        out["h5tile_read_sum_s"].append(timed(read_ours))
    out["sums"] = sums
    print(json.dumps(out))


if __name__ == "__main__":
    main()
