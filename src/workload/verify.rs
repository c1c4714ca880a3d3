//! `fsbench workload --verify`: every write a flowop makes into a fileset file carries the
//! bytes of [`crate::verify::stream`] for the offset it lands at (appends at the end of what
//! the file holds, whole-file writes and writes at the cursor at the descriptor's offset,
//! random writes at theirs), preallocated files are written with the same stream, and every
//! read of a file whose content is known (readwholefile, read) is compared byte for byte with
//! it as it completes. A mismatch goes into the run's `verify` section: stale (zeros, a file
//! shorter than what was written, or the file's previous incarnation: a lost write),
//! misdirected (bytes made for another offset of the file) or corrupt (bytes no write made;
//! one flipped bit is named).
//!
//! What each fileset entry holds is tracked in the shared arena ([`EntryCheck`]): its
//! incarnation (one more at every create), how many bytes from 0 hold that incarnation's
//! stream, and a sequence moved by every write. Two writes of one entry in flight at once (a
//! log file appended by many threads), an aiowrite, a failed write or one past the end make
//! the entry's content unknown: its reads are skipped and counted until it is recreated. A
//! read during a write of its file is skipped and counted too. Only atomics on the I/O path:
//! no lock, allocation or system call (a mismatch's description allocates).

use super::shared::{Arena, EntryCheck};
use crate::verify::report::{ByteDiff, FindingReport, HeaderFields, Mismatch, VerifyReport};
use crate::verify::stream;
use std::sync::atomic::Ordering::SeqCst;

/// The identity of entry `i` of fileset `set` in the stream's key.
fn file_id(set: usize, i: usize) -> u64 {
    ((set as u64) << 40) | i as u64
}

/// A write in flight: where it lands and what it saw when it began.
pub(super) struct WriteTicket {
    set: usize,
    entry: usize,
    offset: u64,
    seq: u64,
    alone: bool,
}

impl WriteTicket {
    /// The file offset the write lands at.
    pub(super) fn offset(&self) -> u64 {
        self.offset
    }
}

/// A read in flight whose bytes will be checked.
pub(super) struct ReadTicket {
    seq: u64,
    key: u64,
    incarnation: u64,
    len: u64,
}

/// Why a read is not checked.
pub(super) enum NoCheck {
    /// A write of the file is in flight.
    Busy,
    /// What the file holds is not known.
    Unknown,
}

/// One thread's verification: the run's seed and what it found.
pub(super) struct Verifier {
    seed: u64,
    pub report: VerifyReport,
}

fn entry(arena: &Arena, set: usize, i: usize) -> &EntryCheck {
    arena.entry_check(set, i)
}

/// Turn verification on for the run (before the filesets are prepared): a seed of this run
/// alone, so what an earlier run left never passes for this one's.
pub(super) fn enable(arena: &Arena) {
    let mut nonce = [0u8; 8];
    // SAFETY: getrandom writes at most 8 bytes into our 8-byte buffer.
    let got = unsafe { libc::getrandom(nonce.as_mut_ptr() as *mut libc::c_void, 8, 0) };
    let mut seed = u64::from_le_bytes(nonce);
    if got != 8 {
        seed = super::shared::now_ns() ^ ((std::process::id() as u64) << 32);
    }
    arena.verify_seed().store(seed | 1, SeqCst);
}

/// The stream key of a preallocated file of a verifying run (None: the run does not verify).
pub(super) fn prealloc_key(arena: &Arena, set: usize, i: usize) -> Option<u64> {
    match arena.verify_seed().load(SeqCst) {
        0 => None,
        seed => Some(stream::key(seed, file_id(set, i), 0)),
    }
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

impl Verifier {
    /// The verifier of a thread of a run started with `--verify` (None otherwise).
    pub(super) fn new(arena: &Arena) -> Option<Verifier> {
        match arena.verify_seed().load(SeqCst) {
            0 => None,
            seed => Some(Verifier {
                seed,
                report: VerifyReport {
                    read_back_done: true,
                    ..Default::default()
                },
            }),
        }
    }

    /// Entry `i` was just created (O_CREAT|O_TRUNC): a new incarnation, empty.
    pub(super) fn created(&self, arena: &Arena, set: usize, i: usize) {
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
    pub(super) fn forget(&self, arena: &Arena, set: usize, i: usize) {
        let e = entry(arena, set, i);
        e.seq.fetch_add(1, SeqCst);
        e.unknown.store(1, SeqCst);
        e.seq.fetch_add(1, SeqCst);
    }

    /// The incarnation of entry `i` now (kept by a descriptor opened on it).
    pub(super) fn incarnation(&self, arena: &Arena, set: usize, i: usize) -> u64 {
        entry(arena, set, i).incarnation.load(SeqCst)
    }

    /// Before a write of `buf.len()` bytes to entry `i`, at `offset` (None: an append, at
    /// the end of what the file holds): fill `buf` with the stream for where it lands.
    pub(super) fn begin_write(
        &self,
        arena: &Arena,
        set: usize,
        i: usize,
        offset: Option<u64>,
        buf: &mut [u8],
    ) -> WriteTicket {
        let e = entry(arena, set, i);
        let before = e.writers.fetch_add(1, SeqCst);
        let seq = e.seq.fetch_add(1, SeqCst);
        let offset = offset.unwrap_or_else(|| e.len.load(SeqCst));
        let key = stream::key(self.seed, file_id(set, i), e.incarnation.load(SeqCst));
        stream::fill(buf, key, offset);
        WriteTicket {
            set,
            entry: i,
            offset,
            seq,
            alone: before == 0,
        }
    }

    /// After the write: `written` bytes (None: it failed, or only queued). The entry's
    /// content stays known only when no other write of it overlapped this one in time and
    /// this one did not leave a hole.
    pub(super) fn end_write(&self, arena: &Arena, t: WriteTicket, written: Option<u64>) {
        let e = entry(arena, t.set, t.entry);
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

    /// Before a read of entry `i` through a descriptor opened on incarnation `incarnation`.
    pub(super) fn begin_read(
        &self,
        arena: &Arena,
        set: usize,
        i: usize,
        incarnation: u64,
    ) -> Result<ReadTicket, NoCheck> {
        let e = entry(arena, set, i);
        let seq = e.seq.load(SeqCst);
        if e.writers.load(SeqCst) > 0 {
            return Err(NoCheck::Busy);
        }
        if e.unknown.load(SeqCst) != 0 || e.incarnation.load(SeqCst) != incarnation {
            return Err(NoCheck::Unknown);
        }
        Ok(ReadTicket {
            seq,
            key: stream::key(self.seed, file_id(set, i), incarnation),
            incarnation,
            len: e.len.load(SeqCst),
        })
    }

    /// Count a read that was not checked.
    pub(super) fn skipped(&mut self, why: NoCheck) {
        match why {
            NoCheck::Busy => self.report.blocks_skipped_busy += 1,
            NoCheck::Unknown => self.report.blocks_skipped_overlap += 1,
        }
    }

    /// After a read at `offset` of `requested` bytes that returned `got` (its first bytes):
    /// check what the file should hold there. `path` names the file in a mismatch. Returns
    /// false on a mismatch.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn end_read(
        &mut self,
        arena: &Arena,
        set: usize,
        i: usize,
        t: ReadTicket,
        offset: u64,
        requested: u64,
        got: &[u8],
        path: &dyn Fn() -> String,
    ) -> bool {
        let e = entry(arena, set, i);
        if e.seq.load(SeqCst) != t.seq {
            self.skipped(NoCheck::Busy);
            return true;
        }
        let r = &mut self.report;
        r.blocks_checked += 1;
        r.run_read_blocks += 1;
        let known = t.len.saturating_sub(offset).min(got.len() as u64) as usize;
        r.bytes_checked += known as u64;
        let fields = |at: u64, incarnation: u64| HeaderFields {
            seed: self.seed,
            file: file_id(set, i),
            offset_bytes: at,
            generation: incarnation,
        };
        let checked = &got[..known];
        if !stream::matches(checked, t.key, offset) {
            let j = stream::first_mismatch(checked, t.key, offset).unwrap_or(0);
            let (kind, detail, found) = classify(self.seed, set, i, &t, offset, checked, j);
            let end = (j + 16).min(checked.len());
            let want: Vec<u8> = (j..end)
                .map(|x| stream::byte_at(t.key, offset + x as u64))
                .collect();
            let m = Mismatch {
                user: set,
                target: path(),
                offset_bytes: offset + j as u64,
                detail,
                expected: fields(offset + j as u64, t.incarnation),
                found: fields(found.0, found.1),
                first_diff: Some(ByteDiff {
                    at_byte: j as u64,
                    expected_hex: hex(&want),
                    found_hex: hex(&checked[j..end]),
                }),
                found_block_crc_ok: None,
                rank: None,
            };
            kind_of(&mut self.report, kind).add(m);
            return false;
        }
        // A read that ends before the bytes written there: the file lost its tail.
        let end = offset + got.len() as u64;
        let wanted_end = (offset + requested).min(t.len);
        if end < wanted_end {
            let m = Mismatch {
                user: set,
                target: path(),
                offset_bytes: end,
                detail: format!(
                    "stale: the file ends at {end} bytes, but {} bytes were written (a lost write)",
                    t.len
                ),
                expected: fields(end, t.incarnation),
                found: fields(end, t.incarnation),
                first_diff: None,
                found_block_crc_ok: None,
                rank: None,
            };
            self.report.stale.add(m);
            return false;
        }
        self.report.blocks_intact += 1;
        true
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Stale,
    Misdirected,
    Corrupt,
}

fn kind_of(r: &mut VerifyReport, k: Kind) -> &mut FindingReport {
    match k {
        Kind::Stale => &mut r.stale,
        Kind::Misdirected => &mut r.misdirected,
        Kind::Corrupt => &mut r.corrupt,
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// What the bytes from index `j` of a read at `offset` are: zeros or the previous
/// incarnation (stale), another offset's (misdirected), or nothing a write made (corrupt).
/// Also the (offset, incarnation) they were made for, as far as known.
fn classify(
    seed: u64,
    set: usize,
    i: usize,
    t: &ReadTicket,
    offset: u64,
    buf: &[u8],
    j: usize,
) -> (Kind, String, (u64, u64)) {
    let at = offset + j as u64;
    let here = (at, t.incarnation);
    // The aligned word holding byte j, when the read holds all of it.
    let wpos = (at & !7).saturating_sub(offset) as usize;
    let word = (at & !7 >= offset && wpos + 8 <= buf.len())
        .then(|| u64::from_le_bytes(buf[wpos..wpos + 8].try_into().expect("8 bytes")));
    let run = &buf[j..(j + 512).min(buf.len())];
    if run.iter().all(|&b| b == 0) {
        return (
            Kind::Stale,
            format!("stale: zeros from offset {at} where bytes were written (a lost write)"),
            here,
        );
    }
    if t.incarnation > 0 {
        let old = stream::key(seed, file_id(set, i), t.incarnation - 1);
        if stream::matches(run, old, at) {
            return (
                Kind::Stale,
                format!(
                    "stale: the bytes of the file's previous life (incarnation {}) at offset {at}: the recreated file's write was lost",
                    t.incarnation - 1
                ),
                (at, t.incarnation - 1),
            );
        }
    }
    if let Some(w) = word {
        if let Some(o) = stream::offset_of_word(t.key, w) {
            if o != at & !7 {
                return (
                    Kind::Misdirected,
                    format!("misdirected: at offset {at} the bytes written for offset {o}"),
                    (o + (at & 7), t.incarnation),
                );
            }
        }
    }
    let flipped: u32 = buf[j..]
        .iter()
        .enumerate()
        .map(|(x, &b)| (b ^ stream::byte_at(t.key, at + x as u64)).count_ones())
        .sum();
    let want = stream::byte_at(t.key, at);
    (
        Kind::Corrupt,
        format!(
            "corrupt at offset {at}: {:#04x} where {want:#04x}{}",
            buf[j],
            if flipped == 1 {
                " (one bit flipped)"
            } else {
                ""
            }
        ),
        here,
    )
}
