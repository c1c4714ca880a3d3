//! Axes and settings: every Job parameter a sweep can vary, set from a name and a string
//! value, the same way on the command line (`--bs 64k,1m`), in suite files and in stored
//! results. Workload variables (`var.NAME`, Filebench's `-D NAME=VALUE`) go into a string map
//! that the workload front end reads; they never touch the Job directly.

use crate::error::UsageError;
use crate::job::params::{self, Front, Param, PARAMS};
use crate::job::Job;
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
    /// A sequential write continues on the file as it is, rather than on a fresh file
    /// (the ssd-pts fill writes over the purged target).
    pub keep_contents: bool,
    pub files: u32,
    pub vars: BTreeMap<String, String>,
}

impl Default for PointJob {
    fn default() -> Self {
        PointJob {
            job: Job::default(),
            keep_contents: false,
            files: 1,
            vars: BTreeMap::new(),
        }
    }
}

/// The number of files (users) is an axis of its own: it is not a Job field but decides how
/// many targets the point's Job gets.
const FILES: (&str, &[&str], &str) = ("files", &["nfiles", "users", "targets"], "files");

/// Pseudo-axes set by suites (not Job parameters): they carry labels only.
const PSEUDO: &[&str] = &[
    "target",
    "phase",
    "personality",
    "written",
    "read",
    "workload",
    // A tuning applied to some points of a study (`super::tuned`).
    "tuning",
    // The ssd-pts suite's round and read/write mix (`super::pts`; the mix sets rwmix).
    "round",
    "mix",
];

/// The Job parameters a sweep can vary, in the order they are listed.
fn job_axes() -> impl Iterator<Item = &'static Param> {
    PARAMS.iter().filter(|p| p.axis)
}

/// Canonical axis names in the order they are listed (`files` after `threads`).
pub(crate) fn axis_names() -> Vec<&'static str> {
    let mut names = Vec::new();
    for p in job_axes() {
        names.push(p.name);
        if p.name == "threads" {
            names.push(FILES.0);
        }
    }
    names
}

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
    if let Some(p) = params::find(name).filter(|p| p.axis) {
        return Ok(p.name.to_string());
    }
    if name == FILES.0 || FILES.1.contains(&name) {
        return Ok(FILES.0.to_string());
    }
    if PSEUDO.contains(&name) {
        return Ok(name.to_string());
    }
    Err(usage!(
        "unknown axis '{name}': expected one of {} or var.NAME for a workload variable",
        axis_names().join(", ")
    ))
}

/// How an axis is named in table headers.
pub fn label(name: &str) -> String {
    if let Some(v) = name.strip_prefix("var.") {
        return v.to_string();
    }
    if let Some(p) = job_axes().find(|p| p.name == name) {
        return p.label.to_string();
    }
    match name {
        "files" => FILES.2.into(),
        "written" => "files written".into(),
        "read" => "files read".into(),
        other => other.to_string(),
    }
}

/// True when the axis holds sizes in bytes (shown on a log scale in charts).
pub fn is_size_axis(name: &str) -> bool {
    matches!(name, "bs" | "size")
}

/// Apply one setting to a point. `name` must be canonical (see [`canonical`]), or the name
/// of a Job parameter `run` has a flag for: `sweep` gives those (`--fsync`, `--no-invalidate`)
/// one value for every point.
pub(crate) fn apply(p: &mut PointJob, name: &str, value: &str) -> Result<(), UsageError> {
    let v = value.trim();
    let settable = |x: &&Param| x.name == name && (x.axis || x.flag.is_some());
    if let Some(param) = PARAMS.iter().find(settable) {
        return param.set(&mut p.job, v, Front::Axis);
    }
    match name {
        "files" => p.files = params::parse_ranged(v, "number of files", 1, 4096)? as u32,
        n if n.starts_with("var.") => {
            p.vars.insert(n["var.".len()..].to_string(), v.to_string());
        }
        // Pseudo-axes carry labels only; the suite that sets them acts on them.
        n if PSEUDO.contains(&n) => {}
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
    check_values(&name, &values)?;
    Ok(Axis { name, values })
}

/// Most values one axis may have: each is at least one measured run per value of every
/// other axis, and the list is held and printed whole.
pub const MAX_AXIS_VALUES: usize = 1000;

/// Refuse an axis with more than [`MAX_AXIS_VALUES`] values or with a value given twice (a
/// point measured twice under one name; `--repeat` repeats points).
pub fn check_values(name: &str, values: &[String]) -> Result<(), UsageError> {
    if values.len() > MAX_AXIS_VALUES {
        return Err(usage!(
            "axis {name}: {} values is more than the {MAX_AXIS_VALUES} an axis may have",
            values.len()
        ));
    }
    let mut seen = std::collections::HashSet::with_capacity(values.len());
    if let Some(dup) = values.iter().find(|v| !seen.insert(v.as_str())) {
        return Err(usage!(
            "axis {name}: value '{dup}' is given twice (each value once; --repeat N measures every point N times)"
        ));
    }
    Ok(())
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
    use crate::job::{Access, CachePolicy};
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
    fn long_or_repeating_value_lists_are_refused() {
        let many = vec!["4k"; 20_001].join(",");
        let e = parse_axis_arg(&format!("bs={many}")).unwrap_err().0;
        assert!(e.contains("20001 values") && e.contains("1000"), "{e}");
        let distinct: Vec<String> = (1..=1001).map(|i| i.to_string()).collect();
        let e = parse_axis_arg(&format!("threads={}", distinct.join(",")))
            .unwrap_err()
            .0;
        assert!(e.contains("1001 values"), "{e}");
        assert!(parse_axis_arg(&format!("threads={}", distinct[..1000].join(","))).is_ok());
        let e = parse_axis_arg("bs=4k,8k,4k").unwrap_err().0;
        assert!(e.contains("'4k' is given twice"), "{e}");
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
