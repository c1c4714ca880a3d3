//! FIEMAP: the extents of a file (logical offset, physical offset, length, flags).

use anyhow::{Context, Result};
use std::fs::File;
use std::os::fd::AsRawFd;

const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const FIEMAP_FLAG_SYNC: u32 = 0x1;
pub const FIEMAP_EXTENT_LAST: u32 = 0x1;
pub const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x800;
const BATCH: usize = 256;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

#[repr(C)]
struct RawFiemap {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extents: [RawExtent; BATCH],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub flags: u32,
}

/// All extents of a file, in logical order. Adjacent extents that are physically contiguous
/// are reported as the file system reports them (not merged).
pub fn extents(file: &File) -> Result<Vec<Extent>> {
    let mut out = Vec::new();
    let mut start = 0u64;
    let mut first = true;
    loop {
        let mut fm = Box::new(RawFiemap {
            start,
            length: u64::MAX - start,
            flags: if first { FIEMAP_FLAG_SYNC } else { 0 },
            mapped_extents: 0,
            extent_count: BATCH as u32,
            reserved: 0,
            extents: [RawExtent::default(); BATCH],
        });
        first = false;
        // SAFETY: FS_IOC_FIEMAP reads the header and fills at most extent_count extents of
        // the array that follows it, which RawFiemap provides.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP as _, &mut *fm) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error()).context("FIEMAP");
        }
        let n = fm.mapped_extents as usize;
        if n == 0 {
            break;
        }
        let mut last = false;
        for e in &fm.extents[..n] {
            out.push(Extent {
                logical: e.logical,
                physical: e.physical,
                length: e.length,
                flags: e.flags,
            });
            last |= e.flags & FIEMAP_EXTENT_LAST != 0;
        }
        let e = fm.extents[n - 1];
        // A file system reporting an extent that ends at or before where this batch began
        // (or past the end of the address space) would make the loop run for ever: stop.
        match next_start(start, e.logical, e.length) {
            Some(s) if !last => start = s,
            _ => break,
        }
    }
    Ok(out)
}

/// Where the next FIEMAP batch starts: after the last extent, only if that moves forward.
fn next_start(start: u64, logical: u64, length: u64) -> Option<u64> {
    logical.checked_add(length).filter(|&s| s > start)
}

/// Extent count of the file at `path`.
pub fn extent_count(path: &std::path::Path) -> Result<usize> {
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    Ok(extents(&f)?.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_only_move_forward() {
        assert_eq!(next_start(0, 0, 4096), Some(4096));
        assert_eq!(next_start(4096, 0, 4096), None);
        assert_eq!(next_start(0, u64::MAX - 1, 4096), None);
        assert_eq!(next_start(10, 0, 0), None);
    }
    use std::os::unix::fs::FileExt;

    #[test]
    fn fragmented_on_purpose() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("frag");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        // Write every other 64 KiB block: holes between them force separate extents.
        let buf = vec![7u8; 65536];
        for i in 0..8u64 {
            f.write_all_at(&buf, i * 2 * 65536).unwrap();
        }
        f.sync_all().unwrap();
        match extents(&f) {
            Ok(ex) => {
                assert_eq!(ex.len(), 8, "{ex:?}");
                assert_eq!(ex[1].logical, 2 * 65536);
            }
            Err(e) => eprintln!("skipped: FIEMAP not supported here: {e}"),
        }
    }
}
