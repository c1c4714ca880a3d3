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
    // A file system that stopped answering must fail the test, not hang it.
    let out = sb
        .cmd(args)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
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

/// The injector itself: a file renamed on the mount (as a workload renames its manifest
/// into place) opens under its new name, and a renamed directory keeps its tree.
#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn a_file_renamed_on_the_mount_opens_under_its_new_name() {
    let fs = mount();
    std::fs::write(fs.path("m.tmp"), b"manifest").unwrap();
    std::fs::create_dir(fs.path("d")).unwrap();
    std::fs::write(fs.path("d/x"), b"x").unwrap();
    std::fs::rename(fs.path("m.tmp"), fs.path("m")).unwrap();
    std::fs::rename(fs.path("d"), fs.path("e")).unwrap();
    assert_eq!(std::fs::read(fs.path("m")).unwrap(), b"manifest");
    assert_eq!(std::fs::read(fs.path("e/x")).unwrap(), b"x");
    std::fs::remove_file(fs.path("m")).unwrap();
    std::fs::remove_file(fs.path("e/x")).unwrap();
    std::fs::remove_dir(fs.path("e")).unwrap();
    assert_eq!(fs.listing(), Vec::<String>::new());
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

const BS: u64 = 4096;

fn blk(i: u64) -> u64 {
    i * BS
}

/// The offsets listed for each finding of the first file of a verify report.
fn offsets(v: &serde_json::Value, kind: &str) -> Vec<u64> {
    v["files"][0][kind]["first_offsets_bytes"]
        .as_array()
        .unwrap_or_else(|| panic!("{kind}: {v}"))
        .iter()
        .map(|o| o.as_u64().unwrap())
        .collect()
}

/// The offsets of a kind in a run's Result (`verify` section).
fn run_offsets(r: &serde_json::Value, kind: &str) -> Vec<u64> {
    let mut v: Vec<u64> = r["verify"][kind]["first"]
        .as_array()
        .unwrap_or_else(|| panic!("{kind}: {}", r["verify"]))
        .iter()
        .map(|m| m["offset_bytes"].as_u64().unwrap())
        .collect();
    v.sort_unstable();
    v
}

fn verify(sb: &Sandbox, file: &std::path::Path, journal: &str) -> (i32, serde_json::Value) {
    let (code, out) = run(
        sb,
        &[
            "verify",
            file.to_str().unwrap(),
            "--journal",
            journal,
            "--output",
            "v.json",
        ],
    );
    let v = json(&sb.file("v.json"));
    std::fs::remove_file(sb.file("v.json")).unwrap();
    assert!(out.contains("verify:"), "{out}");
    (code, v)
}

/// A dropped write, a misdirected one, half a block and a flipped bit, each injected once
/// into a sequential run whose every write is acknowledged (O_DIRECT completion): every one
/// is found, by the run's read-back and by `fsbench verify` after it, named as what it is,
/// at its offset, and nothing else is reported. A clean run on the same mount reports
/// nothing.
#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn every_injected_fault_of_the_data_is_found_and_named() {
    let fs = mount();
    let sb = Sandbox::new();
    {
        let mut c = fs.ctl();
        c.add(Op::Write, When::Offset(blk(5)), Fault::Drop, Some("f"));
        let to = blk(2);
        c.add(
            Op::Write,
            When::Offset(blk(9)),
            Fault::Misdirect { to },
            Some("f"),
        );
        c.add(Op::Write, When::Offset(blk(11)), Fault::Half, Some("f"));
        let flip = Fault::FlipBit { byte: 1000, bit: 3 };
        c.add(Op::Write, When::Offset(blk(13)), flip, Some("f"));
    }
    let f = fs.path("f");
    let args = |name: &str, journal: &str| {
        let p = fs.path(name).to_str().unwrap().to_string();
        let mut a: Vec<String> = ["run", &p, "--rw", "write", "--bs", "4k", "--size", "256k"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for w in [
            "--cache",
            "direct",
            "--journal",
            journal,
            "--keep",
            "--output",
            "r.json",
        ] {
            a.push(w.to_string());
        }
        a
    };
    let a = args("f", "j");
    let (code, out) = run(&sb, &a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1, "a run whose data did not come back fails: {out}");
    let injected = fs.ctl().injected.clone();
    assert_eq!(injected.len(), 4, "{injected:?}");
    assert!(fs.ctl().rules.is_empty());

    // The run's own read-back.
    let r = json(&sb.file("r.json"));
    assert_eq!(
        run_offsets(&r, "stale"),
        vec![blk(5), blk(9)],
        "{}",
        r["verify"]
    );
    assert_eq!(run_offsets(&r, "misdirected"), vec![blk(2)]);
    assert_eq!(run_offsets(&r, "torn"), vec![blk(11)]);
    assert_eq!(run_offsets(&r, "corrupt"), vec![blk(13)]);

    // fsbench verify after the run, against the journal.
    let (code, v) = verify(&sb, &f, "j");
    assert_eq!(code, 1, "{v}");
    let mut found = 0;
    for hit in &injected {
        let (kind, at) = match hit.fault {
            Fault::Drop => ("lost", hit.offset),
            Fault::Misdirect { to } => {
                // Where it landed, and where it is missing.
                assert!(offsets(&v, "lost").contains(&hit.offset), "{v}");
                ("misdirected", to)
            }
            Fault::Half => ("torn", hit.offset),
            Fault::FlipBit { .. } => ("corrupt", hit.offset),
            other => panic!("not injected here: {other:?}"),
        };
        assert!(
            offsets(&v, kind).contains(&at),
            "{hit:?} not found as {kind}: {v}"
        );
        found += 1;
    }
    assert_eq!(found, injected.len(), "100 % of the injected faults found");
    let mismatches = v["files"][0]["mismatches"].as_array().unwrap();
    let flip = mismatches
        .iter()
        .find(|m| m["offset_bytes"] == blk(13))
        .unwrap();
    assert_eq!(flip["verdict"]["bit_flip"], true, "{flip}");
    assert_eq!(flip["first_difference"]["offset_bytes"], blk(13) + 1000);
    assert_eq!(flip["first_difference"]["bit_flip"], true);
    // Nothing but what was injected: 2 lost, 1 misdirected, 1 torn, 1 corrupt.
    assert_eq!(v["failures"], 5, "{v}");
    assert_eq!(v["files"][0]["intact"]["blocks"], 64 - 5);

    // A clean run on the same mount: nothing reported.
    std::fs::remove_file(sb.file("r.json")).unwrap();
    let a = args("g", "jg");
    let (code, out) = run(&sb, &a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{out}");
    let r = json(&sb.file("r.json"));
    for kind in ["stale", "misdirected", "torn", "corrupt"] {
        assert_eq!(r["verify"][kind]["blocks"], 0, "{kind}: {}", r["verify"]);
    }
    let (code, v) = verify(&sb, &fs.path("g"), "jg");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["files"][0]["intact"]["blocks"], 64);
    assert_eq!(
        fs.ctl().injected.len(),
        4,
        "nothing injected in the clean run"
    );
}

/// A volatile write cache loses power: every write not fsynced is forgotten. `fsbench verify`
/// finds every synced (acknowledged) block intact, calls the forgotten ones stale-but-allowed
/// (nothing was promised for them), and reports nothing lost.
#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn a_crash_forgets_unsynced_writes_and_verify_allows_them_and_loses_nothing() {
    let fs = mount();
    let sb = Sandbox::new();
    {
        let mut c = fs.ctl();
        c.volatile = true;
        // The 9th block write of the run (the layout's larger writes do not count): writes
        // 7 and 8 wait in the cache since the fsync after write 6.
        c.add_sized(Op::Write, When::Nth(9), Fault::Crash, Some("f"), Some(BS));
    }
    let f = fs.path("f");
    let (code, out) = run(
        &sb,
        &[
            "run",
            f.to_str().unwrap(),
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--size",
            "32k",
            "--nrep",
            "2",
            "--journal",
            "j",
            "--fsync-every",
            "3",
            "--keep",
        ],
    );
    assert_eq!(code, 1, "the crash fails the run: {out}");
    assert!(out.contains("Input/output error"), "{out}");
    let (synced, forgotten) = {
        let mut c = fs.ctl();
        c.recover();
        let blocks = |v: &[(String, u64, u64)]| -> Vec<u64> {
            v.iter()
                .filter(|(n, _, len)| n == "f" && *len == BS)
                .map(|(_, o, _)| *o)
                .collect()
        };
        (blocks(&c.synced), blocks(&c.forgotten))
    };
    assert_eq!(synced.len(), 6, "{synced:?}");
    assert_eq!(forgotten.len(), 2, "{forgotten:?}");

    let (code, v) = verify(&sb, &f, "j");
    assert_eq!(code, 0, "{v}");
    for kind in ["lost", "corrupt", "misdirected", "torn"] {
        assert_eq!(v["files"][0][kind]["blocks"], 0, "{kind}: {v}");
    }
    let intact = offsets(&v, "intact");
    let allowed = offsets(&v, "stale_allowed");
    assert_eq!(intact.len() + allowed.len(), 8, "{v}");
    for o in &synced {
        assert!(intact.contains(o), "synced block {o} not intact: {v}");
    }
    // The run's seed is fixed: at least one forgotten block was never synced before.
    assert!(
        forgotten.iter().any(|o| !synced.contains(o)),
        "{forgotten:?}"
    );
    for o in forgotten.iter().filter(|o| !synced.contains(o)) {
        assert!(allowed.contains(o), "forgotten block {o} not allowed: {v}");
    }
    // Every block is either synced (intact) or not (allowed): nothing in between.
    let mut s = synced.clone();
    s.sort_unstable();
    s.dedup();
    assert_eq!(intact, s, "{v}");
}

/// The injector itself: each fault does to the stored bytes what it says (plain std I/O).
#[cfg_attr(not(has_fuse), ignore = "SKIPPED: needs root and /dev/fuse")]
#[test]
fn the_injector_does_what_it_is_told() {
    let fs = mount();
    let p = fs.path("x");
    let block = |v: u8| vec![v; BS as usize];
    {
        let mut c = fs.ctl();
        c.add(Op::Write, When::Nth(2), Fault::Drop, Some("x"));
        c.add(
            Op::Write,
            When::Nth(3),
            Fault::Misdirect { to: 0 },
            Some("x"),
        );
        c.add(Op::Write, When::Nth(4), Fault::Half, Some("x"));
        c.add(
            Op::Write,
            When::Nth(5),
            Fault::FlipBit { byte: 7, bit: 1 },
            Some("x"),
        );
    }
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::create(&p).unwrap();
        for i in 0..5u64 {
            f.write_all_at(&block(i as u8 + 1), blk(i)).unwrap();
        }
        f.sync_all().unwrap();
    }
    let got = std::fs::read(&p).unwrap();
    let at = |i: u64| &got[blk(i) as usize..blk(i + 1) as usize];
    assert_eq!(at(0), block(3), "block 2's write landed on block 0");
    assert_eq!(at(1), block(0), "dropped");
    assert_eq!(at(2), block(0), "misdirected away");
    assert_eq!(&at(3)[..2048], &block(4)[..2048]);
    assert_eq!(&at(3)[2048..], &block(0)[2048..], "half stored");
    let mut flipped = block(5);
    flipped[7] ^= 2;
    assert_eq!(at(4), flipped);
    // Volatile cache: a read sees the cached write; a crash forgets it; fsync keeps it.
    {
        use std::os::unix::fs::FileExt;
        fs.ctl().volatile = true;
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.write_all_at(&block(9), blk(1)).unwrap();
        f.sync_data().unwrap();
        f.write_all_at(&block(8), blk(2)).unwrap();
        assert_eq!(
            &std::fs::read(&p).unwrap()[blk(2) as usize..blk(3) as usize],
            block(8)
        );
        fs.ctl()
            .add(Op::Write, When::Nth(1), Fault::Crash, Some("x"));
        assert!(f.write_all_at(&block(7), blk(3)).is_err());
    }
    assert!(std::fs::read(&p).is_err(), "a crashed disk does not answer");
    fs.ctl().recover();
    let got = std::fs::read(&p).unwrap();
    assert_eq!(
        &got[blk(1) as usize..blk(2) as usize],
        block(9),
        "synced: kept"
    );
    assert_eq!(
        &got[blk(2) as usize..blk(3) as usize],
        block(0),
        "unsynced: forgotten"
    );
    assert_eq!(fs.ctl().injected.len(), 5);
}
