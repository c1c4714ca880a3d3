//! `fsbench compare BEFORE AFTER`: point-by-point ratios of two result sets (files or
//! directories); changes within the run-to-run spread are marked as noise.

use crate::report::compare;
use crate::sweep::record;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(crate) struct CompareArgs {
    /// Results before (a JSON file or a directory of them)
    pub before: PathBuf,
    /// Results after
    pub after: PathBuf,
    /// Metrics to compare, comma-separated (default: each study's own)
    #[arg(long)]
    pub metrics: Option<String>,
}

pub(crate) fn main(a: CompareArgs) -> anyhow::Result<i32> {
    let before = record::load(std::slice::from_ref(&a.before))?;
    let after = record::load(std::slice::from_ref(&a.after))?;
    let shape = super::report::shape_from(&None, &None, &a.metrics);
    let changes = compare::compare(&before, &after, &shape)?;
    crate::out!("{}", compare::render_text(&changes));
    Ok(0)
}
