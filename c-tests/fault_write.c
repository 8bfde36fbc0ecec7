/* The program the fault-injection and durability tests (fault_injection.py) run, under the
 * fault_shim preload: one write, or one check of what is on disk, printing one line per rank.
 *   fault_write write|async|fence PATH vds|single|subfiles|auto KEEP VERSION
 *       writes version VERSION of /data (8 x 6 float64, two tiles per rank, in rows) in that
 *       layout; KEEP=1 adds H5TILE_KEEP_OTHERS (and, for VERSION 1, first writes /other beside
 *       it); FAULT_WRITE_NO_SYNC=1 in the environment adds H5TILE_NO_SYNC (the subfiles' groups
 *       come from H5TILE_RANKS_PER_FILE, which the library reads); FAULT_WRITE_COMPRESSION=zstd,
 *       lz4 or deflate stores the tiles so, after the byte shuffle (the options' compression
 *       and H5TILE_SHUFFLE). `async` completes the write
 *       with h5tile_wait, `fence` with h5tile_fence. Prints, per rank,
 *       "rank R: STATUS_NAME: MESSAGE".
 *       FAULT_WRITE_SNAPSHOT=1 adds H5TILE_SNAPSHOT (async, fence, and ckpt and series, which
 *       then commit with h5tile_checkpoint_commit_async and h5tile_wait): as soon as the call
 *       returns, the buffers it was given are overwritten with version 99, before the wait, so
 *       a file of any other version shows whether the library read them after the call.
 *   fault_write ckpt PATH LAYOUT KEEP VERSION
 *       the same /data and, in the same commit (h5tile_checkpoint_*), the int32 vector
 *       /aux/count (4 elements, v * 10 + i, spread over the ranks) and the file's attribute
 *       "version" = v: a checkpoint of several fields.
 *   fault_write series DIR LAYOUT KEEP STEP
 *       the checkpoint of `ckpt` as step STEP (version STEP) of the series in the folder DIR,
 *       kept with keep_last 2 and keep_every 3; FAULT_WRITE_STEPS=N commits steps STEP to
 *       STEP + N - 1 in turn (one line per rank for the last, or the first that fails).
 *   fault_write check PATH vds|single|subfiles KEEP 0
 *       reads /data whole and prints "version V" when it is all of version V (else what is
 *       wrong), and with KEEP=1 "other intact" or what is wrong with /other. With
 *       FAULT_WRITE_FIELDS=1 (checkpoints), "version V" needs /aux/count and the attribute to
 *       be of version V too. A PATH that is a folder is a series: "latest S" (the step
 *       h5tile_series_latest names, or "latest: STATUS: MESSAGE") and the check of it, then
 *       "step T: " and the check of every other checkpoint whose master is in the folder.
 * For the kill tests, FAULT_WRITE_READY_DIR=DIR: empty files in DIR mark moments of rank R's
 * run: ready.R as the write starts (with FAULT_WRITE_SNAPSHOT, once the first snapshot call has
 * returned: the kills then fall while writes drain in the background), done.R once it has
 * ended; with FAULT_WRITE_SNAPSHOT also returned.V.R once the snapshot call of version V
 * returned, drained.V.R once its wait (or fence) did.
 * Under an MPI launcher it runs over MPI_COMM_WORLD (MPI_THREAD_MULTIPLE, so that background
 * writes run in the background); alone, with MPI_COMM_NULL and no MPI_Init. */
#include "check.h"

/* The dataset's shape: 8 x 6, or FAULT_WRITE_ROWS x 6 (the real full-disk test). */
static uint64_t G[2] = {8, 6};

static double value(int v, uint64_t i) { return (double)v * 1000.0 + (double)i * 0.25; }

/* The empty file DIR/NAME.RANK, where DIR (FAULT_WRITE_READY_DIR) is set. */
static void mark(const char *dir, const char *name, int rank) {
    if (!dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%d", dir, name, rank);
    write_text_file(path, "");
}

/* The mark DIR/KIND.V.RANK of the snapshot write of version v. */
static void mark_version(const char *dir, const char *kind, int v, int rank) {
    char name[64];
    snprintf(name, sizeof name, "%s.%d", kind, v);
    mark(dir, name, rank);
}

/* Right after the snapshot call of version v returned: this rank's buffers (`n` values of
 * /data from element `first`, `naux` of /aux/count, as add_aux wrote them) become version 99,
 * which the file must not get; then the marks (ready at the first such call). */
static void scribble(const char *ready, int rank, int v, double *data, uint64_t n,
                     uint64_t first, int32_t *aux, uint64_t naux, int *marked) {
    for (uint64_t k = 0; k < n; k++) data[k] = value(99, first + k);
    for (uint64_t i = 0; i < naux; i++) aux[i] += (99 - v) * 10;
    mark_version(ready, "returned", v, rank);
    if (!*marked) mark(ready, "ready", rank);
    *marked = 1;
}

static int launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_SIZE") != NULL;
}

/* Each rank's "rank R: STATUS: MESSAGE" line, printed by rank 0 in rank order (lines printed
 * by several processes at once can be cut into each other by the launcher). */
static void report(MPI_Comm comm, int rank, int size, h5tile_status s) {
    char line[16384];
    int n = snprintf(line, sizeof line, "rank %d: %s: %s\n", rank, h5tile_status_name(s),
                     s == H5TILE_OK ? "" : h5tile_last_error());
    if (n < 0 || n >= (int)sizeof line) n = (int)sizeof line - 1;
    if (comm == MPI_COMM_NULL) {
        fputs(line, stdout);
        return;
    }
    int *lens = (int *)xmalloc(sizeof(int) * (size_t)size);
    int *starts = (int *)xmalloc(sizeof(int) * (size_t)size);
    MPI_Gather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, comm);
    int total = 0;
    for (int r = 0; rank == 0 && r < size; r++) {
        starts[r] = total;
        total += lens[r];
    }
    char *all = (char *)xmalloc((size_t)total + 1);
    MPI_Gatherv(line, n, MPI_CHAR, all, lens, starts, MPI_CHAR, 0, comm);
    if (rank == 0) fwrite(all, 1, (size_t)total, stdout);
    free(all);
    free(starts);
    free(lens);
}

static h5tile_status write_other(MPI_Comm comm, int rank, const char *path,
                                 const h5tile_write_options *opts) {
    double other[5] = {1, 2, 3, 4, 5};
    const uint64_t s[1] = {5}, z[1] = {0}, none[1] = {0};
    return h5tile_write(comm, path, "/other", H5TILE_FLOAT64, 1, s, z, rank == 0 ? s : none,
                        other, opts);
}

/* The extra fields of a checkpoint of version v: /aux/count (4 int32, v * 10 + i; rank r of
 * `size` holds elements [4r / size, 4(r + 1) / size)) and the file's attribute "version". */
static h5tile_status add_aux(h5tile_checkpoint *ck, int rank, int size, int v, int32_t *aux) {
    const uint64_t g[1] = {4}, lo = 4 * (uint64_t)rank / (uint64_t)size,
                   hi = 4 * (uint64_t)(rank + 1) / (uint64_t)size;
    const uint64_t off[1] = {lo}, shp[1] = {hi - lo};
    for (uint64_t i = lo; i < hi; i++) aux[i - lo] = v * 10 + (int32_t)i;
    h5tile_status s = h5tile_checkpoint_add(ck, "/aux/count", H5TILE_INT32, 1, g, off, shp, aux);
    const int64_t version = v;
    if (s == H5TILE_OK) s = h5tile_checkpoint_attr(ck, "/", "version", H5TILE_INT64, 1, &version);
    return s;
}

/* Whether the extra fields of `path` are of version v; else prints what is wrong (after
 * `prefix`). */
static int aux_is(const char *path, int v, const char *prefix) {
    int32_t aux[4];
    const uint64_t z[1] = {0}, s4[1] = {4};
    h5tile_status s = h5tile_read(MPI_COMM_NULL, path, "/aux/count", H5TILE_INT32, 1, z, s4, aux, NULL);
    if (s != H5TILE_OK) {
        printf("%saux: %s: %s\n", prefix, h5tile_status_name(s), h5tile_last_error());
        return 0;
    }
    for (int i = 0; i < 4; i++)
        if (aux[i] != v * 10 + i) {
            printf("%smixed: /aux/count[%d] is %d, not of version %d\n", prefix, i, aux[i], v);
            return 0;
        }
    int64_t version = -1;
    s = h5tile_attr_read(MPI_COMM_NULL, path, "/", "version", H5TILE_INT64, 1, &version);
    if (s != H5TILE_OK || version != v) {
        printf("%smixed: attribute version %lld (%s), /data of version %d\n", prefix,
               (long long)version, h5tile_status_name(s), v);
        return 0;
    }
    return 1;
}

/* Prints "<prefix>version V" when every field of `path` is of version V (else what is wrong),
 * and with `keep` "other intact" or what is wrong with /other. */
static void check_file(const char *path, int keep, int with_aux, const char *prefix) {
    uint64_t n = G[0] * G[1];
    double *all = (double *)xmalloc(n * sizeof(double));
    const uint64_t zero[2] = {0, 0};
    h5tile_status s = h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, zero, G, all, NULL);
    if (s != H5TILE_OK) {
        printf("%sread: %s: %s\n", prefix, h5tile_status_name(s), h5tile_last_error());
    } else {
        int v = (int)(all[0] / 1000.0), whole = 1;
        for (uint64_t i = 0; i < n; i++) whole &= all[i] == value(v, i);
        if (!whole) printf("%smixed: element 0 of version %d, not the rest\n", prefix, v);
        else if (!with_aux || aux_is(path, v, prefix)) printf("%sversion %d\n", prefix, v);
    }
    free(all);
    if (keep) {
        double other[5];
        const uint64_t s5[1] = {5}, z[1] = {0};
        s = h5tile_read(MPI_COMM_NULL, path, "/other", H5TILE_FLOAT64, 1, z, s5, other, NULL);
        int intact = s == H5TILE_OK;
        for (int i = 0; intact && i < 5; i++) intact = other[i] == i + 1;
        if (intact) printf("%sother intact\n", prefix);
        else printf("%sother damaged: %s: %s\n", prefix, h5tile_status_name(s), h5tile_last_error());
    }
}

/* The series in `dir`: "latest S" and the check of that checkpoint (or "latest: STATUS:
 * MESSAGE"), then "step T: " and the check of every other checkpoint whose master is there. */
static void check_series(const char *dir, int keep, int with_aux) {
    char latest[4096];
    uint64_t step = 0;
    h5tile_status s = h5tile_series_latest(MPI_COMM_NULL, dir, 0, &step, latest, sizeof latest);
    if (s != H5TILE_OK) {
        printf("latest: %s: %s\n", h5tile_status_name(s), h5tile_last_error());
    } else {
        printf("latest %llu\n", (unsigned long long)step);
        check_file(latest, keep, with_aux, "");
    }
    int count;
    char **names = list_dir(dir, &count);
    for (int i = 0; i < count; i++) {
        unsigned long long t = 0;
        char tail[8] = "", master[4096], prefix[64];
        if (sscanf(names[i], "ckpt.%llu%7s", &t, tail) != 2 || strcmp(tail, ".h5") != 0) continue;
        if (s == H5TILE_OK && t == step) continue;
        PATHF(master, "%s/%s", dir, names[i]);
        snprintf(prefix, sizeof prefix, "step %llu: ", t);
        check_file(master, keep, with_aux, prefix);
    }
    if (names) free_names(names, count);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr,
                "usage: %s write|async|fence|ckpt|series|check PATH vds|single|subfiles|auto KEEP "
                "VERSION\n",
                argv[0]);
        return 2;
    }
    /* auto: the default, H5TILE_LAYOUT_AUTO, which gives two tiles a rank a subfile a rank. */
    const char *layouts[4] = {"vds", "single", "subfiles", "auto"};
    const h5tile_layout layout_codes[4] = {H5TILE_LAYOUT_VDS, H5TILE_LAYOUT_SINGLE,
                                           H5TILE_LAYOUT_SUBFILES, H5TILE_LAYOUT_AUTO};
    int layout = -1;
    for (int l = 0; l < 4; l++)
        if (strcmp(argv[3], layouts[l]) == 0) layout = l;
    if (layout < 0) {
        fprintf(stderr, "%s: unknown layout '%s' (vds, single, subfiles or auto)\n", argv[0],
                argv[3]);
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    int keep = atoi(argv[4]), version = atoi(argv[5]), rank = 0, size = 1;
    MPI_Comm comm = MPI_COMM_NULL;
    if (getenv("FAULT_WRITE_ROWS")) G[0] = strtoull(getenv("FAULT_WRITE_ROWS"), NULL, 10);
    if (launched()) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        comm = MPI_COMM_WORLD;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
    }
    h5tile_write_options opts = h5tile_write_options_default();
    opts.layout = layout_codes[layout];
    opts.flags = keep ? H5TILE_KEEP_OTHERS : 0;
    const char *no_sync = getenv("FAULT_WRITE_NO_SYNC");
    if (no_sync && strcmp(no_sync, "1") == 0) opts.flags |= H5TILE_NO_SYNC;
    const char *codec = getenv("FAULT_WRITE_COMPRESSION");
    if (codec && *codec) {
        const char *codecs[3] = {"zstd", "lz4", "deflate"};
        const h5tile_compression codes[3] = {H5TILE_COMPRESS_ZSTD, H5TILE_COMPRESS_LZ4,
                                             H5TILE_COMPRESS_DEFLATE};
        for (int c = 0; c < 3; c++)
            if (strcmp(codec, codecs[c]) == 0) opts.compression = codes[c];
        if (opts.compression == H5TILE_COMPRESS_NONE) {
            fprintf(stderr, "%s: unknown FAULT_WRITE_COMPRESSION '%s'\n", argv[0], codec);
            return 2;
        }
        opts.flags |= H5TILE_SHUFFLE;
    }
    const char *snap_env = getenv("FAULT_WRITE_SNAPSHOT");
    int snap = snap_env && strcmp(snap_env, "1") == 0;
    if (snap) opts.flags |= H5TILE_SNAPSHOT;

    if (strcmp(mode, "check") == 0) {
        const char *fields = getenv("FAULT_WRITE_FIELDS");
        int with_aux = fields && strcmp(fields, "1") == 0;
        struct stat st;
        if (rank == 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            check_series(path, keep, with_aux);
        } else if (rank == 0) {
            check_file(path, keep, with_aux, "");
        }
    } else {
        if (keep && version == 1) {
            h5tile_status s = write_other(comm, rank, path, &opts);
            if (s != H5TILE_OK) report(comm, rank, size, s);
        }
        /* Two tiles per rank: this rank's rows, cut in two. */
        uint64_t rows = G[0] / (uint64_t)size, first = rows * (uint64_t)rank;
        if (rank == size - 1) rows = G[0] - first;
        uint64_t half = rows / 2;
        uint64_t offs[4] = {first, 0, first + half, 0}, shps[4] = {half, G[1], rows - half, G[1]};
        double *data = (double *)xmalloc(rows * G[1] * sizeof(double));
        for (uint64_t k = 0; k < rows * G[1]; k++) data[k] = value(version, first * G[1] + k);
        const void *bufs[2] = {data, data + half * G[1]};
        /* For the kill tests (see the marks above). */
        const char *ready = getenv("FAULT_WRITE_READY_DIR");
        int marked = 0;
        if (!snap) mark(ready, "ready", rank);
        h5tile_status s;
        int32_t aux[4];
        /* This rank's part of /aux/count (see add_aux). */
        const uint64_t naux = 4 * (uint64_t)(rank + 1) / (uint64_t)size -
                              4 * (uint64_t)rank / (uint64_t)size;
        if (strcmp(mode, "ckpt") == 0 || strcmp(mode, "series") == 0) {
            const char *steps = getenv("FAULT_WRITE_STEPS");
            int n = steps ? atoi(steps) : 1, series = strcmp(mode, "series") == 0;
            h5tile_series_options so = h5tile_series_options_default();
            so.keep_last = 2;
            so.keep_every = 3;
            s = H5TILE_OK;
            for (int v = version; s == H5TILE_OK && v < version + (series ? n : 1); v++) {
                for (uint64_t k = 0; k < rows * G[1]; k++) data[k] = value(v, first * G[1] + k);
                h5tile_checkpoint *ck = NULL;
                s = series ? h5tile_series_begin(comm, path, (uint64_t)v, &so, &opts, &ck)
                           : h5tile_checkpoint_begin(comm, path, &opts, &ck);
                for (int t = 0; s == H5TILE_OK && t < 2; t++)
                    s = h5tile_checkpoint_add(ck, "/data", H5TILE_FLOAT64, 2, G, offs + 2 * t,
                                              shps + 2 * t, bufs[t]);
                if (s == H5TILE_OK) s = add_aux(ck, rank, size, v, aux);
                /* A failed add fails the commit on every rank (ck is freed either way). */
                if (ck && snap) {
                    h5tile_request *req = NULL;
                    h5tile_status c = h5tile_checkpoint_commit_async(ck, &req);
                    if (c == H5TILE_OK) {
                        scribble(ready, rank, v, data, rows * G[1], first * G[1], aux, naux,
                                 &marked);
                        c = h5tile_wait(req);
                        mark_version(ready, "drained", v, rank);
                    }
                    if (s == H5TILE_OK) s = c;
                } else if (ck) {
                    h5tile_status c = h5tile_checkpoint_commit(ck);
                    if (s == H5TILE_OK) s = c;
                }
            }
        } else if (strcmp(mode, "write") == 0) {
            s = h5tile_write_tiles(comm, path, "/data", H5TILE_FLOAT64, 2, G, 2, offs, shps, bufs,
                                   &opts);
        } else {
            h5tile_request *req = NULL;
            int fence = strcmp(mode, "fence") == 0;
            s = h5tile_write_tiles_async(comm, path, "/data", H5TILE_FLOAT64, 2, G, 2, offs, shps,
                                         bufs, &opts, fence ? NULL : &req);
            if (s == H5TILE_OK && snap)
                scribble(ready, rank, version, data, rows * G[1], first * G[1], aux, 0, &marked);
            if (s == H5TILE_OK) {
                s = fence ? h5tile_fence(comm) : h5tile_wait(req);
                if (snap) mark_version(ready, "drained", version, rank);
            }
        }
        mark(ready, "done", rank);
        report(comm, rank, size, s);
        free(data);
    }
    fflush(stdout);
    if (comm != MPI_COMM_NULL) MPI_Finalize();
    return 0;
}
