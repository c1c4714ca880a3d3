//! The host sampled at every edge of a run's interval grid, by one thread of the runner
//! beside the workers (never by a worker, never on the I/O path): steal, pressure and other
//! processes' CPU on the run's CPUs for each interval of the time series
//! (`timeseries[].host`). The workers close their intervals themselves on their own clock
//! readings; the ticks are stamped on the same CLOCK_MONOTONIC scale and matched to the
//! series' intervals when the Result is made ([`attach`]).

use crate::probe::host::{interval_figures, HostSampler, HostTick};
use crate::result::IntervalReport;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The sampling thread of one run.
pub(crate) struct HostTicker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<Vec<HostTick>>>,
}

impl HostTicker {
    /// Sample the host `first_after` from now (the workers' grid starts after their warm-up)
    /// and every `every` after that until [`HostTicker::finish`]. None: the thread could not
    /// be started (the run goes on without per-interval host figures).
    pub(crate) fn start(
        sampler: &HostSampler,
        own_complete: bool,
        first_after: Duration,
        every: Duration,
    ) -> Option<HostTicker> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let (s, sampler) = (stop.clone(), sampler.clone());
        let thread = std::thread::Builder::new()
            .name("fsbench-host".into())
            .spawn(move || tick_until_stopped(&sampler, own_complete, first_after, every, &s))
            .ok()?;
        Some(HostTicker {
            stop,
            thread: Some(thread),
        })
    }

    /// Stop sampling (after one last tick: the end of the last interval) and hand the ticks.
    pub(crate) fn finish(mut self) -> Vec<HostTick> {
        self.stop_thread()
    }

    fn stop_thread(&mut self) -> Vec<HostTick> {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for HostTicker {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

fn tick_until_stopped(
    sampler: &HostSampler,
    own_complete: bool,
    first_after: Duration,
    every: Duration,
    stop: &(Mutex<bool>, Condvar),
) -> Vec<HostTick> {
    let mut ticks = Vec::new();
    let mut next = Instant::now() + first_after;
    let (lock, cv) = stop;
    let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        while !*stopped {
            let now = Instant::now();
            if now >= next {
                break;
            }
            stopped = cv
                .wait_timeout(stopped, next - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        // Sampled without the lock: finish() is not kept waiting on /proc reads.
        let last = *stopped;
        drop(stopped);
        ticks.push(sampler.tick(own_complete));
        if last {
            return ticks;
        }
        // On the grid from the first tick; a late wake-up skips to the next edge.
        next += every;
        let now = Instant::now();
        while next <= now {
            next += every;
        }
        stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
    }
}

/// Give each interval of `series` the host figures between the ticks nearest its edges
/// (the grid is `grid_ns`, its intervals start `t0_ns` on the ticks' scale). An edge with no
/// tick within half an interval of it leaves that interval without figures.
pub(crate) fn attach(series: &mut [IntervalReport], ticks: &[HostTick], t0_ns: u64, grid_ns: u64) {
    let nearest = |at: u64| -> Option<usize> {
        let i = ticks
            .iter()
            .enumerate()
            .min_by_key(|(_, t)| t.mono_ns.abs_diff(at))?
            .0;
        (ticks[i].mono_ns.abs_diff(at) <= grid_ns / 2).then_some(i)
    };
    for iv in series.iter_mut() {
        let end = t0_ns.saturating_add((iv.t_s * 1e9) as u64);
        let start = t0_ns.saturating_add(((iv.t_s - iv.interval_s).max(0.0) * 1e9) as u64);
        if let (Some(a), Some(b)) = (nearest(start), nearest(end)) {
            if a < b {
                iv.host = Some(interval_figures(&ticks[a], &ticks[b]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_fall_on_the_grid_and_end_with_the_run() {
        let sampler = HostSampler::start(&[]);
        let began = crate::stats::mono_ns();
        let t = HostTicker::start(
            &sampler,
            true,
            Duration::from_millis(20),
            Duration::from_millis(30),
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(110));
        let ticks = t.finish();
        // Edges at 20, 50, 80 ms and the last tick at the stop (~110 ms); a loaded machine
        // wakes late and skips edges, never early.
        assert!((1..=5).contains(&ticks.len()), "{}", ticks.len());
        for w in ticks.windows(2) {
            assert!(w[1].mono_ns > w[0].mono_ns);
        }
        // The first edge's tick is never early (the stop's tick may come first, if the
        // thread got no CPU for 90 ms).
        assert!(ticks.len() == 1 || ticks[0].mono_ns >= began + 20_000_000);
        assert!(*ticks.last().map(|t| &t.mono_ns).unwrap() >= began + 110_000_000);
    }

    #[test]
    fn each_interval_takes_the_ticks_nearest_its_edges() {
        let sampler = HostSampler::start(&[]);
        // Ticks at 0, 30, 60 ms (stamped by hand: the machine's timing is not under test).
        let ticks: Vec<HostTick> = (0..3)
            .map(|k| {
                let mut t = sampler.tick(true);
                t.mono_ns = 1_000_000_000 + k * 30_000_000;
                t
            })
            .collect();
        // Intervals of 30 ms from 2 ms after the first tick: each gets figures from its
        // edges' ticks; one whose edges have no tick near them gets none.
        let t0 = ticks[0].mono_ns + 2_000_000;
        let mut series: Vec<IntervalReport> = (1..=3)
            .map(|k| IntervalReport {
                t_s: 0.03 * k as f64,
                interval_s: 0.03,
                ..Default::default()
            })
            .collect();
        series.push(IntervalReport {
            t_s: 10.0,
            interval_s: 0.03,
            ..Default::default()
        });
        attach(&mut series, &ticks, t0, 30_000_000);
        assert!(series[0].host.is_some() && series[1].host.is_some());
        assert!(series[0].host.as_ref().unwrap().others_cpu_pct.is_some());
        // The third ends 32 ms after the last tick: more than half an interval.
        assert!(series[2].host.is_none() && series[3].host.is_none());
    }
}
