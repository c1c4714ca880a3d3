//! JSON: one Result object, or an array when several are rendered together.

use super::{Exporter, ReportOptions};
use crate::result::RunResult;

pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn export(&self, results: &[RunResult], _opts: &ReportOptions) -> String {
        let mut s = if results.len() == 1 {
            serde_json::to_string_pretty(&results[0])
        } else {
            serde_json::to_string_pretty(results)
        }
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }
}
