//! One flag vocabulary across the subcommands: `--format` for what is printed (only the
//! values a command prints; any other is one line and exit 2), `--output` for where it is
//! stored, the old spellings (`--output-format`, `--json`) still working with one
//! deprecation line, run's Job flags taken by sweep and suite, and help that is grouped,
//! wrapped and ends with examples.

mod common;
use common::{words, Sandbox};

/// Every subcommand a user can give (as `fsbench --help` lists them).
const SUBCOMMANDS: &[&str] = &[
    "quick",
    "run",
    "ab",
    "sweep",
    "suite",
    "report",
    "compare",
    "vx",
    "fio",
    "ior",
    "mdtest",
    "io500",
    "advise",
    "iostat",
    "trace",
    "replay",
    "frag",
    "workload",
    "verify",
    "fscompare",
    "completions",
    "man",
];

fn stderr_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Run `line` in the sandbox; its output.
fn run(sb: &Sandbox, line: &str) -> std::process::Output {
    sb.cmd(&words(line)).output().expect("fsbench runs")
}

/// Run `line`, which must succeed and print JSON on stdout with no deprecation line.
fn json_of(sb: &Sandbox, line: &str) -> serde_json::Value {
    let o = run(sb, line);
    assert!(o.status.success(), "{line}: {}", stderr_of(&o));
    assert!(
        !stderr_of(&o).contains("deprecated"),
        "{line}: {}",
        stderr_of(&o)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{line}: not JSON ({e}): {}", stdout_of(&o)))
}

/// A small write run whose JSON Result is `r.json`, a trace `t.csv` of its I/O, a journal
/// `j` of its file `f`, a sweep in `sw`: the inputs of the commands that read results.
fn inputs(sb: &Sandbox) {
    for line in [
        "run --rw write --bs 4k --count 8 --output r.json --trace t.csv --keep f",
        "run --rw write --bs 4k --count 8 --journal j v",
        "sweep s --rw write --bs 4k,8k --size 64k --output sw",
    ] {
        let o = run(sb, line);
        assert!(o.status.success(), "{line}: {}", stderr_of(&o));
    }
    std::fs::create_dir(sb.file("scratch")).unwrap();
}

#[test]
fn every_command_that_prints_takes_format() {
    let sb = Sandbox::new();
    inputs(&sb);
    // Each prints JSON on --format json.
    for line in [
        "run --rw write --bs 4k --count 4 --format json g",
        "sweep s2 --rw write --bs 4k,8k --size 64k --output sw2 --format json",
        "report sw --format json",
        "advise . --format json",
        "iostat 10ms 1 --format json",
        "trace --analyze t.csv --format json",
        "replay t.csv --dir scratch --format json",
        "frag f --format json",
        "workload filemicro_writefsync -D filesize=64k -D iosize=4k --time 0.2s --format json",
        "verify v --journal j --format json",
        "vx -w seq_write -i iosize=4k,iocount=4 --format json h",
    ] {
        let line = if line.starts_with("sweep") {
            // The sweep's summary line goes to stderr: only stdout is checked here.
            let o = run(&sb, line);
            assert!(o.status.success(), "{line}: {}", stderr_of(&o));
            serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("sweep prints JSON");
            continue;
        } else {
            line
        };
        json_of(&sb, line);
    }
    // The other formats each command has: CSV, Markdown, text.
    for (line, looks) in [
        ("run --rw write --bs 4k --count 4 --format csv g", ","),
        ("report sw --format md", "|"),
        ("compare sw sw --format text", "sw"),
        ("frag f --format text", "extent"),
    ] {
        let o = run(&sb, line);
        assert!(o.status.success(), "{line}: {}", stderr_of(&o));
        assert!(stdout_of(&o).contains(looks), "{line}: {}", stdout_of(&o));
    }
}

/// The commands that measure for long (quick, suite, fscompare) check --format before
/// anything runs: a bad value is refused at once, naming what that command prints.
#[test]
fn a_bad_format_is_one_line_naming_what_the_command_prints_and_exit_2() {
    let sb = Sandbox::new();
    inputs(&sb);
    for (line, accepted) in [
        ("quick . --format xml", "text, json or csv"),
        ("run --format xml --count 1 f", "text, json or csv"),
        (
            "sweep s --rw read --size 64k --format xml",
            "text, md, csv, json or html",
        ),
        (
            "suite whitepaper --dir . --format xml",
            "text, md, csv, json or html",
        ),
        ("report sw --format xml", "text, md, csv, json or html"),
        ("compare sw sw --format json", "text"),
        ("advise . --format csv", "text, json or html"),
        ("iostat 10ms 1 --format csv", "text or json"),
        ("trace --analyze t.csv --format md", "text or json"),
        (
            "replay t.csv --dir scratch --format html",
            "text, json or csv",
        ),
        ("frag f --format csv", "text or json"),
        (
            "workload filemicro_writefsync --time 0.2s --format md",
            "text, json or csv",
        ),
        ("verify v --journal j --format csv", "text or json"),
        ("vx -w read --format xml f", "text, json or csv"),
        (
            "fscompare --fs ext4 --job none.toml --format xml",
            "text, md, csv, json or html",
        ),
    ] {
        let o = run(&sb, line);
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(2), "{line}: {err}");
        assert_eq!(err.lines().count(), 1, "{line}: {err}");
        let value = line
            .split("--format ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        assert!(
            err.starts_with(&format!(
                "fsbench: unknown --format '{value}': expected {accepted}"
            )),
            "{line}: {err}"
        );
        assert_eq!(stdout_of(&o), "", "{line} printed something");
    }
    // Nothing was measured or written by the refused commands.
    assert!(!sb.file("fsbench-whitepaper").exists());
    assert!(!sb.file(".fsbench-quick.tmp").exists());
}

#[test]
fn old_spellings_still_work_and_say_they_are_deprecated() {
    let sb = Sandbox::new();
    inputs(&sb);
    for (line, new) in [
        (
            "run --rw write --bs 4k --count 4 --output-format json g",
            "--format",
        ),
        ("replay t.csv --dir scratch --output-format json", "--format"),
        (
            "workload filemicro_writefsync -D filesize=64k -D iosize=4k --time 0.2s --output-format json",
            "--format",
        ),
        (
            "vx -w seq_write -i iosize=4k,iocount=4 --output-format json h",
            "--format",
        ),
        ("iostat 10ms 1 --json", "--format json"),
        ("frag f --json", "--format json"),
        ("trace --analyze t.csv --json", "--format json"),
    ] {
        let o = run(&sb, line);
        assert!(o.status.success(), "{line}: {}", stderr_of(&o));
        let old = if new == "--format" {
            "--output-format"
        } else {
            "--json"
        };
        // One line, the first (a workload then says what it lays out).
        let err = stderr_of(&o);
        assert_eq!(
            err.lines().next(),
            Some(format!("fsbench: {old} is deprecated; use {new}").as_str()),
            "{line}: {err}"
        );
        assert_eq!(err.matches("deprecated").count(), 1, "{line}: {err}");
        serde_json::from_slice::<serde_json::Value>(&o.stdout)
            .unwrap_or_else(|e| panic!("{line}: not JSON ({e}): {}", stdout_of(&o)));
    }
    // A bad value under the old name is still one line naming it, and no deprecation line.
    let o = run(&sb, "run --output-format xml --count 1 f");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr_of(&o),
        "fsbench: unknown --output-format 'xml': expected text, json or csv\n"
    );
    // Old and new spelling together contradict each other: refused.
    for line in [
        "run --format csv --output-format json --count 1 f",
        "frag f --json --format text",
    ] {
        let o = run(&sb, line);
        assert_eq!(o.status.code(), Some(2), "{line}");
        assert_eq!(stderr_of(&o).lines().count(), 1, "{line}");
    }
    // The old spellings are not advertised.
    for sub in [
        "run", "quick", "workload", "replay", "iostat", "frag", "trace",
    ] {
        let help = stdout_of(&run(&sb, &format!("{sub} --help")));
        assert!(help.contains("--format <FORMAT>"), "{sub}");
        assert!(
            !help.contains("--output-format") && !help.contains("--json"),
            "{sub} --help shows an old spelling:\n{help}"
        );
    }
}

/// trace's captured file format moved to --trace-format (as run's); --format csv|bin still
/// works with a deprecation line.
#[test]
fn trace_capture_takes_trace_format_and_the_old_format_csv_bin() {
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        common::skip("strace is not installed");
        return;
    }
    let sb = Sandbox::new();
    let o = run(&sb, "trace -o a.trace --trace-format bin -- true");
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert!(!stderr_of(&o).contains("deprecated"));
    let o = run(&sb, "trace -o b.trace --format bin -- true");
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert!(
        stderr_of(&o).starts_with("fsbench: --format bin is deprecated; use --trace-format bin\n")
    );
    // Both files are binary traces, which --analyze reads.
    for f in ["a.trace", "b.trace"] {
        let v = json_of(&sb, &format!("trace --analyze {f} --format json"));
        assert!(v.is_object(), "{f}");
    }
    let o = run(&sb, "trace -o c.csv --format json -- true");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr_of(&o),
        "fsbench: unknown --format 'json': expected text\n"
    );
}

/// The Job flags of `run` are flags of `sweep` and `suite` too, and a sweep applies them to
/// every point (stored in each point's Result).
#[test]
fn sweep_and_suite_take_run_s_job_flags() {
    let sb = Sandbox::new();
    let run_help = stdout_of(&run(&sb, "run --help"));
    // Run's own (not Job) flags: what it prints, where, its one target's journal and name.
    let run_only = [
        "--rw",
        "--bs",
        "--size",
        "--count",
        "--time",
        "--threads",
        "--rwmix-read",
        "--cache",
        "--engine",
        "--qd",
        "--journal",
        "--name",
        "--output",
        "--format",
        "--percentiles",
        "--log",
        "--verbose",
        "--summary",
        "--mb",
        "--iostat",
        "--trace",
        "--trace-format",
        "--trace-records",
        "--progress",
        "--status-interval",
        "--keep",
        "--force",
        "--help",
    ];
    let job_flags: Vec<String> = run_help
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("--"))
        .map(|l| format!("--{}", l.split([' ', ',']).next().unwrap()))
        .filter(|f| !run_only.contains(&f.as_str()))
        .collect();
    assert!(job_flags.len() >= 20, "{job_flags:?}");
    for f in ["--no-invalidate", "--fsync", "--drop-cache", "--verify"] {
        assert!(job_flags.iter().any(|j| j == f), "{f} in run --help");
    }
    for sub in ["sweep", "suite"] {
        let help = stdout_of(&run(&sb, &format!("{sub} --help")));
        for f in &job_flags {
            assert!(
                help.contains(&format!("{f} ")) || help.contains(&format!("{f}\n")),
                "{sub} lacks run's {f}"
            );
        }
    }
    // A sweep applies them: every point ran without evicting the cache, with an fsync.
    let o = run(
        &sb,
        "sweep s --rw write --bs 4k,8k --size 64k --no-invalidate --fsync --output sw",
    );
    assert!(o.status.success(), "{}", stderr_of(&o));
    let records = common::sweep_records(&sb.file("sw"));
    assert_eq!(records.len(), 2);
    for (name, r) in records {
        let job = &r["job"];
        assert_eq!(job["invalidate"], false, "{name}: {job}");
        assert_eq!(job["fsync"], true, "{name}: {job}");
    }
    // A bad value of one is the table's one line, before anything runs.
    let o = run(
        &sb,
        "sweep s --rw write --size 64k --reserve lots --output sw3",
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr_of(&o));
    assert_eq!(stderr_of(&o).lines().count(), 1);
    assert!(!sb.file("sw3").exists());
}

#[test]
fn help_is_grouped_fits_100_columns_and_ends_with_examples() {
    let sb = Sandbox::new();
    let help = sb
        .cmd(&["run", "--help"])
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let text = stdout_of(&help);
    for heading in [
        "What to run:",
        "How:",
        "Measurement:",
        "Safety:",
        "Where to:",
    ] {
        assert!(text.lines().any(|l| l == heading), "no {heading}:\n{text}");
    }
    for l in text.lines() {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    for sub in SUBCOMMANDS {
        let o = run(&sb, &format!("{sub} --help"));
        assert!(o.status.success(), "{sub} --help");
        let text = stdout_of(&o);
        let examples = text
            .split("\nExamples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{sub} --help has no Examples section:\n{text}"));
        let n = examples
            .lines()
            .filter(|l| l.starts_with("  fsbench "))
            .count();
        assert!(n >= 2, "{sub}: {n} examples");
    }
}

/// Built without MPI, the distributed-run flags are not offered (a run on ranks cannot
/// happen); giving one still says in one line why.
#[cfg(not(feature = "mpi"))]
#[test]
fn mpi_flags_are_absent_from_help_without_mpi() {
    let sb = Sandbox::new();
    for sub in ["run", "sweep", "suite", "workload", "replay"] {
        let help = stdout_of(&run(&sb, &format!("{sub} --help")));
        for f in [
            "--file-per-rank",
            "--shared-file",
            "--reorder-ranks",
            "--stonewall",
            "--mpi-timeout",
        ] {
            assert!(!help.contains(f), "{sub} --help offers {f}");
        }
        assert!(!help.contains("\nMPI:"), "{sub}");
    }
    let o = run(&sb, "run --file-per-rank --count 1 f");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr_of(&o).contains("built without MPI"),
        "{}",
        stderr_of(&o)
    );
}

#[cfg(feature = "mpi")]
#[test]
fn mpi_flags_are_in_their_own_group_with_mpi() {
    let sb = Sandbox::new();
    let help = stdout_of(&run(&sb, "run --help"));
    let mpi = help.split("\nMPI:\n").nth(1).expect("an MPI group");
    assert!(mpi.contains("--file-per-rank") && mpi.contains("--mpi-timeout"));
}

#[test]
fn bare_fsbench_lists_every_subcommand() {
    let sb = Sandbox::new();
    let o = sb.cmd(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr_of(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    let listed = err
        .split("no subcommand given (")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap_or_else(|| panic!("{err}"));
    let listed: Vec<&str> = listed.split(", ").collect();
    assert_eq!(listed, SUBCOMMANDS);
    let help = stdout_of(&run(&sb, "--help"));
    for sub in SUBCOMMANDS {
        assert!(
            help.lines()
                .any(|l| l.trim_start().starts_with(&format!("{sub} "))),
            "fsbench --help lacks {sub}"
        );
    }
}

/// A suite applies run's Job flags to every point of its Job studies, and a point stored
/// without them is not reused for a run with them.
#[test]
fn a_suite_applies_run_s_job_flags_to_its_points() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("tiny.toml"),
        r#"name = "tiny"
title = "Tiny"
source = "a test"
[[study]]
id = "w"
title = "Writes by I/O size"
settings = ["rw=write", "size=64k"]
table = { rows = ["bs"], metrics = ["kb_per_s"] }
[[study.axis]]
name = "bs"
values = ["4k", "8k"]
"#,
    )
    .unwrap();
    std::fs::create_dir(sb.file("d")).unwrap();
    let points = |line: &str| {
        let o = run(&sb, line);
        assert!(o.status.success(), "{line}: {}", stderr_of(&o));
        let recs = common::records(&sb.file("out"), "w-");
        assert_eq!(recs.len(), 2, "{line}: {recs:?}");
        (recs, stderr_of(&o))
    };
    let (recs, _) = points("suite tiny.toml --dir d --output out");
    for (name, r) in &recs {
        assert_eq!(r["job"]["invalidate"], true, "{name}");
        assert_eq!(r["job"]["fsync"], false, "{name}");
    }
    // The stored points had other settings: not reused, and not replaced without --force.
    let flags = "--no-invalidate --fsync --format md";
    let o = run(
        &sb,
        &format!("suite tiny.toml --dir d --output out {flags}"),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr_of(&o));
    assert!(stderr_of(&o).contains("measured with other settings (fsync="));
    let (recs, err) = points(&format!(
        "suite tiny.toml --dir d --output out {flags} --force"
    ));
    for (name, r) in &recs {
        assert_eq!(r["job"]["invalidate"], false, "{name}");
        assert_eq!(r["job"]["fsync"], true, "{name}");
    }
    assert!(err.contains("2 measured, 0 reused"), "{err}");
}

/// The options a Result's explanations and notes name.
fn hinted_options(r: &serde_json::Value) -> Vec<String> {
    let mut texts: Vec<String> = r["explain"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect();
    texts.extend(
        r["notes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| n.as_str().unwrap_or_default().to_string()),
    );
    let mut flags = Vec::new();
    for t in texts {
        // vx's own spellings are said in a "(vx: ...)" aside.
        let t = t
            .split("(vx: ")
            .map(|p| p.split_once(')').map_or(p, |x| x.1));
        for part in t {
            for w in part.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
                if w.len() > 2 && w.starts_with("--") {
                    flags.push(w.trim_end_matches('-').to_string());
                }
            }
        }
    }
    flags
}

/// Every option an explanation or a note of a Result tells the user to add is one the
/// command that made the Result takes (a replay's unsynced writes are not told to add
/// run's --fsync; a sweep's are, and a sweep takes it).
#[test]
fn hints_name_options_the_command_takes() {
    let sb = Sandbox::new();
    let mut trace = String::from("id,thread,op,file,offset,len,start_ns,end_ns,result\n");
    for i in 0..32u64 {
        trace.push_str(&format!(
            "{i},0,write,/data/a,{},4096,{},{},4096\n",
            i * 4096,
            i * 1000,
            i * 1000 + 500
        ));
    }
    std::fs::write(sb.file("w.csv"), trace).unwrap();
    std::fs::create_dir(sb.file("scratch")).unwrap();
    let mut seen = Vec::new();
    for (sub, line) in [
        (
            "run",
            "run --rw write --bs 4k --count 64 --keep --format json f",
        ),
        ("run", "run --rw read --bs 4k --count 64 --format json f"),
        ("replay", "replay w.csv --dir scratch --format json"),
    ] {
        let r = json_of(&sb, line);
        let checks: Vec<&str> = r["explain"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["check"].as_str())
            .collect();
        seen.extend(checks.iter().map(|c| c.to_string()));
        let help = stdout_of(&run(&sb, &format!("{sub} --help")));
        for f in hinted_options(&r) {
            assert!(
                help.contains(&format!("{f} ")) || help.contains(&format!("{f}\n")),
                "{line}: a hint names {f}, which {sub} does not take ({checks:?})"
            );
        }
    }
    let o = run(
        &sb,
        "sweep s --rw write --bs 4k,8k --count 16 --repeat 2 --output sw",
    );
    assert!(o.status.success(), "{}", stderr_of(&o));
    let help = stdout_of(&run(&sb, "sweep --help"));
    for (name, r) in common::sweep_records(&sb.file("sw")) {
        for f in hinted_options(&r) {
            assert!(
                help.contains(&format!("{f} ")) || help.contains(&format!("{f}\n")),
                "{name}: a hint names {f}, which sweep does not take"
            );
        }
    }
    // The checks whose hints name options did fire above.
    assert!(seen.iter().any(|c| c == "dirty_at_stop"), "{seen:?}");
}
