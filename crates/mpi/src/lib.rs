//! Distributed runs on MPI (built with `--features mpi`). Started by mpirun, each fsbench
//! process is one rank of one command: rank 0 runs the command's front end with the ranks'
//! executor and sends every point of it to the other ranks (`serve`). MPI is one executor
//! (`executor`) beside running on one host: it distributes any kind of run (a Job
//! (`job`), a Filebench workload (`workload`), a trace replay (`replay`), a backup
//! study's phase (`backup`), mdtest's phases (`mdtest`), IO500's find (`find`)), each rank running its part through the same code as on one
//! host; all start at one MPI barrier, whose exit is every rank's clock zero, a stonewall can
//! stop every rank when the first finishes or at a fixed time, and each rank then sends rank 0
//! its exact counts, from which rank 0 builds the one Result (`aggregate`). The runs know
//! nothing of ranks: a rank's share of a file or fileset is a parameter the executor sets on
//! the run it hands out ([`layout`]).

#![warn(unreachable_pub)]

mod aggregate;
mod backup;
mod comm;
mod executor;
mod find;
mod job;
pub mod layout;
pub(crate) mod mdtest;
mod observe;
mod replay;
mod serve;
mod verify;
mod workload;

pub(crate) use comm::World;
pub use layout::{DistPlan, Layout, Stonewall};
pub(crate) use observe::RankObserve;
pub use serve::drive;

// The core's modules, under the names the executor's code uses (those whose names its
// own modules take are named fsbench_core::job and so on).
use fsbench_core::{bail_usage, usage};
use fsbench_core::{
    error, exec, explain, guard, io500, leftover, result, runner, safety, stats, sweep, trace,
};

use crate::result::RunResult;
use std::path::Path;
use std::time::Duration;

/// How long ranks wait for rank 0's spec (before the user's `--mpi-timeout` is known).
const SPEC_TIMEOUT: Duration = Duration::from_secs(600);

/// How a rank's part ends.
pub(crate) enum Ending {
    /// Rank 0: the Result of the whole run.
    Result(Box<RunResult>),
    /// Rank 0: the run could not start; the refusal (usage: exit status 2) naming the rank.
    Refused { usage: bool, message: String },
    /// Any other rank: its exit status (its own refusal 2, its own failure 1, else 0).
    Done(i32),
}

/// An error as one line (a rank's message goes into one row of the Result).
fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}").replace(['\n', '\r'], " ")
}

/// Create a directory of the run, marked as this run's (`crate::leftover`); true when this
/// call made it, or took it over from a run that was killed (this run removes it when done,
/// once empty). Any other existing directory (not a symbolic link) is used as it is.
fn make_dir(p: &Path) -> anyhow::Result<bool> {
    match crate::leftover::make_marked_dir(p) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => match crate::leftover::take_over_dir(p) {
                    Some(note) => {
                        runner::say(&format!("fsbench: note: {note}"));
                        Ok(true)
                    }
                    None => Ok(false),
                },
                _ => crate::bail_usage!(
                    "{} exists and is not a directory: fsbench keeps each rank's file in a directory there; name another path",
                    p.display()
                ),
            }
        }
        Err(e) => crate::bail_usage!("cannot create directory {}: {e}", p.display()),
    }
}

/// A command every rank runs on its own, with nothing to merge (`fsbench trace -- CMD` under
/// mpirun: each rank captures its own command): `f(rank)` gives this rank's exit status and
/// one line. Rank 0 gets every rank's line in rank order (naming the rank and its host) once
/// all are done, waiting for them at most `wait`, and the worst status of the ranks; the
/// other ranks their own status and no lines.
pub fn each_rank(
    wait: Duration,
    f: impl FnOnce(u32) -> (i32, String),
) -> anyhow::Result<(i32, Vec<String>)> {
    let world = World::init()?;
    let (code, line) = f(world.rank);
    let bytes = serde_json::to_vec(&(code, &world.host, line))?;
    let mut status = code;
    let mut lines = Vec::new();
    if let Some(all) = world.gather("collecting every rank's line", wait, &bytes) {
        for (rank, b) in all.iter().enumerate() {
            let (c, host, line): (i32, String, String) = serde_json::from_slice(b)?;
            lines.push(format!("rank {rank} on {host}: {line}"));
            if c != 0 && (status == 0 || c > status) {
                status = c;
            }
        }
    }
    world.meet("the end of the run", Duration::from_secs(600));
    Ok((status, lines))
}
