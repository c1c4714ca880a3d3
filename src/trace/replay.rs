//! Replay a trace as a benchmark: every file in the trace becomes a scratch file fsbench
//! creates (at the size the trace needs, filled with non-repeating data, removed afterwards
//! unless kept); each traced thread becomes a worker that issues the same reads, writes and
//! syncs at the same offsets, sizes and order, optionally at the traced times. It is measured
//! like any run (Stats, latency histogram, CPU by getrusage) and reported as a RunResult.

use super::{Trace, TraceOp};
use crate::engine::sync::SyncEngine;
use crate::engine::{BufferPool, Completion, Engine, FileHandles, IoOp, OpKind};
use crate::job::{Access, CachePolicy, Job, Route};
use crate::runner::target::{Plan, TargetKind, TargetPlan};
use crate::runner::{IoFailure, RunOutcome, RunStatus, ThreadOutcome};
use crate::stats::{cpu, inflight_bucket, Stats, SyscallCounts};
use anyhow::{Context, Result};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Where the scratch files go.
    pub dir: PathBuf,
    /// Keep the traced timing, scaled by this factor (2.0 = twice as fast); `None` issues
    /// each thread's calls back to back.
    pub speed: Option<f64>,
    /// Bypass the page cache (O_DIRECT) for I/Os aligned to the device; the others are done
    /// as data-synchronous buffered I/O and counted as `buffered_fallback_ops`.
    pub direct: bool,
    pub keep: bool,
    pub name: String,
}

/// One call a replay worker issues.
#[derive(Debug, Clone, Copy)]
struct Step {
    op: TraceOp,
    file: u32,
    offset: u64,
    len: u32,
    start_ns: u64,
}

/// Scratch files of a replay; removed on drop unless kept.
struct Scratch {
    paths: Vec<PathBuf>,
    keep: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            for p in &self.paths {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// What a replay will do, derived from the trace (exposed for `--dry-run` and tests).
#[derive(Debug, Clone)]
pub struct ReplayPlan {
    /// Size each traced file needs (index = trace file index); 0 for files without data I/O.
    pub sizes: Vec<u64>,
    /// Per traced thread: its id and its calls in order.
    threads: Vec<(u32, Vec<Step>)>,
    pub skipped_calls: u64,
}

impl ReplayPlan {
    pub fn from_trace(t: &Trace) -> Result<ReplayPlan, crate::error::UsageError> {
        let mut sizes = vec![0u64; t.files.len()];
        let mut threads: Vec<(u32, Vec<Step>)> = Vec::new();
        let mut skipped = 0;
        let mut recs: Vec<&super::TraceRecord> = t.records.iter().collect();
        recs.sort_by_key(|r| (r.start_ns, r.id));
        for r in recs {
            let step = match r.op {
                TraceOp::Read | TraceOp::Write => {
                    let n = r.done_bytes();
                    if n == 0 {
                        skipped += 1;
                        continue;
                    }
                    if n > u32::MAX as u64 / 2 {
                        return Err(crate::usage!(
                            "trace record {} moves {n} bytes in one call: replay handles up to 2 GiB per call",
                            r.id
                        ));
                    }
                    let s = &mut sizes[r.file as usize];
                    *s = (*s).max(r.offset.saturating_add(n));
                    Step {
                        op: r.op,
                        file: r.file,
                        offset: r.offset,
                        len: n as u32,
                        start_ns: r.start_ns,
                    }
                }
                TraceOp::Fsync | TraceOp::Fdatasync if r.result >= 0 => Step {
                    op: r.op,
                    file: r.file,
                    offset: 0,
                    len: 0,
                    start_ns: r.start_ns,
                },
                _ => {
                    skipped += 1;
                    continue;
                }
            };
            match threads.iter_mut().find(|(id, _)| *id == r.thread) {
                Some((_, v)) => v.push(step),
                None => threads.push((r.thread, vec![step])),
            }
        }
        if threads.is_empty() {
            return Err(crate::usage!(
                "the trace has no successful reads, writes or syncs to replay"
            ));
        }
        Ok(ReplayPlan {
            sizes,
            threads,
            skipped_calls: skipped,
        })
    }

    /// Calls each thread will issue, in order: (thread, op, file, offset, len).
    pub fn sequence(&self) -> Vec<(u32, TraceOp, u32, u64, u64)> {
        self.threads
            .iter()
            .flat_map(|(id, steps)| {
                steps
                    .iter()
                    .map(move |s| (*id, s.op, s.file, s.offset, s.len as u64))
            })
            .collect()
    }
}

fn create_scratch(path: &Path, size: u64, seed: u64) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating scratch file {}", path.display()))?;
    crate::safety::mark_created(path);
    let chunk = 1usize << 20;
    let pool = BufferPool::new(1, chunk, seed)?;
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk as u64) as usize;
        f.write_all(&pool.slot(0)[..n])
            .with_context(|| format!("filling {}", path.display()))?;
        left -= n as u64;
    }
    f.sync_all()?;
    Ok(())
}

/// Bytes an unprivileged user may still write in the file system holding `dir`.
fn available_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct we own; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

fn open_rw(path: &Path, extra: i32) -> std::io::Result<i32> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("path has a NUL byte"))?;
    // SAFETY: NUL-terminated path; the descriptor is closed by the replay worker.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC | extra) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// Run the replay: create the files, replay every thread, remove the files.
pub fn run(trace: &Trace, origin: &str, opts: &ReplayOptions) -> Result<(Job, RunOutcome)> {
    let plan = ReplayPlan::from_trace(trace)?;
    crate::runner::signal::install();
    if let Some(s) = opts.speed {
        if !(s > 0.0 && s.is_finite()) {
            crate::bail_usage!("--speed {s}: expected a factor above 0, e.g. 1.0 or 2.5");
        }
    }
    if !opts.dir.is_dir() {
        crate::bail_usage!("--dir {}: not a directory", opts.dir.display());
    }
    let needed: u64 = plan.sizes.iter().sum();
    if let Some(avail) = available_bytes(&opts.dir) {
        // Leave a margin: the file system needs room for metadata, and so do other users.
        if needed > avail / 10 * 9 {
            crate::bail_usage!(
                "replay needs {} of scratch files in {} but only {} is free: choose another --dir",
                crate::units::format_bytes(needed as f64),
                opts.dir.display(),
                crate::units::format_bytes(avail as f64)
            );
        }
    }
    let mut scratch = Scratch {
        paths: Vec::new(),
        keep: opts.keep,
    };
    let mut targets = Vec::new();
    let mut notes = Vec::new();
    let pid = std::process::id();
    for (i, &size) in plan.sizes.iter().enumerate() {
        let path = opts.dir.join(format!("fsbench-replay-{pid}-{i}.dat"));
        create_scratch(&path, size, 0x5eed ^ i as u64)?;
        scratch.paths.push(path.clone());
        let _ = crate::runner::target::evict(&path);
        notes.push(format!(
            "{} stands for {} ({} bytes)",
            path.display(),
            trace.files[i],
            size
        ));
        targets.push(TargetPlan {
            path,
            kind: TargetKind::File,
            size,
            created: true,
            dio_align: 512,
            reserved: None,
        });
    }
    if plan.skipped_calls > 0 {
        notes.push(format!(
            "{} traced calls not replayed (opens, closes, failed or empty calls)",
            plan.skipped_calls
        ));
    }
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let barrier = Arc::new(Barrier::new(plan.threads.len() + 1));
    let mut handles = Vec::new();
    for (idx, (_tid, steps)) in plan.threads.iter().enumerate() {
        let steps = steps.clone();
        let paths = scratch.paths.clone();
        let barrier = barrier.clone();
        let speed = opts.speed;
        let direct = opts
            .direct
            .then(|| crate::runner::target::dio_alignment(&paths[0]));
        handles.push(
            std::thread::Builder::new()
                .name(format!("fsbench-replay{idx}"))
                .spawn(move || {
                    replay_thread(idx as u32, &paths, &steps, speed, direct, &barrier)
                })?,
        );
    }
    barrier.wait();
    let t0 = Instant::now();
    let mut threads = Vec::new();
    for h in handles {
        threads.push(
            h.join()
                .map_err(|_| anyhow::anyhow!("a replay thread panicked"))?,
        );
    }
    let elapsed_s = t0.elapsed().as_secs_f64();
    let failures: Vec<IoFailure> = threads
        .iter()
        .filter_map(|t: &ThreadOutcome| t.failure.clone())
        .collect();
    let status = if !failures.is_empty() {
        RunStatus::Failed
    } else if crate::runner::signal::interrupted() {
        RunStatus::Partial
    } else {
        RunStatus::Complete
    };
    let seq = plan.sequence();
    let reads = seq.iter().filter(|s| s.1 == TraceOp::Read).count();
    let writes = seq.iter().filter(|s| s.1 == TraceOp::Write).count();
    let mut sizes: Vec<u64> = seq.iter().filter(|s| s.1.is_data()).map(|s| s.4).collect();
    sizes.sort_unstable();
    let job = Job {
        name: opts.name.clone(),
        targets: targets.iter().map(|t| t.path.clone()).collect(),
        threads: plan.threads.len() as u32,
        access: match (reads, writes) {
            (_, 0) => Access::RandRead,
            (0, _) => Access::RandWrite,
            _ => Access::RandRw,
        },
        read_pct: (reads * 100 / (reads + writes).max(1)) as u8,
        // The median I/O size stands for the job's block size; the trace has the real ones.
        block_size: sizes.get(sizes.len() / 2).copied().unwrap_or(0),
        io_count: Some(seq.len() as u64),
        ..Job::default()
    };
    notes.push(format!(
        "replay of {origin}: {} calls in {} thread(s), {}",
        seq.len(),
        plan.threads.len(),
        match opts.speed {
            Some(s) => format!("traced timing x{s}"),
            None => "back to back (no timing)".into(),
        }
    ));
    let outcome = RunOutcome {
        plan: Plan {
            targets,
            cache: if opts.direct {
                CachePolicy::Direct
            } else {
                CachePolicy::Buffered
            },
            notes,
        },
        threads,
        status,
        failures,
        elapsed_s,
        started_unix_s,
        probes: Default::default(),
    };
    drop(scratch);
    Ok((job, outcome))
}

fn replay_thread(
    index: u32,
    paths: &[PathBuf],
    steps: &[Step],
    speed: Option<f64>,
    direct_align: Option<u64>,
    barrier: &Barrier,
) -> ThreadOutcome {
    // Which file this thread used most: it is reported as that file's user.
    let mut uses = vec![0u64; paths.len()];
    for s in steps {
        uses[s.file as usize] += 1;
    }
    let user = uses
        .iter()
        .enumerate()
        .max_by_key(|(_, n)| **n)
        .map(|(i, _)| i)
        .unwrap_or(0);
    let fail = |path: &Path, offset: Option<u64>, message: String| IoFailure {
        user,
        thread: index,
        path: path.display().to_string(),
        offset,
        message,
    };
    let mut sys = SyscallCounts::default();
    let mut files = Vec::with_capacity(paths.len());
    let mut prepared: Result<(), IoFailure> = Ok(());
    for p in paths {
        sys.open += 1;
        let fd = match open_rw(p, 0) {
            Ok(fd) => fd,
            Err(e) => {
                prepared = Err(fail(p, None, format!("open: {e}")));
                break;
            }
        };
        let mut fds = [fd, -1, -1];
        if direct_align.is_some() {
            sys.open += 1;
            match open_rw(p, libc::O_DIRECT) {
                Ok(d) => fds[Route::Direct as usize] = d,
                Err(e) => {
                    prepared = Err(fail(
                        p,
                        None,
                        format!("open with O_DIRECT: {e} (the file system may not support direct I/O; replay without --direct)"),
                    ));
                    files.push(FileHandles { fds, size: 0 });
                    break;
                }
            }
        }
        if direct_align.is_some() {
            // Misaligned I/Os under a direct policy are done data-synchronously buffered
            // (the white paper's rule, as the runner does).
            sys.open += 1;
            match open_rw(p, libc::O_DSYNC) {
                Ok(d) => fds[Route::Fallback as usize] = d,
                Err(e) => {
                    prepared = Err(fail(p, None, format!("open: {e}")));
                    files.push(FileHandles { fds, size: 0 });
                    break;
                }
            }
        }
        files.push(FileHandles { fds, size: 0 });
    }
    let max_len = steps
        .iter()
        .map(|s| s.len as usize)
        .max()
        .unwrap_or(4096)
        .max(1);
    let pool = BufferPool::new(1, max_len, 0xfeed ^ index as u64);
    let fds: Vec<i32> = files.iter().map(|f| f.fds[0]).collect();
    let all_fds: Vec<i32> = files
        .iter()
        .flat_map(|f| f.fds)
        .filter(|&fd| fd >= 0)
        .collect();
    let mut engine = match (prepared, pool) {
        (Ok(()), Ok(pool)) => Some(SyncEngine::new(files, pool)),
        (Err(f), _) => {
            barrier.wait();
            return close_and(
                all_fds,
                ThreadOutcome {
                    user,
                    thread: index,
                    stats: Stats::default(),
                    failure: Some(f),
                },
            );
        }
        (_, Err(e)) => {
            barrier.wait();
            let f = fail(&paths[0], None, format!("allocating buffers: {e}"));
            return close_and(
                all_fds,
                ThreadOutcome {
                    user,
                    thread: index,
                    stats: Stats::default(),
                    failure: Some(f),
                },
            );
        }
    };
    let engine = engine.as_mut().expect("built above");
    let mut done: Vec<Completion> = Vec::with_capacity(2);
    let mut stats = Stats::default();
    let mut failure = None;
    barrier.wait();
    let usage0 = cpu::thread_usage();
    let t0 = Instant::now();
    for s in steps {
        // Ctrl-C ends the replay with what was done (a flag read, no syscall).
        if crate::runner::signal::interrupted() {
            break;
        }
        let intended = match speed {
            Some(sp) => {
                let at = t0 + Duration::from_nanos((s.start_ns as f64 / sp) as u64);
                // Sleep in slices so a long traced pause still answers Ctrl-C.
                loop {
                    let now = Instant::now();
                    if at <= now || crate::runner::signal::interrupted() {
                        break;
                    }
                    std::thread::sleep((at - now).min(Duration::from_millis(100)));
                }
                at
            }
            None => Instant::now(),
        };
        if crate::runner::signal::interrupted() {
            break;
        }
        let start = Instant::now();
        let (result, kind) = match s.op {
            TraceOp::Read | TraceOp::Write => {
                let kind = if s.op == TraceOp::Read {
                    OpKind::Read
                } else {
                    OpKind::Write
                };
                let route = match direct_align {
                    Some(a) if s.offset.is_multiple_of(a) && (s.len as u64).is_multiple_of(a) => {
                        Route::Direct
                    }
                    Some(_) => {
                        stats.buffered_fallback_ops += 1;
                        Route::Fallback
                    }
                    None => Route::Buffered,
                };
                let op = IoOp {
                    kind,
                    file: s.file,
                    route,
                    offset: s.offset,
                    len: s.len,
                    slot: 0,
                };
                stats.inflight[inflight_bucket(1)] += 1;
                let r = engine
                    .submit(&[op], &mut sys)
                    .and_then(|_| engine.reap(1, &mut done, &mut sys));
                let res = match r {
                    Ok(_) => done
                        .first()
                        .map(|c| c.result)
                        .unwrap_or(-(libc::EIO as i64)),
                    Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
                };
                done.clear();
                (res, Some(kind))
            }
            TraceOp::Fsync | TraceOp::Fdatasync => {
                let fd = fds[s.file as usize];
                // SAFETY: fd is open for this thread's whole replay.
                let rc = unsafe {
                    if s.op == TraceOp::Fsync {
                        sys.fsync += 1;
                        libc::fsync(fd)
                    } else {
                        sys.fdatasync += 1;
                        libc::fdatasync(fd)
                    }
                };
                let res = if rc == 0 {
                    0
                } else {
                    -(std::io::Error::last_os_error()
                        .raw_os_error()
                        .unwrap_or(libc::EIO) as i64)
                };
                (res, None)
            }
            _ => continue,
        };
        let end = Instant::now();
        if result < 0 {
            stats.errors += 1;
            let err = std::io::Error::from_raw_os_error((-result) as i32);
            failure = Some(fail(
                &paths[s.file as usize],
                Some(s.offset),
                format!("{} failed: {err}", s.op.name()),
            ));
            break;
        }
        if let Some(kind) = kind {
            stats
                .lat
                .record(end.duration_since(start).as_nanos() as u64);
            stats
                .sched_lat
                .record(end.duration_since(intended).as_nanos() as u64);
            match kind {
                OpKind::Read => {
                    stats.read_ops += 1;
                    stats.read_bytes += result as u64;
                }
                OpKind::Write => {
                    stats.write_ops += 1;
                    stats.write_bytes += result as u64;
                }
            }
        }
    }
    stats.elapsed_s = t0.elapsed().as_secs_f64();
    stats.usage = cpu::thread_usage().since(&usage0);
    stats.syscalls = sys;
    close_and(
        all_fds,
        ThreadOutcome {
            user,
            thread: index,
            stats,
            failure,
        },
    )
}

fn close_and(fds: Vec<i32>, out: ThreadOutcome) -> ThreadOutcome {
    for fd in fds {
        // SAFETY: closing descriptors this replay thread opened, once.
        unsafe { libc::close(fd) };
    }
    out
}
