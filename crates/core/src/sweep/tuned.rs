//! Tunings a study applies to some of its points (the `tuning` setting), for the white paper's
//! "Tuned UFS Buffered / VxFS Discovered Direct" table.
//!
//! The paper tuned UFS for large files at mkfs time (`maxcontig=1536`: 12 MB allocated and
//! read ahead contiguously) and compared its buffered reads with VxFS's Discovered Direct
//! I/O. What a user can do on Linux without rebuilding the file system is the per-file
//! equivalent, which `large-file-buffered` applies to the buffered points of a study: the
//! file is reserved in one piece before it is laid out (fallocate of its whole size, as
//! contiguous as free space allows) and read with sequential advice (POSIX_FADV_SEQUENTIAL,
//! which doubles the read-ahead window). Points with another cache policy are left as they
//! are; they read the same files.

use super::PointJob;
use crate::error::UsageError;
use crate::job::{Advice, CachePolicy};
use crate::usage;

/// The name of the setting.
pub(crate) const SETTING: &str = "tuning";

/// Apply the tuning named `value` to a built point.
pub(crate) fn apply(pj: &mut PointJob, value: &str) -> Result<(), UsageError> {
    match value {
        "none" => Ok(()),
        "large-file-buffered" => {
            let j = &mut pj.job;
            if j.cache == CachePolicy::Buffered {
                if !j.advice.contains(&Advice::Seq) {
                    j.advice.push(Advice::Seq);
                }
                j.space.reservation = j.file_size;
            }
            Ok(())
        }
        other => Err(usage!(
            "unknown tuning '{other}': expected large-file-buffered or none"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_buffered_points_are_tuned() {
        let mut pj = PointJob::default();
        pj.job.cache = CachePolicy::Buffered;
        pj.job.file_size = Some(8 << 20);
        apply(&mut pj, "large-file-buffered").unwrap();
        assert_eq!(pj.job.advice, vec![Advice::Seq]);
        assert_eq!(pj.job.space.reservation, Some(8 << 20));
        let mut d = PointJob::default();
        d.job.cache = CachePolicy::parse("discovered").unwrap();
        d.job.file_size = Some(8 << 20);
        apply(&mut d, "large-file-buffered").unwrap();
        assert!(d.job.advice.is_empty());
        assert_eq!(d.job.space.reservation, None);
        assert!(apply(&mut d, "maxcontig")
            .unwrap_err()
            .0
            .contains("expected"));
    }
}
