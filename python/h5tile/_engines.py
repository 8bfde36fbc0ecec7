"""What the engine integrations (Dask, xarray, Legate) share: importing an optional extra with
an error that names it, telling an engine's array apart without importing the engine, and
the tile grid of a stored dataset."""

from __future__ import annotations

import ctypes
import importlib
import os
import sys
from typing import Any

import numpy as np

from ._library import check, lib


def require(module: str, extra: str) -> Any:
    """`module` imported, or an ImportError that names the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"h5tile's {extra} support needs {module.split('.')[0]}, which is not installed "
            f"({e}): pip install 'h5tile[{extra.lower()}]'"
        ) from e


def is_dask_array(obj: Any) -> bool:
    """Whether `obj` is a `dask.array.Array`, without importing Dask."""
    kind = type(obj)
    return kind.__name__ == "Array" and kind.__module__.startswith("dask.array")


def is_legate_array(obj: Any) -> bool:
    """Whether `obj` is a Legate array (cuPyNumeric's, or a `legate.core.LogicalArray`),
    without importing Legate."""
    module = type(obj).__module__
    return module.startswith(("cupynumeric", "legate.")) and hasattr(
        obj, "__legate_data_interface__")


def in_legate_program(comm: Any, like: Any, *others: Any) -> bool:
    """Whether a read returns cuPyNumeric arrays: `like` is a Legate array, or cuPyNumeric
    is imported and nothing asks for another kind (no communicator, `like`, `out=`, ...)."""
    if is_legate_array(like):
        return True
    return "cupynumeric" in sys.modules and comm is None and like is None and all(
        o is None for o in others)


def absolute(path: Any) -> str:
    """`path` from the root: tasks may run in other folders, or on other machines."""
    return os.path.abspath(os.fsdecode(os.fspath(path)))


def tiles(path: Any, dataset_name: str) -> tuple[np.ndarray, np.ndarray]:
    """The offsets and extents (each `ntiles × ndim`) of the boxes `dataset_name`'s stored
    tiles fill (`h5tile_tiles`): one per tile of a virtual dataset, one box of the whole
    otherwise."""
    from ._read import inspect  # noqa: PLC0415 (_write imports this module)
    from ._write import encode_file_path, encode_name  # noqa: PLC0415

    p, name = encode_file_path(path), encode_name(dataset_name)
    ndim = len(inspect(path, dataset_name)[0])
    n = ctypes.c_size_t()
    check(lib.h5tile_tiles(p, name, 0, ctypes.byref(n), None, None))
    while True:
        count = n.value
        offsets = np.zeros((max(count, 1), ndim), np.uint64)
        shapes = np.zeros((max(count, 1), ndim), np.uint64)
        u64 = ctypes.POINTER(ctypes.c_uint64)
        check(lib.h5tile_tiles(p, name, count, ctypes.byref(n),
                               offsets.ctypes.data_as(u64), shapes.ctypes.data_as(u64)))
        if n.value <= count:  # the file may have been replaced between the two calls
            return offsets[: n.value], shapes[: n.value]


def tile_chunks(path: Any, dataset_name: str, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Chunks along each axis that no tile straddles: every tile boundary of the stored
    dataset, on each axis (for tiles on a grid, the grid itself)."""
    offsets, extents = tiles(path, dataset_name)
    chunks = []
    for axis, n in enumerate(shape):
        cuts = {0, n}
        for o, e in zip(offsets[:, axis].tolist(), extents[:, axis].tolist()):
            if e > 0:
                cuts.update((o, o + e))
        edges = sorted(c for c in cuts if 0 <= c <= n)
        chunks.append(tuple(b - a for a, b in zip(edges, edges[1:])) or (0,))
    return tuple(chunks)
