//! `fsbench io500` on MPI ranks: the real binary under `mpirun --allow-run-as-root
//! --oversubscribe -np 4`. Every phase is there with every rank's work in its count
//! (configured amounts small enough that no stonewall stops them, so each count is exactly
//! four ranks' shares), ior-easy a file per rank, ior-hard one shared file of 47,008-byte
//! transfers from every rank, a bad flag one line from rank 0, and a killed rank named in the
//! Result. Run with `cargo test --features mpi --test mpi_io500 -- --test-threads=1`.
#![cfg(feature = "mpi")]

mod common;

use common::{mpi_refused_in_one_line, mpirun, mpirun_json, u, Sandbox};
use serde_json::Value;
use std::time::{Duration, Instant};

const NP: u64 = 4;
const HARD_TRANSFER: u64 = 47_008;

/// Per rank: ior-easy 4 MiB in 1 MiB transfers, ior-hard 30 segments, 120 mdtest-easy and
/// 60 mdtest-hard files.
const SMALL: &str = "[ior-easy]\ntransferSize = 1m\nblockSize = 4m\n[ior-hard]\nsegmentCount = 30\n[mdtest-easy]\nn = 120\n[mdtest-hard]\nn = 60\n";

fn sandbox(config: &str) -> Sandbox {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("data")).unwrap();
    std::fs::write(sb.file("io500.ini"), config).unwrap();
    sb
}

fn phase<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["io500"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name}: {}", r["io500"]["phases"]))
}

fn data_listing(sb: &Sandbox) -> Vec<String> {
    std::fs::read_dir(sb.file("data"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The twelve phases in IO500's order on 4 ranks: each write's count is every rank's share
/// (4 x 4 MiB, 4 x 30 transfers of 47,008 bytes, 4 x 120 and 4 x 60 files), each read, stat
/// and delete works on exactly that; the kept files are a file per rank of 4 MiB and one
/// shared ior-hard file of 30 x 4 x 47,008 bytes; the score is over all twelve.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn every_phase_counts_every_ranks_work() {
    let sb = sandbox(SMALL);
    let r = mpirun_json(
        &sb,
        NP,
        &common::words("io500 --config io500.ini --stonewall 30 data --keep"),
    );
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    let names: Vec<&str> = r["io500"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "ior-easy-write",
            "mdtest-easy-write",
            "ior-hard-write",
            "mdtest-hard-write",
            "find",
            "ior-easy-read",
            "mdtest-easy-stat",
            "ior-hard-read",
            "mdtest-hard-stat",
            "mdtest-easy-delete",
            "mdtest-hard-read",
            "mdtest-hard-delete",
        ]
    );
    let easy = (NP * 4) << 20;
    let hard = NP * 30 * HARD_TRANSFER;
    for (name, ops, bytes) in [
        ("ior-easy-write", NP * 4, easy),
        ("ior-easy-read", NP * 4, easy),
        ("ior-hard-write", NP * 30, hard),
        ("ior-hard-read", NP * 30, hard),
        ("mdtest-easy-write", NP * 120, 0),
        ("mdtest-easy-stat", NP * 120, 0),
        ("mdtest-easy-delete", NP * 120, 0),
        ("mdtest-hard-write", NP * 60, NP * 60 * 3901),
        ("mdtest-hard-stat", NP * 60, 0),
        ("mdtest-hard-read", NP * 60, NP * 60 * 3901),
        ("mdtest-hard-delete", NP * 60, 0),
    ] {
        let p = phase(&r, name);
        assert_eq!(u(&p["ops"]), ops, "{name}: {p}");
        assert_eq!(u(&p["bytes"]), bytes, "{name}: {p}");
        assert!(p["value"].as_f64().unwrap() > 0.0, "{name}: {p}");
        assert_eq!(p["stonewalled"], false, "{name}: {p}");
    }
    // find saw every rank's mdtest-hard files (and matched some of them).
    assert!(u(&r["io500"]["find_total"]) >= NP * (120 + 60));
    assert!(r["io500"]["score"].as_f64().unwrap() > 0.0);
    assert!(r["notes"].to_string().contains("4 ranks on 1 host"));
    // Kept: ior-easy a file per rank, ior-hard one shared file of every rank's segments.
    let tops = data_listing(&sb);
    assert_eq!(tops.len(), 1, "{tops:?}");
    let top = sb.file("data").join(&tops[0]);
    let shared = std::fs::metadata(top.join("ior-hard/IOR_file")).unwrap();
    assert_eq!(shared.len(), 30 * NP * HARD_TRANSFER);
    for rank in 0..NP {
        let f = top.join(format!(
            "ior-easy/ior_file_easy.d/rank-{rank:05}/ior_file_easy"
        ));
        let m = std::fs::metadata(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(m.len(), 4 << 20, "{}", f.display());
    }
    std::fs::remove_dir_all(&top).unwrap();
}

/// Entries below `dir` (not itself), and those find's expression matches: a regular file
/// of 3,901 bytes with `01` in its name, modified after `stamp` (a walk by std::fs).
fn walk_count(dir: &std::path::Path, stamp: std::time::SystemTime) -> (u64, u64) {
    let (mut looked, mut matched) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        looked += 1;
        if m.is_dir() {
            let (l, n) = walk_count(&e.path(), stamp);
            looked += l;
            matched += n;
        } else if m.is_file()
            && m.len() == 3901
            && e.file_name().to_string_lossy().contains("01")
            && m.modified().unwrap() > stamp
        {
            matched += 1;
        }
    }
    (looked, matched)
}

/// find on 4 ranks: every rank walks a share of the tree (each its part of every
/// directory's entries, none idle), and together they look at and match exactly what one
/// walk of the same tree does. The tree at find time is the kept tree (the delete phases
/// remove the mdtest files, not their directories) and the mdtest files: 4 x 30 empty
/// mdtest-easy files and 4 x 120 mdtest-hard files of 3,901 bytes, named
/// `file.mdtest.RANK.I`, I from 0 (so `01` is in I = 101 of each rank).
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn find_is_walked_by_every_rank_and_counts_one_walks_entries() {
    let (easy_n, hard_n) = (30u64, 120u64);
    let sb = sandbox(&format!(
        "[ior-easy]\ntransferSize = 1m\nblockSize = 2m\n[ior-hard]\nsegmentCount = 10\n[mdtest-easy]\nn = {easy_n}\n[mdtest-hard]\nn = {hard_n}\n"
    ));
    let r = mpirun_json(
        &sb,
        NP,
        &common::words("io500 --config io500.ini --stonewall 30 data --keep"),
    );
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    let tops = data_listing(&sb);
    let top = sb.file("data").join(&tops[0]);
    let stamp = std::fs::metadata(top.join("timestamp"))
        .unwrap()
        .modified()
        .unwrap();
    let (kept_looked, kept_matched) = walk_count(&top, stamp);
    let hard_names_01 = (0..NP)
        .flat_map(|rank| (0..hard_n).map(move |i| format!("file.mdtest.{rank}.{i}")))
        .filter(|n| n.contains("01"))
        .count() as u64;
    let one_walk = (
        kept_looked + NP * (easy_n + hard_n),
        kept_matched + hard_names_01,
    );
    let io = &r["io500"];
    assert_eq!(
        (u(&io["find_total"]), u(&io["find_matched"])),
        one_walk,
        "{io}"
    );
    assert_eq!(one_walk.1, NP, "one file of each rank's matches");
    // Every rank did its part; the parts add up to the whole.
    let parts = io["find_ranks"].as_array().expect("find_ranks on ranks");
    assert_eq!(parts.len() as u64, NP, "{io}");
    let mut sum = (0, 0);
    for (k, p) in parts.iter().enumerate() {
        assert_eq!(u(&p["rank"]), k as u64);
        assert!(
            u(&p["looked"]) >= one_walk.0 / NP / 2,
            "rank {k} looked at too few: {parts:?}"
        );
        sum.0 += u(&p["looked"]);
        sum.1 += u(&p["matched"]);
    }
    assert_eq!(sum, one_walk, "{parts:?}");
    // The phase's time is the slowest rank's (from the barrier), its rate every entry over it.
    let f = phase(&r, "find");
    assert_eq!(u(&f["ops"]), one_walk.0);
    let slowest = parts
        .iter()
        .map(|p| p["time_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let t = f["time_s"].as_f64().unwrap();
    assert!(
        t >= slowest && t > 0.0,
        "phase {t} s, slowest rank {slowest} s"
    );
    let rate = one_walk.0 as f64 / t / 1e3;
    let text = common::mpirun(
        &sb,
        NP,
        &common::words("io500 --config io500.ini --stonewall 30 data"),
    );
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(
        out.contains(&format!("find matched {} of", one_walk.1)),
        "{out}"
    );
    assert!(out.contains(" on 4 ranks (each looked at "), "{out}");
    assert!(
        (f["value"].as_f64().unwrap() - rate).abs() <= rate * 1e-6,
        "{f}"
    );
    std::fs::remove_dir_all(&top).unwrap();
}

/// Without --keep nothing is left, and a bad flag or value is one line from rank 0 under
/// mpirun (exit 2), with nothing made.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn nothing_is_left_and_bad_flags_are_one_line() {
    let sb = sandbox(SMALL);
    let r = mpirun_json(
        &sb,
        NP,
        &common::words("io500 --config io500.ini --stonewall 30 data"),
    );
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    assert!(data_listing(&sb).is_empty(), "{:?}", data_listing(&sb));
    for (line, want) in [
        ("io500 --nosuch data", "--nosuch"),
        ("io500 --stonewall 0 data", "--stonewall 0"),
        ("io500 --config nosuch.ini data", "nosuch.ini"),
    ] {
        let o = mpirun(&sb, NP, &common::words(line));
        let msg = mpi_refused_in_one_line(&o);
        assert!(msg.contains(want), "{line}: {msg}");
        assert!(
            data_listing(&sb).is_empty(),
            "{line}: {:?}",
            data_listing(&sb)
        );
    }
}

/// The ranks of `mpirun_pid` as (rank, pid).
fn ranks_of(mpirun_pid: u32) -> Vec<(u32, u32)> {
    let t0 = Instant::now();
    loop {
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(") ")
                .and_then(|(_, r)| r.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if ppid != Some(mpirun_pid) {
                continue;
            }
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let rank = env
                .split(|&b| b == 0)
                .filter_map(|v| std::str::from_utf8(v).ok())
                .find_map(|v| v.strip_prefix("OMPI_COMM_WORLD_RANK="))
                .and_then(|r| r.parse().ok());
            if let Some(rank) = rank {
                found.push((rank, pid));
            }
        }
        if found.len() == NP as usize {
            return found;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "ranks not found");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A rank killed during ior-easy-write: rank 0 writes a failed Result naming the lost rank,
/// and the next run in the same directory removes what the killed run left, and leaves
/// nothing.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_killed_rank_is_named_in_the_result() {
    // Far more than the stonewall lets the ranks write: ior-easy-write runs its 20 s.
    let sb = sandbox("[ior-easy]\ntransferSize = 1m\nblockSize = 64g\n");
    let mut run = std::process::Command::new("mpirun")
        .current_dir(sb.path())
        .args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(NP.to_string())
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .args(common::words(
            "io500 --config io500.ini --stonewall 20 data --output result.json",
        ))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| common::cannot(&format!("mpirun does not start: {e}")));
    let ranks = ranks_of(run.id());
    // Every rank is writing its ior-easy file.
    let t0 = Instant::now();
    loop {
        let written = data_listing(&sb).first().is_some_and(|top| {
            (0..NP).all(|k| {
                let f = sb.file("data").join(top).join(format!(
                    "ior-easy/ior_file_easy.d/rank-{k:05}/ior_file_easy"
                ));
                std::fs::metadata(f).is_ok_and(|m| m.len() > 0)
            })
        });
        if written {
            break;
        }
        assert!(run.try_wait().unwrap().is_none(), "the run ended early");
        assert!(t0.elapsed() < Duration::from_secs(60), "never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, pid) = *ranks.iter().find(|(r, _)| *r == 2).unwrap();
    // SAFETY: killing a rank this test's mpirun started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let t1 = Instant::now();
    let st = loop {
        if let Some(st) = run.try_wait().unwrap() {
            break st;
        }
        assert!(t1.elapsed() < Duration::from_secs(60), "mpirun lives on");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!st.success());
    let text = std::fs::read_to_string(sb.file("result.json"))
        .expect("rank 0 wrote no Result after rank 2 was lost");
    let r: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["status"], "failed", "{text}");
    let failures = r["failures"].to_string();
    assert!(
        failures.contains("ior-easy-write")
            && failures.contains("rank 2 ")
            && failures.contains("lost"),
        "no failure names the lost rank: {failures}"
    );
    // mpirun may end before its other ranks are gone: the next run starts after them.
    for (_, pid) in &ranks {
        while std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
        {
            assert!(
                t1.elapsed() < Duration::from_secs(60),
                "rank {pid} lives on"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    std::fs::write(sb.file("io500.ini"), SMALL).unwrap();
    std::fs::remove_file(sb.file("result.json")).unwrap();
    let r = mpirun_json(
        &sb,
        NP,
        &common::words("io500 --config io500.ini --stonewall 30 data"),
    );
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    assert!(data_listing(&sb).is_empty(), "{:?}", data_listing(&sb));
}
