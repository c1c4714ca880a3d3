#!/usr/bin/env python3
"""The one method of every comparison of two tools (or two settings) in bench/.

Every script measures in pairs and hands the pairs to this module, so that every printed
ratio means the same thing:

- Order: the tool that goes first alternates from pair to pair (ABBA: pair 1 runs A then B,
  pair 2 B then A, ...), so a drift of the machine or a penalty for going first falls on both
  sides alike. `first(pair, a, b)` gives the order.
- Same work before same speed: each side of a pair reports the work it *measured* (bytes and
  ops per direction, each flowop or phase by name). A name present on one side only, or a
  value that differs by more than the tolerance, is DIFFERENT WORK, and no ratio is printed
  for that case, whatever its speeds. A value may be a number or a range [lo, hi] (what a
  tool's rounded printout allows); ranges compare by overlap.
- Same window: the scripts time both tools over the same phase (their docs say which), or
  state and measure the difference.
- The figure: the median of the pairs' ratios A/B with its 95 % distribution-free interval
  (order statistics of the median: the binomial distribution with p = 1/2, so no assumption
  about how the ratios spread), and the count of pairs. Fewer than 6 pairs give no 95 %
  interval; then no verdict is given either. When the interval straddles 1.0, the verdict is
  "parity": the pairs cannot tell the two apart.

As a program, for shell scripts:

    python3 bench/pairs.py first PAIR A B        prints "A B" or "B A"
    python3 bench/pairs.py report FILE [--a NAME] [--b NAME] [--metric TEXT] [--tolerance F]

FILE holds one JSON object per line, one per pair:
    {"case": "...", "pair": 1, "first": "a", "a": {"value": 123.0, "work": {"read bytes": 4096}},
     "b": {"value": 120.0, "work": {"read bytes": [4090, 4100]}}}
`report` prints one line per case (in the order first seen); exit status 0.
"""
import json
import math
import statistics
import sys

MIN_PAIRS = 6  # the fewest pairs whose median has a 95 % interval (1 - 2/2^6 = 96.9 %)


def first(pair, a, b):
    """The order of pair number `pair` (1, 2, ...): A first in odd pairs, B first in even."""
    return (a, b) if int(pair) % 2 == 1 else (b, a)


def _range(v):
    if isinstance(v, (list, tuple)):
        lo, hi = float(v[0]), float(v[1])
        return min(lo, hi), max(lo, hi)
    return float(v), float(v)


def _show(v):
    lo, hi = _range(v)
    return f"{lo:g}" if lo == hi else f"{lo:g}..{hi:g}"


def work_differences(work_a, work_b, tolerance=0.0, names=("A", "B")):
    """What differs between the work two sides measured: every name on one side only, and
    every value that differs by more than `tolerance` (relative) after the ranges are taken
    into account. Empty: the same work."""
    diffs = []
    for k in sorted(set(work_a) | set(work_b)):
        if k not in work_b:
            diffs.append(f"{k}: only {names[0]} did it ({_show(work_a[k])})")
            continue
        if k not in work_a:
            diffs.append(f"{k}: only {names[1]} did it ({_show(work_b[k])})")
            continue
        (alo, ahi), (blo, bhi) = _range(work_a[k]), _range(work_b[k])
        scale = max(abs(alo), abs(ahi), abs(blo), abs(bhi))
        gap = max(blo - ahi, alo - bhi, 0.0)
        if gap > tolerance * scale:
            diffs.append(f"{k}: {names[0]} {_show(work_a[k])}, {names[1]} {_show(work_b[k])}")
    return diffs


def median_interval(ratios):
    """(median, low, high) of the ratios; low and high are the 95 % interval of the median
    from order statistics (None with fewer than MIN_PAIRS ratios)."""
    xs = sorted(ratios)
    n = len(xs)
    if n == 0:
        return None, None, None
    med = statistics.median(xs)
    # The largest k with P(Binomial(n, 1/2) < k) <= 2.5 %: [x_(k), x_(n+1-k)] covers the
    # median with at least 95 %.
    k, below = 0, 0.0
    while True:
        below_next = below + math.comb(n, k) / 2.0**n
        if below_next > 0.025:
            break
        below, k = below_next, k + 1
    if k == 0:
        return med, None, None
    return med, xs[k - 1], xs[n - k]


def verdict(low, high):
    if low is None:
        return f"no verdict (fewer than {MIN_PAIRS} pairs give no 95 % interval)"
    if low <= 1.0 <= high:
        return "parity (the interval straddles 1.0)"
    return "above 1.0" if low > 1.0 else "below 1.0"


def summarize(pairs, tolerance=0.0, names=("A", "B")):
    """The figure of one case from its pairs: each {"a": {"value", "work"}, "b": {...},
    "first": "a"|"b"}. Returns a dict: n, differences (per pair, "pair N: ..."), and when
    the work is the same in every pair: median, low, high, verdict, a_first (how many pairs
    ran A first)."""
    out = {"n": len(pairs), "differences": []}
    for i, p in enumerate(pairs):
        for d in work_differences(p["a"].get("work", {}), p["b"].get("work", {}), tolerance, names):
            out["differences"].append(f"pair {p.get('pair', i + 1)}: {d}")
    if out["differences"] or not pairs:
        return out
    ratios = []
    for p in pairs:
        a, b = float(p["a"]["value"]), float(p["b"]["value"])
        if a <= 0 or b <= 0:
            out["differences"].append(f"pair {p.get('pair')}: a side measured nothing ({a:g} / {b:g})")
            return out
        ratios.append(a / b)
    med, low, high = median_interval(ratios)
    out.update(median=med, low=low, high=high, verdict=verdict(low, high),
               a_first=sum(1 for p in pairs if p.get("first", "a") == "a"))
    return out


def line(case, s, names=("A", "B"), metric="ratio"):
    """One printed line for a case: never a ratio for different work."""
    if s["differences"]:
        shown = "; ".join(s["differences"][:4])
        more = len(s["differences"]) - 4
        return (f"{case}: DIFFERENT WORK, no ratio ({s['n']} pairs): {shown}"
                + (f"; and {more} more" if more > 0 else ""))
    if not s["n"]:
        return f"{case}: no pairs"
    interval = (f"95 % interval {s['low']:.3f}..{s['high']:.3f}" if s["low"] is not None
                else "95 % interval n/a")
    return (f"{case}: {metric} {names[0]}/{names[1]} median {s['median']:.3f}, {interval}, "
            f"{s['n']} pairs ({s['a_first']} with {names[0]} first): {s['verdict']}")


def report(path, names=("A", "B"), metric="ratio", tolerance=0.0):
    cases = {}
    with open(path) as f:
        for text in f:
            if text.strip():
                p = json.loads(text)
                cases.setdefault(p["case"], []).append(p)
    for case, pairs in cases.items():
        print(line(case, summarize(pairs, tolerance, names), names, metric))


def main(argv):
    if len(argv) >= 4 and argv[0] == "first":
        print(*first(argv[1], argv[2], argv[3]))
        return
    if len(argv) >= 2 and argv[0] == "report":
        opts = {"--a": "A", "--b": "B", "--metric": "ratio", "--tolerance": "0"}
        rest = argv[2:]
        while rest:
            if rest[0] not in opts or len(rest) < 2:
                sys.exit(f"pairs.py report: unknown or incomplete option {rest[0]}")
            opts[rest[0]] = rest[1]
            rest = rest[2:]
        report(argv[1], (opts["--a"], opts["--b"]), opts["--metric"], float(opts["--tolerance"]))
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
