//! `fsbench compare BEFORE AFTER`: point-by-point ratios of two result sets (files or
//! directories); changes within the run-to-run spread are marked as noise.

use crate::report::{compare, Format};
use crate::sweep::record;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::formats_help(a, PRINTED)),
    after_help = EXAMPLES
)]
pub(crate) struct CompareArgs {
    /// Results before (a JSON file or a directory of them)
    pub before: PathBuf,
    /// Results after
    pub after: PathBuf,
    /// Metrics to compare, comma-separated (default: each study's own)
    #[arg(long, value_name = "LIST", help_heading = super::args::WHAT)]
    pub metrics: Option<String>,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
}

/// What `compare` prints: a text table of ratios.
const PRINTED: &[Format] = &[Format::Text];

const EXAMPLES: &str = "\
Examples:
  fsbench compare before/ after/
  fsbench compare old.json new.json --metrics mb_per_s,lat_p99_ms";

pub(crate) fn main(a: CompareArgs) -> anyhow::Result<i32> {
    a.printed.among(PRINTED, false)?;
    let before = record::load(std::slice::from_ref(&a.before))?;
    let after = record::load(std::slice::from_ref(&a.after))?;
    let shape = super::report::shape_from(&None, &None, &a.metrics);
    let changes = compare::compare(&before, &after, &shape)?;
    crate::out!("{}", compare::render_text(&changes));
    Ok(0)
}
