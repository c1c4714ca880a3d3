//! The Result's `host` section and the `host_*` findings of `explain`, through the real
//! binary: a CPU hog pinned to the run's CPU is named as another process's use of it (over
//! the run and in each interval of its time series), a run's findings agree with the
//! figures it stored, every run of 2 s has its stability figures, `--cpus` pins every worker
//! thread, and a bad CPU list is refused in one line.
mod common;

use common::{words, Sandbox};
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

/// A busy loop (`sh -c 'while :; do :; done'`) bound to one CPU, killed when dropped.
struct Hog(std::process::Child);

impl Hog {
    fn on_cpu(cpu: usize) -> Hog {
        let mut c = std::process::Command::new("sh");
        c.args(["-c", "while :; do :; done"]);
        // SAFETY: in the child before exec, sched_setaffinity on itself with a set on the
        // stack; no allocation.
        unsafe {
            c.pre_exec(move || {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Hog(c.spawn().expect("sh runs"))
    }

    /// CPU seconds the hog has used so far (utime + stime of /proc/PID/stat).
    fn cpu_s(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.0.id())).unwrap();
        let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = after_comm.split_whitespace().collect();
        // Fields 14 and 15 of the line; the state (field 3) is f[0].
        let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
        // SAFETY: sysconf has no memory effects.
        ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn checks(v: &Value) -> Vec<String> {
    v["explain"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["check"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn finding<'a>(v: &'a Value, check: &str) -> Option<&'a Value> {
    v["explain"]
        .as_array()?
        .iter()
        .find(|e| e["check"] == check)
}

/// The host findings of a Result are exactly the ones its own figures call for, and a run
/// with none of them says it was quiet.
fn host_findings_agree_with_figures(v: &Value) {
    let h = &v["host"];
    let c = checks(v);
    let has = |name: &str| c.iter().any(|x| x == name);
    let steal = h["steal_pct"].as_f64().unwrap();
    let others = h["others_cpu_pct"].as_f64().unwrap();
    let psi_cpu = h["pressure"]["cpu"]["some_pct"].as_f64().unwrap_or(0.0);
    assert_eq!(has("host_steal"), steal >= 2.0, "{c:?} {h}");
    assert_eq!(has("host_other_cpu"), others >= 10.0, "{c:?} {h}");
    assert_eq!(has("host_cpu_pressure"), psi_cpu >= 10.0, "{c:?} {h}");
    // The findings of the host section (`host_bound`, a run bound by this host's CPU, is
    // another check).
    let busy = [
        "host_steal",
        "host_other_cpu",
        "host_cpu_pressure",
        "host_memory_pressure",
        "host_cpu_frequency",
        "host_dirty_at_start",
    ];
    let any_host = c.iter().any(|x| busy.contains(&x.as_str()));
    assert_eq!(has("host_quiet"), !any_host, "{c:?} {h}");
}

/// The `unstable` finding is there exactly when the Result's stability figures pass a limit
/// (10 % CV, 10 % change over the run, IOPS or bandwidth) over a second or more of
/// intervals, and says the figure.
fn stability_findings_agree_with_figures(v: &Value) {
    let s = &v["stability"];
    let f = |k: &str| s[k].as_f64().unwrap_or_else(|| panic!("{k} in {s}"));
    let span = f("interval_s") * f("intervals");
    let cv = f("iops_cv_pct").max(f("bytes_per_sec_cv_pct"));
    let change = f("iops_change_over_run_pct")
        .abs()
        .max(f("bytes_per_sec_change_over_run_pct").abs());
    let found = finding(v, "unstable");
    assert_eq!(
        found.is_some(),
        (cv >= 10.0 || change >= 10.0) && span >= 1.0 - 1e-9,
        "{s} {}",
        v["explain"]
    );
    if let Some(e) = found {
        let m = e["message"].as_str().unwrap();
        assert!(m.starts_with("IOPS "), "{m}");
        if f("iops_cv_pct") >= 10.0 {
            assert!(
                m.contains(&format!("varied {:.0} % between", f("iops_cv_pct"))),
                "{m}"
            );
        }
        assert!(m.contains("--ramp"), "{m}");
    }
}

/// A busy loop on CPU 0 while a run pinned there (`--cpus 0`) writes: the Result counts the
/// hog's CPU time as other processes' use of the run's CPU, and `explain` names it with the
/// figure. Without the hog the findings follow the figures (on a quiet machine: `host_quiet`).
#[test]
fn a_hog_on_the_runs_cpu_is_named_and_a_run_without_it_is_judged_by_its_figures() {
    let sb = Sandbox::new();
    let line = "run --rw write --bs 4k --size 4m --time 2s --cpus 0 --status-interval 400ms f";
    let hog = Hog::on_cpu(0);
    let hog_before = hog.cpu_s();
    let v = sb.run_json(&words(line));
    let hog_used = hog.cpu_s() - hog_before;
    drop(hog);
    let h = &v["host"];
    assert_eq!(h["cpus"], serde_json::json!([0]), "{h}");
    let window = h["window_s"].as_f64().unwrap();
    assert!(window >= 1.9, "{h}");
    // The hog ran all along, the run's window is most of fsbench's life: at least half of
    // what the hog used falls in the window, on CPU 0, as another process's time.
    let others_s = h["others_cpu_s"].as_f64().unwrap();
    assert!(
        others_s >= hog_used * 0.5,
        "others {others_s} s, hog {hog_used} s: {h}"
    );
    let f = finding(&v, "host_other_cpu").unwrap_or_else(|| panic!("{}", v["explain"]));
    let pct = h["others_cpu_pct"].as_f64().unwrap();
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("another process used {pct:.0} % of CPU 0")),
        "{f}"
    );
    assert!(f["message"].as_str().unwrap().contains("--cpus"), "{f}");
    host_findings_agree_with_figures(&v);
    // Each interval of the series has the host's figures, sampled at its edges: the hog is
    // in most of them as another process on CPU 0, and the figures add up to about the
    // window's.
    let ts = v["timeseries"].as_array().unwrap();
    let hosts: Vec<&Value> = ts.iter().filter_map(|i| i.get("host")).collect();
    assert!(hosts.len() + 1 >= ts.len() && ts.len() >= 5, "{ts:?}");
    let others: Vec<f64> = hosts
        .iter()
        .map(|h| h["others_cpu_pct"].as_f64().unwrap())
        .collect();
    let busy = others.iter().filter(|&&o| o >= 10.0).count();
    assert!(busy * 2 > others.len(), "{others:?} of {h}");
    let mean = others.iter().sum::<f64>() / others.len() as f64;
    assert!(
        (mean - pct).abs() < 25.0,
        "intervals {others:?}, window {pct}"
    );
    for h in &hosts {
        assert!(h["steal_pct"].as_f64().is_some(), "{h}");
    }
    // The stability figures come from that series, and an `unstable` finding counts the
    // intervals with the hog in them.
    assert_eq!(
        v["stability"]["series"], "status_interval",
        "{}",
        v["stability"]
    );
    assert_eq!(v["stability"]["intervals"], 5, "{}", v["stability"]);
    stability_findings_agree_with_figures(&v);
    if let Some(u) = finding(&v, "unstable") {
        assert_eq!(u["evidence"]["host_busy_intervals"], busy, "{u}");
        assert!(
            u["message"]
                .as_str()
                .unwrap()
                .contains(&format!("in {busy} of the {} intervals", hosts.len())),
            "{u}"
        );
    }
    // The text output: one host line, and the finding under explain.
    let out = sb.cmd(&words(line)).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let host_lines: Vec<&str> = text.lines().filter(|l| l.starts_with("host: ")).collect();
    assert_eq!(host_lines.len(), 1, "{text}");
    assert!(host_lines[0].starts_with("host: steal "), "{text}");
    assert!(host_lines[0].contains("of the run's CPUs (0)"), "{text}");
    let stability: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("stability: "))
        .collect();
    assert_eq!(stability.len(), 1, "{text}");
    assert!(
        stability[0].starts_with("stability: IOPS CV ")
            && stability[0].ends_with("(5 intervals of 0.40 s)"),
        "{text}"
    );

    // Without the hog: whatever else the machine does, the findings are the figures'.
    let quiet = sb.run_json(&words(line));
    host_findings_agree_with_figures(&quiet);
    stability_findings_agree_with_figures(&quiet);
}

/// Without --status-interval a run of 2 s still has its stability figures, from a series
/// kept for them alone and not stored: a timed one over five 0.4 s intervals (a fifth of
/// its time), and one bounded by count over intervals of the 200 ms grid joined in pairs.
/// A run paced at 200 IOPS is steady: its figures say so and `explain` says nothing of it.
/// (A run that falls in its second half is `explain::stability`'s unit test: no option
/// changes a run's rate half way.)
#[test]
fn every_run_of_two_seconds_has_its_stability_and_a_paced_one_is_steady() {
    let sb = Sandbox::new();
    let timed = sb.run_json(&words("run --rw write --bs 4k --size 4m --time 2s f"));
    let s = &timed["stability"];
    assert_eq!(s["series"], "default", "{s}");
    assert_eq!(s["intervals"], 5, "{s}");
    assert!(
        (s["interval_s"].as_f64().unwrap() - 0.4).abs() < 1e-9,
        "{s}"
    );
    assert!(s["iops_mean"].as_f64().unwrap() > 0.0, "{s}");
    assert!(timed.get("timeseries").is_none(), "not stored");
    assert!(timed["users"][0]["threads"][0].get("timeseries").is_none());
    stability_findings_agree_with_figures(&timed);

    let line = "run --rw write --bs 4k --size 4m --count 480 --rate-iops 200 f";
    let paced = sb.run_json(&words(line));
    let s = &paced["stability"];
    assert_eq!(s["series"], "default", "{s}");
    // ~2.4 s on the 200 ms grid: 12 whole intervals, joined in pairs.
    assert!(s["intervals"].as_u64().unwrap() >= 5, "{s}");
    assert!(
        (s["interval_s"].as_f64().unwrap() - 0.4).abs() < 1e-9,
        "{s}"
    );
    let iops = s["iops_mean"].as_f64().unwrap();
    assert!((iops - 200.0).abs() < 20.0, "{s}");
    assert!(s["iops_cv_pct"].as_f64().unwrap() < 10.0, "{s}");
    assert!(
        s["iops_change_over_run_pct"].as_f64().unwrap().abs() < 10.0,
        "{s}"
    );
    assert!(
        finding(&paced, "unstable").is_none(),
        "{}",
        paced["explain"]
    );
    stability_findings_agree_with_figures(&paced);

    // A run too short for five intervals has no figures.
    let short = sb.run_json(&words("run --rw write --bs 4k --size 4m --time 0.3s f"));
    assert!(short.get("stability").is_none(), "{}", short["stability"]);
}

/// Every kind of run carries the section: a workload's and a replay's Results too. A
/// workload that keeps a --status-interval series has its stability figures from it.
#[test]
fn workload_and_replay_results_carry_the_host_section() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "workload filemicro_rread -D filesize=256k -D iosize=4k --time 1.2s --status-interval 200ms --format json",
    ));
    assert!(
        v["host"]["window_s"].as_f64().unwrap() > 0.9,
        "{}",
        v["host"]
    );
    assert!(!v["host"]["cpus"].as_array().unwrap().is_empty());
    host_findings_agree_with_figures(&v);
    assert_eq!(
        v["stability"]["series"], "status_interval",
        "{}",
        v["stability"]
    );
    assert!(
        v["stability"]["intervals"].as_u64().unwrap() >= 5,
        "{}",
        v["stability"]
    );
    stability_findings_agree_with_figures(&v);
    let mut trace = String::from("id,thread,op,file,offset,len,start_ns,end_ns,result\n");
    for i in 0..16u64 {
        trace.push_str(&format!(
            "{i},0,write,/data/a,{},4096,{},{},4096\n",
            i * 4096,
            i * 1000,
            i * 1000 + 500
        ));
    }
    std::fs::write(sb.file("t.csv"), trace).unwrap();
    std::fs::create_dir(sb.file("scratch")).unwrap();
    let v = sb.run_json(&words("replay t.csv --dir scratch --format json"));
    assert!(
        v["host"]["window_s"].as_f64().unwrap() > 0.0,
        "{}",
        v["host"]
    );
    host_findings_agree_with_figures(&v);
}

/// Worker processes (`--processes`) are not in fsbench's own CPU time until they end: their
/// intervals carry the host's steal (and pressure where the kernel has it) but no figure for
/// other processes, rather than counting the workers as others.
#[test]
fn worker_processes_intervals_have_no_other_process_figure() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run f --rw write --bs 4k --size 4m --time 1s --processes per-user --status-interval 200ms",
    ));
    let ts = v["timeseries"].as_array().unwrap();
    let hosts: Vec<&Value> = ts.iter().filter_map(|i| i.get("host")).collect();
    assert!(hosts.len() + 2 >= ts.len() && !hosts.is_empty(), "{ts:?}");
    for h in hosts {
        assert!(h["steal_pct"].as_f64().is_some(), "{h}");
        assert!(h.get("others_cpu_pct").is_none(), "{h}");
    }
}

/// `--cpus 0`: every worker thread (named fsbench-u0tN) may run on CPU 0 only, while the
/// process's main thread keeps its own set; the Result records the run's CPUs.
#[test]
fn cpus_pins_every_worker_thread() {
    let sb = Sandbox::new();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fsbench"))
        .current_dir(sb.path())
        .args(words(
            "run --rw write --bs 4k --size 4m --time 3s --threads 2 --cpus 0 --output r.json f",
        ))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let allowed = |task: &std::path::Path| -> Option<String> {
        let s = std::fs::read_to_string(task.join("status")).ok()?;
        s.lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|x| x.trim().to_string())
    };
    let mut seen = std::collections::BTreeMap::new();
    let until = Instant::now() + Duration::from_secs(30);
    while seen.len() < 2 && Instant::now() < until {
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in tasks.flatten() {
                let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                if comm.trim().starts_with("fsbench-u0t") {
                    // Pinned before the start gate: once running, its set is final.
                    if let Some(a) = allowed(&t.path()) {
                        if a == "0" || !seen.contains_key(comm.trim()) {
                            seen.insert(comm.trim().to_string(), a);
                        }
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let main_allowed = allowed(std::path::Path::new(&format!("/proc/{pid}/task/{pid}")));
    let status = child.wait().unwrap();
    assert!(status.success());
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.values().all(|a| a == "0"), "{seen:?}");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    if online.trim() != "0" {
        // The main thread was not pinned: only the workers were.
        assert_ne!(main_allowed.as_deref(), Some("0"), "{main_allowed:?}");
    }
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
    assert_eq!(v["host"]["cpus"], serde_json::json!([0]), "{}", v["host"]);
    assert_eq!(v["job"]["cpus"], serde_json::json!([0]), "{}", v["job"]);
}

/// A list that is not one, or that names a CPU not online: one line, exit 2, nothing made.
#[test]
fn bad_cpu_lists_are_refused_in_one_line() {
    let sb = Sandbox::new();
    for (bad, says) in [
        ("x", "expected CPU numbers and ranges such as 0-1,3"),
        ("1-0", "expected CPU numbers and ranges such as 0-1,3"),
        ("0,,1", "expected CPU numbers and ranges such as 0-1,3"),
        ("4000", "CPU 4000 is not online"),
    ] {
        let out = sb
            .cmd(&["run", "--rw", "write", "--count", "4", "--cpus", bad, "f"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{bad}: {err}");
        assert!(err.contains("--cpus") && err.contains(says), "{bad}: {err}");
        assert!(sb.listing().is_empty(), "{bad}: {:?}", sb.listing());
    }
}
