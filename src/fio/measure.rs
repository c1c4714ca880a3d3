//! fio's options on how a job is paced, watched and recorded, mapped onto fsbench's own
//! settings: think time (`thinktime`, `thinktime_blocks`, `thinktime_spin` -> `--think`),
//! steady state (`steadystate`, `steadystate_duration`, `steadystate_ramp_time` ->
//! `--steady-state`), latency percentiles (`percentile_list`), interval logs
//! (`write_bw_log`, `write_iops_log`, `write_lat_log`, `log_avg_msec` -> the CSV logs of
//! `fsbench run --log`), `random_generator`, and io_uring's batching (`iodepth_batch*`,
//! `iodepth_low`). Values are read when the section is read; [`Opts::apply`] sets them on
//! the Job once its engine, depth and run time are known. docs/fio.md states each mapping.

use super::parse::Opt;
use crate::error::UsageError;
use crate::job::params::{self, Front};
use crate::job::{EngineKind, Job};
use crate::usage;
use std::path::PathBuf;
use std::time::Duration;

/// The options this module reads.
pub(crate) const KEYS: &[&str] = &[
    "thinktime",
    "thinktime_blocks",
    "thinktime_spin",
    "steadystate",
    "ss",
    "steadystate_duration",
    "ss_dur",
    "steadystate_ramp_time",
    "ss_ramp",
    "steadystate_check_interval",
    "ss_interval",
    "percentile_list",
    "write_bw_log",
    "write_iops_log",
    "write_lat_log",
    "log_avg_msec",
    "random_generator",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "iodepth_low",
];

/// Why `thinktime_iotime` is refused.
pub(crate) const IOTIME_REFUSAL: &str =
    "fsbench pauses after a count of I/Os (thinktime_blocks), not after a stretch of I/O time";

/// fio's criterion when `steadystate` is not given.
const FIO_DEFAULT_STEADY: &str = "iops_slope:0.01%";

/// The interval the logs average over when `log_avg_msec` is not given.
const DEFAULT_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// The log files fsbench writes, in the order of `write_bw_log`, `write_iops_log`,
/// `write_lat_log`.
const LOG_FILES: [&str; 3] = crate::report::interval_logs::LOG_NAMES;
const LOG_KEYS: [&str; 3] = ["write_bw_log", "write_iops_log", "write_lat_log"];

/// What the front end does with a job's Result beyond running it: the percentiles it
/// reports and the logs it writes.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Reporting {
    /// `percentile_list`: the latency percentiles in the Result (None: fsbench's list).
    pub percentiles: Option<Vec<f64>>,
    /// Each log directory and the log files written into it (`bw.csv`, ...).
    pub logs: Vec<(PathBuf, Vec<&'static str>)>,
    /// The `--status-interval` the logs are made of (Some when there are logs).
    pub log_interval: Option<Duration>,
}

/// fio's steady-state criterion: the figure, the limit in % of the mean, slope or not.
#[derive(Debug, Clone, PartialEq)]
struct Criterion {
    metric: &'static str,
    limit_pct: f64,
    slope: bool,
    /// As written, for messages.
    text: String,
}

/// A value with the key it was given under (`iodepth_batch` or `iodepth_batch_submit`).
type Keyed = Option<(String, u64)>;

/// What a section says about pacing, watching and recording.
#[derive(Debug, Default)]
pub(crate) struct Opts {
    think: Option<Duration>,
    think_blocks: Option<u64>,
    think_spin: Option<Duration>,
    steady: Option<Criterion>,
    steady_dur: Option<Duration>,
    steady_ramp: Option<Duration>,
    percentiles: Option<Vec<f64>>,
    /// Per log (bw, iops, lat): asked, and the name given (None: the job's name).
    logs: [Option<Option<String>>; 3],
    log_avg_msec: Option<u64>,
    generator: Option<String>,
    batch_submit: Keyed,
    complete_min: Keyed,
    complete_max: Keyed,
    iodepth_low: Option<u64>,
}

/// A time as fio reads one: a whole number in `bare` units, or with a unit (`us`, `ms`,
/// `s`, `m`, `h`, `d`; `usec`, `msec`, `sec`, `min` too).
fn fio_time(v: &str, bare: (Duration, &str), what: &str) -> Result<Duration, UsageError> {
    let bad = || {
        usage!(
            "bad {what} '{v}': expected a whole number with an optional unit us, ms, s, m, h or d (a bare number is {})",
            bare.1
        )
    };
    let t = v.trim();
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if end == 0 {
        return Err(bad());
    }
    let n: u32 = t[..end].parse().map_err(|_| bad())?;
    let unit = match t[end..].trim().to_ascii_lowercase().as_str() {
        "" => bare.0,
        "us" | "usec" => Duration::from_micros(1),
        "ms" | "msec" => Duration::from_millis(1),
        "s" | "sec" => Duration::from_secs(1),
        "m" | "min" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        "d" => Duration::from_secs(86400),
        _ => return Err(bad()),
    };
    unit.checked_mul(n).ok_or_else(bad)
}

const MICROS: (Duration, &str) = (Duration::from_micros(1), "microseconds");
const SECONDS: (Duration, &str) = (Duration::from_secs(1), "seconds");

/// fio's `steadystate` value: `iops`, `iops_slope`, `bw`, `bw_slope`, `lat`, `lat_slope`,
/// then `:LIMIT%`. A limit without `%` (an absolute number of IOPS, bytes/s or ns) is
/// refused: fsbench's watch judges against a share of the mean.
fn criterion(v: &str, key: &str, job: &str) -> Result<Criterion, UsageError> {
    let forms = "iops, iops_slope, bw, bw_slope, lat or lat_slope, then :LIMIT% (e.g. iops:5%, bw_slope:0.1%)";
    let (name, limit) = v
        .split_once(':')
        .ok_or_else(|| usage!("bad {key}={v} in [{job}]: expected {forms}"))?;
    let (metric, slope) = match name.trim().to_ascii_lowercase().as_str() {
        "iops" => ("iops", false),
        "iops_slope" => ("iops", true),
        "bw" => ("bw", false),
        "bw_slope" => ("bw", true),
        "lat" => ("lat", false),
        "lat_slope" => ("lat", true),
        _ => return Err(usage!("bad {key}={v} in [{job}]: expected {forms}")),
    };
    let Some(pct) = limit.trim().strip_suffix('%') else {
        return Err(usage!(
            "{key}={v} in [{job}] gives an absolute limit: fsbench's steady-state watch judges a share of the window's mean; give the limit in % (e.g. {name}:1%)"
        ));
    };
    let limit_pct: f64 = pct
        .trim()
        .parse()
        .ok()
        .filter(|p: &f64| *p > 0.0 && *p <= 1000.0)
        .ok_or_else(|| {
            usage!("bad {key}={v} in [{job}]: the limit must be more than 0 % and at most 1000 %")
        })?;
    Ok(Criterion {
        metric,
        limit_pct,
        slope,
        text: v.trim().to_string(),
    })
}

/// fio's `percentile_list` (`50:99:99.9`; commas read too) through fsbench's own checks.
fn percentile_list(v: &str, job: &str) -> Result<Vec<f64>, UsageError> {
    crate::stats::percentiles::parse_list(&v.replace(':', ",")).map_err(|_| {
        usage!(
            "bad percentile_list={v} in [{job}]: expected up to 16 different percentiles separated by ':', each more than 0 and less than 100 (e.g. 50:99:99.9)"
        )
    })
}

impl Opts {
    /// Read one of [`KEYS`].
    pub(crate) fn read(&mut self, o: &Opt, kb: u64, job: &str) -> Result<(), UsageError> {
        let key = o.key.as_str();
        let need = || {
            o.value
                .as_deref()
                .map(str::trim)
                .ok_or_else(|| usage!("{key} in [{job}] needs a value: {key}=VALUE"))
        };
        let what = format!("{key} in [{job}]");
        let count = |v: &str| super::map::parse_size(v, kb, &what);
        let keyed = |v: &str| count(v).map(|n| Some((key.to_string(), n)));
        match key {
            "thinktime" => self.think = Some(fio_time(need()?, MICROS, &what)?),
            "thinktime_blocks" => self.think_blocks = Some(count(need()?)?),
            "thinktime_spin" => self.think_spin = Some(fio_time(need()?, MICROS, &what)?),
            "steadystate" | "ss" => self.steady = Some(criterion(need()?, key, job)?),
            "steadystate_duration" | "ss_dur" => {
                self.steady_dur = Some(fio_time(need()?, SECONDS, &what)?)
            }
            "steadystate_ramp_time" | "ss_ramp" => {
                self.steady_ramp = Some(fio_time(need()?, SECONDS, &what)?)
            }
            "steadystate_check_interval" | "ss_interval" => {
                let v = need()?;
                if fio_time(v, SECONDS, &what)? != Duration::from_secs(1) {
                    return Err(usage!(
                        "{key}={v} in [{job}]: fsbench's steady-state watch takes one sample a second; leave {key} at 1s"
                    ));
                }
            }
            "percentile_list" => self.percentiles = Some(percentile_list(need()?, job)?),
            "write_bw_log" | "write_iops_log" | "write_lat_log" => {
                let i = LOG_KEYS.iter().position(|k| *k == key).expect("a log key");
                let name = o.value.as_deref().map(str::trim).filter(|v| !v.is_empty());
                self.logs[i] = Some(name.map(String::from));
            }
            "log_avg_msec" => self.log_avg_msec = Some(count(need()?)?),
            "random_generator" => {
                let v = need()?;
                if !matches!(v, "tausworthe" | "lfsr" | "tausworthe64") {
                    return Err(usage!(
                        "bad random_generator={v} in [{job}]: expected tausworthe, lfsr or tausworthe64"
                    ));
                }
                self.generator = Some(v.to_string());
            }
            "iodepth_batch" | "iodepth_batch_submit" => self.batch_submit = keyed(need()?)?,
            "iodepth_batch_complete" | "iodepth_batch_complete_min" => {
                self.complete_min = keyed(need()?)?
            }
            "iodepth_batch_complete_max" => self.complete_max = keyed(need()?)?,
            "iodepth_low" => self.iodepth_low = Some(count(need()?)?),
            _ => return Err(usage!("unsupported fio option '{key}' in [{job}]")),
        }
        Ok(())
    }

    /// Set what the section said on `job` (its engine, depth, run time and random map
    /// already set), noting where fsbench differs from fio; what the front end does with
    /// the Result is returned.
    pub(crate) fn apply(
        &self,
        job: &mut Job,
        notes: &mut Vec<String>,
        sname: &str,
    ) -> Result<Reporting, UsageError> {
        self.apply_think(job, notes, sname)?;
        self.apply_steady(job, notes, sname)?;
        self.apply_generator(job, notes, sname)?;
        self.apply_batching(job, notes, sname)?;
        self.reporting(&job.name, notes, sname)
    }

    /// `thinktime` (µs unless a unit is given) after every `thinktime_blocks` I/Os.
    fn apply_think(
        &self,
        job: &mut Job,
        notes: &mut Vec<String>,
        s: &str,
    ) -> Result<(), UsageError> {
        let Some(think) = self.think.filter(|t| !t.is_zero()) else {
            if self.think_blocks.is_some() || self.think_spin.is_some() {
                notes.push(format!(
                    "thinktime_blocks and thinktime_spin in [{s}] have no effect without thinktime (as in fio)"
                ));
            }
            return Ok(());
        };
        // fio spins for thinktime_spin, then sleeps the rest of thinktime: the pause lasts
        // the longer of the two.
        let spin = self.think_spin.unwrap_or_default();
        let pause = think.max(spin);
        let every = self.think_blocks.unwrap_or(1).max(1);
        let spec = format!("{}us:{every}", pause.as_micros());
        set(job, "think", &spec, &format!("thinktime in [{s}]"))?;
        if !spin.is_zero() {
            notes.push(format!(
                "thinktime_spin={}us in [{s}]: the pause lasts as long as in fio ({} us), but fsbench sleeps it and spins only its last 100 us, where fio spins the first {} us: only the CPU time taken differs",
                spin.as_micros(),
                pause.as_micros(),
                spin.as_micros()
            ));
        }
        Ok(())
    }

    /// `steadystate` judged over `steadystate_duration` (fio's default 0: not judged),
    /// after `steadystate_ramp_time`, within the job's runtime.
    fn apply_steady(
        &self,
        job: &mut Job,
        notes: &mut Vec<String>,
        s: &str,
    ) -> Result<(), UsageError> {
        let Some(dur) = self.steady_dur.filter(|d| !d.is_zero()) else {
            if self.steady.is_some() || self.steady_ramp.is_some() {
                notes.push(format!(
                    "steadystate in [{s}] has no effect without steadystate_duration (ss_dur), as in fio"
                ));
            }
            return Ok(());
        };
        let c = match &self.steady {
            Some(c) => c.clone(),
            None => criterion(FIO_DEFAULT_STEADY, "steadystate", s)?,
        };
        let secs = dur.as_secs();
        if dur.subsec_nanos() != 0 || !(2..=crate::job::steady::MAX_WINDOW_S as u64).contains(&secs)
        {
            return Err(usage!(
                "steadystate_duration={}s in [{s}]: fsbench judges one sample a second over whole seconds, from 2 s to {} s",
                dur.as_secs_f64(),
                crate::job::steady::MAX_WINDOW_S
            ));
        }
        if job.time_s.is_none() {
            return Err(usage!(
                "steadystate={} in [{s}] ends a timed run once it settles: give runtime= (the longest the job runs), as fio's steady-state jobs do",
                c.text
            ));
        }
        let slope = if c.slope { ":slope" } else { "" };
        let spec = format!("{}:{}%{slope}:{secs}s", c.metric, c.limit_pct);
        set(job, "steady_state", &spec, &format!("steadystate in [{s}]"))?;
        if !c.slope {
            notes.push(format!(
                "steadystate={} in [{s}]: fsbench judges the window's range (largest minus smallest sample) against {} % of its mean, where fio judges each sample's distance from the mean: a range within the limit is within fio's too, so fsbench settles no earlier than fio would",
                c.text, c.limit_pct
            ));
        }
        if let Some(r) = self.steady_ramp.filter(|r| !r.is_zero()) {
            match job.ramp_s {
                None => {
                    set(job, "ramp", &format!("{}us", r.as_micros()), &format!("steadystate_ramp_time in [{s}]"))?;
                    notes.push(format!(
                        "steadystate_ramp_time={}s in [{s}]: fsbench's watch starts after a warm-up, so the first {} s run as a warm-up left out of the Result and the runtime counts after it (fio counts them in both)",
                        r.as_secs_f64(),
                        r.as_secs_f64()
                    ));
                }
                Some(rt) if r.as_secs_f64() <= rt => {}
                Some(rt) => {
                    return Err(usage!(
                        "steadystate_ramp_time={}s in [{s}] is longer than ramp_time={rt}s: fsbench's steady-state watch starts when the warm-up ends; give steadystate_ramp_time no longer than ramp_time, or drop ramp_time",
                        r.as_secs_f64()
                    ))
                }
            }
        }
        Ok(())
    }

    /// `random_generator`: fsbench draws with its own generator whatever the name; `lfsr`
    /// also promises every block once per pass, which is fsbench's random map.
    fn apply_generator(
        &self,
        job: &mut Job,
        notes: &mut Vec<String>,
        s: &str,
    ) -> Result<(), UsageError> {
        let Some(g) = &self.generator else {
            return Ok(());
        };
        let mapped = g == "lfsr"
            && job.access.is_random()
            && job.distribution.is_uniform()
            && job.random_run.is_none();
        if mapped && !job.random_map {
            set(
                job,
                "random_map",
                "true",
                &format!("random_generator in [{s}]"),
            )?;
        }
        notes.push(match (g.as_str(), mapped) {
            ("lfsr", true) => format!(
                "random_generator=lfsr in [{s}]: every block once per pass, as fsbench's random map draws them (with fsbench's generator: the offsets differ from fio's)"
            ),
            _ => format!(
                "random_generator={g} in [{s}]: offsets are drawn by fsbench's generator (they differ from fio's, as with randseed)"
            ),
        });
        Ok(())
    }

    /// io_uring's batching: fsbench's engine keeps every slot of the queue busy, so options
    /// that only group system calls are noted, and ones that let the queue drain refused.
    fn apply_batching(
        &self,
        job: &Job,
        notes: &mut Vec<String>,
        s: &str,
    ) -> Result<(), UsageError> {
        let given: Vec<String> = [&self.batch_submit, &self.complete_min, &self.complete_max]
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .chain(self.iodepth_low.map(|n| format!("iodepth_low={n}")))
            .collect();
        if given.is_empty() {
            return Ok(());
        }
        let depth = u64::from(job.queue_depth);
        if depth <= 1 || !matches!(job.engine, EngineKind::Uring | EngineKind::Null) {
            notes.push(format!(
                "{} in [{s}]: no effect with one I/O in flight (as in fio)",
                given.join(", ")
            ));
            return Ok(());
        }
        if let Some(low) = self.iodepth_low.filter(|&l| l > 0 && l < depth) {
            return Err(usage!(
                "iodepth_low={low} in [{s}] lets the queue drain to {low} I/Os before refilling it: fsbench refills each slot as its I/O completes (fio's default, iodepth_low = iodepth = {depth})"
            ));
        }
        if let Some((k, m)) = self.complete_min.as_ref().filter(|(_, m)| *m > 1) {
            return Err(usage!(
                "{k}={m} in [{s}] waits for {m} completions before refilling the queue: fsbench waits for one and refills at once (fio's default of 1)"
            ));
        }
        notes.push(format!(
            "{} in [{s}]: fsbench's io_uring engine passes direct I/O to the kernel as each is queued and page-cache I/O in one call with the wait, waits for one completion and takes every one there is; these options group system calls, not I/Os, and are not copied",
            given.join(", ")
        ));
        Ok(())
    }

    /// The percentiles and the logs, each log in the directory it names (the job's name
    /// when bare), averaged over `log_avg_msec`.
    fn reporting(
        &self,
        name: &str,
        notes: &mut Vec<String>,
        s: &str,
    ) -> Result<Reporting, UsageError> {
        let mut logs: Vec<(PathBuf, Vec<&'static str>)> = Vec::new();
        for (i, asked) in self.logs.iter().enumerate() {
            let Some(given) = asked else { continue };
            let dir = PathBuf::from(given.as_deref().unwrap_or(name));
            match logs.iter_mut().find(|(d, _)| *d == dir) {
                Some((_, files)) => files.push(LOG_FILES[i]),
                None => logs.push((dir, vec![LOG_FILES[i]])),
            }
        }
        let log_interval = match (logs.is_empty(), self.log_avg_msec) {
            (true, Some(_)) => {
                notes.push(format!(
                    "log_avg_msec in [{s}] has no effect without write_bw_log, write_iops_log or write_lat_log (as in fio)"
                ));
                None
            }
            (true, None) => None,
            (false, None | Some(0)) => {
                notes.push(format!(
                    "logs of [{s}]: fio without log_avg_msec logs every I/O; fsbench logs the average of every {} ms (give log_avg_msec for another interval)",
                    DEFAULT_LOG_INTERVAL.as_millis()
                ));
                Some(DEFAULT_LOG_INTERVAL)
            }
            (false, Some(ms)) if ms < 10 => {
                return Err(usage!(
                    "log_avg_msec={ms} in [{s}]: fsbench's shortest log interval is 10 ms"
                ))
            }
            (false, Some(ms)) => Some(Duration::from_millis(ms)),
        };
        for (dir, files) in &logs {
            notes.push(format!(
                "logs of [{s}]: {} in the directory {} (fsbench's CSV logs: one row per interval per thread and one for the job)",
                files.join(", "),
                dir.display()
            ));
        }
        Ok(Reporting {
            percentiles: self.percentiles.clone(),
            logs,
            log_interval,
        })
    }
}

/// Set a table parameter from a value already read with fio's rules.
fn set(job: &mut Job, name: &str, value: &str, spelled: &str) -> Result<(), UsageError> {
    params::get(name).set(job, value, Front::Fio(spelled))
}

#[cfg(test)]
mod tests {
    use super::super::map::map_sections;
    use super::super::parse::parse_text;
    use super::*;

    fn mapped(text: &str) -> Result<super::super::map::FioJob, UsageError> {
        let s = parse_text(&format!("[j]\nsize=1m\nfilename=f\n{text}\n"), &|_| None)?;
        Ok(map_sections(&s, false)?.remove(0))
    }

    fn refusal(text: &str) -> String {
        let e = mapped(text).unwrap_err().0;
        assert!(!e.contains('\n'), "{e}");
        e
    }

    #[test]
    fn times_read_with_fios_bare_units() {
        assert_eq!(
            fio_time("250", MICROS, "x").unwrap(),
            Duration::from_micros(250)
        );
        assert_eq!(
            fio_time("3ms", MICROS, "x").unwrap(),
            Duration::from_millis(3)
        );
        assert_eq!(
            fio_time("30", SECONDS, "x").unwrap(),
            Duration::from_secs(30)
        );
        assert_eq!(
            fio_time("2m", SECONDS, "x").unwrap(),
            Duration::from_secs(120)
        );
        for bad in ["", "x", "1.5s", "3q", "-1"] {
            assert!(fio_time(bad, SECONDS, "x").is_err(), "{bad}");
        }
    }

    #[test]
    fn think_time_maps_onto_think() {
        let j = mapped("thinktime=1500\nthinktime_blocks=4").unwrap();
        assert_eq!(j.job.think.unwrap().spec(), "1500us:4");
        // A spin longer than the think time makes the pause that long, as in fio.
        let j = mapped("thinktime=1ms\nthinktime_spin=3000").unwrap();
        assert_eq!(j.job.think.unwrap().spec(), "3ms");
        assert!(j.notes.iter().any(|n| n.contains("thinktime_spin=3000us")));
        let j = mapped("thinktime_blocks=4").unwrap();
        assert!(j.job.think.is_none());
        assert!(refusal("thinktime=2m").contains("thinktime in [j]"));
    }

    #[test]
    fn steady_state_maps_fios_forms() {
        let spec = |text: &str| mapped(text).unwrap().job.steady_state.map(|s| s.spec());
        let base = "runtime=60\ntime_based\n";
        assert_eq!(
            spec(&format!("{base}ss=iops:5%\nss_dur=30")),
            Some("iops:5%:30s".into())
        );
        assert_eq!(
            spec(&format!(
                "{base}steadystate=bw_slope:0.1%\nsteadystate_duration=1m"
            )),
            Some("bw:0.1%:slope:60s".into())
        );
        assert_eq!(
            spec(&format!("{base}ss=lat_slope:2%\nss_dur=5s")),
            Some("lat:2%:slope:5s".into())
        );
        // fio's default criterion when only the window is given.
        assert_eq!(
            spec(&format!("{base}ss_dur=10")),
            Some("iops:0.01%:slope:10s".into())
        );
        // Without a window fio does not judge: nothing set, a note says so.
        let j = mapped(&format!("{base}ss=iops:5%")).unwrap();
        assert!(j.job.steady_state.is_none());
        assert!(j
            .notes
            .iter()
            .any(|n| n.contains("no effect without steadystate_duration")));
        // ss_ramp becomes the warm-up the watch starts after.
        let j = mapped(&format!("{base}ss=iops:5%\nss_dur=10\nss_ramp=5")).unwrap();
        assert_eq!(j.job.ramp_s, Some(5.0));
        for (text, want) in [
            ("ss=iops:300\nss_dur=10", "gives an absolute limit"),
            ("ss=clat:5%\nss_dur=10", "bad ss=clat:5% in [j]"),
            ("ss=iops:5%\nss_dur=1", "from 2 s"),
            ("ss=iops:5%\nss_dur=1500ms", "whole seconds"),
            (
                "ss=iops:5%\nss_dur=10\nss_ramp=10\nramp_time=2",
                "longer than ramp_time",
            ),
            ("ss_interval=5", "one sample a second"),
        ] {
            assert!(refusal(&format!("{base}{text}")).contains(want), "{text}");
        }
        assert!(refusal("ss=iops:5%\nss_dur=10").contains("give runtime="));
    }

    #[test]
    fn percentiles_logs_generator_and_batching() {
        let j = mapped("percentile_list=50:99:99.9").unwrap();
        assert_eq!(j.reporting.percentiles, Some(vec![50.0, 99.0, 99.9]));
        assert!(refusal("percentile_list=50:100").contains("percentile_list=50:100 in [j]"));
        let j =
            mapped("write_bw_log=l\nwrite_lat_log=l\nwrite_iops_log\nlog_avg_msec=250").unwrap();
        assert_eq!(
            j.reporting.logs,
            vec![
                (PathBuf::from("l"), vec!["bw.csv", "lat.csv"]),
                (PathBuf::from("j"), vec!["iops.csv"])
            ]
        );
        assert_eq!(j.reporting.log_interval, Some(Duration::from_millis(250)));
        assert_eq!(
            mapped("write_bw_log=l").unwrap().reporting.log_interval,
            Some(Duration::from_secs(1))
        );
        assert!(refusal("write_bw_log=l\nlog_avg_msec=5").contains("10 ms"));
        // lfsr: every block once per pass, even with norandommap.
        let j = mapped("rw=randread\nnorandommap\nrandom_generator=lfsr").unwrap();
        assert!(j.job.random_map);
        let j = mapped("rw=randread\nnorandommap\nrandom_generator=tausworthe64").unwrap();
        assert!(!j.job.random_map);
        assert!(refusal("random_generator=mt").contains("tausworthe, lfsr or tausworthe64"));
        let deep = "ioengine=io_uring\niodepth=8\n";
        let j = mapped(&format!(
            "{deep}iodepth_batch=4\niodepth_batch_complete_max=8\niodepth_low=8"
        ))
        .unwrap();
        assert_eq!(j.job.queue_depth, 8);
        assert!(j
            .notes
            .iter()
            .any(|n| n.contains("iodepth_batch=4") && n.contains("not copied")));
        assert!(refusal(&format!("{deep}iodepth_low=2")).contains("iodepth_low=2 in [j]"));
        assert!(refusal(&format!("{deep}iodepth_batch_complete=4"))
            .contains("iodepth_batch_complete=4 in [j]"));
        // One I/O in flight: nothing to group.
        let j = mapped("iodepth_low=1\niodepth_batch_complete_min=4").unwrap();
        assert!(j
            .notes
            .iter()
            .any(|n| n.contains("no effect with one I/O in flight")));
    }
}
