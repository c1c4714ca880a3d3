//! Every shipped suite at a tiny scale on real files, and the HTML report opened in headless
//! Chromium to check that every chart rendered with its data points.

mod common;

use common::{words, Sandbox};
use std::path::{Path, PathBuf};

fn records(dir: &Path) -> Vec<serde_json::Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.ends_with("suite.json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap())
        .collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p).unwrap().next().is_none()
}

/// Open `html` in headless Chromium and check the dumped DOM: every `svg.chart` has at least
/// one data point, and the count of charts matches the file. Fails when Chromium is missing
/// (tests that call this carry `cfg_attr(not(has_chromium), ignore)`).
fn check_in_chromium(html: &Path, min_charts: usize) {
    let dom = common::dom_in_chromium(html);
    assert!(!dom.contains("<script"), "the report needs no scripts");
    let charts: Vec<&str> = dom.split("<svg class=\"chart").skip(1).collect();
    assert!(
        charts.len() >= min_charts,
        "{} charts rendered, wanted {min_charts}",
        charts.len()
    );
    for c in &charts {
        let body = &c[..c.find("</svg>").expect("closed svg")];
        let points = ["pt", "bar", "cell"]
            .iter()
            .map(|c| body.matches(&format!("class=\"{c}\"")).count())
            .sum::<usize>();
        assert!(
            points > 0,
            "a chart without data points: {}",
            &body[..body.len().min(300)]
        );
        // The legend names each series of the chart's data points.
        for name in body.split("data-series=\"").skip(1) {
            let name = &name[..name.find('"').unwrap()];
            assert!(
                body.contains(&format!(">{name}</text>"))
                    || body.contains(&format!(">{name} ("))
                    || body.contains("class=\"cell\""),
                "{name} is not in the legend"
            );
        }
    }
}

#[test]
fn suite_list_names_every_suite() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&["suite", "list"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    for s in ["whitepaper", "storage-foundation", "shootout", "backup"] {
        assert!(out.contains(s), "{out}");
    }
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "SKIPPED: needs chromium to render the report"
)]
fn whitepaper_suite_at_tiny_scale_and_report_in_chromium() {
    let sb = Sandbox::new();
    let data = sb.file("data");
    std::fs::create_dir(&data).unwrap();
    let out = sb
        .cmd(&words(
            "suite whitepaper --dir data --scale 0.004 --output wp",
        ))
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    for title in [
        "Buffered File System Reads",
        "Buffered File System Writes",
        "Buffered Aged File System Reads",
        "Disk Limited Read Tests",
        "Multiple Application Read Tests",
        "Random I/O Read Tests",
        "Random I/O Write Tests",
        "Multiple Thread Write Tests",
        "Multiple Application Write Tests",
    ] {
        assert!(stdout.contains(title), "missing table {title}");
    }
    assert!(
        stdout.contains(
            "buffered throughput  discovered throughput  direct throughput  raw throughput"
        ),
        "{stdout}"
    );
    let recs = records(&sb.file("wp"));
    // Raw points ran on a loop device (root) or were skipped with the reason.
    let raw: Vec<&serde_json::Value> = recs
        .iter()
        .filter(|r| {
            r["probes"]["sweep"]["point"]
                .to_string()
                .contains("\"raw\"")
                || r["sweep"]["point"].to_string().contains("\"raw\"")
        })
        .collect();
    assert!(!raw.is_empty());
    for r in raw {
        if is_root() {
            assert_eq!(r["status"], "complete", "{r}");
            assert!(r["plan"]["targets"][0]["path"]
                .as_str()
                .unwrap()
                .starts_with("/dev/loop"));
        } else {
            assert_eq!(r["kind"], "skipped");
            assert!(r["reason"].as_str().unwrap().contains("not root"));
        }
    }
    // Aged file system points carry extents per file from FIEMAP.
    let aged: Vec<&serde_json::Value> = recs
        .iter()
        .filter(|r| r["probes"]["sweep"]["study"] == "aged")
        .collect();
    assert_eq!(aged.len(), 3 * (1 + 2 + 3 + 4));
    assert!(aged
        .iter()
        .all(|r| r["probes"]["extents_per_file"].as_f64().unwrap() >= 1.0));
    // Everything fsbench created in the data directory is gone; no loop device is left over.
    assert!(
        empty_dir(&data),
        "{:?}",
        std::fs::read_dir(&data)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect::<Vec<_>>()
    );
    let loops = std::process::Command::new("losetup")
        .arg("-a")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default();
    assert!(!loops.contains(&sb.path().display().to_string()), "{loops}");
    // A re-run reuses every stored point.
    let out = sb
        .cmd(&words(
            "suite whitepaper --dir data --scale 0.004 --output wp --study read-bs-by-cache",
        ))
        .assert()
        .success()
        .get_output()
        .clone();
    let want = if is_root() {
        "0 measured, 20 reused"
    } else {
        "0 measured, 15 reused"
    };
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(want),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = sb.file("wp/report.html");
    // 10 studies x (KB/s + CPU s, + extents for the aged studies).
    check_in_chromium(&html, 20);
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "SKIPPED: needs chromium to render the report"
)]
fn storage_foundation_two_targets_normalised_to_baseline() {
    let sb = Sandbox::new();
    for d in ["concat", "stripe"] {
        std::fs::create_dir(sb.file(d)).unwrap();
    }
    let concat = sb.file("concat").display().to_string();
    let stripe = sb.file("stripe").display().to_string();
    let out = sb
        .cmd(&[
            "suite",
            "storage-foundation",
            "--dir",
            &concat,
            "--dir",
            &stripe,
            "--baseline",
            &concat,
            "--scale",
            "0.01",
            "--output",
            "sf",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("target") && stdout.contains("rand_read") && stdout.contains("1024k"));
    let recs = records(&sb.file("sf"));
    assert_eq!(recs.len(), 2 * 4 * 4);
    assert!(recs
        .iter()
        .all(|r| r["job"]["threads"] == 32 && r["status"] == "complete"));
    let html = std::fs::read_to_string(sb.file("sf/report.html")).unwrap();
    assert!(
        html.contains("<svg class=\"chart normalised\""),
        "normalised chart"
    );
    assert!(html.contains("Summary normalised to the baseline"));
    check_in_chromium(&sb.file("sf/report.html"), 4);
    assert!(empty_dir(&sb.file("concat")) && empty_dir(&sb.file("stripe")));
}

#[test]
fn backup_suite_archives_restores_and_verifies() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("data")).unwrap();
    let out = sb
        .cmd(&words("suite backup --dir data --scale 0.002 --output bk"))
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The suite file's description is in the report's preface.
    assert!(
        stdout.contains("One large and two small files archived in ustar format"),
        "{stdout}"
    );
    // The phases are too short to trust at this scale: the markers column is there.
    assert!(stdout.contains("phase    cache     notes  "), "{stdout}");
    assert!(
        stdout.contains("elapsed s  user s  sys s  read calls  write calls  read+write calls/s"),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("restore  direct ")),
        "{stdout}"
    );
    let recs = records(&sb.file("bk"));
    assert_eq!(recs.len(), 4);
    for r in &recs {
        assert_eq!(r["kind"], "backup");
        assert_eq!(r["status"], "complete", "{}", r["failures"]);
        assert!(r.get("job").is_none(), "a backup phase runs no Job");
        assert_eq!(r["backup"]["record_bytes"], 32256);
        assert!(r["total"]["syscalls"]["read"].as_u64().unwrap() > 0);
        assert!(r["total"]["syscalls"]["write"].as_u64().unwrap() > 0);
        // Each phase's CPU time is measured: its calls cost more than zero, and user +
        // system is the total.
        let t = &r["total"];
        let parts = t["cpu_user_s"].as_f64().unwrap() + t["cpu_sys_s"].as_f64().unwrap();
        assert!(parts > 0.0, "{t}");
        assert!((parts - t["cpu_s"].as_f64().unwrap()).abs() < 1e-6, "{t}");
    }
    let restores: Vec<_> = recs
        .iter()
        .filter(|r| {
            r["probes"]["sweep"]["point"]
                .to_string()
                .contains("restore")
        })
        .collect();
    assert_eq!(restores.len(), 2);
    assert!(restores.iter().all(|r| r["probes"]["verified"] == true));
    assert!(empty_dir(&sb.file("data")));
}

#[test]
fn shootout_runs_every_personality_on_each_target() {
    let sb = Sandbox::new();
    for d in ["a", "b"] {
        std::fs::create_dir(sb.file(d)).unwrap();
    }
    let out = sb
        .cmd(&words(
            "suite shootout --dir a --dir b --baseline a --scale 0.002 --output so",
        ))
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("MISSING"), "{stdout}");
    for p in [
        "fileserver",
        "varmail",
        "webproxy",
        "webserver",
        "large_db_oltp_8k_uncached",
        "randread2k",
        "createfiles",
    ] {
        assert!(stdout.contains(p), "{p} not named");
    }
    let recs = records(&sb.file("so"));
    assert_eq!(recs.len(), 2 * 24);
    for r in &recs {
        assert_eq!(r["kind"], "workload", "{r}");
        assert!(
            r["total"]["iops"].as_f64().unwrap() > 0.0,
            "{}: no ops",
            r["name"]
        );
        assert!(
            r["total"]["cpu_us_per_op"].as_f64().unwrap() > 0.0,
            "{}",
            r["name"]
        );
        assert!(!r["groups"].as_array().unwrap().is_empty());
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("so/suite.json")).unwrap()).unwrap();
    assert_eq!(manifest["measured"], 48);
    assert!(manifest["missing_personalities"]
        .as_array()
        .unwrap()
        .is_empty());
    let html = std::fs::read_to_string(sb.file("so/report.html")).unwrap();
    assert!(html.contains("<svg"), "charts in the report");
    assert!(
        empty_dir(&sb.file("a")) && empty_dir(&sb.file("b")),
        "filesets removed"
    );
}
