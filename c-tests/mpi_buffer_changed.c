/* A write without H5TILE_SNAPSHOT reads the caller's buffer while it runs in the background
 * (MPI_THREAD_MULTIPLE). A buffer changed meanwhile must never give H5TILE_OK for a file that
 * fails its own checksums. Each rank owns a 2 MiB float64 slab; in the VDS, subfiled and
 * single-file layouts and VDS with zstd, ROUNDS rounds each:
 *   - the file is first written synchronously with values of its own (the previous file);
 *   - h5tile_write_async of the slab, and at once a thread of this rank rewrites the buffer in
 *     a loop until the write has completed (in every other round, or after 1, 2, 4 ... 16
 *     passes, so that the last change falls anywhere in the write), pass j writing
 *     (B + j) * 2^20 + i into element i (B the round's base): every pass new values, never an
 *     older one;
 *   - then either the status is H5TILE_OK on every rank, the file reads back with its checksums
 *     verified, and every element of each rank's slab holds one of the values its writer put
 *     there (any pass, never a mixture within an element); or it is
 *     H5TILE_ERR_INVALID_ARGUMENT on every rank, h5tile_last_error() says the tile "changed
 *     while it was being written", and the previous file is untouched byte for byte (no
 *     temporary file left beside it) and reads back exactly. Both outcomes are allowed
 *     (which one depends on the timing); a file that fails to read, or another status, is
 *     the bug.
 * One control round in each layout has no writer thread: H5TILE_OK and the values written.
 * Prints how many rounds ended each way.
 *   mpi_buffer_changed SCRATCH_DIR */
#include "check.h"

#include <pthread.h>

#define ROWS 256  /* of each rank's slab: 2 MiB */
#define COLS 1024
#define SLAB ((size_t)ROWS * COLS)
#define ROUNDS 10 /* with a writer thread, per layout */
#define STEP 1048576.0 /* 2^20 > SLAB: element i of pass j is (B + j) * STEP + i, exactly */

static int rank, size;
static uint64_t g[2], off[2];
static const uint64_t shp[2] = {ROWS, COLS};

/* Pass j of round base b: element i is (b + j) * STEP + i. */
static void fill_pass(double *buf, double b, long j) {
    const double head = (b + (double)j) * STEP;
    for (size_t i = 0; i < SLAB; i++) buf[i] = head + (double)i;
}

/* The previous file's values: element i of this rank's slab in round base b. */
static double previous(double b, size_t i) { return -(b * STEP + (double)(off[0] * COLS + i)); }

/* The thread that rewrites the buffer while the write runs. */
typedef struct {
    double *buf;
    double base;
    pthread_mutex_t lock;
    int stop;   /* set once the write has completed */
    long limit; /* stop after this many passes even so (0: no limit) */
    long begun; /* the last pass begun (0: none) */
} writer;

static void *writer_main(void *arg) {
    writer *w = (writer *)arg;
    for (long j = 1; w->limit == 0 || j <= w->limit; j++) {
        pthread_mutex_lock(&w->lock);
        int stop = w->stop;
        if (!stop) w->begun = j;
        pthread_mutex_unlock(&w->lock);
        if (stop) break;
        fill_pass(w->buf, w->base, j);
    }
    return NULL;
}

/* Hash of the master file and, where the layout has one, its tile folder, with the number of
 * entries in the folder that holds them (a refused write leaves no temporary file behind). */
typedef struct {
    uint64_t hash;
    int entries;
} file_state;

static file_state state_of(const char *scratch, const char *path) {
    char dir[4096];
    TILE_DIR(dir, path);
    file_state st;
    st.hash = hash_file(path);
    if (is_directory(dir)) {
        uint64_t tiles = hash_dir(dir);
        st.hash = fnv_bytes(st.hash, &tiles, sizeof tiles);
    }
    st.entries = count_files(scratch);
    return st;
}

/* Every rank reads its own slab of `path` (checksums verified, the default) into `back`. */
static void read_slab(const char *path, double *back) {
    memset(back, 0, SLAB * sizeof *back);
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, off, shp, back, NULL));
}

/* The status on every rank must be the same. */
static void check_same_everywhere(int status) {
    int lo = 0, hi = 0;
    MPI_Allreduce(&status, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&status, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK_MSG(lo == hi, "the ranks' statuses differ: %s on one, %s on another",
              h5tile_status_name(lo), h5tile_status_name(hi));
}

typedef struct {
    int ok, refused;
} tally;

/* One round in `path` with options `o`: base b; a writer thread of at most `limit` passes (0:
 * until the write has completed) unless `control`. */
static void run_round(const char *scratch, const char *path, const h5tile_write_options *o,
                      double b, int control, long limit, double *buf, double *back, tally *t) {
    /* The previous file, written synchronously. */
    for (size_t i = 0; i < SLAB; i++) buf[i] = previous(b, i);
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp, buf, o));
    file_state before = {0, 0};
    if (rank == 0) before = state_of(scratch, path);
    MPI_Barrier(MPI_COMM_WORLD); /* hashed before anyone starts replacing it */

    fill_pass(buf, b, 0);
    h5tile_request *req = NULL;
    EXPECT_OK(h5tile_write_async(MPI_COMM_WORLD, path, "/x", H5TILE_FLOAT64, 2, g, off, shp, buf,
                                 o, &req));
    writer w;
    w.buf = buf;
    w.base = b;
    w.stop = 0;
    w.limit = limit;
    w.begun = 0;
    CHECK(pthread_mutex_init(&w.lock, NULL) == 0);
    pthread_t thread;
    memset(&thread, 0, sizeof thread);
    if (!control) CHECK(pthread_create(&thread, NULL, writer_main, &w) == 0);
    const h5tile_status status = h5tile_wait(req);
    char message[4096];
    snprintf(message, sizeof message, "%s", h5tile_last_error());
    if (!control) {
        pthread_mutex_lock(&w.lock);
        w.stop = 1;
        pthread_mutex_unlock(&w.lock);
        CHECK(pthread_join(thread, NULL) == 0);
    }
    pthread_mutex_destroy(&w.lock);
    check_same_everywhere((int)status);

    if (status == H5TILE_OK) {
        CHECK_MSG(message[0] == '\0', "H5TILE_OK with the message \"%s\"", message);
        /* Element i holds pass j's value for some j the writer began (0 to begun). */
        read_slab(path, back);
        for (size_t i = 0; i < SLAB; i++) {
            const double j = (back[i] - (double)i) / STEP - b;
            CHECK_MSG(j >= 0 && j <= (double)w.begun && j == (double)(long)j &&
                          back[i] == (b + j) * STEP + (double)i,
                      "%s: element %zu of rank %d's slab is %.17g, not a value its writer put "
                      "there (passes 0 to %ld)",
                      path, i, rank, back[i], w.begun);
        }
        if (control)
            for (size_t i = 0; i < SLAB; i++)
                CHECK_MSG(back[i] == b * STEP + (double)i,
                          "control round: element %zu is %.17g, expected %.17g", i, back[i],
                          b * STEP + (double)i);
        t->ok++;
    } else {
        CHECK_MSG(!control, "the control round (no writer) failed: %s: %s",
                  h5tile_status_name(status), message);
        CHECK_MSG(status == H5TILE_ERR_INVALID_ARGUMENT,
                  "a buffer changed during the write gave %s, not H5TILE_OK or "
                  "H5TILE_ERR_INVALID_ARGUMENT: %s",
                  h5tile_status_name(status), message);
        CHECK_MSG(strstr(message, "of '/x' changed while it was being written") != NULL,
                  "the message does not say the tile changed: \"%s\"", message);
        /* The previous file, untouched. */
        MPI_Barrier(MPI_COMM_WORLD); /* every rank's write has ended */
        if (rank == 0) {
            file_state now = state_of(scratch, path);
            CHECK_MSG(now.hash == before.hash, "%s changed, though its write was refused", path);
            CHECK_MSG(now.entries == before.entries,
                      "%d entries in %s after a refused write, %d before", now.entries, scratch,
                      before.entries);
        }
        read_slab(path, back);
        for (size_t i = 0; i < SLAB; i++)
            CHECK_MSG(back[i] == previous(b, i),
                      "%s after a refused write: element %zu is %.17g, expected the previous "
                      "file's %.17g",
                      path, i, back[i], previous(b, i));
        t->refused++;
    }
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_MULTIPLE, &rank, &size);
    g[0] = (uint64_t)ROWS * (uint64_t)size;
    g[1] = COLS;
    off[0] = (uint64_t)ROWS * (uint64_t)rank;
    off[1] = 0;
    double *buf = (double *)xmalloc(SLAB * sizeof(double));
    double *back = (double *)xmalloc(SLAB * sizeof(double));

    static const struct {
        const char *name;
        h5tile_layout layout;
        h5tile_compression codec;
    } layouts[] = {
        {"vds", H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_NONE},
        {"subfiles", H5TILE_LAYOUT_SUBFILES, H5TILE_COMPRESS_NONE},
        {"single", H5TILE_LAYOUT_SINGLE, H5TILE_COMPRESS_NONE},
        {"zstd", H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_ZSTD},
    };
    double base = 1;
    for (size_t k = 0; k < sizeof layouts / sizeof layouts[0]; k++) {
        char path[4096];
        PATHF(path, "%s/%s.h5", scratch, layouts[k].name);
        h5tile_write_options o = h5tile_write_options_default();
        o.layout = layouts[k].layout;
        o.compression = layouts[k].codec;
        tally t = {0, 0};
        CHECK_CONTEXT("%s: the control round", path);
        run_round(scratch, path, &o, base, 1, 0, buf, back, &t);
        base += 1000000; /* far beyond any pass count: rounds never share a value */
        for (int r = 0; r < ROUNDS; r++) {
            CHECK_CONTEXT("%s: round %d of %d", path, r + 1, ROUNDS);
            /* Odd rounds rewrite until the write has completed; even ones stop after 1, 2, 4
             * ... 16 passes, so that the last change falls anywhere in the write. */
            run_round(scratch, path, &o, base, 0, r % 2 ? 0 : 1L << (r / 2), buf, back,
                      &t);
            base += 1000000;
        }
        CHECK(t.ok + t.refused == ROUNDS + 1);
        if (rank == 0)
            printf("mpi_buffer_changed %s: %d of %d rounds with a writer thread H5TILE_OK, %d "
                   "refused (changed while it was being written)\n",
                   layouts[k].name, t.ok - 1, ROUNDS, t.refused);
    }

    free(buf);
    free(back);
    EXPECT_OK(h5tile_fence(MPI_COMM_WORLD));
    MPI_Finalize();
    if (rank == 0) printf("mpi_buffer_changed: OK on %d ranks\n", size);
    return 0;
}
