//! The HTML report's charts, drawn by the `plotters` library into SVG: line charts of a metric
//! against a swept axis, horizontal bars for categories (labels whole on the left), the
//! diverging bars of a study normalised to a baseline (the axis stops short of outliers, which
//! are marked with their value), time series (one y axis or two), latency percentiles and
//! histograms on log axes, latency against throughput, and the queue depth x threads heatmap.
//!
//! Text is measured with DejaVu Sans compiled into the binary (no system font is looked up), so
//! the layout is the same on every machine; no browser engine is needed to draw a chart.
//! plotters draws everything visible; the one thing its SVG backend cannot say is a tooltip,
//! so each data point gets a transparent element on top (`class="pt"`, `"bar"` or `"cell"`)
//! with a `<title>` and its value in `data-v` (and `data-lo`/`data-hi` for error bars).

use crate::units;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::error::Error;
use std::fmt::Write;
use std::ops::Range;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Drawn = Result<(), Box<dyn Error>>;

/// Drawn width of every chart, in pixels; the page scales it to its own width.
const W: u32 = 1080;
/// Height of a chart's plot area (axes included), without title, legend and notes.
const PLOT_H: u32 = 380;
const FONT: &str = "sans-serif";
const TITLE_PX: u32 = 20;
const LABEL_PX: u32 = 15;
const SMALL_PX: u32 = 13;

/// Series colours in order (Tableau 10); more series than this get evenly spaced hues.
const PALETTE: [(u8, u8, u8); 10] = [
    (0x1f, 0x77, 0xb4),
    (0xd6, 0x27, 0x28),
    (0x2c, 0xa0, 0x2c),
    (0xff, 0x7f, 0x0e),
    (0x94, 0x67, 0xbd),
    (0x8c, 0x56, 0x4b),
    (0xe3, 0x77, 0xc2),
    (0x17, 0xbe, 0xcf),
    (0x7f, 0x7f, 0x7f),
    (0xbc, 0xbd, 0x22),
];

/// The colour of series `i` of `n`: distinct for every series of a chart.
fn colour(i: usize, n: usize) -> RGBColor {
    if n <= PALETTE.len() {
        let (r, g, b) = PALETTE[i % PALETTE.len()];
        return RGBColor(r, g, b);
    }
    let (r, g, b) = HSLColor(i as f64 / n as f64, 0.65, 0.42).rgb();
    RGBColor(r, g, b)
}

/// HTML/SVG text escaping.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The embedded font, registered once for every chart.
fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bytes are a font known to parse: a failure here would draw no text at all.
        // Bold titles are measured with the regular face (plotters falls back to it): their
        // width only centres them, and the bold face would add 700 KB to the binary.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
}

fn font(px: u32) -> TextStyle<'static> {
    (FONT, px).into_font().color(&BLACK)
}

/// Width in pixels of `s` drawn at `px`, measured with the embedded font.
fn text_w(s: &str, px: u32) -> u32 {
    register_font();
    font(px).font.box_size(s).map_or(0, |(w, _)| w)
}

/// A linear axis whose ticks are exactly the given values (measured x values, category
/// centres, round numbers chosen here), labelled by the chart's own formatter.
#[derive(Clone)]
struct Ticked {
    range: Range<f64>,
    ticks: Vec<f64>,
}

fn ticked(range: Range<f64>, ticks: Vec<f64>) -> Ticked {
    Ticked { range, ticks }
}

/// A linear axis from `lo` to `hi` with round ticks.
fn lin(lo: f64, hi: f64) -> Ticked {
    ticked(lo..hi, linear_ticks(lo, hi))
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let f = if span != 0.0 {
            (v - self.range.start) / span
        } else {
            0.5
        };
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        // Bold ticks only: no light grid lines between them.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }
    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// The transparent element carrying one data point's tooltip.
struct Tip {
    class: &'static str,
    /// Circle at (x, y), or a box (x0, y0, x1, y1), in pixels.
    at: TipAt,
    series: String,
    title: String,
    v: f64,
    range: Option<(f64, f64)>,
}

enum TipAt {
    Dot(i32, i32),
    Box(i32, i32, i32, i32),
}

impl Tip {
    fn dot(p: (i32, i32), series: &str, title: String, v: f64) -> Tip {
        Tip {
            class: "pt",
            at: TipAt::Dot(p.0, p.1),
            series: series.to_string(),
            title,
            v,
            range: None,
        }
    }
    fn rect(
        class: &'static str,
        a: (i32, i32),
        b: (i32, i32),
        series: &str,
        title: String,
        v: f64,
    ) -> Tip {
        Tip {
            class,
            at: TipAt::Box(a.0.min(b.0), a.1.min(b.1), a.0.max(b.0), a.1.max(b.1)),
            series: series.to_string(),
            title,
            v,
            range: None,
        }
    }
    fn write(&self, out: &mut String) {
        let range = self
            .range
            .map(|(lo, hi)| format!(r#" data-lo="{lo}" data-hi="{hi}""#))
            .unwrap_or_default();
        let common = format!(
            r##"class="{}" fill="#000" fill-opacity="0" data-series="{}" data-v="{}"{range}"##,
            self.class,
            esc(&self.series),
            self.v
        );
        let _ = match self.at {
            TipAt::Dot(x, y) => write!(out, r#"<circle {common} cx="{x}" cy="{y}" r="6">"#),
            TipAt::Box(x0, y0, x1, y1) => write!(
                out,
                r#"<rect {common} x="{x0}" y="{y0}" width="{}" height="{}">"#,
                (x1 - x0).max(1),
                (y1 - y0).max(1)
            ),
        };
        let _ = write!(
            out,
            "<title>{}</title></{}>",
            esc(&self.title),
            if matches!(self.at, TipAt::Dot(..)) {
                "circle"
            } else {
                "rect"
            }
        );
    }
}

/// One entry of a legend.
struct Key {
    name: String,
    colour: RGBColor,
    dashed: bool,
}

/// Rows of a legend laid out left to right over the chart's width: (entries, x) per row.
fn legend_rows(keys: &[Key]) -> Vec<Vec<(usize, i32)>> {
    let mut rows: Vec<Vec<(usize, i32)>> = vec![Vec::new()];
    let mut x = 70;
    for (i, k) in keys.iter().enumerate() {
        let w = 34 + text_w(&k.name, LABEL_PX) as i32 + 26;
        if x + w > W as i32 - 10 && !rows.last().unwrap().is_empty() {
            rows.push(Vec::new());
            x = 70;
        }
        rows.last_mut().unwrap().push((i, x));
        x += w;
    }
    rows
}

const LEGEND_ROW: i32 = 22;
const NOTE_ROW: i32 = 20;

/// Height of the legend and notes under a chart.
fn footer_h(keys: &[Key], notes: &[String]) -> u32 {
    let rows = if keys.is_empty() {
        0
    } else {
        legend_rows(keys).len() as i32
    };
    (rows * LEGEND_ROW + notes.len() as i32 * NOTE_ROW + 12) as u32
}

/// Draw the legend and the notes into `area` (below the plot).
fn footer(area: &Area, keys: &[Key], notes: &[String]) -> Drawn {
    let mut y = 24;
    if !keys.is_empty() {
        for row in legend_rows(keys) {
            for (i, x) in row {
                let k = &keys[i];
                let c = k.colour;
                if k.dashed {
                    area.draw(&PathElement::new(
                        vec![(x, y), (x + 10, y)],
                        c.stroke_width(3),
                    ))?;
                    area.draw(&PathElement::new(
                        vec![(x + 16, y), (x + 26, y)],
                        c.stroke_width(3),
                    ))?;
                } else {
                    area.draw(&Rectangle::new([(x, y - 6), (x + 26, y + 6)], c.filled()))?;
                }
                area.draw(&Text::new(
                    k.name.clone(),
                    (x + 34, y),
                    font(LABEL_PX).pos(Pos::new(HPos::Left, VPos::Center)),
                ))?;
            }
            y += LEGEND_ROW;
        }
    }
    for n in notes {
        area.draw(&Text::new(
            n.clone(),
            (70, y),
            font(SMALL_PX)
                .color(&RGBColor(0x55, 0x55, 0x55))
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        y += NOTE_ROW;
    }
    Ok(())
}

/// Draw one chart: a title, then `body` (given the area under the title and the tooltip list),
/// finished into an `<svg class="chart {kind}">` as wide as the page. A chart that cannot be
/// drawn says so in a line of text instead.
fn draw(
    kind: &str,
    title: &str,
    height: u32,
    body: impl FnOnce(&Area, &mut Vec<Tip>) -> Drawn,
) -> String {
    register_font();
    let mut buf = String::new();
    let mut tips = Vec::new();
    let drawn = (|| -> Drawn {
        let root = SVGBackend::with_string(&mut buf, (W, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let area = root.titled(title, (FONT, TITLE_PX, FontStyle::Bold).into_font())?;
        body(&area, &mut tips)?;
        root.present()?;
        Ok(())
    })();
    if let Err(e) = drawn {
        return format!(
            "<p class=\"notes\">The chart \"{}\" could not be drawn: {}</p>",
            esc(title),
            esc(&e.to_string())
        );
    }
    let Some(open_end) = buf.find('>') else {
        return String::new();
    };
    let mut out = format!(
        r#"<svg class="chart {kind}" xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {W} {height}" style="height:auto;max-width:100%" role="img" aria-label="{}">"#,
        esc(title)
    );
    let inner = &buf[open_end + 1..];
    let inner = inner.trim_end().strip_suffix("</svg>").unwrap_or(inner);
    // plotters ends every tag with a line break, also inside `<text>`: the page needs none.
    out.push_str(&inner.replace('\n', ""));
    out.push_str("<g class=\"tips\">");
    for t in &tips {
        t.write(&mut out);
    }
    out.push_str("</g></svg>");
    out
}

/// Backend pixel `p` (as `backend_coord` gives) in `area`'s own pixels (as `area.draw` takes).
fn in_area(area: &Area, p: (i32, i32)) -> (i32, i32) {
    let (bx, by) = area.get_base_pixel();
    (p.0 - bx, p.1 - by)
}

/// A tick number with the decimals it needs (`0.25`, `2.5`, `40`, `1200`).
fn fmt_num(v: f64) -> String {
    let v = v + 0.0;
    let a = v.abs();
    if a == 0.0 || a >= 100.0 || (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let d = if a >= 10.0 {
            1
        } else if a >= 1.0 {
            2
        } else {
            ((-a.log10()).floor() as usize + 2).min(9)
        };
        format!("{v:.d$}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// A latency tick in nanoseconds: `500 ns`, `20 µs`, `1.5 ms`.
fn ns_tick(ns: f64) -> String {
    trim_units(&units::format_ns(ns)).replace(" us", " µs")
}

/// A rate tick in bytes per second: `512 KiB/s`, `1 MiB/s`.
fn rate_tick(bps: f64) -> String {
    trim_units(&units::format_binary_rate(bps))
}

/// `1.00 MiB/s` -> `1 MiB/s`, `12.50 ms` -> `12.5 ms`: tick labels without trailing zeros.
fn trim_units(s: &str) -> String {
    match s.split_once(' ') {
        Some((n, u)) if n.contains('.') => {
            format!("{} {u}", n.trim_end_matches('0').trim_end_matches('.'))
        }
        _ => s.to_string(),
    }
}

/// What a chart's values measure, for choosing a readable unit on a linear axis.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Quantity {
    /// Bytes per second; values given in units of `base` bytes (1024 for KiB/s).
    Rate { base: f64 },
    /// Time; values given in units of `base` seconds (1e-3 for ms, 1e-9 for ns).
    Time { base: f64 },
    /// A count or rate of operations (IOPS, ops/s): k and M suffixes.
    Count,
    /// Anything else: shown as given.
    Plain,
}

impl Quantity {
    /// What a metric label ("KiB/s", "mean latency ms", "CPU s", "IOPS") measures, and the
    /// label with its unit taken out ("mean latency").
    fn of_label(label: &str) -> (Quantity, String) {
        let strip = |suffix: &str| label.trim_end_matches(suffix).trim_end().to_string();
        // KiB/s and MiB/s, and the "KB/s"/"MB/s" that older stored results used for the same
        // 1024-based figures.
        if let Some(u) = ["KiB/s", "KB/s"].into_iter().find(|u| label.ends_with(u)) {
            (Quantity::Rate { base: 1024.0 }, strip(u))
        } else if let Some(u) = ["MiB/s", "MB/s"].into_iter().find(|u| label.ends_with(u)) {
            (Quantity::Rate { base: 1048576.0 }, strip(u))
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
    fn scale(self, max: f64) -> (f64, &'static str) {
        let max = if max.is_finite() && max > 0.0 {
            max
        } else {
            1.0
        };
        match self {
            Quantity::Rate { base } => {
                let (per, name) = units::rate_unit(max * base);
                (per / base, name)
            }
            Quantity::Time { base } => {
                let (per_ns, name) = units::time_unit(max * base * 1e9);
                (per_ns * 1e-9 / base, name)
            }
            Quantity::Count if max >= 1e6 => (1e6, "M"),
            Quantity::Count if max >= 1e3 => (1e3, "k"),
            Quantity::Count | Quantity::Plain => (1.0, ""),
        }
    }

    /// An axis label with the unit chosen for values up to `max`, and the divisor.
    fn axis_label(label: &str, max: f64) -> (String, f64) {
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

/// One line or one bar of each category.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub name: String,
    /// One value per x category (None = no measurement).
    pub values: Vec<Option<f64>>,
}

/// A metric against a swept axis.
#[derive(Debug, Clone)]
pub(crate) struct ChartData {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Category labels along x.
    pub x_labels: Vec<String>,
    /// Numeric x positions (line charts); None draws categories (bars).
    pub x_values: Option<Vec<f64>>,
    pub log_x: bool,
    pub series: Vec<Series>,
}

/// Error bars of a chart: per series, per x category, the (low, high) a point spans, and what
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

fn max_value(series: &[Series]) -> f64 {
    series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .filter(|v| v.is_finite())
        .cloned()
        .fold(0.0, f64::max)
}

fn keys_of(series: &[Series]) -> Vec<Key> {
    let n = series.len();
    series
        .iter()
        .enumerate()
        .map(|(i, s)| Key {
            name: s.name.clone(),
            colour: colour(i, n),
            dashed: false,
        })
        .collect()
}

/// Of the labels at pixel positions `xs` (in order), the ones that can be drawn without
/// touching: the first and the last always, others when they keep `gap` pixels clear.
fn spaced(xs: &[f64], widths: &[f64], gap: f64) -> Vec<usize> {
    let n = xs.len();
    let mut kept: Vec<usize> = Vec::new();
    for i in 0..n {
        let clear = |j: usize| (xs[i] - xs[j]).abs() >= (widths[i] + widths[j]) / 2.0 + gap;
        let last_ok = kept.last().is_none_or(|&j| clear(j));
        let end_ok = i + 1 == n || n < 2 || clear(n - 1);
        if last_ok && end_ok {
            kept.push(i);
        } else if i + 1 == n {
            // The last label always shows: it displaces the one before it.
            kept.pop();
            kept.push(i);
        }
    }
    kept
}

/// The chart of one metric: a line chart over a numeric axis, bars over categories, nothing
/// for a single point (the table says it; a chart of one dot or one bar says no more).
pub(crate) fn metric_chart(c: &ChartData, errors: Option<&ErrorBars>) -> String {
    let points = c
        .series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .count();
    if points < 2 {
        String::new()
    } else if c.x_values.is_some() {
        line_chart(c, errors)
    } else {
        bar_chart(c, errors)
    }
}

/// A metric against a numeric swept axis (log scale when `log_x`): one line per series,
/// error bars where points were repeated, ticks at the measured x values that fit.
pub(crate) fn line_chart(c: &ChartData, errors: Option<&ErrorBars>) -> String {
    let Some(xv) = &c.x_values else {
        return bar_chart(c, errors);
    };
    let t = |x: f64| if c.log_x { x.max(1e-12).log2() } else { x };
    let ts: Vec<f64> = xv.iter().map(|x| t(*x)).collect();
    let lo = ts.iter().cloned().fold(f64::MAX, f64::min);
    let hi = ts.iter().cloned().fold(f64::MIN, f64::max);
    let pad = if hi > lo { (hi - lo) * 0.04 } else { 1.0 };
    let max = max_value(&c.series).max(errors.map_or(0.0, |e| e.max()));
    let (y_label, div) = Quantity::axis_label(&c.y_label, max);
    let top = if max > 0.0 { max / div * 1.08 } else { 1.0 };
    let keys = keys_of(&c.series);
    let notes: Vec<String> = errors
        .map(|e| format!("error bars: {}", e.note))
        .into_iter()
        .collect();
    let x_desc = format!("{}{}", c.x_label, if c.log_x { " (log scale)" } else { "" });
    let h = 40 + PLOT_H + footer_h(&keys, &notes);
    draw("line", &c.title, h, |area, tips| {
        let (plot, foot) = area.split_vertically(PLOT_H);
        // Ticks at the measured x values, as many as fit side by side.
        let plot_w = (W - 120) as f64;
        let px: Vec<f64> = ts
            .iter()
            .map(|x| (x - lo + pad) / (hi - lo + 2.0 * pad) * plot_w)
            .collect();
        let widths: Vec<f64> = c
            .x_labels
            .iter()
            .map(|l| text_w(l, LABEL_PX) as f64)
            .collect();
        let ticks: Vec<f64> = spaced(&px, &widths, 12.0)
            .into_iter()
            .map(|i| ts[i])
            .collect();
        let label_of = |v: &f64| {
            ts.iter()
                .position(|x| (x - v).abs() < 1e-9)
                .map(|i| c.x_labels[i].clone())
                .unwrap_or_default()
        };
        let mut chart = ChartBuilder::on(&plot)
            .margin_right(30)
            .margin_top(10)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .build_cartesian_2d(ticked(lo - pad..hi + pad, ticks), lin(0.0, top))?;
        chart
            .configure_mesh()
            .x_desc(x_desc.as_str())
            .y_desc(y_label.as_str())
            .x_label_formatter(&label_of)
            .y_label_formatter(&|v: &f64| fmt_num(*v))
            .label_style(font(LABEL_PX))
            .axis_desc_style(font(LABEL_PX))
            .draw()?;
        for (si, s) in c.series.iter().enumerate() {
            let col = keys[si].colour;
            let pts: Vec<(usize, f64, f64)> = s
                .values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.filter(|v| v.is_finite()).map(|v| (i, ts[i], v / div)))
                .collect();
            chart.draw_series(LineSeries::new(
                pts.iter().map(|p| (p.1, p.2)),
                col.stroke_width(2),
            ))?;
            chart.draw_series(pts.iter().map(|p| Circle::new((p.1, p.2), 4, col.filled())))?;
            for &(i, x, y) in &pts {
                let range = errors.and_then(|e| e.get(si, i));
                if let Some((elo, ehi)) = range {
                    chart.draw_series(std::iter::once(ErrorBar::new_vertical(
                        x,
                        elo / div,
                        y,
                        ehi / div,
                        BLACK.stroke_width(1),
                        10,
                    )))?;
                }
                let mut tip = Tip::dot(
                    chart.backend_coord(&(x, y)),
                    &s.name,
                    format!(
                        "{}: {} = {} {}",
                        s.name,
                        c.x_labels[i],
                        fmt_num(y),
                        unit_of(&y_label)
                    ),
                    y * div,
                );
                tip.range = range;
                tips.push(tip);
            }
        }
        footer(&foot, &keys, &notes)
    })
}

/// The unit at the end of an axis label ("read, MiB/s" -> "MiB/s"), for tooltips.
fn unit_of(label: &str) -> String {
    label
        .rsplit_once(", ")
        .map(|(_, u)| u.to_string())
        .unwrap_or_default()
}

/// Horizontal bars with the category labels whole on the left: one row per category, one
/// bar per series in it, error bars where points were repeated.
fn bar_chart(c: &ChartData, errors: Option<&ErrorBars>) -> String {
    let max = max_value(&c.series).max(errors.map_or(0.0, |e| e.max()));
    let (x_label, div) = Quantity::axis_label(&c.y_label, max);
    let top = if max > 0.0 { max / div * 1.08 } else { 1.0 };
    let bars = HBars {
        kind: "bars",
        title: &c.title,
        value_label: &x_label,
        rows: &c.x_labels,
        series: &c.series,
        errors,
        lo: 0.0,
        hi: top,
        div,
        tick: &|v| fmt_num(v),
        tip: &|s, r, v| format!("{s}: {r} = {} {}", fmt_num(v), unit_of(&x_label)),
        notes: errors
            .map(|e| format!("error bars: {}", e.note))
            .into_iter()
            .collect(),
        clipped_note: None,
    };
    bars.draw()
}

/// What [`HBars::draw`] draws.
struct HBars<'a> {
    kind: &'a str,
    title: &'a str,
    value_label: &'a str,
    rows: &'a [String],
    series: &'a [Series],
    errors: Option<&'a ErrorBars>,
    /// The value axis, in displayed units (values are divided by `div`).
    lo: f64,
    hi: f64,
    div: f64,
    tick: &'a dyn Fn(f64) -> String,
    tip: &'a dyn Fn(&str, &str, f64) -> String,
    notes: Vec<String>,
    /// When bars beyond the axis are cut: how their value is written on them.
    clipped_note: Option<&'a dyn Fn(f64) -> String>,
}

impl HBars<'_> {
    fn draw(&self) -> String {
        let n = self.rows.len().max(1);
        let k = self.series.len().max(1);
        let bar_px = 16.0;
        let band = bar_px * k as f64 + 12.0;
        let keys = keys_of(self.series);
        let label_w = self
            .rows
            .iter()
            .map(|r| text_w(r, LABEL_PX))
            .max()
            .unwrap_or(0)
            .clamp(40, W / 2)
            + 20;
        let plot_h = (band * n as f64) as u32 + 70;
        let h = 40 + plot_h + footer_h(&keys, &self.notes);
        let nf = n as f64;
        // Round ticks, and the negative end (-100 %) when it is not one and has room.
        let mut candidates = linear_ticks(self.lo, self.hi);
        if self.lo < 0.0
            && candidates
                .first()
                .is_none_or(|t| (t - self.lo).abs() > 1e-9)
        {
            candidates.insert(0, self.lo);
        }
        let plot_w = (W - label_w - 40) as f64;
        let px: Vec<f64> = candidates
            .iter()
            .map(|v| (v - self.lo) / (self.hi - self.lo) * plot_w)
            .collect();
        let widths: Vec<f64> = candidates
            .iter()
            .map(|v| text_w(&(self.tick)(*v), LABEL_PX) as f64)
            .collect();
        let value_ticks: Vec<f64> = spaced(&px, &widths, 12.0)
            .into_iter()
            .map(|i| candidates[i])
            .collect();
        // Category i is centred at nf - i - 0.5 (the first at the top).
        let centres: Vec<f64> = (0..n).map(|i| nf - i as f64 - 0.5).collect();
        draw(self.kind, self.title, h, |area, tips| {
            let (plot, foot) = area.split_vertically(plot_h);
            let mut chart = ChartBuilder::on(&plot)
                .margin_right(40)
                .margin_top(6)
                .x_label_area_size(56)
                .y_label_area_size(label_w)
                .build_cartesian_2d(
                    ticked(self.lo..self.hi, value_ticks),
                    ticked(0f64..nf, centres.clone()),
                )?;
            let row_of = |v: &f64| {
                centres
                    .iter()
                    .position(|c| (c - v).abs() < 1e-9)
                    .and_then(|i| self.rows.get(i).cloned())
                    .unwrap_or_default()
            };
            chart
                .configure_mesh()
                .x_desc(self.value_label)
                .x_label_formatter(&|v: &f64| (self.tick)(*v))
                .y_label_formatter(&row_of)
                .label_style(font(LABEL_PX))
                .axis_desc_style(font(LABEL_PX))
                .disable_y_mesh()
                .draw()?;
            if self.lo < 0.0 {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(0.0, 0.0), (0.0, nf)],
                    BLACK.stroke_width(1),
                )))?;
            }
            // One bar's height in rows (each row is one unit of y).
            let unit = 1.0 / band * bar_px;
            for (ri, row) in self.rows.iter().enumerate() {
                let top_of_band = centres[ri] + unit * k as f64 / 2.0;
                for (si, s) in self.series.iter().enumerate() {
                    let Some(Some(v)) = s.values.get(ri).filter(|v| v.is_some_and(f64::is_finite))
                    else {
                        continue;
                    };
                    let shown = v / self.div;
                    let end = shown.clamp(self.lo, self.hi);
                    let y1 = top_of_band - unit * si as f64;
                    let y0 = y1 - unit * 0.85;
                    let col = keys[si].colour;
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(0.0, y0), (end, y1)],
                        col.filled(),
                    )))?;
                    if end != shown {
                        if let Some(say) = self.clipped_note {
                            let (px, py) =
                                in_area(&plot, chart.backend_coord(&(end, (y0 + y1) / 2.0)));
                            let inward = if end > 0.0 { HPos::Right } else { HPos::Left };
                            let dx = if end > 0.0 { -6 } else { 6 };
                            plot.draw(&Text::new(
                                say(shown),
                                (px + dx, py),
                                font(SMALL_PX)
                                    .color(&WHITE)
                                    .pos(Pos::new(inward, VPos::Center)),
                            ))?;
                        }
                    }
                    let range = self.errors.and_then(|e| e.get(si, ri));
                    if let Some((lo, hi)) = range {
                        chart.draw_series(std::iter::once(ErrorBar::new_horizontal(
                            (y0 + y1) / 2.0,
                            lo / self.div,
                            shown,
                            hi / self.div,
                            BLACK.stroke_width(1),
                            8,
                        )))?;
                    }
                    let mut tip = Tip::rect(
                        "bar",
                        chart.backend_coord(&(0.0, y0)),
                        chart.backend_coord(&(end, y1)),
                        &s.name,
                        (self.tip)(&s.name, row, shown),
                        *v,
                    );
                    tip.range = range;
                    tips.push(tip);
                }
            }
            footer(&foot, &keys, &self.notes)
        })
    }
}

/// The percent differences from a baseline (0) as horizontal bars, one row per point and one
/// bar per compared target. The negative side stops at -100 % (less than nothing cannot be);
/// the positive side stops short of outliers so the other bars stay readable: a bar past the
/// end of the axis is cut there and carries its value.
pub(crate) fn normalised_chart(
    title: &str,
    baseline: &str,
    rows: &[String],
    series: &[Series],
) -> String {
    let values: Vec<f64> = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .cloned()
        .filter(|v| v.is_finite())
        .collect();
    let neg = values.iter().map(|v| -v).fold(0.0, f64::max).min(100.0);
    let pos = values.iter().cloned().fold(0.0, f64::max);
    let limit = positive_limit(&values);
    let hi = if pos > limit { limit } else { pos * 1.08 };
    // A round end (a multiple of 10 %), never below -100 %.
    let lo = if neg > 0.0 {
        -((neg * 1.08 / 10.0).ceil() * 10.0).min(100.0)
    } else {
        0.0
    };
    let (lo, hi) = if hi - lo <= 0.0 {
        (lo, lo + 10.0)
    } else {
        (lo, hi)
    };
    let notes = if pos > limit {
        vec![format!(
            "The axis stops at {} %: a bar cut at its end is longer; its value is written on it.",
            fmt_num(limit)
        )]
    } else {
        Vec::new()
    };
    HBars {
        kind: "normalised",
        title,
        value_label: &format!("difference from {baseline} (baseline = 0), percent"),
        rows,
        series,
        errors: None,
        lo,
        hi,
        div: 1.0,
        tick: &|v| format!("{} %", fmt_num(v)),
        tip: &|s, r, v| format!("{s}: {r} = {v:+.1}%"),
        notes,
        clipped_note: Some(&|v| format!("{v:+.0} %")),
    }
    .draw()
}

/// Where the positive side of a normalised axis ends: at the largest value unless that is an
/// outlier, more than four times the upper quartile of the differences' sizes (and past
/// 100 %); then at four times that quartile.
fn positive_limit(values: &[f64]) -> f64 {
    let mut sizes: Vec<f64> = values.iter().map(|v| v.abs()).collect();
    sizes.sort_by(|a, b| a.total_cmp(b));
    let max = values.iter().cloned().fold(0.0, f64::max);
    if sizes.is_empty() {
        return max;
    }
    let q3 = sizes[(sizes.len() * 3 / 4).min(sizes.len() - 1)];
    let limit = (4.0 * q3).max(100.0);
    if max > limit {
        limit
    } else {
        max
    }
}

/// One line of (x, y) points on a numeric x axis (a time series).
#[derive(Debug, Clone)]
pub(crate) struct XySeries {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart with a linear numeric x axis: time series.
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

fn finite_points(s: &XySeries) -> impl Iterator<Item = (f64, f64)> + Clone + '_ {
    s.points
        .iter()
        .cloned()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
}

/// The x range of time series and markers (from 0 or earlier).
fn x_range<'a>(
    series: impl Iterator<Item = &'a XySeries>,
    markers: &[(f64, String)],
) -> (f64, f64) {
    let xs: Vec<f64> = series
        .flat_map(|s| finite_points(s).map(|p| p.0))
        .chain(markers.iter().map(|m| m.0))
        .collect();
    let lo = xs.iter().cloned().fold(0.0, f64::min);
    let hi = xs.iter().cloned().fold(f64::MIN, f64::max);
    if hi > lo {
        (lo, hi)
    } else {
        (lo, lo + 1.0)
    }
}

fn y_top(series: &[XySeries], fixed: Option<f64>) -> f64 {
    let max = series
        .iter()
        .flat_map(|s| finite_points(s).map(|p| p.1))
        .fold(0.0, f64::max);
    match fixed {
        Some(t) if t > 0.0 && max <= t => t,
        _ if max > 0.0 => max * 1.08,
        _ => 1.0,
    }
}

/// Time series on a linear x axis: one line per series, a tooltip per point, markers as
/// dashed vertical lines.
pub(crate) fn xy_chart(c: &XyChart) -> String {
    dual_axis_chart(c, None)
}

/// A time series with a second y axis on the right for `right` (e.g. IOPS on the left and
/// latency on the right): its lines are dashed, and named with their axis in the legend.
pub(crate) fn dual_axis_chart(c: &XyChart, right: Option<&XyChart>) -> String {
    let (x0, x1) = x_range(
        c.series
            .iter()
            .chain(right.iter().flat_map(|r| r.series.iter())),
        &c.markers,
    );
    let top = y_top(&c.series, c.y_max);
    let n = c.series.len() + right.map_or(0, |r| r.series.len());
    let mut keys: Vec<Key> = c
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| Key {
            name: s.name.clone(),
            colour: colour(i, n),
            dashed: false,
        })
        .collect();
    if let Some(r) = right {
        for (i, s) in r.series.iter().enumerate() {
            keys.push(Key {
                name: format!("{} (right axis)", s.name),
                colour: colour(c.series.len() + i, n),
                dashed: true,
            });
        }
    }
    let h = 40 + PLOT_H + footer_h(&keys, &[]);
    let kind = if right.is_some() {
        "line timeseries dual"
    } else {
        "line timeseries"
    };
    draw(kind, &c.title, h, |area, tips| {
        let (plot, foot) = area.split_vertically(PLOT_H);
        let rtop = right.map_or(1.0, |r| y_top(&r.series, r.y_max));
        // The second axis takes the right label area: set it before the first axis's mesh
        // so that mesh is drawn on the left only.
        let mut chart = ChartBuilder::on(&plot)
            .margin_right(if right.is_some() { 10 } else { 30 })
            .margin_top(10)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .right_y_label_area_size(if right.is_some() { 90 } else { 0 })
            .build_cartesian_2d(lin(x0, x1), lin(0.0, top))?
            .set_secondary_coord(x0..x1, lin(0.0, rtop));
        chart
            .configure_mesh()
            .x_desc(c.x_label.as_str())
            .y_desc(c.y_label.as_str())
            .x_label_formatter(&|v: &f64| fmt_num(*v))
            .y_label_formatter(&|v: &f64| fmt_num(*v))
            .label_style(font(LABEL_PX))
            .axis_desc_style(font(LABEL_PX))
            .draw()?;
        for (x, label) in &c.markers {
            chart.draw_series(DashedLineSeries::new(
                vec![(*x, 0.0), (*x, top)],
                5,
                4,
                RGBColor(0x55, 0x55, 0x55).stroke_width(1),
            ))?;
            let (px, py) = in_area(&plot, chart.backend_coord(&(*x, top)));
            plot.draw(&Text::new(
                label.clone(),
                (px + 4, py + 4),
                font(SMALL_PX).pos(Pos::new(HPos::Left, VPos::Top)),
            ))?;
        }
        let dots = |len: usize| if len > 60 { 2 } else { 3 };
        for (si, s) in c.series.iter().enumerate() {
            let col = keys[si].colour;
            chart.draw_series(LineSeries::new(finite_points(s), col.stroke_width(2)))?;
            let r = dots(s.points.len());
            chart.draw_series(finite_points(s).map(|p| Circle::new(p, r, col.filled())))?;
            for (x, y) in finite_points(s) {
                tips.push(Tip::dot(
                    chart.backend_coord(&(x, y)),
                    &s.name,
                    format!("{}: {} = {}", s.name, fmt_num(x), fmt_num(y)),
                    y,
                ));
            }
        }
        if let Some(r) = right {
            chart
                .configure_secondary_axes()
                .y_desc(r.y_label.as_str())
                .y_label_formatter(&|v: &f64| fmt_num(*v))
                .label_style(font(LABEL_PX))
                .axis_desc_style(font(LABEL_PX))
                .draw()?;
            for (i, s) in r.series.iter().enumerate() {
                let col = keys[c.series.len() + i].colour;
                let r = dots(s.points.len());
                chart.draw_secondary_series(DashedLineSeries::new(
                    finite_points(s),
                    8,
                    4,
                    col.stroke_width(2),
                ))?;
                chart.draw_secondary_series(
                    finite_points(s).map(|p| Circle::new(p, r, col.filled())),
                )?;
                for (x, y) in finite_points(s) {
                    // Both axes span the same pixels from 0: y on the right is y / rtop of
                    // the way up, the same place as that fraction of the left axis.
                    tips.push(Tip::dot(
                        chart.backend_coord(&(x, y / rtop * top)),
                        &s.name,
                        format!("{}: {} = {}", s.name, fmt_num(x), fmt_num(y)),
                        y,
                    ));
                }
            }
        }
        footer(&foot, &keys, &[])
    })
}

/// One line of a [`Plot`]: points (x, y, label shown beside the point).
#[derive(Debug, Clone)]
pub(crate) struct PlotSeries {
    pub name: String,
    pub points: Vec<(f64, f64, Option<String>)>,
    /// Index into the chart's colours (series of one colour belong together).
    pub color: usize,
    pub dashed: bool,
}

/// How an axis of a [`Plot`] is scaled and labelled.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Scale {
    /// Bytes per second, linear over the data, round ticks in KiB/s, MiB/s, ...
    Rate,
    /// Nanoseconds, linear from 0, round ticks in ns, µs, ms, s.
    Latency,
    /// Nanoseconds on a log scale over the data.
    LogLatency,
    /// Latency percentiles on the scale of nines (x = -log10(1 - q)), ticks p50 .. p99.99.
    Nines,
}

impl Scale {
    fn is_log(self) -> bool {
        self == Scale::LogLatency
    }
    /// A value as a tick or tooltip says it.
    fn say(self, v: f64) -> String {
        match self {
            Scale::Rate => rate_tick(v),
            Scale::Latency | Scale::LogLatency => ns_tick(v),
            Scale::Nines => format!("p{}", fmt_num(100.0 * (1.0 - 10f64.powf(-v)))),
        }
    }
    /// Round ticks between `lo` and `hi` (log10 values on a log scale).
    fn ticks(self, lo: f64, hi: f64) -> Vec<f64> {
        // Linear ticks are round in the unit the values are shown in.
        let in_unit = |(unit, _): (f64, &str)| {
            linear_ticks(lo / unit, hi / unit)
                .into_iter()
                .map(|t| t * unit)
                .collect()
        };
        match self {
            Scale::Nines => [0.5, 0.9, 0.99, 0.999, 0.9999]
                .iter()
                .map(|q| nines(*q))
                .collect(),
            Scale::LogLatency => log_ticks(lo, hi),
            Scale::Rate => in_unit(units::rate_unit(hi)),
            Scale::Latency => in_unit(units::time_unit(hi)),
        }
    }
    /// The axis range of values `vals` (log10 values on a log scale).
    fn bounds(self, vals: &[f64]) -> (f64, f64) {
        let max = vals.iter().cloned().fold(0.0, f64::max);
        let min = vals
            .iter()
            .cloned()
            .filter(|v| *v > 0.0)
            .fold(f64::MAX, f64::min);
        match self {
            Scale::Nines => (nines(0.5) - 0.1, nines(0.9999) + 0.1),
            _ if max <= 0.0 => (0.0, 1.0),
            Scale::Latency => (0.0, max * 1.1),
            Scale::Rate => {
                let pad = ((max - min) * 0.08).max(max * 0.02);
                ((min - pad).max(0.0), max + pad)
            }
            Scale::LogLatency => ((min / 1.5).log10(), (max * 1.5).log10()),
        }
    }
    /// Where value `v` sits on the axis.
    fn at(self, v: f64) -> f64 {
        if self.is_log() {
            v.max(1e-12).log10()
        } else {
            v
        }
    }
    /// The tick label at axis position `v` of an axis up to `hi`: linear axes say every tick
    /// in the one unit of their largest value (`0.5 GiB/s`, `1 GiB/s`).
    fn label(self, v: f64, hi: f64) -> String {
        let in_unit = |(per, name): (f64, &str)| format!("{} {name}", fmt_num(v / per));
        match self {
            Scale::Nines => nines_label(v),
            Scale::LogLatency => ns_tick(10f64.powf(v)),
            Scale::Rate => in_unit(units::rate_unit(hi)),
            Scale::Latency => in_unit(units::time_unit(hi)),
        }
    }
}

/// Points with an x and a y of their own (percentiles, latency against throughput).
#[derive(Debug, Clone)]
pub(crate) struct Plot {
    /// The chart's class after `chart ` (`percentiles`, `latency-throughput`).
    pub kind: &'static str,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<PlotSeries>,
    pub note: Option<String>,
}

/// The percentiles of the percentile chart.
pub(crate) const PERCENTILES: [f64; 9] = [0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999];

/// Where percentile `q` sits on the nines scale (p90 = 1, p99 = 2, ...).
pub(crate) fn nines(q: f64) -> f64 {
    -(1.0 - q).log10()
}

fn nines_label(x: f64) -> String {
    [
        (0.5, "p50"),
        (0.9, "p90"),
        (0.99, "p99"),
        (0.999, "p99.9"),
        (0.9999, "p99.99"),
    ]
    .iter()
    .find(|(q, _)| (nines(*q) - x).abs() < 1e-6)
    .map(|(_, l)| l.to_string())
    .unwrap_or_default()
}

/// A plot: one line per series (dashed ones too), a tooltip per point, and point labels
/// placed where they touch no other label (a label with no free place is left to the tooltip).
pub(crate) fn plot(c: &Plot, x: Scale, y: Scale) -> String {
    let pts = || {
        c.series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.0.is_finite() && p.1.is_finite())
    };
    let n_colours = c.series.iter().map(|s| s.color + 1).max().unwrap_or(1);
    let keys: Vec<Key> = c
        .series
        .iter()
        .map(|s| Key {
            name: s.name.clone(),
            colour: colour(s.color, n_colours),
            dashed: s.dashed,
        })
        .collect();
    let notes: Vec<String> = c.note.iter().cloned().collect();
    let h = 40 + PLOT_H + footer_h(&keys, &notes);
    let (cx0, cx1) = x.bounds(&pts().map(|p| p.0).collect::<Vec<f64>>());
    let (cy0, cy1) = y.bounds(&pts().map(|p| p.1).collect::<Vec<f64>>());
    draw(c.kind, &c.title, h, |area, tips| {
        let (plot_area, foot) = area.split_vertically(PLOT_H);
        let mut b = ChartBuilder::on(&plot_area);
        b.margin_right(30)
            .margin_top(10)
            .x_label_area_size(60)
            .y_label_area_size(100);
        let (xt, yt) = (x.ticks(cx0, cx1), y.ticks(cy0, cy1));
        let mut chart = b.build_cartesian_2d(ticked(cx0..cx1, xt), ticked(cy0..cy1, yt))?;
        let x_desc = format!(
            "{}{}",
            c.x_label,
            if x.is_log() { " (log scale)" } else { "" }
        );
        let y_desc = format!(
            "{}{}",
            c.y_label,
            if y.is_log() { " (log scale)" } else { "" }
        );
        chart
            .configure_mesh()
            .x_desc(x_desc.as_str())
            .y_desc(y_desc.as_str())
            .x_label_formatter(&|v: &f64| x.label(*v, cx1))
            .y_label_formatter(&|v: &f64| y.label(*v, cy1))
            .label_style(font(LABEL_PX))
            .axis_desc_style(font(LABEL_PX))
            .draw()?;
        let mut placed: Vec<(i32, i32, i32, i32)> = Vec::new();
        for (si, s) in c.series.iter().enumerate() {
            let col = keys[si].colour;
            let line: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|p| (x.at(p.0), y.at(p.1)))
                .collect();
            if s.dashed {
                chart.draw_series(DashedLineSeries::new(
                    line.clone(),
                    8,
                    5,
                    col.stroke_width(2),
                ))?;
            } else {
                chart.draw_series(LineSeries::new(line.clone(), col.stroke_width(2)))?;
            }
            chart.draw_series(line.iter().map(|p| Circle::new(*p, 4, col.filled())))?;
            for (p, &(dx, dy)) in s
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .zip(&line)
            {
                let at = chart.backend_coord(&(dx, dy));
                let what = p.2.as_deref().map(|l| format!("{l}: ")).unwrap_or_default();
                tips.push(Tip::dot(
                    at,
                    &s.name,
                    format!("{}: {what}{} = {}", s.name, x.say(p.0), y.say(p.1)),
                    p.1,
                ));
                if let Some(l) = &p.2 {
                    place_label(&plot_area, &mut placed, l, at, col)?;
                }
            }
        }
        footer(&foot, &keys, &notes)
    })
}

/// Draw `text` beside the point at `at` in the first of eight places around it that overlaps
/// no label already placed; none free: not drawn (the tooltip still says it).
fn place_label(
    area: &Area,
    placed: &mut Vec<(i32, i32, i32, i32)>,
    text: &str,
    at: (i32, i32),
    col: RGBColor,
) -> Drawn {
    let w = text_w(text, SMALL_PX) as i32;
    let h = SMALL_PX as i32;
    let (x, y) = in_area(area, at);
    let spots = [
        (x + 7, y - h - 5),
        (x + 7, y + 5),
        (x - w - 7, y - h - 5),
        (x - w - 7, y + 5),
        (x - w / 2, y - h - 9),
        (x - w / 2, y + 9),
        (x + 9, y - h / 2),
        (x - w - 9, y - h / 2),
    ];
    let (aw, ah) = area.dim_in_pixel();
    let free = spots.iter().find(|(sx, sy)| {
        let b = (*sx, *sy, sx + w, sy + h);
        b.0 >= 0
            && b.1 >= 0
            && b.2 <= aw as i32
            && b.3 <= ah as i32
            && placed
                .iter()
                .all(|p| b.2 <= p.0 || b.0 >= p.2 || b.3 <= p.1 || b.1 >= p.3)
    });
    if let Some(&(sx, sy)) = free {
        placed.push((sx, sy, sx + w, sy + h));
        area.draw(&Text::new(
            text.to_string(),
            (sx, sy),
            font(SMALL_PX)
                .color(&col)
                .pos(Pos::new(HPos::Left, VPos::Top)),
        ))?;
    }
    Ok(())
}

/// Ticks of a log10 axis between `lo` and `hi` (log10 values): 1, 2 and 5 times each power of
/// ten when the axis spans few decades, the powers alone when it spans many.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mults: &[f64] = if hi - lo <= 2.5 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut out = Vec::new();
    let mut e = lo.floor() as i32;
    while (e as f64) <= hi {
        for m in mults {
            let v = (10f64.powi(e) * m).log10();
            if v >= lo && v <= hi {
                out.push(v);
            }
        }
        e += 1;
    }
    out
}

/// About six round ticks between `lo` and `hi`.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let raw = (hi - lo) / 6.0;
    if !raw.is_finite() || raw <= 0.0 {
        return vec![lo];
    }
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    // Each tick a whole multiple of the step: no drift, and 0 is 0 (not -0).
    (first..=last).map(|k| k as f64 * step + 0.0).collect()
}

/// Latency histograms on a log latency axis: the share of I/Os per bin (four bins per
/// doubling), as bars for one series and as lines for several. `series` is (name, buckets of
/// `[value_ns, count]`).
pub(crate) fn latency_histogram(title: &str, series: &[(String, Vec<[u64; 2]>)]) -> String {
    const PER_OCTAVE: f64 = 4.0;
    let bin = |ns: u64| ((ns.max(1) as f64).log2() * PER_OCTAVE).floor() as i64;
    let edge = |b: i64| 2f64.powf(b as f64 / PER_OCTAVE);
    let binned: Vec<(String, Vec<(i64, f64)>)> = series
        .iter()
        .map(|(name, buckets)| {
            let total: u64 = buckets.iter().map(|b| b[1]).sum();
            let mut bins: Vec<(i64, f64)> = Vec::new();
            for [v, n] in buckets {
                let b = bin(*v);
                let share = 100.0 * *n as f64 / total.max(1) as f64;
                match bins.iter_mut().find(|x| x.0 == b) {
                    Some(x) => x.1 += share,
                    None => bins.push((b, share)),
                }
            }
            bins.sort_by_key(|x| x.0);
            (name.clone(), bins)
        })
        .collect();
    let all = || binned.iter().flat_map(|(_, b)| b.iter());
    let (Some(bmin), Some(bmax)) = (all().map(|x| x.0).min(), all().map(|x| x.0).max()) else {
        return String::new();
    };
    let top = all().map(|x| x.1).fold(0.0, f64::max) * 1.1;
    let (lo, hi) = (edge(bmin).log10() - 0.05, edge(bmax + 1).log10() + 0.05);
    let keys: Vec<Key> = binned
        .iter()
        .enumerate()
        .map(|(i, (n, _))| Key {
            name: n.clone(),
            colour: colour(i, binned.len()),
            dashed: false,
        })
        .collect();
    let notes = vec!["share of the I/Os whose latency fell in each bin (four bins per doubling); repetitions of a point merged".to_string()];
    let h = 40 + PLOT_H + footer_h(&keys, &notes);
    let bars = binned.len() == 1;
    draw("histogram", title, h, |area, tips| {
        let (plot, foot) = area.split_vertically(PLOT_H);
        let mut chart = ChartBuilder::on(&plot)
            .margin_right(30)
            .margin_top(10)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .build_cartesian_2d(ticked(lo..hi, log_ticks(lo, hi)), lin(0.0, top))?;
        chart
            .configure_mesh()
            .x_desc("latency (log scale)")
            .y_desc("share of I/Os, %")
            .x_label_formatter(&|v: &f64| ns_tick(10f64.powf(*v)))
            .y_label_formatter(&|v: &f64| fmt_num(*v))
            .label_style(font(LABEL_PX))
            .axis_desc_style(font(LABEL_PX))
            .draw()?;
        for (si, (name, bins)) in binned.iter().enumerate() {
            let col = keys[si].colour;
            let say = |b: i64, share: f64| {
                format!(
                    "{name}: {} .. {}: {:.2} % of I/Os",
                    ns_tick(edge(b)),
                    ns_tick(edge(b + 1)),
                    share
                )
            };
            if bars {
                for &(b, share) in bins {
                    let (a, z) = ((edge(b).log10(), 0.0), (edge(b + 1).log10(), share));
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [a, z],
                        col.mix(0.8).filled(),
                    )))?;
                    tips.push(Tip::rect(
                        "bar",
                        chart.backend_coord(&a),
                        chart.backend_coord(&z),
                        name,
                        say(b, share),
                        share,
                    ));
                }
            } else {
                let mid = |b: i64| ((edge(b) * edge(b + 1)).sqrt()).log10();
                chart.draw_series(LineSeries::new(
                    bins.iter().map(|&(b, s)| (mid(b), s)),
                    col.stroke_width(2),
                ))?;
                for &(b, share) in bins {
                    tips.push(Tip::dot(
                        chart.backend_coord(&(mid(b), share)),
                        name,
                        say(b, share),
                        share,
                    ));
                }
            }
        }
        footer(&foot, &keys, &notes)
    })
}

/// A value over a grid of two swept axes (queue depth x threads): one coloured cell per
/// combination, darker for more, its value written in it. `cols` run along x, `rows` up y;
/// `values[r][c]` in the metric's unit (`label`).
pub(crate) fn heatmap(
    title: &str,
    x_label: &str,
    y_label: &str,
    cols: &[String],
    rows: &[String],
    values: &[Vec<Option<f64>>],
    label: &str,
) -> String {
    let max = values
        .iter()
        .flatten()
        .flatten()
        .cloned()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let (value_label, div) = Quantity::axis_label(label, max);
    let (nc, nr) = (cols.len().max(1) as f64, rows.len().max(1) as f64);
    let cell_h = 48.0;
    let plot_h = (cell_h * nr) as u32 + 70;
    let notes = vec![format!(
        "cell colour and figure: {value_label}; darker is more"
    )];
    let h = 40 + plot_h + footer_h(&[], &notes);
    draw("heatmap", title, h, |area, tips| {
        let (plot, foot) = area.split_vertically(plot_h);
        let centres = |n: f64| {
            (0..n as usize)
                .map(|i| i as f64 + 0.5)
                .collect::<Vec<f64>>()
        };
        let name_of = |names: &[String], v: f64| {
            names
                .get((v - 0.5).round().max(0.0) as usize)
                .cloned()
                .unwrap_or_default()
        };
        let mut chart = ChartBuilder::on(&plot)
            .margin_right(30)
            .margin_top(6)
            .x_label_area_size(56)
            .y_label_area_size(90)
            .build_cartesian_2d(ticked(0f64..nc, centres(nc)), ticked(0f64..nr, centres(nr)))?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .x_label_formatter(&|v: &f64| name_of(cols, *v))
            .y_label_formatter(&|v: &f64| name_of(rows, *v))
            .label_style(font(LABEL_PX))
            .axis_desc_style(font(LABEL_PX))
            .disable_mesh()
            .draw()?;
        for (ri, row) in values.iter().enumerate() {
            for (ci, v) in row.iter().enumerate() {
                let Some(v) = v.filter(|v| v.is_finite()) else {
                    continue;
                };
                let shown = v / div;
                let f = if max > 0.0 { v / max } else { 0.0 };
                // From pale to dark blue as the value grows.
                let col = HSLColor(0.58, 0.7, 0.92 - 0.62 * f);
                let (a, z) = (
                    (ci as f64 + 0.02, ri as f64 + 0.02),
                    (ci as f64 + 0.98, ri as f64 + 0.98),
                );
                chart.draw_series(std::iter::once(Rectangle::new([a, z], col.filled())))?;
                let (px, py) = in_area(
                    &plot,
                    chart.backend_coord(&(ci as f64 + 0.5, ri as f64 + 0.5)),
                );
                let ink = if f > 0.5 { WHITE } else { BLACK };
                plot.draw(&Text::new(
                    fmt_num(shown),
                    (px, py),
                    font(LABEL_PX)
                        .color(&ink)
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                ))?;
                tips.push(Tip::rect(
                    "cell",
                    chart.backend_coord(&a),
                    chart.backend_coord(&z),
                    label,
                    format!(
                        "{x_label} {}, {y_label} {}: {} {}",
                        cols[ci],
                        rows[ri],
                        fmt_num(shown),
                        unit_of(&value_label)
                    ),
                    v,
                ));
            }
        }
        footer(&foot, &[], &notes)
    })
}

/// The steady-state window of a precondition study, as the chart draws it: the rounds it
/// covers (1-based), the mean of the tracking variable over them, and its least-squares line
/// (value at the first round, change per round).
pub struct SteadyBands {
    pub first_round: usize,
    pub last_round: usize,
    pub mean: f64,
    pub intercept: f64,
    pub slope: f64,
}

/// The steady-state chart of a precondition study: the tracking variable round by round, and
/// over the window its mean with the ±10 % and ±20 % bands and the least-squares line. Each
/// band also gets a transparent `class="band"` box with its limits in `data-lo`/`data-hi`.
pub fn steady_state_chart(
    title: &str,
    y_label: &str,
    values: &[f64],
    window: Option<&SteadyBands>,
) -> String {
    let n = values.len().max(1) as f64;
    let max = values
        .iter()
        .cloned()
        .filter(|v| v.is_finite())
        .fold(window.map_or(0.0, |w| w.mean * 1.2), f64::max);
    let top = if max > 0.0 { max * 1.08 } else { 1.0 };
    let line = PALETTE[0];
    let (band_col, mean_col) = (RGBColor(0x2c, 0xa0, 0x2c), RGBColor(0xd6, 0x27, 0x28));
    let mut keys = vec![Key {
        name: y_label.to_string(),
        colour: RGBColor(line.0, line.1, line.2),
        dashed: false,
    }];
    if window.is_some() {
        keys.push(Key {
            name: "window mean ±10 % (dark) and ±20 % (pale)".into(),
            colour: RGBColor(0x95, 0xd0, 0x95),
            dashed: false,
        });
        keys.push(Key {
            name: "window mean".into(),
            colour: mean_col,
            dashed: true,
        });
        keys.push(Key {
            name: "least-squares line".into(),
            colour: BLACK,
            dashed: true,
        });
    }
    let h = 40 + PLOT_H + footer_h(&keys, &[]);
    draw("steady", title, h, |area, tips| {
        let (plot, foot) = area.split_vertically(PLOT_H);
        let rounds: Vec<f64> = (1..=values.len()).map(|r| r as f64).collect();
        let mut chart = ChartBuilder::on(&plot)
            .margin_right(30)
            .margin_top(10)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .build_cartesian_2d(ticked(0.5..n + 0.5, rounds), lin(0.0, top))?;
        chart
            .configure_mesh()
            .x_desc("round")
            .y_desc(y_label)
            .x_label_formatter(&|v: &f64| format!("{}", v.round()))
            .y_label_formatter(&|v: &f64| fmt_num(*v))
            .label_style(font(LABEL_PX))
            .axis_desc_style(font(LABEL_PX))
            .draw()?;
        if let Some(w) = window {
            let (x0, x1) = (w.first_round as f64 - 0.3, w.last_round as f64 + 0.3);
            for (pct, alpha) in [(20.0, 0.15), (10.0, 0.3)] {
                let (lo, hi) = (w.mean * (1.0 - pct / 100.0), w.mean * (1.0 + pct / 100.0));
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(x0, lo), (x1, hi)],
                    band_col.mix(alpha).filled(),
                )))?;
                let mut tip = Tip::rect(
                    "band",
                    chart.backend_coord(&(x0, hi)),
                    chart.backend_coord(&(x1, lo)),
                    &format!("mean ±{pct} %"),
                    format!("window mean ±{pct} %: {} to {}", fmt_num(lo), fmt_num(hi)),
                    w.mean,
                );
                tip.range = Some((lo, hi));
                tips.push(tip);
            }
            chart.draw_series(DashedLineSeries::new(
                [(x0, w.mean), (x1, w.mean)],
                8,
                5,
                mean_col.stroke_width(2),
            ))?;
            let fit = |r: usize| w.intercept + w.slope * (r - w.first_round) as f64;
            chart.draw_series(DashedLineSeries::new(
                [
                    (w.first_round as f64, fit(w.first_round)),
                    (w.last_round as f64, fit(w.last_round)),
                ],
                4,
                4,
                BLACK.stroke_width(2),
            ))?;
        }
        let col = RGBColor(line.0, line.1, line.2);
        let pts: Vec<(f64, f64)> = values
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(i, v)| (i as f64 + 1.0, *v))
            .collect();
        chart.draw_series(LineSeries::new(pts.iter().cloned(), col.stroke_width(2)))?;
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, col.filled())))?;
        for &(x, y) in &pts {
            tips.push(Tip::dot(
                chart.backend_coord(&(x, y)),
                y_label,
                format!("round {x}: {}", fmt_num(y)),
                y,
            ));
        }
        footer(&foot, &keys, &[])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drawn `<text>`: where it is, how big, how anchored, what it says.
    #[derive(Debug)]
    struct Label {
        x: f64,
        y: f64,
        size: f64,
        anchor: String,
        rotated: bool,
        text: String,
    }

    fn attr(tag: &str, name: &str) -> Option<String> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(tag[at..at + tag[at..].find('"')?].to_string())
    }

    /// Every `<text>` of an SVG.
    fn labels(svg: &str) -> Vec<Label> {
        svg.split("<text")
            .skip(1)
            .map(|t| {
                let tag = &t[..t.find('>').unwrap()];
                let body = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
                let num = |n: &str| attr(tag, n).and_then(|v| v.parse().ok()).unwrap_or(0.0);
                Label {
                    x: num("x"),
                    y: num("y"),
                    size: num("font-size"),
                    anchor: attr(tag, "text-anchor").unwrap_or_default(),
                    rotated: attr(tag, "transform").is_some(),
                    text: body.to_string(),
                }
            })
            .collect()
    }

    /// The horizontal extent of a label, measured with the font the browser is told to use
    /// as wide as plotters measures it (wider than drawn: plotters draws at size / 1.24).
    fn extent(l: &Label) -> (f64, f64) {
        let w = text_w(&l.text, (l.size * 1.24).round() as u32) as f64;
        match l.anchor.as_str() {
            "middle" => (l.x - w / 2.0, l.x + w / 2.0),
            "end" => (l.x - w, l.x),
            _ => (l.x, l.x + w),
        }
    }

    /// No two labels on one line overlap.
    fn assert_no_overlap(svg: &str) {
        let ls: Vec<Label> = labels(svg).into_iter().filter(|l| !l.rotated).collect();
        for (i, a) in ls.iter().enumerate() {
            for b in &ls[i + 1..] {
                if (a.y - b.y).abs() >= a.size.max(b.size) {
                    continue;
                }
                let ((a0, a1), (b0, b1)) = (extent(a), extent(b));
                assert!(
                    a1 <= b0 || b1 <= a0,
                    "labels overlap: {:?} ({a0:.0}..{a1:.0}) and {:?} ({b0:.0}..{b1:.0})",
                    a.text,
                    b.text
                );
            }
        }
    }

    /// (value, width, height) of every bar's tooltip box.
    fn bars(svg: &str) -> Vec<(f64, f64, f64)> {
        svg.split("<rect class=\"bar\"")
            .skip(1)
            .map(|b| {
                let tag = &b[..b.find('>').unwrap()];
                let n = |k: &str| attr(tag, k).unwrap().parse::<f64>().unwrap();
                (n("data-v"), n("width"), n("height"))
            })
            .collect()
    }

    fn series(name: &str, values: &[f64]) -> Series {
        Series {
            name: name.into(),
            values: values.iter().map(|v| Some(*v)).collect(),
        }
    }

    #[test]
    fn one_outlier_does_not_flatten_the_other_normalised_bars() {
        // 24 points, one 2500 times the baseline (+249900 %), the rest within -60..+60 %.
        let mut values: Vec<f64> = (0..23).map(|i| -60.0 + 5.5 * i as f64).collect();
        values.push(249_900.0);
        let rows: Vec<String> = (0..24).map(|i| format!("point {i}")).collect();
        let svg = normalised_chart("n", "base", &rows, &[series("other", &values)]);
        let b = bars(&svg);
        assert_eq!(b.len(), 24);
        for (v, w, _) in &b {
            if v.abs() >= 10.0 {
                assert!(*w >= 25.0, "a bar of {v} % is {w} px long: {svg}");
            }
        }
        // The outlier runs to the end of the axis and says its value; the note says why.
        assert!(svg.contains(">+249900 %</text>"), "{svg}");
        assert!(svg.contains("The axis stops at"));
        // Ticks never go below -100 % and never touch each other.
        for l in labels(&svg) {
            if let Some(n) = l.text.strip_suffix(" %") {
                if let Ok(v) = n.parse::<f64>() {
                    assert!(v >= -100.0, "a tick at {v} %");
                }
            }
        }
        assert_no_overlap(&svg);
    }

    #[test]
    fn minus_100_and_0_percent_ticks_do_not_overlap() {
        // One target lost everything at one point, another gained a lot elsewhere.
        let svg = normalised_chart(
            "n",
            "base",
            &["a".into(), "b".into(), "c".into()],
            &[series("x", &[-100.0, 900.0, 40.0])],
        );
        assert!(
            svg.contains(">-100 %</text>") && svg.contains(">0 %</text>"),
            "{svg}"
        );
        assert_no_overlap(&svg);
    }

    #[test]
    fn category_labels_are_drawn_whole_on_one_line() {
        let ops = [
            "create files",
            "delete files",
            "stat files",
            "open, read and close whole files",
            "append to the log file",
            "fsync",
        ];
        let c = ChartData {
            title: "metadata".into(),
            x_label: "operation".into(),
            y_label: "ops/s".into(),
            x_labels: ops.iter().map(|s| s.to_string()).collect(),
            x_values: None,
            log_x: false,
            series: vec![
                series("xfs", &[5e3, 4e3, 9e4, 1e3, 2e3, 300.0]),
                series("ext4", &[6e3, 3e3, 8e4, 2e3, 1e3, 200.0]),
            ],
        };
        let svg = metric_chart(&c, None);
        assert!(svg.starts_with("<svg class=\"chart bars\""));
        let texts: Vec<String> = labels(&svg).into_iter().map(|l| l.text).collect();
        for op in ops {
            assert!(texts.iter().any(|t| t == op), "{op} not whole in {texts:?}");
        }
        // No text is a piece of a word: every text's words are whole words of some label,
        // axis title or legend entry.
        for t in &texts {
            assert!(!t.contains("cre") || t.contains("create"), "{t}");
        }
        assert_eq!(bars(&svg).len(), 12);
        assert_no_overlap(&svg);
    }

    #[test]
    fn crowded_sizes_on_a_log_axis_keep_their_ticks_apart() {
        let sizes: Vec<f64> = (0..16).map(|k| 4096.0 * 1.5f64.powi(k)).collect();
        let c = ChartData {
            title: "by size".into(),
            x_label: "I/O size, bytes".into(),
            y_label: "read MiB/s".into(),
            x_labels: sizes
                .iter()
                .map(|s| format!("{}k", (*s / 1024.0).round()))
                .collect(),
            x_values: Some(sizes.clone()),
            log_x: true,
            series: vec![series(
                "read",
                &sizes.iter().map(|s| s / 1e4).collect::<Vec<_>>(),
            )],
        };
        let svg = metric_chart(&c, None);
        assert!(svg.starts_with("<svg class=\"chart line\""));
        assert_eq!(svg.matches("class=\"pt\"").count(), 16);
        // The first and the last size are labelled.
        assert!(svg.contains(">4k</text>") && svg.contains(&format!(">{}</text>", c.x_labels[15])));
        assert_no_overlap(&svg);
    }

    #[test]
    fn one_point_needs_no_chart() {
        let c = ChartData {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "KiB/s".into(),
            x_labels: vec!["4k".into()],
            x_values: None,
            log_x: false,
            series: vec![series("s", &[10.0])],
        };
        assert_eq!(metric_chart(&c, None), "");
    }

    #[test]
    fn close_point_labels_do_not_overlap() {
        // Queue depths whose points nearly coincide (the "qd 16 4" pile-up).
        let pts = |lat: f64| -> Vec<(f64, f64, Option<String>)> {
            [1, 2, 4, 8, 16, 32]
                .iter()
                .map(|q| {
                    let bw = 5e8 + if *q >= 4 { 1e6 * *q as f64 } else { 0.0 };
                    (bw, lat * *q as f64, Some(format!("qd {q}")))
                })
                .collect()
        };
        let svg = plot(
            &Plot {
                kind: "latency-throughput",
                title: "t".into(),
                x_label: "throughput".into(),
                y_label: "latency".into(),
                series: vec![
                    PlotSeries {
                        name: "mean".into(),
                        points: pts(1e4),
                        color: 0,
                        dashed: false,
                    },
                    PlotSeries {
                        name: "p99".into(),
                        points: pts(1.1e4),
                        color: 0,
                        dashed: true,
                    },
                ],
                note: None,
            },
            Scale::Rate,
            Scale::Latency,
        );
        assert_no_overlap(&svg);
        assert!(svg.contains(">qd 1</text>"));
        // Axis ticks are in one unit each.
        assert!(
            svg.contains(" MiB/s</text>") && svg.contains(" µs</text>"),
            "{svg}"
        );
    }

    #[test]
    fn many_percentile_lines_share_one_chart_with_distinct_colours() {
        let series: Vec<PlotSeries> = (0..20)
            .map(|k| PlotSeries {
                name: format!("point {k}"),
                points: PERCENTILES
                    .iter()
                    .map(|q| (nines(*q), 1e4 * (k + 1) as f64 / (1.0 - q), None))
                    .collect(),
                color: k,
                dashed: false,
            })
            .collect();
        let svg = plot(
            &Plot {
                kind: "percentiles",
                title: "p".into(),
                x_label: "percentile".into(),
                y_label: "latency".into(),
                series,
                note: None,
            },
            Scale::Nines,
            Scale::LogLatency,
        );
        assert_eq!(svg.matches("<svg").count(), 1);
        assert_eq!(svg.matches("class=\"pt\"").count(), 20 * 9);
        let colours: std::collections::BTreeSet<String> = (0..20)
            .map(|i| {
                let RGBColor(r, g, b) = colour(i, 20);
                format!("{r},{g},{b}")
            })
            .collect();
        assert_eq!(colours.len(), 20);
        for k in 0..20 {
            assert!(
                svg.contains(&format!(">point {k}</text>")),
                "legend of point {k}"
            );
        }
        for t in ["p50", "p90", "p99", "p99.9", "p99.99"] {
            assert!(svg.contains(&format!(">{t}</text>")));
        }
        assert!(svg.contains(" ms</text>"), "unit-aware log ticks");
        assert_no_overlap(&svg);
    }

    #[test]
    fn a_heatmap_writes_each_cell() {
        let svg = heatmap(
            "grid",
            "queue depth",
            "threads",
            &["1".into(), "4".into(), "16".into()],
            &["1".into(), "2".into()],
            &[
                vec![Some(1024.0), Some(2048.0), None],
                vec![Some(4096.0), Some(8192.0), Some(3072.0)],
            ],
            "KiB/s",
        );
        assert_eq!(svg.matches("class=\"cell\"").count(), 5);
        assert!(svg.contains(">8</text>"), "8 MiB/s in its cell: {svg}");
        assert_no_overlap(&svg);
    }

    #[test]
    fn a_latency_histogram_of_one_point_is_bars() {
        let buckets: Vec<[u64; 2]> = vec![[900, 10], [1_100, 50], [2_500, 30], [40_000, 10]];
        let svg = latency_histogram("h", &[("run".into(), buckets)]);
        let b = bars(&svg);
        assert_eq!(b.len(), 4);
        let total: f64 = b.iter().map(|x| x.0).sum();
        assert!((total - 100.0).abs() < 1e-9, "shares add up to 100 %");
        assert!(svg.contains(" µs</text>"), "unit-aware ticks");
        assert_no_overlap(&svg);
    }
}
