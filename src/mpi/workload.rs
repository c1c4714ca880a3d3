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

use super::aggregate::{self, RankRecord, RunMark, WorkloadRank};
use super::layout::{self, DistPlan};
use super::{
    end_io, finish_gated, make_dir, one_line, wait_io, wait_ready, Ending, Event, Stonewall, World,
};
use crate::workload::fileset::shared_tree;
use crate::workload::model::Model;
use crate::workload::run::{
    execute_gated, lay_out_only, remove_laid_out, Executed, LaidOut, Options,
};
use crate::workload::Source;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    pub keep: bool,
    pub in_process: bool,
    pub stall_after_s: f64,
    pub engine: crate::job::EngineKind,
    pub rate: crate::job::RateLimit,
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

/// The workload on a thread of its own, the gate of each of its runs wired to the channels.
fn start(
    src: Source,
    model: Model,
    opts: Options,
    tx: mpsc::Sender<Event<Executed>>,
    go: Receiver<bool>,
    clean: Receiver<()>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("fsbench-rank".into())
        .spawn(move || {
            // Every run's gate waits on the same two channels, one run after the other.
            let go = Arc::new(Mutex::new(go));
            let clean = Arc::new(Mutex::new(clean));
            let hooks = tx.clone();
            let mut gate = move || {
                let (t1, t2) = (hooks.clone(), hooks.clone());
                let (go, clean) = (go.clone(), clean.clone());
                crate::runner::Gate {
                    // The workload's arena starts when this hook returns: the main thread
                    // never uses the opener, it answers on `go`.
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
            let r = execute_gated(&src, &model, &opts, Some(&mut gate));
            let _ = tx.send(Event::Finished(r));
        })
}

/// This rank's part of a distributed workload; rank 0 gets the one Result. Every rank makes
/// the same collective calls in the same order, whatever happened to it.
pub(crate) fn run(
    world: &World,
    ws: &WorkloadSpec,
    front: Option<&Options>,
) -> anyhow::Result<Ending> {
    let timeout = Duration::from_secs_f64(ws.timeout_s);
    let rank = world.rank;
    crate::runner::signal::install();
    // --reorder-ranks: the rank whose directory (and filesets) this rank runs in.
    let hosts = if ws.reorder {
        world.all_hosts(timeout)
    } else {
        Vec::new()
    };
    let shift = ws.reorder.then(|| layout::reorder_shift(&hosts));
    let source = layout::source_rank(rank, world.size, shift);
    let mut local_err: Option<anyhow::Error> = None;
    let mut base_made = false;
    // With --shared-file: rank 0's locks of the fileset directories and the trees it made.
    let mut shared = SharedTrees::default();
    if rank == 0 {
        match make_dir(&ws.base) {
            Ok(m) => base_made = m,
            Err(e) => local_err = Some(e),
        }
        if ws.shared && local_err.is_none() {
            if let Err(e) = shared.make(&ws.source_in(&ws.base, 0), world.size) {
                local_err = Some(e);
            }
        }
    }
    // A rank whose directory (or, with --shared-file, rank 0's trees) could not be made
    // calls the run off: no rank lays anything out in what is not there.
    let made = world.all_min(
        "creating the ranks' directories",
        timeout,
        local_err.is_none() as u64,
    ) == 1;
    let dir = ws.dir_of(rank);
    let mut own_dir = None;
    if made && !ws.shared {
        match make_dir(&dir) {
            Ok(true) => own_dir = Some(dir.clone()),
            Ok(false) => {}
            Err(e) => local_err = Some(e),
        }
    }
    // --reorder-ranks: every rank lays out its filesets in its own directory, untimed, and
    // leaves them (with their manifests) for the rank that runs over them.
    let mut laid: Option<(Model, LaidOut)> = None;
    let mut made = made;
    if ws.reorder {
        if made && local_err.is_none() {
            let own = ws.source_in(&dir, rank);
            let out = crate::workload::load_source(&own).and_then(|m| {
                let l = lay_out_only(&own, &m, &ws.options(front))?;
                Ok((m, l))
            });
            match out {
                Ok(x) => laid = Some(x),
                Err(e) => local_err = Some(e),
            }
        }
        // No rank runs over another's filesets before every rank's are laid out.
        let ok = made && local_err.is_none();
        made = world.all_min("laying out the filesets", timeout, ok as u64) == 1;
    }
    let run_dir = ws.dir_of(source);
    if made && local_err.is_none() && !run_dir.is_dir() {
        local_err = Some(crate::usage!(
            "with --reorder-ranks rank {rank} runs in {}, which rank {source} laid out, but it is not there on host {}: --dir must be on a file system every host shares",
            run_dir.display(),
            world.host
        ).into());
    }
    let mut rec = RankRecord::new(rank, &world.host, vec![run_dir.display().to_string()]);
    // Each rank runs over filesets its own host laid out unless reordered to another host's.
    rec.own_host_data = !ws.reorder || hosts[source as usize] == world.host;
    rec.data_of_rank = shift.map(|_| source);
    let src = ws.source_in(&run_dir, rank);
    let model = match &local_err {
        None if !made => None,
        None => match crate::workload::load_source(&src) {
            Ok(mut m) => {
                if ws.reorder {
                    // Another rank's filesets, as it laid them out: reused, each entry
                    // checked against that rank's manifest, nothing laid out afresh.
                    // Only this rank runs in that directory (the shift is a permutation of
                    // the ranks), so the names its flowops create cannot collide with
                    // another running rank's, and the rank that laid it out waits for every
                    // rank's end before it removes anything there.
                    for f in &mut m.filesets {
                        f.reuse = true;
                    }
                }
                Some(m)
            }
            Err(e) => {
                local_err = Some(e);
                None
            }
        },
        Some(_) => None,
    };
    let (tx, rx) = mpsc::channel::<Event<Executed>>();
    let (go_tx, go_rx) = mpsc::channel::<bool>();
    let (clean_tx, clean_rx) = mpsc::channel::<()>();
    let mut handle = None;
    let mut early: Option<anyhow::Result<Executed>> = None;
    if let Some(model) = model {
        match start(src, model, ws.options(front), tx, go_rx, clean_rx) {
            Ok(h) => handle = Some(h),
            Err(e) => local_err = Some(anyhow::anyhow!("cannot start the rank's thread: {e}")),
        }
    }
    // Each `run` of the script: every rank's threads ready, then one barrier; every rank's
    // I/O over before any goes on. A rank whose script is over (or failed before a run)
    // calls the next run off on every rank, so all ranks make the same collective calls and
    // leave the loop together. Times are on the clock of the first run's barrier.
    let (mut first_ready, mut first_all_ok) = (false, false);
    let mut clock0: Option<Instant> = None;
    // Per run that started: its barrier, the end of this rank's I/O (on that clock), and
    // whether the stonewall stopped it.
    let mut marks: Vec<RunMark> = Vec::new();
    loop {
        let ready = handle.is_some() && early.is_none() && wait_ready(&rx, &mut early).is_some();
        let step = if clock0.is_none() {
            "the start barrier"
        } else {
            "the start barrier of the next run"
        };
        let all_ok = world.all_min(step, timeout, ready as u64) == 1;
        let run_start = Instant::now();
        let t0 = *clock0.get_or_insert(run_start);
        let barrier_s = run_start.duration_since(t0).as_secs_f64();
        if marks.is_empty() {
            (first_ready, first_all_ok) = (ready, all_ok);
        }
        if ready {
            let _ = go_tx.send(all_ok);
        }
        if !all_ok {
            break;
        }
        // The stonewall's clock zero is this run's barrier; the marks are on the first run's.
        let io = wait_io(world, ws.stonewall, &rx, run_start, &mut early);
        marks.push(RunMark {
            barrier_s,
            end_s: io
                .end_s
                .map(|e| barrier_s + e)
                .unwrap_or_else(|| t0.elapsed().as_secs_f64()),
            stopped: io.stopped,
        });
        // Every rank's I/O of the run is over; the stonewall messages of the run that are
        // still on their way are taken, so none is seen by the next run.
        end_io(world, timeout, &io);
        // The workload may go on (and remove its filesets).
        let _ = clean_tx.send(());
    }
    let (ready, all_ok) = (first_ready, first_all_ok);
    match finish_gated(&rx, handle, early) {
        Some(Ok(ex)) => {
            let ran = ready && all_ok && !ex.runs.is_empty();
            rec.status = ex.result.status;
            rec.failures = ex.result.failures.clone();
            rec.notes = ex.result.notes.clone();
            rec.started_unix_s = ex.result.started_unix_s;
            rec.stopped = marks.iter().any(|m| m.stopped);
            if !ran {
                rec.error = Some(
                    ex.result
                        .notes
                        .last()
                        .cloned()
                        .unwrap_or_else(|| "the workload ended before its start".into()),
                );
            }
            let mut w = WorkloadRank::new(ex, &marks);
            if let Some((_, l)) = &laid {
                // The filesets this rank laid out (the run reused another rank's).
                w.filesets = l.filesets.clone();
            }
            if let (Some(first), Some(last)) = (w.runs.first(), w.runs.last()) {
                rec.start_s = first.start_s;
                rec.end_s = last.end_s;
            }
            rec.workload = Some(w);
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
            None => rec.called_off = !all_ok,
        },
    }
    if ws.reorder {
        // Every rank's workload is over (its thread joined): no rank is still in the
        // directory this rank laid out, and what each created there is in its manifest.
        world.meet("the end of every rank's workload", timeout);
        if let (Some((m, l)), false) = (&laid, ws.keep) {
            rec.notes.extend(remove_laid_out(m, l));
        }
    }
    if let Some(d) = &own_dir {
        if ws.keep {
            // Kept: no later run takes it for a killed run's.
            crate::leftover::clear_run_of(d);
        } else {
            let _ = std::fs::remove_dir(d);
        }
    }
    let own_code = if rec.usage {
        2
    } else if rec.error.is_some() || rec.status == crate::runner::RunStatus::Failed {
        1
    } else {
        0
    };
    let bytes = serde_json::to_vec(&rec)?;
    let gathered = world.gather_reported("collecting the results", timeout, &bytes);
    // Every rank's workload is over (its entries removed): the shared directories go.
    let left = shared.finish(ws.keep);
    let Some(all) = gathered else {
        return Ok(Ending::Done(own_code));
    };
    if base_made && !ws.keep {
        let _ = std::fs::remove_dir(&ws.base);
    } else if base_made {
        crate::leftover::clear_run_of(&ws.base);
    }
    let dir_of = |r: u32| {
        vec![ws
            .dir_of(layout::source_rank(r, world.size, shift))
            .display()
            .to_string()]
    };
    let records = super::reported_records(&all, &hosts, &dir_of)?;
    if let Some((true, message)) = aggregate::start_refusal(&records) {
        return Ok(Ending::Refused {
            usage: true,
            message,
        });
    }
    let model0 = crate::workload::load_source(&ws.src)?;
    let mut result = aggregate::build_workload(
        &ws.src,
        &model0,
        &records,
        ws.layout_name(),
        ws.stonewall,
        shift,
    );
    result.notes.extend(left);
    Ok(Ending::Result(Box::new(result)))
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
        let model = crate::workload::load_source(src)?;
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
            let made = crate::workload::fileset::layout(spec)
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
