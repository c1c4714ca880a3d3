//! The timed loop (`Core::drive`) and what it calls out of line: the trace record and the
//! words of a failed I/O. With `--verify` the same loop is compiled a second time with the
//! verification hooks in (`VERIFY`); without it every hook folds away.

use super::*;

impl Core {
    /// The timed loop. Starts when called (the barrier has released). `PACED` is whether the
    /// worker has a rate limit (`self.pacer`).
    pub(super) fn drive<E: Engine + ?Sized, const PACED: bool>(
        &mut self,
        engine: &mut E,
        stop: &AtomicBool,
        interrupt: &AtomicBool,
    ) -> ThreadOutcome {
        self.with_verify(|core, verify| {
            if verify {
                core.drive_loop::<E, PACED, true>(engine, stop, interrupt)
            } else {
                core.drive_loop::<E, PACED, false>(engine, stop, interrupt)
            }
        })
    }

    /// Run a timed loop (`run(core, VERIFY)`) with the verification hooks in when the run
    /// verifies and writes. A verifying run that writes nothing has no block of its own to
    /// check: it runs the plain loop and says so (0 blocks checked).
    pub(super) fn with_verify(
        &mut self,
        run: impl FnOnce(&mut Self, bool) -> ThreadOutcome,
    ) -> ThreadOutcome {
        match self.verify.as_ref().map(|c| c.writes()) {
            Some(true) => run(self, true),
            Some(false) => {
                let mut out = run(self, false);
                if let Some(mut c) = self.verify.take() {
                    c.nothing_written();
                    out.verify = Some(c.report);
                }
                out
            }
            None => run(self, false),
        }
    }

    /// The loop itself; `VERIFY` is whether `self.verify` holds a checker (see verify.rs).
    fn drive_loop<E: Engine + ?Sized, const PACED: bool, const VERIFY: bool>(
        &mut self,
        engine: &mut E,
        stop: &AtomicBool,
        interrupt: &AtomicBool,
    ) -> ThreadOutcome {
        // Taken out for the loop's life (so it borrows apart from `self`); None without
        // --verify, and every `if VERIFY` below is then compiled out.
        let mut checker = if VERIFY { self.verify.take() } else { None };
        let mut stats = Stats::default();
        let mut failure = None;
        let depth = self.depth;
        let route = self.route;
        // Preallocated: nothing below grows.
        let mut free: Vec<u32> = (0..depth as u32).rev().collect();
        let mut slot_op: Vec<IoOp> = vec![
            IoOp {
                kind: OpKind::Read,
                file: 0,
                route: Route::Buffered,
                offset: 0,
                len: 0,
                slot: 0,
            };
            depth
        ];
        // Clock readings (`clock`, ns) of each slot's submission and, under a rate limit, of
        // its slot in the schedule.
        let mut submitted_at: Vec<u64> = vec![0; depth];
        let mut intended_at: Vec<u64> = vec![0; depth];
        // None is known at compile time in the unpaced loop: every schedule branch folds away.
        let mut pacer = if PACED { self.pacer } else { None };
        let mut batch: Vec<IoOp> = Vec::with_capacity(depth);
        let mut done: Vec<Completion> = Vec::with_capacity(depth * 2);
        let mut sys = self.sys;
        let mut inflight = 0usize;
        let mut issuing = true;
        // Stopped (error, stop flag, Ctrl-C, deadline): ops handed back by the engine are dropped,
        // where running out of ops (`issuing` false alone) still submits them.
        let mut halted = false;
        let mut trace = self.trace.take();
        // --verify: the next op, drawn one early (same sequence) so that its block's table
        // word can be prefetched; dropped unissued when the loop stops.
        let mut ahead: Option<(OpKind, u64, u32)> = None;

        // Histograms are allocated here, untimed, so recording never allocates (one per
        // direction the worker issues); the schedule latency only exists under a rate limit
        // (otherwise it equals the service latency).
        self.ready_stats(&mut stats, pacer.is_some());
        let mut usage0 = cpu::thread_usage();
        let clock = self.clock;
        let mut t0 = clock.now_ns();
        // Trace records take `Instant`s: the loop's clock readings are placed on that scale
        // through one pair of readings taken here (both on the CLOCK_MONOTONIC scale; the
        // pair is ~20 ns apart, so every record of this worker is shifted by at most that).
        let trace_base = trace.as_ref().map(|_| (Instant::now(), clock.now_ns()));
        let (mut ramp_end, mut deadline) = self.window(t0);
        // --ramp-bytes: what is left of the warm-up (0: none, or over).
        let mut ramp_left = self.ramp_bytes;
        if let Some(p) = pacer.as_mut() {
            p.start(t0);
        }
        let mut roll = std::mem::take(&mut self.roll);
        // The end of the warm-up is one of the loop's events.
        let mut next_event = roll.start(t0).min(ramp_end.unwrap_or(u64::MAX));
        let mut now = t0;
        // --think: once due, nothing more is issued until the queue has drained and the
        // thread has paused.
        let mut think = self.think;
        // --fsync-every / --fdatasync-every: writes issued since the last sync. Once due, the
        // next op waits (in `ahead`) until the I/Os in flight have completed and the sync is
        // done (fio drains the queue before a sync too). As in fio, the sync goes before the
        // next op: after the last op there is none (--fsync makes the end durable).
        let sync_every = self.sync_every;
        let mut unsynced_writes = 0u64;
        loop {
            if issuing {
                while inflight + batch.len() < depth {
                    if pacer.is_some_and(|p| !p.is_due(now)) {
                        break;
                    }
                    if think.is_some_and(|t| t.due()) {
                        break;
                    }
                    // A full verify backlog pauses issuing until it has been checked.
                    if VERIFY && checker.as_ref().is_some_and(|c| c.backlog_due()) {
                        break;
                    }
                    let next = if VERIFY || ahead.is_some() {
                        ahead.take().or_else(|| self.gen.next_op())
                    } else if let Some(p) = pacer.as_ref() {
                        self.gen.next_op_steered(|k| p.steer(k, now))
                    } else {
                        self.gen.next_op()
                    };
                    let Some((kind, offset, len)) = next else {
                        issuing = false;
                        break;
                    };
                    if let Some(s) = sync_every.filter(|s| unsynced_writes >= s.writes) {
                        if inflight > 0 || !batch.is_empty() {
                            ahead = Some((kind, offset, len));
                            break;
                        }
                        unsynced_writes = 0;
                        match self.sync_step(s, engine, &mut stats, &mut sys) {
                            Ok(t) => now = t,
                            Err(f) => {
                                failure.get_or_insert(f);
                                stop.store(true, Ordering::Relaxed);
                                issuing = false;
                                halted = true;
                                break;
                            }
                        }
                    }
                    // inflight + batch.len() < depth, so a slot is free.
                    let Some(slot) = free.pop() else { break };
                    let op = routed_op(route, &mut stats, kind, offset, len, slot);
                    slot_op[slot as usize] = op;
                    unsynced_writes += u64::from(kind == OpKind::Write);
                    if VERIFY {
                        if let Some(c) = checker.as_mut() {
                            c.issue(&op, engine.buffers().slot_mut(slot as usize));
                            // One op ahead, so its table word arrives while this one runs.
                            ahead = self.gen.next_op();
                            if let Some((_, o, _)) = ahead {
                                c.prefetch(o);
                            }
                        }
                    }
                    if let Some(p) = pacer.as_mut() {
                        intended_at[slot as usize] = p.take(kind, now);
                    }
                    batch.push(op);
                }
            }
            if halted && !batch.is_empty() {
                // Stopped with ops an engine handed back still waiting: they never started.
                for op in &batch {
                    free.push(op.slot);
                    if VERIFY {
                        if let Some(c) = checker.as_mut() {
                            c.abandon(op);
                        }
                    }
                }
                batch.clear();
            }
            if !batch.is_empty() {
                let now = clock.now_ns();
                for op in &batch {
                    submitted_at[op.slot as usize] = now;
                }
                match engine.submit(&batch, &mut sys) {
                    Ok(n) => {
                        for i in 0..n {
                            stats.inflight[inflight_bucket((inflight + i + 1) as u32)] += 1;
                        }
                        inflight += n;
                        if n == batch.len() {
                            batch.clear();
                        } else if n == 0 && inflight == 0 {
                            // Nothing in flight and nothing taken: waiting cannot help.
                            let at = batch.first().map(|op| op.offset);
                            failure = Some(self.failure(
                                at,
                                format!(
                                    "submit: the engine took none of {} I/Os with none in flight",
                                    batch.len()
                                ),
                            ));
                            stop.store(true, Ordering::Relaxed);
                            issuing = false;
                            halted = true;
                        } else {
                            // Ops the engine did not take (a full submission queue) keep
                            // their slots and go first in the next submit: an I/O drawn from
                            // the generator is issued, never dropped.
                            batch.drain(..n);
                        }
                    }
                    Err(e) => {
                        let at = batch.first().map(|op| op.offset);
                        failure = Some(self.failure(at, format!("submit: {e}")));
                        stop.store(true, Ordering::Relaxed);
                        issuing = false;
                        halted = true;
                    }
                }
                if halted {
                    for op in &batch {
                        free.push(op.slot);
                        if VERIFY {
                            if let Some(c) = checker.as_mut() {
                                c.abandon(op);
                            }
                        }
                    }
                    batch.clear();
                }
            }
            // Under a rate limit, wait for completions only until the next I/O is due
            // (bounded so that stop, Ctrl-C and the deadline are noticed promptly).
            let wait = match pacer {
                Some(p) if issuing => {
                    let mut w = p.until_due(now).min(Duration::from_millis(100));
                    if let Some(d) = deadline {
                        w = w.min(Duration::from_nanos(d.saturating_sub(now)));
                    }
                    Some(w).filter(|w| !w.is_zero() || inflight == 0)
                }
                _ => None,
            };
            if inflight == 0 && wait.is_none() {
                break;
            }
            let reaped = match wait {
                Some(w) => engine.reap_timeout(w, &mut done, &mut sys),
                None => engine.reap(1, &mut done, &mut sys),
            };
            if let Err(e) = reaped {
                failure = Some(self.failure(None, format!("reap: {e}")));
                stop.store(true, Ordering::Relaxed);
                break;
            }
            now = clock.now_ns();
            for c in done.iter() {
                let op = slot_op[c.slot as usize];
                let at = submitted_at[c.slot as usize];
                inflight -= 1;
                free.push(c.slot);
                if let (Some(ring), Some(base)) = (trace.as_mut(), trace_base) {
                    trace_record(ring, base, &op, at, now, c.result);
                }
                if VERIFY {
                    if let Some(v) = checker.as_mut() {
                        let whole = c.result == op.len as i64;
                        v.complete(&op, engine.buffers().slot(c.slot as usize), whole);
                    }
                }
                if c.result <= 0 && (c.result < 0 || op.len > 0) {
                    stats.errors += 1;
                    if failure.is_none() {
                        failure = Some(self.failure(Some(op.offset), io_error(op.kind, c.result)));
                    }
                    stop.store(true, Ordering::Relaxed);
                    issuing = false;
                    halted = true;
                    continue;
                }
                // One record per I/O, in the histogram of its direction (and under a rate
                // limit one in that direction's schedule histogram).
                let lat = now.saturating_sub(at);
                if !stats.by_size.is_empty() {
                    stats.record_size(op.kind, op.len, c.result as u64, lat);
                }
                match op.kind {
                    OpKind::Read => {
                        if pacer.is_some() {
                            stats
                                .sched_read_lat
                                .record(now.saturating_sub(intended_at[c.slot as usize]));
                        }
                        stats.read_lat.record(lat);
                        stats.read_ops += 1;
                        stats.read_bytes += c.result as u64;
                    }
                    OpKind::Write => {
                        if pacer.is_some() {
                            stats
                                .sched_write_lat
                                .record(now.saturating_sub(intended_at[c.slot as usize]));
                        }
                        stats.write_lat.record(lat);
                        stats.write_ops += 1;
                        stats.write_bytes += c.result as u64;
                    }
                    OpKind::Trim => {
                        if pacer.is_some() {
                            stats
                                .sched_trim_lat
                                .record(now.saturating_sub(intended_at[c.slot as usize]));
                        }
                        stats.trim_lat.record(lat);
                        stats.trim_ops += 1;
                        stats.trim_bytes += c.result as u64;
                    }
                }
                if let Some(t) = think.as_mut() {
                    t.count();
                }
                if ramp_left > 0 {
                    ramp_left = ramp_left.saturating_sub(c.result as u64);
                    if ramp_left == 0 {
                        // This I/O moved the warm-up's last byte: the ones after it count.
                        self.end_warm_up(&mut stats, &mut sys, pacer.is_some());
                        (t0, usage0) = (now, cpu::thread_usage());
                        deadline = self.deadline_from(now);
                        next_event = roll.restart(now);
                    }
                }
            }
            done.clear();
            if let Some(t) = think.as_mut() {
                if t.due() && issuing && inflight == 0 && batch.is_empty() {
                    now = t.pause(clock, now, deadline.unwrap_or(u64::MAX), stop, interrupt);
                }
            }
            if now >= next_event {
                if ramp_end.is_some_and(|r| now >= r) {
                    ramp_end = None;
                    self.end_warm_up(&mut stats, &mut sys, pacer.is_some());
                    (t0, usage0) = (now, cpu::thread_usage());
                    // Seen a little after it was due: --time counts from now.
                    deadline = self.deadline_from(now);
                    next_event = roll.restart(now);
                } else {
                    next_event = roll.tick(now, &stats).min(ramp_end.unwrap_or(u64::MAX));
                    if let Some(m) = roll.take_missed() {
                        // A cycle fell below --rate-min / --rate-iops-min: the run fails.
                        failure.get_or_insert_with(|| self.failure(None, m.message()));
                        stop.store(true, Ordering::Relaxed);
                        issuing = false;
                        halted = true;
                    }
                }
            }
            if VERIFY {
                if let Some(c) = checker.as_mut().filter(|c| c.step_due()) {
                    if let Err(f) = self.verify_step(c, engine, &mut sys, inflight, &batch) {
                        if failure.is_none() {
                            failure = Some(f);
                        }
                        stop.store(true, Ordering::Relaxed);
                        issuing = false;
                        halted = true;
                    }
                }
            }
            if issuing
                && (stop.load(Ordering::Relaxed)
                    || interrupt.load(Ordering::Relaxed)
                    || deadline.is_some_and(|d| now >= d))
            {
                issuing = false;
                halted = true;
            }
        }
        if ramp_left > 0 {
            // Ended inside a --ramp-bytes warm-up: nothing was measured.
            self.end_warm_up(&mut stats, &mut sys, pacer.is_some());
            (t0, usage0) = (now, cpu::thread_usage());
        }
        let mut out = self.finish::<E, VERIFY>(
            engine, stats, failure, sys, usage0, t0, trace, checker, interrupt,
        );
        out.intervals = roll.finish(now.max(t0), &out.stats);
        out
    }

    /// The timed window of a loop that starts at clock reading `t0`: when its warm-up
    /// (`--ramp`) ends, and its deadline (`--time` counts after the warm-up).
    pub(super) fn window(&self, t0: u64) -> (Option<u64>, Option<u64>) {
        let ramp_end = self.ramp.map(|d| t0.saturating_add(nanos(d)));
        if self.ramp_bytes > 0 {
            // A warm-up by bytes (`--ramp-bytes`) has no end time: the deadline is set
            // when its last byte has moved.
            return (ramp_end, None);
        }
        (ramp_end, self.deadline_from(ramp_end.unwrap_or(t0)))
    }

    /// The deadline of a measured window that starts at clock reading `start`.
    pub(super) fn deadline_from(&self, start: u64) -> Option<u64> {
        self.deadline.map(|d| start.saturating_add(nanos(d)))
    }

    /// The warm-up is over: what the loop counted so far is left out (fresh counters and
    /// histograms, the system calls back to the preparation's). Once per run, untimed.
    #[cold]
    #[inline(never)]
    pub(super) fn end_warm_up(&self, stats: &mut Stats, sys: &mut SyscallCounts, paced: bool) {
        *stats = Stats::default();
        self.ready_stats(stats, paced);
        *sys = self.sys;
    }

    /// Create, before timing, every histogram the loop may record into: those of the
    /// directions the worker issues (and under a rate limit their schedule histograms), and
    /// with `--bssplit` those of the size classes.
    pub(super) fn ready_stats(&self, stats: &mut Stats, paced: bool) {
        let (reads, writes, trims) = self.gen.directions();
        stats.ready_lat(reads, writes, self.sync_every.is_some());
        if paced {
            stats.ready_sched_lat(reads, writes, false);
        }
        if trims {
            stats.trim_lat.ready();
            if paced {
                stats.sched_trim_lat.ready();
            }
        }
        if let Some(sizes) = self.gen.size_classes() {
            stats.ready_sizes(sizes);
        }
    }

    /// What every timed loop does when it ends: the final fsync (when asked, and only after
    /// a clean run), the elapsed and CPU time, the syscall counts, the trace ring and, with
    /// `--verify`, the journal's last batch and the untimed read-back.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish<E: Engine + ?Sized, const VERIFY: bool>(
        &self,
        engine: &mut E,
        mut stats: Stats,
        mut failure: Option<IoFailure>,
        mut sys: SyscallCounts,
        usage0: cpu::Usage,
        t0: u64,
        trace: Option<crate::trace::TraceRing>,
        mut checker: Option<Box<verify::Checker>>,
        interrupt: &AtomicBool,
    ) -> ThreadOutcome {
        if self.fsync && failure.is_none() {
            let flushed = engine.flush(&mut sys);
            if let Err(e) = &flushed {
                failure = Some(self.failure(None, format!("fsync failed: {e}")));
            }
            if VERIFY {
                if let Some(c) = checker.as_mut() {
                    if let Err(f) = c.synced(flushed.is_ok()) {
                        failure.get_or_insert(f);
                    }
                }
            }
        }
        if VERIFY {
            if let Some(c) = checker.as_mut() {
                if let Err(f) = c.journal_flush() {
                    failure.get_or_insert(f);
                }
            }
        }
        let end = self.clock.now_ns();
        stats.elapsed_s = end.saturating_sub(t0) as f64 / 1e9;
        stats.loop_start_ns = t0;
        stats.loop_end_ns = end;
        stats.usage = cpu::thread_usage().since(&usage0);
        stats.syscalls = sys;
        if let Some(ring) = trace {
            if let Some(s) = &self.tracing {
                s.finish_ring(ring);
            }
        }
        // Untimed: the read-back after the run.
        let verify = match checker {
            Some(mut c) if VERIFY => {
                self.verify_finish(&mut c, engine, interrupt, &mut failure);
                Some(c.report)
            }
            _ => None,
        };
        ThreadOutcome {
            user: self.user,
            thread: self.thread,
            stats,
            failure,
            verify,
            intervals: Vec::new(),
        }
    }

    /// `--fsync-every` / `--fdatasync-every` without verification, with nothing in flight:
    /// sync the worker's files through the engine and wait. The sync is part of the run
    /// (its time is in the elapsed time) and counts as one other op with its latency.
    /// Returns the clock reading after it.
    #[inline(never)]
    pub(super) fn sync_step<E: Engine + ?Sized>(
        &self,
        s: SyncEvery,
        engine: &mut E,
        stats: &mut Stats,
        sys: &mut SyscallCounts,
    ) -> Result<u64, IoFailure> {
        let at = self.clock.now_ns();
        let synced = engine.sync_files(s.data_only, sys);
        let now = self.clock.now_ns();
        if let Err(e) = synced {
            let call = if s.data_only { "fdatasync" } else { "fsync" };
            return Err(self.failure(None, format!("{call} failed: {e}")));
        }
        stats.other_lat.record(now.saturating_sub(at));
        stats.other_ops += 1;
        Ok(now)
    }

    /// Between two turns of the verifying loop: an fsync when `--fsync-every` is due, a
    /// journal append when its batch is full, the backlog check when it is full and nothing
    /// of this worker is in flight.
    #[inline(never)]
    pub(super) fn verify_step<E: Engine + ?Sized>(
        &self,
        c: &mut verify::Checker,
        engine: &mut E,
        sys: &mut SyscallCounts,
        inflight: usize,
        batch: &[IoOp],
    ) -> Result<(), IoFailure> {
        if c.fsync_due() {
            let flushed = engine.flush(sys);
            if let Err(e) = &flushed {
                return Err(self.failure(None, format!("fsync failed: {e}")));
            }
            c.synced(true)?;
        }
        if c.journal_due() {
            c.journal_flush()?;
        }
        if c.backlog_due() && inflight == 0 && batch.is_empty() {
            c.check_backlog(engine, self.route, self.depth)?;
        }
        Ok(())
    }

    /// After the loop: read back and check (unless the run failed), and make the worker's
    /// verdict its failure when blocks did not come back as written.
    #[inline(never)]
    fn verify_finish<E: Engine + ?Sized>(
        &self,
        c: &mut verify::Checker,
        engine: &mut E,
        interrupt: &AtomicBool,
        failure: &mut Option<IoFailure>,
    ) {
        if failure.is_some() {
            c.abort();
            c.skip_read_back();
        } else if let Err(f) = {
            if let Some(b) = &self.board {
                b.verifying.store(true, Ordering::Relaxed);
            }
            c.read_back(engine, self.route, self.depth, interrupt)
        } {
            c.abort();
            *failure = Some(f);
        }
        if failure.is_none() {
            *failure = c.failure();
        }
    }

    pub(super) fn failure(&self, offset: Option<u64>, message: String) -> IoFailure {
        IoFailure {
            user: self.user,
            thread: self.thread,
            path: self.path.clone(),
            offset,
            message,
        }
    }
}

/// A duration in clock nanoseconds (saturating: a year fits many times over).
fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

/// The I/O at `offset`, on the route the run's rule gives it, counted as direct or as a
/// misaligned direct I/O done buffered. Both timed loops build their ops here.
#[inline(always)]
pub(super) fn routed_op(
    rule: RouteRule,
    stats: &mut Stats,
    kind: OpKind,
    offset: u64,
    bs: u32,
    slot: u32,
) -> IoOp {
    let route = rule.route(offset, bs as u64);
    match route {
        Route::Fallback => stats.buffered_fallback_ops += 1,
        Route::Direct => stats.direct_ops += 1,
        Route::Buffered => {}
    }
    IoOp {
        kind,
        file: 0,
        route,
        offset,
        len: bs,
        slot,
    }
}

/// One trace record, with the loop's clock readings placed on the trace's `Instant` scale
/// through `base` (an `Instant` and the reading taken with it). Out of line and cold: kept
/// apart, its time arithmetic is not hoisted into the untraced loop.
#[cold]
#[inline(never)]
fn trace_record(
    ring: &mut crate::trace::TraceRing,
    (base, base_ns): (Instant, u64),
    op: &IoOp,
    at: u64,
    now: u64,
    result: i64,
) {
    let on = |ns: u64| base + Duration::from_nanos(ns.saturating_sub(base_ns));
    ring.record(op.kind, op.offset, op.len, on(at), on(now), result);
}

/// What a failed completion says: a negative errno, or 0 bytes for a non-empty I/O.
#[cold]
pub(super) fn io_error(kind: OpKind, result: i64) -> String {
    if result == 0 {
        return format!("{} returned 0 bytes (end of file)", kind_name(kind));
    }
    let err = std::io::Error::from_raw_os_error((-result) as i32);
    if err.raw_os_error() == Some(libc::ENOSPC) {
        format!("file system full (ENOSPC) on {}", kind_name(kind))
    } else {
        format!("{} failed: {err}", kind_name(kind))
    }
}

fn kind_name(k: OpKind) -> &'static str {
    match k {
        OpKind::Read => "read",
        OpKind::Write => "write",
        OpKind::Trim => "trim",
    }
}
