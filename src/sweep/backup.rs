//! The backup study (seed 001): build a tree of one large file and two small ones, archive it
//! in ustar format with 32256-byte records to a file, restore it, under buffered and direct
//! I/O on the tree's files. Each phase reports elapsed, user and sys seconds, read and write
//! calls and calls per second (the article's `timex` and `tusc -c` figures); the restored tree
//! is compared byte for byte with the original.
//!
//! Like pax, the restore does not fsync the files it writes: buffered restores finish when the
//! data is in the page cache, direct ones when it is on the device. The archive itself is
//! written buffered and fsync'd inside the timed archive phase, standing in for the article's
//! raw backup disk.

use super::record::{Record, SweepMeta};
use super::ustar::{self, Entry, Kind, RecordWriter, BLOCK};
use crate::job::CachePolicy;
use crate::result::{self, BackupInfo, GroupReport, RunResult};
use crate::runner::target::{Plan, TargetKind, TargetPlan};
use crate::runner::{IoFailure, RunStatus};
use crate::stats::{cpu, Stats, StatsReport};
use anyhow::{anyhow, bail, Context, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Sizes of the tree and the record size, after scaling.
#[derive(Debug, Clone)]
pub struct BackupPlan {
    pub large: u64,
    pub small: Vec<u64>,
    pub record: usize,
}

/// Counts every read and write call and its latency.
#[derive(Default)]
struct Meter {
    stats: Stats,
}

impl Meter {
    fn pread(&mut self, f: &File, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
        let t = Instant::now();
        let n = f.read_at(buf, off)?;
        self.stats.lat.record(t.elapsed().as_nanos() as u64);
        self.stats.syscalls.read += 1;
        self.stats.read_ops += 1;
        self.stats.read_bytes += n as u64;
        Ok(n)
    }
    fn pwrite_all(&mut self, f: &File, mut buf: &[u8], mut off: u64) -> std::io::Result<()> {
        while !buf.is_empty() {
            let t = Instant::now();
            let n = f.write_at(buf, off)?;
            self.stats.lat.record(t.elapsed().as_nanos() as u64);
            self.stats.syscalls.write += 1;
            self.stats.write_ops += 1;
            self.stats.write_bytes += n as u64;
            if n == 0 {
                return Err(std::io::Error::other("write returned 0"));
            }
            buf = &buf[n..];
            off += n as u64;
        }
        Ok(())
    }
}

/// A page-aligned buffer for O_DIRECT.
fn aligned_buf(len: usize) -> Result<crate::engine::BufferPool> {
    Ok(crate::engine::BufferPool::new(1, len, 0xbac)?)
}

/// Ctrl-C stops the study within one record or one MiB: the caller sees this error, stores
/// nothing for the phase, and the guard removes the tree.
fn check_interrupt() -> Result<()> {
    if crate::runner::signal::interrupted() {
        bail!("interrupted");
    }
    Ok(())
}

/// Prefix of the per-run directory (`fsbench-backup-PID`).
const ROOT_PREFIX: &str = "fsbench-backup-";

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
pub fn space_needed(plan: &BackupPlan) -> u64 {
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
    let pool = aligned_buf(1 << 20)?;
    let mut chunk = pool.slot(0).to_vec();
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

fn open_tree_file(p: &Path, direct: bool, create: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    if create {
        o.write(true).create_new(true).mode(0o644);
    } else {
        o.read(true);
    }
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(p)
}

/// Archive `files` of `tree` (named `base/NAME` in the archive) into `archive`.
fn archive(
    tree: &Path,
    base: &str,
    files: &[(String, u64)],
    archive: &Path,
    direct: bool,
    record: usize,
    m: &mut Meter,
) -> Result<()> {
    let out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(archive)
        .with_context(|| format!("creating {}", archive.display()))?;
    m.stats.syscalls.open += 1;
    crate::safety::mark_created(archive);
    let mut wmeter = Meter::default();
    let mut aoff = 0u64;
    {
        let mut w = RecordWriter::new(record, |rec: &[u8]| {
            wmeter.pwrite_all(&out, rec, aoff)?;
            aoff += rec.len() as u64;
            Ok(())
        });
        w.push(&ustar::header(&Entry {
            name: base.into(),
            kind: Kind::Dir,
            size: 0,
            mode: 0o755,
            mtime: 0,
        })?)?;
        let pool = aligned_buf(record)?;
        let mut buf = pool.slot(0).to_vec();
        // The buffer must stay page-aligned for O_DIRECT: read into the pool, copy out.
        let mut pool = pool;
        for (name, size) in files {
            let p = tree.join(name);
            let f = open_tree_file(&p, direct, false).map_err(|e| {
                anyhow!(
                    "opening {}{}: {e}",
                    p.display(),
                    if direct { " with O_DIRECT" } else { "" }
                )
            })?;
            m.stats.syscalls.open += 1;
            w.push(&ustar::header(&Entry {
                name: format!("{base}/{name}"),
                kind: Kind::File,
                size: *size,
                mode: 0o644,
                mtime: 0,
            })?)?;
            let mut off = 0u64;
            while off < *size {
                check_interrupt()?;
                let slot = &mut pool.slot_mut(0)[..record];
                let n = m.pread(&f, slot, off)?;
                if n == 0 {
                    bail!("{} shrank while being archived", p.display());
                }
                let n = n.min((*size - off) as usize);
                buf[..n].copy_from_slice(&slot[..n]);
                w.push(&buf[..n])?;
                off += n as u64;
            }
            w.pad_block()?;
            drop(f);
            m.stats.syscalls.close += 1;
        }
        w.finish()?;
    }
    out.sync_all()?;
    m.stats.syscalls.fsync += 1;
    m.stats += &wmeter.stats;
    Ok(())
}

/// One restored file being written: an O_DIRECT descriptor (direct mode) plus a buffered
/// O_DSYNC one for the misaligned tail (the white paper's fallback rule), and a record-sized
/// staging buffer so each write call carries `record` bytes, like pax.
struct OutFile {
    direct: Option<File>,
    buffered: File,
    off: u64,
    left: u64,
    fill: usize,
}

fn flush_out(
    o: &mut OutFile,
    stage: &[u8],
    align: u64,
    m: &mut Meter,
    fallbacks: &mut u64,
) -> std::io::Result<()> {
    if o.fill == 0 {
        return Ok(());
    }
    let data = &stage[..o.fill];
    match (
        &o.direct,
        CachePolicy::Direct.route(o.off, o.fill as u64, align),
    ) {
        (Some(d), crate::job::Route::Direct) => m.pwrite_all(d, data, o.off)?,
        (Some(_), _) => {
            *fallbacks += 1;
            m.pwrite_all(&o.buffered, data, o.off)?
        }
        (None, _) => m.pwrite_all(&o.buffered, data, o.off)?,
    }
    o.off += o.fill as u64;
    o.fill = 0;
    Ok(())
}

/// Restore `archive` under `dest` (which must exist and be empty).
fn restore(archive: &Path, dest: &Path, direct: bool, record: usize, m: &mut Meter) -> Result<u64> {
    let a = File::open(archive).with_context(|| format!("opening {}", archive.display()))?;
    m.stats.syscalls.open += 1;
    let align = crate::runner::target::dio_alignment(dest);
    let mut rec = vec![0u8; record];
    let pool = aligned_buf(record)?;
    let mut pool = pool;
    let mut aoff = 0u64;
    let mut cur: Option<OutFile> = None;
    let mut fallbacks = 0u64;
    'records: loop {
        check_interrupt()?;
        let mut got = 0;
        while got < record {
            let n = m.pread(&a, &mut rec[got..], aoff + got as u64)?;
            if n == 0 {
                bail!("archive {} ends inside a record", archive.display());
            }
            got += n;
        }
        aoff += record as u64;
        let mut i = 0;
        while i < record {
            if let Some(o) = cur.as_mut() {
                let want = (o.left as usize).min(record - i);
                let stage = pool.slot_mut(0);
                let take = want.min(record - o.fill);
                stage[o.fill..o.fill + take].copy_from_slice(&rec[i..i + take]);
                o.fill += take;
                o.left -= take as u64;
                i += take;
                if o.fill == record || o.left == 0 {
                    flush_out(o, &stage[..record], align, m, &mut fallbacks)?;
                }
                if o.left == 0 {
                    cur = None;
                    m.stats.syscalls.close += if direct { 2 } else { 1 };
                    // Skip the padding to the next block.
                    i = i.div_ceil(BLOCK) * BLOCK;
                }
                continue;
            }
            let mut h = [0u8; BLOCK];
            h.copy_from_slice(&rec[i..i + BLOCK]);
            i += BLOCK;
            let Some(e) = ustar::parse_header(&h)? else {
                break 'records;
            };
            let p = dest.join(&e.name);
            match e.kind {
                Kind::Dir => {
                    std::fs::create_dir_all(&p)?;
                    m.stats.syscalls.other += 1;
                }
                Kind::File => {
                    let buffered = OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o644)
                        .custom_flags(if direct { libc::O_DSYNC } else { 0 })
                        .open(&p)
                        .with_context(|| format!("creating {}", p.display()))?;
                    m.stats.syscalls.open += 1;
                    let d = if direct {
                        m.stats.syscalls.open += 1;
                        Some(open_direct_write(&p)?)
                    } else {
                        None
                    };
                    let o = OutFile {
                        direct: d,
                        buffered,
                        off: 0,
                        left: e.size,
                        fill: 0,
                    };
                    if e.size > 0 {
                        cur = Some(o);
                    } else {
                        m.stats.syscalls.close += 1;
                    }
                }
            }
        }
    }
    m.stats.buffered_fallback_ops += fallbacks;
    Ok(fallbacks)
}

fn open_direct_write(p: &Path) -> Result<File> {
    OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(p)
        .map_err(|e| {
            anyhow!(
                "opening {} with O_DIRECT: {e} (does this file system support direct I/O?)",
                p.display()
            )
        })
}

/// Compare two files byte for byte.
fn same_contents(a: &Path, b: &Path) -> Result<bool> {
    let (fa, fb) = (File::open(a)?, File::open(b)?);
    if fa.metadata()?.len() != fb.metadata()?.len() {
        return Ok(false);
    }
    let (mut x, mut y) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    let mut off = 0u64;
    loop {
        let n = fa.read_at(&mut x, off)?;
        let k = fb.read_at(&mut y[..n.max(1)], off)?;
        if n == 0 {
            return Ok(k == 0);
        }
        if n != k || x[..n] != y[..n] {
            return Ok(false);
        }
        off += n as u64;
    }
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

fn timed<T>(f: impl FnOnce(&mut Meter) -> Result<T>) -> (Stats, Result<T>) {
    let mut m = Meter::default();
    let u0 = cpu::thread_usage();
    let t0 = Instant::now();
    let r = f(&mut m);
    m.stats.elapsed_s = t0.elapsed().as_secs_f64();
    m.stats.usage = cpu::thread_usage().since(&u0);
    (m.stats, r)
}

/// Run the study in `dir`: for each cache policy an archive point and a restore point.
/// `metas(cache, phase)` gives each record its sweep metadata.
pub fn run(
    dir: &Path,
    plan: &BackupPlan,
    caches: &[CachePolicy],
    mut meta: impl FnMut(CachePolicy, &str) -> SweepMeta,
    mut store: impl FnMut(Record) -> Result<()>,
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
    for cache in caches {
        let direct = cache.uses_direct();
        let archive_path = root.join("backup.tar");
        let restore_dir = root.join("restore");
        for p in &tree_paths {
            let _ = crate::runner::target::evict(p);
        }
        // Archive.
        let started = now_unix();
        let (stats, res) =
            timed(|m| archive(&tree, "tree", &files, &archive_path, direct, plan.record, m));
        let notes = vec![format!(
            "ustar archive of {} files in {}-byte records; tree files read {}",
            files.len(),
            plan.record,
            if direct {
                "with O_DIRECT"
            } else {
                "through the page cache"
            }
        )];
        if crate::runner::signal::interrupted() {
            return Ok(());
        }
        let failure = res.as_ref().err().map(|e| format!("{e:#}"));
        let r = phase_result(
            &format!("backup archive {}", cache.name()),
            "archive",
            *cache,
            plan.record,
            &archive_path,
            &tree_paths,
            stats,
            failure.clone(),
            started,
            notes,
        );
        store(Record::run(meta(*cache, "archive"), r))?;
        if failure.is_some() {
            let _ = std::fs::remove_file(&archive_path);
            continue;
        }
        // Restore.
        let _ = crate::runner::target::evict(&archive_path);
        std::fs::create_dir(&restore_dir)?;
        let started = now_unix();
        let (stats, res) = timed(|m| restore(&archive_path, &restore_dir, direct, plan.record, m));
        if crate::runner::signal::interrupted() {
            return Ok(());
        }
        let mut failure = res.as_ref().err().map(|e| format!("{e:#}"));
        let mut notes = vec!["restored files are not fsync'd, like pax".to_string()];
        if let Ok(n) = res {
            if n > 0 {
                notes.push(format!(
                    "{n} misaligned direct writes done as O_DSYNC buffered writes"
                ));
            }
        }
        if failure.is_none() {
            // Verify, untimed.
            for (name, _) in &files {
                let (a, b) = (tree.join(name), restore_dir.join("tree").join(name));
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
        }
        let verified = failure.is_none();
        notes.push(if verified {
            "restored tree verified byte-identical".into()
        } else {
            "restored tree NOT verified".into()
        });
        let mut r = phase_result(
            &format!("backup restore {}", cache.name()),
            "restore",
            *cache,
            plan.record,
            &archive_path,
            &tree_paths,
            stats,
            failure,
            started,
            notes,
        );
        r.probes
            .insert("verified".into(), serde_json::Value::Bool(verified));
        store(Record::run(meta(*cache, "restore"), r))?;
        let _ = std::fs::remove_dir_all(&restore_dir);
        let _ = std::fs::remove_file(&archive_path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_restore_roundtrip_buffered_and_direct() {
        let d = tempfile::tempdir().unwrap();
        let plan = BackupPlan {
            large: 300_001,
            small: vec![7_103, 0],
            record: ustar::PAX_RECORD,
        };
        let mut recs = Vec::new();
        run(
            d.path(),
            &plan,
            &[CachePolicy::Buffered, CachePolicy::Direct],
            |c, ph| SweepMeta {
                study: "backup".into(),
                point: vec![("cache".into(), c.name()), ("phase".into(), ph.into())],
                ..Default::default()
            },
            |r| {
                recs.push(r);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(recs.len(), 4);
        for r in &recs {
            let res = r.result().unwrap();
            assert_eq!(res.status, RunStatus::Complete, "{:?}", res.failures);
            assert!(res.total.syscalls.read > 0 && res.total.syscalls.write > 0);
        }
        // Restore reads the archive one 32256-byte record per call.
        let restore = recs[1].result().unwrap();
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
}
