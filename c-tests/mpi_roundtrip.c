/* MPI ranks write the tiles h5tile_partition gives them (a 37x23 float64 array, a 9x10x11 int32
 * array, a 3-element array that leaves a rank empty when there are 4), then every rank reads a
 * different decomposition (another rank's tile, row slabs, the whole array, its own tile alone
 * with MPI_COMM_NULL) and checks every value against the formula of its global index. */
#include "check.h"

static int rank, size;

/* Which tile files a write with one tile per rank leaves: one per non-empty partition tile. */
static int nonempty_tiles(size_t ndim, const uint64_t *global) {
    int n = 0;
    for (int r = 0; r < size; r++) {
        uint64_t off[32], shp[32];
        EXPECT_OK(h5tile_partition((size_t)size, (size_t)r, ndim, global, off, shp));
        n += volume(ndim, shp) > 0;
    }
    return n;
}

static void read_and_check(const char *path, const char *dset, int dt, size_t ndim,
                           const uint64_t *global, const uint64_t *off, const uint64_t *shp,
                           MPI_Comm comm) {
    size_t bytes = (size_t)volume(ndim, shp) * dtype_size(dt);
    unsigned char *buf = (unsigned char *)xmalloc(bytes);
    memset(buf, 0xEE, bytes);
    EXPECT_OK(h5tile_read(comm, path, dset, dt, ndim, off, shp, buf, NULL));
    CHECK_TILE(dt, ndim, global, off, shp, buf);
    free(buf);
}

/* Writes `dt` array `global` as this rank's partition tile, then reads it back in several
 * decompositions different from the written one. */
static void roundtrip(const char *scratch, const char *name, int dt, size_t ndim,
                      const uint64_t *global, h5tile_layout layout) {
    char path[4096], dir[4096];
    PATHF(path, "%s/%s%s.h5", scratch, name, layout == H5TILE_LAYOUT_SINGLE ? "_single" : "");
    TILE_DIR(dir, path);
    h5tile_write_options opts = h5tile_write_options_default();
    opts.layout = layout;

    uint64_t off[32], shp[32];
    EXPECT_OK(h5tile_partition((size_t)size, (size_t)rank, ndim, global, off, shp));
    uint64_t n = volume(ndim, shp);
    void *buf = n ? xmalloc((size_t)n * dtype_size(dt)) : NULL;
    if (n) fill_tile(dt, ndim, global, off, shp, buf);
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, "/data", dt, ndim, global, off, shp, buf, &opts));
    free(buf);

    /* The call returned: the data is on disk for any process to see. */
    CHECK(is_regular_file(path));
    if (layout == H5TILE_LAYOUT_VDS) {
        int want_files = nonempty_tiles(ndim, global);
        CHECK_MSG(count_files(dir) == want_files, "%s holds %d tile files, expected %d", dir,
                  count_files(dir), want_files);
    } else {
        CHECK_MSG(!path_exists(dir), "the single-file layout made a tile folder %s", dir);
    }
    h5tile_dtype got_dt;
    size_t got_ndim;
    uint64_t got_shape[32];
    EXPECT_OK(h5tile_inspect(path, "/data", &got_dt, &got_ndim, got_shape));
    CHECK(got_dt == dt && got_ndim == ndim);
    for (size_t d = 0; d < ndim; d++) CHECK(got_shape[d] == global[d]);

    /* 1. the tile another rank wrote */
    uint64_t o2[32], s2[32];
    EXPECT_OK(h5tile_partition((size_t)size, (size_t)(size - 1 - rank), ndim, global, o2, s2));
    read_and_check(path, "/data", dt, ndim, global, o2, s2, MPI_COMM_WORLD);

    /* 2. slabs along axis 0, uneven: rank r gets [r*N/size, (r+1)*N/size) */
    uint64_t o3[32] = {0}, s3[32];
    for (size_t d = 0; d < ndim; d++) s3[d] = global[d];
    o3[0] = global[0] * (uint64_t)rank / (uint64_t)size;
    s3[0] = global[0] * (uint64_t)(rank + 1) / (uint64_t)size - o3[0];
    read_and_check(path, "/data", dt, ndim, global, o3, s3, MPI_COMM_WORLD);

    /* 3. slabs along the last axis, ranks in reverse order */
    uint64_t o4[32] = {0}, s4[32];
    for (size_t d = 0; d < ndim; d++) s4[d] = global[d];
    int rr = size - 1 - rank;
    o4[ndim - 1] = global[ndim - 1] * (uint64_t)rr / (uint64_t)size;
    s4[ndim - 1] = global[ndim - 1] * (uint64_t)(rr + 1) / (uint64_t)size - o4[ndim - 1];
    read_and_check(path, "/data", dt, ndim, global, o4, s4, MPI_COMM_WORLD);

    /* 4. the whole array on every rank */
    uint64_t zero[32] = {0};
    read_and_check(path, "/data", dt, ndim, global, zero, global, MPI_COMM_WORLD);

    /* 5. this rank alone (not collective), its own tile */
    if (volume(ndim, shp) > 0)
        read_and_check(path, "/data", dt, ndim, global, off, shp, MPI_COMM_NULL);
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_SINGLE, &rank, &size);

    const uint64_t g2[2] = {37, 23};
    const uint64_t g3[3] = {9, 10, 11};
    const uint64_t g1[1] = {3};
    const h5tile_layout layouts[2] = {H5TILE_LAYOUT_VDS, H5TILE_LAYOUT_SINGLE};
    for (int l = 0; l < 2; l++) {
        roundtrip(scratch, "f64_2d", H5TILE_FLOAT64, 2, g2, layouts[l]);
        roundtrip(scratch, "i32_3d", H5TILE_INT32, 3, g3, layouts[l]);
        /* 3 elements over `size` ranks: with 4 ranks one tile is empty (NULL buffer). */
        roundtrip(scratch, "u64_1d", H5TILE_UINT64, 1, g1, layouts[l]);
    }

    uint64_t off[1], shp[1];
    EXPECT_OK(h5tile_partition((size_t)size, (size_t)rank, 1, g1, off, shp));
    int empty = shp[0] == 0, nempty = 0;
    MPI_Allreduce(&empty, &nempty, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(nempty == (size > 3 ? size - 3 : 0));

    /* h5tile_write_tiles with different tile counts per rank, on the 37x23 array: rank 0
     * passes the top rows as two tiles (column halves), the other ranks split the remaining
     * rows one slab each (some may pass none); alone, rank 0 passes the rest as a third. */
    for (int l = 0; l < 2; l++) {
        char path[4096], dir[4096];
        PATHF(path, "%s/tiles_mixed%s.h5", scratch, l ? "_single" : "");
        h5tile_write_options opts = h5tile_write_options_default();
        opts.layout = layouts[l];
        TILE_DIR(dir, path);
        uint64_t top = 37 / (uint64_t)(size + 1) + 1;
        uint64_t offs[6], shps[6];
        size_t ntiles = 0;
#define ADD_TILE(o0, o1, s0, s1) \
    (offs[2 * ntiles] = (o0), offs[2 * ntiles + 1] = (o1), shps[2 * ntiles] = (s0), \
     shps[2 * ntiles + 1] = (s1), ntiles++)
        if (rank == 0) {
            ADD_TILE(0, 0, top, 11);
            ADD_TILE(0, 11, top, 12);
            if (size == 1) ADD_TILE(top, 0, 37 - top, 23);
        } else {
            uint64_t lo = top + (37 - top) * (uint64_t)(rank - 1) / (uint64_t)(size - 1);
            uint64_t hi = top + (37 - top) * (uint64_t)rank / (uint64_t)(size - 1);
            if (hi > lo) ADD_TILE(lo, 0, hi - lo, 23);
        }
#undef ADD_TILE
        void *bufs[3] = {NULL, NULL, NULL};
        const void *cbufs[3] = {NULL, NULL, NULL};
        for (size_t t = 0; t < ntiles; t++) {
            bufs[t] = xmalloc((size_t)volume(2, shps + 2 * t) * 8);
            fill_tile(H5TILE_FLOAT64, 2, g2, offs + 2 * t, shps + 2 * t, bufs[t]);
            cbufs[t] = bufs[t];
        }
        EXPECT_OK(h5tile_write_tiles(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, g2,
                                     ntiles, offs, shps, cbufs, &opts));
        for (size_t t = 0; t < ntiles; t++) free(bufs[t]);
        uint64_t zero[2] = {0, 0};
        read_and_check(path, "/data", H5TILE_FLOAT64, 2, g2, zero, g2, MPI_COMM_WORLD);
        {
            const uint64_t o_mid[2] = {top - 1, 10}, s_mid[2] = {3, 3}; /* across three tiles */
            read_and_check(path, "/data", H5TILE_FLOAT64, 2, g2, o_mid, s_mid, MPI_COMM_WORLD);
        }
        int total = 0, mine = (int)ntiles;
        MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (layouts[l] == H5TILE_LAYOUT_SINGLE) total = -1; /* no folder */
        CHECK_MSG(count_files(dir) == total, "%s holds %d files, expected %d", dir,
                  count_files(dir), total);
    }

    /* The Fortran-handle entry points: the same calls through MPI_Comm_c2f(MPI_COMM_WORLD). */
    {
        char path[4096];
        PATHF(path, "%s/fortran_handle.h5", scratch);
        MPI_Fint fcomm = MPI_Comm_c2f(MPI_COMM_WORLD);
        uint64_t o2[2], s2[2];
        EXPECT_OK(h5tile_partition((size_t)size, (size_t)rank, 2, g2, o2, s2));
        double *b = (double *)xmalloc((size_t)volume(2, s2) * 8);
        fill_tile(H5TILE_FLOAT64, 2, g2, o2, s2, b);
        EXPECT_OK(h5tile_write_f(fcomm, path, "/data", H5TILE_FLOAT64, 2, g2, o2, s2, b, NULL));
        const void *cb[1] = {b};
        char path2[4096];
        PATHF(path2, "%s/fortran_handle_tiles.h5", scratch);
        EXPECT_OK(h5tile_write_tiles_f(fcomm, path2, "/data", H5TILE_FLOAT64, 2, g2, 1, o2, s2, cb,
                                       NULL));
        free(b);
        uint64_t o3[2], s3[2];
        EXPECT_OK(h5tile_partition((size_t)size, (size_t)(size - 1 - rank), 2, g2, o3, s3));
        double *r = (double *)xmalloc((size_t)volume(2, s3) * 8 + 8);
        EXPECT_OK(h5tile_read_f(fcomm, path, "/data", H5TILE_FLOAT64, 2, o3, s3, r, NULL));
        CHECK_TILE(H5TILE_FLOAT64, 2, g2, o3, s3, r);
        EXPECT_OK(h5tile_read_f(fcomm, path2, "/data", H5TILE_FLOAT64, 2, o3, s3, r, NULL));
        CHECK_TILE(H5TILE_FLOAT64, 2, g2, o3, s3, r);
        /* failures are agreed through the Fortran handle too */
        const uint64_t far[2] = {100, 0};
        EXPECT_STATUS(h5tile_read_f(fcomm, path, "/data", H5TILE_FLOAT64, 2, rank == size - 1 ? far : o3, s3, r, NULL),
                      H5TILE_ERR_SHAPE);
        free(r);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_roundtrip on %d ranks: OK\n", size);
    MPI_Finalize();
    return 0;
}
