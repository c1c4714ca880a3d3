//! The core of fsbench: what a run is and how it is done. Front ends build [`job::Job`]s (or
//! load a workload, a trace, a study); only the [`runner`] and its [`engine`]s do I/O; a run's
//! [`stats`] and its environment become a [`result::RunResult`], which the report layer (the
//! `fsbench-report` crate) formats. Nothing here knows the command line, the report layer or
//! MPI: those crates depend on this one, never the reverse, and a distributed run reaches the
//! core through [`exec::Ranks`].
#![warn(unreachable_pub)]

pub mod ab;
pub mod advise;
pub mod backup;
pub mod engine;
pub mod error;
pub mod exec;
pub mod explain;
pub mod guard;
pub mod io500;
pub mod ior;
pub mod job;
pub mod leftover;
pub mod mdtest;
pub mod observe;
pub mod output;
pub mod probe;
pub mod reorg;
pub mod replay;
pub mod result;
pub mod runner;
pub mod safety;
pub mod stats;
pub mod sweep;
pub(crate) mod sys;
pub mod trace;
pub mod units;
pub mod verify;
pub mod workload;
