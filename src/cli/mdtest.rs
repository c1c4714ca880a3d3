//! `fsbench mdtest`: mdtest's command line (getopt style: `-n 1000 -z 2 -b 3 -F -C -T -r
//! -d DIR ...`) in, the metadata phases run on this host or on MPI ranks (`crate::mdtest`,
//! `crate::mpi::mdtest`), mdtest's SUMMARY table and the Result out. The flags mdtest has
//! and fsbench does not are refused by name, in one line.

use crate::error::UsageError;
use crate::exec::Executor;
use crate::mdtest::{Options, RankShare};
use crate::report::{Format, ReportOptions, Runs};
use crate::usage;
use std::path::PathBuf;

pub(crate) const HELP: &str = "\
fsbench mdtest: mdtest's metadata benchmark, on this host or on MPI ranks (mpirun)

Usage: fsbench mdtest -n N | -I N [options] [-d DIR]

Amount and shape:
  -n N        items (files and/or directories) per rank
  -I N        items per directory of the tree
  -z N        depth of the directory tree (0: one directory)
  -b N        branching factor of the tree
  -L          items only in the leaf directories
  -u          a tree of its own for each rank
  -d DIR      where to work (DIR1@DIR2@...: one per rank); default .
Phases (none given: all):
  -C create   -T stat   -E read (files)   -r remove   -U rename (directories)
  -F          files only          -D  directories only
Files:
  -w BYTES    bytes written to each file after it is created
  -e BYTES    bytes read from each file in the read phase
  -y          fsync each file after writing it
Runs:
  -N N        on MPI ranks: stat, read and remove the items of the rank N, 2N, 3N on
  -i N        iterations (the summary gives max, min, mean and std dev over them)
  -W SECS     stonewall: a create phase stops after SECS (later phases use what it made)
  -R          stat and read in a random order; --random-seed N seeds it
  -G N        seed of the bytes written
  -a POSIX    the I/O interface (POSIX only)
  -v, -V N    verbosity (accepted; the output is the same)
fsbench's own:
  --format F  text (default), json or csv
  --output P  write the Result (JSON) to P
  --keep      leave the tree, the items and the top directory
  --force     let --output replace a file fsbench did not write
  -h, --help  this help

Under mpirun every rank runs its items and rank 0 prints the one Result; -N N (rank r
stats rank r+N's items) needs several ranks.
Refused: -B -c -f -l -s -k -S -t -x -X -Y -Z -P -p -g and mdtest's long options other than
--random-seed (not supported).

Examples:
  fsbench mdtest -n 1000 -F -d /mnt/scratch
  fsbench mdtest -n 100 -z 2 -b 3 -i 3 -d /mnt/scratch --output md.json
  fsbench mdtest -I 10 -z 1 -b 4 -w 3901 -e 3901 -d /mnt/scratch";

/// A parsed `fsbench mdtest` command line.
#[derive(Debug, Clone, Default)]
pub(crate) struct MdtestCommand {
    pub opts: Options,
    pub format: Format,
    pub output: Option<PathBuf>,
    pub force: bool,
    pub help: bool,
}

/// mdtest's flags that take a value.
const WITH_VALUE: &str = "abdeinINGVWwzxflsp";
/// mdtest's flags that need several MPI ranks.
const MPI_ONLY: &str = "Bcfls";
/// mdtest's flags fsbench does not support.
const UNSUPPORTED: &str = "kStxXYZPpg";

fn is_value_flag(c: char) -> bool {
    WITH_VALUE.contains(c)
}

/// A count or size: digits, optionally followed by k, m or g (powers of 1024, as mdtest's
/// sizes).
fn number(flag: &str, v: &str) -> Result<u64, UsageError> {
    let bad = || usage!("{flag} '{v}': expected a whole number (optionally with k, m or g)");
    let (digits, mult) = match v.char_indices().last() {
        Some((i, c)) if c.eq_ignore_ascii_case(&'k') => (&v[..i], 1u64 << 10),
        Some((i, c)) if c.eq_ignore_ascii_case(&'m') => (&v[..i], 1 << 20),
        Some((i, c)) if c.eq_ignore_ascii_case(&'g') => (&v[..i], 1 << 30),
        _ => (v, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(bad)
}

fn small(flag: &str, v: &str) -> Result<u32, UsageError> {
    let n = number(flag, v)?;
    u32::try_from(n).map_err(|_| usage!("{flag} {v}: too large"))
}

/// Apply one short flag `c` (with its value when it takes one).
fn short(cmd: &mut MdtestCommand, c: char, v: Option<&str>) -> Result<(), UsageError> {
    let o = &mut cmd.opts;
    let flag = format!("-{c}");
    let val = || v.unwrap_or_default();
    match c {
        'n' => o.items = Some(number(&flag, val())?),
        'I' => o.items_per_dir = Some(number(&flag, val())?),
        'z' => o.depth = small(&flag, val())?,
        'b' => o.branching = small(&flag, val())?,
        'i' => o.iterations = small(&flag, val())?,
        'N' => o.stride = small(&flag, val())?,
        'W' => o.stonewall_s = number(&flag, val())?,
        'w' => o.write_bytes = number(&flag, val())?,
        'e' => o.read_bytes = number(&flag, val())?,
        'G' => o.data_seed = Some(number(&flag, val())?),
        'V' => {
            number(&flag, val())?;
        }
        'd' => {
            let list = val();
            if list.is_empty() || list.split('@').any(str::is_empty) {
                return Err(usage!(
                    "-d '{list}': expected a directory or DIR1@DIR2@... with no empty names"
                ));
            }
            o.dirs = list.split('@').map(PathBuf::from).collect();
        }
        'a' => {
            if !val().eq_ignore_ascii_case("posix") {
                return Err(usage!(
                    "-a {}: fsbench mdtest issues POSIX calls only (-a POSIX)",
                    val()
                ));
            }
        }
        'u' => o.unique_dir = true,
        'F' => o.files_only = true,
        'D' => o.dirs_only = true,
        'C' => o.create = true,
        'T' => o.stat = true,
        'E' => o.read = true,
        'r' => o.remove = true,
        'U' => o.rename = true,
        'y' => o.sync = true,
        'L' => o.leaf_only = true,
        'R' => o.random = true,
        'v' => {}
        'h' => cmd.help = true,
        c if MPI_ONLY.contains(c) => {
            return Err(usage!(
                "-{c} is an mdtest option for MPI ranks fsbench mdtest does not support: run without it"
            ))
        }
        c if UNSUPPORTED.contains(c) => {
            return Err(usage!(
                "-{c} is an mdtest option fsbench mdtest does not support (see fsbench mdtest --help)"
            ))
        }
        c => {
            return Err(usage!(
                "unknown option -{}: see fsbench mdtest --help",
                c.escape_default()
            ))
        }
    }
    Ok(())
}

/// A long option `--name[=value]` at `args[*i]` (advancing past a separate value).
fn long(cmd: &mut MdtestCommand, args: &[String], i: &mut usize) -> Result<(), UsageError> {
    let arg = &args[*i][2..];
    let (name, inline) = match arg.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (arg, None),
    };
    let takes = matches!(name, "random-seed" | "format" | "output");
    let value =
        if takes {
            match inline {
                Some(v) => Some(v),
                None => {
                    *i += 1;
                    Some(args.get(*i).cloned().ok_or_else(|| {
                        usage!("--{name} needs a value: see fsbench mdtest --help")
                    })?)
                }
            }
        } else {
            if inline.is_some() {
                return Err(usage!("--{name} takes no value"));
            }
            None
        };
    let v = value.unwrap_or_default();
    match name {
        "random-seed" => cmd.opts.random_seed = Some(number("--random-seed", &v)?),
        "format" => cmd.format = Format::parse_for::<Runs>(&v, "--format")?,
        "output" => cmd.output = Some(PathBuf::from(v)),
        "keep" => cmd.opts.keep = true,
        "force" => cmd.force = true,
        "help" => cmd.help = true,
        "print-all-procs" | "showRankStatistics" | "saveRankPerformanceDetails" => {
            return Err(usage!(
                "--{name} is an mdtest option for MPI ranks fsbench mdtest does not support: run without it"
            ))
        }
        "verify-read" | "verify-write" | "dataPacketType" | "run-cmd-before-phase"
        | "run-cmd-after-phase" | "savePerOpDataCSV" | "warningAsErrors" => {
            return Err(usage!(
                "--{name} is an mdtest option fsbench mdtest does not support (see fsbench mdtest --help)"
            ))
        }
        _ => {
            return Err(usage!(
                "unknown option --{}: see fsbench mdtest --help",
                name.escape_default()
            ))
        }
    }
    Ok(())
}

/// Parse mdtest's argv (without the program and subcommand names).
pub(crate) fn parse(args: &[String]) -> Result<MdtestCommand, UsageError> {
    let mut cmd = MdtestCommand::default();
    cmd.opts.iterations = 1;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.starts_with("--") && a.len() > 2 {
            long(&mut cmd, args, &mut i)?;
        } else if let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) {
            // Grouped flags (-FCT); a flag that takes a value takes the rest of the word or
            // the next one (-n100, -n 100).
            for (at, c) in flags.char_indices() {
                if is_value_flag(c) {
                    let rest = &flags[at + c.len_utf8()..];
                    let v = if rest.is_empty() {
                        i += 1;
                        args.get(i).map(String::as_str).ok_or_else(|| {
                            usage!("-{c} needs a value: see fsbench mdtest --help")
                        })?
                    } else {
                        rest
                    };
                    short(&mut cmd, c, Some(v))?;
                    break;
                }
                short(&mut cmd, c, None)?;
            }
        } else {
            return Err(usage!(
                "unexpected argument '{}': mdtest takes options only (the directory is -d DIR)",
                a.escape_default()
            ));
        }
        i += 1;
    }
    Ok(cmd)
}

pub(crate) fn main(args: &[String], exec: Executor) -> anyhow::Result<i32> {
    let cmd = parse(args)?;
    if cmd.help {
        crate::out!("{HELP}\n");
        return Ok(0);
    }
    let ranks = match &exec {
        Executor::Local => 1,
        Executor::Ranks(r) => r.size(),
    };
    let plan = cmd.opts.clone().plan(ranks)?;
    crate::output::check_output(cmd.output.as_deref(), cmd.force)?;
    let result = match &exec {
        Executor::Local => crate::mdtest::run(&plan, &RankShare::one_host(), args)?,
        Executor::Ranks(r) => r.run_mdtest(&plan, args)?,
    };
    super::output::emit(
        &[result],
        cmd.format,
        &ReportOptions::default(),
        cmd.output.as_deref(),
        cmd.force,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<MdtestCommand, UsageError> {
        let v: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse(&v)
    }

    #[test]
    fn mdtest_command_lines_parse() {
        let c = p("-n 100 -z2 -b 3 -FCT -r -d /a@/b -w 3901 -e 1k -i 3 -W 5 -R --random-seed=9")
            .unwrap();
        let o = &c.opts;
        assert_eq!(o.items, Some(100));
        assert_eq!((o.depth, o.branching, o.iterations), (2, 3, 3));
        assert!(o.files_only && o.create && o.stat && o.remove && !o.read);
        assert_eq!(o.dirs, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!((o.write_bytes, o.read_bytes), (3901, 1024));
        assert_eq!((o.stonewall_s, o.random, o.random_seed), (5, true, Some(9)));
        assert!(
            p("--keep --format json --output x.json -n 1")
                .unwrap()
                .opts
                .keep
        );
    }

    #[test]
    fn bad_flags_are_one_line_refusals() {
        for (s, want) in [
            ("-n", "needs a value"),
            ("-n abc", "whole number"),
            ("-q", "unknown option -q"),
            ("--nosuch", "unknown option --nosuch"),
            ("-c -n 5", "MPI ranks"),
            ("-k -n 5", "does not support"),
            ("-a MPIIO", "POSIX"),
            ("-d a@@b", "no empty names"),
            ("somefile", "unexpected argument"),
            ("--format xml", "format"),
        ] {
            let e = p(s).unwrap_err().to_string();
            assert!(e.contains(want), "{s}: {e}");
            assert_eq!(e.lines().count(), 1, "{s}: {e}");
        }
    }

    fn word() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let flags = proptest::sample::select(vec![
            "-n",
            "-I",
            "-z",
            "-b",
            "-d",
            "-F",
            "-D",
            "-C",
            "-T",
            "-E",
            "-r",
            "-w",
            "-e",
            "-y",
            "-L",
            "-N",
            "-i",
            "-W",
            "-R",
            "-u",
            "-G",
            "-a",
            "-V",
            "-v",
            "--keep",
            "--format",
            "--output",
            "--random-seed",
            "-FCT",
            "-n5",
            "-",
            "--",
            "0",
            "18446744073709551616",
            "4g",
            "@",
            "a@b",
            "-x",
            "-k",
            "--random-seed=",
        ])
        .prop_map(String::from);
        prop_oneof![flags, ".{0,12}"]
    }

    proptest::proptest! {
        /// Any argv, of mdtest's flags, values and noise, is parsed or refused: never a panic.
        #[test]
        fn random_argv_never_panics(words in proptest::collection::vec(word(), 0..12)) {
            if let Ok(c) = parse(&words) {
                let _ = c.opts.plan(1);
            }
        }
    }
}
