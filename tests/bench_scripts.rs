//! The helpers of `bench/` that turn peer comparisons into quoted figures: the pooling of
//! `bench/vs-ior.sh` printouts (`bench/vs_ior_summary.py`), the scripts' refusals, and the
//! tabulations of `bench/vs-filebench.sh` and `bench/vs-io500.sh` on fixed logs. A ratio
//! in docs/performance.md comes from these, so a pooling that mixed storage, transfer sizes or cache modes,
//! or quoted a case whose bytes differed, would put a wrong number there.

mod common;

use common::Sandbox;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bench(script: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("bench")
        .join(script)
}

/// One printout: the conditions line (None: a printout from before the script wrote one),
/// then pair lines `layout np phase pair ior_bytes fsbench_bytes ior fsbench ratio`, write
/// lines followed by the two files' extents as the script prints them.
fn printout(
    sb: &Sandbox,
    name: &str,
    header: Option<&str>,
    pairs: &[(&str, &str, f64, bool)],
) -> PathBuf {
    let mut text = String::new();
    if let Some(h) = header {
        text.push_str(h);
        text.push('\n');
    }
    text.push_str("layout np phase pair ior_bytes fsbench_bytes ior_MiB/s fsbench_MiB/s ratio\n");
    for (i, (layout, phase, ratio, differ)) in pairs.iter().enumerate() {
        let fb = if *differ { 1000 } else { 2048 };
        text.push_str(&format!(
            "{layout} 2 {phase} {} 2048 {fb} 100.0 {:.1} {ratio:.2}{}{}\n",
            i + 1,
            100.0 * ratio,
            if *phase == "write" {
                "  extents 1/35329"
            } else {
                ""
            },
            if *differ { "  BYTES DIFFER" } else { "" }
        ));
    }
    let p = sb.file(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn summary(files: &[&Path]) -> std::process::Output {
    Command::new("python3")
        .arg(bench("vs_ior_summary.py"))
        .args(files)
        .output()
        .expect("python3 runs")
}

/// The fields after `storage` of the summary row that starts with `storage` and whose fields
/// hold the words of `case` one after another (however wide the columns are printed).
fn row<'a>(out: &'a str, storage: &str, case: &str) -> Vec<&'a str> {
    let words: Vec<&str> = case.split_whitespace().collect();
    out.lines()
        .filter_map(|l| l.strip_prefix(storage))
        .map(|rest| rest.split_whitespace().collect::<Vec<_>>())
        .find(|fields| fields.windows(words.len()).any(|w| w == &words[..]))
        .unwrap_or_else(|| panic!("no row for {storage} {case} in:\n{out}"))
}

#[test]
#[cfg_attr(not(has_python3), ignore = "SKIPPED: needs python3")]
fn pooling_keeps_every_condition_apart_and_gives_no_ratio_where_bytes_differed() {
    let sb = Sandbox::new();
    // The first from before the script wrote the cache mode and whether the timed writes made
    // new files (every such run was buffered and did).
    let zram = "# vs-ior: transfer 4k, 128 MiB per rank, np 2, 2 pair(s), dir /mnt/zx, storage /dev/zram0 xfs, ior read fill r, 2026-11-27 01:41 UTC";
    let zram_buffered = "# vs-ior: transfer 4k, 128 MiB per rank, np 2, 1 pair(s), dir /mnt/zx, storage /dev/zram0 xfs, cache buffered, writes new, ior data r, 2026-11-27 04:00 UTC";
    let zram_direct = "# vs-ior: transfer 4k, 128 MiB per rank, np 2, 1 pair(s), dir /mnt/zx, storage /dev/zram0 xfs, cache direct, writes new, ior data r, 2026-11-27 04:10 UTC";
    let zram_bigger = "# vs-ior: transfer 4k, 512 MiB per rank, np 2, 1 pair(s), dir /mnt/zx, storage /dev/zram0 xfs, cache buffered, writes new, ior data r, 2026-11-27 04:05 UTC";
    let zram_direct_over = "# vs-ior: transfer 4k, 128 MiB per rank, np 2, 1 pair(s), dir /mnt/zx, storage /dev/zram0 xfs, cache direct, writes overwrite, ior data r, 2026-11-27 04:37 UTC";
    let disk = "# vs-ior: transfer 4k, 128 MiB per rank, np 2, 1 pair(s), dir /var/tmp, storage /dev/vda ext4, ior read fill default, 2026-11-27 02:00 UTC";
    let big = "# vs-ior: transfer 1m, 128 MiB per rank, np 2, 1 pair(s), dir /mnt/zx, storage /dev/zram0 xfs, ior read fill r, 2026-11-27 03:00 UTC";
    let a = printout(
        &sb,
        "a.txt",
        Some(zram),
        &[
            ("shared_segmented", "read", 1.10, false),
            ("shared_segmented", "read", 1.20, false),
            ("file_per_rank", "write", 1.00, true),
        ],
    );
    // One pair of shared segmented reads per printout.
    let one = |name: &str, header: Option<&str>, ratio: f64| {
        printout(
            &sb,
            name,
            header,
            &[("shared_segmented", "read", ratio, false)],
        )
    };
    // A later run on the same storage, transfer and cache mode: pooled with the first.
    let b = one("b.txt", Some(zram_buffered), 1.30);
    // The same case on other storage, with another transfer size or data per rank, bypassing
    // the cache or overwriting: rows of their own.
    let c = one("c.txt", Some(disk), 0.50);
    let d = one("d.txt", Some(big), 0.25);
    let f = one("f.txt", Some(zram_direct), 4.00);
    let g = one("g.txt", Some(zram_direct_over), 3.00);
    let h = one("h.txt", Some(zram_bigger), 0.75);
    // A printout from before the conditions line: storage and transfer unknown.
    let e = one("e.txt", None, 2.00);
    // Since the `# reads:` line both tools read each rank's own data on one host; before it
    // fsbench read the next rank's and IOR its own ("mixed"). Reads under the two never pool;
    // writes, the same before and after, do (as "-").
    let i = printout(
        &sb,
        "i.txt",
        Some(&format!(
            "{zram_direct_over}\n# reads: own (np 2 on 1 host(s))"
        )),
        &[
            ("shared_segmented", "read", 5.00, false),
            ("shared_segmented", "write", 1.50, false),
        ],
    );
    let j = printout(
        &sb,
        "j.txt",
        Some(zram_direct_over),
        &[("shared_segmented", "write", 1.10, false)],
    );

    let out = summary(&[&a, &b, &c, &d, &e, &f, &g, &h, &i, &j]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();

    // storage xfer /rank cache writes reads layout np phase pairs median geomean min..max CI,
    // then over the pairs where fsbench went first: geomean, CI (none for one pair), pairs
    let pooled = row(
        &text,
        "/dev/zram0 xfs",
        "4k 128m buffered new mixed shared_segmented",
    );
    let head = [
        "4k",
        "128m",
        "buffered",
        "new",
        "mixed",
        "shared_segmented",
        "2",
        "read",
        "3",
    ];
    assert_eq!(&pooled[..9], &head, "{text}");
    assert_eq!(pooled[9], "1.20", "median of 1.10, 1.20, 1.30: {text}");
    // exp(mean(ln 1.1, ln 1.2, ln 1.3)) = 1.197
    assert_eq!(pooled[10], "1.20", "{text}");
    assert_eq!(pooled[11], "1.10..1.30", "{text}");
    // Only pair 2 of a.txt had fsbench first (IOR goes first in odd pairs): one pair, 1.20.
    assert_eq!(&pooled[13..], &["1.20", "1"], "{text}");

    // Single-pair cases, each in a row of its own: (storage, what the row names, its fields
    // from the transfer size to the geometric mean).
    for (storage, case, want) in [
        (
            "/dev/vda ext4",
            "shared_segmented",
            "4k 128m buffered new mixed shared_segmented 2 read 1 0.50",
        ),
        (
            "/dev/zram0 xfs",
            "1m 128m buffered new",
            "1m 128m buffered new mixed shared_segmented 2 read 1 0.25",
        ),
        (
            "/dev/zram0 xfs",
            "4k 512m buffered new",
            "4k 512m buffered new mixed shared_segmented 2 read 1 0.75",
        ),
        (
            "/dev/zram0 xfs",
            "4k 128m direct new",
            "4k 128m direct new mixed shared_segmented 2 read 1 4.00",
        ),
        (
            "/dev/zram0 xfs",
            "4k 128m direct overwrite mixed",
            "4k 128m direct overwrite mixed shared_segmented 2 read 1 3.00",
        ),
        (
            "/dev/zram0 xfs",
            "4k 128m direct overwrite own",
            "4k 128m direct overwrite own shared_segmented 2 read 1 5.00",
        ),
        (
            "/dev/zram0 xfs",
            "direct overwrite - shared_segmented 2 write",
            "4k 128m direct overwrite - shared_segmented 2 write 2 1.30",
        ),
        (
            "?",
            "shared_segmented",
            "? ? buffered new mixed shared_segmented 2 read 1 2.00",
        ),
    ] {
        let want: Vec<&str> = want.split(' ').collect();
        assert_eq!(
            &row(&text, storage, case)[..10],
            &want[..],
            "{storage}: {text}"
        );
    }

    let differed = text
        .lines()
        .find(|l| l.contains("file_per_rank"))
        .expect("a row for the case whose bytes differed");
    assert!(differed.contains("bytes differ: no ratio"), "{differed}");
    assert!(
        !differed.contains("1.00"),
        "a ratio was quoted for unequal work: {differed}"
    );
}

#[test]
#[cfg_attr(not(has_python3), ignore = "SKIPPED: needs python3")]
fn pooling_nothing_says_so_in_one_line_and_fails() {
    let sb = Sandbox::new();
    let empty = sb.file("empty.txt");
    std::fs::write(&empty, "# vs-ior: transfer 4k, 1 MiB per rank\n").unwrap();
    let out = summary(&[&empty]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no pair lines"), "{err}");
}

/// `bench/vs-ior.sh` with `env` set: exit status 2 and one line naming `want` and the value,
/// before anything is created in the directory to measure.
fn vs_ior_refuses(env: (&str, &str), want: &str) {
    let sb = Sandbox::new();
    let out = Command::new("bash")
        .arg(bench("vs-ior.sh"))
        .args(["/nonexistent/ior", sb.path().to_str().unwrap(), "16", "2"])
        .env(env.0, env.1)
        .env("TRANSFER", "4k")
        .output()
        .expect("bash runs");
    assert_eq!(out.status.code(), Some(2), "{}={}", env.0, env.1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(want) && err.contains(env.1), "{err}");
    assert!(sb.listing().is_empty(), "created {:?}", sb.listing());
}

#[test]
fn vs_ior_refuses_ior_data_that_would_compress_before_creating_anything() {
    for data in ["t", "i", "random", "x"] {
        vs_ior_refuses(("IOR_DATA", data), "IOR_DATA must be r");
    }
}

#[test]
fn vs_ior_refuses_a_cache_mode_it_cannot_give_both_tools() {
    for cache in ["dsync", "Direct", "raw", "o_direct"] {
        vs_ior_refuses(("CACHE", cache), "CACHE must be buffered or direct");
    }
}

#[test]
fn vs_ior_refuses_an_fsbench_front_end_it_does_not_know() {
    for cli in ["fio", "IOR", "vx", "runn"] {
        vs_ior_refuses(("FSBENCH_CLI", cli), "FSBENCH_CLI must be run");
    }
}

#[test]
fn vs_ior_refuses_an_overwrite_switch_it_does_not_know() {
    for over in ["yes", "2", "true", "-1"] {
        vs_ior_refuses(
            ("OVERWRITE", over),
            "OVERWRITE must be 1 (the timed write overwrites",
        );
    }
}

#[test]
#[cfg_attr(not(has_python3), ignore = "SKIPPED: needs python3")]
fn pooling_two_printouts_in_one_file_reads_each_ones_own_conditions() {
    // A new printout (with its `# reads: own` line) followed in the same file by one from
    // before that line: the second's reads are "mixed", not the first's "own".
    let sb = Sandbox::new();
    let over = "# vs-ior: transfer 4k, 128 MiB per rank, np 2, 1 pair(s), dir /mnt/zx, storage /dev/zram0 xfs, cache direct, writes overwrite, ior data r, 2026-11-27 04:37 UTC";
    let new = printout(
        &sb,
        "new.txt",
        Some(&format!("{over}\n# reads: own (np 2 on 1 host(s))")),
        &[("shared_segmented", "read", 5.00, false)],
    );
    let old = printout(
        &sb,
        "old.txt",
        Some(over),
        &[("shared_segmented", "read", 3.00, false)],
    );
    let both = sb.file("both.txt");
    std::fs::write(
        &both,
        std::fs::read_to_string(&new).unwrap() + &std::fs::read_to_string(&old).unwrap(),
    )
    .unwrap();
    let out = summary(&[&both]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for (reads, ratio) in [("own", "5.00"), ("mixed", "3.00")] {
        let r = row(
            &text,
            "/dev/zram0 xfs",
            &format!("overwrite {reads} shared_segmented 2 read"),
        );
        assert_eq!(
            &r[..10],
            &[
                "4k",
                "128m",
                "direct",
                "overwrite",
                reads,
                "shared_segmented",
                "2",
                "read",
                "1",
                ratio
            ],
            "{text}"
        );
    }
}

// ---- bench/pairs.py: the one method of every comparison script ---------------------------

/// One pair for `bench/pairs.py report`: case, pair number, A's and B's value and work.
fn pair(case: &str, n: u32, a: (f64, &str), b: (f64, &str)) -> String {
    format!(
        r#"{{"case": "{case}", "pair": {n}, "first": "{}", "a": {{"value": {}, "work": {}}}, "b": {{"value": {}, "work": {}}}}}"#,
        if n % 2 == 1 { "a" } else { "b" },
        a.0,
        a.1,
        b.0,
        b.1
    )
}

/// Run `cmd` (a python3 helper of bench/), which must succeed: its standard output.
fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.output().expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// `python3 bench/pairs.py ARGS`: (exit status, stdout).
fn pairs_py(args: &[&str]) -> (i32, String) {
    let out = Command::new("python3")
        .arg(bench("pairs.py"))
        .args(args)
        .output()
        .expect("python3 runs");
    (
        out.status.code().expect("exit status"),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

/// `bench/pairs.py report` on `lines` (one JSON pair a line), A = fsbench, B = filebench.
fn pairs_report(lines: &[String]) -> String {
    let sb = Sandbox::new();
    let file = sb.file("pairs.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let (code, out) = pairs_py(&[
        "report",
        file.to_str().unwrap(),
        "--a",
        "fsbench",
        "--b",
        "filebench",
        "--metric",
        "ops/s",
    ]);
    assert_eq!(code, 0, "{out}");
    out
}

/// The line `report` printed for `case`.
fn case_line<'a>(out: &'a str, case: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(&format!("{case}: ")))
        .unwrap_or_else(|| panic!("no line for {case} in:\n{out}"))
}

#[test]
#[cfg_attr(not(has_python3), ignore = "SKIPPED: needs python3")]
fn pairs_a_flowop_one_side_did_not_report_is_different_work_and_no_ratio() {
    let both = r#"{"flowop read1: bytes/op": 8192, "flowop write1: bytes/op": 4096}"#;
    let no_write = r#"{"flowop read1: bytes/op": 8192}"#;
    // Six pairs, fsbench twice as fast in all of them; in pair 4 fsbench reported no write1.
    let lines: Vec<String> = (1..=6)
        .map(|n| {
            let a = if n == 4 { no_write } else { both };
            pair("fileserver", n, (200.0, a), (100.0, both))
        })
        .collect();
    let out = pairs_report(&lines);
    let l = case_line(&out, "fileserver");
    assert!(l.contains("DIFFERENT WORK, no ratio"), "{l}");
    assert!(
        l.contains("pair 4: flowop write1: bytes/op: only filebench did it"),
        "{l}"
    );
    // No figure at all for it: neither the ratio (2.000) nor a median or verdict.
    for figure in ["2.0", "median", "parity", "above"] {
        assert!(
            !l.contains(figure),
            "{figure} printed for different work: {l}"
        );
    }
    // A value outside the range the other side's rounding allows (by more than the
    // tolerance) is different work too; inside it, the same.
    let rounded = |lo: u32, hi: u32| format!(r#"{{"bytes/op": [{lo}, {hi}]}}"#);
    let exact = r#"{"bytes/op": 4096}"#;
    let lines: Vec<String> = (1..=6)
        .map(|n| pair("inside", n, (100.0, exact), (100.0, &rounded(4000, 4100))))
        .chain((1..=6).map(|n| pair("outside", n, (100.0, exact), (100.0, &rounded(3000, 3100)))))
        .collect();
    let out = pairs_report(&lines);
    assert!(!case_line(&out, "inside").contains("DIFFERENT"), "{out}");
    assert!(
        case_line(&out, "outside").contains("DIFFERENT WORK"),
        "{out}"
    );
}

#[test]
#[cfg_attr(not(has_python3), ignore = "SKIPPED: needs python3")]
fn pairs_an_interval_straddling_one_is_parity_and_one_above_it_is_not() {
    let work = r#"{"read bytes": 4096}"#;
    let ratios = |case: &str, rs: &[f64]| -> Vec<String> {
        rs.iter()
            .enumerate()
            .map(|(i, r)| pair(case, i as u32 + 1, (100.0 * r, work), (100.0, work)))
            .collect()
    };
    let mut lines = ratios("even", &[0.98, 1.01, 0.99, 1.02, 1.00, 1.03]);
    lines.extend(ratios(
        "faster",
        &[1.10, 1.20, 1.15, 1.12, 1.18, 1.11, 1.16],
    ));
    lines.extend(ratios("few", &[1.10, 1.20, 1.15, 1.12, 1.18]));
    let out = pairs_report(&lines);
    // Six pairs: the 95 % interval of the median is [min, max]; it straddles 1.0.
    assert_eq!(
        case_line(&out, "even"),
        "even: ops/s fsbench/filebench median 1.005, 95 % interval 0.980..1.030, 6 pairs \
         (3 with fsbench first): parity (the interval straddles 1.0)"
    );
    let faster = case_line(&out, "faster");
    assert!(
        faster.contains("median 1.150, 95 % interval 1.100..1.200, 7 pairs"),
        "{faster}"
    );
    assert!(faster.ends_with(": above 1.0"), "{faster}");
    assert!(!faster.contains("parity"), "{faster}");
    // Five pairs have no 95 % interval of their median: a median, but no verdict.
    let few = case_line(&out, "few");
    assert!(
        few.contains("median 1.150, 95 % interval n/a, 5 pairs"),
        "{few}"
    );
    assert!(few.contains("no verdict"), "{few}");
    assert!(!few.contains("parity") && !few.contains("above"), "{few}");
}

#[test]
#[cfg_attr(not(has_python3), ignore = "SKIPPED: needs python3")]
fn pairs_alternate_which_side_goes_first() {
    let order: Vec<String> = (1..=4)
        .map(|n| pairs_py(&["first", &n.to_string(), "fsbench", "ior"]).1)
        .collect();
    assert_eq!(
        order,
        [
            "fsbench ior\n",
            "ior fsbench\n",
            "fsbench ior\n",
            "ior fsbench\n"
        ]
    );
}

/// vs-filebench.sh's tabulation (the Python part of the script, run on fixed logs): a
/// flowop Filebench reported and fsbench did not makes the workload DIFFERENT WORK with no
/// ratio; Filebench's rounded mb/s of a slow flowop is a range, not a skip.
#[test]
#[cfg_attr(not(has_python3), ignore = "SKIPPED: needs python3")]
fn vs_filebench_gives_no_ratio_when_a_flowop_is_missing_on_one_side() {
    let script = std::fs::read_to_string(bench("vs-filebench.sh")).unwrap();
    let start = script
        .lines()
        .position(|l| l.starts_with("BENCH_DIR=") && l.ends_with("<<'EOF'"))
        .expect("the tabulation heredoc");
    let body: Vec<&str> = script
        .lines()
        .skip(start + 1)
        .take_while(|l| *l != "EOF")
        .collect();
    let sb = Sandbox::new();
    std::fs::write(sb.file("tab.py"), body.join("\n")).unwrap();
    let run = |fs_flowops: &[&str]| -> String {
        for r in 1..=6 {
            let groups: Vec<String> = fs_flowops
                .iter()
                .map(|n| {
                    let bytes = if *n == "read1" { 8192 * 5000 } else { 0 };
                    format!(
                        r#"{{"name": "{n}", "run": 1, "stats": {{"ops": 5000, "bytes": {bytes}, "lat_ns": {{"mean": 2000000.0}}}}}}"#
                    )
                })
                .collect();
            std::fs::write(
                sb.file(&format!("w.fs.{r}.json")),
                format!(
                    r#"{{"workload": {{"runs": [{{"duration_s": 10.0, "started_unix_s": 0,
                        "summary": {{"ops": 10000, "bytes": 40960000}}}}]}}, "groups": [{}]}}"#,
                    groups.join(",")
                ),
            )
            .unwrap();
            std::fs::write(
                sb.file(&format!("w.fb.{r}.log")),
                format!(
                    "  read1   5000ops  500ops/s  3.9mb/s  1.0ms/op\n\
                     \x20 write1   5000ops  500ops/s  0.0mb/s  1.0ms/op\n\
                     12.3: IO Summary: 10000 ops {}.0 ops/s 500/500 rd/wr   3.9mb/s 1.0ms/op\n",
                    990 + r * 4
                ),
            )
            .unwrap();
        }
        stdout_of(
            Command::new("python3")
                .arg(sb.file("tab.py"))
                .args([sb.path().to_str().unwrap(), "6", "w"])
                .env("BENCH_DIR", bench("")),
        )
    };
    let same = run(&["read1", "write1"]);
    let verdict = same
        .lines()
        .find(|l| l.starts_with("  => w: "))
        .unwrap_or_else(|| panic!("{same}"));
    assert!(
        verdict.contains("ops/s fsbench/filebench median") && verdict.contains("6 pairs"),
        "{same}"
    );
    // Each flowop's mean ms per op for both tools: fsbench's from its latency, Filebench's
    // as it printed it.
    let read = same
        .lines()
        .find(|l| l.trim_start().starts_with("read1 "))
        .unwrap_or_else(|| panic!("{same}"));
    assert!(read.trim_end().ends_with("2.000    1.000"), "{read}");
    let missing = run(&["read1"]);
    let verdict = missing
        .lines()
        .find(|l| l.starts_with("  => w: "))
        .unwrap_or_else(|| panic!("{missing}"));
    assert!(verdict.contains("DIFFERENT WORK, no ratio"), "{missing}");
    assert!(
        verdict.contains("flowop write1: bytes/op: only filebench did it"),
        "{missing}"
    );
    assert!(!verdict.contains("median"), "{missing}");
}

/// vs-filebench.sh refuses a FRESH_FS it cannot make, and a directory it would mount over
/// that is not empty, in one line and before running anything.
#[test]
fn vs_filebench_refuses_a_fresh_file_system_it_cannot_make_safely() {
    let sb = Sandbox::new();
    let dir = sb.file("dir");
    std::fs::create_dir(&dir).unwrap();
    let refuse = |fresh: &str| -> (i32, String) {
        let out = Command::new("bash")
            .arg(bench("vs-filebench.sh"))
            .arg(&dir)
            .env("FILEBENCH", "/bin/true")
            .env("FILEBENCH_WORKLOADS", sb.path())
            .env("FSBENCH", "/bin/true")
            .env("OUT", sb.file("out"))
            .env("FRESH_FS", fresh)
            .output()
            .expect("bash runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, err) = refuse("zfs");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("FRESH_FS=zfs: accepted are ext4 and xfs"),
        "{err}"
    );
    std::fs::write(dir.join("precious"), b"x").unwrap();
    let (code, err) = refuse("ext4");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("must be an empty directory"), "{err}");
    assert_eq!(std::fs::read(dir.join("precious")).unwrap(), b"x");
}

/// Reads per null run: enough for the CPU time of fsbench's run (about 35 ns each) to span
/// several scheduler ticks, which is what per-thread CPU accounting counts in; fewer, and a
/// run may measure 0 CPU seconds, which the script rightly calls nothing measured.
const NULL_OPS: u64 = 3_000_000;

/// `bench/vs-fio-null.sh` with a stand-in `fio` on PATH that reports `fio_ops` read I/Os of
/// 4 KiB in 100 ms: (exit status, stdout). fsbench is the real binary (a short null run).
fn vs_fio_null(fio_ops: u64) -> (i32, String) {
    let sb = Sandbox::new();
    let fake = sb.file("fio");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho 'fio-3.33 stand-in'\necho '{{\"jobs\": [{{\"usr_cpu\": 50.0, \"sys_cpu\": 0.0, \"read\": {{\"total_ios\": {fio_ops}, \"io_bytes\": {}, \"runtime\": 100}}}}]}}'\n",
            fio_ops * 4096
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", sb.path().display(), std::env::var("PATH").unwrap());
    let out = Command::new("bash")
        .arg(bench("vs-fio-null.sh"))
        .args(["6", &NULL_OPS.to_string(), "4k"])
        .env("PATH", path)
        .env("FSBENCH", env!("CARGO_BIN_EXE_fsbench"))
        .env_remove("PIN")
        .output()
        .expect("bash runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// vs-fio-null.sh compares the work before the speed: the same op count gives the two
/// medians (pairs alternating which tool goes first); a fio that did one op fewer gives
/// DIFFERENT WORK and no ratio.
#[test]
#[cfg_attr(not(has_python3), ignore = "SKIPPED: needs python3")]
fn vs_fio_null_compares_the_work_before_the_speed() {
    let (code, out) = vs_fio_null(NULL_OPS);
    assert_eq!(code, 0, "{out}");
    let firsts: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() == 6 && w[0].parse::<u32>().is_ok())
        .map(|w| w[1])
        .collect();
    assert_eq!(
        firsts,
        ["fsbench", "fio", "fsbench", "fio", "fsbench", "fio"],
        "{out}"
    );
    assert!(
        out.contains("null randread: ns/op fio/fsbench median"),
        "{out}"
    );
    assert!(
        out.contains("null randread: ops per CPU second fsbench/fio median"),
        "{out}"
    );
    assert!(!out.contains("DIFFERENT WORK"), "{out}");
    // A fio that did fewer reads (the script prints counts to 4 significant digits).
    let (code, out) = vs_fio_null(2_900_000);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("DIFFERENT WORK, no ratio"), "{out}");
    assert!(
        out.contains("read ops: fio 2.9e+06, fsbench 3e+06"),
        "{out}"
    );
    assert!(!out.contains("median"), "{out}");
}

// ---- bench/vs-mdtest.sh ------------------------------------------------------------------

/// `bench/vs-mdtest.sh` on `-n 30 -F` with a stand-in mdtest that says it was set to do
/// `items` files and prints mdtest's summary rows: (exit status, output). fsbench is the
/// real binary.
fn vs_mdtest(items: u64) -> (i32, String) {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("work")).unwrap();
    let fake = sb.file("mdtest");
    let mut script = format!("#!/bin/sh\necho '1 tasks, {items} files'\n");
    script.push_str("echo 'SUMMARY rate (in ops/sec): (of 1 iterations)'\n");
    for phase in [
        "File creation",
        "File stat",
        "File read",
        "File removal",
        "Tree creation",
        "Tree removal",
    ] {
        script.push_str(&format!(
            "echo '   {phase:<22} 1000.000 1000.000 1000.000 0.000'\n"
        ));
    }
    std::fs::write(&fake, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("bash")
        .arg(bench("vs-mdtest.sh"))
        .args([sb.file("work").to_str().unwrap(), "2"])
        .env("MDTEST", &fake)
        .env("MPIRUN", "env")
        .env("ARGS", "-n 30 -F")
        .env("OUT", sb.file("logs"))
        .env("FSBENCH", env!("CARGO_BIN_EXE_fsbench"))
        .output()
        .expect("bash runs");
    assert!(
        std::fs::read_dir(sb.file("work")).unwrap().next().is_none(),
        "the script left files in its directory"
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// vs-mdtest.sh compares each phase's work before its rate: the same counts give a ratio
/// per phase, an mdtest set to other counts gives DIFFERENT WORK for its item phases.
#[test]
#[cfg_attr(not(has_python3), ignore = "SKIPPED: needs python3")]
fn vs_mdtest_compares_each_phase_s_work_before_its_rate() {
    let (code, out) = vs_mdtest(30);
    assert_eq!(code, 0, "{out}");
    for phase in ["File creation", "File stat", "File read", "Tree removal"] {
        assert!(
            out.contains(&format!("{phase}: ops/s fsbench/mdtest median")),
            "{phase}: {out}"
        );
    }
    assert!(!out.contains("DIFFERENT WORK"), "{out}");
    let (code, out) = vs_mdtest(31);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "File stat: DIFFERENT WORK, no ratio (2 pairs): pair 1: ops: fsbench 30, mdtest 31"
        ),
        "{out}"
    );
    assert!(out.contains("Tree creation: ops/s"), "{out}");
}

/// Pairs measured through `fsbench ior` (FSBENCH_CLI=ior) pool apart from those of `fsbench
/// run` under the same conditions: the layout is shown with the front end that ran.
#[test]
#[cfg_attr(not(has_python3), ignore = "SKIPPED: needs python3")]
fn pooling_keeps_fsbench_ior_apart_from_fsbench_run() {
    let sb = Sandbox::new();
    let head = "# vs-ior: transfer 4k, 128 MiB per rank, np 2, 1 pair(s), dir /mnt/zx, storage /dev/zram0 xfs, cache direct, writes new, ior data r";
    let run = printout(
        &sb,
        "run.txt",
        Some(&format!("{head}, fsbench run, 2026-11-28 04:37 UTC")),
        &[("file_per_rank", "write", 2.00, false)],
    );
    let ior = printout(
        &sb,
        "ior.txt",
        Some(&format!("{head}, fsbench ior, 2026-11-28 04:47 UTC")),
        &[("file_per_rank", "write", 4.00, false)],
    );
    let out = summary(&[&run, &ior]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let r = row(&text, "/dev/zram0 xfs", "file_per_rank 2 write");
    assert_eq!(r[8..10], ["1", "2.00"], "{text}");
    let r = row(&text, "/dev/zram0 xfs", "file_per_rank(ior) 2 write");
    assert_eq!(r[8..10], ["1", "4.00"], "{text}");
}

/// vs-io500.sh's tabulation (the Python part of the script, run on fixed logs): a phase whose
/// bytes (IOR's results line) or items (mdtest's `N tasks, M files`) equal fsbench's gets the
/// ratio of the rates over the same window (IOR's bytes over its wr/rd time); a phase whose
/// peer reports other work is DIFFERENT WORK with no ratio; find is not compared.
#[test]
#[cfg_attr(not(has_python3), ignore = "SKIPPED: needs python3")]
fn vs_io500_compares_a_phase_only_when_both_did_its_work() {
    let script = std::fs::read_to_string(bench("vs-io500.sh")).unwrap();
    let start = script
        .lines()
        .position(|l| l.starts_with("BENCH_DIR=") && l.ends_with("<<'EOF'"))
        .expect("the tabulation heredoc");
    let body: Vec<&str> = script
        .lines()
        .skip(start + 1)
        .take_while(|l| *l != "EOF")
        .collect();
    let sb = Sandbox::new();
    std::fs::write(sb.file("tab.py"), body.join("\n")).unwrap();
    let run = |md_items: u64, warnings: u64| -> String {
        // fsbench: 16 MiB at 1.1 x 200 MiB/s; 200 items at 110,000 items/s.
        let gib_s = 1.1 * 200.0 * 1048576.0 / 1073741824.0;
        std::fs::write(
            sb.file("fs.1.json"),
            format!(
                r#"{{"io500": {{"phases": [
                {{"name": "ior-easy-write", "value": {gib_s}, "ops": 8, "bytes": 16777216}},
                {{"name": "mdtest-hard-write", "value": 110.0, "ops": 200, "bytes": 780200}},
                {{"name": "find", "value": 50.0, "ops": 500, "bytes": 0}}]}}}}"#
            ),
        )
        .unwrap();
        std::fs::write(
            sb.file("peer.1.ior-easy-write.txt"),
            "access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter\n\
             ------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   --------   ----\n\
             write     200.00     100.00     0.010000    8192       2048.00    0.000100   0.080000   0.000100   0.080000   0\n",
        )
        .unwrap();
        std::fs::write(
            sb.file("peer.1.mdtest-hard-write.txt"),
            format!(
                "2 tasks, {md_items} files\n{}   File creation     100000.000     100000.000     100000.000          0.000\n   File stat                0.000          0.000          0.000          0.000\n",
                "WARNING: unable to stat file /x/file.mdtest.1.0\n".repeat(warnings as usize)
            ),
        )
        .unwrap();
        stdout_of(
            Command::new("python3")
                .arg(sb.file("tab.py"))
                .args([sb.path().to_str().unwrap(), "1"])
                .env("BENCH_DIR", bench("")),
        )
    };
    let same = run(200, 0);
    for phase in ["ior-easy-write", "mdtest-hard-write"] {
        let l = case_line(&same, phase);
        assert!(l.contains("rate fsbench/peer median 1.100"), "{same}");
    }
    assert!(!same.contains("find:"), "{same}");
    let other = run(180, 0);
    let l = case_line(&other, "mdtest-hard-write");
    assert!(l.contains("DIFFERENT WORK, no ratio"), "{other}");
    assert!(l.contains("items: fsbench 200, peer 180"), "{other}");
    assert!(!l.contains("median"), "{other}");
    // Items mdtest warns it could not reach are not work it did.
    let failed = run(200, 15);
    let l = case_line(&failed, "mdtest-hard-write");
    assert!(l.contains("items: fsbench 200, peer 185"), "{failed}");
}

/// vs-io500.sh refuses a rank count or an amount that is not a positive whole number, in one
/// line and before it creates anything in DIR.
#[test]
fn vs_io500_refuses_a_bad_amount_before_creating_anything() {
    for (np, env, want) in [
        (
            "0",
            ("EASY_N", "100"),
            "np must be a positive whole number: 0",
        ),
        ("2", ("EASY_MIB", "3"), "EASY_MIB must be a multiple"),
        (
            "2",
            ("HARD_N", "ten"),
            "hard_n must be a positive whole number: ten",
        ),
    ] {
        let sb = Sandbox::new();
        let out = Command::new("bash")
            .arg(bench("vs-io500.sh"))
            .args([sb.path().to_str().unwrap(), np, "1"])
            .env("IOR", "/bin/true")
            .env("MDTEST", "/bin/true")
            .env(env.0, env.1)
            .env("OUT", sb.file("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
        assert_eq!(
            std::fs::read_dir(sb.path()).unwrap().count(),
            0,
            "{np} {env:?}"
        );
    }
}

/// A Result as `bench/vs_build.py` reads it: total operations and rate, one flowop group.
fn build_result(ops: u64, iops: f64, read_bytes: u64) -> String {
    format!(
        r#"{{"name": "r", "total": {{"ops": {ops}, "iops": {iops}, "elapsed_s": {t}}},
            "groups": [{{"name": "readfile", "stats": {{"ops": {ops}, "read_ops": {ops},
            "read_bytes": {read_bytes}}}}}]}}"#,
        t = ops as f64 / iops
    )
}

/// `bench/vs-build.sh` gives a suite's `--output DIR` as the Result path: every Result in the
/// directory counts (their operations over their summed time), and the work per flowop adds
/// up over them (here two Results of one name), so two builds whose suites did different
/// work get no ratio.
#[test]
fn vs_build_reads_every_result_of_a_suite_directory() {
    let sb = Sandbox::new();
    let this = sb.file("this.json");
    let other = sb.file("other.json");
    std::fs::create_dir_all(this.join("results")).unwrap();
    std::fs::write(this.join("results/a.json"), build_result(100, 50.0, 800)).unwrap();
    std::fs::write(this.join("results/b.json"), build_result(300, 100.0, 2400)).unwrap();
    std::fs::write(this.join("report.txt"), "not a Result").unwrap();
    std::fs::write(&other, build_result(400, 80.0, 3200)).unwrap();
    let out = stdout_of(
        Command::new("python3")
            .arg(bench("vs_build.py"))
            .args(["pair", "backup", "1"])
            .arg(&this)
            .arg(&other)
            .args(["iops", "1"]),
    );
    let line: serde_json::Value = serde_json::from_str(&out).unwrap();
    // 400 operations in 2 s + 3 s.
    assert_eq!(line["a"]["value"], 80.0);
    assert_eq!(line["b"]["value"], 80.0);
    let work = &line["a"]["work"];
    assert_eq!(work["r: readfile: read ops"], 400);
    assert_eq!(work["r: readfile: read bytes/op"], 8.0);
    assert!(line["b"]["work"].get("r: readfile: read ops").is_none());
}

/// A file system made anew per run needs an empty directory to mount it on; anything else
/// is refused in one line before a single run.
#[test]
fn vs_build_refuses_a_fresh_file_system_without_an_empty_directory() {
    let sb = Sandbox::new();
    let full = sb.file("full");
    std::fs::create_dir_all(&full).unwrap();
    std::fs::write(full.join("x"), "x").unwrap();
    let fsbench = env!("CARGO_BIN_EXE_fsbench");
    for (fs, dir, says) in [
        ("zfs", Some(sb.file("empty")), "accepted are ext4 and xfs"),
        ("ext4", None, "FRESH_FS needs FRESH_DIR"),
        ("ext4", Some(full.clone()), "must be an empty directory"),
    ] {
        let mut cmd = Command::new("bash");
        cmd.arg(bench("vs-build.sh"))
            .args([fsbench, "1", "case", "--", "run", "x"])
            .env("FSBENCH", fsbench)
            .env("FRESH_FS", fs)
            .env_remove("FRESH_DIR");
        if let Some(d) = &dir {
            std::fs::create_dir_all(d).unwrap();
            cmd.env("FRESH_DIR", d);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{fs} {dir:?}: {err}");
        assert!(err.contains(says), "{fs} {dir:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
