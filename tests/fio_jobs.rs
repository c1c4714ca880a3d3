//! `fsbench fio` through the binary: every job file in tests/fio-jobs runs and each Result
//! (one per job section, named after it, or one per group with group_reporting) does the
//! work the section's `; expect` comment states; jobs start together unless stonewall
//! separates them; nrfiles and offset place the I/O where fio does; unmapped options are
//! refused naming option and section, or listed with `--ignore-unsupported`; fio's
//! command-line form; falloc allocates exactly what a job covers and ftruncate leaves fio's
//! size; and, where fio is installed, the same operations and bytes as fio itself for the
//! same files.

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
        // A section reported in the figure before it (group_reporting) has no Result.
        let want: Vec<(String, Expect)> = expectations(&std::fs::read_to_string(&f).unwrap())
            .into_iter()
            .filter(|(_, e)| !e.contains_key("grouped"))
            .collect();
        // `; needs NAME=BYTES`: a file of zeros the job file expects to exist.
        for line in std::fs::read_to_string(&f).unwrap().lines() {
            if let Some((name, len)) = line
                .strip_prefix("; needs ")
                .and_then(|n| n.split_once('='))
            {
                let len: usize = len.trim().parse().unwrap();
                std::fs::write(sb.file(name.trim()), vec![0u8; len]).unwrap();
            }
        }
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
                kept.extend(k.split(',').map(String::from));
            }
        }
        // Everything fsbench created is gone, except what unlink=0 keeps.
        kept.sort();
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
        "[global]\nbs=4k\n[first]\nrw=write\nsize=64k\n[second]\nsize=64k\nopenfiles=2\n",
    )
    .unwrap();
    let e = refused(&sb, &["fio", "j.fio"]);
    assert!(
        e.contains("unsupported fio option 'openfiles' in [second]"),
        "{e}"
    );
    // Refused before anything ran: no file was made.
    assert_eq!(sb.listing(), vec!["j.fio"]);
    for (opt, want) in [
        ("--bs=4k,8k,8k,8k", "at most three values"),
        ("--bsrange=4k", "is not a range"),
        ("--bsrange=8k-4k", "ends below its start"),
        ("--rw_sequencer=same", "bad rw_sequencer=same in [x]"),
        ("--ioengine=splice", "ioengine=splice in [x]"),
        ("--size=10%", "share of an existing file"),
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
        "[a]\nrw=write\nsize=64k\nopenfiles=4\nfadvise_hint=0\nopenfiles=2\n",
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
    assert!(ignored[0].contains("'openfiles' in [a]") && ignored[1].contains("'fadvise_hint'"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("'openfiles' in [a] ignored") && err.contains("'fadvise_hint'"));
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
            "--stonewall",
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
        let dirs = ["read", "write", "trim"];
        let ops = dirs.iter().map(|d| u(&j[d]["total_ios"])).sum::<u64>();
        let bytes = dirs.iter().map(|d| u(&j[d]["io_bytes"])).sum::<u64>();
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
    for name in [
        "sequential.fio",
        "clones.fio",
        "groups.fio",
        "files.fio",
        "offset.fio",
        "apart.fio",
        "sizes.fio",
        "skip.fio",
        "space.fio",
        "shared.fio",
        "pacing.fio",
    ] {
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

/// A Result's time window: (start, end) in Unix seconds.
fn window(r: &Value) -> (f64, f64) {
    let start = r["started_unix_s"].as_f64().unwrap();
    (start, start + r["total"]["elapsed_s"].as_f64().unwrap())
}

fn by_name<'a>(rs: &'a [Value], name: &str) -> &'a Value {
    rs.iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no Result named {name}"))
}

#[test]
fn jobs_without_stonewall_run_together_and_stonewall_separates_them() {
    let sb = Sandbox::new();
    let rs = run_file(&sb, &corpus().join("concurrent.fio"), &[]);
    let (reader, writer, after) = (
        window(by_name(&rs, "reader")),
        window(by_name(&rs, "writer")),
        window(by_name(&rs, "after")),
    );
    // Each ran 0.3 s; started together, each began before the other ended and they ended
    // within a fraction of their length (one after the other, the second would begin only
    // when the first had ended).
    assert!(
        reader.0 < writer.1 && writer.0 < reader.1,
        "{reader:?} {writer:?}"
    );
    assert!((reader.0 - writer.0).abs() < 0.2, "{reader:?} {writer:?}");
    assert!((reader.1 - writer.1).abs() < 0.2, "{reader:?} {writer:?}");
    // The stonewall job began after both had ended.
    assert!(
        after.0 >= reader.1.max(writer.1),
        "{after:?} {reader:?} {writer:?}"
    );
    // [late] is of [after]'s group, released 100 ms after it: during it, not with it.
    let late = window(by_name(&rs, "late"));
    assert!(late.0 - after.0 >= 0.099, "{late:?} {after:?}");
    assert!(late.0 < after.1, "{late:?} {after:?}");
    for n in ["reader", "writer"] {
        let notes = by_name(&rs, n)["notes"].to_string();
        assert!(notes.contains("started together"), "{n}: {notes}");
    }
}

#[test]
fn group_reporting_makes_one_figure_whose_ops_are_the_sum() {
    let sb = Sandbox::new();
    let rs = run_file(&sb, &corpus().join("groups.fio"), &[]);
    let names: Vec<&str> = rs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["clones", "own-figure", "next"]);
    let g = &rs[0];
    // Three clones of [clones] (16 writes each) and two of [more] (8 each): one figure.
    let parts: Vec<(String, u64)> = g["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                u(&p["stats"]["ops"]),
            )
        })
        .collect();
    assert_eq!(
        parts,
        [("clones".to_string(), 48), ("more".to_string(), 16)]
    );
    assert_eq!(u(&g["total"]["ops"]), 48 + 16);
    assert_eq!(u(&g["total"]["write_bytes"]), 64 * 4096);
    let users: Vec<u64> = g["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| u(&x["stats"]["ops"]))
        .collect();
    assert_eq!(users, [16, 16, 16, 8, 8]);
    // new_group: a figure of its own, but started with the others.
    assert!(rs[1]["groups"].as_array().is_none_or(|a| a.is_empty()));
    assert!(rs[1]["notes"].to_string().contains("[own-figure]"));
    assert!(!rs[2]["notes"].to_string().contains("started together"));
}

#[test]
fn nrfiles_spreads_the_io_over_every_file() {
    let sb = Sandbox::new();
    let rs = run_file(&sb, &corpus().join("files.fio"), &[]);
    let files = |r: &Value| -> Vec<(String, u64)> {
        r["users"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                let t = x["target"].as_str().unwrap();
                let name = Path::new(t).file_name().unwrap().to_str().unwrap();
                (name.to_string(), u(&x["stats"]["ops"]))
            })
            .collect()
    };
    let own = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
        v.iter().map(|(n, o)| (n.to_string(), *o)).collect()
    };
    assert_eq!(
        files(by_name(&rs, "spread")),
        own(&[
            ("spread.0.0", 4),
            ("spread.0.1", 4),
            ("spread.0.2", 4),
            ("spread.0.3", 4)
        ])
    );
    assert_eq!(
        files(by_name(&rs, "named")),
        own(&[
            ("named-c0-f0.dat", 8),
            ("named-c0-f1.dat", 8),
            ("named-c1-f0.dat", 8),
            ("named-c1-f1.dat", 8)
        ])
    );
    assert_eq!(
        files(by_name(&rs, "sized")),
        own(&[("sized.0.0", 8), ("sized.0.1", 8), ("sized.0.2", 8)])
    );
}

#[test]
fn offset_and_offset_increment_write_where_they_say() {
    let sb = Sandbox::new();
    run_file(&sb, &corpus().join("offset.fio"), &[]);
    let data = std::fs::read(sb.file("off.dat")).unwrap();
    assert_eq!(data.len(), 256 << 10);
    // [fill] wrote 0x11 everywhere; [patch] 0x22 over 128k..192k; the four [stripes]
    // clones 0x33 over 16k..80k, side by side.
    let k = 1024;
    for (from, to, byte) in [
        (0, 16 * k, 0x11u8),
        (16 * k, 80 * k, 0x33),
        (80 * k, 128 * k, 0x11),
        (128 * k, 192 * k, 0x22),
        (192 * k, 256 * k, 0x11),
    ] {
        let bad = data[from..to].iter().position(|&b| b != byte);
        assert_eq!(bad, None, "{from}..{to} should be {byte:#x}");
    }
    // Clones with files of their own: clone i writes its file from 8k + i * 8k on, and the
    // bytes before that offset are never written (a hole, read as zeros).
    let sb = Sandbox::new();
    run_file(&sb, &corpus().join("apart.fio"), &[]);
    for (file, offset) in [("apart.0.0", 8 * k), ("apart.1.0", 16 * k)] {
        let data = std::fs::read(sb.file(file)).unwrap();
        assert_eq!(data.len(), offset + 16 * k, "{file}");
        assert!(data[..offset].iter().all(|&b| b == 0), "{file}");
        assert!(data[offset..].iter().all(|&b| b == 0x44), "{file}");
    }
}

#[test]
fn a_job_that_cannot_start_calls_its_group_off() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("mine.dat"), vec![7u8; 65536]).unwrap();
    let e = refused(
        &sb,
        &[
            "fio",
            "--size=64k",
            "--rw=write",
            "--name=fresh",
            "--name=foreign",
            "--filename=mine.dat",
        ],
    );
    assert!(e.contains("--force"), "{e}");
    // The other job of the group wrote nothing and left no file.
    assert_eq!(sb.listing(), vec!["mine.dat"]);
    assert_eq!(
        std::fs::read(sb.file("mine.dat")).unwrap(),
        vec![7u8; 65536]
    );
}

#[test]
fn offsets_that_fsbench_cannot_place_are_refused() {
    let sb = Sandbox::new();
    for (opts, want) in [
        (
            &[
                "--rw=randwrite",
                "--filename=s.dat",
                "--offset_increment=32k",
            ][..],
            "offset_increment equal to each clone's size (16384)",
        ),
        (
            &["--rw=write", "--offset=10%"][..],
            "is a share of an existing file",
        ),
        (
            &["--rw=write", "--startdelay=5-1"][..],
            "startdelay=5-1 in [x]: a range goes from the shorter delay to the longer",
        ),
        (
            &["--rw=write", "--nrfiles=2", "--filename=a.dat"][..],
            "name every file",
        ),
        (
            &["--rw=write", "--filename_format=$jobname"][..],
            "names two files",
        ),
        (
            &["--rw=write", "--filename_format=$clientuid.$jobnum"][..],
            "$jobname, $jobnum and $filenum",
        ),
    ] {
        let mut args = vec!["fio", "--name=x", "--size=16k", "--numjobs=2"];
        args.extend_from_slice(opts);
        let e = refused(&sb, &args);
        assert!(e.contains(want), "{opts:?}: {e}");
    }
    assert_eq!(sb.listing(), Vec::<String>::new());
}

/// Random clones of one file with `offset_increment`: each clone (a thread) writes only in
/// its own part `[offset + i*K, offset + i*K + size)`, every block of it once (fio's random
/// map), seen in the offsets of the threads' pwrite64 calls.
#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: strace is not installed or cannot trace"
)]
fn random_clones_of_a_shared_file_write_only_their_own_part() {
    let sb = Sandbox::new();
    // The file exists at its full size, so nothing but the clones' I/O writes to it.
    std::fs::write(sb.file("s.dat"), vec![0u8; (16 + 4 * 64) << 10]).unwrap();
    let log = sb.file("st.log");
    let o = std::process::Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-s",
            "0",
            "-e",
            "trace=pwrite64",
            "-e",
            "signal=none",
            "-o",
        ])
        .arg(&log)
        .arg(assert_cmd::cargo::cargo_bin("fsbench"))
        .args([
            "fio",
            "--name=r",
            "--rw=randwrite",
            "--bs=4k",
            "--size=64k",
            "--numjobs=4",
            "--filename=s.dat",
            "--offset=16k",
            "--offset_increment=64k",
            "--force",
            "--format",
            "json",
            "--output",
            "r.json",
        ])
        .current_dir(sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
    let r = &results(r)[0];
    assert_eq!(u(&r["total"]["write_ops"]), 64);
    assert_eq!(r["job"]["random_slices"], true);
    // Each thread's offsets, in 4k blocks.
    let mut by_thread: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for l in std::fs::read_to_string(&log).unwrap().lines() {
        let Some((pid, call)) = l.split_once(' ') else {
            continue;
        };
        // strace pads thread ids to one width: `123  pwrite64(` as well as `1234 pwrite64(`.
        let Some(args) = call.trim_start().strip_prefix("pwrite64(") else {
            continue;
        };
        let after_data = &args[args.rfind('"').unwrap() + 1..];
        let f: Vec<&str> = after_data.split(',').map(str::trim).collect();
        let offset: u64 = f[2].split([' ', ')']).next().unwrap().parse().unwrap();
        assert_eq!(f[1], "4096", "{l}");
        by_thread
            .entry(pid.parse().unwrap())
            .or_default()
            .push(offset);
    }
    assert_eq!(by_thread.len(), 4, "{by_thread:?}");
    let mut parts = Vec::new();
    for offs in by_thread.values() {
        let part = (offs[0] - (16 << 10)) / (64 << 10);
        let mut blocks: Vec<u64> = offs.iter().map(|o| o / 4096).collect();
        blocks.sort();
        let own: Vec<u64> = (0..16).map(|b| 4 + part * 16 + b).collect();
        assert_eq!(
            blocks, own,
            "a clone wrote outside its part {part}: {offs:?}"
        );
        // Drawn at random, not in order.
        assert_ne!(offs.iter().map(|o| o / 4096).collect::<Vec<_>>(), own);
        parts.push(part);
    }
    parts.sort();
    assert_eq!(parts, [0, 1, 2, 3]);
    // fsbench's own option: each thread's random reads in its slice of the file.
    sb.run_json(&[
        "run",
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "256k",
        "--threads",
        "4",
        "--count",
        "50",
        "--random-slices",
        "--trace",
        "t.csv",
        "t.dat",
        "--format",
        "json",
    ]);
    let trace = std::fs::read_to_string(sb.file("t.csv")).unwrap();
    let mut seen = 0;
    for l in trace.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        let (thread, block): (u64, u64) =
            (f[1].parse().unwrap(), f[4].parse::<u64>().unwrap() / 4096);
        assert_eq!(block / 16, thread, "{l}");
        seen += 1;
    }
    assert_eq!(seen, 200);
}

/// `bench/vs-fio-jobs.sh` in a smoke run (one pair, tiny jobs): for a job both tools do alike
/// it prints a ratio; for a job whose work differs (fio counts its verify pass as reads,
/// fsbench reports verification apart) DIFFERENT WORK and no ratio; it leaves nothing in
/// its scratch directory.
#[test]
#[cfg_attr(not(has_fio), ignore = "SKIPPED: fio not installed")]
#[cfg_attr(all(has_fio, not(has_python3)), ignore = "SKIPPED: needs python3")]
fn vs_fio_jobs_compares_the_work_before_the_speed() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("scratch")).unwrap();
    std::fs::write(
        sb.file("smoke.fio"),
        "[global]\ndirectory=${FIO_DIR}\nbs=4k\nsize=64k\n\n[w]\nrw=write\n\n[v]\nrw=write\nverify=crc32c\n",
    )
    .unwrap();
    let out = std::process::Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/vs-fio-jobs.sh"))
        .args(["-n", "1", "-d"])
        .arg(sb.file("scratch"))
        .arg(sb.file("smoke.fio"))
        .env("FSBENCH", env!("CARGO_BIN_EXE_fsbench"))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("smoke.fio [w]: throughput fsbench/fio median"),
        "{text}"
    );
    assert!(
        text.contains("smoke.fio [v]: DIFFERENT WORK, no ratio"),
        "{text}"
    );
    assert!(text.contains("read ops: fsbench 0, fio 16"), "{text}");
    assert!(!text.contains("smoke.fio [v]: throughput"), "{text}");
    assert_eq!(
        std::fs::read_dir(sb.file("scratch")).unwrap().count(),
        0,
        "the script left files behind"
    );
}

#[test]
fn metadata_engines_time_one_operation_per_file() {
    let sb = Sandbox::new();
    // filecreate, kept: six files made, each create timed as one operation.
    let r = sb.run_json(&[
        "fio",
        "--name=mk",
        "--ioengine=filecreate",
        "--nrfiles=6",
        "--filesize=4k",
        "--keep",
        "--format",
        "json",
    ]);
    let r = &results(r)[0];
    assert_eq!(r["name"], "mk");
    assert_eq!(r["status"], "complete");
    assert_eq!((u(&r["total"]["ops"]), u(&r["total"]["bytes"])), (6, 0));
    let g = &r["groups"].as_array().unwrap()[..];
    assert_eq!(g.len(), 1, "only the items' phase is measured: {g:?}");
    assert_eq!(g[0]["op"], "file_create");
    assert_eq!(u(&g[0]["stats"]["lat_ns"]["count"]), 6);
    assert!(u(&g[0]["stats"]["lat_ns"]["max"]) > 0);
    // The six files exist, in the run directory fsbench made (and kept, as --keep asks; the
    // note's mdtest command line says so).
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("fsbench mdtest -n 6 -F -C -d . --keep"),
        "{notes}"
    );
    let top: Vec<String> = sb
        .listing()
        .into_iter()
        .filter(|n| n.starts_with("fsbench-mdtest-"))
        .collect();
    assert_eq!(top.len(), 1, "{:?}", sb.listing());
    let tree = sb.file(&top[0]).join("test-dir.0-0/mdtest_tree.0");
    let files = std::fs::read_dir(&tree).unwrap().count();
    assert_eq!(files, 6, "{}", tree.display());
    std::fs::remove_dir_all(sb.file(&top[0])).unwrap();
    // filedelete: the files are made untimed first; only the six removals are measured,
    // and nothing is left.
    let r = sb.run_json(&[
        "fio",
        "--name=rm",
        "--ioengine=filedelete",
        "--nrfiles=6",
        "--format",
        "json",
    ]);
    let r = &results(r)[0];
    assert_eq!(u(&r["total"]["ops"]), 6);
    assert_eq!(r["groups"][0]["op"], "file_remove");
    assert_eq!(sb.listing(), Vec::<String>::new());
}

#[test]
fn metadata_jobs_run_alone_and_refuse_what_they_cannot_do() {
    let sb = Sandbox::new();
    let e = refused(
        &sb,
        &[
            "fio",
            "--nrfiles=4",
            "--name=mk",
            "--ioengine=filecreate",
            "--name=w",
            "--rw=write",
            "--size=64k",
        ],
    );
    assert!(
        e.contains("[mk] and [w] would run at the same time") && e.contains("stonewall"),
        "{e}"
    );
    for (opt, want) in [
        ("--numjobs=0", "bad numjobs=0 in [m]"),
        ("--iodepth=8", "'iodepth' in [m]: ioengine=dirstat"),
        ("--stat_type=fstat", "bad stat_type"),
    ] {
        let e = refused(&sb, &["fio", "--name=m", "--ioengine=dirstat", opt]);
        assert!(e.contains(want), "{opt}: {e}");
    }
    assert_eq!(sb.listing(), Vec::<String>::new());
}

/// A metadata job of `numjobs` clones: each clone works on `nrfiles` items of its own, so
/// the job times clones x nrfiles operations, as fio's clones each create their own files.
const META_CLONES: &str = "[global]\ndirectory=${FIO_DIR}\nnrfiles=8\nnumjobs=3\nfilesize=4k\n\
                           bs=4k\nstonewall\n[stat]\nioengine=filestat\n\
                           [delete]\nioengine=filedelete\n[create]\nioengine=filecreate\nunlink=0\n";

#[test]
fn metadata_clones_each_work_on_items_of_their_own() {
    let sb = Sandbox::new();
    let job = sb.file("clones.fio");
    std::fs::write(&job, META_CLONES).unwrap();
    let rs = run_file(&sb, &job, &[]);
    let ops: Vec<(String, u64, u64)> = rs
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                u(&r["total"]["ops"]),
                u(&r["mdtest"]["ranks"]),
            )
        })
        .collect();
    let want = |n: &str| (n.to_string(), 24, 3);
    assert_eq!(ops, [want("stat"), want("delete"), want("create")]);
    assert!(
        rs[2]["notes"].to_string().contains("in 3 clones"),
        "{}",
        rs[2]["notes"]
    );
    // The kept creation: 8 files of each clone's own, named by the clone.
    let top = sb
        .listing()
        .into_iter()
        .find(|n| n.starts_with("fsbench-mdtest-"))
        .expect("the kept run directory");
    let tree = sb.file(&top).join("test-dir.0-0").join("mdtest_tree.0");
    let mut names: Vec<String> = std::fs::read_dir(&tree)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut want: Vec<String> = (0..3)
        .flat_map(|c| (0..8).map(move |i| format!("file.mdtest.{c}.{i}")))
        .collect();
    want.sort();
    assert_eq!(names, want);
    std::fs::remove_dir_all(sb.file(&top)).unwrap();
}

#[test]
fn a_metadata_job_runs_after_one_that_kept_its_directory() {
    let sb = Sandbox::new();
    let job = sb.file("kept.fio");
    let text = "[global]\ndirectory=${FIO_DIR}\nnrfiles=4\nfilesize=4k\nbs=4k\nstonewall\n\
                unlink=0\n[first]\nioengine=filecreate\n[second]\nioengine=filecreate\n";
    std::fs::write(&job, text).unwrap();
    let rs = run_file(&sb, &job, &[]);
    let ops: Vec<u64> = rs.iter().map(|r| u(&r["total"]["ops"])).collect();
    assert_eq!(ops, [4, 4]);
    let mut tops: Vec<String> = sb
        .listing()
        .into_iter()
        .filter(|n| n.starts_with("fsbench-mdtest-"))
        .collect();
    tops.sort();
    assert_eq!(
        tops.len(),
        2,
        "each job keeps a directory of its own: {tops:?}"
    );
    for t in tops {
        std::fs::remove_dir_all(sb.file(&t)).unwrap();
    }
}

#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn metadata_clones_time_as_many_operations_as_fios() {
    let sb = Sandbox::new();
    let job = sb.file("clones.fio");
    std::fs::write(&job, META_CLONES).unwrap();
    let o = std::process::Command::new("fio")
        .arg("--output-format=json")
        .arg(&job)
        .current_dir(sb.path())
        .env("FIO_DIR", sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
    // fio lists each clone apart, under the job's name: the clones' latencies summed.
    let mut fio: Vec<(String, u64)> = Vec::new();
    for j in v["jobs"].as_array().unwrap() {
        let name = j["jobname"].as_str().unwrap().to_string();
        let n = u(&j["read"]["clat_ns"]["N"]) + u(&j["write"]["clat_ns"]["N"]);
        match fio.iter_mut().find(|(f, _)| *f == name) {
            Some(f) => f.1 += n,
            None => fio.push((name, n)),
        }
    }
    let ours = ops_per_result(META_CLONES);
    assert_eq!(ours, fio);
    assert_eq!(ours[2], ("create".to_string(), 24));
}

#[test]
fn offset_skips_leave_holes_where_fio_leaves_them() {
    let sb = Sandbox::new();
    run_file(&sb, &corpus().join("skip.fio"), &[]);
    let data = std::fs::read(sb.file("skip.dat")).unwrap();
    assert_eq!(data.len(), 64 << 10);
    // [holes] wrote 0x55 at 0, 12k, 24k, ... (4k written, 8k skipped); [fill]'s 0x11 stays
    // in the holes.
    for (i, block) in data.chunks(4096).enumerate() {
        let want = if i % 3 == 0 { 0x55u8 } else { 0x11 };
        assert!(
            block.iter().all(|&b| b == want),
            "block {i} should be {want:#x}"
        );
    }
    // The same through fsbench's own option: --skip after each sequential I/O.
    let r = sb.run_json(&[
        "run", "--rw", "read", "--bs", "4k", "--size", "64k", "--skip", "12k", "skip.dat",
        "--format", "json",
    ]);
    // One pass over 64k in 4k reads each followed by 12k: 0, 16k, 32k, 48k.
    assert_eq!((u(&r["total"]["ops"]), u(&r["total"]["bytes"])), (4, 16384));
    assert_eq!(r["job"]["skip"], 12288);
    let o = sb
        .cmd(&["run", "--rw", "randread", "--skip", "4k", "skip.dat"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("--skip 4096 leaves holes"));
}

#[test]
fn percentages_are_shares_of_the_existing_file() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("pct.dat"), vec![0u8; 1 << 20]).unwrap();
    let rs = run_file(&sb, &corpus().join("percent.fio"), &[]);
    // fio's offset=10% of 1 MiB, rounded up to 4k: 106496; size=20%: 51 reads from there.
    let middle = by_name(&rs, "middle");
    assert_eq!(middle["plan"]["part"]["base"], 106496, "{}", middle["plan"]);
    assert_eq!(middle["plan"]["part"]["blocks"], 51);
    // offset=50% without a size: the rest of the file, which stays 1 MiB long.
    let rest = by_name(&rs, "rest");
    assert_eq!(rest["plan"]["part"]["base"], 524288);
    assert_eq!(
        std::fs::metadata(sb.file("pct.dat")).unwrap().len(),
        1 << 20
    );
    // A percentage of a file that does not exist is refused before anything runs.
    let e = refused(
        &sb,
        &["fio", "--name=n", "--filename=new.dat", "--size=50%"],
    );
    assert!(
        e.contains("size=50% in [n] is a share of an existing file"),
        "{e}"
    );
    assert!(!sb.file("new.dat").exists());
}

#[test]
fn random_runs_draw_a_new_offset_every_n_ios() {
    let sb = Sandbox::new();
    // fio's rw=randread:4 and fsbench's --random-run 4: runs of 4 reads, each run from a
    // random offset (cut short where it meets the end of the file).
    let r = sb.run_json(&[
        "run",
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "256k",
        "--count",
        "200",
        "--random-run",
        "4",
        "--trace",
        "t.csv",
        "r.dat",
        "--format",
        "json",
    ]);
    assert_eq!(u(&r["total"]["ops"]), 200);
    assert_eq!(r["job"]["random_run"], 4);
    let trace = std::fs::read_to_string(sb.file("t.csv")).unwrap();
    let offsets: Vec<u64> = trace
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(4).unwrap().parse().unwrap())
        .collect();
    assert_eq!(offsets.len(), 200);
    // Split into runs: a run goes on while each read follows the one before, at most 4.
    let mut runs = vec![1u32];
    for w in offsets.windows(2) {
        let last = runs.last_mut().unwrap();
        if w[1] == w[0] + 4096 && *last < 4 {
            *last += 1;
        } else {
            runs.push(1);
        }
    }
    let full = runs.iter().filter(|&&n| n == 4).count();
    assert!(runs.len() < 70 && full >= 40, "runs of {runs:?}");
    // --run-same-offset (fio's rw_sequencer=identical): each run reads one offset 4 times.
    let r = sb.run_json(&[
        "run",
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "256k",
        "--count",
        "200",
        "--random-run",
        "4",
        "--run-same-offset",
        "--trace",
        "s.csv",
        "r.dat",
        "--format",
        "json",
    ]);
    assert_eq!(u(&r["total"]["ops"]), 200);
    assert_eq!(r["job"]["run_same_offset"], true);
    let trace = std::fs::read_to_string(sb.file("s.csv")).unwrap();
    let offsets: Vec<u64> = trace
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(4).unwrap().parse().unwrap())
        .collect();
    assert_eq!(offsets.len(), 200);
    for run in offsets.chunks(4) {
        assert!(run.iter().all(|&o| o == run[0]), "a run of {run:?}");
    }
    let starts: std::collections::HashSet<u64> = offsets.chunks(4).map(|r| r[0]).collect();
    assert!(starts.len() > 20, "{starts:?}");
    // The fio form maps onto it.
    let job = sb.file("same.fio");
    std::fs::write(
        &job,
        "[x]\nrw=randread:4\nrw_sequencer=identical\nsize=64k\nfilename=x.dat\n",
    )
    .unwrap();
    let rs = run_file(&sb, &job, &[]);
    assert_eq!(rs[0]["job"]["run_same_offset"], true);
    assert_eq!(rs[0]["job"]["random_run"], 4);
    assert_eq!(u(&rs[0]["total"]["read_ops"]), 16);
    let e = refused(
        &sb,
        &[
            "run",
            "--rw",
            "randread",
            "--run-same-offset",
            "--size",
            "64k",
            "s.dat",
        ],
    );
    assert!(e.contains("give --random-run"), "{e}");
    let o = sb
        .cmd(&[
            "run",
            "--rw",
            "read",
            "--random-run",
            "4",
            "--size",
            "64k",
            "s.dat",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("--random-run 4 draws a random offset"));
}

#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn metadata_engines_time_as_many_operations_as_fio() {
    let text = "[global]\ndirectory=${FIO_DIR}\nnrfiles=12\nfilesize=4k\nbs=4k\nstonewall\n\
                [create]\nioengine=filecreate\n[stat]\nioengine=filestat\n\
                [delete]\nioengine=filedelete\n";
    let sb = Sandbox::new();
    let job = sb.file("meta.fio");
    std::fs::write(&job, text).unwrap();
    let o = std::process::Command::new("fio")
        .arg("--output-format=json")
        .arg(&job)
        .current_dir(sb.path())
        .env("FIO_DIR", sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
    // fio times each file operation as one completion latency sample.
    let fio: Vec<(String, u64)> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            let n = u(&j["read"]["clat_ns"]["N"]) + u(&j["write"]["clat_ns"]["N"]);
            (j["jobname"].as_str().unwrap().to_string(), n)
        })
        .collect();
    let ours = ops_per_result(text);
    assert_eq!(ours, fio);
    assert_eq!(ours[0], ("create".to_string(), 12));
}

/// Allocated extents of a file as (start, end) byte ranges, adjacent ones joined.
fn allocated_ranges(p: &Path) -> Vec<(u64, u64)> {
    let f = std::fs::File::open(p).unwrap();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for e in fsbench::probe::fiemap::extents(&f).unwrap() {
        match out.last_mut() {
            Some(last) if last.1 == e.logical => last.1 += e.length,
            _ => out.push((e.logical, e.logical + e.length)),
        }
    }
    out
}

#[test]
#[cfg_attr(
    not(has_tmp_fiemap),
    ignore = "SKIPPED: the temp dir's file system does not answer FIEMAP"
)]
fn falloc_allocates_and_ftruncate_sizes_where_fio_does() {
    use std::os::unix::fs::MetadataExt;
    let sb = Sandbox::new();
    // A falloc write job from 64k: the sparse file fsbench makes gets blocks exactly over
    // the range the job wrote, and its size is the job's end.
    let r = sb.run_json(&[
        "fio",
        "--name=fa",
        "--ioengine=falloc",
        "--rw=write",
        "--bs=16k",
        "--size=256k",
        "--offset=64k",
        "--unlink=0",
        "--filename=fa.dat",
    ]);
    let r = results(r).remove(0);
    assert_eq!(
        (u(&r["total"]["write_ops"]), u(&r["total"]["bytes"])),
        (16, 256 << 10)
    );
    assert_eq!(u(&r["total"]["syscalls"]["fallocate"]), 16);
    assert_eq!(u(&r["total"]["syscalls"]["write"]), 0);
    // No data was written, so nothing was left in the page cache to warn about.
    let checks: Vec<&str> = r["explain"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["check"].as_str())
        .collect();
    assert!(!checks.contains(&"dirty_at_stop"), "{checks:?}");
    let m = std::fs::metadata(sb.file("fa.dat")).unwrap();
    assert_eq!(m.len(), 320 << 10);
    assert_eq!(
        allocated_ranges(&sb.file("fa.dat")),
        vec![(64 << 10, 320 << 10)]
    );
    assert!(m.blocks() * 512 >= 256 << 10, "{}", m.blocks());
    // Nothing was written: the allocated range reads back as zeros.
    assert!(std::fs::read(sb.file("fa.dat"))
        .unwrap()
        .iter()
        .all(|&b| b == 0));
    std::fs::remove_file(sb.file("fa.dat")).unwrap();

    // A falloc read allocates without extending: the file, made at its size without data,
    // ends allocated over the whole range it read, and nothing was read.
    let r = sb.run_json(&[
        "run", "--engine", "falloc", "--rw", "read", "--bs", "4k", "--size", "64k", "--keep",
        "rd.dat",
    ]);
    assert_eq!(u(&r["total"]["syscalls"]["read"]), 0);
    assert_eq!(std::fs::metadata(sb.file("rd.dat")).unwrap().len(), 65536);
    assert_eq!(allocated_ranges(&sb.file("rd.dat")), vec![(0, 65536)]);
    std::fs::remove_file(sb.file("rd.dat")).unwrap();
    // So even a falloc read job modifies: a file fsbench did not create needs --force.
    std::fs::write(sb.file("theirs.dat"), b"data").unwrap();
    let e = refused(
        &sb,
        &[
            "run",
            "--engine",
            "falloc",
            "--rw",
            "read",
            "--size",
            "64k",
            "theirs.dat",
        ],
    );
    assert!(e.contains("refusing to modify"), "{e}");
    assert_eq!(std::fs::read(sb.file("theirs.dat")).unwrap(), b"data");
    std::fs::remove_file(sb.file("theirs.dat")).unwrap();

    // fsbench's own form: each write of an ftruncate run sets the size to its offset, so a
    // sequential pass ends one block short of the size (fio's 61440 for 64k in 4k).
    sb.run_json(&[
        "run",
        "--engine",
        "ftruncate",
        "--rw",
        "write",
        "--bs",
        "4k",
        "--size",
        "64k",
        "--keep",
        "tr.dat",
    ]);
    assert_eq!(std::fs::metadata(sb.file("tr.dat")).unwrap().len(), 61440);
    std::fs::remove_file(sb.file("tr.dat")).unwrap();

    // ftruncate has no reads or trims (fio fails them); neither engine moves data to verify.
    for (args, want) in [
        (
            &[
                "run",
                "--engine",
                "ftruncate",
                "--rw",
                "randrw",
                "--size",
                "64k",
                "x",
            ][..],
            "truncates on writes only",
        ),
        (
            &[
                "fio",
                "--name=v",
                "--ioengine=falloc",
                "--rw=write",
                "--size=64k",
                "--verify=crc32c",
            ][..],
            "moves no data",
        ),
        (
            &["workload", "--engine", "falloc", "fileserver"][..],
            "expected sync or uring",
        ),
    ] {
        let e = refused(&sb, args);
        assert!(e.contains(want), "{args:?}: {e}");
    }
    assert_eq!(sb.listing(), Vec::<String>::new());
}

/// `fsbench fio` on the job file `text` in a sandbox of its own: each Result's name and
/// operations, in order.
fn ops_per_result(text: &str) -> Vec<(String, u64)> {
    let sb = Sandbox::new();
    let job = sb.file("job.fio");
    std::fs::write(&job, text).unwrap();
    run_file(&sb, &job, &[])
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                u(&r["total"]["ops"]),
            )
        })
        .collect()
}

/// 40,000 random reads of sizes drawn from `range` on the null engine: the Result.
fn null_bsrange_reads(sb: &Sandbox, range: &str) -> Value {
    sb.run_json(&[
        "run",
        "--engine",
        "null",
        "--rw",
        "randread",
        "--bsrange",
        range,
        "--count",
        "40000",
        "--size",
        "1m",
        "nofile",
        "--format",
        "json",
    ])
}

/// The share of the I/Os each size took, from a Result's `by_size`.
fn size_shares(r: &Value) -> Vec<(u64, f64)> {
    let sizes = r["total"]["by_size"].as_array().expect("by_size");
    let all: u64 = sizes.iter().map(|s| u(&s["ops"])).sum();
    sizes
        .iter()
        .map(|s| (u(&s["block_size_bytes"]), u(&s["ops"]) as f64 / all as f64))
        .collect()
}

fn assert_shares(got: &[(u64, f64)], want: &[(u64, f64)], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            g.0 == w.0 && (g.1 - w.1).abs() < 0.015,
            "{what}: {got:?}, want {want:?}"
        );
    }
}

#[test]
fn bsrange_draws_sizes_by_fios_rule() {
    // fio draws a byte count in [MIN, MIN+MAX), rounds it down to a multiple of MIN and caps
    // it at MAX: 4k-16k gives 4k, 8k, 12k and 16k alike; 5k-7k gives 5k for 5/7 of the I/Os
    // and 7k (not a multiple of 5k) for 2/7.
    let sb = Sandbox::new();
    for (range, want) in [
        (
            "4k-16k",
            vec![(4096, 0.25), (8192, 0.25), (12288, 0.25), (16384, 0.25)],
        ),
        ("5k-7k", vec![(5120, 5.0 / 7.0), (7168, 2.0 / 7.0)]),
    ] {
        let r = null_bsrange_reads(&sb, range);
        assert_shares(&size_shares(&r), &want, range);
        // The same from a job file's bsrange.
        let job = sb.file("r.fio");
        std::fs::write(
            &job,
            format!("[r]\nioengine=null\nrw=randread\nbsrange={range}\nsize=64m\nnumber_ios=40000\nfilename=nofile\n"),
        )
        .unwrap();
        let rs = run_file(&sb, &job, &[]);
        assert_shares(&size_shares(&rs[0]), &want, range);
    }
}

#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn bsrange_sizes_match_fios_own() {
    let sb = Sandbox::new();
    for range in ["4k-16k", "5k-7k", "4k-10k"] {
        let log = sb.file("io.log");
        let o = std::process::Command::new("fio")
            .args([
                "--name=r",
                "--rw=randread",
                "--size=1m",
                "--io_size=64m",
                "--norandommap",
            ])
            .arg(format!("--bsrange={range}"))
            .arg(format!("--filename={}", sb.file("f").display()))
            .arg(format!("--write_iolog={}", log.display()))
            .arg("--output=/dev/null")
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        let mut fio: std::collections::BTreeMap<u64, u64> = Default::default();
        for l in std::fs::read_to_string(&log).unwrap().lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() == 5 && f[2] == "read" {
                *fio.entry(f[4].parse().unwrap()).or_default() += 1;
            }
        }
        let all: u64 = fio.values().sum();
        assert!(all > 3000, "{range}: {all} reads in fio's log");
        let fio: Vec<(u64, f64)> = fio
            .into_iter()
            .map(|(s, n)| (s, n as f64 / all as f64))
            .collect();
        let r = null_bsrange_reads(&sb, range);
        // fio's sample is smaller: a wider tolerance.
        let ours = size_shares(&r);
        assert_eq!(
            ours.len(),
            fio.len(),
            "{range}: ours {ours:?}, fio's {fio:?}"
        );
        for (a, b) in ours.iter().zip(&fio) {
            assert!(
                a.0 == b.0 && (a.1 - b.1).abs() < 0.04,
                "{range}: ours {ours:?}, fio's {fio:?}"
            );
        }
        std::fs::remove_file(&log).unwrap();
    }
}
