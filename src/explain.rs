//! `explain`: what could make a run's number mislead, checked after every run and said with
//! its evidence. No peer does this; a storage engineer does it by hand (was the file cached?
//! was it sparse? was the host the limit?), and forgets some of it some of the time.
//!
//! Every check reads what a Result holds (the Job, the cache policy used, the totals and the
//! probes the runner stored, such as `page_cache`), handed over as [`RunFacts`] by the
//! Result itself, so a stored Result can be explained again later and this module needs
//! nothing of the Result's shape.

use crate::job::CachePolicy;
use crate::job::Job;
use crate::probe::cache::FileCache;
use crate::stats::StatsReport;
use crate::stats::{inflight_bucket, INFLIGHT_BUCKETS};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// One reason to doubt a number, with what shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// Which check: page_cache, sparse_reads, host_bound, queue_depth, dirty_at_stop,
    /// direct_fallback, discovered_never_direct.
    pub check: String,
    pub message: String,
    pub evidence: serde_json::Value,
}

/// What the checks read of a run's Result.
pub(crate) struct RunFacts<'a> {
    pub total: &'a StatsReport,
    pub job: Option<&'a Job>,
    /// The cache policy the run used (its plan's).
    pub cache: Option<CachePolicy>,
    pub probes: &'a serde_json::Map<String, serde_json::Value>,
    /// Worker threads of the run.
    pub threads: usize,
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
    let Some(cache) = r.cache else { return false };
    match cache {
        CachePolicy::Buffered | CachePolicy::Dsync => true,
        CachePolicy::Discovered { .. } => r.total.direct_ops * 2 < r.total.ops.max(1),
        _ => r.total.buffered_fallback_ops * 2 > r.total.ops,
    }
}

/// Every check, in the order they are printed.
pub(crate) fn explain(r: &RunFacts) -> Vec<Explanation> {
    let mut out = Vec::new();
    if r.total.ops == 0 {
        return out;
    }
    let facts = cache_facts(r);
    if let Some(f) = &facts {
        page_cache(r, f, &mut out);
        sparse_reads(r, f, &mut out);
    }
    host_bound(r, &mut out);
    queue_depth(r, &mut out);
    if let Some(f) = &facts {
        dirty_at_stop(r, f, &mut out);
    }
    direct(r, &mut out);
    out
}

/// Buffered reads of a file the page cache held, or could hold: the cache was measured.
fn page_cache(r: &RunFacts, f: &CacheFacts, out: &mut Vec<Explanation>) {
    if r.total.read_ops == 0 || !buffered(r) {
        return;
    }
    let size: u64 = f.targets.iter().map(|t| t.1.size_bytes).sum();
    let before: u64 = f.targets.iter().filter_map(|t| t.1.cached_bytes).sum();
    let after: u64 = f.targets.iter().filter_map(|t| t.2.cached_bytes).sum();
    let fits = f.mem_total_bytes.is_some_and(|m| size <= m / 2);
    let was_cached = size > 0 && before * 2 >= size;
    if !(fits || was_cached) {
        return;
    }
    out.push(finding(
        "page_cache",
        format!(
            "buffered reads of {} ({} cached when the run began, {} at its end) {}: the result measures the page cache, not the storage; use --cache direct, --drop-cache, or a file larger than memory",
            mib(size),
            mib(before),
            mib(after),
            match f.mem_total_bytes {
                Some(m) if fits => format!("that fits in memory ({})", mib(m)),
                _ => "that was mostly cached".to_string(),
            }
        ),
        json!({"file_bytes": size, "cached_before_bytes": before, "cached_after_bytes": after,
               "mem_total_bytes": f.mem_total_bytes}),
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
                    "{path} is sparse ({} of {} allocated): reads of its holes return zeros without device I/O",
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
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let can_use = threads.min(cpus).max(1) as f64;
    if t.elapsed_s < 0.1 {
        return;
    }
    let busy = t.cpu_s / t.elapsed_s;
    if busy >= 0.85 * can_use {
        out.push(finding(
            "host_bound",
            format!(
                "fsbench's {threads} thread(s) were on CPU {busy:.2} s per second (of {can_use:.0} they could use): the limit was the host's CPU, not the storage"
            ),
            json!({"cpu_s": t.cpu_s, "elapsed_s": t.elapsed_s, "threads": threads, "cpus": cpus}),
        ));
    }
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
                "queue depth {} was asked for, but only {reached:.1}% of I/Os were submitted with that many in flight (rate limit, short run or an engine that completes inline)",
                job.queue_depth
            ),
            json!({"queue_depth": job.queue_depth, "reached_pct": reached, "inflight_pct": r.total.inflight_pct}),
        ));
    }
}

/// Buffered writes, not synced, for less time than dirty data waits before write-back.
fn dirty_at_stop(r: &RunFacts, f: &CacheFacts, out: &mut Vec<Explanation>) {
    let Some(job) = r.job else { return };
    // Periodic fsyncs (`--fsync-every`) leave at most the last few writes unsynced.
    let synced = job.fsync
        || job.fsync_every.is_some()
        || job.open.dsync
        || job.open.sync
        || matches!(job.cache, CachePolicy::Dsync);
    if r.total.write_ops == 0 || !buffered(r) || synced {
        return;
    }
    let Some(expire) = f.dirty_expire_s else {
        return;
    };
    if r.total.elapsed_s < expire {
        out.push(finding(
            "dirty_at_stop",
            format!(
                "buffered writes ran {:.1} s without fsync, less than the kernel's write-back delay ({expire} s, vm.dirty_expire_centisecs): much of the data may still have been in memory when the clock stopped; add --fsync or run longer",
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
                "{} of {} I/Os were not aligned for direct I/O and went through the page cache (dsync buffered): those were not direct",
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
                    "discovered direct I/O never went direct: every I/O ({}) was below the threshold ({}), so all of them were buffered",
                    mib(bs),
                    mib(threshold)
                ),
                json!({"block_size": bs, "threshold": threshold}),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explain_run(cpu_s: f64, elapsed_s: f64, ops: u64) -> Vec<Explanation> {
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
            threads: 1,
        })
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
        // Too short to judge.
        assert!(explain_run(0.05, 0.05, 1000).is_empty());
    }

    #[test]
    fn a_run_without_ops_or_probes_explains_nothing() {
        assert!(explain_run(0.97, 1.0, 0).is_empty());
    }
}
