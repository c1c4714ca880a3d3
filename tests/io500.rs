//! `fsbench io500` through the binary: IO500's twelve phases in its order with non-zero
//! figures, the printed score recomputed from the printed phases, reads and stats of exactly
//! what the writes did, mdtest-hard files of 3901 bytes found by find, the unofficial mark
//! below 300 s, one-line refusals of a bad configuration, and nothing left behind (also after
//! a killed run).

mod common;
use common::Sandbox;
use serde_json::Value;

const PHASES: [&str; 12] = [
    "ior-easy-write",
    "mdtest-easy-write",
    "ior-hard-write",
    "mdtest-hard-write",
    "find",
    "ior-easy-read",
    "mdtest-easy-stat",
    "ior-hard-read",
    "mdtest-hard-stat",
    "mdtest-easy-delete",
    "mdtest-hard-read",
    "mdtest-hard-delete",
];

/// Small amounts: each write phase ends at its amount or the 1 s stonewall.
const SMALL: &str = "[ior-easy]\ntransferSize = 1m\nblockSize = 48m\n[ior-hard]\nsegmentCount = 1000\n[mdtest-easy]\nn = 3000\n[mdtest-hard]\nn = 1500\n";

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("data")).unwrap();
    std::fs::write(sb.file("small.ini"), SMALL).unwrap();
    sb
}

fn entries(sb: &Sandbox) -> Vec<String> {
    std::fs::read_dir(sb.file("data"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

fn group<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == name)
        .unwrap_or_else(|| panic!("no group {name}"))
}

fn stat(r: &Value, name: &str, key: &str) -> u64 {
    group(r, name)["stats"][key].as_u64().unwrap()
}

fn geo(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// One run: the phases, the score, exact reads, find's count, the unofficial mark, and an
/// empty directory afterwards.
#[test]
fn twelve_phases_score_and_exact_reads() {
    let sb = sandbox();
    let o = sb
        .cmd(&[
            "io500",
            "--config",
            "small.ini",
            "--stonewall",
            "1",
            "data",
            "--output",
            "r.json",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
    assert_eq!(r["kind"], "io500");
    assert_eq!(r["status"], "complete");
    let m = &r["io500"];

    // The twelve phases in IO500's order, as groups, in the io500 section and printed.
    let names: Vec<&str> = r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, PHASES);
    let phases = m["phases"].as_array().unwrap();
    let listed: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(listed, PHASES);
    for p in phases {
        assert!(p["value"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["ops"].as_u64().unwrap() > 0, "{p}");
    }
    let printed: Vec<(String, f64)> = out
        .lines()
        .filter_map(|l| l.strip_prefix("[RESULT] "))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[0].to_string(), w[1].parse().unwrap())
        })
        .collect();
    let printed_names: Vec<&str> = printed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(printed_names, PHASES, "{out}");

    // The score recomputed from the printed figures is the printed score.
    let (bw, md): (Vec<f64>, Vec<f64>) = (
        printed
            .iter()
            .filter(|(n, _)| n.starts_with("ior"))
            .map(|p| p.1)
            .collect(),
        printed
            .iter()
            .filter(|(n, _)| !n.starts_with("ior"))
            .map(|p| p.1)
            .collect(),
    );
    assert_eq!((bw.len(), md.len()), (4, 8));
    let score_line = out.lines().find(|l| l.starts_with("[SCORE]")).expect(&out);
    let words: Vec<&str> = score_line.split_whitespace().collect();
    let num = |after: &str| -> f64 {
        let i = words.iter().position(|w| *w == after).unwrap();
        words[i + 1].parse().unwrap()
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-5 * b.max(1e-3);
    assert!(close(geo(&bw), num("Bandwidth")), "{score_line}");
    assert!(close(geo(&md), num("IOPS")), "{score_line}");
    assert!(
        close((geo(&bw) * geo(&md)).sqrt(), num("TOTAL")),
        "{score_line}"
    );
    assert!(close(m["score"].as_f64().unwrap(), num("TOTAL")));

    // Reads, stats and deletes do exactly what the writes did.
    for (w, rd) in [
        ("ior-easy-write", "ior-easy-read"),
        ("ior-hard-write", "ior-hard-read"),
    ] {
        let wrote = stat(&r, w, "write_bytes");
        assert!(wrote > 0);
        assert_eq!(stat(&r, rd, "read_bytes"), wrote, "{rd}");
        assert_eq!(stat(&r, rd, "write_bytes"), 0);
    }
    assert_eq!(stat(&r, "ior-hard-write", "write_bytes") % 47_008, 0);
    let easy = stat(&r, "mdtest-easy-write", "ops");
    assert_eq!(stat(&r, "mdtest-easy-stat", "ops"), easy);
    assert_eq!(stat(&r, "mdtest-easy-delete", "ops"), easy);
    let hard = stat(&r, "mdtest-hard-write", "ops");
    for p in ["mdtest-hard-stat", "mdtest-hard-read", "mdtest-hard-delete"] {
        assert_eq!(stat(&r, p, "ops"), hard, "{p}");
    }
    // mdtest-hard files hold 3901 bytes, written and read back.
    assert_eq!(stat(&r, "mdtest-hard-write", "write_bytes"), hard * 3901);
    assert_eq!(stat(&r, "mdtest-hard-read", "read_bytes"), hard * 3901);

    // find: the mdtest-hard files (3901 bytes, newer than the stamp) with 01 in the name.
    let want = (0..hard).filter(|i| i.to_string().contains("01")).count() as u64;
    assert_eq!(m["find_matched"].as_u64().unwrap(), want);
    assert!(want > 0);
    // Every file and directory: the timestamp, 2 ior files, 4 directories, 2 trees, files.
    assert_eq!(
        m["find_total"].as_u64().unwrap(),
        1 + 2 + 4 + 2 + easy + hard
    );
    assert!(out.contains(&format!("find matched {want} of")), "{out}");
    // One host: one walk, no ranks' parts.
    assert!(m.get("find_ranks").is_none(), "{m}");
    assert!(!out.contains(" ranks (each looked at"), "{out}");

    // Below 300 s the run is marked unofficial.
    assert_eq!(m["unofficial"], true);
    assert_eq!(m["stonewall_s"], 1);
    assert!(score_line.contains("[unofficial]"));
    // Nothing is left behind.
    assert!(entries(&sb).is_empty(), "{:?}", entries(&sb));
}

#[test]
fn bad_configurations_are_one_line_refusals() {
    let sb = sandbox();
    for (text, want) in [
        ("[ior-easy]\nbogus = 1\n", "[ior-easy] bogus: unknown key"),
        ("[global]\napi = DFS\n", "[global] api is an IO500 key"),
        (
            "[mdtest-hard]\nn = 0\n",
            "[mdtest-hard] n 0: must be between 1",
        ),
        ("[nosuch]\n", "unknown section [nosuch]"),
        (
            "[ior-easy]\ntransferSize = 2m\nblockSize = 3m\n",
            "multiple",
        ),
    ] {
        std::fs::write(sb.file("bad.ini"), text).unwrap();
        let o = sb
            .cmd(&["io500", "--config", "bad.ini", "--stonewall", "1", "data"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{text:?}: {err}");
        assert!(o.stdout.is_empty());
        assert!(entries(&sb).is_empty());
    }
    let o = sb
        .cmd(&["io500", "--stonewall", "0", "data"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = sb.cmd(&["io500", "--stonewall", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no directory"));
}

/// A run killed in its middle leaves its directory; the next run removes it and says so.
#[test]
fn a_killed_runs_directory_is_removed_by_the_next_run() {
    let sb = sandbox();
    // More files than 5 s can make: the run is in mdtest-easy-write when it is killed.
    std::fs::write(sb.file("long.ini"), "[mdtest-easy]\nn = 100000000\n").unwrap();
    let bin = assert_cmd::cargo::cargo_bin("fsbench");
    let mut child = std::process::Command::new(bin)
        .current_dir(sb.path())
        .args(["io500", "--config", "long.ini", "--stonewall", "5", "data"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let left = format!("fsbench-io500-{}", child.id());
    let t0 = std::time::Instant::now();
    while !entries(&sb).contains(&left) && t0.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(800));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(entries(&sb), vec![left.clone()]);
    let r = sb.run_json(&["io500", "--config", "small.ini", "--stonewall", "1", "data"]);
    let notes = r["notes"].to_string();
    assert!(notes.contains(&left) && notes.contains("killed"), "{notes}");
    assert!(entries(&sb).is_empty(), "{:?}", entries(&sb));
}

/// Write phases with more work than the stonewall allows stop at it; the phases after them
/// do exactly what was done.
#[test]
fn the_stonewall_stops_the_writes_and_the_later_phases_follow() {
    let sb = sandbox();
    std::fs::write(
        sb.file("big.ini"),
        "[ior-easy]\ntransferSize = 1m\nblockSize = 16m\n[ior-hard]\nsegmentCount = 100\n[mdtest-easy]\nn = 100000000\n[mdtest-hard]\nn = 100000000\n",
    )
    .unwrap();
    let r = sb.run_json(&["io500", "--config", "big.ini", "--stonewall", "1", "data"]);
    let phases = r["io500"]["phases"].as_array().unwrap();
    for name in ["mdtest-easy-write", "mdtest-hard-write"] {
        let p = phases.iter().find(|p| p["name"] == name).unwrap();
        assert_eq!(p["stonewalled"], true, "{p}");
        let t = p["time_s"].as_f64().unwrap();
        assert!((1.0..5.0).contains(&t), "{p}");
        assert!(p["ops"].as_u64().unwrap() < 100_000_000);
    }
    let easy = stat(&r, "mdtest-easy-write", "ops");
    assert_eq!(stat(&r, "mdtest-easy-stat", "ops"), easy);
    assert_eq!(stat(&r, "mdtest-easy-delete", "ops"), easy);
    let hard = stat(&r, "mdtest-hard-write", "ops");
    assert_eq!(stat(&r, "mdtest-hard-read", "read_bytes"), hard * 3901);
    // The small ior amounts ran out before the stonewall: not stonewalled, all written.
    assert_eq!(stat(&r, "ior-easy-write", "write_bytes"), 16 << 20);
    assert_eq!(stat(&r, "ior-hard-read", "read_bytes"), 100 * 47_008);
    assert!(r["explain"]
        .to_string()
        .contains("ended before the 1 s stonewall"));
    assert!(entries(&sb).is_empty());
}
