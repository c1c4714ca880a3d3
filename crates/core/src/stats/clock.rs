//! The clock the worker loop times each I/O with.
//!
//! Two clock readings per I/O are the largest part of what measuring costs (docs/per-io-cost.md):
//! `clock_gettime(CLOCK_MONOTONIC)` through the vDSO reads the TSC behind a fence and scales
//! it, ~18 ns here. When the kernel itself keeps time with the TSC (its clocksource is `tsc`,
//! which it only chooses when the counter is invariant and synchronised across CPUs), the
//! loop reads the counter directly, as fio's default `clocksource=cpu` does, and scales it
//! with a multiplier calibrated once per process against CLOCK_MONOTONIC. Readings stay in
//! nanoseconds on the CLOCK_MONOTONIC scale (anchored at calibration), so deadlines, pacing,
//! trace times and [`super::mono_ns`] readings mix freely; the drift between the two is
//! the calibration error, a few parts per million.
//!
//! `FSBENCH_CLOCK=monotonic` turns the counter off (every reading is `mono_ns`).

use super::mono_ns;
use std::sync::OnceLock;

/// How long calibration watches both clocks (once per process, before any timed loop).
const CALIBRATION_NS: u64 = 20_000_000;

#[derive(Debug, Clone, Copy)]
struct Tsc {
    tsc0: u64,
    ns0: u64,
    /// Nanoseconds per tick, as a 32.32 fixed-point number.
    mult: u64,
}

static TSC: OnceLock<Option<Tsc>> = OnceLock::new();

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC has no memory effects and exists on every x86_64 CPU; whether its
    // value is usable as a clock is decided in `reliable` before it is used as one.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rdtsc() -> u64 {
    0
}

/// Whether the kernel keeps time with the TSC (so it is invariant and in step on every CPU)
/// and the user did not ask for CLOCK_MONOTONIC.
fn reliable() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    if std::env::var("FSBENCH_CLOCK").is_ok_and(|v| v == "monotonic") {
        return false;
    }
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|s| s.trim() == "tsc")
}

fn calibrate() -> Option<Tsc> {
    if !reliable() {
        return None;
    }
    // Each end: the TSC read between two monotonic readings, the pair closest together.
    let pair = || {
        (0..5)
            .map(|_| {
                let a = mono_ns();
                let t = rdtsc();
                let b = mono_ns();
                (b - a, a + (b - a) / 2, t)
            })
            .min()
            .map(|(_, ns, t)| (ns, t))
            .unwrap_or((mono_ns(), rdtsc()))
    };
    let (ns0, tsc0) = pair();
    std::thread::sleep(std::time::Duration::from_nanos(CALIBRATION_NS));
    let (ns1, tsc1) = pair();
    let ticks = tsc1.checked_sub(tsc0).filter(|&t| t > 0)?;
    let mult = (((ns1 - ns0) as u128) << 32) / ticks as u128;
    Some(Tsc {
        tsc0,
        ns0,
        mult: u64::try_from(mult).ok().filter(|&m| m > 0)?,
    })
}

/// Where a [`Clock`]'s readings come from.
#[derive(Debug, Clone, Copy)]
enum Reading {
    Monotonic,
    Tsc(Tsc),
    /// A time that only moves when a test's engine moves it (`engine::mock`'s service
    /// times), so that what the loop measures is exactly what the engine was told to take.
    #[cfg(any(test, feature = "test-support"))]
    Virtual(&'static std::sync::atomic::AtomicU64),
}

/// The worker loop's clock, taken in its untimed preparation (the first one calibrates).
#[derive(Debug, Clone, Copy)]
pub struct Clock(Reading);

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock(match *TSC.get_or_init(calibrate) {
            Some(t) => Reading::Tsc(t),
            None => Reading::Monotonic,
        })
    }

    /// CLOCK_MONOTONIC always (what tests and non-x86 machines get).
    #[cfg(test)]
    pub(crate) fn monotonic() -> Clock {
        Clock(Reading::Monotonic)
    }

    /// A virtual clock reading `now` (nanoseconds), which whoever holds `now` advances.
    /// Each one lives as long as the test process (a few bytes per run).
    #[cfg(any(test, feature = "test-support"))]
    pub fn virtual_at(start_ns: u64) -> (Clock, &'static std::sync::atomic::AtomicU64) {
        let now: &'static _ = Box::leak(Box::new(std::sync::atomic::AtomicU64::new(start_ns)));
        (Clock(Reading::Virtual(now)), now)
    }

    /// Whether readings come from the CPU's counter.
    #[cfg(test)]
    pub(crate) fn is_tsc(&self) -> bool {
        matches!(self.0, Reading::Tsc(_))
    }

    /// Now, in nanoseconds on the CLOCK_MONOTONIC scale.
    #[inline(always)]
    pub(crate) fn now_ns(&self) -> u64 {
        match self.0 {
            Reading::Tsc(t) => {
                let ticks = rdtsc().wrapping_sub(t.tsc0);
                t.ns0 + ((ticks as u128 * t.mult as u128) >> 32) as u64
            }
            Reading::Monotonic => mono_ns(),
            #[cfg(any(test, feature = "test-support"))]
            Reading::Virtual(now) => now.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_follow_the_monotonic_clock() {
        // Whichever clock this machine gives (the counter where the kernel's clocksource is
        // tsc, CLOCK_MONOTONIC elsewhere), its readings must be CLOCK_MONOTONIC's.
        let c = Clock::new();
        assert_eq!(c.is_tsc(), reliable());
        let a = c.now_ns();
        let m0 = mono_ns();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let b = c.now_ns();
        let m1 = mono_ns();
        // On the same scale (within scheduling noise) and at the same rate (0.1 %).
        assert!(a.abs_diff(m0) < 2_000_000, "offset {} ns", a.abs_diff(m0));
        let (d_tsc, d_mono) = ((b - a) as f64, (m1 - m0) as f64);
        assert!((d_tsc / d_mono - 1.0).abs() < 1e-3, "{d_tsc} vs {d_mono}");
        assert!(b > a);
    }

    #[test]
    fn monotonic_is_the_fallback() {
        let c = Clock::monotonic();
        assert!(!c.is_tsc());
        let a = c.now_ns();
        assert!(a.abs_diff(mono_ns()) < 1_000_000);
    }

    /// Not a check: prints what one reading of each clock costs
    /// (`cargo test --release --lib stats::clock -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn measure_reading_cost() {
        let c = Clock::new();
        let n = 10_000_000u64;
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(c.now_ns());
        }
        let tsc = t.elapsed().as_nanos() as f64 / n as f64;
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(mono_ns());
        }
        let mono = t.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "clock reading: counter {tsc:.1} ns, CLOCK_MONOTONIC {mono:.1} ns (tsc={})",
            c.is_tsc()
        );
    }
}
