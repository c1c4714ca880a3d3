//! Watching a run (issue #14): the live status line (`--progress`) and the time series of
//! `--status-interval`, through the real binary on real files.

mod common;
use common::{words, Sandbox};

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `fsbench ARGS` on a real terminal (a pty from util-linux `script`, part of every Debian
/// system) in the sandbox: its output, the screen as drawn.
fn on_a_terminal(sb: &Sandbox, args: &str) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("fsbench");
    let cmd = format!("{} {args}", bin.display());
    std::process::Command::new("script")
        .args(["-qefc", &cmd, "/dev/null"])
        .current_dir(sb.path())
        .env("TERM", "xterm")
        .output()
        .expect("script(1) from util-linux")
}

/// Status lines: the ones the live line wrote (they start with a phase in brackets).
fn status_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            ["[laying out files]", "[running]", "[cleanup]", "[warm-up]"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect()
}

#[test]
fn progress_always_without_a_terminal_writes_status_lines_and_leaves_stdout_alone() {
    let sb = Sandbox::new();
    let run = |progress: &str| {
        sb.cmd(&words(&format!(
            "run f --rw randrw --bs 4k --size 8m --time 1.2s --summary --progress {progress}"
        )))
        .output()
        .unwrap()
    };
    let always = run("always");
    assert!(always.status.success(), "{}", stderr_of(&always));
    let err = stderr_of(&always);
    let lines = status_lines(&err);
    assert!(lines.len() >= 2, "status lines expected:\n{err}");
    // A line of the timed phase with a measured, non-zero rate and its ops and times.
    let running: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("[running]") && !l.contains("[r=0B/s w=0B/s]"))
        .collect();
    assert!(!running.is_empty(), "no running line with a rate:\n{err}");
    let l = running[0];
    assert!(
        l.contains("IOPS]") && l.contains("[ops ") && l.contains("[eta "),
        "{l}"
    );
    let never = run("never");
    assert!(never.status.success());
    assert!(status_lines(&stderr_of(&never)).is_empty());
    // stdout is the same report either way: same lines, no status words in it.
    let (a, n) = (
        String::from_utf8_lossy(&always.stdout),
        String::from_utf8_lossy(&never.stdout),
    );
    // The report's lines (what `explain` finds may differ from run to run: left out).
    let shape = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.starts_with("  ") && *l != "explain:")
            .map(|l| l.split(':').next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(shape(&a), shape(&n), "{a}\n---\n{n}");
    assert!(!a.contains("[running]") && a.contains("total:"), "{a}");
}

#[test]
fn progress_auto_on_a_pipe_writes_nothing() {
    let sb = Sandbox::new();
    // assert_cmd gives the child a pipe for stderr: auto (the default) stays quiet.
    let out = sb
        .cmd(&words("run f --rw write --bs 4k --size 4m --time 0.6s"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        status_lines(&stderr_of(&out)).is_empty(),
        "{}",
        stderr_of(&out)
    );
}

/// The time series of a Result: at least `min` intervals whose ops and bytes add up to the
/// run's totals exactly, each with its latency percentiles.
fn check_series(r: &serde_json::Value, min: usize) {
    let ts = r["timeseries"]
        .as_array()
        .expect("timeseries in the Result");
    assert!(ts.len() >= min, "{} intervals: {ts:?}", ts.len());
    let sum = |k: &str| ts.iter().map(|i| i[k].as_u64().unwrap()).sum::<u64>();
    for k in [
        "ops",
        "read_ops",
        "write_ops",
        "bytes",
        "read_bytes",
        "write_bytes",
    ] {
        assert_eq!(sum(k), r["total"][k].as_u64().unwrap(), "{k}");
    }
    let mut last = 0.0;
    for i in ts {
        let t = i["t_s"].as_f64().unwrap();
        assert!(t >= last && i["interval_s"].as_f64().unwrap() >= 0.0, "{i}");
        last = t;
        if i["ops"].as_u64().unwrap() > 0 {
            let lat = &i["lat_ns"];
            for p in ["p50", "p90", "p99", "p99_9", "max"] {
                assert!(lat[p].as_u64().is_some(), "{p} in {i}");
            }
            assert!(lat["p50"].as_u64() <= lat["p99"].as_u64(), "{i}");
            assert!(lat["p99"].as_u64() <= lat["max"].as_u64(), "{i}");
            assert!(i["iops"].as_f64().unwrap() > 0.0, "{i}");
        }
    }
}

#[test]
fn status_interval_gives_intervals_that_add_up_to_the_totals() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run f --rw randrw --bs 4k --size 8m --time 1.2s --threads 2 --status-interval 200ms",
    ));
    check_series(&r, 5);
    let ts = r["timeseries"].as_array().unwrap();
    let t_end = ts.last().unwrap()["t_s"].as_f64().unwrap();
    assert!((1.0..2.0).contains(&t_end), "last interval ends at {t_end}");
}

#[test]
fn the_queued_loop_and_a_count_bound_run_keep_intervals_too() {
    let sb = Sandbox::new();
    // A rate limit runs the general loop (`Core::drive`) on the sync engine: ~0.4 s, ended
    // by the count.
    let r = sb.run_json(&words(
        "run f --rw randrw --bs 4k --size 8m --count 4k --rate-iops 10000 --status-interval 50ms",
    ));
    check_series(&r, 5);
    assert_eq!(r["total"]["ops"].as_u64(), Some(4096));
}

#[test]
fn worker_processes_ship_their_intervals() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run f g --rw write --bs 4k --size 4m --time 0.8s --processes per-user --status-interval 200ms",
    ));
    check_series(&r, 3);
}

/// vx takes --status-interval (a time series of 100 ms intervals that add up to the totals)
/// and --progress (status lines with `always`, none with `never`).
#[test]
fn vx_takes_the_watch_flags() {
    let sb = Sandbox::new();
    let run = |progress: &str| {
        let out = sb
            .cmd(&words(&format!(
                "vx --status-interval 100ms --progress {progress} -w rand_read \
                 -i iosize=4,iocount=100000000,maxfilesize=1m --time 0.6s v.dat --output r.json"
            )))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
        (stderr_of(&out), r)
    };
    let (err, r) = run("never");
    assert!(status_lines(&err).is_empty(), "{err}");
    check_series(&r, 4);
    let ts = r["timeseries"].as_array().unwrap();
    for i in &ts[..ts.len() - 1] {
        let d = i["interval_s"].as_f64().unwrap();
        assert!((0.09..0.2).contains(&d), "a 100 ms interval: {i}");
    }
    let (err, _) = run("always");
    assert!(
        status_lines(&err)
            .iter()
            .any(|l| l.starts_with("[running]")),
        "{err}"
    );
}

#[test]
fn bad_watch_values_are_one_line_and_exit_2() {
    let sb = Sandbox::new();
    for (flag, value, expect) in [
        ("--status-interval", "soon", "bad --status-interval 'soon'"),
        ("--status-interval", "1ms", "at least 10ms"),
        ("--progress", "loud", "bad --progress 'loud'"),
    ] {
        let out = sb
            .cmd(&["run", "f", "--rw", "write", "--count", "10", flag, value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = stderr_of(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(expect), "{err}");
        assert!(!sb.file("f").exists(), "nothing written for a refused flag");
    }
}

const WORKLOAD: &str = "set $dir=.
define fileset name=fs,path=$dir,size=1m,entries=4,prealloc=100
define process name=p,instances=1
{
  thread name=t,memsize=64k,instances=2
  {
    flowop openfile name=open1,filesetname=fs,fd=1
    flowop read name=rd,fd=1,iosize=4k,random
    flowop closefile name=close1,fd=1
  }
}
run 1
";

#[test]
fn workload_runs_keep_intervals_in_processes_and_in_process() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("r.f"), WORKLOAD).unwrap();
    for extra in [None, Some("--in-process")] {
        let mut args = words("workload r.f --time 1.2s --status-interval 200ms");
        args.extend(extra);
        let r = sb.run_json(&args);
        check_series(&r, 5);
        // The run's own outline carries the same intervals.
        let run = &r["workload"]["runs"][0]["timeseries"];
        assert_eq!(
            run.as_array().unwrap().len(),
            r["timeseries"].as_array().unwrap().len()
        );
    }
}

#[test]
fn a_replay_keeps_intervals_of_its_reads_and_writes() {
    let sb = Sandbox::new();
    // A paced run traced, then replayed at its traced timing (~0.6 s).
    sb.cmd(&words(
        "run f --rw randrw --bs 4k --size 4m --time 0.6s --rate-iops 5000 --trace t.csv",
    ))
    .assert()
    .success();
    std::fs::create_dir(sb.file("scratch")).unwrap();
    let r = sb.run_json(&words(
        "replay t.csv --dir scratch --speed 1 --status-interval 100ms",
    ));
    check_series(&r, 4);
    assert!(r["total"]["read_ops"].as_u64().unwrap() > 0);
}

#[test]
fn the_html_report_charts_a_stored_time_series() {
    let sb = Sandbox::new();
    let r = sb.run_json(&words(
        "run f --rw randread --bs 4k --size 4m --time 0.6s --status-interval 100ms",
    ));
    std::fs::write(sb.file("r.json"), r.to_string()).unwrap();
    let out = sb
        .cmd(&words("report r.json --format html"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let html = String::from_utf8_lossy(&out.stdout);
    assert!(
        html.contains("id=\"time-series\""),
        "no time-series section"
    );
    for title in ["IOPS", "bandwidth", "latency"] {
        assert!(
            html.contains(&format!(": {title}</")) || html.contains(title),
            "{title}"
        );
    }
    // IOPS and latency on two y axes, and bandwidth.
    assert_eq!(
        html.matches("<svg class=\"chart line timeseries dual\"")
            .count(),
        1
    );
    assert_eq!(
        html.matches("<svg class=\"chart line timeseries\"").count(),
        1
    );
}

/// On a real terminal (a pty from util-linux `script`, part of every Debian system) the
/// default `auto` draws the line in place, and the report still follows it.
#[test]
fn auto_on_a_terminal_draws_the_live_line() {
    let sb = Sandbox::new();
    let out = on_a_terminal(
        &sb,
        "run f --rw randread --bs 4k --size 8m --time 1.5s --summary",
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains("[running]"),
        "no live line on the terminal:\n{screen}"
    );
    assert!(screen.contains("IOPS]"), "{screen}");
    // Redrawn in place (carriage returns / cursor moves), not a line per sample.
    assert!(
        screen.contains('\r') || screen.contains("\u{1b}["),
        "{screen}"
    );
    assert!(screen.contains("total:"), "{screen}");
}

/// The `[running]` states of a live line (each from its phase to the end of its IOPS
/// field) that show a non-zero rate and a non-zero IOPS.
fn running_with_rates(text: &str) -> Vec<String> {
    text.split("[running]")
        .skip(1)
        .filter_map(|rest| rest.find("IOPS]").map(|end| rest[..end + 5].to_string()))
        .filter(|l| !l.contains("[r=0B/s w=0B/s]") && !l.contains("[r=0 w=0 IOPS]"))
        .collect()
}

/// Worker processes (`--processes`) publish their counters on a board the parent shares
/// with them (a memfd mapping): the parent's line shows their rates, not only the time.
#[test]
fn worker_processes_show_their_rates_on_the_live_line() {
    let sb = Sandbox::new();
    for mode in ["per-user", "per-thread"] {
        let out = sb
            .cmd(&words(&format!(
                "run f g --rw read --bs 64k --size 8m --threads 2 --time 1.2s --summary --processes {mode} --progress always"
            )))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        let err = stderr_of(&out);
        let lines: Vec<&str> = status_lines(&err)
            .into_iter()
            .filter(|l| l.starts_with("[running]"))
            .collect();
        let rated = running_with_rates(&lines.join("\n"));
        assert!(
            rated
                .iter()
                .any(|l| l.contains("MiB/s") || l.contains("GiB/s")),
            "{mode}: no running line with a MiB/s rate and IOPS:\n{err}"
        );
        assert!(
            lines
                .iter()
                .all(|l| !l.contains("not live with worker processes")),
            "{err}"
        );
    }
}

/// The same on a real terminal (a pty from `script`): the redrawn line of a run in worker
/// processes shows a non-zero MiB/s and IOPS.
#[test]
fn worker_processes_show_rates_on_a_terminal() {
    let sb = Sandbox::new();
    let out = on_a_terminal(
        &sb,
        "run f g --rw read --bs 64k --size 8m --time 1.5s --summary --processes per-user",
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let screen = String::from_utf8_lossy(&out.stdout);
    let rated = running_with_rates(&screen);
    assert!(
        rated
            .iter()
            .any(|l| (l.contains("MiB/s") || l.contains("GiB/s")) && l.contains("IOPS]")),
        "no live line with a MiB/s rate from the worker processes:\n{screen}"
    );
    assert!(screen.contains("total:"), "{screen}");
}

#[test]
fn a_sweep_shows_its_point_counter_and_every_point_keeps_its_series() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&words(
            "sweep --rw write --bs 4k,8k --size 128k f --output res --progress always --status-interval 50ms",
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("[1/2] sweep bs=4k") && err.contains("[2/2] sweep bs=8k"),
        "{err}"
    );
    // The points' own runs draw no live line of their own inside a study.
    assert!(status_lines(&err).is_empty(), "{err}");
    let mut points = 0;
    for e in std::fs::read_dir(sb.file("res")).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "json") && p.to_string_lossy().contains("-bs-") {
            let r: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            check_series(&r, 1);
            points += 1;
        }
    }
    assert_eq!(points, 2);
    let quiet = sb
        .cmd(&words(
            "sweep --rw write --bs 4k --size 128k g --output res2 --progress never",
        ))
        .output()
        .unwrap();
    assert!(
        !stderr_of(&quiet).contains("[1/1]"),
        "{}",
        stderr_of(&quiet)
    );
}

#[test]
fn workload_and_replay_runs_show_the_live_line_too() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("r.f"), WORKLOAD).unwrap();
    let out = sb
        .cmd(&words("workload r.f --time 1.2s --progress always"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        status_lines(&err)
            .iter()
            .any(|l| l.starts_with("[running]") && !l.contains("[r=0 w=0 IOPS]")),
        "{err}"
    );
    sb.cmd(&words(
        "run f --rw randrw --bs 4k --size 4m --time 1.2s --rate-iops 3000 --trace t.csv",
    ))
    .assert()
    .success();
    std::fs::create_dir(sb.file("scratch")).unwrap();
    let out = sb
        .cmd(&words(
            "replay t.csv --dir scratch --speed 1 --progress always",
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        status_lines(&err)
            .iter()
            .any(|l| l.starts_with("[running]") && !l.contains("[r=0 w=0 IOPS]")),
        "{err}"
    );
}
