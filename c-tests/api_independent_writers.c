/* Independent writers and one commit (h5tile_txn_*), across processes that share no
 * communicator and never call MPI: this program, as the coordinator, begins a transaction and
 * writes its token to a file; it starts itself once per tile as a writer (`write SCRATCH k`),
 * each a separate process that reads the token, writes its tile and leaves its record in a
 * file; one tile is written twice, as a retried task would. The coordinator then commits the
 * records, after checking the commit refuses a stale transaction's record, a hole, a missing
 * tile file, and a record cut short, each leaving the previous file untouched. h5py reads the
 * result (h5py_independent_writers.py).
 *
 * usage: api_independent_writers SCRATCH_DIR            (the coordinator)
 *        api_independent_writers write SCRATCH_DIR K    (writer K, started by the coordinator) */
#include "check.h"

#include <sys/wait.h>

static const uint64_t G[2] = {12, 10};
#define TILES 3
#define ROWS 4 /* tile k holds rows [4k, 4k+4) */

static void *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = xmalloc((size_t)n + 1);
    CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, "cannot create %s", path);
    CHECK(fwrite(data, 1, len, f) == len);
    CHECK(fclose(f) == 0);
}

/* Writer `k`: the token from SCRATCH/token, tile k, its record into SCRATCH/record.<k>.<pid>. */
static int writer(const char *scratch, int k) {
    char path[4096];
    PATHF(path, "%s/token", scratch);
    size_t token_len;
    void *token = read_file(path, &token_len);
    uint64_t offset[2] = {(uint64_t)k * ROWS, 0}, shape[2] = {ROWS, G[1]};
    double tile[ROWS * 10];
    fill_tile(H5TILE_FLOAT64, 2, G, offset, shape, tile);
    uint8_t *record = NULL;
    size_t record_len = 0;
    EXPECT_OK(h5tile_txn_write_tile((const uint8_t *)token, token_len, "/data", 2, offset, shape,
                                    tile, &record, &record_len));
    PATHF(path, "%s/record.%d.%d", scratch, k, (int)getpid());
    write_file(path, record, record_len);
    h5tile_txn_record_free(record);
    free(token);
    /* MPI was never initialized in this process. */
    int init = 1;
    MPI_Initialized(&init);
    CHECK_MSG(!init, "a writer initialized MPI");
    return 0;
}

/* Starts this program as writer `k` and waits for it. */
static void run_writer(const char *self, const char *scratch, int k) {
    char kk[16];
    snprintf(kk, sizeof kk, "%d", k);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        execl(self, self, "write", scratch, kk, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed", k);
}

/* The records the writers left in `scratch`, in name order: their bytes and lengths. */
static int load_records(const char *scratch, uint8_t **records, size_t *lens, int max) {
    int n, count = 0;
    char **names = list_dir(scratch, &n);
    for (int i = 0; i < n; i++) {
        if (strncmp(names[i], "record.", 7) != 0) continue;
        CHECK(count < max);
        char path[4096];
        PATHF(path, "%s/%s", scratch, names[i]);
        records[count] = (uint8_t *)read_file(path, &lens[count]);
        count++;
    }
    free_names(names, n);
    return count;
}

/* Begins a transaction on `path` declaring "/data" and leaves its token in SCRATCH/token. */
static h5tile_txn *begin(const char *scratch, const char *path) {
    h5tile_txn *tx = NULL;
    EXPECT_OK(h5tile_txn_begin(path, NULL, &tx));
    CHECK(tx != NULL);
    EXPECT_OK(h5tile_txn_declare(tx, "/data", H5TILE_FLOAT64, 2, G));
    EXPECT_OK(h5tile_txn_attr_string(tx, "/data", "units", "K"));
    const uint8_t *token = NULL;
    size_t token_len = 0;
    EXPECT_OK(h5tile_txn_token(tx, &token, &token_len));
    char tp[4096];
    PATHF(tp, "%s/token", scratch);
    write_file(tp, token, token_len);
    return tx;
}

static void remove_records(const char *scratch) {
    int n;
    char **names = list_dir(scratch, &n);
    for (int i = 0; i < n; i++) {
        if (strncmp(names[i], "record.", 7) == 0) {
            char path[4096];
            PATHF(path, "%s/%s", scratch, names[i]);
            CHECK(unlink(path) == 0);
        }
    }
    free_names(names, n);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "write") == 0) return writer(argv[2], atoi(argv[3]));
    const char *scratch = scratch_arg(argc, argv);
    fresh_dir(scratch);
    char path[4096], dir[4096];
    PATHF(path, "%s/data.h5", scratch);
    TILE_DIR(dir, path);

    /* A first transaction, whose records will be stale. */
    h5tile_txn *old_tx = begin(scratch, path);
    for (int k = 0; k < TILES; k++) run_writer(argv[0], scratch, k);
    uint8_t *stale[8];
    size_t stale_lens[8];
    int nstale = load_records(scratch, stale, stale_lens, 8);
    CHECK(nstale == TILES);
    EXPECT_OK(h5tile_txn_commit(old_tx, (size_t)nstale, (const uint8_t *const *)stale, stale_lens));
    h5tile_txn_free(old_tx);
    remove_records(scratch);
    /* The tile folder gains the new transaction's files; the master is what readers see. */
    uint64_t before = hash_file(path);

    h5tile_txn *tx = begin(scratch, path);
    for (int k = 0; k < TILES; k++) run_writer(argv[0], scratch, k);
    run_writer(argv[0], scratch, 1); /* tile 1 again: a retried task */
    uint8_t *records[8];
    size_t lens[8];
    int n = load_records(scratch, records, lens, 8);
    CHECK(n == TILES + 1);
    CHECK_MSG(count_files(dir) == 2 * TILES + 1, "%d files in %s", count_files(dir), dir);

    /* Refusals: each leaves the previous file as it was, and the transaction open. */
    CHECK_CONTEXT("a record of the previous transaction");
    const uint8_t *mixed[4] = {records[0], records[1], stale[2], records[3]};
    size_t mixed_lens[4] = {lens[0], lens[1], stale_lens[2], lens[3]};
    EXPECT_STATUS(h5tile_txn_commit(tx, 4, mixed, mixed_lens), H5TILE_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(h5tile_last_error(), "a record of an earlier or another write") != NULL,
              "%s", h5tile_last_error());
    CHECK_MSG(hash_file(path) == before, "%s changed", path);
    CHECK_CONTEXT("a hole: tile 2 left out");
    EXPECT_STATUS(h5tile_txn_commit(tx, 2, (const uint8_t *const *)records, lens), H5TILE_ERR_SHAPE);
    CHECK_MSG(hash_file(path) == before, "%s changed", path);
    CHECK_CONTEXT("a record cut short");
    size_t cut[4] = {lens[0], lens[1] - 1, lens[2], lens[3]};
    EXPECT_STATUS(h5tile_txn_commit(tx, 4, (const uint8_t *const *)records, cut),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK_MSG(hash_file(path) == before, "%s changed", path);

    CHECK_CONTEXT("the commit");
    EXPECT_OK(h5tile_txn_commit(tx, (size_t)n, (const uint8_t *const *)records, lens));
    CHECK_MSG(count_files(dir) == TILES, "one attempt of the retried tile kept: %d files",
              count_files(dir));
    dataset_snapshot after = snapshot(path);
    EXPECT_OK(h5tile_txn_commit(tx, (size_t)n, (const uint8_t *const *)records, lens));
    CHECK_UNTOUCHED(path, after);
    EXPECT_STATUS(h5tile_txn_abort(tx), H5TILE_ERR_INVALID_ARGUMENT);
    h5tile_txn_free(tx);
    CHECK_UNTOUCHED(path, after);

    double whole[120];
    uint64_t zero[2] = {0, 0};
    EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/data", H5TILE_FLOAT64, 2, zero, G, whole, NULL));
    CHECK_TILE(H5TILE_FLOAT64, 2, G, zero, G, whole);

    /* Aborted: the writers' files go, the file stays. */
    tx = begin(scratch, path);
    remove_records(scratch);
    run_writer(argv[0], scratch, 0);
    CHECK(count_files(dir) == TILES + 1);
    EXPECT_OK(h5tile_txn_abort(tx));
    CHECK(count_files(dir) == TILES);
    h5tile_txn_free(tx);
    CHECK_UNTOUCHED(path, after);

    /* Bad arguments. */
    EXPECT_STATUS(h5tile_txn_begin(path, NULL, NULL), H5TILE_ERR_INVALID_ARGUMENT);
    h5tile_write_options single = h5tile_write_options_default();
    single.layout = H5TILE_LAYOUT_SINGLE;
    EXPECT_STATUS(h5tile_txn_begin(path, &single, &tx), H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(tx == NULL);
    uint8_t *record = NULL;
    size_t record_len = 0;
    double one = 0;
    uint64_t o1[2] = {0, 0}, s1[2] = {1, 1};
    EXPECT_STATUS(h5tile_txn_write_tile((const uint8_t *)"junk", 4, "/data", 2, o1, s1, &one,
                                        &record, &record_len),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(record == NULL);
    CHECK_UNTOUCHED(path, after);

    for (int i = 0; i < n; i++) free(records[i]);
    for (int i = 0; i < nstale; i++) free(stale[i]);
    printf("api_independent_writers: OK\n");
    return 0;
}
