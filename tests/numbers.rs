//! Numbers that cannot be misread (issue #14): every figure the text output prints is
//! recomputed from the JSON Result of the same run (bytes, ops, seconds, latency summaries)
//! and must agree within the rounding it was printed with, in the unit it names (MiB/s =
//! bytes/2^20/s, MB/s = bytes/10^6/s, vx's KB/s = bytes/1024/s). And the JSON's `read` and
//! `write` objects add up to the total at every level.
mod common;

use common::{words, Sandbox};
use serde_json::Value;

/// Bytes a second per printed unit; `vx` keeps vxbench's KB = 1024 and MB = 1024^2.
fn rate_factor(unit: &str, vx: bool) -> Option<f64> {
    Some(match unit {
        "B/s" => 1.0,
        "KiB/s" => 1024.0,
        "MiB/s" => 1024.0 * 1024.0,
        "GiB/s" => 1024.0 * 1024.0 * 1024.0,
        "TiB/s" => 1024f64.powi(4),
        "kB/s" => 1e3,
        "KB/s" if vx => 1024.0,
        "MB/s" if vx => 1024.0 * 1024.0,
        "MB/s" => 1e6,
        "GB/s" => 1e9,
        "TB/s" => 1e12,
        _ => return None,
    })
}

fn time_factor(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    })
}

/// Half a unit of the last printed digit of `token` (its rounding).
fn half_ulp(token: &str) -> f64 {
    let decimals = token.split_once('.').map_or(0, |(_, d)| d.len());
    0.5 * 10f64.powi(-(decimals as i32))
}

fn f(v: &Value) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("not a number in the JSON: {v}"))
}

/// `printed` (as text) in units of `factor` agrees with `exact`.
fn agree(printed: &str, factor: f64, exact: f64, what: &str, line: &str) {
    let v: f64 = printed.parse().unwrap();
    let tol = half_ulp(printed) * factor * 1.0001 + 1e-9;
    assert!(
        (v * factor - exact).abs() <= tol,
        "{what}: printed {printed} (x{factor}) but the JSON says {exact}\n  in: {line}"
    );
}

fn clean(t: &str) -> &str {
    t.trim_matches(|c| c == '(' || c == ')' || c == ',')
}

fn is_number(t: &str) -> bool {
    !t.is_empty() && t.parse::<f64>().is_ok()
}

/// The latency summary key a printed statistic name stands for.
fn lat_key(name: &str) -> Option<&'static str> {
    Some(match name {
        "min" => "min",
        "mean" => "mean",
        "p50" => "p50",
        "p90" => "p90",
        "p99" => "p99",
        "p99.9" => "p99_9",
        "p99.99" => "p99_99",
        "max" => "max",
        "stdev" => "stdev",
        _ => return None,
    })
}

/// Check every number after the label of a vxbench-style line against `scope` (a
/// StatsReport, or a `read`/`write` object); returns how many figures were checked.
fn check_stats_line(body: &str, scope: &Value, vx: bool, line: &str) -> usize {
    let t: Vec<&str> = body.split_whitespace().map(clean).collect();
    let mut checked = 0;
    let mut i = 0;
    while i < t.len() {
        if !is_number(t[i]) {
            i += 1;
            continue;
        }
        let next = t.get(i + 1).copied().unwrap_or("");
        let prev = if i > 0 { t[i - 1] } else { "" };
        if let Some(k) = rate_factor(next, vx) {
            agree(t[i], k, f(&scope["bytes_per_sec"]), "bandwidth", line);
        } else if next == "sec" {
            agree(t[i], 1.0, f(&scope["elapsed_s"]), "elapsed", line);
        } else if next == "IOPS" {
            agree(t[i], 1.0, f(&scope["iops"]), "IOPS", line);
        } else if next == "ops" {
            agree(t[i], 1.0, f(&scope["ops"]), "ops", line);
        } else if next == "sys" {
            agree(t[i], 1.0, f(&scope["cpu_sys_s"]), "sys CPU", line);
        } else if next == "user" {
            agree(t[i], 1.0, f(&scope["cpu_user_s"]), "user CPU", line);
        } else if next == "CPU" {
            agree(t[i], 1.0, f(&scope["cpu_s"]), "CPU", line);
        } else if let (Some(k), Some(key)) = (time_factor(next), lat_key(prev)) {
            agree(t[i], k, f(&scope["lat_ns"][key]), key, line);
        } else {
            panic!(
                "figure {} ('{prev} {} {next}') not accounted for\n  in: {line}",
                t[i], t[i]
            );
        }
        checked += 1;
        i += 2;
    }
    checked
}

/// Check a `latency:` line (every statistic named, each with its unit).
fn check_latency_line(body: &str, summary: &Value, line: &str) -> usize {
    let t: Vec<&str> = body.split_whitespace().collect();
    let mut checked = 0;
    for w in t.windows(3) {
        if let (Some(key), true, Some(k)) = (lat_key(w[0]), is_number(w[1]), time_factor(w[2])) {
            agree(w[1], k, f(&summary[key]), key, line);
            checked += 1;
        }
    }
    let numbers = t.iter().filter(|x| is_number(x)).count();
    assert_eq!(
        checked, numbers,
        "a figure without a name or unit in: {line}"
    );
    checked
}

/// Every figure of a run's text against its JSON Result. Returns how many were checked.
fn check_run_text(text: &str, r: &Value, vx: bool) -> usize {
    let mut checked = 0;
    // `read:` and `write:` lines belong to the user or total line above them.
    let mut above = &r["total"];
    for line in text.lines() {
        let (label, body) = match line.split_once(':') {
            Some(x) => x,
            None => continue,
        };
        let label_words: Vec<&str> = label.split_whitespace().collect();
        let scope = match label_words.as_slice() {
            ["total"] => {
                above = &r["total"];
                above
            }
            ["read"] => &above["read"],
            ["write"] => &above["write"],
            ["user", u] => {
                above = &r["users"][u.parse::<usize>().unwrap() - 1]["stats"];
                above
            }
            ["user", u, "thread", t] => {
                &r["users"][u.parse::<usize>().unwrap() - 1]["threads"]
                    [t.parse::<usize>().unwrap() - 1]["stats"]
            }
            ["latency"] => {
                checked += check_latency_line(body, &r["total"]["lat_ns"], line);
                continue;
            }
            [dir @ ("read" | "write"), "latency"] => {
                checked += check_latency_line(body, &r["total"][*dir]["lat_ns"], line);
                continue;
            }
            ["ops"] => {
                let t: Vec<&str> = body.split_whitespace().map(clean).collect();
                let total = &r["total"];
                agree(t[0], 1.0, f(&total["ops"]), "ops", line);
                assert_eq!(t[2], "read");
                agree(t[1], 1.0, f(&total["read"]["ops"]), "read ops", line);
                agree(t[3], 1.0, f(&total["write"]["ops"]), "write ops", line);
                agree(t[5], 1.0, f(&total["bytes"]), "bytes", line);
                agree(t[7], 1.0, f(&total["syscalls_per_sec"]), "syscalls/s", line);
                checked += 5;
                continue;
            }
            _ => continue,
        };
        checked += check_stats_line(body, scope, vx, line);
    }
    checked
}

/// Run `args` with `--output`, return the text printed and the JSON Result.
fn run(sb: &Sandbox, args: &str) -> (String, Value) {
    let json = sb.file("r.json");
    let mut argv = words(args);
    let o = json.to_str().unwrap().to_string();
    argv.push("--output");
    argv.push(&o);
    let out = sb.cmd(&argv).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    (text, v)
}

/// `read` + `write` (+ other ops) = the total at one level.
fn directions_add_up(s: &Value, what: &str) {
    let (rd, wr) = (&s["read"], &s["write"]);
    let u = |v: &Value| v.as_u64().unwrap();
    assert_eq!(
        u(&rd["ops"]) + u(&wr["ops"]) + u(&s["other_ops"]),
        u(&s["ops"]),
        "{what}"
    );
    assert_eq!(u(&rd["bytes"]) + u(&wr["bytes"]), u(&s["bytes"]), "{what}");
    assert_eq!(u(&rd["ops"]), u(&s["read_ops"]), "{what}");
    assert_eq!(u(&wr["bytes"]), u(&s["write_bytes"]), "{what}");
    let bw = f(&rd["bytes_per_sec"]) + f(&wr["bytes_per_sec"]);
    assert!(
        (bw - f(&s["bytes_per_sec"])).abs() <= 1e-6 * bw + 1e-6,
        "{what}"
    );
    // Every operation's latency is in exactly one direction (or "other") histogram.
    let (rc, wc) = (u(&rd["lat_ns"]["count"]), u(&wr["lat_ns"]["count"]));
    assert_eq!(rc, u(&rd["ops"]), "{what}: read latencies");
    assert_eq!(wc, u(&wr["ops"]), "{what}: write latencies");
    assert!(rc + wc <= u(&s["lat_ns"]["count"]), "{what}");
    for k in ["p99_99", "stdev"] {
        assert!(s["lat_ns"].get(k).is_some(), "{what}: lat_ns.{k}");
    }
}

fn every_level_adds_up(r: &Value) {
    directions_add_up(&r["total"], "total");
    for u in r["users"].as_array().into_iter().flatten() {
        directions_add_up(&u["stats"], "user");
        for t in u["threads"].as_array().unwrap() {
            directions_add_up(&t["stats"], "thread");
        }
    }
    for g in r["groups"].as_array().into_iter().flatten() {
        directions_add_up(&g["stats"], "group");
    }
}

#[test]
fn run_text_figures_match_the_json() {
    let sb = Sandbox::new();
    for args in [
        "run --rw write --bs 4k --size 4m -v f1",
        "run --rw read --bs 4k --size 4m -v f1",
        "run --rw randrw --bs 4k --size 4m --count 2000 --threads 2 -v f1 f2",
        "run --rw randrw --bs 4k --size 4m --count 500 --mb f1",
    ] {
        let (text, r) = run(&sb, args);
        let checked = check_run_text(&text, &r, false);
        assert!(
            checked >= 20,
            "{args}: only {checked} figures checked\n{text}"
        );
        assert!(
            !text.contains("KB/s"),
            "KB/s is vxbench's, for vx only: {text}"
        );
        every_level_adds_up(&r);
        if args.contains("f2") {
            // Two users: each user's line has its read and write lines too.
            assert_eq!(text.matches("\n  read:").count(), 3, "{text}");
        }
        if args.contains("randrw") {
            assert!(
                text.contains("\n  read:") && text.contains("\n  write:"),
                "{text}"
            );
            assert!(text.contains("\nread latency:") && text.contains("\nwrite latency:"));
        }
    }
    std::fs::remove_file(sb.file("f1")).ok();
}

#[test]
fn pure_runs_have_nothing_in_the_other_direction() {
    let sb = Sandbox::new();
    let (text, r) = run(
        &sb,
        "run --rw randread --bs 4k --size 1m --count 300 --keep f",
    );
    assert_eq!(r["total"]["write"]["ops"], 0);
    assert_eq!(r["total"]["write"]["bytes"], 0);
    assert_eq!(r["total"]["write"]["lat_ns"]["count"], 0);
    assert_eq!(r["total"]["read"]["ops"], 300);
    assert_eq!(r["total"]["read"]["lat_ns"]["count"], 300);
    assert_eq!(r["schema_version"], 3);
    every_level_adds_up(&r);
    assert!(
        !text.contains("\n  write:"),
        "no write line for a read run: {text}"
    );
    let (_, w) = run(
        &sb,
        "run --rw write --bs 4k --size 1m --count 100 --force f",
    );
    assert_eq!(w["total"]["read"]["ops"], 0);
    assert_eq!(w["total"]["write"]["lat_ns"]["count"], 100);
    every_level_adds_up(&w);
}

#[test]
fn vx_keeps_vxbench_kb_per_s_and_its_figures_match() {
    let sb = Sandbox::new();
    for args in [
        "vx -v -w rand_mixed -i iosize=4k,iocount=500,nthreads=2 a",
        "vx -M -w read -i iosize=8k,iocount=200 a",
    ] {
        let (text, r) = run(&sb, args);
        let checked = check_run_text(&text, &r, true);
        assert!(
            checked >= 15,
            "{args}: only {checked} figures checked\n{text}"
        );
        let unit = if args.contains("-M") {
            " MB/s"
        } else {
            " KB/s"
        };
        assert!(text.contains(unit), "{args}: {text}");
        assert!(
            !text.contains("MiB/s"),
            "{args}: vx keeps vxbench's units: {text}"
        );
        every_level_adds_up(&r);
    }
}

/// The Filebench-style workload text: each flowop's row and the IO Summary against the JSON.
#[test]
fn workload_text_figures_match_the_json() {
    let sb = Sandbox::new();
    let (text, r) = run(
        &sb,
        "workload fileserver -D nfiles=40 -D nthreads=2 -D filesize=16k -D iosize=4k --time 1s",
    );
    every_level_adds_up(&r);
    let summary = &r["workload"]["runs"][0]["summary"];
    directions_add_up(summary, "IO Summary");
    let mut rows = 0;
    let mut header_seen = false;
    // The flowop table and the summary come before the findings, whose sentences hold numbers.
    for line in text.lines().take_while(|l| *l != "explain:") {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.first() == Some(&"flowop") {
            assert_eq!(
                line.split_whitespace().collect::<Vec<_>>().join(" "),
                "flowop ops ops/s MB/s lat mean ms min ms p50 ms p99 ms p99.9 ms max ms"
            );
            header_seen = true;
            continue;
        }
        if let Some(rest) = line.strip_prefix("IO Summary: ") {
            let t: Vec<&str> = rest.split_whitespace().map(clean).collect();
            agree(t[0], 1.0, f(&summary["ops"]), "ops", line);
            agree(t[2], 1.0, f(&summary["iops"]), "ops/s", line);
            let (rd, wr) = t[4].split_once('/').unwrap();
            let secs = f(&summary["elapsed_s"]);
            agree(rd, 1.0, f(&summary["read_ops"]) / secs, "rd/s", line);
            agree(wr, 1.0, f(&summary["write_ops"]) / secs, "wr/s", line);
            assert_eq!(t[7], "MB/s");
            agree(t[6], 1e6, f(&summary["bytes_per_sec"]), "MB/s", line);
            let (rd, wr) = t[8].split_once('/').unwrap();
            agree(
                rd,
                1e6,
                f(&summary["read"]["bytes_per_sec"]),
                "read MB/s",
                line,
            );
            agree(
                wr,
                1e6,
                f(&summary["write"]["bytes_per_sec"]),
                "write MB/s",
                line,
            );
            agree(t[11], 1e6, f(&summary["lat_ns"]["mean"]), "ms/op", line);
            agree(t[15], 1.0, f(&summary["cpu_us_per_op"]), "us cpu/op", line);
            rows += 1;
            continue;
        }
        if !header_seen || t.len() < 13 || !is_number(t[1]) {
            continue;
        }
        let groups = r["groups"].as_array().unwrap();
        let name = |g: &&Value| g["name"].as_str().unwrap().to_string();
        let g = groups
            .iter()
            .find(|g| name(g) == t[0])
            .or_else(|| groups.iter().find(|g| name(g).starts_with(t[0])))
            .unwrap_or_else(|| panic!("no group for {line}"));
        let s = &g["stats"];
        agree(t[1], 1.0, f(&s["ops"]), "ops", line);
        agree(t[2], 1.0, f(&s["iops"]), "ops/s", line);
        agree(t[3], 1e6, f(&s["bytes_per_sec"]), "MB/s", line);
        for (i, key) in ["mean", "min", "p50", "p99", "p99_9", "max"]
            .iter()
            .enumerate()
        {
            agree(t[4 + i], 1e6, f(&s["lat_ns"][*key]), key, line);
        }
        agree(t[10], 1.0, f(&s["cpu_us_per_op"]), "us cpu/op", line);
        rows += 1;
    }
    assert!(
        rows >= 5,
        "flowop rows and IO Summary checked: {rows}\n{text}"
    );
}

#[test]
fn csv_has_direction_columns_with_units() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&words(
            "run --rw randrw --bs 4k --size 1m --count 400 --format csv f",
        ))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let total: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header.len(), total.len());
    let col = |name: &str| {
        let i = header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{name}"));
        total[i].parse::<f64>().unwrap()
    };
    assert_eq!(col("read_ops") + col("write_ops"), col("ops"));
    assert_eq!(col("ops"), 400.0);
    assert_eq!(col("read_bytes") + col("write_bytes"), col("bytes"));
    assert!(col("read_lat_p99_ns") > 0.0 && col("write_lat_p99_ns") > 0.0);
    assert!(col("lat_p99_99_ns") >= col("lat_p99_9_ns"));
    let bw = col("read_bytes_per_sec") + col("write_bytes_per_sec");
    assert!((bw - col("bytes_per_sec")).abs() <= 1.0, "{bw}");
}
