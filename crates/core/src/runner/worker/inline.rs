//! The timed loop for one synchronous I/O at a time (`Core::drive_inline`): the run's most
//! common case and the one whose measurement costs the most in proportion (a 4 KiB
//! page-cache read takes under 1 us).
//!
//! At queue depth 1 on an engine that completes inline, the general loop's slot table,
//! submission batch and completion list each hold one element: every I/O still pays for
//! pushing, popping and copying them (~15-20 ns of a ~830 ns read, docs/per-io-cost.md).
//! This loop keeps what is measured identical (the same op generator, routing, engine call,
//! two clock readings around each I/O, the same histogram and counters, the same stop
//! conditions and failure words) and drops the bookkeeping that only a deeper queue needs.
//! It is taken only when nothing else is on (no rate limit, no trace); every other run goes
//! through `Core::drive`. With `--verify` it is compiled a second time with the same hooks
//! as the general loop (`VERIFY`: fill before a write, check after a read, the verify step
//! when due), so that verification is measured against the loop a run without it takes.
//! The worker's unit tests run both loops on the same work and compare what they counted,
//! what they verified and how they fail (`worker::tests::the_inline_loop_*`).

use super::drive::{io_error, routed_op};
use super::*;
use crate::engine::sync::SyncEngine;

impl Core {
    /// Whether [`Core::drive_inline`] may run this worker: one I/O at a time, no schedule,
    /// no trace ring.
    pub(super) fn inline_ok(&self) -> bool {
        self.depth == 1 && self.pacer.is_none() && self.trace.is_none()
    }

    /// The timed loop at queue depth 1 on the synchronous engine (see the module docs).
    pub(super) fn drive_inline(
        &mut self,
        engine: &mut SyncEngine,
        stop: &AtomicBool,
        interrupt: &AtomicBool,
    ) -> ThreadOutcome {
        debug_assert!(self.inline_ok());
        self.with_verify(|core, verify| {
            if verify {
                core.inline_loop::<true>(engine, stop, interrupt)
            } else {
                core.inline_loop::<false>(engine, stop, interrupt)
            }
        })
    }

    /// The loop itself; `VERIFY` is whether `self.verify` holds a checker (as in `drive`).
    fn inline_loop<const VERIFY: bool>(
        &mut self,
        engine: &mut SyncEngine,
        stop: &AtomicBool,
        interrupt: &AtomicBool,
    ) -> ThreadOutcome {
        let mut checker = if VERIFY { self.verify.take() } else { None };
        // --verify: the next op drawn one early, as in `drive` (its table word prefetched).
        let mut ahead: Option<(OpKind, u64, u32)> = None;
        let mut stats = Stats::default();
        let mut failure = None;
        let route = self.route;
        let mut sys = self.sys;
        let mut ops = 0u64;
        self.ready_stats(&mut stats, false);
        let mut usage0 = cpu::thread_usage();
        let clock = self.clock;
        let mut t0 = clock.now_ns();
        let (mut ramp_end, deadline) = self.window(t0);
        // --ramp-bytes: what is left of the warm-up (0: none, or over).
        let mut ramp_left = self.ramp_bytes;
        // The deadline, the end of the warm-up and the watcher's events (live counters,
        // interval boundaries) share one compare per I/O: the next of them (u64::MAX: none).
        let mut roll = std::mem::take(&mut self.roll);
        let mut think = self.think;
        let mut stop_at = deadline.unwrap_or(u64::MAX);
        // --fsync-every / --fdatasync-every: writes issued since the last sync.
        let sync_every = self.sync_every;
        let mut unsynced_writes = 0u64;
        let mut next_event = stop_at
            .min(roll.start(t0))
            .min(ramp_end.unwrap_or(u64::MAX));
        loop {
            let next = if VERIFY {
                ahead.take().or_else(|| self.gen.next_op())
            } else {
                self.gen.next_op()
            };
            let Some((kind, offset, len)) = next else {
                break;
            };
            // --fsync-every / --fdatasync-every: as in fio, the sync goes before the next op
            // once N writes were issued (none after the last op).
            if let Some(s) = sync_every.filter(|s| unsynced_writes >= s.writes) {
                unsynced_writes = 0;
                if let Err(f) = self.sync_step(s, engine, &mut stats, &mut sys) {
                    failure = Some(f);
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
            }
            unsynced_writes += u64::from(kind == OpKind::Write);
            let op = routed_op(route, &mut stats, kind, offset, len, 0);
            if VERIFY {
                if let Some(c) = checker.as_mut() {
                    c.issue(&op, engine.buffers().slot_mut(0));
                    ahead = self.gen.next_op();
                    if let Some((_, o, _)) = ahead {
                        c.prefetch(o);
                    }
                }
            }
            let at = clock.now_ns();
            let result = engine.execute(&op, &mut sys);
            let mut now = clock.now_ns();
            ops += 1;
            if VERIFY {
                if let Some(c) = checker.as_mut() {
                    c.complete(&op, engine.buffers().slot(0), result == op.len as i64);
                }
            }
            if result <= 0 && (result < 0 || op.len > 0) {
                stats.errors += 1;
                failure = Some(self.failure(Some(op.offset), io_error(op.kind, result)));
                stop.store(true, Ordering::Relaxed);
                break;
            }
            // One record per I/O, in the histogram of its direction.
            let lat = now.saturating_sub(at);
            if !stats.by_size.is_empty() {
                stats.record_size(kind, len, result as u64, lat);
            }
            match kind {
                OpKind::Read => {
                    stats.read_lat.record(lat);
                    stats.read_ops += 1;
                    stats.read_bytes += result as u64;
                }
                OpKind::Write => {
                    stats.write_lat.record(lat);
                    stats.write_ops += 1;
                    stats.write_bytes += result as u64;
                }
                OpKind::Trim => {
                    stats.trim_lat.record(lat);
                    stats.trim_ops += 1;
                    stats.trim_bytes += result as u64;
                }
            }
            if ramp_left > 0 {
                ramp_left = ramp_left.saturating_sub(result as u64);
                if ramp_left == 0 {
                    // This I/O moved the warm-up's last byte: the ones after it count.
                    self.end_warm_up(&mut stats, &mut sys, false);
                    (t0, usage0, ops) = (now, cpu::thread_usage(), 0);
                    stop_at = self.deadline_from(now).unwrap_or(u64::MAX);
                    next_event = stop_at.min(roll.restart(now));
                }
            }
            if VERIFY {
                if let Some(c) = checker.as_mut().filter(|c| c.step_due()) {
                    // Nothing in flight: the step (fsync, journal, backlog) runs between I/Os.
                    if let Err(f) = self.verify_step(c, engine, &mut sys, 0, &[]) {
                        failure = Some(f);
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                }
            }
            if let Some(t) = think.as_mut() {
                if t.count() {
                    now = t.pause(clock, now, stop_at, stop, interrupt);
                }
            }
            if stop.load(Ordering::Relaxed) || interrupt.load(Ordering::Relaxed) {
                break;
            }
            if now >= next_event {
                if now >= stop_at {
                    break;
                }
                if ramp_end.is_some_and(|r| now >= r) {
                    ramp_end = None;
                    self.end_warm_up(&mut stats, &mut sys, false);
                    (t0, usage0, ops) = (now, cpu::thread_usage(), 0);
                    // Seen a little after it was due: --time counts from now.
                    stop_at = self.deadline_from(now).unwrap_or(u64::MAX);
                    next_event = stop_at.min(roll.restart(now));
                } else {
                    next_event = stop_at
                        .min(roll.tick(now, &stats))
                        .min(ramp_end.unwrap_or(u64::MAX));
                    if let Some(m) = roll.take_missed() {
                        // A cycle fell below --rate-min / --rate-iops-min: the run fails.
                        failure = Some(self.failure(None, m.message()));
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                }
            }
        }
        if ramp_left > 0 {
            // Ended inside a --ramp-bytes warm-up: nothing was measured.
            self.end_warm_up(&mut stats, &mut sys, false);
            (usage0, ops) = (cpu::thread_usage(), 0);
            t0 = clock.now_ns();
        }
        // Every I/O was submitted with none other in flight.
        stats.inflight[inflight_bucket(1)] += ops;
        let mut out = self.finish::<_, VERIFY>(
            engine, stats, failure, sys, usage0, t0, None, checker, interrupt,
        );
        out.intervals = roll.finish(out.stats.loop_end_ns, &out.stats);
        out
    }
}
