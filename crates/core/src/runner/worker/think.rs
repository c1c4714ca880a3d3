//! Think time in the timed loops (`--think`): a countdown of a thread's completed I/Os and
//! the pause taken when it runs out. The pause happens between I/Os, never inside a timed
//! one, so it is in no latency; it sleeps most of the way and spins the last stretch (a
//! sleep overshoots by tens of microseconds), and gives up early for a stop, Ctrl-C or the
//! deadline. No allocation: the state is three integers.

use crate::job::Think;
use crate::stats::clock::Clock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The last stretch of a pause spun rather than slept.
const SPIN_NS: u64 = 100_000;
/// Longest single sleep, so that a stop is noticed promptly.
const SLEEP_SLICE_NS: u64 = 50_000_000;

/// One thread's think-time countdown.
#[derive(Debug, Clone, Copy)]
pub(super) struct Thinker {
    pause_ns: u64,
    every: u64,
    left: u64,
}

impl Thinker {
    pub(super) fn new(t: Think) -> Thinker {
        let every = t.every.max(1);
        Thinker {
            pause_ns: t.pause.as_nanos().min(u64::MAX as u128) as u64,
            every,
            left: every,
        }
    }

    /// One I/O completed; whether a pause is now due.
    #[inline]
    pub(super) fn count(&mut self) -> bool {
        self.left = self.left.saturating_sub(1);
        self.left == 0
    }

    /// Whether a pause is due (the loop issues nothing more until it has paused).
    #[inline]
    pub(super) fn due(&self) -> bool {
        self.left == 0
    }

    /// Pause from clock reading `now` (cut short at `limit`, a stop or Ctrl-C), then count
    /// anew. Returns the clock reading at the end.
    pub(super) fn pause(
        &mut self,
        clock: Clock,
        now: u64,
        limit: u64,
        stop: &AtomicBool,
        interrupt: &AtomicBool,
    ) -> u64 {
        self.left = self.every;
        let until = now.saturating_add(self.pause_ns).min(limit);
        let halted = || stop.load(Ordering::Relaxed) || interrupt.load(Ordering::Relaxed);
        let mut t = now;
        while t < until && !halted() {
            let rest = until - t;
            if rest > SPIN_NS {
                let nap = (rest - SPIN_NS).min(SLEEP_SLICE_NS);
                std::thread::sleep(Duration::from_nanos(nap));
            } else {
                std::hint::spin_loop();
            }
            t = clock.now_ns();
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_after_every_blocks_and_for_the_pause() {
        let t = Think::parse("2ms:3", "--think").unwrap();
        let mut th = Thinker::new(t);
        assert!(!th.count());
        assert!(!th.count());
        assert!(th.count());
        assert!(th.due());
        let clock = Clock::new();
        let (stop, int) = (AtomicBool::new(false), AtomicBool::new(false));
        let t0 = clock.now_ns();
        let t1 = th.pause(clock, t0, u64::MAX, &stop, &int);
        assert!(t1 - t0 >= 2_000_000, "{}", t1 - t0);
        assert!(!th.due());
        // Cut short at the limit, and at once when stopped.
        let t2 = th.pause(clock, t1, t1 + 100_000, &stop, &int);
        assert!(t2 - t1 < 2_000_000);
        stop.store(true, Ordering::Relaxed);
        let t3 = clock.now_ns();
        assert!(th.pause(clock, t3, u64::MAX, &stop, &int) == t3);
    }
}
