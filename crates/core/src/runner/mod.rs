//! The runner: prepares targets, starts workers (threads, or processes on request) held at a
//! start barrier, stops them on count, time, Ctrl-C or error, and gathers their `Stats`.
//! Only the runner does I/O.

mod datacheck;
pub mod drive;
pub(crate) mod host_ticks;
pub mod issue;
pub(crate) mod limits;
pub mod live;
pub(crate) mod live_line;
pub mod mark;
pub mod opgen;
mod outcome;
pub(crate) mod pace;
pub(crate) mod pick;
pub mod process;
pub mod read;
pub(crate) mod share;
pub mod signal;
pub(crate) mod source;
pub(crate) mod space;
pub(crate) mod stability;
pub(crate) mod steady;
pub mod target;
pub mod together;
pub(crate) mod verify;
pub mod worker;

use crate::job::{Job, WorkerMode};
pub use crate::result::RunStatus;
use crate::stats::Stats;
use anyhow::Result;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
pub use target::{Plan, RankPart};
pub use worker::{IoFailure, ThreadOutcome};

/// Everything a run measured, before formatting.
pub struct RunOutcome {
    pub plan: Plan,
    pub threads: Vec<ThreadOutcome>,
    pub status: RunStatus,
    pub failures: Vec<IoFailure>,
    pub elapsed_s: f64,
    pub started_unix_s: f64,
    /// Probe data measured by the runner (e.g. `extents` of the files a run wrote).
    pub probes: serde_json::Map<String, serde_json::Value>,
    /// The `--status-interval` grid the workers' intervals are on (None: none kept).
    pub status_interval_ns: Option<u64>,
    /// What `--steady-state` saw (None: not asked for).
    pub steady: Option<crate::result::SteadyReport>,
    /// What else the host did over the timed window (None: nothing was timed).
    pub host: Option<crate::probe::host::HostReport>,
    /// The grid of intervals the workers kept for the stability figures alone, when the run
    /// keeps no `--status-interval` series (the intervals are not stored).
    pub stability_grid_ns: Option<u64>,
    /// The host at every edge of the interval grid (`host_ticks`).
    pub host_ticks: Vec<crate::probe::host::HostTick>,
}

impl RunOutcome {
    pub fn total(&self) -> Stats {
        let mut t = Stats::default();
        for th in &self.threads {
            t += &th.stats;
        }
        // Workers start together at the barrier: the run lasts as long as the longest one.
        if t.elapsed_s == 0.0 {
            t.elapsed_s = self.elapsed_s;
        }
        t
    }
}

/// The io_uring checks before the run, on the ring and targets this job will use.
fn uring_preflight(job: &Job, plan: &target::Plan) -> Result<Vec<String>> {
    use crate::engine::uring::{preflight, RingCheck, RingTarget};
    use std::os::fd::AsFd;
    // Opened like every target: no final symbolic link followed unless --force.
    let first = plan
        .targets
        .first()
        .and_then(|t| mark::open_existing(&t.path, false, job.force).ok());
    preflight(&RingCheck {
        depth: job.effective_depth(),
        block_size: job.io_size(),
        sqpoll: job.sqpoll,
        hipri: job.hipri,
        cache: plan.cache,
        targets: plan
            .targets
            .iter()
            .map(|t| RingTarget {
                path: &t.path,
                size: t.size,
                dio_align: t.dio_align,
            })
            .collect(),
        first_file: first.as_ref().map(|f| f.as_fd()),
    })
}

/// Run one Job from start to end: prepare, time, clean up.
///
/// A refusal before any I/O (what the user named, or its state) is a usage error. An error
/// while preparing (layout, reservation) or during the timed run is a `Failed` outcome that
/// names the file and offset, so front ends still write their Result.
pub(crate) fn run(job: &Job, watch: &live::Watching) -> Result<RunOutcome> {
    run_gated(job, None, None, watch)
}

/// Hooks of a run that is one part of a larger one (a rank of a distributed run,
/// `crate::mpi`): `start` is called once every worker is prepared, before the gate opens, and
/// returns false to call the run off; it gets the [`drive::Opener`] of the workers' gate, so
/// whoever decides the start can release the workers the moment it knows (a rank: from the
/// thread that left the start barrier). `after_io` is called when the timed I/O has ended,
/// before anything is probed or removed (the other ranks may still be writing a shared file).
pub struct Gate {
    pub start: StartHook,
    pub after_io: AfterIoHook,
}

/// A [`Gate`]'s `start`: called with the workers' gate once they are prepared; false calls
/// the run off.
pub(crate) type StartHook = Box<dyn FnOnce(drive::Opener) -> bool + Send>;
/// A [`Gate`]'s `after_io`: called when the timed I/O has ended.
pub type AfterIoHook = Box<dyn FnOnce() + Send>;

impl Gate {
    /// The hooks of a run of its own: start at once, nothing to wait for after the I/O.
    pub(crate) fn none() -> Gate {
        Gate {
            start: Box::new(|_| true),
            after_io: Box::new(|| {}),
        }
    }
}

/// `run` with the hooks of a [`Gate`] (None: a run of its own), watched as `watch` says,
/// covering `part` of a shared target (None: all of every target).
pub fn run_gated(
    job: &Job,
    part: Option<RankPart>,
    gate: Option<Gate>,
    watch: &live::Watching,
) -> Result<RunOutcome> {
    run_prepared_by(job, part, gate, None, watch, worker::Worker::prepare)
}

/// [`run_gated`] for one of several runs of a group that hold some targets together
/// (`group`: the targets more than one of them names).
pub(crate) fn run_in_group(
    job: &Job,
    part: Option<RankPart>,
    gate: Option<Gate>,
    group: Option<&share::GroupTargets>,
    watch: &live::Watching,
) -> Result<RunOutcome> {
    run_prepared_by(job, part, gate, group, watch, worker::Worker::prepare)
}

/// [`run`] with the workers (threads) prepared by `prepare`: the statistics' tests put an
/// engine with known service times in.
#[cfg(any(test, feature = "test-support"))]
pub fn run_with_workers(
    job: &Job,
    watch: &live::Watching,
    prepare: impl PrepareWorker,
) -> Result<RunOutcome> {
    run_prepared_by(job, None, None, None, watch, prepare)
}

/// [`run_gated`] with its worker threads prepared by `prepare`.
fn run_prepared_by(
    job: &Job,
    part: Option<RankPart>,
    gate: Option<Gate>,
    group: Option<&share::GroupTargets>,
    watch: &live::Watching,
    prepare: impl PrepareWorker,
) -> Result<RunOutcome> {
    // A part of a larger run (a rank) hands no intervals of its own to its Result.
    let part_of_larger = gate.is_some();
    let Gate { start, after_io } = gate.unwrap_or_else(Gate::none);
    job.validate()?;
    if job.steady_state.is_some() && part.is_some() {
        // Each rank would settle on its own and stop the others' shared run unevenly.
        crate::bail_usage!(
            "--steady-state judges the workers of one process: it is not taken under mpirun"
        );
    }
    // A steady-state run is timed by its longest time (`--steady-state-max`).
    let steady_timed;
    let job = match &job.steady_state {
        Some(_) => {
            steady_timed = Job {
                time_s: job.time_limit_s(),
                ..job.clone()
            };
            &steady_timed
        }
        None => job,
    };
    limits::check(job)?;
    signal::install();
    let started_unix_s = now_unix_s();
    // The live line (`--progress`): the workers' counters and the line beside them.
    let workers = job.targets.len() * job.threads as usize;
    // Worker processes publish into a shared mapping of the board.
    let board = if job.steady_state.is_some() {
        // The steady-state observer reads the workers' counters there (threads only).
        Some(Arc::new(live::Board::new(workers)))
    } else if job.workers == WorkerMode::Threads {
        watch.open_board(workers)
    } else {
        watch.open_shared_board(workers)
    };
    let display = live_line::Display::start(
        watch,
        board.clone(),
        job.workers == WorkerMode::Threads || board.as_ref().is_some_and(|b| b.share().is_some()),
        live_line::Bounds {
            time_s: job.time_s.map(|t| t + job.ramp_s.unwrap_or(0.0)),
            ops: None,
        },
    );
    let phase = |p: live_line::Phase| {
        if let Some(d) = &display {
            d.phase(p)
        }
    };
    let (plan, mut cleanup) = match target::prepare_watched(job, part, board.as_deref(), group) {
        Ok(x) => x,
        Err(e) if crate::error::is_usage(&e) => return Err(e),
        Err(e) => return Ok(prep_failed(job, e, started_unix_s)),
    };
    let mut plan = plan;
    let ids = cleanup.ids();
    // Anything refused or failed from here to the start still leaves no created file
    // behind, even with --keep: nothing was measured in it.
    let abandon = |cleanup: &mut target::Cleanup| {
        cleanup.keep = false;
        cleanup.remove_existing = false;
        cleanup.finish();
    };
    if job.engine == crate::job::EngineKind::Uring {
        match uring_preflight(job, &plan) {
            Ok(notes) => plan.notes.extend(notes),
            Err(e) => {
                abandon(&mut cleanup);
                return Err(e);
            }
        }
    }
    if job.drop_cache {
        for h in &cleanup.held {
            target::evict_file(&h.file);
        }
        target::drop_caches(&[], &mut plan.notes);
    } else if job.invalidate {
        for h in &cleanup.held {
            target::evict_file(&h.file);
        }
    }
    // --verify: the generation table (and the journal), before any worker starts.
    let verify = if job.verifying() && !job.space.reserve_only {
        match worker::verify::VerifyShared::create(job, &plan) {
            Ok(v) => {
                if job.workers == WorkerMode::Threads {
                    // No other process needs to open it: mapped, it can go now.
                    v.table.unlink();
                }
                Some(Arc::new(v))
            }
            Err(e) => {
                abandon(&mut cleanup);
                return Err(e);
            }
        }
    } else {
        None
    };
    // Page-cache residency and allocation of each target as the clock starts (`explain`).
    let cache_before = page_cache(&cleanup.held);
    if let Some(d) = &display {
        d.set_total_ops(expected_ops(job, &plan));
    }
    phase(if watch.warm_up {
        live_line::Phase::WarmUp
    } else {
        live_line::Phase::Running
    });
    let started_unix_s = now_unix_s();
    let mut steady = None;
    // The host is sampled at the edges of the timed window, and at each interval's edge by
    // a thread of its own, never by a worker.
    let host = (!job.space.reserve_only).then(|| crate::probe::host::HostSampler::start(&job.cpus));
    // Without a --status-interval series the workers keep one on a default grid for the
    // stability figures (a rank's intervals are not gathered: none there).
    let stability_grid_ns = (watch.interval_ns().is_none() && !part_of_larger)
        .then(|| stability::default_grid(job.time_s).as_nanos() as u64);
    let mut ticker = None;
    let (threads, elapsed_s) = if job.space.reserve_only {
        (Vec::new(), 0.0)
    } else {
        let mut workers_watch = watch.for_workers(board.clone());
        if workers_watch.interval_ns.is_none() {
            workers_watch.interval_ns = stability_grid_ns;
            workers_watch.counts_only = true;
        }
        // The host ticker starts as the workers are let go; their grid starts after the
        // warm-up.
        let grid = workers_watch.interval_ns;
        let own_complete = job.workers == WorkerMode::Threads;
        let ramp = std::time::Duration::from_secs_f64(job.ramp_s.unwrap_or(0.0));
        let start_ticker = || match (grid, &host) {
            (Some(g), Some(h)) => host_ticks::HostTicker::start(
                h,
                own_complete,
                ramp,
                std::time::Duration::from_nanos(g),
            ),
            _ => None,
        };
        let observer = match (&job.steady_state, &board) {
            (Some(spec), Some(b)) => {
                let stop = Arc::new(AtomicBool::new(false));
                workers_watch.stop = Some(stop.clone());
                workers_watch.publish_ns = Some(steady::PUBLISH_NS);
                let ramp = std::time::Duration::from_secs_f64(job.ramp_s.unwrap_or(0.0));
                let limit = job.time_s.map(std::time::Duration::from_secs_f64);
                match steady::Observer::start(spec.clone(), ramp, limit, b.clone(), stop) {
                    Ok(o) => Some(o),
                    Err(e) => {
                        abandon(&mut cleanup);
                        anyhow::bail!("cannot start the steady-state observer: {e}");
                    }
                }
            }
            _ => None,
        };
        let ran = match job.workers {
            WorkerMode::Threads => run_threads_spawning(
                job,
                &plan,
                &ids,
                all_workers(job),
                |opener| {
                    let go = start(opener);
                    if go {
                        ticker = start_ticker();
                    }
                    go
                },
                drive::spawn_thread,
                prepare,
                verify.clone(),
                &workers_watch,
            ),
            _ if !start(drive::Opener::none()) => {
                Err(anyhow::anyhow!("the run was called off before it started"))
            }
            _ => {
                process::run_processes(job, &plan, &ids, verify.as_deref(), &workers_watch, || {
                    ticker = start_ticker()
                })
            }
        };
        steady = observer.and_then(steady::Observer::finish);
        match ran {
            Ok(r) => r,
            Err(e) => {
                if let Some(v) = &verify {
                    v.discard_journal();
                }
                abandon(&mut cleanup);
                return Err(e);
            }
        }
    };
    let host_ticks = ticker
        .map(host_ticks::HostTicker::finish)
        .unwrap_or_default();
    let host = host.map(|h| h.finish());
    after_io();
    // The table goes (unmapped, and removed if a worker process had to open it).
    drop(verify);
    let (status, failures) = settle(&threads, signal::interrupted());
    // Extent count of every file the run wrote, before anything is removed. Not after a
    // signal: mapping a large file's extents takes long, and under mpirun a signalled rank is
    // killed a second later, so the Result comes first.
    let mut probes = serde_json::Map::new();
    let touched_files = job.engine != crate::job::EngineKind::Null && !signal::interrupted();
    if touched_files
        && (job.access.read_pct(job.read_pct) < 100
            || job.space.reservation.is_some()
            || job.engine.changes_space())
    {
        let files: Vec<&std::path::Path> = plan
            .targets
            .iter()
            .filter(|t| t.kind == target::TargetKind::File)
            .map(|t| t.path.as_path())
            .collect();
        if !files.is_empty() {
            probes.insert("extents".into(), crate::probe::frag::extents_probe(&files));
        }
    }
    // What the shaped writes left in the files (untimed; before anything is removed).
    if touched_files && job.shapes_data() && threads.iter().any(|t| t.stats.write_ops > 0) {
        probes.insert("data".into(), datacheck::probe(job, &plan, &cleanup.held));
    }
    if !job.space.reserve_only {
        probes.insert(
            "page_cache".into(),
            page_cache_probe(&cleanup.held, cache_before, page_cache(&cleanup.held)),
        );
    }
    // Post-run space management, through the descriptors held since prepare.
    if job.space.flags.trim || job.space.flags.noreserve {
        for (t, h) in plan.targets.iter().zip(&cleanup.held) {
            if t.kind == target::TargetKind::File {
                let _ = space::trim(&h.file);
            }
        }
    }
    // Removal (created files unless kept; with --remove also marked ones), then the locks go.
    phase(live_line::Phase::Cleanup);
    plan.notes.extend(cleanup.finish());
    if let Some(d) = display {
        d.finish();
    }
    Ok(RunOutcome {
        plan,
        threads,
        status,
        failures,
        elapsed_s,
        started_unix_s,
        probes,
        status_interval_ns: watch.interval_ns(),
        steady,
        host,
        stability_grid_ns,
        host_ticks,
    })
}

/// The ops the whole run will do when it is bounded by count or by one pass over its
/// targets (0 when only time bounds it): the live line's ETA.
fn expected_ops(job: &Job, plan: &Plan) -> u64 {
    if job.time_s.is_some() && job.io_count.is_none() {
        return 0;
    }
    let threads = job.threads.max(1) as u64;
    let bs = job.block_size.max(1);
    plan.targets
        .iter()
        .map(|t| {
            let per_thread = job.io_count.unwrap_or_else(|| {
                let skip = job.skip.filter(|_| !job.access.is_random()).unwrap_or(0);
                opgen::seq_pass_ios(t.size / threads, bs, skip)
            });
            per_thread * threads
        })
        .sum::<u64>()
        .saturating_mul(job.repeats.max(1) as u64)
}

/// Lay out a Job's targets for reading and keep them, timing nothing: the files the ranks of
/// a distributed run read from each other (`--reorder-ranks`). Returns the targets fsbench
/// created now, with their identity, so the caller removes exactly those later.
pub fn lay_out_only(job: &Job) -> Result<Vec<(std::path::PathBuf, mark::FileId)>> {
    job.validate()?;
    let mut kept = job.clone();
    kept.keep = true;
    let (_plan, mut cleanup) = target::prepare(&kept)?;
    let made = cleanup
        .held
        .iter()
        .filter(|h| h.created)
        .map(|h| (h.path.clone(), h.id))
        .collect();
    cleanup.finish();
    Ok(made)
}

/// Remove a file [`lay_out_only`] created, if its path still names that file; a note when
/// it could not be removed.
pub fn remove_laid_out(path: &std::path::Path, id: mark::FileId) -> Option<String> {
    match mark::FileId::of_path(path) {
        Ok(now) if now == id => std::fs::remove_file(path)
            .err()
            .map(|e| format!("could not remove {}: {e}", path.display())),
        Ok(_) => Some(format!(
            "left {}: it no longer names the file fsbench created",
            path.display()
        )),
        Err(_) => None,
    }
}

/// Size, allocation and page-cache residency of each held target (None: not a regular file).
fn page_cache(held: &[target::Held]) -> Vec<Option<crate::probe::cache::FileCache>> {
    held.iter()
        .map(|h| crate::probe::cache::of_file(&h.file))
        .collect()
}

/// The `page_cache` probe: each regular-file target before and after the run, with the
/// memory size and write-back delay they are judged against.
fn page_cache_probe(
    held: &[target::Held],
    before: Vec<Option<crate::probe::cache::FileCache>>,
    after: Vec<Option<crate::probe::cache::FileCache>>,
) -> serde_json::Value {
    let targets: Vec<serde_json::Value> = held
        .iter()
        .zip(before.into_iter().zip(after))
        .filter_map(|(h, (b, a))| {
            Some(serde_json::json!({
                "path": h.path.display().to_string(),
                "before": b?,
                "after": a?,
            }))
        })
        .collect();
    serde_json::json!({
        "targets": targets,
        "mem_total_bytes": crate::probe::cache::mem_total_bytes(),
        "dirty_expire_s": crate::probe::cache::dirty_expire_s(),
    })
}

/// How a run ended, from its workers' outcomes: any failure makes it `Failed` (and every
/// failure is reported), else an interrupt makes it `Partial`.
fn settle(threads: &[ThreadOutcome], interrupted: bool) -> (RunStatus, Vec<IoFailure>) {
    let failures: Vec<IoFailure> = threads.iter().filter_map(|t| t.failure.clone()).collect();
    let status = if !failures.is_empty() {
        RunStatus::Failed
    } else if interrupted {
        RunStatus::Partial
    } else {
        RunStatus::Complete
    };
    (status, failures)
}

fn now_unix_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The outcome of a preparation that failed after it started writing: no I/O was timed,
/// the failure names the file and offset, and what was created has been removed.
fn prep_failed(job: &Job, e: anyhow::Error, started_unix_s: f64) -> RunOutcome {
    let (path, offset, message) = match e.downcast_ref::<target::PrepError>() {
        Some(p) => (p.path.display().to_string(), p.offset, p.message.clone()),
        None => (
            job.targets
                .first()
                .map(|t| t.display().to_string())
                .unwrap_or_default(),
            None,
            format!("{e:#}"),
        ),
    };
    let failure = IoFailure {
        user: job
            .targets
            .iter()
            .position(|t| t.display().to_string() == path)
            .unwrap_or(0),
        thread: 0,
        path,
        offset,
        message: format!("preparing the target: {message}"),
    };
    say(&format!("fsbench: error: {failure}"));
    RunOutcome {
        plan: Plan {
            part: None,
            targets: Vec::new(),
            cache: job.cache,
            notes: Vec::new(),
        },
        threads: Vec::new(),
        status: RunStatus::Failed,
        failures: vec![failure],
        elapsed_s: 0.0,
        started_unix_s,
        probes: serde_json::Map::new(),
        status_interval_ns: None,
        steady: None,
        host: None,
        stability_grid_ns: None,
        host_ticks: Vec::new(),
    }
}

/// One line on stderr. A stderr that cannot be written (a full disk, a closed pipe) must not
/// turn a failed run into a panic that skips writing the Result and cleaning up, as
/// `eprintln!` would.
///
/// While the live line is shown, the line goes above it (`live_line::println`).
pub fn say(line: &str) {
    live_line::println(line);
}

/// (user, thread) pairs of the whole job.
pub(crate) fn all_workers(job: &Job) -> Vec<(usize, u32)> {
    (0..job.targets.len())
        .flat_map(|u| (0..job.threads).map(move |t| (u, t)))
        .collect()
}

/// Stack of a worker thread: the I/O loop needs little, and thousands of workers must not
/// reserve the default 2 MiB each.
pub(crate) const WORKER_STACK: usize = 512 << 10;

/// Run the given workers as threads of this process. `go` is called once every worker is
/// prepared, before the gate opens (process mode uses it to wait for the parent); when it
/// returns false nothing runs. `ids` are the (device, inode) of the prepared targets: a worker
/// whose path now names another file refuses to start.
pub(crate) fn run_threads_with(
    job: &Job,
    plan: &Plan,
    ids: &[mark::FileId],
    which: Vec<(usize, u32)>,
    go: impl FnOnce(drive::Opener) -> bool,
    verify: Option<Arc<worker::verify::VerifyShared>>,
    watch: &live::WorkerWatch,
) -> Result<(Vec<ThreadOutcome>, f64)> {
    run_threads_spawning(
        job,
        plan,
        ids,
        which,
        go,
        drive::spawn_thread,
        worker::Worker::prepare,
        verify,
        watch,
    )
}

/// How a worker is prepared: `Worker::prepare` in a run; tests put a mock engine in.
#[cfg(test)]
type Prepare = fn(
    &Job,
    &Plan,
    Option<mark::FileId>,
    usize,
    u32,
    Option<&Arc<worker::verify::VerifyShared>>,
) -> Result<worker::Worker, IoFailure>;

/// What prepares a worker (`Prepare`'s signature), shared by the worker threads.
pub trait PrepareWorker:
    Fn(
        &Job,
        &Plan,
        Option<mark::FileId>,
        usize,
        u32,
        Option<&Arc<worker::verify::VerifyShared>>,
    ) -> Result<worker::Worker, IoFailure>
    + Send
    + Sync
    + 'static
{
}

impl<T> PrepareWorker for T where
    T: Fn(
            &Job,
            &Plan,
            Option<mark::FileId>,
            usize,
            u32,
            Option<&Arc<worker::verify::VerifyShared>>,
        ) -> Result<worker::Worker, IoFailure>
        + Send
        + Sync
        + 'static
{
}

// why: `spawn` and `prepare` are the seams tests inject; callers use `run_threads_with`.
#[allow(clippy::too_many_arguments)]
fn run_threads_spawning<F>(
    job: &Job,
    plan: &Plan,
    ids: &[mark::FileId],
    which: Vec<(usize, u32)>,
    go: impl FnOnce(drive::Opener) -> bool,
    spawn: F,
    prepare: impl PrepareWorker,
    verify: Option<Arc<worker::verify::VerifyShared>>,
    watch: &live::WorkerWatch,
) -> Result<(Vec<ThreadOutcome>, f64)>
where
    F: Fn(
        std::thread::Builder,
        Box<dyn FnOnce() -> Option<ThreadOutcome> + Send>,
    ) -> std::io::Result<std::thread::JoinHandle<Option<ThreadOutcome>>>,
{
    if job.engine == crate::job::EngineKind::Mmap {
        // What the SIGBUS handler removes if a mapping fails: the files this run created
        // (with their identity at creation), unless kept.
        let created: Vec<(&std::path::Path, u64, u64)> = if job.keep {
            Vec::new()
        } else {
            plan.targets
                .iter()
                .zip(ids)
                .filter(|(t, _)| t.created)
                .map(|(t, id)| (t.path.as_path(), id.dev, id.ino))
                .collect()
        };
        crate::engine::sigbus::set_removals(&created);
    }
    let stop = watch
        .stop
        .clone()
        .unwrap_or_else(|| Arc::new(AtomicBool::new(false)));
    let n = which.len();
    let threads_per_user = job.threads;
    // One shared copy: a copy of the plan per worker is quadratic in the number of targets.
    let shared = Arc::new((job.clone(), plan.clone(), prepare));
    let bodies = which.iter().map(|&(user, thread)| {
        let shared = shared.clone();
        let id = ids.get(user).copied();
        let stop = stop.clone();
        let verify = verify.clone();
        let watch = watch.clone();
        let body: drive::Body<ThreadOutcome> = Box::new(move |gate| {
            let (job, plan, prepare) = &*shared;
            worker::private_fd_table();
            let prepared = place_worker(job)
                .map_err(|e| IoFailure {
                    user,
                    thread,
                    path: plan
                        .targets
                        .get(user)
                        .map(|t| t.path.display().to_string())
                        .unwrap_or_default(),
                    offset: None,
                    message: e,
                })
                .and_then(|()| prepare(job, plan, id, user, thread, verify.as_ref()))
                .map(|mut w| {
                    // What it publishes to, set before the gate (untimed).
                    w.watch(job, plan, user, thread, &watch);
                    w
                });
            if !gate.arrive_and_wait() {
                return None;
            }
            Some(match prepared {
                Ok(w) => w.run(&stop),
                Err(f) => {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    if let Some(v) = &verify {
                        // The others do not wait for this worker's writes to check theirs.
                        v.table.abort();
                        v.table.worker_done();
                    }
                    ThreadOutcome {
                        user,
                        thread,
                        stats: Stats::default(),
                        failure: Some(f),
                        verify: None,
                        intervals: Vec::new(),
                    }
                }
            })
        });
        (format!("fsbench-u{user}t{thread}"), body)
    });
    let crew = match drive::start_threads(bodies, WORKER_STACK, &spawn) {
        Ok(c) => c,
        Err(f) => {
            let (user, thread) = which[f.index];
            crate::bail_usage!(
                "cannot start worker thread {} of {n}: {}; use fewer threads or targets (or raise ulimit -u)",
                handles_len_plus_one(user, thread, threads_per_user),
                f.error
            );
        }
    };
    let Some(t0) = crew.open(go) else {
        crew.join()?;
        anyhow::bail!("the run was called off before it started");
    };
    let out = crew.join()?;
    Ok((out, t0.elapsed().as_secs_f64()))
}

/// Where and how the calling worker thread runs: bound to the job's CPUs, at its nice
/// value (each a system call at the thread's start, never on the I/O path).
fn place_worker(job: &Job) -> std::result::Result<(), String> {
    pin_worker(&job.cpus).map_err(|e| {
        format!(
            "cannot pin the worker to CPUs {}: {e}",
            crate::probe::host::cpu_list(&job.cpus)
        )
    })?;
    if let Some(n) = job.nice {
        // On Linux a nice value is the thread's own: "the process" here is this thread.
        rustix::process::setpriority_process(None, n.into())
            .map_err(|e| format!("cannot set the worker's nice value to {n}: {e}"))?;
    }
    Ok(())
}

/// Bind the calling worker thread to `cpus` (`--cpus`; empty: leave it where it may run).
fn pin_worker(cpus: &[usize]) -> std::io::Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    // SAFETY: cpu_set_t is a plain bit array; all zeros is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for &c in cpus {
        if c >= capacity {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: `c` is below the set's capacity, checked above.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn handles_len_plus_one(user: usize, thread: u32, threads: u32) -> u64 {
    user as u64 * threads as u64 + thread as u64 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_spawn_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let job = Job {
            targets: vec![dir.path().join("t")],
            access: crate::job::Access::Write,
            io_count: Some(4),
            threads: 8,
            block_size: 4096,
            ..Default::default()
        };
        let (plan, cleanup) = target::prepare(&job).unwrap();
        let ids = cleanup.ids();
        let count = std::sync::atomic::AtomicUsize::new(0);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let r = run_threads_spawning(
                    &job,
                    &plan,
                    &ids,
                    all_workers(&job),
                    |_| true,
                    |b, f| {
                        if count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 5 {
                            Err(std::io::Error::from_raw_os_error(libc::EAGAIN))
                        } else {
                            b.spawn(f)
                        }
                    },
                    worker::Worker::prepare,
                    None,
                    &Default::default(),
                );
                let _ = tx.send(r.map(|_| ()));
            });
            let r = rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .expect("no hang after a failed spawn");
            let e = r.unwrap_err();
            assert!(crate::error::is_usage(&e));
            assert!(e.to_string().contains("thread 6 of 8"), "{e}");
        });
        // Nothing was written by the five threads that were started.
        assert_eq!(std::fs::metadata(dir.path().join("t")).unwrap().len(), 0);
    }
}
