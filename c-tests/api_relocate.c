/* The master refers to its tiles by relative paths, so the pair can move: write, rename() the
 * master and its .tiles folder into another directory, copy them (plain C) into a third, and
 * read back from both; then read again from another working directory, by absolute and by
 * relative paths. The old location is then empty (NOT_FOUND). */
#include "check.h"

static const uint64_t G[2] = {9, 8};

/* cp -r for regular files and folders. */
static void copy_tree(const char *from, const char *to) {
    struct stat st;
    CHECK_MSG(stat(from, &st) == 0, "stat '%s': %s", from, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        mkdir_p(to);
        int n;
        char **names = list_dir(from, &n);
        CHECK(names != NULL);
        for (int i = 0; i < n; i++) {
            char a[4096], b[4096];
            PATHF(a, "%s/%s", from, names[i]);
            PATHF(b, "%s/%s", to, names[i]);
            copy_tree(a, b);
        }
        free_names(names, n);
        return;
    }
    FILE *in = fopen(from, "rb");
    CHECK_MSG(in != NULL, "fopen '%s': %s", from, strerror(errno));
    FILE *out = fopen(to, "wb");
    CHECK_MSG(out != NULL, "fopen '%s': %s", to, strerror(errno));
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) CHECK(fwrite(buf, 1, n, out) == n);
    CHECK(!ferror(in));
    fclose(in);
    CHECK(fclose(out) == 0);
}

/* Reads the whole array and a sub-tile crossing all tiles, and checks them. */
static void check_readable(const char *path) {
    int64_t all[9 * 8];
    const uint64_t zero[2] = {0, 0}, off[2] = {3, 2}, shp[2] = {4, 5};
    CHECK_READ_2D(path, "/data", H5TILE_INT64, G, zero, G, all, sizeof all);
    CHECK_READ_2D(path, "/data", H5TILE_INT64, G, off, shp, all, sizeof all);
    CHECK_INSPECT_2D(path, "/data", H5TILE_INT64, 9, 8);
}

int main(int argc, char **argv) {
    const char *arg = scratch_arg(argc, argv);
    fresh_dir(arg);
    char scratch[4096];
    CHECK(realpath(arg, scratch) != NULL); /* absolute, since the test changes directory */

    char a[4096], b[4096], c[4096], elsewhere[4096];
    PATHF(a, "%s/a", scratch);
    PATHF(b, "%s/b/deeper", scratch);
    PATHF(c, "%s/c", scratch);
    PATHF(elsewhere, "%s/elsewhere", scratch);
    mkdir_p(b);
    mkdir_p(elsewhere);

    /* four tiles of the 9x8 int64 array, written from one process */
    char pa[4096], pa_tiles[4096];
    PATHF(pa, "%s/data.h5", a);
    TILE_DIR(pa_tiles, pa);
    uint64_t offs[8], shps[8];
    void *bufs[4];
    const void *cbufs[4];
    for (int t = 0; t < 4; t++) {
        EXPECT_OK(h5tile_partition(4, (size_t)t, 2, G, offs + 2 * t, shps + 2 * t));
        bufs[t] = xmalloc((size_t)volume(2, shps + 2 * t) * 8);
        fill_tile(H5TILE_INT64, 2, G, offs + 2 * t, shps + 2 * t, bufs[t]);
        cbufs[t] = bufs[t];
    }
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_NULL, pa, "/data", H5TILE_INT64, 2, G, 4, offs, shps,
                                 cbufs, vds_layout()));
    for (int t = 0; t < 4; t++) free(bufs[t]);
    CHECK(count_files(pa_tiles) == 4);
    check_readable(pa);

    /* copy into c (a byte-for-byte copy, and the original stays readable) */
    char pc[4096], pc_tiles[4096];
    PATHF(pc, "%s/data.h5", c);
    TILE_DIR(pc_tiles, pc);
    copy_tree(a, c);
    CHECK(hash_file(pc) == hash_file(pa) && hash_dir(pc_tiles) == hash_dir(pa_tiles));

    /* move into b with rename() */
    char pb[4096], pb_tiles[4096];
    PATHF(pb, "%s/data.h5", b);
    TILE_DIR(pb_tiles, pb);
    CHECK_MSG(rename(pa, pb) == 0, "rename: %s", strerror(errno));
    CHECK_MSG(rename(pa_tiles, pb_tiles) == 0, "rename: %s", strerror(errno));
    CHECK(count_files(a) == 0);

    check_readable(pb);
    check_readable(pc);
    /* nothing is left where it was written */
    int64_t buf[9 * 8];
    const uint64_t zero[2] = {0, 0};
    EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, pa, "/data", H5TILE_INT64, 2, zero, G, buf, NULL),
                  H5TILE_ERR_NOT_FOUND);

    /* from another working directory: absolute paths, then relative ones */
    CHECK_MSG(chdir(elsewhere) == 0, "chdir: %s", strerror(errno));
    check_readable(pb);
    check_readable(pc);
    check_readable("../b/deeper/data.h5");
    check_readable("../c/data.h5");
    CHECK_MSG(chdir(b) == 0, "chdir: %s", strerror(errno));
    check_readable("data.h5");
    check_readable("./data.h5");
    check_readable("../../c/data.h5");

    /* removing the copy's tiles does not affect the moved one: they are separate files */
    CHECK_MSG(chdir(scratch) == 0, "chdir: %s", strerror(errno));
    rm_rf(pc_tiles);
    EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, pc, "/data", H5TILE_INT64, 2, zero, G, buf, NULL),
                  H5TILE_ERR_MISSING_TILE);
    check_readable(pb);
    check_readable("b/deeper/data.h5");

    printf("api_relocate: OK\n");
    return 0;
}
