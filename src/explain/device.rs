//! The `device_idle` check: the devices under the targets were busy only a small share of
//! the timed run (from the `--iostat` samples the Result stores), yet they served its I/O:
//! the storage had room to spare, so the pace was set on the host's side (fsbench's CPU, the
//! queue depth, a rate limit, think time), not by the storage.

use super::{finding, Explanation, RunFacts};
use crate::probe::diskstats::{self, DeviceSample, IostatSeries};
use serde_json::json;

/// Below this mean %util over the timed run a device counts as idle.
pub(crate) const IDLE_UTIL_PCT: f64 = 30.0;

/// A device's samples over the timed run, averaged.
fn run_averages(s: &IostatSeries) -> Vec<DeviceSample> {
    let mut out = Vec::new();
    for d in &s.devices {
        // A sample belongs to the run when most of its interval lies after the run began.
        let in_run: Vec<&DeviceSample> = s
            .samples
            .iter()
            .filter(|x| &x.device == d && x.t_s - x.interval_s / 2.0 >= s.run_start_s)
            .collect();
        if let Some(a) = diskstats::average(&in_run) {
            out.push(a);
        }
    }
    out
}

/// The devices under the targets were mostly idle while they served the run's I/O.
pub(crate) fn device_idle(r: &RunFacts, out: &mut Vec<Explanation>) {
    let Some(v) = r.probes.get("iostat") else {
        return;
    };
    // No block device under the targets: the samples are of other devices.
    if v.get("note").is_some() {
        return;
    }
    let Ok(series) = serde_json::from_value::<IostatSeries>(v.clone()) else {
        return;
    };
    let avg = run_averages(&series);
    let kb_per_s: f64 = avg
        .iter()
        .map(|a| a.read_kb_per_sec + a.write_kb_per_sec)
        .sum();
    let busiest = avg.iter().map(|a| a.util_pct).fold(0.0, f64::max);
    // The page cache absorbed everything (no device I/O): that is `page_cache`'s finding.
    if avg.is_empty() || kb_per_s <= 0.0 || busiest >= IDLE_UTIL_PCT || r.total.elapsed_s < 0.1 {
        return;
    }
    let per_device: Vec<String> = avg
        .iter()
        .map(|a| format!("{} {:.1}%", a.device, a.util_pct))
        .collect();
    let cpu_per_s = r.total.cpu_s / r.total.elapsed_s;
    out.push(finding(
        "device_idle",
        format!(
            "the devices under the targets were busy only {busiest:.1}% of the run ({}) while serving {}/s: the storage had capacity to spare, so the limit was on the host's side (fsbench's CPU at {cpu_per_s:.2} s per second, the queue depth, a rate limit or think time), not the storage",
            per_device.join(", "),
            crate::units::format_bytes(kb_per_s * 1024.0)
        ),
        json!({
            "util_pct": avg.iter().map(|a| (a.device.clone(), a.util_pct)).collect::<std::collections::BTreeMap<_, _>>(),
            "device_kb_per_sec": kb_per_s,
            "idle_below_util_pct": IDLE_UTIL_PCT,
            "cpu_s_per_s": cpu_per_s,
            "samples": series.samples.len(),
        }),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::StatsReport;

    fn sample(device: &str, t_s: f64, util_pct: f64, read_kb_per_sec: f64) -> DeviceSample {
        DeviceSample {
            device: device.into(),
            t_s,
            interval_s: 0.5,
            read_kb_per_sec,
            util_pct,
            reads_per_sec: read_kb_per_sec / 4.0,
            ..Default::default()
        }
    }

    fn explain_with(series: serde_json::Value) -> Vec<Explanation> {
        let total = StatsReport {
            ops: 1000,
            read_ops: 1000,
            elapsed_s: 2.0,
            cpu_s: 0.2,
            ..Default::default()
        };
        let mut probes = serde_json::Map::new();
        probes.insert("iostat".into(), series);
        let mut out = Vec::new();
        device_idle(
            &RunFacts {
                total: &total,
                job: None,
                cache: None,
                probes: &probes,
                threads: 1,
                data_set: None,
                mem_total_bytes: None,
                dirty_expire_s: None,
            },
            &mut out,
        );
        out
    }

    fn series(samples: Vec<DeviceSample>) -> serde_json::Value {
        serde_json::to_value(IostatSeries {
            devices: vec!["vda".into()],
            interval_s: 0.5,
            run_start_s: 0.5,
            samples,
        })
        .unwrap()
    }

    #[test]
    fn a_device_busy_a_tenth_of_the_run_is_idle_and_a_busy_one_is_not() {
        // Preparation (before run_start_s) kept the device busy; the run did not.
        let idle = explain_with(series(vec![
            sample("vda", 0.5, 100.0, 90000.0),
            sample("vda", 1.0, 8.0, 800.0),
            sample("vda", 1.5, 12.0, 1200.0),
        ]));
        assert_eq!(idle.len(), 1, "{idle:?}");
        assert_eq!(idle[0].check, "device_idle");
        assert!(
            idle[0]
                .message
                .contains("busy only 10.0% of the run (vda 10.0%)"),
            "{}",
            idle[0].message
        );
        assert_eq!(idle[0].evidence["util_pct"]["vda"], 10.0);
        let busy = explain_with(series(vec![
            sample("vda", 1.0, 85.0, 80000.0),
            sample("vda", 1.5, 95.0, 90000.0),
        ]));
        assert!(busy.is_empty(), "{busy:?}");
    }

    #[test]
    fn no_device_io_or_no_device_under_the_target_says_nothing() {
        // Cached reads: the device did nothing (the page-cache check speaks to that).
        assert!(explain_with(series(vec![sample("vda", 1.0, 0.0, 0.0)])).is_empty());
        let mut v = series(vec![sample("vda", 1.0, 5.0, 100.0)]);
        v["note"] = "no block device under the targets".into();
        assert!(explain_with(v).is_empty());
    }
}
