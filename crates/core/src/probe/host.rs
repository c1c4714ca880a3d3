//! The host around a run: how much of the run's window other work took from it. Sampled at the
//! start and at the end of the timed window (never on the I/O path), from /proc/stat (CPU
//! steal, and the CPU time of everything on the run's CPUs), this process's own CPU time and
//! context switches (getrusage), pressure stall information (/proc/pressure), the CPU
//! frequency (cpufreq) and dirty and write-back memory (/proc/meminfo). The difference is the
//! Result's `host` section, which `explain` reads to say whether the host was quiet.
//!
//! A run that keeps a time series is also sampled at every interval's edge, by a thread of
//! the runner beside the workers ([`HostSampler::tick`]); two ticks make that interval's
//! [`IntervalHost`] figures.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// Jiffies of one CPU from a /proc/stat line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct CpuTicks {
    /// user + nice + system + irq + softirq (guest time is inside user).
    busy: u64,
    /// Time the hypervisor ran something else while this virtual CPU wanted to run.
    steal: u64,
    /// busy + idle + iowait + steal.
    total: u64,
}

/// Pressure stall totals (microseconds) of one resource, and its avg10 figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct PsiLine {
    avg10: f64,
    total_us: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Psi {
    some: PsiLine,
    full: Option<PsiLine>,
}

/// What this process (and its reaped children: worker processes) used.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct OwnUsage {
    cpu_s: f64,
    involuntary: u64,
    voluntary: u64,
}

/// One sample of the host.
#[derive(Debug, Clone)]
struct Sample {
    at: Instant,
    cpus: BTreeMap<usize, CpuTicks>,
    own: OwnUsage,
    /// cpu, io, memory; None: that file is absent or unreadable.
    psi: [Option<Psi>; 3],
    dirty_bytes: Option<u64>,
    writeback_bytes: Option<u64>,
    freq_khz: Vec<u64>,
}

const PSI_RESOURCES: [&str; 3] = ["cpu", "io", "memory"];

/// The host sampler a run holds from its start to its end.
#[derive(Debug, Clone)]
pub struct HostSampler {
    cpus: Vec<usize>,
    start: Sample,
}

impl HostSampler {
    /// Start watching the host for a run on `cpus` (the run's CPUs; empty: the CPUs this
    /// process may run on).
    pub fn start(cpus: &[usize]) -> HostSampler {
        let cpus = if cpus.is_empty() {
            allowed_cpus()
        } else {
            cpus.to_vec()
        };
        let start = sample(&cpus);
        HostSampler { cpus, start }
    }

    /// The host over the window from [`HostSampler::start`] to now.
    pub fn finish(&self) -> HostReport {
        report(&self.cpus, &self.start, &sample(&self.cpus))
    }

    /// The host now, stamped on the CLOCK_MONOTONIC scale the workers' loops read, for the
    /// figures of one interval between two ticks ([`interval_figures`]). `own_complete`:
    /// this process's rusage holds all of the run's CPU time (worker threads); false when
    /// worker processes run unreaped, so other processes' CPU cannot be told apart.
    pub fn tick(&self, own_complete: bool) -> HostTick {
        HostTick {
            mono_ns: crate::stats::mono_ns(),
            own_complete,
            cpus: self.cpus.clone(),
            sample: sample(&self.cpus),
        }
    }
}

/// One sample of the host at an edge of an interval of the run's time series.
#[derive(Debug, Clone)]
pub struct HostTick {
    /// When, in ns on the CLOCK_MONOTONIC scale (the workers' `loop_start_ns` scale).
    pub mono_ns: u64,
    own_complete: bool,
    cpus: Vec<usize>,
    sample: Sample,
}

/// The host over one interval of the run's time series (`timeseries[].host` of the Result).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct IntervalHost {
    /// CPU steal on the run's CPUs, share of their time.
    pub steal_pct: f64,
    /// CPU time everything but this run used on the run's CPUs, share of their capacity;
    /// absent when the run's workers were processes (their time is not known until they end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_cpu_pct: Option<f64>,
    /// Share of the interval in which some task waited for a CPU, for I/O, for memory
    /// (pressure stall `some`); absent without pressure stall information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pressure_some_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_pressure_some_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_pressure_some_pct: Option<f64>,
}

/// The host between ticks `a` and `b` (a before b).
pub fn interval_figures(a: &HostTick, b: &HostTick) -> IntervalHost {
    let r = report(&a.cpus, &a.sample, &b.sample);
    IntervalHost {
        steal_pct: r.steal_pct,
        others_cpu_pct: (a.own_complete && b.own_complete).then_some(r.others_cpu_pct),
        cpu_pressure_some_pct: r.pressure.cpu.map(|s| s.some_pct),
        io_pressure_some_pct: r.pressure.io.map(|s| s.some_pct),
        memory_pressure_some_pct: r.pressure.memory.map(|s| s.some_pct),
    }
}

/// Pressure stall of one resource over the run's window.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StallReport {
    /// Share of the window in which some task waited for the resource (the total's growth).
    pub some_pct: f64,
    /// The kernel's 10-second average of `some` at the end of the window.
    pub some_avg10_pct: f64,
    pub some_total_us: u64,
    /// Share of the window in which every non-idle task waited (absent for cpu on old
    /// kernels, where the kernel does not report it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_avg10_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_total_us: Option<u64>,
}

/// Pressure stall information over the window, or why there is none.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PressureReport {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<StallReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<StallReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<StallReport>,
    /// Why a resource has no figures (no /proc/pressure: a kernel without PSI, or psi=0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// One CPU of the run over the window.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CpuUse {
    pub cpu: usize,
    /// Share of the window the CPU was busy (anything, this run included).
    pub busy_pct: f64,
    pub steal_pct: f64,
}

/// The host over a run's window: the Result's `host` section.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostReport {
    pub window_s: f64,
    /// The CPUs the run could use (`--cpus`, else this process's affinity).
    pub cpus: Vec<usize>,
    /// CPU steal on those CPUs: share of their time and seconds.
    pub steal_pct: f64,
    pub steal_s: f64,
    /// CPU time of this run (the fsbench process and its worker processes).
    pub own_cpu_s: f64,
    /// CPU time everything else used on the run's CPUs, and as a share of their capacity.
    pub others_cpu_s: f64,
    pub others_cpu_pct: f64,
    pub per_cpu: Vec<CpuUse>,
    /// Context switches of this run's threads: involuntary ones are preemptions.
    pub involuntary_switches: u64,
    pub voluntary_switches: u64,
    pub pressure: PressureReport,
    /// Lowest and highest current frequency of the run's CPUs at the samples; absent where
    /// the host exposes no cpufreq (many virtual machines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_freq_min_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_freq_max_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_start_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_end_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writeback_start_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writeback_end_bytes: Option<u64>,
}

impl HostReport {
    /// The one line of text output.
    pub fn line(&self) -> String {
        let mut parts = vec![format!("steal {:.1} %", self.steal_pct)];
        for (name, s) in [
            ("cpu", &self.pressure.cpu),
            ("io", &self.pressure.io),
            ("memory", &self.pressure.memory),
        ] {
            if let Some(s) = s {
                parts.push(format!("psi {name} some {:.1} %", s.some_pct));
            }
        }
        if self.pressure.unavailable.is_some() {
            parts.push("psi unavailable".into());
        }
        parts.push(format!(
            "others used {:.0} % of the run's CPUs ({})",
            self.others_cpu_pct,
            cpu_list(&self.cpus)
        ));
        parts.push(format!(
            "{} involuntary switches",
            self.involuntary_switches
        ));
        if let (Some(lo), Some(hi)) = (self.cpu_freq_min_mhz, self.cpu_freq_max_mhz) {
            parts.push(format!("cpu {lo:.0}-{hi:.0} MHz"));
        }
        if let (Some(a), Some(b)) = (self.dirty_start_bytes, self.dirty_end_bytes) {
            parts.push(format!(
                "dirty {} -> {}",
                crate::units::format_bytes(a as f64),
                crate::units::format_bytes(b as f64)
            ));
        }
        format!("host: {}", parts.join(", "))
    }
}

/// `0-1,3` for a list of CPUs.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// Parse a CPU list as the kernel and fio's cpus_allowed write it (`0-1,3`): sorted, no
/// duplicates. None: not such a list.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<usize>().ok()?, b.trim().parse().ok()?),
            None => {
                let c = part.parse().ok()?;
                (c, c)
            }
        };
        // A bound on what a list can name: the kernel's own maximum is 8192 CPUs.
        if a > b || b >= 8192 {
            return None;
        }
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    (!cpus.is_empty()).then_some(cpus)
}

/// The CPUs online now (/sys/devices/system/cpu/online).
pub fn online_cpus() -> Option<Vec<usize>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    parse_cpu_list(&s)
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .and_then(parse_cpu_list)
        })
        .unwrap_or_default()
}

fn sample(cpus: &[usize]) -> Sample {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let psi = PSI_RESOURCES.map(|r| {
        std::fs::read_to_string(format!("/proc/pressure/{r}"))
            .ok()
            .and_then(|s| parse_psi(&s))
    });
    Sample {
        at: Instant::now(),
        cpus: parse_stat(&stat, cpus),
        own: own_usage(),
        psi,
        dirty_bytes: meminfo_bytes(&meminfo, "Dirty"),
        writeback_bytes: meminfo_bytes(&meminfo, "Writeback"),
        freq_khz: cpus.iter().filter_map(|&c| cur_freq_khz(c)).collect(),
    }
}

/// The `cpuN` lines of /proc/stat for the CPUs in `cpus`.
fn parse_stat(stat: &str, cpus: &[usize]) -> BTreeMap<usize, CpuTicks> {
    let mut out = BTreeMap::new();
    for line in stat.lines() {
        let mut f = line.split_ascii_whitespace();
        let Some(n) = f
            .next()
            .and_then(|k| k.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if !cpus.contains(&n) {
            continue;
        }
        let v: Vec<u64> = f.take(8).map(|x| x.parse().unwrap_or(0)).collect();
        if v.len() < 8 {
            continue;
        }
        // user nice system idle iowait irq softirq steal
        let busy = v[0] + v[1] + v[2] + v[5] + v[6];
        out.insert(
            n,
            CpuTicks {
                busy,
                steal: v[7],
                total: busy + v[3] + v[4] + v[7],
            },
        );
    }
    out
}

fn parse_psi(s: &str) -> Option<Psi> {
    let line = |kind: &str| -> Option<PsiLine> {
        let l = s.lines().find(|l| l.starts_with(kind))?;
        let mut p = PsiLine::default();
        for kv in l.split_ascii_whitespace().skip(1) {
            match kv.split_once('=') {
                Some(("avg10", v)) => p.avg10 = v.parse().ok()?,
                Some(("total", v)) => p.total_us = v.parse().ok()?,
                _ => {}
            }
        }
        Some(p)
    };
    Some(Psi {
        some: line("some ")?,
        full: line("full "),
    })
}

fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        let kb: u64 = rest.split_ascii_whitespace().next()?.parse().ok()?;
        Some(kb.saturating_mul(1024))
    })
}

fn cur_freq_khz(cpu: usize) -> Option<u64> {
    std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq"
    ))
    .ok()?
    .trim()
    .parse()
    .ok()
}

fn own_usage() -> OwnUsage {
    let mut total = OwnUsage::default();
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: getrusage writes one rusage into the zeroed struct we own; an all-zero
        // rusage is a valid value of that plain C struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid, writable rusage for the call's duration.
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            continue;
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        total.cpu_s += tv(ru.ru_utime) + tv(ru.ru_stime);
        total.involuntary += ru.ru_nivcsw as u64;
        total.voluntary += ru.ru_nvcsw as u64;
    }
    total
}

/// Clock ticks per second of /proc/stat (USER_HZ).
fn ticks_per_s() -> f64 {
    // SAFETY: sysconf reads a constant of the system and touches no memory of ours.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn report(cpus: &[usize], a: &Sample, b: &Sample) -> HostReport {
    let window_s = b.at.duration_since(a.at).as_secs_f64();
    let hz = ticks_per_s();
    let (mut busy, mut steal, mut total) = (0u64, 0u64, 0u64);
    let mut per_cpu = Vec::new();
    for (c, end) in &b.cpus {
        let Some(start) = a.cpus.get(c) else { continue };
        let d_busy = end.busy.saturating_sub(start.busy);
        let d_steal = end.steal.saturating_sub(start.steal);
        let d_total = end.total.saturating_sub(start.total);
        busy += d_busy;
        steal += d_steal;
        total += d_total;
        per_cpu.push(CpuUse {
            cpu: *c,
            busy_pct: pct(d_busy as f64, d_total as f64),
            steal_pct: pct(d_steal as f64, d_total as f64),
        });
    }
    let own_cpu_s = (b.own.cpu_s - a.own.cpu_s).max(0.0);
    let others_cpu_s = (busy as f64 / hz - own_cpu_s).max(0.0);
    let capacity_s = total as f64 / hz;
    let stall = |i: usize| -> Option<StallReport> {
        let (s, e) = (a.psi[i]?, b.psi[i]?);
        let window_us = window_s * 1e6;
        let full = s.full.zip(e.full);
        Some(StallReport {
            some_pct: pct(
                e.some.total_us.saturating_sub(s.some.total_us) as f64,
                window_us,
            ),
            some_avg10_pct: e.some.avg10,
            some_total_us: e.some.total_us.saturating_sub(s.some.total_us),
            full_pct: full
                .map(|(s, e)| pct(e.total_us.saturating_sub(s.total_us) as f64, window_us)),
            full_avg10_pct: full.map(|(_, e)| e.avg10),
            full_total_us: full.map(|(s, e)| e.total_us.saturating_sub(s.total_us)),
        })
    };
    let pressure = PressureReport {
        cpu: stall(0),
        io: stall(1),
        memory: stall(2),
        unavailable: if a.psi.iter().chain(&b.psi).any(Option::is_none) {
            Some(
                if std::path::Path::new("/proc/pressure").exists() {
                    "some of /proc/pressure/{cpu,io,memory} could not be read"
                } else {
                    "no /proc/pressure: the kernel keeps no pressure stall information (CONFIG_PSI, or psi=0 on its command line)"
                }
                .to_string(),
            )
        } else {
            None
        },
    };
    let freqs = a
        .freq_khz
        .iter()
        .chain(&b.freq_khz)
        .map(|&k| k as f64 / 1000.0);
    HostReport {
        window_s,
        cpus: cpus.to_vec(),
        steal_pct: pct(steal as f64, total as f64),
        steal_s: steal as f64 / hz,
        own_cpu_s,
        others_cpu_s,
        others_cpu_pct: pct(others_cpu_s, capacity_s).min(100.0),
        per_cpu,
        involuntary_switches: b.own.involuntary.saturating_sub(a.own.involuntary),
        voluntary_switches: b.own.voluntary.saturating_sub(a.own.voluntary),
        pressure,
        cpu_freq_min_mhz: freqs.clone().reduce(f64::min),
        cpu_freq_max_mhz: freqs.reduce(f64::max),
        dirty_start_bytes: a.dirty_bytes,
        dirty_end_bytes: b.dirty_bytes,
        writeback_start_bytes: a.writeback_bytes,
        writeback_end_bytes: b.writeback_bytes,
    }
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole * 100.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_print_as_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-1,3"), Some(vec![0, 1, 3]));
        assert_eq!(parse_cpu_list("3,0-1,1"), Some(vec![0, 1, 3]));
        assert_eq!(cpu_list(&[0, 1, 3, 5, 6, 7]), "0-1,3,5-7");
        for bad in ["", "a", "2-1", "0-", "-1", "1,,2", "99999"] {
            assert_eq!(parse_cpu_list(bad), None, "{bad}");
        }
    }

    #[test]
    fn steal_and_other_processes_come_from_the_stat_difference() {
        let stat = |busy: u64, steal: u64, idle: u64| {
            format!("cpu  1 1 1 1 1 1 1 1 0 0\ncpu0 {busy} 0 0 {idle} 0 0 0 {steal} 0 0\ncpu1 5 0 0 5 0 0 0 0 0 0\n")
        };
        let at = Instant::now();
        let s = |text: String, own: f64| {
            Sample {
            at,
            cpus: parse_stat(&text, &[0]),
            own: OwnUsage {
                cpu_s: own,
                ..Default::default()
            },
            psi: [parse_psi("some avg10=1.00 avg60=0 avg300=0 total=1000\nfull avg10=0.00 avg60=0 avg300=0 total=0\n"), None, None],
            dirty_bytes: meminfo_bytes("Dirty:  4 kB\n", "Dirty"),
            writeback_bytes: None,
            freq_khz: vec![],
        }
        };
        let a = s(stat(0, 0, 0), 0.0);
        let b = s(
            stat(
                60 * ticks_per_s() as u64 / 100,
                10 * ticks_per_s() as u64 / 100,
                30 * ticks_per_s() as u64 / 100,
            ),
            0.2,
        );
        let r = report(&[0], &a, &b);
        assert!((r.steal_pct - 10.0).abs() < 1e-9, "{r:?}");
        // 0.6 s busy of which 0.2 s ours: 0.4 s of 1 s of capacity.
        assert!((r.others_cpu_s - 0.4).abs() < 1e-9, "{r:?}");
        assert!((r.others_cpu_pct - 40.0).abs() < 1e-9, "{r:?}");
        assert_eq!(r.per_cpu.len(), 1);
        assert_eq!(r.dirty_start_bytes, Some(4096));
        assert!(r.pressure.unavailable.is_some() && r.pressure.cpu.is_some());
    }

    #[test]
    fn an_interval_s_figures_come_from_its_two_ticks() {
        let hz = ticks_per_s() as u64;
        let at = Instant::now();
        // CPU 0 over 1 s: 0.5 s busy of which 0.1 s this run's, 0.05 s steal; tasks waited
        // for a CPU 0.2 s (total 200000 us) of a 1 s window.
        let tick = |busy: u64, steal: u64, idle: u64, own: f64, psi_us: u64, later_s: u64| {
            let stat = format!("cpu0 {busy} 0 0 {idle} 0 0 0 {steal} 0 0\n");
            HostTick {
                mono_ns: later_s * 1_000_000_000,
                own_complete: true,
                cpus: vec![0],
                sample: Sample {
                    at: at + std::time::Duration::from_secs(later_s),
                    cpus: parse_stat(&stat, &[0]),
                    own: OwnUsage {
                        cpu_s: own,
                        ..Default::default()
                    },
                    psi: [
                        parse_psi(&format!("some avg10=0 avg60=0 avg300=0 total={psi_us}\n")),
                        None,
                        None,
                    ],
                    dirty_bytes: None,
                    writeback_bytes: None,
                    freq_khz: vec![],
                },
            }
        };
        let a = tick(0, 0, 0, 1.0, 0, 0);
        let b = tick(hz / 2, hz / 20, hz * 45 / 100, 1.1, 200_000, 1);
        let f = interval_figures(&a, &b);
        assert!((f.steal_pct - 5.0).abs() < 1e-9, "{f:?}");
        assert!((f.others_cpu_pct.unwrap() - 40.0).abs() < 1e-6, "{f:?}");
        assert!(
            (f.cpu_pressure_some_pct.unwrap() - 20.0).abs() < 1e-6,
            "{f:?}"
        );
        assert_eq!(f.io_pressure_some_pct, None);
        // Worker processes' time is not in this process's rusage until they end: no
        // figure for other processes rather than a wrong one.
        let mut c = b.clone();
        c.own_complete = false;
        assert_eq!(interval_figures(&a, &c).others_cpu_pct, None);
    }
}
