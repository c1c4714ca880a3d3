//! Filesets on disk: the directory tree (mean `dirwidth`, optional gamma-distributed widths via
//! `dirgamma`, or a fixed depth from `dirdepthrv`), each entry's size, creation with `prealloc`
//! percent (in parallel with `paralloc`), `reuse` of a tree fsbench left behind, the runtime
//! picker (exists / absent, exclusive "busy" marking in the shared arena) and removal.
//!
//! Memory: a layout stores no path. An entry's path is derived from its index (the leaf
//! directory holding it, found by binary search over contiguous leaf ranges, plus its number),
//! and a directory is (parent, number). Per entry that is its size (8 bytes) plus a share of
//! its leaf range and directory, so ten million entries take about 100 MB, not gigabytes.
//! Paths are built on the stack ([`CPath`]) so the I/O path does not allocate.
//!
//! Preparation (creating, filling and removing the tree) makes its own system calls instead of
//! going through a thread's Engine: it is untimed setup done before the threads start, and it
//! needs descriptor-based safety checks (xattr marks, O_EXCL|O_NOFOLLOW) no engine op carries.
//! Every call a flowop makes during the run goes through the thread's engine (interp.rs).
//!
//! Safety: fsbench creates `path/NAME/`, marks it with the fsbench xattr, and records the
//! identity (inode) of every directory and file it creates in a manifest next to it
//! (`path/.NAME.fsbench-manifest`). Removal walks the tree through directory descriptors
//! opened with O_NOFOLLOW, never follows a symlink, and unlinks an entry only when its inode is
//! one fsbench recorded; anything else (files the user added or replaced, symlinks) is left
//! and reported. The identities, the manifest and that walk are in `fileset/manifest.rs`; a
//! tree shared by ranks is in `fileset/shared_tree.rs`.

use super::model::FilesetSpec;
use super::shared::{Arena, ENTRY_EXISTS};
use super::vars::Rng;
use crate::runner::signal;
use anyhow::Result;
use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::*;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::Mutex;

mod layout;
mod manifest;
mod pick;
pub mod shared_tree;

pub use layout::{estimate_bytes, estimate_layout_bytes, layout, SetLayout};
pub use manifest::Sweep;
use manifest::*;
pub use pick::{busy_wait, open_count, pick, release, unbusy, From, Picked, Want};

/// Longest path the kernel accepts, with its NUL.
const PATH_MAX: usize = libc::PATH_MAX as usize;
const NO_PARENT: u32 = u32::MAX;
/// More entries than this cannot be numbered by the layout's 32-bit directory indices.
pub const MAX_ENTRIES: u64 = 1 << 31;

/// The run was interrupted (Ctrl-C or SIGTERM) while the filesets were being prepared.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted (Ctrl-C) while preparing the filesets")
    }
}

impl std::error::Error for Interrupted {}

/// True when an error chain says the preparation was interrupted (not a failure).
pub fn is_interrupted(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<Interrupted>().is_some())
}

/// A path built in a fixed buffer on the stack, NUL-terminated: no allocation per I/O.
pub struct CPath {
    len: usize,
    buf: [u8; PATH_MAX],
}

impl CPath {
    fn new() -> Self {
        CPath {
            len: 0,
            buf: [0; PATH_MAX],
        }
    }
    /// Append bytes. The layout checked that every path fits, so nothing is cut in practice;
    /// the bound keeps the NUL in the buffer regardless.
    fn push(&mut self, b: &[u8]) {
        let end = (self.len + b.len()).min(PATH_MAX - 1);
        let n = end - self.len;
        self.buf[self.len..end].copy_from_slice(&b[..n]);
        self.len = end;
        self.buf[end] = 0;
    }
    /// Append a number with at least 8 digits, as Filebench names entries.
    fn push_num(&mut self, n: u64) {
        let mut d = [b'0'; 20];
        let mut i = 20;
        let mut v = n;
        while v > 0 || i > 12 {
            i -= 1;
            d[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        self.push(&d[i..]);
    }
    pub fn as_c_str(&self) -> &CStr {
        // SAFETY: push() always leaves buf[len] == 0, and the bytes before it hold no NUL
        // (the root was checked for NUL bytes, the rest are '/', digits and the file name).
        unsafe { CStr::from_bytes_with_nul_unchecked(&self.buf[..=self.len]) }
    }
    pub fn as_path(&self) -> &Path {
        Path::new(std::ffi::OsStr::from_bytes(&self.buf[..self.len]))
    }
}

impl std::ops::Deref for CPath {
    type Target = CStr;
    fn deref(&self) -> &CStr {
        self.as_c_str()
    }
}

impl std::fmt::Debug for CPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_path())
    }
}

impl std::fmt::Display for CPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.as_path().display())
    }
}

/// Inode numbers fsbench created below a fileset root (sorted, for binary search).
#[derive(Debug, Clone, Default)]
pub struct Known {
    inos: Vec<u64>,
}

impl Known {
    fn from(mut inos: Vec<u64>) -> Self {
        inos.sort_unstable();
        inos.dedup();
        Known { inos }
    }
    fn contains(&self, ino: u64) -> bool {
        self.inos.binary_search(&ino).is_ok()
    }
    fn merged(&self, more: Vec<u64>) -> Self {
        let mut v = more;
        v.extend_from_slice(&self.inos);
        Known::from(v)
    }
}

/// What `prepare` did for one fileset, so cleanup removes exactly that.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub root: PathBuf,
    pub name: String,
    /// We made the root in this run (allowed to remove it even where xattrs do not work).
    pub created_root: bool,
    /// Inodes of the directories and files fsbench made (and, on reuse, everything the
    /// manifest lists). Files created later by flowops are found through the arena.
    known: Known,
    pub files_created: u64,
    pub bytes_written: u64,
    pub reused: u64,
}

impl Prepared {
    /// A fileset about to be laid out at `spec`'s root, nothing created in it yet.
    fn starting(spec: &FilesetSpec, created_root: bool, known: Known) -> Prepared {
        Prepared {
            root: spec.root.clone(),
            name: spec.name.clone(),
            created_root,
            known,
            files_created: 0,
            bytes_written: 0,
            reused: 0,
        }
    }
}

/// One entry's failure while preparing.
enum PrepErr {
    Stop,
    Io(String),
}

/// Write `size` bytes of a fixed pattern (with `--verify`, the stream of `verify_key`) into
/// the open file, checking Ctrl-C between megabytes; an error names the file and the offset.
fn fill_fd(
    fd: RawFd,
    path: &CPath,
    size: u64,
    buf: &mut [u8],
    verify_key: Option<u64>,
) -> Result<(), PrepErr> {
    let mut off = 0u64;
    while off < size {
        if signal::interrupted() {
            return Err(PrepErr::Stop);
        }
        let n = (size - off).min(buf.len() as u64) as usize;
        if let Some(k) = verify_key {
            crate::verify::stream::fill(&mut buf[..n], k, off);
        }
        // SAFETY: writing from a buffer we own of at least n bytes.
        let w = unsafe { libc::pwrite(fd, buf.as_ptr() as *const libc::c_void, n, off as i64) };
        if w < 0 {
            let e = errno();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(PrepErr::Io(format!("writing {path} at offset {off}: {e}")));
        }
        if w == 0 {
            return Err(PrepErr::Io(format!(
                "writing {path} at offset {off}: no progress"
            )));
        }
        off += w as u64;
    }
    Ok(())
}

/// The directory a fileset's root goes in, checked and opened.
fn open_parent(spec: &FilesetSpec) -> Result<(&Path, OwnedFd)> {
    let parent = spec.root.parent().unwrap_or(Path::new("."));
    if !parent.is_dir() {
        crate::bail_usage!(
            "directory {} does not exist: create it or pass another --dir",
            parent.display()
        );
    }
    let pfd = open_dir(libc::AT_FDCWD, &ccstr(parent.as_os_str().as_bytes()), true)
        .map_err(|e| crate::usage!("cannot open directory {}: {e}", parent.display()))?;
    Ok((parent, pfd))
}

/// Whether the fileset's root (`cname` under `pfd`) already exists; one that fsbench did
/// not make (no mark on it, or not a directory) is refused.
fn root_is_ours(pfd: &OwnedFd, cname: &CStr, spec: &FilesetSpec) -> Result<bool> {
    let refuse = || {
        crate::usage!(
            "{} exists and was not created by fsbench: refusing to write there (choose another --dir or remove it)",
            spec.root.display()
        )
    };
    match open_dir(pfd.as_raw_fd(), cname, false) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(_) => Err(refuse().into()),
        Ok(rfd) if !crate::safety::fd_is_marked(&rfd) => Err(refuse().into()),
        Ok(_) => Ok(true),
    }
}

/// Why the fileset's root could not be made (`e`, the mkdir error): a directory fsbench may not write
/// in (read-only, no permission) is bad input, as for every other command (exit 2).
fn root_creation_error(spec: &FilesetSpec, e: std::io::Error) -> anyhow::Error {
    if matches!(
        e.raw_os_error(),
        Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM)
    ) {
        return crate::usage!(
            "cannot create the fileset {}: {e} (choose a writable --dir)",
            spec.root.display()
        )
        .into();
    }
    anyhow::anyhow!("creating {}: {e}", spec.root.display())
}

/// Remove the old fileset fsbench left at the root (a kept or killed run: what its
/// manifests list, `known`), and the ranks' manifests; refuse when anything else is in it.
fn clear_old_fileset(
    parent: &Path,
    pfd: &OwnedFd,
    spec: &FilesetSpec,
    known: &Known,
    unfinished: bool,
) -> Result<()> {
    let s = sweep_tree_as(parent, &spec.name, known, false, unfinished)?;
    if let Some(n) = s.note() {
        crate::bail_usage!(
            "fileset '{}': removing the old fileset {} {n}; refusing to lay out a new one over them (move them away)",
            spec.name,
            spec.root.display()
        );
    }
    if let Some(e) = s.error {
        anyhow::bail!("removing the old fileset {}: {e}", spec.root.display());
    }
    shared_tree::remove_rank_manifests(parent, pfd.as_raw_fd(), &spec.name);
    if unfinished {
        crate::runner::say(&format!(
            "fsbench: note: fileset '{}': removed {} entries of {} that an earlier run left unfinished (it was stopped while laying the fileset out)",
            spec.name,
            s.removed,
            spec.root.display()
        ));
    }
    Ok(())
}

/// Create (or reuse) a fileset on disk and record which entries exist in the arena. On an
/// error or Ctrl-C what was created is removed again (unless `keep`) before returning.
pub(crate) fn prepare(
    spec: &FilesetSpec,
    lay: &SetLayout,
    arena: &Arena,
    set: usize,
    keep: bool,
    board: Option<std::sync::Arc<crate::runner::live::Board>>,
) -> Result<Prepared> {
    let (parent, pfd) = open_parent(spec)?;
    if spec.shared_rank.is_some() {
        return shared_tree::prepare_entries(spec, lay, arena, set, keep, &pfd, board);
    }
    let cname = ccstr(spec.name.as_bytes());
    let mut known = Known::default();
    let mut reuse_existing = false;
    if root_is_ours(&pfd, &cname, spec)? {
        // A run whose ranks shared the tree left a manifest for each rank too.
        known = shared_tree::read_all_manifests(parent, pfd.as_raw_fd(), &spec.name);
        // Every manifest lists at least the root: none at all means the run that made the
        // root was stopped (killed) before it wrote one, while laying the tree out.
        let unfinished = known.inos.is_empty();
        if spec.reuse {
            let s = sweep_tree_as(parent, &spec.name, &known, true, unfinished)?;
            if let Some(n) = s.note() {
                crate::bail_usage!(
                    "fileset '{}': {n}; refusing to reuse {} (move them away or remove it)",
                    spec.name,
                    spec.root.display()
                );
            }
            if unfinished {
                crate::runner::say(&format!(
                    "fsbench: note: fileset '{}': reusing the {} entries of {} that an earlier run left unfinished (it was stopped while laying the fileset out)",
                    spec.name,
                    s.adopted.len(),
                    spec.root.display()
                ));
            }
            // The root itself is in no manifest when the tree is unfinished.
            let root_key = open_dir(pfd.as_raw_fd(), &cname, false)
                .and_then(|fd| fstat(fd.as_raw_fd()))
                .map(|st| vec![st.key])
                .unwrap_or_default();
            known = known.merged(s.adopted).merged(root_key);
            reuse_existing = true;
        } else {
            clear_old_fileset(parent, &pfd, spec, &known, unfinished)?;
            known = Known::default();
        }
    }
    let mut created_root = false;
    if !reuse_existing {
        if let Err(e) = crate::sys::mkdirat(pfd.as_raw_fd(), &cname, 0o755) {
            return Err(root_creation_error(spec, e));
        }
        created_root = true;
    }
    let mut p = Prepared::starting(spec, created_root, known);
    let mut created_inos: Vec<u64> = Vec::new();
    let res = create(
        spec,
        lay,
        arena,
        set,
        &pfd,
        &cname,
        reuse_existing,
        &mut p,
        &mut created_inos,
        board,
    );
    if let Err(e) = res {
        p.known = p.known.merged(created_inos);
        if keep {
            let _ = write_manifest(parent, &spec.name, &p.known);
            return Err(e);
        }
        return match remove(&p, lay, arena, set) {
            Ok(Some(note)) => Err(e.context(note)),
            Ok(None) => Err(e),
            Err(e2) => Err(e.context(format!("cleanup: {e2:#}"))),
        };
    }
    // Record what exists now, so a later run (after --keep, or after this one was killed)
    // knows which entries are fsbench's.
    p.known = p.known.merged(created_inos);
    write_manifest(parent, &spec.name, &p.known)?;
    Ok(p)
}

#[allow(clippy::too_many_arguments)]
fn create(
    spec: &FilesetSpec,
    lay: &SetLayout,
    arena: &Arena,
    set: usize,
    pfd: &OwnedFd,
    cname: &CStr,
    reuse_existing: bool,
    p: &mut Prepared,
    created_inos: &mut Vec<u64>,
    board: Option<std::sync::Arc<crate::runner::live::Board>>,
) -> Result<()> {
    let rfd = open_dir(pfd.as_raw_fd(), cname, false)
        .map_err(|e| anyhow::anyhow!("opening {}: {e}", spec.root.display()))?;
    if p.created_root {
        // Failure (no xattrs) is tolerated: the run then removes only what it recorded.
        crate::safety::fd_set_mark(&rfd, b"created");
    }
    if !lay.shared() {
        // Shared by the ranks of a run: rank 0 made the directories (shared_tree).
        create_dirs(&rfd, lay, reuse_existing, p)?;
    }
    let states = arena.entries(set);
    let threads = if spec.paralloc {
        std::thread::available_parallelism()
            .map(|x| x.get())
            .unwrap_or(2)
            .clamp(2, 16)
    } else {
        1
    };
    let maker = EntryMaker {
        known: &p.known,
        lay,
        states,
        arena,
        set,
        reuse_existing,
        is_dirs: spec.is_dirs(),
        threads,
        created: AtomicU64::new(0),
        written: AtomicU64::new(0),
        reused: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        first_err: Mutex::new(None),
        inos: Mutex::new(Vec::new()),
        board,
    };
    maker.run()?;
    created_inos.extend(maker.inos.into_inner().unwrap_or_else(|p| p.into_inner()));
    p.files_created = maker.created.into_inner();
    p.bytes_written = maker.written.into_inner();
    p.reused = maker.reused.into_inner();
    let exists = states
        .iter()
        .filter(|s| s.load(Relaxed) & ENTRY_EXISTS != 0)
        .count() as u64;
    arena.set_exists_count(set).store(exists, SeqCst);
    match maker
        .first_err
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
    {
        Some(PrepErr::Stop) => return Err(Interrupted.into()),
        Some(PrepErr::Io(m)) => anyhow::bail!("{m}"),
        None => {}
    }
    if signal::interrupted() {
        return Err(Interrupted.into());
    }
    if !spec.cached && !maker.is_dirs {
        drop_cache(rfd.as_raw_fd(), lay, states);
    }
    Ok(())
}

/// Make the tree's directories below the root `rfd`, parents first (with reuse, one that is
/// already there is kept), and add their identities and the root's to `p.known`, also when
/// this stops on an error or Ctrl-C.
fn create_dirs(
    rfd: &OwnedFd,
    lay: &SetLayout,
    reuse_existing: bool,
    p: &mut Prepared,
) -> Result<()> {
    let mut dir_inos = vec![fstat(rfd.as_raw_fd())?.key];
    for d in 1..lay.dir_count() {
        if d % 256 == 0 && signal::interrupted() {
            p.known = p.known.merged(dir_inos);
            return Err(Interrupted.into());
        }
        let path = lay.dir_path(d);
        if let Err(e) = crate::sys::mkdirat(crate::sys::AT_FDCWD, &path, 0o755) {
            let ok_existing = reuse_existing
                && e.raw_os_error() == Some(libc::EEXIST)
                && lstat(&path).is_ok_and(|st| is_dir(&st));
            if !ok_existing {
                p.known = p.known.merged(dir_inos);
                anyhow::bail!("creating {path}: {e}");
            }
        } else {
            mark_new_dir(&path);
        }
        match lstat(&path) {
            Ok(st) => dir_inos.push(st.key),
            Err(e) => {
                p.known = p.known.merged(dir_inos);
                anyhow::bail!("creating {path}: {e}");
            }
        }
    }
    p.known = p.known.merged(dir_inos);
    Ok(())
}

/// Mark a directory preparation just made as fsbench's (through a descriptor opened without
/// following a link), so a run killed before it writes its manifest leaves a tree the next
/// run can tell as its own. Where the file system has no user xattrs nothing is marked.
fn mark_new_dir(path: &CPath) {
    if let Ok(fd) = open_dir(libc::AT_FDCWD, path, false) {
        crate::safety::fd_set_mark(&fd, b"created");
    }
}

/// What the threads creating a fileset's entries share: the layout and entry states, what
/// they may do, the counters they add to, the first error one of them met (which stops the
/// others) and the identities of what they created.
struct EntryMaker<'a> {
    /// With reuse: the identities the manifests recorded; an entry found that is not one of
    /// them is not reused.
    known: &'a Known,
    lay: &'a SetLayout,
    states: &'a [AtomicU32],
    /// For `--verify`: the preallocated files' stream and what each entry holds.
    arena: &'a Arena,
    set: usize,
    reuse_existing: bool,
    is_dirs: bool,
    /// Thread `t` handles entries t, t + threads, t + 2 * threads, ...
    threads: usize,
    created: AtomicU64,
    written: AtomicU64,
    reused: AtomicU64,
    stop: AtomicBool,
    first_err: Mutex<Option<PrepErr>>,
    inos: Mutex<Vec<u64>>,
    /// The live line's counters (`--progress`): bytes laid out.
    board: Option<std::sync::Arc<crate::runner::live::Board>>,
}

impl EntryMaker<'_> {
    /// Run the creating threads and wait for them; an error here is only a thread that could
    /// not be started (an entry's error is in `first_err`).
    fn run(&self) -> Result<()> {
        std::thread::scope(|s| -> Result<()> {
            for t in 0..self.threads {
                let body = move || self.worker(t);
                if let Err(e) = std::thread::Builder::new().spawn_scoped(s, body) {
                    self.stop.store(true, SeqCst);
                    anyhow::bail!("starting a fileset preparation thread: {e}");
                }
            }
            Ok(())
        })
    }

    /// One thread: create (or check, with reuse) its share of the entries in index order and
    /// record in the arena which exist, until done, stopped by another thread, an error or
    /// Ctrl-C.
    fn worker(&self, t: usize) {
        let mut buf = vec![0xA5u8; 1 << 20];
        let mut mine: Vec<u64> = Vec::new();
        let mut i = t;
        while i < self.lay.len() {
            if self.stop.load(Relaxed) {
                break;
            }
            if signal::interrupted() {
                self.fail(PrepErr::Stop);
                break;
            }
            let want = self.lay.preallocated(i);
            if !want && !self.reuse_existing {
                // Nothing on disk to create or check: skip building the path.
                self.states[i].store(0, Relaxed);
                i += self.threads;
                continue;
            }
            match self.entry(i, want, &mut buf, &mut mine) {
                Ok(exists) => self.states[i].store(if exists { ENTRY_EXISTS } else { 0 }, Relaxed),
                Err(e) => {
                    self.fail(e);
                    break;
                }
            }
            i += self.threads;
        }
        self.inos
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(mine);
    }

    /// Stop every thread and keep the first real error (an interruption gives way to one).
    fn fail(&self, e: PrepErr) {
        self.stop.store(true, SeqCst);
        let mut g = self.first_err.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() || matches!(*g, Some(PrepErr::Stop)) {
            *g = Some(e);
        }
    }

    /// Entry `i` (`want`: preallocated): whether it exists when this returns. With reuse,
    /// what is already there is looked at first.
    fn entry(
        &self,
        i: usize,
        want: bool,
        buf: &mut [u8],
        mine: &mut Vec<u64>,
    ) -> Result<bool, PrepErr> {
        let path = self.lay.path(i);
        let size = self.lay.size(i);
        let existing = if self.reuse_existing {
            lstat(&path).ok()
        } else {
            None
        };
        if let Some(st) = existing {
            // Reused only when fsbench recorded making it (on one host the whole tree was
            // checked against the manifests already; a rank of a shared tree checks its own
            // tagged entries against its own manifest here).
            if !self.known.contains(st.key) {
                return Err(PrepErr::Io(format!(
                    "{path} is not an entry fsbench recorded making (in its manifest): refusing to reuse it (move it away or drop reuse)"
                )));
            }
        }
        if self.is_dirs {
            return self.dir_entry(&path, existing, want, mine);
        }
        self.file_entry(i, &path, size, existing, want, buf, mine)
    }

    /// A leaf directory of a set of directories: reuse one that is there, else make it when
    /// it is preallocated.
    fn dir_entry(
        &self,
        path: &CPath,
        existing: Option<Ident>,
        want: bool,
        mine: &mut Vec<u64>,
    ) -> Result<bool, PrepErr> {
        if existing.is_some_and(|st| is_dir(&st)) {
            self.reused.fetch_add(1, Relaxed);
            return Ok(true);
        }
        if want {
            if let Err(e) = crate::sys::mkdirat(crate::sys::AT_FDCWD, path, 0o755) {
                return Err(PrepErr::Io(format!("creating {path}: {e}")));
            }
            mark_new_dir(path);
            if let Ok(st) = lstat(path) {
                mine.push(st.key);
            }
            self.created.fetch_add(1, Relaxed);
        }
        Ok(want)
    }

    /// A file: reuse one of the right size (or any, when not preallocated), else create it
    /// (O_EXCL) or rewrite the reused one, and fill it with `size` bytes.
    #[allow(clippy::too_many_arguments)]
    fn file_entry(
        &self,
        i: usize,
        path: &CPath,
        size: u64,
        existing: Option<Ident>,
        want: bool,
        buf: &mut [u8],
        mine: &mut Vec<u64>,
    ) -> Result<bool, PrepErr> {
        let verify_key = super::verify::prealloc_key(self.arena, self.set, i);
        let mut flags = libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        if let Some(st) = existing {
            // Verified ours (the manifest lists everything in the tree).
            if st.size == size || !want {
                if verify_key.is_some() {
                    // Not written by this run: what it holds is not known.
                    super::verify::prepared(self.arena, self.set, i, None);
                }
                self.reused.fetch_add(1, Relaxed);
                return Ok(true);
            }
        } else if want {
            flags |= libc::O_CREAT | libc::O_EXCL;
        } else {
            return Ok(false);
        }
        let f = crate::sys::openat(crate::sys::AT_FDCWD, path, flags, 0o644)
            .map_err(|e| PrepErr::Io(format!("creating {path}: {e}")))?;
        if existing.is_none() {
            // Marked before it holds data, so a run killed before it writes its manifest
            // leaves a tree the next run can tell as fsbench's (manifest.rs).
            crate::safety::fd_set_mark(&f, b"created");
        }
        if let Ok(st) = fstat(f.as_raw_fd()) {
            mine.push(st.key);
        }
        // The file is ours from here on, even if writing it fails.
        self.states[i].store(ENTRY_EXISTS, Relaxed);
        // Truncating the file we just opened (reuse with a new size).
        if existing.is_some() {
            crate::sys::ftruncate(f.as_raw_fd(), 0)
                .map_err(|e| PrepErr::Io(format!("truncating {path}: {e}")))?;
        }
        if verify_key.is_some() {
            // Until it is written whole, the file's content is not known.
            super::verify::prepared(self.arena, self.set, i, None);
        }
        fill_fd(f.as_raw_fd(), path, size, buf, verify_key)?;
        if verify_key.is_some() {
            super::verify::prepared(self.arena, self.set, i, Some(size));
        }
        self.created.fetch_add(1, Relaxed);
        self.written.fetch_add(size, Relaxed);
        if let Some(b) = &self.board {
            b.layout_done.fetch_add(size, Relaxed);
        }
        Ok(true)
    }
}

/// Write back the file system once, then drop each existing file's pages from the cache, so
/// the run starts uncached (Filebench's behaviour unless `cached` is set).
fn drop_cache(root: RawFd, lay: &SetLayout, states: &[std::sync::atomic::AtomicU32]) {
    // SAFETY: open descriptor.
    unsafe { libc::syncfs(root) };
    for (i, state) in states.iter().enumerate().take(lay.len()) {
        if state.load(Relaxed) & ENTRY_EXISTS == 0 {
            continue;
        }
        let path = lay.path(i);
        let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW;
        // The descriptor is closed right after.
        if let Ok(fd) = crate::sys::openat(crate::sys::AT_FDCWD, &path, flags, 0) {
            let _ = crate::sys::fadvise(fd.as_raw_fd(), libc::POSIX_FADV_DONTNEED);
        }
    }
}

/// What fsbench created in this fileset: the directories it made (or the manifest listed)
/// and the entries the arena says exist now (created by preallocation or by flowops).
fn known_now(p: &Prepared, lay: &SetLayout, arena: &Arena, set: usize) -> Known {
    let states = arena.entries(set);
    let mut inos = Vec::new();
    for (i, s) in states.iter().enumerate().take(lay.len()) {
        if s.load(Acquire) & ENTRY_EXISTS != 0 {
            if let Ok(st) = lstat(&lay.path(i)) {
                if inos.try_reserve(1).is_err() {
                    break;
                }
                inos.push(st.key);
            }
        }
    }
    p.known.merged(inos)
}

/// Remove a fileset tree, but only what fsbench created in it. Returns the note about
/// entries left behind because fsbench did not create them.
pub fn remove(p: &Prepared, lay: &SetLayout, arena: &Arena, set: usize) -> Result<Option<String>> {
    if let Some(rank) = lay.shared_rank {
        // This rank's entries only; rank 0 removes the shared directories at the end.
        shared_tree::remove_entries(p, lay, arena, set, rank)?;
        return Ok(None);
    }
    let parent = p.root.parent().unwrap_or(Path::new("."));
    let Ok(pfd) = open_dir(libc::AT_FDCWD, &ccstr(parent.as_os_str().as_bytes()), true) else {
        return Ok(None);
    };
    match open_dir(pfd.as_raw_fd(), &ccstr(p.name.as_bytes()), false) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => anyhow::bail!("not removing {}: {e}", p.root.display()),
        Ok(fd) => {
            if !(crate::safety::fd_is_marked(&fd) || p.created_root) {
                anyhow::bail!(
                    "not removing {}: it is not marked as created by fsbench",
                    p.root.display()
                );
            }
        }
    }
    let known = known_now(p, lay, arena, set);
    let s = sweep_tree(parent, &p.name, &known, false)?;
    if s.left > 0 {
        // The tree stays for the entries it holds; record what is ours for the next run.
        let _ = write_manifest(parent, &p.name, &known);
    }
    if let Some(e) = &s.error {
        anyhow::bail!("removing {}: {e}", p.root.display());
    }
    Ok(s.note())
}

/// Remove a fileset this process laid out and then left, with its manifest, to another
/// part of a larger run (`crate::mpi` with `--reorder-ranks`: another rank ran over it and
/// recorded in the manifest what its flowops created there). Only what the manifest lists
/// is removed, by identity, as in [`remove`]; the note says what was left. `created_root`:
/// this process made the root (its removal is allowed where xattrs do not work).
pub fn remove_left(spec: &FilesetSpec, created_root: bool) -> Result<Option<String>> {
    let (parent, pfd) = open_parent(spec)?;
    let cname = ccstr(spec.name.as_bytes());
    match open_dir(pfd.as_raw_fd(), &cname, false) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => anyhow::bail!("not removing {}: {e}", spec.root.display()),
        Ok(fd) => {
            if !(crate::safety::fd_is_marked(&fd) || created_root) {
                anyhow::bail!(
                    "not removing {}: it is not marked as created by fsbench",
                    spec.root.display()
                );
            }
        }
    }
    let Some(known) = read_manifest(pfd.as_raw_fd(), &spec.name) else {
        anyhow::bail!(
            "not removing {}: its manifest {} is gone or not fsbench's",
            spec.root.display(),
            parent
                .join(format!(".{}.fsbench-manifest", spec.name))
                .display()
        );
    };
    let s = sweep_tree(parent, &spec.name, &known, false)?;
    if let Some(e) = &s.error {
        anyhow::bail!("removing {}: {e}", spec.root.display());
    }
    Ok(s.note())
}

/// Keep a fileset (`--keep`): record what fsbench created in it, for the next run.
pub fn keep(p: &Prepared, lay: &SetLayout, arena: &Arena, set: usize) -> Result<()> {
    if let Some(rank) = lay.shared_rank {
        return shared_tree::keep_entries(p, lay, arena, set, rank);
    }
    let parent = p.root.parent().unwrap_or(Path::new("."));
    write_manifest(parent, &p.name, &known_now(p, lay, arena, set))
}

#[cfg(test)]
mod tests;
