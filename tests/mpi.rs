//! Distributed runs under mpirun (issue #16): the real binary, built with `--features mpi`,
//! started as 4 ranks on this machine (`mpirun --allow-run-as-root --oversubscribe -np 4`).
//! Every figure is checked exactly against what the ranks wrote: bytes per rank and in total,
//! and the sizes of the files on disk. Run with
//! `cargo test --release --features mpi --test mpi -- --test-threads=1`.
#![cfg(feature = "mpi")]

mod common;
mod faultfs;

use common::{file_len as len, rank_bytes, sweep_records, u, Sandbox};
use serde_json::Value;
use std::process::{Command, Output};
use std::time::Duration;

const NP: u64 = 4;

/// `mpirun -np 4 fsbench ARGS` in the sandbox (`common::mpirun`).
fn mpirun(sb: &Sandbox, args: &[&str]) -> Output {
    common::mpirun(sb, NP, args)
}

/// Run, expect success, and read the Result written with --output.
fn run_json(sb: &Sandbox, args: &[&str]) -> Value {
    common::mpirun_json(sb, NP, args)
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn file_per_rank_moves_exactly_what_each_rank_wrote() {
    let sb = Sandbox::new();
    let size = 2u64 << 20;
    let r = run_json(
        &sb,
        &common::words("run f --rw write --bs 64k --size 2m --file-per-rank --keep"),
    );
    assert_eq!(r["status"], "complete");
    assert_eq!(r["ranks"].as_array().unwrap().len(), NP as usize);
    assert_eq!(rank_bytes(&r), vec![size; NP as usize]);
    assert_eq!(u(&r["total"]["bytes"]), NP * size);
    assert_eq!(u(&r["total"]["write_ops"]), NP * size / 65536);
    assert_eq!(r["users"].as_array().unwrap().len(), NP as usize);
    assert_eq!(r["hosts"].as_array().unwrap().len(), 1);
    let d = &r["distributed"];
    assert_eq!(d["layout"], "file_per_rank");
    // The full figure: all bytes over the first start to the last end, as the total says.
    let span = d["last_end_s"].as_f64().unwrap() - d["first_start_s"].as_f64().unwrap();
    let full = d["full_bytes_per_sec"].as_f64().unwrap();
    assert!(
        (full - (NP * size) as f64 / span).abs() <= full * 1e-9,
        "{d}"
    );
    assert!((r["total"]["bytes_per_sec"].as_f64().unwrap() - full).abs() <= full * 1e-9);
    assert!(d["spread_ratio"].as_f64().unwrap() >= 1.0);
    for rank in 0..NP {
        let f = sb.file(&format!("f.d/rank-{rank:05}/f"));
        assert_eq!(len(&f), size, "{}", f.display());
        assert_eq!(
            r["ranks"][rank as usize]["targets"][0],
            f.to_str()
                .unwrap()
                .replacen(sb.path().to_str().unwrap(), "", 1)[1..]
        );
    }
    // Without --keep: every file and directory the run made is gone again.
    let sb2 = Sandbox::new();
    run_json(
        &sb2,
        &common::words("run g --rw write --bs 64k --size 1m --file-per-rank"),
    );
    assert!(sb2.listing().is_empty(), "{:?}", sb2.listing());
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn shared_file_segmented_and_strided_cover_the_file_once() {
    for layout in ["segmented", "strided"] {
        let sb = Sandbox::new();
        let size = 4u64 << 20;
        let r = run_json(
            &sb,
            &common::words(&format!(
                "run s --rw write --bs 64k --size 4m --shared-file {layout} --keep"
            )),
        );
        assert_eq!(r["status"], "complete", "{layout}");
        assert_eq!(r["distributed"]["layout"], format!("shared_{layout}"));
        assert_eq!(rank_bytes(&r), vec![size / NP; NP as usize], "{layout}");
        assert_eq!(u(&r["total"]["bytes"]), size);
        // Every rank wrote its own part: together exactly the file, no hole, nothing past it.
        assert_eq!(len(&sb.file("s")), size);
        let blocks = std::fs::metadata(sb.file("s")).unwrap();
        assert_eq!(
            std::os::unix::fs::MetadataExt::blocks(&blocks) * 512,
            size,
            "{layout}: holes in the shared file"
        );
        // Read back, each rank the part of another rank (IOR -C).
        let r = run_json(
            &sb,
            &common::words(&format!(
                "run s --rw read --bs 64k --size 4m --shared-file {layout} --reorder-ranks"
            )),
        );
        assert_eq!(u(&r["total"]["read_bytes"]), size);
        assert_eq!(r["distributed"]["reorder_shift"], 1);
        // One host: reordering cannot avoid this host's cache, and the note says so.
        assert!(
            r["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n.as_str().unwrap().contains("client cache")),
            "{}",
            r["notes"]
        );
        // The kept file was not this run's: it stays.
        assert_eq!(len(&sb.file("s")), size);
    }
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn reorder_on_new_files_lays_out_each_ranks_file_and_removes_it() {
    let sb = Sandbox::new();
    let r = run_json(
        &sb,
        &common::words("run f --rw read --bs 64k --size 1m --file-per-rank --reorder-ranks"),
    );
    assert_eq!(r["status"], "complete");
    assert_eq!(rank_bytes(&r), vec![1 << 20; NP as usize]);
    // Rank r read the file of rank r+1.
    assert_eq!(r["ranks"][3]["targets"][0], "f.d/rank-00000/f");
    assert_eq!(r["ranks"][0]["targets"][0], "f.d/rank-00001/f");
    assert_eq!(r["ranks"][3]["data_of_rank"], 0);
    assert_eq!(r["ranks"][0]["data_of_rank"], 1);
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

#[test]
#[cfg_attr(
    any(not(has_mpirun), not(has_root)),
    ignore = "SKIPPED: needs mpirun and root (a UTS namespace per rank)"
)]
fn reorder_reads_another_hosts_data_with_ranks_by_slot_and_round_robin() {
    // Two "hosts": ranks dealt round-robin (h0 h1 h0 h1, mpirun --map-by node) must shift by
    // 1, ranks filled host by host (h0 h0 h1 h1, mpirun's default) by 2; either way every
    // rank reads data another host wrote and no client-cache note is given. (The rule before
    // 2026-11-27, the ranks on rank 0's host, shifted round-robin ranks by 2 onto their own
    // host's data.)
    let sb = Sandbox::new();
    for (host, shift, hosts, sources) in [
        (
            "h$((OMPI_COMM_WORLD_RANK % 2))",
            1,
            ["h0", "h1", "h0", "h1"],
            [1, 2, 3, 0],
        ),
        (
            "h$((OMPI_COMM_WORLD_RANK / 2))",
            2,
            ["h0", "h0", "h1", "h1"],
            [2, 3, 0, 1],
        ),
    ] {
        // Each rank in a UTS namespace of its own, named by the shell expression `host` over
        // OpenMPI's OMPI_COMM_WORLD_RANK, then fsbench (handed to sh as $0 and its args).
        let name_it = format!("hostname {host} && exec \"$0\" \"$@\"");
        let r = common::mpirun_json_via(
            &sb,
            NP,
            &["unshare", "-u", "sh", "-c", &name_it],
            &common::words("run f --rw read --bs 64k --size 1m --file-per-rank --reorder-ranks"),
        );
        assert_eq!(r["status"], "complete", "{host}");
        assert_eq!(r["hosts"].as_array().unwrap().len(), 2, "{host}");
        assert_eq!(r["distributed"]["reorder_shift"], shift, "{host}");
        for rank in 0..NP as usize {
            let row = &r["ranks"][rank];
            assert_eq!(row["host"], hosts[rank], "{host} rank {rank}");
            assert_eq!(row["data_of_rank"], sources[rank], "{host} rank {rank}");
            assert_ne!(hosts[sources[rank]], hosts[rank], "{host} rank {rank}");
        }
        let notes = r["notes"].to_string();
        assert!(!notes.contains("client cache"), "{host}: {notes}");
        assert_eq!(rank_bytes(&r), vec![1 << 20; NP as usize]);
    }
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn stonewall_at_a_time_stops_every_rank_and_counts_what_each_moved() {
    let sb = Sandbox::new();
    // 200 writes/s per rank for 1000 writes (5 s) stopped at 1 s.
    let r = run_json(
        &sb,
        &common::words(
            "run f --rw write --bs 4k --count 1000 --rate-iops 200 --file-per-rank --stonewall 1s --keep",
        ),
    );
    assert_eq!(r["status"], "complete");
    let sw = &r["distributed"]["stonewall"];
    assert_eq!(sw["mode"], "time");
    let bytes = rank_bytes(&r);
    let total: u64 = bytes.iter().sum();
    assert_eq!(u(&sw["bytes"]), total);
    assert_eq!(u(&r["total"]["bytes"]), total);
    assert_eq!(u(&sw["min_rank_bytes"]), *bytes.iter().min().unwrap());
    for (rank, b) in bytes.iter().enumerate() {
        assert!(*b < 1000 * 4096 && *b > 0, "rank {rank} moved {b}");
        // What the Result says each rank moved is what is on disk.
        assert_eq!(len(&sb.file(&format!("f.d/rank-{rank:05}/f"))), *b);
        let end = r["ranks"][rank]["end_s"].as_f64().unwrap();
        assert!((0.9..2.5).contains(&end), "rank {rank} ended at {end}");
    }
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn stonewall_first_finish_is_named_and_consistent() {
    let sb = Sandbox::new();
    let r = run_json(
        &sb,
        &common::words(
            "run f --rw write --bs 4k --count 200 --rate-iops 400 --file-per-rank --stonewall first",
        ),
    );
    assert_eq!(r["status"], "complete");
    let sw = &r["distributed"]["stonewall"];
    assert_eq!(sw["mode"], "first_finish");
    let caller = u(&sw["called_by_rank"]) as usize;
    // The rank that called the wall did all its work; nobody did more.
    assert_eq!(rank_bytes(&r)[caller], 200 * 4096);
    assert_eq!(u(&sw["max_rank_bytes"]), 200 * 4096);
    assert_eq!(u(&sw["bytes"]), rank_bytes(&r).iter().sum::<u64>());
    assert_eq!(
        sw["wall_s"].as_f64().unwrap(),
        r["ranks"][caller]["end_s"].as_f64().unwrap()
    );
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_rank_refused_before_the_start_fails_the_run_naming_it_without_a_hang() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("f.d")).unwrap();
    // Rank 1's directory is taken by a file that is not fsbench's.
    std::fs::write(sb.file("f.d/rank-00001"), b"not a directory").unwrap();
    let o = mpirun(
        &sb,
        &common::words("run f --rw write --bs 64k --size 1m --file-per-rank"),
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("rank 1 on ") && err.contains("rank-00001 exists and is not a directory"),
        "{err}"
    );
    // Nothing the run made is left; the foreign file is untouched.
    assert_eq!(
        std::fs::read(sb.file("f.d/rank-00001")).unwrap(),
        b"not a directory"
    );
    let left: Vec<_> = std::fs::read_dir(sb.file("f.d"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn bad_input_on_rank_0_is_one_line_and_exit_2_everywhere() {
    let sb = Sandbox::new();
    let o = mpirun(
        &sb,
        &common::words("run s --rw write --bs 1m --size 2m --shared-file"),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("fsbench:")).collect();
    assert_eq!(ours.len(), 1, "{err}");
    assert!(ours[0].contains("less than one --bs"), "{err}");
    assert!(sb.listing().is_empty());
}

/// A rank whose file system fails a write mid-run: the whole run fails with that rank's
/// host, file and offset, and the other ranks' work is still counted exactly.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_fuse)),
    ignore = "SKIPPED: needs mpirun, root and /dev/fuse"
)]
fn a_rank_failing_mid_run_fails_the_run_with_its_host_file_and_offset() {
    use faultfs::{Fault, FaultFs, Op, When};
    let fs = FaultFs::mount().unwrap_or_else(|why| common::cannot(&format!("faultfs: {why}")));
    fs.ctl().add(
        Op::Write,
        When::Offset(5 * 65536),
        Fault::Error(libc::EIO),
        Some("f"),
    );
    let sb = Sandbox::new();
    let dir = sb.file("f.d/rank-00002");
    let _u = fs.bind_on(&dir);
    let out = sb.file("result.json");
    let o = mpirun(
        &sb,
        &[
            "run",
            "f",
            "--rw",
            "write",
            "--bs",
            "64k",
            "--size",
            "1m",
            "--file-per-rank",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(r["status"], "failed");
    let f = &r["failures"][0];
    assert!(
        f["message"].as_str().unwrap().starts_with("rank 2 on "),
        "{f}"
    );
    assert!(
        f["path"].as_str().unwrap().ends_with("f.d/rank-00002/f"),
        "{f}"
    );
    assert_eq!(u(&f["offset"]), 5 * 65536);
    assert_eq!(r["ranks"][2]["status"], "failed");
    let bytes = rank_bytes(&r);
    assert_eq!(bytes[2], 5 * 65536, "rank 2 stopped at its error");
    for rank in [0, 1, 3] {
        assert_eq!(bytes[rank], 1 << 20);
    }
    assert_eq!(u(&r["total"]["bytes"]), bytes.iter().sum::<u64>());
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn ctrl_c_on_mpirun_gives_a_partial_result_and_removes_the_files() {
    let sb = Sandbox::new();
    let out = sb.file("result.json");
    let child = Command::new("mpirun")
        .current_dir(sb.path())
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .args(common::words(
            "run f --rw write --bs 4k --count 10000 --rate-iops 200 --file-per-rank --output",
        ))
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: a signal to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert!(!o.status.success());
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(r["status"], "partial");
    let bytes = rank_bytes(&r);
    assert!(
        bytes.iter().all(|&b| b > 0 && b < 10000 * 4096),
        "{bytes:?}"
    );
    assert_eq!(u(&r["total"]["bytes"]), bytes.iter().sum::<u64>());
    std::fs::remove_file(&out).unwrap();
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

/// A sweep under mpirun: every point is one distributed run (file per rank by default),
/// its Result the aggregate of the 4 ranks, stored once, by rank 0.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn sweep_points_each_run_on_every_rank_and_rank_0_alone_stores_them() {
    let sb = Sandbox::new();
    let o = mpirun(
        &sb,
        &common::words("sweep f --rw write --bs 64k,128k --size 1m --output res --keep"),
    );
    assert!(o.status.success(), "{o:?}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    // One table, printed by rank 0 only.
    assert_eq!(stdout.matches("fsbench sweep").count(), 1, "{stdout}");
    let recs = sweep_records(&sb.file("res"));
    assert_eq!(
        recs.len(),
        2,
        "{:?}",
        recs.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    for ((name, r), bs) in recs.iter().zip([65536u64, 131072]) {
        assert_eq!(r["status"], "complete", "{name}");
        assert_eq!(r["job"]["block_size"], bs, "{name}");
        assert_eq!(rank_bytes(r), vec![1 << 20; NP as usize], "{name}");
        assert_eq!(u(&r["total"]["bytes"]), NP << 20, "{name}");
        assert_eq!(u(&r["total"]["write_ops"]), NP * (1 << 20) / bs, "{name}");
        assert_eq!(r["distributed"]["layout"], "file_per_rank");
        assert_eq!(r["hosts"].as_array().unwrap().len(), 1);
    }
    // What is on disk is what the ranks reported: one file of 1 MiB per rank.
    for rank in 0..NP {
        assert_eq!(len(&sb.file(&format!("f.d/rank-{rank:05}/f"))), 1 << 20);
    }
    // Without --keep every rank removes its file and directory when the sweep ends.
    let sb2 = Sandbox::new();
    let o = mpirun(
        &sb2,
        &common::words("sweep f --rw write,read --bs 64k --size 1m --output res"),
    );
    assert!(o.status.success(), "{o:?}");
    let recs = sweep_records(&sb2.file("res"));
    assert_eq!(recs.len(), 2);
    // The read point read the files the write point left (same bytes, no new layout).
    assert_eq!(u(&recs[1].1["total"]["read_bytes"]), NP << 20);
    assert_eq!(sb2.listing(), vec!["res".to_string()]);
}

/// A rank refused before a sweep point starts: the sweep stops with one line naming the
/// rank, exit 2, and no rank waits for ever.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_rank_refusing_a_sweep_point_stops_the_sweep_naming_it_without_a_hang() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("f.d")).unwrap();
    std::fs::write(sb.file("f.d/rank-00002"), b"not a directory").unwrap();
    let o = mpirun(
        &sb,
        &common::words("sweep f --rw write --bs 64k,128k --size 1m --output res"),
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("fsbench:")).collect();
    assert_eq!(ours.len(), 1, "{err}");
    assert!(
        ours[0].contains("rank 2 on ") && ours[0].contains("not a directory"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(sb.file("f.d/rank-00002")).unwrap(),
        b"not a directory"
    );
    let left: Vec<_> = std::fs::read_dir(sb.file("f.d"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("rank-00002")]);
}

/// A rank whose file system fails one write in the first point of a sweep: that point is
/// stored as failed, naming the rank, file and offset, the other ranks' bytes counted
/// exactly; the next point runs on every rank again (the fault fires once); the sweep ends
/// with exit 1 instead of hanging.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_fuse)),
    ignore = "SKIPPED: needs mpirun, root and /dev/fuse"
)]
fn a_rank_failing_in_sweep_points_fails_those_points_naming_it() {
    use faultfs::{Fault, FaultFs, Op, When};
    let fs = FaultFs::mount().unwrap_or_else(|why| common::cannot(&format!("faultfs: {why}")));
    fs.ctl().add(
        Op::Write,
        When::Offset(4 * 65536),
        Fault::Error(libc::EIO),
        Some("f"),
    );
    let sb = Sandbox::new();
    let dir = sb.file("f.d/rank-00002");
    let _u = fs.bind_on(&dir);
    let o = mpirun(
        &sb,
        &common::words("sweep f --rw write --bs 64k,128k --size 1m --output res"),
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let recs = sweep_records(&sb.file("res"));
    assert_eq!(recs.len(), 2);
    {
        let (name, r) = &recs[0];
        assert_eq!(r["status"], "failed", "{name}");
        let f = &r["failures"][0];
        assert!(
            f["message"].as_str().unwrap().starts_with("rank 2 on "),
            "{name}: {f}"
        );
        assert!(f["path"].as_str().unwrap().ends_with("f.d/rank-00002/f"));
        assert_eq!(r["ranks"][2]["status"], "failed");
        let bytes = rank_bytes(r);
        assert_eq!(bytes[2], 4 * 65536, "{name}: rank 2 stopped at its error");
        for rank in [0, 1, 3] {
            assert_eq!(bytes[rank], 1 << 20, "{name}");
        }
        assert_eq!(u(&r["total"]["bytes"]), bytes.iter().sum::<u64>());
    }
    let (name, r) = &recs[1];
    assert_eq!(r["status"], "complete", "{name}");
    assert_eq!(rank_bytes(r), vec![1 << 20; NP as usize], "{name}");
}

/// A small workload with fixed counts: 2 threads per rank, each creating 8 files (8 KiB
/// written whole) and reading a 16 KiB file 8 times.
const WML: &str = "set mode quit alldone
define fileset name=n,path=$dir,entries=32,size=8k,prealloc=0
define fileset name=s,path=$dir,entries=4,size=16k,prealloc
define process name=p,instances=1 { thread name=t,instances=2 {
  flowop createfile name=cr,filesetname=n,fd=1
  flowop writewholefile name=ww,srcfd=1,fd=1,iosize=4k
  flowop closefile name=cl,fd=1
  flowop openfile name=op,filesetname=s,fd=2
  flowop readwholefile name=rw,fd=2,iosize=8k
  flowop closefile name=cl2,fd=2
  flowop finishoncount name=fin,target=cr,value=8 } }
run 30
";

/// A workload under mpirun: every rank runs it in its own directory, and rank 0's Result
/// sums every flowop exactly over the ranks.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn workload_runs_on_every_rank_in_its_own_directory_and_sums_every_flowop() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("e.f"), WML).unwrap();
    std::fs::create_dir(sb.file("wl")).unwrap();
    let r = run_json(&sb, &common::words("workload e.f --dir wl --keep"));
    assert_eq!(r["kind"], "workload");
    assert_eq!(r["status"], "complete", "{}", r["notes"]);
    let threads = 2 * NP;
    let group = |name: &str| {
        r["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap_or_else(|| panic!("no flowop {name}: {}", r["groups"]))["stats"]
            .clone()
    };
    for name in ["cr", "ww", "cl", "op", "rw", "cl2"] {
        assert_eq!(u(&group(name)["ops"]), threads * 8, "{name}");
    }
    assert_eq!(u(&group("ww")["write_bytes"]), threads * 8 * 8192);
    assert_eq!(u(&group("rw")["read_bytes"]), threads * 8 * 16384);
    // Each rank's row, and their sum is the total.
    let ranks = r["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), NP as usize);
    let ops: Vec<u64> = ranks.iter().map(|k| u(&k["ops"])).collect();
    assert_eq!(ops.iter().sum::<u64>(), u(&r["total"]["ops"]));
    assert_eq!(rank_bytes(&r), vec![2 * 8 * (8192 + 16384); NP as usize]);
    let w = &r["workload"];
    assert_eq!(u(&w["runs"][0]["threads"]), threads);
    assert_eq!(r["distributed"]["layout"], "dir_per_rank");
    // Every rank had its own directory, kept with --keep.
    let roots: Vec<&str> = w["filesets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["root"].as_str().unwrap())
        .collect();
    for rank in 0..NP {
        let d = format!("wl/rank-{rank:05}");
        assert!(roots.contains(&format!("{d}/n").as_str()), "{roots:?}");
        assert_eq!(ranks[rank as usize]["targets"][0], d);
        let created = std::fs::read_dir(sb.file(&format!("{d}/n")))
            .unwrap()
            .flatten()
            .count();
        assert!(created > 0, "{d}/n is empty");
        assert!(sb.file(&format!("{d}/s")).is_dir());
    }
    // Without --keep nothing is left in the directory.
    let sb2 = Sandbox::new();
    std::fs::write(sb2.file("e.f"), WML).unwrap();
    std::fs::create_dir(sb2.file("wl")).unwrap();
    let r = run_json(&sb2, &common::words("workload e.f --dir wl"));
    assert_eq!(r["status"], "complete");
    assert_eq!(u(&r["total"]["ops"]), ops.iter().sum::<u64>());
    assert_eq!(std::fs::read_dir(sb2.file("wl")).unwrap().count(), 0);
}

/// A workload sweep and a suite's personality points go the same way: each point is the
/// aggregate of the 4 ranks.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn workload_sweep_points_run_on_every_rank() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("wl")).unwrap();
    let o = mpirun(
        &sb,
        &common::words(
            "sweep wl --workload fileserver -D nthreads=1,2 -D nfiles=20 -D filesize=8k --time 1s --output res",
        ),
    );
    assert!(o.status.success(), "{o:?}");
    let recs = sweep_records(&sb.file("res"));
    assert_eq!(recs.len(), 2);
    for ((name, r), nthreads) in recs.iter().zip([1u64, 2]) {
        assert_eq!(r["kind"], "workload", "{name}");
        let ranks = r["ranks"].as_array().unwrap();
        assert_eq!(ranks.len(), NP as usize, "{name}");
        assert_eq!(
            u(&r["workload"]["runs"][0]["threads"]),
            NP * nthreads,
            "{name}"
        );
        let ops: u64 = ranks.iter().map(|k| u(&k["ops"])).sum();
        assert!(ops > 0, "{name}");
        assert_eq!(ops, u(&r["total"]["ops"]), "{name}");
    }
    assert_eq!(std::fs::read_dir(sb.file("wl")).unwrap().count(), 0);
}

/// A workload with two `run` commands: each run starts at a barrier of its own on every
/// rank and is its own entry of `workload.runs`, its flowops (groups of that run) summed
/// exactly over every rank's threads; each rank's row and the total count both runs.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_workload_with_two_runs_runs_each_on_every_rank() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("e.f"), format!("{WML}run 30\n")).unwrap();
    std::fs::create_dir(sb.file("wl")).unwrap();
    let r = run_json(&sb, &common::words("workload e.f --dir wl"));
    assert_eq!(r["status"], "complete", "{}", r["notes"]);
    let threads = 2 * NP;
    let runs = r["workload"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    // Per thread and run: 8 files of 8 KiB written, 8 reads of a 16 KiB file.
    let per_thread = 8 * (8192 + 16384);
    for (k, run) in runs.iter().enumerate() {
        let number = k as u64 + 1;
        assert_eq!(u(&run["threads"]), threads, "run {number}");
        assert_eq!(u(&run["processes"]), NP, "run {number}");
        assert_eq!(
            u(&run["summary"]["bytes"]),
            threads * per_thread,
            "run {number}"
        );
        let group = |name: &str| {
            r["groups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["name"] == name && u(&g["run"]) == number)
                .unwrap_or_else(|| panic!("no flowop {name} in run {number}"))["stats"]
                .clone()
        };
        for name in ["cr", "ww", "cl", "op", "rw", "cl2"] {
            assert_eq!(
                u(&group(name)["ops"]),
                threads * 8,
                "{name} in run {number}"
            );
        }
        assert_eq!(u(&group("ww")["write_bytes"]), threads * 8 * 8192);
        assert_eq!(u(&group("rw")["read_bytes"]), threads * 8 * 16384);
    }
    assert_eq!(u(&r["total"]["bytes"]), 2 * threads * per_thread);
    assert_eq!(rank_bytes(&r), vec![2 * 2 * per_thread; NP as usize]);
    for k in r["ranks"].as_array().unwrap() {
        assert!(k["end_s"].as_f64().unwrap() >= k["start_s"].as_f64().unwrap());
    }
    assert_eq!(std::fs::read_dir(sb.file("wl")).unwrap().count(), 0);
}

/// A suite under mpirun, with `run`'s layout flags: every point is one distributed run; with
/// `--shared-file` the 4 ranks share each point's file of --size bytes, a quarter each.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn suite_points_run_on_every_rank_with_the_layout_flags() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("tiny.toml"),
        r#"name = "tiny"
title = "Two write points"
source = "none"
description = "a test suite"
default_scale = 1

[[study]]
id = "w"
title = "Writes by I/O size"
settings = ["rw=write", "size=512k"]
table = { rows = ["bs"], metrics = ["kb_per_s"] }
[[study.axis]]
name = "bs"
values = ["64k", "128k"]
"#,
    )
    .unwrap();
    std::fs::create_dir(sb.file("d")).unwrap();
    let o = mpirun(
        &sb,
        &common::words("suite tiny.toml --dir d --output res --shared-file --keep"),
    );
    assert!(o.status.success(), "{o:?}");
    let mut names: Vec<String> = std::fs::read_dir(sb.file("res"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("w-"))
        .collect();
    names.sort();
    assert_eq!(names, ["w-0000-bs-64k.json", "w-0001-bs-128k.json"]);
    for n in &names {
        let r: Value =
            serde_json::from_str(&std::fs::read_to_string(sb.file(&format!("res/{n}"))).unwrap())
                .unwrap();
        assert_eq!(r["status"], "complete", "{n}");
        assert_eq!(r["distributed"]["layout"], "shared_segmented", "{n}");
        assert_eq!(rank_bytes(&r), vec![512 * 1024 / NP; NP as usize], "{n}");
        assert_eq!(u(&r["total"]["bytes"]), 512 * 1024, "{n}");
    }
    assert_eq!(len(&sb.file("d/fsbench-w.dat")), 512 * 1024);
    // Without --keep the shared file goes when the suite ends.
    let sb2 = Sandbox::new();
    std::fs::copy(sb.file("tiny.toml"), sb2.file("tiny.toml")).unwrap();
    std::fs::create_dir(sb2.file("d")).unwrap();
    let o = mpirun(&sb2, &common::words("suite tiny.toml --dir d --output res"));
    assert!(o.status.success(), "{o:?}");
    assert_eq!(std::fs::read_dir(sb2.file("d")).unwrap().count(), 0);
}

/// vxbench's command line under mpirun: the Job runs on every rank (a file each) and rank 0
/// prints the aggregate once.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn vx_runs_on_every_rank_and_rank_0_prints_the_aggregate() {
    let sb = Sandbox::new();
    let o = mpirun(
        &sb,
        &common::words("vx -w write -i iosize=64k,iocount=16 f"),
    );
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("ranks: 4 on ").count(), 1, "{out}");
    assert!(
        out.contains(&format!(
            "ops: {} (0 read, {} write), {} bytes",
            NP * 16,
            NP * 16,
            NP * 16 * 65536
        )),
        "{out}"
    );
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

/// `quick` under mpirun: every test of the battery runs on every rank (a scratch file each),
/// rank 0 prints the table and stores one aggregated Result per test, and every rank removes
/// its scratch file.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn quick_runs_every_test_on_every_rank() {
    let sb = Sandbox::new();
    let o = mpirun(
        &sb,
        &common::words(
            "quick --size 4m --time 200ms --warmup 0 --repeat 1 --no-extras --output q.json",
        ),
    );
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    // One table, from rank 0 alone.
    assert_eq!(out.matches("fsbench quick").count(), 1, "{out}");
    assert!(
        out.contains("on 4 MPI ranks, a 4.00 MiB file each"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("q.json")).unwrap()).unwrap();
    let runs = v.as_array().expect("an array of Results");
    assert_eq!(runs.len(), 8, "the standard battery: {v}");
    for r in runs {
        assert_eq!(r["status"], "complete", "{r}");
        let per_rank = rank_bytes(r);
        assert_eq!(per_rank.len() as u64, NP, "{r}");
        assert_eq!(per_rank.iter().sum::<u64>(), u(&r["total"]["bytes"]), "{r}");
        assert!(per_rank.iter().all(|b| *b > 0), "{r}");
    }
    // Only the result is left: every rank removed its scratch file and directory.
    assert_eq!(
        sb.listing(),
        vec!["q.json".to_string()],
        "{:?}",
        sb.listing()
    );
}

/// A sweep under mpirun with `--stonewall 1s`: every point is stopped at its own wall, the
/// second as much as the first. The stop of the first point's wall is taken back once its
/// workers are over (before, it stayed set and every later point stopped at its first I/O:
/// 1 op per rank, ending at 0 s).
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_sweep_stonewall_stops_each_point_at_its_own_wall() {
    let sb = Sandbox::new();
    let o = mpirun(
        &sb,
        &common::words(
            "sweep f --rw write --bs 4k,8k --size 64m --time 5s --stonewall 1s --output res --progress never",
        ),
    );
    assert!(o.status.success(), "{o:?}");
    let recs = sweep_records(&sb.file("res"));
    assert_eq!(recs.len(), 2);
    for (name, r) in &recs {
        let wall = &r["distributed"]["stonewall"];
        assert_eq!(wall["mode"], "time", "{name}");
        assert_eq!(u(&wall["bytes"]), u(&r["total"]["bytes"]), "{name}");
        for row in r["ranks"].as_array().unwrap() {
            let end = row["end_s"].as_f64().unwrap();
            // Stopped at the wall: after half of it (not at its first I/O), long before --time.
            assert!(end > 0.5 && end < 4.0, "{name}: {row}");
            assert!(u(&row["ops"]) > 1, "{name}: {row}");
        }
    }
}

/// Ranks held to one CPU each (as mpirun's default binding does, here made certain with
/// `taskset -c 0` as the launcher) that run 2 worker threads each: the Result names it once
/// (`cpu_binding`, per rank: 2 threads on 1 of the host's CPUs) and records both CPU counts;
/// one thread per rank is silent.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_cpus2)),
    ignore = "SKIPPED: needs mpirun (openmpi-bin) and at least 2 CPUs online"
)]
fn ranks_held_to_fewer_cpus_than_their_threads_are_named() {
    let sb = Sandbox::new();
    let line = "run f --rw write --bs 4k --size 4m --threads 2 --fsync --file-per-rank";
    let r = common::mpirun_json_via(&sb, 2, &["taskset", "-c", "0"], &common::words(line));
    assert_eq!(r["environment"]["cpus"], 1, "{}", r["environment"]);
    let online = r["environment"]["cpus_online"].as_u64().unwrap();
    assert!(online >= 2, "{}", r["environment"]);
    let found: Vec<&Value> = r["explain"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["check"] == "cpu_binding")
        .collect();
    assert_eq!(found.len(), 1, "{}", r["explain"]);
    let e = found[0];
    assert_eq!(e["evidence"]["threads_per_process"], 2, "{e}");
    assert_eq!(e["evidence"]["processes"], 2, "{e}");
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.starts_with("each rank could run on only 1 of the host's")
            && msg.contains("--bind-to none"),
        "{msg}"
    );
    let r = common::mpirun_json_via(
        &sb,
        2,
        &["taskset", "-c", "0"],
        &common::words("run f --rw write --bs 4k --size 4m --fsync --file-per-rank"),
    );
    let checks: Vec<&str> = r["explain"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["check"].as_str()).collect())
        .unwrap_or_default();
    assert!(!checks.contains(&"cpu_binding"), "{checks:?}");
}
