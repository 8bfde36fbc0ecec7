/* File names: a master file (and so its tile folder) may be named with spaces, non-ASCII
 * bytes, a leading dash, several dots, or '%' in any combination ("%b", "%d", "%%", a trailing
 * '%': HDF5 reads '%' in virtual-dataset source names as a pattern, so these must still
 * round-trip exactly, never as HDF5 errors nor as silently missing data), in both layouts. */
#include "check.h"

static const uint64_t G[2] = {3, 4};
static const uint64_t OFFS[4] = {0, 0, 1, 0}, SHPS[4] = {1, 4, 2, 4};

static void roundtrip(const char *scratch, const char *name, h5tile_layout layout) {
    char folder[4096], path[4096];
    PATHF(folder, "%s/%s", scratch, layout == H5TILE_LAYOUT_VDS ? "vds" : "single");
    mkdir_p(folder);
    PATHF(path, "%s/%s", folder, name);
    CHECK_CONTEXT("%s layout, master file '%s'", layout == H5TILE_LAYOUT_VDS ? "VDS" : "single",
                  path);
    h5tile_write_options o = h5tile_write_options_default();
    o.layout = layout;
    double b0[4], b1[8], all[12];
    fill_tile(H5TILE_FLOAT64, 2, G, OFFS, SHPS, b0);
    fill_tile(H5TILE_FLOAT64, 2, G, OFFS + 2, SHPS + 2, b1);
    const void *bufs[2] = {b0, b1};
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, G, 2, OFFS, SHPS,
                                 bufs, &o));
    CHECK_MSG(is_regular_file(path), "'%s' was not written", path);
    const uint64_t zero[2] = {0, 0};
    memset(all, 0, sizeof all);
    EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, zero, G, all, NULL));
    CHECK_TILE(H5TILE_FLOAT64, 2, G, zero, G, all);
    /* overwrite it (a second generation), read again */
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, G, 2, OFFS, SHPS,
                                 bufs, &o));
    memset(all, 0, sizeof all);
    EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, zero, G, all, NULL));
    CHECK_TILE(H5TILE_FLOAT64, 2, G, zero, G, all);
    if (layout == H5TILE_LAYOUT_VDS) {
        char dir[4096];
        TILE_DIR(dir, path);
        CHECK_MSG(count_files(dir) == 2, "'%s' holds %d files", dir, count_files(dir));
        /* a lost tile is still detected, whatever the name */
        int n;
        char **names = list_dir(dir, &n);
        char victim[4096];
        PATHF(victim, "%s/%s", dir, names[0]);
        free_names(names, n);
        CHECK(unlink(victim) == 0);
        EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, zero, G, all, NULL),
                      H5TILE_ERR_MISSING_TILE);
    }
}

int main(int argc, char **argv) {
    const char *scratch = scratch_arg(argc, argv);
    fresh_dir(scratch);
    static const char *const names[] = {
        "plain.h5", "with space.h5", "-dash.h5", "many.dots.in.name.h5", "\xc3\xbcn\xc3\xaf.h5",
        "no_extension", "x%%y.h5", "a%b.h5", "run%d.h5", "100%.h5", "%.h5",
    };
    const int count = (int)(sizeof names / sizeof names[0]);
    for (int k = 0; k < count; k++) roundtrip(scratch, names[k], H5TILE_LAYOUT_SINGLE);
    for (int k = 0; k < count; k++) roundtrip(scratch, names[k], H5TILE_LAYOUT_VDS);
    printf("api_file_names: OK\n");
    return 0;
}
