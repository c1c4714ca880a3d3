//! The Result: one envelope for every kind of run (a Job, a Filebench workload, a trace
//! replay, a backup-study phase). The same header, environment, status and failures; a total
//! [`StatsReport`]; per-user figures for a Job, and per-flowop, per-I/O-kind or per-phase
//! figures as named groups of the same `StatsReport` with the same histogram. Serialised as
//! JSON with a `schema_version`; reports, sweeps and `compare` read only this contract.
//! See docs/result-schema.md.

use crate::job::{CachePolicy, Job};
use crate::probe::env::Environment;
use crate::stats::{LatencySummary, StatsReport};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Version of the document this fsbench writes, and the only one it reads. 3: `read` and
/// `write` objects beside every total, `p99_99` and `stdev` in every latency summary.
pub const SCHEMA_VERSION: u32 = 3;

/// What produced a Result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A Job (`run`, `vx`, `quick`, sweep and suite points, advise measurements).
    Io,
    /// A Filebench workload (`fsbench workload`, personalities in sweeps and suites).
    Workload,
    /// A trace replayed on scratch files (`fsbench replay`).
    Replay,
    /// One phase (archive or restore) of the backup study.
    Backup,
    /// mdtest's metadata phases (`fsbench mdtest`): each phase of each iteration a group.
    Mdtest,
    /// IO500's twelve phases (`fsbench io500`): each phase a group, the score in `io500`.
    Io500,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Io => "io",
            Kind::Workload => "workload",
            Kind::Replay => "replay",
            Kind::Backup => "backup",
            Kind::Mdtest => "mdtest",
            Kind::Io500 => "io500",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadReport {
    pub thread: u32,
    pub stats: StatsReport,
    /// This thread's `--status-interval` time series (`t_s` from the run's start).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeseries: Vec<IntervalReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UserReport {
    pub user: usize,
    pub target: String,
    pub stats: StatsReport,
    pub threads: Vec<ThreadReport>,
}

/// A named part of a run measured on its own: a workload flowop, a replay's I/O kind, a
/// backup phase.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GroupReport {
    pub name: String,
    /// What the group counts: the flowop type (`read`, `openfile`, ...), the replayed call
    /// (`read`, `write`, `fsync`, `fdatasync`), or `phase`.
    pub op: String,
    /// Which `run` of a workload script the group belongs to (1-based); absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<u32>,
    pub stats: StatsReport,
}

/// A fileset a workload laid out.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FilesetInfo {
    pub name: String,
    pub root: String,
    pub entries: u64,
    pub dirs: u64,
    pub prealloc_pct: f64,
    pub files_created: u64,
    pub bytes_written: u64,
    pub reused: u64,
    pub create_s: f64,
}

/// One `psrun` progress line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PsrunLine {
    pub t_s: f64,
    pub ops: u64,
    pub ops_per_s: f64,
    pub read_ops_per_s: f64,
    pub write_ops_per_s: f64,
    pub mb_per_s: f64,
}

/// One `run`/`psrun` of a workload script (its flowops are the `groups` with this `run`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkloadRun {
    /// When the timed phase began (threads released), seconds since the Unix epoch: lets an
    /// outside observer (bench/vs-filebench.sh's CPU sampler) cut out exactly the run.
    #[serde(default)]
    pub started_unix_s: f64,
    pub duration_s: f64,
    pub stop_reason: String,
    pub processes: u64,
    pub threads: u64,
    /// How threads ended: "stopped", "finished", "out_of_files", "failed" -> count.
    pub thread_ends: BTreeMap<String, u64>,
    /// Filebench's "IO Summary": the I/O flowops merged, with every thread's CPU.
    pub summary: StatsReport,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub psrun: Vec<PsrunLine>,
    /// This run's `--status-interval` time series (`t_s` from this run's start).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeseries: Vec<IntervalReport>,
}

/// What only a workload has: its variables and filesets, and each run's outline.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WorkloadInfo {
    pub defines: Vec<(String, String)>,
    /// Every variable's final value as the workload saw it.
    pub variables: BTreeMap<String, String>,
    pub quit_mode: String,
    pub filesets: Vec<FilesetInfo>,
    pub runs: Vec<WorkloadRun>,
}

/// What only a replay has: where the calls came from and what was replayed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReplayInfo {
    pub trace: String,
    /// Calls replayed (reads, writes, fsyncs, fdatasyncs) and the threads that issued them.
    pub calls: u64,
    pub threads: u64,
    /// Traced timing scaled by this factor; absent: back to back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// Traced calls not replayed (opens, closes, failed or empty calls).
    pub skipped_calls: u64,
    /// Sizes of the replayed reads and writes, as planned from the trace.
    pub io_size_bytes: LatencySummary,
    /// `[size_bytes, count]` buckets of the same histogram.
    pub io_size_hist_bytes: Vec<[u64; 2]>,
    /// Which scratch file stood for which traced file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ReplayFile>,
}

/// One traced file and the scratch file a replay made in its place.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReplayFile {
    pub traced: String,
    pub scratch: String,
    pub size_bytes: u64,
}

/// What only a backup-study phase has: what it archived or restored, in what records.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BackupInfo {
    /// `archive` (the tree read, the archive written) or `restore` (the reverse).
    pub phase: String,
    /// Bytes per archive record (the article's 32256-byte pax records).
    pub record_bytes: u64,
    /// The tree's files.
    pub files: Vec<String>,
}

/// What only an mdtest run has: the tree and items it worked on, and per phase the rate
/// over the iterations (mdtest's SUMMARY table). Each phase of each iteration is also a named
/// group of the Result (`op` the phase's key, `run` the iteration), with its latency and CPU.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MdtestInfo {
    /// The command line as given.
    pub argv: Vec<String>,
    /// Where the run made its top directory.
    pub dir: String,
    /// Ranks that ran, and this rank's number (one host: 1 and 0).
    pub ranks: u32,
    pub rank: u32,
    pub iterations: u32,
    pub depth: u32,
    pub branching: u32,
    /// Directories of one tree (its root included).
    pub dirs_in_tree: u64,
    pub items_per_dir: u64,
    /// Items per rank (each phase's operations when it is not stopped early).
    pub items: u64,
    pub leaf_only: bool,
    pub unique_dir: bool,
    pub write_bytes: u64,
    pub read_bytes: u64,
    pub sync_after_write: bool,
    /// `-W`: seconds after which a create phase stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stonewall_s: Option<f64>,
    /// `-R`: the seed of the random stat and read order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_seed: Option<u64>,
    pub summary: Vec<MdtestSummary>,
    /// On several MPI ranks: each rank's part of each phase of each iteration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_phases: Vec<MdtestRankPhase>,
}

/// One rank's part of one phase of one iteration of an mdtest run on MPI ranks: its items
/// and when it started and ended them, on the barrier clock (seconds after every rank left
/// the first start barrier).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MdtestRankPhase {
    pub rank: u32,
    /// The phase's key (`file_create`) and iteration (from 1).
    pub op: String,
    pub run: u32,
    /// Items (or tree directories) the rank did.
    pub items: u64,
    /// The rank whose items (and, with `-u`, whose tree) it worked on: itself, or the
    /// rank `-N` places on.
    pub items_of_rank: u32,
    /// The stonewall (`-W`) stopped the rank's phase early.
    #[serde(default)]
    pub stonewalled: bool,
    pub start_s: f64,
    pub end_s: f64,
    /// The rank's items per second over its own part.
    pub rate: f64,
}

/// One phase over the iterations: its rate (operations per second) at most, least, on
/// average and its sample standard deviation (0 for one iteration), as mdtest prints them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MdtestSummary {
    /// mdtest's name of the phase ("File creation").
    pub phase: String,
    /// The key its groups carry as `op` (`file_create`).
    pub op: String,
    pub max: f64,
    pub min: f64,
    pub mean: f64,
    pub stddev: f64,
    /// Operations over all iterations.
    pub ops: u64,
    /// Iterations in which the stonewall (`-W`) stopped the phase early.
    #[serde(default)]
    pub stonewalled: u32,
    /// Latency of one item's operation over all iterations (mdtest has none).
    pub lat_ns: LatencySummary,
    /// CPU time per operation over all iterations, microseconds (the thread CPU clock read
    /// at each phase's start and end).
    pub cpu_us_per_op: f64,
}

/// One rank of a distributed run (`mpirun ... fsbench run`): what it moved and when, on the
/// barrier clock (seconds since every rank left the start barrier).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankReport {
    pub rank: u32,
    pub host: String,
    pub status: RunStatus,
    /// The files this rank did its I/O on.
    pub targets: Vec<String>,
    /// With `--reorder-ranks`: the rank whose data this rank read (for a workload, whose
    /// filesets it ran over, in that rank's directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_of_rank: Option<u32>,
    pub ops: u64,
    pub bytes: u64,
    pub start_s: f64,
    pub end_s: f64,
    /// bytes / (end_s - start_s).
    pub bytes_per_sec: f64,
    /// Why this rank failed (its file and offset), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// The stonewall of a distributed run: every rank was told to stop when the first one
/// finished its work (`first_finish`) or at a fixed time (`time`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StonewallReport {
    /// `first_finish` or `time`.
    pub mode: String,
    /// When the stop was called, on the barrier clock (seconds after the start barrier).
    pub wall_s: f64,
    /// The rank whose end called it (`first_finish`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub called_by_rank: Option<u32>,
    /// Bytes all ranks moved (each stopped within `stop_lag_s` of the wall).
    pub bytes: u64,
    /// bytes / (wall_s - first start): the stonewall figure.
    pub bytes_per_sec: f64,
    /// How long after the wall the last rank stopped (the I/O in flight, message latency).
    pub stop_lag_s: f64,
    /// Least and most bytes one rank moved before it stopped: unequal under a stonewall, so a
    /// read of this data by the same layout finds only the least everywhere.
    pub min_rank_bytes: u64,
    pub max_rank_bytes: u64,
    /// Operations all ranks did (each stopped within `stop_lag_s` of the wall), and
    /// ops / `timed_s`: the stonewall figure in operations (a metadata workload's).
    #[serde(default)]
    pub ops: u64,
    #[serde(default)]
    pub ops_per_sec: f64,
    /// The seconds the stonewall figures are over: wall_s - first start; for a workload with
    /// several `run` commands, the sum over its runs of each run's wall - its first start.
    #[serde(default)]
    pub timed_s: f64,
}

/// What a distributed run adds to the Result besides `ranks` and `hosts`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DistributedReport {
    /// `file_per_rank`, `shared_segmented` or `shared_strided`.
    pub layout: String,
    /// Ranks read the data of the rank this many places on (`--reorder-ranks`); absent: each
    /// rank its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_shift: Option<u32>,
    pub first_start_s: f64,
    pub first_end_s: f64,
    pub last_end_s: f64,
    /// All bytes / (last end - first start): the figure `total.bytes_per_sec` also holds.
    pub full_bytes_per_sec: f64,
    /// Slowest and fastest rank by their own bytes per second, and fastest / slowest.
    pub slowest_rank: u32,
    pub slowest_bytes_per_sec: f64,
    pub fastest_rank: u32,
    pub fastest_bytes_per_sec: f64,
    pub spread_ratio: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stonewall: Option<StonewallReport>,
    /// `--iostat`: each host's device samples, taken by the lowest rank on that host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_devices: Vec<HostDevices>,
}

/// One host's device samples in a distributed run (`--iostat`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostDevices {
    pub host: String,
    /// The rank that sampled them: the lowest rank on the host.
    pub rank: u32,
    /// The devices under that rank's targets, every interval (the shape of the `iostat`
    /// probe of a run on one host).
    pub iostat: serde_json::Value,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Complete,
    /// Stopped early by Ctrl-C / SIGTERM: what was done is reported.
    Partial,
    /// An I/O error (or a full file system) ended the run.
    Failed,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Complete => "complete",
            RunStatus::Partial => "partial",
            RunStatus::Failed => "failed",
        }
    }
}

/// Where and why an I/O failed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IoFailure {
    pub user: usize,
    pub thread: u32,
    pub path: String,
    pub offset: Option<u64>,
    pub message: String,
}

impl std::fmt::Display for IoFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            Some(o) => write!(f, "{} at offset {}: {}", self.path, o, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    File,
    BlockDevice,
}

/// One prepared target, as every worker sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetPlan {
    pub path: PathBuf,
    pub kind: TargetKind,
    /// Bytes of the target the job's offsets fall in.
    pub size: u64,
    /// Created by this run (and so removed at the end unless kept).
    pub created: bool,
    /// Direct-I/O alignment (offset and length), from statx or the device's logical block size.
    pub dio_align: u64,
    /// Size of the reservation, when the job made one (noextend limits writes to it).
    pub reserved: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub targets: Vec<TargetPlan>,
    /// The cache policy actually used (block devices turn buffered into raw).
    pub cache: CachePolicy,
    pub notes: Vec<String>,
    /// The part of a shared target this run covered (one rank of a distributed run); None:
    /// the whole of every target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<RankPart>,
}

/// Which blocks of a shared target a run covers when it is one part of a larger run (an
/// executor such as the MPI one decides it; the Job knows nothing of it): logical block `k` of
/// the rank (0 <= k < `blocks`) is the target's block `k * stride + lane`, counted from byte
/// `base`. Segmented layouts use stride 1 and lane 0 from the rank's segment; IOR's strided
/// layout uses stride N and lane r from byte 0. Threads of the rank share these blocks the
/// way threads of a run share a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankPart {
    pub base: u64,
    pub stride: u64,
    pub lane: u64,
    pub blocks: u64,
    /// Several ranks open the target: they take a shared lock on it, not an exclusive one.
    pub shared: bool,
    /// Inode number of the shared file rank 0 created in this run: the other ranks treat
    /// that file as fsbench's even where the file system keeps no mark (no user xattrs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_ino: Option<u64>,
    /// `--verify` on a shared file: the block seed rank 0 drew for the whole run, stamped by
    /// every rank, so that any rank's journal judges the other ranks' blocks as this run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_seed: Option<u64>,
    /// This rank (rank 0) holds the run's lock on the shared file: an exclusive one, taken
    /// before the start barrier and kept to the end, so a second run on the file is refused
    /// naming this process. The other ranks take none (they start only once rank 0 has it).
    #[serde(default)]
    pub run_lock: bool,
}

/// What `--steady-state` watched: the run's 1-second samples of one figure, judged over the
/// last `window_s` of them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SteadyReport {
    /// `iops` (ops/s), `bw` (bytes/s) or `lat` (mean ns).
    pub metric: String,
    /// How far the window's samples may spread, in % of their mean.
    pub limit_pct: f64,
    /// The slope was judged, not the range.
    pub slope: bool,
    pub window_s: u32,
    /// The run settled and was stopped there; false: it ran to its longest time.
    pub reached: bool,
    /// Seconds of counted run time (after any warm-up) when it settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_s: Option<f64>,
    /// The last window judged (the settled one when reached), oldest first; fewer than
    /// `window_s` when the run ended before a full window.
    pub samples: Vec<f64>,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// (max - min) / mean, in %.
    pub range_pct: f64,
    /// The least-squares slope per second / mean, in % (signed).
    pub slope_pct: f64,
}

/// One interval of the run's time series (all workers together), as stored in the Result.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct IntervalReport {
    /// End of the interval, seconds from the start of the run.
    pub t_s: f64,
    /// Length of the interval in seconds (the last one may be shorter).
    pub interval_s: f64,
    pub ops: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    #[serde(default)]
    pub other_ops: u64,
    pub bytes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub iops: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub bytes_per_sec: f64,
    pub read_bytes_per_sec: f64,
    pub write_bytes_per_sec: f64,
    /// Latency of the I/Os completed in this interval (bucket values: within the
    /// histogram's relative error).
    pub lat_ns: LatencySummary,
    /// What else the host did in this interval (sampled by the runner at its edges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::probe::host::IntervalHost>,
}

/// How steady the run itself was: the spread and the trend of its per-interval IOPS and
/// bandwidth, computed by the runner from its interval series.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StabilityReport {
    /// Length of the intervals judged: whole intervals of the series, joined up to 1 s.
    pub interval_s: f64,
    /// How many intervals were judged.
    pub intervals: u32,
    /// `status_interval` (the run's `--status-interval` series) or `default` (a series kept
    /// for these figures only, not stored).
    pub series: String,
    pub iops_mean: f64,
    /// Coefficient of variation of the intervals' IOPS: sample standard deviation / mean.
    pub iops_cv_pct: f64,
    /// The least-squares line of IOPS against time, its rise over the judged span (signed),
    /// in % of the mean.
    pub iops_change_over_run_pct: f64,
    pub bytes_per_sec_mean: f64,
    pub bytes_per_sec_cv_pct: f64,
    pub bytes_per_sec_change_over_run_pct: f64,
}

/// What an IO500 run adds (`fsbench io500`): the phases' figures in IO500's order, its three
/// scores, and whether the run could count as IO500's (it never can on one host; below the
/// 300 s stonewall it is marked unofficial as well).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Io500Info {
    /// The directory the phases worked in (the run's own directory inside it is removed).
    pub dir: String,
    /// Seconds each write phase ran before it was stopped (IO500 demands 300).
    pub stonewall_s: u64,
    /// The stonewall was shorter than IO500's 300 s.
    pub unofficial: bool,
    /// Geometric mean of the four ior bandwidths, GiB/s.
    pub score_bw_gib_s: f64,
    /// Geometric mean of the eight metadata and find rates, kIOPS.
    pub score_md_kiops: f64,
    /// sqrt(bw score x md score).
    pub score: f64,
    /// Entries the find phase matched and looked at.
    pub find_matched: u64,
    pub find_total: u64,
    /// On MPI ranks, each rank's part of the find phase (none on one host).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub find_ranks: Vec<Io500FindRank>,
    pub phases: Vec<Io500Phase>,
}

/// One rank's part of IO500's find phase on MPI ranks: the entries of every directory whose
/// names fall to it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Io500FindRank {
    pub rank: u32,
    /// Entries it looked at and matched.
    pub looked: u64,
    pub matched: u64,
    /// Seconds its walk took.
    pub time_s: f64,
}

/// One IO500 phase as measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Io500Phase {
    /// IO500's name (`ior-easy-write`, `mdtest-hard-stat`, `find`).
    pub name: String,
    /// The figure the score takes: GiB/s for the ior phases, kIOPS for the others.
    pub value: f64,
    /// `GiB/s` or `kIOPS`.
    pub unit: String,
    pub time_s: f64,
    /// Operations (items, entries or I/Os) and bytes the phase did.
    pub ops: u64,
    pub bytes: u64,
    /// A write phase the stonewall stopped (the later phases do exactly what it did).
    pub stonewalled: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub fsbench_version: String,
    pub kind: Kind,
    pub name: String,
    pub started_unix_s: f64,
    pub status: RunStatus,
    pub failures: Vec<IoFailure>,
    pub notes: Vec<String>,
    /// The Job that ran (kind `io`); other kinds run no Job and have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<Job>,
    /// Prepared targets and the cache policy used (io, replay scratch files, backup archive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    pub environment: Environment,
    pub total: StatsReport,
    /// Per target (user) and thread: io and replay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<UserReport>,
    /// Named groups: workload flowops, replay I/O kinds, backup phases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<BackupInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mdtest: Option<MdtestInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io500: Option<Io500Info>,
    /// Probe data stored beside the stats (device samples, extents, traces), keyed by probe.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub probes: serde_json::Map<String, serde_json::Value>,
    /// What else the host did over the run's window: CPU steal, pressure stalls, other
    /// processes on the run's CPUs (`crate::probe::host`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::probe::host::HostReport>,
    /// What `--verify` found (io runs that verified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<crate::verify::report::VerifyReport>,
    /// What could make this number mislead, with the evidence (the `explain` checks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explain: Vec<Explanation>,
    /// The run's `--status-interval` time series: every interval of all workers together.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeseries: Vec<IntervalReport>,
    /// What `--steady-state` watched and whether the run settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyReport>,
    /// How steady the run's IOPS and bandwidth were from interval to interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stability: Option<StabilityReport>,
    /// Per rank of a distributed run (`mpirun ... fsbench run`), in rank order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankReport>,
    /// The distinct hosts the ranks ran on, in order of first rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// The aggregate figures of a distributed run (full and stonewall bandwidth, spread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed: Option<DistributedReport>,
    /// `--repeat N`: every run's headline figures and their median and interval (the rest of
    /// the Result is the run nearest the median).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<RepeatReport>,
}

/// The headline figures of one run, the ones `--repeat` and `ab` summarise and judge.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Figures {
    pub iops: f64,
    pub bytes_per_sec: f64,
    pub lat_mean_ns: f64,
    pub lat_p99_ns: f64,
    /// Operations per second of CPU time the run used (None when too short for the CPU
    /// accounting to see it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_cpu_s: Option<f64>,
}

/// One headline metric: its key (units in the name), how it is named in text, which way is
/// better, and how to read it from [`Figures`].
pub struct Headline {
    pub key: &'static str,
    pub label: &'static str,
    pub higher_is_better: bool,
    pub get: fn(&Figures) -> Option<f64>,
}

/// The headline metrics, in the order they are printed.
pub const HEADLINES: &[Headline] = &[
    Headline {
        key: "iops",
        label: "IOPS",
        higher_is_better: true,
        get: |f| Some(f.iops),
    },
    Headline {
        key: "bytes_per_sec",
        label: "bandwidth",
        higher_is_better: true,
        get: |f| Some(f.bytes_per_sec),
    },
    Headline {
        key: "lat_mean_ns",
        label: "mean latency",
        higher_is_better: false,
        get: |f| Some(f.lat_mean_ns),
    },
    Headline {
        key: "lat_p99_ns",
        label: "p99 latency",
        higher_is_better: false,
        get: |f| Some(f.lat_p99_ns),
    },
    Headline {
        key: "ops_per_cpu_s",
        label: "ops per CPU second",
        higher_is_better: true,
        get: |f| f.ops_per_cpu_s,
    },
];

impl Figures {
    pub fn of(r: &RunResult) -> Figures {
        let t = &r.total;
        Figures {
            iops: t.iops,
            bytes_per_sec: t.bytes_per_sec,
            lat_mean_ns: t.lat_ns.mean,
            lat_p99_ns: t.lat_ns.p99 as f64,
            ops_per_cpu_s: (t.cpu_s > 0.0 && t.ops > 0).then(|| t.ops as f64 / t.cpu_s),
        }
    }
}

/// One headline metric over the repeats: median, range and 95 % interval of the median.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RepeatSummary {
    /// A key of [`HEADLINES`] (units in the name).
    pub metric: String,
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
}

/// `--repeat N`: the runs' figures and their summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RepeatReport {
    /// The run (counted from 1) whose full figures the rest of the Result holds: the one whose
    /// throughput is nearest the median.
    pub shown_run: usize,
    /// How the interval is made.
    pub method: String,
    /// Every run's headline figures, in the order they ran.
    pub runs: Vec<Figures>,
    /// Per headline metric the runs measured (a metric every run has as 0 is left out).
    pub summary: Vec<RepeatSummary>,
}

impl RepeatReport {
    /// The values of a headline metric over the runs (None when it is not summarised).
    pub fn values(&self, key: &str) -> Option<Vec<f64>> {
        let h = HEADLINES.iter().find(|h| h.key == key)?;
        self.summary.iter().find(|s| s.metric == key)?;
        Some(self.runs.iter().filter_map(|f| (h.get)(f)).collect())
    }
}

impl RunResult {
    /// One Result of repeated runs of the same thing: the run whose throughput is nearest the
    /// median, with every run's figures and their summary in `repeat`. None when `runs` is
    /// empty.
    pub fn of_repeats(mut runs: Vec<RunResult>) -> Option<RunResult> {
        let figures: Vec<Figures> = runs.iter().map(Figures::of).collect();
        let throughput: Vec<f64> = runs.iter().map(|r| r.repeat_figure().0).collect();
        let mid = crate::stats::bootstrap::median(&throughput)?;
        let shown = (0..runs.len())
            .min_by(|&a, &b| {
                (throughput[a] - mid)
                    .abs()
                    .total_cmp(&(throughput[b] - mid).abs())
            })
            .unwrap_or(0);
        let summary = HEADLINES
            .iter()
            .filter_map(|h| {
                let values: Vec<f64> = figures.iter().filter_map(|f| (h.get)(f)).collect();
                if values.iter().all(|v| *v == 0.0) {
                    return None;
                }
                let s = crate::stats::bootstrap::summarize(&values)?;
                Some(RepeatSummary {
                    metric: h.key.to_string(),
                    n: s.n,
                    median: s.median,
                    min: s.min,
                    max: s.max,
                    ci95_low: s.low,
                    ci95_high: s.high,
                })
            })
            .collect();
        let worst = runs.iter().map(|r| r.status).max_by_key(|s| match s {
            RunStatus::Complete => 0,
            RunStatus::Partial => 1,
            RunStatus::Failed => 2,
        });
        let mut r = runs.swap_remove(shown);
        if let Some(w) = worst {
            r.status = w;
        }
        r.repeat = Some(RepeatReport {
            shown_run: shown + 1,
            method: crate::stats::bootstrap::REPEAT_METHOD.to_string(),
            runs: figures,
            summary,
        });
        Some(r)
    }
}

impl RunResult {
    /// An empty envelope of a kind: complete, no figures yet.
    pub fn new(kind: Kind, name: &str, started_unix_s: f64, environment: Environment) -> Self {
        RunResult {
            schema_version: SCHEMA_VERSION,
            fsbench_version: env!("CARGO_PKG_VERSION").to_string(),
            kind,
            name: name.to_string(),
            started_unix_s,
            status: RunStatus::Complete,
            failures: Vec::new(),
            notes: Vec::new(),
            job: None,
            plan: None,
            environment,
            total: StatsReport::default(),
            users: Vec::new(),
            groups: Vec::new(),
            workload: None,
            replay: None,
            backup: None,
            mdtest: None,
            io500: None,
            probes: serde_json::Map::new(),
            host: None,
            verify: None,
            explain: Vec::new(),
            timeseries: Vec::new(),
            steady: None,
            stability: None,
            ranks: Vec::new(),
            hosts: Vec::new(),
            distributed: None,
            repeat: None,
        }
    }

    /// The figure repetitions of a point are compared on: throughput in bytes when the run
    /// moved data, else operations per second.
    pub(crate) fn repeat_figure(&self) -> (f64, &'static str) {
        if self.total.bytes > 0 {
            (self.total.bytes_per_sec, "bytes_per_sec")
        } else {
            (self.total.iops, "ops_per_sec")
        }
    }

    /// The cache policy the run used, when it used targets of its own.
    pub fn cache_name(&self) -> Option<String> {
        self.plan.as_ref().map(|p| p.cache.name())
    }

    /// Read a stored Result, checking its schema version: documents of this version only.
    pub fn from_json(text: &str, origin: &str) -> Result<Self, crate::error::UsageError> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| crate::usage!("{origin}: not a JSON result: {e}"))?;
        Self::from_value(v, origin)
    }

    pub fn from_value(
        v: serde_json::Value,
        origin: &str,
    ) -> Result<Self, crate::error::UsageError> {
        match v.get("schema_version").and_then(|s| s.as_u64()) {
            Some(n) if n == SCHEMA_VERSION as u64 => {}
            Some(n) => {
                return Err(crate::usage!(
                    "{origin}: schema_version {n} is not supported (this fsbench reads {SCHEMA_VERSION}): run it again with this fsbench"
                ))
            }
            None => return Err(crate::usage!("{origin}: no schema_version: not an fsbench result")),
        }
        if let Some(k) = v.get("kind").and_then(|k| k.as_str()) {
            if serde_json::from_value::<Kind>(serde_json::Value::from(k)).is_err() {
                return Err(crate::usage!(
                    "{origin}: kind '{k}' is not a result this fsbench reads (io, workload, replay, backup, mdtest)"
                ));
            }
        }
        serde_json::from_value(v).map_err(|e| crate::usage!("{origin}: {e}"))
    }

    /// Every [`StatsReport`] of the document: total, users, threads, groups, workload runs.
    pub fn for_each_stats(&mut self, mut f: impl FnMut(&mut StatsReport)) {
        f(&mut self.total);
        for u in &mut self.users {
            f(&mut u.stats);
            for t in &mut u.threads {
                f(&mut t.stats);
            }
        }
        for g in &mut self.groups {
            f(&mut g.stats);
        }
        if let Some(w) = &mut self.workload {
            for run in &mut w.runs {
                f(&mut run.summary);
            }
        }
    }
}

/// One reason to doubt a number, with what shows it (found by the `explain` checks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// Which check: too_short, page_cache, sparse_reads, host_bound, cpu_binding, device_idle,
    /// queue_depth, dirty_at_stop, direct_fallback, discovered_never_direct, data_shape, spread;
    /// host_steal, host_other_cpu, host_cpu_pressure, host_memory_pressure, host_cpu_frequency,
    /// host_dirty_at_start, or host_quiet when the host had none of these; unstable (the
    /// run's own intervals varied or drifted).
    pub check: String,
    pub message: String,
    pub evidence: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document() -> serde_json::Value {
        let r = RunResult::new(Kind::Io, "x", 0.0, Default::default());
        serde_json::to_value(&r).unwrap()
    }

    #[test]
    fn this_version_is_read_back() {
        let r = RunResult::from_value(document(), "x.json").unwrap();
        assert_eq!(r.schema_version, SCHEMA_VERSION);
        assert_eq!(r.name, "x");
    }

    #[test]
    fn other_versions_and_kinds_are_one_line_refusals() {
        let mut v = document();
        for old in [1, 2, 4] {
            v["schema_version"] = old.into();
            let e = RunResult::from_value(v.clone(), "x.json").unwrap_err();
            assert!(
                e.to_string().contains(&format!("schema_version {old}")),
                "{e}"
            );
        }
        v["schema_version"] = SCHEMA_VERSION.into();
        v["kind"] = "advise".into();
        let e = RunResult::from_value(v, "x.json").unwrap_err();
        assert!(e.to_string().contains("kind 'advise'"), "{e}");
    }
}
