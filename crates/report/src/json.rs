//! JSON: one Result object, or an array when several are rendered together.

use crate::result::RunResult;

pub(crate) fn render(results: &[RunResult]) -> String {
    if results.len() == 1 {
        super::json(&results[0])
    } else {
        super::json(results)
    }
}
