//! One `run` of a workload's script: its threads or processes spawned around the arena,
//! started together, watched until a stop condition (time, mode quit, out of files, a failed
//! flowop, Ctrl-C, the stonewall, no progress), stopped, and their outcomes collected.

use super::{say, thread_ids, Options, STONEWALL_STOP};
use crate::result::PsrunLine;
use crate::runner::signal;
use crate::workload::ast::QuitMode;
use crate::workload::fileset::SetLayout;
use crate::workload::interp::ThreadOutcome;
use crate::workload::model::Model;
use crate::workload::report::RunPart;
use crate::workload::shared::{futex_wake_all, now_ns, Arena, STOP_NONE, STOP_NORMAL};
use crate::workload::worker::{WorkerSpec, THREAD_STACK as WORKER_STACK};
use crate::workload::Source;
use anyhow::{bail, Result};
use std::process::Child;
use std::sync::atomic::Ordering::*;
use std::time::{Duration, Instant};

enum Workers {
    Threads(crate::runner::drive::Crew<ThreadOutcome>),
    Processes(Vec<Child>),
}

fn reset(arena: &Arena, model: &Model) {
    let c = arena.ctl();
    for a in [
        &c.go, &c.stop, &c.ready, &c.live, &c.blocked, &c.done, &c.norsc, &c.failed, &c.warmed,
    ] {
        a.store(0, SeqCst);
    }
    c.warm_end_ns.store(0, SeqCst);
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
        let setup = crate::workload::worker::Setup {
            engine: opts.engine,
            rate: opts.rate,
            trace_files: crate::workload::interp::trace_files(layouts, opts.watch.trace.is_some()),
            interval_ns: opts.watch.interval_ns(),
            trace: opts.watch.trace.clone(),
            ramp: opts.ramp,
            ramp_bytes: opts.ramp_bytes.unwrap_or(0),
        };
        let layouts = std::sync::Arc::new(layouts.to_vec());
        let bodies = ids.into_iter().map(|id| {
            let body = crate::workload::worker::body(
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
                status_interval_ns: opts.watch.interval_ns(),
                ramp_ns: opts.ramp.map(|d| d.as_nanos().min(u64::MAX as u128) as u64),
                ramp_bytes: opts.ramp_bytes.unwrap_or(0),
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

/// The warm-up of a run: none, `--ramp` (a time), or `--ramp-bytes` (each thread's bytes
/// moved: it ends when every thread has said so through the arena).
#[derive(Clone, Copy)]
enum Warm {
    Time(f64),
    Bytes,
}

/// How a watched run went.
struct Watched {
    stop_reason: String,
    failed: bool,
    lines: Vec<PsrunLine>,
    /// When the measured window started (seconds after the start); None: the run stopped
    /// before every thread was past its warm-up by bytes.
    measured_from: Option<f64>,
}

/// When every thread is past its warm-up by bytes: the latest thread's end of it, in
/// seconds after the run's start.
fn warmed_at(arena: &Arena, nthreads: usize) -> Option<f64> {
    ((arena.ctl().warmed.load(SeqCst) as usize) >= nthreads).then(|| warm_end_s(arena))
}

/// When the latest warm-up by bytes ended so far, in seconds after the run's start.
fn warm_end_s(arena: &Arena) -> f64 {
    let ctl = arena.ctl();
    let ns = ctl
        .warm_end_ns
        .load(SeqCst)
        .saturating_sub(ctl.start_ns.load(SeqCst));
    ns as f64 / 1e9
}

/// Watch a started run until it stops: print the psrun lines and check the stop conditions
/// (time, mode quit, out of files, a failed flowop, Ctrl-C/SIGTERM, no progress). Returns why
/// it stopped, whether that is a failure, the progress lines and when its measured window
/// started.
// why: its one caller hands over the run's parts as they are; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
fn watch(
    model: &Model,
    arena: &Arena,
    t0: Instant,
    secs: f64,
    ramp: Warm,
    psrun: Option<(f64, bool)>,
    opts: &Options,
    board: Option<&crate::runner::live::Board>,
) -> Watched {
    let nthreads = model.total_threads();
    let ctl = arena.ctl();
    let mut lines = Vec::new();
    let mut last = (0.0f64, [0u64; 5]);
    let mut next_print = psrun.map(|p| p.0);
    let mut stalled_since: Option<Instant> = None;
    let mut stop_reason = format!("ran for the time given ({secs} s)");
    let mut failed = false;
    let mut measured_from = match ramp {
        Warm::Time(s) => Some(s),
        Warm::Bytes => None,
    };
    loop {
        std::thread::sleep(Duration::from_millis(10));
        let el = t0.elapsed().as_secs_f64();
        if measured_from.is_none() {
            // --time counts from the end of the last thread's warm-up by bytes.
            measured_from = warmed_at(arena, nthreads);
        }
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
        if measured_from.is_some_and(|m| el >= secs + m) {
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
    if matches!(ramp, Warm::Bytes) {
        // Seen at the stop: a thread that ended did so past its warm-up.
        measured_from = warmed_at(arena, nthreads);
        if measured_from.is_none() {
            stop_reason.push_str(
                " (before every thread was past its --ramp-bytes warm-up: the threads still in it counted nothing)",
            );
            // Those past it counted from the latest end of a warm-up.
            measured_from = (arena.ctl().warmed.load(SeqCst) > 0).then(|| warm_end_s(arena));
        }
    }
    Watched {
        stop_reason,
        failed,
        lines,
        measured_from,
    }
}

/// One `run` of the script: its threads spawned, started together, stopped, and their
/// outcomes merged; None when `gate` called it off before the start.
#[allow(clippy::too_many_arguments)]
pub(super) fn one_run(
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
    let crate::runner::Gate {
        start: may_start,
        after_io,
    } = gate.unwrap_or_else(crate::runner::Gate::none);
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
    let ramp_s = opts.ramp.map_or(0.0, |d| d.as_secs_f64());
    let ramp = match opts.ramp_bytes {
        Some(b) if b > 0 => Warm::Bytes,
        _ => Warm::Time(ramp_s),
    };
    let t0 = Instant::now();
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    ctl.start_ns.store(now_ns(), SeqCst);
    ctl.go.store(1, SeqCst);
    futex_wake_all(&ctl.go);

    // The live line (`--progress`): the arena's progress counters, published by `watch`.
    let board = opts.watch.open_board(1);
    let display = crate::runner::live_line::Display::start(
        &opts.watch,
        board.clone(),
        true,
        crate::runner::live_line::Bounds {
            time_s: Some(secs + ramp_s).filter(|s| s.is_finite()),
            ops: None,
        },
    );
    if let Some(d) = &display {
        d.phase(crate::runner::live_line::Phase::Running);
    }
    let Watched {
        stop_reason,
        failed,
        lines,
        measured_from,
    } = watch(model, arena, t0, secs, ramp, psrun, opts, board.as_deref());
    if let Some(d) = display {
        d.finish();
    }
    // The measured time: the warm-up is left out, as the threads left out its counts (none
    // when the run stopped inside a warm-up by bytes).
    let elapsed_s = measured_from.map_or(0.0, |m| (t0.elapsed().as_secs_f64() - m).max(0.0));
    ctl.stop.store(STOP_NORMAL, SeqCst);
    arena.wake_everyone();
    let outcomes = collect(workers);
    // The timed I/O is over: wait for the other parts before anything is removed.
    after_io();
    let outcomes = outcomes?;
    debug_assert!(ctl.stop.load(SeqCst) != STOP_NONE);
    let mut part = RunPart::from_outcomes(
        model,
        &outcomes,
        number,
        elapsed_s,
        stop_reason,
        lines,
        opts.watch.interval_ns(),
    );
    part.outline.started_unix_s = started_unix_s;
    part.failed |= failed;
    Ok(Some((part, outcomes)))
}
