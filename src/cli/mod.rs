//! Command-line front ends: one file per subcommand, argument handling only. Each builds Jobs
//! (or reads Results) and hands them to the runner or the report layer.

pub mod output;
pub mod quick;
pub mod run;
pub mod vx;
pub mod workload;

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
    /// vxbench's command line: fsbench vx -w workload [options] filename ...
    #[command(disable_help_flag = true)]
    Vx {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run a Filebench workload: a shipped personality (`fsbench workload list`) or a .f file.
    Workload(workload::WorkloadArgs),
    /// Internal: a workload process started by `fsbench workload`.
    #[command(name = "__wml_worker", hide = true)]
    WmlWorker,
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
        Command::Workload(a) => workload::main(a),
        Command::WmlWorker => {
            crate::workload::worker::worker_main()?;
            Ok(0)
        }
        Command::Worker => {
            crate::runner::process::worker_main()?;
            Ok(0)
        }
    }
}
