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
use super::opgen::{thread_seed, GenSpec, Mix, OpGen};
use super::pace::Pacers;
use super::target::Plan;
use crate::engine::{self, BufferPool, Built, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::job::{Advice, CachePolicy, EngineKind, Job, Route};
use crate::stats::{cpu, inflight_bucket, Stats, SyscallCounts};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use crate::result::IoFailure;

mod drive;
mod inline;
#[cfg(test)]
mod mock_tests;
mod prepare;
#[cfg(test)]
mod tests;
mod think;
/// The job's `--verify` hooks, which live with the stepped sources' in `runner::verify`.
pub use super::verify::blocks as verify;
#[cfg(test)]
mod verify_tests;

/// What one worker measured, and how it ended.
#[derive(Debug, Clone)]
pub struct ThreadOutcome {
    pub user: usize,
    pub thread: u32,
    pub stats: Stats,
    pub failure: Option<IoFailure>,
    /// What `--verify` found in this worker's blocks (None without it).
    pub verify: Option<crate::verify::report::VerifyReport>,
    /// This worker's `--status-interval` intervals (empty without it).
    pub intervals: Vec<super::live::IntervalSample>,
}

/// How the I/Os of a run are routed to descriptors, decided once per run so that the loop does
/// not divide by the alignment on every I/O. Same answer as `CachePolicy::route` for every
/// offset (tested below).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum RouteRule {
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
            // VxFS sends an I/O direct only when it is larger than the threshold.
            CachePolicy::Discovered { threshold } if bs <= threshold => {
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
    pub(crate) fn route(self, offset: u64, bs: u64) -> Route {
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

/// A sync of the worker's files after every `writes` writes it issued.
#[derive(Clone, Copy)]
struct SyncEvery {
    writes: u64,
    /// fdatasync rather than fsync.
    data_only: bool,
}

/// Everything the timed loop needs besides the engine.
struct Core {
    user: usize,
    thread: u32,
    path: String,
    gen: OpGen,
    route: RouteRule,
    depth: usize,
    fsync: bool,
    /// `--fsync-every` / `--fdatasync-every` without verification (the checker syncs for a
    /// verifying run): sync the files after every so many issued writes.
    sync_every: Option<SyncEvery>,
    deadline: Option<Duration>,
    /// `--ramp`: how long the loop runs before it counts.
    ramp: Option<Duration>,
    /// `--ramp-bytes`: how many bytes the loop moves before it counts (0: none).
    ramp_bytes: u64,
    /// `--think`: the pause after every so many I/Os.
    think: Option<think::Thinker>,
    sys: SyscallCounts,
    /// Issue schedules under a rate limit (one, or one per direction).
    pacer: Option<Pacers>,
    /// Per-I/O trace ring when `--trace` is on (allocated here, untimed).
    trace: Option<crate::trace::TraceRing>,
    /// What each I/O is timed with (calibrated here, untimed: see `stats::clock`).
    clock: crate::stats::clock::Clock,
    /// Verification hooks and state (`--verify`); None runs the loop without them.
    verify: Option<Box<verify::Checker>>,
    /// Live counters and `--status-interval` intervals (idle when nobody watches).
    roll: super::live::Roller,
    /// The run's live board, told when this worker starts reading back (`--verify`).
    board: Option<std::sync::Arc<super::live::Board>>,
    /// The trace session the ring goes back to after the timed loop (`--trace`).
    tracing: Option<std::sync::Arc<crate::trace::TraceSession>>,
}

pub struct Worker {
    core: Core,
    engine: Built,
    /// Declared after the engine: an engine that maps or registers the files lets go of
    /// them before the descriptors are closed.
    _fds: Fds,
}

impl Worker {
    /// Publish as worker `thread` of user `user` of `job` (on `plan`) to what `watch` holds:
    /// live counters, intervals, and a trace ring sized to the I/Os it will issue (untimed,
    /// before the start gate: the ring's allocation and page faults happen here).
    pub(crate) fn watch(
        &mut self,
        job: &Job,
        plan: &Plan,
        user: usize,
        thread: u32,
        watch: &super::live::WorkerWatch,
    ) {
        let index = user * job.threads as usize + thread as usize;
        let min = super::live::MinRate::for_worker(job, self.core.gen.directions());
        self.core.roll = super::live::Roller::for_worker(index, watch).judging(min);
        self.core.board = watch.board.clone();
        if let (Some(s), Some(t)) = (&watch.trace, plan.targets.get(user)) {
            self.core.trace = s.ring_for_worker(job, &t.path, t.size, user, thread);
            self.core.tracing = Some(s.clone());
        }
    }

    /// The timed loop, stopped by `stop`, Ctrl-C / SIGTERM, the deadline, the count or an error.
    pub(crate) fn run(self, stop: &AtomicBool) -> ThreadOutcome {
        self.run_until(stop, super::signal::flag())
    }

    /// [`Worker::run`] with the interrupt flag given (the signal handler's in a real run).
    pub(crate) fn run_until(mut self, stop: &AtomicBool, interrupt: &AtomicBool) -> ThreadOutcome {
        let core = &mut self.core;
        // One compiled loop per engine and per "rate limit or not", so an unpaced run carries
        // no schedule code at all.
        match (&mut self.engine, core.pacer.is_some()) {
            (Built::Sync(e), false) if core.inline_ok() => core.drive_inline(e, stop, interrupt),
            (Built::Sync(e), false) => core.drive::<_, false>(e, stop, interrupt),
            (Built::Sync(e), true) => core.drive::<_, true>(e, stop, interrupt),
            (Built::Mmap(e), false) => core.drive::<_, false>(e, stop, interrupt),
            (Built::Mmap(e), true) => core.drive::<_, true>(e, stop, interrupt),
            (Built::Uring(e), false) => core.drive::<_, false>(e, stop, interrupt),
            (Built::Uring(e), true) => core.drive::<_, true>(e, stop, interrupt),
            (Built::Null(e), false) => core.drive::<_, false>(e, stop, interrupt),
            (Built::Null(e), true) => core.drive::<_, true>(e, stop, interrupt),
            (Built::Space(e), false) => core.drive::<_, false>(e, stop, interrupt),
            (Built::Space(e), true) => core.drive::<_, true>(e, stop, interrupt),
            (Built::Shaped(e), false) => core.drive::<_, false>(e.as_mut(), stop, interrupt),
            (Built::Shaped(e), true) => core.drive::<_, true>(e.as_mut(), stop, interrupt),
            #[cfg(any(test, feature = "test-support"))]
            (Built::Boxed(e), false) => core.drive::<_, false>(e.as_mut(), stop, interrupt),
            #[cfg(any(test, feature = "test-support"))]
            (Built::Boxed(e), true) => core.drive::<_, true>(e.as_mut(), stop, interrupt),
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
pub(crate) fn private_fd_table() -> bool {
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

fn close_all(fds: &[i32]) {
    for &fd in fds.iter().filter(|&&fd| fd >= 0) {
        // Closing descriptors this worker opened, once.
        let _ = engine::meta::close(fd);
    }
}
