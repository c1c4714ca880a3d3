//! `fsbench vx`: vxbench's argv in, one Job out, vxbench-style text back.

use crate::result::RunResult;

pub(crate) fn main(args: &[String]) -> anyhow::Result<i32> {
    let (observe, args) = super::observe::ObserveArgs::extract(args)?;
    let cmd = crate::vx::parse(&args)?;
    if cmd.help {
        crate::out!("{}", crate::vx::HELP);
        return Ok(0);
    }
    crate::output::check_output(cmd.output.as_deref(), cmd.job.force)?;
    let observer = crate::observe::Observer::start(&observe.settings()?, &cmd.job)?;
    let outcome = crate::runner::run(&cmd.job)?;
    let mut result = RunResult::from_outcome(&cmd.job, &outcome);
    observer.finish(&mut result, outcome.elapsed_s)?;
    super::output::emit(
        &[result],
        cmd.format,
        &cmd.report,
        cmd.output.as_deref(),
        cmd.job.force,
    )
}
