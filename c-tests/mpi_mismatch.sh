#!/bin/sh
# A program built with another MPI than libh5tile's is refused when it is built, with a message
# that says which MPI to use, never left to crash at run time:
#   1. pkg-config's flags with the other MPI's mpicc: h5tile.h's #error;
#   2. find_package(H5Tile) in a project whose FindMPI found the other MPI: a configure error.
# usage: mpi_mismatch.sh PREFIX OTHER_MPICC PKG_CONFIG CMAKE SCRATCH_DIR
set -eu
prefix=$1 other_mpicc=$2 pkgconfig=$3 cmake=$4 work=$5

rm -rf "$work"
mkdir -p "$work/project"
cat > "$work/project/main.c" <<'SRC'
#include <h5tile.h>
int main(void) { return h5tile_version() == 0; }
SRC
cp "$work/project/main.c" "$work/main.c"

PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
export PKG_CONFIG_PATH
flags=$("$pkgconfig" --cflags --libs h5tile)
# shellcheck disable=SC2086  # the flags are meant to split
if "$other_mpicc" -o "$work/main" "$work/main.c" $flags > "$work/pkgconfig.log" 2>&1; then
    echo "mpi_mismatch: $other_mpicc compiled against h5tile built with $("$pkgconfig" --variable=mpi h5tile)" >&2
    exit 1
fi
grep -q "libh5tile was built with $("$pkgconfig" --variable=mpi h5tile) but this program includes another MPI" "$work/pkgconfig.log" || {
    echo "mpi_mismatch: $other_mpicc failed without h5tile.h's message:" >&2
    cat "$work/pkgconfig.log" >&2
    exit 1
}
echo "pkg-config + $other_mpicc refused:"
grep "#error" "$work/pkgconfig.log" | head -1

cat > "$work/project/CMakeLists.txt" <<'SRC'
cmake_minimum_required(VERSION 3.26)
project(mismatch LANGUAGES C)
find_package(MPI REQUIRED COMPONENTS C)
find_package(H5Tile REQUIRED)
add_executable(mismatch main.c)
target_link_libraries(mismatch PRIVATE H5Tile::h5tile)
SRC
if "$cmake" -S "$work/project" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" \
        -DMPI_C_COMPILER="$other_mpicc" > "$work/cmake.log" 2>&1; then
    echo "mpi_mismatch: a project that found $other_mpicc's MPI configured against h5tile" >&2
    exit 1
fi
grep -q "libh5tile was built with" "$work/cmake.log" || {
    echo "mpi_mismatch: configuring failed without the package's message:" >&2
    cat "$work/cmake.log" >&2
    exit 1
}
echo "find_package(H5Tile) after FindMPI found $other_mpicc's MPI refused:"
grep -A3 "libh5tile was built with" "$work/cmake.log" | head -4
echo "mpi_mismatch: OK"
