//! The tracing session of a run: ring size, a common clock, and the rings workers hand back.
//!
//! The observer that asked for the trace makes the session and the run carries it to its
//! workers (nothing process-wide). Worker threads hand their rings back to it. Worker
//! processes (`--processes`, vx's `-P`/`-p`) inherit `FSBENCH_TRACE_DIR` and
//! `FSBENCH_TRACE_RECORDS` from the parent: each child opens its own session from them
//! ([`TraceSession::from_env`]) and, once its last worker is done, writes its records to
//! `DIR/part-PID-dropped-N.bin`, which the parent merges. Times are kept against
//! CLOCK_MONOTONIC, which all processes share, so records of different processes line up.

use super::format;
use super::ring::TraceFiles;
use super::{Trace, TraceRing};
use crate::error::UsageError;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

const ENV_DIR: &str = "FSBENCH_TRACE_DIR";
const ENV_RECORDS: &str = "FSBENCH_TRACE_RECORDS";

struct Session {
    capacity: usize,
    /// `base` as CLOCK_MONOTONIC nanoseconds: ring times + this = times all processes share.
    base: Instant,
    base_mono_ns: u64,
    finished: Vec<TraceRing>,
    /// Rings handed out and not yet back.
    active: usize,
    /// Child process: where to write the records when the last worker is done.
    part_dir: Option<PathBuf>,
    /// Parent of worker processes: where the children's parts are.
    children_dir: Option<PathBuf>,
}

/// One run's tracing session, shared by the threads that record (each hands its ring back
/// once, after its timed loop; the lock is never taken on the I/O path).
pub struct TraceSession(Mutex<Session>);

fn new_session(capacity: usize) -> Session {
    // Rust's Instant is CLOCK_MONOTONIC on Linux: read both together to tie them.
    let base = Instant::now();
    Session {
        capacity: capacity.max(1),
        base,
        base_mono_ns: crate::stats::mono_ns(),
        finished: Vec::new(),
        active: 0,
        part_dir: None,
        children_dir: None,
    }
}

impl TraceSession {
    /// Tracing for a run of worker threads: every worker gets a ring of at most
    /// `records_per_thread` entries (the newest are kept when a worker issues more).
    pub fn new(records_per_thread: usize) -> Arc<TraceSession> {
        Arc::new(TraceSession(Mutex::new(new_session(records_per_thread))))
    }

    /// Tracing for a run of worker processes: they find `dir` and the ring size in their
    /// environment and leave their records there for [`TraceSession::take`].
    pub fn for_children(
        records_per_thread: usize,
        dir: PathBuf,
    ) -> std::io::Result<Arc<TraceSession>> {
        std::fs::create_dir_all(&dir)?;
        // SAFETY (of the environment change): done by the front end before the runner starts
        // any thread or child, so nothing reads the environment concurrently.
        std::env::set_var(ENV_DIR, &dir);
        std::env::set_var(ENV_RECORDS, records_per_thread.to_string());
        let mut s = new_session(records_per_thread);
        s.children_dir = Some(dir);
        Ok(Arc::new(TraceSession(Mutex::new(s))))
    }

    /// A worker process of a traced run: the session its parent described in the environment
    /// (None: the run is not traced).
    pub fn from_env() -> Option<Arc<TraceSession>> {
        let dir = std::env::var_os(ENV_DIR)?;
        let records = std::env::var(ENV_RECORDS).ok()?.parse().ok()?;
        let mut s = new_session(records);
        s.part_dir = Some(PathBuf::from(dir));
        Some(Arc::new(TraceSession(Mutex::new(s))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Session> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A ring for one Job worker when tracing is on (called in the worker's untimed preparation,
    /// so the allocation and the page faults of touching it happen before the clock starts). The
    /// ring is sized to the I/Os the worker will issue when the job says how many.
    pub fn ring_for_worker(
        &self,
        job: &crate::job::Job,
        path: &std::path::Path,
        target_size: u64,
        user: usize,
        thread: u32,
    ) -> Option<TraceRing> {
        // trimwrite issues two I/Os (the trim, then the write) for each one counted.
        let reps = job.repeats.max(1) as u64
            * if job.access == crate::job::Access::TrimWrite {
                2
            } else {
                1
            };
        let expected = match (job.io_count, job.time_s) {
            (Some(n), _) => Some(n.saturating_mul(reps)),
            (None, Some(_)) => None,
            // Covering the file once: at most size / smallest I/O per thread.
            (None, None) => Some((target_size / job.min_io_size().max(1) + 1).saturating_mul(reps)),
        };
        let index = user as u32 * job.threads + thread;
        self.ring_for(
            index,
            std::sync::Arc::new(vec![path.display().to_string()]),
            expected,
        )
    }

    /// A ring for thread `index` of any source (a workload's thread instance, a replay thread)
    /// when tracing is on, recording into the shared file table `files`; `expected` is how many
    /// calls it will record when known (the ring is no larger). Call it in the untimed
    /// preparation.
    pub fn ring_for(
        &self,
        index: u32,
        files: TraceFiles,
        expected: Option<u64>,
    ) -> Option<TraceRing> {
        let mut guard = self.lock();
        let s = &mut *guard;
        let cap = match expected {
            Some(n) => n.clamp(1, s.capacity as u64) as usize,
            None => s.capacity,
        };
        let ring = TraceRing::try_new(index, files, s.base, cap);
        match ring {
            Some(_) => s.active += 1,
            // Checked up front by [`check_budget`]; if memory ran out since, this worker goes
            // untraced rather than the run aborting.
            None => eprintln!(
            "fsbench: no memory for a trace ring of {cap} records: worker {index} is not traced"
        ),
        }
        ring
    }
}

/// Refuse rings of `records_per_thread` entries for `workers` workers when they (and the
/// trace they become) would not fit in memory: one usage line with the estimate.
pub fn check_budget(records_per_thread: usize, workers: usize) -> Result<(), UsageError> {
    // Each entry, and the record it becomes when the trace is gathered.
    let per = TraceRing::ENTRY_BYTES + std::mem::size_of::<super::TraceRecord>() as u64;
    let bytes = (records_per_thread as u64)
        .saturating_mul(workers.max(1) as u64)
        .saturating_mul(per);
    super::budget::check(
        &format!("--trace-records {records_per_thread} for {workers} worker(s)"),
        bytes,
    )
}

impl TraceSession {
    /// Hand a worker's ring back after its timed loop.
    pub fn finish_ring(&self, ring: TraceRing) {
        let mut guard = self.lock();
        let s = &mut *guard;
        s.finished.push(ring);
        s.active = s.active.saturating_sub(1);
        if s.active == 0 {
            if let Some(dir) = s.part_dir.clone() {
                // The last worker of a child process: leave the records for the parent.
                let (trace, dropped) = gather(std::mem::take(&mut s.finished), s.base_mono_ns);
                let part = dir.join(format!("part-{}-dropped-{dropped}.bin", std::process::id()));
                if let Err(e) = format::write_file(&trace, &part, format::TraceFormat::Bin) {
                    eprintln!("fsbench: worker process could not write its trace part: {e:#}");
                }
            }
        }
    }
}

/// A trace's file table with a name -> index map beside it, so that gathering many rings
/// over many files stays linear.
#[derive(Default)]
struct FileNames(HashMap<String, u32>);

impl FileNames {
    fn index(&mut self, trace: &mut Trace, name: &str) -> u32 {
        if let Some(&i) = self.0.get(name) {
            return i;
        }
        let i = trace.file_index(name);
        self.0.insert(name.to_string(), i);
        i
    }
}

/// Records of `rings` with times on the shared monotonic clock, and how many were dropped.
fn gather(rings: Vec<TraceRing>, base_mono_ns: u64) -> (Trace, u64) {
    let mut trace = Trace::default();
    let mut dropped = 0;
    let mut names = FileNames::default();
    for ring in rings {
        dropped += ring.dropped();
        // Ring file index -> trace file index, filled as files are first seen (a workload's
        // table can hold many files its threads never touched).
        let files = ring.files().clone();
        let mut map: HashMap<u32, u32> = HashMap::new();
        let mut records = Vec::new();
        ring.drain_into(
            |i| {
                *map.entry(i).or_insert_with(|| {
                    let name = files.get(i as usize).map_or("?", |s| s.as_str());
                    names.index(&mut trace, name)
                })
            },
            &mut records,
        );
        trace.records.append(&mut records);
    }
    for r in &mut trace.records {
        r.start_ns += base_mono_ns;
        r.end_ns += base_mono_ns;
    }
    (trace, dropped)
}

impl TraceSession {
    /// Gather every worker's records (threads of this process and parts left by worker
    /// processes) into one trace, with how many records were overwritten because a ring was
    /// full; the session is over.
    pub fn take(&self) -> (Trace, u64) {
        let session = std::mem::replace(&mut *self.lock(), new_session(1));
        let (mut trace, mut dropped) = gather(session.finished, session.base_mono_ns);
        let mut names = FileNames::default();
        for (i, f) in trace.files.iter().enumerate() {
            names.0.insert(f.clone(), i as u32);
        }
        if let Some(dir) = session.children_dir {
            std::env::remove_var(ENV_DIR);
            std::env::remove_var(ENV_RECORDS);
            let mut parts: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map(|rd| rd.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            parts.sort();
            for p in parts {
                let name = p
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .to_string();
                if let Some(n) = name
                    .strip_suffix(".bin")
                    .and_then(|n| n.rsplit("-dropped-").next())
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    dropped += n;
                }
                if let Ok(part) = format::read_file(&p) {
                    let map: Vec<u32> = part
                        .files
                        .iter()
                        .map(|f| names.index(&mut trace, f))
                        .collect();
                    for mut r in part.records {
                        r.file = map.get(r.file as usize).copied().unwrap_or(0);
                        trace.records.push(r);
                    }
                }
                let _ = std::fs::remove_file(&p);
            }
            let _ = std::fs::remove_dir(&dir);
        }
        trace.renumber();
        (trace, dropped)
    }
}
