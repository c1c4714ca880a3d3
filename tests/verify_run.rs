//! `fsbench run --verify` / `--journal` / `vx --verify` end to end: every engine, cache policy,
//! worker mode and access pattern reads back what it wrote, clean; refusals are one line and
//! exit 2 with nothing left behind; the journal is written; the Result carries the section.

mod common;
use common::{words, Sandbox};
use std::path::Path;

/// What a temporary directory holds (the verify table must not be left there).
fn names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect()
}

fn run_json_tmp(sb: &Sandbox, tmp: &Path, args: &[String]) -> serde_json::Value {
    let out = sb.file("result.json");
    let mut c = sb.cmd(&args.iter().map(String::as_str).collect::<Vec<_>>());
    c.env("TMPDIR", tmp).arg("--output").arg(&out);
    let a = c.assert();
    let o = a.get_output();
    assert!(
        o.status.code() == Some(0),
        "{args:?}: exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).unwrap();
    v
}

#[test]
fn every_engine_cache_policy_worker_mode_and_pattern_reads_back_clean() {
    let sb = Sandbox::new();
    let tmp = sb.file("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut runs = 0;
    for engine in ["sync", "mmap", "uring"] {
        let caches: &[&str] = if engine == "mmap" {
            &["buffered", "dsync"]
        } else {
            &["buffered", "direct", "dsync", "discovered=8k"]
        };
        for cache in caches {
            for workers in ["threads", "per-user", "per-thread"] {
                for rw in ["write", "randwrite", "randrw"] {
                    let qd = if engine == "uring" { "4" } else { "1" };
                    let line = format!(
                        "run --rw {rw} --bs 4k --size 512k --count 150 --threads 2 --engine {engine} --qd {qd} --cache {cache} --processes {workers} --verify f"
                    );
                    let args: Vec<String> = words(&line).iter().map(|s| s.to_string()).collect();
                    let v = run_json_tmp(&sb, &tmp, &args);
                    let r = &v["verify"];
                    assert_eq!(v["status"], "complete", "{line}");
                    assert_eq!(r["read_back_done"], true, "{line}");
                    for k in ["stale", "misdirected", "torn", "corrupt"] {
                        assert_eq!(r[k]["blocks"], 0, "{line}: {k}");
                    }
                    let checked = r["blocks_checked"].as_u64().unwrap();
                    assert_eq!(checked, r["blocks_intact"].as_u64().unwrap(), "{line}");
                    assert!(r["read_back_blocks"].as_u64().unwrap() > 0, "{line}");
                    // The verify I/O is not the run's: the measured ops are the count.
                    assert_eq!(v["total"]["ops"], 300, "{line}");
                    assert!(names(&tmp).is_empty(), "{line}: left {:?}", names(&tmp));
                    assert_eq!(sb.listing(), ["tmp"], "{line}");
                    runs += 1;
                }
            }
        }
    }
    assert_eq!(runs, 3 * 3 * (4 + 2 + 4));
}

#[test]
fn vx_verifies_too() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&words(
            "vx -w rand_write -i iosize=8k,iocount=200,maxfilesize=1024 --verify f1",
        ))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("verify: "), "{text}");
    assert!(text.contains(" 0 did not come back as written"), "{text}");
}

#[test]
fn refusals_are_one_line_exit_2_and_leave_nothing() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("j.fsj"), b"precious").unwrap();
    for (line, says) in [
        (
            "run --rw randwrite --bs 100 --size 1m --count 10 --verify f",
            "--verify needs a block size of at least 128",
        ),
        (
            "run --rw write --bs 4k --size 1m --count 10 --verify --append f",
            "--append lets the file system choose",
        ),
        (
            "run --rw randwrite --bs 4k --size 1m --count 10 --verify --fdatasync-every 4 f",
            "use it instead of --fdatasync-every",
        ),
        (
            "run --rw randwrite --bs 4k --size 1m --count 10 --verify-backlog 0 f",
            "bad --verify-backlog 0",
        ),
        (
            "run --rw randwrite --bs 4k --size 1m --count 10 --journal j.fsj f",
            "the file exists; fsbench never overwrites a journal",
        ),
        (
            "run --rw randread --bs 4k --size 1m --count 10 --journal new.fsj f",
            "--journal records writes",
        ),
    ] {
        let a = sb.cmd(&words(line)).assert().code(2);
        let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
        assert_eq!(err.lines().count(), 1, "{line}: {err}");
        assert!(err.contains(says), "{line}: {err}");
        assert_eq!(sb.listing(), ["j.fsj"], "{line}");
        assert_eq!(std::fs::read(sb.file("j.fsj")).unwrap(), b"precious");
    }
}

/// Records of a journal file: header (magic, JSON length, CRC, JSON) padded to 32 bytes,
/// then 32-byte records.
fn journal_records(p: &Path) -> (serde_json::Value, u64) {
    let b = std::fs::read(p).unwrap();
    assert_eq!(&b[..8], b"FSBJRNL1");
    let len = u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&b[16..16 + len]).unwrap();
    let start = (16 + len).div_ceil(32) * 32;
    assert_eq!((b.len() - start) % 32, 0);
    (header, ((b.len() - start) / 32) as u64)
}

#[test]
fn the_journal_records_acknowledged_writes() {
    let sb = Sandbox::new();
    // Direct: every completed write is acknowledged (one record per write that was the
    // block's only one in flight: at queue depth 1, all of them).
    let v = sb.run_json(&words(
        "run --rw write --bs 4k --size 1m --count 256 --cache direct --journal d.fsj --keep f",
    ));
    assert_eq!(v["verify"]["journal_acks"], 256);
    let (h, n) = journal_records(&sb.file("d.fsj"));
    assert_eq!(n, 256);
    assert_eq!(h["block_size"], 4096);
    // Named as the run named them (the journal format of verify/journal.rs).
    assert_eq!(h["files"][0], "f", "{h}");
    // Worker processes append to the same journal, whole records each.
    let v = sb.run_json(&words(
        "run --rw randwrite --bs 4k --size 1m --count 200 --threads 2 --processes per-thread --cache direct --journal p.fsj h",
    ));
    let acks = v["verify"]["journal_acks"].as_u64().unwrap();
    assert!(acks > 300, "{acks}");
    // Every record is an acknowledgement or an overlap (two writes of a block in flight at
    // once: nothing promised about it).
    let overlaps = v["verify"]["journal_overlaps"].as_u64().unwrap();
    assert_eq!(journal_records(&sb.file("p.fsj")).1, acks + overlaps);
    // Buffered: only what an fsync covered.
    let v = sb.run_json(&words(
        "run --rw write --bs 4k --size 1m --count 100 --fsync-every 32 --journal b.fsj g",
    ));
    assert_eq!(v["verify"]["fsyncs"], 3);
    assert_eq!(journal_records(&sb.file("b.fsj")).1, 96);
    // With --fsync at the end, the rest too.
    sb.run_json(&words(
        "run --rw write --bs 4k --size 1m --count 100 --fsync-every 32 --fsync --journal c.fsj g",
    ));
    assert_eq!(journal_records(&sb.file("c.fsj")).1, 100);
}

#[test]
fn the_result_carries_the_verify_section_and_text_prints_it() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run --rw randrw --bs 4k --size 256k --count 500 --verify --verify-backlog 16 f",
    ));
    let r = v["verify"].as_object().expect("verify section");
    for k in [
        "blocks_checked",
        "blocks_intact",
        "blocks_skipped_overlap",
        "blocks_skipped_busy",
        "read_back_blocks",
        "backlog_blocks",
        "run_read_blocks",
        "read_back_s",
        "backlog_s",
        "read_back_done",
        "journal_acks",
        "journal_appends",
        "fsyncs",
        "stale",
        "misdirected",
        "torn",
        "corrupt",
    ] {
        assert!(r.contains_key(k), "no {k}");
    }
    assert!(r["backlog_blocks"].as_u64().unwrap() > 0);
    assert!(r["run_read_blocks"].as_u64().unwrap() > 0);
    assert_eq!(v["job"]["verify"], true);
    assert_eq!(v["job"]["verify_backlog"], 16);
    // Without --verify there is no section and the job has no verify keys.
    let v = sb.run_json(&words(
        "run --rw randwrite --bs 4k --size 256k --count 50 f",
    ));
    assert!(v.get("verify").is_none());
    assert!(v["job"].get("verify").is_none());
    let out = sb
        .cmd(&words(
            "run --rw randwrite --bs 4k --size 256k --count 50 --verify f",
        ))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("verify: "), "{text}");
}

/// `--verify` with `--buffer-compress`: the run reads back clean, the Result says how much of
/// each block the header takes and measures compression against what the rest of the block
/// can deliver, and nothing is explained away as a shortfall.
#[test]
fn verify_with_a_data_shape_reads_back_clean_and_accounts_for_the_header() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run --rw randwrite --bs 4k --size 4m --count 3000 --verify --buffer-compress 50 --dedupe 20 g",
    ));
    assert_eq!(v["status"], "complete");
    let ver = &v["verify"];
    let checked = ver["blocks_checked"].as_u64().unwrap();
    assert!(checked > 500, "{ver}");
    assert_eq!(ver["blocks_intact"].as_u64(), Some(checked), "{ver}");
    let d = &v["probes"]["data"];
    assert_eq!(d["asked"]["verify_header_bytes"], 64);
    assert_eq!(d["asked"]["deliverable_compress_saved_pct"], 49.2);
    let saved = d["measured"]["compress_saved_pct"].as_f64().unwrap();
    assert!((44.2..=54.2).contains(&saved), "{saved}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("first 64 bytes are its verify header"),
        "{notes}"
    );
    let explained = v["explain"].to_string();
    assert!(!explained.contains("data_shape"), "{explained}");
}
