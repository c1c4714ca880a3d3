//! Replay a trace as a benchmark: every file in the trace becomes a scratch file fsbench
//! creates (at the size the trace needs, filled with non-repeating data, removed afterwards
//! unless kept); each traced thread becomes a worker that issues the same reads, writes,
//! syncs and stats at the same offsets, sizes and order, optionally at the traced times,
//! under optional rate caps and a `--time` limit. Mkdir, unlink and readdir work in one
//! directory the replay creates (unlink removes placeholders it created there), never on the
//! traced paths. Every call goes through the engine the runner lends each thread (its
//! `Issuer`), so system calls are counted as a run's.
//! It is measured like any run (Stats, latency histogram, CPU by getrusage), traced like one
//! (`--trace`), and reported in the one Result envelope (kind `replay`): per file (user) and
//! thread, and per replayed call kind (`read`, `write`, `fsync`, `fdatasync`, `unlink`,
//! `stat`, `mkdir`, `readdir`) as named groups, with the planned I/O sizes as a histogram.
//!
//! Memory follows what the trace uses, not its thread count: each worker's buffer is as large
//! as its own largest call, it keeps one latency sample per call it issues (no histogram per
//! worker while running), descriptors are opened once per file and shared (pread/pwrite do not
//! move a file position), and workers get small stacks. Histograms are built after the run,
//! one per reported thread, and above [`REPORTED_THREADS_MAX`] threads the per-thread figures
//! are reported in groups. The thread count is checked against RLIMIT_NPROC, threads-max and
//! MemAvailable before anything starts. Threads are started, held at the start gate and
//! joined by the runner's driver (`runner::drive`); each is a source of calls that the
//! runner's stepped loop (`runner::source::drive`) drives: `replay_thread`.

mod gather;
mod plan;
mod scratch;
mod thread;
mod verify;

pub use plan::ReplayPlan;

use crate::engine::FileHandles;
use crate::job::{CachePolicy, RateLimit, RateScope, Route};
use crate::result::{Kind, ReplayFile, ReplayInfo, RunResult};
use crate::runner::drive;
use crate::runner::target::{Plan, TargetKind, TargetPlan};
use crate::runner::{IoFailure, RunOutcome, RunStatus, ThreadOutcome};
use crate::trace::Trace;
use anyhow::{Context, Result};
use gather::report_threads;
use scratch::*;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use thread::{replay_thread, Shared, Tally, CALLS};

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
    /// `--time`: stop the replay after this long past the warm-up (what was done is the
    /// result).
    pub time: Option<Duration>,
    /// `--rate-iops`, `--rate-bytes`, `--rate-scope`, as a run's: an extra cap on the traced
    /// timing (every replayed call takes an I/O slot; reads and writes take their bytes).
    pub rate: RateLimit,
    /// `--engine`: the engine every replayed call goes through (sync or uring).
    pub engine: crate::job::EngineKind,
    /// `--ramp`: replay this long first as a warm-up, left out of the Result (`--time`
    /// counts after it).
    #[serde(default)]
    pub ramp: Option<Duration>,
    /// `--ramp-bytes`: each thread first moves this many bytes as a warm-up, left out of
    /// the Result (`--time` counts after it).
    #[serde(default)]
    pub ramp_bytes: Option<u64>,
    /// `--verify`: replayed writes carry bytes that say what they are, and replayed reads
    /// of ranges the same thread wrote earlier in the replay are checked.
    #[serde(default)]
    pub verify: bool,
}

/// At most this many per-thread entries go into the Result: beyond it, threads are reported
/// in groups (a latency histogram takes 36 KiB, and 5,000 pairs of them would dominate the
/// memory of a run whose workers hold a few KiB each).
pub const REPORTED_THREADS_MAX: usize = 64;

/// Stack of a replay worker: it only loops over its steps (the default 2 MiB per thread
/// would be most of a many-thread replay's address space).
pub(super) const WORKER_STACK_BYTES: usize = 256 << 10;

/// Memory one reported histogram pair takes (service and schedule latency).
pub(super) const HIST_PAIR_BYTES: u64 = 2 * crate::stats::hist::HIST_BYTES as u64;

/// What a replay measured, before it becomes a Result: the runner outcome (every thread's
/// exact `Stats`) and [`ReplayParts`]. A distributed replay (`crate::mpi`) merges those of
/// every rank exactly and makes the one Result with [`result_of`], as
/// [`LocalReplays::run`](crate::exec::LocalReplays::run) does for one.
pub struct Replayed {
    pub outcome: RunOutcome,
    pub parts: ReplayParts,
}

/// What a replay measured besides its threads: the exact statistics of each replayed call
/// kind (a named group of the Result), the planned I/O sizes and the trace's description.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ReplayParts {
    /// (call kind, its statistics), for each kind that was replayed.
    pub kinds: Vec<(String, crate::stats::Stats)>,
    /// The planned sizes of the replayed reads and writes.
    pub sizes: crate::stats::hist::LatencyHist,
    /// `replay` of the Result (its size summary and buckets are made from `sizes`).
    pub info: ReplayInfo,
}

/// A trace's scratch files, created and filled once: every replay of it with
/// [`run_prepared`] runs on them (`--repeat`). They are removed when this is dropped, unless
/// kept.
pub(crate) struct Prepared {
    /// The plan, its files renumbered to the scratch files and, with `--verify`, its
    /// checked reads marked.
    plan: ReplayPlan,
    scratch: Scratch,
    targets: Vec<TargetPlan>,
    files: Vec<ReplayFile>,
    /// What every replay on these files notes.
    notes: Vec<String>,
    /// The replay's threads.
    thread_count: usize,
    /// `--verify`: the seed of the files' bytes and of every replay's writes.
    verify_seed: Option<u64>,
    /// Replays begun on the files.
    replays: u64,
}

impl Prepared {
    /// The number of threads each replay runs.
    pub(crate) fn thread_count(&self) -> usize {
        self.thread_count
    }
}

/// Check what a replay of `trace` needs and create its scratch files.
pub(crate) fn prepare(trace: &Trace, opts: &ReplayOptions) -> Result<Prepared> {
    let mut plan = ReplayPlan::from_trace(trace)?;
    crate::runner::signal::install();
    check_options(opts)?;
    let timed =
        opts.speed.is_some() || opts.rate.iops.is_some() || opts.rate.bytes_per_sec.is_some();
    check_thread_limits(plan.threads.len(), plan.run_bytes(timed))?;
    let used_files = map_used_files(&mut plan);
    let verify_seed = opts.verify.then(|| {
        verify::mark_checked_reads(&mut plan.threads);
        crate::runner::verify::run_seed(0)
    });
    let per_file = if opts.direct { 3 } else { 1 };
    ensure_descriptors(used_files.len() as u64 * per_file + plan.threads.len() as u64)?;
    check_space(&plan, &used_files, &opts.dir)?;
    let mut scratch = Scratch {
        paths: Vec::new(),
        dir: None,
        keep: opts.keep,
    };
    let mut notes = Vec::new();
    if opts.verify {
        notes.push(verify::note(&plan.threads));
    }
    let mut files = Vec::new();
    let targets = create_files(
        trace,
        &plan,
        &used_files,
        opts,
        verify_seed,
        &mut scratch,
        &mut files,
    )?;
    notes.extend(file_notes(&files, &opts.dir));
    if used_files.len() < plan.sizes.len() {
        notes.push(format!(
            "{} traced files without replayed calls were not created",
            plan.sizes.len() - used_files.len()
        ));
    }
    if plan.skipped_calls > 0 {
        notes.push(format!(
            "{} traced calls not replayed (opens, closes, failed or empty calls)",
            plan.skipped_calls
        ));
    }
    Ok(Prepared {
        thread_count: plan.threads.len(),
        verify_seed,
        replays: 0,
        plan,
        scratch,
        targets,
        files,
        notes,
    })
}

/// Create the files, replay every thread, remove the files, with the hooks of a
/// [`crate::runner::Gate`] when there are some (a rank of a distributed replay: its
/// threads prepared, the start is the gate's; its I/O over, the files stay until the gate's
/// `after_io` returns), and what it measured before it is a Result.
pub fn run_gated(
    trace: &Trace,
    origin: &str,
    opts: &ReplayOptions,
    gate: Option<crate::runner::Gate>,
    watch: &crate::runner::live::Watching,
) -> Result<Replayed> {
    let mut prepared = prepare(trace, opts)?;
    run_prepared(&mut prepared, false, origin, opts, gate, watch)
    // The scratch files go with `prepared`, after the replay.
}

/// One replay on the scratch files of `prepared`, started cold (their pages dropped);
/// `again`: another replay on them follows (the plan is kept for it). The replay's own
/// directory (for mkdir, unlink and readdir steps) is made anew for each replay; only the
/// last one's is kept, with `--keep`.
pub(crate) fn run_prepared(
    prepared: &mut Prepared,
    again: bool,
    origin: &str,
    opts: &ReplayOptions,
    gate: Option<crate::runner::Gate>,
    watch: &crate::runner::live::Watching,
) -> Result<Replayed> {
    // The last replay takes the threads' steps rather than a copy of them.
    let threads = match again {
        true => prepared.plan.threads.clone(),
        false => std::mem::take(&mut prepared.plan.threads),
    };
    prepared.replays += 1;
    let verify_generation = prepared.replays;
    let plan = &prepared.plan;
    let scratch = &prepared.scratch;
    let mut notes = prepared.notes.clone();
    let own_dir = own_dir(plan, opts, opts.keep && !again)?;
    if let Some(dir) = &own_dir.dir {
        notes.push(format!(
            "{} stands for the traced directories: mkdir, unlink and readdir work in it (unlink removes files the replay created there)",
            dir.display()
        ));
    }
    start_cold(&scratch.paths);
    let targets = prepared.targets.clone();
    let files = prepared.files.clone();
    let direct = match (opts.direct, scratch.paths.first()) {
        (true, Some(p)) => Some(crate::runner::target::dio_alignment(p)),
        _ => None,
    };
    let fds = open_shared(&scratch.paths, direct.is_some())?;
    let dir_fd = match &own_dir.dir {
        Some(d) => Some(DirFd::open(d)?),
        None => None,
    };
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let nthreads = threads.len();
    let mut shared = shared_settings(
        opts,
        &scratch.paths,
        own_dir.dir.as_deref(),
        direct,
        dir_fd.as_ref(),
        nthreads,
    );
    shared.verify_seed = prepared.verify_seed;
    shared.verify_generation = verify_generation;
    let total_steps: u64 = threads.iter().map(|t| t.steps.len() as u64).sum();
    let thread_info: Vec<(usize, u64)> = threads.iter().map(|t| (t.user, t.data_ops)).collect();
    let gate = gate.unwrap_or_else(crate::runner::Gate::none);
    // The host at the edges of the replay's window (`host` in the Result).
    let host = crate::probe::host::HostSampler::start(&[]);
    let (tallies, elapsed_s) = run_threads(threads, &fds, shared, gate.start, watch)?;
    let host = host.finish();
    (gate.after_io)();
    drop(fds);
    drop(dir_fd);
    let done: u64 = tallies.iter().map(|t| t.done).sum();
    let warm: u64 = tallies.iter().map(|t| t.warm_calls).sum();
    let timed_out = tallies.iter().any(|t| t.timed_out);
    let ramped = tallies.iter().any(|t| t.ramped);
    // After a warm-up the replay lasted as long as its longest measured thread.
    let elapsed_s = if ramped {
        tallies
            .iter()
            .map(|t| t.stats.elapsed_s)
            .fold(0.0, f64::max)
    } else {
        elapsed_s
    };
    let (threads, grouped, kinds) = report_threads(tallies, &thread_info, elapsed_s);
    if grouped {
        notes.push(format!(
            "{nthreads} replay threads are reported in {} groups (per-thread figures of more than {REPORTED_THREADS_MAX} threads are merged)",
            threads.len()
        ));
    }
    notes.push(format!(
        "replay of {origin}: {total_steps} calls in {nthreads} thread(s), {}",
        match opts.speed {
            Some(s) => format!("traced timing x{s}"),
            None => "back to back (no timing)".into(),
        }
    ));
    if let (Some(ramp), true) = (opts.ramp, ramped) {
        notes.push(ramp_note(
            &format!("{} s", ramp.as_secs_f64()),
            "--ramp",
            warm,
            done,
        ));
    }
    if let (Some(b), true) = (opts.ramp_bytes, ramped) {
        let span = format!("{b} bytes per thread");
        notes.push(ramp_note(&span, "--ramp-bytes", warm, done));
    }
    if let Some(note) = limit_note(opts, done, total_steps, timed_out) {
        notes.push(note);
    }
    let mut outcome = outcome_of(opts, targets, threads, notes, elapsed_s, started_unix_s);
    outcome.status_interval_ns = watch.interval_ns();
    outcome.host = Some(host);
    let sizes = plan.size_hist();
    let info = ReplayInfo {
        trace: origin.to_string(),
        calls: total_steps,
        threads: nthreads as u64,
        speed: opts.speed,
        skipped_calls: plan.skipped_calls,
        io_size_bytes: Default::default(),
        io_size_hist_bytes: Vec::new(),
        files,
    };
    drop(own_dir);
    Ok(Replayed {
        outcome,
        parts: ReplayParts { kinds, sizes, info },
    })
}

/// What the notes say of the scratch files: each mapping while there are few, else one line
/// (the whole mapping is in the Result's `replay.files`).
fn file_notes(files: &[ReplayFile], dir: &std::path::Path) -> Vec<String> {
    const LISTED_MAX: usize = 3;
    if files.len() <= LISTED_MAX {
        return files
            .iter()
            .map(|f| {
                format!(
                    "{} stands for {} ({} bytes)",
                    f.scratch, f.traced, f.size_bytes
                )
            })
            .collect();
    }
    let bytes: u64 = files.iter().map(|f| f.size_bytes).sum();
    vec![format!(
        "{} scratch files in {} ({} bytes) stand for the traced files they replace (the mapping: replay.files in the JSON)",
        files.len(),
        dir.display(),
        bytes
    )]
}

/// The options no flag parser could check alone.
fn check_options(opts: &ReplayOptions) -> Result<(), crate::error::UsageError> {
    if let Some(s) = opts.speed {
        if !(s > 0.0 && s.is_finite()) {
            crate::bail_usage!("--speed {s}: expected a factor above 0, e.g. 1.0 or 2.5");
        }
    }
    if !opts.dir.is_dir() {
        crate::bail_usage!("--dir {}: not a directory", opts.dir.display());
    }
    Ok(())
}

/// Only the files some thread reads, writes, syncs or stats become scratch files (a trace
/// of a program that opens thousands of files and reads a few must not create thousands):
/// renumber the threads' files and users to scratch file indexes, and return the trace file
/// index of each scratch file.
fn map_used_files(plan: &mut ReplayPlan) -> Vec<usize> {
    let mut target_of = vec![u32::MAX; plan.sizes.len()];
    let mut used_files: Vec<usize> = Vec::new();
    for th in &plan.threads {
        for &f in &th.files {
            if target_of[f as usize] == u32::MAX {
                target_of[f as usize] = used_files.len() as u32;
                used_files.push(f as usize);
            }
        }
    }
    used_files.sort_unstable();
    for (t, &f) in used_files.iter().enumerate() {
        target_of[f] = t as u32;
    }
    for th in plan.threads.iter_mut() {
        for f in th.files.iter_mut() {
            *f = target_of[*f as usize];
        }
        // A thread that only works on directories is reported under the first file.
        th.user = match target_of.get(th.user) {
            Some(&t) if t != u32::MAX => t as usize,
            _ => 0,
        };
    }
    used_files
}

/// Refuse scratch files the file system under `dir` has no room for.
fn check_space(
    plan: &ReplayPlan,
    used_files: &[usize],
    dir: &std::path::Path,
) -> Result<(), crate::error::UsageError> {
    let needed: u64 = used_files
        .iter()
        .fold(0u64, |a, &f| a.saturating_add(plan.sizes[f]));
    if let Some(avail) = available_bytes(dir) {
        // Leave a margin: the file system needs room for metadata, and so do other users.
        if needed > avail / 10 * 9 {
            crate::bail_usage!(
                "replay needs {} of scratch files in {} but only {} is free: choose another --dir",
                crate::units::format_bytes(needed as f64),
                dir.display(),
                crate::units::format_bytes(avail as f64)
            );
        }
    }
    Ok(())
}

/// Create the scratch files (and the replay's own directory when a step needs one), flush
/// them once and drop their pages so the replay starts cold. Returns the targets.
fn create_files(
    trace: &Trace,
    plan: &ReplayPlan,
    used_files: &[usize],
    opts: &ReplayOptions,
    verify_seed: Option<u64>,
    scratch: &mut Scratch,
    files: &mut Vec<ReplayFile>,
) -> Result<Vec<TargetPlan>> {
    let pid = std::process::id();
    // What a killed replay left here (its scratch files, by their record, never by name).
    for note in scratch::remove_dead_replays(&opts.dir) {
        crate::runner::say(&format!("fsbench: note: {note}"));
    }
    let mut targets = Vec::new();
    for (target, &i) in used_files.iter().enumerate() {
        let size = plan.sizes[i];
        let path = opts.dir.join(format!("fsbench-replay-{pid}-{i}.dat"));
        // With --verify the file holds what the verify hooks call its generation 0.
        let fill = match verify_seed {
            Some(seed) => Fill::Stream(verify::fill_key(seed, target as u32)),
            None => Fill::Pattern(0x5eed ^ i as u64),
        };
        // Pushed only once created: a name that was taken is never ours to remove.
        create_scratch(&path, size, fill)?;
        scratch.paths.push(path.clone());
        files.push(ReplayFile {
            traced: trace.files[i].clone(),
            scratch: path.display().to_string(),
            size_bytes: size,
        });
        targets.push(TargetPlan {
            path,
            kind: TargetKind::File,
            size,
            created: true,
            dio_align: 512,
            reserved: None,
        });
    }
    Ok(targets)
}

/// The replay's own directory when a step needs one, created new (and marked as this
/// replay's); removed when the returned value is dropped unless `keep`.
fn own_dir(plan: &ReplayPlan, opts: &ReplayOptions, keep: bool) -> Result<Scratch> {
    let mut own = Scratch {
        paths: Vec::new(),
        dir: None,
        keep,
    };
    if plan.has_dir_ops {
        let dir = opts
            .dir
            .join(format!("fsbench-replay-{}.d", std::process::id()));
        scratch::create_scratch_dir(&dir)?;
        own.dir = Some(dir);
    }
    Ok(own)
}

/// One flush for all the scratch files (not an fsync each; what an earlier replay wrote
/// too), then their pages are dropped, so that every replay starts cold.
fn start_cold(paths: &[PathBuf]) {
    if let Some(p) = paths.first() {
        if let Ok(f) = std::fs::File::open(p) {
            // SAFETY: syncfs on a descriptor we own.
            unsafe { libc::syncfs(std::os::unix::io::AsRawFd::as_raw_fd(&f)) };
        }
    }
    for p in paths {
        let _ = crate::runner::target::evict(p);
    }
}

/// Each used file is opened once; the threads share the descriptors.
fn open_shared(paths: &[PathBuf], direct: bool) -> Result<SharedFds> {
    let mut shared = SharedFds(Vec::with_capacity(paths.len()));
    for p in paths {
        let fd = open_rw(p, 0).with_context(|| format!("opening {}", p.display()))?;
        shared.0.push(FileHandles {
            fds: [fd, -1, -1],
            size: 0,
        });
        let h = shared.0.last_mut().expect("just pushed");
        if direct {
            // Misaligned I/Os under a direct policy are done data-synchronously buffered
            // (the white paper's rule, as the runner does).
            h.fds[Route::Direct as usize] = open_rw(p, libc::O_DIRECT).with_context(|| {
                format!("opening {} with O_DIRECT (the file system may not support direct I/O; replay without --direct)", p.display())
            })?;
            h.fds[Route::Fallback as usize] =
                open_rw(p, libc::O_DSYNC).with_context(|| format!("opening {}", p.display()))?;
        }
    }
    Ok(shared)
}

/// What every thread shares: pacing (each thread's share of a total rate), the deadline,
/// the replay's directory and the names of the files.
fn shared_settings(
    opts: &ReplayOptions,
    paths: &[PathBuf],
    own_dir: Option<&std::path::Path>,
    direct_align: Option<u64>,
    dir_fd: Option<&DirFd>,
    nthreads: usize,
) -> Shared {
    let share = match opts.rate.scope {
        RateScope::Thread => 1.0,
        RateScope::Total => nthreads.max(1) as f64,
    };
    let mut names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    names.push(own_dir.map(|d| d.display().to_string()).unwrap_or_default());
    Shared {
        engine: opts.engine,
        speed: opts.speed,
        direct_align,
        iops: opts.rate.iops.map(|r| r as f64 / share),
        bytes_per_sec: opts.rate.bytes_per_sec.map(|r| r as f64 / share),
        workers: nthreads as u64,
        time: opts.time,
        ramp: opts.ramp,
        ramp_bytes: opts.ramp_bytes.unwrap_or(0),
        dir_fd: dir_fd.map_or(-1, |d| d.0),
        names: Arc::new(names),
        interval_ns: None,
        board: None,
        trace: None,
        verify_seed: None,
        verify_generation: 1,
    }
}

/// Start one thread per traced thread through the runner's driver, open the gate, and join
/// them: their tallies and the wall time from the gate.
fn run_threads(
    plans: Vec<plan::ThreadPlan>,
    fds: &SharedFds,
    mut shared: Shared,
    start: crate::runner::StartHook,
    watch: &crate::runner::live::Watching,
) -> Result<(Vec<Tally>, f64)> {
    let nthreads = plans.len();
    // The live line (`--progress`): each thread publishes its counters on the board.
    shared.board = watch.open_board(nthreads);
    shared.interval_ns = watch.interval_ns();
    shared.trace = watch.trace.clone();
    let shared = Arc::new(shared);
    let display = crate::runner::live_line::Display::start(
        watch,
        shared.board.clone(),
        true,
        crate::runner::live_line::Bounds {
            time_s: shared.deadline().map(|t| t.as_secs_f64()),
            ops: Some(plans.iter().map(|p| p.data_ops).sum()),
        },
    );
    let bodies = plans.into_iter().enumerate().map(|(idx, th)| {
        let files: Vec<FileHandles> = th
            .files
            .iter()
            .map(|&f| FileHandles {
                fds: fds.0[f as usize].fds,
                size: 0,
            })
            .collect();
        let shared = shared.clone();
        let body: drive::Body<Tally> =
            Box::new(move |gate| Some(replay_thread(idx as u32, th, files, &shared, gate)));
        (format!("fsbench-replay{idx}"), body)
    });
    let crew = drive::start_threads(bodies, WORKER_STACK_BYTES, &drive::spawn_thread).map_err(
        |f| {
            anyhow::anyhow!(
                "cannot start replay thread {} of {nthreads}: {} (limits: ulimit -u, kernel.threads-max, memory)",
                f.index + 1,
                f.error
            )
        },
    )?;
    if let Some(d) = &display {
        d.phase(crate::runner::live_line::Phase::Running);
    }
    let Some(t0) = crew.open(start) else {
        // Called off at the start (another rank of a distributed replay could not start).
        let _ = crew.join();
        if let Some(d) = display {
            d.finish();
        }
        anyhow::bail!("the replay was called off before it started");
    };
    let tallies = crew.join();
    if let Some(d) = display {
        d.finish();
    }
    Ok((tallies?, t0.elapsed().as_secs_f64()))
}

/// What `--ramp` left out, for the Result's notes: the warm-up and its calls (`warm` of the
/// `done` calls issued).
fn ramp_note(span: &str, flag: &str, warm: u64, done: u64) -> String {
    if warm >= done {
        format!("the replay ended within its warm-up of {span} ({flag}): nothing was measured")
    } else {
        format!(
            "a warm-up of {span} ({flag}) was left out of the figures: its {warm} of the {done} calls issued"
        )
    }
}

/// What `--time` and the rate caps did, for the Result's notes.
fn limit_note(opts: &ReplayOptions, done: u64, total: u64, timed_out: bool) -> Option<String> {
    let mut parts = Vec::new();
    if let (Some(t), true) = (opts.time, timed_out) {
        parts.push(format!(
            "--time {} ended the replay after {done} of {total} calls",
            crate::units::format_duration(t.as_secs_f64())
        ));
    }
    let r = &opts.rate;
    if r.iops.is_some() || r.bytes_per_sec.is_some() {
        let mut caps = Vec::new();
        if let Some(i) = r.iops {
            caps.push(format!("{i} calls/s"));
        }
        if let Some(b) = r.bytes_per_sec {
            caps.push(format!("{} /s", crate::units::format_bytes(b as f64)));
        }
        let scope = match r.scope {
            RateScope::Thread => "per thread",
            RateScope::Total => "in total",
        };
        parts.push(format!("rate capped at {} {scope}", caps.join(" and ")));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The runner outcome of the threads.
fn outcome_of(
    opts: &ReplayOptions,
    targets: Vec<TargetPlan>,
    threads: Vec<ThreadOutcome>,
    notes: Vec<String>,
    elapsed_s: f64,
    started_unix_s: f64,
) -> RunOutcome {
    let failures: Vec<IoFailure> = threads.iter().filter_map(|t| t.failure.clone()).collect();
    let status = if !failures.is_empty() {
        RunStatus::Failed
    } else if crate::runner::signal::interrupted() {
        RunStatus::Partial
    } else {
        RunStatus::Complete
    };
    RunOutcome {
        plan: Plan {
            part: None,
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
        status_interval_ns: None,
        steady: None,
        host: None,
        stability_grid_ns: None,
        host_ticks: Vec::new(),
    }
}

/// The one Result envelope (kind `replay`) named `name` around a replay's outcome: its
/// threads, one named group per replayed call kind, and what was replayed.
pub fn result_of(name: &str, outcome: RunOutcome, parts: ReplayParts) -> RunResult {
    let paths: Vec<&PathBuf> = outcome.plan.targets.iter().map(|t| &t.path).collect();
    let mut result = RunResult::new(
        Kind::Replay,
        name,
        outcome.started_unix_s,
        crate::probe::env::collect(&paths),
    );
    result.fill_from_outcome(&outcome);
    crate::explain::refresh(&mut result);
    result.groups = gather::groups_of(&parts.kinds);
    let ReplayParts {
        sizes, mut info, ..
    } = parts;
    info.io_size_bytes = sizes.summary();
    info.io_size_hist_bytes = sizes.to_buckets();
    result.replay = Some(info);
    result
}
