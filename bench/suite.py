"""make bench: h5tile beside its baselines, measured side by side in one run.

Every figure is the median of BENCH_ROUNDS rounds, the measurements of a round interleaved,
each in a process of its own (so its peak memory is its own). Printed as a table of ratios to
the baselines, saved as target/bench/suite.json and drawn as target/bench/suite.png.

  baselines   raw sequential write (dd, fsync) and read (dd) of the same bytes; h5py writing
              (then fsync: h5tile_write returns with the data on disk) and reading the same
              array in one process; h5py writing without the fsync (what H5TILE_NO_SYNC
              compares with)
  h5tile      tiled write and read with each of BENCH_RANKS ranks; batched read in
              BENCH_CHUNK x BENCH_CHUNK chunks against a whole read (both summing the data);
              per-rank peak memory against the tile size; with the first rank count, a write
              followed by a computation of about the same length against h5tile_write_async
              running while the computation does (how much of the shorter one is hidden)
  unsynced    H5TILE_NO_SYNC writes (VDS and subfiles) against pwrite of the same bytes by the
              same ranks into a new file each, without fsync; fastest round and median
  checkpoint  with BENCH_CHECKPOINT_RANKS ranks, in the VDS and the subfiled layout: one
              checkpoint commit of 32 fields of 1/32 of the bytes against one field of all of
              them (fastest round beside the median), and 32 fields of 64 KiB against one of
              64 KiB and (VDS) against 32 h5tile_writes of them (KEEP_OTHERS)
  compression with BENCH_COMPRESSION_RANKS ranks, a smooth field (the heat demo's hot square,
              diffused: bench_h5tile's BENCH_DATA=heat) written durably uncompressed and with
              each codec (zstd:1, lz4 and deflate:1 after a byte shuffle; zstd:1 without),
              then each read from the page cache COMPRESSION_READS (3) times a round, all
              taking turns; the uncompressed and zstd:1 + shuffle files read again after
              dropping the page cache (where /proc/sys/vm/drop_caches can be written; else
              left out, saying why); h5py writing the same array with
              hdf5plugin.Zstd(clevel=1) and shuffle, chunked 1 MiB, fsynced, one process.
              Each file's size on disk and ratio are printed beside its times
  python      the Python package (bench/python_contenders.py): h5tile.to_file and from_file
              of the same row slabs with each of BENCH_RANKS ranks (mpi4py), beside the C API's
              and h5py's; and legate.io.hdf5 on CPU (one process) where it can be imported
              (otherwise left out, saying why)
  subfiles    the same write and read with each of BENCH_RANKS ranks in the subfiled layout
              (H5TILE_LAYOUT_SUBFILES, default grouping: one node here, so one subfile), and
              its write with H5TILE_NO_SYNC, beside the per-rank files (VDS) and h5py
  tile count  the same bytes written as BENCH_TILES tiles (a square grid), then opened and read
              whole, against one contiguous file of the same bytes; and BENCH_SUBFILE_TILES
              tiles in BENCH_SUBFILE_RANKS subfiles: as many ranks, each writing its share of
              the grid (h5tile_write_tiles) with H5TILE_RANKS_PER_FILE=1
  scale       BENCH_SCALE_RANKS ranks (oversubscribed: far more ranks than cores), a small tile
              each (BENCH_SCALE_TILE_KIB), one round, one launch a rank count writing every
              layout: vds, single, subfiles (default grouping) and subfiles with
              ranks_per_file = 8 (a stand-in for 8-core nodes: on one machine the default
              puts every rank in one group). For each: the files on disk, the creations,
              fsyncs and renames (counted by c-tests/fault_shim.c, preloaded into the ranks,
              logging every such call under the folder), the write's time (shim preloaded),
              and from one process the time to open the master (h5tile_inspect) and to read
              the whole dataset
  solver      what checkpointing costs a solver (bench_h5tile's solver_ modes), a
              BENCH_SOLVER_GIB float64 tile a rank at each of BENCH_SOLVER_RANKS ranks, under
              MPI_THREAD_MULTIPLE, medians of BENCH_SOLVER_ROUNDS rounds of its own, the kinds
              taking turns, each a process of its own making BENCH_SOLVER_CALLS calls in a row
              (the first, and 'steady': the median of the others, once staging memory is kept
              from the first snapshot; a call's time is its slowest rank's): memcpy of the tile
              into a buffer touched beforehand (the baseline: what copying the field costs);
              h5tile_write_async with H5TILE_SNAPSHOT, from call to return (then waited, not
              timed); h5tile_write_async + h5tile_wait; h5tile_write; each against memcpy.
              Then a compute loop (3-point stencil sweeps over 512 KiB, in cache) in steps of
              ~10 ms, its mean step alone (SOLVER_STEPS before and after) against its mean step
              while a snapshot drains (from the call's return until h5tile_test, polled between
              steps, says it is done), after one unmeasured snapshot: the ratio alone / draining
              (1.0: undisturbed; the target applies where the ranks leave a core to spare). The
              staging budget and how much of the tile it held (H5TILE_LOG=info's lines). Once:
              one rank making BENCH_SOLVER_RSS_SNAPSHOTS snapshot writes of BENCH_SOLVER_RSS_MIB
              to one path, each waited, with H5TILE_NO_SYNC: the resident set (/proc/self/statm)
              after the first and after the last
  many tiles  how each cost grows with the number of tiles: for each of BENCH_MANY_TILES (a
              square grid of g x g tiles of 16 x 16 float64) and each of BENCH_MANY_TILES_LAYOUTS,
              one process writes them all (write_grid with BENCH_NO_SYNC, standing in for as many
              ranks; the time a tile against that at 1,024 tiles; up to 4,096 tiles the fastest of
              3 writes), then, each in a process of its
              own: the middle tile read (read_tile, one unmeasured and the median of 5, with its
              peak memory), the whole dataset read (median of 3), `h5tile ls`, `h5tile ls -l` and
              `h5tile check --fast` (wall time and peak memory, from wait4) and h5py opening and
              reading it whole (VDS: up to BENCH_MANY_TILES_H5PY_MAX tiles, as h5py keeps every
              source file open; subfiles: at every count; the median of 3, the VDS layout's
              once). One round; the files of a count are removed before the next

Knobs (environment): BENCH_GIB (1), BENCH_ROUNDS (3), BENCH_RANKS (1,2,4), BENCH_TILES
(16,256,4096), BENCH_CHUNK (4096), BENCH_SUBFILE_TILES (4096), BENCH_SUBFILE_RANKS (64),
BENCH_SCALE (1; 0 skips the scale section), BENCH_SCALE_RANKS (16,64,256),
BENCH_SCALE_TILE_KIB (1024), BENCH_CHECKPOINT_RANKS (4), BENCH_COMPRESSION_RANKS (2), BENCH_DIR (target/bench/data),
BENCH_SOLVER_GIB (1, a rank; fractions allowed), BENCH_SOLVER_ROUNDS (5), BENCH_SOLVER_RANKS (1,2),
BENCH_SOLVER_CALLS (4), BENCH_SOLVER_RSS_MIB (256), BENCH_SOLVER_RSS_SNAPSHOTS (100),
BENCH_MANY_TILES (1024,4096,16384,65536; squares), BENCH_MANY_TILES_LAYOUTS (vds,subfiles,
subfiles-apart,subfiles-g64,single: subfiles-apart is the subfiled layout with
H5TILE_COALESCE=0, a dataset and a mapping a tile; subfiles-g64 64 ranks writing the grid's
rows in shares, a subfile each (H5TILE_RANKS_PER_FILE=1), so 64 coalesced boxes; single the
single-file layout, h5py's baseline),
BENCH_MANY_TILES_H5PY_MAX (16384: h5py keeps every source file of a VDS open, ~0.55 MiB each,
so 65,536 tile files would need ~36 GiB; the subfiled layout's one source file is read at every
count).
BENCH_SECTIONS (a comma list; default every section) runs only the sections named: baselines,
h5tile, unsynced, checkpoint, compression, python, subfiles, tile_count, solver, scale,
many_tiles (as above; "h5tile" also holds the batched reads, the overlap and the peak memory),
with those their report compares against (h5tile: baselines; python: h5tile; subfiles: h5tile
and unsynced); e.g. BENCH_SECTIONS=solver. suite.png is drawn where h5tile and tile_count ran.
Reads find the data in the page cache (it was just written), for every contender alike. Every measurement but the scale
section's starts right after memory has been touched and freed (Bench.prewarm: on this VM a
write into memory left free for a few seconds runs about 5x slower, whatever writes). Without
H5TILE_LAYOUT_SUBFILES in the library (probed with one tiny write) the subfiled parts are left
out, saying so.

usage: suite.py BENCH_BINARY MPIRUN OUT_DIR [FAULT_SHIM [H5TILE_TOOL]]
(H5TILE_TOOL, the h5tile command the many tiles section runs: by default the staged one,
prefix/bin/h5tile beside BENCH_BINARY's bench/ folder)
"""
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20
GIB = 1 << 30


class Failed(Exception):
    """A measurement of the many tiles section that failed: what ran, and why."""


def env_list(name, default):
    return [int(x) for x in os.environ.get(name, default).split(",") if x.strip()]


# The sections BENCH_SECTIONS names, in the order they run and report.
SECTIONS = ("baselines", "h5tile", "unsynced", "checkpoint", "compression", "python", "subfiles", "tile_count",
            "solver", "scale", "many_tiles")
# Those measured in the rounds of BENCH_ROUNDS.
ROUND_SECTIONS = ("baselines", "h5tile", "unsynced", "checkpoint", "compression", "python", "subfiles")
# What a section's report compares against, run with it.
NEEDS = {"h5tile": ("baselines",), "python": ("h5tile",), "subfiles": ("h5tile", "unsynced")}


def sections_from_env():
    """BENCH_SECTIONS (a comma list; unset or empty: every section), with the sections these
    need (NEEDS)."""
    text = os.environ.get("BENCH_SECTIONS", "").strip()
    if not text:
        return set(SECTIONS)
    asked = [x.strip().replace(" ", "_").replace("-", "_") for x in text.split(",") if x.strip()]
    unknown = [x for x in asked if x not in SECTIONS]
    if unknown:
        sys.exit(f"bench: BENCH_SECTIONS={text}: no section {', '.join(unknown)} (sections: {', '.join(SECTIONS)})")
    wanted = set()
    while asked:
        section = asked.pop()
        if section not in wanted:
            wanted.add(section)
            asked += NEEDS.get(section, ())
    return wanted


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
        self.subfile_tiles = int(os.environ.get("BENCH_SUBFILE_TILES", "4096"))
        self.subfile_ranks = int(os.environ.get("BENCH_SUBFILE_RANKS", "64"))
        self.sections = sections_from_env()
        self.do_scale = os.environ.get("BENCH_SCALE", "1") not in ("0", "") and self.wants("scale")
        self.scale_ranks = env_list("BENCH_SCALE_RANKS", "16,64,256")
        self.scale_tile_kib = int(os.environ.get("BENCH_SCALE_TILE_KIB", "1024"))
        self.checkpoint_ranks = int(os.environ.get("BENCH_CHECKPOINT_RANKS", "4"))
        self.compression_ranks = int(os.environ.get("BENCH_COMPRESSION_RANKS", "2"))
        self.stored = {}  # compression label -> bytes on disk (the last round's)
        self.cold_missing = None  # why reads with the page cache dropped are left out
        self.runs = {}  # name -> list of measurement dicts
        self.sweeps = None  # the computation of the overlap measurement, sized in round one
        self.shim = None  # the fault shim (libfault_shim.so), for the scale section's counts
        self.has_subfiles = False  # set by probe()
        self.legate_missing = None  # why legate.io.hdf5 cannot be measured here (probe())
        self.contenders = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                        "python_contenders.py")]
        self.round_index = 0  # the round being measured
        self.files = {}  # name -> what a write left on disk and what the shim saw
        self.scale_rows = []  # one dict per (ranks, layout) of the scale section
        self.solver_gib = float(os.environ.get("BENCH_SOLVER_GIB", "1"))
        self.solver_rounds = int(os.environ.get("BENCH_SOLVER_ROUNDS", "5"))
        self.solver_ranks = env_list("BENCH_SOLVER_RANKS", "1,2")
        self.solver_calls = int(os.environ.get("BENCH_SOLVER_CALLS", "4"))
        self.solver_rss_mib = int(os.environ.get("BENCH_SOLVER_RSS_MIB", "256"))
        self.solver_rss_snapshots = int(os.environ.get("BENCH_SOLVER_RSS_SNAPSHOTS", "100"))
        self.solver_tile_rows = max(1, int(self.solver_gib * GIB) // 8 // self.cols)  # a rank's
        self.last_stderr = ""  # the last launch's, for its H5TILE_LOG lines
        self.many_tiles = env_list("BENCH_MANY_TILES", "1024,4096,16384,65536")
        self.many_layouts = [x.strip() for x in os.environ.get(
            "BENCH_MANY_TILES_LAYOUTS", "vds,subfiles,subfiles-apart,subfiles-g64,single").split(",")
                             if x.strip()]
        self.many_h5py_max = int(os.environ.get("BENCH_MANY_TILES_H5PY_MAX", "16384"))
        self.many_rows = []  # one dict per (tiles, layout) of the many tiles section
        self.tool = None  # the h5tile command (main())
        version = subprocess.run([mpirun, "--version"], capture_output=True, text=True).stdout
        self.open_mpi = "Open MPI" in version or "open-mpi" in version

    def wants(self, section):
        return section in self.sections

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

    def launch(self, mode, path, rows, cols, extra=(), ranks=None, env=None, program=None):
        """bench_h5tile's JSON lines (or `program`'s, which takes the same arguments); `env`
        reaches every rank (named to the launcher too)."""
        cmd = [*(program or [self.binary]), mode, path, str(rows), str(cols), *map(str, extra)]
        env = env or {}
        if ranks:
            # Unbound, as one would launch a rank alone on a node: bound to one core it could
            # not use the node's others (h5py's process is not bound either).
            named = []
            for k, v in env.items():
                named += ["-x", f"{k}={v}"] if self.open_mpi else ["-genv", k, v]
            cmd = [self.mpirun, "--bind-to", "none", "-n", str(ranks), *named, *cmd]
        full = dict(os.environ)
        if not ranks:
            full.update(env)
        out = subprocess.run(cmd, capture_output=True, text=True, env=full)
        if out.returncode != 0:
            sys.exit(f"bench: {' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
        self.last_stderr = out.stderr
        return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]

    def prewarm(self, measured=None):
        """Touches, then frees, a few times the measured bytes of memory (`measured`, else
        BENCH_GIB's). On this VM the host takes back memory the guest has left free for a few
        seconds, and the next touch of it costs a host page fault: a 1 GiB write into such memory
        took 2.0-2.2 s, against 0.36-0.42 s right after this (both layouts alike). Run before
        every measurement of the rounds, of the tile count and of the solver section, so all
        start from the same state. In a process of its own: a child's peak memory (ru_maxrss)
        starts from its parent's peak."""
        with open("/proc/meminfo") as f:
            avail = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable"))
        n = min(3 * (measured or self.bytes) + GIB // 2, avail - 4 * GIB)
        if n > 0:  # np.ones writes every page
            subprocess.run([sys.executable, "-c", f"import numpy; numpy.ones({n}, dtype=numpy.uint8)"], check=True)

    def h5tile(self, name, mode, file, extra=(), ranks=None, env=None, program=None):
        self.prewarm()
        result = self.launch(mode, self.path(file), self.rows, self.cols, extra, ranks, env, program)[-1]
        self.record(name, result)
        return result

    def on_disk(self, path):
        """The files a dataset at `path` has on disk: the master (or single file) and its
        folder's."""
        files = [path] if os.path.isfile(path) else []
        for root, _, names in os.walk(path + ".tiles"):
            files += [os.path.join(root, n) for n in names]
        return files

    def probe(self):
        """Whether the library has the subfiled layout and H5TILE_NO_SYNC: one tiny write."""
        d = self.path("probe")
        cmd = [self.binary, "scale", d, "4", "4", "subfiles-nosync"]
        out = subprocess.run(cmd, capture_output=True, text=True)
        shutil.rmtree(d, ignore_errors=True)
        self.has_subfiles = out.returncode == 0
        if not self.has_subfiles:
            print("bench: no H5TILE_LAYOUT_SUBFILES / H5TILE_NO_SYNC in this h5tile: the subfiled "
                  f"layout's parts are left out ({(out.stderr or out.stdout).strip()[:200]})", file=sys.stderr)

    def probe_legate(self):
        out = subprocess.run([*self.contenders, "legate_probe"], capture_output=True, text=True)
        if out.returncode != 0:
            self.legate_missing = (out.stdout + out.stderr).strip().splitlines()[-1][:200]
            print(f"bench: legate.io.hdf5 cannot be imported ({self.legate_missing}): it is left out",
                  file=sys.stderr)

    def timed(self, name, cmd, **extra):
        self.prewarm()
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        self.record(name, {"seconds": time.perf_counter() - t0, **extra})

    def python(self, name, code, file, *extra):
        self.prewarm()
        out = subprocess.run([sys.executable, "-c", code, self.path(file), str(self.rows), str(self.cols),
                              *extra], check=True, capture_output=True, text=True).stdout
        self.record(name, json.loads(out.strip().splitlines()[-1]))

    def vds_step(self, r):
        self.remove(f"tiled{r}.h5")
        os.sync()
        self.h5tile(f"write h5tile {r} ranks", "write", f"tiled{r}.h5", ranks=r)
        # Checked reads (the default) and unchecked ones take turns going first, round by round.
        reads = [(f"read h5tile {r} ranks", {}), (f"read h5tile NO_VERIFY {r} ranks", {"BENCH_NO_VERIFY": "1"})]
        if self.round_index % 2:
            reads.reverse()
        for name, env in reads:
            self.h5tile(name, "read", f"tiled{r}.h5", ranks=r, env=env)
        # The same pair again in one process, taking turns: launches differ by more than the
        # check costs here (first touches of memory, the page cache's state), so the target is
        # judged on these.
        self.prewarm()
        for result in self.launch("read_pairs", self.path(f"tiled{r}.h5"), self.rows, self.cols, [READ_PAIRS],
                                  ranks=r):
            kind = "NO_VERIFY " if result["kind"] == "no_verify" else ""
            self.record(f"read pairs {kind}{r} ranks", result)

    def python_step(self, r):
        """The Python package over the same library: h5tile.to_file and from_file of the same
        row slabs as vds_step's C calls, under mpirun with mpi4py."""
        self.remove(f"python{r}.h5")
        os.sync()
        self.h5tile(f"write python {r} ranks", "h5tile_write", f"python{r}.h5", ranks=r, program=self.contenders)
        self.h5tile(f"read python {r} ranks", "h5tile_read", f"python{r}.h5", ranks=r, program=self.contenders)
        self.remove(f"python{r}.h5")

    def legate_step(self):
        """legate.io.hdf5 on CPU, one process, where it can be imported."""
        self.remove("legate.h5")
        os.sync()
        self.h5tile("write legate", "legate_write", "legate.h5", program=self.contenders)
        self.h5tile("read legate", "legate_read", "legate.h5", program=self.contenders)
        self.remove("legate.h5")

    def subfiles_step(self, r):
        self.remove(f"subfiles{r}.h5")
        os.sync()
        got = self.h5tile(f"write subfiles {r} ranks", "write", f"subfiles{r}.h5", ranks=r,
                          env={"BENCH_LAYOUT": "subfiles"})
        self.files[f"subfiles {r} ranks"] = {"on_disk": len(self.on_disk(self.path(f"subfiles{r}.h5"))),
                                             "expected": got["expected_files"], "groups": got["groups"]}
        self.h5tile(f"read subfiles {r} ranks", "read", f"subfiles{r}.h5", ranks=r)
        self.remove(f"subfiles{r}.h5")

    def nosync_step(self, r):
        """H5TILE_NO_SYNC in the subfiled and VDS layouts, and plain pwrite of the same bytes
        into a new file a rank, no fsync (what an unsynced write can reach), taking turns,
        NOSYNC_TURNS times a round (the second time in the opposite order)."""
        runs = [("subfiles", f"write subfiles NO_SYNC {r} ranks"), ("vds", f"write VDS NO_SYNC {r} ranks"),
                (None, f"write pwrite {r} ranks")]
        order = runs[self.round_index % 3:] + runs[:self.round_index % 3]
        turns = [order if turn % 2 == 0 else order[::-1] for turn in range(NOSYNC_TURNS)]
        for layout, name in [run for turn in turns for run in turn]:
            self.remove(f"nosync{r}.h5")
            os.sync()
            if layout:
                self.h5tile(name, "write", f"nosync{r}.h5", ranks=r, env={"BENCH_LAYOUT": layout, "BENCH_NO_SYNC": "1"})
            else:
                self.h5tile(name, "pwrite", f"nosync{r}.h5", ranks=r)
                for k in range(r):
                    os.remove(self.path(f"nosync{r}.h5.r{k}"))
            self.remove(f"nosync{r}.h5")

    def checkpoint_step(self):
        """A checkpoint of many fields against one field of the same bytes, at
        BENCH_CHECKPOINT_RANKS ranks, taking turns, in the VDS and the subfiled layout: 32
        fields of BENCH_GIB/32 each against one of BENCH_GIB; 32 fields of 64 KiB against one
        of 64 KiB, and (VDS) against the 32 h5tile_writes users made before checkpoints."""
        r, cols = self.checkpoint_ranks, 8192
        big_rows = self.bytes // 8 // cols
        runs = []
        for layout in CHECKPOINT_LAYOUTS:
            runs += [(f"checkpoint {layout} one field", "write", big_rows, 0, layout),
                     (f"checkpoint {layout} 32 fields", "checkpoint", big_rows // 32, 32, layout),
                     (f"checkpoint {layout} small one field", "write", 8, 0, layout),
                     (f"checkpoint {layout} small 32 fields", "checkpoint", 1, 32, layout)]
        runs.append(("checkpoint vds small 32 writes", "fields", 1, 32, "vds"))
        turn = self.round_index % len(runs)
        for name, mode, rows, n, layout in runs[turn:] + runs[:turn]:
            self.remove("checkpoint.h5")
            os.sync()
            # The large pair both write all the bytes (32 fields of fewer rows, or one field):
            # both need the memory prewarmed, else the first touch of it is slow on this VM.
            if rows * max(n, 1) >= 1 << 10:
                self.prewarm()
            env = {"BENCH_LAYOUT": layout}
            result = self.launch(mode, self.path("checkpoint.h5"), rows, cols, [n] if n else [], ranks=r,
                                 env=env)[-1]
            self.record(name, result)
        self.remove("checkpoint.h5")

    def drop_caches(self):
        """Empties the page cache, so the next read comes from the disk; False (and why, once)
        where this machine does not allow it."""
        os.sync()
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
            return True
        except OSError as e:
            self.cold_missing = f"/proc/sys/vm/drop_caches: {e.strerror}"
            return False

    def compression_step(self):
        """The smooth field written durably with each codec and without, each read back from
        the page cache; the uncompressed and zstd:1 + shuffle files read with the cache dropped;
        h5py with hdf5plugin's zstd. The writes take turns going first, round by round."""
        r, heat = self.compression_ranks, {"BENCH_DATA": "heat"}
        runs = [(label, i) for i, label in enumerate(COMPRESSIONS)]
        turn = self.round_index % len(runs)
        for label, i in runs[turn:] + runs[:turn]:
            codec, shuffle = COMPRESSIONS[label]
            file = f"compress{i}.h5"
            self.remove(file)
            os.sync()
            env = {**heat, "H5TILE_COMPRESSION": codec, "BENCH_SHUFFLE": "1" if shuffle else "0"}
            self.h5tile(f"compress write {label}", "write", file, ranks=r, env=env)
            self.stored[label] = sum(os.path.getsize(f) for f in self.on_disk(self.path(file)))
        # Reads are short and this VM's pauses are not: each file is read COMPRESSION_READS
        # times a round, all of them taking turns, the order shifting each time.
        for k in range(COMPRESSION_READS):
            shift = (turn + k) % len(runs)
            for label, i in runs[shift:] + runs[:shift]:
                self.h5tile(f"compress read {label}", "read", f"compress{i}.h5", ranks=r)
        cold = [("none", "compress0.h5"), (ZSTD1, f"compress{list(COMPRESSIONS).index(ZSTD1)}.h5")]
        for label, file in cold[self.round_index % 2:] + cold[:self.round_index % 2]:
            self.prewarm()
            if not self.drop_caches():
                break
            result = self.launch("read", self.path(file), self.rows, self.cols, ranks=r)[-1]
            self.record(f"compress cold read {label}", result)
        self.remove("h5py-zstd.h5")
        os.sync()
        self.python(f"compress write h5py {ZSTD1}", H5PY_ZSTD_WRITE, "h5py-zstd.h5")
        self.stored[f"h5py {ZSTD1}"] = os.path.getsize(self.path("h5py-zstd.h5"))
        self.remove("h5py-zstd.h5")
        for i in range(len(COMPRESSIONS)):
            self.remove(f"compress{i}.h5")

    def round(self, index):
        self.round_index = index
        mib16 = 16 * MIB
        # Each write starts with no dirty pages pending, so none pays for another's writeback.
        os.sync()
        if self.wants("baselines"):
            self.remove("posix.bin")
            self.timed("write POSIX", ["dd", "if=/dev/zero", f"of={self.path('posix.bin')}", f"bs={mib16}",
                                       f"count={self.bytes // mib16}", "conv=fsync", "status=none"])
            self.timed("read POSIX", ["dd", f"if={self.path('posix.bin')}", "of=/dev/null", f"bs={mib16}",
                                      "status=none"])
            self.remove("h5py.h5")
            os.sync()
            self.python("write h5py", H5PY_WRITE, "h5py.h5", "1")
            self.python("read h5py", H5PY_READ, "h5py.h5")
            self.remove("h5py-nosync.h5")
            os.sync()
            self.python("write h5py without fsync", H5PY_WRITE, "h5py-nosync.h5", "0")
            self.remove("h5py-nosync.h5")
        if self.wants("python") and not self.legate_missing:
            self.legate_step()
        for r in self.ranks:
            steps = [step for section, step in (("h5tile", self.vds_step), ("python", self.python_step))
                     if self.wants(section)]
            if self.has_subfiles:
                steps += [step for section, step in (("subfiles", self.subfiles_step), ("unsynced", self.nosync_step))
                          if self.wants(section)]
            # The layouts compared take turns going first, round by round: on this machine the
            # disk's pace drifts, and a fixed order would hand the drift to one of them.
            turn = index % len(steps) if steps else 0
            for step in steps[turn:] + steps[:turn]:
                step(r)
        if self.wants("h5tile"):
            self.overlap()
        if self.wants("checkpoint"):
            self.checkpoint_step()
        if self.wants("compression"):
            self.compression_step()
        if self.wants("h5tile"):
            self.h5tile("read whole (1 process)", "read_whole", f"tiled{self.ranks[0]}.h5")
            self.h5tile(f"batched {self.chunk}x{self.chunk}", "batched", f"tiled{self.ranks[0]}.h5", [self.chunk])
            self.h5tile(f"batched view {self.chunk}x{self.chunk}", "batched_view", f"tiled{self.ranks[0]}.h5",
                        [self.chunk])

    def overlap(self):
        """The write of the first rank count followed by a computation, against the same
        write started with h5tile_write_async while the computation runs. The computation is
        sized, once, to take about as long as the write (where overlap hides the most)."""
        r = self.ranks[0]
        os.sync()  # the NO_SYNC writes' data, off the disk before the computation is timed
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
        env = {"H5TILE_LOG": "info"} if kind in ("snapshot", "compute") else {}
        result = self.launch(f"solver_{kind}", self.path(file), r * self.solver_tile_rows, self.cols, [n], ranks=r,
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

    def subfile_label(self):
        return f"{self.subfile_tiles} tiles in {self.subfile_ranks} subfiles"

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

    def many_run(self, name, cmd, measured, env=None):
        """One measurement of the many tiles section, `cmd` in a process of its own after
        prewarming `measured` bytes: its wall time, peak memory (wait4's ru_maxrss:
        RUSAGE_CHILDREN's would be the largest of all children so far; Linux starts it from the
        resident set this process had when it forked, ~18 MiB here) and output, recorded under
        `name`. Output goes to a file, read whole once it has exited (a pipe read partly would
        stop it). A failure raises Failed with the exit status and the first line of its output
        (what failed and why; a Python traceback's last)."""
        self.prewarm(measured)
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            p = subprocess.Popen(cmd, stdout=out, stderr=err, env={**os.environ, **(env or {})})
            _, status, usage = os.wait4(p.pid, 0)
            seconds = time.perf_counter() - t0
            p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
            out.seek(0), err.seek(0)
            text, errors = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        if p.returncode != 0:
            lines = [x.strip() for x in (errors + text).splitlines() if x.strip()]
            why = (lines[-1] if lines and lines[0].startswith("Traceback") else lines[0]) if lines else "no output"
            print(f"  {name:28} FAILED ({p.returncode}): {why}", file=sys.stderr, flush=True)
            raise Failed(f"exit {p.returncode}: {why}")
        result = {"wall_seconds": seconds, "peak_rss_bytes": usage.ru_maxrss * 1024}
        line = next((x for x in reversed(text.splitlines()) if x.startswith("{")), None)
        if line and cmd[0] != self.tool:
            result.update(json.loads(line))  # bench_h5tile's and h5py's own "seconds"
        result.setdefault("seconds", seconds)
        self.record(name, result)
        return result, text

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
                write_cmd = [self.binary, "write_grid", *grid, str(n)]
                if layout.endswith(f"-g{MANY_GROUPS}"):
                    env["H5TILE_RANKS_PER_FILE"] = "1"
                    named = [x for k, v in env.items() for x in (["-x", f"{k}={v}"] if self.open_mpi
                                                                 else ["-genv", k, v])]
                    write_cmd = [self.mpirun, "--bind-to", "none", "-n", str(MANY_GROUPS), *named, *write_cmd]
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
                         [sys.executable, "-c", H5PY_READ, path])):
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

    def median(self, name, key="seconds"):
        return statistics.median(r[key] for r in self.runs[name])

    def rate(self, name):
        return self.bytes / self.median(name) / GIB

    def report(self):
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
                 "many_tiles")
        summary = {
            "bytes": self.bytes, "rounds": self.rounds, "ranks": self.ranks, "tiles": self.tiles,
            "chunk": self.chunk, "sections": [s for s in SECTIONS if s in self.sections],
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

    def report_throughput(self, rows, checks):
        """Each contender's throughput against h5py's and POSIX's (the h5tile rows with the
        h5tile section)."""

        def line(label, name, against=()):
            rate = self.rate(name)
            ratios = {b: rate / self.rate(b) for b in against}
            rows.append((label, rate, ratios))
            return ratios

        print(f"{'':34}{'GiB/s':>8}{'x h5py':>9}{'x POSIX':>9}   target")
        for kind in ("write", "read"):
            base = (f"{kind} h5py", f"{kind} POSIX")
            line(f"{kind} POSIX (dd)", f"{kind} POSIX")
            line(f"{kind} h5py, 1 process", f"{kind} h5py")
            if kind == "write":
                line("write h5py without fsync", "write h5py without fsync")
            if not self.wants("h5tile"):
                continue
            for r in self.ranks:
                ratios = line(f"{kind} h5tile, {r} rank{'s' if r > 1 else ''}", f"{kind} h5tile {r} ranks", base)
                checks.append((f"{kind} h5tile {r} ranks >= 1.0x h5py", ratios[base[0]] >= 1.0, ratios[base[0]]))
                checks.append((f"{kind} h5tile {r} ranks >= 0.8x POSIX", ratios[base[1]] >= 0.8, ratios[base[1]]))
        for label, rate, ratios in rows:
            h = next((f"{v:9.2f}" for k, v in ratios.items() if "h5py" in k), "")
            p = next((f"{v:9.2f}" for k, v in ratios.items() if "POSIX" in k), "")
            target = ">= 1.0 / >= 0.8" if ratios else ""
            print(f"{label:34}{rate:8.2f}{h:>9}{p:>9}   {target}")

    def report_verify(self, checks):
        """Checked reads against H5TILE_READ_NO_VERIFY, in one process and launched apart."""
        pairs = READ_PAIRS * self.rounds
        print(f"\n{'checking checksums on read':34}{'GiB/s':>8}{'x no check':>12}{'launched':>10}   target "
              f"(in one process, medians of {pairs} pairs)")
        verify = {}
        for r in self.ranks:
            checked = self.rate(f"read pairs {r} ranks")
            unchecked = self.rate(f"read pairs NO_VERIFY {r} ranks")
            ratio = checked / unchecked
            launched = self.rate(f"read h5tile {r} ranks") / self.rate(f"read h5tile NO_VERIFY {r} ranks")
            verify[f"{r} ranks"] = {"GiB_s": checked, "GiB_s_no_verify": unchecked, "ratio": ratio,
                                    "ratio_launched": launched}
            checks.append((f"checked read, {r} ranks, >= 0.9x H5TILE_READ_NO_VERIFY, in one process ({ratio:.2f}x; "
                           f"launched {launched:.2f}x)", ratio >= 0.9, ratio))
            print(f"{f'read, {r} rank' + ('s' if r > 1 else ''):34}{checked:8.2f}{ratio:12.2f}{launched:10.2f}"
                  f"   >= 0.90")
        return verify

    def report_subfiles(self, rows, checks):
        """The subfiled layout against the per-rank files (VDS) and h5py."""
        subfiles = {}
        if self.has_subfiles:
            print(f"\n{'subfiled layout (one subfile a node)':34}{'GiB/s':>8}{'x VDS':>9}{'x h5py':>9}"
                  f"{'x h5py':>9}   target")
            print(f"{'':34}{'':>8}{'(ranks)':>9}{'':>9}{'no fsync':>9}")
            for r in self.ranks:
                rr = f"{r} rank{'s' if r > 1 else ''}"
                for label, name, vds, target in (
                        (f"write subfiles, {rr}", f"write subfiles {r} ranks", f"write h5tile {r} ranks", "vds"),
                        (f"write subfiles NO_SYNC, {rr}", f"write subfiles NO_SYNC {r} ranks",
                         f"write h5tile {r} ranks", "nosync"),
                        (f"read subfiles, {rr}", f"read subfiles {r} ranks", f"read h5tile {r} ranks", "vds"),
                        (f"(write VDS NO_SYNC, {rr})", f"write VDS NO_SYNC {r} ranks", f"write h5tile {r} ranks",
                         None)):
                    rate = self.rate(name)
                    x_vds = rate / self.rate(vds)
                    h5 = "read h5py" if name.startswith("read") else "write h5py"
                    x_h5py = rate / self.rate(h5)
                    x_nosync = rate / self.rate("write h5py without fsync") if name.startswith("write") else None
                    rows.append((label, rate, {}))
                    subfiles[name] = {"GiB_s": rate, "x_vds": x_vds, "x_h5py": x_h5py, "x_h5py_no_fsync": x_nosync}
                    if target == "vds":
                        checks.append((f"{name} >= 0.95x VDS (per-rank files) ({x_vds:.2f}x)", x_vds >= 0.95, x_vds))
                        goal = ">= 0.95 x VDS"
                    elif target is None:
                        goal = "(context: x VDS is against VDS with fsync)"
                    else:
                        checks.append((f"{name} >= 0.9x h5py without fsync ({x_nosync:.2f}x)", x_nosync >= 0.9,
                                       x_nosync))
                        goal = ">= 0.9 x h5py no fsync"
                    nosync_col = f"{x_nosync:9.2f}" if x_nosync is not None else ""
                    print(f"{label:34}{rate:8.2f}{x_vds:9.2f}{x_h5py:9.2f}{nosync_col:>9}   {goal}")
            for what, f in self.files.items():
                if what.endswith("ranks"):
                    checks.append((f"{what}: files per dataset {f['on_disk']} == groups + 1 "
                                   f"({f['groups']} + 1)", f["on_disk"] == f["groups"] + 1, f["on_disk"]))
        return subfiles

    def report_batched(self, checks):
        """Batched reads against one whole read, both summing the data."""
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
        return ratios

    def report_memory(self, checks):
        """Peak resident memory per rank against the tile."""
        print(f"\n{'peak resident memory per rank':34}{'tile MiB':>10}{'peak MiB':>10}{'peak-tile':>11}   target <= 64 MiB over the tile")
        memory = {}
        sub = [f"{k} subfiles {r} ranks" for k in ("write", "read") for r in self.ranks] \
            if self.has_subfiles and self.wants("subfiles") else []
        for name in [f"write h5tile {r} ranks" for r in self.ranks] + [f"read h5tile {r} ranks" for r in self.ranks] + \
                sub + [f"batched {self.chunk}x{self.chunk}", f"batched view {self.chunk}x{self.chunk}"]:
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
        return memory

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

    def report_overlap(self):
        """A write then a computation, against the two overlapped by h5tile_write_async."""
        r = self.ranks[0]
        write, work = self.median(f"write h5tile {r} ranks"), self.median("compute alone")
        serial, overlapped = self.median("write, then compute"), self.median("write_async + compute")
        best = (write + work) / max(write, work)
        overlap = {"sweeps": self.sweeps, "write_s": write, "compute_s": work, "serial_s": serial,
                   "async_s": overlapped, "speedup": serial / overlapped, "best_speedup": best}
        print(f"\nwrite_async ({r} rank{'s' if r > 1 else ''}): a write ({write:.2f} s alone) and a computation "
              f"({work:.2f} s alone) took {serial:.2f} s one after the other and {overlapped:.2f} s overlapped: "
              f"{serial / overlapped:.2f}x faster (at best {best:.2f}x)")
        return overlap

    def fastest(self, name):
        return self.bytes / min(r["seconds"] for r in self.runs[name]) / GIB

    def report_nosync(self, checks):
        """Unsynced writes against pwrite of the same bytes by the same ranks (a new file
        each, no fsync): page allocation makes these jumpy here, so the fastest round is
        printed beside the median, and the target is on the fastest."""
        print(f"\n{'unsynced writes (H5TILE_NO_SYNC)':34}{'GiB/s':>8}{'fastest':>9}{'x pwrite':>10}"
              f"{'(median)':>10}   target (fastest of {self.rounds * NOSYNC_TURNS})")
        nosync = {}
        for r in self.ranks:
            rr = f"{r} rank{'s' if r > 1 else ''}"
            base = f"write pwrite {r} ranks"
            print(f"{'pwrite, ' + rr:34}{self.rate(base):8.2f}{self.fastest(base):9.2f}")
            for layout in ("VDS", "subfiles"):
                name = f"write {layout} NO_SYNC {r} ranks"
                x_fast = self.fastest(name) / self.fastest(base)
                x_median = self.rate(name) / self.rate(base)
                nosync[name] = {"GiB_s": self.rate(name), "fastest_GiB_s": self.fastest(name), "x_pwrite": x_fast,
                                "x_pwrite_median": x_median}
                checks.append((f"{name} >= 0.8x pwrite, fastest rounds ({x_fast:.2f}x)", x_fast >= 0.8, x_fast))
                print(f"{layout + ' NO_SYNC, ' + rr:34}{self.rate(name):8.2f}{self.fastest(name):9.2f}"
                      f"{x_fast:10.2f}{x_median:10.2f}   >= 0.8")
        return nosync

    def report_checkpoint(self, checks):
        """Checkpoints of many fields against one field of the same bytes, in each layout. The
        large pair are durable writes of 1 GiB, which page allocation makes jumpy here: the
        fastest round is printed beside the median, and their target is on the fastest (as
        for the unsynced writes); the small pair's is on the median."""
        r = self.checkpoint_ranks
        print(f"\n{'checkpoints, ' + str(r) + ' ranks':40}{'seconds':>8}{'x one':>9}{'fastest':>9}{'x one':>7}"
              f"   target")
        out = {}
        for layout in CHECKPOINT_LAYOUTS:
            one, small = f"checkpoint {layout} one field", f"checkpoint {layout} small one field"
            print(f"{layout + ': one field of ' + f'{self.bytes / GIB:.2f} GiB':40}{self.median(one):8.3f}"
                  f"{'':9}{self.least(one):9.3f}")
            print(f"{layout + ': one field of 64 KiB':40}{self.median(small):8.3f}")
            rows = [("32 fields of 1/32 the bytes", f"checkpoint {layout} 32 fields", one, 1.2, True),
                    ("32 fields of 64 KiB", f"checkpoint {layout} small 32 fields", small, 3.0, False)]
            if layout == "vds":
                rows.append(("32 h5tile_writes of 64 KiB", "checkpoint vds small 32 writes", small, None, False))
            for label, name, base, target, on_fastest in rows:
                x = self.median(name) / self.median(base)
                x_fast = self.least(name) / self.least(base)
                out[name] = {"seconds": self.median(name), "x_one_field": x, "fastest_seconds": self.least(name),
                             "fastest_x_one_field": x_fast}
                fast = f"{self.least(name):9.3f}{x_fast:7.2f}" if on_fastest else ""
                if target:
                    judged, how = (x_fast, "fastest rounds") if on_fastest else (x, "medians")
                    checks.append((f"{layout}: {label}: <= {target}x one field, {how} ({judged:.2f}x)",
                                   judged <= target, judged))
                goal = (f"<= {target}" + (" (fastest)" if on_fastest else "")) if target else "(before checkpoints)"
                print(f"{layout + ': ' + label:40}{self.median(name):8.3f}{x:9.2f}{fast:16}   {goal}")
        return out

    def least(self, name):
        return min(r["seconds"] for r in self.runs[name])

    def report_compression(self, checks):
        """Each codec against the uncompressed write and read of the same smooth field
        (medians), its size on disk, and h5tile's zstd:1 + shuffle against h5py's. The writes
        are durable writes of 1 GiB, which page allocation makes jumpy here: the fastest round
        is printed beside the median, and the write targets are on the fastest (as for the
        unsynced writes and the large checkpoints); the read target is on the medians."""
        r = self.compression_ranks
        none_w, none_r = self.median("compress write none"), self.median("compress read none")
        none_fast = self.least("compress write none")
        print(f"\ncompressed tiles, {r} ranks, smooth field{'':>4}{'write s':>9}{'x none':>8}{'fastest':>9}"
              f"{'x none':>8}{'read s':>8}{'x none':>8}{'MiB':>8}{'ratio':>7}")
        out = {}
        for label in COMPRESSIONS:
            w, rd = self.median(f"compress write {label}"), self.median(f"compress read {label}")
            fast = self.least(f"compress write {label}")
            size = self.stored[label]
            out[label] = {"write_s": w, "write_x_none": w / none_w, "fastest_write_s": fast,
                          "fastest_write_x_none": fast / none_fast, "read_s": rd,
                          "read_rate_x_none": none_r / rd, "bytes_on_disk": size, "ratio": self.bytes / size}
            print(f"{label:40}{w:9.3f}{w / none_w:8.2f}{fast:9.3f}{fast / none_fast:8.2f}{rd:8.3f}"
                  f"{none_r / rd:8.2f}{size / MIB:8.0f}{self.bytes / size:7.2f}")
        h5py_name = f"compress write h5py {ZSTD1}"
        h5py_w, h5py_fast, h5py_size = self.median(h5py_name), self.least(h5py_name), self.stored[f"h5py {ZSTD1}"]
        print(f"{'h5py + hdf5plugin ' + ZSTD1 + ', 1 process':40}{h5py_w:9.3f}{h5py_w / none_w:8.2f}"
              f"{h5py_fast:9.3f}{h5py_fast / none_fast:8.2f}{'':>16}{h5py_size / MIB:8.0f}"
              f"{self.bytes / h5py_size:7.2f}")
        z = out[ZSTD1]
        x_fast = z["fastest_write_x_none"]
        checks.append((f"{ZSTD1} write <= 1.0x the uncompressed durable write, fastest rounds ({x_fast:.2f}x; "
                       f"medians {z['write_x_none']:.2f}x)", x_fast <= 1.0, x_fast))
        checks.append((f"{ZSTD1} >= 2x smaller ({z['ratio']:.2f}x)", z["ratio"] >= 2.0, z["ratio"]))
        checks.append((f"{ZSTD1} read from the page cache >= 0.7x uncompressed ({z['read_rate_x_none']:.2f}x)",
                       z["read_rate_x_none"] >= 0.7, z["read_rate_x_none"]))
        faster, faster_median = h5py_fast / z["fastest_write_s"], h5py_w / z["write_s"]
        out["h5py"] = {"write_s": h5py_w, "fastest_write_s": h5py_fast, "bytes_on_disk": h5py_size,
                       "h5tile_x_h5py": faster, "h5tile_x_h5py_median": faster_median}
        checks.append((f"{ZSTD1} write >= 3x faster than h5py + hdf5plugin.Zstd, fastest rounds ({faster:.2f}x; "
                       f"medians {faster_median:.2f}x)", faster >= 3.0, faster))
        if self.cold_missing:
            print(f"reads with the page cache dropped: not measured ({self.cold_missing})")
            out["cold"] = {"skipped": self.cold_missing}
        else:
            cn, cz = self.median("compress cold read none"), self.median(f"compress cold read {ZSTD1}")
            out["cold"] = {"none_s": cn, "zstd_s": cz, "zstd_x_none": cn / cz}
            print(f"{'cold read (page cache dropped): none':40}{'':>17}{cn:8.3f}")
            print(f"{'cold read: ' + ZSTD1:40}{'':>17}{cz:8.3f}{cn / cz:8.2f}")
            checks.append((f"{ZSTD1} read with the page cache dropped faster than uncompressed ({cn / cz:.2f}x)",
                           cz < cn, cn / cz))
        sums = {run["sum"] for name in self.runs if name.startswith(("compress read", "compress cold"))
                for run in self.runs[name]}
        assert len(sums) == 1, f"the compressed files read back different data: {sums}"
        return out

    def report_python(self, checks):
        """The Python package beside the C API on the same bytes, beside h5py (one process,
        written and fsynced, as h5tile.to_file returns with the data on disk) and beside
        legate.io.hdf5 on CPU where it can be imported."""
        print(f"\n{'Python (h5tile package, mpi4py)':34}{'GiB/s':>8}{'x C API':>9}{'x h5py':>9}   target")
        python = {}
        for kind in ("write", "read"):
            for r in self.ranks:
                name = f"{kind} python {r} ranks"
                rate = self.rate(name)
                x_c, x_h5py = rate / self.rate(f"{kind} h5tile {r} ranks"), rate / self.rate(f"{kind} h5py")
                python[name] = {"GiB_s": rate, "x_c_api": x_c, "x_h5py": x_h5py}
                checks.append((f"{name} within 5% of the C API ({x_c:.2f}x)", x_c >= 0.95, x_c))
                goal = ">= 0.95 x C API"
                if r == 1:
                    checks.append((f"{name} >= 1.0x h5py, 1 process ({x_h5py:.2f}x)", x_h5py >= 1.0, x_h5py))
                    goal += ", >= 1.0 x h5py"
                label = f"h5tile.{'to_file' if kind == 'write' else 'from_file'}, {r} rank{'s' if r > 1 else ''}"
                print(f"{label:34}{rate:8.2f}{x_c:9.2f}{x_h5py:9.2f}   {goal}")
        if self.legate_missing:
            print(f"legate.io.hdf5: not measured, it cannot be imported here ({self.legate_missing})")
            python["legate"] = {"skipped": self.legate_missing}
        else:
            for kind in ("write", "read"):
                rate, ours = self.rate(f"{kind} legate"), self.rate(f"{kind} python 1 ranks")
                python[f"{kind} legate"] = {"GiB_s": rate, "h5tile_x_legate": ours / rate}
                checks.append((f"{kind} python 1 rank >= 1.0x legate.io.hdf5 on CPU ({ours / rate:.2f}x)",
                               ours >= rate, ours / rate))
                print(f"{'legate.io.hdf5 ' + kind + ', CPU':34}{rate:8.2f}{'':>9}{rate / self.rate(kind + ' h5py'):9.2f}"
                      f"   h5tile.{'to_file' if kind == 'write' else 'from_file'} (1 rank) is {ours / rate:.2f}x it")
        return python

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
                 "single": "single (one file)"}
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
        for layout in ("subfiles", "subfiles-apart"):
            vds, sub = by.get(("vds", 16384)), by.get((layout, 16384))
            if vds and sub and "write_s" in vds and "write_s" in sub:
                x = sub["write_s"] / vds["write_s"]
                checks.append((f"16,384 tiles: {layout} write <= 2x the VDS write ({x:.2f}x)", x <= 2, x))
        return out

    def plot(self, scaling):
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


# Pairs of reads (checked, unchecked) a round measures in one process at each rank count.
READ_PAIRS = 5
# Reads of each compressed file a round (compression_step).
COMPRESSION_READS = 3
# h5py's whole reads of each file of the many tiles section (but the VDS layout's: once).
MANY_H5PY_READS = 3
# The ranks (a subfile each) of the many tiles section's "subfiles-g64" layout.
MANY_GROUPS = 64
# The many tiles section's writes of up to 4,096 tiles (the fastest counts: they are the base).
MANY_SHORT_WRITES = 3
# The many tiles section's measured reads of one tile (after one unmeasured) and whole reads.
MANY_TILE_READS = 5
MANY_WHOLE_READS = 3
# What each measurement of the many tiles section is called (its key in a row: key_s, key_rss_bytes).
MANY_WHAT = {"write": "write", "tile": "read one tile", "whole": "whole read", "ls": "ls", "ls_l": "ls -l",
             "check": "check --fast", "h5py": "h5py whole read"}

# Unsynced writes of each kind a round: their rounds scatter over 2-3x here (page allocation),
# and the target is on the fastest, so a few more of them make it steadier.
NOSYNC_TURNS = 2

# The solver section's measurements, each in a process of its own (bench_h5tile solver_KIND),
# taking turns: memcpy is the baseline the others are compared with.
SOLVER_KINDS = ("memcpy", "snapshot", "async", "write", "compute")
# Steps of ~10 ms the compute loop takes alone before the snapshot's drain, and again after it.
SOLVER_STEPS = 100
# The line H5TILE_LOG=info prints for each rank's snapshot (src/ops/snapshot.rs).
SNAPSHOT_LOG = re.compile(r"snapshot of '.*': ([\d.]+) MiB staged in host memory .*, ([\d.]+) MiB left in the "
                          r"caller's buffers.*\(budget ([\d.]+) MiB\)")

# What the compression section writes: label -> (H5TILE_COMPRESSION, shuffled).
ZSTD1 = "zstd:1 + shuffle"
# The layouts the checkpoint section writes (BENCH_LAYOUT of bench_h5tile).
CHECKPOINT_LAYOUTS = ("vds", "subfiles")
COMPRESSIONS = {"none": ("none", False), ZSTD1: ("zstd:1", True), "lz4 + shuffle": ("lz4", True),
                "deflate:1 + shuffle": ("deflate:1", True), "zstd:1": ("zstd:1", False)}

# bench_h5tile's BENCH_DATA=heat field, written by h5py with hdf5plugin's zstd after a shuffle
# in chunks of 1 MiB (whole rows), then fsynced.
H5PY_ZSTD_WRITE = r"""
import json, math, os, resource, sys, time
import numpy as np, h5py, hdf5plugin
path, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def profile(n):
    x, w = np.arange(n, dtype=np.float64), n / 32.0
    erf = np.vectorize(math.erf)
    return 0.5 * (erf((x - n / 3.0) / w) - erf((x - 2.0 * n / 3.0) / w))
data = (100.0 * profile(rows))[:, None] * profile(cols)[None, :]
t0 = time.perf_counter()
with h5py.File(path, "w") as f:
    f.create_dataset("data", data=data, chunks=(max(1, (1 << 20) // (cols * 8)), cols), shuffle=True,
                     **hdf5plugin.Zstd(clevel=1))
fd = os.open(path, os.O_RDONLY); os.fsync(fd); os.close(fd)
t = time.perf_counter() - t0
print(json.dumps({"seconds": t, "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

H5PY_WRITE = r"""
import json, os, resource, sys, time
import numpy as np, h5py
path, rows, cols, sync = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
data = (np.arange(rows * cols, dtype=np.int64) % 1000 * 0.5).reshape(rows, cols)
t0 = time.perf_counter()
with h5py.File(path, "w") as f:
    f.create_dataset("data", data=data)
if sync:
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
    bench.shim = sys.argv[4] if len(sys.argv) > 4 else os.path.join(os.path.dirname(binary), "libfault_shim.so")
    if bench.do_scale and not os.path.exists(bench.shim):
        sys.exit(f"bench: no fault shim at {bench.shim} to count the scale section's calls (BENCH_SCALE=0 skips it)")
    # The staged prefix: $(BUILD)/prefix beside $(BUILD)/bench/bench_h5tile.
    bench.tool = sys.argv[5] if len(sys.argv) > 5 else \
        os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(binary))), "prefix", "bin", "h5tile")
    if bench.wants("many_tiles") and not os.access(bench.tool, os.X_OK):
        sys.exit(f"bench: no h5tile command at {bench.tool} for the many tiles section (make stage installs it; "
                 f"BENCH_SECTIONS can leave the section out)")
    # mpirun keeps a few descriptors open per rank: the soft limit goes up to the hard one.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    os.makedirs(bench.dir, exist_ok=True)
    os.makedirs(out, exist_ok=True)
    bench.probe()
    if bench.wants("python"):
        bench.probe_legate()
    # mpi4py's PyPI wheel runs on either MPI: it is told which one the launcher starts.
    os.environ.setdefault("MPI4PY_LIBMPI", "libmpi.so.40" if bench.open_mpi else "libmpich.so.12")
    print(f"bench: {bench.bytes / GIB:.2f} GiB ({bench.rows}x{bench.cols} float64) in {bench.dir}, "
          f"{bench.rounds} rounds; sections: {', '.join(s for s in SECTIONS if s in bench.sections)}",
          file=sys.stderr)
    try:
        if bench.sections & set(ROUND_SECTIONS):
            for r in range(bench.rounds):
                print(f"round {r + 1}/{bench.rounds}", file=sys.stderr)
                bench.round(r)
        if bench.wants("tile_count"):
            print("tile count", file=sys.stderr)
            bench.tile_count()
        readers = [n for n in bench.runs if n.startswith(("read h5py", "read h5tile", "read subfiles", "read whole",
                                                          "read python", "read legate", "batched"))]
        sums = {run["sum"] for name in readers for run in bench.runs[name]}
        assert len(sums) == 1 or not readers, f"the contenders read different data: {sums}"
        grids = [n for n in bench.runs if n.startswith("open+read") and n.endswith(f"{bench.subfile_tiles} tiles")]
        grids += [n for n in bench.runs if n == f"open+read {bench.subfile_label()}"]
        sums = {run["sum"] for name in grids for run in bench.runs[name]}
        assert len(sums) <= 1, f"the grids of {bench.subfile_tiles} tiles read back different data: {sums}"
        if bench.wants("solver"):
            bench.solver()
        if bench.do_scale:
            print(f"scale ({', '.join(map(str, bench.scale_ranks))} ranks, one round)", file=sys.stderr)
            bench.scale()
        if bench.wants("many_tiles"):
            print(f"many tiles ({', '.join(map(str, bench.many_tiles))} tiles; {', '.join(bench.many_layouts)}; one "
                  f"round)", file=sys.stderr)
            bench.many_tiles_section()
        bench.report()
    finally:
        shutil.rmtree(bench.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
