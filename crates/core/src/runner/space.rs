//! Space management (vxbench -e, -r, -f) mapped to Linux: extent size hints through
//! FS_IOC_FSSETXATTR, reservations through fallocate, and checks through FIEMAP.

//!
//! Exit status: every refusal here is about what the user named (a hint or reservation flag
//! the file system does not have, a size it cannot take) or about the target's state after
//! allocating (`-f contig` finding several extents), so it is a usage error (exit 2) and the
//! runner removes what it created. Only a failing allocation (ENOSPC, EIO) is a failed run.

use crate::bail_usage;
use crate::job::Space;
use anyhow::Result;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// An error while preparing a target (layout, reservation, preallocation): names the file
/// and, where there is one, the offset. The runner turns it into a failed Result.
#[derive(Debug, Clone)]
pub(crate) struct PrepError {
    pub path: PathBuf,
    pub offset: Option<u64>,
    pub message: String,
}

impl std::fmt::Display for PrepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            Some(o) => write!(f, "{} at offset {o}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for PrepError {}

#[repr(C)]
#[derive(Default)]
struct FsXattr {
    xflags: u32,
    extsize: u32,
    nextents: u32,
    projid: u32,
    cowextsize: u32,
    pad: [u8; 8],
}

const FS_IOC_FSGETXATTR: libc::c_ulong = 0x801c_581f;
const FS_IOC_FSSETXATTR: libc::c_ulong = 0x401c_5820;
const FS_XFLAG_EXTSIZE: u32 = 0x0000_0800;

const XFS_SUPER_MAGIC: i64 = 0x5846_5342;

/// Before anything is modified: can the file system open as `file` take the extent size
/// hint `-e extsize`? Only XFS keeps the hint (ext4, btrfs and tmpfs have none), and it must
/// fit in 32 bits and be a multiple of the file system block size.
pub(crate) fn check_extsize(file: &File, path: &Path, extsize: u64) -> Result<()> {
    let fs = crate::probe::fs_type(path).unwrap_or_else(|| "unknown".into());
    let st = rustix::fs::fstatfs(file).ok();
    let Some(st) = st.filter(|st| st.f_type == XFS_SUPER_MAGIC) else {
        bail_usage!(
            "-e {extsize}: {} is on {fs}, which has no extent size hints; XFS has them",
            path.display()
        );
    };
    if extsize > u32::MAX as u64 {
        bail_usage!("-e {extsize}: extent size hints are limited to 4 GiB (4294967295 bytes)");
    }
    let bsize = st.f_bsize.max(1) as u64;
    if !extsize.is_multiple_of(bsize) {
        bail_usage!(
            "-e {extsize}: the extent size hint must be a multiple of the block size of {} ({bsize} bytes)",
            path.display()
        );
    }
    Ok(())
}

/// Set a fixed extent size hint (XFS). A file system without the hint gets a clear error.
pub(crate) fn set_extsize(file: &File, path: &Path, extsize: u64) -> Result<()> {
    let fs = crate::probe::fs_type(path).unwrap_or_else(|| "unknown".into());
    let mut x = FsXattr::default();
    // SAFETY: the ioctl fills a struct fsxattr, which FsXattr mirrors.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FSGETXATTR as _, &mut x) };
    if rc != 0 {
        bail_usage!(
            "-e {extsize}: {} is on {fs}, which has no extent size hints (FS_IOC_FSGETXATTR: {}); XFS has them",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    if extsize > u32::MAX as u64 {
        bail_usage!("-e {extsize}: extent size hints are limited to 4 GiB (4294967295 bytes)");
    }
    x.xflags |= FS_XFLAG_EXTSIZE;
    x.extsize = extsize as u32;
    // SAFETY: as above, with the struct we just filled.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FSSETXATTR as _, &x) };
    if rc != 0 {
        bail_usage!(
            "-e {extsize}: {} on {fs} refused the extent size hint ({}); XFS supports it for sizes that are multiples of the block size, set before data is written",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    // Some file systems (ext4) accept the call but drop the hint: read it back.
    let mut back = FsXattr::default();
    // SAFETY: as above.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FSGETXATTR as _, &mut back) };
    if rc != 0 || back.xflags & FS_XFLAG_EXTSIZE == 0 || back.extsize as u64 != extsize {
        bail_usage!(
            "-e {extsize}: {} is on {fs}, which has no extent size hints (the hint did not stick); XFS has them",
            path.display()
        );
    }
    Ok(())
}

/// Reserve `bytes` with fallocate. Without `chgsiz` the file size is unchanged (KEEP_SIZE).
pub(crate) fn reserve(file: &File, path: &Path, bytes: u64, space: &Space) -> Result<()> {
    use rustix::fs::FallocateFlags;
    let mode = if space.flags.chgsiz {
        FallocateFlags::empty()
    } else {
        FallocateFlags::KEEP_SIZE
    };
    if let Err(e) = rustix::fs::fallocate(file, mode, 0, bytes) {
        let e = std::io::Error::from(e);
        if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
            let fs = crate::probe::fs_type(path).unwrap_or_else(|| "unknown".into());
            bail_usage!(
                "-r {bytes}: {} is on {fs}, which cannot reserve space (fallocate: {e}); ext4, XFS, btrfs and tmpfs can",
                path.display()
            );
        }
        if e.raw_os_error() == Some(libc::EFBIG) || e.raw_os_error() == Some(libc::EINVAL) {
            bail_usage!(
                "-r {bytes}: {} cannot hold a reservation of {bytes} bytes (fallocate: {e})",
                path.display()
            );
        }
        return Err(PrepError {
            path: path.to_path_buf(),
            offset: Some(0),
            message: format!("-r {bytes}: reserving {bytes} bytes failed: {e}"),
        }
        .into());
    }
    if space.flags.contig || space.flags.align {
        let which = if space.flags.contig {
            "contig"
        } else {
            "align"
        };
        let extents = crate::probe::fiemap::extents(file).map_err(|e| {
            let fs = crate::probe::fs_type(path).unwrap_or_else(|| "unknown".into());
            crate::usage!(
                "-f {which}: the extents of {} cannot be examined on {fs} ({e:#}); use a file system with FIEMAP (ext4, XFS, btrfs)",
                path.display()
            )
        })?;
        if space.flags.contig && extents.len() > 1 {
            bail_usage!(
                "-f contig: the reservation of {} bytes in {} took {} extents, not one contiguous extent",
                bytes,
                path.display(),
                extents.len()
            );
        }
        if let (true, Some(ext)) = (space.flags.align, space.extsize.filter(|&e| e > 0)) {
            if let Some(bad) = extents.iter().find(|e| e.physical % ext != 0) {
                bail_usage!(
                    "-f align: an extent of {} starts at physical byte {}, not a multiple of the extent size {}",
                    path.display(),
                    bad.physical,
                    ext
                );
            }
        }
    }
    Ok(())
}

/// Allocate (but do not write) `bytes` so later writes never extend the file.
pub(crate) fn preallocate(file: &File, path: &Path, bytes: u64) -> Result<()> {
    if let Err(e) = rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, bytes) {
        let e = std::io::Error::from(e);
        if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
            return Ok(()); // the layout writes allocate instead
        }
        return Err(PrepError {
            path: path.to_path_buf(),
            offset: Some(0),
            message: format!("preallocating {bytes} bytes failed: {e}"),
        }
        .into());
    }
    Ok(())
}

/// `-f trim` / `-f noreserve`: release reserved space past the end of the file.
pub(crate) fn trim(f: &File) -> Result<()> {
    let len = f.metadata()?.len();
    let alloc = f
        .metadata()
        .map(|m| std::os::unix::fs::MetadataExt::blocks(&m) * 512)?;
    if alloc > len {
        // Shrinking a file releases every block past the new end, including fallocated
        // blocks kept past EOF (punching a hole past EOF does not, on ext4).
        f.set_len(len + 1)?;
        f.set_len(len)?;
    }
    Ok(())
}
