//! Engines: how an I/O is issued. One small contract (submit / reap, like fio's ioengine ops)
//! shared by the synchronous engines, which complete inline, and asynchronous ones.
//!
//! Ops name their buffer by slot index and their descriptor by file index and route, so the
//! worker loop never allocates and an async engine can keep buffers registered.

pub(crate) mod alloc;
pub(crate) mod buffer;
pub(crate) mod meta;
pub(crate) mod mmap;
#[cfg(any(test, feature = "test-support"))]
#[cfg_attr(not(test), allow(dead_code))] // what only this crate's tests use
pub mod mock;
pub(crate) mod null;
pub(crate) mod shaped;
pub(crate) mod sigbus;
pub(crate) mod sync;
pub mod uring;

use crate::job::{EngineKind, Job, Route};
use crate::stats::SyscallCounts;
pub(crate) use buffer::BufferPool;
use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    // The values index per-direction tables (`--bssplit`'s sizes: reads, writes, trims).
    Read = 0,
    Write = 1,
    /// Discard the range (a hole punched in a file, BLKDISCARD on a block device): no buffer.
    Trim = 2,
}

/// One I/O request.
#[derive(Debug, Clone, Copy)]
pub struct IoOp {
    pub kind: OpKind,
    /// Index into the engine's files.
    pub file: u32,
    pub route: Route,
    /// Byte offset, or with one of `IoOp::AT_CURSOR` / `IoOp::APPEND` set, an I/O at the
    /// descriptor's own offset (read()/write() semantics). The flags ride in the top bits,
    /// which no file offset reaches (Linux offsets are below 2^63 and files far below 2^61):
    /// the op stays 24 bytes and the Job path tests one bit pattern, which is always clear.
    pub offset: u64,
    pub len: u32,
    /// Buffer slot; also identifies the I/O in its completion.
    pub slot: u32,
}

impl IoOp {
    /// At (and advancing) the descriptor's offset: read(2)/write(2).
    pub(crate) const AT_CURSOR: u64 = 1 << 63;
    /// At the end of the file (RWF_APPEND), leaving the descriptor's offset there.
    pub(crate) const APPEND: u64 = 1 << 62;
    /// Data-synchronous (RWF_DSYNC); with an explicit offset below the flag bits, or with
    /// AT_CURSOR / APPEND.
    pub(crate) const DSYNC: u64 = 1 << 61;
    /// All the flag bits.
    pub(crate) const FLAGS: u64 = Self::AT_CURSOR | Self::APPEND | Self::DSYNC;

    /// Whether any flag is set (the slow path of the engines).
    #[inline(always)]
    pub(crate) fn flagged(&self) -> bool {
        self.offset & Self::FLAGS != 0
    }

    /// The offset and RWF_* flags for preadv2/pwritev2 (and io_uring READ/WRITE): offset -1
    /// means the descriptor's offset.
    #[inline]
    pub(crate) fn positional(&self) -> (i64, i32) {
        let mut rwf = 0;
        if self.offset & Self::APPEND != 0 {
            rwf |= libc::RWF_APPEND;
        }
        if self.offset & Self::DSYNC != 0 {
            rwf |= libc::RWF_DSYNC;
        }
        let off = if self.offset & (Self::AT_CURSOR | Self::APPEND) != 0 {
            -1
        } else {
            (self.offset & !Self::FLAGS) as i64
        };
        (off, rwf)
    }
}

/// A finished I/O: bytes transferred, or a negative errno.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub slot: u32,
    pub result: i64,
}

/// The descriptors of one target file, one per route (-1 where the route is unused).
#[derive(Debug, Clone)]
pub(crate) struct FileHandles {
    pub fds: [RawFd; 3],
    /// Size of the file (the mmap engine maps this much).
    pub size: u64,
}

impl FileHandles {
    #[inline]
    pub(crate) fn fd(&self, route: Route) -> RawFd {
        self.fds[route as usize]
    }
}

pub trait Engine: Send {
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
    /// fsync (fdatasync with `data_only`) every file of the worker, waiting for each: the
    /// sync `--fsync-every` / `--fdatasync-every` issue between writes. Engines that keep
    /// written data elsewhere than in the files' pages (mmap) make it durable with `flush`.
    fn sync_files(&mut self, data_only: bool, sys: &mut SyscallCounts) -> std::io::Result<()> {
        let _ = data_only;
        self.flush(sys)
    }

    // Metadata operations (what Filebench flowops and replays need beside data I/O, the way
    // fio's engine ops carry file open/close). The defaults are the synchronous system calls
    // of engine/meta.rs; the io_uring engine issues the ones the ring has opcodes for through
    // the ring. Each is counted in `sys` by operation; paths and output structs belong to the
    // caller, so nothing here allocates.

    /// openat(2): a new descriptor (flags as for openat, e.g. O_CREAT|O_EXCL|O_NOFOLLOW).
    fn open_at(
        &mut self,
        dir: RawFd,
        path: &CStr,
        flags: i32,
        mode: u32,
        sys: &mut SyscallCounts,
    ) -> io::Result<RawFd> {
        sys.open += 1;
        meta::openat(dir, path, flags, mode)
    }
    /// close(2) of a descriptor from [`Engine::open_at`] (clear its file slot first).
    fn close_fd(&mut self, fd: RawFd, sys: &mut SyscallCounts) -> io::Result<()> {
        sys.close += 1;
        meta::close(fd)
    }
    /// unlinkat(2) of a file, or of an empty directory with `rmdir`.
    fn unlink_at(
        &mut self,
        dir: RawFd,
        path: &CStr,
        rmdir: bool,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        count_unlink(rmdir, sys);
        meta::unlinkat(dir, path, rmdir)
    }
    /// mkdirat(2).
    fn mkdir_at(
        &mut self,
        dir: RawFd,
        path: &CStr,
        mode: u32,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        sys.mkdir += 1;
        meta::mkdirat(dir, path, mode)
    }
    /// renameat(2) of `old` (relative to `old_dir`) to `new` (relative to `new_dir`).
    fn rename_at(
        &mut self,
        old_dir: RawFd,
        old: &CStr,
        new_dir: RawFd,
        new: &CStr,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        sys.rename += 1;
        meta::renameat(old_dir, old, new_dir, new)
    }
    /// statx(2) of an open descriptor into `out`.
    fn stat_fd(
        &mut self,
        fd: RawFd,
        out: &mut libc::statx,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        sys.stat += 1;
        meta::fstatx(fd, out)
    }
    /// statx(2) of a path relative to `dir` into `out`.
    fn stat_at(
        &mut self,
        dir: RawFd,
        path: &CStr,
        flags: i32,
        out: &mut libc::statx,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        sys.stat += 1;
        meta::statx_at(dir, path, flags, out)
    }
    /// posix_fadvise(2) over the whole file (no io_uring engine passes advice through the
    /// ring: it is a hint, not I/O).
    fn advise(&mut self, fd: RawFd, advice: i32, sys: &mut SyscallCounts) -> io::Result<()> {
        sys.fadvise += 1;
        meta::advise(fd, advice)
    }
    /// getdents64(2) into `buf`: bytes filled, 0 at the end (walk with `meta::dirents`).
    fn read_dir(
        &mut self,
        fd: RawFd,
        buf: &mut [u8],
        sys: &mut SyscallCounts,
    ) -> io::Result<usize> {
        sys.getdents += 1;
        meta::getdents(fd, buf)
    }
    /// fsync(2), or fdatasync(2) with `data_only`.
    fn sync_fd(&mut self, fd: RawFd, data_only: bool, sys: &mut SyscallCounts) -> io::Result<()> {
        count_sync(data_only, sys);
        meta::sync(fd, data_only)
    }
    /// fallocate(2). Part of the metadata contract (fio's engines have it too); no flowop or
    /// replayed call issues it yet, so only the engines' tests call it.
    #[cfg_attr(not(test), allow(dead_code))]
    fn allocate(
        &mut self,
        fd: RawFd,
        mode: i32,
        offset: u64,
        len: u64,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        sys.fallocate += 1;
        meta::fallocate(fd, mode, offset, len)
    }
    /// fcntl(F_GETFL, F_SETFL): set and clear status flags (O_DIRECT on an open descriptor).
    fn set_status_flags(
        &mut self,
        fd: RawFd,
        set: i32,
        clear: i32,
        sys: &mut SyscallCounts,
    ) -> io::Result<()> {
        sys.fcntl += 2;
        meta::set_status_flags(fd, set, clear)
    }
    /// lseek(2): the new offset.
    fn seek_fd(
        &mut self,
        fd: RawFd,
        offset: i64,
        whence: i32,
        sys: &mut SyscallCounts,
    ) -> io::Result<u64> {
        sys.lseek += 1;
        meta::seek(fd, offset, whence)
    }

    /// Let ops naming file `index` use `fd` (a descriptor a source opened), on every route.
    /// Engines that cannot take descriptors after they are built refuse.
    fn set_file(&mut self, index: u32, fd: RawFd) -> io::Result<()> {
        let _ = (index, fd);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this engine serves only the files it was built with",
        ))
    }
    /// Forget the descriptor of file `index` (before closing it).
    fn clear_file(&mut self, index: u32) {
        let _ = index;
    }
}

/// `count` empty file slots, for a source that sets its descriptors with [`Engine::set_file`].
pub(crate) fn empty_files(count: usize) -> Vec<FileHandles> {
    vec![
        FileHandles {
            fds: [-1; 3],
            size: 0,
        };
        count
    ]
}

/// Point file slot `index` of `files` at `fd` on every route (the shared part of the engines'
/// [`Engine::set_file`]).
pub(crate) fn set_slot(files: &mut [FileHandles], index: u32, fd: RawFd) -> io::Result<()> {
    let n = files.len();
    let f = files.get_mut(index as usize).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("file slot {index} out of range (engine has {n})"),
        )
    })?;
    f.fds = [fd; 3];
    f.size = 0;
    Ok(())
}

impl Built {
    /// The engine behind a trait object (for sources that are not monomorphised per engine).
    pub(crate) fn as_dyn(&mut self) -> &mut dyn Engine {
        match self {
            Built::Sync(e) => e,
            Built::Mmap(e) => e,
            Built::Uring(e) => e,
            Built::Null(e) => e,
            Built::Space(e) => e,
            Built::Shaped(e) => e.as_mut(),
            #[cfg(any(test, feature = "test-support"))]
            Built::Boxed(e) => e.as_mut(),
        }
    }

    /// The engine as a boxed trait object.
    fn into_dyn(self) -> Box<dyn Engine> {
        match self {
            Built::Sync(e) => Box::new(e),
            Built::Mmap(e) => Box::new(e),
            Built::Uring(e) => Box::new(e),
            Built::Null(e) => Box::new(e),
            Built::Space(e) => Box::new(e),
            Built::Shaped(e) => e,
            #[cfg(any(test, feature = "test-support"))]
            Built::Boxed(e) => e,
        }
    }

    /// This engine with every write's bytes made by `fill` first (`--buffer-pattern`,
    /// `--buffer-compress`, `--dedupe`).
    pub(crate) fn shaped(self, fill: shaped::DataFill) -> Built {
        Built::Shaped(Box::new(shaped::ShapedEngine::new(self.into_dyn(), fill)))
    }
}

/// An engine as a worker holds it. The shipped engines are held by value, so the worker loop
/// is compiled once for each and their `submit`/`reap` inline into it: no indirect call per
/// I/O. Any other implementation (the test engine) is boxed and runs the same loop.
/// The io_uring engine is the largest variant; boxing it would put a pointer chase on every
/// I/O to save a few hundred bytes per worker, once.
#[allow(clippy::large_enum_variant)]
pub enum Built {
    Sync(sync::SyncEngine),
    Mmap(mmap::MmapEngine),
    Uring(uring::UringEngine),
    Null(null::NullEngine),
    /// fio's falloc and ftruncate: each I/O changes the file's space (`alloc`).
    Space(alloc::SpaceEngine),
    /// Any engine whose writes get shaped bytes (`shaped`): the cost of making the bytes
    /// dwarfs the indirect call.
    Shaped(Box<shaped::ShapedEngine>),
    #[cfg(any(test, feature = "test-support"))]
    Boxed(Box<dyn Engine>),
}

/// Build the engine a Job asks for.
pub(crate) fn build(job: &Job, files: Vec<FileHandles>, pool: BufferPool) -> anyhow::Result<Built> {
    Ok(match job.engine {
        EngineKind::Sync => Built::Sync(sync::SyncEngine::new(files, pool)),
        EngineKind::Mmap => Built::Mmap(mmap::MmapEngine::new(files, pool)?),
        EngineKind::Uring => Built::Uring(uring::UringEngine::new(job, files, pool)?),
        EngineKind::Null => {
            drop(files);
            Built::Null(null::NullEngine::new(pool))
        }
        EngineKind::Falloc => Built::Space(alloc::SpaceEngine::new(
            files,
            pool,
            alloc::SpaceOp::Fallocate,
        )),
        EngineKind::Ftruncate => Built::Space(alloc::SpaceEngine::new(
            files,
            pool,
            alloc::SpaceOp::Ftruncate,
        )),
    })
}

/// Count an [`Engine::unlink_at`]: as rmdir or as unlink. Every engine counts through this,
/// on the ring or off it, so the two counters mean one thing.
pub(crate) fn count_unlink(rmdir: bool, sys: &mut SyscallCounts) {
    if rmdir {
        sys.rmdir += 1;
    } else {
        sys.unlink += 1;
    }
}

/// Count an [`Engine::sync_fd`]: as fdatasync or as fsync (one place, as for unlinks).
pub(crate) fn count_sync(data_only: bool, sys: &mut SyscallCounts) {
    if data_only {
        sys.fdatasync += 1;
    } else {
        sys.fsync += 1;
    }
}

/// fsync every distinct descriptor of the files.
pub(crate) fn fsync_all(files: &[FileHandles], sys: &mut SyscallCounts) -> std::io::Result<()> {
    sync_all(files, false, sys)
}

/// fsync (fdatasync with `data_only`) every distinct descriptor of the files.
pub(crate) fn sync_all(
    files: &[FileHandles],
    data_only: bool,
    sys: &mut SyscallCounts,
) -> std::io::Result<()> {
    for f in files {
        for (i, &fd) in f.fds.iter().enumerate() {
            if fd < 0 || f.fds[..i].contains(&fd) {
                continue;
            }
            count_sync(data_only, sys);
            meta::sync(fd, data_only)?;
        }
    }
    Ok(())
}
