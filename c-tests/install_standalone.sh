#!/bin/sh
# The installed prefix stands alone: a copy of it (cp -a, into a temporary folder outside the
# clone) works with the clone and the original prefix hidden.
#   1. a small C program built against the copy with `mpicc $(pkg-config --cflags --libs h5tile)`
#      (PKG_CONFIG_PATH=<copy>/lib/pkgconfig) records libh5tile.so.0 (the soname) and finds it
#      in the copy;
#   2. no ELF file of the copy has an rpath naming the clone (when the HDF5 is not bundled, its
#      own lib folder is expected there), and ldd finds libh5tile and libhdf5 in the copy
#      (bundled) or in that HDF5;
#   3. the program (writes a small dataset and reads it back, MPI_COMM_NULL) and the copy's
#      `h5tile ls` on its file run in a mount namespace where a tmpfs hides the clone and the
#      original prefix (unshare -m). Where that is not permitted, it says so and 1-2 stand alone.
# With HDF5_PLUGIN_PATH set (the suite's runs through the h5tile_gds driver) the copy's plugin
# folder is used instead.
# usage: install_standalone.sh PREFIX MPICC PKG_CONFIG CLONE HDF5_BUNDLED HDF5_LIBRARY_DIR
set -u
[ $# -eq 6 ] || { echo "usage: $0 PREFIX MPICC PKG_CONFIG CLONE HDF5_BUNDLED HDF5_LIBRARY_DIR" >&2; exit 2; }
prefix=$(realpath "$1") mpicc=$2 pkgconfig=$3 clone=$(realpath "$4") hdf5lib=$6
case "$5" in ON | on | TRUE | true | YES | yes | 1) bundled=1 ;; *) bundled= ;; esac

failed=0
fail() { echo "install_standalone: FAIL: $*" >&2; failed=$((failed + 1)); }
under() { case "$1/" in "$2"/*) return 0 ;; esac; return 1; } # is path $1 in folder $2?

tmp=$(mktemp -d "${TMPDIR:-/tmp}/h5tile-standalone.XXXXXX") || exit 1
tmp=$(realpath "$tmp")
if under "$tmp" "$clone" || under "$tmp" "$prefix"; then
    rmdir "$tmp"
    tmp=$(realpath "$(mktemp -d /tmp/h5tile-standalone.XXXXXX)") || exit 1
fi
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
if under "$tmp" "$clone"; then
    echo "install_standalone: no temporary folder outside the clone ($tmp)" >&2
    exit 1
fi
cd "$tmp" || exit 1
copy=$tmp/prefix
cp -a "$prefix" "$copy" || { echo "install_standalone: cp -a $prefix $copy failed" >&2; exit 1; }
if [ -n "$bundled" ]; then how="bundled in the prefix"; else how="not bundled: in $hdf5lib"; fi
echo "install_standalone: $prefix copied to $copy (clone $clone; HDF5 $how)"
[ -n "${HDF5_PLUGIN_PATH:-}" ] && export HDF5_PLUGIN_PATH="$copy/lib/h5tile/plugins"

# The layout: the library under its soname, the link -lh5tile finds, the bundled HDF5.
[ -f "$copy/lib/libh5tile.so.0" ] && [ ! -L "$copy/lib/libh5tile.so.0" ] ||
    fail "lib/libh5tile.so.0 is not a file"
[ "$(readlink "$copy/lib/libh5tile.so")" = libh5tile.so.0 ] ||
    fail "lib/libh5tile.so is not a link to libh5tile.so.0"
readelf -d "$copy/lib/libh5tile.so.0" | grep -q '(SONAME).*\[libh5tile\.so\.0\]' ||
    fail "libh5tile.so.0 has no soname libh5tile.so.0"
if [ -n "$bundled" ]; then
    ls "$copy"/lib/h5tile/hdf5/libhdf5.so.* >/dev/null 2>&1 || fail "no lib/h5tile/hdf5/libhdf5.so.*"
fi

# 2. Every installed ELF file's rpath.
find "$copy" -type f > "$tmp/files"
while read -r f; do
    readelf -h "$f" >/dev/null 2>&1 || continue
    rpath=$(readelf -d "$f" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p')
    [ -n "$rpath" ] && echo "  ${f#"$copy"/}: rpath $rpath"
    old_ifs=$IFS
    IFS=:
    for entry in $rpath; do
        if [ -z "$bundled" ] && [ "$entry" = "$hdf5lib" ]; then
            continue
        fi
        case "$entry" in
        *"$clone"*) fail "${f#"$copy"/} has an rpath into the clone: $entry" ;;
        *"$prefix"*) fail "${f#"$copy"/} has an rpath into the original prefix: $entry" ;;
        esac
    done
    IFS=$old_ifs
done < "$tmp/files"

# Where ldd finds library $2 (a name's start) for ELF file $1, as a real folder ('' if nowhere).
found_in() {
    p=$(env -u LD_LIBRARY_PATH ldd "$1" | sed -n "s/^[[:space:]]*$2[^ ]* => \(\/[^ ]*\) .*/\1/p" | head -1)
    [ -n "$p" ] && realpath "$(dirname "$p")"
}
if [ -n "$bundled" ]; then
    hdf5_expected=$copy/lib/h5tile/hdf5
else
    hdf5_expected=$(realpath "$hdf5lib")
fi
check_ldd() { # ELF file, whether it loads libh5tile
    out=$(env -u LD_LIBRARY_PATH ldd "$1" 2>&1)
    if echo "$out" | grep -q "not found"; then
        fail "ldd ${1#"$tmp"/}: a library is not found:"
        echo "$out" >&2
    fi
    if [ "$2" = h5tile ] && [ "$(found_in "$1" libh5tile.so)" != "$copy/lib" ]; then
        fail "ldd ${1#"$tmp"/}: libh5tile not from $copy/lib: $(echo "$out" | grep libh5tile)"
    fi
    if [ "$(found_in "$1" libhdf5.so)" != "$hdf5_expected" ]; then
        fail "ldd ${1#"$tmp"/}: libhdf5 not from $hdf5_expected: $(echo "$out" | grep libhdf5)"
    fi
}
check_ldd "$copy/lib/libh5tile.so.0" -
check_ldd "$copy/bin/h5tile" -

# 1. A program built against the copy with pkg-config.
mkdir -p "$tmp/data-visible" "$tmp/data-hidden"
PKG_CONFIG_PATH="$copy/lib/pkgconfig"
export PKG_CONFIG_PATH
flags=$("$pkgconfig" --cflags --libs h5tile) || fail "pkg-config --cflags --libs h5tile failed"
version=$("$pkgconfig" --modversion h5tile)
echo "pkg-config --cflags --libs h5tile: $flags"
case "$flags" in *"$copy/"*) ;; *) fail "pkg-config's flags do not name the copy $copy" ;; esac
case "$flags" in *"$prefix"* | *"$clone"*) fail "pkg-config's flags name the original: $flags" ;; esac
prog=$tmp/standalone
# shellcheck disable=SC2086  # the flags are meant to split
if ! "$mpicc" -std=c11 -Wall -Wextra -Werror -o "$prog" "$(dirname "$0")/pkgconfig_hello.c" $flags; then
    fail "$mpicc could not build a program against the copy"
    exit 1
fi
readelf -d "$prog" | grep -q '(NEEDED).*\[libh5tile\.so\.0\]' ||
    fail "the program does not need libh5tile.so.0: $(readelf -d "$prog" | grep NEEDED)"
check_ldd "$prog" h5tile

expect_ok() { # what, output (its stderr is in $tmp/stderr)
    if [ "$2" != "OK $version" ]; then
        fail "$1: expected 'OK $version', got: $2"
        cat "$tmp/stderr" >&2
    fi
}
out=$(env -u LD_LIBRARY_PATH "$prog" "$tmp/data-visible" 2>"$tmp/stderr")
expect_ok "the program (clone visible)" "$out"
if ! env -u LD_LIBRARY_PATH "$copy/bin/h5tile" ls "$tmp/data-visible/hello.h5" 2>"$tmp/stderr" |
    grep -q "/hello"; then
    fail "the copy's h5tile ls failed (clone visible)"
    cat "$tmp/stderr" >&2
fi

# 3. The same with the clone and the original prefix hidden (a tmpfs over each).
hidden() {
    unshare -m sh -c '
        clone=$1 prefix=$2
        shift 2
        mount -t tmpfs none "$clone" || exit 97
        case "$prefix/" in "$clone"/*) ;; *) mount -t tmpfs none "$prefix" || exit 97 ;; esac
        if [ -n "$(ls -A "$clone")" ]; then echo "the clone is still visible"; exit 98; fi
        exec env -u LD_LIBRARY_PATH "$@"' sh "$clone" "$prefix" "$@" 2>"$tmp/stderr"
}
mkdir "$tmp/probe"
if ! unshare -m mount -t tmpfs none "$tmp/probe" 2>/dev/null; then
    echo "install_standalone: unshare not permitted, checked with ldd only"
elif [ -z "$bundled" ] && under "$(realpath "$hdf5lib")" "$clone"; then
    echo "install_standalone: the HDF5 used ($hdf5lib) lies in the clone: not run with the clone hidden"
else
    out=$(hidden "$prog" "$tmp/data-hidden")
    echo "the program (clone and prefix hidden): $out"
    expect_ok "the program (clone and prefix hidden)" "$out"
    out=$(hidden "$copy/bin/h5tile" ls "$tmp/data-hidden/hello.h5")
    rc=$?
    echo "h5tile ls (clone and prefix hidden): $out"
    if [ $rc -ne 0 ] || ! echo "$out" | grep -q "/hello"; then
        fail "the copy's h5tile ls failed with the clone hidden (exit $rc): $out"
        cat "$tmp/stderr" >&2
    fi
    [ -e "$tmp/data-hidden/hello.h5" ] || fail "the program wrote nothing with the clone hidden"
fi

if [ "$failed" -ne 0 ]; then
    echo "install_standalone: $failed check(s) failed" >&2
    exit 1
fi
echo "install_standalone: OK"
