//! `fsbench report FILES...`: tables and charts from stored results (files or directories),
//! as text, Markdown, CSV, JSON or one self-contained HTML file.

use crate::report::html::{self, HtmlOptions};
use crate::report::table::{self, Shape, Shaped};
use crate::sweep::record::{self, Record};
use crate::usage;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Result files (JSON) or directories of them
    #[arg(required = true, value_name = "FILE|DIR")]
    pub inputs: Vec<PathBuf>,
    /// text, md, csv, json, html
    #[arg(long, default_value = "text")]
    pub format: String,
    /// Row axes, comma-separated (e.g. bs)
    #[arg(long)]
    pub rows: Option<String>,
    /// Column axes, comma-separated (e.g. cache)
    #[arg(long)]
    pub cols: Option<String>,
    /// Metrics, comma-separated (kb_per_s, mb_per_s, cpu_s, user_s, sys_s, elapsed_s, ops_per_s, iops, cpu_us_per_op, lat_ms, lat_p99_ms, read_calls, write_calls, calls_per_s, extents_per_file)
    #[arg(long)]
    pub metrics: Option<String>,
    /// Normalise to this target (a --dir of the suite) in charts
    #[arg(long)]
    pub baseline: Option<String>,
    /// Report title
    #[arg(long)]
    pub title: Option<String>,
    /// Write here instead of standard output
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// `--rows/--cols/--metrics` as a table shape.
pub fn shape_from(rows: &Option<String>, cols: &Option<String>, metrics: &Option<String>) -> Shape {
    let split = |s: &Option<String>| s.as_ref().map(|v| crate::sweep::axis::split_values(v));
    Shape {
        rows: split(rows),
        cols: split(cols),
        metrics: split(metrics),
    }
}

/// Render records in a format.
pub fn render(
    format: &str,
    records: &[Record],
    tables: &[Shaped],
    title: &str,
    preface: &[String],
    baseline: Option<&str>,
) -> Result<String, crate::error::UsageError> {
    Ok(match format {
        "text" => {
            let mut s = String::new();
            for p in preface {
                s += &format!("{p}\n");
            }
            for t in tables {
                s += &table::render_text(t);
                s.push('\n');
            }
            s
        }
        "md" | "markdown" => crate::report::markdown::render(title, preface, tables),
        "csv" => crate::report::long::csv(records),
        "json" => crate::report::long::json(tables),
        "html" => html::render(
            records,
            tables,
            &HtmlOptions {
                title: title.to_string(),
                baseline: baseline.map(str::to_string),
                preface: preface.to_vec(),
            },
        ),
        other => {
            return Err(usage!(
                "unknown report format '{other}': expected text, md, csv, json or html"
            ))
        }
    })
}

/// Write report.html and report.md into `dir`; returns the HTML path.
pub fn write_reports(
    dir: &Path,
    records: &[Record],
    tables: &[Shaped],
    title: &str,
    preface: &[String],
    baseline: Option<&str>,
) -> anyhow::Result<PathBuf> {
    let html_path = dir.join("report.html");
    std::fs::write(
        &html_path,
        render("html", records, tables, title, preface, baseline)?,
    )?;
    std::fs::write(
        dir.join("report.md"),
        render("md", records, tables, title, preface, baseline)?,
    )?;
    Ok(html_path)
}

pub fn main(a: ReportArgs) -> anyhow::Result<i32> {
    let records = record::load(&a.inputs)?;
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
    let text = render(
        &a.format,
        &records,
        &tables,
        &title,
        &[],
        a.baseline.as_deref(),
    )?;
    match &a.output {
        Some(p) => {
            let tmp = p.with_extension("partial");
            std::fs::write(&tmp, &text)
                .map_err(|e| usage!("cannot write {}: {e}", tmp.display()))?;
            std::fs::rename(&tmp, p)?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(0)
}
