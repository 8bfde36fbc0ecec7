/* GPU check of snapshot writes (H5TILE_SNAPSHOT) from device memory (built and run by
 * scripts/gpu-check.sh). One process, no MPI launcher (MPI_COMM_NULL: the write always runs
 * in the background):
 *
 *   snapshot_device DIR GIB
 *
 * A GIB GiB float64 tile in device memory is written CALLS times with h5tile_write_async and
 * H5TILE_SNAPSHOT; each call is timed from call to return, then a kernel overwrites the tile
 * at once (the solver's next step), then h5tile_wait. Every file must read back as the tile
 * was at its call. Against: cudaMemcpy of the same bytes device to device, and device to a
 * host buffer already touched (pageable, then pinned). The first call pays for mapping the
 * staging memory; the others reuse it. Prints one JSON line; exit status 0 only if every
 * element and status matched. */
#include <h5tile.h> /* before common.h, which then checks h5tile calls too */
#include "common.h"
#include <stdint.h>
#include <string.h>

enum { CALLS = 4 };

/* Version v of element i. */
__host__ __device__ inline double value(int v, uint64_t i) {
    return (double)(i % 1000003) * 0.5 + v * 1e7;
}

__global__ void fill(double *x, uint64_t n, int v) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        x[i] = value(v, i);
}

/* The median of n (at most CALLS) times. */
static double median(double *t, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double s = t[j];
            t[j] = t[j - 1], t[j - 1] = s;
        }
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* The fastest of CALLS timed cudaMemcpy calls. */
static double memcpy_time(void *dst, const void *src, size_t len, cudaMemcpyKind kind) {
    double best = 1e30;
    for (int k = 0; k < CALLS; k++) {
        CUDA(cudaDeviceSynchronize());
        double t0 = now();
        CUDA(cudaMemcpy(dst, src, len, kind));
        double t = now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s DIR GIB\n", argv[0]);
        return 1;
    }
    const char *dir = argv[1];
    const uint64_t n = (uint64_t)atol(argv[2]) * (1ull << 30) / 8, len = n * 8;
    const uint64_t g[1] = {n}, off[1] = {0};
    double *tile, *spare, *pinned;
    CUDA(cudaMalloc(&tile, len));
    CUDA(cudaMalloc(&spare, len));
    double *host = (double *)malloc(len);
    memset(host, 0, len); /* touched: its page faults are not the copy's */
    CUDA(cudaMallocHost((void **)&pinned, len));
    fill<<<2048, 256>>>(tile, n, 0);
    double d2d = memcpy_time(spare, tile, len, cudaMemcpyDeviceToDevice);
    double d2h = memcpy_time(host, tile, len, cudaMemcpyDeviceToHost);
    double d2h_pinned = memcpy_time(pinned, tile, len, cudaMemcpyDeviceToHost);
    CUDA(cudaFree(spare));
    CUDA(cudaFreeHost(pinned));

    h5tile_write_options o = h5tile_write_options_default();
    o.flags |= H5TILE_SNAPSHOT | H5TILE_NO_SYNC;
    double returned[CALLS], written[CALLS];
    unsigned long long bad = 0;
    for (int k = 0; k < CALLS; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/snapshot%d.h5", dir, k);
        fill<<<2048, 256>>>(tile, n, k);
        CUDA(cudaDeviceSynchronize());
        h5tile_request *req;
        double t0 = now();
        H5TILE(h5tile_write_async(MPI_COMM_NULL, path, "/u", H5TILE_FLOAT64, 1, g, off, g, tile,
                                  &o, &req));
        returned[k] = now() - t0;
        fill<<<2048, 256>>>(tile, n, 100 + k); /* the solver's next step, at once */
        CUDA(cudaDeviceSynchronize());
        H5TILE(h5tile_wait(req));
        written[k] = now() - t0;
        memset(host, 0xFF, len);
        H5TILE(h5tile_read(MPI_COMM_NULL, path, "/u", H5TILE_FLOAT64, 1, off, g, host, NULL));
        for (uint64_t i = 0; i < n; i++) bad += host[i] != value(k, i);
        remove(path);
    }
    double first = returned[0], steady = median(returned + 1, CALLS - 1);
    printf("{\"check\": \"snapshot\", \"bytes\": %llu, \"memcpy_d2d_s\": %.4f, "
           "\"memcpy_d2h_s\": %.4f, \"memcpy_d2h_pinned_s\": %.4f, \"snapshot_first_s\": %.4f, "
           "\"snapshot_steady_s\": %.4f, \"steady_x_d2h\": %.2f, \"steady_x_d2d\": %.2f, "
           "\"write_steady_s\": %.4f, \"bad_elements\": %llu}\n",
           (unsigned long long)len, d2d, d2h, d2h_pinned, first, steady, steady / d2h,
           steady / d2d, median(written + 1, CALLS - 1), bad);
    CUDA(cudaFree(tile));
    free(host);
    return bad != 0;
}
