//! The null engine (`--engine null`, fio's ioengine=null): every I/O completes at once, whole,
//! with no system call, and nothing is read or written. A run on it measures what fsbench
//! itself costs per I/O: offset generation, routing, two clock readings, the histogram
//! record and the counters, with the same worker loop as the real engines.
//!
//! It holds the worker's buffers like any engine (so buffer setup is the same) but never
//! touches them, and it is given no descriptors: the runner never opens a null run's target.
//! Metadata operations succeed at once too, and nothing is counted as a system call.

use super::{BufferPool, Completion, Engine, IoOp};
use crate::stats::SyscallCounts;
use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

/// What [`Engine::open_at`] hands back: no descriptor a process can hold (above any
/// RLIMIT_NOFILE), so a caller that passed it to the kernel by mistake would get EBADF.
pub(crate) const NULL_FD: RawFd = RawFd::MAX;

pub struct NullEngine {
    pool: BufferPool,
    /// Completions of the ops submitted since the last reap. Reserved for the queue depth
    /// (the worker never has more ops out than buffer slots), so it never grows.
    pending: Vec<Completion>,
}

impl NullEngine {
    pub(crate) fn new(pool: BufferPool) -> Self {
        let cap = pool.slots().max(1);
        NullEngine {
            pool,
            pending: Vec::with_capacity(cap),
        }
    }
}

impl Engine for NullEngine {
    #[inline]
    fn submit(&mut self, ops: &[IoOp], _sys: &mut SyscallCounts) -> io::Result<usize> {
        // Never more than the slots: a caller that outruns its reaps gets a partial submit,
        // as from a full queue, rather than a growing vector.
        let room = self.pending.capacity() - self.pending.len();
        let n = ops.len().min(room);
        for op in &ops[..n] {
            self.pending.push(Completion {
                slot: op.slot,
                result: op.len as i64,
            });
        }
        Ok(n)
    }

    #[inline]
    fn reap(
        &mut self,
        _min: usize,
        done: &mut Vec<Completion>,
        _sys: &mut SyscallCounts,
    ) -> io::Result<usize> {
        let n = self.pending.len();
        done.append(&mut self.pending);
        Ok(n)
    }

    fn buffers(&mut self) -> &mut BufferPool {
        &mut self.pool
    }

    fn flush(&mut self, _sys: &mut SyscallCounts) -> io::Result<()> {
        Ok(())
    }

    fn open_at(
        &mut self,
        _dir: RawFd,
        _path: &CStr,
        _flags: i32,
        _mode: u32,
        _sys: &mut SyscallCounts,
    ) -> io::Result<RawFd> {
        Ok(NULL_FD)
    }
    fn close_fd(&mut self, _fd: RawFd, _sys: &mut SyscallCounts) -> io::Result<()> {
        Ok(())
    }
    fn unlink_at(
        &mut self,
        _dir: RawFd,
        _path: &CStr,
        _rmdir: bool,
        _sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        Ok(())
    }
    fn mkdir_at(
        &mut self,
        _dir: RawFd,
        _path: &CStr,
        _mode: u32,
        _sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        Ok(())
    }
    fn rename_at(
        &mut self,
        _old_dir: RawFd,
        _old: &CStr,
        _new_dir: RawFd,
        _new: &CStr,
        _sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        Ok(())
    }
    fn stat_fd(
        &mut self,
        _fd: RawFd,
        out: &mut libc::statx,
        _sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        // SAFETY: statx is plain integers; all zero is a valid value (an empty file).
        *out = unsafe { std::mem::zeroed() };
        Ok(())
    }
    fn stat_at(
        &mut self,
        _dir: RawFd,
        _path: &CStr,
        _flags: i32,
        out: &mut libc::statx,
        _sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        // SAFETY: as in stat_fd.
        *out = unsafe { std::mem::zeroed() };
        Ok(())
    }
    fn advise(&mut self, _fd: RawFd, _advice: i32, _sys: &mut SyscallCounts) -> io::Result<()> {
        Ok(())
    }
    fn read_dir(
        &mut self,
        _fd: RawFd,
        _buf: &mut [u8],
        _sys: &mut SyscallCounts,
    ) -> io::Result<usize> {
        Ok(0)
    }
    fn sync_fd(
        &mut self,
        _fd: RawFd,
        _data_only: bool,
        _sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        Ok(())
    }
    fn allocate(
        &mut self,
        _fd: RawFd,
        _mode: i32,
        _offset: u64,
        _len: u64,
        _sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        Ok(())
    }
    fn set_status_flags(
        &mut self,
        _fd: RawFd,
        _set: i32,
        _clear: i32,
        _sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        Ok(())
    }
    fn seek_fd(
        &mut self,
        _fd: RawFd,
        offset: i64,
        _whence: i32,
        _sys: &mut SyscallCounts,
    ) -> io::Result<u64> {
        Ok(offset.max(0) as u64)
    }
    fn set_file(&mut self, _index: u32, _fd: RawFd) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::OpKind;
    use crate::job::Route;

    fn op(slot: u32, kind: OpKind) -> IoOp {
        IoOp {
            kind,
            file: 0,
            route: Route::Buffered,
            offset: 4096 * slot as u64,
            len: 4096,
            slot,
        }
    }

    #[test]
    fn completes_whole_at_once_without_counting_syscalls() {
        let mut e = NullEngine::new(BufferPool::new(4, 4096, 1).unwrap());
        let mut sys = SyscallCounts::default();
        let ops = [
            op(0, OpKind::Read),
            op(1, OpKind::Write),
            op(2, OpKind::Read),
        ];
        assert_eq!(e.submit(&ops, &mut sys).unwrap(), 3);
        let mut done = Vec::with_capacity(8);
        assert_eq!(e.reap(1, &mut done, &mut sys).unwrap(), 3);
        assert!(done.iter().all(|c| c.result == 4096));
        assert_eq!(
            done.iter().map(|c| c.slot).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        e.flush(&mut sys).unwrap();
        assert_eq!(sys.total(), 0);
        // More ops than slots: the rest waits, as on a full queue.
        let many: Vec<IoOp> = (0..6).map(|s| op(s % 4, OpKind::Read)).collect();
        assert_eq!(e.submit(&many, &mut sys).unwrap(), 4);
    }
}
