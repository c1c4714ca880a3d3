//! Was the host quiet? The Result's `host` section (`crate::probe::host`) over the run's
//! window, turned into findings with their figures: CPU steal (a busy hypervisor), other
//! processes on the run's CPUs, tasks waiting for a CPU or for memory, a CPU frequency that
//! moved, write-back left by earlier work. A run with none of these says it was quiet.

use super::{finding, Explanation, RunFacts};
use crate::probe::host::{cpu_list, HostReport};
use serde_json::json;

/// CPU steal above this share of the run's CPU time: the hypervisor was busy.
pub(crate) const STEAL_LIMIT_PCT: f64 = 2.0;
/// Other processes above this share of the run's CPUs.
pub(crate) const OTHERS_LIMIT_PCT: f64 = 10.0;
/// Tasks waiting for a CPU (pressure `cpu some`) above this share of the window.
pub(crate) const CPU_PRESSURE_LIMIT_PCT: f64 = 10.0;
/// Tasks stalled on memory (pressure `memory some`) above this share of the window.
pub(crate) const MEMORY_PRESSURE_LIMIT_PCT: f64 = 5.0;
/// Highest / lowest CPU frequency seen above this: the clock moved during the run.
const FREQ_RATIO_LIMIT: f64 = 1.2;
/// Dirty data waiting for write-back at the start above this: earlier work was still
/// being written while the run was measured.
const DIRTY_AT_START_LIMIT: u64 = 256 << 20;

/// What to do about a busy host, said once per finding.
/// What to do about a busy host, naming only options the command takes: a Job's `--cpus`;
/// a workload or a replay has no pinning of its own.
fn remedy_for(r: &RunFacts) -> &'static str {
    if r.job.is_some() {
        "repeat it (--repeat 5 gives the median and its interval; fsbench ab alternates two settings), pin the workers with --cpus to CPUs nothing else uses, or give the run a longer --ramp"
    } else {
        "repeat it (workload and replay take --repeat), start it pinned to CPUs nothing else uses (taskset), or give the run a longer --ramp"
    }
}

/// The host findings of a run, or `host_quiet` when it had none.
pub(crate) fn host(r: &RunFacts, out: &mut Vec<Explanation>) {
    let Some(h) = r.host else { return };
    if h.window_s <= 0.0 {
        return;
    }
    let before = out.len();
    let remedy = remedy_for(r);
    steal(h, remedy, out);
    others(h, remedy, out);
    pressure(h, remedy, out);
    frequency(h, out);
    dirty(h, out);
    if out.len() == before {
        out.push(finding(
            "host_quiet",
            format!(
                "the host was quiet over the run's {:.1} s: CPU steal {:.1} %, {}, other processes used {:.0} % of the run's CPUs ({})",
                h.window_s,
                h.steal_pct,
                match &h.pressure.cpu {
                    Some(c) => format!("tasks waited for a CPU {:.1} % of the time", c.some_pct),
                    None => "no pressure stall information".into(),
                },
                h.others_cpu_pct,
                cpu_list(&h.cpus)
            ),
            json!({"steal_pct": h.steal_pct,
                   "cpu_pressure_some_pct": h.pressure.cpu.as_ref().map(|c| c.some_pct),
                   "others_cpu_pct": h.others_cpu_pct, "cpus": h.cpus}),
        ));
    }
}

fn steal(h: &HostReport, remedy: &str, out: &mut Vec<Explanation>) {
    if h.steal_pct < STEAL_LIMIT_PCT {
        return;
    }
    out.push(finding(
        "host_steal",
        format!(
            "CPU steal {:.1} % of the run ({:.2} s on CPUs {}): the host was busy, the hypervisor ran other guests on this machine's CPUs; {remedy}",
            h.steal_pct,
            h.steal_s,
            cpu_list(&h.cpus)
        ),
        json!({"steal_pct": h.steal_pct, "steal_s": h.steal_s, "cpus": h.cpus,
               "limit_pct": STEAL_LIMIT_PCT}),
    ));
}

fn others(h: &HostReport, remedy: &str, out: &mut Vec<Explanation>) {
    if h.others_cpu_pct < OTHERS_LIMIT_PCT {
        return;
    }
    let busiest = h
        .per_cpu
        .iter()
        .max_by(|a, b| a.busy_pct.total_cmp(&b.busy_pct));
    let message = if let [only] = h.cpus.as_slice() {
        format!(
            "another process used {:.0} % of CPU {only} ({:.2} s of the run's {:.1} s) while this run's workers ran on it; {remedy}",
            h.others_cpu_pct, h.others_cpu_s, h.window_s
        )
    } else {
        format!(
            "other processes used {:.0} % of the run's CPUs {} ({:.2} CPU-seconds in {:.1} s{}); {remedy}",
            h.others_cpu_pct,
            cpu_list(&h.cpus),
            h.others_cpu_s,
            h.window_s,
            busiest
                .map(|b| format!(", CPU {} was {:.0} % busy", b.cpu, b.busy_pct))
                .unwrap_or_default()
        )
    };
    out.push(finding(
        "host_other_cpu",
        message,
        json!({"others_cpu_pct": h.others_cpu_pct, "others_cpu_s": h.others_cpu_s,
               "own_cpu_s": h.own_cpu_s, "cpus": h.cpus, "per_cpu": h.per_cpu,
               "involuntary_switches": h.involuntary_switches,
               "limit_pct": OTHERS_LIMIT_PCT}),
    ));
}

fn pressure(h: &HostReport, remedy: &str, out: &mut Vec<Explanation>) {
    if let Some(c) = h
        .pressure
        .cpu
        .as_ref()
        .filter(|c| c.some_pct >= CPU_PRESSURE_LIMIT_PCT)
    {
        out.push(finding(
            "host_cpu_pressure",
            format!(
                "tasks on this host waited for a CPU {:.1} % of the run (pressure stall cpu some; {} involuntary switches of this run's threads): more work was runnable than there were CPUs; {remedy}",
                c.some_pct, h.involuntary_switches
            ),
            json!({"cpu_some_pct": c.some_pct, "cpu_some_avg10_pct": c.some_avg10_pct,
                   "cpu_some_total_us": c.some_total_us,
                   "involuntary_switches": h.involuntary_switches,
                   "limit_pct": CPU_PRESSURE_LIMIT_PCT}),
        ));
    }
    if let Some(m) = h
        .pressure
        .memory
        .as_ref()
        .filter(|m| m.some_pct >= MEMORY_PRESSURE_LIMIT_PCT)
    {
        out.push(finding(
            "host_memory_pressure",
            format!(
                "tasks on this host stalled on memory (reclaim, swap) {:.1} % of the run (pressure stall memory some): the page cache the run used was being taken back; free memory or run when nothing else needs it",
                m.some_pct
            ),
            json!({"memory_some_pct": m.some_pct, "memory_full_pct": m.full_pct,
                   "limit_pct": MEMORY_PRESSURE_LIMIT_PCT}),
        ));
    }
}

fn frequency(h: &HostReport, out: &mut Vec<Explanation>) {
    let (Some(lo), Some(hi)) = (h.cpu_freq_min_mhz, h.cpu_freq_max_mhz) else {
        return;
    };
    if lo <= 0.0 || hi / lo < FREQ_RATIO_LIMIT {
        return;
    }
    out.push(finding(
        "host_cpu_frequency",
        format!(
            "the run's CPUs ran between {lo:.0} and {hi:.0} MHz: the clock moved during the run (power saving or thermal limits), so CPU-bound parts of the I/O path ran at different speeds; set the performance governor, or give the run a longer --ramp"
        ),
        json!({"cpu_freq_min_mhz": lo, "cpu_freq_max_mhz": hi}),
    ));
}

fn dirty(h: &HostReport, out: &mut Vec<Explanation>) {
    let Some(start) = h.dirty_start_bytes else {
        return;
    };
    if start < DIRTY_AT_START_LIMIT {
        return;
    }
    out.push(finding(
        "host_dirty_at_start",
        format!(
            "{} of dirty data was waiting for write-back when the run started ({} at its end): earlier writes were going to the disks while this run was measured; run `sync` before the run",
            super::mib(start),
            super::mib(h.dirty_end_bytes.unwrap_or(0))
        ),
        json!({"dirty_start_bytes": start, "dirty_end_bytes": h.dirty_end_bytes,
               "writeback_start_bytes": h.writeback_start_bytes,
               "writeback_end_bytes": h.writeback_end_bytes,
               "limit_bytes": DIRTY_AT_START_LIMIT}),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::host::{CpuUse, PressureReport, StallReport};

    fn quiet() -> HostReport {
        HostReport {
            window_s: 2.0,
            cpus: vec![1],
            steal_pct: 0.1,
            own_cpu_s: 0.5,
            others_cpu_s: 0.02,
            others_cpu_pct: 1.0,
            per_cpu: vec![CpuUse {
                cpu: 1,
                busy_pct: 26.0,
                steal_pct: 0.1,
            }],
            pressure: PressureReport {
                cpu: Some(StallReport {
                    some_pct: 1.3,
                    ..Default::default()
                }),
                ..Default::default()
            },
            dirty_start_bytes: Some(4096),
            ..Default::default()
        }
    }

    fn checks(h: &HostReport) -> Vec<Explanation> {
        let mut out = Vec::new();
        let total = crate::stats::StatsReport::default();
        let probes = serde_json::Map::new();
        // A Job's run: its remedies name --cpus.
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
            timeseries: &[],
            cpus: Default::default(),
            host: Some(h),
            stability: None,
        };
        host(&facts, &mut out);
        out
    }

    #[test]
    fn a_quiet_host_says_so_with_its_figures() {
        let f = checks(&quiet());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].check, "host_quiet");
        assert!(f[0].message.contains("CPU steal 0.1 %"), "{}", f[0].message);
        assert!(f[0].message.contains("1.3 %"), "{}", f[0].message);
    }

    #[test]
    fn steal_another_process_and_pressure_are_named_with_their_figures() {
        let mut h = quiet();
        h.steal_pct = 9.0;
        h.others_cpu_pct = 41.0;
        h.others_cpu_s = 0.82;
        h.pressure.cpu.as_mut().unwrap().some_pct = 30.0;
        let f = checks(&h);
        let names: Vec<&str> = f.iter().map(|e| e.check.as_str()).collect();
        assert_eq!(
            names,
            ["host_steal", "host_other_cpu", "host_cpu_pressure"],
            "{f:?}"
        );
        assert!(f[0].message.starts_with("CPU steal 9.0 % of the run"));
        assert!(f[0].message.contains("the host was busy"));
        assert!(f[1]
            .message
            .starts_with("another process used 41 % of CPU 1"));
        assert!(f.iter().all(|e| e.message.contains("--cpus")));
    }

    #[test]
    fn a_moving_clock_and_old_dirty_data_are_named() {
        let mut h = quiet();
        h.cpu_freq_min_mhz = Some(1200.0);
        h.cpu_freq_max_mhz = Some(3400.0);
        h.dirty_start_bytes = Some(1 << 30);
        let names: Vec<String> = checks(&h).into_iter().map(|e| e.check).collect();
        assert_eq!(names, ["host_cpu_frequency", "host_dirty_at_start"]);
    }
}
