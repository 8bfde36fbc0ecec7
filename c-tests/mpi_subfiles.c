/* The subfiled layout (H5TILE_LAYOUT_SUBFILES) on many ranks, run by ctest on 64
 * oversubscribed ranks with H5TILE_RANKS_PER_FILE=8 (any rank count works; the variable must
 * be set). The ranks of a node are cut into groups of k consecutive node-local ranks (k from
 * the write option ranks_per_file, else the variable, else the whole node); each group writes
 * one subfile <master>.tiles/<key>.<generation>.s<global rank of its first rank>.h5 holding
 * /tile.r<rank>.t<k> per non-empty tile of its ranks, or, where the group's tiles fill one box,
 * that box as /box.f0 (coalesced), and the master maps them. ctest runs it as it is and with
 * H5TILE_COALESCE=0. Each case
 * writes a (72 x 100) float64 array whose values say which version they are, and checks:
 *   1. one tile per rank (h5tile_partition): the folder beside the master holds exactly one
 *      subfile per group (8 here: s0, s8, ..., s56), all of one new generation, and nothing
 *      else (no temporary master); each rank finds its tile, of its shape and values, as
 *      /tile.r<rank>.t0 in its group's subfile (h5tile_inspect, h5tile_read of the subfile);
 *      read back on column slabs (another decomposition), in 5 x 7 batches dealt over the
 *      ranks (each chunk exactly once), and whole by one process; every element checked;
 *   2. two tiles per rank (h5tile_write_tiles): the same, /tile.r<rank>.t0 and .t1;
 *   3. H5TILE_KEEP_OTHERS: /fields/other added beside /data, then /data rewritten: the old
 *      generation of /data's subfiles is gone, /fields/other's subfiles are byte for byte as
 *      they were, both datasets read back;
 *   4. layouts replacing each other: VDS (kept beside /fields/other), subfiles, single file,
 *      subfiles, VDS, subfiles: each time only the current layout's files remain;
 *   5. H5TILE_NO_SYNC, on all three layouts: the same files, the same values read back;
 *   6. ranks_per_file overrides the variable: 16 (4 groups here), 1 (one subfile per rank),
 *      a number above the ranks of a node (one subfile per node);
 *   7. in the background: h5tile_write_async + h5tile_wait, h5tile_write_tiles_async +
 *      h5tile_fence;
 *   8. a failing write (the last rank's tile outside the array) is H5TILE_ERR_INVALID_ARGUMENT
 *      on every rank and leaves the master and its subfiles untouched;
 *   9. so are group sizes that cannot be used: H5TILE_RANKS_PER_FILE=abc or 0 (on every rank,
 *      or on the last rank only: the message names it), ranks_per_file differing between
 *      ranks;
 *  10. and H5TILE_COALESCE=yes, or ranks disagreeing on H5TILE_COALESCE. */
#include "check.h"

static int rank, size;
static MPI_Comm node;           /* the ranks of this node (MPI_COMM_TYPE_SHARED) */
static int node_rank, node_size, nnodes;
static int *node_ranks;         /* global ranks of this node's ranks, by node-local rank */
static int env_k;               /* H5TILE_RANKS_PER_FILE */
static const uint64_t G[2] = {72, 100};

/* ---------------------------------------------------------------- values */

static double value(int v, uint64_t r, uint64_t c) {
    return v * 1e6 + (double)r * 1000 + (double)c;
}

static void fill(int v, const uint64_t *off, const uint64_t *shp, double *buf) {
    for (uint64_t r = 0; r < shp[0]; r++)
        for (uint64_t c = 0; c < shp[1]; c++)
            buf[r * shp[1] + c] = value(v, off[0] + r, off[1] + c);
}

static void check_values(int v, const uint64_t *off, const uint64_t *shp, const double *buf,
                         const char *what) {
    for (uint64_t r = 0; r < shp[0]; r++)
        for (uint64_t c = 0; c < shp[1]; c++) {
            double want = value(v, off[0] + r, off[1] + c), got = buf[r * shp[1] + c];
            CHECK_MSG(got == want, "%s: element (%llu, %llu) is %.1f, expected %.1f (version %d)",
                      what, (unsigned long long)(off[0] + r), (unsigned long long)(off[1] + c),
                      got, want, v);
        }
}

/* ---------------------------------------------------------------- decompositions */

/* The tiles this rank writes: `per_rank` (1 or 2) tiles of the per_rank*size partition. */
typedef struct {
    size_t n;
    uint64_t offs[4], shps[4];
    double *bufs[2];
} my_tiles;

static my_tiles make_tiles(int v, int per_rank) {
    my_tiles t;
    memset(&t, 0, sizeof t);
    t.n = (size_t)per_rank;
    for (int k = 0; k < per_rank; k++) {
        EXPECT_OK(h5tile_partition((size_t)(per_rank * size), (size_t)(per_rank * rank + k), 2, G,
                                   t.offs + 2 * k, t.shps + 2 * k));
        CHECK_MSG(volume(2, t.shps + 2 * k) > 0, "tile %d of rank %d is empty", k, rank);
        t.bufs[k] = (double *)xmalloc((size_t)volume(2, t.shps + 2 * k) * sizeof(double));
        fill(v, t.offs + 2 * k, t.shps + 2 * k, t.bufs[k]);
    }
    return t;
}

static void free_tiles(my_tiles *t) {
    for (size_t k = 0; k < t->n; k++) free(t->bufs[k]);
}

static h5tile_write_options options(h5tile_layout layout, uint32_t flags, uint64_t per_file) {
    h5tile_write_options o = h5tile_write_options_default();
    o.layout = layout;
    o.flags = flags;
    o.ranks_per_file = per_file;
    return o;
}

static void write_version(const char *path, const char *dset, int v, int per_rank,
                          const h5tile_write_options *o) {
    my_tiles t = make_tiles(v, per_rank);
    const void *bufs[2] = {t.bufs[0], t.bufs[1]};
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_WORLD, path, dset, H5TILE_FLOAT64, 2, G, t.n, t.offs,
                                 t.shps, bufs, o));
    free_tiles(&t);
}

/* ---------------------------------------------------------------- groups and names */

/* The global rank of the first rank of this rank's group, for groups of k (0: the node). */
static int my_leader(int k) {
    if (k <= 0 || k > node_size) k = node_size;
    return node_ranks[node_rank / k * k];
}

/* Every rank's group leader for groups of k, on every rank (an array of `size`; free it). */
static int *leaders(int k) {
    int mine = my_leader(k);
    int *all = (int *)xmalloc(sizeof(int) * (size_t)size);
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    return all;
}

/* Whether `name` is "<key>.<16 lowercase hex>.s<digits>.h5"; then the generation and the rank
 * after ".s". */
static int parse_subfile(const char *name, const char *key, char *gen, int *first) {
    size_t kl = strlen(key);
    if (strncmp(name, key, kl) != 0 || name[kl] != '.') return 0;
    const char *g = name + kl + 1;
    for (int i = 0; i < 16; i++)
        if (!((g[i] >= '0' && g[i] <= '9') || (g[i] >= 'a' && g[i] <= 'f'))) return 0;
    if (strncmp(g + 16, ".s", 2) != 0) return 0;
    const char *d = g + 18;
    int n = 0, digits = 0;
    while (*d >= '0' && *d <= '9') n = n * 10 + (*d++ - '0'), digits++;
    if (digits == 0 || strcmp(d, ".h5") != 0) return 0;
    memcpy(gen, g, 16);
    gen[16] = '\0';
    *first = n;
    return 1;
}

/* Whether `name` is a VDS-layout tile file "<key>.<16 hex>.r<rank>.t<k>.h5". */
static int parse_tile_file(const char *name, const char *key, char *gen, int *r, int *t) {
    size_t kl = strlen(key);
    if (strncmp(name, key, kl) != 0 || name[kl] != '.' || strlen(name) < kl + 18) return 0;
    char tail[64];
    memcpy(gen, name + kl + 1, 16);
    gen[16] = '\0';
    if (sscanf(name + kl + 17, ".r%d.t%d%63s", r, t, tail) != 3) return 0;
    return strcmp(tail, ".h5") == 0;
}

/* What the tile folder of a master may hold for one dataset key. */
enum files_kind { NONE, SUBFILES, TILES };
typedef struct {
    const char *key;
    enum files_kind kind;
    int k;           /* SUBFILES: ranks per file (0: the node) */
    char gen[17];    /* out: the generation found */
} expect_files;

/* Rank 0: the folder beside `path` holds, for each entry of `want`, exactly what a write of
 * that layout on every rank of MPI_COMM_WORLD (one tile each for TILES) leaves, of one
 * generation, and nothing else; beside the master, nothing but the master and its folder.
 * `lead` is leaders(k) for each SUBFILES entry (every rank computes it). Every rank gets the
 * generations. */
static void check_folder(const char *path, expect_files *want, int nwant) {
    int *lead[4] = {NULL, NULL, NULL, NULL};
    for (int w = 0; w < nwant; w++)
        if (want[w].kind == SUBFILES) lead[w] = leaders(want[w].k);
    if (rank == 0) {
        char dir[4096];
        TILE_DIR(dir, path);
        CHECK_MSG(is_regular_file(path), "no master at %s", path);
        int n;
        char **names = list_dir(dir, &n);
        int expected = 0;
        char *seen = (char *)calloc((size_t)size * nwant, 1);
        CHECK(seen != NULL);
        for (int w = 0; w < nwant; w++) {
            want[w].gen[0] = '\0';
            if (want[w].kind == TILES) expected += size;
            if (want[w].kind == SUBFILES)
                for (int r = 0; r < size; r++) expected += lead[w][r] == r;
        }
        if (expected == 0) {
            CHECK_MSG(n <= 0, "%s holds %d files, expected none (or no folder)", dir, n);
        } else {
            CHECK_MSG(n == expected, "%s holds %d files, expected %d (first '%s')", dir, n,
                      expected, n > 0 ? names[0] : "");
        }
        for (int i = 0; i < n; i++) {
            int matched = 0;
            for (int w = 0; w < nwant && !matched; w++) {
                char gen[17];
                int a = -1, b = -1;
                if (want[w].kind == SUBFILES && parse_subfile(names[i], want[w].key, gen, &a)) {
                    CHECK_MSG(a >= 0 && a < size && lead[w][a] == a,
                              "%s: '%s' is not the subfile of a group (groups of %d)", dir,
                              names[i], want[w].k);
                    CHECK_MSG(!seen[(size_t)w * size + a], "two subfiles of group s%d", a);
                    seen[(size_t)w * size + a] = 1;
                } else if (want[w].kind == TILES &&
                           parse_tile_file(names[i], want[w].key, gen, &a, &b)) {
                    CHECK_MSG(a >= 0 && a < size && b == 0 && !seen[(size_t)w * size + a],
                              "%s: unexpected tile file '%s'", dir, names[i]);
                    seen[(size_t)w * size + a] = 1;
                } else {
                    continue;
                }
                if (want[w].gen[0] == '\0') memcpy(want[w].gen, gen, 17);
                CHECK_MSG(strcmp(want[w].gen, gen) == 0,
                          "%s: files of two generations of '%s' (%s and %s)", dir, want[w].key,
                          want[w].gen, gen);
                matched = 1;
            }
            CHECK_MSG(matched, "%s holds '%s', which no current dataset should leave", dir,
                      names[i]);
        }
        if (names) free_names(names, n);
        free(seen);
        /* beside the master: itself and its folder (if any), no temporary master */
        char parent[4096];
        PATHF(parent, "%s", path);
        *strrchr(parent, '/') = '\0';
        char **here = list_dir(parent, &n);
        const char *base = strrchr(path, '/') + 1, *dbase = strrchr(dir, '/') + 1;
        for (int i = 0; i < n; i++)
            CHECK_MSG(strcmp(here[i], base) == 0 || strcmp(here[i], dbase) == 0,
                      "%s holds '%s' beside the master", parent, here[i]);
        free_names(here, n);
    }
    for (int w = 0; w < nwant; w++) {
        MPI_Bcast(want[w].gen, 17, MPI_CHAR, 0, MPI_COMM_WORLD);
        free(lead[w]);
    }
}

/* The box the group's tiles fill, where they fill one (two or more tiles whose volumes add up
 * to their bounding box's): the subfile then holds them as one dataset of that box, /box.f0
 * (coalesced; H5TILE_COALESCE=0 turns it off). Returns 0 where they do not; collective. */
static int group_box(int k, const my_tiles *t, uint64_t box_off[2], uint64_t box_shp[2]) {
    MPI_Comm group;
    MPI_Comm_split(MPI_COMM_WORLD, my_leader(k), rank, &group);
    uint64_t low[2] = {UINT64_MAX, UINT64_MAX}, high[2] = {0, 0}, mine[2] = {0, t->n}, all[2];
    for (size_t j = 0; j < t->n; j++) {
        for (int a = 0; a < 2; a++) {
            uint64_t o = t->offs[2 * j + a], e = o + t->shps[2 * j + a];
            if (o < low[a]) low[a] = o;
            if (e > high[a]) high[a] = e;
        }
        mine[0] += volume(2, t->shps + 2 * j);
    }
    MPI_Allreduce(low, box_off, 2, MPI_UINT64_T, MPI_MIN, group);
    MPI_Allreduce(high, box_shp, 2, MPI_UINT64_T, MPI_MAX, group);
    MPI_Allreduce(mine, all, 2, MPI_UINT64_T, MPI_SUM, group);
    MPI_Comm_free(&group);
    for (int a = 0; a < 2; a++) box_shp[a] -= box_off[a];
    const char *off = getenv("H5TILE_COALESCE");
    int coalescing = off == NULL || strcmp(off, "0") != 0;
    return coalescing && all[1] >= 2 && all[0] == box_shp[0] * box_shp[1];
}

/* Each rank finds its tiles in its group's subfile, of the tile's shape and values (read as
 * plain HDF5 datasets of the subfile): as /tile.r<rank>.t<k>, or, where the group's tiles
 * fill one box, as its part of /box.f0 (and no /tile.r<rank>.t<k>). */
static void check_my_datasets(const char *path, const char *key, const char *gen, int k, int v,
                              int per_rank) {
    char dir[4096], sub[4096];
    TILE_DIR(dir, path);
    PATHF(sub, "%s/%s.%s.s%d.h5", dir, key, gen, my_leader(k));
    my_tiles t = make_tiles(v, per_rank);
    uint64_t box_off[2], box_shp[2];
    const int coalesced = group_box(k, &t, box_off, box_shp);
    for (size_t j = 0; j < t.n; j++) {
        char dset[64];
        PATHF(dset, "/tile.r%d.t%zu", rank, j);
        const uint64_t *shp = t.shps + 2 * j;
        h5tile_dtype dt;
        size_t nd;
        uint64_t s[32];
        CHECK_CONTEXT("%s in %s", dset, sub);
        uint64_t at[2] = {0, 0};
        const uint64_t *want = shp;
        if (coalesced) {
            EXPECT_STATUS(h5tile_inspect(sub, dset, &dt, &nd, s), H5TILE_ERR_NOT_FOUND);
            PATHF(dset, "/box.f0");
            for (int a = 0; a < 2; a++) at[a] = t.offs[2 * j + a] - box_off[a];
            want = box_shp;
        }
        EXPECT_OK(h5tile_inspect(sub, dset, &dt, &nd, s));
        CHECK_MSG(dt == H5TILE_FLOAT64 && nd == 2 && s[0] == want[0] && s[1] == want[1],
                  "%s:%s is %s of %zu dims (%llu x %llu), expected %llu x %llu float64", sub,
                  dset, dtype_name(dt), nd, (unsigned long long)s[0], (unsigned long long)s[1],
                  (unsigned long long)want[0], (unsigned long long)want[1]);
        double *buf = (double *)xmalloc((size_t)volume(2, shp) * sizeof(double));
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, sub, dset, H5TILE_FLOAT64, 2, at, shp, buf, NULL));
        check_values(v, t.offs + 2 * j, shp, buf, dset);
        free(buf);
    }
    /* no dataset for a tile this rank did not write */
    char dset[64];
    PATHF(dset, "/tile.r%d.t%d", rank, per_rank);
    h5tile_dtype dt;
    size_t nd;
    uint64_t s[32];
    EXPECT_STATUS(h5tile_inspect(sub, dset, &dt, &nd, s), H5TILE_ERR_NOT_FOUND);
    free_tiles(&t);
    CHECK_CONTEXT("%s", "");
}

/* ---------------------------------------------------------------- reading back */

/* Column slabs (widths 1 or 2 here), read collectively, every element checked. */
static void read_slabs(const char *path, const char *dset, int v) {
    uint64_t off[2] = {0, G[1] * (uint64_t)rank / (uint64_t)size};
    uint64_t shp[2] = {G[0], G[1] * (uint64_t)(rank + 1) / (uint64_t)size - off[1]};
    double *buf = (double *)xmalloc((size_t)volume(2, shp) * sizeof(double) + 8);
    memset(buf, 0xEE, (size_t)volume(2, shp) * sizeof(double));
    CHECK_CONTEXT("column slab of %s:%s", path, dset);
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, dset, H5TILE_FLOAT64, 2, off, shp, buf, NULL));
    check_values(v, off, shp, buf, "column slab");
    free(buf);
}

/* 5 x 7 chunks dealt over the ranks: every chunk's values, each chunk exactly once. */
static void read_batches(const char *path, const char *dset, int v) {
    const uint64_t chunk[2] = {5, 7};
    const uint64_t rows = (G[0] + 4) / 5, cols = (G[1] + 6) / 7, nchunks = rows * cols;
    CHECK_CONTEXT("batches of %s:%s", path, dset);
    h5tile_batches *it = NULL;
    EXPECT_OK(h5tile_batches_open(MPI_COMM_WORLD, path, dset, 2, chunk, NULL, &it));
    size_t max_bytes = 0;
    uint64_t mine = 0;
    EXPECT_OK(h5tile_batches_info(it, NULL, &max_bytes, &mine));
    CHECK(max_bytes == 5 * 7 * sizeof(double));
    double buf[35];
    int *seen = (int *)calloc((size_t)nchunks, sizeof(int));
    int *all = (int *)xmalloc((size_t)nchunks * sizeof(int));
    CHECK(seen != NULL);
    uint64_t off[2], shp[2], count = 0;
    bool done = false;
    for (;;) {
        EXPECT_OK(h5tile_batches_next(it, buf, sizeof buf, off, shp, &done));
        if (done) break;
        CHECK(off[0] % 5 == 0 && off[1] % 7 == 0);
        CHECK(shp[0] == (G[0] - off[0] < 5 ? G[0] - off[0] : 5));
        CHECK(shp[1] == (G[1] - off[1] < 7 ? G[1] - off[1] : 7));
        check_values(v, off, shp, buf, "chunk");
        seen[off[0] / 5 * cols + off[1] / 7]++;
        count++;
    }
    h5tile_batches_free(it);
    CHECK_MSG(count == mine, "got %llu chunks, info said %llu", (unsigned long long)count,
              (unsigned long long)mine);
    MPI_Allreduce(seen, all, (int)nchunks, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (uint64_t c = 0; c < nchunks; c++)
        CHECK_MSG(all[c] == 1, "chunk %llu delivered %d times over all ranks",
                  (unsigned long long)c, all[c]);
    free(seen);
    free(all);
}

/* Rank 0 alone reads the whole array. */
static void read_whole_alone(const char *path, const char *dset, int v) {
    if (rank != 0) return;
    double *buf = (double *)xmalloc((size_t)volume(2, G) * sizeof(double));
    const uint64_t zero[2] = {0, 0};
    CHECK_CONTEXT("%s:%s whole, by one process", path, dset);
    EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, dset, H5TILE_FLOAT64, 2, zero, G, buf, NULL));
    check_values(v, zero, G, buf, "whole array");
    free(buf);
}

static void read_all_ways(const char *path, const char *dset, int v) {
    h5tile_dtype dt;
    size_t nd;
    uint64_t s[32];
    EXPECT_OK(h5tile_inspect(path, dset, &dt, &nd, s));
    CHECK(dt == H5TILE_FLOAT64 && nd == 2 && s[0] == G[0] && s[1] == G[1]);
    read_slabs(path, dset, v);
    read_batches(path, dset, v);
    read_whole_alone(path, dset, v);
    CHECK_CONTEXT("%s", "");
}

/* ---------------------------------------------------------------- cases */

static void case_dir(char *path, size_t n, const char *scratch, const char *name) {
    char dir[4096];
    PATHF(dir, "%s/%s", scratch, name);
    if (rank == 0) mkdir_p(dir);
    MPI_Barrier(MPI_COMM_WORLD);
    check_pathf(__FILE__, __LINE__, path, n, "%s/data.h5", dir);
}

/* Number of groups of k (0: the node) over MPI_COMM_WORLD. */
/* One hash of the names and contents of the files of `dir` whose names start with `prefix`. */
static uint64_t hash_files(const char *dir, const char *prefix) {
    int n;
    char **names = list_dir(dir, &n);
    uint64_t all = 0;
    for (int i = 0; i < n; i++)
        if (strncmp(names[i], prefix, strlen(prefix)) == 0) {
            char p[4096];
            PATHF(p, "%s/%s", dir, names[i]);
            all = fnv_bytes(all, names[i], strlen(names[i]));
            uint64_t h = hash_file(p);
            all = fnv_bytes(all, &h, sizeof h);
        }
    free_names(names, n);
    return all;
}

static int group_count(int k) {
    int *l = leaders(k), n = 0;
    for (int r = 0; r < size; r++) n += l[r] == r;
    free(l);
    return n;
}

/* Write `v` with subfiles, check the files, the datasets in them, and read back every way. */
static void subfiles_roundtrip(const char *path, int v, int per_rank, uint32_t flags,
                               uint64_t per_file, char *gen_inout) {
    h5tile_write_options o = options(H5TILE_LAYOUT_SUBFILES, flags, per_file);
    CHECK_CONTEXT("subfiled write of version %d to %s (%d per rank, flags %u, ranks_per_file %llu)",
                  v, path, per_rank, flags, (unsigned long long)per_file);
    write_version(path, "/data", v, per_rank, &o);
    int k = env_k;
    if (per_file) k = per_file > (uint64_t)node_size ? node_size : (int)per_file;
    expect_files want[1] = {{"data", SUBFILES, k, ""}};
    check_folder(path, want, 1);
    CHECK_MSG(strcmp(want[0].gen, gen_inout) != 0, "the write reused generation %s", gen_inout);
    memcpy(gen_inout, want[0].gen, 17);
    check_my_datasets(path, "data", want[0].gen, k, v, per_rank);
    read_all_ways(path, "/data", v);
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_MULTIPLE, &rank, &size);
    char env[64];
    const char *e = getenv("H5TILE_RANKS_PER_FILE");
    CHECK_MSG(e != NULL && atoi(e) > 0, "run with H5TILE_RANKS_PER_FILE=k set (k > 0)");
    PATHF(env, "%s", e);
    env_k = atoi(env);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    node_ranks = (int *)xmalloc(sizeof(int) * (size_t)node_size);
    MPI_Allgather(&rank, 1, MPI_INT, node_ranks, 1, MPI_INT, node);
    int first = node_rank == 0;
    MPI_Allreduce(&first, &nnodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (env_k > node_size) env_k = node_size;
    int groups = group_count(env_k);
    /* what ctest runs: 64 ranks on one machine, groups of 8 */
    if (size == 64 && nnodes == 1 && env_k == 8)
        CHECK_MSG(groups == 8, "64 ranks in groups of 8 make %d groups", groups);

    char one[4096], two[4096], gen[17] = "", gen2[17] = "";
    case_dir(one, sizeof one, scratch, "one");
    case_dir(two, sizeof two, scratch, "two");

    /* 1. one tile per rank */
    subfiles_roundtrip(one, 1, 1, 0, 0, gen);
    /* 2. two tiles per rank */
    subfiles_roundtrip(two, 2, 2, 0, 0, gen2);

    /* 3. H5TILE_KEEP_OTHERS: /fields/other beside /data, then /data rewritten */
    {
        h5tile_write_options keep = options(H5TILE_LAYOUT_SUBFILES, H5TILE_KEEP_OTHERS, 0);
        CHECK_CONTEXT("/fields/other added to %s", one);
        write_version(one, "/fields/other", 3, 1, &keep);
        expect_files want[2] = {{"data", SUBFILES, env_k, ""},
                                {"fields+other", SUBFILES, env_k, ""}};
        check_folder(one, want, 2);
        CHECK_MSG(strcmp(want[0].gen, gen) == 0, "adding /fields/other changed /data's files");
        char other_gen[17];
        memcpy(other_gen, want[1].gen, 17);
        check_my_datasets(one, "fields+other", other_gen, env_k, 3, 1);
        uint64_t other_hash = 0;
        char dir[4096];
        TILE_DIR(dir, one);
        /* the hash of /fields/other's subfiles, to see them untouched by /data's rewrite */
        if (rank == 0) other_hash = hash_files(dir, "fields+other.");
        CHECK_CONTEXT("/data of %s rewritten beside /fields/other", one);
        write_version(one, "/data", 4, 1, &keep);
        check_folder(one, want, 2);
        CHECK_MSG(strcmp(want[0].gen, gen) != 0, "/data's rewrite kept generation %s", gen);
        CHECK_MSG(strcmp(want[1].gen, other_gen) == 0, "/fields/other's subfiles were replaced");
        memcpy(gen, want[0].gen, 17);
        if (rank == 0)
            CHECK_MSG(hash_files(dir, "fields+other.") == other_hash,
                      "/fields/other's subfiles changed");
        check_my_datasets(one, "data", gen, env_k, 4, 1);
        read_all_ways(one, "/data", 4);
        read_slabs(one, "/fields/other", 3);
        read_whole_alone(one, "/fields/other", 3);
    }

    /* 4. layouts replacing each other */
    {
        h5tile_write_options vds_keep = options(H5TILE_LAYOUT_VDS, H5TILE_KEEP_OTHERS, 0);
        h5tile_write_options sub_keep = options(H5TILE_LAYOUT_SUBFILES, H5TILE_KEEP_OTHERS, 0);
        h5tile_write_options single = options(H5TILE_LAYOUT_SINGLE, 0, 0);
        h5tile_write_options vds = options(H5TILE_LAYOUT_VDS, 0, 0);
        /* 4a. /data as VDS beside the subfiled /fields/other: /data's subfiles go */
        CHECK_CONTEXT("VDS over subfiles, kept beside /fields/other");
        write_version(one, "/data", 5, 1, &vds_keep);
        expect_files w1[2] = {{"data", TILES, 0, ""}, {"fields+other", SUBFILES, env_k, ""}};
        check_folder(one, w1, 2);
        read_slabs(one, "/data", 5);
        read_slabs(one, "/fields/other", 3);
        /* 4b. and back to subfiles: the tile files go */
        CHECK_CONTEXT("subfiles over VDS, kept beside /fields/other");
        write_version(one, "/data", 6, 1, &sub_keep);
        expect_files w2[2] = {{"data", SUBFILES, env_k, ""}, {"fields+other", SUBFILES, env_k, ""}};
        check_folder(one, w2, 2);
        CHECK(strcmp(w2[1].gen, w1[1].gen) == 0);
        read_slabs(one, "/data", 6);
        read_whole_alone(one, "/fields/other", 3);
        /* 4c. the single-file layout replaces the whole file: no subfile of either remains */
        CHECK_CONTEXT("single file over subfiles");
        write_version(one, "/data", 7, 1, &single);
        check_folder(one, NULL, 0);
        read_slabs(one, "/data", 7);
        if (rank == 0) {
            h5tile_dtype dt;
            size_t nd;
            uint64_t s[32];
            EXPECT_STATUS(h5tile_inspect(one, "/fields/other", &dt, &nd, s), H5TILE_ERR_NOT_FOUND);
        }
        /* 4d. subfiles over the single file */
        subfiles_roundtrip(one, 8, 1, 0, 0, gen);
        /* 4e. VDS over subfiles, then subfiles over VDS */
        CHECK_CONTEXT("VDS over subfiles");
        write_version(one, "/data", 9, 1, &vds);
        expect_files w3[1] = {{"data", TILES, 0, ""}};
        check_folder(one, w3, 1);
        read_slabs(one, "/data", 9);
        subfiles_roundtrip(one, 10, 1, 0, 0, gen);
    }

    /* 5. H5TILE_NO_SYNC on every layout */
    {
        subfiles_roundtrip(one, 11, 1, H5TILE_NO_SYNC, 0, gen);
        subfiles_roundtrip(two, 12, 2, H5TILE_NO_SYNC | H5TILE_KEEP_OTHERS, 0, gen2);
        char vpath[4096], spath[4096];
        case_dir(vpath, sizeof vpath, scratch, "nosync_vds");
        case_dir(spath, sizeof spath, scratch, "nosync_single");
        h5tile_write_options vds = options(H5TILE_LAYOUT_VDS, H5TILE_NO_SYNC, 0);
        h5tile_write_options single = options(H5TILE_LAYOUT_SINGLE, H5TILE_NO_SYNC, 0);
        CHECK_CONTEXT("VDS with H5TILE_NO_SYNC");
        write_version(vpath, "/data", 13, 1, &vds);
        expect_files w[1] = {{"data", TILES, 0, ""}};
        check_folder(vpath, w, 1);
        read_slabs(vpath, "/data", 13);
        CHECK_CONTEXT("single file with H5TILE_NO_SYNC");
        write_version(spath, "/data", 14, 1, &single);
        check_folder(spath, NULL, 0);
        read_slabs(spath, "/data", 14);
        read_whole_alone(spath, "/data", 14);
    }

    /* 6. ranks_per_file overrides H5TILE_RANKS_PER_FILE */
    {
        subfiles_roundtrip(one, 15, 1, 0, 16, gen);
        if (size == 64 && nnodes == 1) CHECK_MSG(group_count(16) == 4, "64 ranks in groups of 16");
        subfiles_roundtrip(two, 16, 2, 0, 1, gen2);
        CHECK(group_count(1) == size);
        subfiles_roundtrip(one, 17, 1, 0, 1u << 20, gen);
        CHECK(group_count(1 << 20) == nnodes);
    }

    /* 7. in the background */
    {
        h5tile_write_options o = options(H5TILE_LAYOUT_SUBFILES, 0, 0);
        my_tiles t = make_tiles(18, 1);
        h5tile_request *req = NULL;
        CHECK_CONTEXT("h5tile_write_async with subfiles");
        EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, one, "/data", H5TILE_FLOAT64, 2, G, t.offs,
                                     t.shps, t.bufs[0], &o, &req));
        EXPECT_OK(h5tile_wait(req));
        free_tiles(&t);
        expect_files w[1] = {{"data", SUBFILES, env_k, ""}};
        check_folder(one, w, 1);
        check_my_datasets(one, "data", w[0].gen, env_k, 18, 1);
        read_slabs(one, "/data", 18);

        t = make_tiles(19, 2);
        const void *bufs[2] = {t.bufs[0], t.bufs[1]};
        CHECK_CONTEXT("h5tile_write_tiles_async with subfiles, completed by h5tile_fence");
        EXPECT_OK(h5tile_write_tiles_async(MPI_COMM_WORLD, two, "/data", H5TILE_FLOAT64, 2, G, 2,
                                           t.offs, t.shps, bufs, &o, NULL));
        EXPECT_OK(h5tile_fence(MPI_COMM_WORLD));
        free_tiles(&t);
        check_folder(two, w, 1);
        check_my_datasets(two, "data", w[0].gen, env_k, 19, 2);
        read_all_ways(two, "/data", 19);
    }

    /* 8. a failing write touches nothing */
    {
        dataset_snapshot snap = {0, 0, 0};
        if (rank == 0) snap = snapshot(two);
        h5tile_write_options o = options(H5TILE_LAYOUT_SUBFILES, 0, 0);
        my_tiles t = make_tiles(20, 1);
        if (rank == size - 1) t.offs[0] = G[0] - t.shps[0] + 1;
        const void *bufs[1] = {t.bufs[0]};
        CHECK_CONTEXT("a subfiled write with a tile outside the array");
        EXPECT_STATUS(h5tile_write_tiles(MPI_COMM_WORLD, two, "/data", H5TILE_FLOAT64, 2, G, 1,
                                         t.offs, t.shps, bufs, &o),
                      H5TILE_ERR_INVALID_ARGUMENT);
        free_tiles(&t);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) CHECK_UNTOUCHED(two, snap);
        read_slabs(two, "/data", 19);

        /* 9. group sizes that cannot be used: refused on every rank, nothing touched */
        my_tiles u = make_tiles(21, 1);
        const void *ub[1] = {u.bufs[0]};
        const char *bad[2] = {"abc", "0"};
        for (int b = 0; b < 4; b++) {
            /* b = 0, 1: a bad H5TILE_RANKS_PER_FILE on every rank; 2: on the last rank only;
             * 3: ranks_per_file differing between ranks */
            h5tile_write_options w = options(H5TILE_LAYOUT_SUBFILES, 0, 0);
            if (b < 2 || (b == 2 && rank == size - 1))
                CHECK(setenv("H5TILE_RANKS_PER_FILE", bad[b % 2], 1) == 0);
            if (b == 3) w.ranks_per_file = rank == size - 1 ? 1 : 2;
            CHECK_CONTEXT("a subfiled write with bad group sizes (case %d)", b);
            EXPECT_STATUS(h5tile_write_tiles(MPI_COMM_WORLD, two, "/data", H5TILE_FLOAT64, 2, G, 1,
                                             u.offs, u.shps, ub, &w),
                          H5TILE_ERR_INVALID_ARGUMENT);
            if (b < 3) {
                char want[128];
                PATHF(want, "H5TILE_RANKS_PER_FILE=%s: expected a number of ranks, 1 or more",
                      bad[b % 2]);
                CHECK_MSG(strstr(h5tile_last_error(), want) != NULL,
                          "the message \"%s\" lacks \"%s\"", h5tile_last_error(), want);
            } else {
                CHECK_MSG(strstr(h5tile_last_error(), "ranks disagree") != NULL,
                          "the message \"%s\" does not say the ranks disagree",
                          h5tile_last_error());
                /* ... and shows this rank's options, so the difference can be found */
                char want[64];
                PATHF(want, "%d ranks per file", rank == size - 1 ? 1 : 2);
                CHECK_MSG(strstr(h5tile_last_error(), want) != NULL,
                          "the message \"%s\" lacks \"%s\"", h5tile_last_error(), want);
            }
            CHECK(setenv("H5TILE_RANKS_PER_FILE", env, 1) == 0);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) CHECK_UNTOUCHED(two, snap);
        }

        /* 10. H5TILE_COALESCE: a bad value on every rank, then ranks that disagree (rank 0 would
         * map the subfiles otherwise than their first ranks wrote them): refused, nothing
         * touched */
        const char *was = getenv("H5TILE_COALESCE");
        char kept[16] = "";
        if (was) PATHF(kept, "%s", was);
        for (int b = 0; b < 2; b++) {
            if (b == 1 && size == 1) break;
            h5tile_write_options w = options(H5TILE_LAYOUT_SUBFILES, 0, 0);
            const char *value = b == 0 ? "yes" : (rank == size - 1) == (kept[0] == '0') ? "1" : "0";
            CHECK(setenv("H5TILE_COALESCE", value, 1) == 0);
            CHECK_CONTEXT("a subfiled write with H5TILE_COALESCE=%s (case %d)", value, b);
            EXPECT_STATUS(h5tile_write_tiles(MPI_COMM_WORLD, two, "/data", H5TILE_FLOAT64, 2, G, 1,
                                             u.offs, u.shps, ub, &w),
                          H5TILE_ERR_INVALID_ARGUMENT);
            const char *want = b == 0 ? "H5TILE_COALESCE=yes: give 1" : "coalescing off";
            CHECK_MSG(strstr(h5tile_last_error(), want) != NULL, "the message \"%s\" lacks \"%s\"",
                      h5tile_last_error(), want);
            if (was) CHECK(setenv("H5TILE_COALESCE", kept, 1) == 0);
            else CHECK(unsetenv("H5TILE_COALESCE") == 0);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) CHECK_UNTOUCHED(two, snap);
        }
        free_tiles(&u);
        read_slabs(two, "/data", 19);
    }

    CHECK_CONTEXT("done");
    free(node_ranks);
    MPI_Comm_free(&node);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_subfiles: OK on %d ranks, %d node%s, %d subfiles of %d ranks\n", size, nnodes,
               nnodes == 1 ? "" : "s", groups, env_k);
    MPI_Finalize();
    return 0;
}
