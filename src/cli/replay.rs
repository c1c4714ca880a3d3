//! `fsbench replay TRACE [--speed X | --no-timing] [--dir DIR]`: replay a trace as a
//! benchmark on scratch files, reported like any run.

use crate::report::{Format, ReportOptions, Runs};
use crate::trace::replay::{self, ReplayOptions};
use crate::units::RateUnit;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace (.csv or .bin) from `fsbench run --trace` or `fsbench trace -- CMD`
    pub trace: PathBuf,
    /// Keep the traced timing, scaled (1.0 = as traced, 2.0 = twice as fast)
    #[arg(long)]
    pub speed: Option<f64>,
    /// Issue each thread's calls back to back (the default)
    #[arg(long = "no-timing", conflicts_with = "speed")]
    pub no_timing: bool,
    /// Bypass the page cache (O_DIRECT) for the I/Os aligned to the device; the others are
    /// done as O_DSYNC buffered I/O and counted
    #[arg(long)]
    pub direct: bool,
    /// Directory for the scratch files (default: current directory)
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Keep the scratch files
    #[arg(long)]
    pub keep: bool,
    /// Write the JSON Result here
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// text, json, csv
    #[arg(long = "output-format", default_value = "text")]
    pub output_format: String,
    /// Per-thread lines
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Throughput in MB/s instead of KB/s
    #[arg(long)]
    pub mb: bool,
    /// Sample the devices under --dir every INTERVAL during the replay (1s, 500ms)
    #[arg(long, value_name = "INTERVAL")]
    pub iostat: Option<String>,
}

pub fn main(a: ReplayArgs) -> anyhow::Result<i32> {
    let format = Format::parse_for::<Runs>(&a.output_format, "--output-format")?;
    let trace = crate::trace::format::read_file(&a.trace)?;
    let origin = a.trace.display().to_string();
    let opts = ReplayOptions {
        dir: a.dir.clone(),
        speed: if a.no_timing { None } else { a.speed },
        direct: a.direct,
        keep: a.keep,
        name: format!(
            "replay {}",
            a.trace
                .file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or(origin.clone())
        ),
    };
    // The devices to sample are the ones under --dir.
    let scope = crate::observe::Scope {
        targets: vec![a.dir.clone()],
        ..Default::default()
    };
    let observe =
        crate::observe::Observe::iostat(super::observe::iostat_flag(a.iostat.as_deref())?);
    crate::output::check_output(a.output.as_deref(), false)?;
    let observer = crate::observe::Observer::start_for(&observe, &scope)?;
    let mut result = replay::run(&trace, &origin, &opts)?;
    let elapsed_s = result.total.elapsed_s;
    observer.finish(&mut result, elapsed_s)?;
    let report = ReportOptions {
        unit: if a.mb {
            RateUnit::MegaBytes
        } else {
            RateUnit::KiloBytes
        },
        summary_only: false,
        per_thread: a.verbose,
    };
    super::output::emit(&[result], format, &report, a.output.as_deref(), false)
}
