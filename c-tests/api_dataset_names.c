/* Dataset names: names with spaces, '%' (a pattern character in HDF5 virtual-dataset source
 * names), dots, '+', non-ASCII bytes, and nested groups round-trip, each with its tile files
 * as plain file names inside <path>.tiles/; the leading '/' is optional on reading. Names of
 * groups, the root group "/" among them, are H5TILE_ERR_NOT_A_DATASET (h5tile.h: "`dataset`
 * names a group or another object that is not a dataset"). */
#include "check.h"

static const uint64_t G[2] = {4, 5};
static const uint64_t OFFS[4] = {0, 0, 2, 0}, SHPS[4] = {2, 5, 2, 5};

static void roundtrip(const char *scratch, int k, const char *dset) {
    char path[4096], dir[4096];
    PATHF(path, "%s/names%d.h5", scratch, k);
    TILE_DIR(dir, path);
    CHECK_CONTEXT("dataset '%s' in '%s'", dset, path);
    int32_t b0[10], b1[10], all[20];
    fill_tile(H5TILE_INT32, 2, G, OFFS, SHPS, b0);
    fill_tile(H5TILE_INT32, 2, G, OFFS + 2, SHPS + 2, b1);
    const void *bufs[2] = {b0, b1};
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, path, dset, H5TILE_INT32, 2, G, 2, OFFS, SHPS,
                                 bufs, vds_layout()));
    /* two tile files, plain names directly in the folder */
    int n;
    char **names = list_dir(dir, &n);
    CHECK_MSG(n == 2, "dataset '%s': %s holds %d entries", dset, dir, n);
    for (int i = 0; i < n; i++) {
        char p[4096];
        PATHF(p, "%s/%s", dir, names[i]);
        CHECK_MSG(is_regular_file(p), "dataset '%s': '%s' is not a regular file", dset, p);
    }
    free_names(names, n);

    h5tile_dtype dt;
    size_t nd;
    uint64_t shape[32];
    EXPECT_OK(h5tile_inspect(path, dset, &dt, &nd, shape));
    CHECK(dt == H5TILE_INT32 && nd == 2 && shape[0] == 4 && shape[1] == 5);
    const uint64_t zero[2] = {0, 0};
    memset(all, 0, sizeof all);
    EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, dset, H5TILE_INT32, 2, zero, G, all, NULL));
    CHECK_TILE(H5TILE_INT32, 2, G, zero, G, all);
    if (dset[0] == '/') { /* the same without the leading slash */
        memset(all, 0, sizeof all);
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, dset + 1, H5TILE_INT32, 2, zero, G, all, NULL));
        CHECK_TILE(H5TILE_INT32, 2, G, zero, G, all);
    }
}

int main(int argc, char **argv) {
    const char *scratch = scratch_arg(argc, argv);
    fresh_dir(scratch);
    static const char *const names[] = {
        "/data", "/with space", "/per%cent", "/100%d", "/dots.in.name", "/a+b",
        "/grp/sub.x", "/\xc3\xbcn\xc3\xaf", "/deep/er/and/deeper", "no_leading_slash",
    };
    const int count = (int)(sizeof names / sizeof names[0]);
    for (int k = 0; k < count; k++) roundtrip(scratch, k, names[k]);

    /* groups are not datasets: "/deep/er" in names8.h5, and the root group "/" */
    CHECK_CONTEXT("reading groups as datasets");
    char path[4096];
    PATHF(path, "%s/names8.h5", scratch);
    int32_t buf[20];
    const uint64_t zero[2] = {0, 0};
    h5tile_dtype dt;
    size_t nd;
    uint64_t shape[32];
    EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/deep/er", H5TILE_INT32, 2, zero, G, buf, NULL),
                  H5TILE_ERR_NOT_A_DATASET);
    EXPECT_STATUS(h5tile_inspect(path, "/deep/er", &dt, &nd, shape), H5TILE_ERR_NOT_A_DATASET);
    EXPECT_STATUS(h5tile_inspect(path, "/", &dt, &nd, shape), H5TILE_ERR_NOT_A_DATASET);
    EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/", H5TILE_INT32, 2, zero, G, buf, NULL),
                  H5TILE_ERR_NOT_A_DATASET);

    printf("api_dataset_names: OK\n");
    return 0;
}
