//! `fsbench workload --verify`: what a fileset file should hold, as the workload knows it.
//! Every write a flowop makes into a fileset file carries the bytes of
//! [`crate::verify::stream`] for the offset it lands at (appends at the end of what the file
//! holds, whole-file writes and writes at the cursor at the descriptor's offset, random writes
//! at theirs), preallocated files are written with the same stream, and every read of a file
//! whose content is known (readwholefile, read) is compared with it as it completes. The
//! stamping and the checking are the runner's verify hooks (`runner/verify.rs`), which the
//! thread's Issuer runs around its calls; this module is the workload's side of them, its
//! [`Contents`]: a fileset file holds its current incarnation's stream from 0 to what was
//! written.
//!
//! What each fileset entry holds is tracked in the shared arena ([`EntryCheck`]): its
//! incarnation (one more at every create), how many bytes from 0 hold that incarnation's
//! stream, and a sequence moved by every write. Two writes of one entry in flight at once (a
//! log file appended by many threads), an aiowrite, a failed write or one past the end make
//! the entry's content unknown: its reads are skipped and counted until it is recreated. A
//! read during a write of its file is skipped and counted too. Only atomics on the I/O path:
//! no lock, allocation or system call.

use super::shared::{Arena, EntryCheck};
use crate::runner::verify::{Contents, Expected, FileGen, NoCheck};
use crate::verify::stream;
use std::sync::atomic::Ordering::SeqCst;

/// The identity of entry `i` of fileset `set` in the stream's key (the set is the report's
/// user).
fn file_id(set: usize, i: usize) -> u64 {
    ((set as u64) << 40) | i as u64
}

/// A write in flight: what it saw when it began.
pub(super) struct WriteTicket {
    offset: u64,
    seq: u64,
    alone: bool,
}

/// A file as a thread's descriptor names it: (fileset, entry, the incarnation the
/// descriptor was opened on).
pub(super) type EntryFile = (usize, usize, u64);

fn entry(arena: &Arena, set: usize, i: usize) -> &EntryCheck {
    arena.entry_check(set, i)
}

/// The run's seed, when it verifies.
pub(super) fn seed(arena: &Arena) -> Option<u64> {
    match arena.verify_seed().load(SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Turn verification on for the run (before the filesets are prepared): a seed of this run
/// alone, so what an earlier run left never passes for this one's.
pub(super) fn enable(arena: &Arena) {
    arena
        .verify_seed()
        .store(crate::runner::verify::run_seed(0) | 1, SeqCst);
}

/// The stream key of a preallocated file of a verifying run (None: the run does not verify).
pub(super) fn prealloc_key(arena: &Arena, set: usize, i: usize) -> Option<u64> {
    seed(arena).map(|seed| stream::key(seed, file_id(set, i), 0))
}

/// Record what preparation left in entry `i`: `Some(size)` bytes of incarnation 0's stream
/// (fsbench wrote it), or `None`: a reused file whose content is not known.
pub(super) fn prepared(arena: &Arena, set: usize, i: usize, written: Option<u64>) {
    let e = entry(arena, set, i);
    e.incarnation.store(0, SeqCst);
    match written {
        Some(n) => {
            e.len.store(n, SeqCst);
            e.unknown.store(0, SeqCst);
        }
        None => e.unknown.store(1, SeqCst),
    }
}

/// Entry `i` was just created (O_CREAT|O_TRUNC): a new incarnation, empty.
pub(super) fn created(arena: &Arena, set: usize, i: usize) {
    let e = entry(arena, set, i);
    e.writers.fetch_add(1, SeqCst);
    e.seq.fetch_add(1, SeqCst);
    e.incarnation.fetch_add(1, SeqCst);
    e.len.store(0, SeqCst);
    e.unknown.store(0, SeqCst);
    e.seq.fetch_add(1, SeqCst);
    e.writers.fetch_sub(1, SeqCst);
}

/// A write of entry `i` whose bytes and place are not tracked (an aiowrite): its content
/// is unknown from now on (until it is recreated).
pub(super) fn forget(arena: &Arena, set: usize, i: usize) {
    let e = entry(arena, set, i);
    e.seq.fetch_add(1, SeqCst);
    e.unknown.store(1, SeqCst);
    e.seq.fetch_add(1, SeqCst);
}

/// The incarnation of entry `i` now (kept by a descriptor opened on it).
pub(super) fn incarnation(arena: &Arena, set: usize, i: usize) -> u64 {
    entry(arena, set, i).incarnation.load(SeqCst)
}

/// The filesets of a run, as the verify hooks see them.
pub(super) struct Filesets<'a>(pub &'a Arena);

impl Contents for Filesets<'_> {
    type File = EntryFile;
    type Write = WriteTicket;

    /// A write lands at its offset, or (an append) at the end of what the file holds.
    fn write_begins(
        &self,
        (set, i, _): EntryFile,
        at: Option<u64>,
        _len: u64,
    ) -> (u64, FileGen, WriteTicket) {
        let e = entry(self.0, set, i);
        let before = e.writers.fetch_add(1, SeqCst);
        let seq = e.seq.fetch_add(1, SeqCst);
        let offset = at.unwrap_or_else(|| e.len.load(SeqCst));
        let gen = FileGen {
            file: file_id(set, i),
            generation: e.incarnation.load(SeqCst),
        };
        let ticket = WriteTicket {
            offset,
            seq,
            alone: before == 0,
        };
        (offset, gen, ticket)
    }

    /// The entry's content stays known only when no other write of it overlapped this one
    /// in time and this one did not leave a hole.
    fn write_ends(&self, (set, i, _): EntryFile, t: WriteTicket, written: Option<u64>) {
        let e = entry(self.0, set, i);
        let seq = e.seq.fetch_add(1, SeqCst);
        let alone = t.alone && seq == t.seq + 1;
        match written {
            Some(n) if alone && t.offset <= e.len.load(SeqCst) => {
                e.len.fetch_max(t.offset + n, SeqCst);
            }
            _ => e.unknown.store(1, SeqCst),
        }
        e.writers.fetch_sub(1, SeqCst);
    }

    /// Checked when no write of the entry is in flight, its content is known and it is
    /// still the incarnation the descriptor was opened on.
    fn read_begins(
        &self,
        (set, i, incarnation): EntryFile,
        _at: u64,
        _len: u64,
    ) -> Result<Expected, NoCheck> {
        let e = entry(self.0, set, i);
        let seq = e.seq.load(SeqCst);
        if e.writers.load(SeqCst) > 0 {
            return Err(NoCheck::Busy);
        }
        if e.unknown.load(SeqCst) != 0 || e.incarnation.load(SeqCst) != incarnation {
            return Err(NoCheck::Unknown);
        }
        Ok(Expected {
            of: FileGen {
                file: file_id(set, i),
                generation: incarnation,
            },
            before: incarnation.checked_sub(1),
            end: e.len.load(SeqCst),
            seq,
        })
    }

    fn read_unchanged(&self, (set, i, _): EntryFile, e: &Expected) -> bool {
        entry(self.0, set, i).seq.load(SeqCst) == e.seq
    }
}
