#!/usr/bin/env bash
# fio vs `fsbench fio` on the same job files: each file run by both tools, in pairs whose
# order alternates, the work each tool measured compared before any speed.
#
#   bench/vs-fio-jobs.sh [-n PAIRS] [-d DIR] JOB.fio ...      (defaults: 6 pairs, /var/tmp)
#   FSBENCH=target/debug/fsbench bench/vs-fio-jobs.sh -n 1 tests/fio-jobs/groups.fio   # smoke
#
# Every run (fio's and fsbench's) starts in a new scratch directory under DIR, which is its
# current directory and ${FIO_DIR} (job files name their files relative to it, or with
# directory=${FIO_DIR}); the directory and whatever the run left in it are removed after
# each run. A job file that writes elsewhere writes there with fio too.
#
# The method is bench/pairs.py's: pairs in ABBA order; for each figure (a job, or a group
# with group_reporting, by name) the work each tool measured is compared first: read ops,
# read bytes, write ops and write bytes (fio: --output-format=json, clones of a job added
# up; fsbench: its JSON Results). A figure whose work differs by more than 1 % in any pair
# prints DIFFERENT WORK and no ratio (a time-based job does as much as its speed allows,
# so compare jobs bounded by size). Otherwise the figure's line is the median ratio of
# fsbench's throughput (bytes per second of the figure; ops per second when it moved no
# bytes) to fio's over the pairs, with its 95 % interval. fio times a job in whole
# milliseconds: give jobs that last seconds, or its speeds mean little.
#
# Needs fio (Debian package `fio`) and python3. Never run in CI; run it on an otherwise idle
# machine: a compile beside it moves the numbers more than any difference between the tools.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PAIRS=6
DIR=/var/tmp
while getopts "n:d:" opt; do
    case $opt in
        n) PAIRS=$OPTARG ;;
        d) DIR=$OPTARG ;;
        *) echo "usage: $0 [-n PAIRS] [-d DIR] JOB.fio ..." >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-n PAIRS] [-d DIR] JOB.fio ..." >&2; exit 2; }
case $PAIRS in ''|*[!0-9]*|0) echo "-n: a number of pairs, 1 or more" >&2; exit 2 ;; esac
[ -d "$DIR" ] || { echo "-d $DIR: not a directory" >&2; exit 2; }
for f in "$@"; do [ -f "$f" ] || { echo "$f: no such job file" >&2; exit 2; }; done
command -v fio >/dev/null || { echo "fio is missing: apt-get install -y fio" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is missing" >&2; exit 2; }
if [ -z "${FSBENCH:-}" ]; then
    (cd "$ROOT" && cargo build --release --quiet)
    FSBENCH="$ROOT/target/release/fsbench"
fi
FSBENCH=$(cd "$(dirname "$FSBENCH")" && pwd)/$(basename "$FSBENCH")   # the runs change directory
[ -x "$FSBENCH" ] || { echo "$FSBENCH: not an executable" >&2; exit 2; }
WORK=$(mktemp -d "$DIR/vs-fio-jobs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export ROOT PAIRS FSBENCH WORK
python3 - "$@" <<'PY'
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ["ROOT"], "bench"))
import pairs  # noqa: E402  (bench/pairs.py)

E = os.environ
WORK = E["WORK"]
FILES = [os.path.abspath(f) for f in sys.argv[1:]]


def scratch(tool, n):
    d = os.path.join(WORK, f"{tool}-{n}")
    os.mkdir(d)
    return d


def figure(acc, name, rops, rbytes, wops, wbytes, speed):
    f = acc.setdefault(name, {"read ops": 0, "read bytes": 0, "write ops": 0,
                              "write bytes": 0, "speed": 0.0})
    f["read ops"] += rops
    f["read bytes"] += rbytes
    f["write ops"] += wops
    f["write bytes"] += wbytes
    f["speed"] += speed
    return acc


def run_fio(job, d):
    p = subprocess.run(["fio", "--output-format=json", job], cwd=d, capture_output=True,
                       text=True, env=dict(E, FIO_DIR=d))
    if p.returncode != 0:
        sys.exit(f"fio failed on {job}: {p.stderr.strip() or p.stdout.strip()}")
    doc = json.loads(p.stdout[p.stdout.index("{"):])
    acc = {}
    for j in doc["jobs"]:
        r, w = j["read"], j["write"]
        # Clones listed apart ran at the same time: their speeds add up.
        by_bytes = r["bw_bytes"] + w["bw_bytes"]
        speed = by_bytes if by_bytes else r["iops"] + w["iops"]
        figure(acc, j["jobname"], r["total_ios"], r["io_bytes"], w["total_ios"],
               w["io_bytes"], speed)
    return acc


def run_fsbench(job, d):
    out = os.path.join(d, "fsbench-results.json")
    p = subprocess.run([E["FSBENCH"], "fio", job, "--format", "json", "--output", out],
                       cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       env=dict(E, FIO_DIR=d))
    if p.returncode != 0:
        sys.exit(f"fsbench fio failed on {job}: {p.stderr.strip()}")
    doc = json.load(open(out))
    acc = {}
    for r in doc if isinstance(doc, list) else [doc]:
        t = r["total"]
        speed = t["bytes_per_sec"] if t["bytes"] else t["iops"]
        figure(acc, r["name"], t["read_ops"], t["read_bytes"], t["write_ops"],
               t["write_bytes"], speed)
    return acc


def work(f):
    return {k: v for k, v in f.items() if k != "speed"}


lines = []
print(f"{len(FILES)} job file(s), {E['PAIRS']} pair(s); throughput in MiB/s (ops/s without bytes)")
print("pair first    figure                          fsbench          fio")
for job in FILES:
    base = os.path.basename(job)
    for n in range(1, int(E["PAIRS"]) + 1):
        order = pairs.first(n, "fsbench", "fio")
        got = {}
        for tool in order:
            d = scratch(tool, n)
            try:
                got[tool] = run_fsbench(job, d) if tool == "fsbench" else run_fio(job, d)
            finally:
                shutil.rmtree(d, ignore_errors=True)
        a, b = got["fsbench"], got["fio"]
        for name in list(dict.fromkeys(list(a) + list(b))):
            fa, fb = a.get(name), b.get(name)
            show = lambda f: (f["speed"] / 2**20 if f["read bytes"] + f["write bytes"]
                              else f["speed"]) if f else 0.0
            print(f"{n:4} {order[0]:8} {base + ' [' + name + ']':31} {show(fa):12.1f} {show(fb):12.1f}")
            lines.append({"case": f"{base} [{name}]", "pair": n,
                          "first": "a" if order[0] == "fsbench" else "b",
                          "a": {"value": fa["speed"] if fa else 0.0, "work": work(fa) if fa else {}},
                          "b": {"value": fb["speed"] if fb else 0.0, "work": work(fb) if fb else {}}})

path = os.path.join(WORK, "pairs.jsonl")
with open(path, "w") as f:
    for l in lines:
        f.write(json.dumps(l) + "\n")
pairs.report(path, ("fsbench", "fio"), "throughput", 0.01)
PY
