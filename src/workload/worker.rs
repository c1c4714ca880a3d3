//! A workload process: `fsbench __wml_worker` reads a [`WorkerSpec`] on stdin, loads the same
//! workload the parent loaded, maps the parent's shared arena (inherited memfd), runs its
//! thread instances as threads and prints their outcomes as JSON on stdout.

use super::interp::{run_thread, Shared, ThreadId};
use super::shared::{Arena, Layout};
use super::Source;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

#[derive(Serialize, Deserialize)]
pub struct WorkerSpec {
    pub source: Source,
    pub process: usize,
    pub instance: u64,
    /// Arena progress slot of this process's first thread.
    pub slot_base: usize,
    pub arena_fd: i32,
    pub layout: Layout,
    /// PID of the `fsbench workload` that started us: if it is gone (even before we could
    /// ask for the parent-death signal), exit at once.
    pub parent_pid: u32,
    /// The engine the threads issue their system calls through.
    #[serde(default)]
    pub engine: crate::job::EngineKind,
}

/// Stack of each workload thread: flowops recurse only through composites (at most 8 deep),
/// and the limit is what the pre-flight memory check counts per thread.
pub const THREAD_STACK: usize = 512 << 10;

pub fn worker_main() -> Result<()> {
    crate::runner::signal::install();
    // Until the spec names the parent, die with whoever started us.
    crate::guard::die_with_parent(None);
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    let spec: WorkerSpec =
        serde_json::from_str(text.trim()).context("reading the workload worker spec")?;
    // If the parent dies, do not keep running unsupervised.
    crate::guard::die_with_parent(Some(spec.parent_pid));
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
    let sh = Shared {
        model: &model,
        layouts: &layouts,
        arena: &arena,
        engine: spec.engine,
    };
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
    let outcomes = std::thread::scope(|s| -> Result<Vec<_>> {
        let mut hs = Vec::new();
        let mut failed = None;
        for id in &ids {
            let sh = &sh;
            let spec = &p.threads[id.thread];
            let id = *id;
            match std::thread::Builder::new()
                .name("wml".into())
                .stack_size(THREAD_STACK)
                .spawn_scoped(s, move || run_thread(sh, spec, id))
            {
                Ok(h) => hs.push(h),
                Err(e) => {
                    failed = Some(anyhow::anyhow!(
                        "starting thread {} of {} in a workload process: {e}",
                        hs.len() + 1,
                        ids.len()
                    ));
                    break;
                }
            }
        }
        if failed.is_some() {
            // End the run: the threads already started (here and in other processes) see
            // the stop flag, and the parent reports that the processes failed to start.
            arena.ctl().stop.store(
                super::shared::STOP_NORMAL,
                std::sync::atomic::Ordering::SeqCst,
            );
            arena.wake_everyone();
        }
        let joined = hs
            .into_iter()
            .map(|h| h.join())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| anyhow::anyhow!("a workload thread panicked"));
        match failed {
            Some(e) => Err(e),
            None => joined,
        }
    })?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &outcomes)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}
