/* Writes that return before the data is written (h5tile_write_async, h5tile_wait,
 * h5tile_fence), under MPI_Init_thread(MPI_THREAD_MULTIPLE), where they run on a thread of
 * their own, or under MPI_THREAD_SINGLE (`mpi_write_async SCRATCH single`), where they complete
 * before returning:
 *   1. each rank's row slab written in the background while the ranks exchange messages on
 *      MPI_COMM_WORLD, completed by h5tile_wait, read back on another decomposition; under
 *      MPI_THREAD_SINGLE the first such write of the process says once on stderr that it runs
 *      synchronously, naming the level;
 *   2. two writes, one without a request handle, completed by h5tile_fence; the kept request
 *      still returns its status from h5tile_wait; two fields of one file started at once
 *      with H5TILE_KEEP_OTHERS (they run in turn, each keeping the other);
 *   3. MPI_COMM_NULL: every rank writes a file of its own and fences alone;
 *   4. bad calls: a bad dtype fails at once, sets *req to NULL and creates nothing; a gap in
 *      the tiles and an existing file under H5TILE_NO_OVERWRITE fail at h5tile_wait and at
 *      h5tile_fence with the same status on every rank, and the existing file is untouched;
 *      h5tile_wait(NULL) is an invalid argument. */
#include "check.h"

static int rank, size;

/* Element (r, c) of version v of an R x 6 array. */
static double value(int v, uint64_t r, uint64_t c) { return v * 1000.0 + r * 6.0 + c; }

static void fill(int v, const uint64_t *off, const uint64_t *shp, double *buf) {
    for (uint64_t r = 0; r < shp[0]; r++)
        for (uint64_t c = 0; c < shp[1]; c++) buf[r * shp[1] + c] = value(v, off[0] + r, c);
}

/* Every rank reads columns [rank % 6, +1) of every row of `dataset`, and checks them against
 * version v. */
static void check_dataset(const char *path, const char *dataset, const uint64_t *g, int v) {
    uint64_t off[2] = {0, (uint64_t)rank % 6}, shp[2] = {g[0], 1};
    double col[64];
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, dataset, H5TILE_FLOAT64, 2, off, shp, col, NULL));
    for (uint64_t r = 0; r < g[0]; r++)
        CHECK_MSG(col[r] == value(v, r, off[1]), "%s: (%llu, %llu) is %g, expected version %d",
                  path, (unsigned long long)r, (unsigned long long)off[1], col[r], v);
}

static void check_version(const char *path, const uint64_t *g, int v) {
    check_dataset(path, "/x", g, v);
}

int main(int argc, char **argv) {
    const int threaded = !(argc > 2 && strcmp(argv[2], "single") == 0);
    const char *scratch = mpi_test_start(
        &argc, &argv, threaded ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &rank, &size);
    char a[4096], b[4096], c[4096], mine[4096], never[4096];
    PATHF(a, "%s/a.h5", scratch);
    PATHF(b, "%s/b.h5", scratch);
    PATHF(c, "%s/c.h5", scratch);
    PATHF(mine, "%s/rank%d.h5", scratch, rank);
    PATHF(never, "%s/never.h5", scratch);

    /* Each rank owns 4 rows of a (4 * size) x 6 array. */
    const uint64_t g[2] = {4 * (uint64_t)size, 6}, off[2] = {4 * (uint64_t)rank, 0},
                   shp[2] = {4, 6};
    double v1[24], v2[24], v3[24];
    fill(1, off, shp, v1);
    fill(2, off, shp, v2);
    fill(3, off, shp, v3);

    /* 1. One write in flight while the ranks talk among themselves. Under MPI_THREAD_SINGLE
     * it runs synchronously, which the first such write of a process says once (warn, the
     * default level), naming the level; the second says nothing. */
    h5tile_request *req = NULL;
    char said[4096];
    PATHF(said, "%s/stderr.r%d", scratch, rank);
    unsetenv("H5TILE_LOG");
    capture_stderr(said);
    h5tile_status first = h5tile_write_async(MPI_COMM_WORLD, a, "/x", H5TILE_FLOAT64, 2, g, off,
                                             shp, v1, NULL, &req);
    h5tile_request *again = NULL;
    h5tile_status second = h5tile_write_async(MPI_COMM_WORLD, c, "/x", H5TILE_FLOAT64, 2, g,
                                              off, shp, v1, NULL, &again);
    restore_stderr();
    EXPECT_OK(first);
    EXPECT_OK(second);
    CHECK(req != NULL);
    EXPECT_OK(h5tile_wait(again));
    const int want = threaded ? 0 : 1;
    CHECK_MSG(lines_with(said, "run synchronously") == want &&
                  lines_with(said, "MPI provides MPI_THREAD_SINGLE") == want,
              "%s: expected %d warning naming MPI_THREAD_SINGLE", said, want);
    long sum = 0;
    for (int i = 0; i < 50; i++) {
        long mine_ = rank + i, total = 0;
        MPI_Allreduce(&mine_, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        sum += total;
    }
    CHECK(sum == 50L * size * (size - 1) / 2 + (long)size * (49 * 50 / 2));
    EXPECT_OK(h5tile_wait(req));
    check_version(a, g, 1);

    /* 2. Two writes completed by one fence: one kept, one left to the library. */
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, a, "/x", H5TILE_FLOAT64, 2, g, off, shp, v2,
                                 NULL, &req));
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, b, "/x", H5TILE_FLOAT64, 2, g, off, shp, v3,
                                 NULL, NULL));
    EXPECT_OK(h5tile_fence(MPI_COMM_WORLD));
    check_version(a, g, 2);
    check_version(b, g, 3);
    EXPECT_OK(h5tile_wait(req));
    h5tile_write_options keep_others = h5tile_write_options_default();
    keep_others.flags = H5TILE_KEEP_OTHERS;
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, b, "/y", H5TILE_FLOAT64, 2, g, off, shp, v1,
                                 &keep_others, NULL));
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, b, "/z", H5TILE_FLOAT64, 2, g, off, shp, v2,
                                 &keep_others, NULL));
    EXPECT_OK(h5tile_fence(MPI_COMM_WORLD));
    check_version(b, g, 3);
    check_dataset(b, "/y", g, 1);
    check_dataset(b, "/z", g, 2);

    /* 3. This process alone. */
    const uint64_t zero[2] = {0, 0};
    EXPECT_OK(h5tile_write_async(MPI_COMM_NULL, mine, "/x", H5TILE_FLOAT64, 2, shp, zero, shp,
                                 v3, NULL, &req));
    EXPECT_OK(h5tile_fence(MPI_COMM_NULL));
    EXPECT_OK(h5tile_wait(req));
    double back[24];
    EXPECT_OK(h5tile_read(MPI_COMM_NULL, mine, "/x", H5TILE_FLOAT64, 2, zero, shp, back, NULL));
    CHECK(memcmp(back, v3, sizeof back) == 0);

    /* 4. Bad calls. A bad dtype: refused at once, nothing started. */
    req = (h5tile_request *)&req; /* anything but NULL */
    EXPECT_STATUS(h5tile_write_async(MPI_COMM_WORLD, never, "/x", 77, 2, g, off, shp, v1, NULL,
                                     &req),
                  H5TILE_ERR_DTYPE);
    CHECK(req == NULL);
    CHECK(!path_exists(never));
    /* A gap (rank 0 writes nothing): found by the write, returned by wait on every rank. */
    dataset_snapshot before = snapshot(a);
    const uint64_t none[2] = {0, 0};
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, a, "/x", H5TILE_FLOAT64, 2, g, off,
                                 rank == 0 ? none : shp, v1, NULL, &req));
    EXPECT_STATUS(h5tile_wait(req), H5TILE_ERR_SHAPE);
    CHECK(strlen(h5tile_last_error()) > 0);
    /* An existing file under H5TILE_NO_OVERWRITE, left to the fence. */
    h5tile_write_options keep = h5tile_write_options_default();
    keep.flags = H5TILE_NO_OVERWRITE;
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, a, "/x", H5TILE_FLOAT64, 2, g, off, shp, v3,
                                 &keep, NULL));
    EXPECT_STATUS(h5tile_fence(MPI_COMM_WORLD), H5TILE_ERR_EXISTS);
    CHECK_UNTOUCHED(a, before);
    check_version(a, g, 2);
    EXPECT_OK(h5tile_fence(MPI_COMM_WORLD)); /* nothing left outstanding */
    EXPECT_STATUS(h5tile_wait(NULL), H5TILE_ERR_INVALID_ARGUMENT);

    MPI_Finalize();
    if (rank == 0) printf("mpi_write_async (%s): OK\n", threaded ? "threaded" : "single");
    return 0;
}
