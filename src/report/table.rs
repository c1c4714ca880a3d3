//! Table shaping: stored sweep points become the papers' tables, rows and columns chosen by
//! axis ("block size | buffered KiB/s | discovered KiB/s | direct KiB/s | raw KiB/s | buffered
//! CPU s | ..."). Repetitions of a point are averaged and their spread kept for `compare`.
//! As text they are drawn by [`super::text_table::TextTable`], pivoted on a narrow terminal.

use super::metrics::{self, Metric};
use super::text_table::{Fit, TextTable};
use crate::runner::RunStatus;
use crate::sweep::axis;
use crate::sweep::record::{ChartSpec, Record, SweepMeta};

/// Measurements of one cell: per metric, one value per repetition.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cell {
    pub values: Vec<Vec<f64>>,
    pub skipped: Option<String>,
    pub failed: bool,
    pub partial: bool,
}

impl Cell {
    pub(crate) fn mean(&self, m: usize) -> Option<f64> {
        let v = self.values.get(m)?;
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }
    /// Sample standard deviation over repetitions; None with fewer than two.
    pub(crate) fn stdev(&self, m: usize) -> Option<f64> {
        let v = self.values.get(m)?;
        if v.len() < 2 {
            return None;
        }
        let mean = self.mean(m)?;
        let ss: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
        Some((ss / (v.len() - 1) as f64).sqrt())
    }
    /// Smallest and largest value over repetitions; None with fewer than two.
    pub(crate) fn range(&self, m: usize) -> Option<(f64, f64)> {
        let v = self.values.get(m).filter(|v| v.len() >= 2)?;
        Some((
            v.iter().cloned().fold(f64::MAX, f64::min),
            v.iter().cloned().fold(f64::MIN, f64::max),
        ))
    }
    /// (max - min) / mean over repetitions; None with fewer than two.
    pub(crate) fn spread(&self, m: usize) -> Option<f64> {
        let v = self.values.get(m)?;
        if v.len() < 2 {
            return None;
        }
        let mean = self.mean(m)?;
        let max = v.iter().cloned().fold(f64::MIN, f64::max);
        let min = v.iter().cloned().fold(f64::MAX, f64::min);
        Some(if mean.abs() > 0.0 {
            (max - min) / mean.abs()
        } else {
            0.0
        })
    }
}

/// One study shaped as a table.
#[derive(Debug, Clone)]
pub(crate) struct Shaped {
    pub suite: String,
    pub study: String,
    pub title: String,
    pub row_axes: Vec<String>,
    pub col_axes: Vec<String>,
    pub metrics: Vec<&'static Metric>,
    pub row_keys: Vec<Vec<String>>,
    pub col_keys: Vec<Vec<String>>,
    /// cells[row][col]
    pub cells: Vec<Vec<Cell>>,
    /// Skip reasons and failures, each once.
    pub notes: Vec<String>,
    pub chart: ChartSpec,
    /// Distinct targets in the study, in run order.
    pub targets: Vec<String>,
}

/// A value of an axis for a record; `target` is the record's target label.
pub(crate) fn axis_value(meta: &SweepMeta, name: &str) -> Option<String> {
    if name == "target" {
        return meta.target.clone();
    }
    meta.value(name).map(str::to_string)
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

/// Overrides for rows, columns and metrics (from `--rows`, `--cols`, `--metrics`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Shape {
    pub rows: Option<Vec<String>>,
    pub cols: Option<Vec<String>>,
    pub metrics: Option<Vec<String>>,
}

/// Group records by study (in run order) and shape each into a table.
pub(crate) fn shape_all(
    records: &[Record],
    shape: &Shape,
) -> Result<Vec<Shaped>, crate::error::UsageError> {
    let mut groups: Vec<((String, String), Vec<&Record>)> = Vec::new();
    for r in records {
        let key = (r.meta().suite.clone(), r.meta().study.clone());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    groups
        .into_iter()
        .map(|(_, recs)| shape_study(&recs, shape))
        .collect()
}

fn canonical_list(v: &[String]) -> Result<Vec<String>, crate::error::UsageError> {
    v.iter().map(|n| axis::canonical(n)).collect()
}

/// Row and column axes of a study's table (overrides from `shape`, else the study's own; an
/// axis named nowhere becomes a row axis) and the distinct targets in run order.
#[allow(clippy::type_complexity)]
fn table_axes(
    recs: &[&Record],
    first: &SweepMeta,
    shape: &Shape,
) -> Result<(Vec<String>, Vec<String>, Vec<String>), crate::error::UsageError> {
    let mut present: Vec<String> = Vec::new();
    let mut targets: Vec<String> = Vec::new();
    for r in recs {
        for (n, _) in &r.meta().point {
            push_unique(&mut present, n);
        }
        if let Some(t) = &r.meta().target {
            push_unique(&mut targets, t);
        }
    }
    if targets.len() > 1 {
        present.insert(0, "target".into());
    }
    let keep =
        |v: Vec<String>| -> Vec<String> { v.into_iter().filter(|a| present.contains(a)).collect() };
    let mut cols = keep(match &shape.cols {
        Some(c) => canonical_list(c)?,
        None => first.table.cols.clone(),
    });
    let mut rows = keep(match &shape.rows {
        Some(r) => canonical_list(r)?,
        None => first.table.rows.clone(),
    });
    rows.retain(|r| !cols.contains(r));
    if targets.len() > 1
        && !rows.contains(&"target".to_string())
        && !cols.contains(&"target".to_string())
    {
        rows.insert(0, "target".into());
    }
    // No axis is ever averaged away: axes named nowhere become row axes.
    for a in &present {
        if !rows.contains(a) && !cols.contains(a) {
            rows.push(a.clone());
        }
    }
    if rows.is_empty() && !cols.is_empty() {
        rows.push(cols.remove(0));
    }
    Ok((rows, cols, targets))
}

/// The keys of the metrics shown: `--metrics`, else the study's own, else the defaults.
pub(crate) fn metric_keys(first: &SweepMeta, shape: &Shape) -> Vec<String> {
    match &shape.metrics {
        Some(m) => m.clone(),
        None if !first.table.metrics.is_empty() => first.table.metrics.clone(),
        None => metrics::DEFAULT_METRICS
            .iter()
            .map(|s| s.to_string())
            .collect(),
    }
}

/// The metrics shown (see [`metric_keys`]).
fn table_metrics(
    first: &SweepMeta,
    shape: &Shape,
) -> Result<Vec<&'static Metric>, crate::error::UsageError> {
    metric_keys(first, shape)
        .iter()
        .map(|k| {
            metrics::find(k).ok_or_else(|| {
                crate::usage!(
                    "unknown metric '{k}': expected one of {}",
                    metrics::keys().join(", ")
                )
            })
        })
        .collect::<Result<_, _>>()
}

/// Add one record to its cell: its metric values, or why it has none, and its notes.
fn fill_cell(cell: &mut Cell, r: &Record, ms: &[&'static Metric], notes: &mut Vec<String>) {
    match r {
        Record::Skipped { reason, .. } => {
            cell.skipped = Some(reason.clone());
            push_unique(
                notes,
                &point_note("skipped", &r.meta().point_label(), reason),
            );
        }
        Record::Run { result, .. } => {
            if cell.values.is_empty() {
                cell.values = vec![Vec::new(); ms.len()];
            }
            for (k, m) in ms.iter().enumerate() {
                if let Some(v) = (m.get)(result) {
                    cell.values[k].push(v);
                }
            }
            match result.status {
                RunStatus::Failed => {
                    cell.failed = true;
                    let why = result
                        .failures
                        .first()
                        .map(|f| f.to_string())
                        .unwrap_or_default();
                    push_unique(notes, &point_note("FAILED", &r.meta().point_label(), &why));
                }
                RunStatus::Partial => {
                    cell.partial = true;
                    push_unique(
                        notes,
                        &point_note("partial, interrupted", &r.meta().point_label(), ""),
                    );
                }
                RunStatus::Complete => {}
            }
            for n in &result.notes {
                if n.contains("misaligned")
                    || n.contains("raw I/O")
                    || n.contains("only")
                    || n.contains("threads share blocks")
                {
                    push_unique(notes, &point_note("note", &r.meta().point_label(), n));
                }
            }
        }
    }
}

/// The points whose file was made larger than the study's `size` setting (a sweep gives each
/// sequential thread at least one I/O, so a scaled-down size grows to threads x block size),
/// in one line naming how many and the largest: those points moved more than `size`.
fn grown_files_note(recs: &[&Record]) -> Option<String> {
    let mut grown: Vec<(String, u64, u64)> = Vec::new();
    for r in recs {
        let Record::Run { result, .. } = r else {
            continue;
        };
        let meta = r.meta();
        let set = meta
            .settings
            .iter()
            .find(|(n, _)| n == "size")
            .and_then(|(_, v)| {
                crate::units::parse_size_as(v, crate::units::BareUnit::Bytes, "size").ok()
            });
        let used = result.job.as_ref().and_then(|j| j.file_size);
        if let (Some(set), Some(used)) = (set, used) {
            if used > set {
                grown.push((meta.point_label(), set, used));
            }
        }
    }
    let (label, set, used) = grown.iter().max_by_key(|(_, _, used)| *used)?;
    let size = crate::units::format_size_exact;
    Some(format!(
        "{} of {} points ran on a file larger than the size setting {}: each sequential thread gets at least one I/O, so the file grows to threads x block size (largest {} at {label}); those points moved more data than the others",
        grown.len(),
        recs.len(),
        size(*set),
        size(*used),
    ))
}

/// A note about one point: `what (label): detail`, without the parentheses when the point has
/// no label (a study of one point) and without the colon when there is no detail.
fn point_note(what: &str, label: &str, detail: &str) -> String {
    let mut s = what.to_string();
    if !label.is_empty() {
        s.push_str(&format!(" ({label})"));
    }
    if !detail.is_empty() {
        s.push_str(&format!(": {detail}"));
    }
    s
}

/// Notes that repeat for every point say the same thing once.
fn compact_notes(notes: Vec<String>) -> Vec<String> {
    let mut compact: Vec<String> = Vec::new();
    let mut seen_reasons: Vec<String> = Vec::new();
    for n in notes {
        let reason = n
            .split_once("): ")
            .map(|(_, r)| r.to_string())
            .unwrap_or(n.clone());
        if seen_reasons.contains(&reason) {
            continue;
        }
        seen_reasons.push(reason);
        compact.push(n);
    }
    compact
}

/// Order keys by their axes in the order given (`--rows target,bs,rw`: by target, then I/O
/// size, then access), each axis's values in the order they were run: a regrouping of the
/// same points, as the Storage Foundation chapter prints its table in two sort orders.
fn sort_keys(keys: &mut [Vec<String>], axes: &[String], recs: &[&Record]) {
    let firsts: Vec<Vec<String>> = axes
        .iter()
        .map(|a| {
            let mut seen: Vec<String> = Vec::new();
            for r in recs {
                push_unique(
                    &mut seen,
                    &axis_value(r.meta(), a).unwrap_or_else(|| "-".into()),
                );
            }
            seen
        })
        .collect();
    keys.sort_by_key(|k| {
        k.iter()
            .zip(&firsts)
            .map(|(v, seen)| seen.iter().position(|s| s == v).unwrap_or(usize::MAX))
            .collect::<Vec<usize>>()
    });
}

/// Shape the records of one study into a table: axes, metrics, one cell per point.
pub(crate) fn shape_study(
    recs: &[&Record],
    shape: &Shape,
) -> Result<Shaped, crate::error::UsageError> {
    let first = recs[0].meta();
    let (rows, cols, targets) = table_axes(recs, first, shape)?;
    let ms = table_metrics(first, shape)?;
    let key_of = |m: &SweepMeta, axes: &[String]| -> Vec<String> {
        axes.iter()
            .map(|a| axis_value(m, a).unwrap_or_else(|| "-".into()))
            .collect()
    };
    let mut row_keys: Vec<Vec<String>> = Vec::new();
    let mut col_keys: Vec<Vec<String>> = Vec::new();
    for r in recs {
        let rk = key_of(r.meta(), &rows);
        if !row_keys.contains(&rk) {
            row_keys.push(rk);
        }
        let ck = key_of(r.meta(), &cols);
        if !col_keys.contains(&ck) {
            col_keys.push(ck);
        }
    }
    sort_keys(&mut row_keys, &rows, recs);
    sort_keys(&mut col_keys, &cols, recs);
    let mut cells = vec![vec![Cell::default(); col_keys.len()]; row_keys.len()];
    let mut notes = Vec::new();
    for r in recs {
        let ri = row_keys
            .iter()
            .position(|k| *k == key_of(r.meta(), &rows))
            .unwrap_or(0);
        let ci = col_keys
            .iter()
            .position(|k| *k == key_of(r.meta(), &cols))
            .unwrap_or(0);
        let cell = &mut cells[ri][ci];
        fill_cell(cell, r, &ms, &mut notes);
    }
    notes.extend(grown_files_note(recs));
    if cells
        .iter()
        .flatten()
        .any(|c| c.values.iter().any(|v| v.len() >= 2))
    {
        notes.push(REPEAT_NOTE.to_string());
    }
    // Repetitions that disagree (`explain`: spread), named on the first metric.
    for (ri, rk) in row_keys.iter().enumerate() {
        for (ci, ck) in col_keys.iter().enumerate() {
            let Some(sp) = cells[ri][ci].spread(0) else {
                continue;
            };
            if sp > crate::explain::SPREAD_LIMIT {
                let key: Vec<String> = rows
                    .iter()
                    .zip(rk)
                    .chain(cols.iter().zip(ck))
                    .map(|(a, v)| format!("{a}={v}"))
                    .collect();
                let key = if key.is_empty() {
                    "the point".to_string()
                } else {
                    key.join(" ")
                };
                notes.push(format!(
                    "explain: the repetitions of {key} disagree by {:.1}% on {} ((max - min) / mean above {:.0}%): not a steady state; run longer or warm the storage up before measuring",
                    sp * 100.0,
                    ms.first().map_or("", |m| m.label),
                    crate::explain::SPREAD_LIMIT * 100.0
                ));
            }
        }
    }
    Ok(Shaped {
        suite: first.suite.clone(),
        study: first.study.clone(),
        title: first.title.clone(),
        row_axes: rows,
        col_axes: cols,
        metrics: ms,
        row_keys,
        col_keys,
        cells,
        notes: first
            .table
            .note
            .iter()
            .cloned()
            .chain(compact_notes(notes))
            .collect(),
        chart: first.chart.clone(),
        targets,
    })
}

impl Shaped {
    /// Header row: row axis labels, then for each metric each column key.
    pub(crate) fn header(&self) -> Vec<String> {
        let mut h: Vec<String> = self.row_axes.iter().map(|a| axis::label(a)).collect();
        for m in &self.metrics {
            for ck in &self.col_keys {
                let prefix = ck.join(" ");
                h.push(if prefix.is_empty() || self.col_axes.is_empty() {
                    m.label.to_string()
                } else {
                    format!("{prefix} {}", m.label)
                });
            }
        }
        h
    }

    /// Body rows as text.
    pub(crate) fn body(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        for (ri, rk) in self.row_keys.iter().enumerate() {
            let mut row = rk.clone();
            for (mi, m) in self.metrics.iter().enumerate() {
                for ci in 0..self.col_keys.len() {
                    row.push(format_cell(&self.cells[ri][ci], mi, m));
                }
            }
            out.push(row);
        }
        out
    }
}

/// What `±` and the range in a cell are (the note under a table with repetitions).
pub(crate) const REPEAT_NOTE: &str =
    "with --repeat: mean ± sample standard deviation (min..max) over the repetitions";

/// A cell as text: the mean, with repetitions `± stdev (min..max)` as hyperfine prints them,
/// `!` when the run failed.
pub(crate) fn format_cell(c: &Cell, mi: usize, m: &Metric) -> String {
    if let Some(v) = c.mean(mi) {
        let d = m.decimals;
        let mut s = format!("{v:.d$}");
        if let (Some(sd), Some((lo, hi))) = (c.stdev(mi), c.range(mi)) {
            s.push_str(&format!(" ±{sd:.d$} ({lo:.d$}..{hi:.d$})"));
        }
        if c.failed {
            s.push_str(" !");
        } else if c.partial {
            s.push_str(" *");
        }
        s
    } else if c.skipped.is_some() {
        "skipped".into()
    } else {
        "-".into()
    }
}

/// Plain-text table with aligned columns, fitted to the terminal ([`super::width`]).
pub(crate) fn render_text(t: &Shaped) -> String {
    render_text_width(t, super::width::terminal_width())
}

/// Plain-text table with aligned columns, at most `width` characters a line where the
/// columns allow: a table wider than that is printed as several tables one under the other,
/// each with the row columns and as many value columns as fit (None: one table). Pivoting
/// reads best here: the cells are figures, which wrapping would break apart.
pub(crate) fn render_text_width(t: &Shaped, width: Option<usize>) -> String {
    let mut table = TextTable::new(t.header(), t.row_axes.len(), Fit::Pivot).rule();
    for row in t.body() {
        table.push(row);
    }
    let mut out = format!("{}\n", t.title);
    out += &table.render(width);
    for n in &t.notes {
        out += &format!("  {n}\n");
    }
    out
}

/// Markdown table.
pub(crate) fn render_markdown(t: &Shaped) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let header = t.header();
    let mut out = format!("### {}\n\n", esc(&t.title));
    out += &format!(
        "| {} |\n",
        header
            .iter()
            .map(|h| esc(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    out += &format!(
        "|{}|\n",
        header
            .iter()
            .enumerate()
            .map(|(i, _)| if i < t.row_axes.len() { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in t.body() {
        out += &format!(
            "| {} |\n",
            r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    if !t.notes.is_empty() {
        out.push('\n');
        for n in &t.notes {
            out += &format!("- {}\n", esc(n));
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sweep::record::TableSpec;

    /// A synthetic measured record (for table and chart tests).
    pub(crate) fn fake(
        study: &str,
        point: &[(&str, &str)],
        kbps: f64,
        cpu: f64,
        target: Option<&str>,
    ) -> Record {
        let job = crate::job::Job {
            targets: vec!["/tmp/x".into()],
            io_count: Some(1),
            ..Default::default()
        };
        let outcome = crate::runner::RunOutcome {
            plan: crate::runner::Plan {
                part: None,
                targets: vec![],
                cache: Default::default(),
                notes: vec![],
            },
            threads: vec![],
            status: RunStatus::Complete,
            failures: vec![],
            elapsed_s: 1.0,
            started_unix_s: 0.0,
            probes: Default::default(),
            status_interval_ns: None,
            host: None,
        };
        let mut r = crate::result::RunResult::from_outcome(&job, &outcome);
        r.total.bytes_per_sec = kbps * 1024.0;
        r.total.cpu_s = cpu;
        r.total.iops = kbps;
        let meta = SweepMeta {
            suite: "s".into(),
            study: study.into(),
            title: format!("{study} title"),
            point: point
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            table: TableSpec {
                rows: vec!["bs".into()],
                cols: vec!["cache".into()],
                metrics: vec!["kb_per_s".into(), "cpu_s".into()],
                note: None,
            },
            target: target.map(str::to_string),
            ..Default::default()
        };
        Record::run(meta, r)
    }

    /// A study of one point has no point label: its notes carry no empty parentheses.
    #[test]
    fn notes_of_a_point_without_label_have_no_empty_parentheses() {
        let mut partial = fake("t", &[], 1.0, 0.1, None);
        let mut failed = fake("u", &[], 1.0, 0.1, None);
        if let Record::Run { result, .. } = &mut partial {
            result.status = RunStatus::Partial;
        }
        if let Record::Run { result, .. } = &mut failed {
            result.status = RunStatus::Failed;
        }
        let skipped = Record::skip(fake("v", &[], 1.0, 0.1, None).meta().clone(), "no device");
        let mut notes = Vec::new();
        for r in [&partial, &failed, &skipped] {
            let ms = table_metrics(r.meta(), &Shape::default()).unwrap();
            fill_cell(&mut Cell::default(), r, &ms, &mut notes);
        }
        assert_eq!(
            notes,
            ["partial, interrupted", "FAILED", "skipped: no device"]
        );
        let labelled = fake("w", &[("bs", "4k")], 1.0, 0.1, None);
        let mut labelled = labelled;
        if let Record::Run { result, .. } = &mut labelled {
            result.status = RunStatus::Partial;
        }
        let mut notes = Vec::new();
        let ms = table_metrics(labelled.meta(), &Shape::default()).unwrap();
        fill_cell(&mut Cell::default(), &labelled, &ms, &mut notes);
        assert_eq!(notes, ["partial, interrupted (bs=4k)"]);
    }

    #[test]
    fn paper_shape_block_size_by_policy() {
        let mut recs = Vec::new();
        for (i, bs) in ["64k", "256k"].iter().enumerate() {
            for (j, c) in ["buffered", "direct"].iter().enumerate() {
                recs.push(fake(
                    "t",
                    &[("bs", bs), ("cache", c)],
                    (100 * (i + 1) + j) as f64,
                    0.5,
                    None,
                ));
            }
        }
        let t = &shape_all(&recs, &Shape::default()).unwrap()[0];
        assert_eq!(
            t.header(),
            [
                "block size",
                "buffered KiB/s",
                "direct KiB/s",
                "buffered CPU s",
                "direct CPU s"
            ]
        );
        assert_eq!(t.body()[1], ["256k", "200", "201", "0.500", "0.500"]);
        // Without a width limit one table; at 40 columns two, each with the row column.
        let whole = render_text_width(t, None);
        assert!(whole.contains("block size  buffered KiB/s  direct KiB/s  buffered CPU s"));
        let narrow = render_text_width(t, Some(40));
        assert!(narrow.lines().all(|l| l.chars().count() <= 40), "{narrow}");
        assert!(narrow.contains("block size  buffered KiB/s  direct KiB/s\n"));
        assert!(narrow.contains("block size  buffered CPU s  direct CPU s\n"));
        assert_eq!(narrow.matches("256k").count(), 2, "{narrow}");
        // Swap rows and columns.
        let s = Shape {
            rows: Some(vec!["cache".into()]),
            cols: Some(vec!["bs".into()]),
            metrics: Some(vec!["kb_per_s".into()]),
        };
        let t = &shape_all(&recs, &s).unwrap()[0];
        assert_eq!(t.header(), ["cache", "64k KiB/s", "256k KiB/s"]);
        assert_eq!(t.body()[1], ["direct", "101", "201"]);
        assert!(render_markdown(t).contains("| direct | 101 | 201 |"));
        assert!(shape_all(
            &recs,
            &Shape {
                metrics: Some(vec!["speed".into()]),
                ..Default::default()
            }
        )
        .is_err());
    }

    #[test]
    fn repeats_average_and_targets_become_rows() {
        let mut recs = vec![
            fake(
                "t",
                &[("bs", "64k"), ("cache", "direct")],
                100.0,
                1.0,
                Some("/a"),
            ),
            fake(
                "t",
                &[("bs", "64k"), ("cache", "direct")],
                110.0,
                1.0,
                Some("/a"),
            ),
            fake(
                "t",
                &[("bs", "64k"), ("cache", "direct")],
                50.0,
                1.0,
                Some("/b"),
            ),
        ];
        if let Record::Run { meta, .. } = &mut recs[1] {
            meta.repeat = 1;
        }
        let t = &shape_all(&recs, &Shape::default()).unwrap()[0];
        assert_eq!(t.row_axes, ["target", "bs"]);
        // Mean ± sample standard deviation (min..max), and the note that says so.
        assert_eq!(t.body()[0][2], "105 ±7 (100..110)");
        assert!(t.notes.iter().any(|n| n == REPEAT_NOTE), "{:?}", t.notes);
        assert_eq!(t.body()[1][2], "50");
        assert_eq!(
            t.cells[0][0].spread(0).map(|s| (s * 100.0).round()),
            Some(10.0)
        );
    }
}
