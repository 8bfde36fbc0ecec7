/* docs/api.md's write in the background: the solver's state it assumes (this rank's block of
 * a 256x256 array, another buffer to advance), set up where the example elides it. */
#include <h5tile.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 256 };
static uint64_t global[2] = {N, N}, off[2], shape[2];
static double *my_block, *other_buffer;

static void setup(void) {
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  h5tile_partition(nranks, rank, 2, global, off, shape);
  my_block = calloc(shape[0] * shape[1] + 1, sizeof *my_block);
  other_buffer = calloc(shape[0] * shape[1] + 1, sizeof *other_buffer);
}

static void advance(double *b) {
  for (uint64_t i = 0; i < shape[0] * shape[1]; i++) b[i] += 1;
}

int main(int argc, char **argv) {
  /* EXAMPLE */
  if (s != H5TILE_OK) fprintf(stderr, "%s: %s\n", h5tile_status_name(s), h5tile_last_error());
  free(my_block);
  free(other_buffer);
  MPI_Finalize();
  return s != H5TILE_OK;
}
