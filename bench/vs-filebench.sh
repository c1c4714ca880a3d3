#!/usr/bin/env bash
# fsbench workload vs Filebench on Filebench's OWN stock workload files: the same .f file runs
# through both tools in REPS pairs whose order alternates (ABBA: fsbench first in odd pairs,
# Filebench first in even ones), and the script prints per workload and per flowop the ops/s
# and bytes/op of each tool, then the median of the pairs' ops/s ratios with its 95 % interval
# and the count of pairs (bench/pairs.py; "parity" when the interval straddles 1.0). Both
# tools are timed over their timed phase only (Filebench's run time from its IO Summary,
# fsbench's run duration), layout and cleanup outside.
# The work each tool measured is checked first, in every pair: bytes/op at the top level (IO
# Summary) and at every flowop, and every flowop present on both sides. Filebench prints
# mb/s with one decimal, so its bytes/op is known only within that rounding (a range, however
# slow the flowop); a value outside it by more than 5 %, or a flowop one tool did not report,
# is DIFFERENT WORK, and no ratio is printed for that workload: the two tools did not do the
# same work, so their speeds cannot be compared.
#
#   FILEBENCH=/path/to/filebench FILEBENCH_WORKLOADS=/path/to/filebench/workloads \
#       bench/vs-filebench.sh DIR [SECONDS] [REPS]
#   env: WORKLOADS ("fileserver varmail webserver webproxy oltp videoserver randomfileaccess"),
#        NFILES (1000), NTHREADS (8), FSBENCH (target/release/fsbench), OUT (results dir),
#        SHRINK (extra sed expressions applied to every file), FIXED_SIZES (1),
#        PIN (a CPU list: both tools run under `taskset -c PIN`),
#        FRESH_FS (ext4 or xfs: every run gets a file system made anew on a loop device
#        mounted at DIR, DIR must then be an empty directory; FS_IMAGE_DIR (/dev/shm) holds
#        its image, FS_SIZE (4G) its size),
#        REPORT_ONLY (1: run nothing, tabulate the runs already in OUT)
#
# Why FRESH_FS: a run of fileserver creates and deletes thousands of files, and how long the
# next create takes on ext4 depends on what was deleted before it (the allocator scans the
# recently deleted inodes of a group), so on one reused file system each run is measured on
# the state the previous run, of either tool, left. A fresh file system per run gives both
# tools the same start.
#
# Filebench's files are read from the directory the user names and shrunk with parameter
# overrides only (sed of `set $nfiles=`, `set $nthreads=`, `set $dir=`, `run N` and the
# variables below); their grammar is untouched and they are never copied into this
# repository. FIXED_SIZES=1 replaces a `cvar(...)` file size by its mean for both tools
# (Filebench draws cvars only with its plug-ins installed).
#
# CPU per op is that of the timed phase only, counted by a cgroup per tool run (bench/cgrun.py:
# every process the tool starts counts, however it is reaped) and cut at the run's start and end
# (Filebench's "Running..."/"Run took" lines, fsbench's JSON start time and duration). Needs
# root (cgroup v1 cpuacct or v2).
#
# This script neither fetches nor builds Filebench: build it outside this repository and point
# FILEBENCH at the binary. Its worker processes must map shared memory at the parent's
# address, so it is started with address-space randomisation disabled for its own process tree
# only (setarch -R), never system-wide. Not run in CI.
set -euo pipefail

DIR=${1:?usage: FILEBENCH=... FILEBENCH_WORKLOADS=... $0 DIR [SECONDS] [REPS]}
SECS=${2:-10}
REPS=${3:-6}
NFILES=${NFILES:-1000}
NTHREADS=${NTHREADS:-8}
FIXED_SIZES=${FIXED_SIZES:-1}
WORKLOADS=${WORKLOADS:-fileserver varmail webserver webproxy oltp videoserver randomfileaccess}
FSBENCH=${FSBENCH:-target/release/fsbench}
CGRUN=$(cd "$(dirname "$0")" && pwd)/cgrun.py
OUT=${OUT:-$(mktemp -d /tmp/vs-filebench.XXXXXX)}
mkdir -p "$OUT"
: "${FILEBENCH:?set FILEBENCH to the path of a filebench binary you built}"
: "${FILEBENCH_WORKLOADS:?set FILEBENCH_WORKLOADS to the directory of the stock .f files of Filebench}"
[ -x "$FILEBENCH" ] || { echo "FILEBENCH=$FILEBENCH is not executable" >&2; exit 2; }
[ -x "$FSBENCH" ] || { echo "build fsbench first: cargo build --release (or set FSBENCH)" >&2; exit 2; }
[ -d "$DIR" ] || { echo "no such directory: $DIR" >&2; exit 2; }
[ -d "$FILEBENCH_WORKLOADS" ] || { echo "no such directory: FILEBENCH_WORKLOADS=$FILEBENCH_WORKLOADS" >&2; exit 2; }
DIR=$(cd "$DIR" && pwd)
PIN=${PIN:-}
PINNED=()
[ -z "$PIN" ] || PINNED=(taskset -c "$PIN")
FS_IMAGE_DIR=${FS_IMAGE_DIR:-/dev/shm}
. "$(dirname "$0")/fresh_fs.sh"
fresh_fs_check "$DIR"
trap fresh_fs_end EXIT

# Shrink parameters of the stock files (only variables they set; absent ones are untouched).
shrink() { # name -> shrunk copy in $OUT
    local name=$1 src=$FILEBENCH_WORKLOADS/$1.f f=$OUT/$1.f
    [ -f "$src" ] || { echo "no $src" >&2; return 1; }
    sed -E \
        -e "s|^set \\\$dir=.*|set \$dir=$DIR|" \
        -e "s|^set \\\$nfiles=.*|set \$nfiles=$NFILES|" \
        -e "s|^set \\\$nthreads=.*|set \$nthreads=$NTHREADS|" \
        -e "s|^set \\\$nshadows=.*|set \$nshadows=$NTHREADS|" \
        -e "s|^set \\\$ndbwriters=.*|set \$ndbwriters=2|" \
        -e "s|^set \\\$numactivevids=.*|set \$numactivevids=4|" \
        -e "s|^set \\\$numpassivevids=.*|set \$numpassivevids=4|" \
        -e "s|^set \\\$filesize=[0-9]+g|set \$filesize=64m|" \
        -e "s|^run [0-9]+|run $SECS|" \
        -e "s|^set \\\$runtime=.*|set \$runtime=$SECS|" \
        ${SHRINK:+-e "$SHRINK"} "$src" >"$f"
    # Some stock files end without `run` (Filebench's interactive use): run for SECS.
    grep -Eq '^run( |$)' "$f" || echo "run $SECS" >>"$f"
    # Filebench 1.5 parses only its own `set $v = randvar(...)` form; stock files still
    # written as `define randvar name=$v, ...` are rewritten to it (same variable; fsbench
    # reads both forms) so that Filebench can run them at all.
    python3 - "$f" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
out, i = [], 0
for m in re.finditer(r"define randvar name=\$(\w+),", s):
    out.append(s[i:m.start()])
    j, depth = m.end(), 0
    while j < len(s):
        c = s[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif (c == "\n" and depth == 0 and not re.match(r"\s*\{", s[j + 1:])
              and not s[:j].rstrip().endswith((",", "="))):
            break
        j += 1
    out.append("set $%s = randvar(%s)" % (m.group(1), " ".join(s[m.end():j].split())))
    i = j
out.append(s[i:])
open(p, "w").write("".join(out))
PY
    if [ "$FIXED_SIZES" = 1 ]; then
        sed -E -i 's|^set \$([a-z]+)=cvar\(type=cvar-gamma,parameters=mean:([0-9]+);.*|set $\1=\2|' "$f"
    fi
    echo "$f"
}

filesets() { # the fileset names of a .f file, `name=$var` resolved through its `set $var=`
    local n v
    for n in $(grep -o 'define file[a-z]* name=[$A-Za-z0-9_.-]*' "$1" | sed 's/.*name=//'); do
        if [ "${n#\$}" != "$n" ]; then
            v=$(sed -n "s/^set \\\$${n#\$}=\([A-Za-z0-9_.-]*\).*/\1/p" "$1" | tail -1)
            n=$v
        fi
        [ -n "$n" ] && echo "$n"
    done
}

echo "fsbench vs Filebench (Filebench's own files from $FILEBENCH_WORKLOADS) in $DIR:"
echo "nfiles=$NFILES nthreads=$NTHREADS, ${SECS}s x $REPS pairs, order alternating (ABBA); logs in $OUT; $(date -u +%F) $(uname -r)"
if [ -n "$FRESH_FS" ]; then fs_used="a fresh $FRESH_FS per run on a loop device in $FS_IMAGE_DIR"; else fs_used="the one at $DIR, reused"; fi
echo "pinned: ${PIN:-no}; file system: $fs_used"
PAIRS_PY=$(cd "$(dirname "$0")" && pwd)/pairs.py
for w in $WORKLOADS; do
    [ "${REPORT_ONLY:-}" != 1 ] || break
    f=$(shrink "$w") || continue
    for r in $(seq 1 "$REPS"); do
        for tool in $(python3 "$PAIRS_PY" first "$r" fs fb); do
            # Each run starts from a clean directory: the trees either tool left are removed.
            for s in $(filesets "$f"); do rm -rf "${DIR:?}/$s"; done
            fresh_fs
            if [ "$tool" = fs ]; then
                "$CGRUN" "$OUT/$w.fs.$r" -- "${PINNED[@]}" "$FSBENCH" workload "$f" --output "$OUT/$w.fs.$r.json" || true
            else
                # Filebench sometimes hangs in "Shutting down processes" after its summary:
                # 30 s, then everything in its cgroup is ended.
                "$CGRUN" --stop-after "IO Summary" 30 "$OUT/$w.fb.$r" -- \
                    "${PINNED[@]}" setarch "$(uname -m)" -R "$FILEBENCH" -f "$f" || true
            fi
        done
        for s in $(filesets "$f"); do rm -rf "${DIR:?}/$s"; done
    done
done

BENCH_DIR=$(dirname "$PAIRS_PY") python3 - "$OUT" "$REPS" $WORKLOADS <<'EOF'
# Tabulate: per pair the work check and the ops/s ratio (bench/pairs.py); medians of each
# tool's ops/s and bytes/op per flowop beside.
import json, os, re, statistics, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
import pairs
out, reps, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
MB = 1048576.0
flow_re = re.compile(r"^\S.*?\s(\S+)\s+(\d+)ops\s+([\d.]+)ops/s\s+([\d.]+)mb/s\s+([\d.]+)ms/op")
sum_re = re.compile(r"IO Summary:\s+(\d+) ops ([\d.]+) ops/s \S+ rd/wr\s+([\d.]+)mb/s")

def fb(path):
    flows, summ, summ_ops = {}, None, 0
    try:
        text = open(path).read()
    except OSError:
        return None, None
    for line in text.splitlines():
        m = sum_re.search(line)
        if m:
            ops, ops_s, mb_s = int(m[1]), float(m[2]), float(m[3])
            summ_ops = ops
            # bytes/op within the rounding of the printout (ops/s and mb/s to 0.1).
            lo = max(mb_s - 0.05, 0.0) * MB / (ops_s + 0.05) if ops_s else 0.0
            hi = (mb_s + 0.05) * MB / max(ops_s - 0.05, 1e-9) if ops_s else 0.0
            summ = (ops_s, mb_s * MB / ops_s if ops_s else 0.0, (lo, hi))
            continue
        parts = line.split()
        # "name  123ops  45ops/s  1.2mb/s  0.5ms/op [...]" (after Filebench's log prefix)
        for i, p in enumerate(parts):
            if p.endswith("ops") and p[:-3].isdigit() and i > 0 and i + 2 < len(parts) and parts[i + 1].endswith("ops/s"):
                try:
                    ops_s = float(parts[i + 1][:-5]); mb_s = float(parts[i + 2][:-4])
                    ms_op = float(parts[i + 3][:-5]) if parts[i + 3:] and parts[i + 3].endswith("ms/op") else None
                except ValueError:
                    break
                flows[parts[i - 1]] = (int(p[:-3]), mb_s, ms_op)
                break
    if not summ:
        return None, None
    # Filebench prints ops/s rounded to units: use its exact counts and the run time that
    # the IO Summary's ops and ops/s give.
    secs = summ_ops / summ[0] if summ[0] else 0.0
    out = {}
    for n, (count, mb_s, ms_op) in flows.items():
        ops_s = count / secs if secs else 0.0
        per_op = MB * secs / count if count else 0.0
        out[n] = (ops_s, mb_s * per_op, (max(mb_s - 0.05, 0.0) * per_op, (mb_s + 0.05) * per_op), ms_op)
    return summ, out

def fs(path):
    """fsbench's Result (schema 2): the first run's IO Summary and its flowops (named groups)."""
    try:
        d = json.load(open(path))
        run = d["workload"]["runs"][0]
    except (OSError, KeyError, IndexError, ValueError):
        return None, None
    secs, s = run["duration_s"], run["summary"]
    if not secs or not s["ops"]:
        return None, None
    summ = (s["ops"] / secs, s["bytes"] / s["ops"], s["bytes"] / s["ops"])
    flows = {}
    for g in d.get("groups", []):
        if g.get("run", 1) != 1:
            continue
        st = g["stats"]
        bpo = st["bytes"] / st["ops"] if st["ops"] else 0.0
        lat = st.get("lat_ns", {}).get("mean")
        flows[g["name"]] = (st["ops"] / secs, bpo, bpo, None if lat is None else lat / 1e6)
    return summ, flows

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def samples(prefix):
    """cgrun.py's CPU samples: [(t, total_ns, user_ns, sys_ns)]."""
    try:
        return [tuple(float(x) for x in l.split()) for l in open(prefix + ".cpu") if l[0] != "#"]
    except (OSError, ValueError):
        return []

def at(smp, t):
    """CPU counters at time t, interpolated between the samples around it."""
    if not smp or t < smp[0][0] or t > smp[-1][0]:
        return None
    for (t0, *a), (t1, *b) in zip(smp, smp[1:]):
        if t0 <= t <= t1:
            f = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
            return [x + (y - x) * f for x, y in zip(a, b)]
    return None

def line_time(prefix, pattern):
    """Arrival time of the first output line matching pattern."""
    try:
        for l in open(prefix + ".lines"):
            t, _, text = l.rstrip("\n").partition(" ")
            if re.search(pattern, text):
                return float(t)
    except (OSError, ValueError):
        pass
    return None

def run_window(tool, prefix):
    """The timed phase (start, end) on cgrun.py's clock: Filebench prints "Running..." and
    "Run took"; fsbench's JSON gives the run's start (Unix time) and duration."""
    if tool == "fb":
        return line_time(prefix, r"Running\.\.\."), line_time(prefix, r"Run took")
    try:
        run = json.load(open(prefix + ".json"))["workload"]["runs"][0]
        unix0, mono0 = map(float, open(prefix + ".cpu").readline().split()[2:4])
        start = run["started_unix_s"] - unix0 + mono0
        return start, start + run["duration_s"]
    except (OSError, KeyError, IndexError, ValueError):
        return None, None

def run_cpu(tool, prefix):
    """(total, user, sys) CPU seconds of the whole cgroup during the timed phase."""
    smp = samples(prefix)
    t0, t1 = run_window(tool, prefix)
    if t0 is None or t1 is None:
        return None
    a, b = at(smp, t0), at(smp, t1)
    if a is None or b is None:
        return None
    return [(y - x) / 1e9 for x, y in zip(a, b)]

def work(run):
    """The work a tool measured in one run: bytes/op of the IO Summary and of every flowop
    (Filebench's as the range its rounded printout allows), each flowop by name."""
    summ, flows = run
    w = {"bytes/op (IO Summary)": summ[2]}
    for n, f in flows.items():
        w[f"flowop {n}: bytes/op"] = f[2]
    return w

print()
print(f"{'workload / flowop':34} {'fsbench ops/s':>13} {'filebench ops/s':>15}  {'fs B/op':>10} {'fb B/op':>10}  {'fs ms/op':>8} {'fb ms/op':>8}")
for w in names:
    runs_fs = {r: fs(f"{out}/{w}.fs.{r}.json") for r in range(1, reps + 1)}
    runs_fb = {r: fb(f"{out}/{w}.fb.{r}.log") for r in range(1, reps + 1)}
    both = [r for r in range(1, reps + 1) if runs_fs[r][0] and runs_fb[r][0]]
    if not both:
        failed = [t for t, runs in (("fsbench", runs_fs), ("filebench", runs_fb))
                  if not any(x[0] for x in runs.values())]
        print(f"{w:34} no pair where both ran ({', '.join(failed) or 'never both in one pair'} failed): see the logs")
        continue
    # Per pair: the ops/s of each (the figure) and the work each measured.
    measured = [{"pair": r, "first": "a" if r % 2 == 1 else "b",
                 "a": {"value": runs_fs[r][0][0], "work": work(runs_fs[r])},
                 "b": {"value": runs_fb[r][0][0], "work": work(runs_fb[r])}} for r in both]
    summary = pairs.summarize(measured, tolerance=0.05, names=("fsbench", "filebench"))
    # Medians of each tool's figures, for reading (no ratio per flowop: the figure is the
    # workload's, below).
    def medians(runs, key):
        vals = [x for x in (key(runs[r]) for r in both) if x is not None]
        return statistics.median(vals) if vals else None
    rows = [(f"{w} (IO Summary)", lambda run: run[0])]
    flow_names = sorted(set().union(*[set(runs_fs[r][1]) | set(runs_fb[r][1]) for r in both]))
    for n in flow_names:
        rows.append((f"  {n}", lambda run, n=n: run[1].get(n)))
    for label, get in rows:
        cells = []
        for runs in (runs_fs, runs_fb):
            ops = medians(runs, lambda run: get(run)[0] if get(run) else None)
            bpo = medians(runs, lambda run: get(run)[1] if get(run) else None)
            # Mean latency of one flowop (Filebench's ms/op), median over the runs: where
            # each tool's time goes.
            ms = medians(runs, lambda run: get(run)[3] if get(run) and len(get(run)) > 3 else None)
            cells.append(("-" if ops is None else f"{ops:.0f}", "-" if bpo is None else f"{bpo:.0f}",
                          "-" if ms is None else f"{ms:.3f}"))
        print(f"{label:34} {cells[0][0]:>13} {cells[1][0]:>15}  {cells[0][1]:>10} {cells[1][1]:>10}"
              f"  {cells[0][2]:>8} {cells[1][2]:>8}")
    print("  => " + pairs.line(w, summary, ("fsbench", "filebench"), "ops/s"))
    different = bool(summary["differences"])
    # CPU per op of the timed phase, counted by the cgroup of each tool (every process it
    # started, however reaped), medians over the repetitions.
    def cpu_per_op(tool, r):
        """(total, user, sys) CPU microseconds per op of one run's timed phase, or None."""
        c = run_cpu(tool, f"{out}/{w}.{tool}.{r}")
        try:
            if tool == "fs":
                ops = json.load(open(f"{out}/{w}.fs.{r}.json"))["workload"]["runs"][0]["summary"]["ops"]
            else:
                m = sum_re.search(open(f"{out}/{w}.fb.{r}.log").read())
                ops = int(m[1]) if m else 0
        except (OSError, KeyError, IndexError, ValueError):
            ops = 0
        return [x * 1e6 / ops for x in c] if c is not None and ops else None
    cpu = {r: (cpu_per_op("fs", r), cpu_per_op("fb", r)) for r in both}
    cpu = {r: v for r, v in cpu.items() if v[0] and v[1]}
    if cpu:
        for i, what in enumerate(["CPU us/op (run, cgroup)", "  of it user", "  of it system"]):
            ca = statistics.median(v[0][i] for v in cpu.values())
            cb = statistics.median(v[1][i] for v in cpu.values())
            print(f"{'  ' + what:34} {ca:13.2f} {cb:15.2f}")
        # CPU per op per pair, the same method (and the same work check) as ops/s.
        by_pair = [{**p, "a": {**p["a"], "value": cpu[p["pair"]][0][0]},
                    "b": {**p["b"], "value": cpu[p["pair"]][1][0]}}
                   for p in measured if p["pair"] in cpu]
        print("  => " + pairs.line(f"{w} CPU", pairs.summarize(by_pair, 0.05, ("fsbench", "filebench")),
                                   ("fsbench", "filebench"), "CPU us/op"))
EOF
