//! `fsbench ab`: two configurations run alternately (A B B A A B ...) on the same files, and
//! per headline metric the median ratio B/A, its interval and a verdict from the paired test
//! of [`crate::stats::bootstrap`]. This module holds the document and the judging; the
//! command line (`cli/ab.rs`) runs the rounds through the executor.

use crate::result::{Figures, HEADLINES};
use crate::stats::bootstrap;
use serde::{Deserialize, Serialize};

/// One side: how it was given and its figures, one per round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AbSide {
    /// The flags or file the side was given as.
    pub describe: String,
    /// Per round, in round order.
    pub rounds: Vec<Figures>,
}

/// The judgement of one headline metric.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AbMetric {
    /// A headline key (units in the name): iops, bytes_per_sec, lat_mean_ns, ...
    pub metric: String,
    pub higher_is_better: bool,
    pub a_median: f64,
    pub b_median: f64,
    /// Median of the per-round ratios B/A.
    pub ratio_median: f64,
    pub ratio_ci95_low: f64,
    pub ratio_ci95_high: f64,
    /// `faster`, `slower` or `within noise`: what B is.
    pub verdict: String,
    /// Rounds where both sides had the figure.
    pub pairs: usize,
    /// Fewer pairs than the test needs to find any difference at 95 %.
    pub too_few_rounds: bool,
}

/// The document `fsbench ab` prints and stores.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AbReport {
    /// Always `ab`.
    pub kind: String,
    pub fsbench_version: String,
    /// The paired test used.
    pub method: String,
    pub rounds: usize,
    /// The order the runs went in: "A", "B", "B", "A", ...
    pub order: Vec<String>,
    /// The CPUs the workers were pinned to (`--cpus`), empty when not pinned.
    pub cpus: String,
    pub a: AbSide,
    pub b: AbSide,
    pub metrics: Vec<AbMetric>,
    pub notes: Vec<String>,
}

/// Whether round `i` (from 0) runs B first: A B, B A, A B, ... so that a drift over the
/// run (a cache warming, a neighbour starting) falls on both sides alike.
pub fn b_first(round: usize) -> bool {
    round % 2 == 1
}

/// The run order of `rounds` rounds.
pub fn order(rounds: usize) -> Vec<String> {
    (0..rounds)
        .flat_map(|i| match b_first(i) {
            true => ["B", "A"],
            false => ["A", "B"],
        })
        .map(String::from)
        .collect()
}

/// Judge every headline metric both sides measured over their rounds.
pub fn judge(a: &[Figures], b: &[Figures]) -> Vec<AbMetric> {
    HEADLINES
        .iter()
        .filter_map(|h| {
            let get = |f: &Figures| (h.get)(f).unwrap_or(f64::NAN);
            let (va, vb): (Vec<f64>, Vec<f64>) =
                a.iter().zip(b).map(|(x, y)| (get(x), get(y))).unzip();
            let t = bootstrap::paired_ratio(&va, &vb, h.higher_is_better)?;
            Some(AbMetric {
                metric: h.key.to_string(),
                higher_is_better: h.higher_is_better,
                a_median: bootstrap::median(&va)?,
                b_median: bootstrap::median(&vb)?,
                ratio_median: t.ratio,
                ratio_ci95_low: t.low,
                ratio_ci95_high: t.high,
                verdict: t.verdict.name().to_string(),
                pairs: t.n,
                too_few_rounds: t.too_few,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternate_order_and_a_clear_difference() {
        assert_eq!(order(3).join(" "), "A B B A A B");
        let f = |bw: f64| Figures {
            iops: bw / 4096.0,
            bytes_per_sec: bw,
            lat_mean_ns: 4096e9 / bw,
            lat_p99_ns: 0.0,
            ops_per_cpu_s: None,
        };
        let a: Vec<Figures> = (0..6).map(|i| f(1e6 + i as f64)).collect();
        let b: Vec<Figures> = (0..6).map(|i| f(2e6 + i as f64)).collect();
        let m = judge(&a, &b);
        let get = |k: &str| m.iter().find(|x| x.metric == k).unwrap();
        assert_eq!(get("bytes_per_sec").verdict, "faster");
        assert_eq!(get("lat_mean_ns").verdict, "faster");
        assert!((get("bytes_per_sec").ratio_median - 2.0).abs() < 0.01);
        // A figure no round has is not judged; p99 all zero is not judged either.
        assert!(m
            .iter()
            .all(|x| x.metric != "ops_per_cpu_s" && x.metric != "lat_p99_ns"));
    }
}
