/* One process (MPI_COMM_NULL, no MPI_Init): every element type written as several uneven tiles
 * plus an empty one, read back whole and by sub-tiles; h5tile_inspect; type conversion on
 * read; h5tile_version; h5tile_status_name; h5tile_partition; datasets inside groups; the
 * single-file layout for every element type. */
#include "check.h"

#define NR 5
#define NC 7

static const uint64_t GLOBAL[2] = {NR, NC};

/* Tiles of the 5x7 array, in the order passed: an empty one (zero extent, NULL buffer) sits
 * between the real ones, so the real ones are tiles 0, 2 and 3 of this rank. */
#define NTILES 4
static const uint64_t OFFSETS[NTILES * 2] = {0, 0, /**/ 1, 2, /**/ 2, 0, /**/ 2, 3};
static const uint64_t SHAPES[NTILES * 2] = {2, 7, /**/ 0, 3, /**/ 3, 3, /**/ 3, 4};

/* Checks every name in `dir` is "<key>.<16 hex>.r0.t<k>.h5" with k in {0, 2, 3}, one each,
 * all of the same generation. */
static void check_tile_names(const char *dir, const char *key) {
    int n;
    char **names = list_dir(dir, &n);
    CHECK_MSG(n == 3, "'%s' holds %d files, expected 3 (one per non-empty tile)", dir, n);
    char generation[17] = "";
    int seen[NTILES] = {0};
    for (int i = 0; i < n; i++) {
        const char *s = names[i];
        size_t kl = strlen(key);
        CHECK_MSG(strncmp(s, key, kl) == 0 && s[kl] == '.', "tile file '%s' does not start with '%s.'", s, key);
        const char *g = s + kl + 1;
        for (int j = 0; j < 16; j++)
            CHECK_MSG(strchr("0123456789abcdef", g[j]) != NULL && g[j] != '\0',
                      "tile file '%s': no 16-hex-digit generation", s);
        if (generation[0] == '\0') memcpy(generation, g, 16);
        CHECK_MSG(memcmp(generation, g, 16) == 0, "tile files of one write have different generations (%s)", s);
        int k = -1;
        char tail[64];
        CHECK_MSG(sscanf(g + 16, ".r0.t%d%63s", &k, tail) == 2 && strcmp(tail, ".h5") == 0,
                  "tile file '%s' does not end in .r0.t<k>.h5", s);
        CHECK_MSG(k == 0 || k == 2 || k == 3, "tile file '%s' names tile %d (the empty tile is 1)", s, k);
        CHECK_MSG(!seen[k], "two files for tile %d", k);
        seen[k] = 1;
    }
    free_names(names, n);
}

/* Fills `buf` with the formula of the whole NR x NC array of `dt` and writes it, as one tile
 * with the default options, as `dataset` of `path`. */
static void write_whole(const char *path, const char *dataset, int dt, void *buf) {
    const uint64_t zero[2] = {0, 0};
    fill_tile(dt, 2, GLOBAL, zero, GLOBAL, buf);
    EXPECT_OK(h5tile_write(MPI_COMM_NULL, path, dataset, dt, 2, GLOBAL, zero, GLOBAL, buf, NULL));
}

/* Checks that `path` holds /data, the 5x7 array of `dt` (h5tile_inspect), and reads it back as
 * `dt`: whole, then sub-tiles crossing tile borders, single elements, a column; each read into
 * a buffer of 0xA5 bytes and checked against the formula. */
static void check_data(const char *path, int dt) {
    h5tile_dtype got_dt = -1;
    size_t got_ndim = 0;
    uint64_t got_shape[32] = {0};
    EXPECT_OK(h5tile_inspect(path, "/data", &got_dt, &got_ndim, got_shape));
    CHECK_MSG(got_dt == dt, "inspect of %s gave dtype %d", dtype_name(dt), got_dt);
    CHECK(got_ndim == 2 && got_shape[0] == NR && got_shape[1] == NC);

    static const uint64_t reads[][4] = {
        {0, 0, NR, NC}, {1, 2, 3, 4}, {4, 6, 1, 1}, {0, 0, 1, 1}, {0, 3, NR, 1},
        {2, 0, 3, 3},   {1, 0, 2, 7}, {0, 5, 5, 2},
    };
    size_t es = dtype_size(dt);
    for (size_t r = 0; r < sizeof reads / sizeof reads[0]; r++) {
        const uint64_t *off = reads[r], *shp = reads[r] + 2;
        size_t bytes = (size_t)volume(2, shp) * es;
        unsigned char *buf = (unsigned char *)xmalloc(bytes);
        memset(buf, 0xA5, bytes);
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/data", dt, 2, off, shp, buf, NULL));
        CHECK_TILE(dt, 2, GLOBAL, off, shp, buf);
        free(buf);
    }
}

static void roundtrip_dtype(const char *scratch, int dt) {
    char path[4096], dir[4096];
    PATHF(path, "%s/%s.h5", scratch, dtype_name(dt));
    TILE_DIR(dir, path);
    size_t es = dtype_size(dt);

    void *bufs[NTILES];
    const void *cbufs[NTILES];
    for (int t = 0; t < NTILES; t++) {
        uint64_t n = volume(2, SHAPES + 2 * t);
        bufs[t] = n ? xmalloc(n * es) : NULL;
        if (n) fill_tile(dt, 2, GLOBAL, OFFSETS + 2 * t, SHAPES + 2 * t, bufs[t]);
        cbufs[t] = bufs[t];
    }
    CHECK(cbufs[1] == NULL);
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, path, "/data", dt, 2, GLOBAL, NTILES, OFFSETS,
                                 SHAPES, cbufs, vds_layout()));
    CHECK(is_regular_file(path));
    check_tile_names(dir, "data");
    check_data(path, dt);

    /* A zero-extent read is "no data": succeeds and writes nothing. */
    {
        const uint64_t off[2] = {1, 1}, shp[2] = {0, 3};
        unsigned char sentinel[16];
        memset(sentinel, 0x5A, sizeof sentinel);
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/data", dt, 2, off, shp, sentinel, NULL));
        for (size_t b = 0; b < sizeof sentinel; b++) CHECK(sentinel[b] == 0x5A);
    }

    /* Rewrite with one h5tile_write (single tile): the folder then holds exactly one file. */
    {
        const uint64_t off[2] = {0, 0};
        void *whole = xmalloc(NR * NC * es);
        write_whole(path, "/data", dt, whole);
        CHECK_MSG(count_files(dir) == 1, "after a one-tile rewrite '%s' holds %d files", dir,
                  count_files(dir));
        memset(whole, 0, NR * NC * es);
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/data", dt, 2, off, GLOBAL, whole, NULL));
        CHECK_TILE(dt, 2, GLOBAL, off, GLOBAL, whole);
        free(whole);
    }
    /* The single-file layout, from the same tiles: one file, no tile folder, same values. */
    {
        char single[4096], single_dir[4096];
        PATHF(single, "%s/%s_single.h5", scratch, dtype_name(dt));
        TILE_DIR(single_dir, single);
        h5tile_write_options so = h5tile_write_options_default();
        so.layout = H5TILE_LAYOUT_SINGLE;
        EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, single, "/data", dt, 2, GLOBAL, NTILES,
                                     OFFSETS, SHAPES, cbufs, &so));
        CHECK(is_regular_file(single) && !path_exists(single_dir));
        check_data(single, dt);
    }
    for (int t = 0; t < NTILES; t++) free(bufs[t]);
}

/* Reads need not use the stored type: HDF5 converts. */
static void conversions(const char *scratch) {
    char path[4096];
    const uint64_t zero[2] = {0, 0};

    /* int32 file -> float64 */
    {
        PATHF(path, "%s/conv_int32.h5", scratch);
        int32_t v[NR * NC];
        write_whole(path, "/x", H5TILE_INT32, v);
        double d[NR * NC];
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/x", H5TILE_FLOAT64, 2, zero, GLOBAL, d,
                              NULL));
        for (int i = 0; i < NR * NC; i++)
            CHECK_MSG(d[i] == (double)v[i], "int32->float64 [%d]: %g != %d", i, d[i], (int)v[i]);
    }
    /* float16 file -> float32, exact values */
    {
        PATHF(path, "%s/conv_float16.h5", scratch);
        static const float want[6] = {1.5f, -2.0f, 0.25f, 0.0f, 65504.0f, -0.5f};
        uint16_t h[6];
        for (int i = 0; i < 6; i++) h[i] = half_from_float(want[i]);
        CHECK(h[0] == 0x3E00 && h[1] == 0xC000 && h[2] == 0x3400); /* the formula is IEEE half */
        const uint64_t n[1] = {6}, o[1] = {0};
        EXPECT_OK(h5tile_write(MPI_COMM_NULL, path, "/h", H5TILE_FLOAT16, 1, n, o, n, h, NULL));
        float f[6] = {9, 9, 9, 9, 9, 9};
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/h", H5TILE_FLOAT32, 1, o, n, f, NULL));
        for (int i = 0; i < 6; i++)
            CHECK_MSG(f[i] == want[i], "float16->float32 [%d]: %g != %g", i, (double)f[i],
                      (double)want[i]);
        double d[6];
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/h", H5TILE_FLOAT64, 1, o, n, d, NULL));
        for (int i = 0; i < 6; i++) CHECK(d[i] == (double)want[i]);
    }
    /* uint8 file -> int64 */
    {
        PATHF(path, "%s/conv_uint8.h5", scratch);
        uint8_t v[NR * NC];
        write_whole(path, "/u", H5TILE_UINT8, v);
        int64_t w[NR * NC];
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/u", H5TILE_INT64, 2, zero, GLOBAL, w, NULL));
        for (int i = 0; i < NR * NC; i++) CHECK(w[i] == (int64_t)v[i]);
        int found_high = 0;
        for (int i = 0; i < NR * NC; i++) found_high |= v[i] >= 128;
        CHECK(found_high); /* values above 127 prove no sign mix-up */
    }
    /* float32 file -> int8 narrows: refused unless asked for, with the buffer untouched */
    {
        PATHF(path, "%s/conv_narrow.h5", scratch);
        const float v[4] = {182461.0f, -3.75f, 100.0f, -1e9f};
        const uint64_t n[1] = {4}, o[1] = {0};
        EXPECT_OK(h5tile_write(MPI_COMM_NULL, path, "/f", H5TILE_FLOAT32, 1, n, o, n, v, NULL));
        int8_t b[4] = {7, 7, 7, 7};
        EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/f", H5TILE_INT8, 1, o, n, b, NULL),
                      H5TILE_ERR_DTYPE);
        CHECK_MSG(strstr(h5tile_last_error(), "holds float32, as int8 can lose values") != NULL &&
                      strstr(h5tile_last_error(), "H5TILE_READ_NARROWING") != NULL,
                  "%s", h5tile_last_error());
        for (int i = 0; i < 4; i++) CHECK(b[i] == 7);
        /* the same for float64 -> float32 and int64 -> int32, and for batches */
        float f[4];
        double d[4];
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/f", H5TILE_FLOAT64, 1, o, n, d, NULL));
        h5tile_write_options keep = h5tile_write_options_default();
        keep.flags = H5TILE_KEEP_OTHERS;
        EXPECT_OK(h5tile_write(MPI_COMM_NULL, path, "/d", H5TILE_FLOAT64, 1, n, o, n, d, &keep));
        EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/d", H5TILE_FLOAT32, 1, o, n, f, NULL),
                      H5TILE_ERR_DTYPE);
        h5tile_read_options ro = h5tile_read_options_default();
        ro.dtype = H5TILE_UINT32;
        h5tile_batches *it = NULL;
        EXPECT_STATUS(h5tile_batches_open(MPI_COMM_NULL, path, "/f", 1, n, &ro, &it), H5TILE_ERR_DTYPE);
        CHECK(it == NULL);
        /* with the flag, HDF5 converts as it does (saturating) */
        ro = h5tile_read_options_default();
        ro.flags = H5TILE_READ_NARROWING;
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/f", H5TILE_INT8, 1, o, n, b, &ro));
        CHECK_MSG(b[0] == 127 && b[1] == -3 && b[2] == 100 && b[3] == -128, "%d %d %d %d", b[0], b[1],
                  b[2], b[3]);
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/d", H5TILE_FLOAT32, 1, o, n, f, &ro));
        for (int i = 0; i < 4; i++) CHECK(f[i] == v[i]);
        ro.dtype = H5TILE_UINT32;
        EXPECT_OK(h5tile_batches_open(MPI_COMM_NULL, path, "/f", 1, n, &ro, &it));
        h5tile_batches_free(it);
    }
    /* complex64 file -> complex128 */
    {
        PATHF(path, "%s/conv_complex64.h5", scratch);
        float v[NR * NC][2];
        write_whole(path, "/z", H5TILE_COMPLEX64, v);
        double w[NR * NC][2];
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/z", H5TILE_COMPLEX128, 2, zero, GLOBAL, w,
                              NULL));
        for (int i = 0; i < NR * NC; i++)
            CHECK_MSG(w[i][0] == (double)v[i][0] && w[i][1] == (double)v[i][1],
                      "complex64->complex128 [%d]: (%g,%g) != (%g,%g)", i, w[i][0], w[i][1],
                      (double)v[i][0], (double)v[i][1]);
    }
}

static void version_and_names(void) {
    char want[64];
    PATHF(want, "%d.%d.%d", H5TILE_VERSION_MAJOR, H5TILE_VERSION_MINOR,
             H5TILE_VERSION_PATCH);
    const char *v = h5tile_version();
    CHECK(v != NULL);
    CHECK_MSG(strcmp(v, want) == 0, "h5tile_version() is \"%s\", the macros say \"%s\"", v, want);

    CHECK(strcmp(h5tile_status_name(H5TILE_OK), "H5TILE_OK") == 0);
    CHECK(strcmp(h5tile_status_name(H5TILE_ERR_SHAPE), "H5TILE_ERR_SHAPE") == 0);
    CHECK(strcmp(h5tile_status_name(H5TILE_ERR_MISSING_TILE), "H5TILE_ERR_MISSING_TILE") == 0);
    CHECK(strcmp(h5tile_status_name(H5TILE_ERR_PANIC), "H5TILE_ERR_PANIC") == 0);
    CHECK(strcmp(h5tile_status_name(42), "unknown status") == 0);
    CHECK(strcmp(h5tile_status_name(-1), "unknown status") == 0);

    h5tile_write_options w = h5tile_write_options_default();
    CHECK(w.layout == H5TILE_LAYOUT_AUTO && w.flags == 0);
    h5tile_read_options r = h5tile_read_options_default();
    CHECK(r.flags == 0);
}

/* Every rank's tile lies inside the shape, the tiles cover every element exactly once, and
 * along each axis the extents of non-empty tiles differ by at most one. */
static void check_partition(size_t ndim, const uint64_t *shape, size_t nranks) {
    uint64_t total = volume(ndim, shape);
    unsigned *count = (unsigned *)calloc((size_t)total, sizeof(unsigned));
    CHECK(count != NULL);
    uint64_t minext[32], maxext[32];
    for (size_t d = 0; d < ndim; d++) minext[d] = UINT64_MAX, maxext[d] = 0;
    uint64_t sum = 0;
    for (size_t r = 0; r < nranks; r++) {
        uint64_t off[32], shp[32];
        EXPECT_OK(h5tile_partition(nranks, r, ndim, shape, off, shp));
        uint64_t v = volume(ndim, shp);
        sum += v;
        for (size_t d = 0; d < ndim; d++)
            CHECK_MSG(v == 0 || off[d] + shp[d] <= shape[d],
                      "partition(%zu, %zu): tile outside the shape on axis %zu", nranks, r, d);
        if (v == 0) continue;
        for (size_t d = 0; d < ndim; d++) {
            if (shp[d] < minext[d]) minext[d] = shp[d];
            if (shp[d] > maxext[d]) maxext[d] = shp[d];
        }
        uint64_t idx[32] = {0};
        for (uint64_t k = 0; k < v; k++) {
            count[global_index(ndim, shape, off, idx)]++;
            next_index(ndim, shp, idx);
        }
    }
    CHECK_MSG(sum == total, "partition over %zu ranks: tiles hold %llu elements, shape has %llu",
              nranks, (unsigned long long)sum, (unsigned long long)total);
    for (uint64_t g = 0; g < total; g++)
        CHECK_MSG(count[g] == 1, "partition over %zu ranks covers element %llu %u times", nranks,
                  (unsigned long long)g, count[g]);
    for (size_t d = 0; d < ndim; d++)
        CHECK_MSG(maxext[d] - minext[d] <= 1,
                  "partition over %zu ranks: extents on axis %zu range %llu..%llu", nranks, d,
                  (unsigned long long)minext[d], (unsigned long long)maxext[d]);
    free(count);
}

static void partitions(void) {
    const uint64_t s2[2] = {37, 23}, s1[1] = {5}, s3[3] = {4, 4, 4}, s4[2] = {10, 1},
                   s5[2] = {1, 1}, s6[4] = {3, 5, 2, 7};
    for (size_t n = 1; n <= 8; n++) check_partition(2, s2, n);
    for (size_t n = 1; n <= 8; n++) check_partition(1, s1, n);
    for (size_t n = 1; n <= 9; n++) check_partition(3, s3, n);
    check_partition(2, s4, 3);
    check_partition(2, s5, 4);
    check_partition(4, s6, 6);

    /* 5 elements over 8 ranks: three ranks get an empty tile. */
    int empty = 0;
    for (size_t r = 0; r < 8; r++) {
        uint64_t off[1], shp[1];
        EXPECT_OK(h5tile_partition(8, r, 1, s1, off, shp));
        empty += shp[0] == 0;
    }
    CHECK(empty == 3);

    uint64_t off[2], shp[2];
    EXPECT_STATUS(h5tile_partition(4, 4, 2, s2, off, shp), H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(h5tile_partition(4, 17, 2, s2, off, shp), H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(h5tile_partition(0, 0, 2, s2, off, shp), H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(h5tile_partition(4, 0, 2, NULL, off, shp), H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(h5tile_partition(4, 0, 2, s2, NULL, shp), H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(h5tile_partition(4, 0, 0, s2, off, shp), H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_OK(h5tile_partition(4, 3, 2, s2, off, shp));
}

/* Missing groups on the way to the dataset are created. */
static void nested_groups(const char *scratch) {
    char path[4096], dir[4096];
    PATHF(path, "%s/deeper/still/groups.h5", scratch); /* parents created too */
    TILE_DIR(dir, path);
    const uint64_t off[2] = {0, 0};
    double v[NR * NC];
    write_whole(path, "/a/b/c", H5TILE_FLOAT64, v);
    CHECK_INSPECT_2D(path, "/a/b/c", H5TILE_FLOAT64, NR, NC);
    double w[NR * NC];
    CHECK_READ_2D(path, "/a/b/c", H5TILE_FLOAT64, GLOBAL, off, GLOBAL, w, sizeof w);
    /* the same dataset named without the leading slash */
    CHECK_READ_2D(path, "a/b/c", H5TILE_FLOAT64, GLOBAL, off, GLOBAL, w, sizeof w);
    /* the intermediate groups are groups */
    EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/a/b", H5TILE_FLOAT64, 2, off, GLOBAL, w, NULL),
                  H5TILE_ERR_NOT_A_DATASET);
    CHECK(count_files(dir) == 1);
}

int main(int argc, char **argv) {
    const char *scratch = scratch_arg(argc, argv);
    fresh_dir(scratch);
    version_and_names();
    for (int dt = 0; dt < NDTYPES; dt++) roundtrip_dtype(scratch, dt);
    conversions(scratch);
    partitions();
    nested_groups(scratch);
    int init = 1;
    MPI_Initialized(&init);
    CHECK(!init); /* h5tile never initialises MPI */
    printf("api_roundtrip: OK\n");
    return 0;
}
