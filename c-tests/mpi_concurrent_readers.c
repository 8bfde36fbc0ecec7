/* Readers while a writer replaces the dataset (4 ranks): rank 0 rewrites a 4-tile dataset
 * ROUNDS times, alone (MPI_COMM_SELF), while ranks 1 and 2 read it collectively (each half
 * of it, over their own communicator) and rank 3 reads it whole and in batches, in loops, until
 * the writer is done. Every read must succeed and give one whole version: every element of
 * one version, the same version on both collective readers, never older than the version that
 * reader saw before. Run for the VDS layout, the single-file layout, and the VDS layout with
 * H5TILE_KEEP_OTHERS beside another dataset.
 *
 * Then readers of a series' latest checkpoint while its steps are committed and pruned (the
 * VDS and subfiled layouts): rank 0 commits steps 1 to ROUNDS of a series kept with keep_last
 * KEEP_LAST and keep_every KEEP_EVERY, each a checkpoint of /data (as above, version = step),
 * /aux (int32, step * 10 + i) and the file's attribute "step"; ranks 1 and 2 (collectively)
 * and rank 3 (alone) loop: h5tile_series_latest (also with H5TILE_SERIES_VERIFY, which
 * checks checksums while pruning removes what it checks), then every field of the checkpoint it named,
 * which must all be of that step, the step never older than the one before. A read may fail
 * only as the series' contract allows (docs/files-on-disk.md): with H5TILE_ERR_NOT_FOUND or
 * H5TILE_ERR_MISSING_TILE on every reader, the checkpoint being pruned during the read, which
 * needs KEEP_LAST newer steps committed (a fresh h5tile_series_latest shows them) and a step
 * the rule does not keep; the reader then asks for the latest again. After the last commit
 * the series holds exactly what the rule keeps. */
#include "check.h"

#define ROUNDS 40
#define DONE_TAG 7
#define KEEP_LAST 2
#define KEEP_EVERY 3

static int rank, size;
static const uint64_t G[2] = {12, 10};

/* Value of element i in version v of the dataset. */
static double value(int v, uint64_t i) { return (double)v * 1000.0 + (double)i * 0.5; }

/* The version `buf` holds (h rows of w elements from global (r0, c0)), after checking that
 * every element belongs to it. */
static int version_of(const double *buf, uint64_t r0, uint64_t c0, uint64_t h, uint64_t w) {
    int v = (int)(buf[0] / 1000.0);
    for (uint64_t r = 0; r < h; r++)
        for (uint64_t c = 0; c < w; c++) {
            uint64_t i = (r0 + r) * G[1] + c0 + c;
            CHECK_MSG(buf[r * w + c] == value(v, i),
                      "rank %d: element (%llu, %llu) is %g: not version %d (%g), a mixture", rank,
                      (unsigned long long)(r0 + r), (unsigned long long)(c0 + c), buf[r * w + c],
                      v, value(v, i));
        }
    return v;
}

static void write_version(const char *path, int v, h5tile_write_options *opts) {
    /* Four row blocks of 3 rows: four tile files in the VDS layout. */
    double data[4][30];
    uint64_t offs[8], shps[8];
    const void *bufs[4];
    for (int t = 0; t < 4; t++) {
        offs[2 * t] = (uint64_t)t * 3;
        offs[2 * t + 1] = 0;
        shps[2 * t] = 3;
        shps[2 * t + 1] = G[1];
        for (uint64_t k = 0; k < 30; k++) data[t][k] = value(v, (uint64_t)t * 30 + k);
        bufs[t] = data[t];
    }
    EXPECT_OK(h5tile_write_tiles(MPI_COMM_SELF, path, "/data", H5TILE_FLOAT64, 2, G, 4, offs, shps,
                                 bufs, opts));
}

/* Whether the writer said it is done (a message from rank 0), without waiting. */
static int writer_done(void) {
    int flag = 0;
    MPI_Iprobe(0, DONE_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (flag) MPI_Recv(NULL, 0, MPI_INT, 0, DONE_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return flag;
}

/* Ranks 1 and 2: each reads its half collectively; both must get the same version. */
static int collective_reads(const char *path, MPI_Comm readers) {
    int me, last = -1, reads = 0, done = 0;
    MPI_Comm_rank(readers, &me);
    uint64_t off[2] = {(uint64_t)me * 6, 0}, shp[2] = {6, G[1]};
    double half[60];
    while (!done) {
        EXPECT_OK(h5tile_read(readers, path, "/data", H5TILE_FLOAT64, 2, off, shp, half, NULL));
        int v = version_of(half, off[0], 0, 6, G[1]);
        int lo, hi;
        MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, readers);
        MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, readers);
        CHECK_MSG(lo == hi, "one collective read gave versions %d and %d", lo, hi);
        CHECK_MSG(v >= last, "read version %d after version %d", v, last);
        last = v;
        reads++;
        /* Both readers stop together: the first to hear from the writer tells the other. */
        int local = writer_done();
        MPI_Allreduce(&local, &done, 1, MPI_INT, MPI_MAX, readers);
    }
    return reads;
}

/* Rank 3: whole reads and batched reads (chunks of 2 rows) in turn. */
static int whole_and_batched_reads(const char *path) {
    int last = -1, reads = 0;
    double all[120];
    const uint64_t zero[2] = {0, 0}, chunk[2] = {2, G[1]};
    while (!writer_done()) {
        EXPECT_OK(h5tile_read(MPI_COMM_SELF, path, "/data", H5TILE_FLOAT64, 2, zero, G, all, NULL));
        int v = version_of(all, 0, 0, G[0], G[1]);
        CHECK_MSG(v >= last, "read version %d after version %d", v, last);
        last = v;
        h5tile_batches *it = NULL;
        EXPECT_OK(h5tile_batches_open(MPI_COMM_SELF, path, "/data", 2, chunk, NULL, &it));
        int chunks = 0, batch_version = -1;
        for (;;) {
            double buf[20];
            uint64_t o[2], s[2];
            bool end = false;
            EXPECT_OK(h5tile_batches_next(it, buf, sizeof buf, o, s, &end));
            if (end) break;
            int cv = version_of(buf, o[0], o[1], s[0], s[1]);
            if (batch_version < 0) batch_version = cv;
            CHECK_MSG(cv == batch_version, "one batched read gave versions %d and %d",
                      batch_version, cv);
            chunks++;
        }
        h5tile_batches_free(it);
        CHECK_MSG(chunks == 6, "batched read gave %d chunks, expected 6", chunks);
        CHECK_MSG(batch_version >= last, "batches gave version %d after version %d",
                  batch_version, last);
        last = batch_version;
        reads += 2;
    }
    return reads;
}

static void run(const char *scratch, const char *name, h5tile_layout layout, uint32_t flags,
                MPI_Comm readers) {
    char path[4096];
    check_pathf(__FILE__, __LINE__, path, sizeof path, "%s/%s.h5", scratch, name);
    h5tile_write_options opts = h5tile_write_options_default();
    opts.layout = layout;
    opts.flags = flags;
    if (rank == 0) {
        if (flags & H5TILE_KEEP_OTHERS) {
            /* Another dataset in the same file, which every write must keep. */
            double other[4] = {1, 2, 3, 4};
            const uint64_t s[1] = {4}, z[1] = {0};
            EXPECT_OK(h5tile_write(MPI_COMM_SELF, path, "/other", H5TILE_FLOAT64, 1, s, z, s,
                                   other, &opts));
        }
        write_version(path, 0, &opts);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int reads = 0;
    if (rank == 0) {
        for (int v = 1; v <= ROUNDS; v++) write_version(path, v, &opts);
        for (int r = 1; r < size; r++) MPI_Send(NULL, 0, MPI_INT, r, DONE_TAG, MPI_COMM_WORLD);
    } else if (rank <= 2) {
        reads = collective_reads(path, readers);
    } else {
        reads = whole_and_batched_reads(path);
    }
    /* A reader that stopped because the other one heard first still has its message. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank > 0) writer_done();
    MPI_Barrier(MPI_COMM_WORLD);
    int total = 0;
    MPI_Reduce(&reads, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        /* After the last write: exactly the last version, whole. */
        double all[120];
        const uint64_t zero[2] = {0, 0};
        EXPECT_OK(h5tile_read(MPI_COMM_SELF, path, "/data", H5TILE_FLOAT64, 2, zero, G, all, NULL));
        CHECK(version_of(all, 0, 0, G[0], G[1]) == ROUNDS);
        printf("%s: %d writes, %d reads during them, all whole\n", name, ROUNDS, total);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* One checkpoint of step v in the series `dir`: /data as write_version writes it, /aux and the
 * attribute "step". */
static void commit_step(const char *dir, int v, h5tile_write_options *opts) {
    double data[4][30];
    int32_t aux[8];
    h5tile_series_options so = h5tile_series_options_default();
    so.keep_last = KEEP_LAST;
    so.keep_every = KEEP_EVERY;
    h5tile_checkpoint *ck = NULL;
    EXPECT_OK(h5tile_series_begin(MPI_COMM_SELF, dir, (uint64_t)v, &so, opts, &ck));
    for (int t = 0; t < 4; t++) {
        const uint64_t off[2] = {(uint64_t)t * 3, 0}, shp[2] = {3, G[1]};
        for (uint64_t k = 0; k < 30; k++) data[t][k] = value(v, (uint64_t)t * 30 + k);
        EXPECT_OK(h5tile_checkpoint_add(ck, "/data", H5TILE_FLOAT64, 2, G, off, shp, data[t]));
    }
    const uint64_t ag[1] = {8}, aoff[1] = {0};
    for (int i = 0; i < 8; i++) aux[i] = v * 10 + i;
    EXPECT_OK(h5tile_checkpoint_add(ck, "/aux", H5TILE_INT32, 1, ag, aoff, ag, aux));
    const int64_t step = v;
    EXPECT_OK(h5tile_checkpoint_attr(ck, "/", "step", H5TILE_INT64, 1, &step));
    EXPECT_OK(h5tile_checkpoint_commit(ck));
}

/* Reads every field of the checkpoint `path` of step `step` over `comm` (this rank: the `h` rows
 * of /data from row r0, all of /aux, the attribute) and checks each is of that step. Returns
 * the status, the same on every rank of `comm`. */
static h5tile_status read_step(MPI_Comm comm, const char *path, uint64_t step, uint64_t r0,
                               uint64_t h) {
    double buf[120];
    int32_t aux[8];
    int64_t attr = -1;
    const uint64_t off[2] = {r0, 0}, shp[2] = {h, G[1]}, ag[1] = {8}, z[1] = {0};
    h5tile_status s = h5tile_read(comm, path, "/data", H5TILE_FLOAT64, 2, off, shp, buf, NULL);
    if (s == H5TILE_OK) s = h5tile_read(comm, path, "/aux", H5TILE_INT32, 1, z, ag, aux, NULL);
    if (s == H5TILE_OK) s = h5tile_attr_read(comm, path, "/", "step", H5TILE_INT64, 1, &attr);
    int lo = (int)s, hi = (int)s;
    if (comm != MPI_COMM_SELF) {
        MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, comm);
        MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, comm);
    }
    CHECK_MSG(lo == hi, "the readers of %s got statuses %d and %d", path, lo, hi);
    if (s != H5TILE_OK) return s;
    CHECK_MSG(version_of(buf, r0, 0, h, G[1]) == (int)step, "%s: /data of step %d, not %llu", path,
              version_of(buf, r0, 0, h, G[1]), (unsigned long long)step);
    for (int i = 0; i < 8; i++)
        CHECK_MSG(aux[i] == (int32_t)step * 10 + i, "%s: /aux[%d] is %d", path, i, aux[i]);
    CHECK_MSG(attr == (int64_t)step, "%s: attribute step %lld", path, (long long)attr);
    return s;
}

/* A reader's loop over `comm` (ranks 1 and 2: each half of /data; rank 3: all of it) until the
 * writer is done. Returns the reads; *retries gets how many failed as the contract allows. */
static int series_reads(const char *dir, MPI_Comm comm, uint32_t flags, int *retries) {
    int me = 0, n = 1, reads = 0, done = 0;
    if (comm != MPI_COMM_SELF) {
        MPI_Comm_rank(comm, &me);
        MPI_Comm_size(comm, &n);
    }
    const uint64_t h = G[0] / (uint64_t)n, r0 = h * (uint64_t)me;
    uint64_t last = 0;
    char path[4096];
    while (!done) {
        uint64_t step = 0;
        EXPECT_OK(h5tile_series_latest(comm, dir, flags, &step, path, sizeof path));
        CHECK_MSG(step >= last, "latest is step %llu after step %llu", (unsigned long long)step,
                  (unsigned long long)last);
        last = step;
        h5tile_status s = read_step(comm, path, step, r0, h);
        if (s != H5TILE_OK) {
            /* Only a checkpoint being pruned: KEEP_LAST newer ones committed, not kept. */
            char why[1024];
            snprintf(why, sizeof why, "%s", h5tile_last_error());
            uint64_t now = 0;
            EXPECT_OK(h5tile_series_latest(comm, dir, 0, &now, NULL, 0));
            CHECK_MSG((s == H5TILE_ERR_NOT_FOUND || s == H5TILE_ERR_MISSING_TILE) &&
                          now >= step + KEEP_LAST && step % KEEP_EVERY != 0,
                      "reading step %llu (the latest is now %llu) failed: %s: %s",
                      (unsigned long long)step, (unsigned long long)now, h5tile_status_name(s), why);
            (*retries)++;
        }
        reads++;
        int local = writer_done();
        done = local;
        if (comm != MPI_COMM_SELF) MPI_Allreduce(&local, &done, 1, MPI_INT, MPI_MAX, comm);
    }
    return reads;
}

static void run_series(const char *scratch, const char *name, h5tile_layout layout,
                       uint32_t flags, MPI_Comm readers) {
    char dir[4096];
    check_pathf(__FILE__, __LINE__, dir, sizeof dir, "%s/%s", scratch, name);
    h5tile_write_options opts = h5tile_write_options_default();
    opts.layout = layout;
    if (rank == 0) commit_step(dir, 0, &opts);
    MPI_Barrier(MPI_COMM_WORLD);
    int reads = 0, retries = 0;
    if (rank == 0) {
        for (int v = 1; v <= ROUNDS; v++) commit_step(dir, v, &opts);
        for (int r = 1; r < size; r++) MPI_Send(NULL, 0, MPI_INT, r, DONE_TAG, MPI_COMM_WORLD);
    } else {
        reads = series_reads(dir, rank <= 2 ? readers : MPI_COMM_SELF, flags, &retries);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank > 0) writer_done();
    MPI_Barrier(MPI_COMM_WORLD);
    /* Ranks 1 and 2 count their collective reads once. */
    int counts[2] = {rank == 2 ? 0 : reads, rank == 2 ? 0 : retries}, total[2];
    MPI_Reduce(counts, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        /* The last step is the latest, and the rule kept exactly the newest KEEP_LAST and
         * every KEEP_EVERY-th step. */
        uint64_t step = 0;
        char path[4096];
        EXPECT_OK(h5tile_series_latest(MPI_COMM_SELF, dir, 0, &step, path, sizeof path));
        CHECK(step == ROUNDS);
        CHECK(read_step(MPI_COMM_SELF, path, step, 0, G[0]) == H5TILE_OK);
        int n, masters = 0, kept = 0;
        for (int v = 0; v <= ROUNDS; v++) kept += v + KEEP_LAST > ROUNDS || v % KEEP_EVERY == 0;
        char **names = list_dir(dir, &n);
        for (int i = 0; i < n; i++) {
            unsigned v = 0;
            char tail[8] = "";
            if (sscanf(names[i], "ckpt.%u%7s", &v, tail) != 2 || strcmp(tail, ".h5") != 0) continue;
            CHECK_MSG(v + KEEP_LAST > ROUNDS || v % KEEP_EVERY == 0, "step %u is left", v);
            masters++;
        }
        free_names(names, n);
        CHECK_MSG(masters == kept, "%d checkpoints left, the rule keeps %d", masters, kept);
        printf("%s: %d commits, %d reads of the latest checkpoint during them, all whole (%d "
               "found it pruned and asked again)\n", name, ROUNDS, total[0], total[1]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_SINGLE, &rank, &size);
    CHECK_MSG(size == 4, "run on 4 ranks (got %d)", size);
    MPI_Comm readers;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 1 || rank == 2 ? 1 : MPI_UNDEFINED, rank, &readers);
    run(scratch, "vds", H5TILE_LAYOUT_VDS, 0, readers);
    run(scratch, "single", H5TILE_LAYOUT_SINGLE, 0, readers);
    run(scratch, "keep", H5TILE_LAYOUT_VDS, H5TILE_KEEP_OTHERS, readers);
    run_series(scratch, "series-vds", H5TILE_LAYOUT_VDS, 0, readers);
    run_series(scratch, "series-subfiles", H5TILE_LAYOUT_SUBFILES, 0, readers);
    /* The readers verify each candidate's checksums while pruning removes candidates. */
    run_series(scratch, "series-verify", H5TILE_LAYOUT_VDS, H5TILE_SERIES_VERIFY, readers);
    if (readers != MPI_COMM_NULL) MPI_Comm_free(&readers);
    if (rank == 0) printf("OK\n");
    MPI_Finalize();
    return 0;
}
