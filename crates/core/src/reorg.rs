//! Online extent reorganisation (`fsbench frag --reorg FILE...`), like `fsadm -e`: each file
//! is rewritten into fewer extents by the file system's own online mechanism, while it stays
//! in place (same inode, same name, same contents).
//!
//! - ext4: `EXT4_IOC_MOVE_EXT`. A donor file is preallocated in one go (as contiguous as free
//!   space allows), then the kernel moves the file's data into the donor's blocks and gives
//!   the old blocks to the donor.
//! - XFS: `XFS_IOC_SWAPEXT`, as `xfs_fsr` does. The donor is preallocated, the data copied
//!   into it and synced, and the kernel swaps the two files' extents only if the file has not
//!   changed since it was looked at (its change and modification times are checked).
//! - btrfs: `BTRFS_IOC_DEFRAG_RANGE` over the whole file, written out at once.
//!
//! The donor has no name (`O_TMPFILE` in the file's directory, so it is on the same file
//! system and vanishes when closed, also after a crash); where `O_TMPFILE` is refused it is
//! created `O_EXCL` under a fresh name and unlinked at once, after checking the name still
//! holds it. A donor that would not have fewer extents than the file is not used: the file is
//! left as it is.
//!
//! Only files fsbench created (they carry its `user.fsbench` mark) are touched, unless the
//! caller forces it; every check and every change goes through the descriptor opened first.

use crate::error::UsageError;
use crate::probe::fiemap;
use crate::probe::freefrag::fs_name;
use crate::usage;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// `_IOWR('f', 15, struct move_extent)` (40 bytes).
const EXT4_IOC_MOVE_EXT: libc::c_ulong = 0xC028_660F;
/// `_IOWR('X', 109, struct xfs_swapext)` (192 bytes).
const XFS_IOC_SWAPEXT: libc::c_ulong = 0xC0C0_586D;
/// `_IOW(0x94, 16, struct btrfs_ioctl_defrag_range_args)` (48 bytes).
const BTRFS_IOC_DEFRAG_RANGE: libc::c_ulong = 0x4030_9410;
/// Write the defragmented range out before returning.
const BTRFS_DEFRAG_RANGE_START_IO: u64 = 2;
/// btrfs's largest data extent: every extent smaller than this is a candidate.
const BTRFS_MAX_EXTENT: u32 = 128 << 20;
/// Chunk of the data copy into an XFS donor.
const COPY_CHUNK: usize = 1 << 20;

#[repr(C)]
#[derive(Default)]
struct MoveExtent {
    reserved: u32,
    donor_fd: u32,
    orig_start: u64,
    donor_start: u64,
    len: u64,
    moved_len: u64,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct XfsBstime {
    sec: i64,
    nsec: i32,
    pad: i32,
}

/// `struct xfs_bstat`: only the times are read by the kernel's swap check.
#[repr(C)]
#[derive(Default)]
struct XfsBstat {
    ino: u64,
    mode: u16,
    nlink: u16,
    uid: u32,
    gid: u32,
    rdev: u32,
    blksize: i32,
    pad0: u32,
    size: i64,
    atime: XfsBstime,
    mtime: XfsBstime,
    ctime: XfsBstime,
    blocks: i64,
    xflags: u32,
    extsize: i32,
    extents: i32,
    gen: u32,
    projid_lo: u16,
    forkoff: u16,
    projid_hi: u16,
    sick: u16,
    checked: u16,
    pad: [u8; 2],
    cowextsize: u32,
    dmevmask: u32,
    dmstate: u16,
    aextents: u16,
}

#[repr(C)]
#[derive(Default)]
struct XfsSwapext {
    version: i64,
    fdtarget: i64,
    fdtmp: i64,
    offset: i64,
    length: i64,
    pad: [u8; 16],
    stat: XfsBstat,
}

#[repr(C)]
#[derive(Default)]
struct BtrfsDefragRange {
    start: u64,
    len: u64,
    flags: u64,
    extent_thresh: u32,
    compress_type: u32,
    unused: [u32; 4],
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReorgOutcome {
    pub path: String,
    pub(crate) fs_type: String,
    /// The mechanism used (`EXT4_IOC_MOVE_EXT`, `XFS_IOC_SWAPEXT`, `BTRFS_IOC_DEFRAG_RANGE`).
    pub method: String,
    pub size_bytes: u64,
    pub extents_before: u64,
    pub extents_after: u64,
    /// Why the file was left as it was, when it was.
    pub note: Option<String>,
    /// Why reorganising failed, when it did (the file is then unchanged).
    pub error: Option<String>,
}

/// The outcome of `fsbench frag --reorg`: one entry per file, in the order named.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReorgReport {
    pub files: Vec<ReorgOutcome>,
}

/// A file opened and checked for reorganisation.
pub struct Target {
    pub(crate) path: PathBuf,
    file: File,
}

/// Open `path` for reorganisation: read-write, without following a symbolic link, without
/// truncating; it must be a regular file and, unless `force`, carry fsbench's mark. Every
/// refusal is one line for the user.
pub fn open_checked(path: &Path, force: bool) -> Result<Target, UsageError> {
    // First a descriptor that opens nothing (O_PATH): a device or FIFO named here is never
    // opened (a tape rewinds on close). Only a regular file is then opened read-write,
    // through that descriptor, so it is the very file that was checked.
    let at = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENOENT) => usage!("frag --reorg: {} does not exist", path.display()),
            _ => usage!("frag --reorg: cannot open {}: {e}", path.display()),
        })?;
    let m = at
        .metadata()
        .map_err(|e| usage!("frag --reorg: cannot examine {}: {e}", path.display()))?;
    let what =
        |kind: &str, advice: &str| usage!("frag --reorg: {} is {kind}: {advice}", path.display());
    if m.file_type().is_symlink() {
        return Err(what("a symbolic link", "name the file itself"));
    }
    if m.is_dir() {
        return Err(what("a directory", "name regular files"));
    }
    if !m.is_file() {
        return Err(what("not a regular file", "name regular files"));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{}", at.as_raw_fd()))
        .map_err(|e| {
            usage!(
                "frag --reorg: cannot open {} for writing: {e}",
                path.display()
            )
        })?;
    let n = file
        .metadata()
        .map_err(|e| usage!("frag --reorg: cannot examine {}: {e}", path.display()))?;
    if (n.dev(), n.ino()) != (m.dev(), m.ino()) || !n.is_file() {
        return Err(usage!(
            "frag --reorg: {} changed while it was being opened",
            path.display()
        ));
    }
    if !force && !crate::safety::fd_is_marked(&file) {
        return Err(usage!(
            "frag --reorg: {} was not created by fsbench (it has no user.fsbench mark): add --force to reorganise it anyway",
            path.display()
        ));
    }
    Ok(Target {
        path: path.to_path_buf(),
        file,
    })
}

/// Reorganise one checked file with its file system's mechanism and count its extents
/// before and after. A failure is reported in the outcome (the file is then unchanged).
pub fn reorganise(t: &Target) -> ReorgOutcome {
    let f = &t.file;
    let magic = rustix::fs::fstatfs(f).map(|s| s.f_type as u64).unwrap_or(0);
    let fs = fs_name(magic);
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let count = |f: &File| fiemap::extents(f).map(|e| e.len() as u64);
    let mut out = ReorgOutcome {
        path: t.path.display().to_string(),
        fs_type: fs.to_string(),
        method: match fs {
            "ext4" => "EXT4_IOC_MOVE_EXT",
            "xfs" => "XFS_IOC_SWAPEXT",
            "btrfs" => "BTRFS_IOC_DEFRAG_RANGE",
            _ => "none",
        }
        .into(),
        size_bytes: size,
        extents_before: 0,
        extents_after: 0,
        note: None,
        error: None,
    };
    // Extents of delayed allocations exist only once written back.
    let _ = f.sync_data();
    match count(f) {
        Ok(n) => out.extents_before = n,
        Err(e) => {
            out.error = Some(format!("FIEMAP: {e:#}"));
            return out;
        }
    }
    out.extents_after = out.extents_before;
    if out.extents_before <= 1 {
        out.note = Some("already one extent or less".into());
        return out;
    }
    let done = match fs {
        "ext4" => move_ext(t, size, out.extents_before),
        "xfs" => swap_ext(t, size, out.extents_before),
        "btrfs" => defrag_range(f),
        _ => Err(anyhow::anyhow!(
            "no online reorganisation for this file system ({fs}): fsbench knows ext4, XFS and btrfs"
        )),
    };
    match done {
        Ok(Some(note)) => out.note = Some(note),
        Ok(None) => {}
        Err(e) => out.error = Some(format!("{e:#}")),
    }
    match count(f) {
        Ok(n) => out.extents_after = n,
        Err(e) => out.error = Some(format!("FIEMAP after: {e:#}")),
    }
    out
}

/// A donor file on the same file system as `t`, in its directory, with no name left.
fn donor_for(t: &Target) -> anyhow::Result<File> {
    use anyhow::Context;
    let dir = t
        .path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir);
    let donor = match tmp {
        Ok(f) => f,
        Err(_) => named_donor(dir).context("creating the donor file")?,
    };
    let (a, b) = (t.file.metadata()?, donor.metadata()?);
    if a.dev() != b.dev() {
        anyhow::bail!(
            "the donor file in {} is on another file system than the file",
            dir.display()
        );
    }
    Ok(donor)
}

/// A donor created `O_EXCL` under a fresh name in `dir`, unlinked at once (only while the
/// name still holds the file just created).
fn named_donor(dir: &Path) -> std::io::Result<File> {
    for k in 0..100u32 {
        let name = dir.join(format!(".fsbench-reorg-{}-{k}", std::process::id()));
        let f = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&name)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        let ours = f.metadata()?;
        let there = std::fs::symlink_metadata(&name)?;
        if (ours.dev(), ours.ino()) == (there.dev(), there.ino()) {
            std::fs::remove_file(&name)?;
        }
        return Ok(f);
    }
    Err(std::io::Error::other("no free donor name"))
}

/// Preallocate `len` bytes of the donor in one request; its extent count.
fn preallocate(donor: &File, len: u64) -> anyhow::Result<u64> {
    rustix::fs::fallocate(donor, rustix::fs::FallocateFlags::empty(), 0, len)
        .map_err(|e| anyhow::anyhow!("fallocate of the donor ({len} bytes): {e}"))?;
    Ok(fiemap::extents(donor)?.len() as u64)
}

/// The note for a donor that would not help.
fn no_gain(donor: u64, before: u64) -> Option<String> {
    (donor >= before).then(|| {
        format!(
            "left as it is: free space gives {donor} extent(s), no fewer than the file's {before}"
        )
    })
}

/// ext4: move the file's blocks into a preallocated donor with EXT4_IOC_MOVE_EXT.
fn move_ext(t: &Target, size: u64, before: u64) -> anyhow::Result<Option<String>> {
    let bs = rustix::fs::fstatfs(&t.file)?.f_bsize as u64;
    let blocks = size.div_ceil(bs.max(1));
    let donor = donor_for(t)?;
    let d = preallocate(&donor, blocks * bs)?;
    if let Some(n) = no_gain(d, before) {
        return Ok(Some(n));
    }
    let mut start = 0u64;
    while start < blocks {
        let mut me = MoveExtent {
            donor_fd: donor.as_raw_fd() as u32,
            orig_start: start,
            donor_start: start,
            len: blocks - start,
            ..Default::default()
        };
        // SAFETY: EXT4_IOC_MOVE_EXT reads and updates the struct move_extent it is given.
        let rc = unsafe { libc::ioctl(t.file.as_raw_fd(), EXT4_IOC_MOVE_EXT as _, &mut me) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            anyhow::bail!("EXT4_IOC_MOVE_EXT at block {start}: {e}");
        }
        if me.moved_len == 0 {
            break;
        }
        start += me.moved_len;
    }
    Ok(None)
}

/// XFS: copy the file into a preallocated donor and swap their extents with XFS_IOC_SWAPEXT,
/// which refuses if the file changed since `before_stat` was taken.
fn swap_ext(t: &Target, size: u64, before: u64) -> anyhow::Result<Option<String>> {
    let f = &t.file;
    let st = rustix::fs::fstat(f)?;
    let donor = donor_for(t)?;
    let d = preallocate(&donor, size)?;
    if let Some(n) = no_gain(d, before) {
        return Ok(Some(n));
    }
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut off = 0u64;
    while off < size {
        let want = ((size - off) as usize).min(COPY_CHUNK);
        let n = f.read_at(&mut buf[..want], off)?;
        if n == 0 {
            anyhow::bail!("the file shrank while it was copied");
        }
        donor.write_all_at(&buf[..n], off)?;
        off += n as u64;
    }
    donor.sync_all()?;
    f.sync_all()?;
    let mut sx = XfsSwapext {
        fdtarget: f.as_raw_fd() as i64,
        fdtmp: donor.as_raw_fd() as i64,
        length: size as i64,
        ..Default::default()
    };
    sx.stat.mtime = XfsBstime {
        sec: st.st_mtime as i64,
        nsec: st.st_mtime_nsec as i32,
        pad: 0,
    };
    sx.stat.ctime = XfsBstime {
        sec: st.st_ctime as i64,
        nsec: st.st_ctime_nsec as i32,
        pad: 0,
    };
    sx.stat.ino = st.st_ino as u64;
    sx.stat.size = size as i64;
    // SAFETY: XFS_IOC_SWAPEXT reads the struct xfs_swapext it is given; both descriptors
    // are open for the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), XFS_IOC_SWAPEXT as _, &mut sx) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EBUSY) {
            anyhow::bail!(
                "XFS_IOC_SWAPEXT: the file changed while it was reorganised: left as it was"
            );
        }
        if e.raw_os_error() == Some(libc::EINVAL) {
            // The kernel's format check (its log names the inode): without the reverse-map
            // btree, XFS exchanges two extent maps only when each fits the other inode's
            // form, so a file whose few extents sit in a btree (its extended attributes
            // leave less room inline) cannot take a donor's inline map.
            anyhow::bail!(
                "XFS_IOC_SWAPEXT: XFS refused to exchange the extent maps (their formats are incompatible: a file with a few more extents than fit inline beside its attributes); left as it was"
            );
        }
        anyhow::bail!("XFS_IOC_SWAPEXT: {e}");
    }
    Ok(None)
}

/// btrfs: defragment the whole file and write it out.
fn defrag_range(f: &File) -> anyhow::Result<Option<String>> {
    let mut a = BtrfsDefragRange {
        start: 0,
        len: u64::MAX,
        flags: BTRFS_DEFRAG_RANGE_START_IO,
        extent_thresh: BTRFS_MAX_EXTENT,
        ..Default::default()
    };
    // SAFETY: BTRFS_IOC_DEFRAG_RANGE reads the struct it is given.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), BTRFS_IOC_DEFRAG_RANGE as _, &mut a) };
    if rc != 0 {
        anyhow::bail!(
            "BTRFS_IOC_DEFRAG_RANGE: {}",
            std::io::Error::last_os_error()
        );
    }
    f.sync_all()?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_match_the_kernel_sizes_in_the_ioctl_numbers() {
        let size_of_nr = |nr: libc::c_ulong| ((nr >> 16) & 0x3fff) as usize;
        assert_eq!(std::mem::size_of::<MoveExtent>(), 40);
        assert_eq!(size_of_nr(EXT4_IOC_MOVE_EXT), 40);
        assert_eq!(std::mem::size_of::<XfsBstat>(), 136);
        assert_eq!(std::mem::size_of::<XfsSwapext>(), 192);
        assert_eq!(size_of_nr(XFS_IOC_SWAPEXT), 192);
        assert_eq!(std::mem::size_of::<BtrfsDefragRange>(), 48);
        assert_eq!(size_of_nr(BTRFS_IOC_DEFRAG_RANGE), 48);
    }

    #[test]
    fn a_file_fsbench_did_not_create_is_refused_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("theirs");
        std::fs::write(&p, b"data").unwrap();
        let e = open_checked(&p, false).err().expect("refused");
        assert!(e.0.contains("--force"), "{}", e.0);
        assert!(!e.0.contains('\n'));
        assert!(open_checked(&p, true).is_ok());
        let l = dir.path().join("link");
        std::os::unix::fs::symlink(&p, &l).unwrap();
        assert!(open_checked(&l, true)
            .err()
            .unwrap()
            .0
            .contains("symbolic link"));
        assert!(open_checked(dir.path(), true).is_err());
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_checked(&fifo, true).err().unwrap();
        assert!(e.0.contains("not a regular file"), "{}", e.0);
        assert_eq!(std::fs::read(&p).unwrap(), b"data");
    }
}
