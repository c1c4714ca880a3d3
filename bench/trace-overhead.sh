#!/usr/bin/env bash
# Cost of `--trace` on the I/O path: 4 KiB random reads from a hot page cache (the case where
# per-I/O bookkeeping shows most), with and without the trace ring, alternating so drift hits
# both sides alike; prints each run and the medians.
#
#   bench/trace-overhead.sh [DIR] [PAIRS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/tmp}
PAIRS=${2:-7}
SECS=${3:-5}
cargo build --release -q
B=target/release/fsbench
F="$DIR/fsbench-trace-overhead.dat"
T="$DIR/fsbench-trace-overhead.bin"
trap 'rm -f "$F" "$T"' EXIT
rm -f "$F"
# Create the file once and keep it; the read runs reuse it (it is marked as fsbench's).
$B run "$F" --rw write --bs 1m --size 256m --keep -s >/dev/null
# IOPS and CPU microseconds per I/O (getrusage of the worker thread: less sensitive than IOPS
# to other load on the machine, which steals wall time but not the thread's own CPU time).
iops() { python3 -c 'import json,sys; t=json.load(sys.stdin)["total"]; print(round(t["iops"]), round(t["cpu_us_per_op"], 4))'; }
run() { $B run "$F" --rw randread --bs 4k --size 256m --time "${SECS}s" --no-invalidate --keep --output-format json "$@" | iops; }
run >/dev/null  # warm the cache
OUT=$(mktemp)
trap 'rm -f "$F" "$T" "$OUT"' EXIT
for i in $(seq "$PAIRS"); do
  read -r pi pc < <(run); read -r ti tc < <(run --trace "$T")
  echo "$pi $pc $ti $tc" >>"$OUT"
  echo "pair $i: without trace $pi IOPS ($pc us CPU/IO), with trace $ti IOPS ($tc us CPU/IO)"
done
python3 - "$OUT" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
pi, pc, ti, tc = (statistics.median(c) for c in zip(*rows))
print(f"median IOPS: without trace {pi:.0f}, with trace {ti:.0f}: throughput loss {(pi - ti) / pi * 100:.2f} %")
print(f"median CPU per I/O: without trace {pc:.4f} us, with trace {tc:.4f} us: CPU cost {(tc - pc) / pc * 100:.2f} %")
PY
# The recording alone, in a tight loop (no I/O): its cost per I/O bounds the overhead.
cargo test --release -q --lib trace::ring::tests::measure_record_cost -- --ignored --nocapture 2>/dev/null \
  | grep "ns per recorded I/O" || true
