//! `fsbench fio`: fio job files or fio's command-line form in, one Result per job section
//! (or per group with group_reporting) out, through the same runner and output path as
//! `run`. Jobs that fio would run at the same time start together.

use crate::fio::map::FioJob;
use crate::fio::RunGroup;
use crate::result::{GroupReport, RunResult};
use crate::runner::together::{Start, Together};
use crate::runner::RunOutcome;
use crate::stats::StatsReport;
use std::collections::BTreeMap;

pub(crate) fn main(args: &[String], exec: crate::exec::Executor) -> anyhow::Result<i32> {
    let (repeat, args) = super::repeat::extract(args)?;
    let cmd = crate::fio::parse_command(&args)?;
    if cmd.help {
        crate::out!("{}", crate::fio::HELP);
        return Ok(0);
    }
    let jobs = crate::fio::jobs(&cmd)?;
    let groups = crate::fio::run_groups(&jobs)?;
    crate::output::check_output(cmd.output.as_deref(), cmd.force)?;
    for j in &jobs {
        for n in j
            .notes
            .iter()
            .filter(|n| n.contains("--ignore-unsupported"))
        {
            eprintln!("fsbench: {n}");
        }
    }
    let logs = open_logs(&jobs, repeat, cmd.force)?;
    let mut results = Vec::with_capacity(jobs.len());
    for g in &groups {
        let ran = match run_group(&exec, &jobs, g, repeat) {
            Ok(ran) => ran,
            Err(e) => {
                // Directories this command made for logs not yet written go again.
                logs.iter().flatten().for_each(|(d, _)| d.abandon());
                return Err(e);
            }
        };
        for (members, mut r) in ran {
            record(&jobs, &logs, &members, &mut r)?;
            results.push(r);
        }
    }
    super::output::emit(
        &results,
        cmd.format.unwrap_or(crate::report::Format::Text),
        &crate::report::ReportOptions::default(),
        cmd.output.as_deref(),
        cmd.force,
    )
}

/// Each job's log directories, opened before anything runs (by job index), with the logs
/// each one gets.
type JobLogs = Vec<Vec<(crate::output::ResultsDir, Vec<&'static str>)>>;

/// Open every job's log directories (fio's `write_bw_log` and the others), refusing a
/// directory two jobs name and logs that are already there (unless --force).
fn open_logs(jobs: &[FioJob], repeat: u32, force: bool) -> anyhow::Result<JobLogs> {
    let mut seen: Vec<(&std::path::Path, &str)> = Vec::new();
    for j in jobs {
        for (dir, _) in &j.reporting.logs {
            if let Some((_, other)) = seen.iter().find(|(d, _)| *d == dir.as_path()) {
                crate::bail_usage!(
                    "[{}] writes its logs into {}, as [{other}] does: fsbench writes each job's logs into a directory of its own; give each job its own log name (write_bw_log=NAME)",
                    j.job.name,
                    dir.display()
                );
            }
            if repeat > 1 {
                crate::bail_usage!(
                    "--repeat {repeat} with the logs of [{}]: a log holds the intervals of one run; drop --repeat or the write_*_log options",
                    j.job.name
                );
            }
            seen.push((dir.as_path(), j.job.name.as_str()));
        }
    }
    let mut out: JobLogs = Vec::with_capacity(jobs.len());
    for j in jobs {
        let mut mine = Vec::new();
        for (dir, files) in &j.reporting.logs {
            match super::args::open_log_dir(dir, "log directory", files, force) {
                Ok(d) => mine.push((d, files.clone())),
                Err(e) => {
                    mine.iter()
                        .chain(out.iter().flatten())
                        .for_each(|(d, _)| d.abandon());
                    return Err(e);
                }
            }
        }
        out.push(mine);
    }
    Ok(out)
}

/// What the jobs of a figure ask of its Result: the first `percentile_list` among them, and
/// each one's logs (of the figure, which is theirs).
fn record(
    jobs: &[FioJob],
    logs: &JobLogs,
    members: &[usize],
    r: &mut RunResult,
) -> anyhow::Result<()> {
    if let Some(list) = members
        .iter()
        .find_map(|&i| jobs[i].reporting.percentiles.as_ref())
    {
        r.total.set_percentiles(list);
    }
    let mut texts = None;
    for (dir, files) in members.iter().flat_map(|&i| &logs[i]) {
        let all = texts.get_or_insert_with(|| crate::report::interval_logs::logs(r));
        for name in files {
            let at = crate::report::interval_logs::LOG_NAMES
                .iter()
                .position(|n| n == name)
                .expect("a log name");
            dir.write(name, all[at].as_bytes())?;
        }
    }
    Ok(())
}

/// One run group: its jobs started together, reported as its figures, each Result with
/// the jobs it reports.
fn run_group(
    exec: &crate::exec::Executor,
    jobs: &[FioJob],
    g: &RunGroup,
    repeat: u32,
) -> anyhow::Result<Vec<(Vec<usize>, RunResult)>> {
    if let [only] = g.jobs[..] {
        let j = &jobs[only];
        if let Some(m) = &j.meta {
            return run_meta(exec, j, m, repeat).map(|r| vec![(vec![only], r)]);
        }
        if j.part.is_none() && j.start_delay.is_zero() && j.clone_runs.is_empty() {
            // A job on its own: the ordinary path (also on the ranks of a distributed run).
            let mut observe = crate::observe::Observe::default();
            observe.watch.status_interval = j.reporting.log_interval;
            let mut r = super::repeat::run_job(exec, &j.job, &observe, repeat)?;
            r.notes.extend(j.notes.iter().cloned());
            return Ok(vec![(vec![only], r)]);
        }
    }
    if repeat > 1 {
        let names: Vec<String> = g
            .jobs
            .iter()
            .map(|&i| format!("[{}]", jobs[i].job.name))
            .collect();
        crate::bail_usage!(
            "--repeat {repeat} repeats a job that runs on its own; {} start together (or at an offset, a delay or as clones apart): give each its own stonewall, or drop --repeat",
            names.join(", ")
        );
    }
    let (mut outcomes, called_off) = start_together(exec, jobs, g)?;
    let names: Vec<String> = g
        .jobs
        .iter()
        .map(|&i| format!("[{}]", jobs[i].job.name))
        .collect();
    let mut results = Vec::new();
    for figure in &g.figures {
        let members: Vec<(usize, RunOutcome)> = figure
            .iter()
            .filter_map(|i| Some((*i, outcomes.remove(i)?)))
            .collect();
        if members.is_empty() {
            continue;
        }
        let mut r = figure_result(jobs, members);
        if names.len() > 1 {
            r.notes.push(format!(
                "started together with the other jobs of its group: {}",
                names.join(", ")
            ));
        }
        if !called_off.is_empty() {
            r.notes.push(format!(
                "not run, because a job of the group could not start: {}",
                called_off.join(", ")
            ));
        }
        results.push((figure.clone(), r));
    }
    Ok(results)
}

/// A job on a metadata ioengine, alone in its group: its mdtest plan on this host or on
/// every rank, its Result named after the job.
fn run_meta(
    exec: &crate::exec::Executor,
    j: &FioJob,
    m: &crate::fio::meta::MetaJob,
    repeat: u32,
) -> anyhow::Result<RunResult> {
    if repeat > 1 {
        crate::bail_usage!(
            "--repeat {repeat} with ioengine={} in [{}]: a metadata job is repeated with loops= (mdtest's iterations)",
            m.engine.name(),
            j.job.name
        );
    }
    let ranks = match exec {
        crate::exec::Executor::Local => 1,
        crate::exec::Executor::Ranks(r) => r.size(),
    };
    if ranks > 1 && m.clones > 1 {
        crate::bail_usage!(
            "numjobs={} with ioengine={} in [{}] under mpirun: each rank is a clone of the job; run it with numjobs=1 on {} ranks",
            m.clones,
            m.engine.name(),
            j.job.name,
            m.clones
        );
    }
    let plan = m.opts.clone().plan(ranks.max(m.clones))?;
    let mut r = match exec {
        crate::exec::Executor::Local if m.clones > 1 => {
            crate::mdtest::clones::run_clones(&plan, m.clones, &m.argv)?
        }
        crate::exec::Executor::Local => {
            crate::mdtest::run(&plan, &crate::mdtest::RankShare::one_host(), &m.argv)?
        }
        crate::exec::Executor::Ranks(x) => x.run_mdtest(&plan, &m.argv)?,
    };
    r.name = j.job.name.clone();
    r.notes.push(m.note(&j.job.name));
    r.notes.extend(j.notes.iter().cloned());
    Ok(r)
}

/// Every run of a group started together: each job's outcome (its runs merged) by job
/// index, and the jobs called off because another could not start. A job is one run, or
/// one per clone when its clones are moved apart on files of their own; a job with a run
/// that ran (or failed while preparing) is reported, and its Result says what happened.
fn start_together(
    exec: &crate::exec::Executor,
    jobs: &[FioJob],
    g: &RunGroup,
) -> anyhow::Result<(BTreeMap<usize, RunOutcome>, Vec<String>)> {
    let mut owner = Vec::new();
    let mut runs = Vec::new();
    for &i in &g.jobs {
        let j = &jobs[i];
        let whole = j.clone_runs.is_empty().then(|| (j.job.clone(), j.part));
        let clones = j.clone_runs.iter().map(|(job, p)| (job.clone(), Some(*p)));
        for (job, part) in whole.into_iter().chain(clones) {
            owner.push(i);
            let delay = j.start_delay;
            let interval = j.reporting.log_interval;
            runs.push(Start {
                job,
                part,
                delay,
                interval,
            });
        }
    }
    let mut ran: BTreeMap<usize, Vec<RunOutcome>> = BTreeMap::new();
    let mut called_off = Vec::new();
    let done = exec.run_together(&runs, &Default::default())?;
    for (t, i) in done.into_iter().zip(owner) {
        match t {
            Together::Ran(r) => ran.entry(i).or_default().push((*r)?),
            Together::CalledOff => called_off.push(i),
        }
    }
    called_off.retain(|i| !ran.contains_key(i));
    called_off.dedup();
    let names = called_off
        .iter()
        .map(|&i| format!("[{}]", jobs[i].job.name))
        .collect();
    let merged = ran
        .into_iter()
        .map(|(i, r)| (i, RunOutcome::merge(r)))
        .collect();
    Ok((merged, names))
}

/// The Result of one figure: a job's own, or (group_reporting) its jobs' workers as one run,
/// named after the first, each job's own figures kept in `groups`.
fn figure_result(jobs: &[FioJob], members: Vec<(usize, RunOutcome)>) -> RunResult {
    let first = &jobs[members[0].0];
    if members.len() == 1 {
        let (i, o) = &members[0];
        let mut r = RunResult::from_outcome(&jobs[*i].job, o);
        r.notes.extend(jobs[*i].notes.iter().cloned());
        return r;
    }
    let mut job = first.job.clone();
    job.targets = members
        .iter()
        .flat_map(|(i, _)| jobs[*i].job.targets.iter().cloned())
        .collect();
    let groups: Vec<GroupReport> = members
        .iter()
        .map(|(i, o)| GroupReport {
            name: jobs[*i].job.name.clone(),
            op: "job".into(),
            run: None,
            stats: StatsReport::from_stats(&o.total(), false),
        })
        .collect();
    let listed: Vec<String> = groups.iter().map(|g| format!("[{}]", g.name)).collect();
    let notes: Vec<String> = members
        .iter()
        .flat_map(|(i, _)| jobs[*i].notes.iter().cloned())
        .collect();
    let merged = RunOutcome::merge(members.into_iter().map(|(_, o)| o).collect());
    let mut r = RunResult::from_outcome(&job, &merged);
    r.groups = groups;
    r.notes.push(format!(
        "group_reporting: one figure for {}; the job settings shown are [{}]'s, each job's own figures are under groups",
        listed.join(", "),
        first.job.name
    ));
    r.notes.extend(notes);
    r
}
