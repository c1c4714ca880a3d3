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
use super::shared::{Arena, Rotor, ENTRY_BUSY, ENTRY_EXISTS, ENTRY_OPEN_ONE};
use super::vars::Rng;
use crate::runner::signal;
use anyhow::Result;
use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::*;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::Mutex;

mod manifest;
pub mod shared_tree;

pub use manifest::Sweep;
use manifest::*;

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

#[derive(Debug, Clone, Copy)]
struct DirNode {
    parent: u32,
    num: u32,
}

/// Where every entry of a fileset lives and how big it is, in compact form.
#[derive(Debug, Clone)]
pub struct SetLayout {
    root: Vec<u8>,
    /// A `define file`: the single entry is `root/NAME`.
    file_name: Option<Vec<u8>>,
    /// Appended to every entry's name: a rank's tag (`.r00003`) when the directories are
    /// shared by the ranks of a run ([`FilesetSpec::shared_rank`]), else empty.
    tag: Vec<u8>,
    shared_rank: Option<u32>,
    /// Tree directories, parents first; index 0 is the root.
    dirs: Vec<DirNode>,
    /// First entry index of each leaf range (ascending) and the directory holding the range.
    leaf_start: Vec<u64>,
    leaf_dir: Vec<u32>,
    sizes: Vec<u64>,
    /// FNV state after hashing "NAME#": the prealloc choice continues it with the index.
    prealloc_seed: u64,
    prealloc_cut: f64,
}

fn fnv(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

fn name_seed(name: &str) -> u64 {
    fnv(0xcbf2_9ce4_8422_2325, name.as_bytes())
}

fn try_vec<T>(n: u64, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    usize::try_from(n)
        .ok()
        .and_then(|n| v.try_reserve_exact(n).ok())
        .ok_or_else(|| crate::usage!("cannot allocate memory for {n} {what}: use fewer entries"))?;
    Ok(v)
}

fn try_push<T>(v: &mut Vec<T>, x: T) -> Result<()> {
    if v.len() == v.capacity() {
        v.try_reserve(v.len().max(16))
            .map_err(|_| crate::usage!("out of memory laying out a fileset: use fewer entries"))?;
    }
    v.push(x);
    Ok(())
}

/// Bytes of memory a fileset's layout, arena state and cleanup record need, estimated before
/// anything is allocated (an upper bound for fixed widths; gamma widths are similar).
pub fn estimate_bytes(spec: &FilesetSpec) -> u64 {
    let n = spec.count() as f64;
    let width = if spec.dirwidth.is_finite() {
        spec.dirwidth.max(1.0)
    } else {
        1e9
    };
    let leaves = n.min(2.0 * n / width + 1.0);
    // size 8 + arena state 4 + cleanup identity 8 per entry; leaf range 12, directory 8 and a
    // work frame 24 per leaf (two directories per leaf at most).
    (n * 20.0 + leaves * (12.0 + 16.0 + 24.0) + 4096.0) as u64
}

/// Memory of one layout as held by every worker process.
pub fn estimate_layout_bytes(spec: &FilesetSpec) -> u64 {
    let n = spec.count() as f64;
    estimate_bytes(spec).saturating_sub((n * 12.0) as u64)
}

impl SetLayout {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }
    /// Number of tree directories (the root included).
    pub fn dir_count(&self) -> usize {
        self.dirs.len()
    }
    pub fn size(&self, i: usize) -> u64 {
        self.sizes[i]
    }
    /// Is entry `i` created when the run is prepared (`prealloc` percent, spread evenly)?
    pub fn preallocated(&self, i: usize) -> bool {
        let mut d = [0u8; 20];
        let mut k = 20;
        let mut v = i as u64;
        loop {
            k -= 1;
            d[k] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        let h = fnv(self.prealloc_seed, &d[k..]) % 10_000;
        (h as f64) < self.prealloc_cut
    }
    fn write_dir(&self, d: u32, out: &mut CPath) {
        let node = self.dirs[d as usize];
        if node.parent == NO_PARENT {
            out.push(&self.root);
        } else {
            self.write_dir(node.parent, out);
            out.push(b"/");
            out.push_num(node.num as u64);
        }
    }
    /// Path of tree directory `d` (0 is the root).
    pub fn dir_path(&self, d: usize) -> CPath {
        let mut p = CPath::new();
        self.write_dir(d as u32, &mut p);
        p
    }
    /// Path of entry `i`.
    pub fn path(&self, i: usize) -> CPath {
        let mut p = CPath::new();
        if let Some(name) = &self.file_name {
            p.push(&self.root);
            p.push(b"/");
            p.push(name);
            p.push(&self.tag);
            return p;
        }
        let r = self.leaf_start.partition_point(|&s| s <= i as u64) - 1;
        self.write_dir(self.leaf_dir[r], &mut p);
        p.push(b"/");
        p.push_num(i as u64 + 1);
        p.push(&self.tag);
        p
    }
    /// Whether the directories are shared by the ranks of a run (entries tagged per rank).
    pub fn shared(&self) -> bool {
        self.shared_rank.is_some()
    }
    /// Heap bytes this layout holds.
    pub fn heap_bytes(&self) -> usize {
        self.root.capacity()
            + self.dirs.capacity() * std::mem::size_of::<DirNode>()
            + self.leaf_start.capacity() * 8
            + self.leaf_dir.capacity() * 4
            + self.sizes.capacity() * 8
    }
}

/// Compute where every entry lives and how big it is. Deterministic (seeded by the fileset's
/// name), so a child process computes exactly what the parent created. Checks Ctrl-C, so a
/// huge layout can be interrupted.
pub fn layout(spec: &FilesetSpec) -> Result<SetLayout> {
    let n = spec.count();
    if n > MAX_ENTRIES {
        crate::bail_usage!(
            "fileset '{}': {n} entries is more than the {MAX_ENTRIES} a fileset can hold",
            spec.name
        );
    }
    let root = spec.root.as_os_str().as_bytes().to_vec();
    if root.contains(&0) || spec.name.as_bytes().contains(&0) {
        crate::bail_usage!("fileset '{}': its path contains a NUL byte", spec.name);
    }
    let mut rng = Rng::new(name_seed(&spec.name));
    let mut lay = SetLayout {
        root,
        file_name: None,
        tag: spec
            .shared_rank
            .map(|r| format!(".r{r:05}").into_bytes())
            .unwrap_or_default(),
        shared_rank: spec.shared_rank,
        dirs: vec![DirNode {
            parent: NO_PARENT,
            num: 0,
        }],
        leaf_start: Vec::new(),
        leaf_dir: Vec::new(),
        sizes: try_vec(n, "fileset entries")?,
        prealloc_seed: fnv(name_seed(&spec.name), b"#"),
        prealloc_cut: spec.prealloc_pct * 100.0,
    };
    // Each path component is '/' plus at least 8 digits.
    let comp = 1 + 8usize.max(n.to_string().len());
    let room = (PATH_MAX - 1).saturating_sub(lay.root.len() + comp + lay.tag.len());
    let max_levels = room / comp;
    if spec.is_file {
        if lay.root.len() + 1 + spec.name.len() + lay.tag.len() >= PATH_MAX {
            crate::bail_usage!("file '{}': its path is too long", spec.name);
        }
        lay.file_name = Some(spec.name.as_bytes().to_vec());
        lay.leaf_start.push(0);
        lay.leaf_dir.push(0);
    } else if n > 0 {
        if lay.root.len() + comp + lay.tag.len() >= PATH_MAX {
            crate::bail_usage!(
                "fileset '{}': the path {} is too long",
                spec.name,
                spec.root.display()
            );
        }
        let shape = TreeShape::new(spec, &mut rng, max_levels as u64)?;
        shape.build(spec, &mut lay, &mut rng, n)?;
    }
    draw_sizes(spec, &mut lay, &mut rng, n)?;
    Ok(lay)
}

/// Draw each entry's size (0 for a set of directories), in index order.
fn draw_sizes(spec: &FilesetSpec, lay: &mut SetLayout, rng: &mut Rng, n: u64) -> Result<()> {
    for i in 0..n {
        if i % 65_536 == 0 && signal::interrupted() {
            return Err(Interrupted.into());
        }
        let size = if spec.is_dirs() {
            0
        } else {
            // NaN and negatives become 0; huge values saturate (the free-space check refuses).
            spec.size.sample(rng).max(0.0) as u64
        };
        lay.sizes.push(size);
    }
    Ok(())
}

/// A directory of the tree still to be split: it holds entries `lo..hi` at depth `level`.
struct Frame {
    dir: u32,
    lo: u64,
    hi: u64,
    level: u64,
}

/// How a fileset's directory tree is shaped: what a leaf holds, how inner directories split,
/// an optional fixed depth and the deepest the path length allows.
struct TreeShape {
    /// What a leaf directory holds.
    width: f64,
    /// Inner directories split at least in two, since a mean width below 2 cannot build a
    /// tree (width 1 would be a chain of directories as deep as the fileset is large:
    /// Filebench divides by log(1) there).
    split: f64,
    depth_limit: Option<u64>,
    max_levels: u64,
}

impl TreeShape {
    /// The shape of `spec`'s tree; a `dirdepthrv` depth is drawn here (before any other draw).
    fn new(spec: &FilesetSpec, rng: &mut Rng, max_levels: u64) -> Result<TreeShape> {
        let width = if spec.dirwidth.is_finite() {
            spec.dirwidth.max(1.0)
        } else {
            1e9
        };
        let depth_limit = match &spec.dirdepth {
            Some(d) => {
                let v = d.sample(rng).round();
                if !v.is_finite() || v > max_levels as f64 {
                    crate::bail_usage!(
                        "fileset '{}': dirdepthrv gives a depth of {v}, but paths below {} allow at most {max_levels} levels",
                        spec.name,
                        spec.root.display()
                    );
                }
                Some(v.max(1.0) as u64)
            }
            None => None,
        };
        Ok(TreeShape {
            width,
            split: width.max(2.0),
            depth_limit,
            max_levels,
        })
    }

    /// Split the root into directories, depth first, until every directory is a leaf; record
    /// the directories and the leaf ranges (in ascending order) in `lay`.
    fn build(&self, spec: &FilesetSpec, lay: &mut SetLayout, rng: &mut Rng, n: u64) -> Result<()> {
        let mut stack = vec![Frame {
            dir: 0,
            lo: 0,
            hi: n,
            level: 0,
        }];
        let mut steps = 0u64;
        while let Some(f) = stack.pop() {
            steps += 1;
            if steps % 4096 == 0 && signal::interrupted() {
                return Err(Interrupted.into());
            }
            let count = f.hi - f.lo;
            let at_depth = self.depth_limit.is_some_and(|d| f.level >= d);
            let fits = match self.depth_limit {
                Some(_) => at_depth,
                None => count as f64 <= self.width,
            };
            if fits || count <= 1 && f.level > 0 {
                try_push(&mut lay.leaf_start, f.lo)?;
                try_push(&mut lay.leaf_dir, f.dir)?;
                continue;
            }
            if f.level >= self.max_levels {
                crate::bail_usage!(
                    "fileset '{}': the tree would be deeper than paths below {} allow ({} levels): use a larger dirwidth or a shorter path",
                    spec.name,
                    spec.root.display(),
                    self.max_levels
                );
            }
            let children = self.children(spec, rng, count, f.level);
            Self::split_dir(spec, lay, &mut stack, &f, children)?;
        }
        Ok(())
    }

    /// How many subdirectories a directory of `count` entries at `level` gets.
    fn children(&self, spec: &FilesetSpec, rng: &mut Rng, count: u64, level: u64) -> u64 {
        let children = if let Some(d) = self.depth_limit {
            // Fixed depth: the width that spreads `count` items over the remaining levels.
            (count as f64)
                .powf(1.0 / (d - level) as f64)
                .ceil()
                .max(1.0) as u64
        } else if spec.dirgamma > 0.0 {
            let shape = spec.dirgamma / 1000.0;
            (rng.gamma(shape) * self.width / shape).round().max(2.0) as u64
        } else {
            // A full tree: leaves hold `width` items; each subtree below this level holds
            // at most width * split^(levels below) items. cap < count on exit, so there
            // are at least two children and the recursion ends.
            let mut cap = self.width;
            while cap * self.split < count as f64 {
                cap *= self.split;
            }
            (count as f64 / cap).ceil() as u64
        };
        children.clamp(1, count.max(1))
    }

    /// Give directory `f` its subdirectories, its entries shared among them in equal runs,
    /// and queue them for splitting.
    fn split_dir(
        spec: &FilesetSpec,
        lay: &mut SetLayout,
        stack: &mut Vec<Frame>,
        f: &Frame,
        children: u64,
    ) -> Result<()> {
        let count = f.hi - f.lo;
        let per = count.div_ceil(children);
        let first = lay.dirs.len();
        let made = count.div_ceil(per);
        if first as u64 + made >= NO_PARENT as u64 {
            crate::bail_usage!("fileset '{}': too many directories", spec.name);
        }
        for k in 0..made {
            try_push(
                &mut lay.dirs,
                DirNode {
                    parent: f.dir,
                    num: (k + 1) as u32,
                },
            )?;
        }
        // Pushed in reverse so they pop in ascending order: leaf ranges come out sorted.
        for k in (0..made).rev() {
            let lo = f.lo + k * per;
            try_push(
                stack,
                Frame {
                    dir: (first as u64 + k) as u32,
                    lo,
                    hi: (lo + per).min(f.hi),
                    level: f.level + 1,
                },
            )?;
        }
        Ok(())
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

/// Remove the old fileset fsbench left at the root (a kept or killed run: what its
/// manifests list, `known`), and the ranks' manifests; refuse when anything else is in it.
fn clear_old_fileset(
    parent: &Path,
    pfd: &OwnedFd,
    spec: &FilesetSpec,
    known: &Known,
) -> Result<()> {
    let s = sweep_tree(parent, &spec.name, known, false)?;
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
    Ok(())
}

/// Create (or reuse) a fileset on disk and record which entries exist in the arena. On an
/// error or Ctrl-C what was created is removed again (unless `keep`) before returning.
pub fn prepare(
    spec: &FilesetSpec,
    lay: &SetLayout,
    arena: &Arena,
    set: usize,
    keep: bool,
) -> Result<Prepared> {
    let (parent, pfd) = open_parent(spec)?;
    if spec.shared_rank.is_some() {
        return shared_tree::prepare_entries(spec, lay, arena, set, keep, &pfd);
    }
    let cname = ccstr(spec.name.as_bytes());
    let mut known = Known::default();
    let mut reuse_existing = false;
    if root_is_ours(&pfd, &cname, spec)? {
        // A run whose ranks shared the tree left a manifest for each rank too.
        known = shared_tree::read_all_manifests(parent, pfd.as_raw_fd(), &spec.name);
        if spec.reuse {
            let s = sweep_tree(parent, &spec.name, &known, true)?;
            if let Some(n) = s.note() {
                crate::bail_usage!(
                    "fileset '{}': {n}; refusing to reuse {} (move them away or remove it)",
                    spec.name,
                    spec.root.display()
                );
            }
            reuse_existing = true;
        } else {
            clear_old_fileset(parent, &pfd, spec, &known)?;
            known = Known::default();
        }
    }
    let mut created_root = false;
    if !reuse_existing {
        // SAFETY: NUL-terminated name relative to a directory descriptor we own.
        if unsafe { libc::mkdirat(pfd.as_raw_fd(), cname.as_ptr(), 0o755) } != 0 {
            anyhow::bail!("creating {}: {}", spec.root.display(), errno());
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
        board: crate::runner::live::board(),
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
        // SAFETY: NUL-terminated path.
        if unsafe { libc::mkdir(path.as_ptr(), 0o755) } != 0 {
            let e = errno();
            let ok_existing = reuse_existing
                && e.raw_os_error() == Some(libc::EEXIST)
                && lstat(&path).is_ok_and(|st| is_dir(&st));
            if !ok_existing {
                p.known = p.known.merged(dir_inos);
                anyhow::bail!("creating {path}: {e}");
            }
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
            // SAFETY: NUL-terminated path.
            if unsafe { libc::mkdir(path.as_ptr(), 0o755) } != 0 {
                return Err(PrepErr::Io(format!("creating {path}: {}", errno())));
            }
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
        // SAFETY: NUL-terminated path; mode for O_CREAT.
        let fd = unsafe { libc::open(path.as_ptr(), flags, 0o644) };
        if fd < 0 {
            return Err(PrepErr::Io(format!("creating {path}: {}", errno())));
        }
        // SAFETY: fd was just opened and is owned by nobody else.
        let f = unsafe { OwnedFd::from_raw_fd(fd) };
        if let Ok(st) = fstat(f.as_raw_fd()) {
            mine.push(st.key);
        }
        // The file is ours from here on, even if writing it fails.
        self.states[i].store(ENTRY_EXISTS, Relaxed);
        // SAFETY: truncating the file we just opened (reuse with a new size).
        if existing.is_some() && unsafe { libc::ftruncate(fd, 0) } != 0 {
            return Err(PrepErr::Io(format!("truncating {path}: {}", errno())));
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
    for i in 0..lay.len() {
        if states[i].load(Relaxed) & ENTRY_EXISTS == 0 {
            continue;
        }
        let path = lay.path(i);
        // SAFETY: NUL-terminated path; the descriptor is closed right after.
        unsafe {
            let fd = libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            );
            if fd >= 0 {
                libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED);
                libc::close(fd);
            }
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

/// What a flowop needs from the picker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Exists,
    Absent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Picked {
    Got(usize),
    /// No entry is (or can become) in the wanted state: Filebench's "out of resources".
    NoRsc,
}

fn matches(state: u32, want: Want) -> bool {
    (state & ENTRY_EXISTS != 0) == (want == Want::Exists)
}

/// How many descriptors have the entry open (Filebench's `fse_open_cnt`).
pub fn open_count(state: u32) -> u32 {
    state / ENTRY_OPEN_ONE
}

/// Where a pick starts looking, as in Filebench's `fileset_pick`.
pub enum From<'a> {
    /// The fileset's shared rotor: openfile, deletefile and statfile share `Rotor::Exists`,
    /// createfile uses `Rotor::Absent`, listdir `Rotor::Dir`. The next pick starts after the
    /// entry picked, so files are taken in turn.
    Shared(Rotor),
    /// A rotor of the thread's own (`openfile` with `opennext`/`rotatefd`: Filebench's
    /// per-thread `fs_file_exrotor[tid]`).
    Private(&'a mut u32),
    /// `indexed=N`: the first entry at or after N (wrapping) in the wanted state.
    Index(usize),
}

/// Pick an entry in the wanted state, starting at `from` and taking the next one in index
/// order that is in that state and not busy. The entry is marked busy for the caller, who
/// clears the mark with [`unbusy`] as soon as the operation on it is done (Filebench keeps
/// entries busy only while picking, opening, deleting or closing them; an open file is not
/// busy). When every entry in the wanted state is busy, wait briefly and look again (Filebench
/// gives up with "out of resources"; the wait is microseconds here).
pub fn pick(arena: &Arena, set: usize, want: Want, mut from: From) -> Picked {
    let states = arena.entries(set);
    let n = states.len();
    if n == 0 {
        return Picked::NoRsc;
    }
    for round in 0..2000 {
        let have = arena.set_exists_count(set).load(Acquire) as usize;
        if (want == Want::Exists && have == 0) || (want == Want::Absent && have >= n) {
            return Picked::NoRsc;
        }
        let start = match &from {
            From::Shared(r) => arena.rotor(set, *r).load(Relaxed) as usize,
            From::Private(r) => **r as usize,
            From::Index(i) => *i,
        } % n;
        let mut any_match = false;
        for k in 0..n {
            let i = (start + k) % n;
            let s = states[i].load(Acquire);
            if !matches(s, want) {
                continue;
            }
            any_match = true;
            if s & ENTRY_BUSY != 0
                || states[i]
                    .compare_exchange(s, s | ENTRY_BUSY, AcqRel, Relaxed)
                    .is_err()
            {
                continue;
            }
            let next = ((i + 1) % n) as u32;
            match &mut from {
                From::Shared(r) => arena.rotor(set, *r).store(next, Relaxed),
                From::Private(r) => **r = next,
                From::Index(_) => {}
            }
            return Picked::Got(i);
        }
        if !any_match || arena.stopping() {
            return Picked::NoRsc;
        }
        std::thread::sleep(std::time::Duration::from_micros(if round < 10 {
            50
        } else {
            500
        }));
    }
    Picked::NoRsc
}

/// Clear the busy mark (Filebench's `fileset_unbusy`): optionally record whether the entry
/// now exists, and add `open_delta` to its open count.
pub fn unbusy(arena: &Arena, set: usize, i: usize, exists: Option<bool>, open_delta: i32) {
    let st = &arena.entries(set)[i];
    let mut old = st.load(Acquire);
    loop {
        let was = old & ENTRY_EXISTS != 0;
        let now = exists.unwrap_or(was);
        let opens = (open_count(old) as i64 + open_delta as i64).max(0) as u32;
        let new = (opens * ENTRY_OPEN_ONE) | if now { ENTRY_EXISTS } else { 0 };
        match st.compare_exchange(old, new, AcqRel, Acquire) {
            Ok(_) => {
                if was != now {
                    let c = arena.set_exists_count(set);
                    if now {
                        c.fetch_add(1, AcqRel);
                    } else {
                        c.fetch_sub(1, AcqRel);
                    }
                }
                return;
            }
            Err(x) => old = x,
        }
    }
}

/// Mark an entry busy that the caller already knows (a file it has open), waiting while
/// another thread holds it busy (Filebench's closefile and `deletefile fd=N`).
pub fn busy_wait(arena: &Arena, set: usize, i: usize) {
    let st = &arena.entries(set)[i];
    loop {
        let s = st.load(Acquire);
        if s & ENTRY_BUSY == 0
            && st
                .compare_exchange(s, s | ENTRY_BUSY, AcqRel, Relaxed)
                .is_ok()
        {
            return;
        }
        std::thread::yield_now();
    }
}

/// Clear the busy mark and record whether the entry now exists.
pub fn release(arena: &Arena, set: usize, i: usize, exists: bool) {
    unbusy(arena, set, i, Some(exists), 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::lexer::Pos;
    use crate::workload::model::Param;
    use crate::workload::shared::Layout;

    fn spec(root: &Path, n: u64, width: f64, gamma: f64) -> FilesetSpec {
        FilesetSpec {
            name: "fs".into(),
            root: root.join("fs"),
            is_file: false,
            entries: n,
            size: Param::Const(1000.0),
            dirwidth: width,
            dirgamma: gamma,
            dirdepth: None,
            leafdirs: 0,
            prealloc_pct: 50.0,
            paralloc: true,
            reuse: false,
            readonly: false,
            writeonly: false,
            cached: true,
            shared_rank: None,
            pos: Pos::default(),
        }
    }

    fn paths(l: &SetLayout) -> Vec<PathBuf> {
        (0..l.len())
            .map(|i| l.path(i).as_path().to_path_buf())
            .collect()
    }

    #[test]
    fn tree_shape_follows_dirwidth() {
        let d = tempfile::tempdir().unwrap();
        let l = layout(&spec(d.path(), 1000, 10.0, 0.0)).unwrap();
        assert_eq!(l.len(), 1000);
        // 1000 files, width 10: 100 leaf dirs of 10 + 10 middle dirs + root.
        assert_eq!(l.dir_count(), 111);
        // 500 files, width 20: root, 2 middle dirs of 250, each with 13 leaves of <= 20.
        assert_eq!(
            layout(&spec(d.path(), 500, 20.0, 0.0)).unwrap().dir_count(),
            29
        );
        let all = paths(&l);
        let uniq: std::collections::HashSet<_> = all.iter().collect();
        assert_eq!(uniq.len(), 1000);
        assert_eq!(all[0], d.path().join("fs/00000001/00000001/00000001"));
        assert_eq!(all[999], d.path().join("fs/00000010/00000010/00001000"));
        // Every entry's directory is one of the tree's directories.
        let dirs: std::collections::HashSet<PathBuf> = (0..l.dir_count())
            .map(|k| l.dir_path(k).as_path().to_path_buf())
            .collect();
        assert!(all.iter().all(|p| dirs.contains(p.parent().unwrap())));
        let g = layout(&spec(d.path(), 1000, 10.0, 1500.0)).unwrap();
        assert_eq!(g.len(), 1000);
        assert_ne!(g.dir_count(), 111, "gamma widths vary");
        let pre = (0..l.len()).filter(|&i| l.preallocated(i)).count();
        assert!((400..600).contains(&pre), "{pre}");
    }

    #[test]
    fn width_one_terminates_with_a_binary_tree() {
        let d = tempfile::tempdir().unwrap();
        let t = std::time::Instant::now();
        let l = layout(&spec(d.path(), 1000, 1.0, 0.0)).unwrap();
        assert!(t.elapsed().as_secs() < 2);
        assert_eq!(l.len(), 1000);
        let all = paths(&l);
        let uniq: std::collections::HashSet<_> = all.iter().collect();
        assert_eq!(uniq.len(), 1000);
        // One entry per leaf directory, about log2(1000) levels deep.
        let depth = all
            .iter()
            .map(|p| p.strip_prefix(d.path()).unwrap().components().count())
            .max()
            .unwrap();
        assert!((10..=13).contains(&depth), "{depth}");
        // Widths below 1 and gamma widths from a width of 1 also end.
        assert_eq!(layout(&spec(d.path(), 300, 0.5, 0.0)).unwrap().len(), 300);
        assert_eq!(layout(&spec(d.path(), 300, 1.0, 500.0)).unwrap().len(), 300);
    }

    #[test]
    fn a_large_layout_stays_within_its_memory_budget() {
        let d = tempfile::tempdir().unwrap();
        let n = 2_000_000u64;
        let s = spec(d.path(), n, 20.0, 0.0);
        let l = layout(&s).unwrap();
        let per = l.heap_bytes() as f64 / n as f64;
        eprintln!("layout: {per:.1} bytes per entry ({} dirs)", l.dir_count());
        // 10 million entries must fit well under 2 GB: at most 40 bytes each here.
        assert!(per < 16.0, "{per} bytes per entry");
        assert!(estimate_bytes(&s) as f64 >= l.heap_bytes() as f64);
        let w1 = layout(&spec(d.path(), n, 1.0, 0.0)).unwrap();
        let per1 = w1.heap_bytes() as f64 / n as f64;
        assert!(per1 < 40.0, "{per1} bytes per entry with dirwidth=1");
        assert!(estimate_bytes(&spec(d.path(), n, 1.0, 0.0)) as f64 >= w1.heap_bytes() as f64);
        // Paths are derived, not stored, and stay distinct.
        assert_ne!(l.path(0).as_path(), l.path(n as usize - 1).as_path());
    }

    #[test]
    fn too_deep_or_too_big_is_a_usage_error() {
        let d = tempfile::tempdir().unwrap();
        let mut s = spec(d.path(), 10, 5.0, 0.0);
        s.dirdepth = Some(Param::Const(1e9));
        assert!(crate::error::is_usage(&layout(&s).unwrap_err()));
        let s = spec(d.path(), MAX_ENTRIES + 1, 5.0, 0.0);
        assert!(crate::error::is_usage(&layout(&s).unwrap_err()));
    }

    #[test]
    fn prepare_pick_release_remove() {
        let d = tempfile::tempdir().unwrap();
        let s = spec(d.path(), 50, 5.0, 0.0);
        let l = layout(&s).unwrap();
        let arena = Arena::create(Layout::new(0, 0, &[50])).unwrap();
        let p = prepare(&s, &l, &arena, 0, false).unwrap();
        let have = arena.set_exists_count(0).load(SeqCst);
        assert_eq!(have, p.files_created);
        let Picked::Got(i) = pick(&arena, 0, Want::Exists, From::Shared(Rotor::Exists)) else {
            panic!()
        };
        assert!(l.path(i).as_path().exists());
        release(&arena, 0, i, false);
        assert_eq!(arena.set_exists_count(0).load(SeqCst), have - 1);
        // A directory fsbench did not create is refused.
        std::fs::create_dir(d.path().join("other")).unwrap();
        let mut s2 = spec(d.path(), 1, 5.0, 0.0);
        s2.name = "other".into();
        s2.root = d.path().join("other");
        let e = prepare(&s2, &layout(&s2).unwrap(), &arena, 0, false).unwrap_err();
        assert!(crate::error::is_usage(&e), "{e}");
        assert_eq!(remove(&p, &l, &arena, 0).unwrap(), None);
        assert!(!s.root.exists());
        assert!(!d.path().join(".fs.fsbench-manifest").exists());
        assert!(d.path().join("other").exists());
    }

    /// A kept tree the user changed: only what fsbench created is removed, a planted symlink
    /// is not followed, and the rest is reported.
    #[test]
    fn kept_tree_removal_spares_foreign_entries() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("precious"), b"keep me").unwrap();
        let mut s = spec(d.path(), 40, 5.0, 0.0);
        s.prealloc_pct = 100.0;
        let l = layout(&s).unwrap();
        let arena = Arena::create(Layout::new(0, 0, &[40])).unwrap();
        let p = prepare(&s, &l, &arena, 0, false).unwrap();
        keep(&p, &l, &arena, 0).unwrap();
        // The user adds a file, replaces an entry, and plants symlinks pointing outside.
        let added = l.dir_path(1).as_path().join("mine.txt");
        std::fs::write(&added, b"user data").unwrap();
        let replaced = l.path(3).as_path().to_path_buf();
        std::fs::remove_file(&replaced).unwrap();
        std::fs::write(&replaced, b"user replaced").unwrap();
        let link = l.dir_path(2).as_path().join("link");
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        let dirlink = l.path(5).as_path().to_path_buf();
        std::fs::remove_file(&dirlink).unwrap();
        std::os::unix::fs::symlink(outside.path(), &dirlink).unwrap();
        // The next run (no reuse) removes only fsbench's entries and refuses to lay out over
        // the rest.
        let arena2 = Arena::create(Layout::new(0, 0, &[40])).unwrap();
        let e = prepare(&s, &l, &arena2, 0, false).unwrap_err();
        assert!(crate::error::is_usage(&e), "{e}");
        assert!(
            e.to_string()
                .contains("left 4 entries fsbench did not create: first"),
            "{e}"
        );
        assert_eq!(std::fs::read(&added).unwrap(), b"user data");
        assert_eq!(std::fs::read(&replaced).unwrap(), b"user replaced");
        assert!(std::fs::symlink_metadata(&link).is_ok());
        assert!(std::fs::symlink_metadata(&dirlink).is_ok());
        assert_eq!(
            std::fs::read(outside.path().join("precious")).unwrap(),
            b"keep me"
        );
        // Every other entry fsbench created is gone.
        assert!(!l.path(0).as_path().exists());
        assert!(!l.path(39).as_path().exists());
        // Reuse is refused too while foreign entries are there.
        let mut r = s.clone();
        r.reuse = true;
        let e = prepare(&r, &l, &arena2, 0, false).unwrap_err();
        assert!(crate::error::is_usage(&e), "{e}");
    }

    /// A layout is the same whatever version computes it (a kept tree is reused by a later
    /// run): digests of every path, size and preallocation choice for trees of each shape,
    /// computed by the layout code before it was split into steps.
    #[test]
    fn layouts_are_stable_across_versions() {
        use crate::workload::vars::{Dist, RandVar};
        let root = Path::new("/stable/root");
        let digest = |s: &FilesetSpec| {
            let l = layout(s).unwrap();
            let mut h = name_seed("digest");
            for d in 0..l.dir_count() {
                h = fnv(h, l.dir_path(d).as_path().as_os_str().as_bytes());
            }
            for i in 0..l.len() {
                h = fnv(h, l.path(i).as_path().as_os_str().as_bytes());
                h = fnv(h, &l.size(i).to_le_bytes());
                h = fnv(h, &[l.preallocated(i) as u8]);
            }
            (l.dir_count(), l.len(), h)
        };
        let mut gamma_sizes = spec(root, 1000, 20.0, 0.0);
        gamma_sizes.size = Param::Rand(std::sync::Arc::new(RandVar {
            dist: Dist::Gamma {
                mean: 4096.0,
                shape: 1.5,
            },
            min: 0.0,
            max: None,
            round: 0.0,
            seed: None,
        }));
        let mut fixed_depth = spec(root, 1000, 20.0, 0.0);
        fixed_depth.dirdepth = Some(Param::Const(3.0));
        let mut dirs = spec(root, 0, 7.0, 0.0);
        dirs.leafdirs = 50;
        let mut file = spec(root, 1, 0.0, 0.0);
        file.is_file = true;
        let got: Vec<(usize, usize, u64)> = [
            spec(root, 1000, 20.0, 0.0),
            spec(root, 1000, 20.0, 1500.0),
            spec(root, 500, 1.0, 0.0),
            gamma_sizes,
            fixed_depth,
            dirs,
            file,
        ]
        .iter()
        .map(digest)
        .collect();
        assert_eq!(
            got,
            vec![
                (55, 1000, 3941000330022274126),
                (257, 1000, 16682475448914848634),
                (999, 500, 13482622609857016989),
                (55, 1000, 9479706441578508500),
                (1111, 1000, 14096868254208926642),
                (11, 50, 10773864195150066449),
                (1, 1, 6614963841197568962),
            ]
        );
    }
}
