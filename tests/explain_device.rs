//! `explain`'s `device_idle` through the real binary, on a loop device of its own: the
//! check judges the whole device, so other I/O on the machine's disk (other tests, other
//! programs) would make it look busy.
mod common;

use common::{explain_checks as checks, Sandbox};

#[test]
#[cfg_attr(
    not(all(has_uring, has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs io_uring, root, loop devices and mkfs.ext4"
)]
fn a_device_mostly_idle_under_a_rate_limit_is_named_and_a_busy_one_is_not() {
    // On a loop device of its own, so that no other I/O on the machine's disk counts. 50
    // direct 4 KiB reads a second keep it busy a few percent of the time (under 30 % even
    // when each read reaches the disk under the loop device) at a flat throughput (10 reads
    // in every 200 ms device sample): the limit is the rate, not the storage.
    let sb = Sandbox::new();
    // Room for two 128 MiB files at once: ext4 frees a removed file's blocks a moment after
    // the unlink, and each check runs its command twice back to back.
    let Some(fs) = common::MountedFs::new(sb.path(), "ext4", 400) else {
        common::cannot("could not make and mount ext4 on a loop device");
    };
    // A fresh ext4 zeroes its inode tables in the background (ext4lazyinit), bursts of
    // writes that would make the device's throughput swing: stop it, so the device carries
    // only this test's I/O.
    let quiet = std::process::Command::new("mount")
        .args(["-o", "remount,noinit_itable"])
        .arg(fs.mnt.path())
        .status()
        .is_ok_and(|s| s.success());
    assert!(quiet, "remount noinit_itable failed");
    let f = fs.mnt.path().join("f");
    let g = fs.mnt.path().join("g");
    let (f, g) = (f.to_str().unwrap(), g.to_str().unwrap());
    let (c, text) = checks(
        &sb,
        &format!("run --rw randread --bs 4k --size 4m --time 1.5s --rate-iops 50 --cache direct --iostat 200ms {f}"),
    );
    assert!(
        !text.contains("no block device under the targets"),
        "the loop device is under the target: {text}"
    );
    assert!(c.contains(&"device_idle".to_string()), "{c:?}\n{text}");
    assert!(text.contains("the storage had capacity to spare"), "{text}");
    // Flatness judged on the samples of the loop device (the one that carried the run, not
    // the disk under it, which other programs share), with the figures.
    assert!(
        text.contains("intervals of loop") && text.contains("'s samples: mean "),
        "{text}"
    );
    assert!(text.contains("coefficient of variation"), "{text}");
    // With a --status-interval series, the run's own per-interval throughput is judged.
    let v = sb.run_json(&common::words(&format!(
        "run --rw randread --bs 4k --size 4m --time 1.5s --rate-iops 50 --cache direct --iostat 200ms --status-interval 300ms {f}"
    )));
    let idle = v["explain"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["check"] == "device_idle"))
        .unwrap_or_else(|| panic!("device_idle expected: {}", v["explain"]));
    let ev = &idle["evidence"];
    assert_eq!(ev["throughput_series"], "status_interval", "{ev}");
    assert_eq!(ev["throughput_flat"], true, "{ev}");
    assert!(ev["throughput_intervals"].as_u64().unwrap() >= 4, "{ev}");
    assert!(ev["throughput_cv"].as_f64().unwrap() <= 0.25, "{ev}");
    // Without device samples there is nothing to say.
    let (c, _) = checks(
        &sb,
        &format!(
            "run --rw randread --bs 4k --size 4m --time 0.3s --rate-iops 20 --cache direct {f}"
        ),
    );
    assert!(!c.contains(&"device_idle".to_string()), "{c:?}");
    // Large direct reads kept in flight keep the device busy.
    let (c, text) = checks(
        &sb,
        &format!("run --rw read --bs 1m --size 128m --time 1s --engine uring --qd 8 --cache direct --iostat 100ms {g}"),
    );
    assert!(!c.contains(&"device_idle".to_string()), "{c:?}\n{text}");
}
