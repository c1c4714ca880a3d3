//! `fsbench vx`: vxbench's argv in, one Job out, vxbench-style text back.

use crate::result::RunResult;

pub fn main(args: &[String]) -> anyhow::Result<i32> {
    let (observe, args) = super::observe::ObserveArgs::extract(args)?;
    let cmd = crate::vx::parse(&args)?;
    if cmd.help {
        // print! would panic on a stdout that cannot be written (a full disk).
        use anyhow::Context;
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        out.write_all(crate::vx::HELP.as_bytes())
            .and_then(|()| out.flush())
            .context("writing the help to standard output")?;
        return Ok(0);
    }
    super::output::check_output(cmd.output.as_deref(), cmd.job.force)?;
    let observer = super::observe::Observer::start(&observe, &cmd.job)?;
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
