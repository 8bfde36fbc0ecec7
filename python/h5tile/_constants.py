"""The numbers of include/h5tile.h that Python passes to or receives from the C library.

Kept by hand beside the header; tests/test_c_api.py parses the installed header and fails when
one of these differs or the header has one Python lacks.
"""

# h5tile_status
H5TILE_OK = 0
H5TILE_ERR_INVALID_ARGUMENT = 1
H5TILE_ERR_IS_DIRECTORY = 2
H5TILE_ERR_NOT_FOUND = 3
H5TILE_ERR_NOT_A_DATASET = 4
H5TILE_ERR_DTYPE = 5
H5TILE_ERR_SHAPE = 6
H5TILE_ERR_EXISTS = 7
H5TILE_ERR_IO = 8
H5TILE_ERR_HDF5 = 9
H5TILE_ERR_MPI = 10
H5TILE_ERR_CUDA = 11
H5TILE_ERR_MISSING_TILE = 12
H5TILE_ERR_CORRUPT = 13
H5TILE_ERR_PANIC = 99

# h5tile_dtype
H5TILE_BOOL = 0
H5TILE_INT8 = 1
H5TILE_INT16 = 2
H5TILE_INT32 = 3
H5TILE_INT64 = 4
H5TILE_UINT8 = 5
H5TILE_UINT16 = 6
H5TILE_UINT32 = 7
H5TILE_UINT64 = 8
H5TILE_FLOAT16 = 9
H5TILE_FLOAT32 = 10
H5TILE_FLOAT64 = 11
H5TILE_COMPLEX64 = 12
H5TILE_COMPLEX128 = 13
H5TILE_AS_STORED = -1

# h5tile_layout
H5TILE_LAYOUT_VDS = 0
H5TILE_LAYOUT_SINGLE = 1
H5TILE_LAYOUT_SUBFILES = 2
H5TILE_LAYOUT_AUTO = 3

# h5tile_write_options.flags
H5TILE_NO_OVERWRITE = 1
H5TILE_ALLOW_PARTIAL = 2
H5TILE_KEEP_OTHERS = 4
H5TILE_NO_SYNC = 8
H5TILE_SHUFFLE = 16
H5TILE_SNAPSHOT = 32

# h5tile_write_options.compression
H5TILE_COMPRESS_NONE = 0
H5TILE_COMPRESS_ZSTD = 1
H5TILE_COMPRESS_LZ4 = 2
H5TILE_COMPRESS_DEFLATE = 3

# h5tile_read_options.flags
H5TILE_READ_FILL_MISSING = 1
H5TILE_READ_NO_VERIFY = 2
H5TILE_READ_NARROWING = 4

# h5tile_series_latest flags
H5TILE_SERIES_VERIFY = 1

# the options' gds field
H5TILE_GDS_FROM_ENVIRONMENT = 0
H5TILE_GDS_AUTO = 1
H5TILE_GDS_ON = 2
H5TILE_GDS_OFF = 3


def header_constants() -> dict[str, int]:
    """Every constant above by name, as the header names it."""
    return {k: v for k, v in globals().items() if k.startswith("H5TILE_") and isinstance(v, int)}
