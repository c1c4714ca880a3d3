//! The metrics tables and charts show, by key: how to read each from a Result, its column
//! label with units, and which direction is better (for `compare`).

use crate::result::RunResult;

#[derive(Debug)]
pub struct Metric {
    pub key: &'static str,
    /// Column label, units included.
    pub label: &'static str,
    pub decimals: usize,
    pub higher_is_better: bool,
    pub get: fn(&RunResult) -> Option<f64>,
}

fn calls(r: &RunResult) -> f64 {
    (r.total.syscalls.read + r.total.syscalls.write) as f64
}

/// The `--iostat` average, over the timed run, of the device the run's files sit on (the
/// first device sampled: the one holding the file system; the devices under it are in the
/// Result's `probes.iostat`).
fn run_device(r: &RunResult) -> Option<crate::probe::diskstats::DeviceSample> {
    let v = r.probes.get("iostat")?;
    let series: crate::probe::diskstats::IostatSeries = serde_json::from_value(v.clone()).ok()?;
    let device = series
        .devices
        .first()
        .cloned()
        .or_else(|| series.samples.first().map(|s| s.device.clone()))?;
    let during: Vec<&crate::probe::diskstats::DeviceSample> = series
        .samples
        .iter()
        .filter(|s| s.device == device && s.t_s > series.run_start_s)
        .collect();
    crate::probe::diskstats::average(&during)
}

/// Mean time of one call of a direction, microseconds (`tusc -c`'s seconds / calls).
fn us_per_call(d: &crate::stats::DirReport) -> Option<f64> {
    (d.lat_ns.count > 0).then(|| d.lat_ns.mean / 1e3)
}

/// Every run's value of metric `key` when `r` holds `--repeat` runs and the metric is one of
/// their headline figures (None otherwise: the Result's one value stands).
pub(crate) fn repeat_values(key: &str, r: &RunResult) -> Option<Vec<f64>> {
    let rep = r.repeat.as_ref()?;
    let (headline, scale): (&str, fn(f64) -> f64) = match key {
        "kb_per_s" => ("bytes_per_sec", |v| v / 1024.0),
        "mb_per_s" => ("bytes_per_sec", |v| v / (1024.0 * 1024.0)),
        "iops" | "ops_per_s" => ("iops", |v| v),
        "lat_ms" => ("lat_mean_ns", |v| v / 1e6),
        "lat_p99_ms" => ("lat_p99_ns", |v| v / 1e6),
        "cpu_us_per_op" => ("ops_per_cpu_s", |v| 1e6 / v),
        _ => return None,
    };
    Some(rep.values(headline)?.into_iter().map(scale).collect())
}

pub(crate) const METRICS: &[Metric] = &[
    Metric {
        key: "kb_per_s",
        label: "KiB/s",
        decimals: 0,
        higher_is_better: true,
        get: |r| Some(r.total.bytes_per_sec / 1024.0),
    },
    Metric {
        key: "mb_per_s",
        label: "MiB/s",
        decimals: 2,
        higher_is_better: true,
        get: |r| Some(r.total.bytes_per_sec / (1024.0 * 1024.0)),
    },
    Metric {
        key: "read_mib_per_s",
        label: "read MiB/s",
        decimals: 2,
        higher_is_better: true,
        get: |r| Some(r.total.read.bytes_per_sec / (1024.0 * 1024.0)),
    },
    Metric {
        key: "write_mib_per_s",
        label: "write MiB/s",
        decimals: 2,
        higher_is_better: true,
        get: |r| Some(r.total.write.bytes_per_sec / (1024.0 * 1024.0)),
    },
    Metric {
        key: "trim_mib_per_s",
        label: "trim MiB/s",
        decimals: 2,
        higher_is_better: true,
        get: |r| Some(r.total.trim.bytes_per_sec / (1024.0 * 1024.0)),
    },
    Metric {
        key: "trim_iops",
        label: "trim IOPS",
        decimals: 0,
        higher_is_better: true,
        get: |r| Some(r.total.trim.iops),
    },
    Metric {
        key: "trim_lat_ms",
        label: "trim mean latency ms",
        decimals: 3,
        higher_is_better: false,
        get: |r| (r.total.trim.ops > 0).then(|| r.total.trim.lat_ns.mean / 1e6),
    },
    Metric {
        key: "cpu_s",
        label: "CPU s",
        decimals: 3,
        higher_is_better: false,
        get: |r| Some(r.total.cpu_s),
    },
    Metric {
        key: "user_s",
        label: "user s",
        decimals: 3,
        higher_is_better: false,
        get: |r| Some(r.total.cpu_user_s),
    },
    Metric {
        key: "sys_s",
        label: "sys s",
        decimals: 3,
        higher_is_better: false,
        get: |r| Some(r.total.cpu_sys_s),
    },
    Metric {
        key: "elapsed_s",
        label: "elapsed s",
        decimals: 3,
        higher_is_better: false,
        get: |r| Some(r.total.elapsed_s),
    },
    Metric {
        key: "ops_per_s",
        label: "ops/s",
        decimals: 0,
        higher_is_better: true,
        get: |r| Some(r.total.iops),
    },
    Metric {
        key: "iops",
        label: "IOPS",
        decimals: 0,
        higher_is_better: true,
        get: |r| Some(r.total.iops),
    },
    Metric {
        key: "cpu_us_per_op",
        label: "CPU us/op",
        decimals: 1,
        higher_is_better: false,
        get: |r| Some(r.total.cpu_us_per_op),
    },
    Metric {
        key: "lat_ms",
        label: "mean latency ms",
        decimals: 3,
        higher_is_better: false,
        get: |r| Some(r.total.lat_ns.mean / 1e6),
    },
    Metric {
        key: "lat_p99_ms",
        label: "p99 latency ms",
        decimals: 3,
        higher_is_better: false,
        get: |r| Some(r.total.lat_ns.p99 as f64 / 1e6),
    },
    Metric {
        key: "lat_p99_99_ms",
        label: "p99.99 latency ms",
        decimals: 3,
        higher_is_better: false,
        get: |r| Some(r.total.lat_ns.p99_99 as f64 / 1e6),
    },
    Metric {
        key: "lat_stdev_ms",
        label: "latency stdev ms",
        decimals: 3,
        higher_is_better: false,
        get: |r| Some(r.total.lat_ns.stdev / 1e6),
    },
    // Latency from each I/O's intended issue time (a rate-limited run's schedule), which counts
    // the wait an I/O spent behind a slow one (coordinated omission); without a rate every I/O
    // is issued when intended, and these are the service latencies.
    Metric {
        key: "sched_lat_ms",
        label: "mean latency from schedule ms",
        decimals: 3,
        higher_is_better: false,
        get: |r| Some(r.total.sched_lat_ns.mean / 1e6),
    },
    Metric {
        key: "sched_lat_p99_ms",
        label: "p99 latency from schedule ms",
        decimals: 3,
        higher_is_better: false,
        get: |r| Some(r.total.sched_lat_ns.p99 as f64 / 1e6),
    },
    Metric {
        key: "read_calls",
        label: "read calls",
        decimals: 0,
        higher_is_better: false,
        get: |r| Some(r.total.syscalls.read as f64),
    },
    Metric {
        key: "write_calls",
        label: "write calls",
        decimals: 0,
        higher_is_better: false,
        get: |r| Some(r.total.syscalls.write as f64),
    },
    Metric {
        key: "calls_per_s",
        label: "read+write calls/s",
        decimals: 0,
        higher_is_better: true,
        get: |r| (r.total.elapsed_s > 0.0).then(|| calls(r) / r.total.elapsed_s),
    },
    Metric {
        key: "read_us_per_call",
        label: "us/read call",
        decimals: 1,
        higher_is_better: false,
        get: |r| us_per_call(&r.total.read),
    },
    Metric {
        key: "write_us_per_call",
        label: "us/write call",
        decimals: 1,
        higher_is_better: false,
        get: |r| us_per_call(&r.total.write),
    },
    Metric {
        key: "dev_busy_pct",
        label: "dev %busy",
        decimals: 1,
        higher_is_better: false,
        get: |r| run_device(r).map(|d| d.util_pct),
    },
    Metric {
        key: "dev_avque",
        label: "dev avque",
        decimals: 2,
        higher_is_better: false,
        get: |r| run_device(r).map(|d| d.avg_queue),
    },
    Metric {
        key: "dev_rw_per_s",
        label: "dev r+w/s",
        decimals: 1,
        higher_is_better: true,
        get: |r| run_device(r).map(|d| d.reads_per_sec + d.writes_per_sec),
    },
    Metric {
        key: "dev_blks_per_s",
        label: "dev blks/s",
        decimals: 0,
        higher_is_better: true,
        get: |r| run_device(r).map(|d| d.blocks_per_sec),
    },
    Metric {
        key: "dev_avwait_ms",
        label: "dev avwait ms",
        decimals: 2,
        higher_is_better: false,
        get: |r| run_device(r).map(|d| d.avwait_ms),
    },
    Metric {
        key: "dev_avserv_ms",
        label: "dev avserv ms",
        decimals: 2,
        higher_is_better: false,
        get: |r| run_device(r).map(|d| d.avserv_ms),
    },
    Metric {
        key: "extents_per_file",
        label: "extents/file",
        decimals: 1,
        higher_is_better: false,
        get: |r| r.probes.get("extents_per_file").and_then(|v| v.as_f64()),
    },
];

pub(crate) fn find(key: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.key == key)
}

/// Metrics of a study without a stated list.
pub(crate) const DEFAULT_METRICS: &[&str] = &["kb_per_s", "cpu_s", "iops", "lat_ms"];

pub(crate) fn keys() -> Vec<&'static str> {
    METRICS.iter().map(|m| m.key).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::suite;

    #[test]
    fn every_metric_a_shipped_suite_names_exists() {
        for (name, _) in suite::EMBEDDED {
            let r = suite::resolve(suite::find(name).unwrap(), None).unwrap();
            for s in &r.studies {
                for m in &s.study().table.metrics {
                    assert!(find(m).is_some(), "{name}: unknown metric {m}");
                }
                for m in suite::BACKUP_DEVICE_METRICS {
                    assert!(find(m).is_some(), "unknown backup device metric {m}");
                }
            }
        }
    }
}
