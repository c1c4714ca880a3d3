#!/usr/bin/env bash
# fsbench mdtest vs mdtest (IOR's mdtest) with the same command line: the same items, tree and
# phases run through both tools in REPS pairs whose order alternates (ABBA: fsbench first in
# odd pairs, mdtest first in even ones; bench/pairs.py), and the script prints per phase the
# median of the pairs' rate ratios (ops/s fsbench / mdtest) with its 95 % interval and the
# count of pairs ("parity" when the interval straddles 1.0).
#
# The work is checked first, in every pair and for every phase: the operations fsbench
# measured against the ones mdtest was set to do (its "N tasks, M files/directories" line for
# the item phases; for the tree phases its tree of (b^(z+1)-1)/(b-1) directories), and every
# phase present on both sides (a phase mdtest reports at rate 0 did not run). A phase one tool
# ran and the other did not, or with other counts, is DIFFERENT WORK and gets no ratio.
# mdtest times each phase between MPI barriers and fsbench between its own (one rank: none);
# both time the phase's operations only, set-up outside.
#
#   MDTEST=/path/to/mdtest bench/vs-mdtest.sh DIR [REPS]
#   env: ARGS (mdtest's flags for both, default "-n 20000 -F"; no -d, no -W, no -i),
#        MPIRUN (how mdtest is started, default "mpirun --allow-run-as-root -np 1"),
#        FSBENCH (target/release/fsbench), OUT (logs directory),
#        PIN (a CPU list: both tools run under `taskset -c PIN`; mpirun then binds nothing)
#
# This script neither fetches nor builds mdtest. Build it outside this repository, with an
# MPI installed (OpenMPI's mpicc on PATH):
#   git clone https://github.com/hpc/ior && cd ior && ./bootstrap && ./configure && make
# and point MDTEST at ior/src/mdtest. Not run in CI.
set -euo pipefail

DIR=${1:?usage: MDTEST=/path/to/mdtest $0 DIR [REPS]}
REPS=${2:-6}
ARGS=${ARGS:--n 20000 -F}
PIN=${PIN:-}
PINNED=()
# mpirun binds its ranks to cores of its own choosing unless told not to; pinned, the rank
# keeps the CPUs taskset gave mpirun.
if [ -n "$PIN" ]; then
    PINNED=(taskset -c "$PIN")
    MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --bind-to none -np 1}
fi
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root -np 1}
FSBENCH=${FSBENCH:-target/release/fsbench}
OUT=${OUT:-$(mktemp -d /tmp/vs-mdtest.XXXXXX)}
mkdir -p "$OUT"
: "${MDTEST:?set MDTEST to the path of an mdtest binary you built (see the top of this script)}"
[ -x "$MDTEST" ] || { echo "MDTEST=$MDTEST is not executable" >&2; exit 2; }
[ -x "$FSBENCH" ] || { echo "build fsbench first: cargo build --release (or set FSBENCH)" >&2; exit 2; }
[ -d "$DIR" ] || { echo "no such directory: $DIR" >&2; exit 2; }
for a in $ARGS; do
    case $a in
    -d* | -W* | -i*) echo "ARGS: leave out $a (the script sets the directory; -W and -i change what is compared)" >&2; exit 2 ;;
    esac
done
DIR=$(cd "$DIR" && pwd)

PAIRS_PY=$(cd "$(dirname "$0")" && pwd)/pairs.py
echo "fsbench mdtest vs mdtest ($MDTEST) in $DIR: $ARGS, $REPS pairs, order alternating (ABBA);"
echo "logs in $OUT; pinned: ${PIN:-no}; $(date -u +%F) $(uname -r)"
for r in $(seq 1 "$REPS"); do
    for tool in $(python3 "$PAIRS_PY" first "$r" fs md); do
        if [ "$tool" = fs ]; then
            "${PINNED[@]}" "$FSBENCH" mdtest $ARGS -d "$DIR" --output "$OUT/fs.$r.json" >"$OUT/fs.$r.txt"
        else
            work=$DIR/mdtest.$r
            mkdir "$work"
            "${PINNED[@]}" $MPIRUN "$MDTEST" $ARGS -d "$work" >"$OUT/md.$r.txt" 2>&1 || true
            rm -rf "${work:?}"
        fi
    done
done

BENCH_DIR=$(dirname "$PAIRS_PY") python3 - "$OUT" "$REPS" "$ARGS" <<'EOF'
# Per pair and phase: fsbench's measured ops and rate from its Result, mdtest's set-up count
# and rate from its printout; then bench/pairs.py's report per phase.
import json, os, re, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
import pairs
out, reps, args = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()

def flag(name, default):
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return int(args[i + 1])
        if a.startswith(name) and len(a) > len(name) and a[len(name):].isdigit():
            return int(a[len(name):])
    return default

z, b = flag("-z", 0), flag("-b", 1)
tree = 1 if z == 0 or b < 1 else (z + 1 if b == 1 else (b ** (z + 1) - 1) // (b - 1))
phases = ["Directory creation", "Directory stat", "Directory rename", "Directory removal",
          "File creation", "File stat", "File read", "File removal",
          "Tree creation", "Tree removal"]
row = re.compile(r"^\s+(%s)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)" % "|".join(phases))
items_re = re.compile(r"(\d+) tasks, (\d+) (files/directories|files|directories)")
lines = []
for r in range(1, reps + 1):
    first = pairs.first(r, "a", "b")[0]
    with open(os.path.join(out, f"fs.{r}.json")) as f:
        fs = json.load(f)
    fs_rate = {s["phase"]: s["mean"] for s in fs["mdtest"]["summary"]}
    fs_ops = {s["phase"]: s["ops"] for s in fs["mdtest"]["summary"]}
    md_rate, items = {}, None
    with open(os.path.join(out, f"md.{r}.txt")) as f:
        for l in f:
            m = items_re.search(l)
            if m:
                items = int(m.group(1)) * int(m.group(2))
            m = row.match(l)
            if m and float(m.group(4)) > 0:
                md_rate[m.group(1)] = float(m.group(4))
    for p in phases:
        if p not in fs_rate and p not in md_rate:
            continue
        md_ops = tree if p.startswith("Tree") else items
        a = {"value": fs_rate.get(p, 0.0), "work": {"ops": fs_ops[p]} if p in fs_rate else {}}
        bb = {"value": md_rate.get(p, 0.0),
              "work": {"ops": md_ops} if p in md_rate and md_ops is not None else {}}
        lines.append(json.dumps({"case": p, "pair": r, "first": first, "a": a, "b": bb}))
path = os.path.join(out, "pairs.jsonl")
with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")
pairs.report(path, ("fsbench", "mdtest"), "ops/s")
EOF
