//! Engines: how an I/O is issued. One small contract (submit / reap, like fio's ioengine ops)
//! shared by the synchronous engines, which complete inline, and asynchronous ones.
//!
//! Ops name their buffer by slot index and their descriptor by file index and route, so the
//! worker loop never allocates and an async engine can keep buffers registered.

pub mod buffer;
pub mod mmap;
#[cfg(test)]
pub mod mock;
pub mod sigbus;
pub mod sync;
pub mod uring;

use crate::job::{EngineKind, Job, Route};
use crate::stats::SyscallCounts;
pub use buffer::BufferPool;
use std::os::fd::RawFd;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Write,
}

/// One I/O request.
#[derive(Debug, Clone, Copy)]
pub struct IoOp {
    pub kind: OpKind,
    /// Index into the engine's files.
    pub file: u32,
    pub route: Route,
    pub offset: u64,
    pub len: u32,
    /// Buffer slot; also identifies the I/O in its completion.
    pub slot: u32,
}

/// A finished I/O: bytes transferred, or a negative errno.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub slot: u32,
    pub result: i64,
}

/// The descriptors of one target file, one per route (-1 where the route is unused).
#[derive(Debug, Clone)]
pub struct FileHandles {
    pub fds: [RawFd; 3],
    /// Size of the file (the mmap engine maps this much).
    pub size: u64,
}

impl FileHandles {
    #[inline]
    pub fn fd(&self, route: Route) -> RawFd {
        self.fds[route as usize]
    }
}

/// What an engine can do.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub max_depth: u32,
    pub asynchronous: bool,
}

pub trait Engine: Send {
    fn caps(&self) -> Caps;
    /// Submit ops; returns how many were accepted. A synchronous engine performs them inline
    /// and holds their completions for the next `reap`.
    fn submit(&mut self, ops: &[IoOp], sys: &mut SyscallCounts) -> std::io::Result<usize>;
    /// Wait for at least `min` completions and append them to `done` (which has capacity for
    /// the queue depth, so this never allocates).
    fn reap(
        &mut self,
        min: usize,
        done: &mut Vec<Completion>,
        sys: &mut SyscallCounts,
    ) -> std::io::Result<usize>;
    /// Wait up to `timeout` for at least one completion (rate-limited runs wait for the next
    /// scheduled issue time this way without delaying completions). Engines that complete
    /// inline have nothing to wait for: they sleep and return what is pending.
    fn reap_timeout(
        &mut self,
        timeout: std::time::Duration,
        done: &mut Vec<Completion>,
        sys: &mut SyscallCounts,
    ) -> std::io::Result<usize> {
        let n = self.reap(0, done, sys)?;
        if n == 0 {
            std::thread::sleep(timeout);
        }
        Ok(n)
    }
    /// The engine's buffers (to fill before writes or check after reads).
    fn buffers(&mut self) -> &mut BufferPool;
    /// Make written data durable on the files (fsync / msync), counted in `sys`.
    fn flush(&mut self, sys: &mut SyscallCounts) -> std::io::Result<()>;
}

/// An engine as a worker holds it. The shipped engines are held by value, so the worker loop
/// is compiled once for each and their `submit`/`reap` inline into it: no indirect call per
/// I/O. Any other implementation (the test engine) is boxed and runs the same loop.
pub enum Built {
    Sync(sync::SyncEngine),
    Mmap(mmap::MmapEngine),
    Uring(uring::UringEngine),
    Boxed(Box<dyn Engine>),
}

/// Build the engine a Job asks for.
pub fn build(job: &Job, files: Vec<FileHandles>, pool: BufferPool) -> anyhow::Result<Built> {
    Ok(match job.engine {
        EngineKind::Sync => Built::Sync(sync::SyncEngine::new(files, pool)),
        EngineKind::Mmap => Built::Mmap(mmap::MmapEngine::new(files, pool)?),
        EngineKind::Uring => Built::Uring(uring::UringEngine::new(job, files, pool)?),
    })
}

/// fsync every distinct descriptor of the files.
pub fn fsync_all(files: &[FileHandles], sys: &mut SyscallCounts) -> std::io::Result<()> {
    for f in files {
        for (i, &fd) in f.fds.iter().enumerate() {
            if fd < 0 || f.fds[..i].contains(&fd) {
                continue;
            }
            sys.fsync += 1;
            // SAFETY: fd is an open descriptor owned by the worker for the engine's life.
            if unsafe { libc::fsync(fd) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}
