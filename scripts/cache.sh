# Sourced by the set-up scripts: expensive set-up (HDF5 builds, the Python environments) kept
# outside the clone, so a second clone or a fresh CI checkout on the same machine reuses it.
#
#   H5TILE_CACHE=<dir>  the cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/h5tile)
#   H5TILE_CACHE=off    no cache: everything is built inside the clone's .deps/, as before
#
# An entry is a folder named after what it holds and a key of everything that went into it
# (versions, flags, compiler); .deps/<name> is a link to it. An entry is used only when its
# check passes (HDF5: every file against the sha256 manifest written last; a Python
# environment: importing its packages); a partial or damaged one is removed and made again.
# Makers of one entry take turns under a lock, so two clones never build into one folder.
# `rm -rf ~/.cache/h5tile` forgets everything; the next `make` builds it again.

# Status 1 where H5TILE_CACHE turns the cache off.
h5tile_cache_on() {
  case "${H5TILE_CACHE:-}" in off | OFF | 0 | no | none) return 1 ;; esac
}

# The cache folder, made if need be, or status 1 where it is turned off or cannot be written.
h5tile_cache_root() {
  h5tile_cache_on || return 1
  local root=${H5TILE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/h5tile}
  mkdir -p "$root" 2>/dev/null && [ -w "$root" ] || return 1
  (cd "$root" && pwd)
}

# A short key of the words given (versions, flags): the first 12 hex digits of their sha256.
h5tile_cache_key() {
  printf '%s\n' "$@" | sha256sum | cut -c1-12
}

# Runs the rest of the arguments holding the lock of cache entry $1 (one maker at a time).
h5tile_cache_locked() {
  local entry=$1
  shift
  (
    exec 9>"$entry.lock"
    flock 9
    "$@"
  )
}

# h5tile_cached LINK NAME CHECK MAKE: makes the clone's path LINK (.deps/<something>) a whole
# copy of entry NAME. CHECK DIR says whether DIR is whole; MAKE DIR makes DIR whole (checking
# first, doing nothing where it is). With the cache on, LINK becomes a link to the entry, made
# under its lock; with it off, LINK is a folder made in place.
h5tile_cached() {
  local link=$1 name=$2 check=$3 make=$4 cache entry
  # Already linked to a whole entry of that name: used wherever the cache is (a test that runs
  # make with a home of its own finds what the clone was set up with).
  if h5tile_cache_on && [ -L "$link" ] && [ "$(basename "$(readlink "$link")")" = "$name" ] &&
    "$check" "$link"; then
    return 0
  fi
  if ! cache=$(h5tile_cache_root); then
    if [ -L "$link" ]; then rm -f "$link"; fi
    "$make" "$link"
    return
  fi
  entry="$cache/$name"
  h5tile_cache_locked "$entry" "$make" "$entry" || return
  if [ "$(readlink "$link" 2>/dev/null)" != "$entry" ]; then
    rm -rf "$link"
    ln -s "$entry" "$link"
  fi
}

# h5tile_cached_venv LINK NAME CHECK PIP_ARGUMENT...: LINK is a Python venv (cache entry
# NAME-<key of the arguments and Python's version>) into which pip installed the arguments;
# it is whole when its python runs CHECK (Python code) without an error.
h5tile_cached_venv() {
  local link=$1 name=$2
  h5tile_venv_check=$3
  shift 3
  h5tile_venv_pip=("$@")
  h5tile_cached "$link" "$name-$(h5tile_cache_key "$@" "$(python3 -c 'import sys; print(sys.version)')")" \
    h5tile_venv_usable h5tile_venv_make
}
h5tile_venv_usable() { "$1/bin/python" -c "$h5tile_venv_check" 2>/dev/null; }
h5tile_venv_make() {
  h5tile_venv_usable "$1" && return 0
  if [ -e "$1" ]; then echo "set-up: $1 is partial or damaged (its packages do not import): making it again"; fi
  echo "set-up: creating $1 (${h5tile_venv_pip[*]} from PyPI)"
  rm -rf "$1" && python3 -m venv "$1" &&
    "$1/bin/pip" install -q --disable-pip-version-check "${h5tile_venv_pip[@]}" &&
    "$1/bin/python" -c "$h5tile_venv_check"
}

# Writes folder $1's manifest: the sha256 of every file in it, in $1/.complete (written last:
# a folder without it is partial).
h5tile_manifest_write() {
  (cd "$1" && find . -type f ! -name '.complete*' -print0 | sort -z | xargs -0 sha256sum > .complete.tmp &&
    mv .complete.tmp .complete)
}

# Status 0 when folder $1 is whole: it has a manifest, and every file in it matches.
h5tile_manifest_check() {
  [ -s "$1/.complete" ] && (cd "$1" && sha256sum --quiet --strict -c .complete >/dev/null 2>&1)
}
