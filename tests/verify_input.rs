//! `fsbench verify` treats its inputs as hostile: a FIFO, a device or a forged journal gets
//! one line and exit 2 (never a hang, an abort or memory without end), and a journal damaged
//! anywhere but its tail is reported as corrupt (exit 1), naming the record and its offset,
//! while the records after the damage still judge the files.

mod common;
use common::Sandbox;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A journal in the documented format, written independently of fsbench's writer.
fn journal_bytes(seed: u64, block_size: u64, files: &[&str], acks: &[(u64, u64, u64)]) -> Vec<u8> {
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
    b
}

/// Run `fsbench ARGS` in the sandbox, killing it after `limit` (a hang fails the test, it
/// does not hang the suite): (exit status or None if killed, stdout, stderr).
fn run_within(sb: &Sandbox, args: &[&str], limit: Duration) -> (Option<i32>, String, String) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("fsbench"))
        .current_dir(sb.path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    (
        status.and_then(|s| s.code()),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Refused within 5 s (a reader of /dev/zero is stopped before it takes much memory): exit
/// 2, one line on stderr holding every needle.
fn assert_refused(sb: &Sandbox, args: &[&str], needles: &[&str]) {
    let (code, _, err) = run_within(sb, args, Duration::from_secs(5));
    assert_eq!(code, Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} lacks {n:?}");
    }
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_fifo_as_the_file_or_the_journal_is_refused_without_waiting_for_a_writer() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("j"), journal_bytes(1, 4096, &["f", "p"], &[])).unwrap();
    std::fs::write(sb.file("f"), vec![0u8; 4096]).unwrap();
    mkfifo(&sb.file("p"));
    mkfifo(&sb.file("jp"));
    assert_refused(&sb, &["verify", "p", "--journal", "j"], &["p is a FIFO"]);
    assert_refused(
        &sb,
        &["verify", "f", "--journal", "jp"],
        &["journal jp is a FIFO", "not a regular file"],
    );
}

#[test]
fn a_device_as_the_journal_is_refused_before_it_is_read() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("f"), vec![0u8; 4096]).unwrap();
    assert_refused(
        &sb,
        &["verify", "f", "--journal", "/dev/zero"],
        &["/dev/zero is a character device"],
    );
}

#[test]
fn a_symbolic_link_as_the_journal_is_not_followed() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("j"), journal_bytes(1, 4096, &["f"], &[])).unwrap();
    std::fs::write(sb.file("f"), vec![0u8; 4096]).unwrap();
    std::os::unix::fs::symlink(sb.file("j"), sb.file("jl")).unwrap();
    assert_refused(
        &sb,
        &["verify", "f", "--journal", "jl"],
        &["jl is a symbolic link"],
    );
}

#[test]
fn a_forged_block_size_is_refused_not_allocated() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("f"), vec![0u8; 4096]).unwrap();
    for bs in [1u64 << 33, 1 << 50, (256 << 20) + 8] {
        std::fs::write(sb.file("j"), journal_bytes(1, bs, &["f"], &[(0, 0, 1)])).unwrap();
        assert_refused(
            &sb,
            &["verify", "f", "--journal", "j"],
            &[&format!("block size {bs}"), "at most 268435456"],
        );
    }
}

#[test]
fn a_header_longer_than_the_file_is_refused() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("f"), vec![0u8; 4096]).unwrap();
    let mut b = b"FSBJRNL1".to_vec();
    b.extend_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&[b'{'; 100]);
    std::fs::write(sb.file("j"), b).unwrap();
    assert_refused(
        &sb,
        &["verify", "f", "--journal", "j"],
        &["header is damaged", "the file has 116"],
    );
}

const BS: usize = 4096;

/// A file of `blocks` blocks written by a run with a journal (each block acknowledged).
fn written(sb: &Sandbox, blocks: u64) {
    let size = format!("{}k", blocks * 4);
    let args = [
        "run",
        "f",
        "--rw",
        "write",
        "--bs",
        "4k",
        "--size",
        &size,
        "--cache",
        "direct",
        "--journal",
        "j",
        "--keep",
    ];
    let (code, out, err) = run_within(sb, &args, Duration::from_secs(120));
    assert_eq!(code, Some(0), "{out}{err}");
}

/// Where the journal's records start: after the header, on a 32-byte boundary.
fn first_record(j: &[u8]) -> usize {
    let len = u32::from_le_bytes(j[8..12].try_into().unwrap()) as usize;
    (16 + len).div_ceil(32) * 32
}

#[test]
fn one_flipped_bit_in_a_middle_record_is_corruption_and_a_zeroed_block_is_still_found() {
    let sb = Sandbox::new();
    written(&sb, 64);
    let j = std::fs::read(sb.file("j")).unwrap();
    let first = first_record(&j);
    assert!(j.len() >= first + 64 * 32, "one record a block");
    // Record 11 damaged; a block acknowledged by a later record zeroed.
    let mut bad = j.clone();
    let at = first + 11 * 32;
    bad[at + 9] ^= 0x10;
    std::fs::write(sb.file("j"), &bad).unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(sb.file("f"))
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &[0u8; BS], 40 * BS as u64).unwrap();
    let (code, out, err) = run_within(
        &sb,
        &["verify", "f", "--journal", "j", "--format", "json"],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(1), "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"], "failed");
    assert_eq!(v["journal_damaged_records"], 1, "{v}");
    assert_eq!(
        v["journal_first_damaged"],
        serde_json::json!([{"record": 11, "offset_bytes": at}])
    );
    assert_eq!(v["journal_torn_tail_bytes"], 0);
    assert_eq!(
        v["files"][0]["lost"]["first_offsets_bytes"],
        serde_json::json!([40 * BS])
    );
    // The text names the journal, the record and its offset.
    let (code, out, _) = run_within(
        &sb,
        &["verify", "f", "--journal", "j"],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(1));
    assert!(
        out.contains("journal j is corrupt") && out.contains(&format!("record 11 at offset {at}")),
        "{out}"
    );
    // Damage in the last record only is a torn tail: forgiven.
    let mut tail = j.clone();
    let n = tail.len();
    tail[n - 20] ^= 0x01;
    std::fs::write(sb.file("j"), &tail).unwrap();
    let (_, out, _) = run_within(
        &sb,
        &["verify", "f", "--journal", "j", "--format", "json"],
        Duration::from_secs(60),
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["journal_damaged_records"], 0, "{v}");
    assert_eq!(v["journal_torn_tail_bytes"], 32, "{v}");
}

/// Ctrl-C (SIGINT) or SIGTERM to a verify of a large file: exit 130 with one line saying
/// what was checked so far.
fn interrupted_by(sig: libc::c_int) {
    let sb = Sandbox::new();
    std::fs::write(sb.file("j"), journal_bytes(1, 4096, &["big"], &[(0, 0, 1)])).unwrap();
    // 64 GiB of holes: far more than a verify reads in the time before the signal.
    std::fs::File::create(sb.file("big"))
        .unwrap()
        .set_len(64 << 30)
        .unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("fsbench"))
        .current_dir(sb.path())
        .args(["verify", "big", "--journal", "j"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert!(child.try_wait().unwrap().is_none(), "verify ended too soon");
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, sig) };
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if child.try_wait().unwrap().is_none() {
        child.kill().ok();
        panic!("verify did not stop within 20 s of the signal");
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("verify: interrupted in big (file 1 of 1) after checking")
            && err.contains("no verdict"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no report of a partial check");
}

#[test]
fn sigint_ends_a_verify_with_130_and_what_was_checked() {
    interrupted_by(libc::SIGINT);
}

#[test]
fn sigterm_ends_a_verify_with_130_and_what_was_checked() {
    interrupted_by(libc::SIGTERM);
}
