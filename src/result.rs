//! The Result: Job + Environment + Stats per thread, per user and total. Serialised as JSON with
//! a `schema_version`; every later feature (reports, sweeps, compare) reads this contract.
//! See docs/result-schema.md.

use crate::job::Job;
use crate::probe::env::Environment;
use crate::runner::{IoFailure, Plan, RunOutcome, RunStatus};
use crate::stats::{Stats, StatsReport};
use serde::{Deserialize, Serialize};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadReport {
    pub thread: u32,
    pub stats: StatsReport,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UserReport {
    pub user: usize,
    pub target: String,
    pub stats: StatsReport,
    pub threads: Vec<ThreadReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub fsbench_version: String,
    /// What produced it: `io` for a Job run; other front ends may add their own kinds.
    pub kind: String,
    pub name: String,
    pub started_unix_s: f64,
    pub status: RunStatus,
    pub failures: Vec<IoFailure>,
    pub notes: Vec<String>,
    pub job: Job,
    pub plan: Plan,
    pub environment: Environment,
    pub total: StatsReport,
    pub users: Vec<UserReport>,
    /// Probe data stored beside the stats (device samples, extents, traces), keyed by probe.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub probes: serde_json::Map<String, serde_json::Value>,
}

impl RunResult {
    pub fn from_outcome(job: &Job, outcome: &RunOutcome) -> Self {
        let mut users = Vec::new();
        for (u, t) in outcome.plan.targets.iter().enumerate() {
            let mut us = Stats::default();
            let mut threads = Vec::new();
            for th in outcome.threads.iter().filter(|th| th.user == u) {
                us += &th.stats;
                threads.push(ThreadReport {
                    thread: th.thread,
                    stats: StatsReport::from_stats(&th.stats, false),
                });
            }
            threads.sort_by_key(|t| t.thread);
            users.push(UserReport {
                user: u,
                target: t.path.display().to_string(),
                stats: StatsReport::from_stats(&us, false),
                threads,
            });
        }
        let total = outcome.total();
        RunResult {
            schema_version: SCHEMA_VERSION,
            fsbench_version: env!("CARGO_PKG_VERSION").to_string(),
            kind: "io".into(),
            name: job.name.clone(),
            started_unix_s: outcome.started_unix_s,
            status: outcome.status,
            failures: outcome.failures.clone(),
            notes: outcome.plan.notes.clone(),
            job: job.clone(),
            plan: outcome.plan.clone(),
            environment: crate::probe::env::collect(&job.targets),
            total: StatsReport::from_stats(&total, true),
            users,
            probes: outcome.probes.clone(),
        }
    }

    /// Read a stored Result, checking its schema version.
    pub fn from_json(text: &str, origin: &str) -> Result<Self, crate::error::UsageError> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| crate::usage!("{origin}: not a JSON result: {e}"))?;
        match v.get("schema_version").and_then(|s| s.as_u64()) {
            Some(n) if n == SCHEMA_VERSION as u64 => {}
            Some(n) => {
                return Err(crate::usage!(
                    "{origin}: schema_version {n} is not supported (this fsbench reads {SCHEMA_VERSION})"
                ))
            }
            None => return Err(crate::usage!("{origin}: no schema_version: not an fsbench result")),
        }
        serde_json::from_value(v).map_err(|e| crate::usage!("{origin}: {e}"))
    }
}
