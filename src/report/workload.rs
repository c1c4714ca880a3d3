//! A workload Result rendered the Filebench way: per run, one line per flowop (ops, ops/s,
//! MB/s, latency in ms, CPU per op), the "IO Summary" line and how the run ended; as CSV one
//! row per flowop and one per summary. The figures are the Result's named groups and each
//! run's summary (both the one `StatsReport`).

use crate::result::{PsrunLine, RunResult};
use crate::stats::StatsReport;
use std::fmt::Write;

/// A psrun progress line (printed while the workload runs).
pub(crate) fn psrun_line(l: &PsrunLine, cumulative_ops_per_s: Option<f64>) -> String {
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

/// The Filebench-style text of a workload Result.
pub(crate) fn text(r: &RunResult) -> String {
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
            "{:<22} {:>10} {:>10} {:>8} {:>11} {:>9} {:>9} {:>9} {:>11} {:>9}",
            "flowop",
            "ops",
            "ops/s",
            "MB/s",
            "lat mean ms",
            "min ms",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms"
        );
        for g in r.groups.iter().filter(|g| g.run == Some(i as u32 + 1)) {
            let (f, l) = (&g.stats, &g.stats.lat_ns);
            let _ = writeln!(
                s,
                "{:<22} {:>10} {:>10.1} {:>8.1} {:>11} {:>9} {:>9} {:>9} {:>11} {:>9}  {:.1} us cpu/op",
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
            "IO Summary: {} ops {:.3} ops/s {:.0}/{:.0} rd/wr {:.1} MB/s ({:.1}/{:.1} rd/wr MB/s) {:.3} ms/op (lat mean) {:.0} us cpu/op",
            m.ops,
            m.iops,
            per_s(m.read_ops, m),
            per_s(m.write_ops, m),
            m.bytes_per_sec / 1e6,
            m.read.bytes_per_sec / 1e6,
            m.write.bytes_per_sec / 1e6,
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
    if let Some(v) = &r.verify {
        s.push_str(&super::verify_text::workload_lines(v));
    }
    // A distributed workload: a row per rank (its ops and bytes) and the spread.
    s.push_str(&super::ranks::lines(r, &Default::default()));
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    if !r.explain.is_empty() {
        let _ = writeln!(s, "explain:");
        for e in &r.explain {
            let _ = writeln!(s, "  - {}", e.message);
        }
    }
    let _ = writeln!(
        s,
        "(MB/s = 10^6 bytes/s; latencies in ms; p50/p99/p99.9 from a histogram within {:.1}%)",
        crate::stats::hist::MAX_RELATIVE_ERROR * 100.0
    );
    s
}

/// One CSV row per flowop and per run summary.
pub(crate) fn csv(r: &RunResult) -> String {
    let mut out = super::csv::CsvText::new();
    out.row("run,flowop,type,ops,ops_per_s,mb_per_s,read_ops,write_ops,read_bytes,write_bytes,errors,cpu_us_per_op,lat_mean_ns,lat_min_ns,lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p99_9_ns,lat_max_ns".split(','));
    let runs = r
        .workload
        .as_ref()
        .map(|w| w.runs.as_slice())
        .unwrap_or(&[]);
    for (i, run) in runs.iter().enumerate() {
        let n = (i + 1).to_string();
        for g in r.groups.iter().filter(|g| g.run == Some(i as u32 + 1)) {
            let (f, l) = (&g.stats, &g.stats.lat_ns);
            out.row([
                n.clone(),
                g.name.clone(),
                g.op.clone(),
                f.ops.to_string(),
                format!("{:.3}", f.iops),
                format!("{:.3}", f.bytes_per_sec / 1e6),
                f.read_ops.to_string(),
                f.write_ops.to_string(),
                f.read_bytes.to_string(),
                f.write_bytes.to_string(),
                f.errors.to_string(),
                format!("{:.3}", f.cpu_us_per_op),
                format!("{:.0}", l.mean),
                l.min.to_string(),
                l.p50.to_string(),
                l.p90.to_string(),
                l.p99.to_string(),
                l.p99_9.to_string(),
                l.max.to_string(),
            ]);
        }
        let m = &run.summary;
        let e = String::new;
        out.row([
            n,
            "IO Summary".into(),
            "summary".into(),
            m.ops.to_string(),
            format!("{:.3}", m.iops),
            format!("{:.3}", m.bytes_per_sec / 1e6),
            e(),
            e(),
            e(),
            e(),
            e(),
            format!("{:.3}", m.cpu_us_per_op),
            format!("{:.0}", m.lat_ns.mean),
            e(),
            e(),
            e(),
            e(),
            e(),
            e(),
        ]);
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{GroupReport, Kind, WorkloadInfo, WorkloadRun};

    fn with_flowop(name: &str) -> RunResult {
        let mut r = RunResult::new(Kind::Workload, "w", 0.0, Default::default());
        let mut s = StatsReport::default();
        s.ops = 3;
        s.iops = 1.5;
        r.groups = vec![GroupReport {
            name: name.into(),
            op: "read".into(),
            run: Some(1),
            stats: s.clone(),
        }];
        r.workload = Some(WorkloadInfo {
            runs: vec![WorkloadRun {
                started_unix_s: 0.0,
                duration_s: 2.0,
                stop_reason: "timeout".into(),
                processes: 1,
                threads: 1,
                thread_ends: Default::default(),
                summary: s,
                psrun: Vec::new(),
                timeseries: Vec::new(),
            }],
            ..Default::default()
        });
        r
    }

    #[test]
    fn csv_rows_and_quoting() {
        let out = csv(&with_flowop("rd,\"x\"\ny"));
        let body = out.split_once('\n').unwrap().1;
        assert_eq!(
            body,
            "1,\"rd,\"\"x\"\"\ny\",read,3,1.500,0.000,0,0,0,0,0,0.000,0,0,0,0,0,0,0\n\
             1,IO Summary,summary,3,1.500,0.000,,,,,,0.000,0,,,,,,\n"
        );
    }

    /// A carriage return is quoted (the hand-written quoting before the csv crate left it bare).
    #[test]
    fn csv_quotes_carriage_return() {
        assert!(csv(&with_flowop("a\rb")).contains("\n1,\"a\rb\",read,"));
    }
}
