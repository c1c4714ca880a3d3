//! Markdown report: a title, the preface lines, then every study as a paper-shaped table, and
//! for each run that trims or mixes I/O sizes its directions (reads, writes, trims) and its
//! figures per I/O size (`by_size`), which a study's table of one value per point cannot hold.

use super::table::{render_markdown, Shaped};
use crate::result::RunResult;
use crate::stats::{DirReport, StatsReport};
use crate::sweep::record::Record;
use crate::units::format_size_exact;

pub(crate) fn render(
    title: &str,
    preface: &[String],
    tables: &[Shaped],
    records: &[Record],
) -> String {
    let mut s = format!("# {title}\n\n");
    for p in preface {
        s += &format!("{p}\n\n");
    }
    for t in tables {
        s += &render_markdown(t);
    }
    let detailed: Vec<&RunResult> = records
        .iter()
        .filter_map(Record::result)
        .filter(|r| r.total.trim.ops > 0 || !r.total.by_size.is_empty())
        .collect();
    if !detailed.is_empty() {
        s += "\n## Directions and I/O sizes\n";
        for r in detailed {
            s += &details(r);
        }
    }
    s
}

const MIB: f64 = 1024.0 * 1024.0;

/// One run's directions and sizes as two tables.
fn details(r: &RunResult) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let t: &StatsReport = &r.total;
    let mut s = format!("\n### {}\n\n", esc(&r.name));
    s += "| direction | ops | MiB/s | IOPS | mean latency ms | p99 latency ms |\n|---|---:|---:|---:|---:|---:|\n";
    let dirs: [(&str, &DirReport); 3] = [("read", &t.read), ("write", &t.write), ("trim", &t.trim)];
    for (name, d) in dirs.into_iter().filter(|(_, d)| d.ops > 0) {
        s += &format!(
            "| {name} | {} | {:.2} | {:.0} | {:.3} | {:.3} |\n",
            d.ops,
            d.bytes_per_sec / MIB,
            d.iops,
            d.lat_ns.mean / 1e6,
            d.lat_ns.p99 as f64 / 1e6
        );
    }
    if t.by_size.is_empty() {
        return s;
    }
    let all: u64 = t.by_size.iter().map(|c| c.ops).sum();
    s += "\n| I/O size | ops | share % | reads | writes | trims | MiB/s | IOPS | mean latency ms | p99 latency ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for c in &t.by_size {
        s += &format!(
            "| {} | {} | {:.1} | {} | {} | {} | {:.2} | {:.0} | {:.3} | {:.3} |\n",
            format_size_exact(c.block_size_bytes),
            c.ops,
            if all > 0 {
                c.ops as f64 * 100.0 / all as f64
            } else {
                0.0
            },
            c.read_ops,
            c.write_ops,
            c.trim_ops,
            c.bytes_per_sec / MIB,
            c.iops,
            c.lat_ns.mean / 1e6,
            c.lat_ns.p99 as f64 / 1e6
        );
    }
    s
}
