//! Device statistics as text, like `sar -d`: one row per device per interval, then the
//! averages. `fsbench iostat` prints the head, rows as they are sampled and the averages at
//! the end; a Result's `--iostat` samples print as the whole [`table`].

use crate::probe::diskstats::{self, DeviceSample, IostatSeries};
use std::fmt::Write;

/// What is sampled: the devices under `path`, or every device with I/O.
pub(crate) fn devices_line(path: Option<&std::path::Path>, devices: &[String]) -> String {
    match path {
        Some(p) => format!("devices under {}: {}\n", p.display(), devices.join(" -> ")),
        None => "all devices with I/O\n".to_string(),
    }
}

/// The column heads.
pub(crate) fn header() -> String {
    format!(
        "{:>8} {:<10} {:>8} {:>8} {:>10} {:>10} {:>7} {:>8} {:>8} {:>8} {:>6}\n",
        "t_s",
        "device",
        "r/s",
        "w/s",
        "rKiB/s",
        "wKiB/s",
        "avque",
        "await",
        "avwait",
        "avserv",
        "%busy"
    )
}

fn row(s: &mut String, label: &str, x: &DeviceSample) {
    let _ = writeln!(
        s,
        "{:>8} {:<10} {:>8.1} {:>8.1} {:>10.1} {:>10.1} {:>7.2} {:>8.2} {:>8.2} {:>8.2} {:>6.1}",
        label,
        x.device,
        x.reads_per_sec,
        x.writes_per_sec,
        x.read_kb_per_sec,
        x.write_kb_per_sec,
        x.avg_queue,
        x.await_ms,
        x.avwait_ms,
        x.avserv_ms,
        x.util_pct
    );
}

/// One row per sample, labelled with its time from the start of the run.
pub(crate) fn rows(series: &IostatSeries) -> String {
    let mut s = String::new();
    for x in &series.samples {
        row(&mut s, &format!("{:.1}", x.t_s - series.run_start_s), x);
    }
    s
}

/// The row of an interval in which no device did I/O.
pub(crate) fn idle_row(t_s: f64) -> String {
    format!("{t_s:>8.1} (no device did I/O)\n")
}

/// One `Average` row per device, devices by name.
pub(crate) fn averages(series: &IostatSeries) -> String {
    let mut s = String::new();
    let mut names: Vec<&str> = series.samples.iter().map(|x| x.device.as_str()).collect();
    names.sort();
    names.dedup();
    for n in names {
        let these: Vec<&DeviceSample> = series.samples.iter().filter(|x| x.device == n).collect();
        if let Some(avg) = diskstats::average(&these) {
            row(&mut s, "Average", &avg);
        }
    }
    s
}

/// The whole table: head, rows, averages.
pub(crate) fn table(series: &IostatSeries) -> String {
    header() + &rows(series) + &averages(series)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(device: &str, t_s: f64, reads_per_sec: f64) -> DeviceSample {
        DeviceSample {
            device: device.into(),
            t_s,
            interval_s: 1.0,
            reads_per_sec,
            ..Default::default()
        }
    }

    #[test]
    fn table_is_head_rows_then_one_average_per_device() {
        let s = IostatSeries {
            devices: vec![],
            interval_s: 1.0,
            run_start_s: 0.5,
            samples: vec![
                sample("vdb", 1.0, 10.0),
                sample("vda", 1.0, 4.0),
                sample("vdb", 2.0, 20.0),
            ],
        };
        let t = table(&s);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 1 + 3 + 2, "{t}");
        assert!(lines[0].trim_start().starts_with("t_s device"));
        assert!(lines[1].starts_with("     0.5 vdb            10.0"), "{t}");
        assert!(lines[4].starts_with(" Average vda             4.0"), "{t}");
        assert!(lines[5].starts_with(" Average vdb            15.0"), "{t}");
        assert_eq!(idle_row(2.0), "     2.0 (no device did I/O)\n");
        assert_eq!(table(&IostatSeries::default()), header());
    }
}
