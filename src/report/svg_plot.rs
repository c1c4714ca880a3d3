//! Numeric (x, y) plots for the HTML report with log axes and units chosen from the data:
//! the latency percentile chart (x on a "nines" scale, p50 .. p99.99) and the
//! latency-vs-throughput chart of queue-depth sweeps. Also the unit scaling every chart's
//! value axis uses (KiB/s -> MiB/s -> GiB/s, binary as the tables, us/ms/s, k/M counts), and label wrapping, so no
//! label is ever cut short.

use std::fmt::Write;

/// The smallest 1, 2, 2.5 or 5 times a power of ten at or above `raw`: the step of every
/// chart's value ticks.
pub(crate) fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The colours of chart series, in order (every chart of the report).
pub(crate) const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// What a chart's values measure, for choosing a readable unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Quantity {
    /// Bytes per second; values given in units of `base` bytes (1024 for KB/s).
    Rate { base: f64 },
    /// Time; values given in units of `base` seconds (1e-3 for ms, 1e-9 for ns).
    Time { base: f64 },
    /// A count or rate of operations (IOPS, ops/s): k and M suffixes.
    Count,
    /// Anything else: shown as given.
    Plain,
}

impl Quantity {
    /// What a metric label ("KB/s", "mean latency ms", "CPU s", "IOPS") measures, and the
    /// label with its unit taken out ("mean latency").
    pub(crate) fn of_label(label: &str) -> (Quantity, String) {
        let strip = |suffix: &str| label.trim_end_matches(suffix).trim_end().to_string();
        // KiB/s and MiB/s, and the "KB/s"/"MB/s" that older stored results used for the same
        // 1024-based figures.
        if let Some(u) = ["KiB/s", "KB/s"].into_iter().find(|u| label.ends_with(u)) {
            (Quantity::Rate { base: 1024.0 }, strip(u))
        } else if let Some(u) = ["MiB/s", "MB/s"].into_iter().find(|u| label.ends_with(u)) {
            (
                Quantity::Rate {
                    base: 1024.0 * 1024.0,
                },
                strip(u),
            )
        } else if label.ends_with(" ms") {
            (Quantity::Time { base: 1e-3 }, strip("ms"))
        } else if label.ends_with(" us") || label.ends_with(" us/op") {
            (Quantity::Plain, label.to_string())
        } else if label.ends_with(" s") {
            (Quantity::Time { base: 1.0 }, strip("s"))
        } else if label == "IOPS" || label.ends_with("/s") || label.ends_with("calls") {
            (Quantity::Count, label.to_string())
        } else {
            (Quantity::Plain, label.to_string())
        }
    }

    /// The divisor that brings values up to `max` into a readable range, and its unit name.
    pub(crate) fn scale(self, max: f64) -> (f64, &'static str) {
        let max = if max.is_finite() && max > 0.0 {
            max
        } else {
            1.0
        };
        match self {
            Quantity::Rate { base } => {
                let bytes = max * base;
                let units = [
                    (1.0, "B/s"),
                    (1024.0, "KiB/s"),
                    (1024.0 * 1024.0, "MiB/s"),
                    (1024.0 * 1024.0 * 1024.0, "GiB/s"),
                    (1024f64.powi(4), "TiB/s"),
                ];
                let (f, u) = units
                    .iter()
                    .rev()
                    .find(|(f, _)| bytes >= *f)
                    .unwrap_or(&units[0]);
                (f / base, u)
            }
            Quantity::Time { base } => {
                let s = max * base;
                let units = [(1e-9, "ns"), (1e-6, "us"), (1e-3, "ms"), (1.0, "s")];
                let (f, u) = units
                    .iter()
                    .rev()
                    .find(|(f, _)| s >= *f)
                    .unwrap_or(&units[0]);
                (f / base, u)
            }
            Quantity::Count => {
                if max >= 1e6 {
                    (1e6, "M")
                } else if max >= 1e3 {
                    (1e3, "k")
                } else {
                    (1.0, "")
                }
            }
            Quantity::Plain => (1.0, ""),
        }
    }

    /// An axis label with the unit chosen for values up to `max`, and the divisor.
    pub(crate) fn axis_label(label: &str, max: f64) -> (String, f64) {
        let (q, name) = Quantity::of_label(label);
        let (div, unit) = q.scale(max);
        let text = match q {
            Quantity::Count if unit.is_empty() => name,
            Quantity::Count => format!("{name} (×1{})", if unit == "k" { "000" } else { "M" }),
            Quantity::Plain => name,
            _ if name.is_empty() => unit.to_string(),
            _ => format!("{name}, {unit}"),
        };
        (text, div)
    }
}

/// Split a label into lines of at most `width` characters, at spaces, commas, slashes,
/// dashes or underscores when it can, else anywhere: every character is kept.
pub(crate) fn wrap(label: &str, width: usize) -> Vec<String> {
    let width = width.max(3);
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    // Pieces that end after a break character (the break stays with the piece before it).
    let mut pieces: Vec<String> = Vec::new();
    let mut p = String::new();
    for c in label.chars() {
        p.push(c);
        if matches!(c, ' ' | ',' | '/' | '-' | '_' | '=') {
            pieces.push(std::mem::take(&mut p));
        }
    }
    if !p.is_empty() {
        pieces.push(p);
    }
    for piece in pieces {
        if cur.chars().count() + piece.trim_end().chars().count() > width && !cur.is_empty() {
            lines.push(cur.trim_end().to_string());
            cur = String::new();
        }
        cur.push_str(&piece);
        while cur.trim_end().chars().count() > width {
            let head: String = cur.chars().take(width).collect();
            let tail: String = cur.chars().skip(width).collect();
            lines.push(head.trim_end().to_string());
            cur = tail.trim_start().to_string();
        }
    }
    if !cur.trim().is_empty() || lines.is_empty() {
        lines.push(cur.trim_end().to_string());
    }
    lines
}

/// A `<text>` of several lines (one `<tspan>` each), the first at `y`.
pub(crate) fn text_lines(
    x: f64,
    y: f64,
    lines: &[String],
    line_h: f64,
    attrs: &str,
    full: &str,
) -> String {
    let mut s = format!(
        r#"<text x="{x:.1}" y="{y:.1}" {attrs} data-label="{}">"#,
        esc(full)
    );
    for (i, l) in lines.iter().enumerate() {
        let _ = write!(
            s,
            r#"<tspan x="{x:.1}" dy="{}">{}</tspan>"#,
            if i == 0 { 0.0 } else { line_h },
            esc(l)
        );
    }
    s.push_str("</text>");
    s
}

/// One line of a plot: points with optional labels drawn beside them.
#[derive(Debug, Clone)]
pub(crate) struct PlotSeries {
    pub name: String,
    pub points: Vec<(f64, f64, Option<String>)>,
    /// Colour index (lines of one thing, e.g. mean and p99 of one series, share it).
    pub color: usize,
    pub dashed: bool,
}

/// A plot on numeric axes.
#[derive(Debug, Clone)]
pub(crate) struct Plot {
    /// CSS class beside `chart` (`percentiles`, `latency-throughput`).
    pub kind: &'static str,
    pub title: String,
    /// Axis labels with their unit (see [`Quantity::of_label`]).
    pub x_label: String,
    pub y_label: String,
    pub x_log: bool,
    pub y_log: bool,
    /// Fixed x ticks (value, text); None: ticks from the data in the chosen unit.
    pub x_ticks: Option<Vec<(f64, String)>>,
    pub series: Vec<PlotSeries>,
    /// A line under the plot saying how to read it.
    pub note: Option<String>,
}

const W: f64 = 760.0;
const ML: f64 = 78.0;
const MR: f64 = 200.0;
const MT: f64 = 40.0;
const PLOT_H: f64 = 276.0;

/// Ticks of a log axis over lo..hi: 1, 2, 5 per decade (only decades when it spans many).
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let steps: &[f64] = if b - a > 2 { &[1.0] } else { &[1.0, 2.0, 5.0] };
    let mut t = Vec::new();
    for e in a..=b {
        for m in steps {
            let v = m * 10f64.powi(e);
            if v >= lo * 0.999 && v <= hi * 1.001 {
                t.push(v);
            }
        }
    }
    t
}

/// Linear ticks over 0..max (round steps).
fn lin_ticks(max: f64) -> (f64, Vec<f64>) {
    let max = if max > 0.0 && max.is_finite() {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let step = nice_step(raw);
    let top = (max / step).ceil() * step;
    let n = (top / step).round() as usize;
    (top, (0..=n).map(|i| i as f64 * step).collect())
}

/// A tick value in a chosen unit, with the decimals it needs.
pub(crate) fn fmt_scaled(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || a >= 100.0 || (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        let d = ((-a.log10()).floor() as usize + 2).min(9);
        format!("{v:.d$}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// One axis: where values land, and the ticks.
struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Axis {
    fn new(values: &[f64], log: bool) -> Axis {
        let finite: Vec<f64> = values
            .iter()
            .cloned()
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let min = finite.iter().cloned().fold(f64::MAX, f64::min);
        let max = finite.iter().cloned().fold(0.0, f64::max);
        if log && !finite.is_empty() {
            let lo = 10f64.powf(min.log10().floor());
            let mut hi = 10f64.powf(max.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
            Axis {
                log,
                lo,
                hi,
                ticks: log_ticks(lo, hi),
            }
        } else {
            let (top, ticks) = lin_ticks(max);
            Axis {
                log: false,
                lo: 0.0,
                hi: top,
                ticks,
            }
        }
    }

    /// 0..1 along the axis.
    fn frac(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        f.clamp(0.0, 1.0)
    }
}

/// Draw a plot: gridlines, ticks, one polyline per series, a `circle.pt` per point with a
/// `<title>`, point labels, and a legend whose names wrap instead of being cut.
pub(crate) fn plot(c: &Plot) -> String {
    let xs: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let ys: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    let mut xa = Axis::new(&xs, c.x_log);
    if let Some(t) = &c.x_ticks {
        let lo = t.iter().map(|p| p.0).fold(f64::MAX, f64::min);
        let hi = t.iter().map(|p| p.0).fold(f64::MIN, f64::max);
        xa = Axis {
            log: false,
            lo,
            hi,
            ticks: Vec::new(),
        };
    }
    let ya = Axis::new(&ys, c.y_log);
    // Legend entries wrap at 26 characters; the chart grows to hold them.
    let legend: Vec<Vec<String>> = c.series.iter().map(|s| wrap(&s.name, 26)).collect();
    let legend_h: f64 = legend.iter().map(|l| l.len() as f64 * 13.0 + 6.0).sum();
    let plot_w = W - ML - MR;
    let h =
        (MT + PLOT_H + 64.0).max(MT + legend_h + 20.0) + if c.note.is_some() { 16.0 } else { 0.0 };
    let bottom = MT + PLOT_H;
    let px = |x: f64| ML + 10.0 + xa.frac(x) * (plot_w - 20.0);
    let py = |y: f64| bottom - ya.frac(y) * PLOT_H;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="chart {k}" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" aria-label="{t}"><rect x="0" y="0" width="{W}" height="{h}" fill="white"/><text x="{x}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{t}</text>"#,
        k = c.kind,
        t = esc(&c.title),
        x = W / 2.0
    );
    for v in &ya.ticks {
        let y = py(*v);
        let _ = write!(
            out,
            r##"<line x1="{ML}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" stroke="#e0e0e0"/><text class="ytick" x="{tx}" y="{ty:.1}" text-anchor="end" font-size="11">{}</text>"##,
            fmt_scaled(*v),
            x2 = W - MR,
            tx = ML - 6.0,
            ty = y + 4.0
        );
    }
    let x_ticks: Vec<(f64, String)> = match &c.x_ticks {
        Some(t) => t.clone(),
        None => xa.ticks.iter().map(|v| (*v, fmt_scaled(*v))).collect(),
    };
    for (v, l) in &x_ticks {
        let x = px(*v);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{bottom}" stroke="#f0f0f0"/><line x1="{x:.1}" x2="{x:.1}" y1="{bottom}" y2="{b2}" stroke="#333"/><text class="xtick" x="{x:.1}" y="{ty}" text-anchor="middle" font-size="11">{}</text>"##,
            esc(l),
            b2 = bottom + 5.0,
            ty = bottom + 18.0
        );
    }
    let _ = write!(
        out,
        r##"<line x1="{ML}" x2="{ML}" y1="{MT}" y2="{bottom}" stroke="#333"/><line x1="{ML}" x2="{r}" y1="{bottom}" y2="{bottom}" stroke="#333"/><text x="{xt}" y="{yt}" text-anchor="middle" font-size="12">{xl}</text><text transform="translate(18,{ym}) rotate(-90)" text-anchor="middle" font-size="12">{yl}</text>"##,
        r = W - MR,
        xt = ML + plot_w / 2.0,
        yt = bottom + 40.0,
        xl = esc(&format!(
            "{}{}",
            c.x_label,
            if c.x_log { " (log scale)" } else { "" }
        )),
        ym = MT + PLOT_H / 2.0,
        yl = esc(&format!(
            "{}{}",
            c.y_label,
            if ya.log { " (log scale)" } else { "" }
        ))
    );
    for s in &c.series {
        let color = PALETTE[s.color % PALETTE.len()];
        let pts: Vec<(f64, f64, &(f64, f64, Option<String>))> = s
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|p| (px(p.0), py(p.1), p))
            .collect();
        let poly: Vec<String> = pts
            .iter()
            .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = write!(
            out,
            r#"<polyline class="series" fill="none" stroke="{color}" stroke-width="2"{} points="{}"/>"#,
            if s.dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            },
            poly.join(" ")
        );
        for (x, y, p) in pts {
            let _ = write!(
                out,
                r#"<circle class="pt" cx="{x:.1}" cy="{y:.1}" r="3.2" fill="{color}" data-x="{}" data-v="{}"><title>{}: {}{} {}</title></circle>"#,
                p.0,
                p.1,
                esc(&s.name),
                p.2.as_deref()
                    .map(|l| format!("{} ", esc(l)))
                    .unwrap_or_default(),
                esc(&c.x_label),
                fmt_scaled(p.1)
            );
            if let Some(l) = &p.2 {
                let _ = write!(
                    out,
                    r#"<text class="ptlabel" x="{:.1}" y="{:.1}" font-size="10" fill="{color}">{}</text>"#,
                    x + 5.0,
                    y - 5.0,
                    esc(l)
                );
            }
        }
    }
    let mut y = MT + 8.0;
    for (s, lines) in c.series.iter().zip(&legend) {
        let x = W - MR + 14.0;
        let _ = write!(
            out,
            r#"<g class="legend-item"><line x1="{x}" x2="{x2}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="3"{d}/>{t}</g>"#,
            x2 = x + 14.0,
            ly = y - 4.0,
            c = PALETTE[s.color % PALETTE.len()],
            d = if s.dashed {
                r#" stroke-dasharray="4 3""#
            } else {
                ""
            },
            t = text_lines(x + 19.0, y, lines, 13.0, r#"font-size="11""#, &s.name)
        );
        y += lines.len() as f64 * 13.0 + 6.0;
    }
    if let Some(n) = &c.note {
        let _ = write!(
            out,
            r##"<text class="note" x="{ML}" y="{y}" font-size="11" fill="#555">{}</text>"##,
            esc(n),
            y = h - 8.0
        );
    }
    out.push_str("</svg>");
    out
}

/// The percentiles of the percentile chart and where they sit on the nines scale
/// (-log10(1 - q): p90 = 1, p99 = 2, ...).
pub(crate) const PERCENTILES: [f64; 9] = [0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999];

pub(crate) fn nines(q: f64) -> f64 {
    -(1.0 - q).log10()
}

/// The labelled ticks of the nines scale.
pub(crate) fn nines_ticks() -> Vec<(f64, String)> {
    [
        (0.5, "p50"),
        (0.9, "p90"),
        (0.99, "p99"),
        (0.999, "p99.9"),
        (0.9999, "p99.99"),
    ]
    .iter()
    .map(|(q, l)| (nines(*q), l.to_string()))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_chosen_from_the_largest_value() {
        // 2.5 million KiB/s is about 2.4 GiB/s, not "2.5M KB/s".
        assert_eq!(
            Quantity::axis_label("KB/s", 2.5e6),
            ("GiB/s".to_string(), 1024.0 * 1024.0)
        );
        assert_eq!(
            Quantity::axis_label("KB/s", 800.0),
            ("KiB/s".to_string(), 1.0)
        );
        assert_eq!(
            Quantity::axis_label("MB/s", 3000.0),
            ("GiB/s".to_string(), 1024.0)
        );
        assert_eq!(
            Quantity::axis_label("mean latency ms", 0.05),
            ("mean latency, us".to_string(), 1e-3)
        );
        assert_eq!(
            Quantity::axis_label("p99 latency ms", 2500.0),
            ("p99 latency, s".to_string(), 1000.0)
        );
        assert_eq!(
            Quantity::axis_label("IOPS", 250_000.0),
            ("IOPS (×1000)".to_string(), 1000.0)
        );
        assert_eq!(
            Quantity::axis_label("IOPS", 250.0),
            ("IOPS".to_string(), 1.0)
        );
        assert_eq!(Quantity::axis_label("CPU us/op", 5.0).1, 1.0);
    }

    #[test]
    fn wrapped_labels_keep_every_character() {
        for (label, w) in [
            ("createfiles", 5),
            ("fileserver, nthreads 16", 10),
            ("/mnt/a/very/long/path/to/a/target", 8),
            ("x", 3),
            ("", 4),
        ] {
            let lines = wrap(label, w);
            assert!(
                lines.iter().all(|l| l.chars().count() <= w.max(3)),
                "{lines:?}"
            );
            let joined: String = lines.concat();
            assert_eq!(
                joined.replace(' ', ""),
                label.replace(' ', ""),
                "{label} -> {lines:?}"
            );
        }
        assert_eq!(wrap("createfiles", 20), vec!["createfiles"]);
        // No line starts or ends with the space it was broken at.
        assert_eq!(
            wrap("block size 4k, queue depth 1", 26),
            vec!["block size 4k, queue depth", "1"]
        );
        assert_eq!(fmt_scaled(0.01), "0.01");
        assert_eq!(fmt_scaled(0.25), "0.25");
    }

    #[test]
    fn a_plot_draws_every_point_on_its_axes() {
        let p = Plot {
            kind: "percentiles",
            title: "t".into(),
            x_label: "percentile".into(),
            y_label: "latency, us".into(),
            x_log: false,
            y_log: true,
            x_ticks: Some(nines_ticks()),
            series: vec![PlotSeries {
                name: "bs 4k, a name long enough to wrap onto a second line".into(),
                points: PERCENTILES
                    .iter()
                    .map(|q| (nines(*q), 10.0 + 100.0 * q, None))
                    .collect(),
                color: 0,
                dashed: false,
            }],
            note: Some("n".into()),
        };
        let s = plot(&p);
        assert_eq!(s.matches("class=\"pt\"").count(), 9);
        assert!(s.contains(">p99.99</text>") && s.contains(">p50</text>"));
        assert!(s.contains("<tspan"), "the legend wraps");
        assert!(s.contains("(log scale)"));
        assert_eq!(
            log_ticks(10.0, 1000.0),
            vec![10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        );
        assert!((nines(0.999) - 3.0).abs() < 1e-9);
    }
}
