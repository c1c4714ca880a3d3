//! `fsbench frag PATH`: extents per file under PATH (FIEMAP), like fsadm's extent report;
//! with `--dirs` the extents of the directories, with `--free` the free-space fragmentation
//! of the file system. `fsbench frag --reorg FILE...` reorganises files into fewer extents
//! with the file system's own online mechanism.

use crate::bail_usage;
use crate::report::{Format, Render};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::formats_help(a, PRINTED)),
    after_help = EXAMPLES
)]
pub(crate) struct FragArgs {
    /// A file or a directory; with --reorg, the files to reorganise
    ///
    /// A directory is walked without following symlinks or crossing mounts.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// How many of the most fragmented files (and directories) to list
    #[arg(long, default_value_t = 10, value_name = "N", help_heading = super::args::WHAT)]
    pub top: usize,
    /// Also report the extents of the directories under PATH (directory fragmentation)
    #[arg(long, help_heading = super::args::WHAT)]
    pub dirs: bool,
    /// Also report the free space of PATH's file system by extent size class
    #[arg(long, help_heading = super::args::WHAT)]
    pub free: bool,
    /// Reorganise the files named into fewer extents (ext4, XFS, btrfs)
    ///
    /// With the file system's own online mechanism; extents are reported before and after.
    /// Only files fsbench created, unless --force.
    #[arg(long, conflicts_with_all = ["dirs", "free"], help_heading = super::args::WHAT)]
    pub reorg: bool,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
    #[command(flatten)]
    pub old: super::args::JsonAlias,
    /// With --reorg: also reorganise files fsbench did not create
    #[arg(long, requires = "reorg", help_heading = super::args::SAFETY)]
    pub force: bool,
}

/// What `frag` prints.
const PRINTED: &[Format] = &[Format::Text, Format::Json];

const EXAMPLES: &str = "\
Examples:
  fsbench frag /mnt/data --dirs --free
  fsbench frag --reorg /mnt/data/big.f --format json";

pub(crate) fn main(a: FragArgs) -> anyhow::Result<i32> {
    let format = a.printed.among(PRINTED, a.old.json)?;
    if a.reorg {
        return reorg(&a.paths, a.force, format);
    }
    let [path] = a.paths.as_slice() else {
        bail_usage!("frag: name one PATH to report on (several files are for --reorg FILE...)");
    };
    let path = path.clone();
    if std::fs::symlink_metadata(&path).is_err() {
        bail_usage!("frag: {} does not exist", path.display());
    }
    let mut r = crate::probe::frag::report(&path, a.top)?;
    if a.dirs {
        r.directories = Some(crate::probe::frag::dir_report(&path, a.top)?);
    }
    if a.free {
        r.free_space = Some(crate::probe::freefrag::report(&path)?);
    }
    crate::out!("{}", r.render(format));
    if r.files == 0 && r.errors > 0 {
        anyhow::bail!(
            "no file could be mapped: {}",
            r.first_error.unwrap_or_default()
        );
    }
    Ok(0)
}

/// Check every file first (a refusal changes nothing), then reorganise each in turn.
fn reorg(files: &[PathBuf], force: bool, format: Format) -> anyhow::Result<i32> {
    let targets = files
        .iter()
        .map(|p| crate::reorg::open_checked(p, force))
        .collect::<Result<Vec<_>, _>>()?;
    let report = crate::reorg::ReorgReport {
        files: targets.iter().map(crate::reorg::reorganise).collect(),
    };
    crate::out!("{}", report.render(format));
    let failed = report.files.iter().filter(|f| f.error.is_some()).count();
    if failed > 0 {
        anyhow::bail!(
            "{failed} of {} file(s) could not be reorganised",
            files.len()
        );
    }
    Ok(0)
}
