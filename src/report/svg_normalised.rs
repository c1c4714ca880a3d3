//! The diverging bars of a summary normalised to a baseline (baseline = 0, like the
//! shootout's Figure 1): the negative side of the axis ends at -100 % at most, row labels
//! wrap instead of being cut.

use super::svg::{esc, fmt_tick, nice_axis, Series, MT, PALETTE, W};
use super::svg_plot::{text_lines, wrap};
use std::fmt::Write;

/// Horizontal bars of percentage differences from a baseline at 0 (Figure 1 of the
/// shootout): one row per (label), one bar per compared target.
pub(crate) fn normalised_chart(
    title: &str,
    baseline: &str,
    rows: &[String],
    series: &[Series],
) -> String {
    // Row labels wrap at 36 characters; a row is as tall as its bars or its label.
    let wrapped: Vec<Vec<String>> = rows.iter().map(|r| wrap(r, 36)).collect();
    let bars_h = 16.0 * series.len().max(1) as f64 + 8.0;
    let row_hs: Vec<f64> = wrapped
        .iter()
        .map(|l| bars_h.max(13.0 * l.len() as f64 + 6.0))
        .collect();
    let h = MT + 30.0 + row_hs.iter().sum::<f64>() + 40.0;
    let label_w = 230.0;
    let plot_l = label_w + 10.0;
    let plot_w = W - plot_l - 40.0;
    let values = || series.iter().flat_map(|s| s.values.iter().flatten());
    let neg = values().map(|v| -v).fold(0.0, f64::max);
    let pos = values().cloned().fold(0.0, f64::max);
    // One step for both sides; the negative side ends at -100 % at most (a value cannot
    // fall below it: that would be less than nothing).
    let (_, step) = nice_axis(neg.max(pos).max(1.0));
    let lim_neg = if neg > 0.0 {
        ((neg / step).ceil() * step).min(100.0)
    } else {
        0.0
    };
    let lim_pos = if pos > 0.0 {
        (pos / step).ceil() * step
    } else {
        0.0
    };
    let (lim_neg, lim_pos) = if lim_neg + lim_pos <= 0.0 {
        (step, step)
    } else {
        (lim_neg, lim_pos)
    };
    let scale = plot_w / (lim_neg + lim_pos);
    let zero = plot_l + lim_neg * scale;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="chart normalised" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" aria-label="{t}"><rect x="0" y="0" width="{W}" height="{h}" fill="white"/><text x="{x}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{t}</text>"#,
        t = esc(title),
        x = W / 2.0
    );
    let bottom = h - 40.0;
    let mut ticks: Vec<f64> = Vec::new();
    let mut v = 0.0;
    while v <= lim_neg + step * 0.01 {
        ticks.push(if v == 0.0 { 0.0 } else { -v.min(lim_neg) });
        v += step;
    }
    if ticks.last().is_some_and(|t| *t > -lim_neg + 1e-9) {
        ticks.push(-lim_neg);
    }
    let mut v = step;
    while v <= lim_pos + step * 0.01 {
        ticks.push(v);
        v += step;
    }
    ticks.sort_by(|a, b| a.total_cmp(b));
    ticks.dedup();
    for v in ticks {
        let x = zero + v * scale;
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{bottom}" stroke="{c}"/><text class="ntick" x="{x:.1}" y="{ty}" text-anchor="middle" font-size="11" data-v="{v}">{}%</text>"##,
            fmt_tick(v),
            c = if v.abs() < 1e-9 { "#333" } else { "#e0e0e0" },
            ty = bottom + 15.0
        );
    }
    let _ = write!(
        out,
        r#"<text x="{x}" y="{y}" text-anchor="middle" font-size="12">difference from {} (baseline = 0), percent</text>"#,
        esc(baseline),
        // Centred under the plot: the zero line may sit at either edge.
        x = plot_l + plot_w / 2.0,
        y = h - 8.0
    );
    let mut y0 = MT + 10.0;
    for (ri, r) in rows.iter().enumerate() {
        let row_h = row_hs[ri];
        let lines = &wrapped[ri];
        out.push_str(&text_lines(
            label_w,
            y0 + row_h / 2.0 - 6.5 * (lines.len() as f64 - 1.0) + 4.0,
            lines,
            13.0,
            r#"class="rowlabel" text-anchor="end" font-size="11""#,
            r,
        ));
        for (si, s) in series.iter().enumerate() {
            if let Some(Some(v)) = s.values.get(ri) {
                let v = &v.max(-100.0);
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
        y0 += row_h;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_normalised_axis_never_goes_below_minus_100_percent() {
        let n = normalised_chart(
            "sum",
            "/a",
            &["x".into(), "y".into()],
            &[Series {
                name: "/b".into(),
                values: vec![Some(-95.0), Some(400.0)],
            }],
        );
        let ticks: Vec<f64> = n
            .split("class=\"ntick\"")
            .skip(1)
            .map(|t| {
                let v = t.split("data-v=\"").nth(1).unwrap();
                v[..v.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert!(ticks.iter().all(|t| *t >= -100.0), "{ticks:?}");
        assert!(
            ticks.contains(&-100.0) && ticks.contains(&400.0),
            "{ticks:?}"
        );
        // The zero line sits left of centre: the positive side is longer.
        assert!(n.contains(">0%</text>"));
    }
}
