//! `compare`: two sets of results point by point, with the ratio after/before per metric.
//! A change smaller than the run-to-run spread (from `--repeat N`) is marked as noise.

use super::table::{shape_all, Shape, Shaped};
use super::text_table::{Fit, TextTable};
use crate::sweep::record::Record;

#[derive(Debug, Clone)]
pub struct Change {
    pub point: String,
    pub metric: String,
    /// Decimals the metric is shown with.
    pub decimals: usize,
    pub before: f64,
    pub after: f64,
    pub ratio: f64,
    /// Relative spread (max - min)/mean of the noisier side, when repeats exist.
    pub spread: Option<f64>,
    /// With repeats on both sides: the 95 % bootstrap interval of the ratio of medians (then
    /// `before`, `after` and `ratio` are medians and their ratio).
    pub interval: Option<(f64, f64)>,
    pub verdict: &'static str,
}

/// Cells of a shaped table by "study: point" label (target left out when there is one).
fn cells(t: &Shaped) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for (ri, rk) in t.row_keys.iter().enumerate() {
        for (ci, ck) in t.col_keys.iter().enumerate() {
            let mut parts: Vec<String> = Vec::new();
            for (a, v) in t.row_axes.iter().zip(rk).chain(t.col_axes.iter().zip(ck)) {
                if a == "target" && t.targets.len() <= 1 {
                    continue;
                }
                parts.push(format!("{a}={v}"));
            }
            let label = if parts.is_empty() {
                t.study.clone()
            } else {
                format!("{}: {}", t.study, parts.join(" "))
            };
            out.push((label, ri, ci));
        }
    }
    out
}

/// Totals that grow with the work a run did: compare judges them per operation instead
/// (a run that did an eighth of the work used an eighth of the CPU seconds, which is not
/// "better").
const PER_OP: &[(&str, &str)] = &[
    ("cpu_s", "cpu_us_per_op"),
    ("user_s", "cpu_us_per_op"),
    ("sys_s", "cpu_us_per_op"),
];

/// Throughput metrics: the work a point did per second.
const THROUGHPUT: &[&str] = &["kb_per_s", "mb_per_s", "iops", "ops_per_s", "calls_per_s"];

/// The metrics compare judges for a study showing `keys`: CPU totals as CPU per operation,
/// and a throughput metric always (so that a cost that fell with the work is caught).
fn judged_keys(keys: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for k in keys {
        let k = PER_OP
            .iter()
            .find(|(total, _)| *total == k)
            .map_or(k, |(_, per_op)| per_op.to_string());
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if !out.iter().any(|k| THROUGHPUT.contains(&k.as_str())) {
        out.insert(0, "iops".into());
    }
    out
}

pub fn compare(
    before: &[Record],
    after: &[Record],
    shape: &Shape,
) -> Result<Vec<Change>, crate::error::UsageError> {
    let study = |r: &Record| (r.meta().suite.clone(), r.meta().study.clone());
    let mut studies: Vec<(String, String)> = Vec::new();
    for r in before {
        if !studies.contains(&study(r)) {
            studies.push(study(r));
        }
    }
    let mut out = Vec::new();
    for key in studies {
        let of = |set: &[Record]| -> Vec<Record> {
            set.iter().filter(|r| study(r) == key).cloned().collect()
        };
        let (bs, afs) = (of(before), of(after));
        if afs.is_empty() {
            continue;
        }
        let keys = judged_keys(super::table::metric_keys(bs[0].meta(), shape));
        let shape = Shape {
            metrics: Some(keys),
            ..shape.clone()
        };
        let (Some(tb), Some(ta)) = (
            shape_all(&bs, &shape)?.into_iter().next(),
            shape_all(&afs, &shape)?.into_iter().next(),
        ) else {
            continue;
        };
        compare_study(&tb, &ta, &mut out);
    }
    if out.is_empty() {
        return Err(crate::usage!(
            "no point appears in both sets of results: compare results of the same sweep or suite"
        ));
    }
    Ok(out)
}

/// The changes of every point two shapings of one study share.
fn compare_study(tb: &Shaped, ta: &Shaped, out: &mut Vec<Change>) {
    let after_cells = cells(ta);
    for (label, ri, ci) in cells(tb) {
        let Some((_, ari, aci)) = after_cells.iter().find(|(l, _, _)| *l == label) else {
            continue;
        };
        let first = out.len();
        for (mi, m) in tb.metrics.iter().enumerate() {
            let Some(ami) = ta.metrics.iter().position(|x| x.key == m.key) else {
                continue;
            };
            let (cb, ca) = (&tb.cells[ri][ci], &ta.cells[*ari][*aci]);
            let (Some(vb), Some(va)) = (cb.mean(mi), ca.mean(ami)) else {
                continue;
            };
            let spread = match (cb.spread(mi), ca.spread(ami)) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            };
            // Two sets of repeats: the bootstrap of the ratio of their medians judges.
            if let Some(c) = repeats_change(&cb.values[mi], &ca.values[ami], m.higher_is_better) {
                out.push(Change {
                    point: label.clone(),
                    metric: m.label.to_string(),
                    decimals: m.decimals,
                    spread,
                    ..c
                });
                continue;
            }
            let ratio = if vb != 0.0 {
                va / vb
            } else if va == 0.0 {
                1.0
            } else {
                f64::INFINITY
            };
            let change = (ratio - 1.0).abs();
            let verdict = if change < 1e-9 {
                "same"
            } else if spread.is_some_and(|s| change <= s) {
                "noise"
            } else if (ratio > 1.0) == m.higher_is_better {
                "better"
            } else {
                "worse"
            };
            out.push(Change {
                point: label.clone(),
                metric: m.label.to_string(),
                decimals: m.decimals,
                before: vb,
                after: va,
                ratio,
                spread,
                interval: None,
                verdict,
            });
        }
        // A cost that fell while the point's throughput fell did less work, not better.
        let point = &mut out[first..];
        let throughput_fell = tb.metrics.iter().any(|m| {
            THROUGHPUT.contains(&m.key)
                && point
                    .iter()
                    .any(|c| c.metric == m.label && c.verdict == "worse")
        });
        if throughput_fell {
            for c in point.iter_mut() {
                let cost = tb
                    .metrics
                    .iter()
                    .any(|m| m.label == c.metric && !m.higher_is_better);
                if cost && c.verdict == "better" {
                    c.verdict = "suspect";
                }
            }
        }
    }
}

/// The change of a metric measured two or more times on each side: the ratio of the
/// medians and the verdict of its bootstrap interval (`crate::stats::bootstrap`).
fn repeats_change(before: &[f64], after: &[f64], higher_is_better: bool) -> Option<Change> {
    use crate::stats::bootstrap::{median, unpaired_ratio, Verdict};
    if before.len() < 2 || after.len() < 2 {
        return None;
    }
    let t = unpaired_ratio(before, after, higher_is_better)?;
    Some(Change {
        point: String::new(),
        metric: String::new(),
        decimals: 0,
        before: median(before)?,
        after: median(after)?,
        ratio: t.ratio,
        spread: None,
        interval: Some((t.low, t.high)),
        verdict: match t.verdict {
            _ if t.ratio == 1.0 && t.low == 1.0 && t.high == 1.0 => "same",
            Verdict::Faster => "better",
            Verdict::Slower => "worse",
            Verdict::WithinNoise => "noise",
        },
    })
}

/// The comparisons as a table, then what its words mean and the counts.
pub fn render_text(changes: &[Change]) -> String {
    let rows: Vec<[String; 7]> = changes
        .iter()
        .map(|c| {
            [
                c.point.clone(),
                c.metric.clone(),
                format!("{:.*}", c.decimals, c.before),
                format!("{:.*}", c.decimals, c.after),
                match c.interval {
                    Some((lo, hi)) => format!("{:.3} [{lo:.3}, {hi:.3}]", c.ratio),
                    None => format!("{:.3}", c.ratio),
                },
                c.spread
                    .map(|s| format!("{:.1}%", s * 100.0))
                    .unwrap_or_else(|| "n/a".into()),
                c.verdict.to_string(),
            ]
        })
        .collect();
    let header = [
        "point",
        "metric",
        "before",
        "after",
        "after/before",
        "spread (range/mean)",
        "verdict",
    ]
    .map(String::from);
    // Wrapped, not pivoted, where the terminal is narrow: the point names are the wide
    // cells, and a comparison reads best as one row with its figures beside its point.
    let mut table = TextTable::new(header, 2, Fit::Wrap);
    for r in rows {
        table.push(r.to_vec());
    }
    let width = super::width::terminal_width();
    let mut s = table.render(width);
    let mut say = |line: &str| {
        s += &super::width::wrap_words(line, width);
        s.push('\n');
    };
    if changes.iter().any(|c| c.interval.is_some()) {
        say(&format!(
            "[interval]: repeats on both sides: before and after are medians, the ratio is theirs, judged by a {}",
            crate::stats::bootstrap::UNPAIRED_METHOD
        ));
    }
    if changes.iter().any(|c| c.spread.is_none()) {
        say("spread n/a: no repetitions, so noise cannot be told from change; run with --repeat N");
    }
    if changes.iter().any(|c| c.verdict == "suspect") {
        say("suspect: a cost that fell at a point whose throughput fell too (less work done, not better)");
    }
    let count = |v: &str| changes.iter().filter(|c| c.verdict == v).count();
    say(&format!(
        "{} comparisons: {} better, {} worse, {} suspect, {} within the run-to-run spread; CPU is judged per operation",
        changes.len(),
        count("better"),
        count("worse"),
        count("suspect"),
        count("noise")
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::fake;

    #[test]
    fn ratios_and_noise() {
        let mk = |v: &[f64]| -> Vec<Record> {
            v.iter()
                .enumerate()
                .map(|(i, x)| {
                    let mut r = fake("t", &[("bs", "64k"), ("cache", "direct")], *x, 1.0, None);
                    if let Record::Run { meta, .. } = &mut r {
                        meta.repeat = i as u32;
                    }
                    r
                })
                .collect()
        };
        let c = compare(
            &mk(&[100.0, 120.0]),
            &mk(&[105.0, 115.0]),
            &Shape::default(),
        )
        .unwrap();
        let kb = c.iter().find(|x| x.metric == "KiB/s").unwrap();
        assert!((kb.ratio - 1.0).abs() < 1e-9);
        let c = compare(
            &mk(&[100.0, 102.0]),
            &mk(&[150.0, 152.0]),
            &Shape::default(),
        )
        .unwrap();
        let kb = c.iter().find(|x| x.metric == "KiB/s").unwrap();
        assert_eq!(kb.verdict, "better");
        let c = compare(
            &mk(&[100.0, 120.0]),
            &mk(&[112.0, 116.0]),
            &Shape::default(),
        )
        .unwrap();
        assert_eq!(
            c.iter().find(|x| x.metric == "KiB/s").unwrap().verdict,
            "noise"
        );
        assert!(render_text(&c).contains("within the run-to-run spread"));
        assert!(compare(
            &mk(&[1.0]),
            &[fake("other", &[("bs", "4k")], 1.0, 1.0, None)],
            &Shape::default()
        )
        .is_err());
    }

    /// Two `--repeat` Results: each counts as its runs, and the bootstrap of the ratio of
    /// medians tells a 20 % change from the same figures with noise.
    #[test]
    fn repeat_results_are_judged_by_the_ratio_of_medians() {
        let mk = |kbps: &[f64]| -> Vec<Record> {
            let runs: Vec<crate::result::RunResult> = kbps
                .iter()
                .map(|k| match fake("t", &[("bs", "4k")], *k, 1.0, None) {
                    Record::Run { mut result, .. } => {
                        result.total.bytes = 1;
                        result.total.iops = k / 4.0;
                        *result
                    }
                    Record::Skipped { .. } => unreachable!(),
                })
                .collect();
            let mut r = fake("t", &[("bs", "4k")], 0.0, 1.0, None);
            if let Record::Run { result, .. } = &mut r {
                **result = crate::result::RunResult::of_repeats(runs).unwrap();
            }
            vec![r]
        };
        let shape = Shape {
            metrics: Some(vec!["kb_per_s".into()]),
            ..Default::default()
        };
        let base = [1000.0, 1040.0, 980.0, 1010.0, 995.0];
        let faster: Vec<f64> = base.iter().map(|x| x * 1.2).collect();
        let noisy = [1020.0, 990.0, 1005.0, 970.0, 1030.0];
        let c = compare(&mk(&base), &mk(&faster), &shape).unwrap();
        let kb = c.iter().find(|x| x.metric == "KiB/s").unwrap();
        assert_eq!(
            (kb.verdict, kb.before, kb.after),
            ("better", 1000.0, 1200.0)
        );
        assert!(kb.interval.is_some_and(|(lo, _)| lo > 1.0));
        let c = compare(&mk(&base), &mk(&noisy), &shape).unwrap();
        let kb = c.iter().find(|x| x.metric == "KiB/s").unwrap();
        assert_eq!(kb.verdict, "noise");
        assert!(render_text(&c).contains("bootstrap of the ratio of medians"));
    }

    /// A point that did an eighth of the work: its CPU seconds and latency fell too, and
    /// neither is called better; CPU is compared per operation.
    #[test]
    fn a_point_whose_throughput_fell_is_never_better() {
        let mk = |kbps: f64, cpu_s: f64, lat_ns: f64, ops: u64| -> Vec<Record> {
            let mut r = fake("t", &[("bs", "4k")], kbps, cpu_s, None);
            if let Record::Run { result, .. } = &mut r {
                result.total.lat_ns.mean = lat_ns;
                result.total.ops = ops;
                result.total.cpu_us_per_op = cpu_s / ops as f64 * 1e6;
            }
            vec![r]
        };
        let shape = Shape {
            metrics: Some(vec!["kb_per_s".into(), "cpu_s".into(), "lat_ms".into()]),
            ..Default::default()
        };
        let c = compare(
            &mk(8000.0, 8.0, 1e6, 8000),
            &mk(1000.0, 1.0, 0.5e6, 1000),
            &shape,
        )
        .unwrap();
        let verdict = |label: &str| c.iter().find(|x| x.metric == label).map(|x| x.verdict);
        assert_eq!(verdict("KiB/s"), Some("worse"));
        assert_eq!(
            verdict("CPU s"),
            None,
            "CPU seconds are not judged as a total"
        );
        assert_eq!(verdict("CPU us/op"), Some("same"));
        assert_eq!(verdict("mean latency ms"), Some("suspect"));
        let text = render_text(&c);
        assert!(text.contains("0 better, 1 worse, 1 suspect"), "{text}");
        // Without a throughput metric asked for, one is judged anyway.
        let shape = Shape {
            metrics: Some(vec!["lat_ms".into()]),
            ..Default::default()
        };
        let c = compare(
            &mk(8000.0, 8.0, 1e6, 8000),
            &mk(1000.0, 1.0, 0.5e6, 1000),
            &shape,
        )
        .unwrap();
        assert_eq!(
            c.iter().find(|x| x.metric == "IOPS").unwrap().verdict,
            "worse"
        );
        assert_eq!(
            c.iter()
                .find(|x| x.metric == "mean latency ms")
                .unwrap()
                .verdict,
            "suspect"
        );
        // The same latency drop with the throughput kept is better.
        let c = compare(
            &mk(8000.0, 8.0, 1e6, 8000),
            &mk(8000.0, 8.0, 0.5e6, 8000),
            &shape,
        )
        .unwrap();
        assert_eq!(
            c.iter()
                .find(|x| x.metric == "mean latency ms")
                .unwrap()
                .verdict,
            "better"
        );
    }
}
