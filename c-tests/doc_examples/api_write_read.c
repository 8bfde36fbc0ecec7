/* docs/api.md's first example: what it assumes (N, rank, nranks, my_block, the second
 * decomposition off2/shape2 and its buffer), then its lines, then its status. */
#include <h5tile.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  enum { N = 256 };
  double *my_block = calloc(N * N, sizeof(double)), *buf = calloc(N * N, sizeof(double));
  uint64_t off2[2] = {0, 0}, shape2[2] = {N, N}; /* read back whole, on every rank */
  /* EXAMPLE */
  free(my_block);
  free(buf);
  MPI_Finalize();
  return s != H5TILE_OK;
}
