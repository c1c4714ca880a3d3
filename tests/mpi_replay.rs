//! `fsbench replay` on MPI ranks (issue #16, h-rkreplay): every rank replays the trace (or its
//! own, `{rank}` in TRACE) on scratch files in DIR/rank-NNNNN, and rank 0 reports one Result
//! whose counts are every rank's summed exactly. The real binary under
//! `mpirun --allow-run-as-root --oversubscribe -np 4` on this machine; traces made by
//! `fsbench run --trace`; every figure is checked exactly against a one-host replay or the
//! trace itself. Run with
//! `cargo test --release --features mpi --test mpi_replay -- --test-threads=1`.
#![cfg(feature = "mpi")]

mod common;
mod faultfs;

use common::{mpi_refused_in_one_line, u, Sandbox};
use serde_json::Value;
use std::process::Output;

const NP: u64 = 4;

/// `mpirun -np 4 fsbench ARGS` in the sandbox (`common::mpirun`).
fn mpirun(sb: &Sandbox, args: &[&str]) -> Output {
    common::mpirun(sb, NP, args)
}

/// Run on the ranks with --output: the exit status, the Result and stderr.
fn run_result(sb: &Sandbox, args: &[&str]) -> (Option<i32>, Value, String) {
    let out = sb.file("result.json");
    let mut all = args.to_vec();
    all.extend(["--output", out.to_str().unwrap()]);
    let o = mpirun(sb, &all);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let text = std::fs::read_to_string(&out)
        .unwrap_or_else(|e| panic!("no result from {args:?} ({e}): {err}"));
    std::fs::remove_file(&out).unwrap();
    (o.status.code(), serde_json::from_str(&text).unwrap(), err)
}

/// A trace of a real run (`fsbench run NAME.dat ... --trace NAME`; the run removes its file).
fn make_trace(sb: &Sandbox, trace: &str, rw: &str, count: u64, threads: u32) {
    let data = format!("{trace}.dat");
    let line = format!(
        "run {data} --rw {rw} --size 1m --bs 4k --count {count} --threads {threads} --trace {trace}"
    );
    sb.cmd(&common::words(&line)).assert().success();
    assert!(!sb.file(&data).exists());
}

/// The bytes the reads and writes of a CSV trace moved (its `result` column).
fn trace_bytes(sb: &Sandbox, trace: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(sb.file(trace)).unwrap();
    let (mut ops, mut bytes) = (0, 0);
    for row in text.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        if f[2] == "read" || f[2] == "write" {
            ops += 1;
            bytes += f[8].parse::<u64>().unwrap();
        }
    }
    (ops, bytes)
}

/// The names in a directory, sorted.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The same trace on 4 ranks: every count of the Result (bytes, ops of each type, the call
/// kinds' groups, the calls replayed) is exactly 4 times a one-host replay's; a row per rank
/// with the one-host bytes; DIR is left as it was, the user's file in it untouched.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_trace_on_4_ranks_counts_4_times_a_one_host_replay() {
    let sb = Sandbox::new();
    make_trace(&sb, "t.csv", "randrw", 96, 2);
    std::fs::create_dir(sb.file("D")).unwrap();
    std::fs::write(sb.file("D/mine.txt"), "the user's").unwrap();
    let one = sb.run_json(&common::words("replay t.csv --dir D"));
    let (code, r, err) = run_result(&sb, &common::words("replay t.csv --dir D"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["kind"], "replay");
    assert_eq!(r["status"], "complete");
    for k in [
        "ops",
        "read_ops",
        "write_ops",
        "bytes",
        "read_bytes",
        "write_bytes",
    ] {
        assert_eq!(u(&r["total"][k]), NP * u(&one["total"][k]), "{k}");
    }
    assert!(u(&one["total"]["read_ops"]) > 0 && u(&one["total"]["write_ops"]) > 0);
    let groups = |v: &Value| -> Vec<(String, u64, u64)> {
        v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["name"].as_str().unwrap().to_string(),
                    u(&g["stats"]["ops"]),
                    u(&g["stats"]["bytes"]),
                )
            })
            .collect()
    };
    let scaled: Vec<(String, u64, u64)> = groups(&one)
        .into_iter()
        .map(|(n, o, b)| (n, NP * o, NP * b))
        .collect();
    assert_eq!(groups(&r), scaled);
    // The merged latency histogram holds every rank's reads.
    let hist_count = |v: &Value| -> u64 {
        v["total"]["read"]["lat_hist_ns"]
            .as_array()
            .map(|b| b.iter().map(|x| u(&x[1])).sum())
            .unwrap_or(0)
    };
    assert_eq!(hist_count(&r), NP * hist_count(&one));
    assert_eq!(u(&r["replay"]["calls"]), NP * u(&one["replay"]["calls"]));
    assert_eq!(u(&r["replay"]["threads"]), NP * 2);
    let ranks = r["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), NP as usize);
    for (i, row) in ranks.iter().enumerate() {
        assert_eq!(u(&row["rank"]), i as u64);
        assert_eq!(row["status"], "complete");
        assert_eq!(u(&row["bytes"]), u(&one["total"]["bytes"]), "{row}");
        let target = row["targets"][0].as_str().unwrap();
        assert!(target.ends_with(&format!("D/rank-{i:05}")), "{row}");
    }
    assert_eq!(r["distributed"]["layout"], "dir_per_rank");
    assert!(!r["hosts"].as_array().unwrap().is_empty());
    let d = &r["distributed"];
    assert!(d["last_end_s"].as_f64().unwrap() >= d["first_start_s"].as_f64().unwrap());
    assert_eq!(names(&sb.file("D")), vec!["mine.txt".to_string()]);
    assert_eq!(
        std::fs::read_to_string(sb.file("D/mine.txt")).unwrap(),
        "the user's"
    );
}

/// `{rank}` in TRACE: each rank replays its own trace (4 of different sizes); each rank's
/// row holds exactly its trace's ops and bytes, the total their sum. A rank whose trace is
/// missing refuses the whole command in one line naming the rank and the path (exit 2), and
/// no rank created anything.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn each_rank_replays_its_own_trace_and_a_missing_one_refuses_the_command() {
    let sb = Sandbox::new();
    for rank in 0..NP {
        make_trace(
            &sb,
            &format!("app.{rank:05}.csv"),
            "write",
            8 * (rank + 1),
            1,
        );
    }
    std::fs::create_dir(sb.file("D")).unwrap();
    std::fs::write(sb.file("D/mine.txt"), "the user's").unwrap();
    let (code, r, err) = run_result(&sb, &["replay", "app.{rank}.csv", "--dir", "D"]);
    assert_eq!(code, Some(0), "{err}");
    let (mut all_ops, mut all_bytes) = (0, 0);
    for rank in 0..NP {
        let (ops, bytes) = trace_bytes(&sb, &format!("app.{rank:05}.csv"));
        assert_eq!(ops, 8 * (rank + 1));
        let row = &r["ranks"][rank as usize];
        assert_eq!((u(&row["ops"]), u(&row["bytes"])), (ops, bytes), "{row}");
        all_ops += ops;
        all_bytes += bytes;
    }
    assert_eq!(u(&r["total"]["write_ops"]), all_ops);
    assert_eq!(u(&r["total"]["bytes"]), all_bytes);
    assert_eq!(r["replay"]["trace"], "app.{rank}.csv");
    assert_eq!(names(&sb.file("D")), vec!["mine.txt".to_string()]);

    std::fs::remove_file(sb.file("app.00003.csv")).unwrap();
    let before = sb.listing();
    let line = mpi_refused_in_one_line(&mpirun(&sb, &["replay", "app.{rank}.csv", "--dir", "D"]));
    assert!(
        line.contains("rank 3 ") && line.contains("app.00003.csv"),
        "{line}"
    );
    assert_eq!(sb.listing(), before);
    assert_eq!(names(&sb.file("D")), vec!["mine.txt".to_string()]);
}

/// What a replay on ranks does not take (each rank replays its own calls on its own files)
/// is refused in one line (exit 2), with the reason, before any rank creates anything.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn options_a_replay_on_ranks_does_not_take_are_refused_in_one_line() {
    let sb = Sandbox::new();
    make_trace(&sb, "t.csv", "write", 8, 1);
    std::fs::create_dir(sb.file("D")).unwrap();
    let before = sb.listing();
    for (extra, why) in [
        ("--shared-file", "scratch files of its own"),
        ("--reorder-ranks", "on its own files"),
    ] {
        let mut args = vec!["replay", "t.csv", "--dir", "D"];
        args.extend(common::words(extra));
        let line = mpi_refused_in_one_line(&mpirun(&sb, &args));
        assert!(
            line.contains("replay on MPI ranks does not take")
                && line.contains(extra)
                && line.contains(why),
            "{extra}: {line}"
        );
        assert_eq!(sb.listing(), before, "{extra}");
        assert!(names(&sb.file("D")).is_empty(), "{extra}");
    }
    // A --dir that is not a directory: one line, naming it.
    let line = mpi_refused_in_one_line(&mpirun(&sb, &["replay", "t.csv", "--dir", "nosuch"]));
    assert!(line.contains("--dir nosuch"), "{line}");
    assert_eq!(sb.listing(), before);
}

/// The records of a CSV trace file (its lines after the header).
fn records(sb: &Sandbox, file: &str) -> u64 {
    let text = std::fs::read_to_string(sb.file(file))
        .unwrap_or_else(|e| panic!("no trace file {file}: {e}"));
    text.lines().count() as u64 - 1
}

/// `--trace t.csv` on 4 ranks: each rank traces its own replay threads into
/// `t.rank-0000r.csv`, which holds exactly one record per call the rank replayed (its row's
/// ops, the input trace's reads and writes); the Result's `trace` probe sums them and lists
/// each rank's file and count; D is left empty.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn each_rank_traces_its_replay_into_its_own_file() {
    let sb = Sandbox::new();
    make_trace(&sb, "in.csv", "randrw", 48, 2);
    let (calls, _) = trace_bytes(&sb, "in.csv");
    assert_eq!(calls, 96);
    std::fs::create_dir(sb.file("D")).unwrap();
    let (code, r, err) = run_result(&sb, &common::words("replay in.csv --dir D --trace t.csv"));
    assert_eq!(code, Some(0), "{err}");
    let probe = &r["probes"]["trace"];
    assert_eq!(probe["file"], "t.rank-*.csv", "{probe}");
    assert_eq!(probe["format"], "csv");
    let per_rank = probe["ranks"].as_array().unwrap();
    assert_eq!(per_rank.len(), NP as usize, "{probe}");
    let mut sum = 0;
    for rank in 0..NP {
        let file = format!("t.rank-{rank:05}.csv");
        let n = records(&sb, &file);
        assert_eq!(n, calls, "{file}");
        assert_eq!(n, u(&r["ranks"][rank as usize]["ops"]), "{file}");
        let entry = &per_rank[rank as usize];
        assert_eq!(u(&entry["rank"]), rank);
        assert_eq!(entry["file"], file.as_str());
        assert_eq!(u(&entry["records"]), n);
        assert_eq!(u(&entry["dropped_records"]), 0);
        sum += n;
    }
    assert_eq!(u(&probe["records"]), sum);
    assert_eq!(sum, u(&r["total"]["ops"]));
    assert!(!sb.file("t.csv").exists());
    assert!(
        names(&sb.file("D")).is_empty(),
        "{:?}",
        names(&sb.file("D"))
    );
}

/// `--iostat` on 4 ranks of one host: the lowest rank (0) samples the devices under its
/// directory once for the host; `distributed.host_devices` has that one entry, the `iostat`
/// probe is its samples, and the note names the host. `--progress always` and
/// `--status-interval` are taken and stay on rank 0 (its status lines on stderr), as a
/// run's. A rate-limited replay stopped by `--time 2s`, so there are samples.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn iostat_on_ranks_samples_the_host_once_and_progress_stays_on_rank_0() {
    let sb = Sandbox::new();
    make_trace(&sb, "t.csv", "write", 256, 1);
    std::fs::create_dir(sb.file("D")).unwrap();
    let (code, r, err) = run_result(
        &sb,
        &common::words(
            "replay t.csv --dir D --rate-iops 50 --time 2s --iostat 500ms --progress always --status-interval 500ms",
        ),
    );
    assert_eq!(code, Some(0), "{err}");
    let hosts = r["distributed"]["host_devices"].as_array().unwrap();
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    assert_eq!(u(&hosts[0]["rank"]), 0);
    assert_eq!(hosts[0]["host"], r["hosts"][0]);
    let samples = hosts[0]["iostat"]["samples"].as_array().unwrap();
    // Samples of the device under D (a file system without one, tmpfs: of busy devices).
    let devices = hosts[0]["iostat"]["devices"].as_array().unwrap();
    assert!(devices.is_empty() || !samples.is_empty(), "{}", hosts[0]);
    assert_eq!(r["probes"]["iostat"], hosts[0]["iostat"]);
    let notes: Vec<&str> = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("iostat: devices sampled once per host on 1 host(s)")),
        "{notes:?}"
    );
    // --time stopped every rank; what each did is counted.
    for row in r["ranks"].as_array().unwrap() {
        assert!(u(&row["ops"]) > 0 && u(&row["ops"]) < 256, "{row}");
    }
    assert!(err.contains("[running]"), "{err}");
    assert!(names(&sb.file("D")).is_empty());
}

/// The stonewall section of a Result: every rank's row bytes and ops sum exactly to its
/// figures and to the total.
fn check_stonewall_sums(r: &Value) -> &Value {
    let wall = &r["distributed"]["stonewall"];
    let rows = r["ranks"].as_array().unwrap();
    let bytes: u64 = rows.iter().map(|row| u(&row["bytes"])).sum();
    let ops: u64 = rows.iter().map(|row| u(&row["ops"])).sum();
    assert_eq!(u(&wall["bytes"]), bytes, "{wall}");
    assert_eq!(u(&wall["ops"]), ops, "{wall}");
    assert_eq!(u(&r["total"]["bytes"]), bytes);
    let least = rows.iter().map(|row| u(&row["bytes"])).min().unwrap();
    let most = rows.iter().map(|row| u(&row["bytes"])).max().unwrap();
    assert_eq!(
        (u(&wall["min_rank_bytes"]), u(&wall["max_rank_bytes"])),
        (least, most)
    );
    wall
}

/// `--stonewall first` with a trace per rank, rank 0's 20 calls and the others' 2000 at 200
/// calls/s (10 s of replay): rank 0 ends first and calls the wall, the others are stopped
/// early (fewer calls than their traces), the stonewall section's per-rank bytes sum to its
/// total. `--stonewall 1s` with `--time 10s`: every rank is stopped at about 1 s.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn the_stonewall_stops_every_rank_replay() {
    let sb = Sandbox::new();
    for rank in 0..NP {
        let count = if rank == 0 { 20 } else { 2000 };
        make_trace(&sb, &format!("app.{rank:05}.csv"), "write", count, 1);
    }
    std::fs::create_dir(sb.file("D")).unwrap();
    let t0 = std::time::Instant::now();
    let (code, r, err) = run_result(
        &sb,
        &common::words("replay app.{rank}.csv --dir D --rate-iops 200 --stonewall first"),
    );
    assert!(t0.elapsed().as_secs_f64() < 8.0, "{err}");
    assert_eq!(code, Some(0), "{err}");
    let wall = check_stonewall_sums(&r);
    assert_eq!(wall["mode"], "first_finish", "{wall}");
    assert_eq!(u(&wall["called_by_rank"]), 0, "{wall}");
    let rows = r["ranks"].as_array().unwrap();
    assert_eq!(u(&rows[0]["ops"]), 20, "{}", rows[0]);
    let wall_s = wall["wall_s"].as_f64().unwrap();
    assert!(
        (wall_s - rows[0]["end_s"].as_f64().unwrap()).abs() < 1e-9,
        "{wall}"
    );
    for row in &rows[1..] {
        assert!(u(&row["ops"]) < 2000, "not stopped early: {row}");
        assert_eq!(row["status"], "complete", "{row}");
        assert!(row["end_s"].as_f64().unwrap() < 8.0, "{row}");
    }
    assert!(names(&sb.file("D")).is_empty());

    let t0 = std::time::Instant::now();
    let (code, r, err) = run_result(
        &sb,
        &common::words("replay app.00001.csv --dir D --rate-iops 200 --time 10s --stonewall 1s"),
    );
    assert!(t0.elapsed().as_secs_f64() < 8.0, "{err}");
    assert_eq!(code, Some(0), "{err}");
    let wall = check_stonewall_sums(&r);
    assert_eq!(wall["mode"], "time", "{wall}");
    assert_eq!(wall["wall_s"].as_f64(), Some(1.0));
    assert!(wall["called_by_rank"].is_null(), "{wall}");
    for row in r["ranks"].as_array().unwrap() {
        let end = row["end_s"].as_f64().unwrap();
        // Stopped at the wall: after half of it (not at the start), long before --time.
        assert!(end > 0.5 && end < 8.0, "{row}");
        assert!(u(&row["ops"]) > 0 && u(&row["ops"]) < 2000, "{row}");
    }
    assert!(names(&sb.file("D")).is_empty());
}

/// Rank 2's storage answers one of its replayed writes with EIO (faultfs bound on its
/// directory): the run fails (exit 1), `failures[]` names rank 2 and its host, the other
/// ranks' rows are complete, and no rank hangs.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_fuse)),
    ignore = "SKIPPED: needs mpirun, root and /dev/fuse"
)]
fn a_write_failing_on_one_rank_fails_the_replay_naming_the_rank() {
    use faultfs::{Fault, FaultFs, Op, When};
    let sb = Sandbox::new();
    make_trace(&sb, "t.csv", "write", 16, 1);
    std::fs::create_dir(sb.file("D")).unwrap();
    let fs = FaultFs::mount().unwrap_or_else(|why| common::cannot(&format!("faultfs: {why}")));
    // The 5th 4 KiB write (the scratch file is filled in larger writes before the start).
    fs.ctl().add_sized(
        Op::Write,
        When::Nth(5),
        Fault::Error(libc::EIO),
        None,
        Some(4096),
    );
    let bound = fs.bind_on(&sb.file("D/rank-00002"));
    let (code, r, err) = run_result(&sb, &common::words("replay t.csv --dir D"));
    assert!(fs.ctl().injected.pop().is_some(), "the fault fired: {err}");
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(r["status"], "failed");
    let failures = r["failures"].as_array().unwrap();
    assert!(!failures.is_empty(), "{r}");
    let msg = failures[0]["message"].as_str().unwrap();
    let host = r["ranks"][2]["host"].as_str().unwrap();
    assert!(msg.starts_with(&format!("rank 2 on {host}:")), "{msg}");
    assert!(msg.contains("Input/output error"), "{msg}");
    assert_eq!(r["ranks"][2]["status"], "failed");
    for rank in [0, 1, 3] {
        assert_eq!(r["ranks"][rank]["status"], "complete", "{}", r["ranks"]);
    }
    // The scratch file on the mount is removed; the bound directory is the user's.
    assert_eq!(fs.listing(), Vec::<String>::new());
    drop(bound);
    assert_eq!(names(&sb.file("D")), vec!["rank-00002".to_string()]);
}

/// `fsbench trace` under mpirun: each rank captures its own command (which inherits the
/// environment: here its rank from mpirun) into its own file, `{rank}` in -o replaced by its
/// 5-digit rank, or without it `.rNNNNN` inserted before the extension (and the line says so);
/// rank 0 prints one line per rank with its file and record count; every file parses with
/// `fsbench trace --analyze` and holds that rank's writes. `--analyze` under mpirun is refused
/// in one line.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_strace)),
    ignore = "SKIPPED: needs mpirun and strace"
)]
fn each_rank_captures_its_own_command_into_its_own_trace() {
    let sb = Sandbox::new();
    // Rank r writes (r + 1) x 4 KiB into w.r (its rank from the environment mpirun set).
    let script = "n=$((OMPI_COMM_WORLD_RANK + 1)); dd if=/dev/zero of=w.$OMPI_COMM_WORLD_RANK bs=4096 count=$n 2>/dev/null";
    for (out, inserted) in [("app.{rank}.csv", false), ("cap.csv", true)] {
        let o = mpirun(&sb, &["trace", "-o", out, "--", "sh", "-c", script]);
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("rank ")).collect();
        assert_eq!(lines.len(), NP as usize, "{stdout}");
        for rank in 0..NP {
            let file = if inserted {
                format!("cap.r{rank:05}.csv")
            } else {
                format!("app.{rank:05}.csv")
            };
            let line = lines[rank as usize];
            assert!(line.starts_with(&format!("rank {rank} on ")), "{line}");
            assert!(line.contains(&file), "{line}");
            assert_eq!(line.contains("inserted before the extension"), inserted);
            let text = std::fs::read_to_string(sb.file(&file)).unwrap();
            let records = text.lines().count() as u64 - 1;
            assert!(line.contains(&format!("({records} records)")), "{line}");
            let written: u64 = text
                .lines()
                .skip(1)
                .map(|r| r.split(',').collect::<Vec<_>>())
                .filter(|f| f[2] == "write" && f[3].ends_with(&format!("w.{rank}")))
                .map(|f| f[8].parse::<u64>().unwrap())
                .sum();
            assert_eq!(written, 4096 * (rank + 1), "{file}: {text}");
            sb.cmd(&["trace", "--analyze", &file]).assert().success();
        }
    }
    let line = mpi_refused_in_one_line(&mpirun(&sb, &["trace", "--analyze", "app.00000.csv"]));
    assert!(
        line.contains("trace --analyze does not run on MPI ranks"),
        "{line}"
    );
}

/// `replay --verify` on the ranks: every rank stamps its replayed writes and checks its
/// replayed reads of them, and rank 0's Result counts every rank's checks.
#[test]
fn a_verifying_replay_on_ranks_checks_every_ranks_reads() {
    let sb = Sandbox::new();
    const WRITES: u64 = 6;
    let mut rows = String::from("id,thread,op,file,offset,len,start_ns,end_ns,result\n");
    for i in 0..2 * WRITES {
        let op = if i < WRITES { "write" } else { "read" };
        let off = (i % WRITES) * 4096;
        rows.push_str(&format!("{i},1,{op},/data/a,{off},4096,{i},{i},4096\n"));
    }
    std::fs::write(sb.file("v.csv"), rows).unwrap();
    std::fs::create_dir(sb.file("D")).unwrap();
    let (code, r, err) = run_result(&sb, &common::words("replay v.csv --dir D --verify"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["status"], "complete", "{err}");
    let v = &r["verify"];
    assert_eq!(u(&v["blocks_checked"]), NP * WRITES, "{v}");
    assert_eq!(u(&v["blocks_intact"]), NP * WRITES, "{v}");
    assert_eq!(u(&v["bytes_checked"]), NP * WRITES * 4096, "{v}");
}
