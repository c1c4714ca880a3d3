//! The shipped suites as `fsbench suite list` shows them: each with its studies, then how to
//! run one.

use super::text_table::{Fit, TextTable};
use crate::sweep::suite::SuiteFile;
use std::fmt::Write;

/// The listing, fitted to the terminal.
pub fn list(suites: &[SuiteFile]) -> String {
    list_width(suites, super::width::terminal_width())
}

/// The listing at most `width` wide where the columns allow (None: one line a suite). Each
/// suite row has its studies under it, so the rows are laid out one at a time in fixed
/// columns ([`Fit::Stack`]): a narrow terminal gets the source and title on the next line.
fn list_width(suites: &[SuiteFile], width: Option<usize>) -> String {
    let table = TextTable::new(
        ["suite", "studies", "scale", "source", "title"],
        1,
        Fit::Stack,
    )
    .min_widths(&[20, 7, 6, 28, 0])
    .gaps(&[1, 1, 2, 1])
    .align_right(3, false)
    .align_right(4, false);
    let mut out = table.render_head(width);
    for s in suites {
        out += &table.render_row(
            &[
                s.name.clone(),
                s.studies.len().to_string(),
                s.default_scale.to_string(),
                s.source.clone(),
                s.title.clone(),
            ],
            width,
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
        let text = list_width(&all, None);
        for s in &all {
            assert!(text.contains(&format!("\n{:<20} ", s.name)), "{}", s.name);
            for st in &s.studies {
                assert!(text.contains(&format!("\n    {:<24} {}\n", st.id, st.title)));
            }
        }
        assert!(text.ends_with("[--output OUT]\n"));
        // On 60 columns each suite row goes on under itself; every title is still there.
        let narrow = list_width(&all, Some(60));
        for s in &all {
            assert!(narrow.contains(&s.title), "{}: {narrow}", s.title);
        }
        let head = narrow.lines().take_while(|l| !l.starts_with(&all[0].name));
        assert!(head.count() >= 2, "{narrow}");
    }
}
