//! One Result envelope for every kind of run (issue #13): a workload's `--output` document is
//! read by `report` and `compare` like a Job's, documents of another schema version are
//! refused in one line, and every kind carries the same header, status and failures with its
//! per-flowop or per-kind figures as named groups of the one Stats.
mod common;

use common::{words, Sandbox};

/// A small workload: one thread writing and reading one file, and a stat (a metadata flowop).
const WML: &str = "define fileset name=fs,path=$dir,entries=4,size=64k,prealloc
define process name=p { thread name=t {
  flowop openfile name=op,filesetname=fs,fd=1
  flowop write name=wr,fd=1,iosize=4k,random,iters=4
  flowop read name=rd,fd=1,iosize=4k,random,iters=4
  flowop closefile name=cl,fd=1
  flowop statfile name=st,filesetname=fs } }
run 1
";

fn workload_json(sb: &Sandbox, out: &str) {
    std::fs::write(sb.file("w.f"), WML).unwrap();
    sb.cmd(&[
        "workload", "w.f", "--dir", ".", "--time", "0.3s", "--output", out,
    ])
    .assert()
    .success();
}

#[test]
fn workload_output_is_read_by_report_and_compare() {
    let sb = Sandbox::new();
    workload_json(&sb, "wl.json");
    workload_json(&sb, "wl2.json");
    sb.cmd(&words(
        "run --rw randread --bs 4k --size 256k --count 100 f.dat --output a.json",
    ))
    .assert()
    .success();
    for fmt in ["text", "csv", "json", "md"] {
        let o = sb
            .cmd(&["report", "wl.json", "a.json", "--format", fmt])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "report --format {fmt}: {err}");
        assert!(!err.contains("missing field"), "{err}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("w.f"), "{fmt}: the workload is a row: {out}");
    }
    let o = sb
        .cmd(&["compare", "wl.json", "wl2.json"])
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "compare: {err}");
    assert!(
        out.contains("ops/s") && out.contains("after/before"),
        "{out}"
    );
    // An io job and a workload have no point in common: that is said, not a parse error.
    let o = sb.cmd(&["compare", "a.json", "wl.json"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("missing field"), "{err}");
}

#[test]
fn results_of_another_schema_version_are_refused_in_one_line() {
    let sb = Sandbox::new();
    sb.cmd(&words(
        "run --rw randrw --bs 4k --size 1m --count 200 f.dat --name now --output now.json",
    ))
    .assert()
    .success();
    let now: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("now.json")).unwrap()).unwrap();
    assert_eq!(now["schema_version"], 3);
    assert_eq!(now["kind"], "io");
    let o = sb.cmd(&["report", "now.json"]).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for old in [1, 2, 4] {
        let mut v = now.clone();
        v["schema_version"] = old.into();
        let name = format!("v{old}.json");
        std::fs::write(sb.file(&name), serde_json::to_string(&v).unwrap()).unwrap();
        for cmd in [
            vec!["report", name.as_str()],
            vec!["compare", name.as_str(), "now.json"],
        ] {
            let o = sb.cmd(&cmd).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{cmd:?}: {err}");
            assert!(
                err.contains(&format!("schema_version {old} is not supported")),
                "{cmd:?}: {err}"
            );
            assert_eq!(err.trim_end().lines().count(), 1, "{cmd:?}: {err}");
        }
    }
}

#[test]
fn workload_result_is_the_common_envelope_with_flowops_as_groups() {
    let sb = Sandbox::new();
    workload_json(&sb, "wl.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("wl.json")).unwrap()).unwrap();
    for key in [
        "schema_version",
        "fsbench_version",
        "kind",
        "name",
        "started_unix_s",
        "status",
        "failures",
        "notes",
        "environment",
        "total",
        "groups",
        "workload",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["schema_version"], 3);
    assert!(
        v.get("job").is_none(),
        "a workload runs no Job: none is invented"
    );
    let groups = v["groups"].as_array().unwrap();
    let names: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["op", "wr", "rd", "cl", "st"]);
    let g = |n: &str| &groups.iter().find(|g| g["name"] == n).unwrap()["stats"];
    // The I/O flowops count their reads and writes, the others their operations.
    assert_eq!(g("wr")["write_ops"], g("wr")["ops"]);
    assert_eq!(
        g("rd")["read_bytes"].as_u64(),
        g("rd")["read_ops"].as_u64().map(|n| n * 4096)
    );
    assert_eq!(g("st")["other_ops"], g("st")["ops"]);
    assert_eq!(g("op")["lat_ns"]["count"], g("op")["ops"]);
    assert!(g("op")["cpu_sampled_ops"].as_u64().unwrap() > 0);
    // Every flowop here is a file-system operation: the IO Summary (total) is all of them.
    let sum: u64 = groups
        .iter()
        .map(|g| g["stats"]["ops"].as_u64().unwrap())
        .sum();
    assert_eq!(v["total"]["ops"].as_u64(), Some(sum));
    assert_eq!(
        v["workload"]["runs"][0]["summary"]["ops"].as_u64(),
        Some(sum)
    );
    let l = &v["total"]["lat_ns"];
    assert!(l["min"].as_u64() <= l["p50"].as_u64() && l["p99"].as_u64() <= l["max"].as_u64());
    assert!(v["total"]["lat_hist_ns"]
        .as_array()
        .is_some_and(|b| !b.is_empty()));
}

#[test]
fn replay_result_records_what_was_replayed_without_an_invented_job() {
    let sb = Sandbox::new();
    let mut csv = String::from("id,thread,op,file,offset,len,start_ns,end_ns,result\n");
    // Two threads: 3 writes of 4 KiB and one of 64 KiB, 2 reads of 512 bytes, an fsync.
    let calls = [
        (0, "write", 0u64, 4096u64),
        (0, "write", 4096, 4096),
        (1, "write", 8192, 4096),
        (1, "write", 65536, 65536),
        (0, "read", 0, 512),
        (1, "read", 512, 512),
        (0, "fsync", 0, 0),
    ];
    for (i, (th, op, off, len)) in calls.iter().enumerate() {
        csv.push_str(&format!(
            "{i},{th},{op},/db/f,{off},{len},{i}000,{i}500,{len}\n"
        ));
    }
    std::fs::write(sb.file("t.csv"), csv).unwrap();
    let v = sb.run_json(&words("replay t.csv"));
    assert_eq!(v["kind"], "replay");
    assert_eq!(v["schema_version"], 3);
    assert!(
        v.get("job").is_none(),
        "no Job with a median block size is invented"
    );
    let groups = v["groups"].as_array().unwrap();
    let g = |n: &str| &groups.iter().find(|g| g["name"] == n).unwrap()["stats"];
    assert_eq!(g("write")["write_ops"], 4);
    assert_eq!(g("write")["write_bytes"], 3 * 4096 + 65536);
    assert_eq!(g("read")["read_ops"], 2);
    assert_eq!(g("read")["read_bytes"], 1024);
    assert_eq!(g("fsync")["other_ops"], 1);
    assert_eq!(g("fsync")["lat_ns"]["count"], 1);
    assert_eq!(groups.len(), 3, "no fdatasync was replayed");
    let r = &v["replay"];
    assert_eq!(
        (r["calls"].as_u64(), r["threads"].as_u64()),
        (Some(7), Some(2))
    );
    let sizes = &r["io_size_bytes"];
    assert_eq!(
        (
            sizes["count"].as_u64(),
            sizes["min"].as_u64(),
            sizes["max"].as_u64()
        ),
        (Some(6), Some(512), Some(65536))
    );
    // Sizes go into the one histogram: within its 0.4 %.
    let p50 = sizes["p50"].as_u64().unwrap() as f64;
    assert!((p50 - 4096.0).abs() <= 4096.0 / 256.0, "p50 {p50}");
    // The total is the data I/O, as a Job's: the fsync is in its syscalls.
    assert_eq!(v["total"]["ops"], 6);
    assert_eq!(v["total"]["syscalls"]["fsync"], 1);
    assert_eq!(v["users"][0]["threads"].as_array().unwrap().len(), 2);
    // Text shows one line per call kind.
    let o = sb.cmd(&words("replay t.csv")).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("7 calls of t.csv in 2 thread(s)") && text.contains("\nfsync:"),
        "{text}"
    );
}

/// Nearest-rank percentile of sorted samples.
fn exact(sorted: &[u64], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[test]
fn run_percentiles_are_within_the_histogram_error_of_the_exact_ones() {
    // The trace holds every I/O's submission and completion time: the exact latencies.
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run --rw randrw --bs 4k --size 1m --count 3000 --threads 2 f.dat --trace t.csv",
    ));
    let text = std::fs::read_to_string(sb.file("t.csv")).unwrap();
    let mut lat: Vec<u64> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            f[7].parse::<u64>().unwrap() - f[6].parse::<u64>().unwrap()
        })
        .collect();
    lat.sort_unstable();
    let l = &v["total"]["lat_ns"];
    assert_eq!(l["count"].as_u64(), Some(lat.len() as u64));
    for (key, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99_9", 0.999)] {
        let (want, got) = (exact(&lat, q) as f64, l[key].as_u64().unwrap() as f64);
        // 0.4 % of the value, and 1 ns for the trace's own rounding of the two timestamps.
        assert!(
            (got - want).abs() <= want / 256.0 + 1.0,
            "{key}: exact {want} ns, reported {got} ns"
        );
    }
    assert!((l["min"].as_u64().unwrap() as i64 - lat[0] as i64).abs() <= 1);
    assert!((l["max"].as_u64().unwrap() as i64 - *lat.last().unwrap() as i64).abs() <= 1);
    check_stdev_and_p99_99(&lat, l, "total");
    // Each direction's own histogram against that direction's exact latencies.
    for dir in ["read", "write"] {
        let mut mine: Vec<u64> = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect::<Vec<&str>>())
            .filter(|f| f[2] == dir)
            .map(|f| f[7].parse::<u64>().unwrap() - f[6].parse::<u64>().unwrap())
            .collect();
        mine.sort_unstable();
        let d = &v["total"][dir]["lat_ns"];
        assert!(!mine.is_empty(), "{dir}: a randrw run does both");
        assert_eq!(d["count"].as_u64(), Some(mine.len() as u64), "{dir}");
        assert_eq!(v["total"][dir]["ops"].as_u64(), Some(mine.len() as u64));
        for (key, q) in [("p50", 0.5), ("p99", 0.99)] {
            let (want, got) = (exact(&mine, q) as f64, d[key].as_u64().unwrap() as f64);
            assert!(
                (got - want).abs() <= want / 256.0 + 1.0,
                "{dir} {key}: exact {want} ns, reported {got} ns"
            );
        }
        check_stdev_and_p99_99(&mine, d, dir);
    }
}

/// The p99.99 within the histogram's error of the exact one; the stdev (from the buckets)
/// within the root mean square of each value's bucket error (1/256 of it, plus 1 ns for the
/// trace's rounding) of the exact population standard deviation.
fn check_stdev_and_p99_99(sorted: &[u64], l: &serde_json::Value, what: &str) {
    let (want, got) = (
        exact(sorted, 0.9999) as f64,
        l["p99_99"].as_u64().unwrap() as f64,
    );
    assert!(
        (got - want).abs() <= want / 256.0 + 1.0,
        "{what} p99_99: exact {want} ns, reported {got} ns"
    );
    let n = sorted.len() as f64;
    let mean = sorted.iter().map(|&v| v as f64).sum::<f64>() / n;
    let sd = (sorted
        .iter()
        .map(|&v| (v as f64 - mean).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    let rms = (sorted
        .iter()
        .map(|&v| (v as f64 / 256.0 + 1.0).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    let got = l["stdev"].as_f64().unwrap();
    assert!(
        (got - sd).abs() <= rms + 1.0,
        "{what} stdev: exact {sd} ns, reported {got} ns (allowed {rms})"
    );
}

/// Exit code and peak RSS (KiB) of one child (wait4: that child only).
#[allow(clippy::zombie_processes)] // reaped by wait4, which clippy does not see
fn child_maxrss_kb(mut cmd: std::process::Command) -> (i32, i64) {
    use std::process::Stdio;
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: wait4 on our own child fills a zeroed rusage we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert_eq!(rc, child.id() as i32);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, ru.ru_maxrss)
}

#[test]
fn a_thousand_targets_hold_small_histograms() {
    // One 36 KiB histogram per worker instead of a 270 KB HdrHistogram: 1,000 one-thread
    // targets peaked at 295 MB before, about 36 MB now.
    let sb = Sandbox::new();
    let names: Vec<String> = (0..1000).map(|i| format!("f{i}")).collect();
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_fsbench"));
    c.current_dir(sb.path())
        .args(words("run --rw write --bs 4k --count 4 --format json"))
        .args(&names);
    let (code, kb) = child_maxrss_kb(c);
    assert_eq!(code, 0);
    eprintln!("1000 targets: peak RSS {kb} KiB");
    assert!(kb < 100_000, "1000 tiny targets used {kb} KiB");
}
