"""h5tile with mpi4py communicators, run under mpirun on 1, 2 and 4 ranks: each rank writes
and reads its own tile, batches are dealt among ranks, background writes (snapshots of each
rank's tile by default) and the fence, and
every rank raising the same exception, also when only one rank's arguments are bad (it must
not leave the others waiting in a collective call)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from mpi4py import MPI

import h5tile
from conftest import tree

world = MPI.COMM_WORLD
SHAPE = (7, 10)
FULL = np.arange(70, dtype=np.float64).reshape(SHAPE)


def block(shape=SHAPE, comm=world):
    offset, extent = h5tile.partition(shape, comm)
    return offset, tuple(slice(o, o + n) for o, n in zip(offset, extent))


def everyone_raised(error: BaseException) -> list[tuple[str, int]]:
    """(class name, status) of the exception on every rank."""
    return world.allgather((type(error).__name__, getattr(error, "status", None)))


def test_the_package_and_mpi4py_share_one_mpi() -> None:
    from h5tile import _comm
    assert _comm.h5tile_mpi_version() == MPI.Get_library_version().rstrip("\0")
    assert MPI.Query_thread() == MPI.THREAD_MULTIPLE  # mpi4py's default: writes overlap


def test_partition_covers_the_shape_once() -> None:
    blocks = world.allgather(h5tile.partition(SHAPE, world))
    count = np.zeros(SHAPE, dtype=int)
    for offset, extent in blocks:
        count[offset[0]:offset[0] + extent[0], offset[1]:offset[1] + extent[1]] += 1
    assert (count == 1).all()


@pytest.mark.parametrize("layout", ["vds", "single", "subfiles"])
def test_each_rank_writes_its_tile_and_h5py_reads_the_whole(scratch: Path, layout: str) -> None:
    _, box = block()
    h5tile.to_file(FULL[box], scratch / "a.h5", "/field", comm=world, global_shape=SHAPE,
                   layout=layout)
    if world.rank == 0:
        with h5py.File(scratch / "a.h5") as f:
            assert np.array_equal(f["field"][...], FULL)
    # Read back: each rank its block by default, or any box (here a row each, wrapped).
    mine = h5tile.from_file(scratch / "a.h5", "field", comm=world)
    assert np.array_equal(mine, FULL[box])
    row = world.rank % SHAPE[0]
    got = h5tile.from_file(scratch / "a.h5", "field", comm=world, region=(slice(row, row + 1),))
    assert np.array_equal(got, FULL[row:row + 1])
    world.Barrier()


def test_the_default_layout_is_chosen_by_the_nodes_the_ranks_span(
        scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, box = block()
    names = {}
    for nodes, per_node in (("one", None), ("each rank its own", "1")):
        if per_node:
            monkeypatch.setenv("H5TILE_RANKS_PER_NODE", per_node)
        path = scratch / f"{len(names)}.h5"
        h5tile.to_file(FULL[box], path, "/field", comm=world, global_shape=SHAPE)
        names[nodes] = sorted(p.name for p in (scratch / f"{path.name}.tiles").iterdir())
        assert np.array_equal(h5tile.from_file(path, "field", comm=world), FULL[box])
    # One node: a tile file a rank (name.<generation>.r<rank>.t<k>.h5); each rank on a node
    # of its own: a subfile a node (name.<generation>.s<first rank>.h5), where there are two
    # nodes or more.
    def kinds(listing: list[str]) -> list[str]:
        return [n.split(".")[2][0] for n in listing]
    assert kinds(names["one"]) == ["r"] * world.size
    assert kinds(names["each rank its own"]) == ["s" if world.size > 1 else "r"] * world.size


def test_explicit_offsets_and_a_communicator_of_one(scratch: Path) -> None:
    # A band of rows per rank, placed by hand; then each rank alone with its own file.
    n, r = world.size, world.rank
    rows = [SHAPE[0] * k // n for k in range(n + 1)]
    h5tile.to_file(FULL[rows[r]:rows[r + 1]], scratch / "a.h5", "d", comm=world, global_shape=SHAPE,
                   offset=(rows[r], 0))
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "d"), FULL)  # comm=None: all of it
    h5tile.to_file(np.full(3, r), scratch / f"own{r}.h5", "d", comm=MPI.COMM_SELF)
    assert np.array_equal(h5tile.from_file(scratch / f"own{r}.h5", "d", comm=MPI.COMM_SELF), np.full(3, r))


def test_batches_are_dealt_among_the_ranks(scratch: Path) -> None:
    _, box = block()
    h5tile.to_file(FULL[box], scratch / "a.h5", "d", comm=world, global_shape=SHAPE)
    mine = []
    for chunk, offsets in h5tile.from_file_batched(scratch / "a.h5", "d", (3, 4), comm=world):
        assert np.array_equal(chunk, FULL[offsets[0]:offsets[0] + chunk.shape[0],
                                          offsets[1]:offsets[1] + chunk.shape[1]])
        mine.append(offsets)
    everything = sorted(o for offsets in world.allgather(mine) for o in offsets)
    assert everything == [(r, c) for r in (0, 3, 6) for c in (0, 4, 8)]


def test_background_writes_and_the_fence(scratch: Path) -> None:
    _, box = block()
    futures = [h5tile.to_file_async(FULL[box] * k, scratch / f"{k}.h5", "d", comm=world,
                                    global_shape=SHAPE) for k in range(3)]
    assert [f.result(timeout=60) for f in futures] == [None] * 3
    h5tile.fence(world)
    for k in range(3):
        assert np.array_equal(h5tile.from_file(scratch / f"{k}.h5", "d"), FULL * k)


def test_a_failed_background_write_of_one_rank_fails_every_ranks_fence(scratch: Path) -> None:
    if world.rank == 0:
        (scratch / "file").write_text("in the way")
    world.Barrier()
    path = scratch / ("file/a.h5" if world.rank == 0 else f"ok{world.rank}.h5")
    future = h5tile.to_file_async(np.arange(4), path, "d")  # this rank alone
    with pytest.raises(h5tile.H5TileError) as e:
        h5tile.fence(world)
    assert len(set(everyone_raised(e.value))) == 1
    if world.rank == 0:
        assert future.exception(timeout=60) is not None
    else:
        assert future.result(timeout=60) is None and "on rank 0" in str(e.value)
    h5tile.fence(world)  # reported once


def test_a_snapshot_holds_each_ranks_tile_as_it_was_at_the_call(scratch: Path) -> None:
    shape = (1024, 512)  # 4 MiB in all
    full = np.arange(shape[0] * shape[1], dtype=np.float64).reshape(shape)
    _, box = block(shape)
    tiles = [full[box].copy(), np.asfortranarray(full[box])]
    futures = [h5tile.to_file_async(t, scratch / f"{k}.h5", "d", comm=world, global_shape=shape)
               for k, t in enumerate(tiles)]  # snapshot=True by default
    for t in tiles:
        t[...] = -1  # at once, while the writes run
    assert [f.result(timeout=60) for f in futures] == [None, None]
    h5tile.fence(world)
    for k in range(2):
        assert np.array_equal(h5tile.from_file(scratch / f"{k}.h5", "d", comm=world), full[box])
    if world.rank == 0:
        for k in range(2):
            with h5py.File(scratch / f"{k}.h5") as f:
                assert np.array_equal(f["d"][...], full)
    world.Barrier()


def test_one_ranks_bad_staging_budget_fails_every_rank(scratch: Path) -> None:
    _, box = block()
    budget = -1 if world.rank == world.size - 1 else 0
    with pytest.raises(ValueError) as e:
        h5tile.to_file_async(FULL[box], scratch / "a.h5", "d", comm=world, global_shape=SHAPE,
                             staging_bytes=budget)
    assert set(everyone_raised(e.value)) == {("InvalidArgumentError", 1)}
    h5tile.fence(world)  # nothing started
    world.Barrier()
    assert not (scratch / "a.h5").exists()


def test_every_rank_raises_what_the_library_agreed(scratch: Path) -> None:
    with pytest.raises(FileNotFoundError) as e:
        h5tile.from_file(scratch / "none.h5", "d", comm=world)
    assert set(everyone_raised(e.value)) == {("NotFoundError", 3)}

    offset, box = block()
    h5tile.to_file(FULL[box], scratch / "a.h5", "d", comm=world, global_shape=SHAPE)
    before = tree(scratch) if world.rank == 0 else None
    world.Barrier()
    if world.size > 1:  # every rank claims the top-left corner: tiles overlap
        with pytest.raises(ValueError) as e:
            h5tile.to_file(FULL[box], scratch / "a.h5", "d", comm=world, global_shape=SHAPE,
                           offset=(0, 0))
        assert set(everyone_raised(e.value)) == {("ShapeError", 6)}
    with pytest.raises(ValueError) as e:
        h5tile.from_file_batched(scratch / "a.h5", "d", (0, 4), comm=world)
    assert set(everyone_raised(e.value)) == {("InvalidArgumentError", 1)}
    if world.size > 1:
        with pytest.raises(ValueError) as e:
            h5tile.to_file(FULL[box], scratch / "a.h5", "d", comm=world)  # no global_shape
        assert set(everyone_raised(e.value)) == {("InvalidArgumentError", 1)}
    world.Barrier()
    if world.rank == 0:
        assert tree(scratch) == before


def test_one_ranks_bad_arguments_fail_every_rank(scratch: Path) -> None:
    last = world.size - 1
    _, box = block()
    tile = FULL[box].astype(object) if world.rank == last else FULL[box]
    with pytest.raises(TypeError) as e:
        h5tile.to_file(tile, scratch / "a.h5", "d", comm=world, global_shape=SHAPE)
    assert set(everyone_raised(e.value)) == {("DtypeError", 5)}
    h5tile.to_file(FULL[box], scratch / "a.h5", "d", comm=world, global_shape=SHAPE)
    region = (slice(0, 4, 2),) if world.rank == last else None
    with pytest.raises(ValueError) as e:
        h5tile.from_file(scratch / "a.h5", "d", comm=world, region=region)
    assert set(everyone_raised(e.value)) == {("InvalidArgumentError", 1)}
    size = ("x", 4) if world.rank == last else (3, 4)
    with pytest.raises(ValueError) as e:
        h5tile.from_file_batched(scratch / "a.h5", "d", size, comm=world)
    # The last rank's ArgumentTypeError (a TypeError too), the others' InvalidArgumentError.
    assert {s for _, s in everyone_raised(e.value)} == {1}
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "d"), FULL)  # nothing harmed


def test_the_other_ranks_learn_the_real_reason_of_one_ranks_bad_arguments(scratch: Path) -> None:
    # The rank that cannot make the call joins it with placeholder arguments: the others'
    # messages name that rank and its own reason, not the placeholders' ("ndim is 0", "unknown
    # element type code 1000").
    if world.size == 1:
        pytest.skip("one rank: no other rank to tell")
    last = world.size - 1
    _, box = block()
    cases = [
        (TypeError, "DtypeError",
         lambda: h5tile.to_file(FULL[box].astype(object) if world.rank == last else FULL[box],
                                scratch / "a.h5", "d", comm=world, global_shape=SHAPE)),
        (ValueError, "InvalidArgumentError",
         lambda: h5tile.to_file(FULL[box][..., None] if world.rank == last else FULL[box],
                                scratch / "a.h5", "d", comm=world, global_shape=SHAPE)),
        (ValueError, "InvalidArgumentError",
         lambda: h5tile.from_file(scratch / "b.h5", "d", comm=world,
                                  region=(slice(0, 4, 2),) if world.rank == last else None)),
    ]
    h5tile.to_file(FULL[box], scratch / "b.h5", "d", comm=world, global_shape=SHAPE)
    for kind, name, call in cases:
        with pytest.raises(kind) as e:
            call()
        messages = world.allgather(str(e.value))
        assert {n for n, _ in everyone_raised(e.value)} == {name}, messages
        own = messages[last]
        for rank, message in enumerate(messages[:last]):
            assert message.startswith(f"on rank {last}: ") and own in message, (rank, messages)
            assert "ndim is 0" not in message and "code 1000" not in message, messages



def test_an_os_error_on_one_rank_carries_its_errno_to_every_rank_and_through_the_fence(scratch: Path) -> None:
    # A file-size limit on the last rank alone fails its tile's write with EFBIG (as a full
    # disk fails one with ENOSPC). A collective call agrees on the status, the message and
    # the error number, so every rank raises the same class with the same `.errno`; so does
    # a fence.
    import errno
    import resource
    import signal
    last = world.size - 1
    shape = (world.size * 512, 512)  # 2 MiB of float64 a rank
    offset, extent = h5tile.partition(shape, world)
    tile = np.ones(extent)
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails instead
    if world.rank == last:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, limits[1]))
    try:
        with pytest.raises(h5tile.IOFailure) as e:
            h5tile.to_file(tile, scratch / "a.h5", "d", comm=world, global_shape=shape)
        h5tile.to_file_async(tile, scratch / "b.h5", "d", comm=world, global_shape=shape)
        with pytest.raises(h5tile.IOFailure) as fenced:
            h5tile.fence(world)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)
    for raised in (e.value, fenced.value):
        assert world.allgather(raised.errno) == [errno.EFBIG] * world.size
        classes = world.allgather([c.__name__ for c in type(raised).__mro__])
        assert classes == [classes[last]] * world.size, classes
        messages = world.allgather(str(raised))
        assert messages[last].startswith("File too large"), messages
        for message in messages[:last]:
            assert message == f"on rank {last}: {messages[last]}", messages
    world.Barrier()
    if world.rank == 0:
        assert tree(scratch) == {}

def test_ranks_beyond_the_data_have_empty_tiles(scratch: Path) -> None:
    shape = (2,)
    offset, extent = h5tile.partition(shape, world)
    h5tile.to_file(np.arange(2.0)[offset[0]:offset[0] + extent[0]], scratch / "a.h5", "d",
                   comm=world, global_shape=shape)
    mine = h5tile.from_file(scratch / "a.h5", "d", comm=world)
    assert mine.shape == extent and np.array_equal(mine, np.arange(2.0)[offset[0]:offset[0] + extent[0]])
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "d"), np.arange(2.0))
