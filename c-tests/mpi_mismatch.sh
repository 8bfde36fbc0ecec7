#!/bin/sh
# A program built with another MPI than libh5tile's is refused when it is built, with a message
# that says which MPI to use, or else at its first h5tile call; never left to crash:
#   1. pkg-config's flags with the other MPI's mpicc: h5tile.h's #error;
#   2. find_package(H5Tile) in a C project whose FindMPI found the other MPI: a configure error;
#      in a C++ one, the message names the C++ wrapper; in a Fortran one (the documented
#      recipe with -DMPI_Fortran_COMPILER=<other mpif90>), refused the same way;
#   3. C built with the other mpicc without pkg-config's flags, and Fortran compiling
#      include/h5tile.f90 with the other mpif90: the first h5tile call is H5TILE_ERR_MPI
#      naming both MPIs;
#   4. such a Fortran program that calls MPI itself first (its MPI_Comm_rank may crash inside
#      MPI, bound to libh5tile's MPI): a warning naming both libraries, printed when
#      libh5tile is loaded, comes before anything the program does.
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

# A CMake project in DIR whose LANG uses WRAPPER (another MPI's) must fail to configure with
# a message matching PATTERN (CMake wraps messages: matched with its lines joined).
# usage: cmake_refuses DIR LANG WRAPPER PATTERN
cmake_refuses() {
    log="$work/cmake-$2.log"
    if "$cmake" -S "$1" -B "$1-build" -DCMAKE_PREFIX_PATH="$prefix" -DMPI_$2_COMPILER="$3" \
            > "$log" 2>&1; then
        echo "mpi_mismatch: a $2 project that found $3's MPI configured against h5tile" >&2
        exit 1
    fi
    tr -s ' \n' '  ' < "$log" | grep -q "$4" || {
        echo "mpi_mismatch: the $2 project failed without the package's message ($4):" >&2
        cat "$log" >&2
        exit 1
    }
    echo "find_package(H5Tile) in a $2 project with -DMPI_$2_COMPILER=$3 refused:"
    grep -A3 "libh5tile was built with" "$log" | head -4
}

cat > "$work/project/CMakeLists.txt" <<'SRC'
cmake_minimum_required(VERSION 3.25)
project(mismatch LANGUAGES C)
find_package(MPI REQUIRED COMPONENTS C)
find_package(H5Tile REQUIRED)
add_executable(mismatch main.c)
target_link_libraries(mismatch PRIVATE H5Tile::h5tile)
SRC
cmake_refuses "$work/project" C "$other_mpicc" "libh5tile was built with"

# The C++ project: the refusal names the C++ wrapper.
other_mpicxx=$(echo "$other_mpicc" | sed 's/mpicc/mpicxx/')
mkdir -p "$work/cxx"
cp "$work/main.c" "$work/cxx/main.cpp"
sed -e 's/LANGUAGES C)/LANGUAGES CXX)/' -e 's/COMPONENTS C)/COMPONENTS CXX)/' -e 's/main.c)/main.cpp)/' \
    "$work/project/CMakeLists.txt" > "$work/cxx/CMakeLists.txt"
cmake_refuses "$work/cxx" CXX "$other_mpicxx" "configure with -DMPI_CXX_COMPILER=[^ ]*mpicxx"

# The documented Fortran recipe, with the other MPI's mpif90 (and C enabled too, whose MPI is
# the right one): refused for Fortran.
other_mpif90=$(echo "$other_mpicc" | sed 's/mpicc/mpif90/')
mkdir -p "$work/fortran"
cat > "$work/fortran/main.f90" <<'SRC'
program mismatch
  use h5tile
  print *, h5tile_version()
end program
SRC
cat > "$work/fortran/CMakeLists.txt" <<'SRC'
cmake_minimum_required(VERSION 3.25)
project(mismatch LANGUAGES C Fortran)
find_package(H5Tile REQUIRED)
add_executable(mismatch main.f90)
target_link_libraries(mismatch PRIVATE H5Tile::fortran)
SRC
cmake_refuses "$work/fortran" Fortran "$other_mpif90" "this project's Fortran found another MPI"

# Past the build checks: the first h5tile call refuses, naming both MPIs, instead of crashing.
cat > "$work/runtime.c" <<'SRC'
#include <h5tile.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const uint64_t g[1] = {4}, o[1] = {0};
    double v[4] = {1, 2, 3, 4};
    h5tile_status s = h5tile_write(MPI_COMM_WORLD, argv[1], "/x", H5TILE_FLOAT64, 1, g, o, g, v, NULL);
    printf("%s: %s\n", h5tile_status_name(s), h5tile_last_error());
    MPI_Finalize();
    return s == H5TILE_ERR_MPI && strstr(h5tile_last_error(), "libh5tile was built with") ? 0 : 1;
}
SRC
"$other_mpicc" -o "$work/runtime" "$work/runtime.c" -I"$prefix/include" -L"$prefix/lib" \
    -Wl,-rpath,"$prefix/lib" -lh5tile
if ! "$work/runtime" "$work/runtime.h5" > "$work/runtime.log" 2>&1; then
    echo "mpi_mismatch: C built with $other_mpicc without pkg-config's flags was not refused at run time:" >&2
    cat "$work/runtime.log" >&2
    exit 1
fi
test ! -e "$work/runtime.h5" || { echo "mpi_mismatch: the refused write left a file" >&2; exit 1; }
echo "C built with $other_mpicc alone, at its first h5tile call:"
cat "$work/runtime.log"

cat > "$work/runtime.f90" <<'SRC'
program runtime
  use mpi
  use h5tile
  use iso_c_binding
  implicit none
  integer :: ierr, status
  integer(c_int64_t) :: g(1) = [4_c_int64_t], o(1) = [0_c_int64_t]
  real(c_double), target :: v(4) = [1d0, 2d0, 3d0, 4d0]
  call mpi_init(ierr)
  status = h5tile_write(MPI_COMM_WORLD, "runtime-f.h5", "/x", H5TILE_FLOAT64, g, o, g, c_loc(v))
  print *, trim(h5tile_status_name(status)), ": ", trim(h5tile_last_error())
  call mpi_finalize(ierr)
  if (status /= H5TILE_ERR_MPI) error stop 1
end program
SRC
(cd "$work" && "$other_mpif90" -o runtime-f "$prefix/include/h5tile.f90" runtime.f90 -L"$prefix/lib" \
    -Wl,-rpath,"$prefix/lib" -lh5tile) > "$work/runtime-f-build.log" 2>&1 || {
    echo "mpi_mismatch: the Fortran program did not build with $other_mpif90:" >&2
    cat "$work/runtime-f-build.log" >&2
    exit 1
}
if ! (cd "$work" && ./runtime-f) > "$work/runtime-f.log" 2>&1; then
    echo "mpi_mismatch: Fortran built with $other_mpif90 was not refused at run time:" >&2
    cat "$work/runtime-f.log" >&2
    exit 1
fi
grep -q "libh5tile was built with" "$work/runtime-f.log" || {
    echo "mpi_mismatch: the Fortran refusal does not name both MPIs:" >&2
    cat "$work/runtime-f.log" >&2
    exit 1
}
echo "Fortran built with $other_mpif90 and include/h5tile.f90, at its first h5tile call:"
cat "$work/runtime-f.log"

# The program's own MPI call first. The dynamic linker may bind libmpichfort's calls to
# libh5tile's MPI and crash in MPI_Comm_rank: whatever happens, the load-time warning that names
# both libraries is the first line the program prints.
cat > "$work/first.f90" <<'SRC'
program first
  use mpi
  use h5tile
  implicit none
  integer :: ierr, rank
  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  print *, "rank", rank, trim(h5tile_status_name(H5TILE_OK))
  call mpi_finalize(ierr)
end program
SRC
(cd "$work" && "$other_mpif90" -o first "$prefix/include/h5tile.f90" first.f90 -L"$prefix/lib" \
    -Wl,-rpath,"$prefix/lib" -lh5tile) > "$work/first-build.log" 2>&1 || {
    echo "mpi_mismatch: the MPI-first Fortran program did not build with $other_mpif90:" >&2
    cat "$work/first-build.log" >&2
    exit 1
}
first_status=0
(cd "$work" && ./first) > "$work/first.log" 2>&1 || first_status=$?
first_line=$(head -n 1 "$work/first.log")
case $first_line in
    "h5tile: warning: this process has loaded two MPI libraries, "*libmpi*" and "*libmpi*"; libh5tile was built with "*) ;;
    *)
        echo "mpi_mismatch: a Fortran program built with $other_mpif90 calling MPI first did not start with the load-time warning:" >&2
        cat "$work/first.log" >&2
        exit 1 ;;
esac
echo "Fortran built with $other_mpif90 calling MPI_Comm_rank first (exit status $first_status):"
head -n 3 "$work/first.log"
echo "mpi_mismatch: OK"
