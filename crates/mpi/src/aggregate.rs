//! One Result from every rank's run: each rank sends rank 0 a [`RankRecord`] (its threads'
//! exact `Stats`, histograms included, its failures, and its start and end on the barrier
//! clock, whatever the kind of run); rank 0 merges them. Each kind's own part of the Result
//! is merged here from the records (a Job's and a replay's threads as one runner outcome, a
//! workload's runs flowop by flowop, a backup phase's counts), and [`distribute`] adds what
//! every kind's Result on ranks has: the per-rank rows, the hosts, the full and stonewall
//! figures, the spread and what the observers saw.

use super::layout::{DistSpec, Stonewall};
use crate::result::{
    DistributedReport, FilesetInfo, PsrunLine, RankReport, RunResult, StonewallReport,
};
use crate::runner::{IoFailure, Plan, RunOutcome, RunStatus, ThreadOutcome};
use crate::stats::{Stats, StatsReport};
use fsbench_core::job::Job;
use fsbench_core::verify::report::VerifyReport;
use fsbench_core::workload::interp::{is_io, End, ThreadOutcome as WlThreadOutcome};
use serde::{Deserialize, Serialize};

/// One worker thread of a rank, as sent to rank 0.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ThreadRecord {
    pub user: usize,
    pub thread: u32,
    pub stats: Stats,
    pub failure: Option<IoFailure>,
    /// What `--verify` found in the blocks this thread wrote.
    #[serde(default)]
    pub verify: Option<fsbench_core::verify::report::VerifyReport>,
}

/// What one rank did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RankRecord {
    pub rank: u32,
    pub host: String,
    pub targets: Vec<String>,
    /// Why this rank did not run (a refusal or an error before the start), if it did not.
    pub error: Option<String>,
    /// The refusal was the user's input or the target's state (exit status 2).
    pub usage: bool,
    /// This rank ran nothing because another one could not start.
    pub called_off: bool,
    pub status: RunStatus,
    pub failures: Vec<IoFailure>,
    pub notes: Vec<String>,
    pub plan: Option<Plan>,
    pub threads: Vec<ThreadRecord>,
    pub started_unix_s: f64,
    /// Start and end of the timed I/O, seconds after this rank left the start barrier.
    pub start_s: f64,
    pub end_s: f64,
    /// Stopped by the stonewall before its work was done.
    pub stopped: bool,
    /// Read through the page cache data its own host wrote (see `cache_note`).
    pub own_host_data: bool,
    /// With `--reorder-ranks`: the rank whose data this rank read (a workload: whose
    /// filesets it ran over, in that rank's directory).
    #[serde(default)]
    pub data_of_rank: Option<u32>,
    /// A workload rank's measured run (its threads' per-flowop statistics).
    #[serde(default)]
    pub workload: Option<WorkloadRank>,
    /// A replaying rank's call kinds (None: it did not replay).
    #[serde(default)]
    pub replay: Option<fsbench_core::replay::ReplayParts>,
    /// A backup restore: whether this rank's restored tree was byte-identical.
    #[serde(default)]
    pub verified: Option<bool>,
    /// What this rank's observers saw (`super::observe`): its trace, its host's devices.
    #[serde(default)]
    pub observed: super::observe::RankObserved,
    /// Made by rank 0 for a rank that never reported (lost with the MPI job).
    #[serde(default)]
    pub lost: bool,
    /// An mdtest rank's measured phases (None: it ran none).
    #[serde(default)]
    pub mdtest: Option<Vec<super::mdtest::PhaseRecord>>,
    /// IO500's find: the entries this rank matched (those it looked at are its
    /// `other_ops`; None: it walked nothing).
    #[serde(default)]
    pub find_matched: Option<u64>,
}

/// What one rank of a distributed workload measured: each `run` of its script, its
/// filesets.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WorkloadRank {
    pub runs: Vec<RankRun>,
    pub filesets: Vec<FilesetInfo>,
}

/// One `run` of a rank's script: its threads' exact per-flowop statistics (histograms
/// included), its length, why it stopped, and its start and end on the rank's clock (seconds
/// after the rank left the first run's start barrier).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RankRun {
    pub outcomes: Vec<WlThreadOutcome>,
    pub duration_s: f64,
    pub stop_reason: String,
    pub psrun: Vec<PsrunLine>,
    pub started_unix_s: f64,
    pub start_s: f64,
    pub end_s: f64,
    /// The run's start barrier on the rank's clock (a `--stonewall DUR` is DUR after it).
    #[serde(default)]
    pub barrier_s: f64,
    /// The stonewall stopped this rank's run before it ended on its own.
    #[serde(default)]
    pub stopped: bool,
}

/// What the rank's main thread saw of one timed part of its run (a workload: one `run` of
/// its script): the part's start barrier and the end of the rank's I/O (seconds on the
/// rank's clock), and whether the stonewall stopped it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunMark {
    pub barrier_s: f64,
    pub end_s: f64,
    pub stopped: bool,
}

impl WorkloadRank {
    /// The rank's runs, each timed by its mark (in run order): from its threads' duration
    /// back from its end, not before its barrier; a run without a mark is timed by its own
    /// duration, ending at the last end.
    pub(crate) fn new(
        ex: fsbench_core::workload::run::Executed,
        marks: &[RunMark],
    ) -> WorkloadRank {
        let filesets = ex.result.workload.map(|w| w.filesets).unwrap_or_default();
        let last = marks.last().map_or(0.0, |m| m.end_s);
        let runs = ex
            .runs
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let mark = marks.get(i).copied().unwrap_or(RunMark {
                    barrier_s: 0.0,
                    end_s: last,
                    stopped: false,
                });
                let start_s = (mark.end_s - r.duration_s).max(mark.barrier_s);
                let end_s = mark.end_s;
                RankRun {
                    outcomes: r.outcomes,
                    duration_s: r.duration_s,
                    stop_reason: r.stop_reason,
                    psrun: r.psrun,
                    started_unix_s: r.started_unix_s,
                    start_s,
                    end_s,
                    barrier_s: mark.barrier_s,
                    stopped: mark.stopped,
                }
            })
            .collect();
        WorkloadRank { runs, filesets }
    }

    /// What `--verify` found in this rank's threads' reads (None: not verifying).
    fn verify_report(&self) -> Option<VerifyReport> {
        VerifyReport::merged(
            self.runs
                .iter()
                .flat_map(|r| r.outcomes.iter())
                .filter_map(|o| o.verify.as_ref()),
        )
    }

    /// The I/O flowops of every thread of every run merged (what the IO Summaries count).
    fn io_stats(&self) -> Stats {
        let mut s = Stats::default();
        for o in self.runs.iter().flat_map(|r| r.outcomes.iter()) {
            for f in o.flowops.iter().filter(|f| is_io(f.kind)) {
                s += &f.stats;
            }
        }
        s
    }
}

impl RankRecord {
    pub(crate) fn new(rank: u32, host: &str, targets: Vec<String>) -> RankRecord {
        RankRecord {
            rank,
            host: host.to_string(),
            targets,
            error: None,
            usage: false,
            called_off: false,
            status: RunStatus::Complete,
            failures: Vec::new(),
            notes: Vec::new(),
            plan: None,
            threads: Vec::new(),
            started_unix_s: 0.0,
            start_s: 0.0,
            end_s: 0.0,
            stopped: false,
            own_host_data: false,
            data_of_rank: None,
            workload: None,
            replay: None,
            verified: None,
            observed: Default::default(),
            lost: false,
            mdtest: None,
            find_matched: None,
        }
    }

    /// The record rank 0 makes for a rank that never sent its own: the MPI job ended without
    /// it (it was killed, or mpirun ended it before it could report). It fails the run;
    /// what it did is not counted.
    pub(crate) fn lost(rank: u32, host: &str, targets: Vec<String>) -> RankRecord {
        let mut r = RankRecord::new(rank, host, targets);
        r.lost = true;
        r.status = RunStatus::Failed;
        r.error = Some(
            "lost: this rank never reported its result (it died, or mpirun ended it with the job); its I/O is not counted"
                .into(),
        );
        r
    }

    /// Take what the runner measured.
    /// This rank's outcome. `t0_ns` is the rank's clock zero (CLOCK_MONOTONIC as it left the
    /// start barrier); its I/O span is its workers' loop clocks on that scale. `heard_end_s`
    /// (when the main thread heard the I/O was over) is used only when no worker clocked a
    /// loop.
    pub(crate) fn fill(&mut self, o: RunOutcome, t0_ns: u64, heard_end_s: f64) {
        self.status = o.status;
        self.failures = o.failures;
        self.notes = o.plan.notes.clone();
        self.started_unix_s = o.started_unix_s;
        let (first, last) = o
            .threads
            .iter()
            .filter(|t| t.stats.loop_end_ns != 0)
            .fold((u64::MAX, 0u64), |(a, b), t| {
                (a.min(t.stats.loop_start_ns), b.max(t.stats.loop_end_ns))
            });
        let on_clock = |ns: u64| ns.saturating_sub(t0_ns) as f64 / 1e9;
        if last != 0 {
            self.start_s = on_clock(first);
            self.end_s = on_clock(last).max(self.start_s);
        } else {
            self.start_s = (heard_end_s - o.elapsed_s).max(0.0);
            // --verify: the read-back after the timed loop is not part of the rank's I/O time.
            let read_back_s = o
                .threads
                .iter()
                .filter_map(|t| t.verify.as_ref().map(|v| v.read_back_s))
                .fold(0.0, f64::max);
            self.end_s = (heard_end_s - read_back_s).max(self.start_s);
        }
        self.threads = o
            .threads
            .into_iter()
            .map(|t| ThreadRecord {
                user: t.user,
                thread: t.thread,
                stats: t.stats,
                failure: t.failure,
                verify: t.verify,
            })
            .collect();
        self.plan = Some(o.plan);
    }

    pub(super) fn stats(&self) -> Stats {
        if let Some(w) = &self.workload {
            return w.io_stats();
        }
        let mut s = Stats::default();
        for t in &self.threads {
            s += &t.stats;
        }
        s
    }

    pub(super) fn ran(&self) -> bool {
        self.error.is_none() && !self.called_off
    }
}

/// Why the run could not start, for rank 0 to report: the first rank that refused or failed
/// before the start (not the ranks called off because of it). Usage refusals come first.
pub(crate) fn start_refusal(records: &[RankRecord]) -> Option<(bool, String)> {
    let first = records
        .iter()
        .filter(|r| r.error.is_some() && !r.called_off && !r.lost)
        .min_by_key(|r| (!r.usage, r.rank))?;
    Some((
        first.usage,
        format!(
            "rank {} on {}: {}",
            first.rank,
            first.host,
            first.error.as_deref().unwrap_or("")
        ),
    ))
}

fn prefixed(f: &IoFailure, r: &RankRecord, user_base: usize) -> IoFailure {
    IoFailure {
        user: user_base + f.user,
        thread: f.thread,
        path: f.path.clone(),
        offset: f.offset,
        message: format!("rank {} on {}: {}", r.rank, r.host, f.message),
    }
}

fn rate(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / secs
    } else {
        0.0
    }
}

/// Every rank's part as one runner outcome (rank order): the targets and threads of every
/// rank (each rank's users numbered after the previous ranks'), the failures naming their
/// rank (a rank that did not start fails with its reason), every note once (another rank's
/// prefixed with it), the worst status; `cache` when rank 0 has no plan; timed over the
/// ranks' span on the barrier clock.
pub(super) fn merge_outcome(
    records: &[RankRecord],
    cache: fsbench_core::job::CachePolicy,
) -> RunOutcome {
    let mut targets = Vec::new();
    let mut threads = Vec::new();
    let mut failures = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut status = RunStatus::Complete;
    for r in records {
        let base = targets.len();
        if let Some(p) = &r.plan {
            targets.extend(p.targets.iter().cloned());
        }
        for t in &r.threads {
            threads.push(ThreadOutcome {
                user: base + t.user,
                thread: t.thread,
                stats: t.stats.clone(),
                failure: t.failure.as_ref().map(|f| prefixed(f, r, base)),
                verify: t
                    .verify
                    .as_ref()
                    .map(|v| super::verify::for_rank(v, r.rank, base)),
                intervals: Vec::new(),
            });
        }
        failures.extend(r.failures.iter().map(|f| prefixed(f, r, base)));
        if r.error.is_some() && !r.called_off && r.failures.is_empty() {
            failures.push(IoFailure {
                user: base,
                thread: 0,
                path: r.targets.first().cloned().unwrap_or_default(),
                offset: None,
                message: format!(
                    "rank {} on {}: {}",
                    r.rank,
                    r.host,
                    r.error.as_deref().unwrap_or("")
                ),
            });
        }
        status = match (status, r.status) {
            (RunStatus::Failed, _) | (_, RunStatus::Failed) => RunStatus::Failed,
            (RunStatus::Partial, _) | (_, RunStatus::Partial) => RunStatus::Partial,
            _ => RunStatus::Complete,
        };
        if r.error.is_some() {
            status = RunStatus::Failed;
        }
        for n in &r.notes {
            let n = if r.rank == 0 {
                n.clone()
            } else {
                format!("rank {}: {n}", r.rank)
            };
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
    }
    let ran: Vec<&RankRecord> = records.iter().filter(|r| r.ran()).collect();
    let rank0 = &records[0];
    RunOutcome {
        plan: Plan {
            targets,
            cache: rank0.plan.as_ref().map(|p| p.cache).unwrap_or(cache),
            notes,
            // The whole run covered all of every target.
            part: None,
        },
        threads,
        status,
        failures,
        elapsed_s: Clock::of(&ran).span,
        started_unix_s: rank0.started_unix_s,
        probes: serde_json::Map::new(),
        // The ranks' threads bring no intervals of their own to merge.
        status_interval_ns: None,
        steady: None,
        host: None,
        stability_grid_ns: None,
        host_ticks: Vec::new(),
    }
}

/// A rank row per record and the hosts they ran on, then the `explain` checks again: they
/// judge the CPUs each rank could use against the threads per rank.
fn add_ranks(result: &mut RunResult, records: &[RankRecord]) {
    result.ranks = records.iter().map(rank_row).collect();
    for r in records {
        if !result.hosts.contains(&r.host) {
            result.hosts.push(r.host.clone());
        }
    }
    crate::explain::refresh(result);
}

/// The Result of a Job's run on every rank (rank 0), from every rank's record in rank order:
/// every rank's threads as the run's, the total over every rank timed from the first start
/// to the last end.
pub(crate) fn job_result(job: &Job, records: &[RankRecord]) -> RunResult {
    let outcome = merge_outcome(records, job.cache);
    let mut result = RunResult::from_outcome(job, &outcome);
    result.total = StatsReport::from_stats(&total(records), true);
    result
}

/// Every rank's counts summed exactly, timed from the first start to the last end on the
/// barrier clock.
pub(super) fn total(records: &[RankRecord]) -> Stats {
    let ran: Vec<&RankRecord> = records.iter().filter(|r| r.ran()).collect();
    let mut total = Stats::default();
    for r in records {
        total += &r.stats();
    }
    total.elapsed_s = Clock::of(&ran).span;
    total
}

/// What every kind's Result on ranks has (rank 0, `result` the kind's own merge of
/// `records`): a row per rank and the hosts, the `distributed` section (the full figure over
/// every rank's bytes, the slowest and the fastest rank, `stonewall`) and what every rank's
/// observers saw.
pub(super) fn distribute(
    result: &mut RunResult,
    records: &[RankRecord],
    layout: &str,
    reorder_shift: Option<u32>,
    stonewall: Option<StonewallReport>,
) {
    let ran: Vec<&RankRecord> = records.iter().filter(|r| r.ran()).collect();
    let clock = Clock::of(&ran);
    let bytes: u64 = records.iter().map(|r| r.stats().bytes()).sum();
    add_ranks(result, records);
    let (slowest, fastest) = slowest_fastest(&result.ranks, records);
    result.distributed = Some(DistributedReport {
        stonewall,
        ..clock.report(layout, reorder_shift, bytes, slowest, fastest)
    });
    let seen: Vec<super::observe::Seen> = records
        .iter()
        .map(|r| super::observe::Seen {
            rank: r.rank,
            host: &r.host,
            observed: &r.observed,
        })
        .collect();
    super::observe::merge(&seen, result);
}

/// The note on the ranks that ran nothing because another could not start.
pub(super) fn note_called_off(result: &mut RunResult, records: &[RankRecord]) {
    if records.iter().any(|r| r.called_off) {
        result
            .notes
            .push("ranks marked 'called off' ran nothing: another rank could not start".into());
    }
}

/// The stonewall section of one timed part on every rank (a Job's run, or a replay): the wall
/// is the end of the first rank that did all its work (`first`, that rank calling it) or DUR
/// after the start barrier; the figures are over (wall - first start) of the ranks that ran.
pub(super) fn run_stonewall(mode: Stonewall, records: &[RankRecord]) -> StonewallReport {
    let ran: Vec<&RankRecord> = records.iter().filter(|r| r.ran()).collect();
    let Clock {
        first_start,
        first_end,
        last_end,
        ..
    } = Clock::of(&ran);
    let (mode_name, wall, by) = match mode {
        Stonewall::FirstFinish => {
            // The wall is the end of the first rank that did all its work.
            let caller = ran
                .iter()
                .filter(|r| !r.stopped)
                .min_by(|a, b| a.end_s.total_cmp(&b.end_s));
            (
                "first_finish",
                caller.map(|r| r.end_s).unwrap_or(first_end),
                caller.map(|r| r.rank),
            )
        }
        Stonewall::Time(t) => ("time", t, None),
    };
    let timed = (wall - first_start).max(0.0);
    let lag = (last_end - wall).max(0.0);
    stonewall_report(mode_name, wall, by, (timed, lag), records)
}

/// The stonewall section: the wall (and the rank whose end called it), the seconds the
/// figures are over, how long after the wall the last rank stopped, and what the ranks that
/// ran did: every rank's bytes and ops summed (as its row counts them), and the least and
/// most bytes of one rank that ran.
fn stonewall_report(
    mode: &str,
    wall_s: f64,
    called_by_rank: Option<u32>,
    (timed_s, stop_lag_s): (f64, f64),
    records: &[RankRecord],
) -> StonewallReport {
    let all: Vec<Stats> = records.iter().map(|r| r.stats()).collect();
    let bytes: u64 = all.iter().map(|s| s.bytes()).sum();
    let ops: u64 = all.iter().map(|s| s.ops()).sum();
    let per_rank: Vec<&Stats> = records
        .iter()
        .zip(&all)
        .filter(|(r, _)| r.ran())
        .map(|(_, s)| s)
        .collect();
    StonewallReport {
        mode: mode.into(),
        wall_s,
        called_by_rank,
        bytes,
        bytes_per_sec: rate(bytes, timed_s),
        stop_lag_s,
        min_rank_bytes: per_rank.iter().map(|s| s.bytes()).min().unwrap_or(0),
        max_rank_bytes: per_rank.iter().map(|s| s.bytes()).max().unwrap_or(0),
        ops,
        ops_per_sec: if timed_s > 0.0 {
            ops as f64 / timed_s
        } else {
            0.0
        },
        timed_s,
    }
}

/// The stonewall section of a distributed workload: each `run` of the script has its own
/// wall (the end of the first rank whose run was not stopped, or DUR after the run's start
/// barrier); the figures are over the sum of the runs' (wall - first start), the stop lag is
/// the longest of the runs', and `wall_s` / `called_by_rank` are the last run's.
pub(super) fn workload_stonewall(
    mode: Stonewall,
    records: &[RankRecord],
    nruns: usize,
) -> StonewallReport {
    let (mut timed, mut lag, mut wall, mut by) = (0.0f64, 0.0f64, 0.0f64, None);
    for k in 0..nruns {
        let runs: Vec<(u32, &RankRun)> = records
            .iter()
            .filter(|r| r.ran())
            .filter_map(|r| Some((r.rank, r.workload.as_ref()?.runs.get(k)?)))
            .collect();
        if runs.is_empty() {
            continue;
        }
        let first_start = runs
            .iter()
            .map(|r| r.1.start_s)
            .fold(f64::INFINITY, f64::min);
        let last_end = runs.iter().map(|r| r.1.end_s).fold(0.0, f64::max);
        (wall, by) = match mode {
            Stonewall::FirstFinish => {
                let earliest = |only_unstopped: bool| {
                    runs.iter()
                        .filter(|r| !only_unstopped || !r.1.stopped)
                        .min_by(|a, b| a.1.end_s.total_cmp(&b.1.end_s))
                        .copied()
                };
                match earliest(true) {
                    Some((rank, run)) => (run.end_s, Some(rank)),
                    None => (earliest(false).map_or(last_end, |r| r.1.end_s), None),
                }
            }
            Stonewall::Time(d) => {
                let barrier = runs
                    .iter()
                    .map(|r| r.1.barrier_s)
                    .fold(f64::INFINITY, f64::min);
                (barrier + d, None)
            }
        };
        timed += (wall - first_start).max(0.0);
        lag = lag.max(last_end - wall);
    }
    let mode_name = match mode {
        Stonewall::FirstFinish => "first_finish",
        Stonewall::Time(_) => "time",
    };
    stonewall_report(mode_name, wall, by, (timed, lag), records)
}

/// The slowest and the fastest of the ranks that ran, by their own bytes per second.
fn slowest_fastest<'a>(
    rows: &'a [RankReport],
    records: &[RankRecord],
) -> (Option<&'a RankReport>, Option<&'a RankReport>) {
    let ran = || rows.iter().filter(|row| records[row.rank as usize].ran());
    (
        ran().min_by(|a, b| a.bytes_per_sec.total_cmp(&b.bytes_per_sec)),
        ran().max_by(|a, b| a.bytes_per_sec.total_cmp(&b.bytes_per_sec)),
    )
}

/// The `run`s of a distributed workload: the most any rank that ran did.
pub(super) fn workload_runs(records: &[RankRecord]) -> usize {
    records
        .iter()
        .filter(|r| r.ran())
        .filter_map(|r| r.workload.as_ref())
        .map(|w| w.runs.len())
        .max()
        .unwrap_or(0)
}

/// The Result of a workload on every rank (rank 0), from every rank's record in rank order:
/// each `run` of the script one entry of `workload.runs`, its flowops' statistics merged
/// exactly over every rank's threads, its rates over its first start to its last end on the
/// barrier clock; each rank's filesets.
pub(crate) fn workload_result(
    src: &fsbench_core::workload::Source,
    model: &fsbench_core::workload::model::Model,
    records: &[RankRecord],
) -> RunResult {
    use fsbench_core::workload::report::{RunPart, WorkloadDoc};
    let rank0 = &records[0];
    let mut doc = WorkloadDoc::new(src, model, rank0.started_unix_s);
    let ran: Vec<&RankRecord> = records.iter().filter(|r| r.ran()).collect();
    let nruns = workload_runs(records);
    // Run k's threads of every rank that ran it.
    let mut outcomes: Vec<Vec<WlThreadOutcome>> = vec![Vec::new(); nruns];
    let mut failures = Vec::new();
    let mut verify: Option<VerifyReport> = None;
    let mut sets_before = 0;
    let mut interrupted = false;
    let mut failed = false;
    for r in records {
        let who = format!("rank {} on {}", r.rank, r.host);
        if let Some(w) = &r.workload {
            if r.ran() {
                for (k, run) in w.runs.iter().enumerate() {
                    outcomes[k].extend(run.outcomes.iter().cloned().map(|mut o| {
                        if let End::Failed(e) = &mut o.end {
                            *e = format!("{who}: {e}");
                        }
                        o
                    }));
                }
                // Its mismatches name the rank and the fileset's index among every rank's.
                if let Some(v) = w.verify_report() {
                    let v = super::verify::for_rank(&v, r.rank, sets_before);
                    match &mut verify {
                        Some(all) => all.merge(&v),
                        None => verify = Some(v),
                    }
                }
            }
            for f in &w.filesets {
                doc.add_fileset(f.clone());
            }
            sets_before += w.filesets.len();
        }
        for n in &r.notes {
            if model.notes.contains(n) {
                continue;
            }
            let n = if r.rank == 0 {
                n.clone()
            } else {
                format!("rank {}: {n}", r.rank)
            };
            if !doc.result.notes.contains(&n) {
                doc.note(n);
            }
        }
        failures.extend(r.failures.iter().map(|f| IoFailure {
            message: format!("{who}: {}", f.message),
            ..f.clone()
        }));
        if r.error.is_some() && !r.called_off && r.failures.is_empty() {
            failures.push(IoFailure {
                user: 0,
                thread: 0,
                path: r.targets.first().cloned().unwrap_or_default(),
                offset: None,
                message: format!("{who}: {}", r.error.as_deref().unwrap_or("")),
            });
        }
        interrupted |= r.status == RunStatus::Partial;
        failed |= r.status == RunStatus::Failed || r.error.is_some();
    }
    for (k, outs) in outcomes.iter().enumerate() {
        let runs: Vec<&RankRun> = ran
            .iter()
            .filter_map(|r| r.workload.as_ref()?.runs.get(k))
            .collect();
        let start = runs.iter().map(|r| r.start_s).fold(f64::INFINITY, f64::min);
        let end = runs.iter().map(|r| r.end_s).fold(0.0, f64::max);
        // The lowest rank that ran it (rank 0 when it did) gives the run's outline.
        let first = runs[0];
        let mut part = RunPart::from_outcomes(
            model,
            outs,
            k as u32 + 1,
            (end - start).max(0.0),
            first.stop_reason.clone(),
            first.psrun.clone(),
            None,
        );
        part.outline.started_unix_s = first.started_unix_s;
        part.outline.processes *= runs.len() as u64;
        // The sum of every rank's reads checked, each mismatch with its rank (below). A rank
        // whose reads did not come back failed its own run: that failure, named with the
        // rank, is among its `failures` above, and the sum adds no second one without a rank.
        part.verify = None;
        // Likewise a thread that failed: the rank's own Result already lists its failure
        // (named with the rank above); the merged threads keep it in `thread_ends` and fail
        // the run, but add it to `failures` no second time.
        part.failures.clear();
        doc.add_run(part);
    }
    if nruns > 0 {
        doc.result.verify = verify;
    }
    doc.result.failures.extend(failures);
    doc.finish(interrupted);
    if failed {
        doc.fail();
    }
    doc.result
}

/// A suite's backup phase on ranks (`super::backup`): `result` is the phase's Result as rank 0
/// made it (its target, notes and settings); this puts in every rank's counts summed exactly
/// (`total` and the phase's group, CPU time included) over the first start to the last end
/// on the barrier clock, each rank's failure naming it, and every rank's tree as a target.
pub(crate) fn phase_result(result: &mut RunResult, records: &[RankRecord]) {
    let total = total(records);
    result.total = StatsReport::from_stats(&total, true);
    if let Some(g) = result.groups.first_mut() {
        g.stats = StatsReport::from_stats(&total, false);
    }
    result.failures.clear();
    for r in records {
        let who = format!("rank {} on {}", r.rank, r.host);
        result.failures.extend(r.failures.iter().map(|f| IoFailure {
            message: format!("{who}: {}", f.message),
            ..f.clone()
        }));
        if let Some(e) = &r.error {
            result.failures.push(IoFailure {
                user: 0,
                thread: 0,
                path: r.targets.first().cloned().unwrap_or_default(),
                offset: None,
                message: format!("{who}: {e}"),
            });
        }
        if r.rank != 0 {
            for n in &r.notes {
                if !result.notes.contains(n) {
                    result.notes.push(format!("rank {}: {n}", r.rank));
                }
            }
        }
    }
    if !result.failures.is_empty() {
        result.status = RunStatus::Failed;
    }
    if let Some(p) = &mut result.plan {
        let first = p.targets.first().cloned();
        p.targets = records
            .iter()
            .filter_map(|r| {
                let mut t = first.clone()?;
                t.path = r.targets.first()?.into();
                t.size = std::fs::metadata(&t.path).map_or(t.size, |m| m.len());
                Some(t)
            })
            .collect();
    }
}

/// The ranks' times on the barrier clock: the first start, the first and the last end, and
/// the span every aggregate rate is over (last end - first start). Zeros when none ran.
#[derive(Clone, Copy)]
pub(super) struct Clock {
    pub(super) first_start: f64,
    pub(super) first_end: f64,
    pub(super) last_end: f64,
    pub(super) span: f64,
}

impl Clock {
    pub(super) fn of(ran: &[&RankRecord]) -> Clock {
        let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
        let first_start = finite(ran.iter().map(|r| r.start_s).fold(f64::INFINITY, f64::min));
        let first_end = finite(ran.iter().map(|r| r.end_s).fold(f64::INFINITY, f64::min));
        let last_end = ran.iter().map(|r| r.end_s).fold(0.0, f64::max);
        Clock {
            first_start,
            first_end,
            last_end,
            span: (last_end - first_start).max(0.0),
        }
    }

    /// The `distributed` section of a run over these times: the full figure (all `bytes`
    /// over the span), the slowest and fastest rank and their spread; no stonewall.
    pub(super) fn report(
        &self,
        layout: &str,
        reorder_shift: Option<u32>,
        bytes: u64,
        slowest: Option<&RankReport>,
        fastest: Option<&RankReport>,
    ) -> DistributedReport {
        DistributedReport {
            layout: layout.into(),
            reorder_shift,
            first_start_s: self.first_start,
            first_end_s: self.first_end,
            last_end_s: self.last_end,
            full_bytes_per_sec: rate(bytes, self.span),
            slowest_rank: slowest.map(|r| r.rank).unwrap_or(0),
            slowest_bytes_per_sec: slowest.map(|r| r.bytes_per_sec).unwrap_or(0.0),
            fastest_rank: fastest.map(|r| r.rank).unwrap_or(0),
            fastest_bytes_per_sec: fastest.map(|r| r.bytes_per_sec).unwrap_or(0.0),
            spread_ratio: match (slowest, fastest) {
                (Some(s), Some(f)) if s.bytes_per_sec > 0.0 => f.bytes_per_sec / s.bytes_per_sec,
                _ => 0.0,
            },
            stonewall: None,
            host_devices: Vec::new(),
        }
    }
}

fn rank_row(r: &RankRecord) -> RankReport {
    let s = r.stats();
    RankReport {
        rank: r.rank,
        host: r.host.clone(),
        status: if r.ran() { r.status } else { RunStatus::Failed },
        targets: r.targets.clone(),
        data_of_rank: r.data_of_rank,
        ops: s.ops(),
        bytes: s.bytes(),
        start_s: r.start_s,
        end_s: r.end_s,
        bytes_per_sec: rate(s.bytes(), r.end_s - r.start_s),
        failure: if r.called_off {
            Some("called off: another rank could not start".into())
        } else if let Some(e) = &r.error {
            Some(e.clone())
        } else {
            r.failures.first().map(|f| f.to_string())
        },
    }
}

/// The client-cache warning: some rank read, through the page cache, data its own host wrote
/// (no `--reorder-ranks`, or the rank it read from runs on the same host).
pub(super) fn cache_note(
    spec: &DistSpec,
    job: &Job,
    records: &[RankRecord],
    hosts: usize,
) -> Option<String> {
    let reads = job.access.read_pct(job.read_pct) > 0;
    let buffered = match job.cache {
        fsbench_core::job::CachePolicy::Buffered | fsbench_core::job::CachePolicy::Dsync => true,
        fsbench_core::job::CachePolicy::Discovered { threshold } => job.block_size <= threshold,
        _ => false,
    };
    if !reads || !buffered {
        return None;
    }
    let n = records.iter().filter(|r| r.own_host_data).count();
    if n == 0 {
        return None;
    }
    Some(format!(
        "client cache: {n} of {} ranks read data their own host wrote, through the page cache; on a network or parallel file system the client cache may have served those reads ({}): {}, or use --cache direct",
        records.len(),
        if job.invalidate {
            "fsbench evicted the targets' pages on each host before timing, which not every client honours"
        } else {
            "--no-invalidate: nothing was evicted"
        },
        avoid_client_cache(spec.reorder, hosts)
    ))
}

/// How a distributed run avoids reads from the client cache, after a `client cache:` note.
fn avoid_client_cache(reorder: bool, hosts: usize) -> &'static str {
    if !reorder {
        "add --reorder-ranks with ranks on several hosts (IOR's -C)"
    } else if hosts == 1 {
        "every rank ran on one host, so --reorder-ranks cannot avoid it: run ranks on several hosts"
    } else {
        "place ranks so that the shifted rank is on another host"
    }
}

/// The client-cache warning of a workload on ranks: some rank ran reads (a `read` or
/// `readwholefile` flowop without `directio`) over filesets its own host laid out (no
/// `--reorder-ranks`, or the rank whose directory it ran in is on the same host).
pub(super) fn workload_cache_note(
    model: &fsbench_core::workload::model::Model,
    records: &[RankRecord],
    hosts: usize,
    reorder_shift: Option<u32>,
) -> Option<String> {
    use fsbench_core::workload::model::{flatten, Kind};
    let buffered_reads = model
        .processes
        .iter()
        .flat_map(|p| p.threads.iter())
        .flat_map(|t| flatten(&t.flowops))
        .any(|f| matches!(f.kind, Kind::Read | Kind::ReadWholeFile) && !f.directio);
    let n = records.iter().filter(|r| r.own_host_data).count();
    if !buffered_reads || n == 0 {
        return None;
    }
    Some(format!(
        "client cache: {n} of {} ranks read files their own host laid out, through the page cache; on a network or parallel file system the client cache may have served those reads (fsbench evicted the laid-out files' pages on the host that laid them out, unless the fileset is `cached`, which not every client honours): {}, or use directio",
        records.len(),
        avoid_client_cache(reorder_shift.is_some(), hosts)
    ))
}

#[cfg(test)]
mod tests;
