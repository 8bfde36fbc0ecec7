"""make bench: h5tile beside its baselines, measured side by side in one run.

Every figure is the median of BENCH_ROUNDS rounds, the measurements of a round interleaved,
each in a process of its own (so its peak memory is its own). Printed as a table of ratios to
the baselines, saved as target/bench/suite.json and drawn as target/bench/suite.png.

  baselines   raw sequential write (dd, fsync) and read (dd) of the same bytes; h5py writing
              (then fsync: h5tile_write returns with the data on disk) and reading the same
              array in one process; h5py writing without the fsync (what H5TILE_NO_SYNC
              compares with)
  h5tile      tiled write and read with each of BENCH_RANKS ranks (checked against unchecked,
              and against the same data in the single-file layout, in one process taking
              turns); batched reads (next and
              next_view) in C x C chunks for each C of BENCH_CHUNKS against a whole read into a
              buffer already touched (a solver's restart reads into memory it holds), all
              summing the data, at 2 ranks (BENCH_RANKS' first where it has no 2), taking turns
              in one process a chunk edge (each batched mode also launched alone for its peak
              memory, beside h5py reading the same chunks in as many processes);
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
  python      the Python package (bench/programs/python_contenders.py): h5tile.to_file and from_file
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

Knobs (environment): BENCH_GIB (1; fractions allowed), BENCH_ROUNDS (3), BENCH_RANKS (1,2,4),
BENCH_TILES (16,256,4096), BENCH_CHUNKS (1024,4096), BENCH_SUBFILE_TILES (4096), BENCH_SUBFILE_RANKS (64),
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
many_tiles, dask, legate (as above, and engines.py's; "h5tile" also holds the batched reads, the overlap and the peak memory),
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

Where each part lives (bench/):
  suite.py               this: main(), the sections in order, the reads' sums compared
  settings.py            the knobs (Settings), the sections and the counts the others share
  measure.py             Bench: how one measurement is made and recorded
  rounds.py              the steps of the sections measured in BENCH_ROUNDS rounds
  after_rounds.py        tile count, solver, scale and many tiles, measured after them
  engines.py             the dask and legate sections (measured last) and their tables
  rounds_tables.py       the tables and targets of the round sections
  after_rounds_tables.py those of the sections after the rounds
  report.py              the tables in order, the targets, suite.json and suite.png
  programs/              the Python programs run by path, each a process of its own (h5py's
                         contenders, the python section's, the prewarm's memory toucher)
  bench_h5tile.c         the C measurements (one mode a process), built by CMakeLists.txt
"""
import os
import resource
import shutil
import sys

from after_rounds import AfterRounds
from engines import Engines
from report import Report
from rounds import Rounds
from settings import GIB, ROUND_SECTIONS, SECTIONS


class Suite(Rounds, AfterRounds, Engines, Report):
    """The whole suite: the sections' measuring and the report, over one Bench's state."""


def main():
    binary, mpirun, out = sys.argv[1:4]
    bench = Suite(binary, mpirun, out)
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
    if bench.wants("python") or bench.wants("legate"):
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
        bench.engines_section()
        bench.report()
    finally:
        shutil.rmtree(bench.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
