//! `fsbench advise` as an HTML section, embedded in `fsbench report` when an advise JSON is
//! among its inputs, or in the page of its own that `super::html::advise_page` makes. The
//! topology, the derived tunables and where each came from, the checks with the commands that
//! change them, and with `--measure` the charts of the measurements each recommendation rests
//! on: throughput by I/O size buffered vs direct, for reads and for writes, and by streams.

use super::chart::{self, esc, ChartData, Series};
use crate::advise::checks::{Check, Status};
use crate::advise::derive::{Tunable, Tunables};
use crate::advise::measure::{self, Dir, Measurement};
use crate::advise::Advice;
use crate::probe::topology::{BlockDev, QueueLimits};
use crate::units::format_size_exact as sz;
use std::fmt::Write;

/// Extra rules on top of the report's style sheet (status colours, commands).
pub const STYLE_EXTRA: &str = "td.warn{color:#b00;font-weight:bold}td.info{color:#a60}td.ok{color:#270}code{font-size:12px;background:#f6f6f6;padding:1px 3px}td.src{text-align:left;font-size:12px}td.val{white-space:nowrap}td.src ul{margin:2px 0;padding-left:16px;color:#555}h3{font-size:16px;margin-top:22px}";

/// The Advice documents among JSON values: `kind: "advise"`. Anything else is not advice.
pub fn is_advice(v: &serde_json::Value) -> bool {
    v.get("kind").and_then(|k| k.as_str()) == Some("advise")
}

/// Parse an advise document, checking its schema version.
pub fn parse(v: serde_json::Value, origin: &str) -> Result<Advice, crate::error::UsageError> {
    let version = v.get("schema_version").and_then(|x| x.as_u64());
    if version != Some(1) {
        return Err(crate::usage!(
            "{origin}: advise document with schema_version {}: this fsbench reads version 1",
            version
                .map(|x| x.to_string())
                .unwrap_or_else(|| "missing".into())
        ));
    }
    serde_json::from_value(v).map_err(|e| crate::usage!("{origin}: bad advise document: {e}"))
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "-".into())
}

fn opt_size(v: &Option<u64>) -> String {
    v.map(sz).unwrap_or_else(|| "-".into())
}

/// A tunable's value in its unit: `1m (1048576 bytes)`, `4`, `2048 KiB`.
fn value_text(t: &Tunable) -> String {
    match t.unit.as_str() {
        "bytes" => format!("{} ({} bytes)", sz(t.value), t.value),
        "count" | "" => t.value.to_string(),
        u => format!("{} {u}", t.value),
    }
}

/// One column per device of the stack (outermost first), one row per attribute: the stack
/// stays readable however many attributes a device has.
fn devices_table(out: &mut String, root: &BlockDev) {
    fn collect<'a>(d: &'a BlockDev, depth: usize, v: &mut Vec<(usize, &'a BlockDev)>) {
        v.push((depth, d));
        for l in &d.lower {
            collect(l, depth + 1, v);
        }
    }
    let mut devs = Vec::new();
    collect(root, 0, &mut devs);
    out.push_str("<div class=\"tablewrap\"><table class=\"devices\"><thead><tr><th class=\"key\">device</th>");
    for (depth, d) in &devs {
        let _ = write!(
            out,
            "<th class=\"key\">{}{} ({}, {:?})</th>",
            if *depth > 0 { "↳ " } else { "" },
            esc(&d.name),
            esc(&d.dev),
            d.kind
        );
    }
    out.push_str("</tr></thead><tbody>");
    type Cell = fn(&BlockDev, &QueueLimits) -> String;
    let rows: [(&str, Cell); 13] = [
        ("size", |d, _| {
            d.size_bytes
                .map(|s| crate::units::format_bytes(s as f64))
                .unwrap_or_else(|| "-".into())
        }),
        ("logical / physical block size, bytes", |_, q| {
            format!(
                "{} / {}",
                opt(&q.logical_block_size_bytes),
                opt(&q.physical_block_size_bytes)
            )
        }),
        ("minimum_io_size (stripe unit), bytes", |_, q| {
            opt(&q.minimum_io_size_bytes)
        }),
        ("optimal_io_size (stripe width), bytes", |_, q| {
            opt(&q.optimal_io_size_bytes)
        }),
        ("rotational", |_, q| {
            q.rotational
                .map(|r| if r { "yes" } else { "no" })
                .unwrap_or("-")
                .into()
        }),
        ("nr_requests", |_, q| opt(&q.nr_requests)),
        ("max_sectors_kb (hardware limit)", |_, q| {
            format!("{} ({})", opt(&q.max_sectors_kb), opt(&q.max_hw_sectors_kb))
        }),
        ("read_ahead_kb", |_, q| opt(&q.read_ahead_kb)),
        ("scheduler [available]", |_, q| {
            format!(
                "{} [{}]",
                opt(&q.scheduler),
                q.schedulers_available.join(" ")
            )
        }),
        ("queue depth", |d, _| {
            format!(
                "{}{}",
                opt(&d.queue_depth),
                d.queue_depth_source
                    .as_ref()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default()
            )
        }),
        ("hardware queues", |d, _| opt(&d.hw_queues)),
        ("NUMA node", |d, _| opt(&d.numa_node)),
        ("details", |d, _| {
            let mut v = Vec::new();
            if let Some(p) = &d.partition {
                v.push(format!(
                    "partition {} of {}, starts at byte {}",
                    opt(&p.number),
                    p.disk,
                    p.start_bytes
                ));
            }
            if let Some(l) = &d.loop_info {
                v.push(format!(
                    "backing file {} offset {} direct_io {}",
                    l.backing_file,
                    l.offset_bytes,
                    opt(&l.direct_io)
                ));
            }
            if let Some(m) = &d.md {
                v.push(format!(
                    "md {} raid_disks {} chunk {}",
                    m.level,
                    m.raid_disks,
                    opt_size(&m.chunk_size_bytes)
                ));
            }
            if let Some(m) = &d.dm {
                v.push(format!("dm {}", m.name));
            }
            v.extend(d.notes.iter().map(|n| format!("note: {n}")));
            v.join("; ")
        }),
    ];
    for (name, cell) in rows {
        let _ = write!(out, "<tr><th class=\"key\">{}</th>", esc(name));
        for (_, d) in &devs {
            let q = d.queue.clone().unwrap_or_default();
            let _ = write!(out, "<td class=\"key\">{}</td>", esc(&cell(d, &q)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
}

fn topology(out: &mut String, a: &Advice) {
    let t = &a.topology;
    out.push_str("<h3>Topology</h3><div class=\"tablewrap\"><table><tbody>");
    let mut kv = |k: &str, v: String| {
        let _ = write!(
            out,
            "<tr><th class=\"key\">{}</th><td class=\"key\">{}</td></tr>",
            esc(k),
            esc(&v)
        );
    };
    kv("path", t.path.clone());
    if let Some(m) = &t.mount {
        kv(
            "mount",
            format!(
                "{} type {} from {} ({})",
                m.mount_point, m.fs_type, m.source, m.options
            ),
        );
    }
    if let Some(g) = &t.fs {
        let stripe = match (g.stripe_unit_bytes, g.stripe_width_bytes) {
            (Some(u), Some(w)) => format!("stripe unit {} width {}", sz(u), sz(w)),
            _ => "no stripe".into(),
        };
        kv(
            "file system geometry",
            format!(
                "{} block {}, {stripe} ({})",
                g.fs_type,
                opt(&g.block_size_bytes),
                g.source
            ),
        );
    }
    let l = &a.derived.layout;
    kv("layout", format!("{} (from {})", l.describe(), l.source));
    out.push_str("</tbody></table></div>");
    if let Some(d) = &t.device {
        devices_table(out, d);
    }
    if !t.notes.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for n in &t.notes {
            let _ = write!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul>");
    }
}

fn source_cell(t: &Tunable) -> String {
    let mut s = format!("<td class=\"src\">{}", esc(&t.source));
    if !t.evidence.is_empty() {
        s.push_str("<ul>");
        for e in &t.evidence {
            let _ = write!(s, "<li>{}</li>", esc(e));
        }
        s.push_str("</ul>");
    }
    s.push_str("</td>");
    s
}

/// vxtunefs-style table: name, value, where it came from; with a measured column when there is one.
fn tunables(out: &mut String, derived: &Tunables, measured: Option<&Tunables>) {
    out.push_str("<h3>File system I/O parameters</h3><div class=\"tablewrap\"><table><thead><tr><th class=\"key\">tunable</th><th>derived from the layout</th><th class=\"key\">where it came from</th>");
    if measured.is_some() {
        out.push_str("<th>measured</th><th class=\"key\">what the measured value rests on</th>");
    }
    out.push_str("</tr></thead><tbody>");
    for d in &derived.values {
        let _ = write!(
            out,
            "<tr><td class=\"key\"><code>{}</code></td><td class=\"val\">{}</td>{}",
            esc(&d.name),
            esc(&value_text(d)),
            source_cell(d)
        );
        if let Some(m) = measured {
            match m.values.iter().find(|x| x.name == d.name) {
                Some(x) if x != d => {
                    let _ = write!(
                        out,
                        "<td class=\"val\"><b>{}</b></td>{}",
                        esc(&value_text(x)),
                        source_cell(x)
                    );
                }
                _ => out.push_str("<td>unchanged</td><td class=\"src\"></td>"),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
}

fn checks(out: &mut String, title: &str, list: &[Check]) {
    let _ = write!(out, "<h3>{}</h3>", esc(title));
    if list.is_empty() {
        out.push_str("<p class=\"notes\">No checks: no block device to check.</p>");
        return;
    }
    out.push_str("<div class=\"tablewrap\"><table><thead><tr><th class=\"key\">status</th><th class=\"key\">subject</th><th class=\"key\">check</th><th class=\"key\">finding</th><th class=\"key\">why</th><th class=\"key\">command to change it (not run by fsbench)</th></tr></thead><tbody>");
    for c in list {
        let (class, tag) = match c.status {
            Status::Ok => ("ok", "ok"),
            Status::Info => ("info", "info"),
            Status::Warn => ("warn", "WARN"),
        };
        let _ = write!(
            out,
            "<tr class=\"check\"><td class=\"key {class}\">{tag}</td><td class=\"key\">{}</td><td class=\"key\">{}</td><td class=\"src\">{}</td><td class=\"src\">{}</td><td class=\"src\">{}</td></tr>",
            esc(&c.subject),
            esc(&c.id),
            esc(&c.finding),
            esc(&c.reason),
            c.fix
                .as_ref()
                .map(|f| format!("<code>{}</code>", esc(f)))
                .unwrap_or_default()
        );
    }
    out.push_str("</tbody></table></div>");
}

fn mb(v: f64) -> f64 {
    v / 1e6
}

/// Throughput by I/O size, buffered and direct, of one direction (single thread).
pub(crate) fn size_chart(m: &Measurement, dir: Dir) -> Option<ChartData> {
    let buffered = measure::size_curve(&m.points, dir, false);
    let direct = measure::size_curve(&m.points, dir, true);
    let mut sizes: Vec<u64> = buffered.iter().chain(&direct).map(|p| p.0).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.is_empty() {
        return None;
    }
    let values = |curve: &[(u64, f64)]| -> Vec<Option<f64>> {
        sizes
            .iter()
            .map(|s| curve.iter().find(|p| p.0 == *s).map(|p| mb(p.1)))
            .collect()
    };
    let mut series = Vec::new();
    if !buffered.is_empty() {
        series.push(Series {
            name: "buffered".into(),
            values: values(&buffered),
        });
    }
    if !direct.is_empty() {
        series.push(Series {
            name: "direct".into(),
            values: values(&direct),
        });
    }
    Some(ChartData {
        title: format!(
            "Sequential {}s, one thread: throughput by I/O size",
            dir.name()
        ),
        x_label: "I/O size, bytes".into(),
        y_label: "MB/s".into(),
        x_labels: sizes.iter().map(|s| sz(*s)).collect(),
        x_values: Some(sizes.iter().map(|s| *s as f64).collect()),
        log_x: sizes.len() > 1,
        series,
    })
}

/// Throughput by concurrent streams (threads of direct I/O), reads and writes.
pub(crate) fn streams_chart(m: &Measurement) -> Option<ChartData> {
    let reads = measure::stream_curve(&m.points, Dir::Read);
    let writes = measure::stream_curve(&m.points, Dir::Write);
    let mut threads: Vec<u32> = reads.iter().chain(&writes).map(|p| p.0).collect();
    threads.sort_unstable();
    threads.dedup();
    if threads.is_empty() {
        return None;
    }
    let bs: Vec<String> = [Dir::Read, Dir::Write]
        .iter()
        .filter_map(|d| {
            m.points
                .iter()
                .find(|p| p.phase == measure::Phase::Streams && p.dir == *d)
                .map(|p| format!("{} {}", d.name(), sz(p.block_size_bytes)))
        })
        .collect();
    let series: Vec<Series> = [("read", &reads), ("write", &writes)]
        .into_iter()
        .filter(|(_, c)| !c.is_empty())
        .map(|(name, c)| Series {
            name: name.into(),
            values: threads
                .iter()
                .map(|t| c.iter().find(|p| p.0 == *t).map(|p| mb(p.1)))
                .collect(),
        })
        .collect();
    let lo = *threads.first().unwrap_or(&1) as f64;
    let hi = *threads.last().unwrap_or(&1) as f64;
    Some(ChartData {
        title: "Sequential direct I/O: throughput by concurrent streams".into(),
        x_label: format!("threads ({} I/Os)", bs.join(", ")),
        y_label: "MB/s".into(),
        x_labels: threads.iter().map(|t| t.to_string()).collect(),
        x_values: Some(threads.iter().map(|t| *t as f64).collect()),
        log_x: threads.len() > 1 && lo > 0.0 && hi / lo >= 8.0,
        series,
    })
}

fn measurement(out: &mut String, a: &Advice) {
    let Some(m) = &a.measurement else {
        out.push_str("<h3>Measurements</h3><p class=\"notes\">Not measured: run <code>fsbench advise PATH --measure</code> to confirm or correct the derived values (a few minutes on a scratch file fsbench creates and removes).</p>");
        return;
    };
    let _ = write!(
        out,
        "<h3>Measurements</h3><p class=\"meta\">On {} ({}), at most {:.1} s per run, one pass over the file per run, {} run(s) per point (median kept).</p><div class=\"charts\">",
        esc(&m.scratch_file),
        esc(&crate::units::format_bytes(m.file_size_bytes as f64)),
        m.max_seconds_per_run,
        m.repeat
    );
    let mut findings = Vec::new();
    for dir in [Dir::Read, Dir::Write] {
        if let Some(c) = size_chart(m, dir) {
            out.push_str(&chart::line_chart(&c, None));
        }
        let direct = measure::size_curve(&m.points, dir, true);
        let buffered = measure::size_curve(&m.points, dir, false);
        if let Some(k) = measure::knee(&direct) {
            findings.push(format!(
                "{}s: the direct knee (smallest size reaching 90% of the peak) is {}",
                dir.name(),
                sz(k)
            ));
        }
        if !direct.is_empty() && !buffered.is_empty() {
            findings.push(match measure::crossover(&buffered, &direct) {
                Some(x) => format!(
                    "{}s: direct overtakes buffered from {} up",
                    dir.name(),
                    sz(x)
                ),
                None => format!("{}s: buffered wins at every size measured", dir.name()),
            });
        }
    }
    if let Some(c) = streams_chart(m) {
        out.push_str(&chart::line_chart(&c, None));
        for dir in [Dir::Read, Dir::Write] {
            let curve = measure::stream_curve(&m.points, dir);
            if curve.len() > 1 {
                if let Some(n) = measure::knee(&curve) {
                    findings.push(format!(
                        "{}s: throughput stops growing (90% of the peak) at {n} stream(s)",
                        dir.name()
                    ));
                }
            }
        }
    }
    out.push_str("</div><ul class=\"notes\">");
    for f in findings.iter().chain(&m.notes) {
        let _ = write!(out, "<li>{}</li>", esc(f));
    }
    out.push_str("</ul><details><summary>Every measured point</summary><ul class=\"notes\">");
    for p in &m.points {
        let _ = write!(out, "<li>{}</li>", esc(&p.label()));
    }
    out.push_str("</ul></details>");
}

/// Anchor of the `i`-th advise section in a report.
pub(crate) fn anchor(i: usize) -> String {
    format!("advise-{i}")
}

/// Title of an advise section.
pub(crate) fn title(a: &Advice) -> String {
    format!("Tuning advice for {}", a.topology.path)
}

/// The advise section (no page around it).
pub(crate) fn section(a: &Advice, id: &str) -> String {
    let mut out = format!(
        "<section class=\"advise\" id=\"{}\"><style>{STYLE_EXTRA}</style><h2>{}</h2>",
        esc(id),
        esc(&title(a))
    );
    topology(&mut out, a);
    tunables(&mut out, &a.derived, a.measured.as_ref());
    checks(&mut out, "Checks", &a.checks);
    if !a.measured_checks.is_empty() {
        checks(
            &mut out,
            "Checks that change with the measured values",
            &a.measured_checks,
        );
    }
    measurement(&mut out, a);
    out.push_str("</section>");
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::advise::measure::{Phase, Point};

    pub(crate) fn point(
        phase: Phase,
        dir: Dir,
        direct: bool,
        bs: u64,
        threads: u32,
        mbs: f64,
    ) -> Point {
        Point {
            phase,
            dir,
            direct,
            block_size_bytes: bs,
            threads,
            bytes: 1 << 20,
            elapsed_s: 1.0,
            bytes_per_sec: mbs * 1e6,
            cpu_s: 0.1,
            runs_bytes_per_sec: Vec::new(),
        }
    }

    /// Advice from a recorded topology with a made-up measurement: buffered wins at small
    /// sizes, direct from 256k; streams stop growing at 4.
    pub(crate) fn measured_advice() -> Advice {
        let probe = crate::probe::topology::SysfsProbe::default();
        let topo = crate::probe::topology::Topology::of_path(std::path::Path::new("/"), &probe);
        let mut a = crate::advise::from_topology(topo);
        let mut points = Vec::new();
        for dir in [Dir::Read, Dir::Write] {
            for (bs, b, d) in [
                (4u64 << 10, 300.0, 40.0),
                (64 << 10, 900.0, 400.0),
                (256 << 10, 1000.0, 1100.0),
                (1 << 20, 1000.0, 1500.0),
            ] {
                points.push(point(Phase::Sizes, dir, false, bs, 1, b));
                points.push(point(Phase::Sizes, dir, true, bs, 1, d));
            }
            for (t, v) in [(1, 1500.0), (2, 2500.0), (4, 3000.0), (8, 3050.0)] {
                points.push(point(Phase::Streams, dir, true, 1 << 20, t, v));
            }
        }
        a.add_measurement(Measurement {
            scratch_file: "/x/.fsbench-advise.tmp".into(),
            file_size_bytes: 1 << 30,
            max_seconds_per_run: 2.0,
            repeat: 1,
            points,
            notes: vec![],
        });
        a
    }

    #[test]
    fn size_and_stream_charts_carry_every_measured_point() {
        let a = measured_advice();
        let m = a.measurement.as_ref().unwrap();
        let c = size_chart(m, Dir::Read).unwrap();
        assert_eq!(c.x_labels, vec!["4k", "64k", "256k", "1m"]);
        assert_eq!(c.series.len(), 2);
        assert_eq!(c.series[1].name, "direct");
        assert_eq!(c.series[1].values[3], Some(1500.0));
        assert!(c.log_x);
        let s = streams_chart(m).unwrap();
        assert_eq!(s.x_labels, vec!["1", "2", "4", "8"]);
        assert_eq!(
            s.series[0].values,
            vec![Some(1500.0), Some(2500.0), Some(3000.0), Some(3050.0)]
        );
        assert!(s.x_label.contains("read 1m"));
        let html = section(&a, "a");
        assert_eq!(html.matches("<svg class=\"chart line\"").count(), 3);
        // 2 directions x 2 modes x 4 sizes + 2 directions x 4 stream counts.
        assert_eq!(html.matches("class=\"pt\"").count(), 16 + 8);
        assert!(html.contains("direct overtakes buffered from 256k up"));
        assert!(html.contains("stops growing (90% of the peak) at 4 stream(s)"));
        assert!(html.contains("<code>discovered_direct_iosz</code>"));
        assert!(html.contains("<th>measured</th>"));
        assert!(!html.contains("<script"));
    }

    #[test]
    fn without_measurement_the_page_says_how_to_measure() {
        let probe = crate::probe::topology::SysfsProbe::default();
        let topo = crate::probe::topology::Topology::of_path(std::path::Path::new("/"), &probe);
        let a = crate::advise::from_topology(topo);
        let html = section(&a, "a");
        assert!(html.contains("--measure"));
        assert!(!html.contains("<svg"));
        assert!(html.contains("Topology") && html.contains("<code>read_pref_io</code>"));
        let v = serde_json::to_value(&a).unwrap();
        assert!(is_advice(&v));
        assert_eq!(
            parse(v.clone(), "a.json").unwrap().topology.path,
            a.topology.path
        );
        let mut old = v;
        old["schema_version"] = 2.into();
        assert!(parse(old, "a.json")
            .unwrap_err()
            .to_string()
            .contains("version 2"));
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// An advise document with one field replaced by something else is read as a
        /// document (and renders) or refused with a usage error, never a panic.
        #[test]
        fn damaged_advise_documents_never_panic(
            field in 0usize..64,
            value in proptest::prop_oneof![
                proptest::strategy::Just(serde_json::Value::Null),
                (-5i64..1i64 << 40).prop_map(serde_json::Value::from),
                "[a-z<>&\"]{0,12}".prop_map(serde_json::Value::from),
                proptest::strategy::Just(serde_json::json!([])),
            ],
        ) {
            let mut v = serde_json::to_value(measured_advice()).unwrap();
            // Every (object, key) pair in the document, depth first; replace the chosen one.
            fn keys(v: &serde_json::Value, path: Vec<String>, out: &mut Vec<Vec<String>>) {
                if let Some(o) = v.as_object() {
                    for (k, x) in o {
                        let mut p = path.clone();
                        p.push(k.clone());
                        out.push(p.clone());
                        keys(x, p, out);
                    }
                }
            }
            let mut all = Vec::new();
            keys(&v, Vec::new(), &mut all);
            let path = &all[field % all.len()];
            let mut at = &mut v;
            for k in &path[..path.len() - 1] {
                at = at.get_mut(k).unwrap();
            }
            at[path.last().unwrap()] = value;
            if is_advice(&v) {
                if let Ok(a) = parse(v, "p.json") {
                    proptest::prop_assert!(section(&a, "a").ends_with("</section>"));
                }
            }
        }
    }
}
