//! `--steady-state`: a run that settles stops there and says so; one that cannot runs to
//! its longest time and says it did not settle; bad specs are refused in one line.

mod common;
use common::{words, Sandbox};

/// A page-cache read settles quickly within 20 %: the run stops long before its 30 s, and
/// the Result says when and with which figures.
#[test]
fn a_steady_run_stops_at_its_steady_state() {
    let sb = Sandbox::new();
    let t = std::time::Instant::now();
    let v = sb.run_json(&words(
        "run --rw read --bs 4k --size 4m --no-invalidate --steady-state iops:20%:3s --steady-state-max 30s f",
    ));
    let wall = t.elapsed().as_secs_f64();
    let s = &v["steady"];
    assert_eq!(s["reached"], true, "{s}");
    assert_eq!(s["metric"], "iops");
    assert_eq!(s["window_s"], 3);
    assert_eq!(s["limit_pct"], 20.0);
    let at = s["at_s"].as_f64().unwrap();
    assert!((2.9..25.0).contains(&at), "settled at {at}");
    assert!(wall < 28.0, "the run went on for {wall} s");
    let elapsed = v["total"]["elapsed_s"].as_f64().unwrap();
    assert!(
        (elapsed - at).abs() < 1.5,
        "ran {elapsed} s, settled at {at} s"
    );
    // The window's figures are what was judged.
    let samples: Vec<f64> = s["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(samples.len(), 3);
    let (min, max) = samples
        .iter()
        .fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    let mean = s["mean"].as_f64().unwrap();
    assert!((max - min) / mean * 100.0 <= 20.0, "{s}");
    // The window's IOPS agree with the run's (one run, the same I/O).
    let iops = v["total"]["iops"].as_f64().unwrap();
    assert!(
        mean > iops * 0.5 && mean < iops * 2.0,
        "window {mean}, run {iops}"
    );
    assert_eq!(v["job"]["steady_state"], "iops:20%:3s");
    assert_eq!(v["job"]["steady_state_max_s"], 30.0);
    assert_eq!(v["status"], "complete");
}

/// A limit no run can meet: it runs to --steady-state-max and says it did not settle, in
/// the Result and in the text.
#[test]
fn an_impossible_limit_runs_to_the_longest_time() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run --rw read --bs 4k --size 4m --no-invalidate --steady-state iops:0.0001%:2s --steady-state-max 3s f",
    ));
    let s = &v["steady"];
    assert_eq!(s["reached"], false, "{s}");
    assert!(s.get("at_s").is_none(), "{s}");
    assert_eq!(s["samples"].as_array().unwrap().len(), 2, "{s}");
    let elapsed = v["total"]["elapsed_s"].as_f64().unwrap();
    assert!(elapsed >= 2.9, "stopped early at {elapsed} s");
    // --time is the longest time when --steady-state-max is not given; the text says it.
    let out = sb
        .cmd(&words(
            "run --rw read --bs 4k --size 4m --no-invalidate --steady-state bw:0.0001%:slope:2s --time 3s f",
        ))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.contains("steady state: NOT reached"),
        "no steady-state line in:\n{text}"
    );
}

#[test]
fn bad_specs_are_refused_in_one_line() {
    let sb = Sandbox::new();
    for args in [
        "--steady-state iops:20:3s --time 1s",
        "--steady-state speed:20%:3s --time 1s",
        "--steady-state iops:20%:1s --time 1s",
        "--steady-state iops:20%:fast:3s --time 1s",
        "--steady-state iops:20%:3s",
        "--steady-state-max 3s --time 1s",
        "--steady-state iops:20%:3s --steady-state-max never",
        "--steady-state iops:20%:3s --time 1s --processes per-thread",
    ] {
        let line = format!("run --rw read --bs 4k --size 1m {args} f");
        let out = sb.cmd(&words(&line)).assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert_eq!(err.trim().lines().count(), 1, "{args}: {err}");
        assert!(err.contains("steady-state"), "{args}: {err}");
        assert!(!sb.file("f").exists(), "{args}: a file was left");
    }
}
