//! `--verify` and `--journal` on the ranks of a distributed run. Each rank verifies the
//! blocks it wrote itself, with a generation table of its own, exactly as a run on one host
//! does; what the ranks share is decided with the layout (`super::layout`: each rank's
//! journal `J.rank-NNNNN`, and on a shared file the one block seed rank 0 draws, so a rank's
//! journal judges the blocks the other ranks wrote there as this run's). This module says how
//! their findings meet in rank 0's Result:
//! - each rank's verify report keeps its mismatches with the rank, and the target index
//!   they have among all ranks' targets, when rank 0 sums the reports.

use fsbench_core::verify::report::{FindingReport, VerifyReport};

/// A rank's verify report as it goes into rank 0's sum: each mismatch names the rank, and
/// its target index counts the targets of the ranks before it (`user_base`).
pub(crate) fn for_rank(report: &VerifyReport, rank: u32, user_base: usize) -> VerifyReport {
    let mut r = report.clone();
    let tag = |k: &mut FindingReport| {
        for m in &mut k.first {
            m.rank = Some(rank);
            m.user += user_base;
        }
    };
    tag(&mut r.stale);
    tag(&mut r.misdirected);
    tag(&mut r.torn);
    tag(&mut r.corrupt);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_core::verify::report::{HeaderFields, Mismatch};

    #[test]
    fn mismatches_keep_their_rank_and_global_target_when_summed() {
        let h = HeaderFields {
            seed: 1,
            file: 0,
            offset_bytes: 4096,
            generation: 1,
        };
        let m = Mismatch {
            user: 0,
            target: "s".into(),
            offset_bytes: 4096,
            detail: "corrupt".into(),
            expected: h,
            found: h,
            first_diff: None,
            found_block_crc_ok: None,
            rank: None,
        };
        let mut a = VerifyReport {
            blocks_checked: 10,
            blocks_intact: 9,
            read_back_done: true,
            ..Default::default()
        };
        a.corrupt.add(m.clone());
        let b = VerifyReport {
            blocks_checked: 5,
            blocks_intact: 5,
            read_back_done: true,
            ..Default::default()
        };
        let parts = [for_rank(&b, 0, 0), for_rank(&a, 2, 2)];
        let sum = VerifyReport::merged(parts.iter()).unwrap();
        assert_eq!((sum.blocks_checked, sum.blocks_intact), (15, 14));
        assert_eq!(sum.bad_blocks(), 1);
        let got = &sum.corrupt.first[0];
        assert_eq!((got.rank, got.user, got.offset_bytes), (Some(2), 2, 4096));
        // The rank's own report is untouched.
        assert_eq!(a.corrupt.first[0].rank, None);
    }
}
