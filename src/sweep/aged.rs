//! The aged file system study (white paper, "Buffered Aged File System Reads"): write N files
//! at once so their allocations interleave, count each file's extents with FIEMAP, then read
//! back 1..N of them at several I/O sizes. Written and read points are stored like any sweep
//! point; each carries `probes.extents_per_file` (the average over the files it touched).

use super::{record_file_name, Ctx, Point, Record, Study};
use crate::result::RunResult;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct AgedPlan {
    pub max_files: u32,
    pub size: String,
    pub write_bs: String,
    pub read_bs: Vec<String>,
}

fn extents_of(p: &Path) -> Option<usize> {
    let f = std::fs::File::open(p).ok()?;
    crate::probe::fiemap::extents(&f).ok().map(|e| e.len())
}

fn attach_extents(r: &mut RunResult, files: &[PathBuf]) {
    let counts: Vec<Option<usize>> = files.iter().map(|f| extents_of(f)).collect();
    let known: Vec<usize> = counts.iter().flatten().copied().collect();
    if !known.is_empty() {
        let avg = known.iter().sum::<usize>() as f64 / known.len() as f64;
        r.probes
            .insert("extents_per_file".into(), serde_json::json!(avg));
    }
    r.probes.insert("extents".into(), serde_json::json!(counts));
}

/// Run the study on `base` (files `base`, `base.1`, ...). `read_study` and `write_study`
/// carry ids, titles and table shapes; their settings are replaced here.
pub fn run(
    plan: &AgedPlan,
    read_study: &Study,
    write_study: &Study,
    base: &Path,
    target: Option<&str>,
    ctx: &mut Ctx,
) -> anyhow::Result<Vec<Record>> {
    let mut out = Vec::new();
    for w in 1..=plan.max_files {
        if ctx.interrupted {
            break;
        }
        let mut ws = write_study.clone();
        ws.settings = vec![
            ("rw".into(), "write".into()),
            ("cache".into(), "buffered".into()),
            ("size".into(), plan.size.clone()),
            ("bs".into(), plan.write_bs.clone()),
            ("fsync".into(), "1".into()),
            ("files".into(), w.to_string()),
        ];
        // The group of points that depend on these w files: the write, then every read.
        let mut group: Vec<(Study, Point)> = Vec::new();
        group.push((
            ws,
            Point {
                index: 0,
                values: vec![("written".into(), w.to_string())],
            },
        ));
        for r in 1..=w {
            for bs in &plan.read_bs {
                let mut rs = read_study.clone();
                rs.settings = vec![
                    ("rw".into(), "read".into()),
                    ("cache".into(), "buffered".into()),
                    ("size".into(), plan.size.clone()),
                    ("files".into(), r.to_string()),
                ];
                group.push((
                    rs,
                    Point {
                        index: 0,
                        values: vec![
                            ("written".into(), w.to_string()),
                            ("read".into(), r.to_string()),
                            ("bs".into(), bs.clone()),
                        ],
                    },
                ));
            }
        }
        let first = ctx.next_index;
        ctx.next_index += group.len();
        let named: Vec<(Study, Point, PathBuf, super::SweepMeta)> = group
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
            .collect();
        // Resume: the files are gone after a run, so a group is reused only as a whole.
        let stored: Vec<Option<Record>> = named
            .iter()
            .map(|(_, _, f, m)| ctx.reusable(f, m))
            .collect();
        if stored.iter().all(|s| s.is_some()) {
            for s in stored.into_iter().flatten() {
                ctx.progress
                    .start_point(&format!("{} (stored)", s.meta().study));
                ctx.progress.finish_point();
                ctx.tally.reused += 1;
                out.push(s);
            }
            continue;
        }
        let mut written: Vec<PathBuf> = Vec::new();
        for (k, (s, p, file, meta)) in named.into_iter().enumerate() {
            if ctx.interrupted {
                break;
            }
            ctx.progress
                .start_point(&format!("{} {}", s.id, meta.point_label()));
            let pj = s.build(&p, base)?;
            let mut rec = super::run_point(&pj, meta, ctx)?;
            if k == 0 {
                written = pj.job.targets.clone();
            }
            if let Record::Run { result, meta } = &mut rec {
                attach_extents(result, &pj.job.targets);
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
        // The next group writes a fresh set of files.
        // (Only files this run created: a target that existed before is never in `created`.)
        for f in written {
            ctx.remove_created_path(&f);
        }
    }
    Ok(out)
}
