//! `fsbench report FILES...`: tables and charts from stored results (files or directories),
//! as text, Markdown, CSV, JSON or one self-contained HTML file; advise documents among the
//! inputs become sections of their own.

use crate::cli::output::ResultsDir;
use crate::report::advise_html;
use crate::report::html::{self, HtmlOptions};
use crate::report::table::{self, Shape, Shaped};
use crate::sweep::record::{self, Record};
use crate::usage;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Result files (JSON) or directories of them; `fsbench advise --format json` documents
    /// become sections of text, md and html reports
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
    /// Let --output replace a regular file fsbench did not write
    #[arg(long)]
    pub force: bool,
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

/// Write report.html and report.md into the results directory; returns the HTML path.
pub fn write_reports(
    dir: &ResultsDir,
    records: &[Record],
    tables: &[Shaped],
    title: &str,
    preface: &[String],
    baseline: Option<&str>,
) -> anyhow::Result<PathBuf> {
    let html = render("html", records, tables, title, preface, baseline)?;
    dir.write("report.html", html.as_bytes())?;
    let md = render("md", records, tables, title, preface, baseline)?;
    dir.write("report.md", md.as_bytes())?;
    Ok(dir.join("report.html"))
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

pub fn main(a: ReportArgs) -> anyhow::Result<i32> {
    crate::cli::output::check_output(a.output.as_deref(), a.force)?;
    let (advice, result_files) = split_advice(&a.inputs)?;
    if !advice.is_empty() && !matches!(a.format.as_str(), "text" | "md" | "markdown" | "html") {
        crate::bail_usage!(
            "--format {}: advise documents go into text, md or html reports; give only results for csv and json",
            a.format
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
    let mut text = if a.format == "html" {
        html::render_with_advice(
            &records,
            &tables,
            &HtmlOptions {
                title: title.clone(),
                baseline: a.baseline.clone(),
                preface: Vec::new(),
            },
            &advice,
        )
    } else {
        render(
            &a.format,
            &records,
            &tables,
            &title,
            &[],
            a.baseline.as_deref(),
        )?
    };
    if a.format != "html" {
        for adv in &advice {
            let body = crate::advise::render::text(adv);
            if a.format == "text" {
                text = format!("{text}\n{body}");
            } else {
                text = format!("{text}\n## {}\n\n```\n{body}```\n", advise_html::title(adv));
            }
        }
    }
    match &a.output {
        Some(p) => {
            crate::cli::output::write_file(p, text.as_bytes(), a.force)?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(0)
}
