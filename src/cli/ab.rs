//! `fsbench ab --a "FLAGS" --b "FLAGS" [--rounds N] [run flags] TARGET...`: two settings of a
//! run, alternately (A B B A A B ...) on the same prepared files, judged per headline metric
//! by the paired test of `crate::stats::bootstrap` (`crate::ab` holds the document).

use super::run::RunArgs;
use crate::ab::{AbReport, AbSide};
use crate::job::Job;
use crate::report::Format;
use crate::result::Figures;
use crate::{bail_usage, usage};
use clap::{Args, CommandFactory, FromArgMatches, Parser};

#[derive(Args, Debug)]
#[command(after_help = EXAMPLES)]
pub(crate) struct AbArgs {
    /// Side A: `run` flags in one quoted word, a TOML job file, or a .f workload file
    #[arg(long = "a", value_name = "FLAGS", allow_hyphen_values = true)]
    pub a: String,
    /// Side B: as --a; whatever it does not set comes from the common flags
    #[arg(long = "b", value_name = "FLAGS", allow_hyphen_values = true)]
    pub b: String,
    /// Rounds: each runs A and B once, in the order A B, B A, A B, ...
    ///
    /// Fewer than 6 rounds cannot show a difference at 95 % (the signed-rank test's limit).
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub rounds: u32,
    /// `run` flags both sides share (--count, --cpus, --format, --output, ...) and TARGETs
    #[arg(
        value_name = "RUN FLAGS... TARGET",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 0..
    )]
    pub common: Vec<String>,
}

const EXAMPLES: &str = "\
Examples:
  fsbench ab --a \"--bs 4k\" --b \"--bs 64k\" --rw read --size 64m data.f
  fsbench ab --a \"--engine sync\" --b \"--engine uring --qd 8\" --rounds 10 --cpus 2 --time 2s data.f
  fsbench ab --a old.toml --b new.toml --format json --output ab.json";

/// One side's flags, as clap parses `run`'s (a later flag overrides an earlier one).
#[derive(Parser)]
#[command(name = "fsbench ab")]
struct SideCli {
    #[command(flatten)]
    run: RunArgs,
}

/// Words of a `--a`/`--b` value: split at white space, with '...' and "..." quoting.
fn split_words(s: &str, flag: &str) -> Result<Vec<String>, crate::error::UsageError> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        bail_usage!("{flag} '{s}': a quote is not closed");
    }
    words.extend(word);
    Ok(words)
}

/// The first paragraph of a clap error, as one line.
fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let joined = first.join(" ");
    super::one_line(joined.strip_prefix("error: ").unwrap_or(&joined))
}

/// `run`'s arguments of one side: the common words, then the side's own.
fn side_args(common: &[String], side: &[String], flag: &str) -> anyhow::Result<RunArgs> {
    let argv = std::iter::once("fsbench ab".to_string())
        .chain(common.iter().cloned())
        .chain(side.iter().cloned());
    let m = SideCli::command()
        .args_override_self(true)
        .try_get_matches_from(argv)
        .map_err(|e| usage!("{flag}: {}; see 'fsbench run --help'", clap_line(&e)))?;
    let cli = SideCli::from_arg_matches(&m).map_err(|e| usage!("{flag}: {}", clap_line(&e)))?;
    Ok(cli.run)
}

/// What one side runs.
// why: only the two sides of one comparison exist; boxing either variant just moves the gap.
#[allow(clippy::large_enum_variant)]
enum Side {
    Job(Job),
    /// A Filebench workload file in the target directory.
    Workload {
        src: crate::workload::Source,
        model: crate::workload::model::Model,
        opts: crate::workload::run::Options,
        dir: std::path::PathBuf,
    },
}

impl Side {
    fn targets(&self) -> Vec<std::path::PathBuf> {
        match self {
            Side::Job(j) => j.targets.clone(),
            Side::Workload { dir, .. } => vec![dir.clone()],
        }
    }
}

/// One side: `run` flags (with a TOML job file or not), or a `.f` workload file with
/// `workload` flags after it.
fn side(common: &[String], value: &str, flag: &str) -> anyhow::Result<Side> {
    let words = split_words(value, flag)?;
    if words.is_empty() {
        bail_usage!(
            "{flag} is empty: give `run` flags (\"--bs 64k\"), a TOML job file or a .f file"
        );
    }
    match words.iter().position(|w| w.ends_with(".f")) {
        Some(0) => workload_side(common, &words, flag),
        Some(_) => bail_usage!(
            "{flag} '{value}': a .f workload file comes first, its `workload` flags after it"
        ),
        None => side_job(common, &words, flag).map(Side::Job),
    }
}

/// A workload side: the file and its own `workload` flags; its directory is the one TARGET,
/// and of the common flags `--time` applies.
fn workload_side(common: &[String], words: &[String], flag: &str) -> anyhow::Result<Side> {
    #[derive(Parser)]
    #[command(name = "fsbench ab")]
    struct WorkloadCli {
        #[command(flatten)]
        w: super::workload::WorkloadArgs,
    }
    let run = side_args(common, &[], "the common flags")?;
    let [dir] = &run.inputs[..] else {
        bail_usage!(
            "{flag} {}: a workload side runs in one directory: give one TARGET directory",
            words[0]
        );
    };
    let mut argv = vec!["fsbench ab".to_string(), words[0].clone()];
    argv.extend(["--dir".to_string(), dir.display().to_string()]);
    if let Some(t) = &run.time {
        argv.extend(["--time".to_string(), t.clone()]);
    }
    argv.extend(words[1..].iter().cloned());
    let m = WorkloadCli::command()
        .args_override_self(true)
        .try_get_matches_from(argv)
        .map_err(|e| usage!("{flag}: {}; see 'fsbench workload --help'", clap_line(&e)))?;
    let w = WorkloadCli::from_arg_matches(&m)
        .map_err(|e| usage!("{flag}: {}", clap_line(&e)))?
        .w;
    if w.repeat.repeat.is_some() {
        bail_usage!("{flag}: --repeat has no place in a side of ab: give --rounds N");
    }
    let (src, model, opts) =
        super::workload::prepare(&w, false).map_err(|e| side_error(e, flag))?;
    Ok(Side::Workload {
        src,
        model,
        opts,
        dir: dir.clone(),
    })
}

/// A usage error of a side, naming the side.
fn side_error(e: anyhow::Error, flag: &str) -> anyhow::Error {
    match crate::error::is_usage(&e) {
        true => usage!("{flag}: {e}").into(),
        false => e,
    }
}

/// The Job of a side given as `run` flags.
fn side_job(common: &[String], words: &[String], flag: &str) -> anyhow::Result<Job> {
    let a = side_args(common, words, flag)?;
    if a.repeat.repeat.is_some() {
        bail_usage!("{flag}: --repeat has no place in a side of ab: give --rounds N");
    }
    super::run::build_job(&a).map_err(|e| side_error(e, flag))
}

fn targets(t: &[std::path::PathBuf]) -> String {
    t.iter()
        .map(|t| t.display().to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn main(a: AbArgs, exec: crate::exec::Executor) -> anyhow::Result<i32> {
    if a.rounds == 0 {
        bail_usage!("bad --rounds 0: must be at least 1");
    }
    let common = side_args(&a.common, &[], "the common flags")?;
    let format = common
        .results
        .printed
        .among(&[Format::Text, Format::Json], false)?;
    let sides = [side(&a.common, &a.a, "--a")?, side(&a.common, &a.b, "--b")?];
    if matches!(sides[0], Side::Job(_)) != matches!(sides[1], Side::Job(_)) {
        bail_usage!(
            "--a and --b must both be jobs (`run` flags, TOML job files) or both .f workload files"
        );
    }
    let (ta, tb) = (sides[0].targets(), sides[1].targets());
    if ta != tb {
        bail_usage!(
            "--a and --b run on different targets (A: {}, B: {}): ab compares two settings on the same files",
            targets(&ta),
            targets(&tb)
        );
    }
    let observe = common.observe.settings()?;
    super::repeat::refuse_with(2, &observe, &exec)?;
    if let Some(j) = sides.iter().find_map(|s| match s {
        Side::Job(j) => j.journal.as_ref(),
        Side::Workload { .. } => None,
    }) {
        bail_usage!("--journal {} records one run: ab runs many", j.display());
    }
    let jobs: Vec<&Job> = sides
        .iter()
        .filter_map(|s| match s {
            Side::Job(j) => Some(j),
            Side::Workload { .. } => None,
        })
        .collect();
    let force = common.force || jobs.iter().any(|j| j.force);
    crate::output::check_output(common.results.output.as_deref(), force)?;
    let cpus = jobs.first().map_or(String::new(), |j| {
        j.cpus
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    });
    // A job side's files are kept between its runs (a workload lays out its filesets anew).
    let mut files = jobs.first().map(|j| {
        super::repeat::SameFiles::new(&Job {
            keep: jobs.iter().any(|j| j.keep),
            ..(*j).clone()
        })
    });
    let run_side = |s: &Side| -> anyhow::Result<crate::result::RunResult> {
        match s {
            Side::Job(j) => exec.run_job(&super::repeat::SameFiles::job(j), false, &observe),
            Side::Workload {
                src, model, opts, ..
            } => exec.run_workload(src, model, opts),
        }
    };
    let Rounds {
        figures,
        notes,
        code,
    } = rounds(a.rounds as usize, |side| {
        let r = run_side(&sides[side]);
        if let Some(f) = &mut files {
            f.after_run();
        }
        r
    })?;
    drop(files);
    let [fa, fb] = figures;
    let metrics = crate::ab::judge(&fa, &fb);
    let done = fa.len();
    let report = AbReport {
        kind: "ab".into(),
        fsbench_version: env!("CARGO_PKG_VERSION").to_string(),
        method: crate::stats::bootstrap::PAIRED_METHOD.to_string(),
        rounds: done,
        order: crate::ab::order(done),
        cpus,
        a: AbSide {
            describe: a.a.clone(),
            rounds: fa,
        },
        b: AbSide {
            describe: a.b.clone(),
            rounds: fb,
        },
        metrics,
        notes,
    };
    match format {
        Format::Json => crate::outln!("{}", serde_json::to_string_pretty(&report)?),
        _ => crate::out!("{}", crate::report::repeat::ab_text(&report)),
    }
    if let Some(p) = &common.results.output {
        crate::output::write_json_force(p, &report, force)?;
    }
    Ok(code)
}

/// What the rounds of `ab` measured.
pub(crate) struct Rounds {
    /// A's and B's figures, one per complete round.
    pub figures: [Vec<Figures>; 2],
    pub notes: Vec<String>,
    /// The exit code: 0, or the failed or interrupted run's.
    pub code: i32,
}

/// Run `rounds` rounds, each running A and B once (`run(0)`, `run(1)`) in the order
/// [`crate::ab::b_first`] gives, and stop after the first run that did not complete.
pub(crate) fn rounds(
    rounds: usize,
    mut run: impl FnMut(usize) -> anyhow::Result<crate::result::RunResult>,
) -> anyhow::Result<Rounds> {
    let mut figures: [Vec<Figures>; 2] = [Vec::new(), Vec::new()];
    let mut notes = Vec::new();
    let mut code = 0;
    'rounds: for round in 0..rounds {
        let turns = match crate::ab::b_first(round) {
            true => [1, 0],
            false => [0, 1],
        };
        let mut got = [None, None];
        for side in turns {
            let r = run(side)?;
            let status = r.status;
            got[side] = Some(Figures::of(&r));
            if status != crate::runner::RunStatus::Complete || crate::runner::signal::interrupted()
            {
                // A failed run is 1; a run stopped by Ctrl-C is 130.
                code = match super::output::exit_code(std::slice::from_ref(&r)) {
                    0 => 130,
                    c => c,
                };
                notes.push(format!(
                    "stopped in round {} of {rounds} ({}): the verdicts cover the {round} complete rounds",
                    round + 1,
                    status.name()
                ));
                break 'rounds;
            }
        }
        for side in 0..2 {
            figures[side].extend(got[side].take());
        }
    }
    Ok(Rounds {
        figures,
        notes,
        code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_with_quotes() {
        assert_eq!(
            split_words(" --bs 4k  --name 'a b' \"\"", "--a").unwrap(),
            ["--bs", "4k", "--name", "a b", ""]
        );
        assert!(split_words("--name 'a", "--a").is_err());
    }

    #[test]
    fn a_side_overrides_the_common_flags() {
        let common: Vec<String> = ["--bs", "8k", "--count", "4", "f"]
            .map(String::from)
            .to_vec();
        let side = |v: &str, flag: &str| side_job(&common, &split_words(v, flag).unwrap(), flag);
        let j = side("--bs 64k", "--b").unwrap();
        assert_eq!((j.block_size, j.io_count), (65536, Some(4)));
        assert_eq!(j.targets, [std::path::PathBuf::from("f")]);
        let e = side("--bs", "--a").unwrap_err().to_string();
        assert!(e.starts_with("--a: ") && !e.contains('\n'), "{e}");
    }
}
