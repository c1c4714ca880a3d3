//! `fsbench mdtest` on MPI ranks: the real binary under `mpirun --allow-run-as-root
//! --oversubscribe -np 4` on this machine. Every phase's figures are checked against what
//! the ranks did: the merged count is every rank's, each rank's part is its own, `-u` gives
//! a tree per rank, `-N` moves the stat, read and removal to other ranks' items, `-W` stops
//! every rank's creation, a killed rank is named and its run's directory goes with the next
//! run, and a bad flag is one line. Run with
//! `cargo test --features mpi --test mpi_mdtest -- --test-threads=1`.
#![cfg(feature = "mpi")]

mod common;

use common::{mpi_refused_in_one_line, mpirun, mpirun_json, u, Sandbox};
use serde_json::Value;
use std::time::{Duration, Instant};

const NP: u64 = 4;

/// The summary row of phase `op`.
fn summary<'a>(r: &'a Value, op: &str) -> &'a Value {
    r["mdtest"]["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["op"] == op)
        .unwrap_or_else(|| panic!("no {op} in {}", r["mdtest"]["summary"]))
}

/// Each rank's part of phase `op` (iteration 1), in rank order.
fn rank_parts<'a>(r: &'a Value, op: &str) -> Vec<&'a Value> {
    let mut v: Vec<&Value> = r["mdtest"]["rank_phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["op"] == op && p["run"] == 1)
        .collect();
    v.sort_by_key(|p| u(&p["rank"]));
    v
}

fn sandbox_listing_is_empty(sb: &Sandbox) {
    let left: Vec<String> = sb
        .listing()
        .into_iter()
        .filter(|n| n != "result.json")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `-n 50 -F` on 4 ranks: 200 creates, stats, reads and removes in the merged Result, 50
/// of each per rank; every rank's part lies within the phase's wall time, and the phase's
/// rate is all items over that wall time. The ranks share one tree (rank 0 makes it);
/// nothing is left.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn every_rank_does_its_items_and_the_result_counts_them_all() {
    let sb = Sandbox::new();
    let r = mpirun_json(&sb, NP, &common::words("mdtest -n 50 -F -d ."));
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    assert_eq!(u(&r["mdtest"]["ranks"]), NP);
    for op in ["file_create", "file_stat", "file_read", "file_remove"] {
        let s = summary(&r, op);
        assert_eq!(u(&s["ops"]), 200, "{op}: {s}");
        let parts = rank_parts(&r, op);
        assert_eq!(parts.len(), NP as usize, "{op}");
        for (k, p) in parts.iter().enumerate() {
            assert_eq!(u(&p["rank"]), k as u64);
            assert_eq!(u(&p["items"]), 50, "{op}: {p}");
            assert_eq!(u(&p["items_of_rank"]), k as u64, "{op}: {p}");
        }
        // The rate is every rank's items over the first start to the last end.
        let first = parts
            .iter()
            .map(|p| p["start_s"].as_f64().unwrap())
            .fold(f64::INFINITY, f64::min);
        let last = parts
            .iter()
            .map(|p| p["end_s"].as_f64().unwrap())
            .fold(0.0, f64::max);
        let rate = s["max"].as_f64().unwrap();
        let want = 200.0 / (last - first);
        assert!(
            (rate - want).abs() <= want * 1e-6,
            "{op}: rate {rate}, 200 items over {} s",
            last - first
        );
    }
    // One shared tree: rank 0 made and removed it.
    assert_eq!(u(&summary(&r, "tree_create")["ops"]), 1);
    let rows = r["ranks"].as_array().unwrap();
    assert_eq!(rows.len(), NP as usize);
    for (k, row) in rows.iter().enumerate() {
        let tree = if k == 0 { 2 } else { 0 };
        assert_eq!(u(&row["ops"]), 4 * 50 + tree, "rank {k}: {row}");
    }
    sandbox_listing_is_empty(&sb);
}

/// `-u`: a tree per rank, `mdtest_tree.R` made by rank R (seen with `--keep`: 4 rank trees
/// in the test directory, each with its rank's 10 files).
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn unique_directories_give_each_rank_its_own_tree() {
    let sb = Sandbox::new();
    let r = mpirun_json(&sb, NP, &common::words("mdtest -n 10 -F -C -u -d . --keep"));
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    assert_eq!(u(&summary(&r, "tree_create")["ops"]), NP);
    let tops: Vec<_> = std::fs::read_dir(sb.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("fsbench-mdtest-")
        })
        .collect();
    assert_eq!(tops.len(), 1, "one top directory for every rank");
    let test_dir = tops[0].path().join("test-dir.0-0");
    let mut trees: Vec<String> = std::fs::read_dir(&test_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    trees.sort();
    assert_eq!(
        trees,
        [
            "mdtest_tree.0.0",
            "mdtest_tree.1.0",
            "mdtest_tree.2.0",
            "mdtest_tree.3.0"
        ]
    );
    for k in 0..NP {
        let tree = test_dir.join(format!("mdtest_tree.{k}.0"));
        let files: Vec<String> = std::fs::read_dir(&tree)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files.len(), 10, "{tree:?}: {files:?}");
        assert!(
            files
                .iter()
                .all(|f| f.starts_with(&format!("file.mdtest.{k}."))),
            "{files:?}"
        );
    }
    std::fs::remove_dir_all(tops[0].path()).unwrap();
}

/// `-N 1` with a tree per rank: each rank stats the items of the next rank, reads those of
/// the one after and removes those three places on, in their trees (with -N ignored each
/// rank's part would name itself). Every one of those operations succeeds only when the
/// shifted rank's tree and item names agree, and nothing is left.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn the_rank_shift_works_on_other_ranks_items() {
    let sb = Sandbox::new();
    let r = mpirun_json(&sb, NP, &common::words("mdtest -n 20 -F -u -N 1 -d ."));
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    for (op, shift) in [
        ("file_create", 0),
        ("file_stat", 1),
        ("file_read", 2),
        ("file_remove", 3),
    ] {
        assert_eq!(u(&summary(&r, op)["ops"]), 80, "{op}");
        for (k, p) in rank_parts(&r, op).iter().enumerate() {
            assert_eq!(u(&p["items_of_rank"]), (k as u64 + shift) % NP, "{op}: {p}");
            assert_eq!(u(&p["items"]), 20, "{op}: {p}");
        }
    }
    sandbox_listing_is_empty(&sb);
}

/// `-N 1` on a shared tree of directories: each rank stats and renames the directories of
/// the next rank in place (mdtest's rename chain) and removes those three ranks on, which
/// must find them under their names again.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn the_rank_shift_renames_and_removes_other_ranks_directories() {
    let sb = Sandbox::new();
    let r = mpirun_json(&sb, NP, &common::words("mdtest -n 12 -D -N 1 -d ."));
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    for op in ["dir_create", "dir_stat", "dir_rename", "dir_remove"] {
        assert_eq!(u(&summary(&r, op)["ops"]), 48, "{op}");
    }
    for (k, p) in rank_parts(&r, "dir_rename").iter().enumerate() {
        assert_eq!(u(&p["items_of_rank"]), (k as u64 + 1) % NP, "{p}");
    }
    sandbox_listing_is_empty(&sb);
}

/// `-W 1` on 4 ranks with far more items than a second allows: every rank stops creating
/// at the stonewall, the Result says how many each made, and the later phases work on
/// exactly those (the stat and removal counts equal the creation's, per rank).
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn the_stonewall_stops_every_ranks_creation_and_the_later_phases_use_what_each_made() {
    let sb = Sandbox::new();
    let r = mpirun_json(
        &sb,
        NP,
        &common::words("mdtest -n 1000000 -F -C -T -r -W 1 -d ."),
    );
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    let created = rank_parts(&r, "file_create");
    let stated = rank_parts(&r, "file_stat");
    let removed = rank_parts(&r, "file_remove");
    let notes = r["notes"].to_string();
    let mut total = 0;
    for k in 0..NP as usize {
        let made = u(&created[k]["items"]);
        assert!(
            created[k]["stonewalled"].as_bool().unwrap(),
            "{}",
            created[k]
        );
        assert!(made > 0 && made < 1_000_000, "rank {k} made {made}");
        assert!(
            notes.contains(&format!("rank {k} made {made} of 1000000 items")),
            "{notes}"
        );
        assert_eq!(u(&stated[k]["items"]), made, "rank {k}");
        assert_eq!(u(&removed[k]["items"]), made, "rank {k}");
        // Stopped about a second after the start barrier.
        let took = created[k]["end_s"].as_f64().unwrap() - created[k]["start_s"].as_f64().unwrap();
        assert!((0.9..10.0).contains(&took), "rank {k}: {took} s");
        total += made;
    }
    let s = summary(&r, "file_create");
    assert_eq!(u(&s["ops"]), total);
    assert_eq!(u(&s["stonewalled"]), 1);
    assert_eq!(u(&summary(&r, "file_stat")["ops"]), total);
    sandbox_listing_is_empty(&sb);
}

/// `-W 1` with `-N 1` on 4 ranks: every rank stops creating at the stonewall, each having
/// made its own number; the ranks agree on the least, and the shifted stat and read work on
/// exactly that many of another rank's items (which it made), while each rank removes all of
/// its own. Nothing is left.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn the_stonewall_with_the_rank_shift_works_on_the_items_every_rank_made() {
    let sb = Sandbox::new();
    let r = mpirun_json(
        &sb,
        NP,
        &common::words("mdtest -n 1000000 -F -C -T -E -r -W 1 -N 1 -d ."),
    );
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    let created = rank_parts(&r, "file_create");
    let made: Vec<u64> = created.iter().map(|p| u(&p["items"])).collect();
    let least = *made.iter().min().unwrap();
    assert!(least > 0, "{made:?}");
    for k in 0..NP as usize {
        assert!(
            created[k]["stonewalled"].as_bool().unwrap(),
            "{}",
            created[k]
        );
        // mdtest's shift: stat 1 place on, read 2.
        for (op, shift) in [("file_stat", 1), ("file_read", 2)] {
            let p = rank_parts(&r, op)[k];
            assert_eq!(u(&p["items"]), least, "rank {k} {op}: {p} (made {made:?})");
            assert_eq!(u(&p["items_of_rank"]), (k as u64 + shift) % NP, "{p}");
        }
        let p = rank_parts(&r, "file_remove")[k];
        assert_eq!(u(&p["items"]), made[k], "rank {k}: {p}");
        assert_eq!(u(&p["items_of_rank"]), k as u64, "{p}");
    }
    assert_eq!(u(&summary(&r, "file_stat")["ops"]), least * NP);
    sandbox_listing_is_empty(&sb);
}

/// fsbench processes of this run by rank (from OMPI_COMM_WORLD_RANK).
fn ranks_of(mpirun_pid: u32) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    let Ok(children) =
        std::fs::read_to_string(format!("/proc/{mpirun_pid}/task/{mpirun_pid}/children"))
    else {
        return v;
    };
    for pid in children
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
    {
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        for var in env.split(|&b| b == 0) {
            if let Some(r) = var.strip_prefix(b"OMPI_COMM_WORLD_RANK=") {
                if let Ok(r) = String::from_utf8_lossy(r).parse() {
                    v.push((r, pid));
                }
            }
        }
    }
    v
}

/// A long mdtest started in the background; returns once the ranks are creating files.
fn start_creating(sb: &Sandbox) -> std::process::Child {
    let mut run = std::process::Command::new("mpirun")
        .current_dir(sb.path())
        .args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(NP.to_string())
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .args(common::words(
            "mdtest -n 1000000 -F -u -d . --output result.json",
        ))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| common::cannot(&format!("mpirun does not start: {e}")));
    let t0 = Instant::now();
    loop {
        let files = count_files(sb.path());
        if files > 4 * 20 {
            return run;
        }
        assert!(run.try_wait().unwrap().is_none(), "the run ended early");
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the run never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn count_files(dir: &std::path::Path) -> usize {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => n += count_files(&e.path()),
                Ok(_) => n += 1,
                Err(_) => {}
            }
        }
    }
    n
}

fn wait_exit(run: &mut std::process::Child) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(st) = run.try_wait().unwrap() {
            return st;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = run.kill();
            panic!("mpirun hung for 60 s after a rank was killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill_rank(mpirun_pid: u32, rank: u32) -> Vec<(u32, u32)> {
    let ranks = ranks_of(mpirun_pid);
    let (_, pid) = *ranks
        .iter()
        .find(|(r, _)| *r == rank)
        .unwrap_or_else(|| panic!("rank {rank} not found"));
    // SAFETY: killing a rank this test's mpirun started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    ranks
}

/// A rank killed while creating: mpirun ends the others, and rank 0 writes a failed Result
/// that names the lost rank in its failures and its row before it removes the shared top
/// directory (mpirun's SIGKILL may cut that short: the next run removes what is left, and
/// leaves nothing).
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_killed_rank_is_named_in_the_result() {
    let sb = Sandbox::new();
    let mut run = start_creating(&sb);
    let ranks = kill_rank(run.id(), 2);
    let st = wait_exit(&mut run);
    assert!(!st.success());
    let text = std::fs::read_to_string(sb.file("result.json"))
        .expect("rank 0 wrote no Result after rank 2 was lost");
    let r: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["status"], "failed", "{text}");
    let failures = r["failures"].as_array().unwrap();
    assert!(
        failures.iter().any(|f| {
            let m = f["message"].as_str().unwrap_or("");
            m.starts_with("rank 2 ") && m.contains("lost")
        }),
        "no failure names the lost rank: {failures:?}"
    );
    let rows = r["ranks"].as_array().unwrap();
    assert_eq!(rows.len(), NP as usize);
    assert_eq!(rows[2]["status"], "failed");
    assert!(rows[2]["failure"].as_str().unwrap().contains("lost"));
    wait_gone(&ranks);
    std::fs::remove_file(sb.file("result.json")).unwrap();
    let r = mpirun_json(&sb, NP, &common::words("mdtest -n 5 -F -d ."));
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    sandbox_listing_is_empty(&sb);
}

/// Wait until every rank process of a killed run (`ranks`: (rank, pid)) is gone: mpirun may
/// end before them.
fn wait_gone(ranks: &[(u32, u32)]) {
    let t1 = Instant::now();
    for (_, pid) in ranks {
        while std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
        {
            assert!(
                t1.elapsed() < Duration::from_secs(30),
                "rank {pid} lives on"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Rank 0 killed (the maker of the top directory): the run's directory stays, and the next
/// mdtest in the same directory removes it and says so.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn the_next_run_removes_what_a_killed_run_left() {
    let sb = Sandbox::new();
    let mut run = start_creating(&sb);
    let ranks = kill_rank(run.id(), 0);
    wait_exit(&mut run);
    // mpirun may end before its other ranks are gone: the next run starts after them.
    wait_gone(&ranks);
    let left: Vec<String> = sb
        .listing()
        .into_iter()
        .filter(|n| n.starts_with("fsbench-mdtest-"))
        .collect();
    assert_eq!(
        left.len(),
        1,
        "the killed run's directory: {:?}",
        sb.listing()
    );
    let r = mpirun_json(&sb, NP, &common::words("mdtest -n 5 -F -d ."));
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    let notes = r["notes"].to_string();
    assert!(notes.contains("was killed"), "{notes}");
    sandbox_listing_is_empty(&sb);
}

/// A bad flag, a flag mdtest on ranks cannot take, and -N with -W on directories are each refused in one
/// line (rank 0's) with status 2, and nothing is made.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn bad_flags_under_mpirun_are_refused_in_one_line() {
    let sb = Sandbox::new();
    for (line, want) in [
        ("mdtest -n 5 -q -d .", "unknown option -q"),
        ("mdtest -n abc -d .", "whole number"),
        (
            "mdtest -n 5 -D -N 1 -W 5 -d .",
            "-W with -N on MPI ranks works on files only",
        ),
        ("mdtest -n 5 -F -d nosuchdir", "nosuchdir"),
    ] {
        let o = mpirun(&sb, NP, &common::words(line));
        let msg = mpi_refused_in_one_line(&o);
        assert!(msg.contains(want), "{line}: {msg}");
        sandbox_listing_is_empty(&sb);
    }
}
