/* The gds routing controls on a host-only run: the options' gds field defaults to the
 * environment (H5TILE_GDS); a bad field or environment value is H5TILE_ERR_INVALID_ARGUMENT
 * and writes nothing; host buffers take the host path in every mode (H5TILE_GDS_ON included,
 * which needs cuFile only for device memory); and nothing CUDA-related gets loaded. */
#include "check.h"

/* Whether a library whose name contains `name` is mapped into this process. */
static int mapped(const char *name) {
    FILE *maps = fopen("/proc/self/maps", "r");
    CHECK(maps != NULL);
    char line[4096];
    int found = 0;
    while (fgets(line, sizeof line, maps))
        if (strstr(line, name)) found = 1;
    fclose(maps);
    return found;
}

int main(int argc, char **argv) {
    const char *scratch = scratch_arg(argc, argv);
    fresh_dir(scratch);
    char path[4096];
    PATHF(path, "%s/g.h5", scratch);
    const uint64_t g[2] = {6, 5}, zero[2] = {0, 0};
    double v[30], w[30];
    fill_tile(H5TILE_FLOAT64, 2, g, zero, g, v);

    h5tile_write_options wo = h5tile_write_options_default();
    h5tile_read_options ro = h5tile_read_options_default();
    CHECK(wo.gds == H5TILE_GDS_FROM_ENVIRONMENT && ro.gds == H5TILE_GDS_FROM_ENVIRONMENT);

    /* A bad environment value fails every call that defers to it, before any file exists. */
    setenv("H5TILE_GDS", "sometimes", 1);
    EXPECT_STATUS(h5tile_write(MPI_COMM_NULL, path, "/d", H5TILE_FLOAT64, 2, g, zero, g, v, &wo),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(h5tile_last_error(), "H5TILE_GDS=sometimes") != NULL);
    CHECK_MSG(count_files(scratch) == 0, "a refused write created files");
    /* ... and the options win over it. */
    wo.gds = H5TILE_GDS_OFF;
    EXPECT_OK(h5tile_write(MPI_COMM_NULL, path, "/d", H5TILE_FLOAT64, 2, g, zero, g, v, &wo));
    EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/d", H5TILE_FLOAT64, 2, zero, g, w, &ro),
                  H5TILE_ERR_INVALID_ARGUMENT);
    unsetenv("H5TILE_GDS");

    /* A gds field outside the enumeration. */
    dataset_snapshot before = snapshot(path);
    wo.gds = 9;
    EXPECT_STATUS(h5tile_write(MPI_COMM_NULL, path, "/d", H5TILE_FLOAT64, 2, g, zero, g, v, &wo),
                  H5TILE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(h5tile_last_error(), "gds option 9") != NULL);
    CHECK_UNTOUCHED(path, before);
    ro.gds = 9;
    EXPECT_STATUS(h5tile_read(MPI_COMM_NULL, path, "/d", H5TILE_FLOAT64, 2, zero, g, w, &ro),
                  H5TILE_ERR_INVALID_ARGUMENT);

    /* Host memory in every mode, from the options and from the environment. */
    const unsigned modes[] = {H5TILE_GDS_FROM_ENVIRONMENT, H5TILE_GDS_AUTO, H5TILE_GDS_ON,
                              H5TILE_GDS_OFF};
    const char *env[] = {"on", NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) {
        CHECK_CONTEXT("gds mode %u", modes[i]);
        if (env[i]) setenv("H5TILE_GDS", env[i], 1);
        wo.gds = ro.gds = modes[i];
        v[0] = i;
        EXPECT_OK(h5tile_write(MPI_COMM_NULL, path, "/d", H5TILE_FLOAT64, 2, g, zero, g, v, &wo));
        memset(w, 0, sizeof w);
        EXPECT_OK(h5tile_read(MPI_COMM_NULL, path, "/d", H5TILE_FLOAT64, 2, zero, g, w, &ro));
        CHECK(memcmp(v, w, sizeof v) == 0);
        unsetenv("H5TILE_GDS");
    }
    CHECK_MSG(!mapped("libcuda") && !mapped("libcufile"),
              "a host-only run loaded a CUDA library");
    return 0;
}
