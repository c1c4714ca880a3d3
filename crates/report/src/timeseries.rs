//! The `--status-interval` time series of Results in the HTML report: IOPS and latency (p50,
//! p99) on two y axes over the run, and bandwidth, one point per interval, per Result that has
//! them.

use super::chart::{self, esc, XyChart, XySeries};
use crate::result::RunResult;
use crate::runner::live::IntervalReport;
use crate::sweep::record::Record;

/// Anchor of the section in the report.
pub(crate) const ANCHOR: &str = "time-series";

/// The charts of one Result's time series (x: seconds from the run's start): IOPS with
/// latency on a second axis, then bandwidth.
pub(crate) fn charts(r: &RunResult, label: &str) -> Vec<String> {
    let ts = &r.timeseries;
    let line = |name: &str, f: fn(&IntervalReport) -> f64| XySeries {
        name: name.to_string(),
        points: ts.iter().map(|i| (i.t_s, f(i))).collect(),
    };
    let interval = ts.first().map_or(0.0, |i| i.interval_s);
    let x_label =
        format!("time from the start of the run, s (one point per {interval:.3} s interval)");
    let chart = |title: &str, y_label: &str, series: Vec<XySeries>| XyChart {
        title: format!("{label}: {title}"),
        x_label: x_label.clone(),
        y_label: y_label.to_string(),
        y_max: None,
        markers: Vec::new(),
        series,
    };
    let iops = chart(
        "IOPS and latency",
        "operations per second",
        vec![
            line("total IOPS", |i| i.iops),
            line("read IOPS", |i| i.read_iops),
            line("write IOPS", |i| i.write_iops),
        ],
    );
    let latency = chart(
        "latency",
        "latency, µs",
        vec![
            line("p50 latency", |i| i.lat_ns.p50 as f64 / 1e3),
            line("p99 latency", |i| i.lat_ns.p99 as f64 / 1e3),
        ],
    );
    let bandwidth = chart(
        "bandwidth",
        "MiB/s",
        vec![
            line("read MiB/s", |i| i.read_bytes_per_sec / 1048576.0),
            line("write MiB/s", |i| i.write_bytes_per_sec / 1048576.0),
        ],
    );
    vec![
        chart::dual_axis_chart(&iops, Some(&latency)),
        chart::xy_chart(&bandwidth),
    ]
}

/// The report's section for every Result with a time series (None when none has one).
pub(crate) fn section(records: &[Record]) -> Option<String> {
    let with: Vec<&RunResult> = records
        .iter()
        .filter_map(|rec| rec.result())
        .filter(|r| !r.timeseries.is_empty())
        .collect();
    if with.is_empty() {
        return None;
    }
    let open = with.len() <= 3;
    let mut out = format!(
        "<section class=\"observe\" id=\"{ANCHOR}\"><h2>During the runs</h2><p class=\"notes\">Kept with <code>--status-interval</code>: the operations, bytes and latency of the I/Os completed in each interval, all threads together.</p>"
    );
    for r in with {
        out.push_str(&format!(
            "<details class=\"observe\"{}><summary>{} ({} intervals)</summary>",
            if open { " open" } else { "" },
            esc(&r.name),
            r.timeseries.len()
        ));
        for c in charts(r, &r.name) {
            out.push_str(&c);
        }
        out.push_str("</details>");
    }
    out.push_str("</section>");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_with_a_series_gets_iops_and_latency_on_two_axes_and_bandwidth() {
        let rec = crate::table::tests::fake("s", &[("bs", "4k")], 1.0, 1.0, None);
        let mut r = rec.result().unwrap().clone();
        r.timeseries = (1..=4)
            .map(|k| IntervalReport {
                t_s: k as f64 * 0.25,
                interval_s: 0.25,
                iops: 1000.0 * k as f64,
                read_iops: 1000.0 * k as f64,
                read_bytes_per_sec: 4096.0 * 1000.0 * k as f64,
                ..Default::default()
            })
            .collect();
        let charts = charts(&r, "run");
        assert_eq!(charts.len(), 2);
        assert!(charts[0].starts_with("<svg class=\"chart line timeseries dual\""));
        assert!(charts[0].contains(r#"data-series="total IOPS" data-v="4000""#));
        assert!(charts[0].contains(">p99 latency (right axis)</text>"));
        assert!(charts[0].contains(">latency, µs</text>"), "the right axis");
        assert!(charts[1].starts_with("<svg class=\"chart line timeseries\""));
        let svg: String = charts.concat();
        // IOPS 3 lines and latency 2, bandwidth 2: 7 lines of 4 points.
        assert_eq!(svg.matches("class=\"pt\"").count(), 7 * 4);
    }
}
