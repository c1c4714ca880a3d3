//! `fsbench mdtest` through the binary: each phase does one operation per item, the tree has
//! mdtest's shape, iterations are summarised, the stonewall stops a create phase, files have
//! the bytes asked for, nothing is left behind, and bad flags are one-line refusals.

mod common;
use common::{words, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The sandbox with an empty `data` directory to run in.
fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("data")).unwrap();
    sb
}

fn mdtest(sb: &Sandbox, line: &str) -> Value {
    let mut args = vec!["mdtest"];
    args.extend(words(line));
    args.extend(["-d", "data"]);
    sb.run_json(&args)
}

/// Operations of each group with `op`, in iteration order.
fn ops(r: &Value, op: &str) -> Vec<u64> {
    r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["op"] == op)
        .map(|g| g["stats"]["ops"].as_u64().unwrap())
        .collect()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Every path under `dir` (depth first), with whether it is a directory.
fn walk(dir: &Path, out: &mut Vec<(PathBuf, bool)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let is_dir = e.file_type().unwrap().is_dir();
        out.push((p.clone(), is_dir));
        if is_dir {
            walk(&p, out);
        }
    }
}

fn named(all: &[(PathBuf, bool)], prefix: &str, dir: bool) -> usize {
    all.iter()
        .filter(|(p, d)| *d == dir && p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .count()
}

#[test]
fn each_phase_does_one_operation_per_item_and_leaves_nothing() {
    let sb = sandbox();
    let r = mdtest(&sb, "-n 100 -F -C -T -r");
    assert_eq!(r["kind"], "mdtest");
    assert_eq!(r["status"], "complete");
    assert_eq!(ops(&r, "file_create"), [100]);
    assert_eq!(ops(&r, "file_stat"), [100]);
    assert_eq!(ops(&r, "file_remove"), [100]);
    assert!(ops(&r, "file_read").is_empty(), "-E was not asked for");
    assert!(ops(&r, "dir_create").is_empty(), "-F: files only");
    assert_eq!(ops(&r, "tree_create"), [1]);
    // Each item's operation went through the engine and was counted there.
    let g = |op: &str| {
        r["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["op"] == op)
            .unwrap()["stats"]
            .clone()
    };
    assert_eq!(g("file_create")["syscalls"]["open"], 100);
    assert_eq!(g("file_create")["syscalls"]["close"], 100);
    assert_eq!(g("file_stat")["syscalls"]["stat"], 100);
    assert_eq!(g("file_remove")["syscalls"]["unlink"], 100);
    // Latency percentiles and CPU per operation, which mdtest does not give.
    assert_eq!(g("file_stat")["lat_ns"]["count"], 100);
    assert!(g("file_stat")["lat_ns"]["p99"].as_u64().unwrap() > 0);
    let summary = r["mdtest"]["summary"].as_array().unwrap();
    let phases: Vec<&str> = summary.iter().map(|s| s["op"].as_str().unwrap()).collect();
    assert_eq!(
        phases,
        [
            "file_create",
            "file_stat",
            "file_remove",
            "tree_create",
            "tree_remove"
        ]
    );
    assert!(summary
        .iter()
        .all(|s| s["cpu_us_per_op"].as_f64().unwrap() > 0.0));
    assert!(entries(&sb.file("data")).is_empty(), "left behind");
}

#[test]
fn directories_are_created_stated_renamed_and_removed() {
    let sb = sandbox();
    let r = mdtest(&sb, "-n 40 -D");
    for op in ["dir_create", "dir_stat", "dir_rename", "dir_remove"] {
        assert_eq!(ops(&r, op), [40], "{op}");
    }
    assert!(ops(&r, "file_create").is_empty());
    let g = r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["op"] == "dir_rename")
        .unwrap();
    assert_eq!(g["stats"]["syscalls"]["rename"], 40);
    assert!(entries(&sb.file("data")).is_empty());
}

#[test]
fn a_tree_of_depth_2_and_branching_3_has_13_directories() {
    let sb = sandbox();
    // 100 items over 13 directories: 7 in each, 91 in all (as mdtest rounds).
    let r = mdtest(&sb, "-n 100 -z 2 -b 3 -C --keep");
    assert_eq!(r["mdtest"]["dirs_in_tree"], 13);
    assert_eq!(ops(&r, "tree_create"), [13]);
    assert_eq!(ops(&r, "dir_create"), [91]);
    assert_eq!(ops(&r, "file_create"), [91]);
    let mut all = Vec::new();
    walk(&sb.file("data"), &mut all);
    assert_eq!(named(&all, "mdtest_tree.", true), 13);
    assert_eq!(named(&all, "dir.mdtest.0.", true), 91);
    assert_eq!(named(&all, "file.mdtest.0.", false), 91);
    // The deepest directories sit two levels under the root.
    assert!(all.iter().any(|(p, _)| p
        .ends_with("test-dir.0-0/mdtest_tree.0/mdtest_tree.3/mdtest_tree.12/file.mdtest.0.90")));
}

#[test]
fn items_per_directory_and_leaf_only_place_items_in_the_leaves() {
    let sb = sandbox();
    let r = mdtest(&sb, "-I 3 -z 1 -b 2 -L -F -C --keep");
    assert_eq!(ops(&r, "file_create"), [6]);
    let mut all = Vec::new();
    walk(&sb.file("data"), &mut all);
    let files: Vec<&PathBuf> = all.iter().filter(|(_, d)| !d).map(|(p, _)| p).collect();
    assert_eq!(files.len(), 6);
    // No item in the root: each is in mdtest_tree.1 or mdtest_tree.2.
    for f in files {
        let parent = f.parent().unwrap().file_name().unwrap().to_string_lossy();
        assert!(
            parent == "mdtest_tree.1" || parent == "mdtest_tree.2",
            "{f:?}"
        );
    }
}

#[test]
fn three_iterations_give_max_min_mean_and_stddev_over_three() {
    let sb = sandbox();
    let r = mdtest(&sb, "-n 50 -F -i 3");
    assert_eq!(ops(&r, "file_create"), [50, 50, 50]);
    let rates: Vec<f64> = r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["op"] == "file_stat")
        .map(|g| g["stats"]["iops"].as_f64().unwrap())
        .collect();
    assert_eq!(rates.len(), 3);
    let s = r["mdtest"]["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["op"] == "file_stat")
        .unwrap();
    let mean = rates.iter().sum::<f64>() / 3.0;
    let sd = (rates.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    let f = |k: &str| s[k].as_f64().unwrap();
    assert!(close(f("mean"), mean), "{s} vs {rates:?}");
    assert!(close(f("stddev"), sd), "{s} vs {rates:?}");
    assert!(close(
        f("max"),
        rates.iter().cloned().fold(f64::MIN, f64::max)
    ));
    assert!(close(
        f("min"),
        rates.iter().cloned().fold(f64::MAX, f64::min)
    ));
    assert_eq!(s["ops"], 150);
    // The text is mdtest's summary.
    let out = sb
        .cmd(&words("mdtest -n 20 -F -i 3 -d data"))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("SUMMARY rate (in ops/sec): (of 3 iterations)"),
        "{text}"
    );
    assert!(text.contains("File creation"), "{text}");
    assert!(text.contains("Std Dev"), "{text}");
}

#[test]
fn the_stonewall_stops_the_create_phase_and_says_so() {
    let sb = sandbox();
    let out = sb
        .cmd(&words("mdtest -n 3000000 -F -W 1 -d data --output sw.json"))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("note: File creation stopped by the stonewall (-W 1)")
            && text.contains("(stonewalled in 1 iteration(s))"),
        "{text}"
    );
    let r: Value = serde_json::from_slice(&std::fs::read(sb.file("sw.json")).unwrap()).unwrap();
    let made = ops(&r, "file_create")[0];
    assert!(made > 0 && made < 3_000_000, "{made}");
    // The later phases work on what was made.
    assert_eq!(ops(&r, "file_stat"), [made]);
    assert_eq!(ops(&r, "file_remove"), [made]);
    let notes = r["notes"].to_string();
    assert!(notes.contains("stonewall"), "{notes}");
    let s = &r["mdtest"]["summary"][0];
    assert_eq!(s["op"], "file_create");
    assert_eq!(s["stonewalled"], 1);
    let elapsed = r["groups"][1]["stats"]["elapsed_s"].as_f64().unwrap();
    assert!((1.0..5.0).contains(&elapsed), "{elapsed}");
    assert!(entries(&sb.file("data")).is_empty());
}

#[test]
fn files_have_the_bytes_written_and_are_synced_and_read() {
    let sb = sandbox();
    let r = mdtest(&sb, "-n 12 -F -C -E -w 3901 -e 3901 -y --keep");
    let create = r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["op"] == "file_create")
        .unwrap();
    assert_eq!(create["stats"]["write_bytes"], 12 * 3901);
    assert_eq!(create["stats"]["syscalls"]["fsync"], 12);
    let read = r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["op"] == "file_read")
        .unwrap();
    assert_eq!(read["stats"]["read_bytes"], 12 * 3901);
    let mut all = Vec::new();
    walk(&sb.file("data"), &mut all);
    let files: Vec<&PathBuf> = all.iter().filter(|(_, d)| !d).map(|(p, _)| p).collect();
    assert_eq!(files.len(), 12);
    for f in files {
        assert_eq!(std::fs::metadata(f).unwrap().len(), 3901, "{f:?}");
    }
}

#[test]
fn random_order_and_unique_trees_are_recorded() {
    let sb = sandbox();
    let r = mdtest(&sb, "-n 30 -F -R --random-seed 5 -u -C -T --keep");
    assert_eq!(ops(&r, "file_stat"), [30]);
    assert_eq!(r["mdtest"]["random_seed"], 5);
    let mut all = Vec::new();
    walk(&sb.file("data"), &mut all);
    assert_eq!(named(&all, "mdtest_tree.0.0", true), 1, "{all:?}");
}

#[test]
fn a_directory_fsbench_did_not_make_is_never_touched() {
    let sb = sandbox();
    let stranger = sb.file("data/fsbench-mdtest-999999");
    std::fs::create_dir(&stranger).unwrap();
    std::fs::write(stranger.join("keep.me"), b"x").unwrap();
    mdtest(&sb, "-n 10 -F");
    assert_eq!(entries(&stranger), ["keep.me"]);
    assert_eq!(entries(&sb.file("data")), ["fsbench-mdtest-999999"]);
}

#[test]
fn bad_flags_are_refused_in_one_line_with_status_2() {
    let sb = sandbox();
    for (line, want) in [
        ("mdtest -q -n 5", "unknown option -q"),
        ("mdtest -n 10 -I 3", "disagree"),
        ("mdtest -n 10 -z 2 -b 0", "branching"),
        ("mdtest -n 10 -N 1", "several ranks"),
        ("mdtest -n 10 -c", "MPI ranks"),
        ("mdtest -F", "give -n N"),
        ("mdtest -n 10 -d data/missing", "data/missing"),
        ("mdtest -n 10 -F -C -E -w 10 -e 20", "-e 20"),
        ("mdtest -n 10 -F -E -e 20", "-e 20"),
        ("mdtest -n 100000000 -F -w 1g", "free"),
    ] {
        let out = sb.cmd(&words(line)).assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert_eq!(err.lines().count(), 1, "{line}: {err}");
        assert!(err.contains(want), "{line}: {err}");
    }
    assert!(entries(&sb.file("data")).is_empty());
}

#[test]
fn what_a_killed_run_left_is_removed_by_the_next_run() {
    let sb = sandbox();
    let bin = assert_cmd::cargo::cargo_bin("fsbench");
    let mut child = std::process::Command::new(bin)
        .current_dir(sb.path())
        .args(words("mdtest -n 3000000 -F -C -d data"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let top = sb.file(&format!("data/fsbench-mdtest-{}", child.id()));
    let t = std::time::Instant::now();
    while !top.join("test-dir.0-0").exists() && t.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(top.exists(), "the killed run left its directory");
    let r = mdtest(&sb, "-n 10 -F");
    if entries(&sb.file("data")).is_empty() {
        let notes = r["notes"].to_string();
        assert!(notes.contains("was killed"), "{notes}");
    } else {
        // Only where the file system keeps no user xattrs is nothing recorded to go by.
        assert!(
            xattr_less(&top),
            "a killed run's directory stayed: {:?}",
            entries(&sb.file("data"))
        );
    }
}

/// Whether `p` carries no `user.fsbench` mark (a file system without user xattrs).
fn xattr_less(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: NUL-terminated path and name; a zero-length query writes nothing.
    let n = unsafe {
        libc::getxattr(
            path.as_ptr(),
            c"user.fsbench".as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    n < 0
}

#[test]
fn csv_has_a_row_per_phase_and_iteration() {
    let sb = sandbox();
    let out = sb
        .cmd(&words("mdtest -n 10 -F -i 2 -d data --format csv"))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let groups: Vec<&str> = text.lines().filter(|l| l.contains(",group,")).collect();
    // File creation, stat, read, removal, tree creation and removal, twice.
    assert_eq!(groups.len(), 12, "{text}");
    assert_eq!(
        groups.iter().filter(|l| l.contains(",File read,")).count(),
        2,
        "{text}"
    );
}
