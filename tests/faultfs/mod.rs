//! faultfs: a FUSE file system for tests that passes everything through to a backing directory
//! and, when told to through a shared [`Control`], breaks its promises the way storage does:
//! an error (EIO, ENOSPC, ...) at the Nth operation of a kind or at an offset; a write
//! acknowledged and dropped; a write stored at the wrong offset; half a write stored; a bit
//! flipped in what is stored; and a crash, which forgets every write not fsynced, as a volatile
//! write cache would (in [`Control::volatile`] mode writes wait in memory until an fsync of
//! their file, and a crash drops them).
//!
//! Served in-process: [`FaultFs::mount`] mounts it with `mount(2)` (root, /dev/fuse; no
//! fusermount needed) and runs the session on a background thread, and dropping the
//! [`FaultFs`] unmounts it (lazily, so a failed test never leaves a busy mount behind) and
//! removes the backing directory. Every file is opened with `FOPEN_DIRECT_IO`: no page cache
//! sits between the program under test and the faults, so what a read returns is what this
//! file system holds, and one `write(2)` is one write request (up to the maximal request size).
//! Attributes are never cached, so a crash that shrinks a file is seen at once.
//!
//! Every fault that fires is logged ([`Control::injected`]) with the file, offset and length
//! it hit, so a test can demand that each one is found.
#![allow(dead_code)]

use fuser::{
    consts::FOPEN_DIRECT_IO, FileAttr, FileType, Filesystem, MountOption, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request,
    TimeOrNow,
};
use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Nothing is cached by the kernel: every lookup and getattr asks.
const TTL: Duration = Duration::ZERO;

/// The kind of operation a rule counts and hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Read,
    Write,
    Fsync,
}

/// When a rule fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// The Nth operation of its kind (1-based) that the rule's filters (file name, length)
    /// let through, counted from when the rule was added.
    Nth(u64),
    /// The first operation of its kind whose byte range holds this file offset.
    Offset(u64),
}

/// What happens when a rule fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Fail the operation with this errno (nothing is stored).
    Error(i32),
    /// Acknowledge the write, store nothing.
    Drop,
    /// Store the write at this offset instead of its own.
    Misdirect { to: u64 },
    /// Store the first half of the write only (and acknowledge it whole).
    Half,
    /// Store the write with one bit flipped: bit `bit` of byte `byte` of the write.
    FlipBit { byte: u64, bit: u8 },
    /// Power cut: forget every write not fsynced, fail this operation and every read, write
    /// and fsync after it with EIO until [`Control::recover`].
    Crash,
}

impl Fault {
    pub fn name(&self) -> &'static str {
        match self {
            Fault::Error(_) => "error",
            Fault::Drop => "drop",
            Fault::Misdirect { .. } => "misdirect",
            Fault::Half => "half",
            Fault::FlipBit { .. } => "flip_bit",
            Fault::Crash => "crash",
        }
    }
}

/// One fault to inject, once.
#[derive(Debug, Clone)]
pub struct Rule {
    pub op: Op,
    pub when: When,
    pub fault: Fault,
    /// Only operations on a file of this name (None: any file).
    pub name: Option<String>,
    /// Only operations of this many bytes (None: any), e.g. a run's blocks and not the
    /// large writes that lay its file out.
    pub len: Option<u64>,
    /// Operations the filters let through so far.
    seen: u64,
}

/// A fault that fired: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injected {
    pub fault: Fault,
    pub op: Op,
    pub file: String,
    pub offset: u64,
    pub len: u64,
}

/// Writes to one file held back until it is fsynced: (offset, data), in order.
type Writes = Vec<(u64, Vec<u8>)>;

/// What the test tells the file system, and what it reports back.
#[derive(Debug, Default)]
pub struct Control {
    /// Rules not fired yet.
    pub rules: Vec<Rule>,
    /// Faults that fired, in order.
    pub injected: Vec<Injected>,
    /// Operations seen, per kind and file name.
    pub counts: HashMap<(Op, String), u64>,
    /// Keep writes in memory until their file is fsynced (a volatile write cache).
    pub volatile: bool,
    /// After a crash, until recover.
    pub crashed: bool,
    /// Writes waiting for an fsync (volatile mode), per inode, in order.
    pending: HashMap<u64, Writes>,
    /// Writes forgotten by crashes: (file, offset, len).
    pub forgotten: Vec<(String, u64, u64)>,
    /// Writes made durable by an fsync in volatile mode: (file, offset, len).
    pub synced: Vec<(String, u64, u64)>,
}

impl Control {
    pub fn add(&mut self, op: Op, when: When, fault: Fault, name: Option<&str>) {
        self.add_sized(op, when, fault, name, None);
    }

    /// [`Control::add`] for operations of `len` bytes only.
    pub fn add_sized(
        &mut self,
        op: Op,
        when: When,
        fault: Fault,
        name: Option<&str>,
        len: Option<u64>,
    ) {
        self.rules.push(Rule {
            op,
            when,
            fault,
            name: name.map(str::to_string),
            len,
            seen: 0,
        });
    }

    /// The machine came back after a crash: operations work again.
    pub fn recover(&mut self) {
        self.crashed = false;
    }

    /// Operations of a kind seen on a file.
    pub fn count(&self, op: Op, name: &str) -> u64 {
        self.counts
            .get(&(op, name.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// Count the operation and take the rule it fires, if any (each rule fires once).
    fn fire(&mut self, op: Op, name: &str, offset: u64, len: u64) -> Option<Fault> {
        *self.counts.entry((op, name.to_string())).or_insert(0) += 1;
        let mut hit = None;
        for (i, r) in self.rules.iter_mut().enumerate() {
            let applies = r.op == op
                && r.name.as_deref().is_none_or(|want| want == name)
                && r.len.is_none_or(|want| want == len);
            if !applies {
                continue;
            }
            r.seen += 1;
            let fires = match r.when {
                When::Nth(k) => r.seen == k,
                When::Offset(o) => offset <= o && o < offset + len.max(1),
            };
            if fires && hit.is_none() {
                hit = Some(i);
            }
        }
        let i = hit?;
        let r = self.rules.remove(i);
        self.injected.push(Injected {
            fault: r.fault,
            op,
            file: name.to_string(),
            offset,
            len,
        });
        Some(r.fault)
    }
}

/// The mounted file system; unmounted and its backing directory removed when dropped.
/// A bind mount of a [`FaultFs`] ([`FaultFs::bind_on`]), unmounted lazily when dropped.
pub struct BindMount(PathBuf);

impl Drop for BindMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

pub struct FaultFs {
    pub mnt: PathBuf,
    pub backing: PathBuf,
    pub ctl: Arc<Mutex<Control>>,
    session: Option<fuser::BackgroundSession>,
    dir: Option<tempfile::TempDir>,
}

impl FaultFs {
    /// Mount a new faultfs over an empty backing directory, or say why it cannot be done here.
    pub fn mount() -> Result<FaultFs, String> {
        if !Path::new("/dev/fuse").exists() {
            return Err("no /dev/fuse".into());
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("mounting FUSE without fusermount needs root".into());
        }
        let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
        let mnt = dir.path().join("mnt");
        let backing = dir.path().join("backing");
        std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
        std::fs::create_dir(&backing).map_err(|e| e.to_string())?;
        let ctl = Arc::new(Mutex::new(Control::default()));
        let fs = Passthrough::new(backing.clone(), ctl.clone());
        let opts = [
            MountOption::FSName("faultfs".into()),
            MountOption::Subtype("faultfs".into()),
        ];
        let session = fuser::spawn_mount2(fs, &mnt, &opts)
            .map_err(|e| format!("cannot mount FUSE on {}: {e}", mnt.display()))?;
        // The mount is live once the kernel has answered INIT; a stat through it waits for that.
        let fs = FaultFs {
            mnt,
            backing,
            ctl,
            session: Some(session),
            dir: Some(dir),
        };
        std::fs::metadata(&fs.mnt).map_err(|e| format!("the mount does not answer: {e}"))?;
        Ok(fs)
    }

    /// Mount this file system also at `dir` (created if missing), a bind mount, so that one
    /// directory of a run (an MPI rank's) sits on it; the guard unmounts it (lazily) when
    /// dropped. Keep the guard declared after the [`FaultFs`], so it goes first.
    pub fn bind_on(&self, dir: &Path) -> BindMount {
        std::fs::create_dir_all(dir).unwrap();
        let bound = std::process::Command::new("mount")
            .arg("--bind")
            .arg(&self.mnt)
            .arg(dir)
            .status()
            .unwrap();
        assert!(bound.success(), "mount --bind {}", dir.display());
        BindMount(dir.to_path_buf())
    }

    pub fn ctl(&self) -> MutexGuard<'_, Control> {
        self.ctl.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.mnt.join(name)
    }

    /// Names in the mounted directory.
    pub fn listing(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.mnt)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

impl Drop for FaultFs {
    fn drop(&mut self) {
        if let Ok(c) = CString::new(self.mnt.as_os_str().as_bytes()) {
            // SAFETY: c is a NUL-terminated path. A lazy unmount detaches the mount even when
            // a program killed mid-test still holds a file open on it.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        // Ends the session thread (its own unmount finds nothing left to unmount).
        drop(self.session.take());
        drop(self.dir.take());
    }
}

/// The passthrough: inode numbers are handed out per path; open files are backing files.
struct Passthrough {
    root: PathBuf,
    ctl: Arc<Mutex<Control>>,
    paths: HashMap<u64, PathBuf>,
    inodes: HashMap<PathBuf, u64>,
    next_ino: u64,
    files: HashMap<u64, (u64, File)>,
    next_fh: u64,
}

fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH
    }
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("no NUL in test paths")
}

/// `open(2)` on the backing file system; the flags that would change where or how writes
/// land there (O_APPEND: writes go where the request says; O_DIRECT: alignment is the
/// kernel's business above us) are removed.
fn open_backing(p: &Path, flags: i32, mode: u32) -> std::io::Result<File> {
    let flags = (flags & !(libc::O_APPEND | libc::O_DIRECT)) | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    let c = cpath(p);
    // SAFETY: c is NUL-terminated; a successful open returns a descriptor nobody else owns.
    let fd = unsafe { libc::open(c.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by open.
    Ok(unsafe { File::from_raw_fd(fd) })
}

impl Passthrough {
    fn new(root: PathBuf, ctl: Arc<Mutex<Control>>) -> Self {
        let mut s = Passthrough {
            root,
            ctl,
            paths: HashMap::new(),
            inodes: HashMap::new(),
            next_ino: 2,
            files: HashMap::new(),
            next_fh: 1,
        };
        s.paths.insert(fuser::FUSE_ROOT_ID, PathBuf::new());
        s.inodes.insert(PathBuf::new(), fuser::FUSE_ROOT_ID);
        s
    }

    fn ctl(&self) -> MutexGuard<'_, Control> {
        self.ctl.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn rel(&self, ino: u64) -> Option<PathBuf> {
        self.paths.get(&ino).cloned()
    }

    fn real(&self, ino: u64) -> Option<PathBuf> {
        self.rel(ino).map(|r| self.root.join(r))
    }

    fn name_of(&self, ino: u64) -> String {
        self.rel(ino)
            .and_then(|r| r.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default()
    }

    fn ino_for(&mut self, rel: PathBuf) -> u64 {
        if let Some(&i) = self.inodes.get(&rel) {
            return i;
        }
        let i = self.next_ino;
        self.next_ino += 1;
        self.paths.insert(i, rel.clone());
        self.inodes.insert(rel, i);
        i
    }

    fn child(&self, parent: u64, name: &OsStr) -> Option<PathBuf> {
        self.rel(parent).map(|p| p.join(name))
    }

    /// Size including writes still waiting in the volatile cache.
    fn visible_size(&self, ino: u64, backing: u64) -> u64 {
        let ctl = self.ctl();
        ctl.pending
            .get(&ino)
            .map(|w| w.iter().map(|(o, d)| o + d.len() as u64).max().unwrap_or(0))
            .unwrap_or(0)
            .max(backing)
    }

    fn attr(&mut self, ino: u64) -> Result<FileAttr, i32> {
        let real = self.real(ino).ok_or(libc::ENOENT)?;
        let m = std::fs::symlink_metadata(&real).map_err(|e| errno(&e))?;
        let kind = match m.file_type() {
            t if t.is_dir() => FileType::Directory,
            t if t.is_symlink() => FileType::Symlink,
            _ => FileType::RegularFile,
        };
        let size = if kind == FileType::RegularFile {
            self.visible_size(ino, m.size())
        } else {
            m.size()
        };
        Ok(FileAttr {
            ino,
            size,
            blocks: m.blocks(),
            atime: time(m.atime(), m.atime_nsec()),
            mtime: time(m.mtime(), m.mtime_nsec()),
            ctime: time(m.ctime(), m.ctime_nsec()),
            crtime: UNIX_EPOCH,
            kind,
            perm: (m.mode() & 0o7777) as u16,
            nlink: m.nlink() as u32,
            uid: m.uid(),
            gid: m.gid(),
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    /// Write what `ino`'s cache holds to the backing file, in order.
    fn apply_pending(&mut self, ino: u64) -> Result<(), i32> {
        let writes = self.ctl().pending.remove(&ino).unwrap_or_default();
        if writes.is_empty() {
            return Ok(());
        }
        let real = self.real(ino).ok_or(libc::ENOENT)?;
        let f = open_backing(&real, libc::O_WRONLY, 0).map_err(|e| errno(&e))?;
        let name = self.name_of(ino);
        for (o, d) in writes {
            f.write_all_at(&d, o).map_err(|e| errno(&e))?;
            self.ctl().synced.push((name.clone(), o, d.len() as u64));
        }
        f.sync_data().map_err(|e| errno(&e))
    }

    /// Store a write (after faults shaped it): in the cache in volatile mode, else on the
    /// backing file.
    fn store(&mut self, ino: u64, fh: u64, offset: u64, data: &[u8]) -> Result<(), i32> {
        {
            let mut ctl = self.ctl();
            if ctl.volatile {
                ctl.pending
                    .entry(ino)
                    .or_default()
                    .push((offset, data.to_vec()));
                return Ok(());
            }
        }
        let (_, f) = self.files.get(&fh).ok_or(libc::EBADF)?;
        f.write_all_at(data, offset).map_err(|e| errno(&e))
    }

    fn open_fh(&mut self, ino: u64, f: File) -> u64 {
        let fh = self.next_fh;
        self.next_fh += 1;
        self.files.insert(fh, (ino, f));
        fh
    }

    /// Power cut: every write not fsynced is gone.
    fn crash(&mut self) {
        let pending: Vec<(u64, Writes)> = self.ctl().pending.drain().collect();
        let mut forgotten = Vec::new();
        for (ino, writes) in pending {
            let name = self.name_of(ino);
            for (o, d) in writes {
                forgotten.push((name.clone(), o, d.len() as u64));
            }
        }
        let mut ctl = self.ctl();
        ctl.forgotten.extend(forgotten);
        ctl.crashed = true;
    }

    fn crashed(&self) -> bool {
        self.ctl().crashed
    }
}

impl Filesystem for Passthrough {
    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        if std::fs::symlink_metadata(self.root.join(&rel)).is_err() {
            return reply.error(libc::ENOENT);
        }
        let ino = self.ino_for(rel);
        match self.attr(ino) {
            Ok(a) => reply.entry(&TTL, &a, 0),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        match self.attr(ino) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let Some(real) = self.real(ino) else {
            return reply.error(libc::ENOENT);
        };
        if let Some(m) = mode {
            use std::os::unix::fs::PermissionsExt;
            if let Err(e) = std::fs::set_permissions(&real, std::fs::Permissions::from_mode(m)) {
                return reply.error(errno(&e));
            }
        }
        if let Some(len) = size {
            // A truncate is a metadata change the cache does not hold: what waits is written
            // first, then the size is set.
            if let Err(e) = self.apply_pending(ino) {
                return reply.error(e);
            }
            let r = open_backing(&real, libc::O_WRONLY, 0).and_then(|f| f.set_len(len));
            if let Err(e) = r {
                return reply.error(errno(&e));
            }
        }
        match self.attr(ino) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        let c = cpath(&self.root.join(&rel));
        // SAFETY: c is NUL-terminated.
        if unsafe { libc::mkdir(c.as_ptr(), mode as libc::mode_t) } != 0 {
            return reply.error(errno(&std::io::Error::last_os_error()));
        }
        let ino = self.ino_for(rel);
        match self.attr(ino) {
            Ok(a) => reply.entry(&TTL, &a, 0),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        if let Err(e) = std::fs::remove_file(self.root.join(&rel)) {
            return reply.error(errno(&e));
        }
        if let Some(ino) = self.inodes.remove(&rel) {
            self.paths.remove(&ino);
            self.ctl().pending.remove(&ino);
        }
        reply.ok()
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        if let Err(e) = std::fs::remove_dir(self.root.join(&rel)) {
            return reply.error(errno(&e));
        }
        if let Some(ino) = self.inodes.remove(&rel) {
            self.paths.remove(&ino);
        }
        reply.ok()
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        _flags: u32,
        reply: ReplyEmpty,
    ) {
        let (Some(from), Some(to)) = (self.child(parent, name), self.child(newparent, newname))
        else {
            return reply.error(libc::ENOENT);
        };
        if let Err(e) = std::fs::rename(self.root.join(&from), self.root.join(&to)) {
            return reply.error(errno(&e));
        }
        if let Some(old) = self.inodes.remove(&to) {
            self.paths.remove(&old);
        }
        // Every inode under the old name (the file, or a directory's tree) moves with it.
        let moved: Vec<(PathBuf, u64)> = self
            .inodes
            .iter()
            .filter(|(p, _)| p.starts_with(&from))
            .map(|(p, i)| (p.clone(), *i))
            .collect();
        for (p, i) in moved {
            // The renamed entry itself takes `to` as it is: `to.join("")` would end it with
            // a slash, which names a directory, so a renamed file could no longer be looked
            // up (ENOTDIR), and a workload's renamed manifest was never removed.
            let rest = p.strip_prefix(&from).expect("under from");
            let np = if rest.as_os_str().is_empty() {
                to.clone()
            } else {
                to.join(rest)
            };
            self.inodes.remove(&p);
            self.inodes.insert(np.clone(), i);
            self.paths.insert(i, np);
        }
        reply.ok()
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        if self.crashed() {
            return reply.error(libc::EIO);
        }
        let Some(real) = self.real(ino) else {
            return reply.error(libc::ENOENT);
        };
        // Writes are stored with pwrite whatever the access mode asked, so open read-write
        // when the file allows it.
        let f = open_backing(&real, (flags & !libc::O_ACCMODE) | libc::O_RDWR, 0)
            .or_else(|_| open_backing(&real, flags, 0));
        match f {
            Ok(f) => {
                let fh = self.open_fh(ino, f);
                reply.opened(fh, FOPEN_DIRECT_IO)
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        if self.crashed() {
            return reply.error(libc::EIO);
        }
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        let flags = (flags & !libc::O_ACCMODE) | libc::O_RDWR | libc::O_CREAT;
        match open_backing(&self.root.join(&rel), flags, mode) {
            Ok(f) => {
                let ino = self.ino_for(rel);
                let fh = self.open_fh(ino, f);
                match self.attr(ino) {
                    Ok(a) => reply.created(&TTL, &a, 0, fh, FOPEN_DIRECT_IO),
                    Err(e) => reply.error(e),
                }
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        if self.crashed() {
            return reply.error(libc::EIO);
        }
        let offset = offset as u64;
        let name = self.name_of(ino);
        if let Some(Fault::Error(e)) = self.ctl().fire(Op::Read, &name, offset, size as u64) {
            return reply.error(e);
        }
        let Some((_, f)) = self.files.get(&fh) else {
            return reply.error(libc::EBADF);
        };
        let backing = f.metadata().map(|m| m.size()).unwrap_or(0);
        let end = (offset + size as u64).min(self.visible_size(ino, backing));
        if end <= offset {
            return reply.data(&[]);
        }
        let mut buf = vec![0u8; (end - offset) as usize];
        let mut got = 0;
        while got < buf.len() {
            match f.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return reply.error(errno(&e)),
            }
        }
        // Writes still in the cache are newer than the backing file: laid over it in order.
        if let Some(writes) = self.ctl().pending.get(&ino) {
            for (o, d) in writes {
                let (s, e) = ((*o).max(offset), (o + d.len() as u64).min(end));
                if s < e {
                    buf[(s - offset) as usize..(e - offset) as usize]
                        .copy_from_slice(&d[(s - o) as usize..(e - o) as usize]);
                }
            }
        }
        reply.data(&buf)
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        if self.crashed() {
            return reply.error(libc::EIO);
        }
        let offset = offset as u64;
        let name = self.name_of(ino);
        let fault = self.ctl().fire(Op::Write, &name, offset, data.len() as u64);
        let stored = match fault {
            None => self.store(ino, fh, offset, data),
            Some(Fault::Error(e)) => Err(e),
            Some(Fault::Drop) => Ok(()),
            Some(Fault::Misdirect { to }) => self.store(ino, fh, to, data),
            Some(Fault::Half) => self.store(ino, fh, offset, &data[..data.len() / 2]),
            Some(Fault::FlipBit { byte, bit }) => {
                let mut d = data.to_vec();
                let i = (byte as usize).min(d.len().saturating_sub(1));
                if let Some(b) = d.get_mut(i) {
                    *b ^= 1 << (bit % 8);
                }
                self.store(ino, fh, offset, &d)
            }
            Some(Fault::Crash) => {
                self.crash();
                Err(libc::EIO)
            }
        };
        match stored {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lo: u64, reply: ReplyEmpty) {
        // close(2) is no promise of durability: the cache keeps what it holds.
        reply.ok()
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.files.remove(&fh);
        reply.ok()
    }

    fn fsync(&mut self, _req: &Request<'_>, ino: u64, fh: u64, _datasync: bool, reply: ReplyEmpty) {
        if self.crashed() {
            return reply.error(libc::EIO);
        }
        let name = self.name_of(ino);
        let fault = self.ctl().fire(Op::Fsync, &name, 0, 0);
        match fault {
            Some(Fault::Error(e)) => return reply.error(e),
            Some(Fault::Crash) => {
                self.crash();
                return reply.error(libc::EIO);
            }
            _ => {}
        }
        if let Err(e) = self.apply_pending(ino) {
            return reply.error(e);
        }
        match self.files.get(&fh).map(|(_, f)| f.sync_data()) {
            Some(Ok(())) | None => reply.ok(),
            Some(Err(e)) => reply.error(errno(&e)),
        }
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        if self.rel(ino).is_none() {
            return reply.error(libc::ENOENT);
        }
        reply.opened(0, 0)
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let Some(rel) = self.rel(ino) else {
            return reply.error(libc::ENOENT);
        };
        let mut entries = vec![
            (ino, FileType::Directory, OsStr::new(".").to_os_string()),
            (ino, FileType::Directory, OsStr::new("..").to_os_string()),
        ];
        let rd = match std::fs::read_dir(self.root.join(&rel)) {
            Ok(rd) => rd,
            Err(e) => return reply.error(errno(&e)),
        };
        for e in rd.flatten() {
            let kind = match e.file_type() {
                Ok(t) if t.is_dir() => FileType::Directory,
                Ok(t) if t.is_symlink() => FileType::Symlink,
                _ => FileType::RegularFile,
            };
            let child = self.ino_for(rel.join(e.file_name()));
            entries.push((child, kind, e.file_name()));
        }
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(ino, (i + 1) as i64, kind, &name) {
                break;
            }
        }
        reply.ok()
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        reply.ok()
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        let c = cpath(&self.root);
        // SAFETY: statvfs fills the zeroed struct; c is NUL-terminated.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
            return reply.error(errno(&std::io::Error::last_os_error()));
        }
        reply.statfs(
            s.f_blocks,
            s.f_bfree,
            s.f_bavail,
            s.f_files,
            s.f_ffree,
            s.f_bsize as u32,
            s.f_namemax as u32,
            s.f_frsize as u32,
        )
    }

    fn access(&mut self, _req: &Request<'_>, ino: u64, _mask: i32, reply: ReplyEmpty) {
        if self.rel(ino).is_some() {
            reply.ok()
        } else {
            reply.error(libc::ENOENT)
        }
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let Some((_, f)) = self.files.get(&fh) else {
            return reply.error(libc::EBADF);
        };
        // SAFETY: f is an open descriptor; fallocate takes plain integers.
        let r = unsafe { libc::fallocate(f.as_raw_fd(), mode, offset, length) };
        if r != 0 {
            return reply.error(errno(&std::io::Error::last_os_error()));
        }
        reply.ok()
    }
}
