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
}

/// Reads' and writes' bytes a second over a Result's measured time.
fn dir_rates(r: &Value) -> (f64, f64) {
    let t = &r["total"];
    let secs = t["elapsed_s"].as_f64().unwrap();
    (
        u(&t["read_bytes"]) as f64 / secs,
        u(&t["write_bytes"]) as f64 / secs,
    )
}

/// Within a generous share of what was asked (a busy machine may fall behind, never ahead).
fn near(got: f64, want: f64) -> bool {
    got > want * 0.7 && got < want * 1.1
}

const MIB: f64 = 1048576.0;

#[test]
fn rate_per_direction_paces_reads_and_writes_each_to_their_own() {
    let sb = Sandbox::new();
    // A 50 % mix: one rate for both would give reads and writes alike.
    let rs = fio_results(
        &sb,
        &[
            "--name=mixed",
            "--filename=m.dat",
            "--rw=randrw",
            "--rwmixread=50",
            "--bs=4k",
            "--size=16m",
            "--runtime=2",
            "--time_based",
            "--rate=4m,1m",
        ],
    );
    let (reads, writes) = dir_rates(&rs[0]);
    assert!(near(reads, 4.0 * MIB), "reads {reads}");
    assert!(near(writes, MIB), "writes {writes}");
    let rate = &rs[0]["job"]["rate"];
    assert_eq!(rate["bytes_per_sec"], 4 << 20, "{rate}");
    assert_eq!(rate["directions"][0]["bytes_per_sec"], 1 << 20, "{rate}");
    // I/Os a second, and an empty field: reads unlimited, writes 100 a second. Reads then
    // take every turn writes are ahead, as in fio.
    let rs = fio_results(
        &sb,
        &[
            "--name=iops",
            "--filename=m.dat",
            "--rw=randrw",
            "--bs=4k",
            "--size=4m",
            "--runtime=2",
            "--time_based",
            "--rate_iops=,100",
            "--ioengine=null",
        ],
    );
    let t = &rs[0]["total"];
    let secs = t["elapsed_s"].as_f64().unwrap();
    let (r_ops, w_ops) = (u(&t["read_ops"]) as f64, u(&t["write_ops"]) as f64);
    assert!(near(w_ops / secs, 100.0), "writes {w_ops} in {secs} s");
    assert!(r_ops > 20.0 * w_ops, "reads {r_ops} writes {w_ops}");
    // The same through `fsbench run`'s own flags, with the rates in the text Result.
    let v = sb.run_json(&[
        "run",
        "--rw",
        "randrw",
        "--rwmix-read",
        "50",
        "--bs",
        "4k",
        "--size",
        "16m",
        "--time",
        "2s",
        "--rate-bytes",
        "1m,3m",
        "m.dat",
        "--format",
        "json",
    ]);
    let (reads, writes) = dir_rates(&v);
    assert!(near(reads, MIB), "reads {reads}");
    assert!(near(writes, 3.0 * MIB), "writes {writes}");
    assert_eq!(sb.listing(), Vec::<String>::new());
}

#[test]
fn per_direction_rates_are_refused_where_they_cannot_hold() {
    let sb = Sandbox::new();
    for (args, want) in [
        (
            &[
                "fio",
                "--name=t",
                "--rw=trimwrite",
                "--size=64k",
                "--rate=1m,2m",
            ][..],
            "per-direction rates do not apply to trimwrite",
        ),
        (
            &[
                "fio",
                "--name=t",
                "--rw=write",
                "--size=64k",
                "--rate=1m,2m,3m,4m",
            ][..],
            "expected one rate, or READS,WRITES[,TRIMS]",
        ),
        (
            &[
                "run",
                "--rw",
                "write",
                "--size",
                "64k",
                "--rate-iops",
                "0,5",
                "f",
            ][..],
            "bad rate limit 0",
        ),
        (
            &[
                "run",
                "--rw",
                "write",
                "--size",
                "64k",
                "--rate-bytes",
                "1m,2m",
                "--verify",
                "f",
            ][..],
            "per-direction rates do not apply with --verify",
        ),
        (
            &["workload", "fileserver", "--dir", "d", "--rate-iops", "5,6"][..],
            "a workload or a replay takes one rate",
        ),
    ] {
        let o = sb.cmd(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
    }
    assert_eq!(sb.listing(), Vec::<String>::new());
}

/// fio's reads and writes in bytes for a job file (its one job).
fn fio_bytes(sb: &Sandbox, file: &std::path::Path) -> (u64, u64) {
    let o = std::process::Command::new("fio")
        .arg("--output-format=json")
        .arg(file)
        .env("FIO_DIR", sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let j = &v["jobs"][0];
    (u(&j["read"]["io_bytes"]), u(&j["write"]["io_bytes"]))
}

#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn rate_per_direction_moves_about_the_bytes_fio_moves() {
    let sb = Sandbox::new();
    let text = "[mixed]\ndirectory=${FIO_DIR}\nrw=randrw\nrwmixread=50\nbs=4k\nsize=16m\n\
                runtime=2\ntime_based\nrate=2m,512k\n";
    std::fs::write(sb.file("m.fio"), text).unwrap();
    let theirs = fio_bytes(&sb, &sb.file("m.fio"));
    // fio keeps the file it laid out; fsbench makes its own.
    std::fs::remove_file(sb.file("mixed.0.0")).unwrap();
    let rs = {
        let f = sb.file("m.fio");
        let out = sb
            .cmd(&["fio", f.to_str().unwrap(), "--format", "json"])
            .env("FIO_DIR", sb.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        match v {
            Value::Array(a) => a,
            one => vec![one],
        }
    };
    let t = &rs[0]["total"];
    let ours = (u(&t["read_bytes"]), u(&t["write_bytes"]));
    // Two seconds at 2 MiB/s and 512 KiB/s: about 4 MiB read and 1 MiB written by both.
    for (what, o, f) in [("read", ours.0, theirs.0), ("write", ours.1, theirs.1)] {
        let ratio = o as f64 / f as f64;
        assert!((0.75..1.33).contains(&ratio), "{what}: ours {o}, fio {f}");
    }
    assert!(
        near(theirs.0 as f64 / 2.0, 2.0 * MIB),
        "fio reads {}",
        theirs.0
    );
}

/// The I/O sizes a Result saw: (size, ops) per class.
fn sizes_seen(r: &Value) -> Vec<(u64, u64)> {
    r["total"]["by_size"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|b| (u(&b["block_size_bytes"]), u(&b["ops"])))
                .collect()
        })
        .unwrap_or_default()
}

const SPLIT: &[&str] = &[
    "--name=s",
    "--rw=read",
    "--bssplit=4k/50:6k/50",
    "--size=1m",
    "--filename=s.dat",
];

#[test]
fn bs_unaligned_keeps_bssplit_sizes_that_fio_would_round_down() {
    let sb = Sandbox::new();
    // Without bs_unaligned, fio rounds 6k down to a multiple of the smallest size: every I/O
    // is 4k, 256 of them over 1 MiB (fio's own count).
    let r = &fio_results(&sb, SPLIT)[0];
    assert_eq!(
        (u(&r["total"]["ops"]), u(&r["total"]["bytes"])),
        (256, 1 << 20)
    );
    assert_eq!(sizes_seen(r), vec![(4096, 256)]);
    assert!(r["notes"]
        .to_string()
        .contains("6144-byte I/Os are issued as 4096 bytes"));
    // With it, the 6k I/Os are issued as written, about half of them.
    let mut args = SPLIT.to_vec();
    args.push("--bs_unaligned");
    let r = &fio_results(&sb, &args)[0];
    let seen = sizes_seen(r);
    assert_eq!(
        seen.iter().map(|s| s.0).collect::<Vec<_>>(),
        vec![4096, 6144]
    );
    let six = seen[1].1 as f64 / u(&r["total"]["ops"]) as f64;
    assert!((0.35..0.65).contains(&six), "{seen:?}");
    // A range would take any byte count: refused in one line, with the reason.
    let o = sb
        .cmd(&[
            "fio",
            "--name=r",
            "--rw=read",
            "--bsrange=4k-16k",
            "--bs_unaligned",
            "--size=1m",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(
        e.contains(
            "bs_unaligned with bsrange in [r] is not supported: fio then draws any byte count"
        ),
        "{e}"
    );
    assert_eq!(sb.listing(), Vec::<String>::new());
}

#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn bs_unaligned_issues_the_sizes_fio_issues() {
    let sb = Sandbox::new();
    for unaligned in [false, true] {
        let text = format!(
            "[s]\ndirectory=${{FIO_DIR}}\nrw=read\nbssplit=4k/50:6k/50\nsize=1m\n{}",
            if unaligned { "bs_unaligned\n" } else { "" }
        );
        std::fs::write(sb.file("s.fio"), text).unwrap();
        let (theirs, _) = fio_bytes(&sb, &sb.file("s.fio"));
        std::fs::remove_file(sb.file("s.0.0")).unwrap();
        let f = sb.file("s.fio");
        let out = sb
            .cmd(&["fio", f.to_str().unwrap(), "--format", "json"])
            .env("FIO_DIR", sb.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let r = if v.is_array() { v[0].clone() } else { v };
        let ours = u(&r["total"]["bytes"]);
        if unaligned {
            // 6k I/Os issued by both; a pass counts I/Os of the mean size in fsbench, so the
            // bytes are near fio's, not equal.
            let ratio = ours as f64 / theirs as f64;
            assert!((0.93..1.01).contains(&ratio), "ours {ours}, fio {theirs}");
        } else {
            assert_eq!(ours, theirs);
        }
    }
}

/// fio paces each direction of a mixed job to a single `rate_iops` on its own: with 90 %
/// reads, 100 reads and 100 writes a second, not 100 I/Os of which 10 are writes.
#[test]
fn a_single_rate_paces_each_direction_of_a_mixed_job_as_fio_does() {
    let sb = Sandbox::new();
    let rs = fio_results(
        &sb,
        &[
            "--name=mix",
            "--filename=m.dat",
            "--size=4m",
            "--bs=4k",
            "--rw=randrw",
            "--rwmixread=90",
            "--rate_iops=100",
            "--runtime=2",
            "--time_based",
        ],
    );
    let t = &rs[0]["total"];
    let secs = t["elapsed_s"].as_f64().unwrap();
    let (reads, writes) = (
        u(&t["read_ops"]) as f64 / secs,
        u(&t["write_ops"]) as f64 / secs,
    );
    assert!((70.0..=110.0).contains(&reads), "reads {reads:.1}/s");
    assert!((70.0..=110.0).contains(&writes), "writes {writes:.1}/s");
}
