"""What make bench prints and saves once everything is measured: each section's table in
turn, the list of targets, target/bench/suite.json and the plot target/bench/suite.png."""
import json
import os

from after_rounds_tables import AfterRoundsTables
from rounds_tables import RoundsTables
from settings import GIB, ROUND_SECTIONS, SECTIONS


class Report(RoundsTables, AfterRoundsTables):
    def report(self):
        """Every table of the sections that ran, in SECTIONS' order, then the targets; saves
        suite.json (its keys in a fixed order) and, with h5tile and tile_count, suite.png."""
        rows, checks, parts = [], [], {}
        partial = "" if self.sections == set(SECTIONS) else \
            f"; sections {', '.join(s for s in SECTIONS if s in self.sections)} (BENCH_SECTIONS)"
        if self.sections & {*ROUND_SECTIONS, "tile_count"}:
            print(f"\nh5tile bench: {self.bytes / GIB:.2f} GiB of float64, {self.rounds} rounds (medians), "
                  f"{os.cpu_count()} cores{partial}\n")
        else:
            print(f"\nh5tile bench: {os.cpu_count()} cores{partial}")
        if self.wants("baselines"):
            self.report_throughput(rows, checks)
        if self.wants("h5tile"):
            parts["verify"] = self.report_verify(checks)
            parts["layouts"] = self.report_layouts(checks)
        if self.wants("subfiles"):
            parts["subfiles"] = self.report_subfiles(rows, checks)
            parts["subfiles_files"] = self.files
        if self.wants("unsynced"):
            parts["nosync"] = self.report_nosync(checks) if self.has_subfiles else {}
        if self.wants("checkpoint"):
            parts["checkpoint"] = self.report_checkpoint(checks)
        if self.wants("compression"):
            parts["compression"] = self.report_compression(checks)
        if self.wants("python"):
            parts["python"] = self.report_python(checks)
        if self.wants("h5tile"):
            parts["batched_over_whole"] = self.report_batched(checks)
            parts["memory"] = self.report_memory(checks)
        if self.wants("tile_count"):
            parts["tile_count"] = self.report_tile_count(checks)
        if self.wants("h5tile"):
            parts["overlap"] = self.report_overlap()
        if self.wants("solver"):
            parts["solver"] = self.report_solver(checks)

        if self.scale_rows:
            self.report_scale(checks)
        if self.wants("many_tiles"):
            parts["many_tiles"] = self.report_many_tiles(checks)
        parts.update(self.report_engines(checks))

        print("\ntargets:")
        for what, ok, _ in checks:
            print(f"  {'met   ' if ok else 'MISSED'}  {what}")
        if self.wants("baselines"):
            parts["throughput_GiB_s"] = {label: rate for label, rate, _ in rows}
        if self.wants("scale"):
            parts["scale"] = {"tile_KiB": self.scale_tile_kib, "rounds": 1, "cores": os.cpu_count(),
                              "rows": self.scale_rows}
        order = ("throughput_GiB_s", "batched_over_whole", "memory", "tile_count", "overlap", "subfiles",
                 "subfiles_files", "verify", "python", "nosync", "checkpoint", "compression", "solver", "scale",
                 "many_tiles", "dask", "legate")
        summary = {
            "bytes": self.bytes, "rounds": self.rounds, "ranks": self.ranks, "tiles": self.tiles,
            "chunks": self.chunks, "sections": [s for s in SECTIONS if s in self.sections],
            **{key: parts[key] for key in order if key in parts},
            "targets": [{"what": w, "met": ok, "value": v} for w, ok, v in checks],
            "runs": self.runs,
        }
        with open(os.path.join(self.out, "suite.json"), "w") as f:
            json.dump(summary, f, indent=2)
        if self.wants("h5tile") and self.wants("tile_count"):
            self.plot(parts["tile_count"])
            print(f"\nsaved {os.path.join(self.out, 'suite.json')} and {os.path.join(self.out, 'suite.png')}")
        else:
            print(f"\nsaved {os.path.join(self.out, 'suite.json')} (suite.png needs the h5tile and tile_count "
                  f"sections)")

    def plot(self, scaling):
        """suite.png: throughput by ranks, open + read time by tile count (`scaling`: the tile
        count table's), and the scale section's files and fsyncs where it ran."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        panels = 3 if self.scale_rows else 2
        fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4.2))
        a, b = axes[0], axes[1]
        for kind, color in (("write", "tab:red"), ("read", "tab:blue")):
            a.plot(self.ranks, [self.rate(f"{kind} h5tile {r} ranks") for r in self.ranks], "o-", color=color,
                   label=f"h5tile {kind} (VDS)")
            if self.has_subfiles:
                a.plot(self.ranks, [self.rate(f"{kind} subfiles {r} ranks") for r in self.ranks], "s-.",
                       color=color, label=f"h5tile {kind} (subfiles)")
            a.axhline(self.rate(f"{kind} POSIX"), color=color, ls="--", lw=1, label=f"POSIX {kind} (dd)")
            a.axhline(self.rate(f"{kind} h5py"), color=color, ls=":", lw=1, label=f"h5py {kind}")
        if self.has_subfiles:
            a.plot(self.ranks, [self.rate(f"write subfiles NO_SYNC {r} ranks") for r in self.ranks], "^-",
                   color="tab:orange", label="h5tile write (subfiles, NO_SYNC)")
            a.axhline(self.rate("write h5py without fsync"), color="tab:orange", ls=":", lw=1,
                      label="h5py write, no fsync")
        a.set_xlabel("MPI ranks")
        a.set_ylabel("GiB/s")
        a.set_xticks(self.ranks)
        a.set_title(f"Throughput, {self.bytes / GIB:.0f} GiB float64")
        a.legend(fontsize=7)
        counts = [1] + self.tiles
        b.plot(counts, [scaling["contiguous"]["read_s"]] + [scaling[str(n)]["read_s"] for n in self.tiles], "o-",
               label="open + read whole")
        b.axhline(2 * scaling["contiguous"]["read_s"], color="gray", ls="--", lw=1, label="2x one contiguous file")
        if self.has_subfiles:
            sub = scaling[self.subfile_label()]
            b.plot([self.subfile_tiles], [sub["read_s"]], "s", color="tab:green",
                   label=f"in {sub['files_on_disk'] - 1} subfiles")
        b.set_xscale("log")
        b.set_xlabel("tiles (1 = one contiguous file)")
        b.set_ylabel("seconds")
        b.set_title("Reading the same bytes from N tiles")
        b.legend(fontsize=7)
        if self.scale_rows:
            c = axes[2]
            for i, layout in enumerate(dict.fromkeys(r["layout"] for r in self.scale_rows)):
                pts = [r for r in self.scale_rows if r["layout"] == layout]
                color = f"C{i}"
                c.plot([r["ranks"] for r in pts], [r["files_on_disk"] for r in pts], "o-", color=color,
                       label=f"{layout}: files")
                c.plot([r["ranks"] for r in pts], [max(r["fsync"], 0.5) for r in pts], "x:", color=color,
                       label=f"{layout}: fsyncs")
            c.set_xscale("log", base=2)
            c.set_yscale("log")
            c.set_xlabel("MPI ranks (one machine; subfiles-k8: 8 ranks a file)")
            c.set_ylabel("count (0 drawn at 0.5)")
            c.set_title("Files and fsyncs of one dataset")
            c.legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(os.path.join(self.out, "suite.png"), dpi=110)
