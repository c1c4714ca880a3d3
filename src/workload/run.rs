//! Running a loaded workload: execute its script (create files, run/psrun, sleep, echo,
//! eventgen), start every process instance as a real process (`fsbench __worker` with a workload
//! spec, started by the runner's driver, which runs its thread instances as threads) around one shared arena, watch the stop conditions
//! (time, `set mode quit alldone|firstdone`, out of files, errors, Ctrl-C, no progress), print
//! psrun lines, collect and merge the statistics, and remove the filesets unless `--keep`.

use super::ast::QuitMode;
use super::fileset::{self, Prepared, SetLayout};
use super::interp::{ThreadId, ThreadOutcome};
use super::model::{Cmd, Model};
use super::report::{RunPart, WorkloadDoc};
use super::shared::{futex_wake_all, now_ns, Arena, Layout, STOP_NONE, STOP_NORMAL};
use super::worker::{WorkerSpec, THREAD_STACK as WORKER_STACK};
use super::Source;
use crate::result::{FilesetInfo, PsrunLine, RunResult};
use crate::runner::signal;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::process::Child;
use std::sync::atomic::Ordering::*;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Overrides the duration of every `run`/`psrun`.
    pub time: Option<Duration>,
    pub keep: bool,
    /// Run process instances as threads of this process (debugging; not Filebench's model).
    pub in_process: bool,
    /// Where echo and psrun lines go: stdout (text output) or stderr.
    pub lines_to_stdout: bool,
    /// How long every live thread may sit in semblock/block before the run is declared stuck.
    pub stall_after: Duration,
    /// How a `psrun` progress line reads, supplied by the front end (the report layer formats;
    /// this module only measures). None: lines are kept in the Result but not printed.
    pub progress: Option<ProgressLine>,
    /// The engine every workload thread issues its system calls through.
    pub engine: crate::job::EngineKind,
    /// `--rate-iops` / `--rate-bytes` / `--rate-scope`: paces every thread's data flowops.
    pub rate: crate::job::RateLimit,
    /// `--verify`: writes carry the file stream, reads are checked (`super::verify`).
    pub verify: bool,
    /// The filesets are another part's of a larger run (a rank with `--reorder-ranks` runs
    /// over the filesets another rank laid out, `reuse` on): at the end, or on an error, they
    /// are left in place with what this run created in them recorded in their manifest, for
    /// the part that laid them out to remove (`remove_laid_out`); no "kept" note.
    pub leave_for_owner: bool,
}

/// Turns one progress line (and the ops/s since the start, when asked for) into text.
pub type ProgressLine = fn(&PsrunLine, Option<f64>) -> String;

/// Why a run stopped when a distributed run's stonewall stopped it (`crate::mpi`).
pub(crate) const STONEWALL_STOP: &str = "stopped at the stonewall";

/// How long a run may wait when none is given (Filebench's default for `run`).
const DEFAULT_RUN_S: f64 = 60.0;

fn say(opts: &Options, line: &str) {
    // Progress lines must never panic a run (a full disk behind a redirection): a line that
    // cannot be written is dropped, and the final report says so through its own writer.
    if opts.lines_to_stdout {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    } else {
        // Above a study's progress line, never into it.
        crate::runner::live_line::println(line);
    }
}

/// Thread-instance slots: (process, process instance, thread, thread instance) in order.
fn thread_ids(model: &Model) -> Vec<ThreadId> {
    let mut out = Vec::new();
    for (pi, p) in model.processes.iter().enumerate() {
        for pinst in 0..p.instances {
            for (ti, t) in p.threads.iter().enumerate() {
                for tinst in 0..t.instances {
                    out.push(ThreadId {
                        process: pi,
                        process_instance: pinst,
                        thread: ti,
                        thread_instance: tinst,
                        slot: out.len(),
                    });
                }
            }
        }
    }
    out
}

pub fn arena_layout(model: &Model) -> Layout {
    let sets: Vec<usize> = model.filesets.iter().map(|f| f.count() as usize).collect();
    Layout::new(model.sems.len(), model.total_threads(), &sets)
}

/// `system "cmd"`: print the command, then run it with `sh -c` as Filebench does (its exit
/// status is reported, not fatal, as in Filebench).
fn run_system(opts: &Options, cmd: &str) -> Result<()> {
    say(opts, &format!("system: {cmd}"));
    let st = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .status()
        .with_context(|| format!("running system command '{cmd}'"))?;
    if !st.success() {
        say(opts, &format!("system: '{cmd}' exited with {st}"));
    }
    Ok(())
}

/// Run a workload's script and return its result (filesets removed unless `keep`).
pub fn execute(src: &Source, model: &Model, opts: &Options) -> Result<RunResult> {
    execute_gated(src, model, opts, None).map(|e| e.result)
}

/// A measured run of a workload as its threads reported it, for a caller that merges the
/// runs of several hosts (`crate::mpi`): every thread's outcome, exact histograms included.
pub struct RunRecord {
    pub outcomes: Vec<ThreadOutcome>,
    pub duration_s: f64,
    pub stop_reason: String,
    pub psrun: Vec<PsrunLine>,
    pub started_unix_s: f64,
}

/// What [`execute_gated`] gives back: the Result, and (with gates) the record of every run
/// measured, in the script's order.
pub struct Executed {
    pub result: RunResult,
    pub runs: Vec<RunRecord>,
}

/// The hooks of one `run` of a larger run (`runner::Gate`: every thread ready, may it
/// start? its I/O is over, wait before going on), made afresh for every `run`.
pub(crate) type GateMaker<'a> = &'a mut dyn FnMut() -> crate::runner::Gate;

/// [`execute`] as one part of a larger run (a rank of a distributed run): every `run` of
/// the script passes the hooks of a gate from `gates`.
pub(crate) fn execute_gated(
    src: &Source,
    model: &Model,
    opts: &Options,
    mut gates: Option<GateMaker<'_>>,
) -> Result<Executed> {
    let mut records = Vec::new();
    signal::install();
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    // One run per directory: a second workload would delete this one's live fileset.
    let _locks = lock_dirs(model)?;
    preflight(model, opts)?;
    let mut result = WorkloadDoc::new(src, model, started_unix_s);
    let mut layouts: Vec<SetLayout> = Vec::new();
    for spec in &model.filesets {
        match fileset::layout(spec) {
            Ok(l) => layouts.push(l),
            Err(e) if fileset::is_interrupted(&e) => {
                result.note(format!("{e}"));
                result.finish(true);
                return Ok(Executed {
                    result: result.result,
                    runs: records,
                });
            }
            Err(e) => return Err(e),
        }
    }
    check_space(model, &layouts)?;
    let arena =
        Arena::create(arena_layout(model)).context("creating the shared memory for the run")?;
    if opts.verify {
        super::verify::enable(&arena);
    }
    let mut prepared: Vec<Prepared> = Vec::new();
    let outcome = (|| -> Result<()> {
        let mut script = model.script.clone();
        if !model.processes.is_empty() && !script.iter().any(|c| matches!(c, Cmd::Run { .. })) {
            result.note(
                "the workload has no run command: running it as `run` (60 s unless --time)".into(),
            );
            script.push(Cmd::Run {
                secs: None,
                psrun: None,
            });
        }
        for cmd in &script {
            if signal::interrupted() {
                break;
            }
            match cmd {
                Cmd::CreateFiles => {
                    ensure_prepared(model, &layouts, &arena, &mut prepared, &mut result, opts)?
                }
                Cmd::Echo(t) => say(opts, t),
                Cmd::System(c) => run_system(opts, c)?,
                Cmd::Sleep(s) => {
                    let until = Instant::now() + Duration::from_secs_f64(*s);
                    while Instant::now() < until && !signal::interrupted() {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                Cmd::Eventgen(rate) => arena.set_event_rate(*rate),
                Cmd::Run { secs, psrun } => {
                    ensure_prepared(model, &layouts, &arena, &mut prepared, &mut result, opts)?;
                    let secs = opts
                        .time
                        .map(|d| d.as_secs_f64())
                        .or(*secs)
                        .unwrap_or(DEFAULT_RUN_S);
                    let number = result.result.workload.as_ref().map_or(0, |w| w.runs.len()) + 1;
                    let ran = one_run(
                        src,
                        model,
                        &layouts,
                        &arena,
                        secs,
                        *psrun,
                        number as u32,
                        opts,
                        gates.as_mut().map(|make| make()),
                    )?;
                    // Called off by the other parts of a larger run: before the first run
                    // because one could not start, later because one's script ended.
                    let Some((run, outcomes)) = ran else {
                        if number == 1 {
                            bail!("called off: another rank could not start");
                        }
                        result.note(format!(
                            "run {number} called off: another rank's script ended before it"
                        ));
                        break;
                    };
                    // Only a larger run merges the threads' outcomes; on its own the
                    // Result holds all it needs.
                    if gates.is_some() {
                        records.push(RunRecord {
                            outcomes,
                            duration_s: run.outline.duration_s,
                            stop_reason: run.outline.stop_reason.clone(),
                            psrun: run.outline.psrun.clone(),
                            started_unix_s: run.outline.started_unix_s,
                        });
                    }
                    if result.add_run(run) {
                        break;
                    }
                }
            }
        }
        Ok(())
    })();
    finish_filesets(&prepared, &layouts, &arena, opts, &mut result);
    match outcome {
        Ok(()) => result.finish(signal::interrupted()),
        Err(e) if fileset::is_interrupted(&e) => {
            result.note(format!("{e}"));
            result.finish(true);
        }
        Err(e) if crate::error::is_usage(&e) => return Err(e),
        Err(e) => {
            // A failed run still produces its document (status failed, the error in it).
            let msg = format!("{e:#}");
            eprintln!("fsbench workload: {msg}");
            result.note(format!("failed: {msg}"));
            result.finish(signal::interrupted());
            result.fail();
        }
    }
    Ok(Executed {
        result: result.result,
        runs: records,
    })
}

/// After the script: keep the prepared filesets (`--keep`, or left for the part of a larger
/// run that laid them out) or remove what fsbench created of them, noting in the Result what
/// was kept or left behind.
fn finish_filesets(
    prepared: &[Prepared],
    layouts: &[SetLayout],
    arena: &Arena,
    opts: &Options,
    result: &mut WorkloadDoc,
) {
    if opts.keep || opts.leave_for_owner {
        for (i, p) in prepared.iter().enumerate() {
            if let Err(e) = fileset::keep(p, &layouts[i], &arena, i) {
                result.note(format!("keeping {}: {e:#}", p.root.display()));
            }
        }
        if opts.keep && !prepared.is_empty() {
            result.note(format!(
                "kept the filesets (--keep): {}",
                prepared
                    .iter()
                    .map(|p| p.root.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    } else {
        // Only what fsbench created is removed; what is left is reported in one note.
        let (mut left, mut first) = (0u64, None);
        for (i, p) in prepared.iter().enumerate() {
            match fileset::remove(p, &layouts[i], &arena, i) {
                Ok(Some(note)) => {
                    let n: u64 = note
                        .split_whitespace()
                        .nth(1)
                        .and_then(|x| x.parse().ok())
                        .unwrap_or(1);
                    left += n;
                    first.get_or_insert(note.split(": first ").nth(1).unwrap_or("").to_string());
                }
                Ok(None) => {}
                Err(e) => result.note(format!("cleanup: {e:#}")),
            }
        }
        if left > 0 {
            let note = format!(
                "left {left} entries fsbench did not create: first {}",
                first.unwrap_or_default()
            );
            eprintln!("fsbench workload: {note}");
            result.note(note);
        }
    }
}

/// What [`lay_out_only`] laid out: each fileset as the Result lists it, and whether this
/// process made its root (so it may remove it where xattrs do not work).
pub(crate) struct LaidOut {
    pub filesets: Vec<FilesetInfo>,
    created_roots: Vec<bool>,
}

/// Lay out a workload's filesets, untimed, and leave them on disk with their manifests for
/// another part of a larger run to run over (`crate::mpi` with `--reorder-ranks`: rank r
/// lays out its own directory, rank r - shift runs in it with `reuse` on). On an error what
/// was laid out is removed again (unless `opts.keep`). [`remove_laid_out`] removes them
/// once every part is done with them.
pub(crate) fn lay_out_only(src: &Source, model: &Model, opts: &Options) -> Result<LaidOut> {
    let _locks = lock_dirs(model)?;
    let mut layouts: Vec<SetLayout> = Vec::new();
    for spec in &model.filesets {
        layouts.push(fileset::layout(spec)?);
    }
    check_space(model, &layouts)?;
    let arena =
        Arena::create(arena_layout(model)).context("creating the shared memory for the layout")?;
    let mut doc = WorkloadDoc::new(src, model, 0.0);
    let mut prepared: Vec<Prepared> = Vec::new();
    // These filesets are this process's own: on an error they go (unless --keep).
    let own = Options {
        leave_for_owner: false,
        ..opts.clone()
    };
    let laid = ensure_prepared(model, &layouts, &arena, &mut prepared, &mut doc, &own);
    // Left with their manifests (what was laid out is recorded there): the run over them,
    // and the removal after it, go by those.
    let leave = Options {
        leave_for_owner: true,
        ..own.clone()
    };
    match laid {
        Ok(()) => finish_filesets(&prepared, &layouts, &arena, &leave, &mut doc),
        Err(e) => {
            finish_filesets(&prepared, &layouts, &arena, &own, &mut doc);
            return Err(e);
        }
    }
    Ok(LaidOut {
        filesets: doc.result.workload.map(|w| w.filesets).unwrap_or_default(),
        created_roots: prepared.iter().map(|p| p.created_root).collect(),
    })
}

/// Remove the filesets [`lay_out_only`] laid out (`model` is the one it was given), now that
/// every part of the run is done with them: only what their manifests list (what was laid
/// out, and what the run over them created), by identity. The notes of what was left.
pub(crate) fn remove_laid_out(model: &Model, laid: &LaidOut) -> Vec<String> {
    let mut notes = Vec::new();
    let _locks = match lock_dirs(model) {
        Ok(l) => l,
        Err(e) => return vec![format!("cleanup: {e:#}")],
    };
    for (spec, &created_root) in model.filesets.iter().zip(&laid.created_roots) {
        match fileset::remove_left(spec, created_root) {
            Ok(Some(n)) => notes.push(n),
            Ok(None) => {}
            Err(e) => notes.push(format!("cleanup: {e:#}")),
        }
    }
    for n in &notes {
        eprintln!("fsbench workload: {n}");
    }
    notes
}

/// Lock every directory a fileset is laid out in, for the whole run (but those the ranks of
/// a run share: rank 0 locks them for all).
fn lock_dirs(model: &Model) -> Result<Vec<crate::guard::DirLock>> {
    let mut dirs: Vec<std::path::PathBuf> = model
        .filesets
        .iter()
        // Directories shared by the ranks of a run: rank 0 holds their locks (crate::mpi).
        .filter(|f| f.shared_rank.is_none())
        .filter_map(|f| f.root.parent().map(|p| p.to_path_buf()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs.iter().map(|d| crate::guard::lock_dir(d)).collect()
}

/// Memory every workload thread needs besides its stack: the I/O buffer interp allocates.
fn thread_buffer(t: &super::model::ThreadSpec) -> u64 {
    fn max_io(fs: &[super::model::Flowop]) -> f64 {
        fs.iter()
            .map(|f| f.iosize.upper_hint().max(max_io(&f.inner)))
            .fold(0.0, f64::max)
    }
    let io = max_io(&t.flowops);
    let io = if io.is_finite() {
        io.max(0.0) as u64
    } else {
        u64::MAX
    };
    t.memsize.max(io).min(256 << 20)
}

/// Memory every workload thread needs whatever its I/O size: its stack and one latency
/// histogram per flowop (created before the start signal).
fn thread_fixed(t: &super::model::ThreadSpec) -> u64 {
    let hists = super::model::flatten(&t.flowops).len() * crate::stats::hist::HIST_BYTES;
    (WORKER_STACK + hists) as u64
}

fn read_limit(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// MemAvailable from /proc/meminfo, in bytes.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Refuse, before anything is created or started, a workload that cannot run here: more
/// processes and threads than the task limits allow, or more memory than is available.
fn preflight(model: &Model, opts: &Options) -> Result<()> {
    let mut threads: u64 = 0;
    let mut procs: u64 = 0;
    let mut buffers: u64 = 0;
    for p in &model.processes {
        let per: u64 = p
            .threads
            .iter()
            .fold(0u64, |a, t| a.saturating_add(t.instances));
        threads = threads.saturating_add(p.instances.saturating_mul(per));
        procs = procs.saturating_add(p.instances);
        let per_buf = p.threads.iter().fold(0u64, |a, t| {
            a.saturating_add(
                t.instances
                    .saturating_mul(thread_buffer(t).saturating_add(thread_fixed(t))),
            )
        });
        buffers = buffers.saturating_add(p.instances.saturating_mul(per_buf));
    }
    if opts.in_process {
        procs = 0;
    }
    let tasks = threads.saturating_add(procs);
    let mut limits: Vec<(u64, String)> = Vec::new();
    // SAFETY: getrlimit fills a struct we own.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut rl) } == 0
        && rl.rlim_cur != libc::RLIM_INFINITY
    {
        limits.push((rl.rlim_cur as u64, "RLIMIT_NPROC (ulimit -u)".into()));
    }
    if let Some(m) = read_limit("/proc/sys/kernel/threads-max") {
        limits.push((m, "kernel.threads-max".into()));
    }
    if let Some(m) = read_limit("/proc/sys/kernel/pid_max") {
        limits.push((m, "kernel.pid_max".into()));
    }
    if let Some((limit, what)) = limits.iter().min_by_key(|l| l.0) {
        if tasks >= *limit {
            crate::bail_usage!(
                "the workload starts {procs} processes and {threads} threads ({tasks} tasks), more than {what} allows ({limit}): lower instances or nthreads"
            );
        }
    }
    let mut sets: u64 = 0;
    let mut per_proc: u64 = 0;
    for f in &model.filesets {
        sets = sets.saturating_add(fileset::estimate_bytes(f));
        per_proc = per_proc.saturating_add(fileset::estimate_layout_bytes(f));
    }
    let need = buffers
        .saturating_add(sets)
        .saturating_add(procs.saturating_mul(per_proc.saturating_add(8 << 20)));
    if let Some(avail) = mem_available() {
        if need > avail {
            let entries: u64 = model.filesets.iter().map(|f| f.count()).sum();
            crate::bail_usage!(
                "the workload needs about {} of memory ({threads} threads x {} stack, buffers and histograms, {entries} fileset entries at about {:.0} bytes each, in {} processes) but only {} is available: lower nfiles, nthreads or instances",
                crate::units::format_bytes(need as f64),
                crate::units::format_bytes((buffers / threads.max(1)) as f64),
                sets as f64 / entries.max(1) as f64,
                procs.max(1),
                crate::units::format_bytes(avail as f64)
            );
        }
    }
    Ok(())
}

/// Refuse, with the numbers, filesets whose preallocation would not fit in the free space.
fn check_space(model: &Model, layouts: &[SetLayout]) -> Result<()> {
    let mut per_dir: Vec<(std::path::PathBuf, u64, Vec<&str>)> = Vec::new();
    for (spec, lay) in model.filesets.iter().zip(layouts) {
        if spec.is_dirs() || (spec.reuse && spec.root.exists()) {
            continue;
        }
        let Some(parent) = spec.root.parent() else {
            continue;
        };
        let mut bytes = 0u64;
        for i in 0..lay.len() {
            if lay.preallocated(i) {
                bytes = bytes.saturating_add(lay.size(i));
            }
        }
        match per_dir.iter_mut().find(|d| d.0 == parent) {
            Some(d) => {
                d.1 = d.1.saturating_add(bytes);
                d.2.push(&spec.name);
            }
            None => per_dir.push((parent.to_path_buf(), bytes, vec![&spec.name])),
        }
    }
    for (dir, bytes, names) in per_dir {
        if bytes > 0 && dir.is_dir() {
            crate::guard::ensure_free_space(
                &dir,
                bytes,
                &format!("preallocating fileset {}", names.join(", ")),
            )?;
        }
    }
    Ok(())
}

fn ensure_prepared(
    model: &Model,
    layouts: &[SetLayout],
    arena: &Arena,
    prepared: &mut Vec<Prepared>,
    result: &mut WorkloadDoc,
    opts: &Options,
) -> Result<()> {
    if !prepared.is_empty() || model.filesets.is_empty() {
        return Ok(());
    }
    // The live line (`--progress`) while the filesets are laid out: bytes written so far.
    let board = crate::runner::live::BoardGuard(crate::runner::live::open_board(0));
    let _display =
        crate::runner::live_line::Display::start(board.0.clone(), true, Default::default());
    for (i, spec) in model.filesets.iter().enumerate() {
        let t = Instant::now();
        // On failure or Ctrl-C, prepare removes what it made of this fileset itself; the
        // filesets prepared before it are removed (or kept) by the caller.
        // Another part's filesets (`leave_for_owner`) are never removed by this one, also
        // not on an error: prepare then records what it made in their manifest instead.
        let keep = opts.keep || opts.leave_for_owner;
        let p = fileset::prepare(spec, &layouts[i], arena, i, keep)?;
        let secs = t.elapsed().as_secs_f64();
        say(
            opts,
            &format!(
                "fileset {}: {} entries, {} created ({:.1} MB) {} reused, {} dirs, in {:.2} s",
                spec.name,
                layouts[i].len(),
                p.files_created,
                p.bytes_written as f64 / 1e6,
                p.reused,
                layouts[i].dir_count(),
                secs
            ),
        );
        result.add_fileset(FilesetInfo {
            name: spec.name.clone(),
            root: spec.root.display().to_string(),
            entries: layouts[i].len() as u64,
            dirs: layouts[i].dir_count() as u64,
            prealloc_pct: spec.prealloc_pct,
            files_created: p.files_created,
            bytes_written: p.bytes_written,
            reused: p.reused,
            create_s: secs,
        });
        prepared.push(p);
    }
    Ok(())
}

enum Workers {
    Threads(crate::runner::drive::Crew<ThreadOutcome>),
    Processes(Vec<Child>),
}

fn reset(arena: &Arena, model: &Model) {
    let c = arena.ctl();
    for a in [
        &c.go, &c.stop, &c.ready, &c.live, &c.blocked, &c.done, &c.norsc, &c.failed,
    ] {
        a.store(0, SeqCst);
    }
    for i in 0..model.sems.len() {
        arena.sem(i).count.store(0, SeqCst);
        arena.sem(i).hw_used.store(0, SeqCst);
    }
    for s in 0..model.total_threads() {
        let p = arena.progress(s);
        for a in [
            &p.ops,
            &p.read_ops,
            &p.write_ops,
            &p.read_bytes,
            &p.write_bytes,
        ] {
            a.store(0, SeqCst);
        }
    }
}

fn spawn(
    src: &Source,
    model: &Model,
    layouts: &[SetLayout],
    arena: &Arena,
    opts: &Options,
) -> Result<Workers> {
    let ids = thread_ids(model);
    let ids_len = ids.len();
    if opts.in_process {
        // The threads share one mapping of the same memfd (a dup the mapping owns), and the
        // model and layouts, for as long as the last of them runs.
        // SAFETY: dup of a descriptor we own.
        let dfd = unsafe { libc::dup(arena.raw_fd()) };
        if dfd < 0 {
            bail!("dup: {}", std::io::Error::last_os_error());
        }
        let shared = std::sync::Arc::new(Arena::attach(dfd, arena.layout.clone())?);
        let model = std::sync::Arc::new(model.clone());
        let setup = super::worker::Setup {
            engine: opts.engine,
            rate: opts.rate,
            trace_files: super::interp::trace_files(layouts),
        };
        let layouts = std::sync::Arc::new(layouts.to_vec());
        let bodies = ids.into_iter().map(|id| {
            let body = super::worker::body(
                model.clone(),
                layouts.clone(),
                shared.clone(),
                setup.clone(),
                id,
            );
            ("wml".to_string(), body)
        });
        let crew = match crate::runner::drive::start_threads(
            bodies,
            WORKER_STACK,
            &crate::runner::drive::spawn_thread,
        ) {
            Ok(c) => c,
            Err(f) => bail!(
                "starting workload thread {} of {}: {}",
                f.index + 1,
                ids_len,
                f.error
            ),
        };
        // Past the driver's gate each thread prepares and waits at the arena's barrier, the
        // one process mode uses too.
        crew.open(|_| true);
        return Ok(Workers::Threads(crew));
    }
    let mut children = Vec::new();
    let mut slot = 0;
    let total_procs: u64 = model.processes.iter().map(|p| p.instances).sum();
    for (pi, p) in model.processes.iter().enumerate() {
        let per = p
            .threads
            .iter()
            .map(|t| t.instances as usize)
            .sum::<usize>();
        for inst in 0..p.instances {
            let spec = WorkerSpec {
                source: src.clone(),
                process: pi,
                instance: inst,
                slot_base: slot,
                arena_fd: arena.raw_fd(),
                layout: arena.layout.clone(),
                engine: opts.engine,
                rate: opts.rate,
                status_interval_ns: crate::runner::live::interval_ns(),
            };
            slot += per;
            let started = crate::runner::drive::ChildSpec::new("workload", &spec)
                .and_then(|s| crate::runner::drive::start_process(&s));
            let mut child = match started {
                Ok(c) => c,
                Err(e) => {
                    let n = children.len();
                    stop_started(arena, Workers::Processes(children));
                    bail!(
                        "starting workload process {} of {}: {e:#}",
                        n + 1,
                        total_procs
                    );
                }
            };
            // The spec is all a workload process reads: its start is the arena's barrier.
            drop(child.stdin.take());
            children.push(child);
        }
    }
    Ok(Workers::Processes(children))
}

/// Stop and reap what was started before a start failed, so nothing runs unsupervised.
fn stop_started(arena: &Arena, w: Workers) {
    arena.ctl().stop.store(STOP_NORMAL, SeqCst);
    arena.ctl().go.store(1, SeqCst);
    futex_wake_all(&arena.ctl().go);
    arena.wake_everyone();
    let _ = collect(w);
}

fn collect(w: Workers) -> Result<Vec<ThreadOutcome>> {
    let mut out = Vec::new();
    match w {
        Workers::Threads(crew) => out = crew.join()?,
        Workers::Processes(children) => {
            let mut problem = None;
            for mut c in children {
                let mut so = c.stdout.take().expect("piped");
                match crate::runner::drive::finish_process::<ThreadOutcome>(c, &mut so) {
                    Ok(v) => out.extend(v),
                    Err(e) => problem = Some(e),
                }
            }
            if let Some(p) = problem {
                return Err(p);
            }
        }
    }
    out.sort_by_key(|o| o.id.slot);
    Ok(out)
}

fn children_alive(w: &mut Workers) -> bool {
    match w {
        Workers::Threads(crew) => crew.alive(),
        Workers::Processes(cs) => cs.iter_mut().any(|c| matches!(c.try_wait(), Ok(None))),
    }
}

fn sum_progress(arena: &Arena, n: usize) -> [u64; 5] {
    let mut s = [0u64; 5];
    for i in 0..n {
        let p = arena.progress(i);
        s[0] += p.ops.load(Relaxed);
        s[1] += p.read_ops.load(Relaxed);
        s[2] += p.write_ops.load(Relaxed);
        s[3] += p.read_bytes.load(Relaxed);
        s[4] += p.write_bytes.load(Relaxed);
    }
    s
}

/// Watch a started run until it stops: print the psrun lines and check the stop conditions
/// (time, mode quit, out of files, a failed flowop, Ctrl-C/SIGTERM, no progress). Returns why
/// it stopped, whether that is a failure, and the progress lines.
fn watch(
    model: &Model,
    arena: &Arena,
    t0: Instant,
    secs: f64,
    psrun: Option<(f64, bool)>,
    opts: &Options,
    board: Option<&crate::runner::live::Board>,
) -> (String, bool, Vec<PsrunLine>) {
    let nthreads = model.total_threads();
    let ctl = arena.ctl();
    let mut lines = Vec::new();
    let mut last = (0.0f64, [0u64; 5]);
    let mut next_print = psrun.map(|p| p.0);
    let mut stalled_since: Option<Instant> = None;
    let mut stop_reason = format!("ran for the time given ({secs} s)");
    let mut failed = false;
    loop {
        std::thread::sleep(Duration::from_millis(10));
        let el = t0.elapsed().as_secs_f64();
        if let Some(b) = board {
            let p = sum_progress(arena, nthreads);
            b.publish(0, [p[1], p[2], p[3], p[4]]);
        }
        if let Some(np) = next_print {
            if el >= np {
                let now = sum_progress(arena, nthreads);
                let dt = (el - last.0).max(1e-9);
                let l = PsrunLine {
                    t_s: el,
                    ops: now[0],
                    ops_per_s: (now[0] - last.1[0]) as f64 / dt,
                    read_ops_per_s: (now[1] - last.1[1]) as f64 / dt,
                    write_ops_per_s: (now[2] - last.1[2]) as f64 / dt,
                    mb_per_s: ((now[3] + now[4]) - (last.1[3] + last.1[4])) as f64 / dt / 1e6,
                };
                let cum = psrun.is_some_and(|p| p.1);
                if let Some(format) = opts.progress {
                    say(opts, &format(&l, cum.then(|| now[0] as f64 / el)));
                }
                lines.push(l);
                last = (el, now);
                next_print = Some(np + psrun.map(|p| p.0).unwrap_or(1.0));
            }
        }
        if signal::interrupted() {
            stop_reason = "interrupted (Ctrl-C)".into();
            break;
        }
        // A distributed run's stonewall (`signal::stop_workers`): a planned end, not Ctrl-C.
        if signal::stop_requested() {
            stop_reason = STONEWALL_STOP.into();
            break;
        }
        if el >= secs {
            break;
        }
        if ctl.failed.load(SeqCst) > 0 {
            stop_reason = "a flowop failed".into();
            failed = true;
            break;
        }
        let done = ctl.done.load(SeqCst) as usize;
        let live = ctl.live.load(SeqCst) as usize;
        match model.mode {
            QuitMode::FirstDone if done > 0 => {
                stop_reason = "the first thread finished (mode quit firstdone)".into();
                break;
            }
            QuitMode::AllDone if done + (ctl.failed.load(SeqCst) as usize) >= nthreads => {
                stop_reason = "every thread finished (mode quit alldone)".into();
                break;
            }
            QuitMode::Timeout if ctl.norsc.load(SeqCst) > 0 => {
                stop_reason =
                    "stopped early: a flowop could not obtain a file (out of files)".into();
                break;
            }
            _ => {}
        }
        if live == 0 {
            stop_reason = "every thread ended".into();
            break;
        }
        // No progress: every live thread is waiting for a semaphore or wakeup that nobody
        // will post.
        let blocked = ctl.blocked.load(SeqCst) as usize;
        if blocked >= live {
            let since = *stalled_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= opts.stall_after {
                stop_reason = format!(
                    "no progress: all {live} running threads have waited in semblock/block for {:.1} s and nothing can post to them",
                    since.elapsed().as_secs_f64()
                );
                failed = true;
                break;
            }
        } else {
            stalled_since = None;
        }
    }
    (stop_reason, failed, lines)
}

/// One `run` of the script: its threads spawned, started together, stopped, and their
/// outcomes merged; None when `gate` called it off before the start.
#[allow(clippy::too_many_arguments)]
fn one_run(
    src: &Source,
    model: &Model,
    layouts: &[SetLayout],
    arena: &Arena,
    secs: f64,
    psrun: Option<(f64, bool)>,
    number: u32,
    opts: &Options,
    gate: Option<crate::runner::Gate>,
) -> Result<Option<(RunPart, Vec<ThreadOutcome>)>> {
    type Start = Box<dyn FnOnce(crate::runner::drive::Opener) -> bool + Send>;
    let (may_start, after_io): (Start, Box<dyn FnOnce() + Send>) = match gate {
        Some(g) => (g.start, g.after_io),
        None => (Box::new(|_| true), Box::new(|| {})),
    };
    reset(arena, model);
    let nthreads = model.total_threads();
    let mut workers = spawn(src, model, layouts, arena, opts)?;
    let ctl = arena.ctl();
    // Start barrier: every thread prepared (processes started, buffers allocated).
    let wait_from = Instant::now();
    while (ctl.ready.load(SeqCst) as usize) < nthreads {
        if !children_alive(&mut workers)
            || wait_from.elapsed() > Duration::from_secs(120)
            || signal::interrupted()
        {
            ctl.stop.store(STOP_NORMAL, SeqCst);
            arena.wake_everyone();
            let _ = collect(workers);
            bail!(
                "workload processes failed to start ({} of {nthreads} threads ready)",
                ctl.ready.load(SeqCst)
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // Every thread is ready: the other parts of a larger run may call this one off.
    // The arena's threads start when this thread says go (no crew gate to open).
    if !may_start(crate::runner::drive::Opener::none()) {
        ctl.stop.store(STOP_NORMAL, SeqCst);
        arena.wake_everyone();
        let _ = collect(workers);
        return Ok(None);
    }
    if ctl.event_rate_milli.load(SeqCst) > 0 {
        arena.set_event_rate(ctl.event_rate_milli.load(SeqCst) as f64 / 1000.0);
    }
    let t0 = Instant::now();
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    ctl.start_ns.store(now_ns(), SeqCst);
    ctl.go.store(1, SeqCst);
    futex_wake_all(&ctl.go);

    // The live line (`--progress`): the arena's progress counters, published by `watch`.
    let board = crate::runner::live::BoardGuard(crate::runner::live::open_board(1));
    let display = crate::runner::live_line::Display::start(
        board.0.clone(),
        true,
        crate::runner::live_line::Bounds {
            time_s: Some(secs).filter(|s| s.is_finite()),
            ops: None,
        },
    );
    if let Some(d) = &display {
        d.phase(crate::runner::live_line::Phase::Running);
    }
    let (stop_reason, failed, lines) =
        watch(model, arena, t0, secs, psrun, opts, board.0.as_deref());
    if let Some(d) = display {
        d.finish();
    }
    let elapsed_s = t0.elapsed().as_secs_f64();
    ctl.stop.store(STOP_NORMAL, SeqCst);
    arena.wake_everyone();
    let outcomes = collect(workers);
    // The timed I/O is over: wait for the other parts before anything is removed.
    after_io();
    let outcomes = outcomes?;
    debug_assert!(ctl.stop.load(SeqCst) != STOP_NONE);
    let mut part = RunPart::from_outcomes(model, &outcomes, number, elapsed_s, stop_reason, lines);
    part.outline.started_unix_s = started_unix_s;
    part.failed |= failed;
    Ok(Some((part, outcomes)))
}
