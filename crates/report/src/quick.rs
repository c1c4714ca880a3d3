//! The table `fsbench quick` prints as its tests finish: a title, the column heads, then one
//! row per test summarising its timed runs (median, and the range over the runs), with the
//! errors under it. JSON and CSV of the battery are [`super::Runs`] (every timed run).
//!
//! MB/s here is 10^6 bytes a second, as CrystalDiskMark and the drive makers print it.

use super::text_table::{Fit, TextTable};
use crate::result::RunResult;
use crate::runner::RunStatus;
use crate::units::{format_bytes, format_ns};
use std::fmt::Write;
use std::path::Path;

/// What the battery is, and the column heads.
pub fn header(
    profile: &str,
    tests: usize,
    dir: &Path,
    (file_size, time_s, warmup_s, repeat): (u64, f64, f64, u32),
    ranks: Option<u32>,
) -> String {
    // Under mpirun every test runs on every rank, a scratch file each; the figures are the
    // aggregate over the ranks.
    let (file, over) = match ranks {
        Some(n) => (
            format!(
                "on {n} MPI ranks, a {} file each",
                format_bytes(file_size as f64)
            ),
            " (over all ranks)",
        ),
        None => (format!("{} file", format_bytes(file_size as f64)), ""),
    };
    let warm = if warmup_s > 0.0 {
        format!(" after a {warmup_s} s warm-up")
    } else {
        String::new()
    };
    format!(
        "fsbench quick ({profile}): {tests} tests in {}, {file}, each timed {time_s} s{warm}, median of {repeat}\n\
         MB/s = 10^6 bytes/s{over}; range = slowest..fastest run; CPU us/op = CPU time per I/O\n{}",
        dir.display(),
        heads("direct I/O")
    )
}

/// The heads over the second block: fsbench's own tests beside the standard battery.
pub fn extras_header() -> String {
    heads("extras")
}

fn heads(first: &str) -> String {
    layout(first).render_head(super::width::terminal_width())
}

/// The table's columns, `first` heading the test names: printed a row at a time as the
/// tests finish, so the widths are fixed ahead and a narrow terminal gets each row (and the
/// head) continued on an indented line ([`Fit::Stack`]).
fn layout(first: &str) -> TextTable {
    TextTable::new(
        [
            first,
            "MB/s",
            "range MB/s",
            "IOPS",
            "lat p50",
            "lat p99",
            "CPU us/op",
            "status",
        ],
        1,
        Fit::Stack,
    )
    .min_widths(&[22, 9, 17, 9, 10, 10, 10, 0])
    .gaps(&[1, 1, 1, 1, 1, 1, 2, 0])
    .align_right(7, false)
}

/// What a row shows for a test's timed runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    pub mb_per_sec: f64,
    pub mb_per_sec_min: f64,
    pub mb_per_sec_max: f64,
    pub iops: f64,
    pub lat_p50_ns: f64,
    pub lat_p99_ns: f64,
    pub cpu_us_per_op: f64,
    pub status: RunStatus,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The median and range over the runs; CPU per I/O over all of them together.
pub(crate) fn summarise(runs: &[RunResult]) -> Summary {
    let of = |f: &dyn Fn(&RunResult) -> f64| median(runs.iter().map(f).collect());
    let mb: Vec<f64> = runs.iter().map(|r| r.total.bytes_per_sec / 1e6).collect();
    let ops: u64 = runs.iter().map(|r| r.total.ops).sum();
    let cpu: f64 = runs.iter().map(|r| r.total.cpu_s).sum();
    Summary {
        mb_per_sec: median(mb.clone()),
        mb_per_sec_min: mb.iter().copied().fold(f64::INFINITY, f64::min),
        mb_per_sec_max: mb.iter().copied().fold(0.0, f64::max),
        iops: of(&|r| r.total.iops),
        lat_p50_ns: of(&|r| r.total.lat_ns.p50 as f64),
        lat_p99_ns: of(&|r| r.total.lat_ns.p99 as f64),
        cpu_us_per_op: if ops > 0 { cpu / ops as f64 * 1e6 } else { 0.0 },
        status: runs
            .iter()
            .map(|r| r.status)
            .find(|s| *s != RunStatus::Complete)
            .unwrap_or(RunStatus::Complete),
    }
}

/// One test's row, then a line for each error its runs met, fitted to the terminal.
pub fn row(name: &str, runs: &[RunResult]) -> String {
    row_width(name, runs, super::width::terminal_width())
}

/// One test's row at most `width` wide where the columns allow (None: one line).
fn row_width(name: &str, runs: &[RunResult], width: Option<usize>) -> String {
    let s = summarise(runs);
    let range = format!("{:.1}..{:.1}", s.mb_per_sec_min, s.mb_per_sec_max);
    let cells = vec![
        name.to_string(),
        format!("{:.1}", s.mb_per_sec),
        range,
        format!("{:.0}", s.iops),
        format_ns(s.lat_p50_ns),
        format_ns(s.lat_p99_ns),
        format!("{:.2}", s.cpu_us_per_op),
        s.status.name().to_string(),
    ];
    let mut out = layout("").render_row(&cells, width);
    for f in runs.iter().flat_map(|r| &r.failures) {
        let _ = writeln!(out, "  error: {f}");
    }
    for e in findings(runs) {
        let words: Vec<String> = e.message.split(' ').map(str::to_string).collect();
        let _ = writeln!(
            out,
            "{}",
            super::width::wrap_items("  explain:", &words, width)
        );
    }
    out
}

/// What `explain` found on a test's timed runs, each check once (the first run's words): a
/// range of runs that disagree (`spread`) says why its median is not to be trusted alone.
fn findings(runs: &[RunResult]) -> Vec<&crate::explain::Explanation> {
    let mut seen: Vec<&crate::explain::Explanation> = Vec::new();
    for e in runs.iter().flat_map(|r| &r.explain) {
        if !seen.iter().any(|s| s.check == e.check) {
            seen.push(e);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(mb: f64, iops: f64, p50: u64, ops: u64, cpu_s: f64) -> RunResult {
        let rec = crate::table::tests::fake("q", &[], 0.0, 0.0, None);
        let mut r = rec.result().unwrap().clone();
        r.total.bytes_per_sec = mb * 1e6;
        r.total.iops = iops;
        r.total.lat_ns.p50 = p50;
        r.total.lat_ns.p99 = p50 * 10;
        r.total.ops = ops;
        r.total.cpu_s = cpu_s;
        r
    }

    #[test]
    fn a_row_is_the_median_and_range_of_the_runs() {
        let runs = [
            run(100.0, 10.0, 900, 100, 0.001),
            run(300.0, 30.0, 800, 300, 0.002),
            run(200.0, 20.0, 850, 200, 0.003),
        ];
        let s = summarise(&runs);
        assert_eq!(s.mb_per_sec, 200.0);
        assert_eq!((s.mb_per_sec_min, s.mb_per_sec_max), (100.0, 300.0));
        assert_eq!((s.iops, s.lat_p50_ns, s.lat_p99_ns), (20.0, 850.0, 8500.0));
        assert!((s.cpu_us_per_op - 10.0).abs() < 1e-9, "{s:?}");
        let line = row_width("RND4K Q1T1 read", &runs, None);
        assert!(
            line.starts_with("RND4K Q1T1 read            200.0      100.0..300.0        20 "),
            "{line}"
        );
        assert!(line.contains("  850 ns     8.5 us      10.00  "), "{line}");
        let h = header("quick", 11, Path::new("/d"), (1 << 28, 1.0, 0.5, 3), None);
        let head = layout("direct I/O").render_head(None);
        assert_eq!(h.lines().nth(2), head.lines().next());
        let heads = head.trim_end();
        assert_eq!(
            line.lines().next().unwrap().len(),
            heads.len() - "status".len() + s.status.name().len(),
            "{heads}\n{line}"
        );
        assert!(h.starts_with(
            "fsbench quick (quick): 11 tests in /d, 256.00 MiB file, each timed 1 s after a 0.5 s warm-up, median of 3\n"
        ));
        let on_ranks = header("quick", 8, Path::new("/d"), (1 << 22, 1.0, 0.0, 1), Some(4));
        assert!(
            on_ranks.starts_with(
                "fsbench quick (quick): 8 tests in /d, on 4 MPI ranks, a 4.00 MiB file each, each timed 1 s, median of 1\nMB/s = 10^6 bytes/s (over all ranks); "
            ),
            "{on_ranks}"
        );
    }

    /// On a 60-column terminal the head and each row go on over indented lines, in the same
    /// columns, every figure kept.
    #[test]
    fn rows_and_head_fit_a_narrow_terminal_in_the_same_columns() {
        let runs = [run(123.4, 31_000.0, 900, 100, 0.001)];
        let head = layout("direct I/O").render_head(Some(60));
        let line = row_width("RND4K Q32T1 read", &runs, Some(60));
        assert!(head.lines().count() >= 2, "{head}");
        assert_eq!(head.lines().count(), line.lines().count(), "{head}{line}");
        assert!(head
            .lines()
            .chain(line.lines())
            .all(|l| l.chars().count() <= 60));
        for v in [
            "123.4",
            "31000",
            "900 ns",
            "9.0 us",
            "complete",
            "CPU us/op",
            "status",
        ] {
            assert!(head.contains(v) || line.contains(v), "{v}: {head}{line}");
        }
        // Each line of the row ends where the head's line above ends (the status words are
        // left-aligned, the figures right-aligned).
        for (h, r) in head.lines().zip(line.lines()) {
            match h.strip_suffix("status") {
                Some(h) => assert_eq!(Some(h.len()), r.rfind("complete"), "{head}{line}"),
                None => assert_eq!(h.len(), r.len(), "{head}{line}"),
            }
        }
    }

    /// Runs of 97 and 450 MB/s: the row says they disagree, once.
    #[test]
    fn a_wide_range_is_explained_under_the_row() {
        let mut runs = [
            run(97.0, 10.0, 900, 100, 0.001),
            run(450.0, 30.0, 800, 300, 0.002),
            run(200.0, 20.0, 850, 200, 0.003),
        ];
        for r in runs.iter_mut() {
            r.total.bytes = 1 << 20;
        }
        assert!(crate::explain::mark_spread(runs.iter_mut()));
        let line = row_width("SEQ1M Q8T1 read", &runs, None);
        assert!(line.contains("97.0..450.0"), "{line}");
        assert_eq!(line.matches("  explain: ").count(), 1, "{line}");
        assert!(
            line.contains("  explain: the 3 repetitions of this point disagree by 141.8%"),
            "{line}"
        );
        assert!(line.contains("--time"), "{line}");
        // On a narrow terminal the explanation goes on under itself, every word kept.
        let narrow = row_width("SEQ1M Q8T1 read", &runs, Some(60));
        assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
        let words = |t: &str| t.split_whitespace().map(String::from).collect::<Vec<_>>();
        let said = |t: &str| t[t.find("  explain:").unwrap()..].to_string();
        assert_eq!(words(&said(&narrow)), words(&said(&line)));
        // Runs that agree: the row alone.
        let same = [
            run(100.0, 10.0, 900, 100, 0.001),
            run(101.0, 10.0, 900, 100, 0.001),
        ];
        assert!(!row_width("x", &same, None).contains("explain"));
    }

    #[test]
    fn an_even_number_of_runs_takes_the_middle_pair() {
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }
}
