//! `fsbench replay --verify` through the real binary: a replay of a trace that writes and then
//! reads what it wrote checks those reads (and only those: reads of ranges the replay never
//! wrote are issued unchecked) and passes; a write the storage corrupts or drops between
//! (tests/faultfs) is found, named with its file and offset, and fails the replay with exit 1,
//! as `run --verify` does.

mod common;
mod faultfs;

use common::Sandbox;
use faultfs::{Fault, FaultFs, Op};
use serde_json::Value;
use std::path::Path;

const HEADER: &str = "id,thread,op,file,offset,len,start_ns,end_ns,result";
/// Bytes of each replayed write and read.
const IO: u64 = 3000;
/// Writes of file a (then as many reads of the same ranges).
const WRITES: u64 = 10;

/// One thread: `WRITES` writes of `IO` bytes at 0, IO, ... of /data/a, the same ranges read
/// back, then two reads the replay did not write (past them in /data/a, and /data/b).
fn write_trace(path: &Path) {
    let mut s = format!("{HEADER}\n");
    let mut id = 0;
    let mut row = |op: &str, file: &str, off: u64, len: u64| {
        let t = id * 1000;
        s.push_str(&format!(
            "{id},1,{op},{file},{off},{len},{t},{},{len}\n",
            t + 500
        ));
        id += 1;
    };
    for i in 0..WRITES {
        row("write", "/data/a", i * IO, IO);
    }
    for i in 0..WRITES {
        row("read", "/data/a", i * IO, IO);
    }
    row("read", "/data/a", WRITES * IO, IO);
    // Not IO bytes: the fill of this file is not taken for a replayed write by the faults.
    row("read", "/data/b", 0, 4096);
    std::fs::write(path, s).unwrap();
}

/// `fsbench replay t.csv --verify --dir DIR --output r.json` in `sb`: (exit status, stdout
/// and stderr, the JSON).
fn replay(sb: &Sandbox, dir: &Path) -> (i32, String, Value) {
    replay_with(sb, dir, &[])
}

/// [`replay`] with `extra` flags.
fn replay_with(sb: &Sandbox, dir: &Path, extra: &[&str]) -> (i32, String, Value) {
    write_trace(&sb.file("t.csv"));
    let out_path = sb.file("r.json");
    let out = sb
        .cmd(&[
            "replay",
            "t.csv",
            "--verify",
            "--dir",
            dir.to_str().unwrap(),
            "--output",
            out_path.to_str().unwrap(),
        ])
        .args(extra)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v = std::fs::read_to_string(&out_path)
        .map(|t| serde_json::from_str(&t).expect("valid JSON"))
        .unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), text, v)
}

fn bad(v: &Value) -> u64 {
    ["stale", "misdirected", "torn", "corrupt"]
        .iter()
        .map(|k| v["verify"][k]["blocks"].as_u64().unwrap())
        .sum()
}

#[test]
fn reads_of_what_the_replay_wrote_are_checked_and_pass() {
    let sb = Sandbox::new();
    let dir = sb.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    let (code, text, v) = replay(&sb, &dir);
    assert_eq!(code, 0, "{text}");
    assert_eq!(v["status"], "complete", "{text}");
    let vr = &v["verify"];
    // The reads of written ranges, every byte of them; the other two reads are not checked
    // (nor counted as skipped).
    assert_eq!(vr["blocks_checked"], WRITES, "{vr}");
    assert_eq!(vr["blocks_intact"], WRITES, "{vr}");
    assert_eq!(vr["bytes_checked"], WRITES * IO, "{vr}");
    assert_eq!(vr["blocks_skipped_overlap"], 0, "{vr}");
    assert_eq!(bad(&v), 0, "{vr}");
    assert_eq!(v["total"]["read_ops"], WRITES + 2, "{text}");
    assert!(
        text.contains(&format!("verify: {WRITES} reads checked")),
        "{text}"
    );
    let notes = v["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "--verify: {WRITES} of the {} replayed reads are of ranges their thread wrote",
            WRITES + 2
        )),
        "{notes}"
    );
    // The scratch files are gone.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

#[test]
fn a_replay_that_reads_nothing_it_wrote_says_nothing_is_checked() {
    let sb = Sandbox::new();
    let rows = format!(
        "{HEADER}\n0,1,write,/data/a,0,4096,0,1,4096\n1,1,read,/data/a,4096,4096,2,3,4096\n"
    );
    std::fs::write(sb.file("w.csv"), rows).unwrap();
    let out = sb
        .cmd(&["replay", "w.csv", "--verify", "--format", "json"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        v["notes"]
            .to_string()
            .contains("none of the 1 replayed reads is of a range its thread wrote"),
        "{}",
        v["notes"]
    );
    assert_eq!(v["verify"]["blocks_checked"], 0, "{}", v["verify"]);
}

fn mount() -> FaultFs {
    match FaultFs::mount() {
        Ok(fs) => fs,
        Err(why) => common::cannot(&format!("faultfs: {why}")),
    }
}

/// The replay on the fault-injecting mount with `fault` at the `nth` replayed write: exit 1,
/// status failed, one mismatch of `kind` at `at` whose detail holds `words`, and the
/// replay's failure says its reads did not come back as written.
fn fault_found(fault: Fault, nth: u64, kind: &str, at: u64, words: &str) {
    let fs = mount();
    let sb = Sandbox::new();
    // Only the replayed writes are IO bytes long (the scratch files are filled in one write).
    fs.ctl()
        .add_sized(Op::Write, faultfs::When::Nth(nth), fault, None, Some(IO));
    let (code, text, v) = replay(&sb, &fs.mnt);
    let hit = fs.ctl().injected.pop().expect("the fault fired");
    assert_eq!(hit.offset, (nth - 1) * IO, "{hit:?}");
    assert_eq!(code, 1, "{text}");
    assert_eq!(v["status"], "failed", "{text}");
    let k = &v["verify"][kind];
    assert_eq!(k["blocks"], 1, "{}", v["verify"]);
    assert_eq!(bad(&v), 1, "{}", v["verify"]);
    let m = &k["first"][0];
    assert_eq!(m["offset_bytes"], at, "{m}");
    assert!(m["target"].as_str().unwrap().ends_with(&hit.file), "{m}");
    assert!(m["detail"].as_str().unwrap().contains(words), "{m}");
    let failure = v["failures"][0]["message"].as_str().unwrap();
    assert!(
        failure.contains("verify: 1 read(s) did not come back as written"),
        "{failure}"
    );
    assert!(text.contains("did not come back as written"), "{text}");
    assert_eq!(fs.listing(), Vec::<String>::new(), "leftovers: {text}");
}

#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn a_bit_flipped_in_a_replayed_write_fails_the_replay() {
    let flip = Fault::FlipBit { byte: 100, bit: 2 };
    fault_found(flip, 4, "corrupt", 3 * IO + 100, "one bit flipped");
}

#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn a_dropped_replayed_write_is_found_as_lost() {
    // The scratch file still holds what it was filled with there.
    fault_found(Fault::Drop, 2, "stale", IO, "previous generation");
}

/// `--repeat 2`: the second replay writes over the first one's bytes, in the same files. Its
/// writes carry a generation of their own, so a write of the second replay that the storage
/// drops is found (what is left there is the first replay's), and the replays fail.
#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn a_write_the_second_of_repeated_replays_loses_is_found() {
    let fs = mount();
    let sb = Sandbox::new();
    // The second replay's second write (the fill is not IO bytes long).
    fs.ctl().add_sized(
        Op::Write,
        faultfs::When::Nth(WRITES + 2),
        Fault::Drop,
        None,
        Some(IO),
    );
    let (code, text, v) = replay_with(&sb, &fs.mnt, &["--repeat", "2"]);
    let hit = fs.ctl().injected.pop().expect("the fault fired");
    assert_eq!(hit.offset, IO, "{hit:?}");
    assert_eq!(code, 1, "{text}");
    assert_eq!(v["status"], "failed", "{text}");
    assert_eq!(v["repeat"]["runs"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(fs.listing(), Vec::<String>::new(), "leftovers: {text}");
}
