//! The one place fsbench lays out its human text tables: [`TextTable`], drawn by comfy-table
//! (issue #14). Sweep, suite, report and fscompare tables ([`super::table::render_text`]),
//! `compare`, `quick`, `iostat`, `suite list` and the per-flowop table of a workload all
//! build one. (It is a module of its own beside `table`, which shapes stored results into
//! tables, to keep both files readable.)
//!
//! The look is today's plain columns: no borders, columns apart by a gap (two spaces unless a
//! table says otherwise), row labels on the left, figures right-aligned, headers with their
//! units, an optional dashed rule under the head. comfy-table measures and pads the cells.
//!
//! How wide a table may be is decided by [`super::width::terminal_width`], not by comfy-table
//! (built without its terminal feature): on a terminal `COLUMNS` or the terminal's width; when
//! stdout is a pipe or a file no limit, so every row is one line, the same on every machine.
//! A table wider than the limit is fitted one of three ways ([`Fit`]), chosen per table:
//!
//! - [`Fit::Pivot`] for tables of figures (sweep tables, the workload table): the value
//!   columns are cut into blocks printed one under the other, each repeating the row labels.
//!   A figure is never broken over two lines, and each block still reads as a table.
//! - [`Fit::Wrap`] for tables whose width is text (`compare`, where the point names are
//!   long): comfy-table wraps the cells inside narrower columns, so each comparison stays one
//!   row, figures beside their point.
//! - [`Fit::Stack`] for tables printed a row at a time as the rows are measured (`quick`,
//!   `iostat`) or with other lines under each row (`suite list`): the column widths are
//!   fixed ahead, and a row (and the head) that is too wide continues on indented lines,
//!   block by block in the same columns as the head.

use comfy_table::{
    CellAlignment, ColumnConstraint, ContentArrangement, LineStyle, Table, TableStyle, Width,
};

/// How a table wider than the terminal is fitted (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    /// Blocks of value columns one under the other, each with the row labels.
    Pivot,
    /// One table; comfy-table wraps cells inside narrower columns.
    Wrap,
    /// Row by row with fixed widths; a wide row continues on indented lines.
    Stack,
}

/// A human text table: a head, rows of text cells, the first `labels` columns naming the row.
#[derive(Debug, Clone)]
pub(crate) struct TextTable {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    labels: usize,
    fit: Fit,
    /// Per column: right-aligned (figures) or left-aligned (labels, words).
    right: Vec<bool>,
    /// Spaces after each column.
    gaps: Vec<usize>,
    /// Least width of each column (the fixed widths of a table printed row by row).
    min_widths: Vec<usize>,
    /// A dashed line under the head.
    rule: bool,
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

impl TextTable {
    /// A table with this head; the first `labels` columns are left-aligned row labels, the
    /// others right-aligned figures, two spaces apart.
    pub(crate) fn new<S: Into<String>>(
        header: impl IntoIterator<Item = S>,
        labels: usize,
        fit: Fit,
    ) -> Self {
        let header: Vec<String> = header.into_iter().map(Into::into).collect();
        let n = header.len();
        TextTable {
            right: (0..n).map(|i| i >= labels).collect(),
            gaps: vec![2; n],
            min_widths: vec![0; n],
            header,
            rows: Vec::new(),
            labels,
            fit,
            rule: false,
        }
    }

    /// Draw a dashed line under the head.
    pub(crate) fn rule(mut self) -> Self {
        self.rule = true;
        self
    }

    /// The spaces after each column (the last entry repeats for the columns after it).
    pub(crate) fn gaps(mut self, gaps: &[usize]) -> Self {
        let last = gaps.last().copied().unwrap_or(2);
        self.gaps = (0..self.header.len())
            .map(|i| gaps.get(i).copied().unwrap_or(last))
            .collect();
        self
    }

    /// Column `i` right-aligned (true) or left-aligned.
    pub(crate) fn align_right(mut self, i: usize, right: bool) -> Self {
        self.grow(i + 1);
        self.right[i] = right;
        self
    }

    /// The least width of each column, as a `{:>9}` format would give it.
    pub(crate) fn min_widths(mut self, widths: &[usize]) -> Self {
        self.grow(widths.len());
        for (m, w) in self.min_widths.iter_mut().zip(widths) {
            *m = *w;
        }
        self
    }

    /// Append a row (a row may have more cells than the head: its columns have no head).
    pub(crate) fn push(&mut self, row: Vec<String>) {
        self.grow(row.len());
        self.rows.push(row);
    }

    /// Make room for `n` columns: new ones are right-aligned figures without a head.
    fn grow(&mut self, n: usize) {
        while self.header.len() < n {
            self.header.push(String::new());
            self.right.push(true);
            self.gaps.push(*self.gaps.last().unwrap_or(&2));
            self.min_widths.push(0);
        }
    }

    /// The width of each column over the head, the rows and the least widths.
    fn widths(&self, rows: &[Vec<String>]) -> Vec<usize> {
        let mut w = self.min_widths.clone();
        for row in std::iter::once(&self.header).chain(rows) {
            for (i, c) in row.iter().enumerate() {
                w[i] = w[i].max(chars(c));
            }
        }
        w
    }

    /// Blocks of value columns that fit `width` with the label columns (all in one block
    /// without a width).
    fn blocks(&self, w: &[usize], width: Option<usize>) -> Vec<Vec<usize>> {
        // column_blocks takes one gap; the widest gap keeps every block within the width.
        let gap = self.gaps.iter().copied().max().unwrap_or(2);
        super::width::column_blocks(w, self.labels, gap, width)
    }

    /// The whole table, fitted to `width` (None: no limit, one line a row).
    pub(crate) fn render(&self, width: Option<usize>) -> String {
        let w = self.widths(&self.rows);
        let all: Vec<usize> = (0..w.len()).collect();
        let natural = self.line_width(&w, &all);
        let Some(limit) = width.filter(|l| natural > *l) else {
            return self.draw(&all, &w, true, &self.rows, None);
        };
        match self.fit {
            Fit::Wrap => self.draw(&all, &w, true, &self.rows, Some(limit)),
            Fit::Pivot => {
                let labels: Vec<usize> = (0..self.labels.min(w.len())).collect();
                let mut out = String::new();
                for (b, values) in self.blocks(&w, Some(limit)).iter().enumerate() {
                    if b > 0 {
                        out.push('\n');
                    }
                    let cols: Vec<usize> = labels.iter().chain(values).copied().collect();
                    out += &self.draw(&cols, &w, true, &self.rows, None);
                }
                out
            }
            Fit::Stack => {
                let mut out = self.render_head(width);
                for r in &self.rows {
                    out += &self.render_row(r, width);
                }
                out
            }
        }
    }

    /// The head alone (and its rule), for a table printed row by row: laid out with the
    /// least widths, as [`Self::render_row`] lays out each row.
    pub(crate) fn render_head(&self, width: Option<usize>) -> String {
        self.stacked(&self.header, true, width)
    }

    /// One row alone, in the columns of [`Self::render_head`].
    pub(crate) fn render_row(&self, row: &[String], width: Option<usize>) -> String {
        self.stacked(row, false, width)
    }

    /// A line (or, too wide for `width`, one line per block of columns, the label cells blank
    /// after the first) of the head or a row, at the least widths.
    fn stacked(&self, cells: &[String], head: bool, width: Option<usize>) -> String {
        let w = self.widths(&[]);
        let mut row_w = w.clone();
        for (i, c) in cells.iter().enumerate() {
            row_w[i] = row_w[i].max(chars(c));
        }
        let all: Vec<usize> = (0..w.len()).collect();
        let one = |cols: &[usize], cells: Vec<String>| -> String {
            if head {
                let mut t = self.clone();
                t.header = cells;
                t.draw(cols, &row_w, true, &[], None)
            } else {
                self.draw_cells(cols, &row_w, &cells)
            }
        };
        let fits = width.is_none_or(|l| self.line_width(&row_w, &all) <= l);
        if fits {
            return one(&all, cells.to_vec());
        }
        let labels: Vec<usize> = (0..self.labels.min(w.len())).collect();
        let mut out = String::new();
        for (b, values) in self.blocks(&w, width).iter().enumerate() {
            let cols: Vec<usize> = labels.iter().chain(values).copied().collect();
            let line: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if b > 0 && i < self.labels {
                        String::new()
                    } else {
                        c.clone()
                    }
                })
                .collect();
            out += &one(&cols, line);
        }
        out
    }

    /// Characters in a line of the columns `cols` at widths `w`.
    fn line_width(&self, w: &[usize], cols: &[usize]) -> usize {
        let sum: usize = cols.iter().map(|&i| w[i] + self.gaps[i]).sum();
        sum - cols.last().map_or(0, |&i| self.gaps[i])
    }

    /// One comfy-table table of the columns `cols` (with the head when `head`), every column
    /// at least `w` wide; `wrap`: comfy-table's dynamic arrangement within that width.
    fn draw(
        &self,
        cols: &[usize],
        w: &[usize],
        head: bool,
        rows: &[Vec<String>],
        wrap: Option<usize>,
    ) -> String {
        let pick = |row: &[String]| -> Vec<String> {
            cols.iter()
                .map(|&i| row.get(i).cloned().unwrap_or_default())
                .collect()
        };
        let mut t = Table::new();
        let mut style = TableStyle::new();
        if self.rule {
            style = style.header_separator(LineStyle::none().fill('-'));
        }
        t.load_style(style);
        if head {
            t.set_header(pick(&self.header));
        }
        for r in rows {
            t.add_row(pick(r));
        }
        match wrap {
            Some(limit) => {
                t.set_content_arrangement(ContentArrangement::Dynamic);
                t.set_width(u16::try_from(limit).unwrap_or(u16::MAX));
            }
            None => {
                t.set_content_arrangement(ContentArrangement::Disabled);
            }
        }
        let wrap_least = match wrap {
            Some(limit) => self.wrap_least(cols, rows, limit),
            None => Vec::new(),
        };
        for (k, &i) in cols.iter().enumerate() {
            let last = k + 1 == cols.len();
            // Wrapping: one space between columns leaves the cells the most room.
            let gap = match (last, wrap) {
                (true, _) => 0,
                (false, Some(_)) => 1,
                (false, None) => self.gaps[i],
            };
            if let Some(c) = t.column_mut(k) {
                c.set_padding((0, gap as u16));
                c.set_cell_alignment(if self.right[i] {
                    CellAlignment::Right
                } else {
                    CellAlignment::Left
                });
                // Wrapping narrows the columns, but never below the widest figure of a
                // figure column or the widest word of a label column: words and figures
                // stay whole where the width allows (the heads may wrap).
                let least = match wrap {
                    None => w[i],
                    Some(_) => wrap_least[k],
                };
                let least = (least + gap).min(u16::MAX as usize) as u16;
                c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(least)));
            }
        }
        let mut s = t.trim_fmt();
        if !s.is_empty() {
            s.push('\n');
        }
        s
    }

    /// The least width of each of the columns `cols` when wrapping to `limit`: a figure
    /// column its widest cell, a label column its widest word; figure columns keep their
    /// heads whole too when that still leaves the labels room, so the labels get the rest.
    fn wrap_least(&self, cols: &[usize], rows: &[Vec<String>], limit: usize) -> Vec<usize> {
        let widest = |i: usize, f: &dyn Fn(&str) -> usize| -> usize {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| f(c))
                .max()
                .unwrap_or(0)
        };
        let word = |c: &str| c.split(' ').map(chars).max().unwrap_or(0);
        let cells: Vec<usize> = cols
            .iter()
            .map(|&i| {
                if self.right[i] {
                    widest(i, &chars)
                } else {
                    widest(i, &word).max(word(&self.header[i]))
                }
            })
            .collect();
        let with_heads: Vec<usize> = cols
            .iter()
            .zip(&cells)
            .map(|(&i, &c)| {
                if self.right[i] {
                    c.max(chars(&self.header[i]))
                } else {
                    c
                }
            })
            .collect();
        let line = with_heads.iter().sum::<usize>() + cols.len().saturating_sub(1);
        if line <= limit {
            with_heads
        } else {
            cells
        }
    }

    /// One row of the columns `cols`, without a head.
    fn draw_cells(&self, cols: &[usize], w: &[usize], cells: &[String]) -> String {
        let mut t = self.clone();
        t.rule = false;
        t.draw(cols, w, false, &[cells.to_vec()], None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn sample(fit: Fit) -> TextTable {
        let mut t = TextTable::new(["block size", "read KiB/s", "write KiB/s", "CPU s"], 1, fit);
        t.push(s(&["4k", "1000", "2000", "0.500"]));
        t.push(s(&["1m", "123456", "7", "12.000"]));
        t
    }

    #[test]
    fn whole_rows_without_a_width() {
        let t = sample(Fit::Pivot).rule();
        assert_eq!(
            t.render(None),
            "block size  read KiB/s  write KiB/s   CPU s\n\
             -------------------------------------------\n\
             4k                1000         2000   0.500\n\
             1m              123456            7  12.000\n"
        );
        // The same with a width that holds it.
        assert_eq!(t.render(Some(80)), t.render(None));
        assert_eq!(
            sample(Fit::Wrap).render(Some(80)),
            sample(Fit::Wrap).render(None)
        );
    }

    #[test]
    fn pivot_repeats_the_labels_in_each_block() {
        let out = sample(Fit::Pivot).rule().render(Some(30));
        assert!(out.lines().all(|l| chars(l) <= 30), "{out}");
        assert_eq!(out.matches("block size").count(), 3, "{out}");
        assert_eq!(out.matches("1m").count(), 3, "{out}");
        for v in ["123456", "2000", "12.000", "write KiB/s"] {
            assert!(out.contains(v), "{v}: {out}");
        }
    }

    #[test]
    fn wrap_keeps_one_row_per_entry_and_every_word() {
        let mut t = TextTable::new(["point", "before", "after"], 1, Fit::Wrap);
        t.push(s(&[
            "bs=4k cache=direct threads=16 engine=io_uring qd=32",
            "1000",
            "2000",
        ]));
        let out = t.render(Some(40));
        assert!(out.lines().all(|l| chars(l) <= 40), "{out}");
        // The figures stay on the first line of the row, beside the start of its point.
        let first = out.lines().nth(1).unwrap();
        assert!(
            first.starts_with("bs=4k cache=direct") && first.ends_with("  1000  2000"),
            "{out}"
        );
        for word in [
            "bs=4k",
            "cache=direct",
            "threads=16",
            "engine=io_uring",
            "qd=32",
        ] {
            assert!(out.contains(word), "{word}: {out}");
        }
    }

    #[test]
    fn wrap_keeps_words_and_figures_whole_at_60_columns() {
        let mut t = TextTable::new(
            [
                "point",
                "metric",
                "before",
                "after",
                "after/before",
                "spread (range/mean)",
                "verdict",
            ],
            2,
            Fit::Wrap,
        );
        for (p, m) in [
            ("sweep: bs=4k cache=buffered", "mean latency ms"),
            ("sweep: bs=8k cache=direct", "KiB/s"),
        ] {
            t.push(s(&[p, m, "761334", "761334", "1.000", "n/a", "same"]));
        }
        let out = t.render(Some(60));
        assert!(out.lines().all(|l| chars(l) <= 60), "{out}");
        for w in [
            "cache=buffered",
            "cache=direct",
            "761334",
            "latency",
            "same",
        ] {
            assert!(out.contains(w), "{w}: {out}");
        }
        // Each comparison's figures are on one line with the start of its point.
        assert_eq!(
            out.matches("761334  761334").count(),
            0,
            "one space apart: {out}"
        );
        assert_eq!(out.matches("761334 761334").count(), 2, "{out}");
    }

    #[test]
    fn stacked_rows_keep_the_head_columns() {
        let t = TextTable::new(["test", "MB/s", "IOPS", "status"], 1, Fit::Stack)
            .min_widths(&[12, 9, 9, 0])
            .gaps(&[1])
            .align_right(3, false);
        let row = s(&["SEQ1M read", "200.0", "20", "ok"]);
        assert_eq!(
            t.render_head(None),
            "test              MB/s      IOPS status\n"
        );
        assert_eq!(
            t.render_row(&row, None),
            "SEQ1M read       200.0        20 ok\n"
        );
        let head = t.render_head(Some(25));
        let line = t.render_row(&row, Some(25));
        assert_eq!(head.lines().count(), line.lines().count(), "{head}{line}");
        assert!(head.lines().chain(line.lines()).all(|l| chars(l) <= 25));
        // Continuation lines start blank where the label stands, values in the head's columns.
        let (h2, r2) = (head.lines().nth(1).unwrap(), line.lines().nth(1).unwrap());
        assert!(r2.starts_with("             "), "{line}");
        assert_eq!(h2.find("IOPS").map(|i| i + 4), r2.find("20").map(|i| i + 2));
    }

    #[test]
    fn rows_longer_than_the_head_get_headless_columns() {
        let mut t = TextTable::new(["name", "ops"], 1, Fit::Pivot);
        t.push(s(&["a", "3", "1.0 us cpu/op"]));
        assert_eq!(t.render(None), "name  ops\na       3  1.0 us cpu/op\n");
    }
}
