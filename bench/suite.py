"""make bench: h5tile beside its baselines, measured side by side in one run.

Every figure is the median of BENCH_ROUNDS rounds, the measurements of a round interleaved,
each in a process of its own (so its peak memory is its own). Printed as a table of ratios to
the baselines, saved as target/bench/suite.json and drawn as target/bench/suite.png.

  baselines   raw sequential write (dd, fsync) and read (dd) of the same bytes; h5py writing
              (then fsync: h5tile_write returns with the data on disk) and reading the same
              array in one process
  h5tile      tiled write and read with each of BENCH_RANKS ranks; batched read in
              BENCH_CHUNK x BENCH_CHUNK chunks against a whole read (both summing the data);
              per-rank peak memory against the tile size; with the first rank count, a write
              followed by a computation of about the same length against h5tile_write_async
              running while the computation does (how much of the shorter one is hidden)
  tile count  the same bytes written as BENCH_TILES tiles (a square grid), then opened and read
              whole, against one contiguous file of the same bytes

Knobs (environment): BENCH_GIB (1), BENCH_ROUNDS (3), BENCH_RANKS (1,2,4), BENCH_TILES
(16,256,4096), BENCH_CHUNK (4096), BENCH_DIR (target/bench/data). Reads find the data in the
page cache (it was just written), for every contender alike.

usage: suite.py BENCH_BINARY MPIRUN OUT_DIR
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

MIB = 1 << 20
GIB = 1 << 30


def env_list(name, default):
    return [int(x) for x in os.environ.get(name, default).split(",") if x.strip()]


class Bench:
    def __init__(self, binary, mpirun, out):
        self.binary, self.mpirun, self.out = binary, mpirun, out
        self.gib = int(os.environ.get("BENCH_GIB", "1"))
        self.rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
        self.ranks = env_list("BENCH_RANKS", "1,2,4")
        self.tiles = env_list("BENCH_TILES", "16,256,4096")
        self.chunk = int(os.environ.get("BENCH_CHUNK", "4096"))
        self.dir = os.environ.get("BENCH_DIR", os.path.join(out, "data"))
        self.cols = 16384
        self.rows = self.gib * GIB // 8 // self.cols
        self.bytes = self.rows * self.cols * 8
        self.runs = {}  # name -> list of measurement dicts
        self.sweeps = None  # the computation of the overlap measurement, sized in round one

    def path(self, name):
        return os.path.join(self.dir, name)

    def remove(self, name):
        p = self.path(name)
        for q in (p, p + ".tiles"):
            if os.path.isdir(q):
                shutil.rmtree(q)
            elif os.path.exists(q):
                os.remove(q)

    def record(self, name, result):
        self.runs.setdefault(name, []).append(result)
        print(f"  {name:28} {result['seconds']:8.3f} s", file=sys.stderr, flush=True)

    def h5tile(self, name, mode, file, extra=(), ranks=None):
        cmd = [self.binary, mode, self.path(file), str(self.rows), str(self.cols), *map(str, extra)]
        if ranks:
            # Unbound, as one would launch a rank alone on a node: bound to one core it could
            # not use the node's others (h5py's process is not bound either).
            cmd = [self.mpirun, "--bind-to", "none", "-n", str(ranks), *cmd]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        self.record(name, json.loads(out.strip().splitlines()[-1]))

    def timed(self, name, cmd, **extra):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        self.record(name, {"seconds": time.perf_counter() - t0, **extra})

    def python(self, name, code, file):
        out = subprocess.run([sys.executable, "-c", code, self.path(file), str(self.rows), str(self.cols)],
                             check=True, capture_output=True, text=True).stdout
        self.record(name, json.loads(out.strip().splitlines()[-1]))

    def round(self):
        mib16 = 16 * MIB
        # Each write starts with no dirty pages pending, so none pays for another's writeback.
        os.sync()
        self.remove("posix.bin")
        self.timed("write POSIX", ["dd", "if=/dev/zero", f"of={self.path('posix.bin')}", f"bs={mib16}",
                                   f"count={self.bytes // mib16}", "conv=fsync", "status=none"])
        self.timed("read POSIX", ["dd", f"if={self.path('posix.bin')}", "of=/dev/null", f"bs={mib16}", "status=none"])
        self.remove("h5py.h5")
        os.sync()
        self.python("write h5py", H5PY_WRITE, "h5py.h5")
        self.python("read h5py", H5PY_READ, "h5py.h5")
        for r in self.ranks:
            self.remove(f"tiled{r}.h5")
            os.sync()
            self.h5tile(f"write h5tile {r} ranks", "write", f"tiled{r}.h5", ranks=r)
            self.h5tile(f"read h5tile {r} ranks", "read", f"tiled{r}.h5", ranks=r)
        self.overlap()
        self.h5tile("read whole (1 process)", "read_whole", f"tiled{self.ranks[0]}.h5")
        self.h5tile(f"batched {self.chunk}x{self.chunk}", "batched", f"tiled{self.ranks[0]}.h5", [self.chunk])
        self.h5tile(f"batched view {self.chunk}x{self.chunk}", "batched_view", f"tiled{self.ranks[0]}.h5",
                    [self.chunk])

    def overlap(self):
        """The write of the first rank count followed by a computation, against the same
        write started with h5tile_write_async while the computation runs. The computation is
        sized, once, to take about as long as the write (where overlap hides the most)."""
        r = self.ranks[0]
        if not self.sweeps:
            self.h5tile("compute (calibration)", "compute", "unused", [20], ranks=r)
            per_sweep = self.median("compute (calibration)") / 20
            self.sweeps = max(1, round(self.median(f"write h5tile {r} ranks") / per_sweep))
        self.h5tile("compute alone", "compute", "unused", [self.sweeps], ranks=r)
        for name, mode in (("write, then compute", "overlap"), ("write_async + compute", "overlap_async")):
            self.remove("overlap.h5")
            os.sync()
            self.h5tile(name, mode, "overlap.h5", [self.sweeps], ranks=r)

    def tile_count(self):
        self.remove("contiguous.h5")
        self.h5tile("write contiguous", "write_single", "contiguous.h5")
        for n in self.tiles:
            self.remove(f"grid{n}.h5")
            self.h5tile(f"write {n} tiles", "write_grid", f"grid{n}.h5", [n])
        # Reads are quick and this is where the machine's noise matters most: an unmeasured
        # warm-up read of each file, then at least 5 rounds.
        files = [("contiguous", "contiguous.h5")] + [(f"{n} tiles", f"grid{n}.h5") for n in self.tiles]
        for label, file in files:
            self.h5tile(f"warm-up {label}", "read_whole", file)
        for _ in range(max(self.rounds, 5)):
            for label, file in files:
                self.h5tile(f"open+read {label}", "read_whole", file)

    def median(self, name, key="seconds"):
        return statistics.median(r[key] for r in self.runs[name])

    def rate(self, name):
        return self.bytes / self.median(name) / GIB

    def report(self):
        rows, checks = [], []

        def line(label, name, against=()):
            rate = self.rate(name)
            ratios = {b: rate / self.rate(b) for b in against}
            rows.append((label, rate, ratios))
            return ratios

        print(f"\nh5tile bench: {self.bytes / GIB:.2f} GiB of float64, {self.rounds} rounds (medians), "
              f"{os.cpu_count()} cores\n")
        print(f"{'':34}{'GiB/s':>8}{'x h5py':>9}{'x POSIX':>9}   target")
        for kind in ("write", "read"):
            base = (f"{kind} h5py", f"{kind} POSIX")
            line(f"{kind} POSIX (dd)", f"{kind} POSIX")
            line(f"{kind} h5py, 1 process", f"{kind} h5py")
            for r in self.ranks:
                ratios = line(f"{kind} h5tile, {r} rank{'s' if r > 1 else ''}", f"{kind} h5tile {r} ranks", base)
                checks.append((f"{kind} h5tile {r} ranks >= 1.0x h5py", ratios[base[0]] >= 1.0, ratios[base[0]]))
                checks.append((f"{kind} h5tile {r} ranks >= 0.8x POSIX", ratios[base[1]] >= 0.8, ratios[base[1]]))
        for label, rate, ratios in rows:
            h = next((f"{v:9.2f}" for k, v in ratios.items() if "h5py" in k), "")
            p = next((f"{v:9.2f}" for k, v in ratios.items() if "POSIX" in k), "")
            target = ">= 1.0 / >= 0.8" if ratios else ""
            print(f"{label:34}{rate:8.2f}{h:>9}{p:>9}   {target}")

        whole = self.median("read whole (1 process)", "seconds_with_sum")
        print(f"\nwhole read + sum: {self.bytes / whole / GIB:.2f} GiB/s")
        ratios = {}
        for how, name in (("next, copying", f"batched {self.chunk}x{self.chunk}"),
                          ("next_view", f"batched view {self.chunk}x{self.chunk}")):
            batched = self.median(name)
            ratio = ratios[how] = whole / batched
            checks.append((f"batched read ({how}) within 20% of a whole read ({ratio:.2f}x)", ratio >= 0.8, ratio))
            print(f"batched {self.chunk}x{self.chunk} + sum ({how}): {self.bytes / batched / GIB:.2f} GiB/s; "
                  f"batched / whole = {ratio:.2f} (target >= 0.80)")

        print(f"\n{'peak resident memory per rank':34}{'tile MiB':>10}{'peak MiB':>10}{'peak-tile':>11}   target <= 64 MiB over the tile")
        memory = {}
        for name in [f"write h5tile {r} ranks" for r in self.ranks] + [f"read h5tile {r} ranks" for r in self.ranks] + \
                [f"batched {self.chunk}x{self.chunk}", f"batched view {self.chunk}x{self.chunk}"]:
            tile = max(r["tile_bytes"] for r in self.runs[name]) / MIB
            peak = max(r["peak_rss_bytes"] for r in self.runs[name]) / MIB
            extra = peak - tile
            if name.startswith("batched"):
                extra = peak - 2 * tile  # the caller's buffer and the read-ahead buffer
            memory[name] = {"tile_MiB": tile, "peak_MiB": peak, "over_tile_MiB": extra}
            checks.append((f"{name}: peak {peak:.0f} MiB <= tile{'s' if name.startswith('batched') else ''} + 64 MiB", extra <= 64, extra))
            print(f"{name:34}{tile:10.0f}{peak:10.0f}{extra:11.0f}")
        h5py_peak = max(r["peak_rss_bytes"] for r in self.runs["read h5py"]) / MIB
        print(f"{'(read h5py, 1 process)':34}{self.bytes / MIB:10.0f}{h5py_peak:10.0f}{h5py_peak - self.bytes / MIB:11.0f}")

        print(f"\n{'tiles':>8}{'write s':>10}{'open+read s':>13}{'x contiguous':>14}   target <= 2.0")
        base = self.median("open+read contiguous")
        scaling = {"contiguous": {"write_s": self.median("write contiguous"), "read_s": base, "ratio": 1.0}}
        print(f"{'1 file':>8}{scaling['contiguous']['write_s']:10.2f}{base:13.3f}{1.0:14.2f}")
        for n in self.tiles:
            t = self.median(f"open+read {n} tiles")
            scaling[str(n)] = {"write_s": self.median(f"write {n} tiles"), "read_s": t, "ratio": t / base}
            checks.append((f"{n} tiles: open+read within 2x one contiguous file ({t / base:.2f}x)", t / base <= 2.0, t / base))
            print(f"{n:8d}{scaling[str(n)]['write_s']:10.2f}{t:13.3f}{t / base:14.2f}")

        r = self.ranks[0]
        write, work = self.median(f"write h5tile {r} ranks"), self.median("compute alone")
        serial, overlapped = self.median("write, then compute"), self.median("write_async + compute")
        best = (write + work) / max(write, work)
        overlap = {"sweeps": self.sweeps, "write_s": write, "compute_s": work, "serial_s": serial,
                   "async_s": overlapped, "speedup": serial / overlapped, "best_speedup": best}
        print(f"\nwrite_async ({r} rank{'s' if r > 1 else ''}): a write ({write:.2f} s alone) and a computation "
              f"({work:.2f} s alone) took {serial:.2f} s one after the other and {overlapped:.2f} s overlapped: "
              f"{serial / overlapped:.2f}x faster (at best {best:.2f}x)")

        print("\ntargets:")
        for what, ok, _ in checks:
            print(f"  {'met   ' if ok else 'MISSED'}  {what}")
        summary = {
            "bytes": self.bytes, "rounds": self.rounds, "ranks": self.ranks, "tiles": self.tiles,
            "chunk": self.chunk, "throughput_GiB_s": {label: rate for label, rate, _ in rows},
            "batched_over_whole": ratios, "memory": memory, "tile_count": scaling, "overlap": overlap,
            "targets": [{"what": w, "met": ok, "value": v} for w, ok, v in checks],
            "runs": self.runs,
        }
        with open(os.path.join(self.out, "suite.json"), "w") as f:
            json.dump(summary, f, indent=2)
        self.plot(scaling)
        print(f"\nsaved {os.path.join(self.out, 'suite.json')} and {os.path.join(self.out, 'suite.png')}")

    def plot(self, scaling):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
        for kind, color in (("write", "tab:red"), ("read", "tab:blue")):
            a.plot(self.ranks, [self.rate(f"{kind} h5tile {r} ranks") for r in self.ranks], "o-", color=color,
                   label=f"h5tile {kind}")
            a.axhline(self.rate(f"{kind} POSIX"), color=color, ls="--", lw=1, label=f"POSIX {kind} (dd)")
            a.axhline(self.rate(f"{kind} h5py"), color=color, ls=":", lw=1, label=f"h5py {kind}")
        a.set_xlabel("MPI ranks")
        a.set_ylabel("GiB/s")
        a.set_xticks(self.ranks)
        a.set_title(f"Throughput, {self.bytes / GIB:.0f} GiB float64")
        a.legend(fontsize=7)
        counts = [1] + self.tiles
        b.plot(counts, [scaling["contiguous"]["read_s"]] + [scaling[str(n)]["read_s"] for n in self.tiles], "o-",
               label="open + read whole")
        b.axhline(2 * scaling["contiguous"]["read_s"], color="gray", ls="--", lw=1, label="2x one contiguous file")
        b.set_xscale("log")
        b.set_xlabel("tiles (1 = one contiguous file)")
        b.set_ylabel("seconds")
        b.set_title("Reading the same bytes from N tiles")
        b.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(self.out, "suite.png"), dpi=110)


H5PY_WRITE = r"""
import json, os, resource, sys, time
import numpy as np, h5py
path, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = (np.arange(rows * cols, dtype=np.int64) % 1000 * 0.5).reshape(rows, cols)
t0 = time.perf_counter()
with h5py.File(path, "w") as f:
    f.create_dataset("data", data=data)
fd = os.open(path, os.O_RDONLY); os.fsync(fd); os.close(fd)
t = time.perf_counter() - t0
print(json.dumps({"seconds": t, "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

H5PY_READ = r"""
import json, resource, sys, time
import h5py
path = sys.argv[1]
t0 = time.perf_counter()
with h5py.File(path, "r") as f:
    data = f["data"][...]
t = time.perf_counter() - t0
print(json.dumps({"seconds": t, "sum": float(data.sum()),
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def main():
    binary, mpirun, out = sys.argv[1:4]
    bench = Bench(binary, mpirun, out)
    os.makedirs(bench.dir, exist_ok=True)
    os.makedirs(out, exist_ok=True)
    print(f"bench: {bench.bytes / GIB:.2f} GiB ({bench.rows}x{bench.cols} float64) in {bench.dir}, "
          f"{bench.rounds} rounds", file=sys.stderr)
    try:
        for r in range(bench.rounds):
            print(f"round {r + 1}/{bench.rounds}", file=sys.stderr)
            bench.round()
        print("tile count", file=sys.stderr)
        bench.tile_count()
        readers = [n for n in bench.runs if n.startswith(("read h5py", "read h5tile", "read whole", "batched"))]
        sums = {run["sum"] for name in readers for run in bench.runs[name]}
        assert len(sums) == 1, f"the contenders read different data: {sums}"
        bench.report()
    finally:
        shutil.rmtree(bench.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
