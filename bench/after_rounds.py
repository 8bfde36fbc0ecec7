"""The sections measured after the rounds, each on a schedule of its own: tile count (at
least 5 reads of each file), solver (BENCH_SOLVER_ROUNDS rounds), scale and many tiles (one
round)."""
import math
import os
import re
import shutil
import statistics
import sys
import time

from measure import Bench, Failed
from settings import (MANY_GROUPS, MANY_WRITERS, MANY_H5PY_READS, MANY_SHORT_WRITES, MANY_TILE_READS, MANY_WHAT, MANY_WHOLE_READS,
                      MIB, SOLVER_KINDS, SOLVER_STEPS)

# The line H5TILE_LOG=info prints for each rank's snapshot (src/ops/snapshot.rs).
SNAPSHOT_LOG = re.compile(r"snapshot of '.*': ([\d.]+) MiB copied into staging memory .*; ([\d.]+) MiB over the "
                          r"budget .*\(budget ([\d.]+) MiB\)")


class AfterRounds(Bench):
    def tile_count(self):
        os.sync()
        self.remove("contiguous.h5")
        self.h5tile("write contiguous", "write_single", "contiguous.h5")
        for n in self.tiles:
            self.remove(f"grid{n}.h5")
            self.h5tile(f"write {n} tiles", "write_grid", f"grid{n}.h5", [n])
        # Reads are quick and this is where the machine's noise matters most: an unmeasured
        # warm-up read of each file, then at least 5 rounds.
        files = [("contiguous", "contiguous.h5")] + [(f"{n} tiles", f"grid{n}.h5") for n in self.tiles]
        if self.has_subfiles:
            # One process cannot make groups of ranks: BENCH_SUBFILE_RANKS ranks each write their
            # share of the grid (h5tile_write_tiles), one subfile each.
            n, k = self.subfile_tiles, self.subfile_ranks
            label = self.subfile_label()
            self.remove("subgrid.h5")
            got = self.h5tile(f"write {label}", "write_grid", "subgrid.h5", [n], ranks=k,
                              env={"BENCH_LAYOUT": "subfiles", "H5TILE_RANKS_PER_FILE": "1"})
            self.files[label] = {"on_disk": len(self.on_disk(self.path("subgrid.h5"))),
                                 "expected": got["expected_files"], "groups": got["groups"]}
            files.append((label, "subgrid.h5"))
        for label, file in files:
            self.h5tile(f"warm-up {label}", "read_whole", file)
        for _ in range(max(self.rounds, 5)):
            for label, file in files:
                self.h5tile(f"open+read {label}", "read_whole", file)

    def solver(self):
        """The solver section: each of SOLVER_KINDS at each of BENCH_SOLVER_RANKS ranks, a
        process each, taking turns (the order shifting round by round), BENCH_SOLVER_ROUNDS
        rounds; then the resident set over many snapshots, once."""
        for index in range(self.solver_rounds):
            print(f"solver round {index + 1}/{self.solver_rounds}", file=sys.stderr)
            turn = index % len(SOLVER_KINDS)
            for r in self.solver_ranks:
                for kind in SOLVER_KINDS[turn:] + SOLVER_KINDS[:turn]:
                    self.solver_run(kind, r)
        self.solver_rss()

    def solver_run(self, kind, r):
        file = f"solver{r}.h5"
        self.remove(file)
        os.sync()  # no write pays for another's writeback
        self.prewarm(r * self.solver_tile_rows * self.cols * 8)
        n = SOLVER_STEPS if kind == "compute" else self.solver_calls
        # H5TILE_LOG=info: each rank's snapshot says how much was staged, under what budget.
        # "reserved": the snapshots after h5tile_reserve_staging (BENCH_RESERVE).
        env = {"H5TILE_LOG": "info"} if kind in ("snapshot", "reserved", "compute") else {}
        if kind == "reserved":
            env["BENCH_RESERVE"] = "1"
        mode = "solver_snapshot" if kind == "reserved" else f"solver_{kind}"
        result = self.launch(mode, self.path(file), r * self.solver_tile_rows, self.cols, [n], ranks=r,
                             env=env)[-1]
        result.update(self.staging_seen())
        self.record(f"solver {kind} {r} ranks", result)
        self.remove(file)

    def solver_rss(self):
        """One rank makes BENCH_SOLVER_RSS_SNAPSHOTS snapshot writes of BENCH_SOLVER_RSS_MIB to
        one path, each waited before the next, unsynced (the loop measures memory, not the
        disk): its resident set after the first and after the last."""
        rows, file = max(1, self.solver_rss_mib * MIB // 8 // self.cols), "solver-rss.h5"
        print(f"solver: resident set over {self.solver_rss_snapshots} snapshots", file=sys.stderr)
        self.remove(file)
        os.sync()
        self.prewarm(rows * self.cols * 8)
        result = self.launch("solver_rss", self.path(file), rows, self.cols, [self.solver_rss_snapshots], ranks=1,
                             env={"H5TILE_LOG": "info", "BENCH_NO_SYNC": "1"})[-1]
        result.update(self.staging_seen())
        self.record("solver rss", result)
        self.remove(file)

    def staging_seen(self):
        """What the last launch's H5TILE_LOG=info lines say of its snapshots: the most one rank
        staged and left in its buffers (written before the call returned), the least budget."""
        seen = [tuple(map(float, m.groups())) for m in SNAPSHOT_LOG.finditer(self.last_stderr)]
        if not seen:
            return {}
        return {"staged_MiB": max(s[0] for s in seen), "left_MiB": max(s[1] for s in seen),
                "budget_MiB": min(s[2] for s in seen), "snapshots_logged": len(seen)}

    def scale(self):
        """Many ranks, small tiles, every layout: files, creations, fsyncs, renames (the fault
        shim's log), the write's time, and one process's open and whole read. One round."""
        cols = 1024
        tile_rows = max(1, self.scale_tile_kib * 1024 // 8 // cols)
        for n in self.scale_ranks:
            specs = ["vds", "single"]
            if self.has_subfiles:
                specs += ["subfiles", "subfiles-k8"] + (["subfiles-k8-nosync"] if n == self.scale_ranks[0] else [])
            d = self.path(f"scale-np{n}")
            log = d + ".log"
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            if os.path.exists(log):
                os.remove(log)
            rows = n * tile_rows
            print(f"  scale: {n} ranks, {', '.join(specs)}", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            env = {"LD_PRELOAD": self.shim, "H5TILE_SHIM_UNDER": d, "H5TILE_SHIM_LOG": log}
            results = {r["layout"]: r for r in self.launch("scale", d, rows, cols, specs, ranks=n, env=env)}
            launch_s = time.perf_counter() - t0
            seen = {spec: {"create": 0, "write": 0, "fsync": 0, "rename": 0, "fsync_tiles": 0} for spec in specs}
            if not os.path.exists(log):
                sys.exit(f"bench: the write on {n} ranks left no log in {log}: is {self.shim} preloaded?")
            with open(log) as f:
                for line in f:
                    parts = line.split()
                    kind, path = parts[1], parts[2]
                    spec = os.path.relpath(path, d).split(os.sep)[0]
                    if spec in seen and kind in seen[spec]:
                        seen[spec][kind] += 1
                        if kind == "fsync" and ".tiles" + os.sep in path:
                            seen[spec]["fsync_tiles"] += 1
            sums = set()
            for spec in specs:
                got = results[spec]
                file = os.path.join(d, spec, "field.h5")
                opened = self.launch("open", file, rows, cols)[-1]
                read = self.launch("read_whole", file, rows, cols)[-1]
                sums.add(read["sum"])
                row = {"ranks": n, "layout": spec, "tile_bytes": got["tile_bytes"], "bytes": got["bytes"],
                       "write_s": got["seconds"], "open_s": opened["seconds"], "read_s": read["seconds"],
                       "files_on_disk": len(self.on_disk(file)), "expected_files": got["expected_files"],
                       "groups": got["groups"], "peak_rss_bytes": got["peak_rss_bytes"], **seen[spec]}
                self.scale_rows.append(row)
                print(f"    {spec:20} write {row['write_s']:7.3f} s, open {row['open_s'] * 1e3:7.2f} ms, "
                      f"read {row['read_s']:6.3f} s, {row['files_on_disk']} files, {row['fsync']} fsyncs",
                      file=sys.stderr, flush=True)
            assert len(sums) == 1, f"the layouts on {n} ranks read back different data: {sums}"
            print(f"    ({launch_s:.0f} s for the launch)", file=sys.stderr, flush=True)
            shutil.rmtree(d, ignore_errors=True)
            os.remove(log)

    def many_tiles_section(self):
        """For each of BENCH_MANY_TILES and each layout: one process writes the grid of 16 x 16
        tiles, then each in a process of its own: one tile read, the whole read, h5tile ls,
        ls -l and check --fast, h5py's whole read. One round. A measurement that fails is
        recorded as failed (and missed), the others still made."""
        layouts = [x for x in self.many_layouts if not x.startswith("subfiles") or self.has_subfiles]
        if len(layouts) < len(self.many_layouts):
            print("  many tiles: no subfiled layout in this h5tile: left out", file=sys.stderr)
        odd = [n for n in self.many_tiles if n < 1 or math.isqrt(n) ** 2 != n]
        if odd:
            sys.exit(f"bench: BENCH_MANY_TILES: {', '.join(map(str, odd))} not a square (the tiles make a g x g grid)")
        for n in self.many_tiles:
            rows = cols = 16 * math.isqrt(n)
            data = rows * cols * 8
            tile_sums, whole_sums = set(), set()
            for layout in layouts:
                file = f"many{n}-{layout}.h5"
                path, label = self.path(file), f"{n} tiles {layout}"
                grid = [path, str(rows), str(cols)]
                print(f"  many tiles: {n} tiles ({rows}x{cols} float64), {layout}", file=sys.stderr, flush=True)
                row = {"tiles": n, "layout": layout, "rows": rows, "cols": cols, "bytes": data, "failed": {}}
                self.many_rows.append(row)
                self.remove(file)
                os.sync()  # no write pays for another's writeback
                # "subfiles-apart": the subfiled layout without coalescing (a dataset and a mapping a
                # tile); "subfiles-g64": MANY_GROUPS ranks, a subfile each (H5TILE_RANKS_PER_FILE=1),
                # each rank's share of the grid rows of tiles that fill one box: MANY_GROUPS boxes.
                env = {"BENCH_LAYOUT": layout.split("-")[0], "BENCH_NO_SYNC": "1",
                       "H5TILE_COALESCE": "0" if layout.endswith("-apart") else "1"}
                # "auto": the default options (H5TILE_LAYOUT_AUTO), by one process; "auto-n4": by
                # MANY_WRITERS ranks, each a consecutive share of the tiles.
                write_cmd = [self.binary, "write_grid", *grid, str(n)]
                ranks = {f"-g{MANY_GROUPS}": MANY_GROUPS, f"-n{MANY_WRITERS}": MANY_WRITERS}
                launched = next((k for s, k in ranks.items() if layout.endswith(s)), None)
                if layout.endswith(f"-g{MANY_GROUPS}"):
                    env["H5TILE_RANKS_PER_FILE"] = "1"
                if layout.startswith("auto"):
                    del env["H5TILE_COALESCE"]
                if launched:
                    named = [x for k, v in env.items() for x in (["-x", f"{k}={v}"] if self.open_mpi
                                                                 else ["-genv", k, v])]
                    write_cmd = [self.mpirun, "--bind-to", "none", "-n", str(launched), *named, *write_cmd]
                try:
                    # One process, no launcher: as tile_count's writes. A short write is the fastest
                    # of MANY_SHORT_WRITES (the base every count's growth is measured against).
                    writes = []
                    for _ in range(MANY_SHORT_WRITES if n <= 4096 else 1):
                        self.remove(file)
                        writes.append(self.many_run(f"many write {label}", write_cmd, data, env=env)[0])
                    write = min(writes, key=lambda r: r["seconds"])
                except Failed as e:
                    row["failed"]["write"] = str(e)
                    self.remove(file)
                    continue
                row.update(write_s=write["seconds"], write_rss_bytes=write["peak_rss_bytes"],
                           files_on_disk=len(self.on_disk(path)))
                for key, runs, unmeasured, cmd in (
                        ("tile", MANY_TILE_READS, 1, [self.binary, "read_tile", *grid, str(n)]),
                        ("whole", MANY_WHOLE_READS, 0, [self.binary, "read_whole", *grid]),
                        ("ls", 1, 0, [self.tool, "ls", path]),
                        ("ls_l", 1, 0, [self.tool, "ls", "-l", path]),
                        ("check", 1, 0, [self.tool, "check", "--fast", path]),
                        # h5py a few times where it is quick (a VDS of many tile files is not).
                        ("h5py", 1 if layout == "vds" else MANY_H5PY_READS, 0,
                         [*self.h5py_contenders, "read", path])):
                    if key == "h5py" and layout == "vds" and n > self.many_h5py_max:
                        continue
                    name = f"many {MANY_WHAT[key]} {label}"
                    try:
                        # Short reads: unmeasured ones first.
                        for _ in range(unmeasured):
                            self.many_run(f"{name} (warm-up)", cmd, data)
                        got = [self.many_run(name, cmd, data) for _ in range(runs)]
                    except Failed as e:
                        row["failed"][key] = str(e)
                        continue
                    if key == "check" and ": ok" not in got[0][1]:
                        row["failed"][key] = f"h5tile check --fast {path} did not say ok: {got[0][1].strip()[-300:]}"
                        continue
                    row[f"{key}_s"] = statistics.median(r["seconds"] for r, _ in got)
                    row[f"{key}_rss_bytes"] = max(r["peak_rss_bytes"] for r, _ in got)
                    (tile_sums if key == "tile" else whole_sums).update(r["sum"] for r, _ in got if "sum" in r)
                self.remove(file)
            assert len(tile_sums) <= 1, f"the layouts at {n} tiles read back different middle tiles: {tile_sums}"
            assert len(whole_sums) <= 1, f"the layouts at {n} tiles (or h5py) read back different data: {whole_sums}"
