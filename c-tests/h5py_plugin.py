"""h5py, with its own bundled HDF5 (loaded privately by Python), through the h5tile_gds plugin:
a child Python with HDF5_DRIVER=h5tile_gds writes and reads a file; the values round-trip, the
log (H5TILE_LOG=info) shows each open went through the plugin, and the file reads back with
h5py's default driver. The plugin finds the HDF5 functions it needs in h5py's library. Open
failures map to the same Python exceptions as with HDF5's default driver: a missing file is
FileNotFoundError, an exclusive create of an existing file FileExistsError, each with its errno.

usage: h5py_plugin.py SCRATCH_DIR   (HDF5_PLUGIN_PATH must name the plugin folder)
"""
import os
import subprocess
import sys

CHILD = r"""
import sys, numpy as np, h5py
path = sys.argv[1]
data = np.arange(12000, dtype=np.float64).reshape(120, 100) * 0.25
with h5py.File(path, "w") as f:
    f.create_dataset("/g/x", data=data, chunks=(16, 100), compression="gzip")
    f["/g"].attrs["n"] = 7
with h5py.File(path, "r") as f:
    assert (f["/g/x"][...] == data).all()
    assert f["/g"].attrs["n"] == 7
missing = path + ".missing"
try:
    h5py.File(missing, "r")
    raise SystemExit("opening a missing file succeeded")
except FileNotFoundError as e:
    assert e.errno == 2 and missing in str(e), repr(e)
try:
    h5py.File(path, "w-")
    raise SystemExit("an exclusive create of an existing file succeeded")
except FileExistsError as e:
    assert e.errno == 17 and path in str(e), repr(e)
print("child OK", h5py.version.hdf5_version)
"""


def main():
    scratch = sys.argv[1]
    os.makedirs(scratch, exist_ok=True)
    path = os.path.join(scratch, "through_plugin.h5")
    if os.path.exists(path):
        os.remove(path)
    env = dict(os.environ, HDF5_DRIVER="h5tile_gds", H5TILE_LOG="info")
    child = subprocess.run([sys.executable, "-c", CHILD, path], env=env, capture_output=True, text=True)
    print(child.stdout, end="")
    opened = [l for l in child.stderr.splitlines() if l.startswith("h5tile_gds info: opened")]
    if child.returncode != 0 or len(opened) < 2:
        sys.exit(f"h5py through h5tile_gds failed (exit {child.returncode}):\n{child.stderr}")
    import h5py
    import numpy as np

    with h5py.File(path, "r") as f:  # the default driver reads what the plugin wrote
        expected = np.arange(12000, dtype=np.float64).reshape(120, 100) * 0.25
        assert (f["/g/x"][...] == expected).all()
    print(f"h5py_plugin: OK ({len(opened)} opens through h5tile_gds)")


if __name__ == "__main__":
    main()
