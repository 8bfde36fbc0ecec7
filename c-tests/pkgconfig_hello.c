/* The program a user builds without CMake (pkgconfig_build.sh, install_standalone.sh): writes
 * and reads back a small array as /hello in DIR/hello.h5 on this process alone
 * (MPI_COMM_NULL, no launcher) and prints "OK <version>".
 * usage: pkgconfig_hello DIR */
#include <h5tile.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    char path[4096];
    if (argc < 2 || snprintf(path, sizeof path, "%s/hello.h5", argv[1]) >= (int)sizeof path)
        return 2;
    const uint64_t shape[2] = {3, 4}, zero[2] = {0, 0};
    double out[12], in[12];
    for (int i = 0; i < 12; i++) out[i] = i * 0.5 - 1.0;
    h5tile_status s = h5tile_write(MPI_COMM_NULL, path, "/hello", H5TILE_FLOAT64, 2, shape, zero,
                                   shape, out, NULL);
    if (s != H5TILE_OK) {
        printf("write: %s: %s\n", h5tile_status_name(s), h5tile_last_error());
        return 1;
    }
    s = h5tile_read(MPI_COMM_NULL, path, "/hello", H5TILE_FLOAT64, 2, zero, shape, in, NULL);
    if (s != H5TILE_OK) {
        printf("read: %s: %s\n", h5tile_status_name(s), h5tile_last_error());
        return 1;
    }
    if (memcmp(in, out, sizeof in) != 0) {
        printf("values differ\n");
        return 1;
    }
    printf("OK %s\n", h5tile_version());
    return 0;
}
