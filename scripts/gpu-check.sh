#!/usr/bin/env bash
# GPU check of h5tile's device paths, for a machine with an NVIDIA GPU, the CUDA toolkit
# (nvcc) and, for the gds path, cuFile. CI has no GPU: there this script says so and exits 0.
#
# It carries its own build: on the build machine run `make stage` (HDF5 2.2.0), then on the GPU
# machine, from the repository root, with the two build folders beside the sources:
#
#   bash scripts/gpu-check.sh        (carry .deps/hdf5-2.2.0 and build/hdf5-2.2.0/prefix)
#
# For each size in GPU_CHECK_MIB (64 1024 4096) and each of gds=on and gds=off (the compat
# path), an ordinary HDF5 program writes a device buffer through the h5tile_gds plugin, reads
# it back into other device memory, compares the bytes on the device, and prints bandwidth
# beside plain POSIX pread + cudaMemcpy of the same file; the driver's log (H5TILE_LOG=info)
# must name the path taken. Results go to $OUT (or target/gpu-check): one JSON line per run in
# results.jsonl, the logs, and a summary. Exit status 0 only if every run matched and took
# the path it was asked for.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/target/gpu-check}
mkdir -p "$OUT"
HDF5=${GPU_CHECK_HDF5:-$ROOT/.deps/hdf5-2.2.0}
PREFIX=${GPU_CHECK_PREFIX:-$ROOT/build/hdf5-2.2.0/prefix}
WORK=${GPU_CHECK_DIR:-$ROOT/target/gpu-check-data}
SIZES=${GPU_CHECK_MIB:-64 1024 4096}

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU on this machine: the device checks are skipped (not run)."
  exit 0
fi
for need in "$HDF5/include/hdf5.h" "$PREFIX/lib/h5tile/plugins/libh5tile_gds.so"; do
  [ -e "$need" ] || { echo "gpu-check: $need is missing (run 'make stage' and carry it)"; exit 2; }
done
command -v nvcc >/dev/null || { echo "gpu-check: nvcc not found"; exit 2; }

{
  nvidia-smi -L
  nvcc --version | tail -2
  echo "cuFile libraries the loader knows:"; ldconfig -p | grep -i cufile || echo "  (none)"
  uname -r
} 2>&1 | tee "$OUT/machine.txt"

mkdir -p "$WORK"
nvcc -O2 -o "$WORK/plugin_device" scripts/gpu/plugin_device.cu -I"$HDF5/include" \
  -L"$HDF5/lib" -lhdf5 -Xlinker -rpath="$HDF5/lib" 2>&1 | tee "$OUT/build.log" || exit 2
[ -x "$WORK/plugin_device" ] || { echo "gpu-check: build failed"; exit 2; }

export HDF5_PLUGIN_PATH="$PREFIX/lib/h5tile/plugins" H5TILE_LOG=info
: > "$OUT/results.jsonl"
failures=0
for mib in $SIZES; do
  for config in gds=on gds=off; do
    path=compat; [ "$config" = gds=on ] && path=gds
    log="$OUT/log-$mib-${config/=/_}.txt"
    timeout 240 "$WORK/plugin_device" "$WORK/check.h5" "$mib" "$config" \
      >>"$OUT/results.jsonl" 2>"$log"
    status=$?
    if [ $status -ne 0 ]; then
      echo "FAIL  $mib MiB $config: exit $status"; sed 's/^/      /' "$log" | tail -15
      failures=$((failures + 1))
    elif ! grep -q "device memory path=$path" "$log"; then
      echo "FAIL  $mib MiB $config: the log does not show path=$path"; tail -5 "$log"
      failures=$((failures + 1))
    else
      echo "ok    $mib MiB $config: $(tail -1 "$OUT/results.jsonl")"
    fi
  done
done
rm -rf "$WORK/check.h5"
echo "gpu-check: $failures failed" | tee "$OUT/summary.txt"
[ $failures -eq 0 ]
