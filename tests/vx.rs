//! vx front end end to end: every workload, cache option, open type, worker mode and output
//! switch, run by the real binary on real files in a temp dir.

mod common;
use common::{words, Sandbox};
use serde_json::Value;

fn total(v: &Value) -> &Value {
    &v["total"]
}

#[test]
fn paper_example_writes_exact_bytes_and_cleans_up() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words("vx -w write -i iosize=8k,iocount=1k f1"));
    assert_eq!(v["schema_version"], 3);
    assert_eq!(v["status"], "complete");
    assert_eq!(total(&v)["write_ops"], 1024);
    assert_eq!(total(&v)["bytes"], 8 * 1024 * 1024);
    assert!(total(&v)["bytes_per_sec"].as_f64().unwrap() > 0.0);
    // The thread's CPU time is measured (the thread CPU clock counts a run of a few
    // milliseconds that getrusage alone may show as none) and user + system is the total.
    let t = total(&v);
    let cpu = t["cpu_s"].as_f64().unwrap();
    assert!(cpu > 0.0, "{t}");
    let parts = t["cpu_user_s"].as_f64().unwrap() + t["cpu_sys_s"].as_f64().unwrap();
    assert!((parts - cpu).abs() < 1e-6, "{t}");
    assert!(
        sb.listing().is_empty(),
        "created file removed: {:?}",
        sb.listing()
    );
}

#[test]
fn every_workload_runs() {
    for w in [
        "read",
        "write",
        "rand_read",
        "rand_write",
        "rand_mixed",
        "mmap_read",
        "mmap_write",
    ] {
        let sb = Sandbox::new();
        let v = sb.run_json(&[
            "vx",
            "-w",
            w,
            "-i",
            "iosize=4k,iocount=200,nthreads=2",
            "a",
            "b",
        ]);
        let t = total(&v);
        assert_eq!(t["ops"], 2 * 2 * 200, "{w}: {t}");
        let reads = t["read_ops"].as_u64().unwrap();
        match w {
            "read" | "rand_read" | "mmap_read" => assert_eq!(reads, 800, "{w}"),
            "write" | "rand_write" | "mmap_write" => assert_eq!(reads, 0, "{w}"),
            _ => assert!(reads > 0 && reads < 800, "{w}: {reads}"),
        }
        assert!(t["lat_ns"]["p50"].as_u64().unwrap() > 0, "{w}");
        assert_eq!(v["users"].as_array().unwrap().len(), 2);
        assert_eq!(v["users"][0]["threads"].as_array().unwrap().len(), 2);
        assert!(sb.listing().is_empty(), "{w}: {:?}", sb.listing());
    }
}

/// What the kernel saw of `fsbench ARGS` (strace -f): opens, fadvise and fallocate calls.
fn kernel_view(sb: &Sandbox, args: &[&str]) -> String {
    let log = sb.file("strace.log");
    let bin = assert_cmd::cargo::cargo_bin("fsbench");
    let st = std::process::Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=%file,fadvise64,fallocate,execve",
            "-o",
        ])
        .arg(&log)
        .arg(bin)
        .args(args)
        .current_dir(sb.path())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| common::cannot(&format!("strace does not start: {e}")));
    assert!(st.success(), "fsbench {args:?} under strace");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    text
}

/// What [`cache_calls`] finds: (O_DIRECT, O_DSYNC, advice, preallocated).
type CacheCalls = (bool, bool, Vec<&'static str>, bool);

/// What a cache option changes in the calls of a run of file `f`: (some open of f has
/// O_DIRECT, some has O_DSYNC, the advice given besides the eviction before timing, f was
/// preallocated).
fn cache_calls(strace: &str) -> CacheCalls {
    let opens: Vec<&str> = strace.lines().filter(|l| l.contains("\"f\", O_")).collect();
    let advice = [
        "POSIX_FADV_NOREUSE",
        "POSIX_FADV_RANDOM",
        "POSIX_FADV_SEQUENTIAL",
    ]
    .into_iter()
    .filter(|a| {
        strace
            .lines()
            .any(|l| l.contains("fadvise64(") && l.contains(a))
    })
    .collect();
    (
        opens.iter().any(|l| l.contains("O_DIRECT")),
        opens.iter().any(|l| l.contains("O_DSYNC")),
        advice,
        strace.lines().any(|l| l.contains("fallocate(")),
    )
}

/// Every cache option changes what reaches the kernel, each in its own way: the open flags
/// of the file (O_DIRECT, O_DSYNC), the advice given for it, its preallocation.
#[test]
#[cfg_attr(
    not(all(has_strace, has_tmp_direct_io)),
    ignore = "SKIPPED: needs strace and a temp dir that takes O_DIRECT writes"
)]
fn every_cache_option_changes_what_reaches_the_kernel() {
    let cases: [(Option<&str>, CacheCalls); 9] = [
        (None, (false, false, vec![], false)),
        (Some("direct"), (true, false, vec![], false)),
        (Some("dsync"), (false, true, vec![], false)),
        (
            Some("noreuse"),
            (false, false, vec!["POSIX_FADV_NOREUSE"], false),
        ),
        (
            Some("random"),
            (false, false, vec!["POSIX_FADV_RANDOM"], false),
        ),
        (
            Some("seq"),
            (false, false, vec!["POSIX_FADV_SEQUENTIAL"], false),
        ),
        // 8 KiB I/Os are larger than the threshold: direct (one of exactly the threshold
        // stays buffered, as VxFS's discovered_direct_iosz).
        (Some("discovered=4k"), (true, false, vec![], false)),
        // Preallocated, then written direct.
        (Some("concurrent"), (true, false, vec![], true)),
        (
            Some("direct,seq"),
            (true, false, vec!["POSIX_FADV_SEQUENTIAL"], false),
        ),
    ];
    for (c, want) in cases {
        let sb = Sandbox::new();
        let mut args = vec!["vx", "-t", "-w", "rand_write", "-i", "iosize=8k,iocount=64"];
        if let Some(c) = c {
            args.extend(["-c", c]);
        }
        args.extend(["--output", "r.json", "f"]);
        let seen = kernel_view(&sb, &args);
        assert_eq!(cache_calls(&seen), want, "-c {c:?}:\n{seen}");
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
        assert_eq!(v["status"], "complete", "{c:?}");
        assert_eq!(total(&v)["write_ops"], 64, "{c:?}");
        assert_eq!(
            total(&v)["direct_ops"],
            if want.0 { 64 } else { 0 },
            "{c:?}"
        );
    }
}

#[test]
fn discovered_direct_splits_by_size() {
    let sb = Sandbox::new();
    let small = sb.run_json(&words(
        "vx -t -w read -i iosize=64k,iocount=16 -c discovered=256k f",
    ));
    assert_eq!(total(&small)["direct_ops"], 0);
    // VxFS sends direct only I/Os larger than discovered_direct_iosz.
    let at = sb.run_json(&words(
        "vx -t -w read -i iosize=256k,iocount=16 -c discovered=256k f",
    ));
    assert_eq!(total(&at)["direct_ops"], 0);
    let big = sb.run_json(&words(
        "vx -t -w read -i iosize=512k,iocount=16 -c discovered=256k f",
    ));
    assert_eq!(total(&big)["direct_ops"], 16);
    assert_eq!(big["plan"]["cache"]["policy"], "discovered");
}

#[test]
fn misaligned_direct_falls_back_to_dsync_buffered_and_is_counted() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "vx -t -w write -i iosize=1000b,iocount=50 -c direct f",
    ));
    assert_eq!(total(&v)["buffered_fallback_ops"], 50);
    assert_eq!(total(&v)["bytes"], 50_000);
    let out = sb
        .cmd(&words(
            "vx -t -w write -i iosize=1000b,iocount=50 -c direct f",
        ))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("50 misaligned direct I/Os"), "{text}");
}

/// The three worker modes do the same work, and differ in how: -t runs every user and thread
/// in one process, -P one worker process per user (its threads inside), -p one process per
/// thread (the workers are this binary started again as `__worker`).
#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn worker_modes_agree_on_the_work_and_differ_in_processes() {
    for (mode, processes) in [("-t", 0), ("-P", 2), ("-p", 6)] {
        let sb = Sandbox::new();
        let seen = kernel_view(
            &sb,
            &[
                "vx",
                mode,
                "-w",
                "rand_read",
                "-i",
                "iosize=4k,iocount=100,nthreads=3",
                "--output",
                "r.json",
                "a",
                "b",
            ],
        );
        let workers = seen
            .lines()
            .filter(|l| l.contains("execve(") && l.contains("\"__worker\""))
            .count();
        assert_eq!(workers, processes, "{mode}: worker processes\n{seen}");
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
        assert_eq!(total(&v)["read_ops"], 600, "{mode}");
        assert!(
            total(&v)["cpu_s"].as_f64().unwrap() > 0.0,
            "{mode}: CPU measured"
        );
        assert_eq!(v["job"]["threads"], 3);
        assert_eq!(v["users"].as_array().unwrap().len(), 2, "{mode}");
    }
}

#[test]
fn open_types_and_subopts() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "vx -t -w write -o sync,dsync -i iosize=4k,iocount=20,fsync,nrep=3 f",
    ));
    assert_eq!(total(&v)["write_ops"], 60);
    assert!(total(&v)["syscalls"]["fsync"].as_u64().unwrap() >= 1);
    let v = sb.run_json(&words("vx -t -w write -o append -i iosize=4k,iocount=20 f"));
    assert_eq!(total(&v)["write_ops"], 20);
    // A kept file is reused without --force; trunc empties it first.
    sb.cmd(&words("vx -t -w write -i iosize=4k,iocount=20 --keep k"))
        .assert()
        .success();
    assert_eq!(std::fs::metadata(sb.file("k")).unwrap().len(), 81920);
    sb.cmd(&words(
        "vx -t -w write -o trunc -i iosize=4k,iocount=5 --keep k",
    ))
    .assert()
    .success();
    assert_eq!(std::fs::metadata(sb.file("k")).unwrap().len(), 20480);
    // remove: a kept file is removed when asked.
    sb.cmd(&words("vx -t -w read -i iosize=4k,iocount=5,remove k"))
        .assert()
        .success();
    assert!(!sb.file("k").exists());
    // rand_write with truncup and randseed: the same seed gives the same offsets, another
    // seed others (seen in the trace of each run).
    let offsets = |seed: u64, trace: &str| -> Vec<u64> {
        let a = sb.run_json(&words(&format!(
            "vx -t -w rand_write -i iosize=4,iocount=50,truncup=256,randseed={seed} --trace {trace} f"
        )));
        assert_eq!(total(&a)["write_ops"], 50);
        let t = fsbench::trace::format::read_file(&sb.file(trace)).unwrap();
        t.records.iter().map(|r| r.offset).collect()
    };
    let (first, again, other) = (
        offsets(7, "a.csv"),
        offsets(7, "b.csv"),
        offsets(8, "c.csv"),
    );
    assert_eq!(first.len(), 50);
    assert_eq!(first, again, "randseed=7 twice");
    assert_ne!(first, other, "randseed=7 and randseed=8");
    // Random offsets over the truncup size (256 KiB), not one offset repeated.
    assert!(first.iter().all(|&o| o < 256 * 1024), "{first:?}");
    assert!(
        first
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            > 10
    );
    let r = sb.run_json(&words(
        "vx -t -w rand_read -i iosize=4,iocount=50,maxfilesize=512 f",
    ));
    assert_eq!(r["plan"]["targets"][0]["size"], 512 * 1024);
}

#[test]
fn output_switches() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&words(
            "vx -t -v -M -w read -i iosize=4k,iocount=10,nthreads=2 a",
        ))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("thread   2:"), "{text}");
    assert!(text.contains("MB/s"), "{text}");
    assert!(text.contains("CPU sec"), "{text}");
    let out = sb
        .cmd(&words("vx -t -s -w read -i iosize=4k,iocount=10 a b"))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(!text.contains("user   1:"), "{text}");
    assert!(text.contains("total:"));
    let out = sb
        .cmd(&words(
            "vx -t -w read -i iosize=4k,iocount=10 --format csv a",
        ))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.starts_with("name,status,scope"), "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
    sb.cmd(&["vx", "-h"])
        .assert()
        .success()
        .stdout(predicates::str::contains("rand_mixed"));
}

#[test]
fn mlock_and_reserveonly() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words("vx -t -m -w read -i iosize=64k,iocount=10 f"));
    assert_eq!(total(&v)["read_ops"], 10);
    sb.cmd(&words(
        "vx -t -w write -r 1m -f chgsiz -i reserveonly --keep r",
    ))
    .assert()
    .success();
    let m = std::fs::metadata(sb.file("r")).unwrap();
    assert_eq!(m.len(), 1 << 20, "chgsiz sets the size to the reservation");
    assert!(
        std::os::unix::fs::MetadataExt::blocks(&m) * 512 >= 1 << 20,
        "space allocated"
    );
}

#[test]
fn reservation_flags() {
    let sb = Sandbox::new();
    // Reservation without chgsiz keeps the size; trim gives back what was not written.
    sb.cmd(&words(
        "vx -t -w write -r 4m -f trim -i iosize=4k,iocount=16 --keep t",
    ))
    .assert()
    .success();
    let m = std::fs::metadata(sb.file("t")).unwrap();
    assert_eq!(m.len(), 65536);
    assert!(
        std::os::unix::fs::MetadataExt::blocks(&m) * 512 < 1 << 20,
        "trimmed: {} blocks",
        std::os::unix::fs::MetadataExt::blocks(&m)
    );
    // noextend: writing past the reservation is refused before any I/O.
    let out = sb
        .cmd(&words(
            "vx -t -w write -r 64k -f noextend,chgsiz -i iosize=4k,iocount=32 n",
        ))
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("noextend"), "{err}");
    assert!(!sb.file("n").exists(), "nothing left behind");
    sb.cmd(&words(
        "vx -t -w write -r 128k -f noextend,chgsiz -i iosize=4k,iocount=32 n",
    ))
    .assert()
    .success();
}

/// contig: a small reservation on a fresh file is one extent, reserved in full (FIEMAP
/// through filefrag on the kept file).
#[test]
#[cfg_attr(
    not(has_tmp_fiemap),
    ignore = "SKIPPED: the temp dir's file system does not answer FIEMAP"
)]
fn a_contig_reservation_is_one_extent() {
    let sb = Sandbox::new();
    sb.cmd(&words(
        "vx -t -w write -r 256k -f contig -i iosize=4k,iocount=16 --keep c",
    ))
    .assert()
    .success();
    let m = std::fs::metadata(sb.file("c")).unwrap();
    assert_eq!(m.len(), 65536);
    assert!(
        std::os::unix::fs::MetadataExt::blocks(&m) * 512 >= 256 * 1024,
        "reserved: {} blocks",
        std::os::unix::fs::MetadataExt::blocks(&m)
    );
    let out = std::process::Command::new("filefrag")
        .arg(sb.file("c"))
        .output()
        .unwrap_or_else(|e| common::cannot(&format!("filefrag (e2fsprogs): {e}")));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.trim_end().ends_with(": 1 extent found"), "{text}");
}

#[test]
#[cfg_attr(
    has_tmp_xfs,
    ignore = "SKIPPED: the temp dir is on XFS, which has extent size hints"
)]
fn extsize_on_a_file_system_without_hints_is_a_clear_error() {
    let sb = Sandbox::new();
    // The file system of the sandbox, where the run below writes.
    let fs = std::process::Command::new("stat")
        .args(["-f", "-c", "%T", "."])
        .current_dir(sb.path())
        .output()
        .unwrap();
    let fstype = String::from_utf8_lossy(&fs.stdout).trim().to_string();
    if fstype == "xfs" {
        common::cannot("the temp dir is on XFS, which has extent size hints");
    }
    let out = sb
        .cmd(&words("vx -t -w write -e 1024 -i iosize=4k,iocount=4 f"))
        .assert()
        // Refused before any I/O because of what the user named: a usage error.
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("extent size"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        !sb.file("f").exists(),
        "created file removed after the refusal"
    );
}
