//! One worker thread: open its descriptors and buffers (untimed), wait at the start barrier,
//! then run the I/O loop. The loop holds no lock and allocates nothing; it reads the clock
//! around each I/O and bumps counters in its own `Stats`.
//!
//! The loop is generic over the engine, so for the shipped engines it is compiled with their
//! `submit`/`reap` inlined (no indirect call per I/O), and any other `Engine` (the test engine
//! in `engine::mock`) runs the very same loop. What is fixed for a run (how I/Os are routed,
//! whether a rate limit is on) is decided before the clock starts, and each worker thread
//! has a descriptor table of its own; what each I/O still costs is written down in
//! docs/per-io-cost.md.

use super::mark::FileId;
use super::opgen::{thread_seed, GenSpec, OpGen};
use super::pace::Pacer;
use super::target::Plan;
use crate::engine::{self, BufferPool, Built, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::job::{Advice, CachePolicy, EngineKind, Job, Route};
use crate::stats::{cpu, inflight_bucket, mono_ns, LatencyHist, Stats, SyscallCounts};
use serde::{Deserialize, Serialize};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Where and why an I/O failed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IoFailure {
    pub user: usize,
    pub thread: u32,
    pub path: String,
    pub offset: Option<u64>,
    pub message: String,
}

impl std::fmt::Display for IoFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            Some(o) => write!(f, "{} at offset {}: {}", self.path, o, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

/// What one worker measured, and how it ended.
#[derive(Debug, Clone)]
pub struct ThreadOutcome {
    pub user: usize,
    pub thread: u32,
    pub stats: Stats,
    pub failure: Option<IoFailure>,
}

/// How the I/Os of a run are routed to descriptors, decided once per run so that the loop does
/// not divide by the alignment on every I/O. Same answer as `CachePolicy::route` for every
/// offset (tested below).
#[derive(Debug, Clone, Copy, PartialEq)]
enum RouteRule {
    /// Every I/O takes this route (buffered policies, or a block size that decides it alone).
    Fixed(Route),
    /// `aligned` when the offset is a multiple of the alignment (a power of two: `mask` is
    /// alignment - 1), else `unaligned`.
    Masked {
        mask: u64,
        aligned: Route,
        unaligned: Route,
    },
    /// An alignment that is not a power of two: ask the policy for each I/O.
    PerOp { policy: CachePolicy, align: u64 },
}

impl RouteRule {
    fn new(policy: CachePolicy, bs: u64, align: u64) -> RouteRule {
        let align = align.max(1);
        let (aligned, unaligned) = match policy {
            CachePolicy::Buffered | CachePolicy::Dsync => return RouteRule::Fixed(Route::Buffered),
            CachePolicy::Direct | CachePolicy::Concurrent | CachePolicy::Raw => {
                (Route::Direct, Route::Fallback)
            }
            CachePolicy::Discovered { threshold } if bs < threshold => {
                return RouteRule::Fixed(Route::Buffered)
            }
            CachePolicy::Discovered { .. } => (Route::Direct, Route::Buffered),
        };
        if !align.is_power_of_two() {
            return RouteRule::PerOp { policy, align };
        }
        if bs & (align - 1) != 0 {
            return RouteRule::Fixed(unaligned);
        }
        RouteRule::Masked {
            mask: align - 1,
            aligned,
            unaligned,
        }
    }

    #[inline(always)]
    fn route(self, offset: u64, bs: u64) -> Route {
        match self {
            RouteRule::Fixed(r) => r,
            RouteRule::Masked {
                mask,
                aligned,
                unaligned,
            } => {
                if offset & mask == 0 {
                    aligned
                } else {
                    unaligned
                }
            }
            RouteRule::PerOp { policy, align } => policy.route(offset, bs, align),
        }
    }
}

/// The descriptors a worker opened; closed when it is dropped, after its engine.
struct Fds([i32; 3]);

impl Drop for Fds {
    fn drop(&mut self) {
        close_all(&self.0);
    }
}

/// Everything the timed loop needs besides the engine.
struct Core {
    user: usize,
    thread: u32,
    path: String,
    gen: OpGen,
    route: RouteRule,
    bs: u32,
    depth: usize,
    fsync: bool,
    deadline: Option<Duration>,
    sys: SyscallCounts,
    /// Issue schedule under a rate limit.
    pacer: Option<Pacer>,
    /// Per-I/O trace ring when `--trace` is on (allocated here, untimed).
    trace: Option<crate::trace::TraceRing>,
}

pub struct Worker {
    core: Core,
    engine: Built,
    /// Declared after the engine: an engine that maps or registers the files lets go of
    /// them before the descriptors are closed.
    _fds: Fds,
}

/// Open the target again for this worker: never through a symbolic link (unless --force),
/// and only if it is still the file that was prepared (same device and inode), so a path
/// swapped during the run cannot redirect the I/O to another file.
fn open_fd(
    path: &std::path::Path,
    flags: i32,
    follow: bool,
    id: Option<FileId>,
    sys: &mut SyscallCounts,
) -> std::io::Result<i32> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("path has a NUL byte"))?;
    sys.open += 1;
    use rustix::fs::OFlags;
    let mut oflags = OFlags::from_bits_retain(flags as u32) | OFlags::CLOEXEC;
    if !follow {
        oflags |= OFlags::NOFOLLOW;
    }
    let fd = match rustix::fs::open(c.as_c_str(), oflags, rustix::fs::Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP) => {
            return Err(std::io::Error::other(
                "the target was replaced by a symbolic link during the run; not followed",
            ))
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(want) = id {
        let same = rustix::fs::fstat(&fd)
            .is_ok_and(|st| st.st_dev as u64 == want.dev && st.st_ino as u64 == want.ino);
        if !same {
            // Dropping `fd` closes it.
            return Err(std::io::Error::other(
                "the target was replaced by another file during the run; not touched",
            ));
        }
    }
    // From here the worker's `Fds` owns and closes the descriptor.
    Ok(std::os::fd::IntoRawFd::into_raw_fd(fd))
}

impl Worker {
    /// Everything untimed: descriptors, advice, buffers, engine.
    pub fn prepare(
        job: &Job,
        plan: &Plan,
        id: Option<FileId>,
        user: usize,
        thread: u32,
    ) -> Result<Worker, IoFailure> {
        let t = &plan.targets[user];
        let fail = |msg: String| IoFailure {
            user,
            thread,
            path: t.path.display().to_string(),
            offset: None,
            message: msg,
        };
        let mut sys = SyscallCounts::default();
        let policy = plan.cache;
        let read_pct = job.access.read_pct(job.read_pct);
        let writes = read_pct < 100;
        let mmap = job.engine == EngineKind::Mmap;
        let mut base = if writes || mmap {
            libc::O_RDWR
        } else {
            libc::O_RDONLY
        };
        if job.open.sync {
            base |= libc::O_SYNC;
        }
        if job.open.dsync {
            base |= libc::O_DSYNC;
        }
        if job.open.append {
            base |= libc::O_APPEND;
        }
        let bs = job.block_size;
        let align = t.dio_align.max(1);
        let misaligned_possible = bs % align != 0;
        // Owned from the first open: every early return below closes what was opened.
        let mut fds = Fds([-1i32; 3]);
        let want_buffered =
            !policy.uses_direct() || matches!(policy, CachePolicy::Discovered { .. });
        if want_buffered || mmap {
            let mut fl = base;
            if policy.buffered_dsync() {
                fl |= libc::O_DSYNC;
            }
            fds.0[Route::Buffered as usize] = open_fd(&t.path, fl, job.force, id, &mut sys)
                .map_err(|e| fail(format!("open: {e}")))?;
        }
        if policy.uses_direct() && !mmap {
            fds.0[Route::Direct as usize] = open_fd(&t.path, base | libc::O_DIRECT, job.force, id, &mut sys)
                .map_err(|e| {
                    fail(format!(
                        "open with O_DIRECT: {e} (the file system may not support direct I/O; try --cache buffered)"
                    ))
                })?;
            if misaligned_possible && !matches!(policy, CachePolicy::Discovered { .. }) {
                fds.0[Route::Fallback as usize] =
                    open_fd(&t.path, base | libc::O_DSYNC, job.force, id, &mut sys)
                        .map_err(|e| fail(format!("open: {e}")))?;
            }
        }
        for &fd in fds.0.iter().filter(|&&fd| fd >= 0) {
            for a in &job.advice {
                let adv = match a {
                    Advice::NoReuse => libc::POSIX_FADV_NOREUSE,
                    Advice::Random => libc::POSIX_FADV_RANDOM,
                    Advice::Seq => libc::POSIX_FADV_SEQUENTIAL,
                };
                sys.fadvise += 1;
                // Advice only: a refusal changes nothing the run depends on.
                let _ = engine::meta::advise(fd, adv);
            }
        }
        // Buffers for the I/Os that can be in flight, not for the whole queue depth.
        let depth = job.effective_depth() as usize;
        let mut pool = BufferPool::new(depth, bs as usize, thread_seed(job.seed, user, thread))
            .map_err(|e| fail(format!("allocating buffers: {e}")))?;
        if job.mlock {
            pool.lock().map_err(|e| {
                fail(format!(
                    "mlock of I/O buffers failed: {e} (raise the memlock limit, e.g. ulimit -l unlimited)"
                ))
            })?;
        }
        let deadline = deadline_of(job).map_err(|e| fail(e.to_string()))?;
        let handles = vec![FileHandles {
            fds: fds.0,
            size: t.size,
        }];
        let engine = engine::build(job, handles, pool).map_err(|e| fail(format!("{e:#}")))?;
        let trace = crate::trace::ring_for_worker(job, &t.path, t.size, user, thread);
        Ok(Worker {
            core: Core::new(
                job,
                t.size,
                user,
                thread,
                t.path.display().to_string(),
                // The plan's policy, not the job's: a block device turns buffered into raw.
                RouteRule::new(policy, bs, align),
                deadline,
                sys,
                trace,
            ),
            engine,
            _fds: fds,
        })
    }

    /// A worker of `job` on a target of `target_size` bytes that issues its I/O through
    /// `engine` and opens nothing (the runner's tests drive the loop with `engine::mock`).
    #[cfg(test)]
    pub(crate) fn with_engine(
        job: &Job,
        target_size: u64,
        user: usize,
        thread: u32,
        engine: Box<dyn Engine>,
    ) -> Result<Worker, IoFailure> {
        let path = job
            .targets
            .get(user)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let fail = |message: String| IoFailure {
            user,
            thread,
            path: path.clone(),
            offset: None,
            message,
        };
        let deadline = deadline_of(job).map_err(|e| fail(e.to_string()))?;
        Ok(Worker {
            core: Core::new(
                job,
                target_size,
                user,
                thread,
                path.clone(),
                RouteRule::new(job.cache, job.block_size, 1),
                deadline,
                SyscallCounts::default(),
                None,
            ),
            engine: Built::Boxed(engine),
            _fds: Fds([-1; 3]),
        })
    }

    /// The timed loop, stopped by `stop`, Ctrl-C / SIGTERM, the deadline, the count or an error.
    pub fn run(self, stop: &AtomicBool) -> ThreadOutcome {
        self.run_until(stop, super::signal::flag())
    }

    /// [`Worker::run`] with the interrupt flag given (the signal handler's in a real run).
    pub(crate) fn run_until(mut self, stop: &AtomicBool, interrupt: &AtomicBool) -> ThreadOutcome {
        let core = &mut self.core;
        // One compiled loop per engine and per "rate limit or not", so an unpaced run carries
        // no schedule code at all.
        match (&mut self.engine, core.pacer.is_some()) {
            (Built::Sync(e), false) => core.drive::<_, false>(e, stop, interrupt),
            (Built::Sync(e), true) => core.drive::<_, true>(e, stop, interrupt),
            (Built::Mmap(e), false) => core.drive::<_, false>(e, stop, interrupt),
            (Built::Mmap(e), true) => core.drive::<_, true>(e, stop, interrupt),
            (Built::Uring(e), false) => core.drive::<_, false>(e, stop, interrupt),
            (Built::Uring(e), true) => core.drive::<_, true>(e, stop, interrupt),
            (Built::Boxed(e), false) => core.drive::<_, false>(e.as_mut(), stop, interrupt),
            (Built::Boxed(e), true) => core.drive::<_, true>(e.as_mut(), stop, interrupt),
        }
    }
}

/// The run time as a Duration; a time no Duration holds (NaN, infinite, negative, huge) is
/// the Job's mistake.
fn deadline_of(job: &Job) -> Result<Option<Duration>, crate::error::UsageError> {
    match job.time_s.map(Duration::try_from_secs_f64) {
        None => Ok(None),
        Some(Ok(d)) => Ok(Some(d)),
        Some(Err(_)) => Err(crate::usage!(
            "bad run time {:?}: must be a finite number of seconds",
            job.time_s
        )),
    }
}

impl Core {
    #[allow(clippy::too_many_arguments)]
    fn new(
        job: &Job,
        target_size: u64,
        user: usize,
        thread: u32,
        path: String,
        route: RouteRule,
        deadline: Option<Duration>,
        sys: SyscallCounts,
        trace: Option<crate::trace::TraceRing>,
    ) -> Core {
        let read_pct = job.access.read_pct(job.read_pct);
        let gen = OpGen::new(&GenSpec {
            random: job.access.is_random(),
            read_pct,
            block_size: job.block_size,
            target_size,
            threads: job.threads,
            thread,
            io_count: job.io_count,
            repeats: job.repeats,
            timed: job.time_s.is_some(),
            seed: thread_seed(job.seed, user, thread),
        });
        Core {
            user,
            thread,
            path,
            gen,
            route,
            bs: job.block_size as u32,
            depth: job.effective_depth() as usize,
            fsync: job.fsync && read_pct < 100,
            deadline,
            sys,
            pacer: Pacer::for_worker(job, user as u64 * job.threads as u64 + thread as u64),
            trace,
        }
    }

    /// The timed loop. Starts when called (the barrier has released). `PACED` is whether the
    /// worker has a rate limit (`self.pacer`).
    fn drive<E: Engine + ?Sized, const PACED: bool>(
        &mut self,
        engine: &mut E,
        stop: &AtomicBool,
        interrupt: &AtomicBool,
    ) -> ThreadOutcome {
        let mut stats = Stats::default();
        let mut failure = None;
        let depth = self.depth;
        let bs = self.bs;
        let route = self.route;
        // Preallocated: nothing below grows.
        let mut free: Vec<u32> = (0..depth as u32).rev().collect();
        let mut slot_op: Vec<IoOp> = vec![
            IoOp {
                kind: OpKind::Read,
                file: 0,
                route: Route::Buffered,
                offset: 0,
                len: 0,
                slot: 0,
            };
            depth
        ];
        // Clock readings (`mono_ns`) of each slot's submission and, under a rate limit, of
        // its slot in the schedule.
        let mut submitted_at: Vec<u64> = vec![0; depth];
        let mut intended_at: Vec<u64> = vec![0; depth];
        // None is known at compile time in the unpaced loop: every schedule branch folds away.
        let mut pacer = if PACED { self.pacer } else { None };
        let mut batch: Vec<IoOp> = Vec::with_capacity(depth);
        let mut done: Vec<Completion> = Vec::with_capacity(depth * 2);
        let mut sys = self.sys;
        let mut inflight = 0usize;
        let mut issuing = true;
        // Stopped (error, stop flag, Ctrl-C, deadline): ops handed back by the engine are dropped,
        // where running out of ops (`issuing` false alone) still submits them.
        let mut halted = false;
        let mut trace = self.trace.take();

        // Histograms are allocated here, untimed, so recording never allocates; the
        // schedule latency only exists under a rate limit (otherwise it equals `lat`).
        stats.lat = LatencyHist::new();
        if pacer.is_some() {
            stats.sched_lat = LatencyHist::new();
        }
        let usage0 = cpu::thread_usage();
        let t0 = mono_ns();
        // Trace records take `Instant`s: the loop's clock readings are placed on that scale
        // through one pair of readings taken here (both clocks are CLOCK_MONOTONIC; the pair
        // is ~20 ns apart, so every record of this worker is shifted by at most that much).
        let trace_base = trace.as_ref().map(|_| (Instant::now(), mono_ns()));
        let deadline = self
            .deadline
            .map(|d| t0.saturating_add(d.as_nanos().min(u64::MAX as u128) as u64));
        if let Some(p) = pacer.as_mut() {
            p.start(t0);
        }
        let mut now = t0;
        loop {
            if issuing {
                while inflight + batch.len() < depth {
                    if pacer.is_some_and(|p| !p.is_due(now)) {
                        break;
                    }
                    let Some((kind, offset)) = self.gen.next_op() else {
                        issuing = false;
                        break;
                    };
                    // inflight + batch.len() < depth, so a slot is free.
                    let Some(slot) = free.pop() else { break };
                    let route = route.route(offset, bs as u64);
                    match route {
                        Route::Fallback => stats.buffered_fallback_ops += 1,
                        Route::Direct => stats.direct_ops += 1,
                        Route::Buffered => {}
                    }
                    let op = IoOp {
                        kind,
                        file: 0,
                        route,
                        offset,
                        len: bs,
                        slot,
                    };
                    slot_op[slot as usize] = op;
                    if let Some(p) = pacer.as_mut() {
                        intended_at[slot as usize] = p.take();
                    }
                    batch.push(op);
                }
            }
            if halted && !batch.is_empty() {
                // Stopped with ops an engine handed back still waiting: they never started.
                for op in &batch {
                    free.push(op.slot);
                }
                batch.clear();
            }
            if !batch.is_empty() {
                let now = mono_ns();
                for op in &batch {
                    submitted_at[op.slot as usize] = now;
                }
                match engine.submit(&batch, &mut sys) {
                    Ok(n) => {
                        for i in 0..n {
                            stats.inflight[inflight_bucket((inflight + i + 1) as u32)] += 1;
                        }
                        inflight += n;
                        if n == batch.len() {
                            batch.clear();
                        } else if n == 0 && inflight == 0 {
                            // Nothing in flight and nothing taken: waiting cannot help.
                            let at = batch.first().map(|op| op.offset);
                            failure = Some(self.failure(
                                at,
                                format!(
                                    "submit: the engine took none of {} I/Os with none in flight",
                                    batch.len()
                                ),
                            ));
                            stop.store(true, Ordering::Relaxed);
                            issuing = false;
                            halted = true;
                        } else {
                            // Ops the engine did not take (a full submission queue) keep
                            // their slots and go first in the next submit: an I/O drawn from
                            // the generator is issued, never dropped.
                            batch.drain(..n);
                        }
                    }
                    Err(e) => {
                        let at = batch.first().map(|op| op.offset);
                        failure = Some(self.failure(at, format!("submit: {e}")));
                        stop.store(true, Ordering::Relaxed);
                        issuing = false;
                        halted = true;
                    }
                }
                if halted {
                    for op in &batch {
                        free.push(op.slot);
                    }
                    batch.clear();
                }
            }
            // Under a rate limit, wait for completions only until the next I/O is due
            // (bounded so that stop, Ctrl-C and the deadline are noticed promptly).
            let wait = match pacer {
                Some(p) if issuing => {
                    let mut w = p.until_due(now).min(Duration::from_millis(100));
                    if let Some(d) = deadline {
                        w = w.min(Duration::from_nanos(d.saturating_sub(now)));
                    }
                    Some(w).filter(|w| !w.is_zero() || inflight == 0)
                }
                _ => None,
            };
            if inflight == 0 && wait.is_none() {
                break;
            }
            let reaped = match wait {
                Some(w) => engine.reap_timeout(w, &mut done, &mut sys),
                None => engine.reap(1, &mut done, &mut sys),
            };
            if let Err(e) = reaped {
                failure = Some(self.failure(None, format!("reap: {e}")));
                stop.store(true, Ordering::Relaxed);
                break;
            }
            now = mono_ns();
            for c in done.iter() {
                let op = slot_op[c.slot as usize];
                let at = submitted_at[c.slot as usize];
                inflight -= 1;
                free.push(c.slot);
                if let (Some(ring), Some(base)) = (trace.as_mut(), trace_base) {
                    trace_record(ring, base, &op, at, now, c.result);
                }
                if c.result <= 0 && (c.result < 0 || op.len > 0) {
                    stats.errors += 1;
                    if failure.is_none() {
                        failure = Some(self.failure(Some(op.offset), io_error(op.kind, c.result)));
                    }
                    stop.store(true, Ordering::Relaxed);
                    issuing = false;
                    halted = true;
                    continue;
                }
                stats.lat.record(now.saturating_sub(at));
                if pacer.is_some() {
                    stats
                        .sched_lat
                        .record(now.saturating_sub(intended_at[c.slot as usize]));
                }
                match op.kind {
                    OpKind::Read => {
                        stats.read_ops += 1;
                        stats.read_bytes += c.result as u64;
                    }
                    OpKind::Write => {
                        stats.write_ops += 1;
                        stats.write_bytes += c.result as u64;
                    }
                }
            }
            done.clear();
            if issuing
                && (stop.load(Ordering::Relaxed)
                    || interrupt.load(Ordering::Relaxed)
                    || deadline.is_some_and(|d| now >= d))
            {
                issuing = false;
                halted = true;
            }
        }
        if self.fsync && failure.is_none() {
            if let Err(e) = engine.flush(&mut sys) {
                failure = Some(self.failure(None, format!("fsync failed: {e}")));
            }
        }
        stats.elapsed_s = mono_ns().saturating_sub(t0) as f64 / 1e9;
        stats.usage = cpu::thread_usage().since(&usage0);
        stats.syscalls = sys;
        if let Some(ring) = trace {
            crate::trace::finish_ring(ring);
        }
        ThreadOutcome {
            user: self.user,
            thread: self.thread,
            stats,
            failure,
        }
    }

    fn failure(&self, offset: Option<u64>, message: String) -> IoFailure {
        IoFailure {
            user: self.user,
            thread: self.thread,
            path: self.path.clone(),
            offset,
            message,
        }
    }
}

/// Give the calling worker thread a descriptor table of its own that holds only standard
/// input, output and error; the descriptors it opens next live in that table alone. Call it
/// first thing in a spawned worker thread, never on a thread that goes on to use descriptors
/// it had before (they are gone from its table).
///
/// Why: while a descriptor table is shared by several threads (the runner's main thread
/// waits in `join` on the same table), the kernel takes and drops a reference on the file at
/// every pread/pwrite (two atomic operations on the `struct file`); on a table used by one
/// thread it borrows the file instead. That is ~10 ns per I/O on a 1 us page-cache read
/// (docs/per-io-cost.md). Closing the inherited copies at once (one `close_range` with
/// CLOSE_RANGE_UNSHARE) means the worker keeps no other file open behind the runner's back:
/// a lock the runner drops, or a file it closes, is released when the runner says so.
///
/// Returns false where the kernel cannot (before Linux 5.9): the thread then shares the
/// table as before, which is correct, only slower.
pub fn private_fd_table() -> bool {
    // SAFETY: close_range on our own table. With CLOSE_RANGE_UNSHARE the kernel first copies
    // the table (the runner's main thread still shares it, so a copy is always made) and
    // closes descriptors 3 and up in the copy only; the other threads' table is untouched.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_long,
            libc::c_long::from(u32::MAX),
            libc::CLOSE_RANGE_UNSHARE as libc::c_long,
        )
    };
    rc == 0
}

/// One trace record, with the loop's clock readings placed on the trace's `Instant` scale
/// through `base` (an `Instant` and the reading taken with it). Out of line and cold: kept
/// apart, its time arithmetic is not hoisted into the untraced loop.
#[cold]
#[inline(never)]
fn trace_record(
    ring: &mut crate::trace::TraceRing,
    (base, base_ns): (Instant, u64),
    op: &IoOp,
    at: u64,
    now: u64,
    result: i64,
) {
    let on = |ns: u64| base + Duration::from_nanos(ns.saturating_sub(base_ns));
    ring.record(op.kind, op.offset, op.len, on(at), on(now), result);
}

/// What a failed completion says: a negative errno, or 0 bytes for a non-empty I/O.
#[cold]
fn io_error(kind: OpKind, result: i64) -> String {
    if result == 0 {
        return format!("{} returned 0 bytes (end of file)", kind_name(kind));
    }
    let err = std::io::Error::from_raw_os_error((-result) as i32);
    if err.raw_os_error() == Some(libc::ENOSPC) {
        format!("file system full (ENOSPC) on {}", kind_name(kind))
    } else {
        format!("{} failed: {err}", kind_name(kind))
    }
}

fn kind_name(k: OpKind) -> &'static str {
    match k {
        OpKind::Read => "read",
        OpKind::Write => "write",
    }
}

fn close_all(fds: &[i32]) {
    for &fd in fds.iter().filter(|&&fd| fd >= 0) {
        // Closing descriptors this worker opened, once.
        let _ = engine::meta::close(fd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run time no Duration holds is the Job's mistake, named in one usage line.
    #[test]
    fn unrepresentable_run_time_is_a_usage_error() {
        let mut job = Job {
            time_s: Some(f64::NAN),
            ..Default::default()
        };
        assert_eq!(
            deadline_of(&job),
            Err(crate::error::UsageError(
                "bad run time Some(NaN): must be a finite number of seconds".into()
            ))
        );
        job.time_s = Some(1.5);
        assert_eq!(deadline_of(&job), Ok(Some(Duration::from_millis(1500))));
        job.time_s = None;
        assert_eq!(deadline_of(&job), Ok(None));
    }

    fn is_open(fd: i32) -> bool {
        // SAFETY: F_GETFD only asks whether the descriptor number is open.
        unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
    }

    #[test]
    fn a_worker_thread_gets_a_table_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        let before = std::fs::File::open(&path).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&before);
        let (own, seen, opened) = std::thread::spawn(move || {
            let own = private_fd_table();
            let seen = is_open(fd);
            let f = std::fs::File::open(&path).unwrap();
            let opened = std::os::fd::AsRawFd::as_raw_fd(&f);
            std::mem::forget(f); // left open in the worker's table only
            (own, seen, opened)
        })
        .join()
        .unwrap();
        assert!(
            own,
            "close_range with CLOSE_RANGE_UNSHARE failed on this kernel"
        );
        assert!(!seen, "the worker still held the runner's descriptor");
        assert!(is_open(fd), "the runner's own descriptor was closed");
        // The worker's descriptor lived in its table and went with the thread. Its number
        // is `fd` itself when that was the lowest free one there (impossible in a shared
        // table, where `before` holds it); otherwise here it is free or names some other
        // file (tests run side by side), never ours.
        let ino = |fd: i32| {
            // SAFETY: fstat fills a zeroed struct we own; a closed descriptor just fails.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
        };
        assert!(
            opened == fd || ino(opened).is_none() || ino(opened) != ino(fd),
            "the worker's file leaked into the runner's table"
        );
        drop(before);
    }

    #[test]
    fn a_target_swapped_after_prepare_is_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, vec![9u8; 8192]).unwrap();
        let job = Job {
            targets: vec![t.clone()],
            access: crate::job::Access::Write,
            io_count: Some(2),
            block_size: 4096,
            ..Default::default()
        };
        let (plan, cleanup) = super::super::target::prepare(&job).unwrap();
        let id = cleanup.ids()[0];
        // Swap the path for a symlink to the victim, then for a hard link to it.
        std::fs::remove_file(&t).unwrap();
        std::os::unix::fs::symlink(&victim, &t).unwrap();
        let e = Worker::prepare(&job, &plan, Some(id), 0, 0).err().unwrap();
        assert!(e.message.contains("symbolic link"), "{}", e.message);
        std::fs::remove_file(&t).unwrap();
        std::fs::hard_link(&victim, &t).unwrap();
        let e = Worker::prepare(&job, &plan, Some(id), 0, 0).err().unwrap();
        assert!(e.message.contains("replaced"), "{}", e.message);
        assert_eq!(std::fs::read(&victim).unwrap(), vec![9u8; 8192]);
        drop(cleanup);
        assert!(victim.exists());
        assert!(
            t.exists(),
            "the swapped-in file is not removed by the cleanup"
        );
    }
}

/// The worker loop driven by the scripted engine: stop conditions, pacing, errors and partial
/// results, with exact counts (no files).
#[cfg(test)]
mod mock_tests {
    use super::*;
    use crate::engine::mock::{Log, MockEngine, Outcome, Script};
    use crate::job::{Access, RateLimit, RateScope};
    use std::sync::Arc;

    const BS: u64 = 4096;
    const SIZE: u64 = 1 << 20;

    fn job(access: Access) -> Job {
        Job {
            targets: vec!["mock".into()],
            access,
            block_size: BS,
            ..Default::default()
        }
    }

    /// Run one worker of `job` on the scripted engine; returns its outcome, the engine's log,
    /// and whether `stop` was raised.
    fn drive(job: &Job, mut script: Script) -> (ThreadOutcome, Log, bool) {
        script.log = true;
        if script.depth == 0 {
            script.depth = job.queue_depth;
        }
        let (engine, log) = MockEngine::new(script, job.block_size as usize);
        let w = Worker::with_engine(job, SIZE, 0, 0, Box::new(engine)).unwrap();
        let stop = AtomicBool::new(false);
        let interrupt = AtomicBool::new(false);
        let out = w.run_until(&stop, &interrupt);
        let log = std::mem::take(&mut *log.lock().unwrap());
        (out, log, stop.load(Ordering::SeqCst))
    }

    /// The offsets the job's generator issues, in order (what the engine must have seen).
    fn planned_offsets(job: &Job) -> Vec<u64> {
        let mut c = Core::new(
            job,
            SIZE,
            0,
            0,
            String::new(),
            RouteRule::new(job.cache, job.block_size, 1),
            None,
            SyscallCounts::default(),
            None,
        );
        std::iter::from_fn(|| c.gen.next_op().map(|(_, o)| o)).collect()
    }

    fn offsets(log: &Log) -> Vec<u64> {
        log.ops.iter().map(|(op, _)| op.offset).collect()
    }

    #[test]
    fn stops_at_the_ops_count_times_repeats() {
        let mut j = job(Access::RandRead);
        j.io_count = Some(100);
        j.repeats = 3;
        let (out, log, stop) = drive(&j, Script::default());
        let s = &out.stats;
        assert!(out.failure.is_none());
        assert_eq!((s.read_ops, s.write_ops, s.errors), (300, 0, 0));
        assert_eq!(s.read_bytes, 300 * BS);
        assert_eq!(s.lat.len(), 300);
        assert_eq!(
            s.inflight[0], 300,
            "queue depth 1: every I/O alone in flight"
        );
        assert_eq!(offsets(&log), planned_offsets(&j));
        assert_eq!(log.ops.len(), 300);
        assert_eq!(log.flushes, 0, "a read job does not flush");
        assert!(!stop, "a complete worker does not stop the others");
    }

    #[test]
    fn a_sequential_pass_stops_after_the_target_bytes() {
        // No count, no time: one pass over the target, every block exactly once.
        let j = job(Access::Read);
        let (out, log, _) = drive(&j, Script::default());
        assert_eq!(out.stats.read_ops, SIZE / BS);
        assert_eq!(out.stats.read_bytes, SIZE);
        let want: Vec<u64> = (0..SIZE / BS).map(|b| b * BS).collect();
        assert_eq!(offsets(&log), want);
    }

    #[test]
    fn stops_at_the_deadline_and_counts_what_completed() {
        let mut j = job(Access::RandRead);
        j.time_s = Some(0.2);
        j.queue_depth = 4;
        let script = Script {
            latency: Duration::from_millis(2),
            ..Default::default()
        };
        let (out, log, _) = drive(&j, script);
        let s = &out.stats;
        assert!(out.failure.is_none());
        assert!(s.elapsed_s >= 0.2, "elapsed {}", s.elapsed_s);
        // Everything submitted was completed and counted; nothing was issued after the
        // deadline (the last batch went out before it).
        assert_eq!(s.read_ops, log.ops.len() as u64);
        assert_eq!(s.lat.len(), s.read_ops);
        let first = log.ops[0].1;
        let last = log.ops.last().unwrap().1;
        assert!(last.duration_since(first) < Duration::from_millis(200));
        // At most 4 in flight, each 2 ms: at most 4 x 100 I/Os fit in 0.2 s.
        assert!(s.read_ops > 0 && s.read_ops <= 4 * 101, "{}", s.read_ops);
        assert!(
            s.lat.summary().min >= 2_000_000,
            "latency below the scripted 2 ms"
        );
    }

    #[test]
    fn an_error_stops_the_run_and_keeps_what_completed() {
        // Depth 4, all ops of a batch complete together: ops 0-3, then 4-7 of which op 5
        // fails. The failed op is not counted; 4, 6 and 7 were in flight and are.
        let mut j = job(Access::RandRead);
        j.io_count = Some(1000);
        j.queue_depth = 4;
        let script = Script {
            outcomes: vec![(5, Outcome::Errno(libc::EIO))],
            ..Default::default()
        };
        let (out, log, stop) = drive(&j, script);
        let f = out.failure.expect("a failure");
        assert_eq!(f.offset, Some(planned_offsets(&j)[5]));
        assert!(f.message.contains("read failed"), "{}", f.message);
        assert_eq!(f.path, "mock");
        assert_eq!((out.stats.read_ops, out.stats.errors), (7, 1));
        assert_eq!(out.stats.read_bytes, 7 * BS);
        assert_eq!(log.ops.len(), 8, "nothing issued after the error");
        assert!(stop, "the other workers are told to stop");
    }

    #[test]
    fn end_of_file_is_an_error_and_a_short_transfer_counts_its_bytes() {
        let mut j = job(Access::RandRead);
        j.io_count = Some(10);
        let script = Script {
            outcomes: vec![(2, Outcome::Bytes(100)), (6, Outcome::Bytes(0))],
            ..Default::default()
        };
        let (out, _, _) = drive(&j, script);
        let f = out.failure.expect("end of file is a failure");
        assert!(f.message.contains("returned 0 bytes"), "{}", f.message);
        assert_eq!(f.offset, Some(planned_offsets(&j)[6]));
        assert_eq!((out.stats.read_ops, out.stats.errors), (6, 1));
        assert_eq!(out.stats.read_bytes, 5 * BS + 100);
    }

    #[test]
    fn enospc_on_a_write_is_named() {
        let mut j = job(Access::RandWrite);
        j.io_count = Some(10);
        let script = Script {
            outcomes: vec![(3, Outcome::Errno(libc::ENOSPC))],
            ..Default::default()
        };
        let (out, _, _) = drive(&j, script);
        let f = out.failure.unwrap();
        assert_eq!(f.message, "file system full (ENOSPC) on write");
        assert_eq!((out.stats.write_ops, out.stats.write_bytes), (3, 3 * BS));
    }

    #[test]
    fn a_failed_submit_is_a_failure_and_its_ops_are_not_counted() {
        let mut j = job(Access::RandRead);
        j.io_count = Some(10);
        let script = Script {
            submit_error_at: Some(4),
            ..Default::default()
        };
        let (out, log, stop) = drive(&j, script);
        let f = out.failure.unwrap();
        assert!(f.message.starts_with("submit: "), "{}", f.message);
        assert_eq!(f.offset, Some(planned_offsets(&j)[4]));
        assert_eq!(out.stats.read_ops, 4);
        assert_eq!(log.submit_calls, 5);
        assert!(stop);
    }

    #[test]
    fn a_failed_reap_is_a_failure() {
        let mut j = job(Access::RandRead);
        j.io_count = Some(10);
        let script = Script {
            reap_error_at: Some(3),
            ..Default::default()
        };
        let (out, _, stop) = drive(&j, script);
        assert!(out.failure.unwrap().message.starts_with("reap: "));
        assert_eq!(out.stats.read_ops, 3);
        assert!(stop);
    }

    #[test]
    fn ops_an_engine_hands_back_are_issued_again_not_lost() {
        // The engine takes one op per call at depth 4: every planned op is still issued once,
        // in order, and the in-flight distribution says what really was in flight.
        let mut j = job(Access::RandRead);
        j.io_count = Some(50);
        j.queue_depth = 4;
        let script = Script {
            accept_at_most: Some(1),
            latency: Duration::from_micros(200),
            ..Default::default()
        };
        let (out, log, _) = drive(&j, script);
        assert!(out.failure.is_none());
        assert_eq!(out.stats.read_ops, 50);
        assert_eq!(offsets(&log), planned_offsets(&j));
        let slots: std::collections::HashSet<u32> = log.ops.iter().map(|(op, _)| op.slot).collect();
        assert!(slots.len() <= 4 && slots.iter().all(|&s| s < 4));
    }

    #[test]
    fn in_flight_distribution_at_depth_four() {
        let mut j = job(Access::RandRead);
        j.io_count = Some(8);
        j.queue_depth = 4;
        // Each batch of four completes together: two batches, each at depths 1, 2, 3, 4.
        let (out, _, _) = drive(&j, Script::default());
        assert_eq!(out.stats.read_ops, 8);
        assert_eq!(out.stats.inflight, [2, 2, 4, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn an_interrupt_stops_issuing_and_the_result_is_partial_not_failed() {
        let mut j = job(Access::RandRead);
        j.time_s = Some(60.0);
        let flag = Arc::new(AtomicBool::new(false));
        let (engine, log) = MockEngine::new(
            Script {
                depth: 1,
                log: true,
                raise_after: Some((41, flag.clone())),
                ..Default::default()
            },
            BS as usize,
        );
        let w = Worker::with_engine(&j, SIZE, 0, 0, Box::new(engine)).unwrap();
        let stop = AtomicBool::new(false);
        let out = w.run_until(&stop, &flag);
        // Op 41 was in flight when the interrupt came: it completes and counts, no more follow.
        assert!(out.failure.is_none());
        assert_eq!(out.stats.read_ops, 42);
        assert_eq!(log.lock().unwrap().ops.len(), 42);
        assert!(
            !stop.load(Ordering::SeqCst),
            "an interrupt is not a failure"
        );
        assert!(out.stats.elapsed_s < 30.0);
    }

    #[test]
    fn another_workers_stop_ends_this_one() {
        let mut j = job(Access::RandRead);
        j.io_count = Some(1_000_000);
        let stop = Arc::new(AtomicBool::new(false));
        let (engine, _) = MockEngine::new(
            Script {
                depth: 1,
                raise_after: Some((9, stop.clone())),
                ..Default::default()
            },
            BS as usize,
        );
        let w = Worker::with_engine(&j, SIZE, 0, 0, Box::new(engine)).unwrap();
        let out = w.run_until(&stop, &AtomicBool::new(false));
        assert!(out.failure.is_none());
        assert_eq!(out.stats.read_ops, 10);
    }

    #[test]
    fn writes_are_flushed_once_and_a_failed_flush_fails_the_worker() {
        let mut j = job(Access::Write);
        j.io_count = Some(5);
        j.fsync = true;
        let (out, log, _) = drive(&j, Script::default());
        assert!(out.failure.is_none());
        assert_eq!((out.stats.write_ops, log.flushes), (5, 1));
        assert_eq!(out.stats.syscalls.fsync, 1);
        let (out, _, _) = drive(
            &j,
            Script {
                flush_errno: Some(libc::EIO),
                ..Default::default()
            },
        );
        assert!(out.failure.unwrap().message.starts_with("fsync failed"));
        assert_eq!(out.stats.write_ops, 5, "the writes still count");
    }

    #[test]
    fn a_rate_limit_issues_on_an_absolute_schedule() {
        // 200 IOPS: I/O k is issued no earlier than k x 5 ms after the start.
        let mut j = job(Access::RandRead);
        j.io_count = Some(20);
        j.rate = RateLimit {
            iops: Some(200),
            bytes_per_sec: None,
            scope: RateScope::Thread,
        };
        let (out, log, _) = drive(&j, Script::default());
        let s = &out.stats;
        assert_eq!(s.read_ops, 20);
        assert_eq!(
            s.sched_lat.len(),
            20,
            "schedule latency measured under a rate limit"
        );
        let t0 = log.ops[0].1;
        for (k, (_, at)) in log.ops.iter().enumerate() {
            assert!(
                at.duration_since(t0) + Duration::from_millis(2)
                    >= Duration::from_millis(5 * k as u64),
                "I/O {k} issued early"
            );
        }
        assert!(s.elapsed_s >= 0.095, "elapsed {}", s.elapsed_s);
    }

    #[test]
    fn a_rate_limited_worker_that_falls_behind_counts_the_wait() {
        // 1000 IOPS asked, but every I/O takes 10 ms at depth 1: the schedule is not moved,
        // so I/O k waited at least k x 9 ms for its slot, and the schedule latency shows it
        // (no coordinated omission) while the service latency stays the I/O's own.
        let mut j = job(Access::RandRead);
        j.io_count = Some(10);
        j.rate = RateLimit {
            iops: Some(1000),
            bytes_per_sec: None,
            scope: RateScope::Thread,
        };
        let script = Script {
            latency: Duration::from_millis(10),
            ..Default::default()
        };
        let (out, _, _) = drive(&j, script);
        let s = &out.stats;
        assert_eq!(s.read_ops, 10);
        // I/O 9 was due at 9 ms, issued after nine 10 ms I/Os and took 10 ms itself.
        assert!(
            s.sched_lat.summary().max >= 90_000_000,
            "sched {:?}",
            s.sched_lat.summary()
        );
        assert!(
            s.lat.summary().min >= 10_000_000,
            "service {:?}",
            s.lat.summary()
        );
        assert!(s.sched_lat.summary().min >= s.lat.summary().min);
    }

    #[test]
    fn without_a_rate_limit_there_is_one_latency() {
        let mut j = job(Access::RandRead);
        j.io_count = Some(10);
        let (out, _, _) = drive(&j, Script::default());
        assert_eq!(out.stats.lat.len(), 10);
        assert_eq!(out.stats.sched_lat.len(), 0);
    }

    #[test]
    fn route_rule_agrees_with_the_policy() {
        let policies = [
            CachePolicy::Buffered,
            CachePolicy::Dsync,
            CachePolicy::Direct,
            CachePolicy::Concurrent,
            CachePolicy::Raw,
            CachePolicy::Discovered { threshold: 8192 },
            CachePolicy::Discovered { threshold: 1 },
        ];
        let mut rules = std::collections::HashSet::new();
        for policy in policies {
            for bs in [512u64, 1000, 4096, 6144, 8192, 65536] {
                for align in [1u64, 512, 4096, 3000] {
                    let rule = RouteRule::new(policy, bs, align);
                    rules.insert(format!("{:?}", std::mem::discriminant(&rule)));
                    for k in 0..64u64 {
                        for off in [k * bs, k * 512, k * 4096 + 100, k * 1000] {
                            assert_eq!(
                                rule.route(off, bs),
                                policy.route(off, bs, align),
                                "{policy:?} bs {bs} align {align} offset {off}"
                            );
                        }
                    }
                }
            }
        }
        assert_eq!(rules.len(), 3, "every kind of rule was exercised");
    }

    /// What the loop itself costs per I/O, and its two biggest parts: one clock reading and
    /// one histogram record. Not a pass/fail test: run it to measure (docs/per-io-cost.md),
    /// `taskset -c 1 cargo test --release --lib null_engine_overhead -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn null_engine_overhead() {
        const N: u64 = 20_000_000;
        let cpu_ns = |f: &mut dyn FnMut()| {
            let u0 = cpu::thread_usage();
            f();
            cpu::thread_usage().since(&u0).cpu_s() * 1e9 / N as f64
        };
        let mut j = job(Access::RandRead);
        j.io_count = Some(N);
        for _ in 0..5 {
            let clock = cpu_ns(&mut || {
                let mut x = 0u64;
                for _ in 0..N {
                    x = x.wrapping_add(mono_ns());
                }
                std::hint::black_box(x);
            });
            let mut h = LatencyHist::new();
            let mut v = 0x2545_f491_4f6c_dd1du64;
            let record = cpu_ns(&mut || {
                for _ in 0..N {
                    // Latencies spread over 700..1723 ns, like page-cache reads.
                    v ^= v << 13;
                    v ^= v >> 7;
                    v ^= v << 17;
                    h.record(700 + (v & 1023));
                }
            });
            let (engine, _) = MockEngine::new(Script::default(), BS as usize);
            let w = Worker::with_engine(&j, 1 << 30, 0, 0, Box::new(engine)).unwrap();
            let out = w.run_until(&AtomicBool::new(false), &AtomicBool::new(false));
            let s = &out.stats;
            assert_eq!(s.read_ops, N);
            println!(
                "per I/O, CPU ns: null-engine loop {:.1} (wall {:.1}); one clock reading {:.1}; \
                 one histogram record {:.1} (includes ~1 ns of xorshift)",
                s.usage.cpu_s() * 1e9 / N as f64,
                s.elapsed_s * 1e9 / N as f64,
                clock,
                record
            );
        }
    }

    /// Runner-level tests with the scripted engine: barrier, stop, status (no files).
    mod with_mock {
        use crate::engine::mock::{MockEngine, Outcome, Script};
        use crate::job::Job;
        use crate::runner::*;
        use crate::runner::{mark, run_threads_spawning, settle, worker, Prepare};
        use crate::stats::Stats;
        use anyhow::Result;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::time::Duration;

        fn job(threads: u32) -> Job {
            Job {
                targets: vec!["a".into(), "b".into()],
                threads,
                access: crate::job::Access::RandRead,
                block_size: 4096,
                ..Default::default()
            }
        }

        fn plan(job: &Job) -> Plan {
            Plan {
                targets: Vec::new(),
                cache: job.cache,
                notes: Vec::new(),
            }
        }

        fn run_mock(job: &Job, prepare: Prepare, go: bool) -> Result<(Vec<ThreadOutcome>, f64)> {
            run_threads_spawning(
                job,
                &plan(job),
                &[],
                all_workers(job),
                || go,
                |b, f| b.spawn(f),
                prepare,
            )
        }

        static PREPARED: AtomicUsize = AtomicUsize::new(0);
        static EARLY: AtomicUsize = AtomicUsize::new(0);
        static SUBMITS: AtomicUsize = AtomicUsize::new(0);

        /// An engine that notes, at its first submit, whether every worker was prepared.
        struct Watch(MockEngine, bool);
        impl crate::engine::Engine for Watch {
            fn caps(&self) -> crate::engine::Caps {
                self.0.caps()
            }
            fn submit(
                &mut self,
                ops: &[crate::engine::IoOp],
                sys: &mut crate::stats::SyscallCounts,
            ) -> std::io::Result<usize> {
                SUBMITS.fetch_add(1, Ordering::SeqCst);
                if !self.1 {
                    self.1 = true;
                    if PREPARED.load(Ordering::SeqCst) < 4 {
                        EARLY.fetch_add(1, Ordering::SeqCst);
                    }
                }
                self.0.submit(ops, sys)
            }
            fn reap(
                &mut self,
                min: usize,
                done: &mut Vec<crate::engine::Completion>,
                sys: &mut crate::stats::SyscallCounts,
            ) -> std::io::Result<usize> {
                self.0.reap(min, done, sys)
            }
            fn buffers(&mut self) -> &mut crate::engine::BufferPool {
                self.0.buffers()
            }
            fn flush(&mut self, sys: &mut crate::stats::SyscallCounts) -> std::io::Result<()> {
                self.0.flush(sys)
            }
        }

        #[test]
        fn no_worker_starts_before_every_worker_is_prepared() {
            // 2 targets x 2 threads; the last one takes 150 ms to prepare.
            fn slow_prepare(
                job: &Job,
                _: &Plan,
                _: Option<mark::FileId>,
                user: usize,
                thread: u32,
            ) -> Result<worker::Worker, IoFailure> {
                if (user, thread) == (1, 1) {
                    std::thread::sleep(Duration::from_millis(150));
                }
                let (e, _) = MockEngine::new(Script::default(), 4096);
                let w = worker::Worker::with_engine(
                    job,
                    1 << 20,
                    user,
                    thread,
                    Box::new(Watch(e, false)),
                );
                PREPARED.fetch_add(1, Ordering::SeqCst);
                w
            }
            let mut j = job(2);
            j.io_count = Some(50);
            // Called off at the gate: nothing runs.
            let e = run_mock(&j, slow_prepare, false).unwrap_err();
            assert!(e.to_string().contains("called off"), "{e}");
            assert_eq!(
                SUBMITS.load(Ordering::SeqCst),
                0,
                "no I/O before the gate opened"
            );
            PREPARED.store(0, Ordering::SeqCst);
            let (out, _) = run_mock(&j, slow_prepare, true).unwrap();
            assert_eq!(
                EARLY.load(Ordering::SeqCst),
                0,
                "a worker started before the others were ready"
            );
            assert_eq!(out.len(), 4);
            assert!(out
                .iter()
                .all(|o| o.stats.read_ops == 50 && o.failure.is_none()));
            assert_eq!(SUBMITS.load(Ordering::SeqCst), 200);
            let (status, failures) = settle(&out, false);
            assert_eq!((status, failures.len()), (RunStatus::Complete, 0));
        }

        #[test]
        fn one_failing_worker_stops_the_rest_and_the_run_failed() {
            // Worker (0, 1) fails its 20th I/O; the others would run for a minute.
            fn prepare(
                job: &Job,
                _: &Plan,
                _: Option<mark::FileId>,
                user: usize,
                thread: u32,
            ) -> Result<worker::Worker, IoFailure> {
                let script = Script {
                    latency: Duration::from_micros(100),
                    outcomes: if (user, thread) == (0, 1) {
                        vec![(19, Outcome::Errno(libc::EIO))]
                    } else {
                        Vec::new()
                    },
                    ..Default::default()
                };
                let (e, _) = MockEngine::new(script, 4096);
                worker::Worker::with_engine(job, 1 << 20, user, thread, Box::new(e))
            }
            let mut j = job(2);
            j.time_s = Some(60.0);
            let t = std::time::Instant::now();
            let (out, _) = run_mock(&j, prepare, true).unwrap();
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "the others did not stop"
            );
            assert_eq!(out.len(), 4);
            let failed: Vec<_> = out.iter().filter(|o| o.failure.is_some()).collect();
            assert_eq!(failed.len(), 1);
            assert_eq!(
                (failed[0].user, failed[0].thread, failed[0].stats.read_ops),
                (0, 1, 19)
            );
            // Even interrupted, a run with a failure is failed, and names it.
            let (status, failures) = settle(&out, true);
            assert_eq!(status, RunStatus::Failed);
            assert_eq!(failures.len(), 1);
            assert!(failures[0].message.contains("read failed"));
        }

        #[test]
        fn a_worker_that_cannot_prepare_fails_the_run_without_io() {
            fn prepare(
                job: &Job,
                _: &Plan,
                _: Option<mark::FileId>,
                user: usize,
                thread: u32,
            ) -> Result<worker::Worker, IoFailure> {
                if user == 1 {
                    return Err(IoFailure {
                        user,
                        thread,
                        path: "b".into(),
                        offset: None,
                        message: "open: denied".into(),
                    });
                }
                let (e, _) = MockEngine::new(
                    Script {
                        latency: Duration::from_micros(100),
                        ..Default::default()
                    },
                    4096,
                );
                worker::Worker::with_engine(job, 1 << 20, user, thread, Box::new(e))
            }
            let mut j = job(1);
            j.time_s = Some(60.0);
            let (out, _) = run_mock(&j, prepare, true).unwrap();
            assert_eq!(out.len(), 2);
            let bad = out.iter().find(|o| o.user == 1).unwrap();
            assert_eq!(bad.stats.ops(), 0);
            assert_eq!(bad.failure.as_ref().unwrap().message, "open: denied");
            assert_eq!(settle(&out, false).0, RunStatus::Failed);
        }

        #[test]
        fn status_is_partial_only_when_interrupted_without_failures() {
            let ok = ThreadOutcome {
                user: 0,
                thread: 0,
                stats: Stats::default(),
                failure: None,
            };
            assert_eq!(
                settle(std::slice::from_ref(&ok), false).0,
                RunStatus::Complete
            );
            assert_eq!(
                settle(std::slice::from_ref(&ok), true).0,
                RunStatus::Partial
            );
            assert_eq!(settle(&[], true).0, RunStatus::Partial);
        }
    }
}
