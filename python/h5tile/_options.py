"""The option structs of the C API (`h5tile_write_options`, `h5tile_read_options`,
`h5tile_series_options`) and how Python's keywords fill them.

The library is told the size of the struct Python built (the `size` field, set by
`h5tile_*_options_init`), so this package keeps working with a newer libh5tile whose structs
have grown; fields it does not know keep the library's defaults.
"""

from __future__ import annotations

import ctypes
from ctypes import c_int, c_int32, c_size_t, c_uint32, c_uint64

from . import _constants as C


class WriteOptions(ctypes.Structure):
    _c_name_ = "h5tile_write_options"
    _fields_ = [
        ("size", c_size_t),
        ("layout", c_int),
        ("flags", c_uint32),
        ("gds", c_uint32),
        ("ranks_per_file", c_uint64),
        ("compression", c_uint32),
        ("compression_level", c_int32),
        ("staging_bytes", c_uint64),
    ]


class ReadOptions(ctypes.Structure):
    _c_name_ = "h5tile_read_options"
    _fields_ = [
        ("size", c_size_t),
        ("flags", c_uint32),
        ("dtype", c_int),
        ("gds", c_uint32),
    ]


class SeriesOptions(ctypes.Structure):
    _c_name_ = "h5tile_series_options"
    _fields_ = [
        ("size", c_size_t),
        ("keep_last", c_uint64),
        ("keep_every", c_uint64),
    ]


CODECS = {
    "zstd": C.H5TILE_COMPRESS_ZSTD,
    "lz4": C.H5TILE_COMPRESS_LZ4,
    "deflate": C.H5TILE_COMPRESS_DEFLATE,
}

LAYOUTS = {
    "auto": C.H5TILE_LAYOUT_AUTO,
    "vds": C.H5TILE_LAYOUT_VDS,
    "single": C.H5TILE_LAYOUT_SINGLE,
    "subfiles": C.H5TILE_LAYOUT_SUBFILES,
}
