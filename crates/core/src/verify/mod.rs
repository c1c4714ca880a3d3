//! Data verification: blocks that describe themselves ([`block`]), so that what comes back
//! from storage can be judged intact, stale (lost write), misdirected, torn or corrupt, and
//! a journal of what storage acknowledged as durable ([`journal`]), so that after a crash
//! `fsbench verify` can tell a broken promise from a write that was never promised.
//!
//! This module holds the data formats and the judgement only; writing and reading the
//! blocks is the runner's, through an engine, like every other I/O (`fsbench verify` reads
//! a file with `runner::read`).

pub mod block;
pub(crate) mod blockcrc;
pub mod check;
mod fast;
mod format;
pub mod journal;
mod payload;
pub mod report;
pub(crate) mod stream;
pub(crate) mod table;
pub(crate) mod words;

use block::Verdict;
use serde::Serialize;

/// What a block found after a crash means, given the newest generation storage had
/// acknowledged for it (`None`: no write of it was ever acknowledged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// The acknowledged generation or a newer one, whole.
    Intact,
    /// An acknowledged write is missing (an older generation, or nothing): storage broke
    /// its promise.
    Lost,
    /// Older than what was written last, but nothing newer was acknowledged: allowed.
    StaleAllowed,
    /// Bytes no write produced.
    Corrupt,
    /// A whole block that belongs elsewhere.
    Misdirected,
    /// Sectors of different writes; counted as loss when an acknowledged sector is gone.
    Torn,
    /// Bytes of the run's own writes of the block that overlapped (two in flight at once,
    /// as the journal records): what it holds was never known, nothing was promised.
    Overlapped,
}

impl Finding {
    /// Whether this finding makes `fsbench verify` fail (exit 1).
    pub(crate) fn is_failure(self, verdict: &Verdict, acked: Option<u64>) -> bool {
        match self {
            Finding::Lost | Finding::Corrupt | Finding::Misdirected => true,
            Finding::Torn => matches!(
                (verdict, acked),
                (Verdict::Torn { oldest, .. }, Some(a)) if oldest.is_none_or(|o| o < a)
            ),
            Finding::Intact | Finding::StaleAllowed | Finding::Overlapped => false,
        }
    }
}

/// Judge a block's verdict against what the journal says was acknowledged for it.
pub(crate) fn judge(verdict: &Verdict, acked: Option<u64>) -> Finding {
    let acked_gen = acked.unwrap_or(0);
    match *verdict {
        Verdict::Intact { generation } if generation >= acked_gen => Finding::Intact,
        Verdict::Intact { .. } | Verdict::Unwritten => {
            if acked.is_some() {
                Finding::Lost
            } else {
                Finding::StaleAllowed
            }
        }
        Verdict::Misdirected { .. } => Finding::Misdirected,
        Verdict::Torn { .. } => Finding::Torn,
        Verdict::Corrupt { .. } | Verdict::CrcMismatch { .. } => Finding::Corrupt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_acknowledged_write_is_lost_and_an_unpromised_one_is_allowed() {
        let old = Verdict::Intact { generation: 2 };
        assert_eq!(judge(&old, Some(3)), Finding::Lost);
        assert_eq!(judge(&old, Some(2)), Finding::Intact);
        assert_eq!(judge(&old, None), Finding::Intact);
        assert_eq!(judge(&Verdict::Unwritten, Some(1)), Finding::Lost);
        assert_eq!(judge(&Verdict::Unwritten, None), Finding::StaleAllowed);
        assert!(Finding::Lost.is_failure(&Verdict::Unwritten, Some(1)));
        assert!(!Finding::StaleAllowed.is_failure(&Verdict::Unwritten, None));
    }

    #[test]
    fn a_tear_fails_only_when_it_lost_an_acknowledged_sector() {
        let torn = |oldest| Verdict::Torn {
            generation: 5,
            new_sectors: 4,
            old_sectors: 4,
            oldest,
        };
        assert_eq!(judge(&torn(Some(4)), Some(4)), Finding::Torn);
        assert!(!Finding::Torn.is_failure(&torn(Some(4)), Some(4)));
        assert!(Finding::Torn.is_failure(&torn(Some(3)), Some(4)));
        assert!(Finding::Torn.is_failure(&torn(None), Some(1)));
        assert!(!Finding::Torn.is_failure(&torn(None), None));
    }
}
