//! fsbench on a file system that breaks its promises (tests/faultfs): errors mid-run fail the
//! run with file and offset, and every fault of the data is found and named.

mod common;
mod faultfs;

use common::Sandbox;
use faultfs::{Fault, FaultFs, Op, When};

fn mount() -> FaultFs {
    match FaultFs::mount() {
        Ok(fs) => fs,
        Err(why) => common::cannot(&format!("faultfs: {why}")),
    }
}

/// `fsbench ARGS` in `sb`: (exit status, stdout + stderr).
fn run(sb: &Sandbox, args: &[&str]) -> (i32, String) {
    let out = sb.cmd(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("--output JSON written");
    serde_json::from_str(&text).expect("valid JSON")
}

/// An error injected at a write fails the run: exit 1, status failed, the failure names the
/// file and the offset of the write that failed, the JSON is written, and the file fsbench
/// created is gone (kept with --keep).
fn error_mid_run(errno: i32, words: &str, extra: &[&str]) {
    let fs = mount();
    let sb = Sandbox::new();
    let f = fs.path("f");
    let f = f.to_str().unwrap();
    for keep in [false, true] {
        fs.ctl().counts.clear();
        fs.ctl()
            .add(Op::Write, When::Nth(100), Fault::Error(errno), Some("f"));
        let mut args = vec![
            "run", f, "--rw", "write", "--bs", "4k", "--size", "1m", "--output", "r.json",
        ];
        args.extend_from_slice(extra);
        if keep {
            args.push("--keep");
        }
        let (code, out) = run(&sb, &args);
        assert_eq!(code, 1, "{out}");
        let hit = fs.ctl().injected.pop().expect("the fault fired");
        assert_eq!(hit.offset, 99 * 4096);
        let at = format!("{f} at offset {}", hit.offset);
        assert!(out.contains(&at) && out.contains(words), "{out}");
        let r = json(&sb.file("r.json"));
        assert_eq!(r["status"], "failed", "{r}");
        let failure = &r["failures"][0];
        assert_eq!(failure["path"], f, "{r}");
        assert_eq!(failure["offset"], hit.offset, "{r}");
        std::fs::remove_file(sb.file("r.json")).unwrap();
        let left = if keep { vec!["f".to_string()] } else { vec![] };
        assert_eq!(fs.listing(), left, "leftovers on the mount");
    }
}

#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn eio_at_the_nth_write_fails_the_run_with_file_and_offset_and_leaves_nothing() {
    error_mid_run(libc::EIO, "Input/output error", &[]);
}

#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn enospc_mid_run_fails_the_run_with_file_and_offset_and_leaves_nothing() {
    error_mid_run(libc::ENOSPC, "ENOSPC", &["--cache", "direct"]);
}

#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn eio_on_a_read_at_an_offset_names_that_offset() {
    let fs = mount();
    let sb = Sandbox::new();
    let f = fs.path("f");
    let f = f.to_str().unwrap();
    fs.ctl().add(
        Op::Read,
        When::Offset(300 * 1024),
        Fault::Error(libc::EIO),
        Some("f"),
    );
    let (code, out) = run(
        &sb,
        &[
            "run", f, "--rw", "read", "--bs", "4k", "--size", "1m", "--output", "r.json",
        ],
    );
    assert_eq!(code, 1, "{out}");
    let hit = fs.ctl().injected.pop().expect("the fault fired");
    assert_eq!(hit.offset, 300 * 1024);
    assert!(
        out.contains(&format!("{f} at offset {}", 300 * 1024)),
        "{out}"
    );
    let r = json(&sb.file("r.json"));
    assert_eq!(r["status"], "failed");
    assert_eq!(r["failures"][0]["offset"], 300 * 1024);
    assert_eq!(fs.listing(), Vec::<String>::new());
}
