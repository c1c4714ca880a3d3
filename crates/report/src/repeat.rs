//! Text of repeated runs: the `--repeat` summary under a Result (`median [low, high] n=N`)
//! and the verdicts of `fsbench ab`.

use crate::ab::AbReport;
use crate::result::{RepeatReport, RunResult, HEADLINES};
use std::fmt::Write as _;

/// A headline metric's value in its unit.
pub(crate) fn value(key: &str, v: f64) -> String {
    match key {
        "bytes_per_sec" => crate::units::format_binary_rate(v),
        "lat_mean_ns" | "lat_p99_ns" => crate::units::format_ns(v),
        _ => format!("{v:.0}"),
    }
}

fn label(key: &str) -> &'static str {
    HEADLINES
        .iter()
        .find(|h| h.key == key)
        .map_or("?", |h| h.label)
}

/// The lines of a Result's `--repeat` summary (empty without one).
pub fn text(r: &RunResult) -> String {
    match &r.repeat {
        Some(rep) => lines(rep),
        None => String::new(),
    }
}

fn lines(rep: &RepeatReport) -> String {
    let mut out = String::new();
    let n = rep.runs.len();
    let _ = writeln!(
        out,
        "repeated {n} times on the same files: median [95 % interval] n=runs (range); the figures above are run {} of {n}, the nearest the median",
        rep.shown_run
    );
    let width = rep
        .summary
        .iter()
        .map(|s| label(&s.metric).len())
        .max()
        .unwrap_or(0);
    for s in &rep.summary {
        let v = |x: f64| value(&s.metric, x);
        let _ = writeln!(
            out,
            "  {:<width$}  {} [{}, {}] n={} (min {}, max {})",
            label(&s.metric),
            v(s.median),
            v(s.ci95_low),
            v(s.ci95_high),
            s.n,
            v(s.min),
            v(s.max),
        );
    }
    let _ = writeln!(out, "  interval: {}", rep.method);
    out
}

/// `fsbench ab` as text: both sides, then per metric the median ratio B/A, its interval and
/// the verdict.
pub fn ab_text(r: &AbReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {}", r.a.describe);
    let _ = writeln!(out, "B: {}", r.b.describe);
    let _ = writeln!(
        out,
        "{} rounds, order {} ...{}",
        r.rounds,
        r.order
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join(" "),
        if r.cpus.is_empty() {
            String::new()
        } else {
            format!(", workers pinned to CPUs {}", r.cpus)
        }
    );
    let width = r
        .metrics
        .iter()
        .map(|m| label(&m.metric).len())
        .max()
        .unwrap_or(0);
    for m in &r.metrics {
        let _ = writeln!(
            out,
            "  {:<width$}  A {}  B {}  B/A {:.3} [{:.3}, {:.3}]  {}",
            label(&m.metric),
            value(&m.metric, m.a_median),
            value(&m.metric, m.b_median),
            m.ratio_median,
            m.ratio_ci95_low,
            m.ratio_ci95_high,
            m.verdict,
        );
    }
    let _ = writeln!(out, "test: {}", r.method);
    if r.metrics.iter().any(|m| m.too_few_rounds) {
        let _ = writeln!(
            out,
            "note: fewer than {} rounds cannot tell a difference at 95 %: every verdict is within noise; use --rounds {} or more",
            crate::stats::bootstrap::MIN_PAIRS,
            crate::stats::bootstrap::MIN_PAIRS
        );
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}
