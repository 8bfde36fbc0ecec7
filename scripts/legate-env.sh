#!/usr/bin/env bash
# make bench's legate.io.hdf5 contender: a Python venv of its own (.deps/legate, kept in the
# cache as the project's venv is: scripts/cache.sh) with Legate from PyPI and the CUDA runtime
# its build links. Its own venv, as Legate pins its own numpy. Legate is imported only by the
# bench (bench/programs/python_contenders.py); where this fails, the bench says Legate cannot
# be imported and goes on without it.
#
#   scripts/legate-env.sh           sets up .deps/legate (seconds once it is in the cache)
#
# LEGATE_VERSION picks another release (default 26.6.1, the one measured).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/.deps"
# shellcheck source=scripts/cache.sh
. "$root/scripts/cache.sh"
# Whole when both are there; importing legate itself needs a CUDA driver (libcuda.so.1), which
# the bench supplies where the machine has none (programs/no_device_libcuda.c).
whole='import importlib.util as u
assert u.find_spec("legate.io.hdf5") and u.find_spec("nvidia.cu13")'
h5tile_cached_venv "$root/.deps/legate" legate "$whole" "legate==${LEGATE_VERSION:-26.6.1}" "nvidia-cuda-runtime>=13,<14"
