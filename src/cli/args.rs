//! Argument groups shared by several subcommands (`#[command(flatten)]`), so a flag is
//! declared, documented and read once: what is printed (`--format`, every subcommand) and
//! where the Results go (`run`, `quick`), how the points of a study are measured and stored
//! (`sweep`, `suite`), and the help headings every subcommand groups its options under.

use crate::report::{Format, Render, Runs};
use clap::Args;
use std::path::PathBuf;

/// Help heading: what is measured (the access pattern, sizes, the workload, the targets).
pub(crate) const WHAT: &str = "What to run";
/// Help heading: how the I/O is done (cache policy, engine, open flags, rate limits).
pub(crate) const HOW: &str = "How";
/// Help heading: what is observed and how the run is watched or repeated.
pub(crate) const MEASURE: &str = "Measurement";
/// Help heading: what is printed and where results are stored.
pub(crate) const WHERE: &str = "Where to";
/// Help heading: what fsbench may create, replace, keep or remove.
pub(crate) const SAFETY: &str = "Safety";
/// Help heading: distributed runs under mpirun.
pub(crate) const MPI: &str = "MPI";

/// `--format FORMAT`: what a subcommand prints on standard output. `--output-format` is the
/// spelling of earlier releases (`run`, `quick`, `workload`, `replay`): hidden, still read
/// for one release, with one deprecation line.
#[derive(Args, Debug, Default, Clone)]
pub(crate) struct FormatArgs {
    /// What is printed on standard output
    #[arg(long, value_name = "FORMAT", help_heading = WHERE)]
    pub format: Option<String>,
    /// The old spelling of --format
    #[arg(
        long = "output-format",
        value_name = "FORMAT",
        hide = true,
        conflicts_with = "format"
    )]
    pub output_format: Option<String>,
}

/// `--json`: the old spelling of `--format json` (`iostat`, `frag`, `trace --analyze`),
/// hidden, still read for one release.
#[derive(Args, Debug, Default, Clone)]
pub(crate) struct JsonAlias {
    /// The old spelling of --format json
    #[arg(long, hide = true, conflicts_with_all = ["format", "output_format"])]
    pub json: bool,
}

impl FormatArgs {
    /// The printed format among those `R` renders (its first when none is given), or one
    /// usage line naming the flag as the user spelled it.
    pub(crate) fn get<R: Render + ?Sized>(&self) -> Result<Format, crate::error::UsageError> {
        self.among(R::FORMATS, false)
    }

    /// [`FormatArgs::get`] with the accepted formats given, and whether `--json` was given.
    pub(crate) fn among(
        &self,
        accepted: &[Format],
        json: bool,
    ) -> Result<Format, crate::error::UsageError> {
        let (flag, value) = match (&self.format, &self.output_format, json) {
            (Some(v), _, _) => ("--format", v.as_str()),
            (None, Some(v), _) => ("--output-format", v.as_str()),
            (None, None, true) => ("--json", "json"),
            (None, None, false) => return Ok(accepted[0]),
        };
        let format = Format::parse_among(value, accepted, flag)?;
        match flag {
            "--output-format" => deprecated("--output-format", "--format"),
            "--json" => deprecated("--json", "--format json"),
            _ => {}
        }
        Ok(format)
    }
}

/// One line on stderr for an old spelling that still works (said by rank 0 alone when
/// mpirun started several copies).
pub(crate) fn deprecated(old: &str, new: &str) {
    if super::ranks::launched_rank().unwrap_or(0) == 0 {
        eprintln!("fsbench: {old} is deprecated; use {new}");
    }
}

/// The help of `--format` on a subcommand that prints what `R` renders (its first format is
/// the default).
pub(crate) fn format_help<R: Render + ?Sized>(arg: clap::Arg) -> clap::Arg {
    formats_help(arg, R::FORMATS)
}

/// [`format_help`] with the formats given.
pub(crate) fn formats_help(arg: clap::Arg, formats: &[Format]) -> clap::Arg {
    let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
    arg.help(format!(
        "What is printed on standard output: {} [default: {}]",
        names.join(", "),
        names[0]
    ))
}

/// `--output FILE --format text|json|csv`: the Results of a run.
#[derive(Args, Debug, Default, Clone)]
pub(crate) struct ResultsArgs {
    /// Store the JSON Result in FILE (several runs: a JSON array)
    #[arg(long, value_name = "FILE", help_heading = WHERE)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub printed: FormatArgs,
    /// Latency percentiles to report, e.g. 50,90,99,99.9,99.99,99.999 (up to 16)
    ///
    /// Shown in the text report's latency lines and stored in the Result as
    /// lat_percentiles_ns (keys p50, p99_9, ...; nanoseconds), for the whole run and each
    /// direction. [default: 50,90,99,99.9,99.99, in lat_ns]
    #[arg(long, value_name = "LIST", help_heading = WHERE)]
    pub percentiles: Option<String>,
    /// Write the --status-interval series as CSV logs in DIR: bw.csv, iops.csv, lat.csv
    ///
    /// One row per interval per thread and one for the whole run (thread = total); the
    /// column names carry the units. Files already there are refused unless --force.
    #[arg(long = "log", value_name = "DIR", help_heading = WHERE)]
    pub log: Option<PathBuf>,
}

impl ResultsArgs {
    /// The `--percentiles` list, checked (None: the default list of `lat_ns`).
    pub(crate) fn percentiles(&self) -> Result<Option<Vec<f64>>, crate::error::UsageError> {
        self.percentiles
            .as_deref()
            .map(crate::stats::percentiles::parse_list)
            .transpose()
    }

    /// The `--log` directory, opened (made when absent) and its three files checked before
    /// the run: logs are of a `--status-interval` series, so one must be kept.
    pub(crate) fn open_log(
        &self,
        watch: &Watch,
        force: bool,
    ) -> anyhow::Result<Option<crate::output::ResultsDir>> {
        let Some(path) = &self.log else {
            return Ok(None);
        };
        if watch.status_interval.is_none() {
            crate::bail_usage!(
                "--log {} writes the --status-interval series: add --status-interval DUR (e.g. 1s)",
                path.display()
            );
        }
        let dir = open_log_dir(
            path,
            "--log",
            &crate::report::interval_logs::LOG_NAMES,
            force,
        )?;
        Ok(Some(dir))
    }

    /// Write the logs of `result` into the `--log` directory.
    pub(crate) fn write_logs(
        dir: &crate::output::ResultsDir,
        result: &crate::result::RunResult,
    ) -> anyhow::Result<()> {
        let logs = crate::report::interval_logs::logs(result);
        for (name, text) in crate::report::interval_logs::LOG_NAMES.iter().zip(logs) {
            dir.write(name, text.as_bytes())?;
        }
        Ok(())
    }

    /// Put the asked percentiles into each Result (after the run, from its histograms).
    pub(crate) fn add_percentiles(list: Option<&[f64]>, results: &mut [crate::result::RunResult]) {
        if let Some(list) = list {
            for r in results {
                r.total.set_percentiles(list);
            }
        }
    }

    /// The printed format, or a usage error naming the flag given.
    pub(crate) fn format(&self) -> Result<Format, crate::error::UsageError> {
        self.printed.get::<Runs>()
    }
}

/// `--repeat --fresh --keep --force --iostat`: how a study's points are measured and stored.
#[derive(Args, Debug, Clone)]
pub(crate) struct StudyArgs {
    /// Run every point N times (the spread shows in tables and in compare)
    #[arg(long, default_value_t = 1, value_name = "N", help_heading = MEASURE)]
    pub repeat: u32,
    /// Measure every point again, ignoring stored results
    #[arg(long, help_heading = MEASURE)]
    pub fresh: bool,
    /// Keep the files fsbench created
    #[arg(long, help_heading = SAFETY)]
    pub keep: bool,
    /// Write into an output directory fsbench did not make, replacing what it holds
    ///
    /// Files fsbench did not write and points stored there with other settings are replaced.
    #[arg(long, help_heading = SAFETY)]
    pub force: bool,
    /// Sample the devices under the target every INTERVAL of each point (1s, 500ms)
    ///
    /// Read from /proc/diskstats, stored in each point's Result and charted over time in
    /// report.html.
    #[arg(long, value_name = "INTERVAL", help_heading = MEASURE)]
    pub iostat: Option<String>,
}

impl StudyArgs {
    /// Refuse `--repeat 0` before anything runs.
    pub(crate) fn check(&self) -> Result<(), crate::error::UsageError> {
        super::repeat::check(self.repeat)?;
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
    /// Live status line on stderr: auto, always, never [default: auto]
    ///
    /// The line shows the phase, read/write rate, ops, elapsed time and ETA; auto shows it
    /// only when stderr is a terminal.
    #[arg(long, value_name = "WHEN", help_heading = MEASURE)]
    pub progress: Option<String>,
    /// Keep a time series of every DUR of the run in the Result (1s, 200ms; at least 10ms)
    ///
    /// Each interval holds ops, bytes, IOPS, bandwidth and latency percentiles, and in a
    /// `run` what else the host did (steal, pressure, other processes on the run's CPUs).
    /// The stability figures (the spread and the trend of IOPS and bandwidth) come from
    /// these intervals; without this option `run` keeps a series for them alone on a
    /// default grid (1s, a fifth of a --time under 5s, 200ms for a run bounded by count),
    /// not stored.
    #[arg(long = "status-interval", value_name = "DUR", help_heading = MEASURE)]
    pub status_interval: Option<String>,
    /// Print a line on stderr for every --status-interval while the run goes
    ///
    /// Each line has the time and the interval's read and write IOPS and bandwidth, from
    /// the workers' live counters (published 10 times a second).
    #[arg(long = "interval-print", help_heading = MEASURE)]
    pub interval_print: bool,
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
        if self.interval_print && status_interval.is_none() {
            crate::bail_usage!(
                "--interval-print prints every --status-interval: add --status-interval DUR (e.g. 1s)"
            );
        }
        Ok(Watch {
            live,
            status_interval,
            print_intervals: self.interval_print,
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
        let b = Both::try_parse_from(["x", "--format", "csv", "--repeat", "3", "--keep"]).unwrap();
        assert_eq!(b.results.format().unwrap(), Format::Csv);
        assert!(b.study.keep && !b.study.fresh && b.study.repeat == 3);
        b.study.check().unwrap();
        let b = Both::try_parse_from(["x", "--output-format", "xml", "--repeat", "0"]).unwrap();
        assert_eq!(
            b.results.format().unwrap_err().0,
            "unknown --output-format 'xml': expected text, json or csv"
        );
        assert_eq!(
            b.study.check().unwrap_err().0,
            "bad --repeat 0: must be at least 1"
        );
        let b = Both::try_parse_from(["x", "--output-format", "json"]).unwrap();
        assert_eq!(b.results.format().unwrap(), Format::Json);
        assert!(Both::try_parse_from(["x", "--output-format", "json", "--format", "csv"]).is_err());
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
            let a = WatchArgs { progress: None, status_interval: Some(text.clone()), interval_print: false };
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
        Some(
            e @ (crate::job::EngineKind::Mmap
            | crate::job::EngineKind::Null
            | crate::job::EngineKind::Falloc
            | crate::job::EngineKind::Ftruncate),
        ) => {
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
    /// Rate limit in I/Os per second (per thread, or see --rate-scope); R,W[,T] per direction
    ///
    /// One value paces all I/Os together. READS,WRITES[,TRIMS] paces each direction to its
    /// own rate, an empty field leaving that direction unlimited: `500,100`, `,100` (writes
    /// only); not for a workload or a replay. A workload counts its data I/O calls, a replay
    /// every call.
    #[arg(long = "rate-iops", value_name = "N", help_heading = HOW)]
    pub rate_iops: Option<String>,
    /// Rate limit in bytes per second (per thread, or see --rate-scope); R,W[,T] per direction
    ///
    /// One value paces reads and writes together; READS,WRITES[,TRIMS] paces each direction
    /// to its own rate (`--rate-bytes 10m,2m`); not for a workload or a replay.
    #[arg(long = "rate-bytes", value_name = "SIZE", help_heading = HOW)]
    pub rate_bytes: Option<String>,
    /// Whom the rate limit applies to: thread (each) or total (divided among all threads)
    #[arg(long = "rate-scope", value_name = "SCOPE", help_heading = HOW)]
    pub rate_scope: Option<String>,
}

impl RateArgs {
    /// The limit as a workload or a replay takes it (`run` feeds the same strings through
    /// the Job parameter table).
    pub(crate) fn limit(&self) -> Result<crate::job::RateLimit, crate::error::UsageError> {
        // A workload's steps and a replay's calls are not reads or writes one by one.
        let one = |v: &str, flag: &str, bare| {
            if v.contains(',') {
                crate::bail_usage!(
                    "{flag} {v}: per-direction rates (READS,WRITES) apply to fsbench run and fio jobs; a workload or a replay takes one rate"
                );
            }
            crate::units::parse_size_as(v, bare, flag)
        };
        let mut rate = crate::job::RateLimit::default();
        if let Some(n) = &self.rate_iops {
            rate.iops = Some(one(n, "--rate-iops", crate::units::BareUnit::Count)?);
        }
        if let Some(b) = &self.rate_bytes {
            rate.bytes_per_sec = Some(one(b, "--rate-bytes", crate::units::BareUnit::Bytes)?);
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

/// A directory of interval logs (`what`: the option that names it), made when absent; logs
/// of an earlier run in it (`files`) are kept unless --force: they are not replaced quietly.
pub(crate) fn open_log_dir(
    path: &std::path::Path,
    what: &str,
    files: &[&str],
    force: bool,
) -> anyhow::Result<crate::output::ResultsDir> {
    let dir = crate::output::ResultsDir::open(path, force)?;
    for name in files {
        let there = std::fs::symlink_metadata(dir.join(name)).is_ok();
        let refused = if there && !force {
            Err(crate::usage!(
                "{what} {}: {name} is already there: name a new directory, or add --force to replace the logs",
                path.display()
            ))
        } else {
            dir.check(name)
        };
        if let Err(e) = refused {
            dir.abandon();
            return Err(e.into());
        }
    }
    Ok(dir)
}
