//! Argument groups shared by several subcommands (`#[command(flatten)]`), so a flag is
//! declared, documented and read once: where the Results go (`run`, `quick`), and how the
//! points of a study are measured and stored (`sweep`, `suite`).

use crate::report::{Format, Runs};
use clap::Args;
use std::path::PathBuf;

/// `--output FILE --output-format text|json|csv`: the Results of a run.
#[derive(Args, Debug, Default, Clone)]
pub(crate) struct ResultsArgs {
    /// Write the JSON Result(s) here (several tests: a JSON array)
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// text, json, csv
    #[arg(long = "output-format", default_value = "text")]
    pub output_format: String,
}

impl ResultsArgs {
    /// The printed format, or a usage error naming `--output-format`.
    pub(crate) fn format(&self) -> Result<Format, crate::error::UsageError> {
        Format::parse_for::<Runs>(&self.output_format, "--output-format")
    }
}

/// `--repeat --fresh --keep --force --iostat`: how a study's points are measured and stored.
#[derive(Args, Debug, Clone)]
pub(crate) struct StudyArgs {
    /// Run every point N times (the spread shows in tables and in compare)
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Measure every point again, ignoring stored results
    #[arg(long)]
    pub fresh: bool,
    /// Keep the files fsbench created
    #[arg(long)]
    pub keep: bool,
    /// Write into an output directory fsbench did not make, replacing files it did not
    /// write and points stored there with other settings
    #[arg(long)]
    pub force: bool,
    /// Sample /proc/diskstats of the devices under the target every INTERVAL during each
    /// measured point (stored in its Result, charted over time in report.html)
    #[arg(long, value_name = "INTERVAL")]
    pub iostat: Option<String>,
}

impl StudyArgs {
    /// Refuse `--repeat 0` before anything runs.
    pub(crate) fn check(&self) -> Result<(), crate::error::UsageError> {
        if self.repeat == 0 {
            crate::bail_usage!("bad --repeat 0: must be at least 1");
        }
        Ok(())
    }

    /// The `--iostat` sampling interval, checked.
    pub(crate) fn iostat(&self) -> Result<Option<std::time::Duration>, crate::error::UsageError> {
        super::observe::iostat_flag(self.iostat.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Both {
        #[command(flatten)]
        results: ResultsArgs,
        #[command(flatten)]
        study: StudyArgs,
    }

    #[test]
    fn groups_parse_and_check() {
        let b = Both::try_parse_from(["x", "--output-format", "csv", "--repeat", "3", "--keep"])
            .unwrap();
        assert_eq!(b.results.format().unwrap(), Format::Csv);
        assert!(b.study.keep && !b.study.fresh && b.study.repeat == 3);
        b.study.check().unwrap();
        let b = Both::try_parse_from(["x", "--output-format", "xml", "--repeat", "0"]).unwrap();
        assert!(b
            .results
            .format()
            .unwrap_err()
            .0
            .contains("--output-format"));
        assert_eq!(
            b.study.check().unwrap_err().0,
            "bad --repeat 0: must be at least 1"
        );
    }
}

/// `--engine` of a source that opens, creates and deletes files as it runs (a workload, a
/// replay): sync (the default) or uring, refused in one line where io_uring is unavailable.
pub(crate) fn source_engine(
    flag: Option<&str>,
    who: &str,
) -> anyhow::Result<crate::job::EngineKind> {
    // The Job's parser would offer mmap, which these sources refuse: say what they take.
    let parsed = flag.map(|f| {
        crate::job::EngineKind::parse(f)
            .map_err(|_| crate::usage!("unknown engine '{f}': {who} run on sync or uring"))
    });
    let engine = match parsed.transpose()? {
        None => crate::job::EngineKind::Sync,
        Some(crate::job::EngineKind::Mmap) => crate::bail_usage!(
            "--engine mmap: {who} open, create and delete files as they run; expected sync or uring"
        ),
        Some(e) => e,
    };
    if engine == crate::job::EngineKind::Uring {
        if let Err(why) = crate::engine::uring::available() {
            crate::bail_usage!("--engine uring: {why}");
        }
    }
    Ok(engine)
}

/// `--rate-iops`, `--rate-bytes`, `--rate-scope`: one definition for `run`, `workload` and
/// `replay`, flattened into each.
#[derive(Args, Debug, Default, Clone)]
pub(crate) struct RateArgs {
    /// Rate limit in I/Os per second (per thread, or see --rate-scope); a workload counts its
    /// data I/O calls, a replay every call it issues
    #[arg(long = "rate-iops")]
    pub rate_iops: Option<u64>,
    /// Rate limit in bytes per second of reads and writes (per thread, or see --rate-scope)
    #[arg(long = "rate-bytes")]
    pub rate_bytes: Option<String>,
    /// Whom the rate limit applies to: thread (each thread) or total (divided among all threads)
    #[arg(long = "rate-scope")]
    pub rate_scope: Option<String>,
}

impl RateArgs {
    /// The limit as a workload or a replay takes it (`run` feeds the same strings through
    /// the Job parameter table).
    pub(crate) fn limit(&self) -> Result<crate::job::RateLimit, crate::error::UsageError> {
        let mut rate = crate::job::RateLimit {
            iops: self.rate_iops,
            ..Default::default()
        };
        if let Some(b) = &self.rate_bytes {
            rate.bytes_per_sec = Some(crate::units::parse_size_as(
                b,
                crate::units::BareUnit::Bytes,
                "--rate-bytes",
            )?);
        }
        if let Some(s) = &self.rate_scope {
            rate.scope = crate::job::RateScope::parse(s)?;
        }
        if rate.iops == Some(0) || rate.bytes_per_sec == Some(0) {
            crate::bail_usage!(
                "bad rate limit 0: give a positive --rate-iops or --rate-bytes, or leave it out"
            );
        }
        Ok(rate)
    }
}
