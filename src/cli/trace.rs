//! `fsbench trace -- CMD ARGS...`: capture a program's file I/O with strace into an fsbench
//! trace; `fsbench trace --analyze FILE [--stripe 64k:5]`: explain a trace's I/O pattern.

use crate::trace::{analyze, format, strace};
use crate::{bail_usage, usage};
use anyhow::Context;
use clap::Args;
use std::fmt::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct TraceArgs {
    /// Analyse this trace (.csv or .bin) instead of capturing
    #[arg(long, value_name = "FILE")]
    pub analyze: Option<PathBuf>,
    /// With --analyze: what a stripe of UNIT x COLUMNS does to each I/O, e.g. 64k:5
    #[arg(long, value_name = "UNIT:COLUMNS")]
    pub stripe: Option<String>,
    /// With --analyze --stripe: use device offsets of the traced files that still exist
    /// (FIEMAP), as a volume under the file system would see them
    #[arg(long)]
    pub physical: bool,
    /// With --analyze: size of the hot-region slices (default 1m)
    #[arg(long, value_name = "SIZE")]
    pub region: Option<String>,
    /// With --analyze: also list the first N reads/writes vxtrace-style (with --stripe, the
    /// device I/Os each becomes)
    #[arg(long, value_name = "N")]
    pub list: Option<usize>,
    /// With --analyze: JSON instead of text
    #[arg(long)]
    pub json: bool,
    /// Where the captured trace goes (.csv or .bin)
    #[arg(short = 'o', long, default_value = "trace.csv")]
    pub output: PathBuf,
    /// Trace format: csv or bin (default: from the extension)
    #[arg(long)]
    pub format: Option<String>,
    /// Keep I/O to system files too (/usr/lib, /proc, /dev, the loader cache, locales)
    #[arg(long = "all-files")]
    pub all_files: bool,
    /// Keep strace's own log here as well
    #[arg(long = "strace-log", value_name = "FILE")]
    pub strace_log: Option<PathBuf>,
    /// Attach to a running process instead of starting one (like `tusc -p PID`); its children
    /// started after attaching are followed
    #[arg(short = 'p', long, value_name = "PID")]
    pub pid: Option<u32>,
    /// With --pid: stop after this long (10s, 2m); default: until Ctrl-C or the process ends
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,
    /// The program to trace and its arguments, after `--`
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

fn find_in_path(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

pub fn main(a: TraceArgs) -> anyhow::Result<i32> {
    match &a.analyze {
        Some(file) => {
            if !a.command.is_empty() {
                bail_usage!("trace: give either --analyze FILE or -- CMD, not both");
            }
            analyze_main(&a, file)
        }
        None => capture_main(&a),
    }
}

fn analyze_main(a: &TraceArgs, file: &Path) -> anyhow::Result<i32> {
    let stripe = a
        .stripe
        .as_deref()
        .map(analyze::Stripe::parse)
        .transpose()?;
    let region = match &a.region {
        Some(r) => crate::units::parse_size(r)?,
        None => 1 << 20,
    };
    if region == 0 {
        bail_usage!("--region 0: give a size such as 1m");
    }
    if a.physical && stripe.is_none() {
        bail_usage!("--physical goes with --stripe UNIT:COLUMNS");
    }
    let t = format::read_file(file)?;
    let layout = a.physical.then(|| analyze::layout_of(&t));
    let an = analyze::analyze_on(&t, region, stripe, layout.as_ref());
    if a.json {
        println!("{}", serde_json::to_string_pretty(&an)?);
    } else {
        println!("trace {}", file.display());
        print!("{}", analyze::format_text(&an));
        if let Some(n) = a.list {
            println!();
            print!(
                "{}",
                analyze::format_listing(&t, n, stripe, layout.as_ref())
            );
        }
    }
    Ok(0)
}

fn capture_main(a: &TraceArgs) -> anyhow::Result<i32> {
    if a.command.is_empty() && a.pid.is_none() {
        bail_usage!(
            "trace: nothing to do: give -- CMD ARGS... or --pid PID to capture, or --analyze FILE"
        );
    }
    if a.pid.is_some() && !a.command.is_empty() {
        bail_usage!("trace: give either --pid PID or -- CMD, not both");
    }
    if a.duration.is_some() && a.pid.is_none() {
        bail_usage!("trace: --duration goes with --pid (a started command is traced to its end)");
    }
    if a.stripe.is_some() || a.region.is_some() || a.json || a.list.is_some() || a.physical {
        bail_usage!(
            "trace: --stripe, --physical, --region, --list and --json go with --analyze FILE"
        );
    }
    let fmt = match &a.format {
        Some(f) => format::TraceFormat::parse(f)?,
        None => format::TraceFormat::from_path(&a.output),
    };
    if let Some(prog) = a.command.first() {
        let found = if prog.contains('/') {
            Path::new(prog).is_file()
        } else {
            find_in_path(prog).is_some()
        };
        if !found {
            bail_usage!(
                "trace: command '{prog}' not found (give a program on PATH or a path to one)"
            );
        }
    }
    let duration = a
        .duration
        .as_deref()
        .map(crate::units::parse_duration)
        .transpose()?;
    let mut seeded = strace::Converter::new(a.all_files);
    if let Some(pid) = a.pid {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            bail_usage!("trace: no process with pid {pid}");
        }
        // Descriptors the process opened before we attach: start them where they are.
        for (fd, path, pos) in strace::open_positions(pid) {
            seeded.seed_position(fd, &path, pos);
        }
    }
    format::check_writable(&a.output)?;
    let Some(strace_bin) = find_in_path("strace") else {
        bail_usage!("trace: strace is not installed (it captures the program's system calls): install it, e.g. apt-get install strace");
    };
    let log =
        TempLog(std::env::temp_dir().join(format!("fsbench-strace-{}.log", std::process::id())));
    let log = &log.0;
    let mut cmd = std::process::Command::new(&strace_bin);
    cmd.args(["-f", "-ttt", "-T", "-y", "-qq", "-s", "0", "-e"])
        .arg(format!("trace={}", strace::TRACED_SYSCALLS))
        .arg("-o")
        .arg(log);
    match a.pid {
        Some(pid) => cmd.arg("-p").arg(pid.to_string()),
        None => cmd.arg("--").args(&a.command),
    };
    let mut child = cmd
        .spawn()
        .map_err(|e| usage!("trace: cannot start strace: {e}"))?;
    let status = if a.pid.is_some() {
        wait_attached(&mut child, duration)?
    } else {
        child.wait()?
    };
    let text = std::fs::read_to_string(log).map_err(|e| {
        anyhow::anyhow!(
            "strace wrote no log ({e}); is ptrace allowed here (containers may forbid it)?"
        )
    })?;
    if let Some(keep) = &a.strace_log {
        crate::cli::output::write_file(keep, text.as_bytes(), false)
            .with_context(|| format!("copying strace's log to {}", keep.display()))?;
    }
    let conv = strace::parse_log_with(&text, seeded);
    crate::cli::output::write_with(&a.output, false, |w| match fmt {
        format::TraceFormat::Csv => format::to_csv(&conv.trace, w),
        format::TraceFormat::Bin => format::to_bin(&conv.trace, w),
    })?;
    eprint!("{}", summary(&conv, &a.output));
    if !status.success() {
        eprintln!("fsbench: the traced command exited with {status}; its trace was still written");
        return Ok(1);
    }
    Ok(0)
}

/// Wait for an attached strace until the duration is over, Ctrl-C, or the process ends;
/// then detach it (SIGINT makes strace detach and finish its log).
fn wait_attached(
    child: &mut std::process::Child,
    duration: Option<std::time::Duration>,
) -> anyhow::Result<std::process::ExitStatus> {
    crate::runner::signal::install();
    let start = std::time::Instant::now();
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(st);
        }
        if crate::runner::signal::interrupted() || duration.is_some_and(|d| start.elapsed() >= d) {
            // SAFETY: signalling the strace process this function started and still owns.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            child.wait()?;
            // Detaching on request is a success: the trace covers the time asked for.
            return Ok(std::process::ExitStatus::default());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// strace's log file, removed when done.
struct TempLog(PathBuf);

impl Drop for TempLog {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `tusc -c`-style call counts, then what went into the trace.
fn summary(conv: &strace::Converter, out: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<12} {:>10} {:>10} {:>8}",
        "syscall", "seconds", "calls", "errors"
    );
    let (mut calls, mut secs) = (0u64, 0f64);
    for (name, (n, err, sec)) in &conv.counts {
        let _ = writeln!(s, "{name:<12} {sec:>10.6} {n:>10} {err:>8}");
        calls += n;
        secs += sec;
    }
    let _ = writeln!(s, "{:<12} {secs:>10.6} {calls:>10}", "total");
    let t = &conv.trace;
    let data = t.records.iter().filter(|r| r.op.is_data()).count();
    let _ = writeln!(
        s,
        "trace: {} records ({} reads/writes) on {} file(s) -> {}{}",
        t.records.len(),
        data,
        t.files.len(),
        out.display(),
        if conv.skipped_lines > 0 {
            format!(" ({} strace lines not understood)", conv.skipped_lines)
        } else {
            String::new()
        }
    );
    s
}
