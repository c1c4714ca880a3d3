//! fio's options on how files are opened and created (`dsync`, `overwrite`, `file_append`,
//! `allow_file_create`, `create_serialize`), where workers run (`cpus_allowed`, `cpumask`)
//! and fio's own measurement bookkeeping, through `fsbench fio`: each mapped option shows its
//! effect, each one accepted without effect says so in the Result, each refused one is one
//! line, exit 2, naming the reason.

mod common;
use common::{u, Sandbox};
use serde_json::Value;

/// The fio command line of a 64 KiB sequential write of `F`, plus `extra`.
fn write_job<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "fio",
        "--name=x",
        "--rw=write",
        "--bs=4k",
        "--size=64k",
        "--filename=F",
    ];
    a.extend_from_slice(extra);
    a
}

/// `fsbench fio ARGS --format json`: the first Result.
fn result(sb: &Sandbox, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--format", "json"]);
    match sb.run_json(&all) {
        Value::Array(mut a) => a.remove(0),
        one => one,
    }
}

/// Run expecting a refusal: exit 2, one line on stderr, returned.
fn refused(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb.cmd(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn notes(r: &Value) -> String {
    r["notes"].to_string()
}

#[test]
fn dsync_opens_the_file_with_o_dsync() {
    let sb = Sandbox::new();
    let r = result(&sb, &write_job(&["--dsync=1"]));
    assert_eq!(r["job"]["open"]["dsync"], true, "{}", r["job"]);
    assert_eq!(u(&r["total"]["write_ops"]), 16);
    let r = result(&sb, &write_job(&["--dsync=0"]));
    assert_eq!(r["job"]["open"]["dsync"], false);
}

/// The worker thread that opens F with O_DSYNC first binds itself to CPU 0 and sets its nice
/// value, seen in the system calls the kernel receives.
#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn dsync_and_cpus_allowed_reach_the_kernel() {
    let sb = Sandbox::new();
    let log = sb.file("st.log");
    let o = std::process::Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=open,openat,sched_setaffinity,setpriority",
            "-e",
            "signal=none",
            "-o",
        ])
        .arg(&log)
        .arg(assert_cmd::cargo::cargo_bin("fsbench"))
        .args(write_job(&[
            "--dsync",
            "--cpus_allowed=0",
            "--nice=5",
            "--output",
            "r.json",
        ]))
        .current_dir(sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let trace = std::fs::read_to_string(&log).unwrap();
    let worker_open = trace
        .lines()
        .find(|l| l.contains("\"F\"") && l.contains("O_DSYNC"))
        .unwrap_or_else(|| panic!("no open of F with O_DSYNC: {trace}"));
    assert!(worker_open.contains("O_RDWR"), "{worker_open}");
    // strace pads the thread ids to one width: split on any run of spaces.
    let tid = worker_open.split_whitespace().next().unwrap();
    assert!(
        trace.lines().any(|l| {
            let mut w = l.split_whitespace();
            w.next() == Some(tid)
                && w.next() == Some("sched_setaffinity(0,")
                && l.contains("[0]")
                && l.ends_with("= 0")
        }),
        "worker {tid} not bound to CPU 0: {trace}"
    );
    // Its nice value: set by the worker thread itself (PRIO_PROCESS 0 is the calling thread).
    assert!(
        trace.lines().any(|l| {
            let mut w = l.split_whitespace();
            w.next() == Some(tid)
                && l.contains("setpriority(PRIO_PROCESS, 0, 5)")
                && l.ends_with("= 0")
        }),
        "worker {tid} did not set its nice value: {trace}"
    );
}

#[test]
fn cpus_allowed_and_cpumask_pin_the_workers() {
    let sb = Sandbox::new();
    for opt in ["--cpus_allowed=0", "--cpumask=0x1", "--cpumask=1"] {
        let r = result(&sb, &write_job(&[opt, "--cpus_allowed_policy=shared"]));
        assert_eq!(
            r["job"]["cpus"],
            serde_json::json!([0]),
            "{opt}: {}",
            r["job"]
        );
        // The host probe watches the CPUs the workers were bound to.
        assert_eq!(
            r["host"]["cpus"],
            serde_json::json!([0]),
            "{opt}: {}",
            r["host"]
        );
    }
    let e = refused(&sb, &write_job(&["--cpumask=0xzz"]));
    assert!(e.contains("cpumask"), "{e}");
}

/// `nice`: in the Result's job, and the worker thread runs at it (its own /proc entry, read
/// while it runs); fsbench's main thread keeps its own.
#[test]
fn nice_sets_the_workers_priority() {
    let sb = Sandbox::new();
    let r = result(&sb, &write_job(&["--nice=7"]));
    assert_eq!(r["job"]["nice"], 7, "{}", r["job"]);
    assert_eq!(u(&r["total"]["write_ops"]), 16);
    let r = result(&sb, &write_job(&[]));
    assert!(r["job"].get("nice").is_none(), "{}", r["job"]);
    // The same setting in an fsbench job file.
    std::fs::write(
        sb.file("j.toml"),
        "targets = [\"t\"]\naccess = \"write\"\nio_count = 4\nnice = 3\n",
    )
    .unwrap();
    let v = sb.run_json(&["run", "j.toml"]);
    assert_eq!(v["job"]["nice"], 3, "{}", v["job"]);
    for bad in ["--nice=20", "--nice=-21", "--nice=x"] {
        let e = refused(&sb, &write_job(&[bad]));
        assert!(e.contains("expected -20 to 19"), "{bad}: {e}");
    }
}

#[test]
fn allow_file_create_0_runs_only_on_existing_files() {
    let sb = Sandbox::new();
    let e = refused(&sb, &write_job(&["--allow_file_create=0"]));
    assert!(
        e.contains("allow_file_create=0 in [x]: F does not exist, and the job may not create it"),
        "{e}"
    );
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
    std::fs::write(sb.file("F"), vec![7u8; 64 << 10]).unwrap();
    let r = result(
        &sb,
        &[
            "fio",
            "--name=x",
            "--rw=read",
            "--size=64k",
            "--filename=F",
            "--allow_file_create=0",
        ],
    );
    assert_eq!(u(&r["total"]["read_ops"]), 16);
    // The default (1) creates, as before.
    std::fs::remove_file(sb.file("F")).unwrap();
    let r = result(&sb, &write_job(&["--allow_file_create=1"]));
    assert_eq!(u(&r["total"]["write_ops"]), 16);
}

#[test]
fn file_append_writes_after_the_existing_end() {
    let sb = Sandbox::new();
    let old: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(sb.file("F"), &old).unwrap();
    let r = result(&sb, &write_job(&["--file_append", "--force"]));
    assert_eq!(u(&r["total"]["write_ops"]), 16);
    assert_eq!(u(&r["total"]["write_bytes"]), 65536);
    let now = std::fs::read(sb.file("F")).unwrap();
    assert_eq!(now.len(), 8192 + 65536);
    assert_eq!(&now[..8192], &old[..], "the existing bytes were changed");
    assert!(
        now[8192..].iter().any(|&b| b != 0),
        "nothing written past the end"
    );
    // A file that does not exist yet is appended to from byte 0.
    let r = result(
        &sb,
        &[
            "fio",
            "--name=y",
            "--rw=write",
            "--size=64k",
            "--filename=G",
            "--file_append=1",
            "--unlink=0",
        ],
    );
    assert_eq!(u(&r["total"]["write_ops"]), 16);
    assert_eq!(std::fs::metadata(sb.file("G")).unwrap().len(), 65536);
}

#[test]
fn overwrite_needs_data_to_overwrite() {
    let sb = Sandbox::new();
    // A plain sequential write of a new file: fsbench extends it, as fio without overwrite.
    let e = refused(&sb, &write_job(&["--overwrite=1"]));
    assert!(e.contains("overwrite=1 in [x]: F does not hold"), "{e}");
    // A file that holds the bytes: overwritten.
    std::fs::write(sb.file("F"), vec![0u8; 64 << 10]).unwrap();
    let r = result(&sb, &write_job(&["--overwrite=1", "--force"]));
    assert_eq!(u(&r["total"]["write_ops"]), 16);
    assert!(notes(&r).contains("overwrite=1 in [x]"), "{}", notes(&r));
    // Random writes: fsbench lays the file out before timing, as fio with overwrite=1.
    let r = result(
        &sb,
        &[
            "fio",
            "--name=x",
            "--rw=randwrite",
            "--size=64k",
            "--filename=N",
            "--overwrite",
        ],
    );
    assert_eq!(u(&r["total"]["write_ops"]), 16);
    assert!(
        notes(&r).contains("laid out before the job is timed"),
        "{}",
        notes(&r)
    );
}

#[test]
fn bookkeeping_options_run_and_say_so_in_the_result() {
    let sb = Sandbox::new();
    for (opt, says) in [
        ("--create_serialize=1", "create_serialize in [x]"),
        (
            "--clocksource=clock_gettime",
            "clocksource=clock_gettime in [x]",
        ),
        (
            "--gtod_reduce=1",
            "gtod_reduce in [x] asks fio to measure less",
        ),
        ("--disable_lat=1", "disable_lat in [x]"),
        ("--disable_clat=1", "disable_clat in [x]"),
        ("--disable_slat=1", "disable_slat in [x]"),
        (
            "--disable_bw_measurement=1",
            "disable_bw_measurement in [x]",
        ),
        ("--stats=0", "stats=0 in [x]"),
        ("--lat_percentiles=1", "lat_percentiles in [x]"),
        ("--clat_percentiles=1", "clat_percentiles in [x]"),
        ("--slat_percentiles=1", "slat_percentiles in [x]"),
        (
            "--unified_rw_reporting=mixed",
            "unified_rw_reporting in [x]",
        ),
        ("--per_job_logs=0", "per_job_logs in [x]"),
    ] {
        let r = result(&sb, &write_job(&[opt]));
        assert_eq!(u(&r["total"]["write_ops"]), 16, "{opt}");
        assert!(notes(&r).contains(says), "{opt}: {}", notes(&r));
    }
    // Turned off (fio's defaults): nothing to say.
    let r = result(
        &sb,
        &write_job(&["--gtod_reduce=0", "--stats=1", "--exitall=0"]),
    );
    assert!(!notes(&r).contains("gtod_reduce"), "{}", notes(&r));
    let e = refused(&sb, &write_job(&["--clocksource=tsc"]));
    assert!(e.contains("clocksource"), "{e}");
}

#[test]
fn options_fsbench_cannot_honour_are_refused_with_the_reason() {
    let sb = Sandbox::new();
    for (opt, why) in [
        ("--exitall", "nothing stops the others"),
        ("--exitall_on_error=1", "nothing stops the others"),
        ("--continue_on_error=all", "first I/O error"),
        ("--ignore_error=EIO", "first I/O error"),
        ("--cpus_allowed_policy=split", "fio's shared"),
        ("--prio=3", "ionice(1)"),
        ("--prioclass=2", "ionice(1)"),
        ("--ioscheduler=none", "does not change system settings"),
    ] {
        let e = refused(&sb, &write_job(&[opt]));
        let key = opt.trim_start_matches("--").split('=').next().unwrap();
        assert!(
            e.contains(&format!("unsupported fio option '{key}' in [x]")) && e.contains(why),
            "{opt}: {e}"
        );
        // --ignore-unsupported runs without it, and says so.
        let r = result(&sb, &write_job(&[opt, "--ignore-unsupported"]));
        assert!(
            notes(&r).contains(&format!("'{key}'")),
            "{opt}: {}",
            notes(&r)
        );
    }
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

/// fio's operations and bytes for a job file, per job (fio's JSON).
fn fio_counts(sb: &Sandbox, job: &str) -> Vec<(u64, u64)> {
    let o = std::process::Command::new("fio")
        .args(["--output-format=json", job])
        .current_dir(sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            // unified_rw_reporting: fio reports the directions together as `mixed`.
            if j.get("mixed").is_some() {
                return (u(&j["mixed"]["total_ios"]), u(&j["mixed"]["io_bytes"]));
            }
            let ops = u(&j["read"]["total_ios"]) + u(&j["write"]["total_ios"]);
            let bytes = u(&j["read"]["io_bytes"]) + u(&j["write"]["io_bytes"]);
            (ops, bytes)
        })
        .collect()
}

const HOST_JOBS: &str = "\
[global]
bs=4k
size=64k
sync=dsync
gtod_reduce=1
clocksource=clock_gettime
unified_rw_reporting=1
create_serialize=1
cpus_allowed=0
cpus_allowed_policy=shared
nice=5
[append]
filename=A
rw=write
file_append=1
[over]
stonewall
filename=O
rw=randwrite
overwrite=1
[existing]
stonewall
filename=A
rw=read
allow_file_create=0
";

#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn fio_does_the_same_operations() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("j.fio"), HOST_JOBS).unwrap();
    std::fs::write(sb.file("A"), vec![1u8; 16 << 10]).unwrap();
    let fio = fio_counts(&sb, "j.fio");
    assert_eq!(
        std::fs::metadata(sb.file("A")).unwrap().len(),
        (16 + 64) << 10
    );
    // The same start for fsbench: A as it was, O absent.
    std::fs::write(sb.file("A"), vec![1u8; 16 << 10]).unwrap();
    std::fs::remove_file(sb.file("O")).unwrap();
    let rs = match sb.run_json(&["fio", "j.fio", "--force", "--format", "json"]) {
        Value::Array(a) => a,
        one => vec![one],
    };
    let ours: Vec<(u64, u64)> = rs
        .iter()
        .map(|r| (u(&r["total"]["ops"]), u(&r["total"]["bytes"])))
        .collect();
    assert_eq!(ours, fio);
    assert_eq!(
        std::fs::metadata(sb.file("A")).unwrap().len(),
        (16 + 64) << 10
    );
    assert_eq!(rs[0]["job"]["open"]["dsync"], true);
}
