#!/usr/bin/env bash
# fsbench io500 against IOR and mdtest run by hand with IO500's parameters, under the same
# mpirun with NP ranks: the eleven IO500 phases that have an IOR or mdtest counterpart, in
# IO500's order, measured by both sides in PAIRS pairs whose order alternates (bench/pairs.py:
# fsbench first in odd pairs, IOR/mdtest first in even ones). Per phase it prints the median of
# the pairs' rate ratios (fsbench/peer) with its 95 % interval and the count of pairs
# ("parity" when the interval straddles 1.0), or DIFFERENT WORK and no ratio.
#
# Fixed work, no stonewall: both sides do exactly the configured amounts, so the work can be
# checked equal. fsbench is given a stonewall (STONEWALL, default IO500's 300 s) far beyond the
# time the amounts take; a phase it stopped anyway shows as DIFFERENT WORK. IOR and mdtest run
# without a stonewall. The peer's commands (each rank's amounts as in IO500's configuration):
#   ior-easy-write   ior -a POSIX -F -t 2m -b EASY -w -k          (a file per rank)
#   ior-hard-write   ior -a POSIX -t 47008 -b 47008 -s SEGMENTS -w -k   (one shared file)
#   ior-*-read       the same with -r -C -Q 1 (each rank reads the next rank's data, as
#                    fsbench io500 does), after the files' pages are written back and evicted
#                    (fsbench io500 evicts them before its ior reads)
#   mdtest-easy-*    mdtest -F -u -n EASY_N with -C (write), -T (stat), -r (delete):
#                    empty files, a directory per rank. mdtest (4.x) with -u and -N looks for
#                    the next rank's files in the rank's own directory and fails every stat,
#                    so here each rank stats its own files where fsbench stats the next
#                    rank's: on one host the same work (every entry is in this host's cache),
#                    on several hosts not
#   mdtest-hard-*    mdtest -F -w 3901 -e 3901 -n HARD_N with -C, -T -N 1, -E -N 1 (read), -r:
#                    one directory every rank shares
# find has no IOR or mdtest counterpart and is skipped.
#
# The work each side did, from what it reports: fsbench's from its Result (io500.phases[]:
# ops and bytes), IOR's bytes from its results line (its bandwidth times its total time, as
# the range its rounded printout allows; transfers are those bytes over the transfer size),
# mdtest's items from its "N tasks, M files" line. The rates over the same window: fsbench
# times a phase from the first rank's first operation to the last rank's last; IOR's rate here
# is its bytes over its wr/rd(s) time (opening and closing outside, as in bench/vs-ior.sh);
# mdtest times each phase between its barriers.
# Before each side's run of the phases, the page cache is synced and dropped (root), then
# COLD_WAIT seconds (default 4) pass, as bench/vs-ior.sh does.
#
#   IOR=/path/to/ior MDTEST=/path/to/mdtest bench/vs-io500.sh DIR [NP] [PAIRS]
#   NP: ranks (default 2); PAIRS: pairs (default 6, the fewest with a 95 % interval)
#   env: EASY_MIB (ior-easy MiB per rank, default 256), SEGMENTS (ior-hard segments per rank,
#        default 2000), EASY_N and HARD_N (mdtest files per rank, default 20000 and 10000),
#        STONEWALL (fsbench's, default 300), FSBENCH (target/release/fsbench, built with
#        --features mpi), MPIRUN_ARGS (e.g. "--hostfile hosts"), OUT (logs directory)
#
# This script neither fetches nor builds IOR or mdtest: build them outside this repository
# against the same MPI (https://github.com/hpc/ior: ./bootstrap && ./configure && make; the
# binaries are src/ior and src/mdtest). Not run in CI.
set -euo pipefail

dir="${1:?usage: IOR=... MDTEST=... $0 DIR [NP] [PAIRS]}"
np="${2:-2}"
pairs="${3:-6}"
easy_mib="${EASY_MIB:-256}"
segments="${SEGMENTS:-2000}"
easy_n="${EASY_N:-20000}"
hard_n="${HARD_N:-10000}"
stonewall="${STONEWALL:-300}"
here="$(cd "$(dirname "$0")/.." && pwd)"
fsbench="${FSBENCH:-$here/target/release/fsbench}"
mpirun="mpirun ${MPIRUN_ARGS:-} --allow-run-as-root --oversubscribe -np $np"
: "${IOR:?set IOR to the path of an ior binary you built (see the top of this script)}"
: "${MDTEST:?set MDTEST to the path of an mdtest binary you built (see the top of this script)}"
for v in np pairs easy_mib segments easy_n hard_n stonewall; do
  case "${!v}" in
    '' | *[!0-9]* | 0) echo "$v must be a positive whole number: ${!v}" >&2; exit 2 ;;
  esac
done
[ "$easy_mib" -ge 2 ] && [ $((easy_mib % 2)) -eq 0 ] \
  || { echo "EASY_MIB must be a multiple of ior-easy's 2 MiB transfer: $easy_mib" >&2; exit 2; }
[ -x "$IOR" ] || { echo "IOR=$IOR is not executable" >&2; exit 2; }
[ -x "$MDTEST" ] || { echo "MDTEST=$MDTEST is not executable" >&2; exit 2; }
[ -x "$fsbench" ] || { echo "build fsbench first: cargo build --release --features mpi (or set FSBENCH)" >&2; exit 2; }
[ -d "$dir" ] || { echo "no such directory: $dir" >&2; exit 2; }
work="$(mktemp -d "$(cd "$dir" && pwd)/vs-io500.XXXXXX")"
out="${OUT:-$(mktemp -d /tmp/vs-io500.XXXXXX)}"
mkdir -p "$out"
trap 'rm -rf "$work"' EXIT

cold() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; sleep "${COLD_WAIT:-4}"; }

# fsbench's configuration: IO500's sections with this run's amounts (each rank's).
cfg="$out/io500.ini"
cat >"$cfg" <<EOF
[ior-easy]
transferSize = 2m
blockSize = ${easy_mib}m
[ior-hard]
segmentCount = $segments
[mdtest-easy]
n = $easy_n
[mdtest-hard]
n = $hard_n
EOF

run_fsbench() { # PAIR
  mkdir "$work/fsb"
  cold
  $mpirun "$fsbench" io500 --config "$cfg" --stonewall "$stonewall" "$work/fsb" \
    --output "$out/fs.$1.json" >"$out/fs.$1.txt" 2>&1 \
    || { echo "fsbench io500 failed (pair $1): see $out/fs.$1.txt" >&2; exit 1; }
  rm -rf "${work:?}/fsb"
}

# The ior files' pages written back and evicted, nothing else dropped (the mdtest trees
# stay as cached as fsbench io500 leaves them).
evict() { # DIR
  find "$1" -type f -print0 | while IFS= read -r -d '' f; do
    sync "$f"
    dd if="$f" iflag=nocache count=0 status=none
  done
}

run_peer() { # PAIR
  local p="$1" t="$work/peer" log="$out/peer.$1"
  mkdir -p "$t/ior-easy" "$t/ior-hard" "$t/mdtest-easy" "$t/mdtest-hard"
  local easy=(-a POSIX -F -t 2m -b "${easy_mib}m" -o "$t/ior-easy/ior_file_easy")
  local hard=(-a POSIX -t 47008 -b 47008 -s "$segments" -o "$t/ior-hard/IOR_file")
  local md_easy=(-F -u -n "$easy_n" -d "$t/mdtest-easy")
  local md_hard=(-F -w 3901 -e 3901 -n "$hard_n" -d "$t/mdtest-hard")
  # A phase that fails is reported and left to the work check (DIFFERENT WORK).
  phase() { # NAME COMMAND...
    local name="$1"
    shift
    $mpirun "$@" >"$log.$name.txt" 2>&1 \
      || echo "note: the peer's $name failed in pair $p: see $log.$name.txt" >&2
  }
  cold
  phase ior-easy-write "$IOR" "${easy[@]}" -w -k
  phase mdtest-easy-write "$MDTEST" "${md_easy[@]}" -C
  phase ior-hard-write "$IOR" "${hard[@]}" -w -k
  phase mdtest-hard-write "$MDTEST" "${md_hard[@]}" -C
  evict "$t/ior-easy"
  phase ior-easy-read "$IOR" "${easy[@]}" -r -C -Q 1
  phase mdtest-easy-stat "$MDTEST" "${md_easy[@]}" -T
  evict "$t/ior-hard"
  phase ior-hard-read "$IOR" "${hard[@]}" -r -C -Q 1
  phase mdtest-hard-stat "$MDTEST" "${md_hard[@]}" -T -N 1
  phase mdtest-easy-delete "$MDTEST" "${md_easy[@]}" -r
  phase mdtest-hard-read "$MDTEST" "${md_hard[@]}" -E -N 1
  phase mdtest-hard-delete "$MDTEST" "${md_hard[@]}" -r
  rm -rf "${t:?}"
}

echo "fsbench io500 vs IOR ($IOR) and mdtest ($MDTEST) in $dir: $np ranks, $pairs pairs, order"
echo "alternating; per rank: ior-easy ${easy_mib} MiB, ior-hard $segments segments, mdtest-easy"
echo "$easy_n and mdtest-hard $hard_n files; fixed work (fsbench's stonewall $stonewall s, none for"
echo "the peers); find skipped (no counterpart); logs in $out; $(date -u +%F) $(uname -r)"
for pair in $(seq "$pairs"); do
  for side in $(python3 "$here/bench/pairs.py" first "$pair" fsbench peer); do
    "run_$side" "$pair"
  done
done

BENCH_DIR="$here/bench" python3 - "$out" "$pairs" <<'EOF'
# Per pair and phase: fsbench's ops, bytes and rate from its Result; the peer's bytes or
# items and rate from its printout; then bench/pairs.py's report per phase.
import json, os, re, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
import pairs
out, npairs = sys.argv[1], int(sys.argv[2])
GIB = 2**30
IOR = {"ior-easy-write": ("write", 2 << 20), "ior-hard-write": ("write", 47008),
       "ior-easy-read": ("read", 2 << 20), "ior-hard-read": ("read", 47008)}
MD = {"mdtest-easy-write": "File creation", "mdtest-easy-stat": "File stat",
      "mdtest-easy-delete": "File removal", "mdtest-hard-write": "File creation",
      "mdtest-hard-stat": "File stat", "mdtest-hard-read": "File read",
      "mdtest-hard-delete": "File removal"}
ORDER = ["ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write",
         "ior-easy-read", "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat",
         "mdtest-easy-delete", "mdtest-hard-read", "mdtest-hard-delete"]

def half_unit(printed):
    """Half the last printed digit's unit: how far IOR's rounding can have moved a value
    (IOR prints a time of a second or more with two decimals, a shorter one with more)."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return 0.5 * 10 ** -decimals

def ior_side(text, key, xfer):
    """IOR's results line of `key` (columns by name): its bytes as the range its rounding
    allows (bandwidth times total time, each to the digits IOR printed), its rate over
    wr/rd(s)."""
    head = None
    for line in text.splitlines():
        f = line.split()
        if f[:2] == ["access", "bw(MiB/s)"]:
            head = f
        elif head and f and f[0] == key and len(f) == len(head):
            c = dict(zip(head, f))
            bw, total, xfer_s = float(c["bw(MiB/s)"]), float(c["total(s)"]), float(c["wr/rd(s)"])
            dbw, dt = half_unit(c["bw(MiB/s)"]), half_unit(c["total(s)"])
            lo = max(bw - dbw, 0) * max(total - dt, 0) * 2**20
            hi = (bw + dbw) * (total + dt) * 2**20
            rate = (lo + hi) / 2 / xfer_s if xfer_s else 0.0
            return rate, {f"{key} bytes": [lo, hi], f"{key} transfers": [lo / xfer, hi / xfer]}
    return 0.0, {}

def md_side(text, row):
    """mdtest's items (its "N tasks, M files" line, less every item it warns it could not
    stat, open or remove) and its rate of `row` (the mean)."""
    items, rate = None, 0.0
    failed = sum(1 for line in text.splitlines() if line.startswith("WARNING: unable to"))
    for line in text.splitlines():
        m = re.search(r"(\d+) tasks, (\d+) (files/directories|files|directories)", line)
        if m:
            items = int(m.group(2))
        m = re.match(r"^\s+%s\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)" % row, line)
        if m and float(m.group(3)) > 0:
            rate = float(m.group(3))
    return rate, ({"items": items - failed} if rate > 0 and items is not None else {})

lines = []
for r in range(1, npairs + 1):
    first = pairs.first(r, "a", "b")[0]
    with open(os.path.join(out, f"fs.{r}.json")) as f:
        fs = {p["name"]: p for p in json.load(f)["io500"]["phases"]}
    for name in ORDER:
        p = fs.get(name)
        path = os.path.join(out, f"peer.{r}.{name}.txt")
        text = open(path).read() if os.path.exists(path) else ""
        if name in IOR:
            key, xfer = IOR[name]
            value = p["value"] * GIB if p else 0.0
            work = {f"{key} bytes": p["bytes"], f"{key} transfers": p["ops"]} if p else {}
            peer_value, peer_work = ior_side(text, key, xfer)
        else:
            value = p["value"] * 1e3 if p else 0.0
            work = {"items": p["ops"]} if p else {}
            peer_value, peer_work = md_side(text, MD[name])
        lines.append(json.dumps({"case": name, "pair": r, "first": first,
                                 "a": {"value": value, "work": work},
                                 "b": {"value": peer_value, "work": peer_work}}))
path = os.path.join(out, "pairs.jsonl")
with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")
print("(peer: IOR for the ior phases, rates in bytes/s over the transfers; mdtest for the")
print(" mdtest phases, rates in items/s)")
print(f"{'phase':20} {'pair':>4} {'first':>7} {'fsbench':>14} {'peer':>14} {'ratio':>6}")
for text in lines:
    p = json.loads(text)
    a, b = p["a"]["value"], p["b"]["value"]
    who = "fsbench" if p["first"] == "a" else "peer"
    print(f"{p['case']:20} {p['pair']:>4} {who:>7} {a:>14.0f} {b:>14.0f} {a / b if b else 0:>6.3f}")
pairs.report(path, ("fsbench", "peer"), "rate")
EOF
