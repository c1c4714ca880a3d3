#!/usr/bin/env bash
# Cost of `--trace` on the I/O path: 4 KiB random reads from a hot page cache (the case where
# per-I/O bookkeeping shows most), with and without the trace ring, in pairs whose order
# alternates (ABBA) so drift hits both sides alike; prints each pair, then per figure the
# median ratio with its 95 % interval and the count of pairs (bench/pairs.py: no ratio when
# the two sides measured different work; "parity" when the interval straddles 1.0).
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
# One JSON record per run: IOPS, CPU microseconds per I/O (getrusage of the worker thread:
# less sensitive than IOPS to other load on the machine, which steals wall time but not the
# thread's own CPU time) and the work it measured (bytes per read, the writes: both sides must
# have done only 4 KiB reads). Both sides are timed over the same window: the timed loop.
measure() { python3 -c 'import json,sys; t=json.load(sys.stdin)["total"]
print(json.dumps({"iops": t["iops"], "cpu_us": t["cpu_us_per_op"], "work": {
    "bytes per read": t["read_bytes"] / max(t["read_ops"], 1), "writes": t["write_ops"],
    "other calls": t["other_ops"]}}))'; }
run() { $B run "$F" --rw randread --bs 4k --size 256m --time "${SECS}s" --no-invalidate --keep --format json "$@" | measure; }
run >/dev/null  # warm the cache
IOPS=$(mktemp)
CPU=$(mktemp)
trap 'rm -f "$F" "$T" "$IOPS" "$CPU"' EXIT
PAIRS_PY="$(pwd)/bench/pairs.py"
for i in $(seq "$PAIRS"); do
  # ABBA: odd pairs run with the trace first, even pairs without it first.
  for side in $(python3 "$PAIRS_PY" first "$i" traced plain); do
    if [ "$side" = plain ]; then plain=$(run); else traced=$(run --trace "$T"); fi
  done
  python3 - "$i" "$plain" "$traced" "$IOPS" "$CPU" <<'PY'
import json, sys
i, plain, traced, iops, cpu = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4], sys.argv[5]
first = "a" if int(i) % 2 == 1 else "b"
for path, key, case in ((iops, "iops", "IOPS with / without --trace"), (cpu, "cpu_us", "CPU per I/O with / without --trace")):
    with open(path, "a") as f:
        f.write(json.dumps({"case": case, "pair": int(i), "first": first,
                            "a": {"value": traced[key], "work": traced["work"]},
                            "b": {"value": plain[key], "work": plain["work"]}}) + "\n")
print(f"pair {i} ({'without' if first == 'b' else 'with'} trace first): without trace {plain['iops']:.0f} IOPS "
      f"({plain['cpu_us']:.4f} us CPU/IO), with trace {traced['iops']:.0f} IOPS ({traced['cpu_us']:.4f} us CPU/IO)")
PY
done
python3 "$PAIRS_PY" report "$IOPS" --a traced --b plain --metric "IOPS"
python3 "$PAIRS_PY" report "$CPU" --a traced --b plain --metric "CPU us per I/O"
# The recording alone, in a tight loop (no I/O): its cost per I/O bounds the overhead.
cargo test --release -q --lib trace::ring::tests::measure_record_cost -- --ignored --nocapture 2>/dev/null \
  | grep "ns per recorded I/O" || true
