"""Two libhdf5s in one Python process, each loading the h5tile_gds plugin: h5py's (its own
bundled build) and libh5tile's (ctypes). With HDF5_DRIVER=h5tile_gds and a driver
configuration in the environment, each library's opens must go through the plugin calling
*that* library: h5py writes and reads a file, then libh5tile writes one (its HDF5 loads the
same plugin binary) that h5py reads back, in both import orders (libh5tile first, h5py
first). A plugin calling the other library would print HDF5-DIAG ("can't find object for
ID", "not an access plist") and lose the configuration and the locking choice.

usage: h5py_two_hdf5.py LIBH5TILE SCRATCH_DIR   (HDF5_PLUGIN_PATH must name the plugin folder)
"""
import os
import re
import shutil
import subprocess
import sys

CHILD = r"""
import ctypes, sys
order, lib_path, scratch = sys.argv[1:4]
if order == "h5tile-first":
    lib = ctypes.CDLL(lib_path)
    import h5py, numpy as np
else:
    import h5py, numpy as np
    lib = ctypes.CDLL(lib_path)
by_h5py, by_h5tile = scratch + "/by_h5py.h5", scratch + "/by_h5tile.h5"
data = np.arange(24, dtype=np.float64).reshape(4, 6)
with h5py.File(by_h5py, "w") as f:
    f["x"] = data
with h5py.File(by_h5py, "r") as f:
    assert (f["x"][()] == data).all()

# libh5tile alone (MPI_COMM_NULL's Fortran handle: Open MPI's index 2, MPICH's value).
version = ctypes.create_string_buffer(8192)
lib.MPI_Get_library_version(version, ctypes.byref(ctypes.c_int()))
comm_null = 2 if b"Open MPI" in version.value else 0x04000000
shape = (ctypes.c_uint64 * 2)(4, 6)
origin = (ctypes.c_uint64 * 2)(0, 0)
lib.h5tile_last_error.restype = ctypes.c_char_p
status = lib.h5tile_write_f(comm_null, by_h5tile.encode(), b"/y", 11, ctypes.c_size_t(2),
                            shape, origin, shape, data.ctypes.data_as(ctypes.c_void_p), None)
assert status == 0, (status, lib.h5tile_last_error())
with h5py.File(by_h5tile, "r") as f:
    assert (f["y"][()] == data).all()
print("two libhdf5s: OK")
"""


def main():
    lib, scratch = sys.argv[1], sys.argv[2]
    if not os.environ.get("HDF5_PLUGIN_PATH"):
        raise SystemExit("HDF5_PLUGIN_PATH must name the plugin folder")
    env = dict(os.environ, HDF5_DRIVER="h5tile_gds", HDF5_DRIVER_CONFIG="threads=2",
               H5TILE_LOG="info")
    for order in ("h5tile-first", "h5py-first"):
        where = os.path.join(scratch, order)
        shutil.rmtree(where, ignore_errors=True)
        os.makedirs(where)
        run = subprocess.run([sys.executable, "-c", CHILD, order, lib, where], env=env,
                             capture_output=True, text=True)
        out = run.stdout + run.stderr
        assert run.returncode == 0 and "two libhdf5s: OK" in run.stdout, f"{order}:\n{out}"
        assert "HDF5-DIAG" not in out, f"{order}: an HDF5 error was printed:\n{out}"
        # Every open the environment's driver made (by name, so with the configuration string)
        # kept it: h5py's of both files, libh5tile's HDF5's of its master (under its temporary
        # name until the commit).
        by_name = [line for line in out.splitlines()
                   if re.search(r"opened '.*/\.?by_h5(py|tile)\.h5(\.[0-9a-f]+\.tmp)?'", line)]
        assert any("/by_h5py.h5'" in line for line in by_name), f"{order}:\n{out}"
        assert any("/.by_h5tile.h5." in line for line in by_name), f"{order}:\n{out}"
        assert any("/by_h5tile.h5'" in line for line in by_name), f"{order}:\n{out}"
        for line in by_name:
            assert "config='threads=2'" in line, f"{order}: configuration lost: {line}\n{out}"
        print(f"{order}: both libraries served by their own plugin calls "
              f"({len(by_name)} opens through the plugin, configuration kept)")


if __name__ == "__main__":
    main()
