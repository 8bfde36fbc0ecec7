/* Batched reading on 1 to 3 ranks: chunks come in row-major order of their offsets, clipped at
 * the dataset's edge (1-D, 2-D, 3-D; a chunk larger than the dataset is one clipped chunk; a
 * dataset with no elements gives none); with a communicator every chunk goes to exactly one
 * rank, each rank gets a contiguous run in order, and the runs differ by at most one chunk;
 * with MPI_COMM_NULL one process gets them all; every chunk's values are checked; element
 * types are converted on request; every validation error has its exact status on every rank;
 * a buffer too small fails without advancing; freeing an iterator mid-way (read-ahead thread
 * running) neither hangs nor leaks an open file. */
#include "check.h"

static int rank, size;

static void write_dataset(const char *path, size_t ndim, const uint64_t *g, int dt) {
    uint64_t off[3], shp[3];
    EXPECT_OK(h5tile_partition((size_t)size, (size_t)rank, ndim, g, off, shp));
    void *buf = xmalloc((size_t)volume(ndim, shp) * dtype_size(dt));
    fill_tile(dt, ndim, g, off, shp, buf);
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, "/data", dt, ndim, g, off, shp, buf, NULL));
    free(buf);
}

/* Row-major number of the chunk at `off` in the grid of `chunk`-sized chunks over `g`. */
static uint64_t chunk_number(size_t ndim, const uint64_t *g, const uint64_t *chunk,
                             const uint64_t *off) {
    uint64_t n = 0;
    for (size_t d = 0; d < ndim; d++) {
        CHECK_MSG(off[d] % chunk[d] == 0, "offset %llu on axis %zu is not on the chunk grid",
                  (unsigned long long)off[d], d);
        n = n * ((g[d] + chunk[d] - 1) / chunk[d]) + off[d] / chunk[d];
    }
    return n;
}

/* Reads every chunk this rank gets (collectively over `comm`) and checks order, clipping,
 * values and how the chunks are dealt. Returns how many this rank got. */
static uint64_t read_all_chunks(MPI_Comm comm, const char *path, size_t ndim, const uint64_t *g,
                                const uint64_t *chunk, int dt) {
    h5tile_batches *it = NULL;
    EXPECT_OK(h5tile_batches_open(comm, path, "/data", ndim, chunk, NULL, &it));
    CHECK(it != NULL);
    h5tile_dtype got_dt;
    size_t max_bytes;
    uint64_t nchunks;
    EXPECT_OK(h5tile_batches_info(it, &got_dt, &max_bytes, &nchunks));
    CHECK(got_dt == dt);
    uint64_t total = 1, clipped_max = 1;
    for (size_t d = 0; d < ndim; d++) {
        total *= (g[d] + chunk[d] - 1) / chunk[d];
        clipped_max *= chunk[d] < g[d] ? chunk[d] : g[d];
    }
    if (total == 0) clipped_max = 0;
    CHECK_MSG(max_bytes == clipped_max * dtype_size(dt), "max_chunk_bytes %zu", max_bytes);
    void *buf = xmalloc(max_bytes);
    uint64_t off[3], shp[3], count = 0, first = 0, prev = 0;
    bool done = true;
    for (;;) {
        /* Every other chunk by h5tile_batches_next_view: both ways, and mixed. */
        const void *data = buf;
        if (count % 2 == 0) {
            EXPECT_OK(h5tile_batches_next(it, buf, max_bytes, off, shp, &done));
        } else {
            EXPECT_OK(h5tile_batches_next_view(it, &data, off, shp, &done));
            CHECK_MSG(done == (data == NULL), "a view is NULL exactly when done");
        }
        if (done) break;
        uint64_t n = chunk_number(ndim, g, chunk, off);
        if (count == 0) first = n;
        else CHECK_MSG(n == prev + 1, "chunk %llu came after chunk %llu", (unsigned long long)n,
                       (unsigned long long)prev);
        for (size_t d = 0; d < ndim; d++) {
            uint64_t want = g[d] - off[d] < chunk[d] ? g[d] - off[d] : chunk[d];
            CHECK_MSG(shp[d] == want, "chunk %llu: extent %llu on axis %zu, expected %llu",
                      (unsigned long long)n, (unsigned long long)shp[d], d,
                      (unsigned long long)want);
        }
        CHECK_TILE(dt, ndim, g, off, shp, data);
        prev = n;
        count++;
    }
    CHECK_MSG(count == nchunks, "got %llu chunks, info said %llu", (unsigned long long)count,
              (unsigned long long)nchunks);
    EXPECT_OK(h5tile_batches_next(it, buf, max_bytes, off, shp, &done));
    CHECK_MSG(done, "done stays done");
    h5tile_batches_free(it);
    free(buf);

    if (comm == MPI_COMM_NULL) {
        CHECK_MSG(count == total, "alone: %llu of %llu chunks", (unsigned long long)count,
                  (unsigned long long)total);
        return count;
    }
    /* Runs in rank order, back to back from chunk 0 to the last, balanced. */
    uint64_t mine[2] = {count ? first : UINT64_MAX, count}, all[2 * 64];
    CHECK(size <= 64);
    MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, comm);
    uint64_t next = 0, lo = UINT64_MAX, hi = 0;
    for (int r = 0; r < size; r++) {
        uint64_t f = all[2 * r], c = all[2 * r + 1];
        if (c) CHECK_MSG(f == next, "rank %d starts at chunk %llu, expected %llu", r,
                         (unsigned long long)f, (unsigned long long)next);
        next += c;
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
    }
    CHECK_MSG(next == total, "ranks got %llu chunks in all, expected %llu",
              (unsigned long long)next, (unsigned long long)total);
    CHECK_MSG(hi - lo <= 1, "unbalanced: %llu to %llu chunks per rank", (unsigned long long)lo,
              (unsigned long long)hi);
    return count;
}

static void order_and_clipping(const char *scratch) {
    char path[4096];
    /* 1-D: extent 5 in chunks of 2 gives 2, 2, 1. */
    PATHF(path, "%s/one.h5", scratch);
    const uint64_t g1[1] = {5}, c1[1] = {2};
    write_dataset(path, 1, g1, H5TILE_FLOAT64);
    read_all_chunks(MPI_COMM_WORLD, path, 1, g1, c1, H5TILE_FLOAT64);
    if (rank == 0) {
        h5tile_batches *it;
        EXPECT_OK(h5tile_batches_open(MPI_COMM_NULL, path, "/data", 1, c1, NULL, &it));
        double buf[2];
        uint64_t off, shp, want_off[3] = {0, 2, 4}, want_shp[3] = {2, 2, 1};
        bool done;
        for (int k = 0; k < 3; k++) {
            EXPECT_OK(h5tile_batches_next(it, buf, sizeof buf, &off, &shp, &done));
            CHECK(!done && off == want_off[k] && shp == want_shp[k]);
        }
        EXPECT_OK(h5tile_batches_next(it, buf, sizeof buf, &off, &shp, &done));
        CHECK(done);
        h5tile_batches_free(it);
        CHECK(read_all_chunks(MPI_COMM_NULL, path, 1, g1, c1, H5TILE_FLOAT64) == 3);
    }
    /* 2-D and 3-D, uneven. */
    PATHF(path, "%s/two.h5", scratch);
    const uint64_t g2[2] = {7, 5}, c2[2] = {3, 2};
    write_dataset(path, 2, g2, H5TILE_INT32);
    read_all_chunks(MPI_COMM_WORLD, path, 2, g2, c2, H5TILE_INT32);
    if (rank == 0) CHECK(read_all_chunks(MPI_COMM_NULL, path, 2, g2, c2, H5TILE_INT32) == 9);
    const uint64_t big[2] = {100, 100};
    CHECK(read_all_chunks(MPI_COMM_WORLD, path, 2, g2, big, H5TILE_INT32) == (rank == 0));
    PATHF(path, "%s/three.h5", scratch);
    const uint64_t g3[3] = {4, 5, 6}, c3[3] = {3, 2, 4};
    write_dataset(path, 3, g3, H5TILE_COMPLEX64);
    read_all_chunks(MPI_COMM_WORLD, path, 3, g3, c3, H5TILE_COMPLEX64);
    /* A dataset with no elements gives no chunk. */
    PATHF(path, "%s/empty.h5", scratch);
    const uint64_t g0[2] = {0, 5}, c0[2] = {2, 2};
    write_dataset(path, 2, g0, H5TILE_INT8);
    CHECK(read_all_chunks(MPI_COMM_WORLD, path, 2, g0, c0, H5TILE_INT8) == 0);
}

static void conversion(const char *scratch) {
    char path[4096];
    PATHF(path, "%s/two.h5", scratch);
    const uint64_t g[2] = {7, 5}, c[2] = {4, 4};
    h5tile_read_options o = h5tile_read_options_default();
    o.dtype = H5TILE_FLOAT64;
    h5tile_batches *it;
    EXPECT_OK(h5tile_batches_open(MPI_COMM_WORLD, path, "/data", 2, c, &o, &it));
    h5tile_dtype dt;
    EXPECT_OK(h5tile_batches_info(it, &dt, NULL, NULL));
    CHECK(dt == H5TILE_FLOAT64);
    double buf[16];
    uint64_t off[2], shp[2];
    bool done;
    for (;;) {
        EXPECT_OK(h5tile_batches_next(it, buf, sizeof buf, off, shp, &done));
        if (done) break;
        for (uint64_t i = 0; i < shp[0]; i++)
            for (uint64_t j = 0; j < shp[1]; j++) {
                int32_t v;
                dtype_value(H5TILE_INT32, (off[0] + i) * g[1] + off[1] + j, &v);
                CHECK(buf[i * shp[1] + j] == (double)v);
            }
    }
    h5tile_batches_free(it);
    /* h5tile_read takes its type as an argument: opts->dtype must agree with it */
    int32_t one[1];
    const uint64_t z[2] = {0, 0}, e[2] = {1, 1};
    EXPECT_STATUS(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_INT32, 2, z, e, one, &o),
                  H5TILE_ERR_INVALID_ARGUMENT);
    o.dtype = H5TILE_INT32;
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_INT32, 2, z, e, one, &o));
    o.dtype = H5TILE_COMPLEX128; /* int32 cannot become complex */
    it = (h5tile_batches *)&o;   /* must be reset to NULL on failure */
    EXPECT_STATUS(h5tile_batches_open(MPI_COMM_WORLD, path, "/data", 2, c, &o, &it),
                  H5TILE_ERR_DTYPE);
    CHECK(it == NULL);
}

static void validation(const char *scratch) {
    char path[4096], missing[4096];
    PATHF(path, "%s/two.h5", scratch);
    PATHF(missing, "%s/no-such-file.h5", scratch);
    const uint64_t ok[3] = {2, 2, 2}, zero[2] = {2, 0};
    const uint64_t negative[2] = {(uint64_t)-1, (uint64_t)-2};
    h5tile_batches *it = NULL;
    EXPECT_STATUS(h5tile_batches_open(MPI_COMM_WORLD, path, "/data", 3, ok, NULL, &it),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(h5tile_last_error(), "3 entries") != NULL);
    EXPECT_STATUS(h5tile_batches_open(MPI_COMM_WORLD, path, "/data", 1, ok, NULL, &it),
                  H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(h5tile_batches_open(MPI_COMM_WORLD, path, "/data", 2, zero, NULL, &it),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(h5tile_last_error(), "chunk_shape[1] is 0") != NULL);
    EXPECT_STATUS(h5tile_batches_open(MPI_COMM_WORLD, path, "/data", 2, negative, NULL, &it),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(h5tile_last_error(), "chunk_shape[0] is -1") != NULL);
    /* a bad value on rank 1 only is an error on every rank */
    EXPECT_STATUS(h5tile_batches_open(MPI_COMM_WORLD, path, "/data", 2, rank == 1 ? zero : ok,
                                      NULL, &it),
                  size > 1 ? H5TILE_ERR_INVALID_ARGUMENT : H5TILE_OK);
    h5tile_batches_free(it);
    it = NULL;
    EXPECT_STATUS(h5tile_batches_open(MPI_COMM_WORLD, path, "/nope", 2, ok, NULL, &it),
                  H5TILE_ERR_NOT_FOUND);
    EXPECT_STATUS(h5tile_batches_open(MPI_COMM_WORLD, missing, "/data", 2, ok, NULL, &it),
                  H5TILE_ERR_NOT_FOUND);
    EXPECT_STATUS(h5tile_batches_open(MPI_COMM_WORLD, path, "/", 2, ok, NULL, &it),
                  H5TILE_ERR_NOT_A_DATASET);
    EXPECT_STATUS(h5tile_batches_open(MPI_COMM_WORLD, scratch, "/data", 2, ok, NULL, &it),
                  H5TILE_ERR_IS_DIRECTORY);
    EXPECT_STATUS(h5tile_batches_open(MPI_COMM_WORLD, path, "/data", 2, ok, NULL, NULL),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(it == NULL);
    h5tile_batches_free(NULL);

    /* A buffer too small fails and does not advance. */
    const uint64_t c[2] = {3, 2};
    EXPECT_OK(h5tile_batches_open(MPI_COMM_NULL, path, "/data", 2, c, NULL, &it));
    int32_t buf[6];
    uint64_t off[2] = {9, 9}, shp[2] = {9, 9};
    bool done = true;
    EXPECT_STATUS(h5tile_batches_next(it, buf, sizeof buf - 1, off, shp, &done),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(h5tile_last_error(), "too small") != NULL);
    EXPECT_STATUS(h5tile_batches_next(NULL, buf, sizeof buf, off, shp, &done),
                  H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(h5tile_batches_next(it, buf, sizeof buf, off, shp, NULL),
                  H5TILE_ERR_INVALID_ARGUMENT);
    const void *view = buf;
    EXPECT_STATUS(h5tile_batches_next_view(it, NULL, off, shp, &done),
                  H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(h5tile_batches_next_view(it, &view, NULL, shp, &done),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK_MSG(view == buf, "a refused view call wrote its out-pointer");
    EXPECT_OK(h5tile_batches_next(it, buf, sizeof buf, off, shp, &done));
    CHECK(!done && off[0] == 0 && off[1] == 0 && shp[0] == 3 && shp[1] == 2);
    const uint64_t g[2] = {7, 5};
    CHECK_TILE(H5TILE_INT32, 2, g, off, shp, buf);
    h5tile_batches_free(it);
}

static void early_free(const char *scratch) {
    char path[4096];
    PATHF(path, "%s/free.h5", scratch);
    const uint64_t g[2] = {64, 64}, c[2] = {1, 64};
    write_dataset(path, 2, g, H5TILE_FLOAT64);
    double row[64];
    uint64_t off[2], shp[2];
    bool done;
    for (int consumed = 0; consumed < 4; consumed++) {
        h5tile_batches *it;
        EXPECT_OK(h5tile_batches_open(MPI_COMM_WORLD, path, "/data", 2, c, NULL, &it));
        for (int k = 0; k < consumed; k++) {
            EXPECT_OK(h5tile_batches_next(it, row, sizeof row, off, shp, &done));
            CHECK(!done);
        }
        h5tile_batches_free(it);
    }
    /* Nothing keeps the file open: it can be replaced at once, and read back. */
    write_dataset(path, 2, g, H5TILE_FLOAT64);
    read_all_chunks(MPI_COMM_WORLD, path, 2, g, c, H5TILE_FLOAT64);
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_SINGLE, &rank, &size);
    order_and_clipping(scratch);
    conversion(scratch);
    validation(scratch);
    early_free(scratch);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_batches: OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
