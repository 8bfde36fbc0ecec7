/* Checksummed tiles, on 4 ranks, in the VDS, subfiled (2 ranks a subfile) and single-file
 * layouts: a
 * 1024 x 1024 float64 array, rank r writing rows 256r..256r+255 (2 MiB, two checksum blocks).
 *   clean        reads whole, on another decomposition, converted, and in batches: no alarm;
 *   bit flip     one bit of rank 2's second block: H5TILE_ERR_CORRUPT on every rank for reads
 *                touching that block (native, converted, batches), naming the file and the
 *                block's byte range; reads of other blocks succeed; H5TILE_READ_NO_VERIFY reads
 *                the damaged value; no failed read changes a file;
 *   swapped      the files of two tiles (VDS) or the two subfiles exchanged: H5TILE_ERR_CORRUPT;
 *   truncated    by one byte: H5TILE_ERR_MISSING_TILE naming the file (both: tiled layouts);
 * in the single-file layout the byte range is counted within the tile;
 * and the next write repairs the dataset. */
#include "check.h"

#define N 1024
static int rank, size;
static const uint64_t G[2] = {N, N};

static double value(int v, uint64_t i) { return v * 1e7 + (double)i * 0.25; }

static void write_version(const char *path, int layout, int v) {
    const uint64_t off[2] = {256 * (uint64_t)rank, 0}, shp[2] = {256, N};
    double *buf = (double *)malloc(256 * N * sizeof *buf);
    CHECK(buf != NULL);
    for (uint64_t k = 0; k < 256 * N; k++) buf[k] = value(v, off[0] * N + k);
    h5tile_write_options o = h5tile_write_options_default();
    o.layout = layout;
    o.ranks_per_file = 2;
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, G, off, shp, buf, &o));
    free(buf);
}

/* Reads rows [r0, r0 + rows) as dt with `flags`; returns the status; checks version v's
 * values where it succeeds (v 0: no check). */
static int read_rows(const char *path, int dt, uint64_t r0, uint64_t rows, unsigned flags, int v) {
    const uint64_t off[2] = {r0, 0}, shp[2] = {rows, N};
    double *buf = (double *)malloc(rows * N * sizeof *buf);
    CHECK(buf != NULL);
    h5tile_read_options ro = h5tile_read_options_default();
    /* float32 reads of the float64 data narrow: asked for */
    ro.flags = flags | (dt == H5TILE_FLOAT64 ? 0u : (unsigned)H5TILE_READ_NARROWING);
    int st = h5tile_read(MPI_COMM_WORLD, path, "/data", dt, 2, off, shp, buf, &ro);
    if (st == H5TILE_OK && v && dt == H5TILE_FLOAT64)
        for (uint64_t k = 0; k < rows * N; k++)
            CHECK_MSG(buf[k] == value(v, r0 * N + k), "element %llu is %g, expected %g",
                      (unsigned long long)(r0 * N + k), buf[k], value(v, r0 * N + k));
    free(buf);
    return st;
}

static void expect_named(int st, int want, const char *what) {
    CHECK_MSG(st == want, "status %d (%s), expected %d", st, h5tile_last_error(), want);
    CHECK_MSG(strstr(h5tile_last_error(), what) != NULL, "the message does not name '%s': \"%s\"",
              what, h5tile_last_error());
}

static void batches_fail_at(const char *path, unsigned flags, int want_fail) {
    const uint64_t chunk[2] = {128, N};
    h5tile_read_options ro = h5tile_read_options_default();
    ro.flags = flags;
    h5tile_batches *it = NULL;
    EXPECT_OK(h5tile_batches_open(MPI_COMM_NULL, path, "/data", 2, chunk, &ro, &it));
    double *buf = (double *)malloc(128 * N * sizeof *buf);
    int failed_at = -1;
    for (int c = 0;; c++) {
        uint64_t off[2], shp[2];
        bool done = false;
        int st = h5tile_batches_next(it, buf, 128 * N * sizeof *buf, off, shp, &done);
        if (st != H5TILE_OK) {
            CHECK_MSG(st == H5TILE_ERR_CORRUPT, "chunk %d: status %d (%s)", c, st, h5tile_last_error());
            failed_at = c;
            break;
        }
        if (done) break;
    }
    h5tile_batches_free(it);
    free(buf);
    /* rows 640..767 are the damaged block: the sixth chunk */
    CHECK_MSG(failed_at == (want_fail ? 5 : -1), "batches failed at chunk %d", failed_at);
    /* every rank done reading before rank 0 damages a file (the iterators are per process) */
    MPI_Barrier(MPI_COMM_WORLD);
}

static void run(const char *scratch, int layout) {
    const char *name = layout == H5TILE_LAYOUT_VDS        ? "vds"
                       : layout == H5TILE_LAYOUT_SUBFILES ? "subfiles"
                                                          : "single";
    const int tiled = layout != H5TILE_LAYOUT_SINGLE;
    char path[4096], dir[4096], victim[4096], other[4096];
    PATHF(path, "%s/%s/data.h5", scratch, name);
    if (rank == 0) { char d[4096]; PATHF(d, "%s/%s", scratch, name); fresh_dir(d); }
    MPI_Barrier(MPI_COMM_WORLD);
    TILE_DIR(dir, path);

    CHECK_CONTEXT("%s, clean", name);
    write_version(path, layout, 1);
    EXPECT_OK(read_rows(path, H5TILE_FLOAT64, 0, N, 0, 1));
    EXPECT_OK(read_rows(path, H5TILE_FLOAT64, 200 * (uint64_t)rank, 300, 0, 1));
    EXPECT_OK(read_rows(path, H5TILE_FLOAT32, 0, N, 0, 0));
    batches_fail_at(path, 0, 0);

    CHECK_CONTEXT("%s, bit flip", name);
    if (tiled)
        file_ending(dir, layout == H5TILE_LAYOUT_VDS ? ".r2.t0.h5" : ".s2.h5", victim, sizeof victim);
    else
        PATHF(victim, "%s", path);
    /* row 700, column 3: rank 2's tile, its second block (rows 640..767) */
    long long at = find_value(victim, value(1, 700 * N + 3));
    CHECK_MSG(at >= 0, "value not found in %s", victim);
    long long data = at - (long long)((700 - 512) * N + 3) * 8;
    long long block = data + (1LL << 20);
    uint64_t master = rank == 0 ? hash_file(path) : 0;
    flip_bit(victim, at + 2);
    char range[128];
    if (tiled)
        snprintf(range, sizeof range, "bytes %lld..%lld do not match", block, block + (1LL << 20));
    else
        snprintf(range, sizeof range, "bytes %lld..%lld of the tile", 1LL << 20, 2LL << 20);
    const char *base = strrchr(victim, '/') + 1;
    expect_named(read_rows(path, H5TILE_FLOAT64, 0, N, 0, 0), H5TILE_ERR_CORRUPT, base);
    expect_named(read_rows(path, H5TILE_FLOAT64, 0, N, 0, 0), H5TILE_ERR_CORRUPT, range);
    expect_named(read_rows(path, H5TILE_FLOAT32, 0, N, 0, 0), H5TILE_ERR_CORRUPT, base);
    /* only rank 3 reads row 700, one element of it */
    {
        const uint64_t off[2] = {rank == 3 ? 700u : 0u, rank == 3 ? 3u : 0u}, one[2] = {1, 1};
        double x;
        expect_named(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, off, one, &x, NULL),
                     H5TILE_ERR_CORRUPT, base);
    }
    /* rows 512..639 are rank 2's first block: intact */
    EXPECT_OK(read_rows(path, H5TILE_FLOAT64, 512, 128, 0, 1));
    /* without checking, the damaged value comes back */
    {
        const uint64_t off[2] = {700, 3}, one[2] = {1, 1};
        h5tile_read_options ro = h5tile_read_options_default();
        ro.flags = H5TILE_READ_NO_VERIFY;
        double x = 0;
        EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, off, one, &x, &ro));
        CHECK_MSG(x != value(1, 700 * N + 3), "H5TILE_READ_NO_VERIFY read %g, the undamaged value", x);
    }
    batches_fail_at(path, 0, 1);
    batches_fail_at(path, H5TILE_READ_NO_VERIFY, 0);
    if (rank == 0 && tiled) CHECK_MSG(hash_file(path) == master, "a failed read changed the master");
    MPI_Barrier(MPI_COMM_WORLD);
    if (!tiled) {
        CHECK_CONTEXT("%s, repaired", name);
        write_version(path, layout, 4);
        EXPECT_OK(read_rows(path, H5TILE_FLOAT64, 0, N, 0, 4));
        CHECK_CONTEXT("%s", "");
        return;
    }

    CHECK_CONTEXT("%s, swapped", name);
    write_version(path, layout, 2);
    file_ending(dir, layout == H5TILE_LAYOUT_VDS ? ".r2.t0.h5" : ".s2.h5", victim, sizeof victim);
    file_ending(dir, layout == H5TILE_LAYOUT_VDS ? ".r1.t0.h5" : ".s0.h5", other, sizeof other);
    if (rank == 0) {
        char tmp[4200];
        PATHF(tmp, "%s.swap", victim);
        CHECK(rename(victim, tmp) == 0 && rename(other, victim) == 0 && rename(tmp, other) == 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_named(read_rows(path, H5TILE_FLOAT64, 0, N, 0, 0), H5TILE_ERR_CORRUPT, "do not match");

    CHECK_CONTEXT("%s, truncated", name);
    write_version(path, layout, 3);
    file_ending(dir, layout == H5TILE_LAYOUT_VDS ? ".r2.t0.h5" : ".s2.h5", victim, sizeof victim);
    if (rank == 0) {
        struct stat st;
        CHECK(stat(victim, &st) == 0 && truncate(victim, st.st_size - 1) == 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_named(read_rows(path, H5TILE_FLOAT64, 0, N, 0, 0), H5TILE_ERR_MISSING_TILE,
                 strrchr(victim, '/') + 1);

    CHECK_CONTEXT("%s, repaired", name);
    write_version(path, layout, 4);
    EXPECT_OK(read_rows(path, H5TILE_FLOAT64, 0, N, 0, 4));
    CHECK_CONTEXT("%s", "");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_MSG(argc == 2 && size == 4, "usage: mpirun -n 4 mpi_checksums SCRATCH");
    run(argv[1], H5TILE_LAYOUT_VDS);
    run(argv[1], H5TILE_LAYOUT_SUBFILES);
    run(argv[1], H5TILE_LAYOUT_SINGLE);
    MPI_Finalize();
    return 0;
}
