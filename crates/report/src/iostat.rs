//! Device statistics as text, like `sar -d`: one row per device per interval, then the
//! averages. `fsbench iostat` prints the head, rows as they are sampled and the averages at
//! the end; a Result's `--iostat` samples print as the whole `table`.

use super::text_table::{Fit, TextTable};
use crate::probe::diskstats::{self, DeviceSample, IostatSeries};

/// What is sampled: the devices under `path`, or every device with I/O.
pub fn devices_line(path: Option<&std::path::Path>, devices: &[String]) -> String {
    match path {
        Some(p) => format!("devices under {}: {}\n", p.display(), devices.join(" -> ")),
        None => "all devices with I/O\n".to_string(),
    }
}

/// The table's columns: rows are printed as they are sampled, so the widths are fixed ahead
/// and a narrow terminal gets each row (and the head) continued on an indented line
/// ([`Fit::Stack`]); the time and the device label every row.
fn layout() -> TextTable {
    TextTable::new(
        [
            "t_s", "device", "r/s", "w/s", "r+w/s", "rKiB/s", "wKiB/s", "blks/s", "avque", "await",
            "avwait", "avserv", "%busy",
        ],
        2,
        Fit::Stack,
    )
    .min_widths(&[8, 10, 8, 8, 8, 10, 10, 10, 7, 8, 8, 8, 6])
    .gaps(&[1])
    .align_right(0, true)
}

/// The column heads, fitted to the terminal.
pub fn header() -> String {
    header_width(super::width::terminal_width())
}

fn header_width(width: Option<usize>) -> String {
    layout().render_head(width)
}

fn row(s: &mut String, label: &str, x: &DeviceSample, width: Option<usize>) {
    let cells = vec![
        label.to_string(),
        x.device.clone(),
        format!("{:.1}", x.reads_per_sec),
        format!("{:.1}", x.writes_per_sec),
        format!("{:.1}", x.reads_per_sec + x.writes_per_sec),
        format!("{:.1}", x.read_kb_per_sec),
        format!("{:.1}", x.write_kb_per_sec),
        format!("{:.0}", x.blocks_per_sec),
        format!("{:.2}", x.avg_queue),
        format!("{:.2}", x.await_ms),
        format!("{:.2}", x.avwait_ms),
        format!("{:.2}", x.avserv_ms),
        format!("{:.1}", x.util_pct),
    ];
    s.push_str(&layout().render_row(&cells, width));
}

/// One row per sample, labelled with its time from the start of the run.
pub fn rows(series: &IostatSeries) -> String {
    rows_width(series, super::width::terminal_width())
}

fn rows_width(series: &IostatSeries, width: Option<usize>) -> String {
    let mut s = String::new();
    for x in &series.samples {
        row(
            &mut s,
            &format!("{:.1}", x.t_s - series.run_start_s),
            x,
            width,
        );
    }
    s
}

/// The row of an interval in which no device did I/O.
pub fn idle_row(t_s: f64) -> String {
    format!("{t_s:>8.1} (no device did I/O)\n")
}

/// One `Average` row per device, devices by name.
pub fn averages(series: &IostatSeries) -> String {
    averages_width(series, super::width::terminal_width())
}

fn averages_width(series: &IostatSeries, width: Option<usize>) -> String {
    let mut s = String::new();
    let mut names: Vec<&str> = series.samples.iter().map(|x| x.device.as_str()).collect();
    names.sort();
    names.dedup();
    for n in names {
        let these: Vec<&DeviceSample> = series.samples.iter().filter(|x| x.device == n).collect();
        if let Some(avg) = diskstats::average(&these) {
            row(&mut s, "Average", &avg, width);
        }
    }
    s
}

/// The whole table: head, rows, averages.
pub(crate) fn table(series: &IostatSeries) -> String {
    table_width(series, super::width::terminal_width())
}

/// The whole table at most `width` wide where the columns allow (None: one line a row).
fn table_width(series: &IostatSeries, width: Option<usize>) -> String {
    header_width(width) + &rows_width(series, width) + &averages_width(series, width)
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
        let t = table_width(&s, None);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 1 + 3 + 2, "{t}");
        assert!(lines[0].trim_start().starts_with("t_s device"));
        assert!(lines[1].starts_with("     0.5 vdb            10.0"), "{t}");
        assert!(lines[4].starts_with(" Average vda             4.0"), "{t}");
        assert!(lines[5].starts_with(" Average vdb            15.0"), "{t}");
        assert_eq!(idle_row(2.0), "     2.0 (no device did I/O)\n");
        assert_eq!(
            table_width(&IostatSeries::default(), None),
            header_width(None)
        );
        // On a 60-column terminal each row goes on under its time and device, every figure
        // kept and the head split the same way.
        let narrow = table_width(&s, Some(60));
        assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
        let head_lines = header_width(Some(60)).lines().count();
        assert!(head_lines >= 2, "{narrow}");
        assert_eq!(narrow.lines().count(), head_lines * (1 + 3 + 2), "{narrow}");
        assert!(
            narrow.contains("%busy") && narrow.contains("15.0"),
            "{narrow}"
        );
    }
}
