//! The backup study through the Engine: direct I/O on a device with 4096-byte logical
//! sectors, where the study's 32256-byte records are not a multiple of the sector size.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// A loop device with 4096-byte logical sectors, ext4 on it, mounted; all undone on drop.
struct Mounted4k {
    mnt: tempfile::TempDir,
    dev: PathBuf,
}

impl Mounted4k {
    fn new(dir: &Path) -> Option<Self> {
        let backing = dir.join("loop-4k.img");
        let f = std::fs::File::create(&backing).ok()?;
        f.set_len(64 << 20).ok()?;
        let out = std::process::Command::new("losetup")
            .args(["--find", "--show", "--sector-size", "4096"])
            .arg(&backing)
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!("losetup: {}", String::from_utf8_lossy(&out.stderr).trim());
            return None;
        }
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
        let mnt = tempfile::tempdir().ok()?;
        let m = Mounted4k { mnt, dev };
        let ok = |c: &mut std::process::Command| c.status().is_ok_and(|s| s.success());
        if !ok(std::process::Command::new("mkfs.ext4")
            .args(["-F", "-q"])
            .arg(&m.dev))
            || !ok(std::process::Command::new("mount")
                .arg(&m.dev)
                .arg(m.mnt.path()))
        {
            eprintln!("mkfs.ext4 or mount of {} failed", m.dev.display());
            return None;
        }
        Some(m)
    }
}

impl Drop for Mounted4k {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.mnt.path())
            .status();
        let _ = std::process::Command::new("losetup")
            .arg("-d")
            .arg(&self.dev)
            .status();
    }
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4"
)]
fn backup_direct_phases_work_on_4k_sector_devices() {
    let sb = Sandbox::new();
    let Some(fs) = Mounted4k::new(sb.path()) else {
        cannot("a 4k-sector loop device with ext4");
    };
    let data = fs.mnt.path().to_str().unwrap().to_string();
    let out = sb
        .cmd(&[
            "suite", "backup", "--dir", &data, "--scale", "0.002", "--output", "bk",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut n = 0;
    for e in std::fs::read_dir(sb.file("bk")).unwrap().flatten() {
        if e.path().extension().is_none_or(|x| x != "json") || e.file_name() == "suite.json" {
            continue;
        }
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap();
        assert_eq!(
            r["status"],
            "complete",
            "{}: {}",
            e.path().display(),
            r["failures"]
        );
        if r["backup"]["phase"] == "restore" {
            assert_eq!(r["probes"]["verified"], true);
        }
        n += 1;
    }
    assert_eq!(n, 4);
    assert_eq!(
        std::fs::read_dir(fs.mnt.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name() != "lost+found")
            .count(),
        0
    );
}
