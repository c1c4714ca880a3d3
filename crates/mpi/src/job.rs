//! A Job on every rank ([`super::executor`]): each rank derives its own target or part of a
//! shared file ([`super::layout`]) and runs it through the ordinary runner (threads or
//! processes, every engine, cache policy, rate limit). With `--file-per-rank` every rank's
//! file is in a directory of its own, PATH.d/rank-NNNNN (made and removed by fsbench unless
//! `--keep`); on a shared file rank 0 prepares (creates) it first and tells the others which
//! file it made, and each rank covers its part (`RankPart`, a parameter of
//! `runner::run_gated`). With `--reorder-ranks` each rank lays out its own file, untimed, for
//! the rank the shift places on it to read.

use super::aggregate::{self, RankRecord};
use super::executor::{self, Distributed, LocalRun, Removal, Settings, Timing};
use super::layout::{self, DistSpec, Layout};
use super::{make_dir, Ending, World};
use crate::result::{RankPart, RunResult};
use crate::runner::{self, mark::FileId};
use fsbench_core::job::Job;
use std::path::PathBuf;
use std::time::Duration;

/// This rank's part of a Job on every rank.
pub(super) fn run(world: &World, spec: &DistSpec) -> anyhow::Result<Ending> {
    let settings = Settings {
        timeout: Duration::from_secs_f64(spec.timeout_s),
        stonewall: spec.stonewall,
        observe: spec.observe.clone(),
        watch: spec.watch.clone(),
        barrier: String::new(),
        agree: None,
    };
    let mut kind = JobOnRanks {
        spec,
        rank: world.rank,
        ranks: world.size,
        shift: None,
        job: spec.job.clone(),
        part: None,
        existed: false,
        parent_made: false,
        own_dir: None,
        laid_out: Vec::new(),
    };
    executor::execute(world, &mut kind, &settings)
}

struct JobOnRanks<'a> {
    spec: &'a DistSpec,
    rank: u32,
    ranks: u32,
    /// `--reorder-ranks`: how far the ranks' data is shifted.
    shift: Option<u32>,
    /// This rank's Job and, on a shared file, its part of it.
    job: Job,
    part: Option<RankPart>,
    /// Rank 0, shared file: the file was there before the run.
    existed: bool,
    /// Rank 0, file per rank: this run made the directory holding every rank's.
    parent_made: bool,
    /// This rank's directory, when this run made it.
    own_dir: Option<PathBuf>,
    /// `--reorder-ranks`: the files this rank laid out for another to read.
    laid_out: Vec<(PathBuf, FileId)>,
}

impl JobOnRanks<'_> {
    fn shared(&self) -> bool {
        self.spec.layout != Layout::FilePerRank
    }

    fn path(&self) -> &std::path::Path {
        &self.spec.job.targets[0]
    }

    /// With `--file-per-rank`: the ranks' directories, and with `--reorder-ranks` this rank's
    /// own files laid out for another rank to read.
    fn make_files(&mut self, world: &World) -> anyhow::Result<()> {
        let timeout = Duration::from_secs_f64(self.spec.timeout_s);
        let mut err = None;
        if self.rank == 0 {
            match make_dir(&layout::parent_dir(self.path())) {
                Ok(m) => self.parent_made = m,
                Err(e) => err = Some(e),
            }
        }
        world.meet("creating the ranks' directories", timeout);
        if err.is_none() {
            let dir = layout::rank_dir(self.path(), self.rank);
            match make_dir(&dir) {
                Ok(true) => self.own_dir = Some(dir),
                Ok(false) => {}
                Err(e) => err = Some(e),
            }
        }
        if self.spec.reorder && err.is_none() {
            // Each rank lays out its own file, for another rank to read.
            let mut own = self.spec.job.clone();
            own.targets = layout::rank_files(&self.spec.job.targets, self.rank);
            match runner::lay_out_only(&own) {
                Ok(m) => self.laid_out = m,
                Err(e) => err = Some(e),
            }
        }
        world.meet("laying out the files to read", timeout);
        err.map_or(Ok(()), Err)
    }
}

impl Distributed for JobOnRanks<'_> {
    type Out = runner::RunOutcome;

    fn prepare(
        &mut self,
        world: &World,
        hosts: &[String],
        rec: &mut RankRecord,
    ) -> anyhow::Result<()> {
        self.shift = self.spec.reorder.then(|| layout::reorder_shift(hosts));
        (self.job, self.part) = layout::rank_job(self.spec, self.rank, self.ranks, self.shift);
        let source = layout::source_rank(self.rank, self.ranks, self.shift);
        rec.own_host_data = hosts[source as usize] == world.host;
        rec.data_of_rank = self.shift.map(|_| source);
        if self.shared() {
            self.existed = self.rank == 0 && std::fs::symlink_metadata(self.path()).is_ok();
            Ok(())
        } else {
            self.make_files(world)
        }
    }

    fn targets(&self, rank: u32) -> Vec<String> {
        layout::rank_job(self.spec, rank, self.ranks, self.shift)
            .0
            .targets
            .iter()
            .map(|t| t.display().to_string())
            .collect()
    }

    fn scope(&self) -> Option<fsbench_core::observe::Scope> {
        Some(fsbench_core::observe::Scope::of_job(&self.job))
    }

    /// On a shared file rank 0 makes (or finds) it; the others open it after.
    fn first(&self, rank: u32) -> bool {
        !self.shared() || rank == 0
    }

    /// Rank 0 made (or found) the shared file: the others may open it now, checking it is
    /// the file rank 0 made.
    fn handoff(
        &mut self,
        world: &World,
        ready: bool,
        rec: &mut RankRecord,
    ) -> anyhow::Result<bool> {
        if !self.shared() {
            return Ok(true);
        }
        let timeout = Duration::from_secs_f64(self.spec.timeout_s);
        let step = "creating the shared file";
        if self.rank == 0 {
            let ino = if ready && !self.existed {
                std::fs::symlink_metadata(self.path())
                    .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
                    .ok()
            } else {
                None
            };
            world.broadcast(step, timeout, serde_json::to_vec(&(ready, ino))?);
            return Ok(true);
        }
        let got = world.broadcast(step, timeout, Vec::new());
        let (ok0, ino): (bool, Option<u64>) = serde_json::from_slice(&got)?;
        if !ok0 {
            rec.called_off = true;
        } else if let Some(p) = &mut self.part {
            p.created_ino = ino;
        }
        Ok(ok0)
    }

    fn launch(&mut self) -> LocalRun<Self::Out> {
        let (job, part) = (self.job.clone(), self.part);
        Box::new(move |gates, watch| runner::run_gated(&job, part, Some(gates()), &watch))
    }

    fn record(&mut self, out: Self::Out, timing: &Timing, rec: &mut RankRecord) {
        if timing.ready {
            rec.fill(out, timing.t0_ns, timing.end_s());
            return;
        }
        // Preparing the target failed (its file and offset are in the failures).
        rec.fill(out, timing.t0_ns, 0.0);
        rec.error = Some(
            rec.failures
                .first()
                .map(|f| f.to_string())
                .unwrap_or_else(|| "preparing the target failed".into()),
        );
    }

    /// The files laid out for other ranks to read, and this rank's directory, unless kept.
    fn clean_up(&mut self, _world: &World, rec: &mut RankRecord) {
        if !self.spec.job.keep {
            for (p, id) in &self.laid_out {
                rec.notes.extend(runner::remove_laid_out(p, *id));
            }
            if let Some(d) = &self.own_dir {
                let _ = std::fs::remove_dir(d);
            }
        } else if let Some(d) = &self.own_dir {
            crate::leftover::clear_run_of(d);
        }
    }

    fn finish(&mut self) -> Removal {
        let parent = self.parent_made.then(|| layout::parent_dir(self.path()));
        let keep = self.spec.job.keep;
        Box::new(move || {
            match parent {
                Some(p) if keep => crate::leftover::clear_run_of(&p),
                Some(p) => {
                    let _ = std::fs::remove_dir(p);
                }
                None => {}
            }
            Vec::new()
        })
    }

    fn merge(&mut self, records: &[RankRecord]) -> anyhow::Result<RunResult> {
        Ok(aggregate::job_result(&self.spec.job, records))
    }

    fn layout(&self) -> (&'static str, Option<u32>) {
        (self.spec.layout.name(), self.shift)
    }

    fn cache_note(&self, records: &[RankRecord], hosts: usize) -> Option<String> {
        aggregate::cache_note(self.spec, &self.spec.job, records, hosts)
    }
}
