/* The program the fault-injection and durability tests (fault_injection.py) run, under the
 * fault_shim preload: one write, or one check of what is on disk, printing one line per rank.
 *   fault_write write|async|fence PATH vds|single|subfiles KEEP VERSION
 *       writes version VERSION of /data (8 x 6 float64, two tiles per rank, in rows) in that
 *       layout; KEEP=1 adds H5TILE_KEEP_OTHERS (and, for VERSION 1, first writes /other beside
 *       it); FAULT_WRITE_NO_SYNC=1 in the environment adds H5TILE_NO_SYNC (the subfiles' groups
 *       come from H5TILE_RANKS_PER_FILE, which the library reads). `async` completes the write
 *       with h5tile_wait, `fence` with h5tile_fence. Prints, per rank,
 *       "rank R: STATUS_NAME: MESSAGE".
 *   fault_write check PATH vds|single|subfiles KEEP 0
 *       reads /data whole and prints "version V" when it is all of version V (else what is
 *       wrong), and with KEEP=1 "other intact" or what is wrong with /other.
 * Under an MPI launcher it runs over MPI_COMM_WORLD (MPI_THREAD_MULTIPLE, so that background
 * writes run in the background); alone, with MPI_COMM_NULL and no MPI_Init. */
#include "check.h"

/* The dataset's shape: 8 x 6, or FAULT_WRITE_ROWS x 6 (the real full-disk test). */
static uint64_t G[2] = {8, 6};

static double value(int v, uint64_t i) { return (double)v * 1000.0 + (double)i * 0.25; }

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

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s write|async|fence|check PATH vds|single|subfiles KEEP VERSION\n",
                argv[0]);
        return 2;
    }
    const char *layouts[3] = {"vds", "single", "subfiles"};
    const h5tile_layout layout_codes[3] = {H5TILE_LAYOUT_VDS, H5TILE_LAYOUT_SINGLE,
                                           H5TILE_LAYOUT_SUBFILES};
    int layout = -1;
    for (int l = 0; l < 3; l++)
        if (strcmp(argv[3], layouts[l]) == 0) layout = l;
    if (layout < 0) {
        fprintf(stderr, "%s: unknown layout '%s' (vds, single or subfiles)\n", argv[0], argv[3]);
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

    if (strcmp(mode, "check") == 0) {
        if (rank == 0) {
            uint64_t n = G[0] * G[1];
            double *all = (double *)xmalloc(n * sizeof(double));
            const uint64_t zero[2] = {0, 0};
            h5tile_status s =
                h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, zero, G, all, NULL);
            if (s != H5TILE_OK) {
                printf("read: %s: %s\n", h5tile_status_name(s), h5tile_last_error());
            } else {
                int v = (int)(all[0] / 1000.0), whole = 1;
                for (uint64_t i = 0; i < n; i++) whole &= all[i] == value(v, i);
                if (whole) printf("version %d\n", v);
                else printf("mixed: element 0 of version %d, not the rest\n", v);
            }
            free(all);
            if (keep) {
                double other[5];
                const uint64_t s5[1] = {5}, z[1] = {0};
                s = h5tile_read(MPI_COMM_NULL, path, "/other", H5TILE_FLOAT64, 1, z, s5, other, NULL);
                int intact = s == H5TILE_OK;
                for (int i = 0; intact && i < 5; i++) intact = other[i] == i + 1;
                if (intact) printf("other intact\n");
                else printf("other damaged: %s: %s\n", h5tile_status_name(s), h5tile_last_error());
            }
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
        /* For the kill tests: when the write starts and ends, as files ready.<rank> and done.<rank>
         * in FAULT_WRITE_READY_DIR. */
        const char *ready = getenv("FAULT_WRITE_READY_DIR");
        if (ready) {
            char name[4096];
            snprintf(name, sizeof name, "%s/ready.%d", ready, rank);
            write_text_file(name, "");
        }
        h5tile_status s;
        if (strcmp(mode, "write") == 0) {
            s = h5tile_write_tiles(comm, path, "/data", H5TILE_FLOAT64, 2, G, 2, offs, shps, bufs,
                                   &opts);
        } else {
            h5tile_request *req = NULL;
            int fence = strcmp(mode, "fence") == 0;
            s = h5tile_write_tiles_async(comm, path, "/data", H5TILE_FLOAT64, 2, G, 2, offs, shps,
                                         bufs, &opts, fence ? NULL : &req);
            if (s == H5TILE_OK) s = fence ? h5tile_fence(comm) : h5tile_wait(req);
        }
        if (ready) {
            char name[4096];
            snprintf(name, sizeof name, "%s/done.%d", ready, rank);
            write_text_file(name, "");
        }
        report(comm, rank, size, s);
        free(data);
    }
    fflush(stdout);
    if (comm != MPI_COMM_NULL) MPI_Finalize();
    return 0;
}
