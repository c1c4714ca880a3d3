//! `fsbench fscompare`: file systems and layouts built on scratch loop devices, a tiny
//! workload on each, and nothing left behind (no loop device, no mount, no file) after
//! success, after a failed mkfs, after Ctrl-C and after SIGKILL plus a rerun. Bad input is
//! one line and exit 2 on any machine.

mod common;
use common::{cannot, Sandbox};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn check_machine() {
    if !common::can_use_loop_devices() {
        cannot("not root, or no losetup or /dev/loop-control");
    }
    for fs in ["ext4", "xfs", "btrfs"] {
        let found = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
            .iter()
            .any(|d| Path::new(d).join(format!("mkfs.{fs}")).exists());
        if !found {
            cannot(&format!("mkfs.{fs} is not installed"));
        }
    }
}

/// Does this kernel have md or device-mapper (then stripes of ext4/xfs can be built)?
fn has_md_or_dm() -> bool {
    let d = std::fs::read_to_string("/proc/devices").unwrap_or_default();
    Path::new("/proc/mdstat").exists()
        || d.lines()
            .any(|l| l.ends_with(" md") || l.ends_with(" device-mapper"))
}

/// Everything of `scratch` still present: loop devices over files in it, mounts in it, and
/// the entries of the directory itself.
fn leftovers(scratch: &Path) -> Vec<String> {
    let s = scratch.display().to_string();
    let mut out = Vec::new();
    let loops = std::process::Command::new("losetup")
        .arg("-a")
        .output()
        .expect("losetup -a");
    for l in String::from_utf8_lossy(&loops.stdout).lines() {
        if l.contains(&s) {
            out.push(format!("loop: {l}"));
        }
    }
    for l in std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
    {
        if l.contains(&s) {
            out.push(format!("mount: {l}"));
        }
    }
    if let Ok(rd) = std::fs::read_dir(scratch) {
        for e in rd.flatten() {
            out.push(format!("file: {}", e.path().display()));
        }
    }
    out
}

/// Results of the output directory by kind: (measured results, skipped records).
fn results(out: &Path) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let mut run = Vec::new();
    let mut skip = Vec::new();
    for e in std::fs::read_dir(out).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().to_string();
        if !n.ends_with(".json") || n.starts_with("advise-") || n == "fscompare.json" {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap();
        if v["kind"] == "skipped" {
            skip.push(v);
        } else {
            run.push(v);
        }
    }
    (run, skip)
}

fn fsbench() -> PathBuf {
    assert_cmd::cargo::cargo_bin("fsbench")
}

/// A tiny workload on every target (300 MiB loop files, the XFS minimum).
fn tiny(sb: &Sandbox, fs: &[&str], extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = vec!["fscompare".into()];
    for f in fs {
        a.extend(["--fs".to_string(), f.to_string()]);
    }
    a.extend(
        [
            "--size",
            "300m",
            "--workload",
            "filemicro_rwrite",
            "-D",
            "filesize=32m",
            "-D",
            "iosize=4k",
            "--output",
        ]
        .map(String::from),
    );
    a.push(sb.file("out").display().to_string());
    a.push("--scratch".into());
    a.push(sb.file("scratch").display().to_string());
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4, has_mkfs_xfs, has_mkfs_btrfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4, mkfs.xfs, mkfs.btrfs"
)]
fn ext4_xfs_btrfs_and_btrfs_raid0_are_built_measured_and_torn_down() {
    check_machine();
    let sb = Sandbox::new();
    let args = tiny(
        &sb,
        &["ext4,xfs", "btrfs"],
        &["--layout", "single,stripe:2x64k", "--time", "1s"],
    );
    let out = sb
        .cmd(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(leftovers(&sb.file("scratch")), Vec::<String>::new());
    assert!(
        !sb.file("scratch").exists(),
        "the scratch dir fsbench made is removed"
    );
    let (run, skip) = results(&sb.file("out"));
    let mut targets: Vec<String> = run
        .iter()
        .map(|r| r["probes"]["sweep"]["target"].as_str().unwrap().to_string())
        .collect();
    targets.sort();
    let mut want = vec!["btrfs", "btrfs on stripe:2x64k", "ext4", "xfs"];
    if has_md_or_dm() {
        want.extend(["ext4 on stripe:2x64k", "xfs on stripe:2x64k"]);
        want.sort();
    }
    assert_eq!(targets, want, "{err}");
    for r in &run {
        let f = &r["probes"]["fscompare"];
        // The same record is the Result's environment: how the storage was built.
        assert_eq!(&r["environment"]["built"], f, "{r}");
        let fs = f["fs"].as_str().unwrap();
        assert!(
            f["mkfs"].as_str().unwrap().contains(&format!("mkfs.{fs}")),
            "{f}"
        );
        assert!(f["mount"].as_str().unwrap().starts_with("mount -t "), "{f}");
        assert_eq!(r["status"], "complete", "{r}");
        assert!(r["total"]["iops"].as_f64().unwrap() > 0.0, "{r}");
        // The geometry came from the file system's own tool.
        let g = &f["geometry"];
        match fs {
            "xfs" => {
                assert!(g["commands"][0].as_str().unwrap().starts_with("xfs_info"));
                assert_eq!(g["parsed"]["fs_type"], "xfs", "{g}");
            }
            "ext4" => {
                assert!(g["commands"][0]
                    .as_str()
                    .unwrap()
                    .starts_with("dumpe2fs -h"));
                assert!(g["parsed"]["block_size_bytes"].as_u64().is_some(), "{g}");
            }
            _ => assert!(
                g["output"].as_str().unwrap().contains("Total devices"),
                "{g}"
            ),
        }
        if f["layout"] == "stripe:2x64k" {
            assert!(f["mkfs"].as_str().unwrap().contains("-d raid0"), "{f}");
            assert_eq!(f["devices"].as_array().unwrap().len(), 2);
            assert!(g["output"].as_str().unwrap().contains("RAID0"), "{g}");
        }
    }
    if !has_md_or_dm() {
        assert_eq!(skip.len(), 2, "{err}");
        for s in &skip {
            assert!(
                s["reason"]
                    .as_str()
                    .unwrap()
                    .contains("no md/device-mapper in this kernel"),
                "{s}"
            );
        }
        assert!(
            err.contains("SKIPPED: stripe:2x64k of xfs needs md or LVM"),
            "{err}"
        );
    }
    // advise ran on every built target; its document is beside the results.
    let advise = std::fs::read_dir(sb.file("out"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("advise-"))
        .count();
    assert_eq!(advise, run.len());
    // The results read like any others: report with a baseline, and compare.
    let html = sb.file("r.html");
    sb.cmd(&[
        "report",
        sb.file("out").to_str().unwrap(),
        "--format",
        "html",
        "--baseline",
        "ext4",
        "--output",
        html.to_str().unwrap(),
    ])
    .assert()
    .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("normalised to the baseline"),
        "no baseline summary"
    );
    assert!(
        page.contains("difference from ext4"),
        "no chart normalised to ext4"
    );
    let o = sb.file("out");
    sb.cmd(&["compare", o.to_str().unwrap(), o.to_str().unwrap()])
        .assert()
        .success();
    // fscompare's own report.html (normalised to the first target) renders in a browser,
    // with the normalised summary and a bar per target.
    if cfg!(has_chromium) {
        let dom = common::dom_in_chromium(&sb.file("out").join("report.html"));
        assert!(
            dom.contains("class=\"chart normalised"),
            "no normalised chart"
        );
        assert!(dom.contains("Summary (ext4 = 0)"), "not normalised to ext4");
        for t in ["xfs", "btrfs on stripe:2x64k"] {
            assert!(dom.contains(&format!("<title>{t}: ")), "no bar of {t}");
        }
    }
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4, has_mkfs_xfs, has_mkfs_btrfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4, mkfs.xfs, mkfs.btrfs"
)]
fn a_failed_mkfs_is_recorded_and_leaves_nothing() {
    check_machine();
    let sb = Sandbox::new();
    let args = tiny(
        &sb,
        &["ext4", "xfs:-d agcount=0", "btrfs"],
        &["--time", "1s"],
    );
    let out = sb
        .cmd(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(leftovers(&sb.file("scratch")), Vec::<String>::new());
    let (run, skip) = results(&sb.file("out"));
    assert_eq!(run.len(), 2, "ext4 and btrfs still measured: {err}");
    assert_eq!(skip.len(), 1);
    let why = skip[0]["reason"].as_str().unwrap();
    assert!(
        why.contains("mkfs.xfs") && why.contains("agcount=0"),
        "{why}"
    );
    // mkfs.xfs's own reason, not the tail of its usage text.
    assert!(why.contains("Value is too small"), "{why}");
}

/// Start a long fscompare, wait until its first file system is mounted.
fn start_long(sb: &Sandbox) -> std::process::Child {
    let args = tiny(sb, &["ext4,xfs"], &["--time", "30s"]);
    let child = std::process::Command::new(fsbench())
        .args(&args[..])
        .current_dir(sb.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let scratch = sb.file("scratch").display().to_string();
    let t = Instant::now();
    while !std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .contains(&scratch)
    {
        assert!(t.elapsed() < Duration::from_secs(60), "nothing was mounted");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Into the workload: past the remount before the point (the file system is mounted
    // again and the workload's files are being made in it), however loaded the machine is.
    let workload_started = || {
        std::fs::read_dir(sb.file("scratch"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".mnt"))
            .flat_map(|m| std::fs::read_dir(m.path()).into_iter().flatten().flatten())
            .any(|e| e.file_name() != "lost+found")
    };
    while !workload_started() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the workload did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    child
}

fn stderr_of(child: std::process::Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4, has_mkfs_xfs, has_mkfs_btrfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4, mkfs.xfs, mkfs.btrfs"
)]
fn ctrl_c_tears_everything_down_and_exits_130() {
    check_machine();
    let sb = Sandbox::new();
    let t = Instant::now();
    let child = start_long(&sb);
    // SAFETY: kill(2) on the child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (code, err) = stderr_of(child);
    assert_eq!(code, Some(130), "{err}");
    assert!(
        t.elapsed() < Duration::from_secs(50),
        "Ctrl-C did not stop the run"
    );
    assert_eq!(
        leftovers(&sb.file("scratch")),
        Vec::<String>::new(),
        "{err}"
    );
    assert!(err.contains("interrupted"), "{err}");
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4, has_mkfs_xfs, has_mkfs_btrfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4, mkfs.xfs, mkfs.btrfs"
)]
fn after_sigkill_the_next_run_cleans_up_and_says_so() {
    check_machine();
    let sb = Sandbox::new();
    let mut child = start_long(&sb);
    child.kill().unwrap();
    let _ = child.wait();
    let scratch = sb.file("scratch");
    let left = leftovers(&scratch);
    assert!(left.iter().any(|l| l.starts_with("loop:")), "{left:?}");
    assert!(left.iter().any(|l| l.starts_with("mount:")), "{left:?}");
    assert!(scratch.join(".fsbench-fscompare.state").exists());
    // The workload's processes die with their parent; give them a moment.
    std::thread::sleep(Duration::from_millis(500));
    let args = tiny(&sb, &["ext4"], &["--time", "1s"]);
    let out = sb
        .cmd(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("cleaned up after an earlier fscompare run"),
        "{err}"
    );
    assert!(
        err.contains("unmounted") && err.contains("detached"),
        "{err}"
    );
    // The scratch dir is the user's (--scratch existed on the rerun): empty, not removed.
    assert_eq!(leftovers(&scratch), Vec::<String>::new());
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let sb = Sandbox::new();
    for (args, want) in [
        (
            &["fscompare", "--fs", "ext4;no atime", "--workload", "oltp"][..],
            "expected FS[:MKFS OPTIONS][;MOUNT OPTIONS]",
        ),
        (
            &[
                "fscompare",
                "--fs",
                "xfs:-f -l logdev=/dev/loop1,size=64m",
                "--workload",
                "oltp",
            ],
            "mkfs.xfs option '-l logdev=/dev/loop1,size=64m': 'logdev' names a device or file",
        ),
        (
            &[
                "fscompare",
                "--fs",
                "btrfs:-f rel.img",
                "--workload",
                "oltp",
            ],
            "mkfs.btrfs argument 'rel.img' is not an option",
        ),
        (
            &[
                "fscompare",
                "--fs",
                "btrfs;device=/dev/loop1",
                "--workload",
                "oltp",
            ],
            "mount option 'device=/dev/loop1' names a device or file",
        ),
        (
            &["fscompare", "--fs", "EXT4", "--workload", "oltp"],
            "expected FS[:MKFS OPTIONS][;MOUNT OPTIONS]",
        ),
        (
            &[
                "fscompare",
                "--fs",
                "ext4",
                "--layout",
                "raid5",
                "--workload",
                "oltp",
            ],
            "expected single, stripe:NxUNIT",
        ),
        (
            &[
                "fscompare",
                "--fs",
                "ext4",
                "--layout",
                "stripe:2x3k",
                "--workload",
                "oltp",
            ],
            "expected single, stripe:NxUNIT",
        ),
        (
            &["fscompare", "--fs", "nosuchfs", "--workload", "oltp"],
            "no mkfs.nosuchfs on PATH; this machine has mkfs.{",
        ),
        (&["fscompare", "--fs", "ext4"], "exactly one of --suite"),
        (
            &[
                "fscompare",
                "--fs",
                "ext4",
                "--suite",
                "shootout",
                "--workload",
                "oltp",
            ],
            "exactly one of --suite",
        ),
        (
            &[
                "fscompare",
                "--fs",
                "ext4",
                "--sweep",
                "--rw read --bs 4k,64k",
            ],
            "nothing bounds each point",
        ),
        (
            &["fscompare", "--fs", "ext4", "--sweep", "--nosuch 1"],
            "bad --sweep",
        ),
        (
            &[
                "fscompare",
                "--fs",
                "ext4",
                "--suite",
                "shootout",
                "--baseline",
                "zfs",
            ],
            "--baseline 'zfs' is not one of the targets",
        ),
        (
            &[
                "fscompare",
                "--fs",
                "ext4",
                "--workload",
                "oltp",
                "--device",
                "/dev/null",
            ],
            "add --force",
        ),
        (
            &[
                "fscompare",
                "--fs",
                "ext4",
                "--workload",
                "oltp",
                "--size",
                "1m",
            ],
            "bad --size",
        ),
        (
            &["fscompare", "--fs", "ext4", "--workload", "oltp", "--keep"],
            "always tears down",
        ),
    ] {
        let out = sb.cmd(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(
        !sb.file("fsbench-fscompare").exists(),
        "nothing is created before the input is checked"
    );
}

/// Without root: one line, exit 2. As root the binary is run as user nobody (setpriv), so
/// the refusal is exercised for real on either kind of machine.
#[test]
fn without_root_one_line_and_exit_2() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    // The binary copied where user nobody may run it (the checkout may be private to root).
    let public = tempfile::tempdir().unwrap();
    let bin = public.path().join("fsbench");
    let mut cmd = if root {
        use std::os::unix::fs::PermissionsExt;
        std::fs::copy(fsbench(), &bin).unwrap();
        for (p, mode) in [(public.path(), 0o755), (bin.as_path(), 0o755)] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin);
        c
    } else {
        std::process::Command::new(fsbench())
    };
    // A directory anyone may enter: the sandbox is private to root.
    let out = cmd
        .current_dir("/")
        .args(["fscompare", "--fs", "ext4", "--workload", "oltp"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("fscompare needs root"), "{err}");
    assert_eq!(err.lines().count(), 1);
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4, has_mkfs_xfs, has_mkfs_btrfs, has_strace)),
    ignore = "SKIPPED: needs root, loop devices, mkfs.ext4 and strace"
)]
fn a_sweep_remounts_and_drops_caches_before_every_point() {
    check_machine();
    let sb = Sandbox::new();
    let trace = sb.file("trace");
    let out = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=execve,openat", "-o"])
        .arg(&trace)
        .arg(fsbench())
        .args(["fscompare", "--fs", "ext4", "--size", "300m", "--output"])
        .arg(sb.file("out"))
        .arg("--sweep")
        // --sweep takes the point's options as one string, as a user quotes them.
        .arg(
            [
                "--rw write,read,randread",
                "--bs 64k --size 8m --cache buffered",
            ]
            .join(" "),
        )
        .current_dir(sb.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let t = std::fs::read_to_string(&trace).unwrap();
    let drops = t
        .lines()
        .filter(|l| l.contains("openat(") && l.contains("/proc/sys/vm/drop_caches"))
        .count();
    let umounts = t
        .lines()
        .filter(|l| {
            l.contains("execve(\"") && l.contains("umount\", [\"umount\"") && l.ends_with("= 0")
        })
        .count();
    let mounts = t
        .lines()
        .filter(|l| {
            l.contains("execve(\"") && l.contains("mount\", [\"mount\"") && l.ends_with("= 0")
        })
        .count();
    // Three points: three drops and remounts, plus the first mount and the last unmount.
    assert_eq!(drops, 3, "drop_caches writes");
    assert_eq!(umounts, 4, "umount runs");
    assert_eq!(mounts, 4, "mount runs");
    let (run, _) = results(&sb.file("out"));
    assert_eq!(run.len(), 3);
    for r in &run {
        assert_eq!(r["probes"]["sweep"]["target"], "ext4");
        assert_eq!(r["probes"]["fscompare"]["fs"], "ext4");
    }
    assert_eq!(
        leftovers(&sb.file("out").join("scratch")),
        Vec::<String>::new()
    );
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4, has_mkfs_xfs, has_mkfs_btrfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4, mkfs.xfs, mkfs.btrfs"
)]
fn a_job_file_runs_on_each_file_system_in_its_mount() {
    check_machine();
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("j.toml"),
        "name = \"j\"\ntargets = [\"/somewhere/else/data.dat\"]\naccess = \"write\"\nblock_size = 65536\nfile_size = 4194304\n",
    )
    .unwrap();
    let out = sb
        .cmd(&[
            "fscompare",
            "--fs",
            "xfs,btrfs",
            "--size",
            "300m",
            "--job",
            "j.toml",
            "--output",
            "out",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!Path::new("/somewhere/else/data.dat").exists());
    let (run, _) = results(&sb.file("out"));
    let targets: Vec<&str> = run
        .iter()
        .map(|r| r["probes"]["sweep"]["target"].as_str().unwrap())
        .collect();
    assert_eq!(run.len(), 2, "{err}");
    assert!(targets.contains(&"xfs") && targets.contains(&"btrfs"));
    for r in &run {
        let t = r["job"]["targets"][0].as_str().unwrap();
        assert!(t.ends_with(".mnt/data.dat"), "{t}");
        assert_eq!(r["total"]["bytes"].as_u64(), Some(4 << 20), "{r}");
    }
    assert_eq!(
        leftovers(&sb.file("out").join("scratch")),
        Vec::<String>::new()
    );
}

fn blkid_type(dev: &Path) -> String {
    let o = std::process::Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(dev)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4, has_mkfs_xfs, has_mkfs_btrfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4, mkfs.xfs, mkfs.btrfs"
)]
fn a_forced_device_is_used_only_when_blank_and_left_wiped() {
    check_machine();
    let sb = Sandbox::new();
    let Some(lo) = common::LoopDevice::new(sb.path(), 320) else {
        cannot("cannot attach a loop device");
    };
    let dev = lo.dev.display().to_string();
    let args = [
        "fscompare",
        "--fs",
        "ext4,xfs",
        "--device",
        &dev,
        "--force",
        "--workload",
        "filemicro_rwrite",
        "-D",
        "filesize=32m",
        "--time",
        "1s",
        "--output",
        "out",
    ];
    let out = sb.cmd(&args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let (run, _) = results(&sb.file("out"));
    assert_eq!(run.len(), 2, "{err}");
    for r in &run {
        assert_eq!(r["probes"]["fscompare"]["devices"][0], dev.as_str());
    }
    assert_eq!(blkid_type(&lo.dev), "", "the device is left wiped");
    // A device with a signature is refused before anything is written, and kept.
    let mk = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F", "-L", "userdata"])
        .arg(&lo.dev)
        .status()
        .unwrap();
    assert!(mk.success());
    let out = sb.cmd(&args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("refusing --device") && err.contains("ext"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(blkid_type(&lo.dev).contains("LABEL=userdata"));
    // A mounted one too.
    let mnt = tempfile::tempdir().unwrap();
    assert!(std::process::Command::new("mount")
        .arg(&lo.dev)
        .arg(mnt.path())
        .status()
        .unwrap()
        .success());
    let out = sb.cmd(&args).output().unwrap();
    let _ = std::process::Command::new("umount")
        .arg(mnt.path())
        .status();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("mounted"), "{err}");
}

/// A loop device over a file the test made in the scratch directory under fsbench's name;
/// a tmpfs mounted there; an empty directory there: none of them made by fsbench.
struct Foreign {
    mnt: PathBuf,
    dir: PathBuf,
    img: PathBuf,
    dev: PathBuf,
}

impl Foreign {
    fn new(scratch: &Path) -> Foreign {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(scratch)
            .unwrap();
        let mnt = scratch.join("fsbench-fscompare-1-2.mnt");
        let dir = scratch.join("fsbench-fscompare-1-3.mnt");
        let img = scratch.join("fsbench-fscompare-1-1.img");
        std::fs::create_dir(&mnt).unwrap();
        std::fs::create_dir(&dir).unwrap();
        std::fs::File::create(&img)
            .unwrap()
            .set_len(16 << 20)
            .unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
            .arg(&mnt)
            .status()
            .unwrap()
            .success();
        if !ok {
            cannot("cannot mount a tmpfs");
        }
        std::fs::write(mnt.join("users-data"), b"precious").unwrap();
        let out = std::process::Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&img)
            .output()
            .unwrap();
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if !out.status.success() {
            let _ = std::process::Command::new("umount").arg(&mnt).status();
            cannot("cannot attach a loop device");
        }
        Foreign { mnt, dir, img, dev }
    }

    /// A state file naming all of them; `skew` is added to every inode and mount ID (0: the
    /// true identities, as someone who can read /proc would write them).
    fn state(&self, skew: u64) -> String {
        use std::os::unix::fs::MetadataExt;
        let id = |p: &Path| {
            let m = std::fs::symlink_metadata(p).unwrap();
            format!("{}:{}", m.dev(), m.ino() + skew)
        };
        let rdev = std::fs::metadata(&self.dev).unwrap().rdev();
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let line = info
            .lines()
            .find(|l| l.split(' ').nth(4) == Some(self.mnt.to_str().unwrap()))
            .expect("the tmpfs is mounted");
        let f: Vec<&str> = line.split(' ').collect();
        let mount_id: u64 = f[0].parse().unwrap();
        let img = self.img.display();
        format!(
            "fsbench-fscompare state 2 pid 1\nfile\t{img}\t{}\nloop\t{}\t{rdev}\t{img}\t{}\nmntdir\t{}\t{}\nmntdir\t{}\t{}\nmount\t{}\t{rdev}\t{}\t{}\n",
            id(&self.img),
            self.dev.display(),
            id(&self.img),
            self.mnt.display(),
            id(&self.mnt),
            self.dir.display(),
            id(&self.dir),
            self.mnt.display(),
            mount_id + skew,
            f[2],
        )
    }

    /// All three are as the test made them.
    fn untouched(&self) {
        assert_eq!(
            std::fs::read(self.mnt.join("users-data")).unwrap(),
            b"precious",
            "the tmpfs is still mounted with its data"
        );
        assert!(self.dir.is_dir(), "the directory is still there");
        let b = std::fs::read_to_string(format!(
            "/sys/block/{}/loop/backing_file",
            self.dev.file_name().unwrap().to_string_lossy()
        ))
        .unwrap_or_default();
        assert_eq!(b.trim(), self.img.to_str().unwrap(), "the loop is attached");
        assert!(self.img.exists());
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.mnt).status();
        let _ = std::process::Command::new("losetup")
            .arg("-d")
            .arg(&self.dev)
            .status();
    }
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4, has_mkfs_xfs, has_mkfs_btrfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4, mkfs.xfs, mkfs.btrfs"
)]
fn a_planted_state_file_and_foreign_identities_are_left_alone() {
    use std::os::unix::fs::PermissionsExt;
    check_machine();
    let sb = Sandbox::new();
    let scratch = sb.file("scratch");
    let foreign = Foreign::new(&scratch);
    let state = scratch.join(".fsbench-fscompare.state");
    // Planted by another user: owned by nobody, mode 666, naming their true identities.
    std::fs::write(&state, foreign.state(0)).unwrap();
    std::os::unix::fs::chown(&state, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o666)).unwrap();
    let args = tiny(&sb, &["ext4"], &["--time", "1s"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = sb.cmd(&args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for what in [
        format!("mount on {}", foreign.mnt.display()),
        format!("directory {}", foreign.dir.display()),
        format!("loop device {} (over", foreign.dev.display()),
    ] {
        let lines = err
            .lines()
            .filter(|l| l.contains(&format!("left alone: {what}")))
            .count();
        assert_eq!(lines, 1, "{what}: {err}");
    }
    let last = err.lines().last().unwrap();
    assert!(
        last.contains("refusing") && last.contains("owned by uid 65534"),
        "{err}"
    );
    assert!(last.contains("nothing it lists is undone"), "{err}");
    foreign.untouched();
    assert!(state.exists(), "the planted file is left for its owner");
    // Our own state file (root, 0600) whose identities are not those of what is there now:
    // each entry is left alone with one line saying why, and the run goes on.
    std::fs::remove_file(&state).unwrap();
    std::fs::write(&state, foreign.state(1)).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = sb.cmd(&args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    for (what, why) in [
        (
            format!("mount on {}", foreign.mnt.display()),
            "not the one fsbench made",
        ),
        (
            format!("directory {}", foreign.dir.display()),
            "not the directory fsbench made",
        ),
        (
            format!("loop device {}", foreign.dev.display()),
            "not by the file fsbench attached",
        ),
        (
            format!("file {}", foreign.img.display()),
            "not the file fsbench created",
        ),
    ] {
        let lines = err
            .lines()
            .filter(|l| l.contains(&format!("left alone: {what}")) && l.contains(why))
            .count();
        assert_eq!(lines, 1, "{what}: {err}");
    }
    foreign.untouched();
    assert!(!state.exists(), "the run's own state is gone at its end");
}

/// A state file of ours, as a run killed between a remount's unmount and mount leaves it
/// (the mount's ID not yet recorded): the mount is identified by the device it mounted, and
/// everything is cleaned.
#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4, has_mkfs_xfs, has_mkfs_btrfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4, mkfs.xfs, mkfs.btrfs"
)]
fn our_state_with_a_mount_not_yet_identified_is_cleaned() {
    use std::os::unix::fs::MetadataExt;
    check_machine();
    let sb = Sandbox::new();
    let scratch = sb.file("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let img = scratch.join("fsbench-fscompare-1-1.img");
    let mnt = scratch.join("fsbench-fscompare-1-2.mnt");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    std::fs::create_dir(&mnt).unwrap();
    let out = std::process::Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&img)
        .output()
        .unwrap();
    if !out.status.success() {
        cannot("cannot attach a loop device");
    }
    let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let ok = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&dev)
        .status()
        .unwrap()
        .success()
        && std::process::Command::new("mount")
            .arg(&dev)
            .arg(&mnt)
            .status()
            .unwrap()
            .success();
    let id = |p: &Path| {
        let m = std::fs::symlink_metadata(p).unwrap();
        format!("{}:{}", m.dev(), m.ino())
    };
    let rdev = std::fs::metadata(&dev).unwrap().rdev();
    let dir_id = {
        // The directory's own identity is hidden under the mount: take it from the parent's
        // listing (readdir's inode number).
        use std::os::unix::fs::DirEntryExt;
        let e = std::fs::read_dir(&scratch)
            .unwrap()
            .flatten()
            .find(|e| e.path() == mnt)
            .unwrap();
        format!("{}:{}", std::fs::metadata(&scratch).unwrap().dev(), e.ino())
    };
    let state = format!(
        "fsbench-fscompare state 2 pid 1\nfile\t{}\t{}\nloop\t{}\t{rdev}\t{}\t{}\nmntdir\t{}\t{dir_id}\nmount\t{}\t{rdev}\t-\t-\n",
        img.display(),
        id(&img),
        dev.display(),
        img.display(),
        id(&img),
        mnt.display(),
        mnt.display(),
    );
    std::fs::write(scratch.join(".fsbench-fscompare.state"), state).unwrap();
    if !ok {
        let _ = std::process::Command::new("losetup")
            .arg("-d")
            .arg(&dev)
            .status();
        cannot("cannot make and mount ext4 on a loop device");
    }
    let args = tiny(&sb, &["ext4"], &["--time", "1s"]);
    let out = sb
        .cmd(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let left = leftovers(&scratch);
    if !left.is_empty() {
        let _ = std::process::Command::new("umount").arg(&mnt).status();
        let _ = std::process::Command::new("losetup")
            .arg("-d")
            .arg(&dev)
            .status();
    }
    assert_eq!(out.status.code(), Some(0), "{err}");
    for done in [
        format!("unmounted {}", mnt.display()),
        format!("removed {}", mnt.display()),
        format!("detached {}", dev.display()),
        format!("removed {}", img.display()),
    ] {
        assert!(err.contains(&done), "{done}: {err}");
    }
    assert!(!err.contains("left alone"), "{err}");
    assert_eq!(left, Vec::<String>::new(), "{err}");
}
