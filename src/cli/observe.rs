//! Observation options shared by `run` and `vx`: `--iostat INTERVAL` (device samples during
//! the run, stored in the Result) and `--trace FILE` (every I/O fsbench issued). Starting and
//! finishing them around a run; the runner itself only sees the per-worker trace rings.

use crate::job::{Job, WorkerMode};
use crate::probe::diskstats::{self, Sampler};
use crate::result::RunResult;
use crate::trace::format::{self, TraceFormat};
use crate::units::{parse_duration, parse_size_as, BareUnit};
use crate::{bail_usage, usage};
use clap::Args;
use std::path::PathBuf;

/// Default trace ring size per worker thread (40 bytes each: 40 MiB)...
pub const DEFAULT_TRACE_RECORDS: usize = 1 << 20;
/// ...unless the job has so many workers that all rings together would pass this many
/// records (160 MiB); then each ring gets its share, but at least 64k records.
pub const DEFAULT_TRACE_BUDGET: usize = 4 << 20;

#[derive(Args, Debug, Default, Clone)]
pub struct ObserveArgs {
    /// Sample /proc/diskstats of the devices under the targets every INTERVAL (1s, 500ms)
    #[arg(long, value_name = "INTERVAL")]
    pub iostat: Option<String>,
    /// Record every I/O (id, thread, op, file, offset, len, start, end) into FILE (.csv or .bin)
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Trace file format: csv or bin (default: from the extension, .bin is binary)
    #[arg(long = "trace-format", value_name = "FORMAT")]
    pub trace_format: Option<String>,
    /// Trace ring size per thread; the newest records are kept (default 1m = 1048576, less
    /// with more than 4 threads: 4m records shared, at least 64k each)
    #[arg(long = "trace-records", value_name = "N")]
    pub trace_records: Option<String>,
}

impl ObserveArgs {
    /// Take `--iostat X`, `--trace X`, `--trace-format X`, `--trace-records X` (or `--opt=X`)
    /// out of a vxbench-style argv, leaving the rest for the vx parser.
    pub fn extract(
        args: &[String],
    ) -> Result<(ObserveArgs, Vec<String>), crate::error::UsageError> {
        let mut o = ObserveArgs::default();
        let mut rest = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            let (key, inline) = match a.split_once('=') {
                Some((k, v)) if k.starts_with("--") => (k, Some(v.to_string())),
                _ => (a.as_str(), None),
            };
            let slot = match key {
                "--iostat" => &mut o.iostat,
                "--trace-format" => &mut o.trace_format,
                "--trace-records" => &mut o.trace_records,
                "--trace" => {
                    let v = match inline {
                        Some(v) => v,
                        None => {
                            i += 1;
                            args.get(i)
                                .cloned()
                                .ok_or_else(|| usage!("--trace needs a file name"))?
                        }
                    };
                    o.trace = Some(PathBuf::from(v));
                    i += 1;
                    continue;
                }
                _ => {
                    rest.push(a.clone());
                    i += 1;
                    continue;
                }
            };
            let v = match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    args.get(i)
                        .cloned()
                        .ok_or_else(|| usage!("{key} needs a value"))?
                }
            };
            *slot = Some(v);
            i += 1;
        }
        Ok((o, rest))
    }
}

/// Observers running around one job.
pub struct Observer {
    sampler: Option<Sampler>,
    iostat_note: Option<String>,
    trace: Option<(PathBuf, TraceFormat)>,
}

impl Observer {
    /// Check the options and start what runs beside the job. Call right before the run.
    pub fn start(a: &ObserveArgs, job: &Job) -> anyhow::Result<Observer> {
        let mut trace = None;
        if let Some(path) = &a.trace {
            let fmt = match &a.trace_format {
                Some(f) => TraceFormat::parse(f)?,
                None => TraceFormat::from_path(path),
            };
            let records = match &a.trace_records {
                Some(n) => parse_size_as(n, BareUnit::Count, "--trace-records")? as usize,
                None => {
                    let workers = (job.targets.len().max(1) * job.threads.max(1) as usize).max(1);
                    (DEFAULT_TRACE_BUDGET / workers).clamp(64 << 10, DEFAULT_TRACE_RECORDS)
                }
            };
            if records == 0 {
                bail_usage!("--trace-records 0: give at least 1 (e.g. 1m)");
            }
            let workers = job.targets.len().max(1) * job.threads.max(1) as usize;
            crate::trace::session::check_budget(records, workers)?;
            if path.is_dir() {
                bail_usage!(
                    "--trace {}: is a directory; give a file name such as trace.csv",
                    path.display()
                );
            }
            format::check_writable(path)?;
            if job.workers == WorkerMode::Threads {
                crate::trace::enable(records);
            } else {
                // Worker processes leave their records here; `finish` merges and removes them.
                let dir =
                    std::env::temp_dir().join(format!("fsbench-trace-{}", std::process::id()));
                crate::trace::enable_for_children(records, dir).map_err(|e| {
                    usage!("--trace: cannot create a directory for worker processes' traces: {e}")
                })?;
            }
            trace = Some((path.clone(), fmt));
        } else if a.trace_format.is_some() || a.trace_records.is_some() {
            bail_usage!("--trace-format and --trace-records need --trace FILE");
        }
        let mut sampler = None;
        let mut iostat_note = None;
        if let Some(iv) = &a.iostat {
            let interval = parse_duration(iv)?;
            if interval < std::time::Duration::from_millis(10) {
                bail_usage!("--iostat {iv}: the interval must be at least 10ms");
            }
            let mut devices: Vec<String> = Vec::new();
            for t in &job.targets {
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
        })
    }

    /// Stop the observers and store what they saw in the Result (and the trace file).
    pub fn finish(mut self, result: &mut RunResult, run_elapsed_s: f64) -> anyhow::Result<()> {
        if let Some(s) = self.sampler.take() {
            // The run's timed phase ended just now; it began `run_elapsed_s` earlier.
            let run_start = (s.elapsed_s() - run_elapsed_s).max(0.0);
            let mut series = s.finish();
            series.run_start_s = run_start;
            let mut v = serde_json::to_value(&series)?;
            if let (Some(n), Some(m)) = (self.iostat_note.take(), v.as_object_mut()) {
                m.insert("note".into(), n.into());
            }
            result.probes.insert("iostat".into(), v);
        }
        if let Some((path, fmt)) = self.trace.take() {
            let (trace, dropped) = crate::trace::take().unwrap_or_default();
            crate::cli::output::write_with(&path, false, |w| match fmt {
                TraceFormat::Csv => format::to_csv(&trace, w),
                TraceFormat::Bin => format::to_bin(&trace, w),
            })?;
            result.probes.insert(
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

impl Drop for Observer {
    /// A run that ended in an error never reaches `finish`: switch tracing off and remove
    /// what worker processes left behind (the sampler stops on its own drop).
    fn drop(&mut self) {
        if self.trace.take().is_some() {
            let _ = crate::trace::take();
        }
    }
}
