//! The issuing handle: how a source that issues its calls one step at a time (a Filebench
//! flowop, a replayed call, a backup record) reaches its engine. Only the runner and the
//! engines touch an engine; such a source touches an [`Issuer`], which the runner builds for
//! it and lends to it for each step (see `runner/source.rs`).
//!
//! The handle holds the engine (and, for queued writes beside a synchronous engine, a second
//! ring the runner builds on first use), the system-call counts, the preallocated completion
//! lists and the trace ring; it counts the data calls and bytes of the current step, which is
//! what a rate limit charges. With `--verify` it holds the run's verify hooks
//! (`StreamCheck`): `Issuer::write_verified` stamps a write's buffer before the call and
//! `Issuer::read_verified` checks what a read returned, against what the source knows its
//! file holds (`Contents`). Nothing here allocates after it is built.

use super::verify::{Contents, StreamCheck};
use crate::engine::{self, BufferPool, Built, Completion, Engine, FileHandles, IoOp};
use crate::stats::SyscallCounts;
use crate::trace::TraceRing;
use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

/// A source's way to its engine, built by the runner before the start gate.
pub struct Issuer {
    engine: Built,
    /// A ring for queued writes when `engine` completes inline (built on first use).
    queue: Option<Built>,
    /// The queue ring could not be built: queued writes are written synchronously.
    queue_refused: bool,
    sys: SyscallCounts,
    /// Completions of the last reap (capacity for a full queue plus one).
    done: Vec<Completion>,
    /// Queued completions that arrived while a synchronous call waited for its own.
    queued_done: Vec<Completion>,
    /// Data calls and bytes since the current step began.
    step_calls: u64,
    step_bytes: u64,
    /// The per-call trace ring when the run is traced (allocated before the gate).
    trace: Option<TraceRing>,
    /// File slots of the engine (the queue ring gets as many).
    file_slots: usize,
    /// `--verify`: the hooks around verifying calls, and what the reads found.
    verify: Option<StreamCheck>,
}

/// Buffer slot of a synchronous call; queued writes use slot [`Issuer::QUEUE_SLOT`] on a ring
/// of the source's own, slot 0 on the runner's queue ring.
pub(crate) const CALL_SLOT: u32 = 0;

impl Issuer {
    /// Queued writes on a source's own ring use this buffer slot.
    pub(crate) const QUEUE_SLOT: u32 = 1;
    /// Most queued writes in flight (and the completion lists' room).
    pub const QUEUE_DEPTH: u32 = 256;

    /// A handle on `engine` (built over `file_slots` file slots), traced into `trace`.
    pub fn new(engine: Built, file_slots: usize, trace: Option<TraceRing>) -> Issuer {
        let room = Self::QUEUE_DEPTH as usize * 2 + 1;
        Issuer {
            engine,
            queue: None,
            queue_refused: false,
            sys: SyscallCounts::default(),
            done: Vec::with_capacity(room),
            queued_done: Vec::with_capacity(room),
            step_calls: 0,
            step_bytes: 0,
            trace,
            file_slots,
            verify: None,
        }
    }

    /// Verify this source's data calls with the bytes of the run keyed by `seed`.
    pub(crate) fn verify_with(&mut self, seed: u64) {
        self.verify = Some(StreamCheck::new(seed));
    }

    /// Whether the run verifies (then data calls go through the verifying calls).
    #[inline]
    pub(crate) fn verifying(&self) -> bool {
        self.verify.is_some()
    }

    /// What the verifying calls found, given back after the run (None: no `--verify`).
    pub(crate) fn take_verify(&mut self) -> Option<StreamCheck> {
        self.verify.take()
    }

    /// A write ([`Issuer::call`]) of `file` whose bytes are what `contents` says belongs
    /// where it lands (`at`; None: an append, at the end of what the file holds): the buffer
    /// is stamped first, and the source told what the write left. Also where it landed.
    /// Without `--verify`, just the call (landing at `at`, or 0 for an append).
    pub(crate) fn write_verified<C: Contents>(
        &mut self,
        op: IoOp,
        contents: &C,
        file: C::File,
        at: Option<u64>,
    ) -> (io::Result<u64>, u64) {
        let Some(check) = self.verify.as_ref() else {
            return (self.call(op), at.unwrap_or(0));
        };
        let (landed, gen, ticket) = contents.write_begins(file, at, op.len as u64);
        let buf = &mut self.engine.as_dyn().buffers().slot_mut(op.slot as usize)[..op.len as usize];
        check.stamp(buf, gen, landed);
        let r = self.call(op);
        contents.write_ends(file, ticket, r.as_ref().ok().copied());
        (r, landed)
    }

    /// A read ([`Issuer::call`]) of `file` at file offset `at`, its bytes checked against
    /// what `contents` says the file holds there (a read of content not known is counted as
    /// skipped). `path` names the file in a mismatch. Without `--verify`, just the call.
    pub(crate) fn read_verified<C: Contents>(
        &mut self,
        op: IoOp,
        contents: &C,
        file: C::File,
        at: u64,
        path: &dyn Fn() -> String,
    ) -> io::Result<u64> {
        if self.verify.is_none() {
            return self.call(op);
        }
        let expected = contents.read_begins(file, at, op.len as u64);
        let r = self.call(op);
        let Ok(n) = r else { return r };
        let Issuer { engine, verify, .. } = self;
        let check = verify.as_mut().expect("verifying");
        match expected {
            Err(why) => check.skipped(why),
            Ok(e) if !contents.read_unchanged(file, &e) => {
                check.skipped(super::verify::NoCheck::Busy)
            }
            Ok(e) => {
                let got = &engine.as_dyn().buffers().slot(op.slot as usize)[..n as usize];
                check.check(&e, at, op.len as u64, got, path);
            }
        }
        r
    }

    /// A synchronous engine over `files` empty file slots (a source sets its descriptors
    /// with `Issuer::set_file`) with `slots` buffers of `len` bytes.
    pub fn sync_engine(files: usize, slots: usize, len: usize, seed: u64) -> io::Result<Built> {
        let pool = BufferPool::new(slots, len, seed)?;
        Ok(Built::Sync(engine::sync::SyncEngine::new(
            engine::empty_files(files),
            pool,
        )))
    }

    /// An io_uring engine over `files` empty file slots, room for [`Issuer::QUEUE_DEPTH`]
    /// queued writes, `slots` buffers of `len` bytes.
    pub(crate) fn uring_engine(
        files: usize,
        slots: usize,
        len: usize,
        seed: u64,
    ) -> anyhow::Result<Built> {
        let pool = BufferPool::new(slots, len, seed)?;
        Ok(Built::Uring(engine::uring::UringEngine::for_source(
            Self::QUEUE_DEPTH,
            engine::empty_files(files),
            pool,
        )?))
    }

    /// An engine of `kind` (io_uring for `Uring`, else synchronous) over `files` as the
    /// source opened them (a descriptor per route: a replay's O_DIRECT and O_DSYNC ones
    /// beside the buffered one, which [`Issuer::set_file`] cannot carry), issuing one call at
    /// a time with one buffer of `len` bytes.
    pub(crate) fn engine_over(
        kind: crate::job::EngineKind,
        files: Vec<FileHandles>,
        len: usize,
        seed: u64,
    ) -> anyhow::Result<Built> {
        let pool = BufferPool::new(1, len, seed)
            .map_err(|e| anyhow::anyhow!("allocating buffers: {e}"))?;
        Ok(match kind {
            crate::job::EngineKind::Uring => {
                Built::Uring(engine::uring::UringEngine::for_source(1, files, pool)?)
            }
            _ => Built::Sync(engine::sync::SyncEngine::new(files, pool)),
        })
    }

    #[inline]
    fn engine(&mut self) -> &mut dyn Engine {
        self.engine.as_dyn()
    }

    /// One data call, waited for: bytes moved, or the errno. Queued writes that complete
    /// meanwhile are kept for [`Issuer::take_queued`].
    pub(crate) fn call(&mut self, op: IoOp) -> io::Result<u64> {
        self.step_calls += 1;
        let eng = self.engine.as_dyn();
        eng.submit(std::slice::from_ref(&op), &mut self.sys)?;
        loop {
            self.done.clear();
            eng.reap(1, &mut self.done, &mut self.sys)?;
            let mut mine = None;
            for c in &self.done {
                if c.slot == op.slot {
                    mine = Some(c.result);
                } else if self.queued_done.len() < self.queued_done.capacity() {
                    self.queued_done.push(*c);
                }
            }
            if let Some(r) = mine {
                if r < 0 {
                    return Err(io::Error::from_raw_os_error(-r as i32));
                }
                self.step_bytes += r as u64;
                return Ok(r as u64);
            }
            if self.done.is_empty() {
                return Err(io::Error::other("the engine completed nothing"));
            }
        }
    }

    /// The buffers of synchronous calls.
    pub(crate) fn buffers(&mut self) -> &mut BufferPool {
        self.engine().buffers()
    }

    /// Whether writes can be queued (an io_uring engine, the source's or the runner's queue
    /// ring, which is built here on first use with one buffer of `len` bytes); the buffer
    /// slot they use. None: io_uring is unavailable, queue nothing.
    pub(crate) fn queue_slot(&mut self, len: usize, seed: u64) -> Option<u32> {
        if matches!(self.engine, Built::Uring(_)) {
            return Some(Self::QUEUE_SLOT);
        }
        if self.queue.is_none() && !self.queue_refused {
            match Self::uring_engine(self.file_slots, 1, len, seed) {
                Ok(e) => self.queue = Some(e),
                Err(_) => self.queue_refused = true,
            }
        }
        self.queue.as_ref().map(|_| 0)
    }

    fn queue_engine(&mut self) -> &mut dyn Engine {
        match self.queue.as_mut() {
            Some(q) => q.as_dyn(),
            None => self.engine.as_dyn(),
        }
    }

    /// Queue a write (see [`Issuer::queue_slot`]) on descriptor `fd` as file slot
    /// `op.file`: whether the ring took it.
    pub(crate) fn queue_write(&mut self, op: IoOp, fd: RawFd) -> io::Result<bool> {
        self.step_calls += 1;
        let mut sys = SyscallCounts::default();
        let eng = self.queue_engine();
        eng.set_file(op.file, fd)?;
        let r = eng.submit(std::slice::from_ref(&op), &mut sys);
        self.sys += &sys;
        let taken = r? == 1;
        if taken {
            self.step_bytes += op.len as u64;
        }
        Ok(taken)
    }

    /// Wait for at least one queued write to complete; its completions (and any kept by
    /// [`Issuer::call`]) are then in [`Issuer::take_queued`].
    pub(crate) fn reap_queued(&mut self) -> io::Result<()> {
        if !self.queued_done.is_empty() {
            return Ok(());
        }
        self.done.clear();
        let mut done = std::mem::take(&mut self.done);
        let r = {
            let mut sys = SyscallCounts::default();
            let r = self.queue_engine().reap(1, &mut done, &mut sys);
            self.sys += &sys;
            r
        };
        self.queued_done.extend_from_slice(&done);
        done.clear();
        self.done = done;
        r.map(|_| ())
    }

    /// Hand the queued completions collected so far to `each`, then forget them.
    pub(crate) fn take_queued(&mut self, mut each: impl FnMut(&Completion)) {
        for c in &self.queued_done {
            each(c);
        }
        self.queued_done.clear();
    }

    /// Data calls and bytes since the last call of this (what the runner charges a rate
    /// limit after a step).
    pub(crate) fn take_step(&mut self) -> (u64, u64) {
        let s = (self.step_calls, self.step_bytes);
        self.step_calls = 0;
        self.step_bytes = 0;
        s
    }

    /// The system calls made so far.
    pub(crate) fn sys(&self) -> &SyscallCounts {
        &self.sys
    }

    /// Forget the counts (the warm-up is over).
    pub(crate) fn forget_counts(&mut self) {
        self.sys = SyscallCounts::default();
    }

    /// The trace ring, when the run is traced.
    pub(crate) fn trace(&mut self) -> Option<&mut TraceRing> {
        self.trace.as_mut()
    }

    /// Whether the run is traced (a source reads the clock for its records only then).
    pub(crate) fn traced(&self) -> bool {
        self.trace.is_some()
    }

    /// The trace ring, given back after the run.
    pub(crate) fn take_trace(&mut self) -> Option<TraceRing> {
        self.trace.take()
    }

    // The metadata calls, each through the engine and counted.

    pub(crate) fn open_at(
        &mut self,
        dir: RawFd,
        path: &CStr,
        flags: i32,
        mode: u32,
    ) -> io::Result<RawFd> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().open_at(dir, path, flags, mode, sys)
    }

    pub(crate) fn close_fd(&mut self, fd: RawFd) -> io::Result<()> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().close_fd(fd, sys)
    }

    pub(crate) fn unlink_at(&mut self, dir: RawFd, path: &CStr, rmdir: bool) -> io::Result<()> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().unlink_at(dir, path, rmdir, sys)
    }

    pub(crate) fn mkdir_at(&mut self, dir: RawFd, path: &CStr, mode: u32) -> io::Result<()> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().mkdir_at(dir, path, mode, sys)
    }

    pub(crate) fn rename_at(
        &mut self,
        old_dir: RawFd,
        old: &CStr,
        new_dir: RawFd,
        new: &CStr,
    ) -> io::Result<()> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().rename_at(old_dir, old, new_dir, new, sys)
    }

    pub(crate) fn stat_fd(&mut self, fd: RawFd, out: &mut libc::statx) -> io::Result<()> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().stat_fd(fd, out, sys)
    }

    pub(crate) fn stat_at(
        &mut self,
        dir: RawFd,
        path: &CStr,
        flags: i32,
        out: &mut libc::statx,
    ) -> io::Result<()> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().stat_at(dir, path, flags, out, sys)
    }

    pub(crate) fn advise(&mut self, fd: RawFd, advice: i32) -> io::Result<()> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().advise(fd, advice, sys)
    }

    pub(crate) fn read_dir(&mut self, fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().read_dir(fd, buf, sys)
    }

    pub(crate) fn sync_fd(&mut self, fd: RawFd, data_only: bool) -> io::Result<()> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().sync_fd(fd, data_only, sys)
    }

    pub(crate) fn set_status_flags(&mut self, fd: RawFd, set: i32, clear: i32) -> io::Result<()> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().set_status_flags(fd, set, clear, sys)
    }

    pub(crate) fn seek_fd(&mut self, fd: RawFd, offset: i64, whence: i32) -> io::Result<u64> {
        let Issuer { engine, sys, .. } = self;
        engine.as_dyn().seek_fd(fd, offset, whence, sys)
    }

    /// Let ops naming file slot `index` use `fd`.
    pub(crate) fn set_file(&mut self, index: u32, fd: RawFd) -> io::Result<()> {
        self.engine().set_file(index, fd)
    }

    /// Forget file slot `index` (before its descriptor is closed).
    pub(crate) fn clear_file(&mut self, index: u32) {
        self.engine().clear_file(index);
        if let Some(q) = self.queue.as_mut() {
            q.as_dyn().clear_file(index);
        }
    }
}
