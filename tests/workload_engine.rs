//! `fsbench workload --engine sync|uring` through the real binary: every flowop's system
//! calls go through the thread's engine, so both engines must do the same Filebench
//! operations (ops and bytes per flowop) on the same fileset, and a refusal is one line.

mod common;
use common::Sandbox;

/// Open/create, whole-file and appending writes, random and sequential reads, stat, fsync,
/// aiowrite/aiowait, listdir, delete and close, with fixed counts (finishoncount on the
/// first flowop, one thread) so the two engines can be compared exactly.
const WML: &str = "set mode quit firstdone
define fileset name=s,path=$dir,entries=6,size=16k,dirwidth=3,prealloc
define fileset name=n,path=$dir,entries=8,size=8k,prealloc=0
define process name=p,instances=1 { thread name=t {
  flowop createfile name=cr,filesetname=n,fd=1
  flowop writewholefile name=ww,srcfd=1,fd=1,iosize=4k
  flowop appendfile name=ap,fd=1,iosize=1k
  flowop fsync name=fs,fd=1
  flowop closefile name=cl1,fd=1
  flowop openfile name=op,filesetname=s,fd=2
  flowop read name=rr,fd=2,iosize=4k,random
  flowop read name=rs,fd=2,iosize=4k
  flowop aiowrite name=aw,fd=2,iosize=4k,random
  flowop aiowait name=wt
  flowop readwholefile name=rw,fd=2,iosize=8k
  flowop closefile name=cl2,fd=2
  flowop statfile name=st,filesetname=s
  flowop listdir name=ls,filesetname=s
  flowop deletefile name=del,filesetname=n
  flowop finishoncount name=fin,target=cr,value=8 } }
run 30
";

/// (name, ops, read bytes, write bytes) of every flowop of one run.
fn run(sb: &Sandbox, engine: &str) -> Vec<(String, u64, u64, u64)> {
    let dir = sb.file(engine);
    std::fs::create_dir(&dir).unwrap();
    let v = sb.run_json(&[
        "workload",
        "e.f",
        "--dir",
        dir.to_str().unwrap(),
        "--engine",
        engine,
    ]);
    let notes = v["notes"].to_string();
    assert!(notes.contains(&format!("engine: {engine}")), "{notes}");
    let mut out: Vec<_> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let s = &g["stats"];
            (
                g["name"].as_str().unwrap().to_string(),
                s["ops"].as_u64().unwrap(),
                s["read_bytes"].as_u64().unwrap(),
                s["write_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn uring_does_the_same_operations_as_sync() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("e.f"), WML).unwrap();
    let sync = run(&sb, "sync");
    let uring = run(&sb, "uring");
    // The run did real work: 8 creates, 8 whole-file writes of 8 KiB, 4 KiB aiowrites.
    let get = |v: &[(String, u64, u64, u64)], n: &str| v.iter().find(|f| f.0 == n).unwrap().clone();
    assert_eq!(get(&sync, "cr").1, 8, "{sync:?}");
    assert_eq!(get(&sync, "ww").3, 8 * 8192, "{sync:?}");
    assert_eq!(get(&sync, "aw").3, 8 * 4096, "{sync:?}");
    assert!(get(&sync, "ls").2 > 0, "{sync:?}");
    assert_eq!(sync, uring);
}

#[test]
fn mmap_and_unknown_engines_are_refused_in_one_line() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("e.f"), WML).unwrap();
    for (engine, want) in [
        ("mmap", "expected sync or uring"),
        ("aio", "unknown engine 'aio'"),
    ] {
        let out = sb
            .cmd(&["workload", "e.f", "--engine", engine])
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
    // Nothing was created.
    assert_eq!(sb.listing(), ["e.f"]);
}

#[test]
#[cfg_attr(
    has_uring,
    ignore = "SKIPPED: io_uring is available here (the refusal needs a kernel without it)"
)]
fn uring_without_io_uring_is_refused_in_one_line() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("e.f"), WML).unwrap();
    let out = sb
        .cmd(&["workload", "e.f", "--engine", "uring"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--engine uring") && err.contains("io_uring"),
        "{err}"
    );
    assert_eq!(sb.listing(), ["e.f"]);
}
