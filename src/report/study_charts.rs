//! What the HTML report draws of a study beyond its metric charts: the fixed parameters of
//! the study (what every point shares), the latency percentile chart of each point from its
//! stored histogram, and the latency-vs-throughput chart of a sweep over queue depth or a rate limit.
//! Repetitions of a point are merged (histograms added, figures averaged).

use super::svg::esc;
use super::svg_plot::{self, nines, Plot, PlotSeries, Quantity, PERCENTILES};
use super::table::Shaped;
use crate::result::RunResult;
use crate::stats::LatencyHist;
use crate::sweep::axis;
use crate::sweep::record::Record;
use std::fmt::Write;

/// Lines per percentile chart; more points make more charts.
const LINES_PER_CHART: usize = 8;

/// The measured records of a study.
fn study_runs<'a>(t: &Shaped, records: &'a [Record]) -> Vec<(&'a Record, &'a RunResult)> {
    records
        .iter()
        .filter(|r| r.meta().suite == t.suite && r.meta().study == t.study)
        .filter_map(|r| r.result().map(|res| (r, res)))
        .collect()
}

/// Settings a point's Job shows, beyond the ones it was built from (defaults included).
fn job_settings(r: &RunResult) -> Vec<(String, String)> {
    let mut v = Vec::new();
    if let Some(c) = r.cache_name() {
        v.push(("cache".to_string(), c));
    }
    if let Some(j) = &r.job {
        v.push(("rw".into(), j.access.name().to_string()));
        v.push(("bs".into(), crate::units::format_size_exact(j.block_size)));
        if let Some(s) = j.file_size {
            v.push(("size".into(), crate::units::format_size_exact(s)));
        }
        v.push(("engine".into(), j.engine.name().to_string()));
        v.push(("qd".into(), j.queue_depth.to_string()));
        v.push(("threads".into(), j.threads.to_string()));
        v.push(("files".into(), j.targets.len().to_string()));
        if let Some(t) = j.time_s {
            v.push(("time".into(), format!("{t}s")));
        }
        if let Some(c) = j.io_count {
            v.push(("count".into(), c.to_string()));
        }
        if j.fsync {
            v.push(("fsync".into(), "at the end".into()));
        }
    }
    if let Some(w) = &r.workload {
        for (k, val) in &w.defines {
            v.push((format!("var.{k}"), val.clone()));
        }
    }
    v
}

/// The parameters every point of the study shares: the settings it was built from that
/// are not its axes, and the Job's own (cache policy, engine, threads, ...) where all
/// points agree. `target` joins them when the study ran on one target.
pub(crate) fn fixed_parameters(t: &Shaped, records: &[Record]) -> Vec<(String, String)> {
    let runs = study_runs(t, records);
    let Some((first_rec, first)) = runs.first() else {
        return Vec::new();
    };
    let axes: Vec<&String> = t.row_axes.iter().chain(t.col_axes.iter()).collect();
    let all_of = |rec: &Record, res: &RunResult| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = rec.meta().settings.clone();
        for (k, val) in job_settings(res) {
            if !v.iter().any(|(n, _)| *n == k) {
                v.push((k, val));
            }
        }
        v
    };
    let mut fixed: Vec<(String, String)> = Vec::new();
    for (k, val) in all_of(first_rec, first) {
        if axes.iter().any(|a| **a == k) || fixed.iter().any(|(n, _)| *n == k) {
            continue;
        }
        let same = runs
            .iter()
            .all(|(rec, res)| all_of(rec, res).iter().any(|(n, x)| *n == k && *x == val));
        if same {
            fixed.push((k, val));
        }
    }
    if t.targets.len() == 1 && !axes.iter().any(|a| *a == "target") {
        fixed.push(("target".into(), t.targets[0].clone()));
    }
    fixed
}

/// The fixed-parameters block of a study's section.
pub(crate) fn fixed_block(t: &Shaped, records: &[Record]) -> String {
    let fixed = fixed_parameters(t, records);
    if fixed.is_empty() {
        return String::new();
    }
    let mut s = String::from("<p class=\"fixed\"><b>Fixed parameters:</b> ");
    let items: Vec<String> = fixed
        .iter()
        .map(|(k, v)| {
            let name = if k == "target" {
                "target".to_string()
            } else {
                axis::label(k)
            };
            format!(
                "<span class=\"param\" data-name=\"{}\">{} = {}</span>",
                esc(k),
                esc(&name),
                esc(v)
            )
        })
        .collect();
    s.push_str(&items.join(" · "));
    s.push_str("</p>");
    s
}

/// A point's name in a legend: its axis values (and target when there are several).
fn point_name(rec: &Record, t: &Shaped) -> String {
    let m = rec.meta();
    let mut parts: Vec<String> = m
        .point
        .iter()
        .map(|(n, v)| format!("{} {v}", axis::label(n)))
        .collect();
    if t.targets.len() > 1 {
        if let Some(tg) = &m.target {
            parts.push(short_target(&t.targets, tg));
        }
    }
    if parts.is_empty() {
        t.title.clone()
    } else {
        parts.join(", ")
    }
}

/// Points of a study in order, each with its repetitions' results.
fn points<'a>(t: &Shaped, records: &'a [Record]) -> Vec<(String, &'a Record, Vec<&'a RunResult>)> {
    let mut out: Vec<(String, &Record, Vec<&RunResult>)> = Vec::new();
    for (rec, res) in study_runs(t, records) {
        let name = point_name(rec, t);
        match out.iter_mut().find(|p| p.0 == name) {
            Some(p) => p.2.push(res),
            None => out.push((name, rec, vec![res])),
        }
    }
    out
}

/// The repetitions' latency histograms added together (None: none stored).
fn merged_hist(runs: &[&RunResult]) -> Option<LatencyHist> {
    let mut h = LatencyHist::new();
    for r in runs {
        if !r.total.lat_hist_ns.is_empty() {
            h.merge(&LatencyHist::from_buckets(&r.total.lat_hist_ns));
        }
    }
    (!h.is_empty()).then_some(h)
}

/// Percentile charts of a study: one line per point, latency (log) against the nines.
pub(crate) fn percentile_charts(t: &Shaped, records: &[Record]) -> Vec<String> {
    let lines: Vec<(String, Vec<(f64, f64)>)> = points(t, records)
        .into_iter()
        .filter_map(|(name, _, runs)| {
            let h = merged_hist(&runs)?;
            Some((
                name,
                PERCENTILES
                    .iter()
                    .map(|q| (nines(*q), h.quantile(*q) as f64))
                    .collect(),
            ))
        })
        .collect();
    if lines.is_empty() {
        return Vec::new();
    }
    let max = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let (div, unit) = Quantity::Time { base: 1e-9 }.scale(max);
    let chunks: Vec<&[(String, Vec<(f64, f64)>)]> = lines.chunks(LINES_PER_CHART).collect();
    let n = chunks.len();
    chunks
        .iter()
        .enumerate()
        .map(|(i, chunk)| {
            svg_plot::plot(&Plot {
                kind: "percentiles",
                title: format!(
                    "{}: latency percentiles{}",
                    t.title,
                    if n > 1 {
                        format!(" ({} of {n})", i + 1)
                    } else {
                        String::new()
                    }
                ),
                x_label: "percentile".into(),
                y_label: format!("latency, {unit}"),
                x_log: false,
                y_log: true,
                x_ticks: Some(svg_plot::nines_ticks()),
                series: chunk
                    .iter()
                    .enumerate()
                    .map(|(k, (name, pts))| PlotSeries {
                        name: name.clone(),
                        points: pts.iter().map(|(x, y)| (*x, y / div, None)).collect(),
                        color: k,
                        dashed: false,
                    })
                    .collect(),
                note: Some(
                    "from each point's latency histogram (repetitions merged); x: p50 .. p99.99 on a log scale of nines".into(),
                ),
            })
        })
        .collect()
}

/// The axes a latency-vs-throughput chart is drawn over: (axis, how a point is labelled,
/// what a point is).
const LOAD_AXES: [(&str, &str, &str); 3] = [
    ("qd", "qd {}", "one queue depth"),
    ("rate_iops", "{} I/O/s", "one I/O rate limit"),
    ("rate_bytes", "{} B/s", "one byte rate limit"),
];

/// The latency-vs-throughput chart of a study with a queue-depth or rate-limit axis: per
/// combination of the other axes, throughput (x) against mean and p99 latency (y), points
/// labelled with their queue depth or rate.
pub(crate) fn latency_throughput_chart(t: &Shaped, records: &[Record]) -> Option<String> {
    let &(axis_name, point_label, point_is) = LOAD_AXES
        .iter()
        .find(|(a, _, _)| t.row_axes.iter().chain(t.col_axes.iter()).any(|x| x == a))?;
    let label_of = |v: &str| point_label.replace("{}", v);
    // (series name, point label, throughput bytes/s, mean ns, p99 ns)
    let mut pts: Vec<(String, String, f64, f64, f64)> = Vec::new();
    for (_, rec, runs) in points(t, records) {
        let m = rec.meta();
        let Some(load) = m.value(axis_name) else {
            continue;
        };
        let mut others: Vec<String> = m
            .point
            .iter()
            .filter(|(n, _)| n != axis_name)
            .map(|(n, v)| format!("{} {v}", axis::label(n)))
            .collect();
        if t.targets.len() > 1 {
            if let Some(tg) = &m.target {
                others.push(short_target(&t.targets, tg));
            }
        }
        let n = runs.len() as f64;
        let bps = runs.iter().map(|r| r.total.bytes_per_sec).sum::<f64>() / n;
        let mean = runs.iter().map(|r| r.total.lat_ns.mean).sum::<f64>() / n;
        let p99 = merged_hist(&runs)
            .map(|h| h.quantile(0.99) as f64)
            .unwrap_or_else(|| runs.iter().map(|r| r.total.lat_ns.p99 as f64).sum::<f64>() / n);
        pts.push((others.join(", "), label_of(load), bps, mean, p99));
    }
    if pts.len() < 2 {
        return None;
    }
    let max_x = pts.iter().map(|p| p.2).fold(0.0, f64::max);
    let max_y = pts.iter().map(|p| p.4.max(p.3)).fold(0.0, f64::max);
    let (xdiv, xunit) = Quantity::Rate { base: 1.0 }.scale(max_x);
    let (ydiv, yunit) = Quantity::Time { base: 1e-9 }.scale(max_y);
    let mut names: Vec<String> = Vec::new();
    for p in &pts {
        if !names.contains(&p.0) {
            names.push(p.0.clone());
        }
    }
    let mut series = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let mine: Vec<&(String, String, f64, f64, f64)> =
            pts.iter().filter(|p| p.0 == *name).collect();
        let label = |what: &str| {
            if name.is_empty() {
                what.to_string()
            } else {
                format!("{name}: {what}")
            }
        };
        series.push(PlotSeries {
            name: label("mean"),
            points: mine
                .iter()
                .map(|p| (p.2 / xdiv, p.3 / ydiv, Some(p.1.clone())))
                .collect(),
            color: k,
            dashed: false,
        });
        series.push(PlotSeries {
            name: label("p99"),
            points: mine
                .iter()
                .map(|p| (p.2 / xdiv, p.4 / ydiv, Some(p.1.clone())))
                .collect(),
            color: k,
            dashed: true,
        });
    }
    Some(svg_plot::plot(&Plot {
        kind: "latency-throughput",
        title: format!("{}: latency against throughput", t.title),
        x_label: format!("throughput, {xunit}"),
        y_label: format!("latency, {yunit}"),
        x_log: false,
        y_log: false,
        x_ticks: None,
        series,
        note: Some(format!(
            "each point is {point_is} (labelled); solid: mean latency, dashed: p99"
        )),
    }))
}

/// Everything of this module for one study's section.
pub(crate) fn study_extras(t: &Shaped, records: &[Record]) -> String {
    let mut s = String::new();
    if let Some(c) = latency_throughput_chart(t, records) {
        s.push_str(&c);
    }
    for c in percentile_charts(t, records) {
        let _ = write!(s, "{c}");
    }
    s
}

/// A target's last path component when that tells the targets apart (legends stay short).
pub(crate) fn short_target(all: &[String], t: &str) -> String {
    let base = |p: &str| -> String {
        std::path::Path::new(p.trim_end_matches('/'))
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| p.to_string())
    };
    let mut bases: Vec<String> = all.iter().map(|p| base(p)).collect();
    bases.sort();
    bases.dedup();
    if bases.len() == all.len() {
        base(t)
    } else {
        t.to_string()
    }
}
