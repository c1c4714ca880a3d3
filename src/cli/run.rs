//! `fsbench run`: one Job from flags, or from a TOML job file with flags overriding it.

use crate::job::{Access, Advice, CachePolicy, EngineKind, Job, WorkerMode};
use crate::report::{Format, ReportOptions, Runs};
use crate::result::RunResult;
use crate::units::{parse_duration, RateUnit};
use crate::{bail_usage, usage};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Default)]
pub struct RunArgs {
    /// A job file (*.toml) and/or target files or block devices (one user each).
    #[arg(value_name = "JOB.toml|TARGET")]
    pub inputs: Vec<PathBuf>,
    /// read, write, rw, randread, randwrite, randrw, mmapread, mmapwrite
    #[arg(long)]
    pub rw: Option<String>,
    /// Bytes per I/O (512, 4k, 1m)
    #[arg(long)]
    pub bs: Option<String>,
    /// File size (random offsets are drawn from it; sequential threads each take a slice)
    #[arg(long)]
    pub size: Option<String>,
    /// I/Os per thread (k = 1024)
    #[arg(long)]
    pub count: Option<String>,
    /// Stop after this long (10s, 2m)
    #[arg(long)]
    pub time: Option<String>,
    /// Threads per target
    #[arg(long)]
    pub threads: Option<u32>,
    /// Read percentage for rw / randrw
    #[arg(long = "rwmix-read")]
    pub rwmix_read: Option<u8>,
    /// buffered, direct, dsync, discovered[=SIZE], concurrent, raw
    #[arg(long)]
    pub cache: Option<String>,
    /// sync, mmap, uring
    #[arg(long)]
    pub engine: Option<String>,
    /// I/Os in flight per thread (uring)
    #[arg(long)]
    pub qd: Option<u32>,
    /// Repeat the I/O loop N times
    #[arg(long)]
    pub nrep: Option<u32>,
    /// Seed for random offsets
    #[arg(long)]
    pub seed: Option<u64>,
    /// fsync each file after writing it (timed)
    #[arg(long)]
    pub fsync: bool,
    /// Open with O_SYNC
    #[arg(long)]
    pub sync: bool,
    /// Open with O_DSYNC
    #[arg(long)]
    pub dsync: bool,
    /// Open with O_APPEND
    #[arg(long)]
    pub append: bool,
    /// Truncate the file before the run
    #[arg(long)]
    pub trunc: bool,
    /// posix_fadvise advice: noreuse, random, seq (comma-separated)
    #[arg(long)]
    pub advise: Option<String>,
    /// Extent size hint (XFS)
    #[arg(long)]
    pub extsize: Option<String>,
    /// Reserve space with fallocate
    #[arg(long)]
    pub reserve: Option<String>,
    /// Reservation flags: align, chgsiz, contig, noextend, noreserve, trim
    #[arg(long = "space-flags")]
    pub space_flags: Option<String>,
    /// Run users as processes: per-user or per-thread
    #[arg(long)]
    pub processes: Option<String>,
    /// mlock the I/O buffers
    #[arg(long)]
    pub mlock: bool,
    /// Rate limit in I/Os per second (per thread, or see --rate-scope)
    #[arg(long = "rate-iops")]
    pub rate_iops: Option<u64>,
    /// Rate limit in bytes per second (per thread, or see --rate-scope)
    #[arg(long = "rate-bytes")]
    pub rate_bytes: Option<String>,
    /// Whom the rate limit applies to: thread (each thread) or total (divided among all threads)
    #[arg(long = "rate-scope")]
    pub rate_scope: Option<String>,
    /// io_uring SQ polling
    #[arg(long)]
    pub sqpoll: bool,
    /// io_uring polled completions
    #[arg(long)]
    pub hipri: bool,
    /// Keep the files fsbench created
    #[arg(long)]
    pub keep: bool,
    /// Allow writing to files and devices fsbench did not create
    #[arg(long)]
    pub force: bool,
    /// Drop caches before the run (targets always; globally when root)
    #[arg(long = "drop-cache")]
    pub drop_cache: bool,
    /// Do not evict the targets' cached pages before timing (hot-cache runs)
    #[arg(long = "no-invalidate")]
    pub no_invalidate: bool,
    /// Remove each file after the run, even one kept earlier
    #[arg(long)]
    pub remove: bool,
    /// Job name in reports
    #[arg(long)]
    pub name: Option<String>,
    /// Write the JSON Result here
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// text, json, csv
    #[arg(long = "output-format", default_value = "text")]
    pub output_format: String,
    /// Per-thread lines
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Only the total line
    #[arg(short = 's', long)]
    pub summary: bool,
    /// Throughput in MB/s instead of KB/s
    #[arg(long)]
    pub mb: bool,
    #[command(flatten)]
    pub observe: super::observe::ObserveArgs,
}

fn size_opt(s: &Option<String>, what: &str) -> Result<Option<u64>, crate::error::UsageError> {
    s.as_ref()
        .map(|v| crate::units::parse_size_as(v, crate::units::BareUnit::Bytes, what))
        .transpose()
}

/// Build the Job: start from the job file (if any), then apply flags.
pub fn build_job(a: &RunArgs) -> anyhow::Result<Job> {
    let mut job = Job::default();
    let mut targets = Vec::new();
    for input in &a.inputs {
        if input.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(input)
                .map_err(|e| usage!("cannot read job file {}: {e}", input.display()))?;
            job = Job::from_toml(&text, &input.display().to_string())?;
        } else {
            // clap refuses '-5' unless it comes after `--`; keep such a name a path.
            targets.push(crate::job::dash_safe(input));
        }
    }
    if !targets.is_empty() {
        job.targets = targets;
    }
    if let Some(rw) = &a.rw {
        match rw.as_str() {
            "mmapread" => {
                job.access = Access::Read;
                job.engine = EngineKind::Mmap;
            }
            "mmapwrite" => {
                job.access = Access::Write;
                job.engine = EngineKind::Mmap;
            }
            other => job.access = Access::parse(other).map_err(|_| {
                usage!("unknown --rw '{other}': expected read, write, rw, randread, randwrite, randrw, mmapread or mmapwrite")
            })?,
        }
    }
    if let Some(v) = size_opt(&a.bs, "--bs")? {
        job.block_size = v;
    }
    if let Some(v) = size_opt(&a.size, "--size")? {
        job.file_size = Some(v);
    }
    if let Some(c) = &a.count {
        job.io_count = Some(crate::units::parse_size_as(
            c,
            crate::units::BareUnit::Count,
            "--count",
        )?);
    }
    if let Some(t) = &a.time {
        job.time_s = Some(parse_duration(t)?.as_secs_f64());
    }
    if let Some(t) = a.threads {
        job.threads = t;
    }
    if let Some(p) = a.rwmix_read {
        job.read_pct = p;
    }
    if let Some(c) = &a.cache {
        job.cache = CachePolicy::parse(c)?;
    }
    if let Some(e) = &a.engine {
        let e = EngineKind::parse(e)?;
        if job.engine == EngineKind::Mmap && e != EngineKind::Mmap {
            bail_usage!("--rw mmapread/mmapwrite use the mmap engine; drop --engine");
        }
        job.engine = e;
    }
    if let Some(q) = a.qd {
        job.queue_depth = q;
    }
    if let Some(n) = a.nrep {
        job.repeats = n;
    }
    if let Some(s) = a.seed {
        job.seed = s;
    }
    job.fsync |= a.fsync;
    job.open.sync |= a.sync;
    job.open.dsync |= a.dsync;
    job.open.append |= a.append;
    job.open.trunc |= a.trunc;
    if let Some(adv) = &a.advise {
        for x in adv.split(',').filter(|x| !x.is_empty()) {
            job.advice.push(Advice::parse(x)?);
        }
    }
    if let Some(v) = size_opt(&a.extsize, "--extsize")? {
        job.space.extsize = Some(v);
    }
    if let Some(v) = size_opt(&a.reserve, "--reserve")? {
        job.space.reservation = Some(v);
    }
    if let Some(fl) = &a.space_flags {
        job.space.flags.apply_list(fl, "--space-flags")?;
    }
    if let Some(p) = &a.processes {
        job.workers = match p.as_str() {
            "per-user" => WorkerMode::ProcessPerUser,
            "per-thread" => WorkerMode::ProcessPerThread,
            "none" | "threads" => WorkerMode::Threads,
            _ => bail_usage!("unknown --processes '{p}': expected per-user, per-thread or threads"),
        };
    }
    job.mlock |= a.mlock;
    if let Some(r) = a.rate_iops {
        job.rate.iops = Some(r);
    }
    if let Some(v) = size_opt(&a.rate_bytes, "--rate-bytes")? {
        job.rate.bytes_per_sec = Some(v);
    }
    if let Some(s) = &a.rate_scope {
        job.rate.scope = crate::job::RateScope::parse(s)?;
    }
    job.sqpoll |= a.sqpoll;
    job.hipri |= a.hipri;
    job.keep |= a.keep;
    job.force |= a.force;
    job.drop_cache |= a.drop_cache;
    job.remove |= a.remove;
    if a.no_invalidate {
        job.invalidate = false;
    }
    if let Some(n) = &a.name {
        job.name = n.clone();
    } else if job.name == "job" {
        job.name = format!("run {}", job.access.name());
    }
    // A run with neither count nor time covers the file once.
    job.validate()?;
    Ok(job)
}

pub fn report_options(a: &RunArgs) -> ReportOptions {
    ReportOptions {
        unit: if a.mb {
            RateUnit::MegaBytes
        } else {
            RateUnit::KiloBytes
        },
        summary_only: a.summary,
        per_thread: a.verbose,
    }
}

pub fn main(a: RunArgs) -> anyhow::Result<i32> {
    let format = Format::parse_for::<Runs>(&a.output_format, "--output-format")?;
    let job = build_job(&a)?;
    crate::output::check_output(a.output.as_deref(), a.force)?;
    let observer = crate::observe::Observer::start(&a.observe.settings()?, &job)?;
    let outcome = crate::runner::run(&job)?;
    let mut result = RunResult::from_outcome(&job, &outcome);
    observer.finish(&mut result, outcome.elapsed_s)?;
    super::output::emit(
        &[result],
        format,
        &report_options(&a),
        a.output.as_deref(),
        a.force,
    )
}
