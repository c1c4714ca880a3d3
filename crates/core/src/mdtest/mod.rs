//! mdtest's metadata benchmark (`fsbench mdtest`): a tree of directories, items (files or
//! directories) spread over it, and timed phases over the items: create, stat, read (files),
//! rename (directories), remove, and the tree's own creation and removal. Each phase is a
//! source the runner drives (`phase::Phase`, one step per item) through one [`Issuer`]
//! built before the first phase, so every metadata call goes through the engine and is
//! counted; each phase reports its rate, the latency of each item and the CPU per item.
//!
//! A run works on one rank's share ([`RankShare`]): its rank, the number of ranks and the
//! barrier between phases. On one host that is rank 0 of 1 and the barrier does nothing; an
//! executor that runs the phases on MPI ranks passes its own, and so does [`clones`], which
//! runs N ranks as threads of one process (fio's `numjobs` on a metadata engine).
//!
//! Safety: everything is made inside a top directory this run creates in the given
//! directory (`fsbench-mdtest-PID`, marked as fsbench's and as this run's, see
//! `crate::leftover`), which is removed at the end unless kept. A top directory a killed run
//! left is removed first; a name that exists and is not such a directory is refused.

pub mod clones;
pub mod phase;

use crate::error::UsageError;
use crate::result::{GroupReport, Kind, MdtestInfo, MdtestSummary, RunResult, RunStatus};
use crate::runner::issue::Issuer;
use crate::runner::pace::StepPacing;
use crate::runner::source::{self, Drive};
use crate::stats::{LatencyHist, Stats, StatsReport};
use crate::usage;
use anyhow::{anyhow, Context, Result};
use phase::{End, Op, Phase, Tree, Work};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Most directories one tree may have, and most items per rank: what is allocated before
/// the phases (a path per directory, an order per item) stays bounded.
pub(crate) const MAX_DIRS: u64 = 1_000_000;
pub const MAX_ITEMS: u64 = 100_000_000;
/// Most bytes written or read per file (one buffer of that size is allocated).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Prefix of the top directory a run makes (`fsbench-mdtest-PID`).
pub const TOP_PREFIX: &str = "fsbench-mdtest-";

/// mdtest's options as given (before the tree's size is worked out).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// `-n`: items per rank.
    pub items: Option<u64>,
    /// `-I`: items per directory.
    pub items_per_dir: Option<u64>,
    /// `-z`, `-b`.
    pub depth: u32,
    pub branching: u32,
    /// `-u`: a tree per rank.
    pub unique_dir: bool,
    /// `-d`: the directories (`@`-separated); rank r works in the r-th (modulo their number).
    pub dirs: Vec<PathBuf>,
    /// `-F` and `-D` (neither: both).
    pub files_only: bool,
    pub dirs_only: bool,
    /// `-C`, `-T`, `-E`, `-r`, `-U` (none: all).
    pub create: bool,
    pub stat: bool,
    pub read: bool,
    pub remove: bool,
    pub rename: bool,
    /// `-w`, `-e`, `-y`.
    pub write_bytes: u64,
    pub read_bytes: u64,
    pub sync: bool,
    /// `-L`: items only in the leaf directories.
    pub leaf_only: bool,
    /// `-N`: stat, read and remove the items of the rank this many places on.
    pub stride: u32,
    /// `-i`.
    pub iterations: u32,
    /// `-W`: a create phase stops after this many seconds (0: never).
    pub stonewall_s: u64,
    /// `-R`, and `--random-seed`.
    pub random: bool,
    pub random_seed: Option<u64>,
    /// `-G`: seed of the bytes written.
    pub data_seed: Option<u64>,
    /// `--keep`: leave what the run made.
    pub keep: bool,
    /// The tree's creation and removal are done untimed even when create or remove is
    /// measured (fio's metadata engines time the items alone).
    #[serde(default)]
    pub tree_untimed: bool,
    /// The tree and its items are the caller's: made by an earlier run in the same
    /// directory, and the tree removed with that directory by the caller (a command that
    /// runs the phases one at a time on the same items), so this run makes neither and
    /// removes no tree.
    #[serde(default)]
    pub callers_items: bool,
}

/// A rank's share of the run: which rank, of how many, and the barrier every rank passes
/// before and after each phase.
pub struct RankShare<'a> {
    pub rank: u32,
    pub ranks: u32,
    pub barrier: &'a dyn Fn(),
    /// Where the ranks agree on a count at the end of each phase (a stonewalled creation's
    /// items, `-W` with `-N`); None: nothing is agreed (one host).
    pub agreed: Option<&'a Agreed>,
}

/// The least of a count every rank offers before a phase's end barrier, there after it: the
/// executor of the ranks reads every rank's offer at the barrier and stores the least.
#[derive(Debug, Default)]
pub struct Agreed {
    offered: std::sync::atomic::AtomicU64,
    least: std::sync::atomic::AtomicU64,
}

impl Agreed {
    /// This rank's count, before the end barrier.
    pub(crate) fn offer(&self, n: u64) {
        self.offered.store(n, std::sync::atomic::Ordering::Release);
    }

    /// What this rank offered (the executor, at the barrier).
    pub fn offered(&self) -> u64 {
        self.offered.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Every rank's least offer (the executor, at the barrier).
    pub fn settle(&self, least: u64) {
        self.least
            .store(least, std::sync::atomic::Ordering::Release);
    }

    /// The least of every rank's offer, after the end barrier.
    pub(crate) fn least(&self) -> u64 {
        self.least.load(std::sync::atomic::Ordering::Acquire)
    }
}

impl RankShare<'_> {
    /// The one rank of a run on this host.
    pub fn one_host() -> RankShare<'static> {
        RankShare {
            rank: 0,
            ranks: 1,
            barrier: &|| {},
            agreed: None,
        }
    }
}

/// The options checked and the tree worked out: what every iteration does.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub opts: Options,
    pub dirs_in_tree: u64,
    pub items_per_dir: u64,
    pub items: u64,
    /// The number of the first item (after the inner directories' with `-L`).
    pub first_item: u64,
    pub do_files: bool,
    pub do_dirs: bool,
}

/// b^e, None past u64.
fn pow(b: u64, e: u32) -> Option<u64> {
    b.checked_pow(e)
}

impl Options {
    /// Check the options against each other and against `ranks`, and work out the tree.
    pub fn plan(mut self, ranks: u32) -> Result<Plan, UsageError> {
        if self.iterations == 0 {
            return Err(usage!("-i 0: at least one iteration is needed"));
        }
        if self.depth > 0 && self.branching == 0 {
            return Err(usage!(
                "-z {} with -b 0: a tree deeper than its root needs a branching factor of 1 or more",
                self.depth
            ));
        }
        let b = self.branching as u64;
        let dirs = if self.depth == 0 || b == 0 {
            Some(1)
        } else if b == 1 {
            Some(self.depth as u64 + 1)
        } else {
            pow(b, self.depth + 1).map(|p| (p - 1) / (b - 1))
        };
        let dirs = dirs.filter(|&d| d <= MAX_DIRS).ok_or_else(|| {
            usage!(
                "-z {} -b {}: the tree would have more than {MAX_DIRS} directories",
                self.depth,
                self.branching
            )
        })?;
        let leaves = if self.depth == 0 {
            1
        } else {
            pow(b, self.depth).unwrap_or(dirs)
        };
        // The directories that hold items.
        let holders = if self.leaf_only { leaves } else { dirs };
        let (per_dir, items) = match (self.items, self.items_per_dir) {
            (None, None) => {
                return Err(usage!(
                    "no amount of work: give -n N (items per rank) or -I N (items per directory)"
                ))
            }
            (_, Some(0)) => return Err(usage!("-I 0: give at least one item per directory")),
            (Some(n), Some(per)) => {
                if self.unique_dir {
                    return Err(usage!(
                        "-n and -I together with -u: give only the number of items (-n) or the items per directory (-I)"
                    ));
                }
                if n % per != 0 || n / per != holders {
                    return Err(usage!(
                        "-n {n} and -I {per} disagree: the tree has {holders} directories for items, so -n must be {} (or give only one of them)",
                        per.saturating_mul(holders)
                    ));
                }
                (per, n)
            }
            (None, Some(per)) => (per, per.saturating_mul(holders)),
            (Some(n), None) => {
                let per = n / holders;
                if per == 0 {
                    return Err(usage!(
                        "-n {n} is fewer items than the {holders} directories that hold them: give at least {holders}"
                    ));
                }
                (per, per * holders)
            }
        };
        if items > MAX_ITEMS {
            return Err(usage!(
                "{items} items per rank: at most {MAX_ITEMS} are supported"
            ));
        }
        for (flag, v) in [("-w", self.write_bytes), ("-e", self.read_bytes)] {
            if v > MAX_FILE_BYTES {
                return Err(usage!(
                    "{flag} {v}: at most {MAX_FILE_BYTES} bytes per file are supported"
                ));
            }
        }
        if !(self.create || self.stat || self.read || self.remove || self.rename) {
            self.create = true;
            self.stat = true;
            self.read = true;
            self.remove = true;
            self.rename = true;
        }
        let (do_files, do_dirs) = match (self.files_only, self.dirs_only) {
            (false, false) | (true, true) => (true, true),
            (f, d) => (f, d),
        };
        // Every file this run reads, it made (timed or not) with `-w` bytes.
        if do_files && self.read && self.read_bytes > self.write_bytes {
            return Err(usage!(
                "-e {} is more than -w {}: a file cannot be read past the bytes written to it",
                self.read_bytes,
                self.write_bytes
            ));
        }
        if self.stonewall_s > 0 && self.branching > 1 {
            return Err(usage!(
                "-W with -b {}: the stonewall works with a branching factor of 1 or less (as in mdtest)",
                self.branching
            ));
        }
        if self.stride > 0 && ranks < 2 {
            return Err(usage!(
                "-N {}: shifting work between ranks needs several ranks, and this run has one (run without -N)",
                self.stride
            ));
        }
        if self.dirs.is_empty() {
            self.dirs.push(PathBuf::from("."));
        }
        if self.dirs.len() as u64 > ranks as u64 {
            return Err(usage!(
                "-d names {} directories for {ranks} rank(s): give at most one directory per rank",
                self.dirs.len()
            ));
        }
        if self.dirs.len() > 1 && !self.unique_dir {
            return Err(usage!(
                "several -d directories need -u (a tree per rank), as in mdtest"
            ));
        }
        let first_item = if self.leaf_only {
            per_dir * (dirs - leaves)
        } else {
            0
        };
        Ok(Plan {
            opts: self,
            dirs_in_tree: dirs,
            items_per_dir: per_dir,
            items,
            first_item,
            do_files,
            do_dirs,
        })
    }
}

/// One phase of one iteration as it was measured (on several ranks: this rank's part).
pub struct Measured {
    pub op: Op,
    pub iteration: u32,
    pub stats: Stats,
    /// The stonewall stopped it after this many of its items.
    pub stonewalled: Option<u64>,
    /// The rank whose items (and with `-u` whose tree) it worked on: the one its paths
    /// named (`-N` shifts it).
    pub of_rank: u32,
}

/// What a phase of an iteration is for: measured (reported), or set-up and clean-up work
/// that is not (the items a stat-only run needs, the removal nobody asked to time).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Timing {
    Measured,
    Untimed,
}

/// The top directory this run made: removed (with all in it) when dropped, unless kept.
/// (io500's run directory is one too.)
pub struct TopDir {
    pub(crate) path: PathBuf,
    pub(crate) keep: bool,
}

impl Drop for TopDir {
    fn drop(&mut self) {
        if self.keep {
            crate::leftover::clear_run_of(&self.path);
        } else {
            // Made new by this run, and only it writes in it (remove_dir_all follows no
            // links).
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

pub fn open_dir(path: &Path) -> std::io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    Ok(f.into())
}

/// The state of one rank's run across its phases.
struct Runner<'a> {
    plan: &'a Plan,
    share: &'a RankShare<'a>,
    io: Issuer,
    measured: Vec<Measured>,
    failure: Option<String>,
    interrupted: bool,
    notes: Vec<String>,
    /// The items every rank made in this iteration's creation, when the stonewall stopped it
    /// on some rank and the ranks agreed on it ([`RankShare::agreed`]).
    agreed_items: Option<u64>,
}

impl Runner<'_> {
    fn rank_of(&self, op: Op) -> u32 {
        // After an agreed stonewall each rank removes all its own items (the ranks made
        // different numbers, so no rank knows another's).
        if self.agreed_items.is_some() && matches!(op, Op::FileRemove | Op::DirRemove) {
            return self.share.rank;
        }
        shifted_rank(self.share, self.plan.opts.stride, op)
    }

    /// The tree phase `op` works in.
    fn tree_for(&self, op: Op) -> Tree {
        let base = if self.plan.opts.unique_dir {
            format!("mdtest_tree.{}", self.rank_of(op))
        } else {
            "mdtest_tree".to_string()
        };
        Tree::new(&base, self.plan.dirs_in_tree, self.plan.opts.branching)
    }

    /// Run one phase over `count` items (or tree directories) in the test directory `base`:
    /// how many it did. A failure or an interruption is kept and ends the run.
    fn phase(&mut self, op: Op, iteration: u32, base: &OwnedFd, count: u64, timing: Timing) -> u64 {
        if self.failure.is_some() || self.interrupted {
            return 0;
        }
        let plan = self.plan;
        let tree = self.tree_for(op);
        let kind = if matches!(
            op,
            Op::FileCreate | Op::FileStat | Op::FileRead | Op::FileRemove
        ) {
            "file"
        } else {
            "dir"
        };
        let of_rank = self.rank_of(op);
        let prefix = format!("{kind}.mdtest.{of_rank}.").into_bytes();
        // `-R`: the stat and read phases visit the items in a seeded random order.
        let order = (plan.opts.random && matches!(op, Op::DirStat | Op::FileStat | Op::FileRead))
            .then(|| shuffled(count, self.random_seed()));
        let stonewall = (timing == Timing::Measured
            && plan.opts.stonewall_s > 0
            && matches!(op, Op::DirCreate | Op::FileCreate))
        .then(|| Duration::from_secs(plan.opts.stonewall_s));
        let mut src = Phase::new(Work {
            op,
            tree: &tree,
            base: base.as_raw_fd(),
            prefix: &prefix,
            per_dir: plan.items_per_dir,
            first: plan.first_item,
            count,
            order: order.as_deref(),
            write_len: plan.opts.write_bytes as u32,
            read_len: plan.opts.read_bytes as u32,
            sync: plan.opts.sync,
        });
        let stop = crate::runner::signal::interrupted;
        let no_gate = || {};
        // Measured phases start and end at the ranks' barrier, as mdtest's do; on several
        // ranks the untimed ones too, so no rank works on a tree or items another has not
        // made yet, or removes what another still works on.
        let gated = timing == Timing::Measured || self.share.ranks > 1;
        let how = Drive {
            gate: if gated { self.share.barrier } else { &no_gate },
            stop: &stop,
            deadline: stonewall,
            ramp: None,
            ramp_bytes: 0,
            pacing: StepPacing::default(),
            interval_ns: None,
        };
        self.io.forget_counts();
        let cpu0 = crate::stats::cpu::thread_cpu_ns();
        let ran = source::drive(&mut src, &mut self.io, how);
        let cpu_ns = crate::stats::cpu::thread_cpu_ns().saturating_sub(cpu0);
        let done = src.done();
        if let (true, Some(a)) = (gated, self.share.agreed) {
            a.offer(done);
        }
        if gated {
            (self.share.barrier)();
        }
        // A creation the stonewall stopped on some rank: the later phases of the iteration
        // work on the items every rank made, the least any rank did (mdtest's rule with -N).
        if let (Some(_), Some(a)) = (stonewall, self.share.agreed) {
            let least = a.least();
            if least < count {
                self.agreed_items = Some(least);
            }
        }
        let mut stats = std::mem::take(&mut src.stats);
        // The thread's CPU clock over the phase: every item's CPU, to the nanosecond.
        ran.settle(&mut stats, &self.io, cpu_ns);
        match ran.end {
            End::Done => {}
            End::Stopped if crate::runner::signal::interrupted() => self.interrupted = true,
            End::Stopped => {}
            End::Failed(e) => self.failure = Some(e),
        }
        if timing == Timing::Measured {
            let stonewalled =
                (stonewall.is_some() && done < count && !self.interrupted).then_some(done);
            self.measured.push(Measured {
                op,
                iteration,
                stats,
                stonewalled,
                of_rank,
            });
        }
        done
    }

    fn random_seed(&self) -> u64 {
        self.plan.opts.random_seed.unwrap_or(0) + self.share.rank as u64
    }

    /// One iteration in the test directory `test-dir.I-0` of `top`.
    fn iteration(&mut self, top: &OwnedFd, i: u32) -> Result<()> {
        self.agreed_items = None;
        let plan = self.plan;
        let o = &plan.opts;
        let name = std::ffi::CString::new(format!("test-dir.{i}-0")).expect("no NUL");
        let ranks = self.share.ranks > 1;
        match self.io.mkdir_at(top.as_raw_fd(), &name, 0o755) {
            // On several ranks the first rank there makes it (the top directory is new).
            Err(e) if ranks && e.kind() == std::io::ErrorKind::AlreadyExists => {}
            r => r.with_context(|| format!("creating test-dir.{i}-0"))?,
        }
        let base = {
            let fd = self
                .io
                .open_at(
                    top.as_raw_fd(),
                    &name,
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                    0,
                )
                .with_context(|| format!("opening test-dir.{i}-0"))?;
            // SAFETY: a descriptor the open just returned, owned from here on.
            unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) }
        };
        let timed = |on: bool| {
            if on {
                Timing::Measured
            } else {
                Timing::Untimed
            }
        };
        // The ranks' shared tree (no -u) is made and removed by rank 0 alone, as mdtest does.
        let dirs = if o.unique_dir || self.share.rank == 0 {
            plan.dirs_in_tree
        } else {
            0
        };
        let dirs = if o.callers_items { 0 } else { dirs };
        self.phase(
            Op::TreeCreate,
            i,
            &base,
            dirs,
            timed(o.create && !o.tree_untimed),
        );
        // Removal: measured when asked for, else done untimed unless the user keeps it all.
        let clean = o.remove || !o.keep;
        // The caller's items are there: each rank passes the creation's barriers only.
        let to_make = if o.callers_items { 0 } else { plan.items };
        let made_or_there = |made: u64| if o.callers_items { plan.items } else { made };
        if plan.do_dirs {
            let made = self.phase(Op::DirCreate, i, &base, to_make, timed(o.create));
            let made = made_or_there(made);
            if o.stat {
                self.phase(Op::DirStat, i, &base, made, Timing::Measured);
            }
            // On several ranks every rank passes every phase's barriers, with nothing to do.
            if o.rename && (made > 1 || ranks) {
                let chain = if made > 1 { made } else { 0 };
                self.phase(Op::DirRename, i, &base, chain, Timing::Measured);
            }
            if clean {
                self.phase(Op::DirRemove, i, &base, made, timed(o.remove));
            }
        }
        if plan.do_files {
            let made = self.phase(Op::FileCreate, i, &base, to_make, timed(o.create));
            let made = made_or_there(made);
            let every = self.agreed_items.unwrap_or(made);
            if o.stat {
                self.phase(Op::FileStat, i, &base, every, Timing::Measured);
            }
            if o.read {
                self.phase(Op::FileRead, i, &base, every, Timing::Measured);
            }
            if clean {
                self.phase(Op::FileRemove, i, &base, made, timed(o.remove));
            }
        }
        if clean {
            self.phase(
                Op::TreeRemove,
                i,
                &base,
                dirs,
                timed(o.remove && !o.tree_untimed),
            );
            if self.failure.is_none() && !self.interrupted && !o.callers_items {
                drop(base);
                match self.io.unlink_at(top.as_raw_fd(), &name, true) {
                    // On several ranks the last rank out removes it; the top directory's
                    // removal takes what is left.
                    Err(e)
                        if ranks
                            && matches!(
                                e.raw_os_error(),
                                Some(libc::ENOENT) | Some(libc::ENOTEMPTY) | Some(libc::EEXIST)
                            ) => {}
                    r => r.with_context(|| format!("removing test-dir.{i}-0"))?,
                }
            }
        }
        Ok(())
    }
}

/// The rank whose items (and, with `-u`, whose tree) phase `op` of `share` works on:
/// mdtest's `-N` shift (stat and rename 1, read 2, remove 3 places on).
fn shifted_rank(share: &RankShare<'_>, stride: u32, op: Op) -> u32 {
    let shift = match op {
        Op::DirStat | Op::FileStat | Op::DirRename => 1,
        Op::FileRead => 2,
        Op::DirRemove | Op::FileRemove => 3,
        _ => 0,
    };
    let n = share.ranks.max(1) as u64;
    ((share.rank as u64 + shift * stride as u64) % n) as u32
}

/// A permutation of 0..n from `seed` (Fisher-Yates).
fn shuffled(n: u64, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    let mut rng = crate::runner::opgen::Rng::new(seed);
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

/// Check the directory the run works in and make its top directory there: removed when
/// the returned guard is dropped, unless kept. Notes say what a killed run left and this
/// run removed.
fn make_top(dir: &Path, keep: bool, notes: &mut Vec<String>) -> Result<TopDir> {
    remove_dead_tops(dir, TOP_PREFIX, "-d ", notes)?;
    // One process can run several mdtest runs in one directory (a fio job file's metadata
    // jobs), and an earlier one may have kept its top: the next takes the next free name.
    let pid = std::process::id();
    for n in 0..MAX_TOPS_PER_PROCESS {
        let name = match n {
            0 => format!("{TOP_PREFIX}{pid}"),
            _ => format!("{TOP_PREFIX}{pid}-{n}"),
        };
        let path = dir.join(name);
        match crate::leftover::make_marked_dir(&path) {
            Ok(()) => return Ok(TopDir { path, keep }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(anyhow!("creating {}: {e}", path.display())),
        }
    }
    Err(usage!(
        "{}: {MAX_TOPS_PER_PROCESS} {TOP_PREFIX}{pid}* directories exist already: remove them or use another -d",
        dir.display()
    )
    .into())
}

/// How many top directories one process tries in one directory before giving up.
const MAX_TOPS_PER_PROCESS: u32 = 1000;

/// Check that `dir` (given by the user's `flag`) is a directory and remove the top
/// directories (named `prefix` and a tag) killed runs left in it.
pub(crate) fn remove_dead_tops(
    dir: &Path,
    prefix: &str,
    flag: &str,
    notes: &mut Vec<String>,
) -> Result<()> {
    let m = std::fs::metadata(dir).map_err(|e| anyhow!(usage!("{flag}{}: {e}", dir.display())))?;
    if !m.is_dir() {
        return Err(usage!("{flag}{}: not a directory", dir.display()).into());
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(prefix))
            {
                notes.extend(crate::leftover::remove_dir_of_dead_run(&e.path()));
            }
        }
    }
    Ok(())
}

/// Make the top directory `path`, marked as fsbench's and as this run's; `instead` says
/// what else the user can give when the name is taken.
pub(crate) fn make_marked_top(path: &Path, instead: &str) -> Result<()> {
    match crate::leftover::make_marked_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(usage!(
            "{} exists and is not a directory this run made: remove it or use {instead}",
            path.display()
        )
        .into()),
        Err(e) => Err(anyhow!("creating {}: {e}", path.display())),
    }
}

/// Refuse a plan the file system holding `dir` has no room for: its files' blocks and the
/// inodes of one iteration (each iteration removes what it made before the next), checked
/// before anything is created.
fn check_room(plan: &Plan, dir: &Path) -> Result<(), UsageError> {
    let Ok(st) = rustix::fs::statvfs(dir) else {
        return Ok(());
    };
    let o = &plan.opts;
    let block = st.f_frsize.max(512);
    if plan.do_files && o.write_bytes > 0 {
        let per_file = o.write_bytes.div_ceil(block).saturating_mul(block);
        let need = per_file.saturating_mul(plan.items);
        let free = st.f_bavail.saturating_mul(st.f_frsize);
        if need > free {
            return Err(usage!(
                "{} files of -w {} bytes need {need} bytes, and {} has {free} free: give fewer items or fewer bytes",
                plan.items,
                o.write_bytes,
                dir.display()
            ));
        }
    }
    // Some file systems report no inode limit (0 in all fields): nothing to check there.
    let items = plan.items * (plan.do_files as u64 + plan.do_dirs as u64);
    let inodes = items.saturating_add(plan.dirs_in_tree + 2);
    if st.f_files > 0 && inodes > st.f_favail {
        return Err(usage!(
            "{inodes} files and directories are needed, and {} has {} free inodes: give fewer items",
            dir.display(),
            st.f_favail
        ));
    }
    Ok(())
}

/// Run the plan's iterations as `share` of the run; the Result (kind `mdtest`).
pub fn run(plan: &Plan, share: &RankShare<'_>, argv: &[String]) -> Result<RunResult> {
    let o = &plan.opts;
    let dir = rank_dir(plan, share.rank);
    let mut notes = Vec::new();
    if dir.is_dir() {
        check_room(plan, dir)?;
    }
    let top = make_top(dir, o.keep, &mut notes)?;
    let (result, _) = run_in(plan, share, argv, &top.path, notes)?;
    drop(top);
    Ok(result)
}

/// This rank's directory: the `-d` directory it works in (rank r the r-th, modulo their
/// number).
pub fn rank_dir(plan: &Plan, rank: u32) -> &Path {
    &plan.opts.dirs[rank as usize % plan.opts.dirs.len()]
}

/// Check `dir` (a `-d` directory) and its room for the plan, and remove the top directories
/// killed runs left there: notes say which. For an executor that makes the top directory
/// every rank shares itself ([`make_shared_top`]).
pub fn prepare_dir(plan: &Plan, dir: &Path) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    if dir.is_dir() {
        check_room(plan, dir)?;
    }
    remove_dead_tops(dir, TOP_PREFIX, "-d ", &mut notes)?;
    Ok(notes)
}

/// Make the top directory `dir/fsbench-mdtest-TAG` the ranks share (TAG: the process id of
/// the rank that makes it), marked as this run's; it is removed by the caller.
pub fn make_shared_top(dir: &Path, tag: u32) -> Result<PathBuf> {
    let path = dir.join(format!("{TOP_PREFIX}{tag}"));
    make_marked_top(&path, "another -d")?;
    Ok(path)
}

/// Run the plan's iterations as `share` of the run in the top directory `top`, which the
/// caller made (and removes); the Result (kind `mdtest`) and each measured phase.
pub fn run_in(
    plan: &Plan,
    share: &RankShare<'_>,
    argv: &[String],
    top: &Path,
    notes: Vec<String>,
) -> Result<(RunResult, Vec<Measured>)> {
    let o = &plan.opts;
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let top_fd = open_dir(top).with_context(|| format!("opening {}", top.display()))?;
    let len = o.write_bytes.max(o.read_bytes).max(1) as usize;
    let seed = o.data_seed.unwrap_or(0x6d64_7465_7374);
    let engine = Issuer::sync_engine(1, 1, len, seed)?;
    crate::runner::signal::install();
    let mut r = Runner {
        plan,
        share,
        io: Issuer::new(engine, 1, None),
        measured: Vec::new(),
        failure: None,
        interrupted: false,
        notes,
        agreed_items: None,
    };
    for i in 0..o.iterations {
        if let Err(e) = r.iteration(&top_fd, i) {
            r.failure.get_or_insert(format!("{e:#}"));
        }
        if r.failure.is_some() || r.interrupted {
            break;
        }
    }
    drop(top_fd);
    if o.keep {
        r.notes.push(format!("kept {} (--keep)", top.display()));
    }
    let result = result_of(&r, top, argv, started_unix_s);
    Ok((result, r.measured))
}

/// Sample standard deviation (n - 1), 0 for fewer than two values.
pub fn stddev(v: &[f64], mean: f64) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

/// A run's notes, and its status from how it ended: failed (the failure named at `top`),
/// interrupted (partial) or complete. (io500's Result ends the same way.)
pub(crate) fn settle(
    res: &mut RunResult,
    notes: &[String],
    failure: Option<&str>,
    interrupted: bool,
    top: &Path,
) {
    res.notes.extend(notes.iter().cloned());
    if let Some(f) = failure {
        res.status = RunStatus::Failed;
        res.failures.push(crate::result::IoFailure {
            user: 0,
            thread: 0,
            path: top.display().to_string(),
            offset: None,
            message: f.to_string(),
        });
    } else if interrupted {
        res.status = RunStatus::Partial;
    }
}

fn result_of(r: &Runner<'_>, top: &Path, argv: &[String], started_unix_s: f64) -> RunResult {
    let mut res = result_of_measured(
        r.plan,
        (r.share.rank, r.share.ranks),
        &r.measured,
        top,
        argv,
        started_unix_s,
    );
    settle(&mut res, &r.notes, r.failure.as_deref(), r.interrupted, top);
    res
}

/// The Result of the `measured` phases of a run of `plan` in the top directory `top`, as
/// rank `rank` of `ranks` (a merge of every rank's phases: rank 0); its failures and notes
/// beside the phases' are the caller's.
pub fn result_of_measured(
    plan: &Plan,
    (rank, ranks): (u32, u32),
    measured: &[Measured],
    top: &Path,
    argv: &[String],
    started_unix_s: f64,
) -> RunResult {
    let o = &plan.opts;
    let mut res = RunResult::new(
        Kind::Mdtest,
        "mdtest",
        started_unix_s,
        crate::probe::env::collect(&[top.parent().unwrap_or(top)]),
    );
    let mut total = Stats::default();
    let mut elapsed = 0.0;
    for m in measured {
        total += &m.stats;
        elapsed += m.stats.elapsed_s;
        res.groups.push(GroupReport {
            name: m.op.name().to_string(),
            op: m.op.key().to_string(),
            run: Some(m.iteration + 1),
            stats: StatsReport::from_stats(&m.stats, false),
        });
        if let Some(done) = m.stonewalled {
            res.notes.push(format!(
                "{} stopped by the stonewall (-W {}) after {done} of {} items in iteration {}; the later phases of that iteration work on those {done}",
                m.op.name(),
                o.stonewall_s,
                plan.items * ranks.max(1) as u64,
                m.iteration + 1
            ));
        }
    }
    total.elapsed_s = elapsed;
    res.total = StatsReport::from_stats(&total, true);
    let mut summary = Vec::new();
    for op in Op::SUMMARY_ORDER {
        let runs: Vec<&Measured> = measured.iter().filter(|m| m.op == op).collect();
        if runs.is_empty() {
            continue;
        }
        let rates: Vec<f64> = runs
            .iter()
            .map(|m| {
                if m.stats.elapsed_s > 0.0 {
                    m.stats.ops() as f64 / m.stats.elapsed_s
                } else {
                    0.0
                }
            })
            .collect();
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        let mut all = Stats::default();
        let mut lat = LatencyHist::default();
        for m in &runs {
            all += &m.stats;
            lat.merge(&m.stats.other_lat);
        }
        summary.push(MdtestSummary {
            phase: op.name().to_string(),
            op: op.key().to_string(),
            max: rates.iter().cloned().fold(f64::MIN, f64::max),
            min: rates.iter().cloned().fold(f64::MAX, f64::min),
            mean,
            stddev: stddev(&rates, mean),
            ops: all.ops(),
            stonewalled: runs.iter().filter(|m| m.stonewalled.is_some()).count() as u32,
            lat_ns: lat.summary(),
            cpu_us_per_op: if all.cpu_sampled_ops > 0 {
                all.cpu_sampled_ns as f64 / all.cpu_sampled_ops as f64 / 1e3
            } else {
                0.0
            },
        });
    }
    res.mdtest = Some(MdtestInfo {
        argv: argv.to_vec(),
        dir: top.parent().unwrap_or(top).display().to_string(),
        ranks,
        rank,
        iterations: o.iterations,
        depth: o.depth,
        branching: o.branching,
        dirs_in_tree: plan.dirs_in_tree,
        items_per_dir: plan.items_per_dir,
        items: plan.items,
        leaf_only: o.leaf_only,
        unique_dir: o.unique_dir,
        write_bytes: o.write_bytes,
        read_bytes: o.read_bytes,
        sync_after_write: o.sync,
        stonewall_s: (o.stonewall_s > 0).then_some(o.stonewall_s as f64),
        random_seed: o.random.then(|| o.random_seed.unwrap_or(0)),
        summary,
        rank_phases: Vec::new(),
    });
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(n: Option<u64>, per: Option<u64>, z: u32, b: u32) -> Options {
        Options {
            items: n,
            items_per_dir: per,
            depth: z,
            branching: b,
            iterations: 1,
            ..Default::default()
        }
    }

    #[test]
    fn the_tree_and_items_are_sized_as_mdtest_sizes_them() {
        let p = opts(Some(100), None, 2, 3).plan(1).unwrap();
        assert_eq!(p.dirs_in_tree, 13);
        assert_eq!((p.items_per_dir, p.items), (7, 91));
        let p = opts(None, Some(5), 2, 3).plan(1).unwrap();
        assert_eq!(p.items, 65);
        let mut leaf = opts(None, Some(5), 2, 3);
        leaf.leaf_only = true;
        let p = leaf.plan(1).unwrap();
        assert_eq!((p.items, p.first_item), (45, 20));
        let p = opts(Some(10), None, 3, 1).plan(1).unwrap();
        assert_eq!((p.dirs_in_tree, p.items), (4, 8));
    }

    #[test]
    fn inconsistent_options_are_refused() {
        for (o, want) in [
            (opts(Some(100), Some(7), 0, 0), "disagree"),
            (opts(None, None, 0, 0), "give -n N"),
            (opts(Some(5), None, 2, 0), "branching"),
            (opts(Some(5), None, 2, 3), "fewer items"),
            (opts(Some(5), None, 40, 40), "more than"),
        ] {
            let e = o.plan(1).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        let mut two = opts(Some(5), None, 0, 0);
        two.dirs = vec!["a".into(), "b".into()];
        two.unique_dir = true;
        assert!(two
            .plan(1)
            .unwrap_err()
            .to_string()
            .contains("2 directories"));
    }

    #[test]
    fn the_stride_shifts_stat_read_and_remove_to_other_ranks() {
        let share = RankShare {
            rank: 1,
            ranks: 4,
            barrier: &|| {},
            agreed: None,
        };
        assert_eq!(shifted_rank(&share, 1, Op::FileCreate), 1);
        assert_eq!(shifted_rank(&share, 1, Op::FileStat), 2);
        assert_eq!(shifted_rank(&share, 1, Op::FileRead), 3);
        assert_eq!(shifted_rank(&share, 1, Op::FileRemove), 0);
        assert_eq!(shifted_rank(&share, 0, Op::FileRemove), 1);
        assert_eq!(shifted_rank(&RankShare::one_host(), 3, Op::FileRead), 0);
    }

    #[test]
    fn the_random_order_is_a_permutation() {
        let mut v = shuffled(1000, 7);
        assert_ne!(v, (0..1000).collect::<Vec<u64>>());
        v.sort();
        assert_eq!(v, (0..1000).collect::<Vec<u64>>());
    }
}
