//! Table shaping: stored sweep points become the papers' tables, rows and columns chosen by
//! axis ("block size | buffered KiB/s | discovered KiB/s | direct KiB/s | raw KiB/s | buffered
//! CPU s | ..."). Repetitions of a point are averaged and their spread kept for `compare`.
//! As text they are drawn by `super::text_table::TextTable`, pivoted on a narrow terminal.

use super::metrics::{self, Metric};
use super::text_table::{Fit, TextTable};
use crate::runner::RunStatus;
use crate::sweep::axis;
use crate::sweep::record::{ChartSpec, Record, SweepMeta};

/// Measurements of one cell: per metric, one value per repetition.
#[derive(Debug, Clone, Default)]
pub struct Cell {
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
pub struct Shaped {
    pub suite: String,
    pub study: String,
    pub title: String,
    pub row_axes: Vec<String>,
    pub col_axes: Vec<String>,
    pub metrics: Vec<&'static Metric>,
    pub row_keys: Vec<Vec<String>>,
    pub col_keys: Vec<Vec<String>>,
    /// `cells[row][col]`
    pub cells: Vec<Vec<Cell>>,
    /// The legend of the findings (see [`Shaped::findings`]), then skip reasons, failures and
    /// the points' notes, each once with every point it concerns.
    pub notes: Vec<String>,
    /// What `explain` found on the points, one group per check, each naming its points.
    pub findings: Vec<FindingGroup>,
    /// Per row, the markers of the findings on its points (`a,c`; empty: none).
    pub row_markers: Vec<String>,
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
pub struct Shape {
    pub rows: Option<Vec<String>>,
    pub cols: Option<Vec<String>>,
    pub metrics: Option<Vec<String>>,
}

/// Group records by study (in run order) and shape each into a table.
pub fn shape_all(
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
fn fill_cell(cell: &mut Cell, r: &Record, ms: &[&'static Metric], notes: &mut Vec<PointNote>) {
    let label = r.meta().point_label();
    let mut note = |what: &str, detail: &str| {
        let n = PointNote {
            what: what.to_string(),
            label: label.clone(),
            detail: detail.to_string(),
        };
        if !notes.contains(&n) {
            notes.push(n);
        }
    };
    match r {
        Record::Skipped { reason, .. } => {
            cell.skipped = Some(reason.clone());
            note("skipped", reason);
        }
        Record::Run { result, .. } => {
            if cell.values.is_empty() {
                cell.values = vec![Vec::new(); ms.len()];
            }
            for (k, m) in ms.iter().enumerate() {
                // A `--repeat` Result counts as its runs.
                if let Some(vs) = super::metrics::repeat_values(m.key, result) {
                    cell.values[k].extend(vs);
                } else if let Some(v) = (m.get)(result) {
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
                    note("FAILED", &why);
                }
                RunStatus::Partial => {
                    cell.partial = true;
                    note("partial, interrupted", "");
                }
                RunStatus::Complete => {}
            }
            for n in &result.notes {
                if n.contains("misaligned")
                    || n.contains("raw I/O")
                    || n.contains("only")
                    || n.contains("threads share blocks")
                {
                    note("note", n);
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

/// A note about one point: what happened (`skipped`, `FAILED`, `note`), the point's label
/// and the detail.
#[derive(Debug, Clone, PartialEq)]
struct PointNote {
    what: String,
    label: String,
    detail: String,
}

/// Notes that say the same of several points say it once, naming every point:
/// `what (label): detail`, or `what (3 points: a, b, c): detail`; without the parentheses
/// when the point has no label (a study of one point) and without the colon when there is
/// no detail.
fn compact_notes(notes: Vec<PointNote>) -> Vec<String> {
    let mut grouped: Vec<(String, String, Vec<String>)> = Vec::new();
    for n in notes {
        match grouped
            .iter_mut()
            .find(|(w, d, _)| *w == n.what && *d == n.detail)
        {
            Some((_, _, labels)) => push_unique(labels, &n.label),
            None => grouped.push((n.what, n.detail, vec![n.label])),
        }
    }
    grouped
        .into_iter()
        .map(|(what, detail, labels)| {
            let labels: Vec<String> = labels.into_iter().filter(|l| !l.is_empty()).collect();
            let mut s = what;
            match labels.len() {
                0 => {}
                1 => s.push_str(&format!(" ({})", labels[0])),
                n => s.push_str(&format!(" ({n} points: {})", labels.join(", "))),
            }
            if !detail.is_empty() {
                s.push_str(&format!(": {detail}"));
            }
            s
        })
        .collect()
}

/// One kind of `explain` finding over a study's points: its check, its marker in the table
/// and every point it was found on, with what was found there (`43.7 %`, or nothing).
#[derive(Debug, Clone)]
pub struct FindingGroup {
    pub marker: String,
    pub check: String,
    pub points: Vec<(String, String)>,
    /// The rows holding those points.
    rows: Vec<usize>,
}

/// A point named by its table axes (`bs=4k cache=buffered`), or `the point` in a study
/// without axes.
fn point_key(rows: &[String], rk: &[String], cols: &[String], ck: &[String]) -> String {
    let key: Vec<String> = rows
        .iter()
        .zip(rk)
        .chain(cols.iter().zip(ck))
        .map(|(a, v)| format!("{a}={v}"))
        .collect();
    if key.is_empty() {
        "the point".to_string()
    } else {
        key.join(" ")
    }
}

/// What a finding's evidence says of its one point, for the legend.
fn finding_detail(e: &crate::explain::Explanation) -> String {
    let ev = &e.evidence;
    match e.check.as_str() {
        "too_short" => ev["elapsed_s"]
            .as_f64()
            .map(|s| crate::units::format_ns(s * 1e9))
            .unwrap_or_default(),
        "page_cache" => ev["cache_served_pct"]
            .as_f64()
            .map(|p| format!("{p:.0} % from the cache"))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// Add point `key` (in row `ri`) to the group of `check`, once.
fn add_finding(groups: &mut Vec<FindingGroup>, check: &str, key: &str, ri: usize, detail: String) {
    let g = match groups.iter_mut().position(|g| g.check == check) {
        Some(i) => &mut groups[i],
        None => {
            groups.push(FindingGroup {
                marker: String::new(),
                check: check.to_string(),
                points: Vec::new(),
                rows: Vec::new(),
            });
            groups.last_mut().expect("just pushed")
        }
    };
    if !g.points.iter().any(|(k, _)| k == key) {
        g.points.push((key.to_string(), detail));
    }
    if !g.rows.contains(&ri) {
        g.rows.push(ri);
    }
}

/// Marker `n` of a table: `a` to `z`, then `a1`, `b1`, ...
fn marker(n: usize) -> String {
    let letter = (b'a' + (n % 26) as u8) as char;
    match n / 26 {
        0 => letter.to_string(),
        k => format!("{letter}{k}"),
    }
}

/// The legend line of a group: `a: 6 of 6 points: what: bs=4k 43.7 %, bs=8k 12.1 %; hint`.
fn legend_line(g: &FindingGroup, measured: usize, first_metric: &str) -> String {
    let (what, hint) = crate::explain::legend(&g.check);
    let mut what = if what.is_empty() {
        g.check.clone()
    } else {
        what.to_string()
    };
    if g.check == "spread" && !first_metric.is_empty() {
        what = what.replacen("disagree", &format!("disagree on {first_metric}"), 1);
    }
    let points: Vec<String> = g
        .points
        .iter()
        .map(|(k, d)| {
            if d.is_empty() {
                k.clone()
            } else {
                format!("{k} {d}")
            }
        })
        .collect();
    let hint = if hint.is_empty() {
        String::new()
    } else {
        format!("; {hint}")
    };
    format!(
        "{}: {} of {measured} points: {what}: {}{hint}",
        g.marker,
        g.points.len(),
        points.join(", ")
    )
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
    let mut study_notes: Vec<String> = compact_notes(notes);
    study_notes.extend(grown_files_note(recs));
    if cells
        .iter()
        .flatten()
        .any(|c| c.values.iter().any(|v| v.len() >= 2))
    {
        study_notes.push(REPEAT_NOTE.to_string());
    }
    let (findings, row_markers) =
        collect_findings(recs, &rows, &cols, &row_keys, &col_keys, &cells);
    let measured = cells
        .iter()
        .flatten()
        .filter(|c| c.mean(0).is_some())
        .count();
    let first_metric = ms.first().map_or(String::new(), |m| table_label(m));
    let legend: Vec<String> = findings
        .iter()
        .map(|g| legend_line(g, measured.max(g.points.len()), &first_metric))
        .collect();
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
            .chain(legend)
            .chain(study_notes)
            .collect(),
        findings,
        row_markers,
        chart: first.chart.clone(),
        targets,
    })
}

/// The `explain` findings of a study's points, grouped by check with markers in order of
/// first appearance, and each row's markers. Each record's own findings count (a point's
/// repetitions once), except `spread`, which the table judges again on its first metric
/// over the repetitions it holds.
fn collect_findings(
    recs: &[&Record],
    rows: &[String],
    cols: &[String],
    row_keys: &[Vec<String>],
    col_keys: &[Vec<String>],
    cells: &[Vec<Cell>],
) -> (Vec<FindingGroup>, Vec<String>) {
    let key_of = |m: &SweepMeta, axes: &[String]| -> Vec<String> {
        axes.iter()
            .map(|a| axis_value(m, a).unwrap_or_else(|| "-".into()))
            .collect()
    };
    let mut groups: Vec<FindingGroup> = Vec::new();
    for r in recs {
        let Record::Run { result, .. } = r else {
            continue;
        };
        let (rk, ck) = (key_of(r.meta(), rows), key_of(r.meta(), cols));
        let ri = row_keys.iter().position(|k| *k == rk).unwrap_or(0);
        let key = point_key(rows, &rk, cols, &ck);
        for e in result.explain.iter().filter(|e| e.check != "spread") {
            add_finding(&mut groups, &e.check, &key, ri, finding_detail(e));
        }
    }
    for (ri, rk) in row_keys.iter().enumerate() {
        for (ci, ck) in col_keys.iter().enumerate() {
            let Some(sp) = cells[ri][ci].spread(0) else {
                continue;
            };
            if sp > crate::explain::SPREAD_LIMIT {
                let key = point_key(rows, rk, cols, ck);
                add_finding(
                    &mut groups,
                    "spread",
                    &key,
                    ri,
                    format!("{:.1} %", sp * 100.0),
                );
            }
        }
    }
    for (i, g) in groups.iter_mut().enumerate() {
        g.marker = marker(i);
    }
    let markers = (0..row_keys.len())
        .map(|ri| {
            groups
                .iter()
                .filter(|g| g.rows.contains(&ri))
                .map(|g| g.marker.as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    (groups, markers)
}

/// The head of the marker column: which findings of the legend under the table concern the
/// row's points.
pub(crate) const MARKER_HEAD: &str = "notes";

impl Shaped {
    /// A column's key as its head says it: each axis value, with the axis named when the
    /// value alone does not say what it is (`nrep=4`, `bs=64k`; `buffered` as it is).
    fn col_prefix(&self, ck: &[String]) -> String {
        self.col_axes
            .iter()
            .zip(ck)
            .map(|(a, v)| {
                if v.starts_with(|c: char| c.is_ascii_digit()) {
                    format!("{a}={v}")
                } else {
                    v.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Header row: row axis labels, then for each metric each column key.
    pub(crate) fn header(&self) -> Vec<String> {
        let mut h: Vec<String> = self.row_axes.iter().map(|a| axis::label(a)).collect();
        for m in &self.metrics {
            for ck in &self.col_keys {
                let prefix = self.col_prefix(ck);
                h.push(if prefix.is_empty() || self.col_axes.is_empty() {
                    table_label(m)
                } else {
                    format!("{prefix} {}", table_label(m))
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

    /// Whether the table has a marker column: some point has a finding.
    pub(crate) fn has_markers(&self) -> bool {
        !self.findings.is_empty()
    }

    /// Columns that name a row: the row axes, and the marker column when there is one.
    pub(crate) fn label_columns(&self) -> usize {
        self.row_axes.len() + self.has_markers() as usize
    }

    /// The head as text, Markdown and HTML print it: [`Self::header`] with the marker column
    /// after the row axes when some point has a finding.
    pub(crate) fn marked_header(&self) -> Vec<String> {
        let mut h = self.header();
        if self.has_markers() {
            h.insert(self.row_axes.len(), MARKER_HEAD.to_string());
        }
        h
    }

    /// The rows as text, Markdown and HTML print them: [`Self::body`] with each row's
    /// markers after its axes when some point has a finding.
    pub(crate) fn marked_body(&self) -> Vec<Vec<String>> {
        let mut body = self.body();
        if self.has_markers() {
            for (row, m) in body.iter_mut().zip(&self.row_markers) {
                row.insert(self.row_axes.len(), m.clone());
            }
        }
        body
    }
}

/// Bytes a second in one unit of a throughput metric, for the metrics a table prints in
/// human units (`989 MiB/s`); None for the others.
fn bytes_per_unit(m: &Metric) -> Option<f64> {
    match m.key {
        "kb_per_s" => Some(1024.0),
        "mb_per_s" | "read_mib_per_s" | "write_mib_per_s" | "trim_mib_per_s" => {
            Some(1024.0 * 1024.0)
        }
        _ => None,
    }
}

/// A metric's column label in a table. A throughput carries its unit in each cell, so its
/// head names the figure (`throughput`, `read throughput`) instead of a unit.
pub(crate) fn table_label(m: &Metric) -> String {
    if bytes_per_unit(m).is_none() {
        return m.label.to_string();
    }
    let what = m
        .label
        .trim_end_matches("KiB/s")
        .trim_end_matches("MiB/s")
        .trim();
    if what.is_empty() {
        "throughput".to_string()
    } else {
        format!("{what} throughput")
    }
}

/// What `±` and the range in a cell are (the note under a table with repetitions).
pub(crate) const REPEAT_NOTE: &str =
    "with --repeat: mean ± sample standard deviation (min..max) over the repetitions";

/// A cell as text: the mean (a throughput in human units, `989 MiB/s`), with repetitions
/// `± stdev (min..max)` as hyperfine prints them, `!` when the run failed.
pub(crate) fn format_cell(c: &Cell, mi: usize, m: &Metric) -> String {
    if let Some(v) = c.mean(mi) {
        let d = m.decimals;
        let figure = |v: f64| match bytes_per_unit(m) {
            Some(unit) => crate::units::format_binary_rate(v * unit),
            None => format!("{v:.d$}"),
        };
        let mut s = figure(v);
        if let (Some(sd), Some((lo, hi))) = (c.stdev(mi), c.range(mi)) {
            s.push_str(&format!(
                " ±{} ({}..{})",
                figure(sd),
                figure(lo),
                figure(hi)
            ));
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
    let mut table = TextTable::new(t.marked_header(), t.label_columns(), Fit::Pivot).rule();
    for row in t.marked_body() {
        table.push(row);
    }
    let mut out = format!("{}\n", t.title);
    out += &table.render(width);
    // The notes are prose: cut at spaces to the width, continued under their first word's
    // end (a legend line's text stands clear of its marker).
    for n in &t.notes {
        let mut words = n.split(' ');
        let first = format!("  {}", words.next().unwrap_or(""));
        let rest: Vec<String> = words.map(str::to_string).collect();
        out += &super::width::wrap_items(&first, &rest, width);
        out.push('\n');
    }
    out
}

/// Markdown table.
pub(crate) fn render_markdown(t: &Shaped) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let header = t.marked_header();
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
            .map(|(i, _)| if i < t.label_columns() { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in t.marked_body() {
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
            steady: None,
            host: None,
            stability_grid_ns: None,
            host_ticks: Vec::new(),
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
            compact_notes(notes),
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
        assert_eq!(compact_notes(notes), ["partial, interrupted (bs=4k)"]);
    }

    /// The same note on several points is said once, naming every point.
    #[test]
    fn a_note_on_several_points_names_them_all() {
        let mut notes = Vec::new();
        for bs in ["4k", "8k", "16k"] {
            let r = Record::skip(
                fake("v", &[("bs", bs)], 1.0, 0.1, None).meta().clone(),
                "no device",
            );
            let ms = table_metrics(r.meta(), &Shape::default()).unwrap();
            fill_cell(&mut Cell::default(), &r, &ms, &mut notes);
        }
        assert_eq!(
            compact_notes(notes),
            ["skipped (3 points: bs=4k, bs=8k, bs=16k): no device"]
        );
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
                "buffered throughput",
                "direct throughput",
                "buffered CPU s",
                "direct CPU s"
            ]
        );
        assert_eq!(
            t.body()[1],
            ["256k", "200 KiB/s", "201 KiB/s", "0.500", "0.500"]
        );
        // Without a width limit one table; at 40 columns two, each with the row column.
        let whole = render_text_width(t, None);
        assert!(
            whole.contains("block size  buffered throughput  direct throughput  buffered CPU s")
        );
        let narrow = render_text_width(t, Some(50));
        assert!(narrow.lines().all(|l| l.chars().count() <= 50), "{narrow}");
        assert!(narrow.contains("block size  buffered throughput  direct throughput\n"));
        assert!(narrow.contains("block size  buffered CPU s  direct CPU s\n"));
        assert_eq!(narrow.matches("256k").count(), 2, "{narrow}");
        // Swap rows and columns.
        let s = Shape {
            rows: Some(vec!["cache".into()]),
            cols: Some(vec!["bs".into()]),
            metrics: Some(vec!["kb_per_s".into()]),
        };
        let t = &shape_all(&recs, &s).unwrap()[0];
        // A column axis whose values do not say what they are is named in the head.
        assert_eq!(
            t.header(),
            ["cache", "bs=64k throughput", "bs=256k throughput"]
        );
        assert_eq!(t.body()[1], ["direct", "101 KiB/s", "201 KiB/s"]);
        assert!(render_markdown(t).contains("| direct | 101 KiB/s | 201 KiB/s |"));
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
        assert_eq!(
            t.body()[0][2],
            "105 KiB/s ±7.07 KiB/s (100 KiB/s..110 KiB/s)"
        );
        assert!(t.notes.iter().any(|n| n == REPEAT_NOTE), "{:?}", t.notes);
        assert_eq!(t.body()[1][2], "50.0 KiB/s");
        assert_eq!(
            t.cells[0][0].spread(0).map(|s| (s * 100.0).round()),
            Some(10.0)
        );
    }

    /// Findings of every point are in the table: a marker per row, and a legend line per
    /// check naming each point it was found on.
    #[test]
    fn findings_get_markers_and_a_legend_naming_every_point() {
        let short = |elapsed_s: f64| crate::explain::Explanation {
            check: "too_short".into(),
            message: "too short".into(),
            evidence: serde_json::json!({"elapsed_s": elapsed_s}),
        };
        let mut recs = Vec::new();
        for (bs, values) in [
            ("4k", [100.0, 150.0]),
            ("8k", [100.0, 120.0]),
            ("16k", [100.0, 101.0]),
        ] {
            for (rep, v) in values.iter().enumerate() {
                let mut r = fake("t", &[("bs", bs), ("cache", "buffered")], *v, 0.1, None);
                if let Record::Run { meta, result } = &mut r {
                    meta.repeat = rep as u32;
                    if bs == "16k" {
                        result.explain.push(short(0.01));
                    }
                }
                recs.push(r);
            }
        }
        let t = &shape_all(&recs, &Shape::default()).unwrap()[0];
        assert_eq!(t.row_markers, ["b", "b", "a"]);
        assert_eq!(t.marked_header()[..2], ["block size", MARKER_HEAD]);
        assert_eq!(t.marked_body()[2][..2], ["16k", "a"]);
        assert!(
            t.notes.contains(&"a: 1 of 3 points: too short to trust (under 1 s or under 100 I/Os): bs=16k cache=buffered 10.00 ms; run longer with --time or a larger --size".to_string()),
            "{:?}",
            t.notes
        );
        let spread = t.notes.iter().find(|n| n.starts_with("b: ")).unwrap();
        assert!(
            spread.starts_with(
                "b: 2 of 3 points: repetitions disagree on throughput by more than 10 %"
            ),
            "{spread}"
        );
        assert!(
            spread.contains(": bs=4k cache=buffered 40.0 %, bs=8k cache=buffered 18.2 %;"),
            "{spread}"
        );
        let text = render_text_width(t, None);
        let head: Vec<&str> = text
            .lines()
            .nth(1)
            .unwrap()
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(
            head,
            [
                "block size",
                "notes",
                "buffered throughput",
                "buffered CPU s"
            ],
            "{text}"
        );
        assert!(text.contains(&format!("  {spread}\n")), "{text}");
        let md = render_markdown(t);
        assert!(
            md.contains("| block size | notes | buffered throughput |"),
            "{md}"
        );
        assert!(md.contains("| 16k | a | 100 KiB/s ±724 B/s "), "{md}");
        assert!(md.contains(&format!("- {spread}\n")), "{md}");
        // No finding, no marker column.
        let plain = &shape_all(&recs[0..1], &Shape::default()).unwrap()[0];
        assert!(!plain.has_markers() && plain.marked_header() == plain.header());
    }
}
