/* One measurement of batched reading against a whole read, for bench/run.sh, which runs the
 * modes in separate processes (so each one's peak memory is its own) and interleaves rounds.
 *
 *   bench_batches write   FILE ROWS COLS       write a ROWS x COLS float64 dataset "/data"
 *   bench_batches whole   FILE ROWS COLS       read it whole into one buffer, then sum it
 *   bench_batches batched FILE ROWS COLS CHUNK sum it chunk by chunk (CHUNK x CHUNK chunks)
 *
 * Prints one JSON line: mode, seconds (read + sum), bytes, peak resident memory, the sum. */
#include <h5tile.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void check(h5tile_status s, const char *what) {
    if (s != H5TILE_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, h5tile_status_name(s), h5tile_last_error());
        exit(1);
    }
}

static double sum(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i];
    return s;
}

static long peak_rss_kib(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s write|whole|batched FILE ROWS COLS [CHUNK]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    const uint64_t rows = strtoull(argv[3], NULL, 10), cols = strtoull(argv[4], NULL, 10);
    const uint64_t global[2] = {rows, cols}, zero[2] = {0, 0};
    const size_t bytes = (size_t)(rows * cols * sizeof(double));
    double seconds = 0, total = 0;
    if (strcmp(mode, "write") == 0) {
        /* Slabs of 1024 rows, all from one buffer: writing needs no buffer of the whole. */
        const uint64_t slab = rows < 1024 ? rows : 1024, n = rows / slab;
        double *buf = malloc(slab * cols * sizeof *buf);
        for (uint64_t i = 0; i < slab * cols; i++) buf[i] = (double)(i % 1000) * 0.5;
        uint64_t *offs = calloc(2 * n, sizeof *offs), *shps = calloc(2 * n, sizeof *shps);
        const void **bufs = malloc(n * sizeof *bufs);
        for (uint64_t k = 0; k < n; k++) {
            offs[2 * k] = k * slab, shps[2 * k] = slab, shps[2 * k + 1] = cols, bufs[k] = buf;
        }
        double t0 = now();
        check(h5tile_write_tiles(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, global, n, offs,
                                 shps, bufs, NULL), "write");
        seconds = now() - t0;
        total = sum(buf, slab * cols) * (double)n;
        free(buf), free(offs), free(shps), free(bufs);
    } else if (strcmp(mode, "whole") == 0) {
        double *all = malloc(bytes);
        double t0 = now();
        check(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, zero, global, all, NULL),
              "read");
        total = sum(all, rows * cols);
        seconds = now() - t0;
        free(all);
    } else if (strcmp(mode, "batched") == 0 && argc > 5) {
        const uint64_t c = strtoull(argv[5], NULL, 10), chunk[2] = {c, c};
        double t0 = now();
        h5tile_batches *it;
        check(h5tile_batches_open(MPI_COMM_NULL, path, "/data", 2, chunk, NULL, &it), "open");
        size_t max_bytes;
        check(h5tile_batches_info(it, NULL, &max_bytes, NULL), "info");
        double *buf = malloc(max_bytes);
        uint64_t off[2], shp[2];
        bool done;
        for (;;) {
            check(h5tile_batches_next(it, buf, max_bytes, off, shp, &done), "next");
            if (done) break;
            total += sum(buf, shp[0] * shp[1]);
        }
        h5tile_batches_free(it);
        seconds = now() - t0;
        free(buf);
    } else {
        fprintf(stderr, "unknown mode '%s'\n", mode);
        return 2;
    }
    printf("{\"mode\": \"%s\", \"seconds\": %.6f, \"bytes\": %zu, \"peak_rss_bytes\": %ld, "
           "\"sum\": %.17g}\n", mode, seconds, bytes, peak_rss_kib() * 1024, total);
    return 0;
}
