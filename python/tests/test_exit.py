"""A program that exits with background writes still running: they complete first (before
mpi4py finalizes MPI), alone and under the MPI launcher (H5TILE_TEST_MPIEXEC, given by ctest)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import h5tile

ALONE = """
import sys, numpy as np, h5tile
for k in range(3):
    h5tile.to_file_async(np.full((256, 256), float(k)), f"{sys.argv[1]}/{k}.h5", "d")
"""  # and exits at once

UNDER_MPI = """
import sys, numpy as np
from mpi4py import MPI
import h5tile
world, shape = MPI.COMM_WORLD, (4096, 2048)  # 64 MiB a write: still running at exit
offset, extent = h5tile.partition(shape, world)
for k in range(3):
    h5tile.to_file_async(np.full(extent, float(k)), f"{sys.argv[1]}/{k}.h5", "d", comm=world,
                         global_shape=shape)
"""


def check_written(folder: Path, shape: tuple[int, int]) -> None:
    for k in range(3):
        assert np.array_equal(h5tile.from_file(folder / f"{k}.h5", "d"), np.full(shape, float(k)))


def test_writes_pending_at_exit_complete(scratch: Path) -> None:
    run = subprocess.run([sys.executable, "-c", ALONE, str(scratch)], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    check_written(scratch, (256, 256))


@pytest.mark.skipif("H5TILE_TEST_MPIEXEC" not in os.environ, reason="H5TILE_TEST_MPIEXEC not given")
def test_writes_pending_at_exit_complete_before_mpi_finalize(scratch: Path) -> None:
    launcher = os.environ["H5TILE_TEST_MPIEXEC"]
    run = subprocess.run([launcher, "-n", "2", sys.executable, "-c", UNDER_MPI, str(scratch)],
                         capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stdout + run.stderr
    check_written(scratch, (4096, 2048))
