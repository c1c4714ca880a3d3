//! The one place suites run a Filebench personality. The Filebench workload engine (WML
//! parser and interpreter) is built on another branch; until it is wired in here, every
//! personality reports itself as missing and the shootout suite says so in its tables,
//! instead of substituting something else.

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
    false
}

/// Run personality `name` (a shipped workload such as `fileserver`) in `dir` with workload
/// variables `vars` (Filebench `-D NAME=VALUE`: nfiles, filesize, nthreads, iosize, ...) for
/// `time_s` seconds, and return its measured Result (ops/s in `total.iops`, CPU us/op in
/// `total.cpu_us_per_op`, latency in `total.lat_ns`).
///
/// Merge point for the workload engine: replace the body with a call into `crate::workload`.
pub fn run_personality(
    name: &str,
    dir: &Path,
    vars: &BTreeMap<String, String>,
    time_s: f64,
) -> Result<RunResult, PersonalityError> {
    let _ = (dir, vars, time_s);
    Err(PersonalityError::Missing(format!(
        "personality '{name}' not run: this fsbench build has no Filebench workload engine yet"
    )))
}
