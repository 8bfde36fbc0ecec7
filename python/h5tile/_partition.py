"""`partition`: the block of a dataset that is this rank's, as libh5tile proposes it."""

from __future__ import annotations

from typing import Any, Sequence

from ._comm import size_and_rank
from ._library import check, lib
from ._shapes import as_tuple, u64_array


def partition(global_shape: Sequence[int], comm: Any = None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(offset, shape) of this rank's block of `global_shape` in a balanced block decomposition
    over `comm`'s ranks (the whole shape for comm=None). Ranks beyond the data get a block with
    a zero extent. Not collective."""
    nranks, rank = size_and_rank(comm)
    global_shape = as_tuple(global_shape, "global_shape")
    ndim = len(global_shape)
    offset, shape = u64_array([0] * ndim), u64_array([0] * ndim)
    check(lib.h5tile_partition(nranks, rank, ndim, u64_array(global_shape), offset, shape))
    return tuple(offset), tuple(shape)
