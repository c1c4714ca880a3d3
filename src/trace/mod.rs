//! Per-I/O traces: fsbench's own I/O recorded into a preallocated ring per worker, other
//! programs' file I/O captured with strace, both in one format (CSV or a compact binary form)
//! that `fsbench trace --analyze` explains and `fsbench replay` turns back into a benchmark.
//!
//! Tracing is an observation option, not part of the Job (a Job stays the same benchmark
//! whether or not it is traced), so the CLI switches it on for this process with [`enable`];
//! each worker takes its ring in its untimed preparation and hands it back after its timed
//! loop. Worker processes (`--processes`) are not traced.

pub mod analyze;
pub mod format;
pub mod replay;
pub mod ring;
pub mod strace;

pub use ring::TraceRing;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::time::Instant;

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
}

impl TraceOp {
    pub fn name(self) -> &'static str {
        match self {
            TraceOp::Read => "read",
            TraceOp::Write => "write",
            TraceOp::Open => "open",
            TraceOp::Close => "close",
            TraceOp::Fsync => "fsync",
            TraceOp::Fdatasync => "fdatasync",
        }
    }
    pub fn parse(s: &str) -> Option<TraceOp> {
        Some(match s {
            "read" => TraceOp::Read,
            "write" => TraceOp::Write,
            "open" => TraceOp::Open,
            "close" => TraceOp::Close,
            "fsync" => TraceOp::Fsync,
            "fdatasync" => TraceOp::Fdatasync,
            _ => return None,
        })
    }
    pub fn code(self) -> u8 {
        self as u8
    }
    pub fn from_code(c: u8) -> Option<TraceOp> {
        [
            TraceOp::Read,
            TraceOp::Write,
            TraceOp::Open,
            TraceOp::Close,
            TraceOp::Fsync,
            TraceOp::Fdatasync,
        ]
        .get(c as usize)
        .copied()
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

/// Tracing switched on for this process: ring size and the common time base.
struct Session {
    capacity: usize,
    base: Instant,
    finished: Vec<TraceRing>,
}

static SESSION: Mutex<Option<Session>> = Mutex::new(None);

/// Switch tracing on for the next run in this process: every worker gets a ring of at most
/// `records_per_thread` entries (the newest are kept when a worker issues more).
pub fn enable(records_per_thread: usize) {
    let mut s = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    *s = Some(Session {
        capacity: records_per_thread.max(1),
        base: Instant::now(),
        finished: Vec::new(),
    });
}

/// A ring for one worker when tracing is on (called in the worker's untimed preparation, so
/// the allocation and the page faults of touching it happen before the clock starts). The
/// ring is sized to the I/Os the worker will issue when the job says how many.
pub fn ring_for_worker(
    job: &crate::job::Job,
    path: &std::path::Path,
    target_size: u64,
    user: usize,
    thread: u32,
) -> Option<TraceRing> {
    let s = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    let s = s.as_ref()?;
    let reps = job.repeats.max(1) as u64;
    let expected = match (job.io_count, job.time_s) {
        (Some(n), _) => Some(n.saturating_mul(reps)),
        (None, Some(_)) => None,
        // Covering the file once: at most size / block size I/Os per thread.
        (None, None) => Some((target_size / job.block_size.max(1) + 1).saturating_mul(reps)),
    };
    let cap = match expected {
        Some(n) => n.clamp(1, s.capacity as u64) as usize,
        None => s.capacity,
    };
    let index = user as u32 * job.threads + thread;
    Some(TraceRing::new(
        index,
        path.display().to_string(),
        s.base,
        cap,
    ))
}

/// Hand a worker's ring back after its timed loop.
pub fn finish_ring(ring: TraceRing) {
    let mut s = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = s.as_mut() {
        s.finished.push(ring);
    }
}

/// Switch tracing off and gather every worker's records into one trace, with how many
/// records were overwritten because a ring was full.
pub fn take() -> Option<(Trace, u64)> {
    let session = SESSION.lock().unwrap_or_else(|e| e.into_inner()).take()?;
    let mut trace = Trace::default();
    let mut dropped = 0;
    for ring in session.finished {
        dropped += ring.dropped();
        let file = trace.file_index(ring.path());
        ring.drain_into(file, &mut trace.records);
    }
    trace.renumber();
    Some((trace, dropped))
}
