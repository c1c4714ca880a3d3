//! `fsbench advise`: VxFS-style tuning recommendations for the storage under a path, derived
//! from its topology ([`derive`]), checked against the devices' settings ([`checks`]) and,
//! on request, confirmed or corrected by short measurements ([`measure`]).

pub mod checks;
pub mod derive;
pub mod measure;

use crate::probe::topology::Topology;
use crate::units::format_size_exact as sz;
use derive::Tunables;
use measure::{Dir, Measurement};
use serde::{Deserialize, Serialize};

/// Everything `advise` found, in the shape the JSON output has.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Advice {
    pub schema_version: u32,
    pub kind: String,
    pub topology: Topology,
    /// Derived from the layout alone.
    pub derived: Tunables,
    pub checks: Vec<checks::Check>,
    pub measurement: Option<Measurement>,
    /// Derived values corrected by the measurement (present with --measure).
    pub measured: Option<Tunables>,
    /// Checks whose outcome changes when run against the measured values.
    #[serde(default)]
    pub measured_checks: Vec<checks::Check>,
}

impl Advice {
    /// Attach a measurement: corrected tunables and the checks they change.
    pub fn add_measurement(&mut self, m: Measurement) {
        let measured = apply_measurement(&self.derived, &m);
        let again = checks::run(&self.topology, &measured);
        self.measured_checks = again
            .into_iter()
            .filter(|c| {
                !self
                    .checks
                    .iter()
                    .any(|d| d.id == c.id && d.subject == c.subject && d.status == c.status)
            })
            .collect();
        self.measured = Some(measured);
        self.measurement = Some(m);
    }
}

/// Advice from the topology alone.
pub fn from_topology(topology: Topology) -> Advice {
    let layout = match &topology.device {
        Some(d) => derive::layout_of(d, topology.fs.as_ref()),
        None => derive::Layout::concat("no block device under the path"),
    };
    let derived = derive::derive(&layout);
    let checks = checks::run(&topology, &derived);
    Advice {
        schema_version: 1,
        kind: "advise".into(),
        topology,
        derived,
        checks,
        measurement: None,
        measured: None,
        measured_checks: Vec::new(),
    }
}

fn mbps(v: f64) -> String {
    format!("{:.1} MB/s", v / 1e6)
}

/// Correct the derived tunables with what was measured; every changed value lists the points
/// it rests on.
pub fn apply_measurement(derived: &Tunables, m: &Measurement) -> Tunables {
    let mut t = derived.clone();
    // Single-thread size-sweep points of one direction (one cache mode, or both).
    let labels = |dir: Dir| -> Vec<String> {
        m.points
            .iter()
            .filter(|p| p.phase == measure::Phase::Sizes && p.dir == dir && p.direct)
            .map(|p| p.label())
            .collect()
    };
    for dir in [Dir::Read, Dir::Write] {
        let curve = measure::size_curve(&m.points, dir, true);
        if let Some(k) = measure::knee(&curve) {
            let peak = curve.iter().map(|c| c.1).fold(0.0, f64::max);
            let at = curve.iter().find(|c| c.0 == k).map(|c| c.1).unwrap_or(0.0);
            t.set_measured(
                &format!("{}_pref_io", dir.name()),
                k,
                format!(
                    "measured: smallest sequential direct {} size reaching 90% of the peak ({} at {} vs peak {})",
                    dir.name(),
                    mbps(at),
                    sz(k),
                    mbps(peak)
                ),
                labels(dir),
            );
            t.set(
                &format!("{}_unit_io", dir.name()),
                k,
                format!("= {}_pref_io", dir.name()),
            );
        }
        let streams = measure::stream_curve(&m.points, dir);
        if streams.len() > 1 {
            if let Some(n) = measure::knee(&streams) {
                let bs = m
                    .points
                    .iter()
                    .find(|p| p.phase == measure::Phase::Streams && p.dir == dir)
                    .map(|p| p.block_size_bytes)
                    .unwrap_or(0);
                let ev: Vec<String> = m
                    .points
                    .iter()
                    .filter(|p| p.phase == measure::Phase::Streams && p.dir == dir)
                    .map(|p| p.label())
                    .collect();
                t.set_measured(
                    &format!("{}_nstream", dir.name()),
                    n as u64,
                    format!(
                        "measured: threads of sequential direct {} {} at which throughput stops growing (90% of the peak)",
                        dir.name(),
                        sz(bs)
                    ),
                    ev,
                );
            }
        }
    }
    // Discovered direct: one threshold for both directions, so direct I/O is used only from
    // the size where it wins for reads and for writes.
    let r = measure::crossover(
        &measure::size_curve(&m.points, Dir::Read, false),
        &measure::size_curve(&m.points, Dir::Read, true),
    );
    let w = measure::crossover(
        &measure::size_curve(&m.points, Dir::Write, false),
        &measure::size_curve(&m.points, Dir::Write, true),
    );
    let say = |x: Option<u64>| {
        x.map(sz)
            .unwrap_or_else(|| "never (buffered wins at every size)".into())
    };
    let mut ev = Vec::new();
    for dir in [Dir::Read, Dir::Write] {
        let b = measure::size_curve(&m.points, dir, false);
        for (s, d) in measure::size_curve(&m.points, dir, true) {
            if let Some(&(_, bv)) = b.iter().find(|x| x.0 == s) {
                ev.push(format!(
                    "seq {} {}: direct {} vs buffered {}{}",
                    dir.name(),
                    sz(s),
                    mbps(d),
                    mbps(bv),
                    if d >= bv { "  (direct wins)" } else { "" }
                ));
            }
        }
    }
    let src = format!(
        "measured: direct overtakes buffered for reads at {}, for writes at {}",
        say(r),
        say(w)
    );
    match (r, w) {
        (Some(a), Some(b)) => t.set_measured("discovered_direct_iosz", a.max(b), src, ev),
        (Some(a), None) | (None, Some(a)) => t.set_measured(
            "discovered_direct_iosz",
            a,
            format!("{src}; the threshold follows the direction where direct wins"),
            ev,
        ),
        (None, None) => {
            if let Some(v) = t
                .values
                .iter_mut()
                .find(|v| v.name == "discovered_direct_iosz")
            {
                v.source = format!("{} — {src}: keep the default or use buffered I/O", v.source);
                v.evidence = ev;
            }
        }
    }
    // Direct I/Os are not split below the size where throughput peaks.
    let knees: Vec<u64> = [Dir::Read, Dir::Write]
        .iter()
        .filter_map(|&d| measure::knee(&measure::size_curve(&m.points, d, true)))
        .collect();
    if let Some(&k) = knees.iter().max() {
        let cur = t.get("max_direct_iosz").unwrap_or(0);
        if k > cur {
            t.set_measured(
                "max_direct_iosz",
                k,
                format!(
                    "measured: raised to the largest knee ({}) so direct I/Os are not split below it",
                    sz(k)
                ),
                Vec::new(),
            );
        }
    }
    t.refresh_dependents();
    t
}
