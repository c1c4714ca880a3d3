//! `--repeat N` of `run`, `vx`, `fio`, `workload` and `replay`: the same thing run N times,
//! one Result with every run's headline figures and their median and 95 % interval
//! (`RunResult::of_repeats`). A Job's runs share the files the first run prepared
//! ([`SameFiles`]); `fsbench ab` uses the same file keeping.

use crate::exec::Executor;
use crate::job::Job;
use crate::observe::Observe;
use crate::result::RunResult;
use crate::sweep::Created;
use crate::usage;
use std::path::PathBuf;

/// Refuse `--repeat 0`.
pub(crate) fn check(n: u32) -> Result<u32, crate::error::UsageError> {
    if n == 0 {
        return Err(usage!("bad --repeat 0: must be at least 1"));
    }
    Ok(n)
}

/// Take `--repeat N` (or `--repeat=N`) out of a command line that is not clap's (vx, fio).
pub(crate) fn extract(args: &[String]) -> Result<(u32, Vec<String>), crate::error::UsageError> {
    let mut n = 1;
    let mut rest = Vec::with_capacity(args.len());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = match a.strip_prefix("--repeat") {
            Some("") => it
                .next()
                .cloned()
                .ok_or_else(|| usage!("--repeat needs a number of runs"))?,
            Some(v) if v.starts_with('=') => v[1..].to_string(),
            _ => {
                rest.push(a.clone());
                continue;
            }
        };
        n = value
            .parse::<u32>()
            .map_err(|_| usage!("bad --repeat '{value}': give a number of runs, 1 or more"))?;
        check(n)?;
    }
    Ok((n, rest))
}

/// Refuse what cannot be repeated: a trace file records one run, and on MPI ranks every
/// rank's files are its own.
pub(crate) fn refuse_with(
    n: u32,
    observe: &Observe,
    exec: &Executor,
) -> Result<(), crate::error::UsageError> {
    if n > 1 && observe.trace.is_some() {
        return Err(usage!(
            "--trace records one run: drop --trace or --repeat {n}"
        ));
    }
    if n > 1 && exec.ranks().is_some() {
        return Err(usage!(
            "--repeat runs on one host: under mpirun run the command {n} times"
        ));
    }
    Ok(())
}

/// The targets of a Job kept between its runs: the first run prepares them, the later runs
/// use them as they are, and what the first run created is removed when this is dropped
/// (after the last run, or on an error), unless the user asked to keep it; only while the
/// name still holds the file that was created.
pub(crate) struct SameFiles {
    /// Each target and whether something was there before the first run.
    targets: Vec<(PathBuf, bool)>,
    created: Vec<Created>,
    keep: bool,
}

impl SameFiles {
    pub(crate) fn new(job: &Job) -> SameFiles {
        let targets = job
            .targets
            .iter()
            .map(|t| {
                let was = std::fs::symlink_metadata(t).is_ok()
                    && crate::leftover::left_by_dead_run(t).is_none();
                (t.clone(), was)
            })
            .collect();
        SameFiles {
            targets,
            created: Vec::new(),
            keep: job.keep,
        }
    }

    /// The Job to run each time: it keeps its files for the next run.
    pub(crate) fn job(job: &Job) -> Job {
        let mut j = job.clone();
        j.keep = true;
        j
    }

    /// After a run: remember the files it created, marked as this process's to remove (so
    /// a run after a kill removes them; `crate::leftover`).
    pub(crate) fn after_run(&mut self) {
        for (path, was) in &self.targets {
            if *was || self.created.iter().any(|c| &c.path == path) {
                continue;
            }
            if let Some((dev, ino, marked)) = crate::sweep::regular_identity(path) {
                crate::leftover::mark_run_at(path, dev, ino, !self.keep);
                self.created.push(Created {
                    path: path.clone(),
                    dev,
                    ino,
                    marked,
                });
            }
        }
    }
}

impl Drop for SameFiles {
    fn drop(&mut self) {
        for c in self.created.drain(..) {
            if self.keep {
                crate::leftover::mark_run_at(&c.path, c.dev, c.ino, false);
            } else {
                crate::sweep::remove_created(&c);
            }
        }
    }
}

/// Whether to stop repeating: Ctrl-C, or a run that did not complete.
fn stop_after(r: &RunResult) -> bool {
    crate::runner::signal::interrupted() || r.status != crate::runner::RunStatus::Complete
}

/// Run `one` up to `n` times (fewer when a run is interrupted or fails) and give one Result.
pub(crate) fn repeated(
    n: u32,
    mut one: impl FnMut() -> anyhow::Result<RunResult>,
) -> anyhow::Result<RunResult> {
    let mut runs = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let r = one()?;
        let stop = stop_after(&r);
        runs.push(r);
        if stop {
            break;
        }
    }
    if n == 1 {
        return Ok(runs.pop().expect("one run"));
    }
    let done = runs.len();
    // Runs that disagree by more than 10 % say so in `explain`, as a sweep's repeats do.
    crate::explain::mark_spread(runs.iter_mut());
    let mut r = RunResult::of_repeats(runs).expect("at least one run");
    if done < n as usize {
        r.notes
            .push(format!("--repeat {n}: stopped after {done} runs"));
    }
    Ok(r)
}

/// A Job run `n` times on the same files.
pub(crate) fn run_job(
    exec: &Executor,
    job: &Job,
    observe: &Observe,
    n: u32,
) -> anyhow::Result<RunResult> {
    if n == 1 {
        return exec.run_job(job, false, observe);
    }
    refuse_with(n, observe, exec)?;
    if let Some(j) = &job.journal {
        crate::bail_usage!(
            "--journal {} records one run: drop --journal or --repeat {n}",
            j.display()
        );
    }
    let mut files = SameFiles::new(job);
    let each = SameFiles::job(job);
    let mut r = repeated(n, || {
        let r = exec.run_job(&each, false, observe);
        files.after_run();
        r
    })?;
    // The Result records the Job as the user gave it.
    r.job = Some(job.clone());
    Ok(r)
}

/// A trace replayed `n` times on the same scratch files: made and filled once, each replay
/// starting cold on them; removed after the last unless `--keep`.
pub(crate) fn run_replay(
    exec: &Executor,
    trace: &std::path::Path,
    opts: &crate::replay::ReplayOptions,
    observe: &Observe,
    n: u32,
) -> anyhow::Result<RunResult> {
    if n == 1 {
        return exec.run_replay(trace, opts, observe);
    }
    refuse_with(n, observe, exec)?;
    let mut replays = exec.prepare_replays(trace, opts)?;
    let mut done = 0;
    repeated(n, || {
        done += 1;
        replays.run(done < n, opts, observe)
    })
}

/// `--repeat N` as clap's flag (`run`, `workload`, `replay`).
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct RepeatArg {
    /// Run it N times: one Result with the median, 95 % interval and range of each figure
    #[arg(long, value_name = "N", help_heading = super::args::MEASURE)]
    pub repeat: Option<u32>,
}

impl RepeatArg {
    /// The number of runs, checked (1 when not given).
    pub(crate) fn count(&self) -> Result<u32, crate::error::UsageError> {
        check(self.repeat.unwrap_or(1))
    }
}

/// A workload run `n` times on the same filesets: the first run lays them out and keeps them,
/// the later runs reuse them (Filebench's `reuse`), and the last removes them unless `--keep`.
pub(crate) fn run_workload(
    exec: &Executor,
    src: &crate::workload::Source,
    model: &crate::workload::model::Model,
    opts: &crate::workload::run::Options,
    n: u32,
) -> anyhow::Result<RunResult> {
    if n == 1 {
        return exec.run_workload(src, model, opts);
    }
    let first = crate::workload::run::Options {
        keep: true,
        ..opts.clone()
    };
    let mut reused = model.clone();
    for f in &mut reused.filesets {
        f.reuse = true;
    }
    // Whether the first run makes each fileset's root (what a cleanup after a stop removes).
    let made_roots: Vec<bool> = model
        .filesets
        .iter()
        .map(|f| std::fs::symlink_metadata(&f.root).is_err())
        .collect();
    let mut done = 0;
    let r = repeated(n, || {
        done += 1;
        match done {
            1 => exec.run_workload(src, model, &first),
            k if k < n => exec.run_workload(src, &reused, &first),
            _ => exec.run_workload(src, &reused, opts),
        }
    });
    if done < n && !opts.keep {
        // Stopped early (an error, Ctrl-C): the filesets the runs kept for the next go now.
        let kept = crate::workload::run::LaidOut::kept(made_roots);
        crate::workload::run::remove_laid_out(&reused, &kept);
    }
    let mut r = r?;
    if !opts.keep {
        // The runs before the last kept the filesets for the next, and said so; none are now.
        r.notes.retain(|n| !n.starts_with("kept the filesets"));
    }
    Ok(r)
}
