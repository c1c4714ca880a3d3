//! The I/O of the backup study's timed phases: a phase's engine and its counts ([`Io`]),
//! the archive written as a tape of whole ustar records ([`archive`]), the restore that reads
//! it back record by record ([`restore`]), and the byte-for-byte comparison of a restored
//! tree with its original. Every read, write, open, close and fsync goes through the phase's
//! [`Engine`].

use super::ustar::{self, Entry, Kind, BLOCK};
use super::MakeEngine;
use crate::engine::{self, BufferPool, Completion, Engine, IoOp, OpKind};
use crate::job::{CachePolicy, Route};
use crate::stats::Stats;
use anyhow::{anyhow, bail, Context, Result};
use std::fs::File;
use std::os::fd::RawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

/// Buffer slots of a phase: what a read lands in, the record being assembled (archive) or
/// staged for a restored file (restore), and scratch for the rare short read.
const READ_SLOT: u32 = 0;
const REC_SLOT: u32 = 1;
const SCRATCH_SLOT: u32 = 2;

/// One phase's engine and its counts: the only way the timed code does I/O. Descriptors it
/// opened and has not closed (an error part way) are closed, uncounted, when it is dropped.
pub(super) struct Io {
    eng: Box<dyn Engine>,
    pub(super) stats: Stats,
    done: Vec<Completion>,
    open: Vec<RawFd>,
}

impl Io {
    /// An engine with `files` slots and three page-aligned buffers of at least `record`
    /// bytes, rounded up to the buffer alignment (so a direct read may be rounded up to the
    /// device's alignment and still fit).
    pub(super) fn new(make: &MakeEngine, files: usize, record: usize) -> Result<Io> {
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
pub(super) fn check_interrupt() -> Result<()> {
    if crate::runner::signal::interrupted() {
        bail!("interrupted");
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
pub(super) fn archive(
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
pub(super) fn restore(
    io: &mut Io,
    archive: &Path,
    dest: &Path,
    direct: bool,
    record: usize,
) -> Result<u64> {
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
    use crate::backup::sync_engine;

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
