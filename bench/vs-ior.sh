#!/usr/bin/env bash
# fsbench (built with --features mpi) against IOR on the same layouts, under the same mpirun:
# file per rank, one shared file segmented, one shared file strided; write, then read with the
# ranks reordered across hosts (IOR -C, fsbench --reorder-ranks; on one host neither reorders,
# see `reads` below); -np 2 and 4 by default. For each pair it
# prints the bytes each tool moved (checked equal first) and the ratio of their bandwidths over
# the same window, and after each write the extents of IOR's and fsbench's files (IOR/fsbench).
# The method is bench/pairs.py's: the order alternates (IOR first in odd pairs, fsbench in
# even ones), the work is what each tool measured, and per case the median of the pairs'
# ratios with its 95 % interval and the count of pairs, "parity" when it straddles 1.0, no
# ratio when the work differed.
# The bytes: fsbench's from its Result; IOR's from its results line, the bandwidth times the
# total time it divided by (what IOR counted as moved, not the size it was told to move), as
# the range its rounded printout allows. The window: fsbench times each rank's transfers
# (first rank's first I/O to the last rank's last; opening and closing outside), so IOR's
# bandwidth here is its bytes over its wr/rd(s) time, the same window; IOR's open and close
# time, which its own bandwidth figure includes, is printed beside each pair ("ior open+close").
#
#   bench/vs-ior.sh IOR_BINARY DIR [PER_RANK_MIB] [NPS] [PAIRS]     (PAIRS default 6)
#
# IOR_BINARY: an `ior` you built yourself from https://github.com/hpc/ior against the same MPI
# (./bootstrap && ./configure && make; the binary is src/ior). This script never builds or
# fetches IOR. DIR: a directory on the file system to measure (a shared mount on a cluster; add
# MPIRUN_ARGS="--hostfile hosts" to spread the ranks). PER_RANK_MIB: data per rank (default 256).
# NPS: rank counts (default "2 4"). PAIRS: IOR/fsbench pairs per case (default 6, the fewest
# with a 95 % interval of the median; IOR goes first in odd pairs, fsbench in even ones);
# with more than one, every pair is printed and then a table of the median ratio per case
# (the median of the pairs' ratios, with their min..max). Transfer size TRANSFER for both tools
# (default 1m; KiB or MiB: 4k, 64k, 1m, ...): at 1 MiB the storage sets the pace, at 4 KiB each
# tool's own cost per transfer shows as well. Neither tool fsyncs
# (IOR without -e; fsbench without --fsync); both read after the write, reordered.
# CACHE=direct: both tools bypass the page cache (IOR --posix.odirect, fsbench --cache direct)
# for writes and reads; default buffered. Aligned direct writes to one file run in parallel
# on XFS, and direct overwrites of written blocks on ext4 (the inode lock taken shared), while
# buffered writes go one at a time, so this is the shared-file write case where each tool's
# own cost can show on one host (with OVERWRITE=1).
# OVERWRITE=1: the timed write overwrites the tool's own file, written once just before
# (untimed) with the same command: IOR with -E (without it IOR deletes its file before
# writing), fsbench on the file it kept. A write that allocates is mostly the file system's
# work (at 4 KiB direct on XFS, ~35 us per write for allocation and unwritten-extent
# conversion); an overwrite is what a database or a checkpoint rewrite does and leaves the
# transfers themselves. Default: every timed write creates its file.
# Before every measurement of either tool the local page cache is synced and dropped (root).
# LAYOUTS="shared_strided ..." measures only the layouts named.
# Reads: each rank reads what it wrote itself when every rank is on one host (IOR's -C moves no
# rank there), another host's data when the ranks are on several (-C / --reorder-ranks, which
# fsbench shifts as IOR does for by-slot and round-robin placement); a `# reads:` line says which.
# IOR_DATA=r: IOR's data on the device is random, like fsbench's (`ior -l r`). IOR's default
# data compresses about 2.6:1 (zram's lzo-rle) and fsbench's not at all, so on storage that
# compresses (zram, ZFS or btrfs with compression, many arrays) the two tools would otherwise
# give the device different work. Buffered: before each IOR read its file is rewritten
# (untimed) with -l r, and the timed writes keep IOR's default data, which only reaches the
# page cache (with -l r IOR regenerates its buffer for every transfer, CPU fsbench does not
# spend). CACHE=direct: the timed writes reach the device, so IOR's timed writes use -l r
# themselves, regeneration included, and its reads read that.
# FSBENCH_CLI=ior: fsbench is run as `fsbench ior` with IOR's own flags (-a POSIX -t -b -s
# -F -w -k -r -C, -B for CACHE=direct) instead of `fsbench run` with its layout flags: the
# same comparison, through fsbench's mapping of IOR's command line (docs/ior.md). Default run.
# On a cluster drop the cache on every host yourself (this only drops the local one).
set -euo pipefail
ior="${1:?usage: bench/vs-ior.sh IOR_BINARY DIR [PER_RANK_MIB] [NPS]}"
dir="${2:?usage: bench/vs-ior.sh IOR_BINARY DIR [PER_RANK_MIB] [NPS]}"
mib="${3:-256}"
nps="${4:-2 4}"
pairs="${5:-6}"
xfer="${TRANSFER:-1m}"
case "$xfer" in
  *k) xfer_kib=${xfer%k};;
  *m) xfer_kib=$(( ${xfer%m} * 1024 ));;
  *) echo "TRANSFER must be KiB or MiB with its unit (4k, 1m): $xfer" >&2; exit 2;;
esac
[ "$xfer_kib" -gt 0 ] && [ $(( mib * 1024 % xfer_kib )) -eq 0 ] \
  || { echo "TRANSFER ($xfer) must divide the data per rank (${mib} MiB)" >&2; exit 2; }
# Only random data makes IOR's file as incompressible as fsbench's (IOR's other -l kinds
# compress, "incompressible" too, and it takes an unknown one for "offset").
case "${IOR_DATA:-}" in
  ""|r) ;;
  *) echo "IOR_DATA must be r (IOR's random data) or unset: $IOR_DATA" >&2; exit 2;;
esac
cache="${CACHE:-buffered}"
case "$cache" in
  buffered) ior_cache=(); fsb_cache=(--cache buffered); fsb_ior_cache=();;
  direct) ior_cache=(--posix.odirect); fsb_cache=(--cache direct); fsb_ior_cache=(-B);;
  *) echo "CACHE must be buffered or direct: $cache" >&2; exit 2;;
esac
case "${OVERWRITE:-0}" in
  0) writes=new;;
  1) writes=overwrite;;
  *) echo "OVERWRITE must be 1 (the timed write overwrites the tool's own file) or 0: $OVERWRITE" >&2; exit 2;;
esac
fsb_cli="${FSBENCH_CLI:-run}"
case "$fsb_cli" in
  run|ior) ;;
  *) echo "FSBENCH_CLI must be run (fsbench run with its layout flags) or ior (fsbench ior with IOR's flags): $fsb_cli" >&2; exit 2;;
esac
here="$(cd "$(dirname "$0")/.." && pwd)"
fsbench="${FSBENCH:-$here/target/release/fsbench}"
mpirun="mpirun ${MPIRUN_ARGS:-} --allow-run-as-root --oversubscribe"
[ -x "$ior" ] || { echo "not an executable IOR binary: $ior" >&2; exit 2; }
[ -x "$fsbench" ] || { echo "build fsbench first: cargo build --release --features mpi" >&2; exit 2; }
work="$(mktemp -d "$dir/vs-ior.XXXXXX")"
rows="$(mktemp)"
measured="$(mktemp)"
trap 'rm -rf "$work" "$rows" "$measured"' EXIT

# IOR's results line of one access ("write"/"read", under the header "access bw(MiB/s) ...
# open(s) wr/rd(s) close(s) total(s) iter"), columns found by name: prints the bytes it moved
# as the range its rounding allows (bandwidth times total time, each to the digits printed),
# its bandwidth over the transfers alone (wr/rd(s)) in bytes/s, and its open + close seconds.
ior_measured() { python3 -c '
import sys
def half_unit(printed):
    # Half the last printed digit: IOR prints a time of a second or more with two decimals.
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return 0.5 * 10 ** -decimals
key, head = sys.argv[1], None
for line in sys.stdin:
    f = line.split()
    if f[:2] == ["access", "bw(MiB/s)"]:
        head = f
    elif head and f and f[0] == key and len(f) == len(head):
        c = dict(zip(head, f))
        bw, total, xfer = float(c["bw(MiB/s)"]), float(c["total(s)"]), float(c["wr/rd(s)"])
        dbw, dt = half_unit(c["bw(MiB/s)"]), half_unit(c["total(s)"])
        lo = max(bw - dbw, 0) * max(total - dt, 0) * 2**20
        hi = (bw + dbw) * (total + dt) * 2**20
        oc = float(c["open(s)"]) + float(c["close(s)"])
        print(f"{lo:.0f} {hi:.0f} {(lo + hi) / 2 / xfer if xfer else 0:.0f} {oc:.4f}")
        break
else:
    print("0 0 0 0")
' "$1"; }
# The storage under DIR (device and file system type), part of the conditions.
storage="$(findmnt -n -o SOURCE,FSTYPE -T "$dir" 2>/dev/null | awk '{ print $1, $2; exit }')"
case "$storage" in
  /dev/zram*) [ -n "${IOR_DATA:-}" ] || echo "note: $dir is on zram, which compresses: IOR's default data compresses, fsbench's does not, so the tools give the device different work; set IOR_DATA=r" >&2;;
esac
# Extents of the files a tool wrote (FIEMAP through filefrag, after a sync), summed: how the
# file system laid them out. Concurrent writers to one file can leave it in one extent or in
# tens of thousands, whichever tool wrote it, and an overwrite or a read of a fragmented
# file can cost more; the count is printed beside every write so a reader can see it.
extents() { find "$work" -type f -path "$work/$1*" -exec filefrag -s {} + 2>/dev/null \
  | awk '{ n += $(NF-2) } END { print n + 0 }'; }
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }

# The conditions, for bench/vs_ior_summary.py (which pools only runs made under the same ones).
echo "# vs-ior: transfer $xfer, ${mib} MiB per rank, np $nps, $pairs pair(s), dir $dir, storage ${storage:-unknown}, cache $cache, writes $writes, ior data ${IOR_DATA:-default}, fsbench $fsb_cli, $(date -u '+%Y-%m-%d %H:%M UTC')" \
  | tee "$rows"
printf '%-18s %3s %-5s %4s %14s %14s %12s %12s %7s\n' layout np phase pair ior_bytes fsbench_bytes ior_MiB/s fsbench_MiB/s ratio
for np in $nps; do
  total=$((mib * np))
  # Which rank's data each rank reads, the same for both tools. IOR's -C shifts the ranks by a
  # whole host (the ranks on rank 0's host when rank 1 is there too), so on one host it moves
  # no rank and every rank reads what it wrote itself, while fsbench's --reorder-ranks still
  # reads the next rank's data; on this VM reading the other rank's 1 MiB direct segments cost
  # ~5 % (fsbench against itself), enough to pass for a tool's cost. So on one host neither
  # tool reorders (the page cache is dropped before every measurement anyway), and across
  # hosts both do (fsbench's shift equals IOR's for by-slot and round-robin placement).
  nhosts="$($mpirun -np "$np" hostname 2>/dev/null | sort -u | wc -l)"
  if [ "$nhosts" -gt 1 ]; then reads=other; ior_reorder=(-C); fsb_reorder=(--reorder-ranks)
  else reads=own; ior_reorder=(); fsb_reorder=(); fi
  echo "# reads: $reads (np $np on $nhosts host(s))" | tee -a "$rows"
  for layout in ${LAYOUTS:-file_per_rank shared_segmented shared_strided}; do
    case $layout in
      file_per_rank)    iorl=(-F -b "${mib}m" -s 1); fsl=(--file-per-rank --size "${mib}m");;
      shared_segmented) iorl=(-b "${mib}m" -s 1);    fsl=(--shared-file segmented --size "${total}m");;
      shared_strided)   iorl=(-b "$xfer" -s $(( mib * 1024 / xfer_kib ))); fsl=(--shared-file strided --size "${total}m");;
    esac
    for pair in $(seq "$pairs"); do
    for phase in write read; do
      if [ $phase = write ]; then iorp=(-w -k); fsp=(--rw write --keep); key=write
        # Direct writes reach the device inside the timed part: their data is the device's work.
        [ "$cache" = direct ] && [ -n "${IOR_DATA:-}" ] && iorp+=(-l "$IOR_DATA")
      else iorp=(-r "${ior_reorder[@]}"); fsp=(--rw read "${fsb_reorder[@]}"); key=read; fi
      # Each tool starts from the same state: no dirty data of the other still being written
      # back, and an empty page cache (root): IOR reads whatever the cache holds (fsbench
      # evicts its targets before timing), and the other tool's cached files must not press
      # on memory during a write.
      # On a VM whose balloon reports free pages to the host (virtio free page reporting),
      # memory that stayed free for ~2 s goes back to the host and the next touch of it is
      # slow: a tool started right after the other one's pages were dropped would get fast
      # memory, the first of a pair slow memory. Waiting COLD_WAIT seconds (default 4) after
      # the drop puts both tools in the same state.
      cold() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; sleep "${COLD_WAIT:-4}"; }
      run_ior() {
        if [ $phase = write ] && [ $writes = overwrite ]; then
          $mpirun -np "$np" "$ior" -a POSIX "${ior_cache[@]}" -t "$xfer" "${iorl[@]}" "${iorp[@]}" \
            -o "$work/ior.$layout" >/dev/null 2>&1 \
            || { echo "IOR could not write its file before overwriting it" >&2; exit 1; }
        fi
        if [ $phase = read ] && [ "$cache" = buffered ] && [ -n "${IOR_DATA:-}" ]; then
          $mpirun -np "$np" "$ior" -a POSIX -t "$xfer" "${iorl[@]}" -w -k -l "$IOR_DATA" \
            -o "$work/ior.$layout" >/dev/null 2>&1 \
            || { echo "IOR could not rewrite its file with -l $IOR_DATA" >&2; exit 1; }
        fi
        cold
        local over=()
        [ $phase = write ] && [ $writes = overwrite ] && over=(-E)
        out="$($mpirun -np "$np" "$ior" -a POSIX "${ior_cache[@]}" -t "$xfer" "${iorl[@]}" "${iorp[@]}" "${over[@]}" -o "$work/ior.$layout" 2>&1)"
        read -r ib_lo ib_hi ibw ioc < <(printf '%s\n' "$out" | ior_measured $key)
      }
      # fsbench's command for this phase: `run` with its layout flags, or (FSBENCH_CLI=ior)
      # `ior` with IOR's flags for the layout and the phase (its own data, no -l).
      if [ "$fsb_cli" = ior ]; then
        if [ $phase = write ]; then fsb_phase=(-w -k); else fsb_phase=(-r "${ior_reorder[@]}"); fi
        fsb_cmd=(ior -a POSIX "${fsb_ior_cache[@]}" -t "$xfer" "${iorl[@]}" "${fsb_phase[@]}" -o "$work/fsb.$layout")
      else
        fsb_cmd=(run "$work/fsb.$layout" --bs "$xfer" "${fsp[@]}" "${fsl[@]}" "${fsb_cache[@]}")
      fi
      run_fsbench() {
        if [ $phase = write ] && [ $writes = overwrite ]; then
          $mpirun -np "$np" "$fsbench" "${fsb_cmd[@]}" --force >/dev/null \
            || { echo "fsbench could not write its file before overwriting it" >&2; exit 1; }
        fi
        cold
        $mpirun -np "$np" "$fsbench" "${fsb_cmd[@]}" --output "$work/r.json" --force >/dev/null
        fb="$(json "$work/r.json" "r['total']['bytes']")"
        fops="$(json "$work/r.json" "r['total']['ops']")"
        fbw="$(json "$work/r.json" "r['distributed']['full_bytes_per_sec']")"
        rm -f "$work/r.json"
      }
      # Which tool goes first alternates from pair to pair: the first run after the last
      # pair's files were removed can meet the file system still freeing them (discards).
      for tool in $(python3 "$here/bench/pairs.py" first "$pair" ior fsbench); do "run_$tool"; done
      ext=""
      [ $phase = write ] && ext="$(extents "ior.$layout")/$(extents "fsb.$layout")"
      python3 - "$layout" "$np" "$phase" "$pair" "$ib_lo" "$ib_hi" "$fb" "$fops" "$ibw" "$fbw" "$ext" "$ioc" "$xfer_kib" "$measured" <<'EOF' | tee -a "$rows"
import json, sys
layout, np, phase, pair, ib_lo, ib_hi, fb, fops, ibw, fbw, ext, ioc, xfer_kib, measured = sys.argv[1:]
ib_lo, ib_hi, fb, fops = int(ib_lo or 0), int(ib_hi or 0), int(fb), int(fops)
ibw, fbw, xfer = float(ibw or 0), float(fbw), int(xfer_kib) * 1024
ext = f"  extents {ext}" if ext else ""
# The work each measured: bytes and transfers of this direction (IOR's transfers are its
# bytes over the transfer size: it counts no transfers of its own).
work_f = {f"{phase} bytes": fb, f"{phase} transfers": fops}
work_i = {f"{phase} bytes": [ib_lo, ib_hi], f"{phase} transfers": [ib_lo / xfer, ib_hi / xfer]}
with open(measured, "a") as f:
    f.write(json.dumps({"case": f"{layout} np {np} {phase}", "pair": int(pair),
                        "first": "b" if int(pair) % 2 == 1 else "a",
                        "a": {"value": fbw, "work": work_f}, "b": {"value": ibw, "work": work_i}}) + "\n")
same = ib_lo <= fb <= ib_hi
ib = (ib_lo + ib_hi) // 2
# No ratio for different work, not even a pair's.
ratio = f"{fbw/ibw if ibw else 0:>7.2f}" if same else f"{'-':>7}"
print(f"{layout:<18} {np:>3} {phase:<5} {pair:>4} {ib:>14} {fb:>14} {ibw/2**20:>12.1f} {fbw/2**20:>12.1f} {ratio}{ext}"
      f"  ior open+close {ioc} s{'' if same else '  BYTES DIFFER'}")
EOF
    done
    rm -rf "$work"/ior.* "$work"/fsb.*
    # SETTLE seconds (default 0) between pairs, for file systems that need time after a
    # removal (online discard).
    sync; sleep "${SETTLE:-0}"
    done
  done
done
# Per case the median of the pairs' ratios with its 95 % interval (bench/pairs.py); a case
# where the work differed in any pair gets no ratio (same work before same speed).
# bench/vs_ior_summary.py also pools several runs' printouts under the same conditions.
echo
python3 "$here/bench/pairs.py" report "$measured" --a fsbench --b ior --metric "bandwidth over the transfers"
if [ "$pairs" -gt 1 ]; then
  echo
  python3 "$here/bench/vs_ior_summary.py" "$rows"
fi
