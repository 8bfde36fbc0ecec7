#!/bin/sh
# The installed CMake package and pkg-config file work from a moved prefix, in projects written
# for old CMake versions, and put nothing on a program's compile line but what h5tile needs:
#   1. the prefix copied elsewhere (cp -a); no .cmake or .pc file of the copy names the original
#      prefix, the clone, or (bundled) the HDF5 make built in the clone;
#   2. cmake_package/CMakeLists.txt (C, and the same source as C++, linking H5Tile::h5tile only)
#      configured against the copy with cmake_minimum_required(VERSION 3.0), 3.10 and 3.25 as
#      its first line, by each CMake given; no warning or error from H5TileConfig.cmake; built
#      with its compile lines shown: no OMPI_SKIP_MPICXX / MPICH_SKIP_MPICXX, no path of the
#      original; both programs run, libh5tile found in the copy;
#   3. `mpicc $(pkg-config --cflags --libs h5tile)` against the copy: no SKIP_MPICXX, no absolute
#      path but the copy's and the system's; the program runs, libh5tile found in the copy.
# CMake 4 refuses cmake_minimum_required below 3.5 unless CMAKE_POLICY_VERSION_MINIMUM is given
# (as it tells such projects to do): with it, 3.0 is configured so; CMake 3.x runs 3.0 as is.
# usage: cmake_package.sh PREFIX CLONE HDF5_BUNDLED HDF5_DIR MPICC PKG_CONFIG CC CXX SCRATCH_DIR
#                         CMAKE...
set -eu
[ $# -ge 10 ] || {
    echo "usage: $0 PREFIX CLONE HDF5_BUNDLED HDF5_DIR MPICC PKG_CONFIG CC CXX SCRATCH_DIR CMAKE..." >&2
    exit 2
}
prefix=$1 clone=$2 hdf5dir=$4 mpicc=$5 pkgconfig=$6 cc=$7 cxx=$8 work=$9
case "$3" in ON | on | TRUE | true | YES | yes | 1) bundled=1 ;; *) bundled= ;; esac
shift 9
here=$(cd "$(dirname "$0")" && pwd)

failed=0
fail() { echo "cmake_package: FAIL: $*" >&2; failed=$((failed + 1)); }

rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
copy=$work/moved-prefix
cp -a "$prefix" "$copy"
# The original's paths, as given and resolved (.deps/hdf5-<version> is a link into the cache);
# the clone is looked for in the package files only (the copy may lie in it).
and_real() { # PATH, and its real path where that differs
    if [ -e "$1" ] && [ "$(realpath "$1")" != "$1" ]; then echo "$1 $(realpath "$1")"; else echo "$1"; fi
}
originals=$(and_real "$prefix")
if [ -n "$bundled" ] && [ -n "$hdf5dir" ]; then
    originals="$originals $(and_real "$hdf5dir")"
fi
clones=$(and_real "$clone")
echo "cmake_package: $prefix copied to $copy; paths that must not appear: $originals (and $clone in package files)"
[ -n "${HDF5_PLUGIN_PATH:-}" ] && export HDF5_PLUGIN_PATH="$copy/lib/h5tile/plugins"

# Prints the lines of FILE naming one of PATHS..., as a whole path or a folder above a file
# (/a/p, not /a/p-other), and fails if none does. A HDF5 installed on its own (not bundled) is
# the user's and may be named, even inside the clone.
names() {
    file=$1
    shift
    for p in "$@"; do
        printf '%s\n' "$p/" "$p " "$p\"" "$p'" "$p;" "$p:"
    done > "$work/patterns"
    if [ -z "$bundled" ] && [ -n "$hdf5dir" ]; then
        sed "s|$hdf5dir||g" "$file"
    else
        cat "$file"
    fi | sed 's/$/ /' | grep -F -f "$work/patterns"
}

# 1. The package files of the copy.
find "$copy" -type f \( -name '*.cmake' -o -name '*.pc' \) > "$work/package-files"
[ -s "$work/package-files" ] || fail "no .cmake or .pc file in $copy"
while read -r f; do
    # shellcheck disable=SC2086  # the lists are meant to split
    if lines=$(names "$f" $originals $clones); then
        fail "${f#"$copy"/} names a path of the build machine's original install:"
        echo "$lines" >&2
    fi
done < "$work/package-files"

PKG_CONFIG_PATH="$copy/lib/pkgconfig"
export PKG_CONFIG_PATH
version=$("$pkgconfig" --modversion h5tile)

# Where ldd finds libh5tile for program $1, as a real folder ('' if nowhere).
h5tile_dir() {
    p=$(env -u LD_LIBRARY_PATH ldd "$1" | sed -n 's/^[[:space:]]*libh5tile\.so[^ ]* => \(\/[^ ]*\) .*/\1/p')
    [ -n "$p" ] && realpath "$(dirname "$p")"
}
# Runs program $1 (what: $2) in a fresh folder; it must print "OK <version>" and load the
# copy's libh5tile.
run_hello() {
    rm -rf "$1.data" && mkdir -p "$1.data"
    if ! out=$(env -u LD_LIBRARY_PATH "$1" "$1.data" 2>&1); then
        fail "$2 failed: $out"
    elif [ "$out" != "OK $version" ]; then
        fail "$2: expected 'OK $version', got: $out"
    fi
    [ "$(h5tile_dir "$1")" = "$copy/lib" ] ||
        fail "$2 loads libh5tile from elsewhere than $copy/lib: $(ldd "$1" | grep libh5tile)"
}
# Compile lines (log $1, what: $2) must not push the MPI C++-binding switches on the program,
# nor name the original.
check_compile_lines() {
    if grep -E -e '-D *(OMPI|MPICH)_SKIP_MPICXX' "$1" >&2; then
        fail "$2: the package pushes OMPI_SKIP_MPICXX/MPICH_SKIP_MPICXX on the program's compile line (above)"
    fi
    # shellcheck disable=SC2086  # the list is meant to split
    if lines=$(names "$1" $originals); then
        fail "$2: the build names the original install:"
        echo "$lines" >&2
    fi
}

# 2. The CMake project, by each CMake, for each declared minimum.
n=0
for cmake in "$@"; do
    n=$((n + 1))
    cmake_version=$("$cmake" --version | sed -n '1s/^cmake version \([0-9.]*\).*/\1/p')
    [ -n "$cmake_version" ] || { fail "$cmake --version names no version"; continue; }
    cmake_major=${cmake_version%%.*}
    for declared in 3.0 3.10 3.25; do
        what="CMake $cmake_version ($cmake), cmake_minimum_required(VERSION $declared)"
        extra=
        if [ "$cmake_major" -ge 4 ] && [ "$declared" = 3.0 ]; then
            extra=-DCMAKE_POLICY_VERSION_MINIMUM=3.5
            what="$what, $extra"
        fi
        if [ "$(printf '%s\n' "$declared" "$cmake_version" | sort -V | head -1)" != "$declared" ]; then
            echo "cmake_package: $what: skipped, this CMake is older than the project asks"
            continue
        fi
        echo "--- $what"
        failed_before=$failed
        src=$work/project-$n-$declared
        build=$src-build
        mkdir -p "$src" "$build"
        sed "1s/.*/cmake_minimum_required(VERSION $declared)/" "$here/cmake_package/CMakeLists.txt" \
            > "$src/CMakeLists.txt"
        cp "$here/pkgconfig_hello.c" "$src/hello.c"
        cp "$here/pkgconfig_hello.c" "$src/hello.cpp"
        # From the build folder, as CMake before 3.13 has no -S/-B.
        # shellcheck disable=SC2086  # $extra is one word or none
        if ! (cd "$build" && "$cmake" "$src" -G "Unix Makefiles" -DCMAKE_PREFIX_PATH="$copy" \
                -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" $extra) \
                > "$build/configure.log" 2>&1; then
            fail "$what: configuring failed:"
            cat "$build/configure.log" >&2
            continue
        fi
        # A diagnostic located in the package is the package's fault, whatever the project says.
        if grep -E -A8 '^CMake [A-Za-z ()]+ at [^ ]*H5Tile[A-Za-z]*\.cmake:' "$build/configure.log" >&2; then
            fail "$what: H5TileConfig.cmake warns (above)"
        fi
        if ! "$cmake" --build "$build" -- VERBOSE=1 > "$build/build.log" 2>&1; then
            fail "$what: building failed:"
            cat "$build/build.log" >&2
            continue
        fi
        check_compile_lines "$build/build.log" "$what"
        grep -q -F -e "-I$copy/include" -e "-isystem $copy/include" "$build/build.log" ||
            fail "$what: the compile lines do not name $copy/include"
        run_hello "$build/hello" "$what: hello (C)"
        run_hello "$build/hello_cxx" "$what: hello_cxx (C++)"
        [ "$failed" -eq "$failed_before" ] && echo "OK"
    done
done

# 3. pkg-config.
echo "--- pkg-config, $mpicc"
flags=$("$pkgconfig" --cflags --libs h5tile)
echo "pkg-config --cflags --libs h5tile: $flags"
echo "$flags" > "$work/pkgconfig-flags"
check_compile_lines "$work/pkgconfig-flags" "pkg-config --cflags --libs h5tile"
for word in $flags; do
    path=${word#-I}
    path=${path#-L}
    path=${path#-Wl,-rpath,}
    case "$path" in
    "$copy"/* | /usr/*) ;;
    /*) fail "pkg-config's flags name $path, outside the copy $copy and the system's folders" ;;
    esac
done
# shellcheck disable=SC2086  # the flags are meant to split
if "$mpicc" -std=c11 -Wall -Wextra -Werror -o "$work/pkgconfig-hello" "$here/pkgconfig_hello.c" \
        $flags > "$work/pkgconfig-build.log" 2>&1; then
    run_hello "$work/pkgconfig-hello" "the pkg-config program"
else
    fail "$mpicc \$(pkg-config --cflags --libs h5tile) failed:"
    cat "$work/pkgconfig-build.log" >&2
fi

if [ "$failed" -ne 0 ]; then
    echo "cmake_package: $failed check(s) failed" >&2
    exit 1
fi
echo "cmake_package: OK"
