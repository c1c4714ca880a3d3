//! `fsbench run`: one Job from flags, or from a TOML job file with flags overriding it.

use crate::job::params::{self, Front};
use crate::job::{EngineKind, Job};
use crate::report::ReportOptions;
use crate::units::RateUnit;
use crate::{bail_usage, usage};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Default)]
pub(crate) struct RunArgs {
    /// A job file (*.toml) and/or target files or block devices (one user each).
    #[arg(value_name = "JOB.toml|TARGET")]
    pub inputs: Vec<PathBuf>,
    /// read, write, rw, randread, randwrite, randrw, mmapread, mmapwrite [default: read]
    #[arg(long)]
    pub rw: Option<String>,
    /// Bytes per I/O (512, 4k, 1m) [default: 8k]
    #[arg(long)]
    pub bs: Option<String>,
    /// File size (random offsets are drawn from it; sequential threads each take a slice)
    /// [default: an existing file's size; a new file: --count x --bs x threads]
    #[arg(long)]
    pub size: Option<String>,
    /// I/Os per thread (k = 1024) [default: one pass over the file, or until --time]
    #[arg(long)]
    pub count: Option<String>,
    /// Stop after this long (10s, 2m) [default: no time limit]
    #[arg(long)]
    pub time: Option<String>,
    /// Warm up this long first (2s): the I/O runs but is left out of the Result; --time
    /// counts after it [default: none]
    #[arg(long)]
    pub ramp: Option<String>,
    /// Threads per target [default: 1]
    #[arg(long)]
    pub threads: Option<u32>,
    /// Read percentage for rw / randrw [default: 50]
    #[arg(long = "rwmix-read")]
    pub rwmix_read: Option<u8>,
    /// buffered, direct, dsync, discovered[=SIZE] (I/Os larger than SIZE, default 256k, go direct), concurrent, raw [default: buffered]
    #[arg(long)]
    pub cache: Option<String>,
    /// sync, mmap, uring, or null (every I/O completes at once with no system call and the
    /// target is never opened: what fsbench itself costs per I/O) [default: sync]
    #[arg(long)]
    pub engine: Option<String>,
    /// I/Os in flight per thread (uring, null) [default: 1]
    #[arg(long)]
    pub qd: Option<u32>,
    /// Repeat the I/O loop N times [default: 1]
    #[arg(long)]
    pub nrep: Option<u32>,
    /// Seed for random offsets
    #[arg(long)]
    pub seed: Option<u64>,
    /// Which blocks random I/O favours: uniform, zipf:THETA, pareto:H (H of the I/Os on the
    /// hottest 1-H of the blocks), normal:SIGMA% (around the middle of the file),
    /// zoned:P/R:P/R... (P % of the I/Os in the next R % of the file) [default: uniform]
    #[arg(long, value_name = "SPEC")]
    pub distribution: Option<String>,
    /// Random I/O touches every block exactly once per pass (per thread) instead of drawing
    /// with replacement [default: off]
    #[arg(long = "random-map")]
    pub random_map: bool,
    /// Bytes of every write, made anew for each write: zero, random, or 0xHEX repeated.
    /// These data options take writes, and not --verify: its blocks are self-describing from
    /// end to end (64-byte header, 8-byte stamp per 512-byte sector, derived payload)
    /// [default: random bytes made once per buffer]
    #[arg(long = "buffer-pattern", value_name = "zero|random|0xHEX")]
    pub buffer_pattern: Option<String>,
    /// Each written block compresses by about PCT %: random bytes, then a run of zeros (or of
    /// --buffer-pattern's bytes), per 4 KiB; the ratio delivered is measured after the run
    #[arg(long = "buffer-compress", value_name = "PCT")]
    pub buffer_compress: Option<String>,
    /// PCT % of written blocks repeat an earlier block's bytes; the share delivered is
    /// measured after the run
    #[arg(long, value_name = "PCT")]
    pub dedupe: Option<String>,
    /// fsync each file after writing it (timed)
    #[arg(long)]
    pub fsync: bool,
    /// Open with O_SYNC
    #[arg(long)]
    pub sync: bool,
    /// Open with O_DSYNC
    #[arg(long)]
    pub dsync: bool,
    /// Open with O_APPEND
    #[arg(long)]
    pub append: bool,
    /// Truncate the file before the run
    #[arg(long)]
    pub trunc: bool,
    /// posix_fadvise advice: noreuse, random, seq (comma-separated)
    #[arg(long)]
    pub advise: Option<String>,
    /// Extent size hint (XFS)
    #[arg(long)]
    pub extsize: Option<String>,
    /// Reserve space with fallocate
    #[arg(long)]
    pub reserve: Option<String>,
    /// Reservation flags: align, chgsiz, contig, noextend, noreserve, trim
    #[arg(long = "space-flags")]
    pub space_flags: Option<String>,
    /// Run users as processes: per-user or per-thread
    #[arg(long)]
    pub processes: Option<String>,
    /// mlock the I/O buffers
    #[arg(long)]
    pub mlock: bool,
    #[command(flatten)]
    pub rate: super::args::RateArgs,
    /// io_uring SQ polling
    #[arg(long)]
    pub sqpoll: bool,
    /// io_uring polled completions
    #[arg(long)]
    pub hipri: bool,
    /// Keep the files fsbench created
    #[arg(long)]
    pub keep: bool,
    /// Allow writing to files and devices fsbench did not create
    #[arg(long)]
    pub force: bool,
    /// Drop caches before the run (targets always; globally when root)
    #[arg(long = "drop-cache")]
    pub drop_cache: bool,
    /// Do not evict the targets' cached pages before timing (hot-cache runs)
    #[arg(long = "no-invalidate")]
    pub no_invalidate: bool,
    /// Remove each file after the run, even one kept earlier
    #[arg(long)]
    pub remove: bool,
    /// Job name in reports
    #[arg(long)]
    pub name: Option<String>,
    /// Write self-describing blocks, check reads of them, and read back every written block after the run
    #[arg(long)]
    pub verify: bool,
    /// With --verify: every N completed writes of a thread, read those blocks back and check them
    #[arg(long = "verify-backlog", value_name = "N")]
    pub verify_backlog: Option<String>,
    /// Record the generations storage acknowledged as durable in this new file (implies --verify)
    #[arg(long, value_name = "PATH")]
    pub journal: Option<PathBuf>,
    /// With --verify/--journal: fsync every N completed writes of a thread (acknowledges buffered writes)
    #[arg(long = "fsync-every", value_name = "N")]
    pub fsync_every: Option<String>,
    #[command(flatten)]
    pub results: super::args::ResultsArgs,
    /// Per-thread lines
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Only the total line
    #[arg(short = 's', long)]
    pub summary: bool,
    /// Throughput always in MiB/s (default: a readable KiB/MiB/GiB/s with MB/s beside it)
    #[arg(long)]
    pub mb: bool,
    #[command(flatten)]
    pub observe: super::observe::ObserveArgs,
    #[command(flatten)]
    pub dist: super::ranks::DistArgs,
}

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
    vec![
        ("bs", s(&a.bs)),
        ("size", s(&a.size)),
        ("count", s(&a.count)),
        ("time", s(&a.time)),
        ("ramp", s(&a.ramp)),
        ("threads", n(a.threads.map(u64::from))),
        ("rwmix", n(a.rwmix_read.map(u64::from))),
        ("cache", s(&a.cache)),
        ("qd", n(a.qd.map(u64::from))),
        ("nrep", n(a.nrep.map(u64::from))),
        ("seed", n(a.seed)),
        ("advise", s(&a.advise)),
        ("extsize", s(&a.extsize)),
        ("reserve", s(&a.reserve)),
        ("space_flags", s(&a.space_flags)),
        ("processes", s(&a.processes)),
        ("rate_iops", n(a.rate.rate_iops)),
        ("rate_bytes", s(&a.rate.rate_bytes)),
        ("rate_scope", s(&a.rate.rate_scope)),
        ("name", s(&a.name)),
        ("verify_backlog", s(&a.verify_backlog)),
        (
            "journal",
            a.journal.as_ref().map(|p| p.display().to_string()),
        ),
        ("fsync_every", s(&a.fsync_every)),
        ("distribution", s(&a.distribution)),
        ("buffer_pattern", s(&a.buffer_pattern)),
        ("buffer_compress", s(&a.buffer_compress)),
        ("dedupe", s(&a.dedupe)),
    ]
}

/// The switches: each one given turns its parameter on (off for `--no-invalidate`); one not
/// given leaves the job file's value.
fn switches(a: &RunArgs) -> [(&'static str, bool, &'static str); 15] {
    [
        ("fsync", a.fsync, "true"),
        ("sync", a.sync, "true"),
        ("dsync", a.dsync, "true"),
        ("append", a.append, "true"),
        ("trunc", a.trunc, "true"),
        ("mlock", a.mlock, "true"),
        ("sqpoll", a.sqpoll, "true"),
        ("hipri", a.hipri, "true"),
        ("keep", a.keep, "true"),
        ("force", a.force, "true"),
        ("drop_cache", a.drop_cache, "true"),
        ("remove", a.remove, "true"),
        ("invalidate", a.no_invalidate, "false"),
        ("verify", a.verify, "true"),
        ("random_map", a.random_map, "true"),
    ]
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
    let job = build_job(&a)?;
    crate::output::check_output(a.results.output.as_deref(), a.force)?;
    let result = exec.run_job(&job, false, &a.observe.settings()?)?;
    super::output::emit(
        &[result],
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
            format!("mmapwrite [default: {}]", j.access.name()),
            format!("1m) [default: {}k]", j.block_size / 1024),
            format!("[default: {}]", j.threads),
            format!("randrw [default: {}]", j.read_pct),
            format!("raw [default: {}]", j.cache.name()),
            format!("per I/O) [default: {}]", j.engine.name()),
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
            no_invalidate: true,
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
