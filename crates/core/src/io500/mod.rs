//! IO500 (`fsbench io500`): its twelve phases in its order, each measured the way the rest of
//! fsbench measures, and its score, on one host or on MPI ranks (`ranks`: each phase one
//! distributed run of the ior or mdtest kind). The ior phases are Jobs run by the executor
//! (ior-easy: a file of 2 MiB transfers; ior-hard: 47,008-byte transfers), the mdtest phases
//! are mdtest's phase sources (`md`), and find is a walk of the run's directory ([`find`]);
//! the runner drives every one of them.
//!
//! Stonewalling as IO500 does it: each write phase runs for the stonewall (or until its
//! configured amount is done), and the read, stat and delete phases after it work on exactly
//! what it wrote. Score: the geometric mean of the four ior bandwidths (GiB/s) and of the
//! eight metadata and find rates (kIOPS), and the square root of their product.
//!
//! Safety: everything is made inside a directory this run creates in the given directory
//! (`fsbench-io500-PID`, marked as fsbench's and as this run's, see `crate::leftover`),
//! removed at the end unless kept; one a killed run left is removed by the next run.

pub mod config;
pub mod find;
mod md;
mod ranks;

use crate::mdtest::phase::Op;
use crate::result::{Explanation, GroupReport, Io500Info, Io500Phase, Kind, RunResult, RunStatus};
use crate::runner::issue::Issuer;
use crate::stats::{Stats, StatsReport};
use crate::usage;
use anyhow::{Context, Result};
use config::{Config, IOR_HARD_TRANSFER, MDTEST_HARD_BYTES};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Prefix of the directory a run makes (`fsbench-io500-PID`).
pub(crate) const TOP_PREFIX: &str = "fsbench-io500-";

/// Share of the free space of the directory each ior file may take at most.
const IOR_SHARE_OF_FREE: u64 = 5;

/// What the run was asked to do.
pub struct Options {
    pub config: Config,
    pub dir: PathBuf,
    pub keep: bool,
}

use crate::mdtest::open_dir;
pub(crate) use crate::mdtest::TopDir;

/// Check `dir`, remove what killed runs left there, and make this run's directory.
fn make_top(dir: &Path, keep: bool, notes: &mut Vec<String>) -> Result<TopDir> {
    crate::mdtest::remove_dead_tops(dir, TOP_PREFIX, "", notes)?;
    let path = dir.join(format!("{TOP_PREFIX}{}", std::process::id()));
    crate::mdtest::make_marked_top(&path, "another directory")?;
    Ok(TopDir { path, keep })
}

/// One phase's figures as measured.
struct Measured {
    name: &'static str,
    op: &'static str,
    stats: StatsReport,
    /// GiB/s (ior) or kIOPS (the others).
    value: f64,
    stonewalled: bool,
    /// Explanations of the phase's own Result (an ior phase's Job).
    explain: Vec<Explanation>,
}

const GIB: f64 = (1u64 << 30) as f64;

/// The state of the run across its phases.
struct Run {
    io: Issuer,
    measured: Vec<Measured>,
    notes: Vec<String>,
    failure: Option<String>,
    interrupted: bool,
}

impl Run {
    /// The run directory opened, and the one-step engine the phases on this host issue
    /// through (signals installed: Ctrl-C ends the phases).
    fn in_top(top: &Path, notes: Vec<String>) -> Result<(OwnedFd, Run)> {
        let top_fd = open_dir(top).with_context(|| format!("opening {}", top.display()))?;
        let engine = Issuer::sync_engine(1, 1, MDTEST_HARD_BYTES as usize, 0x0069_6f35_3030)?;
        crate::runner::signal::install();
        let run = Run {
            io: Issuer::new(engine, 1, None),
            measured: Vec::new(),
            notes,
            failure: None,
            interrupted: false,
        };
        Ok((top_fd, run))
    }
}

/// The notes for ior phases that write less than configured because the file system lacks the
/// room (each rank's files take a fifth of the free space on ranks, the files on one host).
fn room_notes(easy: (u64, u64), hard: (u64, u64), on_ranks: bool) -> Vec<String> {
    let room = if on_ranks {
        " on each rank (the ranks' files take a fifth of the free space)"
    } else {
        " (a fifth of the free space)"
    };
    [("ior-easy", easy), ("ior-hard", hard)]
        .into_iter()
        .filter(|(_, (want, got))| got < want)
        .map(|(what, (want, got))| {
            format!("{what} writes at most {got} bytes{room}, not the {want} configured")
        })
        .collect()
}

/// What a phase's Result says of the whole run: a failure, named after the phase, or an
/// interruption (the phases after it do not run).
fn settle_status(failure: &mut Option<String>, interrupted: &mut bool, name: &str, r: &RunResult) {
    match r.status {
        RunStatus::Failed => {
            let why = r
                .failures
                .first()
                .map(|f| f.to_string())
                .unwrap_or_else(|| "failed".into());
            *failure = Some(format!("{name}: {why}"));
        }
        RunStatus::Partial => *interrupted = true,
        RunStatus::Complete => {}
    }
}

impl Run {
    fn stopped(&self) -> bool {
        self.failure.is_some() || self.interrupted
    }

    /// An ior phase: `job` run on this host; its written (or read) bytes.
    fn ior(&mut self, name: &'static str, op: &'static str, job: &crate::job::Job) -> u64 {
        if self.stopped() {
            return 0;
        }
        let ran = crate::exec::Executor::Local.run_job(job, false, &Default::default());
        let r = match ran {
            Ok(r) => r,
            Err(e) => {
                self.failure = Some(format!("{name}: {e:#}"));
                return 0;
            }
        };
        settle_status(&mut self.failure, &mut self.interrupted, name, &r);
        let t = &r.total;
        let wanted = job.io_count.unwrap_or(0).saturating_mul(job.block_size);
        let bytes = t.bytes;
        let stonewalled = job.time_s.is_some() && bytes < wanted && !self.stopped();
        self.measured.push(Measured {
            name,
            op,
            value: t.bytes_per_sec / GIB,
            stats: t.clone(),
            stonewalled,
            explain: r.explain.clone(),
        });
        bytes
    }

    /// An mdtest phase over `count` files of `tree`; the files done.
    fn md(
        &mut self,
        name: &'static str,
        tree: &md::MdTree,
        op: Op,
        count: u64,
        stonewall: Option<Duration>,
    ) -> u64 {
        if self.stopped() {
            return 0;
        }
        let ran = md::phase(&mut self.io, tree, op, count, stonewall);
        self.keep_md(name, op.key(), ran.stats, ran.stonewalled);
        self.failure = ran.failure.map(|f| format!("{name}: {f}"));
        self.interrupted |= ran.interrupted;
        ran.done
    }

    fn keep_md(&mut self, name: &'static str, op: &'static str, stats: Stats, stonewalled: bool) {
        let rate = if stats.elapsed_s > 0.0 {
            stats.ops() as f64 / stats.elapsed_s
        } else {
            0.0
        };
        self.measured.push(Measured {
            name,
            op,
            value: rate / 1e3,
            stats: StatsReport::from_stats(&stats, false),
            stonewalled,
            explain: Vec::new(),
        });
    }

    /// Untimed set-up and clean-up of a tree's directory.
    fn tree_op(&mut self, tree: &md::MdTree, op: Op) {
        if self.stopped() {
            return;
        }
        let ran = md::phase(&mut self.io, tree, op, 1, None);
        if let Some(f) = ran.failure {
            self.failure = Some(f);
        }
        self.interrupted |= ran.interrupted;
    }

    /// The find phase over the run's directory `top`, one walk: (matched, looked at).
    fn find(&mut self, top: RawFd, query: &find::Query) -> (u64, u64) {
        if self.stopped() {
            return (0, 0);
        }
        let walked = find::walk(&mut self.io, top, query, find::Share::ALL);
        match walked.end {
            find::End::Done => {}
            find::End::Stopped => self.interrupted = true,
            find::End::Failed(e) => self.failure = Some(format!("find: {e}")),
        }
        self.keep_md("find", "find", walked.stats, false);
        (walked.matched, walked.looked)
    }
}

/// IO500's find expression: files newer than the timestamp file (`newer_than`: its mtime),
/// of mdtest-hard's size, with `01` in their name.
fn find_query(newer_than: (i64, u32)) -> find::Query {
    find::Query {
        newer_than,
        size: MDTEST_HARD_BYTES,
        name_has: b"01".to_vec(),
    }
}

/// Make directory `name` in `top` and open it, through the issuer.
fn sub_dir(io: &mut Issuer, top: RawFd, name: &std::ffi::CStr) -> Result<OwnedFd> {
    let what = name.to_string_lossy();
    io.mkdir_at(top, name, 0o755)
        .with_context(|| format!("creating {what}"))?;
    let fd = io
        .open_at(
            top,
            name,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0,
        )
        .with_context(|| format!("opening {what}"))?;
    // SAFETY: a descriptor the open just returned, owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The timestamp file find's `-newer` compares with, made now in `top`: its mtime.
fn timestamp(io: &mut Issuer, top: RawFd) -> Result<(i64, u32)> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let fd = io
        .open_at(top, c"timestamp", flags, 0o644)
        .context("creating the timestamp file")?;
    // SAFETY: statx is plain integers; all zero is a valid value.
    let mut sx: libc::statx = unsafe { std::mem::zeroed() };
    let r = io.stat_fd(fd, &mut sx);
    io.close_fd(fd)?;
    r.context("reading the timestamp file's time")?;
    // Files made within the same clock tick as the stamp still count as newer than it
    // would in find (which compares to the second on some file systems): wait a tick.
    std::thread::sleep(Duration::from_millis(10));
    Ok((sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec))
}

/// The largest file (a whole number of `transfer`s, at most `want`) an ior phase may write
/// in `dir`: at most a fifth of its free space each.
fn ior_room(dir: &Path, transfer: u64, want: u64, what: &str) -> Result<u64> {
    let Ok(st) = rustix::fs::statvfs(dir) else {
        return Ok(want);
    };
    let free = st.f_bavail.saturating_mul(st.f_frsize) / IOR_SHARE_OF_FREE;
    let cap = want.min(free) / transfer * transfer;
    if cap == 0 {
        return Err(usage!(
            "{}: too little free space for one {what} transfer of {transfer} bytes",
            dir.display()
        )
        .into());
    }
    Ok(cap)
}

fn ior_job(
    name: &str,
    path: PathBuf,
    access: crate::job::Access,
    transfer: u64,
    bytes: u64,
    time_s: Option<f64>,
) -> Result<crate::job::Job> {
    let job = crate::job::Job {
        name: name.to_string(),
        targets: vec![path],
        access,
        block_size: transfer,
        file_size: Some(bytes),
        io_count: Some(bytes / transfer),
        time_s,
        keep: true,
        ..Default::default()
    };
    job.validate()?;
    Ok(job)
}

/// Run the twelve phases in `opts.dir` on this host or on every rank; the Result (kind
/// `io500`).
/// On ranks, with the run's directory, removed (unless kept) when the caller drops it,
/// after it wrote the Result: a run that lost a rank is ended by mpirun one second after,
/// and the Result naming the lost rank comes first (what is left stays marked as this run's
/// and the next run removes it).
pub fn run_on(opts: &Options, exec: &crate::exec::Executor) -> Result<(RunResult, Option<TopDir>)> {
    match exec {
        crate::exec::Executor::Local => Ok((run(opts)?, None)),
        crate::exec::Executor::Ranks(r) => {
            let (result, top) = run_on_ranks(opts, r.as_ref())?;
            Ok((result, Some(top)))
        }
    }
}

/// The twelve phases on every rank (`ranks`): rank 0 makes the run's directory and the
/// phases' directories, each phase is one distributed run ([`ranks`]), find too (every rank
/// on its share of every rank's files); the Result is made from the phases' merged Results.
fn run_on_ranks(opts: &Options, exec: &dyn crate::exec::Ranks) -> Result<(RunResult, TopDir)> {
    use crate::exec::Spread;
    let c = &opts.config;
    c.check()?;
    let n = exec.size();
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut notes = Vec::new();
    let top = make_top(&opts.dir, opts.keep, &mut notes)?;
    // Every rank's files share the directory's free space.
    let easy_room = ior_room(
        &top.path,
        c.easy_transfer,
        c.easy_block.saturating_mul(n as u64),
        "ior-easy",
    )?;
    let easy_bytes =
        (easy_room / n as u64 / c.easy_transfer * c.easy_transfer).max(c.easy_transfer);
    let hard_want = c.hard_segments.saturating_mul(IOR_HARD_TRANSFER);
    let hard_room = ior_room(
        &top.path,
        IOR_HARD_TRANSFER,
        hard_want.saturating_mul(n as u64),
        "ior-hard",
    )?;
    let hard_bytes =
        (hard_room / n as u64 / IOR_HARD_TRANSFER * IOR_HARD_TRANSFER).max(IOR_HARD_TRANSFER);
    notes.extend(room_notes(
        (c.easy_block, easy_bytes),
        (hard_want, hard_bytes),
        true,
    ));
    let (top_fd, mut local) = Run::in_top(&top.path, Vec::new())?;
    let t = top_fd.as_raw_fd();
    let newer_than = timestamp(&mut local.io, t)?;
    for d in [c"ior-easy", c"ior-hard", c"mdtest-easy", c"mdtest-hard"] {
        drop(sub_dir(&mut local.io, t, d)?);
    }
    let mut r = ranks::OnRanks {
        ranks: exec,
        measured: Vec::new(),
        failure: None,
        interrupted: false,
        notes,
        hosts: 0,
        find_ranks: Vec::new(),
    };
    let wall = Some(c.stonewall_s as f64);
    let easy_dir = top.path.join("mdtest-easy");
    let hard_dir = top.path.join("mdtest-hard");
    let md = |name, op, dir, per_rank, items, bytes| ranks::MdPhase {
        name,
        op,
        dir,
        tree_per_rank: per_rank,
        items,
        bytes,
        stonewall_s: c.stonewall_s,
    };
    use crate::job::Access::{Read, Write};
    let write = Spread {
        shared_strided: false,
        shift_reads: false,
        stonewall_s: wall,
    };

    // The write phases, each stopped on every rank by the stonewall.
    let easy = (c.easy_transfer, easy_bytes);
    let easy_w = ranks::ior_job_on_ranks(&top.path, true, Write, easy, n)?;
    let hard = (IOR_HARD_TRANSFER, hard_bytes);
    let hard_w = ranks::ior_job_on_ranks(&top.path, false, Write, hard, n)?;
    let easy_written = r.ior("ior-easy-write", "ior_write", &easy_w, write);
    let easy_made = r.md(&md(
        "mdtest-easy-write",
        Op::FileCreate,
        &easy_dir,
        true,
        c.easy_files,
        0,
    ));
    let hard_spread = Spread {
        shared_strided: true,
        ..write
    };
    let hard_written = r.ior("ior-hard-write", "ior_write", &hard_w, hard_spread);
    let hard_made = r.md(&md(
        "mdtest-hard-write",
        Op::FileCreate,
        &hard_dir,
        false,
        c.hard_files,
        MDTEST_HARD_BYTES,
    ));
    let (matched, looked) = r.find(&top.path, &find_query(newer_than));
    // The read phases: what every rank wrote (the least any rank did), each rank on
    // another rank's data.
    let read = Spread {
        shared_strided: false,
        shift_reads: true,
        stonewall_s: None,
    };
    if easy_written >= c.easy_transfer {
        let easy = (c.easy_transfer, easy_written);
        let easy_r = ranks::ior_job_on_ranks(&top.path, true, Read, easy, n)?;
        r.ior("ior-easy-read", "ior_read", &easy_r, read);
    } else if !r.stopped() {
        r.failure = Some("ior-easy-write wrote nothing on some rank to read back".into());
    }
    r.md(&md(
        "mdtest-easy-stat",
        Op::FileStat,
        &easy_dir,
        true,
        easy_made,
        0,
    ));
    if hard_written >= IOR_HARD_TRANSFER {
        let shared = Spread {
            shared_strided: true,
            ..read
        };
        let hard = (IOR_HARD_TRANSFER, hard_written);
        let hard_r = ranks::ior_job_on_ranks(&top.path, false, Read, hard, n)?;
        r.ior("ior-hard-read", "ior_read", &hard_r, shared);
    } else if !r.stopped() {
        r.failure = Some("ior-hard-write wrote nothing on some rank to read back".into());
    }
    r.md(&md(
        "mdtest-hard-stat",
        Op::FileStat,
        &hard_dir,
        false,
        hard_made,
        0,
    ));
    r.md(&md(
        "mdtest-easy-delete",
        Op::FileRemove,
        &easy_dir,
        true,
        easy_made,
        0,
    ));
    r.md(&md(
        "mdtest-hard-read",
        Op::FileRead,
        &hard_dir,
        false,
        hard_made,
        MDTEST_HARD_BYTES,
    ));
    r.md(&md(
        "mdtest-hard-delete",
        Op::FileRemove,
        &hard_dir,
        false,
        hard_made,
        0,
    ));
    // What the ior phases kept for the reads goes on every rank (the run's directory, with
    // what is left in it, with `top` below).
    exec.cleanup(opts.keep);
    drop(top_fd);
    if opts.keep {
        r.notes
            .push(format!("kept {} (--keep)", top.path.display()));
    }
    let ended = Ended {
        config: c,
        measured: &r.measured,
        notes: &r.notes,
        failure: r.failure.as_deref(),
        interrupted: r.interrupted,
        ranks: (n, r.hosts.max(1)),
        find_ranks: &r.find_ranks,
    };
    let result = result_of(&ended, &top.path, started_unix_s, (matched, looked));
    Ok((result, top))
}

/// Run the twelve phases in `opts.dir` on this host; the Result (kind `io500`).
pub(crate) fn run(opts: &Options) -> Result<RunResult> {
    let c = &opts.config;
    c.check()?;
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut notes = Vec::new();
    let top = make_top(&opts.dir, opts.keep, &mut notes)?;
    let easy_bytes = ior_room(&top.path, c.easy_transfer, c.easy_block, "ior-easy")?;
    let hard_want = c.hard_segments.saturating_mul(IOR_HARD_TRANSFER);
    let hard_bytes = ior_room(&top.path, IOR_HARD_TRANSFER, hard_want, "ior-hard")?;
    notes.extend(room_notes(
        (c.easy_block, easy_bytes),
        (hard_want, hard_bytes),
        false,
    ));
    let (top_fd, mut r) = Run::in_top(&top.path, notes)?;
    let t = top_fd.as_raw_fd();
    let newer_than = timestamp(&mut r.io, t)?;
    for d in [c"ior-easy", c"ior-hard"] {
        drop(sub_dir(&mut r.io, t, d)?);
    }
    let easy_dir = sub_dir(&mut r.io, t, c"mdtest-easy")?;
    let hard_dir = sub_dir(&mut r.io, t, c"mdtest-hard")?;
    let easy = md::MdTree::new(easy_dir.as_raw_fd(), 0);
    let hard = md::MdTree::new(hard_dir.as_raw_fd(), MDTEST_HARD_BYTES as u32);
    let wall = Duration::from_secs(c.stonewall_s);
    let time = Some(c.stonewall_s as f64);
    let easy_file = top.path.join("ior-easy/ior_file_easy.00000000");
    let hard_file = top.path.join("ior-hard/IOR_file");
    use crate::job::Access::{Read, Write};

    // The write phases, each stopped by the stonewall.
    let job = ior_job(
        "ior-easy-write",
        easy_file.clone(),
        Write,
        c.easy_transfer,
        easy_bytes,
        time,
    )?;
    let easy_written = r.ior("ior-easy-write", "ior_write", &job);
    r.tree_op(&easy, Op::TreeCreate);
    let easy_made = r.md(
        "mdtest-easy-write",
        &easy,
        Op::FileCreate,
        c.easy_files,
        Some(wall),
    );
    let job = ior_job(
        "ior-hard-write",
        hard_file.clone(),
        Write,
        IOR_HARD_TRANSFER,
        hard_bytes,
        time,
    )?;
    let hard_written = r.ior("ior-hard-write", "ior_write", &job);
    r.tree_op(&hard, Op::TreeCreate);
    let hard_made = r.md(
        "mdtest-hard-write",
        &hard,
        Op::FileCreate,
        c.hard_files,
        Some(wall),
    );
    let (matched, looked) = r.find(t, &find_query(newer_than));
    // The read phases: exactly what the writes did.
    if easy_written >= c.easy_transfer {
        let job = ior_job(
            "ior-easy-read",
            easy_file,
            Read,
            c.easy_transfer,
            easy_written,
            None,
        )?;
        r.ior("ior-easy-read", "ior_read", &job);
    } else if !r.stopped() {
        r.failure = Some("ior-easy-write wrote nothing to read back".into());
    }
    r.md("mdtest-easy-stat", &easy, Op::FileStat, easy_made, None);
    if hard_written >= IOR_HARD_TRANSFER {
        let job = ior_job(
            "ior-hard-read",
            hard_file,
            Read,
            IOR_HARD_TRANSFER,
            hard_written,
            None,
        )?;
        r.ior("ior-hard-read", "ior_read", &job);
    } else if !r.stopped() {
        r.failure = Some("ior-hard-write wrote nothing to read back".into());
    }
    r.md("mdtest-hard-stat", &hard, Op::FileStat, hard_made, None);
    r.md("mdtest-easy-delete", &easy, Op::FileRemove, easy_made, None);
    r.tree_op(&easy, Op::TreeRemove);
    r.md("mdtest-hard-read", &hard, Op::FileRead, hard_made, None);
    r.md("mdtest-hard-delete", &hard, Op::FileRemove, hard_made, None);
    r.tree_op(&hard, Op::TreeRemove);
    drop((easy_dir, hard_dir, top_fd));
    if opts.keep {
        r.notes
            .push(format!("kept {} (--keep)", top.path.display()));
    }
    let ended = Ended {
        config: &opts.config,
        measured: &r.measured,
        notes: &r.notes,
        failure: r.failure.as_deref(),
        interrupted: r.interrupted,
        ranks: (1, 1),
        find_ranks: &[],
    };
    let result = result_of(&ended, &top.path, started_unix_s, (matched, looked));
    drop(top);
    Ok(result)
}

/// Geometric mean of positive values; 0 when any is 0 (as IO500 scores a failed phase).
fn geo_mean(v: &[f64]) -> f64 {
    // A NaN counts as no figure.
    if v.is_empty() || v.iter().any(|x| x.is_nan() || *x <= 0.0) {
        return 0.0;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// IO500's scores from the phases' figures: (bandwidth GiB/s, metadata kIOPS, total).
pub(crate) fn scores(phases: &[Io500Phase]) -> (f64, f64, f64) {
    let of = |unit: &str| -> Vec<f64> {
        phases
            .iter()
            .filter(|p| p.unit == unit)
            .map(|p| p.value)
            .collect()
    };
    let bw = geo_mean(&of("GiB/s"));
    let md = geo_mean(&of("kIOPS"));
    (bw, md, (bw * md).sqrt())
}

/// The findings of an ior phase's own Result that the IO500 Result carries.
const CARRIED: &[&str] = &[
    "page_cache",
    "sparse_reads",
    "dirty_at_stop",
    "direct_fallback",
];

/// How a run ended, for its Result: its phases, notes, failure, whether it was interrupted,
/// and on how many ranks and hosts it ran.
struct Ended<'a> {
    config: &'a Config,
    measured: &'a [Measured],
    notes: &'a [String],
    failure: Option<&'a str>,
    interrupted: bool,
    /// (ranks, hosts); one host, one process: (1, 1).
    ranks: (u32, usize),
    /// Each rank's part of the find phase (none on one host).
    find_ranks: &'a [crate::result::Io500FindRank],
}

fn result_of(
    r: &Ended<'_>,
    top: &Path,
    started_unix_s: f64,
    (matched, looked): (u64, u64),
) -> RunResult {
    let c = r.config;
    let dir = top.parent().unwrap_or(top);
    let mut res = RunResult::new(
        Kind::Io500,
        "io500",
        started_unix_s,
        crate::probe::env::collect(&[dir]),
    );
    let mut phases = Vec::new();
    let mut total = StatsReport::default();
    let (mut ops, mut bytes, mut elapsed) = (0, 0, 0.0);
    for m in r.measured {
        res.groups.push(GroupReport {
            name: m.name.to_string(),
            op: m.op.to_string(),
            run: None,
            stats: m.stats.clone(),
        });
        let ior = m.op.starts_with("ior_");
        phases.push(Io500Phase {
            name: m.name.to_string(),
            value: m.value,
            unit: if ior { "GiB/s" } else { "kIOPS" }.to_string(),
            time_s: m.stats.elapsed_s,
            ops: m.stats.ops,
            bytes: m.stats.bytes,
            stonewalled: m.stonewalled,
        });
        ops += m.stats.ops;
        bytes += m.stats.bytes;
        elapsed += m.stats.elapsed_s;
        // The phase's own findings about what its bytes were (the host's state is the
        // same for every phase and shown once by the run's notes, not per phase).
        for e in m
            .explain
            .iter()
            .filter(|e| CARRIED.contains(&e.check.as_str()))
        {
            res.explain.push(Explanation {
                check: e.check.clone(),
                message: format!("{}: {}", m.name, e.message),
                evidence: e.evidence.clone(),
            });
        }
    }
    // The whole run as one figure: every phase's operations and bytes over their summed time.
    total.ops = ops;
    total.bytes = bytes;
    total.elapsed_s = elapsed;
    if elapsed > 0.0 {
        total.iops = ops as f64 / elapsed;
        total.bytes_per_sec = bytes as f64 / elapsed;
    }
    res.total = total;
    res.explain
        .extend(findings(&phases, c.stonewall_s, r.ranks));
    let (bw, md, score) = scores(&phases);
    let (nranks, hosts) = r.ranks;
    let how = if nranks > 1 {
        format!("{nranks} ranks on {hosts} host(s)")
    } else {
        "one host, one process".to_string()
    };
    res.notes.push(format!(
        "{how}: not a valid IO500 submission{}",
        if c.unofficial() {
            format!(
                "; the stonewall of {} s is below IO500's {} s (unofficial)",
                c.stonewall_s,
                config::OFFICIAL_STONEWALL_S
            )
        } else {
            String::new()
        }
    ));
    crate::mdtest::settle(&mut res, r.notes, r.failure, r.interrupted, top);
    res.io500 = Some(Io500Info {
        dir: dir.display().to_string(),
        stonewall_s: c.stonewall_s,
        unofficial: c.unofficial(),
        score_bw_gib_s: bw,
        score_md_kiops: md,
        score,
        find_matched: matched,
        find_total: looked,
        find_ranks: r.find_ranks.to_vec(),
        phases,
    });
    res
}

/// What could make the figures mislead: phases too short to trust, and the caches that
/// served the phases after the writes on one host.
fn findings(
    phases: &[Io500Phase],
    stonewall_s: u64,
    (nranks, hosts): (u32, usize),
) -> Vec<Explanation> {
    let mut out = Vec::new();
    let short: Vec<&Io500Phase> = phases
        .iter()
        .filter(|p| p.time_s < 1.0 || (p.name.ends_with("-write") && p.time_s < stonewall_s as f64))
        .collect();
    if !short.is_empty() {
        let names: Vec<String> = short
            .iter()
            .map(|p| format!("{} ({:.2} s)", p.name, p.time_s))
            .collect();
        out.push(Explanation {
            check: "too_short".into(),
            message: format!(
                "too short to trust: {} ran under 1 s or (a write) ended before the {stonewall_s} s stonewall; use a longer --stonewall (IO500's is 300 s) and, for a write that ran out of work, raise its amount in the configuration ([ior-easy] blockSize, [ior-hard] segmentCount, [mdtest-easy] or [mdtest-hard] n)",
                names.join(", ")
            ),
            evidence: serde_json::json!({
                "phases": short.iter().map(|p| serde_json::json!({"phase": p.name, "time_s": p.time_s})).collect::<Vec<_>>(),
                "stonewall_s": stonewall_s,
            }),
        });
    }
    let cached: Vec<&str> = phases
        .iter()
        .filter(|p| {
            matches!(
                p.name.as_str(),
                "find" | "mdtest-easy-stat" | "mdtest-hard-stat" | "mdtest-hard-read"
            )
        })
        .map(|p| p.name.as_str())
        .collect();
    if !cached.is_empty() && nranks > 1 && hosts == 1 {
        out.push(Explanation {
            check: "page_cache".into(),
            message: format!(
                "served by this host's caches: every rank ran on one host, so {} (and the ior reads, each rank reading another rank's data) found what the ranks just wrote in this host's memory; run the ranks on several hosts for the storage's figures",
                cached.join(", ")
            ),
            evidence: serde_json::json!({ "phases": cached, "hosts": hosts, "ranks": nranks }),
        });
    } else if !cached.is_empty() && nranks == 1 {
        out.push(Explanation {
            check: "page_cache".into(),
            message: format!(
                "served by this host's caches: {} ran on the host that just wrote the files, so their inodes, directory entries and (mdtest-hard-read) data came from memory, not from storage; the ior reads had the files' pages evicted first",
                cached.join(", ")
            ),
            evidence: serde_json::json!({ "phases": cached, "hosts": 1 }),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// IO500's phases, in the order it runs them.
    const PHASES: [&str; 12] = [
        "ior-easy-write",
        "mdtest-easy-write",
        "ior-hard-write",
        "mdtest-hard-write",
        "find",
        "ior-easy-read",
        "mdtest-easy-stat",
        "ior-hard-read",
        "mdtest-hard-stat",
        "mdtest-easy-delete",
        "mdtest-hard-read",
        "mdtest-hard-delete",
    ];

    fn phase(name: &str, value: f64) -> Io500Phase {
        Io500Phase {
            name: name.into(),
            value,
            unit: if name.starts_with("ior") {
                "GiB/s"
            } else {
                "kIOPS"
            }
            .into(),
            time_s: 1.0,
            ops: 1,
            bytes: 0,
            stonewalled: false,
        }
    }

    #[test]
    fn the_score_is_io500s() {
        let v: Vec<Io500Phase> = PHASES
            .iter()
            .map(|n| phase(n, if n.starts_with("ior") { 4.0 } else { 9.0 }))
            .collect();
        let (bw, md, s) = scores(&v);
        assert!((bw - 4.0).abs() < 1e-9 && (md - 9.0).abs() < 1e-9);
        assert!((s - 6.0).abs() < 1e-9);
        let mut v = v;
        v[0].value = 1.0;
        v[2].value = 16.0;
        assert!((scores(&v).0 - (1.0f64 * 16.0 * 4.0 * 4.0).powf(0.25)).abs() < 1e-9);
        v[1].value = 0.0;
        assert_eq!(scores(&v).1, 0.0);
    }
}
