//! Statistics of repeated runs, in one place so that every command judges alike: the median,
//! a 95 % bootstrap interval of it (seeded, so the same figures always give the same
//! interval), and the two tests that tell a change from run-to-run noise:
//!
//! - paired runs (`fsbench ab`, where A and B alternate on the same files): the Wilcoxon
//!   signed-rank test on the logarithms of the per-round ratios B/A, exact for small numbers of
//!   rounds, with its confidence interval (the Hodges-Lehmann interval from the Walsh averages).
//!   The verdict is "within noise" exactly when that interval holds 1.
//! - two independent sets of repeats (`fsbench compare` of two `--repeat` Results): a bootstrap
//!   of the ratio of their medians, each set resampled on its own.

/// The confidence of every interval.
pub(crate) const CONFIDENCE: f64 = 0.95;
/// Bootstrap resamples per interval.
pub(crate) const RESAMPLES: usize = 2000;
/// The seed of every bootstrap: the interval of given figures is always the same.
pub(crate) const SEED: u64 = 0x0fab_5eed;

/// How the interval of a `--repeat` summary is made, as stored and printed.
pub(crate) const REPEAT_METHOD: &str = "95 % percentile bootstrap of the median (2000 resamples)";
/// How `ab` judges, as printed and stored.
pub const PAIRED_METHOD: &str =
    "Wilcoxon signed-rank test on the per-round ratios B/A (exact), 95 % Hodges-Lehmann interval";
/// How `compare` judges two sets of repeats.
pub const UNPAIRED_METHOD: &str =
    "95 % bootstrap of the ratio of medians, each set resampled independently (2000 resamples)";

/// SplitMix64: a small seeded generator, identical on every platform.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed` (the tests' injected noise).
    #[cfg(any(test, feature = "test-support"))]
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

/// The finite values of `xs`, sorted.
fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Median of sorted values (None when empty).
fn median_sorted(v: &[f64]) -> Option<f64> {
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The median of the finite values of `xs`.
pub fn median(xs: &[f64]) -> Option<f64> {
    median_sorted(&sorted(xs))
}

/// The value below which `q` (0..=1) of sorted values lie (nearest rank).
fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// The percentile interval of bootstrap statistics.
fn percentile_interval(mut stats: Vec<f64>) -> (f64, f64) {
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    (
        quantile_sorted(&stats, tail),
        quantile_sorted(&stats, 1.0 - tail),
    )
}

/// The median of a resample (with replacement) of sorted values `v`, using `scratch`.
fn resampled_median(v: &[f64], rng: &mut Rng, scratch: &mut Vec<f64>) -> f64 {
    let n = v.len();
    scratch.clear();
    scratch.extend((0..n).map(|_| v[rng.below(n)]));
    let (below, mid, _) = scratch.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *mid;
    if n % 2 == 1 {
        return upper;
    }
    let lower = below.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lower + upper) / 2.0
}

/// One figure over the repeats of a run: its median, range and 95 % bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Summary {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub low: f64,
    pub high: f64,
}

/// Summarise the finite values of `xs` (None when there are none).
pub(crate) fn summarize(xs: &[f64]) -> Option<Summary> {
    let v = sorted(xs);
    let median = median_sorted(&v)?;
    let mut rng = Rng(SEED);
    let mut scratch = Vec::with_capacity(v.len());
    let stats = (0..RESAMPLES)
        .map(|_| resampled_median(&v, &mut rng, &mut scratch))
        .collect();
    let (low, high) = percentile_interval(stats);
    Some(Summary {
        n: v.len(),
        median,
        min: v[0],
        max: v[v.len() - 1],
        low,
        high,
    })
}

/// Whether B is better, worse, or cannot be told from A.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Faster,
    Slower,
    WithinNoise,
}

impl Verdict {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within noise",
        }
    }

    /// The verdict of an interval of the ratio B/A of a metric.
    fn of_interval(low: f64, high: f64, higher_is_better: bool) -> Verdict {
        let b_higher = if low > 1.0 {
            true
        } else if high < 1.0 {
            false
        } else {
            return Verdict::WithinNoise;
        };
        if b_higher == higher_is_better {
            Verdict::Faster
        } else {
            Verdict::Slower
        }
    }
}

/// The ratio B/A of one metric, its 95 % interval and what it says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioTest {
    /// Paired: the median of the per-round ratios; independent: the ratio of the medians.
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub verdict: Verdict,
    /// The number of pairs (paired) or the smaller set (independent).
    pub n: usize,
    /// Too few pairs for any interval at 95 % (fewer than 6): never a difference.
    pub too_few: bool,
}

/// Fewest pairs with which the signed-rank test can find a difference at 95 %.
pub const MIN_PAIRS: usize = 6;

/// `counts[t]`: how many of the 2^n sign patterns of ranks 1..=n have positive ranks summing
/// to `t` (the exact null distribution of the signed-rank statistic).
fn signed_rank_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0.0; max + 1];
    counts[0] = 1.0;
    for rank in 1..=n {
        for t in (rank..=max).rev() {
            counts[t] += counts[t - rank];
        }
    }
    counts
}

/// The largest `k` with P(T <= k) + P(T >= M - k) <= 1 - CONFIDENCE under the null, for `n`
/// pairs (None when even k = 0 is too likely: fewer than [`MIN_PAIRS`]).
fn signed_rank_critical(n: usize) -> Option<usize> {
    let counts = signed_rank_counts(n);
    let total = 2f64.powi(n as i32);
    let alpha = 1.0 - CONFIDENCE;
    let mut cumulative = 0.0;
    let mut critical = None;
    for (k, c) in counts.iter().enumerate() {
        cumulative += c;
        if 2.0 * cumulative / total <= alpha + 1e-12 {
            critical = Some(k);
        } else {
            break;
        }
    }
    critical
}

/// Paired test of per-round figures `a[i]`, `b[i]` (only rounds where both are positive and
/// finite count). None when no round does.
pub(crate) fn paired_ratio(a: &[f64], b: &[f64], higher_is_better: bool) -> Option<RatioTest> {
    let logs: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.is_finite() && y.is_finite() && **x > 0.0 && **y > 0.0)
        .map(|(x, y)| (y / x).ln())
        .collect();
    let n = logs.len();
    let ratio = median(&logs)?.exp();
    // The Walsh averages: every (d_i + d_j) / 2 with i <= j.
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            walsh.push((logs[i] + logs[j]) / 2.0);
        }
    }
    walsh.sort_by(f64::total_cmp);
    let m = walsh.len();
    let critical = signed_rank_critical(n);
    // Hodges-Lehmann: the test keeps 0 exactly when it lies within W(k+1)..W(M-k).
    let (lo, hi) = match critical {
        Some(k) => (walsh[k], walsh[m - 1 - k]),
        None => (walsh[0], walsh[m - 1]),
    };
    let (low, high) = (lo.exp(), hi.exp());
    let verdict = match critical {
        Some(_) => Verdict::of_interval(low, high, higher_is_better),
        None => Verdict::WithinNoise,
    };
    Some(RatioTest {
        ratio,
        low,
        high,
        verdict,
        n,
        too_few: critical.is_none(),
    })
}

/// Test of two independent sets of repeats `a` and `b`: the ratio of their medians and its
/// bootstrap interval. None when a set has no positive finite value.
pub fn unpaired_ratio(a: &[f64], b: &[f64], higher_is_better: bool) -> Option<RatioTest> {
    let positive =
        |xs: &[f64]| sorted(&xs.iter().copied().filter(|x| *x > 0.0).collect::<Vec<_>>());
    let (va, vb) = (positive(a), positive(b));
    let ratio = median_sorted(&vb)? / median_sorted(&va)?;
    let mut rng = Rng(SEED);
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    let stats = (0..RESAMPLES)
        .map(|_| {
            let ma = resampled_median(&va, &mut rng, &mut sa);
            resampled_median(&vb, &mut rng, &mut sb) / ma
        })
        .collect();
    let (low, high) = percentile_interval(stats);
    let n = va.len().min(vb.len());
    // One value on a side has no spread to judge noise by.
    let too_few = n < 2;
    let verdict = if too_few {
        Verdict::WithinNoise
    } else {
        Verdict::of_interval(low, high, higher_is_better)
    };
    Some(RatioTest {
        ratio,
        low,
        high,
        verdict,
        n,
        too_few,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The noise of runs on a shared machine, seeded: each run's figure is the true one times
    /// a log-normal factor (5 % per run), and each round of a paired run also shares a factor
    /// of its own (10 %: a neighbour that slows both sides of the round).
    struct Noise(Rng);

    impl Noise {
        fn normal(&mut self) -> f64 {
            let u1 = (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let u2 = (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        }
        fn factor(&mut self, sigma: f64) -> f64 {
            (sigma * self.normal()).exp()
        }
        /// `rounds` pairs: A's true figure 1000, B's `1000 * effect`.
        fn paired(&mut self, rounds: usize, effect: f64) -> (Vec<f64>, Vec<f64>) {
            (0..rounds)
                .map(|_| {
                    let shared = self.factor(0.10);
                    (
                        1000.0 * shared * self.factor(0.05),
                        1000.0 * effect * shared * self.factor(0.05),
                    )
                })
                .unzip()
        }
        fn set(&mut self, n: usize, level: f64) -> Vec<f64> {
            (0..n).map(|_| level * self.factor(0.05)).collect()
        }
    }

    fn verdicts(mut trial: impl FnMut(&mut Noise) -> Option<RatioTest>) -> (usize, usize, usize) {
        let (mut faster, mut slower, mut same) = (0, 0, 0);
        for seed in 0..100u64 {
            let mut noise = Noise(Rng(seed.wrapping_mul(0x1234_5678_9abc) ^ 0xfeed));
            match trial(&mut noise).unwrap().verdict {
                Verdict::Faster => faster += 1,
                Verdict::Slower => slower += 1,
                Verdict::WithinNoise => same += 1,
            }
        }
        (faster, slower, same)
    }

    #[test]
    fn median_and_summary() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN]), None);
        let s = summarize(&[10.0, 12.0, 11.0, 9.0, 30.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (5, 11.0, 9.0, 30.0));
        assert!(s.low <= s.median && s.median <= s.high && s.low >= 9.0 && s.high <= 30.0);
        // Seeded: the same figures give the same interval.
        assert_eq!(summarize(&[10.0, 12.0, 11.0, 9.0, 30.0]), Some(s));
        let one = summarize(&[5.0]).unwrap();
        assert_eq!((one.low, one.high), (5.0, 5.0));
    }

    #[test]
    fn the_exact_signed_rank_distribution() {
        // 2^3 sign patterns of ranks 1, 2, 3: sums 0,1,2,3,3,4,5,6.
        assert_eq!(signed_rank_counts(3), [1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0]);
        assert_eq!(signed_rank_critical(5), None);
        assert_eq!(signed_rank_critical(6), Some(0));
        // The tables: n = 8 -> 3, n = 10 -> 8, n = 20 -> 52.
        assert_eq!(signed_rank_critical(8), Some(3));
        assert_eq!(signed_rank_critical(10), Some(8));
        assert_eq!(signed_rank_critical(20), Some(52));
    }

    #[test]
    fn identical_pairs_are_within_noise_and_too_few_never_differ() {
        let t = paired_ratio(&[5.0; 8], &[5.0; 8], true).unwrap();
        assert_eq!(
            (t.ratio, t.low, t.high, t.verdict),
            (1.0, 1.0, 1.0, Verdict::WithinNoise)
        );
        let t = paired_ratio(&[1.0; 5], &[2.0; 5], true).unwrap();
        assert!(t.too_few && t.verdict == Verdict::WithinNoise);
        let t = paired_ratio(&[1.0; 6], &[2.0; 6], true).unwrap();
        assert_eq!(t.verdict, Verdict::Faster);
        // Latency: B's higher figure is slower.
        assert_eq!(
            paired_ratio(&[1.0; 6], &[2.0; 6], false).unwrap().verdict,
            Verdict::Slower
        );
        assert!(paired_ratio(&[0.0], &[1.0], true).is_none());
    }

    #[test]
    fn paired_test_keeps_identical_configurations_within_noise() {
        let (faster, slower, same) = verdicts(|n| {
            let (a, b) = n.paired(8, 1.0);
            paired_ratio(&a, &b, true)
        });
        assert!(
            same >= 95,
            "within noise {same}, faster {faster}, slower {slower}"
        );
    }

    #[test]
    fn paired_test_finds_a_20_percent_difference() {
        let (faster, _, _) = verdicts(|n| {
            let (a, b) = n.paired(8, 1.2);
            paired_ratio(&a, &b, true)
        });
        assert!(faster >= 95, "found {faster} of 100");
        let (_, slower, _) = verdicts(|n| {
            let (a, b) = n.paired(8, 1.2);
            paired_ratio(&a, &b, false)
        });
        assert!(slower >= 95, "latency: found {slower} of 100");
    }

    #[test]
    fn unpaired_test_keeps_identical_sets_within_noise() {
        let (faster, slower, same) = verdicts(|n| {
            let (a, b) = (n.set(7, 1000.0), n.set(7, 1000.0));
            unpaired_ratio(&a, &b, true)
        });
        assert!(
            same >= 95,
            "within noise {same}, faster {faster}, slower {slower}"
        );
    }

    #[test]
    fn unpaired_test_finds_a_20_percent_difference() {
        let (faster, _, _) = verdicts(|n| {
            let (a, b) = (n.set(7, 1000.0), n.set(7, 1200.0));
            unpaired_ratio(&a, &b, true)
        });
        assert!(faster >= 95, "found {faster} of 100");
    }
}
