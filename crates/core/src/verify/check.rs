//! Judging whole files against a journal: what `fsbench verify` reports after a crash.
//!
//! Every block of a file is read, checked with `block::check` against the identity the
//! journal gives it (run seed, the file's index in the journal, the block's offset) and judged
//! with `super::judge` against the newest generation the journal acknowledges for it. The
//! outcome is counted per [`Finding`]; the first offsets of each kind are kept, and for every
//! mismatch the header fields expected and found and the first bytes that differ, so that a
//! report names what storage did and where. Blocks the journal acknowledges beyond the end of
//! the file (a file cut short) are lost writes too.

use super::block::{self, BlockId, Verdict};
use super::journal::Journal;
use super::{judge, Finding};
use anyhow::{Context, Result};
use serde::Serialize;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

/// How many offsets of each kind, and how many mismatches, a report keeps.
pub(crate) const FIRST_N: usize = 10;
/// How many bytes of expected and found content a mismatch shows from the first difference.
const SHOWN_BYTES: usize = 16;

/// Every finding, in the order reports list them.
pub const FINDINGS: [Finding; 7] = [
    Finding::Intact,
    Finding::Lost,
    Finding::StaleAllowed,
    Finding::Corrupt,
    Finding::Misdirected,
    Finding::Torn,
    Finding::Overlapped,
];

/// The name a finding has in reports and JSON keys.
pub fn finding_name(f: Finding) -> &'static str {
    match f {
        Finding::Intact => "intact",
        Finding::Lost => "lost",
        Finding::StaleAllowed => "stale_allowed",
        Finding::Corrupt => "corrupt",
        Finding::Misdirected => "misdirected",
        Finding::Torn => "torn",
        Finding::Overlapped => "overlapped",
    }
}

/// Header fields of a block: what was expected at an offset, or what was found there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Fields {
    pub seed: u64,
    pub file: u64,
    pub offset_bytes: u64,
    /// None where no generation is known (expected: never acknowledged).
    pub generation: Option<u64>,
}

/// The first bytes where a block differs from what the expected generation wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// Byte within the block.
    pub at_byte_in_block: u64,
    /// Byte within the file.
    pub offset_bytes: u64,
    /// Up to 16 bytes from there, hexadecimal.
    pub expected_hex: String,
    pub found_hex: String,
    /// Exactly one bit differs in the first differing byte and nothing else in the block.
    pub bit_flip: bool,
}

/// One block that did not come back as acknowledged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub offset_bytes: u64,
    pub finding: &'static str,
    /// Whether this finding fails the check (a tear of unacknowledged sectors does not).
    pub failure: bool,
    pub verdict: Verdict,
    /// The generation the journal acknowledged for this block (None: never acknowledged).
    pub acked_generation: Option<u64>,
    pub expected: Fields,
    /// The header as found (None: no fsbench header there, e.g. zeros).
    pub found: Option<Fields>,
    pub first_difference: Option<Difference>,
    /// Whether the block as found carries a valid header whose whole-block CRC matches its
    /// bytes (None: no valid header).
    pub found_block_crc_ok: Option<bool>,
}

/// Counts of one finding and where the first ones are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub blocks: u64,
    pub first_offsets_bytes: Vec<u64>,
}

/// One file judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileCheck {
    pub path: String,
    /// The file's identity in the journal (its index, stamped into its blocks).
    pub file: u64,
    pub size_bytes: u64,
    pub blocks: u64,
    pub intact: Tally,
    pub lost: Tally,
    pub stale_allowed: Tally,
    pub corrupt: Tally,
    pub misdirected: Tally,
    pub torn: Tally,
    /// Blocks holding a mix of the run's own overlapping writes (not judged).
    pub overlapped: Tally,
    /// Blocks whose finding fails the check.
    pub failures: u64,
    /// The first mismatches (every finding but intact and stale-but-allowed), in offset order.
    pub mismatches: Vec<Mismatch>,
    /// The check stopped early (a signal): `blocks` is what was checked so far.
    #[serde(skip)]
    pub interrupted: bool,
}

impl FileCheck {
    pub fn tally(&self, f: Finding) -> &Tally {
        match f {
            Finding::Intact => &self.intact,
            Finding::Lost => &self.lost,
            Finding::StaleAllowed => &self.stale_allowed,
            Finding::Corrupt => &self.corrupt,
            Finding::Misdirected => &self.misdirected,
            Finding::Torn => &self.torn,
            Finding::Overlapped => &self.overlapped,
        }
    }

    fn tally_mut(&mut self, f: Finding) -> &mut Tally {
        match f {
            Finding::Intact => &mut self.intact,
            Finding::Lost => &mut self.lost,
            Finding::StaleAllowed => &mut self.stale_allowed,
            Finding::Corrupt => &mut self.corrupt,
            Finding::Misdirected => &mut self.misdirected,
            Finding::Torn => &mut self.torn,
            Finding::Overlapped => &mut self.overlapped,
        }
    }

    fn record(&mut self, offset: u64, finding: Finding, failure: bool) {
        let t = self.tally_mut(finding);
        t.blocks += 1;
        if t.first_offsets_bytes.len() < FIRST_N {
            t.first_offsets_bytes.push(offset);
        }
        self.blocks += 1;
        self.failures += u64::from(failure);
    }
}

/// The header fields a block claims, when it starts with the block magic (the fields are
/// read by [`block::header_words`], the one reader of the layout).
fn found_fields(buf: &[u8]) -> Option<Fields> {
    let magic = buf.len() >= block::HEADER_BYTES && buf[..8] == block::MAGIC.to_le_bytes();
    magic.then(|| {
        let h = block::header_words(buf);
        Fields {
            seed: h.seed,
            file: h.file,
            offset_bytes: h.offset,
            generation: Some(h.generation),
        }
    })
}

/// Whether the block carries this run's header for this file (valid or not): a write of
/// this run reached it, so bytes that no generation explains are corruption.
fn written_by_run(buf: &[u8], id: &BlockId) -> bool {
    found_fields(buf).is_some_and(|f| f.seed == id.seed && f.file == id.file)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The generation a mismatch is compared with: the acknowledged one, else the one the block
/// itself points at.
fn expected_generation(verdict: &Verdict, acked: Option<u64>) -> Option<u64> {
    acked.or(match verdict {
        Verdict::Intact { generation }
        | Verdict::Torn { generation, .. }
        | Verdict::CrcMismatch { generation } => Some(*generation),
        _ => None,
    })
}

/// Describe a block that did not come back as acknowledged.
fn mismatch(
    buf: &[u8],
    id: &BlockId,
    verdict: Verdict,
    finding: Finding,
    failure: bool,
    acked: Option<u64>,
) -> Mismatch {
    let found = found_fields(buf);
    let generation = expected_generation(&verdict, acked).or_else(|| {
        found
            .filter(|f| f.file == id.file)
            .and_then(|f| f.generation)
    });
    // A shaped block's bytes after its header are not derived: no byte can be named.
    let derived = !block::is_shaped(buf);
    let first_difference = generation.filter(|_| derived).and_then(|g| {
        let mut want = vec![0u8; buf.len()];
        block::fill(&mut want, id, g, &block::block_crc(buf.len()));
        let at = want.iter().zip(buf).position(|(w, f)| w != f)?;
        let end = (at + SHOWN_BYTES).min(buf.len());
        let differing = want.iter().zip(buf).filter(|(w, f)| w != f).count();
        Some(Difference {
            at_byte_in_block: at as u64,
            offset_bytes: id.offset + at as u64,
            expected_hex: hex(&want[at..end]),
            found_hex: hex(&buf[at..end]),
            bit_flip: differing == 1 && (want[at] ^ buf[at]).count_ones() == 1,
        })
    });
    Mismatch {
        offset_bytes: id.offset,
        finding: finding_name(finding),
        failure,
        verdict,
        acked_generation: acked,
        expected: Fields {
            seed: id.seed,
            file: id.file,
            offset_bytes: id.offset,
            generation,
        },
        found,
        first_difference,
        found_block_crc_ok: block::own_crc_matches(buf),
    }
}

/// Read `r` to its end, or until `buf` is full; the count read.
fn read_block(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Judge every block of the file read from `r` (the `file`-th file of `journal`, shown as
/// `path`). A short last block is judged as if the missing bytes were zeros (never written).
/// When `stop` is set (Ctrl-C, SIGTERM) the check ends at the next block, marked interrupted.
pub fn check_file(
    r: &mut impl Read,
    path: &str,
    file: u64,
    journal: &Journal,
    stop: &AtomicBool,
) -> Result<FileCheck> {
    let bs = usize::try_from(journal.header.block_size)
        .ok()
        .filter(|&bs| block::check_block_size(bs).is_ok())
        .ok_or_else(|| {
            crate::usage!(
                "the journal's block size {} cannot carry verify headers (at least {} bytes, a multiple of 8)",
                journal.header.block_size,
                block::MIN_BLOCK
            )
        })?;
    let seed = journal.header.seed;
    let mut out = FileCheck {
        path: path.to_string(),
        file,
        size_bytes: 0,
        blocks: 0,
        intact: Tally::default(),
        lost: Tally::default(),
        stale_allowed: Tally::default(),
        corrupt: Tally::default(),
        misdirected: Tally::default(),
        torn: Tally::default(),
        overlapped: Tally::default(),
        failures: 0,
        mismatches: Vec::new(),
        interrupted: false,
    };
    let mut buf = vec![0u8; bs];
    let crc = block::block_crc(bs);
    let block_id = |index: u64| BlockId {
        seed,
        file,
        offset: index * bs as u64,
    };
    let mut index = 0u64;
    loop {
        if stop.load(Ordering::Relaxed) {
            out.interrupted = true;
            return Ok(out);
        }
        let n = read_block(r, &mut buf)
            .with_context(|| format!("{path}: read error at offset {}", index * bs as u64))?;
        if n == 0 {
            break;
        }
        buf[n..].fill(0);
        out.size_bytes += n as u64;
        judge_block(&mut out, &buf, block_id(index), index, journal, &crc);
        index += 1;
        if n < bs {
            break;
        }
    }
    // Acknowledged blocks past the end: the file lost them (it was cut short or never grew).
    let mut beyond: Vec<u64> = journal
        .acked
        .keys()
        .filter(|(f, b)| *f == file && *b >= index)
        .map(|(_, b)| *b)
        .collect();
    beyond.sort_unstable();
    buf.fill(0);
    for b in beyond {
        judge_block(&mut out, &buf, block_id(b), b, journal, &crc);
    }
    Ok(out)
}

/// Judge block `index` of a file (`id`), read into `buf`, against the journal.
fn judge_block(
    out: &mut FileCheck,
    buf: &[u8],
    id: BlockId,
    index: u64,
    journal: &Journal,
    crc: &block::BlockCrc,
) {
    let file = id.file;
    let verdict = block::check(buf, &id, crc);
    let acked = journal.acked.get(&(file, index)).copied();
    // The run's own writes of the block overlapped after its last acknowledgement: bytes
    // mixed from them are what the run wrote, not damage (the run skipped the block too).
    let overlapped = journal
        .overlapped
        .get(&(file, index))
        .is_some_and(|&o| o >= acked.unwrap_or(0));
    let finding = match verdict {
        Verdict::Corrupt { .. } | Verdict::Torn { .. } | Verdict::CrcMismatch { .. }
            if overlapped && written_by_run(buf, &id) =>
        {
            Finding::Overlapped
        }
        // A block no acknowledged write reached, holding bytes no write of this run made
        // (what was there before the run: a file laid out before the timed phase, or an
        // older file): nothing was promised for it.
        Verdict::Corrupt { .. } if acked.is_none() && !written_by_run(buf, &id) => {
            Finding::StaleAllowed
        }
        _ => judge(&verdict, acked),
    };
    let failure = finding.is_failure(&verdict, acked);
    out.record(id.offset, finding, failure);
    let shown = !matches!(
        finding,
        Finding::Intact | Finding::StaleAllowed | Finding::Overlapped
    );
    if shown && out.mismatches.len() < FIRST_N {
        out.mismatches
            .push(mismatch(buf, &id, verdict, finding, failure, acked));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::journal::{Ack, JournalHeader, JournalWriter};

    const BS: usize = 4096;
    const SEED: u64 = 77;

    fn id(block: u64) -> BlockId {
        BlockId {
            seed: SEED,
            file: 0,
            offset: block * BS as u64,
        }
    }

    fn gen_block(block: u64, g: u64) -> Vec<u8> {
        let mut b = vec![0u8; BS];
        block::fill(&mut b, &id(block), g, &block::block_crc(BS));
        b
    }

    /// A journal acknowledging `acks` (block, generation) of file 0, read back from disk.
    fn journal(dir: &std::path::Path, acks: &[(u64, u64)]) -> Journal {
        let p = dir.join("j.fsj");
        let mut w = JournalWriter::create(
            &p,
            &JournalHeader {
                seed: SEED,
                block_size: BS as u64,
                files: vec!["f".into()],
            },
        )
        .unwrap();
        let acks: Vec<Ack> = acks
            .iter()
            .map(|&(block, generation)| Ack {
                file: 0,
                block,
                generation,
                overlapped: false,
            })
            .collect();
        w.append(&acks).unwrap();
        Journal::read(&p).unwrap()
    }

    #[test]
    fn header_fields_read_back_what_fill_wrote() {
        let f = found_fields(&gen_block(3, 9)).unwrap();
        assert_eq!(
            f,
            Fields {
                seed: SEED,
                file: 0,
                offset_bytes: 3 * BS as u64,
                generation: Some(9)
            }
        );
        assert_eq!(found_fields(&[0u8; BS]), None);
    }

    /// One block of every kind, each classified as such, with its offset and details.
    #[test]
    fn each_kind_of_block_is_classified() {
        let d = tempfile::tempdir().unwrap();
        // Blocks: 0 intact (acked 2, found 2); 1 newer than acked (intact); 2 lost (acked 3,
        // found 2); 3 lost (acked, zeros); 4 stale-but-allowed (never acked, zeros);
        // 5 corrupt (one bit); 6 misdirected (block 0's content); 7 torn (half gen 2 over 1,
        // gen 1 acked: no acked sector lost); 8 torn that lost acked sectors (acked 2, half
        // of 2 over zeros... oldest None).
        let j = journal(
            d.path(),
            &[
                (0, 2),
                (1, 1),
                (2, 3),
                (3, 1),
                (5, 1),
                (6, 1),
                (7, 1),
                (8, 2),
                (10, 1),
            ],
        );
        let mut file = Vec::new();
        file.extend(gen_block(0, 2));
        file.extend(gen_block(1, 5));
        file.extend(gen_block(2, 2));
        file.extend(vec![0u8; BS]);
        file.extend(vec![0u8; BS]);
        let mut flipped = gen_block(5, 1);
        flipped[1000] ^= 0x04;
        file.extend(&flipped);
        file.extend(gen_block(0, 1));
        let mut torn = gen_block(7, 2);
        torn[2048..].copy_from_slice(&gen_block(7, 1)[2048..]);
        file.extend(&torn);
        let mut torn_lost = gen_block(8, 2);
        torn_lost[1024..].fill(0);
        file.extend(&torn_lost);
        // Block 10 is acknowledged but the file ends after block 8.
        let c = check_file(&mut file.as_slice(), "f", 0, &j, &AtomicBool::new(false)).unwrap();
        let off = |b: u64| b * BS as u64;
        assert_eq!(c.blocks, 10);
        assert_eq!(c.size_bytes, 9 * BS as u64);
        assert_eq!(c.intact.first_offsets_bytes, vec![off(0), off(1)]);
        assert_eq!(c.lost.first_offsets_bytes, vec![off(2), off(3), off(10)]);
        assert_eq!(c.stale_allowed.first_offsets_bytes, vec![off(4)]);
        assert_eq!(c.corrupt.first_offsets_bytes, vec![off(5)]);
        assert_eq!(c.misdirected.first_offsets_bytes, vec![off(6)]);
        assert_eq!(c.torn.first_offsets_bytes, vec![off(7), off(8)]);
        // Lost x3, corrupt, misdirected, the torn block that lost an acked sector.
        assert_eq!(c.failures, 6);
        let m = |o: u64| c.mismatches.iter().find(|m| m.offset_bytes == o).unwrap();
        let lost = m(off(2));
        assert_eq!(lost.finding, "lost");
        assert_eq!(lost.expected.generation, Some(3));
        assert_eq!(lost.found.unwrap().generation, Some(2));
        assert!(lost.first_difference.is_some());
        let flip = m(off(5));
        assert_eq!(flip.finding, "corrupt");
        let diff = flip.first_difference.as_ref().unwrap();
        assert_eq!(diff.at_byte_in_block, 1000);
        assert_eq!(diff.offset_bytes, off(5) + 1000);
        assert!(diff.bit_flip);
        assert!(matches!(
            flip.verdict,
            Verdict::Corrupt {
                at: 1000,
                bit_flip: true,
                ..
            }
        ));
        let mis = m(off(6));
        assert_eq!(mis.finding, "misdirected");
        assert_eq!(mis.found.unwrap().offset_bytes, 0);
        assert_eq!(mis.expected.offset_bytes, off(6));
        assert!(!m(off(7)).failure);
        assert!(m(off(8)).failure);
        assert_eq!(m(off(3)).found, None);
    }

    #[test]
    fn what_was_there_before_the_run_is_allowed_where_nothing_was_acknowledged() {
        let d = tempfile::tempdir().unwrap();
        let j = journal(d.path(), &[(0, 1)]);
        // Block 0: acknowledged, holding foreign bytes (the layout): corrupt. Block 1: never
        // acknowledged, foreign bytes: allowed. Block 2: never acknowledged, but this run's
        // block with a flipped bit: corrupt.
        let foreign: Vec<u8> = (0..BS).map(|i| (i * 7 + 3) as u8).collect();
        let mut file = foreign.clone();
        file.extend(&foreign);
        let mut flipped = gen_block(2, 1);
        flipped[700] ^= 0x80;
        file.extend(&flipped);
        let c = check_file(&mut file.as_slice(), "f", 0, &j, &AtomicBool::new(false)).unwrap();
        assert_eq!(c.corrupt.first_offsets_bytes, vec![0, 2 * BS as u64]);
        assert_eq!(c.stale_allowed.first_offsets_bytes, vec![BS as u64]);
        assert_eq!(c.failures, 2);
    }

    /// Bytes mixed from two overlapping writes of the run (as concurrent mmap stores mix
    /// them, word by word) are not damage when the journal records the overlap after the
    /// block's last acknowledgement; without that record, or with an acknowledgement after
    /// it, they are corruption.
    #[test]
    fn a_mix_of_the_runs_own_overlapping_writes_is_not_corruption() {
        let d = tempfile::tempdir().unwrap();
        let mut mixed = gen_block(0, 6);
        let g7 = gen_block(0, 7);
        for w in (64..BS).step_by(16) {
            mixed[w..w + 8].copy_from_slice(&g7[w..w + 8]);
        }
        let judged = |block: &[u8], overlap: Option<u64>, ack: Option<u64>| {
            let p = d.path().join(format!("j{overlap:?}{ack:?}"));
            let mut w = JournalWriter::create(
                &p,
                &JournalHeader {
                    seed: SEED,
                    block_size: BS as u64,
                    files: vec!["f".into()],
                },
            )
            .unwrap();
            let rec = |generation, overlapped| Ack {
                file: 0,
                block: 0,
                generation,
                overlapped,
            };
            let mut recs = Vec::new();
            recs.extend(overlap.map(|g| rec(g, true)));
            recs.extend(ack.map(|g| rec(g, false)));
            w.append(&recs).unwrap();
            let j = Journal::read(&p).unwrap();
            check_file(&mut &block[..], "f", 0, &j, &AtomicBool::new(false)).unwrap()
        };
        let c = judged(&mixed, Some(7), None);
        assert_eq!((c.overlapped.blocks, c.failures), (1, 0));
        assert!(c.mismatches.is_empty());
        let c = judged(&mixed, Some(7), Some(5));
        assert_eq!((c.overlapped.blocks, c.failures), (1, 0));
        let c = judged(&mixed, None, None);
        assert_eq!((c.corrupt.blocks, c.failures), (1, 1));
        let c = judged(&mixed, Some(4), Some(5));
        assert_eq!((c.overlapped.blocks, c.failures), (0, 1));
        // A flipped bit in a block the run wrote alone stays corruption, overlap or not.
        let mut flipped = gen_block(0, 9);
        flipped[900] ^= 1;
        let c = judged(&flipped, Some(7), Some(9));
        assert_eq!((c.corrupt.blocks, c.failures), (1, 1));
    }

    #[test]
    fn a_stop_ends_the_check_at_the_next_block() {
        let d = tempfile::tempdir().unwrap();
        let j = journal(d.path(), &[(0, 1)]);
        let file = vec![0u8; 4 * BS];
        let c = check_file(&mut file.as_slice(), "f", 0, &j, &AtomicBool::new(true)).unwrap();
        assert!(c.interrupted);
        assert_eq!(c.blocks, 0);
    }

    #[test]
    fn a_clean_file_has_no_mismatch() {
        let d = tempfile::tempdir().unwrap();
        let j = journal(d.path(), &[(0, 1), (1, 4)]);
        let mut file = gen_block(0, 1);
        file.extend(gen_block(1, 4));
        file.extend(gen_block(2, 1));
        let c = check_file(&mut file.as_slice(), "f", 0, &j, &AtomicBool::new(false)).unwrap();
        assert_eq!((c.blocks, c.intact.blocks, c.failures), (3, 3, 0));
        assert!(c.mismatches.is_empty());
    }

    #[test]
    fn a_short_last_block_is_judged_as_torn_and_only_ten_offsets_are_kept() {
        let d = tempfile::tempdir().unwrap();
        let acks: Vec<(u64, u64)> = (0..20).map(|b| (b, 1)).collect();
        let j = journal(d.path(), &acks);
        let mut file = Vec::new();
        for b in 0..19 {
            file.extend(vec![0u8; BS]);
            let _ = b;
        }
        file.extend(&gen_block(19, 1)[..BS / 2]);
        let c = check_file(&mut file.as_slice(), "f", 0, &j, &AtomicBool::new(false)).unwrap();
        assert_eq!(c.lost.blocks, 19);
        assert_eq!(c.lost.first_offsets_bytes.len(), FIRST_N);
        assert_eq!(c.torn.first_offsets_bytes, vec![19 * BS as u64]);
        assert_eq!(c.mismatches.len(), FIRST_N);
        assert_eq!(c.failures, 20);
    }
}
