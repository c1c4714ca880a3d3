//! `fsbench fio`: fio job files or fio's command-line form in, one Result per job section
//! out, through the same runner and output path as `run`.

pub(crate) fn main(args: &[String], exec: crate::exec::Executor) -> anyhow::Result<i32> {
    let (repeat, args) = super::repeat::extract(args)?;
    let cmd = crate::fio::parse_command(&args)?;
    if cmd.help {
        crate::out!("{}", crate::fio::HELP);
        return Ok(0);
    }
    let jobs = crate::fio::jobs(&cmd)?;
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
    let observe = crate::observe::Observe::default();
    let mut results = Vec::with_capacity(jobs.len());
    for j in jobs {
        let mut r = super::repeat::run_job(&exec, &j.job, &observe, repeat)?;
        r.notes.extend(j.notes);
        results.push(r);
    }
    super::output::emit(
        &results,
        cmd.format.unwrap_or(crate::report::Format::Text),
        &crate::report::ReportOptions::default(),
        cmd.output.as_deref(),
        cmd.force,
    )
}
