//! Target preparation, before anything is timed: create missing files at the size the job
//! needs (fixing vxbench's pitfalls), apply extent size hints and reservations, lay out data to
//! read, refuse what would destroy data, and remember what fsbench created so it is removed.

use super::mark::{fd_is_marked, open_existing, set_blocking, target_flags, FileId};
use crate::job::{Access, CachePolicy, Job};
use crate::safety;
use crate::{bail_usage, usage};
use anyhow::{Context, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

pub use crate::result::{Plan, RankPart, TargetKind, TargetPlan};

fn needs_data(job: &Job) -> bool {
    // Everything but a plain sequential write reads or overwrites existing data; the space
    // engines (falloc, ftruncate) never read or write the file's bytes: the file is only
    // sized (sparse, in pass two), so their effect is all that is allocated.
    if job.engine.changes_space() {
        return false;
    }
    !(job.access == Access::Write && job.engine != crate::job::EngineKind::Mmap)
        || matches!(job.cache, CachePolicy::Concurrent)
}

fn writes(job: &Job) -> bool {
    // A space engine's reads allocate too (fallocate KEEP_SIZE).
    job.access.read_pct(job.read_pct) < 100 || job.engine.changes_space()
}

/// Direct-I/O alignment of a path: statx STATX_DIOALIGN, else the device's logical block
/// size, else 512.
pub(crate) fn dio_alignment(path: &Path) -> u64 {
    use rustix::fs::{statx, AtFlags, StatxFlags, CWD};
    if let Some(a) = statx(CWD, path, AtFlags::empty(), StatxFlags::DIOALIGN)
        .ok()
        .and_then(|sx| dio_offset_align(&sx))
    {
        return a;
    }
    if let Some(dev) = crate::probe::sysfs_block_dir(path) {
        if let Ok(s) = std::fs::read_to_string(dev.join("queue/logical_block_size")) {
            if let Ok(v) = s.trim().parse::<u64>() {
                return v.max(1);
            }
        }
    }
    512
}

/// Size of a block device in bytes.
pub fn block_device_size(f: &File) -> Result<u64> {
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 into `size`.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64 as _, &mut size) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("BLKGETSIZE64");
    }
    Ok(size)
}

pub(crate) use super::space::PrepError;

fn prep_err(path: &Path, offset: Option<u64>, message: String) -> anyhow::Error {
    PrepError {
        path: path.to_path_buf(),
        offset,
        message,
    }
    .into()
}

/// One target held open (and locked) for the whole run.
pub(crate) struct Held {
    pub path: PathBuf,
    /// The descriptor opened in prepare; its flock keeps a second run off the target.
    pub file: File,
    pub id: FileId,
    /// Created by this run (or, for a target its group shares, by the group).
    pub created: bool,
    /// The group's hold, when sibling runs share this target: `file` is a duplicate of the
    /// group's descriptor, and the last run to release it removes it.
    pub share: Option<std::sync::Arc<super::share::SharedTarget>>,
}

/// Every target this run holds, and which of them it created: the created ones are removed
/// at the end unless kept, and only while their path still names the file that was created.
pub(crate) struct Cleanup {
    pub held: Vec<Held>,
    pub keep: bool,
    /// Also remove fsbench-marked (or, with --force, any) files that this run did not create.
    pub remove_existing: bool,
    pub force: bool,
    done: bool,
}

impl Cleanup {
    pub(crate) fn new(job: &Job) -> Cleanup {
        Cleanup {
            held: Vec::new(),
            keep: job.keep,
            remove_existing: job.remove,
            force: job.force,
            done: false,
        }
    }

    /// (device, inode) of every target, in target order.
    pub(crate) fn ids(&self) -> Vec<FileId> {
        self.held.iter().map(|h| h.id).collect()
    }

    /// Remove what should be removed, release the locks, and say (also on stderr) what could
    /// not be removed and why.
    pub(crate) fn finish(&mut self) -> Vec<String> {
        if self.done {
            return Vec::new();
        }
        self.done = true;
        let mut notes = Vec::new();
        for h in self.held.drain(..) {
            let wanted = if h.created {
                !self.keep || self.remove_existing
            } else {
                self.remove_existing
                    && h.file.metadata().map(|m| m.is_file()).unwrap_or(false)
                    && (fd_is_marked(&h.file) || self.force)
            };
            if let Some(s) = &h.share {
                // The group's: removed (or kept) by the last run that uses it.
                s.release(wanted, &mut notes);
                continue;
            }
            if !wanted {
                if h.created {
                    // Kept on request: no later run is to remove it as a killed run's.
                    crate::leftover::clear_run(&h.file);
                }
                continue;
            }
            remove_if_same(&h.path, h.id, &mut notes);
            // The lock is released only now, after the removal.
            drop(h);
        }
        for n in &notes {
            super::say(&format!("fsbench: note: {n}"));
        }
        notes
    }
}

/// Remove `path` if it still names the file `id`; a note when it does not or cannot be
/// removed.
pub(crate) fn remove_if_same(path: &Path, id: FileId, notes: &mut Vec<String>) {
    match FileId::of_path(path) {
        Ok(now) if now == id => {
            if let Err(e) = std::fs::remove_file(path) {
                notes.push(format!("could not remove {}: {e}", path.display()));
            }
        }
        Ok(_) => notes.push(format!(
            "left {}: it no longer names the file fsbench created (it was replaced during the run)",
            path.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => notes.push(format!("could not remove {}: {e}", path.display())),
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Prepare every target. The returned `Cleanup` holds them (locked) and removes created
/// files when finished or dropped. On an error nothing this run created is left behind, even
/// with --keep: a refused or failed preparation keeps no half-made target.
pub(crate) fn prepare(job: &Job) -> Result<(Plan, Cleanup)> {
    prepare_watched(job, None, None, None)
}

/// [`prepare`] for a run that covers `part` of a shared target (None: all of every target),
/// showing the bytes laid out on `board` (the run's live line) when given, and sharing with
/// its sibling runs the targets `group` holds for them.
pub(crate) fn prepare_watched(
    job: &Job,
    part: Option<RankPart>,
    board: Option<&super::live::Board>,
    group: Option<&super::share::GroupTargets>,
) -> Result<(Plan, Cleanup)> {
    let mut cleanup = Cleanup::new(job);
    if job.engine == crate::job::EngineKind::Null {
        return Ok((null_plan(job)?, cleanup));
    }
    // Siblings sharing a target prepare one at a time (also releasing it on failure).
    let _turn = match group {
        Some(g) => g.turn(job)?,
        None => None,
    };
    match prepare_into(job, part, &mut cleanup, board, group) {
        Ok(plan) => Ok((plan, cleanup)),
        Err(e) => {
            cleanup.keep = false;
            cleanup.remove_existing = false;
            cleanup.finish();
            Err(e)
        }
    }
}

/// The plan of a null-engine run: the targets as named, never opened, created or written,
/// each as large as the job says (the validated Job always says: `Job::check_null`).
fn null_plan(job: &Job) -> Result<Plan> {
    let size = job
        .needed_file_size()
        .ok_or_else(|| usage!("--engine null needs --size or --count"))?;
    let targets = job
        .targets
        .iter()
        .map(|path| TargetPlan {
            path: path.clone(),
            kind: TargetKind::File,
            size,
            created: false,
            dio_align: 1,
            reserved: None,
        })
        .collect();
    Ok(Plan {
        targets,
        cache: job.cache,
        notes: std::iter::once(
            "engine null: every I/O completed at once without a system call; the targets were not opened".into(),
        )
        .chain(ramp_note(job))
        .collect(),
        part: None,
    })
}

/// What pass one found out about a file target, before anything is modified.
struct Opened {
    idx: usize,
    existed: bool,
    ours: bool,
    len: u64,
    allocated: u64,
    size: u64,
    /// Size after -o trunc and a size-changing reservation.
    len_after: u64,
    lay_out_to: Option<u64>,
}

fn prepare_into(
    job: &Job,
    part: Option<RankPart>,
    cleanup: &mut Cleanup,
    board: Option<&super::live::Board>,
    group: Option<&super::share::GroupTargets>,
) -> Result<Plan> {
    let mut notes = Vec::new();
    let mut cache = job.cache;
    let mut slots: Vec<Option<TargetPlan>> = Vec::with_capacity(job.targets.len());
    let mut files: Vec<Opened> = Vec::new();
    // Pass one: open (or create) and lock every target and check it through its descriptor.
    // Nothing is modified yet, so a refusal of a later target changes no earlier one.
    for (i, path) in job.targets.iter().enumerate() {
        if job.targets[..i].contains(path) {
            bail_usage!(
                "target {} is named twice: give each user its own file, or use nthreads for several threads on one file",
                path.display()
            );
        }
        let opened = match group.and_then(|g| g.find(path)) {
            Some(s) => open_shared(job, part, path, s, cleanup, &mut notes, &mut cache),
            None => open_one(job, part, path, cleanup, &mut notes, &mut cache),
        };
        match opened? {
            Some(device) => slots.push(Some(device)),
            None => {
                files.push(check_file(
                    job,
                    part,
                    cleanup.held.len() - 1,
                    cleanup,
                    &mut notes,
                )?);
                slots.push(None);
            }
        }
    }
    // Free space, per file system, for what the job will newly write.
    let mut by_fs: Vec<(u64, PathBuf, u64)> = Vec::new();
    for o in &files {
        let h = &cleanup.held[o.idx];
        let bytes = new_bytes(job, o);
        let dir = match h.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        match by_fs.iter_mut().find(|(dev, _, _)| *dev == h.id.dev) {
            Some(e) => e.2 = e.2.saturating_add(bytes),
            None => by_fs.push((h.id.dev, dir, bytes)),
        }
    }
    for (_, dir, bytes) in &by_fs {
        if *bytes > 0 {
            crate::guard::ensure_free_space(
                dir,
                *bytes,
                "the job (file layout, reservation and writes past the end of the files)",
            )?;
        }
    }
    // Pass two: modify through the descriptors.
    let mut fi = files.into_iter();
    let mut targets = Vec::with_capacity(slots.len());
    for slot in slots {
        match slot {
            Some(t) => targets.push(t),
            None => {
                let o = fi.next().expect("one Opened per file target");
                targets.push(lay_out_one(job, &cleanup.held[o.idx], &o, board)?);
            }
        }
    }
    if part.is_none() {
        notes.extend(targets.iter().filter_map(|t| shared_blocks_note(job, t)));
    }
    notes.extend(ramp_note(job));
    notes.extend(verify_shape_note(job));
    Ok(Plan {
        targets,
        cache,
        notes,
        part,
    })
}

/// `--verify` with a data shape: how much of each block the header takes, and what the
/// check can then say.
fn verify_shape_note(job: &Job) -> Option<String> {
    if !(job.verifying() && job.shapes_data()) {
        return None;
    }
    let header = crate::verify::block::HEADER_BYTES as u64;
    Some(format!(
        "verify with a data shape: each block's first {header} bytes are its verify header (identity, generation, CRC32C of the block), the shape fills the other {} bytes; a changed or torn block is found by its CRC, without naming the changed byte",
        job.block_size.saturating_sub(header)
    ))
}

/// What `--ramp` left out, said in the Result so that its figures are read for what they are.
fn ramp_note(job: &Job) -> Option<String> {
    let counted = if job.io_count.is_some() || job.time_s.is_none() {
        "; the warm-up's I/Os count toward the I/O count"
    } else {
        ""
    };
    if let Some(b) = job.ramp_bytes.filter(|b| *b > 0) {
        return Some(format!(
            "warm-up: each thread's first {} moved ({b} bytes, up to the I/O that moved the last of them; --ramp-bytes) ran but is left out of these figures{counted}",
            crate::units::format_size_exact(b)
        ));
    }
    let r = job.ramp_s.filter(|r| *r > 0.0)?;
    Some(format!(
        "warm-up: the first {} of each thread's I/O ran but is left out of these figures{counted}",
        if r < 1.0 {
            format!("{:.0} ms", r * 1000.0)
        } else {
            crate::units::format_duration(r)
        }
    ))
}

/// A one-pass job whose threads outnumber the I/Os the target holds: each thread still does
/// one I/O, so threads share blocks and the run moves more than the target's size. Said in the
/// Result, because a suite's scaled-down file size makes this happen without anyone asking.
fn shared_blocks_note(job: &Job, t: &TargetPlan) -> Option<String> {
    let threads = u64::from(job.threads);
    if job.io_count.is_some() || job.time_s.is_some() || threads <= 1 {
        return None;
    }
    let blocks = t.size / job.block_size.max(1);
    if blocks >= threads {
        return None;
    }
    let moved = threads
        .saturating_mul(job.block_size)
        .saturating_mul(u64::from(job.repeats.max(1)));
    Some(format!(
        "{}: threads share blocks: the {} target holds {} I/O(s) of {} but each of the {} threads does one, so the run moves {} instead of the target's size",
        t.path.display(),
        crate::units::format_size_exact(t.size),
        blocks,
        crate::units::format_size_exact(job.block_size),
        threads,
        crate::units::format_size_exact(moved)
    ))
}

/// Open a target without following a symbolic link (unless --force), creating it with
/// O_CREAT|O_EXCL when missing, lock it, and check its type through the descriptor. Returns
/// the plan of a block device, or None for a file (held as the last entry of `cleanup`).
fn open_one(
    job: &Job,
    part: Option<RankPart>,
    path: &Path,
    cleanup: &mut Cleanup,
    notes: &mut Vec<String>,
    cache: &mut CachePolicy,
) -> Result<Option<TargetPlan>> {
    let follow = job.force;
    let mut created = false;
    let mut marked = false;
    let mut attempt = 0;
    let file = loop {
        attempt += 1;
        let opened = match open_existing(path, true, follow) {
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EACCES)
                        | Some(libc::EROFS)
                        | Some(libc::EPERM)
                        | Some(libc::ETXTBSY)
                ) =>
            {
                // Read-only access may still be all the job needs; checked below.
                open_existing(path, false, follow)
            }
            r => r,
        };
        match opened {
            Ok(f) => break f,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) && !follow => bail_usage!(
                "{} is a symbolic link: name the file itself (fsbench does not follow links to targets), or add --force",
                path.display()
            ),
            Err(e) if e.raw_os_error() == Some(libc::EISDIR) => bail_usage!(
                "{} is a directory: name a file inside it (fsbench creates it)",
                path.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match crate::leftover::create_marked(path) {
                Ok((f, m)) => {
                    created = true;
                    // Marked and recorded as this run's before it had a name: a run killed
                    // at any moment leaves nothing or a file the next run can take over.
                    marked = m;
                    break f;
                }
                // Someone created it between the two calls (or a dangling link is there): look again.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 3 => {
                    continue
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => bail_usage!(
                    "cannot create {}: {e} (a dangling symbolic link or a file that keeps appearing is there)",
                    path.display()
                ),
                Err(e) => bail_usage!("cannot create {}: {e}", path.display()),
            },
            Err(e) => bail_usage!("cannot open {}: {e}", path.display()),
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| usage!("cannot stat {}: {e}", path.display()))?;
    let ft = meta.file_type();
    if meta.is_dir() {
        bail_usage!(
            "{} is a directory: name a file inside it (fsbench creates it)",
            path.display()
        );
    }
    if !meta.is_file() && !ft.is_block_device() {
        bail_usage!("{} is not a regular file or block device", path.display());
    }
    set_blocking(&file);
    let id = FileId::of(&file)?;
    // Lock before anything else is done with it: a second run is refused, naming us. Of the
    // ranks of a distributed run that share one file, rank 0 holds the exclusive lock for the
    // whole run; the others open the file only once rank 0 has it, and lock nothing.
    match part {
        Some(p) if p.shared && !p.run_lock => {}
        _ => crate::guard::lock_exclusive(&file, path)?,
    }
    cleanup.held.push(Held {
        path: path.to_path_buf(),
        file,
        id,
        created,
        share: None,
    });
    // The path must still name what we opened and locked (a concurrent run may have removed
    // it between our open and our lock).
    if !follow && FileId::of_path(path).ok() != Some(id) {
        bail_usage!(
            "{} changed while it was being opened (removed or replaced by another process); try again",
            path.display()
        );
    }
    if created {
        if !marked {
            notes.push(format!(
                "{}: the file system has no user extended attributes, so a kept file cannot be recognised as fsbench's later",
                path.display()
            ));
        }
    } else if meta.is_file() && !part.is_some_and(|p| p.shared && !p.run_lock) {
        // A file a killed run created and never meant to keep: this run takes it over and
        // removes it when done (unless kept), as if it had created it. (A shared file is
        // taken over by rank 0 alone, which removes it after every rank's I/O.)
        let h = cleanup.held.last_mut().expect("just pushed");
        if let Some(pid) = crate::leftover::left_by_dead_run_fd(&h.file) {
            h.created = true;
            crate::leftover::set_run(&h.file);
            let note = format!(
                "{}: left by a run of fsbench (pid {pid}) that was killed; this run removes it when done",
                path.display()
            );
            super::say(&format!("fsbench: note: {note}"));
            notes.push(note);
        }
    }
    if ft.is_block_device() {
        let h = cleanup.held.last().expect("just pushed");
        return prepare_device(job, path, &h.file, notes, cache).map(Some);
    }
    Ok(None)
}

/// [`open_one`] for a target the run's group holds for several runs: the first to come opens
/// and locks it and makes its descriptor the group's; the others take a duplicate of that
/// descriptor (the same open file and lock) and check that the path still names its inode.
fn open_shared(
    job: &Job,
    part: Option<RankPart>,
    path: &Path,
    shared: &std::sync::Arc<super::share::SharedTarget>,
    cleanup: &mut Cleanup,
    notes: &mut Vec<String>,
    cache: &mut CachePolicy,
) -> Result<Option<TargetPlan>> {
    let Some((file, id, created)) = shared.take()? else {
        let opened = open_one(job, part, path, cleanup, notes, cache);
        // open_one holds the target once it has locked it, also when it refuses it later.
        if let Some(h) = cleanup
            .held
            .last_mut()
            .filter(|h| h.path == path && h.share.is_none())
        {
            shared.adopt(&h.file, h.id, h.created)?;
            h.share = Some(shared.clone());
        }
        return opened;
    };
    let meta = file
        .metadata()
        .map_err(|e| usage!("cannot stat {}: {e}", path.display()))?;
    cleanup.held.push(Held {
        path: path.to_path_buf(),
        file,
        id,
        created,
        share: Some(shared.clone()),
    });
    if !job.force && FileId::of_path(path).ok() != Some(id) {
        bail_usage!(
            "{} changed while the jobs sharing it were being prepared (removed or replaced by another process); try again",
            path.display()
        );
    }
    if meta.file_type().is_block_device() {
        let h = cleanup.held.last().expect("just pushed");
        return prepare_device(job, path, &h.file, notes, cache).map(Some);
    }
    Ok(None)
}

/// Pass one for a file: decide what will be done, refusing what must not be, from the
/// descriptor alone.
fn check_file(
    job: &Job,
    part: Option<RankPart>,
    idx: usize,
    cleanup: &Cleanup,
    notes: &mut Vec<String>,
) -> Result<Opened> {
    let h = &cleanup.held[idx];
    let path = h.path.as_path();
    if job.cache == CachePolicy::Raw {
        bail_usage!(
            "cache policy raw needs a block device target; {} is a file (use direct)",
            path.display()
        );
    }
    let meta = h.file.metadata()?;
    let existed = !h.created;
    let ours =
        existed && (fd_is_marked(&h.file) || part.and_then(|p| p.created_ino) == Some(h.id.ino));
    let needed = job.needed_file_size();
    let current = meta.len();
    let will_write = writes(job)
        || job.open.trunc
        || job.space.reservation.is_some()
        || job.space.extsize.is_some()
        || job.remove
        || needed.is_some_and(|n| n > current && (!existed || ours || job.force));
    if existed && !ours && will_write && !job.force {
        bail_usage!(
            "refusing to modify {}: it exists and was not created by fsbench; name a new file, or add --force to allow writing to it",
            path.display()
        );
    }
    let writable = fd_writable(&h.file);
    if (will_write || needed.is_some_and(|n| n > current)) && !writable {
        let why = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(target_flags(job.force))
            .open(path)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "permission denied".into());
        bail_usage!("cannot open {} for writing: {why}", path.display());
    }
    // A hint the file system cannot keep is refused now, before -o trunc or anything else
    // touches the file.
    if let Some(ext) = job.space.extsize {
        crate::runner::space::check_extsize(&h.file, path, ext)?;
    }
    let mut len_after = if job.open.trunc { 0 } else { current };
    if let (Some(r), true) = (job.space.reservation, job.space.flags.chgsiz) {
        len_after = len_after.max(r);
    }
    let size = match needed {
        Some(n) => n,
        None if job.space.flags.chgsiz => len_after,
        None if len_after > 0 => len_after,
        None => bail_usage!(
            "{} is empty and the job names no size: give a file size or an I/O count",
            path.display()
        ),
    };
    if job.mixed_sizes() && size < job.io_size() && !job.space.reserve_only {
        bail_usage!(
            "{} holds {} bytes, less than one I/O of {}: give a larger --size or smaller I/O sizes",
            path.display(),
            size,
            job.io_size()
        );
    }
    if job.space.flags.noextend {
        let limit = job.space.reservation.unwrap_or(len_after).max(len_after);
        if size > limit {
            bail_usage!(
                "-f noextend: the job writes up to {} bytes of {} but the file is limited to {} bytes",
                size,
                path.display(),
                limit
            );
        }
    }
    let mut size = size;
    let mut lay_out_to = None;
    if !job.space.reserve_only && needs_data(job) && len_after < size {
        if existed && !ours && !job.force {
            // Read-only use of a foreign file: stay inside it, never read past its end.
            if len_after < job.io_size() {
                bail_usage!(
                    "{} has {} bytes, less than one I/O of {}: it was not created by fsbench, so it is not extended without --force",
                    path.display(),
                    len_after,
                    job.io_size()
                );
            }
            notes.push(format!(
                "{}: only {} bytes exist (wanted {}); offsets stay inside the file",
                path.display(),
                len_after,
                size
            ));
            size = len_after;
        } else {
            lay_out_to = Some(size);
        }
    }
    Ok(Opened {
        idx,
        existed,
        ours,
        len: current,
        allocated: meta.blocks().saturating_mul(512),
        size,
        len_after,
        lay_out_to,
    })
}

fn fd_writable(f: &File) -> bool {
    use rustix::fs::OFlags;
    rustix::fs::fcntl_getfl(f).is_ok_and(|fl| (fl & OFlags::ACCMODE) != OFlags::RDONLY)
}

/// Bytes the job will newly allocate in a file: its layout, its reservation, and what its
/// writes add past the end of the file. They overlap (all start at offset 0), so the largest.
fn new_bytes(job: &Job, o: &Opened) -> u64 {
    let sparse = job.access.is_random()
        && job.space.truncup.is_some()
        && !matches!(job.cache, CachePolicy::Concurrent);
    let mut n = 0;
    if let Some(to) = o.lay_out_to {
        if !sparse {
            n = to.saturating_sub(o.len_after);
        }
    }
    if let Some(r) = job.space.reservation {
        n = n.max(r.saturating_sub(o.allocated));
    }
    if writes(job) && !job.space.reserve_only {
        let past_eof = if sparse {
            // Random writes into a sparse file fill at most what they write.
            job.io_count
                .map(|c| {
                    c.saturating_mul(job.io_size())
                        .saturating_mul(job.threads as u64)
                })
                .unwrap_or(o.size)
                .min(o.size)
        } else {
            o.size.saturating_sub(o.len_after)
        };
        n = n.max(past_eof);
    }
    let _ = (o.existed, o.ours, o.len);
    n
}

/// Pass two for a file: truncate, set hints, reserve and lay out, all through the descriptor.
fn lay_out_one(
    job: &Job,
    h: &Held,
    o: &Opened,
    board: Option<&super::live::Board>,
) -> Result<TargetPlan> {
    let path = h.path.as_path();
    let file = &h.file;
    if job.open.trunc && o.existed {
        file.set_len(0)
            .map_err(|e| prep_err(path, Some(0), format!("truncating: {e}")))?;
    }
    if let Some(ext) = job.space.extsize {
        crate::runner::space::set_extsize(file, path, ext)?;
    }
    let mut reserved = None;
    if let Some(r) = job.space.reservation {
        crate::runner::space::reserve(file, path, r, &job.space)?;
        reserved = Some(r);
    }
    let size = o.size;
    if let Some(to) = o.lay_out_to {
        let len_now = file
            .metadata()
            .map_err(|e| prep_err(path, None, format!("fstat: {e}")))?
            .len();
        if len_now < to {
            if job.access.is_random()
                && job.space.truncup.is_some()
                && !matches!(job.cache, CachePolicy::Concurrent)
            {
                // vxbench truncup: a sparse file of the initial size.
                file.set_len(to)
                    .map_err(|e| prep_err(path, Some(len_now), format!("extending: {e}")))?;
            } else {
                if matches!(job.cache, CachePolicy::Concurrent) {
                    crate::runner::space::preallocate(file, path, to)?;
                }
                lay_out(file, path, len_now, to, job, board)?;
            }
        }
    }
    if job.engine.changes_space() && !job.space.reserve_only {
        // Sized as fio sizes its files before a falloc or ftruncate job, but sparse: what is
        // allocated afterwards is what the job allocated. (A foreign file is never reached
        // here without --force: these engines always modify.)
        let len_now = file.metadata()?.len();
        if len_now < size {
            file.set_len(size)
                .map_err(|e| prep_err(path, Some(len_now), format!("extending: {e}")))?;
        }
    }
    if !job.space.reserve_only && matches!(job.cache, CachePolicy::Concurrent) {
        let len_now = file.metadata()?.len();
        if len_now < size {
            lay_out(file, path, len_now, size, job, board)?;
        }
    }
    let dio_align = dio_alignment_fd(file).unwrap_or_else(|| dio_alignment(path));
    Ok(TargetPlan {
        path: path.to_path_buf(),
        kind: TargetKind::File,
        size,
        created: h.created,
        dio_align,
        reserved,
    })
}

/// Direct-I/O alignment of an open file (statx on the descriptor).
fn dio_alignment_fd(f: &File) -> Option<u64> {
    use rustix::fs::{statx, AtFlags, StatxFlags};
    statx(f, c"", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN)
        .ok()
        .and_then(|sx| dio_offset_align(&sx))
}

/// The direct-I/O file-offset alignment a statx reported, when the file system reported one
/// (STATX_DIOALIGN in the mask: Linux 6.1 and later; 0 means no direct I/O).
fn dio_offset_align(sx: &rustix::fs::Statx) -> Option<u64> {
    (sx.stx_mask & rustix::fs::StatxFlags::DIOALIGN.bits() != 0 && sx.stx_dio_offset_align > 0)
        .then_some(sx.stx_dio_offset_align as u64)
}

/// Write data over [from, to) in 1 MiB writes, then fsync: reads then find real blocks.
fn lay_out(
    file: &File,
    path: &Path,
    from: u64,
    to: u64,
    job: &Job,
    board: Option<&super::live::Board>,
) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let seed = job.seed ^ 0x1a70;
    // With shaped data (`--buffer-compress`, `--dedupe`, `--buffer-pattern`) the layout is
    // made of the same blocks as the writes, so the blocks a random run never writes hold
    // what was asked too; whole blocks, so a buffer of at least one.
    let place = crate::engine::shaped::FillPlace {
        file_size: to,
        thread: 0,
        threads: 1,
    };
    let mut fill = crate::engine::shaped::DataFill::for_job(job, seed, place);
    let bs = job.io_size().max(1) as usize;
    let len = if fill.is_some() {
        bs.max(1 << 20)
    } else {
        1 << 20
    };
    let mut pool = crate::engine::BufferPool::new(1, len, seed)?;
    let buf = pool.slot_mut(0);
    // The live line shows the bytes laid out (when a run is watched).
    if let Some(b) = board {
        b.layout_total.fetch_add(to - from, Ordering::Relaxed);
    }
    let mut off = from;
    while off < to {
        let n = ((to - off) as usize).min(buf.len());
        if let Some(f) = fill.as_mut() {
            for block in buf[..n].chunks_mut(bs) {
                f.fill(block);
            }
        }
        file.write_all_at(&buf[..n], off).map_err(|e| {
            let what = if e.raw_os_error() == Some(libc::ENOSPC) {
                format!("laying out the file: file system full (ENOSPC): {e}")
            } else {
                format!("laying out the file: {e}")
            };
            prep_err(path, Some(off), what)
        })?;
        off += n as u64;
        if let Some(b) = board {
            b.layout_done.fetch_add(n as u64, Ordering::Relaxed);
        }
    }
    file.sync_all()
        .map_err(|e| prep_err(path, None, format!("fsync after laying out: {e}")))?;
    Ok(())
}

fn prepare_device(
    job: &Job,
    path: &Path,
    f: &File,
    notes: &mut Vec<String>,
    cache: &mut CachePolicy,
) -> Result<TargetPlan> {
    if job.engine.changes_space() {
        bail_usage!(
            "--engine {} changes a file's space, and {} is a block device: use a file (fio's engine takes files only too)",
            job.engine.name(),
            path.display()
        );
    }
    if writes(job) && !job.force {
        // Through the descriptor opened (O_NOFOLLOW) and locked in pass one: the path may
        // name another device by now.
        if let Some(why) = safety::block_device_hazard_fd(f) {
            bail_usage!(
                "refusing to write to block device {}: {why}; add --force to destroy its contents",
                path.display()
            );
        }
    }
    if job.space.reservation.is_some() || job.space.extsize.is_some() || job.open.trunc {
        bail_usage!(
            "-e, -r and -o trunc apply to files, not to block device {}",
            path.display()
        );
    }
    let dev_size = block_device_size(f)?;
    let size = job.needed_file_size().unwrap_or(dev_size);
    if size > dev_size {
        bail_usage!(
            "block device {} has {} bytes; the job needs {}",
            path.display(),
            dev_size,
            size
        );
    }
    if *cache == CachePolicy::Buffered {
        *cache = CachePolicy::Raw;
        notes.push(format!(
            "{} is a block device: raw I/O (O_DIRECT on the device)",
            path.display()
        ));
    }
    Ok(TargetPlan {
        path: path.to_path_buf(),
        kind: TargetKind::BlockDevice,
        size,
        created: false,
        dio_align: device_sector_size(f).unwrap_or_else(|| dio_alignment(path)),
        reserved: None,
    })
}

/// Logical sector size of an open block device (BLKSSZGET): its direct-I/O alignment.
fn device_sector_size(f: &File) -> Option<u64> {
    rustix::fs::ioctl_blksszget(f)
        .ok()
        .filter(|&sz| sz > 0)
        .map(u64::from)
}

/// Evict a target's cached pages (fadvise DONTNEED), after writing back dirty ones.
pub(crate) fn evict(path: &Path) -> Result<()> {
    let f = File::open(path)?;
    let _ = f.sync_data();
    // Offset 0, no length: the whole file.
    let _ = rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed);
    Ok(())
}

/// Evict an open target's cached pages, after writing back dirty ones.
pub(crate) fn evict_file(f: &File) {
    let _ = f.sync_data();
    // Offset 0, no length: the whole file.
    let _ = rustix::fs::fadvise(f, 0, None, rustix::fs::Advice::DontNeed);
}

/// `--drop-cache`: evict every target and, when root, drop the global page cache.
pub(crate) fn drop_caches(paths: &[PathBuf], notes: &mut Vec<String>) {
    for p in paths {
        let _ = evict(p);
    }
    rustix::fs::sync();
    match std::fs::write("/proc/sys/vm/drop_caches", "3\n") {
        Ok(()) => notes.push("dropped the global page cache".into()),
        Err(_) => notes.push("not root: evicted the targets' pages only".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(dir: &Path) -> Job {
        Job {
            targets: vec![dir.join("t")],
            access: Access::Write,
            io_count: Some(4),
            block_size: 4096,
            ..Default::default()
        }
    }

    #[test]
    fn cleanup_leaves_a_path_that_names_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let j = job(dir.path());
        let (_plan, mut cleanup) = prepare(&j).unwrap();
        let t = dir.path().join("t");
        // The created file is swapped for someone else's between the run and the cleanup.
        std::fs::rename(&t, dir.path().join("moved")).unwrap();
        std::fs::write(&t, b"not ours").unwrap();
        let notes = cleanup.finish();
        assert_eq!(std::fs::read(&t).unwrap(), b"not ours");
        assert!(
            notes.iter().any(|n| n.contains("no longer names")),
            "{notes:?}"
        );
    }

    #[test]
    #[cfg_attr(
        not(has_tmp_immutable),
        ignore = "SKIPPED: needs chattr and an immutable flag (root, file system) in the temp dir"
    )]
    fn cleanup_says_what_it_could_not_remove() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("d");
        std::fs::create_dir(&sub).unwrap();
        let j = job(&sub);
        let (_plan, mut cleanup) = prepare(&j).unwrap();
        // A directory that refuses unlinking (immutable), as a shut-down file system would
        // (EIO): the file stays, and the note says so and why.
        let immutable = std::process::Command::new("chattr")
            .arg("+i")
            .arg(&sub)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(
            immutable,
            "CANNOT RUN: chattr +i failed in the temp dir, although build.rs found it (see FSBENCH_TEST_CAPS there)"
        );
        let notes = cleanup.finish();
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&sub)
            .status();
        assert!(sub.join("t").exists());
        assert!(
            notes
                .iter()
                .any(|n| n.contains("could not remove") && n.contains("not permitted")),
            "{notes:?}"
        );
    }

    #[test]
    fn second_prepare_of_a_held_target_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = job(dir.path());
        j.keep = true;
        let (_plan, cleanup) = prepare(&j).unwrap();
        let e = prepare(&j).err().expect("refused while held");
        assert!(crate::error::is_usage(&e));
        assert!(
            e.to_string().contains(&std::process::id().to_string()),
            "{e}"
        );
        drop(cleanup);
        assert!(dir.path().join("t").exists(), "kept");
        // Released: a new prepare succeeds. (Retry briefly: a process forked by another test
        // holds a copy of the descriptor until its exec closes it.)
        let t0 = std::time::Instant::now();
        let (_p, mut c) = loop {
            match prepare(&j) {
                Ok(x) => break x,
                Err(e) if t0.elapsed().as_secs() < 5 => {
                    let _ = e;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => panic!("{e}"),
            }
        };
        c.keep = false;
    }

    /// A loop device over a sparse file of `mb` MiB, detached on drop.
    struct Loop(PathBuf);
    impl Loop {
        fn new(dir: &Path, name: &str, mb: u64) -> Option<Loop> {
            let img = dir.join(name);
            File::create(&img).ok()?.set_len(mb << 20).ok()?;
            let out = std::process::Command::new("losetup")
                .args(["--find", "--show"])
                .arg(&img)
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| Loop(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())))
        }
    }
    impl Drop for Loop {
        fn drop(&mut self) {
            let _ = std::process::Command::new("losetup")
                .arg("-d")
                .arg(&self.0)
                .status();
        }
    }

    #[test]
    #[cfg_attr(not(has_loop), ignore = "SKIPPED: needs root and loop devices")]
    fn device_check_reads_the_open_descriptor_not_the_path() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            panic!("CANNOT RUN: needs root for loop devices; build.rs found root (see FSBENCH_TEST_CAPS there)");
        }
        let dir = tempfile::tempdir().unwrap();
        let (Some(full), Some(blank)) = (
            Loop::new(dir.path(), "full.img", 8),
            Loop::new(dir.path(), "blank.img", 8),
        ) else {
            panic!("CANNOT RUN: losetup could not attach loop devices, although build.rs found them (see FSBENCH_TEST_CAPS there)");
        };
        // An ext4 file system on one device (or at least its magic); the other is all zeros.
        let made = std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(&full.0)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !made {
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&full.0)
                .unwrap();
            f.write_all_at(&[0x53, 0xEF], 0x438).unwrap();
            f.sync_all().unwrap();
        }
        // The descriptor was opened on the device with the signature; by the time it is
        // checked the path names the blank one (a swap after the open).
        let fd = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&full.0)
            .unwrap();
        let mut j = job(dir.path());
        j.targets = vec![blank.0.clone()];
        let mut notes = Vec::new();
        let mut cache = CachePolicy::Buffered;
        let e = prepare_device(&j, &blank.0, &fd, &mut notes, &mut cache)
            .expect_err("the device behind the descriptor holds a signature");
        assert!(crate::error::is_usage(&e));
        assert!(e.to_string().contains("ext2/3/4"), "{e}");
        // And blkid, given the descriptor, finds it too (when it is installed).
        if let (true, Ok(found)) = (made, safety::blkid_signature_fd(&fd)) {
            assert!(
                found.is_some_and(|w| w.contains("ext")),
                "blkid through the fd"
            );
        }
    }

    #[test]
    fn refused_later_target_leaves_no_created_file_even_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = job(dir.path());
        j.keep = true;
        std::fs::create_dir(dir.path().join("d")).unwrap();
        j.targets.push(dir.path().join("d"));
        assert!(prepare(&j).is_err());
        assert!(!dir.path().join("t").exists());
    }
}
