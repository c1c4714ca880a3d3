//! The replay's scratch files and the limits checked before they are created.

use crate::engine::{BufferPool, FileHandles};
use anyhow::{Context, Result};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Scratch files of a replay; removed on drop unless kept.
pub(super) struct Scratch {
    pub(super) paths: Vec<PathBuf>,
    /// The replay's own directory (for mkdir, unlink and readdir steps), once created.
    pub(super) dir: Option<PathBuf>,
    pub(super) keep: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.keep {
            // Kept: no later replay takes them for a killed one's.
            for p in self.paths.iter().chain(&self.dir) {
                crate::leftover::clear_run_of(p);
            }
        } else {
            for p in &self.paths {
                let _ = std::fs::remove_file(p);
            }
            if let Some(d) = &self.dir {
                // Created new by this replay, and only it writes in it (remove_dir_all does
                // not follow symbolic links).
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }
}

/// Descriptors opened once per used scratch file and shared by the workers; closed on drop.
pub(super) struct SharedFds(pub(super) Vec<FileHandles>);

impl Drop for SharedFds {
    fn drop(&mut self) {
        for f in &self.0 {
            for &fd in &f.fds {
                if fd >= 0 {
                    // SAFETY: closing a descriptor this replay opened, once, after every
                    // worker that used it has been joined.
                    unsafe { libc::close(fd) };
                }
            }
        }
    }
}

/// Remove what replays that were killed left in `dir`: their scratch files and their own
/// directories, each recognised by its mark and the record of a run that no longer exists,
/// never by its name alone (`crate::leftover`). A note for each, for the caller to say.
pub(super) fn remove_dead_replays(dir: &Path) -> Vec<String> {
    let mut notes = crate::leftover::remove_dead_runs_files(dir, |n| {
        n.starts_with("fsbench-replay-") && n.ends_with(".dat")
    });
    let Ok(rd) = std::fs::read_dir(dir) else {
        return notes;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(n) = name.to_str() else { continue };
        if n.starts_with("fsbench-replay-") && n.ends_with(".d") {
            notes.extend(crate::leftover::remove_dir_of_dead_run(&dir.join(n)));
        }
    }
    notes
}

/// Create the replay's own directory (for its mkdir, unlink and readdir steps), marked as
/// this replay's, so a replay killed meanwhile leaves one the next replay removes.
pub(super) fn create_scratch_dir(dir: &Path) -> Result<()> {
    crate::leftover::make_marked_dir(dir)
        .with_context(|| format!("creating the replay's directory {}", dir.display()))
}

/// What a scratch file is filled with.
#[derive(Clone, Copy)]
pub(super) enum Fill {
    /// Non-repeating data from this seed (up to 1 MiB, repeated).
    Pattern(u64),
    /// The verify stream with this key (`replay --verify`).
    Stream(u64),
}

pub(super) fn create_scratch(path: &Path, size: u64, fill: Fill) -> Result<()> {
    // Marked, and recorded as this replay's, before it has a name: a replay killed at any
    // moment leaves nothing or a file the next one removes (`crate::leftover`).
    let (mut f, _) = crate::leftover::create_marked(path)
        .with_context(|| format!("creating scratch file {}", path.display()))?;
    let filled = fill_scratch(&mut f, path, size, fill);
    if filled.is_err() {
        // Ours (just created): nothing half-written stays behind.
        let _ = std::fs::remove_file(path);
    }
    filled
}

pub(super) fn fill_scratch(
    f: &mut std::fs::File,
    path: &Path,
    size: u64,
    fill: Fill,
) -> Result<()> {
    use std::io::Write;
    if size == 0 {
        return Ok(());
    }
    // A pattern buffer as large as the file needs, up to 1 MiB written over and over.
    let chunk = size.min(1 << 20) as usize;
    let seed = match fill {
        Fill::Pattern(seed) => seed,
        Fill::Stream(_) => 1,
    };
    let mut pool = BufferPool::new(1, chunk, seed)?;
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk as u64) as usize;
        let buf = &mut pool.slot_mut(0)[..n];
        if let Fill::Stream(key) = fill {
            crate::verify::stream::fill(buf, key, size - left);
        }
        f.write_all(buf)
            .with_context(|| format!("filling {}", path.display()))?;
        left -= n as u64;
    }
    Ok(())
}

/// Bytes an unprivileged user may still write in the file system holding `dir`.
pub(super) fn available_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct we own; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

pub(super) fn open_rw(path: &Path, extra: i32) -> std::io::Result<i32> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("path has a NUL byte"))?;
    let flags = libc::O_RDWR | libc::O_CLOEXEC | extra;
    let fd = crate::sys::openat(crate::sys::AT_FDCWD, &c, flags, 0)?;
    // The descriptor is closed by SharedFds after the replay.
    Ok(std::os::fd::IntoRawFd::into_raw_fd(fd))
}

/// Refuse a thread count the system would not let us start, naming the limit: the
/// per-user process limit (RLIMIT_NPROC counts threads), the kernel's threads-max, and the
/// memory the workers take against MemAvailable.
pub(super) fn check_thread_limits(
    threads: usize,
    bytes: u64,
) -> Result<(), crate::error::UsageError> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut rl) } == 0
        && rl.rlim_cur != libc::RLIM_INFINITY
        && threads as u64 + 16 > rl.rlim_cur
    {
        return Err(crate::usage!(
            "replay needs {threads} threads but RLIMIT_NPROC (ulimit -u) allows {} processes and threads: raise it or replay a trace with fewer threads",
            rl.rlim_cur
        ));
    }
    if let Some(max) = std::fs::read_to_string("/proc/sys/kernel/threads-max")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
    {
        if threads as u64 + 16 > max {
            return Err(crate::usage!(
                "replay needs {threads} threads but kernel.threads-max is {max}: raise it or replay a trace with fewer threads"
            ));
        }
    }
    crate::trace::budget::check(&format!("replay with {threads} threads"), bytes)
}

/// Raise the soft descriptor limit to the hard one if `needed` descriptors need it; refuse
/// naming RLIMIT_NOFILE when even the hard limit is too low.
pub(super) fn ensure_descriptors(needed: u64) -> Result<(), crate::error::UsageError> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Ok(());
    }
    let want = needed + 64;
    if rl.rlim_cur == libc::RLIM_INFINITY || want <= rl.rlim_cur {
        return Ok(());
    }
    if rl.rlim_max != libc::RLIM_INFINITY && want > rl.rlim_max {
        return Err(crate::usage!(
            "replay needs {needed} open files but RLIMIT_NOFILE (ulimit -n) allows {}: raise it or replay a trace with fewer files",
            rl.rlim_max
        ));
    }
    rl.rlim_cur = if rl.rlim_max == libc::RLIM_INFINITY {
        want as libc::rlim_t
    } else {
        rl.rlim_max
    };
    // SAFETY: setrlimit reads the struct we own; raising the soft limit up to the hard one
    // is always allowed.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) };
    Ok(())
}

/// A descriptor of the replay's own directory, opened without following a link and checked
/// to be a directory; the mkdir, unlink and readdir steps work relative to it. Closed on drop.
pub(super) struct DirFd(pub(super) i32);

impl DirFd {
    pub(super) fn open(path: &Path) -> Result<DirFd> {
        let c = std::ffi::CString::new(path.as_os_str().as_bytes())
            .map_err(|_| anyhow::anyhow!("{}: path has a NUL byte", path.display()))?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let fd = crate::sys::openat(crate::sys::AT_FDCWD, &c, flags, 0)
            .with_context(|| format!("opening the replay's directory {}", path.display()))?;
        // The descriptor is owned by the DirFd from here.
        Ok(DirFd(std::os::fd::IntoRawFd::into_raw_fd(fd)))
    }
}

impl Drop for DirFd {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this DirFd opened, once, after the threads ended.
        unsafe { libc::close(self.0) };
    }
}
