#!/usr/bin/env python3
"""Alternated runs of `mstar-bench checkpoint FOLDER --roofline N`, grouped by
the read each decode step was set beside.

On the Zen 4 machine the memory's read rate moves between phases (about 30
and about 50 GB/s on 2 threads) within minutes, so two builds' steps compare
only within the same phase: every pair (a read, then a step) goes into the
band of its read, max(read_gbs, read4_gbs), and each band gives the build's
pair count, median step and median of_read. A second table does the same
for the pair's one-thread step (one_thread_ms), grouped by the same read:
taken before the pair's first step, so only roughly the one-thread step's
own phase.

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
PAIR = re.compile(r"^\|\s*(\d+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|"
                  r"(?:\s*([\d.]+)\s*\|)?")


def read_runs(paths):
    """{build: [(read, step_ms, of_read, one_thread_ms or None)]} in file order."""
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
                    one = float(m.group(6)) if m.group(6) else None
                    pairs.setdefault(build, []).append((read, float(m.group(4)), float(m.group(5)), one))
    return pairs


def table(pairs, builds, title, cell):
    """A row per band and one for all pairs: each build's cell(its pairs there), "0" where none."""
    print("| read band (GB/s) | " + " | ".join(f"{b}: {title}" for b in builds) + " |")
    print("| --- |" + " --- |" * len(builds))
    rows = [(f"{lo}-{hi}" if hi != float("inf") else f"{lo} and up", lo, hi) for lo, hi in BANDS]
    for name, lo, hi in rows + [("all", float("-inf"), float("inf"))]:
        cells = []
        for b in builds:
            sel = [p for p in pairs[b] if lo <= p[0] < hi]
            cells.append(cell(sel) if sel else "0")
        print(f"| {name} | " + " | ".join(cells) + " |")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pairs = read_runs(sys.argv[1:])
    if not pairs:
        sys.exit("roofline_bands: no '### round R BUILD' runs with roofline pairs in " + ", ".join(sys.argv[1:]))
    builds = list(pairs)
    med = statistics.median
    table(pairs, builds, "pairs, median step (ms), median of_read",
          lambda sel: f"{len(sel)}, {med(p[1] for p in sel):.2f}, {med(p[2] for p in sel):.3f}")
    ones = {b: [p for p in pairs[b] if p[3] is not None] for b in builds}
    if any(ones.values()):
        print()
        table(ones, builds, "pairs, median one-thread step (ms)", lambda sel: f"{len(sel)}, {med(p[3] for p in sel):.2f}")


if __name__ == "__main__":
    main()
