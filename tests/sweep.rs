//! Sweeps on tiny sizes: stated order, one result file per point, resume after deletion and
//! after Ctrl-C, table shapes, report formats, compare, bad input.

mod common;

use common::{words, Sandbox};
use std::path::Path;

fn result_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".json"))
        .collect();
    v.sort();
    v
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn sweep_runs_points_in_order_and_shapes_the_table() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&words(
            "sweep --rw read --bs 4k,16k --cache buffered,direct --size 256k f --output res",
        ))
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("order bs (outer) > cache (inner)"),
        "{stderr}"
    );
    // The paper's shape: block size down, the markers of what `explain` found (these runs
    // are too short), one column per policy and metric.
    let header = stdout.lines().nth(1).unwrap();
    let cols: Vec<&str> = header
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(
        &cols[..6],
        [
            "block size",
            "notes",
            "buffered throughput",
            "direct throughput",
            "buffered CPU s",
            "direct CPU s"
        ]
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("4k "))
            && stdout.lines().any(|l| l.starts_with("16k "))
    );
    let files = result_files(&sb.file("res"));
    assert_eq!(
        files,
        [
            "sweep-0000-bs-4k_cache-buffered.json",
            "sweep-0001-bs-4k_cache-direct.json",
            "sweep-0002-bs-16k_cache-buffered.json",
            "sweep-0003-bs-16k_cache-direct.json",
        ]
    );
    let r = json(&sb.file("res/sweep-0003-bs-16k_cache-direct.json"));
    assert_eq!(r["job"]["block_size"], 16384);
    assert_eq!(r["plan"]["cache"]["policy"], "direct");
    assert_eq!(r["status"], "complete");
    assert!(r["total"]["bytes"].as_u64().unwrap() >= 256 * 1024);
    assert_eq!(r["probes"]["sweep"]["index"], 3);
    assert!(sb.file("res/report.html").exists() && sb.file("res/report.md").exists());
    // The scratch file is gone.
    assert!(!sb.file("f").exists());
}

#[test]
fn sweep_resumes_skipping_stored_points() {
    let sb = Sandbox::new();
    let args = [
        "sweep",
        "--rw",
        "write",
        "--bs",
        "4k,8k,16k",
        "--size",
        "128k",
        "f",
        "--output",
        "res",
    ];
    sb.cmd(&args).assert().success();
    let files = result_files(&sb.file("res"));
    assert_eq!(files.len(), 3);
    let kept = std::fs::read_to_string(sb.file("res").join(&files[0])).unwrap();
    std::fs::remove_file(sb.file("res").join(&files[1])).unwrap();
    std::fs::remove_file(sb.file("res").join(&files[2])).unwrap();
    let out = sb.cmd(&args).assert().success().get_output().clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("2 measured, 1 reused"), "{stderr}");
    // The stored point was not measured again.
    assert_eq!(
        std::fs::read_to_string(sb.file("res").join(&files[0])).unwrap(),
        kept
    );
    // A changed setting does not match the stored points: with --force (without it the
    // stored points are not replaced, see tests/hardening_outputs.rs) all are measured again.
    let mut changed = args.to_vec();
    changed[6] = "256k";
    changed.push("--force");
    let out = sb.cmd(&changed).assert().success().get_output().clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 measured, 0 reused"));
    let out = sb
        .cmd(&[&changed[..], &["--fresh"]].concat())
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 measured, 0 reused"));
}

#[test]
fn interrupted_sweep_keeps_what_it_measured_and_resumes() {
    let sb = Sandbox::new();
    let bin = assert_cmd::cargo::cargo_bin("fsbench");
    let args = [
        "sweep",
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--threads",
        "1,2,3,4",
        "--size",
        "1m",
        "--time",
        "0.7s",
        "f",
        "--output",
        "res",
    ];
    let mut child = std::process::Command::new(&bin)
        .args(args)
        .current_dir(sb.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let res = sb.file("res");
    let t0 = std::time::Instant::now();
    while (!res.exists() || result_files(&res).is_empty()) && t0.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: kill sends a signal to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "interrupted sweeps exit 130");
    let stored = result_files(&res);
    assert!(!stored.is_empty() && stored.len() < 4, "{stored:?}");
    for f in &stored {
        let v = json(&res.join(f));
        assert!(v["status"] == "complete" || v["status"] == "partial", "{f}");
    }
    assert!(!res
        .read_dir()
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(".partial")));
    let complete = stored
        .iter()
        .filter(|f| json(&res.join(f))["status"] == "complete")
        .count();
    let out = sb.cmd(&args).assert().success().get_output().clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{} measured, {complete} reused", 4 - complete)),
        "{stderr}"
    );
    assert_eq!(result_files(&res).len(), 4, "4 points, no leftovers");
    assert!(!sb.file("f").exists());
}

#[test]
fn reports_in_every_format_and_compare_with_repeats() {
    let sb = Sandbox::new();
    sb.cmd(&words(
        "sweep --rw read --bs 4k,64k --cache buffered,direct --size 512k --repeat 2 f --output a",
    ))
    .assert()
    .success();
    assert_eq!(result_files(&sb.file("a")).len(), 8);
    let md = sb
        .cmd(&words(
            "report a --format md --rows cache --cols bs --metrics kb_per_s",
        ))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8_lossy(&md);
    assert!(
        md.contains("| cache | notes | bs=4k throughput | bs=64k throughput |"),
        "{md}"
    );
    assert!(md.contains("| buffered |") && md.contains("| direct |"));
    assert!(md.contains('±'), "repeats show their spread: {md}");
    // ± says what it is: the standard deviation, with the range beside it.
    assert!(
        md.contains("mean ± sample standard deviation (min..max)"),
        "{md}"
    );
    assert!(md.contains(".."), "{md}");
    let csv = sb
        .cmd(&words("report a --format csv"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let csv = String::from_utf8_lossy(&csv);
    assert!(csv.starts_with("suite,study,index,repeat,target,status,bs,cache,kb_per_s"));
    assert_eq!(csv.lines().count(), 9);
    let js = sb
        .cmd(&words("report a --format json"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let js: serde_json::Value = serde_json::from_slice(&js).unwrap();
    assert_eq!(js[0]["rows"].as_array().unwrap().len(), 2);
    sb.cmd(&words("report a --format html --output r.html"))
        .assert()
        .success();
    let html = std::fs::read_to_string(sb.file("r.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg class=\"chart line\""));
    // Compare a run with itself: every change is within the spread or none.
    let out = sb
        .cmd(&["compare", "a", "a"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.contains("after/before") && out.contains("0 better, 0 worse"),
        "{out}"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let sb = Sandbox::new();
    for args in [
        vec!["sweep", "--bs", "4k,8q", "--size", "1m", "f"],
        vec!["sweep", "--bs", "4k", "f"],
        vec!["sweep", "--axis", "speed=1,2", "--size", "1m", "f"],
        vec![
            "sweep", "--bs", "4k,8k", "--size", "1m", "--order", "cache", "f",
        ],
        vec![
            "sweep", "--bs", "4k,8k", "--size", "1m", "--rows", "nonsense", "f",
        ],
        vec!["report", "nothing-here.json"],
        vec!["report", ".", "--format", "pdf"],
        vec!["compare", "x.json", "y.json"],
        vec!["suite", "nosuch", "--dir", "."],
        vec!["suite", "backup"],
    ] {
        let out = sb.cmd(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"));
    }
    // Nothing was created by the refused runs.
    assert!(!sb.file("f").exists());
}

#[test]
fn sweep_refuses_to_overwrite_a_foreign_file() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("precious"), vec![7u8; 65536]).unwrap();
    let out = sb
        .cmd(&words(
            "sweep --rw write --bs 4k,8k --size 64k precious --output r",
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        std::fs::read(sb.file("precious")).unwrap(),
        vec![7u8; 65536]
    );
}

#[test]
fn workload_variables_are_axes() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("d")).unwrap();
    let out = sb
        .cmd(&words(
            "sweep --workload fileserver -D nthreads=1,4 -D nfiles=100 --time 1s d --output w",
        ))
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("nthreads") && stdout.contains("ops/s"),
        "{stdout}"
    );
    let files = result_files(&sb.file("w"));
    assert_eq!(
        files,
        [
            "sweep-0000-var.nthreads-1.json",
            "sweep-0001-var.nthreads-4.json"
        ]
    );
    let r1 = json(&sb.file("w").join(&files[0]));
    let r = json(&sb.file("w").join(&files[1]));
    assert_eq!(r["kind"], "workload");
    assert!(r["total"]["iops"].as_f64().unwrap() > 0.0);
    assert_eq!(r1["workload"]["variables"]["nthreads"], "1");
    assert_eq!(r["workload"]["variables"]["nthreads"], "4");
    assert_eq!(r["workload"]["variables"]["nfiles"], "100");
    assert!(
        std::fs::read_dir(sb.file("d")).unwrap().next().is_none(),
        "filesets removed"
    );
    // Job parameters make no sense for a workload sweep.
    let out = sb
        .cmd(&words("sweep --workload fileserver --bs 4k,8k d"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A rate-limited run's latency from its schedule (what each I/O waited behind the ones
/// before it counts) is a metric of the md and html reports, as the text report prints it:
/// never below the service latency, and equal to it for a run without a rate.
#[test]
fn latency_from_the_schedule_is_a_report_metric() {
    let sb = Sandbox::new();
    sb.cmd(&words(
        "run f --rw randread --bs 4k --size 1m --count 300 --rate-iops 3000 --output paced.json -s",
    ))
    .assert()
    .success();
    let md = sb
        .cmd(&words(
            "report paced.json --format md --metrics lat_p99_ms,sched_lat_p99_ms,sched_lat_ms",
        ))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8_lossy(&md);
    let header =
        "| p99 latency ms | p99 latency from schedule ms | mean latency from schedule ms |";
    assert!(md.contains(header), "{md}");
    let row = md
        .lines()
        .find(|l| l.starts_with("| run randread"))
        .unwrap_or_else(|| panic!("no row: {md}"));
    let cells: Vec<f64> = row
        .split('|')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    assert_eq!(cells.len(), 3, "{row}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("paced.json")).unwrap()).unwrap();
    let sched = &json["total"]["sched_lat_ns"];
    assert_eq!(sched["count"], 300);
    assert!(
        (cells[1] - sched["p99"].as_f64().unwrap() / 1e6).abs() < 0.0015,
        "{row}"
    );
    assert!(
        (cells[2] - sched["mean"].as_f64().unwrap() / 1e6).abs() < 0.0015,
        "{row}"
    );
    assert!(
        cells[1] + 0.0015 >= cells[0],
        "from the schedule >= service: {row}"
    );
    let html = sb
        .cmd(&words(
            "report paced.json --format html --metrics sched_lat_p99_ms",
        ))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8_lossy(&html).contains("p99 latency from schedule ms"));
}

/// A Markdown report shows a run's trims as a direction and its figures per I/O size; the
/// trim metrics fill a study's table.
#[test]
fn markdown_report_shows_trims_and_sizes() {
    let sb = Sandbox::new();
    sb.cmd(&words(
        "run f --rw randtrim --bsrange 4k-8k --size 1m --count 200 --seed 4 --output t.json -s",
    ))
    .assert()
    .success();
    let md = sb
        .cmd(&words(
            "report t.json --format md --metrics trim_iops,trim_lat_ms",
        ))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8_lossy(&md);
    assert!(md.contains("| trim IOPS | trim mean latency ms |"), "{md}");
    assert!(md.contains("## Directions and I/O sizes"), "{md}");
    let trim = md
        .lines()
        .find(|l| l.starts_with("| trim |"))
        .unwrap_or_else(|| panic!("no trim row: {md}"));
    assert!(trim.starts_with("| trim | 200 |"), "{trim}");
    let sizes: Vec<(String, u64)> = md
        .lines()
        .filter(|l| l.starts_with("| 4k |") || l.starts_with("| 8k |"))
        .map(|l| {
            let c: Vec<&str> = l.split('|').map(str::trim).collect();
            (c[1].to_string(), c[6].parse().unwrap())
        })
        .collect();
    assert_eq!(sizes.len(), 2, "{md}");
    assert_eq!(
        sizes.iter().map(|s| s.1).sum::<u64>(),
        200,
        "every trim in a size"
    );
    assert!(!md.contains("| read |"), "no reads were done: {md}");
}
