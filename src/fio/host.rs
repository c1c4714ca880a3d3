//! fio's options about how a job's files are opened and created, where its workers run, and
//! fio's own measurement bookkeeping: each mapped onto an fsbench setting, accepted with a
//! note where fsbench already does what it asks (or measures the same either way), or
//! refused in one line with the reason. docs/fio.md lists each.

use super::map::flag;
use super::parse::Opt;
use crate::error::UsageError;
use crate::usage;

/// What a section says through these options, applied once its targets are known.
#[derive(Default, Debug)]
pub(super) struct HostOpts {
    /// `dsync=1`: O_DSYNC.
    pub dsync: bool,
    /// `overwrite=1`: the files hold data before the job writes (fio lays them out first).
    pub overwrite: bool,
    /// `file_append=1`: I/O from the end of each existing file.
    pub file_append: bool,
    /// `allow_file_create=0`: run only on files that exist.
    pub no_create: bool,
    /// `cpus_allowed` / `cpumask`: the workers' CPUs, as `--cpus` takes them.
    pub cpus: Option<String>,
    /// `nice`: the workers' nice value.
    pub nice: Option<i32>,
    /// Notes for the Result: options accepted that change nothing in fsbench.
    pub notes: Vec<String>,
}

/// Why fio's measurement knobs change nothing: fsbench times every I/O with its own clock.
const MEASURES_ALL: &str = "fsbench times every I/O with its own clock (CLOCK_MONOTONIC) and reports its latency, bandwidth and percentiles per direction whatever this says";

impl HostOpts {
    /// Read one option; false when it is not one of these.
    pub(super) fn read(&mut self, o: &Opt, job: &str) -> Result<bool, UsageError> {
        let key = o.key.as_str();
        let on = || flag(o, job);
        let value = || o.value.as_deref().map(str::trim).unwrap_or("");
        match key {
            "dsync" => self.dsync = on()?,
            "overwrite" => self.overwrite = on()?,
            "file_append" => self.file_append = on()?,
            "allow_file_create" => self.no_create = !on()?,
            "create_serialize" => {
                if on()? {
                    self.notes.push(format!(
                        "create_serialize in [{job}]: fsbench lays out every file of a group one after the other before any job is released, so layout is never timed"
                    ));
                }
            }
            // Refused with the reason `why_refused` gives, unless turned off (fio's default).
            "exitall" | "exitall_on_error" | "ignore_error" => {
                if key == "ignore_error" || on()? {
                    return Ok(false);
                }
            }
            "continue_on_error" => {
                if !matches!(value(), "none" | "0") {
                    return Ok(false);
                }
            }
            "clocksource" => match value() {
                "clock_gettime" | "gettimeofday" | "cpu" => self.notes.push(format!(
                    "clocksource={} in [{job}]: {MEASURES_ALL}",
                    value()
                )),
                v => {
                    return Err(usage!(
                        "bad clocksource={v} in [{job}]: expected gettimeofday, clock_gettime or cpu"
                    ))
                }
            },
            "gtod_reduce" | "disable_lat" | "disable_clat" | "disable_slat"
            | "disable_bw_measurement" | "disable_bw" => {
                if on()? {
                    self.notes.push(format!(
                        "{key} in [{job}] asks fio to measure less; {MEASURES_ALL}, so the Result has the figures fio would leave out"
                    ));
                }
            }
            "stats" => {
                if !on()? {
                    self.notes.push(format!(
                        "stats=0 in [{job}] asks fio to keep no statistics for the job; {MEASURES_ALL}"
                    ));
                }
            }
            "lat_percentiles" | "clat_percentiles" | "slat_percentiles" => {
                on()?;
                self.notes.push(format!(
                    "{key} in [{job}]: {MEASURES_ALL}; its percentiles are of each I/O's whole latency, from submission to completion (fio's lat)"
                ));
            }
            "unified_rw_reporting" => match value() {
                "" | "1" | "mixed" | "both" | "2" => self.notes.push(format!(
                    "unified_rw_reporting in [{job}]: the Result's total is every direction together (fio's mixed figures), beside its figures per direction"
                )),
                "0" | "none" => {}
                v => {
                    return Err(usage!(
                        "bad unified_rw_reporting={v} in [{job}]: expected none, mixed or both (0, 1, 2)"
                    ))
                }
            },
            "per_job_logs" => {
                on()?;
                self.notes.push(format!(
                    "per_job_logs in [{job}] names fio's log files; fsbench's Result is one per job (or group) either way"
                ));
            }
            "cpus_allowed" => self.cpus = Some(value().to_string()),
            "cpumask" => self.cpus = Some(cpumask_list(value(), job)?),
            "nice" => match value().parse::<i32>() {
                Ok(n) if (-20..=19).contains(&n) => self.nice = Some(n),
                _ => {
                    return Err(usage!(
                        "bad nice={} in [{job}]: expected -20 to 19",
                        value()
                    ))
                }
            },
            "cpus_allowed_policy" => match value() {
                "shared" => {}
                "split" => return Ok(false),
                v => {
                    return Err(usage!(
                        "bad cpus_allowed_policy={v} in [{job}]: expected shared or split"
                    ))
                }
            },
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Why an option of these is refused (when it is on): what fsbench does instead.
pub(super) fn why_refused(key: &str) -> Option<&'static str> {
    Some(match key {
        "exitall" | "exitall_on_error" => {
            "each fsbench job of a group runs to its own end; nothing stops the others when one ends"
        }
        "continue_on_error" | "ignore_error" => {
            "fsbench stops a job at its first I/O error and reports it; it ignores no error"
        }
        "cpus_allowed_policy" => {
            "fsbench lets every worker run on all of the job's CPUs (fio's shared); it does not give each clone a CPU of its own"
        }
        "prio" | "prioclass" => {
            "fsbench does not change its workers' I/O priority; run it under ionice(1), whose priority its threads inherit"
        }
        "ioscheduler" => {
            "it changes the device's I/O scheduler for the whole system, and fsbench does not change system settings; set /sys/block/DEV/queue/scheduler before the run"
        }
        _ => return None,
    })
}

/// fio's `cpumask`: a number (decimal, or hex with `0x`) whose bit N allows CPU N, as a CPU
/// list (`0x5` -> `0,2`).
fn cpumask_list(v: &str, job: &str) -> Result<String, UsageError> {
    let bad = || {
        usage!("bad cpumask={v} in [{job}]: expected a bit mask such as 0xf (bit N allows CPU N); cpus_allowed takes a list")
    };
    let mask = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u128::from_str_radix(hex, 16).map_err(|_| bad())?,
        None => v.parse::<u128>().map_err(|_| bad())?,
    };
    if mask == 0 {
        return Err(bad());
    }
    let cpus: Vec<String> = (0..128)
        .filter(|b| mask >> b & 1 == 1)
        .map(|b| b.to_string())
        .collect();
    Ok(cpus.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpumask_is_the_list_of_its_bits() {
        assert_eq!(cpumask_list("0x5", "j").unwrap(), "0,2");
        assert_eq!(cpumask_list("3", "j").unwrap(), "0,1");
        assert!(cpumask_list("0", "j").is_err());
        assert!(cpumask_list("0xzz", "j").is_err());
    }
}
