#!/usr/bin/env bash
# fsbench vs fio's io_uring engine, side by side on the same file (issue 3's cases).
# The same cases run inside bench/vs-fio.sh through bench/vs-fio.d/uring.sh; this script adds
# alternating order within each pair and whole-process CPU, and produced the README numbers.
#
# Every case runs PAIRS pairs of (fsbench, fio), alternating which tool goes first, on one
# 1 GiB file; the summary prints medians of IOPS and CPU seconds per I/O for both tools and
# the ratio fsbench/fio (IOPS: higher is better; CPU per I/O: lower is better).
#
# CPU per I/O is given two ways: as each tool reports it for its I/O threads (fsbench:
# getrusage of the worker threads; fio: usr_cpu + sys_cpu of the job), and for the whole
# process as /usr/bin/time measures it (setup included).
#
# usage: bench/vs-fio-uring.sh [uring]
# environment: FSBENCH (default target/release/fsbench), BENCH_DIR (where the 1 GiB file
#   goes; default bench/tmp), PAIRS (5), RUNTIME (seconds per run, 10), FIO (fio).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FSBENCH=${FSBENCH:-$ROOT/target/release/fsbench}
FIO=${FIO:-fio}
DIR=${BENCH_DIR:-$ROOT/bench/tmp}
PAIRS=${PAIRS:-5}
RUNTIME=${RUNTIME:-10}
FILE=$DIR/vs-fio-uring.dat
OUT=$DIR/results
SIZE=1g

die() { echo "vs-fio: $*" >&2; exit 1; }
[ -x "$FSBENCH" ] || die "no fsbench at $FSBENCH (cargo build --release)"
command -v "$FIO" >/dev/null || die "fio not found"
command -v python3 >/dev/null || die "python3 not found"
[ -x /usr/bin/time ] || die "/usr/bin/time not found (Debian package 'time')"

mkdir -p "$DIR" "$OUT"
rm -f "$OUT"/*.tsv

# The shared file: written once by fsbench (so fsbench recognises it as its own), read by both.
prepare_file() {
    if [ ! -f "$FILE" ] || [ "$(stat -c %s "$FILE")" -ne $((1 << 30)) ]; then
        rm -f "$FILE"
        "$FSBENCH" run --rw write --bs 1m --size "$SIZE" --keep --fsync "$FILE" >/dev/null
    fi
}
trap 'rm -f "$FILE"' EXIT

# Pull "iops ops cpu_thread_s" out of a tool's JSON.
parse_fsbench() {
    python3 -c 'import json,sys
t = json.load(open(sys.argv[1]))["total"]
if t["errors"]: sys.exit("fsbench reported errors")
print(t["iops"], t["ops"], t["cpu_s"])' "$1"
}
parse_fio() {
    python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))["jobs"][0]
if j["error"]: sys.exit("fio reported an error")
r = j["read"]; w = j["write"]
ops = r["total_ios"] + w["total_ios"]
secs = max(r["runtime"], w["runtime"]) / 1000.0
print(r["iops"] + w["iops"], ops, (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * secs)' "$1"
}

# run_fsbench CASE ARGS... / run_fio CASE ARGS...: one measurement, one TSV line:
# tool iops ops cpu_thread_s cpu_process_s
run_fsbench() {
    local case=$1; shift
    /usr/bin/time -f '%U %S' -o "$OUT/time" \
        "$FSBENCH" run "$@" --time "${RUNTIME}s" --output-format json "$FILE" >"$OUT/fsbench.json"
    echo "fsbench $(parse_fsbench "$OUT/fsbench.json") $(awk '{print $1 + $2}' "$OUT/time")" >>"$OUT/$case.tsv"
}
run_fio() {
    local case=$1; shift
    /usr/bin/time -f '%U %S' -o "$OUT/time" \
        "$FIO" --name="$case" --filename="$FILE" --size="$SIZE" --runtime="$RUNTIME" --time_based \
        --norandommap --randrepeat=0 --output-format=json "$@" >"$OUT/fio.json"
    echo "fio $(parse_fio "$OUT/fio.json") $(awk '{print $1 + $2}' "$OUT/time")" >>"$OUT/$case.tsv"
}

# pair CASE "FSBENCH ARGS" "FIO ARGS": PAIRS alternating pairs.
pair() {
    local case=$1 fsb=$2 fio=$3 i
    echo "== $case: fsbench $fsb | fio $fio" >&2
    for ((i = 0; i < PAIRS; i++)); do
        if ((i % 2 == 0)); then
            run_fsbench "$case" $fsb
            run_fio "$case" $fio
        else
            run_fio "$case" $fio
            run_fsbench "$case" $fsb
        fi
    done
}

# Warm the page cache with the whole file (for hot-cache cases).
warm_cache() {
    cat "$FILE" >/dev/null
}

# ---- io_uring cases (issue 3) ------------------------------------------------------------
# fio gets its fastest io_uring settings too: registered buffers and files.
uring_cases() {
    local fio_uring="--ioengine=io_uring --fixedbufs=1 --registerfiles=1"
    local qd
    for qd in 1 8 32; do
        pair "uring-direct-randread-4k-qd$qd" \
            "--rw randread --bs 4k --cache direct --engine uring --qd $qd" \
            "--rw=randread --bs=4k --direct=1 --iodepth=$qd $fio_uring"
    done
    warm_cache
    pair "uring-hot-randread-4k-qd32" \
        "--rw randread --bs 4k --cache buffered --no-invalidate --engine uring --qd 32" \
        "--rw=randread --bs=4k --direct=0 --invalidate=0 --iodepth=32 $fio_uring"
    pair "uring-direct-seqread-1m-qd8" \
        "--rw read --bs 1m --cache direct --engine uring --qd 8" \
        "--rw=read --bs=1m --direct=1 --iodepth=8 $fio_uring"
}

# ---- summary -------------------------------------------------------------------------------
summarise() {
    python3 - "$OUT" <<'EOF'
import glob, os, statistics, sys
out = sys.argv[1]
print("| case | fsbench IOPS | fio IOPS | ratio | fsbench CPU us/IO | fio CPU us/IO | ratio | process CPU us/IO fsbench / fio |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for path in sorted(glob.glob(os.path.join(out, "*.tsv"))):
    rows = {"fsbench": [], "fio": []}
    for line in open(path):
        tool, iops, ops, cpu, pcpu = line.split()
        rows[tool].append((float(iops), int(ops), float(cpu), float(pcpu)))
    def med(tool, f):
        return statistics.median(f(r) for r in rows[tool])
    iops = {t: med(t, lambda r: r[0]) for t in rows}
    cpu = {t: med(t, lambda r: r[2] / r[1] * 1e6) for t in rows}
    pcpu = {t: med(t, lambda r: r[3] / r[1] * 1e6) for t in rows}
    name = os.path.basename(path)[:-4]
    print(f"| {name} | {iops['fsbench']:.0f} | {iops['fio']:.0f} | {iops['fsbench'] / iops['fio']:.3f} "
          f"| {cpu['fsbench']:.2f} | {cpu['fio']:.2f} | {cpu['fsbench'] / cpu['fio']:.3f} "
          f"| {pcpu['fsbench']:.2f} / {pcpu['fio']:.2f} |")
print(f"\n{len(rows['fsbench'])} pairs per case, medians; fsbench/fio ratios.")
EOF
}

prepare_file
groups=${*:-uring}
for g in $groups; do
    case $g in
    uring) uring_cases ;;
    *) die "unknown group '$g' (expected: uring)" ;;
    esac
done
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, kernel $(uname -r), $(findmnt -n -o FSTYPE --target "$DIR") on $(findmnt -n -o SOURCE --target "$DIR"), fio $($FIO --version)"
summarise
