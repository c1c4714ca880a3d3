//! fio job sections mapped onto fsbench Jobs, every value set through the one table of Job
//! parameters ([`crate::job::params`]). Sizes are read with fio's unit rules (`kb_base`),
//! times in fio's default unit (seconds). An option fsbench cannot honour is refused in one
//! line naming it and its section, unless the caller asks to run without it, and then it is
//! listed in the job's notes: nothing is ignored silently. docs/fio.md states each mapping.

use super::parse::{Opt, Section};
use crate::error::UsageError;
use crate::job::params::{self, Front};
use crate::job::{EngineKind, Job};
use crate::result::RankPart;
use crate::usage;
use std::path::PathBuf;

/// One fio job section as an fsbench Job, with what the Result must say about the mapping.
#[derive(Debug, Clone)]
pub(crate) struct FioJob {
    pub job: Job,
    /// The part of each target the job covers when fio's `offset` moves it off the start
    /// (None: all of every target, from byte 0).
    pub part: Option<RankPart>,
    pub notes: Vec<String>,
    /// `stonewall` / `wait_for_previous`: starts after every job before it has ended.
    pub stonewall: bool,
    /// `new_group`: a reporting group of its own (without waiting).
    pub new_group: bool,
    /// `group_reporting`: reported in one figure with the jobs before it in its group.
    pub group_reporting: bool,
    /// `startdelay`: released this long after the start of its group.
    pub start_delay: std::time::Duration,
    /// When not empty, the job runs as these runs (one per clone, each over its own files
    /// from its own offset), started together and reported as the job.
    pub clone_runs: Vec<(Job, RankPart)>,
    /// A metadata ioengine's job (`filecreate`, ...): it runs as mdtest's phases, alone in
    /// its group; `job` then only carries its name.
    pub meta: Option<super::meta::MetaJob>,
    /// The percentiles and logs of its Result (`percentile_list`, `write_*_log`).
    pub reporting: super::measure::Reporting,
}

/// Most clones `numjobs` may ask for (each is a thread or a file).
pub(crate) const MAX_NUMJOBS: u64 = crate::job::MAX_THREADS as u64;

/// The options this mapping reads (docs/fio.md describes each; a test checks both lists).
#[cfg(test)]
pub(crate) const SUPPORTED: &[&str] = &[
    "name",
    "description",
    "filename",
    "directory",
    "size",
    "filesize",
    "io_size",
    "io_limit",
    "number_ios",
    "rw",
    "readwrite",
    "rw_sequencer",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "blocksize",
    "bssplit",
    "bs_unaligned",
    "bsrange",
    "blocksize_range",
    "blockalign",
    "ba",
    "ioengine",
    "iodepth",
    "direct",
    "buffered",
    "sync",
    "fsync",
    "end_fsync",
    "invalidate",
    "runtime",
    "timeout",
    "time_based",
    "ramp_time",
    "loops",
    "randseed",
    "random_distribution",
    "norandommap",
    "rate",
    "rate_iops",
    "thread",
    "numjobs",
    "buffer_compress_percentage",
    "dedupe_percentage",
    "dedupe_mode",
    "dedupe_working_set_percentage",
    "buffer_pattern",
    "zero_buffers",
    "refill_buffers",
    "verify",
    "kb_base",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "group_reporting",
    "unlink",
    "nrfiles",
    "filename_format",
    "offset",
    "offset_increment",
    "startdelay",
    // Minimum rates, the rate process, flow, buffers, files, syncs and verification extras.
    "rate_min",
    "rate_iops_min",
    "rate_cycle",
    "rate_process",
    "flow",
    "verify_backlog",
    "verify_backlog_batch",
    "do_verify",
    "scramble_buffers",
    "opendir",
    "create_on_open",
    "pre_read",
    "fsync_on_close",
    "fdatasync",
    "randrepeat",
    "fallocate",
    // How files are opened and created, where workers run, fio's bookkeeping (fio/host.rs).
    "dsync",
    "overwrite",
    "file_append",
    "allow_file_create",
    "create_serialize",
    "clocksource",
    "gtod_reduce",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "stats",
    "lat_percentiles",
    "clat_percentiles",
    "slat_percentiles",
    "unified_rw_reporting",
    "per_job_logs",
    "cpus_allowed",
    "cpumask",
    "cpus_allowed_policy",
    "nice",
];

/// fio's size rules: a bare number is bytes; `k m g t p` (and `kb`, `mb`, ...) multiply by
/// kb_base; `kib`, `mib`, ... by the other base (fio's compatibility rule: with the default
/// kb_base=1024, `KiB` is 1000). Case does not matter; `0x` reads hex.
pub(crate) fn parse_size(v: &str, kb_base: u64, what: &str) -> Result<u64, UsageError> {
    let bad = || {
        usage!(
            "bad {what} '{v}': expected a number with an optional suffix k, m, g, t, p (KB, KiB, ...)"
        )
    };
    let t = v.trim();
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| bad());
    }
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if end == 0 {
        return Err(bad());
    }
    let n: u64 = t[..end].parse().map_err(|_| bad())?;
    let suffix = t[end..].trim().to_ascii_lowercase();
    let other = if kb_base == 1000 { 1024 } else { 1000 };
    let (pow, base) = match suffix.as_str() {
        "" | "b" => (0, kb_base),
        "k" | "kb" => (1, kb_base),
        "m" | "mb" => (2, kb_base),
        "g" | "gb" => (3, kb_base),
        "t" | "tb" => (4, kb_base),
        "p" | "pb" => (5, kb_base),
        "kib" | "ki" => (1, other),
        "mib" | "mi" => (2, other),
        "gib" | "gi" => (3, other),
        "tib" | "ti" => (4, other),
        "pib" | "pi" => (5, other),
        _ => return Err(bad()),
    };
    base.checked_pow(pow)
        .and_then(|m| n.checked_mul(m))
        .ok_or_else(|| usage!("bad {what} '{v}': too large"))
}

/// fio's per-direction values `read,write[,trim]`: one value for all, or the same for reads
/// and writes (an empty field means "unchanged"). Different values are refused for now.
fn one_for_all<'a>(v: &'a str, key: &str, job: &str) -> Result<&'a str, UsageError> {
    let fields: Vec<&str> = v.split(',').map(str::trim).collect();
    let given: Vec<&str> = fields.iter().copied().filter(|f| !f.is_empty()).collect();
    match given.first() {
        None => Err(usage!("{key} in [{job}]: empty value")),
        Some(first) if given.iter().all(|g| g == first) && fields.len() <= 3 => {
            if fields.len() > 1 && fields.iter().take(2).any(|f| f.is_empty()) {
                return Err(usage!(
                    "{key}={v} in [{job}] sets one direction only: fsbench takes one value for reads and writes"
                ));
            }
            Ok(first)
        }
        _ => Err(usage!(
            "{key}={v} in [{job}] gives reads and writes different values: fsbench's jobs take one value for both"
        )),
    }
}

/// fio's `rate` and `rate_iops`: one value, or `READS,WRITES[,TRIMS]` where an empty field
/// leaves that direction unlimited (`rate=,2m`: writes only; two fields give trims the
/// writes' value, as in fio). Each field read by fio's unit rules, written back as a number.
fn rate_fields(v: &str, kb: u64, what: &str) -> Result<String, UsageError> {
    let fields: Vec<&str> = v.split(',').map(str::trim).collect();
    if fields.len() > 3 || fields.iter().all(|f| f.is_empty()) {
        return Err(usage!(
            "bad {what} '{v}': expected one rate, or READS,WRITES[,TRIMS] (an empty field: no limit for that direction)"
        ));
    }
    let each = fields
        .iter()
        .map(|f| match f.is_empty() {
            true => Ok(String::new()),
            false => parse_size(f, kb, what).map(|n| n.to_string()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(each.join(","))
}

/// A single size, refusing fio ranges (`4k-16k`, `4k:16k`) that span more than one value.
fn single(v: &str, kb_base: u64, key: &str, job: &str) -> Result<u64, UsageError> {
    let what = format!("{key} in [{job}]");
    for sep in ['-', ':'] {
        if let Some((lo, hi)) = v.split_once(sep) {
            let (lo, hi) = (
                parse_size(lo, kb_base, &what)?,
                parse_size(hi, kb_base, &what)?,
            );
            if lo != hi {
                return Err(usage!(
                    "{key}={v} in [{job}] is a range: fsbench takes one value"
                ));
            }
            return Ok(lo);
        }
    }
    parse_size(v, kb_base, &what)
}

/// fio's block size when a direction is left empty (`bs=,8k`).
const FIO_DEFAULT_BS: &str = "4096";

/// A per-direction value `READS,WRITES[,TRIMS]` by fio's rules, each field converted by
/// `one`: one field serves every direction; two give trims the writes' value; an empty
/// field is fio's default block size (`bs=,8k`, `bs=8k,32k,`).
fn fio_per_direction(
    v: &str,
    key: &str,
    job: &str,
    empty: &str,
    one: impl Fn(&str) -> Result<String, UsageError>,
) -> Result<String, UsageError> {
    let fields: Vec<&str> = v.split(',').map(str::trim).collect();
    if fields.len() > 3 {
        return Err(usage!(
            "{key}={v} in [{job}]: at most three values (reads, writes, trims)"
        ));
    }
    if fields.iter().all(|f| f.is_empty()) {
        return Err(usage!("{key} in [{job}]: empty value"));
    }
    let mut out = Vec::with_capacity(3);
    for f in &fields {
        out.push(if f.is_empty() {
            empty.to_string()
        } else {
            one(f)?
        });
    }
    if out.len() == 1 {
        out.push(out[0].clone());
    }
    if out.len() == 2 {
        out.push(out[1].clone());
    }
    Ok(out.join(","))
}

/// fio's `bs=4k,64k` in bytes, per direction (`4096,65536,65536`).
fn bs_bytes(v: &str, kb_base: u64, key: &str, job: &str) -> Result<String, UsageError> {
    fio_per_direction(v, key, job, FIO_DEFAULT_BS, |f| {
        single(f, kb_base, key, job).map(|b| b.to_string())
    })
}

/// fio's `bsrange=4k-16k,8k:64k` in bytes, per direction (`4096-16384,8192-65536,...`).
fn bsrange_bytes(v: &str, kb_base: u64, key: &str, job: &str) -> Result<String, UsageError> {
    let what = format!("{key} in [{job}]");
    let empty = format!("{FIO_DEFAULT_BS}-{FIO_DEFAULT_BS}");
    fio_per_direction(v, key, job, &empty, |f| {
        let (lo, hi) = f.split_once(['-', ':']).ok_or_else(|| {
            usage!("{key}={v} in [{job}]: '{f}' is not a range; expected MIN-MAX such as 4k-16k")
        })?;
        Ok(format!(
            "{}-{}",
            parse_size(lo, kb_base, &what)?,
            parse_size(hi, kb_base, &what)?
        ))
    })
}

/// A bssplit with each size read by fio's unit rules, written back in bytes for the Job's
/// own parser (which checks the shares): `4k/60:64k/40,1m/100` -> `4096/60:65536/40,1048576/100`.
fn bssplit_bytes(v: &str, kb_base: u64, what: &str) -> Result<String, UsageError> {
    let mut dirs = Vec::new();
    for list in v.split(',') {
        let mut entries = Vec::new();
        for entry in list.split(':').filter(|e| !e.trim().is_empty()) {
            let (size, pct) = entry.split_once('/').ok_or_else(|| {
                usage!("bad {what} '{v}': entry '{entry}' has no /PERCENT (fsbench takes every share written out)")
            })?;
            entries.push(format!(
                "{}/{}",
                parse_size(size, kb_base, what)?,
                pct.trim()
            ));
        }
        dirs.push(entries.join(":"));
    }
    Ok(dirs.join(","))
}

/// fio without `bs_unaligned` rounds every size a bssplit draws down to a multiple of that
/// direction's smallest size (`4k/50:6k/50` issues 4k I/Os only); with it, the sizes are
/// issued as written. The bssplit (in bytes, as `bssplit_bytes` writes it) with its sizes so
/// rounded, shares of one size added up, and the sizes that changed as (written, issued).
fn bssplit_rounded(split: &str) -> (String, Vec<(u64, u64)>) {
    let mut changed = Vec::new();
    let dirs = split.split(',').map(|list| {
        let entries: Option<Vec<(u64, u64)>> = list
            .split(':')
            .map(|e| {
                let (size, pct) = e.split_once('/')?;
                Some((size.parse().ok()?, pct.trim().parse().ok()?))
            })
            .collect();
        // What does not read as sizes and whole shares is left to the Job's parser to refuse.
        let Some(entries) = entries else {
            return list.to_string();
        };
        let min = entries.iter().map(|e| e.0).min().unwrap_or(1).max(1);
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (size, pct) in entries {
            let issued = size - size % min;
            if issued != size && !changed.contains(&(size, issued)) {
                changed.push((size, issued));
            }
            match out.iter_mut().find(|e| e.0 == issued) {
                Some(e) => e.1 += pct,
                None => out.push((issued, pct)),
            }
        }
        out.iter()
            .map(|(s, p)| format!("{s}/{p}"))
            .collect::<Vec<_>>()
            .join(":")
    });
    let text = dirs.collect::<Vec<_>>().join(",");
    (text, changed)
}

/// fio's booleans: a bare switch is on; `0` is off, any other number on.
pub(super) fn flag(o: &Opt, job: &str) -> Result<bool, UsageError> {
    match o.value.as_deref().map(str::trim) {
        None => Ok(true),
        Some(v) => match v {
            "0" | "false" | "off" | "no" => Ok(false),
            "1" | "true" | "on" | "yes" => Ok(true),
            _ => v
                .parse::<u64>()
                .map(|n| n != 0)
                .map_err(|_| usage!("bad {}={v} in [{job}]: expected 0 or 1", o.key)),
        },
    }
}

/// Everything one section says, read before the Job is built (options may come in any
/// order: `iodepth` before `ioengine`, `size` before `bs`).
#[derive(Default)]
struct Spec {
    name: Option<String>,
    filename: Option<String>,
    directory: Option<String>,
    size: Option<u64>,
    filesize: Option<u64>,
    io_size: Option<u64>,
    number_ios: Option<u64>,
    rw: Option<String>,
    /// `rw_sequencer=identical`: the I/Os of a random run repeat its offset.
    rw_identical: bool,
    rwmixread: Option<u64>,
    /// bs in bytes, per direction (`4096,65536,65536`).
    bs: Option<String>,
    /// bsrange in bytes, per direction (`4096-16384,...`).
    bsrange: Option<String>,
    /// bssplit, its sizes in bytes (`4096/60:65536/40`, per direction as fio writes them).
    bssplit: Option<String>,
    /// `bs_unaligned`: a bssplit's sizes issued as written, not rounded down to a multiple
    /// of the smallest.
    bs_unaligned: bool,
    blockalign: Option<u64>,
    engine: Option<(EngineKind, String)>,
    iodepth: Option<u64>,
    direct: Option<bool>,
    sync: Option<String>,
    fsync: Option<u64>,
    end_fsync: bool,
    invalidate: Option<bool>,
    runtime: Option<String>,
    time_based: bool,
    ramp: Option<String>,
    loops: Option<u64>,
    randseed: Option<u64>,
    distribution: Option<String>,
    random_map: Option<bool>,
    /// rate and rate_iops as the Job takes them: one value, or `READS,WRITES[,TRIMS]` with
    /// empty fields for no limit (bytes or I/Os a second).
    rate: Option<String>,
    rate_iops: Option<String>,
    numjobs: u64,
    compress: Option<u64>,
    dedupe: Option<u64>,
    dedupe_mode: Option<String>,
    dedupe_working_set: Option<u64>,
    pattern: Option<String>,
    zero_buffers: bool,
    refill_buffers: bool,
    verify: Option<String>,
    unlink: Option<bool>,
    nrfiles: Option<u64>,
    filename_format: Option<String>,
    offset: Option<u64>,
    offset_increment: Option<u64>,
    stonewall: bool,
    new_group: bool,
    group_reporting: bool,
    start_delay: Option<std::time::Duration>,
    /// `startdelay=A-B`: the range a delay is drawn from (`start_delay` holds A).
    start_delay_high: Option<std::time::Duration>,
    notes: Vec<String>,
    /// kb_base: how sizes read.
    kb: u64,
    /// `size=N%` and `offset=N%`: shares of the existing files' size.
    size_pct: Option<u64>,
    offset_pct: Option<u64>,
    /// `offset_increment=N%`: a share of the existing files' size.
    offset_increment_pct: Option<u64>,
    /// Each clone's start is rounded up to the block size (fio's rule when `offset` or
    /// `offset_increment` is a percentage): `offset` then holds the unrounded bytes.
    round_starts: bool,
    /// Think time, steady state, percentiles, logs, generator and batching.
    measured: super::measure::Opts,
    /// Minimum rates, the rate process, buffers, files, syncs and verification extras
    /// ([`Spec::read_more`]).
    more: More,
    /// fio's options on opening and creating files, CPUs and bookkeeping (fio/host.rs).
    host: super::host::HostOpts,
}

/// The options [`Spec::read_more`] reads.
#[derive(Default)]
struct More {
    /// `rate_min` (bytes a second) and `rate_iops_min`, one value for every direction.
    rate_min: Option<u64>,
    rate_iops_min: Option<u64>,
    /// `rate_cycle`, ms.
    rate_cycle_ms: Option<u64>,
    /// `rate_process=poisson`.
    poisson: bool,
    verify_backlog: Option<u64>,
    verify_backlog_batch: Option<u64>,
    do_verify: Option<bool>,
    scramble_buffers: Option<bool>,
    /// `opendir`: the directory whose files are all targets.
    opendir: Option<String>,
    /// Its files, found when the job is built.
    opendir_files: Option<Vec<PathBuf>>,
    fsync_on_close: bool,
    /// `fdatasync=N` above 0.
    fdatasync: Option<u64>,
    randrepeat: Option<bool>,
    fallocate: Option<String>,
}

/// Most files `nrfiles` may ask for per clone (each is a target with a worker).
const MAX_NRFILES: u64 = 4096;

/// An offset: a size (a percentage of the file is not supported).
fn offset(v: &str, kb: u64, key: &str, job: &str) -> Result<u64, UsageError> {
    if v.ends_with('%') {
        return Err(usage!(
            "{key}={v} in [{job}]: a percentage of the file is not supported; give a size"
        ));
    }
    single(v, kb, key, job)
}

/// A percentage of a file's size (`size=20%`, `offset=50%`): `min` to 100.
fn percent(p: &str, v: &str, key: &str, job: &str, min: u64) -> Result<u64, UsageError> {
    match p.trim().parse::<u64>() {
        Ok(n) if (min..=100).contains(&n) => Ok(n),
        _ => Err(usage!(
            "bad {key}={v} in [{job}]: expected a whole percentage from {min} to 100"
        )),
    }
}

/// The size every target has now (a file's length, a block device's size): `size=N%` and
/// `offset=N%` are shares of it. The targets must exist and be of one size.
fn existing_size(targets: &[PathBuf], what: &str) -> Result<u64, UsageError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut common: Option<(u64, &PathBuf)> = None;
    for t in targets {
        // Opened (read-only, never blocking on a FIFO) and then looked at through the
        // descriptor, so the size is the one of what was opened.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(t)
            .map_err(|e| {
                usage!(
                    "{what} is a share of an existing file, and {}: {e}; give a size",
                    t.display()
                )
            })?;
        let m = f
            .metadata()
            .map_err(|e| usage!("{what}: {}: {e}", t.display()))?;
        let len = if std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()) {
            crate::runner::target::block_device_size(&f)
                .map_err(|e| usage!("{what}: size of {}: {e:#}", t.display()))?
        } else if m.is_file() {
            m.len()
        } else {
            return Err(usage!(
                "{what}: {} is neither a file nor a block device",
                t.display()
            ));
        };
        match common {
            Some((l, first)) if l != len => {
                return Err(usage!(
                    "{what}: the files differ in size ({} has {l} bytes, {} {len}); give a size",
                    first.display(),
                    t.display()
                ))
            }
            _ => common = Some((len, t)),
        }
    }
    common
        .map(|(l, _)| l)
        .ok_or_else(|| usage!("{what}: no file to take a share of"))
}

/// fio's `size=N%` and `offset=N%` in bytes, from the size the files have now: the offset
/// is rounded up to the block size and the size stops at the end of the file, as in fio;
/// without a size, the job covers the rest of the file from its offset.
fn resolve_percentages(
    spec: &mut Spec,
    targets: &[PathBuf],
    bs: u64,
    files: u64,
    sname: &str,
) -> Result<(), UsageError> {
    let said = [
        spec.size_pct.map(|p| format!("size={p}%")),
        spec.offset_pct.map(|p| format!("offset={p}%")),
        spec.offset_increment_pct
            .map(|p| format!("offset_increment={p}%")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" and ");
    let what = format!("{said} in [{sname}]");
    let len = existing_size(targets, &what)?;
    let share = |p: u64| (len as u128 * p as u128 / 100) as u64;
    let offset = match spec.offset_pct {
        Some(p) => share(p).div_ceil(bs).saturating_mul(bs),
        None => spec.offset.unwrap_or(0),
    };
    if offset >= len {
        return Err(usage!(
            "{what}: the offset {offset} is at or past the end of the {len}-byte file: nothing to do"
        ));
    }
    let room = len - offset;
    let per_file = match spec.size_pct {
        Some(p) => share(p),
        None => spec.size.map_or(room, |s| s / files.max(1)),
    }
    .min(room);
    spec.offset = (offset > 0).then_some(offset);
    if let Some(p) = spec.offset_increment_pct {
        // fio rounds each clone's start (offset + i * increment) up to the block size,
        // not the offset and the increment apart.
        spec.offset_increment = Some(share(p));
        spec.round_starts = true;
        if let Some(o) = spec.offset_pct {
            spec.offset = Some(share(o));
        }
        spec.notes.push(format!(
            "{what}: clone i starts at (offset + i x {} bytes) rounded up to the block size",
            share(p)
        ));
    }
    spec.size = Some(per_file.saturating_mul(files.max(1)));
    spec.notes.push(format!(
        "{what}: of the files' {len} bytes, I/O over {per_file} bytes of each from byte {offset}"
    ));
    Ok(())
}

/// fio's `startdelay`: a time, seconds unless a unit is given, or a range `A-B` (`A:B`) a
/// delay is drawn from: (low, Some(high)).
fn delay(
    v: &str,
    key: &str,
    job: &str,
) -> Result<(std::time::Duration, Option<std::time::Duration>), UsageError> {
    let one = |t: &str| {
        crate::units::parse_duration(t.trim()).map_err(|e| usage!("{key} in [{job}]: {}", e.0))
    };
    let Some((lo, hi)) = v.split_once(['-', ':']) else {
        return Ok((one(v)?, None));
    };
    let (lo, hi) = (one(lo)?, one(hi)?);
    if hi < lo {
        return Err(usage!(
            "bad {key}={v} in [{job}]: a range goes from the shorter delay to the longer"
        ));
    }
    Ok((lo, Some(hi).filter(|h| *h > lo)))
}

/// `startdelay=A-B`: the delay drawn in the range, as fio draws one per job, from the job's
/// seed (`randseed`), so the same seed gives the same delay. Microsecond steps, as fio's.
fn draw_delay(lo: std::time::Duration, hi: std::time::Duration, seed: u64) -> std::time::Duration {
    let span_us = (hi - lo).as_micros().min(u64::MAX as u128 - 1) as u64;
    // Its own stream of the seed, apart from the offsets' streams (thread_seed's).
    let mut rng = crate::runner::opgen::Rng::new(seed ^ 0x57a7_de1a_7000_0000);
    lo + std::time::Duration::from_micros(rng.below(span_us + 1))
}

/// A percentage option (0..=100).
fn pct(v: &str, key: &str, job: &str) -> Result<u64, UsageError> {
    let n = parse_size(v, 1024, &format!("{key} in [{job}]"))?;
    if n > 100 {
        return Err(usage!("bad {key}={v} in [{job}]: must be 0 to 100"));
    }
    Ok(n)
}

/// fio's `buffer_pattern`: `0xHEX`, a quoted string, or a number (its low byte).
fn pattern(v: &str, job: &str) -> Result<String, UsageError> {
    let v = v.trim();
    if v.starts_with("0x") || v.starts_with("0X") {
        return Ok(v.to_string());
    }
    if let Some(s) = v.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        if s.is_empty() {
            return Err(usage!("buffer_pattern in [{job}]: empty string"));
        }
        let hex: String = s.bytes().map(|b| format!("{b:02x}")).collect();
        return Ok(format!("0x{hex}"));
    }
    match v.parse::<u8>() {
        Ok(b) => Ok(format!("0x{b:02x}")),
        Err(_) => Err(usage!(
            "buffer_pattern={v} in [{job}]: fsbench takes 0xHEX, \"text\" or a byte value 0-255 (no combinations)"
        )),
    }
}

fn engine(v: &str, job: &str) -> Result<(EngineKind, Option<String>), UsageError> {
    Ok(match v {
        "sync" | "psync" | "vsync" | "pvsync" | "pvsync2" => (EngineKind::Sync, None),
        "libaio" | "io_uring" => (EngineKind::Uring, None),
        "posixaio" => (
            EngineKind::Uring,
            Some("ioengine=posixaio runs on io_uring (asynchronous I/O at the same queue depth)".into()),
        ),
        "mmap" => (EngineKind::Mmap, None),
        "null" => (EngineKind::Null, None),
        "falloc" => (EngineKind::Falloc, None),
        "ftruncate" => (EngineKind::Ftruncate, None),
        _ => {
            return Err(usage!(
                "ioengine={v} in [{job}] is not supported: fsbench fio maps sync, psync, vsync, pvsync, pvsync2, libaio, io_uring, posixaio, mmap, null, falloc and ftruncate"
            ))
        }
    })
}

impl Spec {
    /// Read one option into the spec; false when the option is not one this mapping knows.
    fn read(&mut self, o: &Opt, kb: u64, job: &str) -> Result<bool, UsageError> {
        let key = o.key.as_str();
        let need = || {
            o.value
                .as_deref()
                .map(str::trim)
                .ok_or_else(|| usage!("{key} in [{job}] needs a value: {key}=VALUE"))
        };
        let what = format!("{key} in [{job}]");
        let size = |v: &str| single(v, kb, key, job);
        match key {
            "name" => self.name = Some(need()?.to_string()),
            "description" => self.notes.push(format!("fio description: {}", need()?)),
            "filename" => self.filename = Some(need()?.to_string()),
            "directory" => self.directory = Some(need()?.to_string()),
            "size" => {
                let v = need()?;
                if let Some(p) = v.strip_suffix('%') {
                    self.size_pct = Some(percent(p, v, key, job, 1)?);
                    self.size = None;
                } else {
                    self.size = Some(size(v)?);
                    self.size_pct = None;
                }
            }
            "filesize" => self.filesize = Some(size(need()?)?),
            "io_size" | "io_limit" => self.io_size = Some(size(need()?)?),
            "number_ios" => self.number_ios = Some(parse_size(need()?, kb, &what)?),
            "rw" | "readwrite" => self.rw = Some(need()?.to_string()),
            // How the I/Os of a run after a random offset (`rw=randread:N`) go on: following
            // each other (fio's default) or at that offset again.
            "rw_sequencer" => {
                self.rw_identical = match need()? {
                    "sequential" => false,
                    "identical" => true,
                    v => {
                        return Err(usage!(
                            "bad rw_sequencer={v} in [{job}]: sequential or identical"
                        ))
                    }
                }
            }
            "rwmixread" => self.rwmixread = Some(pct(need()?, key, job)?),
            "rwmixwrite" => self.rwmixread = Some(100 - pct(need()?, key, job)?),
            "bs" | "blocksize" => self.bs = Some(bs_bytes(need()?, kb, key, job)?),
            "bsrange" | "blocksize_range" => {
                self.bsrange = Some(bsrange_bytes(need()?, kb, key, job)?)
            }
            "bssplit" => self.bssplit = Some(bssplit_bytes(need()?, kb, &what)?),
            "bs_unaligned" => self.bs_unaligned = flag(o, job)?,
            "blockalign" | "ba" => self.blockalign = Some(size(one_for_all(need()?, key, job)?)?),
            "ioengine" => {
                let v = need()?;
                let (e, note) = engine(v, job)?;
                self.notes.extend(note);
                self.engine = Some((e, v.to_string()));
            }
            "iodepth" => self.iodepth = Some(parse_size(need()?, kb, &what)?),
            "direct" => self.direct = Some(flag(o, job)?),
            "buffered" => self.direct = Some(!flag(o, job)?),
            "sync" => self.sync = Some(o.value.clone().unwrap_or_else(|| "1".into())),
            "fsync" => self.fsync = Some(parse_size(need()?, kb, &what)?),
            "end_fsync" => self.end_fsync = flag(o, job)?,
            "invalidate" => self.invalidate = Some(flag(o, job)?),
            "runtime" | "timeout" => self.runtime = Some(need()?.to_string()),
            "time_based" => self.time_based = flag(o, job)?,
            "ramp_time" => self.ramp = Some(need()?.to_string()),
            "loops" => self.loops = Some(parse_size(need()?, kb, &what)?),
            "randseed" => self.randseed = Some(parse_size(need()?, kb, &what)?),
            "random_distribution" => self.distribution = Some(need()?.to_string()),
            "norandommap" => self.random_map = Some(!flag(o, job)?),
            "rate" => self.rate = Some(rate_fields(need()?, kb, &what)?),
            "rate_iops" => self.rate_iops = Some(rate_fields(need()?, kb, &what)?),
            "numjobs" => {
                let n = parse_size(need()?, kb, &what)?;
                if n == 0 || n > MAX_NUMJOBS {
                    return Err(usage!(
                        "bad numjobs={n} in [{job}]: must be 1 to {MAX_NUMJOBS}"
                    ));
                }
                self.numjobs = n;
            }
            "buffer_compress_percentage" => self.compress = Some(pct(need()?, key, job)?),
            "dedupe_percentage" => self.dedupe = Some(pct(need()?, key, job)?),
            "dedupe_mode" => self.dedupe_mode = Some(need()?.to_string()),
            "dedupe_working_set_percentage" => {
                self.dedupe_working_set = Some(pct(need()?, key, job)?)
            }
            "buffer_pattern" => self.pattern = Some(pattern(need()?, job)?),
            "zero_buffers" => self.zero_buffers = flag(o, job)?,
            "refill_buffers" => self.refill_buffers = flag(o, job)?,
            "verify" => self.verify = Some(need()?.to_string()),
            "unlink" => self.unlink = Some(flag(o, job)?),
            // Read before the other options (it decides how sizes read); checked there.
            "kb_base" => {}
            "nrfiles" => {
                let n = parse_size(need()?, kb, &what)?;
                if n == 0 || n > MAX_NRFILES {
                    return Err(usage!(
                        "bad nrfiles={n} in [{job}]: must be 1 to {MAX_NRFILES}"
                    ));
                }
                self.nrfiles = Some(n);
            }
            "filename_format" => self.filename_format = Some(need()?.to_string()),
            "offset" => {
                let v = need()?;
                if let Some(p) = v.strip_suffix('%') {
                    self.offset_pct = Some(percent(p, v, key, job, 0)?);
                    self.offset = None;
                } else {
                    self.offset = Some(offset(v, kb, key, job)?);
                    self.offset_pct = None;
                }
            }
            "offset_increment" => {
                let v = need()?;
                if let Some(p) = v.strip_suffix('%') {
                    self.offset_increment_pct = Some(percent(p, v, key, job, 0)?);
                    self.offset_increment = None;
                } else {
                    self.offset_increment = Some(offset(v, kb, key, job)?);
                    self.offset_increment_pct = None;
                }
            }
            "stonewall" | "wait_for_previous" => self.stonewall = flag(o, job)?,
            "new_group" => self.new_group = flag(o, job)?,
            "group_reporting" => self.group_reporting = flag(o, job)?,
            "startdelay" => {
                let (lo, hi) = delay(need()?, key, job)?;
                (self.start_delay, self.start_delay_high) = (Some(lo), hi);
            }
            // fsbench runs clones as threads whatever fio's `thread` says.
            "thread" => {}
            k if super::measure::KEYS.contains(&k) => self.measured.read(o, kb, job)?,
            _ => return self.read_more(o, kb, job),
        }
        Ok(true)
    }

    /// Minimum rates, the rate process, flow, buffers, files, syncs and verification
    /// extras; false for an option this mapping does not know, or a value of one that
    /// [`why_unmapped`] refuses.
    fn read_more(&mut self, o: &Opt, kb: u64, job: &str) -> Result<bool, UsageError> {
        let key = o.key.as_str();
        let need = || {
            o.value
                .as_deref()
                .map(str::trim)
                .ok_or_else(|| usage!("{key} in [{job}] needs a value: {key}=VALUE"))
        };
        let what = format!("{key} in [{job}]");
        let count = |v: &str| parse_size(v, kb, &what);
        let m = &mut self.more;
        match key {
            "rate_min" => m.rate_min = Some(count(one_for_all(need()?, key, job)?)?),
            "rate_iops_min" => m.rate_iops_min = Some(count(one_for_all(need()?, key, job)?)?),
            "rate_cycle" => {
                let v = need()?;
                match v.parse::<u64>() {
                    Ok(ms) if (1..=3_600_000).contains(&ms) => m.rate_cycle_ms = Some(ms),
                    _ => {
                        return Err(usage!(
                            "bad rate_cycle={v} in [{job}]: expected milliseconds from 1 to 3600000"
                        ))
                    }
                }
            }
            "rate_process" => {
                m.poisson = match need()? {
                    "linear" => false,
                    "poisson" => true,
                    v => {
                        return Err(usage!(
                            "bad rate_process={v} in [{job}]: expected linear or poisson"
                        ))
                    }
                }
            }
            // flow=0 is fio's default (no flow); any other value is refused (why_unmapped).
            "flow" => return Ok(need()? == "0"),
            "verify_backlog" => m.verify_backlog = Some(count(need()?)?).filter(|&n| n > 0),
            "verify_backlog_batch" => {
                m.verify_backlog_batch = Some(count(need()?)?).filter(|&n| n > 0)
            }
            "do_verify" => m.do_verify = Some(flag(o, job)?),
            "scramble_buffers" => m.scramble_buffers = Some(flag(o, job)?),
            "opendir" => m.opendir = Some(need()?.to_string()),
            // Off (the default) maps; pre_read on is refused with the reason.
            "pre_read" => return Ok(!flag(o, job)?),
            "create_on_open" => {
                if flag(o, job)? {
                    self.notes.push(format!(
                        "create_on_open=1 in [{job}]: fio creates a file at the job's first open, inside its time; fsbench creates and lays out every file before the timed run"
                    ));
                }
            }
            "fdatasync" => m.fdatasync = Some(count(need()?)?).filter(|&n| n > 0),
            "fsync_on_close" => m.fsync_on_close = flag(o, job)?,
            "randrepeat" => m.randrepeat = Some(flag(o, job)?),
            "fallocate" => {
                let v = need()?;
                if !matches!(
                    v,
                    "none" | "native" | "posix" | "keep" | "truncate" | "0" | "1"
                ) {
                    return Err(usage!(
                        "bad fallocate={v} in [{job}]: expected none, native, posix, keep, truncate, 0 or 1"
                    ));
                }
                m.fallocate = Some(v.to_string());
            }
            _ => return self.host.read(o, job),
        }
        Ok(true)
    }
}

/// Set a table parameter from a value already read with fio's rules.
fn set(job: &mut Job, name: &str, value: &str, spelled: &str) -> Result<(), UsageError> {
    params::get(name).set(job, value, Front::Fio(spelled))
}

/// The access pattern: fio's names; `:SIZE` after a sequential one skips SIZE after each
/// I/O (`--skip`), `:N` after a random one draws a new offset every N I/Os (`--random-run`).
fn access(job: &mut Job, rw: &str, section: &str, kb: u64) -> Result<(), UsageError> {
    let (rw, skip) = match rw.split_once(':') {
        Some((rw, skip)) => (rw.trim(), Some(skip.trim())),
        None => (rw, None),
    };
    if let Some(skip) = skip {
        let what = format!("rw in [{section}]");
        let n = parse_size(skip, kb, &what)?;
        // Random: a new random offset every N I/Os (`--random-run`); sequential: N bytes
        // skipped after each I/O (`--skip`).
        let param = if rw.starts_with("rand") {
            "random_run"
        } else {
            "skip"
        };
        set(job, param, &n.to_string(), &what)?;
    }
    match rw {
        "read" | "write" | "rw" | "readwrite" | "randread" | "randwrite" | "randrw" | "trim"
        | "randtrim" | "trimwrite" => set(job, "rw", rw, &format!("rw in [{section}]")),
        _ => Err(usage!(
            "rw={rw} in [{section}] is not supported: fsbench fio maps read, write, rw (readwrite), randread, randwrite, randrw, trim, randtrim and trimwrite"
        )),
    }
}

/// Targets: `filename` (a `:` list is several targets; `\:` is a colon in a name), in
/// `directory` if given; without a filename, `nrfiles` files per clone named by
/// `filename_format` (fio's default `$jobname.$jobnum.$filenum`), clone by clone.
fn targets(spec: &Spec, name: &str, section: &str) -> Result<Vec<PathBuf>, UsageError> {
    let dir = match spec.directory.as_deref() {
        Some(d) if d.contains(':') => {
            return Err(usage!(
                "directory={d} in [{section}]: several directories are not supported; give one"
            ))
        }
        Some(d) => PathBuf::from(d),
        None => PathBuf::new(),
    };
    let nrfiles = spec.nrfiles.unwrap_or(1);
    if nrfiles.saturating_mul(spec.numjobs.max(1)) > MAX_NUMJOBS {
        return Err(usage!(
            "numjobs x nrfiles in [{section}] is more than {MAX_NUMJOBS} files: each is a target with a worker"
        ));
    }
    let listed = spec.more.opendir_files.as_deref();
    if listed.is_some() && nrfiles > 1 {
        return Err(usage!(
            "nrfiles={nrfiles} in [{section}] with opendir: the job's files are those under the directory"
        ));
    }
    let names: Vec<String> = match &spec.filename {
        Some(_) if nrfiles > 1 => {
            return Err(usage!(
            "nrfiles={nrfiles} in [{section}] with a filename: name every file in filename=a:b:c"
        ))
        }
        Some(f) => split_names(f),
        None if listed.is_some() => Vec::new(),
        None => {
            let format = spec
                .filename_format
                .as_deref()
                .unwrap_or("$jobname.$jobnum.$filenum");
            let mut names = Vec::new();
            for clone in 0..spec.numjobs.max(1) {
                for file in 0..nrfiles {
                    names.push(expand_format(format, name, clone, file, section)?);
                }
            }
            names
        }
    };
    if names.iter().any(|n| n.is_empty()) {
        return Err(usage!("filename in [{section}]: empty file name"));
    }
    if !spec.names_files() {
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = names.iter().find(|n| !seen.insert(n.as_str())) {
            return Err(usage!(
                "filename_format in [{section}] names two files {twice}: fsbench gives every clone and file its own name; use $jobnum and $filenum"
            ));
        }
    }
    let mut paths: Vec<PathBuf> = names
        .into_iter()
        .map(|n| crate::job::dash_safe(&dir.join(n)))
        .collect();
    // opendir's files besides the named ones (each once), as fio adds both.
    for p in listed.unwrap_or_default() {
        let p = crate::job::dash_safe(p);
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    Ok(paths)
}

/// Most files `opendir` may add (each is a target with a worker).
const MAX_OPENDIR_FILES: usize = MAX_NUMJOBS as usize;
/// Most directory entries `opendir` looks at, and how deep it goes.
const MAX_OPENDIR_ENTRIES: usize = 1 << 16;
const MAX_OPENDIR_DEPTH: usize = 32;

/// fio's `opendir=DIR`: every regular file under DIR, in its subdirectories too, in name
/// order. Symbolic links and special files are left out (fio's walk looks at each entry
/// without following it). Bounded in files, entries and depth.
fn files_under(dir: &str, section: &str) -> Result<Vec<PathBuf>, UsageError> {
    let fail = |p: &std::path::Path, e: std::io::Error| {
        usage!(
            "opendir={dir} in [{section}]: cannot read {}: {e}",
            p.display()
        )
    };
    let mut files = Vec::new();
    let mut seen = 0usize;
    let mut pending = vec![(PathBuf::from(dir), 0usize)];
    while let Some((d, depth)) = pending.pop() {
        for entry in std::fs::read_dir(&d).map_err(|e| fail(&d, e))? {
            let entry = entry.map_err(|e| fail(&d, e))?;
            seen += 1;
            if seen > MAX_OPENDIR_ENTRIES {
                return Err(usage!(
                    "opendir={dir} in [{section}]: more than {MAX_OPENDIR_ENTRIES} entries under it"
                ));
            }
            // The entry's own type: a symbolic link is not followed.
            let kind = entry.file_type().map_err(|e| fail(&entry.path(), e))?;
            if kind.is_file() {
                files.push(entry.path());
                if files.len() > MAX_OPENDIR_FILES {
                    return Err(usage!(
                        "opendir={dir} in [{section}]: more than {MAX_OPENDIR_FILES} files under it (each is a target with a worker)"
                    ));
                }
            } else if kind.is_dir() {
                if depth + 1 > MAX_OPENDIR_DEPTH {
                    return Err(usage!(
                        "opendir={dir} in [{section}]: directories nest deeper than {MAX_OPENDIR_DEPTH}"
                    ));
                }
                pending.push((entry.path(), depth + 1));
            }
        }
    }
    if files.is_empty() {
        return Err(usage!(
            "opendir={dir} in [{section}]: no regular file under it"
        ));
    }
    files.sort();
    Ok(files)
}

/// fio's `filename_format` with `$jobname`, `$jobnum` (the clone) and `$filenum`.
fn expand_format(
    format: &str,
    name: &str,
    clone: u64,
    file: u64,
    section: &str,
) -> Result<String, UsageError> {
    let mut out = String::new();
    let mut rest = format;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let (value, len) = if tail.starts_with("jobname") {
            (name.to_string(), "jobname".len())
        } else if tail.starts_with("jobnum") {
            (clone.to_string(), "jobnum".len())
        } else if tail.starts_with("filenum") {
            (file.to_string(), "filenum".len())
        } else {
            return Err(usage!(
                "filename_format={format} in [{section}]: fsbench knows $jobname, $jobnum and $filenum"
            ));
        };
        out.push_str(&value);
        rest = &tail[len..];
    }
    out.push_str(rest);
    Ok(out)
}

fn split_names(list: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = list.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                out.last_mut().expect("one name").push(':');
                chars.next();
            }
            ':' => out.push(String::new()),
            _ => out.last_mut().expect("one name").push(c),
        }
    }
    out
}

/// How much each clone does on each of its files: io_size or number_ios if given, else one
/// pass over `size` (fio's rule), shared equally among the clone's files; with a skip after
/// each I/O, a pass takes the I/Os that fit. A time-based job runs for its time instead.
fn io_count(spec: &Spec, bs: u64, files: u64, skip: u64) -> Option<u64> {
    if spec.time_based && spec.runtime.is_some() {
        return spec.number_ios.map(|n| (n / files).max(1));
    }
    let from_bytes = match spec.io_size {
        Some(b) => Some((b / files / bs).max(1)),
        None => spec
            .size
            .map(|s| s / files)
            .or(spec.filesize)
            .map(|f| crate::runner::opgen::seq_pass_ios(f, bs, skip)),
    };
    match (spec.number_ios.map(|n| (n / files).max(1)), from_bytes) {
        (Some(n), Some(b)) => Some(n.min(b)),
        (n, b) => n.or(b),
    }
}

/// Why an option is refused: the reason where fsbench's jobs cannot express it.
fn why_unmapped(key: &str) -> &'static str {
    match key {
        "openfiles" | "file_service_type" => {
            "fsbench gives each file a worker of its own and keeps every file open"
        }
        "thinktime_iotime" => super::measure::IOTIME_REFUSAL,
        "flow" | "flow_watermark" | "flow_sleep" => {
            "fio's flow keeps jobs' progress in a ratio through shared tokens, and fsbench has no cross-job token flow (flow=0 is accepted)"
        }
        "pre_read" => {
            "fsbench has no untimed read of the files into the cache before the job; ramp_time warms it inside the run (pre_read=0 is accepted)"
        }
        _ => super::host::why_refused(key).unwrap_or("fsbench fio does not map it"),
    }
}

/// Build one Job from a section.
fn build(section: &Section, ignore_unsupported: bool) -> Result<FioJob, UsageError> {
    let sname = section.name.as_str();
    let kb = match section.last("kb_base").and_then(|o| o.value.as_deref()) {
        None => 1024,
        Some("1024") => 1024,
        Some("1000") => 1000,
        Some(v) => {
            return Err(usage!(
                "bad kb_base={v} in [{sname}]: expected 1000 or 1024"
            ))
        }
    };
    let meta_engine = section
        .last("ioengine")
        .and_then(|o| o.value.as_deref())
        .and_then(super::meta::MetaEngine::parse);
    if let Some(engine) = meta_engine {
        return meta_job(section, engine, kb, ignore_unsupported);
    }
    let mut spec = Spec {
        numjobs: 1,
        kb,
        ..Spec::default()
    };
    let mut ignored = Vec::new();
    for o in &section.options {
        if !spec.read(o, kb, sname)? {
            if !ignore_unsupported {
                return Err(usage!(
                    "unsupported fio option '{}' in [{sname}]: {} (see docs/fio.md); --ignore-unsupported runs without it",
                    o.key,
                    why_unmapped(&o.key)
                ));
            }
            if !ignored.contains(&o.key) {
                ignored.push(o.key.clone());
            }
        }
    }
    let mut job = Job {
        block_size: 4096,
        ..Job::default()
    };
    apply(&mut job, &mut spec, sname)?;
    let reporting = spec.measured.apply(&mut job, &mut spec.notes, sname)?;
    let (part, clone_runs) = offset_part(&mut job, &spec, sname)?;
    for k in &ignored {
        spec.notes.push(format!(
            "fio option '{k}' in [{sname}] ignored (--ignore-unsupported)"
        ));
    }
    job.validate()
        .map_err(|e| usage!("job [{sname}]: {}", e.0))?;
    if let (Some(lo), Some(hi)) = (spec.start_delay, spec.start_delay_high) {
        let drawn = draw_delay(lo, hi, job.seed);
        spec.start_delay = Some(drawn);
        spec.notes.push(format!(
            "startdelay in [{sname}]: {:.6} s, drawn from {} s to {} s with the job's seed {} (its clones start together)",
            drawn.as_secs_f64(),
            lo.as_secs_f64(),
            hi.as_secs_f64(),
            job.seed
        ));
    }
    Ok(FioJob {
        job,
        part,
        notes: spec.notes,
        stonewall: spec.stonewall,
        new_group: spec.new_group,
        group_reporting: spec.group_reporting,
        start_delay: spec.start_delay.unwrap_or_default(),
        clone_runs,
        meta: None,
        reporting,
    })
}

/// A section whose ioengine is a metadata engine: an mdtest plan, carried beside a Job
/// that only names it.
fn meta_job(
    section: &Section,
    engine: super::meta::MetaEngine,
    kb: u64,
    ignore_unsupported: bool,
) -> Result<FioJob, UsageError> {
    let m = super::meta::build(section, engine, kb, ignore_unsupported)?;
    let mut job = Job::default();
    set(
        &mut job,
        "name",
        &m.name,
        &format!("name in [{}]", section.name),
    )?;
    Ok(FioJob {
        job,
        part: None,
        notes: m.notes,
        stonewall: m.stonewall,
        new_group: m.new_group,
        group_reporting: m.group_reporting,
        start_delay: std::time::Duration::ZERO,
        clone_runs: Vec::new(),
        meta: Some(m.job),
        reporting: Default::default(),
    })
}

/// Where a job's I/O falls in its files: from byte 0 (None), from an offset (a part of
/// every file), or, for clones moved apart on files of their own, one run per clone.
type Placement = (Option<RankPart>, Vec<(Job, RankPart)>);

/// The blocks from `base` on, as the runner's part of a target.
fn part_from(base: u64, blocks: u64) -> RankPart {
    RankPart {
        base,
        stride: 1,
        lane: 0,
        blocks,
        shared: false,
        created_ino: None,
        verify_seed: None,
        run_lock: false,
    }
}

/// fio's `offset` and `offset_increment`: the part of each file the job covers, the file
/// made long enough to hold it. Clone `i` starts at `offset + i * offset_increment`. Clones
/// with files of their own become one run each, over their files from their own offset;
/// clones sharing a file are threads of one run that each cover their own slice of the part
/// (random ones draw in it), which is fio's layout when the increment is each clone's size.
fn offset_part(job: &mut Job, spec: &Spec, sname: &str) -> Result<Placement, UsageError> {
    let base = spec.offset.unwrap_or(0);
    let clones = spec.numjobs.max(1);
    let inc = spec.offset_increment.filter(|_| clones > 1).unwrap_or(0);
    if base == 0 && inc == 0 {
        return Ok((None, Vec::new()));
    }
    let bs = job.block_size.max(1);
    let Some(region) = job.file_size else {
        return Err(usage!(
            "offset in [{sname}] needs a size: give size= (the bytes used from the offset on)"
        ));
    };
    let per_clone = region / bs;
    if per_clone == 0 {
        return Err(usage!(
            "size in [{sname}] is less than one block of {bs}: nothing to do from the offset"
        ));
    }
    let too_large = || usage!("offset in [{sname}]: offset and size are too large");
    let end_of = |start: u64, blocks: u64| {
        blocks
            .checked_mul(bs)
            .and_then(|b| b.checked_add(start))
            .ok_or_else(too_large)
    };
    let at = format!("offset in [{sname}]");
    // A percentage's start rounded up to the block size, as fio rounds it.
    let round = |start: u64| match spec.round_starts {
        true => start.checked_next_multiple_of(bs).ok_or_else(too_large),
        false => Ok(start),
    };
    if inc > 0 && !spec.names_files() {
        let files = (job.targets.len() / clones as usize).max(1);
        let mut runs = Vec::new();
        let mut last_end = 0;
        for (i, own) in job.targets.chunks(files).enumerate() {
            let start = round(
                inc.checked_mul(i as u64)
                    .and_then(|o| o.checked_add(base))
                    .ok_or_else(too_large)?,
            )?;
            let mut one = job.clone();
            one.targets = own.to_vec();
            last_end = end_of(start, per_clone)?;
            set(&mut one, "size", &last_end.to_string(), &at)?;
            runs.push((one, part_from(start, per_clone)));
        }
        set(job, "size", &last_end.to_string(), &at)?;
        return Ok((None, runs));
    }
    let base = round(base)?;
    let blocks = if inc == 0 {
        per_clone
    } else if inc != per_clone * bs {
        return Err(usage!(
            "offset_increment={inc} in [{sname}]: fsbench places the clones of a shared file side by side, so it takes offset_increment equal to each clone's size ({})",
            per_clone * bs
        ));
    } else {
        // Side by side, each clone in its own part: random clones draw in theirs.
        if job.access.is_random() {
            set(
                job,
                "random_slices",
                "true",
                &format!("offset_increment in [{sname}]"),
            )?;
        }
        per_clone * clones
    };
    set(job, "size", &end_of(base, blocks)?.to_string(), &at)?;
    Ok((Some(part_from(base, blocks)), Vec::new()))
}

/// Everything the spec says, set on the Job through the parameter table.
fn apply(job: &mut Job, spec: &mut Spec, sname: &str) -> Result<(), UsageError> {
    let at = |k: &str| format!("{k} in [{sname}]");
    let name = spec.name.clone().unwrap_or_else(|| sname.to_string());
    set(job, "name", &name, &at("name"))?;
    access(job, spec.rw.as_deref().unwrap_or("read"), sname, spec.kb)?;
    // fio's sequencer acts only on the runs of `rw=randread:N`; elsewhere every I/O is a
    // run of its own and it changes nothing.
    if spec.rw_identical && job.random_run.is_some() {
        set(job, "run_same_offset", "true", &at("rw_sequencer"))?;
    }
    // fio's order of precedence: bssplit, then bsrange, then bs.
    if let Some(s) = &spec.bssplit {
        let split = match spec.bs_unaligned {
            true => s.clone(),
            false => {
                let (rounded, changed) = bssplit_rounded(s);
                for (written, issued) in changed {
                    spec.notes.push(format!(
                        "bssplit in [{sname}]: {written}-byte I/Os are issued as {issued} bytes, a multiple of the direction's smallest size, as fio does without bs_unaligned"
                    ));
                }
                rounded
            }
        };
        set(job, "bssplit", &split, &at("bssplit"))?;
    } else if let Some(r) = &spec.bsrange {
        if spec.bs_unaligned
            && r.split(',')
                .any(|d| d.split_once('-').is_some_and(|(a, b)| a != b))
        {
            return Err(usage!(
                "bs_unaligned with bsrange in [{sname}] is not supported: fio then draws any byte count in the range, and fsbench's I/O sizes are a table of at most 1024 sizes, each with its own figures in the Result; use bssplit with the sizes you want"
            ));
        }
        set(job, "bsrange", r, &at("bsrange"))?;
    } else if let Some(bs) = &spec.bs {
        set(job, "bs", bs, &at("bs"))?;
    }
    // A pass over `size` takes as many I/Os as the mean size goes into it (bssplit's mean).
    let bs = (job.mean_io_size() as u64).max(1);
    if let Some(p) = spec.rwmixread {
        set(job, "rwmix", &p.to_string(), &at("rwmixread"))?;
    }
    if let Some(d) = spec.more.opendir.clone() {
        spec.more.opendir_files = Some(files_under(&d, sname)?);
    }
    job.targets = targets(spec, &name, sname)?;
    // A clone's `size` is shared among its files (`filename=a:b`, or `nrfiles`); without a
    // filename every clone has files of its own.
    let files = if spec.names_files() {
        job.targets.len() as u64
    } else {
        spec.nrfiles.unwrap_or(1)
    };
    if files > 1 && !spec.names_files() {
        spec.notes.push(format!(
            "nrfiles={files} in [{sname}]: each file has a worker of its own, where fio's clone goes round its files one I/O at a time; the operations and bytes per file are the same"
        ));
    }
    if spec.size_pct.is_some() || spec.offset_pct.is_some() || spec.offset_increment_pct.is_some() {
        resolve_percentages(spec, &job.targets, job.block_size.max(1), files, sname)?;
    }
    let per_file = spec.filesize.or(spec.size.map(|s| s / files));
    apply_host(job, spec, per_file, sname)?;
    if let Some(s) = per_file {
        set(job, "size", &s.to_string(), &at("size"))?;
    }
    if let Some(n) = io_count(spec, bs, files, job.skip.unwrap_or(0)) {
        set(job, "count", &n.to_string(), &at("size"))?;
    }
    if spec.names_files() && spec.numjobs > 1 {
        set(job, "threads", &spec.numjobs.to_string(), &at("numjobs"))?;
    }
    apply_engine(job, spec, sname)?;
    apply_time(job, spec, sname)?;
    apply_random(job, spec, sname)?;
    apply_data(job, spec, sname)?;
    if spec.unlink == Some(false) {
        set(job, "keep", "true", &at("unlink"))?;
    }
    apply_more(job, spec, sname)?;
    rate_each_direction(job, spec, sname)
}

/// fio paces each direction of a mixed job to a single `rate` or `rate_iops` value on its
/// own (`rate_iops=400` with `rwmixread=95`: 400 reads and 400 writes a second), as if the
/// value were given for reads and for writes. fsbench's one value paces all I/Os together,
/// so a mixed job takes it per direction; with `verify` (whose loop draws each I/O ahead and
/// takes one schedule) the I/Os stay on one schedule, and a note says so.
fn rate_each_direction(job: &mut Job, spec: &mut Spec, sname: &str) -> Result<(), UsageError> {
    if !job.access.is_mixed() {
        return Ok(());
    }
    for (key, param, value) in [
        ("rate", "rate_bytes", spec.rate.clone()),
        ("rate_iops", "rate_iops", spec.rate_iops.clone()),
    ] {
        let Some(v) = value.filter(|v| !v.contains(',')) else {
            continue;
        };
        if job.verifying() {
            spec.notes.push(format!(
                "{key}={v} in [{sname}]: fio paces reads and writes each to it; with verify fsbench paces them together"
            ));
            continue;
        }
        set(
            job,
            param,
            &format!("{v},{v}"),
            &format!("{key} in [{sname}]"),
        )?;
    }
    Ok(())
}

impl Spec {
    /// The job names its files (`filename`, `opendir`): clones share them, and `size` is
    /// spread over them.
    fn names_files(&self) -> bool {
        self.filename.is_some() || self.more.opendir.is_some()
    }
}

/// Minimum rates, the rate process, buffers, syncs, seeds and verification extras.
fn apply_more(job: &mut Job, spec: &mut Spec, sname: &str) -> Result<(), UsageError> {
    let at = |k: &str| format!("{k} in [{sname}]");
    let m = &spec.more;
    let mut notes = Vec::new();
    if let Some(b) = m.rate_min {
        set(job, "rate_min", &b.to_string(), &at("rate_min"))?;
    }
    if let Some(n) = m.rate_iops_min {
        set(job, "rate_iops_min", &n.to_string(), &at("rate_iops_min"))?;
    }
    // As fio, a minimum above the job's own rate is refused: no cycle could keep it.
    for (min, key, measure) in [
        (m.rate_min, "rate_min", crate::job::RateMeasure::Bytes),
        (
            m.rate_iops_min,
            "rate_iops_min",
            crate::job::RateMeasure::Iops,
        ),
    ] {
        let Some(min) = min else { continue };
        let cap = (0..3).filter_map(|d| job.rate.of(d).get(measure)).min();
        if let Some(cap) = cap.filter(|&c| min > c) {
            let rate = if key == "rate_min" {
                "rate"
            } else {
                "rate_iops"
            };
            return Err(usage!(
                "{key}={min} in [{sname}] exceeds {rate}={cap}: no cycle could keep it (fio refuses it too)"
            ));
        }
    }
    match m.rate_cycle_ms {
        Some(c) if job.rate.has_min() => {
            set(job, "rate_cycle", &format!("{c}ms"), &at("rate_cycle"))?
        }
        Some(c) => notes.push(format!(
            "rate_cycle={c} in [{sname}] has no effect without rate_min or rate_iops_min (as in fio)"
        )),
        None => {}
    }
    if m.poisson {
        if job.rate.is_on() {
            set(job, "rate_process", "poisson", &at("rate_process"))?;
        } else {
            notes.push(format!(
                "rate_process=poisson in [{sname}] has no effect without rate or rate_iops (as in fio)"
            ));
        }
    }
    match (m.verify_backlog, m.verify_backlog_batch) {
        (Some(n), batch) if job.verifying() => {
            if let Some(b) = batch.filter(|&b| b != n) {
                return Err(usage!(
                    "verify_backlog_batch={b} in [{sname}] is not verify_backlog={n}: fio would then check {} of each backlog's blocks, and fsbench checks every block of its backlog; give verify_backlog_batch={n} or leave it out",
                    if b < n { "only some" } else { "some twice" }
                ));
            }
            set(job, "verify_backlog", &n.to_string(), &at("verify_backlog"))?;
            notes.push(format!(
                "verify_backlog={n} in [{sname}]: every {n} writes of a worker are read back and checked while the run goes, as in fio; fsbench reports those reads under verify (backlog_blocks), not among the job's reads, and checks every written block again after the run"
            ));
        }
        (Some(_), _) | (None, Some(_)) => notes.push(format!(
            "verify_backlog in [{sname}] has no effect without verify (and verify_backlog_batch without verify_backlog), as in fio"
        )),
        (None, None) => {}
    }
    let verify_named = spec
        .verify
        .as_deref()
        .is_some_and(|v| !matches!(v.trim(), "0" | "null"));
    if m.do_verify == Some(false) && verify_named {
        notes.push(format!(
            "do_verify=0 in [{sname}]: nothing is checked, as in fio (fsbench then writes its usual data, not verification blocks)"
        ));
    }
    let writes = job.access.read_pct(job.read_pct) < 100 || job.engine.changes_space();
    if m.scramble_buffers == Some(true) && writes && !job.shapes_data() && !job.verifying() {
        notes.push(format!(
            "scramble_buffers in [{sname}]: fio changes a few bytes in every 512 of each write so that blocks differ; fsbench writes its buffers as they were filled before the run (refill_buffers gives every write fresh random bytes)"
        ));
    }
    if m.fsync_on_close {
        set(job, "fsync", "true", &at("fsync_on_close"))?;
        if job.repeats > 1 {
            notes.push(format!(
                "fsync_on_close in [{sname}]: fsbench fsyncs each file once after its last write, where fio fsyncs at every close (once per loop)"
            ));
        }
    }
    if m.randrepeat == Some(false) && spec.randseed.is_none() {
        let seed = clock_seed();
        set(job, "seed", &seed.to_string(), &at("randrepeat"))?;
        notes.push(format!(
            "randrepeat=0 in [{sname}]: seed {seed} drawn from the clock, so the offsets differ from run to run (give randseed= to repeat this run)"
        ));
    }
    if let Some(f) = m.fallocate.as_deref().filter(|_| writes) {
        notes.push(format!(
            "fallocate={f} in [{sname}]: fsbench does not size a file before a job that writes it: a sequential write job writes into an empty file, other jobs over data written first, where fio first sizes the file (and with native, posix, keep or 1 allocates it)"
        ));
    }
    spec.notes.extend(notes);
    Ok(())
}

/// A seed from the clock, for `randrepeat=0` (offsets that differ from run to run).
fn clock_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    crate::runner::opgen::Rng::new(t ^ ((std::process::id() as u64) << 32)).next_u64()
}

/// fio's options on opening and creating files and on CPUs (fio/host.rs), once the targets
/// are known; `per_file` is the bytes of I/O on each file.
fn apply_host(
    job: &mut Job,
    spec: &mut Spec,
    per_file: Option<u64>,
    sname: &str,
) -> Result<(), UsageError> {
    let at = |k: &str| format!("{k} in [{sname}]");
    let notes = std::mem::take(&mut spec.host.notes);
    spec.notes.extend(notes);
    if spec.host.dsync {
        set(job, "dsync", "true", &at("dsync"))?;
    }
    if let Some(c) = spec.host.cpus.clone() {
        set(job, "cpus", &c, &at("cpus_allowed"))?;
    }
    if let Some(n) = spec.host.nice {
        set(job, "nice", &n.to_string(), &at("nice"))?;
    }
    // What each target is now: its length if it is a file, None if it does not exist.
    let now = |t: &PathBuf| -> Result<Option<u64>, UsageError> {
        match std::fs::symlink_metadata(t) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(usage!("{}: {e}", t.display())),
        }
    };
    if spec.host.no_create {
        for t in &job.targets {
            if now(t)?.is_none() {
                return Err(usage!(
                    "allow_file_create=0 in [{sname}]: {} does not exist, and the job may not create it",
                    t.display()
                ));
            }
        }
    }
    if spec.host.file_append {
        let end = append_offset(&job.targets, sname)?;
        spec.offset = Some(end).filter(|o| *o > 0);
        spec.notes.push(format!(
            "file_append in [{sname}]: I/O from byte {end}, the end of the files when the command started"
        ));
    }
    if spec.host.overwrite {
        let engine = spec.engine.as_ref().map_or(job.engine, |e| e.0);
        // fsbench lays out a file first for every job but a plain sequential write.
        let plain_write = job.access == crate::job::Access::Write
            && engine != EngineKind::Mmap
            && !engine.changes_space();
        let want = per_file
            .unwrap_or(0)
            .saturating_add(spec.offset.unwrap_or(0));
        if plain_write {
            for t in &job.targets {
                if now(t)?.is_none_or(|len| len < want) {
                    return Err(usage!(
                        "overwrite=1 in [{sname}]: {} does not hold the {want} bytes the job overwrites, and fsbench lays out a file before a sequential write only when it is read too; write the file first (a job with rw=write and stonewall before this one)",
                        t.display()
                    ));
                }
            }
        }
        spec.notes.push(format!(
            "overwrite=1 in [{sname}]: the writes overwrite data laid out before the job is timed, as in fio"
        ));
    }
    Ok(())
}

/// fio's `file_append`: I/O from the end of each file, as if `offset` were its size. A file
/// that does not exist yet is appended to from byte 0; the files must be of one size (one
/// offset serves them all in fsbench).
fn append_offset(targets: &[PathBuf], sname: &str) -> Result<u64, UsageError> {
    let mut common: Option<(u64, &PathBuf)> = None;
    for t in targets {
        let len = match std::fs::symlink_metadata(t) {
            Ok(m) if m.is_file() => m.len(),
            Ok(_) => {
                return Err(usage!(
                "file_append in [{sname}]: {} is not a regular file (fio appends to files only)",
                t.display()
            ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(usage!("file_append in [{sname}]: {}: {e}", t.display())),
        };
        match common {
            Some((l, first)) if l != len => {
                return Err(usage!(
                    "file_append in [{sname}]: the files end at different bytes ({} at {l}, {} at {len}); fsbench appends to files of one size",
                    first.display(),
                    t.display()
                ))
            }
            _ => common = Some((len, t)),
        }
    }
    Ok(common.map_or(0, |c| c.0))
}

fn apply_engine(job: &mut Job, spec: &mut Spec, sname: &str) -> Result<(), UsageError> {
    let at = |k: &str| format!("{k} in [{sname}]");
    if let Some((e, _)) = spec.engine {
        set(job, "engine", e.name(), &at("ioengine"))?;
    }
    if let Some(d) = spec.iodepth {
        if d > 1
            && matches!(
                job.engine,
                EngineKind::Sync | EngineKind::Mmap | EngineKind::Falloc | EngineKind::Ftruncate
            )
        {
            // fio's synchronous engines also have one I/O in flight whatever iodepth says.
            spec.notes.push(format!(
                "iodepth={d} in [{sname}]: the {} engine has one I/O in flight, as in fio",
                job.engine.name()
            ));
        } else {
            set(job, "qd", &d.to_string(), &at("iodepth"))?;
        }
    }
    if spec.direct == Some(true) {
        set(job, "cache", "direct", &at("direct"))?;
    }
    match spec.sync.as_deref().map(str::trim) {
        None | Some("0" | "none") => {}
        Some("1" | "sync") => set(job, "sync", "true", &at("sync"))?,
        Some("dsync") => set(job, "dsync", "true", &at("sync"))?,
        Some(v) => {
            return Err(usage!(
                "bad sync={v} in [{sname}]: expected 0, 1, sync or dsync"
            ))
        }
    }
    if let Some(i) = spec.invalidate {
        set(
            job,
            "invalidate",
            if i { "true" } else { "false" },
            &at("invalidate"),
        )?;
    }
    if spec.end_fsync {
        set(job, "fsync", "true", &at("end_fsync"))?;
    }
    if let Some(r) = &spec.rate {
        set(job, "rate_bytes", r, &at("rate"))?;
    }
    if let Some(r) = &spec.rate_iops {
        set(job, "rate_iops", r, &at("rate_iops"))?;
    }
    Ok(())
}

fn apply_time(job: &mut Job, spec: &Spec, sname: &str) -> Result<(), UsageError> {
    let at = |k: &str| format!("{k} in [{sname}]");
    if let Some(t) = &spec.runtime {
        set(job, "time", t, &at("runtime"))?;
    } else if spec.time_based {
        return Err(usage!(
            "time_based in [{sname}] needs a runtime: give runtime=SECONDS"
        ));
    }
    if let Some(t) = &spec.ramp {
        set(job, "ramp", t, &at("ramp_time"))?;
    }
    if let Some(n) = spec.loops {
        set(job, "nrep", &n.to_string(), &at("loops"))?;
    }
    Ok(())
}

fn apply_random(job: &mut Job, spec: &Spec, sname: &str) -> Result<(), UsageError> {
    let at = |k: &str| format!("{k} in [{sname}]");
    if let Some(s) = spec.randseed {
        set(job, "seed", &s.to_string(), &at("randseed"))?;
    }
    if let Some(d) = &spec.distribution {
        set(job, "distribution", d, &at("random_distribution"))?;
    }
    if let Some(a) = spec.blockalign {
        set(job, "block_align", &a.to_string(), &at("blockalign"))?;
    }
    // fio's default: random I/O touches every block once per pass (a random map), unless
    // norandommap or a skewed distribution.
    // With runs of I/Os from each random offset (`rw=randread:N`) there is no map to keep.
    let map = spec.random_map.unwrap_or(
        job.access.is_random() && job.distribution.is_uniform() && job.random_run.is_none(),
    );
    if map && job.access.is_random() {
        set(job, "random_map", "true", &at("norandommap"))?;
    }
    Ok(())
}

/// `fsync=N` and `fdatasync=N`: a sync of the files after every N writes of a worker (with
/// verification, fsync=N also acknowledges the writes before it). A job that writes
/// nothing syncs nothing, in fio as here: the option is left out with a note.
fn apply_sync_every(job: &mut Job, spec: &mut Spec, sname: &str) -> Result<(), UsageError> {
    let fsync = spec.fsync.filter(|&n| n > 0);
    let fdatasync = spec.more.fdatasync;
    let (key, param, n) = match (fsync, fdatasync) {
        (None, None) => return Ok(()),
        (Some(a), Some(b)) => {
            return Err(usage!(
                "fsync={a} and fdatasync={b} in [{sname}]: fsbench syncs the files one way every N writes; keep one of them"
            ))
        }
        (Some(n), None) => ("fsync", "fsync_every", n),
        (None, Some(n)) => ("fdatasync", "fdatasync_every", n),
    };
    if key == "fdatasync" && job.verifying() {
        return Err(usage!(
            "fdatasync={n} in [{sname}]: fsbench's verification acknowledges writes with an fsync; use fsync={n}"
        ));
    }
    if job.access.read_pct(job.read_pct) == 100 {
        spec.notes.push(format!(
            "{key}={n} in [{sname}] ignored: the job writes nothing, so there is nothing to sync"
        ));
        return Ok(());
    }
    set(job, param, &n.to_string(), &format!("{key} in [{sname}]"))
}

fn apply_data(job: &mut Job, spec: &mut Spec, sname: &str) -> Result<(), UsageError> {
    let at = |k: &str| format!("{k} in [{sname}]");
    if let Some(v) = spec.verify.as_deref().map(str::trim) {
        // do_verify=0: fio writes and checks nothing (a note says so, see apply_more).
        if !matches!(v, "0" | "null") && spec.more.do_verify != Some(false) {
            set(job, "verify", "true", &at("verify"))?;
            spec.notes.push(format!(
                "verify={v} in [{sname}] runs fsbench's verification: self-describing blocks checked while reading and after the run (stronger than a checksum)"
            ));
        }
    }
    apply_sync_every(job, spec, sname)?;
    if let Some(p) = spec.compress {
        set(
            job,
            "buffer_compress",
            &p.to_string(),
            &at("buffer_compress_percentage"),
        )?;
    }
    if let Some(p) = spec.dedupe {
        set(job, "dedupe", &p.to_string(), &at("dedupe_percentage"))?;
    }
    // As in fio, the mode and the working set only matter with a dedupe percentage, and the
    // working set only in the working_set mode.
    let mode = spec.dedupe_mode.as_ref().filter(|_| spec.dedupe.is_some());
    if let Some(m) = mode {
        set(job, "dedupe_mode", m, &at("dedupe_mode"))?;
    }
    let working_set = mode.is_some_and(|m| m == "working_set" || m == "working-set");
    match spec.dedupe_working_set {
        Some(p) if working_set => set(
            job,
            "dedupe_working_set",
            &p.to_string(),
            &at("dedupe_working_set_percentage"),
        )?,
        Some(p) => spec.notes.push(format!(
            "dedupe_working_set_percentage={p} in [{sname}] has no effect without dedupe_percentage and dedupe_mode=working_set (as in fio)"
        )),
        None => {}
    }
    if let (Some(m), None) = (&spec.dedupe_mode, mode) {
        spec.notes.push(format!(
            "dedupe_mode={m} in [{sname}] has no effect without dedupe_percentage (as in fio)"
        ));
    }
    // zero_buffers and refill_buffers choose what writes carry: on a job whose writes carry
    // data of fsbench's choosing; elsewhere (reads only, verification blocks, no data)
    // there is nothing for them to fill, as in fio.
    let fillable = job.access.read_pct(job.read_pct) < 100
        && !job.verifying()
        && job.engine != EngineKind::Null
        && !job.engine.changes_space()
        && !job.shapes_data();
    if let Some(p) = &spec.pattern {
        set(job, "buffer_pattern", p, &at("buffer_pattern"))?;
    } else if spec.zero_buffers && fillable {
        set(job, "buffer_pattern", "zero", &at("zero_buffers"))?;
    } else if spec.refill_buffers && fillable {
        set(job, "buffer_pattern", "random", &at("refill_buffers"))?;
    }
    Ok(())
}

/// Map every job section; the first refusal stops.
pub(crate) fn map_sections(
    sections: &[Section],
    ignore_unsupported: bool,
) -> Result<Vec<FioJob>, UsageError> {
    sections
        .iter()
        .map(|s| build(s, ignore_unsupported))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_text;
    use super::*;
    use crate::job::{Access, CachePolicy};
    use proptest::prelude::*;

    /// The one line refusing a job `[j]` of `text` on a 1 MiB file `f`.
    fn refusal(text: &str) -> String {
        map(&format!("[j]\n{text}\nsize=1m\nfilename=f\n"))
            .unwrap_err()
            .0
    }

    fn map(text: &str) -> Result<Vec<FioJob>, UsageError> {
        map_sections(&parse_text(text, &|_| None)?, false)
    }

    #[test]
    fn sizes_follow_fios_rules() {
        let s = |v, b| parse_size(v, b, "x").unwrap();
        assert_eq!(s("4k", 1024), 4096);
        assert_eq!(s("4K", 1024), 4096);
        assert_eq!(s("4KB", 1024), 4096);
        assert_eq!(s("4KiB", 1024), 4000);
        assert_eq!(s("4KB", 1000), 4000);
        assert_eq!(s("4KiB", 1000), 4096);
        assert_eq!(s("1m", 1024), 1 << 20);
        assert_eq!(s("0x10", 1024), 16);
        assert_eq!(s("512", 1024), 512);
        assert!(parse_size("1x", 1024, "x").is_err());
        assert!(parse_size("99999999p", 1024, "x").is_err());
    }

    #[test]
    fn a_full_section_maps_onto_the_job() {
        let j = map("[global]\nbs=8k\nsize=1m\ndirectory=/tmp/d\n[j1]\nrw=randrw\nrwmixwrite=30\nioengine=libaio\niodepth=8\ndirect=1\nrandseed=7\nloops=2\nnumjobs=2\nfilename=a:b\n")
            .unwrap();
        let j = &j[0].job;
        assert_eq!(j.name, "j1");
        assert_eq!(j.access, Access::RandRw);
        assert_eq!(j.read_pct, 70);
        assert_eq!(
            (j.block_size, j.file_size, j.io_count),
            (8192, Some(1 << 19), Some(64))
        );
        assert_eq!((j.engine, j.queue_depth), (EngineKind::Uring, 8));
        assert_eq!(j.cache, CachePolicy::Direct);
        assert_eq!((j.seed, j.repeats, j.threads), (7, 2, 2));
        assert_eq!(
            j.targets,
            vec![PathBuf::from("/tmp/d/a"), PathBuf::from("/tmp/d/b")]
        );
        assert!(j.random_map);
    }

    #[test]
    fn per_direction_bs_and_bsrange_map_by_fios_rules() {
        let job = |text: &str| map(text).unwrap().remove(0).job;
        let j = job("[j]\nrw=randrw\nbs=4k,64k\nsize=1m\nfilename=f\n");
        assert_eq!(j.block_sizes.map(|b| b.dirs), Some([4096, 65536, 65536]));
        // An empty field is fio's default of 4k; a trailing comma leaves trims at it.
        let j = job("[j]\nrw=randrw\nbs=,8k,\nsize=1m\nfilename=f\n");
        assert_eq!(j.block_sizes.map(|b| b.dirs), Some([4096, 8192, 4096]));
        let j = job("[j]\nrw=randrw\nbs=8k,8k\nsize=1m\nfilename=f\n");
        assert_eq!((j.block_size, j.block_sizes), (8192, None));
        let j = job("[j]\nrw=randread\nblocksize_range=4k:16k,64k-128k\nsize=1m\nfilename=f\n");
        assert_eq!(
            j.bsrange.map(|r| r.dirs),
            Some([(4096, 16384), (65536, 131072), (65536, 131072)])
        );
        // fio's precedence: bssplit over bsrange over bs.
        let j = job("[j]\nbs=4k,8k\nbsrange=4k-8k\nsize=1m\nfilename=f\n");
        assert!(j.bsrange.is_some() && j.block_sizes.is_none());
        let j = job("[j]\nbsrange=4k-8k\nbssplit=4k/100\nsize=1m\nfilename=f\n");
        assert!(j.bssplit.is_some() && j.bsrange.is_none());
        // A pass over size is counted in the mean I/O: 1m of 4k..16k reads (10k mean).
        let j = job("[j]\nrw=read\nbsrange=4k-16k\nsize=1m\nfilename=f\n");
        assert_eq!(j.mean_io_size(), 10240.0);
    }

    #[test]
    fn bssplit_blockalign_and_trims_map_onto_the_job() {
        let j = map("[j]\nrw=randtrim\nbssplit=4k/50:16k/50,64k/100\nba=8k\nsize=1m\nfilename=f\n")
            .unwrap();
        let j = &j[0].job;
        assert_eq!(j.access, Access::RandTrim);
        assert_eq!(
            j.bssplit.as_ref().map(|s| s.spec()).as_deref(),
            Some("4k/50:16k/50,64k/100")
        );
        assert_eq!(j.block_align, Some(8192));
        // One pass over size=1m in I/Os of the trims' mean size (64k).
        assert_eq!(j.io_count, Some(16));
        // fio's units: with kb_base=1000, 4k is 4000 bytes.
        let j =
            map("[j]\nkb_base=1000\nrw=trimwrite\nbssplit=4k/100\nsize=1m\nfilename=f\n").unwrap();
        assert_eq!(j[0].job.access, Access::TrimWrite);
        assert_eq!(j[0].job.bssplit.as_ref().unwrap().max_size(), 4000);
        for (text, want) in [
            ("bssplit=4k/60:8k/30", "add up to 90, not 100"),
            ("bssplit=4k/:8k/50", "percentage ''"),
            ("bssplit=4k", "has no /PERCENT"),
            (
                "rw=randread:8\nrw_sequencer=same",
                "sequential or identical",
            ),
            ("rw=randread:8\nnorandommap=0", "--random-run 8 follows"),
        ] {
            let e = refusal(text);
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn offset_modifiers_map_onto_skips_and_random_runs() {
        let job = |text: &str| map(text).unwrap().remove(0).job;
        // Sequential: bytes skipped after each I/O; one pass takes what fits (fio's count).
        let j = job("[j]\nrw=write:8k\nsize=64k\nfilename=f\n");
        assert_eq!(
            (j.skip, j.random_run, j.io_count),
            (Some(8192), None, Some(6))
        );
        // Random: a new offset every N I/Os, the count unchanged, and no random map.
        let j = job("[j]\nrw=randread:8\nsize=64k\nfilename=f\nrw_sequencer=sequential\n");
        assert_eq!(
            (j.skip, j.random_run, j.io_count),
            (None, Some(8), Some(16))
        );
        assert!(!j.random_map);
        assert!(!j.run_same_offset);
        // rw_sequencer=identical: the run repeats its offset; without a run, nothing to do.
        let j = job("[j]\nrw=randwrite:4\nsize=64k\nfilename=f\nrw_sequencer=identical\n");
        assert_eq!((j.random_run, j.run_same_offset), (Some(4), true));
        let j = job("[j]\nrw=randwrite\nsize=64k\nfilename=f\nrw_sequencer=identical\n");
        assert_eq!((j.random_run, j.run_same_offset), (None, false));
    }

    #[test]
    fn clones_without_a_filename_get_their_own_files() {
        let j = map("[w]\nrw=write\nsize=64k\nnumjobs=3\n").unwrap();
        let j = &j[0].job;
        assert_eq!(j.threads, 1);
        assert_eq!(
            j.targets,
            vec![
                PathBuf::from("w.0.0"),
                PathBuf::from("w.1.0"),
                PathBuf::from("w.2.0")
            ]
        );
        assert_eq!(j.io_count, Some(16));
    }

    #[test]
    fn refusals_name_option_and_section() {
        for (text, want) in [
            (
                "[a]\nsize=1m\nopenfiles=4\n",
                "unsupported fio option 'openfiles' in [a]",
            ),
            ("[a]\nsize=1m\nbs=4k,8k,8k,8k\n", "at most three values"),
            ("[a]\nsize=1m\nbs=4k-8k\n", "is a range"),
            ("[a]\nsize=1m\nbsrange=4k\n", "is not a range"),
            ("[a]\nsize=1m\nbsrange=8k-4k\n", "ends below its start"),
            (
                "[a]\nsize=1m\nbsrange=5k-7k\nba=8k\n",
                "no multiple of the alignment",
            ),
            (
                "[a]\nsize=1m\nrw=discard\n",
                "rw=discard in [a] is not supported",
            ),
            ("[a]\nsize=1m\nioengine=splice\n", "ioengine=splice in [a]"),
            (
                "[a]\nsize=1m\nrw=write\nioengine=mmap\nfsync=4\n",
                "use --engine sync or uring",
            ),
            ("[a]\nsize=1m\nkb_base=10\n", "kb_base"),
            ("[a]\nsize=10%\n", "is a share of an existing file"),
            ("[a]\nsize=0%\n", "from 1 to 100"),
            ("[a]\noffset=101%\n", "from 0 to 100"),
            (
                "[a]\nsize=1m\noffset_increment=5%\n",
                "is a share of an existing file",
            ),
        ] {
            let e = map(text).unwrap_err().0;
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let ok = map_sections(
            &parse_text("[a]\nsize=1m\nopenfiles=4\n", &|_| None).unwrap(),
            true,
        )
        .unwrap();
        assert!(ok[0]
            .notes
            .iter()
            .any(|n| n.contains("'openfiles' in [a] ignored")));
    }

    /// Every option the mapping claims is read, and docs/fio.md describes it.
    #[test]
    fn every_supported_option_is_read_and_documented() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/fio.md")).unwrap();
        for k in SUPPORTED.iter().chain(crate::fio::measure::KEYS) {
            let mut spec = Spec::default();
            let sample = match *k {
                "flow" | "create_on_open" | "pre_read" => "0",
                "rate_process" => "poisson",
                "fallocate" => "native",
                "ioengine" => "psync",
                "rw" | "readwrite" => "read",
                "rw_sequencer" => "sequential",
                "random_distribution" => "random",
                "bssplit" => "4k/100",
                "bsrange" | "blocksize_range" => "4k-8k",
                "steadystate" | "ss" => "iops:5%",
                "percentile_list" => "50:99",
                "random_generator" => "lfsr",
                "clocksource" => "clock_gettime",
                "cpus_allowed_policy" => "shared",
                _ => "1",
            };
            let o = Opt {
                key: k.to_string(),
                value: Some(sample.into()),
            };
            assert!(spec.read(&o, 1024, "j").unwrap(), "{k} not read");
            assert!(doc.contains(&format!("`{k}`")), "docs/fio.md lacks `{k}`");
        }
    }

    proptest! {
        #[test]
        fn mapping_never_panics(lines in prop::collection::vec(
            "(bs|size|rw|numjobs|iodepth|ioengine|rate|kb_base|filename|verify|fsync|runtime|time_based|buffer_pattern|nrfiles|filename_format|offset|offset_increment)=[-0-9a-zKMGi:,%\"x]{0,8}", 0..10)) {
            let text = format!("[j]\n{}\n", lines.join("\n"));
            if let Ok(s) = parse_text(&text, &|_| None) {
                let _ = map_sections(&s, true);
                let _ = map_sections(&s, false);
            }
        }

        #[test]
        fn sizes_never_panic(v in "\\PC{0,12}") {
            let _ = parse_size(&v, 1024, "x");
            let _ = parse_size(&v, 1000, "x");
        }
    }

    #[test]
    fn bssplit_sizes_round_down_to_the_smallest_as_fio_does() {
        // 6k and 10k are not multiples of 4k: they become 4k and 8k, shares added up.
        let (split, changed) = bssplit_rounded("4096/40:6144/30:10240/30,8192/100");
        assert_eq!(split, "4096/70:8192/30,8192/100");
        assert_eq!(changed, vec![(6144, 4096), (10240, 8192)]);
        // Multiples of the smallest are kept; what does not read is left to the Job's parser.
        assert_eq!(bssplit_rounded("4096/50:12288/50").1, vec![]);
        assert_eq!(bssplit_rounded("4k/").0, "4k/");
        let job = |text: &str| map(text).unwrap().remove(0).job;
        let j = job("[j]\nbssplit=4k/50:6k/50\nbs_unaligned\nsize=1m\nfilename=f\n");
        assert_eq!(j.bssplit.unwrap().spec(), "4k/50:6k/50");
    }

    #[test]
    fn minimum_rates_poisson_and_verification_extras_map_onto_the_job() {
        let job = |text: &str| map(text).unwrap().remove(0);
        let j = job("[j]\nrate_iops=500\nrate_min=1m\nrate_iops_min=100\nrate_cycle=250\nrate_process=poisson\nsize=1m\nfilename=f\n");
        let r = &j.job.rate;
        assert_eq!(
            (r.min_bytes_per_sec, r.min_iops),
            (Some(1 << 20), Some(100))
        );
        assert_eq!(r.cycle_ms, Some(250));
        assert_eq!(r.process, crate::job::RateProcess::Poisson);
        // Without a rate or a minimum, the process and the cycle have nothing to act on.
        let j = job("[j]\nrate_process=poisson\nrate_cycle=250\nsize=1m\nfilename=f\n");
        assert!(j.job.rate.process.is_linear() && j.job.rate.cycle_ms.is_none());
        assert_eq!(
            j.notes.iter().filter(|n| n.contains("no effect")).count(),
            2
        );
        let j = job("[j]\nrw=write\nverify=crc32c\nverify_backlog=16\nsize=1m\nfilename=f\n");
        assert_eq!(j.job.verify_backlog, Some(16));
        let j = job("[j]\nrw=write\nverify=crc32c\ndo_verify=0\nsize=1m\nfilename=f\n");
        assert!(!j.job.verifying());
        let j = job("[j]\nrw=write\nfsync_on_close=1\nsize=1m\nfilename=f\n");
        assert!(j.job.fsync);
        // fsync=N and fdatasync=N map without verify; a job that writes nothing drops them.
        let j = job("[j]\nrw=randwrite\nfsync=4\nsize=1m\nfilename=f\n");
        assert_eq!((j.job.fsync_every, j.job.fdatasync_every), (Some(4), None));
        let j = job("[j]\nrw=write\nfdatasync=3\nsize=1m\nfilename=f\n");
        assert_eq!((j.job.fsync_every, j.job.fdatasync_every), (None, Some(3)));
        let j = job("[j]\nrw=read\nfdatasync=3\nsize=1m\nfilename=f\n");
        assert_eq!(j.job.fdatasync_every, None);
        assert!(j
            .notes
            .iter()
            .any(|n| n.contains("fdatasync=3 in [j] ignored")));
        for (text, want) in [
            ("flow=1", "no cross-job token flow"),
            ("flow_sleep=10", "no cross-job token flow"),
            ("pre_read=1", "'pre_read' in [j]"),
            ("rw=write\nfsync=2\nfdatasync=2", "keep one of them"),
            ("rw=write\nverify=crc32c\nfdatasync=2", "use fsync=2"),
            ("rate_min=1m,", "one direction only"),
            ("fallocate=2", "bad fallocate=2 in [j]"),
        ] {
            let e = refusal(text);
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn rates_per_direction_keep_their_empty_fields() {
        assert_eq!(rate_fields("4m,1m", 1024, "x").unwrap(), "4194304,1048576");
        assert_eq!(rate_fields(",1k,", 1000, "x").unwrap(), ",1000,");
        assert_eq!(rate_fields("2m", 1024, "x").unwrap(), "2097152");
        for bad in [",", "1,2,3,4", "1q"] {
            assert!(rate_fields(bad, 1024, "x").is_err(), "{bad}");
        }
        let job = |text: &str| map(text).unwrap().remove(0).job;
        let j = job("[j]\nrw=randrw\nrate=,2m\nrate_iops=100\nsize=1m\nfilename=f\n");
        assert_eq!(j.rate.of(0).bytes_per_sec, None);
        assert_eq!(j.rate.of(1).bytes_per_sec, Some(2 << 20));
        assert_eq!(j.rate.of(2).bytes_per_sec, Some(2 << 20));
        assert!((0..3).all(|d| j.rate.of(d).iops == Some(100)));
    }
}
