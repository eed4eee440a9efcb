#!/usr/bin/env python3
"""Alternated runs of `mstar-bench checkpoint FOLDER --roofline N`, grouped by
the read each decode step was set beside.

On the Zen 4 machine the memory's read rate moves between phases (about 30
and about 50 GB/s on 2 threads) within minutes, so two builds' steps compare
only within the same phase: every pair (a read, then a step) goes into the
band of its read, max(read_gbs, read4_gbs), and each band gives the build's
pair count, median step and median of_read.

Input: one or more files holding, for every run, a line
"### round R BUILD ..." followed by the run's roofline table as mstar-bench
prints it (markdown). For example, two builds alternated:

    for r in 1 2 3; do for b in base new; do
      echo "### round $r $b"
      ./mstar-bench-$b checkpoint QWEN --streams "" --roofline 20 --activations bf16
    done; done > runs.md
    tools/bench/roofline_bands.py runs.md
"""
import re
import statistics
import sys

BANDS = [(0, 30), (30, 35), (35, 40), (40, 45), (45, float("inf"))]
PAIR = re.compile(r"^\|\s*(\d+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|")


def read_runs(paths):
    """{build: [(read, step_ms, of_read)]} in file order."""
    pairs = {}
    build = None
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                head = re.match(r"^### round \S+ (\S+)", line)
                if head:
                    build = head.group(1)
                    continue
                m = PAIR.match(line)
                if m and build:
                    read = max(float(m.group(2)), float(m.group(3)))
                    pairs.setdefault(build, []).append((read, float(m.group(4)), float(m.group(5))))
    return pairs


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pairs = read_runs(sys.argv[1:])
    if not pairs:
        sys.exit("roofline_bands: no '### round R BUILD' runs with roofline pairs in " + ", ".join(sys.argv[1:]))
    builds = list(pairs)
    print("| read band (GB/s) | " + " | ".join(f"{b}: pairs, median step (ms), median of_read" for b in builds) + " |")
    print("| --- |" + " --- |" * len(builds))
    for lo, hi in BANDS:
        cells = []
        for b in builds:
            sel = [p for p in pairs[b] if lo <= p[0] < hi]
            if sel:
                step = statistics.median(p[1] for p in sel)
                of_read = statistics.median(p[2] for p in sel)
                cells.append(f"{len(sel)}, {step:.2f}, {of_read:.3f}")
            else:
                cells.append("0")
        name = f"{lo}-{hi}" if hi != float("inf") else f"{lo} and up"
        print(f"| {name} | " + " | ".join(cells) + " |")
    cells = []
    for b in builds:
        step = statistics.median(p[1] for p in pairs[b])
        of_read = statistics.median(p[2] for p in pairs[b])
        cells.append(f"{len(pairs[b])}, {step:.2f}, {of_read:.3f}")
    print("| all | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
