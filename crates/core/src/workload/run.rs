//! Running a loaded workload: execute its script (create files, run/psrun, sleep, echo,
//! eventgen), start every process instance as a real process (`fsbench __worker` with a workload
//! spec, started by the runner's driver, which runs its thread instances as threads) around one shared arena, watch the stop conditions
//! (time, `set mode quit alldone|firstdone`, out of files, errors, Ctrl-C, no progress), print
//! psrun lines, collect and merge the statistics, and remove the filesets unless `--keep`.

use super::fileset::{self, Prepared, SetLayout};
use super::interp::{ThreadId, ThreadOutcome};
use super::model::{Cmd, Model};
use super::report::WorkloadDoc;
use super::shared::{Arena, Layout};
use super::Source;
use crate::result::{FilesetInfo, PsrunLine, RunResult};
use crate::runner::signal;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::time::{Duration, Instant};

mod checks;
mod one_run;
use checks::{check_space, preflight};
use one_run::one_run;

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Overrides the duration of every `run`/`psrun`.
    pub time: Option<Duration>,
    /// `--ramp`: every `run` first runs this long unmeasured (its threads' counts start
    /// after it; the run lasts this much longer).
    pub ramp: Option<Duration>,
    /// `--ramp-bytes`: every `run`'s threads first move this many bytes each unmeasured; the
    /// measured window (and the run's time) starts when every thread is past it.
    pub ramp_bytes: Option<u64>,
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
    /// `--progress` and `--status-interval`: the live line and the time series of every run.
    pub watch: crate::runner::live::Watching,
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
pub fn execute_gated(
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
    // The host from the start of the first run command to the end of the last one.
    let mut host: Option<crate::probe::host::HostSampler> = None;
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
                    let sampler =
                        host.get_or_insert_with(|| crate::probe::host::HostSampler::start(&[]));
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
                    result.result.host = Some(sampler.finish());
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
            if let Err(e) = fileset::keep(p, &layouts[i], arena, i) {
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
            match fileset::remove(p, &layouts[i], arena, i) {
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
pub struct LaidOut {
    pub filesets: Vec<FilesetInfo>,
    created_roots: Vec<bool>,
}

impl LaidOut {
    /// Filesets an earlier run kept (`--repeat`: for the next run), for [`remove_laid_out`]:
    /// `created_roots[i]`, whether that run made fileset i's root directory.
    pub fn kept(created_roots: Vec<bool>) -> LaidOut {
        LaidOut {
            filesets: Vec::new(),
            created_roots,
        }
    }
}

/// Lay out a workload's filesets, untimed, and leave them on disk with their manifests for
/// another part of a larger run to run over (`crate::mpi` with `--reorder-ranks`: rank r
/// lays out its own directory, rank r - shift runs in it with `reuse` on). On an error what
/// was laid out is removed again (unless `opts.keep`). [`remove_laid_out`] removes them
/// once every part is done with them.
pub fn lay_out_only(src: &Source, model: &Model, opts: &Options) -> Result<LaidOut> {
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
pub fn remove_laid_out(model: &Model, laid: &LaidOut) -> Vec<String> {
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
    let board = opts.watch.open_board(0);
    let _display = crate::runner::live_line::Display::start(
        &opts.watch,
        board.clone(),
        true,
        Default::default(),
    );
    for (i, spec) in model.filesets.iter().enumerate() {
        let t = Instant::now();
        // On failure or Ctrl-C, prepare removes what it made of this fileset itself; the
        // filesets prepared before it are removed (or kept) by the caller.
        // Another part's filesets (`leave_for_owner`) are never removed by this one, also
        // not on an error: prepare then records what it made in their manifest instead.
        let keep = opts.keep || opts.leave_for_owner;
        let p = fileset::prepare(spec, &layouts[i], arena, i, keep, board.clone())?;
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
