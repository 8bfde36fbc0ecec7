"""The package's ctypes declarations against the installed include/h5tile.h: every function
(its name, argument and return types), the option structs' fields and every constant. A change
of the C API that Python misses fails here."""

from __future__ import annotations

import ctypes
import os
import re
from ctypes import POINTER
from pathlib import Path

import pytest

import h5tile
from h5tile import _constants, _library, _options

SCALARS = {
    "h5tile_status": ctypes.c_int,
    "h5tile_dtype": ctypes.c_int,
    "h5tile_layout": ctypes.c_int,
    "h5tile_compression": ctypes.c_uint32,
    "int": ctypes.c_int,
    "MPI_Fint": ctypes.c_int,
    "size_t": ctypes.c_size_t,
    "uint64_t": ctypes.c_uint64,
    "uint32_t": ctypes.c_uint32,
    "int32_t": ctypes.c_int32,
    "bool": ctypes.c_bool,
}
OPAQUE = {"h5tile_batches", "h5tile_request", "h5tile_checkpoint", "h5tile_txn", "h5tile_restart", "void"}
# Byte strings (a transaction's token, its records): passed as bytes, received as addresses.
BYTES = {"uint8_t"}
STRUCTS = {
    "h5tile_write_options": _options.WriteOptions,
    "h5tile_read_options": _options.ReadOptions,
    "h5tile_series_options": _options.SeriesOptions,
}


@pytest.fixture(scope="module")
def header(prefix: Path) -> str:
    path = Path(os.environ.get("H5TILE_HEADER", prefix / "include" / "h5tile.h"))
    text = path.read_text()
    return re.sub(r"//[^\n]*", "", text)  # comments may hold anything


def ctype_of(c: str) -> object:
    """The ctypes type that passes C type `c` (const dropped: ctypes cannot tell)."""
    c = re.sub(r"\bconst\b", "", c).replace(" ", "")
    stars = c.count("*")
    base = c.rstrip("*")
    if stars == 0:
        return None if base == "void" else SCALARS[base]
    if stars == 1:
        if base == "char" or base in BYTES:
            return ctypes.c_char_p
        if base in OPAQUE:
            return ctypes.c_void_p
        if base in STRUCTS:
            return POINTER(STRUCTS[base])
        return POINTER(SCALARS[base])
    if stars == 2 and base in OPAQUE:
        return POINTER(ctypes.c_void_p)
    if stars == 2 and base in BYTES:
        return POINTER(ctypes.c_char_p)
    raise AssertionError(f"no ctypes mapping for C type {c!r}")


def prototypes(header: str) -> dict[str, tuple[str, list[str]]]:
    body = header[header.index('extern "C" {'):]
    body = body[: body.index("#ifdef __cplusplus", 10)]
    found = {}
    for ret, name, args in re.findall(r"([A-Za-z_][\w \*]*?)\s*\b(h5tile_\w+)\(([^)]*)\);", body, re.S):
        params = [] if args.strip() in ("", "void") else [a.strip() for a in args.split(",")]
        # Drop each parameter's name: what is left is its type.
        types = [re.sub(r"\b\w+$", "", p).strip() for p in params]
        found[name] = (ret.strip(), types)
    return found


def test_every_function_is_declared_as_the_header_says(header: str) -> None:
    protos = prototypes(header)
    assert len(protos) > 20, "the header parser found too few functions"
    missing = sorted(set(protos) - set(_library.FUNCTIONS) - set(_library.NOT_CALLED))
    assert not missing, f"functions of h5tile.h that the Python package neither declares nor lists in NOT_CALLED: {missing}"
    gone = sorted((set(_library.FUNCTIONS) | set(_library.NOT_CALLED)) - set(protos))
    assert not gone, f"functions the Python package knows but h5tile.h no longer has: {gone}"
    for name, (ret, args) in protos.items():
        if name in _library.NOT_CALLED:
            continue
        fn = getattr(_library.lib, name)
        assert fn.restype is ctype_of(ret), f"{name}: returns {ret}, declared {fn.restype}"
        expected = [ctype_of(a) for a in args]
        assert list(fn.argtypes) == expected, f"{name}({', '.join(args)}): declared {fn.argtypes}"


def test_functions_left_alone_have_a_fortran_variant_python_calls() -> None:
    for name in _library.NOT_CALLED:
        assert name + "_f" in _library.FUNCTIONS, name


@pytest.mark.parametrize("c_name", sorted(STRUCTS))
def test_option_structs_match_the_header(header: str, c_name: str) -> None:
    m = re.search(r"typedef struct \{([^{}]*)\}\s*" + c_name + ";", header)
    assert m, f"typedef {c_name} not found"
    fields = [f.strip().rsplit(None, 1) for f in m.group(1).split(";") if f.strip()]
    expected = [(name, ctype_of(ctype)) for ctype, name in fields]
    struct = STRUCTS[c_name]
    assert [(n, t) for n, t in struct._fields_] == expected
    assert struct._c_name_ == c_name


def test_constants_match_the_header(header: str) -> None:
    defines = dict(re.findall(r"#define (H5TILE_\w+) (-?\d+)\s*$", header, re.M))
    enum = dict(re.findall(r"^\s*(H5TILE_\w+) = (-?\d+),", header, re.M))
    version = {k: defines.pop(k) for k in list(defines) if k.startswith("H5TILE_VERSION_")}
    in_header = {k: int(v) for k, v in {**defines, **enum}.items()}
    assert len(in_header) > 40, "the header parser found too few constants"
    assert _constants.header_constants() == in_header
    assert h5tile.__version__ == "{H5TILE_VERSION_MAJOR}.{H5TILE_VERSION_MINOR}.{H5TILE_VERSION_PATCH}".format(**version)


def test_package_and_library_versions_agree() -> None:
    assert h5tile.library_version() == h5tile.__version__


def test_every_failure_status_has_its_exception_class(header: str) -> None:
    m = re.search(r"typedef enum \{([^{}]*)\}\s*h5tile_status;", header)
    assert m, "typedef h5tile_status not found"
    statuses = {name: int(v) for name, v in re.findall(r"(H5TILE_\w+) = (-?\d+)", m.group(1))}
    assert statuses.pop("H5TILE_OK") == 0
    assert len(statuses) > 10, "the header parser found too few statuses"
    # The library names exactly these: a status it has but the header lacks fails here too.
    name_of = {s: _library.lib.h5tile_status_name(s).decode() for s in range(-1024, 1024)}
    named = {s: n for s, n in name_of.items() if s != 0 and n != "unknown status"}
    assert named == {v: n for n, v in statuses.items()}, "h5tile_status_name and h5tile.h differ"
    classes = h5tile._errors.ERROR_CLASSES
    missing = sorted(n for n, v in statuses.items() if v not in classes)
    assert not missing, f"statuses of h5tile.h with no exception class in h5tile/_errors.py: {missing}"
    gone = sorted(set(classes) - set(statuses.values()))
    assert not gone, f"exception classes for statuses h5tile.h no longer has: {gone}"
    for name, status in statuses.items():
        cls = classes[status]
        assert issubclass(cls, h5tile.H5TileError) and (cls.status, cls.name) == (status, name)
        assert type(h5tile._errors.error_for(status, "why")) is cls, name


def test_calls_release_the_gil() -> None:
    # ctypes.CDLL (not PyDLL) drops the GIL around every foreign call: I/O runs beside Python.
    assert type(_library.lib) is ctypes.CDLL
    assert not _library.lib._func_flags_ & ctypes._FUNCFLAG_PYTHONAPI
