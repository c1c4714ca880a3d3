//! `fsbench verify FILE... --journal J`: after a crash, read every block of files written by a
//! run with `--journal` and judge each against what storage acknowledged as durable. Only
//! reads: every file is opened `O_RDONLY|O_NOFOLLOW` and never written.
//!
//! Exit status: 0 every acknowledged block is there, intact; 1 a loss or corruption (or a read
//! error), or a journal damaged before its tail; 2 bad input (no journal, a journal or file
//! that is not a regular file (or, for a file, a block device), a file the journal does not
//! name, a journal whose header is damaged or impossible); 130 stopped by SIGINT or SIGTERM
//! (one line: what was checked so far, no verdict).

use crate::report::{Format, Render};
use crate::verify::check::{self, FileCheck, Mismatch, FINDINGS};
use crate::verify::journal::{DamagedRecord, Journal};
use crate::verify::Finding;
use crate::{bail_usage, outln};
use clap::Args;
use serde::Serialize;
use std::fs::File;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(
    mut_arg("format", |a| super::args::format_help::<VerifyReport>(a)),
    after_help = EXAMPLES
)]
pub(crate) struct VerifyArgs {
    /// Files written by `fsbench run ... --journal J` (each must be one the journal names)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The journal the run wrote (--journal of run or vx)
    #[arg(long, value_name = "J", help_heading = super::args::WHAT)]
    pub journal: PathBuf,
    /// Also store the report as JSON in FILE
    #[arg(long, value_name = "FILE", help_heading = super::args::WHERE)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub printed: super::args::FormatArgs,
    /// Let --output replace a regular file fsbench did not write
    #[arg(long, help_heading = super::args::SAFETY)]
    pub force: bool,
}

const EXAMPLES: &str = "\
Examples:
  fsbench verify data.f --journal data.journal
  fsbench verify a.f b.f --journal run.journal --format json --output verdict.json";

/// The whole report: the journal judged by and every file judged.
#[derive(Debug, Serialize)]
pub(crate) struct VerifyReport {
    pub schema_version: u32,
    pub kind: &'static str,
    pub journal: String,
    pub seed: u64,
    pub block_size_bytes: u64,
    pub journal_records: u64,
    /// Records of the run's own overlapping writes (blocks whose content it never knew).
    pub journal_overlap_records: u64,
    /// Bytes after the journal's last good record, torn by the crash (ignored: those appends
    /// never returned, so nothing in them was acknowledged).
    pub journal_torn_tail_bytes: u64,
    /// Records of zeros with good records after them (appends claimed but never written).
    pub journal_unwritten_records: u64,
    /// Damaged records with good records after them: the journal itself is corrupt, and the
    /// check fails whatever the files hold.
    pub journal_damaged_records: u64,
    /// The first damaged records (index from 0, byte offset in the journal).
    pub journal_first_damaged: Vec<DamagedRecord>,
    pub files: Vec<FileCheck>,
    /// Blocks whose finding is a failure (lost, corrupt, misdirected, torn over an
    /// acknowledged sector), over all files.
    pub failures: u64,
    /// `clean` or `failed` (failed also when the journal is corrupt).
    pub status: &'static str,
}

impl Render for VerifyReport {
    const FORMATS: &'static [Format] = &[Format::Text, Format::Json];
    fn render(&self, format: Format) -> String {
        match Self::supported(format) {
            Format::Json => crate::report::json(self),
            _ => self.text(),
        }
    }
}

fn fields(f: &check::Fields) -> String {
    let g = f
        .generation
        .map_or_else(|| "none".to_string(), |g| g.to_string());
    format!(
        "seed {:#x} file {} offset {} generation {g}",
        f.seed, f.file, f.offset_bytes
    )
}

fn mismatch_text(m: &Mismatch, s: &mut String) {
    use std::fmt::Write as _;
    let what = match m.verdict {
        crate::verify::block::Verdict::Corrupt { bit_flip: true, .. } => " (bit flip)",
        _ => "",
    };
    let acked = m
        .acked_generation
        .map_or_else(|| "never".to_string(), |g| format!("generation {g}"));
    let _ = writeln!(
        s,
        "  {} at offset {}{what}: acknowledged {acked}, found {}",
        m.finding,
        m.offset_bytes,
        m.verdict.name()
    );
    let _ = writeln!(s, "    expected: {}", fields(&m.expected));
    let found = m
        .found
        .as_ref()
        .map_or_else(|| "no fsbench header".to_string(), fields);
    let _ = writeln!(s, "    found:    {found}");
    if let Some(ok) = m.found_block_crc_ok {
        let _ = writeln!(
            s,
            "    found block's own CRC: {}",
            crate::report::verify_text::own_crc_words(ok)
        );
    }
    if let Some(d) = &m.first_difference {
        let _ = writeln!(
            s,
            "    first difference at offset {} (byte {} of the block){}: expected {} found {}",
            d.offset_bytes,
            d.at_byte_in_block,
            if d.bit_flip { ", one bit" } else { "" },
            d.expected_hex,
            d.found_hex
        );
    }
}

impl VerifyReport {
    fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "verify: journal {} (seed {:#x}, block size {} B, {} acknowledgements{}{})",
            self.journal,
            self.seed,
            self.block_size_bytes,
            self.journal_records,
            if self.journal_overlap_records > 0 {
                format!(
                    ", {} overlapping writes of the run",
                    self.journal_overlap_records
                )
            } else {
                String::new()
            },
            journal_notes(self.journal_torn_tail_bytes, self.journal_unwritten_records)
        );
        for f in &self.files {
            let counts: Vec<String> = FINDINGS
                .iter()
                .map(|&k| format!("{} {}", label(k), f.tally(k).blocks))
                .collect();
            let _ = writeln!(
                s,
                "{}: {} blocks ({} B): {}",
                f.path,
                f.blocks,
                f.size_bytes,
                counts.join(", ")
            );
            for k in FINDINGS.into_iter().filter(|&k| k != Finding::Intact) {
                let t = f.tally(k);
                if t.blocks > 0 {
                    let offs: Vec<String> =
                        t.first_offsets_bytes.iter().map(u64::to_string).collect();
                    let more = if t.blocks > t.first_offsets_bytes.len() as u64 {
                        ", ..."
                    } else {
                        ""
                    };
                    let _ = writeln!(s, "  {} at offsets {}{more}", label(k), offs.join(", "));
                }
            }
            for m in &f.mismatches {
                mismatch_text(m, &mut s);
            }
        }
        if self.journal_damaged_records > 0 {
            let first: Vec<String> = self
                .journal_first_damaged
                .iter()
                .map(|d| format!("record {} at offset {}", d.record, d.offset_bytes))
                .collect();
            let _ = writeln!(
                s,
                "verify: FAILED: journal {} is corrupt: {} damaged records with good records after them ({}); only a torn tail is forgiven, and the acknowledgements they held are unknown",
                self.journal,
                self.journal_damaged_records,
                first.join(", ")
            );
        }
        if self.failures == 0 && self.journal_damaged_records == 0 {
            let _ = writeln!(
                s,
                "verify: clean: every acknowledged block is there and intact"
            );
        } else if self.failures == 0 {
            let _ = writeln!(
                s,
                "verify: no block of the files contradicts the good records, but the journal is corrupt"
            );
        } else {
            let _ = writeln!(
                s,
                "verify: FAILED: {} blocks lost or corrupt: storage broke its promise",
                self.failures
            );
        }
        s
    }
}

/// The tail and holes of a journal, for its line in the report.
fn journal_notes(torn_tail_bytes: u64, unwritten_records: u64) -> String {
    let mut s = String::new();
    if torn_tail_bytes > 0 {
        s += &format!(", a torn tail of {torn_tail_bytes} B ignored");
    }
    if unwritten_records > 0 {
        s += &format!(", {unwritten_records} records never written (zeros) ignored");
    }
    s
}

fn label(f: Finding) -> &'static str {
    match f {
        Finding::StaleAllowed => "stale-but-allowed",
        other => check::finding_name(other),
    }
}

/// What a check stopped by a signal had done: one line, no verdict.
fn interrupted_line(files: &[FileCheck], of: usize) -> String {
    let last = files.last().map_or("", |f| f.path.as_str());
    let blocks: u64 = files.iter().map(|f| f.blocks).sum();
    let bytes: u64 = files.iter().map(|f| f.size_bytes).sum();
    let failures: u64 = files.iter().map(|f| f.failures).sum();
    format!(
        "verify: interrupted in {last} (file {} of {of}) after checking {blocks} blocks ({bytes} B): {failures} failures so far; no verdict",
        files.len()
    )
}

/// The journal's index of `arg`: the same name, else the same file once both are resolved.
fn file_index(arg: &Path, names: &[String]) -> Option<usize> {
    if let Some(i) = names.iter().position(|n| Path::new(n) == arg) {
        return Some(i);
    }
    let want = std::fs::canonicalize(arg).ok()?;
    names
        .iter()
        .position(|n| std::fs::canonicalize(n).is_ok_and(|c| c == want))
}

/// Open a file to judge, for reading only, without following a symbolic link. `None`: it is
/// gone (every acknowledged block of it is lost).
fn open(path: &Path) -> anyhow::Result<Option<File>> {
    let f = match std::fs::OpenOptions::new()
        .read(true)
        // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => bail_usage!(
            "verify: {} is a symbolic link: name the file it points to",
            path.display()
        ),
        Err(e) => bail_usage!("verify: cannot open {}: {e}", path.display()),
    };
    // Checked on the descriptor: what is read is what was checked.
    let t = f.metadata()?.file_type();
    if !(t.is_file() || t.is_block_device()) {
        bail_usage!(
            "verify: {} is {}, not a regular file or a block device",
            path.display(),
            crate::verify::journal::kind_of(&t)
        );
    }
    Ok(Some(f))
}

pub(crate) fn main(a: VerifyArgs) -> anyhow::Result<i32> {
    let format = a.printed.get::<VerifyReport>()?;
    crate::output::check_output(a.output.as_deref(), a.force)?;
    if std::fs::symlink_metadata(&a.journal).is_err() {
        bail_usage!(
            "verify: journal {} does not exist (give the --journal file of the run)",
            a.journal.display()
        );
    }
    let journal = Journal::read(&a.journal).map_err(|e| crate::usage!("verify: {e:#}"))?;
    let bs = journal.header.block_size;
    // Every name is matched before anything is read, so a typo costs no time.
    let mut targets = Vec::new();
    for p in &a.files {
        let Some(i) = file_index(p, &journal.header.files) else {
            bail_usage!(
                "verify: {} is not a file of journal {} (it names: {})",
                p.display(),
                a.journal.display(),
                journal.header.files.join(", ")
            );
        };
        targets.push((p, i as u64));
    }
    // Ctrl-C or SIGTERM ends the check at the next block, with what was checked so far.
    crate::runner::signal::install();
    let stop = crate::runner::signal::flag();
    let mut files = Vec::new();
    for (p, i) in targets {
        let shown = p.display().to_string();
        let c = match open(p)? {
            Some(f) => {
                // Through the runner's issuer, 1 MiB at a time, handed out a block at a time.
                let reader = crate::runner::read::FileReader::new(&f, 1 << 20)?;
                let mut r = std::io::BufReader::with_capacity(1 << 20, reader);
                check::check_file(&mut r, &shown, i, &journal, stop)?
            }
            None => check::check_file(&mut std::io::empty(), &shown, i, &journal, stop)?,
        };
        let interrupted = c.interrupted;
        files.push(c);
        if interrupted || crate::runner::signal::interrupted() {
            eprintln!("{}", interrupted_line(&files, a.files.len()));
            return Ok(130);
        }
    }
    let failures = files.iter().map(|f| f.failures).sum();
    let report = VerifyReport {
        schema_version: 1,
        kind: "verify",
        journal: a.journal.display().to_string(),
        seed: journal.header.seed,
        block_size_bytes: bs,
        journal_records: journal.records,
        journal_overlap_records: journal.overlap_records,
        journal_torn_tail_bytes: journal.torn_tail_bytes,
        journal_unwritten_records: journal.unwritten_records,
        journal_damaged_records: journal.damaged_records,
        journal_first_damaged: journal.first_damaged.clone(),
        files,
        failures,
        status: if failures == 0 && journal.damaged_records == 0 {
            "clean"
        } else {
            "failed"
        },
    };
    if let Some(p) = &a.output {
        crate::output::write_json_force(p, &report, a.force)?;
    }
    outln!("{}", report.render(format).trim_end());
    Ok(if report.status == "clean" { 0 } else { 1 })
}
