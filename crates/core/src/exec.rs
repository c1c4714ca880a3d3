//! The one place a front end's point (a Job, or a loaded workload) becomes a Result: on this
//! host through the runner (or the workload engine), or, when mpirun started fsbench with
//! several ranks, as one distributed run on every rank whose aggregate comes back to rank 0
//! (`crate::mpi`, which implements [`Ranks`]). Sweeps, suites, `run`-like commands, `replay` and
//! `workload` call the [`Executor`] they were given and know nothing else about MPI; so does
//! a suite's backup study, whose phases the executor runs (a tree per rank on ranks).

use crate::backup::{BackupPlan, PhaseSink};
use crate::job::CachePolicy;
use crate::job::Job;
use crate::observe::{Observe, Observer};
use crate::result::RunResult;
use crate::workload::model::Model;
use crate::workload::run::Options;
use crate::workload::Source;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Runs each point on every rank of a distributed run (implemented by the MPI driver).
pub trait Ranks {
    /// The Job as one distributed run; `fresh`: each rank first removes the file an earlier
    /// point of this command created at its target (a sweep's writes start from new files);
    /// `observe`: what every rank observes beside its part (`--iostat` once per host, `--trace`
    /// per rank), merged into the one Result.
    fn run_job(&self, job: &Job, fresh: bool, observe: &Observe) -> anyhow::Result<RunResult>;
    /// A raw point on a file target: every rank makes a loop device of `need` bytes over a
    /// backing file in its own directory (`crate::sweep::rawdev`), runs the Job on it, and
    /// keeps it for later points until [`Ranks::cleanup`]. When some rank has none (not root,
    /// say), the error is a `rawdev::NoRawDevice` with the reason: the point is skipped.
    fn run_job_on_loop_devices(
        &self,
        job: &Job,
        fresh: bool,
        observe: &Observe,
        need: u64,
    ) -> anyhow::Result<RunResult>;
    /// The workload as one distributed run, each rank in a directory of its own.
    fn run_workload(
        &self,
        src: &Source,
        model: &Model,
        opts: &Options,
    ) -> anyhow::Result<RunResult>;
    /// A suite's backup study in `dir` on every rank, each rank with a tree of its own, every
    /// phase started at one barrier; each phase's one Result (every rank's summed, a row per
    /// rank) goes to `sink`.
    fn run_backup(
        &self,
        dir: &Path,
        plan: &BackupPlan,
        caches: &[CachePolicy],
        sink: PhaseSink<'_>,
    ) -> anyhow::Result<()>;
    /// A trace replay as one distributed run, each rank on scratch files of its own in
    /// `opts.dir`/rank-NNNNN; `trace` may hold `{rank}` (each rank's own trace); `observe`
    /// as for [`Ranks::run_job`].
    fn run_replay(
        &self,
        trace: &Path,
        opts: &crate::replay::ReplayOptions,
        observe: &Observe,
    ) -> anyhow::Result<RunResult>;
    /// mdtest's phases of `plan` (planned for [`Ranks::size`] ranks; `argv` its command
    /// line) on every rank, each phase started together.
    fn run_mdtest(&self, plan: &crate::mdtest::Plan, argv: &[String]) -> anyhow::Result<RunResult>;
    /// The Job as one distributed run spread over the ranks as `spread` says, whatever the
    /// command's own distributed flags (a command whose phases each have a layout of their
    /// own); what each rank wrote is kept for later points until [`Ranks::cleanup`].
    fn run_job_spread(&self, job: &Job, spread: &Spread) -> anyhow::Result<RunResult>;
    /// mdtest's phases of `plan` as [`Ranks::run_mdtest`], in the directory `within`, which
    /// the caller made (every rank sees it) and removes: a command that runs mdtest's phases
    /// one at a time on the same items.
    fn run_mdtest_within(
        &self,
        plan: &crate::mdtest::Plan,
        argv: &[String],
        within: &Path,
    ) -> anyhow::Result<RunResult>;
    /// IO500's find over the directory `top` (the caller made it; every rank sees it), every
    /// rank walking every directory and looking at its share of the entries
    /// (`crate::io500::find::Share`), all started at one barrier: the walk's Result (every
    /// rank's entries over the time from the first start to the last end) and each rank's
    /// part, in rank order.
    fn run_find(
        &self,
        top: &Path,
        query: &crate::io500::find::Query,
    ) -> anyhow::Result<(RunResult, Vec<crate::result::Io500FindRank>)>;
    /// Every rank removes what the points left behind for later points (files kept between
    /// the points of a sweep), unless `keep`.
    fn cleanup(&self, keep: bool);
    /// The number of ranks.
    fn size(&self) -> u32;
    /// Whether the ranks share one file (`--shared-file`) rather than each having its own.
    fn shared_file(&self) -> bool;
}

/// The directory of one rank's file: PATH.d/rank-NNNNN.
pub fn rank_dir(path: &Path, rank: u32) -> PathBuf {
    parent_dir(path).join(format!("rank-{rank:05}"))
}

/// PATH.d: the directory that holds the ranks' directories.
pub fn parent_dir(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".d");
    PathBuf::from(s)
}

/// One rank's file: PATH.d/rank-NNNNN/NAME (NAME is PATH's last component).
pub fn rank_file(path: &Path, rank: u32) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "f".into());
    rank_dir(path, rank).join(name)
}

/// How a Job is spread over the ranks ([`Ranks::run_job_spread`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Spread {
    /// One file every rank shares, in I/O-sized blocks interleaved by rank (else a file per
    /// rank).
    pub shared_strided: bool,
    /// A Job that only reads reads what another rank wrote (`--reorder-ranks`).
    pub shift_reads: bool,
    /// Every rank stops this many seconds after the start barrier.
    pub stonewall_s: Option<f64>,
}

/// Where a point runs.
#[derive(Clone, Default)]
pub enum Executor {
    /// On this host.
    #[default]
    Local,
    /// On every rank of a distributed run (this process is rank 0; built only with MPI).
    Ranks(Rc<dyn Ranks>),
}

impl Executor {
    /// The Result of one Job, with what `observe` asked for seen beside it.
    pub fn run_job(&self, job: &Job, fresh: bool, observe: &Observe) -> anyhow::Result<RunResult> {
        match self {
            Executor::Local => {
                let observer = Observer::start(observe, job)?;
                let outcome = crate::runner::run(job, &observer.watching(&observe.watch))?;
                let mut result = RunResult::from_outcome(job, &outcome);
                observer.finish(&mut result, outcome.elapsed_s)?;
                Ok(result)
            }
            Executor::Ranks(r) => r.run_job(job, fresh, observe),
        }
    }

    /// Jobs started at one instant on this host (each after its delay), each over its part
    /// of its targets (fio's jobs that no stonewall separates): what each run measured, for the front end to
    /// report one by one or as one figure. Observers other than `watch` are not started.
    pub fn run_together(
        &self,
        jobs: &[crate::runner::together::Start],
        watch: &crate::runner::live::Watching,
    ) -> anyhow::Result<Vec<crate::runner::together::Together>> {
        match self {
            Executor::Local => Ok(crate::runner::together::run_together(jobs, watch)),
            Executor::Ranks(_) => crate::bail_usage!(
                "jobs that run at the same time (or from an offset) run on one host: separate them with stonewall to run them under mpirun"
            ),
        }
    }

    /// The Result of one loaded workload.
    pub fn run_workload(
        &self,
        src: &Source,
        model: &Model,
        opts: &Options,
    ) -> anyhow::Result<RunResult> {
        match self {
            Executor::Local => crate::workload::run::execute(src, model, opts),
            Executor::Ranks(r) => r.run_workload(src, model, opts),
        }
    }

    /// A suite's backup study in `dir`: on this host its one tree, on ranks a tree per rank;
    /// each phase's Result goes to `sink`. `observe` (device samples around each phase) is
    /// taken on this host only; the suite refuses it on ranks.
    pub(crate) fn run_backup(
        &self,
        dir: &Path,
        plan: &BackupPlan,
        caches: &[CachePolicy],
        observe: &Observe,
        sink: PhaseSink<'_>,
    ) -> anyhow::Result<()> {
        match self {
            Executor::Local => crate::backup::run_phases(
                dir,
                plan,
                caches,
                &crate::backup::sync_issuer(),
                observe,
                sink,
            ),
            Executor::Ranks(r) => r.run_backup(dir, plan, caches, sink),
        }
    }

    /// The Result of replaying the trace at `trace` with `opts`, with what `observe` asked
    /// for seen beside it (on this host: the devices under `opts.dir`, one trace ring per
    /// replay thread).
    pub fn run_replay(
        &self,
        trace: &Path,
        opts: &crate::replay::ReplayOptions,
        observe: &Observe,
    ) -> anyhow::Result<RunResult> {
        match self {
            Executor::Local => LocalReplays::prepare(trace, opts)?.run(false, opts, observe),
            Executor::Ranks(r) => r.run_replay(trace, opts, observe),
        }
    }

    /// The trace at `trace` with its scratch files made once, to replay several times on
    /// them (`--repeat`); on this host only.
    pub fn prepare_replays(
        &self,
        trace: &Path,
        opts: &crate::replay::ReplayOptions,
    ) -> anyhow::Result<LocalReplays> {
        match self {
            Executor::Local => LocalReplays::prepare(trace, opts),
            Executor::Ranks(_) => crate::bail_usage!(
                "--repeat runs on one host: under mpirun run the command once per repetition"
            ),
        }
    }

    /// Remove what the points left on the ranks for later points (nothing to do locally:
    /// the front end tracks its own files).
    pub fn cleanup(&self, keep: bool) {
        if let Executor::Ranks(r) = self {
            r.cleanup(keep);
        }
    }

    /// Whether the points run on ranks that share one file (`--shared-file`).
    pub(crate) fn shared_file(&self) -> bool {
        match self {
            Executor::Local => false,
            Executor::Ranks(r) => r.shared_file(),
        }
    }

    /// The number of ranks of a distributed run (None: on this host).
    pub fn ranks(&self) -> Option<u32> {
        match self {
            Executor::Local => None,
            Executor::Ranks(r) => Some(r.size()),
        }
    }
}

/// A trace read and its scratch files made, on this host: each [`LocalReplays::run`] replays
/// it on the same files. The files go when this is dropped, unless kept.
pub struct LocalReplays {
    origin: String,
    files: crate::replay::Prepared,
}

impl LocalReplays {
    fn prepare(trace: &Path, opts: &crate::replay::ReplayOptions) -> anyhow::Result<Self> {
        let parsed = crate::trace::format::read_file(trace)?;
        let files = crate::replay::prepare(&parsed, opts)?;
        Ok(LocalReplays {
            origin: trace.display().to_string(),
            files,
        })
    }

    /// One replay, with what `observe` asked for seen beside it (the devices under
    /// `opts.dir`, one trace ring per replay thread); `again`: another replay follows.
    pub fn run(
        &mut self,
        again: bool,
        opts: &crate::replay::ReplayOptions,
        observe: &Observe,
    ) -> anyhow::Result<RunResult> {
        let scope = crate::observe::Scope {
            targets: vec![opts.dir.clone()],
            workers: self.files.thread_count(),
            processes: false,
        };
        let observer = Observer::start_for(observe, &scope)?;
        let replayed = crate::replay::run_prepared(
            &mut self.files,
            again,
            &self.origin,
            opts,
            None,
            &observer.watching(&observe.watch),
        )?;
        let mut result = crate::replay::result_of(&opts.name, replayed.outcome, replayed.parts);
        let elapsed_s = result.total.elapsed_s;
        observer.finish(&mut result, elapsed_s)?;
        Ok(result)
    }
}
