/* Several tiles per rank (h5tile_write_tiles): ranks x tiles covering a 2-D array in a grid of
 * blocks are written and read back, in both layouts; two tiles of one rank that overlap, tiles
 * of two ranks that overlap, and a missing tile (a gap) are H5TILE_ERR_SHAPE on every rank,
 * the message naming the tiles, and nothing is written. */
#include "check.h"

#define PER_RANK 3
static int rank, size;

/* Block `b` of a grid of size*PER_RANK row blocks over `g` rows (block sizes differ by 1). */
static void block(const uint64_t *g, int b, int nblocks, uint64_t *off, uint64_t *shp) {
    uint64_t base = g[0] / (uint64_t)nblocks, extra = g[0] % (uint64_t)nblocks;
    off[0] = (uint64_t)b * base + ((uint64_t)b < extra ? (uint64_t)b : extra);
    shp[0] = base + ((uint64_t)b < extra ? 1 : 0);
    off[1] = 0, shp[1] = g[1];
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_SINGLE, &rank, &size);
    char path[4096], dir[4096];
    PATHF(path, "%s/tiles.h5", scratch);
    TILE_DIR(dir, path);
    const uint64_t g[2] = {(uint64_t)(size * PER_RANK * 2 + 1), 5};
    const int nblocks = size * PER_RANK;
    uint64_t offs[2 * PER_RANK], shps[2 * PER_RANK];
    void *bufs[PER_RANK];
    /* rank r holds blocks r, r + size, r + 2*size: interleaved, as over-decomposed codes do */
    for (int k = 0; k < PER_RANK; k++) {
        block(g, rank + k * size, nblocks, offs + 2 * k, shps + 2 * k);
        bufs[k] = xmalloc((size_t)volume(2, shps + 2 * k) * sizeof(int64_t));
        fill_tile(H5TILE_INT64, 2, g, offs + 2 * k, shps + 2 * k, bufs[k]);
    }
    const h5tile_layout layouts[2] = {H5TILE_LAYOUT_VDS, H5TILE_LAYOUT_SINGLE};
    for (int l = 0; l < 2; l++) {
        h5tile_write_options o = h5tile_write_options_default();
        o.layout = layouts[l];
        EXPECT_OK(h5tile_write_tiles(MPI_COMM_WORLD, path, "/t", H5TILE_INT64, 2, g, PER_RANK, offs,
                                     shps, (const void *const *)bufs, &o));
        if (l == 0 && rank == 0) CHECK(count_files(dir) == nblocks);
        int64_t *all = (int64_t *)xmalloc((size_t)volume(2, g) * sizeof(int64_t));
        const uint64_t zero[2] = {0, 0};
        EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/t", H5TILE_INT64, 2, zero, g, all, NULL));
        CHECK_TILE(H5TILE_INT64, 2, g, zero, g, all);
        free(all);
    }

    /* Errors, against the VDS written again first. */
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_WORLD, path, "/t", H5TILE_INT64, 2, g, PER_RANK, offs,
                                 shps, (const void *const *)bufs, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    dataset_snapshot snap = snapshot(path);
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t bad_offs[2 * PER_RANK], bad_shps[2 * PER_RANK];
    /* two tiles of the last rank overlap: its second tile starts inside its first */
    memcpy(bad_offs, offs, sizeof offs), memcpy(bad_shps, shps, sizeof shps);
    if (rank == size - 1) bad_offs[2] = offs[0], bad_offs[3] = 0, bad_shps[2] = 1, bad_shps[3] = 1;
    EXPECT_STATUS(h5tile_write_tiles(MPI_COMM_WORLD, path, "/t", H5TILE_INT64, 2, g, PER_RANK,
                                     bad_offs, bad_shps, (const void *const *)bufs, NULL),
                  H5TILE_ERR_SHAPE);
    char want[64];
    snprintf(want, sizeof want, "of rank %d", size - 1);
    CHECK_MSG(strstr(h5tile_last_error(), "overlap") && strstr(h5tile_last_error(), want),
              "message: %s", h5tile_last_error());
    /* a tile of rank 0 reaches into the first block of rank 1 (or of itself alone) */
    memcpy(bad_offs, offs, sizeof offs), memcpy(bad_shps, shps, sizeof shps);
    if (rank == 0) bad_shps[0] += 1;
    if (rank == 0 && size == 1) bad_shps[0] -= 1, bad_shps[2] += 1; /* alone: block 1 into 2 */
    EXPECT_STATUS(h5tile_write_tiles(MPI_COMM_WORLD, path, "/t", H5TILE_INT64, 2, g, PER_RANK,
                                     bad_offs, bad_shps, (const void *const *)bufs, NULL),
                  H5TILE_ERR_SHAPE);
    /* a gap: rank 0 leaves out its last tile */
    EXPECT_STATUS(h5tile_write_tiles(MPI_COMM_WORLD, path, "/t", H5TILE_INT64, 2, g,
                                     rank == 0 ? PER_RANK - 1 : PER_RANK, offs, shps,
                                     (const void *const *)bufs, NULL),
                  H5TILE_ERR_SHAPE);
    CHECK_MSG(strstr(h5tile_last_error(), "cover"), "message: %s", h5tile_last_error());
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_UNTOUCHED(path, snap);
    for (int k = 0; k < PER_RANK; k++) free(bufs[k]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_write_tiles: OK on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
