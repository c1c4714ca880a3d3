//! `fsbench quick [DIR]`: the main job. A short standard battery on one scratch file in DIR:
//! sequential 1 MiB write and read, buffered and direct; 4 KiB random read and write, direct,
//! two threads; fsync'd (O_DSYNC) 8 KiB writes. One table; the scratch file is removed.

use crate::job::{Access, CachePolicy, Job};
use crate::report::{quick, Format, Render, ReportOptions, Runs};
use crate::result::RunResult;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(crate) struct QuickArgs {
    /// Directory for the scratch file (default: current directory)
    pub dir: Option<PathBuf>,
    /// Scratch file size
    #[arg(long, default_value = "1g")]
    pub size: String,
    /// Seconds for each timed (random / fsync) test
    #[arg(long, default_value = "10s")]
    pub time: String,
    #[command(flatten)]
    pub results: super::args::ResultsArgs,
}

/// The battery as data: (name, access, block size, cache, threads, timed, dsync).
const BATTERY: &[(&str, Access, u64, CachePolicy, u32, bool, bool)] = &[
    (
        "seq write 1m buffered",
        Access::Write,
        1 << 20,
        CachePolicy::Buffered,
        1,
        false,
        false,
    ),
    (
        "seq read 1m buffered",
        Access::Read,
        1 << 20,
        CachePolicy::Buffered,
        1,
        false,
        false,
    ),
    (
        "seq write 1m direct",
        Access::Write,
        1 << 20,
        CachePolicy::Direct,
        1,
        false,
        false,
    ),
    (
        "seq read 1m direct",
        Access::Read,
        1 << 20,
        CachePolicy::Direct,
        1,
        false,
        false,
    ),
    (
        "rand read 4k direct x2",
        Access::RandRead,
        4096,
        CachePolicy::Direct,
        2,
        true,
        false,
    ),
    (
        "rand write 4k direct x2",
        Access::RandWrite,
        4096,
        CachePolicy::Direct,
        2,
        true,
        false,
    ),
    (
        "dsync write 8k",
        Access::Write,
        8192,
        CachePolicy::Buffered,
        1,
        true,
        true,
    ),
];

pub(crate) fn jobs(dir: &std::path::Path, size: u64, secs: f64) -> Vec<Job> {
    let file = dir.join(".fsbench-quick.tmp");
    BATTERY
        .iter()
        .map(|&(name, access, bs, cache, threads, timed, dsync)| {
            let mut j = Job {
                name: name.into(),
                targets: vec![file.clone()],
                access,
                block_size: bs,
                cache,
                threads,
                file_size: Some(size),
                keep: true,
                fsync: access == Access::Write && !timed,
                ..Job::default()
            };
            j.open.dsync = dsync;
            if timed {
                j.time_s = Some(secs);
            }
            j
        })
        .collect()
}

pub(crate) fn main(a: QuickArgs) -> anyhow::Result<i32> {
    let format = a.results.format()?;
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if !dir.is_dir() {
        crate::bail_usage!("{} is not a directory", dir.display());
    }
    let size = crate::units::parse_size(&a.size)?;
    let secs = crate::units::parse_duration(&a.time)?.as_secs_f64();
    crate::output::check_output(a.results.output.as_deref(), false)?;
    let jobs = jobs(&dir, size, secs);
    // Every test is checked before the first one runs: a bad option refuses the whole
    // battery instead of stopping it half-way.
    for job in &jobs {
        job.validate()?;
    }
    let file = jobs[0].targets[0].clone();
    if file.exists() && !crate::safety::is_marked(&file) {
        crate::bail_usage!(
            "{} exists and was not created by fsbench: remove it or choose another directory",
            file.display()
        );
    }
    // Remove the scratch file however the battery ends, but only while the path still names
    // fsbench's own file (checked on a descriptor opened without following a link).
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            use crate::runner::mark::{fd_can_mark, fd_is_marked, open_existing, FileId};
            let Ok(f) = open_existing(&self.0, false, false) else {
                return;
            };
            let same = FileId::of(&f).ok().is_some()
                && FileId::of(&f).ok() == FileId::of_path(&self.0).ok();
            let ours = fd_is_marked(&f) || !fd_can_mark(&f);
            if same && f.metadata().is_ok_and(|m| m.is_file()) && ours {
                if let Err(e) = std::fs::remove_file(&self.0) {
                    eprintln!("fsbench: note: could not remove {}: {e}", self.0.display());
                }
            } else {
                eprintln!(
                    "fsbench: note: left {}: it is no longer the scratch file fsbench created",
                    self.0.display()
                );
            }
        }
    }
    let _guard = Remove(file);
    let mut results = Vec::new();
    let interactive = format == Format::Text;
    if interactive {
        crate::out!("{}", quick::header(jobs.len(), &dir, size, secs));
    }
    for job in &jobs {
        let outcome = crate::runner::run(job)?;
        let r = RunResult::from_outcome(job, &outcome);
        if interactive {
            crate::out!("{}", quick::row(&r));
        }
        let stop =
            crate::runner::signal::interrupted() || r.status != crate::runner::RunStatus::Complete;
        results.push(r);
        if stop {
            break;
        }
    }
    if !interactive {
        let runs = Runs {
            results: &results,
            opts: ReportOptions::default(),
        };
        crate::out!("{}", runs.render(format));
    }
    if let Some(p) = &a.results.output {
        crate::output::write_json(p, &results)?;
    }
    Ok(super::output::exit_code(&results))
}
