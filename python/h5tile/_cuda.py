"""The one CUDA runtime call this package makes: waiting for a producer's stream
(`__cuda_array_interface__` v3 `stream`) before libh5tile reads or fills the memory. The
runtime is loaded only when a stream is given, so nothing here touches CUDA otherwise."""

from __future__ import annotations

import ctypes

from ._errors import CudaError

_RUNTIMES = ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0")
_runtime: ctypes.CDLL | None = None


def _load_runtime() -> ctypes.CDLL:
    global _runtime
    if _runtime is None:
        errors = []
        for name in _RUNTIMES:  # an already loaded runtime (CuPy's, PyTorch's) is found by soname
            try:
                lib = ctypes.CDLL(name)
            except OSError as e:
                errors.append(str(e))
                continue
            lib.cudaStreamSynchronize.restype = ctypes.c_int
            lib.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
            lib.cudaGetErrorString.restype = ctypes.c_char_p
            lib.cudaGetErrorString.argtypes = [ctypes.c_int]
            _runtime = lib
            break
        else:
            raise CudaError(
                "an array's __cuda_array_interface__ names a stream to wait for, but no CUDA "
                "runtime (libcudart) can be loaded: " + "; ".join(errors)
            )
    return _runtime


def synchronize(stream: int) -> None:
    """Waits for the work queued on `stream` (1: the legacy default stream, 2: the per-thread
    default stream, else a cudaStream_t), as the interface asks of a consumer."""
    runtime = _load_runtime()
    err = runtime.cudaStreamSynchronize(ctypes.c_void_p(stream))
    if err != 0:
        reason = runtime.cudaGetErrorString(err).decode(errors="replace")
        raise CudaError(f"{reason}: cudaStreamSynchronize on the array's stream {stream:#x} failed")
