//! One Result envelope for every kind of run (issue #13): a workload's `--output` document is
//! read by `report` and `compare` like a Job's, schema 1 io-job documents written by the
//! previous release are still read, and every kind carries the same header, status and
//! failures with its per-flowop or per-kind figures as named groups of the one Stats.
mod common;

use common::{words, Sandbox};

/// A small workload: one thread writing and reading one file, and a stat (a metadata flowop).
const WML: &str = "define fileset name=fs,path=$dir,entries=4,size=64k,prealloc
define process name=p { thread name=t {
  flowop openfile name=op,filesetname=fs,fd=1
  flowop write name=wr,fd=1,iosize=4k,random,iters=4
  flowop read name=rd,fd=1,iosize=4k,random,iters=4
  flowop closefile name=cl,fd=1
  flowop statfile name=st,filesetname=fs } }
run 1
";

fn workload_json(sb: &Sandbox, out: &str) {
    std::fs::write(sb.file("w.f"), WML).unwrap();
    sb.cmd(&[
        "workload", "w.f", "--dir", ".", "--time", "0.3s", "--output", out,
    ])
    .assert()
    .success();
}

#[test]
fn workload_output_is_read_by_report_and_compare() {
    let sb = Sandbox::new();
    workload_json(&sb, "wl.json");
    workload_json(&sb, "wl2.json");
    sb.cmd(&words(
        "run --rw randread --bs 4k --size 256k --count 100 f.dat --output a.json",
    ))
    .assert()
    .success();
    for fmt in ["text", "csv", "json", "md"] {
        let o = sb
            .cmd(&["report", "wl.json", "a.json", "--format", fmt])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "report --format {fmt}: {err}");
        assert!(!err.contains("missing field"), "{err}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("w.f"), "{fmt}: the workload is a row: {out}");
    }
    let o = sb
        .cmd(&["compare", "wl.json", "wl2.json"])
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "compare: {err}");
    assert!(
        out.contains("ops/s") && out.contains("after/before"),
        "{out}"
    );
    // An io job and a workload have no point in common: that is said, not a parse error.
    let o = sb.cmd(&["compare", "a.json", "wl.json"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("missing field"), "{err}");
}
