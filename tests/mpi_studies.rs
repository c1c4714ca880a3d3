//! The suite's studies on the ranks of a distributed run (issue #16): the aged study and the
//! backup study, each rank with its own files or tree and each phase started at one barrier,
//! refused with a shared file, a failure on one rank naming it. The real binary under
//! `mpirun --allow-run-as-root --oversubscribe` on this machine. Run with
//! `cargo test --release --features mpi --test mpi_studies -- --test-threads=1`.
#![cfg(feature = "mpi")]

mod common;
mod faultfs;

use common::{mpi_refused_in_one_line, mpirun, rank_bytes, rank_ops_bytes, u, Sandbox};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const NP: u64 = 4;

/// A suite with an aged study, max_files 2 and 256 KiB files.
const AGED_SUITE: &str = r#"name = "agedtiny"
title = "An aged study"
source = "none"
description = "a test suite"
default_scale = 1

[[study]]
id = "aged"
title = "Aged reads"
kind = "aged"
table = { rows = ["written", "read", "bs"], metrics = ["kb_per_s", "extents_per_file"] }
[study.aged]
max_files = 2
size = "256k"
write_bs = "64k"
read_bs = ["64k"]
write_title = "Aged writes"
write_table = { rows = ["written"], metrics = ["kb_per_s", "extents_per_file"] }
"#;

/// The suite's aged study on 4 ranks, a file per rank: each rank writes its own w files at
/// once and reads 1..w of them back, so every point moves exactly 4 x files x size bytes,
/// a quarter per rank; each rank counts its own files' extents, and rank 0's Result lists
/// one count per file of every rank (each at least 1) and their average. Each group's files
/// are written fresh (the write creates them), and nothing is left in the directory.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn the_aged_study_runs_on_every_rank_with_extents_from_each() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("aged.toml"), AGED_SUITE).unwrap();
    std::fs::create_dir(sb.file("d")).unwrap();
    let o = mpirun(
        &sb,
        NP,
        &common::words("suite aged.toml --dir d --output res --file-per-rank"),
    );
    assert!(o.status.success(), "{o:?}");
    let size = 256 * 1024u64;
    // (record, files moved by each rank, a write?)
    let points = [
        ("aged-write-0000-written-1.json", 1, true),
        ("aged-0001-written-1_read-1_bs-64k.json", 1, false),
        ("aged-write-0002-written-2.json", 2, true),
        ("aged-0003-written-2_read-1_bs-64k.json", 1, false),
        ("aged-0004-written-2_read-2_bs-64k.json", 2, false),
    ];
    for (name, files, write) in points {
        let text = std::fs::read_to_string(sb.file(&format!("res/{name}")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let r: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(r["status"], "complete", "{name}");
        assert_eq!(r["distributed"]["layout"], "file_per_rank", "{name}");
        assert_eq!(rank_bytes(&r), vec![files * size; NP as usize], "{name}");
        assert_eq!(u(&r["total"]["bytes"]), NP * files * size, "{name}");
        let rw = if write { "write_bytes" } else { "read_bytes" };
        assert_eq!(u(&r["total"][rw]), NP * files * size, "{name}");
        let targets = r["plan"]["targets"].as_array().unwrap();
        assert_eq!(targets.len() as u64, NP * files, "{name}");
        for (k, t) in targets.iter().enumerate() {
            let rank = k as u64 / files;
            let path = t["path"].as_str().unwrap();
            assert!(
                path.contains(&format!("fsbench-aged.dat.d/rank-{rank:05}/")),
                "{name}: {path}"
            );
            // Every group writes a fresh set: the write created each of its files.
            assert_eq!(t["created"], write, "{name}: {path}");
        }
        let extents = r["probes"]["extents"].as_array().unwrap();
        assert_eq!(extents.len() as u64, NP * files, "{name}: {extents:?}");
        assert!(extents.iter().all(|e| u(e) >= 1), "{name}: {extents:?}");
        let avg = r["probes"]["extents_per_file"].as_f64().unwrap();
        let want = extents.iter().map(u).sum::<u64>() as f64 / extents.len() as f64;
        assert!(avg >= 1.0 && (avg - want).abs() < 1e-9, "{name}: {avg}");
    }
    assert_eq!(std::fs::read_dir(sb.file("d")).unwrap().count(), 0);
}

/// `--shared-file` gives each rank a part of one file, not files of its own to age: the
/// suite refuses its aged study in one line naming it, before any I/O.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn the_aged_study_with_a_shared_file_is_refused_in_one_line() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("aged.toml"), AGED_SUITE).unwrap();
    refused_with_a_shared_file(&sb, "suite aged.toml", "suite study 'aged'");
}

/// `LINE --dir d --output res --shared-file` on the ranks: refused in one line naming
/// `study` and `--file-per-rank`, before any I/O (no results, nothing in d).
fn refused_with_a_shared_file(sb: &Sandbox, line: &str, study: &str) {
    std::fs::create_dir(sb.file("d")).unwrap();
    let line = format!("{line} --dir d --output res --shared-file");
    let refusal = mpi_refused_in_one_line(&mpirun(sb, NP, &common::words(&line)));
    assert!(
        refusal.contains(study) && refusal.contains("--file-per-rank"),
        "{refusal}"
    );
    assert!(!sb.file("res").exists());
    assert_eq!(std::fs::read_dir(sb.file("d")).unwrap().count(), 0);
}

/// The backup suite's records in `dir`, by file name (phases in order).
fn backup_records(dir: &Path) -> Vec<(String, Value)> {
    common::records(dir, "backup-")
}

/// The suite's backup study on 4 ranks (scale 0.002: a 4460421-byte file and two small ones
/// of 14205 and 78 bytes per tree): every rank builds its own tree, archives and restores
/// it, each phase started at one barrier. Each of the 4 phases (archive and restore,
/// buffered and direct) is one Result with a row per rank: every rank moved the same bytes,
/// the rows sum to the total, and the total is exactly 4 times what the same study moves on
/// one host (tree bytes read and archive bytes written, then the reverse). Every rank's
/// restored tree was compared byte for byte with its original, and nothing is left.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn the_backup_study_runs_on_every_rank_with_a_tree_each() {
    const TREE: u64 = 4460421 + 14205 + 78;
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("one")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_fsbench"))
        .current_dir(sb.path())
        .args(common::words(
            "suite backup --dir one --scale 0.002 --output bk1",
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let single = backup_records(&sb.file("bk1"));
    assert_eq!(single.len(), 4);

    std::fs::create_dir(sb.file("d")).unwrap();
    let o = mpirun(
        &sb,
        NP,
        &common::words("suite backup --dir d --scale 0.002 --output bk"),
    );
    assert!(o.status.success(), "{o:?}");
    let recs = backup_records(&sb.file("bk"));
    assert_eq!(recs.len(), 4, "{recs:?}");
    for ((name, r), (name1, one)) in recs.iter().zip(&single) {
        assert_eq!(name, name1);
        assert_eq!(r["kind"], "backup", "{name}");
        assert_eq!(r["status"], "complete", "{name}: {}", r["failures"]);
        assert_eq!(r["distributed"]["layout"], "dir_per_rank", "{name}");
        let restore = name.contains("restore");
        let (tree_dir, archive_dir) = if restore {
            ("write_bytes", "read_bytes")
        } else {
            ("read_bytes", "write_bytes")
        };
        let t = &r["total"];
        assert_eq!(u(&t[tree_dir]), NP * TREE, "{name}");
        assert_eq!(u(&one["total"][tree_dir]), TREE, "{name}");
        // The archive (headers, padding to whole records) as on one host, once per rank.
        let archive = u(&one["total"][archive_dir]);
        assert!(
            archive > TREE && archive.is_multiple_of(32256),
            "{name}: {archive}"
        );
        assert_eq!(u(&t[archive_dir]), NP * archive, "{name}");
        for k in ["read_ops", "write_ops"] {
            assert_eq!(u(&t[k]), NP * u(&one["total"][k]), "{name}: {k}");
        }
        let rows = rank_ops_bytes(r);
        assert_eq!(rows.len(), NP as usize, "{name}");
        assert!(
            rows.iter().all(|x| x.1 == TREE + archive),
            "{name}: {rows:?}"
        );
        assert_eq!(
            rows.iter().map(|x| x.0).sum::<u64>(),
            u(&t["read_ops"]) + u(&t["write_ops"]),
            "{name}"
        );
        let targets = r["plan"]["targets"].as_array().unwrap();
        for (rank, tg) in targets.iter().enumerate() {
            let p = tg["path"].as_str().unwrap();
            assert!(
                p.contains(&format!("/rank-{rank:05}/backup.tar")),
                "{name}: {p}"
            );
        }
        if restore {
            assert_eq!(r["probes"]["verified"], true, "{name}");
            let notes = r["notes"].to_string();
            assert!(
                notes.contains("restored tree verified byte-identical"),
                "{notes}"
            );
            assert!(!notes.contains("NOT verified"), "{notes}");
        }
    }
    assert_eq!(std::fs::read_dir(sb.file("d")).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(sb.file("one")).unwrap().count(), 0);
}

/// With `--shared-file` the ranks would share one file, not a tree each: the suite refuses
/// its backup study in one line naming it, before any I/O.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn the_backup_study_with_a_shared_file_is_refused_in_one_line() {
    let sb = Sandbox::new();
    refused_with_a_shared_file(
        &sb,
        "suite backup --scale 0.002",
        "suite study 'backup' (backup)",
    );
}

/// The backup study with buffered then direct caches, at a small size.
const BACKUP_SUITE: &str = r#"name = "bktiny"
title = "A backup study"
source = "none"
description = "a test suite"
default_scale = 1

[[study]]
id = "backup"
title = "Backup"
kind = "backup"
table = { rows = ["phase", "cache"], metrics = ["elapsed_s", "read_calls", "write_calls"] }
[study.backup]
large = "300k"
small = ["7000", "39"]
record = 32256
caches = ["buffered", "direct"]
"#;

/// One rank's archive fails (faultfs under the suite's directory answers the third record
/// written to any rank's backup.tar with EIO): the buffered archive phase fails on every
/// rank's behalf, naming the rank that failed, its row failed and the others complete, and
/// that cache's restore is skipped everywhere (as on one host); the direct phases then run on
/// every rank. The suite exits 1 and nothing is left.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_fuse)),
    ignore = "SKIPPED: needs mpirun, root and /dev/fuse"
)]
fn a_backup_archive_failing_on_one_rank_fails_the_phase_naming_it() {
    use faultfs::{Fault, FaultFs, Op, When};
    let sb = Sandbox::new();
    std::fs::write(sb.file("bk.toml"), BACKUP_SUITE).unwrap();
    let fs = FaultFs::mount().unwrap_or_else(|why| common::cannot(&format!("faultfs: {why}")));
    fs.ctl().add_sized(
        Op::Write,
        When::Nth(3),
        Fault::Error(libc::EIO),
        Some("backup.tar"),
        Some(32256),
    );
    let _bound = fs.bind_on(&sb.file("d"));
    let o = mpirun(
        &sb,
        NP,
        &common::words("suite bk.toml --dir d --output res"),
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(fs.ctl().injected.len(), 1, "the fault fired once");
    let recs = backup_records(&sb.file("res"));
    let names: Vec<&str> = recs.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "backup-0000-cache-buffered_phase-archive.json",
            "backup-0002-cache-direct_phase-archive.json",
            "backup-0003-cache-direct_phase-restore.json"
        ]
    );
    let failed = &recs[0].1;
    assert_eq!(failed["status"], "failed");
    let failures = failed["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    let msg = failures[0]["message"].as_str().unwrap();
    let rank: usize = msg
        .strip_prefix("rank ")
        .and_then(|m| m.split(' ').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no rank named: {msg}"));
    assert!(msg.contains("Input/output error"), "{msg}");
    for (k, row) in failed["ranks"].as_array().unwrap().iter().enumerate() {
        let want = if k == rank { "failed" } else { "complete" };
        assert_eq!(row["status"], want, "rank {k}: {row}");
    }
    for (name, r) in &recs[1..] {
        assert_eq!(r["status"], "complete", "{name}: {}", r["failures"]);
        assert_eq!(rank_ops_bytes(r).len(), NP as usize);
    }
    assert_eq!(recs[2].1["probes"]["verified"], true);
    assert_eq!(fs.listing(), Vec::<String>::new());
}
