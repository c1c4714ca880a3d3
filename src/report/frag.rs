//! The fragmentation report (`fsbench frag PATH`), like `fsadm -E`'s extent report: totals,
//! files by extent count, and the most fragmented files.

use super::{Format, Render};
use crate::probe::frag::FragReport;
use crate::units::format_bytes;
use std::fmt::Write;

impl Render for FragReport {
    const FORMATS: &'static [Format] = &[Format::Text, Format::Json];
    fn render(&self, format: Format) -> String {
        match Self::supported(format) {
            Format::Json => super::json(self),
            _ => text(self),
        }
    }
}

/// The report as text.
pub(crate) fn text(r: &FragReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Extent fragmentation report for {}", r.root);
    let _ = writeln!(
        s,
        "  files {}  total {}  extents {}  average extents per file {:.2}  average extent {}",
        r.files,
        format_bytes(r.total_bytes as f64),
        r.total_extents,
        r.avg_extents_per_file,
        format_bytes(r.avg_extent_bytes)
    );
    let hist: Vec<String> = r
        .histogram
        .iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect();
    let _ = writeln!(s, "  files by extent count  {}", hist.join("  "));
    if !r.worst.is_empty() {
        let _ = writeln!(s, "  most fragmented:");
        let _ = writeln!(
            s,
            "  {:>8} {:>12} {:>12}  file",
            "extents", "size", "per extent"
        );
        for f in &r.worst {
            let _ = writeln!(
                s,
                "  {:>8} {:>12} {:>12}  {}{}",
                f.extents,
                format_bytes(f.size_bytes as f64),
                format_bytes(if f.extents > 0 {
                    f.size_bytes as f64 / f.extents as f64
                } else {
                    0.0
                }),
                f.path,
                if f.unwritten_extents > 0 {
                    format!(" ({} unwritten)", f.unwritten_extents)
                } else {
                    String::new()
                }
            );
        }
    }
    if r.errors > 0 {
        let _ = writeln!(
            s,
            "  {} file(s) could not be mapped; first: {}",
            r.errors,
            r.first_error.as_deref().unwrap_or("")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::frag::FileExtents;

    #[test]
    fn text_lists_totals_buckets_and_the_worst_files() {
        let r = FragReport {
            root: "/d".into(),
            files: 2,
            total_bytes: 3 << 20,
            total_extents: 17,
            avg_extents_per_file: 8.5,
            avg_extent_bytes: (3 << 20) as f64 / 17.0,
            histogram: vec![("1".into(), 1), ("9-64".into(), 1)],
            worst: vec![FileExtents {
                path: "/d/holey".into(),
                size_bytes: 1 << 20,
                extents: 16,
                unwritten_extents: 2,
            }],
            errors: 1,
            first_error: Some("/d/x: no FIEMAP".into()),
        };
        assert_eq!(
            text(&r),
            "Extent fragmentation report for /d\n  files 2  total 3.00 MiB  extents 17  average extents per file 8.50  average extent 180.71 KiB\n  files by extent count  1: 1  9-64: 1\n  most fragmented:\n   extents         size   per extent  file\n        16     1.00 MiB    64.00 KiB  /d/holey (2 unwritten)\n  1 file(s) could not be mapped; first: /d/x: no FIEMAP\n"
        );
        assert!(r.render(Format::Json).contains("\"worst\""));
    }
}
