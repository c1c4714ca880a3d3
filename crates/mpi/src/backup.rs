//! A suite's backup study on MPI ranks: every rank builds its own tree in a
//! directory of its own, `DIR/fsbench-backup-PID/rank-NNNNN` (PID: rank 0's), and runs each
//! phase of the study (archive, then restore and its byte-for-byte check, for each cache
//! policy) through the same phase code as on one host (`fsbench_core::backup`); every phase
//! starts on every rank at one barrier (the phase thread's start gate asks it). Each rank
//! sends rank 0 the phase's exact counts (`Stats`, histograms and CPU time included), its
//! start and end on the barrier clock and its failure; rank 0 makes the phase's one Result:
//! every rank's counts summed, timed from the first start to the last end, a row per rank.
//! Every rank removes what it created; a phase that fails on one rank fails for all (as on
//! one host, a failed archive skips its restore).

use super::aggregate::{self, RankRecord, ThreadRecord};
use super::executor::{self, Distributed, LocalRun, Settings, Timing};
use super::{one_line, Ending, World};
use crate::result::RunResult;
use crate::runner::{IoFailure, RunStatus};
use crate::stats::Stats;
use fsbench_core::backup::{self, BackupPlan, MakeIssuer, PhaseRun, PhaseSink, Study};
use fsbench_core::job::CachePolicy;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What rank 0 sends every rank: the study and where it runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BackupSpec {
    /// The suite's target directory; the ranks' trees go in `DIR/fsbench-backup-TAG/`.
    pub dir: PathBuf,
    pub plan: BackupPlan,
    pub caches: Vec<CachePolicy>,
    /// Rank 0's process id: names the directory of every rank's tree.
    pub tag: u32,
    pub timeout_s: f64,
}

/// A directory this rank created, removed with everything in it when dropped.
struct Created(Option<PathBuf>);

impl Drop for Created {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// Create `p` (it must not exist) and mark it as fsbench's.
fn create_marked(p: &Path) -> anyhow::Result<()> {
    std::fs::create_dir(p).map_err(|e| crate::usage!("cannot create {}: {e}", p.display()))?;
    crate::safety::mark_created(p);
    Ok(())
}

/// The phase states every rank agrees on after a phase (the least wins).
const INTERRUPTED: u64 = 0;
const FAILED: u64 = 1;
const DONE: u64 = 2;

/// This rank's part of the study; on rank 0 each phase's Result goes to `sink`. Every rank
/// makes the same collective calls in the same order, whatever happened to it.
pub(crate) fn run(
    world: &World,
    spec: &BackupSpec,
    mut sink: Option<PhaseSink<'_>>,
) -> anyhow::Result<()> {
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    let rank = world.rank;
    crate::runner::signal::install();
    let shared = shared_dir(spec);
    let mut local_err: Option<anyhow::Error> = None;
    let mut shared_made = false;
    if rank == 0 {
        for p in backup::remove_stale(&spec.dir) {
            eprintln!(
                "fsbench: removed {}, left by a backup study that was killed",
                p.display()
            );
        }
        match create_marked(&shared) {
            Ok(()) => shared_made = true,
            Err(e) => local_err = Some(e),
        }
    }
    world.meet("creating the ranks' backup directories", timeout);
    let root = rank_root(spec, rank);
    let mut own = Created(None);
    if local_err.is_none() && std::fs::symlink_metadata(&shared).is_ok() {
        match create_marked(&root) {
            Ok(()) => own.0 = Some(root.clone()),
            Err(e) => local_err = Some(e),
        }
    }
    let tree = root.join("tree");
    let files = match local_err {
        None => backup::build_tree(&tree, &spec.plan).map_err(Some),
        Some(e) => Err(Some(e)),
    };
    let built = files.is_ok() && !crate::runner::signal::interrupted();
    let all_built = world.all_min("building the ranks' trees", timeout, built as u64) == 1;
    let outcome = if all_built {
        let files = files.unwrap_or_default();
        let tree = Arc::new(Tree {
            tree_paths: files.iter().map(|(n, _)| tree.join(n)).collect(),
            root,
            tree,
            files,
            record: spec.plan.record,
            make: backup::sync_issuer(),
        });
        phases(world, spec, &tree, &mut sink)
    } else {
        // Why the study could not start: the first rank's reason, at rank 0.
        let why = match &files {
            Err(Some(e)) => one_line(e),
            _ if !built => "interrupted".to_string(),
            _ => String::new(),
        };
        let all = world.gather("collecting the ranks' trees", timeout, why.as_bytes());
        match all {
            Some(all) => match all
                .iter()
                .enumerate()
                .find(|(_, w)| !w.is_empty() && w.as_slice() != b"interrupted")
            {
                Some((r, w)) => Err(anyhow::anyhow!(
                    "rank {r}: backup study: {}",
                    String::from_utf8_lossy(w)
                )),
                None => Ok(()),
            },
            None => Ok(()),
        }
    };
    if world.ending() {
        // A rank was lost and mpirun's SIGKILL may come at any moment: the trees go after
        // rank 0 wrote what the study measured (`World::after_result`).
        world.after_result(move || {
            drop(own);
            if shared_made {
                let _ = std::fs::remove_dir(&shared);
            }
        });
        return outcome;
    }
    drop(own);
    world.meet("removing the ranks' backup trees", timeout);
    if shared_made {
        let _ = std::fs::remove_dir(&shared);
    }
    outcome
}

/// The directory holding every rank's tree.
fn shared_dir(spec: &BackupSpec) -> PathBuf {
    spec.dir
        .join(format!("{}{}", backup::ROOT_PREFIX, spec.tag))
}

/// Rank `rank`'s directory: its tree, its archive, its restored copy.
fn rank_root(spec: &BackupSpec, rank: u32) -> PathBuf {
    shared_dir(spec).join(format!("rank-{rank:05}"))
}

/// One rank's tree, as every phase of its study uses it.
struct Tree {
    root: PathBuf,
    tree: PathBuf,
    files: Vec<(String, u64)>,
    tree_paths: Vec<PathBuf>,
    record: usize,
    make: MakeIssuer,
}

impl Tree {
    fn study(&self) -> Study<'_> {
        Study {
            root: &self.root,
            tree: &self.tree,
            files: &self.files,
            tree_paths: &self.tree_paths,
            record: self.record,
            make: &self.make,
        }
    }

    fn restore_dir(&self) -> PathBuf {
        self.root.join("restore")
    }
}

/// Every cache policy's archive and restore on every rank, each phase's Result to rank 0's
/// sink.
fn phases(
    world: &World,
    spec: &BackupSpec,
    tree: &Arc<Tree>,
    sink: &mut Option<PhaseSink<'_>>,
) -> anyhow::Result<()> {
    let archive = tree.study().archive_path();
    for &cache in &spec.caches {
        let state = phase(world, spec, tree, cache, "archive", sink)?;
        if state == INTERRUPTED {
            return Ok(());
        }
        if state == FAILED {
            let _ = std::fs::remove_file(&archive);
            continue;
        }
        let state = phase(world, spec, tree, cache, "restore", sink)?;
        let _ = std::fs::remove_dir_all(tree.restore_dir());
        let _ = std::fs::remove_file(&archive);
        if state == INTERRUPTED {
            return Ok(());
        }
    }
    Ok(())
}

/// One phase on every rank ([`super::executor`]); after it every rank agrees whether it was
/// done everywhere, failed on some rank or interrupted, and rank 0 hands the phase's Result to
/// the sink unless interrupted. Returns the agreed state.
fn phase(
    world: &World,
    spec: &BackupSpec,
    tree: &Arc<Tree>,
    cache: CachePolicy,
    name: &'static str,
    sink: &mut Option<PhaseSink<'_>>,
) -> anyhow::Result<u64> {
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    let settings = Settings {
        timeout,
        stonewall: None,
        observe: Default::default(),
        watch: Default::default(),
        barrier: format!(" of the backup {name}"),
        agree: None,
    };
    let mut kind = PhaseOnRanks {
        spec,
        tree: tree.clone(),
        cache,
        name,
    };
    let ending = executor::execute(world, &mut kind, &settings)?;
    let failed = match &ending {
        Ending::Result(r) => r.status == RunStatus::Failed,
        Ending::Refused { .. } => true,
        Ending::Done(code) => *code != 0,
    };
    let state = if crate::runner::signal::interrupted() {
        INTERRUPTED
    } else if failed {
        FAILED
    } else {
        DONE
    };
    let agreed = world.all_min(&format!("the end of the backup {name}"), timeout, state);
    let stored = match (ending, sink.as_mut()) {
        (Ending::Result(result), Some(sink)) if agreed != INTERRUPTED => sink(cache, name, *result),
        _ => Ok(()),
    };
    // A Result rank 0 could not store ends the study on every rank.
    let ok = world.all_min(
        &format!("storing the backup {name}"),
        timeout,
        stored.is_ok() as u64,
    );
    stored?;
    if ok == 0 {
        return Ok(INTERRUPTED);
    }
    Ok(agreed)
}

/// One phase of the study (archive or restore, under one cache policy) on every rank.
struct PhaseOnRanks<'a> {
    spec: &'a BackupSpec,
    tree: Arc<Tree>,
    cache: CachePolicy,
    name: &'static str,
}

impl Distributed for PhaseOnRanks<'_> {
    type Out = PhaseRun;

    /// The tree is built before the study's first phase.
    fn prepare(&mut self, _: &World, _: &[String], _: &mut RankRecord) -> anyhow::Result<()> {
        Ok(())
    }

    fn targets(&self, rank: u32) -> Vec<String> {
        let archive = rank_root(self.spec, rank).join(backup::ARCHIVE);
        vec![archive.display().to_string()]
    }

    /// The phase on the run thread; its start gate asks the executor's start barrier.
    fn launch(&mut self) -> LocalRun<Self::Out> {
        let (tree, cache, name) = (self.tree.clone(), self.cache, self.name);
        Box::new(move |gates, _| {
            let mut gate = Some(gates());
            let mut start = |ready: bool| match (ready, gate.take()) {
                (true, Some(g)) => (g.start)(crate::runner::drive::Opener::none()),
                _ => false,
            };
            let study = tree.study();
            match name {
                "archive" => study.archive_run(cache, &mut start),
                _ => study.restore_run(cache, &tree.restore_dir(), &mut start),
            }
        })
    }

    /// What the phase measured, as this rank's one thread, placed on the barrier clock.
    fn record(&mut self, run: PhaseRun, timing: &Timing, rec: &mut RankRecord) {
        let on_clock = |t: Instant| t.saturating_duration_since(timing.t0).as_secs_f64();
        rec.start_s = on_clock(run.opened);
        rec.end_s = on_clock(run.end).max(rec.start_s);
        rec.started_unix_s = run.started_unix_s;
        if let Some(f) = run.failure {
            rec.status = RunStatus::Failed;
            rec.failures.push(IoFailure {
                user: 0,
                thread: 0,
                path: rec.targets.first().cloned().unwrap_or_default(),
                offset: None,
                message: f,
            });
        }
        rec.notes = run.notes;
        rec.verified = run.verified;
        rec.threads.push(ThreadRecord {
            user: 0,
            thread: 0,
            stats: run.stats,
            failure: None,
            verify: None,
        });
    }

    /// A phase that fails on a rank fails with that rank's reason in its Result.
    fn refusal(&self, _: &[RankRecord]) -> Option<(bool, String)> {
        None
    }

    /// The phase's Result as rank 0 makes it (its target, notes and settings), with every
    /// rank's counts summed and every rank's restored tree checked.
    fn merge(&mut self, records: &[RankRecord]) -> anyhow::Result<RunResult> {
        let rank0 = &records[0];
        let run = PhaseRun {
            stats: Stats::default(),
            opened: Instant::now(),
            end: Instant::now(),
            started_unix_s: rank0.started_unix_s,
            failure: None,
            notes: rank0.notes.clone(),
            verified: records
                .iter()
                .map(|r| r.verified)
                .collect::<Option<Vec<bool>>>()
                .map(|v| v.iter().all(|&x| x)),
        };
        let mut result = self.tree.study().result_of(self.cache, self.name, run);
        aggregate::phase_result(&mut result, records);
        Ok(result)
    }

    fn layout(&self) -> (&'static str, Option<u32>) {
        ("dir_per_rank", None)
    }
}
