#!/usr/bin/env bash
# Builds HDF5 as a shared library with zlib (deflate) into .deps/hdf5-<version>, from the
# source shipped inside the published crate hdf5-metno-src (0.10.4 carries HDF5 2.2.0,
# 0.9.4 carries 1.14.5). Selected by HDF5_VERSION (default 2.2.0). Skipped when the prefix
# is whole, or when HDF5_DIR already points at an HDF5 >= 1.14. The build is kept in the cache
# (scripts/cache.sh: ~/.cache/h5tile/hdf5-<version>-<key of the flags and compiler>) and
# .deps/hdf5-<version> links to it; H5TILE_CACHE=off builds into .deps/hdf5-<version> itself.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps="$root/.deps"
# shellcheck source=scripts/cache.sh
. "$root/scripts/cache.sh"
version=${HDF5_VERSION:-2.2.0}

prefix="$deps/hdf5-$version"

# An HDF5_DIR other than our own prefix names an installed HDF5: check it, build nothing.
if [ -n "${HDF5_DIR:-}" ] && [ "$(realpath -m "$HDF5_DIR")" != "$(realpath -m "$prefix")" ]; then
  hdr="$HDF5_DIR/include/H5public.h"
  major=$(awk '/#define H5_VERS_MAJOR/{print $3}' "$hdr" 2>/dev/null || true)
  minor=$(awk '/#define H5_VERS_MINOR/{print $3}' "$hdr" 2>/dev/null || true)
  if [ -n "$major" ] && [ -n "$minor" ] && { [ "$major" -gt 1 ] || [ "$minor" -ge 14 ]; }; then
    exit 0
  fi
  echo "build-hdf5: HDF5_DIR=$HDF5_DIR is not an HDF5 >= 1.14 (no $hdr of version >= 1.14)" >&2
  exit 1
fi

case "$version" in
  2.2.0) crate_version=0.10.4 ;;
  1.14.5) crate_version=0.9.4 ;;
  *) echo "build-hdf5: HDF5_VERSION=$version is not one the project builds (2.2.0 or 1.14.5)" >&2
     exit 1 ;;
esac

cmake_bin="$deps/venv/bin/cmake"
[ -x "$cmake_bin" ] || cmake_bin=cmake
# What the build is made with: an entry of the cache is keyed by all of it.
flags=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_LIBDIR=lib
  -DBUILD_SHARED_LIBS=ON -DBUILD_STATIC_LIBS=OFF -DONLY_SHARED_LIBS=ON
  -DBUILD_TESTING=OFF -DHDF5_BUILD_TOOLS=OFF -DHDF5_BUILD_EXAMPLES=OFF
  -DHDF5_BUILD_UTILS=OFF -DHDF5_BUILD_HL_LIB=OFF -DHDF5_BUILD_FORTRAN=OFF
  -DHDF5_BUILD_CPP_LIB=OFF -DHDF5_BUILD_JAVA=OFF -DHDF5_ENABLE_PARALLEL=OFF
  -DHDF5_NO_PACKAGES=ON -DHDF5_ALLOW_EXTERNAL_SUPPORT=NO -DZLIB_USE_EXTERNAL=OFF
  -DHDF5_ENABLE_ZLIB_SUPPORT=ON -DHDF5_ENABLE_Z_LIB_SUPPORT=ON
  -DHDF5_ENABLE_SZIP_SUPPORT=OFF)

# HDF5 installed into folder $1, unless it is already there whole (its manifest checks).
build_into() {
  local dest=$1
  if h5tile_manifest_check "$dest"; then
    return 0
  fi
  if [ -e "$dest" ]; then
    echo "build-hdf5: $dest is partial or damaged (its files do not match its manifest): building it again"
  fi
  # Ask cargo for the published crate; its unpacked source holds HDF5 under ext/hdf5.
  local fetch="$deps/fetch-hdf5-src-$crate_version"
  mkdir -p "$fetch/src"
  cat > "$fetch/Cargo.toml" <<TOML
[package]
name = "fetch-hdf5-src"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
hdf5-metno-src = "=$crate_version"
[workspace]
TOML
  : > "$fetch/src/lib.rs"
  (cd "$fetch" && cargo fetch -q)
  local src_dir src
  src_dir=$(cd "$fetch" && cargo metadata -q --format-version 1 |
    python3 -c 'import json,sys,os
m=json.load(sys.stdin)
print(next(os.path.dirname(p["manifest_path"]) for p in m["packages"] if p["name"]=="hdf5-metno-src"))')
  src="$src_dir/ext/hdf5"
  [ -f "$src/CMakeLists.txt" ] || { echo "build-hdf5: no HDF5 source in $src_dir" >&2; exit 1; }

  local build="$deps/build-hdf5-$version"
  rm -rf "$build" "$dest"
  echo "build-hdf5: building HDF5 $version (shared, zlib) into $dest; this takes a few minutes"
  "$cmake_bin" -S "$src" -B "$build" -DCMAKE_INSTALL_PREFIX="$dest" "${flags[@]}" > "$build.log" 2>&1 ||
    { tail -40 "$build.log"; exit 1; }
  "$cmake_bin" --build "$build" -j "$(nproc)" >> "$build.log" 2>&1 || { tail -40 "$build.log"; exit 1; }
  "$cmake_bin" --install "$build" >> "$build.log" 2>&1 || { tail -40 "$build.log"; exit 1; }
  grep -q "define H5_HAVE_FILTER_DEFLATE" "$dest/include/H5pubconf.h" ||
    { echo "build-hdf5: HDF5 was built without deflate" >&2; exit 1; }
  rm -rf "$build"
  h5tile_manifest_write "$dest"
  echo "build-hdf5: HDF5 $version installed in $dest"
}

# Kept in the cache, shared by every clone on the machine: .deps/hdf5-<version> links to it.
h5tile_cached "$prefix" "hdf5-$version-$(h5tile_cache_key "$crate_version" "${flags[@]}" \
  "$(cc --version | head -1)" "$(uname -m)")" h5tile_manifest_check build_into
