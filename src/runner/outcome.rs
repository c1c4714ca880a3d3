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
        self.timeseries = super::live::merge_series(
            outcome.threads.iter().map(|t| t.intervals.as_slice()),
            outcome.status_interval_ns,
        );
        self.steady = outcome.steady.clone();
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
                timeseries: super::live::merge_series([th.intervals.as_slice()], interval_ns),
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
