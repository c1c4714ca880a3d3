//! The workload's Result: the one envelope (`kind: "workload"`) built from the threads'
//! outcomes. Each flowop becomes a named group of the one `Stats`, the I/O flowops merged with
//! every thread's CPU make each run's "IO Summary", and the workload's variables, filesets and
//! run outline go into its `workload` section. Formatting (the Filebench-style table) is the
//! report layer's.

use super::interp::{is_io, kind_name, End, ThreadOutcome};
use super::model::Model;
use super::stats::merge_by_name;
use super::Source;
use crate::result::{
    FilesetInfo, GroupReport, Kind, PsrunLine, RunResult, WorkloadInfo, WorkloadRun,
};
use crate::runner::{IoFailure, RunStatus};
use crate::stats::{Stats, StatsReport, SyscallCounts, Usage};
use std::collections::BTreeMap;

/// One `run` of the script, measured.
pub struct RunPart {
    pub outline: WorkloadRun,
    pub groups: Vec<GroupReport>,
    /// The I/O flowops merged with every thread's CPU (what the IO Summary shows).
    pub summary: Stats,
    /// Errors that ended threads (sorted, one each).
    pub failures: Vec<String>,
    /// A flowop failed or the run stalled.
    pub failed: bool,
    /// What `--verify` found in the threads' reads (None: not verifying).
    pub verify: Option<crate::verify::report::VerifyReport>,
}

impl RunPart {
    /// Merge the threads' outcomes of run number `run` (1-based).
    pub fn from_outcomes(
        model: &Model,
        outs: &[ThreadOutcome],
        run: u32,
        duration_s: f64,
        stop_reason: String,
        psrun: Vec<PsrunLine>,
        interval_ns: Option<u64>,
    ) -> Self {
        let mut usage = Usage::default();
        let mut sys = SyscallCounts::default();
        let mut ends = BTreeMap::new();
        let mut failures = Vec::new();
        for o in outs {
            usage += &o.usage;
            sys += &o.sys;
            let e = match &o.end {
                End::Stopped => "stopped",
                End::Finished(_) => "finished",
                End::OutOfFiles(_) => "out_of_files",
                End::Failed(e) => {
                    failures.push(e.clone());
                    "failed"
                }
            };
            *ends.entry(e.to_string()).or_insert(0) += 1;
        }
        failures.sort();
        failures.dedup();
        let mut summary = Stats::default();
        let mut groups = Vec::new();
        for mut f in merge_by_name(outs.iter().flat_map(|o| o.flowops.iter())) {
            // Figures per second are over the run, as Filebench reports them.
            f.stats.elapsed_s = duration_s;
            if is_io(f.kind) {
                summary += &f.stats;
            }
            groups.push(GroupReport {
                name: f.name,
                op: kind_name(f.kind).to_string(),
                run: Some(run),
                stats: StatsReport::from_stats(&f.stats, false),
            });
        }
        // The summary's CPU is getrusage of every thread, not the per-flowop samples, and its
        // system calls every call the threads made through their engines (as a Job's
        // workers count theirs), metadata calls included.
        summary.usage = usage;
        summary.syscalls = sys;
        summary.cpu_sampled_ns = 0;
        summary.cpu_sampled_ops = 0;
        summary.elapsed_s = duration_s;
        RunPart {
            outline: WorkloadRun {
                started_unix_s: 0.0,
                duration_s,
                stop_reason,
                processes: model.processes.iter().map(|p| p.instances).sum(),
                threads: outs.len() as u64,
                thread_ends: ends,
                summary: StatsReport::from_stats(&summary, false),
                psrun,
                timeseries: crate::runner::live::merge_series(
                    outs.iter().map(|o| o.intervals.as_slice()),
                    interval_ns,
                ),
            },
            groups,
            summary,
            failed: !failures.is_empty(),
            failures,
            verify: crate::verify::report::VerifyReport::merged(
                outs.iter().filter_map(|o| o.verify.as_ref()),
            ),
        }
    }
}

/// The Result of a workload while its script runs.
pub struct WorkloadDoc {
    pub result: RunResult,
    /// Every run's summary merged (runs follow each other: their durations add up).
    total: Stats,
    failed: bool,
}

impl WorkloadDoc {
    pub fn new(src: &Source, model: &Model, started_unix_s: f64) -> Self {
        let roots: Vec<std::path::PathBuf> = model
            .filesets
            .iter()
            .filter_map(|f| f.root.parent().map(|p| p.to_path_buf()))
            .collect();
        let mut result = RunResult::new(
            Kind::Workload,
            &src.name,
            started_unix_s,
            crate::probe::env::collect(&roots),
        );
        result.notes = model.notes.clone();
        result.workload = Some(WorkloadInfo {
            defines: src.defines.clone(),
            variables: model.vars.iter().cloned().collect(),
            quit_mode: format!("{:?}", model.mode).to_lowercase(),
            filesets: Vec::new(),
            runs: Vec::new(),
        });
        WorkloadDoc {
            result,
            total: Stats::default(),
            failed: false,
        }
    }

    fn info(&mut self) -> &mut WorkloadInfo {
        self.result.workload.get_or_insert_with(Default::default)
    }

    pub fn add_fileset(&mut self, f: FilesetInfo) {
        self.info().filesets.push(f);
    }

    pub fn note(&mut self, n: String) {
        self.result.notes.push(n);
    }

    /// Add a measured run; true when it failed (the script stops there).
    pub fn add_run(&mut self, part: RunPart) -> bool {
        let elapsed = self.total.elapsed_s + part.summary.elapsed_s;
        self.total += &part.summary;
        self.total.elapsed_s = elapsed;
        self.result.total = StatsReport::from_stats(&self.total, true);
        self.result.groups.extend(part.groups);
        // The script's time series: each run's intervals after the runs before it.
        let before: f64 = self.info().runs.iter().map(|r| r.duration_s).sum();
        self.result
            .timeseries
            .extend(part.outline.timeseries.iter().map(|i| {
                let mut i = i.clone();
                i.t_s += before;
                i
            }));
        self.result
            .failures
            .extend(part.failures.into_iter().map(|message| IoFailure {
                user: 0,
                thread: 0,
                path: String::new(),
                offset: None,
                message,
            }));
        let mut failed = part.failed;
        if let Some(v) = &part.verify {
            // A read that did not come back as written fails the run (exit 1).
            if let Some((path, offset, message)) = crate::runner::verify::failure_of(v, "read(s)") {
                self.result.failures.push(IoFailure {
                    user: 0,
                    thread: 0,
                    path,
                    offset,
                    message,
                });
                failed = true;
            }
            match &mut self.result.verify {
                Some(all) => all.merge(v),
                None => self.result.verify = Some(v.clone()),
            }
        }
        self.failed |= failed;
        self.info().runs.push(part.outline);
        failed
    }

    /// Set the status: failed when a run failed, partial when interrupted.
    pub fn finish(&mut self, interrupted: bool) {
        self.result.status = if self.failed || !self.result.failures.is_empty() {
            RunStatus::Failed
        } else if interrupted {
            RunStatus::Partial
        } else {
            RunStatus::Complete
        };
        self.result.stability = crate::runner::stability::judge_stored(&self.result.timeseries);
        crate::explain::refresh(&mut self.result);
    }

    pub fn fail(&mut self) {
        self.failed = true;
        self.result.status = RunStatus::Failed;
    }
}
