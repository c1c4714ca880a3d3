//! Per-flowop statistics of one thread. Latency goes into a small log-linear histogram
//! (64 sub-buckets per power of two, under 1.6% error, 16 KiB) because a workload can have
//! hundreds of threads times a dozen flowops; at the end it is converted into the project's
//! `stats::LatencyHist` for percentiles. Min, max and mean are kept exactly.

use crate::stats::LatencyHist;
use serde::{Deserialize, Serialize};

const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
const GROUPS: usize = 64 - SUB_BITS as usize + 1;

#[derive(Clone)]
pub struct CompactHist {
    counts: Box<[u32]>,
}

impl Default for CompactHist {
    fn default() -> Self {
        CompactHist {
            counts: vec![0u32; GROUPS * SUB].into_boxed_slice(),
        }
    }
}

fn index(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let msb = 63 - ns.leading_zeros();
    let shift = msb - SUB_BITS;
    let group = (shift + 1) as usize;
    let sub = ((ns >> shift) as usize) & (SUB - 1);
    group * SUB + sub
}

/// The middle of the bucket (what a recorded value is reported as).
fn value_of(i: usize) -> u64 {
    let (group, sub) = (i / SUB, i % SUB);
    if group == 0 {
        return sub as u64;
    }
    let shift = (group - 1) as u32;
    let lo = ((SUB + sub) as u64) << shift;
    lo + ((1u64 << shift) >> 1)
}

impl CompactHist {
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let i = index(ns);
        self.counts[i] = self.counts[i].saturating_add(1);
    }
    pub fn buckets(&self) -> Vec<[u64; 2]> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| [value_of(i), *c as u64])
            .collect()
    }
}

#[derive(Clone, Default)]
pub struct FlowStat {
    pub ops: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    /// CPU time of the executions whose CPU time was read, and how many those were.
    pub cpu_ns: u64,
    pub cpu_samples: u64,
    pub lat_sum_ns: u64,
    pub lat_min_ns: u64,
    pub lat_max_ns: u64,
    pub hist: CompactHist,
}

impl FlowStat {
    #[inline]
    pub fn record(&mut self, lat_ns: u64, cpu_ns: Option<u64>) {
        if self.ops == 0 || lat_ns < self.lat_min_ns {
            self.lat_min_ns = lat_ns;
        }
        self.lat_max_ns = self.lat_max_ns.max(lat_ns);
        self.ops += 1;
        self.lat_sum_ns += lat_ns;
        if let Some(c) = cpu_ns {
            self.cpu_ns += c;
            self.cpu_samples += 1;
        }
        self.hist.record(lat_ns);
    }
    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }
    pub fn to_wire(&self, name: &str, kind: super::model::Kind) -> WireFlowStat {
        WireFlowStat {
            name: name.to_string(),
            kind,
            ops: self.ops,
            read_ops: self.read_ops,
            write_ops: self.write_ops,
            read_bytes: self.read_bytes,
            write_bytes: self.write_bytes,
            errors: self.errors,
            cpu_ns: self.cpu_ns,
            cpu_samples: self.cpu_samples,
            lat_sum_ns: self.lat_sum_ns,
            lat_min_ns: self.lat_min_ns,
            lat_max_ns: self.lat_max_ns,
            buckets: self.hist.buckets(),
        }
    }
}

/// A flowop's statistics in a form that crosses a pipe and merges exactly.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireFlowStat {
    pub name: String,
    pub kind: super::model::Kind,
    pub ops: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    pub cpu_ns: u64,
    pub cpu_samples: u64,
    pub lat_sum_ns: u64,
    pub lat_min_ns: u64,
    pub lat_max_ns: u64,
    pub buckets: Vec<[u64; 2]>,
}

/// Flowop statistics merged over every thread that runs a flowop of that name.
#[derive(Debug, Clone)]
pub struct Merged {
    pub name: String,
    pub kind: super::model::Kind,
    pub ops: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    pub cpu_ns: u64,
    pub cpu_samples: u64,
    pub lat_sum_ns: u64,
    pub lat_min_ns: u64,
    pub lat_max_ns: u64,
    pub hist: LatencyHist,
}

impl Merged {
    pub fn new(w: &WireFlowStat) -> Self {
        Merged {
            name: w.name.clone(),
            kind: w.kind,
            ops: 0,
            read_ops: 0,
            write_ops: 0,
            read_bytes: 0,
            write_bytes: 0,
            errors: 0,
            cpu_ns: 0,
            cpu_samples: 0,
            lat_sum_ns: 0,
            lat_min_ns: 0,
            lat_max_ns: 0,
            hist: LatencyHist::new(),
        }
    }
    pub fn add(&mut self, w: &WireFlowStat) {
        if w.ops > 0 && (self.ops == 0 || w.lat_min_ns < self.lat_min_ns) {
            self.lat_min_ns = w.lat_min_ns;
        }
        self.lat_max_ns = self.lat_max_ns.max(w.lat_max_ns);
        self.ops += w.ops;
        self.read_ops += w.read_ops;
        self.write_ops += w.write_ops;
        self.read_bytes += w.read_bytes;
        self.write_bytes += w.write_bytes;
        self.errors += w.errors;
        self.cpu_ns += w.cpu_ns;
        self.cpu_samples += w.cpu_samples;
        self.lat_sum_ns += w.lat_sum_ns;
        self.hist.merge(&LatencyHist::from_buckets(&w.buckets));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_buckets_are_close() {
        for v in [0u64, 1, 63, 64, 65, 1000, 123_456, 9_876_543_210] {
            let got = value_of(index(v));
            let err = (got as f64 - v as f64).abs() / (v.max(1) as f64);
            assert!(err <= 0.016, "{v} -> {got}");
        }
        let mut f = FlowStat::default();
        for i in 1..=1000u64 {
            f.record(i * 1000, Some(10));
        }
        let w = f.to_wire("x", super::super::model::Kind::Read);
        let mut m = Merged::new(&w);
        m.add(&w);
        let s = m.hist.summary();
        assert_eq!(s.count, 1000);
        assert!((s.p50 as f64 / 500_000.0 - 1.0).abs() < 0.02, "{}", s.p50);
        assert_eq!(m.lat_min_ns, 1000);
        assert_eq!(m.lat_max_ns, 1_000_000);
    }
}
