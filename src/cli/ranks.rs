//! The flags of a distributed run (`mpirun ... fsbench run|sweep|suite|workload|vx|quick|replay ...`)
//! and what a command does when mpirun started it: `run` becomes one rank of the run, and
//! sweep, suite, workload, vx, quick, replay, mdtest, ior, io500 and advise --measure run every point on every rank through [`on_ranks`] (with
//! `--features mpi`); the other commands that do I/O, or a build without MPI, refuse in one
//! line instead of running N independent copies side by side.

use clap::Args;

/// Without MPI the distributed-run flags are left out of the help (still parsed, so that
/// using one says in one line that this build lacks MPI).
const NO_MPI: bool = !cfg!(feature = "mpi");

/// `--file-per-rank`, `--shared-file`, `--reorder-ranks`, `--stonewall`, `--mpi-timeout`.
#[derive(Args, Debug, Default, Clone)]
pub(crate) struct DistArgs {
    /// Each rank its own file, PATH.d/rank-NNNNN/NAME; --size is each rank's file
    #[arg(long = "file-per-rank", help_heading = super::args::MPI, hide = NO_MPI)]
    pub file_per_rank: bool,
    /// All ranks in one file of --size bytes: segmented or strided [default: segmented]
    ///
    /// segmented: rank r does the r-th Nth of the file; strided: blocks of --bs, interleaved
    /// by rank.
    #[arg(
        long = "shared-file",
        value_name = "LAYOUT",
        num_args = 0..=1,
        require_equals = false,
        default_missing_value = "segmented",
        help_heading = super::args::MPI,
        hide = NO_MPI
    )]
    pub shared_file: Option<String>,
    /// Each rank reads the data another rank (on another host) wrote, like IOR's -C
    #[arg(long = "reorder-ranks", help_heading = super::args::MPI, hide = NO_MPI)]
    pub reorder_ranks: bool,
    /// Stop every rank when the first finishes ("first") or DUR after the start barrier
    #[arg(long, value_name = "first|DUR", help_heading = super::args::MPI, hide = NO_MPI)]
    pub stonewall: Option<String>,
    /// Longest wait for the other ranks at a meeting point before aborting [default: 30m]
    #[arg(long = "mpi-timeout", value_name = "DUR", help_heading = super::args::MPI, hide = NO_MPI)]
    pub mpi_timeout: Option<String>,
    /// `--reorder-ranks` for the points that only read, the others in place (`fsbench ior
    /// -C`, whose write phase comes before its read phase); not a flag.
    #[arg(skip)]
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub reorder_reads_only: bool,
}

impl DistArgs {
    /// Any flag of a distributed run given.
    pub(crate) fn any(&self) -> bool {
        self.file_per_rank
            || self.shared_file.is_some()
            || self.reorder_ranks
            || self.stonewall.is_some()
            || self.mpi_timeout.is_some()
    }
}

/// The number of ranks when an MPI launcher (Open MPI, MPICH/Hydra, MVAPICH, PMIx) started
/// this process, from the environment it sets.
pub(crate) fn launched_ranks() -> Option<u32> {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_SIZE",
        "MPI_LOCALNRANKS_WORLD",
        "MV2_COMM_WORLD_SIZE",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// This process's rank when an MPI launcher started it, from the environment it sets.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn launched_rank() -> Option<u32> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "MV2_COMM_WORLD_RANK",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// Refuse a command that cannot run as ranks when mpirun started several of us.
pub(crate) fn refuse_under_mpirun(command: &str) -> Result<(), crate::error::UsageError> {
    match launched_ranks() {
        Some(n) if n > 1 => Err(crate::usage!(
            "fsbench {command} does not run on MPI ranks ({n} were started by mpirun): run, sweep, suite, workload, vx, quick, replay, mdtest, ior, io500 and advise --measure do; start this command without mpirun"
        )),
        _ => Ok(()),
    }
}

/// Run a command that can run on MPI ranks: on this host when mpirun did not start several
/// of us (and no distributed flag was given), else as the driver (rank 0) or a servant of a
/// distributed command (`crate::mpi::drive`), every point of it one distributed run.
pub(crate) fn on_ranks(
    command: &str,
    dist: &DistArgs,
    front: impl FnOnce(crate::exec::Executor) -> anyhow::Result<i32>,
) -> anyhow::Result<i32> {
    let launched = launched_ranks().is_some_and(|n| n > 1);
    if !launched && !dist.any() {
        return front(crate::exec::Executor::Local);
    }
    distributed(command, dist, front)
}

#[cfg(not(feature = "mpi"))]
fn distributed(
    command: &str,
    _dist: &DistArgs,
    _front: impl FnOnce(crate::exec::Executor) -> anyhow::Result<i32>,
) -> anyhow::Result<i32> {
    let why = match launched_ranks() {
        Some(n) if n > 1 => format!("mpirun started {n} copies"),
        _ => {
            "--file-per-rank, --shared-file, --reorder-ranks, --stonewall and --mpi-timeout need it"
                .into()
        }
    };
    crate::bail_usage!(
        "this fsbench was built without MPI ({why}): build it with `cargo build --release --features mpi` and start `fsbench {command}` with mpirun"
    )
}

#[cfg(feature = "mpi")]
fn distributed(
    _command: &str,
    dist: &DistArgs,
    front: impl FnOnce(crate::exec::Executor) -> anyhow::Result<i32>,
) -> anyhow::Result<i32> {
    crate::mpi::drive(
        || plan(dist).map_err(|e| super::one_line(&e.to_string())),
        |exec| {
            // Rank 0 prints its error here, before the ranks' last meeting.
            match front(exec) {
                Ok(code) => code,
                Err(e) => super::error_status(&e),
            }
        },
    )
}

#[cfg(feature = "mpi")]
mod with_mpi {
    use super::DistArgs;
    use crate::mpi::{DistPlan, Layout, Stonewall};

    /// How every point of a command is spread over the ranks.
    pub(crate) fn plan(d: &DistArgs) -> Result<DistPlan, crate::error::UsageError> {
        let layout = match (d.file_per_rank, d.shared_file.as_deref()) {
            (true, Some(_)) => {
                crate::bail_usage!("--file-per-rank and --shared-file are two layouts: give one")
            }
            (true, None) | (false, None) => Layout::FilePerRank,
            (false, Some("segmented")) => Layout::SharedSegmented,
            (false, Some("strided")) => Layout::SharedStrided,
            (false, Some(other)) => crate::bail_usage!(
                "unknown --shared-file layout '{other}': expected segmented or strided"
            ),
        };
        let stonewall = match d.stonewall.as_deref() {
            None => None,
            Some("first") => Some(Stonewall::FirstFinish),
            Some(t) => Some(Stonewall::Time(
                crate::units::parse_duration(t)
                    .map_err(|e| {
                        crate::usage!("bad --stonewall '{t}': expected first or a duration; {e}")
                    })?
                    .as_secs_f64(),
            )),
        };
        let timeout_s = match d.mpi_timeout.as_deref() {
            None => 1800.0,
            Some(t) => {
                let s = crate::units::parse_duration(t)
                    .map_err(|e| crate::usage!("bad --mpi-timeout '{t}': {e}"))?
                    .as_secs_f64();
                if s < 1.0 {
                    crate::bail_usage!("bad --mpi-timeout {t}: must be at least 1s");
                }
                s
            }
        };
        Ok(DistPlan {
            layout,
            reorder: d.reorder_ranks,
            reorder_reads_only: d.reorder_reads_only,
            stonewall,
            timeout_s,
        })
    }
}

#[cfg(feature = "mpi")]
pub(crate) use with_mpi::plan;
