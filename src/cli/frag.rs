//! `fsbench frag PATH`: extents per file under PATH (FIEMAP), like fsadm's extent report.

use crate::bail_usage;
use crate::report::{Format, Render};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(crate) struct FragArgs {
    /// A file or a directory (walked without following symlinks or crossing mounts)
    pub path: PathBuf,
    /// How many of the most fragmented files to list
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn main(a: FragArgs) -> anyhow::Result<i32> {
    if std::fs::symlink_metadata(&a.path).is_err() {
        bail_usage!("frag: {} does not exist", a.path.display());
    }
    let r = crate::probe::frag::report(&a.path, a.top)?;
    let format = if a.json { Format::Json } else { Format::Text };
    crate::out!("{}", r.render(format));
    if r.files == 0 && r.errors > 0 {
        anyhow::bail!(
            "no file could be mapped: {}",
            r.first_error.unwrap_or_default()
        );
    }
    Ok(0)
}
