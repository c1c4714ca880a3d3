//! Markdown report: a title, the preface lines, then every study as a paper-shaped table.

use super::table::{render_markdown, Shaped};

pub(crate) fn render(title: &str, preface: &[String], tables: &[Shaped]) -> String {
    let mut s = format!("# {title}\n\n");
    for p in preface {
        s += &format!("{p}\n\n");
    }
    for t in tables {
        s += &render_markdown(t);
    }
    s
}
