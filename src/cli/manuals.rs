//! `fsbench completions SHELL` and `fsbench man [SUBCOMMAND]`: shell completion scripts and
//! roff man pages generated from the same clap definitions the parser uses, so they never
//! drift from the real options.

use crate::bail_usage;
use clap::{Args, CommandFactory, ValueEnum};

/// The shells a completion script is generated for.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Args, Debug)]
pub(crate) struct CompletionsArgs {
    /// The shell to generate the completion script for
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

#[derive(Args, Debug)]
pub(crate) struct ManArgs {
    /// A subcommand (run, sweep, ...): its own page, named fsbench-SUBCOMMAND; none: fsbench(1)
    pub subcommand: Option<String>,
}

/// Print the completion script for the shell on standard output.
pub(crate) fn completions(a: CompletionsArgs) -> anyhow::Result<i32> {
    let shell = match a.shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut visible_command(), "fsbench", &mut script);
    write_stdout(&script)
}

/// Print the man page of fsbench, or of one of its subcommands, as roff.
pub(crate) fn man(a: ManArgs) -> anyhow::Result<i32> {
    let top = visible_command();
    let page = match &a.subcommand {
        None => top,
        Some(name) => {
            let visible: Vec<String> = top
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(|s| s.get_name().to_string())
                .collect();
            let Some(sub) = top
                .get_subcommands()
                .find(|s| !s.is_hide_set() && s.get_name() == name.as_str())
            else {
                bail_usage!(
                    "man: unknown subcommand '{}': expected one of {}",
                    name,
                    visible.join(", ")
                );
            };
            // The page's name and its synopsis read `fsbench-run`, as git's pages do.
            let page_name = format!("fsbench-{}", sub.get_name());
            sub.clone()
                .bin_name(format!("fsbench {}", sub.get_name()))
                .display_name(page_name)
                .version(env!("CARGO_PKG_VERSION"))
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page).render(&mut roff)?;
    write_stdout(&roff)
}

/// fsbench's command as a user sees it: the hidden worker command is left out, since the
/// completion generators and man pages would otherwise offer it.
fn visible_command() -> clap::Command {
    let full = super::Cli::command();
    let mut visible = clap::Command::new("fsbench")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommand_required(true);
    if let Some(about) = full.get_about() {
        visible = visible.about(about.clone());
    }
    if let Some(after) = full.get_after_help() {
        visible = visible.after_help(after.clone());
    }
    visible.subcommands(full.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<i32> {
    use std::io::Write as _;
    std::io::stdout()
        .lock()
        .write_all(bytes)
        .map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}"))?;
    Ok(0)
}
