//! Several clones of one mdtest plan on one host, as threads (fio's `numjobs` on a metadata
//! engine): each thread runs the plan as one rank of the run, with items of its own
//! (`file.mdtest.R.N`, as MPI ranks name theirs) in the run directory they share, and they
//! meet between phases as ranks do, so every measured phase starts with every clone. The
//! clones' phases are then merged as the ranks' are: per phase of each iteration, the counts
//! summed over the wall time from the first clone's start to the last one's end.

use super::{check_room, make_top, rank_dir, result_of_measured, run_in, Measured, Plan};
use super::{RankShare, RunResult};
use crate::result::{IoFailure, RunStatus};
use crate::stats::Stats;
use anyhow::Result;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Where the clones meet between phases. A clone that ends early (a failure) leaves, so the
/// others do not wait for it.
struct Meeting {
    /// Clones still running, clones waiting, and the round of the meeting.
    state: Mutex<(u32, u32, u64)>,
    all_here: Condvar,
}

impl Meeting {
    fn new(clones: u32) -> Meeting {
        Meeting {
            state: Mutex::new((clones, 0, 0)),
            all_here: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, (u32, u32, u64)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Release the waiting clones when every clone still running is there.
    fn release_if_all_here(&self, s: &mut (u32, u32, u64)) -> bool {
        if s.1 > 0 && s.1 >= s.0 {
            s.1 = 0;
            s.2 += 1;
            self.all_here.notify_all();
            return true;
        }
        false
    }

    fn wait(&self) {
        let mut s = self.lock();
        s.1 += 1;
        if self.release_if_all_here(&mut s) {
            return;
        }
        let round = s.2;
        while s.2 == round {
            s = self.all_here.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn leave(&self) {
        let mut s = self.lock();
        s.0 = s.0.saturating_sub(1);
        self.release_if_all_here(&mut s);
    }
}

/// A clone leaves the meeting when its run ends, however it ends.
struct Leaves<'a>(&'a Meeting);

impl Drop for Leaves<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// Run `plan` as `clones` threads on this host, in one run directory; one Result (kind
/// `mdtest`) with every clone's operations.
pub fn run_clones(plan: &Plan, clones: u32, argv: &[String]) -> Result<RunResult> {
    let clones = clones.max(1);
    let dir = rank_dir(plan, 0);
    let mut notes = Vec::new();
    if dir.is_dir() {
        // Room for every clone's items.
        let all = Plan {
            items: plan.items.saturating_mul(clones as u64),
            ..plan.clone()
        };
        check_room(&all, dir)?;
    }
    let top = make_top(dir, plan.opts.keep, &mut notes)?;
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let meeting = Meeting::new(clones);
    let runs: Vec<Result<(RunResult, Vec<Measured>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clones)
            .map(|rank| {
                let (meeting, top) = (&meeting, &top.path);
                let notes = if rank == 0 { notes.clone() } else { Vec::new() };
                s.spawn(move || {
                    let _leaves = Leaves(meeting);
                    let barrier = || meeting.wait();
                    let share = RankShare {
                        rank,
                        ranks: clones,
                        barrier: &barrier,
                        agreed: None,
                    };
                    run_in(plan, &share, argv, top, notes)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a clone's thread panicked")))
            })
            .collect()
    });
    let mut results = Vec::with_capacity(runs.len());
    let mut measured: Vec<Measured> = Vec::new();
    for run in runs {
        let (result, phases) = run?;
        results.push(result);
        measured.extend(phases);
    }
    let merged = merge(measured);
    let mut res = result_of_measured(plan, (0, clones), &merged, &top.path, argv, started_unix_s);
    for (clone, r) in results.iter().enumerate() {
        for n in &r.notes {
            if !res.notes.contains(n) {
                res.notes.push(n.clone());
            }
        }
        res.failures.extend(r.failures.iter().map(|f| IoFailure {
            message: format!("clone {clone}: {}", f.message),
            ..f.clone()
        }));
        res.status = match (res.status, r.status) {
            (RunStatus::Failed, _) | (_, RunStatus::Failed) => RunStatus::Failed,
            (RunStatus::Partial, _) | (_, RunStatus::Partial) => RunStatus::Partial,
            (s, _) => s,
        };
    }
    drop(top);
    Ok(res)
}

/// Every clone's phases merged per phase of each iteration: the counts summed, the time from
/// the first clone's start to the last one's end.
fn merge(measured: Vec<Measured>) -> Vec<Measured> {
    let mut merged: Vec<Measured> = Vec::new();
    for m in measured {
        match merged
            .iter_mut()
            .find(|x| x.op == m.op && x.iteration == m.iteration)
        {
            Some(x) => {
                let (start, end) = (
                    x.stats.loop_start_ns.min(m.stats.loop_start_ns),
                    x.stats.loop_end_ns.max(m.stats.loop_end_ns),
                );
                x.stats += &m.stats;
                x.stats.loop_start_ns = start;
                x.stats.loop_end_ns = end;
                if m.stonewalled.is_some() {
                    x.stonewalled = Some(0);
                }
            }
            None => merged.push(Measured { of_rank: 0, ..m }),
        }
    }
    for m in &mut merged {
        let s: &mut Stats = &mut m.stats;
        s.elapsed_s = s.loop_end_ns.saturating_sub(s.loop_start_ns) as f64 / 1e9;
        m.stonewalled = m.stonewalled.map(|_| m.stats.other_ops);
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// No clone passes a meeting before every clone still running has come to it, and a
    /// clone that leaves does not hold the others up.
    #[test]
    fn clones_meet_and_one_that_leaves_holds_nobody_up() {
        let meeting = Meeting::new(3);
        let arrived = AtomicU32::new(0);
        std::thread::scope(|s| {
            for c in 0..3 {
                let (meeting, arrived) = (&meeting, &arrived);
                s.spawn(move || {
                    let _leaves = Leaves(meeting);
                    arrived.fetch_add(1, Ordering::SeqCst);
                    meeting.wait();
                    assert!(arrived.load(Ordering::SeqCst) >= 3);
                    if c == 2 {
                        return;
                    }
                    meeting.wait();
                    meeting.wait();
                });
            }
        });
    }
}
