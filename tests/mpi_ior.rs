//! `fsbench ior` on 4 MPI ranks of this machine: the shared file is 4 x b x s bytes laid out
//! segmented (-s 1) or strided (-b equal to -t), -F gives each rank a file of b x s, and -C
//! makes the read phase read the next rank's data (one host: a shift of 1) while the write
//! phase writes in place. Run with
//! `cargo test --release --features mpi --test mpi_ior -- --test-threads=1`.
#![cfg(feature = "mpi")]

mod common;

use common::{file_len, mpi_refused_in_one_line, rank_bytes, u, Sandbox};
use serde_json::Value;

const NP: u64 = 4;

/// `mpirun -np 4 fsbench ior LINE --output r.json`: every Result (write, then read).
fn ior(sb: &Sandbox, line: &str) -> Vec<Value> {
    let mut args = vec!["ior"];
    args.extend(common::words(line));
    match common::mpirun_json(sb, NP, &args) {
        Value::Array(v) => v,
        one => vec![one],
    }
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_shared_file_holds_every_ranks_b_times_s() {
    for (line, layout) in [
        ("-b 256k -t 64k -s 1", "shared_segmented"),
        ("-b 64k -t 64k -s 4", "shared_strided"),
    ] {
        let sb = Sandbox::new();
        let r = ior(&sb, &format!("-w -r -k -o s {line}"));
        assert_eq!(r.len(), 2, "{line}");
        for x in &r {
            assert_eq!(x["distributed"]["layout"], layout, "{line}");
            assert_eq!(rank_bytes(x), vec![256 << 10; NP as usize], "{line}");
        }
        assert_eq!(u(&r[0]["total"]["write_bytes"]), NP * (256 << 10));
        assert_eq!(u(&r[1]["total"]["read_bytes"]), NP * (256 << 10));
        assert_eq!(file_len(&sb.file("s")), NP * (256 << 10), "{line}");
    }
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn file_per_process_makes_a_file_per_rank() {
    let sb = Sandbox::new();
    let r = ior(&sb, "-w -F -k -b 256k -t 64k -s 2 -o f");
    assert_eq!(r[0]["distributed"]["layout"], "file_per_rank");
    for rank in 0..NP {
        let f = sb.file(&format!("f.d/rank-{rank:05}/f"));
        assert_eq!(file_len(&f), 512 << 10, "{}", f.display());
    }
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn reorder_reads_the_next_ranks_data_and_writes_in_place() {
    let sb = Sandbox::new();
    let r = ior(&sb, "-w -r -F -C -b 256k -t 64k -o f");
    assert_eq!(r.len(), 2);
    let (w, rd) = (&r[0], &r[1]);
    // The write: every rank its own file.
    assert!(
        w["distributed"]["reorder_shift"].is_null(),
        "{}",
        w["distributed"]
    );
    for (rank, row) in w["ranks"].as_array().unwrap().iter().enumerate() {
        assert!(row["data_of_rank"].is_null(), "{row}");
        let mine = format!("f.d/rank-{rank:05}/f");
        assert!(
            row["targets"][0].as_str().unwrap().ends_with(&mine),
            "{row}"
        );
    }
    // The read: all ranks on one host, so the shift is 1: rank r reads rank r+1's file.
    assert_eq!(rd["distributed"]["reorder_shift"], 1);
    for (rank, row) in rd["ranks"].as_array().unwrap().iter().enumerate() {
        let src = (rank as u64 + 1) % NP;
        assert_eq!(u(&row["data_of_rank"]), src, "{row}");
        let theirs = format!("f.d/rank-{src:05}/f");
        assert!(
            row["targets"][0].as_str().unwrap().ends_with(&theirs),
            "{row}"
        );
    }
    assert_eq!(u(&rd["total"]["read_bytes"]), NP * (256 << 10));
    // Without -k every rank's file and directory is removed.
    assert!(!sb.file("f.d").exists(), "{:?}", sb.listing());
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn layouts_fsbench_has_not_are_refused_in_one_line() {
    for (line, want) in [
        ("ior -w -b 1m -t 64k -s 2 -o s", "shared layouts"),
        ("ior -w -a MMAP -b 1m -t 64k -o s", "add -F"),
    ] {
        let sb = Sandbox::new();
        let args = common::words(line);
        let refused = mpi_refused_in_one_line(&common::mpirun(&sb, NP, &args));
        assert!(refused.contains(want), "{line}: {refused}");
        assert!(sb.listing().is_empty(), "{:?}", sb.listing());
    }
}
