//! `fsbench suite ssd-pts`: the SNIA PTS style precondition study run through the binary with
//! tiny settings on a file (purge, fill, rounds, the steady-state chart and summary), the
//! refusals of block devices and of bad flags.

mod common;

use common::Sandbox;
use std::path::Path;

const TINY: &[&str] = &[
    "--size",
    "8m",
    "--fill-factor",
    "0.25",
    "--bs",
    "4k,64k",
    "--mixes",
    "100/0,0/100",
    "--point-time",
    "0.2s",
    "--max-rounds",
    "6",
];

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The stored records whose file name starts with `prefix`, in name (run) order.
fn stored(dir: &Path, prefix: &str) -> Vec<serde_json::Value> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".json"))
        .collect();
    names.sort();
    names.iter().map(|n| json(&dir.join(n))).collect()
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Well-formed XML: every tag closed in order, one root element, attributes quoted.
fn check_well_formed(svg: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut roots = 0;
    let mut rest = svg.trim();
    while let Some(i) = rest.find('<') {
        let text = &rest[..i];
        assert!(!text.contains('>'), "stray '>' in text: {text}");
        let end = rest[i..].find('>').expect("unclosed tag") + i;
        let tag = &rest[i + 1..end];
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unbalanced quotes: <{tag}>"
        );
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else if !tag.starts_with('?') && !tag.starts_with('!') {
            let name: String = tag
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '/')
                .collect();
            if stack.is_empty() {
                roots += 1;
            }
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
    assert_eq!(roots, 1, "one root element");
    assert!(svg.starts_with("<svg") && svg.contains("xmlns=\"http://www.w3.org/2000/svg\""));
}

/// The whole sequence on a file: the purge punches the whole file, the fill writes fill
/// factor x size in 128 KiB writes, then rounds of the matrix; a real run on this machine is
/// not steady in 0.2 s points or is, so the figures are checked against each other.
#[test]
fn the_sequence_runs_on_a_file() {
    let sb = Sandbox::new();
    let out = sb.file("out");
    let target = sb.file("pts.dat");
    let mut args = vec!["suite", "ssd-pts", target.to_str().unwrap()];
    args.extend_from_slice(TINY);
    args.extend_from_slice(&["--output", out.to_str().unwrap()]);
    let o = sb.cmd(&args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{err}\n{text}");
    // Purge: one trim pass over the whole 8 MiB file, said to be a hole punch.
    let purge = stored(&out, "ssd-pts-purge-");
    assert_eq!(purge.len(), 1);
    assert_eq!(u(&purge[0]["total"]["trim_bytes"]), 8 << 20);
    assert_eq!(u(&purge[0]["total"]["write_bytes"]), 0);
    assert!(purge[0]["probes"]["purge"]["method"]
        .as_str()
        .unwrap()
        .contains("hole punch"));
    // Fill: 0.25 x 8 MiB of 128 KiB sequential writes.
    let fill = stored(&out, "ssd-pts-fill-");
    assert_eq!(fill.len(), 1);
    assert_eq!(u(&fill[0]["total"]["write_bytes"]), 2 << 20);
    assert_eq!(u(&fill[0]["total"]["write_ops"]), 16);
    assert_eq!(fill[0]["job"]["access"], "write");
    assert_eq!(fill[0]["probes"]["precondition"]["fill_factor"], 0.25);
    // Rounds: 4 points each, random, the rounds run in order until steady or the limit.
    let summary = json(&out.join("ssd-pts.json"));
    let rounds = u(&summary["rounds_run"]) as usize;
    assert!((5..=6).contains(&rounds), "{summary}");
    let points = stored(&out, "ssd-pts-round-");
    assert_eq!(points.len(), rounds * 4);
    for p in &points {
        assert_eq!(p["job"]["access"], "randrw", "{}", p["job"]);
        assert!(u(&p["total"]["ops"]) > 0);
    }
    // The tracking variable is the 4k 0/100 point of each round.
    let tracking: Vec<f64> = summary["tracking_iops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(tracking.len(), rounds);
    let tracked: Vec<f64> = points
        .iter()
        .filter(|p| p["probes"]["sweep"]["point"].to_string().contains("0/100"))
        .filter(|p| p["job"]["block_size"] == 4096)
        .map(|p| p["total"]["iops"].as_f64().unwrap())
        .collect();
    assert_eq!(tracked, tracking);
    // The window figures are those of the last five rounds.
    let w = &summary["window"];
    let last5 = &tracking[rounds - 5..];
    let mean = last5.iter().sum::<f64>() / 5.0;
    assert!((w["mean"].as_f64().unwrap() - mean).abs() < 1e-6 * mean.max(1.0));
    assert_eq!(u(&w["first_round"]) as usize, rounds - 4);
    let steady = summary["steady"].as_bool().unwrap();
    assert_eq!(steady, w["steady"].as_bool().unwrap());
    assert_eq!(steady, rounds < 6 || summary["steady_round"] == 6);
    assert!(text.contains("Steady state: "), "{text}");
    assert!(
        text.contains("IOPS matrix, mean over the steady-state window"),
        "{text}"
    );
    assert!(
        text.contains("(--fill-factor 0.25: the PTS writes 2x)"),
        "{text}"
    );
    // The chart: valid SVG with both bands around the window's mean and a point per round.
    let svg = std::fs::read_to_string(out.join("steady-state.svg")).unwrap();
    check_well_formed(&svg);
    for pct in ["10", "20"] {
        assert!(
            svg.contains(&format!("data-series=\"mean ±{pct} %\"")),
            "band {pct}"
        );
    }
    assert_eq!(svg.matches("class=\"pt\"").count(), rounds);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("IOPS matrix"));
    // The target was created by the study and is gone.
    assert!(!target.exists());
}

/// A block device is refused without --force, before anything is written; and with --force
/// a device that holds a file system is still refused.
#[test]
#[cfg_attr(not(has_loop), ignore = "SKIPPED: needs root and loop devices")]
fn block_devices_need_force_and_no_signature() {
    let sb = Sandbox::new();
    let Some(lo) = common::LoopDevice::new(sb.path(), 16) else {
        common::cannot("no loop device");
    };
    let dev = lo.dev.to_str().unwrap();
    let o = sb
        .cmd(&[
            "suite",
            "ssd-pts",
            dev,
            "--max-rounds",
            "5",
            "--output",
            "o",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("add --force") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!sb.file("o").exists());
    // An ext2-family superblock magic at 1080: a signature, refused even with --force.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&lo.dev)
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &[0x53, 0xEF], 1080).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let o = sb
        .cmd(&["suite", "ssd-pts", dev, "--force", "--output", "o"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("refusing to purge"), "{err}");
    let mut magic = [0u8; 2];
    let f = std::fs::File::open(&lo.dev).unwrap();
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut magic, 1080).unwrap();
    assert_eq!(magic, [0x53, 0xEF], "the device was not touched");
}

/// With --force on a clean device, the purge is a discard of the whole device.
#[test]
#[cfg_attr(not(has_loop), ignore = "SKIPPED: needs root and loop devices")]
fn a_clean_device_is_purged_by_discard() {
    let sb = Sandbox::new();
    let Some(lo) = common::LoopDevice::new(sb.path(), 8) else {
        common::cannot("no loop device");
    };
    let out = sb.file("out");
    let mut args = vec!["suite", "ssd-pts", lo.dev.to_str().unwrap(), "--force"];
    args.extend_from_slice(&TINY[2..]);
    args.extend_from_slice(&["--output", out.to_str().unwrap()]);
    let o = sb.cmd(&args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let purge = stored(&out, "ssd-pts-purge-");
    assert_eq!(u(&purge[0]["total"]["trim_bytes"]), 8 << 20);
    assert!(purge[0]["probes"]["purge"]["method"]
        .as_str()
        .unwrap()
        .contains("BLKDISCARD"));
    assert_eq!(json(&out.join("ssd-pts.json"))["device"], true);
}

/// Bad flags: one line, exit 2, nothing written.
#[test]
fn bad_flags_exit_2() {
    let sb = Sandbox::new();
    let cases: &[(&[&str], &str)] = &[
        (&["--size", "8m", "--bs", "3k"], "PTS block sizes"),
        (&["--size", "8m", "--mixes", "60/40"], "--mixes"),
        (&["--size", "8m", "--bs", "64k"], "must include 4k"),
        (&["--size", "8m", "--max-rounds", "4"], "--max-rounds"),
        (&["--size", "8m", "--fill-factor", "0"], "--fill-factor"),
        (&["--size", "8m", "--point-time", "soon"], "--point-time"),
        (&["--size", "8m", "--qd", "0"], "queue depth"),
        (&["--size", "8m", "--scale", "0.1"], "--scale"),
        (&[], "needs --size"),
    ];
    for (extra, want) in cases {
        let mut args = vec!["suite", "ssd-pts", "t.dat", "--output", "o"];
        args.extend_from_slice(extra);
        let o = sb.cmd(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
        assert!(
            !sb.file("o").exists() && !sb.file("t.dat").exists(),
            "{extra:?}"
        );
    }
    // The study is listed with the suites.
    let o = sb.cmd(&["suite", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("fsbench suite ssd-pts FILE --size SIZE"));
    // The study's flags are refused with the other suites.
    let o = sb
        .cmd(&["suite", "whitepaper", "--dir", ".", "--mixes", "0/100"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("belongs to the ssd-pts suite"));
}
