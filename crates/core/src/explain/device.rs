//! The `device_idle` check: the devices under the targets were busy only a small share of
//! the timed run (from the `--iostat` samples the Result stores) while the run's throughput
//! stayed flat, yet they served its I/O: the storage had room to spare, so the pace was set
//! on the host's side (fsbench's CPU, the queue depth, a rate limit, think time), not by the
//! storage.
//!
//! Flat is judged on the per-interval throughput the Result holds: the `--status-interval`
//! time series when it has at least [`MIN_INTERVALS`] full intervals, else the devices'
//! throughput per `--iostat` sample inside the run. Throughput whose coefficient of variation
//! (population standard deviation / mean) over those intervals exceeds [`FLAT_CV`] is not
//! flat (bursts, stalls, a cache filling): a low mean %util then says nothing about where the
//! limit was, and the check stays silent. With too few intervals to judge, the finding says
//! so (evidence `throughput_flat: null`) instead of claiming flatness.

use super::{finding, Explanation, RunFacts};
use crate::probe::diskstats::{self, DeviceSample, IostatSeries};
use serde_json::json;

/// Below this mean %util over the timed run a device counts as idle.
pub(crate) const IDLE_UTIL_PCT: f64 = 30.0;

/// At or below this coefficient of variation of the per-interval throughput, throughput was
/// flat.
pub(crate) const FLAT_CV: f64 = 0.25;

/// Fewest full intervals flatness is judged on.
pub(crate) const MIN_INTERVALS: usize = 3;

/// The run's throughput per interval (bytes per second) and where it came from.
struct Throughput {
    source: &'static str,
    /// The device whose samples these are (iostat only).
    device: Option<String>,
    rates: Vec<f64>,
}

impl Throughput {
    fn mean(&self) -> f64 {
        self.rates.iter().sum::<f64>() / self.rates.len().max(1) as f64
    }

    /// Population standard deviation over the mean (infinite when nothing moved).
    fn cv(&self) -> f64 {
        let mean = self.mean();
        if mean <= 0.0 {
            return f64::INFINITY;
        }
        let var = self.rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>()
            / self.rates.len().max(1) as f64;
        var.sqrt() / mean
    }
}

/// Intervals at least half as long as the typical one (the last interval of a time series
/// may be a sliver whose rate is noise).
fn full_length(lengths: &[f64]) -> f64 {
    let mut sorted = lengths.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0) / 2.0
}

/// The `--status-interval` time series' bytes per second per full interval.
fn from_timeseries(r: &RunFacts) -> Throughput {
    let lengths: Vec<f64> = r.timeseries.iter().map(|i| i.interval_s).collect();
    let min = full_length(&lengths);
    Throughput {
        source: "status_interval",
        device: None,
        rates: r
            .timeseries
            .iter()
            .filter(|i| i.interval_s > 0.0 && i.interval_s >= min)
            .map(|i| i.bytes_per_sec)
            .collect(),
    }
}

/// One device's bytes per second per `--iostat` sample that lies wholly inside the timed run: the
/// device that carried the run's I/O. Devices under a target are a stack (loop -> the disk
/// of its backing file, partition -> disk, dm -> slaves) whose lower members also carry other
/// programs' I/O, so the samples are not added up: the device whose mean throughput is
/// nearest the run's own (`run_bytes_per_sec`, by ratio) is judged, or, when the run moved
/// no bytes it knows of, the first one (the top of the stack).
fn from_iostat(s: &IostatSeries, elapsed_s: f64, run_bytes_per_sec: f64) -> Throughput {
    let run_end = s.run_start_s + elapsed_s;
    let per_device: Vec<(&String, Vec<f64>)> = s
        .devices
        .iter()
        .map(|d| {
            let rates = s
                .samples
                .iter()
                // Only samples wholly inside the run (to a tenth of an interval): one that
                // straddles its start holds the layout's write-back, one past its end idle
                // time, and either would look like a swing.
                .filter(|x| {
                    let slack = x.interval_s / 10.0;
                    &x.device == d
                        && x.t_s - x.interval_s >= s.run_start_s - slack
                        && x.t_s <= run_end + slack
                        && x.interval_s >= s.interval_s / 2.0
                })
                .map(|x| (x.read_kb_per_sec + x.write_kb_per_sec) * 1024.0)
                .collect();
            (d, rates)
        })
        .collect();
    let distance = |rates: &[f64]| {
        let mean = rates.iter().sum::<f64>() / rates.len().max(1) as f64;
        if mean > 0.0 && run_bytes_per_sec > 0.0 {
            (mean / run_bytes_per_sec).ln().abs()
        } else {
            f64::INFINITY
        }
    };
    let chosen = per_device
        .iter()
        .filter(|(_, r)| !r.is_empty())
        .min_by(|a, b| distance(&a.1).total_cmp(&distance(&b.1)))
        .filter(|(_, r)| distance(r).is_finite())
        .or_else(|| per_device.iter().find(|(_, r)| !r.is_empty()));
    match chosen {
        Some((d, rates)) => Throughput {
            source: "iostat",
            device: Some((*d).clone()),
            rates: rates.clone(),
        },
        None => Throughput {
            source: "iostat",
            device: None,
            rates: Vec::new(),
        },
    }
}

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

/// What the busiest reader among the devices under the targets read per second over the
/// timed run (`--iostat` samples), when the Result has device samples: the evidence whether
/// a run's reads came from the storage or from the page cache above it.
pub(crate) fn device_read_bytes_per_sec(r: &RunFacts) -> Option<f64> {
    let v = r.probes.get("iostat")?;
    if v.get("note").is_some() {
        return None;
    }
    let series = serde_json::from_value::<IostatSeries>(v.clone()).ok()?;
    let avg = run_averages(&series);
    (!avg.is_empty()).then(|| {
        avg.iter()
            .map(|a| a.read_kb_per_sec * 1024.0)
            .fold(0.0, f64::max)
    })
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
    // Flat throughput: the run's own time series first, else the devices' samples.
    let mut tp = from_timeseries(r);
    if tp.rates.len() < MIN_INTERVALS {
        tp = from_iostat(&series, r.total.elapsed_s, r.total.bytes_per_sec);
    }
    let judged = tp.rates.len() >= MIN_INTERVALS;
    let cv = tp.cv();
    // Throughput that swung: the low mean %util may be idle stretches between bursts.
    // (Written negated on purpose: a NaN spread, from no usable interval, counts as swung.)
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if judged && !(cv <= FLAT_CV) {
        return;
    }
    let flat = if judged {
        let lo = tp.rates.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = tp.rates.iter().cloned().fold(0.0, f64::max);
        format!(
            ", and the throughput was flat ({} intervals of {}: mean {}/s, from {}/s to {}/s, coefficient of variation {:.1}%, at most {:.0}%)",
            tp.rates.len(),
            match &tp.device {
                Some(d) => format!("{d}'s samples"),
                None => "the --status-interval time series".to_string(),
            },
            crate::units::format_bytes(tp.mean()),
            crate::units::format_bytes(lo),
            crate::units::format_bytes(hi),
            cv * 100.0,
            FLAT_CV * 100.0
        )
    } else {
        format!(
            " (whether the throughput was flat is not judged: {} interval(s) of per-interval throughput, {} needed; --status-interval or a longer run gives them)",
            tp.rates.len(),
            MIN_INTERVALS
        )
    };
    let cpu_per_s = r.total.cpu_s / r.total.elapsed_s;
    out.push(finding(
        "device_idle",
        format!(
            "the devices under the targets were busy only {busiest:.1}% of the run ({}) while serving {}/s{flat}: the storage had capacity to spare, so the limit was on the host's side (fsbench's CPU at {cpu_per_s:.2} s per second, the queue depth, a rate limit or think time), not the storage; raise --qd or --threads",
            per_device.join(", "),
            crate::units::format_bytes(kb_per_s * 1024.0)
        ),
        json!({
            "util_pct": avg.iter().map(|a| (a.device.clone(), a.util_pct)).collect::<std::collections::BTreeMap<_, _>>(),
            "device_kb_per_sec": kb_per_s,
            "idle_below_util_pct": IDLE_UTIL_PCT,
            "cpu_s_per_s": cpu_per_s,
            "samples": series.samples.len(),
            "throughput_flat": if judged { json!(true) } else { serde_json::Value::Null },
            "throughput_series": if judged { tp.source } else { "none" },
            "throughput_intervals": tp.rates.len(),
            "throughput_device": tp.device,
            "throughput_bytes_per_sec": tp.rates,
            "throughput_cv": if judged { json!(cv) } else { serde_json::Value::Null },
            "flat_below_cv": FLAT_CV,
        }),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::IntervalReport;
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

    fn explain_full(series: serde_json::Value, timeseries: &[IntervalReport]) -> Vec<Explanation> {
        let total = StatsReport {
            ops: 1000,
            read_ops: 1000,
            elapsed_s: 2.0,
            cpu_s: 0.2,
            ..Default::default()
        };
        judge(&total, series, timeseries)
    }

    /// `device_idle` on a run with this total, these device samples and this series.
    fn judge(
        total: &StatsReport,
        series: serde_json::Value,
        timeseries: &[IntervalReport],
    ) -> Vec<Explanation> {
        let mut probes = serde_json::Map::new();
        probes.insert("iostat".into(), series);
        let mut out = Vec::new();
        device_idle(
            &RunFacts {
                total,
                job: None,
                cache: None,
                probes: &probes,
                threads: 1,
                data_set: None,
                mem_total_bytes: None,
                dirty_expire_s: None,
                timeseries,
                cpus: Default::default(),
                host: None,
                stability: None,
            },
            &mut out,
        );
        out
    }

    fn explain_with(series: serde_json::Value) -> Vec<Explanation> {
        explain_full(series, &[])
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

    /// Four in-run samples at 10 %util serving `kb` KiB/s each.
    fn idle_samples(kb: [f64; 4]) -> serde_json::Value {
        series(
            kb.iter()
                .enumerate()
                .map(|(i, &k)| sample("vda", 1.0 + 0.5 * i as f64, 10.0, k))
                .collect(),
        )
    }

    fn interval(t_s: f64, interval_s: f64, bytes_per_sec: f64) -> IntervalReport {
        IntervalReport {
            t_s,
            interval_s,
            bytes_per_sec,
            ..Default::default()
        }
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
        // Two in-run samples are too few to call the throughput flat: said, not pretended.
        assert!(
            idle[0]
                .message
                .contains("whether the throughput was flat is not judged: 2 interval(s)"),
            "{}",
            idle[0].message
        );
        assert!(idle[0].evidence["throughput_flat"].is_null());
        assert_eq!(idle[0].evidence["throughput_series"], "none");
        let busy = explain_with(series(vec![
            sample("vda", 1.0, 85.0, 80000.0),
            sample("vda", 1.5, 95.0, 90000.0),
        ]));
        assert!(busy.is_empty(), "{busy:?}");
    }

    #[test]
    fn low_util_with_flat_device_throughput_is_named_with_the_figures() {
        let e = explain_with(idle_samples([1000.0, 1050.0, 950.0, 1000.0]));
        assert_eq!(e.len(), 1, "{e:?}");
        let m = &e[0].message;
        assert!(
            m.contains("the throughput was flat (4 intervals of vda's samples"),
            "{m}"
        );
        // Population stdev 35.36 over mean 1000: 3.5 %.
        assert!(
            m.contains("coefficient of variation 3.5%, at most 25%"),
            "{m}"
        );
        assert_eq!(e[0].evidence["throughput_flat"], true);
        assert_eq!(e[0].evidence["throughput_series"], "iostat");
        assert_eq!(e[0].evidence["throughput_intervals"], 4);
        let cv = e[0].evidence["throughput_cv"].as_f64().unwrap();
        assert!((cv - 0.035355).abs() < 1e-4, "{cv}");
        assert_eq!(
            e[0].evidence["throughput_bytes_per_sec"][1],
            1050.0 * 1024.0
        );
    }

    #[test]
    fn low_util_with_throughput_that_swings_is_silent() {
        // Bursts and idle gaps: the mean %util is low, but the storage may have been the
        // limit during the bursts.
        let e = explain_with(idle_samples([100.0, 3000.0, 100.0, 3000.0]));
        assert!(e.is_empty(), "{e:?}");
    }

    #[test]
    fn the_status_interval_series_is_judged_before_the_device_samples() {
        // The run's own series is flat (its short last interval left out) while the device
        // samples swing (write-back bursts): the run's series decides.
        let flat = [
            interval(0.2, 0.2, 4e6),
            interval(0.4, 0.2, 4.1e6),
            interval(0.6, 0.2, 3.9e6),
            interval(0.61, 0.01, 1e3),
        ];
        let e = explain_full(idle_samples([100.0, 3000.0, 100.0, 3000.0]), &flat);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].evidence["throughput_series"], "status_interval");
        assert_eq!(e[0].evidence["throughput_intervals"], 3);
        assert!(
            e[0].message
                .contains("3 intervals of the --status-interval time series"),
            "{}",
            e[0].message
        );
        // And a swinging series silences it even when the device samples are flat.
        let swinging = [
            interval(0.2, 0.2, 8e6),
            interval(0.4, 0.2, 1e5),
            interval(0.6, 0.2, 8e6),
        ];
        let e = explain_full(idle_samples([1000.0, 1000.0, 1000.0, 1000.0]), &swinging);
        assert!(e.is_empty(), "{e:?}");
    }

    #[test]
    fn the_device_that_carried_the_run_is_judged_not_the_disk_under_it() {
        // loop0 carries the run's 1000 KiB/s, flat; vda under it also serves other
        // programs in bursts. The run's own rate picks loop0.
        let mut samples = Vec::new();
        for i in 0..4 {
            let t = 1.0 + 0.5 * i as f64;
            samples.push(sample("loop0", t, 5.0, 1000.0));
            samples.push(sample("vda", t, 8.0, [1000.0, 60000.0, 1000.0, 9000.0][i]));
        }
        let v = serde_json::to_value(IostatSeries {
            devices: vec!["loop0".into(), "vda".into()],
            interval_s: 0.5,
            run_start_s: 0.5,
            samples,
        })
        .unwrap();
        let total = StatsReport {
            ops: 1000,
            read_ops: 1000,
            bytes: 2_048_000,
            elapsed_s: 2.0,
            bytes_per_sec: 1_024_000.0,
            cpu_s: 0.2,
            ..Default::default()
        };
        let out = judge(&total, v, &[]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].evidence["throughput_device"], "loop0");
        assert_eq!(out[0].evidence["throughput_cv"], 0.0);
    }

    #[test]
    fn samples_after_the_run_do_not_count_as_throughput() {
        // The run is 2 s from 0.5 s: a sample ending at 4 s (cleanup, idle) is outside it.
        let mut v = idle_samples([1000.0, 1000.0, 1000.0, 1000.0]);
        v["samples"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::to_value(sample("vda", 4.0, 0.0, 0.0)).unwrap());
        let e = explain_with(v);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].evidence["throughput_intervals"], 4);
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
