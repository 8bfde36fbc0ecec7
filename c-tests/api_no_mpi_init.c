/* Without MPI_Init: a communicator (MPI_COMM_WORLD, MPI_COMM_SELF) is H5TILE_ERR_MPI for write,
 * write_tiles and read, and nothing is written; MPI_COMM_NULL works; h5tile never initialises
 * MPI itself. */
#include "check.h"

static void check_mpi_not_initialized(int line) {
    int init = 1, fin = 1;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init || fin) check_fail(__FILE__, line, "MPI was initialised (%d) or finalised (%d)", init, fin);
}

int main(int argc, char **argv) {
    const char *scratch = scratch_arg(argc, argv);
    check_mpi_not_initialized(__LINE__);
    fresh_dir(scratch);

    char path[4096], sub[4096], tiles[4096], good[4096];
    PATHF(sub, "%s/sub", scratch);
    PATHF(path, "%s/x.h5", sub); /* its parent folder would be created by a write */
    TILE_DIR(tiles, path);
    PATHF(good, "%s/good.h5", scratch);

    const uint64_t g[2] = {4, 3}, zero[2] = {0, 0};
    int32_t v[12], w[12];
    fill_tile(H5TILE_INT32, 2, g, zero, g, v);

    EXPECT_STATUS(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_INT32, 2, g, zero, g, v, NULL),
                  H5TILE_ERR_MPI);
    check_mpi_not_initialized(__LINE__);
    EXPECT_STATUS(h5tile_write(MPI_COMM_SELF, path, "/data", H5TILE_INT32, 2, g, zero, g, v, NULL),
                  H5TILE_ERR_MPI);
    const void *bufs[1] = {v};
    EXPECT_STATUS(h5tile_write_tiles(MPI_COMM_WORLD, path, "/data", H5TILE_INT32, 2, g, 1, zero, g,
                                     bufs, NULL),
                  H5TILE_ERR_MPI);
    CHECK_MSG(!path_exists(path) && !path_exists(tiles) && !path_exists(sub),
              "a write that failed for want of MPI created files");
    CHECK(count_files(scratch) == 0);

    /* MPI_COMM_NULL: this process alone, no MPI call */
    EXPECT_OK(h5tile_write(MPI_COMM_NULL, good, "/data", H5TILE_INT32, 2, g, zero, g, v, NULL));
    memset(w, 0, sizeof w);
    EXPECT_OK(h5tile_read(MPI_COMM_NULL, good, "/data", H5TILE_INT32, 2, zero, g, w, NULL));
    CHECK_TILE(H5TILE_INT32, 2, g, zero, g, w);
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, path, "/data", H5TILE_INT32, 2, g, 1, zero, g, bufs,
                                 NULL));
    CHECK(is_regular_file(path));

    /* reading an existing dataset with a communicator: still MPI, buffer untouched */
    memset(w, 0x77, sizeof w);
    EXPECT_STATUS(h5tile_read(MPI_COMM_WORLD, good, "/data", H5TILE_INT32, 2, zero, g, w, NULL),
                  H5TILE_ERR_MPI);
    EXPECT_STATUS(h5tile_read(MPI_COMM_SELF, good, "/data", H5TILE_INT32, 2, zero, g, w, NULL),
                  H5TILE_ERR_MPI);
    for (size_t i = 0; i < sizeof w; i++) CHECK(((unsigned char *)w)[i] == 0x77);

    /* and an overwrite attempt with a communicator leaves the existing file as it was */
    dataset_snapshot snap = snapshot(good);
    EXPECT_STATUS(h5tile_write(MPI_COMM_WORLD, good, "/data", H5TILE_INT32, 2, g, zero, g, v, NULL),
                  H5TILE_ERR_MPI);
    CHECK_UNTOUCHED(good, snap);

    check_mpi_not_initialized(__LINE__);
    printf("api_no_mpi_init: OK\n");
    return 0;
}
