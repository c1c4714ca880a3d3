//! Raw-device points without a spare disk: when root, fsbench creates a scratch file in the
//! output directory, fills it with data, attaches a loop device to it (direct I/O on the
//! backing file when the kernel allows it), and detaches and removes both afterwards. Without
//! root the raw points are skipped with that reason: nothing pretends to be raw I/O.
//! On MPI ranks (`--file-per-rank`) every rank does the same in its own directory
//! PATH.d/rank-NNNNN (`crate::mpi`'s servant loop keeps a [`RawProvider`] per rank), so N
//! ranks measure raw I/O on N loop devices at once; when one rank cannot, the point is
//! skipped on every rank with that rank's reason ([`NoRawDevice`]).

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a raw point got no block device (on one host, or on some rank of a distributed run):
/// the point is recorded as skipped with this reason, not as an error.
#[derive(Debug)]
pub struct NoRawDevice(pub String);

impl std::fmt::Display for NoRawDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoRawDevice {}

/// Why a raw point on MPI ranks is skipped, from every rank's (host, why it has no loop
/// device) in rank order: the first such rank's reason, naming it (or, when every rank gave
/// the same one, that reason for every rank); None when every rank has a device.
pub fn ranks_skip_reason(answers: &[(String, Option<String>)]) -> Option<String> {
    let failed: Vec<(usize, &String, &String)> = answers
        .iter()
        .enumerate()
        .filter_map(|(r, (host, why))| why.as_ref().map(|w| (r, host, w)))
        .collect();
    let (rank, host, why) = *failed.first()?;
    if failed.len() == answers.len() && failed.iter().all(|f| f.2 == why) {
        return Some(format!("{why} (on every rank)"));
    }
    let more = match failed.len() - 1 {
        0 => String::new(),
        1 => " (and 1 other rank)".into(),
        n => format!(" (and {n} other ranks)"),
    };
    Some(format!("rank {rank} on {host}: {why}{more}"))
}

/// A loop device over a scratch file fsbench created.
pub(crate) struct RawDevice {
    pub dev: PathBuf,
    pub backing: PathBuf,
    pub size: u64,
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

impl RawDevice {
    /// Create a filled scratch file of `size` bytes in `dir` and attach a loop device.
    pub(crate) fn create(dir: &Path, size: u64) -> anyhow::Result<RawDevice> {
        if !is_root() {
            anyhow::bail!("raw I/O needs a block device: not root, so no loop device was made (run as root, or sweep a block device you name)");
        }
        if !Path::new("/dev/loop-control").exists() {
            anyhow::bail!("raw I/O needs a block device: this system has no /dev/loop-control");
        }
        for gone in clean_stale(dir) {
            eprintln!(
                "fsbench: removed {} left by a killed fsbench run",
                gone.display()
            );
        }
        let backing = dir.join(format!(".fsbench-raw-{}.img", std::process::id()));
        fill(&backing, size).map_err(|e| {
            let _ = std::fs::remove_file(&backing);
            anyhow::anyhow!(
                "cannot make the loop device's backing file {}: {e}",
                backing.display()
            )
        })?;
        let attach = |extra: &[&str]| {
            Command::new("losetup")
                .args(["--find", "--show"])
                .args(extra)
                .arg(&backing)
                .output()
        };
        let out = match attach(&["--direct-io=on"]) {
            Ok(o) if o.status.success() => o,
            _ => match attach(&[]) {
                Ok(o) if o.status.success() => o,
                Ok(o) => {
                    let _ = std::fs::remove_file(&backing);
                    anyhow::bail!(
                        "losetup failed: {}",
                        String::from_utf8_lossy(&o.stderr).trim()
                    );
                }
                Err(e) => {
                    let _ = std::fs::remove_file(&backing);
                    anyhow::bail!("cannot run losetup: {e}");
                }
            },
        };
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
        Ok(RawDevice { dev, backing, size })
    }
}

/// The PID in a backing file name fsbench makes: `.fsbench-raw-PID.img`.
fn stale_pid(name: &str) -> Option<i32> {
    let pid = name.strip_prefix(".fsbench-raw-")?.strip_suffix(".img")?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

fn pid_alive(pid: i32) -> bool {
    // Signal 0 only checks that the process exists. PID 0 (the caller's own process group,
    // which kill(0, 0) reports alive) counts as alive too.
    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
        return true;
    };
    rustix::process::test_kill_process(pid) != Err(rustix::io::Errno::SRCH)
}

/// Loop devices whose backing file is `image` (from /sys/block/loopN/loop/backing_file).
pub fn loops_backed_by(image: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("loop"))
        .filter(|e| {
            std::fs::read_to_string(e.path().join("loop/backing_file")).is_ok_and(|b| {
                let b = b.trim_end_matches('\n');
                let b = b.strip_suffix(" (deleted)").unwrap_or(b);
                Path::new(b) == image
            })
        })
        .map(|e| Path::new("/dev").join(e.file_name()))
        .collect()
}

/// Remove what a killed raw sweep left in `dir`: a `.fsbench-raw-PID.img` whose PID is dead
/// and that carries fsbench's mark (name and mark: never a file fsbench did not make), after
/// detaching the loop devices whose backing file is that image. Returns what was removed.
pub(crate) fn clean_stale(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return removed;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(stale_pid) else {
            continue;
        };
        if pid as u32 == std::process::id() || pid_alive(pid) {
            continue;
        }
        let path = e.path();
        // Opened without following a link; a regular file with the mark only.
        let Ok(f) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
        else {
            continue;
        };
        if !f.metadata().is_ok_and(|m| m.is_file()) || !crate::safety::fd_is_marked(&f) {
            continue;
        }
        let Ok(canon) = std::fs::canonicalize(&path) else {
            continue;
        };
        let mut detached = true;
        for dev in loops_backed_by(&canon) {
            let ok = Command::new("losetup")
                .arg("-d")
                .arg(&dev)
                .status()
                .is_ok_and(|s| s.success());
            detached &= ok;
        }
        // A device still attached keeps the image: removing it would not free the space.
        if detached && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// Write `size` bytes of non-repeating data (so the device reads real blocks), then fsync.
fn fill(path: &Path, size: u64) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    crate::safety::mark_created(path);
    let pool = crate::engine::BufferPool::new(1, 1 << 20, 0x7a3d)?;
    let buf = pool.slot(0);
    let mut left = size;
    while left > 0 {
        let n = (left as usize).min(buf.len());
        f.write_all(&buf[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}

impl Drop for RawDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        let _ = std::fs::remove_file(&self.backing);
    }
}

/// Makes a loop device on first use (big enough for the largest request) and keeps it.
#[derive(Default)]
pub struct RawProvider {
    dev: Option<RawDevice>,
    refusal: Option<String>,
}

impl RawProvider {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// A block device of at least `size` bytes backed by a file in `dir`, or why there is
    /// none (the first refusal, repeated for every later point).
    pub fn device(&mut self, dir: &Path, size: u64) -> anyhow::Result<PathBuf> {
        if let Some(r) = &self.refusal {
            return Err(anyhow::Error::msg(r.clone()));
        }
        if let Some(d) = &self.dev {
            if d.size >= size && d.backing.parent() == Some(dir) {
                return Ok(d.dev.clone());
            }
        }
        self.dev = None;
        match RawDevice::create(dir, size) {
            Ok(d) => {
                let p = d.dev.clone();
                self.dev = Some(d);
                Ok(p)
            }
            Err(e) => {
                self.refusal = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// Detach the device and remove its backing file.
    pub fn release(&mut self) {
        self.dev = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Once refused, every later point gets the same reason, without trying again.
    #[test]
    fn a_refusal_is_repeated_word_for_word() {
        let mut p = RawProvider {
            refusal: Some("raw I/O needs a block device: nope".into()),
            ..RawProvider::new()
        };
        let d = tempfile::tempdir().unwrap();
        for _ in 0..2 {
            let e = p.device(d.path(), 1 << 20).unwrap_err();
            assert_eq!(e.to_string(), "raw I/O needs a block device: nope");
        }
        assert!(std::fs::read_dir(d.path()).unwrap().next().is_none());
    }

    /// The skip of a raw point on ranks names the first rank without a device, or says that
    /// every rank gave the same reason.
    #[test]
    fn a_ranks_skip_names_the_first_rank_without_a_device() {
        let a = |host: &str, why: Option<&str>| (host.to_string(), why.map(String::from));
        assert_eq!(ranks_skip_reason(&[a("h0", None), a("h1", None)]), None);
        assert_eq!(ranks_skip_reason(&[]), None);
        assert_eq!(
            ranks_skip_reason(&[a("h0", Some("not root")), a("h1", Some("not root"))]).unwrap(),
            "not root (on every rank)"
        );
        assert_eq!(
            ranks_skip_reason(&[a("h0", None), a("h1", Some("no losetup")), a("h2", None)])
                .unwrap(),
            "rank 1 on h1: no losetup"
        );
        assert_eq!(
            ranks_skip_reason(&[
                a("h0", Some("x")),
                a("h1", Some("y")),
                a("h2", Some("x")),
                a("h3", None)
            ])
            .unwrap(),
            "rank 0 on h0: x (and 2 other ranks)"
        );
        assert_eq!(
            ranks_skip_reason(&[a("h0", Some("x")), a("h1", Some("y"))]).unwrap(),
            "rank 0 on h0: x (and 1 other rank)"
        );
    }

    #[test]
    fn stale_images_need_a_dead_pid_and_the_mark() {
        assert_eq!(stale_pid(".fsbench-raw-123.img"), Some(123));
        assert_eq!(stale_pid(".fsbench-raw-12a.img"), None);
        assert_eq!(stale_pid("fsbench-raw-1.img"), None);
        // kill(0, 0) names our own process group: alive, never cleaned.
        assert!(pid_alive(0) && pid_alive(std::process::id() as i32));
        assert!(!pid_alive(2147483000));
        let d = tempfile::tempdir().unwrap();
        // A PID that cannot be alive (above pid_max), marked: removed.
        let dead = d.path().join(".fsbench-raw-2147483000.img");
        std::fs::write(&dead, b"x").unwrap();
        assert!(
            crate::safety::mark_created(&dead),
            "CANNOT RUN: no user xattrs in the temp dir, although build.rs found them (see FSBENCH_TEST_CAPS there)"
        );
        // Same pattern, no mark: somebody else's file, kept.
        let foreign = d.path().join(".fsbench-raw-2147483001.img");
        std::fs::write(&foreign, b"y").unwrap();
        // Our own PID: kept.
        let mine = d
            .path()
            .join(format!(".fsbench-raw-{}.img", std::process::id()));
        std::fs::write(&mine, b"z").unwrap();
        crate::safety::mark_created(&mine);
        let gone = clean_stale(d.path());
        assert_eq!(gone, vec![dead.clone()]);
        assert!(!dead.exists() && foreign.exists() && mine.exists());
    }
}
