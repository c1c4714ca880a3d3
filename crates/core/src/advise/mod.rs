//! `fsbench advise`: VxFS-style tuning recommendations for the storage under a path, derived
//! from its topology ([`derive`](mod@derive)), checked against the devices' settings ([`checks`]) and,
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
    /// The chapter's other vxtunefs parameters, with why none applies on Linux.
    #[serde(default)]
    pub not_applicable: Vec<NotApplicable>,
}

/// A VxFS tunable with nothing on Linux to derive it for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotApplicable {
    pub name: String,
    pub reason: String,
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
        not_applicable: derive::NOT_APPLICABLE
            .iter()
            .map(|(name, reason)| NotApplicable {
                name: name.to_string(),
                reason: reason.to_string(),
            })
            .collect(),
    }
}

fn mbps(v: f64) -> String {
    format!("{:.1} MB/s", v / 1e6)
}

/// Correct the derived tunables with what was measured; every changed value lists the points
/// it rests on.
pub fn apply_measurement(derived: &Tunables, m: &Measurement) -> Tunables {
    let mut t = derived.clone();
    for dir in [Dir::Read, Dir::Write] {
        set_pref_io(&mut t, m, dir);
        set_nstream(&mut t, m, dir);
    }
    set_discovered_direct(&mut t, m);
    raise_max_direct(&mut t, m);
    t.refresh_dependents();
    t
}

/// `<dir>_pref_io` (and `<dir>_unit_io` with it) from the knee of the single-thread direct
/// size sweep.
fn set_pref_io(t: &mut Tunables, m: &Measurement, dir: Dir) {
    let curve = measure::size_curve(&m.points, dir, true);
    let Some(k) = measure::knee(&curve) else {
        return;
    };
    let peak = curve.iter().map(|c| c.1).fold(0.0, f64::max);
    let at = curve.iter().find(|c| c.0 == k).map(|c| c.1).unwrap_or(0.0);
    // Single-thread size-sweep points of this direction.
    let labels: Vec<String> = m
        .points
        .iter()
        .filter(|p| p.phase == measure::Phase::Sizes && p.dir == dir && p.direct)
        .map(|p| p.label())
        .collect();
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
        labels,
    );
    t.set(
        &format!("{}_unit_io", dir.name()),
        k,
        format!("= {}_pref_io", dir.name()),
    );
}

/// `<dir>_nstream` from the knee of the stream sweep (when it measured more than one count).
fn set_nstream(t: &mut Tunables, m: &Measurement, dir: Dir) {
    let streams = measure::stream_curve(&m.points, dir);
    if streams.len() <= 1 {
        return;
    }
    let Some(n) = measure::knee(&streams) else {
        return;
    };
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

/// Discovered direct: one threshold for both directions, so direct I/O is used only from
/// the size where it wins for reads and for writes.
fn set_discovered_direct(t: &mut Tunables, m: &Measurement) {
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
    let ev = direct_vs_buffered(m);
    let src = format!(
        "measured: direct overtakes buffered for reads at {}, for writes at {}",
        say(r),
        say(w)
    );
    // VxFS sends direct only I/Os larger than discovered_direct_iosz, so the threshold is
    // the measured size just below the one where direct wins.
    let below = |a: u64| threshold_below(m, a);
    let larger = |v: u64| format!("I/Os larger than {} go direct", sz(v));
    match (r, w) {
        (Some(a), Some(b)) => {
            let v = below(a.max(b));
            t.set_measured(
                "discovered_direct_iosz",
                v,
                format!("{src}; {}", larger(v)),
                ev,
            )
        }
        (Some(a), None) | (None, Some(a)) => t.set_measured(
            "discovered_direct_iosz",
            below(a),
            format!(
                "{src}; the threshold follows the direction where direct wins; {}",
                larger(below(a))
            ),
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
}

/// The discovered-direct threshold that sends `wins` (and larger I/Os) direct and smaller
/// ones buffered: the largest size measured below `wins`, else one byte less than `wins`.
fn threshold_below(m: &Measurement, wins: u64) -> u64 {
    m.points
        .iter()
        .filter(|p| p.phase == measure::Phase::Sizes && p.block_size_bytes < wins)
        .map(|p| p.block_size_bytes)
        .max()
        .unwrap_or(wins.saturating_sub(1).max(1))
}

/// One line per size measured both direct and buffered (reads, then writes): the evidence
/// for the discovered-direct threshold.
fn direct_vs_buffered(m: &Measurement) -> Vec<String> {
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
    ev
}

/// Direct I/Os are not split below the size where throughput peaks: raise `max_direct_iosz`
/// to the largest knee of the direct size sweeps.
fn raise_max_direct(t: &mut Tunables, m: &Measurement) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::{Phase, Point};

    fn point(phase: Phase, dir: Dir, direct: bool, bs: u64, threads: u32, mbs: f64) -> Point {
        Point {
            phase,
            dir,
            direct,
            block_size_bytes: bs,
            threads,
            bytes: 1 << 20,
            elapsed_s: 1.0,
            bytes_per_sec: mbs * 1e6,
            cpu_s: 0.1,
            runs_bytes_per_sec: Vec::new(),
        }
    }

    /// A measurement where direct reads win from `read_cross` (buffered always wins when
    /// `None`), direct writes from `write_cross`, and `streams` stream counts were run.
    fn measurement(
        read_cross: Option<usize>,
        write_cross: Option<usize>,
        streams: &[u32],
    ) -> Measurement {
        let mut points = Vec::new();
        for (dir, cross) in [(Dir::Read, read_cross), (Dir::Write, write_cross)] {
            for (i, (bs, direct)) in [
                (4u64 << 10, 40.0),
                (64 << 10, 400.0),
                (256 << 10, 1100.0),
                (1 << 20, 1500.0),
            ]
            .into_iter()
            .enumerate()
            {
                let buffered = if cross.is_some_and(|c| i >= c) {
                    direct * 0.5
                } else {
                    direct * 2.0
                };
                points.push(point(Phase::Sizes, dir, false, bs, 1, buffered));
                points.push(point(Phase::Sizes, dir, true, bs, 1, direct));
            }
            for &t in streams {
                points.push(point(
                    Phase::Streams,
                    dir,
                    true,
                    1 << 20,
                    t,
                    1000.0 * (t as f64).min(4.0),
                ));
            }
        }
        Measurement {
            points,
            ..Measurement::default()
        }
    }

    /// The corrected tunables, value and source and evidence of each, for every branch of
    /// `apply_measurement` (pinned from the code before it was split into steps).
    #[test]
    fn measurement_corrects_the_derived_values() {
        let derived = derive::derive(&derive::Layout::stripe(4, 64 << 10, "test"));
        let cases = [
            (
                measurement(Some(2), Some(3), &[1, 2, 4, 8]),
                13568457348114282995,
            ),
            (
                measurement(Some(1), None, &[1, 2, 4, 8]),
                16001118882657525848,
            ),
            (measurement(None, None, &[1]), 3010506577086832297),
        ];
        for (i, (m, pin)) in cases.iter().enumerate() {
            let t = apply_measurement(&derived, m);
            let json = serde_json::to_string(&t).unwrap();
            let h = json.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
            });
            assert_eq!(h, *pin, "case {i}: {json}");
        }
        let t = apply_measurement(&derived, &cases[1].0);
        assert_eq!(t.get("read_pref_io"), Some(1 << 20));
        // Direct wins from 64k: I/Os larger than the 4k measured below it go direct.
        assert_eq!(t.get("discovered_direct_iosz"), Some(4 << 10));
        assert!(json_has(
            &t,
            "the threshold follows the direction where direct wins"
        ));
        let t = apply_measurement(&derived, &cases[2].0);
        assert!(json_has(&t, "keep the default or use buffered I/O"));
    }

    fn json_has(t: &Tunables, s: &str) -> bool {
        serde_json::to_string(t).unwrap().contains(s)
    }
}
