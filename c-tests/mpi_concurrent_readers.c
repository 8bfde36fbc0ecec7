/* Readers while a writer replaces the dataset (4 ranks): rank 0 rewrites a 4-tile dataset
 * ROUNDS times, alone (MPI_COMM_SELF), while ranks 1 and 2 read it collectively (each half
 * of it, over their own communicator) and rank 3 reads it whole and in batches, in loops, until
 * the writer is done. Every read must succeed and give one whole version: every element of
 * one version, the same version on both collective readers, never older than the version that
 * reader saw before. Run for the VDS layout, the single-file layout, and the VDS layout with
 * H5TILE_KEEP_OTHERS beside another dataset. */
#include "check.h"

#define ROUNDS 40
#define DONE_TAG 7

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

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_SINGLE, &rank, &size);
    CHECK_MSG(size == 4, "run on 4 ranks (got %d)", size);
    MPI_Comm readers;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 1 || rank == 2 ? 1 : MPI_UNDEFINED, rank, &readers);
    run(scratch, "vds", H5TILE_LAYOUT_VDS, 0, readers);
    run(scratch, "single", H5TILE_LAYOUT_SINGLE, 0, readers);
    run(scratch, "keep", H5TILE_LAYOUT_VDS, H5TILE_KEEP_OTHERS, readers);
    if (readers != MPI_COMM_NULL) MPI_Comm_free(&readers);
    if (rank == 0) printf("OK\n");
    MPI_Finalize();
    return 0;
}
