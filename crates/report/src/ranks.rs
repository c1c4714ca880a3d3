//! The ranks of a distributed run as text: one row per rank (host, bytes, start and end on the
//! barrier clock, its own rate), the spread between the slowest and fastest rank, the full
//! figure and, when there was a stonewall, the stonewall figure, each named; with `--iostat`
//! one line per host for the devices sampled there.

use super::ReportOptions;
use crate::result::RunResult;
use std::fmt::Write;

/// The ranks section, or nothing for a run on one host.
pub(crate) fn lines(r: &RunResult, opts: &ReportOptions) -> String {
    let Some(d) = &r.distributed else {
        return String::new();
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "ranks: {} on {} host(s) ({}), layout {}{}",
        r.ranks.len(),
        r.hosts.len(),
        r.hosts.join(", "),
        d.layout,
        d.reorder_shift
            .map(|s| format!(", each rank reads the data of the rank {s} on"))
            .unwrap_or_default()
    );
    // A workload's ranks are counted in operations too (its metadata flowops move no bytes).
    let workload = r.workload.is_some();
    if !opts.summary_only {
        use super::text_table::{Fit, TextTable};
        let mut head = vec!["rank", "host"];
        if workload {
            head.push("ops");
        }
        head.extend(["bytes", "start s", "end s", "rate", "status"]);
        let status = head.len() - 1;
        // A failure's text is long: the table wraps it inside its column on a terminal.
        let mut t = TextTable::new(head, 2, Fit::Wrap)
            .align_right(0, true)
            .align_right(status, false);
        for k in &r.ranks {
            let mut row = vec![k.rank.to_string(), k.host.clone()];
            if workload {
                row.push(k.ops.to_string());
            }
            row.extend([
                k.bytes.to_string(),
                format!("{:.3}", k.start_s),
                format!("{:.3}", k.end_s),
                opts.unit.format(k.bytes_per_sec),
                format!(
                    "{}{}",
                    k.status.name(),
                    k.failure
                        .as_deref()
                        .map(|f| format!(": {f}"))
                        .unwrap_or_default()
                ),
            ]);
            t.push(row);
        }
        // Indented under the `ranks:` line, within the terminal's width.
        let width = super::width::terminal_width().map(|w| w.saturating_sub(2).max(20));
        for line in t.render(width).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    for h in &d.host_devices {
        let _ = writeln!(out, "{}", host_devices_line(h));
    }
    let _ = writeln!(
        out,
        "spread: slowest rank {} {}, fastest rank {} {} ({:.2}x)",
        d.slowest_rank,
        opts.unit.format(d.slowest_bytes_per_sec),
        d.fastest_rank,
        opts.unit.format(d.fastest_bytes_per_sec),
        d.spread_ratio
    );
    let _ = writeln!(
        out,
        "full: {} bytes / {:.3} s (first start {:.3} s to last end {:.3} s) = {}; first rank done at {:.3} s",
        r.total.bytes,
        d.last_end_s - d.first_start_s,
        d.first_start_s,
        d.last_end_s,
        opts.unit.format(d.full_bytes_per_sec),
        d.first_end_s
    );
    if workload {
        let span = d.last_end_s - d.first_start_s;
        let _ = writeln!(
            out,
            "full: {} I/O ops / {:.3} s = {:.1} ops/s over every rank",
            r.total.ops,
            span,
            if span > 0.0 {
                r.total.ops as f64 / span
            } else {
                0.0
            }
        );
    }
    if let Some(s) = &d.stonewall {
        // Results written before `timed_s` existed: the wall from the first start.
        let timed_s = if s.timed_s > 0.0 {
            s.timed_s
        } else {
            s.wall_s - d.first_start_s
        };
        let why = match s.called_by_rank {
            Some(k) => format!("rank {k} finished first"),
            None => "the set time".to_string(),
        };
        let _ = writeln!(
            out,
            "stonewall ({}): wall at {:.3} s ({why}): {} bytes / {:.3} s = {}, {} ops = {:.1} ops/s; ranks stopped within {:.3} s; bytes per rank {} to {}",
            s.mode,
            s.wall_s,
            s.bytes,
            timed_s,
            opts.unit.format(s.bytes_per_sec),
            s.ops,
            s.ops_per_sec,
            s.stop_lag_s,
            s.min_rank_bytes,
            s.max_rank_bytes
        );
    }
    out
}

/// One host's devices over the run (`--iostat` on ranks): per device the KiB read and
/// written over the samples and the busiest interval.
fn host_devices_line(h: &crate::result::HostDevices) -> String {
    use crate::probe::diskstats::IostatSeries;
    let Ok(series) = serde_json::from_value::<IostatSeries>(h.iostat.clone()) else {
        return format!("devices on {} (rank {}): no samples", h.host, h.rank);
    };
    let mut devices: Vec<(String, f64, f64, f64)> = Vec::new();
    for s in &series.samples {
        let i = match devices.iter().position(|d| d.0 == s.device) {
            Some(i) => i,
            None => {
                devices.push((s.device.clone(), 0.0, 0.0, 0.0));
                devices.len() - 1
            }
        };
        let d = &mut devices[i];
        d.1 += s.read_kb_per_sec * s.interval_s;
        d.2 += s.write_kb_per_sec * s.interval_s;
        d.3 = d.3.max(s.util_pct);
    }
    let each: Vec<String> = devices
        .iter()
        .map(|(n, r, w, u)| format!("{n} {r:.0} KiB read, {w:.0} KiB written, busiest {u:.0}%"))
        .collect();
    format!(
        "devices on {} (sampled by rank {}, {} samples every {:.3} s): {}",
        h.host,
        h.rank,
        series.samples.len(),
        series.interval_s,
        if each.is_empty() {
            "no I/O".to_string()
        } else {
            each.join("; ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_devices_are_summed_over_the_samples() {
        let sample = |dev: &str, w: f64, util: f64| {
            serde_json::json!({"device": dev, "t_s": 0.1, "interval_s": 0.5,
                "reads_per_sec": 0.0, "writes_per_sec": 1.0, "read_kb_per_sec": 0.0,
                "write_kb_per_sec": w, "blocks_per_sec": 0.0, "avg_queue": 0.0, "await_ms": 0.0,
                "avwait_ms": 0.0, "avserv_ms": 0.0, "util_pct": util})
        };
        let h = crate::result::HostDevices {
            host: "n1".into(),
            rank: 4,
            iostat: serde_json::json!({"devices": ["sda"], "interval_s": 0.5, "run_start_s": 0.0,
                "samples": [sample("sda", 100.0, 20.0), sample("sda", 300.0, 70.0)]}),
        };
        assert_eq!(
            host_devices_line(&h),
            "devices on n1 (sampled by rank 4, 2 samples every 0.500 s): sda 0 KiB read, 200 KiB written, busiest 70%"
        );
    }
}
