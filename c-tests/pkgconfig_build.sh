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
cat > "$work/hello.c" <<'EOF'
#include <h5tile.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    char path[4096];
    if (argc < 2 || snprintf(path, sizeof path, "%s/hello.h5", argv[1]) >= (int)sizeof path)
        return 2;
    const uint64_t shape[2] = {3, 4}, zero[2] = {0, 0};
    double out[12], in[12];
    for (int i = 0; i < 12; i++) out[i] = i * 0.5 - 1.0;
    h5tile_status s = h5tile_write(MPI_COMM_NULL, path, "/hello", H5TILE_FLOAT64, 2, shape, zero,
                                   shape, out, NULL);
    if (s != H5TILE_OK) {
        printf("write: %s: %s\n", h5tile_status_name(s), h5tile_last_error());
        return 1;
    }
    s = h5tile_read(MPI_COMM_NULL, path, "/hello", H5TILE_FLOAT64, 2, zero, shape, in, NULL);
    if (s != H5TILE_OK) {
        printf("read: %s: %s\n", h5tile_status_name(s), h5tile_last_error());
        return 1;
    }
    if (memcmp(in, out, sizeof in) != 0) {
        printf("values differ\n");
        return 1;
    }
    printf("OK %s\n", h5tile_version());
    return 0;
}
EOF

PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
export PKG_CONFIG_PATH
flags=$("$pkgconfig" --cflags --libs h5tile)
echo "pkg-config --cflags --libs h5tile: $flags"
version=$("$pkgconfig" --modversion h5tile)
# shellcheck disable=SC2086  # the flags are meant to split
"$mpicc" -std=c11 -Wall -Wextra -Werror -o "$work/hello" "$work/hello.c" $flags

# No LD_LIBRARY_PATH: the library must be found through the rpath pkg-config gave.
out=$(env -u LD_LIBRARY_PATH "$work/hello" "$work")
echo "$out"
if [ "$out" != "OK $version" ]; then
    echo "pkgconfig_build: expected 'OK $version', got '$out'" >&2
    exit 1
fi
[ -f "$work/hello.h5" ] || { echo "pkgconfig_build: hello.h5 was not written" >&2; exit 1; }
echo "pkgconfig_build: OK"
