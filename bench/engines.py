"""The engines' sections, measured after the rounds and reported with their own tables:

dask    the same bytes written and read back (with a sum) by 2 MPI ranks through h5tile
        (programs/engines_mpi.py) and by a dask.distributed cluster of 2 worker processes
        through h5tile.to_file and xarray's engine="h5tile" (programs/engines_dask.py, which
        also times da.to_zarr where Zarr is installed), taking turns for BENCH_ROUNDS rounds;
        the ratios compare arrays held in memory on both sides (the ranks' blocks, the
        workers' persisted chunks), each write after an os.sync(); the workers' and the
        client's peak memory are those of a write computing its chunks as it goes. BENCH_DASK_GIB (2) of float64 in
        BENCH_DASK_CHUNK_MIB (64) chunks. Then many chunks (BENCH_DASK_MANY_CHUNKS, 1024,4096 of
        64 x 64 float64, written by Dask's threads scheduler: programs/engines_many_chunks.py):
        each chunk is a tile file of its own, so h5py's whole read (time, peak memory) is
        measured on that file, against the same file after `h5tile pack`, with pack's time.
legate  legate.io.hdf5.to_file against h5tile.to_file of one cuPyNumeric array in one Legate
        program (programs/engines_legate.py, in Legate's venv as the python section runs it,
        but a worker on every core), and each library's read back into cuPyNumeric;
        BENCH_LEGATE_GIB (1).
"""
import json
import os
import statistics
import subprocess
import sys

from measure import Failed
from settings import GIB, python_program


class Engines:
    def engines_section(self):
        if self.wants("dask"):
            self.dask_section()
        if self.wants("legate"):
            self.legate_section()

    def dask_section(self):
        nbytes = int(float(os.environ.get("BENCH_DASK_GIB", "2")) * GIB)
        chunk_mib = int(os.environ.get("BENCH_DASK_CHUNK_MIB", "64"))
        print(f"dask ({nbytes / GIB:.2f} GiB in {chunk_mib} MiB chunks; 2 ranks against 2 workers)",
              file=sys.stderr)
        folder = self.path("engines")
        for _ in range(self.rounds):
            for name, cmd in (
                ("engines mpi", [self.mpirun, "--bind-to", "none", "-n", "2",
                                 *python_program("engines_mpi.py"), folder, str(nbytes)]),
                ("engines dask", [*python_program("engines_dask.py"), folder, str(nbytes), str(chunk_mib), "2"]),
            ):
                os.makedirs(folder, exist_ok=True)
                self.prewarm(nbytes)
                # Zarr where make bench installed it (BENCH_ZARR_DIR), after the package.
                zarr = os.environ.get("BENCH_ZARR_DIR")
                path = ":".join(p for p in (os.environ.get("PYTHONPATH"), zarr) if p)
                out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path})
                if out.returncode != 0:
                    sys.exit(f"bench: {' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
                result = json.loads(out.stdout.strip().splitlines()[-1])
                result["seconds"] = result["write_s"]
                result["bytes"] = nbytes
                self.record(name, result)
                subprocess.run(["rm", "-rf", folder])
        self.dask_many_chunks()

    def dask_many_chunks(self):
        """What a reader pays for a Dask array's chunks, a file each, and `h5tile pack`'s cure:
        one round a count (as the many tiles section), each step a process of its own."""
        counts = [int(x) for x in os.environ.get("BENCH_DASK_MANY_CHUNKS", "1024,4096").split(",") if x.strip()]
        self.dask_chunk_rows = []
        for n in counts:
            src, packed = self.path(f"chunks{n}.h5"), self.path(f"chunks{n}.packed.h5")
            for p in (src, packed):
                self.remove(os.path.basename(p))
            row = {"chunks": n, "failed": {}}
            self.dask_chunk_rows.append(row)
            steps = (("write", [*python_program("engines_many_chunks.py"), src, str(n)]),
                     ("h5py", [*self.h5py_contenders, "read", src]),
                     ("pack", [self.tool, "pack", src, packed]),
                     ("h5py_packed", [*self.h5py_contenders, "read", packed]))
            for key, cmd in steps:
                try:
                    got, _ = self.many_run(f"dask {n} chunks {key}", cmd, 64 * 64 * 8 * n)
                except Failed as e:
                    row["failed"][key] = str(e)
                    break
                row[f"{key}_s"], row[f"{key}_rss_bytes"] = got["seconds"], got["peak_rss_bytes"]
                row.update({k: got[k] for k in ("files", "bytes") if k in got})
            for p in (src, packed):
                self.remove(os.path.basename(p))

    def legate_section(self):
        if self.legate_missing:
            print(f"legate: left out ({self.legate_missing})", file=sys.stderr)
            return
        nbytes = int(float(os.environ.get("BENCH_LEGATE_GIB", "1")) * GIB)
        print(f"legate ({nbytes / GIB:.2f} GiB; {self.rounds} rounds in one program)", file=sys.stderr)
        folder = self.path("engines-legate")
        os.makedirs(folder, exist_ok=True)
        self.prewarm(nbytes)
        program = [self.legate[0], os.path.join(os.path.dirname(self.legate[1]), "engines_legate.py")]
        env = {**os.environ, **self.legate_env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        if "LEGATE_CONFIG" not in os.environ and "LEGATE_CONFIG" in env:
            # A worker on each core (the python section's one fewer gives one partition, and
            # one tile, on 2 cores): the tasks write in parallel, as on a node.
            sysmem = (4 * nbytes + GIB // 2) >> 20
            env["LEGATE_CONFIG"] = f"--cpus {os.cpu_count() or 2} --utility 1 --sysmem {sysmem}"
        out = subprocess.run([*program, folder, str(nbytes), str(self.rounds)], capture_output=True, text=True,
                             env=env)
        subprocess.run(["rm", "-rf", folder])
        if out.returncode != 0:
            sys.exit(f"bench: engines_legate.py failed ({out.returncode}):\n{out.stdout}{out.stderr[-3000:]}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
        result["seconds"] = statistics.median(result["h5tile_write_s"])
        result["bytes"] = nbytes
        self.record("engines legate", result)

    def report_engines(self, checks):
        parts = {}
        if "engines dask" in self.runs:
            parts["dask"] = self.report_dask(checks)
        if "engines legate" in self.runs:
            parts["legate"] = self.report_legate(checks)
        return parts

    def report_dask(self, checks):
        mpi, dask = self.runs["engines mpi"], self.runs["engines dask"]
        nbytes = dask[0]["bytes"]

        def rate(runs, key):
            return nbytes / statistics.median(r[key] for r in runs) / GIB

        def best(runs, key):
            return nbytes / min(r[key] for r in runs) / GIB

        rows = [("write: mpirun -n 2", rate(mpi, "write_s"), best(mpi, "write_s")),
                ("write: Dask, 2 workers (h5tile.to_file)", rate(dask, "write_s"), best(dask, "write_s")),
                ("write: Dask, computed as written", rate(dask, "write_lazy_s"), best(dask, "write_lazy_s")),
                ("write, no fsync: mpirun -n 2", rate(mpi, "write_nosync_s"), best(mpi, "write_nosync_s")),
                ("write, no fsync: Dask (h5tile.to_file)", rate(dask, "write_nosync_s"),
                 best(dask, "write_nosync_s"))]
        if all(r.get("zarr_write_s") for r in dask):
            rows.append(("write, no fsync: Dask (da.to_zarr)", rate(dask, "zarr_write_s"),
                         best(dask, "zarr_write_s")))
        rows += [("read + sum: mpirun -n 2", rate(mpi, "read_sum_s"), best(mpi, "read_sum_s")),
                 ("read + sum: xarray engine=h5tile, chunks={}", rate(dask, "read_sum_s"),
                  best(dask, "read_sum_s"))]
        print(f"\ndask: {nbytes / GIB:.2f} GiB of float64 in {dask[0]['chunks']} chunks "
              f"({dask[0]['tiles']} tiles), 2 MPI ranks against a LocalCluster of 2 worker processes "
              f"(medians of {len(dask)} rounds, taking turns; fastest beside)")
        for label, median, fastest in rows:
            print(f"  {label:46} {median:6.2f} GiB/s   fastest {fastest:6.2f}")
        worker = max(r["worker_peak_rss"] for r in dask)
        client = max(r["client_peak_rss"] for r in dask)
        chunk = nbytes / dask[0]["chunks"]
        print(f"  peak RSS: a worker {worker / 2**20:.0f} MiB (bound: 3 chunks + 256 MiB = "
              f"{(3 * chunk + 2**28) / 2**20:.0f}), the client {client / 2**20:.0f} MiB (bound 256)")
        write = rate(dask, "write_s") / rate(mpi, "write_s")
        fastest = best(dask, "write_s") / best(mpi, "write_s")
        unsynced = rate(dask, "write_nosync_s") / rate(mpi, "write_nosync_s")
        print(f"  Dask over MPI: write {write:.2f} (fastest over fastest {fastest:.2f}; without fsync "
              f"{unsynced:.2f}), read + sum {rate(dask, 'read_sum_s') / rate(mpi, 'read_sum_s'):.2f}")
        read = rate(dask, "read_sum_s") / rate(mpi, "read_sum_s")
        sums = {r["sum"] for r in dask} | {r["sum"] for r in mpi}
        self.report_dask_chunks(checks)
        checks += [
            (f"Dask write x MPI write >= 0.8 (got {write:.2f})", write >= 0.8, write),
            (f"xarray read + sum x MPI read + sum >= 0.8 (got {read:.2f})", read >= 0.8, read),
            (f"Dask worker peak RSS <= 3 chunks + 256 MiB ({worker / 2**20:.0f} MiB)",
             worker <= 3 * chunk + 2**28, worker),
            (f"Dask client peak RSS <= 256 MiB ({client / 2**20:.0f} MiB)", client <= 2**28, client),
            (f"every element read back (sums agree: {sorted(sums)})", len(sums) == 1, len(sums)),
        ]
        return {"write_over_mpi": write, "write_fastest_over_mpi": fastest, "write_nosync_over_mpi": unsynced,
                "read_over_mpi": read, "worker_peak_rss": worker,
                "client_peak_rss": client, "rows": rows,
                "many_chunks": getattr(self, "dask_chunk_rows", [])}

    def report_dask_chunks(self, checks):
        """The many chunks' table: measured, not bounded (each chunk's file is what an
        independent writer makes; pack is the remedy the docs name)."""
        rows = getattr(self, "dask_chunk_rows", [])
        if not rows:
            return
        print("\n  many chunks, a file each (64 x 64 float64 chunks, Dask's threads scheduler, no fsync; one round):")
        print(f"  {'chunks':>7}{'files':>7}{'write s':>9}{'h5py s':>9}{'MiB':>7}{'pack s':>9}{'packed h5py s':>15}"
              f"{'MiB':>7}{'h5py x packed':>15}")
        for r in rows:
            def cell(key, width, scale=1.0):
                if key in r["failed"]:
                    return f"{'failed':>{width}}"
                return f"{r[f'{key}_s'] * scale:{width}.3f}" if f"{key}_s" in r else f"{'-':>{width}}"

            def mib(key, width):
                b = r.get(f"{key}_rss_bytes")
                return f"{b / 2**20:{width}.0f}" if b else f"{'-':>{width}}"
            x = r["h5py_s"] / r["h5py_packed_s"] if "h5py_s" in r and "h5py_packed_s" in r else None
            ratio = f"{x:15.1f}" if x else f"{'-':>15}"
            print(f"  {r['chunks']:7d}{r.get('files', 0):7d}{cell('write', 9)}{cell('h5py', 9)}{mib('h5py', 7)}"
                  f"{cell('pack', 9)}{cell('h5py_packed', 15)}{mib('h5py_packed', 7)}"
                  f"{ratio}")
            for key, why in r["failed"].items():
                checks.append((f"{r['chunks']:,} Dask chunks: {key} runs (failed: {why})", False, None))

    def report_legate(self, checks):
        r = self.runs["engines legate"][-1]
        nbytes = r["bytes"]

        def rate(key):
            return nbytes / statistics.median(r[key]) / GIB

        rows = [("write: legate.io.hdf5.to_file + fence (no fsync)", rate("legate_write_s")),
                ("write: h5tile.to_file (fsync)", rate("h5tile_write_s")),
                ("write: h5tile.to_file(sync=False)", rate("h5tile_nosync_write_s")),
                ("read + sum: legate.io.hdf5.from_file", rate("legate_read_sum_s")),
                ("read + sum: h5tile (Legate tasks)", rate("h5tile_read_sum_s"))]
        print(f"\nlegate: {nbytes / GIB:.2f} GiB of float64 in one Legate program, {r['tiles']} tiles "
              f"(medians of {len(r['h5tile_write_s'])} rounds, taking turns)")
        for label, value in rows:
            print(f"  {label:50} {value:6.2f} GiB/s")
        growth = r["h5tile_rss_growth"]
        print(f"  h5tile.to_file grew the program's peak RSS by {growth / 2**20:.0f} MiB")
        write = rate("h5tile_nosync_write_s") / rate("legate_write_s")
        read = rate("h5tile_read_sum_s") / rate("legate_read_sum_s")
        sums = set(r["sums"].values())
        checks += [
            (f"h5tile.to_file(sync=False) x legate.io.hdf5.to_file >= 1.0 (got {write:.2f})", write >= 1.0, write),
            (f"h5tile read x legate.io.hdf5 read (Legate arrays) >= 1.0 (got {read:.2f})", read >= 1.0, read),
            (f"a tile per partition point: {r['tiles']} >= 2", r["tiles"] >= 2, r["tiles"]),
            (f"peak RSS grew by < a quarter of the array ({growth / 2**20:.0f} MiB)", growth < nbytes / 4, growth),
            (f"both read the same sum ({sorted(sums)})", len(sums) == 1, len(sums)),
        ]
        return {"rows": rows, "write_nosync_over_legate": write, "read_over_legate": read,
                "rss_growth": growth, "tiles": r["tiles"]}
