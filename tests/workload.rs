//! Every shipped personality (and variant) runs for about a second at tiny scale through the
//! real binary (real processes): each flowop must have done work, the JSON result must be a
//! `workload` document, and nothing the workload created may be left behind.
mod common;

use common::Sandbox;

fn tiny(name: &str) -> Vec<String> {
    let filesize = match name {
        "filemicro_rread" | "filemicro_rwrite" | "filemicro_seqread" => "2m",
        "filemicro_writefsync" => "256k",
        "oltp" => "4m",
        _ => "16k",
    };
    let mut v: Vec<String> = vec!["workload".into(), name.into()];
    for d in [
        "nfiles=60",
        "nthreads=2",
        "count=20",
        "nshadows=2",
        "ndbwriters=1",
        "ndatafiles=2",
        "logfilesize=1m",
        "usermode=1000",
        "iosize=4k",
    ] {
        v.push("-D".into());
        v.push(d.into());
    }
    v.push("-D".into());
    v.push(format!("filesize={filesize}"));
    v.extend([
        "--time".into(),
        "1s".into(),
        "--format".into(),
        "json".into(),
    ]);
    v
}

/// Whether the shipped personality sets up an event generator.
fn run_has_eventgen(name: &str) -> bool {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fsbench"))
        .args(["workload", "show", name])
        .output()
        .expect("fsbench runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.trim_start().starts_with("eventgen"))
}

fn check(name: &str) {
    let sb = Sandbox::new();
    let args = tiny(name);
    let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let r = sb.run_json(&argv);
    assert_eq!(r["kind"], "workload");
    assert_eq!(r["schema_version"], 3);
    assert_eq!(
        r["status"], "complete",
        "{name}: {}",
        r["workload"]["runs"][0]["stop_reason"]
    );
    let run = &r["workload"]["runs"][0];
    for g in r["groups"].as_array().unwrap() {
        assert_eq!(g["run"], 1);
        let (kind, f) = (g["op"].as_str().unwrap(), &g["stats"]);
        if kind == "finishoncount" || kind == "finishonbytes" {
            continue;
        }
        // Without an event generator the limit flowops return at once and are not counted
        // (Filebench's flowoplib_*limit bail out before ending an op).
        if ["opslimit", "iopslimit", "bwlimit", "eventlimit"].contains(&kind)
            && !run_has_eventgen(name)
        {
            continue;
        }
        assert!(
            f["ops"].as_u64().unwrap() > 0,
            "{name}: flowop {} did no work",
            g["name"]
        );
        if [
            "read",
            "write",
            "readwholefile",
            "writewholefile",
            "appendfile",
            "appendfilerand",
            "aiowrite",
        ]
        .contains(&kind)
        {
            let bytes = f["read_bytes"].as_u64().unwrap() + f["write_bytes"].as_u64().unwrap();
            assert!(bytes > 0, "{name}: flowop {} moved no bytes", g["name"]);
        }
        assert!(f["lat_ns"]["p99"].as_u64().unwrap() >= f["lat_ns"]["p50"].as_u64().unwrap());
    }
    assert!(run["summary"]["ops"].as_u64().unwrap() > 0);
    // One run: the Result's total is that run's IO Summary.
    assert_eq!(r["total"]["ops"], run["summary"]["ops"]);
    assert!(run["summary"]["cpu_us_per_op"].as_f64().unwrap() > 0.0);
    assert!(
        sb.listing().is_empty(),
        "{name}: left behind {:?}",
        sb.listing()
    );
}

macro_rules! personality_tests {
    ($($t:ident),*) => { $( #[test] fn $t() { check(stringify!($t)); } )* };
}

personality_tests!(
    createfiles,
    deletefiles,
    copyfiles,
    filemicro_create,
    filemicro_writefsync,
    filemicro_createrand,
    filemicro_rread,
    filemicro_rwrite,
    filemicro_seqread,
    filemicro_seqwrite,
    filemicro_seqwriterand,
    fileserver,
    varmail,
    webproxy,
    webserver,
    oltp
);

#[test]
fn variants_run_with_their_presets() {
    for (v, want) in [
        ("randwrite2ksync4thread", "2048"),
        ("large_db_oltp_8k_uncached", "8192"),
        ("seqwrite32kdsync", "32768"),
    ] {
        let sb = Sandbox::new();
        let mut args = tiny(v);
        args[1] = v.to_string();
        // The preset wins unless -D overrides it: drop our iosize override.
        let pos = args.iter().position(|a| a == "iosize=4k").unwrap();
        args.drain(pos - 1..=pos);
        let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let r = sb.run_json(&argv);
        assert_eq!(r["status"], "complete", "{v}");
        let iosize = r["workload"]["variables"]["iosize"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(iosize, want, "{v}: iosize");
        assert!(sb.listing().is_empty());
    }
}

#[test]
fn listing_names_every_personality_and_variant() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&["workload", "list"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for n in [
        "createfiles",
        "deletefiles",
        "copyfiles",
        "filemicro_create",
        "createandalloc",
        "createallocsync",
        "createallocfsync",
        "createallocappend",
        "randread2k",
        "randread2kcached",
        "randwrite2ksync",
        "randwrite2ksync4thread",
        "seqread32k",
        "seqread32kcached",
        "seqwrite32k",
        "seqwrite32kdsync",
        "seqwriterand8k",
        "fileserver",
        "varmail",
        "webproxy",
        "webserver",
        "large_db_oltp_2k_cached",
        "large_db_oltp_2k_uncached",
        "large_db_oltp_8k_cached",
        "large_db_oltp_8k_uncached",
    ] {
        assert!(text.contains(n), "missing {n}");
    }
}

#[test]
fn bad_files_fail_with_position_and_status_2() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("bad.f"), "define process name=p {\n  thread name=t {\n    flowop read name=r,iosize=4k,filesetname=nosuch\n  }\n}\nrun 1\n").unwrap();
    let out = sb
        .cmd(&["workload", "bad.f"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert!(err.contains("bad.f:3:34:"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    std::fs::write(
        sb.file("stuck.f"),
        "define process name=p { thread name=t { flowop semblock name=w,value=1 } }\nrun 1\n",
    )
    .unwrap();
    let out = sb
        .cmd(&["workload", "stuck.f"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("can never proceed"));
}

#[test]
fn psrun_prints_periodic_lines_in_process_mode_too() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("p.f"),
        "set $dir=.\ndefine file name=f,path=$dir,size=64k,prealloc\ndefine process name=p,instances=2 { thread name=t { flowop read name=r,filename=f,iosize=4k,random } }\npsrun -1 2\n",
    )
    .unwrap();
    for extra in [None, Some("--in-process")] {
        let mut args = vec!["workload", "p.f", "--format", "json"];
        args.extend(extra);
        let r = sb.run_json(&args);
        let lines = r["workload"]["runs"][0]["psrun"].as_array().unwrap();
        assert!(lines.len() >= 2, "{extra:?}: {lines:?}");
        assert!(lines[1]["ops_per_s"].as_f64().unwrap() > 0.0);
        assert_eq!(r["workload"]["runs"][0]["processes"], 2);
    }
    assert_eq!(sb.listing(), vec!["p.f".to_string()]);
}

#[test]
fn keep_then_reuse_then_remove() {
    let sb = Sandbox::new();
    let base = [
        "workload",
        "filemicro_seqread",
        "-D",
        "filesize=1m",
        "--time",
        "0.3s",
        "--format",
        "json",
    ];
    let mut keep = base.to_vec();
    keep.push("--keep");
    let r = sb.run_json(&keep);
    assert_eq!(r["workload"]["filesets"][0]["files_created"], 1);
    assert!(sb.file("seqreadfile/seqreadfile").exists());
    let r = sb.run_json(&base);
    assert_eq!(
        r["workload"]["filesets"][0]["reused"], 1,
        "the kept file is reused"
    );
    assert_eq!(r["workload"]["filesets"][0]["files_created"], 0);
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

/// One thread (two with `-D n=2`) reads a 1 MiB file 4 KiB at a time until its read flowop
/// counted `$count` ops (the first of them the open of the file, with no bytes).
const READS_F: &str = "set $dir=.
set $n=1
set $count=20
set mode quit alldone
define fileset name=fs,path=$dir,entries=1,size=1m,prealloc=100
define process name=p,instances=1 { thread name=t,instances=$n {
  flowop read name=rd,filesetname=fs,iosize=4k
  flowop finishoncount name=fin,value=$count,target=rd } }
run 60
";

/// `workload --ramp-bytes`: each thread's first SIZE bytes moved run but are left out of the
/// Result exactly (the warm-up's reads still count toward finishoncount), in worker processes
/// and in-process; `--time` starts when every thread is past its warm-up; the notes say so;
/// a bad size, one beside --ramp, or a thread that moves no data is one line and exit 2.
#[test]
fn a_workload_warm_up_by_bytes_is_left_out_exactly() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("reads.f"), READS_F).unwrap();
    let rd = |v: &serde_json::Value| {
        let g = v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "rd")
            .unwrap()
            .clone();
        (
            g["stats"]["ops"].as_u64().unwrap(),
            g["stats"]["read_bytes"].as_u64().unwrap(),
        )
    };
    // Without a warm-up: the open and 19 reads of 4 KiB per thread.
    let v = sb.run_json(&common::words("workload reads.f --format json"));
    assert_eq!(rd(&v), (20, 19 * 4096));
    for (extra, threads) in [("", 1), ("-D n=2", 2), ("-D n=2 --in-process", 2)] {
        let cmd = format!("workload reads.f --ramp-bytes 24k --format json {extra}");
        let v = sb.run_json(&common::words(&cmd));
        // The warm-up: the open and six reads of each thread; 13 reads each are left.
        assert_eq!(rd(&v), (threads * 13, threads * 13 * 4096), "{cmd}");
        let run = &v["workload"]["runs"][0];
        assert_eq!(run["summary"]["read_bytes"], threads * 13 * 4096, "{cmd}");
        let notes = v["notes"].to_string();
        assert!(
            notes.contains("warm-up")
                && notes.contains("24576 bytes")
                && notes.contains("--ramp-bytes"),
            "{notes}"
        );
    }
    // --time counts from the end of the slowest thread's warm-up: at 40 KiB/s per thread a
    // 40 KiB warm-up takes about 0.9 s, then the run measures 0.5 s.
    let t = std::time::Instant::now();
    let v = sb.run_json(&common::words(
        "workload reads.f -D n=2 -D count=100000 --rate-bytes 40k --ramp-bytes 40k --time 0.5s --format json",
    ));
    let wall = t.elapsed().as_secs_f64();
    let run = &v["workload"]["runs"][0];
    let d = run["duration_s"].as_f64().unwrap();
    assert!((0.45..1.0).contains(&d), "measured {d} s");
    assert!(wall > d + 0.8, "the warm-up ran first: {wall} s in all");
    // At most 40 KiB/s per thread over the measured part (and a step's slack): the warm-up's
    // 80 KiB are not in it.
    let bytes = run["summary"]["read_bytes"].as_u64().unwrap();
    assert!(
        bytes > 0 && bytes as f64 <= 2.0 * 40960.0 * d + 2.0 * 4096.0,
        "{bytes} bytes in {d} s"
    );
    assert_eq!(sb.listing(), vec!["reads.f".to_string()]);
    std::fs::write(
        sb.file("meta.f"),
        "set $dir=.\ndefine fileset name=fs,path=$dir,entries=4,size=4k,prealloc=100\ndefine process name=p { thread name=t { flowop statfile name=st,filesetname=fs } }\nrun 1\n",
    )
    .unwrap();
    for bad in [
        "workload reads.f --ramp-bytes 4x",
        "workload reads.f --ramp-bytes 4k --ramp 1s",
        "workload meta.f --ramp-bytes 4k",
    ] {
        let o = sb.cmd(&common::words(bad)).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("--ramp-bytes"), "{err}");
    }
}
