//! What the HTML report draws of a study beyond its metric charts: the fixed parameters of
//! the study (what every point shares), the latency percentiles and latency histogram of its
//! points from their stored histograms, the latency-vs-throughput chart of a sweep over queue
//! depth or a rate limit, and the queue depth x threads heatmap of a sweep over both.
//! Repetitions of a point are merged (histograms added, figures averaged).

use super::chart::{self, esc, nines, Plot, PlotSeries, Scale, PERCENTILES};
use super::table::Shaped;
use crate::result::RunResult;
use crate::stats::LatencyHist;
use crate::sweep::axis;
use crate::sweep::record::Record;

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

/// The percentile chart of a study: one line per point on one latency scale (log), against
/// the nines p50 .. p99.99, every point its own colour.
pub(crate) fn percentile_chart(t: &Shaped, records: &[Record]) -> Option<String> {
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
        return None;
    }
    let series = lines
        .into_iter()
        .enumerate()
        .map(|(k, (name, pts))| PlotSeries {
            name,
            points: pts.into_iter().map(|(x, y)| (x, y, None)).collect(),
            color: k,
            dashed: false,
        })
        .collect();
    Some(chart::plot(
        &Plot {
            kind: "percentiles",
            title: format!("{}: latency percentiles", t.title),
            x_label: "percentile".into(),
            y_label: "latency".into(),
            series,
            note: Some(
                "from each point's latency histogram (repetitions merged); x: p50 .. p99.99 on a log scale of nines".into(),
            ),
        },
        Scale::Nines,
        Scale::LogLatency,
    ))
}

/// Most points a latency histogram overlays; a study of more has its percentile chart.
const HISTOGRAM_POINTS: usize = 8;

/// The latency histogram of a study: the share of I/Os per latency bin, per point (studies of
/// up to [`HISTOGRAM_POINTS`] points: more overlaid distributions hide each other).
pub(crate) fn histogram_chart(t: &Shaped, records: &[Record]) -> Option<String> {
    let series: Vec<(String, Vec<[u64; 2]>)> = points(t, records)
        .into_iter()
        .filter_map(|(name, _, runs)| Some((name, merged_hist(&runs)?.to_buckets())))
        .collect();
    if series.is_empty() || series.len() > HISTOGRAM_POINTS {
        return None;
    }
    Some(chart::latency_histogram(
        &format!("{}: latency histogram", t.title),
        &series,
    ))
}

/// The queue depth x threads heatmaps of a study that sweeps both: the first metric of its
/// table over the grid, one heatmap per combination of its other axes (and target).
pub(crate) fn qd_threads_heatmaps(t: &Shaped, records: &[Record]) -> Vec<String> {
    let Some(metric) = t.metrics.first() else {
        return Vec::new();
    };
    // (rest of the point, qd, threads, mean of the metric over the repetitions)
    type Cell = (String, String, String, f64);
    let mut cells: Vec<Cell> = Vec::new();
    for (_, rec, runs) in points(t, records) {
        let m = rec.meta();
        let (Some(qd), Some(threads)) = (m.value("qd"), m.value("threads")) else {
            continue;
        };
        let vals: Vec<f64> = runs.iter().filter_map(|r| (metric.get)(r)).collect();
        if vals.is_empty() {
            continue;
        }
        let mut rest: Vec<String> = m
            .point
            .iter()
            .filter(|(n, _)| n != "qd" && n != "threads")
            .map(|(n, v)| format!("{} {v}", axis::label(n)))
            .collect();
        if t.targets.len() > 1 {
            if let Some(tg) = &m.target {
                rest.push(short_target(&t.targets, tg));
            }
        }
        let mean = vals.iter().sum::<f64>() / vals.len() as f64;
        cells.push((rest.join(", "), qd.to_string(), threads.to_string(), mean));
    }
    let distinct = |f: &dyn Fn(&Cell) -> &String| {
        let mut v: Vec<String> = Vec::new();
        for c in &cells {
            if !v.contains(f(c)) {
                v.push(f(c).clone());
            }
        }
        v
    };
    let by_number = |mut v: Vec<String>| {
        v.sort_by_key(|x| x.parse::<u64>().unwrap_or(u64::MAX));
        v
    };
    let qds = by_number(distinct(&|c| &c.1));
    let threads = by_number(distinct(&|c| &c.2));
    if qds.len() < 2 || threads.len() < 2 {
        return Vec::new();
    }
    distinct(&|c| &c.0)
        .iter()
        .map(|rest| {
            let values: Vec<Vec<Option<f64>>> = threads
                .iter()
                .map(|th| {
                    qds.iter()
                        .map(|q| {
                            cells
                                .iter()
                                .find(|c| c.0 == *rest && c.1 == *q && c.2 == *th)
                                .map(|c| c.3)
                        })
                        .collect()
                })
                .collect();
            let title = if rest.is_empty() {
                format!("{}: {} by queue depth and threads", t.title, metric.label)
            } else {
                format!(
                    "{}: {} by queue depth and threads ({rest})",
                    t.title, metric.label
                )
            };
            chart::heatmap(
                &title,
                &axis::label("qd"),
                &axis::label("threads"),
                &qds,
                &threads,
                &values,
                metric.label,
            )
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
/// labelled with their queue depth or rate where the label has room.
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
            points: mine.iter().map(|p| (p.2, p.3, Some(p.1.clone()))).collect(),
            color: k,
            dashed: false,
        });
        series.push(PlotSeries {
            name: label("p99"),
            points: mine.iter().map(|p| (p.2, p.4, Some(p.1.clone()))).collect(),
            color: k,
            dashed: true,
        });
    }
    Some(chart::plot(
        &Plot {
            kind: "latency-throughput",
            title: format!("{}: latency against throughput", t.title),
            x_label: "throughput".into(),
            y_label: "latency".into(),
            series,
            note: Some(format!(
                "each point is {point_is} (labelled); solid: mean latency, dashed: p99"
            )),
        },
        Scale::Rate,
        Scale::Latency,
    ))
}

/// Everything of this module for one study's section.
pub(crate) fn study_extras(t: &Shaped, records: &[Record]) -> String {
    let mut s = String::new();
    if let Some(c) = latency_throughput_chart(t, records) {
        s.push_str(&c);
    }
    for c in qd_threads_heatmaps(t, records) {
        s.push_str(&c);
    }
    if let Some(c) = percentile_chart(t, records) {
        s.push_str(&c);
    }
    if let Some(c) = histogram_chart(t, records) {
        s.push_str(&c);
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
