#!/usr/bin/env python3
"""One pair of bench/vs-build.sh as a bench/pairs.py line: the work each build measured and
its speed, read from the two Results.

    python3 bench/vs_build.py pair CASE PAIR THIS.json OTHER.json METRIC EXACT

The work, per flowop or phase (the Result's `groups`; the whole run when it has none): its
share of the run's operations and its bytes per operation read and written, and with EXACT=1
its operation and byte counts as well. The value: the run's METRIC (`iops` or
`bytes_per_sec`) from its totals; for a command that writes several Results (a suite), the
operations (or bytes) of all of them over the sum of their measured times.
"""
import json
import os
import sys


def _results(path):
    """The Results of one run: one, or a list (a sweep writes several), or every Result in a
    directory (a suite's `--output DIR`), in the order of their names."""
    if os.path.isdir(path):
        found = []
        for root, _, files in sorted(os.walk(path)):
            for name in sorted(files):
                if name.endswith(".json"):
                    found.extend(r for r in _results(os.path.join(root, name))
                                 if isinstance(r, dict) and "total" in r)
        return found
    with open(path) as f:
        doc = json.load(f)
    return doc if isinstance(doc, list) else [doc]


def _parts(result, prefix):
    """(name, stats) of each flowop or phase, or of the whole run."""
    groups = result.get("groups") or []
    if not groups:
        return [(prefix + "run", result["total"])]
    seen = {}
    for g in groups:
        name = g.get("name") or g.get("op") or "?"
        run = g.get("run")
        key = prefix + (f"{name} (run {run})" if run not in (None, 1) else name)
        seen[key] = g["stats"]
    return list(seen.items())


def value(results, metric):
    """The metric over every Result: its own with one, else the sum of operations (or bytes)
    over the sum of their measured times."""
    if len(results) == 1:
        return float(results[0]["total"].get(metric, 0.0))
    field = "ops" if metric == "iops" else "bytes"
    done = sum(float(r["total"].get(field, 0)) for r in results)
    took = sum(float(r["total"].get("elapsed_s", 0)) for r in results)
    return done / took if took > 0 else 0.0


def work(results, exact):
    """Per flowop or phase (the counts of Results with the same name added up): its share of
    the operations, its bytes per read and per write, and with `exact` the counts."""
    total_ops = max(sum(int(r["total"].get("ops", 0)) for r in results), 1)
    counts = {}
    for r in results:
        prefix = f"{r.get('name', '?')}: " if len(results) > 1 else ""
        for name, s in _parts(r, prefix):
            c = counts.setdefault(name, {})
            for k in ("ops", "read_ops", "read_bytes", "write_ops", "write_bytes"):
                c[k] = c.get(k, 0) + int(s.get(k, 0))
    out = {}
    for name, c in counts.items():
        out[f"{name}: share of ops"] = c["ops"] / total_ops
        for d in ("read", "write"):
            n = c[f"{d}_ops"]
            if n:
                out[f"{name}: {d} bytes/op"] = c[f"{d}_bytes"] / n
            if exact:
                out[f"{name}: {d} ops"] = n
                out[f"{name}: {d} bytes"] = c[f"{d}_bytes"]
        if exact:
            out[f"{name}: ops"] = c["ops"]
    return out


def pair(case, number, this_path, other_path, metric, exact):
    this, other = _results(this_path), _results(other_path)
    first = "a" if int(number) % 2 == 1 else "b"
    return {
        "case": case,
        "pair": int(number),
        "first": first,
        "a": {"value": value(this, metric), "work": work(this, exact)},
        "b": {"value": value(other, metric), "work": work(other, exact)},
    }


def main(argv):
    if len(argv) == 7 and argv[0] == "pair":
        _, case, number, this_path, other_path, metric, exact = argv
        print(json.dumps(pair(case, number, this_path, other_path, metric, exact == "1")))
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
