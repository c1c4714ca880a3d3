//! Axes and settings: every Job parameter a sweep can vary, set from a name and a string
//! value, the same way on the command line (`--bs 64k,1m`), in suite files and in stored
//! results. Workload variables (`var.NAME`, Filebench's `-D NAME=VALUE`) go into a string map
//! that the workload front end reads; they never touch the Job directly.

use crate::error::UsageError;
use crate::job::{Access, CachePolicy, EngineKind, Job, WorkerMode};
use crate::units::{parse_duration, parse_size_as, BareUnit};
use crate::usage;
use std::collections::BTreeMap;

/// One swept parameter and the values it takes, in the order they run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Axis {
    pub name: String,
    pub values: Vec<String>,
}

/// What the settings of one point build: the Job, the number of files (users), and the
/// workload variables.
#[derive(Debug, Clone)]
pub struct PointJob {
    pub job: Job,
    pub files: u32,
    pub vars: BTreeMap<String, String>,
}

impl Default for PointJob {
    fn default() -> Self {
        PointJob {
            job: Job::default(),
            files: 1,
            vars: BTreeMap::new(),
        }
    }
}

/// Names accepted as axes or settings (aliases after the canonical name).
pub const AXIS_NAMES: &[(&str, &[&str], &str)] = &[
    ("rw", &["access"], "access"),
    ("bs", &["iosize", "block_size"], "block size"),
    ("size", &["file_size", "filesize"], "file size"),
    ("cache", &["policy"], "cache"),
    ("engine", &[], "engine"),
    ("qd", &["queue_depth", "iodepth"], "queue depth"),
    ("threads", &["nthreads"], "threads"),
    ("files", &["nfiles", "users", "targets"], "files"),
    ("count", &["iocount", "io_count"], "I/Os per thread"),
    ("time", &["runtime"], "run time"),
    ("nrep", &["repeats"], "repetitions"),
    ("rwmix", &["rdpct", "read_pct"], "read %"),
    ("seed", &[], "seed"),
    ("dsync", &[], "O_DSYNC"),
    ("sync", &[], "O_SYNC"),
    ("fsync", &[], "fsync"),
    ("processes", &["workers"], "workers"),
];

/// The canonical name of an axis, or a usage error listing what is accepted.
pub fn canonical(name: &str) -> Result<String, UsageError> {
    if let Some(v) = name
        .strip_prefix("var.")
        .or_else(|| name.strip_prefix("D."))
    {
        if v.is_empty() {
            return Err(usage!("empty workload variable name in axis '{name}'"));
        }
        return Ok(format!("var.{v}"));
    }
    for (canon, aliases, _) in AXIS_NAMES {
        if name == *canon || aliases.contains(&name) {
            return Ok(canon.to_string());
        }
    }
    // Pseudo-axes set by suites (not Job parameters) keep their names.
    if matches!(
        name,
        "target" | "phase" | "personality" | "written" | "read" | "workload"
    ) {
        return Ok(name.to_string());
    }
    let names: Vec<&str> = AXIS_NAMES.iter().map(|(c, _, _)| *c).collect();
    Err(usage!(
        "unknown axis '{name}': expected one of {} or var.NAME for a workload variable",
        names.join(", ")
    ))
}

/// How an axis is named in table headers.
pub fn label(name: &str) -> String {
    if let Some(v) = name.strip_prefix("var.") {
        return v.to_string();
    }
    for (canon, _, label) in AXIS_NAMES {
        if name == *canon {
            return label.to_string();
        }
    }
    match name {
        "written" => "files written".into(),
        "read" => "files read".into(),
        other => other.to_string(),
    }
}

/// True when the axis holds sizes in bytes (shown on a log scale in charts).
pub fn is_size_axis(name: &str) -> bool {
    matches!(name, "bs" | "size")
}

fn parse_bool(name: &str, v: &str) -> Result<bool, UsageError> {
    match v {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(usage!(
            "bad {name} value '{v}': expected 1/0, true/false, yes/no"
        )),
    }
}

fn parse_access(v: &str) -> Result<(Access, Option<EngineKind>), UsageError> {
    // vxbench and the storage-foundation tables spell random access with an underscore.
    Ok(match v {
        "rand_read" => (Access::RandRead, None),
        "rand_write" => (Access::RandWrite, None),
        "rand_mixed" => (Access::RandRw, None),
        "seq_read" => (Access::Read, None),
        "seq_write" => (Access::Write, None),
        "mmapread" | "mmap_read" => (Access::Read, Some(EngineKind::Mmap)),
        "mmapwrite" | "mmap_write" => (Access::Write, Some(EngineKind::Mmap)),
        other => (Access::parse(other)
            .map_err(|_| usage!("unknown access '{other}': expected read, write, rw, randread (rand_read), randwrite (rand_write), randrw, mmapread or mmapwrite"))?, None),
    })
}

/// Apply one setting to a point. `name` must be canonical (see [`canonical`]).
pub fn apply(p: &mut PointJob, name: &str, value: &str) -> Result<(), UsageError> {
    let v = value.trim();
    let size = |what: &str| parse_size_as(v, BareUnit::Bytes, what);
    let count = |what: &str| parse_size_as(v, BareUnit::Count, what);
    let small = |what: &str, max: u64| -> Result<u32, UsageError> {
        let n = count(what)?;
        if n == 0 || n > max {
            return Err(usage!("bad {what} '{v}': must be 1 to {max}"));
        }
        Ok(n as u32)
    };
    let j = &mut p.job;
    match name {
        "rw" => {
            let (a, e) = parse_access(v)?;
            j.access = a;
            if let Some(e) = e {
                j.engine = e;
            }
        }
        "bs" => j.block_size = size("block size")?,
        "size" => j.file_size = Some(size("file size")?),
        "cache" => j.cache = CachePolicy::parse(v)?,
        "engine" => j.engine = EngineKind::parse(v)?,
        "qd" => j.queue_depth = small("queue depth", 4096)?,
        "threads" => j.threads = small("thread count", crate::job::MAX_THREADS as u64)?,
        "files" => p.files = small("number of files", 4096)?,
        "count" => j.io_count = Some(count("I/O count")?),
        "time" => j.time_s = Some(parse_duration(v)?.as_secs_f64()),
        "nrep" => j.repeats = small("repeat count", 1 << 20)?,
        "rwmix" => {
            let n = count("read percentage")?;
            if n > 100 {
                return Err(usage!("bad read percentage '{v}': must be 0 to 100"));
            }
            j.read_pct = n as u8;
        }
        "seed" => {
            j.seed = v
                .parse()
                .map_err(|_| usage!("bad seed '{v}': expected a whole number"))?
        }
        "dsync" => j.open.dsync = parse_bool(name, v)?,
        "sync" => j.open.sync = parse_bool(name, v)?,
        "fsync" => j.fsync = parse_bool(name, v)?,
        "processes" => {
            j.workers = match v {
                "per-user" => WorkerMode::ProcessPerUser,
                "per-thread" => WorkerMode::ProcessPerThread,
                "threads" | "none" => WorkerMode::Threads,
                _ => {
                    return Err(usage!(
                        "bad processes '{v}': expected per-user, per-thread or threads"
                    ))
                }
            }
        }
        n if n.starts_with("var.") => {
            p.vars.insert(n["var.".len()..].to_string(), v.to_string());
        }
        // Pseudo-axes carry labels only; the suite that sets them acts on them.
        "target" | "phase" | "personality" | "written" | "read" | "workload" => {}
        other => return Err(usage!("unknown axis '{other}'")),
    }
    Ok(())
}

/// Parse `NAME=v1,v2,...` (the generic `--axis` flag and `-D` variables).
pub fn parse_axis_arg(arg: &str) -> Result<Axis, UsageError> {
    let (name, values) = arg
        .split_once('=')
        .ok_or_else(|| usage!("bad axis '{arg}': expected NAME=VALUE[,VALUE...]"))?;
    let name = canonical(name.trim())?;
    let values = split_values(values);
    if values.is_empty() {
        return Err(usage!(
            "axis '{name}' has no values: give NAME=VALUE[,VALUE...]"
        ));
    }
    Ok(Axis { name, values })
}

/// Split a comma-separated list, dropping empty items.
pub fn split_values(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn apply_sets_job_fields() {
        let mut p = PointJob::default();
        for (n, v) in [
            ("rw", "rand_read"),
            ("bs", "64k"),
            ("cache", "discovered=128k"),
            ("threads", "4"),
            ("files", "3"),
            ("size", "1m"),
            ("var.nfiles", "1000"),
        ] {
            apply(&mut p, &canonical(n).unwrap(), v).unwrap();
        }
        assert_eq!(p.job.access, Access::RandRead);
        assert_eq!(p.job.block_size, 65536);
        assert_eq!(p.job.cache, CachePolicy::Discovered { threshold: 131072 });
        assert_eq!(p.job.threads, 4);
        assert_eq!(p.files, 3);
        assert_eq!(p.job.file_size, Some(1 << 20));
        assert_eq!(p.vars["nfiles"], "1000");
    }

    #[test]
    fn aliases_and_errors() {
        assert_eq!(canonical("iosize").unwrap(), "bs");
        assert_eq!(canonical("D.dir").unwrap(), "var.dir");
        assert!(canonical("blocksz").unwrap_err().0.contains("unknown axis"));
        let mut p = PointJob::default();
        assert!(apply(&mut p, "threads", "0").is_err());
        assert!(apply(&mut p, "rwmix", "101").is_err());
        assert!(apply(&mut p, "dsync", "maybe").is_err());
        assert!(parse_axis_arg("bs").is_err());
        assert!(parse_axis_arg("bs=").is_err());
        assert_eq!(
            parse_axis_arg("iosize=4k, 8k").unwrap(),
            Axis {
                name: "bs".into(),
                values: vec!["4k".into(), "8k".into()]
            }
        );
    }

    proptest! {
        // Whatever the user types, parsing an axis and applying its values never panics.
        #[test]
        fn axis_parsing_never_panics(name in "[a-z_.]{0,12}", vals in "[0-9a-z=,._-]{0,24}") {
            if let Ok(axis) = parse_axis_arg(&format!("{name}={vals}")) {
                let mut p = PointJob::default();
                for v in &axis.values {
                    let _ = apply(&mut p, &axis.name, v);
                }
            }
        }
    }
}
