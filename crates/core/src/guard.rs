//! Guards shared by every kind of run: advisory locks that keep two fsbench runs off the same
//! target or directory, a free-space check before laying out data, and the parent-death signal
//! that ends worker processes when the parent is killed.
//!
//! Locks are `flock` locks on an open descriptor: they belong to the open file description,
//! so they last while that `File` is open and vanish when the process dies (even by SIGKILL),
//! which is what a crash-safe "run in progress" marker needs. The holder's PID is read from
//! `/proc/locks` so the refusal can name it.

use crate::bail_usage;
use anyhow::Result;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Take an exclusive, non-blocking advisory lock on an open file (a target, a scratch file or
/// a directory opened read-only). The lock lasts while `file` (or a clone of its descriptor)
/// stays open. Another run holding it is a usage error naming that run's PID.
pub(crate) fn lock_exclusive(file: &File, path: &Path) -> Result<()> {
    lock(file, path, libc::LOCK_EX)
}

fn lock(file: &File, path: &Path, how: libc::c_int) -> Result<()> {
    // SAFETY: flock on a descriptor we own; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        let holder = file
            .metadata()
            .ok()
            .and_then(|m| lock_holder(m.dev(), m.ino()))
            .map(|pid| format!("process {pid}"))
            .unwrap_or_else(|| "another process".into());
        bail_usage!(
            "{} is in use by another fsbench run ({holder}); wait for it to end or name another target",
            path.display()
        );
    }
    // File systems without flock (some network file systems) cannot be guarded; do not refuse.
    Ok(())
}

/// An exclusive lock on a directory, held while this value lives.
pub struct DirLock {
    _dir: File,
}

/// Lock a directory (a workload's `--dir`, a sweep's `--output DIR`) for the whole run.
pub fn lock_dir(path: &Path) -> Result<DirLock> {
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| crate::usage!("cannot open directory {}: {e}", path.display()))?;
    lock_exclusive(&dir, path)?;
    Ok(DirLock { _dir: dir })
}

/// The PID holding a FLOCK on (dev, inode), from /proc/locks.
fn lock_holder(dev: u64, ino: u64) -> Option<u32> {
    let text = std::fs::read_to_string("/proc/locks").ok()?;
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    parse_lock_holder(&text, maj, min, ino)
}

fn parse_lock_holder(text: &str, maj: u32, min: u32, ino: u64) -> Option<u32> {
    // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" (device numbers in hex).
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || f[1] != "FLOCK" || f.contains(&"->") {
            continue;
        }
        let mut id = f[5].split(':');
        let (Some(a), Some(b), Some(i)) = (id.next(), id.next(), id.next()) else {
            continue;
        };
        let same = u32::from_str_radix(a, 16).ok() == Some(maj)
            && u32::from_str_radix(b, 16).ok() == Some(min)
            && i.parse::<u64>().ok() == Some(ino);
        if same {
            return f[4].parse().ok();
        }
    }
    None
}

/// Refuse, with the numbers, a job that would write more than the file system holding `dir`
/// has free. `bytes` is what the job will newly allocate; `what` names the job in the line.
pub fn ensure_free_space(dir: &Path, bytes: u64, what: &str) -> Result<()> {
    let Some(free) = free_bytes(dir) else {
        return Ok(()); // statvfs unsupported: the write itself will report ENOSPC.
    };
    if bytes > free {
        bail_usage!(
            "{what} needs {} of space but the file system of {} has {} free; use a smaller size or another directory",
            crate::units::format_bytes(bytes as f64),
            dir.display(),
            crate::units::format_bytes(free as f64)
        );
    }
    Ok(())
}

/// Bytes available to an unprivileged writer on the file system holding `path`.
pub(crate) fn free_bytes(path: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs fills a zeroed struct we own; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Make this process die with its parent (SIGKILL), and exit at once if the parent is already
/// gone (it may have died before the prctl took effect). `parent` is the PID the parent gave
/// us; without it, being re-parented to init counts as the parent being gone.
pub fn die_with_parent(parent: Option<u32>) {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    // SAFETY: getppid has no preconditions.
    let now = unsafe { libc::getppid() } as u32;
    let gone = match parent {
        Some(p) => now != p,
        None => now == 1,
    };
    if gone {
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holder_parsed_from_proc_locks() {
        let text = "1: POSIX  ADVISORY  WRITE 99 fd:01:42 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 1234 fd:01:42 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 77 08:02:42 0 EOF\n";
        assert_eq!(parse_lock_holder(text, 0xfd, 1, 42), Some(1234));
        assert_eq!(parse_lock_holder(text, 8, 2, 42), Some(77));
        assert_eq!(parse_lock_holder(text, 8, 2, 43), None);
    }

    #[test]
    fn second_lock_is_refused_with_our_pid() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, b"x").unwrap();
        let a = File::open(&p).unwrap();
        lock_exclusive(&a, &p).unwrap();
        let b = File::open(&p).unwrap();
        let err = lock_exclusive(&b, &p).unwrap_err();
        assert!(crate::error::is_usage(&err));
        let msg = err.to_string();
        assert!(
            msg.contains(&std::process::id().to_string()),
            "holder not named: {msg}"
        );
        drop(a);
        lock_exclusive(&b, &p).unwrap();
    }

    #[test]
    fn dir_lock_excludes_a_second_holder() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock_dir(dir.path()).unwrap();
        assert!(lock_dir(dir.path()).is_err());
        drop(held);
        assert!(lock_dir(dir.path()).is_ok());
    }

    #[test]
    fn free_space_refusal_names_numbers() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ensure_free_space(dir.path(), 1, "job").is_ok());
        let err = ensure_free_space(dir.path(), u64::MAX / 2, "job").unwrap_err();
        assert!(crate::error::is_usage(&err));
        assert!(err.to_string().contains("free"));
    }
}
