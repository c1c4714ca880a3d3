//! A workload Result rendered the Filebench way: per run, one line per flowop (ops, ops/s,
//! MB/s, latency in ms, CPU per op), the "IO Summary" line and how the run ended; as CSV one
//! row per flowop and one per summary. The figures are the Result's named groups and each
//! run's summary (both the one `StatsReport`).

use crate::result::{PsrunLine, RunResult};
use crate::stats::StatsReport;
use std::fmt::Write;

/// A psrun progress line (printed while the workload runs).
pub fn psrun_line(l: &PsrunLine, cumulative_ops_per_s: Option<f64>) -> String {
    let mut s = format!(
        "{:8.1}s: {:10.1} ops/s {:9.1} rd/s {:9.1} wr/s {:8.1} MB/s",
        l.t_s, l.ops_per_s, l.read_ops_per_s, l.write_ops_per_s, l.mb_per_s
    );
    if let Some(c) = cumulative_ops_per_s {
        let _ = write!(s, "  (since start {c:.1} ops/s, {} ops)", l.ops);
    }
    s
}

fn per_s(n: u64, s: &StatsReport) -> f64 {
    if s.elapsed_s > 0.0 {
        n as f64 / s.elapsed_s
    } else {
        0.0
    }
}

fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The Filebench-style text of a workload Result.
pub fn text(r: &RunResult) -> String {
    let mut s = String::new();
    let runs = r
        .workload
        .as_ref()
        .map(|w| w.runs.as_slice())
        .unwrap_or(&[]);
    for (i, run) in runs.iter().enumerate() {
        if runs.len() > 1 {
            let _ = writeln!(s, "run {}:", i + 1);
        }
        let _ = writeln!(
            s,
            "{:<22} {:>10} {:>10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "flowop", "ops", "ops/s", "MB/s", "mean", "min", "p50", "p99", "p99.9", "max"
        );
        for g in r.groups.iter().filter(|g| g.run == Some(i as u32 + 1)) {
            let (f, l) = (&g.stats, &g.stats.lat_ns);
            let _ = writeln!(
                s,
                "{:<22} {:>10} {:>10.1} {:>8.1} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  {:.1}us cpu/op",
                truncate(&g.name, 22),
                f.ops,
                f.iops,
                f.bytes_per_sec / 1e6,
                ms(l.mean),
                ms(l.min as f64),
                ms(l.p50 as f64),
                ms(l.p99 as f64),
                ms(l.p99_9 as f64),
                ms(l.max as f64),
                f.cpu_us_per_op
            );
        }
        let m = &run.summary;
        let _ = writeln!(
            s,
            "IO Summary: {} ops {:.3} ops/s {:.0}/{:.0} rd/wr {:.1}MB/s {:.3}ms/op {:.0}us cpu/op",
            m.ops,
            m.iops,
            per_s(m.read_ops, m),
            per_s(m.write_ops, m),
            m.bytes_per_sec / 1e6,
            m.lat_ns.mean / 1e6,
            m.cpu_us_per_op
        );
        let _ = writeln!(
            s,
            "{} process(es), {} thread(s), {:.2} s: {}",
            run.processes, run.threads, run.duration_s, run.stop_reason
        );
        // A failed run ends the script, so the failures belong to the last run.
        if i + 1 == runs.len() {
            for f in &r.failures {
                let _ = writeln!(s, "error: {}", f.message);
            }
        }
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    let _ = writeln!(
        s,
        "(latencies in ms; p50/p99/p99.9 from a histogram within {:.1}%)",
        crate::stats::hist::MAX_RELATIVE_ERROR * 100.0
    );
    s
}

/// One CSV row per flowop and per run summary.
pub fn csv(r: &RunResult) -> String {
    let mut s = String::from(
        "run,flowop,type,ops,ops_per_s,mb_per_s,read_ops,write_ops,read_bytes,write_bytes,errors,cpu_us_per_op,lat_mean_ns,lat_min_ns,lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p99_9_ns,lat_max_ns\n",
    );
    let runs = r
        .workload
        .as_ref()
        .map(|w| w.runs.as_slice())
        .unwrap_or(&[]);
    for (i, run) in runs.iter().enumerate() {
        for g in r.groups.iter().filter(|g| g.run == Some(i as u32 + 1)) {
            let (f, l) = (&g.stats, &g.stats.lat_ns);
            let _ = writeln!(
                s,
                "{},{},{},{},{:.3},{:.3},{},{},{},{},{},{:.3},{:.0},{},{},{},{},{},{}",
                i + 1,
                csv_field(&g.name),
                g.op,
                f.ops,
                f.iops,
                f.bytes_per_sec / 1e6,
                f.read_ops,
                f.write_ops,
                f.read_bytes,
                f.write_bytes,
                f.errors,
                f.cpu_us_per_op,
                l.mean,
                l.min,
                l.p50,
                l.p90,
                l.p99,
                l.p99_9,
                l.max
            );
        }
        let m = &run.summary;
        let _ = writeln!(
            s,
            "{},IO Summary,summary,{},{:.3},{:.3},,,,,,{:.3},{:.0},,,,,,",
            i + 1,
            m.ops,
            m.iops,
            m.bytes_per_sec / 1e6,
            m.cpu_us_per_op,
            m.lat_ns.mean
        );
    }
    s
}
