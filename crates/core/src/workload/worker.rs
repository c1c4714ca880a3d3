//! A workload process: `fsbench __worker` with a `Workload` spec (see `runner::drive`) loads
//! the same workload the parent loaded, maps the parent's shared arena (inherited memfd), runs
//! its thread instances through the runner's driver and prints their outcomes as JSON.

use super::interp::{Shared, ThreadId, ThreadOutcome};
use super::shared::{Arena, Layout};
use super::Source;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct WorkerSpec {
    pub source: Source,
    pub process: usize,
    pub instance: u64,
    /// Arena progress slot of this process's first thread.
    pub slot_base: usize,
    pub arena_fd: i32,
    pub layout: Layout,
    /// The engine the threads issue their system calls through.
    #[serde(default)]
    pub engine: crate::job::EngineKind,
    /// The run's rate limit (`--rate-iops`, `--rate-bytes`, `--rate-scope`).
    #[serde(default)]
    pub rate: crate::job::RateLimit,
    /// The parent's `--status-interval` (ns): the threads keep the same intervals.
    #[serde(default)]
    pub status_interval_ns: Option<u64>,
    /// The parent's `--ramp` (ns): how long the threads run before their counts start.
    #[serde(default)]
    pub ramp_ns: Option<u64>,
    /// The parent's `--ramp-bytes`: how many bytes each thread moves before its counts start.
    #[serde(default)]
    pub ramp_bytes: u64,
}

/// What every thread instance is given besides the workload: its engine, the rate limit and
/// the trace's file table (when the run is traced).
#[derive(Clone)]
pub(super) struct Setup {
    pub engine: crate::job::EngineKind,
    pub rate: crate::job::RateLimit,
    pub trace_files: Option<crate::trace::TraceFiles>,
    /// The `--status-interval` grid (ns) the threads keep their intervals on.
    pub interval_ns: Option<u64>,
    /// `--trace`: the session the threads' rings go back to.
    pub trace: Option<std::sync::Arc<crate::trace::TraceSession>>,
    /// `--ramp`: the warm-up each thread runs before its counts start.
    pub ramp: Option<std::time::Duration>,
    /// `--ramp-bytes`: the bytes each thread moves as a warm-up before its counts start.
    pub ramp_bytes: u64,
}

/// Stack of each workload thread: flowops recurse only through composites (at most 8 deep),
/// and the limit is what the pre-flight memory check counts per thread.
pub const THREAD_STACK: usize = 512 << 10;

/// The one place a workload thread instance is run (threads of a workload process and
/// `--in-process` threads alike): waits at the driver's gate, then runs the interpreter
/// (whose thread passes the arena's start barrier in the runner's loop).
pub(super) fn body(
    model: std::sync::Arc<super::model::Model>,
    layouts: std::sync::Arc<Vec<super::fileset::SetLayout>>,
    arena: std::sync::Arc<Arena>,
    setup: Setup,
    id: ThreadId,
) -> crate::runner::drive::Body<ThreadOutcome> {
    Box::new(move |gate| {
        if !gate.arrive_and_wait() {
            return None;
        }
        let sh = Shared {
            model: &model,
            layouts: &layouts,
            arena: &arena,
            engine: setup.engine,
            rate: setup.rate,
            trace_files: setup.trace_files,
            interval_ns: setup.interval_ns,
            trace: setup.trace,
            ramp: setup.ramp,
            ramp_bytes: setup.ramp_bytes,
        };
        let spec = &model.processes[id.process].threads[id.thread];
        Some(super::interp::run_thread(&sh, spec, id))
    })
}

/// Child side of a `Workload` spec.
pub fn child(spec: WorkerSpec) -> Result<()> {
    let model = super::load_source(&spec.source)?;
    let layouts = model
        .filesets
        .iter()
        .map(super::fileset::layout)
        .collect::<Result<Vec<_>>>()?;
    let arena = Arena::attach(spec.arena_fd, spec.layout).context("mapping the shared arena")?;
    let p = &model.processes[spec.process];
    if p.nice != 0 {
        // SAFETY: adjusting our own priority.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, p.nice) };
    }
    let mut ids = Vec::new();
    let mut slot = spec.slot_base;
    for (ti, t) in p.threads.iter().enumerate() {
        for tinst in 0..t.instances {
            ids.push(ThreadId {
                process: spec.process,
                process_instance: spec.instance,
                thread: ti,
                thread_instance: tinst,
                slot,
            });
            slot += 1;
        }
    }
    let (model, layouts, arena) = (
        std::sync::Arc::new(model),
        std::sync::Arc::new(layouts),
        std::sync::Arc::new(arena),
    );
    let n = ids.len();
    // A traced run's worker process finds that out from its environment.
    let trace = crate::trace::TraceSession::from_env();
    let setup = Setup {
        engine: spec.engine,
        rate: spec.rate,
        trace_files: super::interp::trace_files(&layouts, trace.is_some()),
        interval_ns: spec.status_interval_ns,
        trace,
        ramp: spec.ramp_ns.map(std::time::Duration::from_nanos),
        ramp_bytes: spec.ramp_bytes,
    };
    let bodies = ids.into_iter().map(|id| {
        (
            "wml".to_string(),
            body(
                model.clone(),
                layouts.clone(),
                arena.clone(),
                setup.clone(),
                id,
            ),
        )
    });
    let crew = match crate::runner::drive::start_threads(
        bodies,
        THREAD_STACK,
        &crate::runner::drive::spawn_thread,
    ) {
        Ok(c) => c,
        Err(f) => {
            // End the run: the threads started in other processes see the stop flag, and
            // the parent reports that the processes failed to start.
            arena.ctl().stop.store(
                super::shared::STOP_NORMAL,
                std::sync::atomic::Ordering::SeqCst,
            );
            arena.wake_everyone();
            anyhow::bail!(
                "starting thread {} of {n} in a workload process: {}",
                f.index + 1,
                f.error
            );
        }
    };
    // The cross-process start is the arena's barrier (every thread of every process ready,
    // then the parent's go), which each thread passes as the start gate of its runner loop.
    crew.open(|_| true);
    let outcomes = crew.join()?;
    crate::runner::drive::send_outcomes(&outcomes)
}
