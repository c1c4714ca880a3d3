//! The aged file system study (white paper, "Buffered Aged File System Reads"): write N files
//! at once so their allocations interleave, count each file's extents with FIEMAP, then read
//! back 1..N of them at several I/O sizes. Written and read points are stored like any sweep
//! point; each carries `probes.extents_per_file` (the average over the files it touched),
//! counted by the point's observer after its run (`crate::observe`).
//!
//! On MPI ranks (file per rank only: the suite refuses `--shared-file`) every point is one
//! distributed run: each rank writes its own w files at once in its directory and counts their
//! extents itself, and rank 0's Result holds every rank's counts; after each group every rank
//! removes its own files.
//!
//! With a reorganised study (the suite's `reorganise = true`), each group then reorganises
//! the files it wrote with the file system's own online mechanism (`crate::reorg`, like
//! `fsadm -e`) and reads them again: the same reads, stored under that study, each carrying
//! the extents after reorganisation and a `reorganisation` probe (extents before and after,
//! the mechanism). On MPI ranks those points are skipped: reorganisation runs on one host.

use super::{record_file_name, Ctx, Point, Record, Study};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct AgedPlan {
    pub max_files: u32,
    pub size: String,
    pub write_bs: String,
    pub read_bs: Vec<String>,
    /// Reorganise the files after the reads and read them again under this study.
    pub reorganised: Option<Study>,
}

impl AgedPlan {
    /// Points of the group that writes `w` files: the write, the reads, the reads again
    /// after reorganisation.
    pub(crate) fn group_len(&self, w: usize) -> usize {
        let reads = w * self.read_bs.len();
        1 + reads + if self.reorganised.is_some() { reads } else { 0 }
    }
}

/// Run the study on `base` (files `base`, `base.1`, ...). `read_study` and `write_study`
/// carry ids, titles and table shapes; their settings are replaced here.
pub(crate) fn run(
    plan: &AgedPlan,
    read_study: &Study,
    write_study: &Study,
    base: &Path,
    target: Option<&str>,
    ctx: &mut Ctx,
) -> anyhow::Result<Vec<Record>> {
    super::remove_dead_study_files(base);
    let mut out = Vec::new();
    for w in 1..=plan.max_files {
        if ctx.interrupted {
            break;
        }
        let group = group_points(plan, read_study, write_study, w);
        let named = name_group(group, target, ctx);
        // Resume: the files are gone after a run, so a group is reused only as a whole.
        if !reuse_group(&named, ctx, &mut out) {
            let reorganised = plan.reorganised.as_ref().map(|s| s.id.as_str());
            run_group(named, base, reorganised, ctx, &mut out)?;
        }
    }
    Ok(out)
}

/// A point of the study with its index, meta data and the file its record is stored in.
type Named = (Study, Point, PathBuf, super::SweepMeta);

/// The group of points that depend on `w` files written at once: the write, then every read
/// of 1..=w of them at each read size.
fn group_points(
    plan: &AgedPlan,
    read_study: &Study,
    write_study: &Study,
    w: u32,
) -> Vec<(Study, Point)> {
    let mut ws = write_study.clone();
    ws.settings = vec![
        ("rw".into(), "write".into()),
        ("cache".into(), "buffered".into()),
        ("size".into(), plan.size.clone()),
        ("bs".into(), plan.write_bs.clone()),
        ("fsync".into(), "1".into()),
        ("files".into(), w.to_string()),
    ];
    let mut group: Vec<(Study, Point)> = Vec::new();
    group.push((
        ws,
        Point {
            index: 0,
            values: vec![("written".into(), w.to_string())],
        },
    ));
    let mut read_studies = vec![read_study];
    read_studies.extend(plan.reorganised.as_ref());
    for read_study in read_studies {
        for r in 1..=w {
            for bs in &plan.read_bs {
                group.push(read_point(plan, read_study, w, r, bs));
            }
        }
    }
    group
}

/// Read `r` of the `w` files written at once, with `bs` I/Os.
fn read_point(plan: &AgedPlan, read_study: &Study, w: u32, r: u32, bs: &str) -> (Study, Point) {
    let mut rs = read_study.clone();
    rs.settings = vec![
        ("rw".into(), "read".into()),
        ("cache".into(), "buffered".into()),
        ("size".into(), plan.size.clone()),
        ("files".into(), r.to_string()),
    ];
    let values = vec![
        ("written".into(), w.to_string()),
        ("read".into(), r.to_string()),
        ("bs".into(), bs.to_string()),
    ];
    (rs, Point { index: 0, values })
}

/// Give the group's points the next indexes of the sweep, their meta data and record files.
fn name_group(group: Vec<(Study, Point)>, target: Option<&str>, ctx: &mut Ctx) -> Vec<Named> {
    let first = ctx.next_index;
    ctx.next_index += group.len();
    group
        .into_iter()
        .enumerate()
        .map(|(k, (s, mut p))| {
            p.index = first + k;
            let meta = s.meta(&p, p.index, 0, target);
            let file = ctx
                .out_dir
                .join(record_file_name(&s.id, p.index, &p.values, 0));
            (s, p, file, meta)
        })
        .collect()
}

/// When every point of the group has a stored record a resumed sweep can use, take them all
/// into `out` and say so; otherwise take none.
fn reuse_group(named: &[Named], ctx: &mut Ctx, out: &mut Vec<Record>) -> bool {
    let stored: Vec<Option<Record>> = named
        .iter()
        .map(|(_, _, f, m)| ctx.reusable(f, m))
        .collect();
    if !stored.iter().all(|s| s.is_some()) {
        return false;
    }
    for s in stored.into_iter().flatten() {
        ctx.progress
            .start_point(&format!("{} (stored)", s.meta().study));
        ctx.progress.finish_point();
        ctx.tally.reused += 1;
        out.push(s);
    }
    true
}

/// Run the group's points in order (the write first; a failed write ends the group), each
/// with the extents of the files it touched, storing each record; then remove the files the
/// write created (here, or each rank its own) so the next group writes a fresh set.
fn run_group(
    named: Vec<Named>,
    base: &Path,
    reorganised: Option<&str>,
    ctx: &mut Ctx,
    out: &mut Vec<Record>,
) -> anyhow::Result<()> {
    let mut written: Vec<PathBuf> = Vec::new();
    // Set once the group's files are reorganised: the probe, or why the points are skipped.
    let mut reorg: Option<Result<serde_json::Value, String>> = None;
    for (k, (s, p, file, meta)) in named.into_iter().enumerate() {
        if ctx.interrupted {
            break;
        }
        ctx.progress
            .start_point(&format!("{} {}", s.id, meta.point_label()));
        let pj = s.build(&p, base)?;
        let after_reorg = reorganised == Some(s.id.as_str());
        if after_reorg && reorg.is_none() {
            reorg = Some(reorganise(&written, ctx));
        }
        let mut rec = match (&reorg, after_reorg) {
            (Some(Err(why)), true) => Record::skip(meta, why.clone()),
            _ => super::run_point_observing(&pj, meta, ctx, true)?,
        };
        if let (Some(Ok(probe)), true, Record::Run { result, .. }) = (&reorg, after_reorg, &mut rec)
        {
            result.probes.insert("reorganisation".into(), probe.clone());
        }
        if k == 0 {
            written = pj.job.targets.clone();
        }
        if let Record::Run { result, meta } = &mut rec {
            result.probes.insert(
                "sweep".into(),
                serde_json::to_value(&*meta).unwrap_or_default(),
            );
            if result.status == crate::runner::RunStatus::Partial {
                ctx.interrupted = true;
            }
        }
        ctx.store(&file, &rec)?;
        ctx.progress.finish_point();
        let failed_write = k == 0
            && rec
                .result()
                .is_none_or(|r| r.status != crate::runner::RunStatus::Complete);
        out.push(rec);
        if failed_write {
            break;
        }
    }
    // (Only files this run created: a target that existed before is never in `created`.)
    for f in written {
        ctx.remove_created_path(&f);
    }
    // On ranks each rank removes the files it created (with or without --keep, as on one
    // host: the next group writes a fresh set under the same names).
    if ctx.exec.ranks().is_some() {
        ctx.exec.cleanup(false);
    }
    Ok(())
}

/// Reorganise the files the group wrote (only files this run created and marked: the same
/// check as `fsbench frag --reorg`): the outcomes as a probe, or why the reads after it are
/// skipped.
fn reorganise(written: &[PathBuf], ctx: &Ctx) -> Result<serde_json::Value, String> {
    if ctx.exec.ranks().is_some() {
        return Err("reorganisation runs on one host: not measured on MPI ranks".into());
    }
    if written.is_empty() {
        return Err("the write of this group did not complete".into());
    }
    let mut files = Vec::new();
    for p in written {
        if !ctx.is_created(p) {
            return Err(format!("{} was not created by this run", p.display()));
        }
        let t = crate::reorg::open_checked(p, false).map_err(|e| e.0)?;
        let o = crate::reorg::reorganise(&t);
        if let Some(e) = &o.error {
            return Err(format!("cannot reorganise {}: {e}", p.display()));
        }
        files.push(o);
    }
    serde_json::to_value(crate::reorg::ReorgReport { files }).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The points that depend on w files: the write of all w, then reads of 1..=w files at
    /// each read size, in that order, with the study settings the white paper uses.
    #[test]
    fn a_group_is_the_write_then_every_read() {
        let plan = AgedPlan {
            max_files: 3,
            size: "1m".into(),
            write_bs: "64k".into(),
            read_bs: vec!["4k".into(), "1m".into()],
            reorganised: None,
        };
        let reads = Study {
            id: "r".into(),
            ..Default::default()
        };
        let writes = Study {
            id: "w".into(),
            ..Default::default()
        };
        let g = group_points(&plan, &reads, &writes, 2);
        let got: Vec<(String, Vec<String>)> = g
            .iter()
            .map(|(s, p)| {
                let v = p.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
                (s.id.clone(), v)
            })
            .collect();
        let want = [
            ("w", vec!["written=2"]),
            ("r", vec!["written=2", "read=1", "bs=4k"]),
            ("r", vec!["written=2", "read=1", "bs=1m"]),
            ("r", vec!["written=2", "read=2", "bs=4k"]),
            ("r", vec!["written=2", "read=2", "bs=1m"]),
        ];
        let want: Vec<(String, Vec<String>)> = want
            .iter()
            .map(|(s, v)| (s.to_string(), v.iter().map(|x| x.to_string()).collect()))
            .collect();
        assert_eq!(got, want);
        let setting = |s: &Study, k: &str| {
            s.settings
                .iter()
                .find(|x| x.0 == k)
                .map(|x| x.1.clone())
                .unwrap_or_default()
        };
        assert_eq!(setting(&g[0].0, "files"), "2");
        assert_eq!(setting(&g[0].0, "fsync"), "1");
        assert_eq!(setting(&g[0].0, "bs"), "64k");
        assert_eq!(setting(&g[3].0, "files"), "2");
        assert_eq!(setting(&g[1].0, "rw"), "read");
        assert!(g.iter().all(|(s, _)| setting(s, "cache") == "buffered"));
    }
}
