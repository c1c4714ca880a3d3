//! One worker thread: open its descriptors and buffers (untimed), wait at the start barrier,
//! then run the I/O loop. The loop holds no lock and allocates nothing; it reads the clock
//! around each I/O and bumps counters in its own `Stats`.

use super::mark::FileId;
use super::opgen::{thread_seed, GenSpec, OpGen};
use super::pace::Pacer;
use super::target::{Plan, TargetKind};
use crate::engine::{self, BufferPool, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::job::{Advice, CachePolicy, EngineKind, Job, Route};
use crate::stats::{cpu, inflight_bucket, LatencyHist, Stats, SyscallCounts};
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

pub struct Worker {
    user: usize,
    thread: u32,
    path: String,
    engine: Box<dyn Engine>,
    gen: OpGen,
    policy: CachePolicy,
    align: u64,
    bs: u32,
    depth: usize,
    fsync: bool,
    deadline: Option<Duration>,
    fds: Vec<i32>,
    sys: SyscallCounts,
    /// Issue schedule under a rate limit.
    pacer: Option<Pacer>,
    /// Per-I/O trace ring when `--trace` is on (allocated here, untimed).
    trace: Option<crate::trace::TraceRing>,
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
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    // SAFETY: NUL-terminated path; the descriptor is closed by the worker's Drop (or below).
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC | nofollow) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ELOOP) {
            return Err(std::io::Error::other(
                "the target was replaced by a symbolic link during the run; not followed",
            ));
        }
        return Err(e);
    }
    if let Some(want) = id {
        // SAFETY: fstat fills a zeroed struct we own, on the descriptor just opened.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::fstat(fd, &mut st) } == 0;
        if !ok || st.st_dev != want.dev || st.st_ino != want.ino {
            // SAFETY: closing the descriptor opened above, once.
            unsafe { libc::close(fd) };
            return Err(std::io::Error::other(
                "the target was replaced by another file during the run; not touched",
            ));
        }
    }
    Ok(fd)
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
        let mut fds = [-1i32; 3];
        let want_buffered =
            !policy.uses_direct() || matches!(policy, CachePolicy::Discovered { .. });
        if want_buffered || mmap {
            let mut fl = base;
            if policy.buffered_dsync() {
                fl |= libc::O_DSYNC;
            }
            fds[Route::Buffered as usize] = open_fd(&t.path, fl, job.force, id, &mut sys)
                .map_err(|e| fail(format!("open: {e}")))?;
        }
        if policy.uses_direct() && !mmap {
            fds[Route::Direct as usize] = open_fd(&t.path, base | libc::O_DIRECT, job.force, id, &mut sys)
                .map_err(|e| {
                    fail(format!(
                        "open with O_DIRECT: {e} (the file system may not support direct I/O; try --cache buffered)"
                    ))
                })?;
            if misaligned_possible && !matches!(policy, CachePolicy::Discovered { .. }) {
                fds[Route::Fallback as usize] =
                    open_fd(&t.path, base | libc::O_DSYNC, job.force, id, &mut sys)
                        .map_err(|e| fail(format!("open: {e}")))?;
            }
        }
        for &fd in fds.iter().filter(|&&fd| fd >= 0) {
            for a in &job.advice {
                let adv = match a {
                    Advice::NoReuse => libc::POSIX_FADV_NOREUSE,
                    Advice::Random => libc::POSIX_FADV_RANDOM,
                    Advice::Seq => libc::POSIX_FADV_SEQUENTIAL,
                };
                sys.fadvise += 1;
                // SAFETY: advisory call on an open descriptor.
                unsafe { libc::posix_fadvise(fd, 0, 0, adv) };
            }
        }
        // Buffers for the I/Os that can be in flight, not for the whole queue depth.
        let depth = job.effective_depth() as usize;
        let mut pool = BufferPool::new(depth, bs as usize, thread_seed(job.seed, user, thread))
            .map_err(|e| {
                close_all(&fds);
                fail(format!("allocating buffers: {e}"))
            })?;
        if job.mlock {
            pool.lock().map_err(|e| {
                close_all(&fds);
                fail(format!(
                    "mlock of I/O buffers failed: {e} (raise the memlock limit, e.g. ulimit -l unlimited)"
                ))
            })?;
        }
        let deadline = match job.time_s.map(Duration::try_from_secs_f64) {
            None => None,
            Some(Ok(d)) => Some(d),
            Some(Err(_)) => {
                close_all(&fds);
                return Err(fail(format!(
                    "bad run time {:?}: must be a finite number of seconds",
                    job.time_s
                )));
            }
        };
        let handles = vec![FileHandles { fds, size: t.size }];
        let engine = engine::build(job, handles, pool).map_err(|e| {
            close_all(&fds);
            fail(format!("{e:#}"))
        })?;
        let gen = OpGen::new(&GenSpec {
            random: job.access.is_random(),
            read_pct,
            block_size: bs,
            target_size: t.size,
            threads: job.threads,
            thread,
            io_count: job.io_count,
            repeats: job.repeats,
            timed: job.time_s.is_some(),
            seed: thread_seed(job.seed, user, thread),
        });
        let _ = TargetKind::File;
        let trace = crate::trace::ring_for_worker(job, &t.path, t.size, user, thread);
        Ok(Worker {
            user,
            thread,
            path: t.path.display().to_string(),
            engine,
            gen,
            policy,
            align,
            bs: bs as u32,
            depth,
            fsync: job.fsync && writes,
            deadline,
            fds: fds.to_vec(),
            sys,
            pacer: Pacer::for_worker(job, user as u64 * job.threads as u64 + thread as u64),
            trace,
        })
    }

    /// The timed loop. `start` is when the barrier released.
    pub fn run(mut self, stop: &AtomicBool) -> ThreadOutcome {
        let mut stats = Stats::default();
        let mut failure = None;
        let depth = self.depth;
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
        let mut submitted_at: Vec<Instant> = vec![Instant::now(); depth];
        // When each I/O should have been issued: its slot in the rate schedule, or its
        // submission time without a rate limit.
        let mut intended_at: Vec<Instant> = vec![Instant::now(); depth];
        let mut pacer = self.pacer;
        let mut batch: Vec<IoOp> = Vec::with_capacity(depth);
        let mut done: Vec<Completion> = Vec::with_capacity(depth * 2);
        let mut sys = self.sys;
        let mut inflight = 0usize;
        let mut issuing = true;
        let mut trace = self.trace.take();

        // Histograms are allocated here, untimed, so recording never allocates; the
        // schedule latency only exists under a rate limit (otherwise it equals `lat`).
        stats.lat = LatencyHist::new();
        if pacer.is_some() {
            stats.sched_lat = LatencyHist::new();
        }
        let usage0 = cpu::thread_usage();
        let t0 = Instant::now();
        let deadline = self.deadline.map(|d| t0 + d);
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
                    let slot = free
                        .pop()
                        .expect("a free slot exists while inflight < depth");
                    let route = self.policy.route(offset, self.bs as u64, self.align);
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
                        len: self.bs,
                        slot,
                    };
                    slot_op[slot as usize] = op;
                    if let Some(p) = pacer.as_mut() {
                        intended_at[slot as usize] = p.take();
                    }
                    batch.push(op);
                }
            }
            if !batch.is_empty() {
                let now = Instant::now();
                for (i, op) in batch.iter().enumerate() {
                    submitted_at[op.slot as usize] = now;
                    if pacer.is_none() {
                        intended_at[op.slot as usize] = now;
                    }
                    stats.inflight[inflight_bucket((inflight + i + 1) as u32)] += 1;
                }
                match self.engine.submit(&batch, &mut sys) {
                    Ok(n) => {
                        inflight += n;
                        // Ops the engine did not take go back to the free list.
                        for op in &batch[n..] {
                            free.push(op.slot);
                        }
                    }
                    Err(e) => {
                        let at = batch.first().map(|op| op.offset);
                        failure = Some(self.failure(at, format!("submit: {e}")));
                        stop.store(true, Ordering::Relaxed);
                        for op in &batch {
                            free.push(op.slot);
                        }
                        issuing = false;
                    }
                }
                batch.clear();
            }
            // Under a rate limit, wait for completions only until the next I/O is due
            // (bounded so that stop, Ctrl-C and the deadline are noticed promptly).
            let wait = match pacer {
                Some(p) if issuing => {
                    let mut w = p.until_due(now).min(Duration::from_millis(100));
                    if let Some(d) = deadline {
                        w = w.min(d.saturating_duration_since(now));
                    }
                    Some(w).filter(|w| !w.is_zero() || inflight == 0)
                }
                _ => None,
            };
            if inflight == 0 && wait.is_none() {
                break;
            }
            let reaped = match wait {
                Some(w) => self.engine.reap_timeout(w, &mut done, &mut sys),
                None => self.engine.reap(1, &mut done, &mut sys),
            };
            if let Err(e) = reaped {
                failure = Some(self.failure(None, format!("reap: {e}")));
                stop.store(true, Ordering::Relaxed);
                break;
            }
            now = Instant::now();
            for c in done.iter() {
                let op = slot_op[c.slot as usize];
                let lat = now.duration_since(submitted_at[c.slot as usize]).as_nanos() as u64;
                inflight -= 1;
                free.push(c.slot);
                if let Some(ring) = trace.as_mut() {
                    ring.record(
                        op.kind,
                        op.offset,
                        op.len,
                        submitted_at[c.slot as usize],
                        now,
                        c.result,
                    );
                }
                if c.result < 0 {
                    stats.errors += 1;
                    if failure.is_none() {
                        let err = std::io::Error::from_raw_os_error((-c.result) as i32);
                        let what = if err.raw_os_error() == Some(libc::ENOSPC) {
                            format!("file system full (ENOSPC) on {}", kind_name(op.kind))
                        } else {
                            format!("{} failed: {err}", kind_name(op.kind))
                        };
                        failure = Some(self.failure(Some(op.offset), what));
                    }
                    stop.store(true, Ordering::Relaxed);
                    issuing = false;
                    continue;
                }
                if c.result == 0 && op.len > 0 {
                    stats.errors += 1;
                    if failure.is_none() {
                        failure = Some(self.failure(
                            Some(op.offset),
                            format!("{} returned 0 bytes (end of file)", kind_name(op.kind)),
                        ));
                    }
                    stop.store(true, Ordering::Relaxed);
                    issuing = false;
                    continue;
                }
                stats.lat.record(lat);
                if pacer.is_some() {
                    stats
                        .sched_lat
                        .record(now.duration_since(intended_at[c.slot as usize]).as_nanos() as u64);
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
                    || super::signal::interrupted()
                    || deadline.is_some_and(|d| now >= d))
            {
                issuing = false;
            }
        }
        if self.fsync && failure.is_none() {
            if let Err(e) = self.engine.flush(&mut sys) {
                failure = Some(self.failure(None, format!("fsync failed: {e}")));
            }
        }
        stats.elapsed_s = t0.elapsed().as_secs_f64();
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

fn kind_name(k: OpKind) -> &'static str {
    match k {
        OpKind::Read => "read",
        OpKind::Write => "write",
    }
}

fn close_all(fds: &[i32]) {
    for &fd in fds.iter().filter(|&&fd| fd >= 0) {
        // SAFETY: closing descriptors this worker opened, once (the worker was not built).
        unsafe { libc::close(fd) };
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        for &fd in self.fds.iter().filter(|&&fd| fd >= 0) {
            // SAFETY: closing descriptors this worker opened, once.
            unsafe { libc::close(fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
