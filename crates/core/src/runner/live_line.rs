//! The live status line of a run (`--progress`): a thread beside the workers reads their
//! published counters ([`super::live::Board`]) a few times a second and shows the phase, the
//! current read and write rates, the ops done, the elapsed time and the ETA on stderr.
//!
//! On a terminal the line is an `indicatif` bar redrawn in place, and every other line the
//! run prints on stderr while it is shown ([`println`]) goes above it through the bar, so
//! the two never collide. With `--progress always` on something that is not a terminal, the
//! same words are written as plain lines, one every [`LINE_EVERY`] and one per phase.
//! How the line is worded is the report layer's, passed in with the run's
//! [`super::live::Watching`].

use super::live::{Board, LiveMode, LiveView, Watching};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often plain status lines are written when stderr is not a terminal.
pub(crate) const LINE_EVERY: Duration = Duration::from_millis(500);
/// The span the current rates are measured over.
const RATE_WINDOW: Duration = Duration::from_secs(1);
/// How often the terminal line is redrawn.
const REDRAW_EVERY: Duration = Duration::from_millis(200);

/// What a run is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    LayingOut = 0,
    WarmUp = 1,
    Running = 2,
    Verifying = 3,
    Cleanup = 4,
}

impl Phase {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::LayingOut => "laying out files",
            Phase::WarmUp => "warm-up",
            Phase::Running => "running",
            Phase::Verifying => "verifying",
            Phase::Cleanup => "cleanup",
        }
    }
    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::LayingOut,
            1 => Phase::WarmUp,
            3 => Phase::Verifying,
            4 => Phase::Cleanup,
            _ => Phase::Running,
        }
    }
}

/// How a run ends, for the ETA: after a time, or after this many ops in all.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Bounds {
    pub time_s: Option<f64>,
    pub ops: Option<u64>,
}

/// The bar of the line being shown, through which other stderr lines are printed.
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Make `bar` the line other stderr lines go above (None: no line shows). A study's
/// progress line registers itself here.
pub(crate) fn show_bar(bar: Option<ProgressBar>) {
    *BAR.lock().unwrap_or_else(|e| e.into_inner()) = bar;
}

/// One line on stderr that does not collide with the live line: printed above the bar on a
/// terminal, as is otherwise. A stderr that cannot be written is ignored.
pub(crate) fn println(line: &str) {
    let bar = BAR.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match bar {
        Some(b) if !b.is_hidden() => b.suspend(|| write_stderr(line)),
        _ => write_stderr(line),
    }
}

fn write_stderr(line: &str) {
    use std::io::Write;
    // One write: the lines of processes sharing the stream (the ranks under mpirun) are
    // not run together.
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    let _ = std::io::stderr().lock().write_all(&buf);
}

struct Shared {
    watch: Watching,
    phase: AtomicU8,
    done: AtomicBool,
    board: Option<Arc<Board>>,
    /// Whether the workers publish counters on the board (threads of this process, or
    /// worker processes through its shared mapping).
    counters: bool,
    time_s: Option<f64>,
    /// Ops of the whole run when it is bounded by count (0: not known yet, or not bounded).
    ops: AtomicU64,
}

/// The live line of one run, shown while it lives.
pub(crate) struct Display {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Display {
    /// Start showing the line of a run watched as `watch` says (None when the live line is
    /// off). `board`: the workers' counters; `counters` false when they cannot publish there
    /// (phase and time only).
    pub(crate) fn start(
        watch: &Watching,
        board: Option<Arc<Board>>,
        counters: bool,
        bounds: Bounds,
    ) -> Option<Display> {
        let mode = watch.live;
        if mode == LiveMode::Off && !watch.print_intervals {
            return None;
        }
        let shared = Arc::new(Shared {
            watch: watch.clone(),
            phase: AtomicU8::new(Phase::LayingOut as u8),
            done: AtomicBool::new(false),
            board,
            counters,
            time_s: bounds.time_s,
            ops: AtomicU64::new(bounds.ops.unwrap_or(0)),
        });
        let bar = (mode == LiveMode::Terminal).then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
            b.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            b
        });
        *BAR.lock().unwrap_or_else(|e| e.into_inner()) = bar.clone();
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fsbench-live".into())
            .spawn(move || show(&s, bar, mode))
            .ok();
        Some(Display { shared, thread })
    }

    /// The run's total ops, once known (count-bounded runs: for the ETA).
    pub(crate) fn set_total_ops(&self, ops: u64) {
        self.shared.ops.store(ops, Ordering::Relaxed);
    }

    pub(crate) fn phase(&self, p: Phase) {
        self.shared.phase.store(p as u8, Ordering::Relaxed);
    }

    /// Stop showing the line and clear it.
    pub(crate) fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(b) = BAR.lock().unwrap_or_else(|e| e.into_inner()).take() {
            b.finish_and_clear();
        }
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The display thread: sample, word, draw, until the run is done.
fn show(s: &Shared, bar: Option<ProgressBar>, mode: LiveMode) {
    let period = if mode == LiveMode::Terminal {
        REDRAW_EVERY
    } else {
        LINE_EVERY
    };
    // The current rate: over the samples of the last RATE_WINDOW (workers publish every
    // 100 ms, so a shorter window would see 1, 2 or 3 publications and flicker).
    let mut window: std::collections::VecDeque<(Instant, [u64; 4])> = Default::default();
    let mut running_since: Option<Instant> = None;
    let mut shown_phase = u8::MAX;
    let mut next_line = Instant::now();
    let mut intervals = s
        .watch
        .print_intervals
        .then_some(s.watch.status_interval)
        .flatten()
        .map(IntervalLines::new);
    loop {
        let done = s.done.load(Ordering::Relaxed);
        let mut phase = Phase::from_u8(s.phase.load(Ordering::Relaxed));
        if phase == Phase::Running
            && s.board
                .as_ref()
                .is_some_and(|b| b.verifying.load(Ordering::Relaxed))
        {
            phase = Phase::Verifying;
        }
        let now = Instant::now();
        if matches!(phase, Phase::Running | Phase::WarmUp) && running_since.is_none() {
            running_since = Some(now);
            window.clear();
        }
        let totals = s.board.as_ref().map_or([0; 4], |b| b.totals());
        window.push_back((now, totals));
        while window.len() > 2 && now.duration_since(window[1].0) >= RATE_WINDOW {
            window.pop_front();
        }
        let (t_old, old) = window[0];
        let dt = now.duration_since(t_old).as_secs_f64();
        let rate = |i: usize| {
            if dt > 0.0 {
                totals[i].saturating_sub(old[i]) as f64 / dt
            } else {
                0.0
            }
        };
        let elapsed_s = running_since.map_or(0.0, |t| now.duration_since(t).as_secs_f64());
        let mut view = LiveView {
            phase: phase.name(),
            elapsed_s,
            read_ops: totals[0],
            write_ops: totals[1],
            read_iops: rate(0),
            write_iops: rate(1),
            read_bytes_per_sec: rate(2),
            write_bytes_per_sec: rate(3),
            counters: s.counters,
            ..Default::default()
        };
        if matches!(phase, Phase::Running | Phase::WarmUp) {
            let bounds = Bounds {
                time_s: s.time_s,
                ops: Some(s.ops.load(Ordering::Relaxed)).filter(|&n| n > 0),
            };
            view.eta_s = eta(bounds, elapsed_s, totals[0] + totals[1]);
        }
        if phase == Phase::LayingOut {
            if let Some(b) = &s.board {
                let total = b.layout_total.load(Ordering::Relaxed);
                let done = b.layout_done.load(Ordering::Relaxed);
                if total > 0 || done > 0 {
                    view.layout = Some((done, total));
                }
            }
        }
        if let Some(lines) = intervals.as_mut().filter(|_| running_since.is_some()) {
            lines.at(now, totals);
        }
        if done {
            break;
        }
        if mode == LiveMode::Off {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        let text = s.watch.render(&view);
        match &bar {
            Some(b) => {
                b.set_message(text);
                b.tick();
            }
            None => {
                if phase as u8 != shown_phase || now >= next_line {
                    write_stderr(&text);
                    shown_phase = phase as u8;
                    next_line = now + period;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50).min(period));
    }
}

/// `--interval-print`: one line per `--status-interval` of the run, from the board's
/// counters (so each line is within a publication, 100 ms, of the interval's edges).
struct IntervalLines {
    every: Duration,
    start: Option<Instant>,
    next: Instant,
    last: [u64; 4],
    last_at: Instant,
    n: u64,
}

impl IntervalLines {
    fn new(every: Duration) -> IntervalLines {
        IntervalLines {
            every,
            start: None,
            next: Instant::now(),
            last: [0; 4],
            last_at: Instant::now(),
            n: 0,
        }
    }

    /// The run is at `now` with the counters at `totals`: print the interval that ended.
    fn at(&mut self, now: Instant, totals: [u64; 4]) {
        let Some(start) = self.start else {
            (self.start, self.next) = (Some(now), now + self.every);
            (self.last, self.last_at) = (totals, now);
            return;
        };
        if now < self.next {
            return;
        }
        self.n += 1;
        let secs = now.duration_since(self.last_at).as_secs_f64().max(1e-9);
        let d = |i: usize| totals[i].saturating_sub(self.last[i]) as f64 / secs;
        println(&format!(
            "interval {:>4} t={:.3}s: read {:.0} IOPS {:.2} MB/s, write {:.0} IOPS {:.2} MB/s",
            self.n,
            now.duration_since(start).as_secs_f64(),
            d(0),
            d(2) / 1e6,
            d(1),
            d(3) / 1e6,
        ));
        (self.last, self.last_at) = (totals, now);
        self.next += self.every;
        if self.next <= now {
            self.next = now + self.every;
        }
    }
}

/// Seconds left of a run bounded by time or count.
fn eta(b: Bounds, elapsed_s: f64, ops: u64) -> Option<f64> {
    if let Some(t) = b.time_s {
        return Some((t - elapsed_s).max(0.0));
    }
    let total = b.ops? as f64;
    if ops == 0 || elapsed_s <= 0.0 {
        return None;
    }
    let per_s = ops as f64 / elapsed_s;
    Some(((total - ops as f64) / per_s).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_from_time_or_count() {
        let timed = Bounds {
            time_s: Some(10.0),
            ops: None,
        };
        assert_eq!(eta(timed, 4.0, 5), Some(6.0));
        let counted = Bounds {
            time_s: None,
            ops: Some(1000),
        };
        assert_eq!(eta(counted, 2.0, 250), Some(6.0));
        assert_eq!(eta(counted, 0.0, 0), None);
        assert_eq!(eta(Bounds::default(), 3.0, 9), None);
    }
}
