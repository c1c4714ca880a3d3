//! An mdtest Result rendered the mdtest way: the SUMMARY table (per phase, the rate's max,
//! min, mean and standard deviation over the iterations, in operations per second), then
//! what mdtest does not show: each phase's latency percentiles per item and its CPU time per
//! item, and how the run ended.

use crate::result::RunResult;
use crate::units::format_ns;
use std::fmt::Write;

/// The mdtest-style text of an mdtest Result.
pub(crate) fn text(r: &RunResult) -> String {
    let mut s = String::new();
    let Some(m) = &r.mdtest else {
        return s;
    };
    let _ = writeln!(
        s,
        "fsbench mdtest: {} rank(s), {} items per rank ({} per directory), tree depth {} branching {} ({} directories{}), in {}",
        m.ranks,
        m.items,
        m.items_per_dir,
        m.depth,
        m.branching,
        m.dirs_in_tree,
        if m.leaf_only { ", items in the leaves" } else { "" },
        m.dir
    );
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    let _ = writeln!(
        s,
        "\nSUMMARY rate (in ops/sec): (of {} iterations)",
        m.iterations
    );
    let _ = writeln!(
        s,
        "   {:<22} {:>14} {:>14} {:>14} {:>14}",
        "Operation", "Max", "Min", "Mean", "Std Dev"
    );
    let _ = writeln!(
        s,
        "   {:<22} {:>14} {:>14} {:>14} {:>14}",
        "---------", "---", "---", "----", "-------"
    );
    for p in &m.summary {
        let _ = writeln!(
            s,
            "   {:<22} {:>14.3} {:>14.3} {:>14.3} {:>14.3}",
            p.phase, p.max, p.min, p.mean, p.stddev
        );
    }
    let _ = writeln!(
        s,
        "\nPer item, all iterations (latency of one item's operation; CPU time per item):"
    );
    let _ = writeln!(
        s,
        "   {:<22} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11}",
        "Operation", "ops", "p50", "p90", "p99", "p99.9", "max", "CPU us/op"
    );
    for p in &m.summary {
        let l = &p.lat_ns;
        let _ = writeln!(
            s,
            "   {:<22} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11.2}{}",
            p.phase,
            p.ops,
            format_ns(l.p50 as f64),
            format_ns(l.p90 as f64),
            format_ns(l.p99 as f64),
            format_ns(l.p99_9 as f64),
            format_ns(l.max as f64),
            p.cpu_us_per_op,
            if p.stonewalled > 0 {
                format!("  (stonewalled in {} iteration(s))", p.stonewalled)
            } else {
                String::new()
            }
        );
    }
    for f in &r.failures {
        let _ = writeln!(s, "failed: {}", f.message);
    }
    let _ = writeln!(s, "status: {}", r.status.name());
    s
}
