#!/usr/bin/env python3
"""fsbench vs fio, side by side: one 1 GiB file, the same run, alternating pairs.

Called by bench/vs-fio.sh (which builds the release binary first). For every case it runs
PAIRS pairs of (fsbench, fio) on the same file, alternating which tool goes first (so drift of
the shared disk hits both alike), and prints, per case:

- the median IOPS of each tool and the median of the per-pair ratios fsbench/fio with its
  95 % interval and the count of pairs (bench/pairs.py, the one method of the comparison
  scripts: ABBA order, each direction's bytes per op and share of ops checked on both sides
  first, no ratio for different work, "parity" when the interval straddles 1.0), with how
  many pairs fsbench won; both tools time their I/O loop (fio's job runtime, fsbench's
  elapsed time of the timed phase);
- CPU per I/O two ways: as each tool reports it for its I/O threads (fsbench: getrusage of the
  worker threads; fio: usr_cpu + sys_cpu of the job), and for the whole process tree as the
  kernel accounts it to the parent (wait4 rusage: setup, fio's helper process and fsbench's
  main thread included). The second is the same instrument for both tools.

Environment: CASES="a b" picks cases; PIN=1 runs both tools under `taskset -c 1` (on a VM the
CPU that takes the disk interrupt runs a QD 1 loop ~25 % faster than the other one, so
unpinned runs measure where the scheduler put the thread as much as the tool); TICKER=MS keeps
a sleeper process on the same CPUs that wakes every MS milliseconds for the whole bench (see
below); FORMAT=md prints a Markdown table; RAW=FILE appends every pair's numbers to FILE as
JSON lines, so runs can be pooled later.

Why TICKER: on this Firecracker VM a QD 1 loop that leaves its CPU idle between completions
runs ~5 % slower than the same loop with any other task waking every 20 ms on that CPU. fio
always has such a task (its main process and helper thread wake ~100 times a second); fsbench
in thread mode has none. A shared ticker gives both tools the same surroundings. Measured
2026-11-22 (8 alternating rounds of 3 s, QD 1, pinned to CPU 1): fsbench 14824 IOPS alone,
15647 with a 20 ms ticker, fio 15761. Never run in CI; nothing here is a timed test.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pairs  # noqa: E402  (bench/pairs.py)

DIR = sys.argv[1] if len(sys.argv) > 1 else "/var/tmp"
PAIRS = int(sys.argv[2]) if len(sys.argv) > 2 else 6
SECS = int(sys.argv[3]) if len(sys.argv) > 3 else 10
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSB = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
FILE = os.path.join(DIR, "fsbench-vs-fio.dat")
PIN = os.environ.get("PIN", "")
TICKER = os.environ.get("TICKER", "")
WANT = os.environ.get("CASES", "").split()
RAW = os.environ.get("RAW", "")

# fio gets its fastest settings for each engine: registered buffers and files for io_uring,
# no random map (fsbench keeps none either), a fresh seed per run (fsbench's seed is fixed but
# its offsets are as uniform: checked with --trace against fio's --write_iolog).
URING_FIO = "--ioengine=io_uring --fixedbufs=1 --registerfiles=1"


def case(name, fsb, fio, warm=False, timed=True):
    t_fsb = f" --time {SECS}s" if timed else ""
    t_fio = f" --runtime={SECS} --time_based" if timed else ""
    return {"name": name, "fsb": fsb + t_fsb, "fio": fio + t_fio + " --norandommap --randrepeat=0",
            "warm": warm}


CASES = [
    case("hot_randread", "--rw randread --bs 4k --size 1g --no-invalidate",
         "--rw=randread --bs=4k --size=1g --ioengine=psync --invalidate=0", warm=True),
    case("seq_read_1m", "--rw read --bs 1m --size 1g",
         "--rw=read --bs=1m --size=1g --ioengine=psync --invalidate=1", timed=False),
    case("direct_randread", "--rw randread --bs 4k --size 1g --cache direct",
         "--rw=randread --bs=4k --size=1g --ioengine=psync --direct=1"),
]
# Issue 3's io_uring cases.
for qd in (1, 8, 32):
    CASES.append(case(f"uring_direct_rr_qd{qd}",
                      f"--rw randread --bs 4k --size 1g --cache direct --engine uring --qd {qd}",
                      f"--rw=randread --bs=4k --size=1g --direct=1 --iodepth={qd} {URING_FIO}"))
CASES.append(case("uring_hot_rr_qd32",
                  "--rw randread --bs 4k --size 1g --no-invalidate --engine uring --qd 32",
                  f"--rw=randread --bs=4k --size=1g --invalidate=0 --iodepth=32 {URING_FIO}",
                  warm=True))
CASES.append(case("uring_seq_1m_qd8",
                  "--rw read --bs 1m --size 1g --cache direct --engine uring --qd 8",
                  f"--rw=read --bs=1m --size=1g --direct=1 --iodepth=8 {URING_FIO}"))


def run(argv):
    """Run argv (pinned if PIN) to completion and return its standard output."""
    if PIN:
        argv = ["taskset", "-c", PIN] + argv
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    # communicate() reaped the child, so its CPU (and its children's) is now in os.times().
    if p.returncode != 0:
        sys.exit(f"{argv[0]} failed ({p.returncode}): {err.decode(errors='replace').strip()}")
    return out


def children_cpu():
    r = os.times()
    return r.children_user + r.children_system


def measure(tool, c):
    if c["warm"]:
        with open(FILE, "rb") as f:
            while f.read(1 << 20):
                pass
    before = children_cpu()
    if tool == "fsb":
        out = run([FSB, "run"] + c["fsb"].split() + ["--format", "json", FILE])
        t = json.loads(out)["total"]
        if t["errors"]:
            sys.exit("fsbench reported errors")
        iops, ops, cpu = t["iops"], t["ops"], t["cpu_s"]
        nbytes, reads = t["bytes"], t["read_ops"]
        per_dir = [("read", t["read_ops"], t["read_bytes"]), ("write", t["write_ops"], t["write_bytes"])]
    else:
        out = run(["fio", "--name=cmp", f"--filename={FILE}", "--output-format=json"]
                  + c["fio"].split())
        j = json.loads(out)["jobs"][0]
        if j["error"]:
            sys.exit("fio reported an error")
        r, w = j["read"], j["write"]
        iops = r["iops"] + w["iops"]
        ops = r["total_ios"] + w["total_ios"]
        nbytes, reads = r["io_bytes"] + w["io_bytes"], r["total_ios"]
        cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * j["job_runtime"] / 1000.0
        per_dir = [("read", r["total_ios"], r["io_bytes"]), ("write", w["total_ios"], w["io_bytes"])]
    # The work it measured, per direction: bytes per op, and the share of ops in that
    # direction within half a point (a timed run's op counts differ between tools; what
    # each op did and the mix must not).
    work = {}
    for d, n, b in per_dir:
        if n:
            work[f"{d} bytes per op"] = b / n
            share = n / max(ops, 1)
            work[f"{d} share of ops"] = [share - 0.005, share + 0.005]
    proc = children_cpu() - before
    return {"iops": iops, "cpu_us": cpu * 1e6 / max(ops, 1), "proc_us": proc * 1e6 / max(ops, 1),
            "bytes_per_op": nbytes / max(ops, 1), "read_share": reads / max(ops, 1),
            "work": work}


def figure(rows, key):
    """bench/pairs.py's summary of one figure over the pairs: the work check (bytes per op
    and share of ops per direction, each direction on both sides), then the median ratio
    fsbench/fio with its 95 % interval."""
    return pairs.summarize([{"pair": i + 1, "first": r["first"],
                             "a": {"value": r["fsb"][key], "work": r["fsb"]["work"]},
                             "b": {"value": r["fio"][key], "work": r["fio"]["work"]}}
                            for i, r in enumerate(rows)], names=("fsbench", "fio"))


def machine():
    model = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    df = subprocess.run(["df", "-T", DIR], capture_output=True, text=True).stdout.splitlines()[1].split()
    fio = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    return (f"{os.cpu_count()} cores, {model}, kernel {os.uname().release}, {df[1]} on {df[0]}, "
            f"{fio}, pin {'cpu ' + PIN if PIN else 'none'}, ticker {TICKER + ' ms' if TICKER else 'none'}")


def usage(msg):
    print(f"vs-fio: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    if TICKER:
        try:
            if float(TICKER) <= 0:
                raise ValueError
        except ValueError:
            usage(f"TICKER={TICKER!r} is not a positive number of milliseconds (e.g. TICKER=20)")
    if PIN and not all(part.replace("-", "").isdigit() for part in PIN.split(",")):
        usage(f"PIN={PIN!r} is not a CPU list (e.g. PIN=1 or PIN=0-1)")
    if not shutil.which("fio"):
        sys.exit("fio is missing: apt-get install fio")
    chosen = [c for c in CASES if not WANT or c["name"] in WANT]
    if not chosen:
        usage(f"no case matches CASES={' '.join(WANT)}; cases: {' '.join(c['name'] for c in CASES)}")
    # The shared file: created (and marked) by fsbench, so fsbench may reuse it; fio reads it.
    subprocess.run([FSB, "run", "--rw", "write", "--bs", "1m", "--size", "1g", "--keep",
                    "--fsync", "--format", "json", FILE], check=True, stdout=subprocess.DEVNULL)
    ticker = None
    if TICKER:
        sleeper = ["python3", "-c", f"import time\nwhile True: time.sleep({float(TICKER) / 1000})"]
        ticker = subprocess.Popen((["taskset", "-c", PIN] if PIN else []) + sleeper)
    md = os.environ.get("FORMAT") == "md"
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {machine()}")
    print(f"# {PAIRS} alternating pairs of {SECS} s per case; medians; ratio = median of per-pair fsbench/fio")
    if md:
        print("| case | work | fsbench IOPS | fio IOPS | IOPS ratio | fsbench wins | CPU us/IO fsbench / fio (threads) "
              "| CPU us/IO fsbench / fio (process) | process CPU ratio |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    else:
        print(f"{'case':<20} {'fsb_iops':>9} {'fio_iops':>9} {'ratio':>6} {'wins':>5} "
              f"{'cpu_us/io thr':>15} {'cpu_us/io proc':>15} {'ratio':>6}  work")
    try:
        for c in chosen:
            rows = []
            for i in range(PAIRS):
                order = pairs.first(i + 1, "fsb", "fio")
                m = {tool: measure(tool, c) for tool in order}
                rows.append({**m, "first": "a" if order[0] == "fsb" else "b"})
                if RAW:
                    with open(RAW, "a") as f:
                        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                        f.write(json.dumps({"case": c["name"], "time": stamp, "pin": PIN,
                                            "ticker_ms": TICKER, "secs": SECS, **m}) + "\n")
            iops_fig, cpu_fig = figure(rows, "iops"), figure(rows, "proc_us")
            same = not iops_fig["differences"]
            a = rows[0]["fsb"]
            work = (f"same: {a['bytes_per_op']:.0f} B/op, {a['read_share']:.0%} reads" if same
                    else "DIFFERENT WORK: " + "; ".join(iops_fig["differences"][:2]))
            med = lambda tool, k: statistics.median(r[tool][k] for r in rows)
            wins = sum(r["fsb"]["iops"] > r["fio"]["iops"] for r in rows)
            thr = f"{med('fsb', 'cpu_us'):.2f} / {med('fio', 'cpu_us'):.2f}"
            proc = f"{med('fsb', 'proc_us'):.2f} / {med('fio', 'proc_us'):.2f}"
            # A speed ratio of unequal work means nothing: it is not printed.
            rtxt = f"{iops_fig['median']:.3f}" if same else "-"
            ctxt = f"{cpu_fig['median']:.3f}" if same else "-"
            if md:
                print(f"| {c['name']} | {work} | {med('fsb', 'iops'):.0f} | {med('fio', 'iops'):.0f} | {rtxt} "
                      f"| {wins}/{PAIRS} | {thr} | {proc} | {ctxt} |")
            else:
                print(f"{c['name']:<20} {med('fsb', 'iops'):9.0f} {med('fio', 'iops'):9.0f} {rtxt:>6} "
                      f"{wins:>2}/{PAIRS:<2} {thr:>15} {proc:>15} {ctxt:>6}  {work}", flush=True)
            # The figures with their intervals and verdicts (bench/pairs.py).
            for fig, what in ((iops_fig, "IOPS"), (cpu_fig, "process CPU us/IO")):
                print(("<!-- " if md else "  ") + pairs.line(c["name"], fig, ("fsbench", "fio"), what)
                      + (" -->" if md else ""), flush=True)
    finally:
        if ticker:
            ticker.kill()
            ticker.wait()
        os.unlink(FILE)


if __name__ == "__main__":
    main()
