//! Sweeps: a study is fixed settings plus axes; its points are the cross product of the axes
//! in the stated order (the first axis varies slowest, the last fastest). Each point's Result
//! is written to the output directory as soon as it finishes, so an interrupted sweep keeps
//! what it measured, and a re-run skips points whose stored result matches. Suites
//! (`suites/*.toml`) are lists of studies that regenerate the seed papers' tables.

pub(crate) mod aged;
pub mod axis;
pub(crate) mod progress;
pub mod pts;
pub mod rawdev;
pub mod record;
pub mod suite;
pub(crate) mod tuned;
pub mod workloads;

use crate::runner::RunStatus;
use crate::usage;
pub use axis::{Axis, PointJob};
use progress::Progress;
pub use record::{ChartSpec, Record, SweepMeta, TableSpec};
use std::path::{Path, PathBuf};

/// One sweep: fixed settings, axes, and how its table and chart are shaped.
#[derive(Debug, Clone, Default)]
pub struct Study {
    pub suite: String,
    pub id: String,
    pub title: String,
    /// Fixed settings, applied before the axis values.
    pub settings: Vec<(String, String)>,
    pub axes: Vec<Axis>,
    pub table: TableSpec,
    pub chart: ChartSpec,
    /// Use the file size as the I/O size when the file is smaller than one I/O (file-size sweeps).
    pub clamp_bs_to_size: bool,
    /// Run this Filebench personality at each point (workload variables from `var.*`,
    /// run time from `time`) instead of a Job; the target is then a directory.
    pub workload: Option<String>,
}

/// One point of a study: axis values in axis order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    pub index: usize,
    pub values: Vec<(String, String)>,
}

/// Most points one study may have: each point is a measured run, and the list of points is
/// held in memory, so an axis list that multiplies out to millions is a mistake to refuse.
pub const MAX_POINTS: usize = 100_000;

impl Study {
    /// Refuse, before the points are built, a study whose axes multiply out to more than
    /// [`MAX_POINTS`] (one line, with the count).
    pub fn check_point_count(&self) -> Result<usize, crate::error::UsageError> {
        let mut n: usize = 1;
        for a in &self.axes {
            n = n.saturating_mul(a.values.len());
        }
        if n > MAX_POINTS {
            let sizes: Vec<String> = self
                .axes
                .iter()
                .map(|a| format!("{} {}", a.values.len(), a.name))
                .collect();
            return Err(usage!(
                "study {}: {} points ({}) is more than the {MAX_POINTS} a sweep may have: use shorter value lists",
                self.id,
                if n == usize::MAX { "too many".to_string() } else { n.to_string() },
                sizes.join(" x ")
            ));
        }
        Ok(n)
    }

    /// The cross product of the axes; the first axis is outermost.
    pub fn points(&self) -> Vec<Point> {
        let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for a in &self.axes {
            let mut next = Vec::with_capacity(out.len() * a.values.len());
            for prefix in &out {
                for v in &a.values {
                    let mut p = prefix.clone();
                    p.push((a.name.clone(), v.clone()));
                    next.push(p);
                }
            }
            out = next;
        }
        out.into_iter()
            .enumerate()
            .map(|(index, values)| Point { index, values })
            .collect()
    }

    /// "bs (outer) > cache > threads (inner)".
    pub fn order_text(&self) -> String {
        let names: Vec<&str> = self.axes.iter().map(|a| a.name.as_str()).collect();
        match names.len() {
            0 => "one point".into(),
            1 => names[0].to_string(),
            _ => format!(
                "{} (outer) > {} (inner)",
                names[..names.len() - 1].join(" > "),
                names[names.len() - 1]
            ),
        }
    }

    /// Every setting of a point: fixed settings then the point's axis values.
    pub(crate) fn settings_of(&self, p: &Point) -> Vec<(String, String)> {
        let mut s = self.settings.clone();
        s.extend(p.values.iter().cloned());
        s
    }

    /// Build the Job of a point. Targets are `base`, `base.1`, `base.2`, ... (one per file).
    pub fn build(&self, p: &Point, base: &Path) -> Result<PointJob, crate::error::UsageError> {
        let mut pj = PointJob::default();
        let mut tuning = None;
        for (n, v) in self.settings_of(p) {
            axis::apply(&mut pj, &n, &v).map_err(|e| usage!("study {}: {}: {e}", self.id, n))?;
            if n == tuned::SETTING {
                tuning = Some(v);
            }
        }
        let label: Vec<String> = p.values.iter().map(|(n, v)| format!("{n}={v}")).collect();
        pj.job.name = if label.is_empty() {
            self.id.clone()
        } else {
            format!("{} {}", self.id, label.join(" "))
        };
        pj.job.targets = (0..pj.files)
            .map(|i| {
                if i == 0 {
                    base.to_path_buf()
                } else {
                    PathBuf::from(format!("{}.{i}", base.display()))
                }
            })
            .collect();
        let j = &mut pj.job;
        if self.clamp_bs_to_size {
            if let Some(s) = j.file_size {
                if s < j.block_size {
                    j.block_size = s.max(1);
                }
            }
        }
        // Sequential threads each own a slice of the file: make every slice hold an I/O.
        if let Some(s) = j.file_size {
            let need = j.block_size.saturating_mul(j.threads as u64);
            if !j.access.is_random() && s < need {
                j.file_size = Some(need);
            }
        }
        if let Some(t) = tuning {
            tuned::apply(&mut pj, &t).map_err(|e| usage!("study {}: {e}", self.id))?;
        }
        pj.job
            .validate()
            .map_err(|e| usage!("study {} point {}: {e}", self.id, label.join(" ")))?;
        Ok(pj)
    }

    /// Settings of a workload point: only workload variables and the run time apply.
    pub fn build_workload(&self, p: &Point) -> Result<PointJob, crate::error::UsageError> {
        let mut pj = PointJob::default();
        for (n, v) in self.settings_of(p) {
            if !(n.starts_with("var.") || n == "time") {
                return Err(usage!(
                    "a workload sweep takes workload variables (-D NAME=...) and --time, not {n}"
                ));
            }
            axis::apply(&mut pj, &n, &v)?;
        }
        Ok(pj)
    }

    pub fn meta(&self, p: &Point, index: usize, repeat: u32, target: Option<&str>) -> SweepMeta {
        SweepMeta {
            suite: self.suite.clone(),
            study: self.id.clone(),
            title: self.title.clone(),
            index,
            repeat,
            point: p.values.clone(),
            settings: self.settings_of(p),
            table: self.table.clone(),
            chart: self.chart.clone(),
            target: target.map(str::to_string),
        }
    }
}

/// File name of a point's record: `STUDY-0007-bs-64k_cache-direct[-r1].json`.
pub fn record_file_name(
    study: &str,
    index: usize,
    values: &[(String, String)],
    repeat: u32,
) -> String {
    let mut slug: String = values
        .iter()
        .map(|(n, v)| format!("{n}-{v}"))
        .collect::<Vec<_>>()
        .join("_")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    slug.truncate(80);
    let study: String = study
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let rep = if repeat > 0 {
        format!("-r{repeat}")
    } else {
        String::new()
    };
    if slug.is_empty() {
        format!("{study}-{index:04}{rep}.json")
    } else {
        format!("{study}-{index:04}-{slug}{rep}.json")
    }
}

/// How many points ran, were reused from an earlier run, or were skipped.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub ran: usize,
    pub reused: usize,
    pub skipped: usize,
    pub failed: usize,
}

/// A file a sweep point created: its path, the (device, inode) it had then, and whether it
/// carried fsbench's mark (an inode number freed by a removal is soon reused, so where the
/// file system keeps xattrs the mark is what tells our file from a stranger's on that inode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
    pub marked: bool,
}

/// (device, inode, marked) of the regular file at `p`, looked at through a descriptor
/// opened without following a symbolic link.
pub fn regular_identity(p: &Path) -> Option<(u64, u64, bool)> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(p)
        .ok()?;
    let m = f.metadata().ok()?;
    m.file_type()
        .is_file()
        .then(|| (m.dev(), m.ino(), crate::safety::fd_is_marked(&f)))
}

/// Remove `c` only if its name still holds the file this run created (a regular file, not a
/// link, same device and inode, still marked when it was marked). Anything else there was put
/// by someone else: it is left, and said so on stderr. Returns whether the file was removed.
pub fn remove_created(c: &Created) -> bool {
    match regular_identity(&c.path) {
        Some((dev, ino, marked)) if (dev, ino) == (c.dev, c.ino) && (marked || !c.marked) => {
            std::fs::remove_file(&c.path).is_ok()
        }
        None if std::fs::symlink_metadata(&c.path).is_err() => false,
        _ => {
            eprintln!(
                "fsbench: left {}: it was replaced after fsbench created it",
                c.path.display()
            );
            false
        }
    }
}

/// State shared by every study of one sweep or suite run.
pub struct Ctx {
    pub out_dir: PathBuf,
    /// The results directory, opened, marked and locked for the whole run; every record and
    /// report is written through it.
    pub results: crate::output::ResultsDir,
    /// `--force`: replace files fsbench did not write and points stored with other settings.
    pub force: bool,
    pub repeat: u32,
    /// Run the repeats round-robin over the points (A B C, C B A, ...; see `visit_order`).
    pub interleave: bool,
    /// Ignore stored results and measure every point again.
    pub fresh: bool,
    pub keep: bool,
    pub progress: Progress,
    pub raw: rawdev::RawProvider,
    /// Files this run created, with the identity (device, inode) they had right after the
    /// point that created them: removed at the end unless `keep`, and only while the name
    /// still holds that same regular file (a file the user put there since is left alone).
    pub created: Vec<Created>,
    pub tally: Tally,
    /// Set when Ctrl-C stopped the run.
    pub interrupted: bool,
    /// Global point counter, so records of a suite sort in run order.
    pub next_index: usize,
    /// `--iostat INTERVAL`: sample the devices under each point's targets during its run.
    pub iostat: Option<std::time::Duration>,
    /// What the run is, printed when the first point has been stored (see `announce`).
    pub banner: Option<String>,
    /// Set by a front end that builds the target itself (`fscompare`): what to do before
    /// every measured point, and what to add to every stored Result.
    pub hooks: Option<Hooks>,
    /// Where each point runs: here, or on every MPI rank (`crate::exec`).
    pub exec: crate::exec::Executor,
    /// `--status-interval` of every point (the points show no live line of their own).
    pub watch: crate::runner::live::Watching,
}

/// What a front end that owns the target adds to every point of a study: a step before each
/// measured point (`fscompare` syncs, drops the caches and remounts the file system it
/// built) and probes stored in each Result (its mkfs and mount command lines, geometry).
pub struct Hooks {
    pub before_point: Box<dyn FnMut() -> anyhow::Result<()>>,
    pub probes: Vec<(String, serde_json::Value)>,
    /// Stored as each Result's `environment.built`: how the storage was built.
    pub built: Option<serde_json::Value>,
}

impl Ctx {
    /// Watch the study as its front end's flags say: `watch.live` is the point counter
    /// line's, and every point keeps the time series without a live line of its own.
    pub fn watched(&mut self, watch: crate::runner::live::Watching) {
        self.progress.set_mode(watch.live);
        self.watch = watch.without_line();
    }

    pub fn new(
        out_dir: PathBuf,
        repeat: u32,
        fresh: bool,
        keep: bool,
        force: bool,
        total_points: usize,
    ) -> anyhow::Result<Ctx> {
        let results = crate::output::ResultsDir::open(&out_dir, force)?;
        // The reports are rewritten at the end: refuse foreign ones before measuring.
        for name in ["report.html", "report.md", "suite.json"] {
            results.check(name)?;
        }
        Ok(Ctx {
            out_dir,
            results,
            force,
            repeat: repeat.max(1),
            interleave: false,
            fresh,
            keep,
            progress: Progress::new(total_points),
            raw: rawdev::RawProvider::new(),
            created: Vec::new(),
            tally: Tally::default(),
            interrupted: false,
            next_index: 0,
            iostat: None,
            banner: None,
            hooks: None,
            exec: crate::exec::Executor::Local,
            watch: Default::default(),
        })
    }

    /// Run the front end's step before a measured point (see [`Hooks`]).
    pub(crate) fn before_point(&mut self) -> anyhow::Result<()> {
        match &mut self.hooks {
            Some(h) => (h.before_point)(),
            None => Ok(()),
        }
    }

    /// Print the run's banner once, when the first point has been stored: a refusal that
    /// comes from preparing the first point is then the only line on stderr.
    pub fn announce(&mut self) {
        if let Some(line) = self.banner.take() {
            self.progress.clear();
            eprintln!("{line}");
        }
    }

    /// The stored record of the results directory named like `path`, read without following
    /// a symbolic link.
    fn stored(&self, path: &Path) -> Option<Record> {
        let name = path.file_name()?.to_str()?;
        let text = self.results.read(name)?;
        let recs = record::parse_records(&text, &path.display().to_string()).ok()?;
        recs.into_iter().next()
    }

    /// A stored record at `path` that matches `meta` and completed, if any.
    pub fn reusable(&self, path: &Path, meta: &SweepMeta) -> Option<Record> {
        if self.fresh {
            return None;
        }
        let rec = self.stored(path)?;
        let same = record::conflict(rec.meta(), meta).is_none();
        match &rec {
            Record::Run { result, .. } if same && result.status == RunStatus::Complete => Some(rec),
            _ => None,
        }
    }

    /// Refuse (unless `--force`) to replace the point stored at `path` when it was measured
    /// with other settings than `meta`: one line naming the differing setting.
    pub(crate) fn check_replace(&self, path: &Path, meta: &SweepMeta) -> anyhow::Result<()> {
        if self.force {
            return Ok(());
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        self.results.check(name)?;
        if let Some(old) = self.stored(path) {
            if let Some(why) = record::conflict(old.meta(), meta) {
                crate::bail_usage!(
                    "{} holds a point measured with other settings ({why}): use another --output directory, or add --force to replace it",
                    path.display()
                );
            }
        }
        Ok(())
    }

    /// Repetitions of one point that disagree by more than 10 % (`explain`: spread): each
    /// stored record of them is written again with the finding.
    pub(crate) fn mark_spread(
        &mut self,
        repeats: &mut [Record],
        study: &str,
        index: usize,
        values: &[(String, String)],
    ) -> anyhow::Result<()> {
        let results = repeats.iter_mut().filter_map(|r| match r {
            Record::Run { result, .. } => Some(&mut **result),
            Record::Skipped { .. } => None,
        });
        if !crate::explain::mark_spread(results) {
            return Ok(());
        }
        for rec in repeats.iter() {
            if let Record::Run { meta, .. } = rec {
                let path = self
                    .out_dir
                    .join(record_file_name(study, index, values, meta.repeat));
                self.write_record(&path, rec)?;
            }
        }
        Ok(())
    }

    /// Store a record in the results directory and count it.
    pub fn store(&mut self, path: &Path, rec: &Record) -> anyhow::Result<()> {
        self.check_replace(path, rec.meta())?;
        self.write_record(path, rec)?;
        self.announce();
        match rec {
            Record::Run { result, .. } if result.status == RunStatus::Failed => {
                self.tally.failed += 1
            }
            Record::Run { .. } => self.tally.ran += 1,
            Record::Skipped { .. } => self.tally.skipped += 1,
        }
        Ok(())
    }

    /// Write a record (with the hooks' probes) to the results directory.
    fn write_record(&mut self, path: &Path, rec: &Record) -> anyhow::Result<()> {
        let mut with_probes;
        let rec = match (&self.hooks, rec) {
            (Some(h), Record::Run { .. }) if !h.probes.is_empty() || h.built.is_some() => {
                with_probes = rec.clone();
                if let Record::Run { result, .. } = &mut with_probes {
                    for (k, v) in &h.probes {
                        result.probes.insert(k.clone(), v.clone());
                    }
                    if h.built.is_some() {
                        result.environment.built = h.built.clone();
                    }
                }
                &with_probes
            }
            _ => rec,
        };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| usage!("bad record name {}", path.display()))?;
        self.results.write(name, rec.to_json()?.as_bytes())?;
        Ok(())
    }

    /// Remember that a point created `path` (with the identity it has now).
    pub(crate) fn note_created(&mut self, path: &Path) {
        if let Some(c) = self.created.iter().find(|c| c.path == path) {
            // The point's own run took its record off when it kept the file for the next.
            crate::leftover::mark_run_at(path, c.dev, c.ino, !self.keep);
            return;
        }
        if let Some((dev, ino, marked)) = regular_identity(path) {
            // This run removes it at its end unless kept: say so on the file, for the run
            // after a kill (`crate::leftover`).
            crate::leftover::mark_run_at(path, dev, ino, !self.keep);
            self.created.push(Created {
                path: path.to_path_buf(),
                dev,
                ino,
                marked,
            });
        }
    }

    /// Did a point of this run create `path`?
    pub(crate) fn is_created(&self, path: &Path) -> bool {
        self.created.iter().any(|c| c.path == path)
    }

    /// Remove the file a point of this run created at `path` (if the name still holds it)
    /// and forget it.
    pub(crate) fn remove_created_path(&mut self, path: &Path) {
        if let Some(i) = self.created.iter().position(|c| c.path == path) {
            let c = self.created.swap_remove(i);
            remove_created(&c);
        }
    }

    /// End a study's run: remove what it created, clear the progress line, and either give
    /// its records back and announce where they are, or (on error) abandon the results
    /// directory it was writing.
    pub fn finish_study(
        &mut self,
        res: anyhow::Result<Vec<Record>>,
    ) -> anyhow::Result<Vec<Record>> {
        self.cleanup();
        self.progress.clear();
        match res {
            Ok(records) => {
                self.announce();
                Ok(records)
            }
            Err(e) => {
                self.results.abandon();
                Err(e)
            }
        }
    }

    /// Remove files fsbench created during this run (not when `keep`), on every rank of a
    /// distributed run too.
    pub fn cleanup(&mut self) {
        self.exec.cleanup(self.keep);
        if self.keep {
            return;
        }
        // Only files that did not exist before a point of this run, by identity.
        for c in self.created.drain(..) {
            remove_created(&c);
        }
        self.raw.release();
    }
}

/// Refuse, before anything is measured, a study whose points are stored in the results
/// directory with other settings, or under whose names foreign files lie (see
/// `Ctx::check_replace`).
pub fn check_stored(study: &Study, target: Option<&str>, ctx: &Ctx) -> anyhow::Result<()> {
    for (k, p) in study.points().iter().enumerate() {
        for r in 0..ctx.repeat {
            let index = ctx.next_index + k;
            let file = ctx
                .out_dir
                .join(record_file_name(&study.id, index, &p.values, r));
            ctx.check_replace(&file, &study.meta(p, index, r, target))?;
        }
    }
    Ok(())
}

/// Run one study on one target base path: every point, every repetition.
/// `extra` may add probe data to a result before it is stored.
pub fn run_study(
    study: &Study,
    base: &Path,
    target: Option<&str>,
    ctx: &mut Ctx,
) -> anyhow::Result<Vec<Record>> {
    remove_dead_study_files(base);
    let points = study.points();
    // Build every point first: a bad setting is reported before any I/O happens.
    let mut built = Vec::with_capacity(points.len());
    for p in &points {
        built.push(match &study.workload {
            Some(_) => study.build_workload(p)?,
            None => study.build(p, base)?,
        });
    }
    check_stored(study, target, ctx)?;
    let first_index = ctx.next_index;
    ctx.next_index += points.len();
    let mut out = Vec::new();
    for (k, r) in visit_order(points.len(), ctx.repeat, ctx.interleave) {
        let (p, pj) = (&points[k], &built[k]);
        let index = first_index + k;
        {
            if ctx.interrupted || crate::runner::signal::interrupted() {
                ctx.interrupted = true;
                break;
            }
            let meta = study.meta(p, index, r, target);
            let file = ctx
                .out_dir
                .join(record_file_name(&study.id, index, &p.values, r));
            ctx.progress
                .start_point(&format!("{} {}", study.id, meta.point_label()));
            if let Some(rec) = ctx.reusable(&file, &meta) {
                ctx.tally.reused += 1;
                ctx.progress.finish_point();
                out.push(rec);
                continue;
            }
            let rec = match &study.workload {
                Some(name) => {
                    ctx.before_point()?;
                    run_workload_point(name, base, pj, meta, &ctx.exec, &ctx.watch)
                }
                None => run_point(pj, meta, ctx)?,
            };
            ctx.store(&file, &rec)?;
            ctx.progress.finish_point();
            if let Record::Run { result, .. } = &rec {
                if result.status == RunStatus::Partial {
                    ctx.interrupted = true;
                }
            }
            out.push(rec);
        }
    }
    // Each point's repeats together, in point order, for the spread check and the reports.
    out.sort_by_key(|r| (r.meta().index, r.meta().repeat));
    let mut start = 0;
    while start < out.len() {
        let index = out[start].meta().index;
        let end = start + out[start..].partition_point(|r| r.meta().index == index);
        let k = index - first_index;
        ctx.mark_spread(&mut out[start..end], &study.id, index, &points[k].values)?;
        start = end;
    }
    Ok(out)
}

/// The order a study's (point, repeat) pairs run in: each point's repeats together, or with
/// `interleave` the points round-robin, forward then backward (A B C, C B A, A B C, ...), so
/// that a slow drift over the study weighs on every point alike.
pub(crate) fn visit_order(points: usize, repeat: u32, interleave: bool) -> Vec<(usize, u32)> {
    if !interleave {
        return (0..points)
            .flat_map(|k| (0..repeat).map(move |r| (k, r)))
            .collect();
    }
    (0..repeat)
        .flat_map(|r| {
            let forward = r % 2 == 0;
            (0..points).map(move |i| (if forward { i } else { points - 1 - i }, r))
        })
        .collect()
}

/// Run one point of a workload sweep through the one entry point for personalities.
pub(crate) fn run_workload_point(
    name: &str,
    dir: &Path,
    pj: &PointJob,
    meta: SweepMeta,
    exec: &crate::exec::Executor,
    watch: &crate::runner::live::Watching,
) -> Record {
    let time_s = pj.job.time_s.unwrap_or(10.0);
    match workloads::run_personality(name, dir, &pj.vars, time_s, exec, watch) {
        Ok(r) => Record::run(meta, r),
        Err(workloads::PersonalityError::Missing(why)) => Record::skip(meta, why),
        Err(workloads::PersonalityError::Failed(e)) => Record::skip(meta, format!("error: {e:#}")),
    }
}

/// Remove the files at `base` (and `base.N`) that a killed run of the study left (see
/// `crate::leftover`: by their record, never by name alone), so that a rerun which measures
/// nothing new (every point stored) still leaves none behind.
pub(crate) fn remove_dead_study_files(base: &Path) {
    let dir = base
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Some(name) = base.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let dotted = format!("{name}.");
    for note in
        crate::leftover::remove_dead_runs_files(dir, |n| n == name || n.starts_with(&dotted))
    {
        crate::runner::say(&format!("fsbench: note: {note}"));
    }
}

/// Run one built point: provide a raw device when the policy needs one, start writes on a
/// fresh file, remember what was created. On MPI ranks each rank keeps and removes its own
/// files (`crate::exec::Ranks`).
pub fn run_point(pj: &PointJob, meta: SweepMeta, ctx: &mut Ctx) -> anyhow::Result<Record> {
    run_point_observing(pj, meta, ctx, false)
}

/// [`run_point`], also counting the extents of the point's files after its run when
/// `extents` (on ranks, each rank its own files; see `crate::observe`).
pub(crate) fn run_point_observing(
    pj: &PointJob,
    meta: SweepMeta,
    ctx: &mut Ctx,
    extents: bool,
) -> anyhow::Result<Record> {
    ctx.before_point()?;
    let mut job = pj.job.clone();
    // On MPI ranks each rank's file is its own: the ranks keep and remove them.
    let ranks = ctx.exec.ranks().is_some();
    // On ranks, a raw point on a file target runs on a loop device each rank makes (of this
    // many bytes) in its own directory.
    let mut rank_loops = None;
    if job.cache == crate::job::CachePolicy::Raw
        && !job
            .targets
            .iter()
            .all(|t| crate::safety::is_block_device(t))
    {
        if job.targets.len() > 1 {
            return Ok(Record::skip(
                meta,
                "raw I/O on several files needs several block devices: fsbench provides one loop device",
            ));
        }
        let need = job.needed_file_size().unwrap_or(1 << 30);
        // The loop device's backing file lives beside the target: raw I/O on the same storage.
        let dir = job.targets[0]
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        if ranks {
            rank_loops = Some(need);
        } else {
            match ctx.raw.device(&dir, need) {
                Ok(dev) => job.targets = vec![dev],
                Err(why) => return Ok(Record::skip(meta, why.to_string())),
            }
        }
    }
    // The white paper writes new files: a sequential write starts from an empty file.
    let fresh = !pj.keep_contents
        && job.access == crate::job::Access::Write
        && job.cache != crate::job::CachePolicy::Concurrent;
    if fresh && !ranks {
        for t in &job.targets {
            ctx.remove_created_path(t);
        }
    }
    // lstat: a dangling link planted at a target's name is something that existed. A file
    // a killed run of fsbench left there is taken over as this run's (`crate::leftover`).
    let existed: Vec<bool> = job
        .targets
        .iter()
        .map(|t| {
            std::fs::symlink_metadata(t).is_ok() && crate::leftover::left_by_dead_run(t).is_none()
        })
        .collect();
    job.keep = true;
    // On ranks, every host's devices are sampled by one of its ranks.
    let observe = crate::observe::Observe {
        extents,
        watch: ctx.watch.clone(),
        ..crate::observe::Observe::iostat(ctx.iostat)
    };
    let run = match (&ctx.exec, rank_loops) {
        (crate::exec::Executor::Ranks(r), Some(need)) => {
            r.run_job_on_loop_devices(&job, fresh, &observe, need)
        }
        _ => ctx.exec.run_job(&job, fresh, &observe),
    };
    let result = match run {
        Ok(r) => r,
        Err(e) if e.is::<rawdev::NoRawDevice>() => return Ok(Record::skip(meta, e.to_string())),
        Err(e) if crate::error::is_usage(&e) => return Err(e),
        Err(e) => return Ok(Record::skip(meta, format!("error: {e:#}"))),
    };
    if !ranks {
        for (t, was) in job.targets.iter().zip(existed) {
            if !was || ctx.is_created(t) {
                ctx.note_created(t);
            }
        }
    }
    Ok(Record::run(meta, result))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study() -> Study {
        Study {
            id: "t".into(),
            settings: vec![("rw".into(), "read".into()), ("size".into(), "1m".into())],
            axes: vec![
                Axis {
                    name: "bs".into(),
                    values: vec!["4k".into(), "64k".into()],
                },
                Axis {
                    name: "cache".into(),
                    values: vec!["buffered".into(), "direct".into(), "discovered".into()],
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn cross_product_order_first_axis_outermost() {
        let s = study();
        let pts = s.points();
        assert_eq!(pts.len(), 6);
        let labels: Vec<String> = pts
            .iter()
            .map(|p| format!("{}/{}", p.values[0].1, p.values[1].1))
            .collect();
        assert_eq!(
            labels,
            [
                "4k/buffered",
                "4k/direct",
                "4k/discovered",
                "64k/buffered",
                "64k/direct",
                "64k/discovered"
            ]
        );
        assert_eq!(s.order_text(), "bs (outer) > cache (inner)");
        let pj = s.build(&pts[4], Path::new("/tmp/x")).unwrap();
        assert_eq!(pj.job.block_size, 65536);
        assert_eq!(pj.job.cache, crate::job::CachePolicy::Direct);
    }

    #[test]
    fn files_axis_names_targets_and_clamps() {
        let mut s = study();
        s.axes = vec![Axis {
            name: "files".into(),
            values: vec!["3".into()],
        }];
        s.settings.push(("bs".into(), "2m".into()));
        let pj = s.build(&s.points()[0], Path::new("/d/f")).unwrap();
        let t: Vec<String> = pj
            .job
            .targets
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(t, ["/d/f", "/d/f.1", "/d/f.2"]);
        // 2m I/Os on a 1m file: the file grows to one I/O per thread.
        assert_eq!(pj.job.file_size, Some(2 << 20));
        s.clamp_bs_to_size = true;
        let pj = s.build(&s.points()[0], Path::new("/d/f")).unwrap();
        assert_eq!(pj.job.block_size, 1 << 20);
    }

    #[test]
    fn interleaved_repeats_go_round_robin_forward_then_back() {
        let names = |v: Vec<(usize, u32)>| -> String {
            v.iter()
                .map(|(k, r)| format!("{}{r}", (b'A' + *k as u8) as char))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(names(visit_order(3, 3, true)), "A0 B0 C0 C1 B1 A1 A2 B2 C2");
        assert_eq!(names(visit_order(2, 2, false)), "A0 A1 B0 B1");
        assert_eq!(names(visit_order(2, 1, true)), "A0 B0");
    }

    #[test]
    fn file_names_are_safe_and_ordered() {
        let n = record_file_name(
            "wp read",
            7,
            &[("cache".into(), "discovered=256k".into())],
            1,
        );
        assert_eq!(n, "wp_read-0007-cache-discovered_256k-r1.json");
        assert!(record_file_name("a", 2, &[], 0) < record_file_name("a", 10, &[], 0));
    }

    #[test]
    fn a_cross_product_of_millions_is_refused_before_it_is_built() {
        let mut s = study();
        let many: Vec<String> = (1..=100).map(|i| i.to_string()).collect();
        for name in ["count", "nrep", "seed", "threads"] {
            s.axes.push(Axis {
                name: name.into(),
                values: many.clone(),
            });
        }
        let e = s.check_point_count().unwrap_err();
        assert!(e.0.contains("more than the 100000"), "{}", e.0);
        assert!(!e.0.contains('\n'));
        assert_eq!(study().check_point_count().unwrap(), 6);
    }

    #[test]
    fn cleanup_removes_only_the_file_it_created() {
        let out = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let mut ctx = Ctx::new(out.path().join("res"), 1, false, false, false, 1).unwrap();
        let ours = work.path().join("ours.dat");
        let swapped = work.path().join("swapped.dat");
        let linked = work.path().join("linked.dat");
        for p in [&ours, &swapped, &linked] {
            std::fs::write(p, b"fsbench").unwrap();
            crate::safety::mark_created(p);
            ctx.note_created(p);
        }
        // Another user replaces one created file with their own, and another with a link.
        std::fs::remove_file(&swapped).unwrap();
        std::fs::write(&swapped, b"user data").unwrap();
        let victim = work.path().join("victim");
        std::fs::write(&victim, b"victim").unwrap();
        std::fs::remove_file(&linked).unwrap();
        std::os::unix::fs::symlink(&victim, &linked).unwrap();
        ctx.cleanup();
        assert!(!ours.exists(), "the file fsbench created is removed");
        assert_eq!(std::fs::read(&swapped).unwrap(), b"user data");
        assert!(
            std::fs::symlink_metadata(&linked).is_ok(),
            "a planted link is left"
        );
        assert_eq!(std::fs::read(&victim).unwrap(), b"victim");
    }
}
