#!/bin/sh
# The driver is silent unless asked: without H5TILE_LOG a successful run prints nothing on
# standard error; with H5TILE_LOG=info it prints exactly one "opened" line per file opened
# through it, naming the path taken (posix on this machine); at debug, closes report how raw
# data moved, so direct=on and threads=N are seen to take effect. At warn, a configuration key
# without effect is named; at error, a failed write is reported with its OS reason first.
# usage: plugin_log.sh PLUGIN_HDF5_PROGRAM SCRATCH_DIR
set -eu
prog=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
"$prog" env "$dir" > "$dir/out1" 2> "$dir/err1"
if [ -s "$dir/err1" ]; then
    echo "plugin_log: expected no output on stderr without H5TILE_LOG, got:" >&2
    cat "$dir/err1" >&2
    exit 1
fi
# A fresh folder: creating over an existing file makes HDF5 open it twice (to check it first).
H5TILE_LOG=info "$prog" env "$dir/fresh" > "$dir/out2" 2> "$dir/err2"
opens=$(sed -n 's/^file opens through h5tile_gds: //p' "$dir/out2")
lines=$(grep -c '^h5tile_gds info: opened .* path=posix' "$dir/err2" || true)
others=$(grep -vc '^h5tile_gds info: opened ' "$dir/err2" || true)
echo "file opens: $opens, info lines: $lines, other lines: $others"
if [ -z "$opens" ] || [ "$opens" -lt 1 ] || [ "$lines" != "$opens" ] || [ "$others" != 0 ]; then
    echo "plugin_log: expected one 'opened ... path=posix' line per open and nothing else:" >&2
    cat "$dir/err2" >&2
    exit 1
fi
# At debug, each close reports the raw-data routes taken: each configuration key must show.
route() { # CONFIG PATTERN
    H5TILE_LOG=debug "$prog" by-name "$dir/route" "$1" > "$dir/out3" 2> "$dir/err3"
    if ! grep -Eq "^h5tile_gds debug: closed .*$2" "$dir/err3"; then
        echo "plugin_log: with '$1' no close reported /$2/:" >&2
        cat "$dir/err3" >&2
        exit 1
    fi
}
route "direct=on,bounce=64KiB" "\\(raw data: [1-9][0-9]* O_DIRECT pieces"
route "threads=4,block=4KiB" "[1-9][0-9]* transfers split over workers"
route "gds=off" "\\(raw data: 0 O_DIRECT pieces, 0 transfers split"
# warn: writeback=on does nothing with direct=on, said once per open and nothing else.
H5TILE_LOG=warn "$prog" by-name "$dir/warn" "direct=on,writeback=on" > "$dir/out4" 2> "$dir/err4"
warned=$(grep -c '^h5tile_gds warn: .*writeback=on is ignored with direct=on' "$dir/err4" || true)
others=$(grep -vc '^h5tile_gds warn: ' "$dir/err4" || true)
if [ "$warned" -lt 1 ] || [ "$others" != 0 ]; then
    echo "plugin_log: expected warnings about writeback=on and nothing else:" >&2
    cat "$dir/err4" >&2
    exit 1
fi
# error: writes past a 16 KiB file-size limit fail (EFBIG); the driver says so at error level.
rm -rf "$dir/limited" && mkdir -p "$dir/limited"
status=0
( trap '' XFSZ; ulimit -f 32; H5TILE_LOG=error exec "$prog" env "$dir/limited" ) \
    > "$dir/out5" 2> "$dir/err5" || status=$?
if [ "$status" = 0 ] || ! grep -q "^h5tile_gds error: File too large: cannot write " "$dir/err5"; then
    echo "plugin_log: expected a failed run and an 'h5tile_gds error: File too large' line:" >&2
    cat "$dir/err5" >&2
    exit 1
fi
echo "plugin_log: OK"
