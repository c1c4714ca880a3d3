//! Suites: TOML files in `suites/` (embedded in the binary) that each regenerate the tables
//! of one published document as a list of studies. The format is described in docs/suites.md. `--scale` shrinks
//! sizes, times and counts so a suite fits the machine; the suite's `default_scale` is chosen
//! so the suite finishes in minutes here.

use super::aged::AgedPlan;
use super::{axis, Axis, ChartSpec, Ctx, Point, Record, Study, TableSpec};
use crate::backup::BackupPlan;
use crate::error::UsageError;
use crate::units::{format_size_exact, parse_duration, parse_size_as, BareUnit};
use crate::usage;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The suites shipped in the binary: (name, TOML text).
pub const EMBEDDED: &[(&str, &str)] = &[
    (
        "whitepaper",
        include_str!("../../../../suites/whitepaper.toml"),
    ),
    (
        "storage-foundation",
        include_str!("../../../../suites/storage-foundation.toml"),
    ),
    ("shootout", include_str!("../../../../suites/shootout.toml")),
    ("backup", include_str!("../../../../suites/backup.toml")),
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    pub name: String,
    pub title: String,
    /// The title of the published document whose tables the suite regenerates.
    pub source: String,
    /// What the suite measures, in a sentence: the preface of its report says it.
    #[serde(default)]
    pub description: String,
    #[serde(default = "one")]
    pub default_scale: f64,
    #[serde(rename = "study")]
    pub studies: Vec<StudyFile>,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisFile {
    pub name: String,
    pub values: Vec<String>,
    /// `multiply` (sizes, times and counts times the scale), `cap` (drop values above the
    /// largest times the scale), or `none` (default).
    #[serde(default)]
    pub scale: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonalityFile {
    /// Personality (workload file) name, e.g. `fileserver`.
    pub name: String,
    /// The shootout's label for this configuration, e.g. `randread2kcached`.
    #[serde(default)]
    pub label: Option<String>,
    /// Workload variables `NAME=VALUE`.
    #[serde(default)]
    pub vars: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgedFile {
    pub max_files: u32,
    pub size: String,
    pub write_bs: String,
    pub read_bs: Vec<String>,
    pub write_table: TableSpec,
    #[serde(default)]
    pub write_title: Option<String>,
    /// Also reorganise the files after the reads and read them again (their own table).
    #[serde(default)]
    pub reorganise: bool,
    #[serde(default)]
    pub reorganised_title: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupFile {
    pub large: String,
    pub small: Vec<String>,
    #[serde(default = "pax_record")]
    pub record: usize,
    pub caches: Vec<String>,
}

/// The `sar -d` columns the backup study adds with `--iostat` (metric keys).
pub const BACKUP_DEVICE_METRICS: &[&str] = &[
    "dev_busy_pct",
    "dev_avque",
    "dev_rw_per_s",
    "dev_blks_per_s",
    "dev_avwait_ms",
    "dev_avserv_ms",
];

/// Largest backup record: a record is one buffer in memory and one write call.
pub(crate) const MAX_RECORD: usize = 64 << 20;

fn pax_record() -> usize {
    crate::backup::ustar::PAX_RECORD
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyFile {
    pub id: String,
    pub title: String,
    /// `sweep` (default), `aged`, `backup` or `personalities`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Fixed settings `NAME=VALUE`, the same names as axes.
    #[serde(default)]
    pub settings: Vec<String>,
    /// Names of settings multiplied by the scale (`size`, `time`, `count`, `var.NAME`).
    #[serde(default)]
    pub scaled: Vec<String>,
    #[serde(default, rename = "axis")]
    pub axes: Vec<AxisFile>,
    #[serde(default)]
    pub table: TableSpec,
    #[serde(default)]
    pub chart: ChartSpec,
    #[serde(default)]
    pub clamp_bs_to_size: bool,
    #[serde(default)]
    pub aged: Option<AgedFile>,
    #[serde(default)]
    pub backup: Option<BackupFile>,
    #[serde(default, rename = "personality")]
    pub personalities: Vec<PersonalityFile>,
    /// Run time of each personality (scaled).
    #[serde(default)]
    pub time: Option<String>,
    /// Names of personality variables multiplied by the scale.
    #[serde(default)]
    pub scaled_vars: Vec<String>,
}

pub(crate) fn parse(text: &str, origin: &str) -> Result<SuiteFile, UsageError> {
    crate::error::parse_toml(text, origin)
}

/// Find an embedded suite by name, or a suite file by path.
pub fn find(name: &str) -> Result<SuiteFile, UsageError> {
    if let Some((n, text)) = EMBEDDED.iter().find(|(n, _)| *n == name) {
        return parse(text, &format!("suites/{n}.toml"));
    }
    if name.ends_with(".toml") {
        let text = std::fs::read_to_string(name)
            .map_err(|e| usage!("cannot read suite file {name}: {e}"))?;
        return parse(&text, name);
    }
    let names: Vec<&str> = EMBEDDED.iter().map(|(n, _)| *n).collect();
    Err(usage!(
        "unknown suite '{name}': expected one of {} or a path to a suite .toml file",
        names.join(", ")
    ))
}

fn split_setting(s: &str, origin: &str) -> Result<(String, String), UsageError> {
    let (n, v) = s
        .split_once('=')
        .ok_or_else(|| usage!("{origin}: bad setting '{s}': expected NAME=VALUE"))?;
    Ok((axis::canonical(n.trim())?, v.trim().to_string()))
}

/// Scale one value of axis/setting `name` by `s` (sizes stay multiples of 4 KiB, times at
/// least 0.2 s, counts at least 1).
pub(crate) fn scale_value(name: &str, v: &str, s: f64) -> Result<String, UsageError> {
    if (s - 1.0).abs() < 1e-12 {
        return Ok(v.to_string());
    }
    if name == "time" {
        let t = parse_duration(v)?.as_secs_f64() * s;
        return Ok(format!("{:.3}s", t.max(0.2)));
    }
    let has_suffix = v.trim().ends_with(|c: char| c.is_ascii_alphabetic());
    if name == "size" || name == "bs" || (name.starts_with("var.") && has_suffix) {
        let b = parse_size_as(v, BareUnit::Bytes, name)?;
        let scaled = (b as f64 * s) as u64;
        let scaled = if b < 4096 {
            b
        } else {
            (scaled / 4096).max(1) * 4096
        };
        return Ok(format_size_exact(scaled));
    }
    let n = parse_size_as(v, BareUnit::Count, name)?;
    Ok(((n as f64 * s).round() as u64).max(1).to_string())
}

fn size_or_count(name: &str, v: &str) -> Result<f64, UsageError> {
    let bare = if axis::is_size_axis(name) {
        BareUnit::Bytes
    } else {
        BareUnit::Count
    };
    Ok(parse_size_as(v, bare, name)? as f64)
}

/// A suite resolved at a scale: studies ready to run.
pub struct Resolved {
    pub file: SuiteFile,
    pub scale: f64,
    pub studies: Vec<ResolvedStudy>,
}

#[allow(clippy::large_enum_variant)]
pub enum ResolvedStudy {
    Sweep(Study),
    Aged {
        reads: Study,
        writes: Study,
        plan: AgedPlan,
    },
    Backup {
        study: Study,
        plan: BackupPlan,
        caches: Vec<crate::job::CachePolicy>,
    },
    Personalities {
        study: Study,
        list: Vec<(String, String, std::collections::BTreeMap<String, String>)>,
        time_s: f64,
    },
}

impl ResolvedStudy {
    pub fn study(&self) -> &Study {
        match self {
            ResolvedStudy::Sweep(s) => s,
            ResolvedStudy::Aged { reads, .. } => reads,
            ResolvedStudy::Backup { study, .. } | ResolvedStudy::Personalities { study, .. } => {
                study
            }
        }
    }
    /// Points per target (for the progress line).
    pub fn point_count(&self, repeat: u32) -> usize {
        match self {
            ResolvedStudy::Sweep(s) => s.points().len() * repeat as usize,
            ResolvedStudy::Aged { plan, .. } => (1..=plan.max_files as usize)
                .map(|w| plan.group_len(w))
                .sum(),
            ResolvedStudy::Backup { caches, .. } => 2 * caches.len(),
            ResolvedStudy::Personalities { list, .. } => list.len(),
        }
    }
}

/// Resolve a suite at `scale` (default: the suite's own).
pub fn resolve(file: SuiteFile, scale: Option<f64>) -> Result<Resolved, UsageError> {
    let scale = scale.unwrap_or(file.default_scale);
    if !(scale > 0.0 && scale <= 16.0) {
        return Err(usage!(
            "bad --scale {scale}: must be more than 0 and at most 16"
        ));
    }
    let mut studies = Vec::new();
    for sf in &file.studies {
        let origin = format!("suite {} study {}", file.name, sf.id);
        let study = Study {
            suite: file.name.clone(),
            id: sf.id.clone(),
            title: sf.title.clone(),
            settings: resolve_settings(sf, scale, &origin)?,
            axes: resolve_axes(sf, scale, &origin)?,
            table: sf.table.clone(),
            chart: sf.chart.clone(),
            clamp_bs_to_size: sf.clamp_bs_to_size,
            workload: None,
        };
        study.check_point_count()?;
        let kind = sf.kind.as_deref().unwrap_or("sweep");
        let r = match kind {
            "sweep" => {
                // Check every point builds now, before anything runs.
                for p in study.points() {
                    study.build(&p, Path::new("/nonexistent/fsbench-check"))?;
                }
                ResolvedStudy::Sweep(study)
            }
            "aged" => resolve_aged(sf, study, scale, &origin)?,
            "backup" => resolve_backup(sf, study, scale, &origin)?,
            "personalities" => resolve_personalities(sf, study, scale, &origin)?,
            other => {
                return Err(usage!(
                "{origin}: unknown kind '{other}': expected sweep, aged, backup or personalities"
            ))
            }
        };
        studies.push(r);
    }
    Ok(Resolved {
        file,
        scale,
        studies,
    })
}

/// A study's fixed settings, the listed ones scaled.
fn resolve_settings(
    sf: &StudyFile,
    scale: f64,
    origin: &str,
) -> Result<Vec<(String, String)>, UsageError> {
    let mut settings = Vec::new();
    for s in &sf.settings {
        let (n, v) = split_setting(s, origin)?;
        let v = if sf
            .scaled
            .iter()
            .any(|x| axis::canonical(x).ok().as_deref() == Some(n.as_str()))
        {
            scale_value(&n, &v, scale)?
        } else {
            v
        };
        settings.push((n, v));
    }
    Ok(settings)
}

/// A study's axes, their values scaled (multiply) or cut (cap) as each asks.
fn resolve_axes(sf: &StudyFile, scale: f64, origin: &str) -> Result<Vec<Axis>, UsageError> {
    let mut axes = Vec::new();
    for a in &sf.axes {
        let name = axis::canonical(&a.name)?;
        // The cap of a command-line axis; duplicates are not refused here, since scaling a
        // suite down can make two values equal.
        if a.values.len() > axis::MAX_AXIS_VALUES {
            return Err(usage!(
                "{origin}: axis {name}: {} values is more than the {} an axis may have",
                a.values.len(),
                axis::MAX_AXIS_VALUES
            ));
        }
        let values = match a.scale.as_deref() {
            None | Some("none") => a.values.clone(),
            Some("multiply") => a
                .values
                .iter()
                .map(|v| scale_value(&name, v, scale))
                .collect::<Result<Vec<_>, _>>()?,
            Some("cap") => {
                let nums: Vec<f64> = a
                    .values
                    .iter()
                    .map(|v| size_or_count(&name, v))
                    .collect::<Result<_, _>>()?;
                let max = nums.iter().cloned().fold(0.0, f64::max) * scale;
                let kept: Vec<String> = a
                    .values
                    .iter()
                    .zip(&nums)
                    .enumerate()
                    .filter(|(i, (_, n))| *i == 0 || **n <= max)
                    .map(|(_, (v, _))| v.clone())
                    .collect();
                kept
            }
            Some(other) => {
                return Err(usage!(
                    "{origin}: axis {name}: unknown scale '{other}': expected multiply, cap or none"
                ))
            }
        };
        axes.push(Axis { name, values });
    }
    Ok(axes)
}

/// An aged-file-system study: the read study, the write study beside it, and its plan.
fn resolve_aged(
    sf: &StudyFile,
    study: Study,
    scale: f64,
    origin: &str,
) -> Result<ResolvedStudy, UsageError> {
    let a = sf
        .aged
        .as_ref()
        .ok_or_else(|| usage!("{origin}: kind aged needs an [study.aged] table"))?;
    // Group w writes w files then reads 1..w of them at every read size.
    let per = a.read_bs.len().max(1) as u64;
    let n = u64::from(a.max_files);
    let reads = if a.reorganise { 2 } else { 1 };
    let points = n.saturating_mul(n.saturating_add(1)) / 2 * per * reads + n;
    if a.max_files == 0 || points > super::MAX_POINTS as u64 {
        return Err(usage!(
            "{origin}: max_files {} makes {points} points: must be 1 or more, with at most {} points",
            a.max_files,
            super::MAX_POINTS
        ));
    }
    let mut writes = study.clone();
    writes.id = format!("{}-write", sf.id);
    writes.title = a
        .write_title
        .clone()
        .unwrap_or_else(|| format!("{}: files written at once", sf.title));
    writes.table = a.write_table.clone();
    let reorganised = a.reorganise.then(|| {
        let mut r = study.clone();
        r.id = format!("{}-reorganised", sf.id);
        r.title = a
            .reorganised_title
            .clone()
            .unwrap_or_else(|| format!("{}: after online reorganisation", sf.title));
        r
    });
    Ok(ResolvedStudy::Aged {
        reads: study,
        writes,
        plan: AgedPlan {
            max_files: a.max_files,
            size: scale_value("size", &a.size, scale)?,
            write_bs: a.write_bs.clone(),
            read_bs: a.read_bs.clone(),
            reorganised,
        },
    })
}

/// The backup study: its tree sizes scaled, its record size checked.
fn resolve_backup(
    sf: &StudyFile,
    study: Study,
    scale: f64,
    origin: &str,
) -> Result<ResolvedStudy, UsageError> {
    let b = sf
        .backup
        .as_ref()
        .ok_or_else(|| usage!("{origin}: kind backup needs a [study.backup] table"))?;
    let sz = |v: &str| -> Result<u64, UsageError> {
        let n = parse_size_as(v, BareUnit::Bytes, "backup file size")?;
        Ok(((n as f64 * scale) as u64).max(1))
    };
    if b.record == 0
        || !b.record.is_multiple_of(crate::backup::ustar::BLOCK)
        || b.record > MAX_RECORD
    {
        return Err(usage!(
            "{origin}: record {} must be a multiple of 512 from 512 to {MAX_RECORD}",
            b.record
        ));
    }
    Ok(ResolvedStudy::Backup {
        study,
        plan: BackupPlan {
            large: sz(&b.large)?,
            small: b.small.iter().map(|s| sz(s)).collect::<Result<_, _>>()?,
            record: b.record,
        },
        caches: b
            .caches
            .iter()
            .map(|c| crate::job::CachePolicy::parse(c))
            .collect::<Result<_, _>>()?,
    })
}

/// A list of Filebench personalities with their variables (the listed ones scaled).
fn resolve_personalities(
    sf: &StudyFile,
    study: Study,
    scale: f64,
    origin: &str,
) -> Result<ResolvedStudy, UsageError> {
    let mut list = Vec::new();
    for p in &sf.personalities {
        let mut vars = std::collections::BTreeMap::new();
        for v in &p.vars {
            let (n, val) = v
                .split_once('=')
                .ok_or_else(|| usage!("{origin}: bad variable '{v}': expected NAME=VALUE"))?;
            let val = if sf.scaled_vars.iter().any(|s| s == n) {
                scale_value(&format!("var.{n}"), val, scale)?
            } else {
                val.to_string()
            };
            // A variable the personality never names would change nothing, silently.
            if let Some((shipped, _)) = crate::workload::personalities::find(&p.name) {
                if !crate::workload::personalities::names_variable(shipped.text, n) {
                    return Err(usage!(
                        "{origin}: personality {} never uses ${n}, so '{v}' would change nothing: name one of the variables it sets (fsbench workload show {})",
                        p.name,
                        p.name
                    ));
                }
            }
            vars.insert(n.to_string(), val);
        }
        list.push((
            p.name.clone(),
            p.label.clone().unwrap_or_else(|| p.name.clone()),
            vars,
        ));
    }
    let t = sf.time.as_deref().unwrap_or("10s");
    Ok(ResolvedStudy::Personalities {
        study,
        list,
        time_s: parse_duration(&scale_value("time", t, scale)?)?.as_secs_f64(),
    })
}

/// Options of one suite run.
pub struct RunOptions {
    pub dirs: Vec<PathBuf>,
    pub out_dir: PathBuf,
    pub repeat: u32,
    pub fresh: bool,
    pub keep: bool,
    /// Replace files fsbench did not write and points stored with other settings.
    pub force: bool,
    pub only: Vec<String>,
    /// `--iostat INTERVAL` for every measured point.
    pub iostat: Option<std::time::Duration>,
    /// Printed on stderr once the results directory is open (so a refusal stays one line).
    pub announce: Option<String>,
    /// Target labels in results and reports, one per dir (default: the dir's path).
    pub labels: Vec<String>,
    /// Added to every point index, so several runs into one results directory (one per file
    /// system `fscompare` builds) do not share file names.
    pub index_base: usize,
    /// Where each point runs (on every MPI rank under mpirun).
    pub exec: crate::exec::Executor,
    /// `--progress` (the point counter line) and `--status-interval` (every point's).
    pub watch: crate::runner::live::Watching,
}

/// What a suite run produced.
pub struct SuiteOutcome {
    /// The results directory, still locked, for the reports and the manifest.
    pub results: crate::output::ResultsDir,
    pub records: Vec<Record>,
    pub tally: super::Tally,
    pub interrupted: bool,
    pub missing_personalities: Vec<String>,
}

/// The studies `--study` selects, after checking the targets, the point count of each and,
/// for a backup study, the free space (refused before the banner).
fn selected_studies<'a>(
    res: &'a Resolved,
    opts: &RunOptions,
) -> anyhow::Result<Vec<&'a ResolvedStudy>> {
    for d in &opts.dirs {
        if !d.is_dir() {
            crate::bail_usage!(
                "{} is not a directory: suites run in directories you name with --dir",
                d.display()
            );
        }
    }
    let studies: Vec<&ResolvedStudy> = res
        .studies
        .iter()
        .filter(|s| opts.only.is_empty() || opts.only.iter().any(|o| s.study().id == *o))
        .collect();
    if studies.is_empty() {
        let ids: Vec<&str> = res.studies.iter().map(|s| s.study().id.as_str()).collect();
        crate::bail_usage!(
            "--study matches no study of {}: expected {}",
            res.file.name,
            ids.join(", ")
        );
    }
    for rs in &studies {
        if let ResolvedStudy::Sweep(st) = rs {
            let n = st.points().len();
            if n.saturating_mul(opts.repeat as usize) > super::MAX_POINTS {
                crate::bail_usage!(
                    "bad --repeat {}: study {} has {n} points, and {} runs of them is more than the {} allowed",
                    opts.repeat,
                    st.id,
                    n.saturating_mul(opts.repeat as usize),
                    super::MAX_POINTS
                );
            }
        }
    }
    // A backup study writes its tree, archive and restored copy (one each per rank on
    // ranks, which may share the file system): refuse before the banner.
    let trees = u64::from(opts.exec.ranks().unwrap_or(1));
    for rs in &studies {
        if let ResolvedStudy::Backup { plan, .. } = rs {
            for d in &opts.dirs {
                let need = crate::backup::space_needed(plan).saturating_mul(trees);
                crate::guard::ensure_free_space(d, need, "the backup study")?;
            }
        }
    }
    Ok(studies)
}

/// Where each (study, target) starts numbering its points: a fixed index whatever `--study`
/// selects, so result file names, and with them resuming, do not depend on the selection.
fn study_offsets(res: &Resolved, opts: &RunOptions) -> Vec<(String, usize)> {
    let mut offsets = Vec::new();
    let mut next = 0;
    for rs in &res.studies {
        for _ in &opts.dirs {
            offsets.push((rs.study().id.clone(), next));
            next += rs.point_count(1);
        }
    }
    offsets
}

/// Run one study on one target directory.
fn run_study_on(
    rs: &ResolvedStudy,
    dir: &Path,
    label: &str,
    ctx: &mut Ctx,
    missing: &mut Vec<String>,
) -> anyhow::Result<Vec<Record>> {
    let target = Some(label);
    let base = dir.join(format!("fsbench-{}.dat", rs.study().id));
    match rs {
        ResolvedStudy::Sweep(s) => super::run_study(s, &base, target, ctx),
        ResolvedStudy::Aged {
            reads,
            writes,
            plan,
        } => super::aged::run(plan, reads, writes, &base, target, ctx),
        ResolvedStudy::Backup {
            study,
            plan,
            caches,
        } => run_backup(study, plan, caches, dir, target, ctx),
        ResolvedStudy::Personalities {
            study,
            list,
            time_s,
        } => run_personalities(study, list, *time_s, dir, target, ctx, missing),
    }
}

/// Run every study of a resolved suite on every target directory.
pub fn run(res: &Resolved, opts: &RunOptions) -> anyhow::Result<SuiteOutcome> {
    run_with_hooks(res, opts, None)
}

/// [`run`] with a front end's [`super::Hooks`] around every point (see `fscompare`).
pub fn run_with_hooks(
    res: &Resolved,
    opts: &RunOptions,
    hooks: Option<super::Hooks>,
) -> anyhow::Result<SuiteOutcome> {
    let studies = selected_studies(res, opts)?;
    if opts.exec.ranks().is_some() {
        if opts.iostat.is_some() {
            if let Some(rs) = studies
                .iter()
                .find(|rs| matches!(rs, ResolvedStudy::Backup { .. }))
            {
                crate::bail_usage!(
                    "suite study '{}' (backup) samples devices with --iostat on one host only: run it without mpirun, or without --iostat, or choose the others with --study",
                    rs.study().id
                );
            }
        }
        // The aged study writes several files at once on each client, the backup study a tree
        // on each: files of their own each.
        if opts.exec.shared_file() {
            if let Some(rs) = studies
                .iter()
                .find(|rs| matches!(rs, ResolvedStudy::Backup { .. }))
            {
                crate::bail_usage!(
                    "suite study '{}' (backup) builds, archives and restores a tree of its own on each rank: run it with --file-per-rank (the default), not --shared-file, or choose the others with --study",
                    rs.study().id
                );
            }
            if let Some(rs) = studies
                .iter()
                .find(|rs| matches!(rs, ResolvedStudy::Aged { .. }))
            {
                crate::bail_usage!(
                    "suite study '{}' ages the file system by writing several files at once on each rank: run it with --file-per-rank (the default), not --shared-file, or choose the others with --study",
                    rs.study().id
                );
            }
        }
    }
    let total: usize = studies
        .iter()
        .map(|s| s.point_count(opts.repeat))
        .sum::<usize>()
        * opts.dirs.len();
    let mut ctx = Ctx::new(
        opts.out_dir.clone(),
        opts.repeat,
        opts.fresh,
        opts.keep,
        opts.force,
        total,
    )?;
    ctx.iostat = opts.iostat;
    ctx.watched(opts.watch.clone());
    ctx.banner = opts.announce.clone();
    ctx.hooks = hooks;
    ctx.exec = opts.exec.clone();
    crate::runner::signal::install();
    let offsets = study_offsets(res, opts);
    let mut records = Vec::new();
    let mut missing = Vec::new();
    'studies: for rs in studies {
        let mut starts = offsets
            .iter()
            .filter(|(id, _)| *id == rs.study().id)
            .map(|(_, o)| *o);
        for (k, dir) in opts.dirs.iter().enumerate() {
            ctx.next_index = starts
                .next()
                .map(|o| o + opts.index_base)
                .unwrap_or(ctx.next_index);
            if ctx.interrupted || crate::runner::signal::interrupted() {
                ctx.interrupted = true;
                break 'studies;
            }
            let label = opts
                .labels
                .get(k)
                .cloned()
                .unwrap_or_else(|| dir.display().to_string());
            let recs = run_study_on(rs, dir, &label, &mut ctx, &mut missing);
            match recs {
                Ok(r) => records.extend(r),
                Err(e) => {
                    ctx.cleanup();
                    ctx.results.abandon();
                    return Err(e);
                }
            }
            // Files of one study are not needed by the next.
            ctx.cleanup();
        }
    }
    ctx.progress.clear();
    ctx.announce();
    missing.sort();
    missing.dedup();
    Ok(SuiteOutcome {
        results: ctx.results,
        records,
        tally: ctx.tally,
        interrupted: ctx.interrupted,
        missing_personalities: missing,
    })
}

fn run_backup(
    study: &Study,
    plan: &BackupPlan,
    caches: &[crate::job::CachePolicy],
    dir: &Path,
    target: Option<&str>,
    ctx: &mut Ctx,
) -> anyhow::Result<Vec<Record>> {
    let first = ctx.next_index;
    ctx.next_index += caches.len() * 2;
    let point = |c: &crate::job::CachePolicy, phase: &str| -> Point {
        let k =
            caches.iter().position(|x| x == c).unwrap_or(0) * 2 + usize::from(phase == "restore");
        Point {
            index: first + k,
            values: vec![("cache".into(), c.name()), ("phase".into(), phase.into())],
        }
    };
    let mut size_settings = study.clone();
    if ctx.iostat.is_some() {
        // `--iostat`: the article's other half, `sar -d` of the device under the tree.
        size_settings
            .table
            .metrics
            .extend(BACKUP_DEVICE_METRICS.iter().map(|m| m.to_string()));
    }
    size_settings.settings = vec![
        ("size".into(), plan.large.to_string()),
        ("bs".into(), plan.record.to_string()),
    ];
    size_settings.settings.extend(
        plan.small
            .iter()
            .map(|s| ("var.small".to_string(), s.to_string())),
    );
    let metas: Vec<(PathBuf, super::SweepMeta)> = caches
        .iter()
        .flat_map(|c| ["archive", "restore"].map(|ph| (*c, ph)))
        .map(|(c, ph)| {
            let p = point(&c, ph);
            let m = size_settings.meta(&p, p.index, 0, target);
            (
                ctx.out_dir
                    .join(super::record_file_name(&study.id, p.index, &p.values, 0)),
                m,
            )
        })
        .collect();
    let stored: Vec<Option<Record>> = metas.iter().map(|(f, m)| ctx.reusable(f, m)).collect();
    if stored.iter().all(|s| s.is_some()) {
        ctx.tally.reused += stored.len();
        for _ in 0..stored.len() {
            ctx.progress.finish_point();
        }
        return Ok(stored.into_iter().flatten().collect());
    }
    // Points stored with other settings are refused before the tree is built.
    for (f, m) in &metas {
        ctx.check_replace(f, m)?;
    }
    let mut out = Vec::new();
    let results = &ctx.results;
    ctx.progress
        .start_point(&format!("{} (building the tree)", study.id));
    let mut pending: Vec<(PathBuf, Record)> = Vec::new();
    let observe = crate::observe::Observe::iostat(ctx.iostat);
    ctx.exec
        .run_backup(dir, plan, caches, &observe, &mut |c, ph, result| {
            let p = point(&c, ph);
            let rec = Record::run(size_settings.meta(&p, p.index, 0, target), result);
            let m = rec.meta();
            let name = super::record_file_name(&study.id, m.index, &m.point, 0);
            results.write(&name, rec.to_json()?.as_bytes())?;
            let f = results.join(&name);
            pending.push((f, rec));
            Ok(())
        })?;
    if crate::runner::signal::interrupted() {
        ctx.interrupted = true;
    }
    for (_, rec) in pending {
        ctx.progress.finish_point();
        // Counted as `Ctx::store` counts: a failed phase is a failed point.
        match rec.result() {
            Some(r) if r.status == crate::runner::RunStatus::Failed => ctx.tally.failed += 1,
            _ => ctx.tally.ran += 1,
        }
        out.push(rec);
    }
    Ok(out)
}

fn run_personalities(
    study: &Study,
    list: &[(String, String, std::collections::BTreeMap<String, String>)],
    time_s: f64,
    dir: &Path,
    target: Option<&str>,
    ctx: &mut Ctx,
    missing: &mut Vec<String>,
) -> anyhow::Result<Vec<Record>> {
    let mut out = Vec::new();
    for (name, label, vars) in list {
        if ctx.interrupted || crate::runner::signal::interrupted() {
            ctx.interrupted = true;
            break;
        }
        let index = ctx.next_index;
        ctx.next_index += 1;
        let mut s = study.clone();
        s.settings = vars
            .iter()
            .map(|(k, v)| (format!("var.{k}"), v.clone()))
            .collect();
        s.settings.push(("time".into(), format!("{time_s}s")));
        let p = Point {
            index,
            values: vec![("personality".into(), label.clone())],
        };
        let meta = s.meta(&p, index, 0, target);
        let file = ctx
            .out_dir
            .join(super::record_file_name(&s.id, index, &p.values, 0));
        ctx.progress.start_point(&format!("{} {label}", s.id));
        if let Some(r) = ctx.reusable(&file, &meta) {
            ctx.tally.reused += 1;
            ctx.progress.finish_point();
            out.push(r);
            continue;
        }
        ctx.check_replace(&file, &meta)?;
        ctx.before_point()?;
        let rec =
            match super::workloads::run_personality(name, dir, vars, time_s, &ctx.exec, &ctx.watch)
            {
                Ok(r) => Record::run(meta, r),
                Err(super::workloads::PersonalityError::Missing(why)) => {
                    missing.push(format!("{name} ({label})"));
                    Record::skip(meta, why)
                }
                Err(super::workloads::PersonalityError::Failed(e)) => {
                    Record::skip(meta, format!("error: {e:#}"))
                }
            };
        ctx.store(&file, &rec)?;
        ctx.progress.finish_point();
        out.push(rec);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_suite_resolves_at_several_scales() {
        for (name, _) in EMBEDDED {
            for scale in [None, Some(0.01), Some(1.0)] {
                let f = find(name).unwrap();
                let r = resolve(f, scale).unwrap_or_else(|e| panic!("{name} {scale:?}: {e}"));
                assert!(!r.studies.is_empty());
                for s in &r.studies {
                    assert!(s.point_count(1) > 0, "{name}/{}", s.study().id);
                }
            }
        }
    }

    proptest::proptest! {
        // Any text, however broken, is a usage error or a suite: never a panic.
        #[test]
        fn suite_parsing_never_panics(text in "[a-z_=\\[\\]\"0-9., \n{}]{0,200}", scale in 0.0f64..20.0) {
            if let Ok(f) = parse(&text, "x.toml") {
                let _ = resolve(f, Some(scale));
            }
        }

        // Scaling any size, time or count never panics and keeps values positive.
        #[test]
        fn scaling_never_panics(v in "[1-9][0-9]{0,11}[kmg]?", s in 0.0001f64..16.0) {
            for name in ["size", "bs", "count", "var.nfiles", "time"] {
                if let Ok(x) = scale_value(name, &v, s) {
                    proptest::prop_assert!(!x.starts_with('0') || x.starts_with("0.") );
                }
            }
        }
    }

    fn suite_with(study: &str) -> String {
        format!("name='x'\ntitle='t'\nsource='s'\n[[study]]\nid='a'\ntitle='b'\n{study}")
    }

    #[test]
    fn absurd_suite_values_are_one_line_refusals() {
        let cases = [
            (
                "kind='aged'\ntable={}\n[study.aged]\nmax_files=4000000000\nsize='1m'\nwrite_bs='64k'\nread_bs=['4k']\nwrite_table={}\n",
                "max_files",
            ),
            (
                "kind='aged'\ntable={}\n[study.aged]\nmax_files=0\nsize='1m'\nwrite_bs='64k'\nread_bs=['4k']\nwrite_table={}\n",
                "max_files",
            ),
            (
                "kind='backup'\n[study.backup]\nlarge='1m'\nsmall=[]\nrecord=1099511627776\ncaches=['buffered']\n",
                "record",
            ),
            (
                "settings=['rw=read','size=1m']\n[[study.axis]]\nname='count'\nvalues=['1','2','3','4','5','6','7','8','9','10']\n[[study.axis]]\nname='nrep'\nvalues=['1','2','3','4','5','6','7','8','9','10']\n[[study.axis]]\nname='seed'\nvalues=['1','2','3','4','5','6','7','8','9','10']\n[[study.axis]]\nname='threads'\nvalues=['1','2','3','4','5','6','7','8','9','10']\n[[study.axis]]\nname='bs'\nvalues=['4k','8k','12k','16k','20k','24k','28k','32k','36k','40k']\n[[study.axis]]\nname='time'\nvalues=['1s','2s','3s','4s','5s','6s','7s','8s','9s','10s']\n",
                "points",
            ),
            (
                &format!(
                    "settings=['rw=read','size=1m']\n[[study.axis]]\nname='count'\nvalues=[{}]\n",
                    (1..=1001).map(|i| format!("'{i}'")).collect::<Vec<_>>().join(",")
                ),
                "1001 values is more than the 1000",
            ),
        ];
        for (study, want) in cases {
            let f = parse(&suite_with(study), "x.toml").unwrap();
            let e = resolve(f, Some(1.0)).err().expect("refused");
            assert!(e.0.contains(want), "{}", e.0);
            assert!(!e.0.contains('\n'), "{}", e.0);
        }
    }

    /// A variable a personality never names would change nothing: refused in one line.
    #[test]
    fn a_variable_the_personality_never_uses_is_refused() {
        let f = parse(
            &suite_with(
                "kind='personalities'\npersonality=[{name='fileserver', vars=['meaniosize=16k']}]\n",
            ),
            "x.toml",
        )
        .unwrap();
        let e = resolve(f, Some(1.0)).err().expect("refused");
        assert!(e.0.contains("never uses $meaniosize"), "{}", e.0);
        assert!(!e.0.contains('\n'), "{}", e.0);
    }

    #[test]
    fn scaling_rules() {
        assert_eq!(scale_value("size", "256m", 0.25).unwrap(), "64m");
        assert_eq!(scale_value("size", "1k", 0.01).unwrap(), "1k");
        assert_eq!(scale_value("size", "64k", 0.01).unwrap(), "4k");
        assert_eq!(scale_value("time", "10s", 0.01).unwrap(), "0.200s");
        assert_eq!(scale_value("count", "100", 0.5).unwrap(), "50");
        assert_eq!(scale_value("var.nfiles", "100000", 0.001).unwrap(), "100");
        assert_eq!(scale_value("var.filesize", "5g", 0.001).unwrap(), "5240k");
        assert!(find("nope").unwrap_err().0.contains("whitepaper"));
        let bad = "name='x'\ntitle='t'\nsource='s'\n[[study]]\nid='a'\ntitle='b'\nkind='sweep'\nsettings=['bogus=1']\n";
        assert!(resolve(parse(bad, "x").unwrap(), None).is_err());
    }
}
