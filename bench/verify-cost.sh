#!/usr/bin/env bash
# Cost of `--verify` on the I/O path: 4 KiB random writes, reads and a 50/50 mix on a
# hot-cache file (sync engine, one thread), with and without --verify, alternating (ABBA) so drift
# hits both sides alike; prints each pair and the medians of CPU microseconds per I/O
# (getrusage of the worker thread over the timed loop) and their ratio, with the
# user/system split of the difference (the fill and check are user time; a change in
# system time is the kernel's side of the same I/O, e.g. caches the checker displaced).
#
# With --verify a write fills its buffer with a self-describing block (generation from the
# shared table, payload words, the header's CRC32C; block format 2) before it is submitted:
# that is part of the write's cost. A read is checked (the header's CRC32C, then the block
# regenerated and compared in one pass, AVX2 where the CPU has it) only when the
# block was written by this run and is settled: in `randread` nothing was, so the read pays
# one table load; in `randrw` about half the reads are checked. The read-back after the run
# is untimed; its wall time per block is printed apart. Run it on a quiet machine: CPU per
# I/O of a page-cache write moves by tens of percent when other work shares the cores.
#
# Both sides of a pair do the same work: the same number of I/Os (COUNT per run, default
# 1000000), not the same time (a slower side would do fewer I/Os, over which fixed costs
# spread differently). Besides the ratio of the medians it prints the median of the pairs'
# own ratios, which a drift of the machine between pairs moves less, and the mean of the
# pairs' ratios with its 95 % confidence interval. Last, the figure every comparison script
# gives (bench/pairs.py): the work of both sides checked equal in every pair (reads, writes
# and their bytes), then the median of the pairs' ratios with its 95 % interval and the count
# of pairs, "parity" when the interval straddles 1.0.
#
# How the file is laid down decides the kernel's side of every later 4 KiB write: written
# with 1 MiB writes, ext4 (Linux 6.18 here) caches it in large folios, and a 4 KiB overwrite
# in a large folio walks the folio's buffer heads (ext4_block_write_begin): 10-11 us of system
# time per write instead of 2.4 us. LAYOUT_BS (default 4k, small folios, the fast kernel path
# and so the strictest case for the ratio) sets the block size the new file is written with.
#
#   [LAYOUT_BS=4k|1m] [MIXES="randrw ..."] bench/verify-cost.sh [DIR] [PAIRS] [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/tmp}
PAIRS=${2:-6}
COUNT=${3:-1000000}
cargo build --release -q
B=${CARGO_TARGET_DIR:-target}/release/fsbench
F="$DIR/fsbench-verify-cost.dat"
OUT=$(mktemp)
PAIRS_OUT=$(mktemp)
trap 'rm -f "$F" "$OUT" "$PAIRS_OUT"' EXIT
rm -f "$F"
LAYOUT_BS=${LAYOUT_BS:-4k}
# Create the file once and keep it (64 MiB: it stays in the page cache), its pages cached in
# the folios LAYOUT_BS writes make (a new file: no folio of an earlier run survives).
$B run "$F" --rw write --bs "$LAYOUT_BS" --size 64m --keep -s >/dev/null
echo "file laid down with $LAYOUT_BS writes; file-backed huge pages (all files): $(awk '/FileHugePages/ {print $2, $3}' /proc/meminfo)"
cost() {
  python3 -c 'import json,sys
d=json.load(sys.stdin); t=d["total"]; v=d.get("verify") or {}
n=v.get("read_back_blocks",0)
ops=t["ops"]
print(round(t["cpu_us_per_op"],4), round(v.get("read_back_s",0)/n*1e6,3) if n else 0,
      round(t["cpu_user_s"]/ops*1e6,4), round(t["cpu_sys_s"]/ops*1e6,4),
      round(v.get("run_read_blocks",0)/max(t.get("read_ops",0),1),3),
      t["read_ops"], t["write_ops"], t["read_bytes"], t["write_bytes"])'
}
run() { $B run "$F" --bs 4k --size 64m --count "$COUNT" --no-invalidate --keep --format json "$@" | cost; }
for rw in ${MIXES:-randwrite randread randrw}; do
  run --rw "$rw" >/dev/null  # warm up
  for i in $(seq "$PAIRS"); do
    # Odd pairs run without --verify first, even pairs with it first (ABBA): a steady drift
    # of the machine then favours neither side.
    for side in $(python3 bench/pairs.py first "$i" plain verify); do
      if [ "$side" = plain ]; then read -r pc _ pu ps _ pw < <(run --rw "$rw")
      else read -r vc rb vu vs checked vw < <(run --rw "$rw" --verify); fi
    done
    echo "$rw $pc $vc $rb $pu $ps $vu $vs $checked" >>"$OUT"
    # The pair for bench/pairs.py: CPU per I/O with and without --verify, and the work each
    # run measured (reads and writes, their bytes: the same count-bound job on both sides).
    python3 -c 'import json, sys
rw, i, pc, vc, pw, vw = sys.argv[1:7]
work = lambda w: dict(zip(["read ops", "write ops", "read bytes", "write bytes"], map(int, w.split())))
print(json.dumps({"case": rw + ": CPU per I/O with / without --verify", "pair": int(i),
                  "first": "b" if int(i) % 2 == 1 else "a",
                  "a": {"value": float(vc), "work": work(vw)}, "b": {"value": float(pc), "work": work(pw)}}))' \
      "$rw" "$i" "$pc" "$vc" "$pw" "$vw" >>"$PAIRS_OUT"
    echo "$rw pair $i: without --verify $pc us CPU/IO ($pu user + $ps sys), with $vc ($vu + $vs; reads checked $checked) (read-back $rb us/block)  load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
python3 bench/pairs.py report "$PAIRS_OUT" --a verify --b plain --metric "CPU us per I/O"
python3 - "$OUT" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for rw in dict.fromkeys(r[0] for r in rows):
    pc, vc, rb, pu, ps, vu, vs, ck = (statistics.median(float(r[i]) for r in rows if r[0] == rw)
                                      for i in range(1, 9))
    pair = statistics.median(float(r[2]) / float(r[1]) for r in rows if r[0] == rw)
    print(f"{rw}: median CPU per I/O without --verify {pc:.4f} us, with {vc:.4f} us: "
          f"ratio {vc / pc:.3f} ({(vc - pc) / pc * 100:+.1f} %; user {vu - pu:+.3f} us, "
          f"sys {vs - ps:+.3f} us); median of the pairs' ratios {pair:.3f}; "
          f"reads checked {ck:.2f}; read-back {rb:.3f} us/block")
    # The pairs' ratios' mean with its 95 % confidence interval (Student's t): whether the
    # overhead is under a target by more than the machine's noise, which a median cannot say.
    ratios = [float(r[2]) / float(r[1]) for r in rows if r[0] == rw]
    if len(ratios) > 2:
        n = len(ratios)
        t = {2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23,
             12: 2.18, 15: 2.13, 20: 2.09, 25: 2.06, 30: 2.04}
        tq = next((t[k] for k in sorted(t) if k >= n - 1), 1.96)
        m = statistics.mean(ratios)
        h = tq * statistics.stdev(ratios) / n ** 0.5
        print(f"{rw}: mean of the {n} pairs' ratios {m:.3f}, 95 % confidence interval "
              f"{m - h:.3f}..{m + h:.3f} ({(m - 1) * 100:+.1f} %, {(m - h - 1) * 100:+.1f}..{(m + h - 1) * 100:+.1f} %)")
        # The order inside a pair alternates (odd pairs without --verify first); how much
        # the order moved the ratios shows here, and the mean above cancels it.
        first = [x for i, x in enumerate(ratios) if i % 2 == 1]
        second = [x for i, x in enumerate(ratios) if i % 2 == 0]
        print(f"{rw}: median ratio of the pairs with --verify run first {statistics.median(first):.3f}, "
              f"run second {statistics.median(second):.3f}")
PY
# Filling and checking alone, in a tight loop (no I/O).
cargo test --release -q --lib verify::block::tests::measure_cost_per_block -- --ignored --nocapture 2>/dev/null \
  | grep "verify 4 KiB" || true
