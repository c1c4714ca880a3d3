//! The fragmentation report (`fsbench frag PATH`), like `fsadm -E`'s extent report: totals,
//! files by extent count, and the most fragmented files.

use super::{Format, Render};
use crate::probe::frag::{DirReport, FragReport};
use crate::probe::freefrag::FreeSpaceReport;
use crate::reorg::ReorgReport;
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
    if let Some(d) = &r.directories {
        s.push_str(&dirs_text(d));
    }
    if let Some(f) = &r.free_space {
        s.push_str(&free_text(f));
    }
    s
}

/// The directory section: totals and the directories in most extents.
fn dirs_text(d: &DirReport) -> String {
    let mut s = String::from("Directory fragmentation report\n");
    if let Some(why) = &d.unsupported {
        let _ = writeln!(s, "  not available: {why}");
        return s;
    }
    let _ = writeln!(
        s,
        "  directories {}  extents {}  average extents per directory {:.2}  in more than one extent {}",
        d.dirs, d.total_extents, d.avg_extents_per_dir, d.fragmented
    );
    if !d.worst.is_empty() {
        let _ = writeln!(s, "  most fragmented:");
        let _ = writeln!(
            s,
            "  {:>8} {:>12} {:>9}  directory",
            "extents", "size", "entries"
        );
        for x in &d.worst {
            let _ = writeln!(
                s,
                "  {:>8} {:>12} {:>9}  {}",
                x.extents,
                format_bytes(x.size_bytes as f64),
                x.entries,
                x.path
            );
        }
    }
    if d.errors > 0 {
        let _ = writeln!(
            s,
            "  {} directory(ies) could not be mapped; first: {}",
            d.errors,
            d.first_error.as_deref().unwrap_or("")
        );
    }
    s
}

/// The free-space section: totals, then free extents by power-of-two size class.
pub(crate) fn free_text(f: &FreeSpaceReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Free space fragmentation of the {} file system holding {} ({} blocks)",
        f.fs_type,
        f.path,
        format_bytes(f.block_size as f64)
    );
    if let Some(why) = &f.unsupported {
        let _ = writeln!(s, "  not available: {why}");
        return s;
    }
    let bytes = |blocks: f64| format_bytes(blocks * f.block_size as f64);
    let _ = writeln!(
        s,
        "  free {} ({} blocks) in {} extents  largest {}  smallest {}  average {}",
        format_bytes(f.free_bytes as f64),
        f.free_blocks,
        f.free_extents,
        bytes(f.largest_blocks as f64),
        bytes(f.smallest_blocks as f64),
        bytes(f.avg_blocks)
    );
    if f.classes.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "  {:>10} {:>10}  {:>25}  {:>9} {:>12} {:>7}",
        "from", "to", "extent size", "extents", "blocks", "% free"
    );
    for c in &f.classes {
        // The byte range is half-open, as e2freefrag prints it: 4 KiB up to (not incl.) 8 KiB.
        let range = format!(
            "{} - <{}",
            bytes(c.min_blocks as f64),
            bytes(c.max_blocks.saturating_add(1) as f64)
        );
        let _ = writeln!(
            s,
            "  {:>10} {:>10}  {:>25}  {:>9} {:>12} {:>7.2}",
            c.min_blocks, c.max_blocks, range, c.extents, c.blocks, c.pct
        );
    }
    s
}

impl Render for ReorgReport {
    const FORMATS: &'static [Format] = &[Format::Text, Format::Json];
    fn render(&self, format: Format) -> String {
        match Self::supported(format) {
            Format::Json => super::json(self),
            _ => reorg_text(self),
        }
    }
}

/// One line per file: extents before and after, the mechanism, and why it was left or failed.
pub(crate) fn reorg_text(r: &ReorgReport) -> String {
    let mut s = String::from("Extent reorganisation\n");
    let _ = writeln!(
        s,
        "  {:>8} {:>8} {:>12}  {:<23} file",
        "before", "after", "size", "method"
    );
    for f in &r.files {
        let why = match (&f.error, &f.note) {
            (Some(e), _) => format!("  FAILED: {e}"),
            (None, Some(n)) => format!("  ({n})"),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "  {:>8} {:>8} {:>12}  {:<23} {}{why}",
            f.extents_before,
            f.extents_after,
            format_bytes(f.size_bytes as f64),
            f.method,
            f.path
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
            ..Default::default()
        };
        assert_eq!(
            text(&r),
            "Extent fragmentation report for /d\n  files 2  total 3.00 MiB  extents 17  average extents per file 8.50  average extent 180.71 KiB\n  files by extent count  1: 1  9-64: 1\n  most fragmented:\n   extents         size   per extent  file\n        16     1.00 MiB    64.00 KiB  /d/holey (2 unwritten)\n  1 file(s) could not be mapped; first: /d/x: no FIEMAP\n"
        );
        assert!(r.render(Format::Json).contains("\"worst\""));
    }
}
