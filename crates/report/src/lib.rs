//! The report layer: the only place that formats. Core modules return data; each kind of data
//! implements [`Render`] once, for the [`Format`]s it has, and the front ends parse the user's
//! choice once with [`Format::parse_for`] before any work starts.
//!
//! What renders: results of runs ([`Runs`]: text, JSON, CSV), stored results shaped into
//! tables ([`document::Document`]: text, Markdown, CSV, JSON, HTML), tuning advice
//! ([`crate::advise::Advice`]: text, JSON, HTML), fragmentation reports
//! ([`crate::probe::frag::FragReport`]) and trace analyses ([`trace::TraceAnalysis`]): text and
//! JSON. Output that is written as it is measured (the `quick` table, `iostat` rows, a trace
//! listing) comes from the line functions of [`quick`], [`iostat`] and [`trace`].

#![warn(unreachable_pub)]

pub mod advise_html;
pub(crate) mod advise_text;
pub mod chart;
pub mod compare;
pub(crate) mod csv;
pub mod document;
pub(crate) mod frag;
pub(crate) mod html;
pub mod interval_logs;
pub(crate) mod io500;
pub mod iostat;
pub(crate) mod iostat_html;
pub mod json;
pub mod live;
pub(crate) mod long;
pub(crate) mod markdown;
pub(crate) mod mdtest;
pub(crate) mod metrics;
pub(crate) mod observe;
pub mod quick;
pub(crate) mod ranks;
pub mod repeat;
pub(crate) mod steady_text;
pub(crate) mod study_charts;
pub mod suites;
pub mod table;
pub(crate) mod text;
pub(crate) mod text_table;
pub(crate) mod timeseries;
pub mod trace;
pub mod verify_text;
pub(crate) mod width;
pub mod workload;

// The core's modules, under the names the report layer's code uses.
use fsbench_core::usage;
use fsbench_core::{
    ab, advise, error, explain, job, output, probe, reorg, result, runner, stats, sweep, units,
    verify,
};

use crate::error::UsageError;
use crate::result::RunResult;
use crate::units::RateUnit;

/// What to show.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReportOptions {
    pub unit: RateUnit,
    /// Only the total line (vxbench -s).
    pub summary_only: bool,
    /// Per-thread lines (vxbench -v).
    pub per_thread: bool,
}

/// Every output format fsbench has; each kind of data offers some of them ([`Render::FORMATS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
    Csv,
    Markdown,
    Html,
}

impl Format {
    pub const ALL: &'static [Format] = &[
        Format::Text,
        Format::Json,
        Format::Csv,
        Format::Markdown,
        Format::Html,
    ];

    /// The name a user types (`md` for Markdown; `markdown` is accepted too).
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Markdown => "md",
            Format::Html => "html",
        }
    }

    fn from_name(s: &str) -> Option<Format> {
        match s {
            "markdown" => Some(Format::Markdown),
            _ => Format::ALL.iter().copied().find(|f| f.name() == s),
        }
    }

    /// `s` as one of `accepted`; otherwise one line naming `flag`, what was given and what is
    /// accepted.
    pub fn parse_among(s: &str, accepted: &[Format], flag: &str) -> Result<Format, UsageError> {
        match Format::from_name(s) {
            Some(f) if accepted.contains(&f) => Ok(f),
            _ => Err(crate::usage!(
                "unknown {flag} '{s}': expected {}",
                names(accepted)
            )),
        }
    }

    /// `s` as one of the formats `R` renders: the one parse every front end uses.
    pub fn parse_for<R: Render + ?Sized>(s: &str, flag: &str) -> Result<Format, UsageError> {
        Format::parse_among(s, R::FORMATS, flag)
    }
}

impl std::str::FromStr for Format {
    type Err = UsageError;
    fn from_str(s: &str) -> Result<Format, UsageError> {
        Format::parse_among(s, Format::ALL, "format")
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `text, json or csv`.
fn names(formats: &[Format]) -> String {
    let n: Vec<&str> = formats.iter().map(|f| f.name()).collect();
    match n.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => n.join(""),
    }
}

/// Data that report/ turns into text, in each format it has.
pub trait Render {
    /// The formats this data has, the default first.
    const FORMATS: &'static [Format];
    /// The data in `format`, one of [`Self::FORMATS`] (front ends parse with
    /// [`Format::parse_for`]); a format it lacks renders as its default.
    fn render(&self, format: Format) -> String;

    /// `format` if this data has it, else its default (and a debug build stops there: a front
    /// end let through a format it should have refused).
    fn supported(format: Format) -> Format {
        debug_assert!(
            Self::FORMATS.contains(&format),
            "{format} is not among {}",
            names(Self::FORMATS)
        );
        if Self::FORMATS.contains(&format) {
            format
        } else {
            Self::FORMATS[0]
        }
    }
}

/// Any serialisable value as pretty JSON with a final newline: the JSON form of every
/// document fsbench prints.
pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// Results of runs (`run`, `vx`, `quick`, `replay`): vxbench-style text, JSON or CSV.
pub struct Runs<'a> {
    pub results: &'a [RunResult],
    pub opts: ReportOptions,
}

impl Render for Runs<'_> {
    const FORMATS: &'static [Format] = &[Format::Text, Format::Json, Format::Csv];
    fn render(&self, format: Format) -> String {
        match Self::supported(format) {
            Format::Json => json::render(self.results),
            Format::Csv => csv::render(self.results, &self.opts),
            _ => text::render(self.results, &self.opts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_parse_for_every_front_end_with_a_one_line_refusal() {
        assert_eq!("md".parse::<Format>().unwrap(), Format::Markdown);
        assert_eq!("markdown".parse::<Format>().unwrap(), Format::Markdown);
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), *f);
        }
        assert_eq!(
            Format::parse_for::<Runs>("csv", "--output-format").unwrap(),
            Format::Csv
        );
        let e = Format::parse_for::<Runs>("html", "--output-format").unwrap_err();
        assert_eq!(
            e.0,
            "unknown --output-format 'html': expected text, json or csv"
        );
        let e = Format::parse_for::<document::Document>("pdf", "--format").unwrap_err();
        assert_eq!(
            e.0,
            "unknown --format 'pdf': expected text, md, csv, json or html"
        );
        assert!("".parse::<Format>().is_err());
        assert!("Text".parse::<Format>().is_err());
    }
}
