//! Descriptor-based target handling: open a target without following a symbolic link, read
//! and set the `user.fsbench` mark on the open descriptor (fgetxattr / fsetxattr), and name a
//! file by (device, inode) so a path that was swapped for another file is noticed.
//!
//! The path functions in `crate::safety` stay for callers that have no descriptor; here every
//! check is made on the descriptor that is then used, so nothing can change between the check
//! and the use.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// (device, inode) of an open file or a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    pub fn of(f: &File) -> std::io::Result<FileId> {
        let m = f.metadata()?;
        Ok(FileId {
            dev: m.dev(),
            ino: m.ino(),
        })
    }

    /// What the path names now, without following a final symbolic link.
    pub fn of_path(p: &Path) -> std::io::Result<FileId> {
        let m = std::fs::symlink_metadata(p)?;
        Ok(FileId {
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

/// Was the open file created (and marked) by fsbench?
pub fn fd_is_marked(f: &File) -> bool {
    crate::safety::fd_is_marked(f)
}

/// Can this file carry the mark at all? False where the file system has no user xattrs
/// (then a file fsbench created cannot be told from another by its mark).
pub fn fd_can_mark(f: &File) -> bool {
    !matches!(crate::safety::fd_get_mark(f), Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP))
}

/// Mark the open file as fsbench's. False where the file system has no user xattrs.
pub(crate) fn fd_mark(f: &File) -> bool {
    crate::safety::fd_set_mark(f, b"created")
}

/// Flags every open of a target carries: never follow a final symlink (unless `follow`),
/// never block on a FIFO, never leak into children.
pub(crate) fn target_flags(follow: bool) -> i32 {
    let mut f = libc::O_CLOEXEC | libc::O_NONBLOCK;
    if !follow {
        f |= libc::O_NOFOLLOW;
    }
    f
}

/// Open an existing target read-write (or read-only when `write` is false).
pub fn open_existing(path: &Path, write: bool, follow: bool) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(target_flags(follow))
        .open(path)
}

/// Create a new target: O_CREAT|O_EXCL|O_NOFOLLOW, so an existing file or link is never used.
pub(crate) fn create_new(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
}

/// Turn O_NONBLOCK off again once the descriptor is known to be a regular file or device.
pub(crate) fn set_blocking(f: &File) {
    // SAFETY: fcntl on an open descriptor we own; no memory is passed.
    unsafe {
        let fl = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(f.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mark_through_descriptor_and_refuse_links() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let f = create_new(&p).unwrap();
        assert!(!fd_is_marked(&f));
        if fd_mark(&f) {
            assert!(fd_is_marked(&f));
            assert!(
                crate::safety::is_marked(&p),
                "same mark as the path functions"
            );
        }
        assert!(create_new(&p).is_err(), "O_EXCL");
        let l = dir.path().join("l");
        std::os::unix::fs::symlink(&p, &l).unwrap();
        let e = open_existing(&l, true, false).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        assert!(open_existing(&l, true, true).is_ok());
        assert!(create_new(&l).is_err(), "a link is never created through");
        assert_eq!(FileId::of(&f).unwrap(), FileId::of_path(&p).unwrap());
        assert_ne!(FileId::of(&f).unwrap(), FileId::of_path(&l).unwrap());
    }
}
