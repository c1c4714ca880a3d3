//! A suite's backup study on MPI ranks (issue #16): every rank builds its own tree in a
//! directory of its own, `DIR/fsbench-backup-PID/rank-NNNNN` (PID: rank 0's), and runs each
//! phase of the study (archive, then restore and its byte-for-byte check, for each cache
//! policy) through the same phase code as on one host (`crate::backup`); every phase
//! starts on every rank at one barrier (the phase thread's start gate asks it). Each rank
//! sends rank 0 the phase's exact counts (`Stats`, histograms and CPU time included), its
//! start and end on the barrier clock and its failure; rank 0 makes the phase's one Result:
//! every rank's counts summed, timed from the first start to the last end, a row per rank.
//! Every rank removes what it created; a phase that fails on one rank fails for all (as on
//! one host, a failed archive skips its restore).

use super::aggregate::{self, RankRecord, ThreadRecord};
use super::{one_line, World};
use crate::backup::{self, BackupPlan, PhaseRun, PhaseSink, Study};
use crate::job::CachePolicy;
use crate::runner::{IoFailure, RunStatus};
use crate::stats::Stats;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
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

/// What one rank did in one phase: its row (`RankRecord`, its counts as its one thread's)
/// and whether its restored tree was byte-identical (restore only).
#[derive(Serialize, Deserialize)]
struct PhaseRank {
    rec: RankRecord,
    verified: Option<bool>,
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
    let shared = spec
        .dir
        .join(format!("{}{}", backup::ROOT_PREFIX, spec.tag));
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
    let root = shared.join(format!("rank-{rank:05}"));
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
        let tree_paths: Vec<PathBuf> = files.iter().map(|(n, _)| tree.join(n)).collect();
        let study = Study {
            root: &root,
            tree: &tree,
            files: &files,
            tree_paths: &tree_paths,
            record: spec.plan.record,
            make: &backup::sync_issuer(),
        };
        phases(world, spec, &study, &mut sink)
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
    drop(own);
    world.meet("removing the ranks' backup trees", timeout);
    if shared_made {
        let _ = std::fs::remove_dir(&shared);
    }
    outcome
}

/// Every cache policy's archive and restore on every rank, each phase's Result to rank 0's
/// sink.
fn phases(
    world: &World,
    spec: &BackupSpec,
    study: &Study<'_>,
    sink: &mut Option<PhaseSink<'_>>,
) -> anyhow::Result<()> {
    let restore_dir = study.root.join("restore");
    for &cache in &spec.caches {
        let ran = on_ranks(world, spec, "archive", |start| {
            study.archive_run(cache, start)
        });
        let state = finish_phase(world, spec, study, cache, "archive", ran, sink)?;
        if state == INTERRUPTED {
            return Ok(());
        }
        if state == FAILED {
            let _ = std::fs::remove_file(study.archive_path());
            continue;
        }
        let ran = on_ranks(world, spec, "restore", |start| {
            study.restore_run(cache, &restore_dir, start)
        });
        let state = finish_phase(world, spec, study, cache, "restore", ran, sink)?;
        let _ = std::fs::remove_dir_all(&restore_dir);
        let _ = std::fs::remove_file(study.archive_path());
        if state == INTERRUPTED {
            return Ok(());
        }
    }
    Ok(())
}

/// One phase on this rank as it ended: what it measured, the start barrier's exit (None:
/// the phase never reached it), and whether this rank was ready but another was not (the
/// phase called off here).
struct OnRank {
    ran: anyhow::Result<PhaseRun>,
    barrier: Option<Instant>,
    called_off: bool,
}

/// One phase on this rank, its start at the barrier every rank meets when its phase thread
/// is ready (or could not be made so).
fn on_ranks(
    world: &World,
    spec: &BackupSpec,
    name: &str,
    run: impl FnOnce(backup::StartHook<'_>) -> anyhow::Result<PhaseRun>,
) -> OnRank {
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    let step = format!("the start barrier of the backup {name}");
    let mut barrier = None;
    let mut asked = false;
    let mut called_off = false;
    let ran = run(&mut |ready| {
        asked = true;
        let go = world.all_min(&step, timeout, ready as u64) == 1;
        barrier = Some(Instant::now());
        called_off = ready && !go;
        go
    });
    if !asked {
        // The phase failed before its thread existed: the others still meet here.
        world.all_min(&step, timeout, 0);
    }
    OnRank {
        ran,
        barrier,
        called_off,
    }
}

/// After a phase: every rank agrees whether it was done everywhere, failed on some rank or
/// interrupted; rank 0 gathers every rank's row and, unless interrupted, hands the phase's
/// Result to the sink. Returns the agreed state.
fn finish_phase(
    world: &World,
    spec: &BackupSpec,
    study: &Study<'_>,
    cache: CachePolicy,
    name: &str,
    phase: OnRank,
    sink: &mut Option<PhaseSink<'_>>,
) -> anyhow::Result<u64> {
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    let archive = study.archive_path().display().to_string();
    let mut rec = RankRecord::new(world.rank, &world.host, vec![archive.clone()]);
    let mut verified = None;
    let mut own_notes = Vec::new();
    let mut started_unix_s = 0.0;
    let OnRank {
        ran,
        barrier,
        called_off,
    } = phase;
    match ran {
        Ok(run) => {
            let t0 = barrier.unwrap_or(run.opened);
            let on_clock = |t: Instant| t.saturating_duration_since(t0).as_secs_f64();
            rec.start_s = on_clock(run.opened);
            rec.end_s = on_clock(run.end).max(rec.start_s);
            rec.started_unix_s = run.started_unix_s;
            started_unix_s = run.started_unix_s;
            if let Some(f) = run.failure {
                rec.status = RunStatus::Failed;
                rec.failures.push(IoFailure {
                    user: 0,
                    thread: 0,
                    path: archive.clone(),
                    offset: None,
                    message: f,
                });
            }
            own_notes = run.notes.clone();
            rec.notes = run.notes;
            verified = run.verified;
            rec.threads.push(ThreadRecord {
                user: 0,
                thread: 0,
                stats: run.stats,
                failure: None,
                verify: None,
            });
        }
        // Ready, but another rank was not: that rank's failure is the phase's.
        Err(_) if called_off => rec.called_off = true,
        Err(e) => rec.error = Some(one_line(&e)),
    }
    let state = if crate::runner::signal::interrupted() {
        INTERRUPTED
    } else if rec.called_off || rec.error.is_some() || rec.status == RunStatus::Failed {
        FAILED
    } else {
        DONE
    };
    let agreed = world.all_min(&format!("the end of the backup {name}"), timeout, state);
    let bytes = serde_json::to_vec(&PhaseRank { rec, verified })?;
    let gathered = world.gather(&format!("collecting the backup {name}"), timeout, &bytes);
    let mut stored: anyhow::Result<()> = Ok(());
    if let (Some(all), Some(sink)) = (gathered, sink.as_mut()) {
        if agreed != INTERRUPTED {
            let ranks: Vec<PhaseRank> = all
                .iter()
                .map(|b| serde_json::from_slice(b))
                .collect::<Result<_, _>>()?;
            let run = PhaseRun {
                stats: Stats::default(),
                opened: Instant::now(),
                end: Instant::now(),
                started_unix_s,
                failure: None,
                notes: own_notes,
                verified: ranks
                    .iter()
                    .map(|r| r.verified)
                    .collect::<Option<Vec<bool>>>()
                    .map(|v| v.iter().all(|&x| x)),
            };
            let records: Vec<RankRecord> = ranks.into_iter().map(|r| r.rec).collect();
            let mut result = study.result_of(cache, name, run);
            aggregate::distribute_phase(&mut result, &records);
            stored = sink(cache, name, result);
        }
    }
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
