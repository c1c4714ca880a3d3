//! `fsbench report FILES...`: tables and charts from stored results (files or directories),
//! as text, Markdown, CSV, JSON or one self-contained HTML file; advise documents among the
//! inputs become sections of their own.

use super::args::{SAFETY, WHAT, WHERE};
use crate::report::advise_html;
use crate::report::document::Document;
use crate::report::table::{self, Shape};
use crate::report::Render;
use crate::sweep::record;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::format_help::<Document>(a)),
    after_help = EXAMPLES
)]
pub(crate) struct ReportArgs {
    /// Result files (JSON) or directories of them
    ///
    /// `fsbench advise --format json` documents become sections of text, md and html
    /// reports.
    #[arg(required = true, value_name = "FILE|DIR")]
    pub inputs: Vec<PathBuf>,
    /// Row axes, comma-separated (e.g. bs,rw): rows are grouped in this order
    #[arg(long, value_name = "AXES", help_heading = WHAT)]
    pub rows: Option<String>,
    /// Column axes, comma-separated (e.g. cache)
    #[arg(long, value_name = "AXES", help_heading = WHAT)]
    pub cols: Option<String>,
    /// Metrics, comma-separated (kb_per_s, iops, lat_ms, ...: `--help` lists them all)
    ///
    /// kb_per_s, mb_per_s, read_mib_per_s, write_mib_per_s, trim_mib_per_s, trim_iops,
    /// trim_lat_ms, cpu_s, user_s, sys_s, elapsed_s,
    /// ops_per_s, iops, cpu_us_per_op, lat_ms, lat_p99_ms, lat_p99_99_ms, lat_stdev_ms,
    /// sched_lat_ms, sched_lat_p99_ms, read_calls, write_calls, calls_per_s,
    /// read_us_per_call, write_us_per_call, dev_busy_pct, dev_avque, dev_rw_per_s,
    /// dev_blks_per_s, dev_avwait_ms, dev_avserv_ms, extents_per_file
    #[arg(long, value_name = "LIST", help_heading = WHAT)]
    pub metrics: Option<String>,
    /// Normalise to this target (a --dir of the suite) in charts
    #[arg(long, value_name = "TARGET", help_heading = WHAT)]
    pub baseline: Option<String>,
    /// Report title
    #[arg(long, value_name = "TITLE", help_heading = WHAT)]
    pub title: Option<String>,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
    /// Write the report to FILE instead of standard output
    #[arg(long, value_name = "FILE", help_heading = WHERE)]
    pub output: Option<PathBuf>,
    /// Let --output replace a regular file fsbench did not write
    #[arg(long, help_heading = SAFETY)]
    pub force: bool,
}

const EXAMPLES: &str = "\
Examples:
  fsbench report fsbench-sweep --rows bs --cols cache --metrics mb_per_s
  fsbench report fsbench-sweep --format html --output report.html";

/// `--rows/--cols/--metrics` as a table shape.
pub(crate) fn shape_from(
    rows: &Option<String>,
    cols: &Option<String>,
    metrics: &Option<String>,
) -> Shape {
    let split = |s: &Option<String>| s.as_ref().map(|v| crate::sweep::axis::split_values(v));
    Shape {
        rows: split(rows),
        cols: split(cols),
        metrics: split(metrics),
    }
}

/// Split the inputs into `fsbench advise` documents (JSON with `kind: "advise"`) and the
/// files holding results.
fn split_advice(
    inputs: &[PathBuf],
) -> Result<(Vec<crate::advise::Advice>, Vec<PathBuf>), crate::error::UsageError> {
    let mut advice = Vec::new();
    let mut results = Vec::new();
    for f in record::expand_paths(inputs)? {
        let text = record::read_bounded(&f)?;
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) if advise_html::is_advice(&v) => {
                advice.push(advise_html::parse(v, &f.display().to_string())?)
            }
            _ => results.push(f),
        }
    }
    Ok((advice, results))
}

pub(crate) fn main(a: ReportArgs) -> anyhow::Result<i32> {
    let format = a.printed.get::<Document>()?;
    crate::output::check_output(a.output.as_deref(), a.force)?;
    let (advice, result_files) = split_advice(&a.inputs)?;
    if !advice.is_empty() && !Document::holds_advice(format) {
        crate::bail_usage!(
            "--format {format}: advise documents go into text, md or html reports; give only results for csv and json"
        );
    }
    let records = if result_files.is_empty() && !advice.is_empty() {
        Vec::new()
    } else {
        record::load(&result_files)?
    };
    let shape = shape_from(&a.rows, &a.cols, &a.metrics);
    let tables = table::shape_all(&records, &shape)?;
    let title = a.title.clone().unwrap_or_else(|| {
        let suite = records
            .iter()
            .map(|r| r.meta().suite.clone())
            .find(|s| !s.is_empty());
        match suite {
            Some(s) => format!("fsbench report: {s}"),
            None => "fsbench report".into(),
        }
    });
    let text = Document {
        records: &records,
        tables: &tables,
        title: &title,
        preface: &[],
        baseline: a.baseline.as_deref(),
        advice: &advice,
    }
    .render(format);
    match &a.output {
        Some(p) => {
            crate::output::write_file(p, text.as_bytes(), a.force)?;
            eprintln!("wrote {}", p.display());
        }
        None => crate::out!("{text}"),
    }
    Ok(0)
}
