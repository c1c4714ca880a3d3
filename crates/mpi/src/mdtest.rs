//! mdtest on MPI ranks (`mpirun ... fsbench mdtest`): every rank runs its share of the
//! phases through the same code as on one host (`fsbench_core::mdtest`), the share's barrier
//! being the executor's start barrier and end-of-I/O meeting ([`super::executor`]): every
//! phase of every iteration is one timed part, so every rank starts it together and none
//! goes on before every rank ended it. Each rank sends rank 0 the exact counts of each
//! measured phase and when it started and ended it on the barrier clock; rank 0 makes the
//! one Result the mdtest way: a phase's rate is the items of every rank over the phase's wall
//! time, from the first rank's start to the last rank's end, and the summary is over the
//! iterations of those rates. Each rank's part of each phase is kept
//! (`mdtest.rank_phases`), and a row per rank.
//!
//! The ranks share one top directory in each `-d` directory, `fsbench-mdtest-TAG` (TAG:
//! rank 0's process id), made and marked by the lowest rank working there before any rank
//! starts (which first removes the top directories a killed run left), and removed by it
//! after every rank has reported, unless `--keep`. Without `-u` the ranks share the tree
//! (rank 0 makes and removes it) and name their items by rank, as mdtest does.

use super::aggregate::{RankRecord, ThreadRecord};
use super::executor::{self, Distributed, LocalRun, Removal, Settings, Timing};
use super::{Ending, World};
use crate::result::{MdtestRankPhase, RunResult, RunStatus};
use crate::runner::{AfterIoHook, IoFailure};
use crate::stats::Stats;
use fsbench_core::mdtest::{self, phase::Op, Measured, Plan, RankShare};
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What rank 0 sends every rank: mdtest's options as rank 0 planned them (each rank plans
/// them again for the number of ranks), the command line, and the tag of the shared top
/// directories.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MdtestSpec {
    pub opts: mdtest::Options,
    pub argv: Vec<String>,
    pub tag: u32,
    pub timeout_s: f64,
    /// The directory every rank works in, made and removed by the caller (a command that
    /// runs the phases one at a time on the same items); None: the shared top directory
    /// `fsbench-mdtest-TAG` this run makes in each `-d` directory.
    #[serde(default)]
    pub within: Option<PathBuf>,
}

/// One measured phase of one iteration on one rank, as sent to rank 0: its exact counts
/// and its start and end on the barrier clock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PhaseRecord {
    /// The phase's place in `Op::SUMMARY_ORDER`.
    pub op: u8,
    pub iteration: u32,
    pub stats: Stats,
    pub stonewalled: Option<u64>,
    /// The rank whose items it worked on.
    pub of_rank: u32,
    pub start_s: f64,
    pub end_s: f64,
}

impl PhaseRecord {
    fn op(&self) -> Op {
        Op::SUMMARY_ORDER[(self.op as usize).min(Op::SUMMARY_ORDER.len() - 1)]
    }
}

/// Refuse what mdtest on ranks cannot do, before any rank is asked to run.
pub(crate) fn check(plan: &Plan) -> anyhow::Result<()> {
    if plan.opts.stride > 0 && plan.opts.dirs.len() > 1 {
        crate::bail_usage!(
            "-N with several -d directories on MPI ranks is not supported: each rank works in its own directory and finds no other rank's items there; give one -d directory"
        );
    }
    if plan.opts.stonewall_s > 0 && plan.opts.stride > 0 && plan.do_dirs {
        crate::bail_usage!(
            "-W with -N on MPI ranks works on files only: a rank renames and removes directories another rank made, and after a stonewall no rank knows how many another made; add -F"
        );
    }
    Ok(())
}

/// This rank's part of mdtest on every rank; rank 0 gets the one Result.
pub(crate) fn run(world: &World, spec: &MdtestSpec) -> anyhow::Result<Ending> {
    let settings = Settings {
        timeout: Duration::from_secs_f64(spec.timeout_s),
        stonewall: None,
        observe: Default::default(),
        watch: Default::default(),
        barrier: " of an mdtest phase".into(),
        // -W with -N: after a stonewalled creation the ranks agree on the items every rank
        // made (the least), which the shifted phases work on.
        agree: (spec.opts.stonewall_s > 0 && spec.opts.stride > 0)
            .then(|| Arc::new(fsbench_core::mdtest::Agreed::default())),
    };
    let agreed = settings.agree.clone();
    let mut kind = MdtestOnRanks {
        spec,
        plan: None,
        made_top: None,
        notes: Vec::new(),
        rank: world.rank,
        world_size: world.size,
        agreed,
    };
    executor::execute(world, &mut kind, &settings)
}

struct MdtestOnRanks<'a> {
    spec: &'a MdtestSpec,
    /// The command line planned for the ranks (None: it could not be).
    plan: Option<Plan>,
    /// The top directory this rank made, and its identity (dev, inode).
    made_top: Option<(PathBuf, u64, u64)>,
    /// What this rank removed that killed runs left.
    notes: Vec<String>,
    rank: u32,
    world_size: u32,
    /// Where the ranks agree on the items a stonewalled creation made (`-W` with `-N`).
    agreed: Option<Arc<fsbench_core::mdtest::Agreed>>,
}

impl MdtestOnRanks<'_> {
    /// The top directory rank `rank` works in.
    fn top(&self, rank: u32) -> Option<PathBuf> {
        let plan = self.plan.as_ref()?;
        if let Some(within) = &self.spec.within {
            return Some(within.clone());
        }
        let dir = mdtest::rank_dir(plan, rank);
        Some(dir.join(format!("{}{}", mdtest::TOP_PREFIX, self.spec.tag)))
    }

    /// Plan the command line; the lowest rank working in a `-d` directory removes what
    /// killed runs left there and makes the shared top directory.
    fn make_top(&mut self) -> anyhow::Result<()> {
        let rank = self.rank;
        let plan = self.spec.opts.clone().plan(self.world_size)?;
        check(&plan)?;
        let dirs = plan.opts.dirs.clone();
        self.plan = Some(plan);
        let plan = self.plan.as_ref().expect("just set");
        if self.spec.within.is_some() {
            return Ok(());
        }
        if let Some(dir) = dirs.get(rank as usize) {
            self.notes = mdtest::prepare_dir(plan, dir)?;
            let top = mdtest::make_shared_top(dir, self.spec.tag)?;
            let m = std::fs::symlink_metadata(&top)?;
            self.made_top = Some((top, m.dev(), m.ino()));
        }
        Ok(())
    }
}

impl Distributed for MdtestOnRanks<'_> {
    type Out = (Box<RunResult>, Vec<Measured>);

    /// Every rank's top directory is made before any rank looks for it.
    fn prepare(&mut self, world: &World, _: &[String], rec: &mut RankRecord) -> anyhow::Result<()> {
        let timeout = Duration::from_secs_f64(self.spec.timeout_s);
        let made = self.make_top();
        let all = world.all_min("making the top directories", timeout, made.is_ok() as u64) == 1;
        made?;
        if !all {
            rec.called_off = true;
            return Ok(());
        }
        match self.top(self.rank) {
            Some(t) if t.is_dir() => Ok(()),
            Some(t) => crate::bail_usage!(
                "{} was not made: every -d directory must be one every rank sees",
                t.display()
            ),
            None => Ok(()),
        }
    }

    fn targets(&self, rank: u32) -> Vec<String> {
        self.top(rank)
            .map(|t| vec![t.display().to_string()])
            .unwrap_or_default()
    }

    /// Every phase of every iteration is a timed part.
    fn parts(&self) -> bool {
        true
    }

    /// The phases on the run thread; the share's barrier alternates between the start of a
    /// timed part (its start barrier) and its end (the meeting after every rank's I/O).
    fn launch(&mut self) -> LocalRun<Self::Out> {
        let plan = self.plan.clone().expect("a prepared rank has its plan");
        let top = self.top(self.rank);
        let argv = self.spec.argv.clone();
        let notes = std::mem::take(&mut self.notes);
        let (rank, ranks) = (self.rank, self.world_size);
        let agreed = self.agreed.clone();
        Box::new(move |gates, _| {
            let gates = RefCell::new(gates);
            let after: RefCell<Option<AfterIoHook>> = RefCell::new(None);
            // Once a part is called off (another rank could not go on), no more barriers.
            let off = Cell::new(false);
            let barrier = || {
                if off.get() {
                    return;
                }
                let pending = after.borrow_mut().take();
                match pending {
                    Some(end) => end(),
                    None => {
                        let gate = (gates.borrow_mut())();
                        if (gate.start)(crate::runner::drive::Opener::none()) {
                            *after.borrow_mut() = Some(gate.after_io);
                        } else {
                            off.set(true);
                        }
                    }
                }
            };
            let share = RankShare {
                rank,
                ranks,
                barrier: &barrier,
                agreed: agreed.as_deref(),
            };
            let top = top.ok_or_else(|| anyhow::anyhow!("no top directory for this rank"))?;
            let (result, measured) = mdtest::run_in(&plan, &share, &argv, &top, notes)?;
            Ok((Box::new(result), measured))
        })
    }

    fn record(&mut self, out: Self::Out, timing: &Timing, rec: &mut RankRecord) {
        let (result, measured) = out;
        let on_clock = |ns: u64| ns.saturating_sub(timing.t0_ns) as f64 / 1e9;
        let phases: Vec<PhaseRecord> = measured
            .into_iter()
            .map(|m| PhaseRecord {
                op: Op::SUMMARY_ORDER
                    .iter()
                    .position(|&o| o == m.op)
                    .unwrap_or(0) as u8,
                iteration: m.iteration,
                start_s: on_clock(m.stats.loop_start_ns),
                end_s: on_clock(m.stats.loop_end_ns).max(on_clock(m.stats.loop_start_ns)),
                stonewalled: m.stonewalled,
                of_rank: m.of_rank,
                stats: m.stats,
            })
            .collect();
        let mut all = Stats::default();
        for p in &phases {
            all += &p.stats;
        }
        rec.start_s = phases
            .iter()
            .map(|p| p.start_s)
            .fold(f64::INFINITY, f64::min);
        rec.end_s = phases.iter().map(|p| p.end_s).fold(0.0, f64::max);
        if !rec.start_s.is_finite() {
            rec.start_s = 0.0;
        }
        rec.status = result.status;
        rec.failures = result.failures.clone();
        // The stonewall's notes are rank 0's to write, over every rank's items.
        rec.notes = result
            .notes
            .iter()
            .filter(|n| !n.contains("stopped by the stonewall"))
            .cloned()
            .collect();
        rec.started_unix_s = result.started_unix_s;
        rec.threads.push(ThreadRecord {
            user: 0,
            thread: 0,
            stats: all,
            failure: None,
            verify: None,
        });
        rec.mdtest = Some(phases);
    }

    /// The top directory this rank made, with everything in it (unless kept), when it is
    /// still the one it made; every rank has reported, so no rank works in it any more.
    fn finish(&mut self) -> Removal {
        let made = self.made_top.take();
        let keep = self.plan.as_ref().is_some_and(|p| p.opts.keep);
        Box::new(move || {
            if let Some((top, dev, ino)) = made {
                remove_top(&top, (dev, ino), keep);
            }
            Vec::new()
        })
    }

    /// Every rank's phases merged: per phase of each iteration, every rank's counts summed
    /// exactly over the wall time from the first rank's start to the last rank's end.
    fn merge(&mut self, records: &[RankRecord]) -> anyhow::Result<RunResult> {
        let plan = self
            .plan
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("rank 0 has no plan of the mdtest run"))?;
        let mut merged: Vec<(Measured, f64, f64)> = Vec::new();
        let mut rank_phases = Vec::new();
        for r in records {
            for p in r.mdtest.iter().flatten() {
                let op = p.op();
                let items = p.stats.other_ops;
                let own_s = p.end_s - p.start_s;
                rank_phases.push(MdtestRankPhase {
                    rank: r.rank,
                    items_of_rank: p.of_rank,
                    op: op.key().to_string(),
                    run: p.iteration + 1,
                    items,
                    stonewalled: p.stonewalled.is_some(),
                    start_s: p.start_s,
                    end_s: p.end_s,
                    rate: if own_s > 0.0 {
                        items as f64 / own_s
                    } else {
                        0.0
                    },
                });
                let at = merged
                    .iter()
                    .position(|(m, _, _)| m.op == op && m.iteration == p.iteration);
                match at {
                    Some(i) => {
                        let (m, first, last) = &mut merged[i];
                        m.stats += &p.stats;
                        *first = first.min(p.start_s);
                        *last = last.max(p.end_s);
                        if p.stonewalled.is_some() && m.stonewalled.is_none() {
                            m.stonewalled = Some(0);
                        }
                    }
                    None => merged.push((
                        Measured {
                            op,
                            iteration: p.iteration,
                            stats: p.stats.clone(),
                            stonewalled: p.stonewalled.map(|_| 0),
                            // Every rank's items: no one rank's (kept per rank above).
                            of_rank: 0,
                        },
                        p.start_s,
                        p.end_s,
                    )),
                }
            }
        }
        let measured: Vec<Measured> = merged
            .into_iter()
            .map(|(mut m, first, last)| {
                m.stats.elapsed_s = (last - first).max(0.0);
                // Stopped by the stonewall on some rank: the items every rank made.
                m.stonewalled = m.stonewalled.map(|_| m.stats.other_ops);
                m
            })
            .collect();
        let top = self.top(0).unwrap_or_default();
        let started = records.first().map_or(0.0, |r| r.started_unix_s);
        let mut result = mdtest::result_of_measured(
            plan,
            (0, self.world_size),
            &measured,
            &top,
            &self.spec.argv,
            started,
        );
        for p in rank_phases.iter().filter(|p| p.stonewalled) {
            result.notes.push(format!(
                "rank {} made {} of {} items in {} of iteration {} (stopped by the stonewall)",
                p.rank, p.items, plan.items, p.op, p.run
            ));
        }
        if let Some(info) = &mut result.mdtest {
            info.rank_phases = rank_phases;
        }
        rank_failures(&mut result, records);
        Ok(result)
    }

    fn layout(&self) -> (&'static str, Option<u32>) {
        let unique = self.plan.as_ref().is_some_and(|p| p.opts.unique_dir);
        (if unique { "dir_per_rank" } else { "shared_dir" }, None)
    }
}

/// Remove the top directory `top` with everything in it, when it is still the directory
/// of identity `id` (dev, inode) this run made; with `keep`, only take this run's record off
/// it (no later run takes it for a killed run's).
fn remove_top(top: &std::path::Path, id: (u64, u64), keep: bool) {
    let same = std::fs::symlink_metadata(top).is_ok_and(|m| m.is_dir() && (m.dev(), m.ino()) == id);
    if !same {
        return;
    }
    if keep {
        crate::leftover::clear_run_of(top);
        return;
    }
    // Made new by this run and written only by its ranks (remove_dir_all follows no links).
    let _ = std::fs::remove_dir_all(top);
}

/// Every rank's failures (each naming its rank and host), notes and state in the merged
/// Result.
pub(super) fn rank_failures(result: &mut RunResult, records: &[RankRecord]) {
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
        for n in &r.notes {
            let n = if r.rank == 0 {
                n.clone()
            } else {
                format!("rank {}: {n}", r.rank)
            };
            if !result.notes.contains(&n) {
                result.notes.push(n);
            }
        }
        if r.status == RunStatus::Partial && result.status == RunStatus::Complete {
            result.status = RunStatus::Partial;
        }
    }
    if !result.failures.is_empty() {
        result.status = RunStatus::Failed;
    }
}
