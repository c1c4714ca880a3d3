//! `fsbench suite list` and `fsbench suite NAME --dir D...`: run a shipped suite that
//! regenerates a published document's tables, write every point's Result, report.md and report.html.

use crate::bail_usage;
use crate::report::document::Document;
use crate::report::{Format, Render};
use crate::sweep::suite::{self, RunOptions};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(crate) struct SuiteArgs {
    /// Suite name (`list` shows them) or a path to a suite .toml file
    pub name: String,
    /// Target directory (repeat for several targets, e.g. one per file system or layout)
    #[arg(long = "dir")]
    pub dirs: Vec<PathBuf>,
    /// Shrink sizes, times and counts (default: the suite's own, chosen to finish in minutes)
    #[arg(long)]
    pub scale: Option<f64>,
    /// Directory for results and reports (default: fsbench-NAME)
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Normalise charts to this target directory (baseline = 0)
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Only these studies (repeatable; ids from `fsbench suite list`)
    #[arg(long = "study")]
    pub studies: Vec<String>,
    #[command(flatten)]
    pub watch: super::args::WatchArgs,
    #[command(flatten)]
    pub study: super::args::StudyArgs,
    // Under mpirun: how each point's file is spread over the ranks (as `run`: --file-per-rank,
    // the default, or --shared-file), --reorder-ranks, --stonewall, --mpi-timeout.
    #[command(flatten)]
    pub dist: super::ranks::DistArgs,
}

fn list() -> anyhow::Result<i32> {
    let suites = suite::EMBEDDED
        .iter()
        .map(|(name, _)| suite::find(name))
        .collect::<Result<Vec<_>, _>>()?;
    crate::out!("{}", crate::report::suites::list(&suites));
    Ok(0)
}

/// The line announcing a suite run.
fn announce(res: &suite::Resolved, dirs: &[PathBuf], out_dir: &std::path::Path) -> String {
    format!(
        "fsbench suite {}: {} at scale {} on {}; results in {}",
        res.file.name,
        res.file.title,
        res.scale,
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        out_dir.display()
    )
}

/// The records of this run plus the studies of the same suite stored earlier in `out_dir`
/// (the report covers both), in point order.
fn with_stored(
    res: &suite::Resolved,
    records: &[crate::sweep::record::Record],
    out_dir: &std::path::Path,
    only: &[String],
) -> Vec<crate::sweep::record::Record> {
    let ran: Vec<String> = records.iter().map(|r| r.meta().study.clone()).collect();
    let mut all = records.to_vec();
    if let Ok(stored) = crate::sweep::record::load(&[out_dir.to_path_buf()]) {
        let run_ids: Vec<String> = res
            .studies
            .iter()
            .filter(|s| only.is_empty() || only.contains(&s.study().id))
            .map(|s| s.study().id.clone())
            .collect();
        all.extend(stored.into_iter().filter(|r| {
            let m = r.meta();
            m.suite == res.file.name
                && !ran.contains(&m.study)
                && !run_ids
                    .iter()
                    .any(|id| m.study == *id || m.study == format!("{id}-write"))
        }));
        all.sort_by_key(|r| (r.meta().index, r.meta().repeat));
    }
    all
}

/// suite.json: what ran, where, and how it went.
fn manifest(
    res: &suite::Resolved,
    a: &SuiteArgs,
    baseline: Option<&str>,
    outcome: &suite::SuiteOutcome,
) -> serde_json::Value {
    let t = outcome.tally;
    serde_json::json!({
        "schema_version": crate::result::SCHEMA_VERSION,
        "kind": "suite",
        "suite": res.file.name,
        "scale": res.scale,
        "dirs": a.dirs,
        "baseline": baseline,
        "measured": t.ran,
        "reused": t.reused,
        "skipped": t.skipped,
        "failed": t.failed,
        "interrupted": outcome.interrupted,
        "missing_personalities": outcome.missing_personalities,
    })
}

pub(crate) fn main(a: SuiteArgs, exec: crate::exec::Executor) -> anyhow::Result<i32> {
    if a.name == "list" {
        return list();
    }
    let file = suite::find(&a.name)?;
    if a.dirs.is_empty() {
        bail_usage!("no target: give --dir DIR (repeat it for several targets)");
    }
    a.study.check()?;
    let watch = super::args::watch_study(&a.watch)?;
    let iostat = a.study.iostat()?;
    if let Some(b) = &a.baseline {
        if !a.dirs.iter().any(|d| d == b) {
            bail_usage!("--baseline {} is not one of the --dir targets", b.display());
        }
    }
    let res = suite::resolve(file, a.scale)?;
    let out_dir = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("fsbench-{}", res.file.name)));
    let announce = announce(&res, &a.dirs, &out_dir);
    let outcome = suite::run(
        &res,
        &RunOptions {
            dirs: a.dirs.clone(),
            out_dir: out_dir.clone(),
            repeat: a.study.repeat,
            fresh: a.study.fresh,
            keep: a.study.keep,
            force: a.study.force,
            only: a.studies.clone(),
            iostat,
            announce: Some(announce),
            labels: Vec::new(),
            index_base: 0,
            exec,
            watch,
        },
    )?;
    let mut preface = vec![format!(
        "Suite {} ({}), regenerating the tables of \"{}\", scale {}.",
        res.file.name, res.file.title, res.file.source, res.scale
    )];
    if !res.file.description.is_empty() {
        preface.push(res.file.description.clone());
    }
    if !outcome.missing_personalities.is_empty() {
        preface.push(format!(
            "MISSING: these personalities could not be run (not shipped or not loadable): {}.",
            outcome.missing_personalities.join(", ")
        ));
    }
    let outcome_records = with_stored(&res, &outcome.records, &out_dir, &a.studies);
    let tables = crate::report::table::shape_all(&outcome_records, &Default::default())?;
    let title = format!("fsbench suite {}", res.file.name);
    let baseline = a.baseline.as_ref().map(|b| b.display().to_string());
    let report = Document {
        records: &outcome_records,
        tables: &tables,
        title: &title,
        preface: &preface,
        baseline: baseline.as_deref(),
        advice: &[],
    };
    crate::out!("{}", report.render(Format::Text));
    let html = report.write_into(&outcome.results)?;
    let t = outcome.tally;
    let manifest = manifest(&res, &a, baseline.as_deref(), &outcome);
    outcome.results.write_json("suite.json", &manifest)?;
    eprintln!(
        "{} measured, {} reused, {} skipped, {} failed; report: {}",
        t.ran,
        t.reused,
        t.skipped,
        t.failed,
        html.display()
    );
    if outcome.interrupted {
        eprintln!("interrupted: run the same command again to resume");
        return Ok(130);
    }
    Ok(if t.failed > 0 { 1 } else { 0 })
}
