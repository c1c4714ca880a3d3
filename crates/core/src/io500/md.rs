//! IO500's metadata phases on mdtest's phase sources (`crate::mdtest::phase`): each IO500
//! phase is one mdtest phase (file creation, stat, read, removal) over one tree of one
//! directory, driven by the runner's loop through the run's one [`Issuer`]. IO500 runs them
//! interleaved with the ior phases, so they are driven one at a time here rather than as
//! mdtest's fixed sequence of an iteration.

use crate::mdtest::phase::{End, Op, Phase, Tree, Work};
use crate::runner::issue::Issuer;
use crate::runner::pace::StepPacing;
use crate::runner::source::{self, Drive};
use crate::stats::Stats;
use std::os::fd::RawFd;
use std::time::Duration;

/// One of IO500's two mdtest trees: its test directory (open) and how its files are made.
pub(crate) struct MdTree {
    pub base: RawFd,
    pub tree: Tree,
    /// Bytes written into (and read back from) each file: 0 (easy) or 3901 (hard).
    pub file_bytes: u32,
}

/// Item names, as mdtest names the files of rank 0.
const PREFIX: &[u8] = b"file.mdtest.0.";

impl MdTree {
    /// A tree of one directory (`mdtest_tree.0`) in the test directory open at `base`.
    pub(crate) fn new(base: RawFd, file_bytes: u32) -> MdTree {
        MdTree {
            base,
            tree: Tree::new("mdtest_tree", 1, 0),
            file_bytes,
        }
    }
}

/// A phase as it ran: items done, its counts and timing, and how it ended.
pub(crate) struct Ran {
    pub done: u64,
    pub stats: Stats,
    pub stonewalled: bool,
    pub failure: Option<String>,
    pub interrupted: bool,
}

/// Drive phase `op` over `count` items of `t`; `stonewall`: the phase stops after that long.
pub(crate) fn phase(
    io: &mut Issuer,
    t: &MdTree,
    op: Op,
    count: u64,
    stonewall: Option<Duration>,
) -> Ran {
    let mut src = Phase::new(Work {
        op,
        tree: &t.tree,
        base: t.base,
        prefix: PREFIX,
        per_dir: count.max(1),
        first: 0,
        count,
        order: None,
        write_len: t.file_bytes,
        read_len: t.file_bytes,
        sync: false,
    });
    let stop = crate::runner::signal::interrupted;
    let how = Drive {
        gate: &|| {},
        stop: &stop,
        deadline: stonewall,
        ramp: None,
        ramp_bytes: 0,
        pacing: StepPacing::default(),
        interval_ns: None,
    };
    io.forget_counts();
    let cpu0 = crate::stats::cpu::thread_cpu_ns();
    let ran = source::drive(&mut src, io, how);
    let cpu_ns = crate::stats::cpu::thread_cpu_ns().saturating_sub(cpu0);
    let done = src.done();
    let interrupted = crate::runner::signal::interrupted();
    let mut stats = std::mem::take(&mut src.stats);
    ran.settle(&mut stats, io, cpu_ns);
    let failure = match ran.end {
        End::Failed(e) => Some(e),
        _ => None,
    };
    Ran {
        done,
        stats,
        stonewalled: stonewall.is_some() && done < count && !interrupted && failure.is_none(),
        failure,
        interrupted,
    }
}
