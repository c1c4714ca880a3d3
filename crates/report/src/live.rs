//! The words of the live status line (`--progress`), fio-like:
//! `[running] [r=95.6MiB/s w=0B/s] [r=24.5k w=0 IOPS] [ops 98.0k] [00m:04s] [eta 00m:06s]`.
//! The runner samples the counters and draws the line; this only formats one view of it.

use crate::runner::live::LiveView;

/// Bytes per second in binary units (B/s, KiB/s, MiB/s, GiB/s).
fn rate(bytes_per_sec: f64) -> String {
    let units = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"];
    let mut v = bytes_per_sec.max(0.0);
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0}{}", units[u])
    } else {
        format!("{v:.1}{}", units[u])
    }
}

/// Bytes in binary units, one decimal (`1.5MiB`).
fn size(bytes: u64) -> String {
    rate(bytes as f64).trim_end_matches("/s").to_string()
}

/// A count with k/M/G (powers of 1000, like fio's IOPS).
fn count(n: f64) -> String {
    let n = n.max(0.0);
    if n >= 1e9 {
        format!("{:.1}G", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.1}M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// Minutes and seconds, `04m:07s` (hours as `1h02m:07s`).
fn clock(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    if h > 0 {
        format!("{h}h{m:02}m:{s:02}s")
    } else {
        format!("{m:02}m:{s:02}s")
    }
}

/// The live line for one view.
pub fn render(v: &LiveView) -> String {
    let mut line = format!("[{}]", v.phase);
    if let Some((done, 0)) = v.layout {
        line.push_str(&format!(" [{} laid out]", size(done)));
        return line;
    }
    if let Some((done, total)) = v.layout {
        let pct = if total > 0 {
            done as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        line.push_str(&format!(
            " [{} of {} laid out, {pct:.0}%]",
            size(done),
            size(total)
        ));
        return line;
    }
    if v.phase != "running" && v.phase != "warm-up" {
        return line;
    }
    if v.counters {
        line.push_str(&format!(
            " [r={} w={}] [r={} w={} IOPS] [ops {}]",
            rate(v.read_bytes_per_sec),
            rate(v.write_bytes_per_sec),
            count(v.read_iops),
            count(v.write_iops),
            count((v.read_ops + v.write_ops) as f64),
        ));
    } else {
        line.push_str(" [rates: not live with worker processes]");
    }
    line.push_str(&format!(" [{}]", clock(v.elapsed_s)));
    if let Some(eta) = v.eta_s {
        line.push_str(&format!(" [eta {}]", clock(eta)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_phase_rates_ops_and_times() {
        let v = LiveView {
            phase: "running",
            elapsed_s: 4.2,
            eta_s: Some(6.0),
            read_ops: 98_000,
            read_iops: 24_500.0,
            read_bytes_per_sec: 95.6 * 1048576.0,
            counters: true,
            ..Default::default()
        };
        assert_eq!(
            render(&v),
            "[running] [r=95.6MiB/s w=0B/s] [r=24.5k w=0 IOPS] [ops 98.0k] [00m:04s] [eta 00m:06s]"
        );
        let l = LiveView {
            phase: "laying out files",
            layout: Some((1 << 20, 4 << 20)),
            ..Default::default()
        };
        assert_eq!(
            render(&l),
            "[laying out files] [1.0MiB of 4.0MiB laid out, 25%]"
        );
        let w = LiveView {
            layout: Some((1536 << 10, 0)),
            ..l
        };
        assert_eq!(render(&w), "[laying out files] [1.5MiB laid out]");
        assert_eq!(clock(3725.0), "1h02m:05s");
    }
}
