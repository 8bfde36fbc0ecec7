"""`H5TileError` and its subclasses: one per status code of the C library, each also the
built-in exception a Python caller would catch for that kind of failure (`FileNotFoundError`
for a missing file, `ValueError` for a bad argument, ...).

The message is the C library's `h5tile_last_error()`, which leads with the cause. A collective
call that fails on one rank fails on every rank with the same status, so every rank raises the
same class (for an operating-system error, see `IOFailure`).

The package's own checks of its arguments raise `InvalidArgumentError` too: a ValueError, and,
for an argument of the wrong type, also the TypeError Python raises for one
(`ArgumentTypeError`); likewise OverflowError and KeyError where Python would raise those.
"""

from __future__ import annotations

from . import _constants as C


class H5TileError(Exception):
    """A failed h5tile call: `.status` is the C status code, `.name` its name
    (e.g. "H5TILE_ERR_NOT_FOUND"); the message is the C library's."""

    status: int = -1
    name: str = "unknown status"


class InvalidArgumentError(H5TileError, ValueError):
    status, name = C.H5TILE_ERR_INVALID_ARGUMENT, "H5TILE_ERR_INVALID_ARGUMENT"


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong type (an int where a slice is expected, a str for a count):
    a bad argument, and the TypeError Python raises for one."""


class ArgumentOverflowError(InvalidArgumentError, OverflowError):
    """A number too large for the C type that stores it (an attribute beyond int64)."""


class ArgumentKeyError(InvalidArgumentError, KeyError):
    """A key a mapping of the package cannot take (`ck.attrs["/u"]["/v"]`)."""

    def __str__(self) -> str:  # the message, not KeyError's repr of it
        return str(self.args[0]) if self.args else ""


class IsDirectoryError(H5TileError, IsADirectoryError, ValueError):
    status, name = C.H5TILE_ERR_IS_DIRECTORY, "H5TILE_ERR_IS_DIRECTORY"


class NotFoundError(H5TileError, FileNotFoundError):
    status, name = C.H5TILE_ERR_NOT_FOUND, "H5TILE_ERR_NOT_FOUND"


class NotADatasetError(H5TileError, ValueError):
    status, name = C.H5TILE_ERR_NOT_A_DATASET, "H5TILE_ERR_NOT_A_DATASET"


class DtypeError(H5TileError, TypeError):
    status, name = C.H5TILE_ERR_DTYPE, "H5TILE_ERR_DTYPE"


class ShapeError(H5TileError, ValueError):
    status, name = C.H5TILE_ERR_SHAPE, "H5TILE_ERR_SHAPE"


class ExistsError(H5TileError, FileExistsError):
    status, name = C.H5TILE_ERR_EXISTS, "H5TILE_ERR_EXISTS"


class IOFailure(H5TileError, OSError):
    """An operating-system error. `.errno` is its number (None where the library knows none;
    in a collective call, every rank has the failing rank's); the class is also the built-in
    OSError subclass Python gives that number (`PermissionDeniedError`, a PermissionError,
    for EACCES and EPERM; FileNotFoundError for ENOENT, ...)."""

    status, name = C.H5TILE_ERR_IO, "H5TILE_ERR_IO"


class PermissionDeniedError(IOFailure, PermissionError):
    """An operating-system error EACCES or EPERM: a PermissionError."""


class HDF5Error(H5TileError):
    status, name = C.H5TILE_ERR_HDF5, "H5TILE_ERR_HDF5"


class MPIError(H5TileError):
    status, name = C.H5TILE_ERR_MPI, "H5TILE_ERR_MPI"


class CudaError(H5TileError):
    status, name = C.H5TILE_ERR_CUDA, "H5TILE_ERR_CUDA"


class MissingTileError(H5TileError, OSError):
    status, name = C.H5TILE_ERR_MISSING_TILE, "H5TILE_ERR_MISSING_TILE"


class CorruptError(H5TileError, OSError):
    status, name = C.H5TILE_ERR_CORRUPT, "H5TILE_ERR_CORRUPT"


class PanicError(H5TileError):
    status, name = C.H5TILE_ERR_PANIC, "H5TILE_ERR_PANIC"


ERROR_CLASSES: dict[int, type[H5TileError]] = {
    cls.status: cls
    for cls in (
        InvalidArgumentError, IsDirectoryError, NotFoundError, NotADatasetError, DtypeError,
        ShapeError, ExistsError, IOFailure, HDF5Error, MPIError, CudaError, MissingTileError,
        CorruptError, PanicError,
    )
}


# IOFailure with each other OSError subclass Python gives an errno (FileNotFoundError for
# ENOENT, ...), made when first needed.
_IO_CLASSES: dict[type, type[IOFailure]] = {
    OSError: IOFailure, PermissionError: PermissionDeniedError,
}


def _io_class(errno: int) -> type[IOFailure]:
    builtin = type(OSError(errno, ""))  # how Python itself maps the number
    cls = _IO_CLASSES.get(builtin)
    if cls is None:
        cls = _IO_CLASSES[builtin] = type("IOFailure", (IOFailure, builtin), {
            "__module__": "h5tile", "__doc__": f"IOFailure that is also {builtin.__name__}."})
    return cls


def error_for(status: int, message: str, errno: int = 0) -> H5TileError:
    """The exception for a failed call; `errno` is the operating system's error number behind
    it (0: none), which for an I/O error chooses the class and is its `.errno`. Built from the
    message alone: OSError's subclasses read two arguments as (errno, strerror), and would
    print "[Errno 13] Permission denied" instead of the library's message."""
    cls = ERROR_CLASSES.get(status)
    if cls is IOFailure and errno > 0:
        cls = _io_class(errno)
    if cls is not None:
        error = cls(message)
        if errno > 0 and isinstance(error, OSError):
            error.errno = errno
        return error
    error = H5TileError(message)
    error.status = status
    error.name = f"status {status}"
    return error


class SkippedCheckpointWarning(UserWarning):
    """`Series.latest(verify=True)` passed over newer complete checkpoints that failed
    verification: the message names each step and why."""


# Tracebacks name the classes as users import them.
for _cls in (H5TileError, ArgumentTypeError, ArgumentOverflowError, ArgumentKeyError,
             PermissionDeniedError, SkippedCheckpointWarning, *ERROR_CLASSES.values()):
    _cls.__module__ = "h5tile"
