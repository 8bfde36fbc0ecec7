"""Dask arrays written and read where their chunks live (`pip install 'h5tile[dask]'`).

    import h5tile, h5tile.dask
    h5tile.to_file(x, "out.h5", "/u")              # x a dask.array: the same as ...
    h5tile.dask.to_file(x, "out.h5", "/u")         # each chunk a tile, written by the worker
                                                   # computing it; one atomic commit here
    y = h5tile.dask.from_file("out.h5", "/u")      # lazy; chunks = the file's tiles, each
                                                   # read (checked) on the worker computing it

Writes go through a transaction (`h5tile.begin`): this process begins it and commits, the
workers write; only records of a few hundred bytes per chunk come back. Works with Dask's
threaded scheduler and with `dask.distributed` (the tasks pickle the transaction's token; no
HDF5 handle or lock crosses a process). A chunk that raises fails the write with its error,
and the file at the path stays as it was; a chunk computed twice (a worker lost, a task
retried) leaves one tile.
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

from ._engines import absolute, is_dask_array, require, tile_chunks
from ._read import from_file as _read_region
from ._read import inspect
from ._transaction import Record, Transaction, Writer, begin

__all__ = ["from_file", "to_file", "tile_chunks"]


def _modules() -> tuple[Any, Any]:
    return require("dask", "Dask"), require("dask.array", "Dask")


def _write_chunk(writer: Writer, block: Any, offset: tuple[int, ...],
                 dataset: str | None = None) -> Record:
    """A task: writes one chunk as its tile (of `dataset`, where the transaction declares
    several); its record."""
    return writer.write_tile(np.ascontiguousarray(block), offset, dataset)


def _commit(tx: Writer, records: Sequence[Record]) -> None:
    """The last task: the commit (here, or from the token where the graph runs elsewhere)."""
    tx.commit(records)
    if isinstance(tx, Transaction):
        tx.close()


def _offsets(chunks: tuple[tuple[int, ...], ...]) -> list[tuple[int, ...]]:
    """Each block's offset, in the order of `Array.to_delayed().ravel()`."""
    starts = [tuple(itertools.accumulate((0,) + c[:-1])) for c in chunks]
    return list(itertools.product(*starts))


def _writes(writer: Writer, arrays: Sequence[tuple[str | None, Any]]) -> list[Any]:
    """A delayed write of each chunk of each `(dataset, dask array)` as a tile of the
    transaction `writer` names; the tasks carry its token alone (no lock)."""
    dask, _ = _modules()
    token = Writer(writer.token, writer.datasets)
    return [
        dask.delayed(_write_chunk, pure=False)(token, block, offset, dataset)
        for dataset, x in arrays
        for block, offset in zip(x.to_delayed().ravel(), _offsets(x.chunks))
    ]


def write_tasks(writer: Writer, arrays: Sequence[tuple[str | None, Any]]) -> list[Record]:
    """Writes each chunk of each `(dataset, dask array)` as a tile of the transaction
    `writer` names, on the workers; their records."""
    if not arrays:
        return []
    dask, _ = _modules()
    return list(dask.compute(*_writes(writer, arrays)))


def commit_arrays(tx: Transaction, arrays: Sequence[tuple[str, Any, Any]]) -> None:
    """Writes each `(dataset, array, offset)` as tiles of the transaction `tx` and commits
    them: numpy arrays (any array `write_tile` takes) from this process, Dask arrays (whole
    datasets: no offset) chunk by chunk on the workers. A failure aborts `tx`; `tx` is closed
    either way."""
    try:
        records, lazy = [], []
        for dataset, array, offset in arrays:
            if is_dask_array(array):
                lazy.append((dataset, array))
            else:
                at = (0,) * np.ndim(array) if offset is None else offset
                records.append(tx.write_tile(array, at, dataset))
        records += write_tasks(tx, lazy)
        tx.commit(records)
    except BaseException:
        tx.abort()
        raise
    finally:
        tx.close()


def to_file(
    x: Any,
    path: Any,
    dataset_name: str,
    *,
    compute: bool = True,
    **write_options: Any,
) -> Any:
    """Writes the dask array `x` as the dataset `dataset_name` of `path`: each chunk a tile,
    written by the worker that computes it, then one atomic commit in this process. `x` is
    never computed into one process. `write_options` are `to_file`'s (layout "auto" or "vds";
    `compression` too). With `compute=False`, returns a `dask.delayed` that writes and commits
    when computed (the file is left as it was until then)."""
    dask, _ = _modules()
    tx = begin(absolute(path), dataset_name, x.shape, x.dtype, **write_options)
    if not compute:
        return dask.delayed(_commit, pure=False)(tx, _writes(tx, [(None, x)]))
    try:
        records = write_tasks(tx, [(None, x)])
    except BaseException:
        tx.abort()
        raise
    _commit(tx, records)
    return None


def _read_chunk(path: str, dataset_name: str, region: tuple[slice, ...], dtype: Any,
                verify: bool) -> np.ndarray:
    """A task: reads one chunk, its tiles checked."""
    return _read_region(path, dataset_name, region=region, dtype=dtype, verify=verify)


def from_file(
    path: Any,
    dataset_name: str,
    chunks: Any = "tiles",
    *,
    dtype: Any = None,
    verify: bool = True,
) -> Any:
    """The dataset `dataset_name` of `path` as a lazy `dask.array.Array`, each chunk read
    (its tiles checked, unless `verify=False`) by the task that needs it. `chunks`: "tiles"
    (the default: chunks no stored tile straddles, the file's tile grid; a file holding the
    dataset whole, such as the single-file layout, is split as Dask's "auto" splits it), or
    anything `dask.array` takes ("auto", a shape, per-axis sizes). Any HDF5 dataset reads."""
    _, da = _modules()
    from dask.base import tokenize  # noqa: PLC0415 (Dask is optional)
    from dask.highlevelgraph import HighLevelGraph  # noqa: PLC0415

    path = absolute(path)
    shape, stored = inspect(path, dataset_name)
    dt = stored if dtype is None else np.dtype(dtype)
    if isinstance(chunks, str) and chunks == "tiles":
        grid = tile_chunks(path, dataset_name, shape)
        # One box of the whole (not tiled): Dask's own split rather than one huge chunk.
        chunks = "auto" if all(len(c) == 1 for c in grid) and len(shape) > 0 else grid
    chunks = da.core.normalize_chunks(chunks, shape, dtype=dt)
    name = "h5tile-from-file-" + tokenize(path, dataset_name, chunks, str(dt), verify)
    starts = [tuple(itertools.accumulate((0,) + c[:-1])) for c in chunks]
    graph = {}
    for index in itertools.product(*(range(len(c)) for c in chunks)):
        region = tuple(
            slice(starts[a][i], starts[a][i] + chunks[a][i]) for a, i in enumerate(index))
        graph[(name,) + index] = (_read_chunk, path, dataset_name, region, dt, verify)
    hlg = HighLevelGraph.from_collections(name, graph, dependencies=())
    return da.Array(hlg, name, chunks, dtype=dt)
