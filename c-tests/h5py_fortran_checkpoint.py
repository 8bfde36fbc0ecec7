"""Checks, with h5py, the files fortran_checkpoint.f90 committed in DIR: in ck.h5 the Fortran
array u(6, 5) is the dataset /u of shape (5, 6) with u[j, i] = 100000 + 1000 j + i, the int32
vector /group/n holds 10 + k, and the attributes are h5py attributes of the types the Fortran
kinds name (step int64 1 and the uint8 flags on "/", units a str on /u, ...); async.h5 (the
single-file layout) holds version 5 contiguously; aborted.h5 does not exist; the series folder
keeps ckpt 4 and 5 only (keep_last = 2), its latest record naming step 5, whose /u and step
are version 105. An attribute of one value (a Fortran scalar) is an HDF5 scalar, as h5py
stores a number; several values are a 1-D array. Exits non-zero on any mismatch, listing them
all.

usage: h5py_fortran_checkpoint.py DIR
"""

import os
import sys

import h5py
import numpy as np

sys.dont_write_bytecode = True  # keep the source folder clean

NX, NY = 6, 5
problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def u_expected(version):
    j, i = np.meshgrid(np.arange(NY), np.arange(NX), indexing="ij")
    return 100000.0 * version + 1000.0 * j + i


def check_fields(path, version, virtual):
    with h5py.File(path, "r") as f:
        u = f["/u"]
        check(u.shape == (NY, NX), f"{path}: /u has shape {u.shape}, not ({NY}, {NX})")
        check(u.dtype == np.float64, f"{path}: /u is {u.dtype}")
        check(u.is_virtual == virtual, f"{path}: /u virtual is {u.is_virtual}")
        if u.shape == (NY, NX):
            check(np.array_equal(u[()], u_expected(version)), f"{path}: values of /u")
        nranks = int(f["/group"].attrs["ranks"])
        n = f["/group/n"][()]
        check(n.dtype == np.int32, f"{path}: /group/n is {n.dtype}")
        want = 10 * version + np.arange(2 * nranks + 1)
        check(np.array_equal(n, want), f"{path}: /group/n is {n}, not {want}")
        a = f.attrs
        check(a["step"].shape == () and a["step"] == version and a["step"].dtype == np.int64,
              f"{path}: step is {a['step']!r}")
        check(np.array_equal(a["times"], version + np.array([0.5, 0.25, 0.125]))
              and a["times"].dtype == np.float64, f"{path}: times is {a['times']!r}")
        check(np.array_equal(a["shape"], [NX, NY]) and a["shape"].dtype == np.int64,
              f"{path}: shape is {a['shape']!r}")
        check(np.array_equal(a["flags"], [1, 2, 200]) and a["flags"].dtype == np.uint8,
              f"{path}: flags is {a['flags']!r}")
        units = f["/u"].attrs["units"]
        check(units == "m/s" and isinstance(units, str), f"{path}: units is {units!r}")
        cfl = f["/u"].attrs["cfl"]
        check(cfl.shape == () and cfl == 0.5 and cfl.dtype == np.float32, f"{path}: cfl is {cfl!r}")
        tiles = f["/group"].attrs["tiles"]
        check(np.array_equal(tiles, [1, 2, 3]) and tiles.dtype == np.int32,
              f"{path}: tiles is {tiles!r}")
        check(f["/group"].attrs["ranks"].dtype == np.int32, f"{path}: ranks' type")
        weights = f["/group/n"].attrs["weights"]
        check(np.array_equal(weights, [1.5, 2.5]) and weights.dtype == np.float32,
              f"{path}: weights is {weights!r}")


def main():
    d = sys.argv[1]
    check_fields(os.path.join(d, "ck.h5"), 1, virtual=True)
    check_fields(os.path.join(d, "async.h5"), 5, virtual=False)
    check(not os.path.exists(os.path.join(d, "aborted.h5")), "aborted.h5 exists")
    series = os.path.join(d, "series")
    kept = sorted(n for n in os.listdir(series) if n.startswith("ckpt.") and n.endswith(".h5"))
    check(kept == ["ckpt.000000000004.h5", "ckpt.000000000005.h5"], f"the series keeps {kept}")
    with open(os.path.join(series, "latest")) as f:
        latest = f.read()
    check(latest.split("\n")[:2] == ["5", "ckpt.000000000005.h5"],
          f"the latest record is {latest!r}")
    check_fields(os.path.join(series, "ckpt.000000000005.h5"), 105, virtual=True)
    for p in problems:
        print("FAIL:", p)
    if problems:
        sys.exit(1)
    print("h5py reads what the Fortran checkpoints committed")


if __name__ == "__main__":
    main()
