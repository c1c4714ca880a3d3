//! Traces as text: the analysis of `fsbench trace --analyze` (what a trace says about an
//! application's I/O; [`TraceAnalysis`] also renders as JSON), the vxtrace-style listing of its
//! first calls, and the `tusc -c`-style summary of a capture.

use super::{Format, Render};
use crate::units::{format_bytes, format_size_exact};
use fsbench_core::trace::analyze::{device_ranges, Analysis, Layout, Stripe};
use fsbench_core::trace::strace::Converter;
use fsbench_core::trace::Trace;
use std::fmt::Write;
use std::path::Path;

/// The analysis of the trace in `file`.
pub struct TraceAnalysis<'a> {
    pub file: &'a Path,
    pub analysis: &'a Analysis,
}

impl Render for TraceAnalysis<'_> {
    const FORMATS: &'static [Format] = &[Format::Text, Format::Json];
    fn render(&self, format: Format) -> String {
        match Self::supported(format) {
            Format::Json => super::json(self.analysis),
            _ => format!("trace {}\n{}", self.file.display(), text(self.analysis)),
        }
    }
}

/// The analysis as text.
pub(crate) fn text(a: &Analysis) -> String {
    let mut s = String::new();
    let ops = a.reads + a.writes;
    let _ = writeln!(
        s,
        "{} records over {:.3} s, {} thread(s); {} reads ({}), {} writes ({}); read share {:.1}% of I/Os",
        a.records,
        a.duration_s,
        a.threads,
        a.reads,
        format_bytes(a.read_bytes as f64),
        a.writes,
        format_bytes(a.write_bytes as f64),
        a.read_pct_of_ops
    );
    let _ = writeln!(
        s,
        "other calls: {} open, {} close, {} fsync/fdatasync; {} failed calls",
        a.opens, a.closes, a.fsyncs, a.errors
    );
    let _ = writeln!(
        s,
        "pattern: {:.1}% sequential ({} sequential, {} random, {} first I/O to a file), mean I/O {}",
        a.sequential_pct,
        a.sequential,
        a.random,
        a.first,
        format_bytes(a.mean_io_bytes)
    );
    let _ = writeln!(
        s,
        "concurrency: at most {} call(s) in progress, {:.2} on average while busy",
        a.max_in_flight, a.mean_in_flight
    );
    let _ = writeln!(
        s,
        "\nI/O sizes (up to):  {:>10} {:>10} {:>7}",
        "reads", "writes", "share"
    );
    for b in &a.sizes {
        let _ = writeln!(
            s,
            "  {:>16}  {:>10} {:>10} {:>6.1}%",
            format_size_exact(b.max_bytes),
            b.reads,
            b.writes,
            if ops > 0 {
                (b.reads + b.writes) as f64 * 100.0 / ops as f64
            } else {
                0.0
            }
        );
    }
    let _ = writeln!(
        s,
        "\nfiles (busiest first; hot regions of {} each):",
        format_size_exact(a.region_bytes)
    );
    for f in a.files.iter().take(20) {
        let hot: Vec<String> = f
            .hot_regions
            .iter()
            .map(|r| format!("@{} {:.0}%", format_size_exact(r.offset), r.share_pct))
            .collect();
        let _ =
            writeln!(
            s,
            "  {}: {} reads {} writes, {} read {} written, {:.0}% sequential, offsets {}..{}{}{}",
            f.file,
            f.reads,
            f.writes,
            format_bytes(f.read_bytes as f64),
            format_bytes(f.write_bytes as f64),
            f.sequential_pct,
            f.min_offset,
            f.max_end,
            if hot.is_empty() { String::new() } else { format!(", hot: {}", hot.join(", ")) },
            if f.syncs > 0 { format!(", {} syncs", f.syncs) } else { String::new() }
        );
    }
    if a.files.len() > 20 {
        let _ = writeln!(s, "  ... and {} more files", a.files.len() - 20);
    }
    if let Some(st) = &a.stripe {
        let spec = st.stripe.expect("a stripe report has its stripe");
        let _ = writeln!(
            s,
            "\nstripe unit {} x {} columns: {} application I/Os become {} device I/Os ({:.2} each)",
            format_size_exact(spec.unit_bytes),
            spec.columns,
            st.app_ios,
            st.device_ios,
            st.device_ios_per_app_io
        );
        for (k, n) in &st.split_histogram {
            let _ = writeln!(s, "  {n:>10} I/Os became {k} device I/O(s)");
        }
        let cols: Vec<String> = st.per_column_ios.iter().map(|n| n.to_string()).collect();
        let _ = writeln!(s, "  device I/Os per column: {}", cols.join(" "));
        let _ = writeln!(
            s,
            "  offsets: {}",
            if st.files_mapped_to_device > 0 {
                format!(
                    "device offsets (FIEMAP) for {} file(s), file offsets for the rest",
                    st.files_mapped_to_device
                )
            } else {
                "file offsets (the file is assumed to start on a stripe boundary; --physical maps existing files)".into()
            }
        );
        if let Some((id, off, len, k)) = st.worst {
            let _ = writeln!(
                s,
                "  largest split: I/O {id} at offset {off}, {} -> {k} device I/Os",
                format_size_exact(len)
            );
        }
    }
    s
}

/// Device I/Os listed per application I/O; the rest of a larger split is summarised in one
/// line (a 1 GiB read over a 512-byte stripe unit would otherwise be two million lines).
pub(crate) const LISTED_PIECES_MAX: u64 = 1000;

/// The first `n` data calls vxtrace-style: a START line, with a stripe the device I/Os it
/// becomes (column, offset on the column, length), and an END line with its time.
#[cfg(test)]
pub(crate) fn format_listing(
    t: &Trace,
    n: usize,
    stripe: Option<Stripe>,
    layout: Option<&Layout>,
) -> String {
    let mut s = String::new();
    let _ = write_listing(&mut s, t, n, stripe, layout);
    s
}

/// `format_listing` into any writer (the CLI streams it to stdout).
pub fn write_listing(
    s: &mut impl Write,
    t: &Trace,
    n: usize,
    stripe: Option<Stripe>,
    layout: Option<&Layout>,
) -> std::fmt::Result {
    for r in t.records.iter().filter(|r| r.op.is_data()).take(n) {
        let file = t
            .files
            .get(r.file as usize)
            .map(String::as_str)
            .unwrap_or("?");
        let bytes = if r.result >= 0 {
            r.result as u64
        } else {
            r.len
        };
        writeln!(
            s,
            "{} START {} {} offset {} len {} thread {}",
            r.id,
            r.op.name(),
            file,
            r.offset,
            bytes,
            r.thread
        )?;
        if let Some(st) = stripe {
            let mut listed = 0u64;
            let mut more = 0u64;
            for (dev_off, dev_len) in device_ranges(layout, r.file, r.offset, bytes) {
                if listed >= LISTED_PIECES_MAX {
                    more += st.pieces(dev_off, dev_len);
                    continue;
                }
                // Only the pieces still to be listed are built.
                let room = LISTED_PIECES_MAX - listed;
                let cut = dev_len.min(room.saturating_mul(st.unit_bytes));
                for (col, off, len) in st.split(dev_off, cut) {
                    writeln!(s, "{}   -> column {col} offset {off} len {len}", r.id)?;
                    listed += 1;
                }
                let (o2, l2) = (dev_off.saturating_add(cut), dev_len - cut);
                more += st.pieces(o2, l2);
            }
            if more > 0 {
                writeln!(s, "{}   -> ... and {more} more device I/Os", r.id)?;
            }
        }
        writeln!(
            s,
            "{} END {} {} result {} time {:.3} ms",
            r.id,
            r.op.name(),
            file,
            r.result,
            r.end_ns.saturating_sub(r.start_ns) as f64 / 1e6
        )?;
    }
    Ok(())
}

/// `tusc -c`-style call counts of a capture, then what went into the trace written to `out`.
pub fn capture_summary(conv: &Converter, out: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<12} {:>10} {:>10} {:>8}",
        "syscall", "seconds", "calls", "errors"
    );
    let (mut calls, mut secs) = (0u64, 0f64);
    for (name, (n, err, sec)) in &conv.counts {
        let _ = writeln!(s, "{name:<12} {sec:>10.6} {n:>10} {err:>8}");
        calls += n;
        secs += sec;
    }
    let _ = writeln!(s, "{:<12} {secs:>10.6} {calls:>10}", "total");
    let t = &conv.trace;
    let data = t.records.iter().filter(|r| r.op.is_data()).count();
    let _ = writeln!(
        s,
        "trace: {} records ({} reads/writes) on {} file(s) -> {}{}",
        t.records.len(),
        data,
        t.files.len(),
        out.display(),
        if conv.skipped_lines > 0 {
            format!(" ({} strace lines not understood)", conv.skipped_lines)
        } else {
            String::new()
        }
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_core::trace::analyze::{analyze, rec};
    use fsbench_core::trace::TraceOp;

    #[test]
    fn analysis_text_and_listing_of_a_small_trace() {
        let mut t = Trace::default();
        t.file_index("/f");
        t.records = vec![
            rec(0, TraceOp::Read, 0, 4096, 0, 10),
            rec(1, TraceOp::Read, 4096, 4096, 10, 20),
            rec(2, TraceOp::Write, 1 << 20, 8192, 15, 30),
            rec(3, TraceOp::Read, 8192, 4096, 40, 50),
        ];
        let a = analyze(&t, 1 << 20, None).unwrap();
        let shown = TraceAnalysis {
            file: Path::new("t.csv"),
            analysis: &a,
        };
        let txt = shown.render(Format::Text);
        assert!(txt.starts_with("trace t.csv\n4 records over "), "{txt}");
        assert!(txt.contains("3 reads"), "{txt}");
        assert!(shown.render(Format::Json).contains("\"max_in_flight\": 2"));
        let l = format_listing(&t, 2, Some(Stripe::parse("4k:2").unwrap()), None);
        assert_eq!(l.lines().count(), 6);
        assert!(l.contains("1   -> column 1 offset 0 len 4096"));
    }

    #[test]
    fn huge_ios_are_counted_not_listed() {
        let mut t = Trace::default();
        t.file_index("/f");
        t.records = vec![rec(0, TraceOp::Read, 0, 1 << 30, 0, 10)];
        // A 1 GiB read over a 1-byte stripe unit: 2^30 pieces, at most 1000 lines.
        let st = Stripe::parse("1:3").unwrap();
        let l = format_listing(&t, 1, Some(st), None);
        assert!(l.lines().count() < LISTED_PIECES_MAX as usize + 4);
        assert!(
            l.contains(&format!(
                "and {} more device I/Os",
                (1u64 << 30) - LISTED_PIECES_MAX
            )),
            "{l}"
        );
    }

    #[test]
    fn capture_summary_totals_the_calls() {
        let mut conv = Converter::new(false);
        conv.counts.insert("pread64".into(), (3, 1, 0.5));
        conv.counts.insert("write".into(), (2, 0, 0.25));
        let s = capture_summary(&conv, Path::new("o.csv"));
        assert!(s.contains("total          0.750000          5\n"), "{s}");
        assert!(
            s.ends_with("trace: 0 records (0 reads/writes) on 0 file(s) -> o.csv\n"),
            "{s}"
        );
    }
}
