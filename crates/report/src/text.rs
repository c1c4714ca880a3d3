//! vxbench-style text: one line per user (per thread with -v), a total line, and the latency
//! percentiles vxbench never had. CPU is shown the white paper's way: sys + user = CPU seconds.

use super::ReportOptions;
use crate::result::RunResult;
use crate::stats::{DirReport, LatencySummary, PercentileValues, StatsReport};
use crate::units::{format_ns, format_size_exact};
use std::fmt::Write;

/// The bandwidth column: vxbench's `  2472918.65 KB/s` in `vx`, else the readable binary
/// magnitude with the decimal one beside it (`95.6 MiB/s (100.2 MB/s)`).
fn bandwidth(bytes_per_sec: f64, opts: &ReportOptions) -> String {
    let text = opts.unit.format(bytes_per_sec);
    if opts.unit.is_vx() {
        format!("{text:>17}")
    } else {
        format!("{text:>26}")
    }
}

fn line(label: &str, s: &StatsReport, opts: &ReportOptions) -> String {
    format!(
        "{label:<18} {:>9.3} sec {}  {:>9.0} IOPS  cpu: {:>7.2} sys {:>7.2} user = {:>7.2} CPU sec  lat p50 {} p99 {}",
        s.elapsed_s,
        bandwidth(s.bytes_per_sec, opts),
        s.iops,
        s.cpu_sys_s,
        s.cpu_user_s,
        s.cpu_s,
        format_ns(s.lat_ns.p50 as f64),
        format_ns(s.lat_ns.p99 as f64),
    )
}

/// A result line cut to `width` where it is longer: continued on indented lines before its
/// `cpu:` and `lat` parts (vx lines keep vxbench's one-line shape: they get no width).
fn fit(line: String, width: Option<usize>) -> String {
    let Some(w) = width.filter(|w| line.chars().count() > *w) else {
        return line;
    };
    let mut parts: Vec<String> = Vec::new();
    let mut rest = line.as_str();
    for cut in ["  cpu:", "  lat ", ", lat "] {
        if let Some(i) = rest.find(cut) {
            parts.push(rest[..i].trim_end().to_string());
            rest = &rest[i..];
        }
    }
    parts.push(rest.trim_start_matches(',').trim().to_string());
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i == 0 {
            out.push_str(p.trim_end());
        } else {
            // Short parts stay on the line while it fits.
            let last = out.rsplit('\n').next().unwrap_or("").chars().count();
            if last + 2 + p.chars().count() <= w {
                out.push_str("  ");
            } else {
                out.push_str("\n                    ");
            }
            out.push_str(p.trim_start());
        }
    }
    out
}

/// Whether a report has both reads and writes, so each direction gets lines of its own.
pub(crate) fn is_mixed(s: &StatsReport) -> bool {
    s.read.ops > 0 && s.write.ops > 0
}

/// The directions that get lines of their own: every direction with operations when the
/// run mixes them or trims (a trim's figures are never the total's alone to speak for).
fn shown_directions(s: &StatsReport) -> Vec<(&'static str, &DirReport)> {
    if !is_mixed(s) && s.trim.ops == 0 {
        return Vec::new();
    }
    [("read", &s.read), ("write", &s.write), ("trim", &s.trim)]
        .into_iter()
        .filter(|(_, d)| d.ops > 0)
        .collect()
}

/// One line per I/O size of a `--bssplit` run: its share of the operations, its rate and
/// its latency.
fn size_lines(s: &StatsReport, opts: &ReportOptions) -> Vec<String> {
    let total: u64 = s.by_size.iter().map(|c| c.ops).sum();
    s.by_size
        .iter()
        .map(|c| {
            format!(
                "{:<18} {:>13} {}  {:>9.0} IOPS  {} ops ({:.1} %), lat mean {} p50 {} p99 {}",
                format!(
                    "  size {}:",
                    crate::units::format_size_exact(c.block_size_bytes)
                ),
                "",
                bandwidth(c.bytes_per_sec, opts),
                c.iops,
                c.ops,
                if total > 0 {
                    c.ops as f64 * 100.0 / total as f64
                } else {
                    0.0
                },
                format_ns(c.lat_ns.mean),
                format_ns(c.lat_ns.p50 as f64),
                format_ns(c.lat_ns.p99 as f64),
            )
        })
        .collect()
}

/// One direction of a mixed run under its total line, in the same columns (fio's `read:` and
/// `write:` sections).
fn direction_line(label: &str, d: &DirReport, opts: &ReportOptions) -> String {
    format!(
        "{:<18} {:>13} {}  {:>9.0} IOPS  {} ops, lat mean {} p50 {} p99 {}",
        format!("  {label}:"),
        "",
        bandwidth(d.bytes_per_sec, opts),
        d.iops,
        d.ops,
        format_ns(d.lat_ns.mean),
        format_ns(d.lat_ns.p50 as f64),
        format_ns(d.lat_ns.p99 as f64),
    )
}

/// Every statistic of a latency summary, named: `min .. mean .. p50 .. max .. stdev ..`,
/// fitted to `width` (continued under its first figure on a narrow terminal).
/// The percentiles are those asked for (`--percentiles`) when `asked` holds them.
fn latency_line(
    prefix: &str,
    l: &LatencySummary,
    asked: &PercentileValues,
    width: Option<usize>,
) -> String {
    let named = |name: &str, v: f64| format!("{name} {}", format_ns(v));
    let mut items = vec![named("min", l.min as f64), named("mean", l.mean)];
    if asked.is_empty() {
        items.extend([
            named("p50", l.p50 as f64),
            named("p90", l.p90 as f64),
            named("p99", l.p99 as f64),
            named("p99.9", l.p99_9 as f64),
            named("p99.99", l.p99_99 as f64),
        ]);
    } else {
        items.extend(
            asked
                .0
                .iter()
                .map(|(p, v)| named(&format!("p{p}"), *v as f64)),
        );
    }
    items.extend([named("max", l.max as f64), named("stdev", l.stdev)]);
    super::width::wrap_items(&format!("{prefix}:"), &items, width)
}

/// The first line of a Result without a Job (a replay, a backup phase, a workload).
fn header_without_job(r: &RunResult) -> String {
    let cache = r
        .cache_name()
        .map(|c| format!(", cache {c}"))
        .unwrap_or_default();
    match &r.replay {
        Some(p) => format!(
            "{}: {} calls of {} in {} thread(s), {}{cache}",
            r.name,
            p.calls,
            p.trace,
            p.threads,
            match p.speed {
                Some(s) => format!("traced timing x{s}"),
                None => "back to back".into(),
            }
        ),
        None => format!("{}: {}{cache}", r.name, r.kind.name()),
    }
}

pub(crate) fn header(r: &RunResult) -> String {
    let Some(j) = &r.job else {
        return header_without_job(r);
    };
    let amount = match (j.io_count, j.time_s) {
        (Some(n), _) => format!("{n} I/Os per thread"),
        (None, Some(t)) => format!("{t} s"),
        (None, None) => format!(
            "{} bytes per thread",
            r.plan
                .as_ref()
                .and_then(|p| p.targets.first())
                .map(|t| t.size)
                .unwrap_or(0)
                / j.threads.max(1) as u64
        ),
    };
    format!(
        "{}: {} {} x {}{}, {} user(s) x {} thread(s), cache {}, engine {}{}",
        r.name,
        j.access.name(),
        if j.mixed_sizes() {
            format!("sizes {}", j.size_spec())
        } else {
            format_size_exact(j.block_size)
        },
        amount,
        if j.repeats > 1 {
            format!(" x {} reps", j.repeats)
        } else {
            String::new()
        },
        j.targets.len(),
        j.threads,
        r.cache_name().unwrap_or_else(|| j.cache.name()),
        j.engine.name(),
        if j.queue_depth > 1 {
            format!(" qd {}", j.queue_depth)
        } else {
            String::new()
        },
    )
}

/// The rate limit as given: "2000 IOPS per thread", "10.0 MiB/s total", per direction
/// "reads 10.0 MiB/s, writes 2.0 MiB/s per thread".
fn rate_label(j: &crate::job::Job) -> String {
    let limits = |r: crate::job::DirRate| {
        let mut parts = Vec::new();
        if let Some(n) = r.iops {
            parts.push(format!("{n} IOPS"));
        }
        if let Some(b) = r.bytes_per_sec {
            parts.push(format!("{}/s", crate::units::format_bytes(b as f64)));
        }
        parts.join(" and ")
    };
    let (reads, writes, trims) = j.mix_directions();
    let parts = match j.rate.directions {
        None => vec![limits(j.rate.of(0))],
        Some(_) => [("reads", reads), ("writes", writes), ("trims", trims)]
            .into_iter()
            .enumerate()
            .filter(|(_, (_, on))| *on)
            .map(|(d, (name, _))| match limits(j.rate.of(d)) {
                l if l.is_empty() => format!("{name} unlimited"),
                l => format!("{name} {l}"),
            })
            .collect(),
    };
    let scope = match j.rate.scope {
        crate::job::RateScope::Thread => "per thread",
        crate::job::RateScope::Total => "total",
    };
    format!("{} {scope}", parts.join(", "))
}

/// Users with a line of their own: all of them while there are few (or with `-v`), else the
/// busiest, and one line saying what was left out (every user stays in the JSON).
fn users_shown<'a>(
    r: &'a RunResult,
    opts: &ReportOptions,
) -> (Vec<&'a crate::result::UserReport>, Option<String>) {
    const LISTED_MAX: usize = 8;
    const BUSIEST: usize = 5;
    if r.users.len() <= LISTED_MAX || opts.per_thread {
        return (r.users.iter().collect(), None);
    }
    let mut by_ops: Vec<&crate::result::UserReport> = r.users.iter().collect();
    by_ops.sort_by_key(|u| std::cmp::Reverse(u.stats.ops));
    let busy = by_ops.iter().take_while(|u| u.stats.ops > 0).count();
    let mut shown: Vec<_> = by_ops[..busy.min(BUSIEST)].to_vec();
    shown.sort_by_key(|u| u.user);
    let rest = &by_ops[shown.len()..];
    let idle = rest.iter().filter(|u| u.stats.ops == 0).count();
    let ops: u64 = rest.iter().map(|u| u.stats.ops).sum();
    let line = if idle == rest.len() {
        format!(
            "... {} more users with no I/O: each is in the JSON (-v lists them here)",
            rest.len()
        )
    } else {
        format!(
            "... {} more users ({ops} ops; {idle} with no I/O): each is in the JSON (-v lists them here)",
            rest.len()
        )
    };
    (shown, Some(line))
}

/// The results as vxbench-style text.
pub(crate) fn render(results: &[RunResult], opts: &ReportOptions) -> String {
    let mut out = String::new();
    for r in results {
        if r.kind == crate::result::Kind::Workload {
            out.push_str(&super::workload::text(r));
            out.push_str(&super::repeat::text(r));
            continue;
        }
        if r.kind == crate::result::Kind::Mdtest {
            out.push_str(&super::mdtest::text(r));
            continue;
        }
        if r.kind == crate::result::Kind::Io500 {
            out.push_str(&super::io500::text(r));
            continue;
        }
        let _ = writeln!(out, "{}", header(r));
        for n in &r.notes {
            let _ = writeln!(out, "note: {n}");
        }
        let width = if opts.unit.is_vx() {
            None
        } else {
            super::width::terminal_width()
        };
        let line =
            |label: &str, s: &StatsReport, opts: &ReportOptions| fit(line(label, s, opts), width);
        let direction_line = |label: &str, d: &DirReport, opts: &ReportOptions| {
            fit(direction_line(label, d, opts), width)
        };
        if !opts.summary_only {
            let (shown, hidden) = users_shown(r, opts);
            for u in shown {
                if opts.per_thread {
                    for t in &u.threads {
                        let label = format!("user {:>3} thread {:>3}:", u.user + 1, t.thread + 1);
                        let _ = writeln!(out, "{}", line(&label, &t.stats, opts));
                    }
                }
                if r.users.len() > 1 || opts.per_thread || u.threads.len() > 1 {
                    let label = format!("user {:>3}:", u.user + 1);
                    let _ = writeln!(out, "{}", line(&label, &u.stats, opts));
                    for (name, d) in shown_directions(&u.stats) {
                        let _ = writeln!(out, "{}", direction_line(name, d, opts));
                    }
                }
            }
            if let Some(hidden) = hidden {
                let _ = writeln!(out, "{hidden}");
            }
            for g in &r.groups {
                let label = format!("{}:", g.name);
                let _ = writeln!(out, "{}", line(&label, &g.stats, opts));
            }
        }
        let _ = writeln!(out, "{}", line("total:", &r.total, opts));
        let shown = shown_directions(&r.total);
        let mixed = !shown.is_empty();
        for (name, d) in &shown {
            let _ = writeln!(out, "{}", direction_line(name, d, opts));
        }
        for l in size_lines(&r.total, opts) {
            let _ = writeln!(out, "{}", fit(l, width));
        }
        // The latency lines are fsbench's own (not vxbench's shape): fitted in `vx` too.
        let lat_width = super::width::terminal_width();
        let _ = writeln!(
            out,
            "{}",
            latency_line(
                "latency",
                &r.total.lat_ns,
                &r.total.lat_percentiles_ns,
                lat_width
            )
        );
        if mixed {
            for (name, d) in shown.iter().copied() {
                if d.lat_ns.count > 0 {
                    let prefix = format!("{name} latency");
                    let _ = writeln!(
                        out,
                        "{}",
                        latency_line(&prefix, &d.lat_ns, &d.lat_percentiles_ns, lat_width)
                    );
                }
            }
        }
        if let Some(j) = r.job.as_ref().filter(|j| j.rate.is_on()) {
            let l = &r.total.sched_lat_ns;
            let _ = writeln!(
                out,
                "latency from the intended issue time (rate {}): p50 {} p90 {} p99 {} p99.9 {} max {}",
                rate_label(j),
                format_ns(l.p50 as f64),
                format_ns(l.p90 as f64),
                format_ns(l.p99 as f64),
                format_ns(l.p99_9 as f64),
                format_ns(l.max as f64)
            );
            if mixed {
                for (name, d) in [("read", &r.total.read), ("write", &r.total.write)] {
                    let l = &d.sched_lat_ns;
                    if l.count > 0 {
                        let _ = writeln!(
                            out,
                            "{name} latency from the intended issue time: p50 {} p90 {} p99 {} p99.9 {} max {}",
                            format_ns(l.p50 as f64),
                            format_ns(l.p90 as f64),
                            format_ns(l.p99 as f64),
                            format_ns(l.p99_9 as f64),
                            format_ns(l.max as f64)
                        );
                    }
                }
            }
        }
        if r.job.as_ref().is_some_and(|j| j.queue_depth > 1) {
            let depths: Vec<String> = r
                .total
                .inflight_pct
                .iter()
                .filter(|(_, pct)| *pct > 0.0)
                .map(|(name, pct)| format!("{name}: {pct:.1}%"))
                .collect();
            let _ = writeln!(out, "in flight at submission: {}", depths.join(", "));
        }
        let t = &r.total;
        let _ = writeln!(
            out,
            "ops: {} ({} read, {} write{}), {} bytes, {:.1} syscalls/s{}{}",
            t.ops,
            t.read_ops,
            t.write_ops,
            if t.trim_ops > 0 {
                format!(", {} trim", t.trim_ops)
            } else {
                String::new()
            },
            t.bytes,
            t.syscalls_per_sec,
            if t.buffered_fallback_ops > 0 {
                format!(
                    ", {} misaligned direct I/Os done as dsync buffered I/O",
                    t.buffered_fallback_ops
                )
            } else {
                String::new()
            },
            if t.direct_ops > 0
                && r.plan.as_ref().is_some_and(|p| {
                    matches!(p.cache, crate::job::CachePolicy::Discovered { .. })
                })
            {
                format!(", {} I/Os went direct", t.direct_ops)
            } else {
                String::new()
            }
        );
        out.push_str(&super::ranks::lines(r, opts));
        out.push_str(&super::observe::syscall_lines(t));
        out.push_str(&super::observe::probe_sections(r));
        if let Some(v) = &r.verify {
            // A replay checks reads as a workload does (each read one check), not blocks.
            out.push_str(&if r.kind == crate::result::Kind::Replay {
                super::verify_text::workload_lines(v)
            } else {
                super::verify_text::run_lines(v)
            });
        }
        if let Some(s) = &r.steady {
            out.push_str(&super::steady_text::line(s));
        }
        match r.status {
            crate::runner::RunStatus::Complete => {}
            crate::runner::RunStatus::Partial => {
                let _ = writeln!(
                    out,
                    "status: PARTIAL (interrupted): the figures cover what was done"
                );
            }
            crate::runner::RunStatus::Failed => {
                let _ = writeln!(
                    out,
                    "status: FAILED: the figures cover what was done before the error"
                );
            }
        }
        for f in &r.failures {
            let _ = writeln!(out, "error: {f}");
        }
        if let Some(h) = &r.host {
            let _ = writeln!(out, "{}", h.line());
        }
        if let Some(s) = &r.stability {
            let _ = writeln!(out, "{}", stability_line(s));
        }
        if !r.explain.is_empty() {
            let _ = writeln!(out, "explain:");
            for e in &r.explain {
                let _ = writeln!(out, "  - {}", e.message);
            }
        }
        out.push_str(&super::repeat::text(r));
    }
    out
}

/// The one line of the run's stability figures: the spread (coefficient of variation) and
/// the change over the run of its per-interval IOPS and bandwidth.
pub(crate) fn stability_line(s: &crate::result::StabilityReport) -> String {
    format!(
        "stability: IOPS CV {:.1} %, {:+.1} % over the run; bandwidth CV {:.1} %, {:+.1} % over the run ({} intervals of {:.2} s)",
        s.iops_cv_pct,
        s.iops_change_over_run_pct,
        s.bytes_per_sec_cv_pct,
        s.bytes_per_sec_change_over_run_pct,
        s.intervals,
        s.interval_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_before_cpu_and_lat_to_fit() {
        let s = StatsReport {
            elapsed_s: 1.0,
            bytes_per_sec: 100.2e6,
            iops: 24_000.0,
            ..Default::default()
        };
        let opts = ReportOptions::default();
        let one = line("total:", &s, &opts);
        assert_eq!(fit(one.clone(), None), one);
        assert_eq!(fit(one.clone(), Some(500)), one);
        let cut = fit(one.clone(), Some(100));
        assert!(cut.lines().count() >= 2, "{cut}");
        assert!(cut.lines().all(|l| l.chars().count() <= 100), "{cut}");
        assert!(cut.contains("95.6 MiB/s (100.2 MB/s)") && cut.contains("\n"));
        // Nothing lost: the same words in the same order.
        let words = |t: &str| t.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(words(&cut), words(&one));
    }
}
