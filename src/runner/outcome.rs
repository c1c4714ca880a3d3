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
