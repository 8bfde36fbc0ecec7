"""h5tile: tiled, collective HDF5 I/O for numpy, CuPy and mpi4py programs.

A thin layer over the installed C library (libh5tile, through ctypes), so that C, Fortran and
Python code in one process share one library. See docs/python.md.

    import h5tile
    h5tile.to_file(array, "out.h5", "/data")
    a = h5tile.from_file("out.h5", "/data")
    for chunk, offsets in h5tile.from_file_batched("out.h5", "/data", chunk_size=(4096, 4096)):
        ...
    with h5tile.Series("run/ckpt", keep_last=3).save(step) as ck:
        ck.add("/u", u)
        ck.attrs["step"] = step
"""

__version__ = "0.2.0"

from ._batches import BatchReader, from_file_batched
from ._checkpoint import Checkpoint
from ._errors import (
    ArgumentKeyError,
    ArgumentOverflowError,
    ArgumentTypeError,
    CorruptError,
    CudaError,
    DtypeError,
    ExistsError,
    H5TileError,
    HDF5Error,
    InvalidArgumentError,
    IOFailure,
    IsDirectoryError,
    MissingTileError,
    MPIError,
    NotADatasetError,
    NotFoundError,
    PanicError,
    PermissionDeniedError,
    ShapeError,
    SkippedCheckpointWarning,
)
from ._library import library_version
from ._partition import partition
from ._pending import fence, reserve_staging, to_file_async
from ._read import from_file, inspect
from ._restart import load
from ._series import Series
from ._transaction import Transaction, Writer, begin, commit
from ._write import to_file

__all__ = [
    "ArgumentKeyError",
    "ArgumentOverflowError",
    "ArgumentTypeError",
    "BatchReader",
    "Checkpoint",
    "CorruptError",
    "CudaError",
    "DtypeError",
    "ExistsError",
    "H5TileError",
    "HDF5Error",
    "IOFailure",
    "InvalidArgumentError",
    "IsDirectoryError",
    "MPIError",
    "MissingTileError",
    "NotADatasetError",
    "NotFoundError",
    "PanicError",
    "PermissionDeniedError",
    "Series",
    "ShapeError",
    "SkippedCheckpointWarning",
    "Transaction",
    "Writer",
    "begin",
    "commit",
    "fence",
    "from_file",
    "from_file_batched",
    "inspect",
    "library_version",
    "load",
    "partition",
    "reserve_staging",
    "to_file",
    "to_file_async",
]
