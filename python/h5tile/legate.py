"""Legate and cuPyNumeric arrays written and read where their partitions live, in the shape of
`legate.io.hdf5` (`pip install 'h5tile[legate]'`).

    import cupynumeric as cn, h5tile
    h5tile.to_file(a, "out.h5", "/u")               # a cuPyNumeric (or Legate) array: one
                                                    # tile per partition point, written by a
                                                    # Legate task where the data lives
    b = h5tile.legate.from_file("out.h5", "/u")     # a cuPyNumeric array read by tasks
    for chunk, offsets in h5tile.legate.from_file_batched("out.h5", "/u", (1024, 1024)): ...

Writes go through a transaction (`h5tile.begin`): the control process begins it, a Legate task
per partition point writes its tile and leaves its record (a few hundred bytes) in a folder
beside the tiles, and after the tasks the control process commits: the file is replaced
atomically, with checksums, relative source paths, and nothing of the array passes through the
control process. Unlike `legate.io.hdf5.to_file`, the call returns once the file is committed.
Legate (`legate.core`) is imported only here.
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Iterator, Sequence

import numpy as np

from ._engines import absolute, is_legate_array, require
from ._read import from_file as _read_region
from ._read import inspect
from ._transaction import begin

__all__ = ["from_file", "from_file_batched", "is_legate_array", "to_file"]

def _logical_array(obj: Any) -> Any:
    """The one Legate array behind `obj`."""
    data = obj.__legate_data_interface__["data"]
    if len(data) != 1:
        raise TypeError(f"a Legate array of {len(data)} fields is not one array")
    return next(iter(data.values()))


def _task_functions() -> tuple[Any, Any]:
    """The Legate tasks (registered when first imported: Legate must be running by then)."""
    require("legate.core", "Legate")
    from . import _legate_tasks  # noqa: PLC0415

    return _legate_tasks.write_tile, _legate_tasks.read_tile


def to_file(array: Any, path: Any, dataset_name: str, **write_options: Any) -> None:
    """Writes the Legate or cuPyNumeric array `array` as the dataset `dataset_name` of
    `path`: a Legate task per partition point writes its tile, then one atomic commit here.
    `write_options` are `h5tile.to_file`'s (layout "auto" or "vds"). Returns when the file is
    committed (Legate's own `to_file` only queues its write)."""
    runtime = require("legate.core", "Legate").get_legate_runtime()
    write, _ = _task_functions()
    logical = _logical_array(array)
    dtype = logical.type.to_numpy_dtype()
    tx = begin(absolute(path), dataset_name, tuple(logical.shape), dtype, **write_options)
    records = os.path.join(str(tx.path) + ".tiles", f".records-{os.getpid()}-{id(tx):x}")
    try:
        os.makedirs(records)
        write(logical, tx.token.hex(), dataset_name, records)
        runtime.issue_execution_fence(block=True)
        found = [os.path.join(records, n) for n in sorted(os.listdir(records))
                 if n.endswith(".record")]
        blobs = []
        for name in found:
            with open(name, "rb") as f:
                blobs.append(f.read())
        tx.commit(blobs)
    except BaseException:
        tx.abort()
        raise
    finally:
        shutil.rmtree(records, ignore_errors=True)
        tx.close()


def from_file(path: Any, dataset_name: str, *, verify: bool = True) -> Any:
    """The dataset `dataset_name` of `path` (any HDF5 dataset: h5tile's, Legate's, h5py's) as a
    cuPyNumeric array, each partition read by a Legate task where it lives, its tiles checked
    unless `verify=False`. `legate.io.hdf5.from_file`'s signature."""
    require("legate.core", "Legate")
    cn = require("cupynumeric", "Legate")
    from legate.core import Type, get_legate_runtime  # noqa: PLC0415

    _, read = _task_functions()
    path = absolute(path)
    shape, dtype = inspect(path, dataset_name)
    runtime = get_legate_runtime()
    out = runtime.create_array(Type.from_numpy_dtype(dtype), shape)
    read(out, path, dataset_name, verify)
    return cn.asarray(out)


def from_file_batched(path: Any, dataset_name: str, chunk_size: Sequence[int], *,
                      verify: bool = True) -> Iterator[tuple[Any, tuple[int, ...]]]:
    """The dataset as cuPyNumeric arrays of at most `chunk_size`, in row-major order, each
    with its offsets; edge chunks clipped (5 with chunk 2: 2, 2, 1). `legate.io.hdf5`'s
    signature, over `h5tile.from_file_batched` (checked reads, the next chunk prefetched):
    every entry of `chunk_size` must be > 0 and its rank the dataset's (ValueError at the call,
    not at the first chunk)."""
    cn = require("cupynumeric", "Legate")
    from ._batches import from_file_batched as batches  # noqa: PLC0415

    reader = batches(absolute(path), dataset_name, chunk_size, verify=verify, like=np.empty(0))
    return ((cn.asarray(chunk), tuple(offsets)) for chunk, offsets in reader)
