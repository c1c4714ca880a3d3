//! The backup study (seed 001): build a tree of one large file and two small ones, archive it
//! in ustar format with 32256-byte records to a file, restore it, under buffered and direct
//! I/O on the tree's files. Each phase reports elapsed, user and sys seconds, read and write
//! calls and calls per second (the article's `timex` and `tusc -c` figures); the restored tree
//! is compared byte for byte with the original.
//!
//! Every measured phase goes through the one execution path: its thread is started and held
//! at the start gate by the runner's driver (`runner::drive`), and every read, write, open,
//! close, mkdir and fsync it times is an operation of an [`Engine`] (data I/O by submit/reap
//! into the engine's page-aligned buffers, so direct I/O works on 4k-sector devices; metadata
//! through the engine's metadata operations). The counts in the phase's Result are the ones the
//! engine kept, in the one `Stats` type, as the phase's named group.
//!
//! Like pax, the restore does not fsync the files it writes: buffered restores finish when the
//! data is in the page cache, direct ones when it is on the device. The archive itself is
//! written buffered and fsync'd inside the timed archive phase, standing in for the article's
//! raw backup disk.

#[cfg(test)]
use super::record::{Record, SweepMeta};
use super::ustar::{self, Entry, Kind, BLOCK};
use crate::engine::{self, sync::SyncEngine, BufferPool, Completion, Engine, IoOp, OpKind};
use crate::job::{CachePolicy, Route};
use crate::result::{self, BackupInfo, GroupReport, RunResult};
use crate::runner::drive::{self, Body, Gate};
use crate::runner::target::{Plan, TargetKind, TargetPlan};
use crate::runner::{IoFailure, RunStatus};
use crate::stats::{cpu, Stats, StatsReport};
use anyhow::{anyhow, bail, Context, Result};
use std::fs::{File, OpenOptions};
use std::os::fd::RawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Sizes of the tree and the record size, after scaling.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct BackupPlan {
    pub large: u64,
    pub small: Vec<u64>,
    pub record: usize,
}

/// Builds the engine of one phase from its number of file slots and its buffers. The study
/// uses the synchronous engine (pax issues one blocking call per record); tests wrap it.
pub(crate) type MakeEngine = Arc<dyn Fn(usize, BufferPool) -> Box<dyn Engine> + Send + Sync>;

/// The synchronous engine, with empty file slots the phase fills as it opens files.
pub(crate) fn sync_engine() -> MakeEngine {
    Arc::new(|files, pool| Box::new(SyncEngine::new(engine::empty_files(files), pool)))
}

/// Buffer slots of a phase: what a read lands in, the record being assembled (archive) or
/// staged for a restored file (restore), and scratch for the rare short read.
const READ_SLOT: u32 = 0;
const REC_SLOT: u32 = 1;
const SCRATCH_SLOT: u32 = 2;

/// One phase's engine and its counts: the only way the timed code does I/O. Descriptors it
/// opened and has not closed (an error part way) are closed, uncounted, when it is dropped.
struct Io {
    eng: Box<dyn Engine>,
    stats: Stats,
    done: Vec<Completion>,
    open: Vec<RawFd>,
}

impl Io {
    /// An engine with `files` slots and three page-aligned buffers of at least `record`
    /// bytes, rounded up to the buffer alignment (so a direct read may be rounded up to the
    /// device's alignment and still fit).
    fn new(make: &MakeEngine, files: usize, record: usize) -> Result<Io> {
        let len = record.next_multiple_of(engine::buffer::BUFFER_ALIGN);
        let pool = BufferPool::new(3, len, 0xbac)?;
        Ok(Io {
            eng: make(files, pool),
            stats: Stats::default(),
            done: Vec::with_capacity(3),
            open: Vec::with_capacity(4),
        })
    }

    fn slot_len(&mut self) -> usize {
        self.eng.buffers().slot_size()
    }

    /// The three buffer slots at once (read, record, scratch).
    fn slots(&mut self) -> [&mut [u8]; 3] {
        let pool = self.eng.buffers();
        let len = pool.slot_size();
        let p = [0, 1, 2].map(|s| pool.slot_ptr(s));
        // SAFETY: the pool has three slots of `len` bytes each at disjoint offsets of one live
        // allocation; `&mut self` keeps the pool borrowed exclusively for the slices' life.
        p.map(|ptr| unsafe { std::slice::from_raw_parts_mut(ptr, len) })
    }

    /// One read or write of `len` bytes at `off` between file slot `file` and buffer slot
    /// `slot`, submitted to the engine and reaped: bytes transferred. Timed and counted.
    fn io(
        &mut self,
        kind: OpKind,
        file: u32,
        slot: u32,
        len: usize,
        off: u64,
    ) -> std::io::Result<usize> {
        let op = IoOp {
            kind,
            file,
            route: Route::Buffered,
            offset: off,
            len: len as u32,
            slot,
        };
        self.done.clear();
        let t = Instant::now();
        self.eng
            .submit(std::slice::from_ref(&op), &mut self.stats.syscalls)?;
        self.eng.reap(1, &mut self.done, &mut self.stats.syscalls)?;
        let dir = match kind {
            OpKind::Read => crate::stats::Dir::Read,
            OpKind::Write => crate::stats::Dir::Write,
        };
        self.stats.lat_of(dir).record(t.elapsed().as_nanos() as u64);
        let res = match self.done.first() {
            Some(c) => c.result,
            None => return Err(std::io::Error::other("the engine completed nothing")),
        };
        if res < 0 {
            self.stats.errors += 1;
            return Err(std::io::Error::from_raw_os_error(-res as i32));
        }
        match kind {
            OpKind::Read => {
                self.stats.read_ops += 1;
                self.stats.read_bytes += res as u64;
            }
            OpKind::Write => {
                self.stats.write_ops += 1;
                self.stats.write_bytes += res as u64;
            }
        }
        Ok(res as usize)
    }

    /// Write the first `len` bytes of buffer slot `slot` at `off`, continuing after short
    /// writes (the rest is moved to the front of the slot, which stays aligned).
    fn write_all(
        &mut self,
        file: u32,
        slot: u32,
        mut len: usize,
        mut off: u64,
    ) -> std::io::Result<()> {
        while len > 0 {
            let n = self.io(OpKind::Write, file, slot, len, off)?;
            if n == 0 {
                return Err(std::io::Error::other("write returned 0"));
            }
            if n < len {
                self.eng
                    .buffers()
                    .slot_mut(slot as usize)
                    .copy_within(n..len, 0);
            }
            len -= n;
            off += n as u64;
        }
        Ok(())
    }

    /// Open `p` through the engine (never following a last symlink) and let file slot
    /// `index` use it.
    fn open(&mut self, index: u32, p: &Path, flags: i32, mode: u32) -> std::io::Result<RawFd> {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let flags = flags | libc::O_CLOEXEC | libc::O_NOFOLLOW;
        let fd = self.eng.open_at(
            engine::meta::AT_FDCWD,
            &c,
            flags,
            mode,
            &mut self.stats.syscalls,
        )?;
        self.open.push(fd);
        if let Err(e) = self.eng.set_file(index, fd) {
            self.close(index, fd)?;
            return Err(e);
        }
        Ok(fd)
    }

    /// Forget file slot `index` and close its descriptor through the engine.
    fn close(&mut self, index: u32, fd: RawFd) -> std::io::Result<()> {
        self.eng.clear_file(index);
        self.open.retain(|&o| o != fd);
        self.eng.close_fd(fd, &mut self.stats.syscalls)
    }

    fn mkdir(&mut self, p: &Path) -> std::io::Result<()> {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        match self
            .eng
            .mkdir_at(engine::meta::AT_FDCWD, &c, 0o755, &mut self.stats.syscalls)
        {
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
            r => r,
        }
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        for &fd in &self.open {
            let _ = engine::meta::close(fd);
        }
    }
}

/// Ctrl-C stops the study within one record or one MiB: the caller sees this error, stores
/// nothing for the phase, and the guard removes the tree.
fn check_interrupt() -> Result<()> {
    if crate::runner::signal::interrupted() {
        bail!("interrupted");
    }
    Ok(())
}

/// Prefix of the per-run directory (`fsbench-backup-PID`).
pub(crate) const ROOT_PREFIX: &str = "fsbench-backup-";

/// Remove `fsbench-backup-PID` directories in `dir` that a killed run left: only those whose
/// name carries a PID that is not running, that are real directories (not links) and that
/// carry fsbench's mark. Returns the paths removed.
pub(crate) fn remove_stale(dir: &Path) -> Vec<PathBuf> {
    let mut gone = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return gone;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(ROOT_PREFIX))
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid <= 0 || pid as u32 == std::process::id() || pid_alive(pid) {
            continue;
        }
        let p = e.path();
        let is_dir = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_dir());
        if is_dir && crate::safety::is_marked(&p) && std::fs::remove_dir_all(&p).is_ok() {
            gone.push(p);
        }
    }
    gone
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists; it sends nothing.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Bytes the study writes at its peak: the tree, the archive (headers and record padding
/// included) and the restored copy all exist at once.
pub(crate) fn space_needed(plan: &BackupPlan) -> u64 {
    let files = 1 + plan.small.len() as u64;
    let tree = plan
        .small
        .iter()
        .fold(plan.large, |a, &b| a.saturating_add(b));
    let archive = tree
        .saturating_add((files + 1).saturating_mul(2 * BLOCK as u64))
        .saturating_add(2 * plan.record as u64);
    tree.saturating_mul(2).saturating_add(archive)
}

const TREE_FILES: [&str; 3] = ["swtape01.iso", "hpux_11.23.tgz", "hpux_11.11.tgz"];

/// Create the tree under `root` (which must not exist): one large file and the small ones.
pub(crate) fn build_tree(root: &Path, plan: &BackupPlan) -> Result<Vec<(String, u64)>> {
    std::fs::create_dir(root).map_err(|e| anyhow!("cannot create {}: {e}", root.display()))?;
    crate::safety::mark_created(root);
    let mut sizes = vec![plan.large];
    sizes.extend(plan.small.iter().copied());
    let mut out = Vec::new();
    // Untimed setup: the tree is written with ordinary calls, its bytes from the same
    // non-repeating pattern the engines' buffers carry.
    let mut chunk = BufferPool::new(1, 1 << 20, 0xbac)?.slot(0).to_vec();
    for (i, size) in sizes.iter().enumerate() {
        let name = TREE_FILES
            .get(i)
            .map(|s| s.to_string())
            .unwrap_or_else(|| format!("file{i}.dat"));
        let p = root.join(&name);
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&p)
            .with_context(|| format!("creating {}", p.display()))?;
        crate::safety::mark_created(&p);
        let mut off = 0u64;
        let mut n = 0u64;
        while off < *size {
            check_interrupt()?;
            // Stamp each MiB with its number and file, so a misplaced block cannot compare equal.
            chunk[..8].copy_from_slice(&n.to_le_bytes());
            chunk[8] = i as u8;
            let len = ((*size - off) as usize).min(chunk.len());
            f.write_all_at(&chunk[..len], off)?;
            off += len as u64;
            n += 1;
        }
        f.sync_all()?;
        out.push((name, *size));
    }
    Ok(out)
}

fn open_error(p: &Path, direct: bool, e: std::io::Error) -> anyhow::Error {
    anyhow!(
        "opening {}{}: {e}",
        p.display(),
        if direct { " with O_DIRECT" } else { "" }
    )
}

/// What goes into the archive: bytes of a header or padding, or the first bytes of the read
/// slot (file data just read).
#[derive(Clone, Copy)]
enum Src<'a> {
    Bytes(&'a [u8]),
    Read(usize),
}

/// The archive being written: records of `record` bytes assembled in the record slot and
/// written in one call each (one write system call per record, like pax).
struct Tape {
    file: u32,
    off: u64,
    fill: usize,
    record: usize,
}

impl Tape {
    /// Append bytes; full records are written out.
    fn push(&mut self, io: &mut Io, src: Src<'_>) -> std::io::Result<()> {
        let total = match src {
            Src::Bytes(b) => b.len(),
            Src::Read(n) => n,
        };
        let mut taken = 0;
        while taken < total {
            let [read, rec, _] = io.slots();
            let data = match src {
                Src::Bytes(b) => b,
                Src::Read(n) => &read[..n],
            };
            let k = (total - taken).min(self.record - self.fill);
            rec[self.fill..self.fill + k].copy_from_slice(&data[taken..taken + k]);
            self.fill += k;
            taken += k;
            if self.fill == self.record {
                io.write_all(self.file, REC_SLOT, self.record, self.off)?;
                self.off += self.record as u64;
                self.fill = 0;
            }
        }
        Ok(())
    }

    /// Zero-pad to the next block boundary (after file data).
    fn pad_block(&mut self, io: &mut Io) -> std::io::Result<()> {
        let rem = self.fill % BLOCK;
        if rem != 0 {
            self.push(io, Src::Bytes(&[0u8; BLOCK][..BLOCK - rem]))?;
        }
        Ok(())
    }

    /// Two zero blocks, then pad the last record with zeros.
    fn finish(&mut self, io: &mut Io) -> std::io::Result<()> {
        self.push(io, Src::Bytes(&[0u8; 2 * BLOCK]))?;
        if self.fill > 0 {
            let [_, rec, _] = io.slots();
            rec[self.fill..self.record].fill(0);
            io.write_all(self.file, REC_SLOT, self.record, self.off)?;
            self.off += self.record as u64;
            self.fill = 0;
        }
        Ok(())
    }
}

/// File slots of the archive phase.
const ARCHIVE_OUT: u32 = 0;
const TREE_IN: u32 = 1;

/// Archive `files` of `tree` (named `base/NAME` in the archive) into `archive`.
fn archive(
    io: &mut Io,
    tree: &Path,
    base: &str,
    files: &[(String, u64)],
    archive: &Path,
    direct: bool,
    record: usize,
) -> Result<()> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
    let out = io
        .open(ARCHIVE_OUT, archive, flags, 0o644)
        .with_context(|| format!("creating {}", archive.display()))?;
    crate::safety::mark_created(archive);
    let mut tape = Tape {
        file: ARCHIVE_OUT,
        off: 0,
        fill: 0,
        record,
    };
    let dir = ustar::header(&Entry {
        name: base.into(),
        kind: Kind::Dir,
        size: 0,
        mode: 0o755,
        mtime: 0,
    })?;
    tape.push(io, Src::Bytes(&dir))?;
    for (name, size) in files {
        let p = tree.join(name);
        let flags = libc::O_RDONLY | if direct { libc::O_DIRECT } else { 0 };
        let f = io
            .open(TREE_IN, &p, flags, 0)
            .map_err(|e| open_error(&p, direct, e))?;
        // One read per record; a direct read is rounded up to the device's alignment (a
        // 32256-byte record is not a multiple of a 4k sector).
        let want = if direct {
            let align = crate::runner::target::dio_alignment(&p).max(1) as usize;
            record.next_multiple_of(align).min(io.slot_len())
        } else {
            record
        };
        let h = ustar::header(&Entry {
            name: format!("{base}/{name}"),
            kind: Kind::File,
            size: *size,
            mode: 0o644,
            mtime: 0,
        })?;
        tape.push(io, Src::Bytes(&h))?;
        let mut off = 0u64;
        while off < *size {
            check_interrupt()?;
            let n = io.io(OpKind::Read, TREE_IN, READ_SLOT, want, off)?;
            if n == 0 {
                bail!("{} shrank while being archived", p.display());
            }
            let n = n.min((*size - off) as usize);
            tape.push(io, Src::Read(n))?;
            off += n as u64;
        }
        tape.pad_block(io)?;
        io.close(TREE_IN, f)?;
    }
    tape.finish(io)?;
    io.eng.sync_fd(out, false, &mut io.stats.syscalls)?;
    io.close(ARCHIVE_OUT, out)?;
    Ok(())
}

/// File slots of the restore phase.
const ARCHIVE_IN: u32 = 0;
const OUT_BUFFERED: u32 = 1;
const OUT_DIRECT: u32 = 2;

/// One restored file being written: an O_DIRECT descriptor (direct mode) plus a buffered
/// O_DSYNC one for the misaligned tail (the white paper's fallback rule); its data is staged
/// in the record slot so each write call carries `record` bytes, like pax.
struct OutFile {
    direct: Option<RawFd>,
    buffered: RawFd,
    off: u64,
    left: u64,
    fill: usize,
}

fn flush_out(io: &mut Io, o: &mut OutFile, align: u64, fallbacks: &mut u64) -> std::io::Result<()> {
    if o.fill == 0 {
        return Ok(());
    }
    let route = CachePolicy::Direct.route(o.off, o.fill as u64, align);
    let file = match (o.direct, route) {
        (Some(_), Route::Direct) => OUT_DIRECT,
        (Some(_), _) => {
            *fallbacks += 1;
            OUT_BUFFERED
        }
        (None, _) => OUT_BUFFERED,
    };
    io.write_all(file, REC_SLOT, o.fill, o.off)?;
    o.off += o.fill as u64;
    o.fill = 0;
    Ok(())
}

/// Close a restored file's descriptors.
fn close_out(io: &mut Io, o: &OutFile) -> std::io::Result<()> {
    io.close(OUT_BUFFERED, o.buffered)?;
    if let Some(d) = o.direct {
        io.close(OUT_DIRECT, d)?;
    }
    Ok(())
}

/// Read record `aoff` of the archive whole into the read slot (a short read is completed
/// through the scratch slot).
fn read_record(io: &mut Io, archive: &Path, record: usize, aoff: u64) -> Result<()> {
    let mut got = io.io(OpKind::Read, ARCHIVE_IN, READ_SLOT, record, aoff)?;
    while got < record && got > 0 {
        let n = io.io(
            OpKind::Read,
            ARCHIVE_IN,
            SCRATCH_SLOT,
            record - got,
            aoff + got as u64,
        )?;
        if n == 0 {
            got = 0;
            break;
        }
        let [read, _, scratch] = io.slots();
        read[got..got + n].copy_from_slice(&scratch[..n]);
        got += n;
    }
    if got == 0 {
        bail!("archive {} ends inside a record", archive.display());
    }
    Ok(())
}

/// Create the restored file or directory a header names: the file to write next, if any.
fn start_entry(io: &mut Io, e: &Entry, dest: &Path, direct: bool) -> Result<Option<OutFile>> {
    let p = dest.join(&e.name);
    match e.kind {
        Kind::Dir => {
            io.mkdir(&p)
                .with_context(|| format!("creating {}", p.display()))?;
            Ok(None)
        }
        Kind::File => {
            let flags = libc::O_WRONLY
                | libc::O_CREAT
                | libc::O_EXCL
                | if direct { libc::O_DSYNC } else { 0 };
            let buffered = io
                .open(OUT_BUFFERED, &p, flags, 0o644)
                .with_context(|| format!("creating {}", p.display()))?;
            let d = if direct {
                let d = io
                    .open(OUT_DIRECT, &p, libc::O_WRONLY | libc::O_DIRECT, 0)
                    .map_err(|e| {
                        anyhow!(
                            "opening {} with O_DIRECT: {e} (does this file system support direct I/O?)",
                            p.display()
                        )
                    })?;
                Some(d)
            } else {
                None
            };
            let o = OutFile {
                direct: d,
                buffered,
                off: 0,
                left: e.size,
                fill: 0,
            };
            if e.size > 0 {
                Ok(Some(o))
            } else {
                close_out(io, &o)?;
                Ok(None)
            }
        }
    }
}

/// Restore `archive` under `dest` (which must exist and be empty): the number of misaligned
/// direct writes done buffered.
fn restore(io: &mut Io, archive: &Path, dest: &Path, direct: bool, record: usize) -> Result<u64> {
    let a = io
        .open(ARCHIVE_IN, archive, libc::O_RDONLY, 0)
        .with_context(|| format!("opening {}", archive.display()))?;
    let align = crate::runner::target::dio_alignment(dest);
    let mut aoff = 0u64;
    let mut cur: Option<OutFile> = None;
    let mut fallbacks = 0u64;
    'records: loop {
        check_interrupt()?;
        read_record(io, archive, record, aoff)?;
        aoff += record as u64;
        let mut i = 0;
        while i < record {
            if let Some(o) = cur.as_mut() {
                let want = (o.left as usize).min(record - i);
                let take = want.min(record - o.fill);
                let [read, stage, _] = io.slots();
                stage[o.fill..o.fill + take].copy_from_slice(&read[i..i + take]);
                o.fill += take;
                o.left -= take as u64;
                i += take;
                if o.fill == record || o.left == 0 {
                    flush_out(io, o, align, &mut fallbacks)?;
                }
                if o.left == 0 {
                    close_out(io, o)?;
                    cur = None;
                    // Skip the padding to the next block.
                    i = i.div_ceil(BLOCK) * BLOCK;
                }
                continue;
            }
            let mut h = [0u8; BLOCK];
            h.copy_from_slice(&io.slots()[0][i..i + BLOCK]);
            i += BLOCK;
            let Some(e) = ustar::parse_header(&h)? else {
                break 'records;
            };
            cur = start_entry(io, &e, dest, direct)?;
        }
    }
    io.close(ARCHIVE_IN, a)?;
    io.stats.buffered_fallback_ops += fallbacks;
    Ok(fallbacks)
}

/// Compare two files byte for byte.
fn same_contents(a: &Path, b: &Path) -> Result<bool> {
    let (fa, fb) = (File::open(a)?, File::open(b)?);
    if fa.metadata()?.len() != fb.metadata()?.len() {
        return Ok(false);
    }
    let (mut x, mut y) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    let mut off = 0u64;
    loop {
        let n = fa.read_at(&mut x, off)?;
        let k = fb.read_at(&mut y[..n.max(1)], off)?;
        if n == 0 {
            return Ok(k == 0);
        }
        if n != k || x[..n] != y[..n] {
            return Ok(false);
        }
        off += n as u64;
    }
}

/// A measured phase as a Result (kind `backup`): the archive is its target, the phase its
/// one named group (the article's per-phase `timex` and `tusc -c` figures).
#[allow(clippy::too_many_arguments)]
fn phase_result(
    name: &str,
    phase: &str,
    cache: CachePolicy,
    record: usize,
    archive: &Path,
    tree_files: &[PathBuf],
    stats: Stats,
    failure: Option<String>,
    started_unix_s: f64,
    notes: Vec<String>,
) -> RunResult {
    let mut r = RunResult::new(
        result::Kind::Backup,
        name,
        started_unix_s,
        crate::probe::env::collect(tree_files),
    );
    r.plan = Some(Plan {
        targets: vec![TargetPlan {
            path: archive.to_path_buf(),
            kind: TargetKind::File,
            size: std::fs::metadata(archive).map(|m| m.len()).unwrap_or(0),
            created: true,
            dio_align: crate::runner::target::dio_alignment(archive),
            reserved: None,
        }],
        cache,
        notes: Vec::new(),
    });
    r.notes = notes;
    r.backup = Some(BackupInfo {
        phase: phase.to_string(),
        record_bytes: record as u64,
        files: tree_files.iter().map(|p| p.display().to_string()).collect(),
    });
    r.failures = failure
        .iter()
        .map(|m| IoFailure {
            user: 0,
            thread: 0,
            path: archive.display().to_string(),
            offset: None,
            message: m.clone(),
        })
        .collect();
    if !r.failures.is_empty() {
        r.status = RunStatus::Failed;
    }
    r.total = StatsReport::from_stats(&stats, true);
    r.groups.push(GroupReport {
        name: phase.to_string(),
        op: "phase".into(),
        run: None,
        stats: StatsReport::from_stats(&stats, false),
    });
    r
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Asked once per phase, on the calling thread, when the phase's thread is ready (true) or
/// could not be made ready (false): may it start? On one host it always may; on MPI ranks
/// this is the phase's start barrier (`crate::mpi`), every rank's answer the same.
pub(crate) type StartHook<'a> = &'a mut dyn FnMut(bool) -> bool;

/// A phase as its thread measured it: its counts, the gate's opening and its end, and what
/// `work` returned.
struct Timed<T> {
    stats: Stats,
    opened: Instant,
    end: Instant,
    result: Result<T>,
}

/// Run one timed phase on its own thread through the runner's driver: the thread builds its
/// engine (untimed), waits at the start gate, then runs `work` on it once `start` says so.
/// Elapsed time runs from the gate's opening to the end of `work`; user and sys time are the
/// thread's own. `start` is asked exactly once, whatever happens.
fn phase<T: Send + 'static>(
    name: &str,
    make: &MakeEngine,
    files: usize,
    record: usize,
    start: StartHook<'_>,
    work: impl FnOnce(&mut Io) -> Result<T> + Send + 'static,
) -> Result<Timed<T>> {
    let make = make.clone();
    let body: Body<(Stats, Instant, Result<T>)> = Box::new(move |gate: &Gate| {
        let io = Io::new(&make, files, record);
        if !gate.arrive_and_wait() {
            return None;
        }
        let mut io = match io {
            Ok(io) => io,
            Err(e) => return Some((Stats::default(), Instant::now(), Err(e))),
        };
        let u0 = cpu::thread_usage();
        let r = work(&mut io);
        let end = Instant::now();
        io.stats.usage = cpu::thread_usage().since(&u0);
        Some((std::mem::take(&mut io.stats), end, r))
    });
    let crew = match drive::start_threads([(name.to_string(), body)], 1 << 20, &drive::spawn_thread)
    {
        Ok(c) => c,
        Err(f) => {
            start(false);
            bail!("cannot start the backup thread: {}", f.error);
        }
    };
    let opened = crew.open(|_| start(true));
    let joined = crew.join()?;
    let opened = opened.ok_or_else(|| anyhow!("the backup phase was called off"))?;
    let (mut stats, end, result) = joined
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("the backup thread returned nothing"))?;
    stats.elapsed_s = end.saturating_duration_since(opened).as_secs_f64();
    Ok(Timed {
        stats,
        opened,
        end,
        result,
    })
}

/// One measured phase of one tree, before it becomes a Result: what [`phase_result`] needs,
/// and the gate's opening and the end (for a rank's place on the barrier clock).
pub(crate) struct PhaseRun {
    pub stats: Stats,
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub opened: Instant,
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub end: Instant,
    pub started_unix_s: f64,
    pub failure: Option<String>,
    pub notes: Vec<String>,
    /// Restore: the restored tree is byte-identical to the original.
    pub verified: Option<bool>,
}

/// What every phase of one study shares: its directory (`root`, holding the tree, the
/// archive and the restored copy), the tree's files, the record size and the engine maker.
pub(crate) struct Study<'a> {
    pub root: &'a Path,
    pub tree: &'a Path,
    pub files: &'a [(String, u64)],
    pub tree_paths: &'a [PathBuf],
    pub record: usize,
    pub make: &'a MakeEngine,
}

impl Study<'_> {
    pub(crate) fn archive_path(&self) -> PathBuf {
        self.root.join("backup.tar")
    }

    /// Time the archive phase under `cache`, started when `start` says so.
    pub(crate) fn archive_run(&self, cache: CachePolicy, start: StartHook<'_>) -> Result<PhaseRun> {
        let direct = cache.uses_direct();
        let archive_path = self.archive_path();
        for p in self.tree_paths {
            let _ = crate::runner::target::evict(p);
        }
        let started = now_unix();
        let (tree, files, ap, record) = (
            self.tree.to_path_buf(),
            self.files.to_vec(),
            archive_path.clone(),
            self.record,
        );
        let t = phase("backup-archive", self.make, 2, record, start, move |io| {
            archive(io, &tree, "tree", &files, &ap, direct, record)
        })?;
        let notes = vec![format!(
            "ustar archive of {} files in {}-byte records; tree files read {}",
            self.files.len(),
            self.record,
            if direct {
                "with O_DIRECT"
            } else {
                "through the page cache"
            }
        )];
        Ok(PhaseRun {
            stats: t.stats,
            opened: t.opened,
            end: t.end,
            started_unix_s: started,
            failure: t.result.as_ref().err().map(|e| format!("{e:#}")),
            notes,
            verified: None,
        })
    }

    /// Time the archive phase under `cache`: its Result, or None when interrupted.
    fn archive_point(&self, cache: CachePolicy) -> Result<Option<RunResult>> {
        let run = self.archive_run(cache, &mut |_| true)?;
        if crate::runner::signal::interrupted() {
            return Ok(None);
        }
        Ok(Some(self.result_of(cache, "archive", run)))
    }

    /// Time the restore phase under `cache` into `restore_dir` (created here), started when
    /// `start` says so, and verify the restored tree (untimed).
    pub(crate) fn restore_run(
        &self,
        cache: CachePolicy,
        restore_dir: &Path,
        start: StartHook<'_>,
    ) -> Result<PhaseRun> {
        let direct = cache.uses_direct();
        let archive_path = self.archive_path();
        let _ = crate::runner::target::evict(&archive_path);
        if let Err(e) = std::fs::create_dir(restore_dir) {
            start(false);
            bail!("cannot create {}: {e}", restore_dir.display());
        }
        let started = now_unix();
        let (ap, rd, record) = (archive_path.clone(), restore_dir.to_path_buf(), self.record);
        let t = phase("backup-restore", self.make, 3, record, start, move |io| {
            restore(io, &ap, &rd, direct, record)
        })?;
        let mut failure = t.result.as_ref().err().map(|e| format!("{e:#}"));
        let mut notes = vec!["restored files are not fsync'd, like pax".to_string()];
        if let Ok(n) = t.result {
            if n > 0 {
                notes.push(format!(
                    "{n} misaligned direct writes done as O_DSYNC buffered writes"
                ));
            }
        }
        if failure.is_none() && !crate::runner::signal::interrupted() {
            failure = self.verify(restore_dir);
        }
        let verified = failure.is_none();
        notes.push(if verified {
            "restored tree verified byte-identical".into()
        } else {
            "restored tree NOT verified".into()
        });
        Ok(PhaseRun {
            stats: t.stats,
            opened: t.opened,
            end: t.end,
            started_unix_s: started,
            failure,
            notes,
            verified: Some(verified),
        })
    }

    /// Time the restore phase under `cache` and verify the restored tree (untimed): its
    /// Result, or None when interrupted.
    fn restore_point(&self, cache: CachePolicy, restore_dir: &Path) -> Result<Option<RunResult>> {
        let run = self.restore_run(cache, restore_dir, &mut |_| true)?;
        if crate::runner::signal::interrupted() {
            return Ok(None);
        }
        Ok(Some(self.result_of(cache, "restore", run)))
    }

    /// A measured phase (`archive` or `restore`) of this tree as its Result.
    pub(crate) fn result_of(&self, cache: CachePolicy, phase: &str, run: PhaseRun) -> RunResult {
        let mut r = phase_result(
            &format!("backup {phase} {}", cache.name()),
            phase,
            cache,
            self.record,
            &self.archive_path(),
            self.tree_paths,
            run.stats,
            run.failure,
            run.started_unix_s,
            run.notes,
        );
        if let Some(v) = run.verified {
            r.probes
                .insert("verified".into(), serde_json::Value::Bool(v));
        }
        r
    }

    /// Compare the restored tree with the original byte for byte: the last difference found.
    pub(crate) fn verify(&self, restore_dir: &Path) -> Option<String> {
        let mut failure = None;
        for (name, _) in self.files {
            let (a, b) = (self.tree.join(name), restore_dir.join("tree").join(name));
            match same_contents(&a, &b) {
                Ok(true) => {}
                Ok(false) => {
                    failure = Some(format!(
                        "restored {} differs from the original",
                        b.display()
                    ))
                }
                Err(e) => failure = Some(format!("verifying {}: {e}", b.display())),
            }
        }
        failure
    }
}

/// Where each measured phase's Result goes: (cache policy, `archive` or `restore`, Result).
pub(crate) type PhaseSink<'a> = &'a mut dyn FnMut(CachePolicy, &str, RunResult) -> Result<()>;

/// Run the study in `dir`: for each cache policy an archive point and a restore point.
/// `meta(cache, phase)` gives each record its sweep metadata.
#[cfg(test)]
pub(crate) fn run(
    dir: &Path,
    plan: &BackupPlan,
    caches: &[CachePolicy],
    meta: impl FnMut(CachePolicy, &str) -> SweepMeta,
    store: impl FnMut(Record) -> Result<()>,
) -> Result<()> {
    run_with(dir, plan, caches, &sync_engine(), meta, store)
}

/// [`run`] with the engine each phase is built on.
#[cfg(test)]
pub(crate) fn run_with(
    dir: &Path,
    plan: &BackupPlan,
    caches: &[CachePolicy],
    make: &MakeEngine,
    mut meta: impl FnMut(CachePolicy, &str) -> SweepMeta,
    mut store: impl FnMut(Record) -> Result<()>,
) -> Result<()> {
    run_phases(dir, plan, caches, make, &mut |c, ph, r| {
        store(Record::run(meta(c, ph), r))
    })
}

/// The study on this host, each phase's Result to `sink` (the sweep's point metadata is the
/// caller's).
pub(crate) fn run_phases(
    dir: &Path,
    plan: &BackupPlan,
    caches: &[CachePolicy],
    make: &MakeEngine,
    sink: PhaseSink<'_>,
) -> Result<()> {
    let tag = std::process::id();
    for p in remove_stale(dir) {
        eprintln!(
            "fsbench: removed {}, left by a backup study that was killed",
            p.display()
        );
    }
    crate::guard::ensure_free_space(dir, space_needed(plan), "the backup study")?;
    let root = dir.join(format!("{ROOT_PREFIX}{tag}"));
    let tree = root.join("tree");
    std::fs::create_dir(&root)
        .map_err(|e| crate::usage!("cannot create {}: {e}", root.display()))?;
    crate::safety::mark_created(&root);
    // create_dir succeeded, so the directory and everything in it is this run's.
    struct RemoveDir(PathBuf);
    impl Drop for RemoveDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _guard = RemoveDir(root.clone());
    let files = match build_tree(&tree, plan) {
        Err(_) if crate::runner::signal::interrupted() => return Ok(()),
        r => r?,
    };
    let tree_paths: Vec<PathBuf> = files.iter().map(|(n, _)| tree.join(n)).collect();
    let study = Study {
        root: &root,
        tree: &tree,
        files: &files,
        tree_paths: &tree_paths,
        record: plan.record,
        make,
    };
    let restore_dir = root.join("restore");
    for cache in caches {
        let Some(r) = study.archive_point(*cache)? else {
            return Ok(());
        };
        let failed = !r.failures.is_empty();
        sink(*cache, "archive", r)?;
        if failed {
            let _ = std::fs::remove_file(study.archive_path());
            continue;
        }
        let Some(r) = study.restore_point(*cache, &restore_dir)? else {
            return Ok(());
        };
        sink(*cache, "restore", r)?;
        let _ = std::fs::remove_dir_all(&restore_dir);
        let _ = std::fs::remove_file(study.archive_path());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_restore_roundtrip_buffered_and_direct() {
        let d = tempfile::tempdir().unwrap();
        let plan = BackupPlan {
            large: 300_001,
            small: vec![7_103, 0],
            record: ustar::PAX_RECORD,
        };
        let mut recs = Vec::new();
        run(
            d.path(),
            &plan,
            &[CachePolicy::Buffered, CachePolicy::Direct],
            |c, ph| SweepMeta {
                study: "backup".into(),
                point: vec![("cache".into(), c.name()), ("phase".into(), ph.into())],
                ..Default::default()
            },
            |r| {
                recs.push(r);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(recs.len(), 4);
        for r in &recs {
            let res = r.result().unwrap();
            assert_eq!(res.status, RunStatus::Complete, "{:?}", res.failures);
            assert!(res.total.syscalls.read > 0 && res.total.syscalls.write > 0);
        }
        // Restore reads the archive one 32256-byte record per call.
        let restore = recs[1].result().unwrap();
        assert_eq!(restore.probes["verified"], serde_json::Value::Bool(true));
        assert_eq!(restore.kind, result::Kind::Backup);
        assert_eq!(restore.groups[0].name, "restore");
        assert_eq!(restore.groups[0].stats.ops, restore.total.ops);
        assert!(restore.job.is_none(), "a backup phase runs no Job");
        let b = restore.backup.as_ref().unwrap();
        assert_eq!((b.phase.as_str(), b.files.len()), ("restore", 3));
        assert_eq!(b.record_bytes, ustar::PAX_RECORD as u64);
        let archive_size = restore.plan.as_ref().unwrap().targets[0].size;
        assert_eq!(archive_size % ustar::PAX_RECORD as u64, 0);
        // Everything fsbench made is gone.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    /// What a counting engine saw: ops submitted by kind, opens and closes, and whether every
    /// buffer handed to the kernel was page-aligned.
    #[derive(Debug, Default, Clone, Copy, PartialEq)]
    struct Seen {
        reads: u64,
        writes: u64,
        opens: u64,
        closes: u64,
        fsyncs: u64,
        misaligned: u64,
    }

    /// The synchronous engine with a count of everything submitted to it, handed to the
    /// test when the phase drops it.
    struct Counting {
        inner: SyncEngine,
        seen: Seen,
        out: Arc<std::sync::Mutex<Vec<Seen>>>,
    }

    impl Drop for Counting {
        fn drop(&mut self) {
            self.out.lock().unwrap().push(self.seen);
        }
    }

    impl Engine for Counting {
        fn submit(
            &mut self,
            ops: &[IoOp],
            sys: &mut crate::stats::SyscallCounts,
        ) -> std::io::Result<usize> {
            for op in ops {
                match op.kind {
                    OpKind::Read => self.seen.reads += 1,
                    OpKind::Write => self.seen.writes += 1,
                }
                let p = self.inner.buffers().slot_ptr(op.slot as usize) as usize;
                if p % 4096 != 0 {
                    self.seen.misaligned += 1;
                }
            }
            self.inner.submit(ops, sys)
        }
        fn reap(
            &mut self,
            min: usize,
            done: &mut Vec<Completion>,
            sys: &mut crate::stats::SyscallCounts,
        ) -> std::io::Result<usize> {
            self.inner.reap(min, done, sys)
        }
        fn buffers(&mut self) -> &mut BufferPool {
            self.inner.buffers()
        }
        fn flush(&mut self, sys: &mut crate::stats::SyscallCounts) -> std::io::Result<()> {
            self.inner.flush(sys)
        }
        fn open_at(
            &mut self,
            dir: RawFd,
            path: &std::ffi::CStr,
            flags: i32,
            mode: u32,
            sys: &mut crate::stats::SyscallCounts,
        ) -> std::io::Result<RawFd> {
            self.seen.opens += 1;
            self.inner.open_at(dir, path, flags, mode, sys)
        }
        fn close_fd(
            &mut self,
            fd: RawFd,
            sys: &mut crate::stats::SyscallCounts,
        ) -> std::io::Result<()> {
            self.seen.closes += 1;
            self.inner.close_fd(fd, sys)
        }
        fn sync_fd(
            &mut self,
            fd: RawFd,
            data_only: bool,
            sys: &mut crate::stats::SyscallCounts,
        ) -> std::io::Result<()> {
            self.seen.fsyncs += 1;
            self.inner.sync_fd(fd, data_only, sys)
        }
        fn set_file(&mut self, index: u32, fd: RawFd) -> std::io::Result<()> {
            self.inner.set_file(index, fd)
        }
        fn clear_file(&mut self, index: u32) {
            self.inner.clear_file(index)
        }
    }

    #[test]
    fn phase_counts_are_the_engine_submissions() {
        let d = tempfile::tempdir().unwrap();
        let plan = BackupPlan {
            large: 200_003,
            small: vec![9_000, 1],
            record: ustar::PAX_RECORD,
        };
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let make: MakeEngine = Arc::new(move |files, pool| {
            Box::new(Counting {
                inner: SyncEngine::new(engine::empty_files(files), pool),
                seen: Seen::default(),
                out: s2.clone(),
            })
        });
        let mut recs = Vec::new();
        run_with(
            d.path(),
            &plan,
            &[CachePolicy::Buffered, CachePolicy::Direct],
            &make,
            |c, ph| SweepMeta {
                study: "backup".into(),
                point: vec![("cache".into(), c.name()), ("phase".into(), ph.into())],
                ..Default::default()
            },
            |r| {
                recs.push(r);
                Ok(())
            },
        )
        .unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_eq!((recs.len(), seen.len()), (4, 4), "one engine per phase");
        for (rec, s) in recs.iter().zip(&seen) {
            let r = rec.result().unwrap();
            assert_eq!(r.status, RunStatus::Complete, "{:?}", r.failures);
            let (t, g) = (&r.total, &r.groups[0].stats);
            assert_eq!((t.syscalls.read, t.syscalls.write), (s.reads, s.writes));
            assert_eq!((t.read_ops, t.write_ops), (s.reads, s.writes));
            assert_eq!((t.syscalls.open, t.syscalls.close), (s.opens, s.closes));
            assert_eq!(t.syscalls.fsync, s.fsyncs);
            assert_eq!((g.read_ops, g.write_ops), (s.reads, s.writes));
            assert_eq!(s.misaligned, 0);
            assert!(t.elapsed_s > 0.0 && s.reads > 0 && s.writes > 0);
        }
        // The archive: 1 + 3 files opened and closed, one fsync, one write per record.
        let archive = recs[0].result().unwrap();
        let size = archive.plan.as_ref().unwrap().targets[0].size;
        assert_eq!((seen[0].opens, seen[0].closes, seen[0].fsyncs), (4, 4, 1));
        assert_eq!(seen[0].writes, size / ustar::PAX_RECORD as u64);
        // The restore reads the archive one record per call; direct mode opens each file twice.
        assert_eq!(seen[1].reads, size / ustar::PAX_RECORD as u64);
        assert_eq!((seen[1].opens, seen[3].opens), (4, 7));
        assert_eq!(seen[3].closes, 7);
    }

    #[test]
    fn tape_writes_whole_records() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.tar");
        let mut io = Io::new(&sync_engine(), 1, ustar::PAX_RECORD).unwrap();
        let fd = io
            .open(0, &p, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o644)
            .unwrap();
        let mut tape = Tape {
            file: 0,
            off: 0,
            fill: 0,
            record: ustar::PAX_RECORD,
        };
        tape.push(&mut io, Src::Bytes(&[1u8; BLOCK])).unwrap();
        io.slots()[0][..30000].fill(7);
        tape.push(&mut io, Src::Read(30000)).unwrap();
        tape.push(&mut io, Src::Read(30000)).unwrap();
        tape.pad_block(&mut io).unwrap();
        tape.finish(&mut io).unwrap();
        io.close(0, fd).unwrap();
        // 512 + 60416 + 1024 bytes = 2 records of 32256, one write call each.
        assert_eq!(io.stats.syscalls.write, 2);
        let data = std::fs::read(&p).unwrap();
        assert_eq!(data.len(), 2 * ustar::PAX_RECORD);
        assert!(data[..BLOCK].iter().all(|&b| b == 1));
        assert!(data[BLOCK..BLOCK + 60000].iter().all(|&b| b == 7));
        assert!(data[BLOCK + 60000..].iter().all(|&b| b == 0));
        assert_eq!(io.stats.syscalls.open, 1);
        assert_eq!(io.stats.syscalls.close, 1);
    }
}
