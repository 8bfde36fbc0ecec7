"""Fault injection and durability order of h5tile's writes, with real files and real ranks.

usage: fault_injection.py SHIM FAULT_WRITE LAUNCHER SCRATCH CASE...
  CASE is LAYOUT-MODE-RANKS[-keep][-root][-nosync][-gK]: LAYOUT vds, single or subfiles, MODE
  write, async or fence (how the write completes), RANKS the number of processes (1: no
  launcher, MPI_COMM_NULL); keep: H5TILE_KEEP_OTHERS beside another dataset; root: the faults
  hit rank 0 (which writes the master and commits) instead of the last rank; nosync:
  H5TILE_NO_SYNC; gK: H5TILE_RANKS_PER_FILE=K for the subfiles' groups (default: all the
  ranks, one node, one subfile). MODE kill: instead of failing calls, the
  write is killed (SIGKILL, the process alone or, with several ranks, one rank, after which the
  launcher ends the others) at KILLS random moments of its run. MODE full: the case's folder is
  a 1 MiB tmpfs (skipped, and said, where mounting is not permitted) and version 2 is too large
  for it: a real ENOSPC.

For each case: version 1 of the dataset is written; a clean write of version 2 is recorded by
the fault_shim preload (every file creation, write, fsync and rename under the case's folder),
and its order checked: every new file (tile files, subfiles, the new master) synced after its
last write by any rank, then the tile folder and the master's folder, all before the rename
that commits, and the master's folder synced after it; with nosync, not one fsync, and still
the one rename that commits. A clean write of the subfiles layout leaves one subfile per group,
named after the group's first rank. Then, starting each time from version 1, the write of
version 2 is repeated with the N-th call of each kind made to fail (ENOSPC or EIO, in turn),
for every N that write makes (on the last rank, where there are several; rank 0 with -root).
Each must
  - report the same status on every rank: H5TILE_OK only if the failed call did not matter
    (never, so far), otherwise H5TILE_ERR_IO whose message starts with the OS reason;
  - leave version 1 whole and readable (version 2, when the message says the new dataset is
    in place: a failure after the commit), and the other dataset of a kept file intact;
  - leave nothing that the next successful write does not remove: after a clean write of
    version 3, the folder holds exactly what a clean write leaves.
A write that fills the disk must fail on every rank with H5TILE_ERR_IO, "No space left on
device" first, and remove what it wrote, so the disk is as full as before.
A killed write must leave version 1 or version 2 whole (never an error, never a mixture), the
other dataset intact, and nothing the next write does not remove.
"""
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

KILLS = 24
REASONS = {"ENOSPC": "No space left on device", "EIO": "Input/output error"}
GEN = re.compile(r"[0-9a-f]{16}")


class Case:
    def __init__(self, spec, shim, program, launcher, scratch):
        parts = spec.split("-")
        self.layout, self.mode, self.ranks = parts[0], parts[1], int(parts[2])
        self.keep = "keep" in parts[3:]
        self.target = 0 if "root" in parts[3:] else self.ranks - 1
        self.nosync = "nosync" in parts[3:]
        # What every run of the program gets in its environment (the launcher passes it on).
        self.env = {"FAULT_WRITE_NO_SYNC": "1"} if self.nosync else {}
        for p in parts[3:]:
            if re.fullmatch(r"g\d+", p):
                self.env["H5TILE_RANKS_PER_FILE"] = p[1:]
        self.name = spec
        self.shim, self.program, self.launcher = shim, program, launcher
        self.dir = os.path.join(scratch, spec)
        self.path = os.path.join(self.dir, "out", "field.h5")
        self.problems = []

    def run(self, mode, version, env=None, ranks=None):
        ranks = self.ranks if ranks is None else ranks
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
        lines, err = self.run("check", 0, ranks=1)
        text = "\n".join(lines)
        if not any(f"version {v}" in lines for v in expect_versions):
            self.problems.append(f"{what}: expected version {expect_versions}, read: {text} {err}")
        if self.keep and "other intact" not in lines:
            self.problems.append(f"{what}: the other dataset: {text}")
        return lines

    def listing(self):
        """What the case's folder holds, generations masked."""
        names = []
        for root, dirs, files in os.walk(os.path.join(self.dir, "out")):
            rel = os.path.relpath(root, self.dir)
            names += [GEN.sub("G", os.path.join(rel, f)) for f in files]
            names += [GEN.sub("G", os.path.join(rel, d)) + "/" for d in dirs]
        return sorted(names)

    def write_ok(self, version, what, env=None):
        lines, err = self.run(self.mode, version, env)
        st = self.statuses(lines)
        if len(st) != self.ranks or any(s != "H5TILE_OK" for s, _ in st.values()):
            self.problems.append(f"{what}: write of version {version} failed: {lines} {err}")

    def execute(self):
        snap = self.dir + ".v1"
        for d in (self.dir, snap):
            shutil.rmtree(d, ignore_errors=True)
        os.makedirs(self.dir)
        if self.mode == "kill":
            self.mode = "write"
            return self.kills(snap)
        if self.mode == "full":
            self.mode = "write"
            return self.full()
        self.write_ok(1, "setup")
        self.check([1], "setup")
        shutil.copytree(self.dir, snap, symlinks=True)

        # The clean reference: version 2 over version 1, recorded, then version 3.
        log = os.path.join(self.dir + ".log")
        if os.path.exists(log):
            os.remove(log)
        self.write_ok(2, "recorded write", self.shim_env(log))
        self.check([2], "recorded write")
        if not os.path.exists(log):
            self.problems.append(f"the recorded write left no record in {log}: is {self.shim} "
                                 "preloaded into the ranks?")
            return
        with open(log) as f:
            record = [line.split() for line in f]
        self.check_order(record)
        self.write_ok(3, "clean write")
        clean = self.listing()
        self.check_clean(clean)

        counts = {}
        for rec in record:
            if int(rec[0]) == self.target:
                counts[rec[1]] = counts.get(rec[1], 0) + 1
        runs = 0
        for kind in ("create", "write", "fsync", "rename"):
            for n in range(1, counts.get(kind, 0) + 1):
                err = "ENOSPC" if (n + len(kind)) % 2 else "EIO"
                self.inject(snap, kind, n, err, clean)
                runs += 1
        shutil.rmtree(snap, ignore_errors=True)
        summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("create", "write", "fsync", "rename"))
        print(f"{self.name}: {runs} writes each failing one call ({summary} on rank {self.target})")

    def kills(self, snap):
        """Writes of version 2 over version 1 killed at random moments."""
        self.write_ok(1, "setup")
        shutil.copytree(self.dir, snap, symlinks=True)
        ready = self.dir + ".ready"
        span = self.timed_write(ready)
        self.write_ok(3, "clean write")
        clean = self.listing()
        self.check_clean(clean)
        rng = random.Random(12)
        seen = {1: 0, 2: 0}
        for k in range(KILLS if self.ranks == 1 else KILLS // 2):
            shutil.rmtree(self.dir, ignore_errors=True)
            shutil.copytree(snap, self.dir, symlinks=True)
            delay = rng.uniform(0, span)
            what = f"write killed after {delay * 1000:.0f} ms"
            proc = self.start_write(ready)
            self.wait_ready(ready, proc)
            time.sleep(delay)
            self.kill_rank(proc)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                self.problems.append(f"{what}: the launcher did not end after a rank was killed")
            lines = self.check([1, 2], what)
            for v in (1, 2):
                seen[v] += f"version {v}" in lines
            self.next_write_cleans(what, clean)
        shutil.rmtree(snap, ignore_errors=True)
        print(f"{self.name}: {seen[1] + seen[2]} writes killed at random moments (a write takes "
              f"{span * 1000:.0f} ms): {seen[1]} left version 1, {seen[2]} version 2, all whole")

    def check_clean(self, clean):
        """What a clean write of the subfiles layout leaves: the master, and in its tile folder
        one subfile per group of ranks (H5TILE_RANKS_PER_FILE, else all of them), named
        <dataset>.<generation>.s<the group's first rank>.h5, for /data; kept beside it, /other,
        whose only tile is rank 0's: one subfile, s0 (a group without tiles has none)."""
        if self.layout != "subfiles":
            return
        k = int(self.env.get("H5TILE_RANKS_PER_FILE", self.ranks))
        want = ["out/field.h5", "out/field.h5.tiles/"]
        want += [f"out/field.h5.tiles/data.G.s{r}.h5" for r in range(0, self.ranks, k)]
        if self.keep:
            want.append("out/field.h5.tiles/other.G.s0.h5")
        if clean != sorted(want):
            self.problems.append(f"a clean write left {clean}, expected {sorted(want)}")

    def next_write_cleans(self, what, clean):
        """After `what`, a successful write of version 3 leaves exactly `clean`."""
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

    def start_write(self, ready):
        """Starts the write of version 2, which marks its start in the folder `ready`."""
        shutil.rmtree(ready, ignore_errors=True)
        os.makedirs(ready)
        cmd = [self.program, "write", self.path, self.layout, str(int(self.keep)), "2"]
        if self.ranks > 1:
            cmd = [self.launcher, "-n", str(self.ranks)] + cmd
        env = dict(os.environ, FAULT_WRITE_READY_DIR=ready, **self.env)
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)

    def wait_ready(self, ready, proc):
        """Waits until the target rank is about to write (or the run has ended)."""
        mark = os.path.join(ready, f"ready.{self.target}")
        while not os.path.exists(mark) and proc.poll() is None:
            time.sleep(0.0005)

    def timed_write(self, ready):
        """How long the write itself takes on the target rank."""
        proc = self.start_write(ready)
        self.wait_ready(ready, proc)
        start = time.monotonic()
        done = os.path.join(ready, f"done.{self.target}")
        while not os.path.exists(done) and proc.poll() is None:
            time.sleep(0.0005)
        span = time.monotonic() - start
        proc.wait(timeout=120)
        return span

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

    def inject(self, snap, kind, n, err, clean):
        what = f"{kind} #{n} failing with {err}"
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.copytree(snap, self.dir, symlinks=True)
        log = self.dir + ".fail.log"
        if os.path.exists(log):
            os.remove(log)
        lines, stderr = self.run(self.mode, 2, self.shim_env(log, f"{kind}:{n}:{err}"))
        failed = []
        if os.path.exists(log):
            with open(log) as f:
                failed = [l for l in f if l.split()[1:2] == ["fail"]]
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
        if code == "H5TILE_OK":
            self.problems.append(f"{what}: the write reported success after a failed {kind}")
            self.check([2], what)
        else:
            reason = REASONS[err]
            failing = st[self.target][1]
            if code != "H5TILE_ERR_IO" or not failing.startswith(reason):
                self.problems.append(f"{what}: rank {self.target} got {code}: '{failing}', "
                                     f"expected H5TILE_ERR_IO starting '{reason}'")
            for r, (_, msg) in st.items():
                if reason not in msg:
                    self.problems.append(f"{what}: rank {r} message lacks the OS reason: '{msg}'")
            in_place = "the new dataset is in place" in failing
            self.check([2] if in_place else [1], what)
        # Whatever the failure left, the next successful write leaves what a clean one does.
        self.next_write_cleans(what, clean)

    def check_order(self, record):
        """Durability order of the recorded write of version 2."""
        out = os.path.realpath(os.path.dirname(self.path))
        master = os.path.join(out, os.path.basename(self.path))
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
        new_files = [(i, p) for i, p in created if not os.path.isdir(p) and p != tmp]
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
        if self.layout in ("vds", "subfiles"):
            folder = synced(tiles, last_file_sync, commit)
            if not folder:
                self.problems.append("order: the tile folder not synced after its files and "
                                     "before the commit")
            elif not synced(out, folder[0], commit):
                self.problems.append("order: the master's folder not synced after the tile "
                                     "folder and before the commit")
        if not synced(out, commit + 1, len(record)):
            self.problems.append("order: the master's folder not synced after the commit")
        if not self.problems:
            print(f"{self.name}: order of the durable steps checked on {len(record)} calls "
                  f"({len(syncs)} fsync)")


def main():
    shim, program, launcher, scratch = sys.argv[1:5]
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
