//! A scripted engine for the runner's unit tests, in the spirit of hyperfine's mock executor:
//! it completes ops without any real I/O, after a scripted latency, with scripted errors and
//! short results, so stop conditions, pacing, barriers, status and partial results are tested
//! without files. It implements the same `Engine` contract as the real engines and is driven
//! by the real worker loop (`Worker::with_engine`).
//!
//! Op `k` below is the k-th op submitted to this engine (0-based), and `call` the k-th call
//! of `submit`.
//!
//! With a [`Service`] the ops take seeded, noisy times on a virtual clock the worker loop
//! reads ([`crate::stats::clock::Clock::virtual_at`]): the engine advances it to each
//! completion, so a run's measured figures are exactly the service times it was given, and
//! the statistics of `--repeat` and `ab` are tested on runs whose truth is known.

use super::{BufferPool, Completion, Engine, IoOp, OpKind};
use crate::stats::bootstrap::Rng;
use crate::stats::SyscallCounts;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Ops that take seeded, noisy times on a virtual clock.
#[derive(Debug, Clone, Copy)]
pub struct Service {
    /// The clock the worker loop reads (`Clock::virtual_at`); the engine moves it.
    pub clock: &'static AtomicU64,
    /// Median time of one op, in nanoseconds.
    pub median_ns: f64,
    /// Each op takes `median_ns` times a log-normal factor of this spread (sigma of its log).
    pub jitter: f64,
    /// Seed of the ops' factors.
    pub seed: u64,
}

/// A log-normal factor of spread `sigma` (median 1), from two draws of `rng` (Box-Muller).
pub fn log_normal(rng: &mut Rng, sigma: f64) -> f64 {
    let unit = |r: &mut Rng| (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let (u1, u2) = (unit(rng), unit(rng));
    let normal = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    (sigma * normal).exp()
}

/// What one scripted op returns instead of its full length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    /// Fails with this errno.
    Errno(i32),
    /// Transfers this many bytes (0 is end of file; fewer than asked is a short transfer).
    Bytes(i64),
}

/// What the engine's store does wrong with one write (verification tests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Acknowledge the write, store nothing.
    Drop,
    /// Store the block at this other offset instead.
    Misdirect(u64),
    /// Store only this many leading bytes.
    Tear(usize),
    /// Store it with this bit (of the block) flipped.
    FlipBit(usize),
}

/// Blocks stored by offset: what a mock "disk" holds. Shared by the engines of a test.
pub(crate) type Store = Arc<Mutex<std::collections::HashMap<u64, Vec<u8>>>>;

/// What the engine does.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// Ops in flight the engine allows (its `caps().max_depth`); 0 means 1.
    pub depth: u32,
    /// Time from submission to completion of every op.
    pub latency: Duration,
    /// Ops whose result differs from their full length.
    pub outcomes: Vec<(u64, Outcome)>,
    /// `submit` call that fails as a whole (nothing of it is accepted).
    pub submit_error_at: Option<u64>,
    /// `reap` call that fails.
    pub reap_error_at: Option<u64>,
    /// At most this many ops are accepted per `submit` call (the rest are handed back).
    pub accept_at_most: Option<usize>,
    /// `flush` fails with this errno.
    pub flush_errno: Option<i32>,
    /// Raise this flag right after op `k` is submitted (a Ctrl-C or a stop at a known point).
    pub raise_after: Option<(u64, Arc<AtomicBool>)>,
    /// Keep a log of every submitted op (off for overhead measurements).
    pub log: bool,
    /// Keep written data here and read it back (None: data goes nowhere, reads keep the
    /// buffer as it is).
    pub store: Option<Store>,
    /// Faults applied to stored writes, by op number `k`.
    pub faults: Vec<(u64, Fault)>,
    /// Service times on a virtual clock instead of `latency` on the real one.
    pub service: Option<Service>,
}

/// What the engine saw. Kept by the engine while it runs (no lock per op) and handed to the
/// test's handle when the engine is dropped, i.e. when the worker has finished.
#[derive(Debug, Default)]
pub struct Log {
    /// Every submitted op with its submission time, in order.
    pub ops: Vec<(IoOp, Instant)>,
    pub submit_calls: u64,
    pub reap_calls: u64,
    pub flushes: u64,
    /// At each flush: (ops submitted before it, ops still in flight).
    pub flushed_at: Vec<(u64, usize)>,
}

pub struct MockEngine {
    script: Script,
    pool: BufferPool,
    /// Accepted, not yet reaped: (due, in ns of [`MockEngine::now_ns`], completion).
    flight: Vec<(u64, Completion)>,
    next_op: u64,
    created: Instant,
    /// Draws the ops' service times (with a `Service`).
    rng: Rng,
    log: Log,
    shared: Arc<Mutex<Log>>,
}

impl Drop for MockEngine {
    fn drop(&mut self) {
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        *shared = std::mem::take(&mut self.log);
    }
}

impl MockEngine {
    /// The engine and a handle on its log.
    pub fn new(script: Script, block_size: usize) -> (MockEngine, Arc<Mutex<Log>>) {
        let depth = script.depth.max(1) as usize;
        let shared = Arc::new(Mutex::new(Log::default()));
        let rng = Rng::new(script.service.map_or(0, |s| s.seed));
        let e = MockEngine {
            script,
            pool: BufferPool::new(depth, block_size, 1).expect("mock buffers"),
            flight: Vec::with_capacity(depth),
            next_op: 0,
            created: Instant::now(),
            rng,
            log: Log::default(),
            shared: shared.clone(),
        };
        (e, shared)
    }

    fn outcome(&self, k: u64, op: &IoOp) -> i64 {
        match self.script.outcomes.iter().find(|(i, _)| *i == k) {
            Some((_, Outcome::Errno(e))) => -(*e as i64),
            Some((_, Outcome::Bytes(n))) => *n,
            None => op.len as i64,
        }
    }

    /// Now: the virtual clock's reading with a `Service`, else real time since creation.
    fn now_ns(&self) -> u64 {
        match &self.script.service {
            Some(s) => s.clock.load(Ordering::Relaxed),
            None => self.created.elapsed().as_nanos() as u64,
        }
    }

    /// How long the next op takes.
    fn service_ns(&mut self) -> u64 {
        match self.script.service {
            Some(s) => (s.median_ns * log_normal(&mut self.rng, s.jitter)).round() as u64,
            None => self.script.latency.as_nanos() as u64,
        }
    }

    /// Let time pass until `until_ns`: sleep, or move the virtual clock there.
    fn wait_until(&self, until_ns: u64) {
        match &self.script.service {
            Some(s) => {
                s.clock.fetch_max(until_ns, Ordering::Relaxed);
            }
            None => {
                std::thread::sleep(Duration::from_nanos(until_ns.saturating_sub(self.now_ns())))
            }
        }
    }

    /// Move the completions that are due by `now` into `done`.
    fn collect(&mut self, now: u64, done: &mut Vec<Completion>) -> usize {
        let before = done.len();
        self.flight.retain(|(due, c)| {
            if *due <= now {
                done.push(*c);
                false
            } else {
                true
            }
        });
        done.len() - before
    }

    /// Move the op's data to or from the store (at submission: what a later op sees).
    fn store_io(&mut self, k: u64, op: &IoOp) {
        let Some(store) = self.script.store.clone() else {
            return;
        };
        let mut disk = store.lock().unwrap_or_else(|p| p.into_inner());
        let offset = op.offset & !IoOp::FLAGS;
        let len = op.len as usize;
        match op.kind {
            super::OpKind::Write => {
                let mut data = self.pool.slot(op.slot as usize)[..len].to_vec();
                let mut at = offset;
                match self
                    .script
                    .faults
                    .iter()
                    .find(|(i, _)| *i == k)
                    .map(|f| f.1)
                {
                    Some(Fault::Drop) => return,
                    Some(Fault::Misdirect(to)) => at = to,
                    Some(Fault::Tear(n)) => {
                        let old = disk.get(&offset).cloned().unwrap_or(vec![0; len]);
                        data[n..].copy_from_slice(&old[n..]);
                    }
                    Some(Fault::FlipBit(b)) => data[b / 8] ^= 1 << (b % 8),
                    None => {}
                }
                disk.insert(at, data);
            }
            super::OpKind::Read => {
                let buf = &mut self.pool.slot_mut(op.slot as usize)[..len];
                match disk.get(&offset) {
                    Some(d) => buf.copy_from_slice(d),
                    None => buf.fill(0),
                }
            }
            super::OpKind::Trim => {
                disk.remove(&offset);
            }
        }
    }

    /// Whether ops take time (a latency or service times) or are logged with theirs.
    fn timed(&self) -> bool {
        self.script.log || !self.script.latency.is_zero() || self.script.service.is_some()
    }

    fn earliest(&self) -> Option<u64> {
        self.flight.iter().map(|(due, _)| *due).min()
    }
}

impl Engine for MockEngine {
    fn submit(&mut self, ops: &[IoOp], sys: &mut SyscallCounts) -> std::io::Result<usize> {
        let call = self.log.submit_calls;
        self.log.submit_calls += 1;
        if self.script.submit_error_at == Some(call) {
            return Err(std::io::Error::from_raw_os_error(libc::EAGAIN));
        }
        let room = self.script.depth.max(1) as usize - self.flight.len();
        let n = ops
            .len()
            .min(room)
            .min(self.script.accept_at_most.unwrap_or(usize::MAX));
        // Without a latency or a log the engine reads no clock, so the loop's own cost per I/O
        // can be measured with it (worker tests, `null_engine_overhead`).
        let timed = self.timed();
        let now = if timed { self.now_ns() } else { 0 };
        for op in &ops[..n] {
            let k = self.next_op;
            self.next_op += 1;
            let result = self.outcome(k, op);
            if result > 0 && self.script.store.is_some() {
                self.store_io(k, op);
            }
            sys.other += 1;
            let due = now + self.service_ns();
            self.flight.push((
                due,
                Completion {
                    slot: op.slot,
                    result,
                },
            ));
            if self.script.log {
                self.log
                    .ops
                    .push((*op, self.created + Duration::from_nanos(now)));
            }
            if let Some((at, flag)) = &self.script.raise_after {
                if *at == k {
                    flag.store(true, Ordering::SeqCst);
                }
            }
        }
        Ok(n)
    }

    fn reap(
        &mut self,
        min: usize,
        done: &mut Vec<Completion>,
        _sys: &mut SyscallCounts,
    ) -> std::io::Result<usize> {
        let call = self.log.reap_calls;
        self.log.reap_calls += 1;
        if self.script.reap_error_at == Some(call) {
            return Err(std::io::Error::from_raw_os_error(libc::EIO));
        }
        let want = min.min(self.flight.len());
        if !self.timed() {
            let n = self.flight.len();
            done.extend(self.flight.drain(..).map(|(_, c)| c));
            return Ok(n);
        }
        let mut got = self.collect(self.now_ns(), done);
        while got < want {
            if let Some(due) = self.earliest() {
                self.wait_until(due);
            }
            got += self.collect(self.now_ns(), done);
        }
        Ok(got)
    }

    fn reap_timeout(
        &mut self,
        timeout: Duration,
        done: &mut Vec<Completion>,
        _sys: &mut SyscallCounts,
    ) -> std::io::Result<usize> {
        let until = self.now_ns() + timeout.as_nanos() as u64;
        let wake = self.earliest().map_or(until, |due| due.min(until));
        self.wait_until(wake);
        Ok(self.collect(self.now_ns(), done))
    }

    fn buffers(&mut self) -> &mut BufferPool {
        &mut self.pool
    }

    fn flush(&mut self, sys: &mut SyscallCounts) -> std::io::Result<()> {
        self.log.flushes += 1;
        self.log.flushed_at.push((self.next_op, self.flight.len()));
        sys.fsync += 1;
        match self.script.flush_errno {
            Some(e) => Err(std::io::Error::from_raw_os_error(e)),
            None => Ok(()),
        }
    }
    /// A source's descriptor for file slot `index` (a flowop's open file): taken, and never
    /// used, since the mock moves no data through files.
    fn set_file(&mut self, _index: u32, _fd: RawFd) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a counting engine saw: ops submitted by kind, opens and closes, and whether every
/// buffer handed to the kernel was page-aligned.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Seen {
    pub reads: u64,
    pub writes: u64,
    pub opens: u64,
    pub closes: u64,
    pub fsyncs: u64,
    pub misaligned: u64,
}

/// The synchronous engine with a count of everything submitted to it, handed to the
/// test when the phase drops it.
pub(crate) struct Counting {
    inner: super::sync::SyncEngine,
    seen: Seen,
    out: std::sync::Arc<Mutex<Vec<Seen>>>,
}

impl Counting {
    /// The synchronous engine over `files` empty file slots and `pool`, counting into `out`
    /// (one `Seen` pushed when it is dropped).
    pub(crate) fn sync(
        files: usize,
        pool: BufferPool,
        out: std::sync::Arc<Mutex<Vec<Seen>>>,
    ) -> Counting {
        Counting {
            inner: super::sync::SyncEngine::new(super::empty_files(files), pool),
            seen: Seen::default(),
            out,
        }
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        self.out.lock().unwrap().push(self.seen);
    }
}

impl Engine for Counting {
    fn submit(
        &mut self,
        ops: &[IoOp],
        sys: &mut crate::stats::SyscallCounts,
    ) -> std::io::Result<usize> {
        for op in ops {
            match op.kind {
                OpKind::Read => self.seen.reads += 1,
                OpKind::Write => self.seen.writes += 1,
                OpKind::Trim => {}
            }
            let p = self.inner.buffers().slot_ptr(op.slot as usize) as usize;
            if !p.is_multiple_of(4096) {
                self.seen.misaligned += 1;
            }
        }
        self.inner.submit(ops, sys)
    }
    fn reap(
        &mut self,
        min: usize,
        done: &mut Vec<Completion>,
        sys: &mut crate::stats::SyscallCounts,
    ) -> std::io::Result<usize> {
        self.inner.reap(min, done, sys)
    }
    fn buffers(&mut self) -> &mut BufferPool {
        self.inner.buffers()
    }
    fn flush(&mut self, sys: &mut crate::stats::SyscallCounts) -> std::io::Result<()> {
        self.inner.flush(sys)
    }
    fn sync_files(
        &mut self,
        data_only: bool,
        sys: &mut crate::stats::SyscallCounts,
    ) -> std::io::Result<()> {
        self.inner.sync_files(data_only, sys)
    }
    fn open_at(
        &mut self,
        dir: RawFd,
        path: &std::ffi::CStr,
        flags: i32,
        mode: u32,
        sys: &mut crate::stats::SyscallCounts,
    ) -> std::io::Result<RawFd> {
        self.seen.opens += 1;
        self.inner.open_at(dir, path, flags, mode, sys)
    }
    fn close_fd(
        &mut self,
        fd: RawFd,
        sys: &mut crate::stats::SyscallCounts,
    ) -> std::io::Result<()> {
        self.seen.closes += 1;
        self.inner.close_fd(fd, sys)
    }
    fn sync_fd(
        &mut self,
        fd: RawFd,
        data_only: bool,
        sys: &mut crate::stats::SyscallCounts,
    ) -> std::io::Result<()> {
        self.seen.fsyncs += 1;
        self.inner.sync_fd(fd, data_only, sys)
    }
    fn set_file(&mut self, index: u32, fd: RawFd) -> std::io::Result<()> {
        self.inner.set_file(index, fd)
    }
    fn clear_file(&mut self, index: u32) {
        self.inner.clear_file(index)
    }
}
