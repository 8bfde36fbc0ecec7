/* The option structs can grow without breaking programs compiled against an older header.
 * Each starts with `size`, filled by the header's inline h5tile_*_options_default() with the
 * sizeof the program was compiled with; the library reads that many bytes and takes its own
 * defaults for fields the program's version did not have.
 *
 * Programs of three generations call this library:
 *  - one compiled against the first extensible header (0.2: size, layout, flags, gds): its
 *    struct is declared here as it was, and must keep working whatever the library adds;
 *  - one compiled against a newer header with a field this library does not know: accepted
 *    while that field is zero (its default), refused with H5TILE_ERR_INVALID_ARGUMENT, naming
 *    the byte, when it is set;
 *  - one that did not start from the defaults (size 0): refused, saying what to do.
 * A refused call writes nothing. */
#include "check.h"

#include <stddef.h>

/* h5tile_write_options and h5tile_read_options as the 0.2 header declared them. */
typedef struct {
    size_t size;
    int layout;
    uint32_t flags;
    uint32_t gds;
} write_options_v02;
typedef struct {
    size_t size;
    uint32_t flags;
    int dtype;
    uint32_t gds;
} read_options_v02;

/* A newer program's struct: this version's fields and one more. */
typedef struct {
    h5tile_write_options known;
    uint64_t future;
} write_options_newer;

static const uint64_t G[2] = {8, 6}, ZERO[2] = {0, 0};

static h5tile_status write_with(const char *path, const void *opts) {
    double buf[48];
    fill_tile(H5TILE_FLOAT64, 2, G, ZERO, G, buf);
    return h5tile_write(MPI_COMM_NULL, path, "/x", H5TILE_FLOAT64, 2, G, ZERO, G, buf,
                        (const h5tile_write_options *)opts);
}

int main(int argc, char **argv) {
    const char *scratch = scratch_arg(argc, argv);
    fresh_dir(scratch);
    char path[4096];
    PATHF(path, "%s/data.h5", scratch);

    /* The defaults fill in this program's size. */
    h5tile_write_options now = h5tile_write_options_default();
    CHECK(now.size == sizeof(h5tile_write_options));
    CHECK(now.layout == H5TILE_LAYOUT_AUTO && now.flags == 0);
    h5tile_read_options rnow = h5tile_read_options_default();
    CHECK(rnow.size == sizeof(h5tile_read_options) && rnow.dtype == H5TILE_AS_STORED);

    /* A 0.2 program: its own struct, filled by init at its own size, then set by hand. */
    write_options_v02 old;
    EXPECT_OK(h5tile_write_options_init((h5tile_write_options *)&old, sizeof old));
    CHECK(old.size == sizeof old && old.layout == H5TILE_LAYOUT_AUTO);
    old.layout = H5TILE_LAYOUT_SINGLE;
    EXPECT_OK(write_with(path, &old));
    CHECK(is_regular_file(path));
    {
        char dir[4096];
        TILE_DIR(dir, path);
        CHECK_MSG(!path_exists(dir), "the single-file layout asked for was not used");
    }
    old.flags = H5TILE_NO_OVERWRITE;
    EXPECT_STATUS(write_with(path, &old), H5TILE_ERR_EXISTS);
    read_options_v02 rold;
    EXPECT_OK(h5tile_read_options_init((h5tile_read_options *)&rold, sizeof rold));
    CHECK(rold.size == sizeof rold && rold.dtype == H5TILE_AS_STORED);
    double back[48];
    EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/x", H5TILE_FLOAT64, 2, ZERO, G, back,
                          (const h5tile_read_options *)&rold));
    CHECK_TILE(H5TILE_FLOAT64, 2, G, ZERO, G, back);

    /* A newer program: init zeroes what this library does not know; zero is accepted. */
    write_options_newer newer;
    memset(&newer, 0xAB, sizeof newer);
    EXPECT_OK(h5tile_write_options_init((h5tile_write_options *)&newer, sizeof newer));
    CHECK(newer.known.size == sizeof newer && newer.future == 0);
    EXPECT_OK(write_with(path, &newer));
    uint64_t before = hash_file(path);
    /* ... and a set unknown field is refused, naming its byte, with nothing written. */
    newer.future = 1;
    newer.known.layout = H5TILE_LAYOUT_VDS;
    EXPECT_STATUS(write_with(path, &newer), H5TILE_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(h5tile_last_error(), "does not know") != NULL, "%s", h5tile_last_error());
    CHECK(hash_file(path) == before);

    /* Not started from the defaults: refused, saying what to do. */
    h5tile_write_options zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    zeroed.layout = H5TILE_LAYOUT_VDS;
    EXPECT_STATUS(write_with(path, &zeroed), H5TILE_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(h5tile_last_error(), "h5tile_write_options_default()") != NULL, "%s",
              h5tile_last_error());
    CHECK(hash_file(path) == before);
    h5tile_read_options rzero;
    memset(&rzero, 0, sizeof rzero);
    EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/x", H5TILE_FLOAT64, 2, ZERO, G, back, &rzero),
                  H5TILE_ERR_INVALID_ARGUMENT);
    /* Garbage in size (an uninitialised struct) is refused as such, its bytes never read. */
    h5tile_write_options garbage = h5tile_write_options_default();
    garbage.size = (size_t)0xdeadbeefcafe;
    EXPECT_STATUS(write_with(path, &garbage), H5TILE_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(h5tile_last_error(), "larger than any version of the struct") != NULL &&
                  strstr(h5tile_last_error(), "not started from h5tile_write_options_default()") != NULL,
              "%s", h5tile_last_error());
    CHECK(hash_file(path) == before);
    EXPECT_STATUS(h5tile_write_options_init(&now, (size_t)0xdeadbeefcafe), H5TILE_ERR_INVALID_ARGUMENT);
    /* init refuses NULL and a size below the first version. */
    EXPECT_STATUS(h5tile_write_options_init(NULL, sizeof now), H5TILE_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(h5tile_write_options_init(&now, sizeof(size_t)), H5TILE_ERR_INVALID_ARGUMENT);
    printf("api_options_abi: OK\n");
    return 0;
}
