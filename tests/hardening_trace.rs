//! Hardening of `trace`, `replay` and the argument parser: usage errors are one line with
//! exit 2, input-sized work is budgeted (no allocator abort, no hang), a many-thread replay
//! uses memory in proportion to what it does, and an interrupted capture leaves nothing
//! running and nothing behind.

mod common;

use common::Sandbox;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const HEADER: &str = "id,thread,op,file,offset,len,start_ns,end_ns,result";

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("fsbench")
}

fn have_strace() -> bool {
    Command::new("strace")
        .arg("-V")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn one_line(stderr: &[u8]) -> String {
    let s = String::from_utf8_lossy(stderr).to_string();
    assert_eq!(
        s.lines().count(),
        1,
        "expected one line on stderr, got:\n{s}"
    );
    s
}

#[test]
fn parser_errors_are_one_line_with_exit_2() {
    let sb = Sandbox::new();
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "--no-such-flag"],
            "unexpected argument '--no-such-flag'",
        ),
        (&["run", "--threads"], "a value is required"),
        (&["run", "--threads", "abc"], "invalid value 'abc'"),
        (&[], "no subcommand"),
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (&["replay"], "<TRACE>"),
        (&["trace", "--stripe"], "a value is required"),
        (
            &["replay", "t.csv", "--speed", "2", "--no-timing"],
            "cannot be used",
        ),
    ];
    for (args, want) in cases {
        let out = sb.cmd(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let line = one_line(&out.stderr);
        assert!(line.starts_with("fsbench: "), "{args:?}: {line}");
        assert!(line.contains(want), "{args:?}: {line}");
        assert!(line.contains("--help'"), "{args:?}: {line}");
    }
    // Where to look names the subcommand the user was in.
    let out = sb.cmd(&["run", "--x"]).output().unwrap();
    assert!(one_line(&out.stderr).contains("try 'fsbench run --help'"));
    // Help and version are what was asked for: stdout, exit 0.
    for args in [
        &["--help"][..],
        &["--version"],
        &["run", "--help"],
        &["trace", "-h"],
    ] {
        let out = sb.cmd(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(!out.stdout.is_empty() && out.stderr.is_empty(), "{args:?}");
    }
}

fn write_trace(path: &Path, rows: &[String]) {
    let mut s = format!("{HEADER}\n");
    for r in rows {
        s.push_str(r);
        s.push('\n');
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn analyze_with_a_huge_stripe_is_refused_with_an_estimate() {
    let sb = Sandbox::new();
    write_trace(
        &sb.file("t.csv"),
        &["0,0,read,f,0,1073741824,0,1,1073741824".to_string()],
    );
    // 2^32 - 1 columns: used to abort on a 34 GB allocation.
    let out = sb
        .cmd(&["trace", "--analyze", "t.csv", "--stripe", "1:4294967295"])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let line = one_line(&out.stderr);
    assert!(
        line.contains("would need about") && line.contains("GiB"),
        "{line}"
    );
    // 10^8 columns on a one-line trace: used to take 6.6 GB and print 200 MB. Refused at
    // once with what it would take and print.
    let out = sb
        .cmd(&["trace", "--analyze", "t.csv", "--stripe", "1:100000000"])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let line = one_line(&out.stderr);
    assert!(
        line.contains("7.45 GiB of memory")
            && line.contains("190.73 MiB of per-column counts")
            && line.contains("at most 65536 columns"),
        "{line}"
    );
    // A 1 GiB read over a 1-byte stripe unit: used to run for minutes and take ~10 GB.
    let t0 = Instant::now();
    let out = sb
        .cmd(&[
            "trace",
            "--analyze",
            "t.csv",
            "--stripe",
            "1:3",
            "--list",
            "1",
        ])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1 application I/Os become 1073741824 device I/Os"),
        "{text}"
    );
    assert!(text.contains("more device I/Os"));
}

#[test]
fn a_fifo_as_trace_is_refused_not_waited_on() {
    let sb = Sandbox::new();
    let fifo = sb.file("t.csv");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path inside the sandbox.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for args in [&["trace", "--analyze", "t.csv"][..], &["replay", "t.csv"]] {
        let out = sb
            .cmd(args)
            .timeout(Duration::from_secs(10))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(one_line(&out.stderr).contains("not a regular file"));
    }
}

/// (exit status, peak RSS in KiB) of a finished child.
fn wait_rusage(child: &std::process::Child) -> (i32, i64) {
    let mut status = 0;
    // SAFETY: rusage is a plain struct we own; wait4 on our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut ru) }, pid);
    (libc::WEXITSTATUS(status), ru.ru_maxrss)
}

fn many_thread_trace(path: &Path, threads: u32) {
    let rows: Vec<String> = (0..threads * 2)
        .map(|i| {
            let t = i / 2;
            format!(
                "{i},{t},write,/d/f{},{},4096,{},{},4096",
                t % 4,
                i as u64 * 4096,
                i * 10,
                i * 10 + 5
            )
        })
        .collect();
    write_trace(path, &rows);
}

#[test]
// The child is reaped by wait4 in wait_rusage (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn many_thread_replay_memory_is_bounded() {
    // 2,000 traced threads each writing 8 KiB: before, each worker held two ~0.27 MiB
    // latency histograms and its own descriptors (about 1.1 GB, or EMFILE first); now the
    // replay's peak RSS is a small multiple of its threads' stacks.
    let sb = Sandbox::new();
    many_thread_trace(&sb.file("t.csv"), 2000);
    let child = Command::new(bin())
        .current_dir(sb.path())
        .args(["replay", "t.csv", "--output", "r.json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (code, maxrss_kb) = wait_rusage(&child);
    assert_eq!(code, 0);
    eprintln!("replay of 2000 threads: peak RSS {maxrss_kb} KiB");
    assert!(maxrss_kb < 250 * 1024, "peak RSS {maxrss_kb} KiB");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
    assert_eq!(v["total"]["write_ops"].as_u64(), Some(4000));
    assert_eq!(v["replay"]["threads"].as_u64(), Some(2000));
    // Scratch files are gone.
    assert_eq!(sb.listing(), vec!["r.json", "t.csv"]);
}

#[test]
fn replay_thread_limits_are_refused_in_one_line() {
    let sb = Sandbox::new();
    many_thread_trace(&sb.file("t.csv"), 300);
    // RLIMIT_NPROC below the thread count: refused before anything is created.
    let mut c = Command::new(bin());
    c.current_dir(sb.path()).args(["replay", "t.csv"]);
    // SAFETY: setrlimit in the child before exec; no allocation.
    unsafe {
        c.pre_exec(|| {
            let rl = libc::rlimit {
                rlim_cur: 100,
                rlim_max: 100,
            };
            libc::setrlimit(libc::RLIMIT_NPROC, &rl);
            Ok(())
        });
    }
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out.stderr).contains("RLIMIT_NPROC"));
    assert_eq!(sb.listing(), vec!["t.csv"]);
    // Too little address space for the workers: a clean refusal or a clean failed start,
    // never an abort, a panic or a hang.
    let mut c = Command::new(bin());
    c.current_dir(sb.path()).args(["replay", "t.csv"]);
    // SAFETY: as above.
    unsafe {
        c.pre_exec(|| {
            let rl = libc::rlimit {
                rlim_cur: 96 << 20,
                rlim_max: 96 << 20,
            };
            libc::setrlimit(libc::RLIMIT_AS, &rl);
            Ok(())
        });
    }
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(1) | Some(2)),
        "{:?} {err}",
        out.status
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(sb.listing(), vec!["t.csv"]);
}

/// Processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if !e
            .file_name()
            .to_string_lossy()
            .chars()
            .all(|c| c.is_ascii_digit())
        {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                found.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
            }
        }
    }
    found
}

fn wait_timeout(child: &mut std::process::Child, d: Duration) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    while t0.elapsed() < d {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}

fn interrupted_capture_leaves_nothing(sig: libc::c_int) {
    if !have_strace() {
        common::cannot("strace not installed");
    }
    let sb = Sandbox::new();
    let tmp = sb.file("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // A command that is easy to find: sleep with an unusual duration.
    let marker = format!("{}.{}", 900 + sig, std::process::id() % 1000);
    let mut child = Command::new(bin())
        .current_dir(sb.path())
        .env("TMPDIR", &tmp)
        .args(["trace", "-o", "c.csv", "--", "sleep", &marker])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the traced command runs.
    let t0 = Instant::now();
    while processes_with(&format!("sleep {marker}")).len() < 2
        && t0.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    // Only fsbench's own PID is signalled.
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    let st = wait_timeout(&mut child, Duration::from_secs(15)).expect("fsbench ended");
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(st.code(), Some(130), "{err}");
    std::thread::sleep(Duration::from_millis(300));
    let left = processes_with(&format!("sleep {marker}"));
    assert!(left.is_empty(), "still running: {left:?}");
    // strace's temporary log is gone, and what was captured was written.
    let in_tmp: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
    assert!(
        in_tmp.is_empty(),
        "left in TMPDIR: {:?}",
        in_tmp.iter().map(|e| e.file_name()).collect::<Vec<_>>()
    );
    let t = fsbench::trace::format::read_file(&sb.file("c.csv")).expect("valid trace written");
    assert!(!t.records.is_empty());
}

#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn sigterm_to_fsbench_stops_strace_and_the_traced_command() {
    interrupted_capture_leaves_nothing(libc::SIGTERM);
}

#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn sigint_to_fsbench_stops_strace_and_the_traced_command() {
    interrupted_capture_leaves_nothing(libc::SIGINT);
}

fn ctrl_c_ends_pid_trace_with_success(whole_group: bool) {
    if !have_strace() {
        common::cannot("strace not installed");
    }
    let sb = Sandbox::new();
    let mut looper = Command::new("sh")
        .current_dir(sb.path())
        .args([
            "-c",
            "while :; do dd if=/dev/zero of=loop.dat bs=4k count=4 conv=notrunc status=none; sleep 0.05; done",
        ])
        .spawn()
        .unwrap();
    let mut c = Command::new(bin());
    c.current_dir(sb.path())
        .args(["trace", "--pid", &looper.id().to_string(), "-o", "p.csv"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = c.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let pid = child.id() as libc::pid_t;
    // A terminal's Ctrl-C goes to the whole foreground process group.
    // SAFETY: signalling the process (group) this test started.
    unsafe { libc::kill(if whole_group { -pid } else { pid }, libc::SIGINT) };
    let st = wait_timeout(&mut child, Duration::from_secs(15));
    // The traced loop is not fsbench's to stop: it is still running.
    let alive = looper.try_wait().unwrap().is_none();
    let _ = looper.kill();
    let _ = looper.wait();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(st.expect("fsbench ended").code(), Some(0), "{err}");
    assert!(alive, "the traced process was stopped");
    let t = fsbench::trace::format::read_file(&sb.file("p.csv")).expect("valid trace");
    assert!(t.records.iter().any(|r| r.op.is_data()), "no I/O captured");
}

#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn ctrl_c_to_fsbench_ends_trace_pid_with_exit_0() {
    ctrl_c_ends_pid_trace_with_success(false);
}

#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn terminal_ctrl_c_ends_trace_pid_with_exit_0() {
    ctrl_c_ends_pid_trace_with_success(true);
}

#[test]
fn strace_log_copy_never_overwrites() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("keep.log"), "mine").unwrap();
    let out = sb
        .cmd(&["trace", "--strace-log", "keep.log", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out.stderr).contains("keep.log"));
    assert_eq!(
        std::fs::read_to_string(sb.file("keep.log")).unwrap(),
        "mine"
    );
}

#[test]
fn replay_of_a_trace_opening_many_files_creates_only_the_used_ones() {
    // A program that opens 20,000 files and writes one: each opened file used to become a
    // scratch file filled through a 1 MiB buffer and fsynced one by one (minutes).
    let sb = Sandbox::new();
    let mut rows = vec!["0,0,write,/d/x,0,4096,0,5,4096".to_string()];
    rows.extend((1..=20000).map(|i| format!("{i},0,open,/d/f{i},0,0,{},{},3", i * 10, i * 10 + 5)));
    write_trace(&sb.file("t.csv"), &rows);
    std::fs::create_dir(sb.file("scratch")).unwrap();
    let t0 = Instant::now();
    let out = sb
        .cmd(&["replay", "t.csv", "--dir", "scratch", "--keep"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    let kept: Vec<_> = std::fs::read_dir(sb.file("scratch"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(kept.len(), 1);
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("20000 traced files without replayed calls were not created"));
}

#[test]
fn a_trace_ring_too_large_for_memory_is_refused() {
    // --trace-records 1t used to abort on a 44 TB allocation in the worker.
    let sb = Sandbox::new();
    let out = sb
        .cmd(&[
            "run",
            "--trace",
            "tr.csv",
            "--trace-records",
            "1t",
            "--time",
            "0.2s",
            "--size",
            "1m",
            "f.dat",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out.stderr)
        .contains("--trace-records 1099511627776 for 1 worker(s) would need about"));
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

#[test]
fn a_newline_in_a_name_keeps_the_error_on_one_line() {
    let sb = Sandbox::new();
    for args in [
        &["replay", "no\nsuch.csv"][..],
        &["trace", "--analyze", "a\nb"],
        &["frag", "x\ny"],
    ] {
        let out = sb.cmd(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(one_line(&out.stderr).contains("\\n"), "{args:?}");
    }
}

#[test]
fn compare_refuses_a_fifo_instead_of_waiting_on_it() {
    let sb = Sandbox::new();
    let c = std::ffi::CString::new(sb.file("p").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path inside the sandbox.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = sb
        .cmd(&["compare", "p", "p"])
        .timeout(Duration::from_secs(10))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out.stderr).contains("neither a result file nor a directory"));
}

#[test]
fn report_refuses_a_fifo_instead_of_waiting_on_it() {
    let sb = Sandbox::new();
    let c = std::ffi::CString::new(sb.file("p").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path inside the sandbox.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = sb
        .cmd(&["report", "p"])
        .timeout(Duration::from_secs(10))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out.stderr).contains("neither a result file nor a directory"));
}
