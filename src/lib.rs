//! fsbench: a file-system and storage I/O benchmark, heir to VERITAS vxbench and Filebench.
//!
//! Front ends (`cli`, `vx`) build [`job::Job`]s; only the [`runner`] does I/O; only the
//! [`report`] layer formats. A [`result::RunResult`] can be stored and re-rendered later.
#![warn(unreachable_pub)]

pub(crate) mod ab;
pub mod advise;
pub(crate) mod backup;
pub(crate) mod cli;
pub(crate) mod engine;
pub mod error;
pub(crate) mod exec;
pub(crate) mod explain;
pub(crate) mod fio;
pub(crate) mod fscompare;
pub(crate) mod guard;
pub(crate) mod io500;
pub(crate) mod ior;
pub(crate) mod job;
pub(crate) mod leftover;
pub(crate) mod mdtest;
#[cfg(feature = "mpi")]
pub(crate) mod mpi;
pub(crate) mod observe;
pub(crate) mod output;
pub mod probe;
pub(crate) mod reorg;
pub mod replay;
pub(crate) mod report;
pub(crate) mod result;
pub(crate) mod runner;
pub(crate) mod safety;
pub(crate) mod stats;
pub(crate) mod sweep;
pub(crate) mod sys;
pub mod trace;
pub(crate) mod units;
pub(crate) mod verify;
pub(crate) mod vx;
pub mod workload;

/// The command line, for `main`: parse, dispatch, exit codes.
pub use cli::main_with_exit_code;
