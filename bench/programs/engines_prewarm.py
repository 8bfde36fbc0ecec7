"""What the engines' programs (engines_dask.py, engines_mpi.py) do before each timed write."""
import os
import subprocess
import sys


def prewarm(nbytes):
    """The suite's prewarm (measure.py's Bench.prewarm says why), before each timed write: on
    this VM a write into memory left free for a few seconds runs several times slower."""
    with open("/proc/meminfo") as f:
        avail = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable"))
    n = min(3 * nbytes + (1 << 29), avail - (4 << 30))
    if n > 0:
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "touch_memory.py"), str(n)],
                       check=True)
    os.sync()  # no earlier write's dirty pages to wait behind
