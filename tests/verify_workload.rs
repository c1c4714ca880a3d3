//! `fsbench workload NAME --verify` through the real binary: shipped personalities at a small
//! scale verify clean (reads checked, nothing reported, files deleted and recreated, a log
//! appended by many threads at once skipped and not reported), `--verify` does not change
//! what a flowop does (same ops and bytes per flowop, every byte of every file read is
//! compared), faults injected into a fileset file mid-run (tests/faultfs) are found and
//! named with the file and offset, and bad combinations are refused in one line.

mod common;
mod faultfs;

use common::Sandbox;
use faultfs::{Fault, FaultFs, Op, When};
use serde_json::Value;

/// `fsbench ARGS --output r.json` in `sb`: (exit status, stdout + stderr, the JSON).
fn run(sb: &Sandbox, args: &[&str]) -> (i32, String, Value) {
    let out_path = sb.file("r.json");
    let _ = std::fs::remove_file(&out_path);
    let mut all = args.to_vec();
    let o = out_path.to_str().unwrap().to_string();
    all.extend(["--output", &o]);
    let out = sb
        .cmd(&all)
        .timeout(std::time::Duration::from_secs(180))
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
fn shipped_personalities_verify_clean_at_a_small_scale() {
    for (name, defines) in [
        (
            "fileserver",
            "-D nfiles=40 -D nthreads=3 -D meanfilesize=16k",
        ),
        ("varmail", "-D nfiles=40 -D nthreads=3"),
        ("webserver", "-D nfiles=40 -D nthreads=4"),
    ] {
        let sb = Sandbox::new();
        let dir = sb.path().join("data");
        std::fs::create_dir(&dir).unwrap();
        let mut args = vec!["workload", name, "--dir", dir.to_str().unwrap()];
        args.extend(common::words(defines));
        args.extend(["--time", "2s", "--verify"]);
        let (code, text, v) = run(&sb, &args);
        assert_eq!(code, 0, "{name}: {text}");
        assert_eq!(v["status"], "complete", "{name}: {text}");
        let checked = v["verify"]["blocks_checked"].as_u64().unwrap();
        assert!(checked > 0, "{name}: nothing checked: {}", v["verify"]);
        assert!(v["verify"]["bytes_checked"].as_u64().unwrap() > 0, "{name}");
        assert_eq!(bad(&v), 0, "{name}: {}", v["verify"]);
        assert_eq!(
            v["verify"]["blocks_intact"].as_u64().unwrap(),
            checked,
            "{name}"
        );
        assert!(text.contains("reads checked"), "{name}: {text}");
        assert!(text.contains("0 did not come back as written"), "{text}");
        // Everything the run created is removed.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{name}");
    }
}

/// One thread: 6 files created and written whole (3000-byte writes), appended to, then
/// opened and read whole; the thread ends when no file is left to create.
const FLOW: &str = "set mode quit alldone
define fileset name=fs,path=$dir,entries=6,size=20000,prealloc=0
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

fn groups(v: &Value) -> Vec<(String, u64, u64, u64)> {
    v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let s = &g["stats"];
            (
                g["name"].as_str().unwrap().to_string(),
                s["ops"].as_u64().unwrap(),
                s["read_bytes"].as_u64().unwrap(),
                s["write_bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn verify_changes_no_flowop_and_compares_every_byte_read() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("flow.f"), FLOW).unwrap();
    let dir = sb.path().to_str().unwrap().to_string();
    let (code, text, plain) = run(&sb, &["workload", "flow.f", "--dir", &dir]);
    assert_eq!(code, 0, "{text}");
    assert!(
        plain["verify"].is_null(),
        "no verify section without --verify"
    );
    let (code, text, checked) = run(&sb, &["workload", "flow.f", "--dir", &dir, "--verify"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(groups(&plain), groups(&checked));
    let g = groups(&checked);
    let of = |n: &str| g.iter().find(|x| x.0 == n).unwrap().clone();
    assert_eq!(of("ww").3, 6 * 20000);
    assert_eq!(of("ap").3, 6 * 1000);
    assert_eq!(of("rw").2, 6 * 21000);
    // Every byte read was compared: each file whole, in 4096-byte reads (6 with data, one
    // at the end that returns nothing).
    let vr = &checked["verify"];
    assert_eq!(vr["bytes_checked"], 6 * 21000, "{vr}");
    assert_eq!(vr["blocks_checked"], 6 * 7, "{vr}");
    assert_eq!(vr["blocks_intact"], 6 * 7, "{vr}");
    assert_eq!(bad(&checked), 0);
}

fn mount() -> FaultFs {
    match FaultFs::mount() {
        Ok(fs) => fs,
        Err(why) => common::cannot(&format!("faultfs: {why}")),
    }
}

/// The flow on the fault-injecting mount with one fault at the `nth` 3000-byte write (the
/// writewholefile writes; files are 30000 bytes: ten writes each): exit 1, status failed,
/// one mismatch of `kind` at the file offset `at` gives for the offset the fault hit, its
/// detail containing `words`; `total` mismatches of every kind.
fn fault_found(
    fault: Fault,
    nth: u64,
    kind: &str,
    at: impl Fn(u64) -> u64,
    words: &str,
    total: u64,
) {
    let fs = mount();
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("flow.f"),
        FLOW.replace("size=20000", "size=30000")
            .replace("entries=6", "entries=3"),
    )
    .unwrap();
    fs.ctl()
        .add_sized(Op::Write, When::Nth(nth), fault, None, Some(3000));
    let mnt = fs.mnt.to_str().unwrap().to_string();
    let (code, text, v) = run(&sb, &["workload", "flow.f", "--dir", &mnt, "--verify"]);
    let hit = fs.ctl().injected.pop().expect("the fault fired");
    assert_eq!(code, 1, "{text}");
    assert_eq!(v["status"], "failed", "{text}");
    let k = &v["verify"][kind];
    assert_eq!(k["blocks"], 1, "{}", v["verify"]);
    assert_eq!(bad(&v), total, "{}", v["verify"]);
    let m = &k["first"][0];
    // The first byte that differs: where the fault hit, unless the bytes expected there
    // happen to equal what was found (a dropped write leaves zeros, and a stream byte is 0
    // one time in 256), then a few bytes on.
    let found = m["offset_bytes"].as_u64().unwrap();
    assert!(
        (at(hit.offset)..at(hit.offset) + 16).contains(&found),
        "{m} {hit:?}"
    );
    assert!(
        m["target"].as_str().unwrap().ends_with(&hit.file),
        "{m} {hit:?}"
    );
    assert!(m["detail"].as_str().unwrap().contains(words), "{m}");
    assert!(text.contains("did not come back as written"), "{text}");
    assert!(
        v["failures"][0]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("verify: {total} read(s)")),
        "{}",
        v["failures"]
    );
    // The fileset is removed, its manifest with it.
    assert_eq!(
        fs.listing(),
        Vec::<String>::new(),
        "leftovers on the mount: {text}"
    );
}

#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn a_bit_flipped_in_a_fileset_write_is_found_at_its_byte() {
    let flip = Fault::FlipBit { byte: 100, bit: 2 };
    fault_found(flip, 15, "corrupt", |o| o + 100, "one bit flipped", 1);
}

#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn a_dropped_fileset_write_is_found_as_lost() {
    fault_found(Fault::Drop, 4, "stale", |o| o, "lost write", 1);
}

#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn a_misdirected_fileset_write_is_named_with_the_offset_it_was_made_for() {
    // The 14th write (file 2, offset 9000) lands at 0: offset 0 holds offset 9000's bytes
    // (misdirected), and 9000 holds zeros (stale: the write is lost where it belonged).
    let m = Fault::Misdirect { to: 0 };
    fault_found(
        m,
        14,
        "misdirected",
        |_| 0,
        "bytes written for offset 9000",
        2,
    );
}

#[test]
fn bad_combinations_are_refused_in_one_line() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("w.f"),
        "define fileset name=fs,path=$dir,entries=2,size=4k,prealloc=0
define process name=p { thread name=t {
  flowop createfile name=c,filesetname=fs,fd=1
  flowop writewholefile name=w,fd=1,iosize=4k
  flowop closefile name=cl,fd=1 } }
run 1
",
    )
    .unwrap();
    let dir = sb.path().to_str().unwrap().to_string();
    for args in [
        vec!["workload", "w.f", "--dir", &dir, "--verify"],
        vec!["workload", "list", "--verify"],
        vec!["workload", "show", "varmail", "--verify"],
    ] {
        let out = sb.cmd(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("--verify"), "{err}");
    }
    // Refused before anything was created.
    assert_eq!(sb.listing(), vec!["w.f".to_string()]);
}
