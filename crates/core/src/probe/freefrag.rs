//! Free-space fragmentation, like `fsadm -E`'s free extent summary, `e2freefrag` and
//! `xfs_db -c freesp`: the free extents of the file system holding a path, counted by
//! power-of-two size class (extents, blocks and share of the free space in each), with the
//! largest, smallest and average free extent.
//!
//! The free extents come from the file system itself through `FS_IOC_GETFSMAP` (Linux 4.12
//! and later; ext4 and XFS answer it), which lists every physical range with its owner; the
//! ranges owned by "free space" are the free extents, reported as the file system reports
//! them (ext4 per block group, XFS per allocation group: no allocation crosses those).
//! btrfs does not answer it: its free space lives in per-block-group free-space trees.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::fd::AsRawFd;

/// `_IOWR('X', 59, struct fsmap_head)`: the head is 192 bytes.
const FS_IOC_GETFSMAP: libc::c_ulong = 0xC0C0_583B;
/// Owner of a free range: `FMR_OWNER(0, 1)`.
const FMR_OWN_FREE: u64 = 1;
/// Set on the last record of the whole map.
const FMR_OF_LAST: u32 = 0x20;
/// Records asked for per call.
const BATCH: usize = 1024;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct RawFsmap {
    device: u32,
    flags: u32,
    physical: u64,
    owner: u64,
    offset: u64,
    length: u64,
    reserved: [u64; 3],
}

#[repr(C)]
struct RawFsmapHead {
    iflags: u32,
    oflags: u32,
    count: u32,
    entries: u32,
    reserved: [u64; 6],
    keys: [RawFsmap; 2],
    recs: [RawFsmap; BATCH],
}

/// Free extents whose size in blocks lies in `[min_blocks, max_blocks]` (a power-of-two class).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FreeClass {
    pub min_blocks: u64,
    pub max_blocks: u64,
    pub extents: u64,
    pub blocks: u64,
    /// Share of all free blocks, in percent.
    pub pct: f64,
}

/// The free-space report of one file system.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FreeSpaceReport {
    /// The path asked about (the report covers its whole file system).
    pub path: String,
    pub fs_type: String,
    pub block_size: u64,
    /// Why there is no report (the file system does not list its free space), if so.
    pub unsupported: Option<String>,
    pub free_extents: u64,
    pub free_blocks: u64,
    pub free_bytes: u64,
    pub largest_blocks: u64,
    pub smallest_blocks: u64,
    pub avg_blocks: f64,
    /// Non-empty size classes, smallest first.
    pub classes: Vec<FreeClass>,
}

/// The free extents (physical byte offset, length in bytes) of the file system `f` is on.
pub fn free_extents(f: &File) -> std::io::Result<Vec<(u64, u64)>> {
    let mut head = Box::new(RawFsmapHead {
        iflags: 0,
        oflags: 0,
        count: BATCH as u32,
        entries: 0,
        reserved: [0; 6],
        keys: [RawFsmap::default(); 2],
        recs: [RawFsmap::default(); BATCH],
    });
    head.keys[1] = RawFsmap {
        device: u32::MAX,
        flags: u32::MAX,
        physical: u64::MAX,
        owner: u64::MAX,
        offset: u64::MAX,
        length: 0,
        reserved: [0; 3],
    };
    let mut out = Vec::new();
    // A file system answering without ever setting the last flag or moving forward must not
    // make this loop for ever: stop when the low key stops advancing.
    loop {
        head.count = BATCH as u32;
        head.entries = 0;
        // SAFETY: GETFSMAP reads the head and keys and fills at most `count` records of the
        // array that follows them, which RawFsmapHead provides.
        let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_GETFSMAP as _, &mut *head) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = (head.entries as usize).min(BATCH);
        if n == 0 {
            break;
        }
        for r in &head.recs[..n] {
            if r.owner == FMR_OWN_FREE && r.length > 0 {
                out.push((r.physical, r.length));
            }
        }
        let last = head.recs[n - 1];
        if last.flags & FMR_OF_LAST != 0 {
            break;
        }
        let k = head.keys[0];
        if (last.device, last.physical, last.length) == (k.device, k.physical, k.length) {
            break;
        }
        // The next call starts after the last record returned (the kernel adds its length).
        head.keys[0] = last;
    }
    Ok(out)
}

/// Count free extents of `block_size`-byte blocks into power-of-two classes.
pub fn summarise(extents_bytes: &[(u64, u64)], block_size: u64) -> FreeSpaceReport {
    let bs = block_size.max(1);
    let blocks: Vec<u64> = extents_bytes.iter().map(|&(_, len)| len / bs).collect();
    let free_blocks: u64 = blocks.iter().sum();
    let mut classes: Vec<FreeClass> = Vec::new();
    for &b in blocks.iter().filter(|&&b| b > 0) {
        let k = 63 - b.leading_zeros();
        let min = 1u64 << k;
        match classes.iter_mut().find(|c| c.min_blocks == min) {
            Some(c) => {
                c.extents += 1;
                c.blocks += b;
            }
            None => classes.push(FreeClass {
                min_blocks: min,
                max_blocks: min.saturating_mul(2) - 1,
                extents: 1,
                blocks: b,
                pct: 0.0,
            }),
        }
    }
    classes.sort_by_key(|c| c.min_blocks);
    for c in &mut classes {
        c.pct = if free_blocks > 0 {
            c.blocks as f64 * 100.0 / free_blocks as f64
        } else {
            0.0
        };
    }
    let counted = blocks.iter().filter(|&&b| b > 0).count() as u64;
    FreeSpaceReport {
        block_size: bs,
        free_extents: counted,
        free_blocks,
        free_bytes: free_blocks * bs,
        largest_blocks: blocks.iter().copied().max().unwrap_or(0),
        smallest_blocks: blocks.iter().copied().filter(|&b| b > 0).min().unwrap_or(0),
        avg_blocks: if counted > 0 {
            free_blocks as f64 / counted as f64
        } else {
            0.0
        },
        classes,
        ..Default::default()
    }
}

/// File-system type names by statfs magic, for the ones whose answer is explained.
pub(crate) fn fs_name(magic: u64) -> &'static str {
    match magic {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x6969 => "nfs",
        0x6573_5546 => "fuse",
        _ => "other",
    }
}

/// Why a file system of this type gives no free-space map.
fn unsupported_reason(fs: &str, e: &std::io::Error) -> String {
    match fs {
        "btrfs" => "btrfs does not implement FS_IOC_GETFSMAP: its free space is kept per block group in the free-space tree, which no ioctl lists (see `btrfs inspect-internal dump-tree -t free_space`)".into(),
        "tmpfs" => "tmpfs has no block allocation: there is no free-space map".into(),
        _ => format!("the file system ({fs}) does not answer FS_IOC_GETFSMAP ({e}); ext4 and XFS on Linux 4.12 and later do"),
    }
}

/// The free-space report of the file system holding `path`. A file system that does not list
/// its free space gives a report with `unsupported` set; other errors are errors.
pub fn report(path: &std::path::Path) -> anyhow::Result<FreeSpaceReport> {
    use anyhow::Context;
    use std::os::unix::fs::OpenOptionsExt;
    // The path itself (not followed if a link), or, for a link, a FIFO, a device or a file
    // that cannot be opened, the directory that holds it: any descriptor on the file
    // system answers for all of it.
    let open = |p: &std::path::Path| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(p)
    };
    let usable = |f: &File| f.metadata().is_ok_and(|m| m.is_dir() || m.is_file());
    let f = match open(path) {
        Ok(f) if usable(&f) => f,
        _ => {
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            open(parent).with_context(|| format!("opening {}", parent.display()))?
        }
    };
    let st = rustix::fs::fstatfs(&f).context("fstatfs")?;
    let fs = fs_name(st.f_type as u64);
    let mut r = match free_extents(&f) {
        Ok(ex) => summarise(&ex, st.f_bsize as u64),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOTTY) | Some(libc::EOPNOTSUPP) | Some(libc::EINVAL)
            ) =>
        {
            FreeSpaceReport {
                block_size: st.f_bsize as u64,
                unsupported: Some(unsupported_reason(fs, &e)),
                ..Default::default()
            }
        }
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            anyhow::bail!("FS_IOC_GETFSMAP on {}: {e} (run as root)", path.display())
        }
        Err(e) => return Err(e).with_context(|| format!("FS_IOC_GETFSMAP on {}", path.display())),
    };
    r.path = path.display().to_string();
    r.fs_type = fs.to_string();
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_layout_matches_the_kernel() {
        assert_eq!(std::mem::size_of::<RawFsmap>(), 64);
        // struct fsmap_head without its records: 192 bytes, the size in the ioctl number.
        assert_eq!(
            std::mem::size_of::<RawFsmapHead>() - BATCH * std::mem::size_of::<RawFsmap>(),
            192
        );
        assert_eq!((FS_IOC_GETFSMAP >> 16) & 0x3fff, 192);
    }

    #[test]
    fn classes_are_powers_of_two_in_blocks() {
        let bs = 4096;
        // 1, 1, 3, 4, 7 and 100 blocks.
        let ex: Vec<(u64, u64)> = [1u64, 1, 3, 4, 7, 100]
            .iter()
            .enumerate()
            .map(|(i, b)| ((i as u64) << 30, b * bs))
            .collect();
        let r = summarise(&ex, bs);
        assert_eq!(r.free_extents, 6);
        assert_eq!(r.free_blocks, 116);
        assert_eq!(r.free_bytes, 116 * bs);
        assert_eq!(r.largest_blocks, 100);
        assert_eq!(r.smallest_blocks, 1);
        let got: Vec<(u64, u64, u64, u64)> = r
            .classes
            .iter()
            .map(|c| (c.min_blocks, c.max_blocks, c.extents, c.blocks))
            .collect();
        assert_eq!(
            got,
            [(1, 1, 2, 2), (2, 3, 1, 3), (4, 7, 2, 11), (64, 127, 1, 100)]
        );
        let pct: f64 = r.classes.iter().map(|c| c.pct).sum();
        assert!((pct - 100.0).abs() < 1e-9);
        assert!((r.avg_blocks - 116.0 / 6.0).abs() < 1e-9);
        assert_eq!(summarise(&[], bs).classes, vec![]);
    }
}
