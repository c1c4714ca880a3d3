//! The `verify` section of a Result as text: a run's blocks (`run --verify`) or a workload's
//! or replay's checked reads (`workload --verify`, `replay --verify`), and the first
//! mismatches of each kind.

use std::fmt::Write;

/// The `verify` section as text: what was checked, how it came back, and the first
/// mismatches of each kind.
pub(super) fn run_lines(v: &crate::verify::report::VerifyReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "verify: {} blocks checked ({} read back after the run{}, {} backlog, {} by the run's reads): {} intact, {} did not come back as written",
        v.blocks_checked,
        v.read_back_blocks,
        if v.read_back_done { "" } else { ", read-back not done" },
        v.backlog_blocks,
        v.run_read_blocks,
        v.blocks_intact,
        v.bad_blocks()
    );
    if v.blocks_skipped_overlap + v.blocks_skipped_busy > 0 {
        let _ = writeln!(
            out,
            "verify: skipped {} blocks (overlapping writes in flight), {} (rewritten while read)",
            v.blocks_skipped_overlap, v.blocks_skipped_busy
        );
    }
    out.push_str(&mismatch_lines(v));
    if v.journal_appends + v.fsyncs > 0 {
        let _ = writeln!(
            out,
            "verify: journal {} acknowledgements{} in {} durable appends; {} fsyncs for --fsync-every",
            v.journal_acks,
            if v.journal_overlaps > 0 {
                format!(" and {} overlaps (nothing promised)", v.journal_overlaps)
            } else {
                String::new()
            },
            v.journal_appends,
            v.fsyncs
        );
    }
    out
}

/// The first mismatches of each kind, as text.
/// What a found block's own whole-block CRC says, in words.
pub fn own_crc_words(ok: bool) -> &'static str {
    if ok {
        "matches its bytes (a whole block as some write made it)"
    } else {
        "does not match its bytes (damaged after it was written)"
    }
}

fn mismatch_lines(v: &crate::verify::report::VerifyReport) -> String {
    let mut out = String::new();
    for (name, k) in v.kinds() {
        if k.blocks == 0 {
            continue;
        }
        let _ = writeln!(out, "verify: {} {name} block(s); first:", k.blocks);
        for m in &k.first {
            let _ = writeln!(
                out,
                "  {}{} offset {}: {}; expected file {} offset {} gen {}, found file {} offset {} gen {}{}",
                m.rank.map(|r| format!("rank {r}: ")).unwrap_or_default(),
                m.target,
                m.offset_bytes,
                m.detail,
                m.expected.file,
                m.expected.offset_bytes,
                m.expected.generation,
                m.found.file,
                m.found.offset_bytes,
                m.found.generation,
                match &m.first_diff {
                    Some(d) => format!(
                        "; first difference at byte {}: expected {} found {}",
                        d.at_byte, d.expected_hex, d.found_hex
                    ),
                    None => String::new(),
                }
            );
            if let Some(ok) = m.found_block_crc_ok {
                let _ = writeln!(out, "    found block's own CRC: {}", own_crc_words(ok));
            }
        }
    }
    out
}

/// A workload's or a replay's `verify` section as text: reads checked (each one "block"),
/// then the mismatches as for a run.
pub(super) fn workload_lines(v: &crate::verify::report::VerifyReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "verify: {} reads checked ({} bytes compared): {} intact, {} did not come back as written",
        v.blocks_checked,
        v.bytes_checked,
        v.blocks_intact,
        v.bad_blocks()
    );
    if v.blocks_skipped_overlap + v.blocks_skipped_busy > 0 {
        let _ = writeln!(
            out,
            "verify: skipped {} reads (file content not known: concurrent writes, aiowrite, a reused file), {} (file written while read)",
            v.blocks_skipped_overlap, v.blocks_skipped_busy
        );
    }
    out.push_str(&mismatch_lines(v));
    out
}

#[cfg(test)]
mod tests {
    use crate::verify::report::{FindingReport, HeaderFields, Mismatch, VerifyReport};

    fn corrupt_at(rank: Option<u32>) -> VerifyReport {
        let fields = |generation| HeaderFields {
            seed: 1,
            file: 0,
            offset_bytes: 327_680,
            generation,
        };
        VerifyReport {
            corrupt: FindingReport {
                blocks: 1,
                first: vec![Mismatch {
                    user: 0,
                    target: "f.d/rank-00002/f".into(),
                    offset_bytes: 327_680,
                    detail: "bit 3 of byte 1000 flipped".into(),
                    expected: fields(1),
                    found: fields(1),
                    first_diff: None,
                    found_block_crc_ok: Some(false),
                    rank,
                }],
            },
            ..Default::default()
        }
    }

    /// On ranks each first mismatch names the rank that wrote and checked it; on one host
    /// the line is as before.
    #[test]
    fn a_mismatch_line_names_its_rank_on_ranks_only() {
        let on_ranks = super::mismatch_lines(&corrupt_at(Some(2)));
        assert!(
            on_ranks.contains("  rank 2: f.d/rank-00002/f offset 327680: bit 3"),
            "{on_ranks}"
        );
        let one_host = super::mismatch_lines(&corrupt_at(None));
        assert!(
            one_host.contains("  f.d/rank-00002/f offset 327680: bit 3"),
            "{one_host}"
        );
        assert!(!one_host.contains("rank 2:"), "{one_host}");
    }
}
