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
        iostat_flag(self.iostat.as_deref())
    }
}

/// Shortest `--status-interval`: shorter ones measure the clock more than the run.
pub(crate) const MIN_STATUS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

/// `--progress auto|always|never --status-interval DUR`: watching a run while it runs. One
/// definition, flattened into `ObserveArgs` (run, vx, workload, replay) and into quick,
/// sweep and suite.
#[derive(Args, Debug, Default, Clone)]
pub(crate) struct WatchArgs {
    /// Live status line on stderr (phase, read/write rate, ops, elapsed, ETA): auto (only
    /// when stderr is a terminal), always, never [default: auto]
    #[arg(long, value_name = "WHEN")]
    pub progress: Option<String>,
    /// Keep a time series in the Result: ops, bytes, IOPS, bandwidth and latency
    /// percentiles of every DUR of the run (1s, 200ms; at least 10ms)
    #[arg(long = "status-interval", value_name = "DUR")]
    pub status_interval: Option<String>,
}

/// What `--progress` and `--status-interval` ask for, checked.
pub(crate) type Watch = crate::runner::live::Watching;

impl WatchArgs {
    /// The flags checked: a bad value is one usage line.
    pub(crate) fn watch(&self) -> Result<Watch, crate::error::UsageError> {
        self.watch_on(std::io::IsTerminal::is_terminal(&std::io::stderr()))
    }

    /// [`WatchArgs::watch`] with whether stderr is a terminal given.
    pub(crate) fn watch_on(&self, tty: bool) -> Result<Watch, crate::error::UsageError> {
        use crate::runner::live::LiveMode;
        let live = match self.progress.as_deref().unwrap_or("auto") {
            "auto" if tty => LiveMode::Terminal,
            "auto" | "never" => LiveMode::Off,
            "always" if tty => LiveMode::Terminal,
            "always" => LiveMode::Lines,
            other => crate::bail_usage!("bad --progress '{other}': expected auto, always or never"),
        };
        let status_interval = match self.status_interval.as_deref() {
            None => None,
            Some(text) => {
                let d = crate::units::parse_duration(text).map_err(|_| {
                    crate::usage!(
                        "bad --status-interval '{text}': expected a duration of at least 10ms, e.g. 200ms, 1s, 1m"
                    )
                })?;
                if d < MIN_STATUS_INTERVAL {
                    crate::bail_usage!(
                        "bad --status-interval '{text}': expected a duration of at least 10ms, e.g. 200ms, 1s, 1m"
                    );
                }
                Some(d)
            }
        };
        Ok(Watch {
            live,
            status_interval,
            // How the live line is worded: the report layer's words.
            render: crate::report::live::render,
            warm_up: false,
            // Made by the run's observer when it traces.
            trace: None,
        })
    }
}

/// A study's `--progress` (its point counter line) and `--status-interval` (every point's
/// Result keeps its time series); the runs of its points show no live line of their own.
pub(crate) fn watch_study(w: &WatchArgs) -> Result<Watch, crate::error::UsageError> {
    w.watch()
}

/// `--iostat INTERVAL` of any subcommand, when given.
pub(crate) fn iostat_flag(
    value: Option<&str>,
) -> Result<Option<std::time::Duration>, crate::error::UsageError> {
    value.map(crate::observe::parse_iostat).transpose()
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

    #[derive(Parser)]
    struct W {
        #[command(flatten)]
        watch: WatchArgs,
    }

    fn watch(argv: &[&str], tty: bool) -> Result<Watch, crate::error::UsageError> {
        let mut v = vec!["x"];
        v.extend_from_slice(argv);
        W::try_parse_from(v).unwrap().watch.watch_on(tty)
    }

    #[test]
    fn progress_and_status_interval_are_checked() {
        use crate::runner::live::LiveMode;
        assert_eq!(watch(&[], true).unwrap().live, LiveMode::Terminal);
        assert_eq!(watch(&[], false).unwrap().live, LiveMode::Off);
        assert_eq!(
            watch(&["--progress", "never"], true).unwrap().live,
            LiveMode::Off
        );
        assert_eq!(
            watch(&["--progress", "always"], false).unwrap().live,
            LiveMode::Lines
        );
        let w = watch(&["--status-interval", "200ms"], false).unwrap();
        assert_eq!(
            w.status_interval,
            Some(std::time::Duration::from_millis(200))
        );
        for bad in ["soon", "5ms", "0", "-1s"] {
            let flag = format!("--status-interval={bad}");
            let e = watch(&[&flag], false).unwrap_err();
            assert!(
                e.0.contains("--status-interval") && e.0.contains("at least 10ms"),
                "{e}"
            );
        }
        let e = watch(&["--progress", "sometimes"], false).unwrap_err();
        assert_eq!(
            e.0,
            "bad --progress 'sometimes': expected auto, always or never"
        );
    }

    proptest::proptest! {
        /// Whatever is typed, --status-interval is accepted at 10ms or more or refused in
        /// one line naming the flag; never a panic.
        #[test]
        fn status_interval_never_panics(text in "\\PC{0,12}") {
            let a = WatchArgs { progress: None, status_interval: Some(text.clone()) };
            match a.watch_on(false) {
                Ok(w) => proptest::prop_assert!(w.status_interval.unwrap() >= MIN_STATUS_INTERVAL),
                Err(e) => proptest::prop_assert!(e.0.starts_with("bad --status-interval") && !e.0.contains('\n')),
            }
        }
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
        Some(e @ (crate::job::EngineKind::Mmap | crate::job::EngineKind::Null)) => {
            crate::bail_usage!(
                "--engine {}: {who} open, create and delete files as they run; expected sync or uring",
                e.name()
            )
        }
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
