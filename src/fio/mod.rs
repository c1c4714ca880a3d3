//! fio compatibility: `fsbench fio JOB.fio ...` or `fsbench fio --name=x --rw=randread ...`
//! reads fio's job format ([`parse`]) and maps each job section onto an fsbench Job
//! ([`map`]). Jobs start together in fio's groups ([`run_groups`]: `stonewall` separates
//! them), each reported as its own Result named after its section, or with
//! `group_reporting` as one Result for the group; an option fsbench does not map is refused,
//! or with `--ignore-unsupported` listed in the Result's notes.

pub(crate) mod host;
pub(crate) mod map;
pub(crate) mod measure;
pub(crate) mod meta;
pub(crate) mod parse;

use crate::error::UsageError;
use crate::report::{Format, Runs};
use crate::usage;
use std::path::PathBuf;

/// fsbench's own options on the fio command line; every other `--option` is fio's.
#[derive(Debug, Default)]
pub(crate) struct FioCommand {
    pub files: Vec<PathBuf>,
    /// fio options given on the command line (`--name=a --rw=read`).
    pub options: Vec<String>,
    pub format: Option<Format>,
    pub output: Option<PathBuf>,
    pub ignore_unsupported: bool,
    pub force: bool,
    pub keep: bool,
    pub help: bool,
}

/// Split the argv into fsbench's options, job files and fio options.
pub(crate) fn parse_command(args: &[String]) -> Result<FioCommand, UsageError> {
    let mut c = FioCommand::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        let value = |i: &mut usize| -> Result<String, UsageError> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            *i += 1;
            args.get(*i)
                .cloned()
                .ok_or_else(|| usage!("{name} needs a value"))
        };
        match name {
            "--format" => c.format = Some(Format::parse_for::<Runs>(&value(&mut i)?, "--format")?),
            "--output" => c.output = Some(PathBuf::from(value(&mut i)?)),
            "--ignore-unsupported" => c.ignore_unsupported = true,
            "--force" => c.force = true,
            "--keep" => c.keep = true,
            "--help" | "-h" => c.help = true,
            _ if a.starts_with("--") => {
                c.options.push(a.clone());
                // `--key value`: the value travels with its option.
                if inline.is_none() {
                    if let Some(n) = args.get(i + 1).filter(|n| !n.starts_with('-')) {
                        c.options.push(n.clone());
                        i += 1;
                    }
                }
            }
            _ if a.starts_with('-') && a.len() > 1 => {
                return Err(usage!(
                "unknown option {a}: fio options are written --name=value (see fsbench fio --help)"
            ))
            }
            _ => c.files.push(PathBuf::from(a)),
        }
        i += 1;
    }
    Ok(c)
}

/// The jobs the command describes: every job file's sections, then the command-line jobs.
pub(crate) fn jobs(c: &FioCommand) -> Result<Vec<map::FioJob>, UsageError> {
    let env = |name: &str| std::env::var(name).ok();
    let mut sections = Vec::new();
    for f in &c.files {
        sections.extend(parse::parse_file(f, &env)?);
    }
    if !c.options.is_empty() {
        sections.extend(parse::parse_args(&c.options)?);
    }
    if sections.is_empty() {
        return Err(usage!(
            "no job: give an fio job file or fio options (fsbench fio --name=x --rw=read --size=1m)"
        ));
    }
    if sections.len() > parse::MAX_JOBS {
        return Err(usage!("more than {} jobs in all", parse::MAX_JOBS));
    }
    let mut jobs = map::map_sections(&sections, c.ignore_unsupported)?;
    for j in &mut jobs {
        // The job and each of its clones' runs (offset_increment on files of their own).
        for job in std::iter::once(&mut j.job).chain(j.clone_runs.iter_mut().map(|(r, _)| r)) {
            job.force |= c.force;
            job.keep |= c.keep;
        }
        if let Some(m) = j.meta.as_mut().filter(|m| c.keep && !m.opts.keep) {
            m.keep();
        }
    }
    Ok(jobs)
}

/// Jobs that start together, as fio groups them: a job with `stonewall` (or
/// `wait_for_previous`) starts a new run group once every job before it has ended.
/// `figures` are the Results the group is reported as: a job with `group_reporting` joins
/// the figure before it in its reporting group; `new_group` starts a reporting group.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct RunGroup {
    /// Indexes into the job list, in file order.
    pub jobs: Vec<usize>,
    /// Each Result's jobs (one job, or several merged by group_reporting).
    pub figures: Vec<Vec<usize>>,
}

/// The run groups of `jobs`. Jobs of a group may name the same file (they run on it
/// together, as in fio); with `verify` on such a file they are refused naming both.
pub(crate) fn run_groups(jobs: &[map::FioJob]) -> Result<Vec<RunGroup>, UsageError> {
    let mut groups: Vec<RunGroup> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        let mut fresh_reporting = j.new_group;
        if i == 0 || j.stonewall {
            groups.push(RunGroup::default());
            fresh_reporting = true;
        }
        let g = groups.last_mut().expect("a group was started");
        if let Some(&k) = g.jobs.first() {
            if let Some(m) = [&jobs[k], j].iter().find_map(|x| x.meta.as_ref()) {
                return Err(usage!(
                    "[{}] and [{}] would run at the same time, and ioengine={} runs as mdtest's phases, one job at a time: add stonewall to [{}]",
                    jobs[k].job.name,
                    j.job.name,
                    m.engine.name(),
                    j.job.name
                ));
            }
        }
        for &k in &g.jobs {
            let Some(t) = jobs[k]
                .job
                .targets
                .iter()
                .find(|t| j.job.targets.contains(t))
            else {
                continue;
            };
            // Sharing a file is fine (the group holds it once); checking its data is not.
            if let Some(v) = [&jobs[k], j].into_iter().find(|x| x.job.verifying()) {
                return Err(usage!(
                    "[{}] and [{}] would run at the same time on {}, and [{}] verifies its data, which the other job's I/O would change: add stonewall to [{}] or give it another file",
                    jobs[k].job.name,
                    j.job.name,
                    t.display(),
                    v.job.name,
                    j.job.name
                ));
            }
        }
        g.jobs.push(i);
        match g.figures.last_mut() {
            Some(f) if j.group_reporting && !fresh_reporting => f.push(i),
            _ => g.figures.push(vec![i]),
        }
    }
    Ok(groups)
}

pub(crate) const HELP: &str = "\
usage: fsbench fio [JOB.fio ...] [--fio-option=value ...] [options]

Runs fio job files (and fio's command-line form) on fsbench: each job section becomes one
fsbench job and one Result named after the section. As in fio, the jobs of a file start
together unless stonewall (or wait_for_previous) makes a job wait for the ones before it;
group_reporting reports a group's jobs as one Result. fio options that fsbench does not
map are refused, naming the option and its section; docs/fio.md lists every mapping.

fsbench options:
  --format text|json|csv   how the Results are printed (default text)
  --output FILE.json       also store the Results
  --ignore-unsupported     run without the options fsbench does not map, listing each one
                           in the Result's notes and on stderr
  --keep                   keep the files fsbench created (as does unlink=0)
  --force                  allow writing to files fsbench did not create
  --repeat N               run each job N times on the same files: median, 95 % interval
                           and range of its headline figures
  -h, --help               this help

Job files: [global] and job sections, ; and # comments, ${VAR} from the environment,
include FILE; sizes with fio's rules (kb_base).

Examples:
  fsbench fio randread.fio --format json --output randread.json
  fsbench fio --name=seq --rw=write --bs=1m --size=64m --directory=/mnt/scratch
";

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(text: &str) -> Result<Vec<RunGroup>, UsageError> {
        let sections = parse::parse_text(text, &|_| None)?;
        run_groups(&map::map_sections(&sections, false)?)
    }

    fn group(jobs: &[usize], figures: &[&[usize]]) -> RunGroup {
        RunGroup {
            jobs: jobs.to_vec(),
            figures: figures.iter().map(|f| f.to_vec()).collect(),
        }
    }

    #[test]
    fn stonewall_new_group_and_group_reporting_shape_the_groups() {
        let g = groups(
            "[global]\nsize=64k\n[a]\n[b]\ngroup_reporting\n[c]\nnew_group\n[d]\ngroup_reporting\n[e]\nstonewall\n[f]\n",
        )
        .unwrap();
        assert_eq!(
            g,
            [
                group(&[0, 1, 2, 3], &[&[0, 1], &[2, 3]]),
                group(&[4, 5], &[&[4], &[5]])
            ]
        );
        // stonewall in [global]: every job waits for the one before it.
        let g = groups("[global]\nsize=64k\nstonewall\ngroup_reporting\n[a]\n[b]\n").unwrap();
        assert_eq!(g, [group(&[0], &[&[0]]), group(&[1], &[&[1]])]);
    }

    #[test]
    fn jobs_of_one_group_share_a_file_unless_one_verifies_it() {
        let g = groups("[global]\nsize=64k\nfilename=f\n[a]\n[b]\nrw=write\n").unwrap();
        assert_eq!(g, [group(&[0, 1], &[&[0], &[1]])]);
        let e = groups("[global]\nsize=64k\nfilename=f\n[a]\n[b]\nrw=write\nverify=crc32c\n")
            .unwrap_err();
        assert!(
            e.0.contains("[a] and [b] would run at the same time on f, and [b] verifies"),
            "{e:?}"
        );
        assert!(groups(
            "[global]\nsize=64k\nfilename=f\n[a]\n[b]\nrw=write\nverify=crc32c\nwait_for_previous\n"
        )
        .is_ok());
    }
}
