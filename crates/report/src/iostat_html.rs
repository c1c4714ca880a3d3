//! The observation data of Results in the HTML report: device statistics sampled with
//! `--iostat` charted over time per device (throughput, requests, time per I/O, utilisation,
//! queue length, as `sar -d` reports them), with the averages over the timed run, and the
//! extents of the files a run wrote.

use super::chart::{self, esc, XyChart, XySeries};
use crate::probe::diskstats::{self, DeviceSample, IostatSeries};
use crate::result::RunResult;
use crate::sweep::record::Record;
use std::fmt::Write;

/// Anchor of the section in the report.
pub(crate) const ANCHOR: &str = "device-statistics";

/// The iostat samples stored in a Result, if any.
pub(crate) fn series_of(r: &RunResult) -> Option<IostatSeries> {
    let s: IostatSeries = serde_json::from_value(r.probes.get("iostat")?.clone()).ok()?;
    (!s.samples.is_empty()).then_some(s)
}

/// Device names in the order the sampler watched them, then any others it saw.
fn device_names(s: &IostatSeries) -> Vec<String> {
    let mut names: Vec<String> = s.devices.clone();
    for x in &s.samples {
        if !names.contains(&x.device) {
            names.push(x.device.clone());
        }
    }
    names.retain(|n| s.samples.iter().any(|x| &x.device == n));
    names
}

/// The time-series charts of one device: x is seconds from the start of the timed run
/// (each point ends one sampling interval; negative times cover target preparation).
pub(crate) fn device_charts(s: &IostatSeries, device: &str) -> Vec<XyChart> {
    let these: Vec<&DeviceSample> = s.samples.iter().filter(|x| x.device == device).collect();
    let t = |x: &DeviceSample| x.t_s - s.run_start_s;
    let line = |name: &str, f: fn(&DeviceSample) -> f64| XySeries {
        name: name.to_string(),
        points: these.iter().map(|x| (t(x), f(x))).collect(),
    };
    let x_label = format!(
        "time from the start of the timed run, s (one point per {} interval)",
        fmt_interval(s.interval_s)
    );
    let markers = if these.iter().any(|x| t(x) < 0.0) {
        vec![(0.0, "timed run starts".to_string())]
    } else {
        Vec::new()
    };
    let chart = |title: &str, y_label: &str, y_max: Option<f64>, series: Vec<XySeries>| XyChart {
        title: format!("{device}: {title}"),
        x_label: x_label.clone(),
        y_label: y_label.to_string(),
        y_max,
        markers: markers.clone(),
        series,
    };
    vec![
        chart(
            "throughput",
            "KiB/s",
            None,
            vec![
                line("read KiB/s", |x| x.read_kb_per_sec),
                line("write KiB/s", |x| x.write_kb_per_sec),
            ],
        ),
        chart(
            "requests completed",
            "requests per second",
            None,
            vec![
                line("reads/s", |x| x.reads_per_sec),
                line("writes/s", |x| x.writes_per_sec),
            ],
        ),
        chart(
            "time per I/O",
            "milliseconds per I/O",
            None,
            vec![
                line("await (queued + service)", |x| x.await_ms),
                line("avwait (queued)", |x| x.avwait_ms),
                line("avserv (service)", |x| x.avserv_ms),
            ],
        ),
        chart(
            "utilisation",
            "busy, % of the interval",
            Some(100.0),
            vec![line("%busy", |x| x.util_pct)],
        ),
        chart(
            "queue length",
            "requests queued or in service",
            None,
            vec![line("avque", |x| x.avg_queue)],
        ),
    ]
}

fn fmt_interval(s: f64) -> String {
    if s >= 1.0 {
        format!("{} s", svg_num(s))
    } else {
        format!("{} ms", svg_num(s * 1000.0))
    }
}

fn svg_num(v: f64) -> String {
    if v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Averages per device over the samples of the timed run (all samples if none ended inside it).
fn averages_table(s: &IostatSeries, names: &[String]) -> String {
    let mut out = String::from(
        "<div class=\"tablewrap\"><table><thead><tr><th class=\"key\">device</th><th>r/s</th><th>w/s</th><th>rKiB/s</th><th>wKiB/s</th><th>avque</th><th>await ms</th><th>avwait ms</th><th>avserv ms</th><th>%busy</th><th>samples</th></tr></thead><tbody>",
    );
    for n in names {
        let all: Vec<&DeviceSample> = s.samples.iter().filter(|x| &x.device == n).collect();
        let in_run: Vec<&DeviceSample> = all
            .iter()
            .copied()
            .filter(|x| x.t_s > s.run_start_s)
            .collect();
        let used = if in_run.is_empty() { &all } else { &in_run };
        if let Some(a) = diskstats::average(used) {
            let _ = write!(
                out,
                "<tr><td class=\"key\">{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.1}</td><td>{}</td></tr>",
                esc(n),
                a.reads_per_sec,
                a.writes_per_sec,
                a.read_kb_per_sec,
                a.write_kb_per_sec,
                a.avg_queue,
                a.await_ms,
                a.avwait_ms,
                a.avserv_ms,
                a.util_pct,
                used.len()
            );
        }
    }
    out.push_str("</tbody></table></div>");
    out
}

/// The extents of the files a run wrote (`probes.extents`), as a small table.
pub(crate) fn extents_table(r: &RunResult) -> Option<String> {
    let files = r.probes.get("extents")?.get("files")?.as_array()?;
    if files.is_empty() {
        return None;
    }
    let mut out = String::from(
        "<div class=\"tablewrap\"><table><thead><tr><th class=\"key\">file</th><th>size, bytes</th><th>extents</th><th>unwritten extents</th></tr></thead><tbody>",
    );
    for f in files {
        let num = |k: &str| {
            f.get(k)
                .and_then(|x| x.as_u64())
                .map(|n| n.to_string())
                .unwrap_or_else(|| "-".into())
        };
        let extents = match f.get("extents").and_then(|x| x.as_u64()) {
            Some(n) => n.to_string(),
            None => format!(
                "unknown ({})",
                f.get("error")
                    .and_then(|x| x.as_str())
                    .unwrap_or("no FIEMAP")
            ),
        };
        let _ = write!(
            out,
            "<tr><td class=\"key\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(f.get("path").and_then(|x| x.as_str()).unwrap_or("?")),
            num("size_bytes"),
            esc(&extents),
            num("unwritten_extents")
        );
    }
    out.push_str("</tbody></table></div>");
    Some(out)
}

/// One Result's block: a `<details>` with the averages, the charts of every device that did
/// I/O, and the extents table. None when the Result has neither samples nor extents.
pub(crate) fn result_block(
    r: &RunResult,
    label: &str,
    open: bool,
    with_extents: bool,
) -> Option<String> {
    let series = series_of(r);
    let extents = if with_extents { extents_table(r) } else { None };
    if series.is_none() && extents.is_none() {
        return None;
    }
    let mut out = String::new();
    let summary = match &series {
        Some(s) => format!(
            "{label}: {} sample(s) every {} of {}",
            s.samples.len(),
            fmt_interval(s.interval_s),
            if s.devices.is_empty() {
                "every device with I/O".to_string()
            } else {
                s.devices.join(", ")
            }
        ),
        None => format!("{label}: file extents"),
    };
    let _ = write!(
        out,
        "<details class=\"observe\"{}><summary>{}</summary>",
        if open { " open" } else { "" },
        esc(&summary)
    );
    if let Some(s) = &series {
        let names = device_names(s);
        if let Some(n) = r.probes.get("iostat").and_then(|v| v.get("note")) {
            if let Some(n) = n.as_str() {
                let _ = write!(out, "<p class=\"notes\">note: {}</p>", esc(n));
            }
        }
        out.push_str("<p class=\"meta\">Averages over the timed run:</p>");
        out.push_str(&averages_table(s, &names));
        out.push_str("<div class=\"charts\">");
        let mut idle = Vec::new();
        for n in &names {
            let busy = s.samples.iter().any(|x| {
                &x.device == n
                    && (x.reads_per_sec > 0.0 || x.writes_per_sec > 0.0 || x.util_pct > 0.0)
            });
            if !busy {
                idle.push(n.clone());
                continue;
            }
            for c in device_charts(s, n) {
                out.push_str(&chart::xy_chart(&c));
            }
        }
        out.push_str("</div>");
        if !idle.is_empty() {
            let _ = write!(
                out,
                "<p class=\"notes\">No I/O on {} during sampling (not charted).</p>",
                esc(&idle.join(", "))
            );
        }
    }
    if let Some(t) = extents {
        out.push_str("<p class=\"meta\">Extents of the files the run wrote (FIEMAP):</p>");
        out.push_str(&t);
    }
    out.push_str("</details>");
    Some(out)
}

/// The report's section for every Result with device samples (and, for plain runs, extents).
/// Blocks are open when there are few of them.
pub(crate) fn section(records: &[Record]) -> Option<String> {
    let plain = |rec: &Record| rec.meta().suite.is_empty() && rec.meta().study == "runs";
    let with_data: Vec<(&Record, &RunResult)> = records
        .iter()
        .filter_map(|rec| rec.result().map(|r| (rec, r)))
        .filter(|(rec, r)| series_of(r).is_some() || (plain(rec) && extents_table(r).is_some()))
        .collect();
    if with_data.is_empty() {
        return None;
    }
    let open = with_data.len() <= 3;
    let mut out = format!(
        "<section class=\"observe\" id=\"{ANCHOR}\"><h2>Device statistics during the runs</h2><p class=\"notes\">Sampled from /proc/diskstats with <code>--iostat</code> for the block devices under each target (partition, its disk, a loop device's backing storage). await = avwait (queued) + avserv (in service), per I/O; %busy is the share of each interval with I/O in flight.</p>"
    );
    for (rec, r) in with_data {
        let m = rec.meta();
        let label = if plain(rec) {
            r.name.clone()
        } else {
            let rep = if m.repeat > 0 {
                format!(" (repeat {})", m.repeat + 1)
            } else {
                String::new()
            };
            let on = m
                .target
                .as_ref()
                .map(|t| format!(" on {t}"))
                .unwrap_or_default();
            let point = m.point_label();
            if point.is_empty() {
                format!("{}{rep}{on}", m.title)
            } else {
                format!("{}: {point}{rep}{on}", m.title)
            }
        };
        if let Some(b) = result_block(r, &label, open, plain(rec)) {
            out.push_str(&b);
        }
    }
    out.push_str("</section>");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(device: &str, t_s: f64, kb: f64) -> DeviceSample {
        DeviceSample {
            device: device.into(),
            t_s,
            interval_s: 0.5,
            reads_per_sec: kb / 4.0,
            writes_per_sec: 0.0,
            read_kb_per_sec: kb,
            write_kb_per_sec: 0.0,
            blocks_per_sec: kb * 2.0,
            avg_queue: 1.0,
            await_ms: 2.0,
            avwait_ms: 1.5,
            avserv_ms: 0.5,
            util_pct: 50.0,
        }
    }

    fn idle(device: &str, t_s: f64) -> DeviceSample {
        DeviceSample {
            util_pct: 0.0,
            avg_queue: 0.0,
            ..sample(device, t_s, 0.0)
        }
    }

    #[test]
    fn one_chart_set_per_busy_device_with_every_sample() {
        let s = IostatSeries {
            devices: vec!["loop0".into(), "vda".into(), "sdz".into()],
            interval_s: 0.5,
            run_start_s: 0.2,
            samples: vec![
                sample("loop0", 0.5, 100.0),
                sample("vda", 0.5, 90.0),
                idle("sdz", 0.5),
                sample("loop0", 1.0, 200.0),
                sample("vda", 1.0, 180.0),
                idle("sdz", 1.0),
            ],
        };
        let charts = device_charts(&s, "loop0");
        assert_eq!(charts.len(), 5);
        let kb = &charts[0].series[0];
        // x is measured from the start of the timed run.
        assert_eq!(kb.points, vec![(0.3, 100.0), (0.8, 200.0)]);
        assert_eq!(charts[3].y_max, Some(100.0));
        let rec = crate::table::tests::fake("s", &[("bs", "4k")], 1.0, 1.0, None);
        let mut r = rec.result().unwrap().clone();
        r.probes
            .insert("iostat".into(), serde_json::to_value(&s).unwrap());
        r.probes.insert(
            "extents".into(),
            serde_json::json!({"files": [{"path": "f1", "extents": 6, "size_bytes": 4096, "unwritten_extents": 0}]}),
        );
        let html = result_block(&r, "run", true, true).unwrap();
        // sdz had samples but no I/O: listed, not charted. 2 devices x 5 charts.
        assert!(html.contains("<details class=\"observe\" open>"));
        assert_eq!(
            html.matches("<svg class=\"chart line timeseries\"").count(),
            10
        );
        // Per device: throughput 2 lines, requests 2, times 3, busy 1, queue 1 = 9 lines of 2 points.
        assert_eq!(html.matches("class=\"pt\"").count(), 2 * 9 * 2);
        assert!(html.contains("No I/O on sdz"));
        assert!(html.contains("<td class=\"key\">f1</td><td>4096</td><td>6</td>"));
        assert!(html.contains("loop0: throughput") && html.contains("KiB/s"));
    }
}
