//! `fsbench fio` jobs of one group that name the same file, through the binary: they run on
//! it together (each its own Result, with its own I/O), the file is laid out before either
//! starts and removed after both (kept with `unlink=0` on either, or `--keep`); a file fsbench
//! did not create still needs `--force`; another fsbench process cannot take the file while
//! the group holds it; a sibling that cannot start calls the group off and leaves nothing.

mod common;
use common::Sandbox;
use serde_json::Value;

/// A reader and a writer on one file, no stonewall; each paced (rate_iops) so that its run
/// lasts long enough for the overlap of their windows to mean something. `extra` goes into
/// the [global] section, `reader`/`writer` into each job.
fn job_file(sb: &Sandbox, global: &str, reader: &str, writer: &str) -> String {
    let text = format!(
        "[global]\nfilename=shared.dat\nbs=4k\nrate_iops=200\n{global}\n\
         [reader]\nrw=randread\nsize=64k\n{reader}\n\
         [writer]\nrw=write\nsize=128k\n{writer}\n"
    );
    std::fs::write(sb.file("j.fio"), text).unwrap();
    "j.fio".into()
}

/// Run `fsbench fio ARGS --format json`; the Results and the exit code.
fn run(sb: &Sandbox, args: &[&str]) -> (Vec<Value>, std::process::Output) {
    let mut all = vec!["fio"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let o = sb.cmd(&all).output().unwrap();
    let rs = match serde_json::from_slice::<Value>(&o.stdout) {
        Ok(Value::Array(a)) => a,
        Ok(one) => vec![one],
        Err(_) => Vec::new(),
    };
    (rs, o)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn by_name<'a>(rs: &'a [Value], name: &str) -> &'a Value {
    rs.iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no Result named {name}"))
}

/// A Result's time window: (start, end) in Unix seconds.
fn window(r: &Value) -> (f64, f64) {
    let start = r["started_unix_s"].as_f64().unwrap();
    (start, start + r["total"]["elapsed_s"].as_f64().unwrap())
}

/// The reader and writer each did their own I/O, and did it at the same time.
fn check_ran_together(rs: &[Value]) {
    let names: Vec<&str> = rs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["reader", "writer"]);
    let (r, w) = (by_name(rs, "reader"), by_name(rs, "writer"));
    for x in [r, w] {
        assert_eq!(x["status"], "complete", "{}", x["failures"]);
    }
    // The reader read the whole 64 KiB (laid out for it), the writer wrote its 128 KiB:
    // each Result is its own job's I/O only.
    assert_eq!(
        (
            u(&r["total"]["read_ops"]),
            u(&r["total"]["write_ops"]),
            u(&r["total"]["bytes"])
        ),
        (16, 0, 64 << 10)
    );
    assert_eq!(
        (
            u(&w["total"]["read_ops"]),
            u(&w["total"]["write_ops"]),
            u(&w["total"]["bytes"])
        ),
        (0, 32, 128 << 10)
    );
    // The reader ended first; the file was still there for the writer's probe after its
    // I/O (the extents of the file it wrote, read by name): the reader did not remove it.
    let probed = &w["probes"]["extents"]["files"][0];
    assert_eq!(probed["path"], "shared.dat", "{probed}");
    assert_eq!(u(&probed["size_bytes"]), 128 << 10, "{probed}");
    // Both on the one file fsbench created.
    for x in [r, w] {
        let t = &x["plan"]["targets"][0];
        assert_eq!(t["path"], "shared.dat");
        assert_eq!(t["created"], true);
    }
    // Paced at 200 I/Os per second, the reader lasts about 0.08 s and the writer 0.16 s:
    // started together, each began before the other ended (one after the other, the second
    // would begin only when the first had ended).
    let (rw, ww) = (window(r), window(w));
    assert!(rw.0 < ww.1 && ww.0 < rw.1, "{rw:?} {ww:?}");
    assert!((rw.0 - ww.0).abs() < 0.05, "{rw:?} {ww:?}");
}

#[test]
fn a_reader_and_a_writer_run_together_on_one_file_which_goes_after_both() {
    let sb = Sandbox::new();
    let f = job_file(&sb, "", "", "");
    let (rs, o) = run(&sb, &[&f]);
    assert!(o.status.success(), "{o:?}");
    check_ran_together(&rs);
    assert_eq!(
        sb.listing(),
        ["j.fio"],
        "the shared file is removed after both"
    );
}

#[test]
fn unlink_0_on_either_job_or_keep_keeps_the_shared_file() {
    for (reader, writer, extra) in [
        ("unlink=0", "", None),
        ("", "unlink=0", None),
        ("", "", Some("--keep")),
    ] {
        let sb = Sandbox::new();
        let f = job_file(&sb, "", reader, writer);
        let mut args = vec![f.as_str()];
        args.extend(extra);
        let (rs, o) = run(&sb, &args);
        assert!(o.status.success(), "{o:?}");
        check_ran_together(&rs);
        assert_eq!(
            sb.listing(),
            ["j.fio", "shared.dat"],
            "{reader} {writer} {extra:?}"
        );
        // The reader's 64 KiB laid out, then the writer's 128 KiB written over and past it.
        assert_eq!(common::file_len(&sb.file("shared.dat")), 128 << 10);
    }
}

#[test]
fn a_shared_file_fsbench_did_not_create_needs_force_and_is_never_removed() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("shared.dat"), vec![7u8; 128 << 10]).unwrap();
    let f = job_file(&sb, "", "", "");
    let (_, o) = run(&sb, &[&f]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("refusing to modify shared.dat") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(
        std::fs::read(sb.file("shared.dat")).unwrap(),
        vec![7u8; 128 << 10],
        "untouched"
    );
    // With --force both run on it, and it stays: fsbench did not create it.
    let (rs, o) = run(&sb, &[&f, "--force"]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        by_name(&rs, "writer")["plan"]["targets"][0]["created"],
        false
    );
    assert_eq!(u(&by_name(&rs, "reader")["total"]["read_ops"]), 16);
    assert_eq!(sb.listing(), ["j.fio", "shared.dat"]);
    let data = std::fs::read(sb.file("shared.dat")).unwrap();
    assert_eq!(data.len(), 128 << 10);
    assert_ne!(
        &data[..4096],
        &[7u8; 4096][..],
        "the writer wrote its start"
    );
}

#[test]
fn another_fsbench_process_cannot_take_the_file_the_group_holds() {
    let sb = Sandbox::new();
    let f = job_file(&sb, "runtime=3s\ntime_based", "", "");
    let mut first = std::process::Command::new(env!("CARGO_BIN_EXE_fsbench"));
    first
        .current_dir(sb.path())
        .args(["fio", &f, "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let first = first.spawn().unwrap();
    let pid = first.id();
    // Wait until the group holds the file (it is locked as it is created), then a little more.
    let t0 = std::time::Instant::now();
    while !sb.file("shared.dat").exists() {
        assert!(t0.elapsed().as_secs() < 20, "the group never made its file");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = sb
        .cmd(&[
            "fio",
            "--name=intruder",
            "--filename=shared.dat",
            "--rw=write",
            "--size=64k",
        ])
        .output()
        .unwrap();
    let out = first.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("shared.dat is in use by another fsbench run")
            && err.contains(&format!("process {pid}")),
        "{err}"
    );
    // The group was not disturbed, and removed its file after both jobs.
    assert!(out.status.success(), "{out:?}");
    let rs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    for r in &rs {
        assert_eq!(r["status"], "complete", "{}", r["name"]);
        assert!(u(&r["total"]["ops"]) > 0);
    }
    assert_eq!(sb.listing(), ["j.fio"]);
}

#[test]
fn a_refused_sibling_calls_the_group_off_and_nothing_is_left() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("mine.dat"), vec![7u8; 65536]).unwrap();
    // The writer also names a file fsbench did not create: refused, so the reader that
    // shares shared.dat with it never starts, and shared.dat goes.
    let f = job_file(&sb, "", "", "filename=shared.dat:mine.dat");
    let (_, o) = run(&sb, &[&f]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("mine.dat") && err.contains("--force"), "{err}");
    assert_eq!(sb.listing(), ["j.fio", "mine.dat"]);
    assert_eq!(
        std::fs::read(sb.file("mine.dat")).unwrap(),
        vec![7u8; 65536]
    );
}

#[test]
fn a_sibling_whose_layout_fails_calls_the_group_off_and_nothing_is_left() {
    let sb = Sandbox::new();
    // The reader needs 2 MiB laid out; writes past 1 MiB fail (RLIMIT_FSIZE).
    std::fs::write(
        sb.file("j.fio"),
        "[global]\nfilename=shared.dat\nbs=4k\n[reader]\nrw=read\nsize=2m\n[writer]\nrw=write\nsize=64k\n",
    )
    .unwrap();
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_fsbench"));
    c.current_dir(sb.path())
        .args(["fio", "j.fio", "--format", "json"]);
    common::limit_file_size(&mut c, 1 << 20);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let rs = match serde_json::from_slice::<Value>(&o.stdout).unwrap() {
        Value::Array(a) => a,
        one => vec![one],
    };
    // The reader's Result says its layout failed; the writer was called off, wrote nothing.
    let names: Vec<&str> = rs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["reader"], "{rs:?}");
    let r = &rs[0];
    assert_eq!(r["status"], "failed");
    assert_eq!(u(&r["total"]["ops"]), 0);
    assert!(
        r["failures"][0]["message"]
            .as_str()
            .unwrap()
            .contains("laying out"),
        "{}",
        r["failures"]
    );
    assert!(
        r["notes"]
            .to_string()
            .contains("not run, because a job of the group could not start: [writer]"),
        "{}",
        r["notes"]
    );
    assert_eq!(sb.listing(), ["j.fio"], "nothing left behind");
}

/// Under mpirun, jobs of one group (sharing a file or not) are refused in one line, before
/// anything is made.
#[cfg(feature = "mpi")]
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn under_mpirun_jobs_sharing_a_file_are_refused_in_one_line() {
    let sb = Sandbox::new();
    let f = job_file(&sb, "", "", "");
    let o = common::mpirun(&sb, 2, &["fio", &f]);
    let line = common::mpi_refused_in_one_line(&o);
    assert!(
        line.contains("jobs that run at the same time") && line.contains("stonewall"),
        "{line}"
    );
    assert_eq!(sb.listing(), ["j.fio"]);
}
