//! The mmap engine (vxbench mmap_read / mmap_write): each file is mapped shared once; a read
//! copies from the mapping into the I/O buffer, a write copies the buffer into the mapping.
//! Page faults are part of the measured latency, as they are for an application using mmap.

use super::{BufferPool, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::job::Route;
use crate::stats::SyscallCounts;

struct Mapping {
    /// The mapping's start and length, read from `map` once so the copy loop touches only
    /// these two words.
    ptr: *mut u8,
    len: usize,
    /// Lets the SIGBUS handler name this mapping's file and offset. Declared before `map`:
    /// fields drop in order, so the handler stops matching the range before it is unmapped.
    _sigbus: super::sigbus::RegionGuard,
    /// The shared mapping (memmap2); dropping it unmaps.
    map: memmap2::MmapRaw,
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
    pub(crate) fn new(files: Vec<FileHandles>, pool: BufferPool) -> anyhow::Result<Self> {
        let mut maps = Vec::with_capacity(files.len());
        for f in &files {
            let len = f.size as usize;
            if len == 0 {
                anyhow::bail!("cannot mmap an empty file");
            }
            // Shared, read and write, `len` bytes from offset 0 (the file's prepared size).
            let fd = f.fd(Route::Buffered);
            let map = memmap2::MmapOptions::new()
                .len(len)
                .map_raw(fd)
                .map_err(|e| anyhow::anyhow!("mmap of {len} bytes failed: {e}"))?;
            let ptr = map.as_mut_ptr();
            // The file's name for the SIGBUS line, through the descriptor (before the run);
            // thread-self: a worker thread has a descriptor table of its own.
            let name = std::fs::read_link(format!("/proc/thread-self/fd/{fd}"))
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| format!("descriptor {fd}"));
            let guard = super::sigbus::register(ptr, len, &name);
            maps.push(Mapping {
                ptr,
                len,
                _sigbus: guard,
                map,
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
    #[inline]
    fn submit(&mut self, ops: &[IoOp], sys: &mut SyscallCounts) -> std::io::Result<usize> {
        for op in ops {
            let m = &self.maps[op.file as usize];
            let off = op.offset as usize;
            let len = (op.len as usize).min(m.len.saturating_sub(off));
            let buf = self.pool.slot_ptr(op.slot as usize);
            // SAFETY: off + len <= mapping length (clamped above); buf has >= len bytes; the
            // mapping and the buffer never overlap.
            let result = unsafe {
                match op.kind {
                    OpKind::Read => {
                        std::ptr::copy_nonoverlapping(m.ptr.add(off), buf, len);
                        len as i64
                    }
                    OpKind::Write => {
                        std::ptr::copy_nonoverlapping(buf, m.ptr.add(off), len);
                        len as i64
                    }
                    // The mapping stays; the pages behind it go (a later read sees zeros).
                    OpKind::Trim => {
                        sys.fallocate += 1;
                        let fd = self.files[op.file as usize].fds[0];
                        super::meta::trim(fd, false, op.offset, len as u32)
                    }
                }
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
            // msync(MS_SYNC) over the whole mapping.
            m.map.flush()?;
        }
        super::fsync_all(&self.files, sys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// Mappings of `path` this process holds, from /proc/self/maps.
    fn mapped(path: &std::path::Path) -> usize {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let p = path.display().to_string();
        maps.lines().filter(|l| l.ends_with(&p)).count()
    }

    /// A write lands in the file through the shared mapping, a read sees the file's bytes,
    /// and dropping the engine unmaps the file.
    #[test]
    fn writes_reach_the_file_and_drop_unmaps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.dat");
        std::fs::write(&path, vec![b'a'; 8192]).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let fd = f.as_raw_fd();
        let files = vec![FileHandles {
            fds: [fd, fd, fd],
            size: 8192,
        }];
        let pool = BufferPool::new(1, 4096, 1).unwrap();
        let mut e = MmapEngine::new(files, pool).unwrap();
        assert_eq!(mapped(&path), 1);
        let op = |kind| IoOp {
            kind,
            file: 0,
            route: Route::Buffered,
            offset: 4096,
            len: 4096,
            slot: 0,
        };
        let mut sys = SyscallCounts::default();
        let mut done = Vec::with_capacity(1);
        e.submit(&[op(OpKind::Read)], &mut sys).unwrap();
        e.reap(1, &mut done, &mut sys).unwrap();
        assert_eq!(done[0].result, 4096);
        assert!(e.buffers().slot(0).iter().all(|&b| b == b'a'));
        e.buffers().slot_mut(0).fill(b'z');
        e.submit(&[op(OpKind::Write)], &mut sys).unwrap();
        e.flush(&mut sys).unwrap();
        assert_eq!(sys.msync, 1);
        let data = std::fs::read(&path).unwrap();
        assert!(data[..4096].iter().all(|&b| b == b'a'));
        assert!(data[4096..].iter().all(|&b| b == b'z'));
        drop(e);
        assert_eq!(mapped(&path), 0);
    }
}
