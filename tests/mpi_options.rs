//! The options every rank of a distributed run now takes (issue #16, h-mpiopt): `--verify`
//! and `--journal` (each rank checks what it wrote; one journal per rank), `--stonewall` with
//! `--processes`, `--iostat` / `--trace` observed on every rank, and `workload --verify`
//! (each rank checks the reads of what it wrote; rank 0 sums them); `workload --stonewall`
//! (h-wlstone) and the suite's backup study on ranks; `workload --reorder-ranks` and `reuse`
//! with `workload --shared-file` (h-wlreorder). The real binary under
//! `mpirun --allow-run-as-root --oversubscribe` on this machine; every figure is checked
//! exactly against what the ranks did. Run with
//! `cargo test --release --features mpi --test mpi_options -- --test-threads=1`.
#![cfg(feature = "mpi")]

mod common;
#[cfg(has_fuse)]
mod faultfs;

use common::{mpirun, mpirun_json as run_json, mpirun_result as run_result, u, Sandbox};
use serde_json::Value;
use std::path::Path;
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

fn rank_bytes(r: &Value) -> Vec<u64> {
    r["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| u(&x["bytes"]))
        .collect()
}

fn len(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
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
    #[cfg(has_fuse)]
    {
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
}

/// One thread per rank: 3 files created and written whole (ten 3000-byte writes each),
/// appended to (1000 bytes), then opened and read whole in 4096-byte reads: 31000 bytes are
/// 8 reads with data and one at the end that returns nothing, so 9 checked reads a file,
/// 27 a rank. The thread ends when no file is left to create.
const FLOW: &str = "set mode quit alldone
define fileset name=fs,path=$dir,entries=3,size=30000,prealloc=0
define process name=p,instances=1 { thread name=t,instances=1 {
  flowop createfile name=cr,filesetname=fs,fd=1
  flowop writewholefile name=ww,srcfd=1,fd=1,iosize=3000
  flowop appendfile name=ap,fd=1,iosize=1000
  flowop closefile name=cl,fd=1
  flowop openfile name=op,filesetname=fs,fd=1
  flowop readwholefile name=rw,fd=1,iosize=4096
  flowop closefile name=cl2,fd=1 } }
run 30
";
const FLOW_READS_PER_RANK: u64 = 3 * 9;

fn bad_reads(v: &Value) -> u64 {
    ["stale", "misdirected", "torn", "corrupt"]
        .iter()
        .map(|k| u(&v[k]["blocks"]))
        .sum()
}

/// `workload --verify` on ranks: every rank checks the reads of what it wrote, and rank 0's
/// one `verify` section sums them exactly (the flow's 27 reads a rank, every byte read
/// compared); a shipped personality at a small scale verifies clean too. Nothing is left.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn workload_verify_on_ranks_sums_every_ranks_checked_reads() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("flow.f"), FLOW).unwrap();
    std::fs::create_dir(sb.file("wl")).unwrap();
    let r = run_json(&sb, NP, &common::words("workload flow.f --dir wl --verify"));
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    let v = &r["verify"];
    assert_eq!(u(&v["blocks_checked"]), NP * FLOW_READS_PER_RANK, "{v}");
    assert_eq!(u(&v["blocks_intact"]), NP * FLOW_READS_PER_RANK, "{v}");
    assert_eq!(u(&v["bytes_checked"]), NP * 3 * 31000, "{v}");
    assert_eq!(bad_reads(v), 0, "{v}");
    let rw = r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "rw")
        .expect("the readwholefile flowop");
    assert_eq!(u(&rw["stats"]["read_bytes"]), NP * 3 * 31000);
    assert_eq!(std::fs::read_dir(sb.file("wl")).unwrap().count(), 0);

    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("wl")).unwrap();
    let r = run_json(
        &sb,
        NP,
        &common::words(
            "workload fileserver --dir wl -D nfiles=40 -D nthreads=2 -D meanfilesize=16k --time 2s --verify",
        ),
    );
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    let v = &r["verify"];
    let checked = u(&v["blocks_checked"]);
    assert!(checked > 0, "nothing checked: {v}");
    assert!(u(&v["bytes_checked"]) > 0, "{v}");
    assert_eq!(u(&v["blocks_intact"]), checked, "{v}");
    assert_eq!(bad_reads(v), 0, "{v}");
    assert_eq!(r["ranks"].as_array().unwrap().len(), NP as usize);
    assert_eq!(std::fs::read_dir(sb.file("wl")).unwrap().count(), 0);
}

/// faultfs bound on rank 2's workload directory `wl/rank-00002`, set to flip a bit of its
/// 15th 3000-byte write (the flow's writewholefile, mid-way through its second file).
#[cfg(has_fuse)]
fn flipping_faultfs_on_rank_2(sb: &Sandbox) -> (faultfs::FaultFs, faultfs::BindMount) {
    faultfs_on_rank_2(sb, faultfs::Fault::FlipBit { byte: 100, bit: 2 })
}

/// faultfs bound on rank 2's workload directory `wl/rank-00002`, set to do `fault` to its
/// 15th 3000-byte write.
#[cfg(has_fuse)]
fn faultfs_on_rank_2(
    sb: &Sandbox,
    fault: faultfs::Fault,
) -> (faultfs::FaultFs, faultfs::BindMount) {
    use faultfs::{FaultFs, Op, When};
    let fs = FaultFs::mount().unwrap_or_else(|why| common::cannot(&format!("faultfs: {why}")));
    fs.ctl()
        .add_sized(Op::Write, When::Nth(15), fault, None, Some(3000));
    let bound = fs.bind_on(&sb.file("wl/rank-00002"));
    (fs, bound)
}

/// A rank whose storage flips a bit of one fileset write (faultfs mounted on its directory):
/// its read finds it, the run fails (exit 1) naming that rank, and the summed `verify`
/// section keeps the mismatch with its rank at the byte the fault hit; every other read of
/// every rank is intact.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_fuse)),
    ignore = "SKIPPED: needs mpirun, root and /dev/fuse"
)]
fn a_bit_flipped_in_one_ranks_workload_fails_the_run_naming_the_rank() {
    #[cfg(has_fuse)]
    {
        let sb = Sandbox::new();
        std::fs::write(sb.file("flow.f"), FLOW).unwrap();
        let (fs, _u) = flipping_faultfs_on_rank_2(&sb);
        let (code, r, err) =
            run_result(&sb, NP, &common::words("workload flow.f --dir wl --verify"));
        let hit = fs.ctl().injected.pop().expect("the fault fired");
        assert_eq!(code, Some(1), "{err}");
        assert_eq!(r["status"], "failed");
        let v = &r["verify"];
        assert_eq!(u(&v["blocks_checked"]), NP * FLOW_READS_PER_RANK, "{v}");
        assert_eq!(u(&v["blocks_intact"]), NP * FLOW_READS_PER_RANK - 1, "{v}");
        assert_eq!(u(&v["corrupt"]["blocks"]), 1, "{v}");
        assert_eq!(bad_reads(v), 1, "{v}");
        let m = &v["corrupt"]["first"][0];
        assert_eq!(u(&m["rank"]), 2, "{m}");
        assert_eq!(u(&m["offset_bytes"]), hit.offset + 100, "{m}");
        let target = m["target"].as_str().unwrap();
        assert!(target.contains("wl/rank-00002/"), "{m}");
        assert!(target.ends_with(&hit.file), "{m} {hit:?}");
        // `user` is the fileset's index among every rank's (one fileset a rank).
        assert_eq!(u(&m["user"]), 2, "{m}");
        let sets = r["workload"]["filesets"].as_array().unwrap();
        assert_eq!(sets.len(), NP as usize);
        assert!(
            sets[2]["root"].as_str().unwrap().contains("rank-00002"),
            "{sets:?}"
        );
        assert!(
            m["detail"].as_str().unwrap().contains("one bit flipped"),
            "{m}"
        );
        // One failure, the rank's, named with it.
        let failures = r["failures"].as_array().unwrap();
        assert_eq!(failures.len(), 1, "{failures:?}");
        let msg = failures[0]["message"].as_str().unwrap();
        assert!(msg.starts_with("rank 2 on "), "{msg}");
        assert!(msg.contains("verify: 1 read(s) did not come back"), "{msg}");
        assert_eq!(r["ranks"][2]["status"], "failed");
        for rank in [0, 1, 3] {
            assert_eq!(r["ranks"][rank]["status"], "complete");
        }
        // Rank 2's fileset is removed from the mount; the other ranks' directories too.
        assert_eq!(fs.listing(), Vec::<String>::new());
        let left: Vec<String> = std::fs::read_dir(sb.file("wl"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            left,
            vec!["rank-00002".to_string()],
            "the bound directory only"
        );
    }
}

/// A thread of rank 2 fails (its storage answers a write with EIO): the run fails (exit 1)
/// and `failures[]` holds that failure once, naming the rank, not once from the merged
/// threads and again from the rank's own Result.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_fuse)),
    ignore = "SKIPPED: needs mpirun, root and /dev/fuse"
)]
fn a_thread_failed_on_one_rank_is_one_failure_naming_the_rank() {
    #[cfg(has_fuse)]
    {
        let sb = Sandbox::new();
        std::fs::write(sb.file("flow.f"), FLOW).unwrap();
        let (fs, _u) = faultfs_on_rank_2(&sb, faultfs::Fault::Error(libc::EIO));
        let (code, r, err) = run_result(&sb, NP, &common::words("workload flow.f --dir wl"));
        assert!(fs.ctl().injected.pop().is_some(), "the fault fired");
        assert_eq!(code, Some(1), "{err}");
        assert_eq!(r["status"], "failed");
        let failures = r["failures"].as_array().unwrap();
        assert_eq!(failures.len(), 1, "{failures:?}");
        let msg = failures[0]["message"].as_str().unwrap();
        assert!(msg.starts_with("rank 2 on "), "{msg}");
        assert!(msg.contains("Input/output error"), "{msg}");
        assert_eq!(r["ranks"][2]["status"], "failed");
        for rank in [0, 1, 3] {
            assert_eq!(r["ranks"][rank]["status"], "complete");
        }
        let ends = &r["workload"]["runs"][0]["thread_ends"];
        assert_eq!(u(&ends["failed"]), 1, "{ends}");
        assert_eq!(fs.listing(), Vec::<String>::new());
    }
}

/// Two runs, and rank 2's first fails (a bit flipped, found by --verify): its script ends
/// there, as on one host, so the second run is called off on every rank. The Result has the
/// first run only, fails with rank 2's failure alone, and the other ranks are complete with
/// a note that their second run was called off. Nothing hangs and nothing is left.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_fuse)),
    ignore = "SKIPPED: needs mpirun, root and /dev/fuse"
)]
fn a_run_failed_on_one_rank_calls_the_next_run_off_on_every_rank() {
    #[cfg(has_fuse)]
    {
        let sb = Sandbox::new();
        std::fs::write(sb.file("flow.f"), format!("{FLOW}run 30\n")).unwrap();
        let (fs, _u) = flipping_faultfs_on_rank_2(&sb);
        let (code, r, err) =
            run_result(&sb, NP, &common::words("workload flow.f --dir wl --verify"));
        assert_eq!(code, Some(1), "{err}");
        assert_eq!(r["status"], "failed");
        assert_eq!(r["workload"]["runs"].as_array().unwrap().len(), 1);
        assert_eq!(u(&r["verify"]["corrupt"]["blocks"]), 1, "{}", r["verify"]);
        assert_eq!(u(&r["verify"]["corrupt"]["first"][0]["rank"]), 2);
        let failures = r["failures"].as_array().unwrap();
        assert_eq!(failures.len(), 1, "{failures:?}");
        let msg = failures[0]["message"].as_str().unwrap();
        assert!(msg.starts_with("rank 2 on "), "{msg}");
        let notes: Vec<&str> = r["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        let want = "run 2 called off: another rank's script ended before it";
        for rank in [0, 1, 3] {
            assert_eq!(r["ranks"][rank]["status"], "complete", "{notes:?}");
            let note = if rank == 0 {
                want.to_string()
            } else {
                format!("rank {rank}: {want}")
            };
            assert!(notes.contains(&note.as_str()), "{notes:?}");
        }
        assert_eq!(r["ranks"][2]["status"], "failed");
        assert_eq!(fs.listing(), Vec::<String>::new());
        let left = std::fs::read_dir(sb.file("wl")).unwrap().count();
        assert_eq!(left, 1, "the bound directory only");
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
    std::fs::create_dir(sb.file("d")).unwrap();
    let o = mpirun(
        &sb,
        NP,
        &common::words("suite aged.toml --dir d --output res --shared-file"),
    );
    let (refusal, err) = refused_in_one_line(&o);
    assert!(
        refusal.contains("suite study 'aged'") && refusal.contains("--file-per-rank"),
        "{err}"
    );
    assert!(!sb.file("res").exists());
    assert_eq!(std::fs::read_dir(sb.file("d")).unwrap().count(), 0);
}

/// The names of the files below `dir`, by the directory holding them.
fn files_by_dir(dir: &Path) -> Vec<(std::path::PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let mut names = Vec::new();
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                names.push(e.file_name().into_string().unwrap());
            }
        }
        out.push((d, names));
    }
    out
}

/// `workload --shared-file` on 4 ranks (mdtest's shared-directory mode): one fileset tree
/// under the directory for every rank, each rank's files in it named with its tag, ops per
/// rank summing to the total exactly; a later run removes the kept tree and leaves nothing
/// but the user's own file, untouched; a file the user put in a kept tree is never removed
/// and the next run is refused in one line naming it.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_shared_dir_workload_puts_every_ranks_files_in_the_same_directories() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("D")).unwrap();
    std::fs::write(sb.file("D/precious.txt"), b"the user's data").unwrap();
    let line = "workload fileserver --dir D --shared-file -D nfiles=60 -D filesize=4k -D nthreads=2 --time 2s";
    let r = run_json(&sb, NP, &common::words(&format!("{line} --keep")));
    assert_eq!(r["status"], "complete", "{}", r["notes"]);
    assert_eq!(r["distributed"]["layout"], "shared_dir");
    let ranks = r["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), NP as usize);
    let ops: Vec<u64> = ranks.iter().map(|k| u(&k["ops"])).collect();
    assert!(ops.iter().all(|&n| n > 0), "{ops:?}");
    assert_eq!(ops.iter().sum::<u64>(), u(&r["total"]["ops"]));
    let group_ops: u64 = r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| u(&g["stats"]["ops"]))
        .sum();
    assert_eq!(group_ops, u(&r["total"]["ops"]));
    for k in ranks {
        assert_eq!(k["targets"][0], "D");
    }
    for f in r["workload"]["filesets"].as_array().unwrap() {
        assert_eq!(f["root"], "D/fileserverset");
    }
    // One tree, no directory of a rank; every file in it is a rank's, tagged .rNNNNN.
    let mut top: Vec<String> = std::fs::read_dir(sb.file("D"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    top.sort();
    assert_eq!(top, vec!["fileserverset"]);
    let tree = files_by_dir(&sb.file("D/fileserverset"));
    let mut all_ranks_in_one_dir = false;
    let mut seen = [0u64; NP as usize];
    for (dir, names) in &tree {
        let mut here = std::collections::BTreeSet::new();
        for n in names {
            let (num, tag) = n
                .split_once('.')
                .unwrap_or_else(|| panic!("{}/{n} has no rank tag", dir.display()));
            assert!(
                num.len() == 8 && num.bytes().all(|b| b.is_ascii_digit()),
                "{n}"
            );
            let rank: usize = tag.strip_prefix('r').unwrap().parse().unwrap();
            assert!(rank < NP as usize, "{n}");
            seen[rank] += 1;
            here.insert(rank);
        }
        all_ranks_in_one_dir |= here.len() == NP as usize;
    }
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    assert!(
        all_ranks_in_one_dir,
        "no directory holds files of every rank: {tree:?}"
    );
    // A file the user put in the kept tree: the next run refuses in one line, keeps it.
    let (leaf, _) = tree.iter().find(|(_, n)| !n.is_empty()).unwrap();
    let mine = leaf.join("mine.txt");
    std::fs::write(&mine, b"mine").unwrap();
    let o = mpirun(&sb, NP, &common::words(line));
    let (refusal, err) = refused_in_one_line(&o);
    assert!(
        refusal.contains("rank 0") && refusal.contains("mine.txt"),
        "{err}"
    );
    assert_eq!(std::fs::read(&mine).unwrap(), b"mine");
    std::fs::remove_file(&mine).unwrap();
    // Now the next run removes the kept tree, runs, and leaves only the user's file.
    let r = run_json(&sb, NP, &common::words(line));
    assert_eq!(r["status"], "complete", "{}", r["notes"]);
    let ops: u64 = r["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| u(&k["ops"]))
        .sum();
    assert_eq!(ops, u(&r["total"]["ops"]));
    let left: Vec<String> = std::fs::read_dir(sb.file("D"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, vec!["precious.txt"]);
    assert_eq!(
        std::fs::read(sb.file("D/precious.txt")).unwrap(),
        b"the user's data"
    );
}

/// `workload --reorder-ranks` is refused with `--shared-file` (every rank already runs in the
/// same directories) and with `--verify` (a rank would check reads of files another rank
/// laid out): one line each, exit 2, nothing created.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_workload_with_reorder_ranks_refuses_shared_file_and_verify() {
    for (flag, why) in [
        ("--shared-file", "--reorder-ranks with --shared-file"),
        ("--verify", "drop --reorder-ranks"),
    ] {
        let sb = Sandbox::new();
        std::fs::create_dir(sb.file("D")).unwrap();
        let line = format!("workload fileserver --dir D --time 1s --reorder-ranks {flag}");
        let o = mpirun(&sb, NP, &common::words(&line));
        let (refusal, err) = refused_in_one_line(&o);
        assert!(refusal.contains(why), "{flag}: {err}");
        assert_eq!(
            std::fs::read_dir(sb.file("D")).unwrap().count(),
            0,
            "{flag}"
        );
    }
}

/// Each rank's thread creates the 3 files of `new` (8 KiB written whole, each) and reads a
/// preallocated 16 KiB file of `pre` whole after each, then runs out of files to create.
const REORDER_FLOW: &str = "set mode quit alldone
define fileset name=pre,path=$dir,entries=4,size=16k,prealloc
define fileset name=new,path=$dir,entries=3,size=8k,prealloc=0
define process name=p,instances=1 { thread name=t,instances=1 {
  flowop createfile name=cr,filesetname=new,fd=1
  flowop writewholefile name=ww,srcfd=1,fd=1,iosize=4k
  flowop closefile name=cl,fd=1
  flowop openfile name=op,filesetname=pre,fd=1
  flowop readwholefile name=rw,fd=1,iosize=4k
  flowop closefile name=cl2,fd=1 } }
run 30
";

/// The (names of the) files under `dir`, sorted.
fn file_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// `workload --reorder-ranks` on 4 ranks, all on this one host (so the shift is 1): each
/// rank lays out its filesets in its own directory, then runs over those of rank (r+1) mod 4
/// in that rank's directory. Each rank's row names that directory and rank; the filesets
/// listed are what each rank laid out (4 files of 16 KiB); the ops are exact (a rank: 3
/// creates, 3 whole writes of 8 KiB, 3 whole reads of 16 KiB); the client-cache note says
/// every rank ran on one host; nothing is left in D (the files a rank created in another's
/// directory included) but the user's file, untouched. With --keep each rank's directory
/// holds its 4 laid-out files and the 3 files the previous rank created there; the next run
/// removes them all, by identity (the rank directories, which that run did not make, stay
/// empty, as without --reorder-ranks).
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_workload_with_reorder_ranks_runs_over_the_next_ranks_filesets() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("flow.f"), REORDER_FLOW).unwrap();
    std::fs::create_dir(sb.file("D")).unwrap();
    std::fs::write(sb.file("D/precious.txt"), b"the user's data").unwrap();
    let line = "workload flow.f --dir D --reorder-ranks";
    let check = |r: &Value| {
        assert_eq!(r["status"], "complete", "{}", r["notes"]);
        assert_eq!(r["distributed"]["layout"], "dir_per_rank");
        assert_eq!(r["distributed"]["reorder_shift"], 1);
        let ranks = r["ranks"].as_array().unwrap();
        assert_eq!(ranks.len(), NP as usize);
        for (i, k) in ranks.iter().enumerate() {
            let from = (i as u64 + 1) % NP;
            assert_eq!(k["data_of_rank"], from, "{k}");
            assert_eq!(k["targets"][0], format!("D/rank-{from:05}"), "{k}");
            // 3 x (cr, ww, cl, op, rw, cl2); 3 x 8 KiB written, 3 x 16 KiB read.
            assert_eq!(u(&k["ops"]), 18, "{k}");
            assert_eq!(u(&k["bytes"]), 3 * 8192 + 3 * 16384, "{k}");
        }
        assert_eq!(u(&r["total"]["ops"]), NP * 18);
        let group = |name: &str| {
            r["groups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["name"] == name)
                .unwrap_or_else(|| panic!("no group {name}"))["stats"]
                .clone()
        };
        assert_eq!(u(&group("cr")["ops"]), NP * 3);
        assert_eq!(u(&group("rw")["ops"]), NP * 3);
        assert_eq!(u(&group("rw")["read_bytes"]), NP * 3 * 16384);
        assert_eq!(u(&group("ww")["write_bytes"]), NP * 3 * 8192);
        // Every rank's filesets, as it laid them out in its own directory.
        let sets = r["workload"]["filesets"].as_array().unwrap();
        assert_eq!(sets.len(), 2 * NP as usize);
        for (i, f) in sets.iter().enumerate() {
            let rank = i / 2;
            let name = if i % 2 == 0 { "pre" } else { "new" };
            assert_eq!(f["root"], format!("D/rank-{rank:05}/{name}"), "{f}");
            assert_eq!(u(&f["files_created"]), if name == "pre" { 4 } else { 0 });
        }
        let notes = r["notes"].to_string();
        assert!(
            notes.contains("client cache: 4 of 4 ranks")
                && notes.contains("every rank ran on one host"),
            "{notes}"
        );
    };
    let r = run_json(&sb, NP, &common::words(line));
    check(&r);
    assert_eq!(file_names(&sb.file("D")), vec!["precious.txt"]);
    let r = run_json(&sb, NP, &common::words(&format!("{line} --keep")));
    check(&r);
    // Kept: each rank's directory has its own 4 files and the previous rank's 3 new ones.
    for rank in 0..NP {
        let d = sb.file(&format!("D/rank-{rank:05}"));
        assert_eq!(file_names(&d.join("pre")).len(), 4, "{}", d.display());
        assert_eq!(
            file_names(&d.join("new")),
            vec!["00000001", "00000002", "00000003"],
            "{}",
            d.display()
        );
    }
    let r = run_json(&sb, NP, &common::words(line));
    check(&r);
    for rank in 0..NP {
        let d = sb.file(&format!("D/rank-{rank:05}"));
        assert!(file_names(&d).is_empty(), "{}", d.display());
        std::fs::remove_dir(d).unwrap();
    }
    assert_eq!(file_names(&sb.file("D")), vec!["precious.txt"]);
    assert_eq!(
        std::fs::read(sb.file("D/precious.txt")).unwrap(),
        b"the user's data"
    );
}

/// A fileset with `reuse`, on a tree every rank shares.
const REUSE_FLOW: &str = "set mode quit alldone
define fileset name=fs,path=$dir,entries=12,dirwidth=4,size=8k,prealloc,reuse
define process name=p,instances=1 { thread name=t,instances=1 {
  flowop openfile name=op,filesetname=fs,fd=1
  flowop readwholefile name=rw,fd=1,iosize=4k
  flowop closefile name=cl,fd=1
  flowop finishoncount name=fin,target=rw,value=6 } }
run 30
";

/// Every file under `dir` (recursively, dot files included), as paths relative to it.
fn all_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// `reuse` with `workload --shared-file` on 4 ranks: a `--keep` run lays the shared tree
/// out (12 files a rank, tagged with its rank, a manifest per rank); the next run reuses it:
/// every rank's 12 files reused, none created, the same files (by inode) as before; that run
/// (without --keep) then removes it all, leaving only the user's file. A file of a rank the
/// run does not have (a tree kept by more ranks) is refused in one line.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_shared_dir_workload_reuses_a_kept_tree_rank_by_rank() {
    use std::os::unix::fs::MetadataExt;
    let sb = Sandbox::new();
    std::fs::write(sb.file("flow.f"), REUSE_FLOW).unwrap();
    std::fs::create_dir(sb.file("D")).unwrap();
    std::fs::write(sb.file("D/precious.txt"), b"the user's data").unwrap();
    let line = "workload flow.f --dir D --shared-file";
    let sets = |r: &Value| -> Vec<(u64, u64)> {
        r["workload"]["filesets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (u(&f["files_created"]), u(&f["reused"])))
            .collect()
    };
    let r = run_json(&sb, NP, &common::words(&format!("{line} --keep")));
    assert_eq!(r["status"], "complete", "{}", r["notes"]);
    assert_eq!(sets(&r), vec![(12, 0); NP as usize]);
    let kept = all_files(&sb.file("D"));
    let inodes: Vec<(String, u64)> = kept
        .iter()
        .filter(|f| !f.starts_with('.') && *f != "precious.txt")
        .map(|f| {
            (
                f.clone(),
                std::fs::metadata(sb.file(&format!("D/{f}"))).unwrap().ino(),
            )
        })
        .collect();
    assert_eq!(inodes.len(), 12 * NP as usize, "{kept:?}");
    for rank in 0..NP {
        assert!(
            kept.contains(&format!(".fs.r{rank:05}.fsbench-manifest")),
            "{kept:?}"
        );
    }
    // The reuse run lays out nothing: the same files, each rank's own.
    let r = run_json(&sb, NP, &common::words(&format!("{line} --keep")));
    assert_eq!(r["status"], "complete", "{}", r["notes"]);
    assert_eq!(sets(&r), vec![(0, 12); NP as usize]);
    assert_eq!(u(&r["total"]["ops"]), NP * 6 * 3, "{}", r["total"]);
    assert_eq!(all_files(&sb.file("D")), kept);
    for (f, ino) in &inodes {
        assert_eq!(
            std::fs::metadata(sb.file(&format!("D/{f}"))).unwrap().ino(),
            *ino,
            "{f}"
        );
    }
    // Fewer ranks than the tree was kept by: refused in one line, nothing touched.
    let o = mpirun(&sb, 2, &common::words(line));
    let (refusal, err) = refused_in_one_line(&o);
    assert!(refusal.contains("holds the entries of rank 2"), "{err}");
    assert_eq!(all_files(&sb.file("D")), kept);
    // Reused again, without --keep: everything fsbench made goes, the user's file stays.
    let r = run_json(&sb, NP, &common::words(line));
    assert_eq!(r["status"], "complete", "{}", r["notes"]);
    assert_eq!(sets(&r), vec![(0, 12); NP as usize]);
    assert_eq!(file_names(&sb.file("D")), vec!["precious.txt"]);
    assert_eq!(
        std::fs::read(sb.file("D/precious.txt")).unwrap(),
        b"the user's data"
    );
}

/// The per-rank rows of a distributed Result: (ops, bytes) of each rank.
fn rank_ops_bytes(r: &Value) -> Vec<(u64, u64)> {
    r["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (u(&x["ops"]), u(&x["bytes"])))
        .collect()
}

/// The stonewall section agrees with the ranks' rows exactly: its bytes and ops are their
/// sums (and the total's), its least and most bytes of a rank are theirs.
fn assert_stonewall_sums(r: &Value) {
    let sw = &r["distributed"]["stonewall"];
    let rows = rank_ops_bytes(r);
    let bytes: Vec<u64> = rows.iter().map(|x| x.1).collect();
    assert_eq!(u(&sw["bytes"]), bytes.iter().sum::<u64>(), "{sw}");
    assert_eq!(u(&sw["ops"]), rows.iter().map(|x| x.0).sum::<u64>(), "{sw}");
    assert_eq!(u(&r["total"]["bytes"]), u(&sw["bytes"]));
    assert_eq!(u(&r["total"]["ops"]), u(&sw["ops"]));
    assert_eq!(u(&sw["min_rank_bytes"]), *bytes.iter().min().unwrap());
    assert_eq!(u(&sw["max_rank_bytes"]), *bytes.iter().max().unwrap());
    let timed = sw["timed_s"].as_f64().unwrap();
    assert!(timed > 0.0, "{sw}");
    let want = u(&sw["bytes"]) as f64 / timed;
    assert!((sw["bytes_per_sec"].as_f64().unwrap() - want).abs() <= want * 1e-9);
}

/// A workload that only stops on its time: two threads open, read, write and close four
/// preallocated files at random (nothing is created or deleted, so it never runs out).
const TIMED_FLOW: &str = "define fileset name=fs,path=$dir,entries=4,size=64k,prealloc
define process name=p,instances=1 { thread name=t,instances=2 {
  flowop openfile name=op,filesetname=fs,fd=1
  flowop read name=rd,fd=1,iosize=4k,random
  flowop write name=wr,fd=1,iosize=4k,random
  flowop closefile name=cl,fd=1 } }
run 30
";

/// `workload --stonewall 1s --time 10s` on 4 ranks: every rank's run is stopped about 1 s
/// after its start (not at 10 s), the run says so, and the Result's stonewall section (mode
/// time, wall at 1 s) sums exactly what each rank's row says it did up to the stop. The
/// whole mpirun ends well before the 10 s of --time; nothing is left in the directory.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_workload_stonewall_at_a_time_stops_every_rank_there() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("timed.f"), TIMED_FLOW).unwrap();
    std::fs::create_dir(sb.file("wl")).unwrap();
    let t0 = std::time::Instant::now();
    let r = run_json(
        &sb,
        NP,
        &common::words("workload timed.f --dir wl --time 10s --stonewall 1s"),
    );
    let took = t0.elapsed().as_secs_f64();
    assert!(
        took < 8.0,
        "mpirun took {took} s: the stonewall did not stop the 10 s run"
    );
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    let run = &r["workload"]["runs"][0];
    assert_eq!(run["stop_reason"], "stopped at the stonewall", "{run}");
    let sw = &r["distributed"]["stonewall"];
    assert_eq!(sw["mode"], "time", "{sw}");
    assert!(sw.get("called_by_rank").is_none(), "{sw}");
    assert!((sw["wall_s"].as_f64().unwrap() - 1.0).abs() < 0.05, "{sw}");
    for (rank, (ops, bytes)) in rank_ops_bytes(&r).into_iter().enumerate() {
        assert!(ops > 0 && bytes > 0, "rank {rank} did nothing");
        let end = r["ranks"][rank]["end_s"].as_f64().unwrap();
        assert!((0.95..2.5).contains(&end), "rank {rank} ended at {end}");
    }
    assert!(run["duration_s"].as_f64().unwrap() < 2.5, "{run}");
    assert_stonewall_sums(&r);
    assert_eq!(std::fs::read_dir(sb.file("wl")).unwrap().count(), 0);
}

/// A thread reads one file whole `$count` times (each a data flowop, paced by --rate-bytes),
/// the fileset reused from an earlier `--keep` run (prealloc=0 on ranks: the file is used at
/// whatever size it has).
const REREAD_FLOW: &str = "set $size=64k
set $pre=0
set $count=8
set mode quit alldone
define fileset name=fs,path=$dir,entries=1,size=$size,prealloc=$pre,reuse
define process name=p,instances=1 { thread name=t,instances=1 {
  flowop openfile name=op,filesetname=fs,fd=1
  flowop readwholefile name=rw,fd=1,iosize=64k
  flowop closefile name=cl,fd=1
  flowop finishoncount name=fin,value=$count,target=rw } }
run 60
";

/// `workload --stonewall first` where one rank's work ends long before the others': each
/// rank rereads one file of its own 8 times at 2 MiB/s (--rate-bytes, per thread), rank 0's
/// file 64 KiB, the others' 4 MiB (each laid out by an earlier one-process run of the same
/// workload with --keep, in the rank's directory). Rank 0 reads its 512 KiB in about 0.25 s
/// and calls the wall; each other rank read its file once (4 MiB at once, then the rate makes
/// it wait 2 s) and is stopped there, long before its 8 reads. The stonewall section names
/// rank 0, its wall is rank 0's end, and it sums exactly what the rows say each rank did;
/// the reused files are removed afterwards.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_workload_stonewall_at_the_first_finish_stops_the_slower_ranks() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("reread.f"), REREAD_FLOW).unwrap();
    for rank in 0..NP {
        let dir = format!("wl/rank-{rank:05}");
        std::fs::create_dir_all(sb.file(&dir)).unwrap();
        let size = if rank == 0 { "64k" } else { "4m" };
        let o = Command::new(env!("CARGO_BIN_EXE_fsbench"))
            .current_dir(sb.path())
            .args(common::words(&format!(
                "workload reread.f --dir {dir} -D size={size} -D pre=100 -D count=1 --keep"
            )))
            .output()
            .unwrap();
        assert!(o.status.success(), "laying out {dir}: {o:?}");
    }
    let r = run_json(
        &sb,
        NP,
        &common::words("workload reread.f --dir wl --rate-bytes 2m --stonewall first"),
    );
    assert_eq!(r["status"], "complete", "{}", r["failures"]);
    let sw = &r["distributed"]["stonewall"];
    assert_eq!(sw["mode"], "first_finish", "{sw}");
    assert_eq!(u(&sw["called_by_rank"]), 0, "{sw}");
    assert_eq!(
        sw["wall_s"].as_f64().unwrap(),
        r["ranks"][0]["end_s"].as_f64().unwrap()
    );
    let rows = rank_ops_bytes(&r);
    // Rank 0: 8 x (open, read whole, close) of 64 KiB. The others: one whole read of their
    // 4 MiB, stopped while the rate held back the second.
    assert_eq!(rows[0], (24, 8 * 65536), "{rows:?}");
    for (rank, row) in rows.iter().enumerate().skip(1) {
        assert_eq!(row.1, 4 << 20, "rank {rank}: {rows:?}");
        assert!(row.0 < 8, "rank {rank}: {rows:?}");
        let end = r["ranks"][rank]["end_s"].as_f64().unwrap();
        assert!(end < 1.8, "rank {rank} stopped at {end}: {sw}");
    }
    let rw = r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "rw")
        .expect("the readwholefile flowop");
    assert_eq!(u(&rw["stats"]["read_bytes"]), 8 * 65536 + 3 * (4 << 20));
    assert_stonewall_sums(&r);
    // Left: the ranks' directories the test made, each empty (the reused files removed).
    for rank in 0..NP {
        let dir = sb.file(&format!("wl/rank-{rank:05}"));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{dir:?}");
    }
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
        assert!(archive > TREE && archive % 32256 == 0, "{name}: {archive}");
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
    std::fs::create_dir(sb.file("d")).unwrap();
    let o = mpirun(
        &sb,
        NP,
        &common::words("suite backup --dir d --scale 0.002 --output res --shared-file"),
    );
    let (refusal, err) = refused_in_one_line(&o);
    assert!(
        refusal.contains("suite study 'backup' (backup)") && refusal.contains("--file-per-rank"),
        "{err}"
    );
    assert!(!sb.file("res").exists());
    assert_eq!(std::fs::read_dir(sb.file("d")).unwrap().count(), 0);
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
    #[cfg(has_fuse)]
    {
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
}

/// A refusal: exit status 2 and exactly one `fsbench` line on stderr (whatever else mpirun
/// printed). Returns that line and the whole stderr (for messages).
fn refused_in_one_line(o: &std::process::Output) -> (String, String) {
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("fsbench")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    (lines[0].to_string(), err)
}
