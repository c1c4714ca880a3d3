//! The one MPI executor: any kind of run ([`Distributed`]: a Job, a workload, a replay, a
//! backup phase) on every rank, with one rank setup, one start barrier, one stonewall, one
//! gather and one merge. The kind knows nothing of MPI beyond the collective calls of its own
//! preparation; it says how this rank's part is made and handed to its local run, how that run
//! is invoked, and what of its outcome goes into the rank's record.
//!
//! Only the rank's main thread calls MPI (thread level FUNNELED); the kind's run goes on a
//! thread of its own and talks to the main thread through channels at its two hooks
//! (`runner::Gate`): "prepared, may I start?" and "my timed I/O is over, may I clean up?". A
//! run with several timed parts (a workload's `run` commands) asks at each. Every meeting
//! point times out (`--mpi-timeout`), so no rank waits for ever for one that hung.
//!
//! The clock: the main thread reads CLOCK_MONOTONIC as it leaves the start barrier and at
//! once releases the prepared workers itself (the run hands it the gate's opener), so the
//! workers wake one thread hop after the barrier. A rank's I/O span is taken from its workers'
//! own loop clocks (CLOCK_MONOTONIC, shared by every process of the host) where the run keeps
//! them, not from when the main thread hears that they ended: with more ranks than cores,
//! those wake-ups could cost more than a short run's I/O.

use super::aggregate::{self, RankRecord, RunMark};
use super::observe::{self, RankObserve};
use super::{one_line, Ending, Stonewall, World};
use crate::result::{RunResult, StonewallReport};
use crate::runner::{self, drive::Opener, live::Watching};
use fsbench_core::observe::Scope;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A rank's local run as its kind hands it out: given a maker of the gate of each timed part
/// (`runner::Gate`) and how it is watched, it runs this rank's part on the run thread.
pub(super) type LocalRun<T> =
    Box<dyn FnOnce(&mut dyn FnMut() -> runner::Gate, Watching) -> anyhow::Result<T> + Send>;

/// One kind of distributed run. Every rank makes the same collective calls in the same order
/// whatever happened to it, so a kind's methods that take the [`World`] must make theirs
/// whether or not this rank's part could be made.
pub(super) trait Distributed {
    /// What this rank's local run returns.
    type Out: Send + 'static;

    /// Make this rank's part before the start (its directory, its files, its share of a
    /// shared file), `hosts` holding every rank's host. An error: this rank cannot run, and
    /// the run is called off on every rank.
    fn prepare(
        &mut self,
        world: &World,
        hosts: &[String],
        rec: &mut RankRecord,
    ) -> anyhow::Result<()>;

    /// The targets of rank `rank` (its row; also for a rank lost with the MPI job).
    fn targets(&self, rank: u32) -> Vec<String>;

    /// What this rank's observers (`--iostat`, `--trace`) watch; None: nothing.
    fn scope(&self) -> Option<Scope> {
        None
    }

    /// Whether this rank starts its run before [`Distributed::handoff`] (a rank that opens
    /// what another creates starts after it).
    fn first(&self, _rank: u32) -> bool {
        true
    }

    /// Once the first ranks' runs are prepared (`ready`: this rank's, when it is one of
    /// them): what they made is handed to the others. Whether this rank may start its run.
    fn handoff(
        &mut self,
        _world: &World,
        _ready: bool,
        _rec: &mut RankRecord,
    ) -> anyhow::Result<bool> {
        Ok(true)
    }

    /// Whether the run has several timed parts, each with its own start barrier (a
    /// workload's `run` commands); else one.
    fn parts(&self) -> bool {
        false
    }

    /// This rank's local run, with its part as prepared.
    fn launch(&mut self) -> LocalRun<Self::Out>;

    /// Take what the run returned into this rank's record.
    fn record(&mut self, out: Self::Out, timing: &Timing, rec: &mut RankRecord);

    /// After every rank's run: remove what this rank made (unless kept).
    fn clean_up(&mut self, _world: &World, _rec: &mut RankRecord) {}

    /// After every rank's record is sent, on every rank: what removes what the ranks shared,
    /// giving notes for the Result. It owns what it needs: once the MPI job is ending (a rank
    /// was lost) it runs only after rank 0 wrote the Result ([`World::after_result`]).
    fn finish(&mut self) -> Removal {
        Box::new(Vec::new)
    }

    /// Rank 0: why the run could not start, from every rank's record, or None (it gets a
    /// Result). By default a rank's refusal of the user's input refuses the run.
    fn refusal(&self, records: &[RankRecord]) -> Option<(bool, String)> {
        aggregate::start_refusal(records).filter(|(usage, _)| *usage)
    }

    /// Rank 0: the Result of the kind's own run from every rank's record (rank order): what
    /// it measured, exactly merged; the ranks' rows, the `distributed` section and what the
    /// observers saw are added by the executor.
    fn merge(&mut self, records: &[RankRecord]) -> anyhow::Result<RunResult>;

    /// `distributed.layout`, and the `--reorder-ranks` shift.
    fn layout(&self) -> (&'static str, Option<u32>);

    /// The stonewall section over every rank's record (one timed part by default).
    fn stonewall(&self, mode: Stonewall, records: &[RankRecord]) -> StonewallReport {
        aggregate::run_stonewall(mode, records)
    }

    /// The client-cache warning, if the ranks read what their own host wrote (`hosts`: how
    /// many hosts ran).
    fn cache_note(&self, _records: &[RankRecord], _hosts: usize) -> Option<String> {
        None
    }
}

/// A kind's removal of what the ranks shared ([`Distributed::finish`]): its notes.
pub(super) type Removal = Box<dyn FnOnce() -> Vec<String>>;

/// What every kind's run on ranks shares.
pub(super) struct Settings {
    /// Longest wait at a meeting point.
    pub timeout: Duration,
    pub stonewall: Option<Stonewall>,
    /// `--iostat`, `--trace` on every rank.
    pub observe: RankObserve,
    /// How rank 0 watches its own part.
    pub watch: Watching,
    /// Added to the start barrier's name in a timeout's message (` of the backup archive`).
    pub barrier: String,
    /// A count the ranks agree on at the end of every timed part: each rank's run offers its
    /// own before its I/O ends, and finds every rank's least there after (mdtest's items
    /// made before a stonewall). None: nothing is agreed.
    pub agree: Option<Arc<fsbench_core::mdtest::Agreed>>,
}

/// When this rank's run started and ended, as its main (MPI) thread saw it.
pub(super) struct Timing {
    /// This rank's run was prepared for its first timed part.
    pub ready: bool,
    /// Every rank's was: the first part started.
    pub all_ok: bool,
    /// Clock zero, the exit of the first start barrier (CLOCK_MONOTONIC ns, and an Instant).
    pub t0_ns: u64,
    pub t0: Instant,
    /// Each timed part that started, on that clock.
    pub marks: Vec<RunMark>,
}

impl Timing {
    /// When this rank's (only) timed I/O ended, seconds after clock zero: when its run said
    /// so, or now.
    pub(super) fn end_s(&self) -> f64 {
        self.marks
            .first()
            .map_or_else(|| self.t0.elapsed().as_secs_f64(), |m| m.end_s)
    }
}

/// What a rank's run thread tells the main (MPI) thread.
enum Event<T> {
    /// Every worker is prepared: the opener of their gate.
    Ready(Opener),
    IoDone,
    Finished(anyhow::Result<T>),
}

/// This rank's part of the run of `kind`; rank 0 gets the one Result.
pub(super) fn execute<K: Distributed>(
    world: &World,
    kind: &mut K,
    settings: &Settings,
) -> anyhow::Result<Ending> {
    let rank = world.rank;
    runner::signal::install();
    let hosts = world.all_hosts(settings.timeout);
    let mut rec = RankRecord::new(rank, &world.host, Vec::new());
    let mut local_err = kind.prepare(world, &hosts, &mut rec).err();
    rec.targets = kind.targets(rank);
    // --iostat, --trace: this rank's observers, started right before its run.
    let mut observer = None;
    if let (None, Some(scope)) = (&local_err, kind.scope()) {
        match observe::start(&settings.observe, rank, &hosts, &scope) {
            Ok(o) => observer = o,
            Err(e) => local_err = Some(e),
        }
    }
    // Rank 0's own watching, with this rank's trace session when it traces.
    let watch = match &observer {
        Some(o) => o.watching(&settings.watch),
        None => settings.watch.clone(),
    };
    let mut run = RunThread::new();
    let mut opener = None;
    // A rank called off in its preparation (another rank could not make its part) runs
    // nothing.
    let runs = |e: &Option<anyhow::Error>, rec: &RankRecord| e.is_none() && !rec.called_off;
    let first = runs(&local_err, &rec) && kind.first(rank);
    if first {
        match run.launch(kind.launch(), watch.clone()) {
            Ok(o) => opener = o,
            Err(e) => local_err = Some(e),
        }
    }
    let may = kind.handoff(world, opener.is_some(), &mut rec)?;
    if runs(&local_err, &rec) && !first && may {
        match run.launch(kind.launch(), watch) {
            Ok(o) => opener = o,
            Err(e) => local_err = Some(e),
        }
    }
    let timing = timed_parts(world, kind.parts(), settings, opener, &mut run);
    rec.stopped = timing.marks.iter().any(|m| m.stopped);
    match run.finish() {
        Some(Ok(out)) => kind.record(out, &timing, &mut rec),
        // Ready, but another rank was not: that rank's failure is the run's.
        Some(Err(_)) if timing.ready && !timing.all_ok => rec.called_off = true,
        Some(Err(e)) => failed(&mut rec, &e),
        None => match local_err {
            Some(e) => failed(&mut rec, &e),
            None => rec.called_off |= !timing.all_ok,
        },
    }
    finish_observing(observer, &mut rec, timing.t0);
    kind.clean_up(world, &mut rec);
    let own_code = if rec.usage {
        2
    } else if rec.error.is_some() || rec.status == runner::RunStatus::Failed {
        1
    } else {
        0
    };
    let bytes = serde_json::to_vec(&rec)?;
    let gathered = world.gather_reported("collecting the results", settings.timeout, &bytes);
    let removal = kind.finish();
    // Once the job is ending, mpirun's SIGKILL may come at any moment: rank 0 writes the
    // Result naming the lost rank first, and removes what it can after.
    let notes = if world.ending() {
        world.after_result(move || drop(removal()));
        Vec::new()
    } else {
        removal()
    };
    let Some(all) = gathered else {
        return Ok(Ending::Done(own_code));
    };
    let records = reported_records(&all, &hosts, &|r| kind.targets(r))?;
    if let Some((usage, message)) = kind.refusal(&records) {
        return Ok(Ending::Refused { usage, message });
    }
    let mut result = kind.merge(&records)?;
    let (layout, shift) = kind.layout();
    let stonewall = settings
        .stonewall
        .map(|mode| kind.stonewall(mode, &records));
    aggregate::distribute(&mut result, &records, layout, shift, stonewall);
    if let Some(n) = kind.cache_note(&records, result.hosts.len()) {
        result.notes.push(n);
    }
    aggregate::note_called_off(&mut result, &records);
    result.notes.extend(notes);
    Ok(Ending::Result(Box::new(result)))
}

/// A rank that could not run: why, in one line of its record.
fn failed(rec: &mut RankRecord, e: &anyhow::Error) {
    rec.usage = crate::error::is_usage(e);
    rec.error = Some(one_line(e));
}

/// Every timed part of this rank's run (`opener`: its first part's, None when it is not
/// ready): every rank's run ready, then one barrier whose exit starts it; every rank's I/O of
/// the part over before any goes on. A rank whose run is over (or failed before a part) calls
/// the next part off on every rank, so all ranks make the same collective calls and leave
/// together.
fn timed_parts<T: Send + 'static>(
    world: &World,
    parts: bool,
    settings: &Settings,
    mut opener: Option<Opener>,
    run: &mut RunThread<T>,
) -> Timing {
    let mut timing: Option<Timing> = None;
    loop {
        let step = match timing {
            None => format!("the start barrier{}", settings.barrier),
            Some(_) => format!("the start barrier of the next run{}", settings.barrier),
        };
        let ready = opener.is_some();
        let (all_ok, t_ns, start) =
            start_together(world, &step, settings.timeout, opener.as_ref(), &run.go);
        let t = timing.get_or_insert(Timing {
            ready,
            all_ok,
            t0_ns: t_ns,
            t0: start,
            marks: Vec::new(),
        });
        if !all_ok {
            break;
        }
        // The stonewall's clock zero is this part's barrier; the marks are on the first's.
        let barrier_s = start.duration_since(t.t0).as_secs_f64();
        let io = wait_io(world, settings.stonewall, run, start);
        t.marks.push(RunMark {
            barrier_s,
            end_s: io
                .end_s
                .map_or_else(|| t.t0.elapsed().as_secs_f64(), |e| barrier_s + e),
            stopped: io.stopped,
        });
        end_io(world, settings.timeout, &io);
        if let Some(a) = &settings.agree {
            let least = world.all_min(
                "agreeing on the count of the part",
                settings.timeout,
                a.offered(),
            );
            a.settle(least);
        }
        // Every rank's I/O of the part is over: the run may go on (and remove what it made).
        let _ = run.clean.send(());
        if !parts {
            break;
        }
        opener = run.wait_ready();
    }
    timing.expect("the first start barrier is always met")
}

/// A rank's run on a thread of its own, and the main thread's ends of its channels: the
/// events it sends, the answer of its start gate, the word that it may go on past its I/O.
struct RunThread<T> {
    events: Receiver<Event<T>>,
    go: Sender<bool>,
    clean: Sender<()>,
    /// The thread's ends of the channels, until it starts.
    ends: Option<ThreadEnds<T>>,
    handle: Option<std::thread::JoinHandle<()>>,
    /// The run's outcome, once it came.
    early: Option<anyhow::Result<T>>,
}

/// The run thread's ends of its channels: events out, the start gate's answer and the word
/// to go on past its I/O in.
type ThreadEnds<T> = (Sender<Event<T>>, Receiver<bool>, Receiver<()>);

impl<T: Send + 'static> RunThread<T> {
    fn new() -> RunThread<T> {
        let (tx, events) = mpsc::channel();
        let (go, go_rx) = mpsc::channel();
        let (clean, clean_rx) = mpsc::channel();
        RunThread {
            events,
            go,
            clean,
            ends: Some((tx, go_rx, clean_rx)),
            handle: None,
            early: None,
        }
    }

    /// Start `run` on its thread, given the gate of each timed part: its workers' readiness
    /// and the end of their I/O are sent as events, they start when `go` says so (false:
    /// called off), and the run goes on past a part's I/O only when `clean` says every rank's
    /// I/O is over. Its outcome is sent last. The opener of its first part once it is
    /// prepared (None: it ended before).
    fn launch(&mut self, run: LocalRun<T>, watch: Watching) -> anyhow::Result<Option<Opener>> {
        let (tx, go, clean) = self.ends.take().expect("a rank's run starts once");
        let spawned = std::thread::Builder::new()
            .name("fsbench-rank".into())
            .spawn(move || {
                // Every part's gate waits on the same two channels, one part after the other.
                let go = Arc::new(Mutex::new(go));
                let clean = Arc::new(Mutex::new(clean));
                let hooks = tx.clone();
                let mut gates = move || {
                    let (t1, t2) = (hooks.clone(), hooks.clone());
                    let (go, clean) = (go.clone(), clean.clone());
                    runner::Gate {
                        start: Box::new(move |opener| {
                            let _ = t1.send(Event::Ready(opener));
                            let go = go.lock().unwrap_or_else(|p| p.into_inner());
                            go.recv().unwrap_or(false)
                        }),
                        after_io: Box::new(move || {
                            let _ = t2.send(Event::IoDone);
                            let _ = clean.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        }),
                    }
                };
                let _ = tx.send(Event::Finished(run(&mut gates, watch)));
            });
        match spawned {
            Ok(h) => {
                self.handle = Some(h);
                Ok(self.wait_ready())
            }
            Err(e) => Err(anyhow::anyhow!("cannot start the rank's run thread: {e}")),
        }
    }

    /// Wait until the run's next part is prepared (its workers' opener) or the run has
    /// ended.
    fn wait_ready(&mut self) -> Option<Opener> {
        if self.early.is_some() || self.handle.is_none() {
            return None;
        }
        loop {
            match self.events.recv() {
                Ok(Event::Ready(opener)) => return Some(opener),
                Ok(Event::Finished(r)) => {
                    self.early = Some(r);
                    return None;
                }
                Ok(Event::IoDone) => {}
                Err(_) => return None,
            }
        }
    }

    /// The run's outcome once no part starts any more (a run still at its gate is called
    /// off, one past its I/O goes on to remove what it made), the thread joined.
    fn finish(self) -> Option<anyhow::Result<T>> {
        let RunThread {
            events,
            go,
            clean,
            handle,
            mut early,
            ..
        } = self;
        drop((go, clean));
        if early.is_none() && handle.is_some() {
            while let Ok(ev) = events.recv() {
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
}

/// The start barrier: every rank says whether its run is ready; if all are, clock zero is
/// taken and this rank's workers are released from this thread (one thread hop; see the
/// module notes), else its run is called off. Whether all were ready, and clock zero (barrier
/// clock in ns, and as an Instant).
fn start_together(
    world: &World,
    step: &str,
    timeout: Duration,
    opener: Option<&Opener>,
    go: &Sender<bool>,
) -> (bool, u64, Instant) {
    let all_ok = world.all_min(step, timeout, opener.is_some() as u64) == 1;
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

/// Stop this rank's observers after its timed I/O (`t0`: the rank's clock zero; its I/O
/// began `rec.start_s` after it, where the device samples' `t_s` count from). What they saw
/// goes into the rank's record; a failure to finish them (a trace that cannot be written)
/// fails the rank's run, as it fails a run on one host.
fn finish_observing(
    observer: Option<fsbench_core::observe::Observer>,
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
struct IoEnd {
    /// When the rank's run said its I/O was over (seconds after the part's start); None: it
    /// ended otherwise (its outcome came first).
    end_s: Option<f64>,
    /// The stonewall stopped it.
    stopped: bool,
    /// It sent the stonewall message (it finished first as far as it knew).
    sent: bool,
    /// Stonewall messages it received.
    got: u64,
}

/// Wait for the end of this rank's timed I/O (its outcome is kept when it comes before the
/// end of the I/O), stopping it at the stonewall: at the first other rank's
/// message or `d` seconds after the part's start `t0`, through the runner's stop flag
/// (`signal::stop_workers`, read by every worker loop between I/Os). A rank whose I/O ended
/// first tells the others.
fn wait_io<T>(
    world: &World,
    stonewall: Option<Stonewall>,
    run: &mut RunThread<T>,
    t0: Instant,
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
        match run.events.recv_timeout(wait) {
            Ok(Event::IoDone) => {
                io.end_s = Some(t0.elapsed().as_secs_f64());
                break;
            }
            Ok(Event::Finished(r)) => {
                run.early = Some(r);
                break;
            }
            Ok(Event::Ready(_)) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        match stonewall {
            Some(Stonewall::FirstFinish) if world.poll_stone().is_some() => {
                io.got += 1;
                if !io.stopped {
                    runner::signal::stop_workers();
                    io.stopped = true;
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

/// The meeting at the end of every rank's I/O of a part (`io`: this rank's); the stonewall
/// messages still on their way are taken, so none is left in flight (nor seen by the next
/// part), and a stonewall stop is taken back once the stopped workers are over, so the next
/// timed part of this process starts unstopped.
fn end_io(world: &World, timeout: Duration, io: &IoEnd) {
    let senders = world.all_sum("the end of every rank's I/O", timeout, io.sent as u64);
    world.drain_stones(senders.saturating_sub(io.sent as u64 + io.got));
    if io.stopped {
        runner::signal::clear_stonewall_stop();
    }
}

/// Every rank's record at rank 0 from what each sent (`all`: one slot per rank); a rank that
/// did not report (lost: killed, or ended with the MPI job before it could) gets a record of
/// its own that fails the run and names it, with its host and its targets (`targets`).
fn reported_records(
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
