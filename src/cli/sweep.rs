//! `fsbench sweep`: any Job parameter given as a comma list becomes an axis; the cross
//! product runs in a stated order, each point's Result is written to the output directory as
//! it finishes, and a re-run resumes by skipping points already measured.

use super::args::{HOW, WHAT, WHERE};
use crate::bail_usage;
use crate::report::document::Document;
use crate::report::Render;
use crate::sweep::{self, axis, Axis, Ctx, Study};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::format_help::<Document>(a)),
    after_help = EXAMPLES
)]
pub(crate) struct SweepArgs {
    /// Target file (more files are TARGET.1, TARGET.2, ...) or block device
    ///
    /// fsbench creates the files. With --workload, the directory the workload runs in.
    pub target: PathBuf,
    /// Sweep a Filebench personality (e.g. fileserver) over -D variables and --time
    #[arg(long, value_name = "NAME", help_heading = WHAT)]
    pub workload: Option<String>,
    /// Access list: read, write, randread, randwrite, rw, randrw (rand_read, rand_write too)
    #[arg(long, value_name = "LIST", help_heading = WHAT)]
    pub rw: Option<String>,
    /// I/O size list (64k,256k,1m)
    #[arg(long, value_name = "LIST", help_heading = WHAT)]
    pub bs: Option<String>,
    /// File size list
    #[arg(long, value_name = "LIST", help_heading = WHAT)]
    pub size: Option<String>,
    /// Threads-per-file list
    #[arg(long, value_name = "LIST", help_heading = WHAT)]
    pub threads: Option<String>,
    /// Number-of-files (users) list
    #[arg(long, value_name = "LIST", help_heading = WHAT)]
    pub files: Option<String>,
    /// I/Os per thread list
    #[arg(long, value_name = "LIST", help_heading = WHAT)]
    pub count: Option<String>,
    /// Run time list (5s)
    #[arg(long, value_name = "LIST", help_heading = WHAT)]
    pub time: Option<String>,
    /// Read percentage list for rw/randrw
    #[arg(long = "rwmix-read", value_name = "LIST", help_heading = WHAT)]
    pub rwmix: Option<String>,
    /// Any parameter as NAME=V1,V2 (repeatable), e.g. --axis nrep=1,4
    #[arg(long = "axis", value_name = "NAME=V1,V2", help_heading = WHAT)]
    pub axes: Vec<String>,
    /// Workload variable NAME=V1,V2 (repeatable; for Filebench workloads)
    #[arg(short = 'D', value_name = "NAME=V1,V2", help_heading = WHAT)]
    pub vars: Vec<String>,
    /// Axis order, outermost first
    ///
    /// The default: rw, files, threads, size, bs, cache, engine, qd, count, time, rwmix, then
    /// --axis and -D in the order given.
    #[arg(long, value_name = "LIST", help_heading = WHAT)]
    pub order: Option<String>,
    /// Cache policy list: buffered, direct, dsync, discovered[=SIZE], concurrent, raw
    ///
    /// discovered: I/Os larger than SIZE (default 256k) go direct, the others buffered.
    #[arg(long, value_name = "LIST", help_heading = HOW)]
    pub cache: Option<String>,
    /// Engine list: sync, mmap, uring
    #[arg(long, value_name = "LIST", help_heading = HOW)]
    pub engine: Option<String>,
    /// Queue depth list (uring)
    #[arg(long, value_name = "LIST", help_heading = HOW)]
    pub qd: Option<String>,
    // run's other Job flags, one value for every point.
    #[command(flatten)]
    pub job: super::jobflags::JobFlags,
    /// Row axes of the table
    #[arg(long, value_name = "AXES", help_heading = WHERE)]
    pub rows: Option<String>,
    /// Column axes of the table
    #[arg(long, value_name = "AXES", help_heading = WHERE)]
    pub cols: Option<String>,
    /// Metrics of the table (see `fsbench report --help`)
    #[arg(long, value_name = "LIST", help_heading = WHERE)]
    pub metrics: Option<String>,
    /// Directory (not a file) for the per-point Results and report.html [default: fsbench-sweep]
    #[arg(long, value_name = "DIR", help_heading = WHERE)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
    #[command(flatten)]
    pub watch: super::args::WatchArgs,
    #[command(flatten)]
    pub study: super::args::StudyArgs,
    /// With --repeat: run the points round-robin (A B C, C B A, ...), not a point's repeats together
    ///
    /// A drift over the sweep (a neighbour starting, a cache filling) then falls on every
    /// point alike instead of on the points that happened to run during it.
    #[arg(long, help_heading = super::args::MEASURE)]
    pub interleave: bool,
    /// Study name in file names and tables
    #[arg(long, default_value = "sweep", help_heading = WHERE)]
    pub name: String,
    // Under mpirun: how each point's file is spread over the ranks (as `run`: --file-per-rank,
    // the default, or --shared-file), --reorder-ranks, --stonewall, --mpi-timeout.
    #[command(flatten)]
    pub dist: super::ranks::DistArgs,
}

const EXAMPLES: &str = "\
Examples:
  fsbench sweep data.f --rw read,randread --bs 4k,64k,1m --cache buffered,direct --size 256m
  fsbench sweep data.f --rw randwrite --bs 4k --threads 1,2,4 --time 5s --repeat 3 --output study
  fsbench sweep data.f --rw read --bs 4k,64k --count 2k --repeat 5 --interleave";

/// Build the study from the flags: single values are settings, lists are axes.
pub(crate) fn study_from(a: &SweepArgs) -> anyhow::Result<Study> {
    let mut settings = Vec::new();
    let mut axes: Vec<Axis> = Vec::new();
    let flags: [(&str, &Option<String>); 11] = [
        ("rw", &a.rw),
        ("files", &a.files),
        ("threads", &a.threads),
        ("size", &a.size),
        ("bs", &a.bs),
        ("cache", &a.cache),
        ("engine", &a.engine),
        ("qd", &a.qd),
        ("count", &a.count),
        ("time", &a.time),
        ("rwmix", &a.rwmix),
    ];
    let mut add = |ax: Axis, settings: &mut Vec<(String, String)>| -> anyhow::Result<()> {
        if axes.iter().any(|x| x.name == ax.name) || settings.iter().any(|(n, _)| *n == ax.name) {
            bail_usage!("parameter {} is given twice", ax.name);
        }
        if ax.values.len() == 1 {
            settings.push((ax.name, ax.values[0].clone()));
        } else {
            axes.push(ax);
        }
        Ok(())
    };
    for (name, v) in flags {
        if let Some(v) = v {
            let values = axis::split_values(v);
            if values.is_empty() {
                bail_usage!("--{name} has no values");
            }
            axis::check_values(name, &values)?;
            add(
                Axis {
                    name: name.into(),
                    values,
                },
                &mut settings,
            )?;
        }
    }
    // run's other Job flags: one value each, for every point.
    for (name, value) in a.job.settings() {
        add(
            Axis {
                name: name.into(),
                values: vec![value],
            },
            &mut settings,
        )?;
    }
    for s in &a.axes {
        add(axis::parse_axis_arg(s)?, &mut settings)?;
    }
    for s in &a.vars {
        let ax = axis::parse_axis_arg(&format!("var.{s}"))?;
        add(ax, &mut settings)?;
    }
    if let Some(o) = &a.order {
        let order: Vec<String> = axis::split_values(o)
            .iter()
            .map(|n| axis::canonical(n))
            .collect::<Result<_, _>>()?;
        let mut sorted = Vec::new();
        for n in &order {
            match axes.iter().position(|x| x.name == *n) {
                Some(i) => sorted.push(axes.remove(i)),
                None => {
                    bail_usage!("--order names {n}, which is not swept (give it a list of values)")
                }
            }
        }
        sorted.append(&mut axes);
        axes = sorted;
    }
    if a.workload.is_none()
        && !settings
            .iter()
            .any(|(n, _)| n == "size" || n == "count" || n == "time")
        && !axes
            .iter()
            .any(|x| matches!(x.name.as_str(), "size" | "count" | "time"))
    {
        bail_usage!("nothing bounds each point: give --size, --count or --time");
    }
    // Default table: the first axis down, the cache policy (or the last axis) across.
    let names: Vec<String> = axes.iter().map(|x| x.name.clone()).collect();
    let cols: Vec<String> = if names.len() >= 2 {
        if names.contains(&"cache".to_string()) {
            vec!["cache".into()]
        } else {
            vec![names[names.len() - 1].clone()]
        }
    } else {
        Vec::new()
    };
    let rows: Vec<String> = names
        .iter()
        .filter(|n| !cols.contains(n))
        .cloned()
        .collect();
    let study = Study {
        suite: String::new(),
        id: a.name.clone(),
        title: if a.name == "sweep" {
            "fsbench sweep".into()
        } else {
            format!("fsbench sweep {}", a.name)
        },
        settings,
        axes,
        table: sweep::TableSpec {
            rows,
            cols,
            metrics: if a.workload.is_some() {
                vec!["ops_per_s".into(), "cpu_us_per_op".into(), "lat_ms".into()]
            } else {
                Vec::new()
            },
            note: None,
        },
        chart: Default::default(),
        clamp_bs_to_size: false,
        workload: a.workload.clone(),
    };
    Ok(study)
}

pub(crate) fn main(a: SweepArgs, exec: crate::exec::Executor) -> anyhow::Result<i32> {
    a.study.check()?;
    let watch = super::args::watch_study(&a.watch)?;
    let study = study_from(&a)?;
    let shape = super::report::shape_from(&a.rows, &a.cols, &a.metrics);
    // Check the table shape and format before measuring anything.
    let format = a.printed.get::<Document>()?;
    for n in shape.rows.iter().chain(shape.cols.iter()).flatten() {
        axis::canonical(n)?;
    }
    let n = study.check_point_count()?;
    if n.saturating_mul(a.study.repeat as usize) > sweep::MAX_POINTS {
        bail_usage!(
            "bad --repeat {}: {n} points run {} times is more than the {} runs a sweep may have",
            a.study.repeat,
            a.study.repeat,
            sweep::MAX_POINTS
        );
    }
    let points = study.points();
    // Every point is built and checked before anything is created.
    for p in &points {
        if study.workload.is_some() {
            if !a.target.is_dir() {
                bail_usage!(
                    "with --workload the target must be a directory: {} is not one",
                    a.target.display()
                );
            }
            let pj = study.build_workload(p)?;
            let name = study.workload.as_deref().unwrap_or_default();
            sweep::workloads::check_personality(name, &a.target, &pj.vars)?;
        } else {
            study.build(p, &a.target)?;
        }
    }
    let out_dir = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("fsbench-sweep"));
    let iostat = a.study.iostat()?;
    if iostat.is_some() && study.workload.is_some() {
        bail_usage!("--iostat is for file and device sweeps, not --workload sweeps");
    }
    let mut ctx = Ctx::new(
        out_dir.clone(),
        a.study.repeat,
        a.study.fresh,
        a.study.keep,
        a.study.force,
        points.len() * a.study.repeat as usize,
    )?;
    ctx.iostat = iostat;
    ctx.interleave = a.interleave;
    ctx.watched(watch);
    ctx.exec = exec;
    let label = a.target.display().to_string();
    sweep::check_stored(&study, Some(&label), &ctx)?;
    crate::runner::signal::install();
    ctx.banner = Some(format!(
        "fsbench sweep: {} points x {} repeat(s){}, order {}; results in {}",
        points.len(),
        ctx.repeat,
        if a.interleave && ctx.repeat > 1 {
            " interleaved"
        } else {
            ""
        },
        study.order_text(),
        out_dir.display()
    ));
    let res = sweep::run_study(&study, &a.target, Some(&label), &mut ctx);
    let records = ctx.finish_study(res)?;
    let tables = crate::report::table::shape_all(&records, &shape)?;
    let title = format!("{} on {}", study.title, a.target.display());
    let report = Document {
        records: &records,
        tables: &tables,
        title: &title,
        preface: &[],
        baseline: None,
        advice: &[],
    };
    crate::out!("{}", report.render(format));
    let html = report.write_into(&ctx.results)?;
    let t = ctx.tally;
    eprintln!(
        "{} measured, {} reused from earlier runs, {} skipped, {} failed; report: {}",
        t.ran,
        t.reused,
        t.skipped,
        t.failed,
        html.display()
    );
    if ctx.interrupted {
        eprintln!("interrupted: run the same command again to resume");
        return Ok(130);
    }
    Ok(if t.failed > 0 { 1 } else { 0 })
}
