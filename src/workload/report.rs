//! The workload result document (`kind: "workload"`, schema in docs/workload.md) and its
//! text, JSON and CSV renderings. Units are in every key.

use super::interp::{is_io, kind_name, End, ThreadOutcome};
use super::model::Model;
use super::stats::Merged;
use super::Source;
use crate::probe::env::Environment;
use crate::runner::RunStatus;
use crate::stats::{LatencySummary, Usage};
use serde::{Deserialize, Serialize};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FilesetReport {
    pub name: String,
    pub root: String,
    pub entries: u64,
    pub dirs: u64,
    pub prealloc_pct: f64,
    pub files_created: u64,
    pub bytes_written: u64,
    pub reused: u64,
    pub create_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PsrunLine {
    pub t_s: f64,
    pub ops: u64,
    pub ops_per_s: f64,
    pub read_ops_per_s: f64,
    pub write_ops_per_s: f64,
    pub mb_per_s: f64,
}

impl PsrunLine {
    pub fn text(&self, cumulative_ops_per_s: Option<f64>) -> String {
        let mut s = format!(
            "{:8.1}s: {:10.1} ops/s {:9.1} rd/s {:9.1} wr/s {:8.1} MB/s",
            self.t_s, self.ops_per_s, self.read_ops_per_s, self.write_ops_per_s, self.mb_per_s
        );
        if let Some(c) = cumulative_ops_per_s {
            s.push_str(&format!("  (since start {c:.1} ops/s, {} ops)", self.ops));
        }
        s
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlowopReport {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub ops: u64,
    pub ops_per_s: f64,
    pub mb_per_s: f64,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    /// Thread CPU time per execution, read on every 16th execution (`cpu_sampled_ops`).
    pub cpu_us_per_op: f64,
    pub cpu_sampled_ops: u64,
    /// Latency in nanoseconds; `mean`, `min` and `max` exact, percentiles within 1.6%.
    pub lat_ns: LatencySummary,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub ops: u64,
    pub ops_per_s: f64,
    pub read_ops_per_s: f64,
    pub write_ops_per_s: f64,
    pub read_mb_per_s: f64,
    pub write_mb_per_s: f64,
    pub mb_per_s: f64,
    pub lat_mean_ms: f64,
    /// Latency of the I/O flowops together (merged histograms: percentiles within 1.6%).
    #[serde(default)]
    pub lat_ns: LatencySummary,
    /// CPU (user + system) of every workload thread divided by the summary's ops.
    pub cpu_us_per_op: f64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// When the timed phase began (threads released), seconds since the Unix epoch: lets an
    /// outside observer (bench/vs-filebench.sh's CPU sampler) cut out exactly the run.
    #[serde(default)]
    pub started_unix_s: f64,
    pub duration_s: f64,
    pub stop_reason: String,
    pub processes: u64,
    pub threads: u64,
    /// How threads ended: "stopped", "finished", "out_of_files", "failed" -> count.
    pub thread_ends: std::collections::BTreeMap<String, u64>,
    pub flowops: Vec<FlowopReport>,
    pub summary: Summary,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub psrun: Vec<PsrunLine>,
    pub failures: Vec<String>,
    #[serde(skip)]
    pub failed: bool,
}

impl RunReport {
    pub fn from_outcomes(
        model: &Model,
        outs: &[ThreadOutcome],
        duration_s: f64,
        stop_reason: String,
        psrun: Vec<PsrunLine>,
    ) -> Self {
        let mut merged: Vec<Merged> = Vec::new();
        let mut usage = Usage::default();
        let mut ends = std::collections::BTreeMap::new();
        for o in outs {
            usage += &o.usage;
            let e = match &o.end {
                End::Stopped => "stopped",
                End::Finished(_) => "finished",
                End::OutOfFiles(_) => "out_of_files",
                End::Failed(_) => "failed",
            };
            *ends.entry(e.to_string()).or_insert(0) += 1;
            for w in &o.flowops {
                match merged.iter_mut().find(|m| m.name == w.name) {
                    Some(m) => m.add(w),
                    None => {
                        let mut m = Merged::new(w);
                        m.add(w);
                        merged.push(m);
                    }
                }
            }
        }
        let d = duration_s.max(1e-9);
        let mut flowops = Vec::new();
        let (mut ops, mut rops, mut wops, mut rb, mut wb, mut lat_sum) =
            (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
        let mut io_hist = crate::stats::LatencyHist::new();
        let (mut io_min, mut io_max) = (u64::MAX, 0u64);
        for m in &merged {
            let mut lat = m.hist.summary();
            lat.min = m.lat_min_ns;
            lat.max = m.lat_max_ns;
            // Bucket midpoints can fall just outside the exact extremes: clamp them.
            for q in [&mut lat.p50, &mut lat.p90, &mut lat.p99, &mut lat.p99_9] {
                *q = (*q).clamp(lat.min, lat.max);
            }
            lat.mean = if m.ops > 0 {
                m.lat_sum_ns as f64 / m.ops as f64
            } else {
                0.0
            };
            flowops.push(FlowopReport {
                name: m.name.clone(),
                kind: kind_name(m.kind).to_string(),
                ops: m.ops,
                ops_per_s: m.ops as f64 / d,
                mb_per_s: (m.read_bytes + m.write_bytes) as f64 / d / 1e6,
                read_ops: m.read_ops,
                write_ops: m.write_ops,
                read_bytes: m.read_bytes,
                write_bytes: m.write_bytes,
                errors: m.errors,
                cpu_us_per_op: if m.cpu_samples > 0 {
                    m.cpu_ns as f64 / m.cpu_samples as f64 / 1e3
                } else {
                    0.0
                },
                cpu_sampled_ops: m.cpu_samples,
                lat_ns: lat,
            });
            if is_io(m.kind) {
                ops += m.ops;
                rops += m.read_ops;
                wops += m.write_ops;
                rb += m.read_bytes;
                wb += m.write_bytes;
                lat_sum += m.lat_sum_ns;
                io_hist.merge(&m.hist);
                io_min = io_min.min(m.lat_min_ns);
                io_max = io_max.max(m.lat_max_ns);
            }
        }
        let mut io_lat = io_hist.summary();
        if ops > 0 {
            io_lat.min = io_min;
            io_lat.max = io_max;
            io_lat.mean = lat_sum as f64 / ops as f64;
            for q in [
                &mut io_lat.p50,
                &mut io_lat.p90,
                &mut io_lat.p99,
                &mut io_lat.p99_9,
            ] {
                *q = (*q).clamp(io_lat.min, io_lat.max);
            }
        }
        let summary = Summary {
            ops,
            ops_per_s: ops as f64 / d,
            read_ops_per_s: rops as f64 / d,
            write_ops_per_s: wops as f64 / d,
            read_mb_per_s: rb as f64 / d / 1e6,
            write_mb_per_s: wb as f64 / d / 1e6,
            mb_per_s: (rb + wb) as f64 / d / 1e6,
            lat_mean_ms: if ops > 0 {
                lat_sum as f64 / ops as f64 / 1e6
            } else {
                0.0
            },
            lat_ns: io_lat,
            cpu_us_per_op: if ops > 0 {
                usage.cpu_s() * 1e6 / ops as f64
            } else {
                0.0
            },
            cpu_user_s: usage.cpu_user_s,
            cpu_sys_s: usage.cpu_sys_s,
        };
        RunReport {
            started_unix_s: 0.0,
            duration_s,
            stop_reason,
            processes: model.processes.iter().map(|p| p.instances).sum(),
            threads: outs.len() as u64,
            thread_ends: ends,
            flowops,
            summary,
            psrun,
            failures: Vec::new(),
            failed: false,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadResult {
    pub schema_version: u32,
    pub fsbench_version: String,
    /// Always "workload" (the core's Job results are "io").
    pub kind: String,
    pub name: String,
    pub started_unix_s: f64,
    pub status: RunStatus,
    pub defines: Vec<(String, String)>,
    /// Every variable's final value as the workload saw it.
    pub variables: std::collections::BTreeMap<String, String>,
    pub quit_mode: String,
    pub notes: Vec<String>,
    pub environment: Environment,
    pub filesets: Vec<FilesetReport>,
    pub runs: Vec<RunReport>,
}

impl WorkloadResult {
    pub fn new(src: &Source, model: &Model, started_unix_s: f64) -> Self {
        let roots: Vec<std::path::PathBuf> = model
            .filesets
            .iter()
            .filter_map(|f| f.root.parent().map(|p| p.to_path_buf()))
            .collect();
        WorkloadResult {
            schema_version: SCHEMA_VERSION,
            fsbench_version: env!("CARGO_PKG_VERSION").to_string(),
            kind: "workload".into(),
            name: src.name.clone(),
            started_unix_s,
            status: RunStatus::Complete,
            defines: src.defines.clone(),
            variables: model.vars.iter().cloned().collect(),
            quit_mode: format!("{:?}", model.mode).to_lowercase(),
            notes: model.notes.clone(),
            environment: crate::probe::env::collect(&roots),
            filesets: Vec::new(),
            runs: Vec::new(),
        }
    }

    pub fn finish(&mut self, interrupted: bool) {
        self.status = if self.runs.iter().any(|r| r.failed || !r.failures.is_empty()) {
            RunStatus::Failed
        } else if interrupted {
            RunStatus::Partial
        } else {
            RunStatus::Complete
        };
    }

    pub fn exit_code(&self) -> i32 {
        match self.status {
            RunStatus::Complete => 0,
            RunStatus::Failed => 1,
            RunStatus::Partial => 130,
        }
    }

    pub fn text(&self) -> String {
        let mut s = String::new();
        for (i, r) in self.runs.iter().enumerate() {
            if self.runs.len() > 1 {
                s.push_str(&format!("run {}:\n", i + 1));
            }
            s.push_str(&format!(
                "{:<22} {:>10} {:>10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
                "flowop", "ops", "ops/s", "MB/s", "mean", "min", "p50", "p99", "p99.9", "max"
            ));
            for f in &r.flowops {
                let l = &f.lat_ns;
                s.push_str(&format!(
                    "{:<22} {:>10} {:>10.1} {:>8.1} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  {:.1}us cpu/op\n",
                    truncate(&f.name, 22),
                    f.ops,
                    f.ops_per_s,
                    f.mb_per_s,
                    ms(l.mean),
                    ms(l.min as f64),
                    ms(l.p50 as f64),
                    ms(l.p99 as f64),
                    ms(l.p99_9 as f64),
                    ms(l.max as f64),
                    f.cpu_us_per_op
                ));
            }
            let m = &r.summary;
            s.push_str(&format!(
                "IO Summary: {} ops {:.3} ops/s {:.0}/{:.0} rd/wr {:.1}MB/s {:.3}ms/op {:.0}us cpu/op\n",
                m.ops, m.ops_per_s, m.read_ops_per_s, m.write_ops_per_s, m.mb_per_s, m.lat_mean_ms, m.cpu_us_per_op
            ));
            s.push_str(&format!(
                "{} process(es), {} thread(s), {:.2} s: {}\n",
                r.processes, r.threads, r.duration_s, r.stop_reason
            ));
            for f in &r.failures {
                s.push_str(&format!("error: {f}\n"));
            }
        }
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        s.push_str("(latencies in ms; p50/p99/p99.9 from a histogram within 1.6%)\n");
        s
    }

    pub fn csv(&self) -> String {
        let mut s = String::from(
            "run,flowop,type,ops,ops_per_s,mb_per_s,read_ops,write_ops,read_bytes,write_bytes,errors,cpu_us_per_op,lat_mean_ns,lat_min_ns,lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p99_9_ns,lat_max_ns\n",
        );
        for (i, r) in self.runs.iter().enumerate() {
            for f in &r.flowops {
                let l = &f.lat_ns;
                s.push_str(&format!(
                    "{},{},{},{},{:.3},{:.3},{},{},{},{},{},{:.3},{:.0},{},{},{},{},{},{}\n",
                    i + 1,
                    csv_field(&f.name),
                    f.kind,
                    f.ops,
                    f.ops_per_s,
                    f.mb_per_s,
                    f.read_ops,
                    f.write_ops,
                    f.read_bytes,
                    f.write_bytes,
                    f.errors,
                    f.cpu_us_per_op,
                    l.mean,
                    l.min,
                    l.p50,
                    l.p90,
                    l.p99,
                    l.p99_9,
                    l.max
                ));
            }
            let m = &r.summary;
            s.push_str(&format!(
                "{},IO Summary,summary,{},{:.3},{:.3},,,,,,{:.3},{:.0},,,,,,\n",
                i + 1,
                m.ops,
                m.ops_per_s,
                m.mb_per_s,
                m.cpu_us_per_op,
                m.lat_mean_ms * 1e6
            ));
        }
        s
    }
}

fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n).collect()
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
