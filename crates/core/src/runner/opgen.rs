//! Offset and operation generation: sequential slices per thread, random blocks (uniform or
//! as `--distribution` and `--random-map` say, see `super::pick`), and the read/write mix.
//! Seeded and reproducible; offsets never pass the end of the target.

use crate::engine::OpKind;
use crate::job::split::SizeTable;

/// SplitMix64: tiny, fast, good enough for offsets, and identical on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, n) without modulo bias worth speaking of (Lemire's multiply-shift).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Seed of one thread, derived from the job seed and the thread's place.
pub(crate) fn thread_seed(seed: u64, user: usize, thread: u32) -> u64 {
    let mut r = Rng::new(seed ^ ((user as u64) << 32) ^ thread as u64);
    r.next_u64()
}

/// Which operations a stream issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mix {
    /// Reads and writes, this percentage reads.
    ReadPct(u8),
    /// Trims only.
    Trim,
    /// A trim, then a write of the same range (fio's trimwrite).
    TrimWrite,
}

#[derive(Debug, Clone)]
pub(crate) struct OpGen {
    random: bool,
    mix: Mix,
    /// Bytes per I/O when every I/O has one size.
    len: u32,
    /// With `--bssplit`, `--bsrange` or a per-direction `--bs`: each direction's sizes, one
    /// drawn per I/O.
    sizes: Option<SizeTable>,
    /// Random offsets are multiples of this; sequential slices are counted in it (the block
    /// size, or with `--bssplit` the smallest size, or `--block-align`).
    unit: u64,
    /// End of the target: no I/O passes it.
    limit: u64,
    /// Sequential: first byte of this thread's slice and its length (a multiple of unit).
    region_start: u64,
    region_len: u64,
    pos: u64,
    /// Sequential: bytes skipped after each I/O (`--skip`).
    skip: u64,
    /// Random: I/Os per random offset (`--random-run`; 1: every I/O draws one), how many
    /// of the current run are left, where the next one goes and where the runs must end.
    run_len: u64,
    /// Random: the I/Os of a run repeat its offset (`--run-same-offset`) instead of
    /// following on.
    run_same: bool,
    run_left: u64,
    run_next: u64,
    run_end: u64,
    /// Random: number of places an I/O can start (or blocks in this rank's part), in this
    /// thread's slice with `--random-slices`, which starts at block `slice_first`.
    blocks: u64,
    slice_first: u64,
    /// A rank's part of a shared target: (base, stride, lane); logical block k is at
    /// base + (k * stride + lane) * unit. None: logical blocks are the target's blocks.
    part: Option<(u64, u64, u64)>,
    rng: Rng,
    /// Random: which block each I/O goes to.
    picker: super::pick::Picker,
    /// I/Os left to issue (trimwrite: pairs); None = until stopped by time.
    remaining: Option<u64>,
    /// Sequential I/O of mixed sizes without a count: passes over the slice left.
    passes_left: Option<u32>,
    /// trimwrite: the write that follows the trim just issued.
    pending_write: Option<(u64, u32)>,
}

/// Parameters of one thread's stream.
pub(crate) struct GenSpec {
    pub random: bool,
    pub mix: Mix,
    pub block_size: u64,
    /// With `--bssplit`: the sizes of each direction (`block_size` is then unused).
    pub sizes: Option<SizeTable>,
    /// `--bssplit`'s mean I/O size (untimed random runs without a count move about the
    /// target's size in bytes).
    pub mean_size: f64,
    /// Random offsets are multiples of this (`--block-align`).
    pub block_align: Option<u64>,
    /// Sequential: bytes skipped after each I/O (`--skip`).
    pub skip: u64,
    /// Random: I/Os in a row from each random offset (`--random-run`; 0 or 1: one).
    pub random_run: u64,
    /// Random: each run's I/Os all at its offset (`--run-same-offset`).
    pub run_same_offset: bool,
    /// Random: this thread draws in its own slice of the blocks (`--random-slices`).
    pub random_slices: bool,
    pub target_size: u64,
    pub threads: u32,
    pub thread: u32,
    /// I/Os per repetition (None: one pass over the slice, or unbounded with a time limit).
    pub io_count: Option<u64>,
    pub repeats: u32,
    pub timed: bool,
    pub seed: u64,
    /// The rank's part of the target (a distributed run); None: the whole target.
    pub part: Option<crate::result::RankPart>,
    /// How random blocks are drawn.
    pub distribution: crate::job::Distribution,
    /// Random: every block once per pass.
    pub random_map: bool,
}

impl OpGen {
    pub(crate) fn new(s: &GenSpec) -> Self {
        let (min, max) = match &s.sizes {
            Some(t) => {
                let c = t.classes();
                (c[0] as u64, c[c.len() - 1] as u64)
            }
            None => (s.block_size, s.block_size),
        };
        // Sequential slices are counted in the smallest I/O; random offsets in the alignment.
        let seq_unit = min.max(1);
        let unit = if s.random {
            s.block_align.unwrap_or(seq_unit).max(1)
        } else {
            seq_unit
        };
        let seq_blocks = (s.target_size / seq_unit).max(1);
        let blocks = match s.part {
            Some(p) => p.blocks.max(1),
            None if s.random => (s.target_size.saturating_sub(max) / unit + 1).max(1),
            None => seq_blocks,
        };
        let threads = s.threads.max(1) as u64;
        let t = s.thread as u64;
        let span = if s.random || s.part.is_some() {
            blocks
        } else {
            seq_blocks
        };
        let per_thread = (span / threads).max(1);
        // --random-slices: the thread draws in its slice of the places, as a sequential
        // thread covers its slice; a run ends at the slice's end (the last slice: the
        // target's or the part's).
        let sliced = s.random && s.random_slices && threads > 1;
        let whole_end = match s.part {
            Some(_) => blocks.saturating_mul(unit),
            None => s.target_size,
        };
        let (slice_first, drawn, run_end) = if sliced {
            let first = (t * per_thread) % span;
            let end = if t + 1 >= threads {
                whole_end
            } else {
                ((first + per_thread) * unit).min(whole_end)
            };
            (first, per_thread, end)
        } else {
            (0, blocks, whole_end)
        };
        let mixed = s.sizes.is_some();
        // A count of one-size I/Os covers that many blocks (a repetition starts the slice
        // again); mixed sizes go on through the whole slice.
        // With --skip the I/Os are spread over the whole slice.
        let skip = if s.random { 0 } else { s.skip };
        let slice_blocks = match s.io_count {
            Some(n) if !mixed && skip == 0 => n.min(per_thread),
            _ => per_thread,
        };
        let region_start = ((t * per_thread) % span) * unit;
        let region_len = slice_blocks.min(span - region_start / unit).max(1) * unit;
        let per_rep = match s.io_count {
            Some(n) => Some(n),
            None if s.timed => None,
            // Mixed sizes: about the thread's share of the target in bytes.
            None if s.random && mixed => {
                let share = (s.target_size / threads) as f64;
                Some((share / s.mean_size.max(1.0)).round().max(1.0) as u64)
            }
            None if s.random => {
                let whole = match s.part {
                    Some(p) => p.blocks.max(1),
                    None => (s.target_size / s.block_size.max(1)).max(1),
                };
                Some((whole / threads).max(1))
            }
            // Mixed sizes, sequential: one pass over the slice, however many I/Os it takes.
            None if mixed => None,
            None => Some(seq_pass_ios(region_len, unit, skip)),
        };
        let passes_left =
            (mixed && !s.random && !s.timed && s.io_count.is_none()).then_some(s.repeats.max(1));
        let remaining = if s.timed && s.io_count.is_none() {
            None
        } else {
            per_rep.map(|n| n.saturating_mul(s.repeats as u64))
        };
        let mut rng = Rng::new(s.seed);
        OpGen {
            random: s.random,
            mix: s.mix,
            len: s.block_size as u32,
            sizes: s.sizes.clone(),
            unit,
            limit: s.target_size,
            region_start,
            region_len,
            pos: 0,
            skip,
            run_len: if s.random { s.random_run.max(1) } else { 1 },
            run_same: s.run_same_offset,
            run_left: 0,
            run_next: 0,
            // Runs stay inside the target, or inside the part's logical blocks (or the
            // thread's slice).
            run_end,
            blocks: drawn,
            slice_first,
            part: s
                .part
                .filter(|p| (p.base, p.stride, p.lane) != (0, 1, 0))
                .map(|p| (p.base, p.stride.max(1), p.lane)),
            picker: super::pick::Picker::new(&s.distribution, s.random_map, drawn, &mut rng),
            rng,
            remaining,
            passes_left,
            pending_write: None,
        }
    }

    /// Whether this generator issues reads, writes and trims.
    pub(crate) fn directions(&self) -> (bool, bool, bool) {
        match self.mix {
            Mix::ReadPct(p) => (p > 0, p < 100, false),
            Mix::Trim => (false, false, true),
            Mix::TrimWrite => (false, true, true),
        }
    }

    /// With `--bssplit`: the sizes the I/Os take, ascending (the Result's size classes).
    pub(crate) fn size_classes(&self) -> Option<&[u32]> {
        self.sizes.as_ref().map(|t| t.classes())
    }

    /// Next operation, offset and length, or None when the count is reached.
    #[inline]
    pub(crate) fn next_op(&mut self) -> Option<(OpKind, u64, u32)> {
        self.next_op_steered(|k| k)
    }

    /// `next_op`, its direction handed to `steer` once the mix has drawn it (under
    /// per-direction rates, a direction whose schedule is ahead gives way to one that is
    /// due); the size is then drawn for the direction it returns.
    #[inline]
    pub(crate) fn next_op_steered(
        &mut self,
        steer: impl FnOnce(OpKind) -> OpKind,
    ) -> Option<(OpKind, u64, u32)> {
        if let Some((offset, len)) = self.pending_write.take() {
            return Some((OpKind::Write, offset, len));
        }
        if let Some(r) = &mut self.remaining {
            if *r == 0 {
                return None;
            }
            *r -= 1;
        }
        let kind = match self.mix {
            Mix::ReadPct(100) => OpKind::Read,
            Mix::ReadPct(0) => OpKind::Write,
            Mix::ReadPct(p) => {
                if self.rng.below(100) < p as u64 {
                    OpKind::Read
                } else {
                    OpKind::Write
                }
            }
            Mix::Trim | Mix::TrimWrite => OpKind::Trim,
        };
        let kind = steer(kind);
        let len = match &self.sizes {
            None => self.len,
            Some(t) => {
                let dir = kind as usize;
                t.size(dir, self.rng.below(t.choices(dir)))
            }
        };
        let offset = if self.random {
            if self.run_left > 0 && self.run_next + len as u64 <= self.run_end {
                // Inside a run: the I/O after the previous one, or its offset again.
                self.run_left -= 1;
                let o = self.run_next;
                if !self.run_same {
                    self.run_next += len as u64;
                }
                o
            } else {
                let o =
                    (self.slice_first + self.picker.next(&mut self.rng, self.blocks)) * self.unit;
                self.run_left = self.run_len - 1;
                self.run_next = if self.run_same { o } else { o + len as u64 };
                o
            }
        } else {
            if self.pos + len as u64 > self.region_len && self.pos > 0 {
                self.pos = 0;
                if let Some(p) = &mut self.passes_left {
                    *p -= 1;
                    if *p == 0 {
                        self.remaining = Some(0);
                        return None;
                    }
                }
            }
            let o = self.region_start + self.pos;
            self.pos += len as u64 + self.skip;
            o
        };
        let mut offset = match self.part {
            None => offset,
            // The bytes past a unit (a --skip that is not a multiple of it) stay where they are.
            Some((base, stride, lane)) => {
                base + ((offset / self.unit) * stride + lane) * self.unit + offset % self.unit
            }
        };
        if self.sizes.is_some() && offset + len as u64 > self.limit {
            // A slice shorter than the I/O: the last aligned place it fits.
            offset = self.limit.saturating_sub(len as u64) / self.unit * self.unit;
        }
        if self.mix == Mix::TrimWrite {
            self.pending_write = Some((offset, len));
        }
        Some((kind, offset, len))
    }
}

/// I/Os of `len` bytes one pass over `region` bytes takes when `skip` bytes follow each:
/// every one that fits (fio's count for `rw=read:SKIP`).
pub fn seq_pass_ios(region: u64, len: u64, skip: u64) -> u64 {
    let len = len.max(1);
    if region <= len {
        return 1;
    }
    (region - len) / (len + skip) + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spec(random: bool) -> GenSpec {
        GenSpec {
            random,
            mix: Mix::ReadPct(100),
            block_size: 4096,
            sizes: None,
            mean_size: 4096.0,
            block_align: None,
            skip: 0,
            random_run: 0,
            run_same_offset: false,
            random_slices: false,
            target_size: 1 << 20,
            threads: 4,
            thread: 1,
            io_count: Some(10),
            repeats: 2,
            timed: false,
            seed: 42,
            part: None,
            distribution: Default::default(),
            random_map: false,
        }
    }

    #[test]
    fn sequential_slices() {
        let mut g = OpGen::new(&spec(false));
        let offs: Vec<u64> = std::iter::from_fn(|| g.next_op().map(|(_, o, _)| o)).collect();
        assert_eq!(offs.len(), 20);
        assert_eq!(offs[0], 64 * 4096);
        assert_eq!(offs[9], 73 * 4096);
        assert_eq!(offs[10], 64 * 4096, "second repetition restarts the slice");
    }

    #[test]
    fn sequential_skips_leave_holes_and_a_pass_counts_what_fits() {
        // fio's rw=read:8k over 64k in 4k I/Os: 0, 12k, ..., 60k.
        let mut s = spec(false);
        (s.threads, s.thread, s.io_count, s.repeats) = (1, 0, None, 1);
        s.target_size = 64 << 10;
        s.skip = 8192;
        let mut g = OpGen::new(&s);
        let offs: Vec<u64> = std::iter::from_fn(|| g.next_op().map(|(_, o, _)| o)).collect();
        assert_eq!(offs, [0, 12, 24, 36, 48, 60].map(|k| k << 10));
        // A count beyond one pass starts the file again.
        s.io_count = Some(8);
        let mut g = OpGen::new(&s);
        let offs: Vec<u64> = std::iter::from_fn(|| g.next_op().map(|(_, o, _)| o)).collect();
        assert_eq!(offs, [0, 12, 24, 36, 48, 60, 0, 12].map(|k| k << 10));
        assert_eq!(seq_pass_ios(64 << 10, 4096, 0), 16);
        assert_eq!(seq_pass_ios(64 << 10, 4096, 8192), 6);
        assert_eq!(seq_pass_ios(2048, 4096, 8192), 1);
    }

    #[test]
    fn random_runs_follow_each_random_offset_sequentially() {
        let mut s = spec(true);
        (s.threads, s.thread, s.io_count, s.repeats) = (1, 0, Some(400), 1);
        s.target_size = 64 << 10;
        s.random_run = 4;
        let mut g = OpGen::new(&s);
        let offs: Vec<u64> = std::iter::from_fn(|| g.next_op().map(|(_, o, _)| o / 4096)).collect();
        assert_eq!(offs.len(), 400);
        // Every I/O is a new random offset or the block after the one before it, and no run
        // is longer than 4.
        let mut run = 1;
        let mut draws = 0;
        for w in offs.windows(2) {
            if w[1] == w[0] + 1 && run < 4 {
                run += 1;
            } else {
                run = 1;
                draws += 1;
            }
            assert!(w[1] < 16);
        }
        // About one draw per run of 4 (more where runs meet the end of the file).
        assert!((95..=150).contains(&draws), "{draws}");
    }

    #[test]
    fn same_offset_runs_repeat_each_random_offset() {
        let mut s = spec(true);
        (s.threads, s.thread, s.io_count, s.repeats) = (1, 0, Some(400), 1);
        s.target_size = 64 << 10;
        (s.random_run, s.run_same_offset) = (4, true);
        let mut g = OpGen::new(&s);
        let offs: Vec<u64> = std::iter::from_fn(|| g.next_op().map(|(_, o, _)| o)).collect();
        assert_eq!(offs.len(), 400);
        // Every run of 4 is one offset, the last block included.
        for run in offs.chunks(4) {
            assert!(run.iter().all(|&o| o == run[0]), "{run:?}");
        }
        let distinct: std::collections::HashSet<_> = offs.chunks(4).map(|r| r[0]).collect();
        assert!(distinct.len() > 10, "{distinct:?}");
    }

    #[test]
    fn random_slices_keep_each_thread_in_its_own_slice() {
        let mut s = spec(true);
        (s.io_count, s.repeats, s.random_slices, s.random_run) = (Some(300), 1, true, 3);
        s.target_size = 256 << 10;
        for t in 0..4 {
            s.thread = t;
            let mut g = OpGen::new(&s);
            let blocks: Vec<u64> =
                std::iter::from_fn(|| g.next_op().map(|(_, o, _)| o / 4096)).collect();
            let own = t as u64 * 16..(t as u64 + 1) * 16;
            assert!(
                blocks.iter().all(|b| own.contains(b)),
                "thread {t}: {blocks:?}"
            );
            let distinct: std::collections::HashSet<_> = blocks.iter().collect();
            assert!(distinct.len() > 12, "thread {t}: {distinct:?}");
        }
    }

    #[test]
    fn random_is_reproducible() {
        let a: Vec<_> = {
            let mut g = OpGen::new(&spec(true));
            std::iter::from_fn(|| g.next_op()).collect()
        };
        let b: Vec<_> = {
            let mut g = OpGen::new(&spec(true));
            std::iter::from_fn(|| g.next_op()).collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().any(|&(_, o, _)| o != a[0].1));
    }

    #[test]
    fn mix_follows_percentage() {
        let mut s = spec(true);
        s.mix = Mix::ReadPct(70);
        s.io_count = Some(100_000);
        s.repeats = 1;
        let mut g = OpGen::new(&s);
        let reads = std::iter::from_fn(|| g.next_op())
            .filter(|(k, _, _)| *k == OpKind::Read)
            .count();
        assert!((68_000..72_000).contains(&reads), "{reads}");
    }

    proptest! {
        /// Mixed sizes: every I/O is a size of its direction's list, inside the target, and
        /// a random one starts on the alignment.
        #[test]
        fn mixed_sizes_stay_inside_and_aligned(random: bool, size_k in 64u64..4096, threads in 1u32..8,
                                               count in prop::option::of(1u64..300), seed: u64,
                                               pct in 0u8..=100, align_k in prop::option::of(1u64..64)) {
            let split = crate::job::BsSplit::parse("4k/50:12k/30:64k/20,8k/70:32k/30", "x").unwrap();
            let size = size_k * 1024;
            for t in 0..threads {
                let mut g = OpGen::new(&GenSpec { random, mix: Mix::ReadPct(pct), block_size: 4096,
                    sizes: Some(SizeTable::new(&split)), mean_size: 16384.0,
                    block_align: align_k.map(|a| a * 1024), skip: 0, random_run: 0, run_same_offset: false, random_slices: false, target_size: size, threads, thread: t,
                    io_count: count, repeats: 1, timed: false, seed, part: None,
                    distribution: Default::default(), random_map: false });
                let mut n = 0;
                while let Some((kind, off, len)) = g.next_op() {
                    let sizes: &[u32] = if kind == OpKind::Read { &[4096, 12288, 65536] } else { &[8192, 32768] };
                    prop_assert!(sizes.contains(&len), "{:?} of {}", kind, len);
                    prop_assert!(off + len as u64 <= size, "offset {} + {} > {}", off, len, size);
                    if random {
                        prop_assert_eq!(off % align_k.map_or(4096, |a| a * 1024), 0);
                    }
                    n += 1;
                    prop_assert!(n <= 100_000);
                }
                if let Some(c) = count { prop_assert_eq!(n, c); }
            }
        }

        #[test]
        fn offsets_stay_inside(random: bool, bs_k in 1u64..64, size_k in 1u64..4096, threads in 1u32..16,
                               count in prop::option::of(1u64..500), seed: u64, pct in 0u8..=100) {
            let bs = bs_k * 512;
            let size = (size_k * 1024).max(bs);
            for t in 0..threads {
                let mut g = OpGen::new(&GenSpec { random, mix: Mix::ReadPct(pct), block_size: bs, sizes: None,
                    mean_size: bs as f64, block_align: None, skip: 0, random_run: 0, run_same_offset: false, random_slices: false, target_size: size,
                    threads, thread: t, io_count: count, repeats: 1, timed: false, seed, part: None,
                    distribution: Default::default(), random_map: false });
                let mut n = 0;
                while let Some((_, off, _)) = g.next_op() {
                    prop_assert!(off + bs <= size, "offset {} + {} > {}", off, bs, size);
                    prop_assert_eq!(off % bs, 0);
                    n += 1;
                    prop_assert!(n <= 100_000);
                }
                if let Some(c) = count { prop_assert_eq!(n, c); }
            }
        }
    }
}
