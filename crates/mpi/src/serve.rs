//! Every command's points on every rank (issue #16): rank 0 is the *driver*, it runs the
//! command's ordinary front end (sweep, suite, workload, vx) with an
//! [`Executor::Ranks`](crate::exec::Executor) that sends each point to the other ranks as an
//! [`Order`] and runs its own part; every other rank is a *servant*, a loop that receives the
//! next order, runs its part through the same per-point functions ([`super::job::run`] for a Job,
//! [`super::workload::run`] for a workload) and sends its record, until [`Order::End`].
//! Both sides make the same collective calls in the same order, and every wait for rank 0's
//! next order has the `--mpi-timeout`.
//!
//! The files a point keeps for later points (a sweep writes a file, then reads it) are
//! remembered by each rank for its own paths, by identity, and removed at
//! [`Order::Cleanup`] unless `--keep`. So is the loop device a raw point on a file target
//! gives each rank (`DistSpec::loop_device`), kept for later points and detached at the end.

use super::backup::BackupSpec;
use super::layout::{self, DistPlan, DistSpec, Layout};
use super::replay::ReplaySpec;
use super::workload::WorkloadSpec;
use super::{Ending, World};
use crate::exec::Executor;
use crate::result::RunResult;
use crate::sweep::rawdev::{NoRawDevice, RawProvider};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

/// What rank 0 tells every rank to do next.
#[derive(Debug, Serialize, Deserialize)]
enum Order {
    /// One Job as a distributed run (`fresh`: first remove this rank's file of earlier points).
    Run { spec: Box<DistSpec>, fresh: bool },
    /// One workload as a distributed run.
    Workload(Box<WorkloadSpec>),
    /// A suite's backup study, a tree per rank.
    Backup(Box<BackupSpec>),
    /// A trace replay, each rank in a directory of its own.
    Replay(Box<ReplaySpec>),
    /// mdtest's phases, every phase started together on every rank.
    Mdtest(Box<super::mdtest::MdtestSpec>),
    /// IO500's find, every rank on its share of the entries.
    Find(Box<super::find::FindSpec>),
    /// Remove what the points kept for later points (unless `keep`).
    Cleanup { keep: bool },
    /// The command is over.
    End,
}

/// What this rank's points created and kept for later points.
#[derive(Default)]
struct Leftovers {
    /// Regular files, with the identity (device, inode) they had when the point ended.
    files: Vec<(PathBuf, u64, u64)>,
    /// This rank's directories (removed when empty), innermost last.
    dirs: Vec<PathBuf>,
    /// Directories holding every rank's directory (rank 0), removed after the others.
    shared_dirs: Vec<PathBuf>,
    /// This rank's loop device for raw points on file targets, kept for later points like
    /// a sweep's on one host; dropping it detaches it and removes its backing file.
    raw: RawProvider,
}

impl Leftovers {
    /// Remember `path` when the point just run created it.
    fn note(&mut self, path: &Path, existed: bool, shared_dir: bool) {
        if existed {
            return;
        }
        let Ok(m) = std::fs::symlink_metadata(path) else {
            return;
        };
        if m.is_file() {
            if !self.files.iter().any(|f| f.0 == path) {
                self.files.push((path.to_path_buf(), m.dev(), m.ino()));
            }
        } else if m.is_dir() {
            let list = if shared_dir {
                &mut self.shared_dirs
            } else {
                &mut self.dirs
            };
            if !list.iter().any(|d| d == path) {
                list.push(path.to_path_buf());
            }
        }
    }

    /// Remove the file a point created at `path`, if the name still holds that file.
    fn remove_file(&mut self, path: &Path) {
        if let Some(i) = self.files.iter().position(|f| f.0 == path) {
            let (p, dev, ino) = self.files.swap_remove(i);
            remove_if_same(&p, dev, ino);
        }
    }

    /// Remove this rank's files and directories (not the shared directories).
    fn remove_own(&mut self) {
        // The loop device's backing file lies in this rank's directory.
        self.raw.release();
        for (p, dev, ino) in self.files.drain(..) {
            remove_if_same(&p, dev, ino);
        }
        for d in self.dirs.drain(..).rev() {
            let _ = std::fs::remove_dir(d);
        }
    }

    fn remove_shared(&mut self) {
        for d in self.shared_dirs.drain(..).rev() {
            let _ = std::fs::remove_dir(d);
        }
    }

    /// Keep everything (`--keep`): the directories no longer name this run as the one to
    /// remove them (no later run takes them for a killed run's).
    fn keep(&mut self) {
        for d in self.dirs.iter().chain(&self.shared_dirs) {
            crate::leftover::clear_run_of(d);
        }
        self.forget();
    }

    fn forget(&mut self) {
        *self = Leftovers::default();
    }
}

fn remove_if_same(p: &Path, dev: u64, ino: u64) {
    if let Ok(m) = std::fs::symlink_metadata(p) {
        if m.is_file() && m.dev() == dev && m.ino() == ino {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The paths of this rank's part of a Job (path, shared directory?), outermost first: its
/// directories, then its file of every target.
fn own_paths(spec: &DistSpec, rank: u32) -> Vec<(PathBuf, bool)> {
    let path = &spec.job.targets[0];
    match spec.layout {
        Layout::FilePerRank => {
            let mut v = Vec::new();
            if rank == 0 {
                v.push((layout::parent_dir(path), true));
            }
            v.push((layout::rank_dir(path, rank), false));
            v.extend(
                layout::rank_files(&spec.job.targets, rank)
                    .into_iter()
                    .map(|f| (f, false)),
            );
            v
        }
        _ if rank == 0 => vec![(path.clone(), false)],
        _ => Vec::new(),
    }
}

/// [`super::job::run`] for one point, remembering what it created for [`Order::Cleanup`].
fn run_point(
    world: &World,
    spec: &DistSpec,
    fresh: bool,
    left: &mut Leftovers,
) -> anyhow::Result<Ending> {
    let own = own_paths(spec, world.rank);
    if fresh {
        // Only files are remembered as files: the directories among `own` are not touched.
        for (p, _) in &own {
            left.remove_file(p);
        }
    }
    let existed: Vec<bool> = own
        .iter()
        .map(|(p, _)| std::fs::symlink_metadata(p).is_ok())
        .collect();
    let ending = match spec.loop_device {
        None => super::job::run(world, spec),
        Some(need) => match rank_loop_device(world, spec, need, &mut left.raw) {
            Ok(dev) => {
                let mut own_spec = spec.clone();
                own_spec.rank_device = Some(dev);
                super::job::run(world, &own_spec)
            }
            // Rank 0 records the skip; the other ranks have nothing to report.
            Err(no) if world.rank == 0 => Err(no.into()),
            Err(_) => Ok(Ending::Done(0)),
        },
    };
    for ((p, shared), was) in own.iter().zip(existed) {
        left.note(p, was, *shared);
    }
    ending
}

/// A raw point on a file target (`DistSpec::loop_device`), on every rank at once: each rank
/// makes (or keeps from an earlier point) a loop device of `need` bytes over a backing file in
/// its own directory PATH.d/rank-NNNNN, the one-host mechanism of `crate::sweep::rawdev`.
/// Rank 0 hears from every rank whether it has one; unless all do, every rank releases its
/// device and the point is skipped with the reason of the first rank that has none.
fn rank_loop_device(
    world: &World,
    spec: &DistSpec,
    need: u64,
    raw: &mut RawProvider,
) -> Result<PathBuf, NoRawDevice> {
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    let path = &spec.job.targets[0];
    let parent = if world.rank == 0 {
        super::make_dir(&layout::parent_dir(path)).map(|_| ())
    } else {
        Ok(())
    };
    world.meet("creating the ranks' directories", timeout);
    let mine = parent
        .and_then(|()| {
            let dir = layout::rank_dir(path, world.rank);
            super::make_dir(&dir)?;
            raw.device(&dir, need)
        })
        .map_err(|e| super::one_line(&e));
    let said = serde_json::to_vec(&(&world.host, mine.as_ref().err())).unwrap_or_default();
    let verdict = world
        .gather("making every rank's loop device", timeout, &said)
        .map(|all| {
            let answers: Vec<(String, Option<String>)> = all
                .iter()
                .map(|b| {
                    serde_json::from_slice(b)
                        .unwrap_or_else(|_| ("?".into(), Some("an unreadable answer".into())))
                })
                .collect();
            crate::sweep::rawdev::ranks_skip_reason(&answers)
        })
        .unwrap_or_default();
    let bytes = serde_json::to_vec(&verdict).unwrap_or_default();
    let got = world.broadcast("making every rank's loop device", timeout, bytes);
    let verdict: Option<String> = serde_json::from_slice(&got)
        .unwrap_or_else(|_| Some("rank 0 sent an unreadable answer about the loop devices".into()));
    match (verdict, mine) {
        (None, Ok(dev)) => Ok(dev),
        (why, _) => {
            raw.release();
            Err(NoRawDevice(why.unwrap_or_else(|| {
                "this rank has no loop device although rank 0 found every rank had one".into()
            })))
        }
    }
}

/// Every rank removes what the points kept (files first, then each rank its directory, then
/// rank 0 the directory that held them).
fn cleanup(world: &World, plan: &DistPlan, keep: bool, left: &mut Leftovers) {
    if !keep && world.ending() {
        // The MPI job is ending without a lost rank: removing large files now could let
        // mpirun's SIGKILL come before rank 0 writes the Result, so the removal waits for it
        // (what the SIGKILL cuts short stays marked for the next run).
        let mut mine = std::mem::take(left);
        world.after_result(move || {
            mine.remove_own();
            mine.remove_shared();
        });
        return;
    }
    if keep {
        left.keep();
    } else {
        left.remove_own();
    }
    world.meet("removing the ranks' files", plan.timeout());
    left.remove_shared();
}

/// Rank 0's order on every rank.
fn share_order(world: &World, plan: &DistPlan, order: Option<&Order>) -> anyhow::Result<Order> {
    let bytes = match order {
        Some(o) => serde_json::to_vec(o)?,
        None => Vec::new(),
    };
    let got = world.broadcast("waiting for rank 0's next point", plan.timeout(), bytes);
    Ok(serde_json::from_slice(&got)?)
}

/// A servant: run rank 0's orders until the end. Its exit status is 0 (rank 0 reports the
/// points and carries the command's status) unless the loop itself broke.
fn serve(world: &World, plan: &DistPlan) -> anyhow::Result<i32> {
    let mut left = Leftovers::default();
    loop {
        match share_order(world, plan, None)? {
            Order::Run { spec, fresh } => {
                run_point(world, &spec, fresh, &mut left)?;
            }
            Order::Workload(ws) => {
                super::workload::run(world, &ws, None)?;
            }
            Order::Backup(spec) => {
                // Rank 0 reports the study's failures; this rank's are in its rows.
                let _ = super::backup::run(world, &spec, None);
            }
            Order::Replay(spec) => {
                super::replay::run(world, &spec)?;
            }
            Order::Mdtest(spec) => {
                super::mdtest::run(world, &spec)?;
            }
            Order::Find(spec) => {
                super::find::run(world, &spec)?;
            }
            Order::Cleanup { keep } => cleanup(world, plan, keep, &mut left),
            Order::End => return Ok(0),
        }
    }
}

/// Rank 0: the front end's executor.
struct Driver {
    world: World,
    plan: DistPlan,
    left: RefCell<Leftovers>,
}

impl Driver {
    fn order(&self, o: &Order) -> anyhow::Result<()> {
        share_order(&self.world, &self.plan, Some(o)).map(|_| ())
    }

    /// The Job as one distributed run (`loop_device`: every rank on a loop device of its own
    /// of that many bytes).
    fn run_spec(
        &self,
        job: &fsbench_core::job::Job,
        fresh: bool,
        observe: &fsbench_core::observe::Observe,
        loop_device: Option<u64>,
    ) -> anyhow::Result<RunResult> {
        // A Job the ranks cannot run is refused here, before any rank is asked to.
        let mut spec = self.plan.spec(job.clone(), self.world.size)?;
        spec.loop_device = loop_device;
        // --iostat and --trace go to every rank; the live display stays on rank 0.
        spec.observe = super::RankObserve::from_settings(observe);
        spec.watch = observe.watch.clone();
        self.order(&Order::Run {
            spec: Box::new(spec.clone()),
            fresh,
        })?;
        let ending = run_point(&self.world, &spec, fresh, &mut self.left.borrow_mut())?;
        result_of(ending)
    }
}

/// A Job on a block device, as rank 0 sees it: with `--file-per-rank` refused (each rank
/// would make a file of its own in DEVICE.d/rank-NNNNN, on the file system holding /dev); on
/// a shared device without `--size`, the whole device, as on one host.
fn on_block_device(
    job: &fsbench_core::job::Job,
    layout: Layout,
) -> anyhow::Result<std::borrow::Cow<'_, fsbench_core::job::Job>> {
    let Some(dev) = job
        .targets
        .iter()
        .find(|t| crate::safety::is_block_device(t))
    else {
        return Ok(std::borrow::Cow::Borrowed(job));
    };
    if layout == Layout::FilePerRank {
        crate::bail_usage!(
            "{} is a block device: --file-per-rank would give each rank a file of its own in {}/rank-NNNNN; add --shared-file (segmented or strided) to have every rank do its part of the device (one device per rank is not supported)",
            dev.display(),
            layout::parent_dir(dev).display()
        );
    }
    if job.file_size.is_some() {
        return Ok(std::borrow::Cow::Borrowed(job));
    }
    // Opened as the runner opens targets (a link is followed only with --force); a device
    // that cannot be opened here is left to the runner, which names the reason.
    let mut flags = libc::O_CLOEXEC | libc::O_NONBLOCK;
    if !job.force {
        flags |= libc::O_NOFOLLOW;
    }
    let size = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(dev)
        .ok()
        .and_then(|f| crate::runner::target::block_device_size(&f).ok());
    let mut whole = job.clone();
    whole.file_size = size;
    Ok(std::borrow::Cow::Owned(whole))
}

/// The point's Result on rank 0, or its refusal as an error naming the rank.
fn result_of(ending: Ending) -> anyhow::Result<RunResult> {
    match ending {
        Ending::Result(r) => Ok(*r),
        Ending::Refused {
            usage: true,
            message,
        } => Err(crate::usage!("{message}").into()),
        Ending::Refused { message, .. } => Err(anyhow::anyhow!("{message}")),
        Ending::Done(code) => Err(anyhow::anyhow!(
            "rank 0 ended a point without its result (status {code})"
        )),
    }
}

impl crate::exec::Ranks for Driver {
    fn run_job(
        &self,
        job: &fsbench_core::job::Job,
        fresh: bool,
        observe: &fsbench_core::observe::Observe,
    ) -> anyhow::Result<RunResult> {
        let job = on_block_device(job, self.plan.layout)?;
        self.run_spec(&job, fresh, observe, None)
    }

    fn run_job_on_loop_devices(
        &self,
        job: &fsbench_core::job::Job,
        fresh: bool,
        observe: &fsbench_core::observe::Observe,
        need: u64,
    ) -> anyhow::Result<RunResult> {
        let no = |why: &str| Err(NoRawDevice(why.into()).into());
        if self.plan.layout != Layout::FilePerRank {
            return no(
                "raw I/O on a shared file needs one block device that every rank opens: name it as the target (a LUN every host sees), or use --file-per-rank for a loop device on each rank",
            );
        }
        if self.plan.reorder {
            return no(
                "raw I/O with --reorder-ranks: each rank's loop device is its own, so no rank can read another's data; drop --reorder-ranks",
            );
        }
        if job.targets.len() != 1 {
            return no(
                "raw I/O on several files needs several block devices: fsbench makes one loop device per rank",
            );
        }
        self.run_spec(job, fresh, observe, Some(need))
    }

    fn run_workload(
        &self,
        src: &fsbench_core::workload::Source,
        // Each rank loads the workload itself (`super::workload::run`).
        _model: &fsbench_core::workload::model::Model,
        opts: &fsbench_core::workload::run::Options,
    ) -> anyhow::Result<RunResult> {
        let ws = WorkloadSpec::new(src, opts, &self.plan)?;
        self.order(&Order::Workload(Box::new(ws.clone())))?;
        result_of(super::workload::run(&self.world, &ws, Some(opts))?)
    }

    fn run_backup(
        &self,
        dir: &Path,
        plan: &fsbench_core::backup::BackupPlan,
        caches: &[fsbench_core::job::CachePolicy],
        sink: fsbench_core::backup::PhaseSink<'_>,
    ) -> anyhow::Result<()> {
        if self.plan.layout != Layout::FilePerRank {
            crate::bail_usage!(
                "the backup study builds a tree of its own on each rank: run it with --file-per-rank (the default), not --shared-file"
            );
        }
        let spec = BackupSpec {
            dir: dir.to_path_buf(),
            plan: plan.clone(),
            caches: caches.to_vec(),
            tag: std::process::id(),
            timeout_s: self.plan.timeout_s,
        };
        self.order(&Order::Backup(Box::new(spec.clone())))?;
        super::backup::run(&self.world, &spec, Some(sink))
    }

    fn run_replay(
        &self,
        trace: &Path,
        opts: &fsbench_core::replay::ReplayOptions,
        observe: &fsbench_core::observe::Observe,
    ) -> anyhow::Result<RunResult> {
        // What a replay on ranks cannot take is refused here, before any rank is asked to.
        let refuse = |flag: &str, why: &str| -> anyhow::Result<RunResult> {
            crate::bail_usage!("replay on MPI ranks does not take {flag}: {why}")
        };
        if self.plan.layout != Layout::FilePerRank {
            return refuse(
                "--shared-file",
                "each rank replays on scratch files of its own in DIR/rank-NNNNN; drop it",
            );
        }
        if self.plan.reorder {
            return refuse(
                "--reorder-ranks",
                "each rank replays the calls of its trace on its own files; drop it",
            );
        }
        // --iostat and --trace go to every rank; the live display stays on rank 0 (as a run's).
        let spec = ReplaySpec {
            trace: trace.to_path_buf(),
            opts: opts.clone(),
            timeout_s: self.plan.timeout_s,
            observe: super::RankObserve::from_settings(observe),
            stonewall: self.plan.stonewall,
            watch: observe.watch.clone(),
        };
        self.order(&Order::Replay(Box::new(spec.clone())))?;
        result_of(super::replay::run(&self.world, &spec)?)
    }

    fn run_mdtest(
        &self,
        plan: &fsbench_core::mdtest::Plan,
        argv: &[String],
    ) -> anyhow::Result<RunResult> {
        // What mdtest on ranks cannot do is refused here, before any rank is asked to.
        super::mdtest::check(plan)?;
        let spec = super::mdtest::MdtestSpec {
            opts: plan.opts.clone(),
            argv: argv.to_vec(),
            tag: std::process::id(),
            timeout_s: self.plan.timeout_s,
            within: None,
        };
        self.order(&Order::Mdtest(Box::new(spec.clone())))?;
        result_of(super::mdtest::run(&self.world, &spec)?)
    }

    fn run_job_spread(
        &self,
        job: &fsbench_core::job::Job,
        spread: &crate::exec::Spread,
    ) -> anyhow::Result<RunResult> {
        let plan = DistPlan {
            layout: if spread.shared_strided {
                Layout::SharedStrided
            } else {
                Layout::FilePerRank
            },
            reorder: spread.shift_reads,
            reorder_reads_only: true,
            stonewall: spread.stonewall_s.map(layout::Stonewall::Time),
            timeout_s: self.plan.timeout_s,
        };
        let spec = plan.spec(job.clone(), self.world.size)?;
        self.order(&Order::Run {
            spec: Box::new(spec.clone()),
            fresh: false,
        })?;
        let ending = run_point(&self.world, &spec, false, &mut self.left.borrow_mut())?;
        result_of(ending)
    }

    fn run_mdtest_within(
        &self,
        plan: &fsbench_core::mdtest::Plan,
        argv: &[String],
        within: &Path,
    ) -> anyhow::Result<RunResult> {
        super::mdtest::check(plan)?;
        let spec = super::mdtest::MdtestSpec {
            opts: plan.opts.clone(),
            argv: argv.to_vec(),
            tag: std::process::id(),
            timeout_s: self.plan.timeout_s,
            within: Some(within.to_path_buf()),
        };
        self.order(&Order::Mdtest(Box::new(spec.clone())))?;
        result_of(super::mdtest::run(&self.world, &spec)?)
    }

    fn run_find(
        &self,
        top: &Path,
        query: &crate::io500::find::Query,
    ) -> anyhow::Result<(RunResult, Vec<crate::result::Io500FindRank>)> {
        let spec = super::find::FindSpec {
            top: top.to_path_buf(),
            query: query.clone(),
            timeout_s: self.plan.timeout_s,
        };
        self.order(&Order::Find(Box::new(spec.clone())))?;
        let (ending, parts) = super::find::run(&self.world, &spec)?;
        Ok((result_of(ending)?, parts))
    }

    fn cleanup(&self, keep: bool) {
        if self.order(&Order::Cleanup { keep }).is_ok() {
            cleanup(&self.world, &self.plan, keep, &mut self.left.borrow_mut());
        }
    }

    fn size(&self) -> u32 {
        self.world.size
    }

    fn shared_file(&self) -> bool {
        self.plan.layout != Layout::FilePerRank
    }
}

/// Run a command on every rank: rank 0 checks the plan and runs `front` with the ranks'
/// executor (its status, errors already printed by `front`'s caller, is returned); the other
/// ranks serve its points. Every rank returns after rank 0 has printed and written its output.
pub fn drive(
    plan: impl FnOnce() -> Result<DistPlan, String>,
    front: impl FnOnce(Executor) -> i32,
) -> anyhow::Result<i32> {
    let world = World::init()?;
    let mine = if world.rank == 0 {
        plan()
    } else {
        Err(String::new())
    };
    let bytes = if world.rank == 0 {
        serde_json::to_vec(&mine)?
    } else {
        Vec::new()
    };
    let got = world.broadcast(
        "receiving the command from rank 0",
        super::SPEC_TIMEOUT,
        bytes,
    );
    let plan: Result<DistPlan, String> = serde_json::from_slice(&got)?;
    let end = |world: &World, code: i32| {
        // Rank 0's output is written: what the runs put off goes now.
        world.remove_put_off();
        world.meet("the end of the run", Duration::from_secs(600));
        let rank0 = world.rank == 0 && crate::runner::signal::interrupted();
        if rank0 || world.ending() {
            exit_signalled(world.rank, code);
        }
        code
    };
    let plan = match plan {
        Ok(p) => p,
        Err(msg) => {
            if world.rank == 0 {
                crate::runner::say(&format!("fsbench: {msg}"));
            }
            return Ok(end(&world, 2));
        }
    };
    if world.rank != 0 {
        let code = match serve(&world, &plan) {
            Ok(c) => c,
            // Once the job is ending without a lost rank, rank 0 names it; what this rank
            // could not read from rank 0 meanwhile is no error of its own.
            Err(_) if world.ending() => 1,
            Err(e) => {
                crate::runner::say(&format!(
                    "fsbench: error: rank {}: {}",
                    world.rank,
                    super::one_line(&e)
                ));
                1
            }
        };
        return Ok(end(&world, code));
    }
    let driver = Rc::new(Driver {
        world,
        plan,
        left: RefCell::new(Leftovers::default()),
    });
    let code = front(Executor::Ranks(driver.clone()));
    {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
    }
    // What the front end did not clean up stays (it keeps files only with --keep).
    driver.left.borrow_mut().forget();
    let _ = driver.order(&Order::End);
    Ok(end(&driver.world, code))
}

/// End rank 0 once signalled, or any rank once the job is ending without a lost rank, with
/// its status, after its output is written: mpirun SIGKILLs every rank one second after its
/// SIGTERM, and MPI_Finalize would wait for a runtime that is being torn down until then (the
/// rank would die by SIGKILL instead of ending with its status). Rank 0 ends at once, so its
/// status is the first mpirun hears; the other ranks wait for the SIGKILL (at most
/// [`SERVANT_LINGER`]): mpirun SIGKILLs every rank as soon as one ends, which could cut rank 0
/// short while it still writes the Result.
fn exit_signalled(rank: u32, code: i32) -> ! {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    if rank != 0 {
        std::thread::sleep(SERVANT_LINGER);
    }
    std::process::exit(code)
}

/// Longest a signalled rank other than rank 0 waits for mpirun to end it.
const SERVANT_LINGER: Duration = Duration::from_secs(3);
