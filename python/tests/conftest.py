"""Shared fixtures of h5tile's Python tests.

They run against an installed package (PYTHONPATH=<prefix>/share/h5tile/python, as ctest sets
it) and real files. Environment: H5TILE_TEST_SCRATCH, the folder tests write under (default:
a temporary folder); H5TILE_TEST_PREFIX, the h5tile install (default: the prefix of the
library the package loaded). Under mpirun every rank runs every test, in the same order.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import h5tile
from h5tile import _library


def world():
    """mpi4py's COMM_WORLD if a test module imported mpi4py, else None."""
    mpi = sys.modules.get("mpi4py.MPI")
    return mpi.COMM_WORLD if mpi is not None else None


@pytest.fixture(scope="session")
def scratch_root() -> Path:
    comm = world()
    root = os.environ.get("H5TILE_TEST_SCRATCH")
    if root is None:
        root = tempfile.mkdtemp(prefix="h5tile-python-") if comm is None or comm.rank == 0 else None
        if comm is not None:
            root = comm.bcast(root)
    return Path(root)


@pytest.fixture
def scratch(scratch_root: Path, request: pytest.FixtureRequest) -> Path:
    """An empty folder for this test, the same on every rank."""
    comm = world()
    folder = scratch_root / request.node.name.replace("[", "-").replace("]", "")
    if comm is None or comm.rank == 0:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    if comm is not None:
        comm.Barrier()
    return folder


@pytest.fixture(scope="session")
def prefix() -> Path:
    given = os.environ.get("H5TILE_TEST_PREFIX")
    return Path(given) if given else Path(_library.path).resolve().parent.parent


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` with its bytes: to check that a failed call harmed nothing."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


assert h5tile  # the package under test is importable before any test runs


class DLPackOnly:
    """An array seen only through DLPack (as a CPU or CUDA torch tensor or a JAX array would
    be): the package must take it by `__dlpack__` alone."""

    def __init__(self, a: Any) -> None:
        self._a = a

    def __dlpack__(self, **kw: Any) -> Any:
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self) -> Any:
        return self._a.__dlpack_device__()
