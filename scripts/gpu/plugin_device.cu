/* GPU check of the h5tile_gds driver (built and run by scripts/gpu-check.sh on a machine with
 * an NVIDIA GPU): an ordinary HDF5 program writes a device buffer to a contiguous dataset and
 * reads it back into another device buffer, through the plugin with the configuration given,
 * compares the bytes on the device, and prints the bandwidth of each beside plain POSIX
 * (pread into host memory + cudaMemcpy) of the same file in the same run. Reads start with the
 * file dropped from the page cache, for both.
 *
 *   plugin_device FILE MIB CONFIG        one JSON line; exit status 0 only if bytes match
 *   plugin_device FILE MIB CONFIG pool   the same with buffers from cudaMallocAsync (a
 *                                        stream-ordered pool: memory of no context)
 *   plugin_device FILE 0 CONFIG          probe: only creates FILE through the driver (no CUDA
 *                                        call), so gds=on shows whether cuFile can be used;
 *                                        exit status 3 with HDF5's error stack if refused
 */
#include "common.h"
#include <hdf5.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define H5(call)                                                                        \
    do {                                                                                \
        if ((call) < 0) {                                                               \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call);           \
            H5Eprint2(H5E_DEFAULT, stderr);                                             \
            exit(3);                                                                    \
        }                                                                               \
    } while (0)

__global__ void fill(uint64_t *x, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = (i * 0x9E3779B97F4A7C15ull) ^ seed;
}

__global__ void differ(const uint64_t *a, const uint64_t *b, size_t n,
                       unsigned long long *count) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (a[i] != b[i]) atomicAdd(count, 1ull);
}

static unsigned long long mismatches(const uint64_t *a, const uint64_t *b, size_t n) {
    unsigned long long *d, h = 0;
    CUDA(cudaMalloc(&d, sizeof *d));
    CUDA(cudaMemset(d, 0, sizeof *d));
    differ<<<1024, 256>>>(a, b, n, d);
    CUDA(cudaDeviceSynchronize());
    CUDA(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    CUDA(cudaFree(d));
    return h;
}

static hid_t access_list(const char *config) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5(fapl);
    H5(H5Pset_driver_by_name(fapl, "h5tile_gds", config));
    return fapl;
}

int main(int argc, char **argv) {
    const int pool = argc == 5 && strcmp(argv[4], "pool") == 0;
    if (argc != 4 && !pool) {
        fprintf(stderr, "usage: %s FILE MIB CONFIG [pool]\n", argv[0]);
        return 1;
    }
    const char *path = argv[1], *config = argv[3];
    size_t bytes = (size_t)atol(argv[2]) << 20, n = bytes / 8;
    if (bytes == 0) {
        hid_t fapl = access_list(config), file;
        H5(file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
        H5(H5Fclose(file));
        H5(H5Pclose(fapl));
        unlink(path);
        return 0;
    }
    uint64_t *src, *dst;
    if (pool) {
        CUDA(cudaMallocAsync((void **)&src, bytes, 0));
        CUDA(cudaMallocAsync((void **)&dst, bytes, 0));
    } else {
        CUDA(cudaMalloc(&src, bytes));
        CUDA(cudaMalloc(&dst, bytes));
    }
    fill<<<1024, 256>>>(src, n, 0x5EEDull + bytes);
    CUDA(cudaMemset(dst, 0xAB, bytes));
    CUDA(cudaDeviceSynchronize());

    hsize_t dims[1] = {n};
    /* Write: create, one H5Dwrite from device memory, close; then fsync, as durable writes do. */
    double t0 = now();
    hid_t fapl = access_list(config);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5(file);
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t dset = H5Dcreate2(file, "data", H5T_NATIVE_UINT64, space, H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT);
    H5(dset);
    H5(H5Dwrite(dset, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, src));
    H5(H5Dclose(dset));
    H5(H5Fclose(file));
    int fd = open(path, O_RDONLY);
    fsync(fd);
    close(fd);
    double t_write = now() - t0;

    /* Read back into other device memory. */
    uncache(path);
    t0 = now();
    file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5(file);
    dset = H5Dopen2(file, "data", H5P_DEFAULT);
    H5(dset);
    haddr_t offset = H5Dget_offset(dset);
    H5(H5Dread(dset, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst));
    H5(H5Dclose(dset));
    H5(H5Fclose(file));
    double t_read = now() - t0;
    unsigned long long bad = mismatches(src, dst, n);

    /* Baseline on the same file: pread into pinned host memory in 64 MiB pieces, each
     * followed by cudaMemcpy to the device. */
    size_t piece = (size_t)64 << 20;
    void *host;
    CUDA(cudaMallocHost(&host, piece));
    CUDA(cudaMemset(dst, 0, bytes));
    uncache(path);
    t0 = now();
    fd = open(path, O_RDONLY);
    for (size_t at = 0; at < bytes; at += piece) {
        size_t len = bytes - at < piece ? bytes - at : piece, got = 0;
        while (got < len) {
            ssize_t r = pread(fd, (char *)host + got, len - got, (off_t)(offset + at + got));
            if (r <= 0) {
                perror("pread");
                return 4;
            }
            got += (size_t)r;
        }
        CUDA(cudaMemcpy((char *)dst + at, host, len, cudaMemcpyHostToDevice));
    }
    close(fd);
    double t_posix = now() - t0;
    unsigned long long bad_posix = mismatches(src, dst, n);

    printf("{\"config\": \"%s\", \"pool\": %d, \"MiB\": %zu, \"write_GiB_s\": %.3f, \"read_GiB_s\": %.3f, "
           "\"posix_read_GiB_s\": %.3f, \"read_over_posix\": %.2f, \"mismatches\": %llu, "
           "\"posix_mismatches\": %llu}\n",
           config, pool, bytes >> 20, bytes / t_write / (1 << 30), bytes / t_read / (1 << 30),
           bytes / t_posix / (1 << 30), t_posix / t_read, bad, bad_posix);
    H5(H5Pclose(fapl));
    H5(H5Sclose(space));
    CUDA(cudaFreeHost(host));
    if (pool) {
        CUDA(cudaFreeAsync(src, 0));
        CUDA(cudaFreeAsync(dst, 0));
        CUDA(cudaDeviceSynchronize());
    } else {
        CUDA(cudaFree(src));
        CUDA(cudaFree(dst));
    }
    unlink(path);
    return bad || bad_posix ? 5 : 0;
}
