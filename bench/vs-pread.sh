#!/usr/bin/env bash
# fsbench vs a bare pread loop (bench/pread_loop.rs): hot-cache 4 KiB random reads, psync,
# 1 thread, the same offsets and the same count, pinned, in alternating pairs; prints both
# ops/s, the per-pair ratio and the medians. The method is in bench/vs_pread.py.
#
#   bench/vs-pread.sh [DIR] [PAIRS] [COUNT]        (defaults: /var/tmp, 15, 1m)
#   PIN=0 SEED=7 bench/vs-pread.sh /var/tmp 21 2m
#
# Needs rustc, taskset (util-linux) and python3. Never run in CI; not a timed test.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TGT=${CARGO_TARGET_DIR:-$ROOT/target}
(cd "$ROOT" && cargo build --release --quiet)
# Built like the crate's release profile (opt-level 3), standard library only.
rustc -O --edition 2021 -o "$TGT/pread_loop" "$ROOT/bench/pread_loop.rs"
exec python3 "$ROOT/bench/vs_pread.py" "$@"
