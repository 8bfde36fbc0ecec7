"""The sections measured in BENCH_ROUNDS rounds (baselines, h5tile, unsynced, checkpoint,
compression, python, subfiles): one round of each, its contenders taking turns in an order
that shifts round by round, so the disk's drift is not handed to one of them."""
import os

from measure import Bench
from settings import (BATCHED_KINDS, BATCHED_PAIRS, CHECKPOINT_LAYOUTS, COMPRESSION_READS, COMPRESSIONS,
                      LEGATE_INTEROP_LAYOUTS, MIB, NOSYNC_TURNS, READ_PAIRS, ZSTD1)


class Rounds(Bench):
    def round(self, index):
        """Round `index` of every round section wanted: the baselines, each rank count's steps,
        then the overlap, checkpoint, compression and batched reads."""
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
            self.h5py("write h5py", "write", "h5py.h5", "1")
            self.h5py("read h5py", "read", "h5py.h5")
            self.remove("h5py-nosync.h5")
            os.sync()
            self.h5py("write h5py without fsync", "write", "h5py-nosync.h5", "0")
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
            self.batched_step()

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
        # The same data in the single-file layout, both read checked in one process, taking
        # turns: what the VDS layout's read costs beyond the bytes it reads.
        self.remove(f"single{r}.h5")
        os.sync()
        self.h5tile(f"write single {r} ranks", "write", f"single{r}.h5", ranks=r, env={"BENCH_LAYOUT": "single"})
        self.prewarm()
        for result in self.launch("read_pairs", self.path(f"tiled{r}.h5"), self.rows, self.cols,
                                  [READ_PAIRS, self.path(f"single{r}.h5")], ranks=r):
            layout = "vds" if result["kind"] == "file" else "single"
            self.record(f"read layouts {layout} {r} ranks", result)
        self.remove(f"single{r}.h5")

    def batched_step(self):
        """Batched reads (next and next_view) in each of BENCH_CHUNKS' chunk edges, at
        batched_ranks ranks from the file vds_step wrote with them: each in a launch of its own
        (its peak memory), with h5py reading the same chunks as many processes, taking turns,
        the order shifting round by round; then against a whole read into a buffer already
        touched (a solver's restart reads into memory it holds), all summing the data, in one
        process a chunk edge (batched_pairs)."""
        r, file = self.batched_ranks, f"tiled{self.batched_ranks}.h5"
        runs = [lambda c=c, kind=kind: self.h5tile(self.batched_label(kind, c),
                                                   "batched" if kind == "next" else "batched_view", file, [c],
                                                   ranks=r)
                for c in self.chunks for kind in BATCHED_KINDS]
        runs += [lambda c=c: self.h5py_batched(c, file) for c in self.chunks]
        turn = self.round_index % len(runs)
        for run in runs[turn:] + runs[:turn]:
            run()
        # The same reads again in one process a chunk edge, taking turns: launches differ by
        # more than the batched reads do from the whole one (a whole read moved 0.15-1.4 s from
        # launch to launch here), so the targets are judged on these; the launches above give
        # each mode's peak memory.
        for c in self.chunks:
            self.prewarm()
            for result in self.launch("batched_pairs", self.path(file), self.rows, self.cols,
                                      [BATCHED_PAIRS, c], ranks=r):
                self.record(self.batched_pairs_label(result["kind"], c), result)

    def h5py_batched(self, chunk, file):
        """h5py reading `file` in `chunk` x `chunk` chunks at batched_ranks processes, each its
        share as h5tile_batches deals them (h5py_contenders.py batched): the slowest process's
        time, the sum of their sums, the largest peak memory."""
        self.prewarm()
        results = self.launch("batched", self.path(file), self.rows, self.cols, [chunk],
                              ranks=self.batched_ranks, program=self.h5py_contenders)
        self.record(self.batched_label("h5py", chunk), {
            "seconds": max(x["seconds"] for x in results),
            "sum": sum(x["sum"] for x in results),
            "peak_rss_bytes": max(x["peak_rss_bytes"] for x in results)})

    def python_step(self, r):
        """The Python package over the same library: h5tile.to_file and from_file of the same
        row slabs as vds_step's C calls, under mpirun with mpi4py."""
        self.remove(f"python{r}.h5")
        os.sync()
        self.h5tile(f"write python {r} ranks", "h5tile_write", f"python{r}.h5", ranks=r, program=self.contenders)
        self.h5tile(f"read python {r} ranks", "h5tile_read", f"python{r}.h5", ranks=r, program=self.contenders)
        self.remove(f"python{r}.h5")

    def legate_step(self):
        """legate.io.hdf5 on CPU, one process, where it can be imported: a write, a read, and
        batched reads (from_file_batched) in each chunk edge of the batched reads."""
        self.remove("legate.h5")
        os.sync()
        legate = {"env": self.legate_env, "program": self.legate}
        self.h5tile("write legate", "legate_write", "legate.h5", **legate)
        self.h5tile("read legate", "legate_read", "legate.h5", **legate)
        if self.wants("h5tile"):
            for c in self.chunks:
                self.h5tile(self.batched_label("legate", c), "legate_batched", "legate.h5", [c], **legate)
        self.remove("legate.h5")
        if self.round_index == 0:
            self.legate_reads_ours()

    def legate_reads_ours(self):
        """Whether legate.io.hdf5 reads what h5tile writes: 1024 x 2048 float64 in 64 tiles
        from 2 ranks, in each layout (the subfiled one coalesced: both ranks' tiles in one
        file), read whole by Legate and by h5py, their sums compared (legate_interop)."""
        rows, cols = 1024, 2048
        for layout in [x for x in LEGATE_INTEROP_LAYOUTS if x != "subfiles" or self.has_subfiles]:
            file = f"interop-{layout}.h5"
            self.remove(file)
            env = {"BENCH_LAYOUT": layout, "BENCH_RANKS_PER_FILE": "2"}
            self.launch("write_grid", self.path(file), rows, cols, [64], ranks=2, env=env)
            legate = self.launch("legate_read", self.path(file), rows, cols, env=self.legate_env,
                                 program=self.legate)[-1]["sum"]
            h5py = self.launch("read", self.path(file), rows, cols, program=self.h5py_contenders)[-1]["sum"]
            self.legate_interop[layout] = {"legate_sum": legate, "h5py_sum": h5py}
            self.remove(file)

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
        self.h5py(f"compress write h5py {ZSTD1}", "write_zstd", "h5py-zstd.h5")
        self.stored[f"h5py {ZSTD1}"] = os.path.getsize(self.path("h5py-zstd.h5"))
        self.remove("h5py-zstd.h5")
        for i in range(len(COMPRESSIONS)):
            self.remove(f"compress{i}.h5")

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
