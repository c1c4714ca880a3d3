//! A trace replay as one distributed run (issue #16): every rank replays a trace through the
//! ordinary replay engine (`crate::replay::run_gated`, the runner's driver and start
//! gate) on scratch files of its own in `DIR/rank-NNNNN` (made and, unless `--keep`, removed
//! by fsbench when it is still the directory it made). The trace is the same for every rank,
//! or one per rank when its path holds `{rank}` (replaced by the rank as 5 digits). Every rank
//! reads and checks its trace before anything is created anywhere: a rank whose trace is
//! missing or bad refuses the whole command, naming the rank and the path. All ranks start
//! the timed replay at one barrier and none removes its files before every rank's I/O is
//! over. Each rank sends rank 0 its threads' exact `Stats` and the exact statistics of each
//! replayed call kind; rank 0 merges them into the one Result (kind `replay`), timed from the
//! first rank's start to the last rank's end on the barrier clock, a row per rank. `--iostat`
//! and `--trace` are observed on every rank exactly as a run's ([`super::observe`]: the lowest
//! rank of each host samples the devices under its directory, each rank traces its replay
//! threads into a file of its own). With `--stonewall` every rank's replay is stopped when the
//! first rank's replay ends, or DUR after the start barrier ([`super::wait_io`], through the
//! runner's stop flag that the replay threads read between calls); the Result carries the
//! `stonewall` section as a run's does.

use super::aggregate::{self, Clock, RankRecord};
use super::observe::{self, RankObserve};
use super::{make_dir, one_line, Ending, Event, IoEnd, Stonewall, World};
use crate::job::CachePolicy;
use crate::replay::{self, ReplayOptions, ReplayParts, Replayed};
use crate::result::{DistributedReport, ReplayInfo, RunResult};
use crate::runner;
use crate::stats::{hist::LatencyHist, Stats, StatsReport};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

/// What rank 0 sends every rank: the trace (its path may hold `{rank}`) and how to replay it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ReplaySpec {
    pub trace: PathBuf,
    /// The options of the replay; `dir` holds every rank's directory.
    pub opts: ReplayOptions,
    pub timeout_s: f64,
    /// `--iostat` and `--trace`, observed on every rank as a run's ([`super::observe`]).
    #[serde(default)]
    pub observe: RankObserve,
    /// `--stonewall`: every rank's replay stops when the first rank's ends, or this long
    /// after the start barrier.
    #[serde(default)]
    pub stonewall: Option<Stonewall>,
    /// How rank 0 watches its own part (never sent, as a Job's [`super::DistSpec`]).
    #[serde(skip)]
    pub watch: crate::runner::live::Watching,
}

/// What one rank sends rank 0: its row and threads, and its call kinds (None: it did not
/// replay).
#[derive(Serialize, Deserialize)]
struct RankReplay {
    rec: RankRecord,
    parts: Option<ReplayParts>,
}

/// The replay on a thread of its own, its gate wired to the channels.
fn start(
    trace: crate::trace::Trace,
    origin: String,
    opts: ReplayOptions,
    watch: crate::runner::live::Watching,
    tx: Sender<Event<Box<Replayed>>>,
    go: Receiver<bool>,
    clean: Receiver<()>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    super::start_gated(tx, go, clean, move |gate| {
        replay::run_gated(&trace, &origin, &opts, Some(gate), &watch).map(Box::new)
    })
}

/// This rank's trace, read and checked (the replay's own checks of the options and of the
/// trace's plan), before anything is created.
/// Its thread count (one trace ring each with `--trace`) comes with it.
fn check(spec: &ReplaySpec, path: &Path) -> anyhow::Result<(crate::trace::Trace, usize)> {
    if !spec.opts.dir.is_dir() {
        crate::bail_usage!(
            "--dir {}: not a directory (each rank replays in DIR/rank-NNNNN)",
            spec.opts.dir.display()
        );
    }
    let trace = crate::trace::format::read_file(path)?;
    let threads = replay::ReplayPlan::from_trace(&trace)?.thread_count();
    Ok((trace, threads))
}

/// This rank's part of a distributed replay; rank 0 gets the one Result. Every rank makes
/// the same collective calls in the same order, whatever happened to it.
pub(crate) fn run(world: &World, spec: &ReplaySpec) -> anyhow::Result<Ending> {
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    let rank = world.rank;
    runner::signal::install();
    // Every rank's host: the lowest rank on each samples its devices (--iostat).
    let hosts = world.all_hosts(timeout);
    let path = crate::trace::rank_path(&spec.trace, rank);
    let dir = spec.opts.dir.join(format!("rank-{rank:05}"));
    let mut rec = RankRecord::new(rank, &world.host, vec![dir.display().to_string()]);
    let checked = check(spec, &path);
    let all_checked = world.all_min(
        "reading every rank's trace",
        timeout,
        checked.is_ok() as u64,
    ) == 1;
    let mut local_err: Option<anyhow::Error> = None;
    let mut trace = None;
    match checked {
        Ok(t) if all_checked => trace = Some(t),
        Ok(_) => rec.called_off = true,
        Err(e) => local_err = Some(e),
    }
    // This rank's directory (dev, inode) when this run made it.
    let mut own_dir: Option<(u64, u64)> = None;
    if trace.is_some() {
        match make_dir(&dir) {
            Ok(true) => {
                own_dir = std::fs::symlink_metadata(&dir)
                    .ok()
                    .map(|m| (m.dev(), m.ino()))
            }
            Ok(false) => {}
            Err(e) => local_err = Some(e),
        }
    }
    // --iostat, --trace: this rank's observers, started right before its replay (its threads
    // make their trace rings as they prepare): the devices under its directory, one ring per
    // replay thread.
    let mut observer = None;
    if let (Some((_, threads)), None) = (&trace, &local_err) {
        let scope = crate::observe::Scope {
            targets: vec![dir.clone()],
            workers: *threads,
            processes: false,
        };
        match observe::start_for(&spec.observe, rank, &hosts, &scope) {
            Ok(o) => observer = o,
            Err(e) => local_err = Some(e),
        }
    }
    // Rank 0's own watching, with this rank's trace session when it traces.
    let watch = match &observer {
        Some(o) => o.watching(&spec.watch),
        None => spec.watch.clone(),
    };
    let (tx, rx) = mpsc::channel::<Event<Box<Replayed>>>();
    let (go_tx, go_rx) = mpsc::channel::<bool>();
    let (clean_tx, clean_rx) = mpsc::channel::<()>();
    let mut handle = None;
    let mut early: Option<anyhow::Result<Box<Replayed>>> = None;
    let mut opener = None;
    if let (Some((trace, _)), None) = (trace, &local_err) {
        let opts = ReplayOptions {
            dir: dir.clone(),
            ..spec.opts.clone()
        };
        match start(
            trace,
            path.display().to_string(),
            opts,
            watch,
            tx,
            go_rx,
            clean_rx,
        ) {
            Ok(h) => {
                handle = Some(h);
                // Prepared (its files made, its threads at the gate), or ended before that.
                opener = super::wait_ready(&rx, &mut early);
            }
            Err(e) => local_err = Some(anyhow::anyhow!("cannot start the rank's thread: {e}")),
        }
    }
    let ready = opener.is_some();
    let (all_ok, t0_ns, t0) = super::start_together(world, timeout, opener.as_ref(), &go_tx);
    // The timed replay: wait for the end of this rank's I/O, stopping it at the stonewall
    // (the replay threads read the runner's stop flag between calls).
    let mut io = IoEnd::default();
    if ready && all_ok {
        io = super::wait_io(world, spec.stonewall, &rx, t0, &mut early);
    }
    super::end_io(world, timeout, &io);
    let end_s = io.end_s;
    rec.stopped = io.stopped;
    // Every rank's I/O is over: the replay may remove its scratch files.
    let _ = clean_tx.send(());
    let early = super::finish_gated(&rx, handle, early);
    let mut parts = None;
    match early {
        Some(Ok(r)) => {
            rec.fill(
                r.outcome,
                t0_ns,
                end_s.unwrap_or_else(|| t0.elapsed().as_secs_f64()),
            );
            parts = Some(r.parts);
        }
        Some(Err(_)) if ready && !all_ok => rec.called_off = true,
        Some(Err(e)) => {
            rec.usage = crate::error::is_usage(&e);
            rec.error = Some(one_line(&e));
        }
        None => match local_err {
            Some(e) => {
                rec.usage = crate::error::is_usage(&e);
                rec.error = Some(one_line(&e));
            }
            None => rec.called_off |= !all_ok,
        },
    }
    super::finish_observing(observer, &mut rec, t0);
    // The rank's directory, unless kept, when it is still the one this run made.
    if let Some((dev, ino)) = own_dir {
        if let Ok(m) = std::fs::symlink_metadata(&dir) {
            if m.is_dir() && m.dev() == dev && m.ino() == ino {
                if spec.opts.keep {
                    // Kept: no later run takes it for a killed run's.
                    crate::leftover::clear_run_of(&dir);
                } else {
                    let _ = std::fs::remove_dir(&dir);
                }
            }
        }
    }
    let own_code = if rec.usage {
        2
    } else if rec.error.is_some() || rec.status == runner::RunStatus::Failed {
        1
    } else {
        0
    };
    let bytes = serde_json::to_vec(&RankReplay { rec, parts })?;
    let Some(all) = world.gather_reported("collecting the results", timeout, &bytes) else {
        return Ok(Ending::Done(own_code));
    };
    // A rank that did not report (lost with the MPI job) fails the replay, named.
    let mut ranks: Vec<RankReplay> = Vec::with_capacity(all.len());
    for (r, b) in all.iter().enumerate() {
        ranks.push(match b {
            Some(b) => serde_json::from_slice(b)?,
            None => {
                let r = r as u32;
                let host = hosts.get(r as usize).map_or("unknown-host", |h| h);
                let dir = spec.opts.dir.join(format!("rank-{r:05}"));
                RankReplay {
                    rec: RankRecord::lost(r, host, vec![dir.display().to_string()]),
                    parts: None,
                }
            }
        });
    }
    let records: Vec<RankRecord> = ranks.iter().map(|r| r.rec.clone()).collect();
    match aggregate::start_refusal(&records) {
        Some((usage, message)) if usage || ranks.iter().all(|r| r.parts.is_none()) => {
            return Ok(Ending::Refused { usage, message })
        }
        _ => {}
    }
    Ok(Ending::Result(Box::new(build(spec, ranks))))
}

/// The one Result of the distributed replay (rank 0), from every rank's part in rank order:
/// every rank's threads and call kinds summed exactly, timed from the first rank's start to
/// the last rank's end on the barrier clock; a row per rank, the hosts, the spread.
fn build(spec: &ReplaySpec, ranks: Vec<RankReplay>) -> RunResult {
    let records: Vec<RankRecord> = ranks.iter().map(|r| r.rec.clone()).collect();
    let ran: Vec<&RankRecord> = records.iter().filter(|r| r.ran()).collect();
    let clock = Clock::of(&ran);
    let cache = if spec.opts.direct {
        CachePolicy::Direct
    } else {
        CachePolicy::Buffered
    };
    let outcome = aggregate::merge_outcome(&records, cache);
    let parts = merge_parts(spec, ranks.into_iter().filter_map(|r| r.parts), clock.span);
    let mut result = replay::result_of(&spec.opts.name, outcome, parts);
    let mut total = Stats::default();
    for r in &records {
        total += &r.stats();
    }
    total.elapsed_s = clock.span;
    result.total = StatsReport::from_stats(&total, true);
    aggregate::add_ranks(&mut result, &records);
    let (slowest, fastest) = aggregate::slowest_fastest(&result.ranks, &records);
    result.distributed = Some(DistributedReport {
        stonewall: spec
            .stonewall
            .map(|mode| aggregate::run_stonewall(mode, &records)),
        ..clock.report("dir_per_rank", None, total.bytes(), slowest, fastest)
    });
    let seen: Vec<observe::Seen> = records
        .iter()
        .map(|r| observe::Seen {
            rank: r.rank,
            host: &r.host,
            observed: &r.observed,
        })
        .collect();
    observe::merge(&seen, &mut result);
    if records.iter().any(|r| r.called_off) {
        result
            .notes
            .push("ranks marked 'called off' ran nothing: another rank could not start".into());
    }
    result
}

/// Every rank's call kinds summed by kind (timed over `span_s`), planned sizes merged, and
/// the description of what was replayed: every rank's calls, threads and scratch files.
fn merge_parts(
    spec: &ReplaySpec,
    parts: impl Iterator<Item = ReplayParts>,
    span_s: f64,
) -> ReplayParts {
    let mut kinds: Vec<(String, Stats)> = Vec::new();
    let mut sizes = LatencyHist::default();
    let mut info = ReplayInfo {
        trace: spec.trace.display().to_string(),
        calls: 0,
        threads: 0,
        speed: spec.opts.speed,
        skipped_calls: 0,
        io_size_bytes: Default::default(),
        io_size_hist_bytes: Vec::new(),
        files: Vec::new(),
    };
    for p in parts {
        for (name, s) in &p.kinds {
            match kinds.iter_mut().find(|(n, _)| n == name) {
                Some((_, all)) => *all += s,
                None => kinds.push((name.clone(), s.clone())),
            }
        }
        sizes.merge(&p.sizes);
        info.calls += p.info.calls;
        info.threads += p.info.threads;
        info.skipped_calls += p.info.skipped_calls;
        info.files.extend(p.info.files);
    }
    for (_, s) in &mut kinds {
        s.elapsed_s = span_s;
    }
    ReplayParts { kinds, sizes, info }
}
