//! A test that cannot run on this machine is reported by the test runner as ignored, with its
//! reason, never as passed: build.rs finds what the machine offers (`has_*` cfgs) and the tests
//! that need more carry `cfg_attr(not(has_...), ignore = "SKIPPED: ...")`.
//!
//! Here: the probe agrees with the machine (a probe that misses a capability would hide tests
//! as ignored, a stale one would run them into a failure), and `.ci/check-skips` fails a test
//! log in which a test printed `SKIPPED:` but was counted as passed.

mod common;

use common::Sandbox;
use std::path::Path;
use std::process::{Command, Stdio};

fn runs(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|d| {
        d.join(tool)
            .metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Root that can mount: a tmpfs really mounted (and unmounted) on a sandbox directory.
fn can_mount(sb: &Sandbox) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return false;
    }
    let mnt = sb.file("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let m = mnt.to_str().unwrap();
    let ok = runs(
        "mount",
        &["-t", "tmpfs", "-o", "size=1m", "fsbench-caps", m],
    );
    if ok {
        assert!(runs("umount", &[m]), "umount {m}");
    }
    ok
}

/// One aligned 4 KiB O_DIRECT write in the sandbox.
fn direct_write(sb: &Sandbox) -> bool {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let Ok(f) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(sb.file("direct"))
    else {
        return false;
    };
    // 8 KiB, of which the 4 KiB slice at a 4096-aligned address is written.
    let buf = vec![1u8; 8192];
    let skew = buf.as_ptr().align_offset(4096);
    f.write_all_at(&buf[skew..skew + 4096], 0).is_ok()
}

fn fiemap(sb: &Sandbox) -> bool {
    let p = sb.file("mapped");
    std::fs::write(&p, vec![3u8; 8192]).unwrap();
    let f = std::fs::File::open(&p).unwrap();
    f.sync_all().unwrap();
    fsbench::probe::fiemap::extents(&f).is_ok()
}

fn user_xattr(sb: &Sandbox) -> bool {
    let p = sb.file("x");
    std::fs::write(&p, b"x").unwrap();
    let path = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated path and name, a value buffer of the given length.
    unsafe {
        libc::setxattr(
            path.as_ptr(),
            c"user.fsbench-caps".as_ptr(),
            b"1".as_ptr() as *const libc::c_void,
            1,
            0,
        ) == 0
    }
}

/// `chattr +i` on a sandbox directory, cleared again (also when an assertion fails).
fn immutable(sb: &Sandbox) -> bool {
    struct Clear(std::path::PathBuf);
    impl Drop for Clear {
        fn drop(&mut self) {
            let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
        }
    }
    let d = sb.file("frozen");
    std::fs::create_dir(&d).unwrap();
    let _clear = Clear(d.clone());
    runs("chattr", &["+i", d.to_str().unwrap()])
}

fn fs_type(p: &Path) -> String {
    let out = Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(p)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Every capability build.rs reported, found again here by other means. `tmp_polled_io` has
/// no second way here; the `hipri_*` pair in tests/uring.rs fails when it is wrong.
#[test]
#[cfg_attr(
    fsbench_caps_forced,
    ignore = "SKIPPED: FSBENCH_TEST_CAPS forced the capabilities: nothing to compare"
)]
fn the_build_probe_agrees_with_the_machine() {
    use fsbench::probe::topology::SysfsProbe;
    let sb = Sandbox::new();
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .any(|p| Path::new(p).exists());
    let sqpoll = io_uring::IoUring::<io_uring::squeue::Entry>::builder()
        .setup_sqpoll(100)
        .build(2)
        .is_ok();
    let root = can_mount(&sb);
    let checks = [
        ("root", cfg!(has_root), root),
        ("loop", cfg!(has_loop), common::can_use_loop_devices()),
        (
            "fuse",
            cfg!(has_fuse),
            root && std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/fuse")
                .is_ok(),
        ),
        (
            "cpus2",
            cfg!(has_cpus2),
            std::fs::read_to_string("/sys/devices/system/cpu/online")
                .map(|s| s.trim() != "0")
                .unwrap_or(false),
        ),
        ("uring", cfg!(has_uring), io_uring::IoUring::new(2).is_ok()),
        ("uring_sqpoll", cfg!(has_uring_sqpoll), sqpoll),
        (
            "strace",
            cfg!(has_strace),
            runs("strace", &["-o", "/dev/null", "true"]),
        ),
        (
            "python3",
            cfg!(has_python3),
            runs("python3", &["-c", "pass"]),
        ),
        ("fio", cfg!(has_fio), runs("fio", &["--version"])),
        ("chromium", cfg!(has_chromium), chromium),
        ("mpirun", cfg!(has_mpirun), on_path("mpirun")),
        ("mkfs_ext4", cfg!(has_mkfs_ext4), on_path("mkfs.ext4")),
        ("mkfs_xfs", cfg!(has_mkfs_xfs), on_path("mkfs.xfs")),
        ("mkfs_btrfs", cfg!(has_mkfs_btrfs), on_path("mkfs.btrfs")),
        ("mkfs_cramfs", cfg!(has_mkfs_cramfs), on_path("mkfs.cramfs")),
        ("mkfs_minix", cfg!(has_mkfs_minix), on_path("mkfs.minix")),
        ("mkfs_bfs", cfg!(has_mkfs_bfs), on_path("mkfs.bfs")),
        (
            "root_blockdev",
            cfg!(has_root_blockdev),
            SysfsProbe::default()
                .device_of_path(Path::new("/"))
                .is_some(),
        ),
        (
            "tmp_blockdev",
            cfg!(has_tmp_blockdev),
            SysfsProbe::default().device_of_path(sb.path()).is_some(),
        ),
        ("tmp_direct_io", cfg!(has_tmp_direct_io), direct_write(&sb)),
        ("tmp_fiemap", cfg!(has_tmp_fiemap), fiemap(&sb)),
        ("tmp_xattr", cfg!(has_tmp_xattr), user_xattr(&sb)),
        ("tmp_xfs", cfg!(has_tmp_xfs), fs_type(sb.path()) == "xfs"),
        ("tmp_immutable", cfg!(has_tmp_immutable), immutable(&sb)),
    ];
    let wrong: Vec<String> = checks
        .iter()
        .filter(|(_, built, now)| built != now)
        .map(|(name, built, now)| format!("{name}: build.rs found {built}, the machine now {now}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "the tests were built for another machine (rebuild: touch build.rs, or set \
         FSBENCH_TEST_CAPS):\n{}",
        wrong.join("\n")
    );
}

// ---- .ci/check-skips ----------------------------------------------------------------------

/// Run .ci/check-skips on `log`: (exit status, stderr).
fn check_skips(log: &str) -> (i32, String) {
    let sb = Sandbox::new();
    let file = sb.file("test.log");
    std::fs::write(&file, log).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/check-skips");
    let out = Command::new("bash")
        .arg(script)
        .arg(&file)
        .output()
        .unwrap();
    (
        out.status.code().expect("exit status"),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Output of `cargo test -q -- --show-output` (terse format) for five tests: one prints
/// SKIPPED and passes, one prints SKIPPED and fails, one is ignored with a SKIPPED reason.
const TERSE: &str = "
running 5 tests
.i.. 4/5
fails --- FAILED

successes:

---- hides_a_skip stdout ----
SKIPPED: strace not installed

---- prints stdout ----
hello


successes:
    hides_a_skip
    prints
    quiet

failures:

---- fails stdout ----
SKIPPED: nothing

thread 'fails' (22421) panicked at tests/a.rs:17:5:
boom


failures:
    fails

test result: FAILED. 3 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.22s
";

/// Two binaries in the default (pretty) format: the first has only an ignored test with a
/// SKIPPED reason; the second a test of the same name as one that printed SKIPPED elsewhere.
const PRETTY: &str = "
     Running tests/a.rs (target/release/deps/a-0123)

running 2 tests
test needs_root ... ignored, SKIPPED: needs root
test quiet ... ok

successes:

successes:
    quiet

test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running tests/b.rs (target/release/deps/b-4567)

running 1 test
test needs_root ... ok

successes:

---- needs_root stdout ----
ran as root

successes:
    needs_root

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
";

#[test]
fn check_skips_fails_a_passing_test_that_printed_skipped() {
    let (code, err) = check_skips(TERSE);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("hides_a_skip passed but printed: SKIPPED: strace not installed"),
        "{err}"
    );
    // A failing test is the runner's business, and an ignored one is what should happen.
    assert!(
        !err.contains("fails passed") && !err.contains("needs_root"),
        "{err}"
    );
}

#[test]
fn check_skips_accepts_ignored_tests_and_output_without_skipped() {
    let (code, err) = check_skips(PRETTY);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    // The same log with the second binary's test printing SKIPPED: caught, in that binary.
    let (code, err) = check_skips(&PRETTY.replace("ran as root", "SKIPPED: not root"));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("needs_root passed but printed: SKIPPED: not root"),
        "{err}"
    );
}

#[test]
fn check_skips_refuses_a_log_without_show_output() {
    let log = "
running 1 test
test quiet ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
";
    let (code, err) = check_skips(log);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--show-output"), "{err}");
    let (code, err) = check_skips("no tests here\n");
    assert_eq!(code, 2, "{err}");
}
