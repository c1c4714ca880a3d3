//! `fsbench verify FILE... --journal J`: bad input is one line and exit 2; a file the journal
//! names but that is gone has lost every acknowledged block (exit 1); and, end to end, a file
//! written by `fsbench run --journal` is clean until a block of it is damaged, and each kind of
//! damage is named with its offset.

mod common;
use common::Sandbox;
use std::path::Path;

/// A journal in the documented format (magic, JSON header length and CRC32C, header padded to
/// a 32-byte record boundary, then 32-byte records `file, block, generation, crc32c, 0`),
/// written here independently of fsbench's writer, so the format itself is tested.
fn write_journal(
    path: &Path,
    seed: u64,
    block_size: u64,
    files: &[&str],
    acks: &[(u64, u64, u64)],
) {
    let json = serde_json::to_vec(&serde_json::json!({
        "seed": seed, "block_size": block_size, "files": files
    }))
    .unwrap();
    let mut b = b"FSBJRNL1".to_vec();
    b.extend_from_slice(&(json.len() as u32).to_le_bytes());
    b.extend_from_slice(&crc32c::crc32c(&json).to_le_bytes());
    b.extend_from_slice(&json);
    b.resize(b.len().div_ceil(32) * 32, 0);
    for &(file, block, generation) in acks {
        let mut r = [0u8; 32];
        r[0..8].copy_from_slice(&file.to_le_bytes());
        r[8..16].copy_from_slice(&block.to_le_bytes());
        r[16..24].copy_from_slice(&generation.to_le_bytes());
        let crc = crc32c::crc32c(&r[..24]);
        r[24..28].copy_from_slice(&crc.to_le_bytes());
        b.extend_from_slice(&r);
    }
    std::fs::write(path, b).unwrap();
}

/// Run `fsbench ARGS` and return (exit status, stdout, stderr).
fn run(sb: &Sandbox, args: &[&str]) -> (i32, String, String) {
    let out = sb.cmd(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Bad usage: exit 2, exactly one line on stderr containing every `needle`.
fn assert_usage(sb: &Sandbox, args: &[&str], needles: &[&str]) {
    let (code, _, err) = run(sb, args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} lacks {n:?}");
    }
}

#[test]
fn a_missing_journal_is_bad_input() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("f"), vec![0u8; 8192]).unwrap();
    assert_usage(
        &sb,
        &["verify", "f", "--journal", "nope.fsj"],
        &["nope.fsj", "does not exist"],
    );
}

#[test]
fn a_file_the_journal_does_not_name_is_bad_input_and_the_named_ones_are_listed() {
    let sb = Sandbox::new();
    write_journal(&sb.file("j"), 1, 4096, &["a.dat", "b.dat"], &[]);
    std::fs::write(sb.file("c.dat"), vec![0u8; 4096]).unwrap();
    assert_usage(
        &sb,
        &["verify", "c.dat", "--journal", "j"],
        &["c.dat", "a.dat, b.dat"],
    );
}

#[test]
fn a_block_size_that_cannot_carry_headers_is_bad_input() {
    let sb = Sandbox::new();
    write_journal(&sb.file("j"), 1, 100, &["f"], &[]);
    std::fs::write(sb.file("f"), vec![0u8; 4096]).unwrap();
    assert_usage(&sb, &["verify", "f", "--journal", "j"], &["block size 100"]);
}

#[test]
fn a_file_that_is_not_a_journal_is_bad_input() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("j"), b"hello, not a journal").unwrap();
    std::fs::write(sb.file("f"), vec![0u8; 4096]).unwrap();
    assert_usage(
        &sb,
        &["verify", "f", "--journal", "j"],
        &["not an fsbench journal"],
    );
}

#[test]
fn a_symbolic_link_is_not_followed() {
    let sb = Sandbox::new();
    write_journal(&sb.file("j"), 1, 4096, &["link"], &[]);
    std::fs::write(sb.file("real"), vec![0u8; 4096]).unwrap();
    std::os::unix::fs::symlink(sb.file("real"), sb.file("link")).unwrap();
    assert_usage(
        &sb,
        &["verify", "link", "--journal", "j"],
        &["symbolic link"],
    );
}

#[test]
fn a_file_that_is_gone_lost_every_acknowledged_block() {
    let sb = Sandbox::new();
    write_journal(&sb.file("j"), 1, 4096, &["f"], &[(0, 0, 1), (0, 3, 2)]);
    let (code, out, err) = run(
        &sb,
        &["verify", "f", "--journal", "j", "--output", "v.json"],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("lost at offsets 0, 12288"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("v.json")).unwrap()).unwrap();
    assert_eq!(v["status"], "failed");
    assert_eq!(v["files"][0]["lost"]["blocks"], 2);
    assert_eq!(v["files"][0]["size_bytes"], 0);
}

#[test]
fn zeros_never_acknowledged_are_allowed_and_the_file_is_found_by_another_name() {
    let sb = Sandbox::new();
    let abs = sb.file("f");
    write_journal(&sb.file("j"), 1, 4096, &[abs.to_str().unwrap()], &[]);
    std::fs::write(&abs, vec![0u8; 3 * 4096]).unwrap();
    let (code, out, err) = run(
        &sb,
        &["verify", "./f", "--journal", "j", "--format", "json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kind"], "verify");
    assert_eq!(v["files"][0]["stale_allowed"]["blocks"], 3);
    assert_eq!(v["failures"], 0);
}

/// `fsbench verify FILE --journal J --format json`: (exit status, the report).
fn verify_json(sb: &Sandbox, file: &str, journal: &str) -> (i32, serde_json::Value) {
    let (code, out, err) = run(
        sb,
        &["verify", file, "--journal", journal, "--format", "json"],
    );
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, v)
}

fn write_run(sb: &Sandbox, file: &str, journal: &str, extra: &[&str]) {
    let mut args = vec![
        "run",
        file,
        "--bs",
        "4k",
        "--cache",
        "direct",
        "--journal",
        journal,
        "--keep",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = run(sb, &args);
    assert_eq!(code, 0, "{out}{err}");
}

const BS: u64 = 4096;

/// Replace `len` bytes at `at` of `path` (plain std I/O, as a broken disk would).
fn poke(path: &Path, at: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, at).unwrap();
}

fn block_of(path: &Path, index: u64) -> Vec<u8> {
    std::fs::read(path).unwrap()[(index * BS) as usize..((index + 1) * BS) as usize].to_vec()
}

#[test]
fn a_random_write_run_verifies_clean_and_verify_never_writes() {
    let sb = Sandbox::new();
    write_run(&sb, "f", "j", &["--rw", "randwrite", "--size", "4m"]);
    let before = std::fs::read(sb.file("f")).unwrap();
    let (code, v) = verify_json(&sb, "f", "j");
    assert_eq!(code, 0, "{v}");
    let f = &v["files"][0];
    assert_eq!(v["failures"], 0);
    assert_eq!(f["blocks"], 1024);
    assert!(f["intact"]["blocks"].as_u64().unwrap() > 500, "{f}");
    for k in ["lost", "corrupt", "misdirected", "torn"] {
        assert_eq!(f[k]["blocks"], 0, "{k}: {f}");
    }
    assert_eq!(std::fs::read(sb.file("f")).unwrap(), before);
}

/// Every block of a sequential run written twice (generation 2, acknowledged), then damaged
/// one kind at a time; each is found at its offset and named.
#[test]
fn each_kind_of_damage_is_found_at_its_offset_and_named() {
    let sb = Sandbox::new();
    let common = ["--rw", "write", "--size", "256k", "--seed", "5"];
    // The same run once (generation 1 of every block): the older content of each block.
    write_run(&sb, "old", "jold", &common);
    let mut twice = common.to_vec();
    twice.extend_from_slice(&["--nrep", "2"]);
    write_run(&sb, "f", "j", &twice);
    let (code, clean) = verify_json(&sb, "f", "j");
    assert_eq!(code, 0, "{clean}");
    assert_eq!(clean["files"][0]["intact"]["blocks"], 64);
    // Each run stamps a seed of its own: a block an earlier run left is not this run's.
    let (_, old) = verify_json(&sb, "old", "jold");
    assert_ne!(old["seed"], clean["seed"], "each run stamps its own seed");
    let f = sb.file("f");
    // Block 3: one bit flipped at byte 1000.
    let mut b3 = block_of(&f, 3);
    b3[1000] ^= 0x20;
    poke(&f, 3 * BS, &b3);
    // Block 5: zeros. Block 7: the earlier run's block 7 (its generation 1, its seed): a
    // block of another run is misdirected, not a stale write of this one (a stale
    // generation of the same run is shown by tests/verify_faults.rs, a dropped write).
    poke(&f, 5 * BS, &[0u8; BS as usize]);
    poke(&f, 7 * BS, &block_of(&sb.file("old"), 7));
    // Block 9: block 2's content.
    poke(&f, 9 * BS, &block_of(&f, 2));
    // Block 11: its first half written, the second half never (zeros): a torn write.
    let mut b11 = block_of(&f, 11);
    b11[2048..].fill(0);
    poke(&f, 11 * BS, &b11);

    let (code, v) = verify_json(&sb, "f", "j");
    assert_eq!(code, 1, "{v}");
    let r = &v["files"][0];
    let offs = |k: &str| r[k]["first_offsets_bytes"].clone();
    assert_eq!(offs("corrupt"), serde_json::json!([3 * BS]), "{r}");
    assert_eq!(offs("lost"), serde_json::json!([5 * BS]), "{r}");
    assert_eq!(
        offs("misdirected"),
        serde_json::json!([7 * BS, 9 * BS]),
        "{r}"
    );
    assert_eq!(offs("torn"), serde_json::json!([11 * BS]), "{r}");
    assert_eq!(r["intact"]["blocks"], 59);
    assert_eq!(v["failures"], 5);
    let m = |o: u64| {
        r["mismatches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["offset_bytes"] == o)
            .unwrap()
            .clone()
    };
    let flip = m(3 * BS);
    assert_eq!(flip["verdict"]["bit_flip"], true, "{flip}");
    assert_eq!(flip["first_difference"]["offset_bytes"], 3 * BS + 1000);
    assert_eq!(flip["first_difference"]["bit_flip"], true);
    // The whole-block CRC each block carries: a flipped bit breaks it; a whole block of
    // another run or place still matches its own bytes; zeros have no header to ask.
    assert_eq!(flip["found_block_crc_ok"], false, "{flip}");
    assert_eq!(m(7 * BS)["found_block_crc_ok"], true);
    assert_eq!(m(9 * BS)["found_block_crc_ok"], true);
    assert_eq!(m(5 * BS)["found_block_crc_ok"], serde_json::Value::Null);
    let other_run = m(7 * BS);
    assert_eq!(other_run["expected"]["generation"], 2);
    assert_eq!(other_run["found"]["generation"], 1);
    assert_eq!(other_run["found"]["seed"], old["seed"]);
    assert_eq!(m(5 * BS)["found"], serde_json::Value::Null);
    let mis = m(9 * BS);
    assert_eq!(mis["found"]["offset_bytes"], 2 * BS);
    assert_eq!(mis["expected"]["offset_bytes"], 9 * BS);
    assert_eq!(m(11 * BS)["verdict"]["verdict"], "torn", "{}", m(11 * BS));
    // The text report says the same.
    let (_, text, _) = run(&sb, &["verify", "f", "--journal", "j"]);
    assert!(
        text.contains("corrupt at offset 12288 (bit flip)"),
        "{text}"
    );
    assert!(text.contains("lost at offsets 20480"), "{text}");
    assert!(
        text.contains("misdirected at offsets 28672, 36864"),
        "{text}"
    );
    assert!(text.contains("verify: FAILED: 5 blocks"), "{text}");
    assert!(
        text.contains("found block's own CRC: does not match its bytes"),
        "{text}"
    );
}

/// `--verify` with a data shape: each block is its 64-byte header, then the shape (here half
/// of each 4 KiB compressible, a fifth of the blocks repeating after the header). The run
/// reads back clean and `fsbench verify` finds it intact; a bit flipped in the shaped bytes,
/// in the zero run the shape left or in the header, a zeroed block and a block copied
/// elsewhere are each found at their offset.
#[test]
fn shaped_blocks_verify_clean_and_damage_to_them_is_found() {
    let sb = Sandbox::new();
    let shape = [
        "--rw",
        "write",
        "--size",
        "256k",
        "--buffer-compress",
        "50",
        "--dedupe",
        "20",
    ];
    write_run(&sb, "f", "j", &shape);
    let (code, clean) = verify_json(&sb, "f", "j");
    assert_eq!(code, 0, "{clean}");
    assert_eq!(clean["files"][0]["intact"]["blocks"], 64);
    let f = sb.file("f");
    // The header, then the shape: about half of what follows is the zero run.
    let b2 = block_of(&f, 2);
    assert_eq!(&b2[..8], b"FSBVRFY1");
    let zeros = b2[64..].iter().filter(|&&b| b == 0).count();
    assert!(
        (1900..2200).contains(&zeros),
        "{zeros} zero bytes after the header"
    );
    // Block 3: a bit of its random part; block 4: a bit of its zero run; block 6: a bit
    // of its header's offset field.
    for (block, at) in [(3u64, 1000usize), (4, 3000), (6, 24)] {
        let mut b = block_of(&f, block);
        b[at] ^= 0x04;
        poke(&f, block * BS, &b);
    }
    poke(&f, 5 * BS, &[0u8; BS as usize]);
    poke(&f, 9 * BS, &block_of(&f, 2));
    let (code, v) = verify_json(&sb, "f", "j");
    assert_eq!(code, 1, "{v}");
    let r = &v["files"][0];
    let offs = |k: &str| r[k]["first_offsets_bytes"].clone();
    assert_eq!(
        offs("corrupt"),
        serde_json::json!([3 * BS, 4 * BS, 6 * BS]),
        "{r}"
    );
    assert_eq!(offs("lost"), serde_json::json!([5 * BS]), "{r}");
    assert_eq!(offs("misdirected"), serde_json::json!([9 * BS]), "{r}");
    assert_eq!(r["intact"]["blocks"], 59, "{r}");
}
