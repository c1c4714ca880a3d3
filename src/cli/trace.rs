//! `fsbench trace -- CMD ARGS...`: capture a program's file I/O with strace into an fsbench
//! trace; `fsbench trace --analyze FILE [--stripe 64k:5]`: explain a trace's I/O pattern.

use crate::report::trace::TraceAnalysis;
use crate::report::{Format, Render};
use crate::trace::{analyze, format, strace};
use crate::{bail_usage, usage};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| a.help(
        "What is printed: text, json (the analysis of --analyze; a capture prints text)"
    )),
    after_help = EXAMPLES
)]
pub(crate) struct TraceArgs {
    /// Analyse this trace (.csv or .bin) instead of capturing
    #[arg(long, value_name = "FILE", help_heading = super::args::WHAT)]
    pub analyze: Option<PathBuf>,
    /// With --analyze: what a stripe of UNIT x COLUMNS does to each I/O, e.g. 64k:5
    #[arg(long, value_name = "UNIT:COLUMNS", help_heading = super::args::WHAT)]
    pub stripe: Option<String>,
    /// With --analyze --stripe: use the device offsets of the traced files that still exist
    ///
    /// Read with FIEMAP, as a volume under the file system would see them.
    #[arg(long, help_heading = super::args::WHAT)]
    pub physical: bool,
    /// With --analyze: size of the hot-region slices (default 1m)
    #[arg(long, value_name = "SIZE", help_heading = super::args::WHAT)]
    pub region: Option<String>,
    /// With --analyze: also list the first N reads/writes vxtrace-style
    ///
    /// With --stripe, each is followed by the device I/Os it becomes.
    #[arg(long, value_name = "N", help_heading = super::args::WHAT)]
    pub list: Option<usize>,
    /// Attach to a running process instead of starting one (like `tusc -p PID`)
    ///
    /// Its children started after attaching are followed.
    #[arg(short = 'p', long, value_name = "PID", help_heading = super::args::WHAT)]
    pub pid: Option<u32>,
    /// With --pid: stop after this long (10s, 2m); default: until Ctrl-C or the process ends
    #[arg(long, value_name = "TIME", help_heading = super::args::WHAT)]
    pub duration: Option<String>,
    /// Keep I/O to system files too (/usr/lib, /proc, /dev, the loader cache, locales)
    #[arg(long = "all-files", help_heading = super::args::HOW)]
    pub all_files: bool,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
    #[command(flatten)]
    pub old: super::args::JsonAlias,
    /// Where the captured trace is stored (.csv or .bin)
    #[arg(short = 'o', long, default_value = "trace.csv", value_name = "FILE", help_heading = super::args::WHERE)]
    pub output: PathBuf,
    /// Captured trace file format: csv or bin (default: from the extension)
    #[arg(long = "trace-format", value_name = "FORMAT", help_heading = super::args::WHERE)]
    pub trace_format: Option<String>,
    /// Keep strace's own log here as well
    #[arg(long = "strace-log", value_name = "FILE", help_heading = super::args::WHERE)]
    pub strace_log: Option<PathBuf>,
    /// The program to trace and its arguments, after `--`
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

const EXAMPLES: &str = "\
Examples:
  fsbench trace -o app.csv -- tar cf /tmp/a.tar /etc
  fsbench trace --analyze app.csv --stripe 64k:4 --format json";

/// What `trace --analyze` prints.
const ANALYSIS: &[Format] = &[Format::Text, Format::Json];

/// The captured trace's file format: `--trace-format`, or `--format csv|bin` (its spelling
/// of earlier releases, still read for one release), or the output file's extension.
fn capture_format(a: &TraceArgs, output: &Path) -> anyhow::Result<format::TraceFormat> {
    let old = a
        .printed
        .format
        .as_deref()
        .filter(|f| matches!(*f, "csv" | "bin"));
    match (&a.trace_format, old) {
        (Some(_), Some(_)) => {
            bail_usage!("trace: give the captured trace's format once, with --trace-format csv|bin")
        }
        (Some(f), None) => Ok(format::TraceFormat::parse(f)?),
        (None, Some(f)) => {
            super::args::deprecated(&format!("--format {f}"), &format!("--trace-format {f}"));
            Ok(format::TraceFormat::parse(f)?)
        }
        (None, None) => {
            // What a capture prints is its text summary: any other --format is refused.
            a.printed.among(&[Format::Text], false)?;
            Ok(format::TraceFormat::from_path(output))
        }
    }
}

fn find_in_path(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

pub(crate) fn main(a: TraceArgs) -> anyhow::Result<i32> {
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
    let format = a.printed.among(ANALYSIS, a.old.json)?;
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
    let an = analyze::analyze_on(&t, region, stripe, layout.as_ref())?;
    let shown = TraceAnalysis {
        file,
        analysis: &an,
    };
    crate::out!("{}", shown.render(format));
    if let (Format::Text, Some(n)) = (format, a.list) {
        crate::outln!();
        // Streamed: a long listing is never held in memory whole.
        let mut out = FmtToIo(std::io::BufWriter::new(std::io::stdout().lock()));
        let _ = crate::report::trace::write_listing(&mut out, &t, n, stripe, layout.as_ref());
        let _ = std::io::Write::flush(&mut out.0);
    }
    Ok(0)
}

/// Options that do not go with capturing, or contradict each other.
fn check_capture_args(a: &TraceArgs) -> anyhow::Result<()> {
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
    if a.stripe.is_some() || a.region.is_some() || a.old.json || a.list.is_some() || a.physical {
        bail_usage!(
            "trace: --stripe, --physical, --region, --list and --json go with --analyze FILE"
        );
    }
    Ok(())
}

/// The strace command line: every traced call with times and file names, into `log`. A
/// started command dies with strace (see `strace::tracee_argv`).
fn strace_command(strace_bin: &Path, a: &TraceArgs, log: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(strace_bin);
    cmd.args(["-f", "-ttt", "-T", "-y", "-qq", "-s", "0", "-e"])
        .arg(format!("trace={}", strace::TRACED_SYSCALLS))
        .arg("-o")
        .arg(log);
    match a.pid {
        Some(pid) => cmd.arg("-p").arg(pid.to_string()),
        None => {
            let kill_on_exit = strace::supports_kill_on_exit(strace_bin);
            if kill_on_exit {
                cmd.arg("--kill-on-exit");
            }
            cmd.arg("--")
                .args(strace::tracee_argv(&a.command, kill_on_exit))
        }
    };
    // strace and the command it starts get a process group of their own, so fsbench alone
    // decides how they stop (a terminal's Ctrl-C reaches only fsbench, which forwards it),
    // and one signal to the group reaches both.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and only calls prctl and
    // getppid (via guard::die_with_parent); fsbench is single-threaded while capturing.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            // If fsbench dies (even by SIGKILL), strace goes too.
            crate::guard::die_with_parent(Some(parent));
            Ok(())
        });
    }
    cmd
}

fn capture_main(a: &TraceArgs) -> anyhow::Result<i32> {
    capture(a, &a.output, false).map(|(code, _)| code)
}

/// `fsbench trace` started by mpirun (several ranks): each rank captures its own command
/// into its own file (`{rank}` in -o replaced by its 5-digit rank, else `.rNNNNN` inserted
/// before the extension); rank 0 prints one line per rank with its file and record count.
/// `--analyze` does no I/O to measure: refused (on rank 0, in one line).
#[cfg(feature = "mpi")]
pub(crate) fn main_on_ranks(a: TraceArgs) -> anyhow::Result<i32> {
    if a.analyze.is_some() {
        if super::ranks::launched_rank().unwrap_or(0) != 0 {
            // Rank 0 says why and exits 2, which mpirun reports. A rank that exited 2 first
            // would have mpirun end the job, at times before rank 0 has printed its line.
            return Ok(0);
        }
        bail_usage!(
            "fsbench trace --analyze does not run on MPI ranks: it does no I/O to measure; run it without mpirun"
        );
    }
    // The ranks' commands may run for long: rank 0 waits for the last one up to a day.
    let wait = std::time::Duration::from_secs(24 * 3600);
    let (status, lines) = crate::mpi::each_rank(wait, |rank| {
        let (out, inserted) = crate::trace::rank_output(&a.output, rank);
        match capture(&a, &out, true) {
            Ok((code, records)) => (
                code,
                format!(
                    "{} ({records} records){}",
                    out.display(),
                    if inserted {
                        " (-o has no {rank}: the rank was inserted before the extension)"
                    } else {
                        ""
                    }
                ),
            ),
            Err(e) if crate::error::is_usage(&e) => (2, super::one_line(&e.to_string())),
            Err(e) => (1, format!("error: {}", super::one_line(&format!("{e:#}")))),
        }
    })?;
    for l in lines {
        crate::outln!("{l}");
    }
    Ok(status)
}

/// Capture into `output`; `quiet`: no summary on stderr (a rank under mpirun). The exit
/// status and the number of records written.
fn capture(a: &TraceArgs, output: &Path, quiet: bool) -> anyhow::Result<(i32, u64)> {
    check_capture_args(a)?;
    let fmt = capture_format(a, output)?;
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
    format::check_writable(output)?;
    if let Some(keep) = &a.strace_log {
        // Never over an existing file (it is not ours to replace).
        if std::fs::symlink_metadata(keep).is_ok() {
            bail_usage!(
                "--strace-log {}: exists: choose a new name (fsbench does not overwrite other files)",
                keep.display()
            );
        }
    }
    let Some(strace_bin) = find_in_path("strace") else {
        bail_usage!("trace: strace is not installed (it captures the program's system calls): install it, e.g. apt-get install strace");
    };
    // Handlers first: a Ctrl-C or SIGTERM from here on stops strace and what it traces,
    // and still writes what was captured.
    crate::runner::signal::install();
    let log = TempLog::create()?;
    let mut cmd = strace_command(&strace_bin, a, &log.strace_path());
    let mut child = cmd
        .spawn()
        .map_err(|e| usage!("trace: cannot start strace: {e}"))?;
    let (status, stopped) = wait_strace(&mut child, a.pid.is_some(), duration)?;
    if log.file.metadata().map(|m| m.len()).unwrap_or(0) == 0 && !status.success() {
        anyhow::bail!(
            "strace wrote no log (it exited with {status}); is ptrace allowed here (containers may forbid it)?"
        );
    }
    if let Some(keep) = &a.strace_log {
        copy_new(&log.file, keep)
            .with_context(|| format!("copying strace's log to {}", keep.display()))?;
    }
    let conv = strace::parse_log_from(std::io::BufReader::new(log.reader()?), seeded)
        .context("reading strace's log")?;
    crate::output::write_with(output, false, |w| match fmt {
        format::TraceFormat::Csv => format::to_csv(&conv.trace, w),
        format::TraceFormat::Bin => format::to_bin(&conv.trace, w),
    })?;
    if !quiet {
        eprint!("{}", crate::report::trace::capture_summary(&conv, output));
    }
    let records = conv.trace.records.len() as u64;
    let code = match stopped {
        // Detaching from a process on request is a success: the trace covers the time asked
        // for (the README's way to stop `trace --pid` is Ctrl-C).
        Stop::Detached => 0,
        Stop::Interrupted => {
            eprintln!("fsbench: interrupted: the traced command was stopped; the trace of what it did so far was written");
            130
        }
        Stop::Ended if !status.success() => {
            eprintln!(
                "fsbench: the traced command exited with {status}; its trace was still written"
            );
            1
        }
        Stop::Ended => 0,
    };
    Ok((code, records))
}

/// How a capture ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// strace ended by itself (the command or the attached process ended).
    Ended,
    /// --pid: detached on Ctrl-C/SIGTERM or when --duration was over.
    Detached,
    /// A started command was stopped by Ctrl-C/SIGTERM to fsbench.
    Interrupted,
}

/// Wait for strace. With --pid, Ctrl-C or the end of --duration makes strace detach (SIGINT
/// to strace alone: the process is not ours to stop). With a started command, Ctrl-C or
/// SIGTERM stops strace and the command: SIGTERM to their process group, then SIGKILL to
/// whatever of it is left.
fn wait_strace(
    child: &mut std::process::Child,
    attached: bool,
    duration: Option<std::time::Duration>,
) -> anyhow::Result<(std::process::ExitStatus, Stop)> {
    use std::time::{Duration, Instant};
    let start = Instant::now();
    let pgid = child.id() as libc::pid_t;
    loop {
        let asked = crate::runner::signal::interrupted();
        if let Some(st) = child.try_wait()? {
            // strace may end on its own just as fsbench is interrupted.
            let how = match (asked, attached) {
                (false, _) => Stop::Ended,
                (true, true) => Stop::Detached,
                (true, false) => {
                    kill_group(pgid, libc::SIGKILL);
                    Stop::Interrupted
                }
            };
            return Ok((st, how));
        }
        let over = duration.is_some_and(|d| start.elapsed() >= d);
        if asked || over {
            let how = if attached {
                // SAFETY: signalling the strace process this function's caller started.
                unsafe { libc::kill(pgid, libc::SIGINT) };
                Stop::Detached
            } else {
                kill_group(pgid, libc::SIGTERM);
                Stop::Interrupted
            };
            // strace finishes its log and exits; if it does not within a few seconds, it
            // (and, for a started command, the command) is killed.
            let deadline = Instant::now() + Duration::from_secs(5);
            let st = loop {
                if let Some(st) = child.try_wait()? {
                    break st;
                }
                if Instant::now() >= deadline {
                    if attached {
                        // SAFETY: as above; strace alone, never the attached process.
                        unsafe { libc::kill(pgid, libc::SIGKILL) };
                    } else {
                        kill_group(pgid, libc::SIGKILL);
                    }
                    break child.wait()?;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            if !attached {
                // The traced command may outlive strace (a tracee is let go when its
                // tracer dies): nothing of the group is left running.
                kill_group(pgid, libc::SIGKILL);
            }
            return Ok((st, how));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Signal the process group fsbench made for strace and the command it started.
fn kill_group(pgid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: a negative pid signals the group whose id is strace's pid, created by
    // process_group(0) at spawn: only strace and what it started are in it.
    unsafe { libc::kill(-pgid, sig) };
}

/// Copy the log to a new file `to` (O_EXCL|O_NOFOLLOW: never over an existing file).
fn copy_new(from: &std::fs::File, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let mut dst = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(to)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0u64;
    loop {
        let n = from.read_at(&mut buf, off)?;
        if n == 0 {
            return Ok(());
        }
        std::io::Write::write_all(&mut dst, &buf[..n])?;
        off += n as u64;
    }
}

/// `fmt::Write` onto an `io::Write` (a closed pipe ends the listing).
struct FmtToIo<W: std::io::Write>(W);

impl<W: std::io::Write> std::fmt::Write for FmtToIo<W> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write_all(s.as_bytes()).map_err(|_| std::fmt::Error)
    }
}

/// strace's log file: created new (O_EXCL|O_NOFOLLOW, mode 0600) in the temporary directory
/// and unlinked at once, so no link or earlier file is ever followed or reused and nothing is
/// left behind whatever ends fsbench (SIGKILL included): strace writes it through
/// `/proc/FSBENCH/fd/N`, the descriptor fsbench holds, and fsbench reads it back through that
/// descriptor. The space goes when the last descriptor (fsbench's or strace's) is closed.
struct TempLog {
    file: std::fs::File,
}

impl TempLog {
    fn create() -> anyhow::Result<TempLog> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = std::env::temp_dir();
        let pid = std::process::id();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        for n in 0..100u32 {
            let p = dir.join(format!(
                "fsbench-strace-{pid}-{:08x}.log",
                nanos ^ n.wrapping_mul(0x9e37_79b9)
            ));
            match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .mode(0o600)
                .open(&p)
            {
                Ok(file) => {
                    // The name was only needed to create it: gone before strace starts.
                    std::fs::remove_file(&p).map_err(|e| {
                        anyhow::anyhow!("cannot remove the name of {}: {e}", p.display())
                    })?;
                    return Ok(TempLog { file });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(anyhow::anyhow!(
                        "cannot create strace's log in {}: {e}",
                        dir.display()
                    ))
                }
            }
        }
        Err(anyhow::anyhow!(
            "cannot create a new strace log in {}: too many names taken",
            dir.display()
        ))
    }

    /// The name strace opens the log by: this process's descriptor of it.
    fn strace_path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            self.file.as_raw_fd()
        ))
    }

    /// A reader of the whole log from its start (its own offset, so the log can be read twice).
    fn reader(&self) -> std::io::Result<std::fs::File> {
        use std::io::{Seek, SeekFrom};
        let mut f = self.file.try_clone()?;
        f.seek(SeekFrom::Start(0))?;
        Ok(f)
    }
}
