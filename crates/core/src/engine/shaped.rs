//! Written bytes storage cannot shortcut, or can by a chosen amount (`--buffer-pattern`,
//! `--buffer-compress`, `--dedupe`, fio's buffer options): [`DataFill`] makes the bytes of one
//! write, and [`ShapedEngine`] puts them in the buffer of every write op just before handing
//! the ops to the engine underneath.
//!
//! Without these options the buffers keep the random bytes they were made with, once per
//! slot (cheapest: nothing is written into them per I/O, but a write repeats the bytes of
//! the last write from its slot). With them every write gets bytes made for it, and the time
//! to make them is inside that write's latency (a xorshift pass over the random part; zeros
//! and patterns cost a fill).
//!
//! A block is made from one 64-bit content seed: its random bytes are a xorshift stream from
//! that seed, so two blocks with the same seed are byte-identical. `--dedupe PCT` gives PCT %
//! of the writes one of [`DUP_CLASSES`] seeds every worker of the run shares (an earlier
//! block's bytes, to dedupe), the rest a fresh seed. With `--dedupe-mode working-set` the
//! repeated blocks come from a working set of `--dedupe-working-set` % of the file's blocks,
//! shared by the run; each worker takes them in turn (starting at its own part of the set),
//! so the set is written whole before any of it repeats. Each of its blocks is unique the
//! first time, so the writes drawn from it are PCT % plus the set's share of the file: one
//! pass over the file then holds PCT % duplicates, as asked. `--buffer-compress PCT` makes every
//! 4 KiB of the block (or the whole block when smaller) its first (100 - PCT) % random and
//! the rest zeros (or `--buffer-pattern`'s bytes), so a compressor saves about PCT %.

use super::{BufferPool, Completion, Engine, IoOp, OpKind};
use crate::job::{BufferPattern, DedupeMode, Job};
use crate::stats::SyscallCounts;
use std::io;

/// Seeds the duplicate blocks share: few, so that a sample of the file finds the repeats
/// (each one's first copy counts as unique), and the same for every worker of a run.
pub(crate) const DUP_CLASSES: u64 = 4;

/// The unit `--buffer-compress` shapes: random head, compressible tail.
pub(crate) const COMPRESS_CHUNK: usize = 4096;

/// With `--dedupe-mode working-set`: the set this worker takes its repeated blocks from.
struct WorkingSet {
    /// Blocks in the set (at least one).
    blocks: u64,
    /// The set's block this worker writes next.
    next: u64,
    /// Writes drawn from the set, in 1/10000: the dedupe share plus the set's first copies.
    share: u64,
}

/// Which part of a file a worker's fill is for: the file's size and block size, and the
/// worker's place among the threads writing it (its start in the working set).
#[derive(Clone, Copy)]
pub(crate) struct FillPlace {
    pub file_size: u64,
    pub thread: u32,
    pub threads: u32,
}

/// How each write's bytes are made.
pub(crate) struct DataFill {
    pattern: Option<BufferPattern>,
    compress_pct: Option<u8>,
    dedupe_pct: u8,
    /// This worker's draws (SplitMix64 state): dedupe or not, and fresh seeds.
    rng: u64,
    /// The run's duplicate seeds start here (from the job seed: the same in every worker).
    dup_base: u64,
    working_set: Option<WorkingSet>,
}

impl DataFill {
    /// The fill of worker seed `seed` in `job`, writing at `place` (None when the job shapes
    /// nothing).
    pub(crate) fn for_job(job: &Job, seed: u64, place: FillPlace) -> Option<DataFill> {
        if !job.shapes_data() {
            return None;
        }
        let dedupe_pct = job.dedupe.unwrap_or(0);
        let working_set =
            (job.dedupe_mode == Some(DedupeMode::WorkingSet) && dedupe_pct > 0).then(|| {
                let file_blocks = (place.file_size / job.io_size().max(1)).max(1);
                let blocks =
                    (file_blocks as u128 * job.working_set_pct() as u128 / 100).max(1) as u64;
                let first_copies = (blocks as u128 * 10_000 / file_blocks as u128) as u64;
                WorkingSet {
                    blocks,
                    next: (blocks as u128 * place.thread as u128 / place.threads.max(1) as u128)
                        as u64,
                    share: (dedupe_pct as u64 * 100 + first_copies).min(10_000),
                }
            });
        Some(DataFill {
            pattern: job.buffer_pattern.clone(),
            compress_pct: job.buffer_compress,
            dedupe_pct,
            rng: seed ^ 0xd1b5_4a32_d192_ed03,
            dup_base: splitmix(&mut (job.seed ^ 0x6a09_e667_f3bc_c909)),
            working_set,
        })
    }

    /// The content seed of the next block: a shared one to repeat, or a fresh one.
    #[inline]
    fn next_seed(&mut self) -> u64 {
        let draw = splitmix(&mut self.rng);
        if let Some(ws) = self.working_set.as_mut() {
            if draw % 10_000 < ws.share {
                let i = ws.next;
                ws.next = if i + 1 == ws.blocks { 0 } else { i + 1 };
                // Mixed, not added: neighbouring seeds must give different streams.
                let mut st = self.dup_base ^ (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                return splitmix(&mut st);
            }
            return splitmix(&mut self.rng);
        }
        // Whether this block repeats, and which shared block: two parts of one draw.
        if self.dedupe_pct > 0 && draw % 100 < self.dedupe_pct as u64 {
            self.dup_base.wrapping_add((draw >> 32) % DUP_CLASSES)
        } else {
            splitmix(&mut self.rng)
        }
    }

    /// Make the bytes of one write in `buf`.
    #[inline]
    pub(crate) fn fill(&mut self, buf: &mut [u8]) {
        let seed = self.next_seed();
        match (self.compress_pct, &self.pattern) {
            (Some(pct), p) => {
                let filler: &[u8] = match p {
                    Some(BufferPattern::Bytes(b)) => b,
                    _ => &[0],
                };
                for (i, chunk) in buf.chunks_mut(COMPRESS_CHUNK).enumerate() {
                    let keep = random_len(chunk.len(), pct);
                    let (head, tail) = chunk.split_at_mut(keep);
                    random_bytes(head, seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    repeat(tail, filler);
                }
            }
            (None, Some(BufferPattern::Zero)) => buf.fill(0),
            (None, Some(BufferPattern::Bytes(b))) => repeat(buf, b),
            (None, Some(BufferPattern::Random) | None) => random_bytes(buf, seed),
        }
    }
}

/// SplitMix64: the next value of the stream whose state is `state`.
#[inline]
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Bytes of a `len`-byte chunk left random so that compressing it saves `pct` %.
fn random_len(len: usize, pct: u8) -> usize {
    len - len * pct.min(100) as usize / 100
}

/// `buf` filled with `pattern` repeated from its first byte.
fn repeat(buf: &mut [u8], pattern: &[u8]) {
    if pattern.len() == 1 {
        buf.fill(pattern[0]);
        return;
    }
    for (b, p) in buf.iter_mut().zip(pattern.iter().cycle()) {
        *b = *p;
    }
}

/// A xorshift64 stream from `seed` (no compressor finds structure in it; two buffers with
/// one seed are identical).
fn random_bytes(buf: &mut [u8], seed: u64) {
    let mut x = seed | 1;
    let mut words = buf.chunks_exact_mut(8);
    for w in &mut words {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        w.copy_from_slice(&x.to_le_bytes());
    }
    let rest = words.into_remainder();
    x ^= x << 13;
    let last = x.to_le_bytes();
    let n = rest.len();
    rest.copy_from_slice(&last[..n]);
}

/// An engine whose write ops get [`DataFill`]'s bytes before they are submitted. Held boxed
/// in `Built` around a boxed engine: the indirect call it adds per I/O is small beside making
/// the bytes of a write.
pub struct ShapedEngine {
    inner: Box<dyn Engine>,
    fill: DataFill,
}

impl ShapedEngine {
    pub(crate) fn new(inner: Box<dyn Engine>, fill: DataFill) -> Self {
        ShapedEngine { inner, fill }
    }
}

impl Engine for ShapedEngine {
    fn submit(&mut self, ops: &[IoOp], sys: &mut SyscallCounts) -> io::Result<usize> {
        for op in ops.iter().filter(|op| op.kind == OpKind::Write) {
            let buf = self.inner.buffers().slot_mut(op.slot as usize);
            let len = (op.len as usize).min(buf.len());
            self.fill.fill(&mut buf[..len]);
        }
        self.inner.submit(ops, sys)
    }
    fn reap(
        &mut self,
        min: usize,
        done: &mut Vec<Completion>,
        sys: &mut SyscallCounts,
    ) -> io::Result<usize> {
        self.inner.reap(min, done, sys)
    }
    fn reap_timeout(
        &mut self,
        timeout: std::time::Duration,
        done: &mut Vec<Completion>,
        sys: &mut SyscallCounts,
    ) -> io::Result<usize> {
        self.inner.reap_timeout(timeout, done, sys)
    }
    fn buffers(&mut self) -> &mut BufferPool {
        self.inner.buffers()
    }
    fn flush(&mut self, sys: &mut SyscallCounts) -> io::Result<()> {
        self.inner.flush(sys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLACE: FillPlace = FillPlace {
        file_size: 64 << 20,
        thread: 0,
        threads: 1,
    };

    fn job(f: impl FnOnce(&mut Job)) -> Job {
        let mut j = Job {
            access: crate::job::Access::Write,
            ..Job::default()
        };
        f(&mut j);
        j
    }

    #[test]
    fn compress_leaves_the_asked_share_random() {
        let mut d = DataFill::for_job(&job(|j| j.buffer_compress = Some(75)), 7, PLACE).unwrap();
        let mut b = vec![0xaau8; 3 * COMPRESS_CHUNK];
        d.fill(&mut b);
        for c in b.chunks(COMPRESS_CHUNK) {
            assert!(c[1024..].iter().all(|&x| x == 0));
            assert!(c[1016..1024].iter().any(|&x| x != 0));
        }
        assert_ne!(b[..64], b[COMPRESS_CHUNK..COMPRESS_CHUNK + 64]);
    }

    #[test]
    fn patterns_and_fresh_random() {
        let mut d = DataFill::for_job(
            &job(|j| j.buffer_pattern = Some(BufferPattern::Bytes(vec![1, 2, 3]))),
            1,
            PLACE,
        )
        .unwrap();
        let mut b = vec![0u8; 10];
        d.fill(&mut b);
        assert_eq!(b, [1, 2, 3, 1, 2, 3, 1, 2, 3, 1]);
        let mut d = DataFill::for_job(
            &job(|j| j.buffer_pattern = Some(BufferPattern::Random)),
            1,
            PLACE,
        )
        .unwrap();
        let (mut x, mut y) = (vec![0u8; 4096], vec![0u8; 4096]);
        d.fill(&mut x);
        d.fill(&mut y);
        assert_ne!(x, y, "a fresh block for every write");
    }

    #[test]
    fn working_set_blocks_stay_in_the_set_and_one_pass_holds_the_share() {
        // A file of 2000 blocks, 30 % duplicates from a working set of 10 % (200 blocks).
        let j = job(|j| {
            j.dedupe = Some(30);
            j.dedupe_mode = Some(DedupeMode::WorkingSet);
            j.dedupe_working_set = Some(10);
            j.block_size = 512;
        });
        let place = FillPlace {
            file_size: 2000 * 512,
            thread: 0,
            threads: 2,
        };
        let mut counts = std::collections::HashMap::new();
        let mut b = vec![0u8; 512];
        for t in 0..2 {
            let mut d = DataFill::for_job(
                &j,
                11 + t,
                FillPlace {
                    thread: t as u32,
                    ..place
                },
            )
            .unwrap();
            for _ in 0..1000 {
                d.fill(&mut b);
                *counts.entry(b.clone()).or_insert(0u32) += 1;
            }
        }
        let repeated = counts.values().filter(|&&n| n > 1).count();
        assert!(
            repeated <= 200,
            "{repeated} blocks repeat, the set holds 200"
        );
        let dup_pct = (2000 - counts.len()) as f64 * 100.0 / 2000.0;
        assert!((dup_pct - 30.0).abs() < 3.0, "{dup_pct}");
    }

    #[test]
    fn dedupe_repeats_about_the_asked_share() {
        let j = job(|j| j.dedupe = Some(40));
        let mut d = DataFill::for_job(&j, 3, PLACE).unwrap();
        let mut seen = std::collections::HashSet::new();
        let n = 5000;
        let mut b = vec![0u8; 512];
        for _ in 0..n {
            d.fill(&mut b);
            seen.insert(b.clone());
        }
        let dup_pct = (n - seen.len()) as f64 * 100.0 / n as f64;
        assert!((dup_pct - 40.0).abs() < 3.0, "{dup_pct}");
        // Another worker of the run repeats the same blocks.
        let mut other = DataFill::for_job(&j, 99, PLACE).unwrap();
        let before = seen.len();
        for _ in 0..200 {
            other.fill(&mut b);
            seen.insert(b.clone());
        }
        assert!(seen.len() - before < 160);
    }
}
