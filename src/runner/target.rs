//! Target preparation, before anything is timed: create missing files at the size the job
//! needs (fixing vxbench's pitfalls), apply extent size hints and reservations, lay out data to
//! read, refuse what would destroy data, and remember what fsbench created so it is removed.

use crate::job::{Access, CachePolicy, Job};
use crate::safety;
use crate::{bail_usage, usage};
use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    File,
    BlockDevice,
}

/// One prepared target, as every worker sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetPlan {
    pub path: PathBuf,
    pub kind: TargetKind,
    /// Bytes of the target the job's offsets fall in.
    pub size: u64,
    /// Created by this run (and so removed at the end unless kept).
    pub created: bool,
    /// Direct-I/O alignment (offset and length), from statx or the device's logical block size.
    pub dio_align: u64,
    /// Size of the reservation, when the job made one (noextend limits writes to it).
    pub reserved: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub targets: Vec<TargetPlan>,
    /// The cache policy actually used (block devices turn buffered into raw).
    pub cache: CachePolicy,
    pub notes: Vec<String>,
}

fn needs_data(job: &Job) -> bool {
    // Everything but a plain sequential write reads or overwrites existing data.
    !(job.access == Access::Write && job.engine != crate::job::EngineKind::Mmap)
        || matches!(job.cache, CachePolicy::Concurrent)
}

fn writes(job: &Job) -> bool {
    job.access.read_pct(job.read_pct) < 100
}

/// Direct-I/O alignment of a path: statx STATX_DIOALIGN, else the device's logical block
/// size, else 512.
pub fn dio_alignment(path: &Path) -> u64 {
    const STATX_DIOALIGN: u32 = 0x2000;
    if let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) {
        // SAFETY: zeroed statx buffer we own; valid NUL-terminated path.
        let mut sx: libc::statx = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::statx(libc::AT_FDCWD, c.as_ptr(), 0, STATX_DIOALIGN, &mut sx) };
        if rc == 0 && sx.stx_mask & STATX_DIOALIGN != 0 && sx.stx_dio_offset_align > 0 {
            return sx.stx_dio_offset_align.max(1) as u64;
        }
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

/// Files this run created; removed on drop unless kept.
pub struct Cleanup {
    pub paths: Vec<PathBuf>,
    pub keep: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.keep {
            for p in &self.paths {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// Prepare every target. The returned `Cleanup` removes created files when dropped.
pub fn prepare(job: &Job) -> Result<(Plan, Cleanup)> {
    let mut cleanup = Cleanup {
        paths: Vec::new(),
        keep: job.keep,
    };
    let mut notes = Vec::new();
    let mut targets = Vec::with_capacity(job.targets.len());
    let mut cache = job.cache;
    for (i, path) in job.targets.iter().enumerate() {
        if job.targets[..i].contains(path) {
            bail_usage!(
                "target {} is named twice: give each user its own file, or use nthreads for several threads on one file",
                path.display()
            );
        }
        let t = prepare_one(job, path, &mut cleanup, &mut notes, &mut cache)?;
        targets.push(t);
    }
    Ok((
        Plan {
            targets,
            cache,
            notes,
        },
        cleanup,
    ))
}

fn prepare_one(
    job: &Job,
    path: &Path,
    cleanup: &mut Cleanup,
    notes: &mut Vec<String>,
    cache: &mut CachePolicy,
) -> Result<TargetPlan> {
    let meta = std::fs::metadata(path).ok();
    if let Some(m) = &meta {
        if m.is_dir() {
            bail_usage!(
                "{} is a directory: name a file inside it (fsbench creates it)",
                path.display()
            );
        }
        if m.file_type().is_block_device() {
            return prepare_device(job, path, notes, cache);
        }
        if !m.is_file() {
            bail_usage!("{} is not a regular file or block device", path.display());
        }
    }
    if *cache == CachePolicy::Raw {
        bail_usage!(
            "cache policy raw needs a block device target; {} is a file (use direct)",
            path.display()
        );
    }
    let needed = job.needed_file_size();
    let existed = meta.is_some();
    let ours = existed && safety::is_marked(path);
    let current = meta.as_ref().map(|m| m.len()).unwrap_or(0);
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
    let created = !existed;
    let file = if created {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(path)
            .map_err(|e| usage!("cannot create {}: {e}", path.display()))?;
        cleanup.paths.push(path.to_path_buf());
        if !safety::mark_created(path) {
            notes.push(format!(
                "{}: the file system has no user extended attributes, so a kept file cannot be recognised as fsbench's later",
                path.display()
            ));
        }
        f
    } else if will_write || needed.is_some_and(|n| n > current) {
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?
    } else {
        File::open(path).with_context(|| format!("opening {}", path.display()))?
    };

    if job.open.trunc && !created {
        file.set_len(0)
            .with_context(|| format!("truncating {}", path.display()))?;
    }
    if let Some(ext) = job.space.extsize {
        crate::runner::space::set_extsize(&file, path, ext)?;
    }
    let mut reserved = None;
    if let Some(r) = job.space.reservation {
        crate::runner::space::reserve(&file, path, r, &job.space)?;
        reserved = Some(r);
    }
    let len_now = file.metadata()?.len();
    let size = match needed {
        Some(n) => n,
        None if job.space.flags.chgsiz => len_now,
        None if len_now > 0 => len_now,
        None => bail_usage!(
            "{} is empty and the job names no size: give a file size or an I/O count",
            path.display()
        ),
    };
    if job.space.flags.noextend {
        let limit = reserved.unwrap_or(len_now).max(len_now);
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
    if !job.space.reserve_only {
        if needs_data(job) && len_now < size {
            if existed && !ours && !job.force {
                // Read-only use of a foreign file: stay inside it, never read past its end.
                if len_now < job.block_size {
                    bail_usage!(
                        "{} has {} bytes, less than one I/O of {}: it was not created by fsbench, so it is not extended without --force",
                        path.display(),
                        len_now,
                        job.block_size
                    );
                }
                notes.push(format!(
                    "{}: only {} bytes exist (wanted {}); offsets stay inside the file",
                    path.display(),
                    len_now,
                    size
                ));
                size = len_now;
            } else if job.access.is_random()
                && job.space.truncup.is_some()
                && !matches!(job.cache, CachePolicy::Concurrent)
            {
                // vxbench truncup: a sparse file of the initial size.
                file.set_len(size)?;
            } else {
                if matches!(job.cache, CachePolicy::Concurrent) {
                    crate::runner::space::preallocate(&file, path, size)?;
                }
                lay_out(&file, path, len_now, size, job.seed)?;
            }
        }
        if matches!(job.cache, CachePolicy::Concurrent) && file.metadata()?.len() < size {
            lay_out(&file, path, file.metadata()?.len(), size, job.seed)?;
        }
    }
    let dio_align = dio_alignment(path);
    Ok(TargetPlan {
        path: path.to_path_buf(),
        kind: TargetKind::File,
        size,
        created,
        dio_align,
        reserved,
    })
}

/// Write data over [from, to) in 1 MiB writes, then fsync: reads then find real blocks.
fn lay_out(file: &File, path: &Path, from: u64, to: u64, seed: u64) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let pool = crate::engine::BufferPool::new(1, 1 << 20, seed ^ 0x1a70)?;
    let buf = pool.slot(0);
    let mut off = from;
    while off < to {
        let n = ((to - off) as usize).min(buf.len());
        file.write_all_at(&buf[..n], off)
            .map_err(|e| anyhow!("laying out {} at offset {off}: {e}", path.display()))?;
        off += n as u64;
    }
    file.sync_all()
        .with_context(|| format!("fsync {}", path.display()))?;
    Ok(())
}

fn prepare_device(
    job: &Job,
    path: &Path,
    notes: &mut Vec<String>,
    cache: &mut CachePolicy,
) -> Result<TargetPlan> {
    if writes(job) && !job.force {
        if let Some(why) = safety::block_device_hazard(path) {
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
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let dev_size = block_device_size(&f)?;
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
        dio_align: dio_alignment(path),
        reserved: None,
    })
}

/// Evict a target's cached pages (fadvise DONTNEED), after writing back dirty ones.
pub fn evict(path: &Path) -> Result<()> {
    let f = File::open(path)?;
    let _ = f.sync_data();
    // SAFETY: valid descriptor; offset 0 / len 0 means the whole file.
    unsafe {
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
    Ok(())
}

/// `--drop-cache`: evict every target and, when root, drop the global page cache.
pub fn drop_caches(paths: &[PathBuf], notes: &mut Vec<String>) {
    for p in paths {
        let _ = evict(p);
    }
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    match std::fs::write("/proc/sys/vm/drop_caches", "3\n") {
        Ok(()) => notes.push("dropped the global page cache".into()),
        Err(_) => notes.push("not root: evicted the targets' pages only".into()),
    }
}
