//! `--verify` and `--journal` on the ranks of a distributed run. Each rank verifies the
//! blocks it wrote itself, with a generation table of its own, exactly as a run on one host
//! does; this module only decides what the ranks share and how their findings meet in rank
//! 0's Result:
//! - each rank journals to a file of its own, `J.rank-NNNNN` beside the `--journal J` given,
//!   so `fsbench verify FILE --journal J.rank-NNNNN` judges that rank's file afterwards;
//! - on a shared file every rank stamps one block seed, drawn by rank 0, so a rank's journal
//!   judges the blocks the other ranks wrote there as this run's (intact when whole) and
//!   its own against what it acknowledged;
//! - each rank's verify report keeps its mismatches with the rank, and the target index
//!   they have among all ranks' targets, when rank 0 sums the reports.

use super::layout::{DistSpec, Layout};
use crate::verify::report::{FindingReport, VerifyReport};
use std::path::{Path, PathBuf};

/// Rank `rank`'s journal for `--journal J`: J.rank-NNNNN.
pub(crate) fn rank_journal(journal: &Path, rank: u32) -> PathBuf {
    let mut s = journal.as_os_str().to_os_string();
    s.push(format!(".rank-{rank:05}"));
    PathBuf::from(s)
}

/// The block seed of a verifying run on a shared file, drawn once on rank 0 (None for
/// file-per-rank, where each rank's file has a seed of its own, and without verification).
pub(crate) fn shared_seed(spec: &DistSpec) -> Option<u64> {
    (spec.job.verifying() && spec.layout != Layout::FilePerRank)
        .then(|| crate::runner::worker::verify::block_seed(spec.job.seed))
}

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
    use crate::verify::report::{HeaderFields, Mismatch};

    #[test]
    fn each_rank_journals_to_its_own_file() {
        assert_eq!(
            rank_journal(Path::new("/j/run.journal"), 3),
            PathBuf::from("/j/run.journal.rank-00003")
        );
        assert_ne!(
            rank_journal(Path::new("j"), 1),
            rank_journal(Path::new("j"), 10)
        );
    }

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
