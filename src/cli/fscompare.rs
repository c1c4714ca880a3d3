//! `fsbench fscompare --fs ext4,xfs,btrfs [--layout ...] (--suite|--workload|--sweep|--job)`:
//! argument handling only; building, running and tearing down are in [`crate::fscompare`].

use crate::bail_usage;
use crate::fscompare::{self, build, spec, Plan, Storage, What};
use clap::{Args, Parser};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::format_help::<crate::report::document::Document>(a)),
    after_help = EXAMPLES
)]
pub(crate) struct FscompareArgs {
    /// File systems to build: FS[:MKFS OPTIONS][;MOUNT OPTIONS] (repeatable)
    ///
    /// Plain names may be comma-separated: ext4,xfs,btrfs.
    #[arg(long = "fs", required = true, value_name = "SPEC")]
    pub fs: Vec<String>,
    /// Volume layouts: single, stripe:NxUNIT, concat:N (comma-separated, repeatable;
    /// default single)
    #[arg(long = "layout")]
    pub layouts: Vec<String>,
    /// Size of each scratch loop device (sparse file)
    #[arg(long, default_value = "1g")]
    pub size: String,
    /// Directory for the scratch files, mount points and state file (default: OUTPUT/scratch)
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// Build on this device instead of loop devices (repeatable; needs --force)
    ///
    /// Only a device without a signature, not mounted and not held; it is wiped afterwards.
    #[arg(long = "device")]
    pub devices: Vec<PathBuf>,
    /// Run this suite on each file system (`fsbench suite list`)
    #[arg(long)]
    pub suite: Option<String>,
    /// Suite scale
    #[arg(long)]
    pub scale: Option<f64>,
    /// Only these studies of the suite (repeatable)
    #[arg(long = "study")]
    pub studies: Vec<String>,
    /// Run this Filebench personality on each file system
    #[arg(long)]
    pub workload: Option<String>,
    /// Workload variable NAME=VALUE (repeatable; comma lists become a sweep)
    #[arg(short = 'D', value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// Workload run time
    #[arg(long)]
    pub time: Option<String>,
    /// Run this sweep on each file system: `fsbench sweep`'s flags without its TARGET
    ///
    /// For example '--rw randwrite --bs 4k,64k --cache direct --size 64m'.
    #[arg(long, allow_hyphen_values = true)]
    pub sweep: Option<String>,
    /// Run this job file (TOML) on each file system; its targets become files in the mount
    #[arg(long)]
    pub job: Option<PathBuf>,
    /// Directory (not a file) for Results, advise documents and report.html
    ///
    /// The default: fsbench-fscompare.
    #[arg(long, value_name = "DIR", help_heading = super::args::WHERE)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
    /// Normalise the report's charts to this target (default: the first one built)
    #[arg(long)]
    pub baseline: Option<String>,
    #[command(flatten)]
    pub study: super::args::StudyArgs,
}

const EXAMPLES: &str = "\
Examples:
  fsbench fscompare --fs ext4,xfs,btrfs --sweep '--rw randwrite --bs 4k,64k --size 64m'
  fsbench fscompare --fs ext4,xfs --layout single,stripe:4x64k --suite SUITE --scale 0.1";

/// `--sweep '...'` parsed with `fsbench sweep`'s own flags (the target is fscompare's).
#[derive(Parser)]
#[command(name = "fsbench fscompare --sweep", no_binary_name = true)]
struct SweepLine {
    #[command(flatten)]
    args: super::sweep::SweepArgs,
}

/// Placeholder target for the sweep parser: each point's real target is in the mount.
const SWEEP_FILE: &str = "fsbench-sweep.dat";

fn sweep_study(words: Vec<String>, what: &str) -> anyhow::Result<(crate::sweep::Study, bool)> {
    let mut argv = vec![SWEEP_FILE.to_string()];
    argv.extend(words);
    let line = SweepLine::try_parse_from(&argv).map_err(|e| {
        let text = e.render().to_string();
        let first = text.lines().next().unwrap_or("").trim();
        let first = first.strip_prefix("error: ").unwrap_or(first);
        crate::usage!("bad {what}: {first}")
    })?;
    let a = line.args;
    if a.output.is_some() {
        bail_usage!("bad {what}: give --output to fscompare, not inside the sweep");
    }
    if a.printed.format.is_some() || a.printed.output_format.is_some() {
        bail_usage!("bad {what}: give --format to fscompare, not inside the sweep");
    }
    let study = super::sweep::study_from(&a)?;
    let n = study.check_point_count()?;
    if n == 0 {
        bail_usage!("bad {what}: no points");
    }
    let workload = study.workload.is_some();
    for p in study.points() {
        if let Some(name) = &study.workload {
            let pj = study.build_workload(&p)?;
            crate::sweep::workloads::check_personality(name, &std::env::temp_dir(), &pj.vars)?;
        } else {
            study.build(&p, std::path::Path::new("/nonexistent/fsbench-check"))?;
        }
    }
    Ok((study, workload))
}

fn what(a: &FscompareArgs) -> anyhow::Result<What> {
    let given = [
        a.suite.is_some(),
        a.workload.is_some(),
        a.sweep.is_some(),
        a.job.is_some(),
    ]
    .iter()
    .filter(|x| **x)
    .count();
    if given != 1 {
        bail_usage!("say what runs on each file system: exactly one of --suite NAME, --workload NAME, --sweep '...' or --job FILE.toml");
    }
    if a.workload.is_none() && (!a.vars.is_empty() || a.time.is_some()) {
        bail_usage!("-D and --time go with --workload (a sweep takes them inside --sweep '...')");
    }
    if a.suite.is_none() && (a.scale.is_some() || !a.studies.is_empty()) {
        bail_usage!("--scale and --study go with --suite");
    }
    if let Some(name) = &a.suite {
        let res = crate::sweep::suite::resolve(crate::sweep::suite::find(name)?, a.scale)?;
        for s in &a.studies {
            if !res.studies.iter().any(|r| r.study().id == *s) {
                let ids: Vec<&str> = res.studies.iter().map(|r| r.study().id.as_str()).collect();
                bail_usage!(
                    "--study {s} is not a study of {name}: expected {}",
                    ids.join(", ")
                );
            }
        }
        return Ok(What::Suite {
            res: Box::new(res),
            only: a.studies.clone(),
        });
    }
    if let Some(line) = &a.sweep {
        let (study, workload) = sweep_study(
            line.split_whitespace().map(str::to_string).collect(),
            "--sweep",
        )?;
        return Ok(What::Study {
            study: Box::new(study),
            file: (!workload).then(|| SWEEP_FILE.to_string()),
        });
    }
    if let Some(name) = &a.workload {
        let mut words = vec![
            "--workload".to_string(),
            name.clone(),
            "--name".into(),
            name.clone(),
        ];
        for v in &a.vars {
            words.extend(["-D".to_string(), v.clone()]);
        }
        if let Some(t) = &a.time {
            words.extend(["--time".to_string(), t.clone()]);
        }
        let (mut study, _) = sweep_study(words, "--workload")?;
        study.title = format!("workload {name}");
        return Ok(What::Study {
            study: Box::new(study),
            file: None,
        });
    }
    let path = a.job.as_ref().expect("one of the four is given");
    let text = std::fs::read_to_string(path)
        .map_err(|e| crate::usage!("cannot read --job {}: {e}", path.display()))?;
    let job = crate::job::Job::from_toml(&text, &path.display().to_string())?;
    Ok(What::Job(Box::new(job)))
}

pub(crate) fn main(a: FscompareArgs) -> anyhow::Result<i32> {
    let format = a.printed.get::<crate::report::document::Document>()?;
    a.study.check()?;
    if a.study.keep {
        bail_usage!("--keep: fscompare always tears down the file systems it builds (results and advise documents stay in --output)");
    }
    let mut specs = Vec::new();
    for f in &a.fs {
        for s in spec::parse_fs_arg(f)? {
            if !specs.contains(&s) {
                specs.push(s);
            }
        }
    }
    let mut layouts = Vec::new();
    for l in &a.layouts {
        for x in spec::parse_layouts(l)? {
            if !layouts.contains(&x) {
                layouts.push(x);
            }
        }
    }
    if layouts.is_empty() {
        layouts.push(spec::Layout::Single);
    }
    let available = build::mkfs_available();
    for s in &specs {
        if !available.contains(&s.fs) {
            bail_usage!(
                "unknown file system '{}': no mkfs.{} on PATH; this machine has mkfs.{{{}}}",
                s.fs,
                s.fs,
                available.join(",")
            );
        }
    }
    let size = crate::units::parse_size(&a.size)?;
    if size < 64 << 20 {
        bail_usage!(
            "bad --size {}: at least 64m per scratch device (XFS needs 300m)",
            a.size
        );
    }
    let what = what(&a)?;
    let out_dir = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("fsbench-fscompare"));
    let labels: Vec<String> = specs
        .iter()
        .flat_map(|s| layouts.iter().map(|l| fscompare::label(s, *l)))
        .collect();
    if let Some(b) = &a.baseline {
        if !labels.contains(b) {
            bail_usage!(
                "--baseline '{b}' is not one of the targets: expected {}",
                labels.join(", ")
            );
        }
    }
    if !a.devices.is_empty() && !a.study.force {
        bail_usage!("--device destroys what is on the device: add --force (fscompare still refuses a device with a signature, mounted or held)");
    }
    let iostat = a.study.iostat()?;
    if !rustix::process::geteuid().is_root() {
        bail_usage!(
            "fscompare needs root: it attaches loop devices, runs mkfs and mounts (run it as root)"
        );
    }
    let storage = if a.devices.is_empty() {
        Storage::Loops { size }
    } else {
        for d in &a.devices {
            if !crate::safety::is_block_device(d) {
                bail_usage!("--device {} is not a block device", d.display());
            }
            fscompare::check_device(d)?;
        }
        Storage::Devices(a.devices.clone())
    };
    let scratch = a.scratch.clone().unwrap_or_else(|| out_dir.join("scratch"));
    if let Storage::Loops { size } = &storage {
        let most = layouts.iter().map(|l| l.devices()).max().unwrap_or(1) as u64;
        let parent = if scratch.exists() {
            scratch.clone()
        } else {
            scratch
                .parent()
                .filter(|p| p.exists())
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("."))
        };
        crate::guard::ensure_free_space(&parent, size.saturating_mul(most), "--size")?;
    }
    let out = fscompare::run(Plan {
        specs,
        layouts,
        storage,
        scratch,
        what,
        out_dir: out_dir.clone(),
        baseline: a.baseline.clone(),
        repeat: a.study.repeat,
        fresh: a.study.fresh,
        keep: a.study.keep,
        force: a.study.force,
        iostat,
    })?;
    report(&out, &out_dir, a.study.force, format)
}

/// The text table on stdout; report.html, report.md (with advise's sections) and
/// fscompare.json in the output directory.
fn report(
    out: &fscompare::Outcome,
    out_dir: &std::path::Path,
    force: bool,
    format: crate::report::Format,
) -> anyhow::Result<i32> {
    use crate::report::Render;
    let results = crate::output::ResultsDir::open(out_dir, force)?;
    let tables = crate::report::table::shape_all(&out.records, &Default::default())?;
    let doc = crate::report::document::Document {
        records: &out.records,
        tables: &tables,
        title: &out.title,
        preface: &out.preface,
        baseline: out.baseline.as_deref(),
        advice: &out.advice,
    };
    // The advise sections are in report.html and report.md; the terminal gets the tables.
    let short = crate::report::document::Document { advice: &[], ..doc };
    crate::out!("{}", short.render(format));
    let html = doc.write_into(&results)?;
    results.write_json("fscompare.json", &out.manifest)?;
    let t = out.tally;
    eprintln!(
        "{} measured, {} reused, {} skipped, {} failed, {} target(s) not built; report: {}",
        t.ran,
        t.reused,
        t.skipped,
        t.failed,
        out.failed_builds,
        html.display()
    );
    if out.interrupted {
        eprintln!(
            "interrupted: the scratch storage is torn down; run the same command again to resume"
        );
    }
    Ok(out.exit_code())
}
