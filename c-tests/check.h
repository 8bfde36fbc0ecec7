/* Helpers shared by the h5tile C/C++ tests: assertions that stop the test (the whole MPI job
 * when MPI is running), file hashing, directory listing, mkdir -p / rm -rf, and the element
 * formulas every test and the h5py scripts agree on. Plain C11/C++17 and POSIX. */
#ifndef H5TILE_CHECK_H
#define H5TILE_CHECK_H

#include <h5tile.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Write options naming the VDS layout, one file per tile: for the tests that count, remove or
 * swap tile files. (The default, H5TILE_LAYOUT_AUTO, gives a process holding several tiles of
 * a dataset one subfile for them all.) */
static inline const h5tile_write_options *vds_layout(void) {
    static h5tile_write_options o;
    o = h5tile_write_options_default();
    o.layout = H5TILE_LAYOUT_VDS;
    return &o;
}

/* ---------------------------------------------------------------- stderr */

static int check_saved_stderr = -1;

/* Sends this process's stderr to `file` (emptied) until restore_stderr. */
static inline void capture_stderr(const char *file);
static inline void restore_stderr(void);

/* The number of lines of `file` holding `words`. */
static inline int lines_with(const char *file, const char *words) {
    FILE *f = fopen(file, "r");
    if (f == NULL) return -1;
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f) != NULL) n += strstr(line, words) != NULL;
    fclose(f);
    return n;
}

/* ---------------------------------------------------------------- failing */

/* This process's rank in MPI_COMM_WORLD, or -1 when MPI is not running. MPI_Initialized and
 * MPI_Finalized may be called at any time, so the api_ tests (no MPI_Init) can use this. */
static inline int check_mpi_rank(void) {
    int init = 0, fin = 0, rank = -1;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static inline void check_die(void);
static inline void check_die(void) {
    int init = 0, fin = 0;
    fflush(stdout);
    fflush(stderr);
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4), noreturn))
#endif
static inline void check_fail(const char *file, int line, const char *fmt, ...);
/* What the test is doing, printed with a failure (set with CHECK_CONTEXT). */
static char check_context[1024];
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static inline void check_set_context(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(check_context, sizeof check_context, fmt, ap); /* truncation is fine here */
    va_end(ap);
}
#define CHECK_CONTEXT(...) check_set_context(__VA_ARGS__)

static inline void check_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    int rank = check_mpi_rank();
    if (rank >= 0)
        fprintf(stderr, "%s:%d: [rank %d] FAILED: ", file, line, rank);
    else
        fprintf(stderr, "%s:%d: FAILED: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    if (check_context[0] != '\0') fprintf(stderr, "  while: %s\n", check_context);
    check_die();
}

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) check_fail(__FILE__, __LINE__, "CHECK(%s); last error: \"%s\"", \
                                #cond, h5tile_last_error());                         \
    } while (0)

#define CHECK_MSG(cond, ...)                                  \
    do {                                                      \
        if (!(cond)) check_fail(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/* Runs `call` (an h5tile call returning a status), and checks it returned `expected`; then
 * checks the documented h5tile_last_error() contract: "" after a success, a message after a
 * failure. */
static inline void check_status(const char *file, int line, const char *text, int got,
                                int expected) {
    const char *err = h5tile_last_error();
    if (got != expected)
        check_fail(file, line, "%s\n  returned %s (%d), expected %s (%d)\n  last error: \"%s\"",
                   text, h5tile_status_name(got), got, h5tile_status_name(expected), expected,
                   err ? err : "(NULL)");
    if (err == NULL)
        check_fail(file, line, "%s: h5tile_last_error() returned NULL", text);
    if (expected == H5TILE_OK && err[0] != '\0')
        check_fail(file, line, "%s succeeded but h5tile_last_error() is \"%s\", not empty",
                   text, err);
    if (expected != H5TILE_OK && err[0] == '\0')
        check_fail(file, line, "%s failed with %s but h5tile_last_error() is empty", text,
                   h5tile_status_name(got));
}

#define EXPECT_STATUS(call, expected) \
    check_status(__FILE__, __LINE__, #call, (int)(call), (int)(expected))
#define EXPECT_OK(call) EXPECT_STATUS(call, H5TILE_OK)

static inline void capture_stderr(const char *file) {
    fflush(stderr);
    check_saved_stderr = dup(2);
    CHECK(check_saved_stderr >= 0);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK_MSG(fd >= 0, "open '%s': %s", file, strerror(errno));
    CHECK(dup2(fd, 2) == 2);
    close(fd);
}

static inline void restore_stderr(void) {
    fflush(stderr);
    CHECK(dup2(check_saved_stderr, 2) == 2);
    close(check_saved_stderr);
    check_saved_stderr = -1;
}

/* ---------------------------------------------------------------- files */

/* snprintf into a path buffer that dies on truncation: PATHF(buf, "%s/x.h5", dir). */
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static inline void check_pathf(const char *file, int line, char *out, size_t size,
                               const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, size, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size) check_fail(file, line, "path too long");
}
#define PATHF(buf, ...) check_pathf(__FILE__, __LINE__, buf, sizeof(buf), __VA_ARGS__)

/* The tile folder of a master file, as the README documents it: the master's name plus
 * ".tiles", with '%' written "~25" and '~' written "~7E" in that name. */
static inline void tile_dir_of(const char *file, int line, char *out, size_t size,
                               const char *master) {
    const char *base = strrchr(master, '/');
    size_t head = base ? (size_t)(base - master) + 1 : 0, n = 0;
    for (const char *p = master; *p; p++) {
        if (n + 8 >= size) check_fail(file, line, "path too long");
        if ((size_t)(p - master) >= head && (*p == '%' || *p == '~')) {
            n += (size_t)snprintf(out + n, size - n, "~%02X", (unsigned)(unsigned char)*p);
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    check_pathf(file, line, out + n, size - n, "%s", ".tiles");
}
#define TILE_DIR(buf, master) tile_dir_of(__FILE__, __LINE__, buf, sizeof(buf), master)

static inline int path_exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static inline int is_regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static inline int is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdir -p; dies on failure. */
static inline void mkdir_p(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    CHECK_MSG(n > 0 && n < sizeof buf, "mkdir_p: bad path '%s'", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char saved = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                check_fail(__FILE__, __LINE__, "mkdir '%s': %s", buf, strerror(errno));
            buf[i] = saved;
        }
    }
    CHECK_MSG(is_directory(path), "mkdir_p: '%s' is not a directory", path);
}

/* rm -rf (does not follow symbolic links); dies on failure. */
static inline void rm_rf(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        CHECK_MSG(d != NULL, "opendir '%s': %s", path, strerror(errno));
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char child[4096];
            PATHF(child, "%s/%s", path, e->d_name);
            rm_rf(child);
        }
        closedir(d);
        CHECK_MSG(rmdir(path) == 0, "rmdir '%s': %s", path, strerror(errno));
    } else {
        CHECK_MSG(unlink(path) == 0, "unlink '%s': %s", path, strerror(errno));
    }
}

/* A fresh, empty directory (removed first if it exists). */
static inline void fresh_dir(const char *path) {
    rm_rf(path);
    mkdir_p(path);
}

static inline void write_text_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, "fopen '%s': %s", path, strerror(errno));
    CHECK(fwrite(text, 1, strlen(text), f) == strlen(text));
    CHECK(fclose(f) == 0);
}

/* 64-bit FNV-1a. */
static inline uint64_t fnv_bytes(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}
#define FNV_INIT 0xcbf29ce484222325ULL

/* Hash of the size and every byte of a file; dies if it cannot be read. */
static inline uint64_t hash_file(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "fopen '%s': %s", path, strerror(errno));
    uint64_t h = FNV_INIT, total = 0;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        h = fnv_bytes(h, buf, n);
        total += n;
    }
    CHECK(!ferror(f));
    fclose(f);
    return fnv_bytes(h, &total, sizeof total);
}

static inline int cmp_strptr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in a directory (no "." / ".."), sorted; *count gets their number, or -1 when the
 * directory does not exist (then NULL is returned). Free with free_names. */
static inline char **list_dir(const char *dir, int *count) {
    DIR *d = opendir(dir);
    *count = -1;
    if (d == NULL) return NULL;
    size_t cap = 16, n = 0;
    char **names = (char **)malloc(cap * sizeof(char *));
    CHECK(names != NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (n == cap) {
            cap *= 2;
            names = (char **)realloc(names, cap * sizeof(char *));
            CHECK(names != NULL);
        }
        names[n] = strdup(e->d_name);
        CHECK(names[n] != NULL);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof(char *), cmp_strptr);
    *count = (int)n;
    return names;
}

static inline void free_names(char **names, int count) {
    for (int i = 0; i < count; i++) free(names[i]);
    free(names);
}

/* Number of entries in a directory, -1 if it does not exist. */
static inline int count_files(const char *dir) {
    int n;
    char **names = list_dir(dir, &n);
    if (names) free_names(names, n);
    return n;
}

/* Hash of a directory's sorted names and every byte of each regular file in it. */
static inline uint64_t hash_dir(const char *dir) {
    int n;
    char **names = list_dir(dir, &n);
    CHECK_MSG(names != NULL, "cannot list '%s'", dir);
    uint64_t h = FNV_INIT;
    for (int i = 0; i < n; i++) {
        char p[4096];
        PATHF(p, "%s/%s", dir, names[i]);
        h = fnv_bytes(h, names[i], strlen(names[i]) + 1);
        uint64_t fh = is_regular_file(p) ? hash_file(p) : 0;
        h = fnv_bytes(h, &fh, sizeof fh);
    }
    free_names(names, n);
    return h;
}

/* A snapshot of a master file and its tile folder, to prove a failed call touched nothing. */
typedef struct {
    uint64_t master;
    uint64_t tiles;
    int ntiles;
} dataset_snapshot;

static inline dataset_snapshot snapshot(const char *master) {
    char dir[4096];
    TILE_DIR(dir, master);
    dataset_snapshot s;
    s.master = hash_file(master);
    s.tiles = hash_dir(dir);
    s.ntiles = count_files(dir);
    return s;
}

/* Dies unless `master` and its tile folder are byte for byte as in `snap`. */
static inline void check_untouched(const char *file, int line, const char *master,
                                   dataset_snapshot snap) {
    dataset_snapshot now = snapshot(master);
    if (now.master != snap.master)
        check_fail(file, line, "master file '%s' changed", master);
    if (now.ntiles != snap.ntiles || now.tiles != snap.tiles)
        check_fail(file, line, "tile folder of '%s' changed (%d files, had %d)", master,
                   now.ntiles, snap.ntiles);
}
#define CHECK_UNTOUCHED(master, snap) check_untouched(__FILE__, __LINE__, master, snap)

/* ---------------------------------------------------------------- element types */

#define NDTYPES 14

static inline const char *dtype_name(int dt) {
    static const char *const names[NDTYPES] = {
        "bool",   "int8",    "int16",   "int32",   "int64",     "uint8",     "uint16",
        "uint32", "uint64",  "float16", "float32", "float64",   "complex64", "complex128"};
    return dt >= 0 && dt < NDTYPES ? names[dt] : "?";
}

static inline size_t dtype_size(int dt) {
    static const size_t sizes[NDTYPES] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 8, 16};
    return dt >= 0 && dt < NDTYPES ? sizes[dt] : 0;
}

/* IEEE half bits of a float that is exactly representable as a normal half, or zero. */
static inline uint16_t half_from_float(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    if ((u & 0x7fffffffu) == 0) return sign;
    int exp = (int)((u >> 23) & 0xff) - 127 + 15;
    CHECK_MSG(exp > 0 && exp < 31 && (u & 0x1fffu) == 0, "%g is not an exact half", (double)f);
    return (uint16_t)(sign | (uint16_t)(exp << 10) | (uint16_t)((u >> 13) & 0x3ffu));
}

/* The value of element `i` (global row-major index) of a test array of type `dt`, written to
 * `out` (dtype_size(dt) bytes). dtype_formulas.py gives the same values to the h5py scripts;
 * keep the two in step. No formula yields a negative zero, so values compare byte for byte. */
static inline void dtype_value(int dt, uint64_t i, void *out) {
    switch (dt) {
    case H5TILE_BOOL: { bool v = (i % 3 == 0); memcpy(out, &v, 1); break; }
    case H5TILE_INT8: { int8_t v = (int8_t)((int)(i * 37 % 256) - 128); memcpy(out, &v, 1); break; }
    case H5TILE_INT16: { int16_t v = (int16_t)((int)(i * 1237 % 65536) - 32768); memcpy(out, &v, 2); break; }
    case H5TILE_INT32: { int32_t v = (int32_t)((int64_t)i * 100003 - 1000000); memcpy(out, &v, 4); break; }
    case H5TILE_INT64: { int64_t v = ((int64_t)i - 17) * 1000000000007LL; memcpy(out, &v, 8); break; }
    case H5TILE_UINT8: { uint8_t v = (uint8_t)(i * 37 % 256); memcpy(out, &v, 1); break; }
    case H5TILE_UINT16: { uint16_t v = (uint16_t)(i * 1237 % 65536); memcpy(out, &v, 2); break; }
    case H5TILE_UINT32: { uint32_t v = (uint32_t)(4000000000ULL - i * 1001); memcpy(out, &v, 4); break; }
    case H5TILE_UINT64: { uint64_t v = 9223372036854775808ULL + i * 1000000007ULL; memcpy(out, &v, 8); break; }
    case H5TILE_FLOAT16: { uint16_t v = half_from_float(((float)(i % 64) - 17.0f) * 0.25f); memcpy(out, &v, 2); break; }
    case H5TILE_FLOAT32: { float v = ((float)(i % 4096) - 17.0f) * 0.5f + 0.125f; memcpy(out, &v, 4); break; }
    case H5TILE_FLOAT64: { double v = (double)i * 1.5 - 20.25; memcpy(out, &v, 8); break; }
    case H5TILE_COMPLEX64: { float v[2] = {(float)(i % 4096) * 0.5f, 2.0f - (float)(i % 4096) * 0.25f}; memcpy(out, v, 8); break; }
    case H5TILE_COMPLEX128: { double v[2] = {(double)i * 1.5 - 3.0, (double)i * 0.125}; memcpy(out, v, 16); break; }
    default: check_fail(__FILE__, __LINE__, "dtype_value: bad dtype %d", dt);
    }
}

/* Row-major global index of the element at `local` (an index into a tile at `offset`). */
static inline uint64_t global_index(size_t ndim, const uint64_t *global, const uint64_t *offset,
                                    const uint64_t *local) {
    uint64_t g = 0;
    for (size_t d = 0; d < ndim; d++) g = g * global[d] + offset[d] + local[d];
    return g;
}

static inline uint64_t volume(size_t ndim, const uint64_t *shape) {
    uint64_t v = 1;
    for (size_t d = 0; d < ndim; d++) v *= shape[d];
    return v;
}

/* Advances a row-major multi-index over `shape`; returns 0 after the last one. */
static inline int next_index(size_t ndim, const uint64_t *shape, uint64_t *idx) {
    for (size_t d = ndim; d-- > 0;) {
        if (++idx[d] < shape[d]) return 1;
        idx[d] = 0;
    }
    return 0;
}

/* Fills a dense tile buffer with the dtype_value formula of the global index. */
static inline void fill_tile(int dt, size_t ndim, const uint64_t *global, const uint64_t *offset,
                             const uint64_t *shape, void *buf) {
    uint64_t idx[32] = {0};
    size_t es = dtype_size(dt);
    uint64_t n = volume(ndim, shape);
    for (uint64_t k = 0; k < n; k++) {
        dtype_value(dt, global_index(ndim, global, offset, idx), (char *)buf + k * es);
        next_index(ndim, shape, idx);
    }
}

/* Checks a tile buffer against the formula, byte for byte; dies naming the first mismatch. */
#define CHECK_TILE(dt, ndim, global, offset, shape, buf) \
    check_tile(__FILE__, __LINE__, dt, ndim, global, offset, shape, buf)
static inline void check_tile(const char *file, int line, int dt, size_t ndim,
                              const uint64_t *global, const uint64_t *offset,
                              const uint64_t *shape, const void *buf) {
    uint64_t idx[32] = {0};
    size_t es = dtype_size(dt);
    uint64_t n = volume(ndim, shape);
    unsigned char want[16];
    for (uint64_t k = 0; k < n; k++) {
        uint64_t g = global_index(ndim, global, offset, idx);
        dtype_value(dt, g, want);
        if (memcmp(want, (const char *)buf + k * es, es) != 0) {
            char hw[40] = "", hg[40] = "";
            for (size_t b = 0; b < es; b++) {
                snprintf(hw + 2 * b, 3, "%02x", want[b]);
                snprintf(hg + 2 * b, 3, "%02x", ((const unsigned char *)buf)[k * es + b]);
            }
            check_fail(file, line, "%s element %llu (global index %llu): bytes %s, expected %s",
                       dtype_name(dt), (unsigned long long)k, (unsigned long long)g, hg, hw);
        }
        next_index(ndim, shape, idx);
    }
}

/* Reads the 2-D tile (offset, shape) of `dataset` in `path` as `dt` into `buf` (cleared first)
 * and checks it against the formula of a dataset of shape `global`. */
#define CHECK_READ_2D(path, dataset, dt, global, offset, shape, buf, bytes)                     \
    do {                                                                                       \
        memset(buf, 0, bytes);                                                                 \
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, dataset, dt, 2, offset, shape, buf, NULL)); \
        CHECK_TILE(dt, 2, global, offset, shape, buf);                                         \
    } while (0)

/* Checks that `dataset` in `path` is 2-D of `dt` and shape rows x cols. */
#define CHECK_INSPECT_2D(path, dataset, dt, rows, cols)                                   \
    do {                                                                                  \
        h5tile_dtype got_dt;                                                              \
        size_t got_nd;                                                                    \
        uint64_t got_shape[32];                                                           \
        EXPECT_OK(h5tile_inspect(path, dataset, &got_dt, &got_nd, got_shape));            \
        CHECK(got_dt == (dt) && got_nd == 2 && got_shape[0] == (rows) && got_shape[1] == (cols)); \
    } while (0)

static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    CHECK_MSG(p != NULL, "out of memory (%zu bytes)", n);
    return p;
}

/* The scratch directory given as argv[1]; dies with a usage line otherwise. */
static inline const char *scratch_arg(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
        exit(2);
    }
    return argv[1];
}

/* ------------------------------------------------------------- MPI file lookups */

/* The file of `dir` whose name ends in `suffix` (rank 0 looks; every rank gets it). */
static inline void file_ending(const char *dir, const char *suffix, char *out, size_t n) {
    char name[1024] = "";
    if (check_mpi_rank() == 0) {
        int count;
        char **list = list_dir(dir, &count);
        for (int i = 0; i < count; i++) {
            size_t l = strlen(list[i]), s = strlen(suffix);
            if (l > s && strcmp(list[i] + l - s, suffix) == 0) snprintf(name, sizeof name, "%s", list[i]);
        }
        free_names(list, count);
        CHECK_MSG(name[0] != 0, "no file ending in %s in %s", suffix, dir);
    }
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(out, n, "%s/%s", dir, name);
}

/* Byte offset in `file` of the float64 `x` (rank 0 searches; -1 when absent). */
static inline long long find_value(const char *file, double x) {
    long long at = -1;
    if (check_mpi_rank() == 0) {
        FILE *f = fopen(file, "rb");
        CHECK(f != NULL);
        double d;
        for (long long pos = 0; fread(&d, sizeof d, 1, f) == 1; pos += 8)
            if (memcmp(&d, &x, sizeof d) == 0) { at = pos; break; }
        fclose(f);
    }
    MPI_Bcast(&at, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    return at;
}

/* Flips bit 4 of byte `at` of `file` (rank 0 does; every rank waits for it), the rest of the
 * file as it was: damage only a checksum can see. Dies where the file has no such byte. */
static inline void flip_bit(const char *file, long long at) {
    if (check_mpi_rank() == 0) {
        FILE *f = fopen(file, "r+b");
        CHECK_MSG(f != NULL, "fopen '%s': %s", file, strerror(errno));
        unsigned char b;
        CHECK(fseek(f, at, SEEK_SET) == 0 && fread(&b, 1, 1, f) == 1);
        b ^= 0x10;
        CHECK(fseek(f, at, SEEK_SET) == 0 && fwrite(&b, 1, 1, f) == 1);
        CHECK(fclose(f) == 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The start of every mpi_* test: MPI initialised at `thread_level` (MPI_THREAD_SINGLE is what
 * MPI_Init gives), this process's rank and the size of MPI_COMM_WORLD, and the scratch folder
 * (argv[1]) emptied by rank 0 before any rank goes on. Returns the scratch folder. */
static inline const char *mpi_test_start(int *argc, char ***argv, int thread_level, int *rank,
                                         int *size) {
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(argc, argv, thread_level, &provided);
    CHECK_MSG(provided >= thread_level, "MPI provides thread level %d, below the %d asked for",
              provided, thread_level);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    const char *scratch = scratch_arg(*argc, *argv);
    if (*rank == 0) fresh_dir(scratch);
    MPI_Barrier(MPI_COMM_WORLD);
    return scratch;
}

#endif /* H5TILE_CHECK_H */
