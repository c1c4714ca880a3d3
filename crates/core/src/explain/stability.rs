//! Was the run itself steady? The Result's `stability` figures (the spread and the trend of
//! the per-interval IOPS and bandwidth, `crate::runner::stability`) turned into one finding
//! with its figures, and the intervals in which the host was busy when the series has the
//! host's figures per interval. A steady run says nothing.

use super::{finding, Explanation, RunFacts};
use crate::result::StabilityReport;
use serde_json::json;

/// Coefficient of variation of the per-interval IOPS or bandwidth at or above this: the
/// intervals disagree.
pub(crate) const CV_LIMIT_PCT: f64 = 10.0;
/// The fitted line's change over the run at or above this (either way): the run drifted.
pub(crate) const CHANGE_LIMIT_PCT: f64 = 10.0;

/// The `unstable` finding, or none when the run was steady.
pub(crate) fn stability(r: &RunFacts, out: &mut Vec<Explanation>) {
    let Some(s) = r.stability else { return };
    // Intervals of a run shorter than a second measure scheduling more than the storage;
    // `too_short` says what to do about such a run.
    if s.interval_s * s.intervals as f64 + 1e-9 < super::MIN_RUN_S {
        return;
    }
    let varied = s.iops_cv_pct.max(s.bytes_per_sec_cv_pct) >= CV_LIMIT_PCT;
    let drifted = s
        .iops_change_over_run_pct
        .abs()
        .max(s.bytes_per_sec_change_over_run_pct.abs())
        >= CHANGE_LIMIT_PCT;
    if !varied && !drifted {
        return;
    }
    let mut message = figures(s, varied, drifted);
    let busy = busy_intervals(r);
    if let Some((n, of)) = busy.filter(|b| b.0 > 0) {
        message.push_str(&format!(
            "; in {n} of the {of} intervals of the series the host was busy (CPU steal, other processes on the run's CPUs, or tasks waiting for a CPU above the host limits)"
        ));
    }
    message.push_str("; ");
    message.push_str(remedy(r, drifted));
    out.push(finding(
        "unstable",
        message,
        json!({"interval_s": s.interval_s, "intervals": s.intervals, "series": s.series,
               "iops_cv_pct": s.iops_cv_pct,
               "iops_change_over_run_pct": s.iops_change_over_run_pct,
               "bytes_per_sec_cv_pct": s.bytes_per_sec_cv_pct,
               "bytes_per_sec_change_over_run_pct": s.bytes_per_sec_change_over_run_pct,
               "host_busy_intervals": busy.map(|b| b.0),
               "cv_limit_pct": CV_LIMIT_PCT, "change_limit_pct": CHANGE_LIMIT_PCT}),
    ));
}

/// "IOPS varied 18 % between 1 s intervals and fell 12 % over the run", bandwidth added in
/// brackets where its figures differ from the IOPS ones (mixed block sizes).
fn figures(s: &StabilityReport, varied: bool, drifted: bool) -> String {
    let says = |cv: f64, change: f64| {
        let mut parts = Vec::new();
        if varied {
            parts.push(format!(
                "varied {cv:.0} % between {} intervals",
                seconds(s.interval_s)
            ));
        }
        if drifted {
            let way = if change < 0.0 { "fell" } else { "rose" };
            parts.push(format!("{way} {:.0} % over the run", change.abs()));
        }
        parts.join(" and ")
    };
    let iops = says(s.iops_cv_pct, s.iops_change_over_run_pct);
    let bw = says(s.bytes_per_sec_cv_pct, s.bytes_per_sec_change_over_run_pct);
    if iops == bw || s.bytes_per_sec_mean <= 0.0 {
        format!("IOPS {iops}")
    } else {
        format!("IOPS {iops} (bandwidth {bw})")
    }
}

/// `1 s`, `0.4 s`.
fn seconds(s: f64) -> String {
    let t = format!("{s:.2}");
    format!("{} s", t.trim_end_matches('0').trim_end_matches('.'))
}

/// Intervals of the stored series whose host figures pass a host limit, and how many had
/// figures; None without per-interval host figures.
fn busy_intervals(r: &RunFacts) -> Option<(usize, usize)> {
    let hosts: Vec<_> = r
        .timeseries
        .iter()
        .filter_map(|i| i.host.as_ref())
        .collect();
    if hosts.is_empty() {
        return None;
    }
    let busy = hosts
        .iter()
        .filter(|h| {
            h.steal_pct >= super::host::STEAL_LIMIT_PCT
                || h.others_cpu_pct
                    .is_some_and(|o| o >= super::host::OTHERS_LIMIT_PCT)
                || h.cpu_pressure_some_pct
                    .is_some_and(|p| p >= super::host::CPU_PRESSURE_LIMIT_PCT)
        })
        .count();
    Some((busy, hosts.len()))
}

/// What to do, naming only options the command takes (a Job's `--cpus`).
fn remedy(r: &RunFacts, drifted: bool) -> &'static str {
    match (r.job.is_some(), drifted) {
        (true, true) => "give the run a longer --ramp (caches, write-back and the device's own buffers settle first) or a longer --time to see where it settles, pin the workers with --cpus to CPUs nothing else uses, and repeat it with --repeat",
        (true, false) => "repeat it (--repeat 5 gives the median and its interval; fsbench ab alternates two settings), pin the workers with --cpus to CPUs nothing else uses, or give the run a longer --ramp",
        (false, true) => "give the run a longer --ramp (caches, write-back and the device's own buffers settle first) or a longer --time to see where it settles, and repeat it (workload and replay take --repeat)",
        (false, false) => "repeat it (workload and replay take --repeat), start it pinned to CPUs nothing else uses (taskset), or give the run a longer --ramp",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::host::IntervalHost;
    use crate::result::IntervalReport;

    fn explain(s: Option<&StabilityReport>, series: &[IntervalReport]) -> Vec<Explanation> {
        let total = crate::stats::StatsReport::default();
        let probes = serde_json::Map::new();
        let job = crate::job::Job::default();
        let facts = RunFacts {
            total: &total,
            job: Some(&job),
            cache: None,
            probes: &probes,
            threads: 1,
            data_set: None,
            mem_total_bytes: None,
            dirty_expire_s: None,
            timeseries: series,
            cpus: Default::default(),
            host: None,
            stability: s,
        };
        let mut out = Vec::new();
        stability(&facts, &mut out);
        out
    }

    /// A series of 1 s intervals at these IOPS (4 KiB each), with the host figures.
    fn series(iops: &[f64], others_pct: f64) -> Vec<IntervalReport> {
        iops.iter()
            .enumerate()
            .map(|(i, &v)| IntervalReport {
                t_s: i as f64 + 1.0,
                interval_s: 1.0,
                iops: v,
                bytes_per_sec: v * 4096.0,
                host: Some(IntervalHost {
                    others_cpu_pct: Some(others_pct),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect()
    }

    fn judged(s: &[IntervalReport]) -> StabilityReport {
        crate::runner::stability::judge(s, 1.0, "status_interval").unwrap()
    }

    #[test]
    fn a_run_throttled_in_its_second_half_shows_the_fall() {
        // 1000 IOPS for 5 s, then 500 (a throttle from the middle on): mean 750, Sxx 82.5,
        // Sxy -250 * 25: the line falls 6250 / 82.5 * 9 s / 750 = 90.9 % over the run.
        let s = series(
            &[
                1000.0, 1000.0, 1000.0, 1000.0, 1000.0, 500.0, 500.0, 500.0, 500.0, 500.0,
            ],
            0.0,
        );
        let st = judged(&s);
        let fall = 250.0 * 25.0 / 82.5 * 9.0 / 750.0 * 100.0;
        assert!((st.iops_change_over_run_pct + fall).abs() < 1e-9, "{st:?}");
        let f = explain(Some(&st), &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].check, "unstable");
        let m = &f[0].message;
        assert!(
            m.starts_with(&format!(
                "IOPS varied {:.0} % between 1 s intervals and fell 91 % over the run",
                st.iops_cv_pct
            )),
            "{m}"
        );
        assert!(m.contains("--ramp") && m.contains("--cpus"), "{m}");
        assert!(!m.contains("in 0 of"), "{m}");
        assert_eq!(f[0].evidence["intervals"], 10);
    }

    #[test]
    fn a_steady_run_says_nothing_and_a_noisy_flat_one_names_the_busy_intervals() {
        let steady = series(&[1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0], 0.0);
        assert!(explain(Some(&judged(&steady)), &steady).is_empty());
        assert!(explain(None, &steady).is_empty());
        // Under a second in all: `too_short`'s, not this check's.
        let mut short = judged(&series(&[100.0, 900.0, 100.0, 900.0, 100.0], 0.0));
        short.interval_s = 0.15;
        assert!(short.iops_cv_pct > 10.0);
        assert!(explain(Some(&short), &[]).is_empty());
        // 1400 / 600 placed so that the line is flat (the highs at -3.5, -0.5, 0.5, 3.5 s
        // from the middle): no trend, CV sqrt(8 * 400² / 7) / 1000 = 42.8 %; another
        // process on the run's CPU in every interval.
        let noisy = series(
            &[1400.0, 600.0, 600.0, 1400.0, 1400.0, 600.0, 600.0, 1400.0],
            35.0,
        );
        let st = judged(&noisy);
        let f = explain(Some(&st), &noisy);
        assert_eq!(f.len(), 1);
        let m = &f[0].message;
        assert!(
            m.starts_with("IOPS varied 43 % between 1 s intervals; in 8 of the 8 intervals"),
            "{m}"
        );
        assert!(!m.contains("over the run"), "{m}");
        assert!(st.iops_change_over_run_pct.abs() < 1e-9, "{st:?}");
        assert_eq!(f[0].evidence["host_busy_intervals"], 8);
    }
}
