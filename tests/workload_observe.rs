//! `fsbench workload` gets the runner's observation, rate limits, CPU accounting and signals
//! as `run` has them (issue #13): `--trace` records every call of every flowop, `--iostat`
//! samples the devices, `--rate-iops`/`--rate-bytes` pace the data I/O, the Result carries
//! the system-call counts, and SIGTERM ends a workload like Ctrl-C.

mod common;
use common::Sandbox;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every kind of call a workload makes, with fixed counts (finishoncount on the first flowop,
/// two process instances so the trace parts of worker processes are merged too).
const WML: &str = "set mode quit alldone
define fileset name=s,path=$dir,entries=6,size=16k,dirwidth=3,prealloc
define fileset name=n,path=$dir,entries=16,size=8k,prealloc=0
define fileset name=d,path=$dir,leafdirs=8,dirwidth=4,prealloc=0
define process name=p,instances=2 { thread name=t {
  flowop createfile name=cr,filesetname=n,fd=1
  flowop writewholefile name=ww,srcfd=1,fd=1,iosize=4k
  flowop appendfile name=ap,fd=1,iosize=1k
  flowop fsync name=fs,fd=1
  flowop closefile name=cl1,fd=1
  flowop openfile name=op,filesetname=s,fd=2
  flowop read name=rr,fd=2,iosize=4k,random
  flowop read name=rs,fd=2,iosize=4k
  flowop readwholefile name=rw,fd=2,iosize=8k
  flowop closefile name=cl2,fd=2
  flowop statfile name=st,filesetname=s
  flowop listdir name=ls,filesetname=s
  flowop makedir name=mk,filesetname=d
  flowop deletefile name=del,filesetname=n
  flowop finishoncount name=fin,target=cr,value=4 } }
run 30
";

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("fsbench")
}

/// (ops, read bytes, write bytes) per flowop name.
fn flowops(v: &serde_json::Value) -> BTreeMap<String, (u64, u64, u64)> {
    v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let s = &g["stats"];
            (
                g["name"].as_str().unwrap().to_string(),
                (
                    s["ops"].as_u64().unwrap(),
                    s["read_bytes"].as_u64().unwrap(),
                    s["write_bytes"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

struct Rec {
    op: String,
    file: String,
    len: u64,
    result: i64,
}

fn read_trace(path: &std::path::Path) -> Vec<Rec> {
    let text = std::fs::read_to_string(path).expect("trace written");
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("id,thread,op,file"), "{header}");
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Rec {
                op: f[2].to_string(),
                file: f[3].to_string(),
                len: f[5].parse().unwrap(),
                result: f[8].parse().unwrap(),
            }
        })
        .collect()
}

fn traced_run(sb: &Sandbox, extra: &[&str]) -> (serde_json::Value, Vec<Rec>) {
    std::fs::write(sb.file("e.f"), WML).unwrap();
    let dir = sb.file("data");
    std::fs::create_dir(&dir).unwrap();
    let trace = sb.file("t.csv");
    let mut args = vec![
        "workload",
        "e.f",
        "--dir",
        dir.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let v = sb.run_json(&args);
    assert_eq!(v["status"], "complete", "{v}");
    (v, read_trace(&trace))
}

fn check_trace_matches_flowops(v: &serde_json::Value, recs: &[Rec], dir: &str) {
    let f = flowops(v);
    let ops = |n: &str| f[n].0;
    // The fileset a traced path belongs to (its first component under the directory).
    let set_of = |file: &str| -> String {
        let rel = file.strip_prefix(dir).and_then(|r| r.strip_prefix('/'));
        rel.and_then(|r| r.split('/').next())
            .unwrap_or("")
            .to_string()
    };
    let count = |op: &str, set: &str| {
        recs.iter()
            .filter(|r| r.op == op && set_of(&r.file) == set)
            .count() as u64
    };
    // Every file the trace names is one of the filesets' paths.
    for r in recs {
        assert!(
            ["n", "s", "d"].contains(&set_of(&r.file).as_str()),
            "{} {}",
            r.op,
            r.file
        );
    }
    assert_eq!(ops("cr"), 8, "{f:?}");
    // createfile and openfile: one open each; listdir opens the directory it lists.
    assert_eq!(count("open", "n"), ops("cr"));
    assert_eq!(count("open", "s"), ops("op") + ops("ls"));
    assert_eq!(count("unlink", "n"), ops("del"));
    assert_eq!(count("fsync", "n"), ops("fs"));
    assert_eq!(count("stat", "s"), ops("st"));
    assert_eq!(count("mkdir", "d"), ops("mk"));
    assert!(count("readdir", "s") >= ops("ls"));
    assert_eq!(count("close", "n"), ops("cl1"));
    assert_eq!(count("close", "s"), ops("cl2") + ops("ls"));
    // Data calls: their bytes are the flowops' bytes.
    let bytes = |op: &str| -> u64 {
        recs.iter()
            .filter(|r| r.op == op && r.result > 0)
            .map(|r| r.result as u64)
            .sum()
    };
    let wr: u64 = ["ww", "ap"].iter().map(|n| f[*n].2).sum();
    let rd: u64 = ["rr", "rs", "rw"].iter().map(|n| f[*n].1).sum();
    assert_eq!(bytes("write"), wr, "{f:?}");
    assert_eq!(bytes("read"), rd, "{f:?}");
    assert!(recs.iter().all(|r| r.result >= 0), "no call failed");
    assert!(recs
        .iter()
        .filter(|r| r.op == "read" || r.op == "write")
        .all(|r| r.len > 0));
    let t = &v["probes"]["trace"];
    assert_eq!(t["records"].as_u64().unwrap(), recs.len() as u64, "{t}");
    assert_eq!(t["dropped_records"], 0);
}

#[test]
fn trace_records_every_call_of_worker_processes() {
    let sb = Sandbox::new();
    let (v, recs) = traced_run(&sb, &[]);
    let dir = sb.file("data").display().to_string();
    check_trace_matches_flowops(&v, &recs, &dir);
    // Two processes' records merged: two thread numbers.
    let text = std::fs::read_to_string(sb.file("t.csv")).unwrap();
    let threads: std::collections::BTreeSet<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(threads.len(), 2, "{threads:?}");
    // Nothing of the trace session is left behind.
    let tmp = std::env::temp_dir();
    assert!(std::fs::read_dir(&tmp).unwrap().flatten().all(|e| !e
        .file_name()
        .to_string_lossy()
        .starts_with("fsbench-trace-")
        || e.path().metadata().is_err()));
}

#[test]
fn trace_records_every_call_in_process() {
    let sb = Sandbox::new();
    let (v, recs) = traced_run(&sb, &["--in-process", "--iostat", "100ms"]);
    let dir = sb.file("data").display().to_string();
    check_trace_matches_flowops(&v, &recs, &dir);
    let io = &v["probes"]["iostat"];
    assert!(io.is_object(), "{}", v["probes"]);
}

#[test]
fn iostat_and_trace_flags_are_checked_like_run() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("e.f"), WML).unwrap();
    for (args, want) in [
        (vec!["--iostat", "1ms"], "at least 10ms"),
        (vec!["--trace-records", "10"], "need --trace"),
        (vec!["--trace", "t.csv", "--trace-format", "xml"], "xml"),
        (vec!["--rate-scope", "everyone"], "everyone"),
        (vec!["--rate-bytes", "lots"], "--rate-bytes"),
    ] {
        let mut a = vec!["workload", "e.f"];
        a.extend(args.iter());
        let out = sb.cmd(&a).assert().code(2).get_output().clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert_eq!(sb.listing(), ["e.f"]);
}

/// Random 4 KiB reads of a small fileset, as fast as they go unless paced.
const READS: &str = "set $dir=.
define fileset name=s,path=$dir,entries=4,size=64k,prealloc
define process name=p,instances=1 { thread name=t,instances=2 {
  flowop read name=rd,filesetname=s,iosize=4k,random } }
run 30
";

fn read_ops(v: &serde_json::Value) -> u64 {
    flowops(v)["rd"].0
}

#[test]
fn rate_iops_total_paces_the_data_io() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("r.f"), READS).unwrap();
    let v = sb.run_json(&[
        "workload",
        "r.f",
        "--time",
        "2s",
        "--rate-iops",
        "200",
        "--rate-scope",
        "total",
    ]);
    // 2 s at 200 I/Os per second over both threads: about 400 (the first open of each
    // thread's file counts as an op of the flowop too).
    let n = read_ops(&v);
    assert!((300..=500).contains(&n), "{n} ops");
    let notes = v["notes"].to_string();
    assert!(notes.contains("rate limit"), "{notes}");
}

#[test]
fn rate_bytes_per_thread_paces_the_data_io() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("r.f"), READS).unwrap();
    // 400 KiB/s of 4 KiB reads per thread: 100 reads/s each, 200/s for both.
    let v = sb.run_json(&["workload", "r.f", "--time", "2s", "--rate-bytes", "400k"]);
    let n = read_ops(&v);
    assert!((300..=500).contains(&n), "{n} ops");
    let b = v["total"]["read_bytes"].as_u64().unwrap();
    assert!((1_200_000..=2_000_000).contains(&b), "{b} bytes");
}

#[test]
fn ramp_runs_a_warm_up_left_out_of_the_result() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("r.f"), READS).unwrap();
    let t = Instant::now();
    // 200 I/Os per second over both threads: 1 s of warm-up, then 1 s measured, so about
    // 200 reads counted where a 2 s run counts about 400.
    let v = sb.run_json(&[
        "workload",
        "r.f",
        "--time",
        "1s",
        "--ramp",
        "1s",
        "--rate-iops",
        "200",
        "--rate-scope",
        "total",
    ]);
    assert!(t.elapsed() >= Duration::from_secs(2), "{:?}", t.elapsed());
    let n = read_ops(&v);
    assert!((120..=280).contains(&n), "{n} ops");
    let run = &v["workload"]["runs"][0];
    let secs = run["duration_s"].as_f64().unwrap();
    assert!((0.9..1.6).contains(&secs), "measured {secs} s");
    let notes = v["notes"].to_string();
    assert!(notes.contains("warm-up: the first 1 s"), "{notes}");
    for bad in ["soon", "1x"] {
        let out = sb
            .cmd(&["workload", "r.f", "--ramp", bad])
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--ramp"), "{err}");
    }
    assert_eq!(sb.listing(), ["r.f"]);
}

#[test]
fn result_carries_syscall_counts_and_cpu_like_run() {
    let sb = Sandbox::new();
    let (v, recs) = traced_run(&sb, &["--in-process"]);
    let f = flowops(&v);
    let sys = &v["total"]["syscalls"];
    let n = |k: &str| sys[k].as_u64().unwrap();
    // Every traced call is a counted system call (listdir's getdents may take more calls).
    let traced = |op: &str| recs.iter().filter(|r| r.op == op).count() as u64;
    assert_eq!(n("open"), traced("open"), "{sys}");
    assert_eq!(n("unlink"), f["del"].0, "{sys}");
    assert_eq!(n("mkdir"), f["mk"].0, "{sys}");
    assert_eq!(n("fsync"), f["fs"].0, "{sys}");
    assert_eq!(n("read"), traced("read"), "{sys}");
    assert_eq!(n("write"), traced("write"), "{sys}");
    assert!(v["total"]["syscalls_per_sec"].as_f64().unwrap() > 0.0);
    // CPU seconds as run has them.
    let t = &v["total"];
    let cpu = t["cpu_s"].as_f64().unwrap();
    let (u, s) = (
        t["cpu_user_s"].as_f64().unwrap(),
        t["cpu_sys_s"].as_f64().unwrap(),
    );
    assert!(cpu > 0.0 && (u + s - cpu).abs() < 1e-9, "{t}");
    // Each run's summary carries them too, and `report` reads them back.
    let run_sys = &v["workload"]["runs"][0]["summary"]["syscalls"];
    assert_eq!(run_sys, sys);
    std::fs::write(sb.file("w.json"), v.to_string()).unwrap();
    let out = sb
        .cmd(&[
            "report",
            "w.json",
            "--metrics",
            "read_calls,write_calls,sys_s",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&n("read").to_string()) && text.contains(&n("write").to_string()),
        "{text}"
    );
}

#[test]
fn sigterm_ends_a_workload_like_ctrl_c() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("r.f"), READS).unwrap();
    let json = sb.file("out.json");
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let mut child = Command::new(bin())
            .current_dir(sb.path())
            .args(["workload", "r.f", "--time", "60s", "--output"])
            .arg(&json)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: signalling the child we started.
        unsafe { libc::kill(child.id() as i32, sig) };
        let t = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "no exit after {sig}");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(130), "signal {sig}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["status"], "partial", "signal {sig}");
        assert!(read_ops(&v) > 0);
        let reason = v["workload"]["runs"][0]["stop_reason"].as_str().unwrap();
        assert!(reason.contains("interrupted"), "{reason}");
        std::fs::remove_file(&json).unwrap();
        // The fileset was removed.
        assert_eq!(sb.listing(), ["r.f"], "signal {sig}");
    }
}
