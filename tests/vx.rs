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
    assert!(total(&v)["cpu_s"].as_f64().unwrap() >= 0.0);
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

#[test]
fn every_cache_option_runs() {
    for c in [
        "direct",
        "dsync",
        "noreuse",
        "random",
        "seq",
        "discovered",
        "concurrent",
        "direct,seq",
    ] {
        let sb = Sandbox::new();
        let v = sb.run_json(&[
            "vx",
            "-t",
            "-w",
            "rand_write",
            "-i",
            "iosize=8k,iocount=64",
            "-c",
            c,
            "f",
        ]);
        assert_eq!(v["status"], "complete", "{c}");
        assert_eq!(total(&v)["write_ops"], 64, "{c}");
        if c.starts_with("direct") || c == "concurrent" {
            assert_eq!(total(&v)["direct_ops"], 64, "{c}");
        }
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

#[test]
fn worker_modes_agree() {
    for mode in ["-P", "-p", "-t"] {
        let sb = Sandbox::new();
        let v = sb.run_json(&[
            "vx",
            mode,
            "-w",
            "rand_read",
            "-i",
            "iosize=4k,iocount=100,nthreads=3",
            "a",
            "b",
        ]);
        assert_eq!(total(&v)["read_ops"], 600, "{mode}");
        assert!(
            total(&v)["cpu_s"].as_f64().unwrap() > 0.0,
            "{mode}: CPU measured"
        );
        assert_eq!(v["job"]["threads"], 3);
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
    // rand_read with truncup and maxfilesize, randseed reproducible.
    let a = sb.run_json(&words(
        "vx -t -w rand_write -i iosize=4,iocount=50,truncup=256,randseed=7 f",
    ));
    assert_eq!(total(&a)["write_ops"], 50);
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
            "vx -t -w read -i iosize=4k,iocount=10 --output-format csv a",
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
    // contig: a small reservation on a fresh file is one extent.
    sb.cmd(&words(
        "vx -t -w write -r 256k -f contig -i iosize=4k,iocount=16 c",
    ))
    .assert()
    .success();
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
