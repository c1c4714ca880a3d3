//! A sync of the files every N writes (`--fsync-every`, `--fdatasync-every`; fio's `fsync=N`
//! and `fdatasync=N`) without verification: where the syncs fall among the writes the kernel
//! receives, what the Result counts, the same number of syncs as fio issues, and the
//! refusals.

mod common;
use common::{u, Sandbox};
use serde_json::Value;

/// The sync and write calls of `fsbench ARGS` as strace saw them, in order: "w" for a
/// pwrite64, the call's name for a sync.
fn traced_calls(sb: &Sandbox, args: &[&str]) -> Vec<String> {
    let log = sb.file("st.log");
    let o = std::process::Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-s",
            "0",
            "-e",
            "trace=fsync,fdatasync,pwrite64",
            "-e",
            "signal=none",
            "-o",
        ])
        .arg(&log)
        .arg(assert_cmd::cargo::cargo_bin("fsbench"))
        .args(args)
        .current_dir(sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    // (thread, call) in order; the worker is the thread that wrote most (preparation may
    // write and sync on other threads).
    let calls: Vec<(&str, String)> = text
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let tid = w.next()?;
            let name = w.next()?.split('(').next()?;
            match name {
                "pwrite64" => Some((tid, "w".to_string())),
                "fsync" | "fdatasync" => Some((tid, name.to_string())),
                _ => None,
            }
        })
        .collect();
    let writes_of = |t: &str| calls.iter().filter(|(u, c)| *u == t && c == "w").count();
    let worker = calls
        .iter()
        .map(|(t, _)| *t)
        .max_by_key(|t| writes_of(t))
        .expect("no calls traced");
    calls
        .iter()
        .filter(|(t, _)| *t == worker)
        .map(|(_, c)| c.clone())
        .collect()
}

/// `writes` writes with a `sync` after every `every` of them but the last group (fio syncs
/// before the next I/O, so none follows the last write).
fn expected(writes: usize, every: usize, sync: &str) -> Vec<String> {
    let mut v = Vec::new();
    for i in 0..writes {
        if i > 0 && i % every == 0 {
            v.push(sync.to_string());
        }
        v.push("w".to_string());
    }
    v
}

fn total(r: &Value) -> &Value {
    match r {
        Value::Array(a) => &a[0]["total"],
        one => &one["total"],
    }
}

#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn fsync_every_syncs_after_every_n_writes_without_verify() {
    let sb = Sandbox::new();
    let args = "run --rw write --bs 4k --size 1m --count 64 --fsync-every 8 --format json --output r.json f";
    let calls = traced_calls(&sb, &args.split(' ').collect::<Vec<_>>());
    assert_eq!(calls, expected(64, 8, "fsync"));
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
    let t = total(&r);
    assert_eq!(u(&t["write_ops"]), 64);
    assert_eq!(u(&t["other_ops"]), 7, "the syncs count as other ops");
    assert_eq!(u(&t["syscalls"]["fsync"]), 7);
    assert_eq!(u(&t["syscalls"]["fdatasync"]), 0);
}

#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn fio_fdatasync_maps_onto_fdatasync_every() {
    let sb = Sandbox::new();
    let calls = traced_calls(
        &sb,
        &[
            "fio",
            "--name=x",
            "--rw=randwrite",
            "--bs=4k",
            "--size=256k",
            "--fdatasync=8",
            "--filename=f",
            "--format",
            "json",
            "--output",
            "r.json",
        ],
    );
    assert_eq!(calls, expected(64, 8, "fdatasync"));
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
    let t = total(&r);
    assert_eq!(u(&t["other_ops"]), 7);
    assert_eq!(u(&t["syscalls"]["fdatasync"]), 7);
    assert_eq!(u(&t["syscalls"]["fsync"]), 0);
}

/// With io_uring at queue depth 8 the in-flight writes drain before each sync: the Result
/// counts one sync per 4 writes issued, as at depth 1.
#[test]
fn uring_at_depth_syncs_as_often_as_one_at_a_time() {
    let sb = Sandbox::new();
    let r = sb.run_json(&[
        "run",
        "--rw",
        "randwrite",
        "--engine",
        "uring",
        "--qd",
        "8",
        "--bs",
        "4k",
        "--size",
        "1m",
        "--count",
        "64",
        "--fdatasync-every",
        "4",
        "f",
    ]);
    let t = total(&r);
    assert_eq!(u(&t["write_ops"]), 64);
    assert_eq!(u(&t["syscalls"]["fdatasync"]), 15);
    assert_eq!(u(&t["other_ops"]), 15);
}

/// The same job file through fio and through `fsbench fio`: the same number of syncs.
#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn fsync_n_in_a_job_file_syncs_as_often_as_fio() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("j.fio"),
        "[w]\nrw=write\nbs=4k\nsize=64k\nfsync=4\nfilename=${FIO_DIR}/f\n",
    )
    .unwrap();
    let o = std::process::Command::new("fio")
        .args(["--output-format=json", "--output"])
        .arg(sb.file("fio.json"))
        .arg(sb.file("j.fio"))
        .env("FIO_DIR", sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let fio: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("fio.json")).unwrap()).unwrap();
    let fio_syncs = u(&fio["jobs"][0]["sync"]["total_ios"]);
    std::fs::remove_file(sb.file("f")).unwrap();
    let path = sb.path().to_str().unwrap().to_string();
    let mut c = sb.cmd(&["fio", "j.fio", "--format", "json", "--output", "r.json"]);
    let o = c.env("FIO_DIR", &path).output().unwrap();
    assert!(o.status.success(), "{o:?}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
    let t = total(&r);
    assert_eq!(u(&t["write_ops"]), 16);
    assert_eq!(u(&t["syscalls"]["fsync"]), fio_syncs);
    assert_eq!(
        fio_syncs, 3,
        "fio syncs before the next write, none after the last"
    );
}

#[test]
fn refusals_say_why_in_one_line() {
    let sb = Sandbox::new();
    for (line, says) in [
        (
            "run --rw read --bs 4k --size 1m --count 8 --fsync-every 4 f",
            "--rw read writes nothing",
        ),
        (
            "run --rw write --engine mmap --bs 4k --size 1m --count 8 --fdatasync-every 4 f",
            "use --engine sync or uring",
        ),
        (
            "run --rw write --engine null --bs 4k --size 1m --count 8 --fsync-every 4 f",
            "writes nothing to sync",
        ),
        (
            "run --rw write --bs 4k --size 1m --count 8 --fsync-every 4 --fdatasync-every 4 f",
            "give one of them",
        ),
        (
            "run --rw write --bs 4k --size 1m --count 8 --fdatasync-every 0 f",
            "bad --fdatasync-every 0",
        ),
        (
            "fio --name=x --rw=write --size=64k --filename=f --fsync=2 --fdatasync=2",
            "keep one of them",
        ),
    ] {
        let o = sb
            .cmd(&line.split(' ').collect::<Vec<_>>())
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{line}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{line}: {e}");
        assert!(e.contains(says), "{line}: {e}");
        assert!(!sb.file("f").exists(), "{line}: left a file");
    }
}
