//! `explain`: what could make a run's number mislead, checked after every run and said with
//! its evidence. No peer does this; a storage engineer does it by hand (was the file cached?
//! was it sparse? was the host the limit?), and forgets some of it some of the time.
//!
//! Every check reads what a Result holds (the Job, the cache policy used, the totals and the
//! probes the runner stored, such as `page_cache`), handed over as `RunFacts` by the
//! Result itself, so a stored Result can be explained again later and this module needs
//! nothing of the Result's shape.

mod device;
mod host;
mod stability;

use crate::job::CachePolicy;
use crate::job::Job;
use crate::probe::cache::FileCache;
use crate::stats::StatsReport;
use crate::stats::{inflight_bucket, INFLIGHT_BUCKETS};
use serde_json::json;

pub use crate::result::Explanation;
use crate::result::{Kind, RunResult, RunStatus};

/// What the checks read of a run's Result.
pub(crate) struct RunFacts<'a> {
    pub total: &'a StatsReport,
    pub job: Option<&'a Job>,
    /// The cache policy the run used (its plan's).
    pub cache: Option<CachePolicy>,
    pub probes: &'a serde_json::Map<String, serde_json::Value>,
    /// Worker threads of the run.
    pub threads: usize,
    /// Bytes of the data set a run without a `page_cache` probe touched (a workload's
    /// filesets, a replay's scratch files), with what it is called.
    pub data_set: Option<(u64, &'static str)>,
    /// The host's memory (the Result's environment), for runs without a `page_cache` probe.
    pub mem_total_bytes: Option<u64>,
    /// vm.dirty_expire_centisecs as seconds, for runs without a `page_cache` probe.
    pub dirty_expire_s: Option<f64>,
    /// The run's `--status-interval` time series (empty without the flag).
    pub timeseries: &'a [crate::result::IntervalReport],
    /// The CPUs the run's threads could use (the Result's environment).
    pub cpus: Cpus,
    /// What else the host did over the run's window (the Result's `host` section).
    pub host: Option<&'a crate::probe::host::HostReport>,
    /// How steady the run's per-interval IOPS and bandwidth were (the Result's `stability`).
    pub stability: Option<&'a crate::result::StabilityReport>,
}

/// The CPUs a run could use, as its Result recorded them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cpus {
    /// CPUs each process (each rank) may run on: its affinity and quota.
    pub allowed: usize,
    /// CPUs online on the host, when recorded.
    pub online: Option<usize>,
    /// Processes that each had `allowed` CPUs: the ranks of a distributed run, else 1.
    pub sets: usize,
    /// Hosts the run ran on.
    pub hosts: usize,
}

impl Default for Cpus {
    /// One process on one CPU: what a Result that recorded nothing is judged against.
    fn default() -> Self {
        Cpus {
            allowed: 1,
            online: None,
            sets: 1,
            hosts: 1,
        }
    }
}

fn finding(check: &str, message: String, evidence: serde_json::Value) -> Explanation {
    Explanation {
        check: check.into(),
        message,
        evidence,
    }
}

/// The targets' page-cache and allocation facts before and after the run (probe
/// `page_cache`), with the memory size.
struct CacheFacts {
    targets: Vec<(String, FileCache, FileCache)>,
    mem_total_bytes: Option<u64>,
    dirty_expire_s: Option<f64>,
}

fn cache_facts(r: &RunFacts) -> Option<CacheFacts> {
    let p = r.probes.get("page_cache")?;
    let targets = p["targets"]
        .as_array()?
        .iter()
        .filter_map(|t| {
            Some((
                t["path"].as_str()?.to_string(),
                serde_json::from_value(t["before"].clone()).ok()?,
                serde_json::from_value(t["after"].clone()).ok()?,
            ))
        })
        .collect();
    Some(CacheFacts {
        targets,
        mem_total_bytes: p["mem_total_bytes"].as_u64(),
        dirty_expire_s: p["dirty_expire_s"].as_f64(),
    })
}

fn mib(b: u64) -> String {
    crate::units::format_bytes(b as f64)
}

/// Whether the run's I/O went through the page cache (all or most of it).
fn buffered(r: &RunFacts) -> bool {
    let Some(cache) = r.cache else {
        // A workload has no policy of its own: its flowops go direct only when asked to.
        return r.job.is_none() && r.data_set.is_some() && r.total.direct_ops * 2 < r.total.ops;
    };
    match cache {
        CachePolicy::Buffered | CachePolicy::Dsync => true,
        CachePolicy::Discovered { .. } => r.total.direct_ops * 2 < r.total.ops.max(1),
        _ => r.total.buffered_fallback_ops * 2 > r.total.ops,
    }
}

/// Above this (max - min) / mean over repetitions of a point, the repetitions disagree.
pub const SPREAD_LIMIT: f64 = 0.10;

/// Repetitions of one point (`--repeat`) that disagree by more than [`SPREAD_LIMIT`]: one
/// number of them, or their mean, is not to be trusted alone. `values` are the repetitions'
/// `what` (e.g. bytes_per_sec), in run order.
pub(crate) fn spread(values: &[f64], what: &str) -> Option<Explanation> {
    if values.len() < 2 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let min = values.iter().cloned().fold(f64::MAX, f64::min);
    let max = values.iter().cloned().fold(f64::MIN, f64::max);
    if mean <= 0.0 {
        return None;
    }
    let spread = (max - min) / mean;
    (spread > SPREAD_LIMIT).then(|| {
        finding(
            "spread",
            format!(
                "the {} repetitions of this point disagree by {:.1}% ({what} from {} to {}, (max - min) / mean above {:.0}%): the system was not in a steady state (cache, write-back, background work); run longer with --time, or look at each repetition",
                values.len(),
                spread * 100.0,
                fmt_value(min),
                fmt_value(max),
                SPREAD_LIMIT * 100.0
            ),
            json!({"metric": what, "values": values, "mean": mean, "min": min, "max": max,
                   "spread_pct": spread * 100.0, "limit_pct": SPREAD_LIMIT * 100.0}),
        )
    })
}

fn fmt_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// What a check says in a few words, and what to do about it naming options `run` (and
/// `sweep`, `suite`) accept: the legend under a table of many points, where each point's own
/// message would repeat.
pub fn legend(check: &str) -> (&'static str, &'static str) {
    match check {
        "too_short" => (
            "too short to trust (under 1 s or under 100 I/Os)",
            "run longer with --time or a larger --size",
        ),
        "page_cache" => (
            "buffered reads served by the page cache (the figure is the cache's, not the storage's)",
            "use --cache direct, --drop-cache, or a --size larger than memory",
        ),
        "sparse_reads" => (
            "reads of a sparse file: its holes read as zeros without device I/O",
            "lay the file out first with a --rw write run and --keep",
        ),
        "host_bound" => (
            "fsbench's CPU was the limit, not the storage",
            "use a larger --bs or an --engine with less CPU per I/O",
        ),
        "cpu_binding" => (
            "more worker threads than the CPUs the process could run on",
            "use fewer --threads, or free the CPU affinity (mpirun --bind-to none)",
        ),
        "device_idle" => (
            "the devices were mostly idle (the limit was on the host's side)",
            "raise --qd or --threads, or remove --rate-iops / --rate-bytes",
        ),
        "queue_depth" => (
            "the queue depth asked for was seldom reached",
            "check --engine and --rate-iops, or run longer with --time",
        ),
        "dirty_at_stop" => (
            "buffered writes may have been in memory when the clock stopped",
            "add --fsync or run longer with --time",
        ),
        "direct_fallback" => (
            "misaligned direct I/Os went through the page cache",
            "use a --bs that is a multiple of the device's logical block size",
        ),
        "discovered_never_direct" => (
            "discovered direct I/O never went direct (every I/O at or below the threshold)",
            "use --cache direct or a larger --bs",
        ),
        "unstable" => (
            "IOPS or bandwidth varied 10 % or more between intervals, or drifted 10 % over the run",
            "give the run a longer --ramp or --time, pin it with --cpus, run it again",
        ),
        "spread" => (
            "repetitions disagree by more than 10 % ((max - min) / mean), not a steady state",
            "run longer with --time, or look at each repetition",
        ),
        _ => ("", ""),
    }
}

/// Every check, in the order they are printed.
pub(crate) fn explain(r: &RunFacts) -> Vec<Explanation> {
    let mut out = Vec::new();
    if r.total.ops == 0 {
        return out;
    }
    // A null-engine run touched no file and no device: nothing about storage to doubt.
    if r.job
        .is_some_and(|j| j.engine == crate::job::EngineKind::Null)
    {
        return out;
    }
    // A falloc or ftruncate run moved no data: the page cache, sparse reads and write-back
    // have nothing to say about it.
    let moves_data = !r.job.is_some_and(|j| j.engine.changes_space());
    data_shape(r, &mut out);
    let facts = cache_facts(r).filter(|_| moves_data);
    if let Some(f) = &facts {
        page_cache(r, f, &mut out);
        sparse_reads(r, f, &mut out);
    }
    if facts.is_none() && moves_data {
        data_set_cached(r, &mut out);
    }
    host_bound(r, &mut out);
    cpu_binding(r, &mut out);
    device::device_idle(r, &mut out);
    queue_depth(r, &mut out);
    if moves_data {
        dirty_at_stop(r, facts.as_ref().and_then(|f| f.dirty_expire_s), &mut out);
        direct(r, &mut out);
    }
    host::host(r, &mut out);
    stability::stability(r, &mut out);
    // Last: it qualifies every figure, the others name a cause.
    too_short(r, &mut out);
    out
}

/// Points between the compressibility or duplication asked for and the one measured in the
/// written file (probe `data`) beyond which the run did not deliver what it was asked.
const DATA_SHAPE_TOLERANCE_PCT: f64 = 5.0;

/// `--buffer-compress` / `--dedupe` asked one share and the file holds another.
fn data_shape(r: &RunFacts, out: &mut Vec<Explanation>) {
    let Some(p) = r.probes.get("data") else {
        return;
    };
    // With --verify each block starts with its header: compression is judged against what
    // the rest of the block can deliver, duplicates over the bytes after the header (the
    // header makes every whole block unique).
    let header = p["asked"]["verify_header_bytes"].as_u64();
    let deliverable = p["asked"]["deliverable_compress_saved_pct"].as_f64();
    for (key, measured_key, what) in [
        ("compress_saved_pct", "compress_saved_pct", "compressible"),
        (
            "dedupe_pct",
            if header.is_some() {
                "dedupe_after_header_pct"
            } else {
                "dedupe_pct"
            },
            "duplicate",
        ),
    ] {
        let (Some(mut asked), Some(got)) = (
            p["asked"][key].as_f64(),
            p["measured"][measured_key].as_f64(),
        ) else {
            continue;
        };
        if key == "compress_saved_pct" {
            asked = deliverable.unwrap_or(asked);
        }
        if (asked - got).abs() <= DATA_SHAPE_TOLERANCE_PCT {
            continue;
        }
        let scope = match header {
            Some(h) if key == "dedupe_pct" => {
                format!(" (counting each block's bytes after its {h}-byte verify header)")
            }
            Some(h) => {
                format!(" (what the bytes after each block's {h}-byte verify header can deliver)")
            }
            None => String::new(),
        };
        out.push(finding(
            "data_shape",
            format!(
                "asked for {asked:.0} % {what} data{scope}, the written file holds {got:.1} % (a sample of {} blocks read back): storage that compresses or dedupes saw other data than asked; the blocks of an existing file that the run did not write count as they are",
                p["measured"]["sampled_blocks"].as_u64().unwrap_or(0)
            ),
            json!({ "key": key, "asked": asked, "measured": got, "tolerance_points": DATA_SHAPE_TOLERANCE_PCT }),
        ));
    }
}

/// Buffered reads of a data set (workload filesets, replay files) that fits in half the
/// memory: most reads can be served by the page cache.
fn data_set_cached(r: &RunFacts, out: &mut Vec<Explanation>) {
    let (Some((bytes, what)), Some(mem)) = (r.data_set, r.mem_total_bytes) else {
        return;
    };
    if r.total.read_ops == 0 || !buffered(r) || bytes == 0 || bytes > mem / 2 {
        return;
    }
    out.push(finding(
        "page_cache",
        format!(
            "buffered reads of {what} of {} that fit in memory ({}): the page cache can serve most of them, so the result may measure it, not the storage; use a data set larger than memory or direct I/O",
            mib(bytes),
            mib(mem)
        ),
        json!({"data_set_bytes": bytes, "data_set": what, "mem_total_bytes": mem}),
    ));
}

/// Buffered reads the page cache served: of a file it mostly held when the run began, or of
/// one that fits in memory when the run's own evidence says the cache served most reads.
/// A cold run (little cached at the start) that read from the storage is not named: its
/// reads of a page came from the device once, so the cache can have served at most the reads
/// beyond what the run brought into it, and with `--iostat` the devices' own read rate says
/// what the storage delivered.
fn page_cache(r: &RunFacts, f: &CacheFacts, out: &mut Vec<Explanation>) {
    if r.total.read_ops == 0 || !buffered(r) {
        return;
    }
    let size: u64 = f.targets.iter().map(|t| t.1.size_bytes).sum();
    let before: u64 = f.targets.iter().filter_map(|t| t.1.cached_bytes).sum();
    let after: u64 = f.targets.iter().filter_map(|t| t.2.cached_bytes).sum();
    let fits = f.mem_total_bytes.is_some_and(|m| size <= m / 2);
    let was_cached = size > 0 && before * 2 >= size;
    let served = (!was_cached)
        .then(|| cache_served(r, before, after))
        .flatten();
    if !(was_cached || fits && served.as_ref().is_some_and(|s| s.share > 0.5)) {
        return;
    }
    let how = match &served {
        Some(s) => format!(
            "; {:.0}% of the reads came from the cache ({})",
            s.share * 100.0,
            s.shown_by
        ),
        None => String::new(),
    };
    out.push(finding(
        "page_cache",
        format!(
            "buffered reads of {} ({} cached when the run began, {} at its end) {}{how}: the result measures the page cache, not the storage; use --cache direct (vx: -c direct), --drop-cache, or a --size larger than memory",
            mib(size),
            mib(before),
            mib(after),
            match f.mem_total_bytes {
                Some(m) if !was_cached => format!("that fits in memory ({})", mib(m)),
                _ => "that was mostly cached".to_string(),
            }
        ),
        json!({"file_bytes": size, "cached_before_bytes": before, "cached_after_bytes": after,
               "mem_total_bytes": f.mem_total_bytes,
               "read_bytes": r.total.read_bytes,
               "cache_served_pct": served.as_ref().map(|s| s.share * 100.0),
               "device_read_bytes_per_sec": served.as_ref().and_then(|s| s.device_read_bytes_per_sec)}),
    ));
}

/// How much of a cold run's reads the page cache served, and what shows it.
struct CacheServed {
    /// Share of the bytes read that did not come from the storage (0..1).
    share: f64,
    shown_by: String,
    device_read_bytes_per_sec: Option<f64>,
}

/// The share of the run's reads the page cache served, when the Result holds evidence: the
/// devices' read rate under the run (`--iostat`) against the run's own, else the bytes read
/// against what the run brought into the cache (each page read from the device once stays
/// cached while the file fits in memory; readahead and writes only add to it, so this
/// errs towards the storage).
fn cache_served(r: &RunFacts, before: u64, after: u64) -> Option<CacheServed> {
    let read = r.total.read_bytes;
    if read == 0 {
        return None;
    }
    let run_rate = r.total.read_bytes as f64 / r.total.elapsed_s.max(1e-9);
    if let Some(dev) = device::device_read_bytes_per_sec(r) {
        return Some(CacheServed {
            share: (1.0 - dev / run_rate.max(1.0)).clamp(0.0, 1.0),
            shown_by: format!(
                "the devices read {}/s under a run that read {}/s",
                mib(dev as u64),
                mib(run_rate as u64)
            ),
            device_read_bytes_per_sec: Some(dev),
        });
    }
    let brought_in = after.saturating_sub(before);
    Some(CacheServed {
        share: 1.0 - (brought_in as f64 / read as f64).min(1.0),
        shown_by: format!(
            "the run read {} but brought only {} into the cache",
            mib(read),
            mib(brought_in)
        ),
        device_read_bytes_per_sec: None,
    })
}

/// Fewest seconds a run is timed for its figures to be more than its start-up: the first
/// I/Os (files opened, caches and queues filling, threads starting one after another) and
/// the clock's resolution weigh in a shorter run.
pub(crate) const MIN_RUN_S: f64 = 1.0;

/// Fewest I/Os a run does for the highest percentile it prints (p99) to be other than its
/// slowest I/O.
pub(crate) const MIN_RUN_OPS: u64 = 100;

/// A run shorter than [`MIN_RUN_S`] or of fewer than [`MIN_RUN_OPS`] I/Os.
fn too_short(r: &RunFacts, out: &mut Vec<Explanation>) {
    // The remedy as the command spells it: a Job takes a larger --size; a workload or a
    // replay only runs longer.
    let remedy = if r.job.is_some() {
        "run longer with --time or a larger --size"
    } else {
        "run longer with --time"
    };
    let t = r.total;
    let short = t.elapsed_s < MIN_RUN_S;
    let few = t.ops < MIN_RUN_OPS;
    if !short && !few {
        return;
    }
    let why = match (short, few) {
        (true, true) => format!(
            "under {MIN_RUN_S:.0} s and under {MIN_RUN_OPS} I/Os (start-up weighs in, and p99 is the slowest I/O)"
        ),
        (true, false) => format!("under {MIN_RUN_S:.0} s (start-up weighs in)"),
        _ => format!("under {MIN_RUN_OPS} I/Os (p99 is the slowest I/O)"),
    };
    out.push(finding(
        "too_short",
        format!(
            "the run was too short to trust: {} and {} I/Os, {why}; {remedy}",
            crate::units::format_ns(t.elapsed_s * 1e9),
            t.ops
        ),
        json!({"elapsed_s": t.elapsed_s, "ops": t.ops, "min_elapsed_s": MIN_RUN_S,
               "min_ops": MIN_RUN_OPS}),
    ));
}

/// Reads of a file with holes: the file system returns zeros without any device I/O.
fn sparse_reads(r: &RunFacts, f: &CacheFacts, out: &mut Vec<Explanation>) {
    if r.total.read_ops == 0 {
        return;
    }
    for (path, before, _) in &f.targets {
        let (size, alloc) = (before.size_bytes, before.allocated_bytes);
        if size >= 64 << 10 && alloc * 10 < size * 9 {
            out.push(finding(
                "sparse_reads",
                format!(
                    "{path} is sparse ({} of {} allocated): reads of its holes return zeros without device I/O; lay it out first with a --rw write run and --keep, or read a written file",
                    mib(alloc),
                    mib(size)
                ),
                json!({"path": path, "size_bytes": size, "allocated_bytes": alloc}),
            ));
        }
    }
}

/// fsbench's threads used about all the CPU they could: the host, not the storage, set the pace.
fn host_bound(r: &RunFacts, out: &mut Vec<Explanation>) {
    let t = &r.total;
    let threads = r.threads;
    // The CPUs recorded in the Result (not this machine's: a stored Result is explained
    // again elsewhere): each rank's allowed CPUs, at most the hosts' online ones.
    let c = r.cpus;
    let mut cpus = c.allowed.max(1) * c.sets.max(1);
    if let Some(online) = c.online {
        cpus = cpus.min(online.max(1) * c.hosts.max(1));
    }
    let can_use = threads.min(cpus).max(1) as f64;
    if t.elapsed_s < 0.1 {
        return;
    }
    let busy = t.cpu_s / t.elapsed_s;
    if busy >= 0.85 * can_use {
        out.push(finding(
            "host_bound",
            format!(
                "fsbench's {threads} thread(s) were on CPU {busy:.2} s per second (of {can_use:.0} they could use): the limit was the host's CPU, not the storage; a larger --bs or an --engine with less CPU per I/O moves more per CPU second"
            ),
            json!({"cpu_s": t.cpu_s, "elapsed_s": t.elapsed_s, "threads": threads, "cpus": cpus}),
        ));
    }
}

/// More worker threads per process than the CPUs that process may run on, while the host has
/// more: the threads took turns on a CPU the user may not know they were held to. Under
/// mpirun that is its default binding (each rank to one core when there are at most two
/// ranks, to one socket beyond), which a single-threaded peer such as IOR does not feel.
fn cpu_binding(r: &RunFacts, out: &mut Vec<Explanation>) {
    let c = r.cpus;
    let Some(online) = c.online else { return };
    let per_set = r.threads.div_ceil(c.sets.max(1));
    if c.allowed >= online || per_set <= c.allowed {
        return;
    }
    let who = if c.sets > 1 { "each rank" } else { "fsbench" };
    out.push(finding(
        "cpu_binding",
        format!(
            "{who} could run on only {} of the host's {online} CPUs (its CPU affinity: mpirun binds ranks to cores by default, or taskset, or a cgroup) but ran {per_set} worker threads, which took turns on them: use fewer --threads, or under mpirun add --bind-to none, or --map-by slot:PE={per_set}",
            c.allowed
        ),
        json!({"cpus_allowed": c.allowed, "cpus_online": online, "threads_per_process": per_set, "processes": c.sets}),
    ));
}

/// The queue depth asked for was seldom reached.
fn queue_depth(r: &RunFacts, out: &mut Vec<Explanation>) {
    let Some(job) = r.job else { return };
    if job.queue_depth <= 1 {
        return;
    }
    let want = inflight_bucket(job.queue_depth);
    let reached: f64 = r
        .total
        .inflight_pct
        .iter()
        .filter(|(name, _)| INFLIGHT_BUCKETS.iter().position(|b| b == name) >= Some(want))
        .map(|(_, pct)| pct)
        .sum();
    if reached < 50.0 {
        out.push(finding(
            "queue_depth",
            format!(
                "queue depth {} was asked for, but only {reached:.1}% of I/Os were submitted with that many in flight (rate limit, short run or an engine that completes inline); check --rate-iops, --rate-bytes and --engine, or run longer with --time",
                job.queue_depth
            ),
            json!({"queue_depth": job.queue_depth, "reached_pct": reached, "inflight_pct": r.total.inflight_pct}),
        ));
    }
}

/// Buffered writes, not synced, for less time than dirty data waits before write-back.
fn dirty_at_stop(r: &RunFacts, probed_expire_s: Option<f64>, out: &mut Vec<Explanation>) {
    // Periodic syncs (`--fsync-every`, `--fdatasync-every`) leave at most the last few writes unsynced; runs
    // without a Job (workloads, replays) synced when they called fsync or fdatasync.
    let synced = match r.job {
        Some(job) => {
            job.fsync
                || job.fsync_every.is_some()
                || job.fdatasync_every.is_some()
                || job.open.dsync
                || job.open.sync
                || matches!(job.cache, CachePolicy::Dsync)
        }
        None => r.total.syscalls.fsync + r.total.syscalls.fdatasync > 0,
    };
    if r.total.write_ops == 0 || !buffered(r) || synced {
        return;
    }
    let Some(expire) = probed_expire_s.or(r.dirty_expire_s) else {
        return;
    };
    // The remedy as the front end spells it: a Job's flag (vx's sub-option), else in words
    // (a workload or a replay syncs when its own calls do).
    let remedy = if r.job.is_some() {
        "add --fsync (vx: -i fsync) or run longer"
    } else {
        "fsync the files before the end or run longer"
    };
    if r.total.elapsed_s < expire {
        out.push(finding(
            "dirty_at_stop",
            format!(
                "buffered writes ran {:.1} s without fsync, less than the kernel's write-back delay ({expire} s, vm.dirty_expire_centisecs): much of the data may still have been in memory when the clock stopped; {remedy}",
                r.total.elapsed_s
            ),
            json!({"elapsed_s": r.total.elapsed_s, "dirty_expire_s": expire, "write_bytes": r.total.write_bytes}),
        ));
    }
}

/// Direct I/O that was not: misaligned I/Os done buffered, or a discovered-direct threshold
/// no I/O reached.
fn direct(r: &RunFacts, out: &mut Vec<Explanation>) {
    let t = &r.total;
    if t.buffered_fallback_ops > 0 {
        out.push(finding(
            "direct_fallback",
            format!(
                "{} of {} I/Os were not aligned for direct I/O and went through the page cache (dsync buffered): those were not direct; use a --bs that is a multiple of the device's logical block size",
                t.buffered_fallback_ops, t.ops
            ),
            json!({"buffered_fallback_ops": t.buffered_fallback_ops, "ops": t.ops}),
        ));
    }
    if let Some(CachePolicy::Discovered { threshold }) = r.cache {
        if t.direct_ops == 0 {
            let bs = r.job.map_or(0, |j| j.block_size);
            out.push(finding(
                "discovered_never_direct",
                format!(
                    "discovered direct I/O never went direct: every I/O ({}) was no larger than the threshold ({}), and only larger I/Os go direct, so all of them were buffered; use --cache direct or a larger --bs",
                    mib(bs),
                    mib(threshold)
                ),
                json!({"block_size": bs, "threshold": threshold}),
            ));
        }
    }
}

/// Run the `explain` checks on what this Result holds now (again after observers added
/// their probes); a `spread` finding, which only the repetitions together show, stays.
pub fn refresh(r: &mut RunResult) {
    let threads = match (&r.workload, &r.replay) {
        (Some(w), _) => w.runs.iter().map(|r| r.threads).max().unwrap_or(1) as usize,
        (_, Some(rp)) => rp.threads as usize,
        _ => r.users.iter().map(|u| u.threads.len().max(1)).sum(),
    };
    // Runs without a page_cache probe: the data set they touched, by kind.
    let data_set = match (&r.workload, &r.replay) {
        (Some(w), _) => Some((
            w.filesets.iter().map(|f| f.bytes_written).sum::<u64>(),
            "the filesets",
        )),
        (_, Some(rp)) => Some((
            rp.files.iter().map(|f| f.size_bytes).sum::<u64>(),
            "the replayed files",
        )),
        _ => None,
    };
    let live = matches!(r.kind, Kind::Workload | Kind::Replay);
    let mut found = explain(&RunFacts {
        total: &r.total,
        job: r.job.as_ref(),
        cache: r.plan.as_ref().map(|p| p.cache),
        probes: &r.probes,
        threads: threads.max(1),
        data_set,
        mem_total_bytes: (r.environment.mem_bytes > 0).then_some(r.environment.mem_bytes),
        dirty_expire_s: if live {
            crate::probe::cache::dirty_expire_s()
        } else {
            None
        },
        timeseries: &r.timeseries,
        cpus: Cpus {
            allowed: r.environment.cpus.max(1) as usize,
            online: r.environment.cpus_online.map(|n| n as usize),
            sets: r.ranks.len().max(1),
            hosts: r.hosts.len().max(1),
        },
        host: r.host.as_ref(),
        stability: r.stability.as_ref(),
    });
    found.extend(r.explain.drain(..).filter(|e| e.check == "spread"));
    r.explain = found;
}

/// Give every complete repetition of one point the `spread` finding when they disagree by
/// more than [`SPREAD_LIMIT`] (sweep, suite and quick repetitions); true
/// when they did.
pub fn mark_spread<'a>(repeats: impl IntoIterator<Item = &'a mut RunResult>) -> bool {
    let mut runs: Vec<&mut RunResult> = repeats
        .into_iter()
        .filter(|r| r.status == RunStatus::Complete)
        .collect();
    let Some(what) = runs.first().map(|r| r.repeat_figure().1) else {
        return false;
    };
    let values: Vec<f64> = runs
        .iter()
        .filter(|r| r.repeat_figure().1 == what)
        .map(|r| r.repeat_figure().0)
        .collect();
    let Some(e) = spread(&values, what) else {
        return false;
    };
    for r in runs.iter_mut() {
        r.explain.retain(|x| x.check != "spread");
        r.explain.push(e.clone());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `threads` threads on `cpus` that moved no data through the page cache.
    fn explain_cpu(
        cpu_s: f64,
        elapsed_s: f64,
        ops: u64,
        threads: usize,
        cpus: Cpus,
    ) -> Vec<Explanation> {
        let total = StatsReport {
            cpu_s,
            ops,
            elapsed_s,
            ..Default::default()
        };
        let probes = serde_json::Map::new();
        explain(&RunFacts {
            total: &total,
            job: None,
            cache: None,
            probes: &probes,
            threads,
            data_set: None,
            mem_total_bytes: None,
            dirty_expire_s: None,
            timeseries: &[],
            cpus,
            host: None,
            stability: None,
        })
    }

    fn explain_run(cpu_s: f64, elapsed_s: f64, ops: u64) -> Vec<Explanation> {
        explain_cpu(cpu_s, elapsed_s, ops, 1, Cpus::default())
    }

    #[test]
    fn a_thread_on_cpu_the_whole_run_is_host_bound_and_a_waiting_one_is_not() {
        let busy = explain_run(0.97, 1.0, 1000);
        assert_eq!(busy.len(), 1, "{busy:?}");
        assert_eq!(busy[0].check, "host_bound");
        assert!(
            busy[0].message.contains("0.97 s per second"),
            "{}",
            busy[0].message
        );
        assert!(explain_run(0.30, 1.0, 1000).is_empty());
        // Too short to judge the CPU, and said to be too short.
        let short = explain_run(0.05, 0.05, 1000);
        assert_eq!(short.len(), 1, "{short:?}");
        assert_eq!(short[0].check, "too_short");
    }

    fn threads_on(threads: usize, cpus: Cpus) -> Vec<Explanation> {
        explain_cpu(0.1, 1.0, 1000, threads, cpus)
    }

    #[test]
    fn more_threads_than_the_cpus_a_process_may_use_on_a_bigger_host_are_named() {
        let bound = |allowed, online, sets| Cpus {
            allowed,
            online: Some(online),
            sets,
            hosts: 1,
        };
        // 4 threads held to 1 of 2 CPUs: named, with the numbers and what to do.
        let e = threads_on(4, bound(1, 2, 1));
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].check, "cpu_binding");
        assert!(
            e[0].message.contains("only 1 of the host's 2 CPUs"),
            "{}",
            e[0].message
        );
        assert!(e[0].message.contains("--bind-to none"), "{}", e[0].message);
        assert_eq!(e[0].evidence["threads_per_process"], 4);
        // Two ranks each bound to a core with two threads each: per rank.
        let e = threads_on(4, bound(1, 2, 2));
        assert_eq!(e[0].check, "cpu_binding");
        assert!(e[0].message.starts_with("each rank"), "{}", e[0].message);
        assert_eq!(e[0].evidence["threads_per_process"], 2);
        // Silent: a thread per allowed CPU, every CPU allowed, or nothing recorded.
        assert!(threads_on(2, bound(1, 2, 2)).is_empty());
        assert!(threads_on(4, bound(2, 2, 1)).is_empty());
        assert!(threads_on(4, Cpus::default()).is_empty());
    }

    #[test]
    fn repetitions_that_disagree_by_more_than_a_tenth_are_named() {
        let e = spread(&[100.0, 80.0, 120.0], "bytes_per_sec").unwrap();
        assert_eq!(e.check, "spread");
        assert!(e.message.contains("disagree by 40.0%"), "{}", e.message);
        assert_eq!(e.evidence["min"], 80.0);
        // Within 10 %, a single run, or nothing measured: silent.
        assert!(spread(&[100.0, 95.0, 104.0], "bytes_per_sec").is_none());
        assert!(spread(&[100.0], "bytes_per_sec").is_none());
        assert!(spread(&[0.0, 0.0], "iops").is_none());
    }

    #[test]
    fn a_workload_reading_a_data_set_that_fits_in_memory_is_named() {
        let total = StatsReport {
            ops: 100,
            read_ops: 100,
            elapsed_s: 1.0,
            ..Default::default()
        };
        let probes = serde_json::Map::new();
        let facts = |data: u64, mem: u64| RunFacts {
            total: &total,
            job: None,
            cache: None,
            probes: &probes,
            threads: 1,
            data_set: Some((data, "the filesets")),
            mem_total_bytes: Some(mem),
            dirty_expire_s: Some(30.0),
            timeseries: &[],
            cpus: Cpus::default(),
            host: None,
            stability: None,
        };
        let e = explain(&facts(1 << 20, 1 << 30));
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].check, "page_cache");
        assert!(
            e[0].message.contains("the filesets of 1.00 MiB"),
            "{}",
            e[0].message
        );
        // A data set larger than half the memory is not.
        assert!(explain(&facts(1 << 30, 1 << 30)).is_empty());
    }

    #[test]
    fn a_run_under_a_second_or_of_few_ios_is_too_short() {
        let e = explain_run(0.0, 0.01, 5000);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].check, "too_short");
        assert!(
            e[0].message.contains("10.00 ms and 5000 I/Os, under 1 s"),
            "{}",
            e[0].message
        );
        assert!(e[0].message.contains("--time"), "{}", e[0].message);
        let e = explain_run(0.0, 2.0, 50);
        assert_eq!(e[0].check, "too_short");
        assert!(e[0].message.contains("under 100 I/Os"), "{}", e[0].message);
        assert!(explain_run(0.0, 1.0, 100).is_empty());
    }

    /// A buffered read run of a 4 MiB file on a host of 1 GiB with the cache as given.
    fn cached_read(before: u64, after: u64, read: u64) -> Vec<Explanation> {
        let total = StatsReport {
            ops: 1000,
            read_ops: 1000,
            read_bytes: read,
            elapsed_s: 1.0,
            ..Default::default()
        };
        let fc = |cached: u64| json!({"size_bytes": 4u64 << 20, "allocated_bytes": 4u64 << 20, "cached_bytes": cached});
        let mut probes = serde_json::Map::new();
        probes.insert(
            "page_cache".into(),
            json!({"mem_total_bytes": 1u64 << 30,
                   "targets": [{"path": "f", "before": fc(before), "after": fc(after)}]}),
        );
        let job = Job::default();
        explain(&RunFacts {
            total: &total,
            job: Some(&job),
            cache: Some(CachePolicy::Buffered),
            probes: &probes,
            threads: 1,
            data_set: None,
            mem_total_bytes: None,
            dirty_expire_s: None,
            timeseries: &[],
            cpus: Cpus::default(),
            host: None,
            stability: None,
        })
        .into_iter()
        .filter(|e| e.check == "page_cache")
        .collect()
    }

    #[test]
    fn the_page_cache_is_named_on_the_evidence_not_on_the_file_size_alone() {
        let mb = 1u64 << 20;
        // Hot: mostly cached at the start.
        let hot = cached_read(4 * mb, 4 * mb, 4 * mb);
        assert_eq!(hot.len(), 1, "{hot:?}");
        assert!(
            hot[0].message.contains("that was mostly cached"),
            "{}",
            hot[0].message
        );
        // Cold, read once: every page came from the storage.
        assert!(cached_read(0, 4 * mb, 4 * mb).is_empty());
        // Cold, but read ten times over: nine reads in ten found the page cached.
        let warm = cached_read(0, 4 * mb, 40 * mb);
        assert_eq!(warm.len(), 1, "{warm:?}");
        assert!(
            warm[0]
                .message
                .contains("90% of the reads came from the cache"),
            "{}",
            warm[0].message
        );
        assert_eq!(warm[0].evidence["cache_served_pct"], 90.0);
    }

    /// Every check has a legend: what it is in a few words and what to do, naming an option
    /// (tests/explain.rs holds the options named to those `fsbench run` accepts).
    #[test]
    fn every_check_has_a_legend_with_an_option_to_use() {
        let checks = [
            "too_short",
            "page_cache",
            "sparse_reads",
            "host_bound",
            "cpu_binding",
            "device_idle",
            "queue_depth",
            "dirty_at_stop",
            "direct_fallback",
            "discovered_never_direct",
            "spread",
            "unstable",
        ];
        for check in checks {
            let (what, hint) = legend(check);
            assert!(!what.is_empty(), "{check}");
            assert!(hint.contains("--"), "{check}: {hint}");
        }
    }

    #[test]
    fn a_run_without_ops_or_probes_explains_nothing() {
        assert!(explain_run(0.97, 1.0, 0).is_empty());
    }
}
