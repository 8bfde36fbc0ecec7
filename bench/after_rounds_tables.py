"""The tables of the sections measured after the rounds (tile count, solver, scale, many
tiles), each with its targets, as rounds_tables.py's."""
import os
import statistics

from measure import Bench
from settings import (GIB, MANY_GROUPS, MANY_WRITERS, MANY_H5PY_READS, MANY_SHORT_WRITES, MANY_TILE_READS, MANY_WHAT,
                      MANY_WHOLE_READS, MIB)


class AfterRoundsTables(Bench):
    def report_tile_count(self, checks):
        """Opening and reading N tiles against one contiguous file of the same bytes."""
        print(f"\n{'tiles':>8}{'write s':>10}{'open+read s':>13}{'x contiguous':>14}   target <= 2.0")
        base = self.median("open+read contiguous")
        scaling = {"contiguous": {"write_s": self.median("write contiguous"), "read_s": base, "ratio": 1.0}}
        print(f"{'1 file':>8}{scaling['contiguous']['write_s']:10.2f}{base:13.3f}{1.0:14.2f}")
        for n in self.tiles:
            t = self.median(f"open+read {n} tiles")
            scaling[str(n)] = {"write_s": self.median(f"write {n} tiles"), "read_s": t, "ratio": t / base}
            checks.append((f"{n} tiles: open+read within 2x one contiguous file ({t / base:.2f}x)", t / base <= 2.0, t / base))
            print(f"{n:8d}{scaling[str(n)]['write_s']:10.2f}{t:13.3f}{t / base:14.2f}")
        if self.has_subfiles:
            label = self.subfile_label()
            t = self.median(f"open+read {label}")
            f = self.files[label]
            scaling[label] = {"write_s": self.median(f"write {label}"), "read_s": t, "ratio": t / base,
                              "ranks": self.subfile_ranks, "files_on_disk": f["on_disk"], "groups": f["groups"]}
            checks.append((f"{label}: open+read <= 1.0x one contiguous file ({t / base:.2f}x)", t / base <= 1.0,
                           t / base))
            checks.append((f"{label}: files per dataset {f['on_disk']} == groups + 1 ({f['groups']} + 1)",
                           f["on_disk"] == f["groups"] + 1, f["on_disk"]))
            print(f"{self.subfile_tiles:8d}{scaling[label]['write_s']:10.2f}{t:13.3f}{t / base:14.2f}   "
                  f"in {f['on_disk'] - 1} subfiles + master, written by {self.subfile_ranks} ranks "
                  f"(H5TILE_RANKS_PER_FILE=1); target <= 1.0")
        return scaling

    def report_solver(self, checks):
        """Copying a field (memcpy) against a snapshot's return, write_async + wait and
        h5tile_write of it; a compute loop's speed while a snapshot drains against its speed
        alone; the resident set over many snapshots."""
        ranks, tile = self.solver_ranks, self.solver_tile_rows * self.cols * 8
        print(f"\nsolver time: a {tile / GIB:.2f} GiB float64 tile a rank, MPI_THREAD_MULTIPLE, medians of "
              f"{self.solver_rounds} rounds (each kind a process of its own, taking turns); {self.solver_calls} "
              f"calls a process, 'steady' the median of all but the first; a call's time is its slowest rank's")
        print(f"{'':42}" + "".join(f"{f'{r} rank' + ('s' if r > 1 else ''):>18}" for r in ranks))
        print(f"{'':42}" + "".join(f"{'seconds':>9}{'x memcpy':>9}" for _ in ranks) + "   target")
        out = {"tile_bytes": tile, "rounds": self.solver_rounds, "calls": self.solver_calls, "ranks": ranks}
        per = {r: {} for r in ranks}
        memcpy = {r: self.median(f"solver memcpy {r} ranks", "steady_s") for r in ranks}
        # Whether every snapshot staged the whole tile (none of it left in the caller's buffer).
        whole = {r: all(run.get("left_MiB", 1) == 0 for run in self.runs[f"solver snapshot {r} ranks"])
                 for r in ranks}
        for label, kind, key, field, target in (
                ("memcpy into a touched buffer", "memcpy", "steady_s", "memcpy", ""),
                ("snapshot: call to return, first call", "snapshot", "first_s", "snapshot_first", ""),
                ("snapshot: call to return, steady", "snapshot", "steady_s", "snapshot", "<= 1.3"),
                ("reserved staging: first call", "reserved", "first_s", "reserved_first", ""),
                ("reserved staging: steady", "reserved", "steady_s", "reserved", ""),
                ("write_async + wait", "async", "steady_s", "async_wait", ""),
                ("h5tile_write", "write", "steady_s", "write", "")):
            cells = ""
            for r in ranks:
                seconds = self.median(f"solver {kind} {r} ranks", key)
                x = seconds / memcpy[r]
                per[r][f"{field}_s"], per[r][f"{field}_x_memcpy"] = seconds, x
                cells += f"{seconds:9.3f}{x:9.2f}"
                if target and whole[r]:
                    checks.append((f"snapshot return, {r} rank{'s' if r > 1 else ''}: steady <= 1.3x memcpy "
                                   f"({x:.2f}x)", x <= 1.3, x))
            print(f"{label:42}{cells}   {target}")
        for r in ranks:
            # h5tile_reserve_staging at start-up: the first snapshot costs what the next do.
            first, steady = per[r]["reserved_first_s"], per[r]["reserved_s"]
            x = first / steady
            checks.append((f"snapshot after h5tile_reserve_staging, {r} rank{'s' if r > 1 else ''}: first call "
                           f"<= 1.5x the steady ones ({x:.2f}x; without it {per[r]['snapshot_first_s'] / per[r]['snapshot_s']:.1f}x)",
                           x <= 1.5, x))
        print(f"{'compute loop (ms a step)':42}" + "".join(f"{'alone':>9}{'draining':>9}" for _ in ranks))
        cells, ratios = "", ""
        for r in ranks:
            runs = self.runs[f"solver compute {r} ranks"]
            alone, during = self.median(f"solver compute {r} ranks", "step_s"), None
            # A drain shorter than a step leaves no step to time (ratio -1): left out.
            timed = [run for run in runs if run["steps_during"] > 0]
            ratio = statistics.median(run["ratio"] for run in timed) if timed else None
            if timed:
                during = statistics.median(run["during_step_s"] for run in timed)
            per[r].update({"step_s": alone, "during_step_s": during, "compute_ratio": ratio,
                           "drain_s": statistics.median(run["drain_s"] for run in runs),
                           "steps_during": statistics.median(run["steps_during"] for run in runs)})
            cells += f"{alone * 1e3:9.2f}" + (f"{during * 1e3:9.2f}" if during else f"{'-':>9}")
            ratios += f"{ratio:18.2f}" if ratio else f"{'no step':>18}"
            if ratio and r < (os.cpu_count() or 1):
                checks.append((f"compute loop, {r} rank{'s' if r > 1 else ''} (a core to spare), while a snapshot "
                               f"drains >= 0.85x its speed alone ({ratio:.2f}x)", ratio >= 0.85, ratio))
        print(f"{'':42}{cells}")
        print(f"{'compute speed draining (alone / draining)':42}{ratios}   >= 0.85 with a core to spare "
              f"(ranks < {os.cpu_count()} cores)")
        print(f"{'drain (s), steps during it':42}" + "".join(
            f"{per[r]['drain_s']:9.2f}{per[r]['steps_during']:9.0f}" for r in ranks))
        for r in ranks:
            staged = [run for run in self.runs[f"solver snapshot {r} ranks"] if "budget_MiB" in run]
            multiple = all(run["thread_multiple"] for kind in ("snapshot", "compute")
                           for run in self.runs[f"solver {kind} {r} ranks"])
            rr = f"{r} rank{'s' if r > 1 else ''}"
            if not staged:
                why = "" if multiple else " (MPI has no MPI_THREAD_MULTIPLE: the write completes in the call)"
                print(f"staging, {rr}: no snapshot was staged{why}")
                per[r]["staging"] = None
                continue
            budget, left = min(run["budget_MiB"] for run in staged), max(run["left_MiB"] for run in staged)
            per[r]["staging"] = {"budget_MiB": budget, "left_MiB": left, "whole": whole[r]}
            held = "the tile staged whole" if whole[r] else \
                f"up to {left:.0f} MiB left in the caller's buffer (the 1.3x target does not apply)"
            print(f"staging, {rr}: budget {budget:.0f} MiB a rank (the library's default), {held}")
        out["per_ranks"] = {str(r): per[r] for r in ranks}
        rss = self.runs["solver rss"][-1]
        mib = {k: rss[k] / MIB for k in ("rss_first_bytes", "rss_last_bytes", "rss_max_bytes", "growth_bytes")}
        growth = mib["growth_bytes"]
        out["rss"] = {"snapshots": rss["snapshots"], "tile_MiB": rss["tile_bytes"] / MIB, "first_MiB":
                      mib["rss_first_bytes"], "last_MiB": mib["rss_last_bytes"], "max_MiB": mib["rss_max_bytes"],
                      "growth_MiB": growth, "budget_MiB": rss.get("budget_MiB"), "staged_MiB": rss.get("staged_MiB"),
                      "left_MiB": rss.get("left_MiB"), "seconds": rss["seconds"]}
        budget = f"budget {rss['budget_MiB']:.0f} MiB, {rss['staged_MiB']:.0f} MiB staged a snapshot" \
            if "budget_MiB" in rss else "no snapshot staged"
        print(f"resident set over {rss['snapshots']} snapshots of {rss['tile_bytes'] / MIB:.0f} MiB (1 rank, "
              f"H5TILE_NO_SYNC, each waited, {rss['seconds']:.1f} s): {mib['rss_first_bytes']:.0f} MiB after the "
              f"first, {mib['rss_last_bytes']:.0f} after the last (most {mib['rss_max_bytes']:.0f}): growth "
              f"{growth:.1f} MiB, target < 64; staging {budget}")
        checks.append((f"resident set over {rss['snapshots']} snapshots grows < 64 MiB after the first "
                       f"({growth:.1f} MiB)", growth < 64, growth))
        return out

    def report_scale(self, checks):
        names = {"vds": "vds (per-rank files)", "single": "single (one file)", "subfiles": "subfiles (per node)",
                 "subfiles-k8": "subfiles, 8 a file", "subfiles-k8-nosync": "subfiles, 8, NO_SYNC"}
        tile = self.scale_rows[0]["tile_bytes"] / 1024
        print(f"\nscale: {', '.join(map(str, self.scale_ranks))} ranks on this machine's {os.cpu_count()} cores "
              f"(oversubscribed: ranks take turns on the cores, so times grow with the ranks however a layout "
              f"scales), a {tile:.0f} KiB tile a rank, ONE round (no medians). Counts are of the write's calls "
              f"under the dataset's folder, logged by c-tests/fault_shim.c preloaded into every rank (and the "
              f"write timed with it there). The default grouping puts all ranks of one machine in one "
              f"subfile; 'subfiles, 8 a file' sets ranks_per_file = 8 (as H5TILE_RANKS_PER_FILE=8 would), "
              f"standing in for 8-core nodes. Open (h5tile_inspect) and read whole: one process.")
        print(f"{'ranks':>6} {'layout':22}{'files':>7}{'groups':>7}{'creates':>8}{'fsyncs':>7}{'(tiles)':>8}"
              f"{'renames':>8}{'writes':>8}{'write s':>9}{'open ms':>9}{'read s':>8}")
        for row in self.scale_rows:
            name = names.get(row["layout"], row["layout"])
            groups = row["groups"] if row["layout"].startswith("subfiles") else ""
            print(f"{row['ranks']:6d} {name:22}{row['files_on_disk']:7d}{groups:>7}{row['create']:8d}"
                  f"{row['fsync']:7d}{row['fsync_tiles']:8d}{row['rename']:8d}{row['write']:8d}"
                  f"{row['write_s']:9.3f}{row['open_s'] * 1e3:9.2f}{row['read_s']:8.3f}")
            if row["layout"].startswith("subfiles"):
                checks.append((f"scale {row['ranks']} ranks, {name}: files per dataset {row['files_on_disk']} == "
                               f"groups + 1 ({row['groups']} + 1)", row["files_on_disk"] == row["groups"] + 1,
                               row["files_on_disk"]))
                if row["layout"].endswith("nosync"):
                    checks.append((f"scale {row['ranks']} ranks, {name}: no fsync at all ({row['fsync']})",
                                   row["fsync"] == 0, row["fsync"]))
                else:
                    checks.append((f"scale {row['ranks']} ranks, {name}: one fsync a subfile "
                                   f"({row['fsync_tiles']} for {row['groups']})", row["fsync_tiles"] == row["groups"],
                                   row["fsync_tiles"]))
        print("(files: on disk after the write, master included; creates: opens with O_CREAT and mkdirs; "
              "fsyncs: all, (tiles) of them on files in the tile folder)")

    def report_many_tiles(self, checks):
        """Each cost against the number of tiles, a table a layout, and issue 46's targets where
        their counts were measured; a measurement that failed is printed as failed, and missed."""
        names = {"vds": "vds (a file a tile)", "subfiles": "subfiles (one subfile, its tiles coalesced: one box)",
                 "subfiles-apart": "subfiles, H5TILE_COALESCE=0 (one subfile, a dataset a tile)",
                 f"subfiles-g{MANY_GROUPS}": f"subfiles, {MANY_GROUPS} ranks a subfile each ({MANY_GROUPS} boxes)",
                 "single": "single (one file)",
                 "auto": "the default options (H5TILE_LAYOUT_AUTO), one process",
                 f"auto-n{MANY_WRITERS}": f"the default options (H5TILE_LAYOUT_AUTO), {MANY_WRITERS} ranks"}
        print(f"\nmany tiles: 16x16 float64 tiles in a square grid, one process writing them all (standing in for "
              f"as many ranks), H5TILE_NO_SYNC; ONE round: write once (up to 4,096 tiles the fastest of "
              f"{MANY_SHORT_WRITES}), one tile the median of {MANY_TILE_READS} (after one unmeasured), whole read the "
              f"median of {MANY_WHOLE_READS}, the h5tile commands once, h5py the median of {MANY_H5PY_READS} (VDS: "
              f"once); each a process of its own, its peak memory (MiB, from ~18 MiB: the launching process's) "
              f"beside its time; 'x 1024': the write's time a tile against that at 1,024 tiles")
        out = {"tile": [16, 16], "rounds": 1, "cores": os.cpu_count(), "h5py_max_vds": self.many_h5py_max,
               "rows": self.many_rows}
        by = {(r["layout"], r["tiles"]): r for r in self.many_rows}

        def cell(row, key, width, scale=1.0, digits=3):
            if key in row["failed"]:
                return f"{'failed':>{width}}"
            return f"{row[f'{key}_s'] * scale:{width}.{digits}f}" if f"{key}_s" in row else f"{'-':>{width}}"

        def mib(row, key, width):
            return f"{row[f'{key}_rss_bytes'] / MIB:{width}.0f}" if f"{key}_rss_bytes" in row else f"{'-':>{width}}"

        for layout in dict.fromkeys(r["layout"] for r in self.many_rows):
            print(f"\n{names.get(layout, layout)}")
            print(f"{'tiles':>7}{'write s':>9}{'x 1024':>8}{'tile ms':>9}{'MiB':>6}{'whole s':>9}{'ls s':>8}"
                  f"{'MiB':>6}{'ls -l s':>9}{'check s':>9}{'MiB':>6}{'h5py s':>9}{'MiB':>7}")
            base = by.get((layout, 1024))
            for row in (r for r in self.many_rows if r["layout"] == layout):
                n = row["tiles"]
                if base and "write_s" in base and "write_s" in row:
                    row["write_per_tile_x_1024"] = (row["write_s"] / n) / (base["write_s"] / 1024)
                per = f"{row['write_per_tile_x_1024']:8.2f}" if "write_per_tile_x_1024" in row else f"{'-':>8}"
                print(f"{n:7d}{cell(row, 'write', 9)}{per}{cell(row, 'tile', 9, 1e3, 1)}{mib(row, 'tile', 6)}"
                      f"{cell(row, 'whole', 9)}{cell(row, 'ls', 8)}{mib(row, 'ls', 6)}{cell(row, 'ls_l', 9)}"
                      f"{cell(row, 'check', 9)}{mib(row, 'check', 6)}{cell(row, 'h5py', 9)}{mib(row, 'h5py', 7)}")
            if layout == "vds" and any(r["tiles"] > self.many_h5py_max for r in self.many_rows if r["layout"] == "vds"):
                print(f"(h5py: not above {self.many_h5py_max} VDS tiles, BENCH_MANY_TILES_H5PY_MAX: it keeps every "
                      f"source file open, ~0.55 MiB each)")
        for row in self.many_rows:
            for key, why in row["failed"].items():
                print(f"failed: {row['tiles']} tiles, {row['layout']}, {MANY_WHAT[key]}: {why}")
                checks.append((f"{row['tiles']:,} tiles, {row['layout']}: {MANY_WHAT[key]} runs (failed: {why})",
                               False, None))
        for layout in dict.fromkeys(r["layout"] for r in self.many_rows):
            big, small = by.get((layout, 65536)), by.get((layout, 1024))
            if not big or "write" in big["failed"]:
                continue
            if small and "write_per_tile_x_1024" in big:
                x = big["write_per_tile_x_1024"]
                checks.append((f"65,536 tiles, {layout}: write time per tile <= 1.5x that at 1,024 ({x:.2f}x)",
                               x <= 1.5, x))
            if "tile_s" in big:
                ms = big["tile_s"] * 1e3
                checks.append((f"65,536 tiles, {layout}: read one tile <= 50 ms ({ms:.1f} ms)", ms <= 50, ms))
            for key, label in (("ls", "ls"), ("check", "check --fast")):
                if f"{key}_s" in big:
                    sec, rss = big[f"{key}_s"], big[f"{key}_rss_bytes"] / MIB
                    checks.append((f"65,536 tiles, {layout}: {label} <= 2 s and <= 256 MiB RSS ({sec:.2f} s, "
                                   f"{rss:.0f} MiB)", sec <= 2 and rss <= 256, sec))
            if "ls_l_s" in big:
                sec = big["ls_l_s"]
                checks.append((f"65,536 tiles, {layout}: ls -l <= 5 s ({sec:.2f} s)", sec <= 5, sec))
        # h5py reading 64 groups of coalesced boxes against the same data in one contiguous file.
        boxes, single = by.get((f"subfiles-g{MANY_GROUPS}", 65536)), by.get(("single", 65536))
        if boxes and single and "h5py_s" in boxes and "h5py_s" in single:
            x, rss = boxes["h5py_s"] / single["h5py_s"], boxes["h5py_rss_bytes"]
            limit = 2 * boxes["bytes"] + 256 * MIB
            checks.append((f"65,536 tiles in {MANY_GROUPS} coalesced subfiles: h5py's whole read <= 2x the single "
                           f"file's ({x:.2f}x) and <= 2x the data + 256 MiB RSS ({rss / MIB:.0f} MiB)",
                           x <= 2 and rss <= limit, x))
        # The default with many tiles a writer (issue 59), against the explicit layouts of the run.
        explicit = ("vds", "subfiles", "subfiles-apart", "single")
        for layout in ("auto", f"auto-n{MANY_WRITERS}"):
            for n in (16384, 65536):
                row, single = by.get((layout, n)), by.get(("single", n))
                if not row:
                    continue
                writes = [by[(x, n)]["write_s"] for x in explicit if "write_s" in by.get((x, n), {})]
                if "write_s" in row and writes:
                    x = row["write_s"] / min(writes)
                    checks.append((f"{n:,} tiles, {layout}: write <= 1.5x the fastest explicit layout's ({x:.2f}x)",
                                   x <= 1.5, x))
                if "h5py_s" in row and single and "h5py_s" in single:
                    x, rss = row["h5py_s"] / single["h5py_s"], row["h5py_rss_bytes"]
                    ok = x <= 2 and rss <= 2 * row["bytes"] + 256 * MIB
                    checks.append((f"{n:,} tiles, {layout}: h5py's whole read <= 2x the single file's ({x:.2f}x) "
                                   f"and <= 2x the data + 256 MiB RSS ({rss / MIB:.0f} MiB)", ok, x))
                for key, label in (("ls", "ls"), ("check", "check --fast")):
                    if n != 65536 and f"{key}_s" in row:
                        sec, rss = row[f"{key}_s"], row[f"{key}_rss_bytes"] / MIB
                        checks.append((f"{n:,} tiles, {layout}: {label} <= 2 s and <= 256 MiB RSS ({sec:.2f} s, "
                                       f"{rss:.0f} MiB)", sec <= 2 and rss <= 256, sec))
        for layout in ("subfiles", "subfiles-apart"):
            vds, sub = by.get(("vds", 16384)), by.get((layout, 16384))
            if vds and sub and "write_s" in vds and "write_s" in sub:
                x = sub["write_s"] / vds["write_s"]
                checks.append((f"16,384 tiles: {layout} write <= 2x the VDS write ({x:.2f}x)", x <= 2, x))
        return out
