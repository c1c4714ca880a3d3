//! Refuse, before anything is created, a job this machine cannot run: more threads and
//! processes than RLIMIT_NPROC allows, or more worker memory (stacks, I/O buffers, latency
//! histograms) than /proc/meminfo says is available. `--force` does not lift these: they are
//! not about data, and going past them ends in a failed spawn or the OOM killer.

use crate::job::{Job, WorkerMode};
use anyhow::Result;

/// Bytes one latency histogram holds (1 ns .. 1 h at 3 significant digits), rounded up.
const HIST_BYTES: u64 = 280 << 10;
/// Bytes one per-size latency histogram holds once created (its counts and a little more).
const SIZE_HIST_BYTES: u64 = (crate::stats::hist::BUCKETS as u64 * 8).next_multiple_of(4096) + 4096;
/// Resident size of one extra fsbench process (process mode), a generous estimate.
const PROCESS_BYTES: u64 = 8 << 20;

/// Threads plus processes the job starts (the main thread included).
pub(crate) fn tasks(job: &Job) -> u64 {
    let threads = job.total_threads();
    let processes = match job.workers {
        WorkerMode::Threads => 0,
        WorkerMode::ProcessPerUser => job.targets.len() as u64,
        WorkerMode::ProcessPerThread => threads,
    };
    // Process mode: each child has its main thread besides its workers.
    threads + processes + 1
}

/// Memory the workers need: buffers, stacks and histograms, plus the extra processes.
pub(crate) fn worker_memory(job: &Job) -> u64 {
    let slot = job.io_size().div_ceil(4096).max(1) * 4096;
    let buffers = slot.saturating_mul(job.effective_depth() as u64);
    let hists = if job.rate.is_on() {
        2 * HIST_BYTES
    } else {
        HIST_BYTES
    };
    // With mixed sizes each worker also keeps a histogram per size (`by_size`).
    let hists = hists.saturating_add(job.size_class_count().saturating_mul(SIZE_HIST_BYTES));
    let per_worker = buffers
        .saturating_add(super::WORKER_STACK as u64)
        .saturating_add(hists);
    let processes = match job.workers {
        WorkerMode::Threads => 0,
        WorkerMode::ProcessPerUser => job.targets.len() as u64,
        WorkerMode::ProcessPerThread => job.total_threads(),
    };
    per_worker
        .saturating_mul(job.total_threads())
        .saturating_add(processes.saturating_mul(PROCESS_BYTES))
}

fn nproc_limit() -> Option<u64> {
    // SAFETY: getrlimit fills a struct we own.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut r) } != 0 {
        return None;
    }
    (r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

/// MemAvailable from /proc/meminfo, in bytes.
pub(crate) fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&text)
}

fn parse_mem_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// The check itself: one usage line naming the limit.
pub(crate) fn check(job: &Job) -> Result<()> {
    check_against(job, nproc_limit(), mem_available())
}

fn check_against(job: &Job, nproc: Option<u64>, avail: Option<u64>) -> Result<()> {
    let n = tasks(job);
    if let Some(lim) = nproc {
        if n > lim {
            crate::bail_usage!(
                "the job needs {n} threads and processes but RLIMIT_NPROC (ulimit -u) allows {lim}: use fewer threads, targets or processes, or raise the limit"
            );
        }
    }
    if let Some(avail) = avail {
        let need = worker_memory(job);
        if need > avail {
            crate::bail_usage!(
                "the job's workers need {} of memory ({} thread(s): I/O buffers of {} x queue depth {}, stacks, histograms) but only {} is available (MemAvailable): use fewer threads, a smaller block size or queue depth",
                crate::units::format_bytes(need as f64),
                job.total_threads(),
                crate::units::format_bytes(job.block_size as f64),
                job.effective_depth(),
                crate::units::format_bytes(avail as f64)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Job {
            targets: vec!["a".into(), "b".into()],
            threads: 4,
            io_count: Some(10),
            ..Default::default()
        }
    }

    #[test]
    fn counts_threads_and_processes() {
        let mut j = job();
        assert_eq!(tasks(&j), 9);
        j.workers = WorkerMode::ProcessPerThread;
        assert_eq!(tasks(&j), 17);
        assert!(check_against(&j, Some(16), None).is_err());
        assert!(check_against(&j, Some(17), None).is_ok());
        let e = check_against(&j, Some(10), None).unwrap_err();
        assert!(crate::error::is_usage(&e));
        assert!(e.to_string().contains("RLIMIT_NPROC"), "{e}");
    }

    #[test]
    fn memory_is_sized_by_what_is_used() {
        let mut j = job();
        j.engine = crate::job::EngineKind::Uring;
        j.queue_depth = 4096;
        j.block_size = 1 << 20;
        j.io_count = Some(4);
        // Four I/Os per thread need four buffers, not 4096.
        let m = worker_memory(&j);
        assert!(m < 8 * (6 << 20), "{m}");
        j.time_s = Some(1.0);
        assert!(worker_memory(&j) > 8 * (4u64 << 30));
        let e = check_against(&j, None, Some(1 << 30)).unwrap_err();
        assert!(e.to_string().contains("MemAvailable"), "{e}");
    }

    #[test]
    fn memory_counts_a_histogram_per_size() {
        let mut j = job();
        j.io_count = Some(4);
        let one_size = worker_memory(&j);
        j.bsrange = Some(crate::job::BsRange::parse("4k-4m", "x").unwrap());
        // 4k to 4m in steps of 4k: 1024 sizes, a histogram each.
        let ranged = worker_memory(&j);
        let threads = j.total_threads();
        assert!(
            ranged - one_size >= threads * 1024 * SIZE_HIST_BYTES,
            "{one_size} {ranged}"
        );
    }

    #[test]
    fn meminfo_parsed() {
        let t = "MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(parse_mem_available(t), Some(20_000_000 * 1024));
    }
}
