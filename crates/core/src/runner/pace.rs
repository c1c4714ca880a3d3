//! Rate control without coordinated omission.
//!
//! A rate-limited worker issues I/O number k at the intended time `start + phase + k * interval`,
//! fixed before the run starts. When the device or the system stalls, the worker falls behind
//! the schedule and then issues back to back (up to its queue depth) to catch up; each I/O's
//! latency is also measured from its intended time (`sched_lat`), so a stall shows up in the
//! percentiles instead of silently lowering the offered rate.

use crate::engine::OpKind;
use crate::job::{Job, RateProcess, RateScope};
use std::time::Duration;

/// The issue schedule of one worker. Times are nanoseconds of the worker loop's clock
/// (CLOCK_MONOTONIC), the same numbers its latencies are taken from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacer {
    /// Nanoseconds between intended issue times.
    interval_ns: f64,
    /// Offset of this worker's first slot, so workers sharing a total rate interleave.
    phase_ns: f64,
    start_ns: u64,
    /// Index of the next I/O in the schedule.
    next: u64,
    /// `--rate-process poisson`: the gaps between slots are drawn, not fixed (None: linear).
    poisson: Option<Poisson>,
}

/// The state of a Poisson schedule: the next slot's time after the start, and the
/// generator its exponential gaps are drawn from (SplitMix64, its state kept here so the
/// schedule stays plain data).
#[derive(Debug, Clone, Copy)]
struct Poisson {
    at_ns: f64,
    rng_state: u64,
}

impl Poisson {
    /// The next gap: exponential with mean `mean_ns` (-ln U x mean, U uniform in (0, 1]).
    #[inline]
    fn gap(&mut self, mean_ns: f64) -> f64 {
        let x = super::opgen::Rng::new(self.rng_state).next_u64();
        self.rng_state = self.rng_state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let u = ((x >> 11) + 1) as f64 / (1u64 << 53) as f64;
        -u.ln() * mean_ns
    }
}

/// I/Os per second one worker must issue, or None without a rate limit.
pub(crate) fn per_worker_rate(job: &Job) -> Option<f64> {
    worker_share(
        job,
        job.rate.iops,
        job.rate.bytes_per_sec,
        job.mean_io_size(),
    )
}

/// One worker's I/Os per second from a limit in I/Os and one in bytes (counted in I/Os of
/// `mean_size`); both given: the stricter one holds. None when neither is.
fn worker_share(job: &Job, iops: Option<u64>, bytes: Option<u64>, mean_size: f64) -> Option<f64> {
    let iops = iops.map(|r| r as f64);
    let from_bytes = bytes.map(|b| b as f64 / mean_size.max(1.0));
    let rate = match (iops, from_bytes) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    Some(match job.rate.scope {
        RateScope::Thread => rate,
        RateScope::Total => rate / job.total_threads().max(1) as f64,
    })
}

/// I/Os per second one worker must issue in direction `dir` (0 reads, 1 writes, 2 trims)
/// under per-direction rates, or None when that direction is not limited. A byte rate counts
/// in the direction's own mean I/O size.
pub(crate) fn per_worker_dir_rate(job: &Job, dir: usize) -> Option<f64> {
    let limit = job.rate.of(dir);
    worker_share(job, limit.iops, limit.bytes_per_sec, job.dir_sizes(dir).2)
}

/// The issue schedules of one worker: one for all its I/Os, or (per-direction rates) one per
/// direction, as fio paces reads and writes each to their own rate. Plain data, copied into
/// the timed loop: nothing here allocates, locks or calls the system.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacers {
    /// Reads, writes, trims; with one schedule for all I/Os, only the first.
    by_dir: [Option<Pacer>; 3],
    /// One schedule for all I/Os (a single rate).
    shared: bool,
    /// The directions the worker issues (an unlimited one is always due).
    issues: [bool; 3],
}

impl Pacers {
    /// The schedules of worker `index` (0-based over all users' threads), if the job has a
    /// rate for any direction.
    pub(crate) fn for_worker(job: &Job, index: u64) -> Option<Pacers> {
        let workers = job.total_threads();
        let process = job.rate.process;
        // Direction `d`'s schedule (0 for the one shared by all), its Poisson gaps drawn
        // from a stream of its own.
        let at = |r: f64, d: usize| {
            Pacer::at_rate(r, index, workers).spaced(process, job.seed, index * 4 + d as u64)
        };
        let (reads, writes, trims) = job.mix_directions();
        let issues = [reads, writes, trims];
        let (by_dir, shared) = match job.rate.directions {
            None => ([per_worker_rate(job).map(|r| at(r, 0)), None, None], true),
            Some(_) => (
                [0, 1, 2].map(|d| {
                    per_worker_dir_rate(job, d)
                        .filter(|_| issues[d])
                        .map(|r| at(r, d))
                }),
                false,
            ),
        };
        // No direction the worker issues is limited: no schedule at all.
        by_dir.iter().any(Option::is_some).then_some(Pacers {
            by_dir,
            shared,
            issues,
        })
    }

    pub(crate) fn start(&mut self, t0_ns: u64) {
        for p in self.by_dir.iter_mut().flatten() {
            p.start(t0_ns);
        }
    }

    /// Whether direction `d` may issue now: unlimited, or its schedule has caught up.
    #[inline]
    fn dir_due(&self, d: usize, now_ns: u64) -> bool {
        self.by_dir[d].is_none_or(|p| p.is_due(now_ns))
    }

    /// Whether an I/O may be issued now (in some direction the worker issues).
    #[inline]
    pub(crate) fn is_due(&self, now_ns: u64) -> bool {
        if self.shared {
            return self.dir_due(0, now_ns);
        }
        (0..3).any(|d| self.issues[d] && self.dir_due(d, now_ns))
    }

    /// The direction the next I/O takes when the mix drew `kind`: as fio does, a read or
    /// write whose schedule is ahead gives its turn to the other when that one is due.
    #[inline]
    pub(crate) fn steer(&self, kind: OpKind, now_ns: u64) -> OpKind {
        if self.shared || self.dir_due(kind as usize, now_ns) {
            return kind;
        }
        let other = match kind {
            OpKind::Read => OpKind::Write,
            OpKind::Write => OpKind::Read,
            OpKind::Trim => return kind,
        };
        if self.issues[other as usize] && self.dir_due(other as usize, now_ns) {
            other
        } else {
            kind
        }
    }

    /// Take the next slot of the I/O's schedule: its intended issue time (`now_ns` in a
    /// direction without a limit).
    #[inline]
    pub(crate) fn take(&mut self, kind: OpKind, now_ns: u64) -> u64 {
        let d = if self.shared { 0 } else { kind as usize };
        self.by_dir[d].as_mut().map_or(now_ns, Pacer::take)
    }

    /// How long until an I/O is due in some direction the worker issues.
    #[inline]
    pub(crate) fn until_due(&self, now_ns: u64) -> Duration {
        if self.shared {
            return self.by_dir[0].map_or(Duration::ZERO, |p| p.until_due(now_ns));
        }
        (0..3)
            .filter(|&d| self.issues[d])
            .map(|d| self.by_dir[d].map_or(Duration::ZERO, |p| p.until_due(now_ns)))
            .min()
            .unwrap_or(Duration::ZERO)
    }
}

impl Pacer {
    /// The schedule of worker `index` of `workers` that issues `rate` units a second, for a
    /// source without a Job (a workload thread or a replay thread paces its calls with it;
    /// under a byte rate one slot is one byte).
    pub(crate) fn at_rate(rate: f64, index: u64, workers: u64) -> Pacer {
        let interval_ns = 1e9 / rate;
        let workers = workers.max(1);
        Pacer {
            interval_ns,
            phase_ns: interval_ns * (index % workers) as f64 / workers as f64,
            start_ns: 0,
            next: 0,
            poisson: None,
        }
    }

    /// The same mean rate with its slots spaced as `process` says: a Poisson schedule draws
    /// its gaps from the job's `seed`, in a stream of its own for every `stream` (a worker's
    /// direction).
    pub(crate) fn spaced(mut self, process: RateProcess, seed: u64, stream: u64) -> Pacer {
        if process == RateProcess::Poisson {
            let mut r = super::opgen::Rng::new(
                seed ^ 0x7015_5017_0000_0000 ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            );
            self.poisson = Some(Poisson {
                at_ns: 0.0,
                rng_state: r.next_u64(),
            });
        }
        self
    }

    /// Take `n` slots at once (a call of `n` bytes under a byte rate): returns the
    /// intended issue time of the first.
    #[inline]
    pub(crate) fn take_n(&mut self, n: u64) -> u64 {
        let t = self.next_due();
        self.next += n;
        if let Some(p) = self.poisson.as_mut() {
            p.at_ns += p.gap(self.interval_ns * n as f64);
        }
        t
    }

    /// Anchor the schedule at the start of the timed loop (`t0_ns`). Also asks for 1 us timer
    /// slack (default 50 us) so waits for the next slot end close to its intended time.
    pub(crate) fn start(&mut self, t0_ns: u64) {
        // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only this thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0) };
        self.start_ns = t0_ns;
        self.next = 0;
        if let Some(p) = self.poisson.as_mut() {
            p.at_ns = 0.0;
        }
    }

    /// Intended issue time of the next I/O.
    #[inline]
    pub(crate) fn next_due(&self) -> u64 {
        let after = match self.poisson {
            Some(p) => p.at_ns,
            None => self.next as f64 * self.interval_ns,
        };
        self.start_ns + (self.phase_ns + after) as u64
    }

    #[inline]
    pub(crate) fn is_due(&self, now_ns: u64) -> bool {
        self.next_due() <= now_ns
    }

    /// Take the next slot of the schedule: returns its intended issue time.
    #[inline]
    pub(crate) fn take(&mut self) -> u64 {
        let t = self.next_due();
        self.next += 1;
        if let Some(p) = self.poisson.as_mut() {
            p.at_ns += p.gap(self.interval_ns);
        }
        t
    }

    /// How long until the next I/O is due (zero when it is already late).
    #[inline]
    pub(crate) fn until_due(&self, now_ns: u64) -> Duration {
        Duration::from_nanos(self.next_due().saturating_sub(now_ns))
    }
}

/// The schedules of a source that issues a step at a time (a flowop, a replayed call): one of
/// its data calls and one of its bytes. A step starts when both have caught up and is
/// charged afterwards with what it issued.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StepPacing {
    calls: Option<Pacer>,
    bytes: Option<Pacer>,
}

impl StepPacing {
    /// Thread `index` of `threads` at `calls_per_s` calls and `bytes_per_s` bytes a second
    /// (each already this thread's share).
    pub(crate) fn new(
        calls_per_s: Option<f64>,
        bytes_per_s: Option<f64>,
        index: u64,
        threads: u64,
    ) -> StepPacing {
        let at = |r: f64| Pacer::at_rate(r, index, threads);
        StepPacing {
            calls: calls_per_s.map(at),
            bytes: bytes_per_s.map(at),
        }
    }

    /// Thread `index` of `threads` under a run's `--rate-iops` / `--rate-bytes` and
    /// `--rate-scope` (each thread the rate, or its share of it).
    pub(crate) fn for_thread(rate: &crate::job::RateLimit, index: u64, threads: u64) -> StepPacing {
        let share = match rate.scope {
            RateScope::Thread => 1.0,
            RateScope::Total => threads.max(1) as f64,
        };
        StepPacing::new(
            rate.iops.map(|r| r as f64 / share),
            rate.bytes_per_sec.map(|r| r as f64 / share),
            index,
            threads,
        )
    }

    pub(crate) fn is_on(&self) -> bool {
        self.calls.is_some() || self.bytes.is_some()
    }

    pub(crate) fn start(&mut self, t0_ns: u64) {
        for p in [&mut self.calls, &mut self.bytes].into_iter().flatten() {
            p.start(t0_ns);
        }
    }

    /// When the next step may start: both schedules caught up.
    pub(crate) fn next_due(&self) -> u64 {
        let due = |p: &Option<Pacer>| p.as_ref().map_or(0, |p| p.next_due());
        due(&self.calls).max(due(&self.bytes))
    }

    /// Charge what a step issued: its data calls and its bytes.
    pub(crate) fn charge(&mut self, calls: u64, bytes: u64) {
        if let Some(p) = self.calls.as_mut() {
            p.take_n(calls);
        }
        if let Some(p) = self.bytes.as_mut() {
            p.take_n(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::RateLimit;

    fn job(iops: Option<u64>, bytes: Option<u64>, scope: RateScope, threads: u32) -> Job {
        Job {
            targets: vec!["a".into(), "b".into()],
            threads,
            block_size: 4096,
            rate: RateLimit {
                iops,
                bytes_per_sec: bytes,
                scope,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn rates_per_thread_and_total() {
        assert_eq!(
            per_worker_rate(&job(None, None, RateScope::Thread, 1)),
            None
        );
        assert_eq!(
            per_worker_rate(&job(Some(1000), None, RateScope::Thread, 2)),
            Some(1000.0)
        );
        // 2 targets x 2 threads share 1000 IOPS.
        assert_eq!(
            per_worker_rate(&job(Some(1000), None, RateScope::Total, 2)),
            Some(250.0)
        );
        // 4 MiB/s of 4 KiB I/Os is 1024 IOPS; the stricter of both limits wins.
        assert_eq!(
            per_worker_rate(&job(None, Some(4 << 20), RateScope::Thread, 1)),
            Some(1024.0)
        );
        assert_eq!(
            per_worker_rate(&job(Some(100), Some(4 << 20), RateScope::Thread, 1)),
            Some(100.0)
        );
    }

    #[test]
    fn per_second_schedules_slots_and_byte_runs() {
        // 1000 bytes/s for 2 workers: worker 1 starts half a slot (0.5 ms) late; a 500-byte
        // call takes half a second of the schedule.
        let mut p = Pacer::at_rate(1000.0, 1, 2);
        p.start(0);
        assert_eq!(p.take_n(500), 500_000);
        assert_eq!(p.next_due(), 500_500_000);
        let mut q = Pacer::at_rate(100.0, 0, 1);
        q.start(7);
        assert_eq!((q.take(), q.take()), (7, 10_000_007));
    }

    #[test]
    fn schedule_is_absolute_and_interleaved() {
        const MS: u64 = 1_000_000;
        let j = job(Some(1000), None, RateScope::Total, 1);
        let t0 = 123_456_789_000u64;
        let mut a = Pacer::at_rate(per_worker_rate(&j).unwrap(), 0, j.total_threads());
        let mut b = Pacer::at_rate(per_worker_rate(&j).unwrap(), 1, j.total_threads());
        a.start(t0);
        b.start(t0);
        // 500 IOPS each: 2 ms apart, the second worker 1 ms behind the first.
        assert_eq!(a.take(), t0);
        assert_eq!(b.take(), t0 + MS);
        assert_eq!(a.take(), t0 + 2 * MS);
        // Falling behind does not move the schedule: the next slot keeps its intended time.
        for _ in 0..997 {
            a.take();
        }
        assert_eq!(a.next_due(), t0 + 2 * 999 * MS);
        assert!(a.is_due(t0 + 5_000 * MS));
        assert!(!b.is_due(t0));
        assert_eq!(b.until_due(t0 + 2 * MS), Duration::from_millis(1));
        assert_eq!(a.until_due(t0 + 5_000 * MS), Duration::ZERO);
    }

    #[test]
    fn a_poisson_schedule_keeps_the_mean_with_exponential_gaps() {
        // 1000 I/Os a second: gaps of 1 ms on average; exponential gaps have a standard
        // deviation equal to their mean, linear ones none.
        let gaps = |process| {
            let mut p = Pacer::at_rate(1000.0, 0, 1).spaced(process, 42, 0);
            p.start(0);
            let mut last = p.take();
            (0..20_000)
                .map(|_| {
                    let t = p.take();
                    let g = (t - last) as f64;
                    last = t;
                    g
                })
                .collect::<Vec<f64>>()
        };
        let stats = |g: &[f64]| {
            let mean = g.iter().sum::<f64>() / g.len() as f64;
            let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64;
            (mean, var.sqrt() / mean)
        };
        let (mean, cv) = stats(&gaps(RateProcess::Poisson));
        assert!((mean - 1e6).abs() < 0.03e6, "{mean}");
        assert!((0.9..1.1).contains(&cv), "{cv}");
        let (mean, cv) = stats(&gaps(RateProcess::Linear));
        assert!((mean - 1e6).abs() < 1.0 && cv < 1e-3, "{mean} {cv}");
        // The same seed gives the same schedule; another seed another one.
        let first = |seed| {
            let mut p = Pacer::at_rate(1000.0, 0, 1).spaced(RateProcess::Poisson, seed, 0);
            p.start(0);
            p.take();
            p.take()
        };
        assert_eq!(first(7), first(7));
        assert_ne!(first(7), first(8));
    }

    #[test]
    fn each_direction_keeps_its_own_schedule_and_gives_way_when_ahead() {
        use crate::job::{Access, DirRate};
        const MS: u64 = 1_000_000;
        // Reads at 1000 IOPS, writes at 250, trims unlimited, on a 50 % mix.
        let mut j = job(Some(1000), None, RateScope::Thread, 1);
        j.targets.truncate(1);
        j.access = Access::RandRw;
        j.read_pct = 50;
        let writes = DirRate {
            iops: Some(250),
            bytes_per_sec: None,
        };
        j.rate.directions = Some([writes, DirRate::default()]);
        let mut p = Pacers::for_worker(&j, 0).unwrap();
        p.start(0);
        // Both due at the start: the mix decides.
        assert_eq!(p.steer(OpKind::Write, 0), OpKind::Write);
        assert_eq!(p.take(OpKind::Write, 0), 0);
        // Writes are now 4 ms ahead, reads due: a drawn write gives way to a read.
        assert_eq!(p.steer(OpKind::Write, MS / 2), OpKind::Read);
        assert_eq!(p.take(OpKind::Read, MS / 2), 0);
        // Both ahead: nothing is due until the reads' next slot, 1 ms.
        assert!(!p.is_due(MS / 2));
        assert_eq!(p.until_due(MS / 2), Duration::from_micros(500));
        assert_eq!(p.steer(OpKind::Read, MS), OpKind::Read);
        // One rate for all directions stays one schedule, whatever the direction.
        let one = job(Some(1000), None, RateScope::Thread, 1);
        let mut q = Pacers::for_worker(&one, 0).unwrap();
        q.start(0);
        assert_eq!((q.take(OpKind::Read, 0), q.take(OpKind::Write, 0)), (0, MS));
        // Per-direction limits on a direction the job does not issue: no schedule at all.
        let mut reads_only = j.clone();
        reads_only.access = Access::RandRead;
        reads_only.rate.iops = None;
        assert!(Pacers::for_worker(&reads_only, 0).is_none());
    }
}
