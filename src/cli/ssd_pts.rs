//! `fsbench suite ssd-pts TARGET`: the SNIA PTS style precondition study (`crate::sweep::pts`)
//! on one file or block device; its Results, report, steady-state chart and summary go to the
//! output directory like any suite's.

use super::suite::SuiteArgs;
use crate::bail_usage;
use crate::report::document::Document;
use crate::report::Render;
use crate::sweep::pts::{self, PtsPlan};
use clap::Args;
use std::path::PathBuf;

pub(crate) const PTS: &str = "ssd-pts suite";

/// The flags of the ssd-pts suite (refused with the other suites).
#[derive(Args, Debug, Default)]
pub(crate) struct PtsArgs {
    /// Bytes of the target: a file's size (needed), or a device's first SIZE bytes [default: all]
    #[arg(long, value_name = "SIZE", help_heading = PTS)]
    pub size: Option<String>,
    /// The preconditioning fill writes FACTOR x the capacity (the PTS: 2)
    #[arg(long = "fill-factor", value_name = "FACTOR", help_heading = PTS)]
    pub fill_factor: Option<f64>,
    /// Block sizes of the matrix, of 1024k,128k,64k,32k,16k,8k,4k,0.5k [default: all]
    #[arg(long, value_name = "LIST", help_heading = PTS)]
    pub bs: Option<String>,
    /// Read/write mixes of the matrix, a subset of 100/0,95/5,65/35,50/50,35/65,5/95,0/100 [default: all]
    #[arg(long, value_name = "LIST", help_heading = PTS)]
    pub mixes: Option<String>,
    /// Run time of each matrix point (the PTS: 1 min) [default: 5s]
    #[arg(long = "point-time", value_name = "DUR", help_heading = PTS)]
    pub point_time: Option<String>,
    /// Most rounds before giving up on a steady state (the PTS: 25) [default: 25]
    #[arg(long = "max-rounds", value_name = "N", help_heading = PTS)]
    pub max_rounds: Option<u32>,
    /// I/Os in flight per thread in the fill and the matrix [default: 1]
    #[arg(long, value_name = "N", help_heading = PTS)]
    pub qd: Option<String>,
    /// Threads of each matrix point [default: 1]
    #[arg(long, value_name = "N", help_heading = PTS)]
    pub threads: Option<String>,
    /// Cache policy of the fill and the matrix (direct falls back as run's does) [default: direct]
    #[arg(long, value_name = "POLICY", help_heading = PTS)]
    pub cache: Option<String>,
    /// I/O engine of the fill and the matrix (sync, uring, ...) [default: run's]
    #[arg(long, value_name = "ENGINE", help_heading = PTS)]
    pub engine: Option<String>,
}

impl PtsArgs {
    /// The flags given, by name (for the refusal with other suites).
    pub(crate) fn given(&self) -> Option<&'static str> {
        let flags = [
            (self.size.is_some(), "--size"),
            (self.fill_factor.is_some(), "--fill-factor"),
            (self.bs.is_some(), "--bs"),
            (self.mixes.is_some(), "--mixes"),
            (self.point_time.is_some(), "--point-time"),
            (self.max_rounds.is_some(), "--max-rounds"),
            (self.qd.is_some(), "--qd"),
            (self.threads.is_some(), "--threads"),
            (self.cache.is_some(), "--cache"),
            (self.engine.is_some(), "--engine"),
        ];
        flags.iter().find(|f| f.0).map(|f| f.1)
    }
}

/// The study's plan from the command line, every value checked before any I/O.
fn plan(a: &SuiteArgs, target: PathBuf) -> anyhow::Result<PtsPlan> {
    let p = &a.pts;
    let device = crate::safety::is_block_device(&target);
    let size = p
        .size
        .as_deref()
        .map(|s| {
            crate::units::parse_size(s)
                .map_err(|_| crate::usage!("bad --size '{s}': expected a size such as 8m or 4g"))
        })
        .transpose()?;
    if size == Some(0) {
        bail_usage!("bad --size 0: the study needs at least 1 MiB");
    }
    let fill_factor = p.fill_factor.unwrap_or(2.0);
    if !(fill_factor.is_finite() && fill_factor > 0.0 && fill_factor <= 16.0) {
        bail_usage!("bad --fill-factor {fill_factor}: expected a number above 0, at most 16 (the PTS writes 2)");
    }
    let bs = match &p.bs {
        Some(l) => pts::parse_bs(l)?,
        None => pts::PTS_BS.iter().map(|s| s.to_string()).collect(),
    };
    let mixes = match &p.mixes {
        Some(l) => pts::parse_mixes(l)?,
        None => pts::PTS_MIXES.to_vec(),
    };
    if !bs.iter().any(|b| b == "4k") || !mixes.contains(&(0, 100)) {
        bail_usage!("the steady state is judged on 4 KiB random writes: --bs must include 4k and --mixes 0/100");
    }
    let point_time_s = match &p.point_time {
        Some(t) => crate::units::parse_duration(t)
            .map_err(|_| {
                crate::usage!("bad --point-time '{t}': expected a duration such as 0.5s, 5s or 1m")
            })?
            .as_secs_f64(),
        None => 5.0,
    };
    if !(0.05..=3600.0).contains(&point_time_s) {
        bail_usage!("bad --point-time {point_time_s}s: expected 0.05s to 1h");
    }
    let max_rounds = p.max_rounds.unwrap_or(25);
    if !(pts::WINDOW as u32..=pts::MAX_ROUNDS).contains(&max_rounds) {
        bail_usage!(
            "bad --max-rounds {max_rounds}: expected {} to {} (the steady-state window is {} rounds)",
            pts::WINDOW,
            pts::MAX_ROUNDS,
            pts::WINDOW
        );
    }
    let capacity = if device {
        if !a.study.force {
            bail_usage!(
                "refusing block device {}: the ssd-pts suite discards and overwrites the whole device; add --force",
                target.display()
            );
        }
        let dev = pts::inspect_device(&target)?;
        match size {
            Some(s) if s > dev => bail_usage!(
                "--size {s} is more than block device {} holds ({dev} bytes)",
                target.display()
            ),
            Some(s) => s,
            None => dev,
        }
    } else {
        if target.is_dir() {
            bail_usage!(
                "{} is a directory: give the file to create (e.g. {}/pts.dat) or a block device",
                target.display(),
                target.display()
            );
        }
        size.ok_or_else(|| {
            crate::usage!("a file target needs --size (the capacity the study fills and measures)")
        })?
    };
    let capacity = capacity / 4096 * 4096;
    if capacity < 1 << 20 {
        bail_usage!("the study needs at least 1 MiB of the target");
    }
    if crate::units::parse_size(&bs[0]).is_ok_and(|b| b > capacity) {
        bail_usage!("block size {} is larger than the capacity ({capacity} bytes): give a larger --size or a smaller --bs", bs[0]);
    }
    let qd = p.qd.clone().unwrap_or_else(|| "1".into());
    let cache = p.cache.clone().unwrap_or_else(|| "direct".into());
    let mut round_settings = vec![
        ("qd".to_string(), qd.clone()),
        (
            "threads".to_string(),
            p.threads.clone().unwrap_or_else(|| "1".into()),
        ),
        ("cache".to_string(), cache.clone()),
    ];
    if let Some(e) = &p.engine {
        round_settings.push(("engine".into(), e.clone()));
    }
    round_settings.extend(
        a.job
            .settings()
            .into_iter()
            .map(|(n, v)| (n.to_string(), v)),
    );
    let plan = PtsPlan {
        target,
        device,
        capacity,
        fill_factor,
        bs,
        mixes,
        point_time_s,
        max_rounds,
        round_settings,
        fill_qd: qd,
        cache,
    };
    pts::check(&plan)?;
    Ok(plan)
}

/// Refuse the flags of the other suites, which mean nothing here.
fn refuse_other_flags(a: &SuiteArgs) -> anyhow::Result<()> {
    let other = [
        (
            !a.dirs.is_empty(),
            "--dir (give the target after the suite name)",
        ),
        (
            a.scale.is_some(),
            "--scale (use --point-time, --max-rounds, --fill-factor)",
        ),
        (!a.studies.is_empty(), "--study"),
        (a.baseline.is_some(), "--baseline"),
        (a.study.repeat > 1, "--repeat"),
    ];
    if let Some((_, f)) = other.iter().find(|o| o.0) {
        bail_usage!("the ssd-pts suite takes no {f}");
    }
    Ok(())
}

pub(crate) fn main(a: SuiteArgs, exec: crate::exec::Executor) -> anyhow::Result<i32> {
    refuse_other_flags(&a)?;
    if exec.ranks().is_some() {
        bail_usage!("the ssd-pts suite runs on one host: run it without mpirun");
    }
    let Some(target) = a.target.clone() else {
        bail_usage!(
            "no target: fsbench suite ssd-pts FILE --size SIZE, or a block device with --force"
        );
    };
    let watch = super::args::watch_study(&a.watch)?;
    let iostat = a.study.iostat()?;
    let format = a.printed.get::<Document>()?;
    let plan = plan(&a, target)?;
    let out_dir = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("fsbench-{}", pts::NAME)));
    let points_per_round = plan.bs.len() * plan.mixes.len();
    let mut ctx = crate::sweep::Ctx::new(
        out_dir.clone(),
        1,
        true,
        a.study.keep,
        a.study.force,
        2 + points_per_round * plan.max_rounds as usize,
    )?;
    for name in ["ssd-pts.json", "steady-state.svg"] {
        ctx.results.check(name)?;
    }
    ctx.iostat = iostat;
    ctx.watched(watch);
    ctx.banner = Some(format!(
        "fsbench suite {}: purge, {}x fill, IOPS matrix rounds on {}; results in {}",
        pts::NAME,
        plan.fill_factor,
        plan.target.display(),
        out_dir.display()
    ));
    crate::runner::signal::install();
    let outcome = pts::run(&plan, &mut ctx);
    ctx.cleanup();
    ctx.progress.clear();
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            ctx.results.abandon();
            return Err(e);
        }
    };
    ctx.announce();
    let mut records = outcome.records.clone();
    records.extend(pts::matrix_records(&outcome));
    let tables = crate::report::table::shape_all(&records, &Default::default())?;
    let mut preface = vec![format!(
        "Suite {}: a SNIA PTS style precondition study (purge, workload-independent preconditioning, IOPS matrix rounds until steady).",
        pts::NAME
    )];
    preface.extend(pts::summary_lines(&plan, &outcome));
    preface.push("Steady-state chart: steady-state.svg.".into());
    let title = format!("fsbench suite {}", pts::NAME);
    let report = Document {
        records: &records,
        tables: &tables,
        title: &title,
        preface: &preface,
        baseline: None,
        advice: &[],
    };
    crate::out!("{}", report.render(format));
    let html = report.write_into(&ctx.results)?;
    let bands = outcome.window.map(|w| crate::report::chart::SteadyBands {
        first_round: w.first_round,
        last_round: w.last_round,
        mean: w.mean,
        intercept: w.intercept,
        slope: w.slope,
    });
    let svg = crate::report::chart::steady_state_chart(
        "Steady state: 4 KiB random write IOPS per round",
        "4 KiB random write IOPS",
        &outcome.tracking,
        bands.as_ref(),
    );
    ctx.results.write("steady-state.svg", svg.as_bytes())?;
    ctx.results
        .write_json("ssd-pts.json", &pts::summary_json(&plan, &outcome))?;
    let t = ctx.tally;
    eprintln!(
        "{} measured, {} skipped, {} failed; report: {}",
        t.ran,
        t.skipped,
        t.failed,
        html.display()
    );
    if ctx.interrupted {
        eprintln!("interrupted: the study starts over when run again");
        return Ok(130);
    }
    Ok(if t.failed > 0 || outcome.stopped.is_some() {
        1
    } else {
        0
    })
}
