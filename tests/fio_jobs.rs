//! `fsbench fio` through the binary: every job file in tests/fio-jobs runs and each Result
//! (one per job section, named after it) does the work the section's `; expect` comment
//! states; unmapped options are refused naming option and section, or listed with
//! `--ignore-unsupported`; fio's command-line form; and, where fio is installed, the same
//! operations and bytes as fio itself for the same files.

mod common;
use common::Sandbox;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fio-jobs")
}

type Expect = BTreeMap<String, String>;

/// Each job section's `; expect key=value ...` words, in file order.
fn expectations(text: &str) -> Vec<(String, Expect)> {
    let mut out: Vec<(String, Expect)> = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(n) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if n != "global" {
                out.push((n.to_string(), Expect::new()));
            }
        } else if let Some(e) = line.strip_prefix("; expect ") {
            let m = &mut out.last_mut().expect("expect inside a job section").1;
            for w in e.split_whitespace() {
                let (k, v) = w.split_once('=').unwrap_or((w, ""));
                m.insert(k.to_string(), v.to_string());
            }
        }
    }
    out
}

/// The Results of a `--output` file: one object or a list.
fn results(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a,
        one => vec![one],
    }
}

fn run_file(sb: &Sandbox, file: &Path, extra: &[&str]) -> Vec<Value> {
    let out = sb.file("out.json");
    let mut c = sb.cmd(&[
        "fio",
        file.to_str().unwrap(),
        "--format",
        "json",
        "--output",
    ]);
    c.arg(&out).args(extra).env("FIO_DIR", sb.path());
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}: {o:?}", file.display());
    let v = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).unwrap();
    results(v)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn every_corpus_job_does_the_work_it_states() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "fio"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    for f in files {
        let sb = Sandbox::new();
        let want = expectations(&std::fs::read_to_string(&f).unwrap());
        let got = run_file(&sb, &f, &[]);
        let names: Vec<&str> = got.iter().map(|r| r["name"].as_str().unwrap()).collect();
        let sections: Vec<&str> = want.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, sections, "{}", f.display());
        let mut kept = Vec::new();
        for (r, (name, w)) in got.iter().zip(&want) {
            assert!(
                !w.is_empty(),
                "{}: [{name}] states no expectation",
                f.display()
            );
            assert_eq!(r["status"], "complete", "{name}");
            let t = &r["total"];
            if w.contains_key("timed") {
                assert!(u(&t["ops"]) > 0, "{name}");
                assert_eq!(r["job"]["time_s"], 0.3, "{name}");
            } else {
                assert_eq!(
                    u(&t["ops"]).to_string(),
                    w["ops"],
                    "{}: {name}",
                    f.display()
                );
                assert_eq!(
                    u(&t["bytes"]).to_string(),
                    w["bytes"],
                    "{}: {name}",
                    f.display()
                );
            }
            if let Some(k) = w.get("kept") {
                kept.push(k.clone());
            }
        }
        // Everything fsbench created is gone, except what unlink=0 keeps.
        assert_eq!(sb.listing(), kept, "{}", f.display());
    }
}

/// Run expecting a refusal: exit 2 and one line on stderr, returned.
fn refused(sb: &Sandbox, args: &[&str]) -> String {
    let o = sb.cmd(args).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    err
}

#[test]
fn unmapped_options_are_refused_naming_option_and_section() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("j.fio"),
        "[global]\nbs=4k\n[first]\nrw=write\nsize=64k\n[second]\nsize=64k\nbsrange=1k-4k\n",
    )
    .unwrap();
    let e = refused(&sb, &["fio", "j.fio"]);
    assert!(
        e.contains("unsupported fio option 'bsrange' in [second]"),
        "{e}"
    );
    // Refused before anything ran: no file was made.
    assert_eq!(sb.listing(), vec!["j.fio"]);
    for (opt, want) in [
        ("--bs=4k,8k", "different values"),
        ("--rw=randread:4", "offset skip"),
        ("--ioengine=splice", "ioengine=splice in [x]"),
        ("--size=10%", "percentage"),
    ] {
        let e = refused(&sb, &["fio", "--name=x", "--size=64k", opt]);
        assert!(e.contains(want), "{opt}: {e}");
    }
}

#[test]
fn ignore_unsupported_lists_every_ignored_option() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("j.fio"),
        "[a]\nrw=write\nsize=64k\nbsrange=1k-4k\nfadvise_hint=0\nbsrange=1k-2k\n",
    )
    .unwrap();
    let o = sb
        .cmd(&["fio", "j.fio", "--ignore-unsupported", "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &results(r)[0];
    let notes: Vec<&str> = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let ignored: Vec<&&str> = notes.iter().filter(|n| n.contains("ignored")).collect();
    assert_eq!(ignored.len(), 2, "{notes:?}");
    assert!(ignored[0].contains("'bsrange' in [a]") && ignored[1].contains("'fadvise_hint'"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("'bsrange' in [a] ignored") && err.contains("'fadvise_hint'"));
    assert_eq!(u(&r["total"]["ops"]), 16);
}

#[test]
fn command_line_form_runs_jobs_in_order() {
    let sb = Sandbox::new();
    let o = sb
        .cmd(&[
            "fio",
            "--bs=8k",
            "--size=128k",
            "--name=w",
            "--rw=write",
            "--filename=f.dat",
            "--name",
            "r",
            "--rw",
            "randread",
            "--filename=f.dat",
            "--numjobs=2",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let rs = results(serde_json::from_slice(&o.stdout).unwrap());
    assert_eq!(rs.len(), 2);
    assert_eq!(
        (rs[0]["name"].as_str(), u(&rs[0]["total"]["ops"])),
        (Some("w"), 16)
    );
    assert_eq!(rs[0]["total"]["write_ops"], 16);
    assert_eq!(
        (rs[1]["name"].as_str(), u(&rs[1]["total"]["ops"])),
        (Some("r"), 32)
    );
    assert_eq!(rs[1]["job"]["threads"], 2);
    assert_eq!(sb.listing(), Vec::<String>::new());
}

#[test]
fn existing_files_need_force() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("mine.dat"), vec![7u8; 65536]).unwrap();
    let e = refused(
        &sb,
        &[
            "fio",
            "--name=x",
            "--rw=write",
            "--size=64k",
            "--filename=mine.dat",
        ],
    );
    assert!(e.contains("--force"), "{e}");
    assert_eq!(
        std::fs::read(sb.file("mine.dat")).unwrap(),
        vec![7u8; 65536]
    );
}

/// fio's own figures for a job file: (ops, bytes) per job name, clones added up.
fn fio_counts(sb: &Sandbox, file: &Path) -> Vec<(String, u64, u64)> {
    let o = std::process::Command::new("fio")
        .arg("--output-format=json")
        .arg(file)
        .current_dir(sb.path())
        .env("FIO_DIR", sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let mut out: Vec<(String, u64, u64)> = Vec::new();
    for j in v["jobs"].as_array().unwrap() {
        let name = j["jobname"].as_str().unwrap().to_string();
        let ops = u(&j["read"]["total_ios"]) + u(&j["write"]["total_ios"]);
        let bytes = u(&j["read"]["io_bytes"]) + u(&j["write"]["io_bytes"]);
        match out.iter_mut().find(|(n, _, _)| *n == name) {
            Some(e) => {
                e.1 += ops;
                e.2 += bytes;
            }
            None => out.push((name, ops, bytes)),
        }
    }
    out
}

#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn same_work_as_fio_for_the_same_files() {
    for name in ["sequential.fio", "clones.fio"] {
        let f = corpus().join(name);
        let sb = Sandbox::new();
        let ours: Vec<(String, u64, u64)> = run_file(&sb, &f, &[])
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_string(),
                    u(&r["total"]["ops"]),
                    u(&r["total"]["bytes"]),
                )
            })
            .collect();
        let theirs = fio_counts(&Sandbox::new(), &f);
        assert_eq!(ours, theirs, "{name}");
    }
}
