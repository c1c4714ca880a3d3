//! Offset and operation generation: sequential slices per thread, random blocks (uniform or
//! as `--distribution` and `--random-map` say, see `super::pick`), and the read/write mix.
//! Seeded and reproducible; offsets never pass the end of the target.

use crate::engine::OpKind;

/// SplitMix64: tiny, fast, good enough for offsets, and identical on every platform.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, n) without modulo bias worth speaking of (Lemire's multiply-shift).
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Seed of one thread, derived from the job seed and the thread's place.
pub(crate) fn thread_seed(seed: u64, user: usize, thread: u32) -> u64 {
    let mut r = Rng::new(seed ^ ((user as u64) << 32) ^ thread as u64);
    r.next_u64()
}

#[derive(Debug, Clone)]
pub(crate) struct OpGen {
    random: bool,
    read_pct: u8,
    bs: u64,
    /// Sequential: first byte of this thread's slice and its length (a multiple of bs).
    region_start: u64,
    region_len: u64,
    pos: u64,
    /// Random: number of whole blocks in the target (or in this rank's part).
    blocks: u64,
    /// A rank's part of a shared target: (base, stride, lane); logical block k is at
    /// base + (k * stride + lane) * bs. None: logical blocks are the target's blocks.
    part: Option<(u64, u64, u64)>,
    rng: Rng,
    /// Random: which block each I/O goes to.
    picker: super::pick::Picker,
    /// I/Os left to issue; None = until stopped by time.
    remaining: Option<u64>,
}

/// Parameters of one thread's stream.
pub(crate) struct GenSpec {
    pub random: bool,
    pub read_pct: u8,
    pub block_size: u64,
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
        let blocks = match s.part {
            Some(p) => p.blocks.max(1),
            None => (s.target_size / s.block_size).max(1),
        };
        let threads = s.threads.max(1) as u64;
        let t = s.thread as u64;
        let per_thread = (blocks / threads).max(1);
        let slice_blocks = match s.io_count {
            Some(n) => n.min(per_thread),
            None => per_thread,
        };
        let region_start = ((t * per_thread) % blocks) * s.block_size;
        let region_len = slice_blocks
            .min(blocks - region_start / s.block_size)
            .max(1)
            * s.block_size;
        let per_rep = match s.io_count {
            Some(n) => Some(n),
            None if s.timed => None,
            None if s.random => Some(per_thread),
            None => Some(region_len / s.block_size),
        };
        let remaining = if s.timed && s.io_count.is_none() {
            None
        } else {
            per_rep.map(|n| n.saturating_mul(s.repeats as u64))
        };
        let mut rng = Rng::new(s.seed);
        OpGen {
            random: s.random,
            read_pct: s.read_pct,
            bs: s.block_size,
            region_start,
            region_len,
            pos: 0,
            blocks,
            part: s
                .part
                .filter(|p| (p.base, p.stride, p.lane) != (0, 1, 0))
                .map(|p| (p.base, p.stride.max(1), p.lane)),
            picker: super::pick::Picker::new(&s.distribution, s.random_map, blocks, &mut rng),
            rng,
            remaining,
        }
    }

    /// Whether this generator issues reads and whether it issues writes.
    pub(crate) fn directions(&self) -> (bool, bool) {
        (self.read_pct > 0, self.read_pct < 100)
    }

    /// Next operation and offset, or None when the count is reached.
    #[inline]
    pub(crate) fn next_op(&mut self) -> Option<(OpKind, u64)> {
        if let Some(r) = &mut self.remaining {
            if *r == 0 {
                return None;
            }
            *r -= 1;
        }
        let kind = match self.read_pct {
            100 => OpKind::Read,
            0 => OpKind::Write,
            p => {
                if self.rng.below(100) < p as u64 {
                    OpKind::Read
                } else {
                    OpKind::Write
                }
            }
        };
        let offset = if self.random {
            self.picker.next(&mut self.rng, self.blocks) * self.bs
        } else {
            let o = self.region_start + self.pos;
            self.pos += self.bs;
            if self.pos >= self.region_len {
                self.pos = 0;
            }
            o
        };
        let offset = match self.part {
            None => offset,
            Some((base, stride, lane)) => base + ((offset / self.bs) * stride + lane) * self.bs,
        };
        Some((kind, offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spec(random: bool) -> GenSpec {
        GenSpec {
            random,
            read_pct: 100,
            block_size: 4096,
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
        let offs: Vec<u64> = std::iter::from_fn(|| g.next_op().map(|(_, o)| o)).collect();
        assert_eq!(offs.len(), 20);
        assert_eq!(offs[0], 64 * 4096);
        assert_eq!(offs[9], 73 * 4096);
        assert_eq!(offs[10], 64 * 4096, "second repetition restarts the slice");
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
        assert!(a.iter().any(|&(_, o)| o != a[0].1));
    }

    #[test]
    fn mix_follows_percentage() {
        let mut s = spec(true);
        s.read_pct = 70;
        s.io_count = Some(100_000);
        s.repeats = 1;
        let mut g = OpGen::new(&s);
        let reads = std::iter::from_fn(|| g.next_op())
            .filter(|(k, _)| *k == OpKind::Read)
            .count();
        assert!((68_000..72_000).contains(&reads), "{reads}");
    }

    proptest! {
        #[test]
        fn offsets_stay_inside(random: bool, bs_k in 1u64..64, size_k in 1u64..4096, threads in 1u32..16,
                               count in prop::option::of(1u64..500), seed: u64, pct in 0u8..=100) {
            let bs = bs_k * 512;
            let size = (size_k * 1024).max(bs);
            for t in 0..threads {
                let mut g = OpGen::new(&GenSpec { random, read_pct: pct, block_size: bs, target_size: size,
                    threads, thread: t, io_count: count, repeats: 1, timed: false, seed, part: None,
                    distribution: Default::default(), random_map: false });
                let mut n = 0;
                while let Some((_, off)) = g.next_op() {
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
