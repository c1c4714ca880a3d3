//! The backup study (seed 001): build a tree of one large file and two small ones, archive it
//! in ustar format with 32256-byte records to a file, restore it, under buffered and direct
//! I/O on the tree's files. Each phase reports elapsed, user and sys seconds, read and write
//! calls and calls per second (the article's `timex` and `tusc -c` figures); the restored tree
//! is compared byte for byte with the original.
//!
//! Every measured phase is a source the runner drives (`runner::source::drive`): its thread
//! is started and held at the start gate by the runner's driver (`runner::drive`), it is
//! stepped one archive record (or one tree file opened) at a time, stopped between steps by
//! Ctrl-C, and its CPU time is the runner's account of the measured window. Every read,
//! write, open, close, mkdir and fsync it times goes through the runner's issuing handle
//! (`runner::issue::Issuer`), which holds the phase's engine: data I/O into the engine's
//! page-aligned buffers, so direct I/O works on 4k-sector devices. The system calls in the
//! phase's Result are the ones the issuer counted, its reads and writes the phase's own, in
//! the one `Stats` type, as the phase's named group.
//!
//! A phase is a fixed amount of work (archive this tree, restore this archive): it has no
//! time limit, no rate limit and no warm-up, since leaving its first seconds out would leave
//! out part of the work its figures describe.
//!
//! Like pax, the restore does not fsync the files it writes: buffered restores finish when the
//! data is in the page cache, direct ones when it is on the device. The archive itself is
//! written buffered and fsync'd inside the timed archive phase, standing in for the article's
//! raw backup disk.
//!
//! This module holds the study's plan, its phases and what they report; `tape` the phases
//! as sources (archive, restore) and the comparison, and `ustar` the archive format. It sits below the
//! executor (`crate::exec`), which runs the phases on this host or on every MPI rank, and
//! below the sweeps and suites that store its Results.

pub(crate) mod tape;
pub(crate) mod ustar;

use crate::engine::BufferPool;
use crate::job::CachePolicy;
use crate::observe::{Observe, Observer, Scope};
use crate::result::{self, BackupInfo, GroupReport, RunResult};
use crate::runner::drive::{self, Body, Gate};
use crate::runner::issue::Issuer;
use crate::runner::pace::StepPacing;
use crate::runner::source::{self, Drive};
use crate::runner::target::{Plan, TargetKind, TargetPlan};
use crate::runner::{IoFailure, RunStatus};
use crate::stats::{Stats, StatsReport};
use anyhow::{anyhow, bail, Context, Result};
use std::cell::Cell;
use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tape::{check_interrupt, same_contents, Archive, Phase, Restore};
use ustar::BLOCK;

/// Sizes of the tree and the record size, after scaling.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BackupPlan {
    pub large: u64,
    pub small: Vec<u64>,
    pub record: usize,
}

/// Builds the issuer of one phase on the phase's thread, before the gate, from its number of
/// file slots and its buffers' length (a record or more; `tape::SLOTS` buffers). The study
/// uses the synchronous engine (pax issues one blocking call per record); tests wrap it.
pub type MakeIssuer = Arc<dyn Fn(usize, usize) -> Result<Issuer> + Send + Sync>;

/// The synchronous engine, with empty file slots the phase fills as it opens files.
pub fn sync_issuer() -> MakeIssuer {
    Arc::new(|files, len| {
        let engine = Issuer::sync_engine(files, tape::SLOTS, len, 0xbac)?;
        Ok(Issuer::new(engine, files, None))
    })
}

/// Prefix of the per-run directory (`fsbench-backup-PID`).
pub const ROOT_PREFIX: &str = "fsbench-backup-";

/// The name of the archive in a study's directory.
pub const ARCHIVE: &str = "backup.tar";

/// Remove `fsbench-backup-PID` directories in `dir` that a killed run left: only those whose
/// name carries a PID that is not running, that are real directories (not links) and that
/// carry fsbench's mark. Returns the paths removed.
pub fn remove_stale(dir: &Path) -> Vec<PathBuf> {
    let mut gone = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return gone;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(ROOT_PREFIX))
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid <= 0 || pid as u32 == std::process::id() || pid_alive(pid) {
            continue;
        }
        let p = e.path();
        let is_dir = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_dir());
        if is_dir && crate::safety::is_marked(&p) && std::fs::remove_dir_all(&p).is_ok() {
            gone.push(p);
        }
    }
    gone
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists; it sends nothing.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Bytes the study writes at its peak: the tree, the archive (headers and record padding
/// included) and the restored copy all exist at once.
pub(crate) fn space_needed(plan: &BackupPlan) -> u64 {
    let files = 1 + plan.small.len() as u64;
    let tree = plan
        .small
        .iter()
        .fold(plan.large, |a, &b| a.saturating_add(b));
    let archive = tree
        .saturating_add((files + 1).saturating_mul(2 * BLOCK as u64))
        .saturating_add(2 * plan.record as u64);
    tree.saturating_mul(2).saturating_add(archive)
}

const TREE_FILES: [&str; 3] = ["swtape01.iso", "hpux_11.23.tgz", "hpux_11.11.tgz"];

/// Create the tree under `root` (which must not exist): one large file and the small ones.
pub fn build_tree(root: &Path, plan: &BackupPlan) -> Result<Vec<(String, u64)>> {
    std::fs::create_dir(root).map_err(|e| anyhow!("cannot create {}: {e}", root.display()))?;
    crate::safety::mark_created(root);
    let mut sizes = vec![plan.large];
    sizes.extend(plan.small.iter().copied());
    let mut out = Vec::new();
    // Untimed setup: the tree is written with ordinary calls, its bytes from the same
    // non-repeating pattern the engines' buffers carry.
    let mut chunk = BufferPool::new(1, 1 << 20, 0xbac)?.slot(0).to_vec();
    for (i, size) in sizes.iter().enumerate() {
        let name = TREE_FILES
            .get(i)
            .map(|s| s.to_string())
            .unwrap_or_else(|| format!("file{i}.dat"));
        let p = root.join(&name);
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&p)
            .with_context(|| format!("creating {}", p.display()))?;
        crate::safety::mark_created(&p);
        let mut off = 0u64;
        let mut n = 0u64;
        while off < *size {
            check_interrupt()?;
            // Stamp each MiB with its number and file, so a misplaced block cannot compare equal.
            chunk[..8].copy_from_slice(&n.to_le_bytes());
            chunk[8] = i as u8;
            let len = ((*size - off) as usize).min(chunk.len());
            f.write_all_at(&chunk[..len], off)?;
            off += len as u64;
            n += 1;
        }
        f.sync_all()?;
        out.push((name, *size));
    }
    Ok(out)
}

/// A measured phase as a Result (kind `backup`): the archive is its target, the phase its
/// one named group (the article's per-phase `timex` and `tusc -c` figures).
#[allow(clippy::too_many_arguments)]
fn phase_result(
    name: &str,
    phase: &str,
    cache: CachePolicy,
    record: usize,
    archive: &Path,
    tree_files: &[PathBuf],
    stats: Stats,
    failure: Option<String>,
    started_unix_s: f64,
    notes: Vec<String>,
) -> RunResult {
    let mut r = RunResult::new(
        result::Kind::Backup,
        name,
        started_unix_s,
        crate::probe::env::collect(tree_files),
    );
    r.plan = Some(Plan {
        part: None,
        targets: vec![TargetPlan {
            path: archive.to_path_buf(),
            kind: TargetKind::File,
            size: std::fs::metadata(archive).map(|m| m.len()).unwrap_or(0),
            created: true,
            dio_align: crate::runner::target::dio_alignment(archive),
            reserved: None,
        }],
        cache,
        notes: Vec::new(),
    });
    r.notes = notes;
    r.backup = Some(BackupInfo {
        phase: phase.to_string(),
        record_bytes: record as u64,
        files: tree_files.iter().map(|p| p.display().to_string()).collect(),
    });
    r.failures = failure
        .iter()
        .map(|m| IoFailure {
            user: 0,
            thread: 0,
            path: archive.display().to_string(),
            offset: None,
            message: m.clone(),
        })
        .collect();
    if !r.failures.is_empty() {
        r.status = RunStatus::Failed;
    }
    r.total = StatsReport::from_stats(&stats, true);
    r.groups.push(GroupReport {
        name: phase.to_string(),
        op: "phase".into(),
        run: None,
        stats: StatsReport::from_stats(&stats, false),
    });
    r
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Asked once per phase, on the calling thread, when the phase's thread is ready (true) or
/// could not be made ready (false): may it start? On one host it always may; on MPI ranks
/// this is the phase's start barrier (`crate::mpi`), every rank's answer the same.
pub(crate) type StartHook<'a> = &'a mut dyn FnMut(bool) -> bool;

/// A phase as its thread measured it: its counts, the gate's opening and its end, and how
/// the phase ended.
struct Timed<T> {
    stats: Stats,
    opened: Instant,
    end: Instant,
    result: Result<T>,
}

/// Run one timed phase on its own thread: the runner's driver starts the thread, which
/// builds its issuer (untimed) and is held at the start gate until `start` says go; then the
/// runner's stepped loop drives `src` to its end or to Ctrl-C. Elapsed, user and sys time
/// are the loop's measured window and the thread's CPU time in it. `start` is asked exactly
/// once, whatever happens.
fn phase<P: Phase>(
    name: &str,
    make: &MakeIssuer,
    files: usize,
    record: usize,
    start: StartHook<'_>,
    mut src: P,
) -> Result<Timed<P::Done>> {
    let make = make.clone();
    let body: Body<(Stats, Instant, Result<P::Done>)> = Box::new(move |gate: &Gate| {
        let io = make(files, record);
        let go = Cell::new(false);
        let wait = || go.set(gate.arrive_and_wait());
        let mut io = match io {
            Ok(io) => io,
            Err(e) => {
                wait();
                return go.get().then(|| (Stats::default(), Instant::now(), Err(e)));
            }
        };
        // A called-off gate stops the phase before its first step.
        let stop = || !go.get() || crate::runner::signal::interrupted();
        // A phase is a fixed amount of work: no deadline, rate limit or warm-up.
        let how = Drive {
            gate: &wait,
            stop: &stop,
            deadline: None,
            ramp: None,
            ramp_bytes: 0,
            pacing: StepPacing::default(),
            interval_ns: None,
        };
        let ran = source::drive(&mut src, &mut io, how);
        let end = Instant::now();
        if !go.get() {
            return None;
        }
        let ledger = src.ledger();
        let mut stats = ledger.take_stats();
        stats.syscalls = *io.sys();
        stats.usage = ran.usage;
        stats.elapsed_s = ran.end_ns.saturating_sub(ran.start_ns) as f64 / 1e9;
        ledger.close_left(&mut io);
        Some((stats, end, ran.end))
    });
    let crew = match drive::start_threads([(name.to_string(), body)], 1 << 20, &drive::spawn_thread)
    {
        Ok(c) => c,
        Err(f) => {
            start(false);
            bail!("cannot start the backup thread: {}", f.error);
        }
    };
    let opened = crew.open(|_| start(true));
    let joined = crew.join()?;
    let opened = opened.ok_or_else(|| anyhow!("the backup phase was called off"))?;
    let (stats, end, result) = joined
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("the backup thread returned nothing"))?;
    Ok(Timed {
        stats,
        opened,
        end,
        result,
    })
}

/// One measured phase of one tree, before it becomes a Result: what `phase_result` needs,
/// and the gate's opening and the end (for a rank's place on the barrier clock).
pub struct PhaseRun {
    pub stats: Stats,
    pub opened: Instant,
    pub end: Instant,
    pub started_unix_s: f64,
    pub failure: Option<String>,
    pub notes: Vec<String>,
    /// Restore: the restored tree is byte-identical to the original.
    pub verified: Option<bool>,
}

/// What every phase of one study shares: its directory (`root`, holding the tree, the
/// archive and the restored copy), the tree's files, the record size and the issuer maker.
pub struct Study<'a> {
    pub root: &'a Path,
    pub tree: &'a Path,
    pub files: &'a [(String, u64)],
    pub tree_paths: &'a [PathBuf],
    pub record: usize,
    pub make: &'a MakeIssuer,
}

impl Study<'_> {
    pub fn archive_path(&self) -> PathBuf {
        self.root.join(ARCHIVE)
    }

    /// Time the archive phase under `cache`, started when `start` says so.
    pub fn archive_run(&self, cache: CachePolicy, start: StartHook<'_>) -> Result<PhaseRun> {
        let direct = cache.uses_direct();
        let archive_path = self.archive_path();
        for p in self.tree_paths {
            let _ = crate::runner::target::evict(p);
        }
        let started = now_unix();
        let src = Archive::new(
            self.tree,
            "tree",
            self.files,
            &archive_path,
            direct,
            self.record,
        );
        let t = phase(
            "backup-archive",
            self.make,
            tape::ARCHIVE_FILES,
            self.record,
            start,
            src,
        )?;
        let notes = vec![format!(
            "ustar archive of {} files in {}-byte records; tree files read {}",
            self.files.len(),
            self.record,
            if direct {
                "with O_DIRECT"
            } else {
                "through the page cache"
            }
        )];
        Ok(PhaseRun {
            stats: t.stats,
            opened: t.opened,
            end: t.end,
            started_unix_s: started,
            failure: t.result.as_ref().err().map(|e| format!("{e:#}")),
            notes,
            verified: None,
        })
    }

    /// What the observers watch around a phase: the study's directory (the tree, the
    /// archive and the restored copy are all under it), one thread.
    fn scope(&self) -> Scope {
        Scope {
            targets: vec![self.root.to_path_buf()],
            workers: 1,
            processes: false,
        }
    }

    /// Time the archive phase under `cache`, with `observe` around it: its Result, or None
    /// when interrupted.
    fn archive_point(&self, cache: CachePolicy, observe: &Observe) -> Result<Option<RunResult>> {
        let observer = Observer::start_for(observe, &self.scope())?;
        let run = self.archive_run(cache, &mut |_| true)?;
        if crate::runner::signal::interrupted() {
            return Ok(None);
        }
        let elapsed_s = run.stats.elapsed_s;
        let mut r = self.result_of(cache, "archive", run);
        observer.finish(&mut r, elapsed_s)?;
        Ok(Some(r))
    }

    /// Time the restore phase under `cache` into `restore_dir` (created here), started when
    /// `start` says so, and verify the restored tree (untimed).
    pub fn restore_run(
        &self,
        cache: CachePolicy,
        restore_dir: &Path,
        start: StartHook<'_>,
    ) -> Result<PhaseRun> {
        let direct = cache.uses_direct();
        let archive_path = self.archive_path();
        let _ = crate::runner::target::evict(&archive_path);
        if let Err(e) = std::fs::create_dir(restore_dir) {
            start(false);
            bail!("cannot create {}: {e}", restore_dir.display());
        }
        let started = now_unix();
        let src = Restore::new(&archive_path, restore_dir, direct, self.record);
        let t = phase(
            "backup-restore",
            self.make,
            tape::RESTORE_FILES,
            self.record,
            start,
            src,
        )?;
        let mut failure = t.result.as_ref().err().map(|e| format!("{e:#}"));
        let mut notes = vec!["restored files are not fsync'd, like pax".to_string()];
        if let Ok(n) = t.result {
            if n > 0 {
                notes.push(format!(
                    "{n} misaligned direct writes done as O_DSYNC buffered writes"
                ));
            }
        }
        if failure.is_none() && !crate::runner::signal::interrupted() {
            failure = self.verify(restore_dir);
        }
        let verified = failure.is_none();
        notes.push(if verified {
            "restored tree verified byte-identical".into()
        } else {
            "restored tree NOT verified".into()
        });
        Ok(PhaseRun {
            stats: t.stats,
            opened: t.opened,
            end: t.end,
            started_unix_s: started,
            failure,
            notes,
            verified: Some(verified),
        })
    }

    /// Time the restore phase under `cache` and verify the restored tree (untimed): its
    /// Result, or None when interrupted.
    fn restore_point(
        &self,
        cache: CachePolicy,
        restore_dir: &Path,
        observe: &Observe,
    ) -> Result<Option<RunResult>> {
        let observer = Observer::start_for(observe, &self.scope())?;
        let run = self.restore_run(cache, restore_dir, &mut |_| true)?;
        if crate::runner::signal::interrupted() {
            return Ok(None);
        }
        let elapsed_s = run.stats.elapsed_s;
        let mut r = self.result_of(cache, "restore", run);
        observer.finish(&mut r, elapsed_s)?;
        Ok(Some(r))
    }

    /// A measured phase (`archive` or `restore`) of this tree as its Result.
    pub fn result_of(&self, cache: CachePolicy, phase: &str, run: PhaseRun) -> RunResult {
        let mut r = phase_result(
            &format!("backup {phase} {}", cache.name()),
            phase,
            cache,
            self.record,
            &self.archive_path(),
            self.tree_paths,
            run.stats,
            run.failure,
            run.started_unix_s,
            run.notes,
        );
        if let Some(v) = run.verified {
            r.probes
                .insert("verified".into(), serde_json::Value::Bool(v));
        }
        r
    }

    /// Compare the restored tree with the original byte for byte: the last difference found.
    pub(crate) fn verify(&self, restore_dir: &Path) -> Option<String> {
        let mut failure = None;
        for (name, _) in self.files {
            let (a, b) = (self.tree.join(name), restore_dir.join("tree").join(name));
            match same_contents(&a, &b) {
                Ok(true) => {}
                Ok(false) => {
                    failure = Some(format!(
                        "restored {} differs from the original",
                        b.display()
                    ))
                }
                Err(e) => failure = Some(format!("verifying {}: {e}", b.display())),
            }
        }
        failure
    }
}

/// Where each measured phase's Result goes: (cache policy, `archive` or `restore`, Result).
pub type PhaseSink<'a> = &'a mut dyn FnMut(CachePolicy, &str, RunResult) -> Result<()>;

/// The study in `dir` on this host with `make`'s engines: every phase's Result, in order.
#[cfg(test)]
fn run_collect(
    dir: &Path,
    plan: &BackupPlan,
    caches: &[CachePolicy],
    make: &MakeIssuer,
) -> Result<Vec<RunResult>> {
    let mut out = Vec::new();
    run_phases(
        dir,
        plan,
        caches,
        make,
        &Observe::default(),
        &mut |_, _, r| {
            out.push(r);
            Ok(())
        },
    )?;
    Ok(out)
}

/// The study on this host, each phase's Result to `sink` (the sweep's point metadata is the
/// caller's), with `observe` (e.g. device samples, `sar -d`) around each phase.
pub(crate) fn run_phases(
    dir: &Path,
    plan: &BackupPlan,
    caches: &[CachePolicy],
    make: &MakeIssuer,
    observe: &Observe,
    sink: PhaseSink<'_>,
) -> Result<()> {
    let tag = std::process::id();
    for p in remove_stale(dir) {
        eprintln!(
            "fsbench: removed {}, left by a backup study that was killed",
            p.display()
        );
    }
    crate::guard::ensure_free_space(dir, space_needed(plan), "the backup study")?;
    let root = dir.join(format!("{ROOT_PREFIX}{tag}"));
    let tree = root.join("tree");
    std::fs::create_dir(&root)
        .map_err(|e| crate::usage!("cannot create {}: {e}", root.display()))?;
    crate::safety::mark_created(&root);
    // create_dir succeeded, so the directory and everything in it is this run's.
    struct RemoveDir(PathBuf);
    impl Drop for RemoveDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _guard = RemoveDir(root.clone());
    let files = match build_tree(&tree, plan) {
        Err(_) if crate::runner::signal::interrupted() => return Ok(()),
        r => r?,
    };
    let tree_paths: Vec<PathBuf> = files.iter().map(|(n, _)| tree.join(n)).collect();
    let study = Study {
        root: &root,
        tree: &tree,
        files: &files,
        tree_paths: &tree_paths,
        record: plan.record,
        make,
    };
    let restore_dir = root.join("restore");
    for cache in caches {
        let Some(r) = study.archive_point(*cache, observe)? else {
            return Ok(());
        };
        let failed = !r.failures.is_empty();
        sink(*cache, "archive", r)?;
        if failed {
            let _ = std::fs::remove_file(study.archive_path());
            continue;
        }
        let Some(r) = study.restore_point(*cache, &restore_dir, observe)? else {
            return Ok(());
        };
        sink(*cache, "restore", r)?;
        let _ = std::fs::remove_dir_all(&restore_dir);
        let _ = std::fs::remove_file(study.archive_path());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::mock::Counting;
    use crate::engine::Built;

    #[test]
    fn archive_restore_roundtrip_buffered_and_direct() {
        let d = tempfile::tempdir().unwrap();
        let plan = BackupPlan {
            large: 300_001,
            small: vec![7_103, 0],
            record: ustar::PAX_RECORD,
        };
        let recs = run_collect(
            d.path(),
            &plan,
            &[CachePolicy::Buffered, CachePolicy::Direct],
            &sync_issuer(),
        )
        .unwrap();
        assert_eq!(recs.len(), 4);
        for r in &recs {
            let res = r;
            assert_eq!(res.status, RunStatus::Complete, "{:?}", res.failures);
            assert!(res.total.syscalls.read > 0 && res.total.syscalls.write > 0);
        }
        // Restore reads the archive one 32256-byte record per call.
        let restore = &recs[1];
        assert_eq!(restore.probes["verified"], serde_json::Value::Bool(true));
        assert_eq!(restore.kind, result::Kind::Backup);
        assert_eq!(restore.groups[0].name, "restore");
        assert_eq!(restore.groups[0].stats.ops, restore.total.ops);
        assert!(restore.job.is_none(), "a backup phase runs no Job");
        let b = restore.backup.as_ref().unwrap();
        assert_eq!((b.phase.as_str(), b.files.len()), ("restore", 3));
        assert_eq!(b.record_bytes, ustar::PAX_RECORD as u64);
        let archive_size = restore.plan.as_ref().unwrap().targets[0].size;
        assert_eq!(archive_size % ustar::PAX_RECORD as u64, 0);
        // Everything fsbench made is gone.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn phase_counts_are_the_engine_submissions() {
        let d = tempfile::tempdir().unwrap();
        let plan = BackupPlan {
            large: 200_003,
            small: vec![9_000, 1],
            record: ustar::PAX_RECORD,
        };
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let make: MakeIssuer = Arc::new(move |files, len| {
            let pool = BufferPool::new(tape::SLOTS, len, 0xbac)?;
            let counting = Counting::sync(files, pool, s2.clone());
            Ok(Issuer::new(Built::Boxed(Box::new(counting)), files, None))
        });
        let recs = run_collect(
            d.path(),
            &plan,
            &[CachePolicy::Buffered, CachePolicy::Direct],
            &make,
        )
        .unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_eq!((recs.len(), seen.len()), (4, 4), "one engine per phase");
        for (rec, s) in recs.iter().zip(&seen) {
            let r = rec;
            assert_eq!(r.status, RunStatus::Complete, "{:?}", r.failures);
            let (t, g) = (&r.total, &r.groups[0].stats);
            assert_eq!((t.syscalls.read, t.syscalls.write), (s.reads, s.writes));
            assert_eq!((t.read_ops, t.write_ops), (s.reads, s.writes));
            assert_eq!((t.syscalls.open, t.syscalls.close), (s.opens, s.closes));
            assert_eq!(t.syscalls.fsync, s.fsyncs);
            assert_eq!((g.read_ops, g.write_ops), (s.reads, s.writes));
            assert_eq!(s.misaligned, 0);
            assert!(t.elapsed_s > 0.0 && s.reads > 0 && s.writes > 0);
        }
        // The archive: 1 + 3 files opened and closed, one fsync, one write per record.
        let archive = &recs[0];
        let size = archive.plan.as_ref().unwrap().targets[0].size;
        assert_eq!((seen[0].opens, seen[0].closes, seen[0].fsyncs), (4, 4, 1));
        assert_eq!(seen[0].writes, size / ustar::PAX_RECORD as u64);
        // The restore reads the archive one record per call; direct mode opens each file twice.
        assert_eq!(seen[1].reads, size / ustar::PAX_RECORD as u64);
        assert_eq!((seen[1].opens, seen[3].opens), (4, 7));
        assert_eq!(seen[3].closes, 7);
    }
}
