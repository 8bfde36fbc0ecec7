"""How one measurement is made (Bench): launching bench_h5tile or a program under mpirun,
memory touched beforehand, the result recorded under its name; and the measurements kept
(runs, and what the sections saw besides), which the reports read. The sections' steps
(rounds.py, after_rounds.py) are made of these."""
import ctypes.util
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from settings import GIB, PROGRAMS, Settings, python_program


class Failed(Exception):
    """A measurement of the many tiles section that failed: what ran, and why."""


def legate_contender(binary, data_bytes):
    """python_contenders.py as legate.io.hdf5's modes run it, and the environment they need:
    the Python of .deps/legate (scripts/legate-env.sh; else this one, and the probe says Legate
    is missing), the CUDA runtime and NCCL its wheels bring on the library path, and where the
    machine has no CUDA driver, the bench's libcuda.so.1 without a device (built beside
    bench_h5tile, programs/no_device_libcuda.c) with KvikIO's POSIX reads: Legate then runs on
    the CPUs. Its automatic configuration counts GPUs, which that driver cannot, so unless
    LEGATE_CONFIG is set it is given a worker on every core but one, which its one utility
    thread takes (on 2 cores a 1 GiB read took 0.68-0.69 s so, 0.73-0.74 with its default two
    utility threads, 1.0 with a worker on each core), and system memory for the data several
    times over (its default of 256 MiB does not hold one array)."""
    venv = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".deps", "legate")
    python = os.path.join(venv, "bin", "python")
    if not os.access(python, os.X_OK):
        return python_program("python_contenders.py"), {}
    libs = sorted(glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "nvidia", "*", "lib")))
    env = {}
    if ctypes.util.find_library("cuda") is None:
        libs.insert(0, os.path.join(os.path.dirname(os.path.abspath(binary)), "no-device"))
        env["KVIKIO_COMPAT_MODE"] = "ON"
        if "LEGATE_CONFIG" not in os.environ:
            sysmem = (4 * data_bytes + GIB // 2) >> 20
            cpus = max(1, (os.cpu_count() or 2) - 1)
            env.update(LEGATE_AUTO_CONFIG="0", LEGATE_CONFIG=f"--cpus {cpus} --utility 1 --sysmem {sysmem}")
    env["LD_LIBRARY_PATH"] = ":".join(libs + [p for p in [os.environ.get("LD_LIBRARY_PATH")] if p])
    return [python, os.path.join(PROGRAMS, "python_contenders.py")], env


class Bench(Settings):
    def __init__(self, binary, mpirun, out):
        super().__init__(out)
        self.binary, self.mpirun, self.out = binary, mpirun, out
        self.stored = {}  # compression label -> bytes on disk (the last round's)
        self.cold_missing = None  # why reads with the page cache dropped are left out
        self.runs = {}  # name -> list of measurement dicts
        self.sweeps = None  # the computation of the overlap measurement, sized in round one
        self.shim = None  # the fault shim (libfault_shim.so), for the scale section's counts
        self.has_subfiles = False  # set by probe()
        self.legate_missing = None  # why legate.io.hdf5 cannot be measured here (probe())
        self.legate_interop = {}  # layout -> Legate's and h5py's sums of one file (legate_reads_ours)
        self.contenders = python_program("python_contenders.py")
        self.legate, self.legate_env = legate_contender(binary, self.bytes)
        self.h5py_contenders = python_program("h5py_contenders.py")
        self.round_index = 0  # the round being measured
        self.files = {}  # name -> what a write left on disk and what the shim saw
        self.scale_rows = []  # one dict per (ranks, layout) of the scale section
        self.last_stderr = ""  # the last launch's, for its H5TILE_LOG lines
        self.many_rows = []  # one dict per (tiles, layout) of the many tiles section
        self.tool = None  # the h5tile command (main())
        version = subprocess.run([mpirun, "--version"], capture_output=True, text=True).stdout
        self.open_mpi = "Open MPI" in version or "open-mpi" in version

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
            subprocess.run([*python_program("touch_memory.py"), str(n)], check=True)

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
        out = subprocess.run([*self.legate, "legate_probe"], capture_output=True, text=True,
                             env={**os.environ, **self.legate_env})
        if out.returncode != 0:
            self.legate_missing = (out.stdout + out.stderr).strip().splitlines()[-1][:200]
            print(f"bench: legate.io.hdf5 cannot be imported ({self.legate_missing}): it is left out",
                  file=sys.stderr)

    def timed(self, name, cmd, **extra):
        self.prewarm()
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        self.record(name, {"seconds": time.perf_counter() - t0, **extra})

    def h5py(self, name, mode, file, *extra):
        """One of h5py_contenders.py's modes, in one process (no launcher)."""
        self.prewarm()
        out = subprocess.run([*self.h5py_contenders, mode, self.path(file), str(self.rows), str(self.cols),
                              *extra], check=True, capture_output=True, text=True).stdout
        self.record(name, json.loads(out.strip().splitlines()[-1]))

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

    # A measurement's rounds summed up: the reports' figures (and the overlap's sizing).
    def median(self, name, key="seconds"):
        return statistics.median(r[key] for r in self.runs[name])

    def rate(self, name):
        return self.bytes / self.median(name) / GIB

    def fastest(self, name):
        return self.bytes / min(r["seconds"] for r in self.runs[name]) / GIB

    def least(self, name, key="seconds"):
        return min(r[key] for r in self.runs[name])
