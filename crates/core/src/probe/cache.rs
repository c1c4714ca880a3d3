//! How much of a file the page cache holds, and how much of it is allocated on disk: the
//! evidence behind `explain` ("the reads measured the page cache", "holes read as zeros").
//!
//! Residency comes from `cachestat(2)` (Linux 6.5) where the kernel has it: one call, no
//! mapping. Elsewhere the file is mapped and `mincore(2)` reports page by page; mapping does not
//! fault pages in, so neither way changes what it measures.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

/// One file's size, allocation and page-cache residency at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct FileCache {
    pub size_bytes: u64,
    /// Bytes the file system allocated (st_blocks x 512).
    pub allocated_bytes: u64,
    /// Bytes in the page cache (None: neither cachestat nor mincore answered).
    pub cached_bytes: Option<u64>,
}

/// `struct cachestat_range` and `struct cachestat` of the kernel's UAPI.
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

const SYS_CACHESTAT: libc::c_long = 451;

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Pages of the whole file in the page cache, by cachestat.
fn by_cachestat(file: &File) -> Option<u64> {
    if !cfg!(target_arch = "x86_64") && !cfg!(target_arch = "aarch64") {
        return None;
    }
    let range = CachestatRange { off: 0, len: 0 };
    let mut cs = Cachestat::default();
    // SAFETY: cachestat reads one range struct and writes one cachestat struct, both ours and
    // laid out as the UAPI says; the descriptor is open for the call.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd() as libc::c_long,
            &range as *const CachestatRange,
            &mut cs as *mut Cachestat,
            0 as libc::c_long,
        )
    };
    (rc == 0).then_some(cs.nr_cache)
}

/// Pages of the whole file in the page cache, by mincore over a read-only mapping.
fn by_mincore(file: &File, size: u64) -> Option<u64> {
    if size == 0 {
        return Some(0);
    }
    // SAFETY: a read-only shared mapping of a file we hold open; it is never read through
    // (only handed to mincore), so a concurrent truncation cannot fault us.
    let map = unsafe { memmap2::MmapOptions::new().len(size as usize).map(file) }.ok()?;
    let pages = size.div_ceil(page_size()) as usize;
    let mut vec = vec![0u8; pages];
    // SAFETY: the mapping is `size` bytes long and `vec` has one byte per page of it.
    let rc = unsafe {
        libc::mincore(
            map.as_ptr() as *mut libc::c_void,
            size as usize,
            vec.as_mut_ptr(),
        )
    };
    (rc == 0).then(|| vec.iter().filter(|b| **b & 1 != 0).count() as u64)
}

/// Size, allocation and residency of an open regular file (None for anything else).
pub(crate) fn of_file(file: &File) -> Option<FileCache> {
    let m = file.metadata().ok()?;
    if !m.is_file() {
        return None;
    }
    let size = m.len();
    let pages = by_cachestat(file).or_else(|| by_mincore(file, size));
    Some(FileCache {
        size_bytes: size,
        allocated_bytes: m.blocks() * 512,
        cached_bytes: pages.map(|p| (p * page_size()).min(size)),
    })
}

/// MemTotal of /proc/meminfo, in bytes.
pub(crate) fn mem_total_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// How long dirty page-cache data may wait before write-back (vm.dirty_expire_centisecs).
pub(crate) fn dirty_expire_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/sys/vm/dirty_expire_centisecs").ok()?;
    s.trim().parse::<f64>().ok().map(|c| c / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_written_file_is_cached_and_an_evicted_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        let c = of_file(&f).unwrap();
        assert_eq!(c.size_bytes, 1 << 20);
        assert!(c.allocated_bytes >= 1 << 20, "{c:?}");
        assert_eq!(c.cached_bytes, Some(1 << 20), "{c:?}");
        assert_eq!(by_mincore(&f, 1 << 20), Some((1 << 20) / page_size()));
        // Clean pages go with DONTNEED (tmpfs keeps them: its pages are the file).
        // SAFETY: fadvise on a descriptor we own.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let after = of_file(&f).unwrap();
        let tmpfs = rustix::fs::fstatfs(&f).unwrap().f_type as i64 == libc::TMPFS_MAGIC;
        if !tmpfs {
            assert!(after.cached_bytes.unwrap() < 1 << 19, "{after:?}");
            // Both ways agree on the same file.
            assert_eq!(
                by_mincore(&f, 1 << 20),
                by_cachestat(&f).or(by_mincore(&f, 1 << 20))
            );
        }
    }

    #[test]
    fn a_sparse_file_has_little_allocated() {
        let dir = tempfile::tempdir().unwrap();
        let f = File::create(dir.path().join("s")).unwrap();
        f.set_len(64 << 20).unwrap();
        let c = of_file(&f).unwrap();
        assert_eq!((c.size_bytes, c.allocated_bytes), (64 << 20, 0));
        assert!(mem_total_bytes().unwrap() > 1 << 20);
        assert!(dirty_expire_s().unwrap() > 0.0);
    }
}
