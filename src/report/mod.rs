//! The report layer: the only place that formats. One `Exporter` trait implemented by the
//! vxbench-style text, JSON and CSV exporters.

pub mod advise_html;
pub mod compare;
pub mod csv;
pub mod html;
pub mod iostat_html;
pub mod json;
pub mod long;
pub mod markdown;
pub mod metrics;
pub mod observe;
pub mod svg;
pub mod table;
pub mod text;
pub mod workload;

use crate::result::RunResult;
use crate::units::RateUnit;

/// What to show.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReportOptions {
    pub unit: RateUnit,
    /// Only the total line (vxbench -s).
    pub summary_only: bool,
    /// Per-thread lines (vxbench -v).
    pub per_thread: bool,
}

pub trait Exporter {
    fn export(&self, results: &[RunResult], opts: &ReportOptions) -> String;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
    Csv,
}

impl Format {
    pub fn parse(s: &str) -> Result<Self, crate::error::UsageError> {
        Ok(match s {
            "text" => Format::Text,
            "json" => Format::Json,
            "csv" => Format::Csv,
            _ => {
                return Err(crate::usage!(
                    "unknown output format '{s}': expected text, json or csv"
                ))
            }
        })
    }
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Text => Box::new(text::TextExporter),
            Format::Json => Box::new(json::JsonExporter),
            Format::Csv => Box::new(csv::CsvExporter),
        }
    }
}
