//! The runner's outcome made into a Result. The Result is a leaf that knows nothing of the
//! runner; the runner, which produces it, fills it from what its workers measured.

use super::{RunOutcome, ThreadOutcome};
use crate::job::Job;
use crate::result::{Kind, RunResult, ThreadReport, UserReport};
use crate::stats::{Stats, StatsReport};

impl RunResult {
    /// The Result of a Job run by the runner (kind `io`).
    pub fn from_outcome(job: &Job, outcome: &RunOutcome) -> Self {
        let mut r = RunResult::new(
            Kind::Io,
            &job.name,
            outcome.started_unix_s,
            crate::probe::env::collect(&job.targets),
        );
        r.fill_from_outcome(outcome);
        // The job as it ran: a block device turns buffered into raw I/O (the notes say so),
        // and `job.cache` must not say otherwise than `plan.cache`.
        let mut ran = job.clone();
        ran.cache = outcome.plan.cache;
        r.job = Some(ran);
        crate::explain::refresh(&mut r);
        r
    }

    /// Status, failures, notes, plan, users and total from a runner-shaped outcome.
    pub fn fill_from_outcome(&mut self, outcome: &RunOutcome) {
        let targets: Vec<String> = outcome
            .plan
            .targets
            .iter()
            .map(|t| t.path.display().to_string())
            .collect();
        self.users = user_reports(&targets, &outcome.threads, outcome.status_interval_ns);
        self.timeseries = Vec::new();
        self.total = StatsReport::from_stats(&outcome.total(), true);
        self.status = outcome.status;
        self.failures = outcome.failures.clone();
        self.notes = outcome.plan.notes.clone();
        self.plan = Some(outcome.plan.clone());
        self.probes = outcome.probes.clone();
        self.host = outcome.host.clone();
        self.verify = crate::verify::report::VerifyReport::merged(
            outcome.threads.iter().filter_map(|t| t.verify.as_ref()),
        );
        self.steady = outcome.steady.clone();
        self.series_from_outcome(outcome);
    }

    /// The time series (with the host's figures per interval) and the stability figures:
    /// from the `--status-interval` series, else from the one kept for the figures alone,
    /// which is not stored.
    fn series_from_outcome(&mut self, outcome: &RunOutcome) {
        let Some(grid_ns) = outcome.status_interval_ns.or(outcome.stability_grid_ns) else {
            return;
        };
        let mut series = super::live::merge_series(
            outcome.threads.iter().map(|t| t.intervals.as_slice()),
            Some(grid_ns),
        );
        // The workers' grid starts at the earliest loop start (they leave one gate).
        let t0 = outcome
            .threads
            .iter()
            .map(|t| t.stats.loop_start_ns)
            .filter(|&t| t > 0)
            .min();
        if let Some(t0) = t0.filter(|_| !outcome.host_ticks.is_empty()) {
            super::host_ticks::attach(&mut series, &outcome.host_ticks, t0, grid_ns);
        }
        let kept = outcome.status_interval_ns.is_some();
        self.stability = super::stability::judge(
            &series,
            grid_ns as f64 / 1e9,
            if kept { "status_interval" } else { "default" },
        );
        if kept {
            self.timeseries = series;
        }
    }
}

/// Per-user (per-target) reports of a run's threads, and the threads merged.
fn user_reports(
    targets: &[String],
    threads: &[ThreadOutcome],
    interval_ns: Option<u64>,
) -> Vec<UserReport> {
    let mut users = Vec::new();
    for (u, target) in targets.iter().enumerate() {
        let mut us = Stats::default();
        let mut reports = Vec::new();
        for th in threads.iter().filter(|th| th.user == u) {
            us += &th.stats;
            reports.push(ThreadReport {
                thread: th.thread,
                stats: StatsReport::from_stats(&th.stats, false),
                // A series kept for the stability figures alone is not stored.
                timeseries: match interval_ns {
                    Some(_) => super::live::merge_series([th.intervals.as_slice()], interval_ns),
                    None => Vec::new(),
                },
            });
        }
        reports.sort_by_key(|t| t.thread);
        users.push(UserReport {
            user: u,
            target: target.clone(),
            stats: StatsReport::from_stats(&us, false),
            threads: reports,
        });
    }
    users
}

impl RunOutcome {
    /// Runs that went at the same time (a `super::together::run_together`) as one outcome:
    /// their targets and workers side by side (users numbered on, in order), the worst
    /// status, every failure, and the window from the first start to the last end. Probe
    /// lists of files or targets are joined; other probe values are the first run's.
    pub fn merge(parts: Vec<RunOutcome>) -> RunOutcome {
        let mut parts = parts.into_iter();
        let Some(mut all) = parts.next() else {
            panic!("RunOutcome::merge of no outcome");
        };
        let mut end = all.started_unix_s + all.elapsed_s;
        for p in parts {
            let users = all.plan.targets.len();
            all.plan.targets.extend(p.plan.targets);
            all.plan.notes.extend(p.plan.notes);
            all.threads.extend(p.threads.into_iter().map(|mut t| {
                t.user += users;
                if let Some(f) = &mut t.failure {
                    f.user += users;
                }
                t
            }));
            all.failures.extend(p.failures.into_iter().map(|mut f| {
                f.user += users;
                f
            }));
            all.status = worse(all.status, p.status);
            end = end.max(p.started_unix_s + p.elapsed_s);
            all.started_unix_s = all.started_unix_s.min(p.started_unix_s);
            for (k, v) in p.probes {
                join_probe(all.probes.entry(k).or_insert(serde_json::Value::Null), v);
            }
            all.host = all.host.or(p.host);
        }
        all.elapsed_s = end - all.started_unix_s;
        all.steady = None;
        all
    }
}

/// Failed over partial over complete.
fn worse(a: super::RunStatus, b: super::RunStatus) -> super::RunStatus {
    use super::RunStatus::*;
    match (a, b) {
        (Failed, _) | (_, Failed) => Failed,
        (Partial, _) | (_, Partial) => Partial,
        _ => Complete,
    }
}

/// One probe value taken into another: lists inside objects are joined (`files`, `targets`).
fn join_probe(into: &mut serde_json::Value, v: serde_json::Value) {
    match (into, v) {
        (into @ serde_json::Value::Null, v) => *into = v,
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                if let (Some(serde_json::Value::Array(x)), serde_json::Value::Array(y)) =
                    (a.get_mut(&k), &v)
                {
                    x.extend(y.iter().cloned());
                } else {
                    a.entry(k).or_insert(v);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::RunStatus;
    use super::*;
    use crate::result::{IoFailure, Plan, TargetKind, TargetPlan};

    fn outcome(path: &str, ops: u64, start: f64, elapsed: f64, failed: bool) -> RunOutcome {
        let failure = failed.then(|| IoFailure {
            user: 0,
            thread: 0,
            path: path.into(),
            offset: Some(0),
            message: "EIO".into(),
        });
        RunOutcome {
            plan: Plan {
                targets: vec![TargetPlan {
                    path: path.into(),
                    kind: TargetKind::File,
                    size: 4096,
                    created: true,
                    dio_align: 512,
                    reserved: None,
                }],
                cache: Default::default(),
                notes: vec![format!("note of {path}")],
                part: None,
            },
            threads: vec![ThreadOutcome {
                user: 0,
                thread: 0,
                stats: Stats {
                    write_ops: ops,
                    ..Stats::default()
                },
                failure: failure.clone(),
                verify: None,
                intervals: Vec::new(),
            }],
            status: if failed {
                RunStatus::Failed
            } else {
                RunStatus::Complete
            },
            failures: failure.into_iter().collect(),
            elapsed_s: elapsed,
            started_unix_s: start,
            probes: serde_json::from_value(serde_json::json!({
                "extents": {"files": [path]}
            }))
            .unwrap(),
            status_interval_ns: None,
            stability_grid_ns: None,
            host_ticks: Vec::new(),
            steady: None,
            host: None,
        }
    }

    #[test]
    fn merged_runs_sit_side_by_side_over_their_common_window() {
        let m = RunOutcome::merge(vec![
            outcome("a", 3, 100.0, 2.0, false),
            outcome("b", 5, 100.5, 2.0, true),
        ]);
        let users: Vec<(usize, u64)> = m
            .threads
            .iter()
            .map(|t| (t.user, t.stats.write_ops))
            .collect();
        assert_eq!(users, [(0, 3), (1, 5)]);
        assert_eq!(m.plan.targets.len(), 2);
        assert_eq!(m.failures[0].user, 1);
        assert_eq!(m.threads[1].failure.as_ref().unwrap().user, 1);
        assert_eq!(m.status, RunStatus::Failed);
        assert_eq!((m.started_unix_s, m.elapsed_s), (100.0, 2.5));
        assert_eq!(m.total().write_ops, 8);
        assert_eq!(m.plan.notes, ["note of a", "note of b"]);
        assert_eq!(
            m.probes["extents"],
            serde_json::json!({"files": ["a", "b"]})
        );
    }
}
