//! An IO500 Result rendered the IO500 way: a `[RESULT]` line per phase in IO500's order (the
//! figure the score takes and the phase's time), the `[SCORE]` line, then what IO500 does
//! not show: find's matched and total entries, the notes and the explain findings.

use crate::result::RunResult;
use std::fmt::Write;

/// The IO500-style text of an io500 Result.
pub(crate) fn text(r: &RunResult) -> String {
    let mut s = String::new();
    let Some(m) = &r.io500 else {
        return s;
    };
    let _ = writeln!(
        s,
        "fsbench io500: stonewall {} s, in {}",
        m.stonewall_s, m.dir
    );
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    for p in &m.phases {
        let _ = writeln!(
            s,
            "[RESULT] {:<20} {:>14.6} {:<5} : time {:.3} seconds{}",
            p.name,
            p.value,
            p.unit,
            p.time_s,
            if p.stonewalled { " [stonewalled]" } else { "" }
        );
    }
    let _ = writeln!(
        s,
        "[SCORE] Bandwidth {:.6} GiB/s : IOPS {:.6} kiops : TOTAL {:.6}{}",
        m.score_bw_gib_s,
        m.score_md_kiops,
        m.score,
        if m.unofficial { " [unofficial]" } else { "" }
    );
    let _ = write!(
        s,
        "find matched {} of {} entries",
        m.find_matched, m.find_total
    );
    if !m.find_ranks.is_empty() {
        // Each rank's share of the walk, and the slowest rank's time (the phase's).
        let looked: Vec<String> = m.find_ranks.iter().map(|f| f.looked.to_string()).collect();
        let slowest = m.find_ranks.iter().map(|f| f.time_s).fold(0.0, f64::max);
        let _ = write!(
            s,
            " on {} ranks (each looked at {}; the slowest took {slowest:.3} s)",
            m.find_ranks.len(),
            looked.join(", ")
        );
    }
    let _ = writeln!(s);
    if !r.explain.is_empty() {
        let _ = writeln!(s, "explain:");
        for e in &r.explain {
            let _ = writeln!(s, "  - {}", e.message);
        }
    }
    for f in &r.failures {
        let _ = writeln!(s, "failed: {}", f.message);
    }
    let _ = writeln!(s, "status: {}", r.status.name());
    s
}
