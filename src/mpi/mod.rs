//! Distributed runs on MPI (issue #16; built with `--features mpi`). Started by mpirun, each
//! fsbench process is one rank of one run: rank 0 validates the Job and broadcasts it; every
//! rank derives its own target or part of a shared file ([`layout`]), prepares it through the
//! ordinary runner (threads or processes, every engine, cache policy, rate limit), and all
//! start at one MPI barrier. The barrier's exit is every rank's clock zero. A stonewall can
//! stop every rank when the first finishes or at a fixed time. Each rank then sends rank 0 its
//! threads' exact `Stats`; rank 0 builds the one Result ([`aggregate`]).
//!
//! Only the rank's main thread calls MPI (thread level FUNNELED); the runner runs on another
//! thread and talks to it through channels at its two hooks (`runner::Gate`): "prepared, may
//! I start?" and "my timed I/O is over, may I clean up?". Every meeting point times out
//! (`--mpi-timeout`), so no rank waits for ever for one that hung.
//!
//! The clock: the main thread reads CLOCK_MONOTONIC as it leaves the start barrier and at
//! once releases the prepared workers itself (the runner hands it the gate's opener), so the
//! workers wake one thread hop after the barrier. The rank's I/O span is taken from its
//! workers' own loop clocks (CLOCK_MONOTONIC, shared by every process of the host), not from
//! when the main thread hears that they ended: with more ranks than cores, those wake-ups
//! could cost more than a short run's I/O.

mod aggregate;
mod backup;
mod comm;
pub(crate) mod layout;
mod observe;
mod replay;
mod serve;
mod verify;
mod workload;

pub(crate) use comm::World;
pub(crate) use layout::{DistPlan, DistSpec, Layout, Stonewall};
pub(crate) use observe::RankObserve;
pub(crate) use serve::drive;

use crate::result::RunResult;
use crate::runner::{self, RunOutcome};
use aggregate::RankRecord;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// How long ranks wait for rank 0's spec (before the user's `--mpi-timeout` is known).
const SPEC_TIMEOUT: Duration = Duration::from_secs(600);

/// What a rank's run thread (the runner's, or a replay's: `T` is its outcome) tells the main
/// (MPI) thread.
pub(super) enum Event<T> {
    /// Every worker is prepared: the opener of their gate.
    Ready(runner::drive::Opener),
    IoDone,
    Finished(anyhow::Result<T>),
}

/// How a rank's part ends.
pub(crate) enum Ending {
    /// Rank 0: the Result of the whole run.
    Result(Box<RunResult>),
    /// Rank 0: the run could not start; the refusal (usage: exit status 2) naming the rank.
    Refused { usage: bool, message: String },
    /// Any other rank: its exit status (its own refusal 2, its own failure 1, else 0).
    Done(i32),
}

/// An error as one line (a rank's message goes into one row of the Result).
fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}").replace(['\n', '\r'], " ")
}

/// Create a directory of the run, marked as this run's (`crate::leftover`); true when this
/// call made it, or took it over from a run that was killed (this run removes it when done,
/// once empty). Any other existing directory (not a symbolic link) is used as it is.
fn make_dir(p: &Path) -> anyhow::Result<bool> {
    match crate::leftover::make_marked_dir(p) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => match crate::leftover::take_over_dir(p) {
                    Some(note) => {
                        runner::say(&format!("fsbench: note: {note}"));
                        Ok(true)
                    }
                    None => Ok(false),
                },
                _ => crate::bail_usage!(
                    "{} exists and is not a directory: fsbench keeps each rank's file in a directory there; name another path",
                    p.display()
                ),
            }
        }
        Err(e) => crate::bail_usage!("cannot create directory {}: {e}", p.display()),
    }
}

/// The runner on a thread of its own, with its hooks wired to the channels.
fn start_runner(
    job: crate::job::Job,
    part: Option<runner::RankPart>,
    watch: crate::runner::live::Watching,
    tx: Sender<Event<RunOutcome>>,
    go: Receiver<bool>,
    clean: Receiver<()>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    start_gated(tx, go, clean, move |gate| {
        runner::run_gated(&job, part, Some(gate), &watch)
    })
}

/// `run` (the runner, or a replay) on a thread of its own, given the gate of a rank: its
/// workers' readiness and the end of their I/O go to `tx`, they start when `go` says so
/// (false: called off), and the run goes on past its I/O (to remove what it made) only when
/// `clean` says every rank's I/O is over. Its outcome goes to `tx` last.
pub(super) fn start_gated<T: Send + 'static>(
    tx: Sender<Event<T>>,
    go: Receiver<bool>,
    clean: Receiver<()>,
    run: impl FnOnce(runner::Gate) -> anyhow::Result<T> + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("fsbench-rank".into())
        .spawn(move || {
            let (t1, t2) = (tx.clone(), tx.clone());
            let gate = runner::Gate {
                start: Box::new(move |opener| {
                    let _ = t1.send(Event::Ready(opener));
                    go.recv().unwrap_or(false)
                }),
                after_io: Box::new(move || {
                    let _ = t2.send(Event::IoDone);
                    let _ = clean.recv();
                }),
            };
            let _ = tx.send(Event::Finished(run(gate)));
        })
}

/// The run thread's outcome once every rank's I/O is over (`early`: it came already), the
/// thread joined.
pub(super) fn finish_gated<T>(
    rx: &Receiver<Event<T>>,
    handle: Option<std::thread::JoinHandle<()>>,
    mut early: Option<anyhow::Result<T>>,
) -> Option<anyhow::Result<T>> {
    if early.is_none() && handle.is_some() {
        while let Ok(ev) = rx.recv() {
            if let Event::Finished(r) = ev {
                early = Some(r);
                break;
            }
        }
    }
    if let Some(h) = handle {
        let _ = h.join();
    }
    early
}

/// The start barrier: every rank says whether its run is ready; if all are, clock zero is
/// taken and this rank's workers are released from this thread (one thread hop; see the
/// module notes), else its run is called off. Whether all were ready, and clock zero (barrier
/// clock in ns, and as an Instant).
pub(super) fn start_together(
    world: &World,
    timeout: Duration,
    opener: Option<&runner::drive::Opener>,
    go: &Sender<bool>,
) -> (bool, u64, Instant) {
    let all_ok = world.all_min("the start barrier", timeout, opener.is_some() as u64) == 1;
    let t0_ns = crate::stats::mono_ns();
    let t0 = Instant::now();
    if let Some(o) = opener {
        if all_ok {
            o.open();
        }
        let _ = go.send(all_ok);
    }
    (all_ok, t0_ns, t0)
}

/// Wait until the run is prepared (its workers' opener) or has ended before the start.
pub(super) fn wait_ready<T>(
    rx: &Receiver<Event<T>>,
    early: &mut Option<anyhow::Result<T>>,
) -> Option<runner::drive::Opener> {
    loop {
        match rx.recv() {
            Ok(Event::Ready(opener)) => return Some(opener),
            Ok(Event::Finished(r)) => {
                *early = Some(r);
                return None;
            }
            Ok(Event::IoDone) => {}
            Err(_) => return None,
        }
    }
}

/// Stop this rank's observers after its timed I/O (`t0`: the rank's clock zero; its I/O
/// began `rec.start_s` after it, where the device samples' `t_s` count from). What they saw
/// goes into the rank's record; a failure to finish them (a trace that cannot be written)
/// fails the rank's run, as it fails a run on one host.
pub(super) fn finish_observing(
    observer: Option<crate::observe::Observer>,
    rec: &mut RankRecord,
    t0: Instant,
) {
    let since_start_s = (t0.elapsed().as_secs_f64() - rec.start_s).max(0.0);
    if let Some(message) = observe::finish(observer, &mut rec.observed, since_start_s) {
        rec.failures.push(runner::IoFailure {
            user: 0,
            thread: 0,
            path: rec.targets.first().cloned().unwrap_or_default(),
            offset: None,
            message,
        });
        rec.status = runner::RunStatus::Failed;
    }
}

/// How this rank's timed I/O ended, as its main (MPI) thread saw it.
#[derive(Debug, Default)]
pub(super) struct IoEnd {
    /// When the rank's run said its I/O was over (seconds after clock zero); None: it ended
    /// otherwise (its outcome came first).
    pub end_s: Option<f64>,
    /// The stonewall stopped it.
    pub stopped: bool,
    /// It sent the stonewall message (it finished first as far as it knew).
    pub sent: bool,
    /// Stonewall messages it received.
    pub got: u64,
}

/// Wait for the end of this rank's timed I/O (a Job's run or a replay: `T` is its outcome,
/// which goes to `early` when it comes before the end of the I/O), stopping it at the
/// stonewall: at the first other rank's message (`first`) or `d` seconds after clock zero
/// `t0`, through the runner's stop flag (`signal::stop_workers`, read by every worker loop
/// between I/Os). A rank whose I/O ended first tells the others.
pub(super) fn wait_io<T>(
    world: &World,
    stonewall: Option<Stonewall>,
    rx: &Receiver<Event<T>>,
    t0: Instant,
    early: &mut Option<anyhow::Result<T>>,
) -> IoEnd {
    let mut io = IoEnd::default();
    loop {
        // Without a stonewall nothing needs MPI until the I/O ends: block. With one, wake up
        // to look for the stonewall message (every ms) or at the wall time.
        let wait = match stonewall {
            None => Duration::from_secs(3600),
            Some(Stonewall::Time(d)) if !io.stopped => {
                Duration::from_secs_f64((d - t0.elapsed().as_secs_f64()).max(0.0))
            }
            Some(_) => Duration::from_millis(1),
        };
        match rx.recv_timeout(wait) {
            Ok(Event::IoDone) => {
                io.end_s = Some(t0.elapsed().as_secs_f64());
                break;
            }
            Ok(Event::Finished(r)) => {
                *early = Some(r);
                break;
            }
            Ok(Event::Ready(_)) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        match stonewall {
            Some(Stonewall::FirstFinish) => {
                if world.poll_stone().is_some() {
                    io.got += 1;
                    if !io.stopped {
                        runner::signal::stop_workers();
                        io.stopped = true;
                    }
                }
            }
            Some(Stonewall::Time(d)) if !io.stopped && t0.elapsed().as_secs_f64() >= d => {
                runner::signal::stop_workers();
                io.stopped = true;
            }
            _ => {}
        }
    }
    if stonewall == Some(Stonewall::FirstFinish) && !io.stopped {
        if let Some(at) = io.end_s {
            world.send_stone(at);
            io.sent = true;
        }
    }
    io
}

/// The meeting at the end of every rank's I/O (`io`: this rank's, default when it did not
/// run); the stonewall messages still on their way are taken, so none is left in flight, and
/// a stonewall stop is taken back once the stopped workers are over, so the next timed part
/// of this process (a sweep's next point) starts unstopped.
pub(super) fn end_io(world: &World, timeout: Duration, io: &IoEnd) {
    let senders = world.all_sum("the end of every rank's I/O", timeout, io.sent as u64);
    world.drain_stones(senders.saturating_sub(io.sent as u64 + io.got));
    if io.stopped {
        runner::signal::clear_stonewall_stop();
    }
}

/// This rank's part of the run. Every rank makes the same collective calls in the same order,
/// whatever happened to it, so a rank that failed never leaves the others waiting.
pub(crate) fn run(world: &World, spec: &DistSpec) -> anyhow::Result<Ending> {
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    let (rank, n) = (world.rank, world.size);
    runner::signal::install();
    let hosts = world.all_hosts(timeout);
    let shift = spec.reorder.then(|| layout::reorder_shift(&hosts));
    let (job, mut part) = layout::rank_job(spec, rank, n, shift);
    let source = layout::source_rank(rank, n, shift);
    let targets: Vec<String> = job
        .targets
        .iter()
        .map(|t| t.display().to_string())
        .collect();
    let mut rec = RankRecord::new(rank, &world.host, targets);
    rec.own_host_data = hosts[source as usize] == world.host;
    rec.data_of_rank = shift.map(|_| source);
    let path = spec.job.targets[0].clone();
    let mut local_err: Option<anyhow::Error> = None;
    let mut own_dir: Option<PathBuf> = None;
    let mut parent_made = false;
    let mut laid_out = Vec::new();
    if spec.layout == Layout::FilePerRank {
        if rank == 0 {
            match make_dir(&layout::parent_dir(&path)) {
                Ok(m) => parent_made = m,
                Err(e) => local_err = Some(e),
            }
        }
        world.meet("creating the ranks' directories", timeout);
        if local_err.is_none() {
            let dir = layout::rank_dir(&path, rank);
            match make_dir(&dir) {
                Ok(true) => own_dir = Some(dir),
                Ok(false) => {}
                Err(e) => local_err = Some(e),
            }
        }
        if spec.reorder && local_err.is_none() {
            // Each rank lays out its own file, for another rank to read.
            let mut own = spec.job.clone();
            own.targets = layout::rank_files(&spec.job.targets, rank);
            match runner::lay_out_only(&own) {
                Ok(m) => laid_out = m,
                Err(e) => local_err = Some(e),
            }
        }
        world.meet("laying out the files to read", timeout);
    }
    // --iostat, --trace: this rank's observers, started right before its run.
    let mut observer = None;
    if local_err.is_none() {
        match observe::start(&spec.observe, rank, &hosts, &job) {
            Ok(o) => observer = o,
            Err(e) => local_err = Some(e),
        }
    }
    // Rank 0's own watching, with this rank's trace session when it traces.
    let watch = match &observer {
        Some(o) => o.watching(&spec.watch),
        None => spec.watch.clone(),
    };
    let (tx, rx) = mpsc::channel::<Event<RunOutcome>>();
    let (go_tx, go_rx) = mpsc::channel::<bool>();
    let (clean_tx, clean_rx) = mpsc::channel::<()>();
    let mut channels = Some((tx, go_rx, clean_rx));
    let mut handle = None;
    let mut early: Option<anyhow::Result<RunOutcome>> = None;
    let mut opener = None;
    let shared = spec.layout != Layout::FilePerRank;
    let mut launch = |job: &crate::job::Job,
                      part: Option<runner::RankPart>,
                      early: &mut Option<anyhow::Result<RunOutcome>>,
                      local_err: &mut Option<anyhow::Error>|
     -> Option<runner::drive::Opener> {
        let (tx, go_rx, clean_rx) = channels.take().expect("the runner starts once");
        match start_runner(job.clone(), part, watch.clone(), tx, go_rx, clean_rx) {
            Ok(h) => {
                handle = Some(h);
                wait_ready(&rx, early)
            }
            Err(e) => {
                *local_err = Some(anyhow::anyhow!(
                    "cannot start the rank's runner thread: {e}"
                ));
                None
            }
        }
    };
    if local_err.is_none() && (!shared || rank == 0) {
        let existed = rank == 0 && shared && std::fs::symlink_metadata(&path).is_ok();
        opener = launch(&job, part, &mut early, &mut local_err);
        let ready = opener.is_some();
        if shared {
            // Rank 0 made (or found) the shared file: the others may open it now.
            let ino = if ready && !existed {
                std::fs::symlink_metadata(&path)
                    .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
                    .ok()
            } else {
                None
            };
            let msg = serde_json::to_vec(&(ready, ino))?;
            world.broadcast("creating the shared file", timeout, msg);
        }
    } else if shared {
        let got = world.broadcast("creating the shared file", timeout, Vec::new());
        let (ok0, ino): (bool, Option<u64>) = serde_json::from_slice(&got)?;
        if !ok0 {
            rec.called_off = true;
        } else if local_err.is_none() {
            if let Some(p) = &mut part {
                p.created_ino = ino;
            }
            opener = launch(&job, part, &mut early, &mut local_err);
        }
    }
    let ready = opener.is_some();
    let (all_ok, t0_ns, t0) = start_together(world, timeout, opener.as_ref(), &go_tx);
    // The timed run: wait for the end of this rank's I/O, stopping it at the stonewall.
    let mut io = IoEnd::default();
    if ready && all_ok {
        io = wait_io(world, spec.stonewall, &rx, t0, &mut early);
    }
    end_io(world, timeout, &io);
    let end_s = io.end_s;
    rec.stopped = io.stopped;
    // Every rank's I/O is over: the runner may probe and remove what it created.
    let _ = clean_tx.send(());
    match finish_gated(&rx, handle, early) {
        Some(Ok(o)) if ready => rec.fill(
            o,
            t0_ns,
            end_s.unwrap_or_else(|| t0.elapsed().as_secs_f64()),
        ),
        Some(Ok(o)) => {
            // Preparing the target failed (its file and offset are in the failures).
            rec.fill(o, t0_ns, 0.0);
            rec.error = Some(
                rec.failures
                    .first()
                    .map(|f| f.to_string())
                    .unwrap_or_else(|| "preparing the target failed".into()),
            );
        }
        Some(Err(_)) if ready && !all_ok => rec.called_off = true,
        Some(Err(e)) => {
            rec.usage = crate::error::is_usage(&e);
            rec.error = Some(one_line(&e));
        }
        None => {
            if let Some(e) = local_err {
                rec.usage = crate::error::is_usage(&e);
                rec.error = Some(one_line(&e));
            } else if !rec.called_off && !all_ok {
                rec.called_off = true;
            }
        }
    }
    finish_observing(observer, &mut rec, t0);
    // The files laid out for other ranks to read, and this rank's directory, unless kept.
    if !spec.job.keep {
        for (p, id) in &laid_out {
            rec.notes.extend(runner::remove_laid_out(p, *id));
        }
        if let Some(d) = &own_dir {
            let _ = std::fs::remove_dir(d);
        }
    } else if let Some(d) = &own_dir {
        crate::leftover::clear_run_of(d);
    }
    let own_code = if rec.usage {
        2
    } else if rec.error.is_some() || rec.status == runner::RunStatus::Failed {
        1
    } else {
        0
    };
    let bytes = serde_json::to_vec(&rec)?;
    let all = world.gather_reported("collecting the results", timeout, &bytes);
    let Some(all) = all else {
        return Ok(Ending::Done(own_code));
    };
    if parent_made && !spec.job.keep {
        let _ = std::fs::remove_dir(layout::parent_dir(&path));
    } else if parent_made {
        crate::leftover::clear_run_of(&layout::parent_dir(&path));
    }
    let records = reported_records(&all, &hosts, &job_targets(spec, n, shift))?;
    if let Some((true, message)) = aggregate::start_refusal(&records) {
        return Ok(Ending::Refused {
            usage: true,
            message,
        });
    }
    Ok(Ending::Result(Box::new(aggregate::build(
        spec, &spec.job, &records, shift,
    ))))
}

/// Every rank's record at rank 0 from what each sent (`all`: one slot per rank); a rank that
/// did not report (lost: killed, or ended with the MPI job before it could) gets a record of
/// its own that fails the run and names it, with its host and its targets (`targets`).
pub(super) fn reported_records(
    all: &[Option<Vec<u8>>],
    hosts: &[String],
    targets: &dyn Fn(u32) -> Vec<String>,
) -> anyhow::Result<Vec<RankRecord>> {
    let mut records = Vec::with_capacity(all.len());
    for (rank, bytes) in all.iter().enumerate() {
        let rank = rank as u32;
        records.push(match bytes {
            Some(b) => serde_json::from_slice(b)?,
            None => {
                let host = hosts.get(rank as usize).map_or("unknown-host", |h| h);
                RankRecord::lost(rank, host, targets(rank))
            }
        });
    }
    Ok(records)
}

/// The targets of each rank of `spec` (for the record of a rank that did not report).
fn job_targets(spec: &DistSpec, n: u32, shift: Option<u32>) -> impl Fn(u32) -> Vec<String> + '_ {
    move |rank| {
        layout::rank_job(spec, rank, n, shift)
            .0
            .targets
            .iter()
            .map(|t| t.display().to_string())
            .collect()
    }
}

/// A command every rank runs on its own, with nothing to merge (`fsbench trace -- CMD` under
/// mpirun: each rank captures its own command): `f(rank)` gives this rank's exit status and
/// one line. Rank 0 gets every rank's line in rank order (naming the rank and its host) once
/// all are done, waiting for them at most `wait`, and the worst status of the ranks; the
/// other ranks their own status and no lines.
pub(crate) fn each_rank(
    wait: Duration,
    f: impl FnOnce(u32) -> (i32, String),
) -> anyhow::Result<(i32, Vec<String>)> {
    let world = World::init()?;
    let (code, line) = f(world.rank);
    let bytes = serde_json::to_vec(&(code, &world.host, line))?;
    let mut status = code;
    let mut lines = Vec::new();
    if let Some(all) = world.gather("collecting every rank's line", wait, &bytes) {
        for (rank, b) in all.iter().enumerate() {
            let (c, host, line): (i32, String, String) = serde_json::from_slice(b)?;
            lines.push(format!("rank {rank} on {host}: {line}"));
            if c != 0 && (status == 0 || c > status) {
                status = c;
            }
        }
    }
    world.meet("the end of the run", Duration::from_secs(600));
    Ok((status, lines))
}
