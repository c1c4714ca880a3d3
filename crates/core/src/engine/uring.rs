//! The io_uring engine: up to `queue_depth` I/Os in flight per thread.
//!
//! `submit` writes submission entries into the shared ring. Page-cache I/O waits there for the
//! next `reap`, which passes the batch to the kernel and waits in the same `io_uring_enter`.
//! Device (direct) I/O is passed on one entry per call as it is queued, the last one riding
//! along with the wait when other I/Os are in flight (see `submit` for the measurements that
//! chose this).
//!
//! Buffers are the worker's `BufferPool` slots, registered as fixed buffers (slot i is buffer
//! index i), and the target descriptors are registered as fixed files, whenever the kernel
//! allows; otherwise the engine uses plain READ/WRITE with the descriptor and says so in the
//! run's notes (see `preflight`).
//!
//! `--sqpoll` makes a kernel thread poll the submission queue; `--hipri` sets up the ring
//! with IORING_SETUP_IOPOLL so completions are polled instead of interrupt-driven. Both are
//! probed at run time and refused with a message naming the reason when unavailable.

use super::{BufferPool, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::job::Job;
use crate::stats::SyscallCounts;
use io_uring::{cqueue, opcode, squeue, types, IoUring, Probe};
use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// io_uring_enter flag: process and post completions (include/uapi/linux/io_uring.h).
const IORING_ENTER_GETEVENTS: u32 = 1;

/// Submission entries handed to the kernel per io_uring_enter for device (direct) I/O: each
/// goes as soon as it is queued, as fio does with its default iodepth_batch_submit=1.
const DIRECT_SUBMIT_CHUNK: u32 = 1;

/// How long the SQ polling thread spins without work before it sleeps (ms).
const SQPOLL_IDLE_MS: u32 = 2000;

/// The ring features a worker asked for and what the kernel granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RingSetup {
    pub sqpoll: bool,
    pub iopoll: bool,
    /// IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN (6.1+): completions are processed only when
    /// this thread enters the kernel, which saves interrupts of the worker.
    pub defer_taskrun: bool,
    /// IORING_SETUP_COOP_TASKRUN (5.19+).
    pub coop_taskrun: bool,
}

/// Build a ring of at least `entries` entries. Optional speed-ups that the kernel rejects are
/// dropped; requested features (`sqpoll`, `iopoll`) are not.
pub(crate) fn build_ring(
    entries: u32,
    sqpoll: bool,
    iopoll: bool,
) -> io::Result<(IoUring, RingSetup)> {
    // Attempts from most to least capable; DEFER_TASKRUN cannot be combined with SQPOLL.
    let tiers: &[(bool, bool)] = if sqpoll {
        &[(false, false)]
    } else {
        &[(true, false), (false, true), (false, false)]
    };
    let mut last = None;
    for &(defer, coop) in tiers {
        let mut b = IoUring::builder();
        if sqpoll {
            b.setup_sqpoll(SQPOLL_IDLE_MS);
        }
        if iopoll {
            b.setup_iopoll();
        }
        if defer {
            b.setup_single_issuer().setup_defer_taskrun();
        }
        if coop {
            b.setup_coop_taskrun();
        }
        // Completions never exceed the queue depth, so the default CQ (2x SQ) cannot overflow.
        match b.build(entries.max(1)) {
            Ok(ring) => {
                return Ok((
                    ring,
                    RingSetup {
                        sqpoll,
                        iopoll,
                        defer_taskrun: defer,
                        coop_taskrun: coop,
                    },
                ))
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no ring setup tried")))
}

pub struct UringEngine {
    ring: IoUring,
    files: Vec<FileHandles>,
    pool: BufferPool,
    /// Registered-file index for each (file, route), or -1 to pass the descriptor itself.
    fixed_file: Vec<[i32; 3]>,
    fixed_buffers: bool,
    setup: RingSetup,
    depth: u32,
    /// Entries written to the submission queue but not yet handed to the kernel.
    unsubmitted: u32,
    /// Whether the kernel accepts a timeout argument to io_uring_enter (5.11+).
    ext_arg: bool,
    /// I/Os submitted and not yet reaped (waited for on drop: the kernel must be done with
    /// the buffers before they are freed).
    inflight: u32,
    /// Which metadata operations go through the ring (bit = `Meta as u8`): the kernel's
    /// opcodes per its probe, none on polled (IOPOLL) or SQ-polled rings.
    ring_meta: u8,
    /// Data completions that arrived while a metadata operation waited on the ring, handed
    /// out by the next reap (capacity: the queue depth, so never grown).
    stash: Vec<Completion>,
}

/// The metadata operations the ring can carry.
#[derive(Clone, Copy)]
enum Meta {
    Open = 0,
    Close,
    Unlink,
    Mkdir,
    Statx,
    Fsync,
    Fallocate,
}

/// user_data of a metadata operation's entry (data I/Os carry their slot, < 2^32).
const META_TAG: u64 = u64::MAX;
/// User data of a trim: this bit, the length in bits 32-60 (at most 256 MiB), the slot below.
const TRIM_TAG: u64 = 1 << 61;

/// Whether this kernel lets a process set up an io_uring: Err is the one-line reason (the
/// same words `--engine uring` uses for a Job).
pub fn available() -> Result<(), crate::error::UsageError> {
    build_ring(1, false, false)
        .map(drop)
        .map_err(|e| crate::usage!("{}", setup_error(e, false, false)))
}

/// The metadata opcodes this kernel supports, as a `Meta` bit set.
/// Whether the kernel's io_uring has operation `code` (false when it cannot say).
fn supports(ring: &IoUring, code: u8) -> bool {
    let mut probe = Probe::new();
    ring.submitter().register_probe(&mut probe).is_ok() && probe.is_supported(code)
}

fn probe_meta(ring: &IoUring, setup: RingSetup) -> u8 {
    if setup.iopoll || setup.sqpoll {
        return 0;
    }
    let mut probe = Probe::new();
    if ring.submitter().register_probe(&mut probe).is_err() {
        return 0;
    }
    let codes = [
        (Meta::Open, opcode::OpenAt::CODE),
        (Meta::Close, opcode::Close::CODE),
        (Meta::Unlink, opcode::UnlinkAt::CODE),
        (Meta::Mkdir, opcode::MkDirAt::CODE),
        (Meta::Statx, opcode::Statx::CODE),
        (Meta::Fsync, opcode::Fsync::CODE),
        (Meta::Fallocate, opcode::Fallocate::CODE),
    ];
    codes
        .iter()
        .filter(|(_, c)| probe.is_supported(*c))
        .fold(0, |m, (k, _)| m | 1 << *k as u8)
}

impl UringEngine {
    pub(crate) fn new(
        job: &Job,
        files: Vec<FileHandles>,
        pool: BufferPool,
    ) -> anyhow::Result<Self> {
        // Sized by the I/Os that can be in flight (never more than a thread issues).
        let depth = job.effective_depth();
        let (ring, setup) = build_ring(depth, job.sqpoll, job.hipri)
            .map_err(|e| anyhow::anyhow!("{}", setup_error(e, job.sqpoll, job.hipri)))?;
        let ext_arg = ring.params().is_feature_ext_arg();
        let fixed_buffers = register_buffers(&ring, &pool).is_ok();
        let (fixed_file, registered) = register_files(&ring, &files);
        if job.sqpoll && !registered && !ring.params().is_feature_sqpoll_nonfixed() {
            anyhow::bail!(
                "--sqpoll: this kernel needs registered files for SQ polling and registering them failed"
            );
        }
        if job.access.trims() && !supports(&ring, opcode::Fallocate::CODE) {
            anyhow::bail!(
                "--rw {}: this kernel's io_uring has no FALLOCATE operation to trim with; use --engine sync",
                job.access.name()
            );
        }
        let ring_meta = probe_meta(&ring, setup);
        Ok(UringEngine {
            ring,
            files,
            pool,
            fixed_file,
            fixed_buffers,
            setup,
            depth,
            unsubmitted: 0,
            ext_arg,
            inflight: 0,
            ring_meta,
            stash: Vec::with_capacity(depth as usize),
        })
    }

    /// An engine for a source that opens its files itself (a workload thread): `files` are
    /// slots filled with [`Engine::set_file`], passed to the kernel as plain descriptors (a
    /// registered-file table would have to be updated on every open and close).
    pub(crate) fn for_source(
        depth: u32,
        files: Vec<FileHandles>,
        pool: BufferPool,
    ) -> anyhow::Result<Self> {
        let (ring, setup) = build_ring(depth, false, false)
            .map_err(|e| anyhow::anyhow!("{}", setup_error(e, false, false)))?;
        let ext_arg = ring.params().is_feature_ext_arg();
        let fixed_buffers = register_buffers(&ring, &pool).is_ok();
        let ring_meta = probe_meta(&ring, setup);
        Ok(UringEngine {
            ring,
            fixed_file: vec![[-1; 3]; files.len()],
            files,
            pool,
            fixed_buffers,
            setup,
            depth,
            unsubmitted: 0,
            ext_arg,
            inflight: 0,
            ring_meta,
            stash: Vec::with_capacity(depth as usize),
        })
    }

    /// Whether metadata operation `m` goes through the ring.
    #[inline]
    fn on_ring(&self, m: Meta) -> bool {
        self.ring_meta & (1 << m as u8) != 0
    }

    /// Pass one metadata entry through the ring and wait for its completion; data
    /// completions that arrive meanwhile wait in `stash` for the next reap.
    fn ring_op(&mut self, e: squeue::Entry, sys: &mut SyscallCounts) -> io::Result<i32> {
        let e = e.user_data(META_TAG);
        // SAFETY: the entry's pointers (path, statx buffer) are borrowed by the caller for
        // this whole call, and the call does not return before the entry's completion.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            // Submission queue full of data entries: hand them to the kernel first.
            self.enter(0, sys)?;
        }
        self.unsubmitted += 1;
        loop {
            self.enter(1, sys)?;
            let mut res = None;
            for cqe in self.ring.completion() {
                if cqe.user_data() == META_TAG {
                    res = Some(cqe.result());
                } else {
                    self.stash.push(completion_of(&cqe));
                }
            }
            if let Some(r) = res {
                return if r < 0 {
                    Err(io::Error::from_raw_os_error(-r))
                } else {
                    Ok(r)
                };
            }
        }
    }

    /// The submission entry for one op (a free function of the fields it reads, so the
    /// submission queue can stay borrowed across a batch).
    #[inline]
    fn entry(
        fixed_file: &[[i32; 3]],
        files: &[FileHandles],
        pool: &BufferPool,
        fixed_buffers: bool,
        op: &IoOp,
    ) -> squeue::Entry {
        let fixed = fixed_file[op.file as usize][op.route as usize];
        let buf = pool.slot_ptr(op.slot as usize);
        // Offset -1 is the descriptor's offset (IORING_FEAT_RW_CUR_POS) for cursor and append
        // ops; RWF_APPEND/RWF_DSYNC go in rw_flags as for pwritev2.
        let (offset, rwf) = if op.flagged() {
            let (o, r) = op.positional();
            (o as u64, r)
        } else {
            (op.offset, 0)
        };
        // The file argument is either a registered index or a descriptor; the opcode
        // builders take either, so one macro spells the four read/write forms once.
        macro_rules! rw_entry {
            ($target:expr) => {
                match (op.kind, fixed_buffers) {
                    (OpKind::Read, true) => {
                        opcode::ReadFixed::new($target, buf, op.len, op.slot as u16)
                            .offset(offset)
                            .rw_flags(rwf)
                            .build()
                    }
                    (OpKind::Read, false) => opcode::Read::new($target, buf, op.len)
                        .offset(offset)
                        .rw_flags(rwf)
                        .build(),
                    (OpKind::Write, true) => {
                        opcode::WriteFixed::new($target, buf, op.len, op.slot as u16)
                            .offset(offset)
                            .rw_flags(rwf)
                            .build()
                    }
                    (OpKind::Write, false) => opcode::Write::new($target, buf, op.len)
                        .offset(offset)
                        .rw_flags(rwf)
                        .build(),
                    // Completes with 0; `completion_of` turns that into the bytes trimmed,
                    // which ride in the user data beside the slot.
                    (OpKind::Trim, _) => {
                        return opcode::Fallocate::new($target, op.len as u64)
                            .offset(offset)
                            .mode(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)
                            .build()
                            .user_data(TRIM_TAG | (op.len as u64) << 32 | op.slot as u64)
                    }
                }
            };
        }
        let e = if fixed >= 0 {
            rw_entry!(types::Fixed(fixed as u32))
        } else {
            rw_entry!(types::Fd(files[op.file as usize].fd(op.route)))
        };
        e.user_data(op.slot as u64)
    }

    /// Move every available completion into `done`.
    #[inline]
    fn drain(&mut self, done: &mut Vec<Completion>) -> usize {
        let mut n = 0;
        if !self.stash.is_empty() {
            for &c in &self.stash {
                done.push(c);
                n += 1;
            }
            self.stash.clear();
        }
        for cqe in self.ring.completion() {
            done.push(completion_of(&cqe));
            n += 1;
        }
        self.inflight = self.inflight.saturating_sub(n as u32);
        n
    }

    /// One io_uring_enter: pass queued entries and wait for `want` completions. An
    /// interrupted or busy wait returns normally; the caller's loop tries again.
    fn enter(&mut self, want: usize, sys: &mut SyscallCounts) -> io::Result<()> {
        // With SQ polling and nothing to wait for, the crate may skip the system call.
        if !(self.setup.sqpoll && want == 0) {
            sys.io_uring_enter += 1;
        }
        let r = if want == 0 && self.setup.defer_taskrun {
            // With deferred task run, completions are only posted by an enter that asks for
            // events; the crate leaves GETEVENTS out when nothing is awaited, so ask here.
            // SAFETY: a plain io_uring_enter on this engine's own ring, no argument struct.
            unsafe {
                self.ring.submitter().enter::<libc::sigset_t>(
                    self.unsubmitted,
                    0,
                    IORING_ENTER_GETEVENTS,
                    None,
                )
            }
        } else {
            self.ring.submit_and_wait(want)
        };
        self.unsubmitted = 0;
        match r {
            Ok(_) => Ok(()),
            Err(e) if is_transient(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ETIME)
    )
}

#[inline]
fn completion_of(cqe: &cqueue::Entry) -> Completion {
    let data = cqe.user_data();
    let result = cqe.result() as i64;
    Completion {
        slot: data as u32,
        // A trim succeeded: it discarded all it was asked to (fallocate returns 0).
        result: if data & TRIM_TAG != 0 && result == 0 {
            ((data & !TRIM_TAG) >> 32) as i64
        } else {
            result
        },
    }
}

/// Register each buffer slot as one fixed buffer (index = slot).
fn register_buffers(ring: &IoUring, pool: &BufferPool) -> io::Result<()> {
    if pool.slots() > u16::MAX as usize {
        return Err(io::Error::other("more buffers than fixed-buffer indexes"));
    }
    let iov: Vec<libc::iovec> = (0..pool.slots())
        .map(|i| libc::iovec {
            iov_base: pool.slot_ptr(i) as *mut libc::c_void,
            iov_len: pool.slot_size(),
        })
        .collect();
    // SAFETY: every iovec names a live slot of the pool; the pool is owned by the engine
    // together with the ring and is dropped after it (field order), so the kernel never
    // sees a freed buffer.
    unsafe { ring.submitter().register_buffers(&iov) }
}

/// Register the distinct open descriptors; returns the index table and whether any were.
fn register_files(ring: &IoUring, files: &[FileHandles]) -> (Vec<[i32; 3]>, bool) {
    let mut table = vec![[-1i32; 3]; files.len()];
    let mut fds: Vec<RawFd> = Vec::new();
    for (f, h) in files.iter().enumerate() {
        for (r, &fd) in h.fds.iter().enumerate() {
            if fd < 0 {
                continue;
            }
            let idx = match fds.iter().position(|&x| x == fd) {
                Some(i) => i,
                None => {
                    fds.push(fd);
                    fds.len() - 1
                }
            };
            table[f][r] = idx as i32;
        }
    }
    if fds.is_empty() || ring.submitter().register_files(&fds).is_err() {
        return (vec![[-1i32; 3]; files.len()], false);
    }
    (table, true)
}

fn setup_error(e: io::Error, sqpoll: bool, hipri: bool) -> String {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .map(|s| s.trim().to_string());
    match e.raw_os_error() {
        Some(libc::ENOSYS) => {
            "io_uring is not available: this kernel has no io_uring (needs Linux 5.1+, built with CONFIG_IO_URING); use --engine sync".into()
        }
        Some(libc::EPERM) | Some(libc::EACCES) => format!(
            "io_uring is not available: {e}{}; use --engine sync",
            match disabled.as_deref() {
                Some("1") | Some("2") => format!(
                    " (disabled by sysctl kernel.io_uring_disabled = {})",
                    disabled.as_deref().unwrap_or("")
                ),
                _ => " (blocked by a seccomp or container policy, or --sqpoll needs privileges on this kernel)".into(),
            }
        ),
        Some(libc::EINVAL) if sqpoll || hipri => format!(
            "io_uring rejected {}: {e} (not supported by this kernel); run without it",
            if sqpoll { "--sqpoll" } else { "--hipri" }
        ),
        _ => format!("io_uring setup failed: {e}"),
    }
}

impl Engine for UringEngine {
    #[inline]
    fn submit(&mut self, ops: &[IoOp], sys: &mut SyscallCounts) -> io::Result<usize> {
        let mut n = 0;
        let mut direct = false;
        {
            let mut sq = self.ring.submission();
            for op in ops {
                let e = Self::entry(
                    &self.fixed_file,
                    &self.files,
                    &self.pool,
                    self.fixed_buffers,
                    op,
                );
                // SAFETY: the entry points at a buffer slot and a descriptor that live as
                // long as the engine, and the worker does not reuse a slot before its
                // completion is reaped (one op per slot in flight).
                if unsafe { sq.push(&e) }.is_err() {
                    break;
                }
                n += 1;
                direct |= op.route != crate::job::Route::Buffered;
            }
        }
        self.unsubmitted += n as u32;
        self.inflight += n as u32;
        // Device I/O goes to the kernel one entry per io_uring_enter, with GETEVENTS so that
        // the completions that arrived meanwhile are posted and the next `reap` finds them
        // without blocking. With more than one I/O in flight the last entry rides along with
        // the wait in `reap` (one system call fewer); at depth 1 it goes alone and the wait is
        // a call of its own: blocking in the call that submitted was 4-9 % slower at QD 1 on
        // the 2-core VM, and groups of 4 without GETEVENTS 2-3 % slower at QD 8 and 32 (see
        // docs/uring.md, "Submission"). Page-cache hits complete during submission, so
        // buffered I/O goes in one call.
        if direct && !self.setup.sqpoll {
            let keep = u32::from(self.depth > 1);
            while self.unsubmitted > keep {
                sys.io_uring_enter += 1;
                // SAFETY: a plain io_uring_enter on this engine's ring, no argument struct;
                // it consumes at most DIRECT_SUBMIT_CHUNK entries already in the queue.
                let r = unsafe {
                    self.ring.submitter().enter::<libc::sigset_t>(
                        DIRECT_SUBMIT_CHUNK,
                        0,
                        IORING_ENTER_GETEVENTS,
                        None,
                    )
                };
                match r {
                    Ok(0) => break,
                    Ok(k) => self.unsubmitted -= (k as u32).min(self.unsubmitted),
                    Err(e) if is_transient(&e) => break,
                    Err(e) => return Err(e),
                }
            }
        }
        // Under SQ polling the kernel thread picks entries up as soon as they are visible;
        // wake it now if it slept, instead of at the next reap.
        if self.setup.sqpoll && n > 0 && self.ring.submission().need_wakeup() {
            self.enter(0, sys)?;
        }
        Ok(n)
    }

    #[inline]
    fn reap(
        &mut self,
        min: usize,
        done: &mut Vec<Completion>,
        sys: &mut SyscallCounts,
    ) -> io::Result<usize> {
        let mut got = self.drain(done);
        if got >= min && self.unsubmitted == 0 && !(min > 0 && self.setup.iopoll) {
            // Deferred task work and polled completions only appear after an enter; a
            // non-blocking reap that found nothing still asks the kernel once.
            if got > 0 || min > 0 || !(self.setup.defer_taskrun || self.setup.iopoll) {
                return Ok(got);
            }
        }
        let want = min.saturating_sub(got);
        self.enter(want, sys)?;
        got += self.drain(done);
        Ok(got)
    }

    fn reap_timeout(
        &mut self,
        timeout: Duration,
        done: &mut Vec<Completion>,
        sys: &mut SyscallCounts,
    ) -> io::Result<usize> {
        let got = self.drain(done);
        if got > 0 && self.unsubmitted == 0 {
            return Ok(got);
        }
        if !self.ext_arg {
            // Pre-5.11 kernels cannot bound the wait: poll in short naps instead.
            std::thread::sleep(timeout.min(Duration::from_micros(100)));
            return Ok(got + self.reap(0, done, sys)?);
        }
        let ts = types::Timespec::from(timeout);
        let args = types::SubmitArgs::new().timespec(&ts);
        let want = if got > 0 { 0 } else { 1 };
        sys.io_uring_enter += 1;
        let r = self.ring.submitter().submit_with_args(want, &args);
        self.unsubmitted = 0;
        match r {
            Ok(_) => {}
            Err(e) if is_transient(&e) => {}
            Err(e) => return Err(e),
        }
        Ok(got + self.drain(done))
    }

    fn buffers(&mut self) -> &mut BufferPool {
        &mut self.pool
    }

    fn flush(&mut self, sys: &mut SyscallCounts) -> io::Result<()> {
        super::fsync_all(&self.files, sys)
    }

    fn sync_files(&mut self, data_only: bool, sys: &mut SyscallCounts) -> std::io::Result<()> {
        super::sync_all(&self.files, data_only, sys)
    }

    fn open_at(
        &mut self,
        dir: RawFd,
        path: &CStr,
        flags: i32,
        mode: u32,
        sys: &mut SyscallCounts,
    ) -> io::Result<RawFd> {
        if !self.on_ring(Meta::Open) {
            sys.open += 1;
            return super::meta::openat(dir, path, flags, mode);
        }
        sys.open += 1;
        let e = opcode::OpenAt::new(types::Fd(dir), path.as_ptr())
            .flags(flags)
            .mode(mode as libc::mode_t)
            .build();
        self.ring_op(e, sys)
    }

    fn close_fd(&mut self, fd: RawFd, sys: &mut SyscallCounts) -> io::Result<()> {
        sys.close += 1;
        if !self.on_ring(Meta::Close) {
            return super::meta::close(fd);
        }
        self.ring_op(opcode::Close::new(types::Fd(fd)).build(), sys)
            .map(drop)
    }

    fn unlink_at(
        &mut self,
        dir: RawFd,
        path: &CStr,
        rmdir: bool,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        super::count_unlink(rmdir, sys);
        if !self.on_ring(Meta::Unlink) {
            return super::meta::unlinkat(dir, path, rmdir);
        }
        let flags = if rmdir { libc::AT_REMOVEDIR } else { 0 };
        let e = opcode::UnlinkAt::new(types::Fd(dir), path.as_ptr())
            .flags(flags)
            .build();
        self.ring_op(e, sys).map(drop)
    }

    fn mkdir_at(
        &mut self,
        dir: RawFd,
        path: &CStr,
        mode: u32,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        sys.mkdir += 1;
        if !self.on_ring(Meta::Mkdir) {
            return super::meta::mkdirat(dir, path, mode);
        }
        let e = opcode::MkDirAt::new(types::Fd(dir), path.as_ptr())
            .mode(mode as libc::mode_t)
            .build();
        self.ring_op(e, sys).map(drop)
    }

    fn stat_fd(
        &mut self,
        fd: RawFd,
        out: &mut libc::statx,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        sys.stat += 1;
        if !self.on_ring(Meta::Statx) {
            return super::meta::fstatx(fd, out);
        }
        let e = opcode::Statx::new(
            types::Fd(fd),
            c"".as_ptr(),
            out as *mut libc::statx as *mut types::statx,
        )
        .flags(libc::AT_EMPTY_PATH)
        .mask(libc::STATX_BASIC_STATS)
        .build();
        self.ring_op(e, sys).map(drop)
    }

    fn stat_at(
        &mut self,
        dir: RawFd,
        path: &CStr,
        flags: i32,
        out: &mut libc::statx,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        sys.stat += 1;
        if !self.on_ring(Meta::Statx) {
            return super::meta::statx_at(dir, path, flags, out);
        }
        let e = opcode::Statx::new(
            types::Fd(dir),
            path.as_ptr(),
            out as *mut libc::statx as *mut types::statx,
        )
        .flags(flags)
        .mask(libc::STATX_BASIC_STATS)
        .build();
        self.ring_op(e, sys).map(drop)
    }

    fn sync_fd(&mut self, fd: RawFd, data_only: bool, sys: &mut SyscallCounts) -> io::Result<()> {
        super::count_sync(data_only, sys);
        if !self.on_ring(Meta::Fsync) {
            return super::meta::sync(fd, data_only);
        }
        let flags = if data_only {
            types::FsyncFlags::DATASYNC
        } else {
            types::FsyncFlags::empty()
        };
        let e = opcode::Fsync::new(types::Fd(fd)).flags(flags).build();
        self.ring_op(e, sys).map(drop)
    }

    fn allocate(
        &mut self,
        fd: RawFd,
        mode: i32,
        offset: u64,
        len: u64,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        sys.fallocate += 1;
        if !self.on_ring(Meta::Fallocate) {
            return super::meta::fallocate(fd, mode, offset, len);
        }
        let e = opcode::Fallocate::new(types::Fd(fd), len)
            .offset(offset)
            .mode(mode)
            .build();
        self.ring_op(e, sys).map(drop)
    }

    fn set_file(&mut self, index: u32, fd: RawFd) -> io::Result<()> {
        super::set_slot(&mut self.files, index, fd)?;
        // A descriptor set after the build is passed as itself, not as a registered index.
        self.fixed_file[index as usize] = [-1; 3];
        Ok(())
    }

    fn clear_file(&mut self, index: u32) {
        if super::set_slot(&mut self.files, index, -1).is_ok() {
            self.fixed_file[index as usize] = [-1; 3];
        }
    }
}

impl Drop for UringEngine {
    /// A worker that stops on an error may leave I/Os in flight: wait for them (bounded)
    /// so the kernel never writes into a freed buffer.
    fn drop(&mut self) {
        let mut sys = SyscallCounts::default();
        let mut sink = Vec::with_capacity(self.depth as usize * 2);
        for _ in 0..10_000 {
            if self.inflight == 0 {
                break;
            }
            if self
                .reap_timeout(Duration::from_millis(10), &mut sink, &mut sys)
                .is_err()
            {
                break;
            }
            sink.clear();
        }
    }
}

mod preflight;
pub(crate) use preflight::{preflight, RingCheck, RingTarget};

#[cfg(test)]
mod tests;
