"""The Python package on device memory, for scripts/gpu-check.sh on a machine with a GPU.

    python3 scripts/gpu/python_device.py DIR MIB

Needs numpy and the package (PYTHONPATH) over a libh5tile (H5TILE_LIBRARY). Device memory
comes from the CUDA runtime through ctypes, behind `__cuda_array_interface__` (version 3, with
a stream), as CuPy, Numba or PyTorch hand it over; where CuPy is importable its arrays are used
too (`like=`, DLPack). Checks, each against the host's copy of the bytes:
  - a write from device memory whose producer's stream may still be filling it (a memset of
    MIB MiB queued on a non-blocking stream): to_file must wait for that stream;
  - a whole read into device memory (`out=`), and a box of it;
  - with CuPy: from_file(like=), a DLPack tensor and batches in device memory.
Prints one JSON line (throughputs) and exits 0 only if every check held.
"""
import ctypes
import glob
import json
import os
import sys
import time

import numpy as np

import h5tile


def load_cudart():
    names = ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    names += sorted(glob.glob("/usr/local/cuda*/lib64/libcudart.so*"), reverse=True)
    for name in names:
        try:
            # Global, so that the package's own load by soname finds this one.
            return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
    sys.exit("python_device: no CUDA runtime (libcudart) can be loaded")


cudart = load_cudart()
H2D, D2H = 1, 2


def cuda(call, *args):
    err = call(*args)
    if err != 0:
        cudart.cudaGetErrorString.restype = ctypes.c_char_p
        sys.exit(f"python_device: {call.__name__} failed: {cudart.cudaGetErrorString(err).decode()}")


class DeviceArray:
    """cudaMalloc'd memory behind the CUDA array interface, version 3."""

    def __init__(self, shape, dtype, stream=None):
        self.shape, self.dtype, self.stream = tuple(shape), np.dtype(dtype), stream
        self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
        self.ptr = ctypes.c_void_p()
        cuda(cudart.cudaMalloc, ctypes.byref(self.ptr), ctypes.c_size_t(self.nbytes))

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr.value, False),
                "version": 3, "strides": None, "stream": self.stream}

    def to_host(self):
        host = np.empty(self.shape, self.dtype)
        cuda(cudart.cudaMemcpy, host.ctypes.data_as(ctypes.c_void_p), self.ptr, ctypes.c_size_t(self.nbytes), D2H)
        return host

    def free(self):
        cuda(cudart.cudaFree, self.ptr)


def main():
    where, mib = sys.argv[1], int(sys.argv[2])
    os.makedirs(where, exist_ok=True)
    path = os.path.join(where, "python.h5")
    cols = 4096
    rows = max(1, mib * (1 << 20) // 8 // cols)
    failures = []

    def expect(ok, what):
        print(("ok    " if ok else "FAIL  ") + what, file=sys.stderr, flush=True)
        if not ok:
            failures.append(what)

    # A write while the producer's stream may still be filling the memory.
    stream = ctypes.c_void_p()
    cuda(cudart.cudaStreamCreateWithFlags, ctypes.byref(stream), 1)  # cudaStreamNonBlocking
    d = DeviceArray((rows, cols), np.float64, stream=stream.value)
    cuda(cudart.cudaMemsetAsync, d.ptr, 0x40, ctypes.c_size_t(d.nbytes), stream)
    t0 = time.perf_counter()
    h5tile.to_file(d, path, "/data")
    write_s = time.perf_counter() - t0
    pattern = np.frombuffer(b"\x40" * 8, np.float64)[0]
    host = h5tile.from_file(path, "/data")
    expect(host.shape == (rows, cols) and bool((host == pattern).all()),
           f"to_file of {d.nbytes >> 20} MiB of device memory waited for the producer's stream")

    # Distinct values, then reads into device memory.
    want = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    cuda(cudart.cudaMemcpy, d.ptr, want.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(d.nbytes), H2D)
    d.stream = None
    h5tile.to_file(d, path, "/data")
    into = DeviceArray((rows, cols), np.float64)
    t0 = time.perf_counter()
    got = h5tile.from_file(path, "/data", out=into)
    read_s = time.perf_counter() - t0
    expect(got is into and np.array_equal(into.to_host(), want), "from_file(out=device memory) whole")
    box = DeviceArray((rows // 2, cols // 4), np.float64)
    h5tile.from_file(path, "/data", region=(slice(rows // 4, rows // 4 + rows // 2), slice(cols // 2, cols // 2 + cols // 4)),
                     out=box)
    expect(np.array_equal(box.to_host(), want[rows // 4:rows // 4 + rows // 2, cols // 2:cols // 2 + cols // 4]),
           "from_file(region=, out=device memory) a box")
    for a in (d, into, box):
        a.free()

    cupy_ran = False
    try:
        import cupy
    except ImportError:
        print("skip  CuPy is not importable here: like=, DLPack and batches with CuPy not run", file=sys.stderr)
    else:
        cupy_ran = True
        c = cupy.asarray(want)
        back = h5tile.from_file(path, "/data", like=c)
        expect(isinstance(back, cupy.ndarray) and bool((back == c).all()), "from_file(like=a CuPy array)")
        h5tile.to_file(c.T, os.path.join(where, "t.h5"), "/t")  # non-contiguous: copied
        expect(np.array_equal(h5tile.from_file(os.path.join(where, "t.h5"), "/t"), want.T),
               "to_file of a non-contiguous CuPy array")

        class DLPackOnly:
            def __init__(self, a):
                self._a = a

            def __dlpack__(self, **kw):
                return self._a.__dlpack__(**kw)

            def __dlpack_device__(self):
                return self._a.__dlpack_device__()

        h5tile.to_file(DLPackOnly(c), os.path.join(where, "dl.h5"), "/d")
        expect(np.array_equal(h5tile.from_file(os.path.join(where, "dl.h5"), "/d"), want), "to_file of a DLPack tensor")
        seen = np.zeros_like(want)
        for chunk, (r, q) in h5tile.from_file_batched(path, "/data", (rows // 3 + 1, cols // 3 + 1), like=c):
            seen[r:r + chunk.shape[0], q:q + chunk.shape[1]] = chunk.get()
        expect(np.array_equal(seen, want), "from_file_batched(like=a CuPy array)")

    print(json.dumps({"check": "python", "bytes": rows * cols * 8, "write_GBps": rows * cols * 8 / write_s / 1e9,
                      "read_GBps": rows * cols * 8 / read_s / 1e9, "cupy": cupy_ran, "failures": failures}))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
