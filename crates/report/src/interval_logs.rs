//! The `--log DIR` files of a run (fio's write_bw_log, write_iops_log, write_lat_log): its
//! `--status-interval` series as three CSV tables, `bw.csv`, `iops.csv` and `lat.csv`, with
//! one row per interval per thread and one for all threads together (`thread` = `total`),
//! in time order. Units are in the column names. Made from the Result, after the run.

use crate::result::{IntervalReport, RunResult};
use std::fmt::Write;

/// The names of the three logs, in the order [`logs`] returns them.
pub const LOG_NAMES: [&str; 3] = ["bw.csv", "iops.csv", "lat.csv"];

/// Every interval of `r` with its thread label (`u0.t1`, or `total`), in time order.
fn rows(r: &RunResult) -> Vec<(String, &IntervalReport)> {
    let mut rows: Vec<(String, &IntervalReport)> = Vec::new();
    for u in &r.users {
        for t in &u.threads {
            let label = format!("u{}.t{}", u.user, t.thread);
            rows.extend(t.timeseries.iter().map(|i| (label.clone(), i)));
        }
    }
    rows.extend(r.timeseries.iter().map(|i| ("total".to_string(), i)));
    // Stable: within one time, the threads in order and then the total.
    rows.sort_by(|a, b| a.1.t_s.total_cmp(&b.1.t_s));
    rows
}

/// The contents of `bw.csv`, `iops.csv` and `lat.csv`.
pub fn logs(r: &RunResult) -> [String; 3] {
    let mut bw = String::from(
        "t_s,interval_s,thread,read_bytes_per_sec,write_bytes_per_sec,bytes_per_sec\n",
    );
    let mut iops = String::from("t_s,interval_s,thread,read_iops,write_iops,iops\n");
    let mut lat = String::from(
        "t_s,interval_s,thread,count,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p99_9_ns,p99_99_ns,max_ns\n",
    );
    for (who, i) in rows(r) {
        let (t, d) = (i.t_s, i.interval_s);
        let _ = writeln!(
            bw,
            "{t:.6},{d:.6},{who},{:.0},{:.0},{:.0}",
            i.read_bytes_per_sec, i.write_bytes_per_sec, i.bytes_per_sec
        );
        let _ = writeln!(
            iops,
            "{t:.6},{d:.6},{who},{:.1},{:.1},{:.1}",
            i.read_iops, i.write_iops, i.iops
        );
        let l = &i.lat_ns;
        let _ = writeln!(
            lat,
            "{t:.6},{d:.6},{who},{},{},{:.0},{},{},{},{},{},{}",
            l.count, l.min, l.mean, l.p50, l.p90, l.p99, l.p99_9, l.p99_99, l.max
        );
    }
    [bw, iops, lat]
}
