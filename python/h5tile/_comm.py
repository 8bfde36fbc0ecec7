"""mpi4py communicators as the C library takes them: the Fortran handle (`comm.py2f()`) given
to the `_f` entry points, whose type (`int`) is the same in every MPI, where a C `MPI_Comm` is
a pointer in Open MPI and an int in MPICH. `None` is `MPI_COMM_NULL`: this process alone, no
MPI call, MPI need not be initialized.

A handle means something only to the MPI it came from. mpi4py may have loaded another MPI than
the one libh5tile was built with (its PyPI wheel runs on either), and libh5tile's MPI would
then see an uninitialized MPI or a handle it does not know; that is refused first, naming both.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from ._errors import ArgumentTypeError, MPIError
from ._library import lib

# The longest MPI_Get_library_version string (MPICH's MPI_MAX_LIBRARY_VERSION_STRING; Open
# MPI's is 256).
_VERSION_BYTES = 8192

# MPI_COMM_NULL's Fortran handle: an index (2) in Open MPI, the C value in MPICH and its family.
_OPEN_MPI_COMM_NULL = 2
_MPICH_COMM_NULL = 0x04000000


def h5tile_mpi_version() -> str:
    """The version string of the MPI libh5tile was built with, asked of that MPI itself (the
    symbol is resolved through libh5tile's handle, so among libh5tile's own dependencies).
    MPI_Get_library_version may be called before MPI_Init."""
    get = lib.MPI_Get_library_version
    get.restype = ctypes.c_int
    get.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    text = ctypes.create_string_buffer(_VERSION_BYTES)
    length = ctypes.c_int(0)
    get(text, ctypes.byref(length))
    return text.value.decode("utf-8", "replace")


def _first_line(version: str) -> str:
    return " ".join(version.splitlines()[0].split()) if version else "?"


_H5TILE_MPI = h5tile_mpi_version()
_BUILT_WITH_OPEN_MPI = "Open MPI" in _H5TILE_MPI
COMM_NULL = _OPEN_MPI_COMM_NULL if _BUILT_WITH_OPEN_MPI else _MPICH_COMM_NULL
_verdict: str | None = None  # "" once mpi4py's MPI was found to be libh5tile's


def _check_same_mpi(mpi: Any) -> None:
    global _verdict
    if _verdict is None:
        theirs = mpi.Get_library_version()
        if theirs.rstrip("\0") == _H5TILE_MPI:
            _verdict = ""
        else:
            family = "Open MPI" if _BUILT_WITH_OPEN_MPI else "MPICH"
            fix = "libmpi.so.40" if _BUILT_WITH_OPEN_MPI else "libmpich.so.12"
            _verdict = (
                f"mpi4py runs another MPI than libh5tile: mpi4py's is '{_first_line(theirs)}', "
                f"libh5tile was built with {family} ('{_first_line(_H5TILE_MPI)}'), so "
                "libh5tile cannot use mpi4py's communicators. Run mpi4py on libh5tile's MPI "
                f"(its PyPI wheel: MPI4PY_LIBMPI={fix} before importing it; or build it with "
                f"{family}'s mpicc), or install an h5tile built with mpi4py's MPI "
                f"(make install MPI={'openmpi' if 'Open MPI' in theirs else 'mpich'})"
            )
    if _verdict:
        raise MPIError(_verdict)


def fortran_handle(comm: Any) -> int:
    """The handle to pass to an `_f` entry point for `comm` (an mpi4py communicator or None)."""
    if comm is None:
        return COMM_NULL
    py2f = getattr(comm, "py2f", None)
    if py2f is None:
        raise ArgumentTypeError(f"comm must be an mpi4py communicator or None, not {type(comm).__name__}")
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        _check_same_mpi(mpi)
    return int(py2f())


def size_and_rank(comm: Any) -> tuple[int, int]:
    """(number of ranks, this rank) of `comm`; (1, 0) for None."""
    if comm is None:
        return 1, 0
    return int(comm.Get_size()), int(comm.Get_rank())
