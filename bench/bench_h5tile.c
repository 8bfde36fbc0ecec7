/* One measurement of h5tile, for bench/suite.py, which runs each in its own process (so peak
 * memory is the mode's own) and interleaves rounds. Prints one JSON line (scale: one a layout).
 *
 *   bench_h5tile write       FILE ROWS COLS          each rank writes its row slab (1-D split)
 *   bench_h5tile read        FILE ROWS COLS          each rank reads its row slab, sums it
 *   bench_h5tile pwrite      FILE ROWS COLS          each rank writes its row slab's bytes with
 *                                                   pwrite into a new file of its own
 *                                                   (FILE.rK), no fsync: what H5TILE_NO_SYNC
 *                                                   writes are compared with
 *   bench_h5tile read_pairs  FILE ROWS COLS N [OTHER] each rank reads its row slab 2N times into
 *                                                   one buffer, checked and H5TILE_READ_NO_VERIFY
 *                                                   taking turns (which goes first alternating),
 *                                                   after one untimed read of each; a JSON line
 *                                                   a read with its "kind". With OTHER (the same
 *                                                   data in another layout), both checked: FILE
 *                                                   (kind "file") and OTHER (kind "other")
 *   bench_h5tile write_grid  FILE ROWS COLS NTILES   NTILES tiles (a square grid) written by the
 *                                                   ranks, each a consecutive share of the tiles
 *                                                   in row-major order (one process: all of
 *                                                   them, with MPI_COMM_NULL)
 *   bench_h5tile write_single FILE ROWS COLS         one process writes one contiguous file
 *   bench_h5tile read_whole  FILE ROWS COLS          one process opens and reads it all, sums it
 *   bench_h5tile read_tile   FILE ROWS COLS NTILES   one process reads the middle tile of
 *                                                   write_grid's grid (after HDF5 has started,
 *                                                   as for "open")
 *   bench_h5tile open        FILE ROWS COLS          one process opens the dataset (h5tile_inspect)
 *                                                   and checks its shape, after a first
 *                                                   h5tile_inspect of a file that is not HDF5
 *                                                   (this program) has started HDF5
 *   bench_h5tile batched     FILE ROWS COLS CHUNK    the ranks sum it in CHUNK x CHUNK chunks,
 *                                                   each rank the chunks the library deals it,
 *                                                   into a buffer written before the timer
 *   bench_h5tile batched_view FILE ROWS COLS CHUNK   the same through h5tile_batches_next_view
 *   bench_h5tile batched_pairs FILE ROWS COLS N CHUNK in one process: each rank reads its
 *                                                   row slab into a buffer it wrote beforehand
 *                                                   (a solver's restart reads into memory it
 *                                                   holds), and the two batched modes (CHUNK x
 *                                                   CHUNK), each summing, taking turns (which
 *                                                   goes first shifting), N of each after one
 *                                                   untimed; a JSON line a pass with its "kind"
 *   bench_h5tile compute     FILE ROWS COLS SWEEPS   each rank computes alone: SWEEPS sweeps over
 *                                                   a 64 MiB array of its own (FILE unused)
 *   bench_h5tile overlap     FILE ROWS COLS SWEEPS   "write" (h5tile_write), then that computation
 *   bench_h5tile overlap_async FILE ROWS COLS SWEEPS h5tile_write_async, the computation while
 *                                                   it writes, then h5tile_wait (under
 *                                                   MPI_THREAD_MULTIPLE)
 *   bench_h5tile checkpoint  FILE ROWS COLS NFIELDS one checkpoint commit of NFIELDS fields of
 *                                                   ROWS x COLS, each rank adding its row slab
 *                                                   of each (one buffer for all)
 *   bench_h5tile fields      FILE ROWS COLS NFIELDS the same fields as NFIELDS h5tile_writes
 *                                                   with H5TILE_KEEP_OTHERS (before checkpoints)
 *   bench_h5tile solver_memcpy   FILE ROWS COLS N    solver time (MPI_THREAD_MULTIPLE, like all
 *                                                   solver_ modes): N memcpys of the rank's tile
 *                                                   into a buffer touched beforehand (FILE unused)
 *   bench_h5tile solver_snapshot FILE ROWS COLS N    N h5tile_write_async calls with
 *                                                   H5TILE_SNAPSHOT in a row, to FILE, each timed
 *                                                   from call to return, then waited (not timed);
 *                                                   BENCH_RESERVE=1: h5tile_reserve_staging of
 *                                                   the tile first (not timed)
 *   bench_h5tile solver_async    FILE ROWS COLS N    N h5tile_write_async + h5tile_wait, timed
 *   bench_h5tile solver_write    FILE ROWS COLS N    N h5tile_write, timed
 *                                                   (these four print "calls_s", each call's time,
 *                                                   the slowest rank's; "first_s", the first;
 *                                                   "steady_s", the median of the others)
 *   bench_h5tile solver_compute  FILE ROWS COLS N    a compute loop in steps of ~10 ms (calibrated
 *                                                   on rank 0): N steps alone, a snapshot write
 *                                                   (after one unmeasured, so staging memory is
 *                                                   there as in a solver's later checkpoints) with
 *                                                   steps while it drains, polled by h5tile_test
 *                                                   between steps, then N steps alone again;
 *                                                   "ratio": mean step alone / mean step while it
 *                                                   drains, the lowest over the ranks
 *   bench_h5tile solver_rss      FILE ROWS COLS N    N snapshot writes to FILE in a row, each
 *                                                   waited before the next; the resident set
 *                                                   (/proc/self/statm) after the first and the
 *                                                   last, the largest over the ranks
 *   bench_h5tile scale       DIR ROWS COLS SPEC...   "write" once per SPEC, each to
 *                                                   DIR/SPEC/field.h5 (one launch of many ranks
 *                                                   for every layout); SPEC is LAYOUT[-kK][-nosync]
 *                                                   (-kK: ranks_per_file = K), e.g. vds, single,
 *                                                   subfiles, subfiles-k8, subfiles-k8-nosync
 *
 * Layout and flags of "write", "write_grid", "checkpoint", "fields", "overlap",
 * "overlap_async" and the solver_ writes (environment):
 *   BENCH_LAYOUT=vds|single|subfiles|auto h5tile_write_options.layout (default vds;
 *                                      write_grid with NTILES = 1 and write_single: single;
 *                                      auto: H5TILE_LAYOUT_AUTO, the default's own choice)
 *   BENCH_NO_SYNC=1                    H5TILE_NO_SYNC in h5tile_write_options.flags
 *   BENCH_RANKS_PER_FILE=K             h5tile_write_options.ranks_per_file = K (subfiles);
 *                                      H5TILE_RANKS_PER_FILE, the library's own, works too
 *   BENCH_SHUFFLE=1                    H5TILE_SHUFFLE (with a codec from H5TILE_COMPRESSION,
 *                                      the library's own)
 *   BENCH_DATA=heat                    a smooth field instead (see filled), to compress
 * "read" with BENCH_NO_VERIFY=1: H5TILE_READ_NO_VERIFY (tile bytes not checked against their
 * checksums), to measure what checking costs.
 * Writes print "expected_files": the files a dataset should have on disk as the layout is
 * specified, counted here from MPI alone: vds, one a non-empty tile + the master; single, 1;
 * subfiles, one a group + the master, a group being K consecutive ranks of a node (the node's
 * ranks from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED); K from ranks_per_file, else
 * H5TILE_RANKS_PER_FILE, else all of the node's ranks), with "groups" their number.
 *
 * The write modes write float64 (g % 1000) * 0.5 (g the global linear index; the grid repeats
 * one tile's values) from buffers no larger than one tile. Times are wall time on rank 0
 * between barriers (for reads, "seconds" is the read alone, "seconds_with_sum" includes
 * summing the data); peak_rss is the largest over the ranks. Before each write of "scale",
 * rank 0 calls sync() (outside the time), so no write pays for another's writeback. */
#include <h5tile.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static int rank = 0, size = 1;

static void die(const char *what) {
    fprintf(stderr, "bench_h5tile: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void check(h5tile_status s, const char *what) {
    if (s != H5TILE_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, h5tile_status_name(s), h5tile_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Buffers as numpy allocates large arrays: 2 MiB aligned, transparent huge pages advised, so
 * both sides of a comparison pay the same page faults. */
static void *big_alloc(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 2 << 20, bytes ? bytes : 1) != 0) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

static double sum(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i];
    return s;
}

/* Which of `n` kinds pass `i` of a pairs mode reads: one of each first (untimed), then rounds
 * of one of each, the first kind of a round shifting by one round to round (0, 1, 2; 1, 2, 0;
 * 2, 0, 1; ...), so none always goes first. */
static int turn(uint64_t i, int n) {
    if (i < (uint64_t)n) return (int)i;
    const uint64_t k = i - (uint64_t)n;
    return (int)((k + k / (uint64_t)n) % (uint64_t)n);
}

/* A batched read of FILE's /data in chunk[0] x chunk[1] chunks, its largest chunk (in
 * *max_bytes) checked to fit `room` bytes. */
static h5tile_batches *batches_open(const char *path, const uint64_t chunk[2], size_t room,
                                    size_t *max_bytes) {
    h5tile_batches *it;
    check(h5tile_batches_open(MPI_COMM_WORLD, path, "/data", 2, chunk, NULL, &it), "open");
    check(h5tile_batches_info(it, NULL, max_bytes, NULL), "info");
    if (*max_bytes > room) die("batched: a chunk larger than CHUNK x CHUNK clipped to the dataset");
    return it;
}

/* Sums every chunk `it` deals this rank, each through next into `buf` (of `room` bytes) or,
 * with `view`, through next_view; frees `it`. */
static double batched_sum(h5tile_batches *it, int view, double *buf, size_t room) {
    uint64_t coff[2], cshp[2];
    bool done;
    double total = 0;
    for (;;) {
        const void *data = buf;
        if (view)
            check(h5tile_batches_next_view(it, &data, coff, cshp, &done), "next_view");
        else
            check(h5tile_batches_next(it, buf, room, coff, cshp, &done), "next");
        if (done) break;
        total += sum((const double *)data, cshp[0] * cshp[1]);
    }
    h5tile_batches_free(it);
    return total;
}

/* BENCH_DATA=heat: the global shape, for the smooth field `filled` then writes. */
static uint64_t heat_rows = 0, heat_cols = 0;

/* Across one axis of `n` points, the profile of a hot band over its middle third after
 * diffusing for a while: half the difference of two erfs of width n/32 (exactly 0 and 1 far
 * from the band's edges, as erf saturates). */
static double heat_profile(uint64_t i, uint64_t n) {
    const double w = (double)n / 32.0, x = (double)i;
    return 0.5 * (erf((x - (double)n / 3.0) / w) - erf((x - 2.0 * (double)n / 3.0) / w));
}

/* n elements starting at global linear index `first`: (g % 1000) * 0.5, the data h5py writes;
 * with BENCH_DATA=heat (heat_rows/heat_cols set), 100 * profile(row) * profile(column): the
 * heat demo's hot square on a cold plate, diffused (a smooth field, for the compression
 * section). */
static double *filled(uint64_t first, size_t n) {
    double *b = big_alloc(n * sizeof *b);
    if (heat_cols) {
        double *across = malloc(heat_cols * sizeof *across);
        for (uint64_t j = 0; j < heat_cols; j++) across[j] = heat_profile(j, heat_cols);
        double down = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t g = first + i;
            if (i == 0 || g % heat_cols == 0) down = 100.0 * heat_profile(g / heat_cols, heat_rows);
            b[i] = down * across[g % heat_cols];
        }
        free(across);
        return b;
    }
    for (size_t i = 0; i < n; i++) b[i] = (double)((first + i) % 1000) * 0.5;
    return b;
}

/* Rows [start, start+len) of `rows` split over `parts` (sizes differ by at most one). */
static void split(uint64_t rows, int parts, int k, uint64_t *start, uint64_t *len) {
    uint64_t base = rows / (uint64_t)parts, extra = rows % (uint64_t)parts;
    *start = (uint64_t)k * base + ((uint64_t)k < extra ? (uint64_t)k : extra);
    *len = base + ((uint64_t)k < extra ? 1 : 0);
}

/* How a write stores the dataset: a layout name, ranks_per_file (0: unset), H5TILE_NO_SYNC. */
typedef struct {
    char layout[16];
    uint64_t per_file;
    int no_sync;
} spec;

/* BENCH_LAYOUT, BENCH_RANKS_PER_FILE and BENCH_NO_SYNC, the layout `dflt` where unset. */
static spec spec_from_env(const char *dflt) {
    spec sp = {"", 0, 0};
    const char *l = getenv("BENCH_LAYOUT"), *k = getenv("BENCH_RANKS_PER_FILE"),
               *ns = getenv("BENCH_NO_SYNC");
    snprintf(sp.layout, sizeof sp.layout, "%s", l && *l ? l : dflt);
    sp.per_file = k ? strtoull(k, NULL, 10) : 0;
    sp.no_sync = ns && atoi(ns) != 0;
    return sp;
}

/* LAYOUT[-kK][-nosync], as "scale" takes it. */
static spec spec_parse(const char *text) {
    spec sp = {"", 0, 0};
    char copy[64];
    snprintf(copy, sizeof copy, "%s", text);
    char *save = NULL;
    for (char *part = strtok_r(copy, "-", &save); part; part = strtok_r(NULL, "-", &save)) {
        if (!sp.layout[0])
            snprintf(sp.layout, sizeof sp.layout, "%s", part);
        else if (part[0] == 'k' && part[1])
            sp.per_file = strtoull(part + 1, NULL, 10);
        else if (strcmp(part, "nosync") == 0)
            sp.no_sync = 1;
        else
            die("a layout spec is LAYOUT[-kK][-nosync]");
    }
    return sp;
}

static h5tile_write_options options_of(spec sp) {
    h5tile_write_options o = h5tile_write_options_default();
    if (strcmp(sp.layout, "vds") == 0) {
        o.layout = H5TILE_LAYOUT_VDS;
    } else if (strcmp(sp.layout, "single") == 0) {
        o.layout = H5TILE_LAYOUT_SINGLE;
    } else if (strcmp(sp.layout, "subfiles") == 0) {
        o.layout = H5TILE_LAYOUT_SUBFILES;
    } else if (strcmp(sp.layout, "auto") == 0) {
        o.layout = H5TILE_LAYOUT_AUTO;
    } else {
        die("the layout is one of vds, single, subfiles, auto");
    }
    o.ranks_per_file = sp.per_file;
    if (sp.no_sync) o.flags |= H5TILE_NO_SYNC;
    /* the codec itself comes from the library's own H5TILE_COMPRESSION */
    const char *shuffle = getenv("BENCH_SHUFFLE");
    if (shuffle && atoi(shuffle) != 0) o.flags |= H5TILE_SHUFFLE;
    return o;
}

/* How many files a dataset written with `sp` should have on disk, by the layout's definition,
 * counted from MPI alone (collective over MPI_COMM_WORLD; `tiles`: this rank's non-empty
 * tiles); *groups gets the subfiles' groups (vds: the tiles, single: 1). */
static uint64_t expected_files(spec sp, uint64_t tiles, uint64_t *groups) {
    uint64_t total = 0, leaders = 0, leader, most = 0;
    MPI_Allreduce(&tiles, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&tiles, &most, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (strcmp(sp.layout, "auto") == 0) {
        /* The default's rule on one machine (the bench runs on one): one tile file a tile
         * while every rank holds at most one, else a subfile a rank. */
        if (most <= 1) return (*groups = total) + 1;
        snprintf(sp.layout, sizeof sp.layout, "subfiles");
        if (sp.per_file == 0) sp.per_file = 1;
    }
    if (strcmp(sp.layout, "single") == 0) return *groups = 1;
    if (strcmp(sp.layout, "vds") == 0) return (*groups = total) + 1;
    MPI_Comm node;
    int node_rank, node_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    const char *env = getenv("H5TILE_RANKS_PER_FILE");
    uint64_t k = sp.per_file ? sp.per_file : env && *env ? strtoull(env, NULL, 10) : 0;
    if (k == 0 || k > (uint64_t)node_size) k = (uint64_t)node_size;
    leader = (uint64_t)node_rank % k == 0;
    MPI_Allreduce(&leader, &leaders, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return (*groups = leaders) + 1;
}

/* The stand-in for a solver's step between checkpoints: `sweeps` passes over 64 MiB. */
static double compute(uint64_t sweeps) {
    const size_t n = (64u << 20) / sizeof(double);
    double *a = big_alloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = (double)(i % 1000);
    for (uint64_t s = 0; s < sweeps; s++)
        for (size_t i = 0; i < n; i++) a[i] = a[i] * 0.999 + 1e-3;
    double total = sum(a, n);
    free(a);
    return total;
}

/* The median of v[0..n) (sorted in place); 0 for none. */
static double median_of(double *v, size_t n) {
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The resident set of this process now, in bytes (/proc/self/statm's second field). */
static long long resident_bytes(void) {
    long long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%lld %lld", &pages, &resident) != 2) die("cannot read /proc/self/statm");
    fclose(f);
    return resident * (long long)sysconf(_SC_PAGESIZE);
}

/* The solver's compute loop: 3-point stencil sweeps over two arrays of STENCIL_N doubles
 * (512 KiB together: they stay in a core's cache, so a step's pace is the core's, not that of
 * the memory a drain shares). */
#define STENCIL_N (32u * 1024u)
static double *stencil_a, *stencil_b;

static void stencil_step(uint64_t sweeps) {
    for (uint64_t k = 0; k < sweeps; k++) {
        for (size_t i = 1; i + 1 < STENCIL_N; i++)
            stencil_b[i] = 0.25 * stencil_a[i - 1] + 0.5 * stencil_a[i] + 0.25 * stencil_a[i + 1];
        double *t = stencil_a;
        stencil_a = stencil_b, stencil_b = t;
    }
}

/* Seconds `steps` steps of `sweeps` sweeps take, each step timed alone. */
static double stencil_steps(uint64_t steps, uint64_t sweeps) {
    double total = 0;
    for (uint64_t s = 0; s < steps; s++) {
        double t = MPI_Wtime();
        stencil_step(sweeps);
        total += MPI_Wtime() - t;
    }
    return total;
}

/* solver_compute: the compute loop alone, while a snapshot drains, and alone again. */
static void solver_compute(const char *mode, const char *path, const uint64_t *global,
                           const uint64_t *off, const uint64_t *shp, const double *buf,
                           const h5tile_write_options *snap, uint64_t n, size_t tile_bytes,
                           int level) {
    h5tile_request *req;
    stencil_a = big_alloc(STENCIL_N * sizeof(double));
    stencil_b = big_alloc(STENCIL_N * sizeof(double));
    for (size_t i = 0; i < STENCIL_N; i++) stencil_a[i] = stencil_b[i] = (double)(i % 1000);
    /* The sweeps of a ~10 ms step, measured on rank 0 so that every rank steps alike: the
     * fastest of 3 timings of at least 20 ms each, as other processes may take the core. */
    uint64_t sweeps = 16;
    while (stencil_steps(1, sweeps) < 0.02) sweeps *= 2;
    double fastest = stencil_steps(1, sweeps);
    for (int k = 0; k < 2; k++) fastest = fmin(fastest, stencil_steps(1, sweeps));
    sweeps = (uint64_t)fmax(1.0, (double)sweeps * 0.010 / fastest);
    MPI_Bcast(&sweeps, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    /* One snapshot first, not measured: its staging memory is then there, as for a solver's
     * later checkpoints (the first one's page faults are in its call, not in its drain). */
    check(h5tile_write_async(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, global, off, shp,
                             buf, snap, &req), "write_async");
    check(h5tile_wait(req), "wait");
    MPI_Barrier(MPI_COMM_WORLD);
    double alone = stencil_steps(n, sweeps);
    MPI_Barrier(MPI_COMM_WORLD);
    check(h5tile_write_async(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, global, off, shp,
                             buf, snap, &req), "write_async");
    const double returned = MPI_Wtime();
    double during = 0;
    uint64_t steps = 0;
    for (int done = 0;;) {
        check(h5tile_test(req, &done), "test");
        if (done) break;
        during += stencil_steps(1, sweeps);
        steps++;
    }
    const double drain = MPI_Wtime() - returned;
    check(h5tile_wait(req), "wait");
    MPI_Barrier(MPI_COMM_WORLD);
    alone += stencil_steps(n, sweeps); /* before and after the drain: the machine's drift cancels */
    double step = alone / (double)(2 * n), step_during = steps ? during / (double)steps : -1;
    double ratio = steps ? step / step_during : -1, worst = 0, step_max = 0, during_max = 0,
           drain_max = 0, mine = stencil_a[STENCIL_N / 2], sums = 0;
    uint64_t fewest = 0;
    MPI_Reduce(&ratio, &worst, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&step, &step_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&step_during, &during_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&drain, &drain_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&steps, &fewest, 1, MPI_UINT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &sums, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"mode\": \"%s\", \"ranks\": %d, \"seconds\": %.6f, \"step_s\": %.6f, "
               "\"during_step_s\": %.6f, \"ratio\": %.4f, \"steps_alone\": %llu, "
               "\"steps_during\": %llu, \"drain_s\": %.6f, \"sweeps_per_step\": %llu, "
               "\"tile_bytes\": %zu, \"thread_multiple\": %d, \"sum\": %.17g}\n",
               mode, size, during_max, step_max, during_max, worst, (unsigned long long)(2 * n),
               (unsigned long long)fewest, drain_max, (unsigned long long)sweeps, tile_bytes,
               level == MPI_THREAD_MULTIPLE, sums);
    free(stencil_a), free(stencil_b);
}

/* The solver_ modes: what a solver's checkpoints cost it (bench/suite.py's solver section).
 * Each rank times its own calls; a call's time is the slowest rank's. */
static void solver(const char *mode, const char *path, uint64_t rows, uint64_t cols, uint64_t n) {
    uint64_t r0, nr;
    split(rows, size, rank, &r0, &nr);
    const uint64_t global[2] = {rows, cols}, off[2] = {r0, 0}, shp[2] = {nr, cols};
    const size_t tile_bytes = (size_t)(nr * cols * sizeof(double));
    const int memcpy_mode = strcmp(mode, "solver_memcpy") == 0,
              rss = strcmp(mode, "solver_rss") == 0,
              snapshot = rss || strcmp(mode, "solver_snapshot") == 0,
              async = strcmp(mode, "solver_async") == 0,
              sync_write = strcmp(mode, "solver_write") == 0;
    if (!memcpy_mode && !snapshot && !async && !sync_write && strcmp(mode, "solver_compute") != 0) {
        fprintf(stderr, "unknown mode '%s'\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (n == 0) die("the solver_ modes need N > 0");
    int level;
    MPI_Query_thread(&level);
    double *buf = filled(r0 * cols, nr * cols);
    h5tile_write_options o = options_of(spec_from_env("vds")), snap = o;
    snap.flags |= H5TILE_SNAPSHOT;
    if (strcmp(mode, "solver_compute") == 0) {
        solver_compute(mode, path, global, off, shp, buf, &snap, n, tile_bytes, level);
        free(buf);
        return;
    }
    h5tile_request *req;
    const char *reserve = getenv("BENCH_RESERVE");
    if (snapshot && reserve && atoi(reserve) != 0) {
        /* Staging faulted in ahead, as a solver's start-up would (not timed). */
        const uint64_t bytes = tile_bytes;
        check(h5tile_reserve_staging(&bytes, 1, 0), "reserve_staging");
    }
    double *calls = calloc(n, sizeof *calls), *slowest = calloc(n, sizeof *slowest);
    double *copy = NULL, touched = 0;
    long long rss_first = 0, rss_max = 0;
    if (memcpy_mode) {
        copy = big_alloc(tile_bytes);
        memset(copy, 0, tile_bytes); /* touched: page faults are not what is compared */
    }
    const double start_all = MPI_Wtime();
    for (uint64_t i = 0; i < n; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        if (memcpy_mode) {
            memcpy(copy, buf, tile_bytes);
            calls[i] = MPI_Wtime() - t;
            touched += nr * cols != 0 ? copy[(i * 7919) % (nr * cols)] : 0; /* the copy is used */
        } else if (snapshot) {
            check(h5tile_write_async(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, global, off,
                                     shp, buf, &snap, &req), "write_async");
            calls[i] = MPI_Wtime() - t; /* returned: the caller's buffer is free again */
            check(h5tile_wait(req), "wait");
            long long now = resident_bytes();
            if (i == 0) rss_first = now;
            if (now > rss_max) rss_max = now;
        } else if (async) {
            check(h5tile_write_async(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, global, off,
                                     shp, buf, &o, &req), "write_async");
            check(h5tile_wait(req), "wait");
            calls[i] = MPI_Wtime() - t;
        } else {
            check(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, global, off, shp,
                               buf, &o), "write");
            calls[i] = MPI_Wtime() - t;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double all_seconds = MPI_Wtime() - start_all;
    MPI_Reduce(calls, slowest, (int)n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    char extra[256] = "";
    if (rss) {
        long long rss_last = resident_bytes(), first = 0, last = 0, most = 0;
        MPI_Reduce(&rss_first, &first, 1, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&rss_last, &last, 1, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&rss_max, &most, 1, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
        snprintf(extra, sizeof extra,
                 ", \"snapshots\": %llu, \"rss_first_bytes\": %lld, \"rss_last_bytes\": %lld, "
                 "\"rss_max_bytes\": %lld, \"growth_bytes\": %lld",
                 (unsigned long long)n, first, last, most, last - first);
    }
    double touched_all = 0;
    MPI_Reduce(&touched, &touched_all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"mode\": \"%s\", \"ranks\": %d, \"calls_s\": [", mode, size);
        for (uint64_t i = 0; i < n; i++) printf("%s%.6f", i ? ", " : "", slowest[i]);
        const double first = slowest[0];
        const double steady = n > 1 ? median_of(slowest + 1, n - 1) : first;
        /* "seconds": the steady call; for the RSS loop, the whole loop */
        printf("], \"first_s\": %.6f, \"steady_s\": %.6f, \"seconds\": %.6f, \"tile_bytes\": %zu, "
               "\"thread_multiple\": %d, \"sum\": %.17g%s}\n",
               first, steady, rss ? all_seconds : steady, tile_bytes, level == MPI_THREAD_MULTIPLE,
               touched_all, extra);
    }
    free(calls), free(slowest), free(copy), free(buf);
}

int main(int argc, char **argv) {
    if (argc > 1 &&
        (strcmp(argv[1], "overlap_async") == 0 || strncmp(argv[1], "solver_", 7) == 0)) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided != MPI_THREAD_MULTIPLE) fprintf(stderr, "no MPI_THREAD_MULTIPLE: no overlap\n");
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 5) {
        fprintf(stderr, "usage: %s MODE FILE ROWS COLS [N]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    const uint64_t rows = strtoull(argv[3], NULL, 10), cols = strtoull(argv[4], NULL, 10);
    const uint64_t n = argc > 5 ? strtoull(argv[5], NULL, 10) : 0;
    const uint64_t global[2] = {rows, cols}, zero[2] = {0, 0};
    const char *data = getenv("BENCH_DATA");
    if (data && strcmp(data, "heat") == 0) heat_rows = rows, heat_cols = cols;
    uint64_t r0, nr;
    split(rows, size, rank, &r0, &nr);
    const uint64_t off[2] = {r0, 0}, shp[2] = {nr, cols};
    size_t tile_bytes = (size_t)(nr * cols * sizeof(double));
    double total = 0, *buf = NULL, read_seconds = -1;
    char files_json[128] = ""; /* write modes: the files the layout should leave */
    uint64_t groups = 0;

    if (strcmp(mode, "scale") == 0) {
        /* One launch, every layout: the same tile written once per SPEC, to DIR/SPEC/field.h5. */
        buf = filled(r0 * cols, nr * cols);
        for (int a = 5; a < argc; a++) {
            spec sp = spec_parse(argv[a]);
            h5tile_write_options o = options_of(sp);
            char file[4096];
            snprintf(file, sizeof file, "%s/%s/field.h5", path, argv[a]);
            uint64_t expect = expected_files(sp, nr * cols > 0, &groups);
            if (rank == 0) sync();
            MPI_Barrier(MPI_COMM_WORLD);
            double start = MPI_Wtime();
            check(h5tile_write(MPI_COMM_WORLD, file, "/data", H5TILE_FLOAT64, 2, global, off, shp,
                               buf, &o), "write");
            MPI_Barrier(MPI_COMM_WORLD);
            double seconds = MPI_Wtime() - start;
            struct rusage u;
            getrusage(RUSAGE_SELF, &u);
            long rss = u.ru_maxrss, peak = 0;
            MPI_Reduce(&rss, &peak, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0)
                printf("{\"mode\": \"scale\", \"layout\": \"%s\", \"ranks\": %d, \"seconds\": %.6f, "
                       "\"bytes\": %llu, \"tile_bytes\": %zu, \"groups\": %llu, \"expected_files\": %llu, "
                       "\"peak_rss_bytes\": %ld}\n",
                       argv[a], size, seconds, (unsigned long long)(rows * cols * sizeof(double)),
                       tile_bytes, (unsigned long long)groups, (unsigned long long)expect, peak * 1024);
            fflush(stdout);
        }
        free(buf);
        MPI_Finalize();
        return 0;
    }

    if (strncmp(mode, "solver_", 7) == 0) {
        solver(mode, path, rows, cols, n);
        MPI_Finalize();
        return 0;
    }

    if (strcmp(mode, "read_pairs") == 0) {
        /* In one process, so the pair shares everything but what is compared (the check, or
           the file's layout): no launch, no first touch of the buffer or of the library's
           memory, the same page cache. */
        const char *other = argc > 6 ? argv[6] : NULL;
        const char *kinds[2] = {other ? "file" : "checked", other ? "other" : "no_verify"};
        buf = big_alloc(tile_bytes);
        memset(buf, 0, tile_bytes);
        /* One read of each kind first, not timed: the file's first open and the library's
           first allocations. */
        for (uint64_t i = 0; i < 2 + 2 * n; i++) {
            const int second = turn(i, 2);
            h5tile_read_options ro = h5tile_read_options_default();
            if (second && !other) ro.flags |= H5TILE_READ_NO_VERIFY;
            const char *file = second && other ? other : path;
            MPI_Barrier(MPI_COMM_WORLD);
            double start = MPI_Wtime();
            check(h5tile_read(MPI_COMM_WORLD, file, "/data", H5TILE_FLOAT64, 2, off, shp, buf, &ro),
                  "read");
            MPI_Barrier(MPI_COMM_WORLD);
            double seconds = MPI_Wtime() - start;
            double local = sum(buf, nr * cols), all = 0;
            MPI_Reduce(&local, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank == 0 && i >= 2)
                printf("{\"mode\": \"read_pairs\", \"kind\": \"%s\", \"ranks\": %d, \"seconds\": %.6f, "
                       "\"bytes\": %llu, \"sum\": %.17g}\n",
                       kinds[second], size, seconds,
                       (unsigned long long)(rows * cols * sizeof(double)), all);
            fflush(stdout);
        }
        free(buf);
        MPI_Finalize();
        return 0;
    }

    if (strcmp(mode, "batched_pairs") == 0 && argc > 6) {
        /* In one process, as read_pairs: launches differ by more than batched reads do from a
           whole one here (a whole read's time moved 0.15-1.4 s from launch to launch, its
           buffer written before the timer each time). Both buffers are plain malloc, as the
           batched mode's, and written before the first pass: no page fault is timed. */
        const uint64_t edge = strtoull(argv[6], NULL, 10), chunk[2] = {edge, edge};
        const size_t room = (size_t)((edge < rows ? edge : rows) * (edge < cols ? edge : cols) *
                                     sizeof(double));
        static const char *const kinds[3] = {"whole", "next", "next_view"};
        buf = malloc(tile_bytes ? tile_bytes : 1);
        memset(buf, 0, tile_bytes);
        double *piece = malloc(room ? room : 1);
        memset(piece, 0, room);
        /* One of each first, not timed: the file's first open and the library's first
           allocations. */
        for (uint64_t i = 0; i < 3 + 3 * n; i++) {
            const int kind = turn(i, 3);
            MPI_Barrier(MPI_COMM_WORLD);
            double start = MPI_Wtime(), local, all = 0;
            if (kind == 0) {
                check(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, off, shp, buf,
                                  NULL), "read");
                local = sum(buf, nr * cols);
            } else {
                size_t max_bytes;
                h5tile_batches *it = batches_open(path, chunk, room, &max_bytes);
                local = batched_sum(it, kind == 2, piece, room);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            double seconds = MPI_Wtime() - start;
            MPI_Reduce(&local, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank == 0 && i >= 3)
                printf("{\"mode\": \"batched_pairs\", \"kind\": \"%s\", \"chunk\": %llu, "
                       "\"ranks\": %d, \"seconds\": %.6f, \"seconds_with_sum\": %.6f, "
                       "\"bytes\": %llu, \"sum\": %.17g}\n",
                       kinds[kind], (unsigned long long)edge, size, seconds, seconds,
                       (unsigned long long)(rows * cols * sizeof(double)), all);
            fflush(stdout);
        }
        free(piece);
        free(buf);
        MPI_Finalize();
        return 0;
    }

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (strcmp(mode, "write") == 0) {
        spec sp = spec_from_env("vds");
        h5tile_write_options o = options_of(sp);
        uint64_t expect = expected_files(sp, nr * cols > 0, &groups);
        snprintf(files_json, sizeof files_json, ", \"groups\": %llu, \"expected_files\": %llu",
                 (unsigned long long)groups, (unsigned long long)expect);
        buf = filled(r0 * cols, nr * cols);
        t0 = (MPI_Barrier(MPI_COMM_WORLD), MPI_Wtime()); /* filling is not writing */
        check(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, global, off, shp, buf,
                           &o), "write");
    } else if ((strcmp(mode, "checkpoint") == 0 || strcmp(mode, "fields") == 0) && n > 0) {
        /* N fields of ROWS x COLS, each rank its row slab of each: one checkpoint commit, or
         * (fields) one h5tile_write per field keeping the others, as before checkpoints. */
        h5tile_write_options o = options_of(spec_from_env("vds"));
        buf = filled(r0 * cols, nr * cols);
        t0 = (MPI_Barrier(MPI_COMM_WORLD), MPI_Wtime());
        char name[64];
        if (strcmp(mode, "checkpoint") == 0) {
            h5tile_checkpoint *ck;
            check(h5tile_checkpoint_begin(MPI_COMM_WORLD, path, &o, &ck), "checkpoint_begin");
            for (uint64_t f = 0; f < n; f++) {
                snprintf(name, sizeof name, "/field%llu", (unsigned long long)f);
                check(h5tile_checkpoint_add(ck, name, H5TILE_FLOAT64, 2, global, off, shp, buf), "add");
            }
            check(h5tile_checkpoint_commit(ck), "checkpoint_commit");
        } else {
            o.flags |= H5TILE_KEEP_OTHERS;
            for (uint64_t f = 0; f < n; f++) {
                snprintf(name, sizeof name, "/field%llu", (unsigned long long)f);
                check(h5tile_write(MPI_COMM_WORLD, path, name, H5TILE_FLOAT64, 2, global, off, shp,
                                   buf, &o), "write");
            }
        }
    } else if (strcmp(mode, "pwrite") == 0) {
        buf = filled(r0 * cols, nr * cols);
        char file[4096];
        snprintf(file, sizeof file, "%s.r%d", path, rank);
        t0 = (MPI_Barrier(MPI_COMM_WORLD), MPI_Wtime());
        int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) die("pwrite: cannot create the rank's file");
        for (size_t done = 0; done < tile_bytes;) {
            ssize_t w = pwrite(fd, (const char *)buf + done, tile_bytes - done, (off_t)done);
            if (w <= 0) die("pwrite failed");
            done += (size_t)w;
        }
        close(fd);
    } else if (strcmp(mode, "compute") == 0) {
        total = compute(n);
    } else if (strcmp(mode, "overlap") == 0 || strcmp(mode, "overlap_async") == 0) {
        h5tile_write_options o = options_of(spec_from_env("vds"));
        buf = filled(r0 * cols, nr * cols);
        t0 = (MPI_Barrier(MPI_COMM_WORLD), MPI_Wtime());
        if (strcmp(mode, "overlap") == 0) {
            check(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, global, off, shp,
                               buf, &o), "write");
            total = compute(n);
        } else {
            h5tile_request *req;
            check(h5tile_write_async(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, global, off,
                                     shp, buf, &o, &req), "write_async");
            total = compute(n);
            check(h5tile_wait(req), "wait");
        }
    } else if (strcmp(mode, "read") == 0) {
        buf = big_alloc(tile_bytes);
        h5tile_read_options ro = h5tile_read_options_default();
        const char *nv = getenv("BENCH_NO_VERIFY");
        if (nv && atoi(nv) != 0) ro.flags |= H5TILE_READ_NO_VERIFY;
        check(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, off, shp, buf, &ro),
              "read");
        MPI_Barrier(MPI_COMM_WORLD);
        read_seconds = MPI_Wtime() - t0;
        total = sum(buf, nr * cols);
    } else if (strcmp(mode, "write_grid") == 0 || strcmp(mode, "write_single") == 0) {
        /* a g x g grid of tiles (g = sqrt(N)), all written from one tile-sized buffer */
        uint64_t g = strcmp(mode, "write_single") == 0 ? 1 : (uint64_t)llround(sqrt((double)n));
        uint64_t count = g * g, *offs = calloc(2 * count, sizeof *offs), *shps = calloc(2 * count, sizeof *shps);
        const void **bufs = malloc(count * sizeof *bufs);
        uint64_t biggest = 0;
        for (uint64_t i = 0; i < g; i++)
            for (uint64_t j = 0; j < g; j++) {
                uint64_t k = i * g + j;
                split(rows, (int)g, (int)i, &offs[2 * k], &shps[2 * k]);
                split(cols, (int)g, (int)j, &offs[2 * k + 1], &shps[2 * k + 1]);
                if (shps[2 * k] * shps[2 * k + 1] > biggest) biggest = shps[2 * k] * shps[2 * k + 1];
            }
        /* this rank's share: tiles [first, last) in row-major order */
        uint64_t first = (uint64_t)rank * count / (uint64_t)size;
        uint64_t last = (uint64_t)(rank + 1) * count / (uint64_t)size;
        buf = filled(0, biggest);
        for (uint64_t k = 0; k < count; k++) bufs[k] = buf;
        tile_bytes = (size_t)(biggest * sizeof(double));
        spec sp = spec_from_env(g == 1 ? "single" : "vds");
        h5tile_write_options o = options_of(sp);
        uint64_t expect = expected_files(sp, last - first, &groups);
        snprintf(files_json, sizeof files_json, ", \"groups\": %llu, \"expected_files\": %llu",
                 (unsigned long long)groups, (unsigned long long)expect);
        t0 = (MPI_Barrier(MPI_COMM_WORLD), MPI_Wtime());
        check(h5tile_write_tiles(size > 1 ? MPI_COMM_WORLD : MPI_COMM_NULL, path, "/data",
                                 H5TILE_FLOAT64, 2, global, last - first, offs + 2 * first,
                                 shps + 2 * first, bufs + first, &o), "write_tiles");
        free(offs), free(shps), free(bufs);
    } else if (strcmp(mode, "read_whole") == 0) {
        /* One process reads it all as a C user's loop would: into a plain malloc'ed buffer,
         * page faults and all (the tile count and many tiles sections). */
        buf = malloc(rows * cols * sizeof *buf);
        tile_bytes = (size_t)(rows * cols * sizeof(double));
        check(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, zero, global, buf, NULL),
              "read");
        read_seconds = MPI_Wtime() - t0;
        total = sum(buf, rows * cols);
    } else if (strcmp(mode, "read_tile") == 0 && n > 0) {
        /* One process reads the middle tile of write_grid's g x g grid: what finding one tile
         * among N costs (opening the dataset included). */
        uint64_t g = (uint64_t)llround(sqrt((double)n)), toff[2], tshp[2];
        split(rows, (int)g, (int)(g / 2), &toff[0], &tshp[0]);
        split(cols, (int)g, (int)(g / 2), &toff[1], &tshp[1]);
        buf = malloc(tshp[0] * tshp[1] * sizeof *buf);
        tile_bytes = (size_t)(tshp[0] * tshp[1] * sizeof(double));
        h5tile_dtype dt;
        size_t nd = 0;
        uint64_t got[32];
        (void)h5tile_inspect("/proc/self/exe", "/data", &dt, &nd, got);
        t0 = MPI_Wtime();
        check(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, toff, tshp, buf, NULL),
              "read");
        read_seconds = MPI_Wtime() - t0;
        total = sum(buf, tshp[0] * tshp[1]);
    } else if (strcmp(mode, "open") == 0) {
        /* HDF5 starts on its first use in a process: an h5tile_inspect of a file that is not
         * HDF5 (this program) pays for that, the one timed opens the dataset alone. */
        h5tile_dtype dt;
        size_t nd = 0;
        uint64_t got[32];
        (void)h5tile_inspect("/proc/self/exe", "/data", &dt, &nd, got);
        t0 = MPI_Wtime();
        check(h5tile_inspect(path, "/data", &dt, &nd, got), "inspect");
        read_seconds = MPI_Wtime() - t0;
        if (nd != 2 || got[0] != rows || got[1] != cols || dt != H5TILE_FLOAT64) die("open: wrong shape");
        tile_bytes = 0;
    } else if ((strcmp(mode, "batched") == 0 || strcmp(mode, "batched_view") == 0) && n > 0) {
        /* `next`'s buffer is written before the timer, as a solver's would be; the open is
         * timed, as h5tile_read's is, so the buffer is sized from the chunk (clipped to the
         * dataset). The peak memory of each batched mode (batched_pairs holds a whole slab). */
        const int view = strcmp(mode, "batched_view") == 0;
        const uint64_t chunk[2] = {n, n};
        const size_t room = (size_t)((n < rows ? n : rows) * (n < cols ? n : cols) * sizeof(double));
        if (!view) {
            buf = malloc(room ? room : 1);
            memset(buf, 0, room);
        }
        t0 = (MPI_Barrier(MPI_COMM_WORLD), MPI_Wtime());
        size_t max_bytes;
        h5tile_batches *it = batches_open(path, chunk, room, &max_bytes);
        tile_bytes = max_bytes;
        total = batched_sum(it, view, buf, room);
    } else {
        fprintf(stderr, "unknown mode '%s'\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double with_sum = MPI_Wtime() - t0;
    double seconds = read_seconds >= 0 ? read_seconds : with_sum;
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    long rss = u.ru_maxrss, peak = 0;
    unsigned long long tb = tile_bytes, max_tile = 0;
    double all = 0;
    MPI_Reduce(&rss, &peak, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&tb, &max_tile, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&total, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"mode\": \"%s\", \"ranks\": %d, \"n\": %llu, \"seconds\": %.6f, "
               "\"seconds_with_sum\": %.6f, \"bytes\": %llu, \"peak_rss_bytes\": %ld, "
               "\"tile_bytes\": %llu, \"sum\": %.17g%s}\n",
               mode, size, (unsigned long long)n, seconds, with_sum,
               (unsigned long long)(rows * cols * sizeof(double)), peak * 1024, max_tile, all,
               files_json);
    free(buf);
    MPI_Finalize();
    return 0;
}
