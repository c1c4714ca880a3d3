#!/usr/bin/env bash
# fsbench vs fio, side by side: the same 1 GiB file, the same run, alternating pairs; prints
# per-pair numbers, medians and the ratio fsbench/fio (IOPS, and CPU seconds per I/O).
#
#   bench/vs-fio.sh [DIR] [PAIRS] [SECONDS]       (defaults: /var/tmp, 5, 10)
#   CASES="hot_randread direct_randread" bench/vs-fio.sh    # a subset
#
# Needs fio (Debian package `fio`) and python3. Never run in CI; not a timed test.
set -euo pipefail
DIR=${1:-/var/tmp}
PAIRS=${2:-5}
SECS=${3:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
command -v fio >/dev/null || { echo "fio is missing: apt-get install fio" >&2; exit 2; }
(cd "$ROOT" && cargo build --release --quiet)
FSB="$ROOT/target/release/fsbench"
FILE="$DIR/fsbench-vs-fio.dat"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"; rm -f "$FILE"' EXIT

# The shared file: created (and marked) by fsbench, so fsbench may reuse it; fio reads it as is.
"$FSB" run --rw write --bs 1m --size 1g --keep --output-format json "$FILE" >/dev/null

# name | fsbench run arguments | fio arguments | warm the page cache first (1/0)
CASE_TABLE=(
  "hot_randread|--rw randread --bs 4k --size 1g --time ${SECS}s --no-invalidate|--rw=randread --bs=4k --size=1g --ioengine=psync --invalidate=0 --runtime=${SECS} --time_based|1"
  "seq_read_1m|--rw read --bs 1m --size 1g|--rw=read --bs=1m --size=1g --ioengine=psync --invalidate=1|0"
  "direct_randread|--rw randread --bs 4k --size 1g --cache direct --time ${SECS}s|--rw=randread --bs=4k --size=1g --ioengine=psync --direct=1 --runtime=${SECS} --time_based|0"
)
# Extra cases (e.g. io_uring) are added by bench/vs-fio.d/*.sh, which append to CASE_TABLE.
for extra in "$ROOT"/bench/vs-fio.d/*.sh; do [ -f "$extra" ] && . "$extra"; done

want=${CASES:-}
printf 'machine: %s cores, %s, kernel %s, %s\n' "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$(uname -r)" "$(df -T "$DIR" | awk 'NR==2{print $2" on "$1}')"
printf 'date: %s, %s pairs\n\n' "$(date -u +%Y-%m-%d)" "$PAIRS"
printf '%-20s %14s %14s %8s %16s %16s %8s\n' case fsbench_iops fio_iops ratio fsb_cpu_us_io fio_cpu_us_io ratio
for row in "${CASE_TABLE[@]}"; do
  IFS='|' read -r name fargs fioargs warm <<<"$row"
  if [ -n "$want" ] && [[ " $want " != *" $name "* ]]; then continue; fi
  : >"$OUT/$name.fsb"; : >"$OUT/$name.fio"
  for i in $(seq "$PAIRS"); do
    [ "$warm" = 1 ] && cat "$FILE" >/dev/null
    # shellcheck disable=SC2086
    "$FSB" run $fargs --output-format json "$FILE" >"$OUT/f.json"
    python3 - "$OUT/f.json" >>"$OUT/$name.fsb" <<'PY'
import json,sys
t=json.load(open(sys.argv[1]))["total"]
print(t["iops"], t["cpu_s"]*1e6/max(t["ops"],1))
PY
    [ "$warm" = 1 ] && cat "$FILE" >/dev/null
    # shellcheck disable=SC2086
    fio --name=cmp --filename="$FILE" $fioargs --output-format=json >"$OUT/o.json" 2>/dev/null
    python3 - "$OUT/o.json" >>"$OUT/$name.fio" <<'PY'
import json,sys
j=json.load(open(sys.argv[1]))["jobs"][0]
ios=j["read"]["total_ios"]+j["write"]["total_ios"]
iops=j["read"]["iops"]+j["write"]["iops"]
cpu_s=(j["usr_cpu"]+j["sys_cpu"])/100.0*j["job_runtime"]/1000.0
print(iops, cpu_s*1e6/max(ios,1))
PY
  done
  python3 - "$name" "$OUT/$name.fsb" "$OUT/$name.fio" <<'PY'
import statistics,sys
name,a,b=sys.argv[1:]
fa=[list(map(float,l.split())) for l in open(a)]
fb=[list(map(float,l.split())) for l in open(b)]
ia=statistics.median(x[0] for x in fa); ib=statistics.median(x[0] for x in fb)
ca=statistics.median(x[1] for x in fa); cb=statistics.median(x[1] for x in fb)
print(f"{name:<20} {ia:14.0f} {ib:14.0f} {ia/ib:8.3f} {ca:16.2f} {cb:16.2f} {ca/cb if cb else float('nan'):8.3f}")
PY
done
