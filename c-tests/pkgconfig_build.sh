#!/bin/sh
# A user's build without CMake: compile a tiny C program against the installed prefix with
#   mpicc $(pkg-config --cflags --libs h5tile)
# run it (no launcher, MPI_COMM_NULL: it writes and reads back a small array) and check it
# prints OK.
# usage: pkgconfig_build.sh PREFIX MPICC PKG_CONFIG SCRATCH_DIR
set -eu
prefix=$1 mpicc=$2 pkgconfig=$3 work=$4

rm -rf "$work"
mkdir -p "$work"

PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
export PKG_CONFIG_PATH
flags=$("$pkgconfig" --cflags --libs h5tile)
echo "pkg-config --cflags --libs h5tile: $flags"
version=$("$pkgconfig" --modversion h5tile)
# shellcheck disable=SC2086  # the flags are meant to split
"$mpicc" -std=c11 -Wall -Wextra -Werror -o "$work/hello" "$(dirname "$0")/pkgconfig_hello.c" $flags

# No LD_LIBRARY_PATH: the library must be found through the rpath pkg-config gave.
out=$(env -u LD_LIBRARY_PATH "$work/hello" "$work")
echo "$out"
if [ "$out" != "OK $version" ]; then
    echo "pkgconfig_build: expected 'OK $version', got '$out'" >&2
    exit 1
fi
[ -f "$work/hello.h5" ] || { echo "pkgconfig_build: hello.h5 was not written" >&2; exit 1; }
echo "pkgconfig_build: OK"
