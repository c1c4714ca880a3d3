//! Command-line front ends: one file per subcommand, argument handling only. Each builds Jobs
//! (or reads Results) and hands them to the runner or the report layer.

pub(crate) mod ab;
pub(crate) mod advise;
pub(crate) mod args;
pub(crate) mod compare;
pub(crate) mod fio;
pub(crate) mod frag;
pub(crate) mod fscompare;
pub(crate) mod io500;
pub(crate) mod ior;
pub(crate) mod iostat;
pub(crate) mod jobflags;
pub(crate) mod manuals;
pub(crate) mod mdtest;
pub(crate) mod observe;
pub(crate) mod output;
pub(crate) mod quick;
pub(crate) mod ranks;
pub(crate) mod repeat;
pub(crate) mod replay;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod ssd_pts;
pub(crate) mod suite;
pub(crate) mod sweep;
pub(crate) mod trace;
pub(crate) mod verify;
pub(crate) mod vx;
pub(crate) mod workload;

#[cfg(test)]
mod statistics_tests;

/// `print!` that returns an error instead of panicking when standard output cannot be
/// written (a full disk behind a redirection, `>/dev/full`): one line, exit 1.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*)
            .map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}"))?;
    }};
}

/// `println!` that returns an error instead of panicking (see [`out!`]).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
            .map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}"))?;
    }};
}

use clap::{CommandFactory, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "fsbench",
    version,
    about = "File-system and storage I/O benchmark: vxbench and Filebench, measured honestly",
    after_help = "Start with `fsbench quick [DIR]`. Exit status: 0 ok, 1 the run failed, 2 bad usage."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// A ~1 minute CrystalDiskMark-style battery on a scratch file in DIR
    ///
    /// SEQ1M Q8T1/Q1T1 and RND4K Q32T1/Q1T1, read and write, direct I/O; buffered and O_DSYNC
    /// extras.
    Quick(quick::QuickArgs),
    /// Run one job from flags or a TOML job file.
    Run(run::RunArgs),
    /// Run two settings alternately on the same files: is B faster than A, or within noise?
    Ab(ab::AbArgs),
    /// Sweep job parameters (comma lists become axes) and tabulate the results.
    Sweep(sweep::SweepArgs),
    /// Run a shipped suite that regenerates a published document's tables (`fsbench suite list`).
    Suite(suite::SuiteArgs),
    /// Tables and charts from stored results: text, md, csv, json or html.
    Report(report::ReportArgs),
    /// Compare two sets of results point by point (ratios; noise from --repeat spread).
    Compare(compare::CompareArgs),
    /// vxbench's command line: fsbench vx -w workload [options] filename ...
    #[command(disable_help_flag = true, after_help = VX_EXAMPLES)]
    Vx {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run fio job files or fio's command line: fsbench fio JOB.fio ... | --name=x --rw=read ...
    #[command(disable_help_flag = true, after_help = FIO_EXAMPLES)]
    Fio {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// IOR's bandwidth benchmark: fsbench ior -w -r -b 4m -t 64k -s 2 [-F] [-C] -o FILE
    #[command(disable_help_flag = true, after_help = IOR_EXAMPLES)]
    Ior {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// mdtest's metadata benchmark, on this host or MPI ranks: fsbench mdtest -n N [-F|-D] -d DIR
    #[command(disable_help_flag = true, after_help = MDTEST_EXAMPLES)]
    Mdtest {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// IO500's twelve phases and score, on this host or MPI ranks: fsbench io500 [--config FILE] DIR
    Io500(io500::Io500Args),
    /// Tuning recommendations (VxFS-style tunables, checks, optional measurements) for PATH.
    Advise(advise::AdviseArgs),
    /// Device statistics like `sar -d`: fsbench iostat [PATH] INTERVAL [COUNT]
    Iostat(iostat::IostatArgs),
    /// Capture a program's file I/O (fsbench trace -- CMD ARGS) or analyse a trace (--analyze FILE)
    Trace(trace::TraceArgs),
    /// Replay a trace as a benchmark on scratch files
    Replay(replay::ReplayArgs),
    /// Fragmentation: extents per file, of directories (--dirs), of free space (--free)
    ///
    /// With --reorg, reorganise files into fewer extents.
    Frag(frag::FragArgs),
    /// Run a Filebench workload: a shipped personality (`fsbench workload list`) or a .f file.
    Workload(workload::WorkloadArgs),
    /// After a crash: check files written with --journal against what storage acknowledged.
    Verify(verify::VerifyArgs),
    /// Build file systems and layouts on scratch devices, run the same study on each, compare.
    Fscompare(fscompare::FscompareArgs),
    /// Print a shell completion script: fsbench completions bash|zsh|fish
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(manuals::CompletionsArgs),
    /// Print a roff man page for fsbench or one subcommand: fsbench man [SUBCOMMAND]
    #[command(after_help = MAN_EXAMPLES)]
    Man(manuals::ManArgs),
    /// Internal: a worker process started by the runner (Job workers or a workload process).
    #[command(name = "__worker", hide = true)]
    Worker,
}

const VX_EXAMPLES: &str = "\
Examples:
  fsbench vx -w rand_read -i iosize=4k,iocount=10000,nthreads=4 -c direct data.f
  fsbench vx --help";

const FIO_EXAMPLES: &str = "\
Examples:
  fsbench fio randread.fio --format json --output randread.json
  fsbench fio --name=seq --rw=write --bs=1m --size=64m --directory=/mnt/scratch
  fsbench fio --help";

const IOR_EXAMPLES: &str = "\
Examples:
  fsbench ior -w -r -b 4m -t 64k -s 2 -o /mnt/scratch/f
  mpirun -np 16 fsbench ior -w -r -F -C -b 1g -t 1m -o /mnt/pfs/f -i 3
  fsbench ior --help";

const MDTEST_EXAMPLES: &str = "\
Examples:
  fsbench mdtest -n 1000 -F -d /mnt/scratch
  fsbench mdtest -n 100 -z 2 -b 3 -i 3 -d /mnt/scratch --output md.json
  fsbench mdtest --help";

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  fsbench completions bash > /etc/bash_completion.d/fsbench
  fsbench completions zsh > ~/.zfunc/_fsbench";

const MAN_EXAMPLES: &str = "\
Examples:
  fsbench man > fsbench.1 && man ./fsbench.1
  fsbench man run > fsbench-run.1";

/// The subcommands a user can give, as `fsbench --help` lists them.
fn subcommand_names() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect()
}

/// Run the CLI and map the outcome to an exit status.
pub fn main_with_exit_code() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            if !e.use_stderr() {
                // --help and --version: what was asked for, on stdout.
                let _ = e.print();
                return 0;
            }
            // Under mpirun every rank parses the same words: rank 0 alone says what is wrong,
            // so a bad flag is one line, not one per rank; it exits 2, which mpirun reports.
            // The other ranks exit 0: one that exited 2 first would have mpirun end the job,
            // at times before rank 0 has printed its line.
            if ranks::launched_rank().unwrap_or(0) != 0 {
                return 0;
            }
            let argv: Vec<String> = std::env::args_os()
                .skip(1)
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            eprintln!("{}", usage_line(&e, &argv));
            return 2;
        }
    };
    // What is still buffered for stdout is written here, so a failure to write it is an
    // error line like any other, not a silent loss at exit.
    let done = dispatch(cli.command).and_then(|code| {
        use std::io::Write as _;
        std::io::stdout()
            .flush()
            .map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}"))?;
        Ok(code)
    });
    match done {
        Ok(code) => code,
        Err(e) => error_status(&e),
    }
}

/// Print an error as its one line on stderr and give its exit status (2 usage, 1 failure).
pub(crate) fn error_status(e: &anyhow::Error) -> i32 {
    if crate::error::is_usage(e) {
        eprintln!("fsbench: {}", one_line(&e.to_string()));
        2
    } else {
        eprintln!("fsbench: error: {}", one_line(&format!("{e:#}")));
        1
    }
}

fn dispatch(cmd: Command) -> anyhow::Result<i32> {
    // Started by mpirun: run, sweep, suite, workload, vx, quick, replay, mdtest, ior, io500 and advise --measure
    // run on every rank (`ranks::on_ranks`); the other commands that do I/O would run as N
    // unrelated copies.
    let io_command = match &cmd {
        // Built with MPI, each rank captures its own command (`trace::main_on_ranks`).
        Command::Trace(_) if !cfg!(feature = "mpi") => Some("trace"),
        Command::Fscompare(_) => Some("fscompare"),
        Command::Ab(_) => Some("ab"),
        _ => None,
    };
    if let Some(name) = io_command {
        ranks::refuse_under_mpirun(name)?;
    }
    match cmd {
        Command::Quick(a) => {
            ranks::on_ranks("quick", &Default::default(), |exec| quick::main(a, exec))
        }
        Command::Run(a) => {
            let dist = a.dist.clone();
            ranks::on_ranks("run", &dist, |exec| run::main(a, exec))
        }
        Command::Vx { args } => {
            ranks::on_ranks("vx", &Default::default(), |exec| vx::main(&args, exec))
        }
        Command::Fio { args } => {
            ranks::on_ranks("fio", &Default::default(), |exec| fio::main(&args, exec))
        }
        Command::Advise(a) => {
            if let Some(code) = advise::refuse_without_measure_on_ranks(&a)? {
                return Ok(code);
            }
            ranks::on_ranks("advise", &Default::default(), |exec| advise::main(a, exec))
        }
        Command::Sweep(a) => {
            let dist = a.dist.clone();
            ranks::on_ranks("sweep", &dist, |exec| sweep::main(a, exec))
        }
        Command::Suite(a) => {
            let dist = a.dist.clone();
            ranks::on_ranks("suite", &dist, |exec| suite::main(a, exec))
        }
        Command::Mdtest { args } => ranks::on_ranks("mdtest", &Default::default(), |exec| {
            mdtest::main(&args, exec)
        }),
        Command::Io500(a) => io500::dispatch(a),
        Command::Ior { args } => ior::dispatch(&args),
        Command::Ab(a) => ab::main(a, Default::default()),
        Command::Report(a) => report::main(a),
        Command::Compare(a) => compare::main(a),
        Command::Iostat(a) => iostat::main(a),
        #[cfg(feature = "mpi")]
        Command::Trace(a) if ranks::launched_ranks().is_some_and(|n| n > 1) => {
            trace::main_on_ranks(a)
        }
        Command::Trace(a) => trace::main(a),
        Command::Replay(a) => {
            let dist = a.dist.clone();
            ranks::on_ranks("replay", &dist, |exec| replay::main(a, exec))
        }
        Command::Frag(a) => frag::main(a),
        Command::Workload(a) => {
            let dist = a.dist.clone();
            ranks::on_ranks("workload", &dist, |exec| workload::main(a, exec))
        }
        Command::Verify(a) => verify::main(a),
        Command::Fscompare(a) => fscompare::main(a),
        Command::Completions(a) => manuals::completions(a),
        Command::Man(a) => manuals::man(a),
        Command::Worker => {
            crate::runner::drive::worker_main(|child, stdin| match child.source.as_str() {
                "job" => crate::runner::process::child(serde_json::from_value(child.spec)?, stdin),
                "workload" => crate::workload::worker::child(serde_json::from_value(child.spec)?),
                other => anyhow::bail!("reading the worker spec: unknown source '{other}'"),
            })?;
            Ok(0)
        }
    }
}

/// A message as one line: control characters from user input (a file name with a newline)
/// are shown escaped, so the error stays the single line the exit status promises.
pub(crate) fn one_line(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    for c in msg.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A parse error as the one line every usage error is: clap's message (its first paragraph,
/// joined), then where to look, e.g. `fsbench: unexpected argument '--x' found; try 'fsbench
/// run --help'`. clap's own rendering adds a usage block and tips over several lines.
pub(crate) fn usage_line(e: &clap::Error, argv: &[String]) -> String {
    use clap::error::ErrorKind;
    // The subcommand the user was in, if any: the first word naming one.
    let cmd = Cli::command();
    let sub = argv.iter().find_map(|a| {
        cmd.get_subcommands()
            .find(|s| !s.is_hide_set() && s.get_name() == a.as_str())
            .map(|s| s.get_name().to_string())
    });
    let help = match &sub {
        Some(s) => format!("fsbench {s} --help"),
        None => "fsbench --help".to_string(),
    };
    let msg = match e.kind() {
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            match &sub {
                Some(s) => format!("'{s}' needs more arguments"),
                None => format!("no subcommand given ({})", subcommand_names().join(", ")),
            }
        }
        _ => {
            let text = e.render().to_string();
            let first: Vec<&str> = text
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(str::trim)
                .collect();
            let joined = first.join(" ");
            let m = joined
                .strip_prefix("error: ")
                .unwrap_or(&joined)
                .to_string();
            if m.is_empty() {
                format!("{:?}", e.kind())
            } else {
                m
            }
        }
    };
    // Control characters from the command line must not break the one line.
    let msg: String = msg
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    format!("fsbench: {msg}; try '{help}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> String {
        let argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let e = Cli::try_parse_from(std::iter::once("fsbench").chain(args.iter().copied()))
            .err()
            .expect("a parse error");
        usage_line(&e, &argv)
    }

    #[test]
    fn every_kind_of_parse_error_is_one_line_naming_where_to_look() {
        for (args, want) in [
            (&["run", "--x"][..], "unexpected argument '--x'"),
            (&["run", "--threads"], "a value is required"),
            (&["run", "--threads", "abc"], "invalid value 'abc'"),
            (
                &["replay"],
                "the following required arguments were not provided: <TRACE>",
            ),
            (&["nosuch"], "unrecognized subcommand 'nosuch'"),
            (&[], "no subcommand given"),
            (&["run", "--threads", "a\nb\tc"], "a b?c"),
        ] {
            let l = line(args);
            assert_eq!(l.lines().count(), 1, "{args:?}: {l}");
            assert!(l.starts_with("fsbench: "), "{l}");
            assert!(l.contains(want), "{args:?}: {l}");
        }
        assert!(line(&["run", "--x"]).ends_with("; try 'fsbench run --help'"));
        assert!(line(&["nosuch"]).ends_with("; try 'fsbench --help'"));
        assert_eq!(one_line("a\nb\tc\u{1b}d é"), "a\\nb\\tc\\u{1b}d é");
    }

    /// Help stays readable: every option's one-line help fits in 100 columns (the rest is
    /// its long help), and every subcommand ends its help with examples.
    #[test]
    fn help_lines_are_short_and_every_subcommand_has_examples() {
        let cmd = Cli::command();
        let mut long = Vec::new();
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let name = sub.get_name();
            let after = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(after.starts_with("Examples:\n"), "{name} has no examples");
            let examples = after
                .lines()
                .filter(|l| l.starts_with("  fsbench "))
                .count();
            assert!(examples >= 2, "{name}: {examples} examples");
            let about = sub.get_about().map(|h| h.to_string()).unwrap_or_default();
            if about.len() > 100 || about.contains('\n') {
                long.push(format!("{name}: {} chars: {about}", about.len()));
            }
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                if help.len() > 100 || help.contains('\n') {
                    long.push(format!(
                        "{name} {}: {} chars: {help}",
                        arg.get_id(),
                        help.len()
                    ));
                }
            }
        }
        assert!(long.is_empty(), "help lines too long:\n{}", long.join("\n"));
    }
}
