// A C++ program using h5tile with no MPI setup of its own: writes and reads back a small
// array as this process alone (MPI_COMM_NULL) and prints OK.
#include <h5tile.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const std::string path = std::string(argv[1]) + "/consumer.h5";
    const uint64_t shape[1] = {10}, zero[1] = {0};
    std::vector<int32_t> out(10), in(10, -1);
    for (int i = 0; i < 10; i++) out[i] = i * i - 7;
    h5tile_status s = h5tile_write(MPI_COMM_NULL, path.c_str(), "/v", H5TILE_INT32, 1, shape,
                                   zero, shape, out.data(), nullptr);
    if (s == H5TILE_OK)
        s = h5tile_read(MPI_COMM_NULL, path.c_str(), "/v", H5TILE_INT32, 1, zero, shape,
                        in.data(), nullptr);
    if (s != H5TILE_OK) {
        std::printf("%s: %s\n", h5tile_status_name(s), h5tile_last_error());
        return 1;
    }
    if (in != out) {
        std::printf("values differ\n");
        return 1;
    }
    std::printf("OK\n");
    return 0;
}
