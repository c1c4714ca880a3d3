//! `advise --measure`: short sweeps on a scratch file that confirm or correct the derived
//! tunables. Every point is a [`Job`] run by the [`Executor`] the front end hands in: on this
//! host through the runner, or, under mpirun, on every rank at once (each rank its own scratch
//! file in PATH/.fsbench-advise.tmp.d/rank-NNNNN, `crate::mpi`), the point's figures then
//! being the one Result's aggregate over the ranks:
//!
//! - I/O-size knee: sequential direct reads and writes at 4k..4m; the knee is the smallest size
//!   reaching 90 % of the peak (-> read_pref_io / write_pref_io);
//! - discovered-direct threshold: the same sizes buffered; the smallest size from which direct
//!   I/O is at least as fast as buffered at every larger size (-> discovered_direct_iosz);
//! - streams: 1, 2, 4, 8 threads of sequential direct I/O at the knee size; the smallest count
//!   reaching 90 % of the peak (-> read_nstream / write_nstream).
//!
//! Each point reads or writes the file at most once (so buffered reads never come from a
//! cache warmed by the same point) and is cut off by its share of the time budget.
//!
//! Every run of every point is also kept whole: the runner's `RunResult` (kind `io`, the one
//! envelope) with a `sweep` probe naming the advise study and the point, handed to the
//! caller's `store` as a sweep [`Record`], so `advise --measure --results DIR` leaves one
//! Result per run that `report` and `compare` read like any sweep's.

use crate::exec::Executor;
use crate::job::{Access, CachePolicy, Job};
use crate::result::RunResult;
use crate::sweep::record::{ChartSpec, Record, SweepMeta, TableSpec};
use crate::units::format_size_exact as sz;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Share of the peak that counts as reaching it.
pub const PLATEAU_FRACTION: f64 = 0.9;
pub const SIZES: &[u64] = &[4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20];
pub const STREAMS: &[u32] = &[1, 2, 4, 8];
/// Name of the scratch file in the measured directory.
pub const SCRATCH_NAME: &str = ".fsbench-advise.tmp";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    Read,
    Write,
}

impl Dir {
    fn access(self) -> Access {
        match self {
            Dir::Read => Access::Read,
            Dir::Write => Access::Write,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// One thread, I/O size swept, buffered and direct.
    Sizes,
    /// Direct I/O at the knee size, thread count swept.
    Streams,
}

/// One measured point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub phase: Phase,
    pub dir: Dir,
    pub direct: bool,
    pub block_size_bytes: u64,
    pub threads: u32,
    pub bytes: u64,
    pub elapsed_s: f64,
    pub bytes_per_sec: f64,
    pub cpu_s: f64,
    /// Throughput of each repetition when the point was run more than once; the point's
    /// numbers are those of the median run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs_bytes_per_sec: Vec<f64>,
}

impl Point {
    pub fn label(&self) -> String {
        let runs = if self.runs_bytes_per_sec.is_empty() {
            String::new()
        } else {
            let v: Vec<String> = self
                .runs_bytes_per_sec
                .iter()
                .map(|r| format!("{:.1}", r / 1e6))
                .collect();
            format!(" [median of {}]", v.join(", "))
        };
        format!(
            "seq {} {} {}{}: {:.1} MB/s ({} in {:.2} s, {:.2} CPU s){runs}",
            self.dir.name(),
            if self.direct { "direct" } else { "buffered" },
            sz(self.block_size_bytes),
            if self.threads > 1 {
                format!(" x{}", self.threads)
            } else {
                String::new()
            },
            self.bytes_per_sec / 1e6,
            crate::units::format_bytes(self.bytes as f64),
            self.elapsed_s,
            self.cpu_s
        )
    }
}

#[derive(Debug, Clone)]
pub struct MeasureOpts {
    /// Directory the scratch file is created in.
    pub dir: PathBuf,
    pub file_size: u64,
    /// Time budget for all points (seconds), shared equally.
    pub budget_s: f64,
    pub sizes: Vec<u64>,
    pub streams: Vec<u32>,
    /// Runs per point (the median is kept).
    pub repeat: u32,
}

/// All points of a measurement plus the file it used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub scratch_file: String,
    pub file_size_bytes: u64,
    pub max_seconds_per_run: f64,
    pub repeat: u32,
    pub points: Vec<Point>,
    pub notes: Vec<String>,
}

/// The Job of one point (public so tests can rerun a point by hand).
pub fn point_job(
    file: &Path,
    file_size: u64,
    dir: Dir,
    direct: bool,
    bs: u64,
    threads: u32,
    secs: f64,
) -> Job {
    Job {
        name: format!(
            "advise {} {} {}",
            dir.name(),
            if direct { "direct" } else { "buffered" },
            sz(bs)
        ),
        targets: vec![file.to_path_buf()],
        access: dir.access(),
        block_size: bs,
        threads,
        file_size: Some(file_size),
        // One pass over the file at most: threads share it in slices.
        io_count: Some((file_size / bs / threads as u64).max(1)),
        time_s: Some(secs),
        cache: if direct {
            CachePolicy::Direct
        } else {
            CachePolicy::Buffered
        },
        // Written data counts only once it is on the device.
        fsync: dir == Dir::Write,
        keep: true,
        invalidate: true,
        ..Job::default()
    }
}

/// Run one point on this host.
pub fn run_point(job: &Job, phase: Phase) -> Result<Point> {
    run_point_result(&Executor::Local, job, phase).map(|(p, _)| p)
}

/// Run one point through `exec`: its summary and the whole Result of the run. The summary
/// reads the Result's total (on ranks: every rank's bytes over the span from the first
/// rank's start to the last one's end), so the figures and a stored Result agree.
pub(crate) fn run_point_result(
    exec: &Executor,
    job: &Job,
    phase: Phase,
) -> Result<(Point, RunResult)> {
    // Not fresh: a write point rewrites the scratch file the earlier points used, on every
    // rank as on one host; nothing else is observed beside the run.
    let result = exec.run_job(job, false, &crate::observe::Observe::default())?;
    if let Some(f) = result.failures.first() {
        anyhow::bail!("{}: {f}", job.name);
    }
    let total = &result.total;
    let elapsed = total.elapsed_s.max(1e-9);
    let point = Point {
        phase,
        dir: if job.access == Access::Read {
            Dir::Read
        } else {
            Dir::Write
        },
        direct: job.cache == CachePolicy::Direct,
        block_size_bytes: job.block_size,
        threads: job.threads,
        bytes: total.bytes,
        elapsed_s: elapsed,
        bytes_per_sec: total.bytes as f64 / elapsed,
        cpu_s: total.cpu_s,
        runs_bytes_per_sec: Vec::new(),
    };
    Ok((point, result))
}

/// Where a run of a point sits among the advise measurements (the `sweep` probe of its
/// Result): study `advise-sizes` or `advise-streams`, axes dir, cache, bs and threads.
pub fn point_meta(job: &Job, phase: Phase, index: usize, repeat: u32) -> SweepMeta {
    let dir = if job.access == Access::Read {
        Dir::Read
    } else {
        Dir::Write
    };
    let point = vec![
        ("dir".to_string(), dir.name().to_string()),
        ("cache".to_string(), job.cache.name()),
        ("bs".to_string(), sz(job.block_size)),
        ("threads".to_string(), job.threads.to_string()),
    ];
    let (study, title, rows, cols) = match phase {
        Phase::Sizes => (
            "advise-sizes",
            "advise --measure: I/O size, buffered and direct",
            "bs",
            vec!["dir".to_string(), "cache".to_string()],
        ),
        Phase::Streams => (
            "advise-streams",
            "advise --measure: direct streams at the knee size",
            "threads",
            vec!["dir".to_string(), "bs".to_string()],
        ),
    };
    SweepMeta {
        suite: "advise".into(),
        study: study.into(),
        title: title.into(),
        index,
        repeat,
        settings: point.clone(),
        point,
        table: TableSpec {
            rows: vec![rows.into()],
            cols,
            metrics: vec!["mb_per_s".into(), "cpu_s".into()],
            note: None,
        },
        chart: ChartSpec {
            x: Some(rows.into()),
            kind: Some("line".into()),
        },
        target: None,
    }
}

/// Run a point `repeat` times and keep the median run (robust to one-off stalls and bursts
/// on shared or virtual storage).
pub fn run_point_median(job: &Job, phase: Phase, repeat: u32) -> Result<Point> {
    run_point_median_stored(job, phase, repeat, 0, &mut |_| Ok(()))
}

/// [`run_point_median`], handing each run's Result to `store` as point `index`.
pub fn run_point_median_stored(
    job: &Job,
    phase: Phase,
    repeat: u32,
    index: usize,
    store: &mut dyn FnMut(Record) -> Result<()>,
) -> Result<Point> {
    run_point_median_on(&Executor::Local, job, phase, repeat, index, store)
}

/// [`run_point_median_stored`] through `exec` (on this host, or on every MPI rank).
pub(crate) fn run_point_median_on(
    exec: &Executor,
    job: &Job,
    phase: Phase,
    repeat: u32,
    index: usize,
    store: &mut dyn FnMut(Record) -> Result<()>,
) -> Result<Point> {
    let mut runs = Vec::with_capacity(repeat as usize);
    for r in 0..repeat.max(1) {
        let (p, result) = run_point_result(exec, job, phase)?;
        store(Record::run(point_meta(job, phase, index, r), result))?;
        runs.push(p);
        if crate::runner::signal::interrupted() {
            break;
        }
    }
    let all: Vec<f64> = runs.iter().map(|p| p.bytes_per_sec).collect();
    runs.sort_by(|a, b| a.bytes_per_sec.total_cmp(&b.bytes_per_sec));
    let mut mid = runs.swap_remove(runs.len() / 2);
    if all.len() > 1 {
        mid.runs_bytes_per_sec = all;
    }
    Ok(mid)
}

/// Removes the scratch file however the measurement ends: this host's, and on MPI ranks
/// every rank's (each rank removes the files and directories its points created).
struct Scratch<'a> {
    file: PathBuf,
    exec: &'a Executor,
}
impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        self.exec.cleanup(false);
    }
}

/// Run the whole sweep through `exec` (on this host, or every point on every MPI rank at
/// once). `knee_for_streams` picks the stream test's I/O size from the size sweep (the
/// measured knee).
/// `announce` is called once the directory is locked and the scratch name checked, so a
/// refusal stays the only line printed.
/// `store` gets every run's whole Result as it finishes.
pub fn run(
    opts: &MeasureOpts,
    exec: &Executor,
    announce: impl FnOnce(),
    mut progress: impl FnMut(&Point),
    mut store: impl FnMut(Record) -> Result<()>,
) -> Result<Measurement> {
    let file = opts.dir.join(SCRATCH_NAME);
    // The scratch name is fixed: a second measurement in the same directory would write the
    // first one's file and remove it under it. Lock the directory for the whole measurement.
    let _lock = crate::guard::lock_dir(&opts.dir)?;
    check_scratch(&file)?;
    if let Some(n) = exec.ranks() {
        // Each rank's file, where this host sees it (every rank's on one host or shared
        // storage): refused like the one-host file before any rank starts; a killed
        // measurement's file (marked) is removed with its directories. A rank on another
        // host with a file of its own there refuses at its first point (the runner neither
        // writes nor removes a file fsbench did not create).
        for rank in 0..n {
            let theirs = rank_scratch(&file, &format!("{rank:05}"));
            if check_scratch(&theirs)? {
                let _ = std::fs::remove_file(&theirs);
                if let Some(d) = theirs.parent() {
                    let _ = std::fs::remove_dir(d);
                    if let Some(up) = d.parent() {
                        let _ = std::fs::remove_dir(up);
                    }
                }
            }
        }
    }
    let _guard = Scratch {
        file: file.clone(),
        exec,
    };
    announce();
    let n_points = (opts.sizes.len() * 4 + opts.streams.len() * 2) * opts.repeat.max(1) as usize;
    let secs = (opts.budget_s / n_points.max(1) as f64).max(0.2);
    let mut m = Measurement {
        scratch_file: file.display().to_string(),
        file_size_bytes: opts.file_size,
        max_seconds_per_run: secs,
        repeat: opts.repeat.max(1),
        ..Default::default()
    };
    // On ranks: the hosts the ranks ran on and rank 0's, from the first Result.
    let mut hosts: Option<(usize, String)> = None;
    let mut keep = |rec: Record| {
        if let Some(r) = rec.result().filter(|_| hosts.is_none()) {
            if let Some(first) = r.ranks.first() {
                hosts = Some((r.hosts.len(), first.host.clone()));
            }
        }
        store(rec)
    };
    let done = measure_points(opts, exec, &file, secs, &mut m, &mut progress, &mut keep);
    if let Some(n) = exec.ranks() {
        // PATH.d/rank-NNNNN/NAME: each rank's file (`crate::exec::rank_file`, file per rank).
        m.scratch_file = rank_scratch(&file, "NNNNN").display().to_string();
        m.notes
            .insert(0, ranks_note(n, hosts.as_ref(), opts.file_size));
    }
    done?;
    Ok(m)
}

/// Whether the scratch file at `file` may be used: absent (false) or left by a killed
/// measurement (marked as fsbench's: true, to be removed). lstat: a link planted at the name
/// is refused, never followed or removed; so is a file fsbench did not create.
fn check_scratch(file: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(file) {
        Ok(m) if !m.file_type().is_file() => crate::bail_usage!(
            "{} exists and is not a regular file fsbench created: remove it or measure another directory",
            file.display()
        ),
        Ok(_) if !crate::safety::is_marked(file) => crate::bail_usage!(
            "{} exists and was not created by fsbench: remove it or measure another directory",
            file.display()
        ),
        // Marked and not locked by a live measurement: left by a killed one.
        Ok(_) => Ok(true),
        Err(_) => Ok(false),
    }
}

/// One rank's scratch file on MPI ranks: PATH.d/rank-RANK/NAME, the file-per-rank layout of
/// [`crate::exec::rank_file`] (RANK: five digits, or `NNNNN` for the pattern).
fn rank_scratch(file: &Path, rank: &str) -> PathBuf {
    let mut d = file.as_os_str().to_os_string();
    d.push(".d");
    PathBuf::from(d)
        .join(format!("rank-{rank}"))
        .join(SCRATCH_NAME)
}

/// The note of a measurement on MPI ranks: how many ranks on how many hosts, and that the
/// topology above is rank 0's host's.
fn ranks_note(n: u32, hosts: Option<&(usize, String)>, size: u64) -> String {
    let on = match hosts {
        Some((h, host)) => format!(
            "measured on {n} ranks on {h} host{}; topology of {host}",
            if *h == 1 { "" } else { "s" }
        ),
        None => format!("measured on {n} ranks; topology of rank 0's host"),
    };
    format!(
        "{on} (rank 0); every rank ran each point at the same time on a scratch file of its own ({}), each figure is all ranks' bytes over the span from the first rank's start to the last one's end, and threads are per rank",
        sz(size)
    )
}

/// The points of a measurement, in order, into `m` (stopping at an interrupt with a note).
fn measure_points(
    opts: &MeasureOpts,
    exec: &Executor,
    file: &Path,
    secs: f64,
    m: &mut Measurement,
    progress: &mut dyn FnMut(&Point),
    store: &mut dyn FnMut(Record) -> Result<()>,
) -> Result<()> {
    let mut push = |m: &mut Measurement, p: Point| {
        progress(&p);
        m.points.push(p);
    };
    for dir in [Dir::Read, Dir::Write] {
        for &bs in &opts.sizes {
            for direct in [false, true] {
                let job = point_job(file, opts.file_size, dir, direct, bs, 1, secs);
                let index = m.points.len();
                let p = run_point_median_on(exec, &job, Phase::Sizes, opts.repeat, index, store)?;
                push(m, p);
                if crate::runner::signal::interrupted() {
                    m.notes
                        .push("interrupted: the measurement is incomplete".into());
                    return Ok(());
                }
            }
        }
    }
    for dir in [Dir::Read, Dir::Write] {
        let curve = size_curve(&m.points, dir, true);
        let bs = knee(&curve).unwrap_or(1 << 20);
        for &t in &opts.streams {
            if bs * t as u64 > opts.file_size {
                m.notes.push(format!(
                    "{} x{t} at {} skipped: the scratch file is too small",
                    dir.name(),
                    sz(bs)
                ));
                continue;
            }
            let job = point_job(file, opts.file_size, dir, true, bs, t, secs);
            let index = m.points.len();
            let p = run_point_median_on(exec, &job, Phase::Streams, opts.repeat, index, store)?;
            push(m, p);
            if crate::runner::signal::interrupted() {
                m.notes
                    .push("interrupted: the measurement is incomplete".into());
                return Ok(());
            }
        }
    }
    note_spread(m);
    Ok(())
}

/// Say when repeated runs of the same point disagree: the storage is shared or cached, and the
/// measured values are rough.
pub fn note_spread(m: &mut Measurement) {
    let spread = |p: &Point| {
        let lo = p
            .runs_bytes_per_sec
            .iter()
            .cloned()
            .fold(f64::INFINITY, f64::min);
        let hi = p.runs_bytes_per_sec.iter().cloned().fold(0.0, f64::max);
        if lo > 0.0 {
            hi / lo
        } else {
            f64::INFINITY
        }
    };
    let repeated: Vec<&Point> = m
        .points
        .iter()
        .filter(|p| p.runs_bytes_per_sec.len() > 1)
        .collect();
    let wide = repeated.iter().filter(|p| spread(p) > 1.5).count();
    if wide > 0 {
        m.notes.push(format!(
            "{wide} of {} points varied by more than 1.5x between runs: the storage is shared or cached; treat the measured values as rough and compare several runs",
            repeated.len()
        ));
    }
}

/// (size, bytes/s) of single-thread points of one direction and cache mode, by size.
pub fn size_curve(points: &[Point], dir: Dir, direct: bool) -> Vec<(u64, f64)> {
    let mut v: Vec<(u64, f64)> = points
        .iter()
        .filter(|p| p.phase == Phase::Sizes && p.dir == dir && p.direct == direct)
        .map(|p| (p.block_size_bytes, p.bytes_per_sec))
        .collect();
    v.sort_by_key(|&(s, _)| s);
    v.dedup_by_key(|&mut (s, _)| s);
    v
}

/// (threads, bytes/s) of the stream points of one direction.
pub fn stream_curve(points: &[Point], dir: Dir) -> Vec<(u32, f64)> {
    let mut v: Vec<(u32, f64)> = points
        .iter()
        .filter(|p| p.phase == Phase::Streams && p.dir == dir)
        .map(|p| (p.threads, p.bytes_per_sec))
        .collect();
    v.sort_by_key(|&(t, _)| t);
    v.dedup_by_key(|&mut (t, _)| t);
    v
}

/// Smallest x whose value reaches PLATEAU_FRACTION of the peak.
pub fn knee<X: Copy + Ord>(curve: &[(X, f64)]) -> Option<X> {
    let peak = curve.iter().map(|&(_, v)| v).fold(f64::NAN, f64::max);
    if peak.is_nan() || peak <= 0.0 {
        return None;
    }
    let mut sorted: Vec<(X, f64)> = curve.to_vec();
    sorted.sort_by_key(|&(x, _)| x);
    sorted
        .iter()
        .find(|&&(_, v)| v >= PLATEAU_FRACTION * peak)
        .map(|&(x, _)| x)
}

/// Where direct I/O overtakes buffered: the smallest size from which direct is at least as
/// fast at every larger size measured. None when buffered still wins at the largest size.
pub fn crossover(buffered: &[(u64, f64)], direct: &[(u64, f64)]) -> Option<u64> {
    let mut pairs: Vec<(u64, f64, f64)> = buffered
        .iter()
        .filter_map(|&(s, b)| {
            direct
                .iter()
                .find(|&&(d, _)| d == s)
                .map(|&(_, v)| (s, b, v))
        })
        .collect();
    pairs.sort_by_key(|&(s, _, _)| s);
    let mut answer = None;
    for &(s, b, d) in pairs.iter().rev() {
        if d >= b {
            answer = Some(s);
        } else {
            break;
        }
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn knee_is_smallest_size_at_90_percent() {
        let c = [
            (4096u64, 10.0),
            (65536, 80.0),
            (262144, 95.0),
            (1 << 20, 100.0),
        ];
        assert_eq!(knee(&c), Some(262144));
        assert_eq!(knee::<u64>(&[]), None);
        assert_eq!(knee(&[(1u32, 0.0)]), None);
    }

    #[test]
    fn crossover_needs_direct_to_stay_ahead() {
        let b = [
            (4096u64, 100.0),
            (65536, 100.0),
            (262144, 100.0),
            (1 << 20, 100.0),
        ];
        let d = [
            (4096u64, 10.0),
            (65536, 120.0),
            (262144, 90.0),
            (1 << 20, 150.0),
        ];
        assert_eq!(
            crossover(&b, &d),
            Some(1 << 20),
            "a dip at 256k moves it up"
        );
        let d2 = [
            (4096u64, 10.0),
            (65536, 120.0),
            (262144, 130.0),
            (1 << 20, 150.0),
        ];
        assert_eq!(crossover(&b, &d2), Some(65536));
        let d3 = [
            (4096u64, 10.0),
            (65536, 20.0),
            (262144, 30.0),
            (1 << 20, 40.0),
        ];
        assert_eq!(crossover(&b, &d3), None);
    }

    #[test]
    fn spread_between_runs_is_reported() {
        let p = |runs: Vec<f64>| Point {
            phase: Phase::Sizes,
            dir: Dir::Read,
            direct: true,
            block_size_bytes: 4096,
            threads: 1,
            bytes: 4096,
            elapsed_s: 1.0,
            bytes_per_sec: runs[1],
            cpu_s: 0.0,
            runs_bytes_per_sec: runs,
        };
        let mut m = Measurement {
            points: vec![p(vec![100.0, 110.0, 120.0]), p(vec![100.0, 300.0, 200.0])],
            ..Default::default()
        };
        note_spread(&mut m);
        assert_eq!(m.notes.len(), 1);
        assert!(m.notes[0].starts_with("1 of 2 points"), "{:?}", m.notes);
        m.points.pop();
        m.notes.clear();
        note_spread(&mut m);
        assert!(m.notes.is_empty());
    }

    #[test]
    fn a_ranks_scratch_file_is_where_the_file_per_rank_layout_puts_it() {
        let file = Path::new("/d/x").join(SCRATCH_NAME);
        for rank in [0, 3, 12345] {
            assert_eq!(
                rank_scratch(&file, &format!("{rank:05}")),
                crate::exec::rank_file(&file, rank)
            );
        }
    }

    proptest! {
        #[test]
        fn knee_reaches_fraction_and_nothing_smaller_does(vals in proptest::collection::vec(0.0f64..1e9, 1..10)) {
            let c: Vec<(u64, f64)> = vals.iter().enumerate().map(|(i, &v)| ((i as u64 + 1) * 4096, v)).collect();
            let peak = vals.iter().cloned().fold(0.0, f64::max);
            match knee(&c) {
                Some(k) => {
                    let v = c.iter().find(|p| p.0 == k).unwrap().1;
                    prop_assert!(v >= PLATEAU_FRACTION * peak);
                    prop_assert!(c.iter().filter(|p| p.0 < k).all(|p| p.1 < PLATEAU_FRACTION * peak));
                }
                None => prop_assert!(peak <= 0.0),
            }
        }

        #[test]
        fn crossover_holds_above(b in proptest::collection::vec(0.0f64..100.0, 1..8), d in proptest::collection::vec(0.0f64..100.0, 1..8)) {
            let n = b.len().min(d.len());
            let bc: Vec<(u64, f64)> = (0..n).map(|i| (4096u64 << i, b[i])).collect();
            let dc: Vec<(u64, f64)> = (0..n).map(|i| (4096u64 << i, d[i])).collect();
            if let Some(s) = crossover(&bc, &dc) {
                for i in 0..n {
                    if bc[i].0 >= s { prop_assert!(dc[i].1 >= bc[i].1); }
                }
                let below = (0..n).rev().find(|&i| bc[i].0 < s);
                if let Some(i) = below { prop_assert!(dc[i].1 < bc[i].1); }
            } else {
                prop_assert!(dc[n - 1].1 < bc[n - 1].1);
            }
        }
    }
}
