//! Space management (vxbench -e, -r, -f) mapped to Linux: extent size hints through
//! FS_IOC_FSSETXATTR, reservations through fallocate, and checks through FIEMAP.

use crate::job::Space;
use anyhow::{bail, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

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

/// Set a fixed extent size hint (XFS). A file system without the hint gets a clear error.
pub fn set_extsize(file: &File, path: &Path, extsize: u64) -> Result<()> {
    let fs = crate::probe::fs_type(path).unwrap_or_else(|| "unknown".into());
    let mut x = FsXattr::default();
    // SAFETY: the ioctl fills a struct fsxattr, which FsXattr mirrors.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FSGETXATTR as _, &mut x) };
    if rc != 0 {
        bail!(
            "-e {extsize}: {} is on {fs}, which has no extent size hints (FS_IOC_FSGETXATTR: {}); XFS has them",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    if extsize > u32::MAX as u64 {
        bail!("-e {extsize}: extent size hints are limited to 4 GiB");
    }
    x.xflags |= FS_XFLAG_EXTSIZE;
    x.extsize = extsize as u32;
    // SAFETY: as above, with the struct we just filled.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FSSETXATTR as _, &x) };
    if rc != 0 {
        bail!(
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
        bail!(
            "-e {extsize}: {} is on {fs}, which has no extent size hints (the hint did not stick); XFS has them",
            path.display()
        );
    }
    Ok(())
}

/// Reserve `bytes` with fallocate. Without `chgsiz` the file size is unchanged (KEEP_SIZE).
pub fn reserve(file: &File, path: &Path, bytes: u64, space: &Space) -> Result<()> {
    let mode = if space.flags.chgsiz {
        0
    } else {
        libc::FALLOC_FL_KEEP_SIZE
    };
    // SAFETY: plain fallocate on our own descriptor.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), mode, 0, bytes as i64) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        return Err(super::target::PrepError {
            path: path.to_path_buf(),
            offset: Some(0),
            message: format!("-r {bytes}: reserving {bytes} bytes failed: {e}"),
        }
        .into());
    }
    if space.flags.contig || space.flags.align {
        let extents = crate::probe::fiemap::extents(file)?;
        if space.flags.contig && extents.len() > 1 {
            bail!(
                "-f contig: the reservation of {} bytes in {} took {} extents, not one contiguous extent",
                bytes,
                path.display(),
                extents.len()
            );
        }
        if let (true, Some(ext)) = (space.flags.align, space.extsize) {
            if let Some(bad) = extents.iter().find(|e| e.physical % ext != 0) {
                bail!(
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
pub fn preallocate(file: &File, path: &Path, bytes: u64) -> Result<()> {
    // SAFETY: plain fallocate on our own descriptor.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, bytes as i64) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
            return Ok(()); // the layout writes allocate instead
        }
        return Err(super::target::PrepError {
            path: path.to_path_buf(),
            offset: Some(0),
            message: format!("preallocating {bytes} bytes failed: {e}"),
        }
        .into());
    }
    Ok(())
}

/// `-f trim` / `-f noreserve`: release reserved space past the end of the file.
pub fn trim(f: &File) -> Result<()> {
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
