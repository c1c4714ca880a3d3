//! fio options that vary per job, clone or direction, through `fsbench fio`: a random
//! `startdelay` range, `offset_increment` as a percentage of the file, per-direction rates
//! (`rate=R,W`, `rate_iops=R,W`, also `fsbench run --rate-bytes R,W`) and `bs_unaligned`.

mod common;
use common::{u, Sandbox};
use serde_json::Value;

/// `fsbench fio ARGS --format json`: its Results (one object becomes a list of one).
fn fio_results(sb: &Sandbox, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["fio"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    match sb.run_json(&all) {
        Value::Array(a) => a,
        one => vec![one],
    }
}

fn by_name<'a>(rs: &'a [Value], name: &str) -> &'a Value {
    rs.iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no Result named {name}"))
}

/// The delay a job's Result says was drawn, in seconds.
fn drawn_delay(r: &Value) -> f64 {
    let notes = r["notes"].to_string();
    let at = notes
        .find("startdelay in [")
        .unwrap_or_else(|| panic!("no startdelay note: {notes}"));
    let rest = &notes[at..];
    let secs = rest[rest.find("]: ").unwrap() + 3..]
        .split(' ')
        .next()
        .unwrap();
    secs.parse().unwrap()
}

#[test]
fn a_startdelay_range_draws_a_delay_from_the_seed() {
    let sb = Sandbox::new();
    let job = |seed: &str| {
        fio_results(
            &sb,
            &[
                "--size=64k",
                "--bs=4k",
                "--rw=read",
                "--name=base",
                "--filename=a.dat",
                "--runtime=1500ms",
                "--time_based",
                "--name=late",
                "--filename=b.dat",
                "--startdelay=200ms-800ms",
                seed,
            ],
        )
    };
    let rs = job("--randseed=7");
    let late = by_name(&rs, "late");
    let d = drawn_delay(late);
    assert!((0.2..=0.8).contains(&d), "{d}");
    // Released that long after its group started (the job beside it started at once).
    let start = |r: &Value| r["started_unix_s"].as_f64().unwrap();
    let after = start(late) - start(by_name(&rs, "base"));
    assert!(after >= d - 0.01 && after < d + 0.5, "{after} for {d}");
    // The same seed draws the same delay; another seed another one, in the range too.
    assert_eq!(drawn_delay(by_name(&job("--randseed=7"), "late")), d);
    let other = drawn_delay(by_name(&job("--randseed=8"), "late"));
    assert!((0.2..=0.8).contains(&other) && other != d, "{other} {d}");
    assert_eq!(sb.listing(), Vec::<String>::new());
}

/// Where the bytes a job wrote (not zero) begin and end in a file.
fn written_span(path: &std::path::Path) -> Option<(usize, usize)> {
    let d = std::fs::read(path).unwrap();
    let first = d.iter().position(|&b| b != 0)?;
    let last = d.iter().rposition(|&b| b != 0)?;
    Some((first, last + 1))
}

const PERCENT_INCREMENT: &str = "[j]\ndirectory=${FIO_DIR}\nrw=write\nbs=4k\nsize=8k\nnumjobs=3\n\
                                 offset_increment=10%\nbuffer_pattern=0xab\nunlink=0\n";

#[test]
fn offset_increment_as_a_percentage_moves_each_clone_by_that_share_of_its_file() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("j.fio"), PERCENT_INCREMENT).unwrap();
    for c in 0..3 {
        std::fs::write(sb.file(&format!("j.{c}.0")), vec![0u8; 1 << 20]).unwrap();
    }
    let j = sb.file("j.fio");
    let out = sb
        .cmd(&["fio", j.to_str().unwrap(), "--force", "--format", "json"])
        .env("FIO_DIR", sb.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // 10 % of 1 MiB is 104857.6 bytes: clone i starts at i x 104857 rounded up to 4k, as
    // fio rounds it (clone 1 at 106496, clone 2 at 212992, not 2 x 106496).
    for (c, start) in [(0, 0), (1, 106496), (2, 212992)] {
        assert_eq!(
            written_span(&sb.file(&format!("j.{c}.0"))),
            Some((start, start + 8192)),
            "clone {c}"
        );
    }
    // A file that is not there has no size to take a share of.
    let out = sb
        .cmd(&[
            "fio",
            "--name=n",
            "--size=8k",
            "--numjobs=2",
            "--offset_increment=5%",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("offset_increment=5% in [n] is a share of an existing file"),
        "{e}"
    );
}

#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn offset_increment_percentages_write_where_fio_writes() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("j.fio"), PERCENT_INCREMENT).unwrap();
    for c in 0..3 {
        std::fs::write(sb.file(&format!("j.{c}.0")), vec![0u8; 1 << 20]).unwrap();
    }
    let o = std::process::Command::new("fio")
        .arg("--output=/dev/null")
        .arg(sb.file("j.fio"))
        .env("FIO_DIR", sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    for (c, start) in [(0, 0), (1, 106496), (2, 212992)] {
        assert_eq!(
            written_span(&sb.file(&format!("j.{c}.0"))),
            Some((start, start + 8192)),
            "fio's clone {c}"
        );
    }
    let _ = u;
}
