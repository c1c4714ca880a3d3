//! What a sweep stores per point: the RunResult with a `sweep` probe naming the suite, study,
//! point and table shape, or a `skipped` record saying why the point was not measured. The
//! report layer rebuilds every table and chart from these files alone.

use crate::result::{RunResult, SCHEMA_VERSION};
use crate::usage;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Table shape: row axes, column axes and the metrics shown for each column.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TableSpec {
    pub rows: Vec<String>,
    pub cols: Vec<String>,
    pub metrics: Vec<String>,
    /// What the reader must know to compare the table's cells (e.g. that its points move
    /// different amounts of data), printed under the table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Chart shape: which axis is on x (default: the first row axis) and the chart kind
/// (`line` for numeric axes, `bars` for categories).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChartSpec {
    pub x: Option<String>,
    pub kind: Option<String>,
}

/// Where one point sits in its sweep; stored as `probes.sweep` of the RunResult.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SweepMeta {
    pub suite: String,
    pub study: String,
    pub title: String,
    /// Position in the stated order (0-based).
    pub index: usize,
    /// Which repetition of the point (0-based).
    pub repeat: u32,
    /// Axis values of this point, in axis order.
    pub point: Vec<(String, String)>,
    /// Every setting the point was built from (fixed ones, then axis values), after
    /// scaling: a stored result is reused on resume only when these match.
    pub settings: Vec<(String, String)>,
    pub table: TableSpec,
    pub chart: ChartSpec,
    /// Target label when the suite runs on several targets (for normalising to a baseline).
    pub target: Option<String>,
}

impl SweepMeta {
    pub fn value(&self, axis: &str) -> Option<&str> {
        self.point
            .iter()
            .find(|(n, _)| n == axis)
            .map(|(_, v)| v.as_str())
    }
    /// `bs=64k cache=direct`.
    pub fn point_label(&self) -> String {
        self.point
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A point that was not measured, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SkipRecord {
    pub schema_version: u32,
    /// Always `skipped`.
    pub kind: String,
    pub reason: String,
    pub sweep: SweepMeta,
}

/// One stored point: measured, or skipped with a reason.
#[derive(Debug, Clone)]
pub enum Record {
    Run {
        meta: SweepMeta,
        result: Box<RunResult>,
    },
    Skipped {
        meta: SweepMeta,
        reason: String,
    },
}

impl Record {
    pub fn meta(&self) -> &SweepMeta {
        match self {
            Record::Run { meta, .. } | Record::Skipped { meta, .. } => meta,
        }
    }
    pub fn result(&self) -> Option<&RunResult> {
        match self {
            Record::Run { result, .. } => Some(result),
            Record::Skipped { .. } => None,
        }
    }
    pub fn skip(meta: SweepMeta, reason: impl Into<String>) -> Record {
        Record::Skipped {
            meta,
            reason: reason.into(),
        }
    }
    /// Attach the sweep probe and wrap a result.
    pub fn run(meta: SweepMeta, mut result: RunResult) -> Record {
        result.probes.insert(
            "sweep".into(),
            serde_json::to_value(&meta).unwrap_or_default(),
        );
        Record::Run {
            meta,
            result: Box::new(result),
        }
    }
    /// The stored form: the result, or a skipped record, as pretty JSON.
    pub fn to_json(&self) -> anyhow::Result<String> {
        let text = match self {
            Record::Run { result, .. } => serde_json::to_string_pretty(result.as_ref())?,
            Record::Skipped { meta, reason } => serde_json::to_string_pretty(&SkipRecord {
                schema_version: SCHEMA_VERSION,
                kind: "skipped".into(),
                reason: reason.clone(),
                sweep: meta.clone(),
            })?,
        };
        Ok(text + "\n")
    }

    /// Write atomically through the one output writer (a foreign file there is refused).
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        crate::output::write_file(path, self.to_json()?.as_bytes(), false)
    }
}

/// How a stored point differs from the one about to replace it, in words naming the first
/// differing setting; None when both describe the same measurement (same study, point,
/// repetition, target and settings).
pub(crate) fn conflict(stored: &SweepMeta, new: &SweepMeta) -> Option<String> {
    let show = |v: Option<&String>| v.map(String::as_str).unwrap_or("(not set)").to_string();
    for (n, _) in new.settings.iter().chain(stored.settings.iter()) {
        let a = stored.settings.iter().find(|(k, _)| k == n).map(|(_, v)| v);
        let b = new.settings.iter().find(|(k, _)| k == n).map(|(_, v)| v);
        if a != b {
            return Some(format!(
                "{n}={} there, {n}={} in this run",
                show(a),
                show(b)
            ));
        }
    }
    let fields = [
        ("suite", &stored.suite, &new.suite),
        ("study", &stored.study, &new.study),
        ("point", &stored.point_label(), &new.point_label()),
        (
            "repeat",
            &stored.repeat.to_string(),
            &new.repeat.to_string(),
        ),
        (
            "target",
            &stored.target.clone().unwrap_or_default(),
            &new.target.clone().unwrap_or_default(),
        ),
    ];
    for (n, a, b) in fields {
        if a != b {
            return Some(format!("{n} '{a}' there, '{b}' in this run"));
        }
    }
    None
}

/// A result stored without sweep metadata (from `fsbench run --output`) becomes a one-point
/// study named after its job; a workload's shows Filebench's figures (ops/s, MB/s, latency,
/// CPU per op).
fn plain_meta(r: &RunResult, index: usize) -> SweepMeta {
    let metrics = match r.kind {
        crate::result::Kind::Workload => ["ops_per_s", "mb_per_s", "lat_ms", "cpu_us_per_op"]
            .map(String::from)
            .to_vec(),
        _ => Vec::new(),
    };
    SweepMeta {
        suite: String::new(),
        study: "runs".into(),
        title: "Runs".into(),
        index,
        repeat: 0,
        point: vec![("run".into(), r.name.clone())],
        settings: Vec::new(),
        table: TableSpec {
            rows: vec!["run".into()],
            cols: Vec::new(),
            metrics,
            note: None,
        },
        chart: ChartSpec {
            x: None,
            kind: Some("bars".into()),
        },
        target: None,
    }
}

fn from_value(
    v: serde_json::Value,
    origin: &str,
    index: usize,
) -> Result<Record, crate::error::UsageError> {
    if v.get("kind").and_then(|k| k.as_str()) == Some("skipped") {
        let s: SkipRecord =
            serde_json::from_value(v).map_err(|e| usage!("{origin}: bad skipped record: {e}"))?;
        return Ok(Record::Skipped {
            meta: s.sweep,
            reason: s.reason,
        });
    }
    let text = v.to_string();
    let r = RunResult::from_json(&text, origin)?;
    let meta = match r.probes.get("sweep") {
        Some(m) => serde_json::from_value(m.clone())
            .map_err(|e| usage!("{origin}: bad sweep metadata: {e}"))?,
        None => plain_meta(&r, index),
    };
    Ok(Record::Run {
        meta,
        result: Box::new(r),
    })
}

/// Parse one file: a result, a skipped record, or a JSON array of results.
pub(crate) fn parse_records(
    text: &str,
    origin: &str,
) -> Result<Vec<Record>, crate::error::UsageError> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| usage!("{origin}: not a JSON result: {e}"))?;
    match v {
        serde_json::Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, x)| from_value(x, origin, i))
            .collect(),
        other => Ok(vec![from_value(other, origin, 0)?]),
    }
}

/// Expand directories to the `*.json` files in them (sorted), keep files as given.
pub fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, crate::error::UsageError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| usage!("cannot read directory {}: {e}", p.display()))?
                .flatten()
                .map(|e| e.path())
                .filter(|f| f.extension().is_some_and(|x| x == "json"))
                .collect();
            files.sort();
            out.extend(files);
        } else if let Ok(m) = std::fs::metadata(p) {
            // Results are regular files: a FIFO or a device would be read for ever.
            if !m.is_file() {
                return Err(usage!(
                    "{} is neither a result file nor a directory of them",
                    p.display()
                ));
            }
            out.push(p.clone());
        } else {
            return Err(usage!("{}: no such file or directory", p.display()));
        }
    }
    Ok(out)
}

/// Largest input `report` and `compare` read: a result file is kilobytes, a sweep's array of
/// results a few megabytes; `/dev/zero` or a huge file must be refused, not read until memory
/// runs out.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

/// Read one input of at most [`MAX_INPUT_BYTES`] as text.
pub fn read_bounded(f: &std::path::Path) -> Result<String, crate::error::UsageError> {
    use std::io::Read;
    let file = std::fs::File::open(f).map_err(|e| usage!("cannot read {}: {e}", f.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| usage!("cannot read {}: {e}", f.display()))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(usage!(
            "{} is larger than {}: not an fsbench result file",
            f.display(),
            crate::units::format_size_exact(MAX_INPUT_BYTES)
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| usage!("{}: not a JSON result: not UTF-8 text", f.display()))
}

/// Load every record from files and directories, in sweep order.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Record>, crate::error::UsageError> {
    let mut all = Vec::new();
    for f in expand_paths(paths)? {
        let origin = f.display().to_string();
        let text = read_bounded(&f)?;
        // A directory may hold other JSON (a suite manifest): skip files that are not records.
        if f.file_name()
            .is_some_and(|n| n == "suite.json" || n == "fscompare.json")
        {
            continue;
        }
        // ... and `fsbench advise` documents stored beside the results (fscompare does).
        if serde_json::from_str::<serde_json::Value>(&text)
            .is_ok_and(|v| v.get("kind").and_then(|k| k.as_str()) == Some("advise"))
        {
            continue;
        }
        all.extend(parse_records(&text, &origin)?);
    }
    if all.is_empty() {
        return Err(usage!("no results found in the files given"));
    }
    all.sort_by(|a, b| {
        let (x, y) = (a.meta(), b.meta());
        (x.suite.as_str(), x.index, x.repeat).cmp(&(y.suite.as_str(), y.index, y.repeat))
    });
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_records_roundtrip_and_garbage_is_a_usage_error() {
        let meta = SweepMeta {
            study: "s".into(),
            point: vec![("cache".into(), "raw".into())],
            ..Default::default()
        };
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.json");
        Record::skip(meta.clone(), "not root").write(&p).unwrap();
        let recs = load(&[d.path().to_path_buf()]).unwrap();
        match &recs[0] {
            Record::Skipped { meta: m, reason } => {
                assert_eq!(m, &meta);
                assert_eq!(reason, "not root");
            }
            _ => panic!("not a skip record"),
        }
        for bad in [
            "",
            "{",
            "[1]",
            "{\"schema_version\": 99}",
            "{\"kind\": \"skipped\"}",
        ] {
            assert!(parse_records(bad, "b.json").is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics(text in "[\\[\\]{}:,\"a-z0-9 ]{0,120}") {
            let _ = parse_records(&text, "p.json");
        }
    }
}
