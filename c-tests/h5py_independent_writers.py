"""Independent writers and one commit, read by h5py: api_independent_writers.c begins a
transaction, has separate processes (no MPI, no communicator) write its tiles, one of them
twice, and commits; h5py then reads the dataset whole and checks every element, the
attribute the commit stored, and that one file per tile is left.

usage: h5py_independent_writers.py PROGRAM SCRATCH_DIR
"""
import os
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dtype_formulas import array  # noqa: E402


def main():
    program, scratch = sys.argv[1], sys.argv[2]
    run = subprocess.run([program, scratch], capture_output=True, text=True)
    print(run.stdout + run.stderr, end="")
    if run.returncode != 0:
        sys.exit(f"{program} failed with exit status {run.returncode}")
    path = os.path.join(scratch, "data.h5")
    with h5py.File(path, "r") as f:
        d = f["/data"]
        assert d.shape == (12, 10) and d.dtype == np.float64, (d.shape, d.dtype)
        assert d.is_virtual and len(d.virtual_sources()) == 3, d.virtual_sources()
        got = d[...]
        want = array("float64", (12, 10))
        assert np.array_equal(got, want), (got, want)
        assert d.attrs["units"] == "K", dict(d.attrs)
    tiles = os.listdir(path + ".tiles")
    assert len(tiles) == 3, tiles
    print("h5py_independent_writers: OK")


if __name__ == "__main__":
    main()
