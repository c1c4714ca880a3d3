//! Tuning advice as text: the topology, the tunables the way `vxtunefs` prints them
//! (`name = value`, with where each came from), the checks, and the measurements.

use crate::advise::checks::{Check, Status};
use crate::advise::derive::Tunables;
use crate::advise::Advice;
use crate::probe::topology::BlockDev;
use crate::units::format_size_exact as sz;
use std::fmt::Write;

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "-".into())
}

fn device(out: &mut String, d: &BlockDev, indent: usize) {
    let pad = " ".repeat(indent);
    let size = d
        .size_bytes
        .map(|s| crate::units::format_bytes(s as f64))
        .unwrap_or_default();
    let _ = write!(out, "{pad}{} ({:?}, {}, {size})", d.name, d.kind, d.dev);
    if let Some(p) = &d.partition {
        let _ = write!(
            out,
            " partition {} of {}, starts at byte {}",
            opt(&p.number),
            p.disk,
            p.start_bytes
        );
    }
    if let Some(l) = &d.loop_info {
        let _ = write!(
            out,
            " backing file {} offset {} direct_io {}",
            l.backing_file,
            l.offset_bytes,
            opt(&l.direct_io)
        );
    }
    if let Some(m) = &d.md {
        let _ = write!(
            out,
            " md {} raid_disks {} chunk {}",
            m.level,
            m.raid_disks,
            m.chunk_size_bytes.map(sz).unwrap_or_else(|| "-".into())
        );
    }
    if let Some(m) = &d.dm {
        let _ = write!(out, " dm {}", m.name);
    }
    out.push('\n');
    if let Some(q) = &d.queue {
        let _ = writeln!(
            out,
            "{pad}  logical_block_size {}  physical_block_size {}  minimum_io_size {}  optimal_io_size {}  rotational {}",
            opt(&q.logical_block_size_bytes),
            opt(&q.physical_block_size_bytes),
            opt(&q.minimum_io_size_bytes),
            opt(&q.optimal_io_size_bytes),
            q.rotational.map(|r| if r { "yes" } else { "no" }).unwrap_or("-")
        );
        let _ = writeln!(
            out,
            "{pad}  nr_requests {}  max_sectors_kb {} (hw {})  read_ahead_kb {}  scheduler {} [{}]",
            opt(&q.nr_requests),
            opt(&q.max_sectors_kb),
            opt(&q.max_hw_sectors_kb),
            opt(&q.read_ahead_kb),
            opt(&q.scheduler),
            q.schedulers_available.join(" ")
        );
        let _ = writeln!(
            out,
            "{pad}  queue depth {}{}  hw queues {}  numa node {}",
            opt(&d.queue_depth),
            d.queue_depth_source
                .as_ref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default(),
            opt(&d.hw_queues),
            opt(&d.numa_node)
        );
    }
    for n in &d.notes {
        let _ = writeln!(out, "{pad}  note: {n}");
    }
    for l in &d.lower {
        device(out, l, indent + 2);
    }
}

/// `name = value    # source`, vxtunefs style.
fn tunables(out: &mut String, title: &str, t: &Tunables, evidence: bool) {
    let _ = writeln!(out, "{title}");
    for v in &t.values {
        let line = format!("{} = {}", v.name, v.value);
        let _ = writeln!(out, "{line:<34} # {}", v.source);
        if evidence {
            for e in &v.evidence {
                let _ = writeln!(out, "{:<34}   <- {e}", "");
            }
        }
    }
}

/// The advice as text (`fsbench advise PATH`, and advise sections of text reports).
pub(crate) fn text(a: &Advice) -> String {
    let mut out = String::new();
    let t = &a.topology;
    let _ = writeln!(out, "Storage under {}", t.path);
    if let Some(m) = &t.mount {
        let _ = writeln!(
            out,
            "  mount        {} type {} from {} ({})",
            m.mount_point, m.fs_type, m.source, m.options
        );
    }
    if let Some(g) = &t.fs {
        let stripe = match (g.stripe_unit_bytes, g.stripe_width_bytes) {
            (Some(u), Some(w)) => format!("stripe unit {} width {}", sz(u), sz(w)),
            _ => "no stripe".into(),
        };
        let _ = writeln!(
            out,
            "  fs geometry  {} block {}, {stripe} ({})",
            g.fs_type,
            opt(&g.block_size_bytes),
            g.source
        );
    }
    if let Some(d) = &t.device {
        let _ = writeln!(out, "  devices");
        device(&mut out, d, 4);
    }
    for n in &t.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    let l = &a.derived.layout;
    let _ = writeln!(out, "  layout       {} (from {})\n", l.describe(), l.source);
    let mp = t
        .mount
        .as_ref()
        .map(|m| m.mount_point.as_str())
        .unwrap_or(t.path.as_str());
    tunables(
        &mut out,
        &format!("Filesystem i/o parameters for {mp} (derived from the layout)"),
        &a.derived,
        false,
    );
    if !a.not_applicable.is_empty() {
        let _ = writeln!(
            out,
            "\nNot applicable on Linux (nothing to derive them for)"
        );
        for n in &a.not_applicable {
            let _ = writeln!(out, "  {:<22} {}", n.name, n.reason);
        }
    }
    let _ = writeln!(out, "\nChecks");
    if a.checks.is_empty() {
        let _ = writeln!(out, "  (none: no block device to check)");
    }
    checks(&mut out, &a.checks);
    measured(&mut out, a, mp);
    out
}

fn checks(out: &mut String, list: &[Check]) {
    for c in list {
        let tag = match c.status {
            Status::Ok => "ok  ",
            Status::Info => "info",
            Status::Warn => "WARN",
        };
        let _ = writeln!(out, "  {tag}  {:<8} {}: {}", c.subject, c.id, c.finding);
        if c.status != Status::Ok {
            let _ = writeln!(out, "        why: {}", c.reason);
            if let Some(f) = &c.fix {
                let _ = writeln!(out, "        fix: {f}");
            }
        }
    }
}

fn measured(out: &mut String, a: &Advice, mp: &str) {
    if let (Some(m), Some(measured)) = (&a.measurement, &a.measured) {
        let _ = writeln!(
            out,
            "\nMeasured on {} ({}, {:.1} s per run at most, one pass over the file per run, {} run(s) per point)",
            m.scratch_file,
            crate::units::format_bytes(m.file_size_bytes as f64),
            m.max_seconds_per_run,
            m.repeat
        );
        for p in &m.points {
            let _ = writeln!(out, "  {}", p.label());
        }
        for n in &m.notes {
            let _ = writeln!(out, "  note: {n}");
        }
        out.push('\n');
        tunables(
            out,
            &format!("Filesystem i/o parameters for {mp} (measured)"),
            measured,
            true,
        );
        if !a.measured_checks.is_empty() {
            let _ = writeln!(out, "\nChecks that change with the measured values");
            checks(out, &a.measured_checks);
        }
    }
}

impl super::Render for Advice {
    const FORMATS: &'static [super::Format] = &[
        super::Format::Text,
        super::Format::Json,
        super::Format::Html,
    ];

    fn render(&self, format: super::Format) -> String {
        match Self::supported(format) {
            super::Format::Json => super::json(self),
            super::Format::Html => super::html::advise_page(self),
            _ => text(self),
        }
    }
}
