//! `fsbench replay` with what the runner gives every source: `--trace` (a trace of a replay
//! has the input's calls), every op of the trace format (metadata calls included), `--time`,
//! `--rate-iops`/`--rate-bytes`/`--rate-scope`, Ctrl-C, and per-thread syscall counts and CPU
//! in the Result as a run's.
mod common;

use common::Sandbox;
use fsbench::trace::{format, TraceOp};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

const HEADER: &str = "id,thread,op,file,offset,len,start_ns,end_ns,result";

fn write_trace(path: &Path, rows: &[String]) {
    let mut s = format!("{HEADER}\n");
    for r in rows {
        s.push_str(r);
        s.push('\n');
    }
    std::fs::write(path, s).unwrap();
}

/// Per-op record counts of a trace file.
fn op_counts(path: &Path) -> BTreeMap<&'static str, u64> {
    let t = format::read_file(path).unwrap();
    let mut m = BTreeMap::new();
    for r in &t.records {
        *m.entry(r.op.name()).or_insert(0) += 1;
    }
    m
}

/// Two threads, every op the format holds except open/close: thread 0 writes, syncs and
/// makes directories; thread 1 reads, stats, lists and unlinks.
fn mixed_trace(sb: &Sandbox) -> Vec<String> {
    let mut rows = Vec::new();
    let mut id = 0;
    let mut row = |th: u32, op: &str, file: &str, off: u64, len: u64, res: i64| {
        let t = id * 1000;
        rows.push(format!(
            "{id},{th},{op},{file},{off},{len},{t},{},{res}",
            t + 500
        ));
        id += 1;
    };
    for i in 0..20u64 {
        row(0, "write", "/data/a", i * 4096, 4096, 4096);
    }
    row(0, "fsync", "/data/a", 0, 0, 0);
    row(0, "fdatasync", "/data/a", 0, 0, 0);
    for i in 0..3 {
        row(0, "mkdir", &format!("/data/d{i}"), 0, 0, 0);
    }
    for i in 0..10u64 {
        row(1, "read", "/data/b", i * 8192, 8192, 8192);
    }
    for _ in 0..4 {
        row(1, "stat", "/data/b", 0, 0, 0);
    }
    row(1, "readdir", "/data", 0, 0, 48);
    row(1, "readdir", "/data", 0, 0, 0);
    for i in 0..5 {
        row(1, "unlink", &format!("/data/old{i}"), 0, 0, 0);
    }
    write_trace(&sb.file("t.csv"), &rows);
    rows
}

fn expected_mixed_counts() -> BTreeMap<&'static str, u64> {
    [
        ("write", 20),
        ("fsync", 1),
        ("fdatasync", 1),
        ("mkdir", 3),
        ("read", 10),
        ("stat", 4),
        ("readdir", 2),
        ("unlink", 5),
    ]
    .into_iter()
    .collect()
}

fn run_ok(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let out = sb
        .cmd(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_trace_of_a_replay_has_the_inputs_calls_and_analyzes() {
    let sb = Sandbox::new();
    mixed_trace(&sb);
    std::fs::create_dir(sb.file("scratch")).unwrap();
    run_ok(
        &sb,
        &[
            "replay", "t.csv", "--dir", "scratch", "--trace", "out.csv", "--output", "r.json",
        ],
    );
    assert_eq!(op_counts(&sb.file("out.csv")), expected_mixed_counts());
    // The binary form, too, and a trace of the trace of the trace is the same again.
    run_ok(
        &sb,
        &[
            "replay", "out.csv", "--dir", "scratch", "--trace", "out2.bin",
        ],
    );
    assert_eq!(op_counts(&sb.file("out2.bin")), expected_mixed_counts());
    let v = json(&sb.file("r.json"));
    assert_eq!(v["probes"]["trace"]["records"].as_u64(), Some(46), "{v}");
    // The analysis of the replay's trace counts the input's calls.
    let out = run_ok(&sb, &["trace", "--analyze", "out.csv"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("46 records over "), "{text}");
    assert!(
        text.contains("10 reads (80.00 KiB), 20 writes (80.00 KiB)"),
        "{text}"
    );
    assert!(text.contains(", 2 fsync/fdatasync;"), "{text}");
    // Nothing the replay made is left behind (files, directories, unlink placeholders).
    let left: Vec<_> = std::fs::read_dir(sb.file("scratch")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn metadata_calls_are_replayed_counted_and_grouped() {
    let sb = Sandbox::new();
    mixed_trace(&sb);
    std::fs::create_dir(sb.file("scratch")).unwrap();
    run_ok(
        &sb,
        &["replay", "t.csv", "--dir", "scratch", "--output", "r.json"],
    );
    let v = json(&sb.file("r.json"));
    let groups: BTreeMap<String, u64> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["name"].as_str().unwrap().to_string(),
                g["stats"]["ops"].as_u64().unwrap(),
            )
        })
        .collect();
    for (op, n) in expected_mixed_counts() {
        assert_eq!(groups.get(op), Some(&n), "group {op}: {groups:?}");
    }
    let sys = &v["total"]["syscalls"];
    assert_eq!(sys["mkdir"].as_u64(), Some(3), "{sys}");
    assert_eq!(sys["unlink"].as_u64(), Some(5), "{sys}");
    assert_eq!(sys["stat"].as_u64(), Some(4), "{sys}");
    assert!(sys["getdents"].as_u64().unwrap() >= 2, "{sys}");
    assert_eq!(v["replay"]["skipped_calls"].as_u64(), Some(0));
}

#[test]
fn replay_threads_carry_syscalls_and_cpu_like_a_run() {
    let sb = Sandbox::new();
    mixed_trace(&sb);
    std::fs::create_dir(sb.file("scratch")).unwrap();
    run_ok(
        &sb,
        &["replay", "t.csv", "--dir", "scratch", "--output", "r.json"],
    );
    let v = json(&sb.file("r.json"));
    let threads: Vec<&serde_json::Value> = v["users"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|u| u["threads"].as_array().unwrap())
        .collect();
    assert_eq!(threads.len(), 2);
    let by_reads: Vec<(u64, u64, u64)> = threads
        .iter()
        .map(|t| {
            let s = &t["stats"]["syscalls"];
            (
                s["read"].as_u64().unwrap(),
                s["write"].as_u64().unwrap(),
                s["fsync"].as_u64().unwrap() + s["fdatasync"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(by_reads.contains(&(0, 20, 2)), "{by_reads:?}");
    assert!(by_reads.contains(&(10, 0, 0)), "{by_reads:?}");
    // Each thread's CPU time is measured (a thread that ran is charged more than zero) and
    // user + system is its total; the threads' totals add up to the run's.
    let mut sum = 0.0;
    for t in &threads {
        let s = &t["stats"];
        let cpu = s["cpu_s"].as_f64().unwrap();
        let parts = s["cpu_user_s"].as_f64().unwrap() + s["cpu_sys_s"].as_f64().unwrap();
        assert!(cpu > 0.0, "{s}");
        assert!((parts - cpu).abs() < 1e-6, "{s}");
        sum += cpu;
    }
    let total_cpu = v["total"]["cpu_s"].as_f64().unwrap();
    assert!((sum - total_cpu).abs() < 1e-6, "{sum} vs {}", v["total"]);
    // A replay that does enough work to be charged CPU time shows it in the total.
    let rows: Vec<String> = (0..20000u64)
        .map(|i| {
            format!(
                "{i},0,write,/w,{},4096,{},{},4096",
                (i % 64) * 4096,
                i * 10,
                i * 10 + 5
            )
        })
        .collect();
    write_trace(&sb.file("big.csv"), &rows);
    run_ok(
        &sb,
        &[
            "replay", "big.csv", "--dir", "scratch", "--output", "big.json",
        ],
    );
    let b = json(&sb.file("big.json"));
    assert_eq!(b["total"]["syscalls"]["write"].as_u64(), Some(20000));
    assert!(
        b["total"]["cpu_s"].as_f64().unwrap() > 0.0,
        "{}",
        b["total"]
    );
    // report and compare read a replay's Result and show its CPU.
    let out = run_ok(&sb, &["report", "big.json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    // The figures are right-aligned under their heads: the CPU s cell ends where its head
    // does.
    let head = text
        .lines()
        .find(|l| l.starts_with("run "))
        .unwrap_or_else(|| panic!("{text}"));
    let end = head.find("CPU s").unwrap_or_else(|| panic!("{text}")) + "CPU s".len();
    let row = text
        .lines()
        .find(|l| l.starts_with("replay big.csv "))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        row[..end].split_whitespace().last(),
        Some(format!("{:.3}", b["total"]["cpu_s"].as_f64().unwrap()).as_str()),
        "{text}"
    );
    let out = run_ok(&sb, &["replay", "big.csv", "--dir", "scratch", "-v"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("syscalls"), "{text}");
    std::fs::copy(sb.file("big.json"), sb.file("again.json")).unwrap();
    run_ok(&sb, &["compare", "big.json", "again.json"]);
}

/// One thread: `n` 4 KiB reads of one file, traced `gap_ns` apart.
fn reads(sb: &Sandbox, name: &str, threads: u32, n: u64, gap_ns: u64) {
    let rows: Vec<String> = (0..n * threads as u64)
        .map(|i| {
            let t = i / threads as u64 * gap_ns;
            format!(
                "{i},{},read,/r{},{},4096,{t},{},4096",
                i % threads as u64,
                i % threads as u64,
                (i / threads as u64 % 16) * 4096,
                t + 100
            )
        })
        .collect();
    write_trace(&sb.file(name), &rows);
}

#[test]
fn time_stops_a_timed_replay_with_what_was_done() {
    let sb = Sandbox::new();
    // 60 reads a second apart: a minute as traced.
    reads(&sb, "slow.csv", 1, 60, 1_000_000_000);
    let t0 = Instant::now();
    let out = sb
        .cmd(&[
            "replay", "slow.csv", "--speed", "1", "--time", "1s", "--output", "r.json",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    let v = json(&sb.file("r.json"));
    let ops = v["total"]["read_ops"].as_u64().unwrap();
    assert!((1..=4).contains(&ops), "{ops} reads in 1 s");
    let notes = v["notes"].to_string();
    assert!(notes.contains("--time"), "{notes}");
}

#[test]
fn rate_limits_cap_a_back_to_back_replay() {
    let sb = Sandbox::new();
    reads(&sb, "r.csv", 1, 200, 1000);
    // 200 reads at 100/s: about 2 s.
    let t0 = Instant::now();
    run_ok(
        &sb,
        &[
            "replay",
            "r.csv",
            "--rate-iops",
            "100",
            "--output",
            "a.json",
        ],
    );
    let el = t0.elapsed();
    assert!(
        el >= Duration::from_millis(1500) && el < Duration::from_secs(15),
        "{el:?}"
    );
    assert_eq!(json(&sb.file("a.json"))["total"]["read_ops"], 200);
    // 200 x 4 KiB at 400 KiB/s: about 2 s.
    let t0 = Instant::now();
    run_ok(&sb, &["replay", "r.csv", "--rate-bytes", "400k"]);
    let el = t0.elapsed();
    assert!(
        el >= Duration::from_millis(1500) && el < Duration::from_secs(15),
        "{el:?}"
    );
    // Two threads of 100 reads sharing 100/s in total: about 2 s; per thread: about 1 s.
    reads(&sb, "two.csv", 2, 100, 1000);
    let t0 = Instant::now();
    run_ok(
        &sb,
        &[
            "replay",
            "two.csv",
            "--rate-iops",
            "100",
            "--rate-scope",
            "total",
        ],
    );
    let total = t0.elapsed();
    assert!(
        total >= Duration::from_millis(1500) && total < Duration::from_secs(15),
        "{total:?}"
    );
    // The rate is an extra cap on traced timing: 50 reads traced 1 ms apart at 25/s.
    reads(&sb, "fast.csv", 1, 50, 1_000_000);
    let t0 = Instant::now();
    run_ok(
        &sb,
        &["replay", "fast.csv", "--speed", "1", "--rate-iops", "25"],
    );
    let el = t0.elapsed();
    assert!(
        el >= Duration::from_millis(1500) && el < Duration::from_secs(15),
        "{el:?}"
    );
}

#[test]
fn bad_replay_limits_are_one_usage_line() {
    let sb = Sandbox::new();
    reads(&sb, "r.csv", 1, 4, 1000);
    for args in [
        &["replay", "r.csv", "--rate-scope", "everyone"][..],
        &["replay", "r.csv", "--time", "soon"],
        &["replay", "r.csv", "--time", "0s"],
        &["replay", "r.csv", "--rate-iops", "0"],
        &["replay", "r.csv", "--rate-bytes", "fast"],
        &["replay", "r.csv", "--trace-records", "10"],
    ] {
        let out = sb.cmd(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn ctrl_c_ends_a_replay_with_a_partial_result_and_130() {
    let sb = Sandbox::new();
    reads(&sb, "slow.csv", 1, 60, 1_000_000_000);
    let exe = assert_cmd::cargo::cargo_bin("fsbench");
    let mut child = std::process::Command::new(exe)
        .current_dir(sb.path())
        .args(["replay", "slow.csv", "--speed", "1", "--output", "r.json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "replay ignored SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    let v = json(&sb.file("r.json"));
    assert_eq!(v["status"], "partial");
    let ops = v["total"]["read_ops"].as_u64().unwrap();
    assert!((1..=5).contains(&ops), "{ops}");
    // The scratch file is gone.
    assert!(!sb.listing().iter().any(|f| f.starts_with("fsbench-replay")));
}

#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn strace_capture_carries_metadata_calls_into_replay() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("x"), b"hello").unwrap();
    let out = sb
        .cmd(&[
            "trace",
            "-o",
            "m.csv",
            "--",
            "sh",
            "-c",
            "mkdir d && ls d > /dev/null && stat x > /dev/null && cat x > d/y && rm d/y && rmdir d",
        ])
        .output()
        .unwrap();
    if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("ptrace") {
        common::cannot("strace cannot trace here although build.rs found it could");
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = format::read_file(&sb.file("m.csv")).unwrap();
    for op in [
        TraceOp::Mkdir,
        TraceOp::Readdir,
        TraceOp::Stat,
        TraceOp::Unlink,
    ] {
        assert!(
            t.records.iter().any(|r| r.op == op),
            "no {} in {:?}",
            op.name(),
            t.records.iter().map(|r| r.op.name()).collect::<Vec<_>>()
        );
    }
    std::fs::create_dir(sb.file("scratch")).unwrap();
    run_ok(
        &sb,
        &["replay", "m.csv", "--dir", "scratch", "--trace", "back.csv"],
    );
    let back = op_counts(&sb.file("back.csv"));
    for op in ["mkdir", "unlink", "stat", "readdir"] {
        assert!(back.get(op).copied().unwrap_or(0) > 0, "{op}: {back:?}");
    }
}

/// `--engine uring` replays the same calls as the sync engine, through the ring (the trace of
/// the replay has the input's per-op counts; the Result counts io_uring submissions).
#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn uring_engine_replays_the_same_calls_as_sync() {
    let sb = Sandbox::new();
    mixed_trace(&sb);
    std::fs::create_dir(sb.file("scratch")).unwrap();
    for engine in ["sync", "uring"] {
        let trace = format!("{engine}.csv");
        let out = format!("{engine}.json");
        run_ok(
            &sb,
            &[
                "replay", "t.csv", "--dir", "scratch", "--engine", engine, "--trace", &trace,
                "--output", &out,
            ],
        );
        assert_eq!(
            op_counts(&sb.file(&trace)),
            expected_mixed_counts(),
            "--engine {engine}"
        );
    }
    let (s, u) = (json(&sb.file("sync.json")), json(&sb.file("uring.json")));
    assert_eq!(s["total"]["read_ops"], u["total"]["read_ops"]);
    assert_eq!(s["total"]["write_bytes"], u["total"]["write_bytes"]);
    let enters = |v: &serde_json::Value| v["total"]["syscalls"]["io_uring_enter"].as_u64();
    assert!(
        enters(&u).unwrap_or(0) > 0,
        "uring did not use the ring: {u}"
    );
    assert_eq!(enters(&s).unwrap_or(0), 0, "sync used a ring: {s}");
    let err = sb
        .cmd(&["replay", "t.csv", "--dir", "scratch", "--engine", "mmap"])
        .output()
        .unwrap();
    assert_eq!(err.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&err.stderr);
    assert!(msg.contains("--engine mmap: replays"), "{msg}");
    assert_eq!(msg.lines().count(), 1, "{msg}");
}

/// A trace over many files replays into one compact text result: the scratch files are one
/// note (the mapping is data in `replay.files`), and the users beyond the busiest are one line.
#[test]
fn a_replay_of_many_files_prints_one_compact_result() {
    let sb = Sandbox::new();
    let mut rows = Vec::new();
    for i in 0..40u64 {
        // Two threads; thread 0 does most of the I/O, every file is touched once.
        let th = (i % 4 == 3) as u32;
        let t = i * 1000;
        rows.push(format!(
            "{i},{th},read,/data/f{i},0,4096,{t},{},4096",
            t + 500
        ));
    }
    write_trace(&sb.file("many.csv"), &rows);
    std::fs::create_dir(sb.file("r")).unwrap();
    let out = run_ok(
        &sb,
        &["replay", "many.csv", "--dir", "r", "--output", "o.json"],
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.lines().count() <= 20, "{text}");
    let notes: Vec<&str> = text.lines().filter(|l| l.starts_with("note:")).collect();
    assert!(notes.len() <= 4, "{text}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("40 scratch files") && n.contains("replay.files")),
        "{text}"
    );
    let users = text.lines().filter(|l| l.starts_with("user ")).count();
    assert!((1..=5).contains(&users), "{text}");
    assert!(text.contains("more users"), "{text}");
    let v = json(&sb.file("o.json"));
    let files = v["replay"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 40);
    let traced: std::collections::BTreeSet<&str> = files
        .iter()
        .map(|f| f["traced"].as_str().unwrap())
        .collect();
    assert_eq!(traced.len(), 40);
    assert!(files.iter().all(|f| f["size_bytes"].as_u64() >= Some(4096)));
    // Every user is still in the JSON, and -v lists them all in the text.
    assert_eq!(v["users"].as_array().unwrap().len(), 40);
    let out = run_ok(&sb, &["replay", "many.csv", "--dir", "r", "-v"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!text.contains("more users"), "{text}");
    // Every scratch file lived in r/ and is gone.
    assert!(files
        .iter()
        .all(|f| f["scratch"].as_str().unwrap().starts_with("r/")));
    let left: Vec<_> = std::fs::read_dir(sb.file("r")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_warm_up_is_replayed_but_left_out_of_the_result() {
    let sb = Sandbox::new();
    // 40 reads 50 ms apart: 2 s as traced; the first second is the warm-up.
    reads(&sb, "r.csv", 1, 40, 50_000_000);
    run_ok(
        &sb,
        &["replay", "r.csv", "--speed", "1", "--output", "all.json"],
    );
    run_ok(
        &sb,
        &[
            "replay",
            "r.csv",
            "--speed",
            "1",
            "--ramp",
            "1s",
            "--output",
            "ramped.json",
        ],
    );
    let all = json(&sb.file("all.json"));
    let ramped = json(&sb.file("ramped.json"));
    assert_eq!(all["total"]["read_ops"], 40);
    let ops = ramped["total"]["read_ops"].as_u64().unwrap();
    assert!((15..=25).contains(&ops), "{ops} reads after the warm-up");
    // The warm-up's system calls and time are left out too.
    assert_eq!(ramped["total"]["syscalls"]["read"].as_u64(), Some(ops));
    let el = |v: &serde_json::Value| v["total"]["elapsed_s"].as_f64().unwrap();
    assert!(el(&all) > 1.8, "{}", el(&all));
    assert!(el(&ramped) > 0.8 && el(&ramped) < 1.3, "{}", el(&ramped));
    let notes = ramped["notes"].to_string();
    assert!(
        notes.contains("a warm-up of 1 s (--ramp) was left out"),
        "{notes}"
    );
    assert!(!all["notes"].to_string().contains("warm-up"));
    // `--time` counts after the warm-up: 0.5 s measured of a 1.5 s replay.
    run_ok(
        &sb,
        &[
            "replay",
            "r.csv",
            "--speed",
            "1",
            "--ramp",
            "1s",
            "--time",
            "0.5s",
            "--output",
            "timed.json",
        ],
    );
    let timed = json(&sb.file("timed.json"));
    let ops = timed["total"]["read_ops"].as_u64().unwrap();
    assert!(
        (7..=13).contains(&ops),
        "{ops} reads in 0.5 s after the warm-up"
    );
    // A bad duration is one usage line.
    let out = sb
        .cmd(&["replay", "r.csv", "--ramp", "soon"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--ramp"), "{err}");
}

/// `--ramp-bytes`: each replay thread's first SIZE bytes moved are replayed but left out:
/// of 2 threads x 40 reads of 4 KiB, 40 KiB per thread is 10 reads each, so 60 are counted;
/// beside --ramp, or a bad size, is one usage line.
#[test]
fn a_warm_up_by_bytes_is_replayed_but_left_out_of_the_result() {
    let sb = Sandbox::new();
    reads(&sb, "r.csv", 2, 40, 1_000);
    run_ok(
        &sb,
        &[
            "replay",
            "r.csv",
            "--ramp-bytes",
            "40k",
            "--output",
            "ramped.json",
        ],
    );
    let ramped = json(&sb.file("ramped.json"));
    assert_eq!(ramped["total"]["read_ops"], 60, "{}", ramped["total"]);
    assert_eq!(ramped["total"]["read_bytes"], 60 * 4096);
    assert_eq!(ramped["total"]["syscalls"]["read"], 60);
    let notes = ramped["notes"].to_string();
    assert!(
        notes.contains("a warm-up of 40960 bytes per thread (--ramp-bytes) was left out"),
        "{notes}"
    );
    for bad in [
        vec!["replay", "r.csv", "--ramp-bytes", "lots"],
        vec!["replay", "r.csv", "--ramp-bytes", "4k", "--ramp", "1s"],
    ] {
        let out = sb.cmd(&bad).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("--ramp-bytes"), "{err}");
    }
}
