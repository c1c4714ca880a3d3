//! fio options that pace, judge, seed and place a job, through `fsbench fio` (and the run
//! flags behind them): `rate_min`/`rate_iops_min` with `rate_cycle` failing a run that falls
//! below them, `rate_process=poisson` spreading issue times that linear keeps even,
//! `opendir` reading every file under a directory, and the options that map or are refused
//! in one line (`flow`, `pre_read`, `fdatasync`, `fallocate`,
//! `verify_backlog`, `do_verify`, `scramble_buffers`, `randrepeat`, `fsync_on_close`).

mod common;
use common::{u, words, Sandbox};
use serde_json::Value;

/// `fsbench ARGS --format json`: exit code and Results (one object becomes a list of one).
fn results(sb: &Sandbox, args: &[&str]) -> (Option<i32>, Vec<Value>) {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--format", "json"]);
    let o = sb.cmd(&all).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stderr}"));
    let rs = match v {
        Value::Array(a) => a,
        one => vec![one],
    };
    (o.status.code(), rs)
}

/// Run expecting a refusal: exit 2, one line on stderr, returned.
fn refused(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb.cmd(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn notes(r: &Value) -> String {
    r["notes"].to_string()
}

/// fio itself on a command line: (exit success, stderr and stdout).
fn fio(sb: &Sandbox, args: &[&str]) -> (bool, String) {
    let o = std::process::Command::new("fio")
        .args(args)
        .current_dir(sb.path())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    (o.status.success(), text)
}

const PACED: &[&str] = &[
    "fio",
    "--name=paced",
    "--rw=read",
    "--bs=4k",
    "--size=1m",
    "--filename=b.dat",
    "--rate_iops=400",
    "--rate_iops_min=200",
    "--rate_cycle=500",
    "--runtime=3500ms",
    "--time_based",
];

#[test]
fn rate_min_fails_a_run_that_cannot_reach_it_and_passes_one_that_can() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("c.dat"), vec![1u8; 1 << 20]).unwrap();
    // A think time of 20 ms after every read holds the rate near 50 I/Os a second, below a
    // minimum of 100: the first judged cycle (2 s settle, then 500 ms) fails the run, well
    // before its 4 s.
    let t0 = std::time::Instant::now();
    let (code, rs) = results(
        &sb,
        &words("run c.dat --rw read --bs 4k --time 4s --think 20ms:1 --rate-iops-min 100 --rate-cycle 500ms"),
    );
    let took = t0.elapsed().as_secs_f64();
    assert_eq!(code, Some(1), "{rs:?}");
    let r = &rs[0];
    assert_eq!(r["status"], "failed", "{r}");
    let msg = r["failures"][0]["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("minimum rate not met: in cycle 1 (2.0"),
        "{msg}"
    );
    assert!(msg.contains("reads went at"), "{msg}");
    assert!(msg.contains("100.0 I/O/s (rate_iops_min"), "{msg}");
    assert!(took < 3.9, "the run went on for {took} s");
    let secs = r["total"]["elapsed_s"].as_f64().unwrap();
    assert!((2.3..3.6).contains(&secs), "{secs}");
    assert_eq!(r["job"]["rate"]["min_iops"], 100);
    assert_eq!(r["job"]["rate"]["cycle_ms"], 500);
    // At 400 a second it keeps above 200 in every cycle and completes.
    let (code, rs) = results(&sb, PACED);
    assert_eq!(code, Some(0), "{rs:?}");
    assert_eq!(rs[0]["status"], "complete", "{}", rs[0]);
    assert!(u(&rs[0]["total"]["read_ops"]) > 1000, "{}", rs[0]["total"]);

    // The byte minimum: the same think time keeps the rate near 200 KiB/s, below 1 MiB/s.
    let (code, rs) = results(
        &sb,
        &words(
            "run c.dat --rw read --bs 4k --time 4s --think 20ms:1 --rate-min 1m --rate-cycle 250ms",
        ),
    );
    assert_eq!(code, Some(1), "{rs:?}");
    let msg = rs[0]["failures"][0]["message"].as_str().unwrap();
    assert!(msg.contains("cycle 1 (2.0"), "{msg}");
    assert!(msg.contains("(rate_min, --rate-min)"), "{msg}");
    assert!(msg.contains("MiB/s"), "{msg}");
    // What the minimum needs: a positive value at most the rate, and a cycle only with a
    // minimum; fsbench fio refuses a minimum above the rate as fio does.
    for (line, want) in [
        ("run c.dat --rw read --time 1s --rate-min 0", "above zero"),
        (
            "run c.dat --rw read --time 1s --rate-cycle 1s",
            "add --rate-min",
        ),
        (
            "run c.dat --rw read --time 1s --rate-iops-min 9 --rate-cycle 0ms",
            "from 1ms",
        ),
        (
            "run c.dat --rw read --time 1s --rate-bytes 100k --rate-min 1m",
            "no cycle could keep it",
        ),
        (
            "fio --name=x --rw=read --size=64k --filename=c.dat --rate_iops=50 --rate_iops_min=200",
            "rate_iops_min=200 in [x] exceeds rate_iops=50",
        ),
    ] {
        let e = refused(&sb, &words(line));
        assert!(e.contains(want), "{line}: {e}");
    }
}

/// fio passes the same paced job, refuses the same minimum above the rate, and fails a job
/// held below the minimum by a think time.
#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn fio_fails_and_passes_the_same_minimum_rate_jobs() {
    let sb = Sandbox::new();
    let (ok, text) = fio(&sb, &PACED[1..]);
    assert!(ok, "{text}");
    // A minimum above the rate: fio refuses it before running, as fsbench does.
    let (ok, text) = fio(
        &sb,
        &words("--name=x --rw=read --size=64k --filename=c.dat --rate_iops=50 --rate_iops_min=200"),
    );
    assert!(!ok && text.contains("minimum rate exceeds rate"), "{text}");
    // A think time that holds the rate below the minimum fails fio's job as fsbench's
    // (`fsbench run --think 20ms:1`, tested above).
    let (ok, text) = fio(
        &sb,
        &words("--name=t --rw=read --bs=4k --size=1m --filename=c.dat --thinktime=20000 --rate_min=1m --rate_cycle=250 --runtime=4 --time_based"),
    );
    assert!(!ok && text.contains("not met"), "{text}");
}

/// The gaps between the submission times of a one-worker run's I/Os in a CSV trace
/// (`id,thread,op,file,offset,len,start_ns,end_ns,result`), in order.
fn issue_gaps(path: &std::path::Path) -> Vec<f64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut starts: Vec<u64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(6).unwrap().parse().unwrap())
        .collect();
    starts.sort_unstable();
    starts.windows(2).map(|w| (w[1] - w[0]) as f64).collect()
}

/// Mean gap, and the spread as the median absolute deviation over the median: about 0.69
/// for exponential gaps, near 0 for even ones, and not moved by a few stalls of a loaded
/// machine (and the catching up after them).
fn spread(g: &[f64]) -> (f64, f64) {
    let mean = g.iter().sum::<f64>() / g.len() as f64;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let mid = median(&mut g.to_vec());
    let mad = median(&mut g.iter().map(|x| (x - mid).abs()).collect());
    (mean, mad / mid)
}

#[test]
fn poisson_spreads_issue_times_that_linear_keeps_even() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("p.dat"), vec![3u8; 1 << 20]).unwrap();
    let traced = |process: &str, trace: &str| {
        let line = format!(
            "run p.dat --rw randread --bs 4k --count 400 --rate-iops 400 --rate-process {process} --seed 5 --trace {trace}"
        );
        let (code, rs) = results(&sb, &words(&line));
        assert_eq!(code, Some(0), "{rs:?}");
        (rs[0].clone(), issue_gaps(&sb.file(trace)))
    };
    let (r, linear) = traced("linear", "l.csv");
    assert!(r["job"]["rate"].get("process").is_none(), "{}", r["job"]);
    let (r, poisson) = traced("poisson", "p.csv");
    assert_eq!(r["job"]["rate"]["process"], "poisson");
    assert_eq!((linear.len(), poisson.len()), (399, 399));
    let (lm, lcv) = spread(&linear);
    let (pm, pcv) = spread(&poisson);
    // Both keep a mean gap of 2.5 ms; exponential gaps spread (about 0.69), even ones
    // hardly at all (timer jitter).
    assert!((2.0e6..3.2e6).contains(&lm), "linear mean gap {lm}");
    assert!((1.8e6..3.4e6).contains(&pm), "poisson mean gap {pm}");
    assert!(lcv < 0.2, "linear gaps spread {lcv}");
    assert!(pcv > 0.45, "poisson gaps spread {pcv}");
    // Through fsbench fio: the same schedule; without a rate it has nothing to space.
    let (code, rs) = results(
        &sb,
        &[
            "fio",
            "--name=p",
            "--rw=read",
            "--bs=4k",
            "--size=64k",
            "--filename=q.dat",
            "--rate_iops=2000",
            "--rate_process=poisson",
        ],
    );
    assert_eq!(code, Some(0), "{rs:?}");
    assert_eq!(rs[0]["job"]["rate"]["process"], "poisson");
    let (_, rs) = results(
        &sb,
        &[
            "fio",
            "--name=p",
            "--rw=read",
            "--size=64k",
            "--filename=q.dat",
            "--rate_process=poisson",
        ],
    );
    assert!(
        notes(&rs[0]).contains("has no effect without rate"),
        "{}",
        rs[0]
    );
    let e = refused(
        &sb,
        &words("run q.dat --rw read --size 64k --rate-process poisson"),
    );
    assert!(e.contains("add --rate-iops or --rate-bytes"), "{e}");
}

/// Three files in a tree (one in a subdirectory of a subdirectory) and a link to one.
fn tree(sb: &Sandbox) {
    let d = sb.file("tree");
    std::fs::create_dir_all(d.join("sub/deeper")).unwrap();
    for (name, byte) in [("a", 1u8), ("sub/b", 2), ("sub/deeper/c", 3)] {
        std::fs::write(d.join(name), vec![byte; 64 << 10]).unwrap();
    }
    std::os::unix::fs::symlink(d.join("a"), d.join("link")).unwrap();
}

#[test]
fn opendir_reads_every_file_under_the_directory() {
    let sb = Sandbox::new();
    tree(&sb);
    let (code, rs) = results(
        &sb,
        &words("fio --name=all --rw=read --bs=4k --size=192k --opendir=tree"),
    );
    assert_eq!(code, Some(0), "{rs:?}");
    let r = &rs[0];
    let mut targets: Vec<String> = r["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["target"].as_str().unwrap().to_string())
        .collect();
    targets.sort();
    assert_eq!(
        targets,
        ["tree/a", "tree/sub/b", "tree/sub/deeper/c"],
        "the link is left out"
    );
    // size is spread over the files: 64k of each, 48 reads in all.
    for user in r["users"].as_array().unwrap() {
        assert_eq!(u(&user["stats"]["read_bytes"]), 64 << 10, "{user}");
    }
    assert_eq!(u(&r["total"]["read_ops"]), 48);
    // Files fsbench did not create: written only with --force, never removed.
    let e = refused(
        &sb,
        &words("fio --name=w --rw=write --bs=4k --size=192k --opendir=tree"),
    );
    assert!(e.contains("--force"), "{e}");
    assert_eq!(
        std::fs::read(sb.file("tree/a")).unwrap(),
        vec![1u8; 64 << 10]
    );
    assert!(sb.file("tree/sub/deeper/c").exists());
    for (args, want) in [
        ("--opendir=nothere", "cannot read"),
        ("--opendir=tree/sub --nrfiles=2", "nrfiles=2"),
    ] {
        let line = format!("fio --name=x --rw=read --size=64k {args}");
        let e = refused(&sb, &words(&line));
        assert!(e.contains("[x]") && e.contains(want), "{line}: {e}");
    }
    std::fs::create_dir(sb.file("empty")).unwrap();
    let e = refused(
        &sb,
        &words("fio --name=x --rw=read --size=64k --opendir=empty"),
    );
    assert!(e.contains("no regular file"), "{e}");
}

/// fio reads the same files as often.
#[test]
#[cfg_attr(
    not(has_fio),
    ignore = "SKIPPED: fio is not installed (apt-get install fio)"
)]
fn opendir_does_fio_s_operations() {
    let sb = Sandbox::new();
    tree(&sb);
    let o = std::process::Command::new("fio")
        .args(words(
            "--name=all --rw=read --bs=4k --size=192k --opendir=tree --output-format=json",
        ))
        .current_dir(sb.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let fio_ops = u(&v["jobs"][0]["read"]["total_ios"]);
    let (_, rs) = results(
        &sb,
        &words("fio --name=all --rw=read --bs=4k --size=192k --opendir=tree"),
    );
    assert_eq!(u(&rs[0]["total"]["read_ops"]), fio_ops);
}

const BASE: &[&str] = &[
    "fio",
    "--name=x",
    "--rw=read",
    "--bs=4k",
    "--size=64k",
    "--filename=f.dat",
];

fn with(extra: &[&str]) -> Vec<String> {
    BASE.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn run_with(sb: &Sandbox, extra: &[&str]) -> Value {
    let args = with(extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, rs) = results(sb, &args);
    assert_eq!(code, Some(0), "{extra:?}: {rs:?}");
    rs[0].clone()
}

#[test]
fn refused_options_name_the_option_the_section_and_the_reason() {
    let sb = Sandbox::new();
    for (extra, want) in [
        ("--flow=1", "no cross-job token flow"),
        ("--flow_watermark=8", "no cross-job token flow"),
        ("--flow_sleep=100", "no cross-job token flow"),
        ("--pre_read=1", "no untimed read"),
        ("--rw=write --verify=crc32c --fdatasync=4", "use fsync=4"),
        ("--rw=write --fsync=4 --fdatasync=4", "keep one of them"),
        ("--rate_process=bursty", "linear or poisson"),
        (
            "--fallocate=sometimes",
            "none, native, posix, keep, truncate",
        ),
        ("--rate_cycle=0", "from 1 to 3600000"),
        ("--rate_min=1m,2m", "different values"),
        (
            "--rw=write --verify=crc32c --verify_backlog=8 --verify_backlog_batch=3",
            "only some",
        ),
    ] {
        let mut args = with(&[]);
        args.extend(extra.split(' ').map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let e = refused(&sb, &args);
        let key = extra.rsplit(' ').next().unwrap();
        let key = key.trim_start_matches("--").split('=').next().unwrap();
        assert!(e.contains(key) && e.contains("[x]"), "{extra}: {e}");
        assert!(e.contains(want), "{extra}: {e}");
    }
    // --ignore-unsupported runs without a refused option, listing it.
    let mut args = with(&["--flow=2", "--ignore-unsupported"]);
    args.push("--format".into());
    args.push("json".into());
    let o = sb
        .cmd(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("'flow' in [x] ignored"));
}

#[test]
fn accepted_options_map_as_documented() {
    let sb = Sandbox::new();
    // Their defaults, and the values that change nothing a read job does.
    for extra in [
        "--flow=0",
        "--create_on_open=0",
        "--pre_read=0",
        "--fdatasync=0",
        "--scramble_buffers=0",
        "--scramble_buffers=1",
        "--refill_buffers",
        "--zero_buffers",
        "--randrepeat=1",
        "--do_verify=1",
        "--rate_process=linear",
        "--fallocate=none",
        "--fallocate=native",
        "--fallocate=posix",
        "--fallocate=keep",
        "--fallocate=truncate",
        "--fallocate=0",
        "--fallocate=1",
    ] {
        let r = run_with(&sb, &[extra]);
        assert_eq!(r["status"], "complete", "{extra}: {r}");
        assert_eq!(u(&r["total"]["read_ops"]), 16, "{extra}");
    }
    // create_on_open=1 runs; the note says fsbench created the file before the timed run.
    let r = run_with(&sb, &["--create_on_open=1"]);
    assert_eq!(r["status"], "complete", "{r}");
    assert!(
        r["notes"].to_string().contains("create_on_open=1 in [x]"),
        "{}",
        r["notes"]
    );
    // randrepeat=1 is the fixed seed; randrepeat=0 draws one, said in the notes.
    let fixed = run_with(&sb, &["--randrepeat=1"])["job"]["seed"].clone();
    let a = run_with(&sb, &["--randrepeat=0"]);
    let b = run_with(&sb, &["--randrepeat=0"]);
    assert!(notes(&a).contains("drawn from the clock"), "{a}");
    assert_ne!(a["job"]["seed"], b["job"]["seed"]);
    assert_ne!(a["job"]["seed"], fixed);
    let c = run_with(&sb, &["--randrepeat=0", "--randseed=9"]);
    assert_eq!(c["job"]["seed"], 9);
    // A job that writes: fallocate and scramble_buffers say how fsbench's layout and data
    // differ; fsync_on_close fsyncs the file after its last write.
    let w = run_with(
        &sb,
        &[
            "--rw=write",
            "--fallocate=native",
            "--scramble_buffers=1",
            "--fsync_on_close=1",
        ],
    );
    assert!(
        notes(&w).contains("fallocate=native in [x]: fsbench does not size"),
        "{w}"
    );
    assert!(notes(&w).contains("scramble_buffers in [x]"), "{w}");
    assert_eq!(w["job"]["fsync"], true);
    assert!(
        u(&w["total"]["syscalls"]["fsync"]) >= 1,
        "{}",
        w["total"]["syscalls"]
    );
    // verify_backlog checks while the run goes; do_verify=0 checks nothing.
    let v = run_with(
        &sb,
        &[
            "--rw=write",
            "--verify=crc32c",
            "--verify_backlog=4",
            "--verify_backlog_batch=4",
        ],
    );
    assert_eq!(v["job"]["verify_backlog"], 4);
    assert!(u(&v["verify"]["backlog_blocks"]) > 0, "{}", v["verify"]);
    let n = run_with(&sb, &["--rw=write", "--verify=md5", "--do_verify=0"]);
    assert!(n["job"].get("verify").is_none(), "{}", n["job"]);
    assert!(
        notes(&n).contains("do_verify=0 in [x]: nothing is checked"),
        "{n}"
    );
    // verify_backlog without verify does nothing, as in fio, and says so.
    let q = run_with(&sb, &["--verify_backlog=4"]);
    assert!(q["job"].get("verify_backlog").is_none());
    assert!(notes(&q).contains("has no effect without verify"), "{q}");
}
