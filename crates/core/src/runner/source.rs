//! Sources of operations and the runner's loop that drives them.
//!
//! Every kind of run is a source: the job's access pattern, a Filebench flowop program, a
//! trace being replayed, the backup study's phases. A source knows *what* to issue next and
//! keeps its own control flow (a flowop's iterations, a replay's order, a tape's records); the
//! runner decides *when*: it owns the start gate, the stop conditions (stop flag, Ctrl-C,
//! deadline), the rate limit, the warm-up (`--ramp`), the `--status-interval` series, the CPU
//! accounting and the trace ring, so each is written once for every kind of run.
//!
//! The job's access pattern keeps many I/Os in flight and has its own queue-depth loop in
//! `runner/worker/drive.rs` (the fast path the benchmarks measure). The other sources issue a
//! step at a time through an [`Issuer`] and are driven here by [`drive`]: the loop calls
//! [`Source::step`] until the source ends or the run stops, and between steps paces, closes
//! intervals and ends the warm-up.

use super::issue::Issuer;
use super::live::{IntervalSample, Roller};
use super::pace::StepPacing;
use crate::stats::{cpu, mono_ns, Stats, Usage};
use std::time::Duration;

/// What a source yields: the work of one thread of a run, a step at a time.
pub(crate) trait Source {
    /// How the source ended (each kind has its own words for it).
    type End;

    /// Issue the next step's operations through `io`. None: there is more to do.
    fn step(&mut self, io: &mut Issuer) -> Option<Self::End>;

    /// The run stopped the source before it ended by itself (stop flag, Ctrl-C, deadline).
    fn stopped(&mut self) -> Self::End;

    /// Whether a rate limit paces the next step (data I/O does; metadata does not, as in
    /// fio). A source that says false is never held back.
    fn next_paced(&self) -> bool {
        true
    }

    /// The run's clock started at `t0_ns` (`mono_ns`, after the gate): a source that keeps
    /// its own schedule (a replay's traced times) anchors it here.
    fn started(&mut self, t0_ns: u64) {
        let _ = t0_ns;
    }

    /// When the next step is due on the `mono_ns` clock (a replay keeps its trace's times);
    /// None: as soon as the rate limit allows.
    fn next_due_ns(&self) -> Option<u64> {
        None
    }

    /// What the source has counted so far, for an interval boundary (cold: called once per
    /// `--status-interval`).
    fn totals(&self) -> Stats;

    /// The warm-up is over: forget everything counted so far.
    fn forget(&mut self);
}

/// How the runner drives one source thread: what the run decided before its clock started.
pub(crate) struct Drive<'a> {
    /// Waits at the run's start gate (returns when every thread is ready).
    pub gate: &'a dyn Fn(),
    /// Whether the run stops now (the stop flag, Ctrl-C, another thread's end).
    pub stop: &'a dyn Fn() -> bool,
    /// `--time`: how long after the start the source is stopped.
    pub deadline: Option<Duration>,
    /// `--ramp`: how long the source runs before its counts start.
    pub ramp: Option<Duration>,
    /// `--ramp-bytes`: how many bytes the source moves before its counts start (0: none).
    pub ramp_bytes: u64,
    /// `--rate-iops` / `--rate-bytes`, this thread's share.
    pub pacing: StepPacing,
    /// `--status-interval` (ns).
    pub interval_ns: Option<u64>,
}

/// What [`drive`] hands back beside the source's own counts.
pub(crate) struct Driven<E> {
    pub end: E,
    /// CPU time of the measured part (after the warm-up).
    pub usage: Usage,
    /// The `--status-interval` series of the measured part.
    pub intervals: Vec<IntervalSample>,
    /// The measured window on the `mono_ns` clock.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Whether a warm-up ran and was left out.
    pub ramped: bool,
}

impl<E> Driven<E> {
    /// Settle the counts of a phase whose every step is one operation (an mdtest phase, a
    /// find walk): its system calls from the Issuer, its CPU, its measured window, and
    /// `cpu_ns` of the thread's CPU clock over the phase, spread over its operations.
    pub(crate) fn settle(&self, stats: &mut Stats, io: &Issuer, cpu_ns: u64) {
        stats.syscalls = *io.sys();
        stats.usage = self.usage;
        stats.elapsed_s = self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9;
        stats.loop_start_ns = self.start_ns;
        stats.loop_end_ns = self.end_ns;
        stats.cpu_sampled_ns = cpu_ns;
        stats.cpu_sampled_ops = stats.other_ops;
    }
}

/// Drive `src` on `io` until it ends or the run stops.
pub(crate) fn drive<S: Source>(src: &mut S, io: &mut Issuer, how: Drive<'_>) -> Driven<S::End> {
    (how.gate)();
    let mut pacing = how.pacing;
    let t_go = mono_ns();
    pacing.start(t_go);
    src.started(t_go);
    let to_ns = |d: Duration| t_go.saturating_add(d.as_nanos().min(u64::MAX as u128) as u64);
    let ramp = how.ramp.unwrap_or_default();
    // `--ramp-bytes`: what is left of a warm-up by bytes (0: none, or over).
    let mut ramp_left = how.ramp_bytes;
    // `--time` counts after the warm-up, as for a job (a warm-up by bytes sets it when it
    // ends).
    let mut deadline = how
        .deadline
        .filter(|_| ramp_left == 0)
        .map(|d| to_ns(d.saturating_add(ramp)));
    let mut ramp_end = how.ramp.filter(|d| !d.is_zero()).map(to_ns);
    let ramped = ramp_end.is_some() || ramp_left > 0;
    let mut roll = Roller::intervals_only(if ramped { None } else { how.interval_ns });
    let mut next_roll = roll.start(t_go);
    let mut usage0 = cpu::thread_usage();
    let mut start_ns = t_go;
    io.take_step();
    let end = loop {
        if (how.stop)() {
            break src.stopped();
        }
        let paced = pacing.is_on() && src.next_paced();
        if let Some(due) = src.next_due_ns().or(paced.then(|| pacing.next_due())) {
            if !wait_until(due, deadline, how.stop) {
                break src.stopped();
            }
        }
        if let Some(end) = src.step(io) {
            break end;
        }
        let (calls, bytes) = io.take_step();
        if paced {
            pacing.charge(calls, bytes);
        }
        let now = mono_ns();
        if deadline.is_some_and(|d| now >= d) {
            break src.stopped();
        }
        let bytes_over = ramp_left > 0 && {
            ramp_left = ramp_left.saturating_sub(bytes);
            ramp_left == 0
        };
        if bytes_over || ramp_end.is_some_and(|r| now >= r) {
            // The warm-up is over: what was counted so far is left out, and the measured
            // window, its CPU time and its interval grid start now.
            ramp_end = None;
            src.forget();
            io.forget_counts();
            usage0 = cpu::thread_usage();
            start_ns = now;
            // Seen a little after it was due: --time counts from now.
            let ns = |d: Duration| d.as_nanos().min(u64::MAX as u128) as u64;
            deadline = how.deadline.map(|d| now.saturating_add(ns(d)));
            roll = Roller::intervals_only(how.interval_ns);
            next_roll = roll.start(now);
        } else if now >= next_roll {
            next_roll = roll.tick(now, &src.totals());
        }
    };
    let end_ns = mono_ns();
    if ramp_end.is_some() || ramp_left > 0 {
        // Stopped inside the warm-up: nothing was measured.
        src.forget();
        io.forget_counts();
        usage0 = cpu::thread_usage();
        start_ns = end_ns;
    }
    let intervals = if next_roll != u64::MAX || how.interval_ns.is_some() {
        roll.finish(end_ns, &src.totals())
    } else {
        Vec::new()
    };
    Driven {
        end,
        usage: cpu::thread_usage().since(&usage0),
        intervals,
        start_ns,
        end_ns,
        ramped,
    }
}

/// Sleep until `due` (`mono_ns`), waking at least every 50 ms to notice a stop; false when
/// the run stops or the deadline passes first.
fn wait_until(due: u64, deadline: Option<u64>, stop: &dyn Fn() -> bool) -> bool {
    loop {
        let now = mono_ns();
        if deadline.is_some_and(|d| now >= d) {
            return false;
        }
        if due <= now {
            return true;
        }
        if stop() {
            return false;
        }
        let until = deadline.map_or(due, |d| d.min(due));
        std::thread::sleep(Duration::from_nanos(
            until.saturating_sub(now).min(50_000_000),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::mock::{MockEngine, Script};
    use crate::engine::{Built, IoOp, OpKind};
    use crate::job::Route;
    use std::cell::Cell;

    /// A source of `n` 4 KiB reads at increasing offsets, counting what completed.
    struct Reads {
        left: u64,
        stats: Stats,
        forgotten: u32,
    }

    impl Source for Reads {
        type End = &'static str;
        fn step(&mut self, io: &mut Issuer) -> Option<&'static str> {
            if self.left == 0 {
                return Some("done");
            }
            self.left -= 1;
            let op = IoOp {
                kind: OpKind::Read,
                file: 0,
                route: Route::Buffered,
                offset: (self.left % 256) * 4096,
                len: 4096,
                slot: 0,
            };
            let n = io.call(op).expect("mock read");
            self.stats.read_ops += 1;
            self.stats.read_bytes += n;
            None
        }
        fn stopped(&mut self) -> &'static str {
            "stopped"
        }
        fn totals(&self) -> Stats {
            Stats {
                read_ops: self.stats.read_ops,
                read_bytes: self.stats.read_bytes,
                ..Default::default()
            }
        }
        fn forget(&mut self) {
            self.stats = Stats::default();
            self.forgotten += 1;
        }
    }

    fn reads(left: u64) -> Reads {
        Reads {
            left,
            stats: Stats::default(),
            forgotten: 0,
        }
    }

    fn issuer() -> Issuer {
        let (engine, _log) = MockEngine::new(Script::default(), 4096);
        Issuer::new(Built::Boxed(Box::new(engine)), 1, None)
    }

    fn how<'a>(gate: &'a dyn Fn(), stop: &'a dyn Fn() -> bool) -> Drive<'a> {
        Drive {
            gate,
            stop,
            deadline: None,
            ramp: None,
            ramp_bytes: 0,
            pacing: StepPacing::default(),
            interval_ns: None,
        }
    }

    #[test]
    fn a_source_runs_to_its_end_after_the_gate() {
        let gated = Cell::new(false);
        let gate = || gated.set(true);
        let stop = || false;
        let mut src = reads(10);
        let mut io = issuer();
        let out = drive(&mut src, &mut io, how(&gate, &stop));
        assert!(gated.get());
        assert_eq!(out.end, "done");
        assert_eq!((src.stats.read_ops, src.stats.read_bytes), (10, 40960));
        assert!(!out.ramped);
    }

    #[test]
    fn the_stop_flag_ends_a_source_between_steps() {
        let steps = Cell::new(0u32);
        let gate = || {};
        let stop = || {
            steps.set(steps.get() + 1);
            steps.get() > 3
        };
        let mut src = reads(1000);
        let mut io = issuer();
        let out = drive(&mut src, &mut io, how(&gate, &stop));
        assert_eq!(out.end, "stopped");
        assert_eq!(src.stats.read_ops, 3);
    }

    #[test]
    fn a_rate_limit_spaces_the_steps() {
        let gate = || {};
        let stop = || false;
        let mut src = reads(6);
        let mut io = issuer();
        let mut h = how(&gate, &stop);
        // 100 calls per second: 6 steps take at least 50 ms (the first is due at once).
        h.pacing = StepPacing::new(Some(100.0), None, 0, 1);
        let t = std::time::Instant::now();
        drive(&mut src, &mut io, h);
        assert!(
            t.elapsed() >= Duration::from_millis(45),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn the_warm_up_is_left_out() {
        let gate = || {};
        let stop = || false;
        // A slow source: each step sleeps 2 ms, so a 20 ms ramp spans several steps.
        struct Slow(Reads);
        impl Source for Slow {
            type End = &'static str;
            fn step(&mut self, io: &mut Issuer) -> Option<&'static str> {
                std::thread::sleep(Duration::from_millis(2));
                self.0.step(io)
            }
            fn stopped(&mut self) -> &'static str {
                self.0.stopped()
            }
            fn totals(&self) -> Stats {
                self.0.totals()
            }
            fn forget(&mut self) {
                self.0.forget()
            }
        }
        let mut src = Slow(reads(40));
        let mut io = issuer();
        let mut h = how(&gate, &stop);
        h.ramp = Some(Duration::from_millis(20));
        let out = drive(&mut src, &mut io, h);
        assert!(out.ramped);
        assert_eq!(src.0.forgotten, 1);
        let kept = src.0.stats.read_ops;
        assert!(kept > 0 && kept < 40, "kept {kept} of 40 reads");
        // The mock counts each I/O as one `other` call: the warm-up's are forgotten too.
        assert_eq!(io.sys().other, kept, "{:?}", io.sys());
    }

    #[test]
    fn the_deadline_stops_a_source() {
        let gate = || {};
        let stop = || false;
        let mut src = reads(u64::MAX);
        let mut io = issuer();
        let mut h = how(&gate, &stop);
        h.deadline = Some(Duration::from_millis(20));
        let out = drive(&mut src, &mut io, h);
        assert_eq!(out.end, "stopped");
        assert!(out.end_ns - out.start_ns >= 20_000_000);
    }

    #[test]
    fn intervals_close_on_the_grid() {
        let gate = || {};
        let stop = || false;
        let mut src = reads(u64::MAX);
        let mut io = issuer();
        let mut h = how(&gate, &stop);
        h.deadline = Some(Duration::from_millis(55));
        h.interval_ns = Some(10_000_000);
        let out = drive(&mut src, &mut io, h);
        // A loaded machine may stall a step over a boundary (that interval then closes
        // late and its empty neighbours are skipped): the series is in order, on the grid,
        // and adds up to what the source counted.
        assert!(!out.intervals.is_empty());
        assert!(out.intervals.windows(2).all(|w| w[0].index < w[1].index));
        // No interval beyond the run's own end (a stalled last step ends it late).
        let last = (out.end_ns - out.start_ns) / 10_000_000 + 1;
        assert!(
            out.intervals.iter().all(|i| u64::from(i.index) <= last),
            "{last}"
        );
        let ops: u64 = out.intervals.iter().map(|i| i.read_ops).sum();
        assert_eq!(ops, src.stats.read_ops);
    }
}
