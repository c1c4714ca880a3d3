//! One mdtest phase as a source the runner drives (`runner::source::drive`): one step is one
//! item's operation (a directory made, a file created and written, a stat, a rename, a
//! removal), issued through the runner's [`Issuer`] on paths relative to the iteration's test
//! directory. The step times its item (open, write and close of a file create count as one
//! operation, as in mdtest) into the phase's latency histogram; the runner's loop owns the
//! start gate, the stonewall (`-W`, the loop's deadline), Ctrl-C and the CPU account.
//!
//! Paths are written into buffers sized before the phase starts, so a step allocates nothing.

use crate::engine::{IoOp, OpKind};
use crate::job::Route;
use crate::runner::issue::{Issuer, CALL_SLOT};
use crate::runner::source::Source;
use crate::stats::{mono_ns, Stats};
use std::ffi::CStr;
use std::os::fd::RawFd;

/// mdtest's phases, in the order of its summary table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    DirCreate,
    DirStat,
    DirRename,
    DirRemove,
    FileCreate,
    FileStat,
    FileRead,
    FileRemove,
    TreeCreate,
    TreeRemove,
}

impl Op {
    pub const SUMMARY_ORDER: [Op; 10] = [
        Op::DirCreate,
        Op::DirStat,
        Op::DirRename,
        Op::DirRemove,
        Op::FileCreate,
        Op::FileStat,
        Op::FileRead,
        Op::FileRemove,
        Op::TreeCreate,
        Op::TreeRemove,
    ];

    /// mdtest's name of the phase.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::DirCreate => "Directory creation",
            Op::DirStat => "Directory stat",
            Op::DirRename => "Directory rename",
            Op::DirRemove => "Directory removal",
            Op::FileCreate => "File creation",
            Op::FileStat => "File stat",
            Op::FileRead => "File read",
            Op::FileRemove => "File removal",
            Op::TreeCreate => "Tree creation",
            Op::TreeRemove => "Tree removal",
        }
    }

    /// The key of the phase in the Result (`op` of its groups).
    pub fn key(self) -> &'static str {
        match self {
            Op::DirCreate => "dir_create",
            Op::DirStat => "dir_stat",
            Op::DirRename => "dir_rename",
            Op::DirRemove => "dir_remove",
            Op::FileCreate => "file_create",
            Op::FileStat => "file_stat",
            Op::FileRead => "file_read",
            Op::FileRemove => "file_remove",
            Op::TreeCreate => "tree_create",
            Op::TreeRemove => "tree_remove",
        }
    }

    fn on_tree(self) -> bool {
        matches!(self, Op::TreeCreate | Op::TreeRemove)
    }
}

/// The directories of one tree and where each is, relative to the test directory: directory
/// 0 is the tree's root (`mdtest_tree.0`), the children of directory `d` are `d*b+1 ..=
/// d*b+b`, each named `BASE.N` inside its parent, as mdtest numbers them.
pub(crate) struct Tree {
    /// Each directory's path, relative to the test directory, without a trailing NUL.
    paths: Vec<Vec<u8>>,
    /// The longest of them.
    longest: usize,
}

impl Tree {
    /// `dirs` directories (the caller bounds them) of a tree with `branching` children per
    /// directory, named `base.N`.
    pub(crate) fn new(base: &str, dirs: u64, branching: u32) -> Tree {
        let mut paths: Vec<Vec<u8>> = Vec::with_capacity(dirs as usize);
        for d in 0..dirs {
            let mut p = if d == 0 {
                Vec::new()
            } else {
                let parent = (d - 1) / branching.max(1) as u64;
                let mut p = paths[parent as usize].clone();
                p.push(b'/');
                p
            };
            p.extend_from_slice(format!("{base}.{d}").as_bytes());
            paths.push(p);
        }
        let longest = paths.iter().map(Vec::len).max().unwrap_or(0);
        Tree { paths, longest }
    }

    pub(crate) fn dirs(&self) -> u64 {
        self.paths.len() as u64
    }

    /// Room a path buffer needs for any item of this tree named `prefix` + number + suffix.
    fn path_room(&self, prefix: &[u8]) -> usize {
        self.longest + 1 + prefix.len() + 20 + SUFFIX.len() + 1
    }

    /// Directory `d`'s path, NUL-terminated, into `out` (within its capacity).
    fn dir_path(&self, d: u64, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.paths[d as usize]);
        out.push(0);
    }

    /// Item `g`'s path (in directory `g / per_dir`), NUL-terminated, into `out`.
    fn item_path(&self, g: u64, per_dir: u64, prefix: &[u8], suffix: &[u8], out: &mut Vec<u8>) {
        let d = (g / per_dir.max(1)).min(self.dirs().saturating_sub(1));
        out.clear();
        out.extend_from_slice(&self.paths[d as usize]);
        out.push(b'/');
        out.extend_from_slice(prefix);
        push_decimal(out, g);
        out.extend_from_slice(suffix);
        out.push(0);
    }
}

/// The name the first item of a rename chain takes while the others move up (mdtest's).
const SUFFIX: &[u8] = b"-XX";

/// Append `n` in decimal without allocating.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// How a phase ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// Every item was done.
    Done,
    /// The run stopped it (the stonewall, Ctrl-C).
    Stopped,
    /// An operation failed: which item and why.
    Failed(String),
}

/// What a phase works on and how.
pub(crate) struct Work<'a> {
    pub op: Op,
    pub tree: &'a Tree,
    /// The test directory, open: every path is relative to it.
    pub base: RawFd,
    /// Item names: `file.mdtest.R.` or `dir.mdtest.R.`, then the item's number.
    pub prefix: &'a [u8],
    /// Items per directory (item `g` is in directory `g / per_dir`).
    pub per_dir: u64,
    /// The number of the first item (leaf-only trees start after the inner directories').
    pub first: u64,
    /// Items (or tree directories) to do.
    pub count: u64,
    /// The order to visit items in (`-R`), a permutation of 0..count; None: in order.
    pub order: Option<&'a [u64]>,
    /// Bytes written to each created file (`-w`) and read from each read file (`-e`).
    pub write_len: u32,
    pub read_len: u32,
    /// `-y`: fsync each file after writing it.
    pub sync: bool,
}

/// One phase as a source: its work, where it is, what it counted.
pub(crate) struct Phase<'a> {
    work: Work<'a>,
    done: u64,
    path: Vec<u8>,
    /// The rename chain's previous name and the first item's parked name.
    last: Vec<u8>,
    parked: Vec<u8>,
    sx: libc::statx,
    pub(crate) stats: Stats,
}

impl<'a> Phase<'a> {
    pub(crate) fn new(work: Work<'a>) -> Phase<'a> {
        let room = work.tree.path_room(work.prefix);
        let mut stats = Stats::default();
        stats.ready_lat(false, false, true);
        Phase {
            work,
            done: 0,
            path: Vec::with_capacity(room),
            last: Vec::with_capacity(room),
            parked: Vec::with_capacity(room),
            // SAFETY: statx is plain integers; all zero is a valid value.
            sx: unsafe { std::mem::zeroed() },
            stats,
        }
    }

    /// Items (or directories) done so far.
    pub(crate) fn done(&self) -> u64 {
        self.done
    }

    fn item(&mut self, index: u64) {
        let w = &self.work;
        let idx = w.order.map_or(index, |o| o[index as usize]);
        w.tree
            .item_path(w.first + idx, w.per_dir, w.prefix, b"", &mut self.path);
    }

    /// The operation of step `i`; the latency covers exactly it.
    fn operate(&mut self, io: &mut Issuer, i: u64) -> std::io::Result<()> {
        let op = self.work.op;
        if op.on_tree() {
            // Parents before children, children before parents.
            let d = if op == Op::TreeCreate {
                i
            } else {
                self.work.count - 1 - i
            };
            self.work.tree.dir_path(d, &mut self.path);
        } else if op != Op::DirRename {
            self.item(i);
        }
        let base = self.work.base;
        match op {
            Op::TreeCreate | Op::DirCreate => io.mkdir_at(base, cstr(&self.path), 0o755),
            Op::TreeRemove | Op::DirRemove => io.unlink_at(base, cstr(&self.path), true),
            Op::FileRemove => io.unlink_at(base, cstr(&self.path), false),
            Op::DirStat | Op::FileStat => io.stat_at(
                base,
                cstr(&self.path),
                libc::AT_SYMLINK_NOFOLLOW,
                &mut self.sx,
            ),
            Op::FileCreate => self.create_file(io),
            Op::FileRead => self.read_file(io),
            Op::DirRename => self.rename_step(io, i),
        }
    }

    /// mdtest's rename chain over `count` items: the first is parked under another name,
    /// each next one takes its predecessor's name, and the parked one takes the name of the
    /// one before last; `count` renames leave the same names.
    fn rename_step(&mut self, io: &mut Issuer, i: u64) -> std::io::Result<()> {
        let w = &self.work;
        let n = w.count;
        w.tree
            .item_path(w.first + i, w.per_dir, w.prefix, b"", &mut self.path);
        let base = w.base;
        if i == 0 {
            w.tree
                .item_path(w.first, w.per_dir, w.prefix, SUFFIX, &mut self.parked);
            io.rename_at(base, cstr(&self.path), base, cstr(&self.parked))?;
        } else if i == n - 1 {
            io.rename_at(base, cstr(&self.parked), base, cstr(&self.last))?;
        } else {
            io.rename_at(base, cstr(&self.path), base, cstr(&self.last))?;
        }
        std::mem::swap(&mut self.last, &mut self.path);
        Ok(())
    }

    fn create_file(&mut self, io: &mut Issuer) -> std::io::Result<()> {
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let fd = io.open_at(self.work.base, cstr(&self.path), flags, 0o644)?;
        let wrote = if self.work.write_len > 0 {
            self.data(io, fd, OpKind::Write, self.work.write_len)
        } else {
            Ok(())
        };
        let synced = match wrote {
            Ok(()) if self.work.sync && self.work.write_len > 0 => io.sync_fd(fd, false),
            r => r,
        };
        let closed = io.close_fd(fd);
        synced.and(closed)
    }

    fn read_file(&mut self, io: &mut Issuer) -> std::io::Result<()> {
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let fd = io.open_at(self.work.base, cstr(&self.path), flags, 0)?;
        let read = if self.work.read_len > 0 {
            self.data(io, fd, OpKind::Read, self.work.read_len)
        } else {
            Ok(())
        };
        let closed = io.close_fd(fd);
        read.and(closed)
    }

    /// One read or write of `len` bytes at offset 0 of `fd`, through the engine.
    fn data(&mut self, io: &mut Issuer, fd: RawFd, kind: OpKind, len: u32) -> std::io::Result<()> {
        io.set_file(0, fd)?;
        let op = IoOp {
            kind,
            file: 0,
            route: Route::Buffered,
            offset: 0,
            len,
            slot: CALL_SLOT,
        };
        let r = io.call(op);
        io.clear_file(0);
        let n = r?;
        match kind {
            OpKind::Read => self.stats.read_bytes += n,
            OpKind::Write => self.stats.write_bytes += n,
            // mdtest's items are written and read, never trimmed.
            OpKind::Trim => unreachable!("mdtest issues no trims"),
        }
        if n != len as u64 {
            return Err(std::io::Error::other(format!(
                "{} {n} of {len} bytes",
                if kind == OpKind::Read {
                    "read"
                } else {
                    "wrote"
                }
            )));
        }
        Ok(())
    }
}

/// The NUL-terminated path in `buf` (always written so by [`Tree`]).
fn cstr(buf: &[u8]) -> &CStr {
    CStr::from_bytes_with_nul(buf).unwrap_or(c"")
}

impl Source for Phase<'_> {
    type End = End;

    fn step(&mut self, io: &mut Issuer) -> Option<End> {
        if self.done >= self.work.count {
            return Some(End::Done);
        }
        let t0 = mono_ns();
        let r = self.operate(io, self.done);
        let t1 = mono_ns();
        if let Err(e) = r {
            self.stats.errors += 1;
            let at = String::from_utf8_lossy(&self.path[..self.path.len().saturating_sub(1)])
                .into_owned();
            return Some(End::Failed(format!("{}: {at}: {e}", self.work.op.name())));
        }
        self.stats.other_ops += 1;
        self.stats.other_lat.record(t1.saturating_sub(t0));
        self.done += 1;
        None
    }

    fn stopped(&mut self) -> End {
        End::Stopped
    }

    fn next_paced(&self) -> bool {
        false
    }

    fn totals(&self) -> Stats {
        self.stats.clone()
    }

    fn forget(&mut self) {
        self.stats = Stats::default();
        self.stats.ready_lat(false, false, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(t: &Tree, g: u64, per_dir: u64) -> String {
        let mut out = Vec::with_capacity(t.path_room(b"file.mdtest.0."));
        t.item_path(g, per_dir, b"file.mdtest.0.", b"", &mut out);
        String::from_utf8(out[..out.len() - 1].to_vec()).unwrap()
    }

    #[test]
    fn items_are_placed_and_named_as_mdtest_does() {
        // Depth 2, branching 3: 1 + 3 + 9 directories; 2 items per directory.
        let t = Tree::new("mdtest_tree", 13, 3);
        assert_eq!(t.dirs(), 13);
        assert_eq!(path(&t, 0, 2), "mdtest_tree.0/file.mdtest.0.0");
        assert_eq!(
            path(&t, 3, 2),
            "mdtest_tree.0/mdtest_tree.1/file.mdtest.0.3"
        );
        // Directory 12 is the last child of directory 3.
        assert_eq!(
            path(&t, 25, 2),
            "mdtest_tree.0/mdtest_tree.3/mdtest_tree.12/file.mdtest.0.25"
        );
        let mut d = Vec::with_capacity(64);
        t.dir_path(4, &mut d);
        assert_eq!(&d[..], b"mdtest_tree.0/mdtest_tree.1/mdtest_tree.4\0");
    }

    #[test]
    fn decimal_numbers_are_written_without_formatting() {
        for n in [0u64, 7, 10, 12345, u64::MAX] {
            let mut v = Vec::new();
            push_decimal(&mut v, n);
            assert_eq!(String::from_utf8(v).unwrap(), n.to_string());
        }
    }
}
