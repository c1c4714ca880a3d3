//! The Job: one benchmark, fully resolved and serialisable. Every front end (`run`, `vx`,
//! `quick`, sweeps) builds Jobs; only the runner does I/O. Defaults live in `Default for Job`.

pub mod cache;
pub mod params;
pub(crate) mod shape;
pub mod split;
pub mod steady;
pub(crate) mod think;

use crate::error::UsageError;
use crate::usage;
pub use cache::{CachePolicy, Route};
use serde::{Deserialize, Serialize};
pub(crate) use shape::{BufferPattern, DedupeMode, Distribution};
pub use split::{BsDirs, BsRange, BsSplit};
use std::path::PathBuf;
pub(crate) use think::Think;

/// Access pattern and operation mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    #[default]
    Read,
    Write,
    /// Sequential, reads and writes mixed by `read_pct`.
    ReadWrite,
    RandRead,
    RandWrite,
    /// Random, reads and writes mixed by `read_pct`.
    RandRw,
    /// Sequential trims (discards): hole punching on a file, BLKDISCARD on a device.
    Trim,
    /// Random trims.
    RandTrim,
    /// Sequential: trim a block, then write it (fio's trimwrite).
    TrimWrite,
}

impl Access {
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadWrite => "rw",
            Access::RandRead => "randread",
            Access::RandWrite => "randwrite",
            Access::RandRw => "randrw",
            Access::Trim => "trim",
            Access::RandTrim => "randtrim",
            Access::TrimWrite => "trimwrite",
        }
    }
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Access::RandRead | Access::RandWrite | Access::RandRw | Access::RandTrim
        )
    }
    /// Whether the access trims (and so changes the target as a write does).
    pub fn trims(self) -> bool {
        matches!(self, Access::Trim | Access::RandTrim | Access::TrimWrite)
    }
    pub fn is_mixed(self) -> bool {
        matches!(self, Access::ReadWrite | Access::RandRw)
    }
    /// Share of reads in percent for this access (trims change the target: 0, as writes).
    pub fn read_pct(self, mixed_pct: u8) -> u8 {
        match self {
            Access::Read | Access::RandRead => 100,
            Access::Write | Access::RandWrite => 0,
            Access::Trim | Access::RandTrim | Access::TrimWrite => 0,
            Access::ReadWrite | Access::RandRw => mixed_pct,
        }
    }
}

/// How an I/O is issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// pread/pwrite, one I/O at a time per thread.
    #[default]
    Sync,
    /// Copy to/from a shared mapping of the file.
    Mmap,
    /// io_uring with a queue depth.
    Uring,
    /// Every I/O completes at once without a system call and without touching the target:
    /// what fsbench itself costs per I/O.
    Null,
    /// Each I/O is a fallocate(2) of its range (fio's `falloc`): writes allocate, reads
    /// allocate keeping the size, trims punch holes.
    Falloc,
    /// Each write sets the file's size to its offset with ftruncate(2) (fio's `ftruncate`).
    Ftruncate,
}

impl EngineKind {
    pub fn parse(s: &str) -> Result<Self, UsageError> {
        Ok(match s {
            "sync" | "psync" => EngineKind::Sync,
            "mmap" => EngineKind::Mmap,
            "uring" | "io_uring" => EngineKind::Uring,
            "null" => EngineKind::Null,
            "falloc" => EngineKind::Falloc,
            "ftruncate" => EngineKind::Ftruncate,
            _ => {
                return Err(usage!(
                    "unknown engine '{s}': expected sync, mmap, uring, null, falloc or ftruncate"
                ))
            }
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Sync => "sync",
            EngineKind::Mmap => "mmap",
            EngineKind::Uring => "uring",
            EngineKind::Null => "null",
            EngineKind::Falloc => "falloc",
            EngineKind::Ftruncate => "ftruncate",
        }
    }

    /// Whether each I/O changes the file's space (fallocate, ftruncate) instead of moving
    /// bytes: nothing is laid out, shaped or read back.
    pub fn changes_space(self) -> bool {
        matches!(self, EngineKind::Falloc | EngineKind::Ftruncate)
    }
}

/// Where users and their threads run (vxbench -P / -p / -t).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum WorkerMode {
    /// Threads for users and for threads inside a user (vxbench -t).
    #[default]
    Threads,
    /// One process per user, threads inside it (vxbench -P, vxbench's default).
    ProcessPerUser,
    /// One process per thread (vxbench -p).
    ProcessPerThread,
}

impl WorkerMode {
    /// `per-user`, `per-thread`, or `threads` (also `none`); `what` names the option.
    pub fn parse(s: &str, what: &str) -> Result<Self, UsageError> {
        Ok(match s {
            "per-user" => WorkerMode::ProcessPerUser,
            "per-thread" => WorkerMode::ProcessPerThread,
            "threads" | "none" => WorkerMode::Threads,
            _ => {
                return Err(usage!(
                    "unknown {what} '{s}': expected per-user, per-thread or threads"
                ))
            }
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            WorkerMode::Threads => "threads",
            WorkerMode::ProcessPerUser => "per-user",
            WorkerMode::ProcessPerThread => "per-thread",
        }
    }
}

/// Open flags (vxbench -o).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct OpenFlags {
    pub append: bool,
    pub sync: bool,
    pub dsync: bool,
    pub trunc: bool,
}

/// Access advice applied with posix_fadvise (vxbench -c noreuse / random / seq).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Advice {
    NoReuse,
    Random,
    Seq,
}

impl Advice {
    pub fn parse(s: &str) -> Result<Self, UsageError> {
        Ok(match s {
            "noreuse" => Advice::NoReuse,
            "random" => Advice::Random,
            "seq" | "sequential" => Advice::Seq,
            _ => {
                return Err(usage!(
                    "unknown advice '{s}': expected noreuse, random or seq"
                ))
            }
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Advice::NoReuse => "noreuse",
            Advice::Random => "random",
            Advice::Seq => "seq",
        }
    }
}

/// Reservation and fixed-extent flags (vxbench -f).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct SpaceFlags {
    pub align: bool,
    pub chgsiz: bool,
    pub contig: bool,
    pub noextend: bool,
    pub noreserve: bool,
    pub trim: bool,
}

impl SpaceFlags {
    /// Set the flags named in a comma list (`align,chgsiz,contig,noextend,noreserve,trim`).
    pub fn apply_list(&mut self, list: &str, option: &str) -> Result<(), UsageError> {
        for f in list.split(',').filter(|x| !x.is_empty()) {
            match f {
                "align" => self.align = true,
                "chgsiz" => self.chgsiz = true,
                "contig" => self.contig = true,
                "noextend" => self.noextend = true,
                "noreserve" => self.noreserve = true,
                "trim" => self.trim = true,
                _ => {
                    return Err(usage!(
                        "unknown {option} flag '{f}': expected align, chgsiz, contig, noextend, noreserve or trim"
                    ))
                }
            }
        }
        Ok(())
    }

    /// The flags that are set, in the order [`SpaceFlags::apply_list`] reads them.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.align, "align"),
            (self.chgsiz, "chgsiz"),
            (self.contig, "contig"),
            (self.noextend, "noextend"),
            (self.noreserve, "noreserve"),
            (self.trim, "trim"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect()
    }
}

/// Space management before the timed run: extent size hint and reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Space {
    /// Extent size hint in bytes (XFS FS_IOC_FSSETXATTR).
    pub extsize: Option<u64>,
    /// Bytes to reserve with fallocate.
    pub reservation: Option<u64>,
    pub flags: SpaceFlags,
    /// Reserve space but do no I/O (vxbench reserveonly).
    pub reserve_only: bool,
    /// Initial file size for random I/O (vxbench truncup).
    pub truncup: Option<u64>,
}

/// A rate limit, per thread or for the whole job (issue: asynchronous I/O and rate control).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimit {
    /// I/Os a second: of every direction on one schedule, or of reads when `directions`
    /// gives writes and trims their own.
    pub iops: Option<u64>,
    pub bytes_per_sec: Option<u64>,
    pub scope: RateScope,
    /// Per-direction limits (`--rate-iops R,W[,T]`, `--rate-bytes R,W[,T]`, fio's
    /// `rate=R,W`): those of writes and of trims, each direction then on a schedule of its
    /// own. None: `iops` and `bytes_per_sec` hold for all I/Os together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directions: Option<[DirRate; 2]>,
    /// The least each worker must move in every direction it issues, per second, judged
    /// over each `cycle_ms` after a 2-second settle (fio's `rate_min`): below it the run
    /// fails. Divided among the threads with `scope` total, as the rate is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_bytes_per_sec: Option<u64>,
    /// The least I/Os a second, judged the same way (fio's `rate_iops_min`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_iops: Option<u64>,
    /// How long each judged cycle is, ms (fio's `rate_cycle`; default 1000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle_ms: Option<u64>,
    /// How the issue times of a rate are spaced (fio's `rate_process`).
    #[serde(skip_serializing_if = "RateProcess::is_linear")]
    pub process: RateProcess,
}

/// How a rate limit spaces its issue times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RateProcess {
    /// Evenly: one I/O every 1/rate seconds.
    #[default]
    Linear,
    /// As a Poisson process: the gaps are drawn from an exponential distribution whose mean
    /// is 1/rate, from the job's seed.
    Poisson,
}

impl RateProcess {
    pub fn parse(s: &str, what: &str) -> Result<Self, UsageError> {
        match s {
            "linear" => Ok(RateProcess::Linear),
            "poisson" => Ok(RateProcess::Poisson),
            _ => Err(usage!("bad {what} '{s}': expected linear or poisson")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            RateProcess::Linear => "linear",
            RateProcess::Poisson => "poisson",
        }
    }
    pub fn is_linear(&self) -> bool {
        *self == RateProcess::Linear
    }
}

/// fio's settle time before the first minimum-rate cycle is judged.
pub(crate) const MIN_RATE_SETTLE_MS: u64 = 2000;
/// fio's default `rate_cycle`.
pub(crate) const DEFAULT_RATE_CYCLE_MS: u64 = 1000;

/// The limits of one direction under per-direction rates (None: that measure unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct DirRate {
    pub iops: Option<u64>,
    pub bytes_per_sec: Option<u64>,
}

/// Which measure of a rate limit: I/Os or bytes a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateMeasure {
    Iops,
    Bytes,
}

impl DirRate {
    pub fn get(&self, m: RateMeasure) -> Option<u64> {
        match m {
            RateMeasure::Iops => self.iops,
            RateMeasure::Bytes => self.bytes_per_sec,
        }
    }

    fn slot(&mut self, m: RateMeasure) -> &mut Option<u64> {
        match m {
            RateMeasure::Iops => &mut self.iops,
            RateMeasure::Bytes => &mut self.bytes_per_sec,
        }
    }
}

impl RateLimit {
    /// Whether a minimum rate is judged (`rate_min`, `rate_iops_min`).
    pub fn has_min(&self) -> bool {
        self.min_bytes_per_sec.is_some() || self.min_iops.is_some()
    }

    /// Whether any I/O is rate-limited.
    pub fn is_on(&self) -> bool {
        (0..3).any(|d| {
            let r = self.of(d);
            r.iops.is_some() || r.bytes_per_sec.is_some()
        })
    }

    /// The limits of direction `dir` (0 reads, 1 writes, 2 trims).
    pub fn of(&self, dir: usize) -> DirRate {
        match (self.directions, dir) {
            (Some(d), 1 | 2) => d[dir - 1],
            _ => DirRate {
                iops: self.iops,
                bytes_per_sec: self.bytes_per_sec,
            },
        }
    }

    /// One measure for every direction (one value), or per direction (`[reads, writes,
    /// trims]` given as several): each direction then keeps its other measure.
    pub(crate) fn set(&mut self, m: RateMeasure, values: PerDirection) {
        match values {
            PerDirection::All(v) => {
                *self.slot_of_reads(m) = Some(v);
                if let Some(d) = self.directions.as_mut() {
                    for r in d.iter_mut() {
                        *r.slot(m) = Some(v);
                    }
                }
            }
            PerDirection::Each(v) => {
                let dirs = self.directions.get_or_insert([self.of(0); 2]);
                *dirs[0].slot(m) = v[1];
                *dirs[1].slot(m) = v[2];
                *self.slot_of_reads(m) = v[0];
            }
        }
    }

    /// A measure as `set` reads it back: one value, or `R,W,T` (an empty field: none).
    pub(crate) fn show(&self, m: RateMeasure) -> String {
        let one = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
        match self.directions {
            None => one(self.of(0).get(m)),
            Some(_) => (0..3)
                .map(|d| one(self.of(d).get(m)))
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    fn slot_of_reads(&mut self, m: RateMeasure) -> &mut Option<u64> {
        match m {
            RateMeasure::Iops => &mut self.iops,
            RateMeasure::Bytes => &mut self.bytes_per_sec,
        }
    }
}

/// A value for every direction, or one per direction (`READS,WRITES[,TRIMS]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PerDirection {
    All(u64),
    Each([Option<u64>; 3]),
}

impl PerDirection {
    /// `V` (every direction) or `READS,WRITES[,TRIMS]`, each field read by `one`: two
    /// fields give trims the writes' value; an empty field is no value for that direction.
    pub(crate) fn parse(
        v: &str,
        what: &str,
        one: impl Fn(&str) -> Result<u64, UsageError>,
    ) -> Result<PerDirection, UsageError> {
        let fields: Vec<&str> = v.split(',').map(str::trim).collect();
        if fields.len() == 1 {
            return one(fields[0]).map(PerDirection::All);
        }
        if fields.len() > 3 || fields.iter().all(|f| f.is_empty()) {
            return Err(usage!(
                "bad {what} '{v}': expected one value, or READS,WRITES[,TRIMS] (an empty field: no limit for that direction)"
            ));
        }
        let mut each = [None; 3];
        for (d, f) in fields.iter().enumerate() {
            each[d] = if f.is_empty() { None } else { Some(one(f)?) };
        }
        if fields.len() == 2 {
            each[2] = each[1];
        }
        Ok(PerDirection::Each(each))
    }
}

/// Whom a rate limit applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RateScope {
    /// Every thread issues at the given rate.
    #[default]
    Thread,
    /// The job as a whole: the rate is divided evenly among all threads of all users.
    Total,
}

impl RateScope {
    pub fn parse(s: &str) -> Result<Self, UsageError> {
        match s {
            "thread" => Ok(RateScope::Thread),
            "total" => Ok(RateScope::Total),
            _ => Err(usage!("unknown rate scope '{s}': expected thread or total")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            RateScope::Thread => "thread",
            RateScope::Total => "total",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Job {
    pub name: String,
    /// One user per target: files or block devices.
    pub targets: Vec<PathBuf>,
    /// Threads per user (vxbench nthreads).
    pub threads: u32,
    pub access: Access,
    /// Read share in percent for mixed access (vxbench rdpct).
    pub read_pct: u8,
    /// Bytes per I/O.
    pub block_size: u64,
    /// Mixed I/O sizes per direction (`--bssplit`); replaces `block_size` when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bssplit: Option<BsSplit>,
    /// One block size per direction (`--bs READS,WRITES[,TRIMS]`); replaces `block_size`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_sizes: Option<BsDirs>,
    /// Sizes drawn from a range per direction by fio's rule (`--bsrange`); replaces `block_size`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bsrange: Option<BsRange>,
    /// Random offsets are multiples of this (`--block-align`); default: the smallest I/O.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_align: Option<u64>,
    /// Sequential access: bytes skipped after each I/O (`--skip`, fio's `rw=read:8k`), so
    /// the I/Os leave holes between them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip: Option<u64>,
    /// Random access: this many I/Os in a row from each random offset, the ones after the
    /// first following on sequentially (`--random-run`, fio's `rw=randread:N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_run: Option<u64>,
    /// With `random_run`: every I/O of a run goes to the run's random offset instead of
    /// following on (`--run-same-offset`, fio's `rw_sequencer=identical`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run_same_offset: bool,
    /// Random access: each thread draws its offsets in its own slice of the file, as
    /// sequential threads cover theirs (`--random-slices`, fio's clones of one file with
    /// `offset_increment`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub random_slices: bool,
    /// File size; for random access the range offsets are drawn from (vxbench maxfilesize).
    pub file_size: Option<u64>,
    /// I/Os per thread per repetition (vxbench iocount).
    pub io_count: Option<u64>,
    /// Stop after this many seconds.
    pub time_s: Option<f64>,
    /// Run this many seconds first and leave them out of the Result (`--ramp`, fio's
    /// ramp_time); `time_s` counts after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp_s: Option<f64>,
    /// Each worker's first this many bytes moved (read, written or trimmed) run as a
    /// warm-up left out of the Result (`--ramp-bytes`); `time_s` counts after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_bytes: Option<u64>,
    /// End the run once its rate has settled (`--steady-state`, fio's steadystate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<steady::SteadyState>,
    /// With `steady_state`: the longest the run goes on (`--steady-state-max`; `time_s`
    /// when not given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state_max_s: Option<f64>,
    /// The CPUs the workers are pinned to (`--cpus 0-1,3`, fio's cpus_allowed); empty: not
    /// pinned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    /// The workers' nice value (-20 to 19, fio's `nice`): each worker thread sets it when it
    /// starts, before the gate; None: the priority fsbench was started with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nice: Option<i8>,
    /// Pause each thread after every so many of its I/Os (`--think`, fio's thinktime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think: Option<Think>,
    /// Repeat the I/O loop this many times (vxbench nrep).
    pub repeats: u32,
    pub open: OpenFlags,
    pub cache: CachePolicy,
    pub advice: Vec<Advice>,
    pub space: Space,
    /// fsync each file after writing it (timed, like vxbench's fsync).
    pub fsync: bool,
    /// Remove each file after the test, even one kept from an earlier run (vxbench remove).
    pub remove: bool,
    pub seed: u64,
    pub engine: EngineKind,
    /// I/Os in flight per thread (engines that support it).
    pub queue_depth: u32,
    pub sqpoll: bool,
    pub hipri: bool,
    pub rate: RateLimit,
    pub workers: WorkerMode,
    /// mlock the I/O buffers (vxbench -m).
    pub mlock: bool,
    /// Keep files fsbench created.
    pub keep: bool,
    /// Allow writing to files and devices fsbench did not create.
    pub force: bool,
    /// Drop caches before the run: fadvise DONTNEED on every target, plus the global drop when root.
    pub drop_cache: bool,
    /// Evict each target's pages before timing (like fio's invalidate=1).
    pub invalidate: bool,
    /// Write self-describing blocks and check them: reads of written blocks during the run
    /// and every written block after it (`--verify`). `--verify-backlog` and `--journal`
    /// turn it on too ([`Job::verifying`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub verify: bool,
    /// Check the last N completed writes of a thread every N writes, while the run goes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_backlog: Option<u64>,
    /// Journal of the generations storage acknowledged as durable (a new file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<PathBuf>,
    /// fsync each thread's files every N completed writes (acknowledges buffered writes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync_every: Option<u64>,
    /// fdatasync each thread's files every N writes it issued (fio's fdatasync=N): the
    /// in-flight writes drain first, as with `fsync_every` without verification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fdatasync_every: Option<u64>,
    /// How random offsets favour blocks (fio's random_distribution).
    #[serde(skip_serializing_if = "Distribution::is_uniform")]
    pub distribution: Distribution,
    /// Random I/O touches every block once per pass (a permutation per pass), not with
    /// replacement.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub random_map: bool,
    /// Bytes of every write: zeros, fresh random bytes, or a repeated pattern; None keeps
    /// the buffers as allocated (random bytes made once per buffer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_pattern: Option<BufferPattern>,
    /// Each written block compresses by about this many percent (fio's
    /// buffer_compress_percentage).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_compress: Option<u8>,
    /// This percentage of written blocks repeat an earlier block (fio's dedupe_percentage).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe: Option<u8>,
    /// Where the repeated blocks come from (`--dedupe-mode`, fio's dedupe_mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_mode: Option<DedupeMode>,
    /// With the working-set mode: the working set's share of the file's blocks, in percent
    /// (`--dedupe-working-set`, fio's dedupe_working_set_percentage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_working_set: Option<u8>,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            name: "job".into(),
            targets: Vec::new(),
            threads: 1,
            access: Access::Read,
            read_pct: 50,
            block_size: 8192,
            bssplit: None,
            block_sizes: None,
            bsrange: None,
            block_align: None,
            skip: None,
            random_run: None,
            run_same_offset: false,
            random_slices: false,
            file_size: None,
            io_count: None,
            time_s: None,
            ramp_s: None,
            ramp_bytes: None,
            steady_state: None,
            steady_state_max_s: None,
            cpus: Vec::new(),
            nice: None,
            think: None,
            repeats: 1,
            open: OpenFlags::default(),
            cache: CachePolicy::Buffered,
            advice: Vec::new(),
            space: Space::default(),
            fsync: false,
            remove: false,
            seed: 0x5eed_f5be_4c40_0001,
            engine: EngineKind::Sync,
            queue_depth: 1,
            sqpoll: false,
            hipri: false,
            rate: RateLimit::default(),
            workers: WorkerMode::Threads,
            mlock: false,
            keep: false,
            force: false,
            drop_cache: false,
            invalidate: true,
            verify: false,
            verify_backlog: None,
            journal: None,
            fsync_every: None,
            fdatasync_every: None,
            distribution: Distribution::Uniform,
            random_map: false,
            buffer_pattern: None,
            buffer_compress: None,
            dedupe: None,
            dedupe_mode: None,
            dedupe_working_set: None,
        }
    }
}

/// Longest run accepted: one year (a larger `time_s` is a typo, and overflows timers).
pub(crate) const MAX_TIME_S: f64 = 365.0 * 24.0 * 3600.0;

/// A target named after `--` that starts with '-' (`-5`) as the same file, spelled `./-5`, so
/// it can never be taken for an option; [`Job::validate`] refuses any other target that
/// starts with '-'.
pub fn dash_safe(p: &std::path::Path) -> PathBuf {
    if p.as_os_str().as_encoded_bytes().first() == Some(&b'-') {
        PathBuf::from(".").join(p)
    } else {
        p.to_path_buf()
    }
}

/// Largest single I/O accepted (bigger buffers only waste memory; vxbench tests stop at 2 MB).
pub(crate) const MAX_BLOCK_SIZE: u64 = 256 << 20;
/// Largest `--skip` (offsets stay far from overflowing).
const MAX_SKIP: u64 = 1 << 40;

/// Smallest block `--verify` accepts: the verification header (64 bytes, see
/// `crate::verify::block`, which takes this value from here) and a little payload.
pub(crate) const VERIFY_MIN_BLOCK: usize = 128;

/// `--ramp-bytes` beside `--ramp`: a run has one warm-up (every command that takes both
/// refuses the pair with this line).
pub(crate) fn two_warm_ups(bytes: u64) -> UsageError {
    usage!(
        "--ramp-bytes {bytes} with --ramp: a warm-up ends after a time or after some bytes, give one of them"
    )
}

/// `--ramp-bytes SIZE` of a command that runs a source (replay, workload) beside its `--ramp`
/// (none or zero: no warm-up): the bytes, None for none (0 is none, as for a run).
pub fn ramp_bytes_flag(
    value: Option<&str>,
    ramp: Option<std::time::Duration>,
) -> Result<Option<u64>, UsageError> {
    let Some(v) = value else {
        return Ok(None);
    };
    let b = crate::units::parse_size_as(v, crate::units::BareUnit::Bytes, "--ramp-bytes")?;
    if b > 0 && ramp.is_some_and(|r| !r.is_zero()) {
        return Err(two_warm_ups(b));
    }
    Ok(Some(b).filter(|b| *b > 0))
}

/// Whether a block size can carry verification headers.
pub(crate) fn check_verify_block_size(bs: usize) -> Result<(), crate::error::UsageError> {
    if bs < VERIFY_MIN_BLOCK || !bs.is_multiple_of(8) {
        crate::bail_usage!(
            "--verify needs a block size of at least {VERIFY_MIN_BLOCK} bytes and a multiple of 8 (got {bs})"
        );
    }
    Ok(())
}
pub const MAX_THREADS: u32 = 4096;

impl Job {
    /// Read a Job from a TOML file.
    pub fn from_toml(text: &str, origin: &str) -> Result<Job, UsageError> {
        crate::error::parse_toml(text, origin)
    }

    /// Whether the I/Os take more than one size or sizes per direction (`--bssplit`,
    /// `--bs READS,WRITES`, `--bsrange`): the runner then draws each I/O's size from a
    /// `split::SizeTable`.
    pub fn mixed_sizes(&self) -> bool {
        self.bssplit.is_some() || self.block_sizes.is_some() || self.bsrange.is_some()
    }

    /// The I/O sizes as reports show them: `4k`, or `4k/60:64k/40` (`--bssplit`),
    /// `4096,65536` (a per-direction `--bs`), `4096-16384` (`--bsrange`).
    pub fn size_spec(&self) -> String {
        if let Some(s) = &self.bssplit {
            return s.spec();
        }
        if let Some(r) = &self.bsrange {
            return r.spec();
        }
        match &self.block_sizes {
            Some(b) => b.spec(),
            None => crate::units::format_size_exact(self.block_size),
        }
    }

    /// Each direction's sizes as (first, step, last) for `--bs READS,WRITES` and
    /// `--bsrange` (None otherwise).
    fn size_choices(&self) -> Option<[(u64, u64, u64); 3]> {
        if let Some(r) = &self.bsrange {
            return Some([0, 1, 2].map(|d| r.choices(d, self.block_align)));
        }
        self.block_sizes.map(|b| b.dirs.map(|s| (s, s, s)))
    }

    /// The sizes the runner draws from, laid out before the run; None when every I/O is
    /// `block_size`.
    pub(crate) fn size_table(&self) -> Option<split::SizeTable> {
        if let Some(s) = &self.bssplit {
            return Some(split::SizeTable::new(s));
        }
        self.size_choices().map(split::SizeTable::from_choices)
    }

    /// How many distinct sizes the run's I/Os take (each has its own figures in the Result).
    pub fn size_class_count(&self) -> u64 {
        self.size_table().map_or(0, |t| t.classes().len() as u64)
    }

    /// Direction `dir`'s (0 reads, 1 writes, 2 trims) smallest, largest and mean size.
    pub(crate) fn dir_sizes(&self, dir: usize) -> (u64, u64, f64) {
        if let Some(s) = &self.bssplit {
            let l = &s.dirs[dir];
            let min = l.iter().map(|x| x.size).min().unwrap_or(1);
            let max = l.iter().map(|x| x.size).max().unwrap_or(1);
            return (min, max, s.mean_size(dir));
        }
        match self.size_choices() {
            Some(c) => {
                let (first, _, last) = c[dir];
                let table = split::SizeTable::from_choices(c);
                (first, last.max(first), table.mean_size(dir))
            }
            None => (self.block_size, self.block_size, self.block_size as f64),
        }
    }

    /// The largest I/O of the run (of any direction with mixed sizes). Buffers and the
    /// smallest file are sized by it.
    pub fn io_size(&self) -> u64 {
        (0..3).map(|d| self.dir_sizes(d).1).max().unwrap_or(1)
    }

    /// The smallest I/O of the run (random offsets are its multiples without
    /// `--block-align`).
    pub fn min_io_size(&self) -> u64 {
        (0..3).map(|d| self.dir_sizes(d).0).min().unwrap_or(1)
    }

    /// The mean size of the run's I/Os (each direction's mean weighted by the mix of
    /// directions).
    pub fn mean_io_size(&self) -> f64 {
        let mean = |d| self.dir_sizes(d).2;
        match self.access {
            Access::Trim | Access::RandTrim => mean(2),
            Access::TrimWrite => (mean(2) + mean(1)) / 2.0,
            a => {
                let r = a.read_pct(self.read_pct) as f64 / 100.0;
                r * mean(0) + (1.0 - r) * mean(1)
            }
        }
    }

    /// Whether the run issues reads, writes and trims.
    pub fn mix_directions(&self) -> (bool, bool, bool) {
        match self.access {
            Access::Trim | Access::RandTrim => (false, false, true),
            Access::TrimWrite => (false, true, true),
            a => {
                let pct = a.read_pct(self.read_pct);
                (pct > 0, pct < 100, false)
            }
        }
    }

    /// Total users x threads.
    pub fn total_threads(&self) -> u64 {
        self.targets.len() as u64 * self.threads as u64
    }

    /// I/Os in flight per thread that can actually happen: the queue depth, but never more
    /// than the I/Os a thread issues in an untimed run (buffers are sized by this).
    pub fn effective_depth(&self) -> u32 {
        let qd = self.queue_depth.max(1);
        if self.time_s.is_some() {
            return qd;
        }
        let per_thread = match (self.io_count, self.needed_file_size()) {
            (Some(n), _) => n,
            (None, Some(size)) => {
                (size / self.min_io_size().max(1) / self.threads.max(1) as u64).max(1)
            }
            (None, None) => return qd,
        };
        per_thread
            .saturating_mul(self.repeats.max(1) as u64)
            .min(qd as u64)
            .max(1) as u32
    }

    /// Region of the file each thread covers sequentially, and the file size the job needs.
    /// Random access draws offsets over the whole file; sequential threads each own a slice.
    pub fn needed_file_size(&self) -> Option<u64> {
        if let Some(s) = self.file_size {
            return Some(s);
        }
        if self.access.is_random() {
            if let Some(t) = self.space.truncup {
                return Some(t);
            }
        }
        self.io_count.map(|n| {
            n.saturating_mul(self.io_size())
                .saturating_mul(self.threads as u64)
        })
    }

    /// Check everything that can be checked without touching a target.
    pub fn validate(&self) -> Result<(), UsageError> {
        if self.targets.is_empty() {
            return Err(usage!(
                "no target given: name at least one file or block device"
            ));
        }
        self.check_ranges()?;
        self.check_targets()?;
        self.check_sizes()?;
        self.check_engine()?;
        self.check_space()?;
        self.check_verify()?;
        self.check_rate_shape()?;
        self.check_offsets_and_data()?;
        self.check_split_and_trim()?;
        self.check_null()?;
        self.check_space_engine()?;
        self.check_bounds()
    }

    /// At most one of `--bssplit`, `--bsrange` and a per-direction `--bs`, each well formed
    /// (a TOML job file reaches here without the setters' checks).
    fn check_size_options(&self) -> Result<(), UsageError> {
        let given: Vec<&str> = [
            (self.bssplit.is_some(), "--bssplit"),
            (self.bsrange.is_some(), "--bsrange"),
            (self.block_sizes.is_some(), "a per-direction --bs"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if given.len() > 1 {
            return Err(usage!(
                "{} and {} both choose the I/O sizes: give one of them",
                given[0],
                given[1]
            ));
        }
        if let Some(r) = &self.bsrange {
            r.check(self.block_align, "--bsrange")?;
        }
        Ok(())
    }

    /// `--skip` leaves holes between sequential I/Os: it needs sequential access, and
    /// neither --verify (which checks every block of the file) nor --append.
    fn check_skip(&self) -> Result<(), UsageError> {
        let Some(skip) = self.skip else {
            return Ok(());
        };
        if skip > MAX_SKIP {
            return Err(usage!("bad --skip {skip}: at most 1t"));
        }
        if self.access.is_random() {
            return Err(usage!(
                "--skip {skip} leaves holes between sequential I/Os, and --rw {} is random: use a sequential --rw",
                self.access.name()
            ));
        }
        if self.verifying() || self.open.append {
            return Err(usage!(
                "--skip leaves holes between the I/Os, and --verify and --append cover every block: drop one of them"
            ));
        }
        Ok(())
    }

    /// `--bssplit`, `--block-align` and the trim patterns against what cannot follow them.
    fn check_split_and_trim(&self) -> Result<(), UsageError> {
        if let Some(a) = self.block_align {
            if a == 0 || a > MAX_BLOCK_SIZE {
                return Err(usage!(
                    "bad --block-align {a}: must be between 1 byte and 256m"
                ));
            }
        }
        self.check_size_options()?;
        self.check_skip()?;
        let mixed = self.mixed_sizes() || self.block_align.is_some();
        if mixed && self.verifying() {
            return Err(usage!(
                "--verify checks blocks of one size at offsets that are its multiples: drop --bssplit, --bsrange, a per-direction --bs and --block-align to use it"
            ));
        }
        if self.mixed_sizes() && self.dedupe.is_some() {
            return Err(usage!(
                "--dedupe repeats whole blocks of one size, and --bssplit, --bsrange and a per-direction --bs vary sizes: drop one of them"
            ));
        }
        if mixed && self.open.append {
            return Err(usage!(
                "--bssplit, --bsrange, a per-direction --bs and --block-align choose offsets, and --append writes at the end of the file: drop one of them"
            ));
        }
        if self.access.trims() {
            if self.verifying() {
                return Err(usage!(
                    "--rw {} discards blocks, so --verify would find them gone: drop --verify",
                    self.access.name()
                ));
            }
            if self.open.append {
                return Err(usage!(
                    "--rw {} trims at chosen offsets, and --append writes at the end of the file: drop --append",
                    self.access.name()
                ));
            }
            if self.shapes_data() && self.access != Access::TrimWrite {
                return Err(usage!(
                    "--buffer-pattern, --buffer-compress and --dedupe shape the bytes written, and a {} run writes nothing: use trimwrite or a write --rw",
                    self.access.name()
                ));
            }
            if self.hipri {
                return Err(usage!(
                    "--rw {} trims with fallocate, which a polled (--hipri) ring cannot complete: drop --hipri",
                    self.access.name()
                ));
            }
            if self.access == Access::TrimWrite && self.queue_depth > 1 {
                return Err(usage!(
                    "--rw trimwrite writes each block after its trim has completed, one at a time: drop --qd {}",
                    self.queue_depth
                ));
            }
        }
        Ok(())
    }

    /// Whether the run shapes the bytes it writes (`--buffer-pattern`, `--buffer-compress`,
    /// `--dedupe`).
    pub fn shapes_data(&self) -> bool {
        self.buffer_pattern.is_some() || self.buffer_compress.is_some() || self.dedupe.is_some()
    }

    /// Distribution and data options that fit the access and each other.
    fn check_offsets_and_data(&self) -> Result<(), UsageError> {
        let random = self.access.is_random();
        if !self.distribution.is_uniform() && !random {
            return Err(usage!(
                "--distribution {} draws random offsets, and --rw {} is sequential: use randread, randwrite or randrw",
                self.distribution.spec(),
                self.access.name()
            ));
        }
        if self.random_map && !random {
            return Err(usage!(
                "--random-map orders random offsets, and --rw {} is sequential: use randread, randwrite or randrw",
                self.access.name()
            ));
        }
        if let Some(n) = self.random_run {
            if !random {
                return Err(usage!(
                    "--random-run {n} draws a random offset every {n} I/Os, and --rw {} is sequential: use randread, randwrite or randrw",
                    self.access.name()
                ));
            }
            if self.random_map {
                return Err(usage!(
                    "--random-run {n} follows each random offset with sequential I/Os, which --random-map would not count: drop one of them"
                ));
            }
            if self.verifying() {
                return Err(usage!(
                    "--random-run writes runs over blocks --verify expects once: drop one of them"
                ));
            }
        }
        if self.random_slices && !random {
            return Err(usage!(
                "--random-slices gives each thread its own slice for random offsets, and --rw {} is sequential (its threads each cover their own slice already): use randread, randwrite or randrw",
                self.access.name()
            ));
        }
        if self.run_same_offset && self.random_run.is_none() {
            return Err(usage!(
                "--run-same-offset repeats each random offset for the I/Os of a run: give --random-run N (N above 1)"
            ));
        }
        if self.random_map && !self.distribution.is_uniform() {
            return Err(usage!(
                "--random-map touches every block once per pass, which makes any distribution uniform: drop --random-map or --distribution {}",
                self.distribution.spec()
            ));
        }
        for (what, v) in [
            ("--buffer-compress", self.buffer_compress),
            ("--dedupe", self.dedupe),
        ] {
            if v.is_some_and(|p| p > 100) {
                return Err(usage!("bad {what} {}: must be 0 to 100", v.unwrap_or(0)));
            }
        }
        self.check_dedupe_mode()?;
        if !self.shapes_data() {
            return Ok(());
        }
        if self.access.read_pct(self.read_pct) == 100 {
            return Err(usage!(
                "--buffer-pattern, --buffer-compress and --dedupe shape the bytes written, and a {} run writes nothing: use a write or mixed --rw",
                self.access.name()
            ));
        }
        if self.engine == EngineKind::Null {
            return Err(usage!(
                "--engine null writes nothing, so --buffer-pattern, --buffer-compress and --dedupe have no data to shape"
            ));
        }
        if self.dedupe.is_some_and(|p| p > 0)
            && self.buffer_compress.is_none()
            && matches!(
                self.buffer_pattern,
                Some(BufferPattern::Zero | BufferPattern::Bytes(_))
            )
        {
            return Err(usage!(
                "--dedupe needs blocks that differ, and --buffer-pattern {} makes every block the same: use --buffer-pattern random or add --buffer-compress",
                self.buffer_pattern.as_ref().map(|p| p.spec()).unwrap_or_default()
            ));
        }
        Ok(())
    }

    /// `--dedupe-mode` and `--dedupe-working-set`: with `--dedupe`, and a working set that
    /// leaves room for the unique blocks.
    fn check_dedupe_mode(&self) -> Result<(), UsageError> {
        if let Some(w) = self.dedupe_working_set {
            if !(1..=100).contains(&w) {
                return Err(usage!("bad --dedupe-working-set {w}: must be 1 to 100"));
            }
            if self.dedupe_mode != Some(DedupeMode::WorkingSet) {
                return Err(usage!(
                    "--dedupe-working-set {w} sizes the working set of --dedupe-mode working-set: add --dedupe-mode working-set"
                ));
            }
        }
        let Some(mode) = self.dedupe_mode else {
            return Ok(());
        };
        let Some(pct) = self.dedupe else {
            return Err(usage!(
                "--dedupe-mode {} says where --dedupe's repeated blocks come from: add --dedupe PCT",
                mode.name()
            ));
        };
        let ws = self.working_set_pct();
        if mode == DedupeMode::WorkingSet && pct > 0 && pct as u16 + ws as u16 > 100 {
            return Err(usage!(
                "--dedupe {pct} with a working set of {ws} %: the working set's first copies are unique blocks too, so the two may add up to at most 100"
            ));
        }
        Ok(())
    }

    /// The working set's share of the file's blocks (`--dedupe-working-set`, 5 when not given).
    pub fn working_set_pct(&self) -> u8 {
        self.dedupe_working_set
            .unwrap_or(shape::DEFAULT_WORKING_SET_PCT)
    }

    /// The falloc and ftruncate engines move no bytes: nothing to verify or shape, and
    /// ftruncate has no meaning for reads or trims (fio fails them).
    fn check_space_engine(&self) -> Result<(), UsageError> {
        if !self.engine.changes_space() {
            return Ok(());
        }
        let name = self.engine.name();
        if self.verifying() || self.shapes_data() {
            return Err(usage!(
                "--engine {name} moves no data: --verify, --buffer-pattern, --buffer-compress and --dedupe have nothing to act on"
            ));
        }
        if self.engine == EngineKind::Ftruncate
            && !matches!(self.access, Access::Write | Access::RandWrite)
        {
            return Err(usage!(
                "--engine ftruncate truncates on writes only: use --rw write or randwrite (got {})",
                self.access.name()
            ));
        }
        Ok(())
    }

    /// The null engine opens nothing: options that act on the target are refused, and the
    /// size the offsets are drawn over must be given.
    fn check_null(&self) -> Result<(), UsageError> {
        if self.engine != EngineKind::Null {
            return Ok(());
        }
        if self.verifying() {
            return Err(usage!(
                "--engine null stores nothing, so --verify has nothing to read back: use a real engine"
            ));
        }
        let s = &self.space;
        if s.extsize.is_some()
            || s.reservation.is_some()
            || s.truncup.is_some()
            || s.reserve_only
            || self.open.trunc
        {
            return Err(usage!(
                "--engine null never opens the target: --extsize, --reserve, truncup, reserveonly and --trunc have no file to act on"
            ));
        }
        if self.needed_file_size().is_none() {
            return Err(usage!(
                "--engine null never opens the target, so it cannot take the size from the file: give --size or --count"
            ));
        }
        Ok(())
    }

    /// Whether the run writes verification blocks and checks them.
    pub fn verifying(&self) -> bool {
        self.verify || self.verify_backlog.is_some() || self.journal.is_some()
    }

    /// `--rate-process poisson` spaces the I/Os of a rate: it needs one. `--rate-cycle`
    /// judges a minimum: it needs one. (A TOML job file reaches here without the setters.)
    fn check_rate_shape(&self) -> Result<(), UsageError> {
        if self.rate.process == RateProcess::Poisson && !self.rate.is_on() {
            return Err(usage!(
                "--rate-process poisson spaces the I/Os of a rate: add --rate-iops or --rate-bytes"
            ));
        }
        if self.rate.min_bytes_per_sec == Some(0) || self.rate.min_iops == Some(0) {
            return Err(usage!(
                "bad --rate-min/--rate-iops-min 0: must be above zero"
            ));
        }
        if self.rate.cycle_ms.is_some_and(|c| c == 0) {
            return Err(usage!("bad --rate-cycle 0: must be at least 1ms"));
        }
        for (min, flag, measure) in [
            (
                self.rate.min_bytes_per_sec,
                "--rate-min",
                RateMeasure::Bytes,
            ),
            (self.rate.min_iops, "--rate-iops-min", RateMeasure::Iops),
        ] {
            let Some(min) = min else { continue };
            let cap = (0..3).filter_map(|d| self.rate.of(d).get(measure)).min();
            if let Some(cap) = cap.filter(|&c| min > c) {
                return Err(usage!(
                    "{flag} {min} is above the rate limit of {cap}: no cycle could keep it"
                ));
            }
        }
        if self.rate.cycle_ms.is_some() && !self.rate.has_min() {
            return Err(usage!(
                "--rate-cycle is the period a minimum rate is judged over: add --rate-min or --rate-iops-min"
            ));
        }
        Ok(())
    }

    /// `--fsync-every` / `--fdatasync-every`: at least 1 write, one of them, on a job that
    /// writes through an engine whose writes a sync of the files makes durable.
    fn check_sync_every(&self) -> Result<(), UsageError> {
        let (flag, n) = match (self.fsync_every, self.fdatasync_every) {
            (None, None) => return Ok(()),
            (Some(_), Some(_)) => {
                return Err(usage!(
                    "--fsync-every and --fdatasync-every both sync the files: give one of them"
                ))
            }
            (Some(n), None) => ("--fsync-every", n),
            (None, Some(n)) => ("--fdatasync-every", n),
        };
        if n == 0 {
            return Err(usage!("bad {flag} 0: must be at least 1 write"));
        }
        if self.fdatasync_every.is_some() && self.verifying() {
            return Err(usage!(
                "--verify acknowledges writes with --fsync-every: use it instead of --fdatasync-every"
            ));
        }
        if self.access.read_pct(self.read_pct) == 100 {
            return Err(usage!(
                "{flag} syncs written data, and --rw {} writes nothing: use a --rw that writes",
                self.access.name()
            ));
        }
        match self.engine {
            EngineKind::Sync | EngineKind::Uring => Ok(()),
            e => Err(usage!(
                "{flag} syncs the files between writes, and --engine {} {}: use --engine sync or uring",
                e.name(),
                match e {
                    EngineKind::Mmap => "writes through a mapping that --fsync makes durable at the end",
                    EngineKind::Null => "writes nothing to sync",
                    _ => "changes only the files' allocation or size",
                }
            )),
        }
    }

    /// Verification needs blocks that carry a header, and offsets fsbench chooses.
    fn check_verify(&self) -> Result<(), UsageError> {
        if self.verify_backlog == Some(0) {
            return Err(usage!("bad --verify-backlog 0: must be at least 1 write"));
        }
        self.check_sync_every()?;
        if self
            .journal
            .as_ref()
            .is_some_and(|j| j.as_os_str().is_empty())
        {
            return Err(usage!("empty --journal name: name a new file"));
        }
        if !self.verifying() {
            return Ok(());
        }
        let bs = usize::try_from(self.block_size).unwrap_or(usize::MAX);
        check_verify_block_size(bs)?;
        if self.open.append {
            return Err(usage!(
                "--verify checks each block at the offset fsbench wrote it; --append lets the file system choose offsets: drop one of them"
            ));
        }
        if self.access.read_pct(self.read_pct) == 100 && self.journal.is_some() {
            return Err(usage!(
                "--journal records writes, and a {} run writes nothing: use a write or mixed --rw",
                self.access.name()
            ));
        }
        Ok(())
    }

    /// No target name empty or looking like an option.
    fn check_targets(&self) -> Result<(), UsageError> {
        for t in &self.targets {
            if t.as_os_str().is_empty() {
                return Err(usage!("empty target name: name a file or block device"));
            }
            if t.as_os_str().as_encoded_bytes().first() == Some(&b'-') {
                return Err(usage!(
                    "target '{}' starts with '-' and looks like an option: write ./{} (or put it after --)",
                    t.display(),
                    t.display()
                ));
            }
        }
        Ok(())
    }

    /// Numbers within their ranges (a TOML job file reaches here without the setters' checks).
    fn check_ranges(&self) -> Result<(), UsageError> {
        if self.block_size == 0 || self.block_size > MAX_BLOCK_SIZE {
            return Err(usage!(
                "bad I/O size {}: must be between 1 byte and 256m",
                self.block_size
            ));
        }
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(usage!(
                "bad thread count {}: must be 1 to {MAX_THREADS}",
                self.threads
            ));
        }
        if self.read_pct > 100 {
            return Err(usage!(
                "bad read percentage {}: must be 0 to 100",
                self.read_pct
            ));
        }
        if self.repeats == 0 {
            return Err(usage!("bad repeat count 0: must be at least 1"));
        }
        if self.queue_depth == 0 || self.queue_depth > 4096 {
            return Err(usage!(
                "bad queue depth {}: must be 1 to 4096",
                self.queue_depth
            ));
        }
        if let Some(t) = self.time_s {
            if !(t > 0.0 && t <= MAX_TIME_S) {
                return Err(usage!(
                    "bad run time {t}: must be more than 0 seconds and at most one year ({MAX_TIME_S} s)"
                ));
            }
        }
        if let Some(r) = self.ramp_s {
            if !(0.0..=MAX_TIME_S).contains(&r) {
                return Err(usage!(
                    "bad warm-up time {r}: must be 0 seconds or more and at most one year ({MAX_TIME_S} s)"
                ));
            }
        }
        if self.io_count == Some(0) {
            return Err(usage!("bad I/O count 0: must be at least 1"));
        }
        self.check_ramp_bytes()?;
        self.check_steady()
    }

    /// `--ramp-bytes`: one warm-up only, and one that leaves something to measure.
    fn check_ramp_bytes(&self) -> Result<(), UsageError> {
        let Some(b) = self.ramp_bytes.filter(|b| *b > 0) else {
            return Ok(());
        };
        if self.ramp_s.is_some_and(|r| r > 0.0) {
            return Err(two_warm_ups(b));
        }
        if self.steady_state.is_some() {
            return Err(usage!(
                "--ramp-bytes {b} with --steady-state: the watch starts after a timed warm-up, use --ramp DUR"
            ));
        }
        // A run bounded by its count: the warm-up must end before the thread's last I/O.
        if let (Some(n), None) = (self.io_count, self.time_s) {
            let total = n
                .saturating_mul(self.repeats.max(1) as u64)
                .saturating_mul(self.min_io_size());
            if b >= total {
                return Err(usage!(
                    "--ramp-bytes {b} covers all of each thread's I/O ({n} I/Os of at least {} bytes{}): nothing would be measured; give less than {total} bytes",
                    self.min_io_size(),
                    if self.repeats > 1 { format!(", {} times", self.repeats) } else { String::new() }
                ));
            }
        }
        Ok(())
    }

    /// `--steady-state` needs a longest time, and the observer's stop reaches worker
    /// threads only.
    fn check_steady(&self) -> Result<(), UsageError> {
        if let Some(m) = self.steady_state_max_s {
            if self.steady_state.is_none() {
                return Err(usage!(
                    "--steady-state-max {m}s without --steady-state: give both, or neither"
                ));
            }
            if !(m > 0.0 && m <= MAX_TIME_S) {
                return Err(usage!(
                    "bad --steady-state-max {m}: must be more than 0 seconds and at most one year ({MAX_TIME_S} s)"
                ));
            }
        }
        let Some(s) = &self.steady_state else {
            return Ok(());
        };
        if self.steady_state_max_s.is_none() && self.time_s.is_none() {
            return Err(usage!(
                "--steady-state {} needs a longest run time: add --steady-state-max DUR or --time DUR",
                s.spec()
            ));
        }
        if self.workers != WorkerMode::Threads {
            return Err(usage!(
                "--steady-state watches worker threads: drop --processes to use it"
            ));
        }
        if self.repeats > 1 {
            return Err(usage!(
                "--steady-state ends one timed loop: drop --nrep {} to use it",
                self.repeats
            ));
        }
        Ok(())
    }

    /// The run's time limit: `--steady-state-max` for a steady-state run, else `--time`.
    pub fn time_limit_s(&self) -> Option<f64> {
        match self.steady_state {
            Some(_) => self.steady_state_max_s.or(self.time_s),
            None => self.time_s,
        }
    }

    /// Sizes that fit a file: every offset within pread/pwrite's reach.
    fn check_sizes(&self) -> Result<(), UsageError> {
        // Every offset must fit pread/pwrite's signed 64-bit offset, and sizes must not wrap.
        const MAX_OFFSET: u64 = i64::MAX as u64;
        if let (Some(n), None) = (self.io_count, self.file_size) {
            // Without a file size the file is sized by count x block size x threads.
            let total = n
                .checked_mul(self.io_size())
                .and_then(|b| b.checked_mul(self.threads as u64));
            if total.is_none_or(|b| b > MAX_OFFSET) {
                return Err(usage!(
                    "bad I/O count {n}: {n} I/Os of {} bytes on {} thread(s) do not fit a file (at most 2^63 bytes); give a smaller count or a file size",
                    self.io_size(),
                    self.threads
                ));
            }
        }
        for (what, v) in [
            ("file size", self.file_size),
            ("reservation", self.space.reservation),
            ("truncup size", self.space.truncup),
            ("extent size", self.space.extsize),
        ] {
            match v {
                Some(0) => {
                    return Err(usage!(
                        "bad {what} 0: must be at least 1 byte (leave it out for none)"
                    ))
                }
                Some(b) if b > MAX_OFFSET => {
                    return Err(usage!(
                        "bad {what} {b}: must be at most 2^63-1 bytes (8 EiB)"
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Engine options that need a particular engine or cache policy.
    fn check_engine(&self) -> Result<(), UsageError> {
        if self.queue_depth > 1 && !matches!(self.engine, EngineKind::Uring | EngineKind::Null) {
            return Err(usage!(
                "queue depth {} needs --engine uring (or null): the {} engine issues one I/O at a time per thread",
                self.queue_depth,
                self.engine.name()
            ));
        }
        if (0..3).any(|d| {
            let r = self.rate.of(d);
            r.iops == Some(0) || r.bytes_per_sec == Some(0)
        }) {
            return Err(usage!(
                "bad rate limit 0: give a positive --rate-iops or --rate-bytes, or leave it out"
            ));
        }
        if self.rate.directions.is_some() {
            if self.access == Access::TrimWrite {
                return Err(usage!(
                    "per-direction rates do not apply to trimwrite: each trim is followed by its write; give one rate"
                ));
            }
            if self.verify {
                return Err(usage!(
                    "per-direction rates do not apply with --verify: the verifying loop draws each I/O one ahead, before its direction's turn; give one rate"
                ));
            }
        }
        if (self.sqpoll || self.hipri) && self.engine != EngineKind::Uring {
            return Err(usage!("--sqpoll and --hipri need --engine uring"));
        }
        if self.engine == EngineKind::Mmap && self.cache.uses_direct() {
            return Err(usage!(
                "the mmap engine goes through the page cache: use cache policy buffered (got {})",
                self.cache.name()
            ));
        }
        Ok(())
    }

    /// Open flags and space flags that contradict each other or lack what they describe.
    fn check_space(&self) -> Result<(), UsageError> {
        if self.open.append && self.access.is_random() {
            return Err(usage!(
                "-o append makes every write land at the end of the file: use a sequential write workload"
            ));
        }
        if self.open.append && self.space.flags.noextend {
            return Err(usage!(
                "-o append and -f noextend contradict each other: appends extend the file"
            ));
        }
        if self.engine == EngineKind::Mmap && self.open.append {
            return Err(usage!(
                "the mmap engine cannot append: mappings have a fixed size"
            ));
        }
        let f = &self.space.flags;
        if (f.chgsiz || f.contig || f.noreserve || f.trim) && self.space.reservation.is_none() {
            return Err(usage!(
                "-f chgsiz, contig, noreserve and trim describe a reservation: give one with -r SIZE"
            ));
        }
        if f.align && self.space.extsize.is_none() {
            return Err(usage!(
                "-f align requires a fixed extent size: give one with -e SIZE"
            ));
        }
        if f.noextend && self.space.reservation.is_none() && self.needed_file_size().is_none() {
            return Err(usage!(
                "-f noextend needs a reservation (-r) or a file size"
            ));
        }
        Ok(())
    }

    /// Something ends the run, and the file holds at least one I/O.
    fn check_bounds(&self) -> Result<(), UsageError> {
        if self.time_s.is_none() && self.io_count.is_none() && self.file_size.is_none() {
            return Err(usage!(
                "nothing bounds the run: give an I/O count, a file size or a run time"
            ));
        }
        if let Some(size) = self.needed_file_size() {
            if size < self.io_size() && !self.space.reserve_only {
                return Err(usage!(
                    "file size {} is smaller than one I/O of {} bytes",
                    size,
                    self.io_size()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Job {
            targets: vec!["f".into()],
            io_count: Some(10),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_validate() {
        job().validate().unwrap();
        assert_eq!(job().needed_file_size(), Some(10 * 8192));
    }

    #[test]
    fn rejects_nonsense() {
        let mut j = job();
        j.queue_depth = 8;
        assert!(j.validate().unwrap_err().0.contains("uring"));
        let mut j = job();
        j.targets.clear();
        assert!(j.validate().is_err());
        let mut j = job();
        j.space.flags.contig = true;
        assert!(j.validate().unwrap_err().0.contains("-r"));
        let mut j = job();
        j.io_count = None;
        assert!(j.validate().is_err());
    }

    #[test]
    fn toml_roundtrip_and_errors() {
        let j = Job {
            cache: CachePolicy::Discovered { threshold: 65536 },
            ..job()
        };
        let text = toml::to_string(&j).unwrap();
        assert_eq!(Job::from_toml(&text, "x.toml").unwrap(), j);
        let err = Job::from_toml("targets = [\"a\"]\nblok_size = 4\n", "x.toml").unwrap_err();
        assert!(err.0.starts_with("x.toml:2:"), "{}", err.0);
    }

    #[test]
    fn rates_per_direction_read_and_show_back() {
        let parse = |v: &str| PerDirection::parse(v, "x", |f| f.parse().map_err(|_| usage!("bad")));
        assert_eq!(parse("5").unwrap(), PerDirection::All(5));
        assert_eq!(
            parse("5,7").unwrap(),
            PerDirection::Each([Some(5), Some(7), Some(7)])
        );
        assert_eq!(
            parse(",7,").unwrap(),
            PerDirection::Each([None, Some(7), None])
        );
        for bad in [",", "1,2,3,4", "x,1"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let mut r = RateLimit::default();
        r.set(RateMeasure::Iops, PerDirection::All(100));
        assert_eq!(
            (r.show(RateMeasure::Iops), r.directions),
            ("100".into(), None)
        );
        // Bytes per direction: each direction keeps the I/O limit set for all.
        r.set(RateMeasure::Bytes, parse("10,,3").unwrap());
        assert_eq!(r.show(RateMeasure::Bytes), "10,,3");
        assert_eq!(r.show(RateMeasure::Iops), "100,100,100");
        assert_eq!(
            r.of(1),
            DirRate {
                iops: Some(100),
                bytes_per_sec: None
            }
        );
        // One value afterwards holds for every direction.
        r.set(RateMeasure::Bytes, PerDirection::All(8));
        assert!((0..3).all(|d| r.of(d).bytes_per_sec == Some(8)));
    }
}
