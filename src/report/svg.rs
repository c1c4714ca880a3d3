//! Hand-written SVG charts for the HTML report: line charts (log-scale x for sizes), grouped
//! bars for categories, and the diverging bars of a summary normalised to a baseline
//! (baseline = 0, like the shootout's Figure 1). No scripts; every data point is an element
//! (`circle.pt` or `rect.bar`) with a `<title>` tooltip. Value axes choose their unit from
//! the data ([`Quantity`]); category and legend labels wrap, never cut; repetitions draw
//! error bars (`line.errbar`, what they span said under the chart).

pub(crate) use super::svg_normalised::normalised_chart;
use super::svg_plot::{text_lines, wrap, Quantity};
use std::fmt::Write;

pub(crate) use super::svg_plot::{esc, nice_step, PALETTE};

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

/// Error bars of a chart: per series, per x category, the (low, high) a bar spans, and what
/// that is (e.g. "min..max over 3 repetitions").
#[derive(Debug, Clone, Default)]
pub(crate) struct ErrorBars {
    pub ranges: Vec<Vec<Option<(f64, f64)>>>,
    pub note: String,
}

impl ErrorBars {
    fn get(&self, series: usize, x: usize) -> Option<(f64, f64)> {
        self.ranges.get(series)?.get(x).cloned().flatten()
    }
    fn max(&self) -> f64 {
        self.ranges
            .iter()
            .flatten()
            .flatten()
            .map(|r| r.1)
            .fold(0.0, f64::max)
    }
}

/// A vertical error bar with caps from `y_lo` to `y_hi` (pixels) at `x`.
fn error_bar(out: &mut String, x: f64, y_lo: f64, y_hi: f64, lo: f64, hi: f64, unit: &str) {
    let _ = write!(
        out,
        r##"<g class="errbar" data-lo="{lo}" data-hi="{hi}"><line x1="{x:.1}" x2="{x:.1}" y1="{y_lo:.1}" y2="{y_hi:.1}" stroke="#222" stroke-width="1.2"/><line x1="{a:.1}" x2="{b:.1}" y1="{y_lo:.1}" y2="{y_lo:.1}" stroke="#222"/><line x1="{a:.1}" x2="{b:.1}" y1="{y_hi:.1}" y2="{y_hi:.1}" stroke="#222"/><title>{} .. {} {}</title></g>"##,
        fmt_tick(lo),
        fmt_tick(hi),
        esc(unit),
        a = x - 4.0,
        b = x + 4.0
    );
}

/// The note under a chart with error bars.
fn error_note(out: &mut String, note: &str, y: f64) {
    let _ = write!(
        out,
        r##"<text class="errnote" x="{ML}" y="{y:.1}" font-size="10" fill="#555">error bars: {}</text>"##,
        esc(note)
    );
}

/// A "nice" upper bound and tick step for 0..max.
pub(super) fn nice_axis(max: f64) -> (f64, f64) {
    if max.is_nan() || max <= 0.0 || max.is_infinite() {
        return (1.0, 0.25);
    }
    let raw = max / 5.0;
    let step = nice_step(raw);
    ((max / step).ceil() * step, step)
}

pub(super) fn fmt_tick(v: f64) -> String {
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

pub(super) const W: f64 = 760.0;
const H: f64 = 380.0;
const ML: f64 = 78.0;
const MR: f64 = 190.0;
pub(super) const MT: f64 = 40.0;
const MB: f64 = 64.0;

fn frame(out: &mut String, kind: &str, title: &str) {
    frame_h(out, kind, title, H)
}

/// The frame of a chart `h` pixels high (taller than [`H`] when labels wrap).
fn frame_h(out: &mut String, kind: &str, title: &str, h: f64) {
    let _ = write!(
        out,
        r#"<svg class="chart {kind}" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" aria-label="{t}"><rect x="0" y="0" width="{W}" height="{h}" fill="white"/><text x="{x}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{t}</text>"#,
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

/// The legend at the right: names wrap at 28 characters (never cut short).
fn legend(out: &mut String, names: &[String]) {
    let mut y = MT + 8.0;
    for (i, n) in names.iter().enumerate() {
        let x = W - MR + 14.0;
        let lines = wrap(n, 28);
        let _ = write!(
            out,
            r#"<g class="legend-item"><rect x="{x}" y="{ry}" width="12" height="12" fill="{c}"/>{t}</g>"#,
            ry = y - 10.0,
            c = PALETTE[i % PALETTE.len()],
            t = text_lines(x + 17.0, y, &lines, 12.0, r#"font-size="11""#, n)
        );
        y += 6.0 + 12.0 * lines.len() as f64;
    }
}

fn x_title(out: &mut String, label: &str) {
    x_title_at(out, label, H - 12.0)
}

fn x_title_at(out: &mut String, label: &str, y: f64) {
    let _ = write!(
        out,
        r#"<text x="{x}" y="{y}" text-anchor="middle" font-size="12">{}</text>"#,
        esc(label),
        x = ML + (W - ML - MR) / 2.0,
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
    line_chart_with(c, None)
}

/// Line chart with error bars (repetitions) when given.
pub(crate) fn line_chart_with(c: &ChartData, errors: Option<&ErrorBars>) -> String {
    let mut out = String::new();
    let h = if errors.is_some() { H + 14.0 } else { H };
    frame_h(&mut out, "line", &c.title, h);
    let max = max_value(&c.series).max(errors.map_or(0.0, |e| e.max()));
    let (y_label, div) = Quantity::axis_label(&c.y_label, max);
    let unit = unit_of(&y_label);
    let (top, step) = nice_axis(max / div);
    y_axis(&mut out, &y_label, top, step, 0.0);
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
    let py = |v: f64| MT + plot_h - (v / div / top).clamp(0.0, 1.0) * plot_h;
    for (si, s) in c.series.iter().enumerate() {
        let color = PALETTE[si % PALETTE.len()];
        let pts: Vec<(f64, f64, f64, &String)> = s
            .values
            .iter()
            .zip(&xs)
            .zip(&c.x_labels)
            .filter_map(|((v, x), l)| v.map(|v| (*x, py(v), v, l)))
            .collect();
        if let Some(e) = errors {
            for (xi, x) in xs.iter().enumerate() {
                if let (Some((lo, hi)), Some(Some(_))) = (e.get(si, xi), s.values.get(xi)) {
                    error_bar(&mut out, *x, py(lo), py(hi), lo / div, hi / div, &unit);
                }
            }
        }
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
                r#"<circle class="pt" cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{color}" data-v="{v}"><title>{}: {} = {} {}</title></circle>"#,
                esc(&s.name),
                esc(l),
                fmt_tick(v / div),
                esc(&unit)
            );
        }
    }
    legend(
        &mut out,
        &c.series.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
    );
    if let Some(e) = errors {
        error_note(&mut out, &e.note, h - 4.0);
    }
    out.push_str("</svg>");
    out
}

/// The unit at the end of an axis label ("read, MiB/s" -> "MiB/s"), for tooltips.
fn unit_of(label: &str) -> String {
    label
        .rsplit_once(", ")
        .map(|(_, u)| u.to_string())
        .unwrap_or_default()
}

/// Grouped vertical bars: x categories, one bar per series in each group.
#[cfg(test)]
pub(crate) fn bar_chart(c: &ChartData) -> String {
    bar_chart_with(c, None)
}

/// Grouped bars with error bars (repetitions) when given. Category labels wrap onto as many
/// lines as they need (the chart grows), never cut to "cr...".
pub(crate) fn bar_chart_with(c: &ChartData, errors: Option<&ErrorBars>) -> String {
    let n = c.x_labels.len().max(1);
    let plot_w = W - ML - MR;
    let plot_h = H - MT - MB;
    let group_w = plot_w / n as f64;
    let max_chars = ((group_w / 6.0) as usize).max(3);
    let wrapped: Vec<Vec<String>> = c.x_labels.iter().map(|l| wrap(l, max_chars)).collect();
    let extra_lines = wrapped.iter().map(|l| l.len()).max().unwrap_or(1) - 1;
    let h = H + 11.0 * extra_lines as f64 + if errors.is_some() { 14.0 } else { 0.0 };
    let mut out = String::new();
    frame_h(&mut out, "bars", &c.title, h);
    let max = max_value(&c.series).max(errors.map_or(0.0, |e| e.max()));
    let (y_label, div) = Quantity::axis_label(&c.y_label, max);
    let unit = unit_of(&y_label);
    let (top, step) = nice_axis(max / div);
    y_axis(&mut out, &y_label, top, step, 0.0);
    let k = c.series.len().max(1);
    let bar_w = (group_w * 0.8 / k as f64).max(1.0);
    let py = |v: f64| MT + plot_h - (v / div / top).clamp(0.0, 1.0) * plot_h;
    for (i, l) in c.x_labels.iter().enumerate() {
        let gx = ML + group_w * i as f64 + group_w * 0.1;
        out.push_str(&text_lines(
            ML + group_w * (i as f64 + 0.5),
            H - MB + 16.0,
            &wrapped[i],
            11.0,
            r#"class="xcat" text-anchor="middle" font-size="10""#,
            l,
        ));
        for (si, s) in c.series.iter().enumerate() {
            if let Some(Some(v)) = s.values.get(i) {
                let y = py(*v);
                let x = gx + bar_w * si as f64;
                let _ = write!(
                    out,
                    r#"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{bar_w:.1}" height="{bh:.1}" fill="{c}" data-v="{v}"><title>{}: {} = {} {}</title></rect>"#,
                    esc(&s.name),
                    esc(l),
                    fmt_tick(*v / div),
                    esc(&unit),
                    bh = MT + plot_h - y,
                    c = PALETTE[si % PALETTE.len()]
                );
                if let Some((lo, hi)) = errors.and_then(|e| e.get(si, i)) {
                    error_bar(
                        &mut out,
                        x + bar_w / 2.0,
                        py(lo),
                        py(hi),
                        lo / div,
                        hi / div,
                        &unit,
                    );
                }
            }
        }
    }
    let bottom = h - if errors.is_some() { 14.0 } else { 0.0 };
    x_title_at(&mut out, &c.x_label, bottom - 12.0);
    legend(
        &mut out,
        &c.series.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
    );
    if let Some(e) = errors {
        error_note(&mut out, &e.note, h - 4.0);
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
    let step = nice_step(raw);
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
            y_label: "KiB/s".into(),
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
    fn bar_labels_wrap_whole_and_repetitions_draw_error_bars() {
        let names = [
            "createfiles",
            "filemicro_seqread",
            "fileserver",
            "networkfs",
            "oltp",
            "varmail",
            "videoserver",
            "webproxy",
            "webserver",
            "copyfiles",
            "makedirs",
            "removedirs",
        ];
        let c = ChartData {
            title: "personalities".into(),
            x_label: "personality".into(),
            y_label: "KiB/s".into(),
            x_labels: names.iter().map(|s| s.to_string()).collect(),
            x_values: None,
            log_x: false,
            series: vec![Series {
                name: "zfs".into(),
                values: names.iter().map(|_| Some(2.5e6)).collect(),
            }],
        };
        let errors = ErrorBars {
            ranges: vec![names.iter().map(|_| Some((2.0e6, 3.0e6))).collect()],
            note: "min..max over 3 repetitions".into(),
        };
        let b = bar_chart_with(&c, Some(&errors));
        for n in names {
            assert!(b.contains(&format!("data-label=\"{n}\"")), "{n}");
            // The lines of a label put together give the label back.
            let at = b.find(&format!("data-label=\"{n}\">")).unwrap();
            let text = &b[at..at + b[at..].find("</text>").unwrap()];
            let joined: String = text
                .split("\">")
                .skip(1)
                .map(|p| {
                    p.trim_end_matches("</tspan><tspan x=")
                        .split('<')
                        .next()
                        .unwrap()
                })
                .collect();
            assert_eq!(joined, n, "{text}");
        }
        assert!(!b.contains('…'), "no label is cut");
        // 2.5 million KiB/s is drawn in GiB/s.
        assert!(b.contains(">GiB/s</text>"), "{b}");
        assert_eq!(b.matches("class=\"errbar\"").count(), names.len());
        assert!(b.contains("error bars: min..max over 3 repetitions"));
        let l = line_chart_with(
            &ChartData {
                x_values: Some((1..=12).map(|i| i as f64).collect()),
                ..c
            },
            Some(&errors),
        );
        assert_eq!(l.matches("class=\"errbar\"").count(), names.len());
    }

    #[test]
    fn xy_chart_places_every_point_on_round_ticks() {
        let c = XyChart {
            title: "vda: throughput".into(),
            x_label: "seconds".into(),
            y_label: "KiB/s".into(),
            y_max: None,
            markers: vec![(0.0, "run start".into())],
            series: vec![
                XySeries {
                    name: "read KiB/s".into(),
                    points: vec![(-0.5, 10.0), (0.5, 20.0), (1.5, 30.0)],
                },
                XySeries {
                    name: "write KiB/s".into(),
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
