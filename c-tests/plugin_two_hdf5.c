/* Two HDF5 builds mapped in one C program, each loading the h5tile_gds plugin: libh5tile's
 * HDF5 (linked) and another build opened with dlopen (h5py's bundled libhdf5, whose soname
 * differs). With HDF5_DRIVER=h5tile_gds and HDF5_DRIVER_CONFIG=threads=2 in the environment,
 * each library's opens must go through plugin calls into *that* library: a plugin calling the
 * other one prints HDF5-DIAG ("can't find object for ID", "not an access plist") and loses the
 * configuration and the locking choice.
 *
 *   plugin_two_hdf5 ORDER OTHER_LIBHDF5 SCRATCH    ORDER: h5tile-first | other-first
 *
 * The other library writes and reads a file; libh5tile writes one (its HDF5 loads the same
 * plugin binary) that the other library reads, and reads the other's. stderr is captured into
 * SCRATCH/stderr.txt (H5TILE_LOG=info names every open with its configuration) and checked:
 * no HDF5-DIAG, and every open of these files kept the configuration. Exit 0 only then. */
#define _GNU_SOURCE /* RTLD_DEEPBIND */
#include <dlfcn.h>
#include <h5tile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int64_t hid;  /* hid_t in HDF5 1.14 and 2.x alike */
typedef int herr;
typedef unsigned long long hsize;

static struct {
    herr (*open)(void);
    hid (*fcreate)(const char *, unsigned, hid, hid);
    hid (*fopen)(const char *, unsigned, hid);
    herr (*fclose)(hid);
    hid (*screate_simple)(int, const hsize *, const hsize *);
    herr (*sclose)(hid);
    hid (*dcreate2)(hid, const char *, hid, hid, hid, hid, hid);
    hid (*dopen2)(hid, const char *, hid);
    herr (*dwrite)(hid, hid, hid, hid, hid, const void *);
    herr (*dread)(hid, hid, hid, hid, hid, void *);
    herr (*dclose)(hid);
    hid (*pcreate)(hid);
    herr (*pclose)(hid);
    herr (*pset_driver_by_name)(hid, const char *, const char *);
    herr (*pset_file_locking)(hid, unsigned char, unsigned char);
    hid *native_double, *file_access_class;
    hid fapl; /* the access list of every open by the other library */
} other;

static int failures = 0;

#define EXPECT(cond, ...)                                                      \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stdout, "FAILED (%s:%d) ", __FILE__, __LINE__);            \
            fprintf(stdout, __VA_ARGS__);                                      \
            fprintf(stdout, "\n");                                             \
            failures++;                                                        \
        }                                                                      \
    } while (0)

static void *need(void *lib, const char *name) {
    void *f = dlsym(lib, name);
    if (!f) {
        printf("the other libhdf5 has no %s: %s\n", name, dlerror());
        exit(2);
    }
    return f;
}

static void *load_other(const char *path) {
    /* RTLD_LOCAL: its symbols stay its own, as when Python imports h5py beside libh5tile.
     * RTLD_DEEPBIND: its calls to its own exported functions stay inside it. Without it they
     * would bind to the same names in libh5tile's HDF5, already in the program's global scope
     * (Python loads both libraries local, so neither is there). */
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!lib) {
        printf("cannot open the other libhdf5 %s: %s\n", path, dlerror());
        exit(2);
    }
    *(void **)&other.open = need(lib, "H5open");
    *(void **)&other.fcreate = need(lib, "H5Fcreate");
    *(void **)&other.fopen = need(lib, "H5Fopen");
    *(void **)&other.fclose = need(lib, "H5Fclose");
    *(void **)&other.screate_simple = need(lib, "H5Screate_simple");
    *(void **)&other.sclose = need(lib, "H5Sclose");
    *(void **)&other.dcreate2 = need(lib, "H5Dcreate2");
    *(void **)&other.dopen2 = need(lib, "H5Dopen2");
    *(void **)&other.dwrite = need(lib, "H5Dwrite");
    *(void **)&other.dread = need(lib, "H5Dread");
    *(void **)&other.dclose = need(lib, "H5Dclose");
    *(void **)&other.pcreate = need(lib, "H5Pcreate");
    *(void **)&other.pclose = need(lib, "H5Pclose");
    *(void **)&other.pset_driver_by_name = need(lib, "H5Pset_driver_by_name");
    *(void **)&other.pset_file_locking = need(lib, "H5Pset_file_locking");
    other.native_double = need(lib, "H5T_NATIVE_DOUBLE_g");
    other.file_access_class = need(lib, "H5P_CLS_FILE_ACCESS_ID_g");
    EXPECT(other.open() >= 0, "H5open of the other library");
    /* An access list of its own, as h5py makes one, with the driver chosen by name and file
     * locking off. Made after 64 others, so that its id is one that libh5tile's HDF5 has
     * never handed out, or has closed: a plugin asking the wrong library about it is told
     * "can't find object for ID" or "not an access plist" (with the library's default list,
     * whose id is the same number in both, a wrong library would answer by chance). */
    hid spare[64];
    for (int i = 0; i < 64; i++) spare[i] = other.pcreate(*other.file_access_class);
    other.fapl = other.pcreate(*other.file_access_class);
    for (int i = 0; i < 64; i++) other.pclose(spare[i]);
    EXPECT(other.fapl >= 0 && other.pset_driver_by_name(other.fapl, "h5tile_gds", "threads=2") >= 0 &&
               other.pset_file_locking(other.fapl, 0, 1) >= 0,
           "the other library's access list with h5tile_gds by name and no file locking");
    return lib;
}

enum { ROWS = 4, COLS = 6 };
static const unsigned ACC_TRUNC = 0x0002u, ACC_RDONLY = 0x0000u;
static const hid DEFAULT = 0, ALL = 0;

/* The other library writes `path` through its own access list. */
static void other_write(const char *path, const double *data) {
    hid f = other.fcreate(path, ACC_TRUNC, DEFAULT, other.fapl);
    EXPECT(f >= 0, "the other library creates %s", path);
    if (f < 0) return;
    hsize dims[2] = {ROWS, COLS};
    hid space = other.screate_simple(2, dims, NULL);
    hid d = other.dcreate2(f, "x", *other.native_double, space, DEFAULT, DEFAULT, DEFAULT);
    EXPECT(d >= 0 && other.dwrite(d, *other.native_double, ALL, ALL, DEFAULT, data) >= 0,
           "the other library writes %s", path);
    other.dclose(d);
    other.sclose(space);
    EXPECT(other.fclose(f) >= 0, "the other library closes %s", path);
}

static void other_read(const char *path, const char *dataset, const double *expect) {
    double got[ROWS * COLS] = {0};
    hid f = other.fopen(path, ACC_RDONLY, other.fapl);
    EXPECT(f >= 0, "the other library opens %s", path);
    if (f < 0) return;
    hid d = other.dopen2(f, dataset, DEFAULT);
    EXPECT(d >= 0 && other.dread(d, *other.native_double, ALL, ALL, DEFAULT, got) >= 0,
           "the other library reads %s:%s", path, dataset);
    EXPECT(memcmp(got, expect, sizeof got) == 0, "the other library read back %s:%s whole", path,
           dataset);
    other.dclose(d);
    other.fclose(f);
}

static void h5tile_side_write(const char *path, const double *data) {
    uint64_t shape[2] = {ROWS, COLS}, origin[2] = {0, 0};
    h5tile_status s = h5tile_write(MPI_COMM_NULL, path, "/y", H5TILE_FLOAT64, 2, shape, origin,
                                   shape, data, NULL);
    EXPECT(s == H5TILE_OK, "h5tile_write %s: %s: %s", path, h5tile_status_name(s),
           h5tile_last_error());
}

static void h5tile_side_read(const char *path, const char *dataset, const double *expect) {
    double got[ROWS * COLS] = {0};
    uint64_t shape[2] = {ROWS, COLS}, origin[2] = {0, 0};
    h5tile_status s = h5tile_read(MPI_COMM_NULL, path, dataset, H5TILE_FLOAT64, 2, origin, shape,
                                  got, NULL);
    EXPECT(s == H5TILE_OK, "h5tile_read %s:%s: %s: %s", path, dataset, h5tile_status_name(s),
           h5tile_last_error());
    EXPECT(memcmp(got, expect, sizeof got) == 0, "h5tile read back %s:%s whole", path, dataset);
}

/* Every line of the log naming an open of `file` (by its final name or a temporary one). */
static int opens_kept_config(const char *log, const char *file, int *count) {
    int ok = 1;
    for (const char *line = log; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[4096];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        if (strstr(buf, "opened '") && strstr(buf, file)) {
            (*count)++;
            if (!strstr(buf, "config='threads=2'")) {
                printf("configuration lost: %s\n", buf);
                ok = 0;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "h5tile-first") && strcmp(argv[1], "other-first"))) {
        fprintf(stderr, "usage: plugin_two_hdf5 h5tile-first|other-first OTHER_LIBHDF5 SCRATCH\n");
        return 2;
    }
    const char *order = argv[1], *other_path = argv[2], *scratch = argv[3];
    mkdir(scratch, 0755);
    char by_other[1024], by_h5tile[1024], log_path[1024];
    snprintf(by_other, sizeof by_other, "%s/by_other.h5", scratch);
    snprintf(by_h5tile, sizeof by_h5tile, "%s/by_h5tile.h5", scratch);
    snprintf(log_path, sizeof log_path, "%s/stderr.txt", scratch);
    double data[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) data[i] = i * 0.5;

    fflush(stderr);
    int saved = dup(2);
    if (!freopen(log_path, "w", stderr)) {
        perror(log_path);
        return 2;
    }
    setvbuf(stderr, NULL, _IONBF, 0);
    if (strcmp(order, "h5tile-first") == 0) {
        h5tile_side_write(by_h5tile, data);
        load_other(other_path);
        other_write(by_other, data);
    } else {
        load_other(other_path);
        other_write(by_other, data);
        h5tile_side_write(by_h5tile, data);
    }
    other_read(by_other, "x", data);
    other_read(by_h5tile, "y", data);
    h5tile_side_read(by_other, "/x", data);
    fflush(stderr);
    dup2(saved, 2);

    FILE *f = fopen(log_path, "r");
    static char log[1 << 20];
    size_t n = f ? fread(log, 1, sizeof log - 1, f) : 0;
    log[n] = 0;
    if (f) fclose(f);
    fputs(log, stdout);
    EXPECT(!strstr(log, "HDF5-DIAG"), "%s: an HDF5 error was printed (above)", order);
    int a = 0, b = 0, tmp = 0;
    EXPECT(opens_kept_config(log, "/by_other.h5'", &a) && a > 0,
           "%s: the other library's opens of by_other.h5 went through the plugin with its "
           "configuration (%d seen)", order, a);
    EXPECT(opens_kept_config(log, "/by_h5tile.h5'", &b) && b > 0,
           "%s: the other library's open of by_h5tile.h5 kept its configuration (%d seen)", order, b);
    EXPECT(opens_kept_config(log, "/.by_h5tile.h5.", &tmp) && tmp > 0,
           "%s: libh5tile's HDF5 opened its master through the plugin with the configuration "
           "(%d seen)", order, tmp);
    if (failures) {
        printf("%s: %d failure(s)\n", order, failures);
        return 1;
    }
    printf("%s: both HDF5 builds served by their own plugin calls (%d opens, configuration kept)\n",
           order, a + b + tmp);
    return 0;
}
