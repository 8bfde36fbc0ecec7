"""Checkpoints and series on one process (comm=None, no MPI): every layout, attributes of every
kind read back by h5py, the context manager committing on a clean exit and aborting on an
exception, arrays kept alive until the commit, background commits (snapshots by default: the
fields may change once `commit_async` returns), exact exception classes with nothing written,
and a series' retention, `latest` and `latest(verify=True)`."""

from __future__ import annotations

import ctypes
import gc
import weakref
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5tile
from conftest import tree
from h5tile import _constants, _library

U = np.arange(35, dtype=np.float64).reshape(5, 7)
P = np.arange(6, dtype=np.int32)


def attrs_of(path: Path, obj: str = "/") -> dict[str, object]:
    with h5py.File(path) as f:
        return {k: v for k, v in f[obj].attrs.items() if not k.startswith("h5tile_")}


@pytest.mark.parametrize("layout", ["vds", "single", "subfiles"])
def test_every_layout_writes_every_field_and_attribute_at_once(scratch: Path, layout: str) -> None:
    path = scratch / "ck.h5"
    with h5tile.Checkpoint(path, layout=layout) as ck:
        ck.add("/u", U)
        ck.add("/group/p", P)
        ck.add("flags", np.array([True, False, True]))  # the leading "/" may be left out
        ck.attrs["step"] = 100
        ck.attrs["/u"]["units"] = "K"
        ck.attrs["/group"]["count"] = 2
        assert not path.exists()  # nothing before the commit
    with h5py.File(path) as f:
        assert np.array_equal(f["u"][...], U) and f["u"].dtype == U.dtype
        assert np.array_equal(f["group/p"][...], P) and f["group/p"].dtype == P.dtype
        assert f["flags"][...].tolist() == [True, False, True]
    assert attrs_of(path)["step"].tolist() == 100
    assert attrs_of(path, "/u") == {"units": "K"}
    assert attrs_of(path, "/group")["count"].tolist() == 2
    assert np.array_equal(h5tile.from_file(path, "/u"), U)


ATTRIBUTES = [
    # value, the dtype h5py reads back, its values
    (100, np.int64, [100]),
    (-2**63, np.int64, [-2**63]),
    (1.5, np.float64, [1.5]),
    (True, np.bool_, [True]),
    (1 + 2j, np.complex128, [1 + 2j]),
    (np.float32(2.5), np.float32, [2.5]),
    (np.uint16(7), np.uint16, [7]),
    (np.int8(-3), np.int8, [-3]),
    (np.bool_(False), np.bool_, [False]),
    (np.complex64(1j), np.complex64, [1j]),
    (np.array(5, dtype=np.uint64), np.uint64, [5]),
    (np.array([1, 2, 3], dtype=np.int16), np.int16, [1, 2, 3]),
    (np.arange(4, dtype=">f8"), np.float64, [0.0, 1.0, 2.0, 3.0]),  # big-endian: as values
    (np.arange(6, dtype=np.float16)[::2], np.float16, [0.0, 2.0, 4.0]),  # strided
    ([1, 2, 3], np.int64, [1, 2, 3]),
    ((0.5, 1.5), np.float64, [0.5, 1.5]),
    ([True, False], np.bool_, [True, False]),
    ([1, 2.5], np.float64, [1.0, 2.5]),
]


@pytest.mark.parametrize("value, dtype, values", ATTRIBUTES,
                         ids=[f"{type(v).__name__}-{i}" for i, (v, _, _) in enumerate(ATTRIBUTES)])
def test_numbers_are_stored_in_their_type_one_value_as_a_scalar(
        scratch: Path, value: object, dtype: type, values: list[object]) -> None:
    with h5tile.Checkpoint(scratch / "a.h5") as ck:
        ck.add("/u", U)
        ck.attrs["x"] = value
        ck.attrs["/u"]["x"] = value
    for obj in ("/", "/u"):
        stored = np.asarray(attrs_of(scratch / "a.h5", obj)["x"])
        assert stored.dtype == np.dtype(dtype)
        if len(values) == 1:  # as h5py stores a number
            assert stored.ndim == 0 and stored.item() == values[0]
        else:
            assert stored.ndim == 1 and stored.tolist() == values


@pytest.mark.parametrize("text", ["K", "", "héllo ✓ 温度", "a 'quoted' name"])
def test_text_is_read_back_as_str(scratch: Path, text: str) -> None:
    with h5tile.Checkpoint(scratch / "a.h5") as ck:
        ck.add("/u", U)
        ck.attrs["/u"]["units"] = text
        ck.attrs["note"] = np.str_(text)
    assert attrs_of(scratch / "a.h5", "/u") == {"units": text}
    note = attrs_of(scratch / "a.h5")["note"]
    assert type(note) is str and note == text


def test_the_attrs_mapping_gives_back_what_was_set(scratch: Path) -> None:
    with h5tile.Checkpoint(scratch / "a.h5") as ck:
        ck.add("/u", U)
        ck.attrs["step"] = 1
        ck.attrs["step"] = 2  # set again: replaced
        ck.attrs["time"] = 0.25
        ck.attrs["/u"]["units"] = "K"
        assert ck.attrs["step"] == 2 and ck.attrs["/u"]["units"] == "K"
        assert dict(ck.attrs) == {"step": 2, "time": 0.25} and len(ck.attrs) == 2
        assert "step" in ck.attrs and "units" not in ck.attrs and "units" in ck.attrs["/u"]
        assert ck.attrs["/"] is ck.attrs and list(ck.attrs["/group"]) == []
        with pytest.raises(KeyError):
            ck.attrs["missing"]
        with pytest.raises(KeyError):
            ck.attrs["/u"]["/v"]  # objects are chosen on ck.attrs itself
        with pytest.raises(TypeError, match=r"attrs\['/u'\]\[name\]"):
            ck.attrs["/u"] = "K"
    assert attrs_of(scratch / "a.h5")["step"].tolist() == 2
    assert attrs_of(scratch / "a.h5", "/u") == {"units": "K"}


def test_the_declared_attribute_reader_reads_them(scratch: Path) -> None:
    # h5tile_attr_read_f has no Python function; its ctypes declaration is used here.
    with h5tile.Checkpoint(scratch / "a.h5") as ck:
        ck.add("/u", U)
        ck.attrs["/u"]["range"] = [1.5, 2.5]
    values = (ctypes.c_double * 2)()
    status = _library.lib.h5tile_attr_read_f(
        h5tile._comm.COMM_NULL, str(scratch / "a.h5").encode(), b"/u", b"range",
        _constants.H5TILE_FLOAT64, 2, values)
    assert status == 0 and list(values) == [1.5, 2.5]


BAD_VALUES = [
    # value, exception class, words of its message
    ({}, h5tile.ArgumentTypeError, "a dict is not stored"),  # a TypeError and a ValueError
    (None, h5tile.ArgumentTypeError, "a NoneType is not stored"),
    (object(), h5tile.ArgumentTypeError, "is not stored"),
    (b"K", h5tile.ArgumentTypeError, "bytes are not stored"),
    ([[1, 2], [3, 4]], h5tile.ArgumentTypeError, "one dimension"),
    ([[1, 2], [3]], h5tile.ArgumentTypeError, "attribute 'x' of '/u'"),
    (["a", "b"], h5tile.DtypeError, "not one h5tile stores"),
    (np.array([1, 2], dtype=object), h5tile.DtypeError, "not one h5tile stores"),
    (np.longdouble(1), h5tile.DtypeError, "not one h5tile stores"),
    ([], h5tile.InvalidArgumentError, "holds no values"),
    ("a\0b", h5tile.InvalidArgumentError, "NUL"),
    ("\udc80", h5tile.InvalidArgumentError, "not UTF-8"),
    (2**63, h5tile.ArgumentOverflowError, "does not fit in int64"),  # an OverflowError
]


@pytest.mark.parametrize("value, error, words", BAD_VALUES,
                         ids=[f"{type(v).__name__}-{i}" for i, (v, _, _) in enumerate(BAD_VALUES)])
def test_a_bad_value_raises_naming_the_attribute_and_nothing_is_written(
        scratch: Path, value: object, error: type, words: str) -> None:
    ck = h5tile.Checkpoint(scratch / "a.h5")
    ck.add("/u", U)
    with pytest.raises(error, match="attribute 'x' of '/u'") as e:
        ck.attrs["/u"]["x"] = value
    assert type(e.value) is error and words in str(e.value)
    assert "x" not in ck.attrs["/u"]
    # The checkpoint is spoilt: its commit fails (on every rank, in an MPI program).
    with pytest.raises(h5tile.InvalidArgumentError, match="failed before its commit") as c:
        ck.commit()
    assert error.__name__ in str(c.value) and "nothing was written" in str(c.value)
    assert tree(scratch) == {}


@pytest.mark.parametrize("name, error", [("", h5tile.InvalidArgumentError),
                                         ("a\0b", h5tile.InvalidArgumentError), (5, TypeError)])
def test_a_bad_attribute_name_raises(scratch: Path, name: object, error: type) -> None:
    with pytest.raises(error):
        with h5tile.Checkpoint(scratch / "a.h5") as ck:
            ck.add("/u", U)
            ck.attrs[name] = 1
    assert tree(scratch) == {}


def test_the_with_block_commits_on_a_clean_exit_and_aborts_on_an_exception(scratch: Path) -> None:
    path = scratch / "a.h5"
    with h5tile.Checkpoint(path) as ck:
        ck.add("/u", U)
        ck.attrs["step"] = 1
    before = tree(scratch)
    with pytest.raises(RuntimeError, match="solver diverged"):
        with h5tile.Checkpoint(path) as ck:
            ck.add("/u", U * 2)
            ck.attrs["step"] = 2
            raise RuntimeError("solver diverged")
    assert tree(scratch) == before  # the old file, untouched
    with pytest.raises(h5tile.InvalidArgumentError, match="it was aborted"):
        ck.commit()
    with pytest.raises(KeyboardInterrupt):
        with h5tile.Checkpoint(scratch / "b.h5") as ck:
            ck.add("/u", U)
            raise KeyboardInterrupt
    assert tree(scratch) == before
    assert attrs_of(path)["step"].tolist() == 1


def test_a_checkpoint_is_committed_once(scratch: Path) -> None:
    with h5tile.Checkpoint(scratch / "a.h5") as ck:
        ck.add("/u", U)
        ck.commit()  # within the block: the exit has nothing left to do
        assert repr(ck).endswith(", committed>")
    with pytest.raises(h5tile.InvalidArgumentError, match="cannot commit .* it was committed"):
        ck.commit()
    with pytest.raises(ValueError, match="cannot add to"):
        ck.add("/v", U)
    with pytest.raises(ValueError, match="cannot set an attribute of"):
        ck.attrs["step"] = 1
    with pytest.raises(ValueError):
        ck.commit_async()
    ck.abort()  # nothing to abort
    ck = h5tile.Checkpoint(scratch / "b.h5")
    ck.add("/u", U)
    ck.abort()
    ck.abort()
    with pytest.raises(h5tile.InvalidArgumentError, match="it was aborted"):
        ck.commit()
    assert not (scratch / "b.h5").exists()


def test_a_dataset_added_twice_with_another_dtype_fails_now_and_at_the_commit(scratch: Path) -> None:
    ck = h5tile.Checkpoint(scratch / "a.h5")
    ck.add("/u", U)
    with pytest.raises(h5tile.InvalidArgumentError, match="added as float64 .* now as int32"):
        ck.add("/u", U.astype(np.int32))
    with pytest.raises(h5tile.InvalidArgumentError, match="added as float64") as e:
        ck.commit()
    assert isinstance(e.value, ValueError) and e.value.status == 1
    with pytest.raises(h5tile.InvalidArgumentError, match="it was committed, and the commit failed"):
        ck.commit()
    assert tree(scratch) == {}


def test_errors_have_their_exact_class_and_write_nothing(scratch: Path) -> None:
    # An unsupported element type: DtypeError at add; the commit then refuses.
    ck = h5tile.Checkpoint(scratch / "a.h5")
    with pytest.raises(h5tile.DtypeError):
        ck.add("/u", np.zeros(3, dtype=object))
    with pytest.raises(h5tile.InvalidArgumentError, match="DtypeError"):
        ck.commit()
    # Tiles outside the global shape, or leaving gaps: found at the commit.
    ck = h5tile.Checkpoint(scratch / "a.h5")
    ck.add("/u", U, offset=(1, 0), global_shape=U.shape)
    with pytest.raises(h5tile.InvalidArgumentError, match="outside the global shape"):
        ck.commit()
    ck = h5tile.Checkpoint(scratch / "a.h5")
    ck.add("/u", U[:2], global_shape=U.shape)
    with pytest.raises(h5tile.ShapeError):
        ck.commit()
    # Two datasets where one would be the other's group.
    ck = h5tile.Checkpoint(scratch / "a.h5")
    ck.add("/u", U)
    ck.add("/u/v", U)
    with pytest.raises(h5tile.InvalidArgumentError, match="a dataset is not a group"):
        ck.commit()
    # Options checked when the checkpoint is made.
    with pytest.raises(h5tile.InvalidArgumentError, match="layout='tiles'"):
        h5tile.Checkpoint(scratch / "a.h5", layout="tiles")
    with pytest.raises(h5tile.InvalidArgumentError, match="compression='brotli'"):
        h5tile.Checkpoint(scratch / "a.h5", compression="brotli")
    # A misspelled write option is Python's own TypeError, naming the class and the keyword.
    with pytest.raises(TypeError, match=r"^Checkpoint\(\) got an unexpected keyword argument 'layuot'$"):
        h5tile.Checkpoint(scratch / "a.h5", layuot="single")  # type: ignore[call-arg]
    assert tree(scratch) == {}
    # overwrite=False and an existing file: FileExistsError, the file untouched.
    h5tile.to_file(P, scratch / "a.h5", "/p")
    before = tree(scratch)
    with pytest.raises(FileExistsError) as e:
        with h5tile.Checkpoint(scratch / "a.h5", overwrite=False) as ck:
            ck.add("/u", U)
    assert isinstance(e.value, h5tile.ExistsError)
    assert tree(scratch) == before
    # A directory in the way.
    (scratch / "dir.h5").mkdir()
    with pytest.raises(IsADirectoryError):
        with h5tile.Checkpoint(scratch / "dir.h5") as ck:
            ck.add("/u", U)


def test_several_adds_of_one_name_are_tiles_of_one_dataset(scratch: Path) -> None:
    with h5tile.Checkpoint(scratch / "a.h5", allow_partial=False) as ck:
        ck.add("/u", U[:2], offset=(0, 0), global_shape=U.shape)
        ck.add("/u", U[2:, :3], offset=(2, 0), global_shape=U.shape)
        ck.add("/u", U[2:, 3:], offset=(2, 3), global_shape=U.shape)
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "/u"), U)
    with h5tile.Checkpoint(scratch / "b.h5", allow_partial=True) as ck:
        ck.add("/u", U[:2], offset=(0, 0), global_shape=U.shape)
    expected = np.zeros_like(U)
    expected[:2] = U[:2]
    assert np.array_equal(h5tile.from_file(scratch / "b.h5", "/u"), expected)


def test_keep_others_keeps_the_files_other_datasets(scratch: Path) -> None:
    h5tile.to_file(P, scratch / "a.h5", "/p")
    with h5tile.Checkpoint(scratch / "a.h5", keep_others=True) as ck:
        ck.add("/u", U)
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "/p"), P)
    with h5tile.Checkpoint(scratch / "a.h5", sync=False) as ck:
        ck.add("/u", U)
    with h5py.File(scratch / "a.h5") as f:
        assert list(f) == ["u"]


def test_the_arrays_stay_alive_until_the_commit(scratch: Path) -> None:
    with h5tile.Checkpoint(scratch / "a.h5") as ck:
        ck.add("/t", np.arange(35.0).reshape(7, 5).T)  # a copy in C order, held by ck alone
        ck.add("/v", list(range(10)))                  # converted: a new array
        gc.collect()
        np.ones(10_000)  # memory a freed buffer might be reused for
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "/t"), np.arange(35.0).reshape(7, 5).T)
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "/v"), np.arange(10))


def test_a_background_commit_completes_by_itself_and_in_the_fence(scratch: Path) -> None:
    futures = []
    for k in range(3):
        ck = h5tile.Checkpoint(scratch / f"{k}.h5")
        ck.add("/u", U * k)
        ck.add("/t", np.arange(35.0 * k).reshape(7, -1).T if k else np.zeros(1))
        ck.attrs["k"] = k
        futures.append(ck.commit_async())
        del ck
    gc.collect()
    assert futures[0].result(timeout=60) is None
    h5tile.fence()
    for k, f in enumerate(futures):
        assert f.done() and f.result() is None
        assert np.array_equal(h5tile.from_file(scratch / f"{k}.h5", "/u"), U * k)
        assert attrs_of(scratch / f"{k}.h5")["k"].tolist() == k
    # A failure in the background: the Future and the fence raise it.
    ck = h5tile.Checkpoint(scratch / "0.h5", overwrite=False)
    ck.add("/u", U)
    future = ck.commit_async()
    with pytest.raises(FileExistsError):
        future.result(timeout=60)
    with pytest.raises(h5tile.ExistsError):
        h5tile.fence()
    # Disagreements found before the write starts raise at once.
    ck = h5tile.Checkpoint(scratch / "x.h5")
    ck.add("/u", U, offset=(3, 3), global_shape=U.shape)
    with pytest.raises(h5tile.InvalidArgumentError):
        ck.commit_async()
    h5tile.fence()


BIG = np.arange(512 * 1024, dtype=np.float64).reshape(512, 1024)  # 4 MiB


def test_a_snapshot_commit_holds_the_fields_as_they_were_at_the_call(scratch: Path) -> None:
    u, whole = BIG.copy(), BIG.T.copy()
    v = whole.T  # Fortran order: a C-order copy is what the library gets
    ck = h5tile.Checkpoint(scratch / "a.h5")
    ck.add("/u", u)
    ck.add("/v", v)
    ck.attrs["step"] = 1
    future = ck.commit_async()  # snapshot=True by default
    u[...] = -1  # at once, while the write runs
    whole[...] = -2
    alive = weakref.ref(u)
    del u
    gc.collect()
    assert alive() is None  # neither the checkpoint nor the Future holds it
    assert future.result(timeout=60) is None
    with h5py.File(scratch / "a.h5") as f:
        assert np.array_equal(f["u"][...], BIG) and np.array_equal(f["v"][...], BIG)
    assert attrs_of(scratch / "a.h5")["step"].tolist() == 1
    h5tile.fence()


def test_a_commit_without_snapshot_holds_the_fields_until_it_ends(scratch: Path) -> None:
    ck = h5tile.Checkpoint(scratch / "a.h5")
    ck.add("/u", BIG.copy())
    ck.add("/t", BIG.T.copy().T)  # a C-order copy, held by the checkpoint alone
    future = ck.commit_async(snapshot=False)
    gc.collect()
    assert future.result(timeout=60) is None
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "/u"), BIG)
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "/t"), BIG)
    h5tile.fence()


def test_a_snapshot_commit_is_made_of_every_step_of_the_checkpoint(scratch: Path) -> None:
    # The library takes the snapshot flag when a checkpoint begins: the package begins it again
    # for a snapshot commit and makes the same adds, attributes and refusals on it.
    ck = h5tile.Checkpoint(scratch / "a.h5", allow_partial=False)
    ck.add("/u", U[:2], offset=(0, 0), global_shape=U.shape)
    ck.add("/u", U[2:], offset=(2, 0), global_shape=U.shape)
    ck.attrs["step"] = 1
    ck.attrs["step"] = 2
    ck.attrs["/u"]["units"] = "K"
    ck.commit_async().result(timeout=60)
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "/u"), U)
    assert attrs_of(scratch / "a.h5")["step"].tolist() == 2
    assert attrs_of(scratch / "a.h5", "/u") == {"units": "K"}
    h5tile.fence()
    before = tree(scratch)
    ck = h5tile.Checkpoint(scratch / "a.h5")
    ck.add("/u", U)
    with pytest.raises(h5tile.InvalidArgumentError, match="added as float64"):
        ck.add("/u", U.astype(np.int32))
    with pytest.raises(h5tile.InvalidArgumentError, match="added as float64"):
        ck.commit_async()
    ck = h5tile.Checkpoint(scratch / "a.h5")
    with pytest.raises(h5tile.DtypeError):
        ck.add("/u", np.zeros(3, dtype=object))
    with pytest.raises(h5tile.InvalidArgumentError, match="DtypeError"):
        ck.commit_async()
    ck = h5tile.Checkpoint(scratch / "a.h5")
    ck.add("/u", U, offset=(1, 0), global_shape=U.shape)
    with pytest.raises(h5tile.InvalidArgumentError, match="outside the global shape"):
        ck.commit_async()
    with pytest.raises(h5tile.InvalidArgumentError, match="it was committed, and the commit failed"):
        ck.commit_async()  # once
    h5tile.fence()
    assert tree(scratch) == before


def test_a_bad_staging_budget_fails_the_commit_and_writes_nothing(
        scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for bad, error in ((-1, h5tile.InvalidArgumentError), ("1M", TypeError), (2.0, TypeError)):
        ck = h5tile.Checkpoint(scratch / "a.h5")
        ck.add("/u", U)
        with pytest.raises(error, match="staging_bytes"):
            ck.commit_async(staging_bytes=bad)  # type: ignore[arg-type]
        with pytest.raises(h5tile.InvalidArgumentError, match="it was committed, and the commit"):
            ck.commit()
    assert tree(scratch) == {}
    # A bad H5TILE_STAGING_BYTES fails snapshot commits only, at the call.
    monkeypatch.setenv("H5TILE_STAGING_BYTES", "lots")
    ck = h5tile.Checkpoint(scratch / "a.h5")
    ck.add("/u", U)
    with pytest.raises(h5tile.InvalidArgumentError, match="^H5TILE_STAGING_BYTES=lots"):
        ck.commit_async()
    assert tree(scratch) == {}
    commits = (lambda ck: ck.commit(), lambda ck: ck.commit_async(snapshot=False).result(),
               lambda ck: ck.commit_async(staging_bytes=1 << 20).result())
    for k, commit in enumerate(commits):
        ck = h5tile.Checkpoint(scratch / f"{k}.h5")
        ck.add("/u", U)
        commit(ck)
        assert np.array_equal(h5tile.from_file(scratch / f"{k}.h5", "/u"), U)
    h5tile.fence()


def steps_in(folder: Path) -> list[int]:
    return sorted(int(p.name.split(".")[1]) for p in folder.glob("ckpt.*.h5"))


@pytest.mark.parametrize("keep_last, keep_every, kept", [
    (None, None, [1, 2, 3, 4, 5, 6, 7]),
    (2, None, [6, 7]),
    (2, 3, [3, 6, 7]),
    (1, 2, [2, 4, 6, 7]),
])
def test_a_series_keeps_what_its_rule_says(scratch: Path, keep_last: int | None,
                                           keep_every: int | None, kept: list[int]) -> None:
    series = h5tile.Series(scratch / "run", keep_last=keep_last, keep_every=keep_every)
    for step in range(1, 8):
        with series.save(step) as ck:
            assert ck.path == str(scratch / "run" / f"ckpt.{step:012d}.h5")
            ck.add("/u", U + step)
            ck.attrs["step"] = step
    assert steps_in(scratch / "run") == kept
    # Tile folders go with their checkpoints.
    assert sorted(p.name for p in (scratch / "run").glob("*.tiles")) == [
        f"ckpt.{s:012d}.h5.tiles" for s in kept]
    step, path = series.latest()
    assert (step, path) == (7, series.path_of(7)) and isinstance(path, str)
    assert np.array_equal(h5tile.from_file(path, "/u"), U + 7)
    assert attrs_of(Path(path))["step"].tolist() == 7


@pytest.mark.parametrize("layout", ["vds", "single", "subfiles"])
def test_a_series_in_every_layout(scratch: Path, layout: str) -> None:
    series = h5tile.Series(scratch / "run", keep_last=1, layout=layout)
    for step in (10, 20):
        with series.save(step) as ck:
            ck.add("/u", U * step)
    assert steps_in(scratch / "run") == [20]
    assert series.latest(verify=True) == (20, series.path_of(20))
    assert np.array_equal(h5tile.from_file(series.latest()[1], "/u"), U * 20)


def test_a_failed_step_leaves_the_latest_as_it_was(scratch: Path) -> None:
    series = h5tile.Series(scratch / "run", keep_last=1)
    with series.save(1) as ck:
        ck.add("/u", U)
    with pytest.raises(RuntimeError):
        with series.save(2) as ck:
            ck.add("/u", U)
            raise RuntimeError("stop")
    assert series.latest() == (1, series.path_of(1)) and steps_in(scratch / "run") == [1]


def test_a_series_step_committed_in_the_background_is_a_snapshot(scratch: Path) -> None:
    series = h5tile.Series(scratch / "run", keep_last=1)
    u = BIG.copy()
    for step in (1, 2):
        ck = series.save(step)
        ck.add("/u", u)
        ck.attrs["step"] = step
        future = ck.commit_async()
        u += 1000  # the next step's field, while this one is written
        assert future.result(timeout=60) is None
    h5tile.fence()
    assert steps_in(scratch / "run") == [2]
    assert series.latest(verify=True) == (2, series.path_of(2))
    assert np.array_equal(h5tile.from_file(series.path_of(2), "/u"), BIG + 1000)
    assert attrs_of(Path(series.path_of(2)))["step"].tolist() == 2


def damage(tile_folder: Path, values: np.ndarray) -> Path:
    """Flips a bit inside `values`' bytes in the one tile file of `tile_folder` that holds them."""
    needle = values.tobytes()
    for tile in sorted(tile_folder.rglob("*.h5")):
        data = bytearray(tile.read_bytes())
        at = data.find(needle)
        if at >= 0:
            data[at + len(needle) // 2] ^= 0x10
            tile.write_bytes(bytes(data))
            return tile
    raise AssertionError(f"the values are in no tile file of {tile_folder}")


def test_latest_verified_passes_over_a_damaged_checkpoint(scratch: Path) -> None:
    series = h5tile.Series(scratch / "run")
    for step in (1, 2, 3):
        with series.save(step) as ck:
            ck.add("/u", U + 1000 * step)
    damage(Path(series.path_of(3) + ".tiles"), U + 3000)
    assert series.latest() == (3, series.path_of(3))
    with pytest.warns(h5tile.SkippedCheckpointWarning, match=r"took step 2.* step 3 \(.*checksum"):
        assert series.latest(verify=True) == (2, series.path_of(2))
    with pytest.raises(h5tile.CorruptError):
        h5tile.from_file(series.path_of(3), "/u")


def test_latest_of_a_series_with_no_checkpoint_raises_not_found(scratch: Path) -> None:
    (scratch / "empty").mkdir()
    for folder in (scratch / "empty", scratch / "missing"):
        for verify in (False, True):
            with pytest.raises(FileNotFoundError) as e:
                h5tile.Series(folder).latest(verify=verify)
            assert isinstance(e.value, h5tile.NotFoundError) and e.value.status == 3
    assert not (scratch / "missing").exists()


def test_bad_series_arguments(scratch: Path) -> None:
    for bad in (0, -1):
        with pytest.raises(h5tile.InvalidArgumentError, match=f"keep_last={bad}"):
            h5tile.Series(scratch / "run", keep_last=bad)
    with pytest.raises(TypeError):
        h5tile.Series(scratch / "run", keep_every="3")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        h5tile.Series(scratch / "run", keep_last=True)
    with pytest.raises(h5tile.InvalidArgumentError, match="layout="):
        h5tile.Series(scratch / "run", layout="bogus")
    with pytest.raises(TypeError, match=r"^Series\(\) got an unexpected keyword argument 'sink'$"):
        h5tile.Series(scratch / "run", sink=False)  # type: ignore[call-arg]
    series = h5tile.Series(scratch / "run")
    with pytest.raises(h5tile.InvalidArgumentError, match="step -1"):
        series.save(-1)
    with pytest.raises(TypeError):
        series.save(1.5)  # type: ignore[arg-type]
    assert tree(scratch) == {}


def test_load_reads_fields_and_attributes_back_in_one_call(scratch: Path) -> None:
    path = scratch / "ck.h5"
    with h5tile.Checkpoint(path) as ck:
        ck.add("/u", U)
        ck.add("/group/v", U[:2] * 2)
        ck.attrs["step"] = 50
        ck.attrs["time"] = 0.25
    u, v = np.empty_like(U), np.empty((2, 2), dtype=U.dtype)
    got = h5tile.load(path, {"/u": u, "/group/v": (v, (slice(0, 2), slice(1, 3)))},
                      attrs={"step": np.int64, "time": np.float64})
    assert np.array_equal(u, U) and np.array_equal(v, U[:2, 1:3] * 2)
    assert got == {"step": 50, "time": 0.25} and isinstance(got["step"], np.int64)
    with pytest.raises(h5tile.NotFoundError, match="'/w'"):
        h5tile.load(path, {"/u": u, "/w": u})
    with pytest.raises(h5tile.NotFoundError, match="attribute 'nothing' of '/u'"):
        h5tile.load(path, {"/u": u}, attrs={"/u@nothing": np.float64})
    with pytest.raises(h5tile.InvalidArgumentError, match="out has shape"):
        h5tile.load(path, {"/u": v})
