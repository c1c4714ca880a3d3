//! The shipped suites as `fsbench suite list` shows them: each with its studies, then how to
//! run one.

use crate::sweep::suite::SuiteFile;
use std::fmt::Write;

pub(crate) fn list(suites: &[SuiteFile]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<20} {:>7} {:>6}  {:<28} title",
        "suite", "studies", "scale", "source"
    );
    for s in suites {
        let _ = writeln!(
            out,
            "{:<20} {:>7} {:>6}  {:<28} {}",
            s.name,
            s.studies.len(),
            s.default_scale,
            s.source,
            s.title
        );
        for st in &s.studies {
            let _ = writeln!(out, "    {:<24} {}", st.id, st.title);
        }
    }
    out.push_str(
        "\nRun: fsbench suite NAME --dir DIR [--dir DIR2 --baseline DIR] [--scale S] [--output OUT]\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::suite;

    #[test]
    fn every_shipped_suite_and_study_is_listed() {
        let all: Vec<SuiteFile> = suite::EMBEDDED
            .iter()
            .map(|(n, _)| suite::find(n).unwrap())
            .collect();
        let text = list(&all);
        for s in &all {
            assert!(text.contains(&format!("\n{:<20} ", s.name)), "{}", s.name);
            for st in &s.studies {
                assert!(text.contains(&format!("\n    {:<24} {}\n", st.id, st.title)));
            }
        }
        assert!(text.ends_with("[--output OUT]\n"));
    }
}
