//! IO500's find phase on MPI ranks (`mpirun ... fsbench io500`): every rank walks the run's
//! directory and looks at its share of every directory's entries (`crate::io500::find`,
//! [`Share`]: the entries whose name hashes to it), all starting at the executor's one start
//! barrier. Each rank sends rank 0 its entries looked at (its `other_ops`, with their
//! latencies), those it matched and its walk's start and end on the barrier clock; rank 0
//! merges them the way every run on ranks is merged: every rank's entries over the time from
//! the first start to the last end, which is the slowest rank's walk (IO500's find rate:
//! every entry looked at over the time of the whole parallel walk).

use super::aggregate::{self, RankRecord, ThreadRecord};
use super::executor::{self, Distributed, LocalRun, Settings, Timing};
use super::{Ending, World};
use crate::io500::find::{self, End, Query, Share, Walked};
use crate::result::{GroupReport, Io500FindRank, Kind, RunResult, RunStatus};
use crate::runner::issue::Issuer;
use crate::runner::IoFailure;
use crate::stats::StatsReport;
use serde::{Deserialize, Serialize};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::Duration;

/// What rank 0 sends every rank: the directory to walk (the run's, which every rank sees)
/// and the expression.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FindSpec {
    pub top: PathBuf,
    pub query: Query,
    pub timeout_s: f64,
}

/// This rank's part of the find phase; rank 0 gets the one Result and every rank's part.
pub(crate) fn run(world: &World, spec: &FindSpec) -> anyhow::Result<(Ending, Vec<Io500FindRank>)> {
    let settings = Settings {
        timeout: Duration::from_secs_f64(spec.timeout_s),
        stonewall: None,
        observe: Default::default(),
        watch: Default::default(),
        barrier: " of the find phase".into(),
        agree: None,
    };
    let mut kind = FindOnRanks {
        spec,
        share: Share {
            rank: world.rank,
            ranks: world.size,
        },
        top: None,
        parts: Vec::new(),
    };
    let ending = executor::execute(world, &mut kind, &settings)?;
    Ok((ending, kind.parts))
}

struct FindOnRanks<'a> {
    spec: &'a FindSpec,
    share: Share,
    /// The run's directory, opened in the preparation, handed to the walk.
    top: Option<OwnedFd>,
    /// Rank 0: every rank's part, once merged.
    parts: Vec<Io500FindRank>,
}

impl Distributed for FindOnRanks<'_> {
    type Out = Walked;

    fn prepare(&mut self, _: &World, _: &[String], _: &mut RankRecord) -> anyhow::Result<()> {
        let fd = fsbench_core::mdtest::open_dir(&self.spec.top).map_err(|e| {
            anyhow::anyhow!(
                "opening {}: {e} (every rank must see the run's directory)",
                self.spec.top.display()
            )
        })?;
        self.top = Some(fd);
        Ok(())
    }

    fn targets(&self, _rank: u32) -> Vec<String> {
        vec![self.spec.top.display().to_string()]
    }

    /// The walk on the run thread, through an engine of its own, started by the barrier.
    fn launch(&mut self) -> LocalRun<Walked> {
        let top = self.top.take();
        let query = self.spec.query.clone();
        let share = self.share;
        Box::new(move |gates, _| {
            let top = top.ok_or_else(|| anyhow::anyhow!("the run's directory is not open"))?;
            let engine = Issuer::sync_engine(1, 1, 4096, 0x0066_696e_6400)?;
            let mut io = Issuer::new(engine, 1, None);
            let gate = gates();
            if !(gate.start)(crate::runner::drive::Opener::none()) {
                anyhow::bail!("called off: another rank could not start the find phase");
            }
            let walked = find::walk(&mut io, top.as_raw_fd(), &query, share);
            (gate.after_io)();
            Ok(walked)
        })
    }

    fn record(&mut self, out: Walked, timing: &Timing, rec: &mut RankRecord) {
        let on_clock = |ns: u64| ns.saturating_sub(timing.t0_ns) as f64 / 1e9;
        let s = &out.stats;
        if s.loop_end_ns != 0 {
            rec.start_s = on_clock(s.loop_start_ns);
            rec.end_s = on_clock(s.loop_end_ns).max(rec.start_s);
        } else {
            rec.end_s = timing.end_s();
        }
        match out.end {
            End::Done => {}
            End::Stopped => rec.status = RunStatus::Partial,
            End::Failed(message) => {
                rec.failures.push(IoFailure {
                    user: 0,
                    thread: 0,
                    path: self.spec.top.display().to_string(),
                    offset: None,
                    message,
                });
                rec.status = RunStatus::Failed;
            }
        }
        rec.started_unix_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() - (rec.end_s - rec.start_s));
        rec.find_matched = Some(out.matched);
        rec.threads.push(ThreadRecord {
            user: 0,
            thread: 0,
            stats: out.stats,
            failure: None,
            verify: None,
        });
    }

    /// Every rank's entries summed exactly, over the first start to the last end; each
    /// rank's part kept for the IO500 Result.
    fn merge(&mut self, records: &[RankRecord]) -> anyhow::Result<RunResult> {
        let total = aggregate::total(records);
        let started = records.first().map_or(0.0, |r| r.started_unix_s);
        let mut result = RunResult::new(Kind::Io500, "find", started, Default::default());
        result.total = StatsReport::from_stats(&total, true);
        result.groups.push(GroupReport {
            name: "find".into(),
            op: "find".into(),
            run: None,
            stats: StatsReport::from_stats(&total, false),
        });
        super::mdtest::rank_failures(&mut result, records);
        self.parts = records
            .iter()
            .filter(|r| r.ran())
            .map(|r| Io500FindRank {
                rank: r.rank,
                looked: r.stats().other_ops,
                matched: r.find_matched.unwrap_or(0),
                time_s: (r.end_s - r.start_s).max(0.0),
            })
            .collect();
        Ok(result)
    }

    fn layout(&self) -> (&'static str, Option<u32>) {
        ("shared_dir", None)
    }
}
