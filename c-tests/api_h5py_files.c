/* Reads the files h5py_make_files.py wrote with h5py (contiguous, chunked + gzip, an h5py VDS
 * with relative sources, a Legate-style VDS with absolute sources, every element type as h5py
 * stores it), whole, by sub-tiles and chunk by chunk (h5tile_batches_*), and checks every
 * value against check.h's formulas; a VDS with a lost source is H5TILE_ERR_MISSING_TILE
 * naming it. The files are only read (the C
 * and C++ variants share them). */
#include "check.h"

static char dir[4096];

static void check_shape(const char *path, const char *dset, int dt, size_t ndim,
                        const uint64_t *shape) {
    h5tile_dtype got;
    size_t nd;
    uint64_t s[32];
    EXPECT_OK(h5tile_inspect(path, dset, &got, &nd, s));
    CHECK_MSG(got == dt, "%s %s: inspect says %s, h5py wrote %s", path, dset, dtype_name(got),
              dtype_name(dt));
    CHECK(nd == ndim);
    for (size_t d = 0; d < ndim; d++) CHECK(s[d] == shape[d]);
}

/* Reads `off`/`shp` of a 2-D dataset as `dt` and checks it against the formula. */
static void check_read(const char *path, const char *dset, int dt, const uint64_t *global,
                       const uint64_t *off, const uint64_t *shp) {
    size_t bytes = (size_t)volume(2, shp) * dtype_size(dt);
    void *buf = xmalloc(bytes);
    memset(buf, 0xCD, bytes);
    EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, dset, dt, 2, off, shp, buf, NULL));
    CHECK_TILE(dt, 2, global, off, shp, buf);
    free(buf);
}

/* Reads the whole 2-D dataset chunk by chunk (4x3 chunks, clipped) and checks every chunk. */
static void check_batched(const char *path, const char *dset, int dt, const uint64_t *global) {
    const uint64_t chunk[2] = {4, 3};
    h5tile_batches *it;
    EXPECT_OK(h5tile_batches_open(MPI_COMM_NULL, path, dset, 2, chunk, NULL, &it));
    h5tile_dtype stored;
    EXPECT_OK(h5tile_batches_info(it, &stored, NULL, NULL));
    CHECK_MSG(stored == dt, "%s:%s delivered as type %d, expected %d", path, dset, stored, dt);
    unsigned char buf[4 * 3 * 16];
    uint64_t off[2], shp[2], n = 0, elements = 0;
    bool done;
    for (;;) {
        EXPECT_OK(h5tile_batches_next(it, buf, sizeof buf, off, shp, &done));
        if (done) break;
        CHECK_TILE(dt, 2, global, off, shp, buf);
        elements += shp[0] * shp[1];
        n++;
    }
    h5tile_batches_free(it);
    CHECK(n == ((global[0] + 3) / 4) * ((global[1] + 2) / 3));
    CHECK(elements == global[0] * global[1]);
}

static void check_whole_and_part(const char *file, const char *dset, int dt,
                                 const uint64_t *global, const uint64_t *off,
                                 const uint64_t *shp) {
    char path[4096];
    PATHF(path, "%s/%s", dir, file);
    const uint64_t zero[2] = {0, 0};
    check_shape(path, dset, dt, 2, global);
    check_read(path, dset, dt, global, zero, global);
    check_read(path, dset, dt, global, off, shp);
    check_batched(path, dset, dt, global);
}

/* A VDS whose source `lost` is missing: a read needing it is MISSING_TILE naming it, the
 * rest reads fine, and with H5TILE_READ_FILL_MISSING the lost block reads 0. */
static void check_broken(const char *file, const char *dset, int dt, const uint64_t *global,
                         const char *lost, const uint64_t *lost_off, const uint64_t *lost_shp,
                         const uint64_t *ok_off, const uint64_t *ok_shp) {
    char path[4096];
    PATHF(path, "%s/%s", dir, file);
    const uint64_t zero[2] = {0, 0};
    size_t es = dtype_size(dt), n = (size_t)volume(2, global);
    unsigned char *buf = (unsigned char *)xmalloc(n * es);
    EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, dset, dt, 2, zero, global, buf, NULL),
                  H5TILE_ERR_MISSING_TILE);
    CHECK_MSG(strstr(h5tile_last_error(), lost) != NULL, "%s: the message does not name '%s': \"%s\"",
              file, lost, h5tile_last_error());
    EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, dset, dt, 2, lost_off, lost_shp, buf, NULL),
                  H5TILE_ERR_MISSING_TILE);
    check_read(path, dset, dt, global, ok_off, ok_shp);

    h5tile_read_options fill = h5tile_read_options_default();
    fill.flags = H5TILE_READ_FILL_MISSING;
    memset(buf, 0xCD, n * es);
    EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, dset, dt, 2, zero, global, buf, &fill));
    unsigned char want[16], zeros[16] = {0};
    for (uint64_t r = 0; r < global[0]; r++)
        for (uint64_t c = 0; c < global[1]; c++) {
            uint64_t i = r * global[1] + c;
            int lost_elem = r >= lost_off[0] && r < lost_off[0] + lost_shp[0] &&
                            c >= lost_off[1] && c < lost_off[1] + lost_shp[1];
            dtype_value(dt, i, want);
            CHECK_MSG(memcmp(buf + i * es, lost_elem ? zeros : want, es) == 0,
                      "%s with FILL_MISSING: element [%llu,%llu] wrong", file,
                      (unsigned long long)r, (unsigned long long)c);
        }
    free(buf);
}

int main(int argc, char **argv) {
    CHECK(realpath(scratch_arg(argc, argv), dir) != NULL);

    {
        const uint64_t g[2] = {13, 17}, o[2] = {3, 4}, s[2] = {5, 6};
        check_whole_and_part("contiguous.h5", "/data", H5TILE_FLOAT64, g, o, s);
    }
    {
        const uint64_t g[2] = {20, 30}, o[2] = {5, 6}, s[2] = {9, 11}; /* crosses chunks */
        check_whole_and_part("chunked.h5", "/grp/ints", H5TILE_INT32, g, o, s);
        /* and converted to int64 on the way */
        char path[4096];
        PATHF(path, "%s/chunked.h5", dir);
        int64_t w[9 * 11];
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/grp/ints", H5TILE_INT64, 2, o, s, w, NULL));
        for (uint64_t r = 0; r < 9; r++)
            for (uint64_t c = 0; c < 11; c++) {
                int32_t v;
                dtype_value(H5TILE_INT32, (o[0] + r) * 30 + o[1] + c, &v);
                CHECK(w[r * 11 + c] == (int64_t)v);
            }
    }
    {
        const uint64_t g[2] = {12, 10}, o[2] = {3, 2}, s[2] = {8, 5}; /* crosses all 3 sources */
        check_whole_and_part("vds_rel.h5", "/vds", H5TILE_FLOAT64, g, o, s);
        const uint64_t lo[2] = {5, 0}, ls[2] = {4, 10}, ok_o[2] = {9, 1}, ok_s[2] = {3, 9};
        check_broken("vds_rel_broken.h5", "/vds", H5TILE_FLOAT64, g, "part1.h5", lo, ls, ok_o, ok_s);
    }
    {
        const uint64_t g[2] = {10, 9}, o[2] = {4, 2}, s[2] = {4, 5}; /* crosses all 4 sources */
        check_whole_and_part("legate.h5", "/data", H5TILE_INT64, g, o, s);
        const uint64_t lo[2] = {6, 4}, ls[2] = {4, 5}, ok_o[2] = {0, 0}, ok_s[2] = {10, 4};
        check_broken("legate_broken.h5", "/data", H5TILE_INT64, g, "legate_broken_legate_vds/3.h5",
                     lo, ls, ok_o, ok_s);
    }
    for (int dt = 0; dt < NDTYPES; dt++) {
        char dset[64];
        PATHF(dset, "/%s", dtype_name(dt));
        const uint64_t g[2] = {5, 7}, o[2] = {1, 2}, s[2] = {3, 4};
        check_whole_and_part("dtypes.h5", dset, dt, g, o, s);
    }

    /* relative sources resolve from the master's folder, not the working directory */
    CHECK(chdir("/") == 0);
    {
        const uint64_t g[2] = {12, 10}, o[2] = {3, 2}, s[2] = {8, 5};
        check_whole_and_part("vds_rel.h5", "/vds", H5TILE_FLOAT64, g, o, s);
    }

    printf("api_h5py_files: OK\n");
    return 0;
}
