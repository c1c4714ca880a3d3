//! CSV: one row per scope (total, each user, each thread with per-thread output, each named
//! group with the group's name as `target`), units in the column names. Job columns are empty
//! for a Result without a Job (replay, backup, workload).

use super::ReportOptions;
use crate::result::RunResult;
use crate::stats::StatsReport;

pub(crate) const HEADER: &str = "name,status,scope,user,thread,target,access,block_size_bytes,cache,engine,queue_depth,threads_per_user,users,ops,bytes,elapsed_s,bytes_per_sec,iops,cpu_user_s,cpu_sys_s,cpu_s,cpu_us_per_op,lat_min_ns,lat_mean_ns,lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p99_9_ns,lat_max_ns,buffered_fallback_ops,errors,lat_p99_99_ns,lat_stdev_ns,read_ops,read_bytes,read_bytes_per_sec,read_iops,read_lat_mean_ns,read_lat_p50_ns,read_lat_p99_ns,read_lat_p99_9_ns,read_lat_max_ns,write_ops,write_bytes,write_bytes_per_sec,write_iops,write_lat_mean_ns,write_lat_p50_ns,write_lat_p99_ns,write_lat_p99_9_ns,write_lat_max_ns,sched_lat_mean_ns,sched_lat_p50_ns,sched_lat_p99_ns,sched_lat_p99_9_ns,sched_lat_max_ns,read_sched_lat_mean_ns,read_sched_lat_p50_ns,read_sched_lat_p99_ns,read_sched_lat_p99_9_ns,read_sched_lat_max_ns,write_sched_lat_mean_ns,write_sched_lat_p50_ns,write_sched_lat_p99_ns,write_sched_lat_p99_9_ns,write_sched_lat_max_ns,explain";

/// CSV text built row by row through the `csv` crate: a field is quoted only when it holds a
/// comma, a double quote, a CR or a LF (inner quotes doubled); rows end in `\n`. The report
/// CSVs (runs, workloads, sweep records) all write through it.
pub(crate) struct CsvText(::csv::Writer<Vec<u8>>);

impl CsvText {
    pub(crate) fn new() -> Self {
        // Flexible: the row width is the caller's concern (its header names the columns),
        // which leaves the in-memory writer nothing that can fail.
        CsvText(
            ::csv::WriterBuilder::new()
                .flexible(true)
                .from_writer(Vec::new()),
        )
    }

    /// One row of fields.
    pub(crate) fn row<I, T>(&mut self, fields: I)
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        self.0
            .write_record(fields)
            .expect("a flexible CSV writer into memory cannot fail");
    }

    pub(crate) fn finish(self) -> String {
        let bytes = self
            .0
            .into_inner()
            .expect("flushing CSV into memory cannot fail");
        // Every field came from a &str: the quoting only adds ASCII.
        String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
    }
}

fn row(
    r: &RunResult,
    scope: &str,
    user: &str,
    thread: &str,
    target: &str,
    s: &StatsReport,
) -> Vec<String> {
    let j = r.job.as_ref();
    let l = &s.lat_ns;
    let job = |f: &dyn Fn(&crate::job::Job) -> String| j.map(f).unwrap_or_default();
    let mut fields = vec![
        r.name.clone(),
        r.status.name().to_string(),
        scope.to_string(),
        user.to_string(),
        thread.to_string(),
        target.to_string(),
        job(&|j| j.access.name().to_string()),
        job(&|j| j.block_size.to_string()).to_string(),
        r.cache_name().unwrap_or_default(),
        job(&|j| j.engine.name().to_string()),
        job(&|j| j.queue_depth.to_string()).to_string(),
        job(&|j| j.threads.to_string()).to_string(),
        job(&|j| j.targets.len().to_string()),
        s.ops.to_string(),
        s.bytes.to_string(),
        format!("{:.6}", s.elapsed_s),
        format!("{:.1}", s.bytes_per_sec),
        format!("{:.1}", s.iops),
        format!("{:.6}", s.cpu_user_s),
        format!("{:.6}", s.cpu_sys_s),
        format!("{:.6}", s.cpu_s),
        format!("{:.3}", s.cpu_us_per_op),
        l.min.to_string(),
        format!("{:.0}", l.mean),
        l.p50.to_string(),
        l.p90.to_string(),
        l.p99.to_string(),
        l.p99_9.to_string(),
        l.max.to_string(),
        s.buffered_fallback_ops.to_string(),
        s.errors.to_string(),
        l.p99_99.to_string(),
        format!("{:.0}", l.stdev),
    ];
    for d in [&s.read, &s.write] {
        fields.extend([
            d.ops.to_string(),
            d.bytes.to_string(),
            format!("{:.1}", d.bytes_per_sec),
            format!("{:.1}", d.iops),
            format!("{:.0}", d.lat_ns.mean),
            d.lat_ns.p50.to_string(),
            d.lat_ns.p99.to_string(),
            d.lat_ns.p99_9.to_string(),
            d.lat_ns.max.to_string(),
        ]);
    }
    // Latency from the intended issue time (the service latency's figures without a rate
    // limit), total and per direction.
    for l in [&s.sched_lat_ns, &s.read.sched_lat_ns, &s.write.sched_lat_ns] {
        fields.extend([
            format!("{:.0}", l.mean),
            l.p50.to_string(),
            l.p99.to_string(),
            l.p99_9.to_string(),
            l.max.to_string(),
        ]);
    }
    // What `explain` found on the Result (`page_cache;too_short`), on every row of it.
    fields.push(explain_checks(r));
    fields
}

/// The checks of a Result's `explain` findings, `;` apart (the messages are in the JSON).
pub(crate) fn explain_checks(r: &RunResult) -> String {
    r.explain
        .iter()
        .map(|e| e.check.as_str())
        .collect::<Vec<_>>()
        .join(";")
}

/// The results as CSV rows.
pub(crate) fn render(results: &[RunResult], opts: &ReportOptions) -> String {
    let mut out = CsvText::new();
    out.row(HEADER.split(','));
    for r in results {
        out.row(row(r, "total", "", "", "", &r.total));
        if opts.summary_only {
            continue;
        }
        for u in &r.users {
            let user = (u.user + 1).to_string();
            out.row(row(r, "user", &user, "", &u.target, &u.stats));
            if opts.per_thread {
                for t in &u.threads {
                    let thread = (t.thread + 1).to_string();
                    out.row(row(r, "thread", &user, &thread, &u.target, &t.stats));
                }
            }
        }
        for g in &r.groups {
            out.row(row(r, "group", "", "", &g.name, &g.stats));
        }
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{GroupReport, Kind, ThreadReport, UserReport};

    /// A Result whose names hold every character CSV must quote.
    fn awkward(target: &str) -> RunResult {
        let mut r = RunResult::new(Kind::Io, "a,b\"c", 0.0, Default::default());
        let s = StatsReport {
            ops: 7,
            bytes: 4096,
            elapsed_s: 0.5,
            ..Default::default()
        };
        r.total = s.clone();
        r.users = vec![UserReport {
            user: 0,
            target: target.into(),
            stats: s.clone(),
            threads: vec![ThreadReport {
                thread: 0,
                stats: s.clone(),
                timeseries: Vec::new(),
            }],
        }];
        r.groups = vec![GroupReport {
            name: "g\"1\"".into(),
            op: "read".into(),
            run: None,
            stats: s,
        }];
        r
    }

    #[test]
    fn rows_quote_commas_quotes_and_newlines() {
        let opts = ReportOptions {
            per_thread: true,
            ..Default::default()
        };
        let out = render(&[awkward("t\nx")], &opts);
        let rows: Vec<&str> = out.split_inclusive('\n').collect();
        assert_eq!(rows[0], format!("{HEADER}\n"));
        assert_eq!(
            rows[1],
            "\"a,b\"\"c\",complete,total,,,,,,,,,,,7,4096,0.500000,0.0,0.0,0.000000,0.000000,0.000000,0.000,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n"
        );
        assert_eq!(
            out[rows[0].len() + rows[1].len()..],
            *"\"a,b\"\"c\",complete,user,1,,\"t\nx\",,,,,,,,7,4096,0.500000,0.0,0.0,0.000000,0.000000,0.000000,0.000,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n\
              \"a,b\"\"c\",complete,thread,1,1,\"t\nx\",,,,,,,,7,4096,0.500000,0.0,0.0,0.000000,0.000000,0.000000,0.000,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n\
              \"a,b\"\"c\",complete,group,,,\"g\"\"1\"\"\",,,,,,,,7,4096,0.500000,0.0,0.0,0.000000,0.000000,0.000000,0.000,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n"
        );
    }

    #[test]
    fn the_explain_checks_are_the_last_column() {
        let mut r = awkward("t");
        for check in ["page_cache", "too_short"] {
            r.explain.push(crate::explain::Explanation {
                check: check.into(),
                message: String::new(),
                evidence: serde_json::Value::Null,
            });
        }
        let out = render(&[r], &ReportOptions::default());
        assert!(HEADER.ends_with(",explain"));
        assert!(
            out.lines()
                .nth(1)
                .unwrap()
                .ends_with(",page_cache;too_short"),
            "{out}"
        );
    }

    /// A carriage return ends a record for CSV readers, so a field holding one is quoted
    /// (the hand-written quoting before the csv crate left it bare).
    #[test]
    fn carriage_return_is_quoted() {
        let out = render(&[awkward("t\rx")], &ReportOptions::default());
        assert!(out.contains(",user,1,,\"t\rx\","), "{out:?}");
    }
}
