/* Damaged subfiles of the subfiled layout, on 4 ranks with H5TILE_RANKS_PER_FILE=2: an 8 x 6
 * float64 array, rank r writing rows 2r and 2r+1, so the subfile ...s0.h5 holds rows 0-3
 * (ranks 0 and 1) and ...s2.h5 rows 4-7 (ranks 2 and 3). For each damage to ...s2.h5:
 *   deleted      a read needing it is H5TILE_ERR_MISSING_TILE on every rank, naming it, also
 *                where only ranks 2 and 3 read those rows; reads of rows 0-3 succeed; with
 *                H5TILE_READ_FILL_MISSING rows 4-7 read 0; in batches, the chunk over rows 4-7
 *                fails naming it and the one before succeeds; the next write repairs the file;
 *   truncated    to half its size, or by its last byte: H5TILE_ERR_MISSING_TILE naming it, for
 *                native and converted (float32) reads, never data;
 *   another generation's  the file of the previous write, under the current write's name:
 *                must not read back as the previous write's values (H5TILE_ERR_MISSING_TILE).
 * No failed read changes the master or the intact subfile (hash_file). */
#include "check.h"

static int rank, size;
static const uint64_t G[2] = {8, 6}, ZERO[2] = {0, 0};
static const uint64_t TOP[2] = {0, 0}, BOTTOM[2] = {4, 0}, HALF[2] = {4, 6};

static double value(int v, uint64_t i) { return v * 1000.0 + (double)i * 0.25; }

/* Writes version v of /data, each rank its two rows, as subfiles. */
static void write_version(const char *path, int v) {
    const uint64_t off[2] = {2 * (uint64_t)rank, 0}, shp[2] = {2, 6};
    double buf[12];
    for (uint64_t k = 0; k < 12; k++) buf[k] = value(v, off[0] * 6 + k);
    h5tile_write_options o = h5tile_write_options_default();
    o.layout = H5TILE_LAYOUT_SUBFILES;
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, G, off, shp, buf, &o));
}

/* Checks rows [off[0], off[0]+shp[0]) of version v (0: every element 0) in buf. */
static void check_rows(int v, const uint64_t *off, const uint64_t *shp, const double *buf) {
    for (uint64_t k = 0; k < shp[0] * shp[1]; k++) {
        double want = v ? value(v, off[0] * 6 + k) : 0.0;
        CHECK_MSG(buf[k] == want, "row %llu, column %llu is %g, expected %g",
                  (unsigned long long)(off[0] + k / 6), (unsigned long long)(k % 6), buf[k], want);
    }
}

/* The file names of the two subfiles of `path` (rank 0 lists the folder; every rank gets
 * them): names[0] ends in ".s0.h5", names[1] in ".s2.h5". */
static void subfile_names(const char *path, char names[2][1024], char full[2][4096]) {
    char dir[4096];
    TILE_DIR(dir, path);
    if (rank == 0) {
        int n;
        char **list = list_dir(dir, &n);
        CHECK_MSG(n == 2, "%s holds %d files, expected the 2 subfiles", dir, n);
        for (int i = 0; i < 2; i++) {
            size_t len = strlen(list[i]);
            const char *want = i == 0 ? ".s0.h5" : ".s2.h5";
            CHECK_MSG(len > 6 && strcmp(list[i] + len - 6, want) == 0 &&
                          strncmp(list[i], "data.", 5) == 0,
                      "'%s' is not a subfile of /data ending in %s", list[i], want);
            PATHF(names[i], "%s", list[i]);
        }
        free_names(list, n);
    }
    MPI_Bcast(names, 2 * 1024, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 2; i++) PATHF(full[i], "%s/%s", dir, names[i]);
}

/* A read over MPI_COMM_WORLD of (off, shp) on this rank: H5TILE_ERR_MISSING_TILE naming
 * `lost`, on every rank. */
static void expect_missing(const char *path, int dt, const uint64_t *off, const uint64_t *shp,
                           const char *lost) {
    double buf[48];
    h5tile_read_options ro = h5tile_read_options_default();
    ro.flags = H5TILE_READ_NARROWING; /* float32 reads of the float64 data */
    EXPECT_STATUS(h5tile_read(MPI_COMM_WORLD, path, "/data", dt, 2, off, shp, buf, &ro),
                  H5TILE_ERR_MISSING_TILE);
    CHECK_MSG(strstr(h5tile_last_error(), lost) != NULL,
              "the message does not name the damaged subfile '%s': \"%s\"", lost,
              h5tile_last_error());
}

/* The reads that must fail because ...s2.h5 is damaged, and those that must not. */
static void reads_around(const char *path, const char *lost) {
    CHECK_CONTEXT("reading %s with %s damaged", path, lost);
    /* every rank reads the whole array */
    expect_missing(path, H5TILE_FLOAT64, ZERO, G, lost);
    expect_missing(path, H5TILE_FLOAT32, ZERO, G, lost);
    /* only ranks 2 and 3 read the damaged rows: agreed on every rank */
    expect_missing(path, H5TILE_FLOAT64, rank < 2 ? TOP : BOTTOM, HALF, lost);
    /* one element of them, on the last rank only */
    {
        const uint64_t one_off[2] = {7, 5}, one[2] = {1, 1};
        expect_missing(path, H5TILE_FLOAT64, rank == 3 ? one_off : TOP, rank == 3 ? one : HALF,
                       lost);
    }
    /* rows 0-3 need only the intact subfile */
    double buf[48];
    memset(buf, 0xEE, sizeof buf);
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, TOP, HALF, buf, NULL));
    check_rows(1, TOP, HALF, buf);
    CHECK_CONTEXT("%s", "");
}

/* Hashes (hash_file) of a master and of its subfile that stays intact (...s0.h5). */
typedef struct {
    uint64_t master, intact;
} intact_hashes;

/* Version 1 of /data written to `path` and its subfiles named (names, full); returns the
 * hashes of the master and of the intact subfile, taken on rank 0 before any damage. */
static intact_hashes write_first_version(const char *path, char names[2][1024],
                                         char full[2][4096]) {
    write_version(path, 1);
    subfile_names(path, names, full);
    intact_hashes h = {0, 0};
    if (rank == 0) {
        h.master = hash_file(path);
        h.intact = hash_file(full[0]);
    }
    return h;
}

/* On rank 0: the failed reads changed neither the master nor the intact subfile. */
static void check_unchanged(const char *path, char names[2][1024], char full[2][4096],
                            intact_hashes before) {
    if (rank != 0) return;
    CHECK_MSG(hash_file(path) == before.master, "a failed read changed the master");
    CHECK_MSG(hash_file(full[0]) == before.intact, "a failed read changed %s", names[0]);
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_SINGLE, &rank, &size);
    CHECK_MSG(size == 4, "run on 4 ranks");
    const char *env = getenv("H5TILE_RANKS_PER_FILE");
    CHECK_MSG(env != NULL && strcmp(env, "2") == 0, "run with H5TILE_RANKS_PER_FILE=2");
    char names[2][1024], full[2][4096];
    double buf[48];

    /* 1. deleted */
    {
        char path[4096];
        PATHF(path, "%s/deleted/data.h5", scratch);
        const intact_hashes before = write_first_version(path, names, full);
        if (rank == 0) CHECK(unlink(full[1]) == 0);
        MPI_Barrier(MPI_COMM_WORLD);
        reads_around(path, names[1]);
        /* with H5TILE_READ_FILL_MISSING the lost rows read 0 */
        h5tile_read_options fill = h5tile_read_options_default();
        fill.flags = H5TILE_READ_FILL_MISSING;
        memset(buf, 0xEE, sizeof buf);
        EXPECT_OK(
            h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, ZERO, G, buf, &fill));
        check_rows(1, TOP, HALF, buf);
        check_rows(0, BOTTOM, HALF, buf + 24);
        /* in batches, by one process: rows 0-3, then rows 4-7 fail */
        if (rank == 0) {
            h5tile_batches *it = NULL;
            EXPECT_OK(h5tile_batches_open(MPI_COMM_NULL, path, "/data", 2, HALF, NULL, &it));
            uint64_t off[2], shp[2];
            bool done = true;
            EXPECT_OK(h5tile_batches_next(it, buf, sizeof buf, off, shp, &done));
            CHECK(!done && off[0] == 0 && shp[0] == 4);
            check_rows(1, off, shp, buf);
            EXPECT_STATUS(h5tile_batches_next(it, buf, sizeof buf, off, shp, &done),
                          H5TILE_ERR_MISSING_TILE);
            CHECK_MSG(strstr(h5tile_last_error(), names[1]) != NULL,
                      "batches: the message does not name '%s': \"%s\"", names[1],
                      h5tile_last_error());
            h5tile_batches_free(it);
            /* the failed reads changed nothing, and recreated nothing */
            check_unchanged(path, names, full, before);
            CHECK(!path_exists(full[1]));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* the next write leaves a whole dataset */
        write_version(path, 2);
        subfile_names(path, names, full);
        EXPECT_OK(
            h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, ZERO, G, buf, NULL));
        check_rows(2, ZERO, G, buf);
    }

    /* 2. truncated: to half its size, and by its last byte */
    for (int cut = 0; cut < 2; cut++) {
        char path[4096];
        PATHF(path, "%s/truncated%d/data.h5", scratch, cut);
        const intact_hashes before = write_first_version(path, names, full);
        if (rank == 0) {
            struct stat st;
            CHECK(stat(full[1], &st) == 0 && st.st_size > 2);
            off_t to = cut == 0 ? st.st_size / 2 : st.st_size - 1;
            CHECK(truncate(full[1], to) == 0);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        reads_around(path, names[1]);
        check_unchanged(path, names, full, before);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* 3. the subfile of the previous write under the current write's name */
    {
        char path[4096], saved[4096];
        PATHF(path, "%s/generation/data.h5", scratch);
        PATHF(saved, "%s/generation/previous.s2.h5", scratch);
        write_version(path, 1);
        subfile_names(path, names, full);
        if (rank == 0) {
            FILE *in = fopen(full[1], "rb"), *out = fopen(saved, "wb");
            CHECK(in != NULL && out != NULL);
            char b[65536];
            size_t n;
            while ((n = fread(b, 1, sizeof b, in)) > 0) CHECK(fwrite(b, 1, n, out) == n);
            fclose(in);
            CHECK(fclose(out) == 0);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        write_version(path, 2);
        char old_names[2][1024];
        memcpy(old_names, names, sizeof names);
        subfile_names(path, names, full);
        CHECK_MSG(strcmp(names[1], old_names[1]) != 0, "the second write reused %s", names[1]);
        uint64_t master = 0;
        if (rank == 0) {
            master = hash_file(path);
            CHECK(rename(saved, full[1]) == 0);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_CONTEXT("%s replaced by the previous write's %s", names[1], old_names[1]);
        for (int converted = 0; converted < 2; converted++) {
            int dt = converted ? H5TILE_FLOAT32 : H5TILE_FLOAT64;
            h5tile_read_options ro = h5tile_read_options_default();
            ro.flags = H5TILE_READ_NARROWING;
            h5tile_status s = h5tile_read(MPI_COMM_WORLD, path, "/data", dt, 2, ZERO, G, buf, &ro);
            if (s == H5TILE_OK) {
                double got = converted ? (double)((float *)buf)[32] : buf[32];
                check_fail(__FILE__, __LINE__,
                           "a %s read of a master whose subfile %s is the previous write's "
                           "returned H5TILE_OK: row 5, column 2 is %g (version 1 has %g, "
                           "version 2 %g)",
                           converted ? "converting (float32)" : "native (float64)", names[1], got,
                           value(1, 32), value(2, 32));
            }
            EXPECT_STATUS(s, H5TILE_ERR_MISSING_TILE);
            CHECK_MSG(strstr(h5tile_last_error(), names[1]) != NULL,
                      "the message does not name '%s': \"%s\"", names[1], h5tile_last_error());
        }
        EXPECT_OK(
            h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, TOP, HALF, buf, NULL));
        check_rows(2, TOP, HALF, buf);
        if (rank == 0) CHECK_MSG(hash_file(path) == master, "a failed read changed the master");
        CHECK_CONTEXT("%s", "");
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_subfiles_damage on %d ranks: OK\n", size);
    MPI_Finalize();
    return 0;
}
