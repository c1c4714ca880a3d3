//! "Never lose data, never hang" for the run / vx / quick path: symlink swaps, absurd job-file
//! values, thread and memory caps, memory of tiny jobs, orphaned worker processes, two runs on
//! one target, failures during preparation, free space, exit codes and cleanup notes.

mod common;
use common::{words, Sandbox};
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
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "fsbench-hard"])
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

/// Run to completion within `limit`, killing the child if it hangs.
fn run_bounded(mut cmd: std::process::Command, limit: Duration) -> (i32, String, String) {
    let child = cmd
        .stdout(Stdio::piped())
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
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).to_string(),
                String::from_utf8_lossy(&out.stderr).to_string(),
            )
        }
        Err(_) => {
            // SAFETY: killing the child this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("fsbench did not finish within {limit:?}");
        }
    }
}

fn fsbench(sb: &Sandbox, args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(bin());
    c.current_dir(sb.path()).args(args);
    c
}

// ---- 1. symlinks and swaps ---------------------------------------------------------------

#[test]
fn symlink_to_a_kept_file_is_refused_and_the_file_is_untouched() {
    let sb = Sandbox::new();
    // An earlier run kept its file (marked as fsbench's).
    sb.cmd(&words("run --rw write --bs 4k --count 4 --keep victim"))
        .assert()
        .success();
    let victim = sb.file("victim");
    std::fs::write(&victim, vec![7u8; 16384]).unwrap();
    let before = std::fs::read(&victim).unwrap();
    std::os::unix::fs::symlink("victim", sb.file("t")).unwrap();
    let out = sb
        .cmd(&words("run --rw write --bs 4k --count 4 t"))
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), before, "victim modified");
    assert!(victim.exists());
}

#[test]
fn dangling_symlink_target_is_not_followed_to_create_a_file() {
    let sb = Sandbox::new();
    std::os::unix::fs::symlink("elsewhere", sb.file("t")).unwrap();
    sb.cmd(&words("run --rw write --bs 4k --count 4 t"))
        .assert()
        .code(2);
    assert!(
        !sb.file("elsewhere").exists(),
        "file created through a symlink"
    );
}

// ---- 2. job-file values ------------------------------------------------------------------

#[test]
fn absurd_job_file_values_are_refused_without_hanging() {
    let cases = [
        ("time_s = 1e20", "time"),
        ("time_s = -5.0", "time"),
        ("time_s = nan", "time"),
        ("time_s = inf", "time"),
        ("io_count = 9223372036854775807", "count"),
        ("block_size = 0", "size"),
        ("threads = 0", "thread"),
        ("read_pct = 101", "percentage"),
        ("queue_depth = 0", "depth"),
    ];
    for (line, word) in cases {
        let sb = Sandbox::new();
        let extra = if line.starts_with("io_count") {
            ""
        } else {
            "io_count = 4\n"
        };
        std::fs::write(
            sb.file("j.toml"),
            format!("targets = [\"t\"]\naccess = \"write\"\n{extra}{line}\n"),
        )
        .unwrap();
        let (code, _, err) = run_bounded(fsbench(&sb, &["run", "j.toml"]), Duration::from_secs(20));
        assert_eq!(code, 2, "{line}: {err}");
        assert_eq!(err.lines().count(), 1, "{line}: {err}");
        assert!(err.to_lowercase().contains(word), "{line}: {err}");
        assert!(!err.contains("panicked"), "{line}: {err}");
        assert!(!sb.file("t").exists(), "{line}: target created");
    }
}

#[test]
fn huge_command_line_values_are_refused() {
    let sb = Sandbox::new();
    for line in [
        "run --rw write --time 9000000h t",
        "run --rw write --count 4 --size 16t --bs 1m --threads 4096 t",
        "run --rw write --count 4 --reserve 0 t",
        "vx -w write -i iosize=4k,iocount=4 -r 0 t",
    ] {
        let (code, _, err) = run_bounded(fsbench(&sb, &words(line)), Duration::from_secs(20));
        assert_eq!(code, 2, "{line}: {err}");
        assert_eq!(err.lines().count(), 1, "{line}: {err}");
        assert!(!sb.file("t").exists(), "{line}");
    }
}

#[test]
fn targets_starting_with_a_dash_need_a_double_dash() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("j.toml"),
        "targets = [\"-5\"]\naccess = \"write\"\nio_count = 4\n",
    )
    .unwrap();
    sb.cmd(&["run", "j.toml"]).assert().code(2);
    assert!(!sb.file("-5").exists());
    sb.cmd(&words("run --rw write --count 4 -- -5"))
        .assert()
        .success();
}

// ---- 3. caps on threads and memory -------------------------------------------------------

#[test]
fn threads_beyond_rlimit_nproc_are_refused() {
    let sb = Sandbox::new();
    let mut c = fsbench(
        &sb,
        &words("run --rw write --bs 4k --count 4 --threads 200 t"),
    );
    // SAFETY: setrlimit in the forked child before exec; async-signal-safe.
    unsafe {
        use std::os::unix::process::CommandExt;
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 100,
                rlim_max: 100,
            };
            libc::setrlimit(libc::RLIMIT_NPROC, &lim);
            Ok(())
        });
    }
    let (code, _, err) = run_bounded(c, Duration::from_secs(30));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("RLIMIT_NPROC") || err.contains("processes"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!sb.file("t").exists());
}

#[test]
fn buffers_beyond_available_memory_are_refused_even_with_force() {
    let sb = Sandbox::new();
    // 4096 threads x 256 MiB buffers = 1 TiB.
    let mut c = fsbench(
        &sb,
        &words("run --rw write --bs 256m --count 1 --threads 4096 --force t"),
    );
    // Belt and braces: if the check were missing, fail on allocation instead of OOM-ing the box.
    // SAFETY: setrlimit in the forked child before exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 8 << 30,
                rlim_max: 8 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let (code, _, err) = run_bounded(c, Duration::from_secs(60));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("memory"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!sb.file("t").exists());
}

// ---- 4. memory of tiny jobs --------------------------------------------------------------

// The child is reaped by wait4 below (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn child_maxrss_kb(mut cmd: std::process::Command) -> (i32, i64) {
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: wait4 on our own child fills a zeroed rusage we own: that child's peak RSS only
    // (RUSAGE_CHILDREN would mix in every test of this process).
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert_eq!(rc, child.id() as i32);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, ru.ru_maxrss)
}

#[test]
fn many_small_targets_use_little_memory() {
    let sb = Sandbox::new();
    let mut args = words("run --rw write --bs 4k --count 4 --format json");
    let names: Vec<String> = (0..1000).map(|i| format!("f{i}")).collect();
    args.extend(names.iter().map(|s| s.as_str()));
    let (code, kb) = child_maxrss_kb(fsbench(&sb, &args));
    assert_eq!(code, 0);
    eprintln!("1000 targets: max RSS {kb} KB");
    // About 290 KB per worker (a 1 ns - 1 h latency histogram, stack, one 4 KiB buffer);
    // before: a plan copy per worker (quadratic) and two histograms each, over 700 MB.
    assert!(kb < 450_000, "1000 tiny targets used {kb} KB");
    assert_eq!(sb.listing().len(), 0, "files left: {:?}", sb.listing());
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn deep_queue_with_few_ios_uses_little_memory() {
    let sb = Sandbox::new();
    let (code, kb) = child_maxrss_kb(fsbench(
        &sb,
        &words("run --rw write --engine uring --qd 4096 --bs 1m --count 4 t"),
    ));
    assert_eq!(code, 0, "--engine uring --qd 4096 failed");
    eprintln!("qd 4096 x 1m, 4 I/Os: max RSS {kb} KB");
    assert!(kb < 100_000, "qd 4096 x 1m for 4 I/Os used {kb} KB");
}

// ---- 5. orphaned worker processes --------------------------------------------------------

fn children_of(pid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            let after = &stat[stat.rfind(')').unwrap() + 2..];
            let ppid: u32 = after.split_whitespace().nth(1).unwrap().parse().unwrap();
            if ppid == pid {
                v.push(p);
            }
        }
    }
    v
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
        .unwrap_or(false)
}

#[test]
fn workers_die_with_a_killed_parent() {
    for args in [
        "run --rw randread --bs 4k --size 1m --time 60s --processes per-thread --threads 2 t",
        "vx -p -w rand_read -i iosize=4k,maxfilesize=1m,nthreads=2 --time 60s t2",
    ] {
        let sb = Sandbox::new();
        let mut child = fsbench(&sb, &words(args))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        let mut workers = Vec::new();
        while t0.elapsed() < Duration::from_secs(20) {
            workers = children_of(child.id());
            if workers.len() >= 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(workers.len() >= 2, "{args}: workers not seen");
        std::thread::sleep(Duration::from_millis(300));
        child.kill().unwrap();
        child.wait().unwrap();
        let t1 = Instant::now();
        while workers.iter().any(|&w| alive(w)) && t1.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let left: Vec<u32> = workers.iter().copied().filter(|&w| alive(w)).collect();
        for &w in &left {
            // SAFETY: killing a process this test caused to exist.
            unsafe { libc::kill(w as i32, libc::SIGKILL) };
        }
        assert!(left.is_empty(), "{args}: workers still running: {left:?}");
    }
}

// ---- 6. two runs on one target -----------------------------------------------------------

#[test]
fn a_second_run_on_a_busy_target_is_refused_naming_the_holder() {
    let sb = Sandbox::new();
    let mut first = fsbench(
        &sb,
        &words("run --rw randread --bs 4k --size 1m --time 4s t"),
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let t0 = Instant::now();
    while !sb.file("t").exists() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let (code, _, err) = run_bounded(
        fsbench(
            &sb,
            &words("run --rw randread --bs 4k --size 1m --time 1s t"),
        ),
        Duration::from_secs(20),
    );
    let st = first.wait().unwrap();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&first.id().to_string()),
        "holder not named: {err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(st.success());
}

// ---- 7. failures during preparation ------------------------------------------------------

#[test]
fn an_error_while_laying_out_still_writes_a_failed_result() {
    let sb = Sandbox::new();
    let json = sb.file("r.json");
    // RLIMIT_FSIZE makes the layout fail at 1 MiB (EFBIG), deterministically.
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
    common::limit_file_size(&mut c, 1 << 20);
    let (code, _, err) = run_bounded(c, Duration::from_secs(30));
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result written")).unwrap();
    assert_eq!(v["status"], "failed");
    let f = &v["failures"][0];
    assert!(f["path"].as_str().unwrap().ends_with('t'), "{f}");
    assert_eq!(f["offset"].as_u64(), Some(1 << 20), "{f}");
    assert!(!sb.file("t").exists(), "created file left behind");
}

#[test]
fn a_refused_job_leaves_no_marked_empty_target() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("d")).unwrap();
    for line in [
        "run --rw write --bs 4k --count 4 --reserve 8k --space-flags noextend --keep t",
        "run --rw write --bs 4k --count 4 --keep t d",
        "vx -k -w write -i iosize=4k,iocount=4 -r 8k -f noextend t",
    ] {
        let (code, _, err) = run_bounded(fsbench(&sb, &words(line)), Duration::from_secs(20));
        assert_eq!(code, 2, "{line}: {err}");
        assert!(
            !sb.file("t").exists(),
            "{line}: refused job left its target"
        );
    }
    // A sweep point that is refused after its target was created.
    let (code, _, err) = run_bounded(
        fsbench(
            &sb,
            &words("sweep --rw write --bs 4k --count 4 --reserve 8k --space-flags noextend t --output res"),
        ),
        Duration::from_secs(20),
    );
    assert_ne!(code, 0, "{err}");
    assert!(
        !sb.file("t").exists(),
        "sweep: refused point left its target"
    );
}

// ---- 8. free space -----------------------------------------------------------------------

#[test]
#[cfg_attr(not(has_root), ignore = "SKIPPED: needs root to mount a small tmpfs")]
fn a_job_bigger_than_the_free_space_is_refused_before_writing() {
    let Some(fs) = Tmpfs::new("4m") else {
        common::cannot("could not mount a small tmpfs");
    };
    let sb = Sandbox::new();
    for line in [
        "run --rw randread --bs 4k --size 16m --count 4 T",
        "run --rw write --bs 1m --count 16 T",
        "run --rw write --bs 4k --count 4 --reserve 16m T",
    ] {
        let target = fs.path().join("t");
        let line = line.replace('T', target.to_str().unwrap());
        let (code, _, err) = run_bounded(fsbench(&sb, &words(&line)), Duration::from_secs(20));
        assert_eq!(code, 2, "{line}: {err}");
        assert!(err.contains("free"), "{line}: {err}");
        assert!(!target.exists(), "{line}");
        assert!(
            std::fs::read_dir(fs.path()).unwrap().next().is_none(),
            "{line}: something written"
        );
    }
}

// ---- 9. exit codes -----------------------------------------------------------------------

#[test]
#[cfg_attr(not(has_root), ignore = "SKIPPED: needs root to mount a small tmpfs")]
fn opening_errors_on_a_read_only_mount_are_usage_errors() {
    let Some(fs) = Tmpfs::new("4m") else {
        common::cannot("could not mount a small tmpfs");
    };
    let sb = Sandbox::new();
    let target = fs.path().join("t");
    let t = target.to_str().unwrap();
    sb.cmd(&[
        "run", "--rw", "write", "--bs", "4k", "--count", "4", "--keep", t,
    ])
    .assert()
    .success();
    let ok = std::process::Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(fs.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    for rw in ["write", "read"] {
        let (code, _, err) = run_bounded(
            fsbench(
                &sb,
                &[
                    "run", "--rw", rw, "--bs", "4k", "--count", "8", "--remove", t,
                ],
            ),
            Duration::from_secs(20),
        );
        if rw == "write" {
            assert_eq!(code, 2, "{rw}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        } else {
            // Reading a kept file on a read-only mount works; removing it cannot.
            assert!(code == 0 || code == 2, "{rw}: {err}");
        }
    }
    let (code, _, err) = run_bounded(
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
                &format!("{t}2"),
            ],
        ),
        Duration::from_secs(20),
    );
    assert_eq!(code, 2, "{err}");
}

// ---- 10. quick validates everything first ------------------------------------------------

#[test]
fn quick_refuses_bad_options_before_any_test() {
    let sb = Sandbox::new();
    for line in [
        "quick --time 0s --size 4m .",
        "quick --time 9000000h --size 4m .",
    ] {
        let (code, out, err) = run_bounded(fsbench(&sb, &words(line)), Duration::from_secs(20));
        assert_eq!(code, 2, "{line}: {err}");
        assert!(out.is_empty(), "{line}: tests ran: {out}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(sb.listing().is_empty(), "{line}: {:?}", sb.listing());
    }
}
