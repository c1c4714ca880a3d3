//! After the replay: the threads' tallies become the Result's thread entries (grouped when
//! there are many) and one named group per replayed call kind.

use super::thread::{Tally, CALLS};
use super::REPORTED_THREADS_MAX;
use crate::result::GroupReport;
use crate::runner::ThreadOutcome;
use crate::stats::{Dir, Stats, StatsReport};
use crate::trace::TraceOp;
use std::collections::HashMap;

/// Which reported entry each worker goes into: itself up to [`REPORTED_THREADS_MAX`]
/// workers; beyond, one entry per file (user) when there are few enough, else workers are
/// dealt round-robin into that many groups. Returns (group per worker, user and label per
/// group).
pub(super) fn grouping(info: &[(usize, u64)]) -> (Vec<usize>, Vec<(usize, u32)>) {
    let n = info.len();
    if n <= REPORTED_THREADS_MAX {
        return (
            (0..n).collect(),
            info.iter()
                .enumerate()
                .map(|(i, (u, _))| (*u, i as u32))
                .collect(),
        );
    }
    let mut by_user: std::collections::BTreeMap<usize, usize> = Default::default();
    for (u, _) in info {
        let next = by_user.len();
        by_user.entry(*u).or_insert(next);
    }
    if by_user.len() <= REPORTED_THREADS_MAX {
        let mut groups = vec![(0usize, u32::MAX); by_user.len()];
        let of: Vec<usize> = info
            .iter()
            .enumerate()
            .map(|(i, (u, _))| {
                let g = by_user[u];
                groups[g].0 = *u;
                groups[g].1 = groups[g].1.min(i as u32);
                g
            })
            .collect();
        return (of, groups);
    }
    // Round-robin; a group is reported as the user with the most calls in it.
    let k = REPORTED_THREADS_MAX;
    let mut best: Vec<HashMap<usize, u64>> = vec![HashMap::new(); k];
    let of: Vec<usize> = (0..n).map(|i| i % k).collect();
    for (i, (u, ops)) in info.iter().enumerate() {
        *best[i % k].entry(*u).or_default() += ops;
    }
    let groups = best
        .iter()
        .enumerate()
        .map(|(g, m)| {
            let u = m
                .iter()
                .max_by_key(|(u, n)| (**n, std::cmp::Reverse(**u)))
                .map(|(u, _)| *u)
                .unwrap_or(0);
            (u, g as u32)
        })
        .collect();
    (of, groups)
}

/// Build the reported thread outcomes (histograms from the samples of reads and writes),
/// grouping many workers, and the exact statistics of each call kind that was replayed (its
/// ops, bytes and latency over the replay's timed span: the longest worker's, as the
/// total's, or `wall_s` when no worker timed anything).
pub(super) fn report_threads(
    tallies: Vec<Tally>,
    info: &[(usize, u64)],
    wall_s: f64,
) -> (Vec<ThreadOutcome>, bool, Vec<(String, Stats)>) {
    let longest = tallies
        .iter()
        .map(|t| t.stats.elapsed_s)
        .fold(0.0, f64::max);
    let elapsed_s = if longest > 0.0 { longest } else { wall_s };
    let (of, groups) = grouping(info);
    let grouped = groups.len() < tallies.len();
    let mut out: Vec<ThreadOutcome> = groups
        .iter()
        .map(|&(user, thread)| ThreadOutcome {
            user,
            thread,
            stats: Stats::default(),
            failure: None,
            verify: None,
            intervals: Vec::new(),
        })
        .collect();
    let mut kinds: Vec<Stats> = CALLS.iter().map(|_| Stats::default()).collect();
    for (i, t) in tallies.into_iter().enumerate() {
        let o = &mut out[of[i]];
        for (k, c) in t.calls.iter().enumerate() {
            let g = &mut kinds[k];
            let n = c.lat.len() as u64;
            match CALLS[k] {
                TraceOp::Read => {
                    (g.read_ops, g.read_bytes) = (g.read_ops + n, g.read_bytes + c.bytes)
                }
                TraceOp::Write => {
                    (g.write_ops, g.write_bytes) = (g.write_ops + n, g.write_bytes + c.bytes)
                }
                _ => g.other_ops += n,
            }
            // A thread's latency is that of its reads and writes, as a Job's; syncs are in
            // its syscalls and in their own groups.
            let data = CALLS[k].is_data();
            let dir = match CALLS[k] {
                TraceOp::Read => Dir::Read,
                TraceOp::Write => Dir::Write,
                _ => Dir::Other,
            };
            for &ns in &c.lat {
                g.lat_of(dir).record(ns);
                if data {
                    o.stats.lat_of(dir).record(ns);
                }
            }
            // Untimed, the schedule latency is the service latency: only `lat` is kept.
            for &ns in &c.sched {
                g.sched_lat_of(dir).record(ns);
                if data {
                    o.stats.sched_lat_of(dir).record(ns);
                }
            }
        }
        // Counters, CPU and syscalls add up (the samples went into the histograms).
        t.stats.add_to(&mut o.stats);
        o.intervals.extend(t.intervals);
        if o.failure.is_none() {
            o.failure = t.failure;
        }
        if let Some(v) = t.verify {
            match &mut o.verify {
                Some(all) => all.merge(&v),
                None => o.verify = Some(v),
            }
        }
    }
    let kinds = kinds
        .into_iter()
        .zip(CALLS)
        .filter(|(g, _)| g.ops() > 0)
        .map(|(mut g, op)| {
            g.elapsed_s = elapsed_s;
            (op.name().to_string(), g)
        })
        .collect();
    (out, grouped, kinds)
}

/// One named group of the Result per replayed call kind.
pub(super) fn groups_of(kinds: &[(String, Stats)]) -> Vec<GroupReport> {
    kinds
        .iter()
        .map(|(name, stats)| GroupReport {
            name: name.clone(),
            op: name.clone(),
            run: None,
            stats: StatsReport::from_stats(stats, false),
        })
        .collect()
}
