//! A report of stored results: the records shaped into paper-shaped tables, with a title, the
//! lines under it, an optional baseline for the charts, and `fsbench advise` documents as
//! sections of their own. `fsbench report` prints one; sweeps and suites print one and store
//! it in their results directory as report.html and report.md.

use super::html::{self, HtmlOptions};
use super::table::Shaped;
use super::{Format, Render};
use crate::advise::Advice;
use crate::output::ResultsDir;
use crate::sweep::record::Record;
use std::path::PathBuf;

pub struct Document<'a> {
    pub records: &'a [Record],
    pub tables: &'a [Shaped],
    pub title: &'a str,
    /// Lines shown under the title (suite, scale, missing personalities, ...).
    pub preface: &'a [String],
    /// The target the charts are normalised to.
    pub baseline: Option<&'a str>,
    /// Advise documents, each a section after the tables (text, Markdown and HTML only).
    pub advice: &'a [Advice],
}

impl Render for Document<'_> {
    const FORMATS: &'static [Format] = &[
        Format::Text,
        Format::Markdown,
        Format::Csv,
        Format::Json,
        Format::Html,
    ];

    fn render(&self, format: Format) -> String {
        match Self::supported(format) {
            Format::Markdown => {
                let mut s =
                    super::markdown::render(self.title, self.preface, self.tables, self.records);
                for a in self.advice {
                    let body = super::advise_text::text(a);
                    s = format!(
                        "{s}\n## {}\n\n```\n{body}```\n",
                        super::advise_html::title(a)
                    );
                }
                s
            }
            Format::Csv => super::long::csv(self.records),
            Format::Json => super::long::json(self.tables),
            Format::Html => html::render_with_advice(
                self.records,
                self.tables,
                &HtmlOptions {
                    title: self.title.to_string(),
                    baseline: self.baseline.map(str::to_string),
                    preface: self.preface.to_vec(),
                },
                self.advice,
            ),
            Format::Text => {
                let mut s = String::new();
                for p in self.preface {
                    s += &format!("{p}\n");
                }
                for t in self.tables {
                    s += &super::table::render_text(t);
                    s.push('\n');
                }
                for a in self.advice {
                    s = format!("{s}\n{}", super::advise_text::text(a));
                }
                s
            }
        }
    }
}

impl Document<'_> {
    /// Does `format` carry the advise sections? CSV and JSON are tables of results only.
    pub fn holds_advice(format: Format) -> bool {
        matches!(format, Format::Text | Format::Markdown | Format::Html)
    }

    /// Store report.html and report.md in the results directory; returns the HTML path.
    pub fn write_into(&self, dir: &ResultsDir) -> anyhow::Result<PathBuf> {
        dir.write("report.html", self.render(Format::Html).as_bytes())?;
        dir.write("report.md", self.render(Format::Markdown).as_bytes())?;
        Ok(dir.join("report.html"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{shape_all, tests::fake, Shape};

    #[test]
    fn every_format_renders_the_tables_and_advice_only_where_it_fits() {
        let recs = vec![
            fake("s1", &[("bs", "4k")], 100.0, 1.0, None),
            fake("s1", &[("bs", "64k")], 200.0, 1.0, None),
        ];
        let tables = shape_all(&recs, &Shape::default()).unwrap();
        let advice = [crate::advise_html::tests::measured_advice()];
        let preface = ["Suite x.".to_string()];
        let d = Document {
            records: &recs,
            tables: &tables,
            title: "T",
            preface: &preface,
            baseline: None,
            advice: &advice,
        };
        let heading = crate::advise_html::title(&advice[0]);
        let text = d.render(Format::Text);
        assert!(text.starts_with("Suite x.\n"), "{text}");
        assert!(text.contains("Filesystem i/o parameters"), "{text}");
        let md = d.render(Format::Markdown);
        assert!(md.starts_with("# T\n\nSuite x.\n\n"), "{md}");
        assert!(md.contains(&format!("\n## {heading}\n\n```\n")), "{md}");
        let html = d.render(Format::Html);
        assert!(html.contains("id=\"advise-0\"") && html.ends_with("</html>\n"));
        for f in [Format::Csv, Format::Json] {
            assert!(!Document::holds_advice(f));
            assert!(!d.render(f).contains(&heading), "{f}");
        }
        assert!(d.render(Format::Csv).lines().count() >= 3);
    }
}
