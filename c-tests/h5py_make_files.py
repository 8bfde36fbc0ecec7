"""Writes, with h5py, the files api_h5py_files reads (values from dtype_formulas.py):

  contiguous.h5     /data        float64 (13, 17), contiguous
  chunked.h5        /grp/ints    int32 (20, 30), chunks (7, 8), gzip
  vds_rel.h5        /vds         float64 (12, 10), an h5py VirtualLayout of three row blocks
                                 in vds_rel_src/part<k>.h5 (dataset /d), *relative* paths
  vds_rel_broken.h5 /vds         the same layout over vds_rel_broken_src/, part1.h5 missing
  legate.h5         /data        int64 (10, 9), Legate's layout: sources at *absolute* paths
                                 <dir>/legate_legate_vds/<i>.h5, dataset /data in each
  legate_broken.h5  /data        the same over legate_broken_legate_vds/, 3.h5 missing
  dtypes.h5         /<name>      every element type as h5py stores it, shape (5, 7)

usage: h5py_make_files.py DIR   (DIR is emptied first)
"""

import os
import shutil
import sys

import h5py
import numpy as np

sys.dont_write_bytecode = True  # keep the source folder clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtype_formulas as F  # noqa: E402

ROW_BLOCKS = [(0, 5), (5, 9), (9, 12)]
LEGATE_BLOCKS = [((0, 6), (0, 4)), ((0, 6), (4, 9)), ((6, 10), (0, 4)), ((6, 10), (4, 9))]


def vds_relative(d, stem, skip=None):
    data = F.array("float64", (12, 10))
    os.makedirs(os.path.join(d, stem + "_src"))
    layout = h5py.VirtualLayout(shape=data.shape, dtype=np.float64)
    for k, (lo, hi) in enumerate(ROW_BLOCKS):
        rel = f"{stem}_src/part{k}.h5"
        if k != skip:
            with h5py.File(os.path.join(d, rel), "w") as f:
                f["d"] = data[lo:hi]
        layout[lo:hi] = h5py.VirtualSource(rel, "d", shape=(hi - lo, 10), dtype=np.float64)
    with h5py.File(os.path.join(d, stem + ".h5"), "w") as f:
        f.create_virtual_dataset("vds", layout, fillvalue=0)
        names = [s.file_name for s in f["vds"].virtual_sources()]
    assert all(not os.path.isabs(n) for n in names), names


def legate(d, stem, skip=None):
    data = F.array("int64", (10, 9))
    src_dir = os.path.join(d, stem + "_legate_vds")
    os.makedirs(src_dir)
    layout = h5py.VirtualLayout(shape=data.shape, dtype=np.int64)
    for i, ((r0, r1), (c0, c1)) in enumerate(LEGATE_BLOCKS):
        path = os.path.join(src_dir, f"{i}.h5")
        assert os.path.isabs(path)
        if i != skip:
            with h5py.File(path, "w") as f:
                f["data"] = data[r0:r1, c0:c1]
        layout[r0:r1, c0:c1] = h5py.VirtualSource(
            path, "data", shape=(r1 - r0, c1 - c0), dtype=np.int64)
    with h5py.File(os.path.join(d, stem + ".h5"), "w") as f:
        f.create_virtual_dataset("data", layout, fillvalue=0)


def main():
    d = os.path.abspath(sys.argv[1])
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)

    with h5py.File(os.path.join(d, "contiguous.h5"), "w") as f:
        f.create_dataset("data", data=F.array("float64", (13, 17)))
        assert f["data"].chunks is None

    with h5py.File(os.path.join(d, "chunked.h5"), "w") as f:
        ds = f.create_dataset("grp/ints", data=F.array("int32", (20, 30)), chunks=(7, 8),
                              compression="gzip", compression_opts=4)
        assert ds.compression == "gzip" and ds.chunks == (7, 8)

    vds_relative(d, "vds_rel")
    vds_relative(d, "vds_rel_broken", skip=1)
    legate(d, "legate")
    legate(d, "legate_broken", skip=3)

    with h5py.File(os.path.join(d, "dtypes.h5"), "w") as f:
        for name in F.NAMES:
            f[name] = F.array(name, (5, 7))
        assert f["bool"].id.get_type().get_class() == h5py.h5t.ENUM
        assert f["complex128"].id.get_type().get_class() == h5py.h5t.COMPOUND

    # sanity: h5py reads the VDS back (from the folder, as the sources are relative)
    os.chdir(d)
    with h5py.File("vds_rel.h5", "r") as f:
        assert np.array_equal(f["vds"][...], F.array("float64", (12, 10)))
    with h5py.File("legate.h5", "r") as f:
        assert np.array_equal(f["data"][...], F.array("int64", (10, 9)))
    print("h5py_make_files: wrote", d)


if __name__ == "__main__":
    main()
