//! Latency from the intended issue time (under a rate limit) per direction (issue #14: "a
//! latency histogram per direction"): each I/O is recorded once, in its direction, and the
//! total is their exact merge, in JSON, the text report and CSV, through the real binary.
mod common;
use common::{words, Sandbox};

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn a_rate_limited_mixed_run_reports_schedule_latency_per_direction() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run f --rw randrw --bs 4k --size 2m --count 300 --rate-iops 1500",
    ));
    let t = &r["total"];
    let (read, write) = (&t["read"], &t["write"]);
    assert!(u(&read["ops"]) > 0 && u(&write["ops"]) > 0, "{t}");
    // One record per I/O, in its own direction.
    assert_eq!(u(&read["sched_lat_ns"]["count"]), u(&read["ops"]), "{read}");
    assert_eq!(
        u(&write["sched_lat_ns"]["count"]),
        u(&write["ops"]),
        "{write}"
    );
    // The total is their exact merge: count, min, max and mean.
    let (rs, ws, ts) = (
        &read["sched_lat_ns"],
        &write["sched_lat_ns"],
        &t["sched_lat_ns"],
    );
    assert_eq!(u(&ts["count"]), 300);
    assert_eq!(u(&ts["max"]), u(&rs["max"]).max(u(&ws["max"])));
    assert_eq!(u(&ts["min"]), u(&rs["min"]).min(u(&ws["min"])));
    let mean = |s: &serde_json::Value| s["mean"].as_f64().unwrap() * u(&s["count"]) as f64;
    assert!(
        (mean(ts) - mean(rs) - mean(ws)).abs() <= 1e-6 * mean(ts) + 1.0,
        "{ts} {rs} {ws}"
    );
    // Measured from the intended time, it is never below the service latency.
    assert!(u(&rs["min"]) >= u(&read["lat_ns"]["min"]), "{read}");
    // Every level carries it: the user and thread figures.
    let thread = &r["users"][0]["threads"][0]["stats"];
    assert_eq!(
        u(&thread["write"]["sched_lat_ns"]["count"]),
        u(&thread["write"]["ops"])
    );

    // The run's text report has a line per direction beside the total's.
    let text = sb
        .cmd(&words(
            "run f --rw randrw --bs 4k --size 2m --count 300 --rate-iops 1500",
        ))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&text.get_output().stdout).to_string();
    assert!(
        text.contains("latency from the intended issue time (rate"),
        "{text}"
    );
    for dir in ["read", "write"] {
        assert!(
            text.contains(&format!("{dir} latency from the intended issue time: p50 ")),
            "{text}"
        );
    }

    // CSV (`--output-format csv`): the total's and each direction's columns, the total's
    // maximum the larger of the directions' (one record per I/O, merged exactly).
    let csv = sb
        .cmd(&words(
            "run f --rw randrw --bs 4k --size 2m --count 300 --rate-iops 1500 --output-format csv",
        ))
        .assert()
        .success();
    let csv = String::from_utf8_lossy(&csv.get_output().stdout).to_string();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let total: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header.len(), total.len());
    let col = |name: &str| -> u64 {
        let i = header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name}: {header:?}"));
        total[i].parse().unwrap()
    };
    assert!(col("read_sched_lat_p99_ns") > 0 && col("write_sched_lat_p50_ns") > 0);
    assert_eq!(
        col("sched_lat_max_ns"),
        col("read_sched_lat_max_ns").max(col("write_sched_lat_max_ns"))
    );
}

#[test]
fn without_a_rate_limit_the_schedule_latency_is_the_service_latency_per_direction() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words("run f --rw randrw --bs 4k --size 1m --count 200"));
    for dir in ["read", "write"] {
        let d = &r["total"][dir];
        assert_eq!(d["sched_lat_ns"], d["lat_ns"], "{d}");
    }
}
