//! The table `fsbench quick` prints as its tests finish: a title, the column heads, then one
//! row per test (with its errors under it). JSON and CSV of the battery are [`super::Runs`].

use crate::result::RunResult;
use crate::units::{format_bytes, format_ns, RateUnit};
use std::fmt::Write;
use std::path::Path;

/// What the battery is, and the column heads.
pub(crate) fn header(tests: usize, dir: &Path, file_size: u64, timed_s: f64) -> String {
    format!(
        "fsbench quick: {tests} tests in {} ({} file, {timed_s} s timed tests)\n{:<26} {:>10} {:>10} {:>9} {:>10} {:>10}  {}\n",
        dir.display(),
        format_bytes(file_size as f64),
        "test",
        "MB/s",
        "IOPS",
        "CPU s",
        "lat p50",
        "lat p99",
        "status"
    )
}

/// One test's row, then a line for each error it met.
pub(crate) fn row(r: &RunResult) -> String {
    let t = &r.total;
    let mut s = format!(
        "{:<26} {:>10.1} {:>10.0} {:>9.2} {:>10} {:>10}  {}\n",
        r.name,
        RateUnit::MegaBytes.convert(t.bytes_per_sec),
        t.iops,
        t.cpu_s,
        format_ns(t.lat_ns.p50 as f64),
        format_ns(t.lat_ns.p99 as f64),
        r.status.name()
    );
    for f in &r.failures {
        let _ = writeln!(s, "  error: {f}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_rows_line_up() {
        let h = header(7, Path::new("/d"), 1 << 30, 10.0);
        assert_eq!(
            h,
            "fsbench quick: 7 tests in /d (1.00 GiB file, 10 s timed tests)\ntest                             MB/s       IOPS     CPU s    lat p50    lat p99  status\n"
        );
        let rec = crate::report::table::tests::fake("q", &[], 0.0, 0.0, None);
        let mut r = rec.result().unwrap().clone();
        r.name = "seq read 1m direct".into();
        r.total.bytes_per_sec = 3.0 * 1048576.0;
        r.total.iops = 3.0;
        r.total.lat_ns.p50 = 850;
        r.total.lat_ns.p99 = 12_300;
        let line = row(&r);
        assert!(
            line.starts_with("seq read 1m direct                3.0          3 "),
            "{line}"
        );
        assert!(line.contains("     850 ns    12.3 us  "), "{line}");
        assert_eq!(
            line.lines().next().unwrap().len(),
            h.lines().nth(1).unwrap().len() - "status".len() + r.status.name().len()
        );
    }
}
