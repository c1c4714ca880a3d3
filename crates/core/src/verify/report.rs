//! What a verifying run found, as it goes into the Result (`verify` section): counts of the
//! blocks checked and how each came back, and for each kind of mismatch the first offsets
//! with the header fields expected and found and the first bytes that differ.

use super::block::{self, BlockId, Verdict};
use serde::{Deserialize, Serialize};

/// Mismatches kept per kind (the lowest offsets).
pub(crate) const FIRST: usize = 10;

/// The header fields of a block: what a write of it stamps, or what was read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderFields {
    pub seed: u64,
    pub file: u64,
    pub offset_bytes: u64,
    pub generation: u64,
}

/// Where a block first differs from what was expected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteDiff {
    /// Offset of the first differing byte within the block.
    pub at_byte: u64,
    /// Up to 16 bytes from there, as expected and as found.
    pub expected_hex: String,
    pub found_hex: String,
}

/// One block that did not come back as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The target (user) index and its path.
    pub user: usize,
    pub target: String,
    pub offset_bytes: u64,
    /// What the block's check said, in words (e.g. "torn: 4 sectors of generation 7, 4 older").
    pub detail: String,
    pub expected: HeaderFields,
    /// The header words as found, valid or not.
    pub found: HeaderFields,
    pub first_diff: Option<ByteDiff>,
    /// Whether the block as found carries a valid header whose whole-block CRC matches its
    /// bytes (a whole block of some write) or not (damaged); absent without a valid header
    /// (and for workload files, which carry no headers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_block_crc_ok: Option<bool>,
    /// The rank that wrote and checked the block (a distributed run; absent on one host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
}

/// One kind of mismatch: how many blocks, and the first ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingReport {
    pub blocks: u64,
    pub first: Vec<Mismatch>,
}

impl FindingReport {
    pub fn add(&mut self, m: Mismatch) {
        self.blocks += 1;
        self.keep(m);
    }

    fn keep(&mut self, m: Mismatch) {
        self.first.push(m);
        self.first.sort_by_key(|m| (m.user, m.offset_bytes));
        self.first.truncate(FIRST);
    }

    fn merge(&mut self, o: &FindingReport) {
        self.blocks += o.blocks;
        for m in &o.first {
            self.keep(m.clone());
        }
    }
}

/// The `verify` section of a Result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// Blocks read and judged: the read-back after the run, the backlog checks while it ran,
    /// and the run's own reads of blocks it had written.
    pub blocks_checked: u64,
    pub blocks_intact: u64,
    /// Not judged: two writes of the block were in flight at once (or one failed), so which
    /// one is on storage is not known.
    pub blocks_skipped_overlap: u64,
    /// Not judged: a write of the block started while it was being read (backlog checks and
    /// the run's own reads only).
    pub blocks_skipped_busy: u64,
    pub read_back_blocks: u64,
    pub backlog_blocks: u64,
    pub run_read_blocks: u64,
    /// Bytes compared (workloads, where each checked read counts as one "block" and its
    /// bytes here; 0 for io runs).
    #[serde(default)]
    pub bytes_checked: u64,
    /// Wall time of the read-back (after the timed phase) and of the backlog checks (inside
    /// it: the run's elapsed time includes them, its I/O counts do not).
    pub read_back_s: f64,
    pub backlog_s: f64,
    /// False when the read-back did not run (the run failed or was interrupted before).
    pub read_back_done: bool,
    /// Acknowledgements made durable in the journal, and the journal appends (each one
    /// write and one fdatasync) that carried them.
    pub journal_acks: u64,
    pub journal_appends: u64,
    /// Overlap records in the journal: blocks whose writes overlapped, so nothing about them
    /// is promised (every journal record is an acknowledgement or one of these).
    #[serde(default)]
    pub journal_overlaps: u64,
    /// fsyncs issued for `--fsync-every`.
    pub fsyncs: u64,
    /// An older generation (or nothing) where a completed write should be: a lost write.
    pub stale: FindingReport,
    pub misdirected: FindingReport,
    pub torn: FindingReport,
    pub corrupt: FindingReport,
}

impl VerifyReport {
    pub fn merge(&mut self, o: &VerifyReport) {
        self.blocks_checked += o.blocks_checked;
        self.blocks_intact += o.blocks_intact;
        self.blocks_skipped_overlap += o.blocks_skipped_overlap;
        self.blocks_skipped_busy += o.blocks_skipped_busy;
        self.read_back_blocks += o.read_back_blocks;
        self.backlog_blocks += o.backlog_blocks;
        self.run_read_blocks += o.run_read_blocks;
        self.bytes_checked += o.bytes_checked;
        self.read_back_s = self.read_back_s.max(o.read_back_s);
        self.backlog_s = self.backlog_s.max(o.backlog_s);
        self.read_back_done &= o.read_back_done;
        self.journal_acks += o.journal_acks;
        self.journal_appends += o.journal_appends;
        self.journal_overlaps += o.journal_overlaps;
        self.fsyncs += o.fsyncs;
        self.stale.merge(&o.stale);
        self.misdirected.merge(&o.misdirected);
        self.torn.merge(&o.torn);
        self.corrupt.merge(&o.corrupt);
    }

    /// Merge the reports of a run's workers (None when none verified).
    pub fn merged<'a>(parts: impl Iterator<Item = &'a VerifyReport>) -> Option<Self> {
        let mut out: Option<VerifyReport> = None;
        for p in parts {
            match &mut out {
                Some(o) => o.merge(p),
                None => out = Some(p.clone()),
            }
        }
        out
    }

    /// Blocks that did not come back as written.
    pub fn bad_blocks(&self) -> u64 {
        self.stale.blocks + self.misdirected.blocks + self.torn.blocks + self.corrupt.blocks
    }

    /// The kinds with their reports, in a fixed order.
    pub fn kinds(&self) -> [(&'static str, &FindingReport); 4] {
        [
            ("stale", &self.stale),
            ("misdirected", &self.misdirected),
            ("torn", &self.torn),
            ("corrupt", &self.corrupt),
        ]
    }

    /// Judge one block read back (`buf`) that should hold generation `expected` of `id`,
    /// and count it. Returns whether it was intact.
    pub(crate) fn judge(
        &mut self,
        buf: &[u8],
        id: &BlockId,
        crc: &block::BlockCrc,
        expected: u64,
        user: usize,
        target: &str,
    ) -> bool {
        self.blocks_checked += 1;
        let verdict = block::check(buf, id, crc);
        let kind = match verdict {
            Verdict::Intact { generation } if generation == expected => {
                self.blocks_intact += 1;
                return true;
            }
            Verdict::Intact { .. } | Verdict::Unwritten => &mut self.stale,
            Verdict::Misdirected { .. } => &mut self.misdirected,
            Verdict::Torn { .. } => &mut self.torn,
            Verdict::Corrupt { .. } | Verdict::CrcMismatch { .. } => &mut self.corrupt,
        };
        kind.add(mismatch(buf, id, expected, &verdict, user, target));
        false
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Describe a block that is not generation `expected` of `id`.
fn mismatch(
    buf: &[u8],
    id: &BlockId,
    expected: u64,
    verdict: &Verdict,
    user: usize,
    target: &str,
) -> Mismatch {
    let mut want = vec![0u8; buf.len()];
    block::fill(&mut want, id, expected, &block::block_crc(buf.len()));
    // A shaped block's bytes after its header are not derived: no byte can be named.
    let derived = !block::is_shaped(buf);
    let first_diff = buf
        .iter()
        .zip(&want)
        .position(|(a, b)| derived && a != b)
        .map(|at| {
            let end = (at + 16).min(buf.len());
            ByteDiff {
                at_byte: at as u64,
                expected_hex: hex(&want[at..end]),
                found_hex: hex(&buf[at..end]),
            }
        });
    let f = block::header_words(buf);
    let detail = match verdict {
        Verdict::Intact { generation } => {
            format!("stale: generation {generation} where {expected} was written last")
        }
        Verdict::Unwritten => format!("stale: zeros where generation {expected} was written"),
        Verdict::Misdirected { found } => format!(
            "misdirected: a whole block of file {} offset {} generation {}",
            found.file, found.offset, found.generation
        ),
        Verdict::Torn {
            generation,
            new_sectors,
            old_sectors,
            oldest,
        } => format!(
            "torn: {new_sectors} sectors of generation {generation}, {old_sectors} {}",
            match oldest {
                Some(g) => format!("of older generations (oldest {g})"),
                None => "never written (zeros)".into(),
            }
        ),
        Verdict::CrcMismatch { generation } => format!(
            "corrupt: generation {generation}'s bytes no longer match the CRC32C in its header (a shaped block: the damaged byte cannot be named; a torn write looks the same)"
        ),
        Verdict::Corrupt {
            at,
            expected,
            found,
            bit_flip,
        } => format!(
            "corrupt from byte {at}: {found:#04x} where {expected:#04x}{}",
            if *bit_flip { " (one bit flipped)" } else { "" }
        ),
    };
    Mismatch {
        user,
        target: target.to_string(),
        offset_bytes: id.offset,
        detail,
        expected: HeaderFields {
            seed: id.seed,
            file: id.file,
            offset_bytes: id.offset,
            generation: expected,
        },
        found: HeaderFields {
            seed: f.seed,
            file: f.file,
            offset_bytes: f.offset,
            generation: f.generation,
        },
        first_diff,
        found_block_crc_ok: block::own_crc_matches(buf),
        rank: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: BlockId = BlockId {
        seed: 3,
        file: 0,
        offset: 40960,
    };

    fn block(g: u64) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        block::fill(&mut b, &ID, g, &block::block_crc(4096));
        b
    }

    #[test]
    fn each_kind_is_counted_with_fields_and_bytes() {
        let mut r = VerifyReport::default();
        assert!(r.judge(
            &block(2),
            &ID,
            &crate::verify::block::block_crc(4096),
            2,
            0,
            "f"
        ));
        assert!(!r.judge(
            &block(1),
            &ID,
            &crate::verify::block::block_crc(4096),
            2,
            0,
            "f"
        ));
        let mut flipped = block(2);
        flipped[1000] ^= 4;
        assert!(!r.judge(
            &flipped,
            &ID,
            &crate::verify::block::block_crc(4096),
            2,
            0,
            "f"
        ));
        let other = BlockId { offset: 0, ..ID };
        let mut m = vec![0u8; 4096];
        block::fill(&mut m, &other, 2, &block::block_crc(4096));
        assert!(!r.judge(&m, &ID, &crate::verify::block::block_crc(4096), 2, 0, "f"));
        let mut torn = block(2);
        torn[2048..].copy_from_slice(&block(1)[2048..]);
        assert!(!r.judge(
            &torn,
            &ID,
            &crate::verify::block::block_crc(4096),
            2,
            0,
            "f"
        ));
        assert_eq!(
            (r.blocks_checked, r.blocks_intact, r.bad_blocks()),
            (5, 1, 4)
        );
        assert_eq!(
            (
                r.stale.blocks,
                r.corrupt.blocks,
                r.misdirected.blocks,
                r.torn.blocks
            ),
            (1, 1, 1, 1)
        );
        let s = &r.stale.first[0];
        assert_eq!((s.expected.generation, s.found.generation), (2, 1));
        let c = &r.corrupt.first[0];
        let d = c.first_diff.as_ref().unwrap();
        assert_eq!(d.at_byte, 1000);
        assert_ne!(d.expected_hex, d.found_hex);
        assert!(c.detail.contains("one bit flipped"), "{}", c.detail);
        assert_eq!(r.misdirected.first[0].found.offset_bytes, 0);
        assert!(r.torn.first[0].detail.starts_with("torn: 4 sectors"));
    }

    #[test]
    fn merging_keeps_the_lowest_offsets() {
        let mut a = VerifyReport {
            read_back_done: true,
            ..Default::default()
        };
        let mut b = a.clone();
        for off in (0..30u64).rev() {
            let id = BlockId {
                offset: off * 4096,
                ..ID
            };
            let mut z = vec![0u8; 4096];
            block::fill(&mut z, &id, 1, &block::block_crc(4096));
            let r = if off % 2 == 0 { &mut a } else { &mut b };
            r.judge(&z, &id, &crate::verify::block::block_crc(4096), 2, 0, "f");
        }
        let m = VerifyReport::merged([a, b].iter()).unwrap();
        assert_eq!(m.stale.blocks, 30);
        let offs: Vec<u64> = m
            .stale
            .first
            .iter()
            .map(|x| x.offset_bytes / 4096)
            .collect();
        assert_eq!(offs, (0..10).collect::<Vec<_>>());
        assert!(m.read_back_done);
    }
}
