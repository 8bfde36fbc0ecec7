/* GPU check of h5tile_write / h5tile_read with device pointers (built and run by
 * scripts/gpu-check.sh). One process, no MPI launcher (MPI_COMM_NULL):
 *
 *   h5tile_device DIR GIB
 *
 * 1. writes a GIB GiB float64 field from device memory as 4 row-slab tiles
 *    (h5tile_write_tiles), reads it back into device memory as 4 column slabs (another
 *    decomposition), and checks every element on the device against its formula;
 *    the same tiles as one subfile (H5TILE_LAYOUT_SUBFILES), read back and checked alike;
 * 2. writes and reads back one 1 GiB tile (far above the 128 MiB that stalls the reference);
 * 3. reads the same bytes from a plain file with pread + cudaMemcpy, for comparison;
 * 4. reads the 1 GiB tile again in 1000-row chunks into device memory (h5tile_batches_next);
 *    like every read here, from the disk: the whole read before it left the file in the page
 *    cache only where it went through host memory;
 * 5. writes the 1 GiB tile in the single-file layout (row runs from device memory) and reads
 *    it back;
 * 6. flips one bit in the subfile, the tile file and the single file: where PATH is compat the
 *    bytes went through pinned buffers, were summed there, and a read must say
 *    H5TILE_ERR_CORRUPT; where it is gds cuFile wrote them with no host copy, nothing was
 *    summed, and the read returns the damaged element. H5TILE_READ_NO_VERIFY reads it in both.
 * The routing mode comes from H5TILE_GDS (the script runs auto, on and off), the path it takes
 * from PATH. Prints one JSON line; exit status 0 only if every element and status matched.
 *
 *   h5tile_device DIR GIB PATH */
#include <h5tile.h> /* before common.h, which then checks h5tile calls too */
#include "common.h"
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The field: element (r, c) of a global rows x cols array. */
__host__ __device__ inline double value(uint64_t r, uint64_t c, uint64_t cols) {
    return (double)((r * cols + c) % 1000003) * 0.25;
}

/* Fills a box (offset r0, c0; shape nr x nc) of the field, row-major. */
__global__ void fill_box(double *x, uint64_t r0, uint64_t c0, uint64_t nr, uint64_t nc,
                         uint64_t cols) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < nr * nc;
         i += (uint64_t)gridDim.x * blockDim.x)
        x[i] = value(r0 + i / nc, c0 + i % nc, cols);
}

/* Counts elements of a box that differ from the field. */
__global__ void check_box(const double *x, uint64_t r0, uint64_t c0, uint64_t nr, uint64_t nc,
                          uint64_t cols, unsigned long long *bad) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < nr * nc;
         i += (uint64_t)gridDim.x * blockDim.x)
        if (x[i] != value(r0 + i / nc, c0 + i % nc, cols)) atomicAdd(bad, 1ull);
}

static unsigned long long count_bad(const double *x, uint64_t r0, uint64_t c0, uint64_t nr,
                                    uint64_t nc, uint64_t cols) {
    unsigned long long *d, h = 0;
    CUDA(cudaMalloc(&d, sizeof *d));
    CUDA(cudaMemset(d, 0, sizeof *d));
    check_box<<<2048, 256>>>(x, r0, c0, nr, nc, cols, d);
    CUDA(cudaDeviceSynchronize());
    CUDA(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    CUDA(cudaFree(d));
    return h;
}

/* Drops the cache of the master and of every file in its tile folder. */
static void uncache_dataset(const char *master) {
    char cmd[8192];
    uncache(master);
    snprintf(cmd, sizeof cmd, "%s.tiles", master);
    char list[8192 + 64];
    snprintf(list, sizeof list, "ls -1 '%s' 2>/dev/null", cmd);
    FILE *p = popen(list, "r");
    char name[4096];
    while (p && fgets(name, sizeof name, p)) {
        name[strcspn(name, "\n")] = 0;
        char full[8192 + 4096];
        snprintf(full, sizeof full, "%s/%s", cmd, name);
        uncache(full);
    }
    if (p) pclose(p);
}

/* The first file in the tile folder of `master` (the VDS tile file or the subfile). */
static void first_tile_file(const char *master, char *out, size_t cap) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "ls -1 '%s.tiles' 2>/dev/null | head -1", master);
    FILE *p = popen(cmd, "r");
    char name[4096] = "";
    if (p && fgets(name, sizeof name, p)) name[strcspn(name, "\n")] = 0;
    if (p) pclose(p);
    snprintf(out, cap, "%s.tiles/%s", master, name);
}

/* Flips one bit of the byte a third into `file` (tile data in every layout written here). */
static int flip_a_bit(const char *file) {
    int fd = open(file, O_RDWR);
    off_t at = fd < 0 ? 0 : lseek(fd, 0, SEEK_END) / 3;
    unsigned char b;
    if (fd < 0 || pread(fd, &b, 1, at) != 1) { perror(file); return 1; }
    b ^= 0x10;
    int bad = pwrite(fd, &b, 1, at) != 1;
    close(fd);
    uncache(file);
    return bad;
}

/* Reads the damaged dataset (global shape g) whole into `dev`: CORRUPT naming the file where
 * it was checksummed, the one damaged element where not; with NO_VERIFY, the damaged element
 * in both. Returns the count of wrong outcomes. */
static unsigned long long damaged_read(const char *master, const char *dset, const uint64_t g[2],
                                       const char *file, int checksummed, double *dev) {
    const uint64_t z[2] = {0, 0};
    unsigned long long wrong = 0;
    h5tile_status s = h5tile_read(MPI_COMM_NULL, master, dset, H5TILE_FLOAT64, 2, z, g, dev, NULL);
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    if (checksummed && (s != H5TILE_ERR_CORRUPT || !strstr(h5tile_last_error(), base))) {
        fprintf(stderr, "damaged %s: want H5TILE_ERR_CORRUPT naming %s, got %s: %s\n", master,
                base, h5tile_status_name(s), s ? h5tile_last_error() : "");
        wrong++;
    } else if (checksummed) {
        fprintf(stderr, "damaged %s: %s (as it must)\n", master, h5tile_last_error());
    } else if (s != H5TILE_OK || count_bad(dev, 0, 0, g[0], g[1], g[1]) != 1) {
        fprintf(stderr, "damaged %s, not checksummed: want the damaged element back, got %s\n",
                master, h5tile_status_name(s));
        wrong++;
    }
    h5tile_read_options ro = h5tile_read_options_default();
    ro.flags |= H5TILE_READ_NO_VERIFY;
    s = h5tile_read(MPI_COMM_NULL, master, dset, H5TILE_FLOAT64, 2, z, g, dev, &ro);
    if (s != H5TILE_OK || count_bad(dev, 0, 0, g[0], g[1], g[1]) != 1) {
        fprintf(stderr, "damaged %s, NO_VERIFY: want the damaged element back, got %s\n", master,
                h5tile_status_name(s));
        wrong++;
    }
    return wrong;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s DIR GIB PATH\n", argv[0]);
        return 1;
    }
    /* The compat path stages (and sums) the bytes; cuFile moves them with no host copy. */
    const int checksummed = strcmp(argv[3], "compat") == 0;
    const char *dir = argv[1];
    uint64_t gib = (uint64_t)atol(argv[2]);
    const uint64_t cols = 32768, rows = gib * (1ull << 30) / 8 / cols;
    const uint64_t g[2] = {rows, cols};
    const size_t total = rows * cols * 8;
    char path[4096], single[4096], plain[4096];
    snprintf(path, sizeof path, "%s/field.h5", dir);
    snprintf(single, sizeof single, "%s/single.h5", dir);
    snprintf(plain, sizeof plain, "%s/plain.bin", dir);
    unsigned long long bad = 0;

    /* 1. Four row slabs written from device memory ... */
    double *rowbuf[4], *colbuf[4];
    uint64_t roff[4][2], rshape[4][2], coff[4][2], cshape[4][2];
    const void *bufs[4];
    for (int k = 0; k < 4; k++) {
        uint64_t r0 = rows * k / 4, r1 = rows * (k + 1) / 4;
        roff[k][0] = r0, roff[k][1] = 0, rshape[k][0] = r1 - r0, rshape[k][1] = cols;
        uint64_t c0 = cols * k / 4, c1 = cols * (k + 1) / 4;
        coff[k][0] = 0, coff[k][1] = c0, cshape[k][0] = rows, cshape[k][1] = c1 - c0;
        CUDA(cudaMalloc(&rowbuf[k], rshape[k][0] * cols * 8));
        CUDA(cudaMalloc(&colbuf[k], rows * cshape[k][1] * 8));
        fill_box<<<2048, 256>>>(rowbuf[k], r0, 0, rshape[k][0], cols, cols);
        CUDA(cudaMemset(colbuf[k], 0xFF, rows * cshape[k][1] * 8));
        bufs[k] = rowbuf[k];
    }
    CUDA(cudaDeviceSynchronize());
    double t0 = now();
    H5TILE(h5tile_write_tiles(MPI_COMM_NULL, path, "/field", H5TILE_FLOAT64, 2, g, 4, &roff[0][0],
                              &rshape[0][0], bufs, NULL));
    double t_write = now() - t0;
    /* ... read back as four column slabs. */
    uncache_dataset(path);
    t0 = now();
    for (int k = 0; k < 4; k++)
        H5TILE(h5tile_read(MPI_COMM_NULL, path, "/field", H5TILE_FLOAT64, 2, coff[k], cshape[k],
                           colbuf[k], NULL));
    double t_read_cols = now() - t0;
    for (int k = 0; k < 4; k++) bad += count_bad(colbuf[k], 0, coff[k][1], rows, cshape[k][1], cols);
    /* ... and as the same row slabs (whole tiles: one run each). */
    for (int k = 0; k < 4; k++) CUDA(cudaMemset(rowbuf[k], 0, rshape[k][0] * cols * 8));
    uncache_dataset(path);
    t0 = now();
    for (int k = 0; k < 4; k++)
        H5TILE(h5tile_read(MPI_COMM_NULL, path, "/field", H5TILE_FLOAT64, 2, roff[k], rshape[k],
                           rowbuf[k], NULL));
    double t_read_rows = now() - t0;
    for (int k = 0; k < 4; k++) bad += count_bad(rowbuf[k], roff[k][0], 0, rshape[k][0], cols, cols);
    /* 1b. The same slabs from device memory into one subfile (H5TILE_LAYOUT_SUBFILES: four
     * datasets, each tile's bytes on its own 4 KiB blocks, written through the device path),
     * read back as the column slabs. */
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/subfiled.h5", dir);
    h5tile_write_options so = h5tile_write_options_default();
    so.layout = H5TILE_LAYOUT_SUBFILES;
    t0 = now();
    H5TILE(h5tile_write_tiles(MPI_COMM_NULL, sub, "/field", H5TILE_FLOAT64, 2, g, 4, &roff[0][0],
                              &rshape[0][0], bufs, &so));
    double t_write_subfiles = now() - t0;
    for (int k = 0; k < 4; k++) CUDA(cudaMemset(colbuf[k], 0xFF, rows * cshape[k][1] * 8));
    uncache_dataset(sub);
    for (int k = 0; k < 4; k++)
        H5TILE(h5tile_read(MPI_COMM_NULL, sub, "/field", H5TILE_FLOAT64, 2, coff[k], cshape[k],
                           colbuf[k], NULL));
    for (int k = 0; k < 4; k++) bad += count_bad(colbuf[k], 0, coff[k][1], rows, cshape[k][1], cols);

    /* 3. Baseline: the same bytes from a plain file, pread into pinned memory + cudaMemcpy. */
    size_t piece = (size_t)64 << 20;
    char *host;
    CUDA(cudaMallocHost((void **)&host, piece));
    int fd = open(plain, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int k = 0; k < 4; k++) {
        size_t len = rshape[k][0] * cols * 8;
        for (size_t at = 0; at < len; at += piece) {
            size_t n = len - at < piece ? len - at : piece;
            CUDA(cudaMemcpy(host, (char *)rowbuf[k] + at, n, cudaMemcpyDeviceToHost));
            if (write(fd, host, n) != (ssize_t)n) { perror("write"); return 4; }
        }
    }
    close(fd);
    uncache(plain);
    t0 = now();
    fd = open(plain, O_RDONLY);
    off_t file_at = 0;
    for (int k = 0; k < 4; k++) {
        size_t len = rshape[k][0] * cols * 8;
        for (size_t at = 0; at < len; at += piece) {
            size_t n = len - at < piece ? len - at : piece, got = 0;
            while (got < n) {
                ssize_t r = pread(fd, host + got, n - got, file_at + (off_t)got);
                if (r <= 0) { perror("pread"); return 4; }
                got += (size_t)r;
            }
            file_at += (off_t)n;
            CUDA(cudaMemcpy((char *)rowbuf[k] + at, host, n, cudaMemcpyHostToDevice));
        }
    }
    close(fd);
    double t_posix = now() - t0;
    unlink(plain);
    for (int k = 0; k < 4; k++) {
        CUDA(cudaFree(rowbuf[k]));
        CUDA(cudaFree(colbuf[k]));
    }
    /* 6a. A flipped bit in the subfile. */
    unsigned long long wrong = 0;
    double *all;
    char damaged[8192 + 4096];
    CUDA(cudaMalloc(&all, total));
    first_tile_file(sub, damaged, sizeof damaged);
    wrong += flip_a_bit(damaged);
    wrong += damaged_read(sub, "/field", g, damaged, checksummed, all);
    CUDA(cudaFree(all));

    /* 2. One 1 GiB tile, written and read back whole. */
    const uint64_t g1[2] = {4096, 32768}, z[2] = {0, 0};
    double *one, *back;
    CUDA(cudaMalloc(&one, (size_t)1 << 30));
    CUDA(cudaMalloc(&back, (size_t)1 << 30));
    fill_box<<<2048, 256>>>(one, 0, 0, g1[0], g1[1], g1[1]);
    CUDA(cudaMemset(back, 0, (size_t)1 << 30));
    CUDA(cudaDeviceSynchronize());
    t0 = now();
    H5TILE(h5tile_write(MPI_COMM_NULL, single, "/one", H5TILE_FLOAT64, 2, g1, z, g1, one, NULL));
    double t_write1 = now() - t0;
    uncache_dataset(single);
    t0 = now();
    H5TILE(h5tile_read(MPI_COMM_NULL, single, "/one", H5TILE_FLOAT64, 2, z, g1, back, NULL));
    double t_read1 = now() - t0;
    bad += count_bad(back, 0, 0, g1[0], g1[1], g1[1]);

    /* 4. The same tile in 1000-row chunks (edge chunk clipped) into device memory, through
     *    h5tile_batches_next. */
    const uint64_t chunk[2] = {1000, g1[1]};
    uncache_dataset(single);
    h5tile_batches *it;
    H5TILE(h5tile_batches_open(MPI_COMM_NULL, single, "/one", 2, chunk, NULL, &it));
    uint64_t at[2], got[2], chunks = 0, rows_seen = 0;
    bool done = false;
    t0 = now();
    while (1) {
        H5TILE(h5tile_batches_next(it, back, (size_t)1 << 30, at, got, &done));
        if (done) break;
        bad += count_bad(back, at[0], at[1], got[0], got[1], g1[1]);
        chunks++, rows_seen += got[0];
    }
    double t_batches = now() - t0;
    h5tile_batches_free(it);
    if (chunks != 5 || rows_seen != g1[0]) {
        fprintf(stderr, "batches: %llu chunks, %llu rows\n", (unsigned long long)chunks,
                (unsigned long long)rows_seen);
        bad++;
    }
    /* 5. The same tile in the single-file layout: its rows written from device memory. */
    char flat[4096];
    snprintf(flat, sizeof flat, "%s/flat.h5", dir);
    h5tile_write_options fo = h5tile_write_options_default();
    fo.layout = H5TILE_LAYOUT_SINGLE;
    t0 = now();
    H5TILE(h5tile_write(MPI_COMM_NULL, flat, "/one", H5TILE_FLOAT64, 2, g1, z, g1, one, &fo));
    double t_write_flat = now() - t0;
    CUDA(cudaMemset(back, 0, (size_t)1 << 30));
    uncache(flat);
    H5TILE(h5tile_read(MPI_COMM_NULL, flat, "/one", H5TILE_FLOAT64, 2, z, g1, back, NULL));
    bad += count_bad(back, 0, 0, g1[0], g1[1], g1[1]);

    /* 6b. A flipped bit in the tile file and in the single file. */
    first_tile_file(single, damaged, sizeof damaged);
    wrong += flip_a_bit(damaged);
    wrong += damaged_read(single, "/one", g1, damaged, checksummed, back);
    wrong += flip_a_bit(flat);
    wrong += damaged_read(flat, "/one", g1, flat, checksummed, back);
    CUDA(cudaFree(one));
    CUDA(cudaFree(back));
    CUDA(cudaFreeHost(host));

    const char *mode = getenv("H5TILE_GDS");
    double G = (double)(1u << 30);
    printf("{\"H5TILE_GDS\": \"%s\", \"GiB\": %llu, \"write_GiB_s\": %.3f, "
           "\"read_columns_GiB_s\": %.3f, \"read_rows_GiB_s\": %.3f, \"posix_read_GiB_s\": %.3f, "
           "\"read_rows_over_posix\": %.2f, \"tile_1GiB_write_s\": %.3f, \"tile_1GiB_read_s\": %.3f, "
           "\"tile_1GiB_batches_s\": %.3f, \"subfiles_write_GiB_s\": %.3f, "
           "\"tile_1GiB_single_write_s\": %.3f, \"checksummed\": %s, \"mismatches\": %llu, "
           "\"damage_outcomes_wrong\": %llu}\n",
           mode ? mode : "(unset)", (unsigned long long)gib, total / t_write / G,
           total / t_read_cols / G, total / t_read_rows / G, total / t_posix / G,
           t_posix / t_read_rows, t_write1, t_read1, t_batches, total / t_write_subfiles / G,
           t_write_flat, checksummed ? "true" : "false", bad, wrong);
    return bad || wrong ? 5 : 0;
}
