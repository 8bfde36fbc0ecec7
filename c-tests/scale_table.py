"""The table `make test-scale` ends with: each step's time (the slowest rank's) at each rank
count, from mpi_scale's "step <name>: <seconds> s on <N> ranks" lines, and the growth ratio
between successive rank counts next to n log n's. On a machine with fewer cores than ranks
the ranks take turns, so a collective step whose per-rank work grows as log n takes n log n
time in all; a ratio over 1.5 times n log n's is marked "*". The mpi_* steps (no h5tile) show
how MPI's own collectives grow on the machine; an h5tile step whose ratio is over 1.5 times the
largest of theirs is marked "!" as well. Timings are noisy: this reports, it never fails.
Usage: scale_table.py OUTPUT_FILE...  (one mpi_scale output per rank count)"""
import math
import re
import sys

LINE = re.compile(r"^step (\S+): ([0-9.eE+-]+) s on (\d+) ranks$")


def main(paths):
    times = {}  # step -> {ranks: seconds}
    order = []
    for path in paths:
        with open(path) as f:
            for line in f:
                m = LINE.match(line.strip())
                if not m:
                    continue
                step, secs, n = m.group(1), float(m.group(2)), int(m.group(3))
                if step not in times:
                    times[step] = {}
                    order.append(step)
                times[step][n] = secs
    counts = sorted({n for t in times.values() for n in t})
    if not counts:
        sys.exit("scale_table.py: no step lines in " + " ".join(paths))

    def nlogn(n):
        return n * math.log2(n) if n > 1 else 1.0

    pairs = list(zip(counts, counts[1:]))
    width = max(len(s) for s in order + ["n log n"])
    head = f"{'step':<{width}}" + "".join(f"{str(n) + ' ranks':>12}" for n in counts)
    head += "".join(f"{f'{b}/{a}':>10}" for a, b in pairs)
    print(head)
    def ratio(step, a, b):
        ta, tb = times[step].get(a), times[step].get(b)
        return tb / ta if ta and tb is not None else None

    def mpi_ratio(a, b):
        rs = [ratio(s, a, b) for s in order if s.startswith("mpi_")]
        rs = [r for r in rs if r is not None]
        return max(rs) if rs else None

    marked, beyond_mpi = [], []
    for step in order:
        row = f"{step:<{width}}"
        for n in counts:
            t = times[step].get(n)
            row += f"{'-':>12}" if t is None else f"{t:>10.4f} s"
        for a, b in pairs:
            r = ratio(step, a, b)
            if r is None:
                row += f"{'-':>10}"
                continue
            faster = r > 1.5 * nlogn(b) / nlogn(a)
            m = mpi_ratio(a, b)
            past_mpi = not step.startswith("mpi_") and m is not None and r > 1.5 * m
            row += f"{r:>8.1f}" + ("*" if faster else " ") + ("!" if past_mpi else " ")
            if faster:
                marked.append(f"{step} ({a} -> {b} ranks)")
            if past_mpi:
                beyond_mpi.append(f"{step} ({a} -> {b} ranks)")
        print(row)
    print(f"{'n log n':<{width}}" + " " * 12 * len(counts)
          + "".join(f"{nlogn(b) / nlogn(a):>8.1f}  " for a, b in pairs))
    print("* grew more than 1.5 x n log n's ratio: " + (", ".join(marked) or "none"))
    print("! grew more than 1.5 x MPI's own (mpi_* steps): " + (", ".join(beyond_mpi) or "none"))


if __name__ == "__main__":
    main(sys.argv[1:])
