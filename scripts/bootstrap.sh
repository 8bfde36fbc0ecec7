#!/usr/bin/env bash
# Installs everything h5tile needs on a fresh Debian 12 machine, once:
#   - Debian packages: Open MPI and MPICH (make ... MPI=mpich), libclang (rsmpi's bindgen), zlib, pkg-config, gfortran,
#     Debian's own CMake 3.25 (a test builds a user's project with it; make uses the venv's),
#     valgrind, patchelf (make install sets the installed files' rpath with it), and HDF5 1.10's
#     tools (hdf5-tools: h5dump and h5ls, to check that older HDF5 reads h5tile's files; h5tile
#     itself never links that HDF5), and libxxhash0 (XXH3 with AVX-512 for the checksums, loaded
#     at run time where present: platform/xxh3.rs);
#   - a project-local Python venv (.deps/venv) with CMake >= 3.26, h5py, hdf5plugin (the
#     compression filters h5py reads h5tile's compressed tiles with), numpy and matplotlib
#     (for make bench's plot) from PyPI, and pytest, flit_core and mpi4py for the Python
#     package's tests, and Dask (with distributed), xarray and h5netcdf (what the xarray engine is compared
#     with) for its engines' tests;
#   - HDF5 as a shared library with deflate, built from the source the published crate
#     hdf5-metno-src ships (scripts/build-hdf5.sh), unless HDF5_DIR already names one >= 1.14.
# Every step is skipped when its result is already there, so a second run takes seconds. The
# venv and the HDF5 builds are kept in ~/.cache/h5tile, shared by every clone on the machine
# (scripts/cache.sh; H5TILE_CACHE=off keeps them in .deps/ instead).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps="$root/.deps"
mkdir -p "$deps"
# shellcheck source=scripts/cache.sh
. "$root/scripts/cache.sh"

pkgs=(libopenmpi-dev openmpi-bin libmpich-dev mpich libclang-dev clang zlib1g-dev pkg-config gfortran valgrind
      patchelf python3-venv hdf5-tools cmake libxxhash0)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then
    echo "bootstrap: need root to install ${missing[*]} (or install them yourself)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The venv's packages: one list, which also keys its entry in the cache (scripts/cache.sh).
# mpi4py's PyPI wheel (>= 4.1) runs on Open MPI and on MPICH alike, chosen at run time
# (MPI4PY_LIBMPI): one download serves both MPI builds, nothing is compiled; pytest, mpi4py and
# flit_core (pip builds the installed package with it, offline) are for the Python package's
# tests (python/tests, run by ctest as python_*).
packages=('cmake>=3.26' h5py hdf5plugin numpy matplotlib xxhash pytest 'flit_core>=3.11,<5' 'mpi4py>=4.1'
          'dask[array]' distributed xarray h5netcdf)
usable='import h5py, hdf5plugin, numpy, cmake, matplotlib, xxhash, pytest, flit_core, mpi4py, dask.array, distributed, xarray, h5netcdf
assert tuple(map(int, mpi4py.__version__.split(".")[:2])) >= (4, 1)'

h5tile_cached_venv "$deps/venv" venv "$usable" --only-binary=mpi4py "${packages[@]}"

"$root/scripts/build-hdf5.sh"
