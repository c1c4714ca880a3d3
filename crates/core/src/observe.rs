//! Observing a run from beside it: device samples (`--iostat INTERVAL`, stored in the Result),
//! the per-I/O trace (`--trace FILE`) and, for the aged study, each target's extent count
//! after the run (FIEMAP). [`Observe`] says what to observe, already parsed;
//! the front ends fill it from their flags and the sweeps from their context, so neither
//! reaches into the other. [`Observer`] starts what runs beside a job and stores what it saw;
//! the runner itself only sees the per-worker trace rings.

use crate::job::{Job, WorkerMode};
use crate::probe::diskstats::{self, Sampler};
use crate::result::RunResult;
use crate::trace::format::{self, TraceFormat};
use crate::{bail_usage, usage};
use std::path::PathBuf;
use std::time::Duration;

/// Default trace ring size per worker thread (40 bytes each: 40 MiB)...
pub(crate) const DEFAULT_TRACE_RECORDS: usize = 1 << 20;
/// ...unless the job has so many workers that all rings together would pass this many
/// records (160 MiB); then each ring gets its share, but at least 64k records.
pub(crate) const DEFAULT_TRACE_BUDGET: usize = 4 << 20;
/// Shortest device sampling interval: shorter ones measure /proc/diskstats more than the run.
pub(crate) const MIN_IOSTAT_INTERVAL: Duration = Duration::from_millis(10);

/// What to observe around a job; `Default` is nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observe {
    /// Sample the devices under the job's targets at this interval.
    pub iostat: Option<Duration>,
    /// Record every I/O the job issues.
    pub trace: Option<TraceSettings>,
    /// `--status-interval` and `--progress` as the front end was given them (a study's
    /// points: the study's, without a live line of their own).
    pub watch: crate::runner::live::Watching,
    /// Count each target's extents (FIEMAP) after the run, while its files are still there
    /// (the aged study; the Job must keep its files).
    pub extents: bool,
}

/// Where and how the per-I/O trace goes.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSettings {
    pub path: PathBuf,
    pub format: TraceFormat,
    /// Ring size per worker thread; `None`: `DEFAULT_TRACE_RECORDS`, shared out under
    /// `DEFAULT_TRACE_BUDGET` by the job's worker count.
    pub records: Option<usize>,
}

impl Observe {
    /// Device samples only (what sweeps, suites and replays offer).
    pub(crate) fn iostat(interval: Option<Duration>) -> Observe {
        Observe {
            iostat: interval,
            ..Default::default()
        }
    }
}

/// A `--iostat` interval as typed, checked against `MIN_IOSTAT_INTERVAL`.
pub fn parse_iostat(text: &str) -> Result<Duration, crate::error::UsageError> {
    let interval = crate::units::parse_duration(text)?;
    if interval < MIN_IOSTAT_INTERVAL {
        bail_usage!("--iostat {text}: the interval must be at least 10ms");
    }
    Ok(interval)
}

/// What the observers watch, whatever the source: the paths the run touches (a Job's
/// targets, a workload's fileset directories, a replay's directory), how many threads record
/// a trace ring, and whether they live in worker processes.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub targets: Vec<PathBuf>,
    pub workers: usize,
    pub processes: bool,
}

impl Scope {
    /// A Job's targets and workers.
    pub fn of_job(job: &Job) -> Scope {
        Scope {
            targets: job.targets.clone(),
            workers: job.targets.len().max(1) * job.threads.max(1) as usize,
            processes: job.workers != WorkerMode::Threads,
        }
    }
}

/// Observers running around one run.
pub struct Observer {
    sampler: Option<Sampler>,
    iostat_note: Option<String>,
    trace: Option<(PathBuf, TraceFormat)>,
    /// The session the run's workers record into (`--trace`).
    session: Option<std::sync::Arc<crate::trace::TraceSession>>,
    /// The files whose extents are counted when the run ends.
    extents_of: Option<Vec<PathBuf>>,
}

impl Observer {
    /// Check the settings against a job and start what runs beside it. Call right before
    /// the run.
    pub(crate) fn start(o: &Observe, job: &Job) -> anyhow::Result<Observer> {
        Self::start_for(o, &Scope::of_job(job))
    }

    /// Check the settings against what a run touches and start what runs beside it (every
    /// source: job, workload, replay). Call right before the run.
    pub fn start_for(o: &Observe, scope: &Scope) -> anyhow::Result<Observer> {
        let mut trace = None;
        let mut session = None;
        if let Some(t) = &o.trace {
            let workers = scope.workers.max(1);
            let records = t.records.unwrap_or_else(|| {
                (DEFAULT_TRACE_BUDGET / workers).clamp(64 << 10, DEFAULT_TRACE_RECORDS)
            });
            crate::trace::session::check_budget(records, workers)?;
            if t.path.is_dir() {
                bail_usage!(
                    "--trace {}: is a directory; give a file name such as trace.csv",
                    t.path.display()
                );
            }
            format::check_writable(&t.path)?;
            if !scope.processes {
                session = Some(crate::trace::TraceSession::new(records));
            } else {
                // Worker processes leave their records here; `finish` merges and removes them.
                let dir =
                    std::env::temp_dir().join(format!("fsbench-trace-{}", std::process::id()));
                session = Some(
                    crate::trace::TraceSession::for_children(records, dir).map_err(|e| {
                        usage!(
                            "--trace: cannot create a directory for worker processes' traces: {e}"
                        )
                    })?,
                );
            }
            trace = Some((t.path.clone(), t.format));
        }
        let mut sampler = None;
        let mut iostat_note = None;
        if let Some(interval) = o.iostat {
            let mut devices: Vec<String> = Vec::new();
            for t in &scope.targets {
                for d in diskstats::devices_under(t) {
                    if !devices.contains(&d) {
                        devices.push(d);
                    }
                }
            }
            if devices.is_empty() {
                iostat_note = Some(
                    "no block device under the targets (tmpfs or overlay?): sampling every device with activity".into(),
                );
            }
            sampler = Some(
                Sampler::start(devices, interval)
                    .map_err(|e| usage!("--iostat: cannot read /proc/diskstats: {e}"))?,
            );
        }
        Ok(Observer {
            sampler,
            iostat_note,
            trace,
            session,
            extents_of: o.extents.then(|| scope.targets.clone()),
        })
    }

    /// `watch` with what these observers record carried along (the trace session): how the
    /// run they observe is watched.
    pub fn watching(&self, watch: &crate::runner::live::Watching) -> crate::runner::live::Watching {
        crate::runner::live::Watching {
            trace: self.session.clone(),
            ..watch.clone()
        }
    }

    /// Stop the observers and store what they saw in the Result (and the trace file).
    pub fn finish(self, result: &mut RunResult, run_elapsed_s: f64) -> anyhow::Result<()> {
        self.finish_into(&mut result.probes, run_elapsed_s)?;
        // The checks again, now that the device samples are in (`device_idle`).
        crate::explain::refresh(result);
        Ok(())
    }

    /// Stop the observers and store what they saw as probes (`iostat`, `trace`), writing the
    /// trace file: [`Observer::finish`], or one rank of a distributed run (`crate::mpi`),
    /// whose probes go to rank 0.
    pub fn finish_into(
        mut self,
        probes: &mut serde_json::Map<String, serde_json::Value>,
        run_elapsed_s: f64,
    ) -> anyhow::Result<()> {
        if let Some(s) = self.sampler.take() {
            // The run's timed phase ended just now; it began `run_elapsed_s` earlier.
            let run_start = (s.elapsed_s() - run_elapsed_s).max(0.0);
            let mut series = s.finish();
            series.run_start_s = run_start;
            let mut v = serde_json::to_value(&series)?;
            if let (Some(n), Some(m)) = (self.iostat_note.take(), v.as_object_mut()) {
                m.insert("note".into(), n.into());
            }
            probes.insert("iostat".into(), v);
        }
        if let Some(files) = self.extents_of.take() {
            let counts: Vec<Option<usize>> = files.iter().map(|f| extent_count(f)).collect();
            insert_extents(probes, &counts);
        }
        if let Some((path, fmt)) = self.trace.take() {
            let (trace, dropped) = self.session.take().map(|s| s.take()).unwrap_or_default();
            crate::output::write_with(&path, false, |w| match fmt {
                TraceFormat::Csv => format::to_csv(&trace, w),
                TraceFormat::Bin => format::to_bin(&trace, w),
            })?;
            probes.insert(
                "trace".into(),
                serde_json::json!({
                    "file": path.display().to_string(),
                    "format": if fmt == TraceFormat::Bin { "bin" } else { "csv" },
                    "records": trace.records.len(),
                    "dropped_records": dropped,
                }),
            );
        }
        Ok(())
    }
}

/// The number of extents of the regular file at `p` (None: not a regular file here, or the
/// file system does not answer FIEMAP). Opened read-only without following a link.
pub(crate) fn extent_count(p: &std::path::Path) -> Option<usize> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(p)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    crate::probe::fiemap::extents(&f).ok().map(|e| e.len())
}

/// Store extent counts as the `extents` probe (one per file, null where unknown) and their
/// average over the files that answered as `extents_per_file` (absent when none did).
pub fn insert_extents(
    probes: &mut serde_json::Map<String, serde_json::Value>,
    counts: &[Option<usize>],
) {
    let known: Vec<usize> = counts.iter().flatten().copied().collect();
    if !known.is_empty() {
        let avg = known.iter().sum::<usize>() as f64 / known.len() as f64;
        probes.insert("extents_per_file".into(), serde_json::json!(avg));
    }
    probes.insert("extents".into(), serde_json::json!(counts));
}

impl Drop for Observer {
    /// A run that ended in an error never reaches `finish`: switch tracing off and remove
    /// what worker processes left behind (the sampler stops on its own drop).
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = s.take();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iostat_interval_is_parsed_once_with_its_floor() {
        assert_eq!(parse_iostat("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_iostat("10ms").unwrap(), MIN_IOSTAT_INTERVAL);
        let e = parse_iostat("5ms").unwrap_err();
        assert!(e.0.contains("at least 10ms"), "{e}");
        assert!(parse_iostat("soon").is_err());
        assert_eq!(Observe::default(), Observe::iostat(None));
    }
}
