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
}

pub fn worker_main() -> Result<()> {
    crate::runner::signal::install();
    // If the parent dies, do not keep running unsupervised.
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    let spec: WorkerSpec =
        serde_json::from_str(text.trim()).context("reading the workload worker spec")?;
    let model = super::load_source(&spec.source)?;
    let layouts: Vec<_> = model.filesets.iter().map(super::fileset::layout).collect();
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
    let outcomes = std::thread::scope(|s| {
        let hs: Vec<_> = ids
            .iter()
            .map(|id| {
                let sh = &sh;
                let spec = &p.threads[id.thread];
                let id = *id;
                s.spawn(move || run_thread(sh, spec, id))
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join())
            .collect::<Result<Vec<_>, _>>()
    })
    .map_err(|_| anyhow::anyhow!("a workload thread panicked"))?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &outcomes)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}
