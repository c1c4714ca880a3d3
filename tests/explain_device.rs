//! `explain`'s `device_idle` through the real binary, alone in its own test binary: the
//! check judges the whole disk, so the other explain tests' I/O running beside it in the
//! same binary would make the device look busy.
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
#[cfg_attr(
    not(all(has_uring, has_tmp_direct_io, has_tmp_blockdev)),
    ignore = "SKIPPED: needs io_uring and a temp dir on a block device that takes O_DIRECT"
)]
fn a_device_mostly_idle_under_a_rate_limit_is_named_and_a_busy_one_is_not() {
    // One test, so that the busy run cannot overlap the idle one. 20 direct 4 KiB reads a
    // second keep any disk busy a few percent of the time: the limit is the rate, not the
    // storage. (Other I/O on the same disk could push it past 30 %; on a shared machine
    // that is the one way this can fail.)
    let sb = Sandbox::new();
    let (c, text) = checks(
        &sb,
        "run --rw randread --bs 4k --size 4m --time 1s --rate-iops 20 --cache direct --iostat 100ms f",
    );
    assert!(
        !text.contains("no block device under the targets"),
        "has_tmp_blockdev said there is one: {text}"
    );
    assert!(c.contains(&"device_idle".to_string()), "{c:?}\n{text}");
    assert!(text.contains("the storage had capacity to spare"), "{text}");
    // Without device samples there is nothing to say.
    let (c, _) = checks(
        &sb,
        "run --rw randread --bs 4k --size 4m --time 0.3s --rate-iops 20 --cache direct f",
    );
    assert!(!c.contains(&"device_idle".to_string()), "{c:?}");
    // Large direct reads kept in flight keep the device busy.
    let (c, text) = checks(
        &sb,
        "run --rw read --bs 1m --size 128m --time 1s --engine uring --qd 8 --cache direct --iostat 100ms g",
    );
    assert!(!c.contains(&"device_idle".to_string()), "{c:?}\n{text}");
}
