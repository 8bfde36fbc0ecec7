/* H5TILE_LAYOUT_AUTO, the default (h5tile_write_options_default() and NULL options): the VDS
 * layout where every rank is on one node and holds one tile, the subfiled layout where the
 * ranks span nodes or a rank holds several tiles of a dataset.
 * H5TILE_RANKS_PER_NODE=K makes runs of K ranks count as nodes, so one machine stands in for
 * several:
 *   1. the defaults on one machine: one tile file a rank (VDS), and NULL options alike;
 *   2. H5TILE_RANKS_PER_NODE=1 with several ranks: one subfile a pretended node (each rank's
 *      own here), named after the node's first rank; =2: one a pair of ranks; with one rank
 *      the ranks still share a node: VDS;
 *   3. an explicit layout wins (VDS asked: tile files, whatever the nodes);
 *   4. H5TILE_RANKS_PER_NODE=lots: H5TILE_ERR_INVALID_ARGUMENT on every rank naming it, and
 *      the file written before untouched;
 *   5. one machine, each rank holding 4 tiles (rows that do not make one box): one subfile a
 *      rank, never a file per tile.
 * Every file reads back on another decomposition, and its master records what the choice saw
 * (attribute h5tile_chosen_on: the ranks, the nodes, the most tiles a rank held of the
 * dataset; none where the layout was named), which `h5tile ls` shows.
 *   mpi_auto_layout SCRATCH_DIR */
#include "check.h"

static int rank, size;

/* Element (r, c) of version v of a (4 * size) x 6 array. */
static double value(int v, uint64_t r, uint64_t c) { return v * 1000.0 + r * 6.0 + c; }

/* Writes version v of the array, 4 rows a rank, with `opts` (NULL: the defaults). */
static h5tile_status write_version(const char *path, int v, const h5tile_write_options *opts) {
    const uint64_t g[2] = {4 * (uint64_t)size, 6}, off[2] = {4 * (uint64_t)rank, 0},
                   shp[2] = {4, 6};
    double buf[24];
    for (uint64_t r = 0; r < 4; r++)
        for (uint64_t c = 0; c < 6; c++) buf[r * 6 + c] = value(v, off[0] + r, c);
    return h5tile_write(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp, buf, opts);
}

/* Every rank reads column rank % 6 of every row and checks it against version v. */
static void check_version(const char *path, int v) {
    uint64_t off[2] = {0, (uint64_t)rank % 6}, shp[2] = {4 * (uint64_t)size, 1};
    double col[256];
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, off, shp, col, NULL));
    for (uint64_t r = 0; r < shp[0]; r++)
        CHECK_MSG(col[r] == value(v, r, off[1]), "%s: row %llu is %g, expected version %d", path,
                  (unsigned long long)r, col[r], v);
}

/* The number of files in the tile folder of `path` whose names hold `part` (".s": subfiles,
 * ".r": tile files). */
static int files_with(const char *path, const char *part) {
    char dir[4096];
    TILE_DIR(dir, path);
    int n, found = 0;
    char **names = list_dir(dir, &n);
    CHECK_MSG(names != NULL, "no tile folder beside '%s'", path);
    for (int i = 0; i < n; i++) found += strstr(names[i], part) != NULL;
    free_names(names, n);
    return found;
}

/* The master of `path` records that H5TILE_LAYOUT_AUTO chose its layout over `ranks` ranks on
 * `nodes` nodes, holding at most `tiles` tiles each. */
static void check_chosen_on(const char *path, uint64_t ranks, uint64_t nodes, uint64_t tiles) {
    uint64_t seen[3] = {0, 0, 0};
    EXPECT_OK(h5tile_attr_read(MPI_COMM_WORLD, path, "/x", "h5tile_chosen_on", H5TILE_UINT64, 3,
                               seen));
    CHECK_MSG(seen[0] == ranks && seen[1] == nodes && seen[2] == tiles,
              "%s: chosen on %llu ranks, %llu nodes, %llu tiles a rank, expected %llu, %llu, %llu",
              path, (unsigned long long)seen[0], (unsigned long long)seen[1],
              (unsigned long long)seen[2], (unsigned long long)ranks, (unsigned long long)nodes,
              (unsigned long long)tiles);
}

/* Version v of the array as 4 one-row tiles a rank: rows rank, rank + size, ... (with more
 * than one rank, a rank's rows make no box, so each is a dataset of the rank's subfile). */
static h5tile_status write_rows(const char *path, int v) {
    const uint64_t g[2] = {4 * (uint64_t)size, 6};
    uint64_t offs[8], shps[8];
    double rows[4][6];
    const void *bufs[4];
    for (int k = 0; k < 4; k++) {
        offs[2 * k] = (uint64_t)(rank + k * size);
        offs[2 * k + 1] = 0;
        shps[2 * k] = 1;
        shps[2 * k + 1] = 6;
        for (uint64_t c = 0; c < 6; c++) rows[k][c] = value(v, offs[2 * k], c);
        bufs[k] = rows[k];
    }
    return h5tile_write_tiles(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, 4, offs, shps,
                              bufs, NULL);
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_SINGLE, &rank, &size);
    char one[4096], spread[4096], pairs[4096], explicit_vds[4096], many[4096];
    PATHF(one, "%s/one_node.h5", scratch);
    PATHF(spread, "%s/spread.h5", scratch);
    PATHF(pairs, "%s/pairs.h5", scratch);
    PATHF(explicit_vds, "%s/explicit_vds.h5", scratch);
    PATHF(many, "%s/many_tiles.h5", scratch);
    h5tile_write_options defaults = h5tile_write_options_default();
    CHECK(defaults.layout == H5TILE_LAYOUT_AUTO);

    /* 1. One machine: tile files, with the defaults and with NULL options. */
    unsetenv("H5TILE_RANKS_PER_NODE");
    EXPECT_OK(write_version(one, 1, &defaults));
    CHECK_MSG(files_with(one, ".r") == size && files_with(one, ".s") == 0,
              "%s: expected a tile file a rank", one);
    check_version(one, 1);
    EXPECT_OK(write_version(one, 2, NULL));
    CHECK(files_with(one, ".r") == size && files_with(one, ".s") == 0);
    check_version(one, 2);
    check_chosen_on(one, (uint64_t)size, 1, 1);

    /* 2. Ranks pretended to span nodes: a subfile a node. */
    setenv("H5TILE_RANKS_PER_NODE", "1", 1);
    EXPECT_OK(write_version(spread, 1, NULL));
    int want = size > 1 ? size : 0;
    CHECK_MSG(files_with(spread, ".s") == want, "%s: %d subfiles, expected %d", spread,
              files_with(spread, ".s"), want);
    check_version(spread, 1);
    check_chosen_on(spread, (uint64_t)size, (uint64_t)size, 1);
    setenv("H5TILE_RANKS_PER_NODE", "2", 1);
    EXPECT_OK(write_version(pairs, 1, &defaults));
    want = size > 2 ? (size + 1) / 2 : 0;
    CHECK_MSG(files_with(pairs, ".s") == want, "%s: %d subfiles, expected %d", pairs,
              files_with(pairs, ".s"), want);
    check_version(pairs, 1);
    check_chosen_on(pairs, (uint64_t)size, (uint64_t)(size + 1) / 2, 1);

    /* 3. An explicit layout wins. */
    setenv("H5TILE_RANKS_PER_NODE", "1", 1);
    h5tile_write_options vds = h5tile_write_options_default();
    vds.layout = H5TILE_LAYOUT_VDS;
    EXPECT_OK(write_version(explicit_vds, 1, &vds));
    CHECK(files_with(explicit_vds, ".r") == size && files_with(explicit_vds, ".s") == 0);
    check_version(explicit_vds, 1);
    uint64_t none[2];
    EXPECT_STATUS(h5tile_attr_read(MPI_COMM_WORLD, explicit_vds, "/x", "h5tile_chosen_on",
                                   H5TILE_UINT64, 2, none),
                  H5TILE_ERR_NOT_FOUND);

    /* 4. A bad value fails on every rank, naming it, and the file stays. */
    dataset_snapshot before = snapshot(one);
    setenv("H5TILE_RANKS_PER_NODE", "lots", 1);
    EXPECT_STATUS(write_version(one, 3, NULL), H5TILE_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(h5tile_last_error(), "H5TILE_RANKS_PER_NODE=lots") != NULL, "%s",
              h5tile_last_error());
    unsetenv("H5TILE_RANKS_PER_NODE");
    CHECK_UNTOUCHED(one, before);
    check_version(one, 2);

    /* 5. Many tiles a rank on one machine: a subfile a rank, each written by its rank alone. */
    EXPECT_OK(write_rows(many, 1));
    CHECK_MSG(files_with(many, ".s") == size && files_with(many, ".r") == 0,
              "%s: %d subfiles and %d tile files, expected a subfile a rank", many,
              files_with(many, ".s"), files_with(many, ".r"));
    check_version(many, 1);
    check_chosen_on(many, (uint64_t)size, 1, 4);

    MPI_Finalize();
    if (rank == 0) printf("mpi_auto_layout: OK\n");
    return 0;
}
