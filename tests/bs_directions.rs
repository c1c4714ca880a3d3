//! Per-direction block sizes (`--bs READS,WRITES[,TRIMS]`) and size ranges (`--bsrange`)
//! through the binary: the sizes the I/Os took, the per-size figures, job files, sweeps
//! and the refusals.

mod common;
use common::{words, Sandbox};
use serde_json::Value;

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

/// The `by_size` entries of the total as (size, read_ops, write_ops).
fn by_size(r: &Value) -> Vec<(u64, u64, u64)> {
    r["total"]["by_size"]
        .as_array()
        .expect("by_size in the total")
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_u64().unwrap();
            (n("block_size_bytes"), n("read_ops"), n("write_ops"))
        })
        .collect()
}

fn per_op(d: &Value) -> f64 {
    d["bytes"].as_u64().unwrap() as f64 / d["ops"].as_u64().unwrap() as f64
}

#[test]
fn each_direction_takes_its_own_block_size() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run --rw randrw --bs 4k,64k --size 8m --count 400 --seed 5 --trace t.csv f.dat",
    ));
    let t = &r["total"];
    assert!(t["read"]["ops"].as_u64().unwrap() > 100);
    assert!(t["write"]["ops"].as_u64().unwrap() > 100);
    assert_eq!(per_op(&t["read"]), 4096.0);
    assert_eq!(per_op(&t["write"]), 65536.0);
    let sizes = by_size(&r);
    assert_eq!(sizes.len(), 2, "{sizes:?}");
    assert_eq!((sizes[0].0, sizes[0].2), (4096, 0), "4k are reads alone");
    assert_eq!((sizes[1].0, sizes[1].1), (65536, 0), "64k are writes alone");
    for (op, _, len) in trace_ops(&sb, "t.csv") {
        assert_eq!(len, if op == "read" { 4096 } else { 65536 }, "{op}");
    }
    assert_eq!(r["job"]["block_sizes"], "4096,65536");
}

#[test]
fn a_range_draws_multiples_of_its_start_uniformly() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run --rw randread --bsrange 4k-16k --size 8m --count 4000 --seed 9 --trace t.csv f.dat",
    ));
    let sizes = by_size(&r);
    assert_eq!(
        sizes.iter().map(|s| s.0).collect::<Vec<_>>(),
        vec![4096, 8192, 12288, 16384]
    );
    let ops = r["total"]["ops"].as_u64().unwrap();
    assert_eq!(ops, 4000);
    for (size, reads, _) in &sizes {
        let share = *reads as f64 / ops as f64;
        assert!((share - 0.25).abs() < 0.04, "{size}: {share}");
    }
    let mean = per_op(&r["total"]);
    assert!((mean / 10240.0 - 1.0).abs() < 0.1, "mean {mean}");
    let trace = trace_ops(&sb, "t.csv");
    assert_eq!(trace.len(), 4000);
    for (_, off, len) in &trace {
        assert!((4096..=16384).contains(len) && len % 4096 == 0, "{len}");
        assert!(off + len <= 8 << 20, "{off}+{len}");
    }
    assert_eq!(r["job"]["bsrange"], "4096-16384");
    // Reproducible with the seed.
    sb.run_json(&words(
        "run --rw randread --bsrange 4k-16k --size 8m --count 4000 --seed 9 --trace u.csv f.dat",
    ));
    assert_eq!(trace, trace_ops(&sb, "u.csv"));
}

#[test]
fn a_range_steps_by_the_alignment_and_per_direction() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run --rw randrw --bsrange 4k-32k,64k-128k --block-align 16k --size 8m --count 600 --seed 2 f.dat",
    ));
    let sizes = by_size(&r);
    let reads: Vec<u64> = sizes.iter().filter(|s| s.1 > 0).map(|s| s.0).collect();
    let writes: Vec<u64> = sizes.iter().filter(|s| s.2 > 0).map(|s| s.0).collect();
    assert_eq!(reads, vec![16384, 32768]);
    assert_eq!(writes, vec![65536, 81920, 98304, 114688, 131072]);
}

#[test]
fn a_sequential_range_covers_the_file_once() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run --rw write --bsrange 4k-64k --size 1m --seed 1 --trace t.csv f.dat",
    ));
    let mut at = 0;
    for (_, off, len) in trace_ops(&sb, "t.csv") {
        assert_eq!(off, at);
        at += len;
    }
    assert!(at <= 1 << 20 && at + 65536 > 1 << 20, "{at}");
    assert_eq!(r["total"]["write_bytes"].as_u64().unwrap(), at);
}

#[test]
fn job_files_and_sweeps_take_them() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("j.toml"),
        "targets = [\"f.dat\"]\naccess = \"randrw\"\nblock_sizes = \"4k,16k\"\nfile_size = 1048576\nio_count = 200\n",
    )
    .unwrap();
    let r = sb.run_json(&words("run j.toml"));
    assert_eq!(per_op(&r["total"]["read"]), 4096.0);
    assert_eq!(per_op(&r["total"]["write"]), 16384.0);
    std::fs::write(
        sb.file("r.toml"),
        "targets = [\"g.dat\"]\naccess = \"randread\"\nbsrange = \"8k-16k\"\nfile_size = 1048576\nio_count = 200\n",
    )
    .unwrap();
    let r = sb.run_json(&words("run r.toml"));
    assert_eq!(
        by_size(&r).iter().map(|s| s.0).collect::<Vec<_>>(),
        vec![8192, 16384]
    );
    // A sweep over ranges: one point each (--bsrange itself is one setting for every point).
    let o = sb
        .cmd(&words(
            "sweep --rw randread --axis bsrange=4k-8k,16k-32k --size 1m --count 50 h.dat --output sw",
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs = common::sweep_records(&sb.file("sw"));
    let mut ranges: Vec<String> = recs
        .iter()
        .map(|(_, r)| r["job"]["bsrange"].as_str().unwrap().to_string())
        .collect();
    ranges.sort();
    assert_eq!(ranges, vec!["16384-32768", "4096-8192"]);
}

#[test]
fn malformed_or_conflicting_sizes_are_refused_in_one_line() {
    let sb = Sandbox::new();
    for (opts, want) in [
        ("--bs 4k,64k,1m,2m", "at most three values"),
        ("--bs 4k,", "an empty value"),
        ("--bs 4k,0", "between 1 byte and 256m"),
        ("--bsrange 16k-4k", "ends below its start"),
        ("--bsrange 4k", "is not a range"),
        ("--bsrange 4k-1g", "between 1 byte and 256m"),
        (
            "--bsrange 5k-7k --block-align 8k",
            "no multiple of the alignment",
        ),
        ("--bsrange 512-1m", "2048 sizes, at most 1024"),
        (
            "--bsrange 4k-8k --bssplit 4k/100",
            "--bssplit and --bsrange both choose the I/O sizes",
        ),
        (
            "--bs 4k,8k --bssplit 4k/100",
            "--bssplit and a per-direction --bs both choose",
        ),
        (
            "--bs 4k,8k --bsrange 4k-8k",
            "--bsrange and a per-direction --bs",
        ),
        ("--bsrange 4k-8k --verify", "drop --bssplit, --bsrange"),
        ("--bs 4k,8k --dedupe 20", "--dedupe repeats whole blocks"),
    ] {
        let line = format!("run --rw randrw --size 4m --count 10 {opts} f.dat");
        let o = sb.cmd(&words(&line)).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{line}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{line}: {err}");
        assert!(err.contains(want), "{line}: {err}");
    }
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}
