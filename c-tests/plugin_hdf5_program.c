/* An ordinary HDF5 program (no h5tile call) using the h5tile_gds driver plugin:
 *
 *   plugin_hdf5_program env DIR            driver from HDF5_DRIVER (+ HDF5_DRIVER_CONFIG)
 *   plugin_hdf5_program by-name DIR CONFIG H5Pset_driver_by_name(fapl, "h5tile_gds", CONFIG)
 *   plugin_hdf5_program bad-config DIR CONFIG TEXT   the create fails, TEXT on the error stack
 *
 * The workload: groups, attributes, a contiguous dataset, a chunked dataset extended after a
 * first write, writes and reads of unaligned hyperslabs; then the file is reopened (through
 * the plugin, and through HDF5's default driver) and every value compared. It checks that
 * the files really went through h5tile_gds, and prints how many files it opened, so the
 * log test can count H5TILE_LOG=info lines. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NR 100
#define NC 37
#define ER 25
#define EC 7

static int opens;

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
            H5Eprint2(H5E_DEFAULT, stderr);                                 \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

/* The driver id h5tile_gds gets in this process (registered on first use). */
static hid_t gds_driver(void) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_driver_by_name(fapl, "h5tile_gds", NULL) >= 0);
    hid_t id = H5Pget_driver(fapl);
    H5Pclose(fapl);
    return id;
}

static void check_driver(hid_t file) {
    hid_t fapl = H5Fget_access_plist(file);
    CHECK(H5Pget_driver(fapl) == gds_driver());
    H5Pclose(fapl);
}

static double contig_value(int r, int c) {
    /* after the hyperslab overwrite of rows 3..19, columns 5..15 */
    if (r >= 3 && r < 20 && c >= 5 && c < 16) return -(double)(r * 1000 + c);
    return r * 0.5 + c * 1e-3;
}

static int ext_value(int r, int c) { return r * 100 + c; }

static void write_file(const char *path, hid_t fapl) {
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(f >= 0);
    opens++;
    check_driver(f);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t g = H5Gcreate2(f, "/g1/g2", lcpl, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(g >= 0);
    /* attributes: an int array on the root, a string on the group */
    int ivals[3] = {1, 2, 3};
    hsize_t three = 3;
    hid_t as = H5Screate_simple(1, &three, NULL);
    hid_t a = H5Acreate2(f, "ints", H5T_NATIVE_INT, as, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(H5Awrite(a, H5T_NATIVE_INT, ivals) >= 0);
    H5Aclose(a), H5Sclose(as);
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, 6);
    hid_t ss = H5Screate(H5S_SCALAR);
    a = H5Acreate2(g, "note", st, ss, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(H5Awrite(a, st, "hello") >= 0);
    H5Aclose(a), H5Sclose(ss), H5Tclose(st);

    /* contiguous dataset, then an unaligned block overwritten */
    hsize_t dims[2] = {NR, NC};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(f, "/g1/contig", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    static double all[NR][NC];
    for (int r = 0; r < NR; r++)
        for (int c = 0; c < NC; c++) all[r][c] = r * 0.5 + c * 1e-3;
    CHECK(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, all) >= 0);
    hsize_t off[2] = {3, 5}, cnt[2] = {17, 11};
    double blk[17][11];
    for (int r = 0; r < 17; r++)
        for (int c = 0; c < 11; c++) blk[r][c] = -(double)((r + 3) * 1000 + c + 5);
    hid_t ms = H5Screate_simple(2, cnt, NULL);
    H5Sselect_hyperslab(sp, H5S_SELECT_SET, off, NULL, cnt, NULL);
    CHECK(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, sp, H5P_DEFAULT, blk) >= 0);
    H5Sclose(ms), H5Sclose(sp), H5Dclose(d);

    /* chunked dataset, written, then extended and the new rows written */
    hsize_t edims[2] = {10, EC}, emax[2] = {H5S_UNLIMITED, EC}, chunk[2] = {4, EC};
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    sp = H5Screate_simple(2, edims, emax);
    d = H5Dcreate2(f, "/g1/g2/ext", H5T_NATIVE_INT, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int ev[ER][EC];
    for (int r = 0; r < ER; r++)
        for (int c = 0; c < EC; c++) ev[r][c] = ext_value(r, c);
    CHECK(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, ev) >= 0);
    hsize_t grown[2] = {ER, EC}, eoff[2] = {10, 0}, ecnt[2] = {ER - 10, EC};
    CHECK(H5Dset_extent(d, grown) >= 0);
    H5Sclose(sp);
    sp = H5Dget_space(d);
    H5Sselect_hyperslab(sp, H5S_SELECT_SET, eoff, NULL, ecnt, NULL);
    ms = H5Screate_simple(2, ecnt, NULL);
    CHECK(H5Dwrite(d, H5T_NATIVE_INT, ms, sp, H5P_DEFAULT, &ev[10][0]) >= 0);
    H5Sclose(ms), H5Sclose(sp), H5Pclose(dcpl), H5Dclose(d);
    H5Gclose(g), H5Pclose(lcpl);
    CHECK(H5Fclose(f) >= 0);
}

static void check_file(const char *path, hid_t fapl, int through_gds) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    CHECK(f >= 0);
    opens += through_gds;
    if (through_gds) check_driver(f);
    /* the size HDF5 believes in is the size on disk (EOA/EOF and truncate handled) */
    hsize_t size;
    struct stat stbuf;
    CHECK(H5Fget_filesize(f, &size) >= 0 && stat(path, &stbuf) == 0 && size == (hsize_t)stbuf.st_size);
    int ivals[3] = {0};
    hid_t a = H5Aopen(f, "ints", H5P_DEFAULT);
    CHECK(H5Aread(a, H5T_NATIVE_INT, ivals) >= 0 && ivals[0] == 1 && ivals[2] == 3);
    H5Aclose(a);
    char note[6] = "";
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, 6);
    a = H5Aopen_by_name(f, "/g1/g2", "note", H5P_DEFAULT, H5P_DEFAULT);
    CHECK(H5Aread(a, st, note) >= 0 && strcmp(note, "hello") == 0);
    H5Aclose(a), H5Tclose(st);

    static double all[NR][NC];
    hid_t d = H5Dopen2(f, "/g1/contig", H5P_DEFAULT);
    CHECK(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, all) >= 0);
    for (int r = 0; r < NR; r++)
        for (int c = 0; c < NC; c++) CHECK(all[r][c] == contig_value(r, c));
    /* an unaligned block read on its own */
    hsize_t off[2] = {51, 3}, cnt[2] = {9, 31};
    double blk[9][31];
    hid_t sp = H5Dget_space(d), ms = H5Screate_simple(2, cnt, NULL);
    H5Sselect_hyperslab(sp, H5S_SELECT_SET, off, NULL, cnt, NULL);
    CHECK(H5Dread(d, H5T_NATIVE_DOUBLE, ms, sp, H5P_DEFAULT, blk) >= 0);
    for (int r = 0; r < 9; r++)
        for (int c = 0; c < 31; c++) CHECK(blk[r][c] == contig_value(r + 51, c + 3));
    H5Sclose(ms), H5Sclose(sp), H5Dclose(d);

    int ev[ER][EC];
    d = H5Dopen2(f, "/g1/g2/ext", H5P_DEFAULT);
    sp = H5Dget_space(d);
    hsize_t dims[2];
    H5Sget_simple_extent_dims(sp, dims, NULL);
    CHECK(dims[0] == ER && dims[1] == EC);
    CHECK(H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, ev) >= 0);
    for (int r = 0; r < ER; r++)
        for (int c = 0; c < EC; c++) CHECK(ev[r][c] == ext_value(r, c));
    H5Sclose(sp), H5Dclose(d);
    CHECK(H5Fclose(f) >= 0);
}

/* True if some message on the current error stack contains `text`. */
static const char *wanted;
static int found;
static herr_t look(unsigned n, const H5E_error2_t *e, void *data) {
    (void)n, (void)data;
    if (e->desc && strstr(e->desc, wanted)) found = 1;
    return 0;
}
static int stack_says(const char *text) {
    wanted = text, found = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, look, NULL);
    return found;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s env|by-name|bad-config DIR [CONFIG [TEXT]]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    char path[4096];
    mkdir(argv[2], 0755);
    snprintf(path, sizeof path, "%s/plugin_%s_%d.h5", argv[2], mode, argc > 3 ? (int)strlen(argv[3]) : 0);
    if (strcmp(mode, "env") == 0) {
        CHECK(getenv("HDF5_DRIVER") && strcmp(getenv("HDF5_DRIVER"), "h5tile_gds") == 0);
        write_file(path, H5P_DEFAULT);
        check_file(path, H5P_DEFAULT, 1);
    } else if (strcmp(mode, "by-name") == 0) {
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        CHECK(H5Pset_driver_by_name(fapl, "h5tile_gds", argc > 3 ? argv[3] : NULL) >= 0);
        write_file(path, fapl);
        check_file(path, fapl, 1);
        /* the file is a plain HDF5 file: the default driver reads it too */
        hid_t sec2 = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_sec2(sec2);
        check_file(path, sec2, 0);
        H5Pclose(sec2), H5Pclose(fapl);
    } else if (strcmp(mode, "bad-config") == 0) {
        unlink(path); /* whatever an earlier run left */
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        CHECK(argc > 4);
        CHECK(H5Pset_driver_by_name(fapl, "h5tile_gds", argv[3]) >= 0);
        hid_t f;
        H5E_BEGIN_TRY {
            f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        } H5E_END_TRY
        CHECK(f < 0);
        CHECK(stack_says(argv[4]));
        struct stat st;
        CHECK(stat(path, &st) != 0); /* nothing was created */
        H5Pclose(fapl);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    printf("file opens through h5tile_gds: %d\n", opens);
    printf("plugin_hdf5_program %s: OK\n", mode);
    return 0;
}
