//! Shared output handling: print in the chosen format, write the JSON Result file, and turn a
//! run's status into an exit code.

use crate::report::{Format, ReportOptions};
use crate::result::RunResult;
use crate::runner::RunStatus;
use anyhow::Context;
use std::path::Path;

/// Write a Result as JSON, atomically (temporary file, then rename), so a reader never sees
/// half a file.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    let tmp = path.with_extension("json.partial");
    std::fs::write(&tmp, text + "\n").with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Print results, write `--output`, and return the exit code (1 when a run did not complete
/// because of an error).
pub fn emit(
    results: &[RunResult],
    format: Format,
    opts: &ReportOptions,
    output: Option<&Path>,
) -> anyhow::Result<i32> {
    print!("{}", format.exporter().export(results, opts));
    if let Some(p) = output {
        if results.len() == 1 {
            write_json(p, &results[0])?;
        } else {
            write_json(p, &results)?;
        }
    }
    Ok(exit_code(results))
}

pub fn exit_code(results: &[RunResult]) -> i32 {
    if results.iter().any(|r| r.status == RunStatus::Failed) {
        1
    } else if results.iter().any(|r| r.status == RunStatus::Partial) {
        130
    } else {
        0
    }
}
