//! `fsbench quick [DIR]`: the main job. A short standard battery on one scratch file in DIR:
//! sequential 1 MiB write and read, buffered and direct; 4 KiB random read and write, direct,
//! two threads; fsync'd (O_DSYNC) 8 KiB writes. One table; the scratch file is removed.

use super::args::{MEASURE, WHAT};
use crate::job::{Access, CachePolicy, EngineKind, Job};
use crate::report::{quick, Format, Render, ReportOptions, Runs};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::format_help::<Runs>(a)),
    after_help = EXAMPLES
)]
pub(crate) struct QuickArgs {
    /// Directory for the scratch file (default: current directory)
    pub dir: Option<PathBuf>,
    /// Sizes and times: quick (about a minute), nvme, hdd
    ///
    /// quick: 256 MiB file, 1 s tests after a 0.5 s warm-up, 3 runs each; nvme: 1 GiB, 5 s
    /// after 1 s; hdd: 4 GiB, 10 s after 2 s.
    #[arg(long, default_value = "quick", value_parser = ["quick", "nvme", "hdd"], help_heading = WHAT)]
    pub profile: String,
    /// Scratch file size (the span of every test) [default: the profile's]
    #[arg(long, value_name = "SIZE", help_heading = WHAT)]
    pub size: Option<String>,
    /// How long each test is timed [default: the profile's]
    #[arg(long, value_name = "DUR", help_heading = WHAT)]
    pub time: Option<String>,
    /// Only the standard battery (leave out the buffered and O_DSYNC extras)
    #[arg(long, help_heading = WHAT)]
    pub no_extras: bool,
    /// Untimed run of each test before its timed runs, `0` for none [default: the profile's]
    #[arg(long, value_name = "DUR", help_heading = MEASURE)]
    pub warmup: Option<String>,
    /// Timed runs of each test; the table shows their median and range [default: 3]
    #[arg(long, value_name = "N", help_heading = MEASURE)]
    pub repeat: Option<u32>,
    #[command(flatten)]
    pub watch: super::args::WatchArgs,
    #[command(flatten)]
    pub results: super::args::ResultsArgs,
}

const EXAMPLES: &str = "\
Examples:
  fsbench quick /mnt/data
  fsbench quick /mnt/data --profile nvme --format json --output quick.json";

/// The sizes and times a profile picks (each can be overridden by its flag).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Profile {
    pub size: u64,
    pub time_s: f64,
    pub warmup_s: f64,
    pub repeat: u32,
}

impl Profile {
    pub(crate) fn named(name: &str) -> Profile {
        match name {
            "nvme" => Profile {
                size: 1 << 30,
                time_s: 5.0,
                warmup_s: 1.0,
                repeat: 3,
            },
            "hdd" => Profile {
                size: 4 << 30,
                time_s: 10.0,
                warmup_s: 2.0,
                repeat: 3,
            },
            _ => Profile {
                size: 256 << 20,
                time_s: 1.0,
                warmup_s: 0.5,
                repeat: 3,
            },
        }
    }
}

/// One test of the battery: what a CrystalDiskMark-style name such as `RND4K Q32T1` says,
/// plus the cache policy and O_DSYNC.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Test {
    pub name: &'static str,
    pub access: Access,
    pub block_size: u64,
    pub queue_depth: u32,
    pub threads: u32,
    pub cache: CachePolicy,
    pub dsync: bool,
    /// In the second block of the table (fsbench's own tests beside the standard battery).
    pub extra: bool,
}

const fn test(
    name: &'static str,
    access: Access,
    block_size: u64,
    queue_depth: u32,
    cache: CachePolicy,
    dsync: bool,
    extra: bool,
) -> Test {
    Test {
        name,
        access,
        block_size,
        queue_depth,
        threads: 1,
        cache,
        dsync,
        extra,
    }
}

const M: u64 = 1 << 20;
const K4: u64 = 4096;
const DIRECT: CachePolicy = CachePolicy::Direct;
const BUFFERED: CachePolicy = CachePolicy::Buffered;

/// The battery as data. The standard block is the one storage people know (CrystalDiskMark
/// and KDiskMark's default profile): sequential 1 MiB at queue depth 8 and 1, random 4 KiB at
/// queue depth 32 and 1, each read and written, direct I/O so that the device is measured.
/// Queue depths above 1 run on io_uring; depth 1 on pread/pwrite.
pub(crate) const BATTERY: &[Test] = &[
    test("SEQ1M Q8T1 read", Access::Read, M, 8, DIRECT, false, false),
    test(
        "SEQ1M Q8T1 write",
        Access::Write,
        M,
        8,
        DIRECT,
        false,
        false,
    ),
    test("SEQ1M Q1T1 read", Access::Read, M, 1, DIRECT, false, false),
    test(
        "SEQ1M Q1T1 write",
        Access::Write,
        M,
        1,
        DIRECT,
        false,
        false,
    ),
    test(
        "RND4K Q32T1 read",
        Access::RandRead,
        K4,
        32,
        DIRECT,
        false,
        false,
    ),
    test(
        "RND4K Q32T1 write",
        Access::RandWrite,
        K4,
        32,
        DIRECT,
        false,
        false,
    ),
    test(
        "RND4K Q1T1 read",
        Access::RandRead,
        K4,
        1,
        DIRECT,
        false,
        false,
    ),
    test(
        "RND4K Q1T1 write",
        Access::RandWrite,
        K4,
        1,
        DIRECT,
        false,
        false,
    ),
    test(
        "seq write 1m buffered",
        Access::Write,
        M,
        1,
        BUFFERED,
        false,
        true,
    ),
    test(
        "seq read 1m buffered",
        Access::Read,
        M,
        1,
        BUFFERED,
        false,
        true,
    ),
    test(
        "dsync write 8k",
        Access::Write,
        8192,
        1,
        BUFFERED,
        true,
        true,
    ),
];

/// The Job of one test on `file`, timed for `secs`.
pub(crate) fn job_of(t: &Test, file: &std::path::Path, size: u64, secs: f64) -> Job {
    let mut j = Job {
        name: t.name.into(),
        targets: vec![file.to_path_buf()],
        access: t.access,
        block_size: t.block_size,
        cache: t.cache,
        threads: t.threads,
        file_size: Some(size),
        time_s: Some(secs),
        keep: true,
        queue_depth: t.queue_depth,
        engine: if t.queue_depth > 1 {
            EngineKind::Uring
        } else {
            EngineKind::Sync
        },
        ..Job::default()
    };
    j.open.dsync = t.dsync;
    j
}

/// The tests this run makes, in order.
pub(crate) fn tests(extras: bool) -> Vec<Test> {
    BATTERY
        .iter()
        .filter(|t| extras || !t.extra)
        .copied()
        .collect()
}

/// The battery, each run through `exec`: on this host, or under mpirun every run on every
/// rank (each rank its own scratch file, `.fsbench-quick.tmp.d/rank-NNNNN/`), the aggregate
/// printed by rank 0.
pub(crate) fn main(a: QuickArgs, exec: crate::exec::Executor) -> anyhow::Result<i32> {
    let format = a.results.format()?;
    let percentiles = a.results.percentiles()?;
    if let Some(d) = &a.results.log {
        crate::bail_usage!(
            "--log {} keeps the interval logs of one run: use fsbench run (quick runs a battery)",
            d.display()
        );
    }
    // Every run of the battery shows the live line (and keeps intervals) as asked.
    let watch = a.watch.watch()?;
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if !dir.is_dir() {
        crate::bail_usage!("{} is not a directory", dir.display());
    }
    let mut p = Profile::named(&a.profile);
    if let Some(s) = &a.size {
        p.size = crate::units::parse_size(s)?;
    }
    if let Some(t) = &a.time {
        p.time_s = crate::units::parse_duration(t)?.as_secs_f64();
    }
    if let Some(w) = &a.warmup {
        p.warmup_s = crate::units::parse_duration(w)?.as_secs_f64();
    }
    if let Some(n) = a.repeat {
        if !(1..=100).contains(&n) {
            crate::bail_usage!("bad --repeat '{n}': must be 1 to 100");
        }
        p.repeat = n;
    }
    crate::output::check_output(a.results.output.as_deref(), false)?;
    let file = dir.join(".fsbench-quick.tmp");
    let tests = tests(!a.no_extras);
    // Every test is checked before the first one runs: a bad option refuses the whole
    // battery instead of stopping it half-way.
    for t in &tests {
        job_of(t, &file, p.size, p.time_s).validate()?;
        if p.warmup_s > 0.0 {
            job_of(t, &file, p.size, p.warmup_s).validate()?;
        }
    }
    if tests.iter().any(|t| t.queue_depth > 1) {
        crate::engine::uring::available()?;
    }
    if file.exists() && !crate::safety::is_marked(&file) {
        crate::bail_usage!(
            "{} exists and was not created by fsbench: remove it or choose another directory",
            file.display()
        );
    }
    let _guard = Remove(file.clone());
    let mut results = Vec::new();
    let interactive = format == Format::Text;
    if interactive {
        crate::out!(
            "{}",
            quick::header(
                &a.profile,
                tests.len(),
                &dir,
                (p.size, p.time_s, p.warmup_s, p.repeat),
                exec.ranks(),
            )
        );
    }
    'battery: for (i, t) in tests.iter().enumerate() {
        if interactive && t.extra && !tests[i - 1].extra {
            crate::out!("{}", quick::extras_header());
        }
        let mut runs = Vec::new();
        let warmup = (p.warmup_s > 0.0).then_some(p.warmup_s);
        for (n, secs) in warmup
            .into_iter()
            .chain(std::iter::repeat_n(p.time_s, p.repeat as usize))
            .enumerate()
        {
            let job = job_of(t, &file, p.size, secs);
            let warming = warmup.is_some() && n == 0;
            let observe = crate::observe::Observe {
                watch: crate::runner::live::Watching {
                    warm_up: warming,
                    ..watch.clone()
                },
                ..Default::default()
            };
            let mut r = exec.run_job(&job, false, &observe)?;
            let stop = crate::runner::signal::interrupted()
                || r.status != crate::runner::RunStatus::Complete;
            if warming && !stop {
                // An untimed warm-up: measured, but not part of the result.
                continue;
            }
            r.notes.push(if warming {
                format!("quick: warm-up of {} s", secs)
            } else {
                format!(
                    "quick: timed run {} of {}",
                    n + 1 - warmup.is_some() as usize,
                    p.repeat
                )
            });
            runs.push(r);
            if stop {
                if interactive {
                    crate::out!("{}", quick::row(t.name, &runs));
                }
                results.extend(runs);
                break 'battery;
            }
        }
        // Repetitions that disagree by more than 10 % say so (`explain`: spread).
        crate::explain::mark_spread(runs.iter_mut());
        if interactive {
            crate::out!("{}", quick::row(t.name, &runs));
        }
        results.extend(runs);
    }
    super::args::ResultsArgs::add_percentiles(percentiles.as_deref(), &mut results);
    if !interactive {
        let runs = Runs {
            results: &results,
            opts: ReportOptions::default(),
        };
        crate::out!("{}", runs.render(format));
    }
    // On ranks each rank removes its own scratch file (here, the guard finds none).
    exec.cleanup(false);
    if let Some(p) = &a.results.output {
        crate::output::write_json(p, &results)?;
    }
    Ok(super::output::exit_code(&results))
}

/// Removes the scratch file however the battery ends, but only while the path still names
/// fsbench's own file (checked on a descriptor opened without following a link).
struct Remove(PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        use crate::runner::mark::{fd_can_mark, fd_is_marked, open_existing, FileId};
        let Ok(f) = open_existing(&self.0, false, false) else {
            return;
        };
        let same =
            FileId::of(&f).ok().is_some() && FileId::of(&f).ok() == FileId::of_path(&self.0).ok();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_battery_is_the_one_storage_people_know() {
        let names: Vec<_> = tests(false).iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "SEQ1M Q8T1 read",
                "SEQ1M Q8T1 write",
                "SEQ1M Q1T1 read",
                "SEQ1M Q1T1 write",
                "RND4K Q32T1 read",
                "RND4K Q32T1 write",
                "RND4K Q1T1 read",
                "RND4K Q1T1 write"
            ]
        );
        let f = std::path::Path::new("/d/f");
        for t in tests(false) {
            let j = job_of(&t, f, 1 << 20, 2.0);
            // The name says what runs: block size, queue depth, threads; direct I/O.
            let bs = if t.name.starts_with("SEQ1M") {
                1 << 20
            } else {
                4096
            };
            let q = t.name.find(" Q").unwrap() + 2;
            let qd: u32 = t.name[q..q + t.name[q..].find('T').unwrap()]
                .parse()
                .unwrap();
            assert_eq!(
                (j.block_size, j.queue_depth, j.threads),
                (bs, qd, 1),
                "{}",
                t.name
            );
            assert_eq!(j.cache, CachePolicy::Direct, "{}", t.name);
            assert_eq!(j.engine == EngineKind::Uring, qd > 1, "{}", t.name);
            assert_eq!(
                j.access.is_random(),
                t.name.starts_with("RND"),
                "{}",
                t.name
            );
            assert_eq!(
                j.access.read_pct(50),
                if t.name.ends_with("read") { 100 } else { 0 }
            );
            assert_eq!(j.time_s, Some(2.0));
            j.validate().unwrap();
        }
        assert_eq!(tests(true).len(), 11);
        assert!(tests(true)[8..].iter().all(|t| t.extra));
    }

    #[test]
    fn profiles_pick_sizes_and_times() {
        let q = Profile::named("quick");
        // 11 tests x (warm-up + 3 runs): about a minute.
        assert!(11.0 * (q.warmup_s + q.repeat as f64 * q.time_s) <= 60.0);
        assert!(Profile::named("nvme").time_s >= 5.0);
        assert!(Profile::named("hdd").size > Profile::named("nvme").size);
    }
}
