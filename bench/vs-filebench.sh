#!/usr/bin/env bash
# fsbench workload vs Filebench: fileserver, varmail and webserver, the same WML file for both
# tools (fsbench's own personality text with fixed parameters), the same directory, REPS runs
# each, alternating tools; prints median ops/s and the ratio fsbench/Filebench.
#
#   FILEBENCH=/path/to/filebench bench/vs-filebench.sh DIR [SECONDS] [REPS]
#   env: NFILES (10000), NTHREADS (16), FSBENCH (target/release/fsbench), OUT (results dir),
#        WORKLOADS ("fileserver varmail webserver")
#
# This script does not fetch or build Filebench: build it yourself from its sources, outside
# this repository, and point FILEBENCH at the binary. Filebench's worker processes must map its
# shared memory at the parent's address, so it is started with address-space randomisation
# disabled for its own process tree only (setarch -R), never system-wide.
set -euo pipefail

DIR=${1:?usage: FILEBENCH=/path/to/filebench $0 DIR [SECONDS] [REPS]}
SECS=${2:-20}
REPS=${3:-3}
NFILES=${NFILES:-10000}
NTHREADS=${NTHREADS:-16}
WORKLOADS=${WORKLOADS:-fileserver varmail webserver}
FSBENCH=${FSBENCH:-target/release/fsbench}
OUT=${OUT:-$(mktemp -d /tmp/vs-filebench.XXXXXX)}
mkdir -p "$OUT"
: "${FILEBENCH:?set FILEBENCH to the path of a filebench binary you built}"
[ -x "$FILEBENCH" ] || { echo "FILEBENCH=$FILEBENCH is not executable" >&2; exit 2; }
[ -x "$FSBENCH" ] || { echo "build fsbench first: cargo build --release" >&2; exit 2; }
[ -d "$DIR" ] || { echo "no such directory: $DIR" >&2; exit 2; }
DIR=$(cd "$DIR" && pwd)

# Mean file sizes of the shootout (Filebench needs its cvar plug-ins installed to draw gamma
# sizes, so both tools get the same fixed size).
declare -A FILESIZE=([fileserver]=2k [varmail]=1k [webserver]=1k)

gen() { # name -> WML file with this run's parameters
    local name=$1 f=$OUT/$1.f
    "$FSBENCH" workload show "$name" | grep -v '^# variant' | sed \
        -e "s|^set \$dir=.*|set \$dir=$DIR|" \
        -e "s|^set \$nfiles=.*|set \$nfiles=$NFILES|" \
        -e "s|^set \$nthreads=.*|set \$nthreads=$NTHREADS|" \
        -e "s|^set \$filesize=.*|set \$filesize=${FILESIZE[$name]}|" \
        -e "s|^run [0-9]*|run $SECS|" >"$f"
    echo "$f"
}

ops_per_s() { awk '/IO Summary/ { for (i = 1; i <= NF; i++) if ($i == "ops/s") print $(i - 1) }' "$1" | tail -1; }

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run_filebench() { # log file: Filebench sometimes hangs in "Shutting down processes" after its
    # summary; give it 30 s after the summary, then end its process group.
    local log=$1 f=$2 pid i
    setsid setarch "$(uname -m)" -R "$FILEBENCH" -f "$f" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        if grep -q "IO Summary" "$log" 2>/dev/null; then
            for i in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
            if kill -0 "$pid" 2>/dev/null; then
                echo "(filebench hung after its summary; ended it)" >>"$log"
                kill -KILL -- "-$pid" 2>/dev/null || true
            fi
            break
        fi
        sleep 1
    done
    wait "$pid" 2>/dev/null || true
}

filesets() { grep -o 'define file[a-z]* name=[A-Za-z0-9_.-]*' "$1" | sed 's/.*name=//'; }

echo "fsbench vs Filebench in $DIR: nfiles=$NFILES nthreads=$NTHREADS, ${SECS}s x $REPS; logs in $OUT"
printf '%-11s %14s %14s %7s   %s\n' workload "fsbench ops/s" "filebench ops/s" ratio "fsbench p99 (ms) of the busiest flowops"
for w in $WORKLOADS; do
    f=$(gen "$w")
    : >"$OUT/$w.fs.ops"
    : >"$OUT/$w.fb.ops"
    for r in $(seq 1 "$REPS"); do
        "$FSBENCH" workload "$f" --output "$OUT/$w.fs.$r.json" >"$OUT/$w.fs.$r.log" 2>&1
        ops_per_s "$OUT/$w.fs.$r.log" >>"$OUT/$w.fs.ops"
        run_filebench "$OUT/$w.fb.$r.log" "$f"
        ops_per_s "$OUT/$w.fb.$r.log" >>"$OUT/$w.fb.ops"
        # Filebench leaves its tree behind; remove it so the next fsbench run starts clean.
        for s in $(filesets "$f"); do rm -rf "${DIR:?}/$s"; done
    done
    fs=$(median <"$OUT/$w.fs.ops")
    fb=$(median <"$OUT/$w.fb.ops")
    ratio=$(awk -v a="$fs" -v b="$fb" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
    p99=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]["flowops"]
r = sorted(r, key=lambda f: -f["ops"])[:3]
print(" ".join("%s=%.3f" % (f["name"], f["lat_ns"]["p99"] / 1e6) for f in r))' "$OUT/$w.fs.$REPS.json" 2>/dev/null || echo "-")
    printf '%-11s %14s %14s %7s   %s\n' "$w" "$fs" "$fb" "$ratio" "$p99"
done
