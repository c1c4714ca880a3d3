//! Raw-device points without a spare disk: when root, fsbench creates a scratch file in the
//! output directory, fills it with data, attaches a loop device to it (direct I/O on the
//! backing file when the kernel allows it), and detaches and removes both afterwards. Without
//! root the raw points are skipped with that reason: nothing pretends to be raw I/O.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A loop device over a scratch file fsbench created.
pub struct RawDevice {
    pub dev: PathBuf,
    pub backing: PathBuf,
    pub size: u64,
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl RawDevice {
    /// Create a filled scratch file of `size` bytes in `dir` and attach a loop device.
    pub fn create(dir: &Path, size: u64) -> Result<RawDevice, String> {
        if !is_root() {
            return Err("raw I/O needs a block device: not root, so no loop device was made (run as root, or sweep a block device you name)".into());
        }
        if !Path::new("/dev/loop-control").exists() {
            return Err(
                "raw I/O needs a block device: this system has no /dev/loop-control".into(),
            );
        }
        let backing = dir.join(format!(".fsbench-raw-{}.img", std::process::id()));
        fill(&backing, size).map_err(|e| {
            let _ = std::fs::remove_file(&backing);
            format!(
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
                    return Err(format!(
                        "losetup failed: {}",
                        String::from_utf8_lossy(&o.stderr).trim()
                    ));
                }
                Err(e) => {
                    let _ = std::fs::remove_file(&backing);
                    return Err(format!("cannot run losetup: {e}"));
                }
            },
        };
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
        Ok(RawDevice { dev, backing, size })
    }
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
    pub fn new() -> Self {
        Self::default()
    }

    /// A block device of at least `size` bytes backed by a file in `dir`, or why there is none.
    pub fn device(&mut self, dir: &Path, size: u64) -> Result<PathBuf, String> {
        if let Some(r) = &self.refusal {
            return Err(r.clone());
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
                self.refusal = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Detach the device and remove its backing file.
    pub fn release(&mut self) {
        self.dev = None;
    }
}
