//! The space engines (fio's `falloc` and `ftruncate`): each I/O of the job changes how much
//! space the file has instead of moving bytes, completing inline.
//!
//! `falloc`: a write is fallocate(mode 0) over its range (allocating, extending the file), a
//! read fallocate(FALLOC_FL_KEEP_SIZE) (allocating within or past the end without changing
//! the size), a trim a hole punched (PUNCH_HOLE | KEEP_SIZE). `ftruncate`: a write sets the
//! file's size to its offset (the block size is ignored, as in fio); the Job refuses reads
//! and trims for it. A successful op counts as its length moved, as fio counts its fake I/Os.

use super::{BufferPool, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::stats::SyscallCounts;

/// What each op does to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpaceOp {
    Fallocate,
    Ftruncate,
}

pub struct SpaceEngine {
    files: Vec<FileHandles>,
    /// Held for the contract (the worker fills write buffers); no op reads or writes it.
    pool: BufferPool,
    op: SpaceOp,
    /// Completions of the last submit, handed out by the next reap; capacity reserved up front.
    pending: Vec<Completion>,
}

impl SpaceEngine {
    pub(crate) fn new(files: Vec<FileHandles>, pool: BufferPool, op: SpaceOp) -> Self {
        let cap = pool.slots().max(1);
        SpaceEngine {
            files,
            pool,
            op,
            pending: Vec::with_capacity(cap),
        }
    }

    /// Perform one op now: its length, or a negative errno.
    fn execute(&self, op: &IoOp, sys: &mut SyscallCounts) -> i64 {
        // Ops at the descriptor's cursor or appending come only from workloads and replays,
        // which never build this engine.
        if op.flagged() {
            return -(libc::EINVAL as i64);
        }
        let fd = self.files[op.file as usize].fd(op.route);
        let rc = match (self.op, op.kind) {
            (SpaceOp::Fallocate, kind) => {
                let mode = match kind {
                    OpKind::Write => 0,
                    OpKind::Read => libc::FALLOC_FL_KEEP_SIZE,
                    OpKind::Trim => libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                };
                sys.fallocate += 1;
                super::meta::fallocate(fd, mode, op.offset, u64::from(op.len))
            }
            (SpaceOp::Ftruncate, OpKind::Write) => {
                sys.ftruncate += 1;
                truncate(fd, op.offset)
            }
            // fio fails these with EINVAL too; the Job never issues them.
            (SpaceOp::Ftruncate, OpKind::Read | OpKind::Trim) => {
                return -(libc::EINVAL as i64);
            }
        };
        match rc {
            Ok(()) => i64::from(op.len),
            Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
        }
    }
}

/// ftruncate(2) of a descriptor the engine holds for its life.
fn truncate(fd: i32, size: u64) -> std::io::Result<()> {
    // SAFETY: fd is a descriptor of the run's target, open while the engine exists; the
    // borrow does not outlive this call.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    rustix::fs::ftruncate(fd, size).map_err(std::io::Error::from)
}

impl Engine for SpaceEngine {
    fn submit(&mut self, ops: &[IoOp], sys: &mut SyscallCounts) -> std::io::Result<usize> {
        for op in ops {
            let result = self.execute(op, sys);
            if self.pending.len() < self.pending.capacity() {
                self.pending.push(Completion {
                    slot: op.slot,
                    result,
                });
            }
        }
        Ok(ops.len())
    }

    fn reap(
        &mut self,
        _min: usize,
        done: &mut Vec<Completion>,
        _sys: &mut SyscallCounts,
    ) -> std::io::Result<usize> {
        let n = self.pending.len();
        done.extend_from_slice(&self.pending);
        self.pending.clear();
        Ok(n)
    }

    fn buffers(&mut self) -> &mut BufferPool {
        &mut self.pool
    }

    fn flush(&mut self, sys: &mut SyscallCounts) -> std::io::Result<()> {
        super::fsync_all(&self.files, sys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Route;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;

    fn run(e: &mut SpaceEngine, kind: OpKind, offset: u64, len: u32) -> i64 {
        let mut sys = SyscallCounts::default();
        let op = IoOp {
            kind,
            file: 0,
            route: Route::Buffered,
            offset,
            len,
            slot: 0,
        };
        e.submit(&[op], &mut sys).unwrap();
        let mut done = Vec::with_capacity(1);
        e.reap(1, &mut done, &mut sys).unwrap();
        done[0].result
    }

    fn engine(f: &std::fs::File, op: SpaceOp) -> SpaceEngine {
        let files = vec![FileHandles {
            fds: [f.as_raw_fd(), -1, -1],
            size: 0,
        }];
        SpaceEngine::new(files, BufferPool::new(1, 4096, 1).unwrap(), op)
    }

    #[test]
    fn falloc_allocates_keeps_size_and_punches() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = std::fs::File::create(&path).unwrap();
        let mut e = engine(&f, SpaceOp::Fallocate);
        // A write extends the file; a read allocates past the end without extending it.
        assert_eq!(run(&mut e, OpKind::Write, 65536, 65536), 65536);
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!((m.len(), m.blocks() * 512), (131072, 65536));
        assert_eq!(run(&mut e, OpKind::Read, 131072, 65536), 65536);
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!((m.len(), m.blocks() * 512), (131072, 131072));
        assert_eq!(run(&mut e, OpKind::Trim, 65536, 65536), 65536);
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!((m.len(), m.blocks() * 512), (131072, 65536));
    }

    #[test]
    fn ftruncate_sets_the_size_to_the_offset_and_refuses_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = std::fs::File::create(&path).unwrap();
        let mut e = engine(&f, SpaceOp::Ftruncate);
        assert_eq!(run(&mut e, OpKind::Write, 12288, 4096), 4096);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 12288);
        assert_eq!(run(&mut e, OpKind::Read, 0, 4096), -(libc::EINVAL as i64));
        // A read-only descriptor: the errno comes back negated.
        let ro = std::fs::File::open(&path).unwrap();
        let mut e = engine(&ro, SpaceOp::Ftruncate);
        assert!(run(&mut e, OpKind::Write, 0, 4096) < 0);
    }
}
