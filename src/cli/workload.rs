//! `fsbench workload`: run a Filebench personality (shipped, embedded) or a `.f` file.
//!
//! ```text
//! fsbench workload list
//! fsbench workload show fileserver
//! fsbench workload fileserver --dir /data -D nfiles=1000 -D nthreads=8 --time 30s
//! fsbench workload my-app.f --output res.json
//! fsbench workload webserver --trace web.csv --iostat 1s --rate-iops 500 --rate-scope total
//! ```
//!
//! The observation flags (`--iostat`, `--trace`) and the rate limit flags are `run`'s, with
//! the same parsing and meaning; `crate::observe::Observer` runs beside the workload.

use super::args::{HOW, SAFETY, WHAT, WHERE};
use crate::report::{Format, Runs};
use crate::workload::personalities::{defaults, find, PERSONALITIES, VARIANTS};
use crate::workload::run::Options;
use crate::workload::Source;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::format_help::<Runs>(a)),
    after_help = EXAMPLES
)]
pub(crate) struct WorkloadArgs {
    /// `list`, `show NAME`, a personality or variant name (see `list`), or a WML .f file
    pub workload: String,
    /// With `show`: the personality to print
    pub extra: Option<String>,
    /// Directory the filesets are created in (sets $dir)
    ///
    /// The default: the current directory for shipped personalities, the file's own $dir for
    /// a .f file.
    #[arg(long, value_name = "DIR", help_heading = WHAT)]
    pub dir: Option<PathBuf>,
    /// Override a variable: -D nfiles=1000 (repeatable; wins over the file's `set`)
    ///
    /// A variable the workload never names (`$VAR`) changes nothing: a warning, or with
    /// --strict a refusal.
    #[arg(short = 'D', value_name = "VAR=VALUE", help_heading = WHAT)]
    pub define: Vec<String>,
    /// Refuse a -D for a variable the workload never names, instead of warning
    #[arg(long, help_heading = WHAT)]
    pub strict: bool,
    /// Duration of every run (overrides `run N`), e.g. 30s
    #[arg(long, value_name = "DUR", help_heading = WHAT)]
    pub time: Option<String>,
    /// Warm-up: every run first runs this long unmeasured, left out of the Result (10s)
    #[arg(long, value_name = "DUR", help_heading = WHAT)]
    pub ramp: Option<String>,
    /// Warm up until each thread has moved SIZE bytes, left out of the result
    #[arg(long = "ramp-bytes", value_name = "SIZE", help_heading = WHAT)]
    pub ramp_bytes: Option<String>,
    /// Run process instances as threads of one process instead of real processes
    #[arg(long, help_heading = HOW)]
    pub in_process: bool,
    /// Declare the run stuck when every thread has waited in semblock/block this long
    #[arg(long, default_value = "3s", value_name = "DUR", help_heading = HOW)]
    pub stall_after: String,
    /// sync, uring: the engine every flowop's system calls go through [default: sync]
    #[arg(long, value_name = "ENGINE", help_heading = HOW)]
    pub engine: Option<String>,
    #[command(flatten)]
    pub rate: super::args::RateArgs,
    /// Write self-checking bytes to fileset files and check every read of known content
    ///
    /// A mismatch fails the run (exit 1).
    #[arg(long, help_heading = super::jobflags::CHECKING)]
    pub verify: bool,
    /// Keep the files the workload created (a later run with `reuse` can use them)
    #[arg(long, help_heading = SAFETY)]
    pub keep: bool,
    /// Refuse a workload file that contains `system "command"` (instead of running it)
    #[arg(long, help_heading = SAFETY)]
    pub no_system: bool,
    /// Store the JSON Result in FILE
    #[arg(long, value_name = "FILE", help_heading = WHERE)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
    #[command(flatten)]
    pub observe: crate::cli::observe::ObserveArgs,
    #[command(flatten)]
    pub repeat: super::repeat::RepeatArg,
    // Under mpirun every rank runs the workload in DIR/rank-NNNNN; --mpi-timeout applies.
    #[command(flatten)]
    pub dist: super::ranks::DistArgs,
}

const EXAMPLES: &str = "\
Examples:
  fsbench workload fileserver --dir /mnt/data -D nfiles=1000 -D nthreads=8 --time 30s
  fsbench workload my-app.f --format json --output result.json";

/// The Result's note of a rate limit: what it limits and what counts against it.
fn rate_note(rate: &crate::job::RateLimit) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(n) = rate.iops {
        parts.push(format!("{n} data I/O calls/s"));
    }
    if let Some(b) = rate.bytes_per_sec {
        parts.push(format!("{}/s", crate::units::format_bytes(b as f64)));
    }
    if parts.is_empty() {
        return None;
    }
    let scope = match rate.scope {
        crate::job::RateScope::Thread => "per thread",
        crate::job::RateScope::Total => "total",
    };
    Some(format!(
        "rate limit: {} {scope} (the read and write calls of data flowops; metadata flowops do not count)",
        parts.join(" and ")
    ))
}

/// What the observers watch: the directories the filesets are laid out in, every thread
/// instance, in worker processes unless `--in-process`.
fn scope(model: &crate::workload::model::Model, in_process: bool) -> crate::observe::Scope {
    let mut targets: Vec<PathBuf> = model
        .filesets
        .iter()
        .filter_map(|f| f.root.parent().map(|p| p.to_path_buf()))
        .filter(|p| p.is_dir())
        .collect();
    targets.sort();
    targets.dedup();
    crate::observe::Scope {
        targets,
        workers: model.total_threads(),
        processes: !in_process,
    }
}

fn list() -> String {
    let mut s = String::from("Personalities (fsbench workload NAME [-D var=value ...]):\n");
    for p in PERSONALITIES {
        s.push_str(&format!("  {:<24} {}\n", p.name, p.about));
        let d: Vec<String> = defaults(p.text)
            .into_iter()
            .filter(|(k, _)| k != "dir")
            .map(|(k, v)| {
                let v = if v.starts_with("cvar(") {
                    v.split("mean:")
                        .nth(1)
                        .map(|m| format!("gamma(mean {})", m.split(';').next().unwrap_or("")))
                        .unwrap_or(v)
                } else {
                    v
                };
                format!("{k}={v}")
            })
            .collect();
        s.push_str(&format!("  {:<24}   defaults: {}\n", "", d.join(" ")));
    }
    s.push_str("\nShootout variants (a personality with preset -D values):\n");
    for v in VARIANTS {
        let d: Vec<String> = v.defines.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s.push_str(&format!(
            "  {:<28} = {} {}\n",
            v.name,
            v.personality,
            d.join(" ")
        ));
    }
    s
}

/// A .f file as text; bytes that are not UTF-8 are a usage error at their line and column.
fn wml_text(name: &str, bytes: Vec<u8>) -> anyhow::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let bad = e.utf8_error().valid_up_to();
        let b = e.as_bytes();
        let line = b[..bad].iter().filter(|&&c| c == b'\n').count() + 1;
        let col = bad
            - b[..bad]
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(0, |p| p + 1)
            + 1;
        crate::usage!(
            "{name}:{line}:{col}: not UTF-8 text (byte 0x{:02x}): a workload file is WML text",
            b[bad]
        )
        .into()
    })
}

/// The workload named on the command line (a personality or a .f file) with its `-D`
/// overrides and `--dir`, loaded; refused when `--no-system` forbids what it runs.
/// The workload of `a` loaded, and how to run it (`lines_to_stdout`: print the psrun lines
/// as they come); the observers' watch is the caller's to add.
pub(crate) fn prepare(
    a: &WorkloadArgs,
    lines_to_stdout: bool,
) -> anyhow::Result<(Source, crate::workload::model::Model, Options)> {
    let time = a
        .time
        .as_deref()
        .map(crate::units::parse_duration)
        .transpose()?;
    if time == Some(Duration::ZERO) {
        crate::bail_usage!("--time must be more than 0");
    }
    let ramp = a
        .ramp
        .as_deref()
        .map(|s| crate::units::parse_duration(s).map_err(|e| crate::usage!("--ramp: {e}")))
        .transpose()?
        .filter(|d| !d.is_zero());
    let ramp_bytes = crate::job::ramp_bytes_flag(a.ramp_bytes.as_deref(), ramp)?;
    let stall_after = crate::units::parse_duration(&a.stall_after)?;
    let rate = a.rate.limit()?;
    let engine = super::args::source_engine(a.engine.as_deref(), "workloads")?;
    let (src, model) = load(a)?;
    if a.verify {
        check_verify(&model, &src.name)?;
    }
    if let Some(b) = ramp_bytes {
        check_ramp_bytes(&model, b)?;
    }
    let opts = Options {
        time,
        ramp,
        ramp_bytes,
        keep: a.keep,
        in_process: a.in_process,
        lines_to_stdout,
        stall_after,
        progress: Some(crate::report::workload::psrun_line),
        engine,
        rate,
        verify: a.verify,
        leave_for_owner: false,
        watch: Default::default(),
    };
    Ok((src, model, opts))
}

fn load(
    a: &WorkloadArgs,
) -> anyhow::Result<(crate::workload::Source, crate::workload::model::Model)> {
    let mut defines: Vec<(String, String)> = Vec::new();
    let (name, text) = match find(&a.workload) {
        Some((p, preset)) => {
            defines.extend(preset.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            if a.dir.is_none() {
                defines.push(("dir".into(), ".".into()));
            }
            (a.workload.clone(), p.text.to_string())
        }
        None => {
            let path = PathBuf::from(&a.workload);
            if !path.is_file() {
                crate::bail_usage!(
                    "'{}' is neither a shipped personality nor a readable .f file: see `fsbench workload list`",
                    a.workload
                );
            }
            let bytes = std::fs::read(&path)
                .map_err(|e| crate::usage!("cannot read {}: {e}", path.display()))?;
            (a.workload.clone(), wml_text(&a.workload, bytes)?)
        }
    };
    if let Some(d) = &a.dir {
        if !d.is_dir() {
            crate::bail_usage!("--dir {}: no such directory", d.display());
        }
        defines.push(("dir".into(), d.display().to_string()));
    }
    for d in &a.define {
        let Some((k, v)) = d.split_once('=') else {
            crate::bail_usage!("bad -D '{d}': expected VAR=VALUE, e.g. -D nfiles=1000")
        };
        let k = k.trim().trim_start_matches('$');
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            crate::bail_usage!("bad -D '{d}': the variable name must be letters, digits or '_'");
        }
        if !crate::workload::personalities::names_variable(&text, k) {
            let known = crate::workload::personalities::defaults(&text)
                .into_iter()
                .map(|(n, _)| n)
                .collect::<Vec<_>>()
                .join(", ");
            let why = format!(
                "-D {k}: {name} never uses ${k}, so it would change nothing (the variables it sets: {known})"
            );
            if a.strict {
                crate::bail_usage!("{why}; refused by --strict");
            }
            eprintln!("fsbench: warning: {why}");
        }
        defines.retain(|(x, _)| x != k);
        defines.push((k.to_string(), v.trim().to_string()));
    }
    let src = Source {
        name,
        text,
        defines,
        shared_rank: None,
    };
    let model = crate::workload::load_source(&src)?;
    if a.no_system {
        if let Some(crate::workload::model::Cmd::System(c)) = model
            .script
            .iter()
            .find(|c| matches!(c, crate::workload::model::Cmd::System(_)))
        {
            crate::bail_usage!("{} runs the shell command \"{c}\" (system): refused by --no-system; remove --no-system to allow it", src.name);
        }
    }
    Ok((src, model))
}

/// `--verify` needs a workload that reads what it writes: refused (one line) when no
/// flowop of it reads a file, since nothing it writes would ever be checked.
fn check_verify(model: &crate::workload::model::Model, name: &str) -> anyhow::Result<()> {
    use crate::workload::model::{flatten, Kind};
    let reads = model.processes.iter().any(|p| {
        p.threads.iter().any(|t| {
            flatten(&t.flowops)
                .iter()
                .any(|f| matches!(f.kind, Kind::Read | Kind::ReadWholeFile))
        })
    });
    if !reads {
        crate::bail_usage!(
            "--verify: {name} has no read or readwholefile flowop, so nothing it writes is ever checked (verify works for workloads that read their files)"
        );
    }
    Ok(())
}

/// `--ramp-bytes` needs every thread to move data: a thread of only metadata flowops would
/// never end its warm-up, and the run's time would never start.
fn check_ramp_bytes(model: &crate::workload::model::Model, bytes: u64) -> anyhow::Result<()> {
    use crate::workload::model::flatten;
    for p in &model.processes {
        for t in &p.threads {
            let moves = flatten(&t.flowops)
                .iter()
                .any(|f| f.kind.is_read() || f.kind.is_write());
            if !moves {
                crate::bail_usage!(
                    "--ramp-bytes {bytes}: thread {} of process {} has no read or write flowop, so its warm-up by bytes would never end: use --ramp DUR",
                    t.name,
                    p.name
                );
            }
        }
    }
    Ok(())
}

pub(crate) fn main(a: WorkloadArgs, exec: crate::exec::Executor) -> anyhow::Result<i32> {
    if a.verify && matches!(a.workload.as_str(), "list" | "show") {
        crate::bail_usage!(
            "--verify applies to running a workload, not to `workload {}`",
            a.workload
        );
    }
    match a.workload.as_str() {
        "list" => {
            crate::out!("{}", list());
            return Ok(0);
        }
        "show" => {
            let Some(name) = a.extra.as_deref() else {
                crate::bail_usage!(
                    "usage: fsbench workload show NAME (see `fsbench workload list`)"
                )
            };
            let Some((p, d)) = find(name) else {
                crate::bail_usage!("unknown personality '{name}': see `fsbench workload list`")
            };
            for (k, v) in d {
                crate::outln!("# variant {name}: -D {k}={v}");
            }
            crate::out!("{}", p.text);
            return Ok(0);
        }
        _ => {}
    }
    if let Some(x) = &a.extra {
        crate::bail_usage!(
            "unexpected argument '{x}': options come after the workload name, e.g. -D nfiles=100"
        );
    }
    let format = a.printed.get::<Runs>()?;
    let repeat = a.repeat.count()?;
    let observe = a.observe.settings()?;
    super::repeat::refuse_with(repeat, &observe, &exec)?;
    let (src, model, opts) = prepare(&a, format == Format::Text)?;
    let (engine, rate, ramp, ramp_bytes) = (opts.engine, opts.rate, opts.ramp, opts.ramp_bytes);
    crate::output::check_output(a.output.as_deref(), false)?;
    let observer = crate::observe::Observer::start_for(&observe, &scope(&model, a.in_process))?;
    let opts = Options {
        watch: observer.watching(&observe.watch),
        ..opts
    };
    let mut result = super::repeat::run_workload(&exec, &src, &model, &opts, repeat)?;
    // The observers saw the script from its first run's start to now.
    let first_run = result
        .workload
        .as_ref()
        .and_then(|w| w.runs.first())
        .map(|r| r.started_unix_s);
    let now_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    observer.finish(
        &mut result,
        first_run.map_or(0.0, |t| (now_unix - t).max(0.0)),
    )?;
    result.notes.push(format!(
        "engine: {} (every flowop's system calls go through it)",
        engine.name()
    ));
    result.notes.extend(rate_note(&rate));
    if let Some(r) = ramp {
        result.notes.push(format!(
            "warm-up: the first {} s of every run ran but is left out of the Result (--ramp)",
            r.as_secs_f64()
        ));
    }
    if let Some(b) = ramp_bytes {
        result.notes.push(format!(
            "warm-up: each thread's first {} moved ({b} bytes, up to the flowop that moved the last of them; --ramp-bytes) in every run ran but its ops and bytes are left out of the Result; the run's time counts from when every thread was past it, and the warm-up's flowops count toward finishoncount",
            crate::units::format_size_exact(b)
        ));
    }
    match format {
        Format::Json => crate::outln!("{}", serde_json::to_string_pretty(&result)?),
        Format::Csv => crate::out!("{}", crate::report::workload::csv(&result)),
        // The formats of results, as parsed above: the rest is text.
        _ => crate::out!(
            "{}{}",
            crate::report::workload::text(&result),
            crate::report::repeat::text(&result)
        ),
    }
    if let Some(p) = &a.output {
        crate::output::write_json(p, &result)?;
    }
    Ok(crate::cli::output::exit_code(std::slice::from_ref(&result)))
}
