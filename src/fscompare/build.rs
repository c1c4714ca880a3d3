//! Building one target of `fscompare`: the volume layout over the scratch devices (btrfs's
//! own data profiles, md or LVM), the real `mkfs.FS`, the mount; its geometry read back with
//! the file system's own tool; and the remount between points. Every command line is kept
//! exactly as run, for the Results.

use super::scratch::{shell_line, tool, unmount, Item, Scratch};
use super::spec::{FsSpec, Layout};
use std::path::{Path, PathBuf};

/// An executable named `name` on PATH (then the sbin directories root's PATH usually has).
pub(crate) fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The file systems this machine can make: the X of every `mkfs.X` found.
pub(crate) fn mkfs_available() -> Vec<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut out: Vec<String> = std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].map(PathBuf::from))
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("mkfs."))
                .map(str::to_string)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// How multi-device layouts can be built for file systems without their own: md, LVM, or
/// why neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Volumes {
    Md(PathBuf),
    Lvm(PathBuf),
    None(String),
}

/// Detect md and device-mapper honestly: the kernel must have the driver (/proc/mdstat,
/// /proc/devices) and the tool must be installed.
pub(crate) fn detect_volumes() -> Volumes {
    let devices = std::fs::read_to_string("/proc/devices").unwrap_or_default();
    let block: Vec<&str> = devices
        .lines()
        .skip_while(|l| !l.starts_with("Block devices"))
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let md_kernel = Path::new("/proc/mdstat").exists() || block.contains(&"md");
    let dm_kernel = block.contains(&"device-mapper");
    let mdadm = which("mdadm");
    let lvm = which("lvm");
    match (md_kernel, mdadm, dm_kernel, lvm) {
        (true, Some(m), _, _) => Volumes::Md(m),
        (_, _, true, Some(l)) => Volumes::Lvm(l),
        (md, mdadm, dm, lvm) => {
            let mut why = Vec::new();
            if !md && !dm {
                why.push(
                    "no md/device-mapper in this kernel (/proc/devices lists neither, no /proc/mdstat)"
                        .to_string(),
                );
            } else {
                if !md {
                    why.push("no md in this kernel".into());
                }
                if !dm {
                    why.push("no device-mapper in this kernel".into());
                }
            }
            if md && mdadm.is_none() {
                why.push("mdadm is not installed".into());
            }
            if dm && lvm.is_none() {
                why.push("lvm is not installed".into());
            }
            Volumes::None(why.join("; "))
        }
    }
}

/// Why `layout` cannot be built for `fs` here, if it cannot.
pub(crate) fn unbuildable(fs: &str, layout: Layout, volumes: &Volumes) -> Option<String> {
    match layout {
        Layout::Single => None,
        Layout::Stripe { unit, .. } if fs == "btrfs" && unit != 64 << 10 => Some(format!(
            "btrfs stripes data (-d raid0) in a fixed 64 KiB unit: {} cannot be built with btrfs's own profile",
            layout.label()
        )),
        _ if fs == "btrfs" => None,
        _ => match volumes {
            Volumes::None(why) => Some(format!("{} of {fs} needs md or LVM: {why}", layout.label())),
            _ => None,
        },
    }
}

/// A built, mounted target.
pub(crate) struct Built {
    pub spec: FsSpec,
    pub layout: Layout,
    pub label: String,
    /// The member devices (loop devices or the user's).
    pub devices: Vec<PathBuf>,
    /// The device mkfs and mount were given (an md array, an LV, or the first member).
    pub fs_device: PathBuf,
    pub mnt: PathBuf,
    /// Every command that built it, in order, as a shell would take it.
    pub commands: Vec<String>,
    pub mkfs: String,
    pub mount_argv: Vec<String>,
    pub geometry: serde_json::Value,
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn run_logged(argv: Vec<String>, log: &mut Vec<String>) -> anyhow::Result<String> {
    log.push(shell_line(&argv));
    tool(&argv).map_err(anyhow::Error::msg)
}

/// Combine `devices` into the layout (md/LVM for file systems other than btrfs); returns the
/// device for mkfs.
fn build_volume(
    scratch: &mut Scratch,
    fs: &str,
    layout: Layout,
    devices: &[PathBuf],
    volumes: &Volumes,
    log: &mut Vec<String>,
) -> anyhow::Result<PathBuf> {
    if layout == Layout::Single || fs == "btrfs" {
        return Ok(devices[0].clone());
    }
    let name = scratch
        .fresh_name("")
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match volumes {
        Volumes::Md(mdadm) => {
            let dev = PathBuf::from(format!("/dev/md/{name}"));
            let mut argv = vec![
                s(mdadm),
                "--create".into(),
                s(&dev),
                "--run".into(),
                "--metadata=1.2".into(),
            ];
            match layout {
                Layout::Stripe { n, unit } => {
                    argv.push("--level=0".into());
                    argv.push(format!("--chunk={}K", unit >> 10));
                    argv.push(format!("--raid-devices={n}"));
                }
                Layout::Concat { n } => {
                    argv.push("--level=linear".into());
                    argv.push(format!("--raid-devices={n}"));
                }
                Layout::Single => {}
            }
            argv.extend(devices.iter().map(|d| s(d)));
            scratch.make(Item::Md(dev.clone()), || run_logged(argv, log))?;
            Ok(dev)
        }
        Volumes::Lvm(lvm) => {
            let vg = name.replace('-', "_");
            let mut pv = vec![s(lvm), "pvcreate".into(), "-ff".into(), "-y".into()];
            pv.extend(devices.iter().map(|d| s(d)));
            let mut vgc = vec![s(lvm), "vgcreate".into(), vg.clone()];
            vgc.extend(devices.iter().map(|d| s(d)));
            scratch.make(Item::Vg(vg.clone(), devices.to_vec()), || {
                run_logged(pv, log)?;
                run_logged(vgc, log)
            })?;
            let mut lv = vec![
                s(lvm),
                "lvcreate".into(),
                "-y".into(),
                "-n".into(),
                "fsbench".into(),
                "-l".into(),
                "100%FREE".into(),
            ];
            if let Layout::Stripe { n, unit } = layout {
                lv.extend([
                    "-i".into(),
                    n.to_string(),
                    "-I".into(),
                    format!("{}k", unit >> 10),
                ]);
            }
            lv.push(vg.clone());
            run_logged(lv, log)?;
            Ok(PathBuf::from(format!("/dev/{vg}/fsbench")))
        }
        Volumes::None(why) => anyhow::bail!("{why}"),
    }
}

/// Build `spec` over `devices` in `layout` and mount it in a new directory of the scratch
/// directory; everything is recorded in the scratch state before it is made.
pub(crate) fn build(
    scratch: &mut Scratch,
    spec: &FsSpec,
    layout: Layout,
    label: &str,
    devices: Vec<PathBuf>,
    volumes: &Volumes,
) -> anyhow::Result<Built> {
    let mut log = Vec::new();
    let fs_device = build_volume(scratch, &spec.fs, layout, &devices, volumes, &mut log)?;
    let mkfs_path = which(&format!("mkfs.{}", spec.fs))
        .ok_or_else(|| anyhow::anyhow!("mkfs.{} is no longer on PATH", spec.fs))?;
    let mut mkfs = vec![s(&mkfs_path)];
    let btrfs_multi = spec.fs == "btrfs" && layout != Layout::Single;
    if btrfs_multi {
        let profile = if matches!(layout, Layout::Stripe { .. }) {
            "raid0"
        } else {
            "single"
        };
        mkfs.extend(["-d".into(), profile.into()]);
    }
    mkfs.extend(spec.mkfs_opts.iter().cloned());
    if btrfs_multi {
        mkfs.extend(devices.iter().map(|d| s(d)));
    } else {
        mkfs.push(s(&fs_device));
    }
    let mkfs_line = shell_line(&mkfs);
    run_logged(mkfs, &mut log).map_err(|e| anyhow::anyhow!("building {label}: {e}"))?;
    let mnt = scratch.mount_dir()?;
    let mut opts: Vec<String> = spec.mount_opts.iter().cloned().collect();
    if btrfs_multi {
        // The kernel learns the other members from the mount options, not from a scan.
        opts.extend(devices[1..].iter().map(|d| format!("device={}", s(d))));
    }
    let mut mount_argv = vec!["mount".to_string(), "-t".into(), spec.fs.clone()];
    if !opts.is_empty() {
        mount_argv.extend(["-o".into(), opts.join(",")]);
    }
    mount_argv.push(s(&fs_device));
    mount_argv.push(s(&mnt));
    let m = mount_argv.clone();
    let mut mlog = Vec::new();
    scratch
        .mount(&fs_device, &mnt, || run_logged(m, &mut mlog))
        .map_err(|e| anyhow::anyhow!("mounting {label}: {e}"))?;
    log.extend(mlog);
    let geometry = geometry(&spec.fs, &fs_device, &mnt);
    Ok(Built {
        spec: spec.clone(),
        layout,
        label: label.to_string(),
        devices,
        fs_device,
        mnt,
        commands: log,
        mkfs: mkfs_line,
        mount_argv,
        geometry,
    })
}

/// The file system's geometry from its own tool: the command, its output, and what
/// fsbench's parser (the one `advise` uses) reads from it.
fn geometry(fs: &str, dev: &Path, mnt: &Path) -> serde_json::Value {
    let argvs: Vec<Vec<String>> = match fs {
        "xfs" => vec![vec!["xfs_info".into(), s(mnt)]],
        "ext2" | "ext3" | "ext4" => vec![vec!["dumpe2fs".into(), "-h".into(), s(dev)]],
        "btrfs" => vec![
            vec!["btrfs".into(), "filesystem".into(), "show".into(), s(mnt)],
            vec!["btrfs".into(), "filesystem".into(), "df".into(), s(mnt)],
        ],
        _ => {
            return serde_json::json!({
                "note": format!("fsbench knows no geometry tool for {fs}")
            })
        }
    };
    let mut cmds = Vec::new();
    let mut text = String::new();
    for a in &argvs {
        cmds.push(shell_line(a));
        match tool(a) {
            Ok(out) => text.push_str(&out),
            Err(e) => text.push_str(&format!("({e})\n")),
        }
    }
    let parsed = match fs {
        "xfs" => crate::probe::fsgeom::parse_xfs_info(&text),
        "ext2" | "ext3" | "ext4" => crate::probe::fsgeom::parse_dumpe2fs(&text),
        _ => None,
    };
    serde_json::json!({ "commands": cmds, "output": text, "parsed": parsed })
}

impl Built {
    /// What every Result measured on this target carries (`probes.fscompare`).
    pub(crate) fn probe(&self, scratch_kind: &str) -> serde_json::Value {
        serde_json::json!({
            "fs": self.spec.fs,
            "spec": self.spec.text,
            "layout": self.layout.label(),
            "target": self.label,
            "storage": scratch_kind,
            "devices": self.devices.iter().map(|d| s(d)).collect::<Vec<_>>(),
            "fs_device": s(&self.fs_device),
            "mkfs": self.mkfs,
            "mount": shell_line(&self.mount_argv),
            "commands": self.commands,
            "geometry": self.geometry,
            "between_points": "sync; umount; echo 3 > /proc/sys/vm/drop_caches; mount again",
        })
    }
}

/// Between points: sync, unmount, drop the page, dentry and inode caches, mount again with
/// the same command that built the target. The state file follows: the mount's ID is
/// forgotten before the mount is made again (the device it mounts still identifies it) and
/// the new ID recorded once it is.
pub(crate) fn remount(
    scratch: &std::cell::RefCell<Scratch>,
    mnt: &Path,
    mount_argv: &[String],
) -> anyhow::Result<()> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    unmount(mnt).map_err(anyhow::Error::msg)?;
    let dropped = std::fs::write("/proc/sys/vm/drop_caches", b"3");
    // Mount again whatever happened to the drop: the target must come back.
    scratch.borrow_mut().record_mount_id(mnt, false)?;
    tool(mount_argv).map_err(anyhow::Error::msg)?;
    scratch.borrow_mut().record_mount_id(mnt, true)?;
    dropped.map_err(|e| anyhow::anyhow!("cannot drop caches: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_that_cannot_be_built_say_why() {
        let none = Volumes::None("no md/device-mapper in this kernel".into());
        let md = Volumes::Md("/sbin/mdadm".into());
        let stripe64 = Layout::Stripe {
            n: 2,
            unit: 64 << 10,
        };
        let stripe128 = Layout::Stripe {
            n: 2,
            unit: 128 << 10,
        };
        assert_eq!(unbuildable("xfs", Layout::Single, &none), None);
        assert_eq!(unbuildable("btrfs", stripe64, &none), None);
        assert_eq!(unbuildable("btrfs", Layout::Concat { n: 2 }, &none), None);
        assert!(unbuildable("btrfs", stripe128, &md)
            .unwrap()
            .contains("fixed 64 KiB"));
        assert!(unbuildable("xfs", stripe64, &none)
            .unwrap()
            .contains("no md/device-mapper"));
        assert_eq!(unbuildable("xfs", stripe64, &md), None);
    }

    #[test]
    fn detection_matches_the_kernel() {
        let devices = std::fs::read_to_string("/proc/devices").unwrap_or_default();
        let dm = devices.lines().any(|l| l.ends_with(" device-mapper"));
        let md = Path::new("/proc/mdstat").exists() || devices.lines().any(|l| l.ends_with(" md"));
        match detect_volumes() {
            Volumes::Md(_) => assert!(md),
            Volumes::Lvm(_) => assert!(dm),
            Volumes::None(why) => {
                assert!(!why.is_empty());
                if !md && !dm {
                    assert!(why.contains("no md/device-mapper in this kernel"), "{why}");
                }
            }
        }
    }
}
