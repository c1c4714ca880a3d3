//! fio's think time and percentile list through the real binary: `--think DUR[:BLOCKS]`
//! pauses each thread between I/Os without touching their latencies, in the depth-1 loop
//! and in the queue-depth loop; `--percentiles` chooses which latency percentiles the JSON
//! and the text report show.

mod common;
use common::{words, Sandbox};
use std::time::Instant;

/// One line on stderr and exit 2.
fn refused(sb: &Sandbox, line: &str) -> String {
    let o = sb.cmd(&words(line)).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{line}");
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(err.trim().lines().count(), 1, "{line}: {err}");
    err
}

/// The run time holds every pause; the latencies hold none of them.
fn check_think(sb: &Sandbox, extra: &str) {
    let t = Instant::now();
    let v = sb.run_json(&words(&format!(
        "run --rw read --bs 4k --size 1m --count 50 --think 10ms {extra} f"
    )));
    let wall = t.elapsed().as_secs_f64();
    assert_eq!(v["status"], "complete", "{extra}");
    assert_eq!(v["total"]["read_ops"], 50, "{extra}");
    let e = v["total"]["elapsed_s"].as_f64().unwrap();
    assert!(
        wall >= 0.5 && e >= 0.49,
        "{extra}: 50 pauses of 10 ms in {e} s ({wall} s wall)"
    );
    let p99 = v["total"]["lat_ns"]["p99"].as_u64().unwrap();
    assert!(p99 < 5_000_000, "{extra}: p99 {p99} ns holds a pause");
    assert_eq!(v["job"]["think"], "10ms", "{extra}");
}

#[test]
fn think_time_pauses_between_ios_outside_their_latency() {
    let sb = Sandbox::new();
    // The depth-1 loop, and the queue-depth loop (a rate limit takes that one).
    check_think(&sb, "");
    check_think(&sb, "--rate-iops 100000");
    // Queue depth 4 (the null engine): the queue drains, then the thread pauses; 10 pauses
    // of 10 ms for 40 I/Os, none of them in a latency.
    let v = sb.run_json(&words(
        "run --engine null --qd 4 --rw randread --bs 4k --size 1m --count 40 --think 10ms:4 f",
    ));
    assert_eq!(v["total"]["read_ops"], 40);
    let e = v["total"]["elapsed_s"].as_f64().unwrap();
    assert!(e >= 0.099, "10 pauses of 10 ms at queue depth 4 took {e} s");
    let max = v["total"]["lat_ns"]["max"].as_u64().unwrap();
    assert!(max < 5_000_000, "max latency {max} ns holds a pause");
    // :BLOCKS divides the pauses: 2 of them for 50 I/Os.
    let v = sb.run_json(&words(
        "run --rw read --bs 4k --size 1m --count 50 --think 10ms:25 f",
    ));
    let e = v["total"]["elapsed_s"].as_f64().unwrap();
    assert!((0.019..0.4).contains(&e), "2 pauses of 10 ms took {e} s");
    for bad in ["0", "10ms:0", "soon", "2m", "10ms:x"] {
        let err = refused(
            &sb,
            &format!("run --rw read --size 1m --count 5 --think {bad} f"),
        );
        assert!(err.contains("--think"), "{err}");
    }
}

#[test]
fn think_time_comes_from_a_job_file() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("j.toml"),
        "access = \"read\"\nblock_size = 4096\nfile_size = 1048576\nio_count = 20\nthink = \"20ms:2\"\n",
    )
    .unwrap();
    let f = sb.file("f");
    let v = sb.run_json(&["run", "j.toml", f.to_str().unwrap()]);
    let e = v["total"]["elapsed_s"].as_f64().unwrap();
    assert!(e >= 0.19, "10 pauses of 20 ms took {e} s");
}

#[test]
fn the_percentiles_asked_are_the_ones_reported() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run --rw randrw --bs 4k --size 1m --count 400 --percentiles 50,90,99,99.9,99.99,99.999 f",
    ));
    for part in [&v["total"], &v["total"]["read"], &v["total"]["write"]] {
        let p = part["lat_percentiles_ns"]
            .as_object()
            .expect("lat_percentiles_ns");
        let keys: Vec<&str> = p.keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["p50", "p90", "p99", "p99_9", "p99_99", "p99_999"]);
        let vals: Vec<u64> = p.values().map(|x| x.as_u64().unwrap()).collect();
        assert!(vals.windows(2).all(|w| w[0] <= w[1]), "{vals:?}");
        let lat = &part["lat_ns"];
        assert!(vals[0] >= lat["min"].as_u64().unwrap() && vals[5] <= lat["max"].as_u64().unwrap());
        let p50 = lat["p50"].as_u64().unwrap() as f64;
        assert!(
            (vals[0] as f64 - p50).abs() <= p50 * 0.01 + 1.0,
            "{} vs {p50}",
            vals[0]
        );
    }
    let text = sb
        .cmd(&words(
            "run --rw read --bs 4k --size 1m --count 100 --percentiles 25,99.999 f",
        ))
        .output()
        .unwrap();
    assert!(text.status.success());
    let out = String::from_utf8_lossy(&text.stdout);
    let lat = out.lines().find(|l| l.starts_with("latency:")).expect(&out);
    assert!(lat.contains("p25 ") && lat.contains("p99.999 "), "{lat}");
    assert!(!lat.contains("p90 "), "{lat}");
    // Without the flag: today's list in the text, no lat_percentiles_ns in the JSON.
    let v = sb.run_json(&words("run --rw read --bs 4k --size 1m --count 10 f"));
    assert!(v["total"].get("lat_percentiles_ns").is_none());
    for bad in [
        "0",
        "100",
        "50,50",
        "x",
        "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
    ] {
        let err = refused(
            &sb,
            &format!("run --rw read --size 1m --count 5 --percentiles {bad} f"),
        );
        assert!(err.contains("--percentiles"), "{err}");
    }
}

/// `--interval-print`: a line on stderr per interval while the run goes.
#[test]
fn every_interval_is_printed_while_the_run_goes() {
    let sb = Sandbox::new();
    let o = sb
        .cmd(&words(
            "run --rw randread --bs 4k --size 4m --time 1.2s --status-interval 300ms --interval-print f",
        ))
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("interval ")).collect();
    assert!((3..=5).contains(&lines.len()), "{err}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("read ") && l.contains("IOPS")),
        "{err}"
    );
    // The rate of an interval is the run's own: not zero for a read that ran throughout.
    assert!(!lines[1].contains("read 0 IOPS"), "{err}");
    let e = refused(&sb, "run --rw read --size 1m --count 5 --interval-print f");
    assert!(e.contains("--status-interval"), "{e}");
}

/// `--log DIR`: bw.csv, iops.csv and lat.csv, one row per interval per thread and one for
/// the total, units in the header; an existing log is kept unless --force.
#[test]
fn interval_logs_are_written_per_thread_and_total() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run --rw randrw --bs 4k --size 4m --threads 2 --time 1s --status-interval 250ms --log logs f",
    ));
    let intervals = v["timeseries"].as_array().unwrap();
    let dir = sb.file("logs");
    let read = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap();
    let iops = read("iops.csv");
    let mut rows = iops.lines();
    assert_eq!(
        rows.next(),
        Some("t_s,interval_s,thread,read_iops,write_iops,iops")
    );
    let rows: Vec<Vec<&str>> = rows.map(|l| l.split(',').collect()).collect();
    let totals: Vec<&Vec<&str>> = rows.iter().filter(|r| r[2] == "total").collect();
    assert_eq!(totals.len(), intervals.len());
    for t in ["u0.t0", "u0.t1"] {
        assert!(rows.iter().any(|r| r[2] == t), "{iops}");
    }
    // The total row is the Result's interval, and the threads' rows add up to it.
    let first_t = totals[0][0];
    let want = intervals[0]["iops"].as_f64().unwrap();
    let got: f64 = totals[0][5].parse().unwrap();
    assert!((got - want).abs() <= 0.1, "{got} vs {want}");
    let sum: f64 = rows
        .iter()
        .filter(|r| r[0] == first_t && r[2] != "total")
        .map(|r| r[5].parse::<f64>().unwrap())
        .sum();
    assert!((sum - want).abs() <= want * 0.01 + 1.0, "{sum} vs {want}");
    assert!(read("bw.csv").starts_with("t_s,interval_s,thread,read_bytes_per_sec,"));
    let lat = read("lat.csv");
    assert!(
        lat.starts_with("t_s,interval_s,thread,count,min_ns,mean_ns,p50_ns,"),
        "{lat}"
    );
    assert_eq!(lat.lines().count(), iops.lines().count());
    // A second run into the same logs is refused, then allowed with --force.
    let again = "run --rw read --bs 4k --size 4m --time 0.3s --status-interval 100ms --log logs f";
    let e = refused(&sb, again);
    assert!(e.contains("--force"), "{e}");
    assert_eq!(
        read("iops.csv"),
        iops,
        "the refused run left the logs alone"
    );
    let mut forced = words(again);
    forced.push("--force");
    sb.cmd(&forced).assert().success();
    assert_ne!(read("iops.csv"), iops);
    let e = refused(&sb, "run --rw read --size 1m --count 5 --log l2 f");
    assert!(e.contains("--status-interval"), "{e}");
    assert!(!sb.file("l2").exists());
}
