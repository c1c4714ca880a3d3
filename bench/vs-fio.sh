#!/usr/bin/env bash
# fsbench vs fio, side by side: the same 1 GiB file, the same run, alternating pairs; prints
# medians of IOPS and CPU per I/O for both tools and the ratio fsbench/fio. The cases (core and
# io_uring) and the method are in bench/vs_fio.py.
#
#   bench/vs-fio.sh [DIR] [PAIRS] [SECONDS]        (defaults: /var/tmp, 6, 10)
#   CASES="uring_direct_rr_qd1 uring_direct_rr_qd32" PIN=1 bench/vs-fio.sh /var/tmp 11 5
#   FORMAT=md bench/vs-fio.sh                      # a Markdown table
#
# Needs fio (Debian package `fio`), taskset (util-linux) for PIN, and python3. Never run in
# CI; not a timed test. Run it on an otherwise idle machine: a compile beside it moves the
# numbers more than any difference between the tools.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
command -v fio >/dev/null || { echo "fio is missing: apt-get install fio" >&2; exit 2; }
(cd "$ROOT" && cargo build --release --quiet)
exec python3 "$ROOT/bench/vs_fio.py" "$@"
