//! Mixed I/O sizes (`--bssplit`, `--block-align`) and trims (`--rw trim|randtrim|trimwrite`)
//! through the binary: the sizes the I/Os took, where they went (the trace), and what a trim
//! leaves in the file (its allocated blocks and FIEMAP extents).

mod common;
use common::{words, LoopDevice, Sandbox};
use serde_json::Value;
use std::os::unix::fs::MetadataExt;

/// The trace's data records as (op, offset, len).
fn trace_ops(sb: &Sandbox, name: &str) -> Vec<(String, u64, u64)> {
    let text = std::fs::read_to_string(sb.file(name)).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (op, off, len) = (col("op"), col("offset"), col("len"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[op].to_string(),
                f[off].parse().unwrap(),
                f[len].parse().unwrap(),
            )
        })
        .collect()
}

/// The `by_size` entries of the total as (size, ops, read_ops, write_ops, bytes).
fn by_size(r: &Value) -> Vec<(u64, u64, u64, u64, u64)> {
    r["total"]["by_size"]
        .as_array()
        .expect("by_size in the total")
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_u64().unwrap();
            (
                n("block_size_bytes"),
                n("ops"),
                n("read_ops"),
                n("write_ops"),
                n("bytes"),
            )
        })
        .collect()
}

#[test]
fn the_split_decides_each_io_size_and_the_result_splits_by_size() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run --rw randread --bssplit 4k/60:64k/30:1m/10 --size 16m --count 4000 --seed 7 --format json f.dat",
    ));
    let t = &r["total"];
    let ops = t["ops"].as_u64().unwrap();
    assert_eq!(ops, 4000);
    let sizes = by_size(&r);
    assert_eq!(
        sizes.iter().map(|s| s.0).collect::<Vec<_>>(),
        vec![4096, 65536, 1 << 20]
    );
    for ((size, n, reads, writes, bytes), share) in sizes.iter().zip([0.60, 0.30, 0.10]) {
        let got = *n as f64 / ops as f64;
        assert!(
            (got - share).abs() < 0.03,
            "{size}: {got} of the I/Os, want {share}"
        );
        assert_eq!((*reads, *writes), (*n, 0));
        assert_eq!(*bytes, n * size, "every {size} I/O moved {size} bytes");
    }
    // Bytes per op: the split's mean, 0.6 x 4k + 0.3 x 64k + 0.1 x 1m.
    let per_op = t["bytes"].as_u64().unwrap() as f64 / ops as f64;
    let mean = 0.6 * 4096.0 + 0.3 * 65536.0 + 0.1 * 1048576.0;
    assert!((per_op / mean - 1.0).abs() < 0.12, "{per_op} vs {mean}");
    let total_bytes: u64 = sizes.iter().map(|s| s.4).sum();
    assert_eq!(total_bytes, t["bytes"].as_u64().unwrap());
    // Each class has a latency of its own, and together they hold every I/O.
    let counts: u64 = t["by_size"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["lat_ns"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counts, ops);
    assert_eq!(r["job"]["bssplit"], "4k/60:64k/30:1m/10");
}

#[test]
fn each_direction_takes_its_own_list_and_offsets_are_aligned() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run --rw randrw --bssplit 4k/50:8k/50,64k/100 --size 8m --count 1500 --seed 3 --trace t.csv f.dat",
    ));
    let sizes = by_size(&r);
    let get = |s: u64| *sizes.iter().find(|c| c.0 == s).unwrap();
    assert_eq!(get(4096).3 + get(8192).3, 0, "reads alone are 4k and 8k");
    assert_eq!(get(65536).2, 0, "writes alone are 64k");
    let reads = get(4096).2 + get(8192).2;
    assert!((600..900).contains(&reads), "{reads} reads of 1500 at 50 %");
    let split = get(4096).2 as f64 / reads as f64;
    assert!((split - 0.5).abs() < 0.06, "{split}");
    let trace = trace_ops(&sb, "t.csv");
    assert_eq!(trace.len(), 1500);
    for (op, off, len) in &trace {
        assert_eq!(
            off % 4096,
            0,
            "{op} at {off} is not aligned to the smallest size"
        );
        assert!(off + len <= 8 << 20, "{op} at {off} + {len} passes the end");
        match op.as_str() {
            "read" => assert!(*len == 4096 || *len == 8192, "read of {len}"),
            "write" => assert_eq!(*len, 65536),
            other => panic!("{other} in a randrw trace"),
        }
    }
    // --block-align: every offset a multiple of it.
    let _ = sb.run_json(&words(
        "run --rw randread --bssplit 4k/50:8k/50 --block-align 64k --size 8m --count 500 --trace a.csv f.dat",
    ));
    let trace = trace_ops(&sb, "a.csv");
    assert_eq!(trace.len(), 500);
    assert!(trace.iter().all(|(_, off, _)| off % 65536 == 0));
}

#[test]
fn the_same_seed_draws_the_same_sizes_at_the_same_offsets() {
    let sb = Sandbox::new();
    let run = |trace: &str, seed: &str| {
        sb.run_json(&words(&format!(
            "run --rw randread --bssplit 4k/70:32k/30 --size 4m --count 300 --seed {seed} --trace {trace} f.dat"
        )));
        trace_ops(&sb, trace)
    };
    let a = run("a.csv", "11");
    let b = run("b.csv", "11");
    let c = run("c.csv", "12");
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn a_sequential_split_covers_the_file_once_without_a_count() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run --rw write --bssplit 4k/50:64k/50 --size 1m --trace t.csv f.dat",
    ));
    let trace = trace_ops(&sb, "t.csv");
    // Back to back from 0, stopping before the next I/O would pass the end.
    let mut at = 0;
    for (_, off, len) in &trace {
        assert_eq!(*off, at);
        at += len;
    }
    assert!(at <= 1 << 20 && at + 65536 > 1 << 20, "{at}");
    assert_eq!(r["total"]["write_bytes"].as_u64().unwrap(), at);
}

#[test]
fn a_job_file_takes_the_split_and_the_alignment() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("j.toml"),
        "targets = [\"f.dat\"]\naccess = \"randread\"\nbssplit = \"4k/50:16k/50\"\nblock_align = 16384\nfile_size = 1048576\nio_count = 200\n",
    )
    .unwrap();
    let r = sb.run_json(&words("run j.toml --trace t.csv"));
    assert_eq!(
        by_size(&r).iter().map(|s| s.0).collect::<Vec<_>>(),
        vec![4096, 16384]
    );
    assert!(trace_ops(&sb, "t.csv")
        .iter()
        .all(|(_, off, _)| off % 16384 == 0));
    std::fs::write(
        sb.file("bad.toml"),
        "targets = [\"f.dat\"]\nbssplit = \"4k/50:16k/40\"\nio_count = 2\n",
    )
    .unwrap();
    let o = sb.cmd(&["run", "bad.toml"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("add up to 90, not 100"));
}

#[test]
fn a_malformed_split_is_refused_in_one_line() {
    let sb = Sandbox::new();
    for (split, extra, want) in [
        ("4k/60:64k/30", "", "add up to 90, not 100"),
        ("0/100", "", "size 0 in '0/100'"),
        ("4q/100", "", "bad --bssplit '4q'"),
        ("8m/100", "", "smaller than one I/O of 8388608 bytes"),
        ("4k/100", "--block-align 0", "bad --block-align 0"),
        ("4k/100", "--verify", "drop --bssplit"),
        (
            "4k/50:8k/50",
            "--dedupe 20",
            "--dedupe repeats whole blocks of one size",
        ),
    ] {
        let line =
            format!("run --rw randwrite --bssplit {split} --size 4m --count 10 {extra} f.dat");
        let o = sb.cmd(&words(&line)).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{line}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{line}: {err}");
        assert!(err.contains(want), "{line}: {err}");
    }
    // An existing file smaller than the largest I/O.
    std::fs::write(sb.file("small.dat"), vec![1u8; 8192]).unwrap();
    let o = sb
        .cmd(&words(
            "run --rw randread --bssplit 4k/50:64k/50 --count 4 small.dat",
        ))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("less than one I/O of 65536"));
    assert_eq!(sb.listing(), vec!["small.dat"]);
    // Trims write no data to shape, and check nothing to verify.
    for (rw, extra, want) in [
        (
            "randtrim",
            "--buffer-compress 50",
            "a randtrim run writes nothing",
        ),
        ("randtrim", "--verify", "--rw randtrim discards blocks"),
        ("trim", "--append", "--rw trim trims at chosen offsets"),
    ] {
        let line = format!("run --rw {rw} --size 1m --count 4 {extra} t.dat");
        let o = sb.cmd(&words(&line)).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{line}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(want), "{line}");
    }
    let o = sb
        .cmd(&words(
            "run --engine uring --qd 4 --rw trimwrite --size 1m t.dat",
        ))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("drop --qd 4"));
    assert_eq!(sb.listing(), vec!["small.dat"]);
}

/// Allocated bytes and the FIEMAP extents' bytes of a file.
fn allocation(sb: &Sandbox, name: &str) -> (u64, u64) {
    let f = std::fs::File::open(sb.file(name)).unwrap();
    let blocks = f.metadata().unwrap().blocks() * 512;
    let mapped = fsbench::probe::fiemap::extents(&f)
        .unwrap()
        .iter()
        .map(|e| e.length)
        .sum();
    (blocks, mapped)
}

#[test]
#[cfg_attr(
    not(has_tmp_fiemap),
    ignore = "SKIPPED: the temp dir's file system does not answer FIEMAP"
)]
fn randtrim_punches_holes_in_a_written_file() {
    let sb = Sandbox::new();
    sb.run_json(&words("run --rw write --bs 64k --size 4m --keep f.dat"));
    let (before, mapped_before) = allocation(&sb, "f.dat");
    assert!(before >= 4 << 20 && mapped_before >= 4 << 20);
    let r = sb.run_json(&words(
        "run --rw randtrim --bs 64k --count 24 --random-map --keep f.dat",
    ));
    let t = &r["total"];
    assert_eq!(t["trim"]["ops"], 24);
    assert_eq!(t["trim_ops"], 24);
    assert_eq!(t["trim"]["bytes"].as_u64().unwrap(), 24 * 65536);
    assert_eq!(t["read_ops"], 0);
    assert_eq!(t["write_ops"], 0);
    assert_eq!(t["trim"]["lat_ns"]["count"], 24);
    assert_eq!(t["syscalls"]["fallocate"], 24);
    let (after, mapped_after) = allocation(&sb, "f.dat");
    // 24 distinct 64k blocks (a permutation) unmapped, the size kept; the allocation drops
    // by as much, less what the file system's own extent tree may take for the holes.
    assert_eq!(mapped_before - mapped_after, 24 * 65536);
    let freed = before - after;
    assert!(
        (23 * 65536..=24 * 65536).contains(&freed),
        "{before} -> {after}"
    );
    assert_eq!(std::fs::metadata(sb.file("f.dat")).unwrap().len(), 4 << 20);
    // The text report shows the trims as their own direction.
    let o = sb
        .cmd(&words("run --rw trim --bs 64k --count 4 --keep f.dat"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("  trim:") && text.contains("4 trim)"),
        "{text}"
    );
}

#[test]
#[cfg_attr(
    not(has_tmp_fiemap),
    ignore = "SKIPPED: the temp dir's file system does not answer FIEMAP"
)]
fn trimwrite_trims_each_block_then_writes_it() {
    let sb = Sandbox::new();
    sb.run_json(&words("run --rw write --bs 64k --size 2m --keep f.dat"));
    let (before, _) = allocation(&sb, "f.dat");
    let r = sb.run_json(&words(
        "run --rw trimwrite --bs 64k --count 16 --trace t.csv --keep f.dat",
    ));
    let t = &r["total"];
    assert_eq!(
        (t["trim_ops"].as_u64(), t["write_ops"].as_u64()),
        (Some(16), Some(16))
    );
    let trace = trace_ops(&sb, "t.csv");
    assert_eq!(trace.len(), 32);
    for (i, pair) in trace.chunks(2).enumerate() {
        assert_eq!(pair[0].0, "trim");
        assert_eq!(pair[1].0, "write");
        assert_eq!((pair[0].1, pair[0].2), (pair[1].1, pair[1].2), "pair {i}");
        assert_eq!(pair[0].1, i as u64 * 65536, "sequential");
    }
    // Every trimmed block was written again: nothing is left unallocated.
    assert_eq!(allocation(&sb, "f.dat").0, before);
}

#[test]
fn the_null_engine_completes_trims_without_a_file() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run --engine null --rw randtrim --bssplit 4k/50:8k/50 --size 1m --count 200 f.dat",
    ));
    assert_eq!(r["total"]["trim_ops"], 200);
    assert_eq!(by_size(&r).len(), 2);
    assert!(sb.listing().iter().all(|f| f != "f.dat"));
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn the_uring_engine_trims_through_the_ring() {
    let sb = Sandbox::new();
    sb.run_json(&words("run --rw write --bs 64k --size 2m --keep f.dat"));
    let (before, _) = allocation(&sb, "f.dat");
    let r = sb.run_json(&words(
        "run --engine uring --qd 4 --rw trim --bs 64k --count 8 --keep f.dat",
    ));
    assert_eq!(r["total"]["trim"]["ops"], 8);
    assert_eq!(r["total"]["trim"]["bytes"].as_u64().unwrap(), 8 * 65536);
    let (_, mapped) = allocation(&sb, "f.dat");
    assert!(before >= 2 << 20);
    assert_eq!(mapped, (2 << 20) - 8 * 65536);
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4"
)]
fn a_block_device_is_trimmed_by_discard_under_the_device_rules() {
    if !common::can_use_loop_devices() {
        common::cannot("loop device tests need root and losetup");
    }
    let sb = Sandbox::new();
    let Some(lo) = LoopDevice::new(sb.path(), 64) else {
        common::cannot("losetup could not attach a loop device");
    };
    let dev = lo.dev.to_str().unwrap().to_string();
    let backing = || std::fs::metadata(&lo.backing).unwrap().blocks() * 512;
    // A blank device may be written and trimmed; its discards free the backing file's blocks.
    sb.run_json(&["run", "--rw", "write", "--bs", "1m", "--size", "8m", &dev]);
    let before = backing();
    assert!(before >= 8 << 20, "{before}");
    let r = sb.run_json(&["run", "--rw", "trim", "--bs", "1m", "--count", "4", &dev]);
    assert_eq!(r["total"]["trim"]["ops"], 4);
    assert_eq!(
        r["total"]["syscalls"]["other"], 4,
        "one BLKDISCARD per trim"
    );
    assert_eq!(r["total"]["syscalls"]["fallocate"], 0);
    let after = backing();
    assert_eq!(before - after, 4 << 20, "{before} -> {after}");
    // A device with a file system: a trim is refused as a write is, unless --force.
    let mk = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F", &dev])
        .status();
    assert!(mk.is_ok_and(|s| s.success()));
    let o = sb
        .cmd(&[
            "run", "--rw", "randtrim", "--bs", "64k", "--count", "4", &dev,
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("refusing to write to block device"), "{err}");
    let o = std::process::Command::new("blkid")
        .args(["-p", "-s", "TYPE", "-o", "value", &dev])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "ext4",
        "untouched"
    );
}
