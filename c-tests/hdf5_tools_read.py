"""Checks that HDF5 1.10's own tools (Debian's hdf5-tools: h5ls, h5dump, from an HDF5 older
than the one h5tile is built with) read what h5tile wrote, in every layout: for each numeric
element type api_write_all_dtypes wrote, <name>.h5 (virtual dataset over tile files),
<name>_single.h5 (one contiguous file) and <name>_subfiles.h5 (virtual dataset over a subfile
with a user block), `h5ls` lists /data as a 5 x 7 dataset and `h5dump -b` writes exactly the
bytes of dtype_formulas.py's values (native byte order).
Exits non-zero listing every mismatch; exits 77 (skipped, said) where the 1.10 tools are not
installed (scripts/bootstrap.sh installs them).

usage: hdf5_tools_read.py DIR
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True  # keep the source folder clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtype_formulas as F  # noqa: E402

# Debian's tools, not those of the HDF5 h5tile is built with (which may not have any).
H5LS, H5DUMP = "/usr/bin/h5ls", "/usr/bin/h5dump"
# Types h5dump writes as plain numbers (bool is an enum, float16 is unknown to 1.10, complex a
# compound).
NAMES = [n for n in F.NAMES if n not in ("bool", "float16", "complex64", "complex128")]


def main():
    folder = sys.argv[1]
    if not (os.access(H5LS, os.X_OK) and os.access(H5DUMP, os.X_OK)):
        print(f"hdf5_tools_read: SKIPPED: {H5DUMP} and {H5LS} (Debian's hdf5-tools) are not installed")
        return 77
    version = subprocess.run([H5DUMP, "--version"], capture_output=True, text=True).stdout.strip()
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in NAMES:
            want = F.array(name, (5, 7)).astype(F.NUMPY[name]).tobytes()
            for file in (f"{name}.h5", f"{name}_single.h5", f"{name}_subfiles.h5"):
                # From the file's folder, as a user would run them (sources are relative).
                ls = subprocess.run([H5LS, file], cwd=folder, capture_output=True, text=True)
                if ls.returncode != 0 or "Dataset {5, 7}" not in ls.stdout:
                    errors.append(f"h5ls {file}: rc {ls.returncode}: {ls.stdout}{ls.stderr}")
                out = os.path.join(tmp, f"{file}.bin")
                dump = subprocess.run([H5DUMP, "-d", "/data", "-b", "NATIVE", "-o", out, file],
                                      cwd=folder, capture_output=True, text=True)
                if dump.returncode != 0:
                    errors.append(f"h5dump {file}: rc {dump.returncode}: {dump.stderr}")
                    continue
                with open(out, "rb") as f:
                    got = f.read()
                if got != want:
                    errors.append(f"h5dump {file}: its {len(got)} bytes differ from the {len(want)} written")
    for e in errors:
        print(e)
    print(f"hdf5_tools_read: {'FAILED' if errors else 'OK'} ({version}, {len(NAMES)} types x 3 layouts)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
