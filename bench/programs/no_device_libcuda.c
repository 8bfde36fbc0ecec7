/* A CUDA driver library (libcuda.so.1) with no device, for make bench's legate.io.hdf5
 * contender on a machine without NVIDIA's driver: the PyPI build of Legate links libcuda.so.1
 * for its GPU paths, so it cannot even be imported where the driver is missing. With this
 * library first on LD_LIBRARY_PATH it starts, finds no device (cuInit says so) and runs on the
 * CPUs, as a CPU build would (Legate's automatic configuration, which would count the GPUs, is
 * turned off: the suite sets LEGATE_AUTO_CONFIG=0). Where the driver is installed the suite does not use it.
 *
 * Legate resolves its driver calls through cuGetProcAddress and asserts that cuGetErrorName
 * was found: each name defined here is handed out, any other gets `no_device`. h5tile (through
 * cudarc, which looks each function up by name) asks cuPointerGetAttribute whether a buffer is
 * device memory once libcuda is loaded: with no device, none is. The Legate tests use it too
 * (make test-legate). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

typedef int CUresult;
enum { CUDA_SUCCESS = 0, CUDA_ERROR_NO_DEVICE = 100 };

static CUresult no_device(void) { return CUDA_ERROR_NO_DEVICE; }

CUresult cuInit(unsigned flags) {
    (void)flags;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuDeviceGetCount(int *count) {
    if (count) *count = 0;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
    if (name) *name = error == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_NO_DEVICE";
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
    if (text) *text = error == CUDA_SUCCESS ? "no error" : "no CUDA device (make bench's stand-in driver)";
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, int attribute, unsigned long long ptr) {
    (void)data, (void)attribute, (void)ptr;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuMemFreeHost(void *p) {
    (void)p;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuMemFree_v2(unsigned long long p) {
    (void)p;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **fn, int version, unsigned long long flags,
                             int *status) {
    (void)version, (void)flags;
    void *self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *found = self && symbol ? dlsym(self, symbol) : NULL;
    if (fn) *fn = found ? found : (void *)no_device;
    if (status) *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **fn, int version, unsigned long long flags) {
    return cuGetProcAddress_v2(symbol, fn, version, flags, NULL);
}
