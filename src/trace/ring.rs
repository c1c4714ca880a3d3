//! The per-worker trace ring: a fixed array allocated and touched before the timed loop, so
//! recording an I/O is a few stores (no allocation, lock or syscall). When full it wraps and
//! keeps the newest records.

use super::{TraceOp, TraceRecord};
use crate::engine::OpKind;
use std::time::Instant;

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    offset: u64,
    start_ns: u64,
    end_ns: u64,
    result: i64,
    len: u32,
    write: bool,
}

pub struct TraceRing {
    thread: u32,
    path: String,
    base: Instant,
    entries: Vec<Entry>,
    /// Next slot to fill.
    pos: usize,
    /// Records ever written (more than the capacity once the ring wrapped).
    total: u64,
}

impl TraceRing {
    pub fn new(thread: u32, path: String, base: Instant, capacity: usize) -> TraceRing {
        Self::try_new(thread, path, base, capacity).expect("trace ring allocation")
    }

    /// [`TraceRing::new`], or `None` when the allocator cannot provide `capacity` entries
    /// (a ring sized by the user must not abort the process).
    pub fn try_new(thread: u32, path: String, base: Instant, capacity: usize) -> Option<TraceRing> {
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
            path,
            base,
            entries,
            pos: 0,
            total: 0,
        })
    }

    /// Memory one ring entry takes (for the budget checked before a traced run).
    pub const ENTRY_BYTES: u64 = std::mem::size_of::<Entry>() as u64;

    /// Record one completed I/O. Called once per completion in the worker loop.
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
        let e = &mut self.entries[self.pos];
        e.offset = offset;
        e.len = len;
        e.write = kind == OpKind::Write;
        e.start_ns = start.saturating_duration_since(self.base).as_nanos() as u64;
        e.end_ns = end.saturating_duration_since(self.base).as_nanos() as u64;
        e.result = result;
        self.pos += 1;
        if self.pos == self.entries.len() {
            self.pos = 0;
        }
        self.total += 1;
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn recorded(&self) -> u64 {
        self.total
    }

    /// Records lost because the ring wrapped.
    pub fn dropped(&self) -> u64 {
        self.total.saturating_sub(self.entries.len() as u64)
    }

    /// Append the kept records, oldest first, as trace records of file index `file`.
    pub fn drain_into(self, file: u32, out: &mut Vec<TraceRecord>) {
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
                op: if e.write {
                    TraceOp::Write
                } else {
                    TraceOp::Read
                },
                file,
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
        let mut r = TraceRing::new(3, "f".into(), base, 4);
        for i in 0..6u64 {
            r.record(OpKind::Read, i * 4096, 4096, base, base, 4096);
        }
        assert_eq!(r.dropped(), 2);
        let mut out = Vec::new();
        r.drain_into(0, &mut out);
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
        let mut r = TraceRing::new(0, "f".into(), base, 1 << 20);
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
        let mut r = TraceRing::new(0, "f".into(), base, 8);
        r.record(OpKind::Write, 10, 5, base, base, 5);
        let mut out = Vec::new();
        r.drain_into(1, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].op, TraceOp::Write);
        assert_eq!(out[0].file, 1);
    }
}
