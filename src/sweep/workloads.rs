//! The one place suites and sweeps run a Filebench personality: through the WML engine in
//! `crate::workload`, with the workload document turned into a Result so tables, charts and
//! `compare` treat a personality like any other point.

use crate::result::RunResult;
use std::collections::BTreeMap;
use std::path::Path;

/// Why a personality produced no result.
#[derive(Debug)]
pub enum PersonalityError {
    /// This build cannot run the personality (no workload engine, or an unknown name).
    Missing(String),
    /// It ran and failed.
    Failed(anyhow::Error),
}

/// True when this build can run Filebench personalities.
pub fn engine_available() -> bool {
    true
}

/// The workload source of personality `name` with the sweep's variables (None: not shipped).
fn personality_source(
    name: &str,
    dir: &Path,
    vars: &BTreeMap<String, String>,
) -> Option<crate::workload::Source> {
    let (p, preset) = crate::workload::personalities::find(name)?;
    let mut defines: Vec<(String, String)> = preset
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    defines.push(("dir".into(), dir.display().to_string()));
    for (k, v) in vars {
        defines.retain(|(x, _)| x != k);
        defines.push((k.clone(), v.clone()));
    }
    Some(crate::workload::Source {
        name: name.to_string(),
        text: p.text.to_string(),
        defines,
    })
}

/// Check a sweep point before anything runs: the personality must be shipped and load with
/// the point's variables. A mistake is a usage error (one line, exit 2), not a skipped point.
pub fn check_personality(
    name: &str,
    dir: &Path,
    vars: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let Some(src) = personality_source(name, dir, vars) else {
        crate::bail_usage!("unknown personality '{name}': see `fsbench workload list`");
    };
    crate::workload::load_source(&src)?;
    Ok(())
}

/// Run personality `name` (a shipped workload such as `fileserver`) in `dir` with workload
/// variables `vars` (Filebench `-D NAME=VALUE`: nfiles, filesize, nthreads, iosize, ...) for
/// `time_s` seconds, and return its measured Result (ops/s in `total.iops`, CPU us/op in
/// `total.cpu_us_per_op`, latency in `total.lat_ns`). The workload's own document (per-flowop
/// figures) is kept in `probes["workload"]`.
pub fn run_personality(
    name: &str,
    dir: &Path,
    vars: &BTreeMap<String, String>,
    time_s: f64,
) -> Result<RunResult, PersonalityError> {
    use crate::workload::run::{execute, Options};
    let Some(src) = personality_source(name, dir, vars) else {
        return Err(PersonalityError::Missing(format!(
            "personality '{name}' is not shipped (see `fsbench workload list`)"
        )));
    };
    let model = crate::workload::load_source(&src).map_err(PersonalityError::Failed)?;
    let opts = Options {
        time: Some(std::time::Duration::from_secs_f64(time_s.max(0.001))),
        keep: false,
        in_process: false,
        lines_to_stdout: false,
        stall_after: std::time::Duration::from_secs(3),
    };
    let wr = execute(&src, &model, &opts).map_err(PersonalityError::Failed)?;
    Ok(to_run_result(&wr, dir))
}

/// The workload document seen as a Result, so sweeps, tables and charts treat personalities
/// like any other point: ops/s as IOPS, MB/s as throughput, the I/O summary's latency and CPU.
fn to_run_result(wr: &crate::workload::report::WorkloadResult, dir: &Path) -> RunResult {
    use crate::stats::StatsReport;
    let last = wr.runs.last();
    let mut total = StatsReport::default();
    if let Some(r) = last {
        let s = &r.summary;
        total.ops = s.ops;
        total.elapsed_s = r.duration_s;
        total.iops = s.ops_per_s;
        total.bytes_per_sec = s.mb_per_s * 1e6;
        total.read_ops = (s.read_ops_per_s * r.duration_s).round() as u64;
        total.write_ops = (s.write_ops_per_s * r.duration_s).round() as u64;
        total.read_bytes = (s.read_mb_per_s * 1e6 * r.duration_s).round() as u64;
        total.write_bytes = (s.write_mb_per_s * 1e6 * r.duration_s).round() as u64;
        total.bytes = total.read_bytes + total.write_bytes;
        total.cpu_user_s = s.cpu_user_s;
        total.cpu_sys_s = s.cpu_sys_s;
        total.cpu_s = s.cpu_user_s + s.cpu_sys_s;
        total.cpu_us_per_op = s.cpu_us_per_op;
        total.lat_ns = s.lat_ns;
        total.errors = r.flowops.iter().map(|f| f.errors).sum();
    }
    let job = crate::job::Job {
        name: wr.name.clone(),
        targets: vec![dir.to_path_buf()],
        ..crate::job::Job::default()
    };
    let mut probes = serde_json::Map::new();
    if let Ok(v) = serde_json::to_value(wr) {
        probes.insert("workload".into(), v);
    }
    RunResult {
        schema_version: crate::result::SCHEMA_VERSION,
        fsbench_version: wr.fsbench_version.clone(),
        kind: "workload".into(),
        name: wr.name.clone(),
        started_unix_s: wr.started_unix_s,
        status: wr.status,
        failures: last
            .map(|r| {
                r.failures
                    .iter()
                    .map(|m| crate::runner::IoFailure {
                        user: 0,
                        thread: 0,
                        path: dir.display().to_string(),
                        offset: None,
                        message: m.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        notes: wr.notes.clone(),
        job,
        plan: crate::runner::Plan {
            targets: Vec::new(),
            cache: crate::job::CachePolicy::Buffered,
            notes: Vec::new(),
        },
        environment: wr.environment.clone(),
        total,
        users: Vec::new(),
        probes,
    }
}
