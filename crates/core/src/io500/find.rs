//! IO500's find phase as a source the runner drives (`runner::source::drive`): a walk of the
//! run's directory that looks at every entry once (one step, one `statx`) and counts the
//! regular files that match IO500's expression `-newer TIMESTAMP -size 3901c -name *01*`.
//! Directories are read with `getdents64` and opened relative to their parent, both through
//! the runner's [`Issuer`], so every call is counted and nothing follows a link.
//!
//! On MPI ranks every rank walks the same directories (reading a listing is one call per
//! 32 KiB of entries) and looks at its [`Share`] of their entries: those whose name hashes to
//! it. IO500's tree is a few directories holding most of the entries (mdtest-hard's one
//! directory every rank fills, mdtest-easy's tree of each rank, of different sizes after a
//! stonewall), so a split by top-level entry or by rank directory would leave one rank with
//! most of the work; a split of each directory's entries by name gives every rank an even
//! share of every directory, whatever the ranks' listing order. A directory that is not this
//! rank's to look at is still entered (its type comes from the listing's `d_type`, or, where
//! the file system gives none, from a `statx` that is not counted).
//!
//! The buffers of every level of the walk are allocated before the phase starts: a step
//! allocates nothing.

use crate::runner::issue::Issuer;
use crate::runner::source::Source;
use crate::stats::{mono_ns, Stats};
use serde::{Deserialize, Serialize};
use std::ffi::CStr;
use std::os::fd::RawFd;

/// Deepest directory the walk enters below its root (the run's tree is 3 levels deep).
pub(crate) const MAX_DEPTH: usize = 16;
/// Bytes of directory entries read per `getdents64` call.
const LIST_BYTES: usize = 32 * 1024;

/// What a matching file must be.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expr<'a> {
    /// Modified strictly after this (seconds, nanoseconds).
    pub newer_than: (i64, u32),
    /// Exactly this many bytes.
    pub size: u64,
    /// The name holds this.
    pub name_has: &'a [u8],
}

impl Expr<'_> {
    fn matches(&self, name: &[u8], sx: &libc::statx) -> bool {
        let mtime = (sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec);
        (sx.stx_mode as u32 & libc::S_IFMT) == libc::S_IFREG
            && sx.stx_size == self.size
            && mtime > self.newer_than
            && name
                .windows(self.name_has.len())
                .any(|w| w == self.name_has)
    }
}

/// IO500's expression as sent to every rank (`Query::expr`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Query {
    pub newer_than: (i64, u32),
    pub size: u64,
    pub name_has: Vec<u8>,
}

impl Query {
    pub(crate) fn expr(&self) -> Expr<'_> {
        Expr {
            newer_than: self.newer_than,
            size: self.size,
            name_has: &self.name_has,
        }
    }
}

/// The entries one walker looks at: those whose name hashes to `rank` of `ranks`.
#[derive(Debug, Clone, Copy)]
pub struct Share {
    pub rank: u32,
    pub ranks: u32,
}

impl Share {
    /// The whole tree (one walk on one host).
    pub(crate) const ALL: Share = Share { rank: 0, ranks: 1 };

    /// Whether the entry `name` is this walker's to look at (FNV-1a of the name: the same
    /// on every rank and host, spread evenly over names that differ in a digit).
    fn owns(&self, name: &[u8]) -> bool {
        if self.ranks <= 1 {
            return true;
        }
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in name {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
        h % self.ranks as u64 == self.rank as u64
    }
}

/// How the walk ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Done,
    /// The run stopped it (Ctrl-C).
    Stopped,
    Failed(String),
}

/// One open directory of the walk and the entries read from it but not yet looked at.
struct Level {
    fd: RawFd,
    buf: Vec<u8>,
    len: usize,
    at: usize,
}

/// The find phase: where the walk is and what it counted.
pub(crate) struct Find<'a> {
    root: RawFd,
    expr: Expr<'a>,
    share: Share,
    levels: Vec<Level>,
    depth: usize,
    started: bool,
    sx: libc::statx,
    pub(crate) matched: u64,
    pub(crate) total: u64,
    pub(crate) stats: Stats,
}

/// The next record of a `linux_dirent64` buffer at `at`: its length, its `d_type` and the
/// name with its NUL (None: the buffer holds no whole record there).
fn record(buf: &[u8], at: usize) -> Option<(usize, u8, &[u8])> {
    // d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name[].
    const NAME: usize = 19;
    if at + NAME > buf.len() {
        return None;
    }
    let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
    if reclen < NAME || at + reclen > buf.len() {
        return None;
    }
    let name = &buf[at + NAME..at + reclen];
    let end = name.iter().position(|&b| b == 0)?;
    Some((reclen, buf[at + 18], &name[..=end]))
}

impl<'a> Find<'a> {
    /// A walk of the directory open at `root` (borrowed: the walk opens its own descriptor)
    /// that looks at the entries of `share`.
    pub(crate) fn new(root: RawFd, expr: Expr<'a>, share: Share) -> Find<'a> {
        let levels = (0..=MAX_DEPTH)
            .map(|_| Level {
                fd: -1,
                buf: vec![0; LIST_BYTES],
                len: 0,
                at: 0,
            })
            .collect();
        let mut stats = Stats::default();
        stats.ready_lat(false, false, true);
        Find {
            root,
            expr,
            share,
            levels,
            depth: 0,
            started: false,
            // SAFETY: statx is plain integers; all zero is a valid value.
            sx: unsafe { std::mem::zeroed() },
            matched: 0,
            total: 0,
            stats,
        }
    }

    /// Open `name` (NUL-terminated) in `dir` as the next level of the walk.
    fn enter(&mut self, io: &mut Issuer, dir: RawFd, name: &CStr) -> Result<(), String> {
        if self.depth > MAX_DEPTH {
            return Err(format!(
                "find: {} is more than {MAX_DEPTH} levels deep",
                name.to_string_lossy()
            ));
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let fd = io
            .open_at(dir, name, flags, 0)
            .map_err(|e| format!("find: opening {}: {e}", name.to_string_lossy()))?;
        let lv = &mut self.levels[self.depth];
        lv.fd = fd;
        lv.len = 0;
        lv.at = 0;
        self.depth += 1;
        Ok(())
    }

    /// Look at the next entry of the deepest open directory, or read more of it.
    fn advance(&mut self, io: &mut Issuer) -> Result<(), String> {
        let dir = self.levels[self.depth - 1].fd;
        match self.look(io)? {
            Some(name) => {
                let cname = CStr::from_bytes_until_nul(&name).unwrap_or(c"");
                self.enter(io, dir, cname)
            }
            None => Ok(()),
        }
    }

    /// The next entry of the deepest open directory looked at and counted; the name of a
    /// directory to enter (copied out of the level's buffer, bounded by NAME_MAX).
    fn look(&mut self, io: &mut Issuer) -> Result<Option<[u8; 256]>, String> {
        let Find {
            levels,
            depth,
            sx,
            expr,
            stats,
            matched,
            total,
            share,
            ..
        } = self;
        let lv = &mut levels[*depth - 1];
        let dir = lv.fd;
        if lv.at >= lv.len {
            let n = io
                .read_dir(dir, &mut lv.buf)
                .map_err(|e| format!("find: reading a directory: {e}"))?;
            if n == 0 {
                let _ = io.close_fd(dir);
                lv.fd = -1;
                *depth -= 1;
            } else {
                lv.len = n;
                lv.at = 0;
            }
            return Ok(None);
        }
        let Some((reclen, d_type, name)) = record(&lv.buf[..lv.len], lv.at) else {
            // A torn buffer: read on.
            lv.at = lv.len;
            return Ok(None);
        };
        lv.at += reclen;
        if name == b".\0" || name == b"..\0" {
            return Ok(None);
        }
        let cname = CStr::from_bytes_with_nul(name).unwrap_or(c"");
        if !share.owns(&name[..name.len() - 1]) {
            // Another walker's entry: entered when it is a directory, not looked at.
            let dir_entry = match d_type {
                libc::DT_DIR => true,
                libc::DT_UNKNOWN => {
                    io.stat_at(dir, cname, libc::AT_SYMLINK_NOFOLLOW, sx)
                        .map_err(|e| format!("find: {}: {e}", cname.to_string_lossy()))?;
                    (sx.stx_mode as u32 & libc::S_IFMT) == libc::S_IFDIR
                }
                _ => false,
            };
            return Ok(dir_entry.then(|| owned_name(name)));
        }
        let t0 = mono_ns();
        let looked = io.stat_at(dir, cname, libc::AT_SYMLINK_NOFOLLOW, sx);
        let t1 = mono_ns();
        looked.map_err(|e| format!("find: {}: {e}", cname.to_string_lossy()))?;
        stats.other_ops += 1;
        stats.other_lat.record(t1.saturating_sub(t0));
        *total += 1;
        if (sx.stx_mode as u32 & libc::S_IFMT) == libc::S_IFDIR {
            return Ok(Some(owned_name(name)));
        }
        if expr.matches(&name[..name.len() - 1], sx) {
            *matched += 1;
        }
        Ok(None)
    }

    /// Close the directories still open (after a stop or a failure).
    pub(crate) fn close(&mut self, io: &mut Issuer) {
        while self.depth > 0 {
            self.depth -= 1;
            let fd = std::mem::replace(&mut self.levels[self.depth].fd, -1);
            let _ = io.close_fd(fd);
        }
    }
}

/// A directory's name copied out of a level's buffer (bounded by NAME_MAX), NUL-terminated.
fn owned_name(name: &[u8]) -> [u8; 256] {
    let mut owned = [0u8; 256];
    let n = name.len().min(owned.len() - 1);
    owned[..n].copy_from_slice(&name[..n]);
    owned
}

/// What one walk found and how it went.
pub struct Walked {
    pub end: End,
    /// Its entries looked at (`other_ops`, with their latencies), its CPU, its calls and its
    /// loop's start and end (CLOCK_MONOTONIC).
    pub stats: Stats,
    pub matched: u64,
    pub looked: u64,
}

/// Walk the directory open at `top`, looking at the entries of `share`, through `io` (the
/// runner drives the walk; Ctrl-C stops it).
pub fn walk(io: &mut Issuer, top: RawFd, query: &Query, share: Share) -> Walked {
    let mut src = Find::new(top, query.expr(), share);
    let stop = crate::runner::signal::interrupted;
    let how = crate::runner::source::Drive {
        gate: &|| {},
        stop: &stop,
        deadline: None,
        ramp: None,
        ramp_bytes: 0,
        pacing: Default::default(),
        interval_ns: None,
    };
    io.forget_counts();
    let cpu0 = crate::stats::cpu::thread_cpu_ns();
    let ran = crate::runner::source::drive(&mut src, io, how);
    let cpu_ns = crate::stats::cpu::thread_cpu_ns().saturating_sub(cpu0);
    src.close(io);
    let mut stats = std::mem::take(&mut src.stats);
    ran.settle(&mut stats, io, cpu_ns);
    Walked {
        end: ran.end,
        stats,
        matched: src.matched,
        looked: src.total,
    }
}

impl Source for Find<'_> {
    type End = End;

    fn step(&mut self, io: &mut Issuer) -> Option<End> {
        if !self.started {
            self.started = true;
            if let Err(e) = self.enter(io, self.root, c".") {
                return Some(End::Failed(e));
            }
            return None;
        }
        if self.depth == 0 {
            return Some(End::Done);
        }
        match self.advance(io) {
            Ok(()) => None,
            Err(e) => {
                self.stats.errors += 1;
                Some(End::Failed(e))
            }
        }
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

    fn sx(mode: u32, size: u64, sec: i64) -> libc::statx {
        // SAFETY: statx is plain integers; all zero is a valid value.
        let mut s: libc::statx = unsafe { std::mem::zeroed() };
        s.stx_mode = mode as u16;
        s.stx_size = size;
        s.stx_mtime.tv_sec = sec;
        s
    }

    #[test]
    fn the_expression_is_io500s() {
        let e = Expr {
            newer_than: (100, 0),
            size: 3901,
            name_has: b"01",
        };
        let file = libc::S_IFREG | 0o644;
        assert!(e.matches(b"file.mdtest.0.101", &sx(file, 3901, 101)));
        assert!(!e.matches(b"file.mdtest.0.11", &sx(file, 3901, 101)));
        assert!(!e.matches(b"file.mdtest.0.101", &sx(file, 3900, 101)));
        assert!(!e.matches(b"file.mdtest.0.101", &sx(file, 3901, 100)));
        assert!(!e.matches(b"dir01", &sx(libc::S_IFDIR | 0o755, 3901, 101)));
    }

    #[test]
    fn a_torn_record_is_not_read_past_the_buffer() {
        let mut buf = vec![0u8; 24];
        buf[16] = 40;
        assert!(record(&buf, 0).is_none());
        buf[16] = 24;
        buf[19] = b'a';
        buf[18] = libc::DT_REG;
        assert_eq!(record(&buf, 0).unwrap(), (24, libc::DT_REG, &b"a\0"[..]));
    }

    /// The walks of four shares of a real tree look at and match, together, exactly what
    /// one walk does, each its part of every directory (nested directories entered by every
    /// share, looked at by one).
    #[test]
    fn four_shares_walk_what_one_walk_does() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path();
        let stamp = (0, 0);
        for sub in ["a", "a/b", "c"] {
            std::fs::create_dir(top.join(sub)).unwrap();
        }
        for i in 0..300 {
            let dir = ["a", "a/b", "c"][i % 3];
            let size = if i % 2 == 0 { 3901 } else { 10 };
            let f = top.join(dir).join(format!("file.{i:03}"));
            std::fs::write(f, vec![0u8; size]).unwrap();
        }
        let query = Query {
            newer_than: stamp,
            size: 3901,
            name_has: b"01".to_vec(),
        };
        let walk_share = |share: Share| {
            let fd = crate::mdtest::open_dir(top).unwrap();
            let engine = Issuer::sync_engine(1, 1, 4096, 1).unwrap();
            let mut io = Issuer::new(engine, 1, None);
            let w = walk(&mut io, std::os::fd::AsRawFd::as_raw_fd(&fd), &query, share);
            assert_eq!(w.end, End::Done);
            assert_eq!(w.stats.other_ops, w.looked);
            (w.looked, w.matched)
        };
        let one = walk_share(Share::ALL);
        // 3 directories and 300 files; the matches: the files of 3,901 bytes named *01*.
        assert_eq!(one.0, 303);
        let want = (0..300)
            .filter(|i| i % 2 == 0 && format!("file.{i:03}").contains("01"))
            .count() as u64;
        assert!(want > 0);
        assert_eq!(one.1, want);
        let parts: Vec<(u64, u64)> = (0..4)
            .map(|r| walk_share(Share { rank: r, ranks: 4 }))
            .collect();
        assert!(parts.iter().all(|p| p.0 > 303 / 8), "{parts:?}");
        let sum = parts.iter().fold((0, 0), |a, p| (a.0 + p.0, a.1 + p.1));
        assert_eq!(sum, one, "{parts:?}");
    }

    #[test]
    fn every_name_is_one_shares() {
        let names: Vec<String> = (0..4000)
            .map(|i| format!("file.mdtest.{}.{i}", i % 4))
            .collect();
        let mut per = [0usize; 4];
        for n in &names {
            let owners: Vec<u32> = (0..4)
                .filter(|&r| Share { rank: r, ranks: 4 }.owns(n.as_bytes()))
                .collect();
            assert_eq!(owners.len(), 1, "{n}: {owners:?}");
            per[owners[0] as usize] += 1;
            assert!(Share::ALL.owns(n.as_bytes()));
        }
        // Even within a fifth of a quarter.
        assert!(per.iter().all(|&c| (800..=1200).contains(&c)), "{per:?}");
    }
}
