//! `compare`: two sets of results point by point, with the ratio after/before per metric.
//! A change smaller than the run-to-run spread (from `--repeat N`) is marked as noise.

use super::table::{shape_all, Shape, Shaped};
use crate::sweep::record::Record;

#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub point: String,
    pub metric: String,
    /// Decimals the metric is shown with.
    pub decimals: usize,
    pub before: f64,
    pub after: f64,
    pub ratio: f64,
    /// Relative spread (max - min)/mean of the noisier side, when repeats exist.
    pub spread: Option<f64>,
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

pub(crate) fn compare(
    before: &[Record],
    after: &[Record],
    shape: &Shape,
) -> Result<Vec<Change>, crate::error::UsageError> {
    let b = shape_all(before, shape)?;
    let a = shape_all(after, shape)?;
    let mut out = Vec::new();
    for tb in &b {
        let Some(ta) = a
            .iter()
            .find(|t| t.study == tb.study && t.suite == tb.suite)
        else {
            continue;
        };
        let after_cells = cells(ta);
        for (label, ri, ci) in cells(tb) {
            let Some((_, ari, aci)) = after_cells.iter().find(|(l, _, _)| *l == label) else {
                continue;
            };
            for (mi, m) in tb.metrics.iter().enumerate() {
                let Some(ami) = ta.metrics.iter().position(|x| x.key == m.key) else {
                    continue;
                };
                let (cb, ca) = (&tb.cells[ri][ci], &ta.cells[*ari][*aci]);
                let (Some(vb), Some(va)) = (cb.mean(mi), ca.mean(ami)) else {
                    continue;
                };
                let ratio = if vb != 0.0 {
                    va / vb
                } else if va == 0.0 {
                    1.0
                } else {
                    f64::INFINITY
                };
                let spread = match (cb.spread(mi), ca.spread(ami)) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
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
                    verdict,
                });
            }
        }
    }
    if out.is_empty() {
        return Err(crate::usage!(
            "no point appears in both sets of results: compare results of the same sweep or suite"
        ));
    }
    Ok(out)
}

pub(crate) fn render_text(changes: &[Change]) -> String {
    let rows: Vec<[String; 7]> = changes
        .iter()
        .map(|c| {
            [
                c.point.clone(),
                c.metric.clone(),
                format!("{:.*}", c.decimals, c.before),
                format!("{:.*}", c.decimals, c.after),
                format!("{:.3}", c.ratio),
                c.spread
                    .map(|s| format!("±{:.1}%", s * 100.0))
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
        "spread",
        "verdict",
    ]
    .map(String::from);
    let mut w = [0usize; 7];
    for r in std::iter::once(&header).chain(rows.iter()) {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |r: &[String; 7]| -> String {
        r.iter()
            .enumerate()
            .map(|(i, c)| {
                if i < 2 {
                    format!("{c:<width$}", width = w[i])
                } else {
                    format!("{c:>width$}", width = w[i])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            + "\n"
    };
    let mut s = line(&header);
    for r in &rows {
        s += &line(r);
    }
    if changes.iter().any(|c| c.spread.is_none()) {
        s += "spread n/a: no repetitions, so noise cannot be told from change; run with --repeat N\n";
    }
    let (better, worse, noise) = changes.iter().fold((0, 0, 0), |acc, c| match c.verdict {
        "better" => (acc.0 + 1, acc.1, acc.2),
        "worse" => (acc.0, acc.1 + 1, acc.2),
        "noise" => (acc.0, acc.1, acc.2 + 1),
        _ => acc,
    });
    s += &format!(
        "{} comparisons: {better} better, {worse} worse, {noise} within the run-to-run spread\n",
        changes.len()
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::tests::fake;

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
        let kb = c.iter().find(|x| x.metric == "KB/s").unwrap();
        assert!((kb.ratio - 1.0).abs() < 1e-9);
        let c = compare(
            &mk(&[100.0, 102.0]),
            &mk(&[150.0, 152.0]),
            &Shape::default(),
        )
        .unwrap();
        let kb = c.iter().find(|x| x.metric == "KB/s").unwrap();
        assert_eq!(kb.verdict, "better");
        let c = compare(
            &mk(&[100.0, 120.0]),
            &mk(&[112.0, 116.0]),
            &Shape::default(),
        )
        .unwrap();
        assert_eq!(
            c.iter().find(|x| x.metric == "KB/s").unwrap().verdict,
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
}
