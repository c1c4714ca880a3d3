//! `fsbench run`, job files, `quick`, the Result JSON contract, and bad input handling.

mod common;
use common::{words, Sandbox};

#[test]
fn run_from_flags() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words(
        "run --rw randread --bs 4k --size 8m --threads 2 --cache direct --time 1s f1",
    ));
    let t = &v["total"];
    assert_eq!(v["status"], "complete");
    let e = t["elapsed_s"].as_f64().unwrap();
    assert!((0.9..3.0).contains(&e), "elapsed {e}");
    assert!(t["read_ops"].as_u64().unwrap() > 100);
    assert_eq!(t["direct_ops"], t["read_ops"]);
    assert_eq!(v["users"][0]["threads"].as_array().unwrap().len(), 2);
    assert!(sb.listing().is_empty());
}

#[test]
fn one_pass_over_the_file_without_count_or_time() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words("run --rw read --bs 64k --size 4m --threads 2 f"));
    assert_eq!(v["total"]["bytes"], 4 << 20);
    let v = sb.run_json(&words(
        "run --rw write --bs 1m --size 8m --processes per-thread --threads 2 f",
    ));
    assert_eq!(v["total"]["write_bytes"], 8 << 20);
}

#[test]
fn job_file_with_flag_override() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("job.toml"),
        "name = \"from-file\"\ntargets = [\"a\", \"b\"]\naccess = \"randrw\"\nread_pct = 80\nblock_size = 8192\nio_count = 300\nthreads = 2\n[cache]\npolicy = \"discovered\"\nthreshold = 4096\n",
    )
    .unwrap();
    let v = sb.run_json(&["run", "job.toml"]);
    assert_eq!(v["name"], "from-file");
    assert_eq!(v["total"]["ops"], 2 * 2 * 300);
    assert_eq!(v["total"]["direct_ops"], 2 * 2 * 300, "8k >= 4k threshold");
    let v = sb.run_json(&words("run job.toml --bs 2k"));
    assert_eq!(v["job"]["block_size"], 2048);
    assert_eq!(v["total"]["direct_ops"], 0);
}

/// The white paper's read tables: at the default 256 KiB threshold the 256k row is buffered
/// (VxFS goes direct only for I/Os larger than discovered_direct_iosz), one 4 KiB block more
/// is direct.
#[test]
fn discovered_direct_goes_direct_only_above_the_threshold() {
    let sb = Sandbox::new();
    let at = sb.run_json(&words(
        "run --rw read --bs 256k --size 1m --cache discovered f",
    ));
    assert_eq!(at["status"], "complete");
    assert_eq!(at["total"]["read_ops"], 4);
    assert_eq!(
        at["total"]["direct_ops"], 0,
        "256k at a 256k threshold is buffered"
    );
    let above = sb.run_json(&words(
        "run --rw read --bs 260k --size 1040k --cache discovered f",
    ));
    assert_eq!(above["total"]["read_ops"], 4);
    assert_eq!(
        above["total"]["direct_ops"], 4,
        "260k is larger than 256k: direct"
    );
    assert_eq!(above["plan"]["cache"]["policy"], "discovered");
}

#[test]
fn result_json_schema() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words("run --rw randrw --bs 4k --count 500 --size 1m f"));
    for key in [
        "schema_version",
        "fsbench_version",
        "kind",
        "name",
        "started_unix_s",
        "status",
        "failures",
        "notes",
        "job",
        "plan",
        "environment",
        "total",
        "users",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    let t = &v["total"];
    for key in [
        "ops",
        "read_ops",
        "write_ops",
        "bytes",
        "elapsed_s",
        "bytes_per_sec",
        "iops",
        "cpu_user_s",
        "cpu_sys_s",
        "cpu_s",
        "cpu_us_per_op",
        "lat_ns",
        "sched_lat_ns",
        "syscalls",
        "syscalls_per_sec",
        "usage",
        "inflight_pct",
        "lat_hist_ns",
    ] {
        assert!(t.get(key).is_some(), "missing total.{key}");
    }
    for key in ["min", "mean", "p50", "p90", "p99", "p99_9", "max"] {
        assert!(t["lat_ns"].get(key).is_some(), "missing lat_ns.{key}");
    }
    let l = &t["lat_ns"];
    assert!(
        l["min"].as_u64() <= l["p50"].as_u64()
            && l["p50"].as_u64() <= l["p99"].as_u64()
            && l["p99"].as_u64() <= l["max"].as_u64()
    );
    assert_eq!(
        t["syscalls"]["read"].as_u64().unwrap() + t["syscalls"]["write"].as_u64().unwrap(),
        500
    );
    assert!(v["environment"]["kernel"].as_str().unwrap().len() > 1);
    assert!(
        v["environment"]["targets"][0]["fs_type"]
            .as_str()
            .unwrap()
            .len()
            > 1
    );
    let hist_count: u64 = t["lat_hist_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[1].as_u64().unwrap())
        .sum();
    assert_eq!(hist_count, 500);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("bad.toml"), "targets = [\"a\"]\nblok_size = 4\n").unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "--rw", "sideways", "f"],
        vec!["run", "--bs", "4x", "--count", "1", "f"],
        vec!["run", "--bs", "4k", "--time", "soon", "f"],
        vec!["run", "--cache", "quick", "--count", "1", "f"],
        vec!["run", "--count", "1"],
        vec!["run", "--qd", "8", "--count", "1", "f"],
        vec!["run", "bad.toml"],
        vec!["run", "missing.toml"],
        vec!["run", "--format", "xml", "--count", "1", "f"],
        vec!["vx", "-w", "bogus", "f"],
        vec!["vx", "-w", "read", "-i", "iosize=abc", "f"],
        vec!["vx", "-w", "read", "-c", "direct", "-f", "contig", "f"],
        vec!["vx", "-w", "rand_read", "-o", "append", "f"],
        vec!["vx"],
        vec!["quick", "/no/such/dir"],
    ];
    for args in cases {
        let out = sb.cmd(&args).assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(
            err.trim().lines().count(),
            1,
            "{args:?}: one line, got: {err}"
        );
        assert!(
            sb.listing().iter().all(|f| f.ends_with(".toml")),
            "{args:?} left {:?}",
            sb.listing()
        );
    }
}

#[test]
fn quick_battery_small() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&words(
            "quick --size 16m --time 200ms --warmup 100ms --repeat 2 --output q.json",
        ))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("q.json")).unwrap()).unwrap();
    let runs = v.as_array().unwrap();
    // 8 standard tests and 3 extras, 2 timed runs each; warm-ups are not results.
    assert_eq!(runs.len(), 22, "{text}");
    assert!(runs.iter().all(|r| r["status"] == "complete"));
    assert_eq!(
        sb.listing(),
        vec!["q.json".to_string()],
        "scratch file removed"
    );
    // Every figure printed is the median / range / CPU per I/O of what the runs measured.
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[0] + v[1]) / 2.0
    };
    let mut rows = 0;
    for line in text.lines() {
        let Some(name) = [
            "SEQ1M Q8T1 read",
            "SEQ1M Q8T1 write",
            "SEQ1M Q1T1 read",
            "SEQ1M Q1T1 write",
            "RND4K Q32T1 read",
            "RND4K Q32T1 write",
            "RND4K Q1T1 read",
            "RND4K Q1T1 write",
            "seq write 1m buffered",
            "seq read 1m buffered",
            "dsync write 8k",
        ]
        .into_iter()
        .find(|n| line.starts_with(n)) else {
            continue;
        };
        rows += 1;
        let mine: Vec<&serde_json::Value> = runs.iter().filter(|r| r["name"] == name).collect();
        assert_eq!(mine.len(), 2, "{name}");
        let t = |r: &serde_json::Value, k: &str| r["total"][k].as_f64().unwrap();
        // MB/s of each run from its bytes and seconds, 10^6 bytes a MB.
        let mbs: Vec<f64> = mine
            .iter()
            .map(|r| t(r, "bytes") / t(r, "elapsed_s") / 1e6)
            .collect();
        let cols: Vec<&str> = line[name.len()..].split_whitespace().collect();
        let num = |s: &str| s.parse::<f64>().unwrap();
        let close = |printed: f64, want: f64, what: &str| {
            assert!(
                (printed - want).abs() <= 0.051 + want * 0.001,
                "{name} {what}: printed {printed}, measured {want}: {line}"
            )
        };
        close(num(cols[0]), median(mbs.clone()), "MB/s");
        let (lo, hi) = cols[1].split_once("..").unwrap();
        close(
            num(lo),
            mbs.iter().copied().fold(f64::INFINITY, f64::min),
            "min",
        );
        close(num(hi), mbs.iter().copied().fold(0.0, f64::max), "max");
        let iops = median(
            mine.iter()
                .map(|r| t(r, "ops") / t(r, "elapsed_s"))
                .collect(),
        );
        assert!(
            (num(cols[2]) - iops).abs() <= 0.5 + iops * 0.001,
            "{name} IOPS: {line}"
        );
        let cpu: f64 = mine.iter().map(|r| t(r, "cpu_s")).sum();
        let ops: f64 = mine.iter().map(|r| t(r, "ops")).sum();
        close(num(cols[cols.len() - 2]), cpu / ops * 1e6, "CPU us/op");
        let j = &mine[0]["job"];
        if name.contains(" Q") {
            assert_eq!(j["cache"]["policy"], "direct", "{name}");
        }
        if name.contains("Q32") || name.contains("Q8") {
            assert_eq!(j["engine"], "uring", "{name}");
        }
    }
    assert_eq!(rows, 11, "{text}");
}

#[test]
fn quick_profiles_and_bad_repeat() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&words(
            "quick --profile nvme --size 8m --time 100ms --warmup 0 --repeat 1 --no-extras",
        ))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.starts_with(
            "fsbench quick (nvme): 8 tests in ., 8.00 MiB file, each timed 0.1 s, median of 1"
        ),
        "{text}"
    );
    assert!(!text.contains("dsync"), "{text}");
    for bad in [
        "quick --repeat 0",
        "quick --profile ssd",
        "quick --warmup soon",
    ] {
        let out = sb.cmd(&words(bad)).assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert_eq!(err.trim().lines().count(), 1, "{bad}: {err}");
        assert!(sb.listing().is_empty(), "{bad}: {:?}", sb.listing());
    }
}

#[test]
fn cache_control_flags() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words("run --rw read --bs 64k --size 2m --drop-cache f"));
    let notes: Vec<String> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("page cache") || n.contains("evicted")),
        "{notes:?}"
    );
    let v = sb.run_json(&words(
        "run --rw randread --bs 4k --size 2m --count 100 --no-invalidate f",
    ));
    assert_eq!(v["job"]["invalidate"], false);
    assert_eq!(v["total"]["read_ops"], 100);
}

#[test]
fn mmap_engine_flushes_with_msync() {
    let sb = Sandbox::new();
    let v = sb.run_json(&words("run --rw mmapwrite --bs 4k --size 1m --fsync f"));
    assert_eq!(v["total"]["write_bytes"], 1 << 20);
    assert!(v["total"]["syscalls"]["msync"].as_u64().unwrap() >= 1);
    sb.cmd(&words("run --rw mmapread --cache direct --count 1 f"))
        .assert()
        .code(2);
}

/// `--ramp`: the warm-up runs (the wall clock shows it) but the Result holds only what came
/// after it, and says so; a bad value is one line and exit 2.
#[test]
fn the_warm_up_is_left_out_of_the_result() {
    let sb = Sandbox::new();
    let t = std::time::Instant::now();
    let v = sb.run_json(&words(
        "run --rw randread --bs 4k --size 4m --time 1s --ramp 1s f",
    ));
    let wall = t.elapsed().as_secs_f64();
    assert_eq!(v["status"], "complete");
    assert!(wall >= 2.0, "the warm-up ran: {wall} s for 1 s + 1 s");
    let e = v["total"]["elapsed_s"].as_f64().unwrap();
    assert!(
        (0.9..1.5).contains(&e),
        "elapsed {e}: the warm-up is left out"
    );
    let notes = v["notes"].to_string();
    assert!(notes.contains("warm-up"), "{notes}");
    assert_eq!(v["job"]["ramp_s"], 1.0);
    // Every counted I/O is in the histogram: the counters and histograms started together.
    let ops = v["total"]["read_ops"].as_u64().unwrap();
    assert!(ops > 100);
    let o = sb
        .cmd(&words("run --rw read --bs 4k --size 1m --ramp soon f"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// `--ramp-bytes`: each thread's first SIZE bytes moved run but are left out, exactly: a
/// count-bound or one-pass run's Result holds SIZE bytes less per thread, on the inline loop
/// and on a queue-depth loop, threads or processes; job files and sweep axes take it; a bad
/// value, one beside --ramp, or one that leaves nothing to measure is one line and exit 2.
#[test]
fn the_warm_up_by_bytes_is_left_out_exactly() {
    let sb = Sandbox::new();
    let bytes = |v: &serde_json::Value| {
        let t = &v["total"];
        ["read_bytes", "write_bytes", "trim_bytes"]
            .iter()
            .map(|k| t[k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    for (cmd, moved) in [
        (
            "run --rw write --bs 4k --count 100 --threads 2 --ramp-bytes 40k f",
            2 * 100 * 4096,
        ),
        (
            "run --rw randrw --bs 4k --size 1m --count 200 --engine null --qd 8 --ramp-bytes 100k f",
            200 * 4096,
        ),
        (
            "run --rw write --bs 64k --size 4m --threads 2 --processes per-thread --ramp-bytes 1m f",
            4 << 20,
        ),
    ] {
        let v = sb.run_json(&words(cmd));
        assert_eq!(v["status"], "complete", "{cmd}");
        let ramp = v["job"]["ramp_bytes"].as_u64().unwrap();
        let threads = v["job"]["threads"].as_u64().unwrap();
        assert_eq!(bytes(&v), moved - threads * ramp, "{cmd}");
        let notes = v["notes"].to_string();
        assert!(notes.contains("warm-up") && notes.contains("--ramp-bytes"), "{notes}");
    }
    // --time counts after a warm-up by bytes, however long it takes (here 4 GiB of 4 KiB
    // cached reads: longer than the 0.3 s measured).
    let t = std::time::Instant::now();
    let v = sb.run_json(&words(
        "run --rw randread --bs 4k --size 4m --time 0.3s --ramp-bytes 4g f",
    ));
    let wall = t.elapsed().as_secs_f64();
    let e = v["total"]["elapsed_s"].as_f64().unwrap();
    assert!((0.25..1.0).contains(&e), "elapsed {e}");
    assert!(
        v["total"]["read_ops"].as_u64().unwrap() > 100,
        "{}",
        v["total"]
    );
    assert!(wall > e + 0.3, "the warm-up ran first: {wall} s in all");
    // A job file's ramp_bytes, and a sweep axis.
    std::fs::write(
        sb.file("j.toml"),
        "access = \"write\"\nblock_size = 4096\nio_count = 50\nramp_bytes = 16384\ntargets = [\"g\"]\n",
    )
    .unwrap();
    let v = sb.run_json(&words("run j.toml"));
    assert_eq!(bytes(&v), 50 * 4096 - 16384);
    let o = sb
        .cmd(&words(
            "sweep --rw write --bs 4k --count 50 --axis ramp_bytes=0,8k --output s f",
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (name, left) in [
        ("sweep-0000-ramp_bytes-0.json", 0),
        ("sweep-0001-ramp_bytes-8k.json", 8192),
    ] {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(sb.file("s").join(name)).unwrap()).unwrap();
        assert_eq!(bytes(&v), 50 * 4096 - left, "{name}");
    }
    for bad in [
        "run --rw write --bs 4k --count 10 --ramp-bytes 4x f",
        "run --rw write --bs 4k --count 10 --ramp-bytes 4k --ramp 1s f",
        "run --rw write --bs 4k --count 10 --ramp-bytes 40k f",
    ] {
        let o = sb.cmd(&words(bad)).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("--ramp-bytes"), "{err}");
    }
}
