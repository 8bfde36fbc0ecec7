/* docs/api.md's batched read of big.h5 (given: 64x48), its process() counting what it is
 * handed: every element once over all ranks. */
#include <stdbool.h>
#include <h5tile.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long long seen;

static void process(const double *buf, const uint64_t *off, const uint64_t *shp) {
  (void)buf;
  (void)off;
  seen += shp[0] * shp[1];
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  /* EXAMPLE */
  free(buf);
  unsigned long long total = 0;
  MPI_Allreduce(&seen, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (total != 64 * 48) fprintf(stderr, "batches: %llu elements, not 64 x 48\n", total);
  MPI_Finalize();
  return total != 64 * 48;
}
