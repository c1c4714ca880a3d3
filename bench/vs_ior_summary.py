#!/usr/bin/env python3
"""The per-case summary of bench/vs-ior.sh: median, geometric mean, range and the 95 % interval
of the geometric mean of the fsbench / IOR ratios, over every pair in the files given.

    python3 bench/vs_ior_summary.py OUTPUT [OUTPUT ...]

Each OUTPUT is vs-ior.sh's printout (or its rows alone); the pair lines of several runs are
pooled by case (storage, transfer, data per rank, cache mode, new file or overwrite, whose data
a read reads, layout, np, phase), so runs made at different times can be read together but
runs under different conditions never mix. A case where the bytes differed in any pair gets no ratio (same work
before same speed).

The last three columns take only the pairs where fsbench ran first (the even pairs: vs-ior.sh
runs IOR first in odd ones): geometric mean, its interval and their number. On a VM where the
tool that runs first is penalised, that is the order that can only be against fsbench; where
it differs from the pooled figure, the order was not neutral and it is the one to quote.

"""
import math
import re
import statistics
import sys

# Student's t, two-sided 95 %, by degrees of freedom 1..30 (1.96 past 30).
T95 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14,
       2.13, 2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05,
       2.05, 2.04]


def pair_lines(path):
    """(case, ratio, bytes differ) of every pair line: layout np phase pair ior_bytes
    fsbench_bytes ior_MiB/s fsbench_MiB/s ratio [extents I/F] [BYTES DIFFER]. The case
    carries the storage, the transfer size, the data per rank, the cache mode and whether the
    timed writes made new files from the printout's `# vs-ior: transfer X, N MiB per rank, ...,
    storage DEV FS, cache MODE, writes new|overwrite, ...` line. Printouts from before the
    script wrote one get "?": no line at all before 2026-11-26 23:27, no storage before
    2026-11-27 02:00. The cache mode and new/overwrite came at 04:08 that day; every run
    before them was buffered and wrote new files, which is what their absence means.
    A read's case also carries whose data the ranks read, from the `# reads: own|other` line
    (2026-11-27 07:36): before it, on one host, IOR's -C moved no rank and fsbench's
    --reorder-ranks read the next rank's data, "mixed"; a write's case has "-" there, since
    the writes were the same before and after."""
    transfer, per_rank, storage, cache, writes, reads = "?", "?", "?", "buffered", "new", "mixed"
    front = "run"
    for line in open(path):
        if line.startswith("# vs-ior: transfer "):
            transfer = line.split()[3].rstrip(",")
            m = re.search(r" (\d+) MiB per rank,", line)
            per_rank = f"{m.group(1)}m" if m else "?"
            m = re.search(r"storage ([^,]+),", line)
            storage = m.group(1) if m else "?"
            m = re.search(r"cache (\w+),", line)
            cache = m.group(1) if m else "buffered"
            m = re.search(r"writes (\w+),", line)
            writes = m.group(1) if m else "new"
            # FSBENCH_CLI=ior: fsbench ran as `fsbench ior`; its pairs pool apart from run's.
            m = re.search(r", fsbench (run|ior),", line)
            front = m.group(1) if m else "run"
            # A printout's own `# reads:` line follows its conditions line; none: "mixed".
            reads = "mixed"
            continue
        if line.startswith("# reads: "):
            reads = line.split()[2]
            continue
        f = line.split()
        if len(f) < 9 or not (f[1].isdigit() and f[3].isdigit()):
            continue
        try:
            ratio = float(f[8])
        except ValueError:
            # vs-ior.sh prints no ratio ("-") for a pair whose bytes differed.
            if "DIFFER" not in line:
                continue
            ratio = float("nan")
        fsbench_first = int(f[3]) % 2 == 0
        whose = reads if f[2] == "read" else "-"
        layout = f[0] if front == "run" else f"{f[0]}({front})"
        yield (storage, transfer, per_rank, cache, writes, whose, layout, int(f[1]), f[2]), ratio, "DIFFER" in line, fsbench_first


def interval(ratios):
    """The 95 % interval of the geometric mean: a t interval on the logs of the ratios (the
    pairs are independent; with the order alternating, a penalty that always falls on the
    tool that runs first is symmetric in log and cancels in the mean)."""
    if len(ratios) < 2:
        return ""
    logs = [math.log(x) for x in ratios]
    df = len(logs) - 1
    t = T95[df - 1] if df <= len(T95) else 1.96
    half = t * statistics.stdev(logs) / math.sqrt(len(logs))
    m = statistics.fmean(logs)
    return f"{math.exp(m - half):.2f}..{math.exp(m + half):.2f}"


def geomean(ratios):
    return math.exp(statistics.fmean(math.log(x) for x in ratios))


def main(paths):
    cases = {}
    for path in paths:
        for case, ratio, differ, fsbench_first in pair_lines(path):
            cases.setdefault(case, []).append((ratio, differ, fsbench_first))
    if not cases:
        sys.exit("no pair lines in " + " ".join(paths))
    width = max([len("storage")] + [len(c[0]) for c in cases])
    print(f"{'storage':<{width}} {'xfer':>4} {'/rank':>6} {'cache':<8} {'writes':<9} {'reads':<5} {'layout':<18} {'np':>3} {'phase':<5} {'pairs':>5} {'median':>7} {'geomean':>7}"
          f" {'min..max':>12} {'95% CI':>11} {'fsb 1st':>7} {'its CI':>11} {'n':>3}")
    for (storage, xfer, per_rank, cache, writes, reads, layout, np, phase), v in cases.items():
        head = f"{storage:<{width}} {xfer:>4} {per_rank:>6} {cache:<8} {writes:<9} {reads:<5} {layout:<18} {np:>3} {phase:<5} {len(v):>5}"
        if any(d for _, d, _ in v):
            print(f"{head}  bytes differ: no ratio")
            continue
        r = sorted(x for x, _, _ in v)
        if r[0] <= 0:
            print(f"{head}  a tool reported no bandwidth")
            continue
        first = [x for x, _, f in v if f]
        by_order = f"{geomean(first):>7.2f} {interval(first):>11}" if first else f"{'':>7} {'':>11}"
        print(f"{head} {statistics.median(r):>7.2f}"
              f" {geomean(r):>7.2f} {r[0]:>5.2f}..{r[-1]:<5.2f} {interval(r):>11}"
              f" {by_order} {len(first):>3}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
