//! Constant-memory latency histogram (HdrHistogram, nanoseconds, 3 significant digits).
//!
//! Recording never allocates: the histogram is sized once for 1 ns .. 1 hour. Merging is exact.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency tracked exactly; larger values are clamped to it (and counted).
const MAX_NS: u64 = 3_600_000_000_000;

#[derive(Clone)]
pub struct LatencyHist {
    h: Histogram<u64>,
}

impl std::fmt::Debug for LatencyHist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LatencyHist(n={})", self.h.len())
    }
}

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

/// Named latency summary as it goes into every output (`lat_ns` in JSON).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub max: u64,
}

impl LatencyHist {
    pub fn new() -> Self {
        // SAFETY-free: bounds are constants known to be valid for HdrHistogram.
        let h = Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds");
        LatencyHist { h }
    }

    /// Record one latency. No allocation: values are clamped into the tracked range.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let v = ns.clamp(1, MAX_NS);
        // Cannot fail: v is inside the bounds the histogram was built with.
        let _ = self.h.record(v);
    }

    pub fn len(&self) -> u64 {
        self.h.len()
    }

    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    pub fn merge(&mut self, other: &LatencyHist) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.h.add(&other.h);
    }

    pub fn quantile(&self, q: f64) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.value_at_quantile(q)
        }
    }

    pub fn summary(&self) -> LatencySummary {
        if self.h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: self.h.len(),
            min: self.h.min(),
            mean: self.h.mean(),
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            p99_9: self.quantile(0.999),
            max: self.h.max(),
        }
    }

    /// Non-empty buckets as `[value_ns, count]` pairs, enough to rebuild the histogram later
    /// (so a stored Result can be merged and re-rendered without re-running).
    pub fn to_buckets(&self) -> Vec<[u64; 2]> {
        self.h
            .iter_recorded()
            .map(|v| [v.value_iterated_to(), v.count_at_value()])
            .collect()
    }

    pub fn from_buckets(buckets: &[[u64; 2]]) -> Self {
        let mut h = LatencyHist::new();
        for [v, c] in buckets {
            let _ = h.h.record_n((*v).clamp(1, MAX_NS), *c);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(
            (s.p50 as f64 - 1_000_000.0).abs() < 2_000.0,
            "p50 {}",
            s.p50
        );
        assert!(s.max >= 1_999_000);
        let round = LatencyHist::from_buckets(&a.to_buckets());
        assert_eq!(round.summary().count, 2000);
        assert_eq!(round.summary().p99, s.p99);
    }

    #[test]
    fn clamps_out_of_range() {
        let mut h = LatencyHist::new();
        h.record(0);
        h.record(u64::MAX);
        assert_eq!(h.len(), 2);
    }
}
