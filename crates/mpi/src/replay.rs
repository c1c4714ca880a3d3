//! A trace replay as one distributed run: every rank replays a trace through the
//! ordinary replay engine (`fsbench_core::replay::run_gated`, the runner's driver and start
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
//! first rank's replay ends, or DUR after the start barrier ([`super::executor`], through the
//! runner's stop flag that the replay threads read between calls); the Result carries the
//! `stonewall` section as a run's does.

use super::aggregate::{self, Clock, RankRecord};
use super::executor::{self, Distributed, LocalRun, Settings, Timing};
use super::observe::RankObserve;
use super::{make_dir, Ending, Stonewall, World};
use crate::result::{ReplayInfo, RunResult};
use crate::stats::{hist::LatencyHist, Stats, StatsReport};
use fsbench_core::job::CachePolicy;
use fsbench_core::replay::{self, ReplayOptions, ReplayParts, Replayed};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
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

/// This rank's part of a distributed replay; rank 0 gets the one Result.
pub(crate) fn run(world: &World, spec: &ReplaySpec) -> anyhow::Result<Ending> {
    let settings = Settings {
        timeout: Duration::from_secs_f64(spec.timeout_s),
        stonewall: spec.stonewall,
        observe: spec.observe.clone(),
        watch: spec.watch.clone(),
        barrier: String::new(),
        agree: None,
    };
    let rank = world.rank;
    let mut kind = ReplayOnRanks {
        spec,
        path: crate::trace::rank_path(&spec.trace, rank),
        dir: rank_dir(spec, rank),
        trace: None,
        own_dir: None,
    };
    executor::execute(world, &mut kind, &settings)
}

/// Rank `rank`'s directory, DIR/rank-NNNNN.
fn rank_dir(spec: &ReplaySpec, rank: u32) -> PathBuf {
    spec.opts.dir.join(format!("rank-{rank:05}"))
}

struct ReplayOnRanks<'a> {
    spec: &'a ReplaySpec,
    /// This rank's trace file.
    path: PathBuf,
    /// This rank's directory.
    dir: PathBuf,
    /// This rank's trace, read and checked, and its thread count.
    trace: Option<(crate::trace::Trace, usize)>,
    /// This rank's directory (dev, inode) when this run made it.
    own_dir: Option<(u64, u64)>,
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

impl Distributed for ReplayOnRanks<'_> {
    type Out = Box<Replayed>;

    /// Every rank reads and checks its trace before anything is created anywhere; then this
    /// rank's directory.
    fn prepare(&mut self, world: &World, _: &[String], rec: &mut RankRecord) -> anyhow::Result<()> {
        let timeout = Duration::from_secs_f64(self.spec.timeout_s);
        let checked = check(self.spec, &self.path);
        let all_checked = world.all_min(
            "reading every rank's trace",
            timeout,
            checked.is_ok() as u64,
        ) == 1;
        let checked = checked?;
        if !all_checked {
            rec.called_off = true;
            return Ok(());
        }
        self.trace = Some(checked);
        if make_dir(&self.dir)? {
            self.own_dir = std::fs::symlink_metadata(&self.dir)
                .ok()
                .map(|m| (m.dev(), m.ino()));
        }
        Ok(())
    }

    fn targets(&self, rank: u32) -> Vec<String> {
        vec![rank_dir(self.spec, rank).display().to_string()]
    }

    /// The devices under this rank's directory, one trace ring per replay thread (its threads
    /// make their rings as they prepare).
    fn scope(&self) -> Option<fsbench_core::observe::Scope> {
        let (_, threads) = self.trace.as_ref()?;
        Some(fsbench_core::observe::Scope {
            targets: vec![self.dir.clone()],
            workers: *threads,
            processes: false,
        })
    }

    fn launch(&mut self) -> LocalRun<Self::Out> {
        let (trace, _) = self.trace.take().expect("a prepared rank has its trace");
        let origin = self.path.display().to_string();
        let opts = ReplayOptions {
            dir: self.dir.clone(),
            ..self.spec.opts.clone()
        };
        Box::new(move |gates, watch| {
            replay::run_gated(&trace, &origin, &opts, Some(gates()), &watch).map(Box::new)
        })
    }

    fn record(&mut self, r: Box<Replayed>, timing: &Timing, rec: &mut RankRecord) {
        rec.fill(r.outcome, timing.t0_ns, timing.end_s());
        rec.replay = Some(r.parts);
    }

    /// The rank's directory, unless kept, when it is still the one this run made.
    fn clean_up(&mut self, _: &World, _: &mut RankRecord) {
        let Some((dev, ino)) = self.own_dir else {
            return;
        };
        if let Ok(m) = std::fs::symlink_metadata(&self.dir) {
            if m.is_dir() && m.dev() == dev && m.ino() == ino {
                if self.spec.opts.keep {
                    // Kept: no later run takes it for a killed run's.
                    crate::leftover::clear_run_of(&self.dir);
                } else {
                    let _ = std::fs::remove_dir(&self.dir);
                }
            }
        }
    }

    /// A rank's refusal of the user's input refuses the replay, and so does any rank's when
    /// no rank replayed.
    fn refusal(&self, records: &[RankRecord]) -> Option<(bool, String)> {
        aggregate::start_refusal(records)
            .filter(|(usage, _)| *usage || records.iter().all(|r| r.replay.is_none()))
    }

    /// Every rank's threads and call kinds summed exactly, timed from the first rank's start
    /// to the last rank's end on the barrier clock.
    fn merge(&mut self, records: &[RankRecord]) -> anyhow::Result<RunResult> {
        let spec = self.spec;
        let ran: Vec<&RankRecord> = records.iter().filter(|r| r.ran()).collect();
        let cache = if spec.opts.direct {
            CachePolicy::Direct
        } else {
            CachePolicy::Buffered
        };
        let outcome = aggregate::merge_outcome(records, cache);
        let parts = merge_parts(
            spec,
            records.iter().filter_map(|r| r.replay.as_ref()),
            Clock::of(&ran).span,
        );
        let mut result = replay::result_of(&spec.opts.name, outcome, parts);
        result.total = StatsReport::from_stats(&aggregate::total(records), true);
        Ok(result)
    }

    fn layout(&self) -> (&'static str, Option<u32>) {
        ("dir_per_rank", None)
    }
}

/// Every rank's call kinds summed by kind (timed over `span_s`), planned sizes merged, and
/// the description of what was replayed: every rank's calls, threads and scratch files.
fn merge_parts<'a>(
    spec: &ReplaySpec,
    parts: impl Iterator<Item = &'a ReplayParts>,
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
        info.files.extend(p.info.files.iter().cloned());
    }
    for (_, s) in &mut kinds {
        s.elapsed_s = span_s;
    }
    ReplayParts { kinds, sizes, info }
}
