//! What fsbench made on disk, and its removal: the identity of every directory and file it
//! creates (device, and a key from inode number and birth time), the manifest that lists them
//! next to the tree (`path/.NAME.fsbench-manifest`), and the walk that removes (or, checking,
//! only finds) what the manifest lists, through directory descriptors opened with O_NOFOLLOW,
//! leaving and reporting anything else.

use super::Known;
use anyhow::Result;
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub(super) fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

pub(super) fn ccstr(b: &[u8]) -> CString {
    CString::new(b).unwrap_or_else(|_| CString::new("invalid").expect("no NUL"))
}

/// Open a directory. `follow` only for the user's own --dir; below it, never.
pub(super) fn open_dir(at: RawFd, name: &CStr, follow: bool) -> std::io::Result<OwnedFd> {
    let mut fl = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    if !follow {
        fl |= libc::O_NOFOLLOW;
    }
    crate::sys::openat(at, name, fl, 0)
}

/// What identifies a file for removal: its device, and a key from its inode number and
/// birth time (an inode number alone is reused at once when a file is deleted and another
/// created, which is exactly what "the user replaced the file" looks like).
#[derive(Debug, Clone, Copy)]
pub(super) struct Ident {
    pub(super) dev: u64,
    pub(super) key: u64,
    pub(super) mode: u32,
    pub(super) size: u64,
}

pub(super) fn statx_at(dir: RawFd, name: &CStr, flags: i32) -> std::io::Result<Ident> {
    // AT_SYMLINK_NOFOLLOW: never follows a symlink.
    let sx = crate::sys::statx(
        dir,
        name,
        flags | libc::AT_SYMLINK_NOFOLLOW,
        libc::STATX_BASIC_STATS | libc::STATX_BTIME,
    )?;
    let btime = if sx.stx_mask & libc::STATX_BTIME != 0 {
        (sx.stx_btime.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(sx.stx_btime.tv_nsec as u64)
    } else {
        0
    };
    let key = (sx.stx_ino ^ btime.rotate_left(29).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_mul(0xbf58_476d_1ce4_e5b9);
    Ok(Ident {
        dev: libc::makedev(sx.stx_dev_major, sx.stx_dev_minor),
        key,
        mode: sx.stx_mode as u32,
        size: sx.stx_size,
    })
}

pub(super) fn fstat(fd: RawFd) -> std::io::Result<Ident> {
    statx_at(fd, c"", libc::AT_EMPTY_PATH)
}

pub(super) fn stat_at(dir: RawFd, name: &CStr) -> std::io::Result<Ident> {
    statx_at(dir, name, 0)
}

pub(super) fn lstat(p: &CStr) -> std::io::Result<Ident> {
    stat_at(libc::AT_FDCWD, p)
}

pub(super) fn is_dir(st: &Ident) -> bool {
    st.mode & libc::S_IFMT == libc::S_IFDIR
}

pub(super) fn is_reg(st: &Ident) -> bool {
    st.mode & libc::S_IFMT == libc::S_IFREG
}

pub(super) const MANIFEST_MAGIC: &[u8; 16] = b"fsbench-idents1\n";

pub(super) fn manifest_name(set: &str) -> CString {
    ccstr(format!(".{set}.fsbench-manifest").as_bytes())
}

/// Read the identity record a previous run left next to the root (None if absent or not ours).
pub(super) fn read_manifest(parent: RawFd, set: &str) -> Option<Known> {
    use std::io::Read;
    let name = manifest_name(set);
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let mut f = std::fs::File::from(crate::sys::openat(parent, &name, flags, 0).ok()?);
    let st = fstat(f.as_raw_fd()).ok()?;
    let len = st.size;
    if !is_reg(&st) || len < 16 || (len - 16) % 8 != 0 {
        return None;
    }
    let mut magic = [0u8; 16];
    f.read_exact(&mut magic).ok()?;
    if &magic != MANIFEST_MAGIC {
        return None;
    }
    let count = (len - 16) / 8;
    let mut inos: Vec<u64> = Vec::new();
    inos.try_reserve_exact(count as usize).ok()?;
    let mut r = std::io::BufReader::with_capacity(1 << 16, f);
    let mut b = [0u8; 8];
    for _ in 0..count {
        r.read_exact(&mut b).ok()?;
        inos.push(u64::from_le_bytes(b));
    }
    Some(Known::from(inos))
}

/// Write the identity record next to the root: a new temporary file (O_EXCL|O_NOFOLLOW),
/// renamed over the old record only if that is ours too.
pub(super) fn write_manifest(parent: &Path, set: &str, known: &Known) -> Result<()> {
    use std::io::Write;
    let pfd = open_dir(libc::AT_FDCWD, &ccstr(parent.as_os_str().as_bytes()), true)?;
    let name = manifest_name(set);
    if stat_at(pfd.as_raw_fd(), &name).is_ok() && read_manifest(pfd.as_raw_fd(), set).is_none() {
        crate::bail_usage!(
            "{} exists and is not an fsbench manifest: refusing to overwrite it",
            parent.join(name.to_string_lossy().as_ref()).display()
        );
    }
    let tmp = ccstr(format!(".{set}.fsbench-manifest.{}", std::process::id()).as_bytes());
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let f = match crate::sys::openat(pfd.as_raw_fd(), &tmp, flags, 0o644) {
        Ok(fd) => std::fs::File::from(fd),
        Err(e) => anyhow::bail!("writing the fileset manifest in {}: {e}", parent.display()),
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
    let res = (|| -> std::io::Result<()> {
        w.write_all(MANIFEST_MAGIC)?;
        for ino in &known.inos {
            w.write_all(&ino.to_le_bytes())?;
        }
        w.flush()
    })();
    drop(w);
    let dfd = pfd.as_raw_fd();
    if let Err(e) = res.and_then(|()| crate::sys::renameat(dfd, &tmp, dfd, &name)) {
        // Removing the temporary file we created above.
        let _ = crate::sys::unlinkat(dfd, &tmp, false);
        anyhow::bail!("writing the fileset manifest in {}: {e}", parent.display());
    }
    Ok(())
}

pub(super) fn remove_manifest(parent: RawFd, set: &str) {
    if read_manifest(parent, set).is_some() {
        let _ = crate::sys::unlinkat(parent, &manifest_name(set), false);
    }
}

/// Whether an entry the manifests do not list was still made by fsbench: it carries the
/// `user.fsbench` mark that preparation sets on every entry it creates (checked through a
/// descriptor opened without following a link, which must be the entry `st` describes). In
/// an `unfinished` tree (its root is fsbench's but no manifest was ever written: the run was
/// killed while laying it out), an empty file or a directory is accepted too: an entry the
/// run had just created and not marked yet holds no data, and a directory is only ever
/// removed when empty.
fn made_by_fsbench(dir: RawFd, name: &CStr, st: &Ident, unfinished: bool) -> bool {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    let Ok(fd) = crate::sys::openat(dir, name, flags, 0) else {
        return false;
    };
    match fstat(fd.as_raw_fd()) {
        Ok(now) if now.dev == st.dev && now.key == st.key => {}
        _ => return false,
    }
    crate::safety::fd_is_marked(&fd) || (unfinished && (is_dir(st) || (is_reg(st) && st.size == 0)))
}

/// What a removal (or a check) of a tree found.
#[derive(Debug, Default)]
pub struct Sweep {
    pub removed: u64,
    /// Identities of entries no manifest listed that fsbench made all the same (marked by
    /// the preparation of a run that was killed before it wrote its manifest).
    pub adopted: Vec<u64>,
    /// Entries left because fsbench did not create them.
    pub left: u64,
    pub first_left: Option<PathBuf>,
    pub error: Option<String>,
}

impl Sweep {
    /// The one-line note for what was left, if anything.
    pub fn note(&self) -> Option<String> {
        (self.left > 0).then(|| {
            format!(
                "left {} entries fsbench did not create: first {}",
                self.left,
                self.first_left
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            )
        })
    }
    fn foreign(&mut self, p: PathBuf) {
        self.left += 1;
        if self.first_left.is_none() {
            self.first_left = Some(p);
        }
    }
}

pub(super) struct Walker<'a> {
    known: &'a Known,
    dev: u64,
    check_only: bool,
    /// The tree has no manifest at all (see [`made_by_fsbench`]).
    unfinished: bool,
    out: Sweep,
}

impl Walker<'_> {
    /// Visit the directory open at `dir`: remove (unless checking) every entry whose inode
    /// fsbench recorded, descending only into such directories, through descriptors opened
    /// with O_NOFOLLOW; count everything else.
    fn walk(&mut self, dir: &OwnedFd, path: &Path, depth: usize) {
        // Names first (one buffer, NUL-separated), so removal does not disturb the reading.
        let mut names: Vec<u8> = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = match crate::sys::getdents(dir.as_raw_fd(), &mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    let e = format!("{}: {e}", path.display());
                    self.out.error.get_or_insert(e);
                    return;
                }
            };
            for name in crate::sys::dirents(&buf, n) {
                if name == b"." || name == b".." {
                    continue;
                }
                if names.try_reserve(name.len() + 1).is_err() {
                    break;
                }
                names.extend_from_slice(name);
                names.push(0);
            }
        }
        for raw in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
            let name = ccstr(raw);
            let child = path.join(std::ffi::OsStr::from_bytes(raw));
            let Ok(st) = stat_at(dir.as_raw_fd(), &name) else {
                continue; // vanished meanwhile
            };
            let kind_ok = is_dir(&st) || is_reg(&st);
            let listed = st.dev == self.dev && self.known.contains(st.key);
            let ours = listed
                || (st.dev == self.dev
                    && kind_ok
                    && made_by_fsbench(dir.as_raw_fd(), &name, &st, self.unfinished));
            if ours && !listed && self.out.adopted.try_reserve(1).is_ok() {
                self.out.adopted.push(st.key);
            }
            if !ours || !kind_ok {
                self.out.foreign(child);
                continue;
            }
            if is_dir(&st) {
                let Ok(sub) = open_dir(dir.as_raw_fd(), &name, false) else {
                    self.out.foreign(child);
                    continue;
                };
                // Swapped between the stat and the open: not the directory we recorded.
                match fstat(sub.as_raw_fd()) {
                    Ok(s2) if s2.key == st.key && s2.dev == st.dev && depth < 4096 => {}
                    _ => {
                        self.out.foreign(child);
                        continue;
                    }
                }
                self.walk(&sub, &child, depth + 1);
                drop(sub);
                // ENOTEMPTY: it holds entries fsbench did not create (counted above).
                if !self.check_only && crate::sys::unlinkat(dir.as_raw_fd(), &name, true).is_ok() {
                    self.out.removed += 1;
                }
            } else if !self.check_only {
                if let Err(e) = crate::sys::unlinkat(dir.as_raw_fd(), &name, false) {
                    self.out
                        .error
                        .get_or_insert(format!("removing {}: {e}", child.display()));
                } else {
                    self.out.removed += 1;
                }
            }
        }
    }
}

/// Walk `parent/name` (a root fsbench marked or made) and remove — or with `check_only`
/// just find — what `known` lists or fsbench marked; the root goes too when nothing foreign
/// is left in it.
pub(super) fn sweep_tree(
    parent: &Path,
    name: &str,
    known: &Known,
    check_only: bool,
) -> Result<Sweep> {
    sweep_tree_as(parent, name, known, check_only, false)
}

/// [`sweep_tree`], for a tree whose root is fsbench's and that has no manifest (`unfinished`:
/// a run was killed while laying it out).
pub(super) fn sweep_tree_as(
    parent: &Path,
    name: &str,
    known: &Known,
    check_only: bool,
    unfinished: bool,
) -> Result<Sweep> {
    let pfd = open_dir(libc::AT_FDCWD, &ccstr(parent.as_os_str().as_bytes()), true)
        .map_err(|e| anyhow::anyhow!("opening {}: {e}", parent.display()))?;
    let cname = ccstr(name.as_bytes());
    let root = match open_dir(pfd.as_raw_fd(), &cname, false) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Sweep::default()),
        Err(e) => anyhow::bail!("opening {}: {e}", parent.join(name).display()),
    };
    let st = fstat(root.as_raw_fd())?;
    let mut w = Walker {
        known,
        dev: st.dev,
        check_only,
        unfinished,
        out: Sweep::default(),
    };
    w.walk(&root, &parent.join(name), 0);
    drop(root);
    if !check_only && w.out.left == 0 && crate::sys::unlinkat(pfd.as_raw_fd(), &cname, true).is_ok()
    {
        w.out.removed += 1;
        remove_manifest(pfd.as_raw_fd(), name);
    }
    Ok(w.out)
}
