#!/usr/bin/env bash
# Legate's own Python venv (.deps/legate, kept in the cache as the project's venv is:
# scripts/cache.sh) with Legate and cuPyNumeric from PyPI, the CUDA runtime their build links,
# and pytest: make bench's legate.io.hdf5 contender (bench/programs/python_contenders.py; where
# this fails, the bench says Legate cannot be imported and goes on without it), and make
# test-legate's interpreter (h5tile.legate, python/tests/test_legate.py). Its own venv, as
# Legate pins its own numpy.
#
#   scripts/legate-env.sh           sets up .deps/legate (seconds once it is in the cache)
#
# LEGATE_VERSION picks another release of both (default 26.6.1, the one measured and tested).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/.deps"
# shellcheck source=scripts/cache.sh
. "$root/scripts/cache.sh"
# Whole when both are there; importing legate itself needs a CUDA driver (libcuda.so.1), which
# the bench supplies where the machine has none (programs/no_device_libcuda.c).
whole='import importlib.util as u
assert u.find_spec("legate.io.hdf5") and u.find_spec("nvidia.cu13") and u.find_spec("cupynumeric")
assert u.find_spec("pytest")'
version=${LEGATE_VERSION:-26.6.1}
h5tile_cached_venv "$root/.deps/legate" legate "$whole" "legate==$version" \
  "nvidia-cupynumeric==$version" "nvidia-cuda-runtime>=13,<14" pytest
