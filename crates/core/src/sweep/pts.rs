//! The `ssd-pts` suite: a SNIA Performance Test Specification style precondition study on
//! one target (a file fsbench creates, or a block device under `--force`). It purges the
//! target (a sequential trim pass: hole punching on a file, BLKDISCARD on a device), writes
//! the workload-independent preconditioning (a multiple of the capacity in 128 KiB sequential
//! writes), then runs rounds of the IOPS matrix (block sizes x read/write mixes, random access)
//! until the tracking variable (4 KiB random write IOPS) is steady over the last five rounds,
//! or the round limit is reached. Every phase and point is an ordinary sweep point run by the
//! runner and stored as one Result; the steady-state judgement is `Tracker`.

use super::{record_file_name, Ctx, Point, Record, Study, TableSpec};
use crate::error::UsageError;
use crate::units::format_size_exact;
use crate::usage;
use std::path::PathBuf;

/// The suite's name on the command line.
pub const NAME: &str = "ssd-pts";
/// The PTS block sizes, largest first (the matrix's rows).
/// (0.5 KiB is written 512: sizes take whole numbers.)
pub const PTS_BS: &[&str] = &["1024k", "128k", "64k", "32k", "16k", "8k", "4k", "512"];
/// The PTS read/write mixes, reads first (the matrix's columns).
pub const PTS_MIXES: &[(u8, u8)] = &[
    (100, 0),
    (95, 5),
    (65, 35),
    (50, 50),
    (35, 65),
    (5, 95),
    (0, 100),
];
/// Rounds in the steady-state measurement window.
pub const WINDOW: usize = 5;
/// Largest allowed range of the window's values, as a fraction of their mean.
pub(crate) const RANGE_LIMIT: f64 = 0.20;
/// Largest allowed excursion of the window's least-squares line, as a fraction of the mean.
pub const SLOPE_LIMIT: f64 = 0.10;
/// I/O size of the preconditioning fill.
const FILL_BS: u64 = 128 << 10;
/// Most rounds one study may run.
pub const MAX_ROUNDS: u32 = 1000;

/// Study ids of the three phases.
const PURGE: &str = "ssd-pts-purge";
const FILL: &str = "ssd-pts-fill";
const ROUND: &str = "ssd-pts-round";
/// Study id of the matrix averaged over the steady window (built from the round records).
pub(crate) const MATRIX: &str = "ssd-pts-matrix";

/// What one study runs, checked before any I/O.
#[derive(Debug, Clone)]
pub struct PtsPlan {
    pub target: PathBuf,
    /// The target is a block device (purge by BLKDISCARD).
    pub device: bool,
    /// Bytes of the target the study uses.
    pub capacity: u64,
    /// The fill writes this many times the capacity (PTS: 2).
    pub fill_factor: f64,
    pub bs: Vec<String>,
    pub mixes: Vec<(u8, u8)>,
    pub point_time_s: f64,
    pub max_rounds: u32,
    /// Settings every round point gets (queue depth, threads, cache, engine, Job flags).
    pub round_settings: Vec<(String, String)>,
    /// Queue depth of the fill.
    pub fill_qd: String,
    /// Cache policy of the fill.
    pub cache: String,
}

/// Parse `--bs` for the study: a subset of the PTS block sizes, run in PTS order.
pub fn parse_bs(list: &str) -> Result<Vec<String>, UsageError> {
    let want: Vec<u64> = list
        .split(',')
        .map(|v| {
            let v = v.trim();
            let v = if v.eq_ignore_ascii_case("0.5k") {
                "512"
            } else {
                v
            };
            crate::units::parse_size(v).map_err(|_| {
                usage!(
                    "bad --bs value '{v}': expected a list of {}",
                    PTS_BS.join(",")
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let pts: Vec<u64> = PTS_BS
        .iter()
        .map(|b| crate::units::parse_size(b).unwrap_or(0))
        .collect();
    if let Some(bad) = want.iter().find(|w| !pts.contains(w)) {
        return Err(usage!(
            "bad --bs value {}: the PTS block sizes are {}",
            format_size_exact(*bad),
            PTS_BS.join(",")
        ));
    }
    Ok(PTS_BS
        .iter()
        .zip(&pts)
        .filter(|(_, b)| want.contains(b))
        .map(|(s, _)| s.to_string())
        .collect())
}

/// Parse `--mixes`: a subset of the PTS read/write mixes `R/W`, run in PTS order.
pub fn parse_mixes(list: &str) -> Result<Vec<(u8, u8)>, UsageError> {
    let mut want = Vec::new();
    for v in list.split(',').map(str::trim) {
        let parsed = v
            .split_once('/')
            .and_then(|(r, w)| Some((r.trim().parse::<u8>().ok()?, w.trim().parse::<u8>().ok()?)));
        match parsed {
            Some(m) if PTS_MIXES.contains(&m) => want.push(m),
            _ => {
                return Err(usage!(
                    "bad --mixes value '{v}': expected read/write percentages among {}",
                    mixes_text(PTS_MIXES)
                ))
            }
        }
    }
    Ok(PTS_MIXES
        .iter()
        .copied()
        .filter(|m| want.contains(m))
        .collect())
}

/// `100/0,95/5,...`
fn mixes_text(m: &[(u8, u8)]) -> String {
    m.iter()
        .map(|(r, w)| format!("{r}/{w}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The size of block device `path`, refusing (one line) a device whose contents the study
/// would destroy: mounted, held, partitioned or carrying a signature. Checked through the
/// descriptor opened without following a link; the runner checks again through its own.
pub fn inspect_device(path: &std::path::Path) -> Result<u64, UsageError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| usage!("cannot open block device {}: {e}", path.display()))?;
    let is_dev = f.metadata().is_ok_and(|m| m.file_type().is_block_device());
    if !is_dev {
        return Err(usage!("{} is no longer a block device", path.display()));
    }
    if let Some(why) = crate::safety::block_device_hazard_fd(&f) {
        return Err(usage!(
            "refusing to purge and overwrite block device {}: {why}",
            path.display()
        ));
    }
    crate::runner::target::block_device_size(&f)
        .map_err(|e| usage!("cannot read the size of {}: {e:#}", path.display()))
}

/// The figures of one steady-state window: the last [`WINDOW`] rounds of the tracking variable.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SteadyWindow {
    /// First and last round of the window (1-based).
    pub first_round: usize,
    pub last_round: usize,
    pub mean: f64,
    /// max - min of the values, in % of the mean.
    pub range_pct: f64,
    /// Least-squares slope, per round, and its value at the window's first round.
    pub slope: f64,
    pub intercept: f64,
    /// How far the least-squares line moves over the window, in % of the mean.
    pub excursion_pct: f64,
    pub steady: bool,
}

/// Judge the window of `values` (rounds `first_round`.. in order) against the PTS limits.
pub(crate) fn judge(values: &[f64], first_round: usize) -> Option<SteadyWindow> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
    let xm = (n - 1.0) / 2.0;
    let sxx: f64 = (0..values.len()).map(|i| (i as f64 - xm).powi(2)).sum();
    let sxy: f64 = values
        .iter()
        .enumerate()
        .map(|(i, v)| (i as f64 - xm) * (v - mean))
        .sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let pct = |x: f64| {
        if mean > 0.0 {
            100.0 * x / mean
        } else {
            f64::INFINITY
        }
    };
    let range_pct = pct(hi - lo);
    let excursion_pct = pct((slope * (n - 1.0)).abs());
    Some(SteadyWindow {
        first_round,
        last_round: first_round + values.len() - 1,
        mean,
        range_pct,
        slope,
        intercept: mean - slope * xm,
        excursion_pct,
        steady: mean > 0.0
            && range_pct <= RANGE_LIMIT * 100.0
            && excursion_pct <= SLOPE_LIMIT * 100.0,
    })
}

/// The tracking variable round by round, and whether to run another round.
#[derive(Debug, Clone)]
pub(crate) struct Tracker {
    pub values: Vec<f64>,
    pub max_rounds: usize,
}

/// What comes after a round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Next {
    Round,
    /// The last window is steady: stop, reached at this round.
    Steady(usize),
    /// The round limit is reached without a steady window.
    Exhausted,
}

impl Tracker {
    pub(crate) fn new(max_rounds: usize) -> Tracker {
        Tracker {
            values: Vec::new(),
            max_rounds,
        }
    }

    /// Record a round's tracking value and say what comes next.
    pub(crate) fn push(&mut self, v: f64) -> Next {
        self.values.push(v);
        let round = self.values.len();
        if self.window().is_some_and(|w| w.steady) {
            return Next::Steady(round);
        }
        if round >= self.max_rounds {
            Next::Exhausted
        } else {
            Next::Round
        }
    }

    /// The last [`WINDOW`] rounds, judged (None before there are that many).
    pub(crate) fn window(&self) -> Option<SteadyWindow> {
        let n = self.values.len();
        (n >= WINDOW).then(|| judge(&self.values[n - WINDOW..], n - WINDOW + 1))?
    }
}

/// What the study found, for the report and `ssd-pts.json`.
#[derive(Debug, Clone)]
pub struct PtsOutcome {
    pub records: Vec<Record>,
    /// How the target was purged.
    pub purge: String,
    pub fill_bytes: u64,
    /// The tracking variable (4 KiB random write IOPS) of every round.
    pub tracking: Vec<f64>,
    pub window: Option<SteadyWindow>,
    /// The round at which the window became steady.
    pub steady_round: Option<usize>,
    pub rounds_run: usize,
    /// A phase did not complete: the study stopped there.
    pub stopped: Option<String>,
}

fn study(id: &str, title: &str, settings: Vec<(String, String)>, table: TableSpec) -> Study {
    Study {
        suite: NAME.into(),
        id: id.into(),
        title: title.into(),
        settings,
        table,
        ..Default::default()
    }
}

fn s(n: &str, v: impl ToString) -> (String, String) {
    (n.to_string(), v.to_string())
}

/// How the purge works on this target, in words.
pub(crate) fn purge_method(device: bool) -> &'static str {
    if device {
        "BLKDISCARD of the whole device (a sequential trim pass)"
    } else {
        "hole punch of the whole file (a sequential trim pass)"
    }
}

/// The I/Os of the fill: enough 128 KiB writes for `factor` x `capacity` bytes.
pub(crate) fn fill_ios(capacity: u64, factor: f64) -> u64 {
    ((capacity as f64 * factor) / FILL_BS as f64)
        .ceil()
        .max(1.0) as u64
}

/// Run one phase point and store it; `probe` joins its Result.
fn run_phase(
    ctx: &mut Ctx,
    st: &Study,
    values: Vec<(String, String)>,
    plan: &PtsPlan,
    probe: Option<(&str, serde_json::Value)>,
    keep_contents: bool,
) -> anyhow::Result<Record> {
    let index = ctx.next_index;
    ctx.next_index += 1;
    let p = Point { index, values };
    let mut pj = st.build(&p, &plan.target)?;
    pj.keep_contents = keep_contents;
    // A file fsbench did not create is written only under --force (the run's rule); a
    // device is checked by the runner through its descriptor (signature, mounted).
    pj.job.force = ctx.force && !plan.device;
    let meta = st.meta(&p, index, 0, Some(&plan.target.display().to_string()));
    let file = ctx
        .out_dir
        .join(record_file_name(&st.id, index, &p.values, 0));
    ctx.progress
        .start_point(&format!("{} {}", st.id, meta.point_label()));
    ctx.check_replace(&file, &meta)?;
    let mut rec = super::run_point(&pj, meta, ctx)?;
    if let (Record::Run { result, .. }, Some((k, v))) = (&mut rec, probe) {
        result.probes.insert(k.into(), v);
    }
    ctx.store(&file, &rec)?;
    ctx.progress.finish_point();
    Ok(rec)
}

/// Build the fill and one point of each block size and mix: a bad queue depth, thread
/// count, cache policy or engine is refused before any I/O.
pub fn check(plan: &PtsPlan) -> Result<(), UsageError> {
    let cap = format_size_exact(plan.capacity);
    let mut settings = vec![s("rw", "write"), s("bs", "128k"), s("size", &cap)];
    settings.push(s("qd", &plan.fill_qd));
    settings.push(s("cache", &plan.cache));
    let p = Point {
        index: 0,
        values: Vec::new(),
    };
    study(FILL, "", settings, TableSpec::default()).build(&p, &plan.target)?;
    for bs in &plan.bs {
        for (r, _) in &plan.mixes {
            let mut settings = vec![
                s("rw", "randrw"),
                s("rwmix", r),
                s("bs", bs),
                s("size", &cap),
                s("time", format!("{}s", plan.point_time_s)),
            ];
            settings.extend(plan.round_settings.iter().cloned());
            study(ROUND, "", settings, TableSpec::default()).build(&p, &plan.target)?;
        }
    }
    Ok(())
}

/// Why a phase's record ends the study, if it does.
fn incomplete(rec: &Record) -> Option<String> {
    match rec {
        Record::Skipped { reason, .. } => Some(reason.clone()),
        Record::Run { result, .. } if result.status != crate::runner::RunStatus::Complete => {
            Some(format!("it ended {:?}", result.status).to_lowercase())
        }
        _ => None,
    }
}

/// Run the study: purge, fill, rounds until steady or the round limit.
pub fn run(plan: &PtsPlan, ctx: &mut Ctx) -> anyhow::Result<PtsOutcome> {
    super::remove_dead_study_files(&plan.target);
    let cap = format_size_exact(plan.capacity);
    let trim_bs = format_size_exact(plan.capacity.min(1 << 20));
    let mut out = PtsOutcome {
        records: Vec::new(),
        purge: purge_method(plan.device).into(),
        fill_bytes: fill_ios(plan.capacity, plan.fill_factor) * FILL_BS,
        tracking: Vec::new(),
        window: None,
        steady_round: None,
        rounds_run: 0,
        stopped: None,
    };
    let phase_table = TableSpec {
        rows: vec!["phase".into()],
        metrics: vec!["mb_per_s".into(), "iops".into(), "elapsed_s".into()],
        ..Default::default()
    };
    // 1. Purge.
    let purge = study(
        PURGE,
        "Purge",
        vec![
            s("rw", "trim"),
            s("bs", &trim_bs),
            s("size", &cap),
            s("threads", 1),
        ],
        phase_table.clone(),
    );
    let probe = serde_json::json!({ "method": out.purge });
    let rec = run_phase(
        ctx,
        &purge,
        vec![s("phase", "purge")],
        plan,
        Some(("purge", probe)),
        false,
    )?;
    let why = incomplete(&rec);
    out.records.push(rec);
    if let Some(why) = why {
        out.stopped = Some(format!("the purge did not complete: {why}"));
        return Ok(out);
    }
    // 2. Workload-independent preconditioning.
    let fill = study(
        FILL,
        "Workload-independent preconditioning (128 KiB sequential writes)",
        vec![
            s("rw", "write"),
            s("bs", "128k"),
            s("size", &cap),
            s("count", fill_ios(plan.capacity, plan.fill_factor)),
            s("threads", 1),
            s("qd", &plan.fill_qd),
            s("cache", &plan.cache),
        ],
        phase_table,
    );
    let probe = serde_json::json!({
        "fill_factor": plan.fill_factor,
        "fill_bytes": out.fill_bytes,
        "capacity": plan.capacity,
        "pts_fill_factor": 2,
    });
    let rec = run_phase(
        ctx,
        &fill,
        vec![s("phase", "fill")],
        plan,
        Some(("precondition", probe)),
        true,
    )?;
    let why = incomplete(&rec);
    out.records.push(rec);
    if let Some(why) = why {
        out.stopped = Some(format!("the preconditioning fill did not complete: {why}"));
        return Ok(out);
    }
    // 3. Rounds of the IOPS matrix.
    run_rounds(plan, ctx, &mut out)?;
    Ok(out)
}

fn run_rounds(plan: &PtsPlan, ctx: &mut Ctx, out: &mut PtsOutcome) -> anyhow::Result<()> {
    let table = TableSpec {
        rows: vec!["round".into(), "bs".into()],
        cols: vec!["mix".into()],
        metrics: vec!["iops".into()],
        note: None,
    };
    let mut tracker = Tracker::new(plan.max_rounds as usize);
    let cap = format_size_exact(plan.capacity);
    for round in 1..=plan.max_rounds {
        let mut tracking = None;
        for bs in &plan.bs {
            for &(r, w) in &plan.mixes {
                if ctx.interrupted || crate::runner::signal::interrupted() {
                    ctx.interrupted = true;
                    out.stopped = Some("interrupted".into());
                    return Ok(());
                }
                let mut settings = vec![
                    s("rw", "randrw"),
                    s("rwmix", r),
                    s("bs", bs),
                    s("size", &cap),
                    s("time", format!("{}s", plan.point_time_s)),
                ];
                settings.extend(plan.round_settings.iter().cloned());
                let st = study(
                    ROUND,
                    "IOPS matrix, round by round",
                    settings,
                    table.clone(),
                );
                let values = vec![s("round", round), s("bs", bs), s("mix", format!("{r}/{w}"))];
                let rec = run_phase(ctx, &st, values, plan, None, true)?;
                if bs == "4k" && (r, w) == (0, 100) {
                    tracking = rec.result().map(|x| x.total.iops);
                }
                out.records.push(rec);
            }
        }
        out.rounds_run = round as usize;
        let Some(v) = tracking else {
            out.stopped = Some(format!(
                "round {round}: the 4k 0/100 point (the tracking variable) was not measured"
            ));
            return Ok(());
        };
        out.tracking.push(v);
        let next = tracker.push(v);
        out.window = tracker.window();
        match next {
            Next::Round => {}
            Next::Steady(r) => {
                out.steady_round = Some(r);
                return Ok(());
            }
            Next::Exhausted => return Ok(()),
        }
    }
    Ok(())
}

/// The round records of the steady window as points of the matrix study: one cell per block
/// size and mix, the window's rounds as its repetitions (the report averages them).
pub fn matrix_records(out: &PtsOutcome) -> Vec<Record> {
    let Some(w) = out.window else {
        return Vec::new();
    };
    let title = format!(
        "IOPS matrix, mean over the steady-state window (rounds {}-{})",
        w.first_round, w.last_round
    );
    out.records
        .iter()
        .filter(|r| r.meta().study == ROUND)
        .filter_map(|r| {
            let round: usize = r.meta().value("round")?.parse().ok()?;
            if round < w.first_round || round > w.last_round {
                return None;
            }
            let mut r = r.clone();
            let (Record::Run { meta, .. } | Record::Skipped { meta, .. }) = &mut r;
            meta.study = MATRIX.into();
            meta.title = title.clone();
            meta.point.retain(|(k, _)| k != "round");
            meta.repeat = (round - w.first_round) as u32;
            meta.table = TableSpec {
                rows: vec!["bs".into()],
                cols: vec!["mix".into()],
                metrics: vec!["iops".into()],
                note: None,
            };
            Some(r)
        })
        .collect()
}

/// The lines of the report that say what the study did and found.
pub fn summary_lines(plan: &PtsPlan, out: &PtsOutcome) -> Vec<String> {
    let mut v = vec![format!(
        "Target {} ({} bytes used); purge: {}.",
        plan.target.display(),
        plan.capacity,
        out.purge
    )];
    let factor_note = if (plan.fill_factor - 2.0).abs() > f64::EPSILON {
        format!(" (--fill-factor {}: the PTS writes 2x)", plan.fill_factor)
    } else {
        String::new()
    };
    v.push(format!(
        "Preconditioning: {} bytes of 128 KiB sequential writes, {}x the capacity{factor_note}.",
        out.fill_bytes, plan.fill_factor
    ));
    v.push(format!(
        "Rounds: {} of at most {}; each point {} s of random I/O; block sizes {}; mixes (read/write %) {}.",
        out.rounds_run,
        plan.max_rounds,
        plan.point_time_s,
        plan.bs.join(","),
        mixes_text(&plan.mixes)
    ));
    let iops = |x: f64| format!("{x:.0}");
    match (&out.window, out.steady_round) {
        (Some(w), Some(r)) => v.push(format!(
            "Steady state: reached at round {r} (window rounds {}-{}): mean {} IOPS of 4 KiB random writes, range {:.1} % of the mean (limit 20 %), slope excursion {:.1} % (limit 10 %).",
            w.first_round, w.last_round, iops(w.mean), w.range_pct, w.excursion_pct
        )),
        (Some(w), None) => v.push(format!(
            "Steady state: NOT reached in {} rounds; last window rounds {}-{}: mean {} IOPS, range {:.1} % of the mean (limit 20 %), slope excursion {:.1} % (limit 10 %).",
            out.rounds_run, w.first_round, w.last_round, iops(w.mean), w.range_pct, w.excursion_pct
        )),
        (None, _) => v.push(format!(
            "Steady state: NOT judged: {} round(s) ran, the window needs {WINDOW}.",
            out.rounds_run
        )),
    }
    if let Some(why) = &out.stopped {
        v.push(format!("STOPPED: {why}."));
    }
    v
}

/// `ssd-pts.json`: the study's sequence and steady-state figures.
pub fn summary_json(plan: &PtsPlan, out: &PtsOutcome) -> serde_json::Value {
    serde_json::json!({
        "schema_version": crate::result::SCHEMA_VERSION,
        "kind": "suite",
        "suite": NAME,
        "target": plan.target,
        "device": plan.device,
        "capacity": plan.capacity,
        "purge": out.purge,
        "fill_factor": plan.fill_factor,
        "fill_bytes": out.fill_bytes,
        "point_time_s": plan.point_time_s,
        "max_rounds": plan.max_rounds,
        "bs": plan.bs,
        "mixes": mixes_text(&plan.mixes),
        "rounds_run": out.rounds_run,
        "tracking_iops": out.tracking,
        "steady": out.steady_round.is_some(),
        "steady_round": out.steady_round,
        "window": out.window,
        "stopped": out.stopped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_series(series: impl Fn(usize) -> f64, max: usize) -> (Next, usize) {
        let mut t = Tracker::new(max);
        for r in 1..=max {
            match t.push(series(r)) {
                Next::Round => continue,
                n => return (n, r),
            }
        }
        unreachable!("the tracker stops by the round limit")
    }

    /// A flat series (within a few per cent) is steady at round 5, the first full window.
    #[test]
    fn a_steady_series_stops_at_round_five() {
        let vals = [1000.0, 1030.0, 980.0, 1010.0, 995.0, 1000.0];
        assert_eq!(run_series(|r| vals[r - 1], 25), (Next::Steady(5), 5));
    }

    /// A series rising 10 % a round never has a steady window: it runs to the limit.
    #[test]
    fn a_rising_series_runs_to_the_limit() {
        assert_eq!(
            run_series(|r| 1000.0 * 1.1f64.powi(r as i32), 12),
            (Next::Exhausted, 12)
        );
    }

    /// A falling series (fresh-out-of-box decay) settles later: steady once the last five
    /// rounds are flat.
    #[test]
    fn a_decaying_series_is_steady_once_flat() {
        let vals = [
            5000.0, 3000.0, 2000.0, 1200.0, 1000.0, 1000.0, 990.0, 1010.0, 1000.0,
        ];
        assert_eq!(run_series(|r| vals[r - 1], 9), (Next::Steady(9), 9));
    }

    /// Range and slope are each a limit on their own: a slow steady rise inside the range
    /// limit still fails on the slope, a zig-zag with no slope fails on the range.
    #[test]
    fn range_and_slope_are_judged_separately() {
        // +3 % a round: range 12 %, excursion 12 % > 10 %.
        let rise: Vec<f64> = (0..5).map(|i| 1000.0 + 30.0 * i as f64).collect();
        let w = judge(&rise, 1).unwrap();
        assert!(
            w.range_pct < 20.0 && w.excursion_pct > 10.0 && !w.steady,
            "{w:?}"
        );
        assert!((w.slope - 30.0).abs() < 1e-9 && (w.intercept - 1000.0).abs() < 1e-9);
        let zig = [900.0, 1150.0, 900.0, 1150.0, 900.0];
        let w = judge(&zig, 3).unwrap();
        assert!(
            w.range_pct > 20.0 && w.excursion_pct < 10.0 && !w.steady,
            "{w:?}"
        );
        assert_eq!((w.first_round, w.last_round), (3, 7));
        assert!(!judge(&[0.0; 5], 1).unwrap().steady);
    }

    #[test]
    fn bs_and_mixes_are_pts_subsets_in_pts_order() {
        assert_eq!(parse_bs("4k,1m,0.5k").unwrap(), ["1024k", "4k", "512"]);
        assert_eq!(parse_bs("512,4k").unwrap(), ["4k", "512"]);
        assert!(parse_bs("3k").unwrap_err().0.contains("PTS block sizes"));
        assert_eq!(parse_mixes("0/100,100/0").unwrap(), [(100, 0), (0, 100)]);
        assert!(parse_mixes("60/40").is_err());
        assert!(parse_mixes("x").is_err());
        assert_eq!(fill_ios(8 << 20, 0.25), 16);
        assert_eq!(fill_ios(8 << 20, 2.0), 128);
    }
}
