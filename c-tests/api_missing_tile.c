/* A lost tile file: reading any part that needs it is H5TILE_ERR_MISSING_TILE naming the file
 * (plain HDF5 would silently return fill values); parts that only need intact files read
 * fine; with H5TILE_READ_FILL_MISSING the whole read succeeds and the lost part reads 0. */
#include "check.h"

static const uint64_t G[2] = {6, 10};
/* three tiles: rows 0-1, rows 2-3, rows 4-5 (tile 1 is the one deleted) */
static const uint64_t OFFS[6] = {0, 0, 2, 0, 4, 0};
static const uint64_t SHPS[6] = {2, 10, 2, 10, 2, 10};

/* The file of tile `tile` in `dir`, which must hold `count` files: the one whose name ends in
 * ".t<tile>.h5", its path into `path` and its name into `name`. */
static void tile_file(const char *dir, int count, int tile, char path[4096], char name[1024]) {
    char ending[32];
    snprintf(ending, sizeof ending, ".t%d.h5", tile);
    size_t el = strlen(ending);
    int n;
    char **names = list_dir(dir, &n);
    CHECK_MSG(n == count, "%s holds %d files, expected %d", dir, n, count);
    path[0] = name[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (len > el && strcmp(names[i] + len - el, ending) == 0) {
            check_pathf(__FILE__, __LINE__, path, 4096, "%s/%s", dir, names[i]);
            check_pathf(__FILE__, __LINE__, name, 1024, "%s", names[i]);
        }
    }
    free_names(names, n);
    CHECK_MSG(path[0] != '\0', "no file of tile %d in %s", tile, dir);
}

int main(int argc, char **argv) {
    const char *scratch = scratch_arg(argc, argv);
    fresh_dir(scratch);
    char path[4096], dir[4096];
    PATHF(path, "%s/data.h5", scratch);
    TILE_DIR(dir, path);

    float vals[60];
    void *bufs[3];
    const void *cbufs[3];
    for (int t = 0; t < 3; t++) {
        bufs[t] = xmalloc(20 * sizeof(float));
        fill_tile(H5TILE_FLOAT32, 2, G, OFFS + 2 * t, SHPS + 2 * t, bufs[t]);
        cbufs[t] = bufs[t];
    }
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT32, 2, G, 3, OFFS, SHPS,
                                 cbufs, vds_layout()));
    for (int t = 0; t < 3; t++) free(bufs[t]);

    /* find and delete the file of tile 1 (rows 2-3): its name ends in ".t1.h5" */
    char victim[4096], victim_name[1024];
    tile_file(dir, 3, 1, victim, victim_name);
    CHECK(unlink(victim) == 0);

    const uint64_t zero[2] = {0, 0};
    memset(vals, 0, sizeof vals);
    EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT32, 2, zero, G, vals, NULL),
                  H5TILE_ERR_MISSING_TILE);
    CHECK_MSG(strstr(h5tile_last_error(), victim_name) != NULL,
              "the message does not name the lost file '%s': \"%s\"", victim_name,
              h5tile_last_error());
    /* a read touching the lost tile by one element fails too; the defaults (NULL) agree */
    {
        const uint64_t off[2] = {3, 9}, shp[2] = {1, 1};
        EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT32, 2, off, shp, vals, NULL),
                      H5TILE_ERR_MISSING_TILE);
        CHECK(strstr(h5tile_last_error(), victim_name) != NULL);
        h5tile_read_options d = h5tile_read_options_default();
        const uint64_t off2[2] = {1, 0}, shp2[2] = {2, 10}; /* rows 1-2 */
        EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT32, 2, off2, shp2, vals, &d),
                      H5TILE_ERR_MISSING_TILE);
    }
    /* parts needing only the intact files read fine */
    {
        const uint64_t off[2] = {0, 0}, shp[2] = {2, 10};
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT32, 2, off, shp, vals, NULL));
        CHECK_TILE(H5TILE_FLOAT32, 2, G, off, shp, vals);
        const uint64_t off2[2] = {4, 3}, shp2[2] = {2, 7};
        CHECK_READ_2D(path, "/data", H5TILE_FLOAT32, G, off2, shp2, vals, sizeof vals);
        CHECK_INSPECT_2D(path, "/data", H5TILE_FLOAT32, 6, 10);
    }
    /* H5TILE_READ_FILL_MISSING: the whole read succeeds, the lost rows read 0 */
    {
        h5tile_read_options fill = h5tile_read_options_default();
        fill.flags = H5TILE_READ_FILL_MISSING;
        for (int i = 0; i < 60; i++) vals[i] = -99.0f;
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT32, 2, zero, G, vals, &fill));
        for (uint64_t i = 0; i < 60; i++) {
            float want;
            dtype_value(H5TILE_FLOAT32, i, &want);
            if (i >= 20 && i < 40) want = 0.0f;
            CHECK_MSG(vals[i] == want, "fill-missing read: element %llu is %g, expected %g",
                      (unsigned long long)i, (double)vals[i], (double)want);
        }
    }
    /* the library did not recreate or touch anything */
    CHECK(count_files(dir) == 2);
    CHECK(!path_exists(victim));

    /* a tile file replaced by garbage is "unreadable": also MISSING_TILE, naming it */
    {
        char broken[4096], broken_name[1024];
        tile_file(dir, 2, 0, broken, broken_name);
        write_text_file(broken, "not an HDF5 file any more\n");
        const uint64_t off[2] = {0, 0}, shp[2] = {2, 10}; /* tile 0 only */
        EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT32, 2, off, shp, vals, NULL),
                      H5TILE_ERR_MISSING_TILE);
        CHECK_MSG(strstr(h5tile_last_error(), broken_name) != NULL,
                  "the message does not name the broken file '%s': \"%s\"", broken_name,
                  h5tile_last_error());
        /* tile 2 is still fine */
        const uint64_t off2[2] = {4, 0};
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT32, 2, off2, shp, vals, NULL));
        CHECK_TILE(H5TILE_FLOAT32, 2, G, off2, shp, vals);
    }

    printf("api_missing_tile: OK\n");
    return 0;
}
