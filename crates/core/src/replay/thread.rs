//! One replay thread as a source of operations: one step is one replayed call. Before the
//! start gate the thread prepares (its latency samples, the unlink placeholders, a descriptor
//! of the replay's directory, and the runner-built `Issuer` that holds its engine, buffer and
//! trace ring); then `runner::source::drive` steps it in order, at the traced times and under
//! the rate caps when asked, until done, a failure, Ctrl-C, a distributed run's stonewall or
//! `--time`, leaving a `--ramp` warm-up out of the counts. Data I/O and metadata calls alike go
//! through the `Issuer`, so the system calls are counted where a run's are.

use super::plan::{Step, ThreadPlan, DIR_FILE};
use crate::engine::{FileHandles, IoOp, OpKind};
use crate::job::Route;
use crate::runner::drive;
use crate::runner::issue::{Issuer, CALL_SLOT};
use crate::runner::live::{IntervalSample, PUBLISH_NS};
use crate::runner::pace::{Pacer, StepPacing};
use crate::runner::source::{self, Drive, Driven, Source};
use crate::runner::IoFailure;
use crate::stats::{cpu, inflight_bucket, mono_ns, Dir, Stats, SyscallCounts};
use crate::trace::{TraceFiles, TraceOp};
use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::time::{Duration, Instant};

/// The replayed call kinds, in the order of the Result's groups: every traced op but open
/// and close (how a replay reaches its files, not calls it times) and trim (a replay never
/// discards data).
pub(super) const CALLS: [TraceOp; 8] = {
    let mut calls = [TraceOp::Read; 8];
    let (mut i, mut n) = (0, 0);
    while i < TraceOp::ALL.len() {
        if !matches!(
            TraceOp::ALL[i],
            TraceOp::Open | TraceOp::Close | TraceOp::Trim
        ) {
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
    /// Steps issued (fewer than planned after Ctrl-C, `--time` or a failure), the warm-up's
    /// included.
    pub(super) done: u64,
    /// A `--ramp` warm-up ran, and the steps issued in it (left out of `stats` and `calls`).
    pub(super) ramped: bool,
    pub(super) warm_calls: u64,
    /// `--time` ended this thread before its last step.
    pub(super) timed_out: bool,
    /// `--status-interval` intervals of its reads and writes (empty without it).
    pub(super) intervals: Vec<IntervalSample>,
    /// `--verify`: what its checked reads found.
    pub(super) verify: Option<crate::verify::report::VerifyReport>,
}

impl Tally {
    /// The tally of a thread that replayed nothing.
    fn empty(failure: Option<IoFailure>) -> Tally {
        Tally {
            stats: Counters::default(),
            calls: Default::default(),
            failure,
            done: 0,
            ramped: false,
            warm_calls: 0,
            timed_out: false,
            intervals: Vec::new(),
            verify: None,
        }
    }
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

    /// Reads, writes and their bytes: what the live line shows.
    fn data(&self) -> [u64; 4] {
        [
            self.read_ops,
            self.write_ops,
            self.read_bytes,
            self.write_bytes,
        ]
    }
}

/// What every replay thread shares: pacing, when to stop, where the files are.
pub(super) struct Shared {
    /// The engine every call goes through (`--engine`).
    pub(super) engine: crate::job::EngineKind,
    /// Traced timing scaled by this factor; None = back to back.
    pub(super) speed: Option<f64>,
    /// The device's direct I/O alignment under `--direct`.
    pub(super) direct_align: Option<u64>,
    /// Calls a second one thread may issue (`--rate-iops`, its share under `--rate-scope total`).
    pub(super) iops: Option<f64>,
    /// Bytes a second one thread may move (`--rate-bytes`, likewise).
    pub(super) bytes_per_sec: Option<f64>,
    /// Threads sharing the rate (spreads their first slots).
    pub(super) workers: u64,
    /// `--time`: stop after this long (after the warm-up).
    pub(super) time: Option<Duration>,
    /// `--ramp`: a warm-up this long first, left out of the counts.
    pub(super) ramp: Option<Duration>,
    /// `--ramp-bytes`: a warm-up of this many bytes moved per thread first (0: none).
    pub(super) ramp_bytes: u64,
    /// The replay's own directory (mkdir, unlink, readdir), -1 when no step needs it.
    pub(super) dir_fd: i32,
    /// Paths of the scratch files, then the replay's directory: what the failures and the
    /// trace rings name (a step's file via [`ThreadPlan::files`]).
    pub(super) names: TraceFiles,
    /// The `--status-interval` grid (ns).
    pub(super) interval_ns: Option<u64>,
    /// The live line's board (`--progress`): each thread publishes its counters there.
    pub(super) board: Option<std::sync::Arc<crate::runner::live::Board>>,
    /// `--trace`: the session each thread's ring goes back to.
    pub(super) trace: Option<std::sync::Arc<crate::trace::TraceSession>>,
    /// `--verify`: the seed of the replay's bytes.
    pub(super) verify_seed: Option<u64>,
    /// `--verify`: the generation its writes carry (k in the k-th replay on the files).
    pub(super) verify_generation: u64,
}

impl Shared {
    /// Index of the replay's directory in [`Shared::names`].
    fn dir_index(&self) -> u32 {
        (self.names.len() - 1) as u32
    }

    /// When the run stops after its start: `--time` counts after the warm-up.
    pub(super) fn deadline(&self) -> Option<Duration> {
        self.time.map(|t| t + self.ramp.unwrap_or_default())
    }

    /// Whether calls have intended times (then their schedule latency is kept).
    fn timed(&self) -> bool {
        self.speed.is_some() || self.iops.is_some() || self.bytes_per_sec.is_some()
    }
}

/// Size of a readdir step's getdents64 buffer (what `ls` and glibc's readdir ask for).
const LIST_BUF_BYTES: usize = 32 << 10;

/// How a replay thread ended.
enum Ended {
    /// Every planned call was issued.
    AllCalls,
    /// A call failed (the replay stops at the first failure, as the traced program would
    /// not have gone on as traced).
    Failed(IoFailure),
    /// The run stopped it: Ctrl-C or a stonewall, or `--time` (`by_time`) before its last call.
    Stopped { by_time: bool },
}

/// One replay thread as a [`Source`]: its plan, where it is in it, what it counted.
struct ThreadReplay<'a> {
    index: u32,
    plan: &'a ThreadPlan,
    shared: &'a Shared,
    /// Each of its files' descriptor (syncs and stats go to it).
    fds: Vec<i32>,
    /// The next step.
    next: usize,
    /// The start (`mono_ns`) and the same moment as an `Instant` (what trace records take).
    t0_ns: u64,
    t0: Instant,
    /// The replay's own rate caps (`--rate-iops`, `--rate-bytes`), not the runner's
    /// `StepPacing`, whose semantics differ: every replayed call takes a call slot (a trace's
    /// syncs and stats are its load as much as its reads), only reads and writes wait for and
    /// take byte slots (their planned bytes), and the caps hold on top of the traced times.
    /// The runner's step pacing charges data calls only, by the bytes they moved, and yields
    /// to a source's own due times.
    iops: Option<Pacer>,
    bytes: Option<Pacer>,
    calls: [CallTally; CALLS.len()],
    counts: Counters,
    /// Steps issued, and how many of them were in the warm-up.
    done: u64,
    warm_calls: u64,
    /// The statx buffer of stat steps.
    stx: libc::statx,
    /// Placeholder names its unlinks remove and names of the directories its mkdirs make.
    unlink_names: Vec<CString>,
    mkdir_names: Vec<CString>,
    /// Its own descriptor of the replay's directory and a getdents buffer (readdir steps), and
    /// whether the listing reached its end.
    list_fd: i32,
    list_buf: Vec<u8>,
    list_at_end: bool,
    /// When it next publishes on the live line's board (u64::MAX: no board), and what the
    /// warm-up counted (the live line shows the whole replay).
    next_publish_ns: u64,
    live_base: [u64; 4],
    /// The interval series' running totals (see [`Source::totals`]).
    interval: RefCell<IntervalTotals>,
    /// `--verify`: its files a short write left unknown (by its index of them).
    short_written: Vec<Cell<bool>>,
}

/// The reads' and writes' latency histograms as of the last interval boundary, and how many
/// samples of each are in them: each boundary records only the samples since the last.
#[derive(Default)]
struct IntervalTotals {
    stats: Stats,
    seen: [usize; 2],
}

pub(super) fn replay_thread(
    index: u32,
    plan: ThreadPlan,
    files: Vec<FileHandles>,
    shared: &Shared,
    gate: &drive::Gate,
) -> Tally {
    let (mut src, mut io) = match prepare(index, &plan, files, shared) {
        Ok(p) => p,
        Err((file, message)) => {
            gate.arrive_and_wait();
            return Tally::empty(Some(failure(index, &plan, shared, file, None, message)));
        }
    };
    let called_off = Cell::new(false);
    let wait = || called_off.set(!gate.arrive_and_wait());
    // Ctrl-C, or a distributed run's stonewall (`signal::stop_workers`): a flag read.
    let stop = || called_off.get() || crate::runner::signal::stop_requested();
    let how = Drive {
        gate: &wait,
        stop: &stop,
        deadline: shared.time, // the runner adds the warm-up
        ramp: shared.ramp,
        ramp_bytes: shared.ramp_bytes,
        pacing: StepPacing::default(),
        interval_ns: shared.interval_ns,
    };
    let driven = source::drive(&mut src, &mut io, how);
    if called_off.get() {
        src.finish(&mut io);
        return Tally::empty(None);
    }
    src.into_tally(driven, &mut io)
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

/// Everything the timed loop needs, allocated and touched now: the engine with a buffer as
/// large as the thread's largest call and the trace ring (in its `Issuer`), a latency sample
/// per call (reserved so the loop never allocates), the unlink placeholders (created here, in
/// the replay's own directory), the names of the directories to make, and a descriptor of
/// that directory for listing. The calls made here are not counted: they are not part of the
/// trace.
fn prepare<'a>(
    index: u32,
    plan: &'a ThreadPlan,
    files: Vec<FileHandles>,
    shared: &'a Shared,
) -> Result<(ThreadReplay<'a>, Issuer), (u32, String)> {
    let calls = reserve_samples(plan, shared.timed())
        .map_err(|_| (0, "out of memory reserving latency samples".to_string()))?;
    let fds: Vec<i32> = files.iter().map(|f| f.fds[0]).collect();
    let nfiles = files.len();
    let len = (plan.max_len as usize).max(1);
    let engine =
        Issuer::engine_over(shared.engine, files, len, 0xfeed ^ index as u64).map_err(|e| {
            match shared.engine {
                crate::job::EngineKind::Uring => (0, format!("--engine uring: {e:#}")),
                _ => (0, format!("{e:#}")),
            }
        })?;
    let ring = shared
        .trace
        .as_ref()
        .and_then(|s| s.ring_for(index, shared.names.clone(), Some(plan.steps.len() as u64)));
    let mut io = Issuer::new(engine, nfiles, ring);
    if let Some(seed) = shared.verify_seed {
        io.verify_with(seed);
    }
    let mut src = ThreadReplay::new(index, plan, fds, shared, calls);
    if let Err(e) = src.prepare_dir(&mut io) {
        src.finish(&mut io);
        return Err(e);
    }
    // Not part of the trace: the placeholders' opens and closes, the listing's open.
    io.forget_counts();
    Ok((src, io))
}

/// A latency sample per call of each kind (and one from the intended time when timed).
fn reserve_samples(
    plan: &ThreadPlan,
    timed: bool,
) -> Result<[CallTally; CALLS.len()], std::collections::TryReserveError> {
    let mut calls: [CallTally; CALLS.len()] = Default::default();
    let mut want = [0usize; CALLS.len()];
    for s in &plan.steps {
        if let Some(k) = call_index(s.op) {
            want[k] += 1;
        }
    }
    for (c, n) in calls.iter_mut().zip(want) {
        c.lat.try_reserve_exact(n)?;
        if timed {
            c.sched.try_reserve_exact(n)?;
        }
    }
    Ok(calls)
}

impl<'a> ThreadReplay<'a> {
    /// Thread `index` replaying `plan` on its files' descriptors `fds`, its samples reserved.
    fn new(
        index: u32,
        plan: &'a ThreadPlan,
        fds: Vec<i32>,
        shared: &'a Shared,
        calls: [CallTally; CALLS.len()],
    ) -> ThreadReplay<'a> {
        let pacer =
            |rate: Option<f64>| rate.map(|r| Pacer::at_rate(r, index as u64, shared.workers));
        ThreadReplay {
            index,
            plan,
            shared,
            fds,
            next: 0,
            t0_ns: 0,
            t0: Instant::now(),
            iops: pacer(shared.iops),
            bytes: pacer(shared.bytes_per_sec),
            calls,
            counts: Counters::default(),
            done: 0,
            warm_calls: 0,
            stx: zeroed_statx(),
            unlink_names: Vec::new(),
            mkdir_names: Vec::new(),
            list_fd: -1,
            list_buf: Vec::new(),
            list_at_end: false,
            next_publish_ns: u64::MAX,
            live_base: [0; 4],
            interval: RefCell::default(),
            short_written: (0..plan.files.len()).map(|_| Cell::new(false)).collect(),
        }
    }

    /// What the steps on the replay's own directory need: the placeholders the unlinks
    /// remove, the names of the directories the mkdirs make, a descriptor to list.
    fn prepare_dir(&mut self, io: &mut Issuer) -> Result<(), (u32, String)> {
        let (index, dir_fd) = (self.index, self.shared.dir_fd);
        let name = |prefix: char, k: u64| {
            CString::new(format!("{prefix}{index}-{k}")).expect("no NUL in a number")
        };
        self.unlink_names = (0..self.plan.unlinks).map(|k| name('u', k)).collect();
        self.mkdir_names = (0..self.plan.mkdirs).map(|k| name('m', k)).collect();
        for n in &self.unlink_names {
            // The replay's directory is its own and new: O_EXCL never meets someone else's
            // file.
            let flags =
                libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY | libc::O_CLOEXEC;
            let fd = io
                .open_at(dir_fd, n, flags, 0o600)
                .map_err(|e| (DIR_FILE, format!("creating a file to unlink: {e}")))?;
            let _ = io.close_fd(fd);
        }
        if self.plan.readdirs {
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            self.list_fd = io
                .open_at(dir_fd, c".", flags, 0)
                .map_err(|e| (DIR_FILE, format!("opening the directory to list: {e}")))?;
            self.list_buf = vec![0u8; LIST_BUF_BYTES];
        }
        Ok(())
    }

    /// After the timed loop: the trace ring goes to the session, the listing descriptor is
    /// closed (not counted: the counts were taken).
    fn finish(&mut self, io: &mut Issuer) {
        if let (Some(ring), Some(s)) = (io.take_trace(), &self.shared.trace) {
            s.finish_ring(ring);
        }
        if self.list_fd >= 0 {
            let _ = io.close_fd(self.list_fd);
            self.list_fd = -1;
        }
    }

    /// The thread's tally once [`source::drive`] is done with it.
    fn into_tally(mut self, driven: Driven<Ended>, io: &mut Issuer) -> Tally {
        self.publish();
        let mut stats = std::mem::take(&mut self.counts);
        stats.elapsed_s = driven.end_ns.saturating_sub(driven.start_ns) as f64 / 1e9;
        stats.usage = driven.usage;
        stats.syscalls = *io.sys();
        self.finish(io);
        let (mut failure, timed_out) = match driven.end {
            Ended::AllCalls => (None, false),
            Ended::Failed(f) => (Some(f), false),
            Ended::Stopped { by_time } => (None, by_time),
        };
        let verify = io.take_verify();
        if let (None, Some((path, offset, message))) =
            (&failure, verify.as_ref().and_then(|v| v.failure_line()))
        {
            // Reads that did not come back as written fail the replay as they fail a run.
            failure = Some(IoFailure {
                user: self.plan.user,
                thread: self.index,
                path,
                offset,
                message,
            });
        }
        Tally {
            stats,
            calls: std::mem::take(&mut self.calls),
            failure,
            done: self.done,
            ramped: driven.ramped,
            warm_calls: self.warm_calls,
            timed_out,
            intervals: driven.intervals,
            verify: verify.map(|v| v.report),
        }
    }

    /// When step `s` is due (`mono_ns`): the latest of its traced time (scaled) and the rate
    /// caps' next slots; None when back to back and uncapped.
    #[inline]
    fn due(&self, s: &Step) -> Option<u64> {
        let traced = self
            .shared
            .speed
            .map(|sp| self.t0_ns + (s.start_ns as f64 / sp) as u64);
        let calls = self.iops.as_ref().map(Pacer::next_due);
        let bytes = self
            .bytes
            .as_ref()
            .filter(|_| s.op.is_data())
            .map(Pacer::next_due);
        [traced, calls, bytes].into_iter().flatten().max()
    }

    /// Step `s` is issued now: it takes its rate slots. Returns when it was due.
    #[inline]
    fn take_slots(&mut self, s: &Step) -> Option<u64> {
        let due = self.due(s);
        if let Some(p) = self.iops.as_mut() {
            p.take();
        }
        if let (Some(p), true) = (self.bytes.as_mut(), s.op.is_data()) {
            p.take_n(s.len as u64);
        }
        due
    }

    /// A `mono_ns` reading as an `Instant` (trace records take those).
    #[inline]
    fn instant(&self, ns: u64) -> Instant {
        self.t0 + Duration::from_nanos(ns.saturating_sub(self.t0_ns))
    }

    /// The counts on the live line's board: the whole replay, its warm-up included.
    fn publish(&self) {
        if let Some(b) = &self.shared.board {
            let now = self.counts.data();
            let mut all = self.live_base;
            for (a, n) in all.iter_mut().zip(now) {
                *a += n;
            }
            b.publish(self.index as usize, all);
        }
    }

    /// Count a call that returned `result` (not negative), issued from `start` to `end`,
    /// due at `intended`.
    #[inline]
    fn count(&mut self, s: &Step, result: i64, start: u64, end: u64, intended: Option<u64>) {
        if let Some(c) = call_index(s.op).map(|k| &mut self.calls[k]) {
            // Reserved in `prepare`: these pushes never allocate.
            c.lat.push(end.saturating_sub(start));
            if c.sched.capacity() > 0 {
                c.sched.push(end.saturating_sub(intended.unwrap_or(start)));
            }
            if s.op.is_data() {
                c.bytes += result as u64;
            }
        }
        match s.op {
            TraceOp::Read => {
                self.counts.read_ops += 1;
                self.counts.read_bytes += result as u64;
            }
            TraceOp::Write => {
                self.counts.write_ops += 1;
                self.counts.write_bytes += result as u64;
            }
            _ => {}
        }
    }

    /// Issue step `s` through `io`: bytes moved (data, readdir), 0, or a negative errno;
    /// None for a call replay does not issue.
    #[inline]
    fn issue(&mut self, s: &Step, io: &mut Issuer) -> Option<i64> {
        // The file's descriptor (none for the steps on the replay's directory).
        let fd = self.fds.get(s.file as usize).copied().unwrap_or(-1);
        Some(match s.op {
            TraceOp::Read | TraceOp::Write => {
                let kind = if s.op == TraceOp::Read {
                    OpKind::Read
                } else {
                    OpKind::Write
                };
                let route = match self.shared.direct_align {
                    Some(a) if s.offset.is_multiple_of(a) && (s.len as u64).is_multiple_of(a) => {
                        Route::Direct
                    }
                    Some(_) => {
                        self.counts.buffered_fallback_ops += 1;
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
                    slot: CALL_SLOT,
                };
                self.counts.inflight[inflight_bucket(1)] += 1;
                let r = if io.verifying() {
                    self.verified_call(s, op, io)
                } else {
                    io.call(op)
                };
                match r {
                    Ok(n) => n as i64,
                    Err(e) => errno(&e),
                }
            }
            TraceOp::Fsync | TraceOp::Fdatasync => {
                status(io.sync_fd(fd, s.op == TraceOp::Fdatasync))
            }
            TraceOp::Stat => status(io.stat_fd(fd, &mut self.stx)),
            TraceOp::Mkdir => status(io.mkdir_at(
                self.shared.dir_fd,
                &self.mkdir_names[s.offset as usize],
                0o755,
            )),
            TraceOp::Unlink => status(io.unlink_at(
                self.shared.dir_fd,
                &self.unlink_names[s.offset as usize],
                false,
            )),
            // The plan leaves trims out (see `plan`): a replay never discards data.
            TraceOp::Trim => return None,
            TraceOp::Readdir => {
                // A listing read to its end starts over, as a program listing again would.
                if self.list_at_end {
                    let _ = io.seek_fd(self.list_fd, 0, libc::SEEK_SET);
                }
                match io.read_dir(self.list_fd, &mut self.list_buf) {
                    Ok(n) => {
                        self.list_at_end = n == 0;
                        n as i64
                    }
                    Err(e) => errno(&e),
                }
            }
            TraceOp::Open | TraceOp::Close => return None,
        })
    }

    /// `--verify`: a write stamped with the stream of where it lands, a read the plan marked
    /// checked against what this thread wrote there, any other read as it is.
    fn verified_call(&self, s: &Step, op: IoOp, io: &mut Issuer) -> std::io::Result<u64> {
        let target = global_file(self.plan, self.shared, s.file);
        let file = (s.file, target);
        let contents = super::verify::Written {
            short: &self.short_written,
            generation: self.shared.verify_generation,
        };
        if op.kind == OpKind::Write {
            return io.write_verified(op, &contents, file, Some(s.offset)).0;
        }
        // The step being issued (`next` has moved past it).
        if self.plan.checked.get(self.next - 1) != Some(&true) {
            return io.call(op);
        }
        let names = &self.shared.names;
        let path = || names.get(target as usize).cloned().unwrap_or_default();
        io.read_verified(op, &contents, file, s.offset, &path)
    }

    /// None while steps are left; the end after the last.
    #[inline]
    fn more(&self) -> Option<Ended> {
        (self.next >= self.plan.steps.len()).then_some(Ended::AllCalls)
    }
}

impl Source for ThreadReplay<'_> {
    type End = Ended;

    /// One replayed call, in the plan's order.
    fn step(&mut self, io: &mut Issuer) -> Option<Ended> {
        let plan = self.plan;
        let Some(s) = plan.steps.get(self.next) else {
            return Some(Ended::AllCalls);
        };
        let intended = self.take_slots(s);
        self.next += 1;
        let start = mono_ns();
        let Some(result) = self.issue(s, io) else {
            return self.more();
        };
        let end = mono_ns();
        self.done += 1;
        if io.traced() {
            let file = global_file(plan, self.shared, s.file);
            let (a, b) = (self.instant(start), self.instant(end));
            if let Some(ring) = io.trace() {
                ring.record_call(s.op, file, s.offset, s.len, a, b, result);
            }
        }
        if result < 0 {
            self.counts.errors += 1;
            let err = std::io::Error::from_raw_os_error((-result) as i32);
            return Some(Ended::Failed(failure(
                self.index,
                plan,
                self.shared,
                s.file,
                Some(s.offset),
                format!("{} failed: {err}", s.op.name()),
            )));
        }
        self.count(s, result, start, end, intended);
        if end >= self.next_publish_ns {
            self.publish();
            self.next_publish_ns = end.saturating_add(PUBLISH_NS);
        }
        self.more()
    }

    fn stopped(&mut self) -> Ended {
        // `--time` (after the warm-up) is over, not Ctrl-C or a stonewall, and calls were left.
        let deadline = self
            .shared
            .deadline()
            .map(|d| self.t0_ns.saturating_add(d.as_nanos() as u64));
        Ended::Stopped {
            by_time: deadline.is_some_and(|d| mono_ns() >= d) && self.more().is_none(),
        }
    }

    /// Every replayed call is paced by the replay's own caps (see [`ThreadReplay::iops`]).
    fn next_paced(&self) -> bool {
        false
    }

    fn started(&mut self, t0_ns: u64) {
        self.t0_ns = t0_ns;
        self.t0 = Instant::now();
        for p in [&mut self.iops, &mut self.bytes].into_iter().flatten() {
            p.start(t0_ns);
        }
        if self.shared.board.is_some() {
            self.next_publish_ns = t0_ns.saturating_add(PUBLISH_NS);
        }
    }

    fn next_due_ns(&self) -> Option<u64> {
        self.plan.steps.get(self.next).and_then(|s| self.due(s))
    }

    /// Reads and writes with their latency, for an interval boundary: the samples since the
    /// last boundary go into the running histograms.
    fn totals(&self) -> Stats {
        let mut t = self.interval.borrow_mut();
        let IntervalTotals { stats, seen } = &mut *t;
        for (k, dir) in [Dir::Read, Dir::Write].into_iter().enumerate() {
            let lat = &self.calls[k].lat;
            for &ns in lat.get(seen[k]..).unwrap_or(&[]) {
                stats.lat_of(dir).record(ns);
            }
            seen[k] = lat.len();
        }
        stats.read_ops = self.counts.read_ops;
        stats.write_ops = self.counts.write_ops;
        stats.read_bytes = self.counts.read_bytes;
        stats.write_bytes = self.counts.write_bytes;
        stats.clone()
    }

    /// The warm-up is over: its samples and counters go (an error ended the replay and is
    /// its failure, so it stays counted); the live line keeps showing the whole replay.
    fn forget(&mut self) {
        let errors = self.counts.errors;
        for (b, n) in self.live_base.iter_mut().zip(self.counts.data()) {
            *b += n;
        }
        self.counts = Counters {
            errors,
            ..Counters::default()
        };
        for c in &mut self.calls {
            c.lat.clear();
            c.sched.clear();
            c.bytes = 0;
        }
        *self.interval.get_mut() = IntervalTotals::default();
        self.warm_calls = self.done;
    }
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
fn zeroed_statx() -> libc::statx {
    // SAFETY: statx is plain integers and arrays of them; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

#[cfg(test)]
mod tests {
    //! The replay source driven by the runner's loop on the mock engine: stop, rate caps,
    //! traced timing, intervals, warm-up, failure.
    use super::*;
    use crate::engine::mock::{MockEngine, Outcome, Script};
    use crate::engine::Built;
    use std::sync::Arc;

    /// `n` 4 KiB steps traced `gap_ns` apart on file 0: reads and writes in turn, or
    /// `stat` for every third when `stats`.
    fn plan(n: u64, gap_ns: u64, stats: bool) -> ThreadPlan {
        let steps = (0..n)
            .map(|i| {
                let op = match i % 3 {
                    2 if stats => TraceOp::Stat,
                    _ if i % 2 == 0 => TraceOp::Read,
                    _ => TraceOp::Write,
                };
                let len = if op.is_data() { 4096 } else { 0 };
                Step {
                    op,
                    file: 0,
                    offset: (i % 16) * 4096,
                    len,
                    start_ns: i * gap_ns,
                }
            })
            .collect();
        ThreadPlan {
            id: 0,
            steps,
            files: vec![0],
            max_len: 4096,
            data_ops: n,
            user: 0,
            unlinks: 0,
            mkdirs: 0,
            readdirs: false,
            checked: Vec::new(),
        }
    }

    fn shared() -> Shared {
        Shared {
            engine: crate::job::EngineKind::Sync,
            speed: None,
            direct_align: None,
            iops: None,
            bytes_per_sec: None,
            workers: 1,
            time: None,
            ramp: None,
            ramp_bytes: 0,
            dir_fd: -1,
            names: Arc::new(vec!["scratch".into(), String::new()]),
            interval_ns: None,
            board: None,
            trace: None,
            verify_seed: None,
            verify_generation: 1,
        }
    }

    /// Replay `plan` on the mock engine (`script`) as `replay_thread` does; `stop` is asked
    /// between steps. The file's descriptor is /dev/null (what a stat step reaches).
    fn replay(
        plan: &ThreadPlan,
        shared: &Shared,
        script: Script,
        stop: &dyn Fn() -> bool,
    ) -> Tally {
        let null = std::fs::File::open("/dev/null").unwrap();
        let fds = vec![std::os::fd::AsRawFd::as_raw_fd(&null)];
        let calls = reserve_samples(plan, shared.timed()).unwrap();
        let mut src = ThreadReplay::new(0, plan, fds, shared, calls);
        let (engine, _log) = MockEngine::new(script, 4096);
        // The trace ring and the verify hooks as `prepare` sets them up.
        let ring = shared
            .trace
            .as_ref()
            .and_then(|s| s.ring_for(0, shared.names.clone(), Some(plan.steps.len() as u64)));
        let mut io = Issuer::new(Built::Boxed(Box::new(engine)), 1, ring);
        if let Some(seed) = shared.verify_seed {
            io.verify_with(seed);
        }
        let how = Drive {
            gate: &|| {},
            stop,
            deadline: shared.time,
            ramp: shared.ramp,
            ramp_bytes: shared.ramp_bytes,
            pacing: StepPacing::default(),
            interval_ns: shared.interval_ns,
        };
        let driven = source::drive(&mut src, &mut io, how);
        src.into_tally(driven, &mut io)
    }

    fn samples(t: &Tally) -> u64 {
        t.calls.iter().map(|c| c.lat.len() as u64).sum()
    }

    #[test]
    fn every_call_is_replayed_and_counted_by_kind() {
        let t = replay(&plan(12, 0, true), &shared(), Script::default(), &|| false);
        assert_eq!(t.done, 12);
        assert!(t.failure.is_none() && !t.timed_out);
        let k = |op| &t.calls[call_index(op).unwrap()];
        assert_eq!(k(TraceOp::Stat).lat.len(), 4);
        assert_eq!(
            (t.stats.read_ops, t.stats.write_ops),
            (
                k(TraceOp::Read).lat.len() as u64,
                k(TraceOp::Write).lat.len() as u64
            )
        );
        assert_eq!(t.stats.read_ops + t.stats.write_ops, 8);
        assert_eq!(t.stats.read_bytes, t.stats.read_ops * 4096);
        // The mock's data calls, and the real fstat of the stat steps, are counted.
        assert_eq!(t.stats.syscalls.stat, 4);
        // Untimed: no schedule latency is kept.
        assert!(t.calls.iter().all(|c| c.sched.is_empty()));
    }

    #[test]
    fn a_stop_ends_the_replay_between_calls() {
        let asked = Cell::new(0u32);
        let stop = || {
            asked.set(asked.get() + 1);
            asked.get() > 5
        };
        let t = replay(&plan(1000, 0, false), &shared(), Script::default(), &stop);
        assert_eq!(t.done, 5);
        assert_eq!(samples(&t), 5);
        // What was done up to the stop is in the counts: reads at 0, 2, 4, writes at 1, 3.
        assert_eq!((t.stats.read_ops, t.stats.write_ops), (3, 2));
        assert_eq!(t.stats.read_bytes + t.stats.write_bytes, 5 * 4096);
        assert_eq!(t.stats.syscalls.other, 5);
        // Stopped, not by --time.
        assert!(!t.timed_out && t.failure.is_none());
    }

    #[test]
    fn the_rate_cap_spaces_every_call_metadata_included() {
        let mut sh = shared();
        // 100 calls a second: 6 calls (2 of them stats) take at least 50 ms.
        sh.iops = Some(100.0);
        let t0 = Instant::now();
        let t = replay(&plan(6, 0, true), &sh, Script::default(), &|| false);
        assert!(
            t0.elapsed() >= Duration::from_millis(45),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(t.done, 6);
        // Timed: each call has its schedule latency too.
        assert!(t.calls.iter().all(|c| c.sched.len() == c.lat.len()));
        // 8 KiB a second of 4 KiB data calls: the first is due at once, the second at
        // 0.5 s, after a 300 ms --time.
        let mut sh = shared();
        sh.bytes_per_sec = Some(8192.0);
        sh.time = Some(Duration::from_millis(300));
        let t = replay(&plan(3, 0, false), &sh, Script::default(), &|| false);
        assert_eq!(t.done, 1);
        assert!(t.timed_out);
    }

    #[test]
    fn traced_times_are_kept_and_time_stops_the_replay() {
        let mut sh = shared();
        // Calls traced 20 ms apart, replayed twice as fast, for 55 ms: calls at 0, 10, ...,
        // 50 ms.
        sh.speed = Some(2.0);
        sh.time = Some(Duration::from_millis(55));
        let t0 = Instant::now();
        let t = replay(
            &plan(100, 20_000_000, false),
            &sh,
            Script::default(),
            &|| false,
        );
        let el = t0.elapsed();
        assert!((5..=7).contains(&t.done), "{} calls in {el:?}", t.done);
        assert!(t.timed_out);
        assert!(el >= Duration::from_millis(55), "{el:?}");
        assert!(t.stats.elapsed_s >= 0.055, "{}", t.stats.elapsed_s);
    }

    #[test]
    fn intervals_hold_the_reads_and_writes_with_their_latency() {
        let mut sh = shared();
        sh.speed = Some(1.0);
        sh.interval_ns = Some(10_000_000);
        // A call a millisecond, 55 of them, 3 in 10 a stat (not in the series).
        let t = replay(&plan(55, 1_000_000, true), &sh, Script::default(), &|| {
            false
        });
        assert!(t.intervals.len() >= 5, "{} intervals", t.intervals.len());
        let ops: u64 = t.intervals.iter().map(|i| i.read_ops + i.write_ops).sum();
        assert_eq!(ops, t.stats.read_ops + t.stats.write_ops);
        let bytes: u64 = t
            .intervals
            .iter()
            .map(|i| i.read_bytes + i.write_bytes)
            .sum();
        assert_eq!(bytes, t.stats.read_bytes + t.stats.write_bytes);
        assert!(t.intervals.iter().all(|i| i.other_ops == 0));
        let lat: u64 = t
            .intervals
            .iter()
            .flat_map(|i| i.lat_buckets.iter().map(|b| b[1]))
            .sum();
        assert_eq!(lat, ops);
        // On the grid: numbered in order, ending 10 ms apart.
        for w in t.intervals.windows(2) {
            assert!(w[1].index > w[0].index && w[1].end_ns > w[0].end_ns);
        }
    }

    #[test]
    fn the_warm_up_is_left_out_of_the_counts() {
        let mut sh = shared();
        // 40 calls 2 ms apart; the first 20 ms are a warm-up.
        sh.speed = Some(1.0);
        sh.ramp = Some(Duration::from_millis(20));
        let t = replay(&plan(40, 2_000_000, false), &sh, Script::default(), &|| {
            false
        });
        assert_eq!(t.done, 40);
        assert!(t.ramped);
        assert!((5..=15).contains(&t.warm_calls), "{}", t.warm_calls);
        assert_eq!(samples(&t), t.done - t.warm_calls);
        assert_eq!(t.stats.read_ops + t.stats.write_ops, t.done - t.warm_calls);
        // The measured window is the time after the warm-up (~58 ms of ~78).
        assert!(t.stats.elapsed_s < 0.07, "{}", t.stats.elapsed_s);
    }

    #[test]
    fn a_failed_call_ends_the_replay_with_its_failure() {
        let script = Script {
            outcomes: vec![(3, Outcome::Errno(libc::EIO))],
            ..Script::default()
        };
        let t = replay(&plan(10, 0, false), &shared(), script, &|| false);
        assert_eq!(t.done, 4);
        assert_eq!(t.stats.errors, 1);
        let f = t.failure.expect("a failure");
        assert_eq!((f.path.as_str(), f.offset), ("scratch", Some(3 * 4096)));
        assert!(f.message.starts_with("write failed"), "{}", f.message);
    }

    #[test]
    fn the_trace_ring_records_every_replayed_call() {
        let mut sh = shared();
        let session = crate::trace::TraceSession::new(1000);
        sh.trace = Some(session.clone());
        let p = plan(12, 0, true);
        let t = replay(&p, &sh, Script::default(), &|| false);
        assert_eq!(t.done, 12);
        let (trace, dropped) = session.take();
        assert_eq!(dropped, 0);
        let got: Vec<(TraceOp, u64, u64)> = trace
            .records
            .iter()
            .map(|r| (r.op, r.offset, r.len))
            .collect();
        let want: Vec<(TraceOp, u64, u64)> = p
            .steps
            .iter()
            .map(|s| (s.op, s.offset, s.len as u64))
            .collect();
        assert_eq!(got, want);
        assert!(trace.records.iter().all(|r| r.result >= 0));
    }

    #[test]
    fn the_replay_threads_cpu_time_is_its_own() {
        let t0 = Instant::now();
        let t = replay(
            // Enough calls to span many scheduler ticks: a thread's CPU time is sampled at
            // the tick, and a loaded machine gives a short run few of them.
            &plan(200_000, 0, false),
            &shared(),
            Script::default(),
            &|| false,
        );
        let wall = t0.elapsed().as_secs_f64();
        let cpu = t.stats.usage.cpu_user_s + t.stats.usage.cpu_sys_s;
        // 200,000 calls take CPU time, counted on the replaying thread: no more than the
        // time it ran (a process's figure would hold the test harness's other threads).
        assert!(cpu > 0.0, "{:?}", t.stats.usage);
        assert!(cpu <= wall + 0.01, "{cpu} s of CPU in {wall} s");
    }

    /// `n` 4 KiB writes at 0, 4 KiB, ... then reads of the same blocks, and one read of a
    /// block never written: the reads of written blocks are marked checked.
    fn write_then_read(n: u64) -> ThreadPlan {
        let step = |op, i: u64| Step {
            op,
            file: 0,
            offset: i * 4096,
            len: 4096,
            start_ns: 0,
        };
        let mut steps: Vec<Step> = (0..n).map(|i| step(TraceOp::Write, i)).collect();
        steps.extend((0..n).map(|i| step(TraceOp::Read, i)));
        steps.push(step(TraceOp::Read, n + 5));
        let mut p = plan(0, 0, false);
        p.data_ops = steps.len() as u64;
        p.steps = steps;
        super::super::verify::mark_checked_reads(std::slice::from_mut(&mut p));
        p
    }

    #[test]
    fn verify_checks_the_reads_of_what_the_replay_wrote() {
        let mut sh = shared();
        sh.verify_seed = Some(crate::runner::verify::run_seed(1));
        let p = write_then_read(8);
        let store = crate::engine::mock::Store::default();
        let script = |faults| Script {
            store: Some(store.clone()),
            faults,
            ..Script::default()
        };
        let t = replay(&p, &sh, script(Vec::new()), &|| false);
        assert!(t.failure.is_none(), "{:?}", t.failure);
        let v = t.verify.expect("verified");
        // The read of the block never written is not checked.
        assert_eq!((v.blocks_checked, v.blocks_intact), (8, 8));
        assert_eq!(v.bytes_checked, 8 * 4096);
        // The third write is stored with a bit flipped: its read back fails the replay.
        store.lock().unwrap().clear();
        let flip = vec![(2, crate::engine::mock::Fault::FlipBit(77))];
        let t = replay(&p, &sh, script(flip), &|| false);
        let v = t.verify.expect("verified");
        assert_eq!((v.blocks_checked, v.corrupt.blocks), (8, 1));
        assert_eq!(v.corrupt.first[0].offset_bytes, 2 * 4096 + 9);
        let f = t.failure.expect("a verify failure");
        assert_eq!((f.path.as_str(), f.offset), ("scratch", Some(2 * 4096 + 9)));
        assert!(
            f.message
                .starts_with("verify: 1 read(s) did not come back as written"),
            "{}",
            f.message
        );
        // Without --verify nothing is checked.
        let t = replay(&p, &shared(), script(Vec::new()), &|| false);
        assert!(t.verify.is_none() && t.failure.is_none());
    }
}
