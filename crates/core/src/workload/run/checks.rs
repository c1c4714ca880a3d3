//! Refusals before anything is created or started: more tasks than the limits allow, more
//! memory than is available, filesets whose preallocation would not fit.

use super::Options;
use crate::workload::fileset::{self, SetLayout};
use crate::workload::model::Model;
use crate::workload::worker::THREAD_STACK as WORKER_STACK;
use anyhow::Result;

/// Memory every workload thread needs besides its stack: the I/O buffer interp allocates.
fn thread_buffer(t: &crate::workload::model::ThreadSpec) -> u64 {
    fn max_io(fs: &[crate::workload::model::Flowop]) -> f64 {
        fs.iter()
            .map(|f| f.iosize.upper_hint().max(max_io(&f.inner)))
            .fold(0.0, f64::max)
    }
    let io = max_io(&t.flowops);
    let io = if io.is_finite() {
        io.max(0.0) as u64
    } else {
        u64::MAX
    };
    t.memsize.max(io).min(256 << 20)
}

/// Memory every workload thread needs whatever its I/O size: its stack and one latency
/// histogram per flowop (created before the start signal).
fn thread_fixed(t: &crate::workload::model::ThreadSpec) -> u64 {
    let hists = crate::workload::model::flatten(&t.flowops).len() * crate::stats::hist::HIST_BYTES;
    (WORKER_STACK + hists) as u64
}

fn read_limit(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// MemAvailable from /proc/meminfo, in bytes.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Refuse, before anything is created or started, a workload that cannot run here: more
/// processes and threads than the task limits allow, or more memory than is available.
pub(super) fn preflight(model: &Model, opts: &Options) -> Result<()> {
    let mut threads: u64 = 0;
    let mut procs: u64 = 0;
    let mut buffers: u64 = 0;
    for p in &model.processes {
        let per: u64 = p
            .threads
            .iter()
            .fold(0u64, |a, t| a.saturating_add(t.instances));
        threads = threads.saturating_add(p.instances.saturating_mul(per));
        procs = procs.saturating_add(p.instances);
        let per_buf = p.threads.iter().fold(0u64, |a, t| {
            a.saturating_add(
                t.instances
                    .saturating_mul(thread_buffer(t).saturating_add(thread_fixed(t))),
            )
        });
        buffers = buffers.saturating_add(p.instances.saturating_mul(per_buf));
    }
    if opts.in_process {
        procs = 0;
    }
    let tasks = threads.saturating_add(procs);
    let mut limits: Vec<(u64, String)> = Vec::new();
    // SAFETY: getrlimit fills a struct we own.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut rl) } == 0
        && rl.rlim_cur != libc::RLIM_INFINITY
    {
        limits.push((rl.rlim_cur as u64, "RLIMIT_NPROC (ulimit -u)".into()));
    }
    if let Some(m) = read_limit("/proc/sys/kernel/threads-max") {
        limits.push((m, "kernel.threads-max".into()));
    }
    if let Some(m) = read_limit("/proc/sys/kernel/pid_max") {
        limits.push((m, "kernel.pid_max".into()));
    }
    if let Some((limit, what)) = limits.iter().min_by_key(|l| l.0) {
        if tasks >= *limit {
            crate::bail_usage!(
                "the workload starts {procs} processes and {threads} threads ({tasks} tasks), more than {what} allows ({limit}): lower instances or nthreads"
            );
        }
    }
    let mut sets: u64 = 0;
    let mut per_proc: u64 = 0;
    for f in &model.filesets {
        sets = sets.saturating_add(fileset::estimate_bytes(f));
        per_proc = per_proc.saturating_add(fileset::estimate_layout_bytes(f));
    }
    let need = buffers
        .saturating_add(sets)
        .saturating_add(procs.saturating_mul(per_proc.saturating_add(8 << 20)));
    if let Some(avail) = mem_available() {
        if need > avail {
            let entries: u64 = model.filesets.iter().map(|f| f.count()).sum();
            crate::bail_usage!(
                "the workload needs about {} of memory ({threads} threads x {} stack, buffers and histograms, {entries} fileset entries at about {:.0} bytes each, in {} processes) but only {} is available: lower nfiles, nthreads or instances",
                crate::units::format_bytes(need as f64),
                crate::units::format_bytes((buffers / threads.max(1)) as f64),
                sets as f64 / entries.max(1) as f64,
                procs.max(1),
                crate::units::format_bytes(avail as f64)
            );
        }
    }
    Ok(())
}

/// Refuse, with the numbers, filesets whose preallocation would not fit in the free space.
pub(super) fn check_space(model: &Model, layouts: &[SetLayout]) -> Result<()> {
    let mut per_dir: Vec<(std::path::PathBuf, u64, Vec<&str>)> = Vec::new();
    for (spec, lay) in model.filesets.iter().zip(layouts) {
        if spec.is_dirs() || (spec.reuse && spec.root.exists()) {
            continue;
        }
        let Some(parent) = spec.root.parent() else {
            continue;
        };
        let mut bytes = 0u64;
        for i in 0..lay.len() {
            if lay.preallocated(i) {
                bytes = bytes.saturating_add(lay.size(i));
            }
        }
        match per_dir.iter_mut().find(|d| d.0 == parent) {
            Some(d) => {
                d.1 = d.1.saturating_add(bytes);
                d.2.push(&spec.name);
            }
            None => per_dir.push((parent.to_path_buf(), bytes, vec![&spec.name])),
        }
    }
    for (dir, bytes, names) in per_dir {
        if bytes > 0 && dir.is_dir() {
            crate::guard::ensure_free_space(
                &dir,
                bytes,
                &format!("preallocating fileset {}", names.join(", ")),
            )?;
        }
    }
    Ok(())
}
