//! Metadata operations as plain system calls: the default every engine shares (see the
//! metadata methods of [`super::Engine`]); the io_uring engine overrides the ones the ring has
//! opcodes for.
//!
//! Callers own every argument: paths are pre-built `CStr`s, output structs and directory
//! buffers are theirs, so none of these functions allocates. Each returns the system call's
//! error as `io::Error` (errno), never a panic.

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

/// Directory-relative opens name the current directory with this (absolute paths ignore it).
pub const AT_FDCWD: RawFd = libc::AT_FDCWD;

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// openat(2): a new descriptor for `path` relative to `dir`.
pub fn openat(dir: RawFd, path: &CStr, flags: i32, mode: u32) -> io::Result<RawFd> {
    // SAFETY: path is NUL-terminated and outlives the call.
    check(unsafe { libc::openat(dir, path.as_ptr(), flags, mode as libc::c_uint) })
}

/// close(2). The descriptor is gone afterwards even when the call reports an error (Linux).
pub fn close(fd: RawFd) -> io::Result<()> {
    // SAFETY: closing a descriptor the caller owns and will not use again.
    check(unsafe { libc::close(fd) }).map(drop)
}

/// unlinkat(2): a file, or an empty directory with `rmdir`.
pub fn unlinkat(dir: RawFd, path: &CStr, rmdir: bool) -> io::Result<()> {
    let flags = if rmdir { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: path is NUL-terminated and outlives the call.
    check(unsafe { libc::unlinkat(dir, path.as_ptr(), flags) }).map(drop)
}

/// mkdirat(2).
pub fn mkdirat(dir: RawFd, path: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: path is NUL-terminated and outlives the call.
    check(unsafe { libc::mkdirat(dir, path.as_ptr(), mode as libc::mode_t) }).map(drop)
}

/// statx(2) of `path` relative to `dir` (not following a last symlink with
/// AT_SYMLINK_NOFOLLOW in `flags`) into the caller's struct.
pub fn statx_at(dir: RawFd, path: &CStr, flags: i32, out: &mut libc::statx) -> io::Result<()> {
    // SAFETY: path is NUL-terminated; `out` is a live statx the kernel fills.
    check(unsafe { libc::statx(dir, path.as_ptr(), flags, libc::STATX_BASIC_STATS, out) }).map(drop)
}

/// posix_fadvise(2) over the whole file.
pub fn advise(fd: RawFd, advice: i32) -> io::Result<()> {
    // SAFETY: no memory arguments.
    match unsafe { libc::posix_fadvise(fd, 0, 0, advice) } {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// statx(2) of an open descriptor (AT_EMPTY_PATH) into the caller's struct.
pub fn fstatx(fd: RawFd, out: &mut libc::statx) -> io::Result<()> {
    // SAFETY: an empty NUL-terminated path with AT_EMPTY_PATH names `fd`; `out` is a live
    // statx the kernel fills.
    check(unsafe {
        libc::statx(
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_BASIC_STATS,
            out,
        )
    })
    .map(drop)
}

/// getdents64(2): the next directory entries of `fd` into `buf`; 0 at the end. Walk the
/// result with [`dirents`].
pub fn getdents(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of buf.len() bytes.
    let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// The names of the `linux_dirent64` records in the first `len` bytes of `buf` (as filled
/// by [`getdents`]).
pub fn dirents(buf: &[u8], len: usize) -> impl Iterator<Item = &[u8]> {
    // linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name[].
    const NAME: usize = 19;
    let buf = &buf[..len.min(buf.len())];
    let mut at = 0usize;
    std::iter::from_fn(move || {
        if at + NAME > buf.len() {
            return None;
        }
        let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
        if reclen < NAME || at + reclen > buf.len() {
            return None;
        }
        let name = &buf[at + NAME..at + reclen];
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        at += reclen;
        Some(&name[..end])
    })
}

/// fsync(2), or fdatasync(2) with `data_only`.
pub fn sync(fd: RawFd, data_only: bool) -> io::Result<()> {
    // SAFETY: no memory arguments.
    check(unsafe {
        if data_only {
            libc::fdatasync(fd)
        } else {
            libc::fsync(fd)
        }
    })
    .map(drop)
}

/// fallocate(2).
pub fn fallocate(fd: RawFd, mode: i32, offset: u64, len: u64) -> io::Result<()> {
    // SAFETY: no memory arguments.
    check(unsafe { libc::fallocate(fd, mode, offset as libc::off_t, len as libc::off_t) }).map(drop)
}

/// fcntl(F_SETFL): set the `set` status flags and clear the `clear` ones (the O_DIRECT
/// switch of a descriptor opened without it).
pub fn set_status_flags(fd: RawFd, set: i32, clear: i32) -> io::Result<()> {
    // SAFETY: F_GETFL has no memory argument.
    let fl = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: F_SETFL takes an int.
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, (fl | set) & !clear) }).map(drop)
}

/// lseek(2): the new offset.
pub fn seek(fd: RawFd, offset: i64, whence: i32) -> io::Result<u64> {
    // SAFETY: no memory arguments.
    let r = unsafe { libc::lseek(fd, offset as libc::off_t, whence) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as u64)
    }
}

/// A zeroed statx, for callers to own and pass to [`super::Engine::stat_fd`].
pub fn statx_buf() -> libc::statx {
    // SAFETY: statx is plain old data; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn open_stat_list_unlink_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let d = CString::new(dir.path().as_os_str().as_bytes()).unwrap();
        let dfd = openat(AT_FDCWD, &d, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
        let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_RDWR;
        let fd = openat(dfd, c"a", flags, 0o600).unwrap();
        // O_EXCL refuses a second create.
        let e = openat(dfd, c"a", flags, 0o600).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
        fallocate(fd, 0, 0, 8192).unwrap();
        let mut st = statx_buf();
        fstatx(fd, &mut st).unwrap();
        assert_eq!(st.stx_size, 8192);
        sync(fd, true).unwrap();
        sync(fd, false).unwrap();
        set_status_flags(fd, libc::O_APPEND, 0).unwrap();
        // SAFETY: F_GETFL has no memory argument.
        assert_ne!(
            unsafe { libc::fcntl(fd, libc::F_GETFL) } & libc::O_APPEND,
            0
        );
        assert_eq!(seek(fd, 0, libc::SEEK_END).unwrap(), 8192);
        close(fd).unwrap();
        mkdirat(dfd, c"sub", 0o700).unwrap();
        let mut buf = [0u8; 4096];
        let n = getdents(dfd, &mut buf).unwrap();
        let mut names: Vec<&[u8]> = dirents(&buf, n).collect();
        names.sort();
        assert_eq!(names, [&b"."[..], b"..", b"a", b"sub"]);
        assert_eq!(getdents(dfd, &mut buf).unwrap(), 0);
        unlinkat(dfd, c"a", false).unwrap();
        unlinkat(dfd, c"sub", true).unwrap();
        let e = unlinkat(dfd, c"a", false).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        close(dfd).unwrap();
    }
}
