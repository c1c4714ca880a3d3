//! Watching a run while it runs (`--progress`, `--status-interval`, issue #14).
//!
//! Two things, both off unless asked for, and neither adds a lock, an allocation or a system
//! call per I/O:
//!
//! - **Live counters** for the status line. Each worker thread owns one cache-line-padded
//!   `Slot` on the run's `Board` and publishes its running read/write ops and bytes there
//!   with `Relaxed` stores, at most every `PUBLISH_NS` (10 times a second), never per I/O.
//!   A display thread in the runner reads the slots and draws the line. When the workers are
//!   processes (`--processes`, vxbench -P), the slots live in a `MAP_SHARED` mapping of a
//!   memfd the parent creates before starting them (`Watching::open_shared_board`); each child
//!   (fork + exec of `fsbench __worker`) inherits that descriptor alone, maps it
//!   (`attach_board`) and publishes into the same slots with the same stores.
//! - **Intervals** for the time series in the Result. At each `--status-interval` boundary the
//!   worker itself closes an interval: the ops and bytes since the last boundary and the
//!   latency histogram of just that interval (its cumulative histogram minus a copy taken at
//!   the last boundary), kept as non-empty buckets in a [`IntervalSample`]. The worker keeps
//!   its samples and hands them over with its outcome at the end (through the pipe for worker
//!   processes), where `merge_series` adds all workers' interval *k* together. Chosen over a
//!   channel to a sampler thread because the samples are only needed at the end, and so a
//!   worker process ships them exactly like its `Stats`. Without `--status-interval` a Job's
//!   workers still keep intervals, on a default grid and counts only (no histogram), for the
//!   run's stability figures (`super::stability`); that series is not stored.
//!
//! Both happen in `Roller::tick`, which the timed loops call only when the clock reading
//! they already take passes the next event time: in the QD1 loop that compare replaces the
//! deadline compare (the deadline is one of the events), so an unwatched run pays nothing.
//! A tick costs one histogram subtraction and copy (~4600 buckets, a few microseconds) per
//! interval, once per worker, counted inside the interval it closes; a counts-only tick a
//! few subtractions.
//!
//! Nothing here is process-wide: the front end builds one [`Watching`] from its flags (with
//! the report layer's renderer) and passes it with every run; the run opens its own board and
//! hands its workers a `WorkerWatch` as they are prepared.

pub use crate::result::IntervalReport;
use crate::stats::{LatencyHist, Stats};
use serde::{Deserialize, Serialize};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// How often a worker publishes its counters for the live line.
pub(crate) const PUBLISH_NS: u64 = 100_000_000;

/// Where the live line goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LiveMode {
    #[default]
    Off,
    /// Redrawn in place (stderr is a terminal).
    Terminal,
    /// Plain lines (`--progress always` without a terminal).
    Lines,
}

/// What the live line shows at one moment.
#[derive(Debug, Clone, Default)]
pub struct LiveView {
    pub phase: &'static str,
    /// Seconds since the phase `running` began (0 before).
    pub elapsed_s: f64,
    /// Seconds left, when the run is bounded by time or by count and the rate is known.
    pub eta_s: Option<f64>,
    pub read_ops: u64,
    pub write_ops: u64,
    /// Current rates, over the last redraw period.
    pub read_iops: f64,
    pub write_iops: f64,
    pub read_bytes_per_sec: f64,
    pub write_bytes_per_sec: f64,
    /// Bytes laid out so far and in all (while laying out files).
    pub layout: Option<(u64, u64)>,
    /// False when the workers cannot publish live counters (worker processes).
    pub counters: bool,
}

/// How a live view becomes a line (the report layer's words, passed in by the front end).
pub(crate) type Render = fn(&LiveView) -> String;

/// The line without the report layer's words (a run whose front end passed none).
fn plain_render(view: &LiveView) -> String {
    format!("[{}] {:.0}s", view.phase, view.elapsed_s)
}

/// How a run is watched (`--status-interval`, `--progress`): built once by the front end from
/// its flags and passed with every run it starts, so nothing process-wide decides it.
#[derive(Clone)]
pub struct Watching {
    pub status_interval: Option<std::time::Duration>,
    pub live: LiveMode,
    /// How the live line is worded.
    pub render: Render,
    /// The run is a warm-up (`quick --warmup`): its line says so.
    pub warm_up: bool,
    /// `--trace`: the session the run's workers record into (made by its observer).
    pub trace: Option<Arc<crate::trace::TraceSession>>,
    /// `--interval-print`: a line on stderr for every `status_interval` while the run goes.
    pub print_intervals: bool,
}

impl Default for Watching {
    fn default() -> Watching {
        Watching {
            status_interval: None,
            live: LiveMode::Off,
            render: plain_render,
            warm_up: false,
            trace: None,
            print_intervals: false,
        }
    }
}

impl std::fmt::Debug for Watching {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watching")
            .field("status_interval", &self.status_interval)
            .field("live", &self.live)
            .field("warm_up", &self.warm_up)
            .field("traced", &self.trace.is_some())
            .field("print_intervals", &self.print_intervals)
            .finish_non_exhaustive()
    }
}

/// The settings compared; the renderer (how they are shown) and the trace session (what the
/// run records into) are not among them.
impl PartialEq for Watching {
    fn eq(&self, o: &Watching) -> bool {
        self.status_interval == o.status_interval
            && self.live == o.live
            && self.warm_up == o.warm_up
            && self.print_intervals == o.print_intervals
    }
}

impl Watching {
    /// The interval of the time series in ns, if one is kept.
    pub(crate) fn interval_ns(&self) -> Option<u64> {
        self.status_interval
            .map(|d| d.as_nanos().clamp(1, u64::MAX as u128) as u64)
    }

    /// Whether the run's workers publish live counters: for the live line or the interval
    /// lines.
    pub(crate) fn live_enabled(&self) -> bool {
        self.live != LiveMode::Off || self.print_intervals
    }

    /// The same watching for runs that show no live line of their own (a study's points, a
    /// worker process).
    pub(crate) fn without_line(self) -> Watching {
        Watching {
            live: LiveMode::Off,
            ..self
        }
    }

    /// The live line's words for `view`.
    pub(crate) fn render(&self, view: &LiveView) -> String {
        (self.render)(view)
    }

    /// The board for a run of `workers` worker threads (when the live line is on).
    pub(crate) fn open_board(&self, workers: usize) -> Option<Arc<Board>> {
        self.live_enabled().then(|| Arc::new(Board::new(workers)))
    }

    /// The board for a run of `workers` worker *processes* (when the live line is on): its
    /// slots in a shared mapping the workers map through [`BoardShare`]. If the mapping
    /// cannot be made, the board is this process's own and the line shows no rates.
    pub(crate) fn open_shared_board(&self, workers: usize) -> Option<Arc<Board>> {
        if !self.live_enabled() {
            return None;
        }
        let b = match SharedSlots::create(workers) {
            Ok(s) if workers > 0 => Board::with(SlotStore::Shared(s)),
            _ => Board::new(workers),
        };
        Some(Arc::new(b))
    }

    /// What the workers of a run publish to: `board` (None: no live line) and the intervals.
    pub(crate) fn for_workers(&self, board: Option<Arc<Board>>) -> WorkerWatch {
        WorkerWatch {
            board,
            interval_ns: self.interval_ns(),
            trace: self.trace.clone(),
            publish_ns: None,
            stop: None,
            counts_only: false,
        }
    }
}

/// What the workers of one run publish to, handed to each as it is prepared: the run's board
/// (live counters), the `--status-interval` grid and the trace session (`--trace`).
#[derive(Clone, Default)]
pub(crate) struct WorkerWatch {
    pub board: Option<Arc<Board>>,
    pub interval_ns: Option<u64>,
    pub trace: Option<Arc<crate::trace::TraceSession>>,
    /// How often the workers publish on the board (None: [`PUBLISH_NS`]); the steady-state
    /// observer asks for more often, so that its 1-second samples are exact to ~1 %.
    pub publish_ns: Option<u64>,
    /// The run's stop flag, when someone besides the workers may raise it (the steady-state
    /// observer); None: the run makes its own.
    pub stop: Option<Arc<AtomicBool>>,
    /// The intervals are kept for the run's stability figures only (no `--status-interval`):
    /// ops and bytes, no latency histogram per interval.
    pub counts_only: bool,
}

/// One worker's published counters, alone on its cache lines (only it writes them).
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Slot {
    read_ops: AtomicU64,
    write_ops: AtomicU64,
    read_bytes: AtomicU64,
    write_bytes: AtomicU64,
    /// Sum of the read and write latencies, ns (mean latency for the steady-state observer).
    lat_sum_ns: AtomicU64,
}

/// The slots of a board shared with worker processes: a `MAP_SHARED` mapping of a memfd.
struct SharedSlots {
    ptr: *mut Slot,
    len: usize,
    fd: OwnedFd,
}

// SAFETY: the mapping is only touched through the slots' atomics and lives as long as this.
unsafe impl Send for SharedSlots {}
// SAFETY: as above: every shared word is an atomic.
unsafe impl Sync for SharedSlots {}

impl SharedSlots {
    fn bytes(len: usize) -> usize {
        len * std::mem::size_of::<Slot>()
    }

    /// A fresh zeroed mapping of `len` slots (len > 0). The memfd is close-on-exec: a worker
    /// process gets it only through [`crate::runner::drive::start_process_with`].
    fn create(len: usize) -> std::io::Result<SharedSlots> {
        // SAFETY: a valid NUL-terminated name; MFD_CLOEXEC keeps it out of other programs.
        let raw = unsafe { libc::memfd_create(c"fsbench-live".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: raw is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        crate::sys::ftruncate(fd.as_raw_fd(), Self::bytes(len) as u64)?;
        Self::map(fd, len)
    }

    /// Map the parent's board (worker process side): `fd` must be a memfd of at least `len`
    /// slots.
    fn attach(fd: RawFd, len: usize) -> std::io::Result<SharedSlots> {
        let st = match crate::sys::fstat(fd) {
            Ok(st) if len > 0 => st,
            _ => return Err(std::io::Error::other("no live board descriptor")),
        };
        if (st.st_mode & libc::S_IFMT) != libc::S_IFREG
            || (st.st_size as u64) < Self::bytes(len) as u64
        {
            return Err(std::io::Error::other(
                "the live board descriptor is not the parent's board",
            ));
        }
        // SAFETY: the parent handed this descriptor number to this process for the board
        // and nothing else here owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Self::map(fd, len)
    }

    fn map(fd: OwnedFd, len: usize) -> std::io::Result<SharedSlots> {
        // SAFETY: mapping a descriptor of at least `bytes(len)` bytes, shared, read-write.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::bytes(len),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(SharedSlots {
            ptr: p as *mut Slot,
            len,
            fd,
        })
    }

    fn slots(&self) -> &[Slot] {
        // SAFETY: the mapping holds `len` slots, page-aligned (Slot needs 128), zero-filled
        // or written only through atomics, and lives as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for SharedSlots {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `map`; no slot reference outlives
        // self (they borrow it).
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, Self::bytes(self.len)) };
    }
}

/// Where a board's slots live.
enum SlotStore {
    /// This process's memory: worker threads.
    Own(Box<[Slot]>),
    /// A mapping worker processes share.
    Shared(SharedSlots),
}

/// What a worker process needs to publish on its parent's board: the inherited descriptor
/// and the number of slots.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct BoardShare {
    pub fd: RawFd,
    pub slots: usize,
}

/// The slots of one run, one per worker thread.
pub(crate) struct Board {
    slots: SlotStore,
    /// Bytes laid out so far and in all (file preallocation before the run).
    pub layout_done: AtomicU64,
    pub layout_total: AtomicU64,
    /// Set by a worker that starts reading back what it wrote (`--verify`), after its timed
    /// loop: the line then says `verifying`.
    pub verifying: AtomicBool,
}

impl Board {
    /// A board of this process's own, for `workers` worker threads.
    pub(crate) fn new(workers: usize) -> Board {
        Self::with(SlotStore::Own(
            (0..workers).map(|_| Slot::default()).collect(),
        ))
    }

    fn with(slots: SlotStore) -> Board {
        Board {
            slots,
            layout_done: AtomicU64::new(0),
            layout_total: AtomicU64::new(0),
            verifying: AtomicBool::new(false),
        }
    }

    fn slots(&self) -> &[Slot] {
        match &self.slots {
            SlotStore::Own(s) => s,
            SlotStore::Shared(s) => s.slots(),
        }
    }

    /// How a worker process reaches this board (None: its slots are this process's own).
    pub(crate) fn share(&self) -> Option<BoardShare> {
        match &self.slots {
            SlotStore::Own(_) => None,
            SlotStore::Shared(s) => Some(BoardShare {
                fd: s.fd.as_raw_fd(),
                slots: s.len,
            }),
        }
    }

    /// Publish worker `i`'s running counters (read ops, write ops, read bytes, write bytes);
    /// only worker `i` calls this for its slot.
    pub(crate) fn publish(&self, i: usize, c: [u64; 4]) {
        if let Some(s) = self.slots().get(i) {
            s.read_ops.store(c[0], Ordering::Relaxed);
            s.write_ops.store(c[1], Ordering::Relaxed);
            s.read_bytes.store(c[2], Ordering::Relaxed);
            s.write_bytes.store(c[3], Ordering::Relaxed);
        }
    }

    /// Publish worker `i`'s running sum of read and write latencies (ns).
    pub(crate) fn publish_latency(&self, i: usize, sum_ns: u64) {
        if let Some(s) = self.slots().get(i) {
            s.lat_sum_ns.store(sum_ns, Ordering::Relaxed);
        }
    }

    /// Sum of every worker's published latency sums (ns).
    pub(crate) fn latency_sum(&self) -> u64 {
        self.slots()
            .iter()
            .map(|s| s.lat_sum_ns.load(Ordering::Relaxed))
            .fold(0, u64::saturating_add)
    }

    /// Sum of every worker's published counters: (read ops, write ops, read bytes, write bytes).
    pub(crate) fn totals(&self) -> [u64; 4] {
        let mut t = [0u64; 4];
        for s in self.slots().iter() {
            t[0] += s.read_ops.load(Ordering::Relaxed);
            t[1] += s.write_ops.load(Ordering::Relaxed);
            t[2] += s.read_bytes.load(Ordering::Relaxed);
            t[3] += s.write_bytes.load(Ordering::Relaxed);
        }
        t
    }
}

/// Worker process side: map the parent's board, for this process's workers to publish on
/// ([`Roller::for_worker`]).
pub(crate) fn attach_board(share: BoardShare) -> std::io::Result<Arc<Board>> {
    let s = SharedSlots::attach(share.fd, share.slots)?;
    Ok(Arc::new(Board::with(SlotStore::Shared(s))))
}

/// One closed interval of one worker.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct IntervalSample {
    /// 0-based interval number since the worker's start.
    pub index: u32,
    /// When the interval closed, ns after the worker's start.
    pub end_ns: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    pub other_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Latency histogram of this interval's I/Os, `[value_ns, count]`.
    pub lat_buckets: Vec<[u64; 2]>,
}

/// A minimum rate one worker must keep (fio's `rate_min`, `rate_iops_min`): judged at the
/// end of every cycle (`rate_cycle`) from its running counters, in every direction it
/// issues, the first cycle starting after a settle time (2 s, as fio) and after the
/// warm-up. Plain numbers, judged in [`Roller::tick`]: nothing per I/O.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct MinRate {
    bytes_per_sec: Option<f64>,
    iops: Option<f64>,
    cycle_ns: u64,
    settle_ns: u64,
    /// The directions the worker issues: reads, writes, trims.
    dirs: [bool; 3],
    /// The loop starts with a warm-up: judging starts when it ends.
    after_warm_up: bool,
}

impl MinRate {
    /// The minimum of one worker of `job` that issues `dirs`, None when the job has none.
    /// With `--rate-scope total` each worker's share, as with the rate itself.
    pub(crate) fn for_worker(job: &crate::job::Job, dirs: (bool, bool, bool)) -> Option<MinRate> {
        let r = &job.rate;
        if !r.has_min() {
            return None;
        }
        let share = match r.scope {
            crate::job::RateScope::Thread => 1.0,
            crate::job::RateScope::Total => job.total_threads().max(1) as f64,
        };
        Some(MinRate {
            bytes_per_sec: r.min_bytes_per_sec.map(|b| b as f64 / share),
            iops: r.min_iops.map(|n| n as f64 / share),
            cycle_ns: r.cycle_ms.unwrap_or(crate::job::DEFAULT_RATE_CYCLE_MS) * 1_000_000,
            settle_ns: crate::job::MIN_RATE_SETTLE_MS * 1_000_000,
            dirs: [dirs.0, dirs.1, dirs.2],
            after_warm_up: job.ramp_s.is_some_and(|r| r > 0.0) || job.ramp_bytes.is_some(),
        })
    }
}

/// A cycle that fell below the minimum: which, in which direction, and by how much.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MinRateMiss {
    /// 1-based number of the judged cycle.
    pub cycle: u32,
    /// The cycle's start and end, seconds after the (measured) start of the loop.
    pub from_s: f64,
    pub to_s: f64,
    /// 0 reads, 1 writes, 2 trims.
    pub dir: usize,
    /// Whether the byte rate fell short (else the I/O rate).
    pub bytes: bool,
    pub got: f64,
    pub min: f64,
}

impl MinRateMiss {
    /// The worker's failure, in one line.
    #[cold]
    pub(crate) fn message(&self) -> String {
        let dir = ["reads", "writes", "trims"][self.dir.min(2)];
        let (got, min, option) = if self.bytes {
            (
                crate::units::format_rate(self.got),
                crate::units::format_rate(self.min),
                "rate_min, --rate-min",
            )
        } else {
            (
                format!("{:.1} I/O/s", self.got),
                format!("{:.1} I/O/s", self.min),
                "rate_iops_min, --rate-iops-min",
            )
        };
        format!(
            "minimum rate not met: in cycle {} ({:.3} s to {:.3} s of the run) {dir} went at {got}, below the worker's minimum of {min} ({option})",
            self.cycle, self.from_s, self.to_s
        )
    }
}

/// Where a worker's minimum-rate judging stands.
struct MinJudge {
    rate: Option<MinRate>,
    /// When the current cycle ends (u64::MAX: nothing to judge).
    next: u64,
    /// The current cycle's start (clock reading) and the counters then: ops and bytes of
    /// reads, writes, trims. None before the settle time has passed.
    base: Option<(u64, [u64; 6])>,
    cycle: u32,
    missed: Option<MinRateMiss>,
}

impl Default for MinJudge {
    fn default() -> MinJudge {
        MinJudge {
            rate: None,
            next: u64::MAX,
            base: None,
            cycle: 0,
            missed: None,
        }
    }
}

fn dir_counters(s: &Stats) -> [u64; 6] {
    [
        s.read_ops,
        s.write_ops,
        s.trim_ops,
        s.read_bytes,
        s.write_bytes,
        s.trim_bytes,
    ]
}

impl MinJudge {
    /// The loop (re)started at `t0`: the first cycle starts after the settle time, unless
    /// a warm-up is still to end (`warm_up_over` false).
    fn start(&mut self, t0: u64, warm_up_over: bool) {
        self.base = None;
        self.cycle = 0;
        self.next = match self.rate {
            Some(r) if warm_up_over || !r.after_warm_up => t0.saturating_add(r.settle_ns),
            _ => u64::MAX,
        };
    }

    /// At or past `next`: judge the cycle that ended (if one started), start the next.
    fn judge(&mut self, now: u64, t0: u64, stats: &Stats) {
        let Some(r) = self.rate else {
            self.next = u64::MAX;
            return;
        };
        let c = dir_counters(stats);
        if let Some((from, prev)) = self.base {
            self.cycle += 1;
            let secs = now.saturating_sub(from).max(1) as f64 / 1e9;
            for d in (0..3).filter(|&d| r.dirs[d]) {
                let ops = c[d].saturating_sub(prev[d]) as f64 / secs;
                let bytes = c[3 + d].saturating_sub(prev[3 + d]) as f64 / secs;
                let short = [(true, bytes, r.bytes_per_sec), (false, ops, r.iops)]
                    .into_iter()
                    .find_map(|(is_bytes, got, min)| {
                        min.filter(|&m| got < m).map(|m| (is_bytes, got, m))
                    });
                if let Some((is_bytes, got, min)) = short {
                    self.missed = Some(MinRateMiss {
                        cycle: self.cycle,
                        from_s: from.saturating_sub(t0) as f64 / 1e9,
                        to_s: now.saturating_sub(t0) as f64 / 1e9,
                        dir: d,
                        bytes: is_bytes,
                        got,
                        min,
                    });
                    self.next = u64::MAX;
                    return;
                }
            }
        }
        self.base = Some((now, c));
        self.next = now.saturating_add(r.cycle_ns);
    }
}

/// What a worker does at its events: publish counters, close intervals, judge a minimum
/// rate.
#[derive(Default)]
pub(crate) struct Roller {
    t0: u64,
    interval_ns: u64,
    next_interval: u64,
    next_publish: u64,
    publish_ns: u64,
    slot: Option<(Arc<Board>, usize)>,
    /// Intervals keep no latency (see [`WorkerWatch::counts_only`]).
    counts_only: bool,
    /// Counters and latency at the last interval boundary.
    prev: [u64; 5],
    prev_lat: LatencyHist,
    index: u32,
    samples: Vec<IntervalSample>,
    /// `--rate-min`, `--rate-iops-min`: judged at the end of every cycle.
    min: MinJudge,
}

fn counters(s: &Stats) -> [u64; 5] {
    [
        s.read_ops,
        s.write_ops,
        // Trims are neither reads nor writes: an interval counts them with the other ops.
        s.other_ops + s.trim_ops,
        s.read_bytes,
        s.write_bytes,
    ]
}

impl Roller {
    /// The roller of worker number `worker` of the run, as the run is watched (untimed).
    pub(crate) fn for_worker(worker: usize, watch: &WorkerWatch) -> Roller {
        let slot = watch
            .board
            .clone()
            .filter(|b| worker < b.slots().len())
            .map(|b| (b, worker));
        let interval_ns = watch.interval_ns.unwrap_or(0);
        let mut r = Roller {
            interval_ns,
            publish_ns: watch.publish_ns.unwrap_or(PUBLISH_NS),
            slot,
            counts_only: watch.counts_only,
            ..Default::default()
        };
        if interval_ns > 0 {
            if !r.counts_only {
                r.prev_lat = LatencyHist::new();
            }
            // Room for the expected intervals of a short run; longer runs grow it once per
            // many intervals, at a boundary.
            r.samples.reserve(64);
        }
        r
    }

    /// A roller that keeps `--status-interval` intervals only (a workload or replay thread:
    /// their live counters are elsewhere).
    pub(crate) fn intervals_only(interval_ns: Option<u64>) -> Roller {
        let mut r = Roller {
            interval_ns: interval_ns.unwrap_or(0),
            ..Default::default()
        };
        if r.interval_ns > 0 {
            r.prev_lat = LatencyHist::new();
            r.samples.reserve(64);
        }
        r
    }

    /// Judge `min` as well (None: no minimum rate).
    pub(crate) fn judging(mut self, min: Option<MinRate>) -> Roller {
        self.min.rate = min;
        self
    }

    /// The cycle that fell below the minimum rate, once (the loop then stops the run).
    #[inline]
    pub(crate) fn take_missed(&mut self) -> Option<MinRateMiss> {
        self.min.missed.take()
    }

    /// Start over at clock reading `t0`, forgetting what was counted before (the warm-up
    /// ended: the counts went back to zero). Returns the next event time.
    #[cold]
    pub(crate) fn restart(&mut self, t0: u64) -> u64 {
        self.prev = [0; 5];
        if self.interval_ns > 0 && !self.counts_only {
            self.prev_lat = LatencyHist::new();
        }
        self.index = 0;
        self.samples.clear();
        self.begin(t0, true)
    }

    /// Start at clock reading `t0`; returns the first event time (u64::MAX: none).
    pub(crate) fn start(&mut self, t0: u64) -> u64 {
        self.begin(t0, false)
    }

    fn begin(&mut self, t0: u64, warm_up_over: bool) -> u64 {
        self.min.start(t0, warm_up_over);
        self.t0 = t0;
        self.next_interval = if self.interval_ns > 0 {
            t0.saturating_add(self.interval_ns)
        } else {
            u64::MAX
        };
        self.next_publish = if self.slot.is_some() {
            t0.saturating_add(self.publish_ns)
        } else {
            u64::MAX
        };
        self.next_event()
    }

    #[inline(always)]
    fn next_event(&self) -> u64 {
        self.next_interval.min(self.next_publish).min(self.min.next)
    }

    /// At clock reading `now` (at or past the next event): publish and close what is due.
    /// Returns the next event time.
    #[cold]
    #[inline(never)]
    pub(crate) fn tick(&mut self, now: u64, stats: &Stats) -> u64 {
        if now >= self.next_publish {
            self.publish(stats);
            self.next_publish = now.saturating_add(self.publish_ns);
        }
        if now >= self.next_interval {
            // Numbered by the boundary it passed (a late tick still closes that interval).
            let index = ((self.next_interval - self.t0) / self.interval_ns).saturating_sub(1);
            self.close(now, stats, index as u32);
            // The next boundary on the grid from t0 (a stall over several intervals leaves
            // them empty rather than shifting the grid).
            let k = (now - self.t0) / self.interval_ns + 1;
            self.next_interval = self.t0.saturating_add(k.saturating_mul(self.interval_ns));
        }
        if now >= self.min.next {
            self.min.judge(now, self.t0, stats);
        }
        self.next_event()
    }

    fn publish(&self, stats: &Stats) {
        if let Some((b, i)) = &self.slot {
            // The board has a read and a write side: a trim changes the target as a write
            // does, so the live line and the steady-state watch count it there.
            b.publish(
                *i,
                [
                    stats.read_ops,
                    stats.write_ops + stats.trim_ops,
                    stats.read_bytes,
                    stats.write_bytes + stats.trim_bytes,
                ],
            );
            b.publish_latency(
                *i,
                stats
                    .read_lat
                    .sum()
                    .saturating_add(stats.write_lat.sum())
                    .saturating_add(stats.trim_lat.sum()),
            );
        }
    }

    fn close(&mut self, now: u64, stats: &Stats, index: u32) {
        let c = counters(stats);
        let index = index.max(self.index);
        let lat_buckets = if self.counts_only {
            Vec::new()
        } else {
            // The directions merged (one allocation per interval, never per I/O).
            let all = stats.lat();
            let buckets = all.buckets_since(&self.prev_lat);
            self.prev_lat.copy_from(&all);
            buckets
        };
        self.samples.push(IntervalSample {
            index,
            end_ns: now.saturating_sub(self.t0),
            read_ops: c[0] - self.prev[0],
            write_ops: c[1] - self.prev[1],
            other_ops: c[2] - self.prev[2],
            read_bytes: c[3] - self.prev[3],
            write_bytes: c[4] - self.prev[4],
            lat_buckets,
        });
        self.prev = c;
        self.index = index + 1;
    }

    /// The worker ended at clock reading `end` with `stats`: publish the totals, close the
    /// last (partial) interval, and hand over every interval.
    pub(crate) fn finish(&mut self, end: u64, stats: &Stats) -> Vec<IntervalSample> {
        self.publish(stats);
        if self.interval_ns > 0 && (counters(stats) != self.prev || self.samples.is_empty()) {
            let end = end.max(self.t0);
            // The interval that holds the end.
            let index = (end - self.t0).saturating_sub(1) / self.interval_ns;
            self.close(end, stats, index as u32);
        }
        std::mem::take(&mut self.samples)
    }
}

/// All workers' interval *k* added together, for every *k*, in order. With the grid
/// (`grid_ns`, the `--status-interval`) every interval but the last ends on its boundary and
/// the last when the last worker ended; without it, each ends when its last worker closed it.
pub(crate) fn merge_series<'a>(
    workers: impl IntoIterator<Item = &'a [IntervalSample]>,
    grid_ns: Option<u64>,
) -> Vec<IntervalReport> {
    let mut by_index: std::collections::BTreeMap<u32, (u64, [u64; 5], LatencyHist)> =
        Default::default();
    for samples in workers {
        for s in samples {
            let e = by_index.entry(s.index).or_default();
            e.0 = e.0.max(s.end_ns);
            for (a, b) in e.1.iter_mut().zip([
                s.read_ops,
                s.write_ops,
                s.other_ops,
                s.read_bytes,
                s.write_bytes,
            ]) {
                *a += b;
            }
            for [v, n] in &s.lat_buckets {
                e.2.record_n(*v, *n);
            }
        }
    }
    let mut out = Vec::with_capacity(by_index.len());
    let mut prev_t = 0.0f64;
    let last = by_index.keys().next_back().copied();
    for (index, (end_ns, c, lat)) in by_index {
        let end_ns = match grid_ns {
            Some(g) if Some(index) != last => (index as u64 + 1).saturating_mul(g),
            _ => end_ns,
        };
        let t_s = (end_ns as f64 / 1e9).max(prev_t);
        let interval_s = t_s - prev_t;
        prev_t = t_s;
        let rate = |v: u64| {
            if interval_s > 0.0 {
                v as f64 / interval_s
            } else {
                0.0
            }
        };
        let ops = c[0] + c[1] + c[2];
        let bytes = c[3] + c[4];
        out.push(IntervalReport {
            t_s,
            interval_s,
            ops,
            read_ops: c[0],
            write_ops: c[1],
            other_ops: c[2],
            bytes,
            read_bytes: c[3],
            write_bytes: c[4],
            iops: rate(ops),
            read_iops: rate(c[0]),
            write_iops: rate(c[1]),
            bytes_per_sec: rate(bytes),
            read_bytes_per_sec: rate(c[3]),
            write_bytes_per_sec: rate(c[4]),
            lat_ns: lat.summary(),
            host: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(r: u64, w: u64, lat: &[u64]) -> Stats {
        let mut s = Stats {
            read_ops: r,
            write_ops: w,
            read_bytes: r * 4096,
            write_bytes: w * 4096,
            ..Default::default()
        };
        s.read_lat = LatencyHist::new();
        for &l in lat {
            s.read_lat.record(l);
        }
        s
    }

    #[test]
    fn intervals_telescope_to_the_totals_and_carry_their_own_latency() {
        let mut r = Roller {
            interval_ns: 100,
            prev_lat: LatencyHist::new(),
            ..Default::default()
        };
        assert_eq!(r.start(1000), 1100);
        let mut s = stats(3, 1, &[10, 10, 10, 10]);
        assert_eq!(r.tick(1100, &s), 1200);
        s = stats(5, 2, &[10, 10, 10, 10, 5000, 5000, 5000]);
        // A stall past two boundaries: the grid stays, the interval is numbered by the
        // boundary it passed first.
        assert_eq!(r.tick(1350, &s), 1400);
        s = stats(6, 2, &[10, 10, 10, 10, 5000, 5000, 5000, 7]);
        let samples = r.finish(1420, &s);
        assert_eq!(samples.len(), 3);
        assert_eq!(samples[0].index, 0);
        assert_eq!(samples[1].index, 1);
        assert_eq!(samples[2].index, 4);
        let series = merge_series([samples.as_slice(), samples.as_slice()], None);
        let gridded = merge_series([samples.as_slice()], Some(100));
        let t: Vec<f64> = gridded.iter().map(|i| i.t_s * 1e9).collect();
        assert_eq!(t.len(), 3);
        assert!(
            (t[0] - 100.0).abs() < 1e-6 && (t[1] - 200.0).abs() < 1e-6,
            "{t:?}"
        );
        assert!((t[2] - 420.0).abs() < 1e-6, "{t:?}");
        let ops: u64 = series.iter().map(|i| i.ops).sum();
        let bytes: u64 = series.iter().map(|i| i.bytes).sum();
        assert_eq!(ops, 2 * 8);
        assert_eq!(bytes, 2 * 8 * 4096);
        assert_eq!(series[0].lat_ns.count, 8);
        assert!(series[0].lat_ns.p99 < 20, "{:?}", series[0].lat_ns);
        assert!(series[1].lat_ns.p50 > 4000, "{:?}", series[1].lat_ns);
        assert_eq!(series[2].lat_ns.count, 2);
        assert!((series[2].t_s - 420e-9).abs() < 1e-12);
    }

    #[test]
    fn a_shared_board_shows_a_second_mapping_s_stores() {
        // What a worker process does: map the same memfd and publish into its slot; the
        // parent's board sums it.
        let parent = Board::with(SlotStore::Shared(SharedSlots::create(3).unwrap()));
        let share = parent.share().unwrap();
        assert_eq!(share.slots, 3);
        // SAFETY: dup of a descriptor we own, for the second mapping to own.
        let dup = unsafe { libc::dup(share.fd) };
        assert!(dup >= 0);
        let child = Board::with(SlotStore::Shared(SharedSlots::attach(dup, 3).unwrap()));
        child.publish(2, [5, 6, 5 * 4096, 6 * 4096]);
        child.publish(0, [1, 0, 4096, 0]);
        assert_eq!(parent.totals(), [6, 6, 6 * 4096, 6 * 4096]);
        // A descriptor too small for the slots asked for is refused.
        // SAFETY: as above.
        let dup = unsafe { libc::dup(share.fd) };
        assert!(SharedSlots::attach(dup, 64).is_err());
        // SAFETY: the refused descriptor was not taken over: close it here.
        unsafe { libc::close(dup) };
        assert!(Board::new(2).share().is_none());
    }

    #[test]
    fn a_counts_only_series_keeps_ops_and_bytes_without_latency() {
        let watch = WorkerWatch {
            interval_ns: Some(100),
            counts_only: true,
            ..Default::default()
        };
        let mut r = Roller::for_worker(0, &watch);
        assert_eq!(r.start(0), 100);
        r.tick(100, &stats(3, 1, &[10, 10]));
        let samples = r.finish(150, &stats(5, 1, &[10, 10, 20]));
        let ops: Vec<u64> = samples.iter().map(|s| s.read_ops).collect();
        assert_eq!(ops, [3, 2]);
        assert!(samples.iter().all(|s| s.lat_buckets.is_empty()));
        let series = merge_series([samples.as_slice()], Some(100));
        assert_eq!(series[1].read_bytes, 2 * 4096);
        assert_eq!(series[1].lat_ns.count, 0);
    }

    #[test]
    fn a_minimum_rate_is_judged_per_cycle_after_the_settle_time() {
        const S: u64 = 1_000_000_000;
        let mut job = crate::job::Job::default();
        job.rate.min_iops = Some(100);
        job.rate.cycle_ms = Some(500);
        let min = MinRate::for_worker(&job, (true, false, false));
        let mut r = Roller::default().judging(min);
        // The first event is the end of the settle time: the first cycle starts there.
        assert_eq!(r.start(0), 2 * S);
        assert_eq!(r.tick(2 * S, &stats(300, 0, &[])), 2 * S + S / 2);
        assert!(r.take_missed().is_none());
        // 60 reads in 500 ms: 120 a second, above 100.
        r.tick(2 * S + S / 2, &stats(360, 0, &[]));
        assert!(r.take_missed().is_none());
        // 40 in the next 500 ms: 80 a second, below: the second cycle misses, once.
        assert_eq!(r.tick(3 * S, &stats(400, 0, &[])), u64::MAX);
        let m = r.take_missed().unwrap();
        assert_eq!((m.cycle, m.dir, m.bytes), (2, 0, false));
        assert!((m.got - 80.0).abs() < 1e-6 && m.min == 100.0, "{m:?}");
        let text = m.message();
        assert!(
            text.contains("cycle 2 (2.500 s to 3.000 s of the run) reads"),
            "{text}"
        );
        assert!(r.take_missed().is_none());
        // Writes are judged when the worker issues them; its share with --rate-scope total.
        job.rate.scope = crate::job::RateScope::Total;
        job.threads = 4;
        job.targets = vec!["a".into()];
        let min = MinRate::for_worker(&job, (true, true, false)).unwrap();
        assert_eq!((min.iops, min.dirs), (Some(25.0), [true, true, false]));
        // With a warm-up nothing is judged until it ends.
        job.ramp_s = Some(1.0);
        let mut r = Roller::default().judging(MinRate::for_worker(&job, (true, false, false)));
        assert_eq!(r.start(0), u64::MAX);
        assert_eq!(r.restart(5 * S), 7 * S);
        // No minimum: no event.
        let mut r = Roller::default().judging(None);
        assert_eq!(r.start(0), u64::MAX);
    }

    #[test]
    fn an_unwatched_worker_has_no_events() {
        let mut r = Roller::default();
        assert_eq!(r.start(5), u64::MAX);
        assert!(r.finish(10, &Stats::default()).is_empty());
    }
}
