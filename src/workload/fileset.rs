//! Filesets on disk: the directory tree (mean `dirwidth`, optional gamma-distributed widths via
//! `dirgamma`, or a fixed depth from `dirdepthrv`), each entry's size, creation with `prealloc`
//! percent (in parallel with `paralloc`), `reuse` of a tree fsbench left behind, the runtime
//! picker (exists / absent, exclusive "busy" marking in the shared arena) and removal.
//!
//! Safety: fsbench creates `path/NAME/`, marks it with the fsbench xattr, and only ever writes
//! or deletes below a root it marked (or created in this run where xattrs are unsupported).

use super::model::FilesetSpec;
use super::shared::{Arena, Rotor, ENTRY_BUSY, ENTRY_EXISTS, ENTRY_OPEN_ONE};
use super::vars::Rng;
use crate::safety;
use anyhow::{Context, Result};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::*;

/// One file (or leaf directory) of a fileset.
#[derive(Debug, Clone)]
pub struct Entry {
    pub path: CString,
    pub size: u64,
}

#[derive(Debug, Clone)]
pub struct SetLayout {
    /// Directories to create below (and including) the root, parents first.
    pub dirs: Vec<CString>,
    pub entries: Vec<Entry>,
    /// Entries created when the run is prepared (`prealloc` percent of them).
    pub preallocated: Vec<bool>,
}

fn name_seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes())
        .unwrap_or_else(|_| CString::new("invalid-path").expect("no NUL"))
}

/// Compute where every entry lives and how big it is. Deterministic (seeded by the fileset's
/// name), so a child process computes exactly what the parent created.
pub fn layout(spec: &FilesetSpec) -> SetLayout {
    let mut rng = Rng::new(name_seed(&spec.name));
    let n = spec.count() as usize;
    let mut dirs = vec![cpath(&spec.root)];
    let mut leaves: Vec<PathBuf> = Vec::with_capacity(n);
    if spec.is_file {
        leaves.push(spec.root.join(&spec.name));
    } else {
        let width = spec.dirwidth.max(1.0);
        let depth_limit = spec
            .dirdepth
            .as_ref()
            .map(|d| d.sample(&mut rng).round().max(1.0) as usize);
        // Each directory splits its items among `w` children until an item group fits in one.
        struct Frame {
            dir: PathBuf,
            lo: usize,
            hi: usize,
            level: usize,
        }
        let mut stack = vec![Frame {
            dir: spec.root.clone(),
            lo: 0,
            hi: n,
            level: 0,
        }];
        let mut placed: Vec<(usize, PathBuf)> = Vec::with_capacity(n);
        while let Some(f) = stack.pop() {
            let count = f.hi - f.lo;
            let at_depth = depth_limit.is_some_and(|d| f.level >= d);
            let fits = match depth_limit {
                Some(_) => at_depth,
                None => count as f64 <= width,
            };
            if fits || count <= 1 && f.level > 0 {
                for i in f.lo..f.hi {
                    placed.push((i, f.dir.join(format!("{:08}", i + 1))));
                }
                continue;
            }
            let children = if let Some(d) = depth_limit {
                // Fixed depth: the width that spreads `count` items over the remaining levels.
                (count as f64)
                    .powf(1.0 / (d - f.level) as f64)
                    .ceil()
                    .max(1.0) as usize
            } else if spec.dirgamma > 0.0 {
                let shape = spec.dirgamma / 1000.0;
                (rng.gamma(shape) * width / shape).round().max(2.0) as usize
            } else {
                // A full tree: leaves hold `width` items; each subtree below this level
                // holds at most width^(levels below) items.
                let mut cap = width;
                while cap * width < count as f64 {
                    cap *= width;
                }
                (count as f64 / cap).ceil() as usize
            };
            let children = children.clamp(1, count.max(1));
            let per = count.div_ceil(children);
            let mut lo = f.lo;
            let mut k = 0;
            while lo < f.hi {
                let hi = (lo + per).min(f.hi);
                k += 1;
                let d = f.dir.join(format!("{k:08}"));
                dirs.push(cpath(&d));
                stack.push(Frame {
                    dir: d,
                    lo,
                    hi,
                    level: f.level + 1,
                });
                lo = hi;
            }
        }
        placed.sort_by_key(|p| p.0);
        leaves = placed.into_iter().map(|p| p.1).collect();
    }
    let mut entries = Vec::with_capacity(leaves.len());
    let mut preallocated = Vec::with_capacity(leaves.len());
    for (i, p) in leaves.iter().enumerate() {
        let size = if spec.is_dirs() {
            0
        } else {
            spec.size.sample(&mut rng).max(0.0) as u64
        };
        entries.push(Entry {
            path: cpath(p),
            size,
        });
        // Spread the preallocated entries evenly over the tree.
        let h = name_seed(&format!("{}#{i}", spec.name)) % 10_000;
        preallocated.push((h as f64) < spec.prealloc_pct * 100.0);
    }
    if spec.is_dirs() {
        // Leaf directories are entries, not tree directories.
        let leafset: std::collections::HashSet<&CString> =
            entries.iter().map(|e| &e.path).collect();
        dirs.retain(|d| !leafset.contains(d));
    }
    SetLayout {
        dirs,
        entries,
        preallocated,
    }
}

/// What `prepare` did for one fileset, so cleanup removes exactly that.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub root: PathBuf,
    /// We made the root in this run (allowed to remove it even where xattrs do not work).
    pub created_root: bool,
    pub files_created: u64,
    pub bytes_written: u64,
    pub reused: u64,
}

/// Write `size` bytes of a fixed pattern into a new file.
fn fill(path: &CString, size: u64, buf: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let p = Path::new(std::ffi::OsStr::from_bytes(path.as_bytes()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(p)?;
    let mut left = size;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n])?;
        left -= n as u64;
    }
    Ok(())
}

/// Create (or reuse) a fileset on disk and record which entries exist in the arena.
pub fn prepare(spec: &FilesetSpec, lay: &SetLayout, arena: &Arena, set: usize) -> Result<Prepared> {
    let parent = spec.root.parent().unwrap_or(Path::new("."));
    if !parent.is_dir() {
        crate::bail_usage!(
            "directory {} does not exist: create it or pass another --dir",
            parent.display()
        );
    }
    let mut created_root = false;
    let mut reuse_existing = false;
    if spec.root.exists() {
        if !safety::is_marked(&spec.root) {
            crate::bail_usage!(
                "{} exists and was not created by fsbench: refusing to write there (choose another --dir or remove it)",
                spec.root.display()
            );
        }
        if spec.reuse {
            reuse_existing = true;
        } else {
            std::fs::remove_dir_all(&spec.root)
                .with_context(|| format!("removing the old fileset {}", spec.root.display()))?;
        }
    }
    if !reuse_existing {
        std::fs::create_dir(&spec.root)
            .with_context(|| format!("creating {}", spec.root.display()))?;
        created_root = true;
        safety::mark_created(&spec.root);
    }
    for d in &lay.dirs {
        let p = Path::new(std::ffi::OsStr::from_bytes(d.as_bytes()));
        if !p.is_dir() {
            std::fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
        }
    }
    let states = arena.entries(set);
    let n = lay.entries.len();
    let threads = if spec.paralloc {
        std::thread::available_parallelism()
            .map(|x| x.get())
            .unwrap_or(2)
            .clamp(2, 16)
    } else {
        1
    };
    let created = std::sync::atomic::AtomicU64::new(0);
    let written = std::sync::atomic::AtomicU64::new(0);
    let reused = std::sync::atomic::AtomicU64::new(0);
    let first_err: std::sync::Mutex<Option<anyhow::Error>> = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (created, written, reused, first_err) = (&created, &written, &reused, &first_err);
            s.spawn(move || {
                let buf = vec![0xA5u8; 1 << 20];
                let mut i = t;
                while i < n {
                    let e = &lay.entries[i];
                    let p = Path::new(std::ffi::OsStr::from_bytes(e.path.as_bytes()));
                    let want = lay.preallocated[i];
                    let res: std::io::Result<bool> = (|| {
                        if spec.is_dirs() {
                            if p.is_dir() {
                                if !want && !reuse_existing {
                                    std::fs::remove_dir(p)?;
                                    return Ok(false);
                                }
                                reused.fetch_add(1, Relaxed);
                                return Ok(true);
                            }
                            if want {
                                std::fs::create_dir(p)?;
                                created.fetch_add(1, Relaxed);
                            }
                            return Ok(want);
                        }
                        if reuse_existing {
                            if let Ok(m) = std::fs::metadata(p) {
                                if m.len() == e.size || !want {
                                    reused.fetch_add(1, Relaxed);
                                    return Ok(true);
                                }
                            }
                        }
                        if want {
                            fill(&e.path, e.size, &buf)?;
                            created.fetch_add(1, Relaxed);
                            written.fetch_add(e.size, Relaxed);
                        }
                        Ok(want)
                    })();
                    match res {
                        Ok(exists) => {
                            states[i].store(if exists { ENTRY_EXISTS } else { 0 }, Relaxed)
                        }
                        Err(err) => {
                            let mut g = first_err.lock().unwrap_or_else(|p| p.into_inner());
                            if g.is_none() {
                                *g = Some(anyhow::anyhow!("creating {}: {err}", p.display()));
                            }
                            return;
                        }
                    }
                    i += threads;
                }
            });
        }
    });
    if let Some(e) = first_err.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    if !spec.cached && !spec.is_dirs() {
        drop_cache(&spec.root, lay, states);
    }
    let exists = states
        .iter()
        .filter(|s| s.load(Relaxed) & ENTRY_EXISTS != 0)
        .count() as u64;
    arena.set_exists_count(set).store(exists, SeqCst);
    Ok(Prepared {
        root: spec.root.clone(),
        created_root,
        files_created: created.into_inner(),
        bytes_written: written.into_inner(),
        reused: reused.into_inner(),
    })
}

/// Write back the file system once, then drop each existing file's pages from the cache, so
/// the run starts uncached (Filebench's behaviour unless `cached` is set).
fn drop_cache(root: &Path, lay: &SetLayout, states: &[std::sync::atomic::AtomicU32]) {
    if let Ok(d) = std::fs::File::open(root) {
        // SAFETY: open descriptor.
        unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&d)) };
    }
    for (i, e) in lay.entries.iter().enumerate() {
        if states[i].load(Relaxed) & ENTRY_EXISTS == 0 {
            continue;
        }
        // SAFETY: NUL-terminated path; the descriptor is closed right after.
        unsafe {
            let fd = libc::open(e.path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED);
                libc::close(fd);
            }
        }
    }
}

/// Remove a fileset tree, but only one fsbench created (marked, or made in this run).
pub fn remove(p: &Prepared) -> Result<()> {
    if !p.root.exists() {
        return Ok(());
    }
    if !(safety::is_marked(&p.root) || p.created_root) {
        anyhow::bail!(
            "not removing {}: it is not marked as created by fsbench",
            p.root.display()
        );
    }
    std::fs::remove_dir_all(&p.root).with_context(|| format!("removing {}", p.root.display()))
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
        let new = opens * ENTRY_OPEN_ONE | if now { ENTRY_EXISTS } else { 0 };
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
            pos: Pos::default(),
        }
    }

    #[test]
    fn tree_shape_follows_dirwidth() {
        let d = tempfile::tempdir().unwrap();
        let l = layout(&spec(d.path(), 1000, 10.0, 0.0));
        assert_eq!(l.entries.len(), 1000);
        // 1000 files, width 10: 100 leaf dirs of 10 + 10 middle dirs + root.
        assert_eq!(l.dirs.len(), 111);
        // 500 files, width 20: root, 2 middle dirs of 250, each with 13 leaves of <= 20.
        assert_eq!(layout(&spec(d.path(), 500, 20.0, 0.0)).dirs.len(), 29);
        let uniq: std::collections::HashSet<_> = l.entries.iter().map(|e| e.path.clone()).collect();
        assert_eq!(uniq.len(), 1000);
        let g = layout(&spec(d.path(), 1000, 10.0, 1500.0));
        assert_eq!(g.entries.len(), 1000);
        assert_ne!(g.dirs.len(), 111, "gamma widths vary");
        let pre = l.preallocated.iter().filter(|&&b| b).count();
        assert!((400..600).contains(&pre), "{pre}");
    }

    #[test]
    fn prepare_pick_release_remove() {
        let d = tempfile::tempdir().unwrap();
        let s = spec(d.path(), 50, 5.0, 0.0);
        let l = layout(&s);
        let arena = Arena::create(Layout::new(0, 0, &[50])).unwrap();
        let p = prepare(&s, &l, &arena, 0).unwrap();
        let have = arena.set_exists_count(0).load(SeqCst);
        assert_eq!(have, p.files_created);
        let Picked::Got(i) = pick(&arena, 0, Want::Exists, From::Shared(Rotor::Exists)) else {
            panic!()
        };
        assert!(Path::new(std::ffi::OsStr::from_bytes(l.entries[i].path.as_bytes())).exists());
        release(&arena, 0, i, false);
        assert_eq!(arena.set_exists_count(0).load(SeqCst), have - 1);
        // A directory fsbench did not create is refused.
        std::fs::create_dir(d.path().join("other")).unwrap();
        let mut s2 = spec(d.path(), 1, 5.0, 0.0);
        s2.name = "other".into();
        s2.root = d.path().join("other");
        let e = prepare(&s2, &layout(&s2), &arena, 0).unwrap_err();
        assert!(crate::error::is_usage(&e), "{e}");
        remove(&p).unwrap();
        assert!(!s.root.exists());
        assert!(d.path().join("other").exists());
    }
}
