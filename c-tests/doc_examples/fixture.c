/* The files a doc example is "given": fixture PATH DATASET writes a 64x48 float64 DATASET
 * (value = row * 1000 + column) into PATH with h5tile's defaults, one block per rank. */
#include <h5tile.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc != 3) {
    fprintf(stderr, "usage: fixture PATH DATASET\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  uint64_t global[2] = {64, 48}, off[2], shape[2];
  h5tile_partition(nranks, rank, 2, global, off, shape);
  double *block = malloc((shape[0] * shape[1] + 1) * sizeof *block);
  for (uint64_t i = 0; i < shape[0]; i++)
    for (uint64_t j = 0; j < shape[1]; j++)
      block[i * shape[1] + j] = (double)((off[0] + i) * 1000 + off[1] + j);
  h5tile_status s = h5tile_write(MPI_COMM_WORLD, argv[1], argv[2], H5TILE_FLOAT64, 2, global,
                                 off, shape, block, NULL);
  if (s != H5TILE_OK) fprintf(stderr, "%s: %s\n", h5tile_status_name(s), h5tile_last_error());
  free(block);
  MPI_Finalize();
  return s != H5TILE_OK;
}
