//! `--steady-state`: a thread of the run that watches the workers' live counters (the
//! run's [`Board`]) and stops the run once its rate has settled.
//!
//! Once a second it reads all workers' published totals and makes one sample of the watched
//! figure (IOPS, bandwidth, or mean latency of that second's I/Os); once the last
//! `window_s` samples are within the limit (range, or least-squares slope, against their
//! mean) it raises the run's stop flag, which the workers read at their next I/O like the
//! deadline. The workers do nothing new per I/O: they publish their running counters on the
//! board every [`PUBLISH_NS`] (10 ms while watched), so a sample is off by at most that much
//! of its second. Chosen over judging the `--status-interval` series because that series is
//! only gathered at the end.

use super::live::Board;
use crate::job::steady::{SteadyMetric, SteadyState};
use crate::result::SteadyReport;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the workers publish while the run is watched for a steady state.
pub(crate) const PUBLISH_NS: u64 = 10_000_000;

/// How often the observer looks for the workers' first counts.
const FIRST_COUNTS_POLL: Duration = Duration::from_millis(5);

/// The running observer; [`Observer::finish`] ends it and gives its report.
pub(crate) struct Observer {
    /// Dropped to tell the thread the workers are over.
    over: Sender<()>,
    thread: JoinHandle<SteadyReport>,
}

impl Observer {
    /// Start watching `board` for `spec`; the counts start after `ramp` (the warm-up, which
    /// the workers leave out) and end by `limit` (the run's longest time after it).
    /// `stop` is the run's stop flag.
    pub(crate) fn start(
        spec: SteadyState,
        ramp: Duration,
        limit: Option<Duration>,
        board: Arc<Board>,
        stop: Arc<AtomicBool>,
    ) -> std::io::Result<Observer> {
        let (over, rx) = channel::<()>();
        let thread = std::thread::Builder::new()
            .name("fsbench-steady".into())
            .spawn(move || {
                let over =
                    |d: Duration| !matches!(rx.recv_timeout(d), Err(RecvTimeoutError::Timeout));
                watch(&spec, (ramp, limit), &board, &stop, over)
            })?;
        Ok(Observer { over, thread })
    }

    /// The workers are over: stop watching and say what was seen.
    pub(crate) fn finish(self) -> Option<SteadyReport> {
        drop(self.over);
        self.thread.join().ok()
    }
}

/// The watched figure of one sample, from the totals' differences over `secs`; None when
/// it has no value (a latency sample with no I/O).
fn figure(metric: SteadyMetric, d_ops: u64, d_bytes: u64, d_lat_ns: u64, secs: f64) -> Option<f64> {
    match metric {
        SteadyMetric::Iops => Some(d_ops as f64 / secs),
        SteadyMetric::Bw => Some(d_bytes as f64 / secs),
        SteadyMetric::Lat => (d_ops > 0).then(|| d_lat_ns as f64 / d_ops as f64),
    }
}

/// Totals now: (ops, bytes, latency sum) of reads and writes.
fn totals(board: &Board) -> (u64, u64, u64) {
    let t = board.totals();
    (t[0] + t[1], t[2] + t[3], board.latency_sum())
}

/// The observer's loop; `over(d)` waits up to `d` and says whether the workers are over.
fn watch(
    spec: &SteadyState,
    (ramp, limit): (Duration, Option<Duration>),
    board: &Board,
    stop: &AtomicBool,
    over: impl Fn(Duration) -> bool,
) -> SteadyReport {
    let mut report = judge(spec, &[]);
    // The workers' first publication marks their start (they start together at the gate).
    while totals(board) == (0, 0, 0) {
        if over(FIRST_COUNTS_POLL) {
            return report;
        }
    }
    // After a warm-up the workers' counts start again from zero.
    if !ramp.is_zero() && over(ramp + Duration::from_millis(50)) {
        return report;
    }
    let base = Instant::now();
    let mut last = (base, totals(board));
    let mut window: VecDeque<f64> = VecDeque::with_capacity(spec.window_s as usize + 1);
    // The start was seen a little late (the workers' first publication): a second that
    // would end past the longest time would hold less than a second of I/O.
    let last_k = limit.map_or(u32::MAX, |l| {
        (l.as_secs_f64() - 2.0 * PUBLISH_NS as f64 / 1e9)
            .floor()
            .max(0.0) as u32
    });
    for k in 1u32.. {
        if k > last_k {
            // Nothing more to judge: wait for the workers to end.
            while !over(Duration::from_secs(1)) {}
            break;
        }
        let due = base + Duration::from_secs(k as u64);
        if over(due.saturating_duration_since(Instant::now())) {
            break;
        }
        let now = (Instant::now(), totals(board));
        let (t, (ops, bytes, lat)) = now;
        let (t0, (ops0, bytes0, lat0)) = last;
        last = now;
        if ops < ops0 || bytes < bytes0 || lat < lat0 {
            // A worker's warm-up ended late and its counts restarted: not a sample.
            continue;
        }
        let secs = t.duration_since(t0).as_secs_f64().max(1e-3);
        let Some(v) = figure(spec.metric, ops - ops0, bytes - bytes0, lat - lat0, secs) else {
            continue;
        };
        window.push_back(v);
        if window.len() > spec.window_s as usize {
            window.pop_front();
        }
        report = judge(spec, window.make_contiguous());
        if report.reached {
            report.at_s = Some(base.elapsed().as_secs_f64());
            stop.store(true, Ordering::Relaxed);
            break;
        }
    }
    report
}

/// The figures of `samples` (the last window, oldest first) and whether they are steady:
/// a full window, a positive mean, and the range (or the slope) within the limit.
pub(crate) fn judge(spec: &SteadyState, samples: &[f64]) -> SteadyReport {
    let n = samples.len();
    let mean = if n > 0 {
        samples.iter().sum::<f64>() / n as f64
    } else {
        0.0
    };
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (min, max) = if n > 0 { (min, max) } else { (0.0, 0.0) };
    let pct = |x: f64| if mean > 0.0 { x / mean * 100.0 } else { 0.0 };
    // Least squares of the samples against their second (0, 1, ...): slope per second.
    let xm = (n as f64 - 1.0) / 2.0;
    let (sxy, sxx) = samples
        .iter()
        .enumerate()
        .fold((0.0, 0.0), |(sxy, sxx), (i, y)| {
            let dx = i as f64 - xm;
            (sxy + dx * (y - mean), sxx + dx * dx)
        });
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let range_pct = pct(max - min);
    let slope_pct = pct(slope);
    let within = if spec.slope {
        slope_pct.abs() <= spec.limit_pct
    } else {
        range_pct <= spec.limit_pct
    };
    SteadyReport {
        metric: spec.metric.name().to_string(),
        limit_pct: spec.limit_pct,
        slope: spec.slope,
        window_s: spec.window_s,
        reached: n >= spec.window_s as usize && n >= 2 && mean > 0.0 && within,
        at_s: None,
        samples: samples.to_vec(),
        mean,
        min,
        max,
        range_pct,
        slope_pct,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> SteadyState {
        SteadyState::parse(s, "--steady-state").unwrap()
    }

    #[test]
    fn the_range_is_judged_over_a_full_window() {
        let s = spec("iops:20%:3s");
        // 100, 110, 90: range 20 of mean 100 = 20 %: within.
        let r = judge(&s, &[100.0, 110.0, 90.0]);
        assert!(r.reached);
        assert!((r.range_pct - 20.0).abs() < 1e-9);
        // 21 % is not.
        assert!(!judge(&s, &[100.0, 111.0, 90.0]).reached);
        // Two samples are not a window of three.
        assert!(!judge(&s, &[100.0, 100.0]).reached);
        // Nothing done is not steady.
        assert!(!judge(&s, &[0.0, 0.0, 0.0]).reached);
    }

    #[test]
    fn the_slope_is_per_second_against_the_mean() {
        let s = spec("bw:5%:slope:4s");
        // 100, 104, 108, 112: slope 4 per second, mean 106: 3.77 %.
        let r = judge(&s, &[100.0, 104.0, 108.0, 112.0]);
        assert!(
            (r.slope_pct - 400.0 / 106.0).abs() < 1e-9,
            "{}",
            r.slope_pct
        );
        assert!(r.reached);
        // Falling by 6 a second, mean 91: 6.6 %.
        assert!(!judge(&s, &[100.0, 94.0, 88.0, 82.0]).reached);
        // A wide but flat window passes the slope test, not the range one.
        let r = judge(&s, &[80.0, 120.0, 120.0, 80.0]);
        assert!(r.reached && r.range_pct > 39.0, "{r:?}");
    }

    /// The loop on a board fed by hand: settled counts stop the run within the window
    /// (plus the second that fills it), unsettled ones never do.
    #[test]
    fn the_observer_stops_a_settled_run_and_not_an_unsettled_one() {
        let board = Arc::new(Board::new(1));
        let stop = Arc::new(AtomicBool::new(false));
        let feeder = {
            let board = board.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let t0 = Instant::now();
                while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(6) {
                    let ms = t0.elapsed().as_millis() as u64 + 1;
                    board.publish(0, [ms * 10, 0, ms * 40960, 0]);
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        let obs = Observer::start(
            spec("iops:25%:2s"),
            Duration::ZERO,
            None,
            board,
            stop.clone(),
        )
        .unwrap();
        feeder.join().unwrap();
        let r = obs.finish().unwrap();
        assert!(r.reached, "{r:?}");
        assert!(stop.load(Ordering::Relaxed));
        let at = r.at_s.unwrap();
        assert!((1.5..4.5).contains(&at), "{at}");
        assert!((r.mean - 10_000.0).abs() < 2_500.0, "{r:?}");

        // Doubling every second never settles within 5 %.
        let board = Arc::new(Board::new(1));
        let stop = Arc::new(AtomicBool::new(false));
        let obs = Observer::start(
            spec("iops:5%:2s"),
            Duration::ZERO,
            None,
            board.clone(),
            stop.clone(),
        )
        .unwrap();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(3500) {
            let ms = t0.elapsed().as_millis() as u64 + 1;
            board.publish(0, [ms * ms, 0, 0, 0]);
            std::thread::sleep(Duration::from_millis(5));
        }
        let r = obs.finish().unwrap();
        assert!(!r.reached && r.at_s.is_none(), "{r:?}");
        assert!(!stop.load(Ordering::Relaxed));
        assert_eq!(r.samples.len(), 2);
    }
}
