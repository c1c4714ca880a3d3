//! Follow-ups to the runner hardening: the block-device check through the opened descriptor,
//! one exit-code rule for space-management refusals, SIGBUS under the mmap engine, and panics
//! reachable from input.

mod common;
use common::{words, LoopDevice, Sandbox};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("fsbench")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn fsbench(sb: &Sandbox, args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(bin());
    c.current_dir(sb.path()).args(args);
    c
}

/// Run within `limit` (killing a hung child): (exit code or -signal, stderr).
fn run_bounded(mut cmd: std::process::Command, limit: Duration) -> (i32, String) {
    use std::os::unix::process::ExitStatusExt;
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => {
            let out = out.unwrap();
            let code = out
                .status
                .code()
                .unwrap_or_else(|| -out.status.signal().unwrap_or(0));
            (code, String::from_utf8_lossy(&out.stderr).to_string())
        }
        Err(_) => {
            // SAFETY: killing the child this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("fsbench did not finish within {limit:?}");
        }
    }
}

/// A small tmpfs mounted for the test, unmounted on drop (None when not root or the mount
/// failed; tests that use it carry `cfg_attr(not(has_root), ignore)`).
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn new(size: &str) -> Option<Tmpfs> {
        if !is_root() {
            return None;
        }
        let mnt = tempfile::tempdir().ok()?;
        let ok = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size}"),
                "fsbench-hard2",
            ])
            .arg(mnt.path())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        ok.then_some(Tmpfs(mnt))
    }
    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.0.path())
            .status();
    }
}

fn head(dev: &Path, n: usize) -> Vec<u8> {
    use std::io::Read;
    let mut b = vec![0u8; n];
    std::fs::File::open(dev)
        .unwrap()
        .read_exact(&mut b)
        .unwrap();
    b
}

// ---- 1. block devices through the descriptor ---------------------------------------------

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4"
)]
fn a_link_or_node_naming_a_loop_device_with_a_signature_is_refused_and_untouched() {
    if !common::can_use_loop_devices() {
        common::cannot("needs root and loop devices");
    }
    let sb = Sandbox::new();
    let Some(lo) = LoopDevice::new(sb.path(), 16) else {
        common::cannot("losetup could not attach a loop device");
    };
    let made = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&lo.dev)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !made {
        common::cannot("mkfs.ext4 failed");
    }
    let before = head(&lo.dev, 1 << 20);
    std::os::unix::fs::symlink(&lo.dev, sb.file("link")).unwrap();
    // A device node of the same device under another name (not a link): the check must
    // find the signature through the descriptor it opened.
    use std::os::unix::fs::MetadataExt;
    let rdev = std::fs::metadata(&lo.dev).unwrap().rdev();
    let node = sb.file("node");
    let cnode = std::ffi::CString::new(node.to_str().unwrap()).unwrap();
    // SAFETY: mknod of a block-device node in our temp dir.
    let rc = unsafe { libc::mknod(cnode.as_ptr(), libc::S_IFBLK | 0o600, rdev as libc::dev_t) };
    assert_eq!(rc, 0, "mknod");
    for target in ["link", "node"] {
        let (code, err) = run_bounded(
            fsbench(
                &sb,
                &words(&format!("run --rw write --bs 4k --count 16 {target}")),
            ),
            Duration::from_secs(60),
        );
        assert_eq!(code, 2, "{target}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("symbolic link") || err.contains("ext"),
            "{target}: {err}"
        );
    }
    assert!(head(&lo.dev, 1 << 20) == before, "device untouched");
}

// ---- 2. one exit-code rule for space management ------------------------------------------

#[test]
#[cfg_attr(
    has_tmp_xfs,
    ignore = "SKIPPED: the temp dir is on XFS, which can reserve 256 MiB in one extent"
)]
fn contig_check_failing_after_allocation_is_exit_2_and_removes_the_file() {
    let sb = Sandbox::new();
    // ext4 keeps at most 32768 blocks in one unwritten extent, so 256 MiB takes several.
    let (code, err) = run_bounded(
        fsbench(
            &sb,
            &words("run --rw write --bs 4k --count 4 --reserve 256m --space-flags contig t"),
        ),
        Duration::from_secs(120),
    );
    if code == 0 {
        common::cannot("the temp dir's file system reserved 256 MiB in one extent");
    }
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("contig"), "{err}");
    assert!(!sb.file("t").exists(), "created file removed");
}

#[test]
#[cfg_attr(not(has_root), ignore = "SKIPPED: needs root to mount a tmpfs")]
fn contig_on_a_file_system_without_fiemap_is_a_usage_error() {
    let Some(fs) = Tmpfs::new("64m") else {
        common::cannot("could not mount a tmpfs");
    };
    let sb = Sandbox::new();
    let t = fs.path().join("t");
    let (code, err) = run_bounded(
        fsbench(
            &sb,
            &[
                "run",
                "--rw",
                "write",
                "--bs",
                "4k",
                "--count",
                "4",
                "--reserve",
                "1m",
                "--space-flags",
                "contig",
                t.to_str().unwrap(),
            ],
        ),
        Duration::from_secs(60),
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("contig"), "{err}");
    assert!(!t.exists(), "created file removed");
}

// ---- 3. SIGBUS under the mmap engine -----------------------------------------------------

#[test]
fn sigbus_in_a_mapping_names_file_and_offset_and_cleans_up() {
    let sb = Sandbox::new();
    let f = sb.file("mm.dat");
    let mut cmd = fsbench(
        &sb,
        &words("run --rw mmapread --bs 4k --size 16m --time 30s mm.dat"),
    );
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    // Wait for the layout (the file reaches its size), give the run time to map it, then
    // cut the file under the mapping: the next access past the new end faults.
    let t0 = Instant::now();
    while std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0) < 16 << 20 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "layout never finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1500));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(0)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{:?} {err}", out.status);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("SIGBUS") && err.contains("mm.dat") && err.contains("at offset "),
        "{err}"
    );
    let off: u64 = err
        .trim()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .expect("an offset at the end");
    assert!(off < 16 << 20, "{off}");
    assert!(!f.exists(), "created file removed");
}

// ---- 4. panics reachable from the environment --------------------------------------------

#[test]
fn a_failed_preparation_with_an_unwritable_stderr_still_writes_the_result() {
    let sb = Sandbox::new();
    let json = sb.file("r.json");
    let mut c = fsbench(
        &sb,
        &[
            "run",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--size",
            "4m",
            "--count",
            "4",
            "--output",
            json.to_str().unwrap(),
            "t",
        ],
    );
    // RLIMIT_FSIZE makes the layout fail at 1 MiB; stderr is /dev/full, where every
    // write fails with ENOSPC.
    common::limit_file_size(&mut c, 1 << 20);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    c.stdout(Stdio::null()).stderr(full);
    let status = c.status().unwrap();
    assert_eq!(status.code(), Some(1), "{status:?} (101 is a panic)");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result written")).unwrap();
    assert_eq!(v["status"], "failed");
    assert!(!sb.file("t").exists(), "created file left behind");
}

#[test]
fn vx_help_to_a_full_stdout_is_an_error_not_a_panic() {
    let sb = Sandbox::new();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = fsbench(&sb, &["vx", "-h"])
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("cannot write to standard output"), "{err}");
}
