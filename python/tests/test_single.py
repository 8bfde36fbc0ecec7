"""h5tile on one process (comm=None, no MPI): round trips of every element type and kind of
array, regions, conversions, batches, background writes (snapshots, their staging budget, fences
across the C API, arrays changed while a write without a snapshot runs), and bad input (the
exact class and status, and no file harmed). h5py reads what h5tile wrote and writes what
h5tile reads."""

from __future__ import annotations

import array
import ctypes
import gc
import inspect
import os
import re
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5tile
from conftest import DLPackOnly, tree
from h5tile import _comm, _constants, _library
from h5tile._shapes import u64_array
from h5tile._write import _WRITE_DEFAULTS, WriteKeywords

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]


def sample(dtype: type, shape: tuple[int, ...] = (5, 7)) -> np.ndarray:
    values = np.arange(int(np.prod(shape))).reshape(shape)
    if np.dtype(dtype).kind == "c":
        return (values + 1j * values[::-1]).astype(dtype)
    return (values % 2 == 1) if dtype is np.bool_ else values.astype(dtype)


def test_mpi4py_is_not_needed_alone() -> None:
    assert "mpi4py.MPI" not in sys.modules


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_dtype_round_trips_and_h5py_reads_it(scratch: Path, dtype: type) -> None:
    a = sample(dtype)
    h5tile.to_file(a, scratch / "a.h5", "/data")
    b = h5tile.from_file(scratch / "a.h5", "/data")
    assert type(b) is np.ndarray and b.dtype == a.dtype and b.shape == a.shape
    assert np.array_equal(a, b)
    with h5py.File(scratch / "a.h5") as f:
        stored = f["data"][...]
    assert stored.dtype == a.dtype and np.array_equal(stored, a)


@pytest.mark.parametrize("bad", [np.dtype("O"), np.dtype("U3"), np.dtype("M8[s]"),
                                 np.dtype(np.longdouble), np.dtype([("x", "f8")])], ids=str)
def test_other_dtypes_raise_type_error_and_write_nothing(scratch: Path, bad: np.dtype) -> None:
    with pytest.raises(TypeError) as e:
        h5tile.to_file(np.zeros(3, bad), scratch / "a.h5", "/data")
    assert isinstance(e.value, h5tile.DtypeError) and e.value.status == 5
    with pytest.raises(h5tile.DtypeError):
        h5tile.from_file(scratch / "a.h5", "/data", dtype=bad)  # refused before the file is read
    assert tree(scratch) == {}


def test_arrays_of_every_kind_are_written_in_c_order(scratch: Path) -> None:
    base = np.arange(24, dtype=np.int32).reshape(4, 6)
    cases = {
        "transposed": base.T,
        "strided": base[::2, 1::2],
        "fortran": np.asfortranarray(base),
        "big_endian": base.astype(">i4"),
        "bytearray": bytearray(b"\x01\x02\x03"),
        "array_array": array.array("d", [1.5, 2.5]),
        "memoryview": memoryview(base),
        "list": [[1, 2], [3, 4]],
        "dlpack": np.from_dlpack(base),  # an ndarray; the protocol itself is tested below
    }
    for name, obj in cases.items():
        h5tile.to_file(obj, scratch / f"{name}.h5", "x")
        expected = np.asarray(obj) if not isinstance(obj, (bytearray, array.array)) else np.asarray(memoryview(obj))
        with h5py.File(scratch / f"{name}.h5") as f:
            got = f["x"][...]
        assert np.array_equal(got, expected), name
        assert got.dtype == expected.dtype.newbyteorder("="), name


def test_dlpack_host_tensors_are_read_through_numpy(scratch: Path) -> None:
    a = np.linspace(0, 1, 12).reshape(3, 4)
    h5tile.to_file(DLPackOnly(a), scratch / "a.h5", "x")
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "x"), a)


class HostCudaInterface:
    """An object exposing host memory through __cuda_array_interface__. Honest only for what it
    checks here: that the interface's dict (shape, typestr, data, strides) is what libh5tile
    gets. libh5tile tells memory kinds apart itself; without a GPU this memory is host memory."""

    def __init__(self, a: np.ndarray, strides=None, stream=None, readonly=False) -> None:
        self._a = a
        self.__cuda_array_interface__ = {
            "shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, readonly),
            "strides": strides, "version": 3, "stream": stream,
        }


def test_cuda_array_interface_dict_is_followed(scratch: Path) -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    h5tile.to_file(HostCudaInterface(a), scratch / "a.h5", "x")
    h5tile.to_file(HostCudaInterface(a, strides=a.strides), scratch / "b.h5", "x")
    for name in ("a.h5", "b.h5"):
        assert np.array_equal(h5tile.from_file(scratch / name, "x"), a)
    out = np.zeros_like(a)
    assert h5tile.from_file(scratch / "a.h5", "x", out=HostCudaInterface(out)).__class__ is HostCudaInterface
    assert np.array_equal(out, a)
    with pytest.raises(h5tile.InvalidArgumentError):
        h5tile.from_file(scratch / "a.h5", "x", out=HostCudaInterface(out, readonly=True))


@pytest.mark.skipif(any(Path(d, "libcudart.so").exists() for d in ("/usr/local/cuda/lib64",)),
                    reason="a CUDA runtime is installed: the GPU check covers streams")
def test_a_stream_to_wait_for_without_cuda_is_a_cuda_error(scratch: Path) -> None:
    a = np.arange(4.0)
    with pytest.raises(h5tile.CudaError) as e:
        h5tile.to_file(HostCudaInterface(a, stream=1), scratch / "a.h5", "x")
    assert e.value.status == 11 and "libcudart" in str(e.value)
    assert tree(scratch) == {}


def test_overwrite_replaces_and_parent_folders_are_created(scratch: Path) -> None:
    path = scratch / "deep" / "er" / "a.h5"
    h5tile.to_file(np.arange(10), path, "/g/data")
    h5tile.to_file(np.arange(3.0), path, "/g/data")
    assert np.array_equal(h5tile.from_file(path, "/g/data"), np.arange(3.0))
    assert h5tile.inspect(path, "g/data") == ((3,), np.dtype(np.float64))


def test_every_writer_takes_the_write_options_of_to_file() -> None:
    # to_file spells the write options out as keywords (its public signature); to_file_async,
    # Checkpoint and Series take them as **write_options, typed and defaulted as to_file's.
    params = list(inspect.signature(h5tile.to_file).parameters.values())
    start = [p.name for p in params].index("layout")
    # compute= (Dask arrays' own: a delayed write) is no write option.
    spelled = {p.name: p.default for p in params[start:] if p.name != "compute"}
    assert spelled == _WRITE_DEFAULTS
    assert list(spelled) == list(WriteKeywords.__annotations__)
    for fn in (h5tile.to_file_async, h5tile.Checkpoint, h5tile.Series):
        last = list(inspect.signature(fn).parameters.values())[-1]
        assert (last.name, last.kind) == ("write_options", inspect.Parameter.VAR_KEYWORD), fn
        assert last.annotation == "Unpack[WriteKeywords]", fn


def test_layouts_and_options(scratch: Path) -> None:
    a = np.arange(20.0).reshape(4, 5)
    for layout in ("vds", "single", "subfiles"):
        h5tile.to_file(a, scratch / f"{layout}.h5", "d", layout=layout, sync=False)
        assert np.array_equal(h5tile.from_file(scratch / f"{layout}.h5", "d", verify=False), a)
    h5tile.to_file(a + 1, scratch / "vds.h5", "e", keep_others=True)
    with h5py.File(scratch / "vds.h5") as f:
        assert sorted(f) == ["d", "e"]
    with pytest.raises(h5tile.InvalidArgumentError):
        h5tile.to_file(a, scratch / "x.h5", "d", layout="chunked")
    for bad in ("gzip", "zstd:x", 3):
        with pytest.raises(h5tile.InvalidArgumentError, match="compression="):
            h5tile.to_file(a, scratch / "x.h5", "d", compression=bad)
    with pytest.raises(h5tile.InvalidArgumentError, match="H5TILE_LAYOUT_SUBFILES compress"):
        h5tile.to_file(a, scratch / "x.h5", "d", layout="single", compression="zstd")
    with pytest.raises(h5tile.InvalidArgumentError, match="compression level 99 for zstd"):
        h5tile.to_file(a, scratch / "x.h5", "d", compression="zstd:99")
    with pytest.raises(h5tile.InvalidArgumentError, match="H5TILE_SHUFFLE without compression"):
        h5tile.to_file(a, scratch / "x.h5", "d", shuffle=True)
    assert not (scratch / "x.h5").exists()


def test_compressed_writes_read_back_in_every_codec(scratch: Path) -> None:
    a = np.linspace(0.0, 1.0, 300_000).reshape(600, 500)
    for layout in ("vds", "subfiles"):
        for compression in ("zstd", "zstd:-3", "lz4", "deflate:1"):
            for shuffle in (False, True):
                path = scratch / f"{layout}-{compression}-{shuffle}.h5"
                h5tile.to_file(a, path, "d", layout=layout, compression=compression,
                               shuffle=shuffle)
                assert np.array_equal(h5tile.from_file(path, "d"), a)
                assert np.array_equal(h5tile.from_file(path, "d", region=(slice(5, 7),)), a[5:7])
    with h5tile.Checkpoint(scratch / "ck.h5", compression="lz4", shuffle=True) as ck:
        ck.add("/u", a)
    assert np.array_equal(h5tile.from_file(scratch / "ck.h5", "/u"), a)


def test_a_compression_as_ls_shows_it_shuffles_too(scratch: Path) -> None:
    a = np.linspace(0.0, 1.0, 300_000).reshape(600, 500)
    for compression, shuffle, shuffled in (("zstd:1+shuffle", False, True), ("lz4 + Shuffle", True, True),
                                           ("zstd:1", False, False)):
        path = scratch / "s.h5"
        h5tile.to_file(a, path, "d", compression=compression, shuffle=shuffle)
        assert np.array_equal(h5tile.from_file(path, "d"), a)
        with h5py.File(path) as f:
            tile = f["d"].virtual_sources()[0].file_name
        with h5py.File(path.parent / tile) as f:
            assert f["tile"].shuffle == shuffled, compression
    for bad in ("zstd+bitshuffle", "+shuffle", "none+shuffle"):
        with pytest.raises(h5tile.InvalidArgumentError, match="compression="):
            h5tile.to_file(a, scratch / "x.h5", "d", compression=bad)
    assert not (scratch / "x.h5").exists()


def test_no_overwrite_raises_file_exists_and_keeps_the_file(scratch: Path) -> None:
    h5tile.to_file(np.arange(4), scratch / "a.h5", "d")
    before = tree(scratch)
    with pytest.raises(FileExistsError) as e:
        h5tile.to_file(np.arange(5), scratch / "a.h5", "d", overwrite=False)
    assert isinstance(e.value, h5tile.ExistsError) and e.value.status == 7
    assert e.value.name == "H5TILE_ERR_EXISTS"
    assert tree(scratch) == before


def test_a_directory_path_is_both_is_a_directory_and_value_error(scratch: Path) -> None:
    (scratch / "dir").mkdir()
    for call in (lambda: h5tile.to_file(np.arange(3), scratch / "dir", "d"),
                 lambda: h5tile.from_file(scratch / "dir", "d"),
                 lambda: h5tile.from_file_batched(scratch / "dir", "d", (1,))):
        with pytest.raises(IsADirectoryError) as e:
            call()
        assert isinstance(e.value, ValueError) and isinstance(e.value, h5tile.IsDirectoryError)
        assert e.value.status == 2 and "is a directory" in str(e.value)
    assert tree(scratch) == {}


def test_a_nul_in_a_path_or_a_name_is_a_value_error_and_touches_nothing(scratch: Path) -> None:
    # C reads a string up to its first NUL: "go\0od.h5" replaced the unrelated file "go", and
    # "/a\0b" was stored as "/a". Refused before anything is touched, as open() refuses.
    (scratch / "go").write_bytes(b"unrelated")
    h5tile.to_file(np.arange(3), scratch / "a.h5", "a")
    before = tree(scratch)
    series = h5tile.Series(scratch / "s\0eries", comm=None)
    calls = [lambda: h5tile.to_file(np.arange(3), str(scratch / "go") + "\0od.h5", "x"),
             lambda: h5tile.to_file(np.arange(3), scratch / "a.h5", "/a\0b"),
             lambda: h5tile.to_file_async(np.arange(3), scratch / "a.h5", "/a\0b").result(),
             lambda: h5tile.from_file(str(scratch / "a.h5") + "\0x", "a"),
             lambda: h5tile.from_file(scratch / "a.h5", "a\0"),
             lambda: h5tile.from_file_batched(scratch / "a.h5", "a\0", (1,)),
             series.latest]
    for call in calls:
        with pytest.raises(ValueError) as e:
            call()
        assert isinstance(e.value, h5tile.InvalidArgumentError), e.value
        assert "holds a NUL character" in str(e.value), e.value
    with pytest.raises(ValueError, match="holds a NUL"):
        with h5tile.Checkpoint(scratch / "ck.h5") as ck:
            ck.add("u\0v", np.arange(3))
    assert tree(scratch) == before


def test_a_0d_array_is_refused_naming_its_shape_never_stored_as_1(scratch: Path) -> None:
    # np.ascontiguousarray made it shape (1,), silently; h5py would store a scalar.
    for value in (np.float64(3.0), np.array(3.0), np.array(3.0)[()]):
        with pytest.raises(ValueError) as e:
            h5tile.to_file(value, scratch / "a.h5", "x")
        assert isinstance(e.value, h5tile.InvalidArgumentError)
        assert "0-d array (shape ())" in str(e.value), e.value
        with pytest.raises(ValueError, match=r"0-d array"):
            with h5tile.Checkpoint(scratch / "ck.h5") as ck:
                ck.add("x", value)
    assert tree(scratch) == {}
    # A 1-element array is a dataset of shape (1,), as asked.
    h5tile.to_file(np.atleast_1d(np.float64(3.0)), scratch / "a.h5", "x")
    assert h5py.File(scratch / "a.h5")["x"].shape == (1,)


# ---- Every failure is an H5TileError, and the built-in the docs name -------------------------

def _checkpoint(scratch: Path) -> h5tile.Checkpoint:
    return h5tile.Checkpoint(scratch / "ck.h5")


# Arguments of the wrong type or out of range, each with the built-in it must also be (every
# one is an InvalidArgumentError, a ValueError) and the words its message must hold. Some
# raised a plain TypeError, KeyError or OverflowError; a number beyond 2**64 - 1 was cut to
# its low 64 bits (an offset of 2**70 wrote at 0), and a name of None wrote "/None".
MALFORMED = {
    "region=(2,)": (lambda s: h5tile.from_file(s / "a.h5", "d", region=(2,)), TypeError,
                    r"^region\[0\] is 2: region takes slices"),
    "region='0:2'": (lambda s: h5tile.from_file(s / "a.h5", "d", region="0:2"), TypeError,
                     "region takes a tuple of slices, not str"),
    "region slice('a', 2)": (lambda s: h5tile.from_file(s / "a.h5", "d", region=(slice("a", 2),)),
                             TypeError, r"region\[0\] is slice\('a', 2, None\)"),
    "path=5": (lambda s: h5tile.to_file(np.zeros(3), 5, "d"), TypeError, "path"),
    "read path=None": (lambda s: h5tile.from_file(None, "d"), TypeError, "path"),
    "inspect path=5": (lambda s: h5tile.inspect(5, "d"), TypeError, "path"),
    "dataset_name=None": (lambda s: h5tile.to_file(np.zeros(3), s / "b.h5", None), TypeError,
                          "dataset"),
    "global_shape=5": (lambda s: h5tile.to_file(np.zeros(3), s / "b.h5", "d", global_shape=5),
                       TypeError, "global_shape takes a sequence of integers"),
    "offset=['a']": (lambda s: h5tile.to_file(np.zeros(3), s / "b.h5", "d", offset=["a"]),
                     TypeError, "offset takes a sequence of integers"),
    "offset=[2**70]": (lambda s: h5tile.to_file(np.zeros(3), s / "b.h5", "d", global_shape=[2**70 + 3],
                                                offset=[2**70]), ValueError, "2\\*\\*64 - 1"),
    "ragged array": (lambda s: h5tile.to_file([[1, 2], [3]], s / "b.h5", "d"), ValueError,
                     "inhomogeneous"),
    "chunk_size=(2.5, 3)": (lambda s: h5tile.from_file_batched(s / "a.h5", "d", (2.5, 3)), TypeError,
                            "chunk_size takes a sequence of integers"),
    "like=[1.0]": (lambda s: h5tile.from_file(s / "a.h5", "d", like=[1.0]), TypeError, "like="),
    "out=object()": (lambda s: h5tile.from_file(s / "a.h5", "d", out=object()), TypeError, "out="),
    "comm='world'": (lambda s: h5tile.to_file(np.zeros(3), s / "b.h5", "d", comm="world"), TypeError,
                     "comm must be an mpi4py communicator"),
    "layout=[]": (lambda s: h5tile.to_file(np.zeros(3), s / "b.h5", "d", layout=[]), ValueError,
                  r"layout=\[\]: choose one of"),
    "ranks_per_file='a'": (lambda s: h5tile.to_file(np.zeros(3), s / "b.h5", "d", ranks_per_file="a"),
                           TypeError, "ranks_per_file"),
    "ranks_per_file=2**70": (lambda s: h5tile.to_file(np.zeros(3), s / "b.h5", "d", ranks_per_file=2**70),
                             ValueError, "ranks_per_file"),
    "staging_bytes='1M'": (lambda s: h5tile.to_file_async(np.zeros(3), s / "b.h5", "d", staging_bytes="1M"),
                           TypeError, "staging_bytes"),
    "to_file_async(synk=)": (lambda s: h5tile.to_file_async(np.zeros(3), s / "b.h5", "d", synk=1),
                             TypeError, r"^to_file_async\(\) got an unexpected keyword argument 'synk'$"),
    "partition(5)": (lambda s: h5tile.partition(5), TypeError, "global_shape takes a sequence"),
    "partition((2**70,))": (lambda s: h5tile.partition((2**70,)), ValueError, "2\\*\\*64 - 1"),
    "Series(keep_last='3')": (lambda s: h5tile.Series(s / "s", keep_last="3"), TypeError, "keep_last"),
    "Series.save('x')": (lambda s: h5tile.Series(s / "s").save("x"), TypeError, "step"),
    "Series.path_of('x')": (lambda s: h5tile.Series(s / "s").path_of("x"), TypeError, "step"),
    "Checkpoint(5)": (lambda s: h5tile.Checkpoint(5), TypeError, "path"),
    "ck.add(offset='ab')": (lambda s: _checkpoint(s).add("u", np.zeros(3), offset="ab"), TypeError,
                            "offset"),
    "ck.attrs[x] = {}": (lambda s: _checkpoint(s).attrs.__setitem__("x", {}), TypeError,
                         "a dict is not stored"),
    "ck.attrs[5] = 1": (lambda s: _checkpoint(s).attrs.__setitem__(5, 1), TypeError,
                        "attribute names are str"),
    "ck.attrs['/u'] = 1": (lambda s: _checkpoint(s).attrs.__setitem__("/u", 1), TypeError,
                           "names an object"),
    "ck.attrs[x] = 2**63": (lambda s: _checkpoint(s).attrs.__setitem__("x", 2**63), OverflowError,
                            "does not fit in int64"),
    "ck.attrs['/u']['/v']": (lambda s: _checkpoint(s).attrs["/u"]["/v"], KeyError,
                             "choose objects on the checkpoint's attrs"),
    "ck.commit_async(staging_bytes='x')": (lambda s: _checkpoint(s).commit_async(staging_bytes="x"),
                                           TypeError, "staging_bytes"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_argument_is_an_h5tile_error_and_the_builtin(scratch: Path, case: str) -> None:
    h5tile.to_file(np.zeros((4, 5)), scratch / "a.h5", "d")
    before = tree(scratch)
    call, builtin, words = MALFORMED[case]
    with pytest.raises(builtin) as e:
        call(scratch)
    assert isinstance(e.value, h5tile.InvalidArgumentError), repr(e.value)  # also a ValueError
    assert e.value.status == 1 and e.value.name == "H5TILE_ERR_INVALID_ARGUMENT"
    assert re.search(words, str(e.value).strip("\"")), str(e.value)
    gc.collect()  # checkpoints left unfinished are dropped
    assert tree(scratch) == before


def test_a_missing_attribute_is_a_key_error_as_in_a_dict(scratch: Path) -> None:
    # A lookup of a name not set is the mapping protocol (`get`, `in`), not a failure.
    ck = _checkpoint(scratch)
    assert ck.attrs.get("nope") is None and "nope" not in ck.attrs
    with pytest.raises(KeyError):
        ck.attrs["nope"]
    ck.abort()


@pytest.mark.parametrize("tail", ["/", "//", "/."])
def test_a_path_ending_in_a_slash_is_a_directory_before_anything_is_done(scratch: Path,
                                                                         tail: str) -> None:
    # It failed late, at the rename, after the tiles and the folders were written.
    target = str(scratch / "new" / "a.h5") + tail
    h5tile.fence()
    calls = [lambda: h5tile.to_file(np.arange(3.0), target, "d"),
             lambda: h5tile.to_file(np.arange(3.0), target.encode(), "d", layout="single"),
             lambda: h5tile.to_file_async(np.arange(3.0), target, "d"),  # at the call
             lambda: h5tile.Checkpoint(target),
             lambda: h5tile.from_file(target, "d"),
             lambda: h5tile.inspect(target, "d"),
             lambda: h5tile.from_file_batched(target, "d", (1,))]
    for call in calls:
        with pytest.raises(IsADirectoryError) as e:
            call()
        assert isinstance(e.value, h5tile.IsDirectoryError) and isinstance(e.value, ValueError)
        assert e.value.status == 2 and "names a folder, not a file" in str(e.value), e.value
    h5tile.fence()  # nothing was started
    # The C library refuses it too, before it creates anything.
    a = np.arange(3.0)
    status = _library.lib.h5tile_write_f(
        _comm.COMM_NULL, target.encode(), b"d", _constants.H5TILE_FLOAT64, 1, u64_array([3]),
        u64_array([0]), u64_array([3]), a.ctypes.data, None)
    assert status == _constants.H5TILE_ERR_IS_DIRECTORY, _library.last_error()
    assert "names a folder, not a file" in _library.last_error()
    assert list(scratch.iterdir()) == []  # not even the folder "new"


# In a child process, as a user who may not write the folder `locked` (uid 65534 when the
# tests run as root, whom permission bits do not stop), or under a file-size limit: each
# failure, as the child saw it.
OS_ERRORS_CHILD = """
import resource, signal  # here: the other user cannot read this Python's modules


def child(folder, locked, secret, roomy):
    failures = {}

    def record(case, call):
        try:
            call()
        except Exception as e:
            failures[case] = {"mro": [c.__name__ for c in type(e).__mro__], "errno": e.errno,
                              "status": e.status, "message": str(e)}

    def future_failure(call):
        error = call().exception(timeout=60)
        if error is not None:
            raise error

    big = np.zeros((512, 512))  # 2 MiB
    for layout in ("vds", "single"):
        record(f"write {layout}", lambda: h5tile.to_file(big, f"{locked}/a.h5", "d", layout=layout))
    record("write async", lambda: future_failure(
        lambda: h5tile.to_file_async(big, f"{locked}/b.h5", "d")))
    record("fence", h5tile.fence)
    record("read", lambda: h5tile.from_file(secret, "d"))

    def commit():
        with h5tile.Checkpoint(f"{locked}/ck.h5") as ck:
            ck.add("u", big)
    record("checkpoint", commit)
    # A file-size limit fails writes with EFBIG, as a full disk fails them with ENOSPC.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    for layout in ("vds", "single"):
        record(f"too large {layout}", lambda: h5tile.to_file(big, f"{roomy}/c.h5", "d", layout=layout))
    return failures
"""


def run_as_other_user(work: Any, *args: Any) -> Any:
    """`work(*args)` in a forked child that first becomes uid and gid 65534 (when root); its
    result, sent back as JSON. The library's threads are per call, so a fork between calls
    leaves nothing behind in the child."""
    import json
    h5tile.fence()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        try:
            os.close(read)
            with os.fdopen(write, "w") as out:
                try:
                    if os.geteuid() == 0:
                        os.setgroups([])
                        os.setresgid(65534, 65534, 65534)
                        os.setresuid(65534, 65534, 65534)
                    json.dump({"result": work(*args)}, out)
                except BaseException:
                    import traceback
                    json.dump({"error": traceback.format_exc()}, out)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as got:
        text = got.read()
    os.waitpid(pid, 0)
    sent = json.loads(text)
    assert "error" not in sent, sent["error"]
    return sent["result"]


def test_os_errors_carry_their_errno_and_permission_denied_is_a_permission_error() -> None:
    import errno
    import shutil
    import tempfile
    namespace: dict[str, Any] = {"np": np, "h5tile": h5tile}
    exec(OS_ERRORS_CHILD, namespace)
    # Not the scratch folder: the other user must reach these (mkdtemp makes folders 0700).
    folder = Path(tempfile.mkdtemp(prefix="h5tile-oserrors-"))
    try:
        folder.chmod(0o755)
        locked, roomy = folder / "locked", folder / "roomy"
        locked.mkdir(mode=0o555)  # the other user (or anyone not root) may not write here
        roomy.mkdir(mode=0o777)
        roomy.chmod(0o777)
        h5tile.to_file(np.arange(4.0), folder / "secret.h5", "d", layout="single")
        (folder / "secret.h5").chmod(0o000 if os.geteuid() else 0o600)
        before = tree(folder)
        failures = run_as_other_user(namespace["child"], str(folder), str(locked),
                                     str(folder / "secret.h5"), str(roomy))
        (folder / "secret.h5").chmod(0o600)
        denied = ["write vds", "write single", "write async", "fence", "read", "checkpoint"]
        too_large = ["too large vds", "too large single"]
        assert sorted(failures) == sorted(denied + too_large), failures
        for case in denied:
            f = failures[case]
            assert {"PermissionError", "IOFailure", "H5TileError"} <= set(f["mro"]), (case, f)
            assert f["errno"] == errno.EACCES and f["status"] == 8, (case, f)
            assert f["message"].startswith("Permission denied"), (case, f)
        for case in too_large:
            f = failures[case]
            assert {"IOFailure", "OSError"} <= set(f["mro"]), (case, f)
            assert "PermissionError" not in f["mro"], (case, f)
            assert f["errno"] == errno.EFBIG and f["status"] == 8, (case, f)
        assert tree(folder) == before  # nothing written, nothing left
        assert sorted(p.name for p in folder.rglob("*")) == ["locked", "roomy", "secret.h5"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_errno_is_that_of_the_last_failure_on_this_thread(scratch: Path) -> None:
    import errno
    long_name = scratch / ("x" * 300 + ".h5")  # longer than a file name may be
    with pytest.raises(h5tile.IOFailure) as e:
        h5tile.to_file(np.arange(3), long_name, "d")
    assert type(e.value) is h5tile.IOFailure  # Python has no OSError subclass for this number
    assert e.value.errno == errno.ENAMETOOLONG == _library.lib.h5tile_last_errno()
    assert str(e.value).startswith("File name too long"), e.value  # the message as it was
    # 0 after a success, and after a failure with no operating-system cause.
    h5tile.to_file(np.arange(3), scratch / "a.h5", "d")
    assert _library.lib.h5tile_last_errno() == 0
    with pytest.raises(h5tile.ShapeError) as shape:
        h5tile.to_file(np.arange(3), scratch / "b.h5", "d", global_shape=(4,))
    assert not isinstance(shape.value, OSError) and _library.lib.h5tile_last_errno() == 0
    assert sorted(tree(scratch)) == ["a.h5", "a.h5.tiles/" + next((scratch / "a.h5.tiles").iterdir()).name]


# Several processes writing one path without comm= (each its own writer, as `mpirun -n 4
# python script.py` without comm= makes them). Each write's cleanup once removed the files of
# the others still running, so a write failed ("cannot rename new master") or, worse,
# committed a master whose tile files were gone. Now every write succeeds and the path holds
# the last committed one, whole.
SAME_PATH_WRITER = """
import json, sys
import numpy as np
import h5tile
path, writes, layout, me = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
failures = []
for k in range(writes):
    try:
        h5tile.to_file(np.full((64, 64), float(1000 * me + k)), path, "d", layout=layout)
    except Exception as e:
        failures.append([type(e).__name__, str(e)])
print(json.dumps(failures))
"""


@pytest.mark.parametrize("layout", ["vds", "subfiles", "single"])
def test_processes_writing_one_path_without_comm_each_commit_a_whole_file(scratch: Path, layout: str) -> None:
    import json
    path = scratch / "one.h5"
    writers = [subprocess.Popen([sys.executable, "-c", SAME_PATH_WRITER, str(path), "20", layout, str(me)],
                                stdout=subprocess.PIPE, text=True) for me in range(4)]
    for w in writers:
        out, _ = w.communicate(timeout=300)
        assert w.returncode == 0
        assert json.loads(out) == [], out  # no write failed
    got = h5tile.from_file(path, "d")
    value = got[0, 0]
    assert np.all(got == value) and value % 1000 < 20 and value // 1000 < 4, got
    with h5py.File(path, "r") as f:
        assert np.array_equal(f["d"][...], got)
    # Nothing left beside the last commit: no temporary master, no lock, no other tile file.
    left = sorted(p.name for p in scratch.iterdir())
    assert left == (["one.h5"] if layout == "single" else ["one.h5", "one.h5.tiles"]), left
    if layout != "single":
        names = {p.name for p in (scratch / "one.h5.tiles").iterdir()}
        with h5py.File(path, "r") as f:
            mapped = {Path(m[1]).name for m in f["d"].virtual_sources()}
        assert names == mapped, (names, mapped)


def test_missing_things_and_groups(scratch: Path) -> None:
    with h5py.File(scratch / "h.h5", "w") as f:
        f["grp/x"] = np.arange(3)
    before = tree(scratch)
    with pytest.raises(FileNotFoundError) as e:
        h5tile.from_file(scratch / "none.h5", "d")
    assert e.value.status == 3 and "none.h5" in str(e.value)
    with pytest.raises(h5tile.NotFoundError):
        h5tile.from_file(scratch / "h.h5", "grp/y")
    with pytest.raises(ValueError) as e:
        h5tile.from_file(scratch / "h.h5", "grp")
    assert isinstance(e.value, h5tile.NotADatasetError) and e.value.status == 4
    assert tree(scratch) == before


def test_h5py_files_are_read_with_regions_and_conversions(scratch: Path) -> None:
    a = np.arange(60, dtype=np.int32).reshape(6, 10)
    with h5py.File(scratch / "h.h5", "w") as f:
        f.create_dataset("c", data=a, chunks=(4, 4), compression="gzip")
    path = scratch / "h.h5"
    assert np.array_equal(h5tile.from_file(path, "c", region=(slice(1, 4), slice(2, 9))), a[1:4, 2:9])
    assert np.array_equal(h5tile.from_file(path, "c", region=(slice(-2, None),)), a[-2:])
    assert h5tile.from_file(path, "c", region=(slice(3, 3),)).shape == (0, 10)
    wide = h5tile.from_file(path, "c", dtype=np.float64)  # lossless: no flag needed
    assert wide.dtype == np.float64 and np.array_equal(wide, a)
    with pytest.raises(TypeError) as e:
        h5tile.from_file(path, "c", dtype=np.int8)
    assert e.value.status == 5 and "int8" in str(e.value)
    assert np.array_equal(h5tile.from_file(path, "c", dtype=np.int8, narrowing=True), a.astype(np.int8))
    with pytest.raises(h5tile.InvalidArgumentError):
        h5tile.from_file(path, "c", region=(slice(0, 4, 2),))
    with pytest.raises(TypeError):
        h5tile.from_file(path, "c", region=(1, slice(None)))


def test_out_and_like(scratch: Path) -> None:
    a = np.arange(12.0).reshape(3, 4)
    h5tile.to_file(a, scratch / "a.h5", "d")
    out = np.empty((2, 4))
    assert h5tile.from_file(scratch / "a.h5", "d", region=(slice(1, 3),), out=out) is out
    assert np.array_equal(out, a[1:])
    assert type(h5tile.from_file(scratch / "a.h5", "d", like=np.zeros(1))) is np.ndarray
    with pytest.raises(h5tile.InvalidArgumentError):
        h5tile.from_file(scratch / "a.h5", "d", out=np.empty((3, 5)))
    with pytest.raises(h5tile.InvalidArgumentError):
        h5tile.from_file(scratch / "a.h5", "d", out=np.empty((4, 3)).T)  # not C-contiguous
    with pytest.raises(TypeError):
        h5tile.from_file(scratch / "a.h5", "d", like=[1.0])


def test_large_results_start_on_a_page(scratch: Path) -> None:
    # Reads from the page cache into an array that starts on a page run faster; numpy's own
    # large arrays start 16 bytes past one.
    big = np.arange(512 * 1024, dtype=np.float32).reshape(512, 1024)  # 2 MiB
    small = np.arange(64, dtype=np.int16).reshape(8, 8)
    h5tile.to_file(big, scratch / "big.h5", "d")
    h5tile.to_file(small, scratch / "small.h5", "d")
    for dtype in (None, np.float64):
        got = h5tile.from_file(scratch / "big.h5", "d", dtype=dtype)
        assert got.ctypes.data % 4096 == 0
        assert got.flags.c_contiguous and got.flags.writeable and got.shape == big.shape
        assert got.dtype == (big.dtype if dtype is None else np.dtype(dtype))
        assert np.array_equal(got, big)
    box = h5tile.from_file(scratch / "big.h5", "d", region=(slice(3, 300), slice(1, 1000)))
    assert box.ctypes.data % 4096 == 0 and np.array_equal(box, big[3:300, 1:1000])
    assert np.array_equal(h5tile.from_file(scratch / "small.h5", "d"), small)


def test_batches_are_clipped_at_the_edges(scratch: Path) -> None:
    a = np.arange(5 * 7, dtype=np.int16).reshape(5, 7)
    h5tile.to_file(a, scratch / "a.h5", "d")
    reader = h5tile.from_file_batched(scratch / "a.h5", "d", chunk_size=(2, 3))
    assert reader.nchunks == 9 and reader.dtype == np.int16
    seen = np.zeros_like(a)
    shapes = []
    for chunk, offsets in reader:
        seen[offsets[0]:offsets[0] + chunk.shape[0], offsets[1]:offsets[1] + chunk.shape[1]] = chunk
        shapes.append(chunk.shape)
    assert np.array_equal(seen, a)
    assert shapes == [(2, 3), (2, 3), (2, 1)] * 2 + [(1, 3), (1, 3), (1, 1)]
    # Another type, a chunk larger than the dataset, and closing early.
    with h5tile.from_file_batched(scratch / "a.h5", "d", (4096, 4096), dtype=np.float64) as r:
        (chunk, offsets), = list(r)
    assert offsets == (0, 0) and chunk.dtype == np.float64 and np.array_equal(chunk, a)
    r = h5tile.from_file_batched(scratch / "a.h5", "d", (1, 7))
    next(r)
    r.close()
    assert list(r) == []


@pytest.mark.parametrize("chunk_size", [(-1, -2), (2,), (2, 3, 4), (0, 3), (2, 0), ()], ids=str)
def test_bad_chunk_sizes_raise_value_error_when_called(scratch: Path, chunk_size) -> None:
    h5tile.to_file(np.zeros((5, 7)), scratch / "a.h5", "d")
    before = tree(scratch)
    with pytest.raises(ValueError) as e:
        h5tile.from_file_batched(scratch / "a.h5", "d", chunk_size)  # no next() needed
    assert isinstance(e.value, h5tile.InvalidArgumentError) and e.value.status == 1
    with pytest.raises(TypeError):
        h5tile.from_file_batched(scratch / "a.h5", "d", (2.5, 3))
    assert tree(scratch) == before


def test_async_writes_keep_their_array_and_complete(scratch: Path) -> None:
    futures = []
    for k in range(4):
        layout = "single" if k == 3 else "vds"  # the write options reach the library
        futures.append(h5tile.to_file_async(np.full((64, 64), float(k)), scratch / f"{k}.h5", "d", layout=layout))
    gc.collect()  # the arrays live on in the futures' writes
    assert [f.result(timeout=60) for f in futures] == [None] * 4
    h5tile.fence()
    for k in range(4):
        assert np.array_equal(h5tile.from_file(scratch / f"{k}.h5", "d"), np.full((64, 64), float(k)))
    assert (scratch / "2.h5.tiles").is_dir() and not (scratch / "3.h5.tiles").exists()


def test_async_failures_reach_the_future_and_the_fence(scratch: Path) -> None:
    (scratch / "file").write_text("not a folder")
    bad = h5tile.to_file_async(np.arange(3), scratch / "file" / "a.h5", "d")
    good = h5tile.to_file_async(np.arange(3), scratch / "b.h5", "d")
    with pytest.raises(h5tile.H5TileError) as e:
        bad.result(timeout=60)
    assert "is a file, not a folder" in str(e.value)
    assert good.result(timeout=60) is None
    with pytest.raises(type(e.value)) as fenced:
        h5tile.fence()
    assert fenced.value.status == e.value.status
    h5tile.fence()  # each failure is reported by one fence
    with pytest.raises(h5tile.DtypeError):  # what a rank can check alone fails at once
        h5tile.to_file_async(np.arange(3).astype(object), scratch / "c.h5", "d")
    with pytest.raises(TypeError, match=r"^to_file_async\(\) got an unexpected keyword argument 'synk'$"):
        h5tile.to_file_async(np.arange(3), scratch / "c.h5", "d", synk=False)  # type: ignore[call-arg]
    with pytest.raises(IsADirectoryError):
        h5tile.to_file_async(np.arange(3), scratch, "d").result(timeout=60)
    with pytest.raises(IsADirectoryError):
        h5tile.fence()
    assert sorted(tree(scratch)) == ["b.h5", "b.h5.tiles/" + next((scratch / "b.h5.tiles").iterdir()).name, "file"]


def test_partition_alone_is_the_whole_shape() -> None:
    assert h5tile.partition((10, 3)) == ((0, 0), (10, 3))


# ---- Snapshot writes: the array is free when to_file_async returns ---------------------------

MIB4 = (512, 1024)  # float64: 4 MiB, long enough to write that a change lands while it runs


def field(shape: tuple[int, ...] = MIB4) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)


def stored(path: Path, name: str = "d") -> np.ndarray:
    with h5py.File(path) as f:
        return f[name][...]


@pytest.mark.parametrize("kind", ["c_order", "fortran", "view", "dlpack"])
def test_a_snapshot_holds_the_array_as_it_was_at_the_call(scratch: Path, kind: str) -> None:
    whole = field((2 * MIB4[0], MIB4[1]))
    array = {"c_order": field(), "fortran": np.asfortranarray(field()), "view": whole[::2],
             "dlpack": field()}[kind]
    expected = array.copy()
    given = DLPackOnly(array) if kind == "dlpack" else array
    future = h5tile.to_file_async(given, scratch / "a.h5", "d")  # snapshot=True by default
    (whole if kind == "view" else array)[...] = -1  # at once, while the write runs
    assert future.result(timeout=60) is None
    assert np.array_equal(stored(scratch / "a.h5"), expected)
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "d"), expected)


def test_a_snapshot_holds_nothing_of_the_array_once_the_call_returned(scratch: Path) -> None:
    array = field()
    expected = array.copy()
    alive = weakref.ref(array)
    future = h5tile.to_file_async(array, scratch / "a.h5", "d")
    del array
    gc.collect()
    assert alive() is None  # the library has its own copy
    np.full(MIB4, -2.0)  # memory the freed array might be reused for
    assert future.result(timeout=60) is None
    assert np.array_equal(stored(scratch / "a.h5"), expected)


def test_without_a_snapshot_an_unchanged_array_is_written(scratch: Path) -> None:
    array = field()
    future = h5tile.to_file_async(array, scratch / "a.h5", "d", snapshot=False)
    del array
    gc.collect()  # the Future holds it until the write ends
    assert future.result(timeout=60) is None
    assert np.array_equal(stored(scratch / "a.h5"), field())


def test_a_staging_budget_smaller_than_the_array_still_snapshots(scratch: Path) -> None:
    array = field()  # 4 MiB: not staged under 1 MiB, written before the call returns
    future = h5tile.to_file_async(array, scratch / "a.h5", "d", staging_bytes=1 << 20)
    array[...] = -1
    assert future.result(timeout=60) is None
    assert np.array_equal(stored(scratch / "a.h5"), field())


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (2**64, ValueError), (1.5, TypeError),
                                        ("1M", TypeError), (True, TypeError), (None, TypeError)],
                         ids=repr)
def test_a_bad_staging_budget_raises_and_writes_nothing(scratch: Path, bad: object,
                                                        error: type) -> None:
    with pytest.raises(error, match="staging_bytes") as e:
        h5tile.to_file_async(field(), scratch / "a.h5", "d",
                             staging_bytes=bad)  # type: ignore[arg-type]
    if error is ValueError:
        assert isinstance(e.value, h5tile.InvalidArgumentError) and e.value.status == 1
    with pytest.raises(error, match="staging_bytes"):
        h5tile.to_file_async(field(), scratch / "a.h5", "d", snapshot=False,
                             staging_bytes=bad)  # type: ignore[arg-type]
    assert tree(scratch) == {}
    h5tile.fence()  # nothing started


def test_a_bad_staging_variable_fails_snapshots_only(scratch: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H5TILE_STAGING_BYTES", "lots")
    with pytest.raises(h5tile.InvalidArgumentError,
                       match="^H5TILE_STAGING_BYTES=lots: expected a number of bytes"):
        h5tile.to_file_async(field(), scratch / "a.h5", "d")
    assert tree(scratch) == {}
    # An explicit budget does not read it, nor does a write that does not snapshot.
    h5tile.to_file_async(field(), scratch / "a.h5", "d", staging_bytes=8 << 20).result(timeout=60)
    h5tile.to_file_async(field(), scratch / "b.h5", "d", snapshot=False).result(timeout=60)
    h5tile.to_file(field(), scratch / "c.h5", "d")
    h5tile.fence()
    for name in ("a.h5", "b.h5", "c.h5"):
        assert np.array_equal(stored(scratch / name), field())


SNAPSHOT_LOG = """
import sys, numpy as np, h5tile
folder, a = sys.argv[1], np.zeros((512, 1024))  # 4 MiB
h5tile.to_file_async(a, f"{folder}/small.h5", "d", staging_bytes=1 << 20).result()
h5tile.to_file_async(a, f"{folder}/fits.h5", "d", staging_bytes=8 << 20).result()
h5tile.to_file_async(a, f"{folder}/env.h5", "d").result()
h5tile.to_file_async(a, f"{folder}/plain.h5", "d", snapshot=False).result()
"""


def test_the_staging_budget_reaches_the_library(scratch: Path) -> None:
    # H5TILE_LOG=info prints a line per snapshot: what was staged, what was left, the budget.
    env = dict(os.environ, H5TILE_LOG="info", H5TILE_STAGING_BYTES="6M")
    run = subprocess.run([sys.executable, "-c", SNAPSHOT_LOG, str(scratch)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = {Path(m[0]).name: m[1:] for m in re.findall(
        r"snapshot of '([^']*)': ([\d.]+) MiB copied into staging .* ([\d.]+) MiB over the budget .* "
        r"\(budget ([\d.]+) MiB\)",
        run.stderr)}
    assert lines == {"small.h5": ("0.0", "4.0", "1.0"), "fits.h5": ("4.0", "0.0", "8.0"),
                     "env.h5": ("4.0", "0.0", "6.0")}, run.stderr


def test_staging_reserved_ahead_is_refused_over_its_budget_and_used_within_it(scratch: Path) -> None:
    with pytest.raises(h5tile.InvalidArgumentError, match="exceed the budget of 1048576 bytes"):
        h5tile.reserve_staging([64 << 20], staging_bytes=1 << 20)
    with pytest.raises(h5tile.InvalidArgumentError, match="byte counts"):
        h5tile.reserve_staging([-1])
    array = field()
    h5tile.reserve_staging([array, array.nbytes // 2], staging_bytes=64 << 20)
    future = h5tile.to_file_async(array, scratch / "r.h5", "d", staging_bytes=64 << 20)
    array += 1  # the snapshot holds the values at the call
    assert future.result(timeout=60) is None
    assert np.array_equal(stored(scratch / "r.h5"), field())


def test_python_fence_completes_a_write_started_from_c(scratch: Path) -> None:
    array = field()
    shape = (ctypes.c_uint64 * 2)(*MIB4)
    request = ctypes.c_void_p()
    lib = _library.lib
    status = lib.h5tile_write_async_f(_comm.COMM_NULL, str(scratch / "a.h5").encode(), b"d",
                                      _constants.H5TILE_FLOAT64, 2, shape, (ctypes.c_uint64 * 2)(),
                                      shape, array.ctypes.data, None, ctypes.byref(request))
    assert status == 0, _library.last_error()
    h5tile.fence()
    done = ctypes.c_int(0)
    assert lib.h5tile_test(request, ctypes.byref(done)) == 0 and done.value == 1
    assert lib.h5tile_wait(request) == 0  # completed by the fence: its status at once
    assert np.array_equal(stored(scratch / "a.h5"), array)


def test_c_fence_completes_a_write_started_from_python(scratch: Path) -> None:
    future = h5tile.to_file_async(field(), scratch / "a.h5", "d", snapshot=False)
    # The package's thread is waiting for the request meanwhile; the C fence waits for it too.
    assert _library.lib.h5tile_fence_f(_comm.COMM_NULL) == 0
    assert np.array_equal(stored(scratch / "a.h5"), field())
    assert np.array_equal(h5tile.from_file(scratch / "a.h5", "d"), field())
    assert future.result(timeout=60) is None
    h5tile.fence()


@pytest.mark.parametrize("options", [{"layout": "vds"}, {"layout": "subfiles"},
                                     {"compression": "zstd"}], ids=["vds", "subfiles", "zstd"])
def test_an_array_changed_while_written_without_snapshot_fails_or_is_consistent(
        scratch: Path, options: dict[str, str]) -> None:
    # A thread rewrites the whole array (numpy releases the GIL to fill it) as the write
    # starts: the write either holds values the array held, and reads back, or fails naming
    # the change and leaves the previous file as it was; never a file that fails to read.
    # Rewriting until the write ends mostly makes it fail; rewriting once or three times
    # mostly lands before the write reads the array, and it succeeds.
    import hdf5plugin  # noqa: F401  # h5py reads zstd
    path, previous = scratch / "a.h5", np.full(MIB4, -1.0)
    changed_while_running = 0
    for fills in (None, 1, None, 3):
        h5tile.to_file(previous, path, "d", **options)
        before = tree(scratch)
        array, stop, last = np.zeros(MIB4), threading.Event(), [0]

        def rewrite() -> None:
            k = 0
            while not stop.is_set() and k != fills:
                k += 1
                array[:] = k
                last[0] = k

        thread = threading.Thread(target=rewrite)
        thread.start()
        future = h5tile.to_file_async(array, path, "d", snapshot=False, **options)
        at_call = last[0]
        error = future.exception(timeout=60)
        stop.set()
        thread.join()
        changed_while_running += last[0] > at_call
        if error is None:
            got = h5tile.from_file(path, "d", verify=True)
            assert np.array_equal(stored(path), got)
            assert (got == np.round(got)).all() and 0 <= got.min() and got.max() <= last[0]
            h5tile.fence()
        else:
            assert type(error) is h5tile.InvalidArgumentError and error.status == 1
            assert "changed while it was being written" in str(error)
            assert tree(scratch) == before
            assert np.array_equal(h5tile.from_file(path, "d", verify=True), previous)
            assert np.array_equal(stored(path), previous)
            with pytest.raises(h5tile.InvalidArgumentError, match="changed while"):
                h5tile.fence()  # the fence reports it too
    assert changed_while_running  # the race was run


def readme_block_runs(shape: tuple[int, ...], itemsize: int, attrs: Any) -> list[list[tuple[int, int]]]:
    """Each checksummed block of a tile of `shape` as runs (first byte, length) of its bytes,
    cut as README.md's "Checksums in the master" says, from the master's attributes alone."""
    n = int(np.prod(shape)) * itemsize
    if "h5tile_checksum_boxes" in attrs:
        block, row = (int(x) for x in attrs["h5tile_checksum_boxes"])
        if len(shape) >= 2 and shape[-1] * itemsize > row:
            edge = [0] * len(shape)
            edge[-1] = row // itemsize
            depth = max(block // (edge[-1] * itemsize), 1)
            for k in range(len(shape) - 2, -1, -1):
                edge[k] = max(min(shape[k], depth), 1)
                depth = max(depth // edge[k], 1)
            blocks = []
            for c in np.ndindex(*[-(-t // e) for t, e in zip(shape, edge)]):
                lo = [ci * e for ci, e in zip(c, edge)]
                hi = [min(a + e, t) for a, e, t in zip(lo, edge, shape)]
                runs = []
                for rows in np.ndindex(*[b - a for a, b in zip(lo[:-1], hi[:-1])]):
                    first = np.ravel_multi_index([a + i for a, i in zip(lo[:-1], rows)] + [lo[-1]], shape)
                    runs.append((int(first) * itemsize, (hi[-1] - lo[-1]) * itemsize))
                blocks.append(runs)
            return blocks
    else:
        block = int(attrs["h5tile_checksum_block_bytes"][0])
    return [[(k, min(block, n - k))] for k in range(0, n, block)]


def test_wide_tiles_are_checksummed_in_boxes_and_files_in_runs_still_read_and_check(scratch: Path) -> None:
    """A tile whose rows are wider than 8 KiB carries box checksums that xxhash reproduces from
    the README's rule; the same file with its master rewritten to the runs of files written
    before boxes reads whole, and a flipped bit in it is still found."""
    import xxhash
    path = scratch / "wide.h5"
    a = np.arange(300 * 1500, dtype=np.float64).reshape(300, 1500) * 0.5  # rows of 12000 bytes
    h5tile.to_file(a, path, "d")
    with h5py.File(path, "r") as f:
        attrs = f["d"].attrs
        assert [int(x) for x in attrs["h5tile_checksum_boxes"]] == [1 << 20, 8192]
        assert "h5tile_checksum_block_bytes" not in attrs
        blocks = readme_block_runs(a.shape, 8, attrs)
        assert len(blocks) == 3 * 2
        raw = a.tobytes()
        got = [xxhash.xxh3_64_intdigest(b"".join(raw[s:s + n] for s, n in runs)) for runs in blocks]
        assert got == [int(x) for x in attrs["h5tile_checksums"]]
        tile = path.parent / f["d"].virtual_sources()[0].file_name
        offset = int(attrs["h5tile_tile_bytes"][0][0])
    # The master as h5tile wrote it before boxes: 1 MiB runs of the tile's bytes.
    with h5py.File(path, "r+") as f:
        attrs = f["d"].attrs
        del attrs["h5tile_checksum_boxes"]
        attrs["h5tile_checksum_block_bytes"] = np.array([1 << 20], dtype=np.uint64)
        runs = readme_block_runs(a.shape, 8, attrs)
        sums = [xxhash.xxh3_64_intdigest(b"".join(raw[s:s + n] for s, n in r)) for r in runs]
        attrs["h5tile_checksum_first"] = np.array([0, len(sums)], dtype=np.uint64)
        attrs["h5tile_checksums"] = np.array(sums, dtype=np.uint64)
    assert np.array_equal(h5tile.from_file(path, "d"), a)
    assert np.array_equal(h5tile.from_file(path, "d", region=(slice(10, 15), slice(1100, 1400))), a[10:15, 1100:1400])
    with open(tile, "r+b") as t:
        t.seek(offset + (250 * 1500 + 3) * 8)
        byte = t.read(1)
        t.seek(-1, 1)
        t.write(bytes([byte[0] ^ 0x10]))
    with pytest.raises(h5tile.CorruptError) as e:
        h5tile.from_file(path, "d")
    assert "do not match their checksum (bytes 2097152..3145728 of the tile)" in str(e.value)
