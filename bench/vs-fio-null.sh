#!/usr/bin/env bash
# fsbench --engine null vs fio ioengine=null: what each tool costs per I/O when the I/O itself
# costs nothing (every op completes at once, no system call). Same op count, same block size,
# random reads over the same 1 GiB range, one thread, queue depth 1, alternating pairs.
#
#   bench/vs-fio-null.sh [PAIRS] [COUNT] [BS]          (defaults: 8, 4m, 4k)
#   PIN=1 bench/vs-fio-null.sh                          # both under `taskset -c 1`
#   FSBENCH=target/debug/fsbench bench/vs-fio-null.sh 2 20k   # a smoke run, no release build
#
# The method is bench/pairs.py's: pairs in ABBA order, the work each tool measured (read ops
# and read bytes) compared before any speed, no ratio for different work, the median ratio of
# the pairs with its 95 % interval. Printed per pair and as medians:
#   - ns/op: the tool's timed I/O loop divided by its ops (fsbench: elapsed_s of the timed
#     phase; fio: read.runtime, whole milliseconds, so give enough ops for a long run);
#   - ops per CPU second: ops over the CPU time of the I/O thread as the tool reports it
#     (fsbench: cpu_s of the worker; fio: (usr_cpu + sys_cpu) % of its runtime).
# fio runs with norandommap (fsbench keeps no random map by default) and its default
# latency accounting; fsbench with its default latency histogram.
#
# Needs fio (Debian package `fio`: apt-get install -y fio) and python3. Nothing is written:
# both null engines leave the target untouched (fsbench never opens it). Never run in CI; run
# it on an otherwise idle machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PAIRS=${1:-8}
COUNT=${2:-4m}
BS=${3:-4k}
command -v fio >/dev/null || { echo "fio is missing: apt-get install -y fio" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is missing" >&2; exit 2; }
if [ -z "${FSBENCH:-}" ]; then
    (cd "$ROOT" && cargo build --release --quiet)
    FSBENCH="$ROOT/target/release/fsbench"
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export ROOT PAIRS COUNT BS FSBENCH WORK PIN="${PIN:-}"
python3 - <<'PY'
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ["ROOT"], "bench"))
import pairs  # noqa: E402  (bench/pairs.py)

E = os.environ
WORK = E["WORK"]
PIN = ["taskset", "-c", "1"] if E["PIN"] == "1" else []


def count(text):
    """4m -> 4194304 (k, m, g are powers of 1024, as both tools read them)."""
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower()
    return int(t[:-1]) * mult[t[-1]] if t[-1] in mult else int(t)


N = count(E["COUNT"])
BS = count(E["BS"])
TARGET = os.path.join(WORK, "never-created")


def run_fsbench():
    out = os.path.join(WORK, "fsbench.json")
    subprocess.run(PIN + [E["FSBENCH"], "run", "--engine", "null", "--rw", "randread",
                          "--bs", str(BS), "--size", "1g", "--count", str(N),
                          "--format", "json", "--output", out, TARGET],
                   check=True, stdout=subprocess.DEVNULL)
    t = json.load(open(out))["total"]
    os.remove(out)
    ops, secs, cpu = t["read_ops"], t["elapsed_s"], t["cpu_s"]
    return {"ops": ops, "bytes": t["read_bytes"], "secs": secs, "cpu": cpu}


def run_fio():
    p = subprocess.run(PIN + ["fio", "--name=null", "--ioengine=null", "--rw=randread",
                              f"--bs={BS}", "--size=1g", f"--io_size={N * BS}",
                              "--norandommap", "--randrepeat=1", "--thread",
                              "--output-format=json"],
                       check=True, capture_output=True, text=True)
    j = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]
    r = j["read"]
    secs = r["runtime"] / 1000.0
    cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * secs
    return {"ops": r["total_ios"], "bytes": r["io_bytes"], "secs": secs, "cpu": cpu}


def work(m):
    return {"read ops": m["ops"], "read bytes": m["bytes"]}


ns_lines, cpu_lines = [], []
print(f"{N} random reads of {BS} bytes per run, {E['PAIRS']} pairs{' pinned to CPU 1' if PIN else ''}")
print("pair first    fsbench ns/op  fio ns/op   fsbench ops/CPU s  fio ops/CPU s")
for n in range(1, int(E["PAIRS"]) + 1):
    order = pairs.first(n, "fsbench", "fio")
    got = {}
    for tool in order:
        got[tool] = run_fsbench() if tool == "fsbench" else run_fio()
    a, b = got["fsbench"], got["fio"]
    ns = lambda m: m["secs"] / m["ops"] * 1e9 if m["ops"] else 0.0
    per_cpu = lambda m: m["ops"] / m["cpu"] if m["cpu"] > 0 else 0.0
    print(f"{n:4} {order[0]:8} {ns(a):13.1f} {ns(b):10.1f} {per_cpu(a):18.0f} {per_cpu(b):14.0f}")
    first = "a" if order[0] == "fsbench" else "b"
    # ns/op: fio over fsbench, so that above 1.0 means fsbench costs less per op.
    ns_lines.append({"case": "null randread", "pair": n, "first": "b" if first == "a" else "a",
                     "a": {"value": ns(b), "work": work(b)},
                     "b": {"value": ns(a), "work": work(a)}})
    cpu_lines.append({"case": "null randread", "pair": n, "first": first,
                      "a": {"value": per_cpu(a), "work": work(a)},
                      "b": {"value": per_cpu(b), "work": work(b)}})

for name, lines, names, metric in [
    ("ns.jsonl", ns_lines, ("fio", "fsbench"), "ns/op"),
    ("cpu.jsonl", cpu_lines, ("fsbench", "fio"), "ops per CPU second"),
]:
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        for l in lines:
            f.write(json.dumps(l) + "\n")
    pairs.report(path, names, metric)
PY
