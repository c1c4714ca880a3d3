//! `fsbench fscompare`: the shootout in its real form. For every file-system spec and layout,
//! fsbench builds the file system on scratch storage (loop devices over sparse files it
//! creates, or devices the user gives with `--force`), runs the same suite, sweep, workload
//! or job on it through the ordinary sweep and suite code (every point a normal Result whose
//! target is the file system's label), remounts and drops caches between points, stores
//! `advise`'s derived tunables beside the results, and tears everything down. Reports and
//! `compare` read the output directory like any other; `--baseline` normalises the charts.

pub(crate) mod build;
pub(crate) mod options;
pub(crate) mod scratch;
pub(crate) mod spec;

use crate::job::Job;
use crate::sweep::record::Record;
use crate::sweep::suite::{self, Resolved, RunOptions};
use crate::sweep::{self as sw, Ctx, Hooks, Point, Study};
use build::Built;
use scratch::{Item, Scratch};
use spec::{FsSpec, Layout};
use std::path::{Path, PathBuf};

/// What runs on each built target.
pub(crate) enum What {
    Suite {
        res: Box<Resolved>,
        only: Vec<String>,
    },
    /// A sweep, or one workload (a sweep of one point); `file`: the target file name inside
    /// the mount for Job sweeps, None when the mount itself is the target (workloads).
    Study {
        study: Box<Study>,
        file: Option<String>,
    },
    Job(Box<Job>),
}

/// Where the scratch devices come from.
pub(crate) enum Storage {
    /// Loop devices over sparse files of this size in the scratch directory.
    Loops { size: u64 },
    /// The user's devices (`--device ... --force`), checked before every use, wiped after.
    Devices(Vec<PathBuf>),
}

/// One fscompare run, checked.
pub(crate) struct Plan {
    pub specs: Vec<FsSpec>,
    pub layouts: Vec<Layout>,
    pub storage: Storage,
    pub scratch: PathBuf,
    pub what: What,
    pub out_dir: PathBuf,
    pub baseline: Option<String>,
    pub repeat: u32,
    pub fresh: bool,
    pub keep: bool,
    pub force: bool,
    pub iostat: Option<std::time::Duration>,
}

/// The label of a target in results and reports: the spec as written, and the layout when it
/// is not a single device (`ext4`, `xfs:-d su=64k,sw=2 on stripe:2x64k`).
pub(crate) fn label(spec: &FsSpec, layout: Layout) -> String {
    match layout {
        Layout::Single => spec.text.clone(),
        l => format!("{} on {}", spec.text, l.label()),
    }
}

impl Plan {
    /// Every (spec, layout) pair, file system outermost.
    pub(crate) fn targets(&self) -> Vec<(FsSpec, Layout, String)> {
        let mut out = Vec::new();
        for s in &self.specs {
            for l in &self.layouts {
                out.push((s.clone(), *l, label(s, *l)));
            }
        }
        out
    }

    /// Points of one target (its share of the index space in the results directory).
    fn per_target(&self) -> usize {
        match &self.what {
            What::Suite { res, .. } => res.studies.iter().map(|s| s.point_count(1)).sum(),
            What::Study { study, .. } => study.points().len(),
            What::Job(_) => 1,
        }
        .max(1)
    }
}

/// Refuse a device the safety rules do not allow writing to (signature, mounted, held);
/// Ok: its device number, from the descriptor that was checked.
pub(crate) fn check_device(dev: &Path) -> anyhow::Result<u64> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dev)
        .map_err(|e| crate::usage!("cannot open --device {}: {e}", dev.display()))?;
    if let Some(why) = crate::safety::block_device_hazard_fd(&f) {
        crate::bail_usage!(
            "refusing --device {}: {why} (fscompare writes only to unused devices without a signature)",
            dev.display()
        );
    }
    Ok(std::os::unix::fs::MetadataExt::rdev(&f.metadata()?))
}

/// The summary of a finished target, for the manifest.
#[derive(serde::Serialize)]
struct TargetSummary {
    target: String,
    fs: String,
    layout: String,
    built: bool,
    reason: Option<String>,
    commands: Vec<String>,
    advise: Option<String>,
}

/// Run the plan: build, measure and tear down every target in turn.
pub(crate) fn run(plan: Plan) -> anyhow::Result<Outcome> {
    crate::runner::signal::install();
    // The results directory is checked (and made) before any device is.
    drop(crate::output::ResultsDir::open(&plan.out_dir, plan.force)?);
    let (scratch, cleaned) = Scratch::open(&plan.scratch)?;
    // Shared with the remount between points, which records each new mount's ID.
    let scratch = std::rc::Rc::new(std::cell::RefCell::new(scratch));
    for l in cleaned {
        eprintln!("{l}");
    }
    let volumes = build::detect_volumes();
    let storage_kind = match &plan.storage {
        Storage::Loops { .. } => "loop devices over sparse files",
        Storage::Devices(_) => "devices given with --device",
    };
    eprintln!(
        "fsbench fscompare: {} target(s) on {storage_kind} in {}; results in {}",
        plan.specs.len() * plan.layouts.len(),
        scratch.borrow().dir.display(),
        plan.out_dir.display()
    );
    let per = plan.per_target();
    let mut records: Vec<Record> = Vec::new();
    let mut advice: Vec<crate::advise::Advice> = Vec::new();
    let mut summary: Vec<TargetSummary> = Vec::new();
    let mut failed_builds = 0usize;
    let mut tally = sw::Tally::default();
    let mut interrupted = false;
    for (k, (spec, layout, label)) in plan.targets().into_iter().enumerate() {
        if crate::runner::signal::interrupted() {
            interrupted = true;
            break;
        }
        let base = k * per;
        let mut sum = TargetSummary {
            target: label.clone(),
            fs: spec.fs.clone(),
            layout: layout.label(),
            built: false,
            reason: None,
            commands: Vec::new(),
            advise: None,
        };
        let devices_needed = layout.devices() as usize;
        let why_not =
            build::unbuildable(&spec.fs, layout, &volumes).or_else(|| match &plan.storage {
                Storage::Devices(d) if d.len() < devices_needed => Some(format!(
                    "{} needs {devices_needed} devices: --device gave {}",
                    layout.label(),
                    d.len()
                )),
                _ => None,
            });
        if let Some(why) = why_not {
            eprintln!("fscompare: {label}: SKIPPED: {why}");
            records.push(skip_target(&plan, &spec, layout, &label, base, &why)?);
            tally.skipped += 1;
            sum.reason = Some(why);
            summary.push(sum);
            continue;
        }
        eprintln!("fscompare: building {label}");
        let built = {
            let mut sc = scratch.borrow_mut();
            acquire(&mut sc, &plan.storage, devices_needed)
                .and_then(|devs| build::build(&mut sc, &spec, layout, &label, devs, &volumes))
        };
        let built = match built {
            Ok(b) => b,
            Err(e) => {
                let why = format!("error: {e:#}");
                eprintln!("fscompare: {label}: {why}");
                scratch.borrow_mut().teardown_loudly();
                records.push(skip_target(&plan, &spec, layout, &label, base, &why)?);
                failed_builds += 1;
                sum.reason = Some(why);
                summary.push(sum);
                continue;
            }
        };
        sum.built = true;
        sum.commands = built.commands.clone();
        for c in &built.commands {
            eprintln!("  {c}");
        }
        let adv = crate::advise::from_topology(crate::probe::topology::Topology::of_path(
            &built.mnt,
            &crate::probe::topology::SysfsProbe::default(),
        ));
        eprintln!("  advise: {}", tunables_line(&adv));
        let advise_name = format!("advise-{k:02}-{}.json", slug(&label));
        sum.advise = Some(advise_name.clone());
        let outcome = run_target(
            &plan,
            &built,
            &scratch,
            base,
            &adv,
            &advise_name,
            storage_kind,
        );
        let torn = scratch.borrow_mut().teardown_loudly();
        let outcome = outcome?;
        if !torn {
            anyhow::bail!(
                "the scratch storage of {label} could not all be torn down (see above); the next run in {} tries again",
                scratch.borrow().dir.display()
            );
        }
        records.extend(outcome.records);
        tally.ran += outcome.tally.ran;
        tally.reused += outcome.tally.reused;
        tally.skipped += outcome.tally.skipped;
        tally.failed += outcome.tally.failed;
        advice.push(adv);
        summary.push(sum);
        if outcome.interrupted {
            interrupted = true;
            break;
        }
    }
    drop(scratch);
    records.sort_by_key(|r| (r.meta().index, r.meta().repeat));
    let baseline = plan
        .baseline
        .clone()
        .or_else(|| summary.iter().find(|s| s.built).map(|s| s.target.clone()));
    let names: Vec<&str> = plan.specs.iter().map(|s| s.text.as_str()).collect();
    let mut preface = vec![format!(
        "Each file system was built by fsbench on {storage_kind}, mounted, and torn down afterwards; caches were dropped and the file system remounted before every point."
    )];
    if matches!(plan.storage, Storage::Loops { .. }) {
        preface.push("Loop devices over files on one disk compare the file systems' code paths, not storage hardware.".into());
    }
    for s in summary.iter().filter(|s| !s.built) {
        preface.push(format!(
            "{}: not measured: {}",
            s.target,
            s.reason.as_deref().unwrap_or("")
        ));
    }
    let manifest = serde_json::json!({
        "schema_version": crate::result::SCHEMA_VERSION,
        "kind": "fscompare",
        "baseline": baseline,
        "targets": summary,
        "measured": tally.ran,
        "reused": tally.reused,
        "skipped": tally.skipped,
        "failed": tally.failed,
        "failed_builds": failed_builds,
        "interrupted": interrupted,
    });
    Ok(Outcome {
        records,
        advice,
        title: format!("fsbench fscompare: {}", names.join(" vs ")),
        preface,
        baseline,
        manifest,
        tally,
        failed_builds,
        interrupted,
    })
}

/// What a run produced, for the front end to report (only front ends and the report layer
/// format).
pub(crate) struct Outcome {
    pub records: Vec<Record>,
    /// advise's document of every built target.
    pub advice: Vec<crate::advise::Advice>,
    pub title: String,
    /// Lines above the tables: how the targets were built, which were not and why.
    pub preface: Vec<String>,
    /// The target the charts are normalised to (`--baseline`, else the first built).
    pub baseline: Option<String>,
    /// fscompare.json: every target, its commands or why it was not built, the tallies.
    pub manifest: serde_json::Value,
    pub tally: sw::Tally,
    pub failed_builds: usize,
    pub interrupted: bool,
}

impl Outcome {
    /// 0, 1 when a point or a build failed, 130 on Ctrl-C.
    pub(crate) fn exit_code(&self) -> i32 {
        if self.interrupted {
            130
        } else if self.tally.failed > 0 || self.failed_builds > 0 {
            1
        } else {
            0
        }
    }
}

/// `read_pref_io=65536 read_nstream=1 ...`: what advise derived for the target.
fn tunables_line(a: &crate::advise::Advice) -> String {
    a.derived
        .values
        .iter()
        .map(|t| format!("{}={}", t.name, t.value))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A label as a file-name fragment.
fn slug(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    out.truncate(60);
    out
}

/// The scratch devices of one target: new loop devices, or the user's (checked again now).
fn acquire(scratch: &mut Scratch, storage: &Storage, n: usize) -> anyhow::Result<Vec<PathBuf>> {
    match storage {
        Storage::Loops { size } => scratch.loop_devices(n as u32, *size),
        Storage::Devices(all) => {
            let devs = all[..n].to_vec();
            for d in &devs {
                let rdev = check_device(d)?;
                scratch.make(Item::Wipe(d.clone(), rdev), || Ok(()))?;
            }
            Ok(devs)
        }
    }
}

/// The record saying why a target was not measured.
fn skip_target(
    plan: &Plan,
    spec: &FsSpec,
    layout: Layout,
    label: &str,
    index: usize,
    why: &str,
) -> anyhow::Result<Record> {
    let study = Study {
        id: "fscompare".into(),
        title: "Targets fscompare did not measure".into(),
        ..Default::default()
    };
    let p = Point {
        index,
        values: vec![
            ("fs".into(), spec.text.clone()),
            ("layout".into(), layout.label()),
        ],
    };
    let meta = study.meta(&p, index, 0, Some(label));
    let rec = Record::skip(meta, why);
    let mut ctx = Ctx::new(plan.out_dir.clone(), 1, false, true, plan.force, 1)?;
    let file = plan
        .out_dir
        .join(sw::record_file_name(&study.id, index, &p.values, 0));
    ctx.store(&file, &rec)?;
    Ok(rec)
}

/// What one target's run produced.
struct TargetOutcome {
    records: Vec<Record>,
    tally: sw::Tally,
    interrupted: bool,
}

/// Run the plan's suite, study or job on one built target, with the remount before every
/// point and the target's description in every Result; store advise's document beside them.
fn run_target(
    plan: &Plan,
    built: &Built,
    scratch: &std::rc::Rc<std::cell::RefCell<Scratch>>,
    base: usize,
    adv: &crate::advise::Advice,
    advise_name: &str,
    storage_kind: &str,
) -> anyhow::Result<TargetOutcome> {
    let hooks = || {
        let (mnt, argv) = (built.mnt.clone(), built.mount_argv.clone());
        let scratch = scratch.clone();
        Hooks {
            before_point: Box::new(move || build::remount(&scratch, &mnt, &argv)),
            probes: vec![("fscompare".into(), built.probe(storage_kind))],
            built: Some(built.probe(storage_kind)),
        }
    };
    let label = built.label.clone();
    match &plan.what {
        What::Suite { res, only } => {
            let outcome = suite::run_with_hooks(
                res,
                &RunOptions {
                    dirs: vec![built.mnt.clone()],
                    out_dir: plan.out_dir.clone(),
                    repeat: plan.repeat,
                    fresh: plan.fresh,
                    keep: plan.keep,
                    force: plan.force,
                    only: only.clone(),
                    iostat: plan.iostat,
                    announce: None,
                    labels: vec![label],
                    exec: Default::default(),
                    index_base: base,
                    watch: Default::default(),
                },
                Some(hooks()),
            )?;
            outcome.results.write_json(advise_name, adv)?;
            Ok(TargetOutcome {
                records: outcome.records,
                tally: outcome.tally,
                interrupted: outcome.interrupted,
            })
        }
        What::Study { study, file } => {
            let points = study.points().len();
            let mut ctx = study_ctx(plan, points)?;
            ctx.hooks = Some(hooks());
            ctx.next_index = base;
            let target = match file {
                Some(f) => built.mnt.join(f),
                None => built.mnt.clone(),
            };
            let res = sw::run_study(study, &target, Some(&label), &mut ctx);
            finish(ctx, res, adv, advise_name)
        }
        What::Job(job) => {
            let mut ctx = study_ctx(plan, 1)?;
            ctx.hooks = Some(hooks());
            let res = run_job(job, &built.mnt, &label, base, &mut ctx);
            finish(ctx, res, adv, advise_name)
        }
    }
}

fn study_ctx(plan: &Plan, points: usize) -> anyhow::Result<Ctx> {
    let mut ctx = Ctx::new(
        plan.out_dir.clone(),
        plan.repeat,
        plan.fresh,
        plan.keep,
        plan.force,
        points * plan.repeat.max(1) as usize,
    )?;
    ctx.iostat = plan.iostat;
    Ok(ctx)
}

fn finish(
    mut ctx: Ctx,
    res: anyhow::Result<Vec<Record>>,
    adv: &crate::advise::Advice,
    advise_name: &str,
) -> anyhow::Result<TargetOutcome> {
    let records = ctx.finish_study(res)?;
    ctx.results.write_json(advise_name, adv)?;
    Ok(TargetOutcome {
        records,
        tally: ctx.tally,
        interrupted: ctx.interrupted || crate::runner::signal::interrupted(),
    })
}

/// A job file as a one-point study: its targets become files of the same names in the mount.
fn run_job(
    job: &Job,
    mnt: &Path,
    label: &str,
    index: usize,
    ctx: &mut Ctx,
) -> anyhow::Result<Vec<Record>> {
    let mut pj = sw::PointJob {
        job: job.clone(),
        ..Default::default()
    };
    pj.job.targets = job
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| match t.file_name() {
            Some(n) => mnt.join(n),
            None => mnt.join(format!("fsbench-job.{i}")),
        })
        .collect();
    if pj.job.targets.is_empty() {
        pj.job.targets.push(mnt.join("fsbench-job.dat"));
    }
    pj.files = pj.job.targets.len() as u32;
    let id = if job.name.is_empty() {
        "job".to_string()
    } else {
        job.name.clone()
    };
    let study = Study {
        id: id.clone(),
        title: format!("job {id}"),
        ..Default::default()
    };
    let p = Point {
        index,
        values: Vec::new(),
    };
    let mut out = Vec::new();
    for r in 0..ctx.repeat {
        if crate::runner::signal::interrupted() {
            ctx.interrupted = true;
            break;
        }
        let meta = study.meta(&p, index, r, Some(label));
        let file = ctx
            .out_dir
            .join(sw::record_file_name(&study.id, index, &p.values, r));
        if let Some(rec) = ctx.reusable(&file, &meta) {
            ctx.tally.reused += 1;
            out.push(rec);
            continue;
        }
        let rec = sw::run_point(&pj, meta, ctx)?;
        ctx.store(&file, &rec)?;
        out.push(rec);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_spec_and_a_layout_other_than_single() {
        let s = &spec::parse_fs_arg("xfs:-d su=64k,sw=2").unwrap()[0];
        assert_eq!(label(s, Layout::Single), "xfs:-d su=64k,sw=2");
        assert_eq!(
            label(s, Layout::Stripe { n: 2, unit: 65536 }),
            "xfs:-d su=64k,sw=2 on stripe:2x64k"
        );
        assert_eq!(slug("xfs:-d su=64k"), "xfs__d_su_64k");
    }
}
