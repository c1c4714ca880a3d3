//! IO500 on MPI ranks (`mpirun ... fsbench io500`): rank 0 runs the twelve phases in IO500's
//! order, each one distributed run of an existing kind on every rank (`crate::exec::Ranks`):
//! the ior phases are Jobs spread over the ranks (ior-easy a file per rank, ior-hard one
//! shared file of 47,008-byte transfers interleaved by rank), the mdtest phases are mdtest's
//! phases on ranks (mdtest-easy a tree per rank, mdtest-hard one shared tree), and each
//! phase's figure is its merged Result's; find is every rank walking the run's directory and
//! looking at its share of each directory's entries (`super::find::Share`), merged the same
//! way. The phases know nothing of ranks.
//!
//! Stonewalling: every rank's write phase stops at the stonewall time after the phase's
//! start barrier; the ranks did not all do the same amount, so the phases after it work on
//! the least any rank did (every rank's share of that much exists). The read and stat phases
//! work on what another rank wrote (the ior reads with the ranks shifted as `--reorder-ranks`
//! shifts them, the mdtest stat and read phases with mdtest's `-N 1`), so no rank reads from
//! its own client cache what it just wrote, when the ranks are on several hosts.

use super::{ior_job, settle_status, Measured, GIB};
use crate::exec::{Ranks, Spread};
use crate::job::Access::Read;
use crate::mdtest::phase::Op;
use crate::result::RunResult;
use anyhow::Result;
use std::path::Path;

/// The run on the ranks: every phase's figures and the state it ended in.
pub(super) struct OnRanks<'a> {
    pub ranks: &'a dyn Ranks,
    pub measured: Vec<Measured>,
    pub failure: Option<String>,
    pub interrupted: bool,
    pub notes: Vec<String>,
    /// The hosts the ranks ran on (from the first phase's Result).
    pub hosts: usize,
    /// Each rank's part of the find phase.
    pub find_ranks: Vec<crate::result::Io500FindRank>,
}

/// One mdtest phase on the ranks: which items, where, and what it does.
pub(super) struct MdPhase<'a> {
    pub name: &'static str,
    pub op: Op,
    /// The tree's directory (made by rank 0, removed with the run's directory).
    pub dir: &'a Path,
    /// A tree per rank (mdtest-easy) or one every rank shares (mdtest-hard).
    pub tree_per_rank: bool,
    /// Items per rank.
    pub items: u64,
    /// Bytes written to (and read from) each file.
    pub bytes: u64,
    pub stonewall_s: u64,
}

impl OnRanks<'_> {
    pub(super) fn stopped(&self) -> bool {
        self.failure.is_some() || self.interrupted
    }

    /// Take the state a phase's Result ended in.
    fn settle(&mut self, name: &str, r: &RunResult) {
        settle_status(&mut self.failure, &mut self.interrupted, name, r);
        if self.hosts == 0 {
            self.hosts = r.hosts.len();
        }
    }

    /// An ior phase, `job` spread over the ranks: the least bytes any rank did (0 when it
    /// did not run).
    pub(super) fn ior(
        &mut self,
        name: &'static str,
        op: &'static str,
        job: &crate::job::Job,
        spread: Spread,
    ) -> u64 {
        if self.stopped() {
            return 0;
        }
        let r = match self.ranks.run_job_spread(job, &spread) {
            Ok(r) => r,
            Err(e) => {
                self.failure = Some(format!("{name}: {e:#}"));
                return 0;
            }
        };
        self.settle(name, &r);
        let least = r.ranks.iter().map(|row| row.bytes).min().unwrap_or(0);
        // Each rank's share: its file, or its interleaved part of the shared one.
        let size = job.file_size.unwrap_or(0);
        let wanted = if spread.shared_strided {
            size / job.block_size / self.ranks.size().max(1) as u64 * job.block_size
        } else {
            size
        };
        let stonewalled = spread.stonewall_s.is_some()
            && r.ranks.iter().any(|row| row.bytes < wanted)
            && !self.stopped();
        let t = &r.total;
        self.measured.push(Measured {
            name,
            op,
            value: t.bytes_per_sec / GIB,
            stats: t.clone(),
            stonewalled,
            explain: r.explain.clone(),
        });
        least
    }

    /// An mdtest phase on the ranks: the least items any rank did.
    pub(super) fn md(&mut self, p: &MdPhase<'_>) -> u64 {
        if self.stopped() {
            return 0;
        }
        let creating = p.op == Op::FileCreate;
        let opts = crate::mdtest::Options {
            items: Some(p.items),
            unique_dir: p.tree_per_rank,
            dirs: vec![p.dir.to_path_buf()],
            files_only: true,
            create: creating,
            stat: p.op == Op::FileStat,
            read: p.op == Op::FileRead,
            remove: p.op == Op::FileRemove,
            write_bytes: p.bytes,
            read_bytes: if p.op == Op::FileRead { p.bytes } else { 0 },
            // The stat and read phases work on the items of the next rank.
            stride: matches!(p.op, Op::FileStat | Op::FileRead) as u32,
            iterations: 1,
            stonewall_s: if creating { p.stonewall_s } else { 0 },
            keep: true,
            callers_items: !creating,
            ..Default::default()
        };
        let argv = vec![p.name.to_string()];
        let ran = opts
            .plan(self.ranks.size())
            .map_err(anyhow::Error::from)
            .and_then(|plan| self.ranks.run_mdtest_within(&plan, &argv, p.dir));
        let r = match ran {
            Ok(r) => r,
            Err(e) => {
                self.failure = Some(format!("{}: {e:#}", p.name));
                return 0;
            }
        };
        self.settle(p.name, &r);
        let key = p.op.key();
        let stats = r
            .groups
            .iter()
            .find(|g| g.op == key)
            .map(|g| g.stats.clone())
            .unwrap_or_default();
        let least = r
            .mdtest
            .as_ref()
            .map(|m| {
                m.rank_phases
                    .iter()
                    .filter(|rp| rp.op == key)
                    .map(|rp| rp.items)
                    .min()
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        let stonewalled = r.mdtest.as_ref().is_some_and(|m| {
            m.rank_phases
                .iter()
                .any(|rp| rp.op == key && rp.stonewalled)
        });
        let rate = if stats.elapsed_s > 0.0 {
            stats.ops as f64 / stats.elapsed_s
        } else {
            0.0
        };
        self.measured.push(Measured {
            name: p.name,
            op: key,
            value: rate / 1e3,
            stats,
            stonewalled,
            explain: Vec::new(),
        });
        least
    }
}

impl OnRanks<'_> {
    /// The find phase over the run's directory `top`, every rank on its share of the
    /// entries: (matched, looked at) over every rank. Its rate is every entry looked at over
    /// the merged run's time, the first rank's start to the last rank's end.
    pub(super) fn find(&mut self, top: &Path, query: &super::find::Query) -> (u64, u64) {
        if self.stopped() {
            return (0, 0);
        }
        let (r, parts) = match self.ranks.run_find(top, query) {
            Ok(found) => found,
            Err(e) => {
                self.failure = Some(format!("find: {e:#}"));
                return (0, 0);
            }
        };
        self.settle("find", &r);
        let stats = r
            .groups
            .first()
            .map(|g| g.stats.clone())
            .unwrap_or_default();
        let rate = if stats.elapsed_s > 0.0 {
            stats.ops as f64 / stats.elapsed_s
        } else {
            0.0
        };
        self.measured.push(Measured {
            name: "find",
            op: "find",
            value: rate / 1e3,
            stats,
            stonewalled: false,
            explain: Vec::new(),
        });
        let matched = parts.iter().map(|p| p.matched).sum();
        let looked = parts.iter().map(|p| p.looked).sum();
        self.find_ranks = parts;
        (matched, looked)
    }
}

/// An ior phase's Job on the ranks: ior-easy's file (`easy`: each rank's, of `bytes` in
/// `transfer`s) or ior-hard's shared file (`bytes` of each of the `n` ranks, in 47,008-byte
/// transfers interleaved by rank: rank r's segment s at (s*n + r)*47008).
pub(super) fn ior_job_on_ranks(
    top: &Path,
    easy: bool,
    access: crate::job::Access,
    (transfer, bytes): (u64, u64),
    n: u32,
) -> Result<crate::job::Job> {
    let dir = if access == Read { "read" } else { "write" };
    let (name, file, size) = if easy {
        ("ior-easy", top.join("ior-easy/ior_file_easy"), bytes)
    } else {
        let all = bytes.saturating_mul(n as u64);
        ("ior-hard", top.join("ior-hard/IOR_file"), all)
    };
    let mut job = ior_job(&format!("{name}-{dir}"), file, access, transfer, size, None)?;
    // On ranks a Job makes one pass over each rank's file or part (no count of its own).
    job.io_count = None;
    Ok(job)
}
