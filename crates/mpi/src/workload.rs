//! A Filebench workload as one distributed run (the mdtest-like metadata load of issue #16):
//! every rank runs the same workload in a directory of its own, DIR/rank-NNNNN (created and
//! removed by fsbench unless `--keep`), or with `--shared-file` every rank in the same
//! fileset directories under DIR (mdtest's shared-directory mode: rank 0 makes and at the
//! end removes the directories, each rank creates and removes only its own entries, their
//! names tagged with its rank; `workload::fileset::shared_tree`), through the ordinary
//! workload engine with the two hooks of a rank (`runner::Gate`) on every `run` of the
//! script: every rank's threads are ready before any starts (one MPI barrier a run), and no
//! rank goes on (to its next command, or to remove its filesets) before every rank's I/O of
//! the run is over. Each rank sends rank 0 each run's exact per-flowop statistics and, with
//! `--verify`, what its threads' checked reads found; rank 0 merges them, one entry of
//! `workload.runs` a run ([`super::aggregate`]). With `--stonewall` every run of every rank
//! is stopped when the first rank's run ends on its own, or DUR after the run's start
//! barrier, through the workload's own stop check (`runner::signal::stop_workers`, read by
//! its watch loop). With `--reorder-ranks` (IOR's -C) every rank lays out its filesets in
//! its own directory, untimed, then runs over those of rank (r + shift) mod n in that rank's
//! directory (reused, each entry checked against that rank's manifest), so what it reads
//! another client wrote; after every rank is done, the rank that laid a directory out
//! removes what its manifest lists (its own files and what the visiting rank created).

use super::aggregate::{self, RankRecord, WorkloadRank};
use super::executor::{self, Distributed, LocalRun, Removal, Settings, Timing};
use super::layout::{self, DistPlan};
use super::{make_dir, Ending, Stonewall, World};
use crate::result::{RunResult, StonewallReport};
use fsbench_core::workload::fileset::shared_tree;
use fsbench_core::workload::model::Model;
use fsbench_core::workload::run::{
    execute_gated, lay_out_only, remove_laid_out, Executed, LaidOut, Options,
};
use fsbench_core::workload::Source;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What rank 0 sends every rank: the workload and how it runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WorkloadSpec {
    /// The workload as loaded on rank 0; each rank sets `dir` to its own directory.
    pub src: Source,
    /// The directory holding every rank's directory (the workload's `$dir` on rank 0).
    pub base: PathBuf,
    pub time_s: Option<f64>,
    /// `--ramp`: the warm-up of every run, left out of the counts.
    #[serde(default)]
    pub ramp_s: Option<f64>,
    /// `--ramp-bytes`: each thread's warm-up by bytes moved, left out of the counts.
    #[serde(default)]
    pub ramp_bytes: Option<u64>,
    pub keep: bool,
    pub in_process: bool,
    pub stall_after_s: f64,
    pub engine: fsbench_core::job::EngineKind,
    pub rate: fsbench_core::job::RateLimit,
    pub timeout_s: f64,
    /// `--verify`: each rank checks the reads of what it wrote (its own filesets).
    #[serde(default)]
    pub verify: bool,
    /// `--stonewall`: every `run` of the script stops on every rank when the first rank's run
    /// ends, or this long after the run's start barrier.
    #[serde(default)]
    pub stonewall: Option<Stonewall>,
    /// `--shared-file`: every rank's filesets in the same directories under `base`.
    #[serde(default)]
    pub shared: bool,
    /// `--reorder-ranks`: every rank lays out its filesets in its own directory, then runs
    /// over those of the rank `reorder_shift` places on, in that rank's directory.
    #[serde(default)]
    pub reorder: bool,
}

impl WorkloadSpec {
    /// Rank 0's checks of a workload that runs on ranks, and the spec of it.
    pub(crate) fn new(
        src: &Source,
        opts: &Options,
        plan: &DistPlan,
    ) -> anyhow::Result<WorkloadSpec> {
        if plan.reorder && plan.layout != super::Layout::FilePerRank {
            crate::bail_usage!(
                "--reorder-ranks with --shared-file: every rank already runs in the same fileset directories, so there is no other rank's directory to run in: drop one of them"
            );
        }
        if plan.reorder && opts.verify {
            crate::bail_usage!(
                "--verify checks the reads of what each rank wrote itself, and with --reorder-ranks a workload runs over the filesets another rank laid out (their content unknown to it): drop --reorder-ranks (verify in a run without it)"
            );
        }
        let Some((_, dir)) = src.defines.iter().rev().find(|(k, _)| k == "dir") else {
            crate::bail_usage!(
                "on MPI ranks a workload needs --dir DIR: each rank works in DIR/rank-NNNNN"
            );
        };
        Ok(WorkloadSpec {
            src: src.clone(),
            base: PathBuf::from(dir),
            time_s: opts.time.map(|d| d.as_secs_f64()),
            ramp_s: opts.ramp.map(|d| d.as_secs_f64()),
            ramp_bytes: opts.ramp_bytes,
            keep: opts.keep,
            in_process: opts.in_process,
            stall_after_s: opts.stall_after.as_secs_f64(),
            engine: opts.engine,
            rate: opts.rate,
            timeout_s: plan.timeout_s,
            verify: opts.verify,
            stonewall: plan.stonewall,
            shared: plan.layout != super::Layout::FilePerRank,
            reorder: plan.reorder,
        })
    }

    /// Rank `rank`'s directory: its own, or with `--shared-file` the one of every rank.
    fn dir_of(&self, rank: u32) -> PathBuf {
        if self.shared {
            self.base.clone()
        } else {
            self.base.join(format!("rank-{rank:05}"))
        }
    }

    /// The workload of rank `rank` in `dir` (with `--shared-file`, its entries tagged).
    fn source_in(&self, dir: &Path, rank: u32) -> Source {
        let mut src = self.src.clone();
        src.defines.retain(|(k, _)| k != "dir");
        src.defines.push(("dir".into(), dir.display().to_string()));
        src.shared_rank = self.shared.then_some(rank);
        src
    }

    /// What `distributed.layout` says of the run.
    fn layout_name(&self) -> &'static str {
        if self.shared {
            "shared_dir"
        } else {
            "dir_per_rank"
        }
    }

    /// The options of this rank: rank 0's own (it prints the progress lines), the others'
    /// from the spec, quiet.
    fn options(&self, front: Option<&Options>) -> Options {
        let opts = match front {
            Some(o) => o.clone(),
            None => Options {
                time: self.time_s.map(Duration::from_secs_f64),
                ramp: self.ramp_s.map(Duration::from_secs_f64),
                ramp_bytes: self.ramp_bytes,
                keep: self.keep,
                in_process: self.in_process,
                lines_to_stdout: false,
                stall_after: Duration::from_secs_f64(self.stall_after_s),
                progress: None,
                engine: self.engine,
                rate: self.rate,
                verify: self.verify,
                leave_for_owner: false,
                watch: Default::default(),
            },
        };
        Options {
            leave_for_owner: self.reorder,
            ..opts
        }
    }
}

/// This rank's part of a distributed workload; rank 0 (`front`: its own options, it prints
/// the progress lines) gets the one Result.
pub(crate) fn run(
    world: &World,
    ws: &WorkloadSpec,
    front: Option<&Options>,
) -> anyhow::Result<Ending> {
    let settings = Settings {
        timeout: Duration::from_secs_f64(ws.timeout_s),
        stonewall: ws.stonewall,
        observe: Default::default(),
        watch: Default::default(),
        barrier: String::new(),
        agree: None,
    };
    let mut kind = WorkloadOnRanks {
        ws,
        front,
        rank: world.rank,
        ranks: world.size,
        shift: None,
        base_made: false,
        shared: SharedTrees::default(),
        own_dir: None,
        laid: None,
        run: None,
        model0: None,
    };
    executor::execute(world, &mut kind, &settings)
}

struct WorkloadOnRanks<'a> {
    ws: &'a WorkloadSpec,
    front: Option<&'a Options>,
    rank: u32,
    ranks: u32,
    /// `--reorder-ranks`: how far the ranks' directories are shifted.
    shift: Option<u32>,
    /// Rank 0: this run made the directory holding every rank's.
    base_made: bool,
    /// With `--shared-file`: rank 0's locks of the fileset directories and the trees it made.
    shared: SharedTrees,
    /// This rank's directory, when this run made it.
    own_dir: Option<PathBuf>,
    /// `--reorder-ranks`: the filesets this rank laid out for another rank to run over.
    laid: Option<(Model, LaidOut)>,
    /// The workload this rank runs, in the directory it runs in.
    run: Option<(Source, Model)>,
    /// Rank 0: the workload as loaded there (the Result's outline).
    model0: Option<Model>,
}

impl WorkloadOnRanks<'_> {
    /// The directories: rank 0's holding every rank's (and with `--shared-file` the fileset
    /// trees), then this rank's own; whether every rank's could be made.
    fn make_dirs(&mut self, world: &World, timeout: Duration) -> anyhow::Result<bool> {
        let ws = self.ws;
        let mut err = None;
        if self.rank == 0 {
            match make_dir(&ws.base) {
                Ok(m) => self.base_made = m,
                Err(e) => err = Some(e),
            }
            if ws.shared && err.is_none() {
                if let Err(e) = self.shared.make(&ws.source_in(&ws.base, 0), self.ranks) {
                    err = Some(e);
                }
            }
        }
        // A rank whose directory (or, with --shared-file, rank 0's trees) could not be made
        // calls the run off: no rank lays anything out in what is not there.
        let made = world.all_min(
            "creating the ranks' directories",
            timeout,
            err.is_none() as u64,
        ) == 1;
        if let Some(e) = err {
            return Err(e);
        }
        if made && !ws.shared {
            let dir = ws.dir_of(self.rank);
            if make_dir(&dir)? {
                self.own_dir = Some(dir);
            }
        }
        Ok(made)
    }

    /// `--reorder-ranks`: every rank lays out its filesets in its own directory, untimed, and
    /// leaves them (with their manifests) for the rank that runs over them. Whether every
    /// rank's are laid out.
    fn lay_out(
        &mut self,
        world: &World,
        timeout: Duration,
        made: anyhow::Result<bool>,
    ) -> anyhow::Result<bool> {
        let laid = made.and_then(|made| {
            if !made {
                return Ok(false);
            }
            let own = self.ws.source_in(&self.ws.dir_of(self.rank), self.rank);
            let m = fsbench_core::workload::load_source(&own)?;
            let l = lay_out_only(&own, &m, &self.ws.options(self.front))?;
            self.laid = Some((m, l));
            Ok(true)
        });
        // No rank runs over another's filesets before every rank's are laid out.
        let ok = matches!(laid, Ok(true));
        let all = world.all_min("laying out the filesets", timeout, ok as u64) == 1;
        laid.map(|_| all)
    }
}

impl Distributed for WorkloadOnRanks<'_> {
    type Out = Executed;

    fn prepare(
        &mut self,
        world: &World,
        hosts: &[String],
        rec: &mut RankRecord,
    ) -> anyhow::Result<()> {
        let ws = self.ws;
        let timeout = Duration::from_secs_f64(ws.timeout_s);
        // --reorder-ranks: the rank whose directory (and filesets) this rank runs in.
        self.shift = ws.reorder.then(|| layout::reorder_shift(hosts));
        let source = layout::source_rank(self.rank, self.ranks, self.shift);
        // Each rank runs over filesets its own host laid out unless reordered to another host's.
        rec.own_host_data = !ws.reorder || hosts[source as usize] == world.host;
        rec.data_of_rank = self.shift.map(|_| source);
        let mut made = self.make_dirs(world, timeout);
        if ws.reorder {
            made = self.lay_out(world, timeout, made);
        }
        if !made? {
            // Another rank could not make its part.
            rec.called_off = true;
            return Ok(());
        }
        let run_dir = ws.dir_of(source);
        if !run_dir.is_dir() {
            crate::bail_usage!(
                "with --reorder-ranks rank {} runs in {}, which rank {source} laid out, but it is not there on host {}: --dir must be on a file system every host shares",
                self.rank,
                run_dir.display(),
                world.host
            );
        }
        let src = ws.source_in(&run_dir, self.rank);
        let mut model = fsbench_core::workload::load_source(&src)?;
        if ws.reorder {
            // Another rank's filesets, as it laid them out: reused, each entry checked
            // against that rank's manifest, nothing laid out afresh. Only this rank runs in
            // that directory (the shift is a permutation of the ranks), so the names its
            // flowops create cannot collide with another running rank's, and the rank that
            // laid it out waits for every rank's end before it removes anything there.
            for f in &mut model.filesets {
                f.reuse = true;
            }
        }
        self.run = Some((src, model));
        Ok(())
    }

    fn targets(&self, rank: u32) -> Vec<String> {
        let source = layout::source_rank(rank, self.ranks, self.shift);
        vec![self.ws.dir_of(source).display().to_string()]
    }

    fn parts(&self) -> bool {
        true
    }

    fn launch(&mut self) -> LocalRun<Self::Out> {
        let (src, model) = self.run.take().expect("a prepared rank has its workload");
        let opts = self.ws.options(self.front);
        // The workload is watched as its options say (rank 0's own, the others' quiet).
        Box::new(move |gates, _| execute_gated(&src, &model, &opts, Some(gates)))
    }

    fn record(&mut self, ex: Executed, timing: &Timing, rec: &mut RankRecord) {
        let ran = timing.ready && timing.all_ok && !ex.runs.is_empty();
        rec.status = ex.result.status;
        rec.failures = ex.result.failures.clone();
        rec.notes = ex.result.notes.clone();
        rec.started_unix_s = ex.result.started_unix_s;
        if !ran {
            rec.error = Some(
                ex.result
                    .notes
                    .last()
                    .cloned()
                    .unwrap_or_else(|| "the workload ended before its start".into()),
            );
        }
        let mut w = WorkloadRank::new(ex, &timing.marks);
        if let Some((_, l)) = &self.laid {
            // The filesets this rank laid out (the run reused another rank's).
            w.filesets = l.filesets.clone();
        }
        if let (Some(first), Some(last)) = (w.runs.first(), w.runs.last()) {
            rec.start_s = first.start_s;
            rec.end_s = last.end_s;
        }
        rec.workload = Some(w);
    }

    fn clean_up(&mut self, world: &World, rec: &mut RankRecord) {
        let ws = self.ws;
        if ws.reorder {
            // Every rank's workload is over (its thread joined): no rank is still in the
            // directory this rank laid out, and what each created there is in its manifest.
            let timeout = Duration::from_secs_f64(ws.timeout_s);
            world.meet("the end of every rank's workload", timeout);
            if let (Some((m, l)), false) = (&self.laid, ws.keep) {
                rec.notes.extend(remove_laid_out(m, l));
            }
        }
        if let Some(d) = &self.own_dir {
            if ws.keep {
                // Kept: no later run takes it for a killed run's.
                crate::leftover::clear_run_of(d);
            } else {
                let _ = std::fs::remove_dir(d);
            }
        }
    }

    /// Every rank's workload is over (its entries removed): the shared directories go.
    fn finish(&mut self) -> Removal {
        let mut shared = std::mem::take(&mut self.shared);
        let keep = self.ws.keep;
        let base = self.base_made.then(|| self.ws.base.clone());
        Box::new(move || {
            let left = shared.finish(keep);
            match base {
                Some(b) if keep => crate::leftover::clear_run_of(&b),
                Some(b) => {
                    let _ = std::fs::remove_dir(b);
                }
                None => {}
            }
            left
        })
    }

    fn merge(&mut self, records: &[RankRecord]) -> anyhow::Result<RunResult> {
        let model0 = self
            .model0
            .insert(fsbench_core::workload::load_source(&self.ws.src)?);
        Ok(aggregate::workload_result(&self.ws.src, model0, records))
    }

    fn layout(&self) -> (&'static str, Option<u32>) {
        (self.ws.layout_name(), self.shift)
    }

    fn stonewall(&self, mode: Stonewall, records: &[RankRecord]) -> StonewallReport {
        aggregate::workload_stonewall(mode, records, aggregate::workload_runs(records))
    }

    fn cache_note(&self, records: &[RankRecord], hosts: usize) -> Option<String> {
        let model0 = self.model0.as_ref()?;
        aggregate::workload_cache_note(model0, records, hosts, self.shift)
    }
}

/// The fileset directories every rank shares (`--shared-file`), as rank 0 made them, and
/// its locks of the directories holding them (one run at a time there, as on one host).
#[derive(Default)]
struct SharedTrees {
    locks: Vec<crate::guard::DirLock>,
    trees: Vec<shared_tree::SharedTree>,
}

impl SharedTrees {
    /// Lock the directories the filesets of `src` are laid out in and make every fileset's
    /// tree there (rank 0, before the start barrier). On an error the trees made are removed.
    fn make(&mut self, src: &Source, ranks: u32) -> anyhow::Result<()> {
        let model = fsbench_core::workload::load_source(src)?;
        let mut parents: Vec<PathBuf> = model
            .filesets
            .iter()
            .filter_map(|f| f.root.parent().map(|p| p.to_path_buf()))
            .filter(|p| p.is_dir())
            .collect();
        parents.sort();
        parents.dedup();
        for p in &parents {
            self.locks.push(crate::guard::lock_dir(p)?);
        }
        for spec in &model.filesets {
            let made = fsbench_core::workload::fileset::layout(spec)
                .and_then(|lay| shared_tree::make_tree(spec, &lay, ranks));
            match made {
                Ok(t) => self.trees.push(t),
                Err(e) => {
                    let _ = self.finish(false);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Remove the trees (unless `keep`) once every rank is done, and release the locks; the
    /// notes of what was left in them.
    fn finish(&mut self, keep: bool) -> Vec<String> {
        let mut notes = Vec::new();
        for t in self.trees.drain(..) {
            if keep {
                continue;
            }
            match shared_tree::remove_tree(&t) {
                Ok(Some(n)) => notes.push(format!("{}: {n}", t.root.display())),
                Ok(None) => {}
                Err(e) => notes.push(format!("cleanup: {e:#}")),
            }
        }
        for n in &notes {
            eprintln!("fsbench workload: {n}");
        }
        self.locks.clear();
        notes
    }
}
