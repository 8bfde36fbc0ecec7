"""Fault injection and durability order of h5tile's writes, with real files and real ranks.

usage: fault_injection.py SHIM FAULT_WRITE LAUNCHER SCRATCH CASE...
  CASE is LAYOUT-MODE-RANKS[-keep][-root][-nosync][-gK][-after][-CODEC][-snap]: LAYOUT vds,
  single, subfiles or auto (the default, H5TILE_LAYOUT_AUTO: two tiles a rank, so a subfile a
  rank), MODE write, async or fence (how the write completes), RANKS the number of
  processes (1: no launcher, MPI_COMM_NULL); keep: H5TILE_KEEP_OTHERS beside another dataset;
  root: the faults hit rank 0 (which writes the master and commits) instead of the last rank;
  nosync: H5TILE_NO_SYNC; gK: H5TILE_RANKS_PER_FILE=K for the subfiles' groups (default: all
  the ranks, one node, one subfile); after: only the calls from the commit (the master's
  rename) on fail (those before it are a write's, failed in turn by other cases); CODEC zstd,
  lz4 or deflate: every write compresses its tiles so, after the byte shuffle (checked with
  `h5tile ls` of the tile files, which must all be chunked). MODE kill:
  instead of failing calls, the write is killed (SIGKILL, the process alone or, with several
  ranks, one rank, after which the launcher ends the others) at KILLS random moments of its
  run. MODE full: the case's folder is a 1 MiB tmpfs (skipped, and said, where mounting is not
  permitted) and version 2 is too large for it: a real ENOSPC. MODE ckpt: as write, of a
  checkpoint of several fields (/data, /aux/count and a file attribute, h5tile_checkpoint_*),
  which must stay or go together; its removes (unlink, rmdir) fail in turn too.
  Series (a folder of checkpoints of several fields, keep_last 2 and keep_every 3; fault_write
  says what is written): MODE series: steps 1 to 5 are committed, then the commit of step 6
  (which records it as the latest and prunes step 4) is recorded and repeated with each of
  its calls failing in turn, as for write (removes too); MODE seriescrash: the same commit
  killed (SIGKILL, by the shim) at each of those calls in turn; MODE serieskill: runs of 4
  commits killed at random moments, each followed by the restart's commit of the step after
  the latest.
  snap (the asynchronous modes only: async, fence, kill, ckpt and the series modes): every
  write is a snapshot (H5TILE_SNAPSHOT, fault_write's FAULT_WRITE_SNAPSHOT=1); kill's writes are
  then async ones, and checkpoints and series steps are committed with
  h5tile_checkpoint_commit_async and h5tile_wait. As soon as each call returns, fault_write
  overwrites the buffers it gave with version 99, before it waits: the checks below (version 1
  or 2 whole, never a mixture nor another version) then also show that no write read them
  after its call. Each clean write must log (H5TILE_LOG=info) one snapshot per rank and commit:
  staged, so the write really ran in the background. Kills fall after the target rank's
  first snapshot call returned (the timed span too starts there, and shrinks to any run that
  ended before its kill), and the summary says how many fell while a write drained (its call
  returned, its wait not yet, as fault_write's marks say).

For each case: version 1 of the dataset is written; a clean write of version 2 is recorded by
the fault_shim preload (every file creation, write, fsync, rename and removal under the case's
folder), and its order checked: every new file (tile files, subfiles, the new master) synced
after its last write by any rank, then the tile folder and the master's folder, all before
the rename that commits, and the master's folder synced after it; with nosync, not one fsync,
and still the one rename that commits. A clean write of the subfiles layout leaves one subfile
per group, named after the group's first rank. Then, starting each time from version 1, the
write of version 2 is repeated with the N-th call of each kind made to fail (ENOSPC or EIO, in
turn), for every N that write makes (on the last rank, where there are several; rank 0 with
-root). Each must
  - report the same status on every rank: H5TILE_OK only if the failed call did not matter
    (so far only the removal of a folder that holds files or was never made, which fails
    anyway), otherwise H5TILE_ERR_IO whose message starts with the OS reason;
  - leave version 1 whole and readable (version 2, when the message says the new dataset is
    in place: a failure after the commit), and the other dataset of a kept file intact;
  - leave nothing that the next successful write does not remove: after a clean write of
    version 3, the folder holds exactly what a clean write leaves.
A write that fills the disk must fail on every rank with H5TILE_ERR_IO, "No space left on
device" first, and remove what it wrote, so the disk is as full as before.
A killed write must leave version 1 or version 2 whole (never an error, never a mixture), the
other dataset intact, and nothing the next write does not remove.
A write that failed and did not say the new version is in place must leave the folder as it
was, byte for byte (the file being replaced untouched); for checkpoints (ckpt, series) the next
write then is not repeated: the clean write from that state is checked once.
In a series, after every failure and kill: h5tile_series_latest names a checkpoint whose every
field reads back as that step (the previous step, or the new one when the message says it
was committed; for a kill, any step not older than the latest before the run), every other
master in the folder reads back whole as its own step, and `h5tile check DIR` (the tool in
$H5TILE_TOOL, where set) checks that step, names exactly the steps that have leftovers but no
master as incomplete, and exits 0. The next clean commit then leaves exactly the checkpoints
the retention rule keeps (the newest 2, every 3rd step, the latest) with tile folders as a
clean commit leaves them, the record naming it, and no temporary or leftover of any step.
The durable order of a series commit: the checkpoint committed as a write is, then its record
written, synced and renamed into place, the folder synced, then the pruned checkpoints
removed, each master before its tile files.
Random choices (the moments of kills) come from a seed printed first: FAULT_INJECTION_SEED=N
in the environment replays them. FAULT_INJECTION_SCALE=F multiplies the number of random kills
(24 a case alone, 12 with several ranks; runs of series commits 16 and 6): 1, the default, is
what CI runs.
"""
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

# FAULT_INJECTION_SCALE (default 1: the counts CI runs, the ones that found the bugs so far)
# multiplies the random kills of a case: 0.25 for a quick look, 4 for a soak before a release.
SCALE = float(os.environ.get("FAULT_INJECTION_SCALE") or 1)
if not SCALE > 0:
    sys.exit(f"fault_injection: FAULT_INJECTION_SCALE={SCALE}: it must be a number above 0")


def scaled(count):
    """`count` kills at FAULT_INJECTION_SCALE, at least one."""
    return max(1, round(count * SCALE))


KILLS = scaled(24)
REASONS = {"ENOSPC": "No space left on device", "EIO": "Input/output error"}
GEN = re.compile(r"[0-9a-f]{16}")
KINDS = ("create", "write", "fsync", "rename")
# A write's lock file, `.<name>.<generation>.lock` beside the master (layout/in_flight.rs).
LOCK_FILE = re.compile(r"\..+\.[0-9a-f]{16}\.lock")
CODECS = ("zstd", "lz4", "deflate")
# The modes whose writes fault_write makes asynchronously with -snap (kill: async writes).
SNAP_MODES = ("async", "fence", "kill", "ckpt", "series", "seriescrash", "serieskill")
# The series fault_write writes: its retention, the steps committed before the one under test.
KEEP_LAST, KEEP_EVERY, SERIES_SETUP = 2, 3, 5
# Commits per run of the random kills of a series, and how many such runs are killed (alone,
# and with several ranks).
SERIES_RUN, SERIES_KILLS = 4, (scaled(16), scaled(6))
SEED = int(os.environ.get("FAULT_INJECTION_SEED") or random.SystemRandom().randrange(1 << 32))
CKPT = re.compile(r"ckpt\.(\d+)\.h5$")


def retained(steps, latest):
    """Which of the complete `steps` the retention rule keeps once `latest` committed: the
    newest KEEP_LAST, every KEEP_EVERY-th, and none newer than `latest` is removed."""
    newest_first = sorted(set(steps), reverse=True)
    return sorted(s for i, s in enumerate(newest_first)
                  if i < KEEP_LAST or s % KEEP_EVERY == 0 or s >= latest)


def tree(top):
    """{path relative to `top`: sha256 of a file's bytes, or "/" for a folder}."""
    found = {}
    for root, dirs, files in os.walk(top):
        for d in dirs:
            found[os.path.relpath(os.path.join(root, d), top)] = "/"
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                found[os.path.relpath(os.path.join(root, f), top)] = \
                    hashlib.sha256(fh.read()).hexdigest()
    return found


class Case:
    def __init__(self, spec, shim, program, launcher, scratch):
        parts = spec.split("-")
        self.layout, self.mode, self.ranks = parts[0], parts[1], int(parts[2])
        self.keep = "keep" in parts[3:]
        self.target = 0 if "root" in parts[3:] else self.ranks - 1
        self.nosync = "nosync" in parts[3:]
        self.after = "after" in parts[3:]
        # What every run of the program gets in its environment (the launcher passes it on).
        self.env = {"FAULT_WRITE_NO_SYNC": "1"} if self.nosync else {}
        for p in parts[3:]:
            if re.fullmatch(r"g\d+", p):
                self.env["H5TILE_RANKS_PER_FILE"] = p[1:]
        self.codec = next((p for p in parts[3:] if p in CODECS), None)
        if self.codec:
            self.env["FAULT_WRITE_COMPRESSION"] = self.codec
        self.snap = "snap" in parts[3:]
        if self.snap:
            if self.mode not in SNAP_MODES:
                sys.exit(f"fault_injection: {spec}: -snap needs an asynchronous mode "
                         f"({', '.join(SNAP_MODES)}); {self.mode} writes synchronously")
            self.env["FAULT_WRITE_SNAPSHOT"] = "1"
        self.name = spec
        self.shim, self.program, self.launcher = shim, program, launcher
        self.dir = os.path.join(scratch, spec)
        self.path = os.path.join(self.dir, "out", "field.h5")
        self.problems = []
        # Versions: the one on disk, the one whose write is under test, the next clean one.
        self.old, self.new, self.next = 1, 2, 3
        self.series = self.mode in ("series", "seriescrash", "serieskill")
        if self.mode == "ckpt" or self.series:
            self.env["FAULT_WRITE_FIELDS"] = "1"
        if self.series:
            self.path = os.path.join(self.dir, "out", "series")
            self.old, self.new, self.next = SERIES_SETUP, SERIES_SETUP + 1, SERIES_SETUP + 2
        self.rng = random.Random(f"{SEED}:{spec}")

    def run(self, mode, version, env=None, ranks=None):
        ranks = self.ranks if ranks is None else ranks
        mode = "series" if self.series and mode != "check" else mode
        cmd = [self.program, mode, self.path, self.layout, str(int(self.keep)), str(version)]
        if ranks > 1:
            cmd = [self.launcher, "-n", str(ranks)] + cmd
        full = dict(os.environ)
        full.update(self.env)
        full.update(env or {})
        out = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=120)
        return out.stdout.splitlines(), out.stderr

    def shim_env(self, log, fail=None):
        env = {"LD_PRELOAD": self.shim, "H5TILE_SHIM_UNDER": self.dir, "H5TILE_SHIM_LOG": log}
        if fail:
            env["H5TILE_SHIM_FAIL"] = fail
            env["H5TILE_SHIM_RANK"] = str(self.target)
        return env

    def statuses(self, lines):
        """{rank: (status, message)} from the program's lines."""
        got = {}
        for line in lines:
            m = re.match(r"rank (\d+): (\w+): ?(.*)$", line)
            if m:
                got[int(m.group(1))] = (m.group(2), m.group(3))
        return got

    def check(self, expect_versions, what):
        """The dataset (of a series: the latest checkpoint, each field) is whole, of one of
        `expect_versions`; returns the program's lines."""
        lines, err = self.run("check", 0, ranks=1)
        text = "\n".join(lines)
        if self.series:
            latest = [int(line.split()[1]) for line in lines if re.fullmatch(r"latest \d+", line)]
            whole = latest and f"version {latest[0]}" in lines
            if not whole or latest[0] not in expect_versions:
                self.problems.append(f"{what}: expected the latest step to be one of "
                                     f"{expect_versions} and read back whole, read: {text} {err}")
            # Every other master present is a whole checkpoint of its own step.
            for line in lines:
                m = re.match(r"step (\d+): (.*)$", line)
                if m and m.group(2) != f"version {m.group(1)}":
                    self.problems.append(f"{what}: checkpoint {line}")
            return lines
        if not any(f"version {v}" in lines for v in expect_versions):
            self.problems.append(f"{what}: expected version {expect_versions}, read: {text} {err}")
        if self.keep and "other intact" not in lines:
            self.problems.append(f"{what}: the other dataset: {text}")
        return lines

    def check_compressed(self, what):
        """With a codec: every dataset of every tile file and subfile is chunked (h5tile
        chunks only the tiles it compresses), as `h5tile ls --json` (H5TILE_TOOL) says."""
        if not self.codec:
            return
        tool = os.environ.get("H5TILE_TOOL")
        if not tool:
            self.problems.append(f"{what}: H5TILE_TOOL is not set: cannot check that the tiles "
                                 f"are compressed with {self.codec}")
            return
        files = sorted(os.path.join(root, f) for root, _, names in os.walk(self.dir)
                       for f in names if os.path.basename(root).endswith(".h5.tiles"))
        if not files:
            self.problems.append(f"{what}: no tile files under {self.dir}")
        for f in files:
            out = subprocess.run([tool, "ls", "--json", f], capture_output=True, text=True,
                                 timeout=120)
            try:
                storage = [d["storage"] for d in json.loads(out.stdout)["datasets"]]
            except (ValueError, KeyError, TypeError):
                storage = [f"h5tile ls: {out.stdout} {out.stderr}"]
            if not storage or any(s != "chunked" for s in storage):
                self.problems.append(f"{what}: {f} is not compressed: {storage}")

    def listing(self):
        """What the case's folder holds, generations masked."""
        names = []
        for root, dirs, files in os.walk(os.path.join(self.dir, "out")):
            rel = os.path.relpath(root, self.dir)
            names += [GEN.sub("G", os.path.join(rel, f)) for f in files]
            names += [GEN.sub("G", os.path.join(rel, d)) + "/" for d in dirs]
        return sorted(names)

    def write_ok(self, version, what, env=None):
        env = dict(env or {})
        if self.snap:
            env["H5TILE_LOG"] = "info"
        lines, err = self.run(self.mode, version, env)
        st = self.statuses(lines)
        if len(st) != self.ranks or any(s != "H5TILE_OK" for s, _ in st.values()):
            self.problems.append(f"{what}: write of version {version} failed: {lines} {err}")
        elif self.snap:
            # Each rank logs each snapshot it stages: none would mean that the writes ran
            # before their calls returned, and that the case tested nothing. (Only the message
            # is counted: the ranks' lines can be cut into each other around it.)
            calls = int(env.get("FAULT_WRITE_STEPS") or 1)
            staged = err.count("snapshot of '")
            if staged != calls * self.ranks:
                self.problems.append(f"{what}: {staged} snapshots logged, expected one per rank "
                                     f"and commit ({calls * self.ranks}): {err}")

    def execute(self):
        snap = self.dir + ".v1"
        for d in (self.dir, snap):
            shutil.rmtree(d, ignore_errors=True)
        os.makedirs(self.dir)
        if self.mode == "kill":
            self.mode = "async" if self.snap else "write"
            return self.kills(snap)
        if self.mode == "serieskill":
            return self.series_kills()
        if self.mode == "full":
            self.mode = "write"
            return self.full()
        if self.series:
            self.write_ok(1, "setup", {"FAULT_WRITE_STEPS": str(self.old)})
        else:
            self.write_ok(self.old, "setup")
        self.check([self.old], "setup")
        self.check_compressed("setup")
        shutil.copytree(self.dir, snap, symlinks=True)

        # The clean reference: version 2 over version 1, recorded, then version 3.
        log = os.path.join(self.dir + ".log")
        if os.path.exists(log):
            os.remove(log)
        self.write_ok(self.new, "recorded write", self.shim_env(log))
        self.check([self.new], "recorded write")
        self.check_compressed("recorded write")
        if not os.path.exists(log):
            self.problems.append(f"the recorded write left no record in {log}: is {self.shim} "
                                 "preloaded into the ranks?")
            return
        with open(log) as f:
            record = [line.split() for line in f]
        self.check_order(record)
        if self.series:
            clean = self.series_clean("after the recorded write", self.next)
        else:
            self.write_ok(self.next, "clean write")
            clean = self.listing()
            self.check_clean(clean)

        counts, before_commit = {}, set()
        master = os.path.basename(self.master())
        committed = False
        for rec in record:
            committed |= rec[1] == "rename" and os.path.basename(rec[3]) == master
            if int(rec[0]) == self.target:
                counts[rec[1]] = counts.get(rec[1], 0) + 1
                if not committed:
                    before_commit.add((rec[1], counts[rec[1]]))
        # A checkpoint's removes (stale tiles; a series' pruning) fail in turn too.
        checkpoints = self.mode in ("ckpt", "series", "seriescrash")
        kinds = KINDS + (("remove",) if checkpoints else ())
        if checkpoints:
            # The next clean write over the state before: after a failure that left the folder
            # byte for byte as it was, it is not repeated (it would do the same).
            self.restore(snap)
            self.next_write_cleans("no failure", clean)
        runs = 0
        for kind in kinds:
            for n in range(1, counts.get(kind, 0) + 1):
                if self.after and (kind, n) in before_commit:
                    continue
                err = "ENOSPC" if (n + len(kind)) % 2 else "EIO"
                if self.mode == "seriescrash":
                    self.crash(snap, kind, n, clean)
                else:
                    self.inject(snap, kind, n, err, clean)
                runs += 1
        shutil.rmtree(snap, ignore_errors=True)
        summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in kinds)
        done = "killed at" if self.mode == "seriescrash" else "failing"
        which = ", from the commit on" if self.after else ""
        print(f"{self.name}: {runs} writes each {done} one call ({summary} on rank {self.target}"
              f"{which})")

    def kills(self, snap):
        """Writes of version 2 over version 1 killed at random moments (with -snap, after the
        call returned: while the write drains, or once it has)."""
        self.write_ok(1, "setup")
        self.check_compressed("setup")
        shutil.copytree(self.dir, snap, symlinks=True)
        ready = self.dir + ".ready"
        span = self.timed_write(ready)
        self.check_compressed("timed write")
        self.write_ok(3, "clean write")
        clean = self.listing()
        self.check_clean(clean)
        rng = self.rng
        seen = {1: 0, 2: 0}
        draining = 0
        for k in range(KILLS if self.ranks == 1 else max(1, KILLS // 2)):
            shutil.rmtree(self.dir, ignore_errors=True)
            shutil.copytree(snap, self.dir, symlinks=True)
            delay = rng.uniform(0, span)
            what = f"write killed after {delay * 1000:.0f} ms"
            proc = self.start_write(ready)
            self.wait_ready(ready, proc)
            time.sleep(delay)
            self.kill_and_reap(proc, what)
            draining += bool(self.draining(ready))
            if self.snap:
                # The timed drain can be several times a typical one (a cold start, a busy
                # machine): a write that drained before its kill sets the span the next kills
                # draw from, so that most fall while a write drains.
                span = min(span, self.took(ready) or span)
            lines = self.check([1, 2], what)
            for v in (1, 2):
                seen[v] += f"version {v}" in lines
            self.next_write_cleans(what, clean)
        shutil.rmtree(snap, ignore_errors=True)
        drain = self.drain_summary(draining)
        after = " after its call returned" if self.snap else ""
        print(f"{self.name}: {seen[1] + seen[2]} writes killed at random moments (a write takes "
              f"{span * 1000:.0f} ms{after}{drain}): {seen[1]} left version 1, {seen[2]} "
              f"version 2, all whole")

    def took(self, ready):
        """How long the target rank's run took from its ready mark to its done mark (at least
        1 ms), None if it did not get there."""
        marks = [os.path.join(ready, f"{m}.{self.target}") for m in ("ready", "done")]
        if not all(map(os.path.exists, marks)):
            return None
        return max(os.stat(marks[1]).st_mtime - os.stat(marks[0]).st_mtime, 0.001)

    def draining(self, ready):
        """With -snap, after a kill: the versions (steps) whose snapshot call had returned on
        the target rank and whose wait had not, its marks in `ready` say: the writes it was
        killed while they drained in the background."""
        names = os.listdir(ready) if self.snap and os.path.isdir(ready) else []

        def marked(kind):
            found = (re.fullmatch(rf"{kind}\.(\d+)\.{self.target}", n) for n in names)
            return {int(m.group(1)) for m in found if m}
        return sorted(marked("returned") - marked("drained"))

    def drain_summary(self, draining):
        """With -snap, for the summary line: how many kills fell while a write drained. (Not
        checked: a run quicker than the span drawn from ends before its kill, and with a few
        kills all can by chance; that the writes ran in the background is checked, by the
        snapshots each clean write logs.)"""
        return f"; {draining} killed while a snapshot drained" if self.snap else ""

    def check_clean(self, clean):
        """What a clean write of the subfiles layout leaves (and of the default, auto, whose two
        tiles a rank give a subfile a rank): the master, and in its tile folder one subfile per
        group of ranks (H5TILE_RANKS_PER_FILE, else all of them; auto: one), named
        <dataset>.<generation>.s<the group's first rank>.h5, for /data; kept beside it, /other,
        whose only tile is rank 0's: one subfile, s0 (a group without tiles has none). A
        checkpoint's subfile holds all its fields, named after the first (/aux/count)."""
        if self.layout not in ("subfiles", "auto"):
            return
        # The default (auto), two tiles a rank on one node: a subfile a rank.
        k = int(self.env.get("H5TILE_RANKS_PER_FILE", 1 if self.layout == "auto" else self.ranks))
        first = "aux+count" if self.mode == "ckpt" else "data"
        want = ["out/field.h5", "out/field.h5.tiles/"]
        want += [f"out/field.h5.tiles/{first}.G.s{r}.h5" for r in range(0, self.ranks, k)]
        if self.keep:
            want.append("out/field.h5.tiles/other.G.s0.h5")
        if clean != sorted(want):
            self.problems.append(f"a clean write left {clean}, expected {sorted(want)}")

    def next_write_cleans(self, what, clean):
        """After `what`, a successful write of version 3 leaves exactly `clean` (of a series:
        the commit of the next step leaves what series_clean says)."""
        if self.series:
            return self.series_clean(f"after {what}", self.next, clean)
        self.write_ok(3, f"after {what}")
        self.check([3], f"after {what}")
        if self.listing() != clean:
            self.problems.append(f"{what}: after the next write the folder holds "
                                 f"{self.listing()}, a clean write leaves {clean}")

    def full(self):
        """A real full disk: a small tmpfs and a version 2 too large for it."""
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", self.dir],
                                 capture_output=True, text=True)
        if mounted.returncode != 0:
            print(f"{self.name}: SKIPPED: cannot mount a small tmpfs here "
                  f"({mounted.stderr.strip()})")
            return
        try:
            self.write_ok(1, "setup")
            self.check([1], "setup")
            before = self.listing()
            lines, err = self.run("write", 2, {"FAULT_WRITE_ROWS": "65536"})
            st = self.statuses(lines)
            reason = REASONS["ENOSPC"]
            if len(st) != self.ranks or {c for c, _ in st.values()} != {"H5TILE_ERR_IO"}:
                self.problems.append(f"full disk: expected H5TILE_ERR_IO on every rank: {lines} {err}")
            elif not any(m.startswith(reason) for _, m in st.values()):
                self.problems.append(f"full disk: no rank's message starts with '{reason}': {st}")
            self.check([1], "full disk")
            if self.listing() != before:
                self.problems.append(f"full disk: the failed write left {self.listing()}, "
                                     f"before it {before}")
            self.next_write_cleans("the full disk", before)
            reported = st.get(self.ranks - 1, ("?", "?"))[1][:120]
            print(f"{self.name}: a write too large for a 1 MiB file system failed on every rank "
                  f"and left nothing ({reported}...)")
        finally:
            subprocess.run(["umount", self.dir], capture_output=True)

    def start_write(self, ready, version=2, more_env=None):
        """Starts the write of `version` (of a series, the commit of that step and those
        FAULT_WRITE_STEPS in `more_env` says), which marks its start in the folder `ready`."""
        shutil.rmtree(ready, ignore_errors=True)
        os.makedirs(ready)
        mode = "series" if self.series else self.mode
        cmd = [self.program, mode, self.path, self.layout, str(int(self.keep)), str(version)]
        if self.ranks > 1:
            cmd = [self.launcher, "-n", str(self.ranks)] + cmd
        env = dict(os.environ, FAULT_WRITE_READY_DIR=ready, **self.env, **(more_env or {}))
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)

    def wait_ready(self, ready, proc):
        """Waits until the target rank is about to write (with -snap: until its first snapshot
        call has returned, the write draining in the background), or the run has ended."""
        mark = os.path.join(ready, f"ready.{self.target}")
        while not os.path.exists(mark) and proc.poll() is None:
            time.sleep(0.0005)

    def timed_write(self, ready, version=2, more_env=None):
        """How long the write itself takes on the target rank."""
        proc = self.start_write(ready, version, more_env)
        self.wait_ready(ready, proc)
        start = time.monotonic()
        done = os.path.join(ready, f"done.{self.target}")
        while not os.path.exists(done) and proc.poll() is None:
            time.sleep(0.0005)
        span = time.monotonic() - start
        proc.wait(timeout=120)
        return span

    def kill_and_reap(self, proc, what):
        """`kill_rank`, then waits for the launcher to end (a problem when it does not)."""
        self.kill_rank(proc)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.problems.append(f"{what}: the launcher did not end after a rank was killed")

    def kill_rank(self, proc):
        """SIGKILL to the process alone, or to the target rank under a launcher."""
        if self.ranks == 1:
            proc.send_signal(signal.SIGKILL)
            return
        # The ranks: processes running the program on this case's path, found by their
        # command line; the target is the one whose launcher-given rank matches.
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
            except OSError:
                continue
            rank = env.get(b"OMPI_COMM_WORLD_RANK", env.get(b"PMI_RANK"))
            if (argv[0] == self.program.encode() and self.path.encode() in argv
                    and rank == str(self.target).encode()):
                os.kill(int(pid), signal.SIGKILL)
                return
        # Not started yet, or already done: kill the launcher instead.
        proc.send_signal(signal.SIGKILL)

    def check_after(self, versions, what):
        if self.series:
            self.after_kill(what, versions)
        else:
            self.check(versions, what)

    def restore(self, snap):
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.copytree(snap, self.dir, symlinks=True)

    def inject(self, snap, kind, n, err, clean):
        what = f"{kind} #{n} failing with {err}"
        self.restore(snap)
        log = self.dir + ".fail.log"
        if os.path.exists(log):
            os.remove(log)
        lines, stderr = self.run(self.mode, self.new, self.shim_env(log, f"{kind}:{n}:{err}"))
        failed = []
        if os.path.exists(log):
            with open(log) as f:
                failed = [l.split() for l in f if l.split()[1:2] == ["fail"]]
        st = self.statuses(lines)
        if len(st) != self.ranks:
            self.problems.append(f"{what}: {self.ranks} ranks, {len(st)} reported: {lines} {stderr}")
            return
        codes = {s for s, _ in st.values()}
        if len(codes) != 1:
            self.problems.append(f"{what}: ranks disagree: {st}")
            return
        code = codes.pop()
        if not failed:
            self.problems.append(f"{what}: the call was never made (the write is not repeatable)")
            return
        what += f" ({failed[0][3]})"
        # Removing a folder that still holds files, or one never made, fails anyway: such a
        # failure cannot matter.
        gone = failed[0][3]
        was = os.path.join(snap, os.path.relpath(gone, os.path.realpath(self.dir)))
        harmless = kind == "remove" and (
            (os.path.isdir(gone) and os.listdir(gone)) or
            not os.path.lexists(gone) and not os.path.lexists(was) or
            # A lock file left behind is no data; the next write's cleanup removes it.
            LOCK_FILE.fullmatch(os.path.basename(gone)) is not None)
        if code == "H5TILE_OK":
            if not harmless:
                self.problems.append(f"{what}: the write reported success after a failed {kind}")
            self.check_after([self.new], what)
        else:
            reason = REASONS[err]
            failing = st[self.target][1]
            if code != "H5TILE_ERR_IO" or not failing.startswith(reason):
                self.problems.append(f"{what}: rank {self.target} got {code}: '{failing}', "
                                     f"expected H5TILE_ERR_IO starting '{reason}'")
            for r, (_, msg) in st.items():
                if reason not in msg:
                    self.problems.append(f"{what}: rank {r} message lacks the OS reason: '{msg}'")
            # After the commit point the message says so (a series' record or pruning: the
            # step "was committed").
            in_place = "the new dataset is in place" in failing or (
                self.series and f"after step {self.new} of series" in failing
                and "was committed" in failing)
            self.check_after([self.new] if in_place else [self.old], what)
            if not in_place:
                # The old set whole: the file being replaced, its tiles and (in a series) every
                # checkpoint and the record, byte for byte, and nothing left beside them.
                before = tree(os.path.join(snap, "out"))
                after = tree(os.path.join(self.dir, "out"))
                if before != after:
                    changed = sorted(k for k in set(before) | set(after)
                                     if before.get(k) != after.get(k))
                    self.problems.append(f"{what}: failed before its commit, yet the folder "
                                         f"changed: {changed}")
                elif self.mode in ("ckpt", "series"):
                    return
        # Whatever the failure left, the next successful write leaves what a clean one does.
        self.next_write_cleans(what, clean)

    def master(self):
        """The master the write under test commits (of a series, step 6's)."""
        if self.series:
            return os.path.join(os.path.realpath(self.path), f"ckpt.{self.new:012d}.h5")
        return os.path.join(os.path.realpath(os.path.dirname(self.path)),
                            os.path.basename(self.path))

    def check_order(self, record):
        """Durability order of the recorded write of version 2 (of a series, of step 6)."""
        master = self.master()
        out = os.path.dirname(master)
        tiles = master + ".tiles"
        renames = [i for i, r in enumerate(record) if r[1] == "rename" and r[3] == master]
        if len(renames) != 1:
            self.problems.append(f"order: {len(renames)} renames onto the master: {record}")
            return
        commit = renames[0]
        tmp = record[commit][2]
        syncs = [(i, r[2]) for i, r in enumerate(record) if r[1] == "fsync"]
        if self.nosync:
            if syncs:
                self.problems.append(f"order: H5TILE_NO_SYNC, yet {len(syncs)} fsync: "
                                     f"{[p for _, p in syncs]}")
            else:
                print(f"{self.name}: no fsync among {len(record)} calls, one rename commits")
            return

        def synced(path, lo, hi):
            return [i for i, p in syncs if p == path and lo <= i < hi]

        def last_write(path, since):
            """The last write to `path` by any rank (a subfile is written by all of its group's
            ranks, and synced by the first), or `since` if none came after it."""
            return max([i for i, r in enumerate(record[:commit]) if r[1] == "write" and
                        r[2] == path and i > since], default=since)

        # Files created (folders are made, or found, on the way: create_dir_all).
        created = [(i, r[2]) for i, r in enumerate(record) if r[1] == "create"]
        # (A series' record is written after the commit: see series_order.)
        # (A write's lock file holds no data and is removed at its end: see in_flight.rs.)
        new_files = [(i, p) for i, p in created if not os.path.isdir(p) and p != tmp
                     and not os.path.basename(p).startswith(".latest.")
                     and not LOCK_FILE.fullmatch(os.path.basename(p))]
        last_file_sync = -1
        for i, p in new_files:
            done = synced(p, last_write(p, i), commit)
            if not done:
                self.problems.append(f"order: new file {p} not synced after its last write and "
                                     "before the commit")
            else:
                last_file_sync = max(last_file_sync, done[-1])
        if not synced(tmp, last_write(tmp, 0), commit):
            self.problems.append("order: the new master not synced after its last write and "
                                 "before the commit")
        if self.layout in ("vds", "subfiles", "auto"):
            folder = synced(tiles, last_file_sync, commit)
            if not folder:
                self.problems.append("order: the tile folder not synced after its files and "
                                     "before the commit")
            elif not synced(out, folder[0], commit):
                self.problems.append("order: the master's folder not synced after the tile "
                                     "folder and before the commit")
        if not synced(out, commit + 1, len(record)):
            self.problems.append("order: the master's folder not synced after the commit")
        if self.series:
            self.series_order(record, out, commit, synced)
        if not self.problems:
            print(f"{self.name}: order of the durable steps checked on {len(record)} calls "
                  f"({len(syncs)} fsync)")

    def series_order(self, record, out, commit, synced):
        """After the commit of a series' step: its record written to a temporary file, synced,
        renamed onto `latest`, the folder synced; then the pruned checkpoints removed, each
        master before anything in its tile folder."""
        latest = os.path.join(out, "latest")
        renames = [i for i, r in enumerate(record) if r[1] == "rename" and r[3] == latest]
        if len(renames) != 1 or renames[0] < commit:
            self.problems.append(f"order: {len(renames)} renames onto the record, expected one "
                                 f"after the commit (call {commit}): {renames}")
            return
        at = renames[0]
        tmp = record[at][2]
        wrote = [i for i, r in enumerate(record) if r[1] == "write" and r[2] == tmp]
        if not wrote or not synced(tmp, wrote[-1], at):
            self.problems.append("order: the record not written and synced before its rename")
        if not synced(out, at + 1, len(record)):
            self.problems.append("order: the series folder not synced after the record's rename")
        removed = [(i, r[2]) for i, r in enumerate(record) if r[1] == "remove"]
        masters = [(i, p) for i, p in removed if CKPT.search(p) and os.path.dirname(p) == out]
        if not masters:
            self.problems.append("order: the commit pruned no checkpoint (step 4 expected)")
        for i, p in masters:
            if i < at:
                self.problems.append(f"order: {p} removed before the record was renamed")
            early = [q for j, q in removed if j < i and q.startswith(p + ".tiles")]
            if early:
                self.problems.append(f"order: {early} removed before their master {p}")

    def series_masters(self):
        """The steps whose master is in the series folder."""
        return sorted(int(m.group(1)) for m in map(CKPT.match, os.listdir(self.path)) if m)

    def series_clean(self, what, step, clean=None):
        """Commits `step` (the next clean commit) and checks what the series folder then
        holds: exactly the checkpoints the retention rule keeps of those there before and this
        one, the record naming this one, each kept checkpoint's tile folder as a clean commit
        leaves it (`clean`: a masked listing of one; None: this commit's), and nothing else (no
        temporary, no leftover of any step). Returns the listing of this commit's tile folder."""
        before = self.series_masters()
        what = f"{what}: the next commit (step {step})"
        self.write_ok(step, what)
        self.check([step], what)
        name = lambda s: f"ckpt.{s:012d}.h5"
        masked = lambda d: sorted(GEN.sub("G", n) for n in os.listdir(d)) \
            if os.path.isdir(d) else []
        kept = retained(before + [step], step)
        if self.series_masters() != kept:
            self.problems.append(f"{what}: the series holds steps {self.series_masters()}; of "
                                 f"{before} and {step}, the rule keeps {kept}")
        mine = masked(os.path.join(self.path, name(step) + ".tiles"))
        clean = mine if clean is None else clean
        want = {"latest"} | {name(s) for s in kept}
        if self.layout != "single":
            want |= {name(s) + ".tiles" for s in kept}
        names = set(os.listdir(self.path))
        if names != want:
            self.problems.append(f"{what}: left beside the checkpoints kept: "
                                 f"{sorted(names - want)}; missing: {sorted(want - names)}")
        for s in kept:
            tiles = masked(os.path.join(self.path, name(s) + ".tiles"))
            if tiles != clean:
                self.problems.append(f"{what}: step {s}'s tile folder holds {tiles}, a clean "
                                     f"commit leaves {clean}")
        with open(os.path.join(self.path, "latest")) as f:
            record = f.read()
        if record != f"{step}\n{name(step)}\n":
            self.problems.append(f"{what}: the record says {record!r}")
        return clean

    def incomplete_steps(self):
        """Steps that have a tile folder, a temporary master or a write's lock file in the
        series folder, and no master: writes that did not commit."""
        steps = set()
        for n in os.listdir(self.path):
            m = re.fullmatch(r"(ckpt\.(\d+)\.h5)\.tiles", n) or \
                re.fullmatch(r"\.(ckpt\.(\d+)\.h5)\.[0-9a-f]{16}\.(tmp|lock)", n)
            if m and not os.path.exists(os.path.join(self.path, m.group(1))):
                steps.add(int(m.group(2)))
        return sorted(steps)

    def tool_check(self, what, latest):
        """`h5tile check --json DIR` (where H5TILE_TOOL names the tool): exit 0, having checked
        `latest`, naming exactly the incomplete steps."""
        tool = os.environ.get("H5TILE_TOOL")
        if not tool:
            return
        out = subprocess.run([tool, "check", "--json", self.path], capture_output=True,
                             text=True, timeout=120)
        try:
            series = json.loads(out.stdout)["series"][0]
        except (ValueError, KeyError, IndexError):
            self.problems.append(f"{what}: h5tile check --json: {out.stdout} {out.stderr}")
            return
        incomplete = sorted(i["step"] for i in series.get("incomplete") or [])
        if out.returncode != 0 or series.get("checked") != [latest] or \
                incomplete != self.incomplete_steps():
            self.problems.append(f"{what}: h5tile check exited {out.returncode}, checked "
                                 f"{series.get('checked')} (latest {latest}), incomplete "
                                 f"{incomplete} (the folder's: {self.incomplete_steps()}): "
                                 f"{out.stderr.strip()}")

    def after_kill(self, what, steps):
        """After a kill or failure in a series: the latest is one of `steps`, whole, every
        master whole, the tool agrees. Returns the latest step (None if there is none)."""
        lines = self.check(steps, what)
        latest = [int(line.split()[1]) for line in lines if re.fullmatch(r"latest \d+", line)]
        if latest:
            self.tool_check(what, latest[0])
        return latest[0] if latest else None

    def crash(self, snap, kind, n, clean):
        """The commit of step 6 killed (SIGKILL, by the shim) at the n-th call of `kind` on the
        target rank, instead of making it."""
        what = f"killed at {kind} #{n}"
        self.restore(snap)
        log = self.dir + ".fail.log"
        if os.path.exists(log):
            os.remove(log)
        self.run(self.mode, self.new, self.shim_env(log, f"{kind}:{n}:KILL"))
        killed = []
        if os.path.exists(log):
            with open(log) as f:
                killed = [l.split() for l in f if l.split()[1:2] == ["fail"]]
        if not killed:
            self.problems.append(f"{what}: the call was never made (the write is not repeatable)")
            return
        what += f" ({killed[0][3]})"
        self.after_kill(what, [self.old, self.new])
        self.next_write_cleans(what, clean)

    def series_kills(self):
        """Runs of SERIES_RUN commits killed at random moments, each followed by what a
        restarted program does: the commit of the step after the latest."""
        ready = self.dir + ".ready"
        env = {"FAULT_WRITE_STEPS": str(SERIES_RUN)}
        span = self.timed_write(ready, 1, env)
        self.check([SERIES_RUN], "setup")
        latest = SERIES_RUN + 1
        clean = self.series_clean("setup", latest)
        committed, incomplete, behind, draining = {}, 0, 0, 0
        kills = SERIES_KILLS[self.ranks > 1]
        for _ in range(kills):
            delay = self.rng.uniform(0, span)
            first = latest + 1
            what = (f"the run of steps {first} to {first + SERIES_RUN - 1} killed after "
                    f"{delay * 1000:.0f} ms")
            proc = self.start_write(ready, first, env)
            self.wait_ready(ready, proc)
            time.sleep(delay)
            self.kill_and_reap(proc, what)
            draining += bool(self.draining(ready))
            # A run that ended before its kill was longer when timed (a busier machine): the
            # next kills draw from its own length.
            span = min(span, self.took(ready) or span)
            now = self.after_kill(what, list(range(latest, first + SERIES_RUN)))
            if now is None:
                return
            committed[now - latest] = committed.get(now - latest, 0) + 1
            incomplete += bool(self.incomplete_steps())
            with open(os.path.join(self.path, "latest")) as f:
                behind += not f.read().startswith(f"{now}\n")
            self.series_clean(what, now + 1, clean)
            latest = now + 1
        runs = ", ".join(f"{n} committed {k}" for k, n in sorted(committed.items()))
        drain = self.drain_summary(draining)
        print(f"{self.name}: {kills} runs of {SERIES_RUN} commits killed at random moments "
              f"(a run takes {span * 1000:.0f} ms at most{drain}): {runs}; "
              f"{incomplete} left an incomplete step, "
              f"{behind} the record behind the latest; every latest and master whole, and each "
              f"restart's commit left what the rule keeps")


def main():
    shim, program, launcher, scratch = sys.argv[1:5]
    print(f"fault_injection: seed {SEED} (FAULT_INJECTION_SEED={SEED} replays its random choices)"
          + (f", kills scaled by FAULT_INJECTION_SCALE={SCALE:g}" if SCALE != 1 else ""))
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    problems = []
    for spec in sys.argv[5:]:
        case = Case(spec, shim, program, launcher, scratch)
        case.execute()
        problems += [f"{spec}: {p}" for p in case.problems]
    for p in problems:
        print("PROBLEM", p)
    if problems:
        print(f"fault_injection: {len(problems)} problems")
        return 1
    print("fault_injection: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
