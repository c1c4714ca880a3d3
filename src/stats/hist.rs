//! Constant-memory latency histogram (HdrHistogram, nanoseconds, 3 significant digits).
//!
//! A histogram is sized once for 1 ns .. 1 hour (about 270 KB) when it is first needed: an
//! empty one (`Default`, a worker that did no I/O, a latency that is not measured) holds no
//! counts at all, so a job of thousands of tiny workers does not pay 270 KB for each empty
//! one. The runner creates its workers' histograms before timing (`LatencyHist::new`), so
//! recording on the I/O path never allocates. Merging is exact.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency tracked exactly; larger values are clamped to it (and counted).
const MAX_NS: u64 = 3_600_000_000_000;

#[derive(Clone, Default)]
pub struct LatencyHist {
    /// None until the first value (or `new`): an empty histogram costs nothing.
    h: Option<Box<Histogram<u64>>>,
}

impl std::fmt::Debug for LatencyHist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LatencyHist(n={})", self.len())
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

fn empty_hist() -> Box<Histogram<u64>> {
    Box::new(Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds"))
}

impl LatencyHist {
    /// A histogram ready to record without allocating (create it before timing).
    pub fn new() -> Self {
        LatencyHist {
            h: Some(empty_hist()),
        }
    }

    /// Allocate the counts now if they are not yet (so `record` will not).
    pub fn ready(&mut self) {
        if self.h.is_none() {
            self.h = Some(empty_hist());
        }
    }

    /// Record one latency. No allocation once created: values are clamped into the range.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let v = ns.clamp(1, MAX_NS);
        let h = self.h.get_or_insert_with(empty_hist);
        // Cannot fail: v is inside the bounds the histogram was built with.
        let _ = h.record(v);
    }

    pub fn len(&self) -> u64 {
        self.h.as_ref().map_or(0, |h| h.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of counts this histogram holds (0 while empty).
    pub fn footprint(&self) -> usize {
        self.h.as_ref().map_or(0, |h| h.distinct_values() * 8)
    }

    pub fn merge(&mut self, other: &LatencyHist) {
        let Some(o) = other.h.as_ref().filter(|o| !o.is_empty()) else {
            return;
        };
        match self.h.as_mut() {
            // Same bounds on both sides, so adding cannot fail.
            Some(h) => {
                let _ = h.add(o.as_ref());
            }
            None => self.h = Some(o.clone()),
        }
    }

    pub fn quantile(&self, q: f64) -> u64 {
        match &self.h {
            Some(h) if !h.is_empty() => h.value_at_quantile(q),
            _ => 0,
        }
    }

    pub fn summary(&self) -> LatencySummary {
        let Some(h) = self.h.as_ref().filter(|h| !h.is_empty()) else {
            return LatencySummary::default();
        };
        LatencySummary {
            count: h.len(),
            min: h.min(),
            mean: h.mean(),
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            p99_9: self.quantile(0.999),
            max: h.max(),
        }
    }

    /// Non-empty buckets as `[value_ns, count]` pairs, enough to rebuild the histogram later
    /// (so a stored Result can be merged and re-rendered without re-running).
    pub fn to_buckets(&self) -> Vec<[u64; 2]> {
        match &self.h {
            Some(h) => h
                .iter_recorded()
                .map(|v| [v.value_iterated_to(), v.count_at_value()])
                .collect(),
            None => Vec::new(),
        }
    }

    pub fn from_buckets(buckets: &[[u64; 2]]) -> Self {
        let mut h = LatencyHist::default();
        for [v, c] in buckets {
            if *c > 0 {
                let _ =
                    h.h.get_or_insert_with(empty_hist)
                        .record_n((*v).clamp(1, MAX_NS), *c);
            }
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
    fn empty_histograms_hold_no_counts() {
        let mut e = LatencyHist::default();
        assert_eq!(e.footprint(), 0);
        let mut other = LatencyHist::default();
        e.merge(&other);
        assert_eq!(e.footprint(), 0, "merging empties allocates nothing");
        assert_eq!(LatencyHist::from_buckets(&[]).footprint(), 0);
        other.record(5);
        e.merge(&other);
        assert_eq!(e.len(), 1);
        assert!(LatencyHist::new().footprint() > 100_000);
    }

    #[test]
    fn clamps_out_of_range() {
        let mut h = LatencyHist::new();
        h.record(0);
        h.record(u64::MAX);
        assert_eq!(h.len(), 2);
    }
}
