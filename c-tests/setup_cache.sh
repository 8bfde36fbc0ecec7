#!/bin/bash
# The set-up cache (scripts/cache.sh, what bootstrap.sh and build-hdf5.sh keep the venv and the
# HDF5 builds in), on real folders with a maker that counts its builds:
#   - the first use builds the entry and links the clone's path to it; the next builds nothing;
#   - a damaged entry (a file changed or removed) and a partial one (no manifest: a build that
#     was stopped) are found and built again;
#   - a clone whose link names a whole entry keeps it under another home (a test's own $HOME);
#   - two clones asking for one entry at once build it once;
#   - a maker that fails is reported, and no link is left to its entry;
#   - H5TILE_CACHE=off makes a folder in the clone, and a link left from before is replaced.
# usage: setup_cache.sh CACHE_SH SCRATCH
set -u
[ $# -eq 2 ] || { echo "usage: $0 CACHE_SH SCRATCH" >&2; exit 2; }
# shellcheck source=../scripts/cache.sh
. "$1"
scratch=$2
rm -rf "$scratch" && mkdir -p "$scratch/clone/.deps" && cd "$scratch" || exit 1
export H5TILE_CACHE=$scratch/cache
builds=$scratch/builds
: > "$builds"

failed=0
fail() { echo "setup_cache: FAIL: $*" >&2; failed=$((failed + 1)); }

# The maker: two files, slowly enough that a second maker would overlap it.
make_entry() {
  h5tile_manifest_check "$1" && return 0
  echo "$1" >> "$builds"
  rm -rf "$1" && mkdir -p "$1/lib" && echo library > "$1/lib/libx.so" && echo header > "$1/x.h"
  sleep 0.3
  h5tile_manifest_write "$1"
}
use() { h5tile_cached clone/.deps/x "x-$(h5tile_cache_key 1.0 -O2)" h5tile_manifest_check make_entry; }
entry=$scratch/cache/x-$(h5tile_cache_key 1.0 -O2)
count() { wc -l < "$builds"; }

use || fail "the first use failed"
[ "$(readlink clone/.deps/x)" = "$entry" ] || fail "clone/.deps/x is not a link to $entry: $(ls -l clone/.deps)"
[ "$(count)" = 1 ] || fail "the first use made $(count) builds"
use && [ "$(count)" = 1 ] || fail "a whole entry was built again ($(count) builds)"

echo changed > "$entry/lib/libx.so"
use && [ "$(count)" = 2 ] || fail "a changed file was not found ($(count) builds)"
[ "$(cat clone/.deps/x/lib/libx.so)" = library ] || fail "the changed file is still there"

rm "$entry/x.h"
use && [ "$(count)" = 3 ] && [ -f "$entry/x.h" ] || fail "a removed file was not found ($(count) builds)"

rm "$entry/.complete"
use && [ "$(count)" = 4 ] && h5tile_manifest_check "$entry" || fail "a partial entry was used ($(count) builds)"

(HOME=$scratch/other-home; unset H5TILE_CACHE; use) && [ "$(count)" = 4 ] &&
  [ ! -e "$scratch/other-home" ] || fail "another home built the entry again ($(count) builds)"

rm -rf "$scratch/cache" && : > "$builds"
use & use & use & wait
[ "$(count)" = 1 ] || fail "three clones at once made $(count) builds: $(cat "$builds")"
h5tile_manifest_check "$entry" || fail "the entry three clones made is not whole"

broken_maker() { return 3; }
h5tile_cached clone/.deps/y y-1 h5tile_manifest_check broken_maker &&
  fail "a maker that failed was reported as a success"
[ -e clone/.deps/y ] && fail "a maker that failed left clone/.deps/y: $(ls -l clone/.deps)"

(H5TILE_CACHE=off; use) || fail "H5TILE_CACHE=off failed"
[ -d clone/.deps/x ] && [ ! -L clone/.deps/x ] && [ "$(tail -1 "$builds")" = clone/.deps/x ] ||
  fail "H5TILE_CACHE=off did not make a folder in the clone: $(ls -l clone/.deps)"

if [ $failed -ne 0 ]; then
  echo "setup_cache: $failed failures"
  exit 1
fi
echo "setup_cache: OK (built once, reused, damaged and partial entries rebuilt, one build for three clones, off)"
