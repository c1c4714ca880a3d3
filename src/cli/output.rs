//! What the front ends do with results at the end: print them in the chosen format, write
//! `--output` through the one output writer ([`crate::output`]), and turn the runs' status
//! into an exit code.

use crate::report::{Format, Render, ReportOptions, Runs};
use crate::result::RunResult;
use crate::runner::RunStatus;
use std::path::Path;

/// Print results, write `--output`, and return the exit code (1 when a run did not complete
/// because of an error). `force` lets the output replace a regular file fsbench did not write.
pub(crate) fn emit(
    results: &[RunResult],
    format: Format,
    opts: &ReportOptions,
    output: Option<&Path>,
    force: bool,
) -> anyhow::Result<i32> {
    let runs = Runs {
        results,
        opts: *opts,
    };
    crate::out!("{}", runs.render(format));
    if let Some(p) = output {
        if results.len() == 1 {
            crate::output::write_json_force(p, &results[0], force)?;
        } else {
            crate::output::write_json_force(p, &results, force)?;
        }
    }
    Ok(exit_code(results))
}

/// 1 when a run failed, 130 when one was interrupted (partial), else 0.
pub(crate) fn exit_code(results: &[RunResult]) -> i32 {
    if results.iter().any(|r| r.status == RunStatus::Failed) {
        1
    } else if results.iter().any(|r| r.status == RunStatus::Partial) {
        130
    } else {
        0
    }
}
