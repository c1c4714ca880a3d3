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

    // CSV (`--format csv`): the total's and each direction's columns, the total's
    // maximum the larger of the directions' (one record per I/O, merged exactly).
    let csv = sb
        .cmd(&words(
            "run f --rw randrw --bs 4k --size 2m --count 300 --rate-iops 1500 --format csv",
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

/// Under a rate the run cannot keep up with (one I/O every 100 ns), every I/O is issued later
/// than intended and the lag accumulates: the schedule latency of the last I/O includes the
/// service time of every I/O before it. Measured from the intended time on an absolute
/// schedule, its maximum is at least the sum of the service latencies less the schedule's
/// span, and the median I/O waited far longer than one I/O takes. A schedule latency copied
/// from the service latency, or a schedule that restarts from "now" when it falls behind
/// (hiding the wait), fails both.
#[test]
fn a_rate_the_run_cannot_keep_up_with_shows_as_schedule_latency_above_service_latency() {
    let sb = Sandbox::new();
    let (count, rate) = (2000u64, 10_000_000u64);
    let r = sb.run_json(&words(&format!(
        "run f --rw randwrite --bs 4k --size 2m --count {count} --rate-iops {rate}"
    )));
    let w = &r["total"]["write"];
    let (sched, service) = (&w["sched_lat_ns"], &w["lat_ns"]);
    assert_eq!(u(&sched["count"]), count, "{w}");
    assert_eq!(u(&service["count"]), count, "{w}");
    let service_sum = service["mean"].as_f64().unwrap() * count as f64;
    let span = (count - 1) as f64 * 1e9 / rate as f64;
    assert!(
        u(&sched["max"]) as f64 >= 0.99 * service_sum - span,
        "the last I/O waited for every one before it: sum of service {service_sum} ns, \
         schedule {sched}, service {service}"
    );
    assert!(
        u(&sched["p50"]) >= 10 * u(&service["p50"]).max(1),
        "the median I/O waited behind half the run: schedule {sched}, service {service}"
    );
    assert!(
        u(&sched["p99"]) > u(&service["p99"]),
        "schedule {sched}, service {service}"
    );
}

/// Without a rate there is no intended time: the text report has no such line.
#[test]
fn without_a_rate_limit_no_schedule_latency_is_reported_as_such() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&words("run f --rw randrw --bs 4k --size 1m --count 200"))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("latency"), "{text}");
    assert!(!text.contains("intended issue time"), "{text}");
}
