//! The one set of system-call wrappers outside the engines' data path: opening, naming,
//! removing and inspecting files relative to directory descriptors, and their extended
//! attributes. Every module that touches the file system's names goes through here (the
//! engines' metadata calls in `engine/meta.rs` too), so flags and error handling live in one
//! place; `tests/layering.rs` keeps these calls from reappearing elsewhere.
//!
//! rustix where it has the call; raw libc only where it has not, each such use saying why.
//! Descriptors are passed as numbers (the engines hold them that way) and borrowed for one
//! call; every function returns the system call's error as `io::Error` (errno), never a
//! panic, and none allocates.

use rustix::fs::{
    AtFlags, FallocateFlags, Mode, OFlags, RenameFlags, Stat, Statx, StatxFlags, XattrFlags,
};
use std::ffi::CStr;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};

/// Directory-relative calls name the current directory with this (absolute paths ignore it).
pub(crate) const AT_FDCWD: RawFd = libc::AT_FDCWD;

/// The caller's descriptor number, borrowed for one system call through rustix (whose calls
/// are then safe). -1 (no descriptor) is refused with EBADF, as the kernel would.
fn borrow<'a>(fd: RawFd) -> io::Result<BorrowedFd<'a>> {
    if fd == -1 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: `fd` is not -1 (the one value a BorrowedFd cannot hold; AT_FDCWD is allowed).
    // Every caller passes a descriptor it holds open for the call; the borrow ends with the
    // call that uses it. A stale number fails with EBADF like the bare call.
    Ok(unsafe { BorrowedFd::borrow_raw(fd) })
}

/// openat(2): a new descriptor for `path` relative to `dir`. `flags` are passed as given
/// (callers add O_CLOEXEC, O_NOFOLLOW, O_EXCL as they need).
pub(crate) fn openat(dir: RawFd, path: &CStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let flags = OFlags::from_bits_retain(flags as u32);
    Ok(rustix::fs::openat(
        borrow(dir)?,
        path,
        flags,
        Mode::from_bits_retain(mode),
    )?)
}

/// close(2). The descriptor is gone afterwards even when the call reports an error (Linux).
pub(crate) fn close(fd: RawFd) -> io::Result<()> {
    // Raw libc: rustix's close discards the error, which the engines report.
    // SAFETY: closing a descriptor the caller owns and will not use again.
    if unsafe { libc::close(fd) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// unlinkat(2): a file, or an empty directory with `rmdir`.
pub(crate) fn unlinkat(dir: RawFd, path: &CStr, rmdir: bool) -> io::Result<()> {
    let flags = if rmdir {
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    Ok(rustix::fs::unlinkat(borrow(dir)?, path, flags)?)
}

/// mkdirat(2).
pub(crate) fn mkdirat(dir: RawFd, path: &CStr, mode: u32) -> io::Result<()> {
    Ok(rustix::fs::mkdirat(
        borrow(dir)?,
        path,
        Mode::from_bits_retain(mode),
    )?)
}

/// renameat(2): `old` relative to `old_dir` takes the name `new` relative to `new_dir`
/// (replacing an empty directory or a file there, as rename does).
pub(crate) fn renameat(old_dir: RawFd, old: &CStr, new_dir: RawFd, new: &CStr) -> io::Result<()> {
    Ok(rustix::fs::renameat(
        borrow(old_dir)?,
        old,
        borrow(new_dir)?,
        new,
    )?)
}

/// renameat2(2) within one directory; `flags` are RENAME_NOREPLACE or RENAME_EXCHANGE.
pub(crate) fn renameat2(dir: RawFd, from: &CStr, to: &CStr, flags: u32) -> io::Result<()> {
    let dir = borrow(dir)?;
    let flags = RenameFlags::from_bits_retain(flags);
    Ok(rustix::fs::renameat_with(dir, from, dir, to, flags)?)
}

/// linkat(2); `flags` are AT_* bits (AT_SYMLINK_FOLLOW, AT_EMPTY_PATH).
pub(crate) fn linkat(
    old_dir: RawFd,
    old: &CStr,
    new_dir: RawFd,
    new: &CStr,
    flags: i32,
) -> io::Result<()> {
    let flags = AtFlags::from_bits_retain(flags as u32);
    Ok(rustix::fs::linkat(
        borrow(old_dir)?,
        old,
        borrow(new_dir)?,
        new,
        flags,
    )?)
}

/// fstatat(2) with AT_SYMLINK_NOFOLLOW: the entry itself, never what a link names.
pub(crate) fn lstatat(dir: RawFd, path: &CStr) -> io::Result<Stat> {
    Ok(rustix::fs::statat(
        borrow(dir)?,
        path,
        AtFlags::SYMLINK_NOFOLLOW,
    )?)
}

/// fstat(2).
pub(crate) fn fstat(fd: RawFd) -> io::Result<Stat> {
    Ok(rustix::fs::fstat(borrow(fd)?)?)
}

/// statx(2) of `path` relative to `dir`; `flags` are AT_* bits (AT_SYMLINK_NOFOLLOW,
/// AT_EMPTY_PATH with an empty path for the descriptor itself), `mask` STATX_* bits.
pub(crate) fn statx(dir: RawFd, path: &CStr, flags: i32, mask: u32) -> io::Result<Statx> {
    let flags = AtFlags::from_bits_retain(flags as u32);
    let mask = StatxFlags::from_bits_retain(mask);
    Ok(rustix::fs::statx(borrow(dir)?, path, flags, mask)?)
}

/// getdents64(2): the next directory entries of `fd` into `buf`; 0 at the end. Walk the
/// result with [`dirents`].
pub(crate) fn getdents(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // Raw libc: rustix offers getdents64 only through RawDir, which parses the records
    // itself; the engines hand the caller the kernel's buffer.
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
pub(crate) fn dirents(buf: &[u8], len: usize) -> impl Iterator<Item = &[u8]> {
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

/// posix_fadvise(2) over the whole file; `advice` is a POSIX_FADV_* value.
pub(crate) fn fadvise(fd: RawFd, advice: i32) -> io::Result<()> {
    use rustix::fs::Advice;
    let advice = match advice {
        libc::POSIX_FADV_NORMAL => Advice::Normal,
        libc::POSIX_FADV_SEQUENTIAL => Advice::Sequential,
        libc::POSIX_FADV_RANDOM => Advice::Random,
        libc::POSIX_FADV_NOREUSE => Advice::NoReuse,
        libc::POSIX_FADV_WILLNEED => Advice::WillNeed,
        libc::POSIX_FADV_DONTNEED => Advice::DontNeed,
        _ => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
    };
    Ok(rustix::fs::fadvise(borrow(fd)?, 0, None, advice)?)
}

/// fsync(2), or fdatasync(2) with `data_only`.
pub(crate) fn sync(fd: RawFd, data_only: bool) -> io::Result<()> {
    let fd = borrow(fd)?;
    Ok(if data_only {
        rustix::fs::fdatasync(fd)
    } else {
        rustix::fs::fsync(fd)
    }?)
}

/// fallocate(2); `mode` is FALLOC_FL_* bits.
pub(crate) fn fallocate(fd: RawFd, mode: i32, offset: u64, len: u64) -> io::Result<()> {
    let mode = FallocateFlags::from_bits_retain(mode as u32);
    Ok(rustix::fs::fallocate(borrow(fd)?, mode, offset, len)?)
}

/// fcntl(F_SETFL): set the `set` status flags and clear the `clear` ones (the O_DIRECT
/// switch of a descriptor opened without it).
pub(crate) fn set_status_flags(fd: RawFd, set: i32, clear: i32) -> io::Result<()> {
    let fd = borrow(fd)?;
    let fl = rustix::fs::fcntl_getfl(fd)?;
    let set = OFlags::from_bits_retain(set as u32);
    let clear = OFlags::from_bits_retain(clear as u32);
    Ok(rustix::fs::fcntl_setfl(fd, (fl | set) & !clear)?)
}

/// lseek(2): the new offset; `whence` is SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA or
/// SEEK_HOLE.
pub(crate) fn seek(fd: RawFd, offset: i64, whence: i32) -> io::Result<u64> {
    use rustix::fs::SeekFrom;
    let einval = || io::Error::from_raw_os_error(libc::EINVAL);
    let at = |o: i64| u64::try_from(o).map_err(|_| einval());
    let from = match whence {
        libc::SEEK_SET => SeekFrom::Start(at(offset)?),
        libc::SEEK_CUR => SeekFrom::Current(offset),
        libc::SEEK_END => SeekFrom::End(offset),
        libc::SEEK_DATA => SeekFrom::Data(at(offset)?),
        libc::SEEK_HOLE => SeekFrom::Hole(at(offset)?),
        _ => return Err(einval()),
    };
    Ok(rustix::fs::seek(borrow(fd)?, from)?)
}

/// fgetxattr(2): the value of attribute `name` of the open file into `buf`; its length.
pub(crate) fn fgetxattr(fd: RawFd, name: &CStr, buf: &mut [u8]) -> io::Result<usize> {
    Ok(rustix::fs::fgetxattr(borrow(fd)?, name, buf)?)
}

/// fsetxattr(2): set attribute `name` of the open file to `value` (created or replaced).
pub(crate) fn fsetxattr(fd: RawFd, name: &CStr, value: &[u8]) -> io::Result<()> {
    Ok(rustix::fs::fsetxattr(
        borrow(fd)?,
        name,
        value,
        XattrFlags::empty(),
    )?)
}

/// fremovexattr(2).
pub(crate) fn fremovexattr(fd: RawFd, name: &CStr) -> io::Result<()> {
    Ok(rustix::fs::fremovexattr(borrow(fd)?, name)?)
}

/// getxattr(2) of the file `path` names (following a symbolic link, as the call does).
pub(crate) fn getxattr(path: &CStr, name: &CStr, buf: &mut [u8]) -> io::Result<usize> {
    Ok(rustix::fs::getxattr(path, name, buf)?)
}

/// setxattr(2) of the file `path` names (following a symbolic link, as the call does).
pub(crate) fn setxattr(path: &CStr, name: &CStr, value: &[u8]) -> io::Result<()> {
    Ok(rustix::fs::setxattr(
        path,
        name,
        value,
        XattrFlags::empty(),
    )?)
}

/// ftruncate(2).
pub(crate) fn ftruncate(fd: RawFd, len: u64) -> io::Result<()> {
    Ok(rustix::fs::ftruncate(borrow(fd)?, len)?)
}
