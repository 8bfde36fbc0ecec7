/* Several fields in one checkpoint file (H5TILE_KEEP_OTHERS), on a file h5py made with
 * attributes, a group, a soft link and a dataset of its own (h5py_keep_others.py makes it,
 * runs this program on it, then checks that all of it survived beside the fields):
 *   - /fields/u (virtual dataset, two tiles) and /fields/v (single-file layout) added, then
 *     /fields/u replaced by a second version;
 *   - /fields/w and /fields/x written in the background at once (no wait between them) and
 *     completed by h5tile_fence: writes to one file run in turn, each keeping the other;
 *   - refusals that leave the file as it was: a group where the dataset should go
 *     (H5TILE_ERR_NOT_A_DATASET), a dataset on the dataset's path (H5TILE_ERR_INVALID_ARGUMENT).
 *
 *   api_keep_others FILE */
#include "check.h"

static h5tile_write_options keep(int layout) {
    h5tile_write_options o = h5tile_write_options_default();
    o.layout = layout;
    o.flags = H5TILE_KEEP_OTHERS;
    return o;
}

int main(int argc, char **argv) {
    CHECK_MSG(argc == 2, "usage: api_keep_others FILE");
    const char *path = argv[1];
    const uint64_t gu[2] = {6, 5}, gv[2] = {4, 3}, gw[1] = {10}, zero[2] = {0, 0};
    const uint64_t top[2] = {0, 0}, bottom[2] = {3, 0}, half[2] = {3, 5};
    double u[30], w[10], x[10], back[30];
    int32_t v[12], vback[12];
    for (int i = 0; i < 30; i++) u[i] = 1000 + i;
    for (int i = 0; i < 12; i++) v[i] = 3 * i;
    for (int i = 0; i < 10; i++) w[i] = -i, x[i] = 0.5 * i;

    h5tile_write_options vds = keep(H5TILE_LAYOUT_VDS), single = keep(H5TILE_LAYOUT_SINGLE);
    const uint64_t offs[4] = {top[0], top[1], bottom[0], bottom[1]};
    const uint64_t shps[4] = {half[0], half[1], half[0], half[1]};
    const void *halves[2] = {u, u + 15};
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, path, "/fields/u", H5TILE_FLOAT64, 2, gu, 2, offs,
                                 shps, halves, &vds));
    EXPECT_OK(h5tile_write(MPI_COMM_NULL, path, "/fields/v", H5TILE_INT32, 2, gv, zero, gv, v,
                           &single));
    for (int i = 0; i < 30; i++) u[i] = 2000 + i; /* the second version of /fields/u */
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, path, "/fields/u", H5TILE_FLOAT64, 2, gu, 2, offs,
                                 shps, halves, &vds));

    EXPECT_OK(h5tile_write_async(MPI_COMM_NULL, path, "/fields/w", H5TILE_FLOAT64, 1, gw, zero,
                                 gw, w, &vds, NULL));
    EXPECT_OK(h5tile_write_async(MPI_COMM_NULL, path, "/fields/x", H5TILE_FLOAT64, 1, gw, zero,
                                 gw, x, &vds, NULL));
    EXPECT_OK(h5tile_fence(MPI_COMM_NULL));

    EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/fields/u", H5TILE_FLOAT64, 2, zero, gu, back, NULL));
    CHECK(memcmp(back, u, sizeof u) == 0);
    EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/fields/v", H5TILE_INT32, 2, zero, gv, vback, NULL));
    CHECK(memcmp(vback, v, sizeof v) == 0);

    /* Refusals leave the file and its tiles as they were. */
    dataset_snapshot before = snapshot(path);
    EXPECT_STATUS(h5tile_write(MPI_COMM_NULL, path, "/meta", H5TILE_FLOAT64, 1, gw, zero, gw, w,
                               &vds),
                  H5TILE_ERR_NOT_A_DATASET);
    CHECK(strstr(h5tile_last_error(), "replaces datasets only") != NULL);
    EXPECT_STATUS(h5tile_write(MPI_COMM_NULL, path, "/params/y", H5TILE_FLOAT64, 1, gw, zero, gw,
                               w, &vds),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(h5tile_last_error(), "not a group") != NULL);
    CHECK_UNTOUCHED(path, before);
    printf("api_keep_others: OK\n");
    return 0;
}
