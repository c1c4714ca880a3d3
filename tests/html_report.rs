//! The HTML report where features meet it: device samples of `--iostat` charted over time,
//! `fsbench advise --format html`, and advise JSON embedded by `fsbench report`. Pages are
//! opened in headless Chromium and the dumped DOM is checked for charts with data points.

mod common;
use common::{cannot, dom_in_chromium, words, Sandbox};

/// The bodies of the charts of one class prefix (e.g. `chart line timeseries`) in a DOM.
fn charts<'a>(dom: &'a str, class: &str) -> Vec<&'a str> {
    dom.split(&format!("<svg class=\"{class}"))
        .skip(1)
        .map(|c| &c[..c.find("</svg>").expect("closed svg")])
        .collect()
}

fn points(chart: &str) -> usize {
    chart.matches("class=\"pt\"").count()
}

/// The series names of a chart's data points (`data-series` of each tooltip element).
fn series_names(chart: &str) -> Vec<String> {
    let mut names: Vec<String> = chart
        .split("data-series=\"")
        .skip(1)
        .map(|p| p[..p.find('"').unwrap()].to_string())
        .collect();
    names.dedup();
    names
}

/// Every chart has points and a legend naming each of its series.
fn check_charts(all: &[&str]) {
    for c in all {
        assert!(
            points(c) > 0,
            "a chart without data points: {}",
            &c[..c.len().min(300)]
        );
        for name in series_names(c) {
            assert!(
                c.contains(&format!(">{name}</text>")) || c.contains(&format!(">{name} (")),
                "{name} is not in the legend"
            );
        }
    }
}

/// A short direct-write run with `--iostat`, its Result kept in run.json.
fn run_with_iostat(sb: &Sandbox) -> serde_json::Value {
    // Direct writes reach the device during the run, so the samples show I/O.
    sb.cmd(&words("run --rw write --bs 256k --size 64m --cache direct --time 1s --iostat 100ms --name iostat-run --output run.json f1"))
    .assert()
    .success();
    serde_json::from_str(&std::fs::read_to_string(sb.file("run.json")).unwrap()).unwrap()
}

#[test]
#[cfg_attr(
    not(all(has_chromium, has_tmp_blockdev, has_tmp_direct_io)),
    ignore = "SKIPPED: needs chromium and a temp dir on a block device that takes O_DIRECT"
)]
fn iostat_samples_are_charted_over_time_per_device() {
    let sb = Sandbox::new();
    let r = run_with_iostat(&sb);
    let samples = r["probes"]["iostat"]["samples"].as_array().unwrap().clone();
    assert!(
        samples.len() >= 5,
        "{} samples in 1 s at 100 ms",
        samples.len()
    );
    let mut busy_devices: Vec<String> = samples
        .iter()
        .filter(|s| s["writes_per_sec"].as_f64().unwrap() > 0.0)
        .map(|s| s["device"].as_str().unwrap().to_string())
        .collect();
    busy_devices.sort();
    busy_devices.dedup();
    if busy_devices.is_empty() {
        cannot("no block device under the sandbox saw writes: nothing to chart");
    }
    sb.cmd(&words("report run.json --format html --output r.html"))
        .assert()
        .success();
    let html = std::fs::read_to_string(sb.file("r.html")).unwrap();
    assert!(html.contains("Device statistics during the runs"));
    assert!(html.contains("Extents of the files the run wrote"));
    let dom = dom_in_chromium(&sb.file("r.html"));
    let ts = charts(&dom, "chart line timeseries");
    // Throughput, requests, time per I/O, %busy, queue length per device that did I/O.
    assert!(
        ts.len() >= 5 * busy_devices.len(),
        "{} time-series charts for {busy_devices:?}",
        ts.len()
    );
    check_charts(&ts);
    for dev in &busy_devices {
        let n = samples
            .iter()
            .filter(|s| s["device"] == dev.as_str())
            .count();
        let thr = ts
            .iter()
            .find(|c| c.contains(&format!("{dev}: throughput")))
            .unwrap_or_else(|| panic!("no throughput chart for {dev}"));
        // Two lines (read, write), one point per sample each.
        assert_eq!(points(thr), 2 * n, "{dev}");
        assert!(
            [">B/s<", ">KiB/s<", ">MiB/s<", ">GiB/s<"]
                .iter()
                .any(|u| thr.contains(u))
                && thr.contains("time from the start of the timed run, s")
        );
        let util = ts
            .iter()
            .find(|c| c.contains(&format!("{dev}: utilisation")))
            .unwrap();
        assert!(util.contains(">100</text>"), "%busy axis tops at 100");
    }
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "SKIPPED: needs chromium to render the report"
)]
fn sweep_report_charts_the_samples_of_each_point() {
    let sb = Sandbox::new();
    sb.cmd(&words("sweep --rw write --bs 64k,1m --cache direct --size 32m --time 1s --iostat 200ms --output sw f"))
    .assert()
    .success();
    let html = std::fs::read_to_string(sb.file("sw/report.html")).unwrap();
    // One block per point.
    assert_eq!(
        html.matches("<details class=\"observe\"").count(),
        2,
        "{html}"
    );
    assert!(html.contains("bs=64k") && html.contains("bs=1m"));
    let dom = dom_in_chromium(&sb.file("sw/report.html"));
    let ts = charts(&dom, "chart line timeseries");
    assert!(ts.len() >= 10, "{} time-series charts", ts.len());
    check_charts(&ts);
    sb.cmd(&words("sweep --bs 4k,8k --iostat soon f"))
        .assert()
        .code(2);
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "SKIPPED: needs chromium to render the report"
)]
fn advise_page_and_advise_section_of_a_report_render() {
    let sb = Sandbox::new();
    let dir = sb.path().to_str().unwrap().to_string();
    let measure = [
        "--measure",
        "--measure-size",
        "64m",
        "--measure-time",
        "3s",
        "--measure-repeat",
        "1",
    ];
    let mut args = vec!["advise", dir.as_str()];
    args.extend(measure);
    args.extend(["--format", "html", "--output", "advise.html"]);
    sb.cmd(&args).assert().success();
    let mut args = vec!["advise", dir.as_str()];
    args.extend(measure);
    args.extend(["--format", "json", "--output", "a.json"]);
    sb.cmd(&args).assert().success();
    assert!(
        !sb.file(".fsbench-advise.tmp").exists(),
        "scratch file removed"
    );
    let a: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("a.json")).unwrap()).unwrap();
    assert_eq!(a["kind"], "advise");
    assert_eq!(a["schema_version"], 1);
    let page = std::fs::read_to_string(sb.file("advise.html")).unwrap();
    for s in [
        "Topology",
        "File system I/O parameters",
        "Checks",
        "read_pref_io",
    ] {
        assert!(page.contains(s), "{s}");
    }
    run_with_iostat(&sb);
    sb.cmd(&words(
        "report a.json run.json --format html --output both.html",
    ))
    .assert()
    .success();
    let both = std::fs::read_to_string(sb.file("both.html")).unwrap();
    assert!(both.contains(&format!("Tuning advice for {dir}")));
    assert!(both.contains("Runs") && both.contains("iostat-run"));
    // The text report carries the advice too; CSV cannot and says so.
    let text = sb
        .cmd(&["report", "a.json", "run.json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8_lossy(&text).contains("Filesystem i/o parameters"));
    sb.cmd(&words("report a.json --format csv"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("advise documents"));
    std::fs::write(
        sb.file("bad.json"),
        r#"{"kind": "advise", "schema_version": 7}"#,
    )
    .unwrap();
    sb.cmd(&words("report bad.json --format html"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("schema_version 7"));
    for (file, min_charts) in [("advise.html", 3), ("both.html", 3)] {
        let dom = dom_in_chromium(&sb.file(file));
        // Throughput by size for reads and for writes, and by streams.
        let line = charts(&dom, "chart line\"");
        assert_eq!(line.len(), min_charts, "{file}");
        check_charts(&line);
        let by_size: Vec<&&str> = line
            .iter()
            .filter(|c| c.contains("throughput by I/O size"))
            .collect();
        assert_eq!(by_size.len(), 2, "reads and writes");
        for c in by_size {
            assert!(c.contains(">buffered</text>") && c.contains(">direct</text>"));
            // 6 sizes (4k..4m) buffered and direct.
            assert_eq!(points(c), 12, "{file}");
        }
        let streams = line
            .iter()
            .find(|c| c.contains("by concurrent streams"))
            .expect("streams chart");
        assert!(points(streams) >= 2);
        assert!(dom.contains("command to change it"));
    }
}

#[test]
#[cfg_attr(
    not(all(has_chromium, has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs chromium, root, loop devices and mkfs.ext4"
)]
fn loop_device_under_the_target_gets_its_own_charts() {
    let sb = Sandbox::new();
    let Some(fs) = common::MountedFs::new(sb.path(), "ext4", 96) else {
        cannot("could not make and mount ext4 on a loop device");
    };
    let lo = fs.lo.dev.file_name().unwrap().to_string_lossy().to_string();
    let target = fs.mnt.path().join("f1");
    sb.cmd(&[
        "run",
        "--rw",
        "write",
        "--bs",
        "256k",
        "--size",
        "32m",
        "--cache",
        "direct",
        "--time",
        "1s",
        "--iostat",
        "100ms",
        "--output",
        "run.json",
        target.to_str().unwrap(),
    ])
    .assert()
    .success();
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("run.json")).unwrap()).unwrap();
    let devices = r["probes"]["iostat"]["devices"].as_array().unwrap();
    assert_eq!(
        devices[0],
        lo.as_str(),
        "the loop device first: {devices:?}"
    );
    assert!(devices.len() >= 2, "and the device of its backing file");
    sb.cmd(&words("report run.json --format html --output r.html"))
        .assert()
        .success();
    let html = std::fs::read_to_string(sb.file("r.html")).unwrap();
    assert!(html.contains(&format!("{lo}: throughput")), "{lo} charted");
    let dom = dom_in_chromium(&sb.file("r.html"));
    let ts = charts(&dom, "chart line timeseries");
    check_charts(&ts);
    let thr = ts
        .iter()
        .find(|c| c.contains(&format!("{lo}: throughput")))
        .unwrap();
    let n = r["probes"]["iostat"]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["device"] == lo.as_str())
        .count();
    assert_eq!(points(thr), 2 * n);
}

/// The text of every `<text>` of a chart.
fn texts(chart: &str) -> Vec<String> {
    chart
        .split("<text")
        .skip(1)
        .map(|p| p[p.find('>').unwrap() + 1..p.find("</text>").unwrap()].to_string())
        .collect()
}

/// Every category of a bar chart (the part of a bar's tooltip before " = ", after the series
/// name) is drawn whole in one `<text>` of the chart, never split over lines.
fn assert_labels_whole(chart: &str) {
    let shown = texts(chart);
    for tip in chart.split("<title>").skip(1) {
        let tip = &tip[..tip.find("</title>").unwrap()];
        let Some((head, _)) = tip.split_once(" = ") else {
            continue;
        };
        let Some((_, label)) = head.split_once(": ") else {
            continue;
        };
        assert!(
            shown.iter().any(|t| t == label),
            "{label} is not drawn whole: {shown:?}"
        );
    }
}

#[test]
#[cfg_attr(not(has_chromium), ignore = "SKIPPED: needs chromium")]
fn a_rate_limit_sweep_charts_latency_against_throughput() {
    let sb = Sandbox::new();
    sb.cmd(&words(
        "sweep --rw randread --bs 4k --size 4m --time 0.5s --axis rate_iops=50,200 --output rate f",
    ))
    .assert()
    .success();
    let dom = dom_in_chromium(&sb.file("rate/report.html"));
    // Latency against throughput, each point labelled with its rate limit.
    let lt = charts(&dom, "chart latency-throughput");
    assert_eq!(lt.len(), 1);
    check_charts(&lt);
    assert_eq!(points(lt[0]), 4);
    for q in ["50 I/O/s", "200 I/O/s"] {
        assert!(lt[0].contains(&format!(">{q}</text>")), "no {q} label");
    }
    // Throughput along x in one binary unit, latency up y in one time unit.
    let ticks = texts(lt[0]);
    assert!(ticks
        .iter()
        .any(|t| t.ends_with("iB/s") || t.ends_with(" B/s")));
    assert!(ticks
        .iter()
        .any(|t| t.ends_with(" µs") || t.ends_with(" ms") || t.ends_with(" ns")));
    assert!(lt[0].contains("each point is one I/O rate limit"));
}

#[test]
#[cfg_attr(
    not(all(has_chromium, has_uring)),
    ignore = "SKIPPED: needs chromium and io_uring"
)]
fn a_queue_depth_sweep_with_repeats_charts_latency_and_error_bars() {
    let sb = Sandbox::new();
    sb.cmd(&words(
        "sweep --rw randread --bs 4k --engine uring --qd 1,4,16 --size 4m --time 0.3s --repeat 2 --output qd f",
    ))
    .assert()
    .success();
    let dom = dom_in_chromium(&sb.file("qd/report.html"));
    // The fixed parameters of the study: what no point varies.
    let fixed = &dom[dom
        .find("<p class=\"fixed\">")
        .expect("a fixed-parameters block")..];
    let fixed = &fixed[..fixed.find("</p>").unwrap()];
    for p in ["randread", "4k", "engine = uring", "cache = buffered"] {
        assert!(fixed.contains(p), "{p} missing from {fixed}");
    }
    assert!(
        !fixed.contains("queue depth"),
        "the swept axis is not fixed: {fixed}"
    );
    // One percentile chart with a line per point, p50 .. p99.99 along x.
    let pc = charts(&dom, "chart percentiles");
    assert_eq!(pc.len(), 1);
    check_charts(&pc);
    assert_eq!(series_names(pc[0]).len(), 3);
    assert_eq!(points(pc[0]), 3 * 9);
    for t in ["p50", "p90", "p99", "p99.9", "p99.99"] {
        assert!(pc[0].contains(&format!(">{t}</text>")), "no {t} tick");
    }
    // Latency against throughput: mean and p99 lines, each point labelled with its qd.
    let lt = charts(&dom, "chart latency-throughput");
    assert_eq!(lt.len(), 1);
    check_charts(&lt);
    assert_eq!(points(lt[0]), 6);
    for q in ["qd 1", "qd 4", "qd 16"] {
        assert!(lt[0].contains(&format!(">{q}</text>")), "no {q} label");
    }
    assert!(lt[0].contains(">throughput</text>") && lt[0].contains(">latency</text>"));
    // Every metric chart of repeated points has an error bar per point, and says what.
    let lines = charts(&dom, "chart line");
    assert!(!lines.is_empty());
    for c in &lines {
        assert_eq!(c.matches("data-lo=").count(), 3, "{c}");
        assert!(c.contains("error bars: min..max over the repetitions"));
    }
    // The latency histogram of the three points, one line each.
    let h = charts(&dom, "chart histogram");
    assert_eq!(h.len(), 1);
    check_charts(&h);
    assert_eq!(series_names(h[0]).len(), 3);
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "SKIPPED: needs chromium to render the report"
)]
fn a_baseline_report_keeps_labels_whole_and_the_axis_above_minus_100() {
    let sb = Sandbox::new();
    for d in [
        "first-target-with-a-long-name",
        "second-target-with-a-long-name",
    ] {
        std::fs::create_dir(sb.file(d)).unwrap();
    }
    sb.cmd(&words(
        "suite whitepaper --study read-by-size --scale 0.02 --dir first-target-with-a-long-name --dir second-target-with-a-long-name --baseline first-target-with-a-long-name --output s",
    ))
    .assert()
    .success();
    let dom = dom_in_chromium(&sb.file("s/report.html"));
    let norm = charts(&dom, "chart normalised");
    assert!(!norm.is_empty(), "no normalised chart");
    for c in &norm {
        for t in texts(c) {
            if let Some(v) = t.strip_suffix(" %").and_then(|v| v.parse::<f64>().ok()) {
                assert!(v >= -100.0, "a tick at {v}%");
            }
        }
    }
    // Category labels (bars and normalised rows) are drawn whole.
    let categorical = [charts(&dom, "chart bars"), norm.clone()].concat();
    for c in categorical {
        assert_labels_whole(c);
    }
    for c in charts(&dom, "chart") {
        assert!(!c.contains('…'), "a label was cut: {c}");
    }
    assert!(dom.contains("<p class=\"fixed\">"), "no fixed parameters");
}

#[test]
#[cfg_attr(
    not(all(has_chromium, has_uring)),
    ignore = "SKIPPED: needs chromium and io_uring"
)]
fn one_run_gets_its_time_series_and_histogram_and_a_qd_threads_sweep_its_heatmap() {
    let sb = Sandbox::new();
    sb.cmd(&words(
        "run --rw randread --bs 4k --size 4m --time 0.6s --status-interval 100ms --output run.json f",
    ))
    .assert()
    .success();
    sb.cmd(&words("report run.json --format html --output r.html"))
        .assert()
        .success();
    let dom = dom_in_chromium(&sb.file("r.html"));
    // One point: no chart of a metric against an axis (the table says it).
    assert!(
        charts(&dom, "chart line\"").is_empty(),
        "a one-point line chart"
    );
    assert!(
        charts(&dom, "chart bars").is_empty(),
        "a one-point bar chart"
    );
    // IOPS and latency over time on two y axes, every interval a point.
    let dual = charts(&dom, "chart line timeseries dual");
    assert_eq!(dual.len(), 1);
    check_charts(&dual);
    assert!(dual[0].contains(">p99 latency (right axis)</text>"));
    assert!(dual[0].contains(">operations per second</text>"));
    assert!(dual[0].contains(">latency, µs</text>"));
    // The latency histogram of the one point: bars whose shares add up to all I/Os.
    let h = charts(&dom, "chart histogram");
    assert_eq!(h.len(), 1);
    let shares: f64 = h[0]
        .split("<rect class=\"bar\"")
        .skip(1)
        .map(|b| {
            let v = &b[b.find("data-v=\"").unwrap() + 8..];
            v[..v.find('"').unwrap()].parse::<f64>().unwrap()
        })
        .sum();
    assert!((shares - 100.0).abs() < 0.01, "shares add up to {shares} %");

    sb.cmd(&words(
        "sweep --rw randread --bs 4k --engine uring --qd 1,8 --threads 1,2 --size 4m --time 0.2s --output g f",
    ))
    .assert()
    .success();
    let dom = dom_in_chromium(&sb.file("g/report.html"));
    let hm = charts(&dom, "chart heatmap");
    assert_eq!(hm.len(), 1, "one queue depth x threads heatmap");
    assert_eq!(hm[0].matches("class=\"cell\"").count(), 4);
    assert!(hm[0].contains(">queue depth</text>") && hm[0].contains(">threads</text>"));
}
