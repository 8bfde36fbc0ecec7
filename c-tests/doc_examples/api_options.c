/* docs/api.md's options: the struct it fills, used by a write that must take it (a second
 * write to the same path is refused by H5TILE_NO_OVERWRITE). */
#include <h5tile.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  /* EXAMPLE */
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double x[4] = {1, 2, 3, 4};
  uint64_t global[1] = {4}, off[1] = {0}, shape[1] = {rank == 0 ? 4 : 0}; /* rank 0's data */
  h5tile_status first = h5tile_write(MPI_COMM_WORLD, "options.h5", "/x", H5TILE_FLOAT64, 1,
                                     global, off, shape, x, &o);
  h5tile_status second = h5tile_write(MPI_COMM_WORLD, "options.h5", "/x", H5TILE_FLOAT64, 1,
                                      global, off, shape, x, &o);
  if (first != H5TILE_OK || second != H5TILE_ERR_EXISTS)
    fprintf(stderr, "options: %s then %s: %s\n", h5tile_status_name(first),
            h5tile_status_name(second), h5tile_last_error());
  MPI_Finalize();
  return first != H5TILE_OK || second != H5TILE_ERR_EXISTS;
}
