//! One replay thread: prepares (buffer, latency samples, trace ring, unlink placeholders, a
//! descriptor of the replay's directory) before the start gate, then issues its steps in
//! order through the Engine (data I/O and metadata calls alike, so the system calls are
//! counted where a run's are), at the traced times and under the rate caps when asked,
//! until done, Ctrl-C, a distributed run's stonewall or `--time`.

use super::plan::{Step, ThreadPlan, DIR_FILE};
use crate::engine::sync::SyncEngine;
use crate::engine::uring::UringEngine;
use crate::engine::Built;
use crate::engine::{BufferPool, Completion, FileHandles, IoOp, OpKind};
use crate::job::Route;
use crate::runner::drive;
use crate::runner::pace::Pacer;
use crate::runner::IoFailure;
use crate::stats::{cpu, inflight_bucket, Stats, SyscallCounts};
use crate::trace::{TraceFiles, TraceOp, TraceRing};
use std::ffi::CString;
use std::time::{Duration, Instant};

/// The replayed call kinds, in the order of the Result's groups: every traced op but open
/// and close (how a replay reaches its files, not calls it times).
pub(super) const CALLS: [TraceOp; 8] = {
    let mut calls = [TraceOp::Read; 8];
    let (mut i, mut n) = (0, 0);
    while i < TraceOp::ALL.len() {
        if !matches!(TraceOp::ALL[i], TraceOp::Open | TraceOp::Close) {
            calls[n] = TraceOp::ALL[i];
            n += 1;
        }
        i += 1;
    }
    assert!(n == calls.len());
    calls
};

pub(super) fn call_index(op: TraceOp) -> Option<usize> {
    CALLS.iter().position(|c| *c == op)
}

/// One call kind's samples in one worker.
#[derive(Default)]
pub(super) struct CallTally {
    pub(super) lat: Vec<u64>,
    /// From the intended issue time; empty when untimed (then equal to `lat`).
    pub(super) sched: Vec<u64>,
    pub(super) bytes: u64,
}

/// What a worker measured, without histograms: latency samples (per call kind) are turned
/// into histograms after the run, once per reported thread and once per kind.
pub(super) struct Tally {
    pub(super) stats: Counters,
    pub(super) calls: [CallTally; CALLS.len()],
    pub(super) failure: Option<IoFailure>,
    /// Steps issued (fewer than planned after Ctrl-C, `--time` or a failure).
    pub(super) done: u64,
    /// `--time` ended this thread before its last step.
    pub(super) timed_out: bool,
    /// `--status-interval` intervals of its reads and writes (empty without it).
    pub(super) intervals: Vec<crate::runner::live::IntervalSample>,
    /// Where the intervals end, taken in the timed loop (turned into `intervals` after it).
    marks: Vec<Mark>,
}

/// An interval boundary as the timed loop saw it: when, the counters, and how many latency
/// samples the reads and writes had (the interval's samples are the ones after the last mark).
#[derive(Clone, Copy)]
struct Mark {
    /// The interval it closes (u32::MAX: the last one, numbered by its end).
    index: u32,
    at_ns: u64,
    counts: [u64; 4],
    samples: [usize; 2],
}

/// A worker's counters (a [`Stats`] without its histograms, which take ~0.3 MiB each).
#[derive(Default)]
pub(super) struct Counters {
    pub(super) read_ops: u64,
    pub(super) write_ops: u64,
    pub(super) read_bytes: u64,
    pub(super) write_bytes: u64,
    pub(super) errors: u64,
    pub(super) buffered_fallback_ops: u64,
    pub(super) inflight: [u64; 8],
    pub(super) elapsed_s: f64,
    pub(super) usage: cpu::Usage,
    pub(super) syscalls: SyscallCounts,
}

impl Counters {
    pub(super) fn add_to(&self, s: &mut Stats) {
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

/// What every replay thread shares: how to pace, when to stop, where the files are.
pub(super) struct Shared {
    /// Traced timing scaled by this factor; None = back to back.
    /// The engine every call goes through (`--engine`).
    pub(super) engine: crate::job::EngineKind,
    pub(super) speed: Option<f64>,
    /// The device's direct I/O alignment under `--direct`.
    pub(super) direct_align: Option<u64>,
    /// Calls a second one thread may issue (`--rate-iops`, its share under `--rate-scope total`).
    pub(super) iops: Option<f64>,
    /// Bytes a second one thread may move (`--rate-bytes`, likewise).
    pub(super) bytes_per_sec: Option<f64>,
    /// Threads sharing the rate (spreads their first slots).
    pub(super) workers: u64,
    /// `--time`: stop after this long.
    pub(super) time: Option<Duration>,
    /// The replay's own directory (mkdir, unlink, readdir), -1 when no step needs it.
    pub(super) dir_fd: i32,
    /// Paths of the scratch files, then the replay's directory: what the failures and the
    /// trace rings name (a step's file via [`ThreadPlan::files`]).
    pub(super) names: TraceFiles,
    /// The `--status-interval` grid (ns): each thread marks its boundaries.
    pub(super) interval_ns: Option<u64>,
    /// The live line's board (`--progress`): each thread publishes its counters there.
    pub(super) board: Option<std::sync::Arc<crate::runner::live::Board>>,
    /// `--trace`: the session each thread's ring goes back to.
    pub(super) trace: Option<std::sync::Arc<crate::trace::TraceSession>>,
}

impl Shared {
    /// Index of the replay's directory in [`Shared::names`].
    fn dir_index(&self) -> u32 {
        (self.names.len() - 1) as u32
    }
}

/// What a thread prepared before the start gate.
struct Prepared {
    engine: Built,
    calls: [CallTally; CALLS.len()],
    ring: Option<TraceRing>,
    /// Placeholder names its unlinks remove and names of the directories its mkdirs make.
    unlink_names: Vec<CString>,
    mkdir_names: Vec<CString>,
    /// Its own descriptor of the replay's directory and a getdents buffer (readdir steps).
    list_fd: i32,
    list_buf: Vec<u8>,
    iops: Option<Pacer>,
    bytes: Option<Pacer>,
}

/// Size of a readdir step's getdents64 buffer (what `ls` and glibc's readdir ask for).
const LIST_BUF_BYTES: usize = 32 << 10;

pub(super) fn replay_thread(
    index: u32,
    plan: ThreadPlan,
    files: Vec<FileHandles>,
    shared: &Shared,
    gate: &drive::Gate,
) -> Tally {
    let empty = |failure| Tally {
        stats: Counters::default(),
        calls: Default::default(),
        failure,
        done: 0,
        timed_out: false,
        intervals: Vec::new(),
        marks: Vec::new(),
    };
    let fds: Vec<i32> = files.iter().map(|f| f.fds[0]).collect();
    let mut prep = match prepare(index, &plan, files, shared) {
        Ok(p) => p,
        Err((file, message)) => {
            gate.arrive_and_wait();
            return empty(Some(failure(index, &plan, shared, file, None, message)));
        }
    };
    if !gate.arrive_and_wait() {
        finish(&mut prep, shared);
        return empty(None);
    }
    let mut tally = run_steps(index, &plan, &fds, shared, &mut prep);
    tally.calls = std::mem::take(&mut prep.calls);
    tally.intervals = intervals(&tally.marks, &tally.calls, shared.interval_ns);
    finish(&mut prep, shared);
    tally
}

/// The failure of a step on `file` (an index into the thread's files, or [`DIR_FILE`]).
fn failure(
    index: u32,
    plan: &ThreadPlan,
    shared: &Shared,
    file: u32,
    offset: Option<u64>,
    message: String,
) -> IoFailure {
    let g = global_file(plan, shared, file);
    IoFailure {
        user: plan.user,
        thread: index,
        path: shared.names.get(g as usize).cloned().unwrap_or_default(),
        offset,
        message,
    }
}

/// The index in [`Shared::names`] of a step's file.
#[inline]
fn global_file(plan: &ThreadPlan, shared: &Shared, file: u32) -> u32 {
    if file == DIR_FILE {
        shared.dir_index()
    } else {
        plan.files.get(file as usize).copied().unwrap_or(0)
    }
}

/// Everything the timed loop needs, allocated and touched now: a buffer as large as the
/// thread's largest call, a latency sample per call (reserved so the loop never allocates),
/// the trace ring, the unlink placeholders (created here, in the replay's own directory),
/// the names of the directories to make, and a descriptor of that directory for listing.
/// The calls made here are not counted: they are not part of the trace.
fn prepare(
    index: u32,
    plan: &ThreadPlan,
    files: Vec<FileHandles>,
    shared: &Shared,
) -> Result<Prepared, (u32, String)> {
    let timed = shared.speed.is_some() || shared.iops.is_some() || shared.bytes_per_sec.is_some();
    let pool = BufferPool::new(1, (plan.max_len as usize).max(1), 0xfeed ^ index as u64)
        .map_err(|e| (0, format!("allocating buffers: {e}")))?;
    let mut calls: [CallTally; CALLS.len()] = Default::default();
    let mut want = [0usize; CALLS.len()];
    for s in &plan.steps {
        if let Some(k) = call_index(s.op) {
            want[k] += 1;
        }
    }
    calls
        .iter_mut()
        .zip(want)
        .try_for_each(|(c, n)| {
            c.lat.try_reserve_exact(n)?;
            if timed {
                c.sched.try_reserve_exact(n)?;
            }
            Ok::<(), std::collections::TryReserveError>(())
        })
        .map_err(|_| (0, "out of memory reserving latency samples".to_string()))?;
    let mut engine = match shared.engine {
        crate::job::EngineKind::Uring => Built::Uring(
            UringEngine::for_source(1, files, pool)
                .map_err(|e| (0, format!("--engine uring: {e:#}")))?,
        ),
        _ => Built::Sync(SyncEngine::new(files, pool)),
    };
    let mut uncounted = SyscallCounts::default();
    let name = |prefix: char, k: u64| {
        CString::new(format!("{prefix}{index}-{k}")).expect("no NUL in a number")
    };
    let unlink_names: Vec<CString> = (0..plan.unlinks).map(|k| name('u', k)).collect();
    let mkdir_names: Vec<CString> = (0..plan.mkdirs).map(|k| name('m', k)).collect();
    for n in &unlink_names {
        // The replay's directory is its own and new: O_EXCL never meets someone else's file.
        let flags =
            libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY | libc::O_CLOEXEC;
        let fd = engine
            .as_dyn()
            .open_at(shared.dir_fd, n, flags, 0o600, &mut uncounted)
            .map_err(|e| (DIR_FILE, format!("creating a file to unlink: {e}")))?;
        let _ = engine.as_dyn().close_fd(fd, &mut uncounted);
    }
    let mut list_fd = -1;
    let mut list_buf = Vec::new();
    if plan.readdirs {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        list_fd = engine
            .as_dyn()
            .open_at(shared.dir_fd, c".", flags, 0, &mut uncounted)
            .map_err(|e| (DIR_FILE, format!("opening the directory to list: {e}")))?;
        list_buf = vec![0u8; LIST_BUF_BYTES];
    }
    let ring = shared
        .trace
        .as_ref()
        .and_then(|s| s.ring_for(index, shared.names.clone(), Some(plan.steps.len() as u64)));
    let pacer = |rate: Option<f64>| rate.map(|r| Pacer::at_rate(r, index as u64, shared.workers));
    Ok(Prepared {
        engine,
        calls,
        ring,
        unlink_names,
        mkdir_names,
        list_fd,
        list_buf,
        iops: pacer(shared.iops),
        bytes: pacer(shared.bytes_per_sec),
    })
}

/// After the timed loop: the trace ring goes to the session, the listing descriptor is
/// closed (neither counted).
fn finish(prep: &mut Prepared, shared: &Shared) {
    if let (Some(ring), Some(s)) = (prep.ring.take(), &shared.trace) {
        s.finish_ring(ring);
    }
    if prep.list_fd >= 0 {
        let mut uncounted = SyscallCounts::default();
        let _ = prep.engine.as_dyn().close_fd(prep.list_fd, &mut uncounted);
        prep.list_fd = -1;
    }
}

/// When step `s` is due, from `t0`: the latest of its traced time (scaled) and the rate
/// caps' next slots; None when back to back and uncapped. Takes the step's slots.
#[inline]
fn due(s: &Step, t0: Instant, shared: &Shared, prep: &mut Prepared) -> Option<Instant> {
    let mut at: Option<Instant> = None;
    let mut later = |t: Instant| at = Some(at.map_or(t, |a| a.max(t)));
    if let Some(sp) = shared.speed {
        later(t0 + Duration::from_nanos((s.start_ns as f64 / sp) as u64));
    }
    if let Some(p) = prep.iops.as_mut() {
        later(t0 + Duration::from_nanos(p.take()));
    }
    if let (Some(p), true) = (prep.bytes.as_mut(), s.op.is_data()) {
        later(t0 + Duration::from_nanos(p.take_n(s.len as u64)));
    }
    at
}

/// Sleep until `at` in slices, so a long traced pause still answers Ctrl-C, a distributed
/// run's stonewall and `--time`. False when the replay must stop instead.
fn wait_until(at: Instant, deadline: Option<Instant>) -> bool {
    loop {
        let now = Instant::now();
        if crate::runner::signal::stop_requested() || deadline.is_some_and(|d| d <= now.max(at)) {
            return false;
        }
        if at <= now {
            return true;
        }
        std::thread::sleep((at - now).min(Duration::from_millis(100)));
    }
}

/// The timed loop: every step in order, measured; stops at the first failure, Ctrl-C or
/// the `--time` deadline.
fn run_steps(
    index: u32,
    plan: &ThreadPlan,
    fds: &[i32],
    shared: &Shared,
    prep: &mut Prepared,
) -> Tally {
    let mut io = Io {
        sys: SyscallCounts::default(),
        stats: Counters::default(),
        done: Vec::with_capacity(2),
        stx: unsafe_zeroed_statx(),
        list_at_end: false,
    };
    let mut failed = None;
    let mut steps_done = 0u64;
    let mut timed_out = false;
    let usage0 = cpu::thread_usage();
    let t0 = Instant::now();
    let deadline = shared.time.map(|d| t0 + d);
    if let Some(p) = prep.iops.as_mut() {
        p.start(0);
    }
    if let Some(p) = prep.bytes.as_mut() {
        p.start(0);
    }
    // `--status-interval`: a mark at each boundary the loop's clock readings pass (one
    // compare per step; the marks were reserved for the expected intervals up front).
    let every = shared.interval_ns.map(Duration::from_nanos);
    let mut next_mark = every.map(|d| t0 + d);
    let mut marks: Vec<Mark> = Vec::with_capacity(if every.is_some() { 64 } else { 0 });
    // The live line: this thread's counters on the board, at most 10 times a second.
    let board = shared.board.clone();
    let publish_every = Duration::from_nanos(crate::runner::live::PUBLISH_NS);
    let mut next_publish = board.as_ref().map(|_| t0 + publish_every);
    let publish = |io: &Io| {
        if let Some(b) = &board {
            b.publish(
                index as usize,
                [
                    io.stats.read_ops,
                    io.stats.write_ops,
                    io.stats.read_bytes,
                    io.stats.write_bytes,
                ],
            );
        }
    };
    let mut boundary = 1u32;
    let mark = |index: u32, at: Instant, io: &Io, prep: &Prepared| Mark {
        index,
        at_ns: at.duration_since(t0).as_nanos() as u64,
        counts: [
            io.stats.read_ops,
            io.stats.write_ops,
            io.stats.read_bytes,
            io.stats.write_bytes,
        ],
        samples: [prep.calls[0].lat.len(), prep.calls[1].lat.len()],
    };
    for s in &plan.steps {
        // Ctrl-C, or a distributed run's stonewall (`signal::stop_workers`), ends the replay
        // with what was done (a flag read, no syscall).
        if crate::runner::signal::stop_requested() {
            break;
        }
        let intended = match due(s, t0, shared, prep) {
            Some(at) => {
                if !wait_until(at, deadline) {
                    timed_out = !crate::runner::signal::stop_requested();
                    break;
                }
                at
            }
            None => {
                let now = Instant::now();
                if deadline.is_some_and(|d| d <= now) {
                    timed_out = true;
                    break;
                }
                now
            }
        };
        let start = Instant::now();
        let Some(result) = issue(s, fds, shared, prep, &mut io) else {
            continue;
        };
        let end = Instant::now();
        steps_done += 1;
        if let Some(ring) = prep.ring.as_mut() {
            let file = global_file(plan, shared, s.file);
            ring.record_call(s.op, file, s.offset, s.len, start, end, result);
        }
        if result < 0 {
            io.stats.errors += 1;
            let err = std::io::Error::from_raw_os_error((-result) as i32);
            failed = Some(failure(
                index,
                plan,
                shared,
                s.file,
                Some(s.offset),
                format!("{} failed: {err}", s.op.name()),
            ));
            break;
        }
        if let Some(c) = call_index(s.op).map(|k| &mut prep.calls[k]) {
            // Reserved in `prepare`: these pushes never allocate.
            c.lat.push(end.duration_since(start).as_nanos() as u64);
            if c.sched.capacity() > 0 {
                c.sched.push(end.duration_since(intended).as_nanos() as u64);
            }
            if s.op.is_data() {
                c.bytes += result as u64;
            }
        }
        match s.op {
            TraceOp::Read => {
                io.stats.read_ops += 1;
                io.stats.read_bytes += result as u64;
            }
            TraceOp::Write => {
                io.stats.write_ops += 1;
                io.stats.write_bytes += result as u64;
            }
            _ => {}
        }
        if next_publish.is_some_and(|p| end >= p) {
            publish(&io);
            next_publish = Some(end + publish_every);
        }
        if let (Some(m), Some(d)) = (next_mark, every) {
            if end >= m {
                // Numbered by the boundary it passed (a late mark still closes that one).
                marks.push(mark(boundary - 1, end, &io, prep));
                // The next boundary on the grid from t0.
                boundary = (end.duration_since(t0).as_nanos() / d.as_nanos().max(1)) as u32 + 1;
                next_mark = Some(t0 + d * boundary);
            }
        }
    }
    if every.is_some() {
        marks.push(mark(u32::MAX, Instant::now(), &io, prep));
    }
    publish(&io);
    io.stats.elapsed_s = t0.elapsed().as_secs_f64();
    io.stats.usage = cpu::thread_usage().since(&usage0);
    io.stats.syscalls = io.sys;
    Tally {
        stats: io.stats,
        calls: Default::default(),
        failure: failed,
        done: steps_done,
        timed_out,
        intervals: Vec::new(),
        marks,
    }
}

/// The intervals between a thread's marks, with the latency samples of its reads and writes
/// in each (after the run, untimed).
fn intervals(
    marks: &[Mark],
    calls: &[CallTally],
    interval_ns: Option<u64>,
) -> Vec<crate::runner::live::IntervalSample> {
    let Some(every) = interval_ns else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(marks.len());
    let mut prev = Mark {
        index: 0,
        at_ns: 0,
        counts: [0; 4],
        samples: [0; 2],
    };
    for m in marks {
        let mut lat = crate::stats::LatencyHist::default();
        for (k, c) in calls.iter().take(2).enumerate() {
            for &ns in c.lat.get(prev.samples[k]..m.samples[k]).unwrap_or(&[]) {
                lat.record(ns);
            }
        }
        let index = if m.index == u32::MAX {
            (m.at_ns.saturating_sub(1) / every) as u32
        } else {
            m.index
        };
        out.push(crate::runner::live::IntervalSample {
            index: out
                .last()
                .map_or(index, |l: &crate::runner::live::IntervalSample| {
                    index.max(l.index + 1)
                }),
            end_ns: m.at_ns,
            read_ops: m.counts[0] - prev.counts[0],
            write_ops: m.counts[1] - prev.counts[1],
            other_ops: 0,
            read_bytes: m.counts[2] - prev.counts[2],
            write_bytes: m.counts[3] - prev.counts[3],
            lat_buckets: lat.to_buckets(),
        });
        prev = *m;
    }
    out
}

/// What the timed loop's calls write into: counters, completions, the statx buffer, and
/// whether the listing reached its end.
struct Io {
    sys: SyscallCounts,
    stats: Counters,
    done: Vec<Completion>,
    stx: libc::statx,
    list_at_end: bool,
}

/// Issue step `s` through the engine: bytes moved (data, readdir), 0, or a negative errno;
/// None for a call replay does not issue.
#[inline]
fn issue(s: &Step, fds: &[i32], shared: &Shared, prep: &mut Prepared, io: &mut Io) -> Option<i64> {
    Some(match s.op {
        TraceOp::Read | TraceOp::Write => {
            let kind = if s.op == TraceOp::Read {
                OpKind::Read
            } else {
                OpKind::Write
            };
            let route = match shared.direct_align {
                Some(a) if s.offset.is_multiple_of(a) && (s.len as u64).is_multiple_of(a) => {
                    Route::Direct
                }
                Some(_) => {
                    io.stats.buffered_fallback_ops += 1;
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
            io.stats.inflight[inflight_bucket(1)] += 1;
            let engine = prep.engine.as_dyn();
            let r = engine
                .submit(&[op], &mut io.sys)
                .and_then(|_| engine.reap(1, &mut io.done, &mut io.sys));
            let res = match r {
                Ok(_) => io
                    .done
                    .first()
                    .map(|c| c.result)
                    .unwrap_or(-(libc::EIO as i64)),
                Err(e) => errno(&e),
            };
            io.done.clear();
            res
        }
        TraceOp::Fsync | TraceOp::Fdatasync => status(prep.engine.as_dyn().sync_fd(
            fds[s.file as usize],
            s.op == TraceOp::Fdatasync,
            &mut io.sys,
        )),
        TraceOp::Stat => status(prep.engine.as_dyn().stat_fd(
            fds[s.file as usize],
            &mut io.stx,
            &mut io.sys,
        )),
        TraceOp::Mkdir => status(prep.engine.as_dyn().mkdir_at(
            shared.dir_fd,
            &prep.mkdir_names[s.offset as usize],
            0o755,
            &mut io.sys,
        )),
        TraceOp::Unlink => status(prep.engine.as_dyn().unlink_at(
            shared.dir_fd,
            &prep.unlink_names[s.offset as usize],
            false,
            &mut io.sys,
        )),
        TraceOp::Readdir => {
            // A listing read to its end starts over, as a program listing again would.
            if io.list_at_end {
                let _ = prep
                    .engine
                    .as_dyn()
                    .seek_fd(prep.list_fd, 0, libc::SEEK_SET, &mut io.sys);
            }
            match prep
                .engine
                .as_dyn()
                .read_dir(prep.list_fd, &mut prep.list_buf, &mut io.sys)
            {
                Ok(n) => {
                    io.list_at_end = n == 0;
                    n as i64
                }
                Err(e) => errno(&e),
            }
        }
        TraceOp::Open | TraceOp::Close => return None,
    })
}

/// 0, or the negative errno of a failed metadata call (a trace record's `result`).
#[inline]
fn status(r: std::io::Result<()>) -> i64 {
    match r {
        Ok(()) => 0,
        Err(e) => errno(&e),
    }
}

#[inline]
fn errno(e: &std::io::Error) -> i64 {
    -(e.raw_os_error().unwrap_or(libc::EIO) as i64)
}

/// An all-zero statx for `stat_fd` to fill.
fn unsafe_zeroed_statx() -> libc::statx {
    // SAFETY: statx is plain integers and arrays of them; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}
