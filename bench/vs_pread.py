#!/usr/bin/env python3
"""fsbench vs a bare pread loop: what fsbench's measurement costs on its fastest path.

Called by bench/vs-pread.sh (which builds fsbench and bench/pread_loop.rs first). The case is
issue 13's: hot-cache 4 KiB random reads, psync engine, 1 thread, default measurement (latency
histogram on), on one 1 GiB file that stays in the page cache for the whole comparison: a
`pread_loop --hold` process maps and locks it (a `drop_caches` or memory pressure from other
work on the machine would otherwise make some runs read from the disk).

Same work on both sides:
- Same offsets. fsbench runs once untimed with `--trace` (CSV); the bare loop loads that
  trace's offsets into memory before its clock starts. The measured fsbench runs use the same
  `--seed`, so they issue the same offsets in the same order (the generator is seeded and
  deterministic; the script checks it by tracing once more at the end and comparing). The
  loop thus computes nothing per I/O, not even the random number: every nanosecond fsbench
  spends per I/O beyond the pread counts against it.
- Same count. Both do exactly COUNT reads (`--count`), and the script stops if the ops
  counts of a pair differ.
- Same timing. Both time only their I/O loop (fsbench: the worker's `elapsed_s`, from the
  barrier to the end of its loop; the loop: Instant around its for loop); process start,
  file opening and buffer allocation are outside on both sides.
- Same CPU. Both run under `taskset -c PIN` (default CPU 1), in alternating order, so drift
  of the machine hits both alike.

Prints each pair, then the median ops/s of each, and the median of the per-pair ratios
fsbench/loop with its 95 % interval and the count of pairs (bench/pairs.py: the order
alternates, ABBA; a pair whose read counts differ is DIFFERENT WORK and no ratio is printed;
"parity" when the interval straddles 1.0). Beside the wall-clock
ratio it prints the same ratio in I/Os per CPU second of the I/O thread (both sides measure it
with getrusage RUSAGE_THREAD around their loop): on a machine where other work takes the CPU
away now and then, that one moves less, and on a quiet machine the two agree (the loop never
sleeps).

Environment: PIN=CPU (default 1; PIN= runs unpinned), SEED (default 42). Arguments:
[DIR] [PAIRS] [COUNT] (defaults /var/tmp, 15, 1m). Never run in CI; not a timed test.
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pairs  # noqa: E402  (bench/pairs.py: the one method of every comparison)

DIR = sys.argv[1] if len(sys.argv) > 1 else "/var/tmp"
PAIRS = int(sys.argv[2]) if len(sys.argv) > 2 else 15
COUNT_ARG = sys.argv[3] if len(sys.argv) > 3 else "1m"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TGT = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
FSB = os.environ.get("FSBENCH", os.path.join(TGT, "release/fsbench"))
LOOP = os.environ.get("PREAD_LOOP", os.path.join(TGT, "pread_loop"))
PIN = os.environ.get("PIN", "1")
SEED = os.environ.get("SEED", "42")
FILE = os.path.join(DIR, f"fsbench-vs-pread-{os.getpid()}.dat")
OFFS = os.path.join(DIR, f"fsbench-vs-pread-{os.getpid()}.csv")
CASE = ["--rw", "randread", "--bs", "4k", "--size", "1g", "--no-invalidate", "--seed", SEED]


def usage(msg):
    print(f"vs-pread: {msg}", file=sys.stderr)
    sys.exit(2)


def count_of(s):
    units = {"k": 1 << 10, "m": 1 << 20}
    s = s.lower()
    try:
        n = int(s[:-1]) * units[s[-1]] if s[-1:] in units else int(s)
    except ValueError:
        usage(f"COUNT {s!r} is not a number of I/Os (e.g. 1m, 500k, 200000)")
    if n <= 0:
        usage("COUNT must be positive")
    return n


COUNT = count_of(COUNT_ARG)


def run(argv):
    if PIN:
        argv = ["taskset", "-c", PIN] + argv
    p = subprocess.run(argv, capture_output=True)
    if p.returncode != 0:
        sys.exit(f"{argv} failed ({p.returncode}): {p.stderr.decode(errors='replace').strip()}")
    return p.stdout


def hold():
    """Lock FILE in the page cache until the returned process is closed."""
    p = subprocess.Popen([LOOP, "--hold", FILE], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = p.stdout.readline().decode()
    if not line.startswith("held"):
        sys.exit(f"could not lock {FILE} in memory: {p.wait()}")
    return p


def trace(path):
    run([FSB, "run"] + CASE + ["--count", str(COUNT), "--trace-records", str(COUNT),
                               "--trace", path, "--format", "json", FILE])
    with open(path) as f:
        next(f)
        return [line.split(",")[4] for line in f]


def measure(tool):
    if tool == "fsb":
        t = json.loads(run([FSB, "run"] + CASE + ["--count", str(COUNT), "--format", "json",
                                                  FILE]))["total"]
        if t["errors"]:
            sys.exit("fsbench reported errors")
        return {"ops": t["ops"], "iops": t["iops"], "cpu_iops": t["ops"] / max(t["cpu_s"], 1e-9)}
    j = json.loads(run([LOOP, FILE, OFFS]))
    return {"ops": j["ops"], "iops": j["iops"], "cpu_iops": j["ops"] / max(j["cpu_s"], 1e-9)}


def machine():
    model = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    df = subprocess.run(["df", "-T", DIR], capture_output=True, text=True).stdout.splitlines()[1].split()
    load = open("/proc/loadavg").read().split()[:3]
    return (f"{os.cpu_count()} cores, {model}, kernel {os.uname().release}, {df[1]} on {df[0]}, "
            f"pin {'cpu ' + PIN if PIN else 'none'}, load {' '.join(load)}")


def main():
    if PIN and not all(part.replace("-", "").isdigit() for part in PIN.split(",")):
        usage(f"PIN={PIN!r} is not a CPU list (e.g. PIN=1)")
    if PAIRS < 1:
        usage("PAIRS must be at least 1")
    for p in (FSB, LOOP):
        if not os.access(p, os.X_OK):
            usage(f"{p} is missing (bench/vs-pread.sh builds it)")
    # The shared file: created (and marked) by fsbench so fsbench may reuse it.
    subprocess.run([FSB, "run", "--rw", "write", "--bs", "1m", "--size", "1g", "--keep",
                    "--fsync", "--format", "json", FILE], check=True, stdout=subprocess.DEVNULL)
    holder = hold()
    try:
        first = trace(OFFS)
        if len(first) != COUNT:
            sys.exit(f"the trace holds {len(first)} records, not {COUNT}")
        print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {machine()}")
        print(f"# hot-cache 4 KiB random read, psync, 1 thread, {COUNT} I/Os per run, "
              f"{PAIRS} alternating pairs; ratio = fsbench / bare pread loop")
        print(f"{'pair':>4} {'first':>6} {'fsbench':>10} {'loop':>10} {'ratio':>7}   "
              f"{'fsb/cpu-s':>10} {'loop/cpu-s':>10} {'ratio':>7}")
        rows, measured = [], {"wall": [], "cpu": []}
        for i in range(PAIRS):
            order = pairs.first(i + 1, "fsb", "loop")
            m = {tool: measure(tool) for tool in order}
            r = m["fsb"]["iops"] / m["loop"]["iops"]
            rc = m["fsb"]["cpu_iops"] / m["loop"]["cpu_iops"]
            rows.append((m["fsb"]["iops"], m["loop"]["iops"], r, rc))
            for name, key in (("wall", "iops"), ("cpu", "cpu_iops")):
                measured[name].append({
                    "pair": i + 1, "first": "a" if order[0] == "fsb" else "b",
                    "a": {"value": m["fsb"][key], "work": {"reads": m["fsb"]["ops"]}},
                    "b": {"value": m["loop"][key], "work": {"reads": m["loop"]["ops"]}}})
            print(f"{i + 1:>4} {order[0]:>6} {m['fsb']['iops']:10.0f} {m['loop']['iops']:10.0f} {r:7.3f}   "
                  f"{m['fsb']['cpu_iops']:10.0f} {m['loop']['cpu_iops']:10.0f} {rc:7.3f}", flush=True)
        again = os.path.join(DIR, f"fsbench-vs-pread-{os.getpid()}-check.csv")
        try:
            same = trace(again) == first
        finally:
            os.unlink(again)
        if not same:
            sys.exit("a second traced fsbench run issued other offsets: the comparison is void")
        print(f"median ops/s: fsbench {statistics.median(r[0] for r in rows):.0f}, "
              f"loop {statistics.median(r[1] for r in rows):.0f}")
        for name, what in (("wall", "ops/s"), ("cpu", "ops per CPU second")):
            s = pairs.summarize(measured[name], names=("fsbench", "loop"))
            print(pairs.line(f"ratio fsbench/loop ({name})", s, ("fsbench", "loop"), what))
        print(f"# offsets of a second traced run checked identical ({COUNT} I/Os)")
    finally:
        holder.stdin.close()
        holder.wait()
        for p in (FILE, OFFS):
            if os.path.exists(p):
                os.unlink(p)


if __name__ == "__main__":
    main()
