//! `fsbench replay TRACE [--speed X | --no-timing] [--dir DIR]`: replay a trace as a
//! benchmark on scratch files, reported like any run, with `run`'s observation flags
//! (`--iostat`, `--trace`), stop condition (`--time`), rate caps (`--rate-*`) and checking
//! (`--verify`). Started by
//! mpirun (built with MPI), every rank replays the trace (or its own, `{rank}` in TRACE) in
//! DIR/rank-NNNNN as one distributed run through the executor, observed (`--iostat`,
//! `--trace`) and stopped (`--stonewall`) as `run` on ranks is; rank 0 reports the one Result.

use super::args::{HOW, SAFETY, WHAT, WHERE};
use super::observe::ObserveArgs;
use crate::job::RateLimit;
use crate::replay::ReplayOptions;
use crate::report::{ReportOptions, Runs};
use crate::units::RateUnit;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::format_help::<Runs>(a)),
    after_help = EXAMPLES
)]
pub(crate) struct ReplayArgs {
    /// The trace (.csv or .bin) from `fsbench run --trace` or `fsbench trace -- CMD`
    #[arg(value_name = "TRACE")]
    pub input: PathBuf,
    /// Directory for the scratch files (default: current directory)
    #[arg(long, default_value = ".", value_name = "DIR", help_heading = WHAT)]
    pub dir: PathBuf,
    /// Stop the replay after this long (10s, 2m); what was done is the result
    #[arg(long, value_name = "DUR", help_heading = WHAT)]
    pub time: Option<String>,
    /// Replay this long first as a warm-up (10s, 2m), left out of the result; --time counts
    /// after it
    #[arg(long, value_name = "DUR", help_heading = WHAT)]
    pub ramp: Option<String>,
    /// Warm up until each thread has moved SIZE bytes (64m), left out of the result;
    /// --time counts after it
    #[arg(long = "ramp-bytes", value_name = "SIZE", help_heading = WHAT)]
    pub ramp_bytes: Option<String>,
    /// Keep the traced timing, scaled (1.0 = as traced, 2.0 = twice as fast)
    #[arg(long, value_name = "FACTOR", help_heading = HOW)]
    pub speed: Option<f64>,
    /// Issue each thread's calls back to back (the default)
    #[arg(long = "no-timing", conflicts_with = "speed", help_heading = HOW)]
    pub no_timing: bool,
    /// Bypass the page cache (O_DIRECT) for the I/Os aligned to the device
    ///
    /// The others are done as O_DSYNC buffered I/O and counted.
    #[arg(long, help_heading = HOW)]
    pub direct: bool,
    /// I/O engine every replayed call goes through: sync (default) or uring
    #[arg(long, value_name = "ENGINE", help_heading = HOW)]
    pub engine: Option<String>,
    #[command(flatten)]
    pub rate: super::args::RateArgs,
    /// Write self-checking bytes with every replayed write and check replayed reads of them
    ///
    /// A read is checked when the same thread wrote its whole range earlier in the replay
    /// and no other thread writes that file; reads of ranges this replay never wrote (what
    /// the scratch files were filled with) are not checked. A mismatch fails the replay
    /// (exit 1).
    #[arg(long, help_heading = super::jobflags::CHECKING)]
    pub verify: bool,
    /// Keep the scratch files
    #[arg(long, help_heading = SAFETY)]
    pub keep: bool,
    /// Store the JSON Result in FILE
    #[arg(long, value_name = "FILE", help_heading = WHERE)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
    /// Per-thread lines
    #[arg(short = 'v', long, help_heading = WHERE)]
    pub verbose: bool,
    /// Throughput always in MiB/s (default: KiB/MiB/GiB/s as fits, with MB/s beside it)
    #[arg(long, help_heading = WHERE)]
    pub mb: bool,
    #[command(flatten)]
    pub observe: ObserveArgs,
    #[command(flatten)]
    pub repeat: super::repeat::RepeatArg,
    #[command(flatten)]
    pub dist: super::ranks::DistArgs,
}

const EXAMPLES: &str = "\
Examples:
  fsbench replay app.csv --dir /mnt/scratch
  fsbench replay app.bin --dir /mnt/scratch --speed 1.0 --format json --output replay.json";

/// `--time`, `--ramp` and the `--rate-*` flags, checked as `run` checks them.
struct Limits {
    time: Option<std::time::Duration>,
    ramp: Option<std::time::Duration>,
    ramp_bytes: Option<u64>,
    rate: RateLimit,
}

fn limits(a: &ReplayArgs) -> Result<Limits, crate::error::UsageError> {
    let time = match &a.time {
        Some(t) => {
            let d = crate::units::parse_duration(t)?;
            if d.is_zero() {
                crate::bail_usage!("--time {t}: give a duration above 0 (10s, 2m)");
            }
            Some(d)
        }
        None => None,
    };
    // A warm-up of 0 is none.
    let ramp = match &a.ramp {
        Some(r) => Some(
            crate::units::parse_duration(r)
                .map_err(|e| crate::error::UsageError(format!("--ramp: {e}")))?,
        ),
        None => None,
    };
    let ramp_bytes = crate::job::ramp_bytes_flag(a.ramp_bytes.as_deref(), ramp)?;
    let rate = a.rate.limit()?;
    Ok(Limits {
        time,
        ramp,
        ramp_bytes,
        rate,
    })
}

pub(crate) fn main(a: ReplayArgs, exec: crate::exec::Executor) -> anyhow::Result<i32> {
    let format = a.printed.get::<Runs>()?;
    let origin = a.input.display().to_string();
    let repeat = a.repeat.count()?;
    let observe = a.observe.settings()?;
    super::repeat::refuse_with(repeat, &observe, &exec)?;
    let Limits {
        time,
        ramp,
        ramp_bytes,
        rate,
    } = limits(&a)?;
    let engine = super::args::source_engine(a.engine.as_deref(), "replays")?;
    let opts = ReplayOptions {
        dir: a.dir.clone(),
        speed: if a.no_timing { None } else { a.speed },
        direct: a.direct,
        keep: a.keep,
        name: format!(
            "replay {}",
            a.input
                .file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or(origin)
        ),
        time,
        rate,
        engine,
        ramp,
        ramp_bytes,
        verify: a.verify,
    };
    crate::output::check_output(a.output.as_deref(), false)?;
    // On this host: the devices under --dir, one trace ring per replay thread. On ranks: each
    // rank reads its own trace (TRACE may hold {rank}) and observes its own replay.
    // Repetitions run on the same scratch files, made once.
    let result = super::repeat::run_replay(&exec, &a.input, &opts, &observe, repeat)?;
    let report = ReportOptions {
        unit: if a.mb {
            RateUnit::MebiBytes
        } else {
            RateUnit::Auto
        },
        summary_only: false,
        per_thread: a.verbose,
    };
    super::output::emit(&[result], format, &report, a.output.as_deref(), false)
}
