//! Where each rank of a distributed run does its I/O: its own file in a directory of its own
//! (`--file-per-rank`), or a part of one shared file (`--shared-file segmented|strided`), and
//! whose data it reads with `--reorder-ranks`. Pure functions of the spec, the rank and the
//! number of ranks, so every rank computes the same layout without asking the others.

use crate::error::UsageError;
/// The file-per-rank names, which the core's scratch files of `advise` follow too.
pub(crate) use crate::exec::{parent_dir, rank_dir, rank_file};
use crate::runner::RankPart;
use crate::usage;
use fsbench_core::job::Job;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How the ranks share the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// PATH.d/rank-NNNNN/NAME for each rank; `--size` is each rank's file.
    FilePerRank,
    /// One file; rank r of N covers bytes [r*S/N, (r+1)*S/N) (rounded down to whole I/Os).
    SharedSegmented,
    /// One file; rank r covers I/O-sized blocks r, r+N, r+2N, ... (IOR's transfer interleave).
    SharedStrided,
}

impl Layout {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Layout::FilePerRank => "file_per_rank",
            Layout::SharedSegmented => "shared_segmented",
            Layout::SharedStrided => "shared_strided",
        }
    }
}

/// When the ranks are stopped before their work is done.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stonewall {
    /// Every rank stops when the first one has finished its work.
    FirstFinish,
    /// Every rank stops this many seconds after the start barrier.
    Time(f64),
}

/// Everything rank 0 decided and sends to every rank: the Job and how it is spread.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DistSpec {
    pub job: Job,
    pub layout: Layout,
    pub reorder: bool,
    pub stonewall: Option<Stonewall>,
    /// Longest wait for the other ranks at a meeting point before the MPI job is aborted.
    pub timeout_s: f64,
    /// `--verify` on a shared file: the block seed rank 0 drew, stamped by every rank
    /// (drawn by rank 0 in `DistPlan::spec`).
    #[serde(default)]
    pub verify_seed: Option<u64>,
    /// What every rank observes beside its run (`--iostat`, `--trace`).
    #[serde(default)]
    pub observe: super::observe::RankObserve,
    /// A sweep's raw point with a file target (`--file-per-rank`): every rank makes a loop
    /// device of this many bytes over a backing file in its own directory and runs on it
    /// (`crate::sweep::rawdev`, the one-host mechanism on each rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_device: Option<u64>,
    /// This rank's own loop device (set on the rank, never sent): its target instead of the
    /// file the layout would give it.
    #[serde(skip)]
    pub rank_device: Option<PathBuf>,
    /// How rank 0 watches its own part (`--progress`, `--status-interval`; never sent: the
    /// other ranks show no line and keep no time series).
    #[serde(skip)]
    pub watch: crate::runner::live::Watching,
}

impl DistSpec {
    /// The checks only a distributed run needs, with the number of ranks known (rank 0).
    pub(crate) fn check(&self, ranks: u32) -> Result<(), UsageError> {
        let job = &self.job;
        if job.targets.is_empty() {
            return Err(usage!(
                "a distributed run takes a target path (each rank derives its file from it)"
            ));
        }
        if job.targets.len() > 1 {
            if self.layout != Layout::FilePerRank {
                return Err(usage!(
                    "a distributed run on a shared file takes one target path; {} were given: use --file-per-rank for several files",
                    job.targets.len()
                ));
            }
            // Each rank keeps its files side by side in its directory, by their names.
            let dir = job.targets[0].parent();
            if job.targets.iter().any(|t| t.parent() != dir) {
                return Err(usage!(
                    "a distributed run on several files takes them in one directory (each rank keeps them side by side in a directory of its own there)"
                ));
            }
            let mut names: Vec<_> = job.targets.iter().map(|t| t.file_name()).collect();
            names.sort();
            if names.iter().any(|n| n.is_none()) || names.windows(2).any(|w| w[0] == w[1]) {
                return Err(usage!(
                    "a distributed run on several files needs a distinct file name for each (each rank keeps them side by side in its directory)"
                ));
            }
        }
        if self.reorder && job.access.read_pct(job.read_pct) != 100 {
            return Err(usage!(
                "--reorder-ranks makes each rank read another rank's data: use --rw read or randread"
            ));
        }
        if job.verifying() && self.reorder {
            return Err(usage!(
                "--verify and --journal check the blocks each rank wrote itself, and --reorder-ranks only reads another rank's: drop --reorder-ranks (verify in the run that writes)"
            ));
        }
        if job.engine == fsbench_core::job::EngineKind::Mmap && self.layout != Layout::FilePerRank {
            return Err(usage!(
                "the mmap engine maps the whole file: use --file-per-rank, or --engine sync/uring with --shared-file"
            ));
        }
        if self.layout != Layout::FilePerRank && (job.mixed_sizes() || job.block_align.is_some()) {
            return Err(usage!(
                "a shared file is split among the ranks in blocks of one size: --bssplit, --bsrange, a per-direction --bs and --block-align take --file-per-rank"
            ));
        }
        if self.layout != Layout::FilePerRank {
            if job.open.append || job.open.trunc {
                return Err(usage!(
                    "--append and --trunc change the whole shared file: use --file-per-rank"
                ));
            }
            let Some(size) = job.file_size else {
                return Err(usage!(
                    "--shared-file needs --size (the whole file, which the ranks divide)"
                ));
            };
            let per_rank = size / job.block_size / ranks as u64;
            if per_rank == 0 {
                return Err(usage!(
                    "--size {size} is less than one --bs {} I/O for each of {ranks} ranks: give a larger --size",
                    job.block_size
                ));
            }
        }
        Ok(())
    }
}

/// How every point of a command is spread over the ranks (the `run` flags `--file-per-rank`,
/// `--shared-file`, `--reorder-ranks`, `--stonewall`, `--mpi-timeout`, parsed once).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DistPlan {
    pub layout: Layout,
    pub reorder: bool,
    /// `reorder` applies to the points that only read; the others write in place (IOR's
    /// `-C` over a write phase and a read phase, `fsbench ior`). Without it a point that
    /// writes is refused with `--reorder-ranks`.
    #[serde(default)]
    pub reorder_reads_only: bool,
    pub stonewall: Option<Stonewall>,
    pub timeout_s: f64,
}

impl DistPlan {
    /// The spec of one Job under this plan, checked for `ranks` ranks.
    pub(crate) fn spec(
        &self,
        job: fsbench_core::job::Job,
        ranks: u32,
    ) -> Result<DistSpec, crate::error::UsageError> {
        let reads_only = job.access.read_pct(job.read_pct) == 100;
        let spec = DistSpec {
            job,
            layout: self.layout,
            reorder: self.reorder && (reads_only || !self.reorder_reads_only),
            stonewall: self.stonewall,
            timeout_s: self.timeout_s,
            verify_seed: None,
            observe: Default::default(),
            loop_device: None,
            rank_device: None,
            watch: Default::default(),
        };
        spec.check(ranks)?;
        // A verifying point on a shared file: one block seed, drawn here, stamped by every rank.
        let mut spec = spec;
        spec.verify_seed = shared_seed(&spec);
        Ok(spec)
    }

    pub(crate) fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.timeout_s)
    }
}

/// Rank `rank`'s journal for `--journal J`: J.rank-NNNNN.
pub(crate) fn rank_journal(journal: &Path, rank: u32) -> PathBuf {
    let mut s = journal.as_os_str().to_os_string();
    s.push(format!(".rank-{rank:05}"));
    PathBuf::from(s)
}

/// The block seed of a verifying run on a shared file, drawn once on rank 0 (None for
/// file-per-rank, where each rank's file has a seed of its own, and without verification).
pub(crate) fn shared_seed(spec: &DistSpec) -> Option<u64> {
    (spec.job.verifying() && spec.layout != Layout::FilePerRank)
        .then(|| crate::runner::worker::verify::block_seed(spec.job.seed))
}

/// Rank `rank`'s files of a Job on several targets (file per rank): every target's name in
/// the rank's directory of the first target, PATH.d/rank-NNNNN/NAME_k.
pub(crate) fn rank_files(targets: &[PathBuf], rank: u32) -> Vec<PathBuf> {
    let Some(first) = targets.first() else {
        return Vec::new();
    };
    let dir = rank_dir(first, rank);
    targets
        .iter()
        .map(|t| match t.file_name() {
            Some(name) => dir.join(name),
            None => rank_file(first, rank),
        })
        .collect()
}

/// The most shifts `reorder_shift` tries: a host with more ranks than this is not a placement
/// anyone runs, and the search stays O(ranks) per shift.
const MAX_SHIFT_TRIED: usize = 1024;

/// How many places on a rank reads with `--reorder-ranks`: the smallest shift for which the
/// fewest ranks read data their own host wrote. Ranks filled host by host (mpirun's by-slot
/// placement) give the ranks per host; ranks dealt round-robin (`--map-by node`) give 1; IOR's
/// `-C` picks between those two by where rank 1 runs, so with other placements some of its
/// ranks read their own host's data. When every rank is on one host no shift can avoid that, so 1:
/// each rank still reads another rank's data (the client-cache note says so).
pub(crate) fn reorder_shift(hosts: &[String]) -> u32 {
    let mut ids: Vec<usize> = Vec::with_capacity(hosts.len());
    let mut names: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for h in hosts {
        let next = names.len();
        ids.push(*names.entry(h.as_str()).or_insert(next));
    }
    let n = ids.len();
    let own_host = |s: usize| (0..n).filter(|&r| ids[r] == ids[(r + s) % n]).count();
    let mut best = (usize::MAX, 1);
    for s in 1..n.min(MAX_SHIFT_TRIED + 1) {
        let k = own_host(s);
        if k < best.0 {
            best = (k, s);
            if k == 0 {
                break;
            }
        }
    }
    best.1 as u32
}

/// The rank whose data rank `rank` reads (itself without reordering).
pub(crate) fn source_rank(rank: u32, ranks: u32, shift: Option<u32>) -> u32 {
    match shift {
        Some(s) => (rank + s) % ranks.max(1),
        None => rank,
    }
}

/// The part of a shared file that the data of rank `owner` occupies.
pub(crate) fn shared_part(layout: Layout, size: u64, bs: u64, owner: u32, ranks: u32) -> RankPart {
    let n = ranks.max(1) as u64;
    let blocks_per_rank = size / bs / n;
    match layout {
        Layout::SharedStrided => RankPart {
            base: 0,
            stride: n,
            lane: owner as u64,
            blocks: blocks_per_rank,
            shared: true,
            created_ino: None,
            verify_seed: None,
            run_lock: false,
        },
        _ => RankPart {
            base: owner as u64 * blocks_per_rank * bs,
            stride: 1,
            lane: 0,
            blocks: blocks_per_rank,
            shared: true,
            created_ino: None,
            verify_seed: None,
            run_lock: false,
        },
    }
}

/// The Job rank `rank` runs (its target) and, on a shared file, its part of it.
pub(crate) fn rank_job(
    spec: &DistSpec,
    rank: u32,
    ranks: u32,
    shift: Option<u32>,
) -> (Job, Option<RankPart>) {
    let mut job = spec.job.clone();
    let mut part = None;
    let source = source_rank(rank, ranks, shift);
    match spec.layout {
        Layout::FilePerRank => {
            job.targets = match &spec.rank_device {
                Some(dev) => vec![dev.clone()],
                None => rank_files(&spec.job.targets, source),
            };
        }
        layout => {
            let size = spec.job.file_size.unwrap_or(0);
            part = Some(shared_part(layout, size, job.block_size, source, ranks));
        }
    }
    // Each rank draws its own random offsets.
    job.seed ^= (rank as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // --journal J: each rank its own journal, J.rank-NNNNN; on a shared file one block seed.
    if let Some(j) = &spec.job.journal {
        job.journal = Some(rank_journal(j, rank));
    }
    if let Some(p) = &mut part {
        p.run_lock = rank == 0;
        p.verify_seed = spec.verify_seed;
    }
    (job, part)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_rank_journals_to_its_own_file() {
        assert_eq!(
            rank_journal(Path::new("/j/run.journal"), 3),
            PathBuf::from("/j/run.journal.rank-00003")
        );
        assert_ne!(
            rank_journal(Path::new("j"), 1),
            rank_journal(Path::new("j"), 10)
        );
    }

    fn offsets(part: RankPart, bs: u64) -> Vec<u64> {
        (0..part.blocks)
            .map(|k| part.base + (k * part.stride + part.lane) * bs)
            .collect()
    }

    proptest! {
        /// Every layout gives each rank whole I/Os inside the file, and no two ranks the same
        /// byte: together the ranks cover exactly blocks_per_rank x N blocks.
        #[test]
        fn parts_are_disjoint_and_inside(size_k in 1u64..100_000, bs_k in 1u64..64, n in 1u32..40,
                                         strided: bool) {
            let bs = bs_k * 1024;
            let size = size_k * 1024;
            prop_assume!(size / bs / n as u64 > 0);
            let layout = if strided { Layout::SharedStrided } else { Layout::SharedSegmented };
            let mut all = Vec::new();
            for r in 0..n {
                let p = shared_part(layout, size, bs, r, n);
                for o in offsets(p, bs) {
                    prop_assert!(o + bs <= size, "{} + {} > {}", o, bs, size);
                    prop_assert_eq!(o % bs, 0);
                    all.push(o);
                }
            }
            let count = all.len();
            all.sort_unstable();
            all.dedup();
            prop_assert_eq!(all.len(), count);
            prop_assert_eq!(count as u64, size / bs / n as u64 * n as u64);
        }
    }

    fn spec(layout: Layout) -> DistSpec {
        let job = Job {
            targets: vec![PathBuf::from("s")],
            file_size: Some(4 << 20),
            block_size: 65536,
            access: fsbench_core::job::Access::Write,
            ..Default::default()
        };
        DistSpec {
            job,
            layout,
            reorder: false,
            stonewall: None,
            timeout_s: 60.0,
            verify_seed: None,
            observe: Default::default(),
            loop_device: None,
            rank_device: None,
            watch: Default::default(),
        }
    }

    #[test]
    fn verify_and_stonewalled_processes_are_accepted_but_verify_with_reorder_is_not() {
        let mut s = spec(Layout::SharedStrided);
        s.job.verify = true;
        s.job.journal = Some(PathBuf::from("J"));
        s.job.workers = fsbench_core::job::WorkerMode::ProcessPerThread;
        s.stonewall = Some(Stonewall::FirstFinish);
        assert!(s.check(4).is_ok());
        s.reorder = true;
        s.job.access = fsbench_core::job::Access::Read;
        let e = s.check(4).unwrap_err();
        assert!(e.0.contains("drop --reorder-ranks"), "{e}");
    }

    /// `fsbench ior -C`: the plan reorders the points that only read; a point that writes
    /// runs in place. Without `reorder_reads_only` (`--reorder-ranks` of run, sweep) a
    /// writing point is still refused.
    #[test]
    fn reorder_for_reads_only_lets_the_write_run_in_place() {
        let mut plan = DistPlan {
            layout: Layout::FilePerRank,
            reorder: true,
            reorder_reads_only: true,
            stonewall: None,
            timeout_s: 60.0,
        };
        let write = spec(Layout::FilePerRank).job;
        let mut read = write.clone();
        read.access = fsbench_core::job::Access::Read;
        assert!(!plan.spec(write.clone(), 4).unwrap().reorder);
        assert!(plan.spec(read, 4).unwrap().reorder);
        plan.reorder_reads_only = false;
        let e = plan.spec(write, 4).unwrap_err();
        assert!(e.0.contains("use --rw read"), "{e}");
    }

    /// Several targets: with a file per rank each rank keeps every one, by its name, in its
    /// own directory of the first target; on a shared file only one target is accepted.
    #[test]
    fn several_targets_lie_side_by_side_in_each_ranks_directory() {
        let mut s = spec(Layout::FilePerRank);
        s.job.targets = vec![PathBuf::from("/d/a.dat"), PathBuf::from("/d/a.dat.1")];
        assert!(s.check(4).is_ok());
        assert_eq!(
            rank_job(&s, 2, 4, None).0.targets,
            vec![
                PathBuf::from("/d/a.dat.d/rank-00002/a.dat"),
                PathBuf::from("/d/a.dat.d/rank-00002/a.dat.1")
            ]
        );
        s.job.targets.push(PathBuf::from("/d/a.dat.1"));
        let e = s.check(4).unwrap_err();
        assert!(e.0.contains("distinct file name"), "{e}");
        s.job.targets[2] = PathBuf::from("/e/a.dat.2");
        let e = s.check(4).unwrap_err();
        assert!(e.0.contains("in one directory"), "{e}");
        let mut s = spec(Layout::SharedSegmented);
        s.job.targets.push(PathBuf::from("t"));
        let e = s.check(4).unwrap_err();
        assert!(e.0.contains("use --file-per-rank"), "{e}");
    }

    /// A rank's own loop device (a raw point on ranks) is its target instead of its file.
    #[test]
    fn a_ranks_own_device_replaces_its_file() {
        let mut s = spec(Layout::FilePerRank);
        s.job.targets = vec![PathBuf::from("/d/f")];
        assert_eq!(
            rank_job(&s, 1, 4, None).0.targets,
            vec![PathBuf::from("/d/f.d/rank-00001/f")]
        );
        s.loop_device = Some(1 << 20);
        s.rank_device = Some(PathBuf::from("/dev/loop7"));
        let (j, part) = rank_job(&s, 1, 4, None);
        assert_eq!(j.targets, vec![PathBuf::from("/dev/loop7")]);
        assert_eq!(part, None);
        // Sent to the other ranks: the size of the devices to make, never this rank's device.
        let sent: DistSpec = serde_json::from_slice(&serde_json::to_vec(&s).unwrap()).unwrap();
        assert_eq!((sent.loop_device, sent.rank_device), (Some(1 << 20), None));
    }

    #[test]
    fn each_rank_gets_its_journal_and_a_shared_file_one_seed() {
        let mut s = spec(Layout::SharedSegmented);
        s.job.journal = Some(PathBuf::from("/j/J"));
        s.verify_seed = Some(42);
        let (a, pa) = rank_job(&s, 1, 4, None);
        let (b, pb) = rank_job(&s, 3, 4, None);
        assert_eq!(a.journal, Some(PathBuf::from("/j/J.rank-00001")));
        assert_eq!(b.journal, Some(PathBuf::from("/j/J.rank-00003")));
        assert_eq!(pa.unwrap().verify_seed, Some(42));
        assert_eq!(pb.unwrap().verify_seed, Some(42));
        let (f, pf) = rank_job(&spec(Layout::FilePerRank), 2, 4, None);
        assert_eq!((f.journal, pf), (None, None));
    }

    #[test]
    fn strided_interleaves_like_ior() {
        let p = shared_part(Layout::SharedStrided, 8 << 20, 1 << 20, 1, 4);
        assert_eq!(offsets(p, 1 << 20), vec![1 << 20, 5 << 20]);
        let p = shared_part(Layout::SharedSegmented, 8 << 20, 1 << 20, 1, 4);
        assert_eq!(offsets(p, 1 << 20), vec![2 << 20, 3 << 20]);
    }

    #[test]
    fn reorder_reads_another_hosts_data() {
        let h = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(reorder_shift(&h(&["a", "a", "b", "b"])), 2);
        assert_eq!(reorder_shift(&h(&["a", "b", "c"])), 1);
        assert_eq!(reorder_shift(&h(&["a", "a", "a"])), 1);
        assert_eq!(reorder_shift(&h(&["a"])), 1);
        // Filled host by host: the ranks per host; dealt round-robin: 1 (the old rule, ranks
        // on rank 0's host, gave 2 here and every rank read its own host's data).
        assert_eq!(reorder_shift(&h(&["a", "a", "a", "b", "b", "b"])), 3);
        assert_eq!(reorder_shift(&h(&["a", "b", "a", "b"])), 1);
        assert_eq!(reorder_shift(&h(&["a", "b", "c", "a", "b", "c"])), 1);
        // Uneven hosts: the shift that avoids every own-host read where there is one (3 here,
        // not the 2 ranks on rank 0's host), else the smallest of those with the fewest.
        assert_eq!(reorder_shift(&h(&["a", "a", "b", "b", "b", "c"])), 3);
        assert_eq!(reorder_shift(&h(&["a", "a", "a", "b"])), 1);
        assert_eq!(source_rank(3, 4, Some(2)), 1);
        assert_eq!(source_rank(3, 4, None), 3);
        assert_eq!(
            rank_file(Path::new("/m/f"), 3),
            PathBuf::from("/m/f.d/rank-00003/f")
        );
    }
}
