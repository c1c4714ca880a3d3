//! Shared integration-test helpers: run the real binary in a temporary directory.
#![allow(dead_code)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A temporary working directory that is removed at the end of the test.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    /// `fsbench ARGS...` with the sandbox as working directory.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::cargo_bin("fsbench").expect("binary built");
        c.current_dir(self.path()).args(args);
        c
    }
    /// Run and parse the JSON result written with `--output`.
    pub fn run_json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.file("result.json");
        let mut all: Vec<&str> = args.to_vec();
        let o = out.to_str().unwrap().to_string();
        all.push("--output");
        all.push(&o);
        self.cmd(&all).assert().success();
        let text = std::fs::read_to_string(&out).expect("result written");
        std::fs::remove_file(&out).ok();
        serde_json::from_str(&text).expect("valid JSON")
    }
    /// Names of the files in the sandbox.
    pub fn listing(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        v.sort();
        v
    }
}

/// A command line written as one string: `sb.run_json(&words("run --rw read f.dat"))`.
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// True when running as root with working loop devices (for raw-device and XFS tests).
pub fn can_use_loop_devices() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root && std::process::Command::new("losetup")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
        && Path::new("/dev/loop-control").exists()
}

/// A loop device over a sparse file; detached on drop.
pub struct LoopDevice {
    pub dev: PathBuf,
    pub backing: PathBuf,
}

impl LoopDevice {
    pub fn new(dir: &Path, size_mb: u64) -> Option<Self> {
        let backing = dir.join(format!("loop-{size_mb}m.img"));
        let f = std::fs::File::create(&backing).ok()?;
        f.set_len(size_mb << 20).ok()?;
        let out = std::process::Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&backing)
            .output()
            .ok()?;
        if !out.status.success() {
            // Shown when the caller then fails with `cannot`.
            eprintln!("losetup: {}", String::from_utf8_lossy(&out.stderr).trim());
            return None;
        }
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
        Some(LoopDevice { dev, backing })
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .arg("-d")
            .arg(&self.dev)
            .status();
    }
}

/// A small tmpfs mounted at `dir` (as root; `cannot` otherwise), unmounted on drop: for
/// tests that need a full or read-only file system.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    pub fn mount(dir: &Path, options: &str) -> Tmpfs {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            cannot("needs root to mount a small tmpfs");
        }
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "fsbench-test"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            cannot(&format!("could not mount a tmpfs ({options})"));
        }
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A file system of `fstype` on a loop device, mounted in a temp dir; unmounted on drop.
pub struct MountedFs {
    pub mnt: tempfile::TempDir,
    pub lo: LoopDevice,
}

impl MountedFs {
    /// None (with the reason on stderr, shown when the caller then fails) when the machine
    /// cannot.
    pub fn new(dir: &Path, fstype: &str, size_mb: u64) -> Option<Self> {
        if !can_use_loop_devices() {
            eprintln!("not root, or no losetup or /dev/loop-control");
            return None;
        }
        let lo = LoopDevice::new(dir, size_mb)?;
        let mkfs = format!("mkfs.{fstype}");
        let mut args: Vec<&str> = Vec::new();
        if fstype != "tmpfs" {
            args.push(if fstype == "ext4" { "-F" } else { "-f" });
            args.push("-q");
        }
        let out = std::process::Command::new(&mkfs)
            .args(&args)
            .arg(&lo.dev)
            .output();
        if !out.as_ref().is_ok_and(|o| o.status.success()) {
            eprintln!("{mkfs} failed: {out:?}");
            return None;
        }
        let mnt = tempfile::tempdir().ok()?;
        let ok = std::process::Command::new("mount")
            .arg(&lo.dev)
            .arg(mnt.path())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            eprintln!("mount {} failed", lo.dev.display());
            return None;
        }
        Some(MountedFs { mnt, lo })
    }
    pub fn path(&self) -> &Path {
        self.mnt.path()
    }
}

impl Drop for MountedFs {
    fn drop(&mut self) {
        // An io_uring run that just ended releases its files from a kernel worker a moment
        // later: until then umount says "target is busy" (and the mount, its loop device
        // and its backing file would outlive the test). Try again for a while.
        let t0 = std::time::Instant::now();
        loop {
            let o = std::process::Command::new("umount")
                .arg(self.mnt.path())
                .output();
            let busy = o.as_ref().is_ok_and(|o| {
                !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("busy")
            });
            if !busy {
                break;
            }
            if t0.elapsed() > Duration::from_secs(10) {
                // A leak is a failure, not a leftover (unless the test already failed).
                if !std::thread::panicking() {
                    panic!(
                        "cannot unmount {}: still busy after 10 s",
                        self.mnt.path().display()
                    );
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

// ---- Tests that need more than a temp dir -------------------------------------------------
//
// build.rs probes the machine once and sets `has_<capability>` cfgs; a test that needs one
// carries `#[cfg_attr(not(has_loop), ignore = "SKIPPED: needs root and loop devices")]`, so
// `cargo test` reports it as ignored with the reason (and `-- --include-ignored` still runs it).
// Inside, the test checks again and calls `cannot` when the machine does not match: a stale
// probe or a forced run is a loud failure, never a silent pass.

/// What build.rs found (or FSBENCH_TEST_CAPS forced) when the tests were built.
pub const CAPS_FOUND: &str = env!("FSBENCH_TEST_CAPS_FOUND");

/// Fail a test whose capability the build-time probe reported but the machine lacks now (or
/// that `--include-ignored` forced): say what is missing and how to make the probe agree.
#[track_caller]
pub fn cannot(why: &str) -> ! {
    panic!(
        "CANNOT RUN: {why}.\n  This test was not ignored because build.rs found [{CAPS_FOUND}] \
         when the tests were built, or --include-ignored forced it. If the machine changed, \
         rebuild (touch build.rs) or set FSBENCH_TEST_CAPS (see build.rs), e.g. \
         FSBENCH_TEST_CAPS=-loop."
    )
}

/// Print `SKIPPED: why` for a test that then returns early. Such a test is counted as PASSED,
/// so this is only for a condition that no build-time probe can know; prefer a `has_*` cfg
/// with `ignore` (see above). `.ci/check-skips` fails CI when a passing test printed SKIPPED.
pub fn skip(why: &str) {
    eprintln!("SKIPPED: {why}");
}

/// Open `html` in headless Chromium and return the DOM it built. Fails on a script error, and
/// when Chromium is missing (tests that call this carry `cfg_attr(not(has_chromium), ignore)`).
pub fn dom_in_chromium(html: &Path) -> String {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let Some(chromium) = chromium else {
        cannot("chromium is not installed (/usr/bin/chromium or /usr/bin/chromium-browser)");
    };
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Uncaught"), "script error: {stderr}");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Make writes of the child past `bytes` fail with EFBIG (RLIMIT_FSIZE, SIGXFSZ ignored): a
/// deterministic write error at a known offset, without a small file system.
pub fn limit_file_size(c: &mut std::process::Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only setrlimit and signal, both async-signal-safe, in the child before exec.
    unsafe {
        c.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            Ok(())
        });
    }
}

/// The `explain` checks a run's Result carries, and its output on stdout, from one run.
pub fn explain_checks(sb: &Sandbox, line: &str) -> (Vec<String>, String) {
    // One run gives both: the findings on a shared machine differ from run to run (a busy
    // neighbour adds a host finding), so the text and the JSON must be the same run's.
    let json = ".explain-checks.json";
    let _ = std::fs::remove_file(sb.file(json));
    let mut args = words(line);
    args.extend(["--output", json]);
    let out = sb.cmd(&args).assert().success();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file(json)).unwrap()).unwrap();
    std::fs::remove_file(sb.file(json)).unwrap();
    let checks = v["explain"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["check"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    (
        checks,
        String::from_utf8_lossy(&out.get_output().stdout).to_string(),
    )
}

/// `mpirun -np NP fsbench ARGS` in the sandbox (as root, oversubscribed: every rank on this
/// machine), killed if it runs past 120 s (a hang); its output.
pub fn mpirun(sb: &Sandbox, np: u64, args: &[&str]) -> std::process::Output {
    mpirun_via(sb, np, &[], args)
}

/// [`mpirun`] with each rank started through `launcher` (a command that ends by running the
/// fsbench binary and ARGS it is handed, e.g. `unshare -u sh -c '... exec "$0" "$@"'`).
pub fn mpirun_via(sb: &Sandbox, np: u64, launcher: &[&str], args: &[&str]) -> std::process::Output {
    let mut child = std::process::Command::new("mpirun")
        .current_dir(sb.path())
        .args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(np.to_string())
        .args(launcher)
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| cannot(&format!("mpirun does not start: {e}")));
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("mpirun {args:?} hung for 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// `mpirun -np NP fsbench ARGS --output result.json` in the sandbox: its exit status, the
/// Result it wrote (read, then removed) and its stderr. No Result written fails the test.
pub fn mpirun_result(
    sb: &Sandbox,
    np: u64,
    args: &[&str],
) -> (Option<i32>, serde_json::Value, String) {
    mpirun_result_via(sb, np, &[], args)
}

/// [`mpirun_result`] with each rank started through `launcher` ([`mpirun_via`]).
pub fn mpirun_result_via(
    sb: &Sandbox,
    np: u64,
    launcher: &[&str],
    args: &[&str],
) -> (Option<i32>, serde_json::Value, String) {
    let out = sb.file("result.json");
    let mut all = args.to_vec();
    all.extend(["--output", out.to_str().unwrap()]);
    let o = mpirun_via(sb, np, launcher, &all);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let text = std::fs::read_to_string(&out)
        .unwrap_or_else(|e| panic!("no result from {args:?} ({e}): {err}"));
    std::fs::remove_file(&out).unwrap();
    (o.status.code(), serde_json::from_str(&text).unwrap(), err)
}

/// [`mpirun_result`] of a run that must succeed (exit 0): its Result.
pub fn mpirun_json(sb: &Sandbox, np: u64, args: &[&str]) -> serde_json::Value {
    mpirun_json_via(sb, np, &[], args)
}

/// [`mpirun_json`] with each rank started through `launcher` ([`mpirun_via`]).
pub fn mpirun_json_via(
    sb: &Sandbox,
    np: u64,
    launcher: &[&str],
    args: &[&str],
) -> serde_json::Value {
    let (code, v, err) = mpirun_result_via(sb, np, launcher, args);
    assert_eq!(code, Some(0), "mpirun {args:?} failed: {err}");
    v
}

/// The one line rank 0 printed for a refusal under mpirun (exit status 2): the only stderr
/// line that starts with "fsbench" (mpirun adds its own lines).
pub fn mpi_refused_in_one_line(o: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("fsbench")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    lines[0].to_string()
}

/// A JSON number that must be a u64.
pub fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

/// The bytes each rank moved, in rank order (a distributed Result's `ranks` rows).
pub fn rank_bytes(r: &serde_json::Value) -> Vec<u64> {
    r["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| u(&x["bytes"]))
        .collect()
}

/// The per-rank rows of a distributed Result: (ops, bytes) of each rank.
pub fn rank_ops_bytes(r: &serde_json::Value) -> Vec<(u64, u64)> {
    r["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (u(&x["ops"]), u(&x["bytes"])))
        .collect()
}

/// The length of a file that must exist.
pub fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

/// The Results stored in `dir` as `PREFIX*.json` (a sweep's `sweep-`, a backup suite's
/// `backup-`), with their file names, in name order.
pub fn records(dir: &Path, prefix: &str) -> Vec<(String, serde_json::Value)> {
    let mut v: Vec<(String, serde_json::Value)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".json"))
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).unwrap();
            (n, serde_json::from_str(&text).unwrap())
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The Results a sweep stored in `dir` (`sweep-*.json`).
pub fn sweep_records(dir: &Path) -> Vec<(String, serde_json::Value)> {
    records(dir, "sweep-")
}
