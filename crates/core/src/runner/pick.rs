//! Which block a random I/O goes to (`--distribution`, `--random-map`): a [`Picker`] built
//! once per worker, before the clock starts, then drawing one block per I/O without
//! allocating. All draws come from the worker's seeded [`Rng`], so a run is reproducible.
//!
//! - uniform: every block alike (with replacement, or with `--random-map` a permutation of
//!   the blocks per pass, so each block is touched once per pass);
//! - zipf:THETA: popularity rank k (1 = hottest) drawn with weight 1/k^THETA by
//!   rejection-inversion (Hörmann and Derflinger), exact for any THETA > 0 and any number of
//!   blocks, in constant memory;
//! - pareto:H: rank drawn so that a share H of the I/Os lands on the hottest (1 - H) of the
//!   blocks;
//! - normal:SIGMA%: Gaussian around the middle block, standard deviation SIGMA % of the
//!   blocks (draws outside the file are drawn again);
//! - zoned: a zone chosen by its share of the I/Os, then a block uniformly inside it.
//!
//! Zipf and Pareto ranks are spread over the file by a fixed permutation of the blocks
//! (rank r to block (r * m) mod n, m coprime to n), so the hot blocks are not all at the
//! start of the file; normal and zoned keep their shape in file order.

use super::opgen::Rng;
use crate::job::Distribution;

/// Draws blocks in [0, blocks).
#[derive(Debug, Clone)]
pub(crate) enum Picker {
    Uniform,
    Map(RandomMap),
    Zipf(Zipf, Scatter),
    Pareto { pow: f64, scatter: Scatter },
    Normal { mean: f64, sd: f64 },
    Zoned(Vec<ZoneRange>),
}

impl Picker {
    pub(crate) fn new(d: &Distribution, random_map: bool, blocks: u64, rng: &mut Rng) -> Picker {
        let blocks = blocks.max(1);
        match d {
            Distribution::Uniform if random_map => Picker::Map(RandomMap::new(blocks, rng)),
            Distribution::Uniform => Picker::Uniform,
            Distribution::Zipf { theta } => {
                Picker::Zipf(Zipf::new(blocks, *theta), Scatter::new(blocks))
            }
            Distribution::Pareto { h } => Picker::Pareto {
                pow: h.ln() / (1.0 - h).ln(),
                scatter: Scatter::new(blocks),
            },
            Distribution::Normal { sigma_pct } => Picker::Normal {
                mean: blocks as f64 / 2.0,
                sd: (sigma_pct / 100.0 * blocks as f64).max(f64::MIN_POSITIVE),
            },
            Distribution::Zoned(zones) => Picker::Zoned(ZoneRange::lay_out(zones, blocks)),
        }
    }

    /// The next block.
    #[inline]
    pub(crate) fn next(&mut self, rng: &mut Rng, blocks: u64) -> u64 {
        match self {
            Picker::Uniform => rng.below(blocks),
            Picker::Map(m) => m.next(rng),
            Picker::Zipf(z, s) => s.block(z.sample(rng) - 1),
            Picker::Pareto { pow, scatter } => {
                let x = unit_open(rng).powf(*pow);
                let from_top = ((x * blocks as f64) as u64).min(blocks - 1);
                scatter.block(blocks - 1 - from_top)
            }
            Picker::Normal { mean, sd } => loop {
                let b = *mean + *sd * gaussian(rng);
                if b >= 0.0 && b < blocks as f64 {
                    return b as u64;
                }
            },
            Picker::Zoned(z) => {
                let u = rng.next_u64();
                let zone = z
                    .iter()
                    .find(|z| u < z.below)
                    .or(z.last())
                    .expect("a zoned distribution has zones");
                zone.start + rng.below(zone.len)
            }
        }
    }
}

/// Uniform in (0, 1].
#[inline]
fn unit_open(rng: &mut Rng) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// Standard normal (Box-Muller; one of the pair is used).
#[inline]
fn gaussian(rng: &mut Rng) -> f64 {
    let u1 = unit_open(rng);
    let u2 = unit_open(rng);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// One zone laid out on the blocks: its I/Os are the draws below `below` (of 2^64).
#[derive(Debug, Clone)]
pub(crate) struct ZoneRange {
    below: u64,
    start: u64,
    len: u64,
}

impl ZoneRange {
    fn lay_out(zones: &[crate::job::shape::Zone], blocks: u64) -> Vec<ZoneRange> {
        let mut out = Vec::with_capacity(zones.len());
        let (mut io, mut size) = (0.0f64, 0.0f64);
        for z in zones {
            let start = ((size / 100.0 * blocks as f64).round() as u64).min(blocks - 1);
            io += z.io_pct;
            size += z.size_pct;
            let end = ((size / 100.0 * blocks as f64).round() as u64).clamp(start + 1, blocks);
            let below = if io >= 100.0 {
                u64::MAX
            } else {
                (io / 100.0 * u64::MAX as f64) as u64
            };
            out.push(ZoneRange {
                below,
                start,
                len: end - start,
            });
        }
        out
    }
}

/// Rank to block: r -> (r * m) mod n with m coprime to n, a permutation of the blocks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scatter {
    n: u64,
    m: u64,
}

impl Scatter {
    fn new(n: u64) -> Scatter {
        // Near n times the golden ratio's fraction: neighbouring ranks land far apart.
        let mut m = ((n as f64 * 0.618_033_988_749_895) as u64).max(1);
        while gcd(m, n) != 1 {
            m += 1;
        }
        Scatter { n, m }
    }
    #[inline]
    fn block(&self, rank: u64) -> u64 {
        ((rank as u128 * self.m as u128) % self.n as u128) as u64
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Zipf ranks 1..=n with exponent `s`, by rejection-inversion: invert the integral of the
/// continuous hat 1/x^s, accept the rounded point when it falls under the step function.
/// Also the sampler of the workload's `cvar-zipf`, which draws from its own generator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    squeeze: f64,
}

/// ln(1 + x) / x, continuous at 0.
fn ln1p_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, continuous at 0.
fn expm1_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

impl Zipf {
    pub(crate) fn new(n: u64, s: f64) -> Zipf {
        let mut z = Zipf {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            squeeze: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(n as f64 + 0.5);
        z.squeeze = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }
    /// The hat: x^-s.
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }
    /// Its integral from 1: (x^(1-s) - 1) / (1 - s), ln x at s = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        expm1_over((1.0 - self.s) * lx) * lx
    }
    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (ln1p_over(t) * x).exp()
    }
    /// A rank in 1..=n.
    #[inline]
    pub(crate) fn sample(&self, rng: &mut Rng) -> u64 {
        self.sample_with(|| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    /// A rank in 1..=n from uniform draws in [0, 1) that `u01` makes.
    #[inline]
    pub(crate) fn sample_with(&self, mut u01: impl FnMut() -> f64) -> u64 {
        loop {
            let u01 = u01();
            let u = self.h_n + u01 * (self.h_x1 - self.h_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.squeeze || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

/// A permutation of the blocks per pass without a bitmap: a 4-round Feistel network over the
/// smallest even power of two that holds them, walked until it lands below `n` (fewer than
/// four steps on average), keyed anew for every pass.
#[derive(Debug, Clone)]
pub(crate) struct RandomMap {
    n: u64,
    half_bits: u32,
    key: u64,
    next: u64,
}

impl RandomMap {
    fn new(n: u64, rng: &mut Rng) -> RandomMap {
        let bits = 64 - (n.max(2) - 1).leading_zeros();
        RandomMap {
            n,
            half_bits: bits.div_ceil(2),
            key: rng.next_u64(),
            next: 0,
        }
    }

    #[inline]
    fn next(&mut self, rng: &mut Rng) -> u64 {
        if self.next == self.n {
            self.next = 0;
            self.key = rng.next_u64();
        }
        let mut x = self.next;
        self.next += 1;
        loop {
            x = self.permute(x);
            if x < self.n {
                return x;
            }
        }
    }

    fn permute(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for round in 0..4u64 {
            let f = Rng::new(self.key ^ r ^ (round << 56)).next_u64() & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_matches_its_weights() {
        let (n, s) = (10u64, 1.2);
        let z = Zipf::new(n, s);
        let mut rng = Rng::new(5);
        let mut hits = [0u64; 10];
        let draws = 200_000;
        for _ in 0..draws {
            hits[(z.sample(&mut rng) - 1) as usize] += 1;
        }
        let norm: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
        for k in 1..=n {
            let want = (k as f64).powf(-s) / norm;
            let got = hits[(k - 1) as usize] as f64 / draws as f64;
            assert!((got - want).abs() < 0.01, "rank {k}: {got} vs {want}");
        }
        // s = 1 (the logarithmic case) stays in range.
        let z = Zipf::new(1000, 1.0);
        assert!((0..10_000).all(|_| (1..=1000).contains(&z.sample(&mut rng))));
    }

    #[test]
    fn random_map_is_a_permutation_per_pass() {
        for n in [1u64, 2, 3, 17, 1000, 4096] {
            let mut rng = Rng::new(n);
            let mut m = RandomMap::new(n, &mut rng);
            for _pass in 0..2 {
                let mut seen = vec![false; n as usize];
                for _ in 0..n {
                    let b = m.next(&mut rng) as usize;
                    assert!(!seen[b], "block {b} twice in a pass of {n}");
                    seen[b] = true;
                }
            }
        }
    }

    #[test]
    fn pareto_and_zoned_shares() {
        let blocks = 10_000u64;
        let mut rng = Rng::new(9);
        let mut p = Picker::new(&Distribution::Pareto { h: 0.8 }, false, blocks, &mut rng);
        let s = Scatter::new(blocks);
        // Hottest 20 % of ranks, as blocks.
        let hot: std::collections::HashSet<u64> = (0..blocks / 5).map(|r| s.block(r)).collect();
        let n = 100_000;
        let on_hot = (0..n)
            .filter(|_| hot.contains(&p.next(&mut rng, blocks)))
            .count();
        let share = on_hot as f64 / n as f64;
        assert!((share - 0.8).abs() < 0.02, "{share}");
        let d = Distribution::parse("zoned:50/5:30/15:20/80", "d").unwrap();
        let mut z = Picker::new(&d, false, blocks, &mut rng);
        let mut zone_hits = [0u64; 3];
        for _ in 0..n {
            let b = z.next(&mut rng, blocks);
            zone_hits[if b < 500 {
                0
            } else if b < 2000 {
                1
            } else {
                2
            }] += 1;
        }
        for (got, want) in zone_hits.iter().zip([0.5, 0.3, 0.2]) {
            assert!(
                (*got as f64 / n as f64 - want).abs() < 0.01,
                "{zone_hits:?}"
            );
        }
    }
}
