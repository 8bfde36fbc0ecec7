"""Finding and loading libh5tile, and the table of the C functions Python calls.

Python goes through the installed C ABI with ctypes, so that C, Fortran and Python code in one
process share one copy of libh5tile (with one HDF5 lock and one list of pending writes). ctypes
releases the GIL for every call, so I/O runs beside other Python threads.

Where the library is looked for, in order:
1. `H5TILE_LIBRARY`, a path to the library (no fallback when it is set);
2. the lib folder of the prefix this package sits in (`<prefix>/share/h5tile/python/h5tile`),
   so an installed prefix can be moved and used in place;
3. the lib folder `make install` recorded in `_install.py` (what a `pip install` copy uses);
4. the dynamic loader's own search (`LD_LIBRARY_PATH`, the system's folders).
"""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, c_bool, c_char_p, c_int, c_size_t, c_uint32, c_uint64, c_void_p
from pathlib import Path

from ._errors import H5TileError, error_for
from ._options import ReadOptions, SeriesOptions, WriteOptions

LIBRARY_ENV = "H5TILE_LIBRARY"
SONAME = "libh5tile.so.0"

Status = c_int  # h5tile_status
Dtype = c_int  # h5tile_dtype
Fint = c_int  # MPI_Fint: Fortran handles are ints in Open MPI and MPICH
Handle = c_void_p  # h5tile_batches *, h5tile_request *, h5tile_checkpoint *, h5tile_txn * (opaque)
U64s = POINTER(c_uint64)  # const uint64_t *, uint64_t *

# name: (return type, argument types), as in include/h5tile.h.
FUNCTIONS: dict[str, tuple[object, tuple[object, ...]]] = {
    "h5tile_version": (c_char_p, ()),
    "h5tile_last_error": (c_char_p, ()),
    "h5tile_series_skipped": (c_char_p, ()),
    "h5tile_last_errno": (c_int, ()),
    "h5tile_status_name": (c_char_p, (c_int,)),
    "h5tile_write_f": (
        Status,
        (Fint, c_char_p, c_char_p, Dtype, c_size_t, U64s, U64s, U64s, c_void_p,
         POINTER(WriteOptions)),
    ),
    "h5tile_write_tiles_f": (
        Status,
        (Fint, c_char_p, c_char_p, Dtype, c_size_t, U64s, c_size_t, U64s, U64s,
         POINTER(c_void_p), POINTER(WriteOptions)),
    ),
    "h5tile_write_async_f": (
        Status,
        (Fint, c_char_p, c_char_p, Dtype, c_size_t, U64s, U64s, U64s, c_void_p,
         POINTER(WriteOptions), POINTER(Handle)),
    ),
    "h5tile_write_tiles_async_f": (
        Status,
        (Fint, c_char_p, c_char_p, Dtype, c_size_t, U64s, c_size_t, U64s, U64s,
         POINTER(c_void_p), POINTER(WriteOptions), POINTER(Handle)),
    ),
    "h5tile_wait": (Status, (Handle,)),
    "h5tile_test": (Status, (Handle, POINTER(c_int))),
    "h5tile_fence_f": (Status, (Fint,)),
    "h5tile_reserve_staging": (Status, (U64s, c_size_t, c_uint64)),
    "h5tile_restart_begin_f": (Status, (Fint, c_char_p, POINTER(ReadOptions), POINTER(c_void_p))),
    "h5tile_restart_field": (Status, (c_void_p, c_char_p, Dtype, c_size_t, U64s, U64s, c_void_p)),
    "h5tile_restart_attr": (Status, (c_void_p, c_char_p, c_char_p, Dtype, c_size_t, c_void_p)),
    "h5tile_restart_read": (Status, (c_void_p,)),
    "h5tile_restart_abort": (None, (c_void_p,)),
    "h5tile_read_f": (
        Status,
        (Fint, c_char_p, c_char_p, Dtype, c_size_t, U64s, U64s, c_void_p,
         POINTER(ReadOptions)),
    ),
    "h5tile_inspect": (Status, (c_char_p, c_char_p, POINTER(Dtype), POINTER(c_size_t), U64s)),
    "h5tile_tiles": (Status, (c_char_p, c_char_p, c_size_t, POINTER(c_size_t), U64s, U64s)),
    "h5tile_partition": (Status, (c_size_t, c_size_t, c_size_t, U64s, U64s, U64s)),
    "h5tile_batches_open_f": (
        Status,
        (Fint, c_char_p, c_char_p, c_size_t, U64s, POINTER(ReadOptions), POINTER(Handle)),
    ),
    "h5tile_batches_next": (
        Status, (Handle, c_void_p, c_size_t, U64s, U64s, POINTER(c_bool)),
    ),
    "h5tile_batches_next_view": (
        Status, (Handle, POINTER(c_void_p), U64s, U64s, POINTER(c_bool)),
    ),
    "h5tile_batches_info": (
        Status, (Handle, POINTER(Dtype), POINTER(c_size_t), POINTER(c_uint64)),
    ),
    "h5tile_batches_free": (None, (Handle,)),
    "h5tile_checkpoint_begin_f": (
        Status, (Fint, c_char_p, POINTER(WriteOptions), POINTER(Handle)),
    ),
    "h5tile_checkpoint_add": (
        Status, (Handle, c_char_p, Dtype, c_size_t, U64s, U64s, U64s, c_void_p),
    ),
    "h5tile_checkpoint_attr": (
        Status, (Handle, c_char_p, c_char_p, Dtype, c_size_t, c_void_p),
    ),
    "h5tile_checkpoint_attr_string": (Status, (Handle, c_char_p, c_char_p, c_char_p)),
    "h5tile_checkpoint_commit": (Status, (Handle,)),
    "h5tile_checkpoint_commit_async": (Status, (Handle, POINTER(Handle))),
    "h5tile_checkpoint_abort": (None, (Handle,)),
    "h5tile_checkpoint_fail": (Status, (Handle, c_char_p)),
    "h5tile_refuse_next": (Status, (c_int, c_char_p)),
    "h5tile_attr_read_f": (
        Status, (Fint, c_char_p, c_char_p, c_char_p, Dtype, c_size_t, c_void_p),
    ),
    "h5tile_series_begin_f": (
        Status,
        (Fint, c_char_p, c_uint64, POINTER(SeriesOptions), POINTER(WriteOptions),
         POINTER(Handle)),
    ),
    "h5tile_series_latest_f": (
        Status, (Fint, c_char_p, c_uint32, POINTER(c_uint64), c_char_p, c_size_t),
    ),
    "h5tile_txn_begin": (Status, (c_char_p, POINTER(WriteOptions), POINTER(Handle))),
    "h5tile_txn_resume": (Status, (c_char_p, c_size_t, POINTER(Handle))),
    "h5tile_txn_declare": (Status, (Handle, c_char_p, Dtype, c_size_t, U64s)),
    "h5tile_txn_attr": (Status, (Handle, c_char_p, c_char_p, Dtype, c_size_t, c_void_p)),
    "h5tile_txn_attr_string": (Status, (Handle, c_char_p, c_char_p, c_char_p)),
    "h5tile_txn_token": (Status, (Handle, POINTER(c_char_p), POINTER(c_size_t))),
    "h5tile_txn_write_tile": (
        Status,
        (c_char_p, c_size_t, c_char_p, c_size_t, U64s, U64s, c_void_p, POINTER(c_char_p),
         POINTER(c_size_t)),
    ),
    "h5tile_txn_record_free": (None, (c_char_p,)),
    "h5tile_txn_commit": (Status, (Handle, c_size_t, POINTER(c_char_p), POINTER(c_size_t))),
    "h5tile_txn_abort": (Status, (Handle,)),
    "h5tile_txn_free": (None, (Handle,)),
    "h5tile_write_options_init": (Status, (POINTER(WriteOptions), c_size_t)),
    "h5tile_read_options_init": (Status, (POINTER(ReadOptions), c_size_t)),
    "h5tile_series_options_init": (Status, (POINTER(SeriesOptions), c_size_t)),
}

# Functions of the header Python leaves alone, and why.
_C_COMM = "takes a C MPI_Comm, whose type differs between MPIs; its _f variant takes mpi4py's py2f()"
NOT_CALLED: dict[str, str] = {
    name: _C_COMM
    for name in (
        "h5tile_write", "h5tile_write_tiles", "h5tile_write_async", "h5tile_write_tiles_async",
        "h5tile_fence", "h5tile_read", "h5tile_batches_open", "h5tile_checkpoint_begin",
        "h5tile_series_begin", "h5tile_series_latest", "h5tile_attr_read", "h5tile_restart_begin",
    )
}


def _recorded_library_dir() -> str | None:
    try:
        from . import _install  # type: ignore[attr-defined]  # written by `make install`
    except ImportError:
        return None
    return getattr(_install, "LIBRARY_DIR", None)


def _candidates() -> list[str]:
    here = Path(__file__).resolve().parent
    found = []
    # <prefix>/share/h5tile/python/h5tile: the prefix is four levels up.
    if [p.name for p in list(here.parents)[:3]] == ["python", "h5tile", "share"]:
        found.append(str(list(here.parents)[3] / "lib" / SONAME))
    recorded = _recorded_library_dir()
    if recorded:
        found.append(os.path.join(recorded, SONAME))
    return found


def _load() -> tuple[ctypes.CDLL, str]:
    explicit = os.environ.get(LIBRARY_ENV)
    if explicit:
        try:
            return ctypes.CDLL(explicit), explicit
        except OSError as e:
            raise ImportError(f"{LIBRARY_ENV}={explicit!r} cannot be loaded: {e}") from e
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            return ctypes.CDLL(path), path
        tried.append(f"{path} (missing)")
    try:
        return ctypes.CDLL(SONAME), SONAME
    except OSError as e:
        tried.append(f"{SONAME} through the loader's search path ({e})")
    raise ImportError(
        f"cannot find {SONAME}: tried " + "; ".join(tried)
        + f". Set {LIBRARY_ENV} to its path, or install h5tile with `make install PREFIX=...` "
        "and this package from <prefix>/share/h5tile/python"
    )


def _declare(lib: ctypes.CDLL) -> None:
    for name, (restype, argtypes) in FUNCTIONS.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = list(argtypes)


lib, path = _load()
_declare(lib)


def last_error() -> str:
    """The C library's message for the last failed call on this thread."""
    return (lib.h5tile_last_error() or b"").decode("utf-8", "replace")


def last_errno() -> int:
    """The operating system's error number behind the last failed call on this thread (0:
    none)."""
    return int(lib.h5tile_last_errno())


# The C flags a message may name, and the keyword a Python caller passes instead.
_KEYWORDS = {
    "H5TILE_NO_OVERWRITE": "overwrite=False",
    "H5TILE_KEEP_OTHERS": "keep_others=True",
    "H5TILE_ALLOW_PARTIAL": "allow_partial=True",
    "H5TILE_NO_SYNC": "sync=False",
    "H5TILE_SNAPSHOT": "snapshot=True",
    "H5TILE_READ_NARROWING": "narrowing=True",
    "H5TILE_READ_NO_VERIFY": "verify=False",
}


def failure(status: int, message: str, errno: int = 0) -> H5TileError:
    """The exception for a failed call: the C message, and a note naming Python's keywords
    for the C flags it mentions; `errno` (0: none) as `error_for` takes it."""
    error = error_for(status, message, errno)
    named = [f"{flag} is {kw}" for flag, kw in _KEYWORDS.items() if flag in message]
    if named and hasattr(error, "add_note"):  # Python >= 3.11; the message stays the C one
        error.add_note("in Python: " + ", ".join(named))
    return error


def last_failure(status: int) -> H5TileError:
    """The exception for `status`, with this thread's last message and error number."""
    return failure(status, last_error(), last_errno())


def check(status: int) -> None:
    """Raises the exception for `status`, with this thread's last message, unless it is OK."""
    if status != 0:
        raise last_failure(status)


def library_version() -> str:
    """The loaded libh5tile's version, "MAJOR.MINOR.PATCH"."""
    return str(lib.h5tile_version().decode())
