#!/usr/bin/env bash
# fsbench workload vs Filebench on Filebench's OWN stock workload files: the same .f file runs
# through both tools (alternating, REPS times each), and the script prints per workload and per
# flowop ops/s and bytes/op of each tool with the ratio of each. A workload whose bytes/op
# differ by more than 5 % at the top level (IO Summary) or at any flowop is flagged
# DIFFERENT WORK and its ops/s ratio is not reported as a result: the two tools did not do the
# same work, so their speeds cannot be compared.
#
#   FILEBENCH=/path/to/filebench FILEBENCH_WORKLOADS=/path/to/filebench/workloads \
#       bench/vs-filebench.sh DIR [SECONDS] [REPS]
#   env: WORKLOADS ("fileserver varmail webserver webproxy oltp videoserver randomfileaccess"),
#        NFILES (1000), NTHREADS (8), FSBENCH (target/release/fsbench), OUT (results dir),
#        SHRINK (extra sed expressions applied to every file), FIXED_SIZES (1)
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
REPS=${3:-3}
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
echo "nfiles=$NFILES nthreads=$NTHREADS, ${SECS}s x $REPS alternating; logs in $OUT; $(date -u +%F) $(uname -r)"
for w in $WORKLOADS; do
    f=$(shrink "$w") || continue
    for r in $(seq 1 "$REPS"); do
        "$CGRUN" "$OUT/$w.fs.$r" -- "$FSBENCH" workload "$f" --output "$OUT/$w.fs.$r.json" || true
        for s in $(filesets "$f"); do rm -rf "${DIR:?}/$s"; done
        # Filebench sometimes hangs in "Shutting down processes" after its summary: 30 s, then
        # everything in its cgroup is ended.
        "$CGRUN" --stop-after "IO Summary" 30 "$OUT/$w.fb.$r" -- \
            setarch "$(uname -m)" -R "$FILEBENCH" -f "$f" || true
        # Filebench leaves its tree behind; remove it so the next run starts clean.
        for s in $(filesets "$f"); do rm -rf "${DIR:?}/$s"; done
    done
done

python3 - "$OUT" "$REPS" $WORKLOADS <<'EOF'
# Tabulate: medians over the repetitions of ops/s; bytes/op from the totals; the work check.
import json, re, statistics, sys
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
            summ = (ops_s, mb_s * MB / ops_s if ops_s else 0.0, mb_s >= 1.0)
            continue
        parts = line.split()
        # "name  123ops  45ops/s  1.2mb/s  0.5ms/op [...]" (after Filebench's log prefix)
        for i, p in enumerate(parts):
            if p.endswith("ops") and p[:-3].isdigit() and i > 0 and i + 2 < len(parts) and parts[i + 1].endswith("ops/s"):
                try:
                    ops_s = float(parts[i + 1][:-5]); mb_s = float(parts[i + 2][:-4])
                except ValueError:
                    break
                flows[parts[i - 1]] = (int(p[:-3]), mb_s)
                break
    if not summ:
        return None, None
    # Filebench prints ops/s rounded to units: use its exact counts and the run time that
    # the IO Summary's ops and ops/s give.
    secs = summ_ops / summ[0] if summ[0] else 0.0
    out = {}
    for n, (count, mb_s) in flows.items():
        ops_s = count / secs if secs else 0.0
        out[n] = (ops_s, mb_s * MB * secs / count if count else 0.0, mb_s >= 1.0)
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
    summ = (s["ops"] / secs, s["bytes"] / s["ops"], True)
    flows = {}
    for g in d.get("groups", []):
        if g.get("run", 1) != 1:
            continue
        st = g["stats"]
        flows[g["name"]] = (st["ops"] / secs, st["bytes"] / st["ops"] if st["ops"] else 0.0, True)
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

print()
print(f"{'workload / flowop':34} {'fsbench ops/s':>13} {'filebench ops/s':>15} {'ratio':>6}  {'fs B/op':>10} {'fb B/op':>10} {'ratio':>6}  work")
for w in names:
    runs_fs = [fs(f"{out}/{w}.fs.{r}.json") for r in range(1, reps + 1)]
    runs_fb = [fb(f"{out}/{w}.fb.{r}.log") for r in range(1, reps + 1)]
    runs_fs = [x for x in runs_fs if x[0]]
    runs_fb = [x for x in runs_fb if x[0]]
    if not runs_fs or not runs_fb:
        print(f"{w:34} {'(fsbench failed)' if not runs_fs else '':>13} {'(filebench failed)' if not runs_fb else '':>15}   -- see logs")
        continue
    rows, different = [], False
    def row(label, a, b):
        global different
        ops_a, ops_b = med([x[0] for x in a]), med([x[0] for x in b])
        bpo_a, bpo_b = med([x[1] for x in a]), med([x[1] for x in b])
        precise = all(x[2] for x in b)
        if bpo_a is None or bpo_b is None:
            check = "?"
        elif bpo_a == 0 and bpo_b == 0:
            check = "same (0 B)"
        elif not precise and max(bpo_a, bpo_b) < 64:
            check = "same (~0 B)"
        elif not precise:
            check = "~ (fb mb/s < 1.0: imprecise)"
        else:
            d = abs(bpo_a - bpo_b) / max(bpo_a, bpo_b)
            check = "same" if d <= 0.05 else f"DIFFERENT ({d*100:.0f} %)"
            if d > 0.05:
                different = True
        r_ops = ops_a / ops_b if ops_a and ops_b else float("nan")
        r_b = bpo_a / bpo_b if bpo_a and bpo_b else float("nan")
        rows.append((label, ops_a, ops_b, r_ops, bpo_a, bpo_b, r_b, check))
    row(f"{w} (IO Summary)", [x[0] for x in runs_fs], [x[0] for x in runs_fb])
    names_fl = sorted(set().union(*[set(x[1]) for x in runs_fs]) & set().union(*[set(x[1]) for x in runs_fb]))
    for n in names_fl:
        row(f"  {n}", [x[1][n] for x in runs_fs if n in x[1]], [x[1][n] for x in runs_fb if n in x[1]])
    for i, (label, oa, ob, ro, ba, bb, rb, check) in enumerate(rows):
        ratio = f"{ro:6.2f}" if not (different and i == 0) else "  n/a "
        print(f"{label:34} {oa or 0:13.0f} {ob or 0:15.0f} {ratio}  {ba or 0:10.0f} {bb or 0:10.0f} {rb:6.2f}  {check}")
    # CPU per op of the timed phase, counted by the cgroup of each tool (every process it
    # started, however reaped), medians over the repetitions.
    def cpu_per_op(tool):
        vals = []
        for r in range(1, reps + 1):
            c = run_cpu(tool, f"{out}/{w}.{tool}.{r}")
            try:
                if tool == "fs":
                    ops = json.load(open(f"{out}/{w}.fs.{r}.json"))["workload"]["runs"][0]["summary"]["ops"]
                else:
                    m = sum_re.search(open(f"{out}/{w}.fb.{r}.log").read())
                    ops = int(m[1]) if m else 0
            except (OSError, KeyError, IndexError, ValueError):
                ops = 0
            if c is not None and ops:
                vals.append([x * 1e6 / ops for x in c])
        if not vals:
            return None
        return [med([v[i] for v in vals]) for i in range(3)]
    ca, cb = cpu_per_op("fs"), cpu_per_op("fb")
    if ca and cb:
        for i, what in enumerate(["CPU us/op (run, cgroup)", "  of it user", "  of it system"]):
            print(f"{'  ' + what:34} {ca[i]:13.2f} {cb[i]:15.2f} {ca[i]/cb[i] if cb[i] else float('nan'):6.2f}")
    if different:
        print(f"  => {w}: DIFFERENT WORK (bytes/op differ by more than 5 %): its ops/s ratio is not a result")
EOF
