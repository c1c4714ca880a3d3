//! Per-I/O traces: fsbench's own I/O recorded into a preallocated ring per worker, other
//! programs' file I/O captured with strace, both in one format (CSV or a compact binary form)
//! that `fsbench trace --analyze` explains and `fsbench replay` turns back into a benchmark.
//!
//! Tracing is an observation option, not part of the Job (a Job stays the same benchmark
//! whether or not it is traced), so the run's observer switches it on with
//! [`TraceSession::new`] (worker threads) or [`TraceSession::for_children`] (worker
//! processes); each worker takes its ring in its untimed preparation and hands it back after
//! its timed loop. See [`session`].

pub mod analyze;
pub mod budget;
pub mod format;
pub mod ring;
pub mod session;
pub mod strace;

pub use ring::{TraceFiles, TraceRing};
use serde::{Deserialize, Serialize};
pub use session::TraceSession;

/// What a traced call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceOp {
    Read,
    Write,
    Open,
    Close,
    Fsync,
    Fdatasync,
    // Metadata calls a workload makes (Filebench's deletefile, statfile, makedir, listdir);
    // appended so that the binary format's codes of the older ops stay the same.
    Unlink,
    Stat,
    Mkdir,
    Readdir,
    /// A Job's trim (hole punch or discard) of `len` bytes at `offset`.
    Trim,
}

impl TraceOp {
    /// Every op, in the order of its binary code (`code()`).
    pub const ALL: [TraceOp; 11] = [
        TraceOp::Read,
        TraceOp::Write,
        TraceOp::Open,
        TraceOp::Close,
        TraceOp::Fsync,
        TraceOp::Fdatasync,
        TraceOp::Unlink,
        TraceOp::Stat,
        TraceOp::Mkdir,
        TraceOp::Readdir,
        TraceOp::Trim,
    ];
    pub fn name(self) -> &'static str {
        match self {
            TraceOp::Read => "read",
            TraceOp::Write => "write",
            TraceOp::Open => "open",
            TraceOp::Close => "close",
            TraceOp::Fsync => "fsync",
            TraceOp::Fdatasync => "fdatasync",
            TraceOp::Unlink => "unlink",
            TraceOp::Stat => "stat",
            TraceOp::Mkdir => "mkdir",
            TraceOp::Readdir => "readdir",
            TraceOp::Trim => "trim",
        }
    }
    pub fn parse(s: &str) -> Option<TraceOp> {
        TraceOp::ALL.into_iter().find(|op| op.name() == s)
    }
    pub fn code(self) -> u8 {
        self as u8
    }
    pub fn from_code(c: u8) -> Option<TraceOp> {
        TraceOp::ALL.get(c as usize).copied()
    }
    /// Moves data (and so has an offset and a length).
    pub fn is_data(self) -> bool {
        matches!(self, TraceOp::Read | TraceOp::Write)
    }
}

/// One traced call. Times are nanoseconds from the start of the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceRecord {
    pub id: u64,
    /// Worker index (fsbench) or thread id (strace).
    pub thread: u32,
    pub op: TraceOp,
    /// Index into [`Trace::files`].
    pub file: u32,
    pub offset: u64,
    /// Bytes asked for (data ops).
    pub len: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Bytes transferred, or a negative errno.
    pub result: i64,
}

impl TraceRecord {
    /// Bytes the call actually moved (0 for errors and non-data calls).
    pub fn done_bytes(&self) -> u64 {
        if self.op.is_data() && self.result > 0 {
            (self.result as u64).min(self.len.max(self.result as u64))
        } else {
            0
        }
    }
}

/// A whole trace: the files it names and its records in start order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    pub files: Vec<String>,
    pub records: Vec<TraceRecord>,
}

impl Trace {
    /// Index of `path` in the file table, adding it when new.
    pub fn file_index(&mut self, path: &str) -> u32 {
        if let Some(i) = self.files.iter().position(|f| f == path) {
            return i as u32;
        }
        self.files.push(path.to_string());
        (self.files.len() - 1) as u32
    }

    /// Sort by start time (ties by thread) and number the records 0.. in that order.
    pub fn renumber(&mut self) {
        self.records
            .sort_by_key(|r| (r.start_ns, r.end_ns, r.thread, r.id));
        let t0 = self.records.first().map(|r| r.start_ns).unwrap_or(0);
        for (i, r) in self.records.iter_mut().enumerate() {
            r.id = i as u64;
            r.start_ns -= t0;
            r.end_ns = r.end_ns.saturating_sub(t0);
        }
    }
}

/// The text in a path that each rank of a distributed command replaces by its number.
pub const RANK_FIELD: &str = "{rank}";

/// `path` with every `{rank}` replaced by `rank` as 5 digits (byte for byte otherwise).
pub fn rank_path(path: &std::path::Path, rank: u32) -> std::path::PathBuf {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let (bytes, field) = (path.as_os_str().as_bytes(), RANK_FIELD.as_bytes());
    let digits = format!("{rank:05}");
    let mut out = Vec::with_capacity(bytes.len() + 8);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(field) {
            out.extend_from_slice(digits.as_bytes());
            i += field.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    std::path::PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// A rank's own output file: `{rank}` replaced ([`rank_path`]), or without it the rank
/// inserted before the extension (`trace.csv` -> `trace.r00002.csv`); true when inserted.
pub fn rank_output(path: &std::path::Path, rank: u32) -> (std::path::PathBuf, bool) {
    use std::os::unix::ffi::OsStrExt;
    if path
        .as_os_str()
        .as_bytes()
        .windows(RANK_FIELD.len())
        .any(|w| w == RANK_FIELD.as_bytes())
    {
        return (rank_path(path, rank), false);
    }
    let tag = format!("r{rank:05}");
    let name = match (path.file_stem(), path.extension()) {
        (Some(stem), Some(ext)) => {
            let mut n = stem.to_os_string();
            n.push(format!(".{tag}."));
            n.push(ext);
            n
        }
        _ => {
            let mut n = path
                .file_name()
                .map(|f| f.to_os_string())
                .unwrap_or_default();
            n.push(format!(".{tag}"));
            n
        }
    };
    (path.with_file_name(name), true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::{Path, PathBuf};

    /// `ALL` is in code order, and every op's name and code read back as that op (the
    /// binary and text formats both depend on it).
    #[test]
    fn every_op_round_trips_through_its_code_and_name() {
        for (i, op) in TraceOp::ALL.into_iter().enumerate() {
            assert_eq!(op.code() as usize, i);
            assert_eq!(TraceOp::from_code(op.code()), Some(op));
            assert_eq!(TraceOp::parse(op.name()), Some(op));
        }
        assert_eq!(TraceOp::from_code(TraceOp::ALL.len() as u8), None);
        assert_eq!(TraceOp::parse("rename"), None);
    }

    #[test]
    fn rank_field_becomes_five_digits() {
        assert_eq!(
            rank_path(Path::new("t/app.{rank}.csv"), 3),
            PathBuf::from("t/app.00003.csv")
        );
        assert_eq!(
            rank_path(Path::new("{rank}/{rank}.bin"), 12345),
            PathBuf::from("12345/12345.bin")
        );
        assert_eq!(
            rank_path(Path::new("same.csv"), 7),
            PathBuf::from("same.csv")
        );
        assert_eq!(
            rank_path(Path::new("{ran}k{rank"), 1),
            PathBuf::from("{ran}k{rank")
        );
    }

    #[test]
    fn a_ranks_output_without_the_field_gets_the_rank_before_the_extension() {
        assert_eq!(
            rank_output(Path::new("out/trace.csv"), 2),
            (PathBuf::from("out/trace.r00002.csv"), true)
        );
        assert_eq!(
            rank_output(Path::new("trace"), 10),
            (PathBuf::from("trace.r00010"), true)
        );
        assert_eq!(
            rank_output(Path::new("app.{rank}.bin"), 3),
            (PathBuf::from("app.00003.bin"), false)
        );
    }

    proptest! {
        #[test]
        fn a_path_without_the_field_is_unchanged_and_every_field_is_replaced(
            parts in proptest::collection::vec("[a-z./{}]{0,6}", 0..5),
            rank in 0u32..100_000,
        ) {
            let plain: Vec<String> = parts.iter().map(|p| p.replace(RANK_FIELD, "")).collect();
            let joined = plain.join(RANK_FIELD);
            let got = rank_path(Path::new(&joined), rank);
            prop_assert_eq!(got, PathBuf::from(joined.replace(RANK_FIELD, &format!("{rank:05}"))));
        }
    }
}
