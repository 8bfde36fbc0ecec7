#!/usr/bin/env bash
# make test-legate: python/tests/test_legate.py in Legate's venv (.deps/legate, made by
# scripts/legate-env.sh) against the installed package at PREFIX, on the CPUs. Where the
# machine has no CUDA driver, the no-device libcuda.so.1 in NO_DEVICE goes first on the
# library path, Legate's automatic configuration (which counts GPUs) is off, and it gets 2 CPU
# workers and 1 utility thread (a LEGATE_CONFIG of the caller's wins); KvikIO reads by POSIX.
#
#   scripts/test-legate.sh PREFIX NO_DEVICE
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=$1 no_device=$2
venv="$root/.deps/legate"
libs=$(ls -d "$venv"/lib/python3*/site-packages/nvidia/*/lib | paste -sd: -)
if ! ldconfig -p | grep -q 'libcuda\.so\.1 '; then
  libs="$no_device:$libs"
  export KVIKIO_COMPAT_MODE=ON LEGATE_AUTO_CONFIG=0
  export LEGATE_CONFIG=${LEGATE_CONFIG:---cpus 2 --utility 1 --sysmem 4000}
  echo "test-legate: no CUDA driver here: Legate runs on 2 CPUs with the no-device libcuda.so.1"
fi
scratch="$root/build/legate-tests"
rm -rf "$scratch" && mkdir -p "$scratch"
cd "$scratch"
LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PYTHONPATH="$prefix/share/h5tile/python" \
  H5TILE_TEST_SCRATCH="$scratch" PYTHONDONTWRITEBYTECODE=1 \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider --color=no "$root/python/tests/test_legate.py"
