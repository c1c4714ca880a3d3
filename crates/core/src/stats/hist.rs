//! The one latency histogram of fsbench: constant memory, log-linear, mergeable.
//!
//! Every octave of nanoseconds [2^k, 2^(k+1)) is split into 128 equal sub-buckets, and values
//! below 256 ns are counted exactly, so a value is known to within 1/128 of itself; reporting a
//! bucket by its middle halves that, so any percentile is within 0.4 % of the exact one
//! (nearest rank). The range is 0 .. 2^42 ns (73 minutes); longer latencies are counted in the
//! last bucket while the exact minimum, maximum and sum (hence mean) are kept beside the
//! counts, and percentiles are clamped into [min, max].
//!
//! The counts are 4,608 `u64` (36 KiB), allocated once, when the histogram is created with
//! [`LatencyHist::new`] (the runner does it before timing) or when the first value arrives; an
//! empty histogram (`Default`, a worker that did no I/O) holds no counts at all. Recording is
//! an index computation and four stores, never an allocation once created. Merging is exact
//! (counts add; u64 cannot overflow in practice: 2^64 I/Os).
//!
//! The same type serves runs, workload flowops, replays, backups and replay I/O sizes, so a fix
//! here reaches every kind of Result.

use serde::{Deserialize, Serialize};

/// Sub-buckets per octave: 2^7 = 128, so a bucket is at most 1/128 of its values wide.
const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;
/// Values at or above 2^TOP_BITS ns (about 73 minutes) share the last bucket.
const TOP_BITS: u32 = 42;
/// Octave groups: group 0 holds 0..127 exactly, group g >= 1 holds [2^(g+6), 2^(g+7)).
const GROUPS: usize = (TOP_BITS - SUB_BITS + 1) as usize;
/// Number of counters.
pub(crate) const BUCKETS: usize = GROUPS * SUB;
/// Bytes of counts one histogram holds once created.
pub(crate) const HIST_BYTES: usize = BUCKETS * std::mem::size_of::<u64>();
/// Largest relative distance of a reported percentile from the exact one (nearest rank).
pub const MAX_RELATIVE_ERROR: f64 = 1.0 / (2 * SUB) as f64;

/// Bucket of a value (values beyond the range go into the last bucket).
#[inline]
fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let v = v.min((1u64 << TOP_BITS) - 1);
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    ((shift as usize + 1) << SUB_BITS) + ((v >> shift) as usize & (SUB - 1))
}

/// Lowest value of a bucket and its width.
fn bounds(i: usize) -> (u64, u64) {
    let (group, sub) = (i >> SUB_BITS, (i & (SUB - 1)) as u64);
    if group == 0 {
        return (sub, 1);
    }
    let shift = (group - 1) as u32;
    ((SUB as u64 + sub) << shift, 1u64 << shift)
}

/// The value a bucket is reported as: its middle (it maps back to the same bucket).
fn value_of(i: usize) -> u64 {
    let (lo, width) = bounds(i);
    lo + width / 2
}

#[derive(Clone, Default)]
pub struct LatencyHist {
    /// None until created or until the first value: an empty histogram costs nothing.
    counts: Option<Box<[u64; BUCKETS]>>,
    n: u64,
    /// Exact extremes and sum of what was recorded (min is meaningless while n == 0).
    min: u64,
    max: u64,
    sum: u64,
}

impl std::fmt::Debug for LatencyHist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LatencyHist(n={})", self.n)
    }
}

/// Named summary as it goes into every output (`lat_ns` in JSON; replay I/O sizes reuse it
/// in bytes).
///
/// `count`, `min`, `max` and `mean` are exact. The percentiles are nearest-rank values
/// within [`MAX_RELATIVE_ERROR`] of the exact ones. `stdev` (population standard deviation)
/// is computed from the buckets around the exact mean, each bucket's values taken at its
/// middle (clamped into [min, max]): an estimate, exact below 256 ns where buckets are one
/// value wide; elsewhere each value moves by at most half a bucket ([`MAX_RELATIVE_ERROR`]
/// of itself), so the stdev is within the root mean square of those moves of the exact one
/// (a property test checks this bound). Schema 1 and 2 documents have no `p99_99` and
/// `stdev`: they read as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p99_9: u64,
    /// The 99.99th percentile (absent before schema 3: 0).
    #[serde(default)]
    pub p99_99: u64,
    pub max: u64,
    /// Population standard deviation, from the buckets (see above; absent before schema 3: 0).
    #[serde(default)]
    pub stdev: f64,
}

fn zeroed() -> Box<[u64; BUCKETS]> {
    // Zeroed straight on the heap (a 36 KiB array must not pass through the stack).
    vec![0u64; BUCKETS]
        .into_boxed_slice()
        .try_into()
        .expect("BUCKETS counters")
}

impl LatencyHist {
    /// A histogram ready to record without allocating (create it before timing).
    pub fn new() -> Self {
        LatencyHist {
            counts: Some(zeroed()),
            ..Default::default()
        }
    }

    /// Allocate the counts now if they are not yet (so `record` will not).
    pub fn ready(&mut self) {
        if self.counts.is_none() {
            self.counts = Some(zeroed());
        }
    }

    /// Record one value. No allocation once created.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Record `count` occurrences of one value.
    #[inline]
    pub fn record_n(&mut self, v: u64, count: u64) {
        if count == 0 {
            return;
        }
        let c = self.counts.get_or_insert_with(zeroed);
        // index() is below BUCKETS by construction; min() lets the compiler drop the bounds
        // check on the fixed-size array.
        c[index(v).min(BUCKETS - 1)] += count;
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.n += count;
        self.sum = self.sum.saturating_add(v.saturating_mul(count));
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Exact sum of the recorded values (saturating).
    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// Bytes of counts this histogram holds (0 while empty).
    pub fn footprint(&self) -> usize {
        self.counts.as_ref().map_or(0, |c| c.len() * 8)
    }

    pub fn merge(&mut self, other: &LatencyHist) {
        let Some(o) = other.counts.as_ref().filter(|_| other.n > 0) else {
            return;
        };
        match self.counts.as_mut() {
            Some(c) => {
                for (a, b) in c.iter_mut().zip(o.iter()) {
                    *a += b;
                }
            }
            None => self.counts = Some(o.clone()),
        }
        if self.n == 0 || other.min < self.min {
            self.min = other.min;
        }
        self.max = self.max.max(other.max);
        self.n += other.n;
        self.sum = self.sum.saturating_add(other.sum);
    }

    /// The value at quantile `q` (nearest rank: the smallest recorded value with at least
    /// `ceil(q * n)` values at or below it), within [`MAX_RELATIVE_ERROR`]; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        let Some(c) = self.counts.as_ref().filter(|_| self.n > 0) else {
            return 0;
        };
        let rank = ((q.clamp(0.0, 1.0) * self.n as f64).ceil() as u64).clamp(1, self.n);
        if rank == self.n {
            return self.max;
        }
        let mut seen = 0u64;
        for (i, n) in c.iter().enumerate() {
            seen += n;
            if seen >= rank {
                // The last bucket also holds everything beyond the range: its only honest
                // value is the exact maximum.
                if i == BUCKETS - 1 {
                    return self.max;
                }
                return value_of(i).clamp(self.min, self.max);
            }
        }
        self.max
    }

    pub fn summary(&self) -> LatencySummary {
        if self.n == 0 {
            return LatencySummary::default();
        }
        LatencySummary {
            count: self.n,
            min: self.min,
            mean: self.sum as f64 / self.n as f64,
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            p99_9: self.quantile(0.999),
            p99_99: self.quantile(0.9999),
            max: self.max,
            stdev: self.stdev(),
        }
    }

    /// Population standard deviation around the exact mean, each bucket counted at its
    /// middle clamped into [min, max] (see [`LatencySummary`] for how close that is); 0 when
    /// fewer than two values.
    pub fn stdev(&self) -> f64 {
        let Some(c) = self.counts.as_ref().filter(|_| self.n > 1) else {
            return 0.0;
        };
        let mean = self.sum as f64 / self.n as f64;
        let mut acc = 0.0f64;
        for (i, n) in c.iter().enumerate().filter(|(_, n)| **n > 0) {
            let v = if i == BUCKETS - 1 {
                // The last bucket also holds everything beyond the range.
                self.max
            } else {
                value_of(i).clamp(self.min, self.max)
            };
            let d = v as f64 - mean;
            acc += d * d * *n as f64;
        }
        (acc / self.n as f64).sqrt()
    }

    /// Non-empty buckets as `[value_ns, count]` pairs (the bucket's middle), enough to rebuild
    /// the histogram later (so a stored Result can be merged and re-rendered).
    pub fn to_buckets(&self) -> Vec<[u64; 2]> {
        match &self.counts {
            Some(c) => c
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| [value_of(i), *n])
                .collect(),
            None => Vec::new(),
        }
    }

    /// Non-empty buckets of what was recorded since `earlier` was copied from this
    /// histogram (`[value_ns, count]`, as [`LatencyHist::to_buckets`]): one interval of a
    /// time series (`runner::live`).
    pub fn buckets_since(&self, earlier: &LatencyHist) -> Vec<[u64; 2]> {
        let Some(c) = self.counts.as_ref() else {
            return Vec::new();
        };
        let before = earlier.counts.as_ref().filter(|_| earlier.n > 0);
        c.iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let d = n - before.map_or(0, |b| b[i].min(*n));
                (d > 0).then(|| [value_of(i), d])
            })
            .collect()
    }

    /// Become a copy of `other` without allocating when this one already has its counts.
    pub fn copy_from(&mut self, other: &LatencyHist) {
        match (self.counts.as_mut(), other.counts.as_ref()) {
            (Some(c), Some(o)) => c.copy_from_slice(&o[..]),
            (Some(c), None) => c.fill(0),
            (None, _) => self.counts = other.counts.clone(),
        }
        self.n = other.n;
        self.min = other.min;
        self.max = other.max;
        self.sum = other.sum;
    }

    /// Rebuild from `[value, count]` pairs (ours, or the HdrHistogram buckets of a schema 1
    /// Result): every pair is recorded, so min, max and mean are those of the bucket values.
    pub fn from_buckets(buckets: &[[u64; 2]]) -> Self {
        let mut h = LatencyHist::default();
        for [v, c] in buckets {
            h.record_n(*v, *c);
        }
        h
    }
}

/// The histogram crosses a pipe (worker processes) exactly: counts by bucket index plus the
/// exact min, max and sum.
#[derive(Serialize, Deserialize)]
struct WireHist {
    n: u64,
    min: u64,
    max: u64,
    sum: u64,
    /// `[bucket index, count]` of the non-empty buckets.
    counts: Vec<[u64; 2]>,
}

impl Serialize for LatencyHist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let counts = match &self.counts {
            Some(c) => c
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| [i as u64, *n])
                .collect(),
            None => Vec::new(),
        };
        WireHist {
            n: self.n,
            min: self.min,
            max: self.max,
            sum: self.sum,
            counts,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for LatencyHist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireHist::deserialize(d)?;
        let mut h = LatencyHist {
            counts: None,
            n: w.n,
            min: w.min,
            max: w.max,
            sum: w.sum,
        };
        let mut total = 0u64;
        for [i, n] in w.counts {
            if i as usize >= BUCKETS {
                return Err(serde::de::Error::custom(format!(
                    "histogram bucket {i} out of range (0..{BUCKETS})"
                )));
            }
            h.counts.get_or_insert_with(zeroed)[i as usize] += n;
            total = total.saturating_add(n);
        }
        if total != w.n {
            return Err(serde::de::Error::custom(format!(
                "histogram counts add up to {total}, not {}",
                w.n
            )));
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Nearest-rank percentile of sorted samples.
    fn exact(sorted: &[u64], q: f64) -> u64 {
        let n = sorted.len() as u64;
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        sorted[(rank - 1) as usize]
    }

    #[test]
    fn buckets_map_back_and_are_narrow() {
        for i in 0..BUCKETS {
            assert_eq!(index(value_of(i)), i, "bucket {i}");
            let (lo, w) = bounds(i);
            assert_eq!(index(lo), i);
            assert_eq!(index(lo + w - 1), i);
            if lo >= 256 {
                assert!(w as f64 / lo as f64 <= 1.0 / SUB as f64);
            } else {
                assert_eq!(w, 1, "below 256 ns every value is exact");
            }
        }
        assert_eq!(index(u64::MAX), BUCKETS - 1);
        assert_eq!(HIST_BYTES, 36_864);
    }

    #[test]
    fn quantiles_and_merge() {
        let mut a = LatencyHist::new();
        let mut b = LatencyHist::new();
        for i in 1..=1000u64 {
            a.record(i * 1000);
        }
        for i in 1001..=2000u64 {
            b.record(i * 1000);
        }
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.count, 2000);
        assert_eq!((s.min, s.max), (1000, 2_000_000));
        assert_eq!(s.mean, 1_000_500.0);
        assert!(
            (s.p50 as f64 / 1_000_000.0 - 1.0).abs() <= MAX_RELATIVE_ERROR,
            "p50 {}",
            s.p50
        );
        let round = LatencyHist::from_buckets(&a.to_buckets());
        assert_eq!(round.summary().count, 2000);
        assert_eq!(round.summary().p99, s.p99);
    }

    #[test]
    fn empty_histograms_hold_no_counts() {
        let mut e = LatencyHist::default();
        assert_eq!(e.footprint(), 0);
        let mut other = LatencyHist::default();
        e.merge(&other);
        assert_eq!(e.footprint(), 0, "merging empties allocates nothing");
        assert_eq!(LatencyHist::from_buckets(&[]).footprint(), 0);
        assert_eq!(e.summary(), LatencySummary::default());
        other.record(5);
        e.merge(&other);
        assert_eq!(e.len(), 1);
        assert_eq!(LatencyHist::new().footprint(), HIST_BYTES);
    }

    #[test]
    fn out_of_range_values_keep_exact_extremes() {
        let mut h = LatencyHist::new();
        h.record(0);
        h.record(u64::MAX);
        assert_eq!(h.len(), 2);
        let s = h.summary();
        assert_eq!((s.min, s.max), (0, u64::MAX));
        assert_eq!(h.quantile(0.5), 0);
        assert_eq!(
            h.quantile(1.0),
            u64::MAX,
            "the largest rank is the exact maximum"
        );
        let mut long = LatencyHist::new();
        for v in [1u64 << 43, 1 << 44, 1 << 45] {
            long.record(v);
        }
        assert_eq!(
            long.quantile(0.5),
            1 << 45,
            "beyond the range: the exact maximum"
        );
    }

    #[test]
    fn wire_form_is_exact_and_checked() {
        let mut h = LatencyHist::new();
        for v in [3u64, 999, 123_456_789, 5_000_000_000_000] {
            h.record(v);
        }
        let text = serde_json::to_string(&h).unwrap();
        let back: LatencyHist = serde_json::from_str(&text).unwrap();
        assert_eq!(back.summary(), h.summary());
        assert_eq!(back.to_buckets(), h.to_buckets());
        let empty: LatencyHist =
            serde_json::from_str(&serde_json::to_string(&LatencyHist::default()).unwrap()).unwrap();
        assert_eq!(empty.footprint(), 0);
        for bad in [
            r#"{"n":1,"min":0,"max":0,"sum":0,"counts":[[99999,1]]}"#,
            r#"{"n":2,"min":0,"max":0,"sum":0,"counts":[[1,1]]}"#,
        ] {
            assert!(serde_json::from_str::<LatencyHist>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stdev_of_exact_and_wide_buckets() {
        // Below 256 ns every bucket holds one value: the stdev is exact.
        let mut h = LatencyHist::new();
        for v in [2u64, 4, 4, 4, 5, 5, 7, 9] {
            h.record(v);
        }
        assert_eq!(h.stdev(), 2.0);
        assert_eq!(LatencyHist::new().stdev(), 0.0);
        let mut one = LatencyHist::new();
        one.record(12_345);
        assert_eq!(one.summary().stdev, 0.0);
        let s = h.summary();
        assert_eq!(s.p99_99, 9);
        // An old document without the new keys still reads.
        let old = r#"{"count":1,"min":1,"mean":1.0,"p50":1,"p90":1,"p99":1,"p99_9":1,"max":1}"#;
        let back: LatencySummary = serde_json::from_str(old).unwrap();
        assert_eq!((back.p99_99, back.stdev), (0, 0.0));
    }

    proptest! {
        /// Every percentile is within 0.4 % of the exact nearest-rank percentile of the same
        /// samples, min/max/mean are exact, and merging two halves equals recording all.
        #[test]
        fn percentiles_match_exact_ones(
            samples in proptest::collection::vec(
                prop_oneof![0u64..300, 300u64..100_000, 100_000u64..(1u64 << 41)], 1..400),
            split in 0usize..400,
        ) {
            let mut sorted = samples.clone();
            sorted.sort_unstable();
            let k = split.min(samples.len());
            let (mut a, mut b) = (LatencyHist::default(), LatencyHist::default());
            for &v in &samples[..k] { a.record(v); }
            for &v in &samples[k..] { b.record(v); }
            a.merge(&b);
            let mut all = LatencyHist::new();
            for &v in &samples { all.record(v); }
            prop_assert_eq!(a.to_buckets(), all.to_buckets());
            let s = a.summary();
            prop_assert_eq!(s.min, sorted[0]);
            prop_assert_eq!(s.max, *sorted.last().unwrap());
            let mean = samples.iter().map(|&v| v as f64).sum::<f64>() / samples.len() as f64;
            prop_assert!((s.mean - mean).abs() <= mean * 1e-9 + 1e-9);
            let var = samples.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>()
                / samples.len() as f64;
            let exact_sd = var.sqrt();
            // Each value moves by at most 1/256 of itself: the stdev moves by at most the
            // root mean square of those moves.
            let rms = (samples.iter().map(|&v| (v as f64 * MAX_RELATIVE_ERROR).powi(2)).sum::<f64>()
                / samples.len() as f64).sqrt();
            prop_assert!((s.stdev - exact_sd).abs() <= rms + 1e-6 * exact_sd + 1e-6,
                "stdev {} exact {}", s.stdev, exact_sd);
            for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
                let want = exact(&sorted, q);
                let got = a.quantile(q);
                let err = (got as f64 - want as f64).abs();
                prop_assert!(err <= want as f64 * MAX_RELATIVE_ERROR,
                    "q {} exact {} got {}", q, want, got);
            }
        }
    }
}
