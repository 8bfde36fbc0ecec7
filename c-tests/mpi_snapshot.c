/* Snapshot writes (H5TILE_SNAPSHOT) under MPI_Init_thread(MPI_THREAD_MULTIPLE), where an
 * asynchronous write over a communicator runs in the background: the caller overwrites (or
 * frees) its buffers as soon as the call returns, and the file must hold what they held at the
 * call. Each rank owns a 4 MiB float64 slab of 512 rows x 1024; files are read back with their
 * checksums verified, each rank reading its neighbour's slab.
 *   1. h5tile_write_async in the VDS, subfiled and single-file layouts and VDS with zstd, the
 *      buffer overwritten at once (freed, and its memory handed out again, for the single file);
 *   2. h5tile_write_tiles_async of two tiles per rank, the same two buffers (and the same
 *      array of pointers) refilled at once for a second write started while the first runs;
 *      a checkpoint of two fields committed with h5tile_checkpoint_commit_async; a series whose
 *      options come from h5tile_series_begin, four steps committed so and all in flight,
 *      h5tile_series_latest naming the last, each step whole and holding the data at its call;
 *   3. budgets, checked first (H5TILE_LOG=info, set here, says what each snapshot staged; its
 *      line is read from this rank's stderr, sent to a file during the call): staging_bytes
 *      under the tile (nothing staged, the tile written before the call returns), room for one
 *      of two tiles, room for one of two snapshots in flight; H5TILE_STAGING_BYTES set with
 *      setenv (read at each snapshot call); a bad H5TILE_STAGING_BYTES refused at the call on
 *      every rank with *req NULL and no file made, but not where staging_bytes gives the
 *      budget, nor without the flag; h5tile_reserve_staging refused over its budget and for
 *      a NULL array of sizes, accepted within it, a snapshot staging its tile whole after it;
 *   4. h5tile_test polled (no sleep) until done, then h5tile_wait returns the write's status,
 *      a failure too (H5TILE_NO_OVERWRITE, the file untouched); a request completed by a fence
 *      is done at once; h5tile_test with a NULL request or a NULL done;
 *   5. snapshots in flight to four files (one per layout), completed by h5tile_fence.
 *   mpi_snapshot SCRATCH_DIR */
#include "check.h"

#include <sched.h>

#define ROWS 512  /* of each rank's slab */
#define COLS 1024
#define SLAB ((size_t)ROWS * COLS)
#define MIB (1024.0 * 1024.0)

static int rank, size;
static const char *scratch;
static uint64_t g[2], off[2];
static const uint64_t shp[2] = {ROWS, COLS};
static double *back; /* a slab read back */

/* Element (r, c) of version v of the (ROWS * size) x COLS array. */
static double value(int v, uint64_t r, uint64_t c) { return v * 1e7 + (double)(r * COLS + c); }

/* Fills a slab of `rows` rows starting at global row `row0` with version v. */
static void fill_rows(int v, uint64_t row0, uint64_t rows, double *buf) {
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < COLS; c++) buf[r * COLS + c] = value(v, row0 + r, c);
}

static void fill(int v, double *buf) { fill_rows(v, off[0], ROWS, buf); }

/* Every rank reads the slab of the next rank of `dataset` in `path`, checksums verified (the
 * default), and checks it against version v. */
static void check_slab(const char *path, const char *dataset, int v) {
    const int other = (rank + 1) % size;
    const uint64_t o[2] = {(uint64_t)other * ROWS, 0};
    memset(back, 0, SLAB * sizeof *back);
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, dataset, H5TILE_FLOAT64, 2, o, shp, back, NULL));
    for (size_t i = 0; i < SLAB; i++) {
        const uint64_t r = o[0] + i / COLS, c = i % COLS;
        if (back[i] != value(v, r, c)) {
            /* Name the version the element does hold, if any (the one after the call, say). */
            double held = (back[i] - (double)(r * COLS + c)) / 1e7;
            check_fail(__FILE__, __LINE__,
                       "%s %s: (%llu, %llu) is %.1f (version %g), expected version %d, the "
                       "data at the call",
                       path, dataset, (unsigned long long)r, (unsigned long long)c, back[i], held,
                       v);
        }
    }
}

static h5tile_write_options snapshot_options(h5tile_layout layout, h5tile_compression codec) {
    h5tile_write_options o = h5tile_write_options_default();
    o.flags = H5TILE_SNAPSHOT;
    o.layout = layout;
    o.compression = codec;
    return o;
}

/* `name` in the scratch folder. */
#define AT(buf, name) PATHF(buf, "%s/%s", scratch, name)

/* ------------------------------------------------------------ 1. layouts */

static void test_layouts(double *buf) {
    static const struct {
        const char *name;
        h5tile_layout layout;
        h5tile_compression codec;
    } cases[] = {
        {"vds", H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_NONE},
        {"subfiles", H5TILE_LAYOUT_SUBFILES, H5TILE_COMPRESS_NONE},
        {"single", H5TILE_LAYOUT_SINGLE, H5TILE_COMPRESS_NONE},
        {"zstd", H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_ZSTD},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char path[4096], file[64];
        snprintf(file, sizeof file, "%s.h5", cases[k].name);
        AT(path, file);
        CHECK_CONTEXT("write_async of %s", path);
        const int v = 1 + (int)k;
        h5tile_write_options o = snapshot_options(cases[k].layout, cases[k].codec);
        h5tile_request *req = NULL;
        const int freed = cases[k].layout == H5TILE_LAYOUT_SINGLE;
        double *mine = freed ? (double *)xmalloc(SLAB * sizeof(double)) : buf;
        fill(v, mine);
        EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp,
                                     mine, &o, &req));
        CHECK(req != NULL);
        if (freed) {
            /* Freed at once (a block this large is unmapped), and the memory handed out again. */
            free(mine);
            double *next = (double *)xmalloc(SLAB * sizeof(double));
            fill(v + 50, next);
            EXPECT_OK(h5tile_wait(req));
            free(next);
        } else {
            fill(v + 50, mine); /* the solver's next step, at once */
            EXPECT_OK(h5tile_wait(req));
        }
        check_slab(path, "/x", v);
    }
}

/* ------------------------------------------------- 2. several tiles, checkpoints, series */

static void test_write_tiles(void) {
    char p1[4096], p2[4096];
    AT(p1, "tiles1.h5");
    AT(p2, "tiles2.h5");
    CHECK_CONTEXT("write_tiles_async");
    /* This rank's slab as two tiles of ROWS / 2 rows. */
    const size_t half = SLAB / 2;
    double *t0 = (double *)xmalloc(half * sizeof(double));
    double *t1 = (double *)xmalloc(half * sizeof(double));
    const uint64_t offs[4] = {off[0], 0, off[0] + ROWS / 2, 0};
    const uint64_t shps[4] = {ROWS / 2, COLS, ROWS / 2, COLS};
    h5tile_write_options o = snapshot_options(H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_NONE);
    h5tile_request *r1 = NULL, *r2 = NULL;
    const void *bufs[2] = {t0, t1};
    fill_rows(11, offs[0], ROWS / 2, t0);
    fill_rows(11, offs[2], ROWS / 2, t1);
    EXPECT_OK(h5tile_write_tiles_async(MPI_COMM_WORLD, p1, "/x", H5TILE_FLOAT64, 2, g, 2, offs,
                                       shps, bufs, &o, &r1));
    bufs[0] = bufs[1] = NULL; /* the array of pointers may be reused at once too */
    /* The next step in the same buffers, written while the first still runs. */
    fill_rows(12, offs[0], ROWS / 2, t0);
    fill_rows(12, offs[2], ROWS / 2, t1);
    bufs[0] = t0;
    bufs[1] = t1;
    EXPECT_OK(h5tile_write_tiles_async(MPI_COMM_WORLD, p2, "/x", H5TILE_FLOAT64, 2, g, 2, offs,
                                       shps, bufs, &o, &r2));
    fill_rows(13, offs[0], ROWS / 2, t0);
    fill_rows(13, offs[2], ROWS / 2, t1);
    EXPECT_OK(h5tile_wait(r1));
    EXPECT_OK(h5tile_wait(r2));
    check_slab(p1, "/x", 11);
    check_slab(p2, "/x", 12);
    free(t0);
    free(t1);
}

/* A vector of `size` * 100 int32, 100 per rank: element i of version v is v * 100000 + i. */
static void fill_n(int v, int32_t *n) {
    for (int i = 0; i < 100; i++) n[i] = v * 100000 + rank * 100 + i;
}

static void check_n(const char *path, int v) {
    const uint64_t ng[1] = {100 * (uint64_t)size}, o[1] = {0};
    int32_t *all = (int32_t *)xmalloc(ng[0] * sizeof(int32_t));
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/n", H5TILE_INT32, 1, o, ng, all, NULL));
    for (uint64_t i = 0; i < ng[0]; i++)
        CHECK_MSG(all[i] == v * 100000 + (int32_t)i, "%s /n[%llu] is %d, expected version %d",
                  path, (unsigned long long)i, (int)all[i], v);
    free(all);
}

/* Adds "/u" (this rank's slab) and "/n" (its 100 elements) to ck. */
static void add_fields(h5tile_checkpoint *ck, const double *u, const int32_t *n) {
    const uint64_t ng[1] = {100 * (uint64_t)size}, noff[1] = {100 * (uint64_t)rank},
                   nshp[1] = {100};
    EXPECT_OK(h5tile_checkpoint_add(ck, "/u", H5TILE_FLOAT64, 2, g, off, shp, u));
    EXPECT_OK(h5tile_checkpoint_add(ck, "/n", H5TILE_INT32, 1, ng, noff, nshp, n));
}

static void test_checkpoint(double *u) {
    char path[4096];
    AT(path, "ck.h5");
    CHECK_CONTEXT("checkpoint_commit_async of %s", path);
    int32_t n[100];
    h5tile_write_options o = snapshot_options(H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_NONE);
    h5tile_checkpoint *ck = NULL;
    EXPECT_OK(h5tile_checkpoint_begin(MPI_COMM_WORLD, path, &o, &ck));
    fill(21, u);
    fill_n(21, n);
    add_fields(ck, u, n);
    h5tile_request *req = NULL;
    EXPECT_OK(h5tile_checkpoint_commit_async(ck, &req));
    CHECK(req != NULL);
    fill(22, u);
    fill_n(22, n);
    EXPECT_OK(h5tile_wait(req));
    check_slab(path, "/u", 21);
    check_n(path, 21);
}

static void test_series(double *u) {
    char dir[4096], latest[4096], want[4096];
    AT(dir, "series");
    CHECK_CONTEXT("series in %s", dir);
    int32_t n[100];
    /* The flag comes from the options given to h5tile_series_begin. A solver snapshots every
     * few steps without waiting: SERIES_STEPS commits in flight at once, from one buffer. */
    enum { SERIES_STEPS = 4 };
    h5tile_write_options o = snapshot_options(H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_NONE);
    h5tile_request *reqs[SERIES_STEPS];
    for (int step = 1; step <= SERIES_STEPS; step++) {
        h5tile_checkpoint *ck = NULL;
        EXPECT_OK(h5tile_series_begin(MPI_COMM_WORLD, dir, (uint64_t)step, NULL, &o, &ck));
        fill(30 + step, u);
        fill_n(30 + step, n);
        add_fields(ck, u, n);
        EXPECT_OK(h5tile_checkpoint_commit_async(ck, &reqs[step - 1]));
    }
    fill(39, u); /* every step in flight; the buffers change again */
    fill_n(39, n);
    for (int step = 1; step <= SERIES_STEPS; step++) {
        CHECK_CONTEXT("series in %s: step %d", dir, step);
        EXPECT_OK(h5tile_wait(reqs[step - 1]));
    }
    CHECK_CONTEXT("series in %s", dir);
    uint64_t step = 0;
    EXPECT_OK(h5tile_series_latest(MPI_COMM_WORLD, dir, H5TILE_SERIES_VERIFY, &step, latest,
                                   sizeof latest));
    CHECK_MSG(step == SERIES_STEPS, "the latest step is %llu, expected %d",
              (unsigned long long)step, SERIES_STEPS);
    PATHF(want, "%s/ckpt.%012d.h5", dir, SERIES_STEPS);
    CHECK_MSG(strcmp(latest, want) == 0, "the latest is '%s', expected '%s'", latest, want);
    /* Every step whole (retention keeps them all), holding the data at its own call. */
    for (int s = 1; s <= SERIES_STEPS; s++) {
        PATHF(want, "%s/ckpt.%012d.h5", dir, s);
        check_slab(want, "/u", 30 + s);
        check_n(want, 30 + s);
    }
}

/* ------------------------------------------------------------ 3. budgets */

/* What H5TILE_LOG=info said of one snapshot, in MiB. */
typedef struct {
    double staged, left, budget;
} staging_report;

/* The number of MiB just before `words` in `text`, or -1. */
static double mib_before(const char *text, const char *words) {
    const char *at = strstr(text, words);
    if (at == NULL) return -1;
    const char *start = at;
    while (start > text && (start[-1] == '.' || (start[-1] >= '0' && start[-1] <= '9'))) start--;
    return start == at ? -1 : atof(start);
}

/* The line "h5tile_gds info: snapshot of '<path>': X MiB copied into staging memory (...),
 * written from there in the background; Y MiB over the budget (...), written from the caller's
 * buffers before the call returns (budget Z MiB)" of `log`
 * (only those words are read: what the parentheses hold may change); dies unless there is
 * exactly one. */
static staging_report read_report(const char *log, const char *path) {
    FILE *f = fopen(log, "r");
    CHECK_MSG(f != NULL, "fopen '%s': %s", log, strerror(errno));
    char line[8192], head[4200];
    snprintf(head, sizeof head, "snapshot of '%s': ", path);
    staging_report rep = {-1, -1, -1};
    int found = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        const char *at = strstr(line, head);
        if (at == NULL) continue;
        found++;
        const char *budget = strstr(at, "(budget ");
        rep.staged = mib_before(at, " MiB copied into staging memory");
        rep.left = mib_before(at, " MiB over the budget");
        rep.budget = budget ? atof(budget + strlen("(budget ")) : -1;
        CHECK_MSG(rep.staged >= 0 && rep.left >= 0 && rep.budget > 0,
                  "unexpected snapshot line in %s: %s", log, line);
    }
    fclose(f);
    CHECK_MSG(found == 1, "%d H5TILE_LOG lines for the snapshot of '%s' in %s, expected 1", found,
              path, log);
    return rep;
}

/* Checks what a snapshot staged: `staged` MiB staged, `left` MiB left in the caller's buffers,
 * under a budget of `budget` MiB. */
static void check_report(staging_report rep, double staged, double left, double budget,
                         const char *what) {
    CHECK_MSG(rep.staged == staged && rep.left == left && rep.budget == budget,
              "%s: %.1f MiB staged, %.1f left, budget %.1f; expected %.1f staged, %.1f left, "
              "budget %.1f",
              what, rep.staged, rep.left, rep.budget, staged, left, budget);
    CHECK_MSG(rep.staged <= rep.budget, "%s: more staged than the budget", what);
}

/* h5tile_write_async of `buf` (version v) to `name` with `o`, this rank's stderr captured
 * meanwhile; the buffer is overwritten at once. Returns the request; *rep gets the log line. */
static h5tile_request *logged_write(const char *name, const h5tile_write_options *o,
                                    double *buf, int v, staging_report *rep) {
    char path[4096], log[4096];
    AT(path, name);
    PATHF(log, "%s.stderr.r%d", path, rank);
    h5tile_request *req = NULL;
    fill(v, buf);
    capture_stderr(log);
    h5tile_status st = h5tile_write_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off,
                                          shp, buf, o, &req);
    restore_stderr();
    EXPECT_OK(st);
    fill(v + 50, buf);
    *rep = read_report(log, path);
    return req;
}

/* h5tile_reserve_staging: refused over its budget (nothing reserved) and for a NULL array of
 * sizes; within it, OK, and the next snapshot of such a tile stages it whole. (That the first
 * snapshot then costs what the next ones do is make bench's to measure.) */
static void test_reserve(double *buf) {
    CHECK_CONTEXT("h5tile_reserve_staging");
    const double slab_mib = (double)(SLAB * sizeof(double)) / MIB;
    const uint64_t big[1] = {(uint64_t)64 << 20};
    EXPECT_STATUS(h5tile_reserve_staging(big, 1, 1 << 20), H5TILE_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(h5tile_last_error(), "exceed the budget") != NULL, "%s",
              h5tile_last_error());
    EXPECT_STATUS(h5tile_reserve_staging(NULL, 1, 0), H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_OK(h5tile_reserve_staging(NULL, 0, 0));
    const uint64_t tiles[2] = {SLAB * sizeof(double), SLAB * sizeof(double) / 2};
    EXPECT_OK(h5tile_reserve_staging(tiles, 2, (uint64_t)64 << 20));
    h5tile_write_options o = snapshot_options(H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_NONE);
    o.staging_bytes = (uint64_t)64 << 20;
    staging_report rep;
    h5tile_request *req = logged_write("reserved.h5", &o, buf, 65, &rep);
    check_report(rep, slab_mib, 0, 64, "a snapshot after a reservation");
    EXPECT_OK(h5tile_wait(req));
    char path[4096];
    AT(path, "reserved.h5");
    check_slab(path, "/x", 65);
}

static void test_budgets(double *buf, double *buf2) {
    char path[4096], path2[4096];
    staging_report rep, rep2;
    const double slab_mib = (double)(SLAB * sizeof(double)) / MIB; /* 4 */

    /* A budget under the tile: nothing staged, the tile written before the call returns. */
    CHECK_CONTEXT("a budget of 1 MiB");
    h5tile_write_options o = snapshot_options(H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_NONE);
    o.staging_bytes = 1 << 20;
    h5tile_request *req = logged_write("budget1.h5", &o, buf, 61, &rep);
    check_report(rep, 0, slab_mib, 1, "a 4 MiB tile under a 1 MiB budget");
    EXPECT_OK(h5tile_wait(req));
    AT(path, "budget1.h5");
    check_slab(path, "/x", 61);

    /* Room for one of two tiles: one staged, the other written before the call returns. */
    CHECK_CONTEXT("a budget of 3 MiB for two tiles of 2 MiB");
    AT(path, "budget2.h5");
    char log[4096];
    PATHF(log, "%s.stderr.r%d", path, rank);
    const uint64_t offs[4] = {off[0], 0, off[0] + ROWS / 2, 0};
    const uint64_t shps[4] = {ROWS / 2, COLS, ROWS / 2, COLS};
    o.staging_bytes = 3 << 20;
    fill(62, buf);
    const void *bufs[2] = {buf, buf + SLAB / 2};
    capture_stderr(log);
    h5tile_status st = h5tile_write_tiles_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2,
                                                g, 2, offs, shps, bufs, &o, &req);
    restore_stderr();
    EXPECT_OK(st);
    fill(62 + 50, buf);
    check_report(read_report(log, path), slab_mib / 2, slab_mib / 2, 3,
                 "two 2 MiB tiles under a 3 MiB budget");
    EXPECT_OK(h5tile_wait(req));
    check_slab(path, "/x", 62);

    /* Room for one of two snapshots: the second waits for the first to drain. */
    CHECK_CONTEXT("two snapshots under a budget of 5 MiB");
    o.staging_bytes = 5 << 20;
    h5tile_request *r1 = logged_write("budget3a.h5", &o, buf, 63, &rep);
    h5tile_request *r2 = logged_write("budget3b.h5", &o, buf, 64, &rep2);
    check_report(rep, slab_mib, 0, 5, "the first of two snapshots under 5 MiB");
    check_report(rep2, slab_mib, 0, 5, "the second of two snapshots under 5 MiB");
    EXPECT_OK(h5tile_wait(r1));
    EXPECT_OK(h5tile_wait(r2));
    AT(path, "budget3a.h5");
    AT(path2, "budget3b.h5");
    check_slab(path, "/x", 63);
    check_slab(path2, "/x", 64);

    /* H5TILE_STAGING_BYTES gives the budget where staging_bytes is 0; it is read at each
     * snapshot call, so setenv works (no write is in flight while it changes). */
    CHECK_CONTEXT("H5TILE_STAGING_BYTES=1M");
    CHECK(setenv("H5TILE_STAGING_BYTES", "1M", 1) == 0);
    o.staging_bytes = 0;
    req = logged_write("budget4.h5", &o, buf, 65, &rep);
    check_report(rep, 0, slab_mib, 1, "a 4 MiB tile under H5TILE_STAGING_BYTES=1M");
    EXPECT_OK(h5tile_wait(req));
    AT(path, "budget4.h5");
    check_slab(path, "/x", 65);

    /* A bad value: refused at the call on every rank, nothing started, no file made. */
    CHECK_CONTEXT("H5TILE_STAGING_BYTES=lots");
    CHECK(setenv("H5TILE_STAGING_BYTES", "lots", 1) == 0);
    AT(path, "never.h5");
    req = (h5tile_request *)&req; /* anything but NULL */
    EXPECT_STATUS(h5tile_write_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp,
                                     buf, &o, &req),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(req == NULL);
    CHECK_MSG(strstr(h5tile_last_error(), "H5TILE_STAGING_BYTES=lots") != NULL,
              "the message names the variable: \"%s\"", h5tile_last_error());
    req = (h5tile_request *)&req;
    EXPECT_STATUS(h5tile_write_tiles_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, 2,
                                           offs, shps, bufs, &o, &req),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(req == NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    char tiles[4096];
    TILE_DIR(tiles, path);
    CHECK_MSG(!path_exists(path) && !path_exists(tiles), "a refused snapshot made '%s'", path);
    /* Not read where the options give the budget, nor without the flag. */
    CHECK_CONTEXT("H5TILE_STAGING_BYTES=lots, staging_bytes given or no flag");
    o.staging_bytes = 8 << 20;
    AT(path, "budget5.h5");
    fill(66, buf);
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp,
                                 buf, &o, &req));
    fill(66 + 50, buf);
    EXPECT_OK(h5tile_wait(req));
    check_slab(path, "/x", 66);
    h5tile_write_options plain = h5tile_write_options_default();
    fill(67, buf2);
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp,
                                 buf2, &plain, &req));
    EXPECT_OK(h5tile_wait(req)); /* buf2 left alone: no snapshot */
    check_slab(path, "/x", 67);
    CHECK(unsetenv("H5TILE_STAGING_BYTES") == 0);
}

/* ------------------------------------------------------------ 4. h5tile_test */

/* Polls req until h5tile_test says it is done (never waiting, as a solver between steps);
 * returns how many polls said not yet. */
static long poll_until_done(h5tile_request *req) {
    long polls = 0;
    for (;;) {
        int done = -1;
        EXPECT_OK(h5tile_test(req, &done));
        CHECK_MSG(done == 0 || done == 1, "h5tile_test set done to %d", done);
        if (done) break;
        polls++;
        sched_yield(); /* the core to the write's thread */
    }
    int again = -1;
    EXPECT_OK(h5tile_test(req, &again));
    CHECK_MSG(again == 1, "done, then h5tile_test says %d", again);
    return polls;
}

static void test_polling(double *buf) {
    char path[4096];
    AT(path, "polled.h5");
    CHECK_CONTEXT("h5tile_test of %s", path);
    h5tile_write_options o = snapshot_options(H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_NONE);
    h5tile_request *req = NULL;
    fill(71, buf);
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp, buf,
                                 &o, &req));
    fill(71 + 50, buf);
    long polls = poll_until_done(req);
    EXPECT_OK(h5tile_wait(req));
    check_slab(path, "/x", 71);

    /* A write that fails (the file exists): done, then wait gives its status on every rank. */
    dataset_snapshot before = {0, 0, 0};
    if (rank == 0) before = snapshot(path);
    MPI_Barrier(MPI_COMM_WORLD);
    o.flags = H5TILE_SNAPSHOT | H5TILE_NO_OVERWRITE;
    fill(72, buf);
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp, buf,
                                 &o, &req));
    fill(72 + 50, buf);
    poll_until_done(req);
    EXPECT_STATUS(h5tile_wait(req), H5TILE_ERR_EXISTS);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK_UNTOUCHED(path, before);
    check_slab(path, "/x", 71);

    /* Completed by a fence: done at once, and wait still gives its status. */
    o.flags = H5TILE_SNAPSHOT;
    fill(73, buf);
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp, buf,
                                 &o, &req));
    fill(73 + 50, buf);
    EXPECT_OK(h5tile_fence(MPI_COMM_WORLD));
    int done = -1;
    EXPECT_OK(h5tile_test(req, &done));
    CHECK_MSG(done == 1, "after a fence, h5tile_test says %d", done);
    EXPECT_OK(h5tile_wait(req));
    check_slab(path, "/x", 73);

    /* Bad arguments: a NULL request (done set to 0), a NULL done (the request left alone). */
    done = 7;
    EXPECT_STATUS(h5tile_test(NULL, &done), H5TILE_ERR_INVALID_ARGUMENT);
    CHECK_MSG(done == 0, "h5tile_test(NULL, &done) left done at %d", done);
    fill(74, buf);
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp, buf,
                                 &o, &req));
    EXPECT_STATUS(h5tile_test(req, NULL), H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_OK(h5tile_wait(req));
    check_slab(path, "/x", 74);
    if (rank == 0) printf("mpi_snapshot: polled h5tile_test %ld times before done\n", polls);
}

/* ------------------------------------------------------------ 5. fence */

static void test_fence(double *buf) {
    static const struct {
        const char *name;
        h5tile_layout layout;
        h5tile_compression codec;
    } files[] = {
        {"fenced_vds.h5", H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_NONE},
        {"fenced_subfiles.h5", H5TILE_LAYOUT_SUBFILES, H5TILE_COMPRESS_NONE},
        {"fenced_single.h5", H5TILE_LAYOUT_SINGLE, H5TILE_COMPRESS_NONE},
        {"fenced_zstd.h5", H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_ZSTD},
    };
    const int nfiles = (int)(sizeof files / sizeof files[0]);
    CHECK_CONTEXT("snapshots completed by a fence");
    for (int k = 0; k < nfiles; k++) {
        char path[4096];
        AT(path, files[k].name);
        h5tile_write_options o = snapshot_options(files[k].layout, files[k].codec);
        fill(81 + k, buf); /* each call's data, the previous call's overwritten */
        EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp,
                                     buf, &o, NULL));
    }
    fill(99, buf);
    EXPECT_OK(h5tile_fence(MPI_COMM_WORLD));
    for (int k = 0; k < nfiles; k++) {
        char path[4096];
        AT(path, files[k].name);
        check_slab(path, "/x", 81 + k);
    }
}

int main(int argc, char **argv) {
    /* One line per snapshot saying what it staged (read back by the budget tests); the level
     * is read once, so before the first h5tile call. */
    CHECK(setenv("H5TILE_LOG", "info", 1) == 0);
    CHECK(unsetenv("H5TILE_STAGING_BYTES") == 0);
    scratch = mpi_test_start(&argc, &argv, MPI_THREAD_MULTIPLE, &rank, &size);
    g[0] = (uint64_t)ROWS * (uint64_t)size;
    g[1] = COLS;
    off[0] = (uint64_t)ROWS * (uint64_t)rank;
    off[1] = 0;
    double *buf = (double *)xmalloc(SLAB * sizeof(double));
    double *buf2 = (double *)xmalloc(SLAB * sizeof(double));
    back = (double *)xmalloc(SLAB * sizeof(double));

    /* Budgets first, while the process keeps no staging memory from snapshots made under
     * the default budget: the second of two snapshots then waits for the first to drain. */
    test_budgets(buf, buf2);
    test_reserve(buf);
    test_layouts(buf);
    test_write_tiles();
    test_checkpoint(buf);
    test_series(buf);
    test_polling(buf);
    test_fence(buf);

    EXPECT_OK(h5tile_fence(MPI_COMM_WORLD)); /* nothing left outstanding */
    free(buf);
    free(buf2);
    free(back);
    MPI_Finalize();
    if (rank == 0) printf("mpi_snapshot: OK on %d ranks\n", size);
    return 0;
}
