//! `fsbench vx`: vxbench's argv in, one Job out, vxbench-style text back. Under mpirun the
//! Job runs on every rank (file per rank) and rank 0 prints the aggregate.

pub(crate) fn main(args: &[String], exec: crate::exec::Executor) -> anyhow::Result<i32> {
    let (observe, args) = super::observe::ObserveArgs::extract(args)?;
    let (repeat, args) = super::repeat::extract(&args)?;
    let cmd = crate::vx::parse(&args)?;
    if cmd.old_format_flag {
        super::args::deprecated("--output-format", "--format");
    }
    if cmd.help {
        crate::out!("{}", crate::vx::HELP);
        return Ok(0);
    }
    crate::output::check_output(cmd.output.as_deref(), cmd.job.force)?;
    let result = super::repeat::run_job(&exec, &cmd.job, &observe.settings()?, repeat)?;
    super::output::emit(
        &[result],
        cmd.format,
        &cmd.report,
        cmd.output.as_deref(),
        cmd.job.force,
    )
}
