//! Observation flags shared by `run` and `vx`: `--iostat INTERVAL` (device samples during
//! the run, stored in the Result) and `--trace FILE` (every I/O fsbench issued), parsed into
//! [`crate::observe::Observe`], which starts and finishes them around the run.

use crate::observe::{Observe, TraceSettings};
use crate::trace::format::TraceFormat;
use crate::units::{parse_size_as, BareUnit};
use crate::{bail_usage, usage};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Default, Clone)]
pub(crate) struct ObserveArgs {
    /// Sample /proc/diskstats of the devices under the targets every INTERVAL (1s, 500ms)
    #[arg(long, value_name = "INTERVAL", help_heading = super::args::MEASURE)]
    pub iostat: Option<String>,
    /// Record every I/O into FILE (.csv or .bin)
    ///
    /// Each record: id, thread, op, file, offset, length, start and end time.
    #[arg(long, value_name = "FILE", help_heading = super::args::MEASURE)]
    pub trace: Option<PathBuf>,
    /// Trace file format: csv or bin (default: from the extension, .bin is binary)
    #[arg(long = "trace-format", value_name = "FORMAT", help_heading = super::args::MEASURE)]
    pub trace_format: Option<String>,
    /// Trace ring size per thread; the newest records are kept [default: 1m]
    ///
    /// 1m is 1048576 records; with more than 4 threads, 4m records are shared, at least 64k
    /// each.
    #[arg(long = "trace-records", value_name = "N", help_heading = super::args::MEASURE)]
    pub trace_records: Option<String>,
    #[command(flatten)]
    pub watch: super::args::WatchArgs,
}

impl ObserveArgs {
    /// Take `--iostat X`, `--trace X`, `--trace-format X`, `--trace-records X` (or `--opt=X`)
    /// out of a vxbench-style argv, leaving the rest for the vx parser.
    pub(crate) fn extract(
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
                "--progress" => &mut o.watch.progress,
                "--status-interval" => &mut o.watch.status_interval,
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

impl ObserveArgs {
    /// The flags as settings: every value parsed and checked here, once.
    pub(crate) fn settings(&self) -> Result<Observe, crate::error::UsageError> {
        let trace = match &self.trace {
            Some(path) => {
                let format = match &self.trace_format {
                    Some(f) => TraceFormat::parse(f)?,
                    None => TraceFormat::from_path(path),
                };
                let records = match &self.trace_records {
                    Some(n) => {
                        let n = parse_size_as(n, BareUnit::Count, "--trace-records")? as usize;
                        if n == 0 {
                            bail_usage!("--trace-records 0: give at least 1 (e.g. 1m)");
                        }
                        Some(n)
                    }
                    None => None,
                };
                Some(TraceSettings {
                    path: path.clone(),
                    format,
                    records,
                })
            }
            None if self.trace_format.is_some() || self.trace_records.is_some() => {
                bail_usage!("--trace-format and --trace-records need --trace FILE")
            }
            None => None,
        };
        Ok(Observe {
            iostat: super::args::iostat_flag(self.iostat.as_deref())?,
            trace,
            watch: self.watch.watch()?,
            extents: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn args(v: &[&str]) -> Result<Observe, crate::error::UsageError> {
        let argv: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        let (o, rest) = ObserveArgs::extract(&argv)?;
        assert_eq!(rest, ["-w", "read"]);
        o.settings()
    }

    #[test]
    fn flags_become_settings_and_bad_ones_one_usage_error() {
        let o = args(&["-w", "--trace=t.bin", "read", "--iostat", "1s"]).unwrap();
        assert_eq!(o.iostat, Some(Duration::from_secs(1)));
        let t = o.trace.unwrap();
        assert_eq!((t.format, t.records), (TraceFormat::Bin, None));
        let t = args(&["-w", "read", "--trace", "t", "--trace-records", "64k"])
            .unwrap()
            .trace
            .unwrap();
        assert_eq!((t.format, t.records), (TraceFormat::Csv, Some(65536)));
        // No observer and no time series; the live line follows the terminal (off here).
        let plain = args(&["-w", "read"]).unwrap();
        assert!(plain.iostat.is_none() && plain.trace.is_none());
        assert!(plain.watch.status_interval.is_none());
        for bad in [
            &["-w", "read", "--trace-records", "4"][..],
            &["-w", "read", "--trace", "t", "--trace-records", "0"],
            &["-w", "read", "--trace", "t", "--trace-format", "xml"],
            &["-w", "read", "--iostat", "1ms"],
        ] {
            assert!(args(bad).is_err(), "{bad:?}");
        }
    }
}
