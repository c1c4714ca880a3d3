//! `--iostat` and `--trace` on every rank of a distributed run. Rank 0 parses the flags once
//! and sends them in the spec ([`RankObserve`]); each rank then observes its own part:
//! - `--trace FILE`: every rank traces its own workers (threads or processes) into a file of
//!   its own, FILE with `.rank-NNNNN` before the extension (`t.csv` -> `t.rank-00003.csv`);
//!   rank 0's Result sums the records and lists each rank's file and count;
//! - `--iostat INTERVAL`: the lowest rank on each host samples the devices under its targets,
//!   once per host; rank 0's Result keeps every host's samples in
//!   `distributed.host_devices`, and rank 0's host's also as the ordinary `iostat` probe (so
//!   reports and explain's device checks read it as on one host), with a note naming which
//!   hosts and devices were sampled;
//! - extent counts (the suite's aged study): every rank counts its own files' extents after
//!   its run; rank 0's `extents` probe lists every rank's files in rank order and
//!   `extents_per_file` averages them all.

use crate::result::{HostDevices, RunResult};
use crate::trace::format::TraceFormat;
use fsbench_core::observe::{Observe, Observer, Scope, TraceSettings};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The observe settings every rank receives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RankObserve {
    /// Device sampling interval, seconds.
    pub iostat_s: Option<f64>,
    pub trace: Option<RankTrace>,
    /// Count the extents of this rank's files after its run (the aged study).
    #[serde(default)]
    pub extents: bool,
}

/// `--trace` as given on rank 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RankTrace {
    pub path: PathBuf,
    pub bin: bool,
    pub records: Option<usize>,
}

/// What one rank's observers stored (the `iostat` and `trace` probes of its own run).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct RankObserved {
    pub probes: Map<String, Value>,
}

impl RankObserve {
    /// The settings rank 0 parsed from its flags (what stays on rank 0, such as
    /// `--status-interval`, is not sent).
    pub(crate) fn from_settings(o: &Observe) -> RankObserve {
        RankObserve {
            iostat_s: o.iostat.map(|d| d.as_secs_f64()),
            trace: o.trace.as_ref().map(|t| RankTrace {
                path: t.path.clone(),
                bin: t.format == TraceFormat::Bin,
                records: t.records,
            }),
            extents: o.extents,
        }
    }

    /// What rank `rank` observes, given every rank's host: its own trace file, and the
    /// devices when it is the lowest rank on its host.
    pub(crate) fn for_rank(&self, rank: u32, hosts: &[String]) -> Observe {
        Observe {
            iostat: self
                .iostat_s
                .filter(|_| samples_its_host(rank, hosts))
                .map(Duration::from_secs_f64),
            trace: self.trace.as_ref().map(|t| TraceSettings {
                path: rank_trace(&t.path, rank),
                format: if t.bin {
                    TraceFormat::Bin
                } else {
                    TraceFormat::Csv
                },
                records: t.records,
            }),
            watch: Default::default(),
            extents: self.extents,
        }
    }

    fn any(&self) -> bool {
        self.iostat_s.is_some() || self.trace.is_some() || self.extents
    }
}

/// Rank `rank`'s trace file: `.rank-NNNNN` before FILE's extension, or after FILE without one.
pub(crate) fn rank_trace(path: &Path, rank: u32) -> PathBuf {
    let tag = format!("rank-{rank:05}");
    match (path.file_stem(), path.extension()) {
        (Some(stem), Some(ext)) => {
            let mut name = stem.to_os_string();
            name.push(format!(".{tag}."));
            name.push(ext);
            path.with_file_name(name)
        }
        _ => {
            let mut s = path.as_os_str().to_os_string();
            s.push(format!(".{tag}"));
            PathBuf::from(s)
        }
    }
}

/// Whether `rank` is the lowest rank on its host (the one that samples the host's devices).
pub(crate) fn samples_its_host(rank: u32, hosts: &[String]) -> bool {
    match hosts.get(rank as usize) {
        Some(h) => hosts.iter().position(|x| x == h) == Some(rank as usize),
        None => false,
    }
}

/// Start this rank's observers right before its run, over what its run touches (`scope`:
/// a Job's targets and workers, a replay's directory and threads); None when it observes
/// nothing.
pub(crate) fn start(
    settings: &RankObserve,
    rank: u32,
    hosts: &[String],
    scope: &Scope,
) -> anyhow::Result<Option<Observer>> {
    if !settings.any() {
        return Ok(None);
    }
    let o = settings.for_rank(rank, hosts);
    if o.iostat.is_none() && o.trace.is_none() && !o.extents {
        return Ok(None);
    }
    Observer::start_for(&o, scope).map(Some)
}

/// Stop this rank's observers after its run; what they saw goes to rank 0 in its record.
/// `since_start_s`: seconds from the start of the rank's timed I/O to now (the device
/// samples' `t_s` count from it). A trace that cannot be written fails the rank's run, as it
/// fails a run on one host, with what was measured still reported: the returned message says
/// why, for the caller to record as the rank's failure.
pub(crate) fn finish(
    observer: Option<Observer>,
    observed: &mut RankObserved,
    since_start_s: f64,
) -> Option<String> {
    let o = observer?;
    o.finish_into(&mut observed.probes, since_start_s)
        .err()
        .map(|e| format!("observing the run (--trace, --iostat): {e:#}"))
}

/// One rank's observations as rank 0 merges them: its rank, its host and what it saw.
pub(crate) struct Seen<'a> {
    pub rank: u32,
    pub host: &'a str,
    pub observed: &'a RankObserved,
}

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Rank 0: every rank's extent counts, in rank order (the order of the Result's targets), and
/// their average over every rank's files that answered FIEMAP.
fn merge_extents(records: &[Seen], result: &mut RunResult) {
    let per_rank: Vec<&Value> = records
        .iter()
        .filter_map(|r| r.observed.probes.get("extents"))
        .collect();
    if per_rank.is_empty() {
        return;
    }
    let counts: Vec<Option<usize>> = per_rank
        .iter()
        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        .map(|c| c.as_u64().map(|n| n as usize))
        .collect();
    fsbench_core::observe::insert_extents(&mut result.probes, &counts);
}

/// Rank 0: every rank's trace summed, every host's device samples, and every rank's extent
/// counts, into the Result.
pub(crate) fn merge(records: &[Seen], result: &mut RunResult) {
    merge_extents(records, result);
    let traces: Vec<(u32, &Value)> = records
        .iter()
        .filter_map(|r| r.observed.probes.get("trace").map(|v| (r.rank, v)))
        .collect();
    if !traces.is_empty() {
        let per_rank: Vec<Value> = traces
            .iter()
            .map(|(rank, v)| {
                serde_json::json!({
                    "rank": rank,
                    "file": v.get("file").cloned().unwrap_or(Value::Null),
                    "records": count(v, "records"),
                    "dropped_records": count(v, "dropped_records"),
                })
            })
            .collect();
        let first = traces[0].1;
        let pattern = first
            .get("file")
            .and_then(Value::as_str)
            .map(|f| f.replace(&format!("rank-{:05}", traces[0].0), "rank-*"))
            .unwrap_or_default();
        result.probes.insert(
            "trace".into(),
            serde_json::json!({
                "file": pattern,
                "format": first.get("format").cloned().unwrap_or(Value::Null),
                "records": traces.iter().map(|(_, v)| count(v, "records")).sum::<u64>(),
                "dropped_records": traces.iter().map(|(_, v)| count(v, "dropped_records")).sum::<u64>(),
                "ranks": per_rank,
            }),
        );
    }
    let hosts: Vec<HostDevices> = records
        .iter()
        .filter_map(|r| {
            r.observed.probes.get("iostat").map(|v| HostDevices {
                host: r.host.to_string(),
                rank: r.rank,
                iostat: v.clone(),
            })
        })
        .collect();
    if hosts.is_empty() {
        return;
    }
    let devices = |h: &HostDevices| {
        let d: Vec<&str> = h
            .iostat
            .get("devices")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if d.is_empty() {
            "every device with I/O".to_string()
        } else {
            d.join(", ")
        }
    };
    let named: Vec<String> = hosts
        .iter()
        .map(|h| format!("{} ({}) by rank {}", h.host, devices(h), h.rank))
        .collect();
    let first = &hosts[0];
    result.notes.push(format!(
        "iostat: devices sampled once per host on {} host(s): {}; the iostat section is {}'s, distributed.host_devices holds every host's",
        hosts.len(),
        named.join("; "),
        first.host
    ));
    result.probes.insert("iostat".into(), first.iostat.clone());
    if let Some(d) = &mut result.distributed {
        d.host_devices = hosts;
    }
    crate::explain::refresh(result);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rank_traces_to_its_own_file_keeping_the_extension() {
        assert_eq!(
            rank_trace(Path::new("/t/run.csv"), 3),
            PathBuf::from("/t/run.rank-00003.csv")
        );
        assert_eq!(
            rank_trace(Path::new("run.bin"), 12),
            PathBuf::from("run.rank-00012.bin")
        );
        assert_eq!(
            rank_trace(Path::new("trace"), 0),
            PathBuf::from("trace.rank-00000")
        );
        // The format follows the file name as on one host.
        assert_eq!(
            TraceFormat::from_path(&rank_trace(Path::new("x.bin"), 1)),
            TraceFormat::Bin
        );
    }

    #[test]
    fn the_lowest_rank_on_each_host_samples_it() {
        let hosts: Vec<String> = ["a", "a", "b", "b", "a"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let who: Vec<u32> = (0..5).filter(|&r| samples_its_host(r, &hosts)).collect();
        assert_eq!(who, vec![0, 2]);
        let s = RankObserve {
            iostat_s: Some(0.1),
            trace: None,
            extents: false,
        };
        assert_eq!(s.for_rank(1, &hosts).iostat, None);
        assert_eq!(
            s.for_rank(2, &hosts).iostat,
            Some(Duration::from_millis(100))
        );
        assert!(!samples_its_host(9, &hosts));
    }
}
