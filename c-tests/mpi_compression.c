/* Compressed tiles, on any number of ranks: a 900 x 1000 float64 array and a 900 x 1000 int32
 * one, rank r of n writing a slab of rows (3 chunks of about 1 MiB for the float64 tile on 1
 * rank), in the VDS and subfiled (2 ranks a subfile) layouts, with each codec (zstd, lz4,
 * deflate), with and without the byte shuffle:
 *   round trip   read back whole on every rank, in column slabs (another decomposition),
 *                converted (float64 as float32), and in batches: every value exact; the tile
 *                files are smaller than the data;
 *   options      the single-file layout refuses a codec naming the layouts that compress; a
 *                level a codec does not have, an unknown codec, a level or H5TILE_SHUFFLE
 *                without a codec: H5TILE_ERR_INVALID_ARGUMENT; H5TILE_COMPRESSION=zstd:1 in
 *                the environment compresses a write that names no codec (and not the
 *                single-file layout's), zstd:1+shuffle too, and a bad value is refused;
 *   damage       a changed byte in a zstd chunk of the last rank's tile: H5TILE_ERR_CORRUPT
 *                naming the tile file and the chunk, on every rank; reads of other tiles
 *                succeed.
 * The files of every layout and codec stay in <scratch>/files for h5py_compression.py. */
#include "check.h"

#define R 900
#define C 1000
static int rank, size;
static const uint64_t G[2] = {R, C};

static double f64(uint64_t i) { return (double)(i / 7) * 0.5 - 1000.0; }
static int32_t i32(uint64_t i) { return (int32_t)(i % 977) - 400; }

/* This rank's slab of rows: [*r0, *r0 + *rows). */
static void slab(uint64_t *r0, uint64_t *rows) {
    uint64_t per = R / (uint64_t)size, extra = R % (uint64_t)size, r = (uint64_t)rank;
    *rows = per + (r < extra);
    *r0 = r * per + (r < extra ? r : extra);
}

static int write_both(const char *path, const h5tile_write_options *o) {
    uint64_t r0, rows;
    slab(&r0, &rows);
    const uint64_t off[2] = {r0, 0}, shp[2] = {rows, C};
    double *d = (double *)malloc(rows * C * sizeof *d);
    int32_t *n = (int32_t *)malloc(rows * C * sizeof *n);
    CHECK(d != NULL && n != NULL);
    for (uint64_t k = 0; k < rows * C; k++) {
        d[k] = f64(r0 * C + k);
        n[k] = i32(r0 * C + k);
    }
    h5tile_checkpoint *ck = NULL;
    int st = h5tile_checkpoint_begin(MPI_COMM_WORLD, path, o, &ck);
    if (st == H5TILE_OK) {
        EXPECT_OK(h5tile_checkpoint_add(ck, "/f64", H5TILE_FLOAT64, 2, G, off, shp, d));
        EXPECT_OK(h5tile_checkpoint_add(ck, "/i32", H5TILE_INT32, 2, G, off, shp, n));
        st = h5tile_checkpoint_commit(ck); /* frees ck */
    }
    free(d);
    free(n);
    return st;
}

/* Reads the box (r0, c0, rows, cols) of /f64 (as float64, or float32) and /i32, checking
 * every value; returns the first failing status. */
static int read_box(const char *path, uint64_t r0, uint64_t c0, uint64_t rows, uint64_t cols,
                    int as_f32) {
    const uint64_t off[2] = {r0, c0}, shp[2] = {rows, cols};
    double *d = (double *)malloc(rows * cols * sizeof *d);
    float *f = (float *)malloc(rows * cols * sizeof *f);
    int32_t *n = (int32_t *)malloc(rows * cols * sizeof *n);
    CHECK(d != NULL && f != NULL && n != NULL);
    h5tile_read_options ro = h5tile_read_options_default();
    ro.flags = as_f32 ? H5TILE_READ_NARROWING : 0;
    int st = as_f32 ? h5tile_read(MPI_COMM_WORLD, path, "/f64", H5TILE_FLOAT32, 2, off, shp, f, &ro)
                    : h5tile_read(MPI_COMM_WORLD, path, "/f64", H5TILE_FLOAT64, 2, off, shp, d, &ro);
    if (st == H5TILE_OK)
        st = h5tile_read(MPI_COMM_WORLD, path, "/i32", H5TILE_INT32, 2, off, shp, n, NULL);
    for (uint64_t i = 0; st == H5TILE_OK && i < rows; i++)
        for (uint64_t j = 0; j < cols; j++) {
            uint64_t at = (r0 + i) * C + c0 + j, k = i * cols + j;
            if (as_f32)
                CHECK_MSG(f[k] == (float)f64(at), "f64[%llu] read as %g", (unsigned long long)at, f[k]);
            else
                CHECK_MSG(d[k] == f64(at), "f64[%llu] is %g, expected %g", (unsigned long long)at,
                          d[k], f64(at));
            CHECK_MSG(n[k] == i32(at), "i32[%llu] is %d, expected %d", (unsigned long long)at,
                      n[k], i32(at));
        }
    free(d);
    free(f);
    free(n);
    return st;
}

static void read_in_batches(const char *path) {
    const uint64_t chunk[2] = {128, 384};
    h5tile_batches *it = NULL;
    EXPECT_OK(h5tile_batches_open(MPI_COMM_NULL, path, "/f64", 2, chunk, NULL, &it));
    double *buf = (double *)malloc(128 * 384 * sizeof *buf);
    CHECK(buf != NULL);
    for (;;) {
        uint64_t off[2], shp[2];
        bool done = false;
        EXPECT_OK(h5tile_batches_next(it, buf, 128 * 384 * sizeof *buf, off, shp, &done));
        if (done) break;
        for (uint64_t i = 0; i < shp[0]; i++)
            for (uint64_t j = 0; j < shp[1]; j++)
                CHECK(buf[i * shp[1] + j] == f64((off[0] + i) * C + off[1] + j));
    }
    h5tile_batches_free(it);
    free(buf);
}

/* Bytes of the files in `dir`. */
static long long folder_bytes(const char *dir) {
    long long total = 0;
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char p[4096];
        struct stat st;
        if (e->d_name[0] == '.') continue;
        PATHF(p, "%s/%s", dir, e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) total += st.st_size;
    }
    closedir(d);
    return total;
}

static const char *codec_name(unsigned c) {
    return c == H5TILE_COMPRESS_ZSTD ? "zstd" : c == H5TILE_COMPRESS_LZ4 ? "lz4" : "deflate";
}

static void round_trip(const char *files, int layout, unsigned codec, int shuffle) {
    const char *lname = layout == H5TILE_LAYOUT_VDS ? "vds" : "subfiles";
    char path[4096], dir[4096];
    PATHF(path, "%s/%s-%s%s.h5", files, lname, codec_name(codec), shuffle ? "-shuffle" : "");
    CHECK_CONTEXT("%s", path);
    h5tile_write_options o = h5tile_write_options_default();
    o.layout = layout;
    o.ranks_per_file = 2;
    o.compression = codec;
    o.flags = shuffle ? H5TILE_SHUFFLE : 0;
    EXPECT_OK(write_both(path, &o));
    EXPECT_OK(read_box(path, 0, 0, R, C, 0));
    /* column slabs: another decomposition than the one written */
    uint64_t c0 = (uint64_t)rank * (C / (uint64_t)size);
    uint64_t cols = rank == size - 1 ? C - c0 : C / (uint64_t)size;
    EXPECT_OK(read_box(path, 0, c0, R, cols, 0));
    EXPECT_OK(read_box(path, 123, 45, 300, 600, 1));
    EXPECT_OK(read_box(path, R - 1, C - 1, 1, 1, 0));
    read_in_batches(path);
    TILE_DIR(dir, path);
    long long stored = folder_bytes(dir), raw = (long long)R * C * (8 + 4);
    CHECK_MSG(stored < raw * 3 / 4, "%lld bytes stored for %lld of data", stored, raw);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void expect_invalid(const char *path, const h5tile_write_options *o, const char *says) {
    int st = write_both(path, o);
    CHECK_MSG(st == H5TILE_ERR_INVALID_ARGUMENT, "status %d (%s)", st, h5tile_last_error());
    CHECK_MSG(strstr(h5tile_last_error(), says) != NULL, "the message does not say '%s': \"%s\"",
              says, h5tile_last_error());
    CHECK(!path_exists(path));
}

/* Options a write refuses, each set on the defaults, and what the message must say. */
static const struct {
    h5tile_layout layout;
    h5tile_compression compression;
    int32_t level;
    uint32_t flags;
    const char *says;
} REFUSED[] = {
    /* the single-file layout, which cannot compress */
    {H5TILE_LAYOUT_SINGLE, H5TILE_COMPRESS_ZSTD, 0, 0,
     "H5TILE_LAYOUT_VDS and H5TILE_LAYOUT_SUBFILES compress"},
    {H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_DEFLATE, 10, 0, "compression level 10 for deflate"},
    {H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_LZ4, 1, 0, "lz4, which has no levels"},
    {H5TILE_LAYOUT_VDS, 9, 0, 0, "compression 9"},
    {H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_NONE, 3, 0, "compression_level 3 without a codec"},
    {H5TILE_LAYOUT_VDS, H5TILE_COMPRESS_NONE, 0, H5TILE_SHUFFLE,
     "H5TILE_SHUFFLE without compression"},
};

static void options(const char *scratch) {
    char path[4096], dir[4096];
    PATHF(path, "%s/refused.h5", scratch);
    h5tile_write_options o = h5tile_write_options_default();
    CHECK(o.compression == H5TILE_COMPRESS_NONE && o.compression_level == 0);
    for (size_t i = 0; i < sizeof REFUSED / sizeof REFUSED[0]; i++) {
        CHECK_CONTEXT("refused options: %s", REFUSED[i].says);
        o = h5tile_write_options_default();
        o.layout = REFUSED[i].layout;
        o.compression = REFUSED[i].compression;
        o.compression_level = REFUSED[i].level;
        o.flags = REFUSED[i].flags;
        expect_invalid(path, &o, REFUSED[i].says);
    }

    /* The environment's default: compressed when the options name no codec. */
    CHECK_CONTEXT("H5TILE_COMPRESSION");
    CHECK(setenv("H5TILE_COMPRESSION", "zstd:1", 1) == 0);
    PATHF(path, "%s/from-environment.h5", scratch);
    o = h5tile_write_options_default();
    EXPECT_OK(write_both(path, &o));
    EXPECT_OK(read_box(path, 0, 0, R, C, 0));
    TILE_DIR(dir, path);
    long long stored = folder_bytes(dir), raw = (long long)R * C * (8 + 4);
    CHECK_MSG(stored < raw / 2, "%lld bytes stored for %lld of data", stored, raw);
    /* ... with the shuffle too, written as `h5tile ls` shows a compression */
    CHECK(setenv("H5TILE_COMPRESSION", "zstd:1+shuffle", 1) == 0);
    PATHF(path, "%s/from-environment-shuffled.h5", scratch);
    EXPECT_OK(write_both(path, &o));
    EXPECT_OK(read_box(path, 0, 0, R, C, 0));
    CHECK(setenv("H5TILE_COMPRESSION", "zstd+bitshuffle", 1) == 0);
    PATHF(path, "%s/bad-shuffle.h5", scratch);
    expect_invalid(path, &o, "H5TILE_COMPRESSION=zstd+bitshuffle");
    CHECK(setenv("H5TILE_COMPRESSION", "zstd:1", 1) == 0);
    /* ... but not the single-file layout's, which cannot compress */
    PATHF(path, "%s/single.h5", scratch);
    o.layout = H5TILE_LAYOUT_SINGLE;
    EXPECT_OK(write_both(path, &o));
    EXPECT_OK(read_box(path, 0, 0, R, C, 0));
    CHECK(setenv("H5TILE_COMPRESSION", "brotli", 1) == 0);
    o.layout = H5TILE_LAYOUT_VDS;
    PATHF(path, "%s/bad-environment.h5", scratch);
    expect_invalid(path, &o, "H5TILE_COMPRESSION=brotli");
    CHECK(unsetenv("H5TILE_COMPRESSION") == 0);
}

/* The first zstd frame in `file` (its magic number): the start of a stored chunk. */
static long long find_zstd_frame(const char *file) {
    static const unsigned char magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
    FILE *f = fopen(file, "rb");
    CHECK(f != NULL);
    long long at = -1, pos = 0;
    unsigned char window[4] = {0};
    for (int c; (c = fgetc(f)) != EOF; pos++) {
        memmove(window, window + 1, 3);
        window[3] = (unsigned char)c;
        if (pos >= 3 && memcmp(window, magic, 4) == 0) {
            at = pos - 3;
            break;
        }
    }
    fclose(f);
    return at;
}

static void damage(const char *scratch) {
    char path[4096], dir[4096], victim[4096];
    PATHF(path, "%s/damaged.h5", scratch);
    CHECK_CONTEXT("a changed byte in a chunk");
    h5tile_write_options o = h5tile_write_options_default();
    o.compression = H5TILE_COMPRESS_ZSTD;
    EXPECT_OK(write_both(path, &o));
    TILE_DIR(dir, path);
    /* the last rank's float64 tile: the first dataset of the checkpoint, its tile 0 */
    char ending[64];
    snprintf(ending, sizeof ending, ".r%d.t0.h5", size - 1);
    file_ending(dir, ending, victim, sizeof victim);
    long long at = -1; /* found by rank 0, the rank that flips it */
    if (rank == 0) {
        at = find_zstd_frame(victim);
        CHECK_MSG(at >= 0, "no zstd frame in %s", victim);
    }
    flip_bit(victim, at + 300);
    int st = read_box(path, 0, 0, R, C, 0);
    CHECK_MSG(st == H5TILE_ERR_CORRUPT, "status %d (%s)", st, h5tile_last_error());
    const char *base = strrchr(victim, '/') + 1;
    CHECK_MSG(strstr(h5tile_last_error(), base) != NULL, "\"%s\"", h5tile_last_error());
    CHECK_MSG(strstr(h5tile_last_error(), "chunk 0") != NULL, "\"%s\"", h5tile_last_error());
    /* the other ranks' tiles are intact */
    if (size > 1) {
        uint64_t r0, rows;
        slab(&r0, &rows);
        (void)r0;
        EXPECT_OK(read_box(path, 0, 0, R - rows - 1, C, 0));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc == 2);
    char files[4096];
    PATHF(files, "%s/files", argv[1]);
    if (rank == 0) {
        fresh_dir(argv[1]);
        mkdir_p(files);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const unsigned codecs[3] = {H5TILE_COMPRESS_ZSTD, H5TILE_COMPRESS_LZ4, H5TILE_COMPRESS_DEFLATE};
    for (int layout = 0; layout < 2; layout++)
        for (int c = 0; c < 3; c++)
            for (int shuffle = 0; shuffle < 2; shuffle++)
                round_trip(files, layout ? H5TILE_LAYOUT_SUBFILES : H5TILE_LAYOUT_VDS, codecs[c],
                           shuffle);
    options(argv[1]);
    damage(argv[1]);
    if (rank == 0) printf("mpi_compression: %d ranks OK\n", size);
    MPI_Finalize();
    return 0;
}
