//! Journals damaged at random: `fsbench verify` never hangs, panics or aborts on one; bad
//! input is one line and exit 2; and a flipped bit anywhere a reader checks (the header,
//! any record but the last) never passes as clean. Deterministic: a fixed seed, or
//! FSBENCH_FUZZ_SEED.

mod common;
use common::Sandbox;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// splitmix64: the cases' random numbers.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// `fsbench verify f --journal j`, killed after 10 s: (exit code or None, stdout, stderr).
fn verify(sb: &Sandbox) -> (Option<i32>, String, String) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("fsbench"))
        .current_dir(sb.path())
        .args(["verify", "f", "--journal", "j"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    if child.try_wait().unwrap().is_none() {
        child.kill().ok();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One damage to the journal `j` (records start at `first`, 32 bytes each): what it is
/// called, the bytes, and whether the damage lies where the reader checks every byte (so
/// the journal must not pass as clean).
fn damage(rng: &mut Rng, j: &[u8], first: usize) -> (String, Vec<u8>, bool) {
    let n = j.len();
    let last = n - 32;
    let mut b = j.to_vec();
    match rng.below(6) {
        0 => {
            // One bit, in the header or a record before the last.
            let header_len = 16 + u32::from_le_bytes(j[8..12].try_into().unwrap()) as usize;
            let at = if rng.below(2) == 0 {
                rng.below(header_len as u64) as usize
            } else {
                first + rng.below((last - first) as u64) as usize
            };
            let bit = rng.below(8);
            b[at] ^= 1 << bit;
            (format!("bit {bit} of byte {at}"), b, true)
        }
        1 => {
            let at = rng.below(n as u64) as usize;
            b.truncate(at);
            (format!("cut at {at}"), b, false)
        }
        2 => {
            // A forged header length.
            let len = rng.next() as u32;
            b[8..12].copy_from_slice(&len.to_le_bytes());
            (format!("header length {len}"), b, true)
        }
        3 => {
            // Garbage appended: a tail, forgiven.
            let k = rng.below(200) as usize;
            b.extend((0..k).map(|_| rng.next() as u8));
            (format!("{k} garbage bytes appended"), b, false)
        }
        4 => {
            // Random bytes over a stretch of records.
            let at = first + rng.below((n - first) as u64) as usize;
            let k = (rng.below(100) as usize).min(n - at);
            for x in &mut b[at..at + k] {
                *x = rng.next() as u8;
            }
            (format!("{k} random bytes at {at}"), b, false)
        }
        _ => {
            // A record before the last zeroed: an append never written, forgiven.
            let r = rng.below(((last - first) / 32) as u64) as usize;
            b[first + r * 32..first + r * 32 + 32].fill(0);
            (format!("record {r} zeroed"), b, false)
        }
    }
}

#[test]
fn damaged_journals_are_judged_never_crashed_on() {
    let sb = Sandbox::new();
    let run = sb
        .cmd(&common::words(
            "run f --rw write --bs 4k --size 256k --cache direct --journal j --keep",
        ))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let good = std::fs::read(sb.file("j")).unwrap();
    let first =
        (16 + u32::from_le_bytes(good[8..12].try_into().unwrap()) as usize).div_ceil(32) * 32;
    assert_eq!(good.len(), first + 64 * 32);
    let seed = std::env::var("FSBENCH_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x006a_6f75_726e_616c_u64);
    let mut rng = Rng(seed);
    for case in 0..60 {
        let (what, bytes, checked) = damage(&mut rng, &good, first);
        std::fs::write(sb.file("j"), &bytes).unwrap();
        let (code, out, err) = verify(&sb);
        let ctx = format!("case {case} (seed {seed}): {what}: exit {code:?}\n{out}{err}");
        assert!(matches!(code, Some(0..=2)), "{ctx}");
        assert!(!err.contains("panicked"), "{ctx}");
        if code == Some(2) {
            assert_eq!(err.trim_end().lines().count(), 1, "{ctx}");
        } else {
            assert!(out.contains("verify: journal j"), "{ctx}");
        }
        if checked {
            assert_ne!(code, Some(0), "{ctx}");
        }
    }
}
