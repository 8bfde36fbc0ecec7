#!/usr/bin/env bash
# make bench: batched reading against a whole read of the same dataset, measured side by side
# in one run (rounds interleaved, medians reported), with each mode's peak memory.
#   BENCH_GIB   dataset size in GiB (default 1)      BENCH_CHUNK  chunk edge (default 4096)
#   BENCH_ROUNDS rounds (default 3)                  BENCH_DIR    where the dataset goes
# Prints a table and writes target/bench/batches.json.
set -euo pipefail
bin=$1 python=$2 out=$3
gib=${BENCH_GIB:-1} chunk=${BENCH_CHUNK:-4096} rounds=${BENCH_ROUNDS:-3}
dir=${BENCH_DIR:-$(dirname "$out")/data}
mkdir -p "$dir" "$(dirname "$out")"
cols=16384
rows=$(( gib * 1024 * 1024 * 1024 / 8 / cols ))
file="$dir/bench.h5"
log=$(mktemp)
echo "bench: writing a ${rows}x${cols} float64 dataset (${gib} GiB) to $file" >&2
"$bin" write "$file" "$rows" "$cols" >> "$log"
for r in $(seq "$rounds"); do
  "$bin" whole "$file" "$rows" "$cols" >> "$log"
  "$bin" batched "$file" "$rows" "$cols" "$chunk" >> "$log"
done
"$python" - "$log" "$out" "$chunk" <<'PY'
import json, statistics, sys
log, out, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = [json.loads(line) for line in open(log)]
by = lambda m: [r for r in runs if r["mode"] == m]
sums = {r["sum"] for r in runs}
assert len(sums) == 1, f"modes disagree on the data: {sums}"
size = runs[0]["bytes"]
chunk_bytes = chunk * chunk * 8
res = {}
for m in ("write", "whole", "batched"):
    rs = by(m)
    t = statistics.median(r["seconds"] for r in rs)
    res[m] = {"seconds": t, "GiB_per_s": size / t / 2**30, "peak_rss_MiB": max(r["peak_rss_bytes"] for r in rs) / 2**20, "rounds": len(rs)}
ratio = res["batched"]["GiB_per_s"] / res["whole"]["GiB_per_s"]
bound = (2 * chunk_bytes + 64 * 2**20) / 2**20
print(f"{'':28}{'GiB/s':>8}{'peak RSS MiB':>14}")
for m, label in (("write", "h5tile_write"), ("whole", "h5tile_read whole + sum"), ("batched", f"batches {chunk}x{chunk} + sum")):
    print(f"{label:28}{res[m]['GiB_per_s']:8.2f}{res[m]['peak_rss_MiB']:14.0f}")
print(f"batched / whole throughput: {ratio:.2f}  (target >= 0.80)")
print(f"batched peak memory: {res['batched']['peak_rss_MiB']:.0f} MiB; bound 2 chunks + 64 MiB = {bound:.0f} MiB; "
      f"whole read: {res['whole']['peak_rss_MiB']:.0f} MiB")
json.dump({"dataset_bytes": size, "chunk": [chunk, chunk], "results": res,
           "batched_over_whole": ratio, "memory_bound_MiB": bound}, open(out, "w"), indent=2)
print(f"saved {out}")
PY
rm -f "$log" "$file"
rm -rf "$file.tiles"
