//! The flowop interpreter: one WML thread instance is a `Source` of flowop executions that
//! the runner drives (`runner::source::drive`): each step runs one flowop once, in order,
//! again and again, until the run stops or a flowop finishes the thread (finishoncount/
//! finishonbytes, out of files). The runner owns the start gate (the arena's ready/go
//! barrier, passed in as the gate), the stop check between steps (the arena's stop flag), the
//! rate limit (`--rate-iops`, `--rate-bytes`: data flowops are paced, metadata flowops not, as
//! in fio), the warm-up (`--ramp`), the `--status-interval` series and the CPU accounting.
//!
//! Every system call a flowop makes goes through the [`Issuer`] the runner lends it (built on
//! the `--engine sync` or `uring` engine): data I/O as calls on its buffer slot and file slots
//! (file slot = the flowop's descriptor number), metadata (open/create, close, unlink, stat,
//! mkdir/rmdir, listdir, fsync, fadvise, the O_DIRECT switch) as its metadata calls, and
//! aiowrite/aiowait as queued writes (on the thread's io_uring engine, or beside a sync
//! engine on the queue ring the Issuer builds on first use). Paths are pre-built C strings
//! and the buffers come from the engine's pool, so nothing allocates or locks beside the I/O
//! itself; latency and CPU are clock reads (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID).
//!
//! A traced run (`--trace`) gives the Issuer a preallocated ring in the thread's untimed
//! preparation; every call (open, close, read, write, fsync, unlink, stat, mkdir, readdir)
//! is recorded with its file's index in the run's shared table of fileset paths (two clock
//! reads and a few stores, only when traced). The system calls every thread made are counted
//! per call kind and merged into the Result.
//!
//! The data flowops (read, write, the whole-file ones, aiowrite/aiowait) are in
//! `interp/data.rs`; the metadata and control flowops (open, close, delete, stat, directories,
//! fsync, semaphores, limits, composites) in `interp/meta.rs`; the source's step, its dispatch
//! and its accounting are here.

use super::fileset::{busy_wait, pick, release, unbusy, From, Picked, SetLayout, Want};
use super::model::{flatten, Flowop, Kind, Model, ThreadSpec};
use super::shared::{futex_wait, now_ns, Arena, Rotor, Waited};
use super::stats::FlowopStats;
use super::vars::Rng;
use crate::engine::meta::AT_FDCWD;
use crate::engine::{IoOp, OpKind};
use crate::job::{EngineKind, RateLimit, Route};
use crate::runner::issue::{Issuer, CALL_SLOT};
use crate::runner::pace::StepPacing;
use crate::runner::source::{drive, Drive, Source};
use crate::stats::{Stats, SyscallCounts, Usage};
use crate::trace::{TraceFiles, TraceOp, TraceRing};
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering::*;
use std::time::{Duration, Instant};

mod data;
mod meta;
#[cfg(test)]
mod source_tests;

/// What every thread of a run shares (read-only apart from the arena's atomics).
pub struct Shared<'a> {
    pub model: &'a Model,
    pub layouts: &'a [SetLayout],
    pub arena: &'a Arena,
    /// The engine every thread issues its system calls through (sync or uring).
    pub engine: EngineKind,
    /// `--rate-iops` / `--rate-bytes` / `--rate-scope`: paces the data flowops.
    pub rate: RateLimit,
    /// The trace's file table when the run is traced (`trace_files`).
    pub trace_files: Option<TraceFiles>,
    /// The `--status-interval` grid (ns): each thread keeps its intervals on it.
    pub interval_ns: Option<u64>,
    /// `--trace`: the session each thread's ring goes back to.
    pub trace: Option<std::sync::Arc<crate::trace::TraceSession>>,
    /// `--ramp`: how long each thread runs before its counts start.
    pub ramp: Option<Duration>,
    /// `--ramp-bytes`: how many bytes each thread moves before its counts start (0: none).
    pub ramp_bytes: u64,
}

/// The file table of a traced workload: every fileset's entries in order, then every
/// fileset's directories; a thread's trace ring names files by their index in it. None when
/// the run records no trace (`traced` false; built before the threads start, never on the
/// I/O path).
pub(crate) fn trace_files(layouts: &[SetLayout], traced: bool) -> Option<TraceFiles> {
    if !traced {
        return None;
    }
    let mut v = Vec::new();
    for l in layouts {
        v.extend((0..l.len()).map(|i| l.path(i).as_path().display().to_string()));
    }
    for l in layouts {
        v.extend((0..l.dir_count()).map(|d| l.dir_path(d).as_path().display().to_string()));
    }
    Some(std::sync::Arc::new(v))
}

/// Where each fileset's entries and directories start in the [`trace_files`] table.
fn trace_bases(layouts: &[SetLayout]) -> (Vec<u32>, Vec<u32>) {
    let mut files = Vec::with_capacity(layouts.len());
    let mut n = 0u32;
    for l in layouts {
        files.push(n);
        n = n.saturating_add(l.len() as u32);
    }
    let mut dirs = Vec::with_capacity(layouts.len());
    for l in layouts {
        dirs.push(n);
        n = n.saturating_add(l.dir_count() as u32);
    }
    (files, dirs)
}

/// The clock read that starts a traced call (none when the thread records no trace).
#[inline]
fn clock(io: &Issuer) -> Option<Instant> {
    io.traced().then(Instant::now)
}

/// Record a call that began at `start` (see [`clock`]) and ends now.
#[inline]
fn rec(
    io: &mut Issuer,
    op: TraceOp,
    file: u32,
    offset: u64,
    len: u64,
    start: Option<Instant>,
    result: i64,
) {
    if let (Some(r), Some(t)) = (io.trace(), start) {
        let len = len.min(u32::MAX as u64) as u32;
        r.record_call(op, file, offset, len, t, Instant::now(), result);
    }
}

/// A call's outcome as a trace records it: the value, or the negative errno.
#[inline]
fn outcome<T: Copy + Into<i64>>(r: &std::io::Result<T>) -> i64 {
    match r {
        Ok(v) => (*v).into(),
        Err(_) => status(r),
    }
}

/// A call without a value as a trace records it: 0, or the negative errno.
#[inline]
fn status<T>(r: &std::io::Result<T>) -> i64 {
    match r {
        Ok(_) => 0,
        Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
    }
}

/// The data flowops: what `--rate-iops`/`--rate-bytes` pace (as fio, metadata calls do not
/// count against the rate).
fn is_data(k: Kind) -> bool {
    use Kind::*;
    matches!(
        k,
        Read | Write | AppendFile | AppendFileRand | AioWrite | ReadWholeFile | WriteWholeFile
    )
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ThreadId {
    pub process: usize,
    pub process_instance: u64,
    pub thread: usize,
    pub thread_instance: u64,
    /// Index of this thread's progress counters in the arena.
    pub slot: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum End {
    /// The run was stopped (time up, another thread finished first, Ctrl-C).
    Stopped,
    /// A finishoncount/finishonbytes flowop ended the thread.
    Finished(String),
    /// A flowop could not obtain a file in the state it needs.
    OutOfFiles(String),
    Failed(String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadOutcome {
    pub id: ThreadId,
    pub flowops: Vec<FlowopStats>,
    pub usage: Usage,
    pub end: End,
    /// The system calls the thread made through its engines.
    #[serde(default)]
    pub sys: SyscallCounts,
    /// `--status-interval` intervals of the thread's I/O flowops (what the summary counts).
    #[serde(default)]
    pub intervals: Vec<crate::runner::live::IntervalSample>,
    /// What `--verify` found in this thread's reads (None: the run does not verify).
    #[serde(default)]
    pub verify: Option<crate::verify::report::VerifyReport>,
}

struct OpenFd {
    fd: i32,
    set: usize,
    entry: usize,
    direct: bool,
    /// Next offset of sequential aiowrite (other flowops use the descriptor's own offset).
    aio_off: u64,
    /// The descriptor's offset and the file's end as this thread's calls moved them: the
    /// offsets a trace records for cursor and append I/O (no lseek on the I/O path).
    pos: u64,
    end: u64,
    /// `--verify`: the incarnation of the file this descriptor was opened on.
    incarnation: u64,
}

enum Step {
    Ok,
    /// Not counted at all (Filebench returns without ending an op: a deletefile that skips a
    /// file open elsewhere, a limit flowop without an event generator).
    Quiet,
    Done(String),
    NoRsc(String),
    Stopped,
}

type StepResult = Result<Step, FlowopError>;

/// Why a flowop (or a thread's setup) failed. Its text is the one line the Result shows for
/// the thread that it ended.
#[derive(Debug)]
pub enum FlowopError {
    /// A system call failed: what was being done (naming the file) and the error.
    Call { what: String, err: std::io::Error },
    /// The thread's engine could not be built (io_uring setup refused).
    Setup(anyhow::Error),
    /// The workload asks for what its state does not allow: a descriptor that is not open,
    /// a file smaller than the I/O size, a full aio queue.
    State(String),
    /// A failure inside one flowop, with where it is in the workload file.
    At {
        name: String,
        kind: &'static str,
        line: u32,
        source: Box<FlowopError>,
    },
}

impl std::fmt::Display for FlowopError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlowopError::Call { what, err } => write!(f, "{what}: {err}"),
            FlowopError::Setup(e) => write!(f, "{e}"),
            FlowopError::State(s) => f.write_str(s),
            FlowopError::At {
                name,
                kind,
                line,
                source,
            } => write!(f, "flowop {name} ({kind}) at line {line}: {source}"),
        }
    }
}

impl std::error::Error for FlowopError {}

/// A failed system call: `what` was being done.
fn call(what: impl Into<String>, err: std::io::Error) -> FlowopError {
    FlowopError::Call {
        what: what.into(),
        err,
    }
}

/// Per-flowop CPU time is read on one execution in this many.
pub const CPU_SAMPLE: u64 = 16;

/// Filebench's THREADFLOW_MAXFD: `opennext` rotates through descriptors 127 down to 0.
const MAXFD: usize = 128;

/// `sizeof(struct dirent)` with glibc on Linux: Filebench's listdir counts
/// `strlen(d_name) + sizeof(struct dirent) - 1` bytes per entry.
const DIRENT_SIZE: u64 = 280;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes into our timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Descriptor slots of a thread (Filebench's `tf_fd`), and so the engine's file slots.
const FDS: usize = 1025;

/// Bytes of getdents64 records read per call by listdir.
const DENTS_BUF: usize = 32 << 10;

/// The thread's issuing handle: its engine (`kind` over [`FDS`] empty file slots, `slots`
/// buffers of `len` bytes) and its trace ring. When the engine cannot be built the handle
/// has a stand-in and the reason comes back too: the thread still takes part in the start
/// gate, then fails at once with it.
fn thread_issuer(
    kind: EngineKind,
    slots: usize,
    len: usize,
    seed: u64,
    ring: Option<TraceRing>,
) -> (Issuer, Option<FlowopError>) {
    let built = match kind {
        EngineKind::Sync => {
            Issuer::sync_engine(FDS, slots, len, seed).map_err(|e| call("I/O buffers", e))
        }
        EngineKind::Uring => {
            Issuer::uring_engine(FDS, slots, len, seed).map_err(FlowopError::Setup)
        }
        EngineKind::Mmap | EngineKind::Null | EngineKind::Falloc | EngineKind::Ftruncate => Err(
            FlowopError::State("workloads run on the sync or uring engine".into()),
        ),
    };
    match built {
        Ok(e) => (Issuer::new(e, FDS, ring), None),
        Err(why) => {
            let e = Issuer::sync_engine(FDS, 1, 4096, seed).expect("4 KiB");
            (Issuer::new(e, FDS, ring), Some(why))
        }
    }
}

/// Filebench's per-flowop state of iopslimit/opslimit/bwlimit (`fo_tputlast`, `fo_tputbucket`).
#[derive(Clone, Copy, Default)]
struct Bucket {
    last: u64,
    level: i64,
}

/// Draw like Filebench's `fb_random64(&r, max, round)`: uniform in [0, max - round], rounded
/// down to a multiple of `round`.
fn fb_random(rng: &mut Rng, max: u64, round: u64) -> u64 {
    let span = max.saturating_sub(round) as f64;
    let r = (rng.unit() * span) as u64;
    match r.checked_div(round) {
        Some(q) => q * round,
        None => r,
    }
}

/// One WML thread instance as a [`Source`]: its flowops, where it is in them, and what its
/// flowops keep between executions (descriptors, rotors, buckets, statistics).
struct Thread<'a> {
    sh: &'a Shared<'a>,
    id: ThreadId,
    /// The thread's flowops, run in order again and again; `at` is the next one and `done`
    /// how many of its `iters` executions have run.
    flowops: &'a [Flowop],
    at: usize,
    done: u64,
    /// Per flowop of `flowops`: whether a rate limit paces it (a data flowop, or a
    /// composite with one inside).
    paced: Vec<bool>,
    /// Every flowop in statistics order (composites' inner ones too), and the statistics
    /// slots of those that count in the IO Summary (what the intervals add up).
    flat: Vec<&'a Flowop>,
    io_stats: Vec<usize>,
    /// Why the thread cannot run (its engine could not be built): it ends at its first step.
    setup_err: Option<FlowopError>,
    /// Usable buffer bytes per I/O.
    buf_len: usize,
    /// getdents64 buffer of listdir, allocated once.
    dents: Vec<u8>,
    rng: Rng,
    /// The thread's descriptor table (Filebench's `tf_fd`): `fd=N`, 0 by default.
    fds: Vec<Option<OpenFd>>,
    /// The file last opened on each descriptor (Filebench's `tf_fse`): kept after close, so
    /// `deletefile fd=N` and `srcfd=N` still name it.
    fse: Vec<Option<(usize, usize)>>,
    /// `opennext`: the next descriptor to use counts down from MAXFD.
    fdrotor: usize,
    /// `opennext` openfile picks with a rotor of the thread's own, per fileset.
    own_rotor: Vec<u32>,
    /// What the Result gets of each flowop (forgotten at the end of a warm-up).
    stats: Vec<Stats>,
    /// Ops and bytes of each flowop since the start, warm-up included: what
    /// finishoncount/finishonbytes and the limits read of a flowop they name.
    tally: Vec<[u64; 2]>,
    buckets: Vec<Bucket>,
    /// Progress slots of the threads of this process instance (Filebench's process-wide
    /// counters that finishoncount and the limits read when they name no target).
    proc_slots: std::ops::Range<usize>,
    /// Instance number of this thread among the instances of its thread definition, for its
    /// own semblock/block semaphore.
    sem_instance: usize,
    /// Bytes the current execution moved (read or written, or dirent bytes for listdir).
    bytes: u64,
    /// aiowrites queued and not yet reaped, and the first error among reaped ones.
    aio_inflight: u32,
    aio_err: Option<i32>,
    /// Where each fileset's entries and directories start in the trace's file table.
    file_base: Vec<u32>,
    dir_base: Vec<u32>,
}

/// Whether a rate limit paces an execution of `fo`: a data flowop, or a composite with one
/// inside (its whole body is one step, charged with every call of it).
fn paced(fo: &Flowop) -> bool {
    is_data(fo.kind) || fo.inner.iter().any(paced)
}

impl<'a> Thread<'a> {
    /// Thread instance `id` of `spec`, ready to run (its first step is its first flowop),
    /// and the seed of its buffers.
    fn new(sh: &'a Shared<'a>, spec: &'a ThreadSpec, id: ThreadId) -> (Thread<'a>, u64) {
        let flat = flatten(&spec.flowops);
        let max_io = flat
            .iter()
            .map(|f| f.iosize.upper_hint())
            .fold(0.0, f64::max) as usize;
        let buf_len = (spec.memsize as usize).max(max_io).min(256 << 20);
        let proc = &sh.model.processes[id.process];
        let per_instance: usize = proc.threads.iter().map(|t| t.instances as usize).sum();
        let before: usize = proc.threads[..id.thread]
            .iter()
            .map(|t| t.instances as usize)
            .sum::<usize>()
            + id.thread_instance as usize;
        let first = id.slot - before;
        let seed = (id.slot as u64 + 1).wrapping_mul(0x9E37_79B9) ^ now_ns();
        let (file_base, dir_base) = trace_bases(sh.layouts);
        let io_stats = flat
            .iter()
            .filter(|f| is_io(f.kind))
            .map(|f| f.stat)
            .collect();
        let mut t = Thread {
            sh,
            id,
            flowops: &spec.flowops,
            at: 0,
            done: 0,
            paced: spec.flowops.iter().map(paced).collect(),
            io_stats,
            setup_err: None,
            buf_len,
            dents: vec![0; DENTS_BUF],
            rng: Rng::new(seed),
            fds: (0..FDS).map(|_| None).collect(),
            fse: vec![None; FDS],
            fdrotor: 0,
            own_rotor: vec![0; sh.model.filesets.len()],
            stats: super::stats::ready(flat.iter().map(|f| f.kind)),
            tally: vec![[0; 2]; flat.len()],
            buckets: vec![Bucket::default(); flat.len()],
            proc_slots: first..first + per_instance,
            sem_instance: (id.process_instance * spec.instances + id.thread_instance) as usize,
            bytes: 0,
            aio_inflight: 0,
            aio_err: None,
            file_base,
            dir_base,
            flat,
        };
        t.skip_idle();
        (t, seed)
    }

    /// Move `at` past flowops of no iterations (`iters=0`), at most once round the list.
    fn skip_idle(&mut self) {
        for _ in 0..self.flowops.len() {
            if self.flowops[self.at].iters > 0 {
                return;
            }
            self.at = (self.at + 1) % self.flowops.len();
        }
    }

    /// One execution of the next flowop is done: on to the next execution.
    fn advance(&mut self) {
        self.done += 1;
        if self.done >= self.flowops[self.at].iters {
            self.done = 0;
            self.at = (self.at + 1) % self.flowops.len();
            self.skip_idle();
        }
    }
}

impl Source for Thread<'_> {
    type End = End;

    /// One execution of the next flowop.
    fn step(&mut self, io: &mut Issuer) -> Option<End> {
        if let Some(e) = self.setup_err.take() {
            return Some(End::Failed(e.to_string()));
        }
        let flowops = self.flowops;
        let Some(fo) = flowops.get(self.at).filter(|f| f.iters > 0) else {
            // A thread without flowops to run idles until the run stops.
            std::thread::sleep(Duration::from_millis(10));
            return None;
        };
        self.advance();
        match self.run_once(io, fo) {
            Ok(end) => end,
            Err(e) => Some(End::Failed(e.to_string())),
        }
    }

    fn stopped(&mut self) -> End {
        End::Stopped
    }

    fn next_paced(&self) -> bool {
        self.paced.get(self.at).copied().unwrap_or(false)
    }

    /// The I/O flowops' statistics added together (at an interval boundary).
    #[cold]
    fn totals(&self) -> Stats {
        let mut s = Stats::default();
        for &i in &self.io_stats {
            s += &self.stats[i];
        }
        s
    }

    fn forget(&mut self) {
        self.stats = super::stats::ready(self.flat.iter().map(|f| f.kind));
        if self.sh.ramp_bytes > 0 {
            // This thread is past its warm-up by bytes (called once: when it ends, or when
            // the thread ends inside it): the parent's measured window starts when every
            // thread is.
            let ctl = self.sh.arena.ctl();
            ctl.warm_end_ns.fetch_max(now_ns(), SeqCst);
            ctl.warmed.fetch_add(1, SeqCst);
        }
    }
}

/// Run one thread instance to its end: its source driven by the runner on its engine, after
/// the arena's start barrier, until the arena's stop flag or its own end.
pub fn run_thread(sh: &Shared, spec: &ThreadSpec, id: ThreadId) -> ThreadOutcome {
    let (mut t, seed) = Thread::new(sh, spec, id);
    // aiowrite on the thread's own io_uring engine needs a second buffer slot.
    let has_aio = t.flat.iter().any(|f| f.kind == Kind::AioWrite);
    let slots = if has_aio && sh.engine == EngineKind::Uring {
        2
    } else {
        1
    };
    // Taken here, in the untimed preparation: the ring is allocated and touched now.
    let ring = match (&sh.trace, &sh.trace_files) {
        (Some(s), Some(f)) => s.ring_for(id.slot as u32, f.clone(), None),
        _ => None,
    };
    let (mut io, setup_err) = thread_issuer(sh.engine, slots, t.buf_len, seed, ring);
    t.setup_err = setup_err;
    if let Some(seed) = super::verify::seed(sh.arena) {
        io.verify_with(seed);
    }
    let ctl = sh.arena.ctl();
    ctl.live.fetch_add(1, SeqCst);
    // The start gate of every thread of every process: ready, then the parent's go.
    let gate = || {
        ctl.ready.fetch_add(1, SeqCst);
        while ctl.go.load(Acquire) == 0 {
            futex_wait(&ctl.go, 0, Duration::from_millis(50));
        }
    };
    let stop = || sh.arena.stopping();
    let driven = drive(
        &mut t,
        &mut io,
        Drive {
            gate: &gate,
            stop: &stop,
            deadline: None,
            ramp: sh.ramp,
            ramp_bytes: sh.ramp_bytes,
            pacing: StepPacing::for_thread(
                &sh.rate,
                id.slot as u64,
                sh.model.total_threads() as u64,
            ),
            interval_ns: sh.interval_ns,
        },
    );
    t.drain_aio(&mut io);
    t.close_all(&mut io);
    if let (Some(r), Some(s)) = (io.take_trace(), &sh.trace) {
        s.finish_ring(r);
    }
    tell_end(ctl, &driven.end);
    let flowops = t
        .flat
        .iter()
        .map(|f| FlowopStats {
            name: f.name.clone(),
            kind: f.kind,
            stats: std::mem::take(&mut t.stats[f.stat]),
        })
        .collect();
    ThreadOutcome {
        id,
        flowops,
        usage: driven.usage,
        end: driven.end,
        sys: *io.sys(),
        intervals: driven.intervals,
        verify: io.take_verify().map(|c| c.report),
    }
}

/// Tell the parent's stop conditions how a thread ended (it is no longer live).
fn tell_end(ctl: &super::shared::Control, end: &End) {
    if matches!(end, End::Finished(_) | End::OutOfFiles(_)) {
        ctl.done.fetch_add(1, SeqCst);
    }
    if matches!(end, End::OutOfFiles(_)) {
        ctl.norsc.fetch_add(1, SeqCst);
    }
    if matches!(end, End::Failed(_)) {
        ctl.failed.fetch_add(1, SeqCst);
    }
    ctl.live.fetch_sub(1, SeqCst);
}

impl Thread<'_> {
    /// Count one operation of `fo` (Filebench's flowop_endop): its latency, one read or write
    /// op for flowops with that attribute, `bytes`, and the process-wide progress for
    /// file-system flowops.
    fn count(&mut self, fo: &Flowop, lat: u64, cpu: Option<u64>, bytes: u64) {
        let tally = &mut self.tally[fo.stat];
        tally[0] += 1;
        tally[1] += bytes;
        let s = &mut self.stats[fo.stat];
        super::stats::record(s, super::stats::dir(fo.kind), lat, cpu);
        let (mut r, mut w) = (0, 0);
        if fo.kind.is_read() {
            r = 1;
            s.read_ops += 1;
            s.read_bytes += bytes;
        } else if fo.kind.is_write() {
            w = 1;
            s.write_ops += 1;
            s.write_bytes += bytes;
        } else {
            s.other_ops += 1;
            // listdir's dirent bytes: in the flowop's bytes, no read op.
            s.read_bytes += bytes;
        }
        if is_io(fo.kind) {
            let p = self.sh.arena.progress(self.id.slot);
            // Only this thread writes its slot: plain load + store, no locked
            // read-modify-write needed.
            let bump = |a: &std::sync::atomic::AtomicU64, d: u64| {
                if d > 0 {
                    a.store(a.load(Relaxed) + d, Relaxed);
                }
            };
            bump(&p.ops, 1);
            bump(&p.read_ops, r);
            bump(&p.write_ops, w);
            if r == 1 || w == 0 {
                bump(&p.read_bytes, bytes);
            } else {
                bump(&p.write_bytes, bytes);
            }
        }
    }

    /// One execution of `fo`: its clock, its CPU sample, its count. Ok(Some) ends the thread.
    fn run_once(&mut self, io: &mut Issuer, fo: &Flowop) -> Result<Option<End>, FlowopError> {
        let t0 = now_ns();
        // The thread CPU clock is a system call: read it on every CPU_SAMPLE-th execution
        // of each flowop only (the summary's CPU per op is exact, from getrusage).
        let sample = self.stats[fo.stat].ops().is_multiple_of(CPU_SAMPLE);
        let c0 = if sample { thread_cpu_ns() } else { 0 };
        self.bytes = 0;
        let step = self.exec(io, fo, t0).map_err(|e| FlowopError::At {
            name: fo.name.clone(),
            kind: kind_name(fo.kind),
            line: fo.pos.line,
            source: Box::new(e),
        })?;
        let lat = now_ns().saturating_sub(t0);
        let cpu = sample.then(|| thread_cpu_ns().saturating_sub(c0));
        match step {
            Step::Ok => self.count(fo, lat, cpu, self.bytes),
            Step::Quiet => {}
            Step::Done(why) => {
                // finishoncount/finishonbytes end their op before stopping the thread.
                self.count(fo, lat, cpu, 0);
                return Ok(Some(End::Finished(why)));
            }
            Step::NoRsc(why) => {
                return Ok(Some(End::OutOfFiles(format!("flowop {}: {why}", fo.name))))
            }
            Step::Stopped => return Ok(Some(End::Stopped)),
        }
        Ok(None)
    }

    /// The trace file index of entry `i` of fileset `set`.
    #[inline]
    fn entry_file(&self, set: usize, i: usize) -> u32 {
        self.file_base[set].saturating_add(i as u32)
    }

    fn iosize(&mut self, fo: &Flowop) -> usize {
        (fo.iosize.sample(&mut self.rng).max(1.0) as usize).min(self.buf_len)
    }

    /// Sum of one progress counter over the threads of this process instance.
    fn proc_total(&self, f: impl Fn(&super::shared::Progress) -> u64) -> u64 {
        self.proc_slots
            .clone()
            .map(|i| f(self.sh.arena.progress(i)))
            .sum()
    }

    /// Filebench's flowoplib_fdnum: `fd=N` (N > 0), else the next descriptor of the
    /// `opennext` rotation, else the default descriptor 0.
    fn fdnum(&mut self, fo: &Flowop) -> usize {
        let fd = fo.fd.unwrap_or(0);
        if fd > 0 || !fo.opennext {
            return fd;
        }
        if self.fdrotor == 0 {
            self.fdrotor = MAXFD;
        }
        self.fdrotor -= 1;
        self.fdrotor
    }

    fn pick_index(&mut self, fo: &Flowop, set: usize) -> Option<usize> {
        let n = self.sh.arena.entries(set).len().max(1);
        fo.indexed
            .as_ref()
            .map(|p| (p.sample(&mut self.rng).max(0.0) as usize) % n)
    }

    /// Filebench's flowoplib_openfile_common (and createfile): pick a file (existing, or
    /// absent for create) in rotation, open it on descriptor `slot`, and leave it not busy
    /// with its open count raised. Ok(false): no file in the wanted state.
    fn open_on(
        &mut self,
        io: &mut Issuer,
        fo: &Flowop,
        slot: usize,
        create: bool,
    ) -> Result<bool, FlowopError> {
        let Some(set) = fo.fileset else {
            return Err(FlowopError::State(format!(
                "fd {slot} is not open (an openfile or createfile with fd={slot} must come first, or give filesetname=)"
            )));
        };
        if self.fds[slot].is_some() {
            return Err(FlowopError::State(format!(
                "fd {slot} is already open: close it (closefile fd={slot}) before opening another file on it"
            )));
        }
        let arena = self.sh.arena;
        let spec = &self.sh.model.filesets[set];
        let mut flags = if spec.readonly {
            libc::O_RDONLY
        } else if spec.writeonly {
            libc::O_WRONLY
        } else {
            libc::O_RDWR
        };
        if fo.directio {
            flags |= libc::O_DIRECT;
        }
        if fo.dsync {
            flags |= libc::O_SYNC;
        }
        flags |= libc::O_CLOEXEC;
        let mut create = create;
        let index = self.pick_index(fo, set);
        let picked = if spec.is_file && !create {
            // A single file: a writer creates it when it is not there yet.
            let exists = arena.entries(set)[0].load(Acquire) & super::shared::ENTRY_EXISTS != 0;
            if !exists && (fo.kind.is_write() || fo.kind == Kind::OpenFile) && !spec.readonly {
                create = true;
            }
            let want = if create { Want::Absent } else { Want::Exists };
            pick(arena, set, want, From::Index(0))
        } else if create {
            let from = match index {
                Some(i) => From::Index(i),
                None => From::Shared(Rotor::Absent),
            };
            pick(arena, set, Want::Absent, from)
        } else {
            let from = match index {
                Some(i) => From::Index(i),
                None if fo.opennext => From::Private(&mut self.own_rotor[set]),
                None => From::Shared(Rotor::Exists),
            };
            pick(arena, set, Want::Exists, from)
        };
        let i = match picked {
            Picked::Got(i) => i,
            Picked::NoRsc => return Ok(false),
        };
        if create {
            flags |= libc::O_CREAT | libc::O_TRUNC;
        }
        let path = self.sh.layouts[set].path(i);
        let file = self.entry_file(set, i);
        let t = clock(io);
        let r = io.open_at(AT_FDCWD, &path, flags, 0o644);
        rec(io, TraceOp::Open, file, 0, 0, t, outcome(&r));
        let fd = match r {
            Ok(fd) => fd,
            Err(e) => {
                unbusy(arena, set, i, None, 0);
                return Err(call(format!("open {path:?}"), e));
            }
        };
        if fo.noreadahead {
            // A hint: a file system without it still runs the flowop.
            let _ = io.advise(fd, libc::POSIX_FADV_RANDOM);
        }
        if let Err(e) = io.set_file(slot as u32, fd) {
            let t = clock(io);
            let c = io.close_fd(fd);
            rec(io, TraceOp::Close, file, 0, 0, t, status(&c));
            unbusy(arena, set, i, None, 0);
            return Err(call(format!("open {path:?}"), e));
        }
        let incarnation = if io.verifying() {
            if create {
                super::verify::created(arena, set, i);
            }
            super::verify::incarnation(arena, set, i)
        } else {
            0
        };
        unbusy(arena, set, i, create.then_some(true), 1);
        self.fds[slot] = Some(OpenFd {
            incarnation,
            fd,
            set,
            entry: i,
            direct: flags & libc::O_DIRECT != 0,
            aio_off: 0,
            pos: 0,
            end: if create {
                0
            } else {
                self.sh.layouts[set].size(i)
            },
        });
        self.fse[slot] = Some((set, i));
        Ok(true)
    }

    /// Filebench's flowoplib_filesetup: the descriptor an I/O flowop uses, opening a file of
    /// its fileset there first when it is not open (that open is counted as one more op of
    /// the flowop, with no bytes, as Filebench does). Returns the slot and the working-set
    /// size: `workingset`, else the file's planned size.
    fn filesetup(
        &mut self,
        io: &mut Issuer,
        fo: &Flowop,
        t0: u64,
    ) -> Result<Option<(usize, u64)>, FlowopError> {
        let slot = self.fdnum(fo);
        if self.fds[slot].is_none() {
            if !self.open_on(io, fo, slot, false)? {
                return Ok(None);
            }
            let lat = now_ns().saturating_sub(t0);
            self.count(fo, lat, None, 0);
        }
        let f = self.fds[slot].as_ref().expect("opened above");
        let wss = if fo.wss > 0 {
            fo.wss
        } else {
            self.sh.layouts[f.set].size(f.entry)
        };
        Ok(Some((slot, wss)))
    }

    fn exec(&mut self, io: &mut Issuer, fo: &Flowop, t0: u64) -> StepResult {
        use Kind::*;
        match fo.kind {
            Read | Write | AppendFile | AppendFileRand | AioWrite => self.rw(io, fo, t0),
            ReadWholeFile => self.read_whole(io, fo, t0),
            WriteWholeFile => self.write_whole(io, fo, t0),
            OpenFile | CreateFile => self.open_file(io, fo),
            CloseFile => self.close_file(io, fo),
            DeleteFile => self.delete(io, fo),
            StatFile => self.stat_file(io, fo),
            MakeDir | RemoveDir => self.make_remove_dir(io, fo),
            ListDir => self.listdir(io, fo),
            Fsync => self.fsync(io, fo),
            FsyncSet => self.fsync_set(io, fo),
            AioWait => self.aio_wait(io),
            SemBlock | Block => self.sem_wait(fo),
            Wakeup | SemPost => self.sem_post(fo),
            Hog => self.hog(io, fo),
            Delay => self.delay(fo),
            EventLimit => {
                if !self.eventgen_on() {
                    return Ok(Step::Quiet);
                }
                self.events(1)
            }
            BwLimit | IopsLimit | OpsLimit => self.limit(fo),
            FinishOnCount | FinishOnBytes => self.finish_on(fo),
            Composite => self.composite(io, fo),
        }
    }
}

/// Flowops that count in the IO Summary (as in Filebench: the file-system operations).
pub fn is_io(k: Kind) -> bool {
    use Kind::*;
    !matches!(
        k,
        Block
            | Wakeup
            | SemBlock
            | SemPost
            | Hog
            | Delay
            | EventLimit
            | BwLimit
            | IopsLimit
            | OpsLimit
            | FinishOnCount
            | FinishOnBytes
            | Composite
    )
}

pub fn kind_name(k: Kind) -> &'static str {
    if k == Kind::Composite {
        return "composite";
    }
    super::model::FLOWOP_NAMES
        .iter()
        .find(|(_, kk)| *kk == k)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}
