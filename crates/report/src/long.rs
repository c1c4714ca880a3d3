//! Flat exports of sweep records: CSV with one row per stored point (every axis its own
//! column, every metric with its unit in the column name), and JSON of the shaped tables.

use super::metrics::METRICS;
use super::table::{format_cell, Shaped};
use crate::sweep::record::Record;

/// One row per record: suite, study, index, repeat, target, status, each axis, each metric.
pub(crate) fn csv(records: &[Record]) -> String {
    let mut axes: Vec<String> = Vec::new();
    for r in records {
        for (n, _) in &r.meta().point {
            if !axes.contains(n) {
                axes.push(n.clone());
            }
        }
    }
    let mut out = super::csv::CsvText::new();
    let fixed = ["suite", "study", "index", "repeat", "target", "status"];
    out.row(
        fixed
            .iter()
            .map(|s| s.to_string())
            .chain(axes.iter().cloned())
            .chain(METRICS.iter().map(|m| m.key.to_string()))
            .chain(["skip_reason".to_string(), "explain".to_string()]),
    );
    for r in records {
        let m = r.meta();
        let status = match r {
            Record::Skipped { .. } => "skipped".to_string(),
            Record::Run { result, .. } => format!("{:?}", result.status).to_lowercase(),
        };
        let mut row = vec![
            m.suite.clone(),
            m.study.clone(),
            m.index.to_string(),
            m.repeat.to_string(),
            m.target.clone().unwrap_or_default(),
            status,
        ];
        row.extend(axes.iter().map(|a| m.value(a).unwrap_or("").to_string()));
        row.extend(METRICS.iter().map(|met| {
            r.result()
                .and_then(|x| (met.get)(x))
                .map(|v| v.to_string())
                .unwrap_or_default()
        }));
        row.push(match r {
            Record::Skipped { reason, .. } => reason.clone(),
            _ => String::new(),
        });
        row.push(
            r.result()
                .map(super::csv::explain_checks)
                .unwrap_or_default(),
        );
        out.row(row);
    }
    out.finish()
}

/// The shaped tables as JSON: title, header and rows of text cells, notes.
pub(crate) fn json(tables: &[Shaped]) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::record::SweepMeta;

    fn skipped(axis_value: &str, reason: &str) -> Record {
        Record::Skipped {
            meta: SweepMeta {
                suite: "s,1".into(),
                study: "st".into(),
                point: vec![("b\"s".into(), axis_value.into())],
                ..Default::default()
            },
            reason: reason.into(),
        }
    }

    #[test]
    fn csv_quotes_names_values_and_reasons() {
        let out = csv(&[skipped("4k,8k", "no \"O_DIRECT\"\nhere")]);
        let (head, body) = out.split_once('\n').unwrap();
        assert!(head.starts_with("suite,study,index,repeat,target,status,\"b\"\"s\","));
        assert!(head.ends_with(",skip_reason,explain"));
        let empties = ",".repeat(METRICS.len());
        assert_eq!(
            body,
            format!("\"s,1\",st,0,0,,skipped,\"4k,8k\"{empties},\"no \"\"O_DIRECT\"\"\nhere\",\n")
        );
    }

    /// A carriage return is quoted (the hand-written quoting before the csv crate left it bare).
    #[test]
    fn csv_quotes_carriage_return() {
        assert!(csv(&[skipped("a\rb", "r")]).contains(",\"a\rb\","));
    }
}
