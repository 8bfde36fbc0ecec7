"""mpi4py on another MPI than libh5tile's (run under that MPI's mpirun, with mpi4py's wheel
pointed at it by MPI4PY_LIBMPI): every call given a communicator raises MPIError naming both
MPIs, before any MPI call; comm=None (this process alone) still works."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

import h5tile
from h5tile import _comm

world = MPI.COMM_WORLD


def test_the_two_mpis_differ() -> None:
    assert _comm.h5tile_mpi_version() != MPI.Get_library_version().rstrip("\0")


def test_communicators_are_refused_naming_both_mpis(scratch: Path) -> None:
    calls = {
        "to_file": lambda: h5tile.to_file(np.arange(4), scratch / "a.h5", "d", comm=world, global_shape=(4 * world.size,)),
        "to_file_async": lambda: h5tile.to_file_async(np.arange(4), scratch / "a.h5", "d", comm=world),
        "from_file": lambda: h5tile.from_file(scratch / "a.h5", "d", comm=world),
        "from_file_batched": lambda: h5tile.from_file_batched(scratch / "a.h5", "d", (2,), comm=world),
        "fence": lambda: h5tile.fence(world),
    }
    for name, call in calls.items():
        with pytest.raises(h5tile.MPIError) as e:
            call()
        assert e.value.status == 10 and e.value.name == "H5TILE_ERR_MPI", name
        message = str(e.value)
        assert "Open MPI" in message and "MPICH" in message, message
        assert message.startswith("mpi4py runs another MPI than libh5tile"), message
    assert not any(scratch.iterdir())


def test_this_process_alone_still_works(scratch: Path) -> None:
    path = scratch / f"own{world.rank}.h5"
    h5tile.to_file(np.arange(5.0), path, "d")
    assert np.array_equal(h5tile.from_file(path, "d"), np.arange(5.0))
    h5tile.to_file_async(np.arange(2), path, "e", keep_others=True).result(timeout=60)
    h5tile.fence()
    offset, extent = h5tile.partition((8,), world)  # no MPI call: any communicator's size
    assert sum(world.allgather(extent[0])) == 8
