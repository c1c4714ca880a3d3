//! Flat exports of sweep records: CSV with one row per stored point (every axis its own
//! column, every metric with its unit in the column name), and JSON of the shaped tables.

use super::metrics::METRICS;
use super::table::{format_cell, Shaped};
use crate::sweep::record::Record;

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One row per record: suite, study, index, repeat, target, status, each axis, each metric.
pub fn csv(records: &[Record]) -> String {
    let mut axes: Vec<String> = Vec::new();
    for r in records {
        for (n, _) in &r.meta().point {
            if !axes.contains(n) {
                axes.push(n.clone());
            }
        }
    }
    let mut out = String::from("suite,study,index,repeat,target,status");
    for a in &axes {
        out += &format!(",{}", field(a));
    }
    for m in METRICS {
        out += &format!(",{}", m.key);
    }
    out += ",skip_reason\n";
    for r in records {
        let m = r.meta();
        let status = match r {
            Record::Skipped { .. } => "skipped".to_string(),
            Record::Run { result, .. } => format!("{:?}", result.status).to_lowercase(),
        };
        out += &format!(
            "{},{},{},{},{},{}",
            field(&m.suite),
            field(&m.study),
            m.index,
            m.repeat,
            field(m.target.as_deref().unwrap_or("")),
            status
        );
        for a in &axes {
            out += &format!(",{}", field(m.value(a).unwrap_or("")));
        }
        for met in METRICS {
            let v = r.result().and_then(|x| (met.get)(x));
            out += &match v {
                Some(v) => format!(",{v}"),
                None => ",".into(),
            };
        }
        let reason = match r {
            Record::Skipped { reason, .. } => field(reason),
            _ => String::new(),
        };
        out += &format!(",{reason}\n");
    }
    out
}

/// The shaped tables as JSON: title, header and rows of text cells, notes.
pub fn json(tables: &[Shaped]) -> String {
    let v: Vec<serde_json::Value> = tables
        .iter()
        .map(|t| {
            let rows: Vec<Vec<String>> = t
                .row_keys
                .iter()
                .enumerate()
                .map(|(ri, rk)| {
                    let mut row = rk.clone();
                    for (mi, m) in t.metrics.iter().enumerate() {
                        for ci in 0..t.col_keys.len() {
                            row.push(format_cell(&t.cells[ri][ci], mi, m));
                        }
                    }
                    row
                })
                .collect();
            serde_json::json!({
                "suite": t.suite,
                "study": t.study,
                "title": t.title,
                "rows_axes": t.row_axes,
                "cols_axes": t.col_axes,
                "metrics": t.metrics.iter().map(|m| m.key).collect::<Vec<_>>(),
                "header": t.header(),
                "rows": rows,
                "notes": t.notes,
            })
        })
        .collect();
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}
