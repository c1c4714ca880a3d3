//! Never lose data: fsbench marks the files it creates, refuses to write to files it did not
//! create, and refuses block devices that hold a file-system or partition signature or are in
//! use, unless the user says `--force`.

use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// Extended attribute set on every file fsbench creates, so a kept file can be reused later.
pub const MARK_XATTR: &str = "user.fsbench";

fn cpath(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_bytes()).ok()
}

/// Mark a file as created by fsbench. Returns false where the file system has no user xattrs.
pub fn mark_created(path: &Path) -> bool {
    let Some(c) = cpath(path) else { return false };
    let name = CString::new(MARK_XATTR).expect("constant has no NUL");
    let value = b"created";
    // SAFETY: valid NUL-terminated strings and a value buffer of the given length.
    unsafe {
        libc::setxattr(
            c.as_ptr(),
            name.as_ptr(),
            value.as_ptr() as *const libc::c_void,
            value.len(),
            0,
        ) == 0
    }
}

/// Was this file created (and marked) by fsbench?
pub fn is_marked(path: &Path) -> bool {
    let Some(c) = cpath(path) else { return false };
    let name = CString::new(MARK_XATTR).expect("constant has no NUL");
    let mut buf = [0u8; 16];
    // SAFETY: buffer and its length match; strings are NUL-terminated.
    let n = unsafe {
        libc::getxattr(
            c.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr() as *mut libc::c_void,
            buf.len(),
        )
    };
    n > 0 && &buf[..n as usize] == b"created"
}

/// Signatures checked at fixed offsets: (offset, magic bytes, what it is).
const SIGNATURES: &[(u64, &[u8], &str)] = &[
    (0x438, &[0x53, 0xEF], "ext2/3/4 file system"),
    (0, b"XFSB", "XFS file system"),
    (0x10040, b"_BHRfS_M", "btrfs file system"),
    (512, b"EFI PART", "GPT partition table"),
    (4086, b"SWAPSPACE2", "swap area"),
    (4086, b"SWAP-SPACE", "swap area"),
    (0, b"LUKS\xba\xbe", "LUKS encrypted volume"),
    (0x8001, b"CD001", "ISO 9660 file system"),
    (3, b"NTFS    ", "NTFS file system"),
    (0x52, b"FAT32   ", "FAT32 file system"),
    (0x36, b"FAT16   ", "FAT file system"),
    (0x36, b"FAT12   ", "FAT file system"),
    (0x218, b"LVM2 001", "LVM physical volume"),
    (0x1000, b"\xa9\x2b\x4e\xfc", "Linux md RAID member"),
    (0x10000, b"ReIsEr", "ReiserFS file system"),
    (0x400, b"\x10\x20\xF5\xF2", "F2FS file system"),
];

/// Look for a known signature at the start of a device (or file). Returns what was found.
pub fn find_signature(path: &Path) -> std::io::Result<Option<String>> {
    let mut f = std::fs::File::open(path)?;
    let mut head = vec![0u8; 0x10100];
    let mut got = 0;
    while got < head.len() {
        let n = f.read(&mut head[got..])?;
        if n == 0 {
            break;
        }
        got += n;
    }
    head.truncate(got);
    for (off, magic, what) in SIGNATURES {
        let o = *off as usize;
        if head.len() >= o + magic.len() && &head[o..o + magic.len()] == *magic {
            return Ok(Some(what.to_string()));
        }
    }
    // An MBR: boot signature plus at least one non-empty partition entry.
    if head.len() >= 512 && head[510] == 0x55 && head[511] == 0xAA {
        let has_part = (0..4).any(|i| head[446 + i * 16 + 4] != 0);
        if has_part {
            return Ok(Some("MBR partition table".into()));
        }
    }
    Ok(None)
}

/// Is a block device in use: mounted, used as swap, held by another device (dm, md, loop),
/// or does it have partitions?
pub fn device_in_use(path: &Path) -> Option<String> {
    let canon = std::fs::canonicalize(path).ok()?;
    let meta = std::fs::metadata(&canon).ok()?;
    let rdev = std::os::unix::fs::MetadataExt::rdev(&meta);
    let (maj, min) = (libc::major(rdev), libc::minor(rdev));
    if let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") {
        for line in mounts.lines() {
            let mut it = line.split_whitespace();
            let dev = it.nth(2);
            let mnt = it.nth(1);
            if dev == Some(&format!("{maj}:{min}")) {
                return Some(format!("it is mounted on {}", mnt.unwrap_or("?")));
            }
        }
    }
    if let Ok(swaps) = std::fs::read_to_string("/proc/swaps") {
        let c = canon.to_string_lossy();
        if swaps
            .lines()
            .skip(1)
            .any(|l| l.split_whitespace().next() == Some(&*c))
        {
            return Some("it is in use as swap".into());
        }
    }
    let sys = format!("/sys/dev/block/{maj}:{min}");
    if let Ok(rd) = std::fs::read_dir(format!("{sys}/holders")) {
        if let Some(h) = rd.flatten().next() {
            return Some(format!("it is held by {}", h.file_name().to_string_lossy()));
        }
    }
    // Partitions of this device appear as subdirectories with a `partition` file.
    if let Ok(rd) = std::fs::read_dir(&sys) {
        for e in rd.flatten() {
            if e.path().join("partition").exists() {
                return Some(format!(
                    "it has partition {}",
                    e.file_name().to_string_lossy()
                ));
            }
        }
    }
    None
}

/// Why writing to this block device would destroy data, if it would.
pub fn block_device_hazard(path: &Path) -> Option<String> {
    if let Some(why) = device_in_use(path) {
        return Some(why);
    }
    match find_signature(path) {
        Ok(Some(what)) => Some(format!("it holds a {what}")),
        Ok(None) => None,
        Err(e) => Some(format!(
            "its first blocks cannot be read to check for data ({e})"
        )),
    }
}

pub fn is_block_device(path: &Path) -> bool {
    std::fs::metadata(path)
        .map(|m| m.file_type().is_block_device())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

    #[test]
    fn signatures_found_in_image() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        let mut f = std::fs::File::create(&p).unwrap();
        f.set_len(1 << 20).unwrap();
        assert_eq!(find_signature(&p).unwrap(), None);
        f.seek(SeekFrom::Start(0x438)).unwrap();
        f.write_all(&[0x53, 0xEF]).unwrap();
        f.sync_all().unwrap();
        assert_eq!(find_signature(&p).unwrap().unwrap(), "ext2/3/4 file system");
        let p2 = dir.path().join("img2");
        let mut g = std::fs::File::create(&p2).unwrap();
        g.set_len(4096).unwrap();
        g.seek(SeekFrom::Start(446 + 4)).unwrap();
        g.write_all(&[0x83]).unwrap();
        g.seek(SeekFrom::Start(510)).unwrap();
        g.write_all(&[0x55, 0xAA]).unwrap();
        assert_eq!(find_signature(&p2).unwrap().unwrap(), "MBR partition table");
    }

    #[test]
    fn marking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"x").unwrap();
        assert!(!is_marked(&p));
        if mark_created(&p) {
            assert!(is_marked(&p));
        }
    }
}
