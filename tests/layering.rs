//! The layers of docs/design.md. They are crates: `fsbench-filebench` (the workload language)
//! under `fsbench-core` (jobs, runner, engines, sources, statistics, the Result), under
//! `fsbench-report` and `fsbench-mpi`, under `fsbench` (the command line and the front ends);
//! a crate can only name the crates it depends on, so the compiler refuses an import upwards,
//! and the first test here checks the dependencies themselves. The rules inside a crate are
//! checked on its source: what a rule forbids is an import path naming the module
//! (`crate::runner`, or `runner` inside `use crate::{...}`), anywhere in the file, tests
//! included: a test that reaches up is an arrow up as well.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every source file of every crate: (path from the repository's root, path).
fn all_sources() -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    for e in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        sources(&e.path().join("src"), &mut files);
    }
    let mut all: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|f| {
            let rel = f
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, f)
        })
        .collect();
    all.sort();
    all
}

/// The fsbench crates a manifest's text depends on, in any dependency table (the workspace's
/// table only names the crates for the members to pick from).
fn fsbench_dependencies(text: &str) -> Vec<String> {
    let mut deps = Vec::new();
    let mut in_deps = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_deps = t.ends_with("dependencies]") && !t.starts_with("[workspace.");
        } else if in_deps && t.starts_with("fsbench-") {
            let name: String = t
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '-')
                .collect();
            if !deps.contains(&name) {
                deps.push(name);
            }
        }
    }
    deps.sort();
    deps
}

/// Each crate depends only on the crates under it: the core knows neither the report layer
/// nor MPI nor the command line, the report layer and the MPI executor know each other not,
/// and the workload language knows nothing of fsbench. Imports between crates then follow.
#[test]
fn the_crates_depend_only_downwards() {
    let expected: [(&str, &[&str]); 5] = [
        ("crates/filebench/Cargo.toml", &[]),
        ("crates/core/Cargo.toml", &["fsbench-filebench"]),
        ("crates/report/Cargo.toml", &["fsbench-core"]),
        ("crates/mpi/Cargo.toml", &["fsbench-core"]),
        (
            "Cargo.toml",
            &["fsbench-core", "fsbench-mpi", "fsbench-report"],
        ),
    ];
    for (manifest, allowed) in expected {
        let text = std::fs::read_to_string(root().join(manifest)).unwrap();
        let deps = fsbench_dependencies(&text);
        assert_eq!(deps, allowed, "{manifest} depends on {deps:?}");
    }
}

#[test]
fn crate_dependencies_are_read_from_every_dependency_table() {
    let text = "[package]\nname = \"fsbench-x\"\n[dependencies]\nfsbench-core.workspace = true\n\
                anyhow = \"1\"\n[features]\nfsbench-y = []\n[dev-dependencies]\n\
                fsbench-report = { workspace = true, features = [\"a\"] }\n\
                [target.'cfg(unix)'.dependencies]\nfsbench-mpi = { path = \"../mpi\" }\n\
                [workspace.dependencies]\nfsbench-filebench = { path = \"crates/filebench\" }\n";
    assert_eq!(
        fsbench_dependencies(text),
        ["fsbench-core", "fsbench-mpi", "fsbench-report"]
    );
}

/// Modules of the crate that `text` names through `crate::`: `crate::a::b` and each first
/// name inside `crate::{a, b::c}`.
fn crate_modules(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.push(name);
            }
        } else {
            found.push(
                rest.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect(),
            );
        }
    }
    found
}

/// Every file of the fsbench package (`src/`: the command line and the front ends) whose path
/// does not start with one of `allowed` and that names `module`.
fn offenders(module: &str, allowed: &[&str]) -> Vec<String> {
    let src = root().join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        if allowed.iter().any(|a| rel.starts_with(a)) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        if crate_modules(&text).iter().any(|m| m == module) {
            bad.push(rel);
        }
    }
    bad.sort();
    bad
}

/// The front ends beside the command line (`vx`, `fio`, `fscompare`) never call into it.
#[test]
fn the_front_ends_never_import_the_command_line() {
    let bad = offenders("cli", &["cli/", "main.rs", "lib.rs"]);
    assert!(bad.is_empty(), "these files import crate::cli: {bad:?}");
}

/// `fscompare` builds a study; it formats nothing. (The core and the MPI executor cannot name
/// the report layer: it is not their dependency.)
#[test]
fn only_front_ends_import_report() {
    // fio/ and vx/ are front ends: other benchmarks' command lines and job files.
    let bad = offenders("report", &["cli/", "vx/", "fio/", "main.rs", "lib.rs"]);
    assert!(bad.is_empty(), "these files import crate::report: {bad:?}");
}

#[test]
fn engines_never_import_the_runner() {
    let src = root().join("crates/core/src/engine");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let bad: Vec<_> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            crate_modules(&text).iter().any(|m| m == "runner")
        })
        .collect();
    assert!(
        bad.is_empty(),
        "these engine files import crate::runner: {bad:?}"
    );
}

/// The runner serves every source (jobs, workloads, replays, backup); it knows none of them:
/// a worker process's spec reaches its source through the command line's map.
#[test]
fn the_runner_never_imports_a_source() {
    let src = root().join("crates/core/src/runner");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let bad: Vec<String> = files
        .iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            crate_modules(&text)
                .iter()
                .any(|m| ["workload", "sweep", "advise", "vx", "cli"].contains(&m.as_str()))
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        bad.is_empty(),
        "these runner files import a source or a front end: {bad:?}"
    );
}

#[test]
fn import_paths_are_read_from_plain_and_grouped_uses() {
    let m = crate_modules("use crate::cli::output;\nuse crate::{report, runner::Plan};\n");
    assert_eq!(m, ["cli", "report", "runner"]);
}

/// The Result is a leaf: the runner produces it (`runner/outcome.rs` fills it from an
/// outcome), and the document's own types (status, failures, plan, time series) live in it,
/// so reading or reporting a Result never reaches into the runner; the `explain` checks read
/// a Result and add their findings to it, never the other way round.
#[test]
fn the_result_never_imports_the_runner() {
    let f = root().join("crates/core/src/result.rs");
    let text = std::fs::read_to_string(&f).unwrap();
    let up: Vec<String> = crate_modules(&text)
        .into_iter()
        .filter(|m| {
            [
                "runner", "engine", "workload", "replay", "backup", "mpi", "explain",
            ]
            .contains(&m.as_str())
        })
        .collect();
    assert!(up.is_empty(), "crates/core/src/result.rs imports {up:?}");
}

/// `static` items with interior mutability in `text`, outside test code: (line number, line).
/// Test code is a file of tests, an item right after `#[cfg(test)]`, or the `mod tests` at
/// a file's end.
fn mutable_statics(text: &str) -> Vec<(usize, String)> {
    const INTERIOR: [&str; 9] = [
        "Mutex",
        "Atomic",
        "OnceLock",
        "OnceCell",
        "RwLock",
        "Once",
        "Cell<",
        "LazyLock",
        "thread_local!",
    ];
    let mut found = Vec::new();
    let mut previous = "";
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("mod tests") && previous == "#[cfg(test)]" {
            break;
        }
        let is_static = t.starts_with("static ")
            || t.starts_with("pub static ")
            || t.starts_with("pub(crate) static ")
            || t.starts_with("pub(super) static ")
            || t.starts_with("thread_local!");
        // The type may continue on the next line.
        let rest: String = text.lines().skip(i).take(2).collect::<Vec<_>>().join(" ");
        if is_static && previous != "#[cfg(test)]" && INTERIOR.iter().any(|m| rest.contains(m)) {
            found.push((i + 1, t.to_string()));
        }
        if !t.starts_with("///") && !t.starts_with("//") && !t.is_empty() {
            previous = t;
        }
    }
    found
}

/// What steers a run is passed in with it (the front end's `Watching` with the observers'
/// trace session, the run's board), not installed in a process-wide static. The statics left
/// are the signal handlers' flags, the clock calibration, the one stderr bar other lines
/// print above, and the counter of unique temporary names.
#[test]
fn no_process_wide_state_steers_a_run() {
    let allowed = [
        // Ctrl-C / SIGTERM: a signal handler can only reach a static.
        "crates/core/src/runner/signal.rs",
        // SIGBUS of a failed mapping: the handler's regions and removals.
        "crates/core/src/engine/sigbus.rs",
        // The TSC calibration, measured once per process.
        "crates/core/src/stats/clock.rs",
        // A counter that makes temporary file names unique within the process.
        "crates/core/src/output.rs",
        // The bar on stderr that every other stderr line prints above (stderr is one per
        // process); it decides where a line goes, not how a run behaves.
        "crates/core/src/runner/live_line.rs",
        // The chart library keeps its fonts in a registry of its own: the embedded font is
        // registered there once; it shapes how a chart is drawn, never a run.
        "crates/report/src/chart.rs",
    ];
    let mut bad = Vec::new();
    for (rel, f) in all_sources() {
        let name = f.file_name().unwrap().to_string_lossy();
        if allowed.contains(&rel.as_str()) || name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in mutable_statics(&text) {
            bad.push(format!("{rel}:{n}: {line}"));
        }
    }
    assert!(
        bad.is_empty(),
        "process-wide mutable statics (pass the value with the run instead): {bad:#?}"
    );
}

#[test]
fn mutable_statics_are_found_outside_tests_only() {
    let text = "static A: AtomicU64 = AtomicU64::new(0);\n\
                static B: Mutex<Option<u8>> =\n    Mutex::new(None);\n\
                static TABLE: &[u8] = &[1];\n\
                #[cfg(test)]\nstatic C: AtomicBool = AtomicBool::new(false);\n\
                fn f() {\n    static D: OnceLock<u8> = OnceLock::new();\n}\n\
                #[cfg(test)]\nmod tests {\n    static E: AtomicUsize = AtomicUsize::new(0);\n}\n";
    let names: Vec<String> = mutable_statics(text)
        .into_iter()
        .map(|(_, l)| l[..l.find(':').unwrap()].to_string())
        .collect();
    assert_eq!(names, ["static A", "static B", "static D"]);
}

/// The code of `text` before its first `#[cfg(test)]` (a file's unit tests may build a mock
/// engine to drive a source the way the runner does).
fn non_test_code(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |i| &text[..i])
}

/// Only the runner and the engines issue operations through an engine: every other kind of
/// run is a source the runner drives, reaching its engine through the runner's `Issuer`.
#[test]
fn only_the_runner_and_the_engines_call_an_engine() {
    let calls = [
        ".submit(",
        ".reap(",
        ".reap_timeout(",
        ".execute(",
        ".as_dyn()",
        "engine::Built",
        "engine::Engine",
        "dyn Engine",
        "impl Engine for",
        "Built::Sync",
        "Built::Uring",
        "Built::Mmap",
        "engine::build(",
    ];
    let mut bad = Vec::new();
    for (rel, f) in all_sources() {
        if rel.starts_with("crates/core/src/engine/")
            || rel.starts_with("crates/core/src/runner/")
            || rel.ends_with("tests.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for c in calls {
            if non_test_code(&text).contains(c) {
                bad.push(format!("{rel}: {c}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "outside runner/ and engine/, these call an engine: {bad:?}"
    );
}

/// The system calls on files' names and attributes go through the one set of wrappers in
/// `crates/core/src/sys.rs` (rustix where it has the call), so flags such as O_NOFOLLOW and O_CLOEXEC and
/// the handling of errors live in one place. Every file is checked, tests included.
#[test]
fn file_system_calls_go_through_the_sys_module() {
    let calls = [
        "open",
        "openat",
        "unlinkat",
        "unlink",
        "mkdirat",
        "mkdir",
        "rmdir",
        "fstatat",
        "fstat",
        "stat",
        "lstat",
        "statx",
        "renameat",
        "renameat2",
        "rename",
        "linkat",
        "link",
        "fsetxattr",
        "fgetxattr",
        "fremovexattr",
        "setxattr",
        "getxattr",
        "lsetxattr",
        "lgetxattr",
        "removexattr",
        "ftruncate",
        "truncate",
        "fdopendir",
        "opendir",
        "readdir",
    ];
    // (file, call, why it may stay a bare libc call there).
    let allowed = [
        // The SIGBUS handler removes the mapped files it created before it exits: only
        // async-signal-safe libc calls on paths built in advance may run there.
        ("crates/core/src/engine/sigbus.rs", "stat"),
        ("crates/core/src/engine/sigbus.rs", "unlink"),
    ];
    let mut bad = Vec::new();
    for (rel, f) in all_sources() {
        if rel == "crates/core/src/sys.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for c in calls {
            if text.contains(&format!("libc::{c}(")) && !allowed.contains(&(rel.as_str(), c)) {
                bad.push(format!("{rel}: libc::{c}"));
            }
        }
        if text.contains("SYS_getdents64") {
            bad.push(format!("{rel}: SYS_getdents64"));
        }
    }
    assert!(
        bad.is_empty(),
        "call these through crate::sys (rustix), not bare libc: {bad:?}"
    );
}
