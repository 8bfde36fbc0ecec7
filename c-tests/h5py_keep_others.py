"""Several fields in one checkpoint (H5TILE_KEEP_OTHERS) on a file h5py made: h5py writes
attributes, a group with an attribute, a soft link and a dataset; the C program
(api_keep_others.c) adds and replaces fields; then h5py checks that everything it wrote is
still there, exactly, beside the fields, and that the tile folder holds the current tiles of
the tiled fields only.

usage: h5py_keep_others.py PROGRAM SCRATCH_DIR
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np


def main():
    program, scratch = sys.argv[1], sys.argv[2]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    path = os.path.join(scratch, "ckpt.h5")
    with h5py.File(path, "w") as f:
        f.attrs["run"] = "heat"
        f.attrs["step"] = np.int64(100)
        meta = f.create_group("meta")
        meta.attrs["units"] = "K"
        f["alias"] = h5py.SoftLink("/meta")
        f.create_dataset("params", data=np.arange(5, dtype=np.float32), compression="gzip")

    run = subprocess.run([program, path], capture_output=True, text=True)
    print(run.stdout + run.stderr, end="")
    if run.returncode != 0:
        sys.exit(f"{program} failed with exit status {run.returncode}")

    with h5py.File(path, "r") as f:
        assert f.attrs["run"] == "heat" and f.attrs["step"] == 100, dict(f.attrs)
        assert f["meta"].attrs["units"] == "K"
        link = f.get("alias", getlink=True)
        assert isinstance(link, h5py.SoftLink) and link.path == "/meta", link
        assert (f["params"][...] == np.arange(5, dtype=np.float32)).all()
        assert f["params"].compression == "gzip"
        assert (f["fields/u"][...] == 2000 + np.arange(30).reshape(6, 5)).all()
        assert f["fields/v"].dtype == np.int32
        assert (f["fields/v"][...] == 3 * np.arange(12).reshape(4, 3)).all()
        assert (f["fields/w"][...] == -np.arange(10.0)).all()
        assert (f["fields/x"][...] == 0.5 * np.arange(10)).all()
        assert f["fields/u"].is_virtual and not f["fields/v"].is_virtual
        assert sorted(f.keys()) == ["alias", "fields", "meta", "params"], list(f.keys())

    tiles = sorted(os.listdir(path + ".tiles"))
    by_field = {}
    for name in tiles:
        key, generation = name.split(".")[:2]
        by_field.setdefault(key, set()).add(generation)
    assert sorted(by_field) == ["fields+u", "fields+w", "fields+x"], tiles
    assert all(len(g) == 1 for g in by_field.values()), f"stale tiles left: {tiles}"
    assert sum(n.startswith("fields+u.") for n in tiles) == 2, tiles
    print("h5py_keep_others: OK")


if __name__ == "__main__":
    main()
