//! Never lose data: fsbench marks the files it creates, refuses to write to files it did not
//! create, and refuses block devices that hold a file-system or partition signature or are in
//! use, unless the user says `--force`.

use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// Extended attribute set on every file fsbench creates, so a kept file can be reused later.
pub(crate) const MARK_XATTR: &str = "user.fsbench";

fn cpath(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_bytes()).ok()
}

/// Mark a file as created by fsbench. Returns false where the file system has no user xattrs.
pub fn mark_created(path: &Path) -> bool {
    let Some(c) = cpath(path) else { return false };
    let name = CString::new(MARK_XATTR).expect("constant has no NUL");
    let value = b"created";
    crate::sys::setxattr(&c, &name, value).is_ok()
}

/// Was this file created (and marked) by fsbench?
pub fn is_marked(path: &Path) -> bool {
    let Some(c) = cpath(path) else { return false };
    let name = CString::new(MARK_XATTR).expect("constant has no NUL");
    let mut buf = [0u8; 16];
    let n = crate::sys::getxattr(&c, &name, &mut buf).unwrap_or(0);
    n > 0 && &buf[..n] == b"created"
}

/// The `user.fsbench` mark of an open file: `Ok(Some(value))`, `Ok(None)` when it has none,
/// `Err` when the attribute cannot be read (EOPNOTSUPP: a file system without user xattrs).
/// Through the descriptor, so a link swapped in after the open cannot answer for it. The one
/// place that reads the mark; every value fsbench sets fits in 64 bytes.
pub fn fd_get_mark(f: impl std::os::fd::AsFd) -> std::io::Result<Option<Vec<u8>>> {
    use std::os::fd::AsRawFd;
    let f = f.as_fd();
    let name = CString::new(MARK_XATTR).expect("constant has no NUL");
    let mut buf = [0u8; 64];
    let e = match crate::sys::fgetxattr(f.as_raw_fd(), &name, &mut buf) {
        Ok(n) => return Ok(Some(buf[..n].to_vec())),
        Err(e) => e,
    };
    match e.raw_os_error() {
        Some(libc::ENODATA) | Some(libc::ERANGE) => Ok(None),
        _ => Err(e),
    }
}

/// Set the `user.fsbench` mark of an open file to `value`; false where the file system has
/// no user xattrs. The one place that writes the mark.
pub fn fd_set_mark(f: impl std::os::fd::AsFd, value: &[u8]) -> bool {
    use std::os::fd::AsRawFd;
    let f = f.as_fd();
    let name = CString::new(MARK_XATTR).expect("constant has no NUL");
    crate::sys::fsetxattr(f.as_raw_fd(), &name, value).is_ok()
}

/// Does this open file carry fsbench's `created` mark?
pub(crate) fn fd_is_marked(f: impl std::os::fd::AsFd) -> bool {
    matches!(fd_get_mark(f), Ok(Some(v)) if v == b"created")
}

/// Signatures checked at fixed offsets: (offset, magic bytes, what it is).
const SIGNATURES: &[(u64, &[u8], &str)] = &[
    (0x438, &[0x53, 0xEF], "ext2/3/4 file system"),
    (0, b"XFSB", "XFS file system"),
    (0x10040, b"_BHRfS_M", "btrfs file system"),
    (512, b"EFI PART", "GPT partition table"),
    // On a disk of 4 KiB sectors the primary GPT header is at LBA 1 = 4 KiB.
    (4096, b"EFI PART", "GPT partition table"),
    (4086, b"SWAPSPACE2", "swap area"),
    (4086, b"SWAP-SPACE", "swap area"),
    (0, b"LUKS\xba\xbe", "LUKS encrypted volume"),
    (0x8001, b"CD001", "ISO 9660 file system"),
    (3, b"NTFS    ", "NTFS file system"),
    (0x52, b"FAT32   ", "FAT32 file system"),
    (0x36, b"FAT16   ", "FAT file system"),
    (0x36, b"FAT12   ", "FAT file system"),
    (0x218, b"LVM2 001", "LVM physical volume"),
    // md magic 0xa92b4efc is stored little-endian: 1.2 at 4 KiB, 1.1 at the start (0.90 and
    // 1.0 live at the end of the device, see `tail_signature`).
    (
        0x1000,
        b"\xfc\x4e\x2b\xa9",
        "Linux md RAID member (1.2 superblock)",
    ),
    (
        0,
        b"\xfc\x4e\x2b\xa9",
        "Linux md RAID member (1.1 superblock)",
    ),
    (0, b"\xce\xfa\xad\x1b", "BFS file system"),
    (0, b"\x45\x3d\xcd\x28", "cramfs file system"),
    (0, b"\x28\xcd\x3d\x45", "cramfs file system"),
    (16, b"Compressed ROMFS", "cramfs file system"),
    (512 + 16, b"Compressed ROMFS", "cramfs file system"),
    (0x10000, b"ReIsEr", "ReiserFS file system"),
    (0x400, b"\x10\x20\xF5\xF2", "F2FS file system"),
];

fn le16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}

/// A minix superblock at 1 KiB: one of the v1/v2 magics at 0x410 (v3 at 0x418) and sane
/// bitmap sizes, so two random bytes alone do not count.
fn minix_signature(head: &[u8]) -> Option<&'static str> {
    if head.len() < 0x420 {
        return None;
    }
    let sb = &head[0x400..];
    if matches!(le16(sb, 16), 0x137F | 0x138F | 0x2468 | 0x2478)
        && le16(sb, 0) > 0
        && le16(sb, 4) > 0
        && le16(sb, 6) > 0
        && le16(sb, 10) == 0
    {
        return Some("minix file system");
    }
    if le16(sb, 24) == 0x4d5a && le16(sb, 6) > 0 && le16(sb, 8) > 0 && le16(sb, 12) == 0 {
        return Some("minix file system (v3)");
    }
    None
}

/// md RAID superblocks kept at the end of a device of `size` bytes: 0.90 in the last
/// 64 KiB-aligned 64 KiB block, 1.0 at 8 KiB from the end rounded down to 4 KiB.
fn tail_signature(f: &std::fs::File, size: u64) -> std::io::Result<Option<String>> {
    use std::os::unix::fs::FileExt;
    const MD: [u8; 4] = [0xfc, 0x4e, 0x2b, 0xa9];
    let mut spots = Vec::new();
    if size >= 0x20000 {
        spots.push(((size & !0xffff) - 0x10000, "0.90"));
    }
    if size >= 0x3000 {
        spots.push(((size - 0x2000) & !0xfff, "1.0"));
    }
    for (off, version) in spots {
        let mut m = [0u8; 4];
        f.read_exact_at(&mut m, off)?;
        if m == MD {
            return Ok(Some(format!("Linux md RAID member ({version} superblock)")));
        }
    }
    backup_gpt(f, size)
}

/// The backup GPT header, kept in the last LBA of the disk: it survives when the primary
/// (LBA 1) was wiped, and `gdisk`/`sgdisk` rebuild the whole table from it, so a device
/// holding only it still holds a partition table. Looked for in the last sector of 512
/// bytes and of 4 KiB.
fn backup_gpt(f: &std::fs::File, size: u64) -> std::io::Result<Option<String>> {
    use std::os::unix::fs::FileExt;
    for sector in [512u64, 4096] {
        if size < 2 * sector {
            continue;
        }
        let mut magic = [0u8; 8];
        f.read_exact_at(&mut magic, size - sector)?;
        if &magic == b"EFI PART" {
            return Ok(Some(
                "GPT partition table (backup header in the last sector; the primary is gone)"
                    .into(),
            ));
        }
    }
    Ok(None)
}

/// Look for a known signature at the start and at the end of a device (or file): the
/// built-in table, used beside `blkid -p` (and alone where blkid is missing). Returns what
/// was found.
#[cfg(test)]
pub(crate) fn find_signature(path: &Path) -> std::io::Result<Option<String>> {
    let f = std::fs::File::open(path)?;
    find_signature_fd(&f)
}

/// [`find_signature`] through an open descriptor: the head and the tail are read with
/// pread on `f`, so what is checked is what was opened, whatever the path names now.
pub(crate) fn find_signature_fd(f: &std::fs::File) -> std::io::Result<Option<String>> {
    use std::io::{Seek, SeekFrom};
    use std::os::unix::fs::FileExt;
    let mut head = vec![0u8; 0x10100];
    let mut got = 0;
    while got < head.len() {
        let n = f.read_at(&mut head[got..], got as u64)?;
        if n == 0 {
            break;
        }
        got += n;
    }
    head.truncate(got);
    if let Some(what) = minix_signature(&head) {
        return Ok(Some(what.into()));
    }
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
    // The size through the descriptor (seeking a shared offset is harmless: every read here
    // and in the engines is positional).
    let mut g = f;
    let size = g.seek(SeekFrom::End(0))?;
    tail_signature(f, size)
}

/// What `blkid -p` (the low-level probe users trust) finds on a device: `Ok(Some(..))` a
/// file system, RAID member or partition table; `Ok(None)` nothing (exit 2); `Err` when
/// blkid is missing or could not probe. It is given 20 s, so a stuck device cannot hang us.
pub(crate) fn blkid_signature(path: &Path) -> Result<Option<String>, String> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run blkid: {e}"))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("blkid -p did not answer within 20 s".into());
            }
        }
    };
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    match status.code() {
        Some(0) => Ok(Some(describe_blkid(&out))),
        Some(2) => Ok(None),
        // 8: "ambivalent" (several signatures): certainly not blank.
        Some(8) => Ok(Some(
            "several signatures (blkid -p: ambivalent probing result)".into(),
        )),
        other => Err(format!("blkid -p failed (exit {other:?})")),
    }
}

/// [`blkid_signature`] of an open descriptor: blkid is given `/proc/PID/fd/N` of this
/// process, which opens the very device `f` names (the magic link resolves to the open
/// file, not to a path), so a path swapped after our open cannot answer for it.
pub(crate) fn blkid_signature_fd(f: &std::fs::File) -> Result<Option<String>, String> {
    use std::os::fd::AsRawFd;
    let link = format!("/proc/{}/fd/{}", std::process::id(), f.as_raw_fd());
    blkid_signature(Path::new(&link))
}

/// `TYPE=xfs\nUSAGE=filesystem` as "xfs filesystem signature (blkid: TYPE=xfs)".
fn describe_blkid(export: &str) -> String {
    let get = |k: &str| {
        export
            .lines()
            .find_map(|l| l.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
            .map(str::to_string)
    };
    match (get("TYPE"), get("PTTYPE")) {
        (Some(t), _) => {
            let usage = get("USAGE").unwrap_or_else(|| "data".into());
            format!("{t} {usage} signature (blkid: TYPE={t})")
        }
        (None, Some(pt)) => format!("{pt} partition table (blkid: PTTYPE={pt})"),
        (None, None) => format!(
            "signature found by blkid -p ({})",
            export.trim().replace('\n', " ")
        ),
    }
}

/// [`device_in_use`] of the device number `rdev` (from fstat of an open descriptor). Swap
/// areas are compared by the device number their path names, not by spelling.
pub(crate) fn device_in_use_rdev(rdev: u64) -> Option<String> {
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
        for l in swaps.lines().skip(1) {
            let Some(p) = l.split_whitespace().next() else {
                continue;
            };
            let same = std::fs::metadata(p)
                .map(|m| {
                    m.file_type().is_block_device()
                        && std::os::unix::fs::MetadataExt::rdev(&m) == rdev
                })
                .unwrap_or(false);
            if same {
                return Some("it is in use as swap".into());
            }
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

/// Why writing to the block device open as `f` would destroy data, if it would. Everything
/// goes through the descriptor: fstat (it must still be a block device), its device number
/// for the in-use checks, pread of its head and tail, and blkid on `/proc/PID/fd/N`.
pub fn block_device_hazard_fd(f: &std::fs::File) -> Option<String> {
    let meta = match f.metadata() {
        Ok(m) => m,
        Err(e) => return Some(format!("it cannot be examined (fstat: {e})")),
    };
    if !meta.file_type().is_block_device() {
        return Some("the open descriptor is not a block device".into());
    }
    if let Some(why) = device_in_use_rdev(std::os::unix::fs::MetadataExt::rdev(&meta)) {
        return Some(why);
    }
    match find_signature_fd(f) {
        Ok(Some(what)) => return Some(format!("it holds a {what}")),
        Ok(None) => {}
        Err(e) => {
            return Some(format!(
                "its first and last blocks cannot be read to check for data ({e})"
            ))
        }
    }
    match blkid_signature_fd(f) {
        Ok(Some(what)) => Some(format!("it holds a {what}")),
        Ok(None) | Err(_) => None,
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

    /// A zeroed image of `size` bytes with `bytes` written at `off`.
    fn image(dir: &Path, name: &str, size: u64, writes: &[(u64, &[u8])]) -> std::path::PathBuf {
        let p = dir.join(name);
        let mut f = std::fs::File::create(&p).unwrap();
        f.set_len(size).unwrap();
        for (off, b) in writes {
            f.seek(SeekFrom::Start(*off)).unwrap();
            f.write_all(b).unwrap();
        }
        p
    }

    const MD_LE: &[u8] = &[0xfc, 0x4e, 0x2b, 0xa9];

    #[test]
    fn md_superblocks_at_start_and_end() {
        let d = tempfile::tempdir().unwrap();
        // 1 MiB + 12 KiB: not 64 KiB-aligned, so the end positions differ from naive ones.
        let size: u64 = (1 << 20) + 12 * 1024;
        let found = |p: &Path| find_signature(p).unwrap().unwrap_or_default();
        let v12 = image(d.path(), "v12", size, &[(0x1000, MD_LE)]);
        assert!(
            found(&v12).contains("md RAID member (1.2"),
            "{}",
            found(&v12)
        );
        let v11 = image(d.path(), "v11", size, &[(0, MD_LE)]);
        assert!(found(&v11).contains("1.1"));
        let v090 = image(
            d.path(),
            "v090",
            size,
            &[((size & !0xffff) - 0x10000, MD_LE)],
        );
        assert!(found(&v090).contains("0.90"), "{}", found(&v090));
        let v10 = image(d.path(), "v10", size, &[((size - 8192) & !4095, MD_LE)]);
        assert!(found(&v10).contains("1.0"), "{}", found(&v10));
        // The big-endian byte order is not md's.
        let be = image(d.path(), "be", size, &[(0x1000, &[0xa9, 0x2b, 0x4e, 0xfc])]);
        assert_eq!(find_signature(&be).unwrap(), None);
    }

    #[test]
    fn a_gpt_is_found_by_its_backup_header_alone() {
        let d = tempfile::tempdir().unwrap();
        let size: u64 = 1 << 20;
        let found = |p: &Path| find_signature(p).unwrap().unwrap_or_default();
        for sector in [512u64, 4096] {
            let p = image(d.path(), "b", size, &[(size - sector, b"EFI PART")]);
            assert!(
                found(&p).contains("GPT partition table (backup"),
                "{sector}"
            );
        }
        let p = image(d.path(), "p4k", size, &[(4096, b"EFI PART")]);
        assert_eq!(found(&p), "GPT partition table");
        // The magic elsewhere near the end is not a backup header.
        let p = image(d.path(), "n", size, &[(size - 1024, b"EFI PART")]);
        assert_eq!(find_signature(&p).unwrap(), None);
    }

    #[test]
    fn minix_bfs_cramfs_magics() {
        let d = tempfile::tempdir().unwrap();
        let found = |p: &Path| find_signature(p).unwrap().unwrap_or_default();
        // minix v1: ninodes, imap and zmap blocks set, log zone size 0, magic 0x138F.
        let mut sb = [0u8; 32];
        sb[0] = 32;
        sb[4] = 1;
        sb[6] = 1;
        sb[16..18].copy_from_slice(&0x138Fu16.to_le_bytes());
        let m = image(d.path(), "minix", 1 << 20, &[(0x400, &sb)]);
        assert!(found(&m).contains("minix"), "{}", found(&m));
        // The magic alone, in otherwise empty data, is not taken for minix.
        let lone = image(
            d.path(),
            "lone",
            1 << 20,
            &[(0x410, &0x138Fu16.to_le_bytes())],
        );
        assert_eq!(find_signature(&lone).unwrap(), None);
        let b = image(d.path(), "bfs", 1 << 20, &[(0, &[0xce, 0xfa, 0xad, 0x1b])]);
        assert!(found(&b).contains("BFS"));
        let c = image(
            d.path(),
            "cramfs",
            1 << 20,
            &[(0, &[0x45, 0x3d, 0xcd, 0x28])],
        );
        assert!(found(&c).contains("cramfs"));
    }

    /// Images made by the real tools.
    #[test]
    #[cfg_attr(
        not(all(has_mkfs_minix, has_mkfs_bfs, has_mkfs_cramfs)),
        ignore = "SKIPPED: needs mkfs.minix, mkfs.bfs and mkfs.cramfs"
    )]
    fn images_made_by_mkfs_tools() {
        let d = tempfile::tempdir().unwrap();
        let run = |cmd: &str, args: &[&str]| {
            std::process::Command::new(cmd)
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        };
        for (tool, what) in [("mkfs.minix", "minix"), ("mkfs.bfs", "BFS")] {
            let p = image(d.path(), tool, 4 << 20, &[]);
            assert!(
                run(tool, &[p.to_str().unwrap()]),
                "CANNOT RUN: {tool} failed, although build.rs found it (see FSBENCH_TEST_CAPS there)"
            );
            let got = find_signature(&p).unwrap().unwrap_or_default();
            assert!(got.contains(what), "{tool}: {got}");
        }
        let src = d.path().join("tree");
        std::fs::create_dir(&src).unwrap();
        std::fs::write(src.join("f"), b"hello").unwrap();
        let img = d.path().join("cramfs.img");
        assert!(
            run(
                "mkfs.cramfs",
                &[src.to_str().unwrap(), img.to_str().unwrap()],
            ),
            "CANNOT RUN: mkfs.cramfs failed, although build.rs found it (see FSBENCH_TEST_CAPS there)"
        );
        let got = find_signature(&img).unwrap().unwrap_or_default();
        assert!(got.contains("cramfs"), "{got}");
    }

    #[test]
    fn blkid_export_described() {
        assert_eq!(
            describe_blkid("DEVNAME=/dev/loop0\nUUID=x\nTYPE=minix\nUSAGE=filesystem\n"),
            "minix filesystem signature (blkid: TYPE=minix)"
        );
        assert_eq!(
            describe_blkid("DEVNAME=/dev/loop0\nPTUUID=1\nPTTYPE=dos\n"),
            "dos partition table (blkid: PTTYPE=dos)"
        );
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
