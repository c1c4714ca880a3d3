//! Per-worker statistics. Each worker owns its `Stats` (no shared counters, no locks on the I/O
//! path); the runner merges them exactly with `+=` into per-user and total figures.

pub mod bootstrap;
pub mod clock;
pub(crate) mod cpu;
pub mod hist;
pub mod percentiles;

pub(crate) use cpu::Usage;
pub use hist::{LatencyHist, LatencySummary};
pub use percentiles::PercentileValues;
use serde::{Deserialize, Serialize};

/// System calls fsbench itself issued, counted where they are made (the backup study's
/// `tusc -c` figures). Counting is a plain increment on the worker's own struct.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SyscallCounts {
    pub read: u64,
    pub write: u64,
    pub fsync: u64,
    pub fdatasync: u64,
    pub open: u64,
    pub close: u64,
    pub fadvise: u64,
    pub fallocate: u64,
    pub ftruncate: u64,
    pub io_uring_enter: u64,
    pub msync: u64,
    pub other: u64,
    #[serde(default)]
    pub unlink: u64,
    #[serde(default)]
    pub rmdir: u64,
    #[serde(default)]
    pub mkdir: u64,
    #[serde(default)]
    pub stat: u64,
    #[serde(default)]
    pub getdents: u64,
    #[serde(default)]
    pub fcntl: u64,
    #[serde(default)]
    pub lseek: u64,
    #[serde(default)]
    pub rename: u64,
}

impl SyscallCounts {
    pub fn total(&self) -> u64 {
        self.read
            + self.write
            + self.fsync
            + self.fdatasync
            + self.open
            + self.close
            + self.fadvise
            + self.fallocate
            + self.ftruncate
            + self.io_uring_enter
            + self.msync
            + self.other
            + self.unlink
            + self.rmdir
            + self.mkdir
            + self.stat
            + self.getdents
            + self.fcntl
            + self.lseek
            + self.rename
    }
}

impl std::ops::AddAssign<&SyscallCounts> for SyscallCounts {
    fn add_assign(&mut self, o: &SyscallCounts) {
        self.read += o.read;
        self.write += o.write;
        self.fsync += o.fsync;
        self.fdatasync += o.fdatasync;
        self.open += o.open;
        self.close += o.close;
        self.fadvise += o.fadvise;
        self.fallocate += o.fallocate;
        self.ftruncate += o.ftruncate;
        self.io_uring_enter += o.io_uring_enter;
        self.msync += o.msync;
        self.other += o.other;
        self.unlink += o.unlink;
        self.rmdir += o.rmdir;
        self.mkdir += o.mkdir;
        self.stat += o.stat;
        self.getdents += o.getdents;
        self.fcntl += o.fcntl;
        self.lseek += o.lseek;
        self.rename += o.rename;
    }
}

/// [`SyscallCounts`] divided by the elapsed seconds (the backup study's "98 write calls per
/// second").
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SyscallRates {
    pub read: f64,
    pub write: f64,
    pub fsync: f64,
    pub fdatasync: f64,
    pub open: f64,
    pub close: f64,
    pub fadvise: f64,
    pub fallocate: f64,
    pub ftruncate: f64,
    pub io_uring_enter: f64,
    pub msync: f64,
    pub other: f64,
    #[serde(default)]
    pub unlink: f64,
    #[serde(default)]
    pub rmdir: f64,
    #[serde(default)]
    pub mkdir: f64,
    #[serde(default)]
    pub stat: f64,
    #[serde(default)]
    pub getdents: f64,
    #[serde(default)]
    pub fcntl: f64,
    #[serde(default)]
    pub lseek: f64,
    #[serde(default)]
    pub rename: f64,
}

impl SyscallRates {
    pub fn of(c: &SyscallCounts, elapsed_s: f64) -> Self {
        let r = |n: u64| {
            if elapsed_s > 0.0 {
                n as f64 / elapsed_s
            } else {
                0.0
            }
        };
        SyscallRates {
            read: r(c.read),
            write: r(c.write),
            fsync: r(c.fsync),
            fdatasync: r(c.fdatasync),
            open: r(c.open),
            close: r(c.close),
            fadvise: r(c.fadvise),
            fallocate: r(c.fallocate),
            ftruncate: r(c.ftruncate),
            io_uring_enter: r(c.io_uring_enter),
            msync: r(c.msync),
            other: r(c.other),
            unlink: r(c.unlink),
            rmdir: r(c.rmdir),
            mkdir: r(c.mkdir),
            stat: r(c.stat),
            getdents: r(c.getdents),
            fcntl: r(c.fcntl),
            lseek: r(c.lseek),
            rename: r(c.rename),
        }
    }
}

/// Buckets of the in-flight distribution: how many I/Os were outstanding when each I/O was
/// submitted (1, 2, 3-4, 5-8, 9-16, 17-32, 33-64, >64), like fio's "IO depths".
pub(crate) const INFLIGHT_BUCKETS: [&str; 8] = ["1", "2", "4", "8", "16", "32", "64", ">64"];

#[inline]
pub(crate) fn inflight_bucket(depth: u32) -> usize {
    match depth {
        0 | 1 => 0,
        2 => 1,
        3..=4 => 2,
        5..=8 => 3,
        9..=16 => 4,
        17..=32 => 5,
        33..=64 => 6,
        _ => 7,
    }
}

/// Everything one worker (or one named group: a workload flowop, a replay's I/O kind, a backup
/// phase) measured. Serialisable as is, so worker processes send it to their parent exactly.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Stats {
    pub read_ops: u64,
    pub write_ops: u64,
    /// Operations that are neither reads nor writes (open, close, stat, fsync, ... of a
    /// workload flowop); always 0 for a Job's data I/O.
    #[serde(default)]
    pub other_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Trims (`--rw trim|randtrim|trimwrite`) and the bytes they discarded.
    #[serde(default)]
    pub trim_ops: u64,
    #[serde(default)]
    pub trim_bytes: u64,
    pub errors: u64,
    /// Direct-I/O requests that were misaligned and so were done as data-synchronous buffered
    /// I/O (the white paper's rule).
    pub buffered_fallback_ops: u64,
    /// I/Os that the discovered-direct policy sent direct (those larger than the threshold).
    pub direct_ops: u64,
    /// Latency of the trims.
    #[serde(default)]
    pub trim_lat: LatencyHist,
    /// Latency of the trims from their intended issue time.
    #[serde(default)]
    pub sched_trim_lat: LatencyHist,
    /// With `--bssplit`: the I/Os of each size (ascending), apart; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_size: Vec<SizeClass>,
    /// Latency of the reads. Each operation is recorded once, in the histogram of its
    /// direction; the total is their merge ([`Stats::lat`]), made at report time.
    #[serde(default)]
    pub read_lat: LatencyHist,
    /// Latency of the writes.
    #[serde(default)]
    pub write_lat: LatencyHist,
    /// Latency of other operations (workload metadata flowops, replayed syncs).
    #[serde(default)]
    pub other_lat: LatencyHist,
    /// Latency of the reads measured from their intended issue time. Recorded only under a
    /// rate limit (or a timed replay): without one it equals `read_lat`, and reports use the
    /// service latency when no schedule latency was recorded at all.
    #[serde(default)]
    pub sched_read_lat: LatencyHist,
    /// Latency of the writes from their intended issue time.
    #[serde(default)]
    pub sched_write_lat: LatencyHist,
    /// Latency of other operations from their intended issue time (a timed replay's syncs).
    #[serde(default)]
    pub sched_other_lat: LatencyHist,
    pub usage: Usage,
    pub syscalls: SyscallCounts,
    pub inflight: [u64; 8],
    /// Wall time this worker spent in its timed loop.
    pub elapsed_s: f64,
    /// When the timed loop began and ended (its final fsync included, a verify read-back
    /// not), in ns on CLOCK_MONOTONIC, the one scale of every thread and process of a host;
    /// merged, the earliest start and the latest end. A rank of a distributed run places its
    /// I/O on the barrier clock with them (0: not recorded).
    #[serde(default)]
    pub loop_start_ns: u64,
    #[serde(default)]
    pub loop_end_ns: u64,
    /// Thread CPU time read around some operations only (a workload reads the thread CPU
    /// clock on every 16th execution of a flowop): the nanoseconds and how many operations
    /// they cover. Used for CPU per operation where `usage` is not per group.
    #[serde(default)]
    pub cpu_sampled_ns: u64,
    #[serde(default)]
    pub cpu_sampled_ops: u64,
}

/// Which of the [`Stats`] histograms an operation's latency goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
    Other,
    Trim,
}

/// The I/Os of one size of a `--bssplit` run: counts by direction, bytes and latency.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SizeClass {
    pub block_size_bytes: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    pub trim_ops: u64,
    pub bytes: u64,
    pub lat: LatencyHist,
}

impl SizeClass {
    /// Count one completed I/O of this size (a field update: no allocation once ready).
    #[inline(always)]
    pub(crate) fn record(&mut self, kind: crate::engine::OpKind, bytes: u64, lat_ns: u64) {
        match kind {
            crate::engine::OpKind::Read => self.read_ops += 1,
            crate::engine::OpKind::Write => self.write_ops += 1,
            crate::engine::OpKind::Trim => self.trim_ops += 1,
        }
        self.bytes += bytes;
        self.lat.record(lat_ns);
    }
}

impl Stats {
    /// The histogram of one direction (a field access: no allocation once created).
    #[inline(always)]
    pub fn lat_of(&mut self, d: Dir) -> &mut LatencyHist {
        match d {
            Dir::Read => &mut self.read_lat,
            Dir::Write => &mut self.write_lat,
            Dir::Other => &mut self.other_lat,
            Dir::Trim => &mut self.trim_lat,
        }
    }

    /// Create the histograms of the directions this worker may record, before timing, so
    /// recording never allocates.
    pub fn ready_lat(&mut self, read: bool, write: bool, other: bool) {
        for (on, d) in [(read, Dir::Read), (write, Dir::Write), (other, Dir::Other)] {
            if on {
                self.lat_of(d).ready();
            }
        }
    }

    /// Create the size classes of a `--bssplit` run (ascending sizes) and their histograms,
    /// before timing.
    pub(crate) fn ready_sizes(&mut self, sizes: &[u32]) {
        self.by_size = sizes
            .iter()
            .map(|&s| {
                let mut c = SizeClass {
                    block_size_bytes: s as u64,
                    ..Default::default()
                };
                c.lat.ready();
                c
            })
            .collect();
    }

    /// Count one completed I/O of `len` bytes in its size class, when the run keeps them.
    #[inline(always)]
    pub(crate) fn record_size(
        &mut self,
        kind: crate::engine::OpKind,
        len: u32,
        bytes: u64,
        lat_ns: u64,
    ) {
        // The classes are ascending: a range's many sizes are found in a few steps.
        if let Ok(at) = self
            .by_size
            .binary_search_by_key(&(len as u64), |c| c.block_size_bytes)
        {
            self.by_size[at].record(kind, bytes, lat_ns);
        }
    }

    /// The latency of every operation: the direction histograms merged (exactly). Report
    /// time only: it allocates.
    pub fn lat(&self) -> LatencyHist {
        let mut all = LatencyHist::default();
        all.merge(&self.read_lat);
        all.merge(&self.write_lat);
        all.merge(&self.other_lat);
        all.merge(&self.trim_lat);
        all
    }

    /// The schedule-latency histogram of one direction (a field access, as [`Stats::lat_of`]).
    #[inline(always)]
    pub fn sched_lat_of(&mut self, d: Dir) -> &mut LatencyHist {
        match d {
            Dir::Read => &mut self.sched_read_lat,
            Dir::Write => &mut self.sched_write_lat,
            Dir::Other => &mut self.sched_other_lat,
            Dir::Trim => &mut self.sched_trim_lat,
        }
    }

    /// Create the schedule-latency histograms of the directions this worker may record,
    /// before timing (only under a rate limit: otherwise they stay empty and hold nothing).
    pub fn ready_sched_lat(&mut self, read: bool, write: bool, other: bool) {
        for (on, d) in [(read, Dir::Read), (write, Dir::Write), (other, Dir::Other)] {
            if on {
                self.sched_lat_of(d).ready();
            }
        }
    }

    /// The schedule latency of every operation: the direction histograms merged exactly
    /// (empty when no rate limit applied). Report time only: it allocates.
    pub fn sched_lat(&self) -> LatencyHist {
        let mut all = LatencyHist::default();
        all.merge(&self.sched_read_lat);
        all.merge(&self.sched_write_lat);
        all.merge(&self.sched_other_lat);
        all.merge(&self.sched_trim_lat);
        all
    }

    /// Operations with a recorded schedule latency (all directions).
    pub fn sched_lat_count(&self) -> u64 {
        self.sched_read_lat.len()
            + self.sched_write_lat.len()
            + self.sched_other_lat.len()
            + self.sched_trim_lat.len()
    }

    /// Operations with a recorded latency (all directions).
    pub fn lat_count(&self) -> u64 {
        self.read_lat.len() + self.write_lat.len() + self.other_lat.len() + self.trim_lat.len()
    }

    pub fn ops(&self) -> u64 {
        self.read_ops + self.write_ops + self.other_ops + self.trim_ops
    }
    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes + self.trim_bytes
    }
}

impl std::ops::AddAssign<&Stats> for Stats {
    fn add_assign(&mut self, o: &Stats) {
        self.read_ops += o.read_ops;
        self.write_ops += o.write_ops;
        self.other_ops += o.other_ops;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.trim_ops += o.trim_ops;
        self.trim_bytes += o.trim_bytes;
        self.errors += o.errors;
        self.buffered_fallback_ops += o.buffered_fallback_ops;
        self.direct_ops += o.direct_ops;
        self.read_lat.merge(&o.read_lat);
        self.write_lat.merge(&o.write_lat);
        self.other_lat.merge(&o.other_lat);
        self.sched_read_lat.merge(&o.sched_read_lat);
        self.sched_write_lat.merge(&o.sched_write_lat);
        self.sched_other_lat.merge(&o.sched_other_lat);
        self.trim_lat.merge(&o.trim_lat);
        self.sched_trim_lat.merge(&o.sched_trim_lat);
        for c in &o.by_size {
            match self
                .by_size
                .iter_mut()
                .find(|m| m.block_size_bytes == c.block_size_bytes)
            {
                Some(m) => {
                    m.read_ops += c.read_ops;
                    m.write_ops += c.write_ops;
                    m.trim_ops += c.trim_ops;
                    m.bytes += c.bytes;
                    m.lat.merge(&c.lat);
                }
                None => {
                    let at = self
                        .by_size
                        .partition_point(|m| m.block_size_bytes < c.block_size_bytes);
                    self.by_size.insert(at, c.clone());
                }
            }
        }
        self.usage += &o.usage;
        self.syscalls += &o.syscalls;
        for (a, b) in self.inflight.iter_mut().zip(o.inflight.iter()) {
            *a += b;
        }
        // Workers run side by side: the merged wall time is the longest one.
        self.elapsed_s = self.elapsed_s.max(o.elapsed_s);
        if o.loop_start_ns != 0 && (self.loop_start_ns == 0 || o.loop_start_ns < self.loop_start_ns)
        {
            self.loop_start_ns = o.loop_start_ns;
        }
        self.loop_end_ns = self.loop_end_ns.max(o.loop_end_ns);
        self.cpu_sampled_ns += o.cpu_sampled_ns;
        self.cpu_sampled_ops += o.cpu_sampled_ops;
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One direction of a [`StatsReport`] (its reads, or its writes) measured on its own, as fio
/// reports them: the same elapsed time as the total, so `read` + `write` (+ other
/// operations) add up to the total's ops, bytes, rates and histogram.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DirReport {
    pub ops: u64,
    pub bytes: u64,
    pub bytes_per_sec: f64,
    pub iops: f64,
    /// Latency of this direction's operations (count 0 in documents older than schema 3,
    /// which kept one histogram).
    pub lat_ns: LatencySummary,
    /// Histogram buckets `[value_ns, count]`, where the total keeps them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lat_hist_ns: Vec<[u64; 2]>,
    /// Latency of this direction's operations from their intended issue time: differs from
    /// `lat_ns` only under a rate limit or a timed replay (count 0 in documents written
    /// before fsbench kept it per direction).
    #[serde(default)]
    pub sched_lat_ns: LatencySummary,
    /// The percentiles asked for (`--percentiles`), nanoseconds, keyed as in `lat_ns`.
    #[serde(default, skip_serializing_if = "PercentileValues::is_empty")]
    pub lat_percentiles_ns: PercentileValues,
}

/// The I/Os of one size of a `--bssplit` run (every direction), measured over the same
/// elapsed time as the total.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SizeReport {
    pub block_size_bytes: u64,
    pub ops: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    #[serde(default)]
    pub trim_ops: u64,
    pub bytes: u64,
    pub bytes_per_sec: f64,
    pub iops: f64,
    pub lat_ns: LatencySummary,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lat_hist_ns: Vec<[u64; 2]>,
}

impl SizeReport {
    fn of(c: &SizeClass, elapsed_s: f64, with_hist: bool) -> SizeReport {
        let per_sec = |v: f64| if elapsed_s > 0.0 { v / elapsed_s } else { 0.0 };
        let ops = c.read_ops + c.write_ops + c.trim_ops;
        SizeReport {
            block_size_bytes: c.block_size_bytes,
            ops,
            read_ops: c.read_ops,
            write_ops: c.write_ops,
            trim_ops: c.trim_ops,
            bytes: c.bytes,
            bytes_per_sec: per_sec(c.bytes as f64),
            iops: per_sec(ops as f64),
            lat_ns: c.lat.summary(),
            lat_hist_ns: if with_hist {
                c.lat.to_buckets()
            } else {
                Vec::new()
            },
        }
    }
}

impl DirReport {
    /// Nothing measured in this direction.
    pub fn is_empty(&self) -> bool {
        self.ops == 0 && self.lat_ns.count == 0
    }

    fn of(
        ops: u64,
        bytes: u64,
        elapsed_s: f64,
        lat: &LatencyHist,
        sched: &LatencyHist,
        with_hist: bool,
    ) -> Self {
        let per_sec = |v: f64| if elapsed_s > 0.0 { v / elapsed_s } else { 0.0 };
        DirReport {
            ops,
            bytes,
            bytes_per_sec: per_sec(bytes as f64),
            iops: per_sec(ops as f64),
            lat_ns: lat.summary(),
            lat_hist_ns: if with_hist {
                lat.to_buckets()
            } else {
                Vec::new()
            },
            sched_lat_ns: sched.summary(),
            lat_percentiles_ns: PercentileValues::default(),
        }
    }
}

/// The serialisable view of [`Stats`] that goes into every Result (units in every key).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StatsReport {
    /// read_ops + write_ops + other_ops.
    pub ops: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    /// Metadata operations (workload flowops such as openfile or statfile); absent in
    /// schema 1 documents.
    #[serde(default)]
    pub other_ops: u64,
    pub bytes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    pub buffered_fallback_ops: u64,
    pub direct_ops: u64,
    pub elapsed_s: f64,
    pub bytes_per_sec: f64,
    pub iops: f64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// user + sys, the white paper's "CPU seconds".
    pub cpu_s: f64,
    /// CPU microseconds per operation (the Filebench shootout's metric): from `usage`, or,
    /// for a workload flowop, from the sampled thread CPU time (`cpu_sampled_ops`).
    pub cpu_us_per_op: f64,
    /// Operations whose thread CPU time was read (workload flowops; 0 elsewhere).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cpu_sampled_ops: u64,
    pub lat_ns: LatencySummary,
    /// Latency against the intended schedule (differs from `lat_ns` only under a rate limit).
    pub sched_lat_ns: LatencySummary,
    pub usage: Usage,
    pub syscalls: SyscallCounts,
    pub syscalls_per_sec: f64,
    /// Per-call rates (`read`, `write`, `fsync`, `open`, ...), calls per second.
    #[serde(default)]
    pub syscall_rates_per_sec: SyscallRates,
    /// In-flight distribution: share of I/Os submitted at each depth bucket, in percent.
    pub inflight_pct: Vec<(String, f64)>,
    /// Histogram buckets `[value_ns, count]`, so stored results can be merged later.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lat_hist_ns: Vec<[u64; 2]>,
    /// The reads alone (schema 3; older documents get their counts from `read_ops` and
    /// `read_bytes` when read, without a latency).
    #[serde(default)]
    pub read: DirReport,
    /// The writes alone.
    #[serde(default)]
    pub write: DirReport,
    /// The trims alone (absent when the run trimmed nothing).
    #[serde(default, skip_serializing_if = "DirReport::is_empty")]
    pub trim: DirReport,
    /// Trims and bytes trimmed (also in `ops` and `bytes`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trim_ops: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trim_bytes: u64,
    /// With `--bssplit`: the I/Os of each size, ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_size: Vec<SizeReport>,
    /// The percentiles asked for (`--percentiles`), nanoseconds, keyed as in `lat_ns`.
    #[serde(default, skip_serializing_if = "PercentileValues::is_empty")]
    pub lat_percentiles_ns: PercentileValues,
}

impl StatsReport {
    /// Compute the percentiles of `list` for the whole and each direction, from the
    /// histogram buckets kept (a report without buckets gets none).
    pub fn set_percentiles(&mut self, list: &[f64]) {
        self.lat_percentiles_ns = PercentileValues::of(list, &self.lat_hist_ns, &self.lat_ns);
        for d in [&mut self.read, &mut self.write, &mut self.trim] {
            d.lat_percentiles_ns = PercentileValues::of(list, &d.lat_hist_ns, &d.lat_ns);
        }
    }

    pub fn from_stats(s: &Stats, with_hist: bool) -> Self {
        let secs = if s.elapsed_s > 0.0 {
            s.elapsed_s
        } else {
            f64::NAN
        };
        let per_sec = |v: f64| if secs.is_nan() { 0.0 } else { v / secs };
        let ops = s.ops();
        let total_inflight: u64 = s.inflight.iter().sum();
        let lat = s.lat();
        // Without a rate limit the schedule is the submission time, so the two latencies are
        // the same and only the service latency is recorded (one histogram per direction,
        // not two): the schedule figures are then the service ones.
        let paced = s.sched_lat_count() > 0;
        let (read_sched, write_sched, trim_sched) = if paced {
            (&s.sched_read_lat, &s.sched_write_lat, &s.sched_trim_lat)
        } else {
            (&s.read_lat, &s.write_lat, &s.trim_lat)
        };
        let read = DirReport::of(
            s.read_ops,
            s.read_bytes,
            s.elapsed_s,
            &s.read_lat,
            read_sched,
            with_hist,
        );
        let write = DirReport::of(
            s.write_ops,
            s.write_bytes,
            s.elapsed_s,
            &s.write_lat,
            write_sched,
            with_hist,
        );
        let trim = DirReport::of(
            s.trim_ops,
            s.trim_bytes,
            s.elapsed_s,
            &s.trim_lat,
            trim_sched,
            with_hist,
        );
        StatsReport {
            read,
            write,
            trim,
            trim_ops: s.trim_ops,
            trim_bytes: s.trim_bytes,
            // The sizes that were issued (a range may offer many more than a run draws).
            by_size: s
                .by_size
                .iter()
                .filter(|c| c.read_ops + c.write_ops + c.trim_ops > 0)
                .map(|c| SizeReport::of(c, s.elapsed_s, with_hist))
                .collect(),
            ops,
            read_ops: s.read_ops,
            write_ops: s.write_ops,
            other_ops: s.other_ops,
            bytes: s.bytes(),
            read_bytes: s.read_bytes,
            write_bytes: s.write_bytes,
            errors: s.errors,
            buffered_fallback_ops: s.buffered_fallback_ops,
            direct_ops: s.direct_ops,
            elapsed_s: s.elapsed_s,
            bytes_per_sec: per_sec(s.bytes() as f64),
            iops: per_sec(ops as f64),
            cpu_user_s: s.usage.cpu_user_s,
            cpu_sys_s: s.usage.cpu_sys_s,
            cpu_s: s.usage.cpu_s(),
            cpu_us_per_op: if ops > 0 && s.usage.cpu_s() > 0.0 {
                s.usage.cpu_s() * 1e6 / ops as f64
            } else if s.cpu_sampled_ops > 0 {
                s.cpu_sampled_ns as f64 / s.cpu_sampled_ops as f64 / 1e3
            } else {
                0.0
            },
            cpu_sampled_ops: s.cpu_sampled_ops,
            lat_ns: lat.summary(),
            sched_lat_ns: if paced {
                s.sched_lat().summary()
            } else {
                lat.summary()
            },
            usage: s.usage,
            syscalls: s.syscalls,
            syscalls_per_sec: per_sec(s.syscalls.total() as f64),
            syscall_rates_per_sec: SyscallRates::of(&s.syscalls, s.elapsed_s),
            inflight_pct: INFLIGHT_BUCKETS
                .iter()
                .zip(s.inflight.iter())
                .map(|(name, n)| {
                    let pct = if total_inflight > 0 {
                        *n as f64 * 100.0 / total_inflight as f64
                    } else {
                        0.0
                    };
                    (name.to_string(), pct)
                })
                .collect(),
            lat_hist_ns: if with_hist {
                lat.to_buckets()
            } else {
                Vec::new()
            },
            lat_percentiles_ns: PercentileValues::default(),
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock `Instant` reads on Linux, without its wrapper
/// (the timespec checks and the 128-bit arithmetic of `duration_since`), ~3 ns less per
/// reading. The one clock every I/O loop (runner, workload, trace) stamps with.
#[inline(always)]
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec that we own; CLOCK_MONOTONIC exists on every
    // Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_loop_clocks_are_the_earliest_start_and_latest_end() {
        let w = |a, b| Stats {
            loop_start_ns: a,
            loop_end_ns: b,
            ..Default::default()
        };
        let mut m = Stats::default();
        m += &w(50, 90);
        m += &w(0, 0); // a worker that never ran its loop
        m += &w(20, 60);
        assert_eq!((m.loop_start_ns, m.loop_end_ns), (20, 90));
    }

    #[test]
    fn merge_is_exact() {
        let mut a = Stats {
            read_ops: 3,
            read_bytes: 300,
            elapsed_s: 1.0,
            ..Default::default()
        };
        a.read_lat.record(100);
        a.inflight[inflight_bucket(1)] += 3;
        let mut b = Stats {
            write_ops: 2,
            write_bytes: 200,
            elapsed_s: 2.0,
            ..Default::default()
        };
        b.write_lat.record(200);
        b.inflight[inflight_bucket(32)] += 2;
        a += &b;
        assert_eq!(a.ops(), 5);
        assert_eq!(a.bytes(), 500);
        assert_eq!(a.elapsed_s, 2.0);
        assert_eq!(a.lat().len(), 2);
        assert_eq!(a.lat_count(), 2);
        let r = StatsReport::from_stats(&a, true);
        assert_eq!(r.bytes_per_sec, 250.0);
        assert_eq!(
            (r.read.ops, r.read.bytes, r.read.bytes_per_sec),
            (3, 300, 150.0)
        );
        assert_eq!((r.write.ops, r.write.bytes, r.write.iops), (2, 200, 1.0));
        assert_eq!((r.read.lat_ns.count, r.read.lat_ns.max), (1, 100));
        assert_eq!((r.write.lat_ns.count, r.write.lat_ns.min), (1, 200));
        assert_eq!(r.lat_ns.count, 2);
        assert_eq!(r.read.lat_hist_ns, vec![[100, 1]]);
        assert_eq!(r.lat_hist_ns.len(), 2);
        assert_eq!(r.inflight_pct[5].1, 40.0);
    }

    #[test]
    fn schedule_latency_is_kept_per_direction_and_merged_exactly() {
        let mut a = Stats {
            read_ops: 2,
            write_ops: 1,
            elapsed_s: 1.0,
            ..Default::default()
        };
        a.read_lat.record(100);
        a.read_lat.record(100);
        a.write_lat.record(200);
        a.sched_read_lat.record(1_000);
        a.sched_read_lat.record(3_000);
        a.sched_write_lat.record(50_000);
        let mut b = Stats {
            write_ops: 1,
            elapsed_s: 1.0,
            ..Default::default()
        };
        b.write_lat.record(200);
        b.sched_write_lat.record(70_000);
        a += &b;
        assert_eq!(a.sched_lat_count(), 4);
        let r = StatsReport::from_stats(&a, false);
        assert_eq!(
            (r.read.sched_lat_ns.count, r.read.sched_lat_ns.max),
            (2, 3_000)
        );
        assert_eq!(
            (r.write.sched_lat_ns.count, r.write.sched_lat_ns.min),
            (2, 50_000)
        );
        assert_eq!(r.write.sched_lat_ns.max, 70_000);
        // The total is the exact merge of the directions.
        assert_eq!(r.sched_lat_ns.count, 4);
        assert_eq!((r.sched_lat_ns.min, r.sched_lat_ns.max), (1_000, 70_000));
        assert_eq!(
            r.sched_lat_ns.mean,
            (1_000 + 3_000 + 50_000 + 70_000) as f64 / 4.0
        );
        // Unpaced: no schedule histogram, the schedule figures are the service ones.
        let mut c = Stats {
            read_ops: 1,
            elapsed_s: 1.0,
            ..Default::default()
        };
        c.read_lat.record(700);
        let r = StatsReport::from_stats(&c, false);
        assert_eq!(r.read.sched_lat_ns, r.read.lat_ns);
        assert_eq!(r.sched_lat_ns, r.lat_ns);
        assert_eq!(r.write.sched_lat_ns.count, 0);
    }

    #[test]
    fn a_document_without_direction_schedule_latency_reads_as_unknown() {
        let v = serde_json::json!({"ops": 1, "bytes": 0, "bytes_per_sec": 0.0, "iops": 0.0,
            "lat_ns": {"count": 1, "min": 5, "mean": 5.0, "p50": 5, "p90": 5, "p99": 5,
                       "p99_9": 5, "max": 5}});
        let d: DirReport = serde_json::from_value(v).unwrap();
        assert_eq!(d.sched_lat_ns.count, 0);
        assert_eq!(d.lat_ns.count, 1);
    }

    #[test]
    fn size_classes_and_trims_merge_exactly() {
        use crate::engine::OpKind;
        let mut a = Stats {
            elapsed_s: 1.0,
            ..Default::default()
        };
        a.ready_sizes(&[4096, 65536]);
        a.record_size(OpKind::Read, 4096, 4096, 100);
        a.record_size(OpKind::Write, 65536, 65536, 900);
        a.record_size(OpKind::Read, 8192, 8192, 5); // not a class of this run: ignored
        let mut b = Stats {
            trim_ops: 2,
            trim_bytes: 8192,
            elapsed_s: 1.0,
            ..Default::default()
        };
        b.trim_lat.record(300);
        b.trim_lat.record(500);
        b.ready_sizes(&[4096, 16384]);
        b.record_size(OpKind::Trim, 4096, 4096, 300);
        b.record_size(OpKind::Trim, 16384, 16384, 500);
        a += &b;
        let sizes: Vec<(u64, u64, u64, u64, u64)> = a
            .by_size
            .iter()
            .map(|c| {
                (
                    c.block_size_bytes,
                    c.read_ops,
                    c.write_ops,
                    c.trim_ops,
                    c.lat.len(),
                )
            })
            .collect();
        assert_eq!(
            sizes,
            vec![(4096, 1, 0, 1, 2), (16384, 0, 0, 1, 1), (65536, 0, 1, 0, 1)]
        );
        assert_eq!((a.ops(), a.bytes()), (2, 8192));
        let r = StatsReport::from_stats(&a, true);
        assert_eq!(
            (r.trim.ops, r.trim.bytes, r.trim.lat_ns.count),
            (2, 8192, 2)
        );
        assert_eq!(r.lat_ns.count, 2, "the total's latency holds the trims");
        assert_eq!(r.by_size.len(), 3);
        assert_eq!((r.by_size[0].ops, r.by_size[0].bytes), (2, 8192));
        assert_eq!(r.by_size[2].lat_ns.max, 900);
        // A run without trims or sizes writes neither key.
        let plain =
            serde_json::to_value(StatsReport::from_stats(&Stats::default(), false)).unwrap();
        assert!(plain.get("trim").is_none() && plain.get("by_size").is_none());
    }

    #[test]
    fn inflight_buckets() {
        assert_eq!(inflight_bucket(1), 0);
        assert_eq!(inflight_bucket(4), 2);
        assert_eq!(inflight_bucket(5), 3);
        assert_eq!(inflight_bucket(64), 6);
        assert_eq!(inflight_bucket(65), 7);
    }
}
