//! Storage topology under a path: the block-device stack read from sysfs (partition -> disk,
//! loop device -> the device holding its backing file, md/dm -> their `slaves/`), with each
//! device's queue limits (block sizes, minimum/optimal I/O size, rotational, nr_requests,
//! max_sectors_kb, read_ahead_kb, scheduler), hardware queue depth and NUMA node.
//!
//! The sysfs root is injectable ([`SysfsProbe::with_root`]) so recorded trees under
//! `tests/fixtures/sys/` parse exactly like the live `/sys`.

use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Deepest device stack followed (loop over a file on md over partitions is 4 deep).
const MAX_DEPTH: usize = 16;

/// Queue limits of a request queue (`<dev>/queue/*`). Partitions share their disk's queue.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct QueueLimits {
    pub logical_block_size_bytes: Option<u64>,
    pub physical_block_size_bytes: Option<u64>,
    /// The device's preferred minimum I/O: the stripe unit (chunk) for md/dm stripes.
    pub minimum_io_size_bytes: Option<u64>,
    /// The device's optimal I/O: the full stripe width for md/dm stripes; 0 = no hint.
    pub optimal_io_size_bytes: Option<u64>,
    pub rotational: Option<bool>,
    pub nr_requests: Option<u64>,
    pub max_sectors_kb: Option<u64>,
    pub max_hw_sectors_kb: Option<u64>,
    pub read_ahead_kb: Option<u64>,
    /// The active scheduler (the bracketed one), e.g. `mq-deadline`, `none`.
    pub scheduler: Option<String>,
    pub schedulers_available: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    Disk,
    Partition,
    Loop,
    Md,
    Dm,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PartitionInfo {
    pub number: Option<u32>,
    /// Start of the partition on its disk (sysfs `start` is in 512-byte sectors).
    pub start_bytes: u64,
    pub disk: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoopInfo {
    pub backing_file: String,
    pub offset_bytes: u64,
    pub direct_io: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MdInfo {
    /// `raid0`, `raid1`, `raid10`, `raid5`, `raid6`, `linear`, ...
    pub level: String,
    pub raid_disks: u32,
    pub chunk_size_bytes: Option<u64>,
    /// md's layout number (raid10: near/far copies are packed into it).
    pub layout: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DmInfo {
    pub name: String,
    pub uuid: String,
}

/// One block device and the devices below it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BlockDev {
    pub name: String,
    /// `major:minor`.
    pub dev: String,
    pub kind: DeviceKind,
    pub size_bytes: Option<u64>,
    /// None for a partition: it uses its disk's queue (the disk is in `lower`).
    pub queue: Option<QueueLimits>,
    /// Commands the device itself queues: SCSI `device/queue_depth`, else blk-mq tags per
    /// hardware queue (`mq/0/nr_tags`).
    pub queue_depth: Option<u64>,
    pub queue_depth_source: Option<String>,
    pub hw_queues: Option<u32>,
    /// NUMA node of the controller; None when the platform reports none (-1).
    pub numa_node: Option<i32>,
    pub alignment_offset_bytes: Option<u64>,
    pub partition: Option<PartitionInfo>,
    #[serde(rename = "loop")]
    pub loop_info: Option<LoopInfo>,
    pub md: Option<MdInfo>,
    pub dm: Option<DmInfo>,
    /// Devices below: a partition's disk, an md/dm device's slaves, the device that holds a
    /// loop device's backing file.
    pub lower: Vec<BlockDev>,
    pub notes: Vec<String>,
}

impl BlockDev {
    /// The queue that serves this device: its own, or (for a partition) its disk's.
    pub fn effective_queue(&self) -> Option<&QueueLimits> {
        self.queue.as_ref().or_else(|| {
            if self.kind == DeviceKind::Partition {
                self.lower.first().and_then(|d| d.effective_queue())
            } else {
                None
            }
        })
    }

    /// The devices at the bottom of the stack (disks with no lower devices), in order.
    pub fn leaves(&self) -> Vec<&BlockDev> {
        if self.lower.is_empty() {
            return vec![self];
        }
        self.lower.iter().flat_map(|d| d.leaves()).collect()
    }

    /// Every device of the stack, top first.
    pub fn walk(&self) -> Vec<&BlockDev> {
        let mut v = vec![self];
        for d in &self.lower {
            v.extend(d.walk());
        }
        v
    }

    /// The sysfs name under /sys/block of the device whose queue settings apply (the disk
    /// for a partition).
    pub fn queue_owner(&self) -> &str {
        match (&self.partition, self.kind) {
            (Some(p), DeviceKind::Partition) => &p.disk,
            _ => &self.name,
        }
    }
}

/// Finds the block device of a file (for loop backing files): `(major, minor)`.
pub type DevOfFile = dyn Fn(&Path) -> Option<(u32, u32)>;

/// Reads device stacks from a sysfs tree.
pub struct SysfsProbe {
    root: PathBuf,
    dev_of_file: Box<DevOfFile>,
}

impl Default for SysfsProbe {
    fn default() -> Self {
        SysfsProbe::with_root("/sys")
    }
}

/// The device a file lives on: `st_dev`, as (major, minor).
pub fn dev_of_path(p: &Path) -> Option<(u32, u32)> {
    let m = std::fs::metadata(p).ok()?;
    Some((libc::major(m.dev()), libc::minor(m.dev())))
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_u64(p: &Path) -> Option<u64> {
    read_trim(p)?.parse().ok()
}

/// Parse sysfs `scheduler`: `none [mq-deadline] kyber bfq` -> (active, all).
pub fn parse_scheduler(text: &str) -> (Option<String>, Vec<String>) {
    let mut active = None;
    let mut all = Vec::new();
    for w in text.split_whitespace() {
        let name = w.trim_start_matches('[').trim_end_matches(']');
        if w.starts_with('[') {
            active = Some(name.to_string());
        }
        all.push(name.to_string());
    }
    // A queue with a single scheduler prints it without brackets (`none`).
    if active.is_none() && all.len() == 1 {
        active = all.first().cloned();
    }
    (active, all)
}

impl SysfsProbe {
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        let root: PathBuf = root.into();
        SysfsProbe {
            // Device directories are canonical paths: the root must be one too.
            root: std::fs::canonicalize(&root).unwrap_or(root),
            dev_of_file: Box::new(dev_of_path),
        }
    }

    /// Replace how a loop device's backing file is mapped to its device (recorded trees name
    /// files that do not exist on the test machine).
    pub fn with_dev_of_file(mut self, f: Box<DevOfFile>) -> Self {
        self.dev_of_file = f;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The device stack for `major:minor`, or None when sysfs has no such block device
    /// (e.g. tmpfs, or btrfs's anonymous device numbers).
    pub fn device(&self, major: u32, minor: u32) -> Option<BlockDev> {
        let link = self.root.join(format!("dev/block/{major}:{minor}"));
        let dir = std::fs::canonicalize(link).ok()?;
        Some(self.read_dir(&dir, 0))
    }

    /// The device stack under a path: its file system's device (a block device path names
    /// itself).
    pub fn device_of_path(&self, path: &Path) -> Option<BlockDev> {
        let m = std::fs::metadata(path).ok()?;
        let dev = if std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()) {
            m.rdev()
        } else {
            m.dev()
        };
        self.device(libc::major(dev), libc::minor(dev))
    }

    fn read_dir(&self, dir: &Path, depth: usize) -> BlockDev {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let is_partition = dir.join("partition").exists();
        let kind = if is_partition {
            DeviceKind::Partition
        } else if dir.join("md").is_dir() {
            DeviceKind::Md
        } else if dir.join("dm").is_dir() {
            DeviceKind::Dm
        } else if dir.join("loop").is_dir() || name.starts_with("loop") {
            DeviceKind::Loop
        } else {
            DeviceKind::Disk
        };
        let mut d = BlockDev {
            name: name.clone(),
            dev: read_trim(&dir.join("dev")).unwrap_or_default(),
            kind,
            size_bytes: read_u64(&dir.join("size")).map(|s| s * 512),
            queue: None,
            queue_depth: None,
            queue_depth_source: None,
            hw_queues: None,
            numa_node: None,
            alignment_offset_bytes: read_u64(&dir.join("alignment_offset")),
            partition: None,
            loop_info: None,
            md: None,
            dm: None,
            lower: Vec::new(),
            notes: Vec::new(),
        };
        if depth >= MAX_DEPTH {
            d.notes
                .push("device stack deeper than 16 levels: stopped here".into());
            return d;
        }
        if is_partition {
            let disk_dir = dir.parent().unwrap_or(dir);
            d.partition = Some(PartitionInfo {
                number: read_u64(&dir.join("partition")).map(|n| n as u32),
                start_bytes: read_u64(&dir.join("start")).unwrap_or(0) * 512,
                disk: disk_dir
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default(),
            });
            d.lower.push(self.read_dir(disk_dir, depth + 1));
            return d;
        }
        d.queue = Some(read_queue(&dir.join("queue")));
        self.read_queue_depth(dir, &mut d);
        d.numa_node = self.numa_node(dir);
        match kind {
            DeviceKind::Md => d.md = Some(read_md(&dir.join("md"))),
            DeviceKind::Dm => {
                d.dm = Some(DmInfo {
                    name: read_trim(&dir.join("dm/name")).unwrap_or_default(),
                    uuid: read_trim(&dir.join("dm/uuid")).unwrap_or_default(),
                })
            }
            DeviceKind::Loop => self.read_loop(dir, &mut d, depth),
            _ => {}
        }
        if let Ok(rd) = std::fs::read_dir(dir.join("slaves")) {
            let mut slaves: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            slaves.sort();
            for s in slaves {
                match std::fs::canonicalize(&s) {
                    Ok(real) => d.lower.push(self.read_dir(&real, depth + 1)),
                    Err(e) => d
                        .notes
                        .push(format!("slave {} unreadable: {e}", s.display())),
                }
            }
        }
        d
    }

    fn read_loop(&self, dir: &Path, d: &mut BlockDev, depth: usize) {
        let Some(backing) = read_trim(&dir.join("loop/backing_file")) else {
            d.notes.push("loop device with no backing file".into());
            return;
        };
        d.loop_info = Some(LoopInfo {
            backing_file: backing.clone(),
            offset_bytes: read_u64(&dir.join("loop/offset")).unwrap_or(0),
            direct_io: read_trim(&dir.join("loop/dio")).map(|s| s == "1"),
        });
        // The kernel appends " (deleted)" when the backing file was unlinked.
        let file = backing.trim_end_matches(" (deleted)");
        match (self.dev_of_file)(Path::new(file)) {
            Some((ma, mi)) => {
                let link = self.root.join(format!("dev/block/{ma}:{mi}"));
                match std::fs::canonicalize(link) {
                    Ok(real) => d.lower.push(self.read_dir(&real, depth + 1)),
                    Err(_) => d.notes.push(format!(
                        "backing file {file} is on device {ma}:{mi}, which is not a block device in sysfs"
                    )),
                }
            }
            None => d.notes.push(format!(
                "backing file {file} not found: its device is unknown"
            )),
        }
    }

    fn read_queue_depth(&self, dir: &Path, d: &mut BlockDev) {
        if let Some(q) = read_u64(&dir.join("device/queue_depth")) {
            d.queue_depth = Some(q);
            d.queue_depth_source = Some("device/queue_depth".into());
        }
        if let Ok(rd) = std::fs::read_dir(dir.join("mq")) {
            let hw: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join("nr_tags").exists())
                .collect();
            if !hw.is_empty() {
                d.hw_queues = Some(hw.len() as u32);
                if d.queue_depth.is_none() {
                    d.queue_depth = hw.iter().filter_map(|p| read_u64(&p.join("nr_tags"))).max();
                    d.queue_depth_source = Some("mq/*/nr_tags".into());
                }
            }
        }
    }

    /// NUMA node of the device's controller: the nearest `numa_node` file on the way up the
    /// device path (`device/numa_node` for NVMe, the PCI function for virtio and SCSI).
    fn numa_node(&self, dir: &Path) -> Option<i32> {
        let direct = dir.join("device/numa_node");
        let found = if direct.exists() {
            Some(direct)
        } else {
            dir.ancestors()
                .skip(1)
                .take_while(|a| a.starts_with(&self.root) && *a != self.root)
                .map(|a| a.join("numa_node"))
                .find(|p| p.exists())
        };
        let n: i32 = read_trim(&found?)?.parse().ok()?;
        (n >= 0).then_some(n)
    }
}

fn read_queue(q: &Path) -> QueueLimits {
    let (scheduler, schedulers_available) = read_trim(&q.join("scheduler"))
        .map(|s| parse_scheduler(&s))
        .unwrap_or((None, Vec::new()));
    QueueLimits {
        logical_block_size_bytes: read_u64(&q.join("logical_block_size")),
        physical_block_size_bytes: read_u64(&q.join("physical_block_size")),
        minimum_io_size_bytes: read_u64(&q.join("minimum_io_size")),
        optimal_io_size_bytes: read_u64(&q.join("optimal_io_size")),
        rotational: read_trim(&q.join("rotational")).map(|s| s == "1"),
        nr_requests: read_u64(&q.join("nr_requests")),
        max_sectors_kb: read_u64(&q.join("max_sectors_kb")),
        max_hw_sectors_kb: read_u64(&q.join("max_hw_sectors_kb")),
        read_ahead_kb: read_u64(&q.join("read_ahead_kb")),
        scheduler,
        schedulers_available,
    }
}

fn read_md(md: &Path) -> MdInfo {
    MdInfo {
        level: read_trim(&md.join("level")).unwrap_or_default(),
        raid_disks: read_u64(&md.join("raid_disks")).unwrap_or(0) as u32,
        chunk_size_bytes: read_u64(&md.join("chunk_size")).filter(|&c| c > 0),
        layout: read_u64(&md.join("layout")).map(|l| l as u32),
    }
}

/// The mount whose mount point is the longest prefix of `path`: for file systems whose files
/// carry a device number other than the one in mountinfo (btrfs subvolumes).
fn mount_by_prefix(path: &Path) -> Option<super::MountInfo> {
    let real = path
        .ancestors()
        .find_map(|a| std::fs::canonicalize(a).ok())?;
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<super::MountInfo> = None;
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split_whitespace().collect();
        let r: Vec<&str> = right.split_whitespace().collect();
        if l.len() < 6 || r.len() < 2 || !real.starts_with(l[4]) {
            continue;
        }
        if best
            .as_ref()
            .is_some_and(|b| b.mount_point.len() > l[4].len())
        {
            continue;
        }
        best = Some(super::MountInfo {
            mount_point: l[4].to_string(),
            fs_type: r[0].to_string(),
            source: r[1].to_string(),
            options: format!("{},{}", l[5], r.get(2).unwrap_or(&"")),
            dev: l[2].to_string(),
        });
    }
    best
}

/// Everything known about the storage under a path.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Topology {
    pub path: String,
    pub mount: Option<super::MountInfo>,
    pub fs: Option<super::fsgeom::FsGeometry>,
    pub device: Option<BlockDev>,
    pub notes: Vec<String>,
}

impl Topology {
    /// Probe the live system for `path` (the path itself or its nearest existing ancestor).
    pub fn of_path(path: &Path, probe: &SysfsProbe) -> Topology {
        let mut notes = Vec::new();
        let mount = super::mount_of(path).or_else(|| mount_by_prefix(path));
        let existing = path
            .ancestors()
            .find(|a| a.exists())
            .unwrap_or(Path::new("."));
        let mut device = probe.device_of_path(existing);
        // btrfs (and other multi-device file systems) give files an anonymous st_dev: fall
        // back to the mount's source device.
        if device.is_none() {
            if let Some(m) = &mount {
                if m.source.starts_with("/dev/") {
                    device = probe.device_of_path(Path::new(&m.source));
                }
            }
        }
        if device.is_none() {
            notes.push(match &mount {
                Some(m) => format!(
                    "{} ({}) is not backed by a block device: no device topology",
                    m.mount_point, m.fs_type
                ),
                None => "no mount found for the path".to_string(),
            });
        }
        let fs = mount
            .as_ref()
            .and_then(|m| super::fsgeom::probe(&m.fs_type, &m.mount_point, &m.source, &m.options));
        if let (None, Some(m)) = (&fs, &mount) {
            if matches!(
                m.fs_type.as_str(),
                "xfs" | "ext2" | "ext3" | "ext4" | "btrfs"
            ) {
                notes.push(format!(
                    "{} geometry not readable from {} (needs read access to the device, or xfs_info/dumpe2fs)",
                    m.fs_type, m.source
                ));
            }
        }
        Topology {
            path: path.display().to_string(),
            mount,
            fs,
            device,
            notes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_forms() {
        let (a, all) = parse_scheduler("none [mq-deadline] kyber bfq\n");
        assert_eq!(a.as_deref(), Some("mq-deadline"));
        assert_eq!(all, ["none", "mq-deadline", "kyber", "bfq"]);
        assert_eq!(parse_scheduler("none").0.as_deref(), Some("none"));
        assert_eq!(
            parse_scheduler("[none] mq-deadline").0.as_deref(),
            Some("none")
        );
        assert_eq!(parse_scheduler("").0, None);
    }

    #[test]
    #[cfg_attr(not(has_root_blockdev), ignore = "SKIPPED: / is not on a block device")]
    fn live_root_device_has_a_queue() {
        let probe = SysfsProbe::default();
        let Some(dev) = probe.device_of_path(Path::new("/")) else {
            panic!("CANNOT RUN: / is not on a block device in sysfs, although build.rs found it (see FSBENCH_TEST_CAPS there)");
        };
        let q = dev.effective_queue().expect("a queue for the root device");
        assert!(q.logical_block_size_bytes.unwrap() >= 512);
        assert!(!dev.leaves().is_empty());
    }
}
