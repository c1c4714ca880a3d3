//! The run options every rank of a distributed run takes (issue #16, h-mpiopt): `--verify`
//! and `--journal` (each rank checks what it wrote; one journal per rank), `--stonewall` with
//! `--processes`, `--iostat` / `--trace` observed on every rank. Workloads on ranks are in
//! `mpi_workload.rs`, the suite's studies in `mpi_studies.rs`. The real binary under
//! `mpirun --allow-run-as-root --oversubscribe` on this machine; every figure is checked
//! exactly against what the ranks did. Run with
//! `cargo test --release --features mpi --test mpi_options -- --test-threads=1`.
#![cfg(feature = "mpi")]

mod common;
mod faultfs;

use common::{
    file_len as len, mpirun, mpirun_json as run_json, mpirun_result as run_result, rank_bytes, u,
    Sandbox,
};
use std::process::Command;

const NP: u64 = 4;

/// `fsbench verify FILE --journal J` (one process, no mpirun): its exit status and output.
fn verify(sb: &Sandbox, file: &str, journal: &str) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_fsbench"))
        .current_dir(sb.path())
        .args(["verify", file, "--journal", journal])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    (o.status.code(), text)
}

/// --verify on every layout: each rank reads back and checks every block it wrote, and the
/// one `verify` section sums them: blocks checked = blocks written, all intact. Each rank
/// journals to J.rank-NNNNN, and `fsbench verify` of the kept file with any rank's journal
/// is clean afterwards.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn verify_on_every_layout_checks_each_block_every_rank_wrote() {
    for layout in [
        "--file-per-rank",
        "--shared-file=segmented",
        "--shared-file=strided",
    ] {
        let sb = Sandbox::new();
        let line = format!(
            "run f --rw write --bs 64k --size 4m {layout} --verify --journal J --cache direct --keep"
        );
        let r = run_json(&sb, NP, &common::words(&line));
        assert_eq!(r["status"], "complete", "{layout}");
        let v = &r["verify"];
        let writes = u(&r["total"]["write_ops"]);
        let per_rank = if layout == "--file-per-rank" { 64 } else { 16 };
        assert_eq!(writes, NP * per_rank, "{layout}");
        assert_eq!(u(&v["blocks_checked"]), writes, "{layout}: {v}");
        assert_eq!(u(&v["read_back_blocks"]), writes, "{layout}: {v}");
        assert_eq!(u(&v["blocks_intact"]), writes, "{layout}: {v}");
        assert_eq!(v["read_back_done"], true);
        // Direct I/O: every write acknowledged in its rank's journal.
        assert_eq!(u(&v["journal_acks"]), writes, "{layout}: {v}");
        for rank in 0..NP {
            let j = format!("J.rank-{rank:05}");
            assert!(sb.file(&j).exists(), "{layout}: no {j}");
            let file = if layout == "--file-per-rank" {
                format!("f.d/rank-{rank:05}/f")
            } else {
                "f".to_string()
            };
            let (code, out) = verify(&sb, &file, &j);
            assert_eq!(
                code,
                Some(0),
                "{layout}: verify {file} --journal {j}: {out}"
            );
            assert!(out.contains("intact"), "{out}");
        }
        assert!(!sb.file("J").exists(), "{layout}: a journal without a rank");
    }
}

/// A block of a shared strided file corrupted after a kept --journal run: `fsbench verify`
/// with the journal of the rank that wrote it finds it at its offset, and so does another
/// rank's journal (every rank stamped the run's one seed), while the untouched blocks of the
/// other ranks are intact.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_block_corrupted_after_a_shared_file_run_is_found_with_any_ranks_journal() {
    let sb = Sandbox::new();
    let r = run_json(
        &sb,
        NP,
        &common::words(
            "run s --rw write --bs 64k --size 4m --shared-file strided --journal J --cache direct --keep",
        ),
    );
    assert_eq!(r["status"], "complete");
    // Strided: block 6 is rank 2's (6 mod 4).
    let at = 6 * 65536u64;
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(sb.file("s"))
            .unwrap();
        f.write_all_at(b"not what fsbench wrote", at + 100).unwrap();
    }
    for j in ["J.rank-00002", "J.rank-00000"] {
        let (code, out) = verify(&sb, "s", j);
        assert_eq!(code, Some(1), "{j}: {out}");
        assert!(
            out.contains("intact 63") && out.contains("corrupt 1"),
            "{j}: {out}"
        );
        assert!(
            out.contains(&format!("corrupt at offsets {at}")),
            "{j}: {out}"
        );
    }
}

/// A rank whose storage flips a bit of one write: its read-back finds it, the run fails
/// (exit 1) naming that rank, its file and the offset, and the summed `verify` section keeps
/// the mismatch with its rank; the other ranks' blocks are all intact.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_fuse)),
    ignore = "SKIPPED: needs mpirun, root and /dev/fuse"
)]
fn a_bit_flipped_on_one_rank_fails_the_run_naming_the_rank() {
    use faultfs::{Fault, FaultFs, Op, When};
    let fs = FaultFs::mount().unwrap_or_else(|why| common::cannot(&format!("faultfs: {why}")));
    let at = 5 * 65536u64;
    fs.ctl().add(
        Op::Write,
        When::Offset(at),
        Fault::FlipBit { byte: 1000, bit: 3 },
        Some("f"),
    );
    let sb = Sandbox::new();
    let dir = sb.file("f.d/rank-00002");
    let _u = fs.bind_on(&dir);
    let (code, r, err) = run_result(
        &sb,
        NP,
        &common::words(
            "run f --rw write --bs 64k --size 1m --file-per-rank --verify --cache direct",
        ),
    );
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(r["status"], "failed");
    let v = &r["verify"];
    assert_eq!(u(&v["blocks_checked"]), NP * 16, "{v}");
    assert_eq!(u(&v["blocks_intact"]), NP * 16 - 1, "{v}");
    assert_eq!(u(&v["corrupt"]["blocks"]), 1, "{v}");
    let m = &v["corrupt"]["first"][0];
    assert_eq!(u(&m["rank"]), 2, "{m}");
    assert_eq!(u(&m["offset_bytes"]), at, "{m}");
    assert!(
        m["target"].as_str().unwrap().ends_with("f.d/rank-00002/f"),
        "{m}"
    );
    let f = &r["failures"][0];
    assert!(
        f["message"].as_str().unwrap().starts_with("rank 2 on "),
        "{f}"
    );
    assert_eq!(u(&f["offset"]), at, "{f}");
    assert_eq!(r["ranks"][2]["status"], "failed");
    for rank in [0, 1, 3] {
        assert_eq!(r["ranks"][rank]["status"], "complete");
    }
}

/// What stays refused on ranks is one line, exit status 2, naming what is accepted.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn verify_with_reorder_ranks_is_refused_in_one_line() {
    let sb = Sandbox::new();
    let o = mpirun(
        &sb,
        NP,
        &common::words(
            "run f --rw read --bs 64k --size 1m --file-per-rank --reorder-ranks --verify",
        ),
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("fsbench:")).collect();
    assert_eq!(ours.len(), 1, "{err}");
    assert!(ours[0].contains("drop --reorder-ranks"), "{err}");
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

/// --stonewall with --processes: the stop reaches the worker processes. Rank 0 has a 64 KiB
/// file to read (16 reads), the others 4 MiB (1024), all at 200 reads/s: when rank 0 is
/// done, the others stop long before their work is; every rank's bytes are reported, their
/// sum is the total, and the wall is rank 0's end. With a fixed wall, every rank stops at it
/// and what each reports it wrote is what is on disk.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn stonewall_stops_worker_processes_and_counts_what_each_moved() {
    let sb = Sandbox::new();
    for rank in 0..NP {
        let dir = sb.file(&format!("f.d/rank-{rank:05}"));
        std::fs::create_dir_all(&dir).unwrap();
        let size = if rank == 0 { 64 << 10 } else { 4 << 20 };
        std::fs::write(dir.join("f"), vec![7u8; size]).unwrap();
    }
    let r = run_json(
        &sb,
        NP,
        &common::words(
            "run f --rw read --bs 4k --size 4m --rate-iops 200 --file-per-rank --stonewall first --processes per-user",
        ),
    );
    assert_eq!(r["status"], "complete");
    let sw = &r["distributed"]["stonewall"];
    assert_eq!(sw["mode"], "first_finish");
    assert_eq!(u(&sw["called_by_rank"]), 0, "{sw}");
    let bytes = rank_bytes(&r);
    assert_eq!(bytes[0], 64 << 10);
    for (rank, b) in bytes.iter().enumerate().skip(1) {
        // Stopped within a second of rank 0's 0.08 s: far from the 5 s of their work.
        assert!(*b > 0 && *b < 200 * 4096, "rank {rank} moved {b}");
        assert!(
            r["ranks"][rank]["end_s"].as_f64().unwrap() < 1.5,
            "{}",
            r["ranks"][rank]
        );
    }
    assert_eq!(u(&sw["bytes"]), bytes.iter().sum::<u64>());
    assert_eq!(u(&r["total"]["bytes"]), bytes.iter().sum::<u64>());
    assert_eq!(
        sw["wall_s"].as_f64().unwrap(),
        r["ranks"][0]["end_s"].as_f64().unwrap()
    );
    // The user's files were read, never changed or removed.
    assert_eq!(len(&sb.file("f.d/rank-00001/f")), 4 << 20);

    let sb = Sandbox::new();
    let r = run_json(
        &sb,
        NP,
        &common::words(
            "run g --rw write --bs 4k --count 1000 --rate-iops 200 --file-per-rank --stonewall 1s --processes per-thread --keep",
        ),
    );
    assert_eq!(r["status"], "complete");
    let bytes = rank_bytes(&r);
    for (rank, b) in bytes.iter().enumerate() {
        assert!(*b > 0 && *b < 1000 * 4096, "rank {rank} moved {b}");
        assert_eq!(len(&sb.file(&format!("g.d/rank-{rank:05}/g"))), *b);
        let end = r["ranks"][rank]["end_s"].as_f64().unwrap();
        assert!((0.9..2.5).contains(&end), "rank {rank} ended at {end}");
    }
    assert_eq!(
        u(&r["distributed"]["stonewall"]["bytes"]),
        bytes.iter().sum::<u64>()
    );
}

/// --iostat on 4 ranks on one host: the host's devices are sampled once (by rank 0, the
/// lowest rank on it), stored per host, and the total names the host and its devices.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn iostat_samples_each_hosts_devices_once() {
    let sb = Sandbox::new();
    let r = run_json(
        &sb,
        NP,
        &common::words("run f --rw write --bs 64k --size 8m --file-per-rank --iostat 20ms"),
    );
    assert_eq!(r["status"], "complete");
    let hosts = r["hosts"].as_array().unwrap();
    let per_host = r["distributed"]["host_devices"].as_array().unwrap();
    assert_eq!(per_host.len(), hosts.len(), "{per_host:?}");
    let h = &per_host[0];
    assert_eq!(h["host"], hosts[0]);
    assert_eq!(u(&h["rank"]), 0);
    assert!(
        !h["iostat"]["samples"].as_array().unwrap().is_empty(),
        "{h}"
    );
    // The iostat section is that host's, as on one host.
    assert_eq!(r["probes"]["iostat"], h["iostat"]);
    let host = hosts[0].as_str().unwrap();
    assert!(
        r["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains(&format!("on 1 host(s): {host} ("))),
        "{}",
        r["notes"]
    );
}

/// --trace on 2 ranks, with threads and with worker processes: one trace file per rank
/// (FILE.rank-NNNNN.csv), each holding exactly that rank's I/Os, and the Result sums them.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn trace_on_each_rank_records_exactly_its_own_ios() {
    for workers in ["", "--processes per-thread --threads 2"] {
        let sb = Sandbox::new();
        let r = run_json(
            &sb,
            2,
            &common::words(&format!(
                "run f --rw randwrite --bs 4k --size 1m --count 150 --file-per-rank --trace t.csv {workers}"
            )),
        );
        assert_eq!(r["status"], "complete", "{workers}");
        let t = &r["probes"]["trace"];
        let mut sum = 0;
        for rank in 0..2u64 {
            let ops = u(&r["ranks"][rank as usize]["ops"]);
            let file = format!("t.rank-{rank:05}.csv");
            let text = std::fs::read_to_string(sb.file(&file)).unwrap();
            let rows: Vec<&str> = text.lines().skip(1).collect();
            assert_eq!(rows.len() as u64, ops, "{workers}: {file}");
            let mine = format!("f.d/rank-{rank:05}/f");
            assert!(rows.iter().all(|l| l.contains(&mine)), "{workers}: {file}");
            assert_eq!(u(&t["ranks"][rank as usize]["records"]), ops);
            assert_eq!(t["ranks"][rank as usize]["file"], file);
            sum += ops;
        }
        assert_eq!(u(&t["records"]), sum, "{t}");
        assert_eq!(u(&t["dropped_records"]), 0);
        assert_eq!(t["file"], "t.rank-*.csv");
    }
}
