//! The synchronous engine: pread/pwrite, completing inline.
//!
//! On 64-bit Linux the calls go to the kernel through `syscall(2)` rather than glibc's
//! `pread`/`pwrite` wrappers. Those wrappers are thread-cancellation points: in a process with
//! more than one thread (fsbench's workers are threads) each call is bracketed by two atomic
//! updates of the thread's cancellation state, about 25 ns on a 1 us page-cache read
//! (docs/per-io-cost.md). fsbench never cancels a thread, so that work buys nothing; the
//! system call and its result are the same.

use super::{BufferPool, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::stats::SyscallCounts;

pub struct SyncEngine {
    files: Vec<FileHandles>,
    pool: BufferPool,
    /// Completions of the last submit, handed out by the next reap. Capacity is reserved up
    /// front; submit takes one op at a time from the worker so this never grows.
    pending: Vec<Completion>,
    /// Which files are block devices (trimmed by BLKDISCARD), found once when built; files
    /// set later (a workload's) are never trimmed.
    devices: Vec<bool>,
}

impl SyncEngine {
    pub(crate) fn new(files: Vec<FileHandles>, pool: BufferPool) -> Self {
        let cap = pool.slots().max(1);
        let devices = files
            .iter()
            .map(|f| {
                // Any open route names the same file (a device has no buffered route).
                f.fds
                    .iter()
                    .find(|&&fd| fd >= 0)
                    .is_some_and(|&fd| super::meta::is_block_device(fd))
            })
            .collect();
        SyncEngine {
            files,
            pool,
            pending: Vec::with_capacity(cap),
            devices,
        }
    }
}

/// pread(2): bytes read, or -1 with errno set.
///
/// # Safety
/// `buf` must be valid for writes of `len` bytes.
#[inline(always)]
unsafe fn pread(fd: i32, buf: *mut u8, len: usize, offset: u64) -> i64 {
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    {
        // On 64-bit ABIs every argument is one register, so the bare call is exact.
        libc::syscall(
            libc::SYS_pread64,
            fd as libc::c_long,
            buf as libc::c_long,
            len as libc::c_long,
            offset as libc::c_long,
        ) as i64
    }
    #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
    {
        libc::pread(fd, buf as *mut libc::c_void, len, offset as libc::off_t) as i64
    }
}

/// pwrite(2): bytes written, or -1 with errno set.
///
/// # Safety
/// `buf` must be valid for reads of `len` bytes.
#[inline(always)]
unsafe fn pwrite(fd: i32, buf: *const u8, len: usize, offset: u64) -> i64 {
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    {
        libc::syscall(
            libc::SYS_pwrite64,
            fd as libc::c_long,
            buf as libc::c_long,
            len as libc::c_long,
            offset as libc::c_long,
        ) as i64
    }
    #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
    {
        libc::pwrite(fd, buf as *const libc::c_void, len, offset as libc::off_t) as i64
    }
}

/// preadv2/pwritev2 with the op's offset (-1: the descriptor's) and RWF_* flags.
///
/// # Safety
/// `buf` must be valid for `op.len` bytes.
#[cold]
#[inline(never)]
unsafe fn flagged(op: &IoOp, fd: i32, buf: *mut u8, sys: &mut SyscallCounts) -> i64 {
    let (off, rwf) = op.positional();
    let iov = libc::iovec {
        iov_base: buf as *mut libc::c_void,
        iov_len: op.len as usize,
    };
    match op.kind {
        OpKind::Read => {
            sys.read += 1;
            libc::preadv2(fd, &iov, 1, off, rwf) as i64
        }
        OpKind::Write => {
            sys.write += 1;
            libc::pwritev2(fd, &iov, 1, off, rwf) as i64
        }
        // No source flags a trim (only a Job trims, at offsets it chooses).
        OpKind::Trim => -(libc::EINVAL as i64),
    }
}

impl SyncEngine {
    /// Perform one I/O now: bytes transferred, or a negative errno. `submit` is this for each
    /// op; the queue-depth-1 loop (`runner::worker::inline`) calls it directly.
    #[inline(always)]
    pub(crate) fn execute(&mut self, op: &IoOp, sys: &mut SyscallCounts) -> i64 {
        let fd = self.files[op.file as usize].fd(op.route);
        let buf = self.pool.slot_ptr(op.slot as usize);
        // SAFETY: buf points at a live slot of at least op.len bytes (the worker never
        // asks for more than the slot size); fd is open for the engine's life.
        let rc = unsafe {
            if op.flagged() {
                // Workload I/O at the descriptor's offset / appending / data-synchronous:
                // never taken by a Job, so this branch is predicted once and for all.
                flagged(op, fd, buf, sys)
            } else {
                match op.kind {
                    OpKind::Read => {
                        sys.read += 1;
                        pread(fd, buf, op.len as usize, op.offset)
                    }
                    OpKind::Write => {
                        sys.write += 1;
                        pwrite(fd, buf, op.len as usize, op.offset)
                    }
                    OpKind::Trim => {
                        let device = self.devices.get(op.file as usize) == Some(&true);
                        // BLKDISCARD is an ioctl: counted with the other calls.
                        if device {
                            sys.other += 1;
                        } else {
                            sys.fallocate += 1;
                        }
                        // Bytes or a negative errno already: no errno to read below.
                        return super::meta::trim(fd, device, op.offset, op.len);
                    }
                }
            }
        };
        if rc < 0 {
            -(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO) as i64)
        } else {
            rc
        }
    }
}

impl Engine for SyncEngine {
    #[inline]
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

    #[inline]
    fn reap(
        &mut self,
        _min: usize,
        done: &mut Vec<Completion>,
        _sys: &mut SyscallCounts,
    ) -> std::io::Result<usize> {
        let n = self.pending.len();
        // One at a time: at queue depth 1 a copy loop of one element is a store, where
        // `extend_from_slice` is a call to memcpy.
        for &c in &self.pending {
            done.push(c);
        }
        self.pending.clear();
        Ok(n)
    }

    fn buffers(&mut self) -> &mut BufferPool {
        &mut self.pool
    }

    fn flush(&mut self, sys: &mut SyscallCounts) -> std::io::Result<()> {
        super::fsync_all(&self.files, sys)
    }

    fn sync_files(&mut self, data_only: bool, sys: &mut SyscallCounts) -> std::io::Result<()> {
        super::sync_all(&self.files, data_only, sys)
    }

    fn set_file(&mut self, index: u32, fd: std::os::fd::RawFd) -> std::io::Result<()> {
        super::set_slot(&mut self.files, index, fd)
    }

    fn clear_file(&mut self, index: u32) {
        let _ = super::set_slot(&mut self.files, index, -1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Route;
    use std::os::fd::AsRawFd;

    fn engine(file: &std::fs::File) -> SyncEngine {
        let fd = file.as_raw_fd();
        let files = vec![FileHandles {
            fds: [fd, -1, -1],
            size: 3 * 4096,
        }];
        SyncEngine::new(files, BufferPool::new(1, 4096, 1).unwrap())
    }

    fn op(kind: OpKind, offset: u64, len: u32) -> IoOp {
        IoOp {
            kind,
            file: 0,
            route: Route::Buffered,
            offset,
            len,
            slot: 0,
        }
    }

    /// The plain metadata calls count unlinks apart from rmdirs and fsyncs apart from
    /// fdatasyncs, exactly as the io_uring engine does (one counting function for both).
    #[test]
    fn metadata_calls_are_counted_by_kind() {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("f")).unwrap();
        let mut e = engine(&f);
        let mut sys = SyscallCounts::default();
        let d = CString::new(dir.path().as_os_str().as_bytes()).unwrap();
        let dfd = e
            .open_at(
                super::super::meta::AT_FDCWD,
                &d,
                libc::O_RDONLY | libc::O_DIRECTORY,
                0,
                &mut sys,
            )
            .unwrap();
        e.mkdir_at(dfd, c"sub", 0o700, &mut sys).unwrap();
        e.unlink_at(dfd, c"sub", true, &mut sys).unwrap();
        e.unlink_at(dfd, c"f", false, &mut sys).unwrap();
        assert!(e.unlink_at(dfd, c"f", false, &mut sys).is_err());
        e.sync_fd(f.as_raw_fd(), true, &mut sys).unwrap();
        e.sync_fd(f.as_raw_fd(), false, &mut sys).unwrap();
        e.sync_fd(f.as_raw_fd(), false, &mut sys).unwrap();
        e.close_fd(dfd, &mut sys).unwrap();
        assert_eq!(
            (
                sys.open,
                sys.mkdir,
                sys.rmdir,
                sys.unlink,
                sys.fdatasync,
                sys.fsync,
                sys.close
            ),
            (1, 1, 1, 2, 1, 2, 1)
        );
    }

    #[test]
    fn bare_calls_read_write_and_report_errno() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut data = vec![0u8; 3 * 4096];
        data[4096..8192].fill(7);
        std::fs::write(&path, &data).unwrap();
        let rw = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut e = engine(&rw);
        let mut sys = SyscallCounts::default();
        let mut done = Vec::with_capacity(2);
        // A read at a 64-bit offset boundary case and past the end (0 bytes, not an error).
        e.submit(&[op(OpKind::Read, 4096, 4096)], &mut sys).unwrap();
        e.reap(1, &mut done, &mut sys).unwrap();
        assert_eq!(done[0].result, 4096);
        assert!(e.buffers().slot(0).iter().all(|&b| b == 7));
        done.clear();
        e.submit(&[op(OpKind::Read, 1 << 40, 4096)], &mut sys)
            .unwrap();
        e.reap(1, &mut done, &mut sys).unwrap();
        assert_eq!(done[0].result, 0);
        done.clear();
        // A write lands where it was asked to.
        e.buffers().slot_mut(0).fill(9);
        e.submit(&[op(OpKind::Write, 8192, 100)], &mut sys).unwrap();
        e.reap(1, &mut done, &mut sys).unwrap();
        assert_eq!(done[0].result, 100);
        done.clear();
        let back = std::fs::read(&path).unwrap();
        assert!(back[8192..8292].iter().all(|&b| b == 9));
        assert_eq!(back[8292], 0);
        assert_eq!((sys.read, sys.write), (2, 1));
        // errno comes back negated: writing through a read-only descriptor is EBADF.
        let ro = std::fs::File::open(&path).unwrap();
        let mut e = engine(&ro);
        e.submit(&[op(OpKind::Write, 0, 4096)], &mut sys).unwrap();
        e.reap(1, &mut done, &mut sys).unwrap();
        assert_eq!(done[0].result, -(libc::EBADF as i64));
    }

    #[test]
    fn cursor_append_and_dsync_ops_on_a_set_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, [1u8; 8192]).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut e = SyncEngine::new(
            crate::engine::empty_files(4),
            BufferPool::new(1, 4096, 1).unwrap(),
        );
        let mut sys = SyscallCounts::default();
        let mut done = Vec::with_capacity(1);
        e.set_file(3, f.as_raw_fd()).unwrap();
        let mut run = |e: &mut SyncEngine, kind, offset, len| {
            let op = IoOp {
                file: 3,
                ..op(kind, offset, len)
            };
            e.submit(&[op], &mut sys).unwrap();
            done.clear();
            e.reap(1, &mut done, &mut sys).unwrap();
            done[0].result
        };
        // Two reads at the cursor advance it: the second ends the file.
        assert_eq!(run(&mut e, OpKind::Read, IoOp::AT_CURSOR, 4096), 4096);
        assert_eq!(run(&mut e, OpKind::Read, IoOp::AT_CURSOR, 4096), 4096);
        assert_eq!(run(&mut e, OpKind::Read, IoOp::AT_CURSOR, 4096), 0);
        // Append lands at the end whatever the offset bits say; dsync with an offset writes there.
        assert_eq!(
            run(&mut e, OpKind::Write, IoOp::APPEND | IoOp::DSYNC | 5, 100),
            100
        );
        assert_eq!(run(&mut e, OpKind::Write, IoOp::DSYNC | 10, 10), 10);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 8292);
        // A cleared slot no longer reaches the file.
        e.clear_file(3);
        assert_eq!(run(&mut e, OpKind::Read, 0, 10), -(libc::EBADF as i64));
        assert!(e.set_file(4, 0).is_err());
        assert_eq!((sys.read, sys.write), (4, 2));
    }
}
