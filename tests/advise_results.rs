//! `advise --measure --results DIR`: every measured run is kept as the one Result envelope
//! (kind `io`, with the advise point in its `sweep` probe), and `report` and `compare` read
//! the directory like any sweep's.

mod common;
use common::*;

fn results(dir: &std::path::Path) -> Vec<(String, serde_json::Value)> {
    let mut v: Vec<(String, serde_json::Value)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                serde_json::from_str(&text).unwrap(),
            )
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn measured_runs_are_results_that_report_and_compare_read() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("m")).unwrap();
    let out = sb
        .cmd(&words(
            "advise m --measure --measure-size 8m --measure-time 2s --measure-repeat 2 --results res --format json",
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let advice: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = advice["measurement"]["points"].as_array().unwrap();
    let runs = results(&sb.file("res"));
    // Every point of the advise plan was measured, or skipped with a note (the file is too
    // small for that many streams).
    let skipped = advice["measurement"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n.as_str().unwrap().contains("skipped"))
        .count();
    assert_eq!(
        points.len() + skipped,
        fsbench::advise::measure::SIZES.len() * 4 + fsbench::advise::measure::STREAMS.len() * 2
    );
    // Two runs of every point, each a whole Result.
    assert!(!points.is_empty());
    assert_eq!(
        runs.len(),
        2 * points.len(),
        "{:?}",
        runs.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    for (name, r) in &runs {
        assert_eq!(r["kind"], "io", "{name}");
        assert_eq!(r["schema_version"], 3, "{name}");
        assert_eq!(r["status"], "complete", "{name}");
        assert!(r["job"]["block_size"].as_u64().unwrap() > 0, "{name}");
        assert!(r["total"]["bytes"].as_u64().unwrap() > 0, "{name}");
        assert!(r["environment"].is_object(), "{name}");
        let sweep = &r["probes"]["sweep"];
        assert_eq!(sweep["suite"], "advise", "{name}");
        assert!(name.starts_with(sweep["study"].as_str().unwrap()), "{name}");
    }
    // The point the advice kept is one of its two runs (the median of two is the faster).
    for (i, p) in points.iter().enumerate() {
        let mine: Vec<&serde_json::Value> = runs
            .iter()
            .map(|(_, r)| r)
            .filter(|r| r["probes"]["sweep"]["index"] == i)
            .collect();
        assert_eq!(mine.len(), 2, "point {i}");
        assert!(mine
            .iter()
            .all(|r| r["job"]["block_size"] == p["block_size_bytes"]
                && r["job"]["threads"] == p["threads"]));
        let kept = p["bytes"].as_u64().unwrap();
        assert!(
            mine.iter()
                .any(|r| r["total"]["bytes"].as_u64() == Some(kept)),
            "point {i}"
        );
    }
    let rep = sb.cmd(&words("report res")).output().unwrap();
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let text = String::from_utf8_lossy(&rep.stdout);
    assert!(
        text.contains("advise --measure: I/O size, buffered and direct"),
        "{text}"
    );
    assert!(
        text.contains("read direct throughput") && text.contains("write buffered throughput"),
        "{text}"
    );
    assert!(
        text.contains("advise --measure: direct streams at the knee size"),
        "{text}"
    );
    let cmp = sb.cmd(&words("compare res res")).output().unwrap();
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(
        text.contains("advise-sizes: bs=4k threads=1 dir=read cache=direct"),
        "{text}"
    );
    assert!(text.contains("advise-streams:"), "{text}");
    // The scratch file is gone; the results stay.
    assert!(std::fs::read_dir(sb.file("m")).unwrap().next().is_none());
}

#[test]
fn results_without_measure_is_a_usage_error() {
    let sb = Sandbox::new();
    let out = sb.cmd(&words("advise . --results res")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--results needs --measure"), "{err}");
    assert!(!sb.file("res").exists());
}
