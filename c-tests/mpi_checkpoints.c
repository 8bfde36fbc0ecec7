/* Checkpoints and series through the C API, on any number of ranks:
 *   1. in each layout, one commit of two datasets (a float64 array whose rows each rank
 *      adds as two tiles, and an int32 vector that rank 0 alone holds) with attributes on the
 *      file and a dataset; read back on another decomposition, by h5tile_read and
 *      h5tile_attr_read and by one h5tile_restart_read (and its errors: a field or attribute
 *      not there, a NULL buffer on one rank); h5tile_attr_read's errors; the subfiled layout
 *      writes one subfile per group, not one per dataset;
 *   2. ranks that disagree on the datasets, a rank whose add fails, and a rank that marks
 *      its checkpoint failed (h5tile_checkpoint_fail): the same status on every rank from the
 *      commit, and the old file untouched;
 *   3. h5tile_checkpoint_commit_async completed by h5tile_wait;
 *   4. a series with keep_last 2 and keep_every 3 over steps 1 to 7: after each commit, the
 *      checkpoints kept are exactly those the rule names; h5tile_series_latest finds step 7,
 *      passes over a step a crash left incomplete, and with H5TILE_SERIES_VERIFY over a step
 *      whose tile's bytes were damaged; NOT_FOUND for a folder with no checkpoint; a path buffer
 *      too small;
 *   5. bad arguments: NULL path, NULL checkpoint. */
#include "check.h"

static int rank, size;

/* Element (r, c) of version v of the (4 * size) x 6 array "/u". */
static double u_value(int v, uint64_t r, uint64_t c) { return v * 1000.0 + r * 6.0 + c; }

/* This rank's 4 rows of "/u" (version v) and, on rank 0, "/p" = v * 10 + i. */
typedef struct {
    double u[24];
    int32_t p[64];
} fields;

static void fill(fields *f, int v) {
    for (uint64_t r = 0; r < 4; r++)
        for (uint64_t c = 0; c < 6; c++) f->u[r * 6 + c] = u_value(v, 4 * (uint64_t)rank + r, c);
    for (int i = 0; i < size; i++) f->p[i] = v * 10 + i;
}

/* Fills *f with version v (it must live until the commit) and adds "/u" as two tiles of two
 * rows, "/p" (whole on rank 0, an empty tile elsewhere), and the attributes "/step" = v and
 * "/u" units = "m/s". */
static void add_fields(h5tile_checkpoint *ck, fields *f, int v) {
    fill(f, v);
    const uint64_t g[2] = {4 * (uint64_t)size, 6}, shp[2] = {2, 6};
    for (int half = 0; half < 2; half++) {
        const uint64_t off[2] = {4 * (uint64_t)rank + 2 * (uint64_t)half, 0};
        EXPECT_OK(h5tile_checkpoint_add(ck, "/u", H5TILE_FLOAT64, 2, g, off, shp, f->u + 12 * half));
    }
    const uint64_t pg[1] = {(uint64_t)size}, poff[1] = {0}, pshp[1] = {rank == 0 ? (uint64_t)size : 0};
    EXPECT_OK(h5tile_checkpoint_add(ck, "/group/p", H5TILE_INT32, 1, pg, poff, pshp, f->p));
    const int64_t step = v;
    EXPECT_OK(h5tile_checkpoint_attr(ck, "/", "step", H5TILE_INT64, 1, &step));
    EXPECT_OK(h5tile_checkpoint_attr_string(ck, "/u", "units", "m/s"));
}

/* Every rank reads column rank % 6 of "/u" and the whole of "/p", and checks version v. */
static void check_version(const char *path, int v) {
    const uint64_t rows = 4 * (uint64_t)size;
    uint64_t off[2] = {0, (uint64_t)rank % 6}, shp[2] = {rows, 1};
    double col[4 * 64];
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/u", H5TILE_FLOAT64, 2, off, shp, col, NULL));
    for (uint64_t r = 0; r < rows; r++)
        CHECK_MSG(col[r] == u_value(v, r, off[1]), "%s: /u (%llu, %llu) is %g, expected version %d",
                  path, (unsigned long long)r, (unsigned long long)off[1], col[r], v);
    int32_t p[64];
    const uint64_t poff[1] = {0}, pshp[1] = {(uint64_t)size};
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/group/p", H5TILE_INT32, 1, poff, pshp, p, NULL));
    for (int i = 0; i < size; i++) CHECK_MSG(p[i] == v * 10 + i, "%s: /p[%d] is %d", path, i, p[i]);
    int64_t step = -1;
    EXPECT_OK(h5tile_attr_read(MPI_COMM_WORLD, path, "/", "step", H5TILE_INT64, 1, &step));
    CHECK_MSG(step == v, "%s: attribute step is %lld, expected %d", path, (long long)step, v);
}

/* check_version in one collective call: h5tile_restart_* reads column rank % 6 of "/u", the
 * whole of "/group/p", the step and the units, all from one version of the file. */
static void check_restart(const char *path, int v) {
    const uint64_t rows = 4 * (uint64_t)size;
    const uint64_t off[2] = {0, (uint64_t)rank % 6}, shp[2] = {rows, 1};
    const uint64_t poff[1] = {0}, pshp[1] = {(uint64_t)size};
    double col[4 * 64];
    int32_t p[64];
    int64_t step = -1;
    h5tile_restart *rs = NULL;
    EXPECT_OK(h5tile_restart_begin(MPI_COMM_WORLD, path, NULL, &rs));
    EXPECT_OK(h5tile_restart_field(rs, "/u", H5TILE_FLOAT64, 2, off, shp, col));
    EXPECT_OK(h5tile_restart_field(rs, "/group/p", H5TILE_INT32, 1, poff, pshp, p));
    EXPECT_OK(h5tile_restart_attr(rs, "/", "step", H5TILE_INT64, 1, &step));
    EXPECT_OK(h5tile_restart_read(rs));
    for (uint64_t r = 0; r < rows; r++)
        CHECK_MSG(col[r] == u_value(v, r, off[1]), "restart %s: /u (%llu, %llu) is %g", path,
                  (unsigned long long)r, (unsigned long long)off[1], col[r]);
    for (int i = 0; i < size; i++) CHECK_MSG(p[i] == v * 10 + i, "restart %s: /p[%d] is %d", path, i, p[i]);
    CHECK_MSG(step == v, "restart %s: step is %lld, expected %d", path, (long long)step, v);
    /* A field that is not there fails the read on every rank, naming it; so does an
     * attribute; a NULL buffer fails its call at once and the read on every rank. */
    EXPECT_OK(h5tile_restart_begin(MPI_COMM_WORLD, path, NULL, &rs));
    EXPECT_OK(h5tile_restart_field(rs, "/u", H5TILE_FLOAT64, 2, off, shp, col));
    EXPECT_OK(h5tile_restart_field(rs, "/nothing", H5TILE_FLOAT64, 2, off, shp, col));
    EXPECT_STATUS(h5tile_restart_read(rs), H5TILE_ERR_NOT_FOUND);
    CHECK_MSG(strstr(h5tile_last_error(), "field '/nothing'") != NULL, "%s", h5tile_last_error());
    EXPECT_OK(h5tile_restart_begin(MPI_COMM_WORLD, path, NULL, &rs));
    EXPECT_OK(h5tile_restart_attr(rs, "/", "time", H5TILE_FLOAT64, 1, col));
    EXPECT_STATUS(h5tile_restart_read(rs), H5TILE_ERR_NOT_FOUND);
    CHECK_MSG(strstr(h5tile_last_error(), "attribute 'time' of '/'") != NULL, "%s",
              h5tile_last_error());
    EXPECT_OK(h5tile_restart_begin(MPI_COMM_WORLD, path, NULL, &rs));
    if (rank == 0)
        EXPECT_STATUS(h5tile_restart_field(rs, "/u", H5TILE_FLOAT64, 2, off, shp, NULL),
                      H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(h5tile_restart_read(rs), H5TILE_ERR_INVALID_ARGUMENT);
    h5tile_restart_abort(NULL);
    EXPECT_OK(h5tile_restart_begin(MPI_COMM_WORLD, path, NULL, &rs));
    h5tile_restart_abort(rs);
}

/* A checkpoint of `path` begun, with version v of the fields (in *f) and the attributes. */
static h5tile_checkpoint *begin_with_fields(const char *path, const h5tile_write_options *o,
                                            fields *f, int v) {
    h5tile_checkpoint *ck = NULL;
    EXPECT_OK(h5tile_checkpoint_begin(MPI_COMM_WORLD, path, o, &ck));
    add_fields(ck, f, v);
    return ck;
}

static void commit_version(const char *path, const h5tile_write_options *o, int v) {
    fields f;
    EXPECT_OK(h5tile_checkpoint_commit(begin_with_fields(path, o, &f, v)));
}

/* The commit of `ck` fails on every rank with H5TILE_ERR_INVALID_ARGUMENT, a message that
 * says `says`, and `path` as it was at `before`. */
static void commit_fails_untouched(h5tile_checkpoint *ck, const char *path,
                                   dataset_snapshot before, const char *says) {
    EXPECT_STATUS(h5tile_checkpoint_commit(ck), H5TILE_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(h5tile_last_error(), says) != NULL, "message \"%s\"", h5tile_last_error());
    CHECK_UNTOUCHED(path, before);
}

/* The steps of the checkpoints (ckpt.*.h5 files) in `dir`, as a bit set. */
static unsigned steps_in(const char *dir) {
    int n = 0;
    char **names = list_dir(dir, &n);
    unsigned set = 0;
    for (int i = 0; i < n; i++) {
        unsigned step = 0;
        char tail[8] = "";
        if (sscanf(names[i], "ckpt.%u%7s", &step, tail) == 2 && strcmp(tail, ".h5") == 0 && step < 32)
            set |= 1u << step;
    }
    free_names(names, n);
    return set;
}

/* Flips a byte of the element (0, 1) of "/u" of version v in rank 0's first tile file of
 * the checkpoint whose tile folder is `dir` ("/u" is rank 0's tile 1: "/group/p" sorts first). */
static void damage_u(const char *dir, int v) {
    char victim[4096];
    file_ending(dir, ".r0.t1.h5", victim, sizeof victim);
    long long at = find_value(victim, u_value(v, 0, 1));
    CHECK_MSG(at >= 0, "value not found in %s", victim);
    flip_bit(victim, at + 2);
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_MULTIPLE, &rank, &size);
    CHECK_MSG(size <= 64, "at most 64 ranks");
    h5tile_write_options o = h5tile_write_options_default();

    /* 1. Every layout. */
    const int layouts[3] = {H5TILE_LAYOUT_VDS, H5TILE_LAYOUT_SINGLE, H5TILE_LAYOUT_SUBFILES};
    for (int l = 0; l < 3; l++) {
        char path[4096], tiles[4096];
        PATHF(path, "%s/layout%d.h5", scratch, l);
        TILE_DIR(tiles, path);
        CHECK_CONTEXT("layout %d", layouts[l]);
        o.layout = layouts[l];
        commit_version(path, &o, 1);
        check_version(path, 1);
        commit_version(path, &o, 2);
        check_version(path, 2);
        check_restart(path, 2);
        if (rank == 0 && layouts[l] == H5TILE_LAYOUT_SUBFILES) {
            /* One node here: one subfile for both datasets. */
            CHECK_MSG(count_files(tiles) == 1, "%d files in %s", count_files(tiles), tiles);
        }
        if (rank == 0 && layouts[l] == H5TILE_LAYOUT_VDS) {
            /* Two tiles of "/u" per rank, one of "/p": no file of the first version left. */
            CHECK_MSG(count_files(tiles) == 2 * size + 1, "%d files in %s", count_files(tiles), tiles);
        }
        double x[2];
        EXPECT_STATUS(h5tile_attr_read(MPI_COMM_WORLD, path, "/", "step", H5TILE_FLOAT64, 2, x),
                      H5TILE_ERR_SHAPE);
        EXPECT_STATUS(h5tile_attr_read(MPI_COMM_WORLD, path, "/u", "units", H5TILE_FLOAT64, 1, x),
                      H5TILE_ERR_DTYPE);
        EXPECT_STATUS(h5tile_attr_read(MPI_COMM_WORLD, path, "/", "nothing", H5TILE_FLOAT64, 1, x),
                      H5TILE_ERR_NOT_FOUND);
        EXPECT_STATUS(h5tile_attr_read(MPI_COMM_WORLD, path, "/nowhere", "step", H5TILE_FLOAT64, 1, x),
                      H5TILE_ERR_NOT_FOUND);
    }
    o.layout = H5TILE_LAYOUT_VDS;
    CHECK_CONTEXT("%s", "after the layouts");

    /* 2. Disagreement, and a failed add: the commit fails everywhere, nothing changes. */
    char good[4096];
    PATHF(good, "%s/layout0.h5", scratch);
    dataset_snapshot before = snapshot(good);
    {
        fields f;
        h5tile_checkpoint *ck = begin_with_fields(good, &o, &f, 9);
        if (rank == size - 1) {
            const uint64_t g[1] = {1}, off[1] = {0}, shp[1] = {1};
            EXPECT_OK(h5tile_checkpoint_add(ck, "/extra", H5TILE_FLOAT64, 1, g, off, shp, f.u));
        }
        const h5tile_status want = size > 1 ? H5TILE_ERR_INVALID_ARGUMENT : H5TILE_OK;
        EXPECT_STATUS(h5tile_checkpoint_commit(ck), want);
        if (size > 1) {
            const char *said = "ranks disagree on the datasets: rank 0 passes ['/group/p', '/u']";
            CHECK_MSG(strncmp(h5tile_last_error(), said, strlen(said)) == 0, "message \"%s\"",
                      h5tile_last_error());
            CHECK_UNTOUCHED(good, before);
        }
    }
    before = snapshot(good);
    {
        fields f;
        h5tile_checkpoint *ck = begin_with_fields(good, &o, &f, 8);
        if (rank == 0) {
            /* "/u" again with another type: refused now, and by the commit on every rank. */
            const uint64_t g[2] = {4 * (uint64_t)size, 6}, off[2] = {0, 0}, shp[2] = {0, 6};
            EXPECT_STATUS(h5tile_checkpoint_add(ck, "/u", H5TILE_FLOAT32, 2, g, off, shp, f.u),
                          H5TILE_ERR_INVALID_ARGUMENT);
        }
        commit_fails_untouched(ck, good, before, "was added as float64");
    }

    before = snapshot(good);
    {
        /* A rank that cannot go on marks its checkpoint failed and still commits. */
        fields f;
        h5tile_checkpoint *ck = begin_with_fields(good, &o, &f, 7);
        if (rank == size - 1) EXPECT_OK(h5tile_checkpoint_fail(ck, "the solver diverged"));
        commit_fails_untouched(ck, good, before,
                               "failed on this rank before its commit: the solver diverged");
    }

    /* 3. In the background. */
    {
        char path[4096];
        PATHF(path, "%s/async.h5", scratch);
        fields f;
        h5tile_checkpoint *ck = begin_with_fields(path, &o, &f, 5);
        h5tile_request *req = NULL;
        EXPECT_OK(h5tile_checkpoint_commit_async(ck, &req));
        CHECK(req != NULL);
        EXPECT_OK(h5tile_wait(req));
        check_version(path, 5);
    }

    /* 4. A series. */
    char dir[4096];
    PATHF(dir, "%s/series", scratch);
    h5tile_series_options so = h5tile_series_options_default();
    CHECK(so.keep_last == 0 && so.keep_every == 0);
    so.keep_last = 2;
    so.keep_every = 3;
    const unsigned expected_after[8] = {0, 0x2, 0x6, 0xc, 0x18, 0x38, 0x68, 0xc8};
    for (int step = 1; step <= 7; step++) {
        fields f;
        h5tile_checkpoint *ck = NULL;
        EXPECT_OK(h5tile_series_begin(MPI_COMM_WORLD, dir, (uint64_t)step, &so, &o, &ck));
        add_fields(ck, &f, step);
        EXPECT_OK(h5tile_checkpoint_commit(ck));
        MPI_Barrier(MPI_COMM_WORLD);
        const unsigned kept = steps_in(dir);
        CHECK_MSG(kept == expected_after[step], "after step %d the series holds steps %#x, not %#x",
                  step, kept, expected_after[step]);
    }
    uint64_t step = 0;
    char latest[4096], want[4096];
    PATHF(want, "%s/ckpt.000000000007.h5", dir);
    EXPECT_OK(h5tile_series_latest(MPI_COMM_WORLD, dir, 0, &step, latest, sizeof latest));
    CHECK_MSG(step == 7 && strcmp(latest, want) == 0, "latest is %llu at %s", (unsigned long long)step,
              latest);
    check_version(latest, 7);
    step = 0;
    EXPECT_STATUS(h5tile_series_latest(MPI_COMM_WORLD, dir, 0, &step, latest, 8),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(step == 7);
    /* A crash while writing step 8 left its tile folder, no master. */
    char crashed[4096], crashed_tile[4096];
    PATHF(crashed, "%s/ckpt.000000000008.h5.tiles", dir);
    PATHF(crashed_tile, "%s/u.00000000000000aa.r0.t0.h5", crashed);
    if (rank == 0) {
        mkdir_p(crashed);
        write_text_file(crashed_tile, "half a tile");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_OK(h5tile_series_latest(MPI_COMM_WORLD, dir, 0, &step, NULL, 0));
    CHECK_MSG(step == 7, "latest is %llu", (unsigned long long)step);
    /* Step 7's tile damaged: only a verified search passes over it. */
    char tiles7[4096];
    TILE_DIR(tiles7, want);
    damage_u(tiles7, 7);
    EXPECT_OK(h5tile_series_latest(MPI_COMM_WORLD, dir, 0, &step, NULL, 0));
    CHECK(step == 7);
    EXPECT_OK(h5tile_series_latest(MPI_COMM_WORLD, dir, H5TILE_SERIES_VERIFY, &step, latest,
                                   sizeof latest));
    CHECK_MSG(step == 6, "the verified latest is %llu", (unsigned long long)step);
    /* ...and says on every rank which step it skipped, and why (a checksum). */
    const char *skipped = h5tile_series_skipped();
    CHECK_MSG(strstr(skipped, "took step 6, skipping 1 newer") != NULL &&
                  strstr(skipped, "step 7 (") != NULL && strstr(skipped, "checksum") != NULL,
              "after a verified latest that skipped step 7: '%s'", skipped);
    EXPECT_OK(h5tile_series_latest(MPI_COMM_WORLD, dir, 0, &step, NULL, 0));
    CHECK_MSG(h5tile_series_skipped()[0] == '\0', "an unverified latest says '%s'",
              h5tile_series_skipped());
    EXPECT_STATUS(h5tile_series_latest(MPI_COMM_WORLD, dir, 2, &step, NULL, 0),
                  H5TILE_ERR_INVALID_ARGUMENT);
    char empty[4096];
    PATHF(empty, "%s/empty", scratch);
    if (rank == 0) mkdir_p(empty);
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_STATUS(h5tile_series_latest(MPI_COMM_WORLD, empty, 0, &step, NULL, 0), H5TILE_ERR_NOT_FOUND);
    PATHF(empty, "%s/no-such-folder", scratch);
    EXPECT_STATUS(h5tile_series_latest(MPI_COMM_WORLD, empty, 0, &step, NULL, 0), H5TILE_ERR_NOT_FOUND);
    /* The next clean commit removes the crash's leftovers of older steps and keeps the rule. */
    {
        fields f;
        h5tile_checkpoint *ck = NULL;
        EXPECT_OK(h5tile_series_begin(MPI_COMM_WORLD, dir, 9, &so, &o, &ck));
        add_fields(ck, &f, 9);
        EXPECT_OK(h5tile_checkpoint_commit(ck));
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_MSG(steps_in(dir) == 0x2c8, "the series holds steps %#x", steps_in(dir));
        CHECK_MSG(!path_exists(crashed), "%s is left", crashed);
    }

    /* 5. Bad arguments. */
    h5tile_checkpoint *ck = (h5tile_checkpoint *)&o; /* must be reset to NULL */
    EXPECT_STATUS(h5tile_checkpoint_begin(MPI_COMM_WORLD, NULL, &o, &ck), H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(ck == NULL);
    EXPECT_STATUS(h5tile_checkpoint_commit(NULL), H5TILE_ERR_INVALID_ARGUMENT);
    h5tile_checkpoint_abort(NULL);
    EXPECT_OK(h5tile_checkpoint_begin(MPI_COMM_WORLD, good, &o, &ck));
    h5tile_checkpoint_abort(ck);

    MPI_Finalize();
    return 0;
}
