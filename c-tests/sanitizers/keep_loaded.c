/* Linked into every test program of the sanitizer build only (-DH5TILE_SANITIZE, make
 * test-asan): dlclose does nothing, so every library loaded at run time stays mapped until the
 * process exits. Open MPI and PMIx load their components (mca_*.so) with dlopen and close them
 * in MPI_Finalize; HDF5 unloads VFD plugins (h5tile_gds) in H5close. LeakSanitizer looks for
 * leaks after both, when an unloaded library's globals are no longer scanned and its frames
 * print as "<unknown module>": memory its globals still held would be reported as leaked, with
 * stacks that no suppression can name. Kept loaded, such memory counts as reachable (as it
 * does for any library never unloaded) and every frame of a real leak is named. */
#include <dlfcn.h>

int dlclose(void *handle) {
    (void)handle;
    return 0;
}
