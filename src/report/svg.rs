//! Hand-written SVG charts for the HTML report: line charts (log-scale x for sizes), grouped
//! bars for categories, and the diverging bars of a summary normalised to a baseline
//! (baseline = 0, like the shootout's Figure 1). No scripts; every data point is an element
//! (`circle.pt` or `rect.bar`) with a `<title>` tooltip.

use std::fmt::Write;

const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One line or one bar group member.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub name: String,
    /// One value per x category (None = no measurement).
    pub values: Vec<Option<f64>>,
}

#[derive(Debug, Clone)]
pub(crate) struct ChartData {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Category labels along x.
    pub x_labels: Vec<String>,
    /// Numeric x positions (for line charts); None draws categories evenly.
    pub x_values: Option<Vec<f64>>,
    pub log_x: bool,
    pub series: Vec<Series>,
}

/// A "nice" upper bound and tick step for 0..max.
fn nice_axis(max: f64) -> (f64, f64) {
    if max.is_nan() || max <= 0.0 || max.is_infinite() {
        return (1.0, 0.25);
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        // Enough decimals for two significant digits of small values (CPU seconds).
        let d = ((-a.log10()).floor() as usize + 2).min(9);
        format!("{v:.d$}")
    }
}

const W: f64 = 760.0;
const H: f64 = 380.0;
const ML: f64 = 78.0;
const MR: f64 = 190.0;
const MT: f64 = 40.0;
const MB: f64 = 64.0;

fn frame(out: &mut String, kind: &str, title: &str) {
    let _ = write!(
        out,
        r#"<svg class="chart {kind}" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="{t}"><rect x="0" y="0" width="{W}" height="{H}" fill="white"/><text x="{x}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{t}</text>"#,
        t = esc(title),
        x = W / 2.0
    );
}

fn y_axis(out: &mut String, label: &str, top: f64, step: f64, min: f64) {
    let plot_h = H - MT - MB;
    let span = top - min;
    let mut v = min;
    while v <= top + step * 0.01 {
        let y = MT + plot_h - (v - min) / span * plot_h;
        let _ = write!(
            out,
            r##"<line x1="{ML}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" stroke="#e0e0e0"/><text x="{tx}" y="{ty:.1}" text-anchor="end" font-size="11">{}</text>"##,
            fmt_step(v, step),
            x2 = W - MR,
            tx = ML - 6.0,
            ty = y + 4.0
        );
        v += step;
    }
    let _ = write!(
        out,
        r#"<text transform="translate(18,{y}) rotate(-90)" text-anchor="middle" font-size="12">{}</text>"#,
        esc(label),
        y = MT + plot_h / 2.0
    );
    let _ = write!(
        out,
        r##"<line x1="{ML}" x2="{ML}" y1="{MT}" y2="{b}" stroke="#333"/><line x1="{ML}" x2="{r}" y1="{b}" y2="{b}" stroke="#333"/>"##,
        b = H - MB,
        r = W - MR
    );
}

fn legend(out: &mut String, names: &[String]) {
    for (i, n) in names.iter().enumerate() {
        let y = MT + 8.0 + i as f64 * 18.0;
        let x = W - MR + 14.0;
        let mut label = n.clone();
        if label.chars().count() > 30 {
            label = label.chars().take(28).collect::<String>() + "…";
        }
        let _ = write!(
            out,
            r#"<g class="legend-item"><rect x="{x}" y="{ry}" width="12" height="12" fill="{c}"/><text x="{tx}" y="{ty}" font-size="11">{}</text></g>"#,
            esc(&label),
            ry = y - 10.0,
            c = PALETTE[i % PALETTE.len()],
            tx = x + 17.0,
            ty = y
        );
    }
}

fn x_title(out: &mut String, label: &str) {
    let _ = write!(
        out,
        r#"<text x="{x}" y="{y}" text-anchor="middle" font-size="12">{}</text>"#,
        esc(label),
        x = ML + (W - ML - MR) / 2.0,
        y = H - 12.0
    );
}

fn max_value(series: &[Series]) -> f64 {
    series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .cloned()
        .fold(0.0, f64::max)
}

/// Line chart: one polyline and one `circle.pt` per measured point.
pub(crate) fn line_chart(c: &ChartData) -> String {
    let mut out = String::new();
    frame(&mut out, "line", &c.title);
    let (top, step) = nice_axis(max_value(&c.series));
    y_axis(&mut out, &c.y_label, top, step, 0.0);
    let n = c.x_labels.len();
    let plot_w = W - ML - MR;
    let plot_h = H - MT - MB;
    let xs: Vec<f64> = match &c.x_values {
        Some(v) if n > 1 => {
            let t: Vec<f64> = v
                .iter()
                .map(|x| if c.log_x { x.max(1e-12).log2() } else { *x })
                .collect();
            let (lo, hi) = (
                t.iter().cloned().fold(f64::MAX, f64::min),
                t.iter().cloned().fold(f64::MIN, f64::max),
            );
            let span = if hi > lo { hi - lo } else { 1.0 };
            t.iter()
                .map(|x| ML + 12.0 + (x - lo) / span * (plot_w - 24.0))
                .collect()
        }
        _ => (0..n)
            .map(|i| ML + plot_w * (i as f64 + 0.5) / n.max(1) as f64)
            .collect(),
    };
    // Tick labels that do not overlap: skip a label closer than 44 px to the last one drawn
    // (log scales crowd the small sizes); the last label always shows.
    let mut last_x = f64::MIN;
    for (i, (x, l)) in xs.iter().zip(&c.x_labels).enumerate() {
        let room = 44.0f64.max(l.len() as f64 * 7.0);
        let is_last = i + 1 == n;
        if x - last_x < room || (!is_last && xs[n - 1] - x < room) {
            continue;
        }
        last_x = *x;
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{b}" y2="{b2}" stroke="#333"/><text x="{x:.1}" y="{ty}" text-anchor="middle" font-size="11">{}</text>"##,
            esc(l),
            b = H - MB,
            b2 = H - MB + 5.0,
            ty = H - MB + 18.0
        );
    }
    x_title(
        &mut out,
        &format!("{}{}", c.x_label, if c.log_x { " (log scale)" } else { "" }),
    );
    for (si, s) in c.series.iter().enumerate() {
        let color = PALETTE[si % PALETTE.len()];
        let pts: Vec<(f64, f64, f64, &String)> = s
            .values
            .iter()
            .zip(&xs)
            .zip(&c.x_labels)
            .filter_map(|((v, x), l)| v.map(|v| (*x, MT + plot_h - v / top * plot_h, v, l)))
            .collect();
        let poly: Vec<String> = pts
            .iter()
            .map(|(x, y, _, _)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = write!(
            out,
            r#"<polyline class="series" fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            poly.join(" ")
        );
        for (x, y, v, l) in pts {
            let _ = write!(
                out,
                r#"<circle class="pt" cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{color}" data-v="{v}"><title>{}: {} = {}</title></circle>"#,
                esc(&s.name),
                esc(l),
                fmt_tick(v)
            );
        }
    }
    legend(
        &mut out,
        &c.series.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
    );
    out.push_str("</svg>");
    out
}

/// Grouped vertical bars: x categories, one bar per series in each group.
pub(crate) fn bar_chart(c: &ChartData) -> String {
    let mut out = String::new();
    frame(&mut out, "bars", &c.title);
    let (top, step) = nice_axis(max_value(&c.series));
    y_axis(&mut out, &c.y_label, top, step, 0.0);
    let n = c.x_labels.len().max(1);
    let plot_w = W - ML - MR;
    let plot_h = H - MT - MB;
    let group_w = plot_w / n as f64;
    let k = c.series.len().max(1);
    let bar_w = (group_w * 0.8 / k as f64).max(1.0);
    for (i, l) in c.x_labels.iter().enumerate() {
        let gx = ML + group_w * i as f64 + group_w * 0.1;
        let mut label = l.clone();
        let max_chars = ((group_w / 6.5) as usize).max(3);
        if label.chars().count() > max_chars {
            label = label.chars().take(max_chars - 1).collect::<String>() + "…";
        }
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{y}" text-anchor="middle" font-size="10">{}</text>"#,
            esc(&label),
            x = ML + group_w * (i as f64 + 0.5),
            y = H - MB + 16.0
        );
        for (si, s) in c.series.iter().enumerate() {
            if let Some(Some(v)) = s.values.get(i) {
                let h = v / top * plot_h;
                let _ = write!(
                    out,
                    r#"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{bar_w:.1}" height="{h:.1}" fill="{c}" data-v="{v}"><title>{}: {} = {}</title></rect>"#,
                    esc(&s.name),
                    esc(l),
                    fmt_tick(*v),
                    x = gx + bar_w * si as f64,
                    y = MT + plot_h - h,
                    c = PALETTE[si % PALETTE.len()]
                );
            }
        }
    }
    x_title(&mut out, &c.x_label);
    legend(
        &mut out,
        &c.series.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
    );
    out.push_str("</svg>");
    out
}

/// Horizontal bars of percentage differences from a baseline at 0 (Figure 1 of the
/// shootout): one row per (label), one bar per compared target.
pub(crate) fn normalised_chart(
    title: &str,
    baseline: &str,
    rows: &[String],
    series: &[Series],
) -> String {
    let row_h = 16.0 * series.len().max(1) as f64 + 8.0;
    let h = MT + 30.0 + row_h * rows.len() as f64 + 40.0;
    let label_w = 230.0;
    let plot_l = label_w + 10.0;
    let plot_w = W - plot_l - 40.0;
    let lim = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .map(|v| v.abs())
        .fold(0.0, f64::max);
    let (lim, step) = nice_axis(lim.max(1.0));
    let zero = plot_l + plot_w / 2.0;
    let scale = plot_w / 2.0 / lim;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="chart normalised" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" aria-label="{t}"><rect x="0" y="0" width="{W}" height="{h}" fill="white"/><text x="{x}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{t}</text>"#,
        t = esc(title),
        x = W / 2.0
    );
    let bottom = h - 40.0;
    let mut v = -lim;
    while v <= lim + step * 0.01 {
        let x = zero + v * scale;
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{bottom}" stroke="{c}"/><text x="{x:.1}" y="{ty}" text-anchor="middle" font-size="11">{}%</text>"##,
            fmt_tick(v),
            c = if v.abs() < 1e-9 { "#333" } else { "#e0e0e0" },
            ty = bottom + 15.0
        );
        v += step;
    }
    let _ = write!(
        out,
        r#"<text x="{x}" y="{y}" text-anchor="middle" font-size="12">difference from {} (baseline = 0), percent</text>"#,
        esc(baseline),
        x = zero,
        y = h - 8.0
    );
    for (ri, r) in rows.iter().enumerate() {
        let y0 = MT + 10.0 + row_h * ri as f64;
        let mut label = r.clone();
        if label.chars().count() > 36 {
            label = label.chars().take(34).collect::<String>() + "…";
        }
        let _ = write!(
            out,
            r#"<text x="{label_w}" y="{y:.1}" text-anchor="end" font-size="11">{}</text>"#,
            esc(&label),
            y = y0 + row_h / 2.0
        );
        for (si, s) in series.iter().enumerate() {
            if let Some(Some(v)) = s.values.get(ri) {
                let x = if *v < 0.0 { zero + v * scale } else { zero };
                let _ = write!(
                    out,
                    r#"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="14" fill="{c}" data-v="{v}"><title>{}: {} = {v:+.1}%</title></rect>"#,
                    esc(&s.name),
                    esc(r),
                    y = y0 + 4.0 + 16.0 * si as f64,
                    w = (v.abs() * scale).max(1.0),
                    c = PALETTE[si % PALETTE.len()]
                );
            }
        }
    }
    // Legend at the top right.
    for (i, s) in series.iter().enumerate() {
        let _ = write!(
            out,
            r#"<g class="legend-item"><rect x="{x}" y="{y}" width="12" height="12" fill="{c}"/><text x="{tx}" y="{ty}" font-size="11">{}</text></g>"#,
            esc(&s.name),
            x = 12.0,
            y = 30.0 + 16.0 * i as f64,
            c = PALETTE[i % PALETTE.len()],
            tx = 28.0,
            ty = 40.0 + 16.0 * i as f64
        );
    }
    out.push_str("</svg>");
    out
}

/// One line of (x, y) points on a numeric x axis (a time series).
#[derive(Debug, Clone)]
pub(crate) struct XySeries {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart with a linear numeric x axis: time series of device statistics.
#[derive(Debug, Clone)]
pub(crate) struct XyChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Fixed top of the y axis (100 for percentages); None fits the data.
    pub y_max: Option<f64>,
    /// Dashed vertical lines at x with a label (e.g. the start of the timed run).
    pub markers: Vec<(f64, String)>,
    pub series: Vec<XySeries>,
}

/// Round ticks covering lo..hi: (first tick, last tick, step).
fn nice_range(lo: f64, hi: f64) -> (f64, f64, f64) {
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0, 0.25);
    }
    let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).floor() * step;
    let mut end = (hi / step).ceil() * step;
    if end <= start {
        end = start + step;
    }
    (start, end, step)
}

/// A tick value with as many decimals as its step needs (steps of 0.5: one decimal, of 2.5M:
/// `2.5M`), so neighbouring ticks never print the same text.
fn fmt_step(v: f64, step: f64) -> String {
    let (scale, suffix) = if v.abs() >= 1e6 {
        (1e6, "M")
    } else if v.abs() >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let (v, step) = (v / scale, step / scale);
    let mut d = if step >= 1.0 {
        0
    } else {
        ((-step.log10()).ceil().max(0.0) as usize).min(9)
    };
    if d < 9 && (step * 10f64.powi(d as i32)).fract().abs() > 1e-6 {
        d += 1;
    }
    format!("{v:.d$}{suffix}")
}

/// Line chart on a linear x axis with round ticks: one polyline and one `circle.pt` per
/// point (smaller dots when there are many), markers as dashed vertical lines.
pub(crate) fn xy_chart(c: &XyChart) -> String {
    let mut out = String::new();
    frame(&mut out, "line timeseries", &c.title);
    let max_y = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let (top, step) = match c.y_max {
        Some(t) if t > 0.0 && max_y <= t => {
            let (_, s) = nice_axis(t);
            (t, s)
        }
        _ => nice_axis(max_y),
    };
    y_axis(&mut out, &c.y_label, top, step, 0.0);
    let xs = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(c.markers.iter().map(|m| m.0))
        .filter(|v| v.is_finite());
    let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (lo, hi) = if lo > hi {
        (0.0, 1.0)
    } else {
        (lo.min(0.0), hi)
    };
    let (x0, x1, xstep) = nice_range(lo, hi);
    let plot_w = W - ML - MR;
    let plot_h = H - MT - MB;
    let px = |x: f64| ML + (x - x0) / (x1 - x0) * plot_w;
    let py = |y: f64| MT + plot_h - (y.clamp(0.0, top) / top) * plot_h;
    let mut v = x0;
    while v <= x1 + xstep * 0.01 {
        let x = px(v);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{b}" stroke="#f0f0f0"/><line x1="{x:.1}" x2="{x:.1}" y1="{b}" y2="{b2}" stroke="#333"/><text x="{x:.1}" y="{ty}" text-anchor="middle" font-size="11">{}</text>"##,
            fmt_step(if v.abs() < xstep * 1e-6 { 0.0 } else { v }, xstep),
            b = H - MB,
            b2 = H - MB + 5.0,
            ty = H - MB + 18.0
        );
        v += xstep;
    }
    x_title(&mut out, &c.x_label);
    for (x, label) in &c.markers {
        let x = px(*x);
        let _ = write!(
            out,
            r##"<line class="marker" x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{b}" stroke="#555" stroke-dasharray="4 3"/><text x="{tx:.1}" y="{ty}" font-size="10" fill="#555">{}</text>"##,
            esc(label),
            b = H - MB,
            tx = x + 3.0,
            ty = MT + 10.0
        );
    }
    for (si, s) in c.series.iter().enumerate() {
        let color = PALETTE[si % PALETTE.len()];
        let pts: Vec<(f64, f64, f64, f64)> = s
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|&(x, y)| (px(x), py(y), x, y))
            .collect();
        let poly: Vec<String> = pts
            .iter()
            .map(|(x, y, _, _)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = write!(
            out,
            r#"<polyline class="series" fill="none" stroke="{color}" stroke-width="1.6" points="{}"/>"#,
            poly.join(" ")
        );
        let r = if pts.len() > 60 { 1.6 } else { 2.8 };
        for (x, y, xv, yv) in pts {
            let _ = write!(
                out,
                r#"<circle class="pt" cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{color}" data-v="{yv}"><title>{}: {} = {}</title></circle>"#,
                esc(&s.name),
                fmt_tick(xv),
                fmt_tick(yv)
            );
        }
    }
    legend(
        &mut out,
        &c.series.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
    );
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_have_points_and_labels() {
        let c = ChartData {
            title: "t <1>".into(),
            x_label: "block size".into(),
            y_label: "KB/s".into(),
            x_labels: vec!["64k".into(), "256k".into(), "1m".into()],
            x_values: Some(vec![65536.0, 262144.0, 1048576.0]),
            log_x: true,
            series: vec![
                Series {
                    name: "buffered".into(),
                    values: vec![Some(1.0), Some(2.0), None],
                },
                Series {
                    name: "direct".into(),
                    values: vec![Some(3.0), Some(4.0), Some(5.0)],
                },
            ],
        };
        let s = line_chart(&c);
        assert_eq!(s.matches("class=\"pt\"").count(), 5);
        assert!(s.contains("t &lt;1&gt;") && s.contains("block size (log scale)"));
        let b = bar_chart(&c);
        assert_eq!(b.matches("class=\"bar\"").count(), 5);
        let n = normalised_chart(
            "sum",
            "/a",
            &["x".into()],
            &[Series {
                name: "/b".into(),
                values: vec![Some(-20.0)],
            }],
        );
        assert_eq!(n.matches("class=\"bar\"").count(), 1);
        assert_eq!(nice_axis(87.0), (100.0, 20.0));
    }

    #[test]
    fn xy_chart_places_every_point_on_round_ticks() {
        let c = XyChart {
            title: "vda: throughput".into(),
            x_label: "seconds".into(),
            y_label: "KB/s".into(),
            y_max: None,
            markers: vec![(0.0, "run start".into())],
            series: vec![
                XySeries {
                    name: "read KB/s".into(),
                    points: vec![(-0.5, 10.0), (0.5, 20.0), (1.5, 30.0)],
                },
                XySeries {
                    name: "write KB/s".into(),
                    points: vec![(-0.5, 0.0), (0.5, f64::NAN), (1.5, 95.0)],
                },
            ],
        };
        let s = xy_chart(&c);
        // The NaN point is left out, not drawn at a made-up place.
        assert_eq!(s.matches("class=\"pt\"").count(), 5);
        assert_eq!(s.matches("class=\"marker\"").count(), 1);
        assert_eq!(s.matches("class=\"legend-item\"").count(), 2);
        assert!(s.contains("data-v=\"95\"") && s.contains(">run start</text>"));
        // The x axis starts at a round tick at or below -0.5 and the y axis reaches 100.
        assert!(s.contains(">-0.5</text>"), "{s}");
        assert!(s.contains(">100</text>"));
        // A percentage chart keeps its fixed top.
        let pct = XyChart {
            y_max: Some(100.0),
            series: vec![XySeries {
                name: "%busy".into(),
                points: vec![(1.0, 12.0)],
            }],
            ..c
        };
        assert!(xy_chart(&pct).contains(">100</text>"));
        assert_eq!(nice_range(0.16, 4.0), (0.0, 4.0, 1.0));
        assert_eq!(fmt_step(7.5, 2.5), "7.5");
        assert_eq!(fmt_step(0.5, 0.25), "0.50");
        assert_eq!(fmt_step(12500.0, 2500.0), "12.5k");
        assert_eq!(fmt_step(2e6, 5e5), "2.0M");
        assert_eq!(fmt_step(-0.5, 0.5), "-0.5");
        assert_eq!(nice_range(-0.3, 9.7).2, 2.0);
    }
}
