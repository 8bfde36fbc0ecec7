/* Helpers shared by the GPU check programs: fail-fast CUDA calls, a clock, and dropping a
 * file from the page cache so timed reads come from storage (as GPUDirect reads do). */
#ifndef H5TILE_GPU_COMMON_H
#define H5TILE_GPU_COMMON_H

#include <cuda_runtime.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CUDA(call)                                                                      \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,               \
                    cudaGetErrorString(e_));                                            \
            exit(2);                                                                    \
        }                                                                               \
    } while (0)

#ifdef H5TILE_H
/* An h5tile call that must succeed: otherwise its status and message, and exit 3. */
#define H5TILE(call)                                                                    \
    do {                                                                                \
        h5tile_status s_ = (call);                                                      \
        if (s_ != H5TILE_OK) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,           \
                    h5tile_status_name(s_), h5tile_last_error());                       \
            exit(3);                                                                    \
        }                                                                               \
    } while (0)
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Drops the file's (clean) pages from the page cache. */
static void uncache(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

#endif
