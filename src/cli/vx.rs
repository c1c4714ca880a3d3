//! `fsbench vx`: vxbench's argv in, one Job out, vxbench-style text back.

use crate::result::RunResult;

pub fn main(args: &[String]) -> anyhow::Result<i32> {
    let cmd = crate::vx::parse(args)?;
    if cmd.help {
        print!("{}", crate::vx::HELP);
        return Ok(0);
    }
    let outcome = crate::runner::run(&cmd.job)?;
    let result = RunResult::from_outcome(&cmd.job, &outcome);
    super::output::emit(&[result], cmd.format, &cmd.report, cmd.output.as_deref())
}
