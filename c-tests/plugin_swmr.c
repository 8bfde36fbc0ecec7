/* A SWMR reader through the h5tile_gds driver, the writer on HDF5's default driver: the
 * writer appends BATCH values at a time to a chunked dataset in SWMR mode, flushing each
 * batch; the reader (this program again, `read DIR`, its file opened through the plugin with
 * H5F_ACC_SWMR_READ) refreshes and reads the last value in a loop, then the whole dataset.
 * Its end of allocation is stale while the writer extends the file, and HDF5 lets it read
 * past it, as sec2 does: every read must succeed and every value equal what was written.
 * The reader also checks the POSIX-compatible handle the driver advertises (H5Fget_vfd_handle
 * gives the address of the file's descriptor).
 *
 *   plugin_swmr DIR          the writer, which starts the reader
 *   plugin_swmr read DIR     the reader */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define BATCHES 300

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
            H5Eprint2(H5E_DEFAULT, stderr);                                 \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

static void pause_ms(long ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

static int reader(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/swmr.h5", dir);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_driver_by_name(fapl, "h5tile_gds", NULL) >= 0);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl);
    CHECK(file >= 0);
    hid_t used = H5Fget_access_plist(file);
    CHECK(H5Pget_driver(used) == H5Pget_driver(fapl)); /* really through the plugin */
    H5Pclose(used);
    /* H5FD_FEAT_POSIX_COMPAT_HANDLE: the VFD handle is the address of the file's descriptor. */
    void *handle = NULL;
    CHECK(H5Fget_vfd_handle(file, fapl, &handle) >= 0 && handle != NULL);
    struct stat by_fd, by_path;
    CHECK(fstat(*(int *)handle, &by_fd) == 0 && stat(path, &by_path) == 0);
    CHECK(by_fd.st_ino == by_path.st_ino && by_fd.st_dev == by_path.st_dev);
    hid_t dset = H5Dopen2(file, "/data", H5P_DEFAULT);
    CHECK(dset >= 0);
    long reads = 0, errors = 0;
    hsize_t n = 0;
    for (int spins = 0; n < (hsize_t)BATCH * BATCHES && spins < 100000; spins++) {
        herr_t ok = H5Drefresh(dset);
        hid_t space = H5Dget_space(dset);
        H5Sget_simple_extent_dims(space, &n, NULL);
        if (ok >= 0 && n > 0) {
            hsize_t last = n - 1, one = 1;
            int64_t v = -1;
            H5Sselect_hyperslab(space, H5S_SELECT_SET, &last, NULL, &one, NULL);
            hid_t mem = H5Screate_simple(1, &one, NULL);
            herr_t r = H5Dread(dset, H5T_NATIVE_INT64, mem, space, H5P_DEFAULT, &v);
            H5Sclose(mem);
            if (r < 0 || v != (int64_t)last) {
                if (errors++ == 0) {
                    fprintf(stderr, "read of value %llu: status %d, got %lld\n",
                            (unsigned long long)last, (int)r, (long long)v);
                    H5Eprint2(H5E_DEFAULT, stderr);
                }
            }
            reads++;
        } else if (ok < 0) {
            errors++;
        }
        H5Sclose(space);
        pause_ms(1);
    }
    CHECK(n == (hsize_t)BATCH * BATCHES);
    int64_t *all = malloc(n * sizeof *all);
    CHECK(H5Dread(dset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, all) >= 0);
    for (hsize_t i = 0; i < n; i++) CHECK(all[i] == (int64_t)i);
    free(all);
    printf("plugin_swmr: %ld reads while the writer appended, %ld errors\n", reads, errors);
    H5Dclose(dset);
    H5Fclose(file);
    H5Pclose(fapl);
    return errors == 0 && reads > 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "read") == 0) return reader(argv[2]);
    CHECK(argc == 2);
    const char *dir = argv[1];
    mkdir(dir, 0755);
    char path[4096];
    snprintf(path, sizeof path, "%s/swmr.h5", dir);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) >= 0);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(file >= 0);
    hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = BATCH;
    hid_t space = H5Screate_simple(1, &zero, &unlimited);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    hid_t dset = H5Dcreate2(file, "/data", H5T_NATIVE_INT64, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(dset >= 0);
    CHECK(H5Fstart_swmr_write(file) >= 0);

    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        execl(argv[0], argv[0], "read", dir, (char *)NULL);
        _exit(127);
    }
    int64_t values[BATCH];
    for (int b = 0; b < BATCHES; b++) {
        hsize_t start = (hsize_t)b * BATCH, size = start + BATCH, count = BATCH;
        CHECK(H5Dset_extent(dset, &size) >= 0);
        for (int i = 0; i < BATCH; i++) values[i] = (int64_t)(start + i);
        hid_t fs = H5Dget_space(dset);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
        hid_t ms = H5Screate_simple(1, &count, NULL);
        CHECK(H5Dwrite(dset, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, values) >= 0);
        H5Sclose(ms);
        H5Sclose(fs);
        CHECK(H5Dflush(dset) >= 0);
        pause_ms(2);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    H5Dclose(dset);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Fclose(file);
    H5Pclose(fapl);
    CHECK(WIFEXITED(status));
    if (WEXITSTATUS(status) != 0) {
        fprintf(stderr, "plugin_swmr: the reader through h5tile_gds failed\n");
        return 1;
    }
    printf("plugin_swmr: OK\n");
    return 0;
}
