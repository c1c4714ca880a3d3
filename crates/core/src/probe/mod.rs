//! Probes of the environment a benchmark runs in: the file system and mount under a path, the
//! block device behind it (through partitions and loop devices), and file extents (FIEMAP).

pub(crate) mod cache;
pub mod diskstats;
pub mod env;
pub mod fiemap;
pub mod frag;
pub mod freefrag;
pub mod fsgeom;
pub mod host;
pub mod topology;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The mount (fs type, mount point, options, source) that holds `path`, from mountinfo.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct MountInfo {
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
    pub options: String,
    pub dev: String,
}

/// The mount of the nearest existing ancestor of `path`.
pub fn mount_of(path: &Path) -> Option<MountInfo> {
    let mut p = std::fs::canonicalize(path).ok().or_else(|| {
        path.parent().and_then(|pp| {
            std::fs::canonicalize(if pp.as_os_str().is_empty() {
                Path::new(".")
            } else {
                pp
            })
            .ok()
        })
    })?;
    let dev = loop {
        if let Ok(m) = std::fs::metadata(&p) {
            break m.dev();
        }
        p = p.parent()?.to_path_buf();
    };
    let want = format!("{}:{}", libc::major(dev), libc::minor(dev));
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // Match on the device number first; btrfs reports anonymous device numbers that differ
    // from mountinfo's, so fall back to the longest mount point that prefixes the path.
    let pstr = p.to_string_lossy().to_string();
    let mut by_dev: Option<MountInfo> = None;
    let mut by_prefix: Option<MountInfo> = None;
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split_whitespace().collect();
        let r: Vec<&str> = right.split_whitespace().collect();
        if l.len() < 6 || r.len() < 2 {
            continue;
        }
        let mi = MountInfo {
            mount_point: l[4].to_string(),
            fs_type: r[0].to_string(),
            source: r[1].to_string(),
            options: format!("{},{}", l[5], r.get(2).unwrap_or(&"")),
            dev: l[2].to_string(),
        };
        let under = pstr == mi.mount_point
            || pstr.starts_with(&format!("{}/", mi.mount_point.trim_end_matches('/')));
        if !under {
            continue;
        }
        let slot = if l[2] == want {
            &mut by_dev
        } else {
            &mut by_prefix
        };
        // Later lines are mounted on top of earlier ones: prefer longer, then later.
        if slot
            .as_ref()
            .is_none_or(|b| mi.mount_point.len() >= b.mount_point.len())
        {
            *slot = Some(mi);
        }
    }

    match (by_dev, by_prefix) {
        (Some(d), Some(p)) if p.mount_point.len() > d.mount_point.len() => Some(p),
        (Some(d), _) => Some(d),
        (None, p) => p,
    }
}

/// File-system type under a path (`ext4`, `xfs`, `btrfs`, `tmpfs`, ...).
pub fn fs_type(path: &Path) -> Option<String> {
    mount_of(path).map(|m| m.fs_type)
}

/// The /sys/dev/block directory of the device that holds `path` (or of `path` itself when it
/// is a block device). For a partition this is the partition's own directory.
pub fn sysfs_block_dir(path: &Path) -> Option<PathBuf> {
    let m = std::fs::metadata(path).ok().or_else(|| {
        let parent = path.parent()?;
        std::fs::metadata(if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        })
        .ok()
    })?;
    let dev = if m.file_type_is_block() {
        m.rdev()
    } else {
        m.dev()
    };
    let dir = PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(dev),
        libc::minor(dev)
    ));
    let dir = std::fs::canonicalize(&dir).ok()?;
    // A partition has no queue/ of its own: use its parent disk's.
    if dir.join("partition").exists() {
        return dir.parent().map(|p| p.to_path_buf());
    }
    Some(dir)
}

trait BlockExt {
    fn file_type_is_block(&self) -> bool;
}

impl BlockExt for std::fs::Metadata {
    fn file_type_is_block(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.file_type().is_block_device()
    }
}
