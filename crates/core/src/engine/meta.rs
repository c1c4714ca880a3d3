//! Metadata operations as plain system calls: the default every engine shares (see the
//! metadata methods of [`super::Engine`]); the io_uring engine overrides the ones the ring has
//! opcodes for.
//!
//! Callers own every argument: paths are pre-built `CStr`s, output structs and directory
//! buffers are theirs, so none of these functions allocates. Each returns the system call's
//! error as `io::Error` (errno), never a panic.

use std::ffi::CStr;
use std::io;
use std::os::fd::{IntoRawFd, RawFd};

pub(crate) use crate::sys::{
    close, dirents, fallocate, getdents, mkdirat, renameat, seek, set_status_flags, sync, unlinkat,
    AT_FDCWD,
};

/// posix_fadvise(2) over the whole file; `advice` is a POSIX_FADV_* value.
pub(crate) use crate::sys::fadvise as advise;

/// openat(2): a new descriptor for `path` relative to `dir`.
pub(crate) fn openat(dir: RawFd, path: &CStr, flags: i32, mode: u32) -> io::Result<RawFd> {
    // The caller owns the descriptor from here and closes it with [`close`].
    Ok(crate::sys::openat(dir, path, flags, mode)?.into_raw_fd())
}

/// statx(2) of `path` relative to `dir` (not following a last symlink with
/// AT_SYMLINK_NOFOLLOW in `flags`) into the caller's struct.
pub(crate) fn statx_at(
    dir: RawFd,
    path: &CStr,
    flags: i32,
    out: &mut libc::statx,
) -> io::Result<()> {
    let sx = crate::sys::statx(dir, path, flags, libc::STATX_BASIC_STATS)?;
    copy_statx(&sx, out);
    Ok(())
}

/// statx(2) of an open descriptor (AT_EMPTY_PATH) into the caller's struct.
pub(crate) fn fstatx(fd: RawFd, out: &mut libc::statx) -> io::Result<()> {
    let sx = crate::sys::statx(fd, c"", libc::AT_EMPTY_PATH, libc::STATX_BASIC_STATS)?;
    copy_statx(&sx, out);
    Ok(())
}

/// rustix's statx into the libc struct the Engine contract hands out (field by field: the
/// two are the same kernel structure, and copying keeps that out of `unsafe`).
fn copy_statx(sx: &rustix::fs::Statx, out: &mut libc::statx) {
    let ts = |to: &mut libc::statx_timestamp, t: &rustix::fs::StatxTimestamp| {
        to.tv_sec = t.tv_sec;
        to.tv_nsec = t.tv_nsec;
    };
    out.stx_mask = sx.stx_mask;
    out.stx_blksize = sx.stx_blksize;
    out.stx_attributes = sx.stx_attributes.bits();
    out.stx_nlink = sx.stx_nlink;
    out.stx_uid = sx.stx_uid;
    out.stx_gid = sx.stx_gid;
    out.stx_mode = sx.stx_mode;
    out.stx_ino = sx.stx_ino;
    out.stx_size = sx.stx_size;
    out.stx_blocks = sx.stx_blocks;
    out.stx_attributes_mask = sx.stx_attributes_mask.bits();
    ts(&mut out.stx_atime, &sx.stx_atime);
    ts(&mut out.stx_btime, &sx.stx_btime);
    ts(&mut out.stx_ctime, &sx.stx_ctime);
    ts(&mut out.stx_mtime, &sx.stx_mtime);
    out.stx_rdev_major = sx.stx_rdev_major;
    out.stx_rdev_minor = sx.stx_rdev_minor;
    out.stx_dev_major = sx.stx_dev_major;
    out.stx_dev_minor = sx.stx_dev_minor;
    out.stx_mnt_id = sx.stx_mnt_id;
    out.stx_dio_mem_align = sx.stx_dio_mem_align;
    out.stx_dio_offset_align = sx.stx_dio_offset_align;
}

/// A zeroed statx, for callers to own and pass to [`super::Engine::stat_fd`].
pub(crate) fn statx_buf() -> libc::statx {
    // SAFETY: statx is plain old data; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// Discard `len` bytes at `offset`: a hole punched in a file (fallocate PUNCH_HOLE |
/// KEEP_SIZE, the size unchanged), BLKDISCARD on a block device (`device`). Bytes trimmed,
/// or a negative errno, as a data I/O completes.
pub(crate) fn trim(fd: RawFd, device: bool, offset: u64, len: u32) -> i64 {
    let rc = if device {
        // _IO(0x12, 119): BLKDISCARD takes a u64 [start, length] pair.
        const BLKDISCARD: libc::c_ulong = 0x1277;
        let range = [offset, len as u64];
        // SAFETY: BLKDISCARD reads two u64s from `range`, which lives across the call.
        let rc = unsafe { libc::ioctl(fd, BLKDISCARD as _, range.as_ptr()) };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    } else {
        fallocate(
            fd,
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset,
            len as u64,
        )
    };
    match rc {
        Ok(()) => len as i64,
        Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
    }
}

/// Whether `fd` is a block device (its trims are BLKDISCARD, not hole punches).
pub(crate) fn is_block_device(fd: RawFd) -> bool {
    crate::sys::fstat(fd).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::BlockDevice
    })
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
        // rename moves a name; the old one is gone, the new one holds the same file.
        renameat(dfd, c"a", dfd, c"b").unwrap();
        let e = renameat(dfd, c"a", dfd, c"c").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        renameat(dfd, c"b", dfd, c"a").unwrap();
        unlinkat(dfd, c"a", false).unwrap();
        unlinkat(dfd, c"sub", true).unwrap();
        let e = unlinkat(dfd, c"a", false).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        close(dfd).unwrap();
    }

    /// The statx the Engine hands out is the kernel's, field for field, whichever way it
    /// is asked (by descriptor or by name); a missing descriptor and unknown arguments are
    /// errors, not a borrow of -1.
    #[test]
    fn statx_fields_and_bad_arguments() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 5000]).unwrap();
        let md = std::fs::metadata(&path).unwrap();
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        let fd = openat(AT_FDCWD, &c, libc::O_RDONLY, 0).unwrap();
        let (mut a, mut b) = (statx_buf(), statx_buf());
        fstatx(fd, &mut a).unwrap();
        statx_at(AT_FDCWD, &c, libc::AT_SYMLINK_NOFOLLOW, &mut b).unwrap();
        for st in [&a, &b] {
            assert_eq!(st.stx_ino, md.ino());
            assert_eq!(st.stx_size, 5000);
            assert_eq!(st.stx_mode as u32, md.mode());
            assert_eq!(st.stx_nlink as u64, md.nlink());
            assert_eq!(st.stx_uid, md.uid());
            assert_eq!(st.stx_blocks, md.blocks());
            assert_eq!(st.stx_mtime.tv_sec, md.mtime());
            assert_eq!(st.stx_mtime.tv_nsec as i64, md.mtime_nsec());
            assert_eq!(libc::makedev(st.stx_dev_major, st.stx_dev_minor), md.dev());
            assert_ne!(st.stx_mask & libc::STATX_BASIC_STATS, 0);
        }
        advise(fd, libc::POSIX_FADV_DONTNEED).unwrap();
        let einval = Some(libc::EINVAL);
        assert_eq!(advise(fd, 99).unwrap_err().raw_os_error(), einval);
        assert_eq!(seek(fd, 0, 77).unwrap_err().raw_os_error(), einval);
        assert_eq!(
            seek(fd, -1, libc::SEEK_SET).unwrap_err().raw_os_error(),
            einval
        );
        assert_eq!(seek(fd, -100, libc::SEEK_END).unwrap(), 4900);
        close(fd).unwrap();
        let ebadf = Some(libc::EBADF);
        assert_eq!(sync(-1, false).unwrap_err().raw_os_error(), ebadf);
        let mut st = statx_buf();
        assert_eq!(fstatx(-1, &mut st).unwrap_err().raw_os_error(), ebadf);
        assert_eq!(unlinkat(-1, c"x", false).unwrap_err().raw_os_error(), ebadf);
    }
}
