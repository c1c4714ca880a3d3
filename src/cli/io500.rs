//! `fsbench io500 [--config FILE] DIR`: IO500's twelve phases on this host or on MPI ranks (`crate::io500`),
//! IO500's phase table and score out, and the Result.

use super::args::{SAFETY, WHAT, WHERE};
use crate::io500::config::{Config, MAX_CONFIG_BYTES};
use crate::report::ReportOptions;
use crate::usage;
use clap::Args;
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Args, Debug, Default)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Io500Args {
    /// The directory the phases work in [default: the configuration's [global] datadir]
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// IO500's configuration file (INI: [global] datadir, [debug] stonewall-time, ...)
    #[arg(long, value_name = "FILE", help_heading = WHAT)]
    pub config: Option<PathBuf>,
    /// Seconds each write phase runs (under IO500's 300: unofficial) [default: config's, else 300]
    #[arg(long, value_name = "SECONDS", help_heading = WHAT)]
    pub stonewall: Option<u64>,
    /// Keep the directory the run made
    #[arg(long, help_heading = SAFETY)]
    pub keep: bool,
    /// Allow --output to replace an existing file
    #[arg(long, help_heading = SAFETY)]
    pub force: bool,
    /// Store the JSON Result in FILE
    #[arg(long, value_name = "FILE", help_heading = WHERE)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
}

const EXAMPLES: &str = "\
Examples:
  fsbench io500 /mnt/scratch                      # IO500's defaults, 300 s stonewall
  fsbench io500 --stonewall 10 /mnt/scratch       # a quick, unofficial run
  fsbench io500 --config io500.ini --output io500.json";

/// The configuration file, read bounded (a hostile or mistaken path is refused, not read
/// whole).
fn read_config(path: &Path) -> anyhow::Result<Config> {
    let f = std::fs::File::open(path).map_err(|e| usage!("--config {}: {e}", path.display()))?;
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err(usage!("--config {}: not a regular file", path.display()).into());
    }
    let mut text = String::new();
    f.take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| usage!("--config {}: {e} (a text file is expected)", path.display()))?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(usage!(
            "--config {}: larger than {MAX_CONFIG_BYTES} bytes; an IO500 configuration is a few lines",
            path.display()
        )
        .into());
    }
    Ok(Config::parse(&text, &path.display().to_string())?)
}

/// `fsbench io500`, on this host or, started by mpirun, on every rank: the arguments are
/// checked on every rank (rank 0 alone says what is wrong), then rank 0 runs the phases.
pub(crate) fn dispatch(a: Io500Args) -> anyhow::Result<i32> {
    let checked = options(&a);
    let quiet = super::ranks::launched_rank().unwrap_or(0) != 0;
    let (format, opts) = match checked {
        Ok(c) => c,
        // Rank 0 says why and exits 2, which mpirun reports; a rank that exited 2 first would
        // have mpirun end the job, at times before rank 0 has printed its line.
        Err(_) if quiet => return Ok(0),
        Err(e) => return Err(e),
    };
    super::ranks::on_ranks("io500", &Default::default(), |exec| {
        main(&a, format, &opts, exec)
    })
}

/// The Result's format and the run's options from the arguments, checked.
fn options(a: &Io500Args) -> anyhow::Result<(crate::report::Format, crate::io500::Options)> {
    let format = a.printed.get::<crate::report::Runs>()?;
    let mut config = match &a.config {
        Some(p) => read_config(p)?,
        None => Config::default(),
    };
    if let Some(s) = a.stonewall {
        if s == 0 || s > 86_400 {
            return Err(usage!("--stonewall {s}: give 1 to 86400 seconds").into());
        }
        config.stonewall_s = s;
    }
    config.check()?;
    let dir = a
        .dir
        .clone()
        .or_else(|| config.datadir.clone())
        .ok_or_else(|| usage!("no directory: give DIR or [global] datadir in the --config file"))?;
    crate::output::check_output(a.output.as_deref(), a.force)?;
    let opts = crate::io500::Options {
        config,
        dir,
        keep: a.keep,
    };
    Ok((format, opts))
}

/// Rank 0 (or this host): the phases, their table and the Result.
fn main(
    a: &Io500Args,
    format: crate::report::Format,
    opts: &crate::io500::Options,
    exec: crate::exec::Executor,
) -> anyhow::Result<i32> {
    let (result, top) = crate::io500::run_on(opts, &exec)?;
    let code = super::output::emit(
        &[result],
        format,
        &ReportOptions::default(),
        a.output.as_deref(),
        a.force,
    );
    // The run's directory goes after the Result is written (see `run_on`).
    drop(top);
    code
}
