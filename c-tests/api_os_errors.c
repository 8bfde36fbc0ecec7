/* An operating-system error below h5tile is H5TILE_ERR_IO whose message leads with the OS
 * reason and names the file, whichever layer met it (the h5tile_gds driver writing a tile
 * file, h5tile's own pwrite into a single file, HDF5's driver writing a master). The error is
 * provoked for real: a file-size limit (RLIMIT_FSIZE) makes writes past it fail with EFBIG,
 * as a full disk fails them with ENOSPC. The dataset already there stays byte for byte. */
#include "check.h"

#include <signal.h>
#include <sys/resource.h>

static void limit_file_size(rlim_t bytes) {
    struct rlimit r;
    CHECK(getrlimit(RLIMIT_FSIZE, &r) == 0);
    r.rlim_cur = bytes;
    CHECK(setrlimit(RLIMIT_FSIZE, &r) == 0);
}

int main(int argc, char **argv) {
    const char *scratch = scratch_arg(argc, argv);
    fresh_dir(scratch);
    /* Past the limit, write() fails with EFBIG instead of killing the process. */
    signal(SIGXFSZ, SIG_IGN);
    const char *reason = strerror(EFBIG);
    const h5tile_layout layouts[2] = {H5TILE_LAYOUT_VDS, H5TILE_LAYOUT_SINGLE};
    for (int l = 0; l < 2; l++) {
        char path[4096];
        PATHF(path, "%s/data%d.h5", scratch, l);
        CHECK_CONTEXT("layout %d, path %s", layouts[l], path);
        h5tile_write_options o = h5tile_write_options_default();
        o.layout = layouts[l];

        /* A small dataset first, well below the limit. */
        const uint64_t small[2] = {64, 64}, zero[2] = {0, 0};
        double *buf = (double *)xmalloc(512 * 512 * sizeof(double));
        fill_tile(H5TILE_FLOAT64, 2, small, zero, small, buf);
        EXPECT_OK(h5tile_write(MPI_COMM_NULL, path, "/u", H5TILE_FLOAT64, 2, small, zero, small,
                               buf, &o));
        /* The single-file layout has no tile folder: the file itself is the dataset. */
        int single = layouts[l] == H5TILE_LAYOUT_SINGLE;
        dataset_snapshot before = {0, 0, 0};
        uint64_t before_file = hash_file(path);
        if (!single) before = snapshot(path);

        /* 2 MiB under a 1 MiB limit: the OS refuses, and the caller is told so first. */
        const uint64_t big[2] = {512, 512};
        fill_tile(H5TILE_FLOAT64, 2, big, zero, big, buf);
        limit_file_size(1 << 20);
        EXPECT_STATUS(h5tile_write(MPI_COMM_NULL, path, "/u", H5TILE_FLOAT64, 2, big, zero, big,
                                   buf, &o),
                      H5TILE_ERR_IO);
        limit_file_size(RLIM_INFINITY);
        const char *msg = h5tile_last_error();
        CHECK_MSG(strncmp(msg, reason, strlen(reason)) == 0,
                  "the message does not lead with \"%s\": \"%s\"", reason, msg);
        CHECK_MSG(strstr(msg, scratch) != NULL && strstr(msg, scratch) < msg + 200,
                  "the file is not named near the start: \"%s\"", msg);
        printf("layout %d: %.160s...\n", layouts[l], msg);

        /* The old dataset is whole and reads back. */
        CHECK_MSG(hash_file(path) == before_file, "'%s' changed", path);
        if (!single) CHECK_UNTOUCHED(path, before);
        memset(buf, 0, 64 * 64 * sizeof(double));
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/u", H5TILE_FLOAT64, 2, zero, small, buf, NULL));
        CHECK_TILE(H5TILE_FLOAT64, 2, small, zero, small, buf);
        free(buf);
    }
    printf("api_os_errors: OK\n");
    return 0;
}
