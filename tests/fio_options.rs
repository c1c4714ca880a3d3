//! What fio users reach for, through the binary: the null engine, written data storage
//! cannot shortcut (or can by a chosen amount, measured after the run), and skewed random
//! access (`--distribution`, `--random-map`), from flags, job files and sweep axes.

mod common;
use common::{words, Sandbox};
use std::collections::HashMap;

/// Run expecting a refusal: exit 2, one line on stderr, returned.
fn refused(sb: &Sandbox, line: &str) -> String {
    let out = sb.cmd(&words(line)).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{line}: {out:?}");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "{line}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn null_engine_counts_ops_and_bytes_without_syscalls_or_a_file() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run --engine null --rw randrw --bs 4k --size 1g --count 50000 --threads 2 nofile",
    ));
    assert_eq!(v["status"], "complete");
    let t = &v["total"];
    assert_eq!(t["ops"], 100_000);
    assert_eq!(t["bytes"], 100_000u64 * 4096);
    assert_eq!(
        t["read_ops"].as_u64().unwrap() + t["write_ops"].as_u64().unwrap(),
        100_000
    );
    assert!(t["read_ops"].as_u64().unwrap() > 40_000);
    let calls = t["syscalls"].as_object().unwrap();
    for (k, n) in calls {
        assert_eq!(n, 0, "syscall {k} counted on the null engine");
    }
    assert_eq!(v["job"]["engine"], "null");
    // Never opened, so never created, even with --keep.
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
    let v = sb.run_json(&words(
        "run --engine null --rw write --bs 64k --count 100 --qd 8 --keep nofile",
    ));
    assert_eq!(v["total"]["write_bytes"], 100 * 65536);
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
    // No file, so no probe of one (the extents of what a write run wrote).
    assert!(v["probes"].get("extents").is_none(), "{}", v["probes"]);
    // An existing file is neither read nor written.
    std::fs::write(sb.file("there"), b"keep me").unwrap();
    let v = sb.run_json(&words(
        "run --engine null --rw write --bs 4k --size 1m --force there",
    ));
    assert_eq!(v["total"]["write_bytes"], 1 << 20);
    assert_eq!(std::fs::read(sb.file("there")).unwrap(), b"keep me");
    // Nothing to size it by: refused, not guessed from the file.
    let err = refused(&sb, "run --engine null --rw read --bs 4k --time 1s there");
    assert!(err.contains("--size or --count"), "{err}");
    let err = refused(&sb, "run --engine null --rw write --count 10 --verify f");
    assert!(err.contains("null"), "{err}");
}

#[test]
fn null_engine_from_a_job_file() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("j.toml"),
        "targets = [\"x\"]\nengine = \"null\"\naccess = \"randread\"\nblock_size = 512\nio_count = 1000\n",
    )
    .unwrap();
    let v = sb.run_json(&words("run j.toml"));
    assert_eq!(v["total"]["read_ops"], 1000);
    assert_eq!(v["total"]["read_bytes"], 512_000);
    assert_eq!(sb.listing(), vec!["j.toml"]);
}

fn data_probe(v: &serde_json::Value) -> (f64, f64) {
    let m = &v["probes"]["data"]["measured"];
    (
        m["compress_saved_pct"].as_f64().expect("compress measured"),
        m["dedupe_pct"].as_f64().expect("dedupe measured"),
    )
}

#[test]
fn compress_and_dedupe_are_delivered_and_measured() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run --rw write --bs 4k --size 8m --buffer-compress 50 f",
    ));
    let (saved, dup) = data_probe(&v);
    assert!((45.0..=55.0).contains(&saved), "compress saved {saved}");
    assert!(dup < 1.0, "{dup}");
    assert_eq!(v["probes"]["data"]["asked"]["compress_saved_pct"], 50);
    let v = sb.run_json(&words("run --rw write --bs 8k --size 16m --dedupe 50 f"));
    let (saved, dup) = data_probe(&v);
    assert!((45.0..=55.0).contains(&dup), "dedupe {dup}");
    assert!(saved < 2.0, "random blocks compressed by {saved}");
    // Without the options the probe is absent: nothing was asked.
    let v = sb.run_json(&words("run --rw write --bs 4k --size 1m f"));
    assert!(v["probes"].get("data").is_none());
    // A new file for random writes is laid out with the same shaped blocks.
    let v = sb.run_json(&words(
        "run --rw randwrite --bs 4k --size 8m --count 200 --buffer-compress 70 --dedupe 30 f",
    ));
    let (saved, dup) = data_probe(&v);
    assert!((65.0..=75.0).contains(&saved), "compress saved {saved}");
    assert!((25.0..=35.0).contains(&dup), "dedupe {dup}");
    // Text beside the asked share; a shortfall is explained: random writes into a file of
    // other data (here a kept file of plain writes) leave most blocks as they were.
    sb.run_json(&words("run --rw write --bs 4k --size 8m --keep g"));
    let out = sb
        .cmd(&words(
            "run --rw randwrite --bs 4k --size 8m --count 200 --buffer-compress 80 g",
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("data: compression saves") && text.contains("(asked 80 %)"),
        "{text}"
    );
    assert!(text.contains("asked for 80 % compressible data"), "{text}");
}

/// The file's blocks of `bs` bytes: the share that duplicates an earlier one, and how many
/// distinct blocks occur more than once.
fn duplicates(path: &std::path::Path, bs: usize) -> (f64, usize) {
    let bytes = std::fs::read(path).unwrap();
    let mut counts: HashMap<&[u8], u32> = HashMap::new();
    for b in bytes.chunks(bs) {
        *counts.entry(b).or_insert(0) += 1;
    }
    let blocks = bytes.len() / bs;
    let dup = (blocks - counts.len()) as f64 * 100.0 / blocks as f64;
    (dup, counts.values().filter(|&&n| n > 1).count())
}

/// `--dedupe-mode working-set`: the file holds the asked share of duplicate blocks (hashed
/// here, and measured by the run), every repeated block is one of the working set's, and
/// the set is larger than `repeat`'s few blocks; `fsbench fio` takes fio's options for it.
#[test]
fn dedupe_working_set_delivers_the_share_from_the_set() {
    let sb = Sandbox::new();
    // 2048 blocks of 4 KiB over 2 threads; a working set of 10 % = 204 blocks.
    let v = sb.run_json(&words(
        "run --rw write --bs 4k --size 8m --threads 2 --dedupe 40 --dedupe-mode working-set --dedupe-working-set 10 --keep w",
    ));
    let (dup, repeated) = duplicates(&sb.file("w"), 4096);
    assert!((35.0..=45.0).contains(&dup), "duplicates {dup} %");
    assert!(
        repeated <= 204,
        "{repeated} blocks repeat; the working set holds 204"
    );
    assert!(
        repeated > 100,
        "only {repeated} blocks repeat: not a working set"
    );
    let (_, measured) = data_probe(&v);
    assert!((35.0..=45.0).contains(&measured), "measured {measured}");
    let asked = &v["probes"]["data"]["asked"];
    assert_eq!(asked["dedupe_mode"], "working-set");
    assert_eq!(asked["dedupe_working_set_pct"], 10);
    // repeat mode repeats a few blocks only.
    sb.run_json(&words(
        "run --rw write --bs 4k --size 8m --dedupe 40 --dedupe-mode repeat --keep r",
    ));
    let (dup, repeated) = duplicates(&sb.file("r"), 4096);
    assert!((35.0..=45.0).contains(&dup), "duplicates {dup} %");
    assert!(repeated <= 4, "{repeated}");
    // fio's spelling.
    std::fs::write(
        sb.file("d.fio"),
        "[ws]\nfilename=${FIO_DIR}/fw\nrw=write\nbs=4k\nsize=4m\ndedupe_percentage=30\ndedupe_mode=working_set\ndedupe_working_set_percentage=20\n",
    )
    .unwrap();
    let out = sb.file("fio.json");
    let o = sb
        .cmd(&[
            "fio",
            sb.file("d.fio").to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ])
        .env("FIO_DIR", sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let v = if v.is_array() { v[0].clone() } else { v };
    assert_eq!(v["job"]["dedupe_mode"], "working-set");
    assert_eq!(v["job"]["dedupe_working_set"], 20);
    let (_, measured) = data_probe(&v);
    assert!((25.0..=35.0).contains(&measured), "measured {measured}");
    for (line, says) in [
        (
            "run --rw write --bs 4k --size 1m --dedupe 40 --dedupe-mode working-set --dedupe-working-set 70 f",
            "at most 100",
        ),
        (
            "run --rw write --bs 4k --size 1m --dedupe 40 --dedupe-working-set 10 f",
            "--dedupe-mode working-set",
        ),
        (
            "run --rw write --bs 4k --size 1m --dedupe-mode working-set f",
            "--dedupe PCT",
        ),
        (
            "run --rw write --bs 4k --size 1m --dedupe 20 --dedupe-mode sometimes f",
            "repeat or working-set",
        ),
        (
            "run --rw write --bs 4k --size 1m --dedupe 20 --dedupe-mode working-set --dedupe-working-set 0 f",
            "--dedupe-working-set",
        ),
    ] {
        let err = refused(&sb, line);
        assert!(err.contains(says), "{line}: {err}");
    }
}

#[test]
fn buffer_pattern_zero_and_hex_fill_the_file() {
    let sb = Sandbox::new();
    sb.run_json(&words(
        "run --rw write --bs 4k --size 1m --buffer-pattern zero --keep z",
    ));
    let z = std::fs::read(sb.file("z")).unwrap();
    assert_eq!(z.len(), 1 << 20);
    assert!(z.iter().all(|&b| b == 0));
    sb.run_json(&words(
        "run --rw write --bs 4k --size 64k --buffer-pattern 0xa1b2c3 --keep h",
    ));
    let h = std::fs::read(sb.file("h")).unwrap();
    // Each block starts the pattern anew.
    for block in h.chunks(4096) {
        for (i, b) in block.iter().enumerate() {
            assert_eq!(*b, [0xa1, 0xb2, 0xc3][i % 3]);
        }
    }
    // random: every block its own bytes.
    sb.run_json(&words(
        "run --rw write --bs 4k --size 256k --buffer-pattern random --keep r",
    ));
    let r = std::fs::read(sb.file("r")).unwrap();
    let distinct: std::collections::HashSet<&[u8]> = r.chunks(4096).collect();
    assert_eq!(distinct.len(), 64);
}

#[test]
fn bad_data_options_are_refused_in_one_line() {
    let sb = Sandbox::new();
    for (line, says) in [
        (
            "run --rw write --bs 4k --size 1m --buffer-compress 101 f",
            "--buffer-compress",
        ),
        ("run --rw write --bs 4k --size 1m --dedupe=-5 f", "--dedupe"),
        ("run --rw write --bs 4k --size 1m --dedupe x f", "--dedupe"),
        (
            "run --rw write --bs 4k --size 1m --buffer-pattern 0xabc f",
            "0xHEX",
        ),
        (
            "run --rw write --bs 4k --size 1m --buffer-pattern ones f",
            "zero, random",
        ),
        (
            "run --rw read --bs 4k --size 1m --buffer-compress 50 f",
            "writes nothing",
        ),
        (
            "run --rw write --bs 4k --size 1m --buffer-pattern zero --dedupe 20 f",
            "--dedupe",
        ),
        (
            "run --rw write --bs 4k --count 10 --engine null --buffer-compress 20 f",
            "null",
        ),
    ] {
        let err = refused(&sb, line);
        assert!(err.contains(says), "{line}: {err}");
    }
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

/// Blocks hit per offset, from a CSV trace of the run.
fn hits(sb: &Sandbox, args: &str) -> HashMap<u64, u64> {
    let trace = sb.file("t.csv");
    let _ = std::fs::remove_file(&trace);
    let line = format!("{args} --trace {}", trace.display());
    sb.cmd(&words(&line)).assert().success();
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "offset").unwrap();
    let mut m = HashMap::new();
    for l in lines {
        let off: u64 = l.split(',').nth(col).unwrap().parse().unwrap();
        *m.entry(off).or_insert(0) += 1;
    }
    m
}

#[test]
fn zipf_piles_the_ios_onto_few_blocks() {
    let sb = Sandbox::new();
    // 1024 blocks, 20000 I/Os.
    let base = "run --rw randread --bs 4k --size 4m --count 20000 --seed 7";
    let skewed = hits(&sb, &format!("{base} --distribution zipf:1.2 f"));
    let mut counts: Vec<u64> = skewed.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top: u64 = counts.iter().take(102).sum();
    let share = top as f64 / 20000.0;
    assert!(share > 0.75, "hottest 10 % of blocks took {share}");
    // Uniform spreads them: the hottest 10 % take little more than 10 %.
    let flat = hits(&sb, &format!("{base} f"));
    let mut counts: Vec<u64> = flat.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top: u64 = counts.iter().take(102).sum();
    assert!((top as f64 / 20000.0) < 0.25, "uniform top share {top}");
    // Same seed, same offsets.
    assert_eq!(
        skewed,
        hits(&sb, &format!("{base} --distribution zipf:1.2 f"))
    );
}

#[test]
fn zoned_lands_each_share_in_its_zone() {
    let sb = Sandbox::new();
    let size: u64 = 4 << 20;
    let h = hits(
        &sb,
        "run --rw randread --bs 4k --size 4m --count 20000 --distribution zoned:50/5:30/15:20/80 f",
    );
    let mut zone = [0u64; 3];
    for (off, n) in h {
        let at = off as f64 / size as f64;
        zone[if at < 0.05 {
            0
        } else if at < 0.20 {
            1
        } else {
            2
        }] += n;
    }
    for (got, want) in zone.iter().zip([0.5, 0.3, 0.2]) {
        let share = *got as f64 / 20000.0;
        assert!((share - want).abs() < 0.03, "zones {zone:?}");
    }
}

#[test]
fn random_map_touches_every_block_once_per_pass() {
    let sb = Sandbox::new();
    // 256 blocks, two passes.
    let h = hits(
        &sb,
        "run --rw randwrite --bs 4k --size 1m --count 512 --random-map f",
    );
    assert_eq!(h.len(), 256);
    assert!(h.values().all(|&n| n == 2), "{h:?}");
    // Without it, blocks repeat and others are missed.
    let h = hits(&sb, "run --rw randwrite --bs 4k --size 1m --count 256 f");
    assert!(h.len() < 230, "{}", h.len());
}

#[test]
fn bad_distributions_are_refused_in_one_line() {
    let sb = Sandbox::new();
    for (spec, says) in [
        ("zipf", "missing value"),
        ("zipf:0", "THETA"),
        ("pareto:1.5", "H out of range"),
        ("normal:0%", "SIGMA"),
        ("zoned:50/5:30/15", "add up"),
        ("zoned:50", "P/R"),
        ("lognormal:3", "unknown distribution"),
    ] {
        let err = refused(
            &sb,
            &format!("run --rw randread --bs 4k --size 1m --distribution {spec} f"),
        );
        assert!(
            err.contains("bad --distribution") && err.contains(says),
            "{spec}: {err}"
        );
    }
    let err = refused(
        &sb,
        "run --rw read --bs 4k --size 1m --distribution zipf:1.1 f",
    );
    assert!(err.contains("sequential"), "{err}");
    let err = refused(
        &sb,
        "run --rw randread --bs 4k --size 1m --distribution zipf:1.1 --random-map f",
    );
    assert!(err.contains("--random-map"), "{err}");
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

#[test]
fn distribution_from_a_job_file_and_as_a_sweep_axis() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("j.toml"),
        "targets = [\"f\"]\naccess = \"randread\"\nblock_size = 4096\nfile_size = 1048576\nio_count = 100\ndistribution = \"pareto:0.8\"\nrandom_map = false\n",
    )
    .unwrap();
    let v = sb.run_json(&words("run j.toml"));
    assert_eq!(v["job"]["distribution"], "pareto:0.8");
    std::fs::write(
        sb.file("bad.toml"),
        "targets = [\"f\"]\naccess = \"randread\"\nio_count = 100\ndistribution = \"zipf:-1\"\n",
    )
    .unwrap();
    let err = refused(&sb, "run bad.toml");
    assert!(err.contains("bad.toml") && err.contains("THETA"), "{err}");
    let out = sb
        .cmd(&words(
            "sweep --rw randread --bs 4k --size 1m --count 200 --axis distribution=uniform,zipf:1.2 --output sw f",
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let recs = common::sweep_records(&sb.file("sw"));
    let dists: Vec<String> = recs
        .iter()
        .map(|(_, r)| {
            r["job"]["distribution"]
                .as_str()
                .unwrap_or("uniform")
                .to_string()
        })
        .collect();
    assert!(dists.contains(&"zipf:1.2".to_string()), "{dists:?}");
    assert!(dists.contains(&"uniform".to_string()), "{dists:?}");
}
