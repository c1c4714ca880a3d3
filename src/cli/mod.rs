//! Command-line front ends: one file per subcommand, argument handling only. Each builds Jobs
//! (or reads Results) and hands them to the runner or the report layer.

pub mod advise;
pub mod compare;
pub mod frag;
pub mod iostat;
pub mod observe;
pub mod output;
pub mod quick;
pub mod replay;
pub mod report;
pub mod run;
pub mod suite;
pub mod sweep;
pub mod trace;
pub mod vx;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "fsbench",
    version,
    about = "File-system and storage I/O benchmark: vxbench and Filebench, measured honestly",
    after_help = "Start with `fsbench quick [DIR]`. Exit status: 0 ok, 1 the run failed, 2 bad usage."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// A ~1 minute standard battery on a scratch file in DIR (default: current directory).
    Quick(quick::QuickArgs),
    /// Run one job from flags or a TOML job file.
    Run(run::RunArgs),
    /// Sweep job parameters (comma lists become axes) and tabulate the results.
    Sweep(sweep::SweepArgs),
    /// Run a shipped suite that regenerates a seed paper's tables (`fsbench suite list`).
    Suite(suite::SuiteArgs),
    /// Tables and charts from stored results: text, md, csv, json or html.
    Report(report::ReportArgs),
    /// Compare two sets of results point by point (ratios; noise from --repeat spread).
    Compare(compare::CompareArgs),
    /// vxbench's command line: fsbench vx -w workload [options] filename ...
    #[command(disable_help_flag = true)]
    Vx {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Tuning recommendations (VxFS-style tunables, checks, optional measurements) for PATH.
    Advise(advise::AdviseArgs),
    /// Device statistics like `sar -d`: fsbench iostat [PATH] INTERVAL [COUNT]
    Iostat(iostat::IostatArgs),
    /// Capture a program's file I/O (fsbench trace -- CMD ARGS) or analyse a trace (--analyze FILE)
    Trace(trace::TraceArgs),
    /// Replay a trace as a benchmark on scratch files
    Replay(replay::ReplayArgs),
    /// Extents per file under a path (fragmentation report)
    Frag(frag::FragArgs),
    /// Internal: a worker process started by the runner.
    #[command(name = "__worker", hide = true)]
    Worker,
}

/// Run the CLI and map the outcome to an exit status.
pub fn main_with_exit_code() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            if crate::error::is_usage(&e) {
                eprintln!("fsbench: {e}");
                2
            } else {
                eprintln!("fsbench: error: {e:#}");
                1
            }
        }
    }
}

fn dispatch(cmd: Command) -> anyhow::Result<i32> {
    match cmd {
        Command::Quick(a) => quick::main(a),
        Command::Run(a) => run::main(a),
        Command::Vx { args } => vx::main(&args),
        Command::Advise(a) => advise::main(a),
        Command::Sweep(a) => sweep::main(a),
        Command::Suite(a) => suite::main(a),
        Command::Report(a) => report::main(a),
        Command::Compare(a) => compare::main(a),
        Command::Iostat(a) => iostat::main(a),
        Command::Trace(a) => trace::main(a),
        Command::Replay(a) => replay::main(a),
        Command::Frag(a) => frag::main(a),
        Command::Worker => {
            crate::runner::process::worker_main()?;
            Ok(0)
        }
    }
}
