/* A 2-D heat-equation solver that checkpoints and restarts with h5tile.
 *
 * The field lives on a 2-D Cartesian grid of MPI ranks, each holding a block plus one layer of
 * halo cells. Every `steps / 5` Jacobi steps the solver saves a checkpoint in a series (the
 * field, with the step, the time and the field's units as attributes, in one commit; each
 * rank writes its own block, no gathering), keeping the last two and every 20th step. Then it
 * restarts from the latest checkpoint the series holds, on a *different* decomposition (1-D
 * row slabs), and checks that every value came back where it belongs.
 *
 *   mpirun -n 4 ./heat2d [series folder] [N] [steps]      or simply   ./heat2d
 */
#include <h5tile.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CHECK_H5TILE(call)                                                              \
  do {                                                                                  \
    h5tile_status s_ = (call);                                                          \
    if (s_ != H5TILE_OK) {                                                              \
      fprintf(stderr, "%s failed: %s: %s\n", #call, h5tile_status_name(s_),             \
              h5tile_last_error());                                                     \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                     \
    }                                                                                   \
  } while (0)

/* Start and length of block `i` of `n` when splitting `extent` cells. */
static void split(uint64_t extent, int n, int i, uint64_t *start, uint64_t *len) {
  uint64_t base = extent / n, rem = extent % n;
  *start = i * base + ((uint64_t)i < rem ? (uint64_t)i : rem);
  *len = base + ((uint64_t)i < rem ? 1 : 0);
}

/* Order-independent fingerprint of values *and* their global positions, so a value read back
 * into the wrong place is caught; exact, unlike a floating-point sum. */
static uint64_t fingerprint(const double *v, uint64_t rows, uint64_t cols, uint64_t row0,
                            uint64_t col0, uint64_t ncols_global) {
  uint64_t h = 0;
  for (uint64_t i = 0; i < rows; i++)
    for (uint64_t j = 0; j < cols; j++) {
      uint64_t bits;
      memcpy(&bits, &v[i * cols + j], sizeof bits);
      uint64_t x = bits ^ ((row0 + i) * ncols_global + col0 + j) * 0x9E3779B97F4A7C15ull;
      x ^= x >> 31;
      h += x * 0xBF58476D1CE4E5B9ull;
    }
  return h;
}

/* Bytes of the files in `dir` (a checkpoint's tile folder), the space they take on disk, and their
   count. The two differ: a tile file's data starts on a 2 MiB boundary after a hole (its
   apparent size counts the hole, the disk holds none of it), and a file system may hold a
   file in fewer or more blocks than its length. */
static long long folder_bytes(const char *dir, long long *on_disk, int *files) {
  long long total = 0;
  *on_disk = 0;
  *files = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char file[8192];
    struct stat st;
    snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
    if (e->d_name[0] != '.' && stat(file, &st) == 0) {
      total += st.st_size;
      *on_disk += (long long)st.st_blocks * 512;
      ++*files;
    }
  }
  closedir(d);
  return total;
}

/* Lists the series folder `dir`: each entry with its size and the space it takes on disk, a
   tile folder as its count of files. */
static void show_series(const char *dir) {
  struct dirent **entries;
  int n = scandir(dir, &entries, NULL, alphasort);
  for (int i = 0; i < n; i++) {
    const char *name = entries[i]->d_name;
    char file[8192];
    struct stat st;
    snprintf(file, sizeof file, "%s/%s", dir, name);
    if (name[0] == '.' || stat(file, &st) != 0) {
      /* not listed */
    } else if (S_ISDIR(st.st_mode)) {
      int files;
      long long on_disk, bytes = folder_bytes(file, &on_disk, &files);
      printf("  %-36s %10lld bytes (%lld on disk) in %d tile file%s\n", name, bytes, on_disk, files,
             files == 1 ? "" : "s");
    } else {
      printf("  %-36s %10lld bytes (%lld on disk)\n", name, (long long)st.st_size,
             (long long)st.st_blocks * 512);
    }
    free(entries[i]);
  }
  if (n >= 0) free(entries);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const char *series = argc > 1 ? argv[1] : "heat-series";
  const uint64_t N = argc > 2 ? strtoull(argv[2], NULL, 10) : 2048;
  const int steps = argc > 3 ? atoi(argv[3]) : 50;
  int size, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* --- the solver: a 2-D Cartesian grid of ranks, one block each, one halo layer ---------- */
  int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
  MPI_Dims_create(size, 2, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &cart);
  MPI_Comm_rank(cart, &rank);
  MPI_Cart_coords(cart, rank, 2, coords);
  uint64_t r0, nr, c0, nc;
  split(N, dims[0], coords[0], &r0, &nr);
  split(N, dims[1], coords[1], &c0, &nc);
  const uint64_t W = nc + 2; /* row length with halos */
  double *u = calloc((nr + 2) * W, sizeof *u), *next = calloc((nr + 2) * W, sizeof *u);
  for (uint64_t i = 0; i < nr; i++) /* a hot square in the middle of a cold plate */
    for (uint64_t j = 0; j < nc; j++) {
      uint64_t gi = r0 + i, gj = c0 + j;
      u[(i + 1) * W + j + 1] = (gi > N / 3 && gi < 2 * N / 3 && gj > N / 3 && gj < 2 * N / 3) ? 100.0 : 0.0;
    }
  int up, down, left, right;
  MPI_Cart_shift(cart, 0, 1, &up, &down);
  MPI_Cart_shift(cart, 1, 1, &left, &right);
  MPI_Datatype column;
  MPI_Type_vector((int)nr, 1, (int)W, MPI_DOUBLE, &column);
  MPI_Type_commit(&column);
  /* The checkpoint: the block without its halos, copied out so the solver may go on. */
  double *block = malloc(nr * nc * sizeof *block);
  const uint64_t global[2] = {N, N}, offset[2] = {r0, c0}, shape[2] = {nr, nc};
  h5tile_series_options keep = h5tile_series_options_default();
  keep.keep_last = 2;
  keep.keep_every = 20;
  const int every = steps >= 5 ? steps / 5 : 1;
  const double dt = 0.2; /* in units of dx^2 / alpha */
  double t_write = 0.0;
  uint64_t before = 0;
  for (int s = 1; s <= steps; s++) {
    MPI_Sendrecv(&u[1 * W + 1], (int)nc, MPI_DOUBLE, up, 0, &u[(nr + 1) * W + 1], (int)nc, MPI_DOUBLE, down, 0, cart, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[nr * W + 1], (int)nc, MPI_DOUBLE, down, 1, &u[0 * W + 1], (int)nc, MPI_DOUBLE, up, 1, cart, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[1 * W + 1], 1, column, left, 2, &u[1 * W + nc + 1], 1, column, right, 2, cart, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[1 * W + nc], 1, column, right, 3, &u[1 * W + 0], 1, column, left, 3, cart, MPI_STATUS_IGNORE);
    for (uint64_t i = 1; i <= nr; i++)
      for (uint64_t j = 1; j <= nc; j++)
        next[i * W + j] = u[i * W + j] + dt * (u[(i - 1) * W + j] + u[(i + 1) * W + j] + u[i * W + j - 1] + u[i * W + j + 1] - 4 * u[i * W + j]);
    double *t = u; u = next; next = t;
    if (s % every != 0 && s != steps) continue;

    /* --- checkpoint: every rank writes its own block; one logical dataset results -------- */
    for (uint64_t i = 0; i < nr; i++) memcpy(&block[i * nc], &u[(i + 1) * W + 1], nc * sizeof *block);
    MPI_Barrier(cart);
    double t0 = MPI_Wtime();
    h5tile_checkpoint *ck;
    CHECK_H5TILE(h5tile_series_begin(cart, series, (uint64_t)s, &keep, NULL, &ck));
    CHECK_H5TILE(h5tile_checkpoint_add(ck, "/temperature", H5TILE_FLOAT64, 2, global, offset, shape, block));
    const int64_t step = s;
    const double time = s * dt;
    CHECK_H5TILE(h5tile_checkpoint_attr(ck, "/", "step", H5TILE_INT64, 1, &step));
    CHECK_H5TILE(h5tile_checkpoint_attr(ck, "/", "time", H5TILE_FLOAT64, 1, &time));
    CHECK_H5TILE(h5tile_checkpoint_attr_string(ck, "/temperature", "units", "K"));
    CHECK_H5TILE(h5tile_checkpoint_commit(ck)); /* one collective commit; frees ck */
    t_write = MPI_Wtime() - t0;
    uint64_t mine = fingerprint(block, nr, nc, r0, c0, N);
    MPI_Reduce(&mine, &before, 1, MPI_UINT64_T, MPI_SUM, 0, cart);
  }

  /* --- restart from the latest checkpoint, on another decomposition: 1-D row slabs ------- */
  uint64_t latest_step = 0;
  int64_t recorded_step = -1;
  char path[4096];
  CHECK_H5TILE(h5tile_series_latest(cart, series, 0, &latest_step, path, sizeof path));
  CHECK_H5TILE(h5tile_attr_read(cart, path, "/", "step", H5TILE_INT64, 1, &recorded_step));
  uint64_t s0, ns;
  split(N, size, rank, &s0, &ns);
  double *slab = malloc((ns ? ns : 1) * N * sizeof *slab);
  const uint64_t slab_off[2] = {s0, 0}, slab_shape[2] = {ns, N};
  MPI_Barrier(cart);
  double t0 = MPI_Wtime();
  CHECK_H5TILE(h5tile_read(cart, path, "/temperature", H5TILE_FLOAT64, 2, slab_off, slab_shape, slab, NULL));
  double t_read = MPI_Wtime() - t0;
  uint64_t got = fingerprint(slab, ns, N, s0, 0, N), after = 0;
  MPI_Reduce(&got, &after, 1, MPI_UINT64_T, MPI_SUM, 0, cart);
  /* Spot check: the centre of the plate, read back by whoever holds it, must be warm. */
  double centre = (N / 2 >= s0 && N / 2 < s0 + ns) ? slab[(N / 2 - s0) * N + N / 2] : -1.0, centre_max;
  MPI_Reduce(&centre, &centre_max, 1, MPI_DOUBLE, MPI_MAX, 0, cart);

  if (rank == 0) {
    double mib = (double)(N * N * sizeof(double)) / (1024.0 * 1024.0);
    printf("h5tile %s demo: 2-D heat equation, %" PRIu64 "x%" PRIu64 " float64 field, %d steps\n", h5tile_version(), N, N, steps);
    printf("  solver decomposition : %dx%d process grid (one block per rank)\n", dims[0], dims[1]);
    printf("  checkpoints          : every %d steps into the series %s (keeping the last 2 and every 20th)\n", every, series);
    printf("  last checkpoint      : h5tile_checkpoint_commit -> %.1f MiB in %.3f s (%.0f MiB/s)\n", mib, t_write, mib / t_write);
    printf("  restart              : h5tile_series_latest -> step %" PRIu64 " (attribute step = %" PRId64 "), %s\n", latest_step, recorded_step, path);
    printf("  restart decomposition: %d row slabs\n", size);
    printf("  restart              : h5tile_read   <- %.1f MiB in %.3f s (%.0f MiB/s)\n", mib, t_read, mib / t_read);
    printf("  check                : %s (fingerprint %016" PRIx64 " before, %016" PRIx64 " after; centre %.3f)\n",
           before == after ? "every value back in its place" : "MISMATCH", before, after, centre_max);
    printf("files in the series %s:\n", series);
    show_series(series);
    printf("open it in Python:\n  python3 -c \"import h5py; f = h5py.File('%s'); d = f['/temperature']; print(f.attrs['step'], d.shape, d.attrs['units'], d[%" PRIu64 ", %" PRIu64 "])\"\n", path, N / 2, N / 2);
    printf("list the series:\n  h5tile ls %s\n", series);
  }
  int ok = before == after && centre_max > 0.0 && latest_step == (uint64_t)steps && recorded_step == steps;
  MPI_Bcast(&ok, 1, MPI_INT, 0, cart);
  free(u); free(next); free(block); free(slab);
  MPI_Type_free(&column);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return ok ? 0 : 1;
}
