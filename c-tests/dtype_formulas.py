"""The element formulas of check.h's dtype_value(), for the h5py scripts: element i (its
row-major index in the whole array) of a test array of each h5tile element type. Keep the two
in step."""

import numpy as np

# h5tile dtype codes, in order (H5TILE_BOOL = 0 ... H5TILE_COMPLEX128 = 13).
NAMES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]

NUMPY = {
    "bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32,
    "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
    "uint64": np.uint64, "float16": np.float16, "float32": np.float32,
    "float64": np.float64, "complex64": np.complex64, "complex128": np.complex128,
}


def _value(name, i):
    """Element i as an exact Python number."""
    if name == "bool":
        return i % 3 == 0
    if name == "int8":
        return (i * 37 % 256) - 128
    if name == "int16":
        return (i * 1237 % 65536) - 32768
    if name == "int32":
        return i * 100003 - 1000000
    if name == "int64":
        return (i - 17) * 1000000000007
    if name == "uint8":
        return i * 37 % 256
    if name == "uint16":
        return i * 1237 % 65536
    if name == "uint32":
        return 4000000000 - i * 1001
    if name == "uint64":
        return 2**63 + i * 1000000007
    if name == "float16":
        return ((i % 64) - 17) * 0.25
    if name == "float32":
        return ((i % 4096) - 17) * 0.5 + 0.125
    if name == "float64":
        return i * 1.5 - 20.25
    if name == "complex64":
        return complex((i % 4096) * 0.5, 2.0 - (i % 4096) * 0.25)
    if name == "complex128":
        return complex(i * 1.5 - 3.0, i * 0.125)
    raise ValueError(name)


def array(name, shape):
    """The whole test array of element type `name` and `shape`."""
    n = int(np.prod(shape))
    return np.array([_value(name, i) for i in range(n)], dtype=NUMPY[name]).reshape(shape)
