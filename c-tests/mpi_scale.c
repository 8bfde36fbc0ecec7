/* Many ranks, small tiles: a (4*N) x 64 float64 array over N ranks, each collective step timed
 * (MPI_Barrier, then MPI_Wtime around the call; the slowest rank's time is reported by rank 0
 * as "step <name>: <seconds> s on <N> ranks"), so a step that grows faster than n log n shows
 * when the program runs at several rank counts (make test-scale). Every step is checked:
 *   mpi_barrier    no h5tile: an MPI_Barrier, the floor any collective step stands on
 *                  (oversubscribed ranks take turns on the cores; log n rounds)
 *   mpi_allgather  no h5tile: an MPI_Allgather of 16 bytes per rank, what every rank learning
 *                  every rank's tile costs in MPI alone
 *   write_vds      h5tile_write of the h5tile_partition decomposition (A), VDS layout
 *   read_vds       h5tile_read on row slabs (B) whose edges cross A's, every element checked
 *   batches_open   h5tile_batches_open over MPI_COMM_WORLD, chunks (3 x 24) not aligned to A
 *   batches_drain  every rank drains its chunks (values checked); over all ranks each chunk
 *                  comes exactly once and their volumes sum to the array's
 *   write_single   the single-file layout written on A
 *   read_single    and read on B
 *   write_fail     a VDS write where the last rank's tile lies outside the global shape: every
 *                  rank gets H5TILE_ERR_INVALID_ARGUMENT, and the dataset written before is
 *                  byte for byte untouched and reads back whole
 *   write_fail_single  the same for the single-file layout
 * Usage: mpi_scale SCRATCH_DIR [REPS]: with REPS > 1 the steps run REPS times over the same
 * files and each step reports its fastest repetition (the slowest rank's time in it). */
#include "check.h"

static int rank, size;
static uint64_t G[2];                /* (4*size) x 64 */
static uint64_t a_off[2], a_shp[2];  /* decomposition A: this rank's partition tile */
static uint64_t b_off[2], b_shp[2];  /* decomposition B: a row slab crossing A's edges */
static double *a_buf, *b_buf;

#define NSTEPS 10
enum {
    STEP_BARRIER, STEP_ALLGATHER, STEP_WRITE_VDS, STEP_READ_VDS, STEP_BATCHES_OPEN,
    STEP_BATCHES_DRAIN, STEP_WRITE_SINGLE, STEP_READ_SINGLE, STEP_WRITE_FAIL, STEP_WRITE_FAIL_SINGLE
};
static const char *const step_names[NSTEPS] = {
    "mpi_barrier", "mpi_allgather", "write_vds", "read_vds", "batches_open", "batches_drain",
    "write_single", "read_single", "write_fail", "write_fail_single"};
static double best[NSTEPS];

static double t_start;
static void step_begin(void) {
    MPI_Barrier(MPI_COMM_WORLD);
    t_start = MPI_Wtime();
}
/* The slowest rank's time since step_begin (the same on every rank). */
static void step_end(int step) {
    double mine = MPI_Wtime() - t_start, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (slowest < best[step]) best[step] = slowest;
}

/* Row slabs: boundaries at 0, 4r+1 (0 < r < N), 4N, so rank 0 gets 5 rows, the last rank 3
 * and the others 4, each slab across all columns: none lines up with a partition tile. */
static void slab_of(int r, uint64_t *off, uint64_t *shp) {
    uint64_t lo = r == 0 ? 0 : 4 * (uint64_t)r + 1;
    uint64_t hi = r == size - 1 ? G[0] : 4 * (uint64_t)(r + 1) + 1;
    off[0] = lo, off[1] = 0;
    shp[0] = hi - lo, shp[1] = G[1];
}

static void read_b_and_check(const char *path) {
    memset(b_buf, 0xEE, (size_t)volume(2, b_shp) * sizeof(double));
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, b_off, b_shp, b_buf,
                          NULL));
    CHECK_TILE(H5TILE_FLOAT64, 2, G, b_off, b_shp, b_buf);
}

static void write_and_read(const char *path, h5tile_layout layout, int wstep, int rstep) {
    h5tile_write_options o = h5tile_write_options_default();
    o.layout = layout;
    CHECK_CONTEXT("%s of %s", step_names[wstep], path);
    step_begin();
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, G, a_off, a_shp,
                           a_buf, &o));
    step_end(wstep);
    CHECK_CONTEXT("%s of %s", step_names[rstep], path);
    memset(b_buf, 0xEE, (size_t)volume(2, b_shp) * sizeof(double));
    step_begin();
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, b_off, b_shp, b_buf,
                          NULL));
    step_end(rstep);
    CHECK_TILE(H5TILE_FLOAT64, 2, G, b_off, b_shp, b_buf);
}

static void batches(const char *path) {
    const uint64_t chunk[2] = {3, 24};
    const uint64_t rows = (G[0] + chunk[0] - 1) / chunk[0], cols = (G[1] + chunk[1] - 1) / chunk[1];
    const uint64_t nchunks = rows * cols;
    CHECK_CONTEXT("batches over %s", path);
    h5tile_batches *it = NULL;
    step_begin();
    EXPECT_OK(h5tile_batches_open(MPI_COMM_WORLD, path, "/data", 2, chunk, NULL, &it));
    step_end(STEP_BATCHES_OPEN);
    CHECK(it != NULL);
    size_t max_bytes = 0;
    uint64_t mine = 0;
    EXPECT_OK(h5tile_batches_info(it, NULL, &max_bytes, &mine));
    CHECK(max_bytes == chunk[0] * chunk[1] * sizeof(double));
    double *buf = (double *)xmalloc(max_bytes);
    /* Each chunk's number, seen here; summed over ranks below. */
    int *seen = (int *)calloc((size_t)nchunks, sizeof(int));
    CHECK(seen != NULL);
    uint64_t offs[2 * 64], shps[2 * 64], count = 0, elems = 0;
    CHECK_MSG(mine <= 64, "rank %d got %llu chunks", rank, (unsigned long long)mine);
    bool done = false;
    step_begin();
    for (;;) {
        EXPECT_OK(h5tile_batches_next(it, buf, max_bytes, offs + 2 * count, shps + 2 * count,
                                      &done));
        if (done) break;
        CHECK_TILE(H5TILE_FLOAT64, 2, G, offs + 2 * count, shps + 2 * count, buf);
        count++;
        CHECK(count <= mine);
    }
    step_end(STEP_BATCHES_DRAIN);
    h5tile_batches_free(it);
    free(buf);
    CHECK_MSG(count == mine, "got %llu chunks, info said %llu", (unsigned long long)count,
              (unsigned long long)mine);
    for (uint64_t k = 0; k < count; k++) {
        const uint64_t *o = offs + 2 * k, *s = shps + 2 * k;
        CHECK(o[0] % chunk[0] == 0 && o[1] % chunk[1] == 0);
        for (int d = 0; d < 2; d++) {
            uint64_t want = G[d] - o[d] < chunk[d] ? G[d] - o[d] : chunk[d];
            CHECK_MSG(s[d] == want, "chunk at (%llu,%llu): extent %llu on axis %d, expected %llu",
                      (unsigned long long)o[0], (unsigned long long)o[1],
                      (unsigned long long)s[d], d, (unsigned long long)want);
        }
        seen[o[0] / chunk[0] * cols + o[1] / chunk[1]]++;
        elems += s[0] * s[1];
    }
    /* Over all ranks: every chunk exactly once, and the volumes add up to the array's. */
    int *all = (int *)xmalloc((size_t)nchunks * sizeof(int));
    MPI_Allreduce(seen, all, (int)nchunks, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (uint64_t c = 0; c < nchunks; c++)
        CHECK_MSG(all[c] == 1, "chunk %llu was delivered %d times over all ranks",
                  (unsigned long long)c, all[c]);
    uint64_t total = 0;
    MPI_Allreduce(&elems, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK_MSG(total == volume(2, G), "chunks hold %llu elements over all ranks, the array %llu",
              (unsigned long long)total, (unsigned long long)volume(2, G));
    free(all);
    free(seen);
}

/* The last rank's tile is moved past the array's end: every rank must get the same status,
 * and `path` (written before) must be untouched and read back whole. */
static void failing_write(const char *path, h5tile_layout layout, int step) {
    dataset_snapshot snap = {0, 0, 0};
    uint64_t master = 0;
    if (rank == 0) {
        if (layout == H5TILE_LAYOUT_VDS) snap = snapshot(path);
        else master = hash_file(path);
    }
    h5tile_write_options o = h5tile_write_options_default();
    o.layout = layout;
    uint64_t off[2] = {a_off[0], a_off[1]};
    CHECK(volume(2, a_shp) > 0);
    if (rank == size - 1) off[0] = G[0] - a_shp[0] + 1;
    CHECK_CONTEXT("%s of %s", step_names[step], path);
    step_begin();
    EXPECT_STATUS(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, G, off, a_shp,
                               a_buf, &o),
                  H5TILE_ERR_INVALID_ARGUMENT);
    step_end(step);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        if (layout == H5TILE_LAYOUT_VDS) CHECK_UNTOUCHED(path, snap);
        else CHECK_MSG(hash_file(path) == master, "failed write changed '%s'", path);
        /* the whole array, by this process alone */
        double *whole = (double *)xmalloc((size_t)volume(2, G) * sizeof(double));
        const uint64_t zero[2] = {0, 0};
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, zero, G, whole,
                              NULL));
        CHECK_TILE(H5TILE_FLOAT64, 2, G, zero, G, whole);
        free(whole);
    }
    read_b_and_check(path);
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_SINGLE, &rank, &size);
    int reps = argc > 2 ? atoi(argv[2]) : 1;
    CHECK_MSG(reps >= 1, "REPS must be a positive number, not '%s'", argv[2]);
    G[0] = 4 * (uint64_t)size;
    G[1] = 64;
    EXPECT_OK(h5tile_partition((size_t)size, (size_t)rank, 2, G, a_off, a_shp));
    slab_of(rank, b_off, b_shp);
    a_buf = (double *)xmalloc((size_t)volume(2, a_shp) * sizeof(double));
    b_buf = (double *)xmalloc((size_t)volume(2, b_shp) * sizeof(double));
    fill_tile(H5TILE_FLOAT64, 2, G, a_off, a_shp, a_buf);
    for (int s = 0; s < NSTEPS; s++) best[s] = 1e300;

    char vds[4096], single[4096];
    PATHF(vds, "%s/scale.h5", scratch);
    PATHF(single, "%s/scale_single.h5", scratch);
    for (int r = 0; r < reps; r++) {
        {
            uint64_t mine[2] = {a_off[0], a_off[1]};
            uint64_t *all = (uint64_t *)xmalloc(2 * (size_t)size * sizeof(uint64_t));
            step_begin();
            MPI_Barrier(MPI_COMM_WORLD);
            step_end(STEP_BARRIER);
            step_begin();
            MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
            step_end(STEP_ALLGATHER);
            CHECK(all[2 * rank] == a_off[0] && all[2 * rank + 1] == a_off[1]);
            free(all);
        }
        write_and_read(vds, H5TILE_LAYOUT_VDS, STEP_WRITE_VDS, STEP_READ_VDS);
        if (rank == 0) {
            char dir[4096];
            TILE_DIR(dir, vds);
            int nonempty = 0;
            for (int q = 0; q < size; q++) {
                uint64_t o[2], s[2];
                EXPECT_OK(h5tile_partition((size_t)size, (size_t)q, 2, G, o, s));
                nonempty += volume(2, s) > 0;
            }
            CHECK_MSG(count_files(dir) == nonempty, "%s holds %d tile files, expected %d", dir,
                      count_files(dir), nonempty);
        }
        batches(vds);
        write_and_read(single, H5TILE_LAYOUT_SINGLE, STEP_WRITE_SINGLE, STEP_READ_SINGLE);
        failing_write(vds, H5TILE_LAYOUT_VDS, STEP_WRITE_FAIL);
        failing_write(single, H5TILE_LAYOUT_SINGLE, STEP_WRITE_FAIL_SINGLE);
    }
    CHECK_CONTEXT("done");
    free(a_buf);
    free(b_buf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (int s = 0; s < NSTEPS; s++)
            printf("step %s: %.6f s on %d ranks\n", step_names[s], best[s], size);
        printf("mpi_scale: OK on %d ranks (%llu x %llu float64, %d repetition%s)\n", size,
               (unsigned long long)G[0], (unsigned long long)G[1], reps, reps == 1 ? "" : "s");
    }
    MPI_Finalize();
    return 0;
}
