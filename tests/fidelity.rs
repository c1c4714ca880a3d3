//! The suites checked against the documents they regenerate: what each table compares, the
//! methods the documents use (`sar -d`, `tusc -c`), the sort orders they print, and what a
//! suite says about itself.

mod common;
use common::{words, Sandbox};

fn stdout_of(sb: &Sandbox, line: &str) -> String {
    let out = sb.cmd(&words(line)).assert().success().get_output().clone();
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// The random studies are time-bounded, so their policies do different amounts of work: the
/// table shows CPU µs per I/O beside CPU seconds and says why in its note. The preface names
/// the document by its title, not by a file name.
#[test]
fn random_thread_tables_compare_cpu_per_io_and_name_the_document() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("data")).unwrap();
    let out = stdout_of(
        &sb,
        "suite whitepaper --study rand-read-threads --scale 0.004 --dir data --output wp",
    );
    assert!(
        out.contains("regenerating the tables of \"VERITAS File System Performance"),
        "{out}"
    );
    assert!(!out.contains("seeds/") && !out.contains(".txt"), "{out}");
    let head = out
        .lines()
        .find(|l| l.starts_with("threads "))
        .expect("table head");
    assert!(
        head.contains("buffered CPU s") && head.contains("buffered CPU us/op"),
        "{head}"
    );
    assert!(out.contains("Time-bounded"), "{out}");
    assert!(out.contains("compare CPU us/op"), "{out}");
}

/// Each shipped suite names its document by title.
#[test]
fn every_suite_names_its_document_by_title() {
    let sb = Sandbox::new();
    let out = stdout_of(&sb, "suite list");
    for title in [
        "VERITAS File System Performance",
        "Tuning Storage Foundation",
        "Filebench: A ZFS v VxFS Shootout",
        "JFS DirectIO and Backup Performance",
    ] {
        assert!(out.contains(title), "{title}: {out}");
    }
    assert!(!out.contains(".txt"), "{out}");
}

/// A sweep gives each sequential thread at least one I/O, so a small file grows to threads x
/// block size (the mt-writes study at small scales); the table says so.
#[test]
fn a_grown_file_is_named_under_the_table() {
    let sb = Sandbox::new();
    let out = stdout_of(
        &sb,
        "sweep --rw write --size 1m --threads 1,32 --bs 64k,2m --output sw f",
    );
    assert!(
        out.contains("3 of 4 points ran on a file larger than the size setting 1m"),
        "{out}"
    );
    assert!(out.contains("largest 64m at threads=32 bs=2m"), "{out}");
    // A run outside a sweep that has more threads than I/Os in its file says so too.
    let v = sb.run_json(&words("run --rw write --bs 2m --size 2560k --threads 4 g"));
    let notes = v["notes"].to_string();
    assert!(notes.contains("threads share blocks"), "{notes}");
    assert!(notes.contains("so the run moves 8m"), "{notes}");
    assert_eq!(v["total"]["write_bytes"], 8 << 20);
}

/// The backup article's two methods: `tusc -c` (calls and time per call) always, and with
/// `--iostat` the `sar -d` columns of the device under the tree for every phase.
#[test]
fn backup_study_takes_iostat_and_times_each_call() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("data")).unwrap();
    let out = stdout_of(
        &sb,
        "suite backup --dir data --scale 0.002 --iostat 20ms --output bk",
    );
    let head = out
        .lines()
        .find(|l| l.starts_with("phase "))
        .expect("table head");
    for col in [
        "us/read call",
        "us/write call",
        "dev %busy",
        "dev avque",
        "dev r+w/s",
        "dev blks/s",
        "dev avwait ms",
        "dev avserv ms",
    ] {
        assert!(head.contains(col), "{col}: {head}");
    }
    let mut phases = 0;
    for e in std::fs::read_dir(sb.file("bk")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.starts_with("backup-") {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap();
        assert!(v["probes"]["iostat"]["samples"].is_array(), "{name}");
        assert!(v["total"]["read"]["lat_ns"]["count"].as_u64().unwrap() > 0);
        phases += 1;
    }
    assert_eq!(phases, 4);
    // Without --iostat the device columns are not shown; the per-call times are.
    let out = stdout_of(&sb, "suite backup --dir data --scale 0.002 --output bk2");
    let head = out.lines().find(|l| l.starts_with("phase ")).unwrap();
    assert!(
        head.contains("us/read call") && !head.contains("dev %busy"),
        "{head}"
    );
}

/// `fsbench iostat` prints sar's r+w/s and blks/s beside iostat's columns.
#[test]
fn iostat_prints_sar_columns() {
    let sb = Sandbox::new();
    let out = stdout_of(&sb, "iostat . 20ms 1");
    let head = out.lines().find(|l| l.contains("t_s")).expect("head");
    assert!(
        head.contains("r+w/s") && head.contains("blks/s") && head.contains("avque"),
        "{head}"
    );
}

/// The Storage Foundation chapter prints its table twice: by layout, I/O size, access, and by
/// layout, access, I/O size. `report --rows` regroups the rows in the order it names.
#[test]
fn report_rows_sets_the_sort_order() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("data")).unwrap();
    stdout_of(
        &sb,
        "suite storage-foundation --dir data --scale 0.004 --output sf",
    );
    let first_column = |out: &str| -> Vec<String> {
        out.lines()
            .skip_while(|l| !l.starts_with("---"))
            .skip(1)
            .take(16)
            .map(|l| {
                let w = words(l);
                format!("{} {}", w[0], w[1])
            })
            .collect()
    };
    let by_size = first_column(&stdout_of(&sb, "report sf --rows bs,rw --metrics mb_per_s"));
    assert_eq!(
        by_size[..5],
        [
            "8k write",
            "8k rand_write",
            "8k read",
            "8k rand_read",
            "64k write"
        ],
        "{by_size:?}"
    );
    let by_access = first_column(&stdout_of(&sb, "report sf --rows rw,bs --metrics mb_per_s"));
    assert_eq!(
        by_access[..5],
        [
            "write 8k",
            "write 64k",
            "write 512k",
            "write 1024k",
            "rand_write 8k"
        ],
        "{by_access:?}"
    );
}

/// `vx --no-invalidate` keeps the file's cached pages for a hot-cache run, as `run` does.
#[test]
fn vx_accepts_no_invalidate_for_hot_cache_runs() {
    let sb = Sandbox::new();
    let cached_before = |v: &serde_json::Value| {
        v["probes"]["page_cache"]["targets"][0]["before"]["cached_bytes"]
            .as_u64()
            .unwrap()
    };
    let line = "vx -w read -i iosize=64k,iocount=16 --keep f";
    sb.run_json(&words(line));
    let hot = sb.run_json(&words(&format!("{line} --no-invalidate")));
    assert_eq!(hot["job"]["invalidate"], false);
    assert_eq!(cached_before(&hot), 1 << 20, "the pages stayed cached");
    let cold = sb.run_json(&words(line));
    assert_eq!(cached_before(&cold), 0, "without it they are dropped first");
    std::fs::remove_file(sb.file("f")).unwrap();
}

/// A buffered run on a block device is raw I/O: the Result's job and plan say the same.
#[test]
#[cfg_attr(not(has_loop), ignore = "SKIPPED: needs root and loop devices")]
fn raw_device_run_says_raw_in_job_and_plan() {
    if !common::can_use_loop_devices() {
        common::cannot("not root or no loop devices");
    }
    let sb = Sandbox::new();
    let Some(lo) = common::LoopDevice::new(sb.path(), 8) else {
        common::cannot("losetup could not attach a loop device");
    };
    let dev = lo.dev.display().to_string();
    let v = sb.run_json(&["run", "--rw", "read", "--bs", "64k", "--count", "16", &dev]);
    assert_eq!(v["plan"]["cache"]["policy"], "raw");
    assert_eq!(v["job"]["cache"], v["plan"]["cache"], "{}", v["job"]);
}

/// A `-D` for a variable the workload never names (the shootout article's `meaniosize`)
/// changes nothing: one warning line, or with `--strict` a refusal before anything is made.
#[test]
fn unknown_workload_variable_warns_or_is_refused() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("wl")).unwrap();
    let out = sb
        .cmd(&words(
            "workload fileserver --dir wl -D meaniosize=16k -D nfiles=8 -D nthreads=1 --time 0.2s",
        ))
        .assert()
        .success()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    let warn: Vec<&str> = err.lines().filter(|l| l.contains("meaniosize")).collect();
    assert_eq!(warn.len(), 1, "{err}");
    assert!(warn[0].contains("never uses $meaniosize") && warn[0].contains("meanappendsize"));
    assert!(!err.contains("-D nfiles"), "{err}");
    let out = sb
        .cmd(&words(
            "workload fileserver --dir wl -D meaniosize=16k --strict --time 0.2s",
        ))
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("refused by --strict"), "{err}");
    assert!(std::fs::read_dir(sb.file("wl")).unwrap().next().is_none());
}

/// `advise` accounts for all 26 vxtunefs parameters of the Storage Foundation chapter: the
/// derived ones (pref_strength among them: 10 without a stripe) and the rest as not
/// applicable on Linux, each with its reason.
#[test]
fn advise_derives_pref_strength_and_names_the_rest() {
    let sb = Sandbox::new();
    let out = stdout_of(&sb, "advise .");
    let value = |name: &str| -> Option<String> {
        out.lines()
            .find(|l| l.starts_with(&format!("{name} = ")))
            .map(|l| words(l)[2].to_string())
    };
    assert_eq!(value("pref_strength").as_deref(), Some("10"), "{out}");
    let derived = [
        "read_pref_io",
        "read_nstream",
        "read_unit_io",
        "write_pref_io",
        "write_nstream",
        "write_unit_io",
        "pref_strength",
        "discovered_direct_iosz",
        "max_direct_iosz",
        "max_diskq",
    ];
    let not_applicable: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("Not applicable on Linux"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| words(l)[0])
        .collect();
    assert_eq!(not_applicable.len(), 16, "{out}");
    assert!(not_applicable.contains(&"write_throttle") && not_applicable.contains(&"oltp_load"));
    assert!(derived.iter().all(|d| value(d).is_some()), "{out}");
    assert_eq!(derived.len() + not_applicable.len(), 26);
    let json = sb
        .cmd(&words("advise . --format json"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["not_applicable"].as_array().unwrap().len(), 16);
    assert!(v["not_applicable"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("Linux"));
}

/// The shootout's oltp `filesize` is the whole database, shared by its data files (5g at the
/// article's scale), not the size of each of the 10 files; a fileset takes `totalsize` for it.
#[test]
fn oltp_filesize_is_the_whole_database() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("wl")).unwrap();
    let v = sb.run_json(&words(
        "workload oltp --dir wl -D filesize=10m -D logfilesize=1m -D nshadows=2 -D ndbwriters=1 --time 0.3s --in-process",
    ));
    let sets = v["workload"]["filesets"].as_array().unwrap();
    let data = sets.iter().find(|f| f["name"] == "datafiles").unwrap();
    assert_eq!(data["entries"], 10);
    assert_eq!(data["bytes_written"], 10 << 20, "10 files of 1 MiB: {data}");
    // Each entry's size and totalsize together are refused in one line.
    std::fs::write(
        sb.file("both.f"),
        "define fileset name=f,path=wl,entries=2,size=1m,totalsize=2m\ndefine process name=p\n{\n thread name=t\n {\n  flowop openfile name=o,filesetname=f,fd=1\n  flowop closefile name=c,fd=1\n }\n}\nrun 1\n",
    )
    .unwrap();
    let out = sb
        .cmd(&words("workload both.f --time 0.1s"))
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not both"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
