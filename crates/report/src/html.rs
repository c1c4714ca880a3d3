//! The self-contained HTML pages (no scripts, no external files). The report: per study the
//! paper-shaped table and SVG charts of each metric against the swept axis, and, when a
//! baseline target is named, charts normalised to it (baseline = 0); advise and device
//! statistics sections come from [`super::advise_html`] and [`super::iostat_html`]. And the
//! page of `fsbench advise --format html` around its section.

use super::chart::{self, esc, ChartData, ErrorBars, Series};
use super::table::Shaped;
use crate::sweep::axis;
use crate::sweep::record::Record;
use std::fmt::Write;

#[derive(Debug, Clone, Default)]
pub(crate) struct HtmlOptions {
    pub title: String,
    pub baseline: Option<String>,
    /// Lines shown under the title (suite, scale, missing personalities, ...).
    pub preface: Vec<String>,
}

/// Full key (axis -> value) of a cell.
fn cell_key(t: &Shaped, ri: usize, ci: usize) -> Vec<(String, String)> {
    let mut k: Vec<(String, String)> = t
        .row_axes
        .iter()
        .cloned()
        .zip(t.row_keys[ri].iter().cloned())
        .collect();
    k.extend(
        t.col_axes
            .iter()
            .cloned()
            .zip(t.col_keys[ci].iter().cloned()),
    );
    k
}

fn numeric(axis_name: &str, v: &str) -> Option<f64> {
    if axis::is_size_axis(axis_name) {
        crate::units::parse_size(v).ok().map(|b| b as f64)
    } else {
        v.parse::<f64>().ok()
    }
}

/// The x axis of a study's charts: the chart's stated x, else the first row axis.
fn x_axis(t: &Shaped) -> Option<String> {
    let all: Vec<&String> = t.row_axes.iter().chain(t.col_axes.iter()).collect();
    if let Some(x) = &t.chart.x {
        if let Ok(c) = axis::canonical(x) {
            if all.iter().any(|a| **a == c) {
                return Some(c);
            }
        }
    }
    t.row_axes
        .iter()
        .find(|a| *a != "target")
        .cloned()
        .or_else(|| t.row_axes.first().cloned())
}

/// Chart data of metric `mi` (x = the x axis, one series per combination of the other
/// axes), and the min..max of repeated points as error bars (None when
/// no point was repeated).
pub(crate) fn chart_data_with_errors(
    t: &Shaped,
    mi: usize,
) -> Option<(ChartData, Option<ErrorBars>)> {
    let x = x_axis(t)?;
    let mut x_labels: Vec<String> = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    let mut points: Vec<(String, String, f64)> = Vec::new();
    let mut ranges: Vec<(String, String, (f64, f64))> = Vec::new();
    let mut most_repeats = 0;
    for ri in 0..t.row_keys.len() {
        for ci in 0..t.col_keys.len() {
            let key = cell_key(t, ri, ci);
            let xv = key.iter().find(|(a, _)| *a == x).map(|(_, v)| v.clone())?;
            if !x_labels.contains(&xv) {
                x_labels.push(xv.clone());
            }
            let name: Vec<String> = key
                .iter()
                .filter(|(a, _)| *a != x)
                .map(|(a, v)| {
                    if a == "target" {
                        super::study_charts::short_target(&t.targets, v)
                    } else if t.col_axes.contains(a) && numeric(a, v).is_none() {
                        // A word ("direct") names itself; a bare number needs its axis.
                        v.clone()
                    } else {
                        format!("{} {v}", axis::label(a))
                    }
                })
                .collect();
            let name = if name.is_empty() {
                t.metrics[mi].label.to_string()
            } else {
                name.join(", ")
            };
            if !series.iter().any(|s| s.name == name) {
                series.push(Series {
                    name: name.clone(),
                    values: Vec::new(),
                });
            }
            let cell = &t.cells[ri][ci];
            if let Some(r) = cell.range(mi) {
                ranges.push((name.clone(), xv.clone(), r));
                most_repeats = most_repeats.max(cell.values[mi].len());
            }
            if let Some(v) = cell.mean(mi) {
                points.push((name, xv, v));
            }
        }
    }
    if points.is_empty() {
        return None;
    }
    for s in &mut series {
        s.values = x_labels
            .iter()
            .map(|xl| {
                points
                    .iter()
                    .find(|(n, xv, _)| *n == s.name && xv == xl)
                    .map(|p| p.2)
            })
            .collect();
    }
    series.retain(|s| s.values.iter().any(|v| v.is_some()));
    let errors = (!ranges.is_empty()).then(|| ErrorBars {
        ranges: series
            .iter()
            .map(|s| {
                x_labels
                    .iter()
                    .map(|xl| {
                        ranges
                            .iter()
                            .find(|(n, xv, _)| *n == s.name && xv == xl)
                            .map(|r| r.2)
                    })
                    .collect()
            })
            .collect(),
        note: format!("min..max over the repetitions of a point (up to {most_repeats}); the line is their mean"),
    });
    let nums: Option<Vec<f64>> = x_labels.iter().map(|l| numeric(&x, l)).collect();
    let bars = t.chart.kind.as_deref() == Some("bars") || nums.is_none() || x_labels.len() < 2;
    let log_x = !bars
        && (axis::is_size_axis(&x)
            || nums.as_ref().is_some_and(|n| {
                let (lo, hi) = (
                    n.iter().cloned().fold(f64::MAX, f64::min),
                    n.iter().cloned().fold(0.0, f64::max),
                );
                lo > 0.0 && hi / lo >= 8.0
            }));
    let m = t.metrics[mi];
    let chart = ChartData {
        title: format!("{}: {}", t.title, m.label),
        x_label: if axis::is_size_axis(&x) {
            format!("{}, bytes", axis::label(&x))
        } else {
            axis::label(&x)
        },
        y_label: m.label.to_string(),
        x_labels,
        x_values: if bars { None } else { nums },
        log_x,
        series,
    };
    Some((chart, errors))
}

/// Percent difference of metric 0 from the baseline target, per point, per other target.
pub(crate) fn normalised(t: &Shaped, baseline: &str) -> Option<(Vec<String>, Vec<Series>)> {
    let base = t.targets.iter().find(|x| same_target(x, baseline))?.clone();
    if t.targets.len() < 2 {
        return None;
    }
    let others: Vec<String> = t.targets.iter().filter(|x| **x != base).cloned().collect();
    // Values of metric 0 by (point key without target, target).
    let mut rows: Vec<String> = Vec::new();
    let mut vals: Vec<(String, String, f64)> = Vec::new();
    for ri in 0..t.row_keys.len() {
        for ci in 0..t.col_keys.len() {
            let key = cell_key(t, ri, ci);
            let target = key
                .iter()
                .find(|(a, _)| a == "target")
                .map(|(_, v)| v.clone())?;
            let label: Vec<String> = key
                .iter()
                .filter(|(a, _)| a != "target")
                .map(|(_, v)| v.clone())
                .collect();
            let label = label.join(" ");
            if let Some(v) = t.cells[ri][ci].mean(0) {
                if !rows.contains(&label) {
                    rows.push(label.clone());
                }
                vals.push((label, target, v));
            }
        }
    }
    let series: Vec<Series> = others
        .iter()
        .map(|o| Series {
            name: o.clone(),
            values: rows
                .iter()
                .map(|r| {
                    let b = vals.iter().find(|(l, tg, _)| l == r && *tg == base)?.2;
                    let v = vals.iter().find(|(l, tg, _)| l == r && tg == o)?.2;
                    (b > 0.0).then(|| (v / b - 1.0) * 100.0)
                })
                .collect(),
        })
        .collect();
    series
        .iter()
        .any(|s| s.values.iter().any(|v| v.is_some()))
        .then_some((rows, series))
}

fn same_target(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
        || std::fs::canonicalize(a)
            .ok()
            .is_some_and(|x| std::fs::canonicalize(b).ok() == Some(x))
}

/// The study's table: the head and rows as the text table has them (row axes, the marker
/// column of the findings when some point has one, the figures), the cells of skipped and
/// failed points marked by class.
fn html_table(t: &Shaped) -> String {
    let labels = t.label_columns();
    let mut s = String::from("<div class=\"tablewrap\"><table><thead><tr>");
    for (i, h) in t.marked_header().iter().enumerate() {
        let _ = write!(
            s,
            "<th{}>{}</th>",
            if i < labels { " class=\"key\"" } else { "" },
            esc(h)
        );
    }
    s.push_str("</tr></thead><tbody>");
    for (ri, row) in t.marked_body().iter().enumerate() {
        s.push_str("<tr>");
        for k in &row[..labels] {
            let _ = write!(s, "<td class=\"key\">{}</td>", esc(k));
        }
        for (mi, _) in t.metrics.iter().enumerate() {
            for ci in 0..t.col_keys.len() {
                let c = &t.cells[ri][ci];
                let class = if c.skipped.is_some() && c.mean(mi).is_none() {
                    " class=\"skipped\""
                } else if c.failed {
                    " class=\"failed\""
                } else {
                    ""
                };
                let text = &row[labels + mi * t.col_keys.len() + ci];
                let _ = write!(s, "<td{class}>{}</td>", esc(text));
            }
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
    s
}

pub(crate) const STYLE: &str = "body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1100px;color:#222}h1{font-size:24px}h2{font-size:19px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:36px}table{border-collapse:collapse;font-size:13px;margin:10px 0}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f2f2f2}td.key,th.key{text-align:left}td.skipped{color:#999;font-style:italic}td.failed{color:#b00}.meta{color:#555;font-size:13px}.charts svg{display:block;margin:12px 0;border:1px solid #eee}.notes{font-size:12px;color:#555}nav li{font-size:13px}.tablewrap{overflow-x:auto;max-width:100%}p.fixed{font-size:13px;background:#f7f7f7;border-left:3px solid #999;padding:6px 10px}";

/// Render the report.
#[cfg(test)]
pub(crate) fn render(records: &[Record], tables: &[Shaped], o: &HtmlOptions) -> String {
    render_with_advice(records, tables, o, &[])
}

/// The line naming the machine, kernel and targets the results came from.
fn environment_line(s: &mut String, r: &crate::result::RunResult) {
    let e = &r.environment;
    let fs: Vec<String> = e
        .targets
        .iter()
        .map(|t| format!("{} ({} on {})", t.path, t.fs_type, t.device))
        .collect();
    let _ = write!(
        s,
        "<p class=\"meta\">host {} · kernel {} · {} × {} · {:.1} GiB RAM · fsbench {}<br>targets: {}</p>",
        esc(&e.hostname),
        esc(&e.kernel),
        e.cpus,
        esc(&e.cpu_model),
        e.mem_bytes as f64 / (1u64 << 30) as f64,
        esc(&r.fsbench_version),
        esc(&fs.join("; "))
    );
}

/// The table of contents: studies, advise sections, device statistics.
fn nav(s: &mut String, tables: &[Shaped], advice: &[crate::advise::Advice], observe: bool) {
    s.push_str("<nav><ul>");
    for t in tables {
        let _ = write!(
            s,
            "<li><a href=\"#{}\">{}</a></li>",
            esc(&anchor(t)),
            esc(&t.title)
        );
    }
    for (i, a) in advice.iter().enumerate() {
        let _ = write!(
            s,
            "<li><a href=\"#{}\">{}</a></li>",
            super::advise_html::anchor(i),
            esc(&super::advise_html::title(a))
        );
    }
    if observe {
        let _ = write!(
            s,
            "<li><a href=\"#{}\">Device statistics during the runs</a></li>",
            super::iostat_html::ANCHOR
        );
    }
    s.push_str("</ul></nav>");
}

/// The summary normalised to the baseline: one bar per study (geometric mean of ratios).
fn baseline_summary(s: &mut String, tables: &[Shaped], b: &str) {
    let mut rows = Vec::new();
    let mut per_target: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for t in tables {
        if let Some((_, series)) = normalised(t, b) {
            rows.push(format!("{} ({})", t.title, t.metrics[0].label));
            for sr in series {
                let logs: Vec<f64> = sr
                    .values
                    .iter()
                    .flatten()
                    .map(|p| (1.0 + p / 100.0).max(1e-9).ln())
                    .collect();
                let g = (!logs.is_empty())
                    .then(|| ((logs.iter().sum::<f64>() / logs.len() as f64).exp() - 1.0) * 100.0);
                match per_target.iter_mut().find(|(n, _)| *n == sr.name) {
                    Some((_, v)) => {
                        v.resize(rows.len() - 1, None);
                        v.push(g)
                    }
                    None => {
                        let mut v = vec![None; rows.len() - 1];
                        v.push(g);
                        per_target.push((sr.name, v));
                    }
                }
            }
        }
    }
    if !rows.is_empty() {
        let series: Vec<Series> = per_target
            .into_iter()
            .map(|(name, values)| Series { name, values })
            .collect();
        s.push_str(
            "<h2 id=\"summary\">Summary normalised to the baseline</h2><div class=\"charts\">",
        );
        s.push_str(&chart::normalised_chart(
            &format!("Summary ({} = 0)", b),
            b,
            &rows,
            &series,
        ));
        s.push_str("</div><p class=\"notes\">Each bar is the geometric mean over a study's points of the ratio to the baseline, minus one; positive means a higher value of the study's first metric.</p>");
    }
}

/// One study: its fixed parameters, its table, up to three charts (error bars when points
/// were repeated), the latency charts, the normalised chart and its notes.
fn study_section(s: &mut String, t: &Shaped, records: &[Record], baseline: Option<&str>) {
    let _ = write!(
        s,
        "<section class=\"study\" id=\"{}\"><h2>{}</h2>",
        esc(&anchor(t)),
        esc(&t.title)
    );
    s.push_str(&super::study_charts::fixed_block(t, records));
    s.push_str(&html_table(t));
    s.push_str("<div class=\"charts\">");
    for mi in 0..t.metrics.len().min(3) {
        if let Some((c, errors)) = chart_data_with_errors(t, mi) {
            s.push_str(&chart::metric_chart(&c, errors.as_ref()));
        }
    }
    s.push_str(&super::study_charts::study_extras(t, records));
    if let Some(b) = baseline {
        if let Some((rows, series)) = normalised(t, b) {
            s.push_str(&chart::normalised_chart(
                &format!("{}: {} normalised ({b} = 0)", t.title, t.metrics[0].label),
                b,
                &rows,
                &series,
            ));
        }
    }
    s.push_str("</div>");
    if !t.notes.is_empty() {
        s.push_str("<ul class=\"notes\">");
        for n in &t.notes {
            let _ = write!(s, "<li>{}</li>", esc(n));
        }
        s.push_str("</ul>");
    }
    s.push_str("</section>");
}

/// Render the report with `fsbench advise` documents as sections of their own; results with
/// `--iostat` samples get their device statistics charted over time.
pub(crate) fn render_with_advice(
    records: &[Record],
    tables: &[Shaped],
    o: &HtmlOptions,
    advice: &[crate::advise::Advice],
) -> String {
    let observe = super::iostat_html::section(records);
    let timeseries = super::timeseries::section(records);
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>",
        t = esc(&o.title)
    );
    if let Some(r) = records.iter().find_map(|r| r.result()) {
        environment_line(&mut s, r);
    }
    for p in &o.preface {
        let _ = write!(s, "<p class=\"meta\">{}</p>", esc(p));
    }
    nav(&mut s, tables, advice, observe.is_some());
    // The summary normalised to the baseline: one bar per study (geometric mean of ratios).
    if let Some(b) = &o.baseline {
        baseline_summary(&mut s, tables, b);
    }
    for t in tables {
        study_section(&mut s, t, records, o.baseline.as_deref());
    }
    for (i, a) in advice.iter().enumerate() {
        s.push_str(&super::advise_html::section(
            a,
            &super::advise_html::anchor(i),
        ));
    }
    if let Some(o) = observe {
        s.push_str(&o);
    }
    if let Some(t) = timeseries {
        s.push_str(&t);
    }
    s.push_str("</body></html>\n");
    s
}

/// The page of `fsbench advise PATH --format html`: the advise section with the report's style.
pub(crate) fn advise_page(a: &crate::advise::Advice) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>fsbench advise: {t}</title><style>{STYLE}{extra}</style></head><body><h1>fsbench advise: {t}</h1><p class=\"meta\">fsbench {v}</p>{s}</body></html>\n",
        t = esc(&a.topology.path),
        extra = super::advise_html::STYLE_EXTRA,
        v = env!("CARGO_PKG_VERSION"),
        s = super::advise_html::section(a, &super::advise_html::anchor(0))
    )
}

fn anchor(t: &Shaped) -> String {
    format!(
        "study-{}",
        t.study.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{shape_all, tests::fake, Shape};

    #[test]
    fn report_has_one_chart_per_metric_and_normalised_charts() {
        let mut recs = Vec::new();
        for t in ["/a", "/b"] {
            for bs in ["64k", "256k", "1m"] {
                for c in ["buffered", "direct"] {
                    let v = if t == "/a" { 100.0 } else { 150.0 };
                    recs.push(fake("s1", &[("bs", bs), ("cache", c)], v, 1.0, Some(t)));
                }
            }
        }
        let tables = shape_all(&recs, &Shape::default()).unwrap();
        let html = render(
            &recs,
            &tables,
            &HtmlOptions {
                title: "r".into(),
                baseline: Some("/a".into()),
                preface: vec![],
            },
        );
        assert_eq!(html.matches("<svg class=\"chart line\"").count(), 2);
        assert_eq!(html.matches("<svg class=\"chart normalised\"").count(), 2);
        // 2 targets x 2 policies = 4 lines of 3 points, twice.
        assert_eq!(html.matches("class=\"pt\"").count(), 24);
        assert!(html.contains("data-v=\"50\""), "normalised +50%");
        assert!(!html.contains("<script"));
    }

    #[test]
    fn personalities_become_grouped_bars_per_target() {
        let mut recs = Vec::new();
        for t in ["/fs/zfs", "/fs/vxfs"] {
            for p in ["fileserver", "varmail", "oltp"] {
                let mut r = fake("personalities", &[("personality", p)], 10.0, 1.0, Some(t));
                if let Record::Run { meta, .. } = &mut r {
                    meta.chart.kind = Some("bars".into());
                    meta.table.rows = vec!["personality".into()];
                    meta.table.cols = vec![];
                    meta.table.metrics = vec!["ops_per_s".into(), "cpu_us_per_op".into()];
                }
                recs.push(r);
            }
        }
        let tables = shape_all(&recs, &Shape::default()).unwrap();
        let html = render(
            &recs,
            &tables,
            &HtmlOptions {
                title: "s".into(),
                baseline: Some("/fs/zfs".into()),
                preface: vec![],
            },
        );
        assert_eq!(html.matches("<svg class=\"chart bars\"").count(), 2);
        // 3 personalities x 2 targets per bar chart, plus 3 normalised bars and 1 summary bar.
        assert_eq!(html.matches("class=\"bar\"").count(), 2 * 6 + 3 + 1);
        assert!(
            html.contains(">zfs</text>") && html.contains(">vxfs</text>"),
            "short legend names"
        );
    }

    #[test]
    fn the_advise_page_wraps_its_section_in_the_report_style() {
        let a = crate::advise_html::tests::measured_advice();
        let page = advise_page(&a);
        assert!(page.starts_with("<!DOCTYPE html>\n<html lang=\"en\"><head>"));
        assert!(page.contains(&format!(
            "<style>{STYLE}{}</style>",
            crate::advise_html::STYLE_EXTRA
        )));
        assert!(page.contains(&crate::advise_html::section(&a, "advise-0")));
        assert!(page.ends_with("</section></body></html>\n"));
    }
}
