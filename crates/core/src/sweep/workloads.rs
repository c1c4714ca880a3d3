//! The one place suites and sweeps run a Filebench personality: through the WML engine in
//! `crate::workload`, whose Result (kind `workload`) tables, charts and `compare` read like
//! any other point's.

use crate::result::RunResult;
use std::collections::BTreeMap;
use std::path::Path;

/// Why a personality produced no result.
#[derive(Debug)]
pub(crate) enum PersonalityError {
    /// This build cannot run the personality (no workload engine, or an unknown name).
    Missing(String),
    /// It ran and failed.
    Failed(anyhow::Error),
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
        shared_rank: None,
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
/// `time_s` seconds, and return its measured Result: the IO Summary as `total` (ops/s in
/// `total.iops`, CPU us/op in `total.cpu_us_per_op`, latency in `total.lat_ns`), each flowop
/// in `groups`, its variables in `workload.variables`. On MPI ranks (`exec`) every rank runs
/// it in `dir`/rank-NNNNN and the Result is their aggregate.
pub(crate) fn run_personality(
    name: &str,
    dir: &Path,
    vars: &BTreeMap<String, String>,
    time_s: f64,
    exec: &crate::exec::Executor,
    watch: &crate::runner::live::Watching,
) -> Result<RunResult, PersonalityError> {
    use crate::workload::run::Options;
    let Some(src) = personality_source(name, dir, vars) else {
        return Err(PersonalityError::Missing(format!(
            "personality '{name}' is not shipped (see `fsbench workload list`)"
        )));
    };
    let model = crate::workload::load_source(&src).map_err(PersonalityError::Failed)?;
    let opts = Options {
        time: Some(std::time::Duration::from_secs_f64(time_s.max(0.001))),
        ramp: None,
        ramp_bytes: None,
        keep: false,
        in_process: false,
        lines_to_stdout: false,
        stall_after: std::time::Duration::from_secs(3),
        progress: None,
        engine: crate::job::EngineKind::Sync,
        rate: Default::default(),
        verify: false,
        leave_for_owner: false,
        watch: watch.clone(),
    };
    exec.run_workload(&src, &model, &opts)
        .map_err(PersonalityError::Failed)
}
