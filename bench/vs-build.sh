#!/usr/bin/env bash
# Two builds of fsbench on the same command, in alternating pairs: did a change to the code
# change what a run measures, or its speed? (For example this build against one made from an
# older commit: `git worktree add /tmp/old COMMIT && cargo build --release` there.)
#
#   bench/vs-build.sh OTHER_FSBENCH PAIRS CASE -- FSBENCH ARGUMENTS...
#
# Runs `FSBENCH ARGUMENTS... --output FILE` (the JSON Result) with this build (FSBENCH=PATH, default
# target/release/fsbench) and with OTHER_FSBENCH, PAIRS pairs, this build first in odd pairs and
# the other in even ones (bench/pairs.py's method). Before every run the page cache is synced
# and dropped (root) and the script waits COLD_WAIT seconds (default 2).
#
# The work, compared before any speed (bench/vs_build.py): per flowop or phase of the Result
# (its `groups`, or the whole run when it has none), the share of the run's operations, and the
# bytes per operation read and written. A run bounded by time does a different number of
# operations every time, so the counts themselves are compared only with EXACT=1 (a run
# bounded by its work: a replay, the backup study, `run --count`). A flowop or phase on one
# side only, or a share or size off by more than TOLERANCE (relative; default 0.05 as in
# vs-filebench.sh, where files of random sizes make whole-file reads vary; 0 with EXACT=1) is
# DIFFERENT WORK and gets no ratio. The figure: the median of the pairs' ratios of operations
# per second (this build / the other; METRIC=bytes_per_sec for bytes), with its 95 % interval.
#
# RAW=FILE keeps every pair's line (JSON) for bench/pairs.py. CASE names the line printed.
# PIN=CPUS runs both builds under `taskset -c CPUS`. FRESH_FS=ext4|xfs with FRESH_DIR=DIR (an
# empty directory, not a mount point) makes a file system anew on a loop device (an image of
# FS_SIZE, default 4G, in FS_IMAGE_DIR, default /dev/shm) and mounts it on DIR before every
# run: a workload that creates and deletes thousands of files otherwise inherits what the
# previous run, of either build, left. Name DIR in the arguments.
set -euo pipefail
other="${1:?usage: bench/vs-build.sh OTHER_FSBENCH PAIRS CASE -- ARGUMENTS...}"
pairs="${2:?usage: bench/vs-build.sh OTHER_FSBENCH PAIRS CASE -- ARGUMENTS...}"
case_name="${3:?usage: bench/vs-build.sh OTHER_FSBENCH PAIRS CASE -- ARGUMENTS...}"
shift 3
[ "${1:-}" = "--" ] || { echo "bench/vs-build.sh: '--' must come before the fsbench arguments" >&2; exit 2; }
shift
[ $# -gt 0 ] || { echo "bench/vs-build.sh: no fsbench arguments after '--'" >&2; exit 2; }
case "$pairs" in ''|*[!0-9]*) echo "PAIRS must be a whole number: $pairs" >&2; exit 2;; esac
here="$(cd "$(dirname "$0")/.." && pwd)"
this="${FSBENCH:-$here/target/release/fsbench}"
[ -x "$this" ] || { echo "build fsbench first: cargo build --release" >&2; exit 2; }
[ -x "$other" ] || { echo "not an executable fsbench: $other" >&2; exit 2; }
metric="${METRIC:-iops}"
case "$metric" in iops|bytes_per_sec) ;; *) echo "METRIC must be iops or bytes_per_sec: $metric" >&2; exit 2;; esac
out="$(mktemp -d)"
raw="${RAW:-$out/pairs.jsonl}"
trap 'rm -rf "$out"' EXIT

PINNED=()
[ -z "${PIN:-}" ] || PINNED=(taskset -c "$PIN")
. "$here/bench/fresh_fs.sh"
if [ -n "$FRESH_FS" ]; then
  [ -n "${FRESH_DIR:-}" ] || { echo "FRESH_FS needs FRESH_DIR, an empty directory to mount it on" >&2; exit 2; }
  fresh_fs_check "$FRESH_DIR"
fi
trap 'fresh_fs_end; rm -rf "$out"' EXIT

echo "# vs-build: $case_name, $pairs pair(s), this $("$this" --version), other $("$other" --version) ($other), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# command: fsbench $*"
echo "# pinned: ${PIN:-no}; file system: ${FRESH_FS:-reused}"
cold() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; fi
  sleep "${COLD_WAIT:-2}"
}
for pair in $(seq 1 "$pairs"); do
  for side in $(python3 "$here/bench/pairs.py" first "$pair" this other); do
    bin="$this"; [ "$side" = other ] && bin="$other"
    fresh_fs
    cold
    rm -rf "${out:?}/$side.json"  # a suite's --output is a directory it will not reuse
    "${PINNED[@]}" "$bin" "$@" --output "$out/$side.json" > "$out/$side.log" 2>&1 \
      || { echo "pair $pair: the $side build failed:" >&2; tail -5 "$out/$side.log" >&2; exit 1; }
  done
  python3 "$here/bench/vs_build.py" pair "$case_name" "$pair" "$out/this.json" "$out/other.json" \
    "$metric" "${EXACT:-0}" >> "$raw"
  tail -1 "$raw" | python3 -c 'import json, sys
p = json.loads(sys.stdin.read())
a, b = p["a"]["value"], p["b"]["value"]
who = "this" if p["first"] == "a" else "other"
print("pair %d (%s first): this %.1f, other %.1f, ratio %.3f" % (p["pair"], who, a, b, a / max(b, 1e-9)))'
done
python3 "$here/bench/pairs.py" report "$raw" --a this --b other --metric "$metric" \
  --tolerance "${TOLERANCE:-$([ "${EXACT:-0}" = 1 ] && echo 0 || echo 0.05)}"
