//! Text for the observation data of a Result: syscall counts and rates with getrusage's
//! context switches and faults (the backup study's `tusc -c` view), the device samples of
//! `--iostat`, the trace written by `--trace`, and the extents of the files a run wrote.

use crate::probe::diskstats::IostatSeries;
use crate::result::RunResult;
use crate::stats::StatsReport;
use std::fmt::Write;

/// `syscalls: read 1024 (512/s) ...` and the getrusage line.
pub(crate) fn syscall_lines(t: &StatsReport) -> String {
    let c = &t.syscalls;
    let per = |n: u64| {
        if t.elapsed_s > 0.0 {
            n as f64 / t.elapsed_s
        } else {
            0.0
        }
    };
    let named = [
        ("read", c.read),
        ("write", c.write),
        ("fsync", c.fsync),
        ("fdatasync", c.fdatasync),
        ("open", c.open),
        ("close", c.close),
        ("fadvise", c.fadvise),
        ("fallocate", c.fallocate),
        ("ftruncate", c.ftruncate),
        ("io_uring_enter", c.io_uring_enter),
        ("msync", c.msync),
        ("other", c.other),
    ];
    let parts: Vec<String> = named
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {n} ({:.0}/s)", per(*n)))
        .collect();
    let u = &t.usage;
    format!(
        "syscalls: {} total ({:.0}/s){}{}\nrusage: {} voluntary + {} involuntary context switches, {} minor + {} major page faults\n",
        c.total(),
        per(c.total()),
        if parts.is_empty() { "" } else { ": " },
        parts.join(", "),
        u.vol_ctx_switches,
        u.invol_ctx_switches,
        u.minor_faults,
        u.major_faults
    )
}

/// The `data` probe: the compressibility and duplication asked beside those measured.
fn data_line(v: &serde_json::Value) -> String {
    let pct = |x: &serde_json::Value| x.as_f64().map(|p| format!("{p:.1} %"));
    let m = &v["measured"];
    let Some(blocks) = m["sampled_blocks"].as_u64() else {
        let why = v["error"].as_str().unwrap_or("no sample");
        return format!("data: not measured ({why})\n");
    };
    let part = |key: &str, what: &str| {
        let got = pct(&m[key]).unwrap_or_else(|| "?".into());
        match v["asked"][key].as_f64() {
            Some(a) => format!("{what} {got} (asked {a:.0} %)"),
            None => format!("{what} {got}"),
        }
    };
    let Some(h) = v["asked"]["verify_header_bytes"].as_u64() else {
        return format!(
            "data: {}, {} in {blocks} blocks of the written files read back\n",
            part("compress_saved_pct", "compression saves"),
            part("dedupe_pct", "duplicate blocks")
        );
    };
    // --verify: the header leads every block, the shape fills the rest.
    let compress = match v["asked"]["deliverable_compress_saved_pct"].as_f64() {
        Some(d) => format!(
            "compression saves {} (asked {:.0} %, at most {d:.1} % beside the header)",
            pct(&m["compress_saved_pct"]).unwrap_or_else(|| "?".into()),
            v["asked"]["compress_saved_pct"].as_f64().unwrap_or(0.0)
        ),
        None => part("compress_saved_pct", "compression saves"),
    };
    let dedupe = match v["asked"]["dedupe_pct"].as_f64() {
        Some(a) => format!(
            "duplicates after the header {} (asked {a:.0} %; whole blocks {})",
            pct(&m["dedupe_after_header_pct"]).unwrap_or_else(|| "?".into()),
            pct(&m["dedupe_pct"]).unwrap_or_else(|| "?".into())
        ),
        None => part("dedupe_pct", "duplicate blocks"),
    };
    format!(
        "data: {compress}, {dedupe} in {blocks} blocks of the written files read back; each block starts with its {h}-byte verify header, the shape fills the rest\n"
    )
}

/// Everything from the Result's probes that has a text form.
pub(crate) fn probe_sections(r: &RunResult) -> String {
    let mut out = String::new();
    if let Some(v) = r.probes.get("iostat") {
        if let Ok(series) = serde_json::from_value::<IostatSeries>(v.clone()) {
            let devs = if series.devices.is_empty() {
                "all devices with I/O".to_string()
            } else {
                series.devices.join(" -> ")
            };
            let _ = writeln!(
                out,
                "iostat every {:.3} s ({devs}); t_s from the start of the timed run:",
                series.interval_s
            );
            if let Some(n) = v.get("note").and_then(|n| n.as_str()) {
                let _ = writeln!(out, "note: {n}");
            }
            out.push_str(&super::iostat::table(&series));
        }
    }
    if let Some(v) = r.probes.get("trace") {
        let _ = writeln!(
            out,
            "trace: {} records written to {}{}",
            v.get("records").and_then(|x| x.as_u64()).unwrap_or(0),
            v.get("file").and_then(|x| x.as_str()).unwrap_or("?"),
            match v.get("dropped_records").and_then(|x| x.as_u64()) {
                Some(d) if d > 0 =>
                    format!(" ({d} older records overwritten: raise --trace-records)"),
                _ => String::new(),
            }
        );
    }
    if let Some(v) = r.probes.get("data") {
        out.push_str(&data_line(v));
    }
    if let Some(files) = r
        .probes
        .get("extents")
        .and_then(|v| v.get("files"))
        .and_then(|f| f.as_array())
    {
        for f in files {
            let path = f.get("path").and_then(|x| x.as_str()).unwrap_or("?");
            match f.get("extents").and_then(|x| x.as_u64()) {
                Some(n) => {
                    let _ = writeln!(out, "extents: {path}: {n}");
                }
                None => {
                    let _ = writeln!(
                        out,
                        "extents: {path}: unknown ({})",
                        f.get("error").and_then(|x| x.as_str()).unwrap_or("")
                    );
                }
            }
        }
    }
    out
}
