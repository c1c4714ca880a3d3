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
