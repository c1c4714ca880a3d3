//! Workloads on the ranks of a distributed run (issue #16): `workload --verify` (each rank
//! checks the reads of what it wrote; rank 0 sums them, h-mpiopt), a failure on one rank
//! (a flipped bit, a failed thread, a failed run), `workload --shared-file` directories,
//! `--reorder-ranks` and `reuse` (h-wlreorder), and `workload --stonewall` (h-wlstone). The
//! real binary under `mpirun --allow-run-as-root --oversubscribe` on this machine; every
//! figure is checked exactly against what the ranks did. Run with
//! `cargo test --release --features mpi --test mpi_workload -- --test-threads=1`.
#![cfg(feature = "mpi")]

mod common;
mod faultfs;

use common::{
    mpi_refused_in_one_line, mpirun, mpirun_json as run_json, mpirun_result as run_result,
    rank_ops_bytes, u, Sandbox,
};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const NP: u64 = 4;

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
fn flipping_faultfs_on_rank_2(sb: &Sandbox) -> (faultfs::FaultFs, faultfs::BindMount) {
    faultfs_on_rank_2(sb, faultfs::Fault::FlipBit { byte: 100, bit: 2 })
}

/// faultfs bound on rank 2's workload directory `wl/rank-00002`, set to do `fault` to its
/// 15th 3000-byte write.
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
    let sb = Sandbox::new();
    std::fs::write(sb.file("flow.f"), FLOW).unwrap();
    let (fs, _u) = flipping_faultfs_on_rank_2(&sb);
    let (code, r, err) = run_result(&sb, NP, &common::words("workload flow.f --dir wl --verify"));
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

/// A thread of rank 2 fails (its storage answers a write with EIO): the run fails (exit 1)
/// and `failures[]` holds that failure once, naming the rank, not once from the merged
/// threads and again from the rank's own Result.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_fuse)),
    ignore = "SKIPPED: needs mpirun, root and /dev/fuse"
)]
fn a_thread_failed_on_one_rank_is_one_failure_naming_the_rank() {
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
    let sb = Sandbox::new();
    std::fs::write(sb.file("flow.f"), format!("{FLOW}run 30\n")).unwrap();
    let (fs, _u) = flipping_faultfs_on_rank_2(&sb);
    let (code, r, err) = run_result(&sb, NP, &common::words("workload flow.f --dir wl --verify"));
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
    let refusal = mpi_refused_in_one_line(&o);
    assert!(
        refusal.contains("rank 0") && refusal.contains("mine.txt"),
        "{refusal}"
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
        let refusal = mpi_refused_in_one_line(&o);
        assert!(refusal.contains(why), "{flag}: {refusal}");
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
    let refusal = mpi_refused_in_one_line(&o);
    assert!(refusal.contains("holds the entries of rank 2"), "{refusal}");
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
