"""`H5TileError` and its subclasses: one per status code of the C library, each also the
built-in exception a Python caller would catch for that kind of failure (`FileNotFoundError`
for a missing file, `ValueError` for a bad argument, ...).

The message is the C library's `h5tile_last_error()`, which leads with the cause. A collective
call that fails on one rank fails on every rank with the same status, so every rank raises the
same class.
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
    status, name = C.H5TILE_ERR_IO, "H5TILE_ERR_IO"


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


def error_for(status: int, message: str) -> H5TileError:
    """The exception for a failed call. Built from the message alone: OSError's subclasses
    read two arguments as (errno, strerror)."""
    cls = ERROR_CLASSES.get(status)
    if cls is not None:
        return cls(message)
    error = H5TileError(message)
    error.status = status
    error.name = f"status {status}"
    return error


# Tracebacks name the classes as users import them.
for _cls in (H5TileError, *ERROR_CLASSES.values()):
    _cls.__module__ = "h5tile"
