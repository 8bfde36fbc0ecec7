"""What make bench measures and how much of it: the knobs read from the environment
(Settings), the sections, and the counts the measuring and the reports share (a table's
header names the same counts its measurements used)."""
import os
import sys

MIB = 1 << 20
GIB = 1 << 30

# The Python programs the suite runs by path, each a process of its own: the contenders take
# bench_h5tile's arguments (MODE FILE ROWS COLS ...), touch_memory.py a byte count.
PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def python_program(name):
    """The command that runs bench/programs/`name` with this Python."""
    return [sys.executable, os.path.join(PROGRAMS, name)]


# The sections BENCH_SECTIONS names, in the order they run and report.
SECTIONS = ("baselines", "h5tile", "unsynced", "checkpoint", "compression", "python", "subfiles", "tile_count",
            "solver", "scale", "many_tiles", "dask", "legate")
# Those measured in the rounds of BENCH_ROUNDS.
ROUND_SECTIONS = ("baselines", "h5tile", "unsynced", "checkpoint", "compression", "python", "subfiles")
# What a section's report compares against, run with it.
NEEDS = {"h5tile": ("baselines",), "python": ("h5tile",), "subfiles": ("h5tile", "unsynced")}

# Pairs of reads (checked, unchecked) a round measures in one process at each rank count.
READ_PAIRS = 5
# Reads of each compressed file a round (compression_step).
COMPRESSION_READS = 3
# h5py's whole reads of each file of the many tiles section (but the VDS layout's: once).
MANY_H5PY_READS = 3
# The ranks (a subfile each) of the many tiles section's "subfiles-g64" layout.
MANY_GROUPS = 64
# The many tiles section's "auto-n4": the default layout's write by this many ranks.
MANY_WRITERS = 4
# The many tiles section's writes of up to 4,096 tiles (the fastest counts: they are the base).
MANY_SHORT_WRITES = 3
# The many tiles section's measured reads of one tile (after one unmeasured) and whole reads.
MANY_TILE_READS = 5
MANY_WHOLE_READS = 3
# What each measurement of the many tiles section is called (its key in a row: key_s, key_rss_bytes).
MANY_WHAT = {"write": "write", "tile": "read one tile", "whole": "whole read", "ls": "ls", "ls_l": "ls -l",
             "check": "check --fast", "h5py": "h5py whole read"}

# The batched reads' targets by chunk edge, batched + sum against a whole read + sum into a
# buffer already touched (medians); edges not named here: BATCHED_TARGET.
BATCHED_TARGETS = {1024: 0.8, 4096: 0.9}
BATCHED_TARGET = 0.8
# The two ways a batched read hands out a chunk (bench_h5tile's batched and batched_view).
BATCHED_KINDS = ("next", "next_view")
# The layouts legate.io.hdf5 is asked to read, once, where it imports (python section).
LEGATE_INTEROP_LAYOUTS = ("vds", "subfiles", "single")
# Passes of each kind (whole, next, next_view) a round, in one process a chunk edge
# (bench_h5tile batched_pairs).
BATCHED_PAIRS = 3

# Unsynced writes of each kind a round: their rounds scatter over 2-3x here (page allocation),
# and the target is on the fastest, so a few more of them make it steadier.
NOSYNC_TURNS = 2

# The solver section's measurements, each in a process of its own (bench_h5tile solver_KIND),
# taking turns: memcpy is the baseline the others are compared with.
SOLVER_KINDS = ("memcpy", "snapshot", "reserved", "async", "write", "compute")
# Steps of ~10 ms the compute loop takes alone before the snapshot's drain, and again after it.
SOLVER_STEPS = 100

# The layouts the checkpoint section writes (BENCH_LAYOUT of bench_h5tile).
CHECKPOINT_LAYOUTS = ("vds", "subfiles")
# What the compression section writes: label -> (H5TILE_COMPRESSION, shuffled).
ZSTD1 = "zstd:1 + shuffle"
COMPRESSIONS = {"none": ("none", False), ZSTD1: ("zstd:1", True), "lz4 + shuffle": ("lz4", True),
                "deflate:1 + shuffle": ("deflate:1", True), "zstd:1": ("zstd:1", False)}


def env_list(name, default):
    return [int(x) for x in os.environ.get(name, default).split(",") if x.strip()]


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


class Settings:
    """The knobs (suite.py's docstring lists them with their defaults), read once: the
    measuring sizes its runs by them and the reports name them in their headers."""

    def __init__(self, out):
        self.gib = float(os.environ.get("BENCH_GIB", "1"))
        self.rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
        self.ranks = env_list("BENCH_RANKS", "1,2,4")
        self.tiles = env_list("BENCH_TILES", "16,256,4096")
        self.chunks = env_list("BENCH_CHUNKS", "1024,4096")
        # The batched reads and the whole read they are compared with: 2 ranks (issue 49's
        # target) where BENCH_RANKS has 2, else its first.
        self.batched_ranks = 2 if 2 in self.ranks else self.ranks[0]
        self.dir = os.environ.get("BENCH_DIR", os.path.join(out, "data"))
        self.cols = 16384
        self.rows = int(self.gib * GIB) // 8 // self.cols
        self.bytes = self.rows * self.cols * 8
        self.subfile_tiles = int(os.environ.get("BENCH_SUBFILE_TILES", "4096"))
        self.subfile_ranks = int(os.environ.get("BENCH_SUBFILE_RANKS", "64"))
        self.sections = sections_from_env()
        self.do_scale = os.environ.get("BENCH_SCALE", "1") not in ("0", "") and self.wants("scale")
        self.scale_ranks = env_list("BENCH_SCALE_RANKS", "16,64,256")
        self.scale_tile_kib = int(os.environ.get("BENCH_SCALE_TILE_KIB", "1024"))
        self.checkpoint_ranks = int(os.environ.get("BENCH_CHECKPOINT_RANKS", "4"))
        self.compression_ranks = int(os.environ.get("BENCH_COMPRESSION_RANKS", "2"))
        self.solver_gib = float(os.environ.get("BENCH_SOLVER_GIB", "1"))
        self.solver_rounds = int(os.environ.get("BENCH_SOLVER_ROUNDS", "5"))
        self.solver_ranks = env_list("BENCH_SOLVER_RANKS", "1,2")
        self.solver_calls = int(os.environ.get("BENCH_SOLVER_CALLS", "4"))
        self.solver_rss_mib = int(os.environ.get("BENCH_SOLVER_RSS_MIB", "256"))
        self.solver_rss_snapshots = int(os.environ.get("BENCH_SOLVER_RSS_SNAPSHOTS", "100"))
        self.solver_tile_rows = max(1, int(self.solver_gib * GIB) // 8 // self.cols)  # a rank's
        self.many_tiles = env_list("BENCH_MANY_TILES", "1024,4096,16384,65536")
        self.many_layouts = [x.strip() for x in os.environ.get(
            "BENCH_MANY_TILES_LAYOUTS", "auto,auto-n4,vds,subfiles,subfiles-apart,subfiles-g64,single").split(",")
                             if x.strip()]
        self.many_h5py_max = int(os.environ.get("BENCH_MANY_TILES_H5PY_MAX", "16384"))

    def wants(self, section):
        return section in self.sections

    def subfile_label(self):
        return f"{self.subfile_tiles} tiles in {self.subfile_ranks} subfiles"

    def batched_pairs_label(self, kind, chunk):
        """A pass of bench_h5tile batched_pairs: "whole", or a batched read of `kind`."""
        return f"batched pairs {kind} {chunk}x{chunk} {self.batched_ranks} ranks"

    def batched_label(self, kind, chunk):
        """A batched read of `kind` (BATCHED_KINDS, or "h5py": h5py's slices, or "legate":
        legate.io.hdf5's from_file_batched) in `chunk` x `chunk` chunks, launched."""
        if kind == "legate":
            return f"batched legate {chunk}x{chunk} 1 process"
        view = {"next": "", "next_view": " view", "h5py": " h5py"}[kind]
        return f"batched{view} {chunk}x{chunk} {self.batched_ranks} ranks"
