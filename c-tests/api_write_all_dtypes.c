/* Writes every element type as "<dir>/<name>.h5" (dataset /data, 5x7, two tiles of uneven
 * size), the same in the single-file layout as "<dir>/<name>_single.h5" and in the subfiled
 * layout as "<dir>/<name>_subfiles.h5" (one process: one subfile holding both tiles), and a
 * dataset in nested groups, for h5py_check_interop.py to check with h5py. */
#include "check.h"

int main(int argc, char **argv) {
    const char *dir = scratch_arg(argc, argv);
    fresh_dir(dir);
    const uint64_t g[2] = {5, 7};
    const uint64_t offs[4] = {0, 0, 2, 0}, shps[4] = {2, 7, 3, 7};
    for (int dt = 0; dt < NDTYPES; dt++) {
        char path[4096];
        PATHF(path, "%s/%s.h5", dir, dtype_name(dt));
        size_t es = dtype_size(dt);
        void *b0 = xmalloc(14 * es), *b1 = xmalloc(21 * es);
        fill_tile(dt, 2, g, offs, shps, b0);
        fill_tile(dt, 2, g, offs + 2, shps + 2, b1);
        const void *bufs[2] = {b0, b1};
        EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, path, "/data", dt, 2, g, 2, offs, shps, bufs,
                                     vds_layout()));
        char tiles[4096];
        TILE_DIR(tiles, path);
        CHECK(count_files(tiles) == 2);
        /* and as one self-contained file */
        h5tile_write_options so = h5tile_write_options_default();
        so.layout = H5TILE_LAYOUT_SINGLE;
        PATHF(path, "%s/%s_single.h5", dir, dtype_name(dt));
        EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, path, "/data", dt, 2, g, 2, offs, shps, bufs,
                                     &so));
        /* and as one subfile beside its master */
        h5tile_write_options sf = h5tile_write_options_default();
        sf.layout = H5TILE_LAYOUT_SUBFILES;
        PATHF(path, "%s/%s_subfiles.h5", dir, dtype_name(dt));
        EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, path, "/data", dt, 2, g, 2, offs, shps, bufs,
                                     &sf));
        TILE_DIR(tiles, path);
        CHECK(count_files(tiles) == 1);
        free(b0);
        free(b1);
    }
    /* one dataset inside groups, 3-D, float64 */
    {
        char path[4096];
        PATHF(path, "%s/nested.h5", dir);
        const uint64_t g3[3] = {2, 3, 4}, zero[3] = {0, 0, 0};
        double v[24];
        fill_tile(H5TILE_FLOAT64, 3, g3, zero, g3, v);
        EXPECT_OK(h5tile_write(MPI_COMM_NULL, path, "/a/b/c", H5TILE_FLOAT64, 3, g3, zero, g3, v,
                               NULL));
    }
    printf("api_write_all_dtypes: OK\n");
    return 0;
}
