//! Fragmentation report, like `fsadm -E`'s extent report: every regular file under a path
//! with its size and extent count (FIEMAP), the average extents per file, and the worst files.
//! Also the `extents` probe that Results of writing runs carry.

use super::fiemap;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileExtents {
    pub path: String,
    pub size_bytes: u64,
    pub extents: u64,
    /// Extents that are allocated but not yet written (preallocated space).
    pub unwritten_extents: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FragReport {
    pub root: String,
    pub files: u64,
    pub total_bytes: u64,
    pub total_extents: u64,
    pub avg_extents_per_file: f64,
    /// Mean file size divided by mean extent count: how large a contiguous piece is.
    pub avg_extent_bytes: f64,
    /// Files by extent count: 0 (empty or inline), 1, 2-8, 9-64, 65-512, more.
    pub histogram: Vec<(String, u64)>,
    /// The most fragmented files, worst first.
    pub worst: Vec<FileExtents>,
    /// Files FIEMAP could not map (unsupported file system, permission).
    pub errors: u64,
    pub first_error: Option<String>,
    /// Extents of the directories under the root (`--dirs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directories: Option<DirReport>,
    /// Free-space fragmentation of the file system holding the root (`--free`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_space: Option<super::freefrag::FreeSpaceReport>,
}

/// Extents of one directory inode (its entry blocks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirExtents {
    pub path: String,
    pub size_bytes: u64,
    pub extents: u64,
    /// Entries in it (not counting `.` and `..`).
    pub entries: u64,
}

/// Directory fragmentation under a root, like `fsadm -D`: how many extents each directory's
/// entry blocks take. A large directory in many extents costs a seek per extent on lookup
/// and listing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirReport {
    pub dirs: u64,
    pub total_extents: u64,
    pub avg_extents_per_dir: f64,
    /// Directories in more than one extent.
    pub fragmented: u64,
    /// The directories in most extents, worst first.
    pub worst: Vec<DirExtents>,
    /// Why there are no directory extents, when the file system does not map directories.
    pub unsupported: Option<String>,
    pub errors: u64,
    pub first_error: Option<String>,
}

/// Extents of one file.
/// Opened without following a link and without blocking (a FIFO or device swapped in after
/// the walk looked at the name must not hang the probe or be opened as a device), then
/// checked through the descriptor to be a regular file.
pub fn file_extents(path: &Path) -> anyhow::Result<FileExtents> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let m = f.metadata()?;
    if !m.is_file() {
        anyhow::bail!("not a regular file");
    }
    let size = m.len();
    let ex = fiemap::extents(&f)?;
    Ok(FileExtents {
        path: path.display().to_string(),
        size_bytes: size,
        extents: ex.len() as u64,
        unwritten_extents: ex
            .iter()
            .filter(|e| e.flags & fiemap::FIEMAP_EXTENT_UNWRITTEN != 0)
            .count() as u64,
    })
}

const BUCKETS: [(&str, u64); 6] = [
    ("0", 0),
    ("1", 1),
    ("2-8", 8),
    ("9-64", 64),
    ("65-512", 512),
    (">512", u64::MAX),
];

/// Walk `root` (a file or a directory; symlinks are not followed, other file systems are not
/// entered) and report. `top` worst files are listed.
pub fn report(root: &Path, top: usize) -> std::io::Result<FragReport> {
    let meta = std::fs::symlink_metadata(root)?;
    let dev = meta.dev();
    let mut all = Vec::new();
    let mut errors = 0u64;
    let mut first_error = None;
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if m.is_dir() {
            if m.dev() != dev {
                continue;
            }
            if let Ok(rd) = std::fs::read_dir(&p) {
                for e in rd.flatten() {
                    stack.push(e.path());
                }
            }
        } else if m.is_file() {
            match file_extents(&p) {
                Ok(fe) => all.push(fe),
                Err(e) => {
                    errors += 1;
                    first_error.get_or_insert_with(|| format!("{}: {e:#}", p.display()));
                }
            }
        }
    }
    let mut r = FragReport {
        root: root.display().to_string(),
        files: all.len() as u64,
        total_bytes: all.iter().map(|f| f.size_bytes).sum(),
        total_extents: all.iter().map(|f| f.extents).sum(),
        errors,
        first_error,
        ..Default::default()
    };
    r.avg_extents_per_file = if r.files > 0 {
        r.total_extents as f64 / r.files as f64
    } else {
        0.0
    };
    r.avg_extent_bytes = if r.total_extents > 0 {
        r.total_bytes as f64 / r.total_extents as f64
    } else {
        0.0
    };
    let mut prev = None;
    for (name, max) in BUCKETS {
        let n = all
            .iter()
            .filter(|f| f.extents <= max && prev.is_none_or(|p| f.extents > p))
            .count() as u64;
        r.histogram.push((name.to_string(), n));
        prev = Some(max);
    }
    all.sort_by(|a, b| b.extents.cmp(&a.extents).then(a.path.cmp(&b.path)));
    all.truncate(top);
    r.worst = all;
    Ok(r)
}

/// Why FIEMAP gives nothing on directories of this file system.
fn dir_unsupported(fs: &str, e: &std::io::Error) -> String {
    match fs {
        "xfs" => "XFS does not answer FIEMAP on directories (its directory blocks are mapped by XFS_IOC_GETBMAPX, as `xfs_bmap -v DIR` shows)".into(),
        "btrfs" => "btrfs keeps directory entries as items in its metadata trees: a directory has no extents of its own".into(),
        _ => format!("the file system ({fs}) does not answer FIEMAP on directories ({e})"),
    }
}

/// Extents of one directory, opened without following a link; `Err` with the raw error.
fn dir_extents(path: &Path, dev: u64) -> std::io::Result<Option<DirExtents>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    let m = f.metadata()?;
    if m.dev() != dev {
        return Ok(None);
    }
    let ex = fiemap::extents(&f).map_err(|e| match e.downcast::<std::io::Error>() {
        Ok(io) => io,
        Err(other) => std::io::Error::other(format!("{other:#}")),
    })?;
    let entries = std::fs::read_dir(path)
        .map(|rd| rd.count() as u64)
        .unwrap_or(0);
    Ok(Some(DirExtents {
        path: path.display().to_string(),
        size_bytes: m.len(),
        extents: ex.len() as u64,
        entries,
    }))
}

/// Walk the directories under `root` (itself included; symlinks are not followed, other
/// file systems not entered) and report their extents; `top` worst are listed.
pub fn dir_report(root: &Path, top: usize) -> std::io::Result<DirReport> {
    let meta = std::fs::symlink_metadata(root)?;
    let dev = meta.dev();
    let mut all = Vec::new();
    let mut r = DirReport::default();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() && m.dev() == dev => {}
            _ => continue,
        }
        match dir_extents(&p, dev) {
            Ok(Some(d)) => all.push(d),
            Ok(None) => continue,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP) | Some(libc::ENOTTY)
                ) =>
            {
                let fs = std::fs::File::open(&p)
                    .ok()
                    .and_then(|f| rustix::fs::fstatfs(&f).ok())
                    .map(|s| super::freefrag::fs_name(s.f_type as u64))
                    .unwrap_or("other");
                r.unsupported = Some(dir_unsupported(fs, &e));
                return Ok(r);
            }
            Err(e) => {
                r.errors += 1;
                r.first_error
                    .get_or_insert_with(|| format!("{}: {e}", p.display()));
            }
        }
        if let Ok(rd) = std::fs::read_dir(&p) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(e.path());
                }
            }
        }
    }
    r.dirs = all.len() as u64;
    r.total_extents = all.iter().map(|d| d.extents).sum();
    r.fragmented = all.iter().filter(|d| d.extents > 1).count() as u64;
    r.avg_extents_per_dir = if r.dirs > 0 {
        r.total_extents as f64 / r.dirs as f64
    } else {
        0.0
    };
    all.sort_by(|a, b| b.extents.cmp(&a.extents).then(a.path.cmp(&b.path)));
    all.truncate(top);
    r.worst = all;
    Ok(r)
}

/// The `extents` probe of a run: extent count of each regular-file target, measured after
/// the I/O and before any removal.
pub fn extents_probe(paths: &[&Path]) -> serde_json::Value {
    let files: Vec<serde_json::Value> = paths
        .iter()
        .map(|p| match file_extents(p) {
            Ok(fe) => serde_json::to_value(fe).unwrap_or_default(),
            Err(e) => {
                serde_json::json!({"path": p.display().to_string(), "error": format!("{e:#}")})
            }
        })
        .collect();
    serde_json::json!({ "files": files })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn a_fifo_or_link_is_refused_at_once_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        for p in [fifo, link] {
            let (tx, rx) = std::sync::mpsc::channel();
            let q = p.clone();
            std::thread::spawn(move || {
                let _ = tx.send(file_extents(&q).is_err());
            });
            let refused = rx.recv_timeout(std::time::Duration::from_secs(3));
            assert_eq!(refused, Ok(true), "{} blocked or was read", p.display());
        }
    }

    #[test]
    #[cfg_attr(
        not(has_tmp_fiemap),
        ignore = "SKIPPED: the temp dir's file system does not answer FIEMAP"
    )]
    fn finds_the_file_fragmented_on_purpose() {
        let dir = tempfile::tempdir().unwrap();
        let contiguous = dir.path().join("contiguous");
        std::fs::write(&contiguous, vec![1u8; 256 * 1024]).unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let frag = sub.join("holey");
        let f = std::fs::File::create(&frag).unwrap();
        let buf = vec![7u8; 4096];
        for i in 0..16u64 {
            f.write_all_at(&buf, i * 3 * 65536).unwrap();
        }
        f.sync_all().unwrap();
        let r = report(dir.path(), 5).unwrap();
        assert_eq!(
            r.errors, 0,
            "CANNOT RUN: FIEMAP failed although build.rs found it (see FSBENCH_TEST_CAPS there): {:?}",
            r.first_error
        );
        assert_eq!(r.files, 2);
        assert_eq!(r.worst[0].path, frag.display().to_string());
        assert_eq!(r.worst[0].extents, 16);
        assert!(r.worst[1].extents >= 1);
        assert_eq!(r.histogram.iter().map(|h| h.1).sum::<u64>(), 2);
    }
}
