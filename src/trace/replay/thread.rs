//! One replay thread: prepares (buffer, samples, trace ring) before the start gate, then
//! issues its steps in order, measured.

use super::plan::ThreadPlan;
use crate::engine::sync::SyncEngine;
use crate::engine::{BufferPool, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::job::Route;
use crate::runner::drive;
use crate::runner::IoFailure;
use crate::stats::{cpu, inflight_bucket, Stats, SyscallCounts};
use crate::trace::TraceOp;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The replayed call kinds, in the order of the Result's groups.
pub(super) const CALLS: [TraceOp; 4] = [
    TraceOp::Read,
    TraceOp::Write,
    TraceOp::Fsync,
    TraceOp::Fdatasync,
];

pub(super) fn call_index(op: TraceOp) -> Option<usize> {
    CALLS.iter().position(|c| *c == op)
}

/// One call kind's samples in one worker.
#[derive(Default)]
pub(super) struct CallTally {
    pub(super) lat: Vec<u64>,
    /// From the intended issue time; empty when untimed (then equal to `lat`).
    pub(super) sched: Vec<u64>,
    pub(super) bytes: u64,
}

/// What a worker measured, without histograms: latency samples (per call kind) are turned
/// into histograms after the run, once per reported thread and once per kind.
pub(super) struct Tally {
    pub(super) stats: Counters,
    pub(super) calls: [CallTally; 4],
    pub(super) failure: Option<IoFailure>,
}

/// A worker's counters (a [`Stats`] without its histograms, which take ~0.3 MiB each).
#[derive(Default)]
pub(super) struct Counters {
    pub(super) read_ops: u64,
    pub(super) write_ops: u64,
    pub(super) read_bytes: u64,
    pub(super) write_bytes: u64,
    pub(super) errors: u64,
    pub(super) buffered_fallback_ops: u64,
    pub(super) inflight: [u64; 8],
    pub(super) elapsed_s: f64,
    pub(super) usage: cpu::Usage,
    pub(super) syscalls: SyscallCounts,
}

impl Counters {
    pub(super) fn add_to(&self, s: &mut Stats) {
        s.read_ops += self.read_ops;
        s.write_ops += self.write_ops;
        s.read_bytes += self.read_bytes;
        s.write_bytes += self.write_bytes;
        s.errors += self.errors;
        s.buffered_fallback_ops += self.buffered_fallback_ops;
        for (a, b) in s.inflight.iter_mut().zip(self.inflight.iter()) {
            *a += b;
        }
        s.usage += &self.usage;
        s.syscalls += &self.syscalls;
        // Workers run side by side: a group's wall time is its longest worker's.
        s.elapsed_s = s.elapsed_s.max(self.elapsed_s);
    }
}

pub(super) fn replay_thread(
    index: u32,
    plan: ThreadPlan,
    files: Vec<FileHandles>,
    paths: &[PathBuf],
    speed: Option<f64>,
    direct_align: Option<u64>,
    gate: &drive::Gate,
) -> Tally {
    let user = plan.user;
    let fail = |file: u32, offset: Option<u64>, message: String| IoFailure {
        user,
        thread: index,
        path: paths[plan.files[file as usize] as usize]
            .display()
            .to_string(),
        offset,
        message,
    };
    let mut sys = SyscallCounts::default();
    let fds: Vec<i32> = files.iter().map(|f| f.fds[0]).collect();
    // This worker's own sizes: a buffer as large as its largest call, a sample per call.
    let pool = BufferPool::new(1, (plan.max_len as usize).max(1), 0xfeed ^ index as u64);
    // A sample per call, per call kind, reserved now so the timed loop never allocates.
    let mut calls: [CallTally; 4] = Default::default();
    let mut want = [0usize; 4];
    for s in &plan.steps {
        if let Some(k) = call_index(s.op) {
            want[k] += 1;
        }
    }
    let reserved = calls.iter_mut().zip(want).try_for_each(|(c, n)| {
        c.lat.try_reserve_exact(n)?;
        if speed.is_some() {
            c.sched.try_reserve_exact(n)?;
        }
        Ok::<(), std::collections::TryReserveError>(())
    });
    let empty = |failure| Tally {
        stats: Counters::default(),
        calls: Default::default(),
        failure,
    };
    let mut engine = match (pool, reserved) {
        (Ok(pool), Ok(())) => SyncEngine::new(files, pool),
        (Err(e), _) => {
            gate.arrive_and_wait();
            return empty(Some(fail(0, None, format!("allocating buffers: {e}"))));
        }
        (_, Err(_)) => {
            gate.arrive_and_wait();
            return empty(Some(fail(
                0,
                None,
                "out of memory reserving latency samples".into(),
            )));
        }
    };
    let mut done: Vec<Completion> = Vec::with_capacity(2);
    let mut stats = Counters::default();
    let mut failure = None;
    if !gate.arrive_and_wait() {
        return empty(None);
    }
    let usage0 = cpu::thread_usage();
    let t0 = Instant::now();
    for s in &plan.steps {
        // Ctrl-C ends the replay with what was done (a flag read, no syscall).
        if crate::runner::signal::interrupted() {
            break;
        }
        let intended = match speed {
            Some(sp) => {
                let at = t0 + Duration::from_nanos((s.start_ns as f64 / sp) as u64);
                // Sleep in slices so a long traced pause still answers Ctrl-C.
                loop {
                    let now = Instant::now();
                    if at <= now || crate::runner::signal::interrupted() {
                        break;
                    }
                    std::thread::sleep((at - now).min(Duration::from_millis(100)));
                }
                at
            }
            None => Instant::now(),
        };
        if crate::runner::signal::interrupted() {
            break;
        }
        let start = Instant::now();
        let (result, kind) = match s.op {
            TraceOp::Read | TraceOp::Write => {
                let kind = if s.op == TraceOp::Read {
                    OpKind::Read
                } else {
                    OpKind::Write
                };
                let route = match direct_align {
                    Some(a) if s.offset.is_multiple_of(a) && (s.len as u64).is_multiple_of(a) => {
                        Route::Direct
                    }
                    Some(_) => {
                        stats.buffered_fallback_ops += 1;
                        Route::Fallback
                    }
                    None => Route::Buffered,
                };
                let op = IoOp {
                    kind,
                    file: s.file,
                    route,
                    offset: s.offset,
                    len: s.len,
                    slot: 0,
                };
                stats.inflight[inflight_bucket(1)] += 1;
                let r = engine
                    .submit(&[op], &mut sys)
                    .and_then(|_| engine.reap(1, &mut done, &mut sys));
                let res = match r {
                    Ok(_) => done
                        .first()
                        .map(|c| c.result)
                        .unwrap_or(-(libc::EIO as i64)),
                    Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
                };
                done.clear();
                (res, Some(kind))
            }
            TraceOp::Fsync | TraceOp::Fdatasync => {
                let fd = fds[s.file as usize];
                // SAFETY: fd is open for the whole replay (closed after every worker ends).
                let rc = unsafe {
                    if s.op == TraceOp::Fsync {
                        sys.fsync += 1;
                        libc::fsync(fd)
                    } else {
                        sys.fdatasync += 1;
                        libc::fdatasync(fd)
                    }
                };
                let res = if rc == 0 {
                    0
                } else {
                    -(std::io::Error::last_os_error()
                        .raw_os_error()
                        .unwrap_or(libc::EIO) as i64)
                };
                (res, None)
            }
            _ => continue,
        };
        let end = Instant::now();
        if result < 0 {
            stats.errors += 1;
            let err = std::io::Error::from_raw_os_error((-result) as i32);
            failure = Some(fail(
                s.file,
                Some(s.offset),
                format!("{} failed: {err}", s.op.name()),
            ));
            break;
        }
        if let Some(c) = call_index(s.op).map(|k| &mut calls[k]) {
            // Reserved above: these pushes never allocate.
            c.lat.push(end.duration_since(start).as_nanos() as u64);
            if speed.is_some() {
                c.sched.push(end.duration_since(intended).as_nanos() as u64);
            }
            if kind.is_some() {
                c.bytes += result as u64;
            }
        }
        if let Some(kind) = kind {
            match kind {
                OpKind::Read => {
                    stats.read_ops += 1;
                    stats.read_bytes += result as u64;
                }
                OpKind::Write => {
                    stats.write_ops += 1;
                    stats.write_bytes += result as u64;
                }
            }
        }
    }
    stats.elapsed_s = t0.elapsed().as_secs_f64();
    stats.usage = cpu::thread_usage().since(&usage0);
    stats.syscalls = sys;
    Tally {
        stats,
        calls,
        failure,
    }
}
