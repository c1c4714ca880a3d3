//! `fsbench suite list` and `fsbench suite NAME --dir D...`: run a shipped suite that
//! regenerates a published document's tables, write every point's Result, report.md and report.html.

use super::args::{WHAT, WHERE};
use crate::bail_usage;
use crate::report::document::Document;
use crate::report::Render;
use crate::sweep::suite::{self, RunOptions};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::format_help::<Document>(a)),
    after_help = EXAMPLES
)]
pub(crate) struct SuiteArgs {
    /// Suite name (`list` shows them) or a path to a suite .toml file
    pub name: String,
    /// The ssd-pts suite's target: a file it creates, or a block device (with --force)
    #[arg(value_name = "TARGET")]
    pub target: Option<PathBuf>,
    /// Target directory (repeat for several targets, e.g. one per file system or layout)
    #[arg(long = "dir", value_name = "DIR", help_heading = WHAT)]
    pub dirs: Vec<PathBuf>,
    /// Shrink sizes, times and counts (default: the suite's own, chosen to finish in minutes)
    #[arg(long, value_name = "FACTOR", help_heading = WHAT)]
    pub scale: Option<f64>,
    /// Only these studies (repeatable; ids from `fsbench suite list`)
    #[arg(long = "study", value_name = "ID", help_heading = WHAT)]
    pub studies: Vec<String>,
    // run's Job flags, applied to every point of the studies that run Jobs.
    #[command(flatten)]
    pub job: super::jobflags::JobFlags,
    /// Directory (not a file) for the Results and reports [default: fsbench-NAME]
    #[arg(long, value_name = "DIR", help_heading = WHERE)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
    /// Normalise charts to this target directory (baseline = 0)
    #[arg(long, value_name = "DIR", help_heading = WHERE)]
    pub baseline: Option<PathBuf>,
    #[command(flatten)]
    pub watch: super::args::WatchArgs,
    #[command(flatten)]
    pub study: super::args::StudyArgs,
    // Under mpirun: how each point's file is spread over the ranks (as `run`: --file-per-rank,
    // the default, or --shared-file), --reorder-ranks, --stonewall, --mpi-timeout.
    #[command(flatten)]
    pub dist: super::ranks::DistArgs,
    #[command(flatten)]
    pub pts: super::ssd_pts::PtsArgs,
}

const EXAMPLES: &str = "\
Examples:
  fsbench suite list
  fsbench suite SUITE --dir /mnt/ext4 --dir /mnt/xfs --scale 0.1 --output study
  fsbench suite ssd-pts /mnt/ssd/pts.dat --size 4g --point-time 10s --output pts
  fsbench suite ssd-pts /dev/nvme1n1 --force --qd 32 --engine uring --output pts";

/// run's Job flags given to `suite`, added to the settings of every study that runs Jobs
/// (after the suite's own settings, so a flag wins over them; an axis of the study still
/// varies its parameter). Studies that run programs or workloads of their own take none: a
/// note says which.
fn add_job_flags(res: &mut suite::Resolved, flags: &super::jobflags::JobFlags, only: &[String]) {
    use suite::ResolvedStudy;
    let settings = flags.settings();
    if settings.is_empty() {
        return;
    }
    let extend = |s: &mut crate::sweep::Study| {
        s.settings
            .extend(settings.iter().map(|(n, v)| (n.to_string(), v.clone())));
    };
    let chosen = |id: &String| only.is_empty() || only.contains(id);
    for r in res.studies.iter_mut() {
        match r {
            ResolvedStudy::Sweep(s) if s.workload.is_none() => extend(s),
            ResolvedStudy::Aged { reads, writes, .. } => {
                extend(reads);
                extend(writes);
            }
            other if chosen(&other.study().id) => eprintln!(
                "fsbench: note: study '{}' does not run Jobs: the Job flags do not apply to it",
                other.study().id
            ),
            _ => {}
        }
    }
}

fn list() -> anyhow::Result<i32> {
    let suites = suite::EMBEDDED
        .iter()
        .map(|(name, _)| suite::find(name))
        .collect::<Result<Vec<_>, _>>()?;
    crate::out!("{}", crate::report::suites::list(&suites));
    crate::out!(
        "\n{:<20} SNIA PTS style precondition study of one target (purge, 2x fill, IOPS matrix rounds until steady)\nRun: fsbench suite {} FILE --size SIZE | DEVICE --force [--bs LIST] [--mixes LIST] [--point-time DUR] [--max-rounds N]\n",
        crate::sweep::pts::NAME,
        crate::sweep::pts::NAME
    );
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
    if a.name == crate::sweep::pts::NAME {
        return super::ssd_pts::main(a, exec);
    }
    if let Some(t) = &a.target {
        bail_usage!(
            "unexpected argument {}: suite {} takes its targets with --dir",
            t.display(),
            a.name
        );
    }
    if let Some(f) = a.pts.given() {
        bail_usage!("{f} belongs to the ssd-pts suite, not to suite {}", a.name);
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
    let format = a.printed.get::<Document>()?;
    let mut res = suite::resolve(file, a.scale)?;
    add_job_flags(&mut res, &a.job, &a.studies);
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
    crate::out!("{}", report.render(format));
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
