"""Checkpoints and series with mpi4py communicators, under mpirun on 1, 2 and 4 ranks: several
fields committed together and restarted from `Series.latest()` on another decomposition, a
background commit and the fence, snapshot commits (fields changed once `commit_async`
returns), and failing together: one rank raising inside the `with` block, one rank's bad
`add`, one rank's bad staging budget, one rank unable to begin, ranks disagreeing on the
datasets. Every rank raises, nothing is written, and no rank waits for ever (ctest's timeout
would end it)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from mpi4py import MPI

import h5tile
from conftest import tree

world = MPI.COMM_WORLD
SHAPE = (9, 8)
U = np.arange(72, dtype=np.float64).reshape(SHAPE)
P = np.arange(3, dtype=np.int32)  # fewer elements than ranks on 4: some tiles are empty

several = pytest.mark.skipif(world.size < 2, reason="needs several ranks")


def block(shape: tuple[int, ...], comm: MPI.Comm = world) -> tuple[tuple[int, ...], tuple[slice, ...]]:
    offset, extent = h5tile.partition(shape, comm)
    return offset, tuple(slice(o, o + n) for o, n in zip(offset, extent))


def everyone(error: BaseException) -> list[tuple[str, int | None]]:
    """(class name, status) of the exception on every rank."""
    return world.allgather((type(error).__name__, getattr(error, "status", None)))


def save_fields(ck: h5tile.Checkpoint, step: int) -> None:
    _, box = block(SHAPE)
    _, pbox = block(P.shape)
    ck.add("/u", U[box] + step, global_shape=SHAPE)
    ck.add("/fields/p", P[pbox] * step, global_shape=P.shape)
    ck.attrs["step"] = step
    ck.attrs["time"] = step * 0.5
    ck.attrs["/u"]["units"] = "K"


def test_a_series_restarts_on_another_decomposition(scratch: Path) -> None:
    series = h5tile.Series(scratch / "run", world, keep_last=2)
    for step in (10, 20, 30):
        with series.save(step) as ck:
            save_fields(ck, step)
    files = sorted(p.name for p in (scratch / "run").glob("ckpt.*.h5"))
    assert files == ["ckpt.000000000020.h5", "ckpt.000000000030.h5"]
    step, path = series.latest()
    assert (step, path) == (30, series.path_of(30))
    assert series.latest(verify=True) == (step, path)
    # Restart: rows dealt in reverse rank order, then on half the ranks with their own blocks.
    n, r = world.size, world.size - 1 - world.rank
    rows = [SHAPE[0] * k // n for k in range(n + 1)]
    band = h5tile.from_file(path, "/u", comm=world, region=(slice(rows[r], rows[r + 1]),))
    assert np.array_equal(band, U[rows[r]:rows[r + 1]] + 30)
    half = world.Split(0 if world.rank < max(1, n // 2) else MPI.UNDEFINED, world.rank)
    if half != MPI.COMM_NULL:
        _, box = block(SHAPE, half)
        assert np.array_equal(h5tile.from_file(path, "/u", comm=half), U[box] + 30)
        _, pbox = block(P.shape, half)
        assert np.array_equal(h5tile.from_file(path, "/fields/p", comm=half), P[pbox] * 30)
        half.Free()
    if world.rank == 0:
        with h5py.File(path) as f:
            assert np.array_equal(f["u"][...], U + 30) and np.array_equal(f["fields/p"][...], P * 30)
            assert f.attrs["step"] == 30 and f.attrs["time"] == 15.0 and f.attrs["step"].shape == ()
            assert f["u"].attrs["units"] == "K"
    world.Barrier()


@pytest.mark.parametrize("layout", ["vds", "single", "subfiles"])
def test_every_layout_commits_every_field(scratch: Path, layout: str) -> None:
    with h5tile.Checkpoint(scratch / "a.h5", world, layout=layout) as ck:
        save_fields(ck, 1)
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "/u"), U + 1)
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "/fields/p"), P)
    world.Barrier()


def test_a_background_commit_and_the_fence(scratch: Path) -> None:
    futures = []
    for k in range(2):
        ck = h5tile.Checkpoint(scratch / f"{k}.h5", world)
        save_fields(ck, k)
        futures.append(ck.commit_async())
    h5tile.fence(world)
    assert [f.result(timeout=60) for f in futures] == [None, None]
    for k in range(2):
        assert np.array_equal(h5tile.from_file(scratch / f"{k}.h5", "/u"), U + k)
    world.Barrier()


def test_snapshot_commits_hold_every_ranks_fields_as_they_were(scratch: Path) -> None:
    shape = (1024, 512)  # 4 MiB in all
    full = np.arange(shape[0] * shape[1], dtype=np.float64).reshape(shape)
    _, box = block(shape)
    _, pbox = block(P.shape)
    u, p = full[box].copy(), P[pbox].copy()
    series = h5tile.Series(scratch / "run", world)
    for step in (1, 2):
        ck = series.save(step)
        ck.add("/u", u, global_shape=shape)
        ck.add("/fields/p", p, global_shape=P.shape)
        future = ck.commit_async()  # snapshot=True by default
        u += 1  # the next step's fields, while this one is written
        p += 1
        assert future.result(timeout=60) is None
    h5tile.fence(world)
    assert series.latest(verify=True) == (2, series.path_of(2))
    for step in (1, 2):
        path = series.path_of(step)
        assert np.array_equal(h5tile.from_file(path, "/u", comm=world), full[box] + step - 1)
        if world.rank == 0:
            with h5py.File(path) as f:
                assert np.array_equal(f["u"][...], full + step - 1)
                assert np.array_equal(f["fields/p"][...], P + step - 1)
    world.Barrier()


def old_file(scratch: Path) -> dict[str, bytes] | None:
    """A committed checkpoint at scratch/a.h5, and (on rank 0) every file's bytes."""
    with h5tile.Checkpoint(scratch / "a.h5", world) as ck:
        save_fields(ck, 1)
    world.Barrier()
    return tree(scratch) if world.rank == 0 else None


def nothing_written(scratch: Path, before: dict[str, bytes] | None) -> None:
    world.Barrier()
    if world.rank == 0:
        assert tree(scratch) == before


@several
def test_one_rank_raising_in_the_with_block_fails_every_rank(scratch: Path) -> None:
    before = old_file(scratch)
    with pytest.raises(Exception) as e:
        with h5tile.Checkpoint(scratch / "a.h5", world) as ck:
            save_fields(ck, 2)
            if world.rank == 1:
                raise RuntimeError("the solver diverged")
    if world.rank == 1:
        assert type(e.value) is RuntimeError  # its own exception goes on
    else:
        assert type(e.value) is h5tile.InvalidArgumentError
        assert str(e.value) == ("on rank 1: the checkpoint failed before its commit "
                                "(RuntimeError: the solver diverged); nothing was written")
    nothing_written(scratch, before)
    # In a series, the latest stays the previous step.
    series = h5tile.Series(scratch / "run", world)
    with series.save(1) as ck:
        save_fields(ck, 1)
    with pytest.raises((KeyboardInterrupt, h5tile.InvalidArgumentError)):
        with series.save(2) as ck:
            if world.rank == world.size - 1:
                raise KeyboardInterrupt  # any exception, not only Exception's
            save_fields(ck, 2)
    assert series.latest() == (1, series.path_of(1))


@several
def test_every_rank_raising_in_the_with_block(scratch: Path) -> None:
    before = old_file(scratch)
    with pytest.raises(ValueError, match=f"rank {world.rank}"):
        with h5tile.Checkpoint(scratch / "a.h5", world) as ck:
            save_fields(ck, 2)
            raise ValueError(f"rank {world.rank}")
    nothing_written(scratch, before)


@several
def test_one_ranks_bad_add_fails_every_commit(scratch: Path) -> None:
    before = old_file(scratch)
    last = world.size - 1
    ck = h5tile.Checkpoint(scratch / "a.h5", world)
    _, box = block(SHAPE)
    tile = U[box].astype(object) if world.rank == last else U[box]
    if world.rank == last:
        with pytest.raises(h5tile.DtypeError):
            ck.add("/u", tile, global_shape=SHAPE)
    else:
        ck.add("/u", tile, global_shape=SHAPE)
    with pytest.raises(h5tile.InvalidArgumentError, match="DtypeError") as e:
        ck.commit()
    assert set(everyone(e.value)) == {("InvalidArgumentError", 1)}
    assert (f"on rank {last}: " in str(e.value)) == (world.rank != last)
    nothing_written(scratch, before)


@several
def test_one_ranks_bad_staging_budget_fails_every_snapshot_commit(scratch: Path) -> None:
    before = old_file(scratch)
    last = world.size - 1
    ck = h5tile.Checkpoint(scratch / "a.h5", world)
    save_fields(ck, 2)
    with pytest.raises(h5tile.InvalidArgumentError) as e:
        ck.commit_async(staging_bytes=-1 if world.rank == last else 0)
    if world.rank == last:
        assert str(e.value).startswith("staging_bytes=-1: ")  # its own
    else:
        assert str(e.value).startswith(f"on rank {last}: the checkpoint failed before its "
                                        "commit (InvalidArgumentError: staging_bytes=-1: ")
    h5tile.fence(world)  # nothing started
    nothing_written(scratch, before)


@several
def test_one_rank_that_cannot_begin_fails_every_rank(scratch: Path) -> None:
    before = old_file(scratch)
    layout = "tiles" if world.rank == 0 else "vds"
    with pytest.raises(h5tile.InvalidArgumentError, match="layout='tiles'") as e:
        with h5tile.Checkpoint(scratch / "a.h5", world, layout=layout) as ck:
            save_fields(ck, 2)
    assert set(everyone(e.value)) == {("InvalidArgumentError", 1)}
    nothing_written(scratch, before)


@several
def test_ranks_disagreeing_on_the_datasets_fail_together(scratch: Path) -> None:
    before = old_file(scratch)
    with pytest.raises(h5tile.InvalidArgumentError) as e:
        with h5tile.Checkpoint(scratch / "a.h5", world) as ck:
            save_fields(ck, 2)
            if world.rank == 0:
                ck.add("/only_here", P, global_shape=P.shape)
    assert set(everyone(e.value)) == {("InvalidArgumentError", 1)}
    nothing_written(scratch, before)


def test_a_communicator_of_one_aborts_locally(scratch: Path) -> None:
    path = scratch / f"own{world.rank}.h5"
    with pytest.raises(RuntimeError):
        with h5tile.Checkpoint(path, MPI.COMM_SELF) as ck:
            ck.add("/p", P)
            raise RuntimeError("alone")
    assert not path.exists()
    with h5tile.Checkpoint(path, MPI.COMM_SELF) as ck:
        ck.add("/p", P)
    assert np.array_equal(h5tile.from_file(path, "/p", comm=MPI.COMM_SELF), P)
    world.Barrier()
