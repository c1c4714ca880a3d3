//! CSV: one row per scope (total, each user, each thread with per-thread output, each named
//! group with the group's name as `target`), units in the column names. Job columns are empty
//! for a Result without a Job (replay, backup, workload).

use super::ReportOptions;
use crate::result::RunResult;
use crate::stats::StatsReport;

pub const HEADER: &str = "name,status,scope,user,thread,target,access,block_size_bytes,cache,engine,queue_depth,threads_per_user,users,ops,bytes,elapsed_s,bytes_per_sec,iops,cpu_user_s,cpu_sys_s,cpu_s,cpu_us_per_op,lat_min_ns,lat_mean_ns,lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p99_9_ns,lat_max_ns,buffered_fallback_ops,errors";

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn row(
    r: &RunResult,
    scope: &str,
    user: &str,
    thread: &str,
    target: &str,
    s: &StatsReport,
) -> String {
    let j = r.job.as_ref();
    let l = &s.lat_ns;
    let job = |f: &dyn Fn(&crate::job::Job) -> String| j.map(f).unwrap_or_default();
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6},{:.1},{:.1},{:.6},{:.6},{:.6},{:.3},{},{:.0},{},{},{},{},{},{},{}",
        field(&r.name),
        r.status.name(),
        scope,
        user,
        thread,
        field(target),
        job(&|j| j.access.name().to_string()),
        job(&|j| j.block_size.to_string()),
        field(&r.cache_name().unwrap_or_default()),
        job(&|j| j.engine.name().to_string()),
        job(&|j| j.queue_depth.to_string()),
        job(&|j| j.threads.to_string()),
        job(&|j| j.targets.len().to_string()),
        s.ops,
        s.bytes,
        s.elapsed_s,
        s.bytes_per_sec,
        s.iops,
        s.cpu_user_s,
        s.cpu_sys_s,
        s.cpu_s,
        s.cpu_us_per_op,
        l.min,
        l.mean,
        l.p50,
        l.p90,
        l.p99,
        l.p99_9,
        l.max,
        s.buffered_fallback_ops,
        s.errors
    )
}

/// The results as CSV rows.
pub fn render(results: &[RunResult], opts: &ReportOptions) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for r in results {
        out += &row(r, "total", "", "", "", &r.total);
        out.push('\n');
        if opts.summary_only {
            continue;
        }
        for u in &r.users {
            out += &row(
                r,
                "user",
                &(u.user + 1).to_string(),
                "",
                &u.target,
                &u.stats,
            );
            out.push('\n');
            if opts.per_thread {
                for t in &u.threads {
                    out += &row(
                        r,
                        "thread",
                        &(u.user + 1).to_string(),
                        &(t.thread + 1).to_string(),
                        &u.target,
                        &t.stats,
                    );
                    out.push('\n');
                }
            }
            for g in &r.groups {
                out += &row(r, "group", "", "", &g.name, &g.stats);
                out.push('\n');
            }
        }
    }
    out
}
