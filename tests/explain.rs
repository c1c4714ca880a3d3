//! `explain`: each check provoked by a run that should trip it, and silent on a run that
//! should not, through the real binary; the checks that depend on the machine's load (the
//! host-bound check) are unit-tested on synthesised Results in `explain::tests`.
mod common;

use common::{words, Sandbox};

/// The checks a run's Result carries, and its text output.
fn checks(sb: &Sandbox, line: &str) -> (Vec<String>, String) {
    let v = sb.run_json(&words(line));
    let checks = v["explain"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["check"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    let out = sb.cmd(&words(line)).assert().success();
    (
        checks,
        String::from_utf8_lossy(&out.get_output().stdout).to_string(),
    )
}

#[test]
fn buffered_reads_of_a_small_file_measure_the_page_cache() {
    let sb = Sandbox::new();
    let (c, text) = checks(&sb, "run --rw randread --bs 4k --size 4m --time 0.3s f");
    assert!(c.contains(&"page_cache".to_string()), "{c:?}");
    assert!(
        text.contains("explain:\n  - buffered reads of 4.00 MiB"),
        "{text}"
    );
    assert!(text.contains("measures the page cache"), "{text}");
}

#[test]
#[cfg_attr(
    not(has_tmp_direct_io),
    ignore = "SKIPPED: the temp dir's file system takes no O_DIRECT"
)]
fn a_clean_direct_run_explains_nothing() {
    let sb = Sandbox::new();
    let (c, text) = checks(&sb, "run --rw read --bs 64k --size 4m --cache direct f");
    assert!(c.is_empty(), "{c:?}");
    assert!(!text.contains("explain:"), "{text}");
    // Aligned direct I/O: no fallback; 1 MiB I/Os with discovered direct go direct.
    let (c, _) = checks(&sb, "run --rw read --bs 1m --size 4m --cache discovered f");
    assert!(!c.iter().any(|x| x.starts_with("d")), "{c:?}");
}

#[test]
fn reads_of_a_sparse_file_are_named_and_a_written_file_is_not() {
    let sb = Sandbox::new();
    std::fs::File::create(sb.file("sparse"))
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let (c, text) = checks(&sb, "run --rw read --bs 64k --size 8m sparse");
    assert!(c.contains(&"sparse_reads".to_string()), "{c:?}");
    assert!(
        text.contains("is sparse (0 B of 8.00 MiB allocated)"),
        "{text}"
    );
    let (c, _) = checks(&sb, "run --rw read --bs 64k --size 8m written");
    assert!(!c.contains(&"sparse_reads".to_string()), "{c:?}");
}

#[test]
fn short_buffered_writes_without_fsync_are_named_and_with_fsync_are_not() {
    let sb = Sandbox::new();
    let (c, _) = checks(&sb, "run --rw write --bs 64k --size 4m f");
    assert!(c.contains(&"dirty_at_stop".to_string()), "{c:?}");
    let (c, _) = checks(&sb, "run --rw write --bs 64k --size 4m --fsync f");
    assert!(!c.contains(&"dirty_at_stop".to_string()), "{c:?}");
    let (c, _) = checks(
        &sb,
        "run --rw write --bs 64k --size 4m --verify --fsync-every 8 g",
    );
    assert!(!c.contains(&"dirty_at_stop".to_string()), "{c:?}");
}

#[test]
#[cfg_attr(
    not(has_tmp_direct_io),
    ignore = "SKIPPED: the temp dir's file system takes no O_DIRECT"
)]
fn direct_io_that_was_not_direct_is_named() {
    let sb = Sandbox::new();
    let (c, text) = checks(&sb, "run --rw read --bs 1000 --size 1m --cache direct f");
    assert!(c.contains(&"direct_fallback".to_string()), "{c:?}");
    assert!(text.contains("were not aligned for direct I/O"), "{text}");
    let (c, text) = checks(&sb, "run --rw read --bs 4k --size 1m --cache discovered f");
    assert!(c.contains(&"discovered_never_direct".to_string()), "{c:?}");
    assert!(text.contains("below the threshold (256.00 KiB)"), "{text}");
    let (c, _) = checks(&sb, "run --rw read --bs 4k --size 1m --cache direct f");
    assert!(!c.iter().any(|x| x.starts_with("d")), "{c:?}");
}

#[test]
#[cfg_attr(
    not(all(has_uring, has_tmp_direct_io)),
    ignore = "SKIPPED: needs io_uring and O_DIRECT in the temp dir"
)]
fn a_queue_depth_never_reached_is_named() {
    let sb = Sandbox::new();
    let (c, text) = checks(
        &sb,
        "run --rw randread --bs 4k --size 4m --time 0.5s --engine uring --qd 32 --rate-iops 200 --cache direct f",
    );
    assert!(c.contains(&"queue_depth".to_string()), "{c:?}");
    assert!(text.contains("queue depth 32 was asked for"), "{text}");
    let (c, _) = checks(
        &sb,
        "run --rw randread --bs 4k --size 4m --count 2000 --engine uring --qd 4 --cache direct f",
    );
    assert!(!c.contains(&"queue_depth".to_string()), "{c:?}");
}
