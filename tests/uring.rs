//! The io_uring engine end to end: same bytes and result shape as the sync engine, every cache
//! policy, queue depth that really overlaps I/Os, rate control, and runtime feature probing.

mod common;

use common::{cannot, words, Sandbox};
use serde_json::Value;

/// io_uring can be switched off (sysctl kernel.io_uring_disabled, seccomp in containers):
/// build.rs probes it with a real ring and these tests are ignored without it
/// (`has_uring`); here a real ring again, failing loudly if the probe was wrong.
fn need_uring() {
    if let Err(e) = io_uring::IoUring::new(2) {
        cannot(&format!("io_uring is unavailable here: {e}"));
    }
}

fn total(v: &Value) -> &Value {
    &v["total"]
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// Share of submissions made with more than one I/O in flight, in percent.
fn overlapped_pct(v: &Value) -> f64 {
    total(v)["inflight_pct"]
        .as_array()
        .expect("inflight_pct")
        .iter()
        .filter(|b| b[0].as_str() != Some("1"))
        .map(|b| b[1].as_f64().unwrap())
        .sum()
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn sequential_write_at_qd1_writes_the_same_bytes_as_sync() {
    need_uring();
    let sb = Sandbox::new();
    for engine in ["sync", "uring"] {
        let name = format!("{engine}.dat");
        let v = sb.run_json(&[
            "run", "--rw", "write", "--bs", "8k", "--size", "2m", "--seed", "42", "--engine",
            engine, "--keep", &name,
        ]);
        assert_eq!(u(total(&v), "write_bytes"), 2 << 20, "{engine}");
        assert_eq!(u(total(&v), "errors"), 0);
    }
    let a = std::fs::read(sb.file("sync.dat")).unwrap();
    let b = std::fs::read(sb.file("uring.dat")).unwrap();
    assert_eq!(a.len(), 2 << 20);
    assert!(a.iter().any(|&x| x != 0), "sync wrote only zeros");
    assert!(
        a == b,
        "uring wrote different bytes from sync for the same seed"
    );
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn random_write_at_qd1_writes_the_same_bytes_as_sync() {
    need_uring();
    let sb = Sandbox::new();
    for engine in ["sync", "uring"] {
        let name = format!("{engine}.dat");
        sb.run_json(&[
            "run",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--size",
            "1m",
            "--count",
            "300",
            "--seed",
            "7",
            "--cache",
            "direct",
            "--engine",
            engine,
            "--keep",
            &name,
        ]);
    }
    let a = std::fs::read(sb.file("sync.dat")).unwrap();
    let b = std::fs::read(sb.file("uring.dat")).unwrap();
    assert!(a == b, "random writes differ between sync and uring");
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn deep_queue_writes_every_block_from_the_seeded_buffers() {
    need_uring();
    let sb = Sandbox::new();
    sb.run_json(&words(
        "run --rw write --bs 4k --size 1m --seed 9 --keep sync.dat",
    ));
    let v = sb.run_json(&words("run --rw write --bs 4k --size 1m --seed 9 --cache direct --engine uring --qd 8 --keep uring.dat"));
    assert_eq!(u(total(&v), "write_bytes"), 1 << 20);
    let a = std::fs::read(sb.file("sync.dat")).unwrap();
    let b = std::fs::read(sb.file("uring.dat")).unwrap();
    // At QD 8 the blocks come from 8 buffer slots; slot 0 holds what sync writes.
    let blocks: std::collections::HashSet<&[u8]> = b.chunks(4096).collect();
    assert!(blocks.len() <= 8, "{} distinct blocks", blocks.len());
    assert!(blocks.contains(&a[..4096]));
    assert!(b.chunks(4096).all(|c| c.iter().any(|&x| x != 0)));
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn reads_every_byte_under_every_cache_policy() {
    need_uring();
    let sb = Sandbox::new();
    let data: Vec<u8> = (0..(1u32 << 20))
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(sb.file("data"), &data).unwrap();
    for cache in [
        "buffered",
        "direct",
        "dsync",
        "discovered=32k",
        "discovered=1m",
    ] {
        let v = sb.run_json(&[
            "run", "--rw", "read", "--bs", "64k", "--size", "1m", "--cache", cache, "--engine",
            "uring", "--qd", "4", "data",
        ]);
        assert_eq!(u(total(&v), "read_bytes"), 1 << 20, "{cache}");
        assert_eq!(u(total(&v), "read_ops"), 16, "{cache}");
        assert_eq!(u(total(&v), "errors"), 0, "{cache}");
        if cache == "discovered=32k" {
            assert_eq!(u(total(&v), "direct_ops"), 16);
        }
    }
    assert!(
        std::fs::read(sb.file("data")).unwrap() == data,
        "a read changed the file"
    );
    // Concurrent: fsbench preallocates and writes the file itself, then runs direct.
    let v = sb.run_json(&words("run --rw randrw --rwmix-read 50 --bs 4k --size 4m --count 500 --cache concurrent --engine uring --qd 8 conc.dat"));
    assert_eq!(u(total(&v), "ops"), 500);
    assert_eq!(u(total(&v), "errors"), 0);
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn misaligned_direct_ios_take_the_dsync_fallback() {
    need_uring();
    let sb = Sandbox::new();
    let v = sb.run_json(&words("run --rw write --bs 1000 --size 100000 --cache direct --engine uring --qd 4 --keep mis.dat"));
    assert_eq!(u(total(&v), "errors"), 0);
    assert!(u(total(&v), "buffered_fallback_ops") > 0);
    assert_eq!(u(total(&v), "write_bytes"), 100000);
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn mixed_read_write_follows_rdpct() {
    need_uring();
    let sb = Sandbox::new();
    let v = sb.run_json(&words("run --rw randrw --rwmix-read 70 --bs 4k --size 8m --count 4000 --cache direct --engine uring --qd 16 mix.dat"));
    let t = total(&v);
    assert_eq!(u(t, "ops"), 4000);
    let pct = u(t, "read_ops") as f64 * 100.0 / 4000.0;
    assert!((65.0..75.0).contains(&pct), "read share {pct}%");
    assert_eq!(u(t, "read_bytes") + u(t, "write_bytes"), 4000 * 4096);
}

#[test]
#[cfg_attr(
    not(all(has_uring, has_loop)),
    ignore = "SKIPPED: needs io_uring, root and loop devices"
)]
fn raw_block_device_reads() {
    need_uring();
    if !common::can_use_loop_devices() {
        cannot("raw device test needs root and loop devices");
    }
    let sb = Sandbox::new();
    let Some(lo) = common::LoopDevice::new(sb.path(), 64) else {
        cannot("losetup could not attach a loop device");
    };
    let dev = lo.dev.to_str().unwrap().to_string();
    let v = sb.run_json(&[
        "run", "--rw", "randread", "--bs", "4k", "--count", "2000", "--cache", "raw", "--engine",
        "uring", "--qd", "8", &dev,
    ]);
    assert_eq!(u(total(&v), "read_ops"), 2000);
    assert_eq!(u(total(&v), "errors"), 0);
}

/// Keys of a JSON value, recursively (arrays by their first element), for shape comparison.
fn shape(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{prefix}.{k}");
                out.push(p.clone());
                shape(x, &p, out);
            }
        }
        Value::Array(a) => {
            if let Some(x) = a.first() {
                shape(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn result_has_the_same_shape_as_sync() {
    need_uring();
    let sb = Sandbox::new();
    let mut shapes = Vec::new();
    for engine in ["sync", "uring"] {
        let mut v = sb.run_json(&[
            "run",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--size",
            "1m",
            "--count",
            "200",
            "--threads",
            "2",
            "--engine",
            engine,
            "shape.dat",
        ]);
        assert_eq!(v["status"], "complete");
        assert_eq!(u(total(&v), "ops"), 400);
        // Only the job's own settings may differ; the environment and the findings depend on
        // the machine and on what else ran at the time (a busy neighbour adds a host finding).
        v.as_object_mut().unwrap().remove("environment");
        v.as_object_mut().unwrap().remove("explain");
        let mut s = Vec::new();
        shape(&v, "", &mut s);
        s.sort();
        shapes.push(s);
    }
    assert_eq!(shapes[0], shapes[1]);
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn queue_depth_overlaps_ios() {
    need_uring();
    let sb = Sandbox::new();
    let v = sb.run_json(&words("run --rw randread --bs 4k --size 16m --count 5000 --cache direct --engine uring --qd 16 qd.dat"));
    let over = overlapped_pct(&v);
    assert!(
        over > 90.0,
        "only {over}% of submissions overlapped: {}",
        total(&v)["inflight_pct"]
    );
    let deep: f64 = total(&v)["inflight_pct"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b[0] == "16")
        .map(|b| b[1].as_f64().unwrap())
        .sum();
    assert!(deep > 0.0, "depth 9-16 never reached");
    // The same run at QD 1 never overlaps.
    let v = sb.run_json(&words(
        "run --rw randread --bs 4k --size 16m --count 500 --cache direct --engine uring qd.dat",
    ));
    assert_eq!(overlapped_pct(&v), 0.0);
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn text_report_shows_depths_and_notes() {
    need_uring();
    let sb = Sandbox::new();
    let out = sb
        .cmd(&words("run --rw randread --bs 4k --size 4m --count 1000 --engine uring --qd 8 --rate-iops 100000 t.dat"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("note: io_uring:"), "{text}");
    assert!(text.contains("in flight at submission:"), "{text}");
    assert!(
        text.contains("latency from the intended issue time"),
        "{text}"
    );
}

fn assert_rate(v: &Value, want: f64) {
    let iops = f(total(v), "iops");
    let err = (iops - want).abs() / want;
    assert!(err < 0.05, "IOPS {iops} is {:.1}% off {want}", err * 100.0);
    assert_eq!(u(total(v), "errors"), 0);
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn rate_limit_holds_within_5_percent_uring() {
    need_uring();
    let sb = Sandbox::new();
    let v = sb.run_json(&words("run --rw randread --bs 4k --size 16m --time 5s --cache direct --engine uring --qd 4 --rate-iops 500 rate.dat"));
    assert_rate(&v, 500.0);
    let sched = &total(&v)["sched_lat_ns"];
    let lat = &total(&v)["lat_ns"];
    assert!(
        u(sched, "p50") >= u(lat, "p50") / 2,
        "sched {sched} lat {lat}"
    );
}

#[test]
fn rate_limit_in_bytes_holds_within_5_percent_sync() {
    let sb = Sandbox::new();
    // 2 MiB/s of 8 KiB I/Os = 256 IOPS.
    let v = sb.run_json(&words(
        "run --rw randwrite --bs 8k --size 16m --time 5s --rate-bytes 2m rate.dat",
    ));
    assert_rate(&v, 256.0);
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn total_rate_is_shared_by_all_threads() {
    need_uring();
    let sb = Sandbox::new();
    let v = sb.run_json(&words("run --rw randread --bs 4k --size 16m --time 5s --threads 2 --engine uring --qd 2 --rate-iops 800 --rate-scope total rate.dat"));
    assert_rate(&v, 800.0);
    for t in v["users"][0]["threads"].as_array().unwrap() {
        let iops = f(&t["stats"], "iops");
        assert!((iops - 400.0).abs() < 20.0, "thread IOPS {iops}");
    }
}

#[test]
fn bad_rate_and_engine_flags_are_usage_errors() {
    let sb = Sandbox::new();
    for (args, needle) in [
        (vec!["--rate-iops", "0"], "rate"),
        (
            vec!["--rate-iops", "10", "--rate-scope", "all"],
            "rate scope",
        ),
        (vec!["--qd", "8"], "--engine uring"),
        (vec!["--sqpoll"], "--engine uring"),
    ] {
        let mut all = vec!["run", "--rw", "read", "--bs", "4k", "--size", "1m", "x.dat"];
        all.extend(args);
        let out = sb.cmd(&all).assert().code(2).get_output().stderr.clone();
        let err = String::from_utf8(out).unwrap();
        assert!(err.contains(needle), "{err}");
    }
    assert!(!sb.file("x.dat").exists(), "a refused run left a file");
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn hipri_needs_direct_io() {
    need_uring();
    let sb = Sandbox::new();
    let out = sb
        .cmd(&words(
            "run --rw read --bs 4k --size 1m --engine uring --hipri h.dat",
        ))
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8(out).unwrap().contains("--hipri"));
}

/// Run with an optional ring feature; `works` is what build.rs found this machine can do.
/// Where it can, the run must do all its I/O; where it cannot, fsbench must say clearly why.
fn feature_run(flag: &str, works: bool) {
    need_uring();
    let sb = Sandbox::new();
    let out = sb
        .cmd(&[
            "run", "--rw", "randread", "--bs", "4k", "--size", "8m", "--count", "2000", "--cache",
            "direct", "--engine", "uring", "--qd", "8", flag, "--format", "json", "f.dat",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !works {
        assert!(
            !out.status.success(),
            "{flag} ran although the probe found it unsupported"
        );
        assert!(
            err.contains(flag) || err.contains("io_uring"),
            "unclear error: {err}"
        );
        return;
    }
    if !out.status.success() {
        cannot(&format!("{flag} unsupported here: {}", err.trim()));
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(total(&v), "read_ops"), 2000);
    assert_eq!(u(total(&v), "errors"), 0);
}

#[test]
#[cfg_attr(
    not(all(has_uring, has_uring_sqpoll)),
    ignore = "SKIPPED: io_uring SQPOLL rings cannot be set up here"
)]
fn sqpoll_works() {
    feature_run("--sqpoll", true);
}

#[test]
#[cfg_attr(
    any(not(has_uring), has_uring_sqpoll),
    ignore = "SKIPPED: io_uring SQPOLL works here (or io_uring does not): no refusal to check"
)]
fn sqpoll_is_refused_clearly_where_unsupported() {
    feature_run("--sqpoll", false);
}

#[test]
#[cfg_attr(
    not(all(has_uring, has_tmp_polled_io)),
    ignore = "SKIPPED: the temp dir's device has no poll queues for --hipri"
)]
fn hipri_works() {
    feature_run("--hipri", true);
}

#[test]
#[cfg_attr(
    any(not(has_uring), has_tmp_polled_io),
    ignore = "SKIPPED: the temp dir's device polls (or io_uring is unavailable): no refusal to check"
)]
fn hipri_is_refused_clearly_without_poll_queues() {
    feature_run("--hipri", false);
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn vx_front_end_runs_uring_with_processes() {
    need_uring();
    let sb = Sandbox::new();
    let v = sb.run_json(&words("vx -w rand_read -i iosize=4k,iocount=1k,maxfilesize=4m,nthreads=2 -c direct -p --engine uring --qd 8 vx.dat"));
    assert_eq!(u(total(&v), "read_ops"), 2048);
    assert!(overlapped_pct(&v) > 50.0);
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn fsync_after_uring_writes() {
    need_uring();
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run --rw write --bs 64k --size 4m --engine uring --qd 4 --fsync --cache dsync w.dat",
    ));
    assert_eq!(u(total(&v), "write_bytes"), 4 << 20);
    assert!(u(&total(&v)["syscalls"], "fsync") >= 1);
    assert!(u(&total(&v)["syscalls"], "io_uring_enter") >= 1);
}

/// The coordinated-omission check: freeze fsbench for a second in the middle of a
/// rate-limited run. The I/Os that should have been issued during the stall are issued late
/// and caught up, so the offered rate still holds, and the stall shows up in the latency
/// measured from the intended issue time while the service latency stays small.
#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn a_stall_shows_in_scheduled_latency_not_in_the_rate() {
    need_uring();
    let sb = Sandbox::new();
    let out = sb.file("stall.json");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsbench"))
        .current_dir(sb.path())
        .args([
            "run",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--size",
            "8m",
            "--time",
            "4s",
            "--engine",
            "uring",
            "--qd",
            "4",
            "--rate-iops",
            "200",
            "--output",
        ])
        .arg(&out)
        .arg("stall.dat")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let pid = child.id() as libc::pid_t;
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(std::time::Duration::from_millis(1000));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert!(child.wait().unwrap().success());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_rate(&v, 200.0);
    let sched = u(&total(&v)["sched_lat_ns"], "p99");
    let lat = u(&total(&v)["lat_ns"], "p99");
    assert!(
        sched > 300_000_000,
        "scheduled p99 {sched} ns hides the 1 s stall"
    );
    assert!(
        lat < sched / 4,
        "service p99 {lat} ns vs scheduled {sched} ns"
    );
}

/// With io_uring blocked (a seccomp filter makes io_uring_setup fail with EPERM, as container
/// runtimes do), `--engine uring` fails with one clear error naming io_uring and the way out,
/// leaves no file behind, and the sync engine still runs.
#[test]
fn blocked_io_uring_is_a_clear_error_not_a_silent_fallback() {
    use std::os::unix::process::CommandExt;
    let sb = Sandbox::new();
    let run = |engine: &str| {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsbench"));
        c.current_dir(sb.path()).args([
            "run",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--size",
            "1m",
            "--count",
            "100",
            "--engine",
            engine,
            "blocked.dat",
        ]);
        // SAFETY: between fork and exec the closure only makes two prctl calls on a filter
        // that lives on this (copied) stack.
        unsafe {
            c.pre_exec(|| {
                const IO_URING_SETUP: u32 = 425; // the same number on every Linux architecture
                let filter = [
                    // Load the system call number (offset 0 of struct seccomp_data).
                    libc::sock_filter {
                        code: 0x20,
                        jt: 0,
                        jf: 0,
                        k: 0,
                    },
                    libc::sock_filter {
                        code: 0x15,
                        jt: 0,
                        jf: 1,
                        k: IO_URING_SETUP,
                    },
                    libc::sock_filter {
                        code: 0x06,
                        jt: 0,
                        jf: 0,
                        k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
                    },
                    libc::sock_filter {
                        code: 0x06,
                        jt: 0,
                        jf: 0,
                        k: libc::SECCOMP_RET_ALLOW,
                    },
                ];
                let prog = libc::sock_fprog {
                    len: filter.len() as u16,
                    filter: filter.as_ptr() as *mut libc::sock_filter,
                };
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                    || libc::prctl(
                        libc::PR_SET_SECCOMP,
                        libc::SECCOMP_MODE_FILTER,
                        &prog as *const libc::sock_fprog,
                    ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        c.output().unwrap()
    };
    let out = run("uring");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "ran without io_uring: {err}");
    assert!(err.contains("io_uring is not available"), "{err}");
    assert!(err.contains("--engine sync"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        !sb.file("blocked.dat").exists(),
        "the refused run left its file"
    );
    let out = run("sync");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
