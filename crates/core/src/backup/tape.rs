//! The backup study's timed phases as sources the runner drives: the archive ([`Archive`]),
//! written as a tape of whole ustar records, and the restore ([`Restore`]), which reads it
//! back record by record; and the byte-for-byte comparison of a restored tree with its
//! original. A phase keeps its own control flow (which file, which record) and its counts of
//! reads and writes; every read, write, open, close, mkdir and fsync goes through the
//! [`Issuer`] the runner lends it for each step, and the runner's loop
//! (`runner::source::drive`) owns the gate, the stop (Ctrl-C) and the CPU time.
//!
//! One step of the archive is one open of a tree file (with its header) or one read of a
//! record's worth of it (with the record writes it fills), and the last step writes the
//! end of the tape and fsyncs it; one step of the restore is one archive record read and
//! everything it holds restored. A stop between steps therefore comes within one record.

use super::ustar::{self, Entry, Kind, BLOCK};
use crate::engine::{IoOp, OpKind};
use crate::job::{CachePolicy, Route};
use crate::runner::issue::Issuer;
use crate::runner::source::Source;
use crate::stats::{Dir, Stats};
use crate::trace::TraceOp;
use anyhow::{anyhow, bail, Context, Result};
use std::fs::File;
use std::os::fd::RawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Buffer slots of a phase: what a read lands in, the record being assembled (archive) or
/// staged for a restored file (restore), and scratch for the rare short read.
const READ_SLOT: u32 = 0;
const REC_SLOT: u32 = 1;
const SCRATCH_SLOT: u32 = 2;
/// Buffers a phase's issuer must have, each of at least one record (see [`READ_SLOT`]).
pub(super) const SLOTS: usize = 3;

/// What a phase keeps across its steps: its counts (reads and writes with their latencies,
/// errors, fallbacks; the system calls are the issuer's) and the descriptors it has open.
#[derive(Default)]
pub(super) struct Ledger {
    stats: Stats,
    open: Vec<RawFd>,
}

impl Ledger {
    /// The phase's counts, taken once it has ended.
    pub(super) fn take_stats(&mut self) -> Stats {
        std::mem::take(&mut self.stats)
    }

    /// Close, through `io`, the descriptors an error part way left open (after the phase's
    /// counts were taken, so they are not counted).
    pub(super) fn close_left(&mut self, io: &mut Issuer) {
        for fd in self.open.drain(..) {
            let _ = io.close_fd(fd);
        }
    }
}

/// One step's way to the phase's I/O: the issuer lent for the step and the phase's ledger.
struct Calls<'a> {
    io: &'a mut Issuer,
    led: &'a mut Ledger,
}

impl Calls<'_> {
    fn slot_len(&mut self) -> usize {
        self.io.buffers().slot_size()
    }

    /// The three buffer slots at once (read, record, scratch).
    fn slots(&mut self) -> [&mut [u8]; 3] {
        let pool = self.io.buffers();
        let len = pool.slot_size();
        assert!(
            pool.slots() >= SLOTS,
            "a backup phase needs {SLOTS} buffers"
        );
        let p = [0, 1, 2].map(|s| pool.slot_ptr(s));
        // SAFETY: the pool has (checked above) three slots of `len` bytes each at disjoint
        // offsets of one live allocation; `&mut self` keeps the issuer, and with it the pool,
        // borrowed exclusively for the slices' life.
        p.map(|ptr| unsafe { std::slice::from_raw_parts_mut(ptr, len) })
    }

    /// One read or write of `len` bytes at `off` between file slot `file` and buffer slot
    /// `slot`, waited for: bytes transferred. Timed and counted.
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
        let t = Instant::now();
        let r = self.io.call(op);
        let end = Instant::now();
        if let Some(ring) = self.io.trace() {
            // The ring's file table is the phase's file slots.
            let op = match kind {
                OpKind::Read => TraceOp::Read,
                OpKind::Write => TraceOp::Write,
                OpKind::Trim => TraceOp::Trim,
            };
            let result = match r.as_ref() {
                Ok(n) => *n as i64,
                Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
            };
            ring.record_call(op, file, off, len as u32, t, end, result);
        }
        let stats = &mut self.led.stats;
        let dir = match kind {
            OpKind::Read => Dir::Read,
            OpKind::Write => Dir::Write,
            OpKind::Trim => Dir::Trim,
        };
        stats
            .lat_of(dir)
            .record(end.saturating_duration_since(t).as_nanos() as u64);
        let n = match r {
            Ok(n) => n,
            Err(e) => {
                stats.errors += 1;
                return Err(e);
            }
        };
        match kind {
            OpKind::Read => {
                stats.read_ops += 1;
                stats.read_bytes += n;
            }
            OpKind::Write => {
                stats.write_ops += 1;
                stats.write_bytes += n;
            }
            OpKind::Trim => {
                stats.trim_ops += 1;
                stats.trim_bytes += n;
            }
        }
        Ok(n as usize)
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
                self.io
                    .buffers()
                    .slot_mut(slot as usize)
                    .copy_within(n..len, 0);
            }
            len -= n;
            off += n as u64;
        }
        Ok(())
    }

    /// Open `p` (never following a last symlink) and let file slot `index` use it.
    fn open(&mut self, index: u32, p: &Path, flags: i32, mode: u32) -> std::io::Result<RawFd> {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let flags = flags | libc::O_CLOEXEC | libc::O_NOFOLLOW;
        let fd = self.io.open_at(libc::AT_FDCWD, &c, flags, mode)?;
        self.led.open.push(fd);
        if let Err(e) = self.io.set_file(index, fd) {
            self.close(index, fd)?;
            return Err(e);
        }
        Ok(fd)
    }

    /// Forget file slot `index` and close its descriptor.
    fn close(&mut self, index: u32, fd: RawFd) -> std::io::Result<()> {
        self.io.clear_file(index);
        self.led.open.retain(|&o| o != fd);
        self.io.close_fd(fd)
    }

    fn mkdir(&mut self, p: &Path) -> std::io::Result<()> {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        match self.io.mkdir_at(libc::AT_FDCWD, &c, 0o755) {
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
            r => r,
        }
    }
}

/// How a phase ended when the run stopped it between steps (Ctrl-C): the caller stores
/// nothing for the phase, and the guard removes the tree.
fn interrupted() -> anyhow::Error {
    anyhow!("interrupted")
}

/// Ctrl-C stops the untimed tree building within one MiB, with the same error.
pub(super) fn check_interrupt() -> Result<()> {
    if crate::runner::signal::interrupted() {
        return Err(interrupted());
    }
    Ok(())
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
    fn push(&mut self, io: &mut Calls<'_>, src: Src<'_>) -> std::io::Result<()> {
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
    fn pad_block(&mut self, io: &mut Calls<'_>) -> std::io::Result<()> {
        let rem = self.fill % BLOCK;
        if rem != 0 {
            self.push(io, Src::Bytes(&[0u8; BLOCK][..BLOCK - rem]))?;
        }
        Ok(())
    }

    /// Two zero blocks, then pad the last record with zeros.
    fn finish(&mut self, io: &mut Calls<'_>) -> std::io::Result<()> {
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

/// A timed phase: a source the study drives, then takes its counts from.
pub(super) trait Phase: Source<End = Result<Self::Done>> + Send + 'static {
    /// What the phase yields when it completes.
    type Done: Send + 'static;
    /// The phase's counts and open descriptors.
    fn ledger(&mut self) -> &mut Ledger;
}

/// File slots of the archive phase.
const ARCHIVE_OUT: u32 = 0;
const TREE_IN: u32 = 1;
/// File slots the archive phase's issuer needs.
pub(super) const ARCHIVE_FILES: usize = 2;

/// Where the archive phase is.
enum ArchiveAt {
    /// The archive is not created yet.
    Start,
    /// Next: open tree file `0`, or past the last one, end the tape.
    File(usize),
    /// Reading tree file `index` through `fd`: `off` bytes archived, reads of `want` bytes.
    Reading {
        index: usize,
        fd: RawFd,
        off: u64,
        want: usize,
    },
}

/// What the archive phase works through: the tree's files, the tape and where it is.
struct Archiving {
    tree: PathBuf,
    base: String,
    files: Vec<(String, u64)>,
    archive: PathBuf,
    direct: bool,
    tape: Tape,
    out: RawFd,
    at: ArchiveAt,
}

/// The archive phase: `files` of `tree` (named `base/NAME` in the archive) into a new file
/// `archive`, the tree's files read with O_DIRECT when `direct`.
pub(super) struct Archive {
    work: Archiving,
    led: Ledger,
}

impl Archive {
    pub(super) fn new(
        tree: &Path,
        base: &str,
        files: &[(String, u64)],
        archive: &Path,
        direct: bool,
        record: usize,
    ) -> Archive {
        Archive {
            work: Archiving {
                tree: tree.to_path_buf(),
                base: base.to_string(),
                files: files.to_vec(),
                archive: archive.to_path_buf(),
                direct,
                tape: Tape {
                    file: ARCHIVE_OUT,
                    off: 0,
                    fill: 0,
                    record,
                },
                out: -1,
                at: ArchiveAt::Start,
            },
            led: Ledger::default(),
        }
    }
}

impl Archiving {
    /// One step; Some when the archive is complete and fsync'd.
    fn next(&mut self, io: &mut Calls<'_>) -> Result<Option<()>> {
        match self.at {
            ArchiveAt::Start => {
                let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
                self.out = io
                    .open(ARCHIVE_OUT, &self.archive, flags, 0o644)
                    .with_context(|| format!("creating {}", self.archive.display()))?;
                crate::safety::mark_created(&self.archive);
                let dir = ustar::header(&Entry {
                    name: self.base.clone(),
                    kind: Kind::Dir,
                    size: 0,
                    mode: 0o755,
                    mtime: 0,
                })?;
                self.tape.push(io, Src::Bytes(&dir))?;
                self.at = ArchiveAt::File(0);
            }
            ArchiveAt::File(index) if index == self.files.len() => {
                self.tape.finish(io)?;
                io.io.sync_fd(self.out, false)?;
                io.close(ARCHIVE_OUT, self.out)?;
                return Ok(Some(()));
            }
            ArchiveAt::File(index) => self.start_file(io, index)?,
            ArchiveAt::Reading {
                index,
                fd,
                off,
                want,
            } => {
                let size = self.files[index].1;
                let n = io.io(OpKind::Read, TREE_IN, READ_SLOT, want, off)?;
                if n == 0 {
                    let p = self.tree.join(&self.files[index].0);
                    bail!("{} shrank while being archived", p.display());
                }
                let n = n.min((size - off) as usize);
                self.tape.push(io, Src::Read(n))?;
                let off = off + n as u64;
                self.at = if off < size {
                    ArchiveAt::Reading {
                        index,
                        fd,
                        off,
                        want,
                    }
                } else {
                    self.end_file(io, index, fd)?
                };
            }
        }
        Ok(None)
    }

    /// Open tree file `index` and put its header on the tape.
    fn start_file(&mut self, io: &mut Calls<'_>, index: usize) -> Result<()> {
        let (name, size) = &self.files[index];
        let p = self.tree.join(name);
        let flags = libc::O_RDONLY | if self.direct { libc::O_DIRECT } else { 0 };
        let fd = io
            .open(TREE_IN, &p, flags, 0)
            .map_err(|e| open_error(&p, self.direct, e))?;
        // One read per record; a direct read is rounded up to the device's alignment (a
        // 32256-byte record is not a multiple of a 4k sector).
        let record = self.tape.record;
        let want = if self.direct {
            let align = crate::runner::target::dio_alignment(&p).max(1) as usize;
            record.next_multiple_of(align).min(io.slot_len())
        } else {
            record
        };
        let h = ustar::header(&Entry {
            name: format!("{}/{name}", self.base),
            kind: Kind::File,
            size: *size,
            mode: 0o644,
            mtime: 0,
        })?;
        self.tape.push(io, Src::Bytes(&h))?;
        self.at = if *size > 0 {
            ArchiveAt::Reading {
                index,
                fd,
                off: 0,
                want,
            }
        } else {
            self.end_file(io, index, fd)?
        };
        Ok(())
    }

    /// Tree file `index` is on the tape: pad it to a block, close it; the next file.
    fn end_file(&mut self, io: &mut Calls<'_>, index: usize, fd: RawFd) -> Result<ArchiveAt> {
        self.tape.pad_block(io)?;
        io.close(TREE_IN, fd)?;
        Ok(ArchiveAt::File(index + 1))
    }
}

impl Source for Archive {
    type End = Result<()>;

    fn step(&mut self, io: &mut Issuer) -> Option<Result<()>> {
        let mut calls = Calls {
            io,
            led: &mut self.led,
        };
        self.work.next(&mut calls).transpose()
    }

    fn stopped(&mut self) -> Result<()> {
        Err(interrupted())
    }

    fn totals(&self) -> Stats {
        self.led.stats.clone()
    }

    fn forget(&mut self) {
        self.led.stats = Stats::default();
    }
}

impl Phase for Archive {
    type Done = ();
    fn ledger(&mut self) -> &mut Ledger {
        &mut self.led
    }
}

/// File slots of the restore phase.
const ARCHIVE_IN: u32 = 0;
const OUT_BUFFERED: u32 = 1;
const OUT_DIRECT: u32 = 2;
/// File slots the restore phase's issuer needs.
pub(super) const RESTORE_FILES: usize = 3;

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

fn flush_out(
    io: &mut Calls<'_>,
    o: &mut OutFile,
    align: u64,
    fallbacks: &mut u64,
) -> std::io::Result<()> {
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
fn close_out(io: &mut Calls<'_>, o: &OutFile) -> std::io::Result<()> {
    io.close(OUT_BUFFERED, o.buffered)?;
    if let Some(d) = o.direct {
        io.close(OUT_DIRECT, d)?;
    }
    Ok(())
}

/// Read record `aoff` of the archive whole into the read slot (a short read is completed
/// through the scratch slot).
fn read_record(io: &mut Calls<'_>, archive: &Path, record: usize, aoff: u64) -> Result<()> {
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
fn start_entry(
    io: &mut Calls<'_>,
    e: &Entry,
    dest: &Path,
    direct: bool,
) -> Result<Option<OutFile>> {
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

/// What the restore phase works through: the archive record by record, the file being
/// restored.
struct Restoring {
    archive: PathBuf,
    dest: PathBuf,
    direct: bool,
    record: usize,
    /// The direct I/O alignment under `dest`.
    align: u64,
    /// The archive's descriptor, once opened.
    input: Option<RawFd>,
    /// Offset of the next record.
    aoff: u64,
    cur: Option<OutFile>,
    /// Misaligned direct writes done buffered.
    fallbacks: u64,
}

/// The restore phase: `archive` restored under `dest` (which must exist and be empty), the
/// restored files written with O_DIRECT when `direct`. It yields the number of misaligned
/// direct writes done buffered.
pub(super) struct Restore {
    work: Restoring,
    led: Ledger,
}

impl Restore {
    pub(super) fn new(archive: &Path, dest: &Path, direct: bool, record: usize) -> Restore {
        Restore {
            work: Restoring {
                archive: archive.to_path_buf(),
                dest: dest.to_path_buf(),
                direct,
                record,
                align: crate::runner::target::dio_alignment(dest),
                input: None,
                aoff: 0,
                cur: None,
                fallbacks: 0,
            },
            led: Ledger::default(),
        }
    }
}

impl Restoring {
    /// One archive record read and restored; Some at the end of the archive.
    fn next(&mut self, io: &mut Calls<'_>) -> Result<Option<u64>> {
        let input = match self.input {
            Some(fd) => fd,
            None => {
                let fd = io
                    .open(ARCHIVE_IN, &self.archive, libc::O_RDONLY, 0)
                    .with_context(|| format!("opening {}", self.archive.display()))?;
                *self.input.insert(fd)
            }
        };
        let record = self.record;
        read_record(io, &self.archive, record, self.aoff)?;
        self.aoff += record as u64;
        let mut i = 0;
        while i < record {
            if let Some(o) = self.cur.as_mut() {
                let want = (o.left as usize).min(record - i);
                let take = want.min(record - o.fill);
                let [read, stage, _] = io.slots();
                stage[o.fill..o.fill + take].copy_from_slice(&read[i..i + take]);
                o.fill += take;
                o.left -= take as u64;
                i += take;
                if o.fill == record || o.left == 0 {
                    flush_out(io, o, self.align, &mut self.fallbacks)?;
                }
                if o.left == 0 {
                    close_out(io, o)?;
                    self.cur = None;
                    // Skip the padding to the next block.
                    i = i.div_ceil(BLOCK) * BLOCK;
                }
                continue;
            }
            let mut h = [0u8; BLOCK];
            h.copy_from_slice(&io.slots()[0][i..i + BLOCK]);
            i += BLOCK;
            let Some(e) = ustar::parse_header(&h)? else {
                io.close(ARCHIVE_IN, input)?;
                io.led.stats.buffered_fallback_ops += self.fallbacks;
                return Ok(Some(self.fallbacks));
            };
            self.cur = start_entry(io, &e, &self.dest, self.direct)?;
        }
        Ok(None)
    }
}

impl Source for Restore {
    type End = Result<u64>;

    fn step(&mut self, io: &mut Issuer) -> Option<Result<u64>> {
        let mut calls = Calls {
            io,
            led: &mut self.led,
        };
        self.work.next(&mut calls).transpose()
    }

    fn stopped(&mut self) -> Result<u64> {
        Err(interrupted())
    }

    fn totals(&self) -> Stats {
        self.led.stats.clone()
    }

    fn forget(&mut self) {
        self.led.stats = Stats::default();
    }
}

impl Phase for Restore {
    type Done = u64;
    fn ledger(&mut self) -> &mut Ledger {
        &mut self.led
    }
}

/// Compare two files byte for byte.
pub(super) fn same_contents(a: &Path, b: &Path) -> Result<bool> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backup::sync_issuer;
    use crate::engine::mock::{MockEngine, Script};
    use crate::engine::Built;
    use crate::runner::pace::StepPacing;
    use crate::runner::source::{drive, Drive};
    use std::cell::Cell;
    use std::time::Duration;

    const RECORD: usize = ustar::PAX_RECORD;

    /// An archive phase of one (empty, real) tree file the mock reads as `records` records,
    /// and its issuer on the mock with `latency` per I/O.
    fn mock_archive(dir: &Path, records: u64, latency: Duration) -> (Archive, Issuer) {
        traced_archive(dir, records, latency, None)
    }

    /// [`mock_archive`] with a trace ring in its issuer (its file table: the archive, the
    /// tree file).
    fn traced_archive(
        dir: &Path,
        records: u64,
        latency: Duration,
        ring: Option<crate::trace::TraceRing>,
    ) -> (Archive, Issuer) {
        std::fs::write(dir.join("f"), b"").unwrap();
        let files = [("f".to_string(), records * RECORD as u64)];
        let src = Archive::new(dir, "tree", &files, &dir.join("a.tar"), false, RECORD);
        let script = Script {
            depth: SLOTS as u32,
            latency,
            ..Script::default()
        };
        let (engine, _log) = MockEngine::new(script, RECORD);
        // The mock takes any descriptor and does no I/O on it: the phase's opens, closes and
        // fsync are real, its reads and writes the mock's.
        let io = Issuer::new(Built::Boxed(Box::new(engine)), ARCHIVE_FILES, ring);
        (src, io)
    }

    fn how<'a>(stop: &'a dyn Fn() -> bool) -> Drive<'a> {
        Drive {
            gate: &|| {},
            stop,
            deadline: None,
            ramp: None,
            ramp_bytes: 0,
            pacing: StepPacing::default(),
            interval_ns: None,
        }
    }

    #[test]
    fn an_archive_on_the_mock_writes_one_call_per_record() {
        let d = tempfile::tempdir().unwrap();
        let (mut src, mut io) = mock_archive(d.path(), 10, Duration::ZERO);
        let out = drive(&mut src, &mut io, how(&|| false));
        out.end.unwrap();
        // Two headers, ten records of data, two zero blocks: ten records and 2048 bytes,
        // padded to eleven records, one write call each.
        assert_eq!((src.led.stats.read_ops, src.led.stats.write_ops), (10, 11));
        assert_eq!(src.led.stats.write_bytes, 11 * RECORD as u64);
        let sys = io.sys();
        assert_eq!((sys.open, sys.close, sys.fsync), (2, 2, 1));
        assert!(src.led.open.is_empty());
    }

    #[test]
    fn a_stop_ends_the_archive_between_steps() {
        let d = tempfile::tempdir().unwrap();
        let (mut src, mut io) = mock_archive(d.path(), 100, Duration::ZERO);
        let asked = Cell::new(0u32);
        let stop = || {
            asked.set(asked.get() + 1);
            asked.get() > 5
        };
        let out = drive(&mut src, &mut io, how(&stop));
        let e = out.end.unwrap_err();
        assert_eq!(e.to_string(), "interrupted");
        // Five steps ran: the archive created, the file opened, three records read.
        assert_eq!(src.led.stats.read_ops, 3);
        // The archive and the tree file are left open for the study to close.
        assert_eq!(src.led.open.len(), 2);
        src.led.close_left(&mut io);
        assert_eq!(io.sys().close, 2);
    }

    #[test]
    fn a_rate_limit_spaces_the_archive_calls() {
        let d = tempfile::tempdir().unwrap();
        let (mut src, mut io) = mock_archive(d.path(), 20, Duration::ZERO);
        let mut h = how(&|| false);
        // 200 calls a second: 20 reads and 21 writes take at least 0.2 s less the first.
        h.pacing = StepPacing::new(Some(200.0), None, 0, 1);
        let t = std::time::Instant::now();
        let out = drive(&mut src, &mut io, h);
        out.end.unwrap();
        assert_eq!((src.led.stats.read_ops, src.led.stats.write_ops), (20, 21));
        assert!(
            t.elapsed() >= Duration::from_millis(180),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn the_archive_closes_intervals_on_the_grid() {
        let d = tempfile::tempdir().unwrap();
        let (mut src, mut io) = mock_archive(d.path(), 40, Duration::from_millis(1));
        let mut h = how(&|| false);
        h.interval_ns = Some(10_000_000);
        let out = drive(&mut src, &mut io, h);
        out.end.unwrap();
        // 40 reads and 41 writes of 1 ms each: at least 8 intervals of 10 ms.
        assert!(
            out.intervals.len() >= 8,
            "{} intervals",
            out.intervals.len()
        );
        let reads: u64 = out.intervals.iter().map(|i| i.read_ops).sum();
        let writes: u64 = out.intervals.iter().map(|i| i.write_ops).sum();
        assert_eq!((reads, writes), (40, 41));
    }

    #[test]
    fn the_trace_ring_records_the_archive_calls() {
        let d = tempfile::tempdir().unwrap();
        let files = std::sync::Arc::new(vec!["a.tar".to_string(), "f".to_string()]);
        let ring = crate::trace::TraceRing::new(0, files, std::time::Instant::now(), 100);
        let (mut src, mut io) = traced_archive(d.path(), 10, Duration::ZERO, Some(ring));
        drive(&mut src, &mut io, how(&|| false)).end.unwrap();
        let ring = io.take_trace().expect("traced");
        let mut recs = Vec::new();
        ring.drain_into(|f| f, &mut recs);
        let count = |op| recs.iter().filter(|r| r.op == op).count() as u64;
        assert_eq!(
            (count(TraceOp::Read), count(TraceOp::Write)),
            (src.led.stats.read_ops, src.led.stats.write_ops)
        );
        assert_eq!((count(TraceOp::Read), count(TraceOp::Write)), (10, 11));
        // Records of the archive go on at the next record's offset.
        let writes: Vec<u64> = recs
            .iter()
            .filter(|r| r.op == TraceOp::Write)
            .map(|r| r.offset)
            .collect();
        let want: Vec<u64> = (0..11).map(|i| i * RECORD as u64).collect();
        assert_eq!(writes, want);
        assert!(recs.iter().all(|r| r.result == RECORD as i64));
    }

    #[test]
    fn the_archive_threads_cpu_time_is_counted() {
        let d = tempfile::tempdir().unwrap();
        let (mut src, mut io) = mock_archive(d.path(), 5000, Duration::ZERO);
        let t0 = std::time::Instant::now();
        let out = drive(&mut src, &mut io, how(&|| false));
        let wall = t0.elapsed().as_secs_f64();
        out.end.unwrap();
        let cpu = out.usage.cpu_user_s + out.usage.cpu_sys_s;
        assert!(cpu > 0.0, "{:?}", out.usage);
        assert!(cpu <= wall + 0.01, "{cpu} s of CPU in {wall} s");
    }

    #[test]
    fn tape_writes_whole_records() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.tar");
        let mut io = sync_issuer()(1, ustar::PAX_RECORD).unwrap();
        let mut led = Ledger::default();
        let mut c = Calls {
            io: &mut io,
            led: &mut led,
        };
        let fd = c
            .open(0, &p, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o644)
            .unwrap();
        let mut tape = Tape {
            file: 0,
            off: 0,
            fill: 0,
            record: ustar::PAX_RECORD,
        };
        tape.push(&mut c, Src::Bytes(&[1u8; BLOCK])).unwrap();
        c.slots()[0][..30000].fill(7);
        tape.push(&mut c, Src::Read(30000)).unwrap();
        tape.push(&mut c, Src::Read(30000)).unwrap();
        tape.pad_block(&mut c).unwrap();
        tape.finish(&mut c).unwrap();
        c.close(0, fd).unwrap();
        // 512 + 60416 + 1024 bytes = 2 records of 32256, one write call each.
        assert_eq!(io.sys().write, 2);
        assert_eq!(led.stats.write_ops, 2);
        let data = std::fs::read(&p).unwrap();
        assert_eq!(data.len(), 2 * ustar::PAX_RECORD);
        assert!(data[..BLOCK].iter().all(|&b| b == 1));
        assert!(data[BLOCK..BLOCK + 60000].iter().all(|&b| b == 7));
        assert!(data[BLOCK + 60000..].iter().all(|&b| b == 0));
        assert_eq!(io.sys().open, 1);
        assert_eq!(io.sys().close, 1);
    }
}
