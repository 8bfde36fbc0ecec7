/* The bad-input matrix, on 2 or more ranks. Every case checks the exact status on every rank
 * (a failure on one rank is agreed: every rank returns it), including cases where only rank 1
 * passes the bad value; that h5tile_last_error() is non-empty after each failure and empty
 * after each success (EXPECT_STATUS); and that a good dataset written first is byte-for-byte
 * untouched, its tile folder holding the same files, after every failed write. */
#include "check.h"

static int rank, size;
static char good[4096];          /* a good 8x6 float64 dataset "/data" */
static dataset_snapshot good_snap;
static const uint64_t G[2] = {8, 6};
static uint64_t my_off[2], my_shp[2]; /* this rank's partition tile of G */
static double *my_buf;                /* values other than the good file's */

static void expect_good_untouched(int line) {
    MPI_Barrier(MPI_COMM_WORLD);
    check_untouched(__FILE__, line, good, good_snap);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A write of this rank's tile of G with the given arguments must return `expected` here (so on
 * every rank, since every rank runs it) and leave the good dataset untouched. */
#define WRITE_CASE(expected, path, dset, dtype, ndim, global, off, shp, buf, opts)            \
    do {                                                                                     \
        EXPECT_STATUS(h5tile_write(MPI_COMM_WORLD, path, dset, dtype, ndim, global, off, shp, \
                                   buf, opts),                                               \
                      expected);                                                             \
        expect_good_untouched(__LINE__);                                                     \
    } while (0)

#define READ_CASE(expected, path, dset, dtype, ndim, off, shp, buf, opts)                       \
    EXPECT_STATUS(h5tile_read(MPI_COMM_WORLD, path, dset, dtype, ndim, off, shp, buf, opts), \
                  expected)

static void write_good(const char *path, const char *dset, int dt) {
    uint64_t off[2], shp[2];
    EXPECT_OK(h5tile_partition((size_t)size, (size_t)rank, 2, G, off, shp));
    void *buf = xmalloc((size_t)volume(2, shp) * dtype_size(dt));
    fill_tile(dt, 2, G, off, shp, buf);
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, dset, dt, 2, G, off, shp, buf, NULL));
    free(buf);
}

static void check_good_readable(void) {
    double *buf = (double *)xmalloc(8 * 6 * sizeof(double));
    const uint64_t zero[2] = {0, 0};
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, good, "/data", H5TILE_FLOAT64, 2, zero, G, buf, NULL));
    CHECK_TILE(H5TILE_FLOAT64, 2, G, zero, G, buf);
    free(buf);
}

/* A write of G to `path` in which rank 1 passes an empty tile (a gap), with `po` (which allows
 * it: H5TILE_ALLOW_PARTIAL), succeeds; read back, the gap is zeros and the rest the formula. */
static void check_partial_write(const char *path, const h5tile_write_options *po,
                                const char *what) {
    const uint64_t empty[2] = {my_shp[0], 0};
    double *vals = (double *)xmalloc((size_t)volume(2, my_shp) * sizeof(double));
    fill_tile(H5TILE_FLOAT64, 2, G, my_off, my_shp, vals);
    EXPECT_OK(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, G, my_off,
                           rank == 1 ? empty : my_shp, rank == 1 ? NULL : vals, po));
    free(vals);
    double all[8 * 6];
    const uint64_t zero[2] = {0, 0};
    uint64_t gap_off[2], gap_shp[2];
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, zero, G, all, NULL));
    EXPECT_OK(h5tile_partition((size_t)size, 1, 2, G, gap_off, gap_shp));
    for (uint64_t r = 0; r < G[0]; r++)
        for (uint64_t c = 0; c < G[1]; c++) {
            double want;
            int in_gap = r >= gap_off[0] && r < gap_off[0] + gap_shp[0] && c >= gap_off[1] &&
                         c < gap_off[1] + gap_shp[1];
            dtype_value(H5TILE_FLOAT64, r * G[1] + c, &want);
            if (in_gap) want = 0.0;
            CHECK_MSG(all[r * G[1] + c] == want, "%s: [%llu,%llu] is %g, expected %g", what,
                      (unsigned long long)r, (unsigned long long)c, all[r * G[1] + c], want);
        }
}

static void write_cases(const char *scratch) {
    const char *mine = rank == 1 ? NULL : good; /* NULL on rank 1 only */
    h5tile_write_options o = h5tile_write_options_default();
    h5tile_write_options bad;

    /* NULL pointers */
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, NULL, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &o);
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, mine, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &o);
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, NULL, H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &o);
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, rank == 1 ? NULL : "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &o);
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, NULL, my_off, my_shp, my_buf, &o);
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, G, rank == 1 ? NULL : my_off, my_shp, my_buf, &o);
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, G, my_off, rank == 1 ? NULL : my_shp, my_buf, &o);
    /* a non-empty tile with a NULL buffer, on rank 1 only */
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, rank == 1 ? NULL : my_buf, &o);

    /* ndim 0 and 33 */
    {
        uint64_t g33[33], o33[33], s33[33];
        for (int d = 0; d < 33; d++) g33[d] = 1, o33[d] = 0, s33[d] = rank == 0 ? 1 : 0;
        WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 0, G, my_off, my_shp, my_buf, &o);
        WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 33, g33, o33, s33, my_buf, &o);
    }

    /* bad element type codes, on all ranks and on rank 1 only */
    WRITE_CASE(H5TILE_ERR_DTYPE, good, "/data", 99, 2, G, my_off, my_shp, my_buf, &o);
    WRITE_CASE(H5TILE_ERR_DTYPE, good, "/data", -1, 2, G, my_off, my_shp, my_buf, &o);
    WRITE_CASE(H5TILE_ERR_DTYPE, good, "/data", rank == 1 ? 99 : H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &o);

    /* unknown layout codes (on all ranks, on rank 1 only), unknown flag bits */
    bad = o;
    bad.layout = 7;
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &bad);
    bad.layout = rank == 1 ? -3 : H5TILE_LAYOUT_VDS;
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &bad);
    bad = o;
    bad.flags = 1u << 7;
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &bad);
    bad.flags = rank == 1 ? (H5TILE_ALLOW_PARTIAL | 0x80000000u) : 0;
    WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &bad);

    /* a tile outside the global shape, on rank 1 only (its buffer is big enough) */
    {
        uint64_t off[2] = {my_off[0], my_off[1]};
        if (rank == 1) off[0] = G[0] - my_shp[0] + 1;
        WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, G, off, my_shp, my_buf, &o);
        uint64_t far[2] = {1000, 0};
        WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, G, rank == 1 ? far : my_off, my_shp, my_buf, &o);
    }

    /* overlap: the last rank also passes a 1x1 tile inside rank 0's tile (full coverage) */
    {
        uint64_t offs[4] = {my_off[0], my_off[1], 0, 0}, shps[4] = {my_shp[0], my_shp[1], 1, 1};
        const void *bufs[2] = {my_buf, my_buf};
        size_t n = rank == size - 1 ? 2 : 1;
        EXPECT_STATUS(h5tile_write_tiles(MPI_COMM_WORLD, good, "/data", H5TILE_FLOAT64, 2, G, n,
                                         offs, shps, bufs, &o),
                      H5TILE_ERR_SHAPE);
        expect_good_untouched(__LINE__);
        /* overlap is an error even when gaps are allowed */
        h5tile_write_options partial = o;
        partial.flags = H5TILE_ALLOW_PARTIAL;
        EXPECT_STATUS(h5tile_write_tiles(MPI_COMM_WORLD, good, "/data", H5TILE_FLOAT64, 2, G, n,
                                         offs, shps, bufs, &partial),
                      H5TILE_ERR_SHAPE);
        expect_good_untouched(__LINE__);
    }

    /* gap: rank 1 passes an empty tile (NULL buffer), or a tile one row short */
    {
        uint64_t empty[2] = {my_shp[0], 0};
        WRITE_CASE(H5TILE_ERR_SHAPE, good, "/data", H5TILE_FLOAT64, 2, G, my_off, rank == 1 ? empty : my_shp, rank == 1 ? NULL : my_buf, &o);
        uint64_t shorter[2] = {my_shp[0] - 1, my_shp[1]};
        WRITE_CASE(H5TILE_ERR_SHAPE, good, "/data", H5TILE_FLOAT64, 2, G, my_off, rank == 1 ? shorter : my_shp, my_buf, &o);
        /* rank 1 passes no tile at all */
        const void *one_buf[1] = {my_buf};
        EXPECT_STATUS(h5tile_write_tiles(MPI_COMM_WORLD, good, "/data", H5TILE_FLOAT64, 2, G,
                                         rank == 1 ? 0 : 1, my_off, my_shp, one_buf, &o),
                      H5TILE_ERR_SHAPE);
        expect_good_untouched(__LINE__);

        /* A failed write to a new path leaves neither the file nor a tile folder. */
        char never[4096], never_dir[4096];
        PATHF(never, "%s/never.h5", scratch);
        TILE_DIR(never_dir, never);
        EXPECT_STATUS(h5tile_write(MPI_COMM_WORLD, never, "/data", H5TILE_FLOAT64, 2, G, my_off,
                                   rank == 1 ? empty : my_shp, rank == 1 ? NULL : my_buf, &o),
                      H5TILE_ERR_SHAPE);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_MSG(!path_exists(never), "a failed write created '%s'", never);
        CHECK_MSG(!path_exists(never_dir), "a failed write left the folder '%s'", never_dir);

        /* The same gap with H5TILE_ALLOW_PARTIAL succeeds, and the gap reads as zero. */
        char partial[4096];
        PATHF(partial, "%s/partial.h5", scratch);
        h5tile_write_options po = o;
        po.flags = H5TILE_ALLOW_PARTIAL;
        check_partial_write(partial, &po, "partial write");
    }

    /* The same checks hold for the single-file layout: a gap or an overlap fails untouched,
     * ALLOW_PARTIAL leaves zeros, a failed write leaves no file. */
    {
        h5tile_write_options so = o;
        so.layout = H5TILE_LAYOUT_SINGLE;
        uint64_t empty[2] = {my_shp[0], 0};
        WRITE_CASE(H5TILE_ERR_SHAPE, good, "/data", H5TILE_FLOAT64, 2, G, my_off, rank == 1 ? empty : my_shp, rank == 1 ? NULL : my_buf, &so);
        uint64_t off[2] = {my_off[0], my_off[1]};
        if (rank == 1) off[0] = G[0] - my_shp[0] + 1;
        WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, G, off, my_shp, my_buf, &so);
        WRITE_CASE(H5TILE_ERR_DTYPE, good, "/data", rank == 1 ? 99 : H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &so);
        char never[4096];
        PATHF(never, "%s/never_single.h5", scratch);
        EXPECT_STATUS(h5tile_write(MPI_COMM_WORLD, never, "/data", H5TILE_FLOAT64, 2, G, my_off,
                                   rank == 1 ? empty : my_shp, rank == 1 ? NULL : my_buf, &so),
                      H5TILE_ERR_SHAPE);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_MSG(!path_exists(never), "a failed write created '%s'", never);

        char partial[4096];
        PATHF(partial, "%s/partial_single.h5", scratch);
        so.flags = H5TILE_ALLOW_PARTIAL;
        check_partial_write(partial, &so, "partial single-file write");
    }

    /* ranks disagreeing on shape, element type, dataset, path, ndim (rank 1 differs) */
    {
        h5tile_write_options single_layout = o;
        single_layout.layout = H5TILE_LAYOUT_SINGLE;
        const uint64_t g_other[2] = {8, 7}; /* rank 1's tile still fits */
        WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, rank == 1 ? g_other : G, my_off, my_shp, my_buf, &o);
        /* every rank is told which argument differs, rank 0's value and the first other one */
        EXPECT_STATUS(h5tile_write(MPI_COMM_WORLD, good, "/data", H5TILE_FLOAT64, 2, rank == 1 ? g_other : G,
                                   my_off, my_shp, my_buf, &o),
                      H5TILE_ERR_INVALID_ARGUMENT);
        const char *want_shape = "ranks disagree on the global shape: rank 0 passes [8, 6], rank 1 passes [8, 7]";
        CHECK_MSG(strncmp(h5tile_last_error(), want_shape, strlen(want_shape)) == 0,
                  "the message \"%s\" does not start \"%s\"", h5tile_last_error(), want_shape);
        EXPECT_STATUS(h5tile_write(MPI_COMM_WORLD, good, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf,
                                   rank == 1 ? &single_layout : &o),
                      H5TILE_ERR_INVALID_ARGUMENT);
        const char *want_layout = "ranks disagree on the layout: rank 0 passes H5TILE_LAYOUT_VDS, rank 1 passes "
                                  "H5TILE_LAYOUT_SINGLE";
        CHECK_MSG(strncmp(h5tile_last_error(), want_layout, strlen(want_layout)) == 0,
                  "the message \"%s\" does not start \"%s\"", h5tile_last_error(), want_layout);
        expect_good_untouched(__LINE__);
        float *fbuf = (float *)xmalloc((size_t)volume(2, my_shp) * sizeof(float));
        memset(fbuf, 0, (size_t)volume(2, my_shp) * sizeof(float));
        WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", rank == 1 ? H5TILE_FLOAT32 : H5TILE_FLOAT64, 2, G, my_off, my_shp, rank == 1 ? (void *)fbuf : (void *)my_buf, &o);
        free(fbuf);
        WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, rank == 1 ? "/other" : "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &o);
        char other[4096];
        PATHF(other, "%s/other.h5", scratch);
        WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, rank == 1 ? other : good, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &o);
        CHECK(!path_exists(other));
        const uint64_t g3[3] = {8, 6, 1};
        const uint64_t o3[3] = {my_off[0], my_off[1], 0}, s3[3] = {my_shp[0], my_shp[1], 1};
        WRITE_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, rank == 1 ? 3 : 2, rank == 1 ? g3 : G, rank == 1 ? o3 : my_off, rank == 1 ? s3 : my_shp, my_buf, &o);
    }

    /* path is a directory */
    {
        char dir[4096];
        PATHF(dir, "%s/adir", scratch);
        WRITE_CASE(H5TILE_ERR_IS_DIRECTORY, dir, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &o);
        CHECK(is_directory(dir) && count_files(dir) == 0);
        char tiles[4096];
        TILE_DIR(tiles, dir);
        CHECK_MSG(!path_exists(tiles), "a failed write created '%s'", tiles);
        double buf[8 * 6];
        const uint64_t zero[2] = {0, 0};
        READ_CASE(H5TILE_ERR_IS_DIRECTORY, dir, "/data", H5TILE_FLOAT64, 2, zero, G, buf, NULL);
        h5tile_dtype dt;
        size_t nd;
        uint64_t shape[32];
        EXPECT_STATUS(h5tile_inspect(dir, "/data", &dt, &nd, shape), H5TILE_ERR_IS_DIRECTORY);
    }

    /* H5TILE_NO_OVERWRITE */
    {
        h5tile_write_options no = o;
        no.flags = H5TILE_NO_OVERWRITE;
        WRITE_CASE(H5TILE_ERR_EXISTS, good, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &no);
        char fresh[4096];
        PATHF(fresh, "%s/fresh.h5", scratch);
        EXPECT_OK(h5tile_write(MPI_COMM_WORLD, fresh, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &no));
        MPI_Barrier(MPI_COMM_WORLD);
        dataset_snapshot fs = snapshot(fresh);
        MPI_Barrier(MPI_COMM_WORLD);
        EXPECT_STATUS(h5tile_write(MPI_COMM_WORLD, fresh, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &no),
                      H5TILE_ERR_EXISTS);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_UNTOUCHED(fresh, fs);
        /* Rank 1 alone asks for no-overwrite: the header does not say whether differing
         * options are INVALID_ARGUMENT or the file's existence wins (EXISTS), but every rank
         * must return the same failure and the file must stay as it was. */
        h5tile_write_options mixed = o;
        mixed.flags = rank == 1 ? H5TILE_NO_OVERWRITE : 0;
        int st = (int)h5tile_write(MPI_COMM_WORLD, good, "/data", H5TILE_FLOAT64, 2, G, my_off,
                                   my_shp, my_buf, &mixed);
        CHECK_MSG(st == H5TILE_ERR_EXISTS || st == H5TILE_ERR_INVALID_ARGUMENT,
                  "no-overwrite on rank 1 only returned %s; last error \"%s\"",
                  h5tile_status_name(st), h5tile_last_error());
        CHECK(h5tile_last_error()[0] != '\0');
        int st0 = st;
        MPI_Bcast(&st0, 1, MPI_INT, 0, MPI_COMM_WORLD);
        CHECK_MSG(st == st0, "rank 0 returned %s, this rank %s", h5tile_status_name(st0),
                  h5tile_status_name(st));
        expect_good_untouched(__LINE__);
    }

    /* a parent path component is a regular file */
    {
        char reg[4096], path[4096];
        PATHF(reg, "%s/regular.txt", scratch);
        PATHF(path, "%s/sub/x.h5", reg);
        uint64_t before = hash_file(reg);
        WRITE_CASE(H5TILE_ERR_IO, path, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &o);
        CHECK(hash_file(reg) == before);
        EXPECT_STATUS(h5tile_write(MPI_COMM_WORLD, path, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &o),
                      H5TILE_ERR_IO);
        char want[4200];
        PATHF(want, "'%s' is a file, not a folder", reg);
        CHECK_MSG(strstr(h5tile_last_error(), want) != NULL, "the message \"%s\" lacks \"%s\"",
                  h5tile_last_error(), want);
        PATHF(path, "%s/x.h5", reg);
        WRITE_CASE(H5TILE_ERR_IO, path, "/data", H5TILE_FLOAT64, 2, G, my_off, my_shp, my_buf, &o);
        CHECK(hash_file(reg) == before);
    }
}

static void read_cases(const char *scratch) {
    char missing[4096], grouped[4096], cplx[4096], boolf[4096], text[4096];
    PATHF(missing, "%s/no-such-file.h5", scratch);
    PATHF(grouped, "%s/grouped.h5", scratch);
    PATHF(cplx, "%s/complex.h5", scratch);
    PATHF(boolf, "%s/bool.h5", scratch);
    PATHF(text, "%s/notes.txt", scratch);
    double buf[8 * 6 * 2];
    const uint64_t zero[2] = {0, 0};
    h5tile_read_options ro = h5tile_read_options_default();

    /* NOT_FOUND: file, dataset, intermediate group; on all ranks and on rank 1 only */
    READ_CASE(H5TILE_ERR_NOT_FOUND, missing, "/data", H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_NOT_FOUND, good, "/nope", H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_NOT_FOUND, grouped, "/nogroup/data", H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_NOT_FOUND, grouped, "/grp/nope", H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_NOT_FOUND, grouped, "/grp/data/deeper", H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_NOT_FOUND, rank == 1 ? missing : good, "/data", H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_NOT_FOUND, good, rank == 1 ? "/nope" : "/data", H5TILE_FLOAT64, 2, zero, G, buf, &ro);

    /* NOT_A_DATASET */
    READ_CASE(H5TILE_ERR_NOT_A_DATASET, grouped, "/grp", H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_NOT_A_DATASET, grouped, rank == 1 ? "/grp" : "/grp/data", H5TILE_FLOAT64, 2, zero, G, buf, &ro);

    /* SHAPE: wrong ndim, tile outside the dataset (all ranks, rank 1 only) */
    {
        const uint64_t z3[3] = {0, 0, 0}, g3[3] = {8, 6, 1}, z1[1] = {0}, g1[1] = {48};
        READ_CASE(H5TILE_ERR_SHAPE, good, "/data", H5TILE_FLOAT64, 3, z3, g3, buf, &ro);
        READ_CASE(H5TILE_ERR_SHAPE, good, "/data", H5TILE_FLOAT64, 1, z1, g1, buf, &ro);
        const uint64_t o_out[2] = {7, 0}, s_out[2] = {2, 6}, o_far[2] = {0, 100}, s_one[2] = {1, 1};
        READ_CASE(H5TILE_ERR_SHAPE, good, "/data", H5TILE_FLOAT64, 2, o_out, s_out, buf, &ro);
        READ_CASE(H5TILE_ERR_SHAPE, good, "/data", H5TILE_FLOAT64, 2, rank == 1 ? o_far : zero, rank == 1 ? s_one : G, buf, &ro);
        READ_CASE(H5TILE_ERR_SHAPE, good, "/data", H5TILE_FLOAT64, rank == 1 ? 3 : 2, rank == 1 ? z3 : zero, rank == 1 ? g3 : G, buf, &ro);
    }

    /* DTYPE: not convertible, or a bad code */
    READ_CASE(H5TILE_ERR_DTYPE, cplx, "/z", H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_DTYPE, good, "/data", H5TILE_BOOL, 2, zero, G, buf, &ro); /* float -> bool enum */
    READ_CASE(H5TILE_ERR_DTYPE, good, "/data", 99, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_DTYPE, rank == 1 ? cplx : good, rank == 1 ? "/z" : "/data", H5TILE_FLOAT64, 2, zero, G, buf, &ro);

    /* HDF5: not an HDF5 file */
    READ_CASE(H5TILE_ERR_HDF5, text, "/data", H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_HDF5, rank == 1 ? text : good, "/data", H5TILE_FLOAT64, 2, zero, G, buf, &ro);

    /* INVALID_ARGUMENT: NULL pointers, ndim 0 / 33, unknown read flags */
    READ_CASE(H5TILE_ERR_INVALID_ARGUMENT, NULL, "/data", H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, NULL, H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    READ_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, NULL, G, buf, &ro);
    READ_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, zero, NULL, buf, &ro);
    READ_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, zero, G, NULL, &ro);
    READ_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, zero, G, rank == 1 ? NULL : buf, &ro);
    READ_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 0, zero, G, buf, &ro);
    {
        uint64_t z33[33] = {0}, o33[33];
        for (int d = 0; d < 33; d++) o33[d] = 1;
        READ_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 33, z33, o33, buf, &ro);
    }
    h5tile_read_options bad = ro;
    bad.flags = 1u << 5;
    READ_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, zero, G, buf, &bad);
    bad.flags = rank == 1 ? (H5TILE_READ_FILL_MISSING | 8u) : 0;
    READ_CASE(H5TILE_ERR_INVALID_ARGUMENT, good, "/data", H5TILE_FLOAT64, 2, zero, G, buf, &bad);

    /* h5tile_inspect (not collective) */
    {
        h5tile_dtype dt;
        size_t nd;
        uint64_t shape[32];
        EXPECT_STATUS(h5tile_inspect(missing, "/data", &dt, &nd, shape), H5TILE_ERR_NOT_FOUND);
        EXPECT_STATUS(h5tile_inspect(good, "/nope", &dt, &nd, shape), H5TILE_ERR_NOT_FOUND);
        EXPECT_STATUS(h5tile_inspect(grouped, "/nogroup/data", &dt, &nd, shape), H5TILE_ERR_NOT_FOUND);
        EXPECT_STATUS(h5tile_inspect(grouped, "/grp", &dt, &nd, shape), H5TILE_ERR_NOT_A_DATASET);
        EXPECT_STATUS(h5tile_inspect(text, "/data", &dt, &nd, shape), H5TILE_ERR_HDF5);
        EXPECT_STATUS(h5tile_inspect(NULL, "/data", &dt, &nd, shape), H5TILE_ERR_INVALID_ARGUMENT);
        EXPECT_STATUS(h5tile_inspect(good, NULL, &dt, &nd, shape), H5TILE_ERR_INVALID_ARGUMENT);
        EXPECT_STATUS(h5tile_inspect(good, "/data", NULL, &nd, shape), H5TILE_ERR_INVALID_ARGUMENT);
        EXPECT_STATUS(h5tile_inspect(good, "/data", &dt, NULL, shape), H5TILE_ERR_INVALID_ARGUMENT);
        EXPECT_STATUS(h5tile_inspect(good, "/data", &dt, &nd, NULL), H5TILE_ERR_INVALID_ARGUMENT);
        EXPECT_OK(h5tile_inspect(good, "/data", &dt, &nd, shape));
        CHECK(dt == H5TILE_FLOAT64 && nd == 2 && shape[0] == 8 && shape[1] == 6);
        EXPECT_OK(h5tile_inspect(cplx, "/z", &dt, &nd, shape));
        CHECK(dt == H5TILE_COMPLEX128);
        EXPECT_OK(h5tile_inspect(boolf, "/b", &dt, &nd, shape));
        CHECK(dt == H5TILE_BOOL);
    }

    /* HDF5 converts the bool enum to integers (0/1), so h5tile does too */
    {
        int32_t ints[8 * 6];
        EXPECT_OK(h5tile_read(MPI_COMM_WORLD, boolf, "/b", H5TILE_INT32, 2, zero, G, ints, &ro));
        for (uint64_t i = 0; i < 8 * 6; i++)
            CHECK_MSG(ints[i] == (i % 3 == 0), "bool read as int32: [%llu] is %d",
                      (unsigned long long)i, (int)ints[i]);
    }

    /* the error is cleared by the next success */
    READ_CASE(H5TILE_ERR_NOT_FOUND, missing, "/data", H5TILE_FLOAT64, 2, zero, G, buf, &ro);
    CHECK(h5tile_last_error()[0] != '\0');
    EXPECT_OK(h5tile_read(MPI_COMM_WORLD, good, "/data", H5TILE_FLOAT64, 2, zero, G, buf, &ro));
    CHECK(h5tile_last_error()[0] == '\0');
    CHECK_TILE(H5TILE_FLOAT64, 2, G, zero, G, buf);
}

int main(int argc, char **argv) {
    const char *scratch = mpi_test_start(&argc, &argv, MPI_THREAD_SINGLE, &rank, &size);
    CHECK_MSG(size >= 2, "run on 2 or more ranks");
    if (rank == 0) {
        char p[4096];
        PATHF(p, "%s/adir", scratch);
        mkdir_p(p);
        PATHF(p, "%s/regular.txt", scratch);
        write_text_file(p, "a regular file, used as a directory name\n");
        PATHF(p, "%s/notes.txt", scratch);
        write_text_file(p, "this is a text file, not an HDF5 file; it is long enough to hold a "
                           "superblock if it were one, but it is not one at all.\n");
    }
    MPI_Barrier(MPI_COMM_WORLD);

    PATHF(good, "%s/good.h5", scratch);
    write_good(good, "/data", H5TILE_FLOAT64);
    char p[4096];
    PATHF(p, "%s/grouped.h5", scratch);
    write_good(p, "/grp/data", H5TILE_FLOAT64);
    PATHF(p, "%s/complex.h5", scratch);
    write_good(p, "/z", H5TILE_COMPLEX128);
    PATHF(p, "%s/bool.h5", scratch);
    write_good(p, "/b", H5TILE_BOOL);
    MPI_Barrier(MPI_COMM_WORLD);
    good_snap = snapshot(good);
    CHECK(good_snap.ntiles == size);
    check_good_readable();

    EXPECT_OK(h5tile_partition((size_t)size, (size_t)rank, 2, G, my_off, my_shp));
    CHECK(volume(2, my_shp) > 0);
    my_buf = (double *)xmalloc((size_t)volume(2, my_shp) * sizeof(double));
    for (uint64_t i = 0; i < volume(2, my_shp); i++) my_buf[i] = -1.0 - (double)i;

    write_cases(scratch);
    read_cases(scratch);

    expect_good_untouched(__LINE__);
    check_good_readable();
    free(my_buf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_errors on %d ranks: OK\n", size);
    MPI_Finalize();
    return 0;
}
