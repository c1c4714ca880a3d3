//! fsbench: a file-system and storage I/O benchmark, heir to VERITAS vxbench and Filebench.
//!
//! Front ends (`cli`, `vx`) build [`job::Job`]s; only the [`runner`] does I/O; only the
//! [`report`] layer formats. A [`result::RunResult`] can be stored and re-rendered later.

pub mod advise;
pub mod cli;
pub mod engine;
pub mod error;
pub mod guard;
pub mod job;
pub mod observe;
pub mod output;
pub mod probe;
pub mod report;
pub mod result;
pub mod runner;
pub mod safety;
pub mod stats;
pub mod sweep;
pub mod trace;
pub mod units;
pub mod verify;
pub mod vx;
pub mod workload;
