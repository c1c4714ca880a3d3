//! The Environment recorded beside every Result: kernel, CPU, memory, and for each target
//! its file system, mount options and device.

use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TargetEnv {
    pub path: String,
    pub fs_type: String,
    pub mount_point: String,
    pub mount_options: String,
    pub device: String,
    pub rotational: Option<bool>,
    pub logical_block_size: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Environment {
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    /// CPUs this process may run on (its affinity and CPU quota): what its threads can use.
    pub cpus: u32,
    /// CPUs the host has online; more than `cpus` when the process was bound to some of
    /// them (mpirun's default binding, taskset, a cgroup). Absent in older Results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_online: Option<u32>,
    pub mem_bytes: u64,
    pub targets: Vec<TargetEnv>,
    /// How the storage under the targets was built, when fsbench built it (`fscompare`: the
    /// exact mkfs and mount command lines and the resulting geometry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built: Option<serde_json::Value>,
}

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

pub fn target_env(path: &Path) -> TargetEnv {
    let m = super::mount_of(path).unwrap_or_default();
    let dev = super::sysfs_block_dir(path);
    TargetEnv {
        path: path.display().to_string(),
        fs_type: m.fs_type,
        mount_point: m.mount_point,
        mount_options: m.options,
        device: dev
            .as_ref()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().to_string()))
            .unwrap_or_else(|| m.source.clone()),
        rotational: dev
            .as_ref()
            .and_then(|d| read_trim(d.join("queue/rotational")))
            .map(|s| s == "1"),
        logical_block_size: dev
            .as_ref()
            .and_then(|d| read_trim(d.join("queue/logical_block_size")))
            .and_then(|s| s.parse().ok()),
    }
}

/// CPUs online on this host, whatever this process may use.
fn cpus_online() -> Option<u32> {
    // SAFETY: sysconf reads a system value and has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (n > 0).then_some(n as u32)
}

pub fn collect(targets: &[impl AsRef<Path>]) -> Environment {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let mem_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024;
    Environment {
        hostname: read_trim("/proc/sys/kernel/hostname").unwrap_or_default(),
        kernel: read_trim("/proc/sys/kernel/osrelease").unwrap_or_default(),
        cpu_model,
        cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        cpus_online: cpus_online(),
        mem_bytes,
        targets: targets.iter().map(|t| target_env(t.as_ref())).collect(),
        built: None,
    }
}
