//! `fsbench advise PATH [--measure] [--format text|json]`: tuning recommendations for the
//! storage under PATH. Argument handling only; the work is in [`crate::advise`]. The measured
//! points run through the [`Executor`] the dispatcher hands in: under mpirun (`--measure`
//! only) every point runs on every rank at once, and rank 0 prints the advice once.

use crate::advise::{self, measure};
use crate::exec::Executor;
use crate::probe::topology::{SysfsProbe, Topology};
use crate::report::{Format, Render};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::format_help::<advise::Advice>(a)),
    after_help = EXAMPLES
)]
pub(crate) struct AdviseArgs {
    /// A directory or file on the storage to advise on
    ///
    /// The scratch file for --measure goes in this directory, or in the file's directory.
    pub path: PathBuf,
    /// Also measure: I/O-size knee, direct-vs-buffered crossover and stream count
    ///
    /// On a scratch file fsbench creates and removes.
    #[arg(long, help_heading = super::args::MEASURE)]
    pub measure: bool,
    /// Size of the scratch file for --measure
    #[arg(long = "measure-size", default_value = "1g", value_name = "SIZE", help_heading = super::args::MEASURE)]
    pub measure_size: String,
    /// Time budget for all measured points together (each point gets an equal share)
    #[arg(long = "measure-time", default_value = "80s", value_name = "DUR", help_heading = super::args::MEASURE)]
    pub measure_time: String,
    /// Runs of each measured point; the median is kept (they share the time budget)
    #[arg(long = "measure-repeat", default_value_t = 3, value_name = "N", help_heading = super::args::MEASURE)]
    pub measure_repeat: u32,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
    /// Also store the JSON in FILE (with --format html: the page, not on standard output)
    #[arg(long, value_name = "FILE", help_heading = super::args::WHERE)]
    pub output: Option<PathBuf>,
    /// With --measure: also store every measured run as a full Result in DIR (a directory)
    ///
    /// One JSON file per run, read by `fsbench report` and `fsbench compare`.
    #[arg(long, value_name = "DIR", help_heading = super::args::WHERE)]
    pub results: Option<PathBuf>,
    /// Let --output replace a file, and --results write into a directory, fsbench did not make
    #[arg(long, help_heading = super::args::SAFETY)]
    pub force: bool,
}

const EXAMPLES: &str = "\
Examples:
  fsbench advise /mnt/data
  fsbench advise /mnt/data --measure --measure-time 40s --format html --output advice.html";

/// Under mpirun with several ranks, advise without --measure does no I/O to spread over
/// them: refused in one line, printed by rank 0 only (every rank exits 2).
pub(crate) fn refuse_without_measure_on_ranks(a: &AdviseArgs) -> anyhow::Result<Option<i32>> {
    if a.measure || super::ranks::launched_ranks().is_none_or(|n| n <= 1) {
        return Ok(None);
    }
    if super::ranks::launched_rank().unwrap_or(0) != 0 {
        return Ok(Some(2));
    }
    crate::bail_usage!(
        "advise without --measure does no I/O: run it without mpirun (with --measure, every rank measures each point at once)"
    )
}

pub(crate) fn main(a: AdviseArgs, exec: Executor) -> anyhow::Result<i32> {
    let format = a.printed.get::<advise::Advice>()?;
    let json = format == Format::Json;
    if !a.path.exists() {
        crate::bail_usage!(
            "{} does not exist: name a directory or file on the storage to advise on",
            a.path.display()
        );
    }
    let size = crate::units::parse_size(&a.measure_size)?;
    let budget = crate::units::parse_duration(&a.measure_time)?.as_secs_f64();
    let min_size = *measure::SIZES.last().unwrap() * 2;
    if a.measure && size < min_size {
        crate::bail_usage!(
            "bad --measure-size {}: must be at least {} (two of the largest I/O)",
            a.measure_size,
            crate::units::format_size_exact(min_size)
        );
    }
    if a.measure_repeat == 0 || a.measure_repeat > 9 {
        crate::bail_usage!("bad --measure-repeat {}: must be 1 to 9", a.measure_repeat);
    }
    if a.measure && budget < 1.0 {
        crate::bail_usage!("bad --measure-time {}: must be at least 1s", a.measure_time);
    }
    if a.results.is_some() && !a.measure {
        crate::bail_usage!("--results needs --measure: only measured runs have Results to store");
    }
    crate::output::check_output(a.output.as_deref(), a.force)?;
    let path = std::fs::canonicalize(&a.path)?;
    let topology = Topology::of_path(&path, &SysfsProbe::default());
    let mut advice = advise::from_topology(topology);
    if a.measure {
        let dir = if path.is_dir() {
            path.clone()
        } else {
            path.parent().map(|p| p.to_path_buf()).unwrap_or_default()
        };
        // On ranks every rank has a file of --measure-size; they may all be on this file
        // system (one host, or shared storage).
        check_space(&dir, size, exec.ranks())?;
        let results = match &a.results {
            Some(p) => Some(crate::output::ResultsDir::open(p, a.force)?),
            None => None,
        };
        let opts = measure::MeasureOpts {
            dir,
            file_size: size,
            budget_s: budget,
            sizes: measure::SIZES.to_vec(),
            streams: measure::STREAMS.to_vec(),
            repeat: a.measure_repeat,
        };
        let announce = || {
            if !json {
                let on = match exec.ranks() {
                    Some(n) => format!(" on each of {n} ranks"),
                    None => String::new(),
                };
                eprintln!(
                    "fsbench advise: measuring in {} ({} scratch file{on}, about {} s)...",
                    opts.dir.display(),
                    crate::units::format_size_exact(size),
                    budget.round()
                );
            }
        };
        let store = |rec: crate::sweep::record::Record| match &results {
            Some(dir) => dir.write(&result_name(rec.meta()), rec.to_json()?.as_bytes()),
            None => Ok(()),
        };
        let m = measure::run(
            &opts,
            &exec,
            announce,
            |p| {
                if !json {
                    eprintln!("  {}", p.label());
                }
            },
            store,
        );
        if let (Err(_), Some(dir)) = (&m, &results) {
            dir.abandon();
        }
        advice.add_measurement(m?);
    }
    let shown = advice.render(format);
    match &a.output {
        // The page goes to the file instead of standard output.
        Some(p) if format == Format::Html => {
            crate::output::write_file(p, shown.as_bytes(), a.force)?;
            eprintln!("wrote {}", p.display());
        }
        _ => {
            crate::out!("{shown}");
            if let Some(p) = &a.output {
                crate::output::write_json_force(p, &advice, a.force)?;
            }
        }
    }
    Ok(if crate::runner::signal::interrupted() {
        130
    } else {
        0
    })
}

/// File name of one stored run: `advise-sizes-003-read-direct-64k-t1-r0.json`, in the
/// order the runs were made.
fn result_name(m: &crate::sweep::record::SweepMeta) -> String {
    let axes: Vec<&str> = m.point.iter().map(|(_, v)| v.as_str()).collect();
    format!(
        "{}-{:03}-{}-t{}-r{}.json",
        m.study,
        m.index,
        axes[..axes.len().saturating_sub(1)].join("-"),
        m.value("threads").unwrap_or("1"),
        m.repeat
    )
}

/// Refuse to start a measurement that would fill the file system (the scratch file plus a
/// tenth for metadata and the file system's own reserve). On `ranks` ranks, each rank's file
/// is counted: they may all be on this file system (one host, or shared storage).
fn check_space(dir: &std::path::Path, size: u64, ranks: Option<u32>) -> anyhow::Result<()> {
    let (all, what) = match ranks {
        Some(n) => (
            size.saturating_mul(n as u64),
            format!("--measure-size on each of {n} ranks"),
        ),
        None => (size, "--measure-size".to_string()),
    };
    crate::guard::ensure_free_space(dir, all.saturating_add(all / 10), &what)
}
