/* Overwriting (4 ranks): 4 ranks write one tile each; then 2 ranks (a sub-communicator; ranks
 * 2 and 3 make no call) write new values to the same path: the tile folder then holds exactly
 * the 2 new files and every read gives the new values; then 4 ranks write 8 tiles (2 each)
 * and exactly 8 files remain; then one process alone; then the single-file layout replaces
 * the tiled one (no tile file remains) and is replaced in turn. No temporary master is left
 * beside the file. */
#include "check.h"

static int rank, size;
static const uint64_t G[2] = {12, 10};

/* Value of element i in version v of the dataset. */
static double value(int v, uint64_t i) { return (double)v * 1000.0 + (double)i * 0.5; }

static void fill(int v, const uint64_t *off, const uint64_t *shp, double *buf) {
    for (uint64_t r = 0; r < shp[0]; r++)
        for (uint64_t c = 0; c < shp[1]; c++)
            buf[r * shp[1] + c] = value(v, (off[0] + r) * G[1] + off[1] + c);
}

/* Every rank reads the whole array and a tile of its own choosing; all must be version v. */
static void check_version(const char *path, int v) {
    double all[12 * 10];
    const uint64_t zero[2] = {0, 0};
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, zero, G, all, NULL));
    for (uint64_t i = 0; i < 12 * 10; i++)
        CHECK_MSG(all[i] == value(v, i), "version %d: element %llu is %g, expected %g", v,
                  (unsigned long long)i, all[i], value(v, i));
    uint64_t off[2] = {(uint64_t)rank * 2, (uint64_t)rank}, shp[2] = {3, 4};
    double part[12];
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, off, shp, part, NULL));
    for (uint64_t r = 0; r < 3; r++)
        for (uint64_t c = 0; c < 4; c++)
            CHECK(part[r * 4 + c] == value(v, (off[0] + r) * G[1] + off[1] + c));
}

/* The tile files in `dir`: exactly `n`, all of one generation, which differs from `*prev`
 * (updated); the rank numbers in their names are below `nranks`. Tile files (.r<rank>.t<k>)
 * or, with `subfiles`, subfiles (.s<first rank>). */
static void check_tile_dir(const char *dir, int n, int nranks, int subfiles,
                           char *prev_generation) {
    int count;
    char **names = list_dir(dir, &count);
    CHECK_MSG(count == n, "%s holds %d files, expected %d", dir, count, n);
    char gen[17] = "";
    for (int i = 0; i < count; i++) {
        const char *s = names[i];
        CHECK_MSG(strncmp(s, "data.", 5) == 0 && strlen(s) > 5 + 16, "unexpected file '%s'", s);
        if (i == 0) memcpy(gen, s + 5, 16);
        CHECK_MSG(memcmp(gen, s + 5, 16) == 0, "files of two generations in %s (%s)", dir, s);
        int r = -1, t = -1;
        int named = subfiles ? sscanf(s + 5 + 16, ".s%d.h5", &r) == 1
                             : sscanf(s + 5 + 16, ".r%d.t%d.h5", &r, &t) == 2;
        CHECK_MSG(named && r >= 0 && r < nranks, "file '%s' does not name a rank below %d", s,
                  nranks);
    }
    CHECK_MSG(strcmp(gen, prev_generation) != 0, "the new write reused generation %s", gen);
    memcpy(prev_generation, gen, 17);
    free_names(names, count);
}

/* Nothing but data.h5 and its tile folder (which the single-file layout needs not keep)
 * beside it: no temporary master left behind. */
static void check_no_leftovers(const char *scratch) {
    int n;
    char **names = list_dir(scratch, &n);
    int ok = (n == 2 && strcmp(names[0], "data.h5") == 0 && strcmp(names[1], "data.h5.tiles") == 0) ||
             (n == 1 && strcmp(names[0], "data.h5") == 0);
    CHECK_MSG(ok, "%s holds %d entries (first: '%s', last: '%s')", scratch, n,
              n > 0 ? names[0] : "", n > 0 ? names[n - 1] : "");
    free_names(names, n);
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_SINGLE, &rank, &size);
    CHECK_MSG(size == 4, "run on 4 ranks");
    char path[4096], dir[4096], generation[17] = "";
    PATHF(path, "%s/data.h5", scratch);
    TILE_DIR(dir, path);
    double buf[12 * 10];

    /* 1. four ranks, one tile each */
    uint64_t off[2], shp[2];
    EXPECT_OK(h5tile_partition(4, (size_t)rank, 2, G, off, shp));
    fill(1, off, shp, buf);
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, G, off, shp, buf, NULL));
    check_version(path, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    check_tile_dir(dir, 4, 4, 0, generation);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2. ranks 0 and 1 alone overwrite it; ranks 2 and 3 make no h5tile call */
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (rank < 2) {
        CHECK(pair != MPI_COMM_NULL);
        EXPECT_OK(h5tile_partition(2, (size_t)rank, 2, G, off, shp));
        fill(2, off, shp, buf);
        EXPECT_OK(h5tile_write(pair, path, "/data", H5TILE_FLOAT64, 2, G, off, shp, buf, NULL));
        /* the writers see the new data as soon as the call returns */
        const uint64_t zero[2] = {0, 0};
        double all[12 * 10];
        EXPECT_OK(h5tile_read(pair, path, "/data", H5TILE_FLOAT64, 2, zero, G, all, NULL));
        for (uint64_t i = 0; i < 12 * 10; i++) CHECK(all[i] == value(2, i));
        MPI_Comm_free(&pair);
    } else {
        CHECK(pair == MPI_COMM_NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    check_tile_dir(dir, 2, 2, 0, generation);
    check_version(path, 2);
    if (rank == 0) check_no_leftovers(scratch);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. four ranks, two tiles each (the 8-way partition): the default gives each rank one
     * subfile for both, not a file per tile */
    uint64_t offs[4], shps[4];
    double b0[12 * 10], b1[12 * 10];
    EXPECT_OK(h5tile_partition(8, (size_t)(2 * rank), 2, G, offs, shps));
    EXPECT_OK(h5tile_partition(8, (size_t)(2 * rank + 1), 2, G, offs + 2, shps + 2));
    fill(3, offs, shps, b0);
    fill(3, offs + 2, shps + 2, b1);
    const void *bufs[2] = {b0, b1};
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, G, 2, offs,
                                 shps, bufs, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    check_tile_dir(dir, 4, 4, 1, generation);
    check_version(path, 3);
    if (rank == 0) check_no_leftovers(scratch);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 4. back to one process (MPI_COMM_NULL on rank 0 alone), one tile */
    if (rank == 0) {
        const uint64_t zero[2] = {0, 0};
        fill(4, zero, G, buf);
        EXPECT_OK(h5tile_write(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, G, zero, G, buf,
                               NULL));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    check_tile_dir(dir, 1, 1, 0, generation);
    check_version(path, 4);
    if (rank == 0) check_no_leftovers(scratch);

    MPI_Barrier(MPI_COMM_WORLD);

    /* 5. the single-file layout replaces the tiled one: no tile file of the old one remains */
    h5tile_write_options single = h5tile_write_options_default();
    single.layout = H5TILE_LAYOUT_SINGLE;
    EXPECT_OK(h5tile_partition(4, (size_t)rank, 2, G, off, shp));
    fill(5, off, shp, buf);
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, G, off, shp, buf, &single));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MSG(count_files(dir) <= 0, "after a single-file overwrite %s still holds %d files", dir,
              count_files(dir));
    check_version(path, 5);
    if (rank == 0) check_no_leftovers(scratch);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 6. single over single, then tiled over single */
    EXPECT_OK(h5tile_partition(4, (size_t)(3 - rank), 2, G, off, shp));
    fill(6, off, shp, buf);
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, G, off, shp, buf, &single));
    check_version(path, 6);
    MPI_Barrier(MPI_COMM_WORLD);
    fill(7, off, shp, buf);
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, G, off, shp, buf, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    check_tile_dir(dir, 4, 4, 0, generation);
    check_version(path, 7);
    if (rank == 0) check_no_leftovers(scratch);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_overwrite on %d ranks: OK\n", size);
    MPI_Finalize();
    return 0;
}
