#!/usr/bin/env bash
# GPU check of h5tile's device paths, for a machine with an NVIDIA GPU and the CUDA toolkit
# (nvcc); the gds path also needs cuFile. CI has no GPU: there this script says so and exits 0.
#
# The GPU machine has no Rust, HDF5 or MPI: this script carries its own build.
#   1. here:            make stage && bash scripts/gpu-check.sh --pack
#                       (copies the libraries and headers into target/gpu-carry, about 13 MiB)
#   2. on the GPU box:  bash scripts/gpu-check.sh          (with target/gpu-carry beside it)
# `make gpu-build` (part of CI) runs `--build` on a machine without a GPU: it compiles the check
# programs with nvcc (NVIDIA's PyPI wheels, installed into .deps/cuda, where there is no nvcc)
# and probes gds=on against the real libcufile, which must refuse for want of libcuda.
#
# What it runs (on an H200, builds included: 183 s where cuFile refused every file, 227 s
# through cuFile; 61 s with GPU_CHECK_MIB=64 GPU_CHECK_GIB=1; sizes in GPU_CHECK_MIB and
# GPU_CHECK_GIB, each run's time limit in GPU_CHECK_TIMEOUT, 300 s):
#   - a probe: the plugin opens a file with gds=on, which says whether cuFile can be used here
#     (where it cannot, gds=on must be refused, H5TILE_GDS=on too, and auto must take compat).
#     In a VM without udevd cuFile refuses every file for want of udev's entry for the disk:
#     there the check runs those refusals, then writes that one entry (GPU_CHECK_UDEV_ENTRY=0
#     does not) and probes again, so that cuFile's own transfers run too;
#   - the plugin alone: an ordinary HDF5 program writes a device buffer of 64 MiB, 1 GiB and
#     4 GiB through h5tile_gds and reads it back into device memory, with gds=on and with
#     gds=off (compat), bytes compared on the device, bandwidth beside pread + cudaMemcpy;
#     then 64 MiB from a stream-ordered pool (cudaMallocAsync: memory of no context);
#   - h5tile's API: a 4 GiB float64 field written from device memory as 4 tiles and read back
#     as 4 column slabs, and one 1 GiB tile (read whole, then in chunks by h5tile_batches_next;
#     and in the single-file layout), with H5TILE_GDS=auto, on and off; then one flipped bit in
#     each layout's file: where the compat path wrote the bytes (and summed them in its pinned
#     buffers) the read must be H5TILE_ERR_CORRUPT, where cuFile did it returns the damage;
#   - snapshot writes (scripts/gpu/snapshot_device.cu): a 1 GiB device tile written with
#     H5TILE_SNAPSHOT four times, each call timed from call to return against cudaMemcpy of
#     the same bytes device to device and device to host, the tile overwritten as each call
#     returns, and each file read back as the tile was at its call;
#   - the Python package (scripts/gpu/python_device.py), where this machine's python3 has numpy:
#     memory from cudaMalloc behind __cuda_array_interface__ v3 written while its producer's
#     stream may still fill it, read back into device memory whole and as a box; with CuPy
#     also like=, DLPack, a non-contiguous array and batches. Without numpy: skipped, saying so;
#   - in every run the driver's log (H5TILE_LOG=info) must name the path asked for.
# Results go to $OUT (or target/gpu-check): machine.txt, build.log, results.jsonl, summary.txt
# and logs.tar.gz (one log per run, and cuFile's cufile.log).
# Exit status 0 only if every run matched and took the path it was asked for.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CARRY=$ROOT/target/gpu-carry

if [ "${1:-}" = --pack ]; then
  HDF5=${HDF5_DIR:-$ROOT/.deps/hdf5-2.2.0}
  STAGE=${STAGE:-$ROOT/build/hdf5-2.2.0/prefix}
  MPI_INC=$(mpicc --showme:incdirs | awk '{print $1}')
  rm -rf "$CARRY" && mkdir -p "$CARRY/lib/plugins" "$CARRY/include"
  cp -L "$STAGE/lib/libh5tile.so.0" "$CARRY/lib/" # under its soname, which programs record
  for f in "$HDF5"/lib/libhdf5.so.*; do # the soname only (libhdf5.so.320), not its target
    case ${f##*/} in libhdf5.so.*.*) ;; *) cp -L "$f" "$CARRY/lib/" ;; esac
  done
  cp -L "$STAGE/lib/h5tile/plugins/libh5tile_gds.so" "$CARRY/lib/plugins/"
  # Open MPI's libraries, for libh5tile's link (the checks run without MPI: MPI_COMM_NULL).
  ldd "$STAGE/lib/libh5tile.so" | awk '/libmpi|libopen-|libhwloc|libevent|libudev/ {print $3}' |
    xargs -I{} cp -L {} "$CARRY/lib/"
  strip --strip-debug "$CARRY"/lib/*.so* "$CARRY"/lib/plugins/*.so
  cp "$STAGE/include/h5tile.h" "$HDF5"/include/*.h "$CARRY/include/"
  cp "$MPI_INC"/mpi.h "$MPI_INC"/mpi_portable_platform.h "$MPI_INC"/mpi-ext.h "$CARRY/include/" 2>/dev/null
  # The Python package (it finds the carried library through H5TILE_LIBRARY).
  mkdir -p "$CARRY/python" && cp -r "$ROOT/python/h5tile" "$CARRY/python/" &&
    rm -rf "$CARRY/python/h5tile/__pycache__"
  du -sh "$CARRY"
  echo "carry target/gpu-carry to the GPU machine and run: bash scripts/gpu-check.sh"
  exit 0
fi

OUT=${OUT:-$ROOT/target/gpu-check}
WORK=${GPU_CHECK_DIR:-$ROOT/target/gpu-check-data}
SIZES=${GPU_CHECK_MIB:-64 1024 4096}
GIB=${GPU_CHECK_GIB:-4}
BUILD_ONLY=; [ "${1:-}" = --build ] && BUILD_ONLY=1
TOOLKIT=$ROOT/.deps/cuda # NVIDIA's PyPI wheels, for --build where no toolkit is installed
mkdir -p "$OUT" "$WORK"

if [ -z "$BUILD_ONLY" ] && { ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; }; then
  echo "gpu-check: no NVIDIA GPU on this machine: the device checks are skipped (not run)."
  exit 0
fi
[ -e "$CARRY/lib/libh5tile.so.0" ] || { echo "gpu-check: $CARRY is missing (run --pack where h5tile was built)"; exit 2; }

if [ -n "$BUILD_ONLY" ] && ! command -v nvcc >/dev/null; then
  # Kept in the cache (scripts/cache.sh) like the project's venv: .deps/cuda links to it. It is
  # whole with CUDA 13 and a libcufile, which nvidia-cufile 1.20 puts in nvidia/cu13/lib and
  # earlier wheels in nvidia/cufile/lib (there is no nvidia.cufile module any more).
  . scripts/cache.sh
  mkdir -p "$(dirname "$TOOLKIT")"
  whole='import glob, os, nvidia.cu13 as cu
assert glob.glob(os.path.join(list(cu.__path__)[0], "..", "*", "lib", "libcufile.so*"))'
  h5tile_cached_venv "$TOOLKIT" cuda "$whole" nvidia-cuda-nvcc \
    nvidia-cuda-runtime nvidia-cuda-crt nvidia-nvvm nvidia-cuda-cccl nvidia-cufile ||
    { echo "gpu-check: installing nvcc, the CUDA runtime and cuFile from PyPI failed"; exit 2; }
  cu=$("$TOOLKIT/bin/python" -c 'import nvidia.cu13 as m; print(list(m.__path__)[0])')
  export PATH="$cu/bin:$PATH" LD_LIBRARY_PATH="$cu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export NVCC_FLAGS="-I$cu/include -L$cu/lib"
fi
command -v nvcc >/dev/null || { echo "gpu-check: nvcc not found"; exit 2; }

{
  if [ -z "$BUILD_ONLY" ]; then nvidia-smi -L; fi
  nvcc --version | tail -2
  echo "cuFile libraries the loader knows:"; ldconfig -p | grep -i cufile || echo "  (none)"
  echo "nvidia-fs (GPUDirect without it is cuFile's own compat mode): $(head -1 /proc/driver/nvidia-fs/version 2>/dev/null || echo not loaded)"
  uname -r; df -h "$WORK" | tail -1
} 2>&1 | tee "$OUT/machine.txt"

# nvcc takes the libraries to link as linker arguments (it refuses a versioned .so name).
LINK=$(for lib in "$CARRY"/lib/*.so*; do printf -- '-Xlinker %s ' "$lib"; done)
build() {
  rm -f "$WORK/$1"
  # shellcheck disable=SC2086
  nvcc -O2 -DOMPI_SKIP_MPICXX ${NVCC_FLAGS:-} -o "$WORK/$1" "scripts/gpu/$1.cu" \
    -I"$CARRY/include" $LINK -Xlinker -rpath="$CARRY/lib" 2>&1 | tee -a "$OUT/build.log"
  [ -x "$WORK/$1" ] || { echo "gpu-check: building $1 failed"; exit 2; }
  echo "gpu-check: built $1"
}
: > "$OUT/build.log"
build plugin_device
build h5tile_device
build snapshot_device

export HDF5_PLUGIN_PATH="$CARRY/lib/plugins" H5TILE_LOG=info LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# h5tile loads cuFile by the name the CUDA toolkit installs (libcufile.so). Where only the
# versioned library is there (the nvidia-cufile wheel ships libcufile.so.0), name it so.
if ! ldconfig -p | grep -q 'libcufile\.so '; then
  found=$( (for d in ${LD_LIBRARY_PATH//:/ }; do ls "$d"/libcufile.so.[0-9]* 2>/dev/null; done;
            ldconfig -p | awk '/libcufile\.so\.[0-9]/ {print $NF; exit}';
            python3 -c 'import nvidia.cufile, glob, os; print(*glob.glob(os.path.join(list(nvidia.cufile.__path__)[0], "lib", "libcufile.so*"))[:1])' 2>/dev/null) | head -1)
  if [ -n "$found" ]; then
    mkdir -p "$WORK/cufile" && ln -sf "$found" "$WORK/cufile/libcufile.so"
    export LD_LIBRARY_PATH="$WORK/cufile:$(dirname "$found"):$LD_LIBRARY_PATH"
    echo "gpu-check: using $found as libcufile.so" | tee -a "$OUT/machine.txt"
  fi
fi

: > "$OUT/results.jsonl"
failures=0
# check NAME PATH COMMAND...: runs COMMAND, its JSON line to results.jsonl, its stderr to a log
# that must show "device memory path=PATH".
check() {
  local name=$1 path=$2; shift 2
  local log="$OUT/log-$name.txt"
  timeout "${GPU_CHECK_TIMEOUT:-300}" "$@" >>"$OUT/results.jsonl" 2>"$log"
  local status=$?
  if [ $status -ne 0 ]; then
    echo "FAIL  $name: exit $status"; tail -15 "$log" | sed 's/^/      /'
    failures=$((failures + 1))
  elif ! grep -q "device memory path=$path" "$log"; then
    echo "FAIL  $name: the log does not show path=$path"; tail -5 "$log" | sed 's/^/      /'
    failures=$((failures + 1))
  else
    echo "ok    $name: $(tail -1 "$OUT/results.jsonl")"
  fi
}
# refused NAME DIR COMMAND...: where cuFile cannot be used, COMMAND (an h5tile call with
# H5TILE_GDS=on writing into the empty folder DIR) must fail with H5TILE_ERR_CUDA and the
# reason, and leave nothing in DIR.
refused() {
  local name=$1 dir=$2; shift 2
  local log="$OUT/log-$name.txt"
  timeout "${GPU_CHECK_TIMEOUT:-300}" "$@" >/dev/null 2>"$log"
  local status=$?
  local left; left=$(find "$dir" -mindepth 1 | head -3)
  if [ -n "$left" ]; then
    echo "FAIL  $name: the refused write left files behind: $left"
    failures=$((failures + 1))
  elif [ $status -ne 0 ] && grep -q "cannot be used" "$log" && grep -q ERR_CUDA "$log"; then
    echo "ok    $name: refused as it must ($refusal)"
  else
    echo "FAIL  $name: exit $status without the refusal"; tail -5 "$log" | sed 's/^/      /'
    failures=$((failures + 1))
  fi
}
# The probe: gds=on opens only where cuFile can be used; elsewhere it is refused with the
# reason, before the file is created.
probe=$WORK/probe.h5
run_probe() { # LOG [ENV=VALUE...]: the plugin opens $probe with gds=on; its status
  local log=$1; shift
  rm -f "$probe"
  env "$@" "$WORK/plugin_device" "$probe" 0 gds=on >/dev/null 2>"$log"
}
run_probe "$OUT/log-probe.txt"
probe_status=$?
refusal=$(grep -o "gds=on, but cuFile cannot be used: [^']*" "$OUT/log-probe.txt" | head -1)
if [ $probe_status -eq 0 ] && grep -q "path=gds" "$OUT/log-probe.txt"; then
  GDS=1; echo "gpu-check: cuFile can be used here" | tee -a "$OUT/machine.txt"
elif [ $probe_status -eq 3 ] && [ -n "$refusal" ] && [ ! -e "$probe" ]; then
  GDS=; echo "gpu-check: $refusal" | tee -a "$OUT/machine.txt"
else
  echo "FAIL  probe: gds=on neither opened through cuFile nor was refused cleanly (exit $probe_status)"
  tail -15 "$OUT/log-probe.txt" | sed 's/^/      /'
  exit 1
fi
# cuFile asks udev's database for the file system of the file's block device (ID_FS_USAGE);
# in a VM or container without udevd there is no database, and cuFile refuses every file,
# even in its compat mode ("udev property not found" in cufile.log). There, unless
# GPU_CHECK_UDEV_ENTRY=0, the check first runs its refusal checks, then writes the one entry
# cuFile needs for the work folder's device, so that h5tile's cuFile calls run too. It never
# touches a machine whose udev keeps a database (/run/udev exists).
if [ -z "$GDS" ] && [ -z "$BUILD_ONLY" ] && [ "${GPU_CHECK_UDEV_ENTRY:-1}" != 0 ] && [ ! -e /run/udev ]; then
  check "plugin-64-gds_auto-refused" compat "$WORK/plugin_device" "$WORK/check.h5" 64 gds=auto
  rm -rf "$WORK/h5tile" && mkdir -p "$WORK/h5tile"
  H5TILE_GDS=on refused "h5tile-on-refused" "$WORK/h5tile" "$WORK/h5tile_device" "$WORK/h5tile" "$GIB" gds
  majmin=$(findmnt -n -o MAJ:MIN --target "$WORK" 2>/dev/null | tr -d "[:space:]")
  fstype=$(findmnt -n -o FSTYPE --target "$WORK" 2>/dev/null | tr -d "[:space:]")
  if [ -n "$majmin" ]; then
    trap 'rm -rf /run/udev' EXIT # gone again when the check ends
    mkdir -p /run/udev/data &&
      printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=%s\n' "$fstype" > "/run/udev/data/b$majmin"
    if run_probe "$OUT/log-probe-udev_entry.txt" && grep -q "path=gds" "$OUT/log-probe-udev_entry.txt"; then
      GDS=1
      echo "gpu-check: cuFile can be used once udev's entry for block device $majmin ($fstype) is written (/run/udev/data/b$majmin)" |
        tee -a "$OUT/machine.txt"
    else
      rm -rf /run/udev
      echo "gpu-check: udev's entry for block device $majmin did not make cuFile accept the file" | tee -a "$OUT/machine.txt"
    fi
  else
    echo "gpu-check: findmnt names no block device for $WORK: no udev entry written" | tee -a "$OUT/machine.txt"
  fi
fi
if [ -z "$GDS" ] && [ -z "$BUILD_ONLY" ]; then
  # cuFile may still work in its own compat mode (its POSIX path, as without nvidia-fs): then
  # h5tile's cuFile calls run there too, after the checks of this machine's refusal.
  printf '{ "properties": { "allow_compat_mode": true, "force_compat_mode": true } }\n' > "$WORK/cufile.json"
  if run_probe "$OUT/log-probe-cufile_compat.txt" CUFILE_ENV_PATH_JSON="$WORK/cufile.json" CUFILE_FORCE_COMPAT_MODE=true; then
    CUFILE_COMPAT=1; echo "gpu-check: cuFile can be used in its compat mode" | tee -a "$OUT/machine.txt"
  fi
fi
if [ -n "$BUILD_ONLY" ]; then
  # Without a GPU there is no libcuda, so cuFile cannot be used: the refusal must say so.
  if [ -n "$GDS" ] || ! grep -q "libcuda.so" <<<"$refusal"; then
    echo "FAIL  probe: without libcuda gds=on must be refused naming libcuda.so"; exit 1
  fi
  echo "gpu-check: built the check programs; the probe refused gds=on as it must (no GPU: nothing else runs)"
  exit 0
fi

auto_path=compat; [ -n "$GDS" ] && auto_path=gds
for mib in $SIZES; do
  if [ -n "$GDS" ]; then
    check "plugin-$mib-gds_on" gds "$WORK/plugin_device" "$WORK/check.h5" "$mib" gds=on
  fi
  check "plugin-$mib-gds_auto" $auto_path "$WORK/plugin_device" "$WORK/check.h5" "$mib" gds=auto
  check "plugin-$mib-gds_off" compat "$WORK/plugin_device" "$WORK/check.h5" "$mib" gds=off
done
# Pool memory (cudaMallocAsync) belongs to no context: the driver must still recognise it.
check "plugin-64-pool-gds_auto" $auto_path "$WORK/plugin_device" "$WORK/check.h5" 64 gds=auto pool
check "plugin-64-pool-gds_off" compat "$WORK/plugin_device" "$WORK/check.h5" 64 gds=off pool
for mode in auto on off; do
  path=gds; { [ $mode = off ] || [ -z "$GDS" ]; } && path=compat
  rm -rf "$WORK/h5tile" && mkdir -p "$WORK/h5tile"
  if [ $mode = on ] && [ -z "$GDS" ]; then
    H5TILE_GDS=on refused "h5tile-on" "$WORK/h5tile" "$WORK/h5tile_device" "$WORK/h5tile" "$GIB" gds
  else
    H5TILE_GDS=$mode check "h5tile-$mode" $path "$WORK/h5tile_device" "$WORK/h5tile" "$GIB" $path
  fi
done
# Snapshots of device memory: the call returns once the tile is staged; the file holds the
# tile as it was at the call, though a kernel rewrote it as the call returned.
rm -rf "$WORK/snapshot" && mkdir -p "$WORK/snapshot"
if timeout "${GPU_CHECK_TIMEOUT:-300}" "$WORK/snapshot_device" "$WORK/snapshot" 1 \
     >>"$OUT/results.jsonl" 2>"$OUT/log-snapshot.txt" &&
   grep -q "copied from device memory" "$OUT/log-snapshot.txt"; then
  echo "ok    snapshot: $(tail -1 "$OUT/results.jsonl")"
else
  echo "FAIL  snapshot"; tail -15 "$OUT/log-snapshot.txt" | sed 's/^/      /'
  failures=$((failures + 1))
fi
rm -rf "$WORK/snapshot"
if [ -z "$GDS" ] && [ -n "${CUFILE_COMPAT:-}" ]; then
  export CUFILE_ENV_PATH_JSON="$WORK/cufile.json" CUFILE_FORCE_COMPAT_MODE=true
  for mib in $SIZES; do
    check "plugin-$mib-gds_on-cufile_compat" gds "$WORK/plugin_device" "$WORK/check.h5" "$mib" gds=on
  done
  check "plugin-64-pool-gds_on-cufile_compat" gds "$WORK/plugin_device" "$WORK/check.h5" 64 gds=on pool
  rm -rf "$WORK/h5tile" && mkdir -p "$WORK/h5tile"
  H5TILE_GDS=on check "h5tile-on-cufile_compat" gds "$WORK/h5tile_device" "$WORK/h5tile" "$GIB" gds
fi
if python3 -c 'import numpy' 2>/dev/null; then
  rm -rf "$WORK/python" && mkdir -p "$WORK/python"
  PYTHONPATH="$CARRY/python" H5TILE_LIBRARY="$CARRY/lib/libh5tile.so.0" H5TILE_GDS=auto \
    check "python-${GIB}GiB" $auto_path python3 scripts/gpu/python_device.py "$WORK/python" $((GIB * 1024))
  rm -rf "$WORK/python"
else
  echo "skip  python: this machine's python3 has no numpy, so the Python package's device check did not run" |
    tee -a "$OUT/machine.txt"
fi
rm -rf "$WORK/check.h5" "$WORK/h5tile"
# The logs go back as one archive, with cuFile's own log (written where the programs ran): a
# lent device machine hands back only a few files.
[ -f cufile.log ] && mv cufile.log "$OUT/log-cufile.txt"
(cd "$OUT" && tar -czf logs.tar.gz log-*.txt && rm -f log-*.txt)
echo "gpu-check: $failures failed" | tee "$OUT/summary.txt"
[ $failures -eq 0 ]
