//! `explain`: each check provoked by a run that should trip it, and silent on a run that
//! should not, through the real binary; the checks that depend on the machine's load (the
//! host-bound check) are unit-tested on synthesised Results in `explain::tests`.
mod common;

use common::{explain_checks as checks, words, Sandbox};

#[test]
fn buffered_reads_of_a_small_file_measure_the_page_cache() {
    let sb = Sandbox::new();
    let (c, text) = checks(&sb, "run --rw randread --bs 4k --size 4m --count 20000 f");
    assert!(c.contains(&"page_cache".to_string()), "{c:?}");
    assert!(
        text.contains("explain:\n") && text.contains("\n  - buffered reads of 4.00 MiB"),
        "{text}"
    );
    assert!(text.contains("measures the page cache"), "{text}");
}

#[test]
#[cfg_attr(
    not(has_tmp_direct_io),
    ignore = "SKIPPED: the temp dir's file system takes no O_DIRECT"
)]
fn a_clean_direct_run_explains_nothing() {
    let sb = Sandbox::new();
    // Timed for a second: a shorter run is named too short. One run gives both the Result
    // and the text, so that findings the machine's load moves are in both or in neither.
    let out = sb
        .cmd(&words(
            "run --rw read --bs 64k --size 4m --cache direct --time 1s --output r.json f",
        ))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
    std::fs::remove_file(sb.file("r.json")).unwrap();
    let c: Vec<String> = v["explain"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["check"].as_str().unwrap().to_string())
        .collect();
    // Nothing about the storage; the host findings (quiet or not) and the run's stability
    // (which the machine's load moves) are tests/host.rs's.
    let storage: Vec<&String> = c
        .iter()
        .filter(|x| (!x.starts_with("host_") || *x == "host_bound") && *x != "unstable")
        .collect();
    assert!(storage.is_empty(), "{c:?}");
    let explained: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "explain:")
        .skip(1)
        .take_while(|l| l.starts_with("  - "))
        .collect();
    assert_eq!(explained.len(), c.len(), "{text}");
    // Aligned direct I/O: no fallback; 1 MiB I/Os with discovered direct go direct.
    let (c, _) = checks(&sb, "run --rw read --bs 1m --size 4m --cache discovered f");
    assert!(!c.iter().any(|x| x.starts_with("d")), "{c:?}");
}

#[test]
fn reads_of_a_sparse_file_are_named_and_a_written_file_is_not() {
    let sb = Sandbox::new();
    std::fs::File::create(sb.file("sparse"))
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let (c, text) = checks(&sb, "run --rw read --bs 64k --size 8m sparse");
    assert!(c.contains(&"sparse_reads".to_string()), "{c:?}");
    assert!(
        text.contains("is sparse (0 B of 8.00 MiB allocated)"),
        "{text}"
    );
    let (c, _) = checks(&sb, "run --rw read --bs 64k --size 8m written");
    assert!(!c.contains(&"sparse_reads".to_string()), "{c:?}");
}

#[test]
fn short_buffered_writes_without_fsync_are_named_and_with_fsync_are_not() {
    let sb = Sandbox::new();
    let (c, _) = checks(&sb, "run --rw write --bs 64k --size 4m f");
    assert!(c.contains(&"dirty_at_stop".to_string()), "{c:?}");
    let (c, _) = checks(&sb, "run --rw write --bs 64k --size 4m --fsync f");
    assert!(!c.contains(&"dirty_at_stop".to_string()), "{c:?}");
    let (c, _) = checks(
        &sb,
        "run --rw write --bs 64k --size 4m --verify --fsync-every 8 g",
    );
    assert!(!c.contains(&"dirty_at_stop".to_string()), "{c:?}");
}

#[test]
#[cfg_attr(
    not(has_tmp_direct_io),
    ignore = "SKIPPED: the temp dir's file system takes no O_DIRECT"
)]
fn direct_io_that_was_not_direct_is_named() {
    let sb = Sandbox::new();
    let (c, text) = checks(&sb, "run --rw read --bs 1000 --size 1m --cache direct f");
    assert!(c.contains(&"direct_fallback".to_string()), "{c:?}");
    assert!(text.contains("were not aligned for direct I/O"), "{text}");
    let (c, text) = checks(&sb, "run --rw read --bs 4k --size 1m --cache discovered f");
    assert!(c.contains(&"discovered_never_direct".to_string()), "{c:?}");
    assert!(
        text.contains("no larger than the threshold (256.00 KiB)"),
        "{text}"
    );
    let (c, _) = checks(&sb, "run --rw read --bs 4k --size 1m --cache direct f");
    assert!(!c.iter().any(|x| x.starts_with("d")), "{c:?}");
}

#[test]
#[cfg_attr(
    not(all(has_uring, has_tmp_direct_io)),
    ignore = "SKIPPED: needs io_uring and O_DIRECT in the temp dir"
)]
fn a_queue_depth_never_reached_is_named() {
    let sb = Sandbox::new();
    let (c, text) = checks(
        &sb,
        "run --rw randread --bs 4k --size 4m --time 0.5s --engine uring --qd 32 --rate-iops 200 --cache direct f",
    );
    assert!(c.contains(&"queue_depth".to_string()), "{c:?}");
    assert!(text.contains("queue depth 32 was asked for"), "{text}");
    let (c, _) = checks(
        &sb,
        "run --rw randread --bs 4k --size 4m --count 2000 --engine uring --qd 4 --cache direct f",
    );
    assert!(!c.contains(&"queue_depth".to_string()), "{c:?}");
}

#[test]
fn a_workload_reading_a_small_fileset_is_explained_and_a_synced_writer_is_not() {
    let sb = Sandbox::new();
    let line = "workload filemicro_rread -D filesize=2m -D iosize=4k --time 0.5s";
    let v = sb.run_json(&words(&format!("{line} --format json")));
    let checks: Vec<&str> = v["explain"]
        .as_array()
        .map(|a| a.iter().map(|e| e["check"].as_str().unwrap()).collect())
        .unwrap_or_default();
    assert!(checks.contains(&"page_cache"), "{checks:?}");
    let out = sb.cmd(&words(line)).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.contains("explain:\n")
            && text.contains("\n  - buffered reads of the filesets of 2.00 MiB"),
        "{text}"
    );
    // Writes, each followed by fsync: no reads to cache, nothing dirty at the stop.
    let v = sb.run_json(&words(
        "workload filemicro_writefsync -D filesize=256k -D iosize=4k --time 0.5s --format json",
    ));
    let checks: Vec<&str> = v["explain"]
        .as_array()
        .map(|a| a.iter().map(|e| e["check"].as_str().unwrap()).collect())
        .unwrap_or_default();
    assert!(
        !checks.contains(&"page_cache") && !checks.contains(&"dirty_at_stop"),
        "{checks:?}"
    );
}

#[test]
fn a_replay_of_unsynced_writes_is_explained_and_a_synced_one_is_not() {
    let sb = Sandbox::new();
    let trace = |name: &str, fsync: bool| {
        let mut s = String::from("id,thread,op,file,offset,len,start_ns,end_ns,result\n");
        for i in 0..32u64 {
            s.push_str(&format!(
                "{i},0,write,/data/a,{},4096,{},{},4096\n",
                i * 4096,
                i * 1000,
                i * 1000 + 500
            ));
        }
        if fsync {
            s.push_str("32,0,fsync,/data/a,0,0,40000,40500,0\n");
        }
        std::fs::write(sb.file(name), s).unwrap();
    };
    trace("w.csv", false);
    trace("s.csv", true);
    std::fs::create_dir(sb.file("scratch")).unwrap();
    let (c, text) = checks(&sb, "replay w.csv --dir scratch --format json");
    assert!(c.contains(&"dirty_at_stop".to_string()), "{c:?}\n{text}");
    let (c, _) = checks(&sb, "replay s.csv --dir scratch --format json");
    assert!(!c.contains(&"dirty_at_stop".to_string()), "{c:?}");
}

/// The stored records of a results directory, by file name.
fn stored(sb: &Sandbox, dir: &str) -> Vec<(std::path::PathBuf, serde_json::Value)> {
    let mut v: Vec<_> = std::fs::read_dir(sb.file(dir))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| {
            let v = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
            Some((p, v))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn has_spread(v: &serde_json::Value) -> bool {
    v["explain"]
        .as_array()
        .is_some_and(|a| a.iter().any(|e| e["check"] == "spread"))
}

#[test]
fn repetitions_that_disagree_are_named_in_the_results_and_the_table() {
    let sb = Sandbox::new();
    sb.cmd(&words(
        "sweep --rw read --bs 4k --size 256k --time 0.2s --repeat 2 f --output a",
    ))
    .assert()
    .success();
    let recs = stored(&sb, "a");
    let points: Vec<_> = recs.iter().filter(|(_, v)| v["kind"] == "io").collect();
    assert_eq!(
        points.len(),
        2,
        "{:?}",
        recs.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    // What the sweep stored follows the repetitions' own figures: both records carry the
    // finding exactly when they differ by more than 10 % of their mean.
    let (a, b) = (
        points[0].1["total"]["bytes_per_sec"].as_f64().unwrap(),
        points[1].1["total"]["bytes_per_sec"].as_f64().unwrap(),
    );
    let disagree = (a - b).abs() / ((a + b) / 2.0) > 0.10;
    assert_eq!(has_spread(&points[0].1), disagree, "{a} vs {b}");
    assert_eq!(has_spread(&points[1].1), disagree, "{a} vs {b}");
    // Made equal, the table has nothing to say; one halved, it names the point.
    let set = |path: &std::path::Path, v: &serde_json::Value, factor: f64| {
        let mut v = v.clone();
        for k in ["bytes_per_sec", "iops"] {
            v["total"][k] = (points[0].1["total"][k].as_f64().unwrap() * factor).into();
        }
        std::fs::write(path, serde_json::to_string(&v).unwrap()).unwrap();
    };
    set(&points[1].0, &points[1].1, 1.0);
    let out = sb.cmd(&["report", "a"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(!text.contains("disagree"), "{text}");
    set(&points[1].0, &points[1].1, 0.5);
    let out = sb.cmd(&["report", "a"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    // The legend under the table names the finding, the point and its spread.
    assert!(
        text.contains("1 of 1 points: repetitions disagree on throughput by more than 10 %"),
        "{text}"
    );
    assert!(text.contains(": the point 66.7 %;"), "{text}");
}

/// `fsbench run --threads 2` held to one CPU (its affinity set in the child before exec, as
/// taskset or mpirun's default binding does) on a host with more: named as `cpu_binding`
/// with both CPU counts, and the Result records them; the same run free to use every CPU is
/// silent. Needs a host with at least 2 CPUs online.
#[test]
#[cfg_attr(not(has_cpus2), ignore = "SKIPPED: needs at least 2 CPUs online")]
fn threads_held_to_fewer_cpus_than_the_host_has_are_named() {
    use std::os::unix::process::CommandExt;
    // SAFETY: sysconf has no memory effects.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if online < 2 {
        common::cannot("needs at least 2 CPUs online to hold a run to fewer");
    }
    let sb = Sandbox::new();
    let line = "run --rw write --bs 4k --size 4m --threads 2 --fsync --output r.json f";
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_fsbench"));
    c.current_dir(sb.path()).args(words(line));
    // SAFETY: in the child before exec, sched_setaffinity on itself with a set we own;
    // no allocation.
    unsafe {
        c.pre_exec(|| {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("r.json")).unwrap()).unwrap();
    assert_eq!(v["environment"]["cpus"], 1, "{}", v["environment"]);
    assert_eq!(
        v["environment"]["cpus_online"], online,
        "{}",
        v["environment"]
    );
    let e: Vec<&serde_json::Value> = v["explain"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["check"] == "cpu_binding")
        .collect();
    assert_eq!(e.len(), 1, "{}", v["explain"]);
    assert_eq!(e[0]["evidence"]["threads_per_process"], 2, "{}", e[0]);
    assert!(
        text.contains(&format!("could run on only 1 of the host's {online} CPUs")),
        "{text}"
    );
    // Free to use every CPU: silent.
    let (c, _) = checks(
        &sb,
        "run --rw write --bs 4k --size 4m --threads 2 --fsync f",
    );
    assert!(!c.contains(&"cpu_binding".to_string()), "{c:?}");
}

/// A sweep whose repetitions disagree at two points: the legend under the table names both,
/// each with its spread, in the text table and in Markdown (before, only the first was said).
#[test]
fn the_spread_of_every_point_that_disagrees_is_named() {
    let sb = Sandbox::new();
    sb.cmd(&words(
        "sweep --rw read --bs 4k,8k --size 256k --time 0.2s --repeat 2 f --output a",
    ))
    .assert()
    .success();
    let recs = common::sweep_records(&sb.file("a"));
    assert_eq!(
        recs.len(),
        4,
        "{:?}",
        recs.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    // Per block size, the second repetition made a third of the first: 100 % apart.
    for bs in ["4k", "8k"] {
        let point: Vec<&(String, serde_json::Value)> = recs
            .iter()
            .filter(|(n, _)| n.contains(&format!("bs-{bs}")))
            .collect();
        assert_eq!(point.len(), 2, "{bs}");
        let mut v = point[1].1.clone();
        for k in ["bytes_per_sec", "iops"] {
            v["total"][k] = (point[0].1["total"][k].as_f64().unwrap() / 3.0).into();
        }
        std::fs::write(sb.file("a").join(&point[1].0), v.to_string()).unwrap();
    }
    let text = String::from_utf8(
        sb.cmd(&["report", "a"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    let legend = text
        .lines()
        .find(|l| l.contains("repetitions disagree on throughput"))
        .unwrap_or_else(|| panic!("no spread legend:\n{text}"));
    assert!(legend.contains("2 of 2 points"), "{text}");
    assert!(legend.contains("bs=4k 100.0 %, bs=8k 100.0 %"), "{text}");
    assert!(legend.contains("--time"), "{text}");
    // Its marker on both rows.
    let marker = legend.trim_start().split(':').next().unwrap();
    for bs in ["4k ", "8k "] {
        let row = text.lines().find(|l| l.starts_with(bs)).unwrap();
        let marks = row.split_whitespace().nth(1).unwrap();
        assert!(marks.split(',').any(|m| m == marker), "{row}\n{text}");
    }
    let md = String::from_utf8(
        sb.cmd(&words("report a --format md"))
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    assert!(md.contains(&format!("- {}\n", legend.trim())), "{md}");
}

/// The legend line under a table that says `what`, and its marker.
fn legend<'a>(text: &'a str, what: &str) -> (&'a str, &'a str) {
    let line = text
        .lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no legend line with {what}:\n{text}"));
    let line = line.trim_start().trim_start_matches("- ");
    (line, line.split(':').next().unwrap())
}

/// A buffered sweep over a file the page cache holds: every point's page_cache finding is
/// in the text table (a marker on each row, a legend naming the points), in report.md and
/// in report.html; its runs of 0.3 s are said to be too short in each too. The throughput
/// is in human units.
#[test]
fn a_hot_cache_sweep_shows_the_page_cache_in_every_output() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&words(
            "sweep --rw randread --bs 4k,8k --size 1m --time 0.3s f --output res",
        ))
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let recs = common::sweep_records(&sb.file("res"));
    for (name, v) in &recs {
        let checks: Vec<&str> = v["explain"]
            .as_array()
            .map(|a| a.iter().filter_map(|e| e["check"].as_str()).collect())
            .unwrap_or_default();
        assert!(checks.contains(&"page_cache"), "{name}: {checks:?}");
    }
    let head = text.lines().nth(1).unwrap();
    assert!(head.contains("block size  notes "), "{text}");
    assert!(head.contains("throughput"), "{text}");
    let md = std::fs::read_to_string(sb.file("res/report.md")).unwrap();
    let html = std::fs::read_to_string(sb.file("res/report.html")).unwrap();
    for what in [
        "buffered reads served by the page cache",
        "too short to trust",
    ] {
        let (line, marker) = legend(&text, what);
        assert!(line.contains("2 of 2 points"), "{text}");
        assert!(line.contains("bs=4k") && line.contains("bs=8k"), "{text}");
        for bs in ["4k ", "8k "] {
            let row = text.lines().find(|l| l.starts_with(bs)).unwrap();
            let marks = row.split_whitespace().nth(1).unwrap();
            assert!(marks.split(',').any(|m| m == marker), "{row}\n{text}");
            // Human units, not a raw KiB/s integer.
            assert!(row.contains("iB/s"), "{row}");
        }
        let (md_line, md_marker) = legend(&md, what);
        assert_eq!(md_marker, marker, "{md}");
        assert!(md.contains(&format!("- {md_line}\n")), "{md}");
        assert!(
            md.contains(&format!("| 4k | {}", row_marks(&text, "4k "))),
            "{md}"
        );
        assert!(html.contains(what), "{what} not in report.html");
    }
    assert!(
        html.contains("<th class=\"key\">notes</th>"),
        "report.html has no notes column"
    );
    assert!(!text.contains("KiB/s  "), "{text}");
}

/// The markers of the text table's row that starts with `label`.
fn row_marks<'a>(text: &'a str, label: &str) -> &'a str {
    let row = text.lines().find(|l| l.starts_with(label)).unwrap();
    row.split_whitespace().nth(1).unwrap()
}

/// A run of 10 ms is said to be too short, in its text and its JSON.
#[test]
fn a_run_of_ten_milliseconds_is_too_short() {
    let sb = Sandbox::new();
    let (c, text) = checks(&sb, "run --rw read --bs 4k --size 1m --time 10ms f");
    assert!(c.contains(&"too_short".to_string()), "{c:?}");
    assert!(
        text.contains("  - the run was too short to trust: "),
        "{text}"
    );
    assert!(text.contains("under 1 s"), "{text}");
    assert!(text.contains("--time"), "{text}");
    // CSV: the checks are its last column.
    let out = sb
        .cmd(&words(
            "run --rw read --bs 4k --size 1m --time 10ms --output-format csv f",
        ))
        .assert()
        .success();
    let csv = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().ends_with(",explain"), "{csv}");
    let total = lines.next().unwrap();
    let last = total.rsplit(',').next().unwrap();
    assert!(last.split(';').any(|c| c == "too_short"), "{csv}");
}

/// A cold read (the caches dropped, the file read once from the storage) is not the page
/// cache: nothing was cached at the start and the run read no page twice. The same read
/// done again and again over the file, ten times its size, is.
#[test]
fn a_cold_read_is_not_named_the_page_cache() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words("run --rw read --bs 64k --size 8m --drop-cache f"));
    let before = &v["probes"]["page_cache"]["targets"][0]["before"]["cached_bytes"];
    assert_eq!(before, 0, "{}", v["probes"]["page_cache"]);
    let found: Vec<&str> = v["explain"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["check"].as_str()).collect())
        .unwrap_or_default();
    assert!(!found.contains(&"page_cache"), "{}", v["explain"]);
    let (c, text) = checks(
        &sb,
        "run --rw read --bs 64k --size 1m --count 160 --drop-cache f",
    );
    assert!(c.contains(&"page_cache".to_string()), "{c:?}");
    assert!(
        text.contains("% of the reads came from the cache"),
        "{text}"
    );
}

/// The options `fsbench run --help` lists.
fn run_options(sb: &Sandbox) -> Vec<String> {
    let out = sb.cmd(&["run", "--help"]).assert().success();
    String::from_utf8_lossy(&out.get_output().stdout)
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| w.starts_with("--"))
        .map(|w| w.split(['=', '<']).next().unwrap().to_string())
        .collect()
}

/// What to do, as each finding and each table legend says it, names options `fsbench run`
/// accepts (mpirun's own options aside): the advice can be followed as written.
#[test]
#[cfg_attr(
    not(has_tmp_direct_io),
    ignore = "SKIPPED: the temp dir's file system takes no O_DIRECT"
)]
fn every_option_a_finding_names_is_one_run_accepts() {
    let sb = Sandbox::new();
    std::fs::File::create(sb.file("sparse"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let mut said = String::new();
    let mut lines = vec![
        "run --rw randread --bs 4k --size 1m --time 10ms f",
        "run --rw read --bs 64k --size 1m sparse",
        "run --rw write --bs 64k --size 1m f",
        "run --rw read --bs 1000 --size 1m --cache direct f",
        "run --rw read --bs 4k --size 1m --cache discovered f",
    ];
    if cfg!(has_uring) {
        lines.push("run --rw randread --bs 4k --size 4m --time 0.3s --engine uring --qd 32 --rate-iops 200 --cache direct f");
    }
    for line in lines {
        let out = sb.cmd(&words(line)).assert().success();
        said += &String::from_utf8_lossy(&out.get_output().stdout);
    }
    let out = sb
        .cmd(&words(
            "sweep --rw randread --bs 4k,8k --size 1m --time 0.1s f --output res",
        ))
        .assert()
        .success();
    said += &String::from_utf8_lossy(&out.get_output().stdout);
    for check in [
        "too short",
        "page cache",
        "sparse",
        "clock stopped",
        "not aligned",
        "never went direct",
    ] {
        assert!(said.contains(check), "nothing said of {check}:\n{said}");
    }
    if cfg!(has_uring) {
        assert!(said.contains("queue depth 32 was asked for"), "{said}");
    }
    let accepted = run_options(&sb);
    let words: Vec<&str> = said
        .split(|c: char| c.is_whitespace() || ",;()/".contains(c))
        .collect();
    for (i, w) in words.iter().enumerate() {
        let w = w.trim_end_matches(['.', ':']);
        let flag = w.len() > 2 && w.starts_with("--") && w.as_bytes()[2].is_ascii_lowercase();
        if flag && (i == 0 || words[i - 1] != "mpirun") {
            assert!(
                accepted.iter().any(|a| a == w),
                "{w} is not an option of run:\n{said}"
            );
        }
    }
}
