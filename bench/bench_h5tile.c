/* One measurement of h5tile, for bench/suite.py, which runs each in its own process (so peak
 * memory is the mode's own) and interleaves rounds. Prints one JSON line.
 *
 *   bench_h5tile write       FILE ROWS COLS          each rank writes its row slab (1-D split)
 *   bench_h5tile read        FILE ROWS COLS          each rank reads its row slab, sums it
 *   bench_h5tile write_grid  FILE ROWS COLS NTILES   one process writes NTILES tiles (a grid)
 *   bench_h5tile write_single FILE ROWS COLS         one process writes one contiguous file
 *   bench_h5tile read_whole  FILE ROWS COLS          one process opens and reads it all, sums it
 *   bench_h5tile batched     FILE ROWS COLS CHUNK    one process sums it in CHUNK x CHUNK chunks
 *   bench_h5tile batched_view FILE ROWS COLS CHUNK   the same through h5tile_batches_next_view
 *   bench_h5tile compute     FILE ROWS COLS SWEEPS   each rank computes alone: SWEEPS sweeps over
 *                                                   a 64 MiB array of its own (FILE unused)
 *   bench_h5tile overlap     FILE ROWS COLS SWEEPS   "write" (h5tile_write), then that computation
 *   bench_h5tile overlap_async FILE ROWS COLS SWEEPS h5tile_write_async, the computation while
 *                                                   it writes, then h5tile_wait (under
 *                                                   MPI_THREAD_MULTIPLE)
 *
 * The write modes write float64 (g % 1000) * 0.5 (g the global linear index; the grid repeats
 * one tile's values) from buffers no larger than one tile. Times are wall time on rank 0
 * between barriers (for reads, "seconds" is the read alone, "seconds_with_sum" includes
 * summing the data); peak_rss is the largest over the ranks. */
#include <h5tile.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

static int rank = 0, size = 1;

static void check(h5tile_status s, const char *what) {
    if (s != H5TILE_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, h5tile_status_name(s), h5tile_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Buffers as numpy allocates large arrays: 2 MiB aligned, transparent huge pages advised, so
 * both sides of a comparison pay the same page faults. */
static void *big_alloc(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 2 << 20, bytes ? bytes : 1) != 0) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

static double sum(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i];
    return s;
}

/* n elements starting at global linear index `first`: (g % 1000) * 0.5, the data h5py writes. */
static double *filled(uint64_t first, size_t n) {
    double *b = big_alloc(n * sizeof *b);
    for (size_t i = 0; i < n; i++) b[i] = (double)((first + i) % 1000) * 0.5;
    return b;
}

/* Rows [start, start+len) of `rows` split over `parts` (sizes differ by at most one). */
static void split(uint64_t rows, int parts, int k, uint64_t *start, uint64_t *len) {
    uint64_t base = rows / (uint64_t)parts, extra = rows % (uint64_t)parts;
    *start = (uint64_t)k * base + ((uint64_t)k < extra ? (uint64_t)k : extra);
    *len = base + ((uint64_t)k < extra ? 1 : 0);
}

/* The stand-in for a solver's step between checkpoints: `sweeps` passes over 64 MiB. */
static double compute(uint64_t sweeps) {
    const size_t n = (64u << 20) / sizeof(double);
    double *a = big_alloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = (double)(i % 1000);
    for (uint64_t s = 0; s < sweeps; s++)
        for (size_t i = 0; i < n; i++) a[i] = a[i] * 0.999 + 1e-3;
    double total = sum(a, n);
    free(a);
    return total;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "overlap_async") == 0) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided != MPI_THREAD_MULTIPLE) fprintf(stderr, "no MPI_THREAD_MULTIPLE: no overlap\n");
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 5) {
        fprintf(stderr, "usage: %s MODE FILE ROWS COLS [N]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    const uint64_t rows = strtoull(argv[3], NULL, 10), cols = strtoull(argv[4], NULL, 10);
    const uint64_t n = argc > 5 ? strtoull(argv[5], NULL, 10) : 0;
    const uint64_t global[2] = {rows, cols}, zero[2] = {0, 0};
    uint64_t r0, nr;
    split(rows, size, rank, &r0, &nr);
    const uint64_t off[2] = {r0, 0}, shp[2] = {nr, cols};
    size_t tile_bytes = (size_t)(nr * cols * sizeof(double));
    double total = 0, *buf = NULL, read_seconds = -1;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (strcmp(mode, "write") == 0) {
        buf = filled(r0 * cols, nr * cols);
        t0 = (MPI_Barrier(MPI_COMM_WORLD), MPI_Wtime()); /* filling is not writing */
        check(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, global, off, shp, buf,
                           NULL), "write");
    } else if (strcmp(mode, "compute") == 0) {
        total = compute(n);
    } else if (strcmp(mode, "overlap") == 0 || strcmp(mode, "overlap_async") == 0) {
        buf = filled(r0 * cols, nr * cols);
        t0 = (MPI_Barrier(MPI_COMM_WORLD), MPI_Wtime());
        if (strcmp(mode, "overlap") == 0) {
            check(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, global, off, shp,
                               buf, NULL), "write");
            total = compute(n);
        } else {
            h5tile_request *req;
            check(h5tile_write_async(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, global, off,
                                     shp, buf, NULL, &req), "write_async");
            total = compute(n);
            check(h5tile_wait(req), "wait");
        }
    } else if (strcmp(mode, "read") == 0) {
        buf = big_alloc(tile_bytes);
        check(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, off, shp, buf, NULL),
              "read");
        MPI_Barrier(MPI_COMM_WORLD);
        read_seconds = MPI_Wtime() - t0;
        total = sum(buf, nr * cols);
    } else if (strcmp(mode, "write_grid") == 0 || strcmp(mode, "write_single") == 0) {
        /* a g x g grid of tiles (g = sqrt(N)), all written from one tile-sized buffer */
        uint64_t g = strcmp(mode, "write_single") == 0 ? 1 : (uint64_t)llround(sqrt((double)n));
        uint64_t count = g * g, *offs = calloc(2 * count, sizeof *offs), *shps = calloc(2 * count, sizeof *shps);
        const void **bufs = malloc(count * sizeof *bufs);
        uint64_t biggest = 0;
        for (uint64_t i = 0; i < g; i++)
            for (uint64_t j = 0; j < g; j++) {
                uint64_t k = i * g + j;
                split(rows, (int)g, (int)i, &offs[2 * k], &shps[2 * k]);
                split(cols, (int)g, (int)j, &offs[2 * k + 1], &shps[2 * k + 1]);
                if (shps[2 * k] * shps[2 * k + 1] > biggest) biggest = shps[2 * k] * shps[2 * k + 1];
            }
        buf = filled(0, biggest);
        for (uint64_t k = 0; k < count; k++) bufs[k] = buf;
        tile_bytes = (size_t)(biggest * sizeof(double));
        h5tile_write_options o = h5tile_write_options_default();
        if (g == 1) o.layout = H5TILE_LAYOUT_SINGLE;
        t0 = MPI_Wtime();
        check(h5tile_write_tiles(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, global, count,
                                 offs, shps, bufs, &o), "write_tiles");
        free(offs), free(shps), free(bufs);
    } else if (strcmp(mode, "read_whole") == 0) {
        /* The whole read and the batched read below compare as a C user's loop would run them:
         * into plain malloc'ed buffers, page faults and all. */
        buf = malloc(rows * cols * sizeof *buf);
        tile_bytes = (size_t)(rows * cols * sizeof(double));
        check(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, zero, global, buf, NULL),
              "read");
        read_seconds = MPI_Wtime() - t0;
        total = sum(buf, rows * cols);
    } else if ((strcmp(mode, "batched") == 0 || strcmp(mode, "batched_view") == 0) && n > 0) {
        const int view = strcmp(mode, "batched_view") == 0;
        const uint64_t chunk[2] = {n, n};
        h5tile_batches *it;
        check(h5tile_batches_open(MPI_COMM_NULL, path, "/data", 2, chunk, NULL, &it), "open");
        size_t max_bytes;
        check(h5tile_batches_info(it, NULL, &max_bytes, NULL), "info");
        tile_bytes = max_bytes;
        if (!view) buf = malloc(max_bytes);
        uint64_t coff[2], cshp[2];
        bool done;
        for (;;) {
            const void *data = buf;
            if (view)
                check(h5tile_batches_next_view(it, &data, coff, cshp, &done), "next_view");
            else
                check(h5tile_batches_next(it, buf, max_bytes, coff, cshp, &done), "next");
            if (done) break;
            total += sum((const double *)data, cshp[0] * cshp[1]);
        }
        h5tile_batches_free(it);
    } else {
        fprintf(stderr, "unknown mode '%s'\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double with_sum = MPI_Wtime() - t0;
    double seconds = read_seconds >= 0 ? read_seconds : with_sum;
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    long rss = u.ru_maxrss, peak = 0;
    unsigned long long tb = tile_bytes, max_tile = 0;
    double all = 0;
    MPI_Reduce(&rss, &peak, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&tb, &max_tile, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&total, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"mode\": \"%s\", \"ranks\": %d, \"n\": %llu, \"seconds\": %.6f, "
               "\"seconds_with_sum\": %.6f, \"bytes\": %llu, \"peak_rss_bytes\": %ld, "
               "\"tile_bytes\": %llu, \"sum\": %.17g}\n",
               mode, size, (unsigned long long)n, seconds, with_sum,
               (unsigned long long)(rows * cols * sizeof(double)), peak * 1024, max_tile, all);
    free(buf);
    MPI_Finalize();
    return 0;
}
