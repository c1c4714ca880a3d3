//! The per-worker trace ring: a fixed array allocated and touched before the timed loop, so
//! recording a call is a few stores (no allocation, lock or syscall). When full it wraps and
//! keeps the newest records.
//!
//! Every source records into the same ring: a Job's worker (one file, data calls), a
//! workload thread (many files, data and metadata calls) and a replay thread. A ring names
//! its files through a table shared by the threads of one run ([`TraceFiles`]); an entry
//! holds an index into it, so recording never touches a path.

use super::{TraceOp, TraceRecord};
use crate::engine::OpKind;
use std::sync::Arc;
use std::time::Instant;

/// The files a run's rings refer to by index, built before the run (a Job's target, a
/// workload's fileset entries in order, a replayed trace's file table) and shared.
pub type TraceFiles = Arc<Vec<String>>;

/// Bits of [`Entry::file_op`] that hold the op; the file index is above them. Four: there
/// are ten ops (three bits held only eight, so mkdir and readdir came back as read and write
/// of the next file).
const OP_BITS: u32 = 4;
/// Largest file index an entry can hold.
pub const MAX_FILE_INDEX: u32 = u32::MAX >> OP_BITS;

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    offset: u64,
    start_ns: u64,
    end_ns: u64,
    result: i64,
    len: u32,
    /// File index << OP_BITS | op code: packed so that an entry stays 40 bytes.
    file_op: u32,
}

pub struct TraceRing {
    thread: u32,
    files: TraceFiles,
    base: Instant,
    entries: Vec<Entry>,
    /// Next slot to fill.
    pos: usize,
    /// Records ever written (more than the capacity once the ring wrapped).
    total: u64,
}

impl TraceRing {
    pub fn new(thread: u32, files: TraceFiles, base: Instant, capacity: usize) -> TraceRing {
        Self::try_new(thread, files, base, capacity).expect("trace ring allocation")
    }

    /// [`TraceRing::new`], or `None` when the allocator cannot provide `capacity` entries
    /// (a ring sized by the user must not abort the process).
    pub fn try_new(
        thread: u32,
        files: TraceFiles,
        base: Instant,
        capacity: usize,
    ) -> Option<TraceRing> {
        let mut entries = Vec::new();
        entries.try_reserve_exact(capacity.max(1)).ok()?;
        // A non-zero-bytes default writes every entry, so the pages are resident before the
        // clock starts.
        entries.resize(
            capacity.max(1),
            Entry {
                result: -1,
                ..Default::default()
            },
        );
        Some(TraceRing {
            thread,
            files,
            base,
            entries,
            pos: 0,
            total: 0,
        })
    }

    /// Memory one ring entry takes (for the budget checked before a traced run).
    pub const ENTRY_BYTES: u64 = std::mem::size_of::<Entry>() as u64;

    /// Record one completed I/O on file 0 (a Job's worker has one file). Called once per
    /// completion in the worker loop.
    #[inline]
    pub fn record(
        &mut self,
        kind: OpKind,
        offset: u64,
        len: u32,
        start: Instant,
        end: Instant,
        result: i64,
    ) {
        let op = match kind {
            OpKind::Read => TraceOp::Read,
            OpKind::Write => TraceOp::Write,
            OpKind::Trim => TraceOp::Trim,
        };
        self.record_call(op, 0, offset, len, start, end, result);
    }

    /// Record one completed call of any kind on file `file` (an index into the ring's
    /// [`TraceFiles`]; indexes above [`MAX_FILE_INDEX`] are stored as that index).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn record_call(
        &mut self,
        op: TraceOp,
        file: u32,
        offset: u64,
        len: u32,
        start: Instant,
        end: Instant,
        result: i64,
    ) {
        let e = &mut self.entries[self.pos];
        e.offset = offset;
        e.len = len;
        e.file_op = (file.min(MAX_FILE_INDEX) << OP_BITS) | op.code() as u32;
        e.start_ns = start.saturating_duration_since(self.base).as_nanos() as u64;
        e.end_ns = end.saturating_duration_since(self.base).as_nanos() as u64;
        e.result = result;
        self.pos += 1;
        if self.pos == self.entries.len() {
            self.pos = 0;
        }
        self.total += 1;
    }

    /// The file table the entries' indexes refer to.
    pub fn files(&self) -> &TraceFiles {
        &self.files
    }

    pub fn recorded(&self) -> u64 {
        self.total
    }

    /// Records lost because the ring wrapped.
    pub fn dropped(&self) -> u64 {
        self.total.saturating_sub(self.entries.len() as u64)
    }

    /// Append the kept records, oldest first; `file_index` maps the ring's file index to the
    /// trace's.
    pub fn drain_into(self, mut file_index: impl FnMut(u32) -> u32, out: &mut Vec<TraceRecord>) {
        let cap = self.entries.len();
        let kept = (self.total as usize).min(cap);
        let first = if (self.total as usize) > cap {
            self.pos
        } else {
            0
        };
        out.reserve(kept);
        for k in 0..kept {
            let e = self.entries[(first + k) % cap];
            out.push(TraceRecord {
                id: self.total - kept as u64 + k as u64,
                thread: self.thread,
                op: TraceOp::from_code((e.file_op & ((1 << OP_BITS) - 1)) as u8)
                    .unwrap_or(TraceOp::Read),
                file: file_index(e.file_op >> OP_BITS),
                offset: e.offset,
                len: e.len as u64,
                start_ns: e.start_ns,
                end_ns: e.end_ns,
                result: e.result,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_and_keeps_newest_in_order() {
        let base = Instant::now();
        let mut r = TraceRing::new(3, Arc::new(vec!["f".into()]), base, 4);
        for i in 0..6u64 {
            r.record(OpKind::Read, i * 4096, 4096, base, base, 4096);
        }
        assert_eq!(r.dropped(), 2);
        let mut out = Vec::new();
        r.drain_into(|f| f, &mut out);
        let offs: Vec<u64> = out.iter().map(|x| x.offset / 4096).collect();
        assert_eq!(offs, vec![2, 3, 4, 5]);
        assert!(out.iter().all(|x| x.thread == 3));
    }

    /// Not a check: bench/trace-overhead.sh runs it (release, --ignored) to print what one
    /// `record` costs, a figure the machine's load disturbs far less than IOPS.
    #[test]
    #[ignore]
    fn measure_record_cost() {
        let base = Instant::now();
        let mut r = TraceRing::new(0, Arc::new(vec!["f".into()]), base, 1 << 20);
        let n = 20_000_000u64;
        let t0 = Instant::now();
        let mut now = t0;
        for i in 0..n {
            // A fresh clock read every 64 records keeps the conversion honest without
            // timing the clock itself.
            if i % 64 == 0 {
                now = Instant::now();
            }
            r.record(OpKind::Read, (i * 4096) & 0xfff_ffff, 4096, now, now, 4096);
        }
        let ns = t0.elapsed().as_nanos() as f64 / n as f64;
        std::hint::black_box(&r);
        println!("trace ring: {ns:.2} ns per recorded I/O");
    }

    #[test]
    fn an_entry_is_40_bytes() {
        // The documented memory cost of a ring (docs/observe.md).
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }

    #[test]
    fn partial_ring_keeps_all() {
        let base = Instant::now();
        let mut r = TraceRing::new(0, Arc::new(vec!["f".into()]), base, 8);
        r.record(OpKind::Write, 10, 5, base, base, 5);
        let mut out = Vec::new();
        r.drain_into(|f| f + 1, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].op, TraceOp::Write);
        assert_eq!(out[0].file, 1);
    }

    #[test]
    fn every_op_keeps_its_code_and_file() {
        let base = Instant::now();
        let files: TraceFiles = Arc::new((0..20).map(|i| format!("f{i}")).collect());
        let mut r = TraceRing::new(0, files, base, 16);
        let ops: Vec<TraceOp> = (0..=u8::MAX).map_while(TraceOp::from_code).collect();
        assert_eq!(ops.len(), 11);
        for (i, op) in ops.iter().enumerate() {
            r.record_call(*op, i as u32, 0, 0, base, base, 0);
        }
        let mut out = Vec::new();
        r.drain_into(|f| f, &mut out);
        let got: Vec<(TraceOp, u32)> = out.iter().map(|x| (x.op, x.file)).collect();
        let want: Vec<(TraceOp, u32)> = ops
            .iter()
            .enumerate()
            .map(|(i, o)| (*o, i as u32))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn metadata_calls_keep_their_op_and_file() {
        let base = Instant::now();
        let files: TraceFiles = Arc::new((0..5).map(|i| format!("d/f{i}")).collect());
        let mut r = TraceRing::new(2, files, base, 8);
        r.record_call(TraceOp::Open, 4, 0, 0, base, base, 7);
        r.record_call(TraceOp::Fsync, 3, 0, 0, base, base, 0);
        r.record_call(TraceOp::Write, MAX_FILE_INDEX, 8192, 4096, base, base, 4096);
        let mut out = Vec::new();
        r.drain_into(|f| f, &mut out);
        let got: Vec<(TraceOp, u32)> = out.iter().map(|x| (x.op, x.file)).collect();
        assert_eq!(
            got,
            vec![
                (TraceOp::Open, 4),
                (TraceOp::Fsync, 3),
                (TraceOp::Write, MAX_FILE_INDEX)
            ]
        );
        assert_eq!(out[2].offset, 8192);
    }
}
