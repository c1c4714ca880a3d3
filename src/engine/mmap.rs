//! The mmap engine (vxbench mmap_read / mmap_write): each file is mapped shared once; a read
//! copies from the mapping into the I/O buffer, a write copies the buffer into the mapping.
//! Page faults are part of the measured latency, as they are for an application using mmap.

use super::{BufferPool, Caps, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::job::Route;
use crate::stats::SyscallCounts;

struct Mapping {
    ptr: *mut u8,
    len: usize,
    /// Lets the SIGBUS handler name this mapping's file and offset; dropped before munmap.
    _sigbus: Option<super::sigbus::RegionGuard>,
}

pub struct MmapEngine {
    maps: Vec<Mapping>,
    files: Vec<FileHandles>,
    pool: BufferPool,
    pending: Vec<Completion>,
}

// SAFETY: the mappings are owned by this engine and used by one thread at a time.
unsafe impl Send for MmapEngine {}

impl MmapEngine {
    pub fn new(files: Vec<FileHandles>, pool: BufferPool) -> anyhow::Result<Self> {
        let mut maps = Vec::with_capacity(files.len());
        for f in &files {
            let len = f.size as usize;
            if len == 0 {
                anyhow::bail!("cannot mmap an empty file");
            }
            // SAFETY: a fresh shared mapping of an open descriptor; checked for MAP_FAILED.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    f.fd(Route::Buffered),
                    0,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(anyhow::anyhow!(
                    "mmap of {len} bytes failed: {}",
                    std::io::Error::last_os_error()
                ));
            }
            // The file's name for the SIGBUS line, through the descriptor (before the run).
            let fd = f.fd(Route::Buffered);
            let name = std::fs::read_link(format!("/proc/self/fd/{fd}"))
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| format!("descriptor {fd}"));
            let guard = super::sigbus::register(ptr as *mut u8, len, &name);
            maps.push(Mapping {
                ptr: ptr as *mut u8,
                len,
                _sigbus: Some(guard),
            });
        }
        let cap = pool.slots().max(1);
        Ok(MmapEngine {
            maps,
            files,
            pool,
            pending: Vec::with_capacity(cap),
        })
    }
}

impl Engine for MmapEngine {
    fn caps(&self) -> Caps {
        Caps {
            max_depth: 1,
            asynchronous: false,
        }
    }

    #[inline]
    fn submit(&mut self, ops: &[IoOp], _sys: &mut SyscallCounts) -> std::io::Result<usize> {
        for op in ops {
            let m = &self.maps[op.file as usize];
            let off = op.offset as usize;
            let len = (op.len as usize).min(m.len.saturating_sub(off));
            let buf = self.pool.slot_ptr(op.slot as usize);
            // SAFETY: off + len <= mapping length (clamped above); buf has >= len bytes; the
            // mapping and the buffer never overlap.
            unsafe {
                match op.kind {
                    OpKind::Read => std::ptr::copy_nonoverlapping(m.ptr.add(off), buf, len),
                    OpKind::Write => std::ptr::copy_nonoverlapping(buf, m.ptr.add(off), len),
                }
            }
            if self.pending.len() < self.pending.capacity() {
                self.pending.push(Completion {
                    slot: op.slot,
                    result: len as i64,
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
        for m in &self.maps {
            sys.msync += 1;
            // SAFETY: msync on our own live mapping.
            if unsafe { libc::msync(m.ptr as *mut libc::c_void, m.len, libc::MS_SYNC) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        super::fsync_all(&self.files, sys)
    }
}

impl Drop for MmapEngine {
    fn drop(&mut self) {
        for m in &mut self.maps {
            // The handler must stop matching this range before it is unmapped.
            m._sigbus = None;
            // SAFETY: unmapping exactly what mmap returned.
            unsafe {
                libc::munmap(m.ptr as *mut libc::c_void, m.len);
            }
        }
    }
}
