//! fsbench: a file-system and storage I/O benchmark, heir to VERITAS vxbench and Filebench.
//!
//! This crate is the command line and the front ends (`cli`, `vx`, `fio`, `fscompare`) on
//! top of the others: `fsbench-core` (jobs, the runner and its engines, sources, statistics,
//! the Result), `fsbench-filebench` (the workload language), `fsbench-report` (the only
//! place that formats) and, with the `mpi` feature, `fsbench-mpi` (the MPI executor). Front
//! ends build [`job::Job`]s; only the [`runner`] does I/O; only the [`report`] layer formats.
//! A [`result::RunResult`] can be stored and re-rendered later.
#![warn(unreachable_pub)]

pub(crate) mod cli;
pub(crate) mod fio;
pub(crate) mod fscompare;
pub(crate) mod vx;

// The lower crates' modules under the names the code above (and the integration tests)
// uses: `crate::job::Job` is the core's.
pub(crate) use fsbench_core::{
    ab, engine, exec, explain, guard, io500, ior, job, leftover, mdtest, observe, output, reorg,
    result, runner, safety, stats, sweep, units, verify,
};
pub use fsbench_core::{advise, error, probe, replay, trace, workload};
pub(crate) use fsbench_core::{bail_usage, usage};
#[cfg(feature = "mpi")]
pub(crate) use fsbench_mpi as mpi;
pub(crate) use fsbench_report as report;

/// The command line, for `main`: parse, dispatch, exit codes.
pub use cli::main_with_exit_code;
