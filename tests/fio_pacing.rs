//! fio's options on how a job is paced, watched and recorded, through `fsbench fio`:
//! `thinktime` (with `thinktime_blocks`, `thinktime_spin`) lowers the IOPS by its pauses;
//! `steadystate` with `ss_dur` ends a timed job once it settles; `percentile_list` chooses
//! the Result's latency percentiles; `write_bw_log`/`write_iops_log`/`write_lat_log` with
//! `log_avg_msec` write fsbench's CSV logs; `random_generator=lfsr` keeps every block once
//! per pass; io_uring's batching options are noted or refused. Each refusal is one line.

mod common;
use common::Sandbox;
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

fn one(sb: &Sandbox, args: &[&str]) -> Value {
    let mut rs = fio_results(sb, args);
    assert_eq!(rs.len(), 1);
    rs.remove(0)
}

/// Run expecting a refusal: exit 2, one line on stderr, returned.
fn refused(sb: &Sandbox, args: &[&str]) -> String {
    let mut all = vec!["fio"];
    all.extend_from_slice(args);
    let o = sb.cmd(&all).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn notes(r: &Value) -> String {
    r["notes"].to_string()
}

fn f64_of(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A null-engine job of 200 random reads (no file is touched).
const NULL_JOB: [&str; 5] = [
    "--name=t",
    "--ioengine=null",
    "--rw=randread",
    "--size=1g",
    "--number_ios=200",
];

#[test]
fn thinktime_lowers_the_iops_by_its_pauses() {
    let sb = Sandbox::new();
    let run = |extra: &[&str]| {
        let mut a = NULL_JOB.to_vec();
        a.extend_from_slice(extra);
        one(&sb, &a)
    };
    // Without think time: far above 1000 IOPS.
    let free = run(&[]);
    assert!(
        f64_of(&free["total"]["iops"]) > 5000.0,
        "{}",
        free["total"]["iops"]
    );
    // 2000 (microseconds, fio's bare unit) after every I/O: 200 pauses of 2 ms, at most
    // 500 IOPS, and no pause in any latency.
    let r = run(&["--thinktime=2000"]);
    assert_eq!(r["job"]["think"], "2ms");
    assert_eq!(r["total"]["ops"], 200);
    let e = f64_of(&r["total"]["elapsed_s"]);
    assert!((0.39..1.5).contains(&e), "200 pauses of 2 ms took {e} s");
    let iops = f64_of(&r["total"]["iops"]);
    assert!((130.0..=510.0).contains(&iops), "{iops}");
    assert!(r["total"]["lat_ns"]["max"].as_u64().unwrap() < 1_500_000);
    // Every 4 I/Os: a quarter of the pauses.
    let r = run(&["--thinktime=2ms", "--thinktime_blocks=4"]);
    assert_eq!(r["job"]["think"], "2ms:4");
    let e = f64_of(&r["total"]["elapsed_s"]);
    assert!((0.099..0.45).contains(&e), "50 pauses of 2 ms took {e} s");
    // A spin longer than the think time sets the pause, as in fio; a note says how.
    let r = run(&[
        "--thinktime=1ms",
        "--thinktime_spin=3ms",
        "--thinktime_blocks=10",
    ]);
    assert_eq!(r["job"]["think"], "3ms:10");
    assert!(notes(&r).contains("thinktime_spin=3000us"), "{}", notes(&r));
    let e = f64_of(&r["total"]["elapsed_s"]);
    assert!((0.059..0.4).contains(&e), "20 pauses of 3 ms took {e} s");
    let e = refused(
        &sb,
        &[
            "--name=t",
            "--size=1m",
            "--thinktime=1ms",
            "--thinktime_iotime=1s",
        ],
    );
    assert!(
        e.contains("'thinktime_iotime' in [t]") && e.contains("count of I/Os"),
        "{e}"
    );
    let e = refused(&sb, &["--name=t", "--size=1m", "--thinktime=2m"]);
    assert!(e.contains("thinktime in [t]"), "{e}");
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

#[test]
fn steady_state_ends_a_timed_job_once_it_settles() {
    let sb = Sandbox::new();
    let t = std::time::Instant::now();
    // A paced job settles at once: 3 samples within 20 % end it long before its 30 s.
    let r = one(
        &sb,
        &[
            "--name=ss",
            "--ioengine=null",
            "--rw=randread",
            "--size=1g",
            "--rate_iops=2000",
            "--runtime=30",
            "--time_based",
            "--ss=iops:20%",
            "--ss_dur=3",
        ],
    );
    assert!(t.elapsed().as_secs_f64() < 15.0);
    assert_eq!(r["job"]["steady_state"], "iops:20%:3s");
    let s = &r["steady"];
    assert_eq!(s["reached"], true, "{s}");
    assert_eq!(s["window_s"], 3);
    assert!(f64_of(&s["at_s"]) < 10.0, "{s}");
    let iops = f64_of(&r["total"]["iops"]);
    assert!((1500.0..2200.0).contains(&iops), "{iops}");
    assert!(
        notes(&r).contains("settles no earlier than fio"),
        "{}",
        notes(&r)
    );
    // Without a window fio judges nothing, nor does fsbench: the job runs its runtime.
    let r = one(
        &sb,
        &[
            "--name=ss",
            "--ioengine=null",
            "--rw=randread",
            "--size=1g",
            "--runtime=300ms",
            "--time_based",
            "--ss=iops_slope:1%",
        ],
    );
    assert!(
        r.get("steady").is_none_or(Value::is_null),
        "{}",
        r["steady"]
    );
    assert!(notes(&r).contains("no effect without steadystate_duration"));
    for (args, want) in [
        (
            vec!["--runtime=10", "--ss=iops:300", "--ss_dur=5"],
            "absolute limit",
        ),
        (
            vec!["--runtime=10", "--ss=clat:1%", "--ss_dur=5"],
            "bad ss=clat:1% in [ss]",
        ),
        (vec!["--ss=bw:1%", "--ss_dur=5"], "give runtime="),
        (vec!["--runtime=10", "--ss=bw:1%", "--ss_dur=1"], "from 2 s"),
    ] {
        let mut a = vec!["--name=ss", "--ioengine=null", "--size=1g"];
        a.extend(args);
        let e = refused(&sb, &a);
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn percentile_list_chooses_the_results_percentiles() {
    let sb = Sandbox::new();
    let mut a = NULL_JOB.to_vec();
    a.push("--percentile_list=50:99:99.9");
    let r = one(&sb, &a);
    let p = r["total"]["lat_percentiles_ns"]
        .as_object()
        .expect("lat_percentiles_ns");
    let keys: Vec<&str> = p.keys().map(String::as_str).collect();
    assert_eq!(keys, ["p50", "p99", "p99_9"]);
    let read = r["total"]["read"]["lat_percentiles_ns"]
        .as_object()
        .unwrap();
    assert_eq!(read.len(), 3);
    let e = refused(&sb, &["--name=t", "--size=1m", "--percentile_list=50:100"]);
    assert!(e.contains("percentile_list=50:100 in [t]"), "{e}");
}

/// The rows of a CSV log whose thread is `total`, and its header.
fn total_rows(path: &std::path::Path) -> (String, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    let rows = lines
        .map(|l| l.split(',').map(String::from).collect::<Vec<_>>())
        .filter(|c| c[2] == "total")
        .collect();
    (header, rows)
}

#[test]
fn log_options_write_fsbenchs_logs() {
    let sb = Sandbox::new();
    // One second at 1000 IOPS, averaged over 100 ms: about ten rows at about 1000 IOPS.
    let job = [
        "--name=logged",
        "--ioengine=null",
        "--rw=randread",
        "--size=1g",
        "--rate_iops=1000",
        "--runtime=1",
        "--time_based",
        "--write_bw_log=perf",
        "--write_iops_log=perf",
        "--log_avg_msec=100",
    ];
    let r = one(&sb, &job);
    assert!(
        notes(&r).contains("bw.csv, iops.csv in the directory perf"),
        "{}",
        notes(&r)
    );
    let (header, rows) = total_rows(&sb.file("perf/iops.csv"));
    assert_eq!(header, "t_s,interval_s,thread,read_iops,write_iops,iops");
    assert!((8..=12).contains(&rows.len()), "{rows:?}");
    for row in &rows[1..rows.len() - 1] {
        assert_eq!(row[1], "0.100000", "{row:?}");
        let iops: f64 = row[5].parse().unwrap();
        assert!((500.0..1500.0).contains(&iops), "{row:?}");
    }
    let (_, bw) = total_rows(&sb.file("perf/bw.csv"));
    assert_eq!(bw.len(), rows.len());
    // Only the logs asked for.
    assert!(!sb.file("perf/lat.csv").exists());
    // A second run into the same logs is refused (one line) unless --force.
    let e = refused(&sb, &job);
    assert!(e.contains("already there"), "{e}");
    let mut forced = job.to_vec();
    forced.push("--force");
    one(&sb, &forced);
    // A bare option names the directory after the job.
    let r = one(
        &sb,
        &[
            "--name=lat",
            "--ioengine=null",
            "--rw=read",
            "--size=1m",
            "--rate_iops=1000",
            "--runtime=1200ms",
            "--time_based",
            "--write_lat_log",
        ],
    );
    assert!(notes(&r).contains("every 1000 ms"), "{}", notes(&r));
    let (header, rows) = total_rows(&sb.file("lat/lat.csv"));
    assert!(
        header.starts_with("t_s,interval_s,thread,count,min_ns"),
        "{header}"
    );
    assert!(!rows.is_empty());
    // Two jobs into one directory, and too short an interval, are refused in one line.
    let e = refused(
        &sb,
        &[
            "--ioengine=null",
            "--size=1m",
            "--write_bw_log=same",
            "--name=a",
            "--name=b",
        ],
    );
    assert!(
        e.contains("[b] writes its logs into same, as [a] does"),
        "{e}"
    );
    assert!(!sb.file("same").exists());
    let e = refused(
        &sb,
        &[
            "--name=a",
            "--size=1m",
            "--write_bw_log=x",
            "--log_avg_msec=5",
        ],
    );
    assert!(e.contains("log_avg_msec=5 in [a]"), "{e}");
    // In a group, each job keeps its own interval: [a] logs every 200 ms, [b] keeps none.
    let rs = fio_results(
        &sb,
        &[
            "--ioengine=null",
            "--rw=randread",
            "--size=1g",
            "--rate_iops=1000",
            "--runtime=1",
            "--time_based",
            "--name=a",
            "--write_iops_log=grouped",
            "--log_avg_msec=200",
            "--name=b",
        ],
    );
    assert_eq!(rs.len(), 2);
    let (_, rows) = total_rows(&sb.file("grouped/iops.csv"));
    assert!((4..=6).contains(&rows.len()), "{rows:?}");
    assert!(rows.iter().all(|r| r[1].starts_with("0.2")), "{rows:?}");
    let b = rs.iter().find(|r| r["name"] == "b").unwrap();
    assert!(b
        .get("timeseries")
        .is_none_or(|t| t.as_array().is_some_and(|a| a.is_empty())));
    let mut names = sb.listing();
    names.retain(|n| n != "perf" && n != "lat" && n != "grouped");
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn random_generator_and_batching_options() {
    let sb = Sandbox::new();
    // lfsr: every block once per pass, norandommap or not: 256 reads of a 1 MiB file
    // touch each 4k block once.
    let r = one(
        &sb,
        &[
            "--name=g",
            "--rw=randread",
            "--size=1m",
            "--norandommap",
            "--random_generator=lfsr",
        ],
    );
    assert_eq!(r["job"]["random_map"], true);
    assert_eq!(r["total"]["ops"], 256);
    assert!(notes(&r).contains("random_generator=lfsr"), "{}", notes(&r));
    let r = one(
        &sb,
        &[
            "--name=g",
            "--rw=randread",
            "--size=1m",
            "--norandommap",
            "--random_generator=tausworthe64",
        ],
    );
    assert!(r["job"].get("random_map").is_none(), "{}", r["job"]);
    let e = refused(
        &sb,
        &["--name=g", "--size=1m", "--random_generator=mt19937"],
    );
    assert!(e.contains("random_generator=mt19937 in [g]"), "{e}");
    // Batching that only groups system calls: run at the asked depth, with a note.
    let deep = [
        "--name=b",
        "--ioengine=io_uring",
        "--iodepth=8",
        "--rw=randread",
        "--size=1m",
    ];
    let mut a = deep.to_vec();
    a.extend([
        "--iodepth_batch=4",
        "--iodepth_batch_complete_max=8",
        "--iodepth_low=8",
    ]);
    let r = one(&sb, &a);
    assert_eq!(r["job"]["queue_depth"], 8);
    assert_eq!(r["total"]["ops"], 256);
    assert!(
        notes(&r).contains("group system calls, not I/Os"),
        "{}",
        notes(&r)
    );
    // Letting the queue drain is refused.
    for (opt, want) in [
        ("--iodepth_low=2", "iodepth_low=2 in [b]"),
        (
            "--iodepth_batch_complete_min=4",
            "iodepth_batch_complete_min=4 in [b]",
        ),
    ] {
        let mut a = deep.to_vec();
        a.push(opt);
        let e = refused(&sb, &a);
        assert!(e.contains(want), "{e}");
    }
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

/// fio's figures for the same command line: (operations, run time in seconds) of its job.
fn fio_ops_and_runtime(sb: &Sandbox, args: &[&str]) -> (u64, f64) {
    let o = std::process::Command::new("fio")
        .arg("--output-format=json")
        .args(args)
        .current_dir(sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let j = &v["jobs"][0];
    let ops = ["read", "write", "trim"]
        .iter()
        .map(|d| j[d]["total_ios"].as_u64().unwrap())
        .sum();
    (ops, f64_of(&j["job_runtime"]) / 1000.0)
}

#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn think_time_takes_as_long_as_fios() {
    let sb = Sandbox::new();
    let mut args = NULL_JOB.to_vec();
    args.extend(["--thinktime=1000", "--thinktime_blocks=2"]);
    let (ops, fio_s) = fio_ops_and_runtime(&sb, &args);
    let r = one(&sb, &args);
    assert_eq!(ops, r["total"]["ops"].as_u64().unwrap());
    // 100 pauses of 1 ms in both: the run times agree within a generous margin.
    let ours = f64_of(&r["total"]["elapsed_s"]);
    assert!(
        fio_s >= 0.09 && ours >= 0.099,
        "fio {fio_s} s, fsbench {ours} s"
    );
    assert!(
        (ours - fio_s).abs() <= 0.5 * fio_s.max(ours),
        "fio {fio_s} s, fsbench {ours} s"
    );
}
