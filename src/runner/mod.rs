//! The runner: prepares targets, starts workers (threads, or processes on request) held at a
//! start barrier, stops them on count, time, Ctrl-C or error, and gathers their `Stats`.
//! Only the runner does I/O.

pub mod opgen;
pub mod pace;
pub mod process;
pub mod signal;
pub mod space;
pub mod target;
pub mod worker;

use crate::job::{Job, WorkerMode};
use crate::stats::Stats;
use anyhow::Result;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};
use std::time::Instant;
pub use target::Plan;
pub use worker::{IoFailure, ThreadOutcome};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Complete,
    /// Stopped early by Ctrl-C / SIGTERM: what was done is reported.
    Partial,
    /// An I/O error (or a full file system) ended the run.
    Failed,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Complete => "complete",
            RunStatus::Partial => "partial",
            RunStatus::Failed => "failed",
        }
    }
}

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

/// Run one Job from start to end: prepare, time, clean up.
pub fn run(job: &Job) -> Result<RunOutcome> {
    job.validate()?;
    signal::install();
    let (plan, cleanup) = target::prepare(job)?;
    let mut plan = plan;
    if job.engine == crate::job::EngineKind::Uring {
        let notes = crate::engine::uring::preflight(job, &plan)?;
        plan.notes.extend(notes);
    }
    if job.drop_cache {
        target::drop_caches(&job.targets, &mut plan.notes);
    } else if job.invalidate {
        for t in &plan.targets {
            let _ = target::evict(&t.path);
        }
    }
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let (threads, elapsed_s) = if job.space.reserve_only {
        (Vec::new(), 0.0)
    } else {
        match job.workers {
            WorkerMode::Threads => run_threads(job, &plan, all_workers(job))?,
            _ => process::run_processes(job, &plan)?,
        }
    };
    let failures: Vec<IoFailure> = threads.iter().filter_map(|t| t.failure.clone()).collect();
    let status = if !failures.is_empty() {
        RunStatus::Failed
    } else if signal::interrupted() {
        RunStatus::Partial
    } else {
        RunStatus::Complete
    };
    // Extent count of every file the run wrote, before anything is removed.
    let mut probes = serde_json::Map::new();
    if job.access.read_pct(job.read_pct) < 100 || job.space.reservation.is_some() {
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
    // Post-run space management and removal.
    for t in &plan.targets {
        if job.space.flags.trim || job.space.flags.noreserve {
            let _ = space::trim(&t.path);
        }
    }
    if job.remove {
        for t in &plan.targets {
            if t.kind == target::TargetKind::File
                && !t.created
                && (crate::safety::is_marked(&t.path) || job.force)
            {
                let _ = std::fs::remove_file(&t.path);
            }
        }
    }
    let mut cleanup = cleanup;
    if job.remove {
        cleanup.keep = false;
    }
    drop(cleanup);
    Ok(RunOutcome {
        plan,
        threads,
        status,
        failures,
        elapsed_s,
        started_unix_s,
        probes,
    })
}

/// (user, thread) pairs of the whole job.
pub fn all_workers(job: &Job) -> Vec<(usize, u32)> {
    (0..job.targets.len())
        .flat_map(|u| (0..job.threads).map(move |t| (u, t)))
        .collect()
}

/// Run the given workers as threads of this process. `go` is called once every worker is
/// prepared, before the barrier releases (process mode uses it to wait for the parent).
pub fn run_threads_with(
    job: &Job,
    plan: &Plan,
    which: Vec<(usize, u32)>,
    go: impl FnOnce(),
) -> Result<(Vec<ThreadOutcome>, f64)> {
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(which.len() + 1));
    let mut handles = Vec::with_capacity(which.len());
    for (user, thread) in which {
        let job = job.clone();
        let plan = plan.clone();
        let stop = stop.clone();
        let barrier = barrier.clone();
        let h = std::thread::Builder::new()
            .name(format!("fsbench-u{user}t{thread}"))
            .spawn(move || {
                let prepared = worker::Worker::prepare(&job, &plan, user, thread);
                barrier.wait();
                match prepared {
                    Ok(w) => w.run(&stop),
                    Err(f) => {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                        ThreadOutcome {
                            user,
                            thread,
                            stats: Stats::default(),
                            failure: Some(f),
                        }
                    }
                }
            })?;
        handles.push(h);
    }
    go();
    let t0 = Instant::now();
    barrier.wait();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(
            h.join()
                .map_err(|_| anyhow::anyhow!("a worker thread panicked"))?,
        );
    }
    Ok((out, t0.elapsed().as_secs_f64()))
}

fn run_threads(
    job: &Job,
    plan: &Plan,
    which: Vec<(usize, u32)>,
) -> Result<(Vec<ThreadOutcome>, f64)> {
    run_threads_with(job, plan, which, || {})
}
