//! A workload Result rendered the Filebench way: per run, one line per flowop (ops, ops/s,
//! MB/s, latency in ms, CPU per op), the "IO Summary" line and how the run ended; as CSV one
//! row per flowop and one per summary. The figures are the Result's named groups and each
//! run's summary (both the one `StatsReport`).

use super::text_table::{Fit, TextTable};
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

/// The per-flowop table of one run: Filebench's columns at their widths, CPU per op last.
/// Its cells are figures, so a narrow terminal gets it pivoted into blocks that each repeat
/// the flowop names ([`Fit::Pivot`]).
fn flowop_table() -> TextTable {
    TextTable::new(
        [
            "flowop",
            "ops",
            "ops/s",
            "MB/s",
            "lat mean ms",
            "min ms",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
        ],
        1,
        Fit::Pivot,
    )
    .min_widths(&[22, 10, 10, 8, 11, 9, 9, 9, 11, 9])
    .gaps(&[1, 1, 1, 1, 1, 1, 1, 1, 1, 2])
    .align_right(10, false)
}

/// The Filebench-style text of a workload Result, fitted to the terminal.
pub fn text(r: &RunResult) -> String {
    text_width(r, super::width::terminal_width())
}

/// The text at most `width` wide where the table allows (None: one line a row).
fn text_width(r: &RunResult, width: Option<usize>) -> String {
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
        let mut table = flowop_table();
        for g in r.groups.iter().filter(|g| g.run == Some(i as u32 + 1)) {
            let (f, l) = (&g.stats, &g.stats.lat_ns);
            table.push(vec![
                truncate(&g.name, 22),
                f.ops.to_string(),
                format!("{:.1}", f.iops),
                format!("{:.1}", f.bytes_per_sec / 1e6),
                ms(l.mean),
                ms(l.min as f64),
                ms(l.p50 as f64),
                ms(l.p99 as f64),
                ms(l.p99_9 as f64),
                ms(l.max as f64),
                format!("{:.1} us cpu/op", f.cpu_us_per_op),
            ]);
        }
        s.push_str(&table.render(width));
        let m = &run.summary;
        // Filebench's summary line; on a narrow terminal continued under its first figure.
        let summary = [
            format!("{} ops", m.ops),
            format!("{:.3} ops/s", m.iops),
            format!(
                "{:.0}/{:.0} rd/wr",
                per_s(m.read_ops, m),
                per_s(m.write_ops, m)
            ),
            format!("{:.1} MB/s", m.bytes_per_sec / 1e6),
            format!(
                "({:.1}/{:.1} rd/wr MB/s)",
                m.read.bytes_per_sec / 1e6,
                m.write.bytes_per_sec / 1e6
            ),
            format!("{:.3} ms/op (lat mean)", m.lat_ns.mean / 1e6),
            format!("{:.0} us cpu/op", m.cpu_us_per_op),
        ];
        let _ = writeln!(
            s,
            "{}",
            super::width::wrap_items("IO Summary:", &summary, width)
        );
        let _ = writeln!(
            s,
            "{} process(es), {} thread(s), {:.2} s: {}",
            run.processes, run.threads, run.duration_s, run.stop_reason
        );
        // A failed run ends the script, so the failures belong to the last run.
        if i + 1 == runs.len() {
            for f in &r.failures {
                // A failure that names its file (a read that did not come back) says where.
                if f.path.is_empty() {
                    let _ = writeln!(s, "error: {}", f.message);
                } else {
                    let _ = writeln!(s, "error: {f}");
                }
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
    if let Some(h) = &r.host {
        let _ = writeln!(s, "{}", h.line());
    }
    if let Some(st) = &r.stability {
        let _ = writeln!(s, "{}", super::text::stability_line(st));
    }
    if !r.explain.is_empty() {
        let _ = writeln!(s, "explain:");
        for e in &r.explain {
            let _ = writeln!(s, "  - {}", e.message);
        }
    }
    let key = format!(
        "(MB/s = 10^6 bytes/s; latencies in ms; p50/p99/p99.9 from a histogram within {:.1}%)",
        crate::stats::hist::MAX_RELATIVE_ERROR * 100.0
    );
    let _ = writeln!(s, "{}", super::width::wrap_words(&key, width));
    s
}

/// One CSV row per flowop and per run summary.
pub fn csv(r: &RunResult) -> String {
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
        let s = StatsReport {
            ops: 3,
            iops: 1.5,
            ..Default::default()
        };
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
    fn the_flowop_table_fits_a_narrow_terminal_and_keeps_every_figure() {
        let mut r = with_flowop("read-a-file");
        r.groups[0].stats.lat_ns.p99_9 = 12_345_000;
        r.groups[0].stats.cpu_us_per_op = 7.5;
        let whole = text_width(&r, None);
        let row = whole.lines().nth(1).unwrap();
        assert!(
            row.starts_with("read-a-file                     3        1.5"),
            "{whole}"
        );
        assert!(row.ends_with("  7.5 us cpu/op"), "{whole}");
        assert!(
            whole.contains("\nIO Summary: 3 ops 1.500 ops/s "),
            "{whole}"
        );
        let narrow = text_width(&r, Some(60));
        assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
        // Pivoted: the flowop name heads each block; every figure is still there.
        assert!(narrow.matches("read-a-file").count() >= 2, "{narrow}");
        for v in ["12.345", "7.5 us cpu/op", "p99.9 ms", "us cpu/op"] {
            assert!(narrow.contains(v), "{v}: {narrow}");
        }
        assert!(narrow.contains("IO Summary: 3 ops"), "{narrow}");
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
