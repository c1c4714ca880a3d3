//! Observation features on real files and devices: diskstats (recorded and live), the per-I/O
//! trace against what strace saw fsbench issue, strace capture of dd, replay of a captured
//! trace, stripe arithmetic, fragmentation, and bad input.
mod common;

use common::{cannot, words, Sandbox};
use fsbench::probe::diskstats;
use fsbench::trace::{format, TraceOp};
use std::path::Path;

fn have_strace() -> bool {
    std::process::Command::new("strace")
        .arg("-V")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/diskstats")
            .join(name),
    )
    .unwrap()
}

#[test]
fn recorded_diskstats_give_the_200_mib_that_were_written() {
    // Recorded on the build VM around `dd bs=1M count=200 oflag=direct`, 2 s apart.
    let a = diskstats::parse(&fixture("vm-a.txt"));
    let b = diskstats::parse(&fixture("vm-b.txt"));
    assert_eq!(a.len(), 10);
    let s = diskstats::delta("vda", &a["vda"], &b["vda"], 2.0, 2.0);
    assert_eq!(s.write_kb_per_sec, 102400.0); // 409600 sectors of 512 bytes in 2 s
    assert_eq!(s.writes_per_sec, 200.0);
    assert_eq!(s.reads_per_sec, 1.5);
    assert_eq!(s.util_pct, 4.0); // 80 ms busy in 2000 ms
    assert!((s.await_ms - (1.0 + 161.0) / 403.0).abs() < 1e-12);
    assert!(s.avwait_ms >= 0.0 && s.avserv_ms <= s.await_ms);
    // Idle loop devices: all zero, no NaN.
    let l = diskstats::delta("loop0", &a["loop0"], &b["loop0"], 2.0, 2.0);
    assert_eq!((l.await_ms, l.util_pct, l.avg_queue), (0.0, 0.0, 0.0));
}

#[test]
fn old_kernel_format_with_partitions() {
    // The 14-field layout of kernels before 4.18, partitions included (see the fixtures' README).
    let m = diskstats::parse(&fixture("old-kernel.txt"));
    assert_eq!(m["sda"].reads, 52840);
    assert_eq!(m["sda1"].sectors_written, 2296);
    assert_eq!(m["sda"].weighted_io_ms, 168244);
    assert_eq!(m["sda"].flushes, 0);
}

#[test]
#[cfg_attr(not(has_loop), ignore = "SKIPPED: needs root and loop devices")]
fn live_loop_device_counts_the_direct_writes() {
    if !common::can_use_loop_devices() {
        cannot("needs root and loop devices");
    }
    let sb = Sandbox::new();
    let Some(lo) = common::LoopDevice::new(sb.path(), 64) else {
        cannot("losetup could not attach a loop device");
    };
    let name = lo.dev.file_name().unwrap().to_string_lossy().to_string();
    assert_eq!(diskstats::devices_under(&lo.dev)[0], name);
    // The loop device's backing file is on the sandbox's device: the chain continues there.
    let chain = diskstats::devices_under(&lo.dev);
    let host = diskstats::devices_under(sb.path());
    if let Some(h) = host.first() {
        assert!(chain.contains(h), "{chain:?} should reach {h}");
    }
    let dev = lo.dev.to_str().unwrap().to_string();
    let iostat = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsbench"))
        .args(["iostat", &dev, "500ms", "5", "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    let dd = std::process::Command::new("dd")
        .args([
            "if=/dev/zero",
            &format!("of={dev}"),
            "bs=1M",
            "count=8",
            "oflag=direct",
        ])
        .output()
        .unwrap();
    assert!(dd.status.success());
    let out = iostat.wait_with_output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let all = v["samples"].as_array().unwrap();
    // The loop device and, after it, the device holding its backing file.
    let samples: Vec<&serde_json::Value> = all
        .iter()
        .filter(|s| s["device"] == name.as_str())
        .collect();
    assert_eq!(samples.len(), 5);
    let written_kb: f64 = samples
        .iter()
        .map(|s| s["write_kb_per_sec"].as_f64().unwrap() * s["interval_s"].as_f64().unwrap())
        .sum();
    assert!(
        (written_kb - 8192.0).abs() < 1.0,
        "counted {written_kb} KB, wrote 8192 KB"
    );
    // %busy comes from io_ticks, counted in jiffies: fast loop I/Os may add nothing, so
    // only its bounds are certain.
    for s in &samples {
        let util = s["util_pct"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&util), "{s}");
        assert!(s["avserv_ms"].as_f64().unwrap() <= s["await_ms"].as_f64().unwrap() + 1e-9);
    }
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4"
)]
fn mounted_loop_file_system_resolves_to_loop_then_host() {
    let sb = Sandbox::new();
    let Some(fs) = common::MountedFs::new(sb.path(), "ext4", 64) else {
        cannot("could not make and mount ext4 on a loop device");
    };
    let chain = diskstats::devices_under(&fs.path().join("not-yet-created"));
    assert_eq!(chain[0], fs.lo.dev.file_name().unwrap().to_string_lossy());
    assert!(
        chain.len() >= 2,
        "{chain:?}: the backing file's device should follow"
    );
}

#[test]
fn run_with_iostat_stores_samples() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run f --rw write --bs 64k --size 32m --fsync --iostat 50ms",
    ));
    let io = &v["probes"]["iostat"];
    assert!(!io["samples"].as_array().unwrap().is_empty(), "{io}");
    assert_eq!(io["interval_s"].as_f64(), Some(0.05));
    // A writing run records the extents of the file it wrote.
    let ex = &v["probes"]["extents"]["files"][0];
    assert!(ex["extents"].as_u64().unwrap() >= 1, "{ex}");
    assert_eq!(ex["size_bytes"].as_u64(), Some(32 << 20));
    // Syscall accounting with rates.
    let t = &v["total"];
    assert_eq!(t["syscalls"]["write"].as_u64(), Some(512));
    assert_eq!(t["syscalls"]["fsync"].as_u64(), Some(1));
    assert!(t["syscall_rates_per_sec"]["write"].as_f64().unwrap() > 0.0);
    assert!(t["usage"]["vol_ctx_switches"].is_u64());
}

/// Reads on `file` in a trace, as (offset, len), in trace order.
fn reads_on(t: &fsbench::trace::Trace, file_suffix: &str) -> Vec<(u64, u64)> {
    t.records
        .iter()
        .filter(|r| r.op == TraceOp::Read && t.files[r.file as usize].ends_with(file_suffix))
        .map(|r| (r.offset, r.len))
        .collect()
}

/// Two threads of 500 seeded random 4 KiB reads of `data`, traced by fsbench into t.csv; the
/// trace is checked against the job and returned.
fn traced_job(sb: &Sandbox) -> fsbench::trace::Trace {
    let out = sb
        .cmd(&words("run data --rw randread --bs 4k --size 4m --count 500 --threads 2 --seed 7 --trace t.csv"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = format::read_file(&sb.file("t.csv")).unwrap();
    assert_eq!(t.records.len(), 1000);
    assert!(t
        .records
        .iter()
        .all(|r| r.op == TraceOp::Read && r.len == 4096 && r.result == 4096));
    assert!(t
        .records
        .iter()
        .all(|r| r.offset % 4096 == 0 && r.offset + 4096 <= 4 << 20));
    assert_eq!(t.records.iter().filter(|r| r.thread == 1).count(), 500);
    assert!(t.records.iter().all(|r| r.end_ns >= r.start_ns));
    t
}

#[test]
fn trace_records_exactly_the_ios_the_job_issued() {
    traced_job(&Sandbox::new());
}

#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn trace_holds_the_reads_strace_saw_the_same_job_issue() {
    let sb = Sandbox::new();
    let t = traced_job(&sb);
    // The same job again (same seed), seen from outside by strace: the same preads.
    if !have_strace() {
        cannot("strace not installed");
    }
    let bin = assert_cmd::cargo::cargo_bin("fsbench");
    let out = sb
        .cmd(&[
            "trace",
            "-o",
            "s.csv",
            "--",
            bin.to_str().unwrap(),
            "run",
            "data",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--size",
            "4m",
            "--count",
            "500",
            "--threads",
            "2",
            "--seed",
            "7",
            "--trace",
            "t2.bin",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = format::read_file(&sb.file("s.csv")).unwrap();
    let ring = format::read_file(&sb.file("t2.bin")).unwrap();
    let mut a = reads_on(&seen, "/data");
    let mut b = reads_on(&ring, "data");
    assert_eq!(a.len(), 1000, "strace saw {} reads", a.len());
    a.sort();
    b.sort();
    assert_eq!(a, b);
    let mut c = reads_on(&t, "data");
    c.sort();
    assert_eq!(a, c, "the same seed issues the same offsets");
}

#[test]
fn trace_format_bin_and_ring_overflow_keep_the_newest() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run f --rw read --bs 4k --size 1m --trace t.bin --trace-records 100",
    ));
    assert_eq!(v["probes"]["trace"]["records"].as_u64(), Some(100));
    assert_eq!(v["probes"]["trace"]["dropped_records"].as_u64(), Some(156));
    let t = format::read_file(&sb.file("t.bin")).unwrap();
    let offs: Vec<u64> = t.records.iter().map(|r| r.offset).collect();
    let want: Vec<u64> = (156..256).map(|i| i * 4096).collect();
    assert_eq!(offs, want);
}

#[test]
fn trace_covers_worker_processes() {
    let sb = Sandbox::new();
    // Two users, each a process with two threads: four rings in two processes.
    let v = sb.run_json(&words("run a b --rw randread --bs 4k --size 2m --count 200 --threads 2 --processes per-user --seed 3 --trace t.bin"));
    assert_eq!(v["probes"]["trace"]["records"].as_u64(), Some(800));
    let t = format::read_file(&sb.file("t.bin")).unwrap();
    for w in 0..4u32 {
        let mine: Vec<_> = t.records.iter().filter(|r| r.thread == w).collect();
        assert_eq!(mine.len(), 200, "worker {w}");
        let file = &t.files[mine[0].file as usize];
        assert!(file.ends_with(if w < 2 { "a" } else { "b" }), "{w}: {file}");
        assert!(mine.iter().all(|r| r.len == 4096 && r.result == 4096));
    }
    // Times from the two processes share one clock: the runs overlap.
    let first_end = |w: u32| {
        t.records
            .iter()
            .filter(|r| r.thread == w)
            .map(|r| r.end_ns)
            .max()
            .unwrap()
    };
    let first_start = |w: u32| {
        t.records
            .iter()
            .filter(|r| r.thread == w)
            .map(|r| r.start_ns)
            .min()
            .unwrap()
    };
    assert!(first_start(2) < first_end(0) && first_start(0) < first_end(2));
    // The same offsets as the same job run with threads.
    let v2 = sb.run_json(&words(
        "run a b --rw randread --bs 4k --size 2m --count 200 --threads 2 --seed 3 --trace t2.bin",
    ));
    assert_eq!(v2["probes"]["trace"]["records"].as_u64(), Some(800));
    let t2 = format::read_file(&sb.file("t2.bin")).unwrap();
    let offsets = |t: &fsbench::trace::Trace, w: u32| -> Vec<u64> {
        t.records
            .iter()
            .filter(|r| r.thread == w)
            .map(|r| r.offset)
            .collect()
    };
    for w in 0..4 {
        assert_eq!(offsets(&t, w), offsets(&t2, w), "worker {w}");
    }
    // The parts the worker processes left in TMPDIR were merged and removed.
    std::fs::create_dir(sb.file("tmp")).unwrap();
    sb.cmd(&words(
        "run a --rw randread --bs 4k --size 2m --count 10 --processes per-user --trace t3.csv",
    ))
    .env("TMPDIR", sb.file("tmp"))
    .assert()
    .success();
    assert_eq!(std::fs::read_dir(sb.file("tmp")).unwrap().count(), 0);
    assert_eq!(
        format::read_file(&sb.file("t3.csv")).unwrap().records.len(),
        10
    );
}

#[test]
fn trace_refuses_bad_options() {
    let sb = Sandbox::new();
    let o = sb
        .cmd(&words("run f --size 1m --trace-format bin"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = sb
        .cmd(&words("run f --size 1m --iostat fast"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(!sb.file("f").exists());
}

fn dd_capture(sb: &Sandbox) -> fsbench::trace::Trace {
    let input: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
    std::fs::write(sb.file("in.dat"), &input).unwrap();
    let out = sb
        .cmd(&words(
            "trace -o dd.csv -- dd if=in.dat of=out.dat bs=4k skip=3 seek=2 count=5 conv=notrunc",
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("syscall"));
    format::read_file(&sb.file("dd.csv")).unwrap()
}

#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn trace_captures_dd_with_correct_offsets() {
    if !have_strace() {
        cannot("strace not installed");
    }
    let sb = Sandbox::new();
    let t = dd_capture(&sb);
    let on = |suffix: &str, op: TraceOp| -> Vec<(u64, u64, i64)> {
        t.records
            .iter()
            .filter(|r| r.op == op && t.files[r.file as usize].ends_with(suffix))
            .map(|r| (r.offset, r.len, r.result))
            .collect()
    };
    let reads = on("/in.dat", TraceOp::Read);
    let writes = on("/out.dat", TraceOp::Write);
    let want_r: Vec<(u64, u64, i64)> = (3..8).map(|i| (i * 4096, 4096, 4096)).collect();
    let want_w: Vec<(u64, u64, i64)> = (2..7).map(|i| (i * 4096, 4096, 4096)).collect();
    assert_eq!(reads, want_r);
    assert_eq!(writes, want_w);
    assert!(t
        .records
        .iter()
        .any(|r| r.op == TraceOp::Open && t.files[r.file as usize].ends_with("/out.dat")));
    // System files are left out by default.
    assert!(!t
        .files
        .iter()
        .any(|f| f.starts_with("/usr/lib/") || f.starts_with("/proc/")));
    // And dd really wrote those bytes where the trace says.
    let out = std::fs::read(sb.file("out.dat")).unwrap();
    let input = std::fs::read(sb.file("in.dat")).unwrap();
    assert_eq!(&out[8192..8192 + 20480], &input[12288..12288 + 20480]);
}

#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn replay_of_a_captured_trace_issues_the_same_sequence() {
    if !have_strace() {
        cannot("strace not installed");
    }
    let sb = Sandbox::new();
    let orig = dd_capture(&sb);
    let bin = assert_cmd::cargo::cargo_bin("fsbench");
    std::fs::create_dir(sb.file("scratch")).unwrap();
    let out = sb
        .cmd(&[
            "trace",
            "-o",
            "replayed.csv",
            "--",
            bin.to_str().unwrap(),
            "replay",
            "dd.csv",
            "--dir",
            "scratch",
            "--output",
            "r.json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = format::read_file(&sb.file("replayed.csv")).unwrap();
    let data =
        |t: &fsbench::trace::Trace, only_scratch: bool| -> Vec<(TraceOp, String, u64, u64)> {
            t.records
                .iter()
                .filter(|r| r.op.is_data() && r.result > 0)
                .filter(|r| !only_scratch || t.files[r.file as usize].contains("fsbench-replay-"))
                .map(|r| {
                    let f = &t.files[r.file as usize];
                    // Scratch files are named after the trace's file index.
                    let key = if only_scratch {
                        f.rsplit('-')
                            .next()
                            .unwrap()
                            .trim_end_matches(".dat")
                            .to_string()
                    } else {
                        orig.files.iter().position(|x| x == f).unwrap().to_string()
                    };
                    (r.op, key, r.offset, r.result as u64)
                })
                .collect()
        };
    let want = data(&orig, false);
    let got = data(&seen, true);
    // Creating the scratch files writes them first; the replay is the tail.
    assert!(got.len() >= want.len());
    assert_eq!(&got[got.len() - want.len()..], &want[..]);
    // Measured like any run, and the scratch files are gone.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
    assert_eq!(v["kind"], "replay");
    let reads = want.iter().filter(|w| w.0 == TraceOp::Read).count() as u64;
    assert_eq!(v["total"]["read_ops"].as_u64(), Some(reads));
    assert_eq!(std::fs::read_dir(sb.file("scratch")).unwrap().count(), 0);
}

#[test]
fn replay_with_timing_keeps_the_pace() {
    let sb = Sandbox::new();
    let mut csv = String::from(format::CSV_HEADER);
    csv.push('\n');
    for i in 0..5u64 {
        csv.push_str(&format!(
            "{i},0,write,/x/y,{},4096,{},{},4096\n",
            i * 4096,
            i * 50_000_000,
            i * 50_000_000 + 1000
        ));
    }
    csv.push_str("5,0,fsync,/x/y,0,0,250000000,250001000,0\n");
    std::fs::write(sb.file("t.csv"), csv).unwrap();
    let v = sb.run_json(&words("replay t.csv --speed 1.0"));
    let el = v["total"]["elapsed_s"].as_f64().unwrap();
    assert!(
        el >= 0.25,
        "timed replay took {el} s, the trace spans 0.25 s"
    );
    assert_eq!(v["total"]["write_ops"].as_u64(), Some(5));
    assert_eq!(v["total"]["syscalls"]["fsync"].as_u64(), Some(1));
    assert!(sb
        .listing()
        .iter()
        .all(|f| !f.starts_with("fsbench-replay")));
}

#[test]
fn analyze_stripe_split_on_the_seed_example() {
    // One 1 MB read at block 43008 (512-byte blocks), as in the vxtrace walkthrough.
    let sb = Sandbox::new();
    let csv = format!(
        "{}\n0,1,read,/vol/f,{},1048576,0,7000000,1048576\n",
        format::CSV_HEADER,
        43008 * 512
    );
    std::fs::write(sb.file("one.csv"), csv).unwrap();
    let out = sb
        .cmd(&words(
            "trace --analyze one.csv --stripe 32k:5 --format json",
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stripe"]["device_ios"].as_u64(), Some(32));
    assert_eq!(
        v["stripe"]["per_column_ios"],
        serde_json::json!([6, 6, 7, 7, 6])
    );
    let text = sb
        .cmd(&words("trace --analyze one.csv --stripe 32k:5"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("1 application I/Os become 32 device I/Os")
    );
}

#[test]
fn frag_reports_the_file_made_fragmented_on_purpose() {
    use std::os::unix::fs::FileExt;
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("d")).unwrap();
    std::fs::write(sb.file("d/whole"), vec![3u8; 1 << 20]).unwrap();
    let f = std::fs::File::create(sb.file("d/holey")).unwrap();
    for i in 0..20u64 {
        f.write_all_at(&[9u8; 4096], i * 256 * 1024).unwrap();
    }
    f.sync_all().unwrap();
    let out = sb.cmd(&["frag", "d", "--format", "json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"].as_u64(), Some(2));
    assert!(v["worst"][0]["path"].as_str().unwrap().ends_with("holey"));
    assert_eq!(v["worst"][0]["extents"].as_u64(), Some(20));
    let text = sb.cmd(&["frag", "d"]).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("average extents per file"));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("junk.csv"), "hello,world\n1,2\n").unwrap();
    for args in [
        vec!["replay", "junk.csv"],
        vec!["replay", "missing.csv"],
        vec!["trace", "--analyze", "junk.csv"],
        vec!["trace", "--analyze", "junk.csv", "--stripe", "64k"],
        vec!["trace"],
        vec!["trace", "--", "no-such-program-fsbench"],
        vec!["iostat", "0"],
        vec!["iostat", "/no/such/path", "1"],
        vec!["iostat", "1", "zero"],
        vec!["frag", "/no/such/path"],
    ] {
        let o = sb.cmd(&args).output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"));
    }
}

#[test]
fn missing_strace_is_a_clear_error() {
    let sb = Sandbox::new();
    let o = sb
        .cmd(&["trace", "--", "/bin/true"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("strace is not installed"));
}

#[test]
fn replay_refuses_a_trace_larger_than_the_free_space() {
    let sb = Sandbox::new();
    let csv = format!(
        "{}\n0,0,read,/big,{},4096,0,10,4096\n",
        format::CSV_HEADER,
        1u64 << 60
    );
    std::fs::write(sb.file("big.csv"), csv).unwrap();
    let o = sb.cmd(&["replay", "big.csv"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("free"));
    assert!(sb
        .listing()
        .iter()
        .all(|f| !f.starts_with("fsbench-replay")));
}

#[test]
#[cfg_attr(
    not(has_tmp_direct_io),
    ignore = "SKIPPED: the temp dir's file system takes no O_DIRECT writes"
)]
fn replay_direct_sends_misaligned_ios_through_dsync_buffered() {
    let sb = Sandbox::new();
    let mut csv = format!("{}\n", format::CSV_HEADER);
    // Three aligned 4 KiB writes, two misaligned ones, one aligned read.
    for (i, (op, off, len)) in [
        ("write", 0u64, 4096u64),
        ("write", 4096, 4096),
        ("write", 100, 300),
        ("write", 8192, 4096),
        ("write", 12288, 1000),
        ("read", 0, 4096),
    ]
    .iter()
    .enumerate()
    {
        csv.push_str(&format!(
            "{i},0,{op},/db/f,{off},{len},{i}000,{i}500,{len}\n"
        ));
    }
    std::fs::write(sb.file("t.csv"), csv).unwrap();
    let out = sb.file("r.json");
    let o = sb
        .cmd(&[
            "replay",
            "t.csv",
            "--direct",
            "--output",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    if String::from_utf8_lossy(&o.stderr).contains("O_DIRECT") {
        cannot("the temp dir's file system has no direct I/O");
    }
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(v["plan"]["cache"]["policy"], "direct");
    assert_eq!(v["total"]["buffered_fallback_ops"].as_u64(), Some(2));
    assert_eq!(v["total"]["write_ops"].as_u64(), Some(5));
    assert_eq!(v["total"]["read_ops"].as_u64(), Some(1));
    assert_eq!(
        v["total"]["write_bytes"].as_u64(),
        Some(3 * 4096 + 300 + 1000)
    );
}

#[test]
#[cfg_attr(
    not(all(has_strace, has_python3)),
    ignore = "SKIPPED: needs strace (able to trace) and python3"
)]
fn trace_attaches_to_a_running_process_and_knows_its_positions() {
    if !have_strace() {
        cannot("strace not installed");
    }
    let sb = Sandbox::new();
    let data = sb.file("pin.dat");
    std::fs::write(&data, vec![5u8; 200_000]).unwrap();
    // A reader that opened its file and moved 5000 bytes in before we attach.
    let script = format!(
        "import time\nf=open({:?},'rb',buffering=0)\nf.read(5000)\nprint('ready', flush=True)\nwhile True:\n    f.read(1000)\n    time.sleep(0.01)\n    if f.tell() > 190000: f.seek(5000)\n",
        data.to_str().unwrap()
    );
    let Ok(mut reader) = std::process::Command::new("python3")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
    else {
        cannot("python3 not available");
    };
    // Attach only once it has opened the file and read its first 5000 bytes.
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(reader.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    std::thread::sleep(std::time::Duration::from_millis(50));
    let pid = reader.id().to_string();
    let o = sb
        .cmd(&["trace", "--pid", &pid, "--duration", "400ms", "-o", "p.csv"])
        .output()
        .unwrap();
    let _ = reader.kill();
    let _ = reader.wait();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = format::read_file(&sb.file("p.csv")).unwrap();
    let offs: Vec<u64> = t
        .records
        .iter()
        .filter(|r| r.op == TraceOp::Read && t.files[r.file as usize].ends_with("pin.dat"))
        .map(|r| r.offset)
        .collect();
    assert!(offs.len() >= 5, "{offs:?}");
    // Started from the position /proc/PID/fdinfo reported, not from 0.
    assert!(offs[0] > 5000 && offs[0].is_multiple_of(1000), "{offs:?}");
    assert!(
        offs.windows(2).all(|w| w[1] == w[0] + 1000 || w[1] == 5000),
        "{offs:?}"
    );
    let o = sb
        .cmd(&words("trace --pid 999999999 --duration 1s"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn trace_output_never_overwrites_a_file_that_is_not_a_trace() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("notes.csv"), "precious,data\n").unwrap();
    let o = sb
        .cmd(&words("run f --size 1m --trace notes.csv"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(sb.file("notes.csv")).unwrap(),
        "precious,data\n"
    );
    assert!(!sb.file("f").exists(), "refused before any I/O");
    let o = sb
        .cmd(&words("trace -o notes.csv -- true"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // An earlier trace may be replaced.
    sb.cmd(&words("run f --size 64k --trace t.csv"))
        .assert()
        .success();
    sb.cmd(&words("run f --size 64k --trace t.csv"))
        .assert()
        .success();
}

#[test]
fn replay_stops_cleanly_on_ctrl_c() {
    let sb = Sandbox::new();
    let csv = format!(
        "{}\n0,0,write,/a,0,4096,0,10,4096\n1,0,write,/a,4096,4096,60000000000,60000000010,4096\n",
        format::CSV_HEADER
    );
    std::fs::write(sb.file("slow.csv"), csv).unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsbench"))
        .current_dir(sb.path())
        .args(["replay", "slow.csv", "--speed", "1", "--output", "r.json"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
    assert_eq!(v["status"], "partial");
    assert_eq!(v["total"]["write_ops"].as_u64(), Some(1));
    assert!(sb
        .listing()
        .iter()
        .all(|f| !f.starts_with("fsbench-replay")));
}

#[test]
#[cfg_attr(
    not(has_tmp_fiemap),
    ignore = "SKIPPED: the temp dir's file system does not answer FIEMAP"
)]
fn stripe_split_on_device_offsets_with_physical() {
    use std::os::unix::fs::FileExt;
    let sb = Sandbox::new();
    let data = sb.file("layout.dat");
    let f = std::fs::File::create(&data).unwrap();
    // Two written pieces with a hole between: two extents at unrelated device offsets.
    f.write_all_at(&vec![1u8; 96 * 1024], 0).unwrap();
    f.write_all_at(&vec![2u8; 96 * 1024], 256 * 1024).unwrap();
    f.sync_all().unwrap();
    let Ok(ex) = fsbench::probe::fiemap::extents(&f) else {
        cannot("the temp dir's file system does not answer FIEMAP");
    };
    // One read over the whole file range.
    let path = data.to_str().unwrap();
    let csv = format!(
        "{}\n0,1,read,{path},0,{},0,1000,{}\n",
        format::CSV_HEADER,
        352 * 1024,
        352 * 1024
    );
    std::fs::write(sb.file("t.csv"), csv).unwrap();
    let su = 64 * 1024u64;
    let want: u64 = ex
        .iter()
        .map(|e| {
            let len = e.length.min(352 * 1024 - e.logical.min(352 * 1024));
            if len == 0 {
                0
            } else {
                (e.physical + len - 1) / su - e.physical / su + 1
            }
        })
        .sum();
    let o = sb
        .cmd(&words(
            "trace --analyze t.csv --stripe 64k:4 --physical --format json",
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["stripe"]["files_mapped_to_device"].as_u64(), Some(1));
    assert_eq!(
        v["stripe"]["device_ios"].as_u64(),
        Some(want),
        "extents {ex:?}"
    );
    // Without --physical the same read is cut on file offsets: 352 KiB from 0 = 6 units.
    let o = sb
        .cmd(&words("trace --analyze t.csv --stripe 64k:4 --format json"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["stripe"]["device_ios"].as_u64(), Some(6));
}
