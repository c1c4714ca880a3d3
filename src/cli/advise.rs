//! `fsbench advise PATH [--measure] [--format text|json]`: tuning recommendations for the
//! storage under PATH. Argument handling only; the work is in [`crate::advise`].

use crate::advise::{self, measure};
use crate::probe::topology::{SysfsProbe, Topology};
use crate::report::{Format, Render};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AdviseArgs {
    /// A directory or file on the storage to advise on (the scratch file for --measure goes in
    /// this directory, or in the file's directory)
    pub path: PathBuf,
    /// Also measure: I/O-size knee, direct-vs-buffered crossover and stream count, on a
    /// scratch file fsbench creates and removes
    #[arg(long)]
    pub measure: bool,
    /// Size of the scratch file for --measure
    #[arg(long = "measure-size", default_value = "1g")]
    pub measure_size: String,
    /// Time budget for all measured points together (each point gets an equal share)
    #[arg(long = "measure-time", default_value = "80s")]
    pub measure_time: String,
    /// Runs of each measured point; the median is kept (the time budget is shared by all runs)
    #[arg(long = "measure-repeat", default_value_t = 3)]
    pub measure_repeat: u32,
    /// text, json or html (a self-contained page with charts of the measurements)
    #[arg(long, default_value = "text")]
    pub format: String,
    /// Also write the JSON to this file (with --format html: write the page here instead of
    /// standard output)
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Let --output replace a regular file fsbench did not write
    #[arg(long)]
    pub force: bool,
}

pub fn main(a: AdviseArgs) -> anyhow::Result<i32> {
    let format = Format::parse_for::<advise::Advice>(&a.format, "--format")?;
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
        check_space(&dir, size)?;
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
                eprintln!(
                    "fsbench advise: measuring in {} ({} scratch file, about {} s)...",
                    opts.dir.display(),
                    crate::units::format_size_exact(size),
                    budget.round()
                );
            }
        };
        let m = measure::run(&opts, announce, |p| {
            if !json {
                eprintln!("  {}", p.label());
            }
        })?;
        advice.add_measurement(m);
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

/// Refuse to start a measurement that would fill the file system (the scratch file plus a
/// tenth for metadata and the file system's own reserve).
fn check_space(dir: &std::path::Path, size: u64) -> anyhow::Result<()> {
    crate::guard::ensure_free_space(dir, size.saturating_add(size / 10), "--measure-size")
}
