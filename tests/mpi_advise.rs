//! `fsbench advise DIR --measure` on MPI ranks (issue #16, h-advranks): every measured point
//! runs on every rank at once through the Executor, each rank on a scratch file of its own in
//! DIR/.fsbench-advise.tmp.d/rank-NNNNN, and rank 0 prints the advice once, its figures the
//! aggregate of the one Result per run (stored with `--results`, a row per rank). The real
//! binary under `mpirun --allow-run-as-root --oversubscribe -np 4` on this machine. Run with
//! `cargo test --release --features mpi --test mpi_advise -- --test-threads=1`.
#![cfg(feature = "mpi")]

mod common;

use common::{mpi_refused_in_one_line, u, Sandbox};
use fsbench::advise::measure;
use serde_json::Value;
use std::process::Output;

const NP: u64 = 4;

/// A small, quick measurement: 8 MiB per rank, 2 s for all points, one run per point.
const SMALL: &str = "--measure --measure-size 8m --measure-time 2s --measure-repeat 1";

/// `mpirun -np 4 fsbench ARGS` in the sandbox (`common::mpirun`).
fn mpirun(sb: &Sandbox, args: &[&str]) -> Output {
    common::mpirun(sb, NP, args)
}

/// The names in a directory (hidden ones too), sorted.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The stored Results of a `--results` directory, by file name.
fn results(dir: &std::path::Path) -> Vec<(String, Value)> {
    names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".json"))
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).unwrap();
            (n, serde_json::from_str(&text).unwrap())
        })
        .collect()
}

/// A directory D holding the user's file.
fn dir_with_users_file(sb: &Sandbox) {
    std::fs::create_dir(sb.file("D")).unwrap();
    std::fs::write(sb.file("D/mine.txt"), "the user's").unwrap();
}

fn users_file_alone(sb: &Sandbox) {
    assert_eq!(names(&sb.file("D")), vec!["mine.txt".to_string()]);
    assert_eq!(
        std::fs::read_to_string(sb.file("D/mine.txt")).unwrap(),
        "the user's"
    );
}

/// advise --measure on 4 ranks: exit 0, one advice document on stdout (rank 0's), every point
/// of the advise plan measured (or noted as skipped), each run stored as a Result with 4 rank
/// rows whose bytes sum to its total, each rank on its own file; the point's figures are that
/// Result's total; the note names the ranks, the hosts and whose topology; nothing left in D
/// but the user's file. The text output holds the advice once; a killed measurement's rank
/// file is removed.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn advise_measure_on_4_ranks_stores_one_result_per_run_with_a_row_per_rank() {
    let sb = Sandbox::new();
    dir_with_users_file(&sb);
    let mut args = vec!["advise", "D"];
    args.extend(common::words(SMALL));
    args.extend(["--results", "res", "--format", "json"]);
    let o = mpirun(&sb, &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // Exactly one JSON document: rank 0's advice (the servants print nothing).
    let mut docs = serde_json::Deserializer::from_slice(&o.stdout).into_iter::<Value>();
    let advice = docs.next().expect("an advice").expect("valid JSON");
    assert!(docs.next().is_none(), "more than one document on stdout");
    assert_eq!(advice["kind"], "advise");
    let m = &advice["measurement"];
    let points = m["points"].as_array().unwrap();
    let notes: Vec<&str> = m["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes[0].starts_with(&format!("measured on {NP} ranks on 1 host; topology of ")),
        "{notes:?}"
    );
    assert!(
        m["scratch_file"]
            .as_str()
            .unwrap()
            .ends_with("D/.fsbench-advise.tmp.d/rank-NNNNN/.fsbench-advise.tmp"),
        "{m}"
    );
    // Every point of the plan: measured, or skipped with a note (the file is too small).
    let skipped = notes.iter().filter(|n| n.contains("skipped")).count();
    assert_eq!(
        points.len() + skipped,
        measure::SIZES.len() * 4 + measure::STREAMS.len() * 2,
        "{notes:?}"
    );
    let runs = results(&sb.file("res"));
    assert_eq!(runs.len(), points.len(), "one run per point");
    for (i, (name, r)) in runs.iter().enumerate() {
        assert_eq!(r["kind"], "io", "{name}");
        assert_eq!(r["status"], "complete", "{name}");
        assert_eq!(u(&r["probes"]["sweep"]["index"]), i as u64, "{name}");
        let rows = r["ranks"].as_array().unwrap();
        assert_eq!(rows.len(), NP as usize, "{name}");
        let sum: u64 = rows.iter().map(|row| u(&row["bytes"])).sum();
        assert_eq!(sum, u(&r["total"]["bytes"]), "{name}");
        for (rank, row) in rows.iter().enumerate() {
            assert_eq!(u(&row["rank"]), rank as u64, "{name}");
            assert!(u(&row["bytes"]) > 0, "{name}: {row}");
            let target = row["targets"][0].as_str().unwrap();
            assert!(
                target.ends_with(&format!(
                    "D/.fsbench-advise.tmp.d/rank-{rank:05}/.fsbench-advise.tmp"
                )),
                "{name}: {target}"
            );
        }
        // The point's figures are the Result's aggregate.
        let p = &points[i];
        assert_eq!(u(&p["bytes"]), u(&r["total"]["bytes"]), "{name}");
        assert_eq!(p["threads"], r["job"]["threads"], "{name}");
        assert_eq!(p["block_size_bytes"], r["job"]["block_size"], "{name}");
        let (mine, theirs) = (
            p["bytes_per_sec"].as_f64().unwrap(),
            r["total"]["bytes_per_sec"].as_f64().unwrap(),
        );
        assert!(
            (mine - theirs).abs() <= 1e-9 * theirs,
            "{name}: {mine} vs {theirs}"
        );
    }
    users_file_alone(&sb);

    // A killed measurement's file at rank 1's path (marked as fsbench's by `run --keep`) is
    // removed with its directories. The text: the advice once, with the note.
    let left = "D/.fsbench-advise.tmp.d/rank-00001/.fsbench-advise.tmp";
    std::fs::create_dir_all(sb.file(left).parent().unwrap()).unwrap();
    sb.cmd(&common::words(&format!(
        "run {left} --rw write --size 1m --bs 64k --keep"
    )))
    .assert()
    .success();
    assert!(sb.file(left).exists());
    let mut args = vec!["advise", "D"];
    args.extend(common::words(SMALL));
    let o = mpirun(&sb, &args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(out.matches("(measured)").count(), 1, "{out}");
    assert_eq!(
        out.matches(&format!("note: measured on {NP} ranks on 1 host"))
            .count(),
        1,
        "{out}"
    );
    users_file_alone(&sb);
}

/// advise without --measure under mpirun does no I/O to spread: refused in one line (exit 2),
/// nothing printed on stdout, nothing created.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn advise_without_measure_under_mpirun_is_refused_in_one_line() {
    let sb = Sandbox::new();
    dir_with_users_file(&sb);
    let before = sb.listing();
    let o = mpirun(&sb, &["advise", "D"]);
    let line = mpi_refused_in_one_line(&o);
    assert!(
        line.contains("advise without --measure does no I/O: run it without mpirun"),
        "{line}"
    );
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(sb.listing(), before);
    users_file_alone(&sb);
}

/// A file of the user's at one rank's scratch path is neither read, written nor removed: the
/// measurement is refused before any rank starts, in one line naming the file (exit 2), and
/// nothing is created.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_users_file_at_a_ranks_scratch_path_is_left_alone() {
    let sb = Sandbox::new();
    dir_with_users_file(&sb);
    let theirs = sb.file("D/.fsbench-advise.tmp.d/rank-00002/.fsbench-advise.tmp");
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(&theirs, vec![7u8; 1 << 20]).unwrap();
    let mtime = std::fs::metadata(&theirs).unwrap().modified().unwrap();
    let mut args = vec!["advise", "D"];
    args.extend(common::words(SMALL));
    args.extend(["--results", "res"]);
    let line = mpi_refused_in_one_line(&mpirun(&sb, &args));
    assert!(
        line.contains("rank-00002/.fsbench-advise.tmp exists and was not created by fsbench"),
        "{line}"
    );
    assert_eq!(std::fs::read(&theirs).unwrap(), vec![7u8; 1 << 20]);
    assert_eq!(
        std::fs::metadata(&theirs).unwrap().modified().unwrap(),
        mtime
    );
    assert_eq!(
        names(&sb.file("D/.fsbench-advise.tmp.d")),
        vec!["rank-00002".to_string()]
    );
    assert_eq!(
        names(&sb.file("D")),
        vec![".fsbench-advise.tmp.d".to_string(), "mine.txt".to_string()]
    );
    assert!(!sb.file("res").exists());
}
