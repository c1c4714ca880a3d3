//! Replay a trace as a benchmark: every file in the trace becomes a scratch file fsbench
//! creates (at the size the trace needs, filled with non-repeating data, removed afterwards
//! unless kept); each traced thread becomes a worker that issues the same reads, writes and
//! syncs at the same offsets, sizes and order, optionally at the traced times. It is measured
//! like any run (Stats, latency histogram, CPU by getrusage) and reported in the one Result
//! envelope (kind `replay`): per file (user) and thread, and per replayed call kind (`read`,
//! `write`, `fsync`, `fdatasync`) as named groups, with the planned I/O sizes as a histogram.
//!
//! Memory follows what the trace uses, not its thread count: each worker's buffer is as large
//! as its own largest call, it keeps one latency sample per call it issues (no histogram per
//! worker while running), descriptors are opened once per file and shared (pread/pwrite do not
//! move a file position), and workers get small stacks. Histograms are built after the run,
//! one per reported thread, and above [`REPORTED_THREADS_MAX`] threads the per-thread figures
//! are reported in groups. The thread count is checked against RLIMIT_NPROC, threads-max and
//! MemAvailable before anything starts. Threads are started, held at the start gate and
//! joined by the runner's driver (`runner::drive`); what a thread does is `replay_thread`.

use super::{Trace, TraceOp};
use crate::engine::sync::SyncEngine;
use crate::engine::{BufferPool, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::job::{CachePolicy, Route};
use crate::result::{GroupReport, Kind, ReplayInfo, RunResult};
use crate::runner::drive;
use crate::runner::target::{Plan, TargetKind, TargetPlan};
use crate::runner::{IoFailure, RunOutcome, RunStatus, ThreadOutcome};
use crate::stats::{cpu, inflight_bucket, LatencyHist, Stats, StatsReport, SyscallCounts};
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Where the scratch files go.
    pub dir: PathBuf,
    /// Keep the traced timing, scaled by this factor (2.0 = twice as fast); `None` issues
    /// each thread's calls back to back.
    pub speed: Option<f64>,
    /// Bypass the page cache (O_DIRECT) for I/Os aligned to the device; the others are done
    /// as data-synchronous buffered I/O and counted as `buffered_fallback_ops`.
    pub direct: bool,
    pub keep: bool,
    pub name: String,
}

/// One call a replay worker issues.
#[derive(Debug, Clone, Copy)]
struct Step {
    op: TraceOp,
    /// Index into the thread's own file list ([`ThreadPlan::files`]).
    file: u32,
    offset: u64,
    len: u32,
    start_ns: u64,
}

/// What one traced thread will do.
#[derive(Debug, Clone)]
struct ThreadPlan {
    /// Thread id in the trace.
    id: u32,
    steps: Vec<Step>,
    /// Trace file indices this thread uses; a step's `file` indexes this list.
    files: Vec<u32>,
    /// Largest read or write (sizes this thread's buffer).
    max_len: u32,
    /// Reads and writes among the steps (sizes its latency samples).
    data_ops: u64,
    /// Trace file index it used most: reported as that file's user.
    user: usize,
}

/// Scratch files of a replay; removed on drop unless kept.
struct Scratch {
    paths: Vec<PathBuf>,
    keep: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            for p in &self.paths {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// Descriptors opened once per used scratch file and shared by the workers; closed on drop.
struct SharedFds(Vec<FileHandles>);

impl Drop for SharedFds {
    fn drop(&mut self) {
        for f in &self.0 {
            for &fd in &f.fds {
                if fd >= 0 {
                    // SAFETY: closing a descriptor this replay opened, once, after every
                    // worker that used it has been joined.
                    unsafe { libc::close(fd) };
                }
            }
        }
    }
}

/// At most this many per-thread entries go into the Result: beyond it, threads are reported
/// in groups (a latency histogram takes 36 KiB, and 5,000 pairs of them would dominate the
/// memory of a run whose workers hold a few KiB each).
pub const REPORTED_THREADS_MAX: usize = 64;

/// Stack of a replay worker: it only loops over its steps (the default 2 MiB per thread
/// would be most of a many-thread replay's address space).
const WORKER_STACK_BYTES: usize = 256 << 10;

/// Memory one reported histogram pair takes (service and schedule latency).
const HIST_PAIR_BYTES: u64 = 2 * crate::stats::hist::HIST_BYTES as u64;

/// What a replay will do, derived from the trace (exposed for `--dry-run` and tests).
#[derive(Debug, Clone)]
pub struct ReplayPlan {
    /// Size each traced file needs (index = trace file index); 0 for files without data I/O.
    pub sizes: Vec<u64>,
    threads: Vec<ThreadPlan>,
    pub skipped_calls: u64,
    /// Number of data calls of each size (the Result's I/O size histogram).
    len_counts: std::collections::BTreeMap<u32, u64>,
}

impl ReplayPlan {
    pub fn from_trace(t: &Trace) -> Result<ReplayPlan, crate::error::UsageError> {
        use super::budget;
        let what = "replay: the trace";
        // Steps, the sorted record list and the per-thread maps: estimated before any of
        // them is built.
        budget::check(what, (t.records.len() as u64).saturating_mul(32 + 8 + 16))?;
        let mut sizes = budget::try_filled(t.files.len(), 0u64, what)?;
        let mut threads: Vec<ThreadPlan> = Vec::new();
        let mut thread_of: HashMap<u32, usize> = HashMap::new();
        // Per thread: trace file index -> (its index in the thread's list, uses).
        let mut local: Vec<HashMap<u32, (u32, u64)>> = Vec::new();
        let mut skipped = 0;
        let mut len_counts = std::collections::BTreeMap::new();
        let mut recs: Vec<&super::TraceRecord> = budget::try_vec(t.records.len(), what)?;
        recs.extend(t.records.iter());
        recs.sort_by_key(|r| (r.start_ns, r.id));
        for r in recs {
            if r.file as usize >= t.files.len() {
                skipped += 1;
                continue;
            }
            let (op, offset, len) = match r.op {
                TraceOp::Read | TraceOp::Write => {
                    let n = r.done_bytes();
                    if n == 0 {
                        skipped += 1;
                        continue;
                    }
                    if n > u32::MAX as u64 / 2 {
                        return Err(crate::usage!(
                            "trace record {} moves {n} bytes in one call: replay handles up to 2 GiB per call",
                            r.id
                        ));
                    }
                    let s = &mut sizes[r.file as usize];
                    *s = (*s).max(r.offset.saturating_add(n));
                    *len_counts.entry(n as u32).or_insert(0u64) += 1;
                    (r.op, r.offset, n as u32)
                }
                TraceOp::Fsync | TraceOp::Fdatasync if r.result >= 0 => (r.op, 0, 0),
                _ => {
                    skipped += 1;
                    continue;
                }
            };
            let ti = *thread_of.entry(r.thread).or_insert_with(|| {
                threads.push(ThreadPlan {
                    id: r.thread,
                    steps: Vec::new(),
                    files: Vec::new(),
                    max_len: 0,
                    data_ops: 0,
                    user: 0,
                });
                local.push(HashMap::new());
                threads.len() - 1
            });
            let th = &mut threads[ti];
            let next = th.files.len() as u32;
            let e = local[ti].entry(r.file).or_insert((next, 0));
            if e.0 == next {
                th.files.push(r.file);
            }
            e.1 += 1;
            let file = e.0;
            if op.is_data() {
                th.data_ops += 1;
                th.max_len = th.max_len.max(len);
            }
            th.steps.push(Step {
                op,
                file,
                offset,
                len,
                start_ns: r.start_ns,
            });
        }
        if threads.is_empty() {
            return Err(crate::usage!(
                "the trace has no successful reads, writes or syncs to replay"
            ));
        }
        for (th, uses) in threads.iter_mut().zip(&local) {
            th.user = uses
                .iter()
                .max_by_key(|(f, (_, n))| (*n, std::cmp::Reverse(**f)))
                .map(|(f, _)| *f as usize)
                .unwrap_or(0);
            th.steps.shrink_to_fit();
        }
        Ok(ReplayPlan {
            sizes,
            threads,
            skipped_calls: skipped,
            len_counts,
        })
    }

    /// Calls each thread will issue, in order: (thread, op, file, offset, len).
    pub fn sequence(&self) -> Vec<(u32, TraceOp, u32, u64, u64)> {
        self.threads
            .iter()
            .flat_map(|th| {
                th.steps.iter().map(move |s| {
                    (
                        th.id,
                        s.op,
                        th.files[s.file as usize],
                        s.offset,
                        s.len as u64,
                    )
                })
            })
            .collect()
    }

    /// Number of threads the replay starts.
    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    /// Memory the run needs beyond the plan: worker stacks, each worker's buffer (its largest
    /// call) and latency samples (one or two per call), and the reported histograms (per
    /// reported thread, and per call kind).
    pub fn run_bytes(&self, timed: bool) -> u64 {
        let per_sample = if timed { 16 } else { 8 };
        let workers: u64 = self
            .threads
            .iter()
            .map(|t| {
                WORKER_STACK_BYTES as u64
                    + (t.max_len as u64).next_multiple_of(4096).max(4096)
                    + t.steps.len() as u64 * per_sample
                    + 16 * t.files.len() as u64
            })
            .sum();
        workers
            + HIST_PAIR_BYTES
                * (self.threads.len().min(REPORTED_THREADS_MAX + 1) + CALLS.len()) as u64
    }

    /// Sizes of the planned reads and writes, in the one histogram (bytes).
    fn size_hist(&self) -> LatencyHist {
        let mut h = LatencyHist::default();
        for (len, n) in &self.len_counts {
            h.record_n(*len as u64, *n);
        }
        h
    }
}

fn create_scratch(path: &Path, size: u64, seed: u64) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating scratch file {}", path.display()))?;
    crate::safety::mark_created(path);
    let filled = fill_scratch(&mut f, path, size, seed);
    if filled.is_err() {
        // Ours (just created): nothing half-written stays behind.
        let _ = std::fs::remove_file(path);
    }
    filled
}

fn fill_scratch(f: &mut std::fs::File, path: &Path, size: u64, seed: u64) -> Result<()> {
    use std::io::Write;
    if size == 0 {
        return Ok(());
    }
    // A pattern buffer as large as the file needs, up to 1 MiB written over and over.
    let chunk = size.min(1 << 20) as usize;
    let pool = BufferPool::new(1, chunk, seed)?;
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk as u64) as usize;
        f.write_all(&pool.slot(0)[..n])
            .with_context(|| format!("filling {}", path.display()))?;
        left -= n as u64;
    }
    Ok(())
}

/// Bytes an unprivileged user may still write in the file system holding `dir`.
fn available_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct we own; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

fn open_rw(path: &Path, extra: i32) -> std::io::Result<i32> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("path has a NUL byte"))?;
    // SAFETY: NUL-terminated path; the descriptor is closed by SharedFds after the replay.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC | extra) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// Refuse a thread count the system would not let us start, naming the limit: the
/// per-user process limit (RLIMIT_NPROC counts threads), the kernel's threads-max, and the
/// memory the workers take against MemAvailable.
fn check_thread_limits(threads: usize, bytes: u64) -> Result<(), crate::error::UsageError> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut rl) } == 0
        && rl.rlim_cur != libc::RLIM_INFINITY
        && threads as u64 + 16 > rl.rlim_cur as u64
    {
        return Err(crate::usage!(
            "replay needs {threads} threads but RLIMIT_NPROC (ulimit -u) allows {} processes and threads: raise it or replay a trace with fewer threads",
            rl.rlim_cur
        ));
    }
    if let Some(max) = std::fs::read_to_string("/proc/sys/kernel/threads-max")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
    {
        if threads as u64 + 16 > max {
            return Err(crate::usage!(
                "replay needs {threads} threads but kernel.threads-max is {max}: raise it or replay a trace with fewer threads"
            ));
        }
    }
    super::budget::check(&format!("replay with {threads} threads"), bytes)
}

/// Raise the soft descriptor limit to the hard one if `needed` descriptors need it; refuse
/// naming RLIMIT_NOFILE when even the hard limit is too low.
fn ensure_descriptors(needed: u64) -> Result<(), crate::error::UsageError> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Ok(());
    }
    let want = needed + 64;
    if rl.rlim_cur == libc::RLIM_INFINITY || want <= rl.rlim_cur as u64 {
        return Ok(());
    }
    if rl.rlim_max != libc::RLIM_INFINITY && want > rl.rlim_max as u64 {
        return Err(crate::usage!(
            "replay needs {needed} open files but RLIMIT_NOFILE (ulimit -n) allows {}: raise it or replay a trace with fewer files",
            rl.rlim_max
        ));
    }
    rl.rlim_cur = if rl.rlim_max == libc::RLIM_INFINITY {
        want as libc::rlim_t
    } else {
        rl.rlim_max
    };
    // SAFETY: setrlimit reads the struct we own; raising the soft limit up to the hard one
    // is always allowed.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) };
    Ok(())
}

/// The replayed call kinds, in the order of the Result's groups.
const CALLS: [TraceOp; 4] = [
    TraceOp::Read,
    TraceOp::Write,
    TraceOp::Fsync,
    TraceOp::Fdatasync,
];

fn call_index(op: TraceOp) -> Option<usize> {
    CALLS.iter().position(|c| *c == op)
}

/// One call kind's samples in one worker.
#[derive(Default)]
struct CallTally {
    lat: Vec<u64>,
    /// From the intended issue time; empty when untimed (then equal to `lat`).
    sched: Vec<u64>,
    bytes: u64,
}

/// What a worker measured, without histograms: latency samples (per call kind) are turned
/// into histograms after the run, once per reported thread and once per kind.
struct Tally {
    stats: Counters,
    calls: [CallTally; 4],
    failure: Option<IoFailure>,
}

/// A worker's counters (a [`Stats`] without its histograms, which take ~0.3 MiB each).
#[derive(Default)]
struct Counters {
    read_ops: u64,
    write_ops: u64,
    read_bytes: u64,
    write_bytes: u64,
    errors: u64,
    buffered_fallback_ops: u64,
    inflight: [u64; 8],
    elapsed_s: f64,
    usage: cpu::Usage,
    syscalls: SyscallCounts,
}

impl Counters {
    fn add_to(&self, s: &mut Stats) {
        s.read_ops += self.read_ops;
        s.write_ops += self.write_ops;
        s.read_bytes += self.read_bytes;
        s.write_bytes += self.write_bytes;
        s.errors += self.errors;
        s.buffered_fallback_ops += self.buffered_fallback_ops;
        for (a, b) in s.inflight.iter_mut().zip(self.inflight.iter()) {
            *a += b;
        }
        s.usage += &self.usage;
        s.syscalls += &self.syscalls;
        // Workers run side by side: a group's wall time is its longest worker's.
        s.elapsed_s = s.elapsed_s.max(self.elapsed_s);
    }
}

/// Run the replay: create the files, replay every thread, remove the files.
pub fn run(trace: &Trace, origin: &str, opts: &ReplayOptions) -> Result<RunResult> {
    let mut plan = ReplayPlan::from_trace(trace)?;
    crate::runner::signal::install();
    if let Some(s) = opts.speed {
        if !(s > 0.0 && s.is_finite()) {
            crate::bail_usage!("--speed {s}: expected a factor above 0, e.g. 1.0 or 2.5");
        }
    }
    if !opts.dir.is_dir() {
        crate::bail_usage!("--dir {}: not a directory", opts.dir.display());
    }
    let nthreads = plan.threads.len();
    check_thread_limits(nthreads, plan.run_bytes(opts.speed.is_some()))?;
    // Only the files some thread reads, writes or syncs become scratch files (a trace of a
    // program that opens thousands of files and reads a few must not create thousands):
    // target index per trace file index.
    let mut target_of = vec![u32::MAX; plan.sizes.len()];
    let mut used_files: Vec<usize> = Vec::new();
    for th in &plan.threads {
        for &f in &th.files {
            if target_of[f as usize] == u32::MAX {
                target_of[f as usize] = used_files.len() as u32;
                used_files.push(f as usize);
            }
        }
    }
    used_files.sort_unstable();
    for (t, &f) in used_files.iter().enumerate() {
        target_of[f] = t as u32;
    }
    for th in plan.threads.iter_mut() {
        for f in th.files.iter_mut() {
            *f = target_of[*f as usize];
        }
        th.user = target_of[th.user] as usize;
    }
    let per_file = if opts.direct { 3 } else { 1 };
    ensure_descriptors(used_files.len() as u64 * per_file)?;
    let needed: u64 = used_files
        .iter()
        .fold(0u64, |a, &f| a.saturating_add(plan.sizes[f]));
    if let Some(avail) = available_bytes(&opts.dir) {
        // Leave a margin: the file system needs room for metadata, and so do other users.
        if needed > avail / 10 * 9 {
            crate::bail_usage!(
                "replay needs {} of scratch files in {} but only {} is free: choose another --dir",
                crate::units::format_bytes(needed as f64),
                opts.dir.display(),
                crate::units::format_bytes(avail as f64)
            );
        }
    }
    let mut scratch = Scratch {
        paths: Vec::new(),
        keep: opts.keep,
    };
    let mut targets = Vec::new();
    let mut notes = Vec::new();
    let pid = std::process::id();
    for &i in &used_files {
        let size = plan.sizes[i];
        let path = opts.dir.join(format!("fsbench-replay-{pid}-{i}.dat"));
        // Pushed only once created: a name that was taken is never ours to remove.
        create_scratch(&path, size, 0x5eed ^ i as u64)?;
        scratch.paths.push(path.clone());
        notes.push(format!(
            "{} stands for {} ({} bytes)",
            path.display(),
            trace.files[i],
            size
        ));
        targets.push(TargetPlan {
            path,
            kind: TargetKind::File,
            size,
            created: true,
            dio_align: 512,
            reserved: None,
        });
    }
    // One flush for all the files (not an fsync each), then their pages are dropped so the
    // replay starts cold.
    if let Some(p) = scratch.paths.first() {
        if let Ok(f) = std::fs::File::open(p) {
            // SAFETY: syncfs on a descriptor we own.
            unsafe { libc::syncfs(std::os::unix::io::AsRawFd::as_raw_fd(&f)) };
        }
    }
    for p in &scratch.paths {
        let _ = crate::runner::target::evict(p);
    }
    if used_files.len() < plan.sizes.len() {
        notes.push(format!(
            "{} traced files without replayed calls were not created",
            plan.sizes.len() - used_files.len()
        ));
    }
    if plan.skipped_calls > 0 {
        notes.push(format!(
            "{} traced calls not replayed (opens, closes, failed or empty calls)",
            plan.skipped_calls
        ));
    }
    let direct = opts
        .direct
        .then(|| crate::runner::target::dio_alignment(&scratch.paths[0]));
    // Each used file is opened once; the workers share the descriptors.
    let mut shared = SharedFds(Vec::with_capacity(scratch.paths.len()));
    for p in &scratch.paths {
        let fd = open_rw(p, 0).with_context(|| format!("opening {}", p.display()))?;
        shared.0.push(FileHandles {
            fds: [fd, -1, -1],
            size: 0,
        });
        let h = shared.0.last_mut().expect("just pushed");
        if direct.is_some() {
            // Misaligned I/Os under a direct policy are done data-synchronously buffered
            // (the white paper's rule, as the runner does).
            h.fds[Route::Direct as usize] = open_rw(p, libc::O_DIRECT).with_context(|| {
                format!("opening {} with O_DIRECT (the file system may not support direct I/O; replay without --direct)", p.display())
            })?;
            h.fds[Route::Fallback as usize] =
                open_rw(p, libc::O_DSYNC).with_context(|| format!("opening {}", p.display()))?;
        }
    }
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let paths: Arc<Vec<PathBuf>> = Arc::new(scratch.paths.clone());
    let speed = opts.speed;
    let plans = std::mem::take(&mut plan.threads);
    let thread_info: Vec<(usize, u64)> = plans.iter().map(|t| (t.user, t.data_ops)).collect();
    let total_steps: u64 = plans.iter().map(|t| t.steps.len() as u64).sum();
    let bodies = plans.into_iter().enumerate().map(|(idx, th)| {
        let files: Vec<FileHandles> = th
            .files
            .iter()
            .map(|&f| FileHandles {
                fds: shared.0[f as usize].fds,
                size: 0,
            })
            .collect();
        let paths = paths.clone();
        let body: drive::Body<Tally> = Box::new(move |gate| {
            Some(replay_thread(
                idx as u32, th, files, &paths, speed, direct, gate,
            ))
        });
        (format!("fsbench-replay{idx}"), body)
    });
    let crew = drive::start_threads(bodies, WORKER_STACK_BYTES, &drive::spawn_thread).map_err(
        |f| {
            anyhow::anyhow!(
                "cannot start replay thread {} of {nthreads}: {} (limits: ulimit -u, kernel.threads-max, memory)",
                f.index + 1,
                f.error
            )
        },
    )?;
    let t0 = crew.open(|| true).expect("the gate opens when asked to");
    let tallies = crew.join()?;
    let elapsed_s = t0.elapsed().as_secs_f64();
    drop(shared);
    let (threads, grouped, groups) = report_threads(tallies, &thread_info, elapsed_s);
    if grouped {
        notes.push(format!(
            "{nthreads} replay threads are reported in {} groups (per-thread figures of more than {REPORTED_THREADS_MAX} threads are merged)",
            threads.len()
        ));
    }
    let failures: Vec<IoFailure> = threads
        .iter()
        .filter_map(|t: &ThreadOutcome| t.failure.clone())
        .collect();
    let status = if !failures.is_empty() {
        RunStatus::Failed
    } else if crate::runner::signal::interrupted() {
        RunStatus::Partial
    } else {
        RunStatus::Complete
    };
    notes.push(format!(
        "replay of {origin}: {total_steps} calls in {nthreads} thread(s), {}",
        match opts.speed {
            Some(s) => format!("traced timing x{s}"),
            None => "back to back (no timing)".into(),
        }
    ));
    let outcome = RunOutcome {
        plan: Plan {
            targets,
            cache: if opts.direct {
                CachePolicy::Direct
            } else {
                CachePolicy::Buffered
            },
            notes,
        },
        threads,
        status,
        failures,
        elapsed_s,
        started_unix_s,
        probes: Default::default(),
    };
    let paths: Vec<&PathBuf> = outcome.plan.targets.iter().map(|t| &t.path).collect();
    let mut result = RunResult::new(
        Kind::Replay,
        &opts.name,
        started_unix_s,
        crate::probe::env::collect(&paths),
    );
    result.fill_from_outcome(&outcome);
    result.groups = groups;
    let sizes = plan.size_hist();
    result.replay = Some(ReplayInfo {
        trace: origin.to_string(),
        calls: total_steps,
        threads: nthreads as u64,
        speed: opts.speed,
        skipped_calls: plan.skipped_calls,
        io_size_bytes: sizes.summary(),
        io_size_hist_bytes: sizes.to_buckets(),
    });
    drop(scratch);
    Ok(result)
}

/// Which reported entry each worker goes into: itself up to [`REPORTED_THREADS_MAX`]
/// workers; beyond, one entry per file (user) when there are few enough, else workers are
/// dealt round-robin into that many groups. Returns (group per worker, user and label per
/// group).
fn grouping(info: &[(usize, u64)]) -> (Vec<usize>, Vec<(usize, u32)>) {
    let n = info.len();
    if n <= REPORTED_THREADS_MAX {
        return (
            (0..n).collect(),
            info.iter()
                .enumerate()
                .map(|(i, (u, _))| (*u, i as u32))
                .collect(),
        );
    }
    let mut by_user: std::collections::BTreeMap<usize, usize> = Default::default();
    for (u, _) in info {
        let next = by_user.len();
        by_user.entry(*u).or_insert(next);
    }
    if by_user.len() <= REPORTED_THREADS_MAX {
        let mut groups = vec![(0usize, u32::MAX); by_user.len()];
        let of: Vec<usize> = info
            .iter()
            .enumerate()
            .map(|(i, (u, _))| {
                let g = by_user[u];
                groups[g].0 = *u;
                groups[g].1 = groups[g].1.min(i as u32);
                g
            })
            .collect();
        return (of, groups);
    }
    // Round-robin; a group is reported as the user with the most calls in it.
    let k = REPORTED_THREADS_MAX;
    let mut best: Vec<HashMap<usize, u64>> = vec![HashMap::new(); k];
    let of: Vec<usize> = (0..n).map(|i| i % k).collect();
    for (i, (u, ops)) in info.iter().enumerate() {
        *best[i % k].entry(*u).or_default() += ops;
    }
    let groups = best
        .iter()
        .enumerate()
        .map(|(g, m)| {
            let u = m
                .iter()
                .max_by_key(|(u, n)| (**n, std::cmp::Reverse(**u)))
                .map(|(u, _)| *u)
                .unwrap_or(0);
            (u, g as u32)
        })
        .collect();
    (of, groups)
}

/// Build the reported thread outcomes (histograms from the samples of reads and writes),
/// grouping many workers, and one named group per call kind that was replayed (its ops,
/// bytes and latency over the replay's timed span: the longest worker's, as the total's, or
/// `wall_s` when no worker timed anything).
fn report_threads(
    tallies: Vec<Tally>,
    info: &[(usize, u64)],
    wall_s: f64,
) -> (Vec<ThreadOutcome>, bool, Vec<GroupReport>) {
    let longest = tallies
        .iter()
        .map(|t| t.stats.elapsed_s)
        .fold(0.0, f64::max);
    let elapsed_s = if longest > 0.0 { longest } else { wall_s };
    let (of, groups) = grouping(info);
    let grouped = groups.len() < tallies.len();
    let mut out: Vec<ThreadOutcome> = groups
        .iter()
        .map(|&(user, thread)| ThreadOutcome {
            user,
            thread,
            stats: Stats::default(),
            failure: None,
        })
        .collect();
    let mut kinds: Vec<Stats> = CALLS.iter().map(|_| Stats::default()).collect();
    for (i, t) in tallies.into_iter().enumerate() {
        let o = &mut out[of[i]];
        for (k, c) in t.calls.iter().enumerate() {
            let g = &mut kinds[k];
            let n = c.lat.len() as u64;
            match CALLS[k] {
                TraceOp::Read => {
                    (g.read_ops, g.read_bytes) = (g.read_ops + n, g.read_bytes + c.bytes)
                }
                TraceOp::Write => {
                    (g.write_ops, g.write_bytes) = (g.write_ops + n, g.write_bytes + c.bytes)
                }
                _ => g.other_ops += n,
            }
            // A thread's latency is that of its reads and writes, as a Job's; syncs are in
            // its syscalls and in their own groups.
            let data = CALLS[k].is_data();
            for &ns in &c.lat {
                g.lat.record(ns);
                if data {
                    o.stats.lat.record(ns);
                }
            }
            // Untimed, the schedule latency is the service latency: only `lat` is kept.
            for &ns in &c.sched {
                g.sched_lat.record(ns);
                if data {
                    o.stats.sched_lat.record(ns);
                }
            }
        }
        // Counters, CPU and syscalls add up (the samples went into the histograms).
        t.stats.add_to(&mut o.stats);
        if o.failure.is_none() {
            o.failure = t.failure;
        }
    }
    let groups = kinds
        .iter_mut()
        .zip(CALLS)
        .filter(|(g, _)| g.ops() > 0)
        .map(|(g, op)| {
            g.elapsed_s = elapsed_s;
            GroupReport {
                name: op.name().to_string(),
                op: op.name().to_string(),
                run: None,
                stats: StatsReport::from_stats(g, false),
            }
        })
        .collect();
    (out, grouped, groups)
}

fn replay_thread(
    index: u32,
    plan: ThreadPlan,
    files: Vec<FileHandles>,
    paths: &[PathBuf],
    speed: Option<f64>,
    direct_align: Option<u64>,
    gate: &drive::Gate,
) -> Tally {
    let user = plan.user;
    let fail = |file: u32, offset: Option<u64>, message: String| IoFailure {
        user,
        thread: index,
        path: paths[plan.files[file as usize] as usize]
            .display()
            .to_string(),
        offset,
        message,
    };
    let mut sys = SyscallCounts::default();
    let fds: Vec<i32> = files.iter().map(|f| f.fds[0]).collect();
    // This worker's own sizes: a buffer as large as its largest call, a sample per call.
    let pool = BufferPool::new(1, (plan.max_len as usize).max(1), 0xfeed ^ index as u64);
    // A sample per call, per call kind, reserved now so the timed loop never allocates.
    let mut calls: [CallTally; 4] = Default::default();
    let mut want = [0usize; 4];
    for s in &plan.steps {
        if let Some(k) = call_index(s.op) {
            want[k] += 1;
        }
    }
    let reserved = calls.iter_mut().zip(want).try_for_each(|(c, n)| {
        c.lat.try_reserve_exact(n)?;
        if speed.is_some() {
            c.sched.try_reserve_exact(n)?;
        }
        Ok::<(), std::collections::TryReserveError>(())
    });
    let empty = |failure| Tally {
        stats: Counters::default(),
        calls: Default::default(),
        failure,
    };
    let mut engine = match (pool, reserved) {
        (Ok(pool), Ok(())) => SyncEngine::new(files, pool),
        (Err(e), _) => {
            gate.arrive_and_wait();
            return empty(Some(fail(0, None, format!("allocating buffers: {e}"))));
        }
        (_, Err(_)) => {
            gate.arrive_and_wait();
            return empty(Some(fail(
                0,
                None,
                "out of memory reserving latency samples".into(),
            )));
        }
    };
    let mut done: Vec<Completion> = Vec::with_capacity(2);
    let mut stats = Counters::default();
    let mut failure = None;
    if !gate.arrive_and_wait() {
        return empty(None);
    }
    let usage0 = cpu::thread_usage();
    let t0 = Instant::now();
    for s in &plan.steps {
        // Ctrl-C ends the replay with what was done (a flag read, no syscall).
        if crate::runner::signal::interrupted() {
            break;
        }
        let intended = match speed {
            Some(sp) => {
                let at = t0 + Duration::from_nanos((s.start_ns as f64 / sp) as u64);
                // Sleep in slices so a long traced pause still answers Ctrl-C.
                loop {
                    let now = Instant::now();
                    if at <= now || crate::runner::signal::interrupted() {
                        break;
                    }
                    std::thread::sleep((at - now).min(Duration::from_millis(100)));
                }
                at
            }
            None => Instant::now(),
        };
        if crate::runner::signal::interrupted() {
            break;
        }
        let start = Instant::now();
        let (result, kind) = match s.op {
            TraceOp::Read | TraceOp::Write => {
                let kind = if s.op == TraceOp::Read {
                    OpKind::Read
                } else {
                    OpKind::Write
                };
                let route = match direct_align {
                    Some(a) if s.offset.is_multiple_of(a) && (s.len as u64).is_multiple_of(a) => {
                        Route::Direct
                    }
                    Some(_) => {
                        stats.buffered_fallback_ops += 1;
                        Route::Fallback
                    }
                    None => Route::Buffered,
                };
                let op = IoOp {
                    kind,
                    file: s.file,
                    route,
                    offset: s.offset,
                    len: s.len,
                    slot: 0,
                };
                stats.inflight[inflight_bucket(1)] += 1;
                let r = engine
                    .submit(&[op], &mut sys)
                    .and_then(|_| engine.reap(1, &mut done, &mut sys));
                let res = match r {
                    Ok(_) => done
                        .first()
                        .map(|c| c.result)
                        .unwrap_or(-(libc::EIO as i64)),
                    Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
                };
                done.clear();
                (res, Some(kind))
            }
            TraceOp::Fsync | TraceOp::Fdatasync => {
                let fd = fds[s.file as usize];
                // SAFETY: fd is open for the whole replay (closed after every worker ends).
                let rc = unsafe {
                    if s.op == TraceOp::Fsync {
                        sys.fsync += 1;
                        libc::fsync(fd)
                    } else {
                        sys.fdatasync += 1;
                        libc::fdatasync(fd)
                    }
                };
                let res = if rc == 0 {
                    0
                } else {
                    -(std::io::Error::last_os_error()
                        .raw_os_error()
                        .unwrap_or(libc::EIO) as i64)
                };
                (res, None)
            }
            _ => continue,
        };
        let end = Instant::now();
        if result < 0 {
            stats.errors += 1;
            let err = std::io::Error::from_raw_os_error((-result) as i32);
            failure = Some(fail(
                s.file,
                Some(s.offset),
                format!("{} failed: {err}", s.op.name()),
            ));
            break;
        }
        if let Some(c) = call_index(s.op).map(|k| &mut calls[k]) {
            // Reserved above: these pushes never allocate.
            c.lat.push(end.duration_since(start).as_nanos() as u64);
            if speed.is_some() {
                c.sched.push(end.duration_since(intended).as_nanos() as u64);
            }
            if kind.is_some() {
                c.bytes += result as u64;
            }
        }
        if let Some(kind) = kind {
            match kind {
                OpKind::Read => {
                    stats.read_ops += 1;
                    stats.read_bytes += result as u64;
                }
                OpKind::Write => {
                    stats.write_ops += 1;
                    stats.write_bytes += result as u64;
                }
            }
        }
    }
    stats.elapsed_s = t0.elapsed().as_secs_f64();
    stats.usage = cpu::thread_usage().since(&usage0);
    stats.syscalls = sys;
    Tally {
        stats,
        calls,
        failure,
    }
}
