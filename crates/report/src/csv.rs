//! CSV: one row per scope (total, each user, each thread with per-thread output, each named
//! group with the group's name as `target`), units in the column names. Job columns are empty
//! for a Result without a Job (replay, backup, workload). Reads, writes and trims each have
//! columns of their own. A run of several I/O sizes (`--bssplit`, `--bsrange`, a
//! per-direction `--bs`) names them in `io_sizes` (its other rows leave `block_size_bytes`
//! empty) and has a `size` row per size after its total, `block_size_bytes` that size (the
//! columns a size class does not keep are empty).

use super::ReportOptions;
use crate::result::RunResult;
use crate::stats::{SizeReport, StatsReport};

pub(crate) const HEADER: &str = "name,status,scope,user,thread,target,access,block_size_bytes,cache,engine,queue_depth,threads_per_user,users,ops,bytes,elapsed_s,bytes_per_sec,iops,cpu_user_s,cpu_sys_s,cpu_s,cpu_us_per_op,lat_min_ns,lat_mean_ns,lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p99_9_ns,lat_max_ns,buffered_fallback_ops,errors,lat_p99_99_ns,lat_stdev_ns,read_ops,read_bytes,read_bytes_per_sec,read_iops,read_lat_mean_ns,read_lat_p50_ns,read_lat_p99_ns,read_lat_p99_9_ns,read_lat_max_ns,write_ops,write_bytes,write_bytes_per_sec,write_iops,write_lat_mean_ns,write_lat_p50_ns,write_lat_p99_ns,write_lat_p99_9_ns,write_lat_max_ns,sched_lat_mean_ns,sched_lat_p50_ns,sched_lat_p99_ns,sched_lat_p99_9_ns,sched_lat_max_ns,read_sched_lat_mean_ns,read_sched_lat_p50_ns,read_sched_lat_p99_ns,read_sched_lat_p99_9_ns,read_sched_lat_max_ns,write_sched_lat_mean_ns,write_sched_lat_p50_ns,write_sched_lat_p99_ns,write_sched_lat_p99_9_ns,write_sched_lat_max_ns,trim_ops,trim_bytes,trim_bytes_per_sec,trim_iops,trim_lat_mean_ns,trim_lat_p50_ns,trim_lat_p99_ns,trim_lat_p99_9_ns,trim_lat_max_ns,io_sizes,explain";

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
        // A run of several sizes names them in `io_sizes` instead.
        job(&|j| {
            if j.mixed_sizes() {
                String::new()
            } else {
                j.block_size.to_string()
            }
        }),
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
    let t = &s.trim;
    fields.extend([
        t.ops.to_string(),
        t.bytes.to_string(),
        format!("{:.1}", t.bytes_per_sec),
        format!("{:.1}", t.iops),
        format!("{:.0}", t.lat_ns.mean),
        t.lat_ns.p50.to_string(),
        t.lat_ns.p99.to_string(),
        t.lat_ns.p99_9.to_string(),
        t.lat_ns.max.to_string(),
    ]);
    fields.push(job(&|j| {
        if j.mixed_sizes() {
            j.size_spec()
        } else {
            String::new()
        }
    }));
    // What `explain` found on the Result (`page_cache;too_short`), on every row of it.
    fields.push(explain_checks(r));
    fields
}

/// The row of one I/O size of a run of several: its size, operations by direction, bytes,
/// rate and latency; the columns a size class does not keep are empty.
fn size_row(r: &RunResult, c: &SizeReport, elapsed_s: f64) -> Vec<String> {
    let head: Vec<&str> = HEADER.split(',').collect();
    let mut fields = vec![String::new(); head.len()];
    let l = &c.lat_ns;
    let job = |f: &dyn Fn(&crate::job::Job) -> String| r.job.as_ref().map(f).unwrap_or_default();
    for (col, v) in [
        ("name", r.name.clone()),
        ("status", r.status.name().to_string()),
        ("scope", "size".to_string()),
        ("access", job(&|j| j.access.name().to_string())),
        ("block_size_bytes", c.block_size_bytes.to_string()),
        ("ops", c.ops.to_string()),
        ("bytes", c.bytes.to_string()),
        ("elapsed_s", format!("{elapsed_s:.6}")),
        ("bytes_per_sec", format!("{:.1}", c.bytes_per_sec)),
        ("iops", format!("{:.1}", c.iops)),
        ("lat_min_ns", l.min.to_string()),
        ("lat_mean_ns", format!("{:.0}", l.mean)),
        ("lat_p50_ns", l.p50.to_string()),
        ("lat_p90_ns", l.p90.to_string()),
        ("lat_p99_ns", l.p99.to_string()),
        ("lat_p99_9_ns", l.p99_9.to_string()),
        ("lat_max_ns", l.max.to_string()),
        ("lat_p99_99_ns", l.p99_99.to_string()),
        ("lat_stdev_ns", format!("{:.0}", l.stdev)),
        ("read_ops", c.read_ops.to_string()),
        ("write_ops", c.write_ops.to_string()),
        ("trim_ops", c.trim_ops.to_string()),
        ("io_sizes", job(&|j| j.size_spec())),
    ] {
        let at = head.iter().position(|h| *h == col).expect("a CSV column");
        fields[at] = v;
    }
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
        for c in &r.total.by_size {
            out.row(size_row(r, c, r.total.elapsed_s));
        }
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
            "\"a,b\"\"c\",complete,total,,,,,,,,,,,7,4096,0.500000,0.0,0.0,0.000000,0.000000,0.000000,0.000,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,,\n"
        );
        assert_eq!(
            out[rows[0].len() + rows[1].len()..],
            *"\"a,b\"\"c\",complete,user,1,,\"t\nx\",,,,,,,,7,4096,0.500000,0.0,0.0,0.000000,0.000000,0.000000,0.000,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,,\n\
              \"a,b\"\"c\",complete,thread,1,1,\"t\nx\",,,,,,,,7,4096,0.500000,0.0,0.0,0.000000,0.000000,0.000000,0.000,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,,\n\
              \"a,b\"\"c\",complete,group,,,\"g\"\"1\"\"\",,,,,,,,7,4096,0.500000,0.0,0.0,0.000000,0.000000,0.000000,0.000,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0.0,0.0,0,0,0,0,0,,\n"
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

    /// Trims have their columns; a run of several sizes names them and has a row per size.
    #[test]
    fn trims_and_sizes_have_columns_and_rows() {
        use crate::stats::{DirReport, SizeReport};
        let mut r = awkward("t");
        let mut j = crate::job::Job::default();
        get_bsrange(&mut j);
        r.job = Some(j);
        r.total.trim = DirReport {
            ops: 3,
            bytes: 12288,
            ..Default::default()
        };
        r.total.by_size = [4096u64, 8192]
            .iter()
            .map(|&b| SizeReport {
                block_size_bytes: b,
                ops: 2,
                read_ops: 1,
                trim_ops: 1,
                bytes: 2 * b,
                ..Default::default()
            })
            .collect();
        let out = render(&[r], &ReportOptions::default());
        let head: Vec<&str> = HEADER.split(',').collect();
        let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
        let rows: Vec<Vec<String>> = ::csv::Reader::from_reader(out.as_bytes())
            .records()
            .map(|rec| rec.unwrap().iter().map(String::from).collect())
            .collect();
        assert!(rows.iter().all(|f| f.len() == head.len()));
        let total = rows.iter().find(|f| f[col("scope")] == "total").unwrap();
        assert_eq!(total[col("trim_ops")], "3");
        assert_eq!(total[col("block_size_bytes")], "", "not one block size");
        assert_eq!(total[col("trim_bytes")], "12288");
        let sizes: Vec<&Vec<String>> = rows.iter().filter(|f| f[col("scope")] == "size").collect();
        assert_eq!(sizes.len(), 2);
        assert_eq!(sizes[1][col("block_size_bytes")], "8192");
        assert_eq!(sizes[1][col("bytes")], "16384");
        assert_eq!(sizes[1][col("trim_ops")], "1");
        assert_eq!(
            sizes[1][col("read_bytes")],
            "",
            "a size class keeps no read bytes"
        );
        assert_eq!(sizes[0][col("io_sizes")], "4096-16384");
    }

    fn get_bsrange(j: &mut crate::job::Job) {
        j.bsrange = Some(crate::job::BsRange::parse("4k-16k", "x").unwrap());
    }

    /// A carriage return ends a record for CSV readers, so a field holding one is quoted
    /// (the hand-written quoting before the csv crate left it bare).
    #[test]
    fn carriage_return_is_quoted() {
        let out = render(&[awkward("t\rx")], &ReportOptions::default());
        assert!(out.contains(",user,1,,\"t\rx\","), "{out:?}");
    }
}
