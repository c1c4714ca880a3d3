//! Per-flowop statistics of a workload thread, in the project's one [`Stats`] type with its
//! one histogram: each thread keeps a `Stats` per flowop (histograms created before the start
//! signal, so recording never allocates), sends them to the parent as they are (serde) and the
//! parent merges them by flowop name into the Result's named groups.

use super::model::Kind;
use crate::stats::{Dir, Stats};
use serde::{Deserialize, Serialize};

/// One flowop's statistics from one thread, named for merging.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlowopStats {
    pub name: String,
    pub kind: Kind,
    pub stats: Stats,
}

/// The direction a flowop's latency is counted in: reads and writes on their own, every
/// other flowop (open, stat, fsync, ...) in the "other" histogram.
pub fn dir(kind: Kind) -> Dir {
    if kind.is_read() {
        Dir::Read
    } else if kind.is_write() {
        Dir::Write
    } else {
        Dir::Other
    }
}

/// A thread's per-flowop stats (one per flowop kind given), with the latency histogram of
/// each flowop's direction ready.
pub fn ready(kinds: impl IntoIterator<Item = Kind>) -> Vec<Stats> {
    kinds
        .into_iter()
        .map(|k| {
            let mut s = Stats::default();
            s.lat_of(dir(k)).ready();
            s
        })
        .collect()
}

/// One execution of a flowop: its latency (in the histogram of direction `d`), and its
/// thread CPU time when it was read. The caller counts the operation as a read, a write or
/// another op.
#[inline]
pub fn record(s: &mut Stats, d: Dir, lat_ns: u64, cpu_ns: Option<u64>) {
    s.lat_of(d).record(lat_ns);
    if let Some(c) = cpu_ns {
        s.cpu_sampled_ns += c;
        s.cpu_sampled_ops += 1;
    }
}

/// Flowop statistics of many threads merged by flowop name, in the order first seen.
pub fn merge_by_name<'a>(all: impl IntoIterator<Item = &'a FlowopStats>) -> Vec<FlowopStats> {
    let mut merged: Vec<FlowopStats> = Vec::new();
    for f in all {
        match merged.iter_mut().find(|m| m.name == f.name) {
            Some(m) => m.stats += &f.stats,
            None => merged.push(f.clone()),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flowops_merge_by_name_exactly() {
        let mut a = ready([Kind::Read, Kind::OpenFile]);
        for i in 1..=1000u64 {
            record(&mut a[0], Dir::Read, i * 1000, (i % 16 == 0).then_some(160));
            a[0].read_ops += 1;
        }
        record(&mut a[1], Dir::Other, 7, None);
        a[1].other_ops += 1;
        let t1 = vec![
            FlowopStats {
                name: "r".into(),
                kind: Kind::Read,
                stats: a[0].clone(),
            },
            FlowopStats {
                name: "o".into(),
                kind: Kind::OpenFile,
                stats: a[1].clone(),
            },
        ];
        // A second thread's stats cross the pipe as JSON, exactly.
        let t2: Vec<FlowopStats> =
            serde_json::from_str(&serde_json::to_string(&t1).unwrap()).unwrap();
        let m = merge_by_name(t1.iter().chain(t2.iter()));
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].name, "r");
        let s = &m[0].stats;
        assert_eq!(s.ops(), 2000);
        assert_eq!(s.cpu_sampled_ops, 2 * 62);
        let l = s.lat().summary();
        assert_eq!(s.read_lat.len(), 2000);
        assert_eq!(m[1].stats.other_lat.len(), 2);
        assert_eq!((l.count, l.min, l.max), (2000, 1000, 1_000_000));
        assert!((l.p50 as f64 / 500_000.0 - 1.0).abs() <= 0.004, "{}", l.p50);
        assert_eq!(m[1].stats.other_ops, 2);
    }
}
