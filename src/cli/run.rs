//! `fsbench run`: one Job from flags, or from a TOML job file with flags overriding it.

use super::args::{HOW, SAFETY, WHAT, WHERE};
use crate::job::params::{self, Front};
use crate::job::{EngineKind, Job};
use crate::report::{ReportOptions, Runs};
use crate::units::RateUnit;
use crate::{bail_usage, usage};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Default)]
#[command(
    mut_arg("format", |a| super::args::format_help::<Runs>(a)),
    after_help = EXAMPLES
)]
pub(crate) struct RunArgs {
    /// A job file (*.toml) and/or target files or block devices (one user each)
    #[arg(value_name = "JOB.toml|TARGET")]
    pub inputs: Vec<PathBuf>,
    /// read, write, rw, randread, randwrite, randrw, mmap*, *trim, trimwrite [default: read]
    ///
    /// mmapread and mmapwrite go through the mmap engine; trim and randtrim discard blocks
    /// (hole punches in a file, BLKDISCARD on a device); trimwrite trims a block, then
    /// writes it.
    #[arg(long, value_name = "ACCESS", help_heading = WHAT)]
    pub rw: Option<String>,
    /// Bytes per I/O (512, 4k, 1m), or READS,WRITES[,TRIMS] (4k,64k) [default: 8k]
    #[arg(long, value_name = "SIZE", help_heading = WHAT)]
    pub bs: Option<String>,
    /// File size [default: an existing file's size; a new file: --count x --bs x threads]
    ///
    /// Random offsets are drawn from it; sequential threads each take a slice.
    #[arg(long, value_name = "SIZE", help_heading = WHAT)]
    pub size: Option<String>,
    /// I/Os per thread (k = 1024) [default: one pass over the file, or until --time]
    #[arg(long, value_name = "N", help_heading = WHAT)]
    pub count: Option<String>,
    /// Stop after this long (10s, 2m) [default: no time limit]
    #[arg(long, value_name = "DUR", help_heading = WHAT)]
    pub time: Option<String>,
    /// Threads per target [default: 1]
    #[arg(long, value_name = "N", help_heading = WHAT)]
    pub threads: Option<u32>,
    /// Read percentage for rw / randrw [default: 50]
    #[arg(long = "rwmix-read", value_name = "PCT", help_heading = WHAT)]
    pub rwmix_read: Option<u8>,
    /// buffered, direct, dsync, discovered[=SIZE], concurrent, raw [default: buffered]
    ///
    /// discovered: I/Os larger than SIZE (default 256k) go direct, the others buffered.
    #[arg(long, value_name = "POLICY", help_heading = HOW)]
    pub cache: Option<String>,
    /// sync, mmap, uring, null, falloc, ftruncate [default: sync]
    ///
    /// null: every I/O completes at once with no system call and the target is never
    /// opened, so the run shows what fsbench itself costs per I/O. falloc: each I/O is a
    /// fallocate of its range (writes allocate, reads allocate keeping the size, trims punch
    /// holes). ftruncate: each write sets the file's size to its offset (writes only).
    #[arg(long, value_name = "ENGINE", help_heading = HOW)]
    pub engine: Option<String>,
    /// I/Os in flight per thread (uring, null) [default: 1]
    #[arg(long, value_name = "N", help_heading = HOW)]
    pub qd: Option<u32>,
    #[command(flatten)]
    pub job: super::jobflags::JobFlags,
    /// Keep the files fsbench created
    #[arg(long, help_heading = SAFETY)]
    pub keep: bool,
    /// Allow writing to files and devices fsbench did not create
    #[arg(long, help_heading = SAFETY)]
    pub force: bool,
    /// Job name in reports
    #[arg(long, value_name = "NAME", help_heading = WHERE)]
    pub name: Option<String>,
    /// Record the generations storage acknowledged in this new file (implies --verify)
    ///
    /// `fsbench verify FILE... --journal PATH` checks the files against it after a crash.
    #[arg(long, value_name = "PATH", help_heading = super::jobflags::CHECKING)]
    pub journal: Option<PathBuf>,
    #[command(flatten)]
    pub results: super::args::ResultsArgs,
    /// Per-thread lines
    #[arg(short = 'v', long, help_heading = WHERE)]
    pub verbose: bool,
    /// Only the total line
    #[arg(short = 's', long, help_heading = WHERE)]
    pub summary: bool,
    /// Throughput always in MiB/s (default: KiB/MiB/GiB/s as fits, with MB/s beside it)
    #[arg(long, help_heading = WHERE)]
    pub mb: bool,
    #[command(flatten)]
    pub observe: super::observe::ObserveArgs,
    #[command(flatten)]
    pub repeat: super::repeat::RepeatArg,
    #[command(flatten)]
    pub dist: super::ranks::DistArgs,
}

const EXAMPLES: &str = "\
Examples:
  fsbench run --rw randread --bs 4k --cache direct --time 10s data.f
  fsbench run job.toml --threads 4 --output result.json --format json
  fsbench run --rw randread --bs 4k --time 5s --repeat 5 data.f";

/// Start from the job file named among the inputs (if any); the other inputs are targets.
fn job_from_inputs(inputs: &[PathBuf]) -> anyhow::Result<Job> {
    let mut job = Job::default();
    let mut targets = Vec::new();
    for input in inputs {
        if input.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(input)
                .map_err(|e| usage!("cannot read job file {}: {e}", input.display()))?;
            job = Job::from_toml(&text, &input.display().to_string())?;
        } else {
            // clap refuses '-5' unless it comes after `--`; keep such a name a path.
            targets.push(crate::job::dash_safe(input));
        }
    }
    if !targets.is_empty() {
        job.targets = targets;
    }
    Ok(job)
}

/// The flags that take a value, as (parameter, value), in the order they apply. clap keeps
/// them typed for `--help` and its own checks; the table does the one conversion to the Job.
fn valued_flags(a: &RunArgs) -> Vec<(&'static str, Option<String>)> {
    let s = |v: &Option<String>| v.clone();
    let n = |v: Option<u64>| v.map(|x| x.to_string());
    let mut flags = vec![
        ("bs", s(&a.bs)),
        ("size", s(&a.size)),
        ("count", s(&a.count)),
        ("time", s(&a.time)),
        ("threads", n(a.threads.map(u64::from))),
        ("rwmix", n(a.rwmix_read.map(u64::from))),
        ("cache", s(&a.cache)),
        ("qd", n(a.qd.map(u64::from))),
    ];
    flags.extend(a.job.settings().into_iter().map(|(k, v)| (k, Some(v))));
    flags.extend([
        ("name", s(&a.name)),
        (
            "journal",
            a.journal.as_ref().map(|p| p.display().to_string()),
        ),
    ]);
    flags
}

/// run's own switches (the Job flags' are among [`valued_flags`]): each one given turns its
/// parameter on; one not given leaves the job file's value.
fn switches(a: &RunArgs) -> [(&'static str, bool, &'static str); 2] {
    [("keep", a.keep, "true"), ("force", a.force, "true")]
}

/// `--rw` and `--engine`: an mmap access pattern chooses the mmap engine, so another
/// `--engine` contradicts it.
fn set_access_engine(job: &mut Job, a: &RunArgs) -> Result<(), crate::error::UsageError> {
    if let Some(rw) = &a.rw {
        params::get("rw").set(job, rw, Front::Flag)?;
    }
    if let Some(e) = &a.engine {
        let mmap = job.engine == EngineKind::Mmap;
        params::get("engine").set(job, e, Front::Flag)?;
        if mmap && job.engine != EngineKind::Mmap {
            bail_usage!("--rw mmapread/mmapwrite use the mmap engine; drop --engine");
        }
    }
    Ok(())
}

/// Build the Job: start from the job file (if any), then apply flags.
pub(crate) fn build_job(a: &RunArgs) -> anyhow::Result<Job> {
    let mut job = job_from_inputs(&a.inputs)?;
    set_access_engine(&mut job, a)?;
    for (name, value) in valued_flags(a) {
        if let Some(v) = value {
            params::get(name).set(&mut job, &v, Front::Flag)?;
        }
    }
    for (name, given, value) in switches(a) {
        if given {
            params::get(name).set(&mut job, value, Front::Flag)?;
        }
    }
    if a.name.is_none() && job.name == "job" {
        job.name = format!("run {}", job.access.name());
    }
    // A run with neither count nor time covers the file once.
    job.validate()?;
    Ok(job)
}

pub(crate) fn report_options(a: &RunArgs) -> ReportOptions {
    ReportOptions {
        unit: if a.mb {
            RateUnit::MebiBytes
        } else {
            RateUnit::Auto
        },
        summary_only: a.summary,
        per_thread: a.verbose,
    }
}

/// `fsbench run`: one Job, on this host or, under mpirun, as one distributed run on every
/// rank (the executor decides; rank 0 alone prints and stores the Result).
pub(crate) fn main(a: RunArgs, exec: crate::exec::Executor) -> anyhow::Result<i32> {
    let format = a.results.format()?;
    let percentiles = a.results.percentiles()?;
    let repeat = a.repeat.count()?;
    let job = build_job(&a)?;
    crate::output::check_output(a.results.output.as_deref(), a.force)?;
    let observe = a.observe.settings()?;
    let logs = a.results.open_log(&observe.watch, a.force)?;
    let ran = super::repeat::run_job(&exec, &job, &observe, repeat);
    if let (Err(_), Some(dir)) = (&ran, &logs) {
        // Refused before it ran: a log directory this run made goes again.
        dir.abandon();
    }
    let mut results = [ran?];
    super::args::ResultsArgs::add_percentiles(percentiles.as_deref(), &mut results);
    if let Some(dir) = &logs {
        super::args::ResultsArgs::write_logs(dir, &results[0])?;
    }
    super::output::emit(
        &results,
        format,
        &report_options(&a),
        a.results.output.as_deref(),
        a.force,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults `run --help` prints are the Job's own defaults.
    #[test]
    fn help_prints_the_jobs_defaults() {
        use clap::CommandFactory;
        let mut cmd = crate::cli::Cli::command();
        let help = cmd
            .find_subcommand_mut("run")
            .expect("run subcommand")
            .render_long_help()
            .to_string();
        let j = Job::default();
        let flat: String = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for want in [
            format!("trimwrite [default: {}]", j.access.name()),
            format!("(4k,64k) [default: {}k]", j.block_size / 1024),
            format!("[default: {}]", j.threads),
            format!("randrw [default: {}]", j.read_pct),
            format!("raw [default: {}]", j.cache.name()),
            format!("falloc, ftruncate [default: {}]", j.engine.name()),
            format!("(uring, null) [default: {}]", j.queue_depth),
            format!("N times [default: {}]", j.repeats),
        ] {
            assert!(flat.contains(&want), "run --help lacks {want:?}:\n{help}");
        }
    }

    /// Every flag `run` feeds through the table names a parameter there, under the flag
    /// the table records for it.
    #[test]
    fn every_flag_names_a_table_parameter() {
        let a = RunArgs::default();
        let names = valued_flags(&a)
            .into_iter()
            .map(|(n, _)| n)
            .chain(switches(&a).into_iter().map(|(n, _, _)| n))
            .chain(["rw", "engine"]);
        for n in names {
            let p = params::find(n).unwrap_or_else(|| panic!("{n} not in the table"));
            assert!(p.flag.is_some(), "{n} has no run flag in the table");
        }
    }

    #[test]
    fn flags_go_through_the_table() {
        let a = RunArgs {
            inputs: vec!["f".into()],
            rw: Some("mmap_write".into()),
            count: Some("2k".into()),
            threads: Some(3),
            job: super::super::jobflags::JobFlags {
                no_invalidate: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let j = build_job(&a).unwrap();
        assert_eq!(
            (j.access, j.engine),
            (crate::job::Access::Write, EngineKind::Mmap)
        );
        assert_eq!(
            (j.io_count, j.threads, j.invalidate),
            (Some(2048), 3, false)
        );
        assert_eq!(j.name, "run write");
        let a = RunArgs {
            engine: Some("uring".into()),
            ..a
        };
        assert!(build_job(&a)
            .unwrap_err()
            .to_string()
            .contains("drop --engine"));
    }
}
