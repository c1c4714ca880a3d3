//! The synchronous engine: pread/pwrite, completing inline.

use super::{BufferPool, Caps, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::stats::SyscallCounts;

pub struct SyncEngine {
    files: Vec<FileHandles>,
    pool: BufferPool,
    /// Completions of the last submit, handed out by the next reap. Capacity is reserved up
    /// front; submit takes one op at a time from the worker so this never grows.
    pending: Vec<Completion>,
}

impl SyncEngine {
    pub fn new(files: Vec<FileHandles>, pool: BufferPool) -> Self {
        let cap = pool.slots().max(1);
        SyncEngine {
            files,
            pool,
            pending: Vec::with_capacity(cap),
        }
    }
}

impl Engine for SyncEngine {
    fn caps(&self) -> Caps {
        Caps {
            max_depth: 1,
            asynchronous: false,
        }
    }

    #[inline]
    fn submit(&mut self, ops: &[IoOp], sys: &mut SyscallCounts) -> std::io::Result<usize> {
        for op in ops {
            let fd = self.files[op.file as usize].fd(op.route);
            let buf = self.pool.slot_ptr(op.slot as usize);
            // SAFETY: buf points at a live slot of at least op.len bytes (the worker never
            // asks for more than the slot size); fd is open for the engine's life.
            let rc = unsafe {
                match op.kind {
                    OpKind::Read => {
                        sys.read += 1;
                        libc::pread(
                            fd,
                            buf as *mut libc::c_void,
                            op.len as usize,
                            op.offset as i64,
                        )
                    }
                    OpKind::Write => {
                        sys.write += 1;
                        libc::pwrite(
                            fd,
                            buf as *const libc::c_void,
                            op.len as usize,
                            op.offset as i64,
                        )
                    }
                }
            };
            let result = if rc < 0 {
                -(std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO) as i64)
            } else {
                rc as i64
            };
            if self.pending.len() < self.pending.capacity() {
                self.pending.push(Completion {
                    slot: op.slot,
                    result,
                });
            }
        }
        Ok(ops.len())
    }

    #[inline]
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
